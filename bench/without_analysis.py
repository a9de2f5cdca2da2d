"""An experiment, not a mode: `kvlint audit` with the analysis stage cut out, to bound what the analysis costs.

    cd ~/.cache/kvlint/src/vllm-0.33.0 && /usr/bin/time python /path/to/bench/without_analysis.py vllm

Everything else runs as in `kvlint audit --format json`: discovery, reading,
the byte scan, `ast.parse` and the cheap stage in worker processes, the tree
index, the reports. Only the analysis stage (the relevant units' parse and the
flow analysis) is replaced by "no sites". When the flow analysis ran on libcst
(its import, parse and positions included), this ran in 0.39 s against ruff's
0.40 s (medians of 9 alternating runs, idle 2-core machine): the rest of the
pipeline alone costs what ruff costs, so no analysis that keeps this pipeline
would beat ruff here.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import kvlint.cli as cli  # noqa: E402 - after the path set-up above
import kvlint.engine as engine  # noqa: E402
import kvlint.running.runner as runner  # noqa: E402


def main() -> int:
    engine._sites = lambda prepared, config, index, names: []  # type: ignore[assignment]
    engine._run_with_deep_stack = lambda work: work()  # type: ignore[assignment]
    runner._warm_worker = runner._quiet_worker  # type: ignore[assignment]
    status = cli.main(["audit", *sys.argv[1:], "--format", "json", "--quiet", "--exit-zero"])
    if "libcst" in sys.modules:
        raise SystemExit("libcst was imported after all: the experiment is void")
    return status


if __name__ == "__main__":
    sys.exit(main())

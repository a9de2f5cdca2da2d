"""What reading the vLLM a plugin builds on costs: the cold audit of a platform plugin with vLLM on the
search path against the same audit without it.

    .venv/bin/python bench/search_path_bench.py                   # tpu-inference 0.32.0 on vLLM 0.33.0
    .venv/bin/python bench/search_path_bench.py --instructions    # one run each under callgrind

The binder reads, of the vLLM on the search path, only what the plugin's relevant files import (the
modules that mention a configured name, two levels down, and the `def`s of the helpers they call), so
the cost should be a few modules' parse, not vLLM's 3,000 files. Issue 25's bound is a ratio of at most
1.2. Rounds run both audits in alternating order, cold; the bound is checked on the median of the rounds'
own wall-time ratios. `--instructions` counts each audit's instructions under callgrind instead (the
count does not move with the machine's load).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.audit_bench import timed_run  # noqa: E402
from bench.invariants_bench import instructions  # noqa: E402

BOUND = 1.2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm", default="0.33.0", help="the vLLM release on the search path (default: 0.33.0)")
    parser.add_argument("--rounds", type=int, default=11, help="rounds, each running both audits (default: 11)")
    parser.add_argument("--instructions", action="store_true", help="count instructions under callgrind instead")
    args = parser.parse_args()

    from tests.test_real_plugins import TPU_INFERENCE
    from tests.support.vllm_sources import plugin_tree, vllm_tree

    plugin, vllm = plugin_tree(TPU_INFERENCE), vllm_tree(args.vllm)
    audit = [sys.executable, "-m", "kvlint", "audit", TPU_INFERENCE.package, "--format", "json", "--quiet",
             "--exit-zero"]
    runs = {"without vLLM": audit, f"with vLLM {args.vllm} on the search path": [*audit, "--search-path", str(vllm)]}
    for command in runs.values():  # warm the page cache and the .pyc files; not counted
        timed_run(command, plugin)
    if args.instructions:
        with tempfile.TemporaryDirectory(prefix="kvlint-bench-") as scratch:
            counts = {name: sum(instructions(command, plugin, Path(scratch))) for name, command in runs.items()}
        alone, searched = counts.values()
        for name, count in counts.items():
            print(f"{name}: {count / 1e6:,.1f} M instructions")
        print(f"\nwith / without, instructions: {searched / alone:.3f} (bound: {BOUND}, on wall time)")
        return 0
    times: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for round_number in range(args.rounds):
        names = list(runs) if round_number % 2 == 0 else list(reversed(runs))
        for name in names:
            wall, seconds, _, _ = timed_run(runs[name], plugin)
            times[name].append(wall)
            cpu[name].append(seconds)
    print(f"tpu-inference {TPU_INFERENCE.version}, {args.rounds} rounds alternating, cold; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| kvlint audit | wall median s | CPU median s (user+sys) |\n| --- | ---: | ---: |")
    for name, series in times.items():
        print(f"| {name} | {statistics.median(series):.3f} | {statistics.median(cpu[name]):.3f} |")
    alone, searched = times.values()
    ratio = statistics.median(s / a for s, a in zip(searched, alone))
    cpu_ratio = statistics.median(cpu[list(runs)[1]]) / statistics.median(cpu[list(runs)[0]])
    print(f"\nwith / without, median of the rounds' wall-time ratios: {ratio:.3f} (bound: {BOUND}); CPU-time ratio "
          f"of the medians: {cpu_ratio:.3f}")
    return 0 if ratio <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())

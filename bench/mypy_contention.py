"""Is the rest of the mypy plugin's cost in mypy's own process work, or the helper competing with mypy for the
CPUs? Cold runs of mypy over vLLM 0.33.0's `vllm/` (the tree and configuration of `bench/mypy_vllm_bench.py`)
in three configurations, alternating, medians compared:

- `without`: vLLM's `[tool.mypy]` as it stands;
- `helper`: with `kvlint.mypy_plugin`, the engine in its helper process (the default), which runs beside mypy;
- `in-process`: with the plugin, the engine in mypy's process (`KVLINT_MYPY_WORKER=0`): no process beside it.

mypy's own CPU time in `helper` less that in `without` is the plugin's work in mypy's process plus whatever
the helper running beside it costs mypy (two processes sharing caches, memory bandwidth or a core). In
`in-process` the same plugin work and the engine's run in mypy's process with nothing beside it: less the
engine's own CPU (the helper's, measured in `helper`), it is the plugin's work alone. The difference between
the two is the contention:

    contention = (own[helper] - own[without]) - (own[in-process] - own[without] - helper's CPU)

    .venv/bin/python bench/mypy_contention.py [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mypy_vllm_bench import become_subreaper, errors_of, make_tree, mypy_command, timed_run_split  # noqa: E402
from tests.test_mypy_plugin import venv_dir  # noqa: E402

LABELS = ("without", "helper", "in-process")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mypy", default="1.20.2", help="mypy version of a test venv (default: 1.20.2)")
    parser.add_argument("--rounds", type=int, default=3, help="timed cold rounds (default: 3)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    python = venv_dir(args.mypy) / "bin" / "python"
    base = {key: value for key, value in os.environ.items()
            if not key.startswith(("KVLINT_MYPY_", "MYPY")) and key not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    envs = {"without": base, "helper": {**base, "KVLINT_MYPY_WORKER": "1"},
            "in-process": {**base, "KVLINT_MYPY_WORKER": "0"}}
    become_subreaper()
    times: dict[str, dict[str, list[float]]] = {label: {"own": [], "helper": [], "wall": []} for label in LABELS}
    with tempfile.TemporaryDirectory(prefix="kvlint-mypy-contention-") as scratch_dir:
        scratch = Path(scratch_dir)
        tree, configs = make_tree(scratch)
        config = {"without": configs["without"], "helper": configs["with"], "in-process": configs["with"]}
        for number in range(args.rounds + 1):  # round 0 fills the OS's file cache and writes bytecode: not timed
            order = list(LABELS) if number % 2 else list(reversed(LABELS))
            for label in order:
                cache = scratch / f"cache-{label}-{number}"
                wall, cpu, own = timed_run_split(mypy_command(python, config[label], cache), tree, envs[label],
                                                 scratch / f"{label}.out")
                shutil.rmtree(cache, ignore_errors=True)
                if number:
                    times[label]["own"].append(own)
                    times[label]["helper"].append(cpu - own)
                    times[label]["wall"].append(wall)
                    print(f"  round {number} {label:>10}: mypy {own:.2f} s CPU, helper {cpu - own:.2f} s CPU, "
                          f"wall {wall:.2f} s", flush=True)
        errors = {label: errors_of(scratch / f"{label}.out")[2] for label in LABELS}
    version = subprocess.run([str(python), "-m", "mypy", "--version"], capture_output=True, text=True).stdout.strip()
    median = {label: {kind: statistics.median(values) for kind, values in kinds.items()}
              for label, kinds in times.items()}
    own = {label: median[label]["own"] for label in LABELS}
    engine = median["helper"]["helper"]
    with_helper = own["helper"] - own["without"]
    plugin_alone = own["in-process"] - own["without"] - engine
    figures = {"mypy": version, "rounds": args.rounds, "medians": median, "errors": errors,
               "mypy_process_with_helper": with_helper, "engine_in_helper": engine,
               "plugin_in_mypy_process_alone": plugin_alone, "contention": with_helper - plugin_alone}
    print(f"{version}, {args.rounds} cold rounds, medians of mypy's own CPU: without {own['without']:.2f} s, "
          f"helper {own['helper']:.2f} s (+{with_helper:.2f} s), in-process {own['in-process']:.2f} s; "
          f"the helper's CPU {engine:.2f} s")
    print(f"  the plugin's work in mypy's process alone: {plugin_alone:+.2f} s; "
          f"contention, the rest of +{with_helper:.2f} s: {with_helper - plugin_alone:+.2f} s")
    for label, last in errors.items():
        print(f"  {label:>10}: {last!r}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

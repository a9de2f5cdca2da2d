"""What the mypy plugin costs: mypy with and without `kvlint.mypy_plugin` on real vLLM 0.10.1.

The run is the one the tests use: `mypy --ignore-missing-imports --follow-imports=silent`
over the worker, the connector mixin, the outputs and the kv_transfer utils, from
the root of the extracted tree. Every run is cold (a fresh `--cache-dir`); the two
commands alternate run by run after one untimed warm-up each, and the medians of
the wall times (interpreter start-up included) are compared, with the CPU time of mypy
and of the plugin's helper beside them (`bench/mypy_vllm_bench.py` measures both the same way).
Target: <= +5%. The whole-package run under vLLM's own configuration is `bench/mypy_vllm_bench.py`.

kvlint's engine runs in the plugin's helper process unless `--in-process` keeps it in
mypy's (what a single-core machine would see). mypy comes from the venvs the tests
create for this checkout under ~/.cache/kvlint/mypy-venvs (`--mypy 1.20.2`, the default, or
`--mypy 2.4.1`), or `--python PATH`:

    .venv/bin/python bench/mypy_bench.py [--runs 11] [--mypy 2.4.1] [--in-process] [--kvlint DIR] [--json FILE]
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

from bench.mypy_vllm_bench import become_subreaper, timed_run  # noqa: E402
from tests.test_mypy_plugin import venv_dir  # noqa: E402
from tests.support.vllm_sources import vllm_tree  # noqa: E402

FILES = (
    "vllm/v1/worker/gpu_worker.py",
    "vllm/v1/worker/kv_connector_model_runner_mixin.py",
    "vllm/v1/outputs.py",
    "vllm/distributed/kv_transfer/kv_connector/utils.py",
)
OVERHEAD_TARGET = 0.05


def mypy_command(python: Path, config: Path, cache_dir: Path) -> list[str]:
    return [
        str(python), "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache_dir),
        "--ignore-missing-imports", "--follow-imports=silent", *FILES,
    ]


def time_alternating(
    python: Path, configs: dict[str, Path], runs: int, tree: Path, env: dict[str, str]
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run mypy once per config per round, interleaved, each with a fresh cache; return wall and CPU times."""
    times: dict[str, list[float]] = {label: [] for label in configs}
    cpu: dict[str, list[float]] = {label: [] for label in configs}
    with tempfile.TemporaryDirectory(prefix="kvlint-mypy-bench-") as scratch:
        for round_number in range(runs + 1):  # round 0 warms the OS file cache and is not timed
            for label, config in configs.items():
                cache_dir = Path(scratch, f"cache-{label}-{round_number}")
                elapsed, seconds = timed_run(mypy_command(python, config, cache_dir), tree, env,
                                             Path(scratch, f"{label}.out"))
                shutil.rmtree(cache_dir, ignore_errors=True)
                if round_number:
                    times[label].append(elapsed)
                    cpu[label].append(seconds)
    return times, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mypy", default="1.20.2", help="mypy version of a test venv (default: 1.20.2)")
    parser.add_argument("--python", type=Path, help="a Python with mypy installed (overrides --mypy)")
    parser.add_argument("--runs", type=int, default=11, help="timed runs per command (default: 11)")
    parser.add_argument("--in-process", action="store_true",
                        help="run kvlint's engine inside mypy's process (KVLINT_MYPY_WORKER=0), not in its helper")
    parser.add_argument("--kvlint", type=Path, help="measure the kvlint package found in this directory instead")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    env = {**os.environ, "KVLINT_MYPY_WORKER": "0" if args.in_process else "1"}
    if args.kvlint:
        env["PYTHONPATH"] = str(args.kvlint.resolve())  # before the editable install's finder
    become_subreaper()

    python = args.python or venv_dir(args.mypy) / "bin" / "python"
    if not python.exists():
        parser.error(f"{python} does not exist: run the mypy plugin tests once to create it, or pass --python")
    tree = vllm_tree("0.10.1")
    with tempfile.TemporaryDirectory(prefix="kvlint-mypy-bench-config-") as config_dir:
        configs = {"without": Path(config_dir, "without.ini"), "with": Path(config_dir, "with.ini")}
        configs["without"].write_text("[mypy]\n")
        configs["with"].write_text("[mypy]\nplugins = kvlint.mypy_plugin\n")
        times, cpu = time_alternating(python, configs, args.runs, tree, env)

    version = subprocess.run([str(python), "-m", "mypy", "--version"], capture_output=True, text=True).stdout.strip()
    medians = {label: statistics.median(values) for label, values in times.items()}
    cpu_medians = {label: statistics.median(values) for label, values in cpu.items()}
    overhead = medians["with"] / medians["without"] - 1
    figures = {
        "mypy": version,
        "engine": "mypy's process" if args.in_process else "a helper process",
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "seconds": {label: {"median": medians[label], "min": min(values), "max": max(values)}
                    for label, values in times.items()},
        "cpu_seconds": {label: {"median": cpu_medians[label], "min": min(values), "max": max(values)}
                        for label, values in cpu.items()},
        "ratio": medians["with"] / medians["without"],
        "cpu_ratio": cpu_medians["with"] / cpu_medians["without"],
        "overhead": overhead,
        "target": OVERHEAD_TARGET,
    }
    print(f"{version}, {args.runs} cold runs each, {os.cpu_count()} CPUs, vLLM 0.10.1 ({len(FILES)} files), "
          f"engine in {figures['engine']}")
    for label in ("without", "with"):
        values = times[label]
        print(f"  {label:>7} plugin: median {medians[label]:.3f} s  (min {min(values):.3f}, max {max(values):.3f});"
              f" CPU median {cpu_medians[label]:.3f} s")
    verdict = "within" if overhead <= OVERHEAD_TARGET else "OVER"
    print(f"  ratio {figures['ratio']:.3f}: overhead {overhead:+.1%} ({verdict} the {OVERHEAD_TARGET:.0%} target);"
          f" CPU {figures['cpu_ratio'] - 1:+.1%}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

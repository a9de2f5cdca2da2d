"""What kvlint costs in a pre-commit hook and inside flake8, as two ratios in one run.

(a) `kvlint check FILE` against `flake8 --select E9 FILE` on one typical changed
    vLLM file, wall time including interpreter start-up (target: <= 1.5x);
(b) flake8 over the whole vLLM tree with kvlint installed against the same
    flake8 without it (flake8 runs every installed plugin whatever `--select`
    says; target: <= +10%).

The flake8 without kvlint lives in a venv of its own under
~/.cache/kvlint/bench-venvs, with the same flake8, pycodestyle, pyflakes and
mccabe versions as this interpreter's. Commands alternate run by run and the
medians are compared. Run it with the dev venv's Python:

    .venv/bin/python bench/precommit_bench.py [--runs 15] [--tree-runs 3]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.vllm_sources import CACHE, vllm_tree  # noqa: E402

FLAKE8_PACKAGES = ("flake8", "pycodestyle", "pyflakes", "mccabe")
SINGLE_FILE_TARGET = 1.5
TREE_OVERHEAD_TARGET = 0.10


def bench_venv() -> Path:
    """Return the bin directory of a venv holding this interpreter's flake8 stack, without kvlint."""
    pins = [f"{name}=={importlib.metadata.version(name)}" for name in FLAKE8_PACKAGES]
    tag = "-".join(pin.replace("==", "") for pin in pins)
    venv = CACHE / "bench-venvs" / f"py{sys.version_info[0]}.{sys.version_info[1]}-{tag}"
    bin_dir = venv / "bin"
    if not (bin_dir / "flake8").is_file():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "--quiet", *pins], check=True)
    return bin_dir


def _timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Run once; return (wall, CPU of the process and its children) in seconds. Exit 0 or 1 only."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {completed.returncode}:\n{completed.stderr.decode(errors='replace')}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def time_alternating(commands: dict[str, list[str]], runs: int, cwd: Path) -> dict[str, dict[str, float]]:
    """Run each command `runs` times, interleaved, after one untimed warm-up each; return medians."""
    walls: dict[str, list[float]] = {label: [] for label in commands}
    cpus: dict[str, list[float]] = {label: [] for label in commands}
    for command in commands.values():
        _timed(command, cwd)
    for _ in range(runs):
        for label, command in commands.items():
            wall, cpu = _timed(command, cwd)
            walls[label].append(wall)
            cpus[label].append(cpu)
    return {
        label: {"median": statistics.median(walls[label]), "min": min(walls[label]), "max": max(walls[label]),
                "cpu_median": statistics.median(cpus[label]), "runs": runs}
        for label in commands
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="0.33.0", help="vLLM release to measure on (default: 0.33.0)")
    parser.add_argument("--file", default="vllm/v1/worker/gpu_worker.py", help="the changed file of (a)")
    parser.add_argument("--runs", type=int, default=15, help="runs per command for (a)")
    parser.add_argument("--tree-runs", type=int, default=3, help="runs per command for (b)")
    parser.add_argument("--skip-tree", action="store_true", help="measure (a) only")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)

    tree = vllm_tree(args.version)
    here = Path(sys.executable).parent
    plain = bench_venv()
    with_kvlint = [str(here / "flake8"), "--isolated", "--select", "E9"]
    without_kvlint = [str(plain / "flake8"), "--isolated", "--select", "E9"]
    version_line = subprocess.run([*with_kvlint, "--version"], capture_output=True, text=True).stdout
    plain_line = subprocess.run([*without_kvlint, "--version"], capture_output=True, text=True).stdout
    if "kvlint" not in version_line or "kvlint" in plain_line:
        sys.exit(f"expected kvlint in {here} only; got:\n{version_line}{plain_line}")
    print(f"vLLM {args.version}: {tree}\nwith kvlint:    {' '.join(version_line.split())}\n"
          f"without kvlint: {' '.join(plain_line.split())}\ncpus: {len(os.sched_getaffinity(0))}\n")

    single = time_alternating({
        "kvlint check FILE": [str(here / "kvlint"), "check", args.file],
        "flake8 --select E9 FILE (no kvlint)": [*without_kvlint, args.file],
        "flake8 --select E9 FILE (kvlint installed)": [*with_kvlint, args.file],
    }, args.runs, tree)
    results: dict[str, object] = {"version": args.version, "file": args.file, "single_file": single}
    ratio_a = single["kvlint check FILE"]["median"] / single["flake8 --select E9 FILE (no kvlint)"]["median"]
    results["single_file_ratio"] = ratio_a
    print(f"(a) one changed file: {args.file} ({args.runs} runs each, medians)")
    for label, figures in single.items():
        print(f"    {label:<45} {figures['median'] * 1000:7.0f} ms  (min {figures['min'] * 1000:.0f}, "
              f"max {figures['max'] * 1000:.0f}; CPU {figures['cpu_median'] * 1000:.0f} ms)")
    verdict = "meets" if ratio_a <= SINGLE_FILE_TARGET else "MISSES"
    print(f"    ratio kvlint / flake8 --select E9: {ratio_a:.2f} ({verdict} the {SINGLE_FILE_TARGET}x target)\n")

    if not args.skip_tree:
        whole = time_alternating({
            "flake8 --select E9 vllm (kvlint installed)": [*with_kvlint, "vllm"],
            "flake8 --select E9 vllm (no kvlint)": [*without_kvlint, "vllm"],
        }, args.tree_runs, tree)
        plugged = whole["flake8 --select E9 vllm (kvlint installed)"]
        plain_run = whole["flake8 --select E9 vllm (no kvlint)"]
        overhead = plugged["median"] / plain_run["median"] - 1
        cpu_overhead = plugged["cpu_median"] / plain_run["cpu_median"] - 1
        results.update(whole_tree=whole, whole_tree_overhead=overhead, whole_tree_cpu_overhead=cpu_overhead)
        files = sum(1 for _ in (tree / "vllm").rglob("*.py"))
        print(f"(b) flake8 over the whole tree ({files} files, {args.tree_runs} runs each, medians)")
        for label, figures in whole.items():
            print(f"    {label:<45} {figures['median']:7.1f} s   (min {figures['min']:.1f}, max {figures['max']:.1f}; "
                  f"CPU {figures['cpu_median']:.1f} s)")
        verdict = "meets" if overhead <= TREE_OVERHEAD_TARGET else "MISSES"
        print(f"    kvlint adds {overhead * 100:+.1f}% wall time ({verdict} the "
              f"+{TREE_OVERHEAD_TARGET * 100:.0f}% target), {cpu_overhead * 100:+.1f}% CPU time")

    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

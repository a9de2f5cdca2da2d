"""The two runs a user repeats, with a warm `--cache-dir`, as ratios to their peers from one run (issue 27).

(a) the warm run: `kvlint check --cache-dir DIR vllm` on vLLM's whole tree with nothing changed, against
    `ruff check --select F --cache-dir DIR vllm` with its own warm cache (target: <= 1.0x);
(b) the one-file hook: `kvlint check --cache-dir DIR vllm/v1/worker/gpu_worker.py` inside a vLLM checkout
    (the wheel's `vllm/` and the sdist's `pyproject.toml`, `tests/`, ... under `git init`, so that the
    project root is found as in a clone), the cache warm from the same command (so the declarations of the
    modules it imports are in it), against `flake8 --isolated --select E9` on that file in a venv without
    kvlint (target: <= 0.2x); `python -c pass` (the interpreter start-up) is the floor.

kvlint runs as a user installs it: `pip install` of this tree (not editable) into a venv of its own under
~/.cache/kvlint/bench-venvs/kvlint-installed, reinstalled each run (the dev venv's editable install adds
about 10 ms to every interpreter start: its import hook; those rows are shown too, not used for the ratios).

Each command runs twice untimed first; kvlint's record of a run is trusted only once its files' status is
older than 2 s at the recording (`kvlint.running.run_record.RACY_NS`), so the script waits that long and
runs kvlint once more before timing (a user's tree is rarely written in the two seconds before a run).
Then the commands take turns, round by round; wall time and the CPU time of the process and its children
(getrusage) are both reported, medians, since the machine is shared. Byte-compiled files are allowed
(`PYTHONDONTWRITEBYTECODE` is dropped): an installed kvlint has them. The outputs of the warm runs are
checked against the same commands without a cache.

    .venv/bin/python bench/warm_bench.py [--rounds 21] [--version 0.33.0]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.audit_bench import ruff_executable  # noqa: E402
from bench.precommit_bench import bench_venv  # noqa: E402
from tests.support.vllm_sdist import vllm_sdist_tree  # noqa: E402
from tests.support.vllm_sources import CACHE, vllm_tree  # noqa: E402

HOOK_FILE = "vllm/v1/worker/gpu_worker.py"
WARM_TARGET = 1.0
HOOK_TARGET = 0.2
SETTLE_SECONDS = 2.1


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "KVLINT_CACHE_DIR")}
    env["NO_COLOR"] = "1"
    return env


def timed(command: list[str], cwd: Path) -> tuple[float, float, bytes]:
    """Run once; (wall s, CPU s of it and its children, stdout). Exit 0 or 1 only."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {completed.returncode}:\n{completed.stderr.decode(errors='replace')}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), completed.stdout


def installed_kvlint() -> Path:
    """The bin directory of a venv where this tree is installed as a user installs it (not editable)."""
    venv = CACHE / "bench-venvs" / "kvlint-installed"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(ROOT)], check=True)
    else:  # this tree as it is now, over the dependencies installed before
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--force-reinstall",
                        "--no-deps", str(ROOT)], check=True)
    return venv / "bin"


def checkout(version: str) -> Path:
    """A vLLM checkout made of the release's wheel tree and its sdist's project files (made once)."""
    where = CACHE / "bench-checkouts" / f"vllm-{version}"
    if (where / ".complete").is_file():
        return where
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    shutil.copytree(vllm_tree(version) / "vllm", where / "vllm")
    sdist = vllm_sdist_tree(version)
    for item in sdist.iterdir():
        if item.name.startswith("."):
            continue
        (shutil.copytree if item.is_dir() else shutil.copy2)(item, where / item.name)
    subprocess.run(["git", "init", "-q", str(where)], check=True)
    (where / ".complete").write_text("")
    return where


def alternate(commands: dict[str, tuple[list[str], Path]], rounds: int) -> dict[str, dict[str, float]]:
    walls: dict[str, list[float]] = {label: [] for label in commands}
    cpus: dict[str, list[float]] = {label: [] for label in commands}
    labels = list(commands)
    for number in range(rounds):
        for label in labels if number % 2 == 0 else reversed(labels):
            command, cwd = commands[label]
            wall, cpu, _ = timed(command, cwd)
            walls[label].append(wall)
            cpus[label].append(cpu)
    return {label: {"median": statistics.median(walls[label]), "min": min(walls[label]),
                    "max": max(walls[label]), "cpu": statistics.median(cpus[label])} for label in labels}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="0.33.0")
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args(argv)

    here = Path(sys.executable).parent
    installed = installed_kvlint()
    kvlint = [str(installed / "kvlint")]
    dev = [str(here / "kvlint")]
    ruff = str(ruff_executable())
    flake8 = str(bench_venv() / "flake8")
    tree = vllm_tree(args.version)
    project = checkout(args.version)
    kvlint_cache = Path(tempfile.mkdtemp(prefix="kvlint-warm-"))
    hook_cache = Path(tempfile.mkdtemp(prefix="kvlint-hook-"))
    ruff_cache = Path(tempfile.mkdtemp(prefix="ruff-warm-"))
    try:
        commands = {
            "kvlint check --cache-dir DIR vllm (warm)": ([*kvlint, "check", "--cache-dir", str(kvlint_cache), "vllm"],
                                                         tree),
            "ruff check --select F --cache-dir DIR vllm (warm)": (
                [ruff, "check", "--select", "F", "--quiet", "--cache-dir", str(ruff_cache), "vllm"], tree),
            "kvlint check --cache-dir DIR FILE (hook, warm)": (
                [*kvlint, "check", "--cache-dir", str(hook_cache), HOOK_FILE], project),
            "flake8 --isolated --select E9 FILE (no kvlint)": ([flake8, "--isolated", "--select", "E9", HOOK_FILE],
                                                               project),
            "python -c pass (the installed venv)": ([str(installed / "python"), "-c", "pass"], project),
            "dev venv: kvlint check --cache-dir DIR vllm (warm)": (
                [*dev, "check", "--cache-dir", str(kvlint_cache), "vllm"], tree),
            "dev venv: kvlint check --cache-dir DIR FILE (hook, warm)": (
                [*dev, "check", "--cache-dir", str(hook_cache), HOOK_FILE], project),
        }
        for command, cwd in commands.values():
            timed(command, cwd)
            timed(command, cwd)
        time.sleep(SETTLE_SECONDS)
        for label in ("kvlint check --cache-dir DIR vllm (warm)", "kvlint check --cache-dir DIR FILE (hook, warm)"):
            timed(*commands[label])
        cold_tree = timed([*kvlint, "check", "vllm"], tree)[2]
        cold_hook = timed([*kvlint, "check", HOOK_FILE], project)[2]
        if timed(*commands["kvlint check --cache-dir DIR vllm (warm)"])[2] != cold_tree:
            sys.exit("the warm run's output differs from the run without a cache")
        if timed(*commands["kvlint check --cache-dir DIR FILE (hook, warm)"])[2] != cold_hook:
            sys.exit("the warm hook's output differs from the hook without a cache")
        figures = alternate(commands, args.rounds)
    finally:
        for directory in (kvlint_cache, hook_cache, ruff_cache):
            shutil.rmtree(directory, ignore_errors=True)

    ruff_version = subprocess.run([ruff, "--version"], capture_output=True, text=True).stdout.strip()
    flake8_version = " ".join(subprocess.run([flake8, "--version"], capture_output=True, text=True).stdout.split())
    print(f"vLLM {args.version}; {len(os.sched_getaffinity(0))} CPUs; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; {ruff_version}; flake8 {flake8_version}")
    print(f"{args.rounds} alternating rounds, medians\n")
    print("| command | wall median ms | min ms | max ms | CPU median ms (user+sys) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, f in figures.items():
        print(f"| `{label}` | {f['median'] * 1000:.0f} | {f['min'] * 1000:.0f} | {f['max'] * 1000:.0f} | "
              f"{f['cpu'] * 1000:.0f} |")
    warm = figures["kvlint check --cache-dir DIR vllm (warm)"]
    ruff_warm = figures["ruff check --select F --cache-dir DIR vllm (warm)"]
    hook = figures["kvlint check --cache-dir DIR FILE (hook, warm)"]
    flake = figures["flake8 --isolated --select E9 FILE (no kvlint)"]
    warm_ratio, warm_cpu = warm["median"] / ruff_warm["median"], warm["cpu"] / ruff_warm["cpu"]
    hook_ratio, hook_cpu = hook["median"] / flake["median"], hook["cpu"] / flake["cpu"]
    print(f"\n(a) warm run / ruff's warm run: wall {warm_ratio:.2f}, CPU {warm_cpu:.2f} "
          f"({'meets' if warm_ratio <= WARM_TARGET else 'MISSES'} the {WARM_TARGET}x target)")
    print(f"(b) warm hook / flake8 --select E9: wall {hook_ratio:.2f}, CPU {hook_cpu:.2f} "
          f"({'meets' if hook_ratio <= HOOK_TARGET else 'MISSES'} the {HOOK_TARGET}x target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`pre-commit run --all-files` with kvlint's own hook against `kvlint check .`, on a vLLM checkout (issue 27).

The checkout is a git repository of a vLLM release as its repository holds it: the wheel's `vllm/` package and
the sdist's `tests/`, `benchmarks/`, `examples/`, `tools/` and `pyproject.toml` (0.33.0: 5,802 Python files).
Its `.pre-commit-config.yaml` takes kvlint's hook from this repository at HEAD (pre-commit installs a hook
from a commit: commit first), into a PRE_COMMIT_HOME under ~/.cache/kvlint. Rounds alternate, after one
untimed warm-up each:

- `pre-commit run kvlint --all-files`;
- `kvlint check .` with the kvlint of the hook's own environment, in the same checkout;
- `pre-commit run noop --all-files`, a hook that runs `true` on the same files with `require_serial: true`:
  what pre-commit itself costs (listing, classifying and handing over the files), whatever the hook;
- `pre-commit run kvlint-cached --all-files`: kvlint's hook with `args: [--cache-dir, DIR]`, DIR removed
  before each run, so that only the run's later kvlint processes reuse what its first one read.

pre-commit hands a hook its files in command lines of at most 128 KiB (`pre_commit.xargs`), even with
`require_serial: true` (which makes them run one after another, not at once): the script prints how many
runs of kvlint that makes. Wall and CPU (user+sys of the process and its children) medians, and the ratio
of the first to the second; issue 27's bound is 1.2x. Run it with the development venv's Python:

    .venv/bin/python bench/precommit_all_files_bench.py [--rounds 7] [--version 0.33.0]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.vllm_sdist import vllm_sdist_tree  # noqa: E402
from tests.support.vllm_sources import CACHE, vllm_tree  # noqa: E402

PRE_COMMIT_HOME = CACHE / "pre-commit-bench"
SHIPPED = ("kvlint", "pyproject.toml", "setup.cfg", "MANIFEST.in", ".pre-commit-hooks.yaml")
BOUND = 1.2
GIT = ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "user.name=kvlint bench",
       "-c", "user.email=bench@kvlint.invalid"]
CONFIG = """\
repos:
  - repo: {repo}
    rev: {rev}
    hooks:
      - id: kvlint
      - id: kvlint
        alias: kvlint-cached
        args: [--cache-dir, {cache}]
  - repo: local
    hooks:
      - id: noop
        name: noop
        entry: "true"
        language: system
        types_or: [python, pyi]
        require_serial: true
"""


def kvlint_commit() -> str:
    """HEAD of this repository; the shipped files must be committed, as pre-commit installs the commit."""
    changed = subprocess.run(["git", "status", "--porcelain", "--", *SHIPPED], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
    if changed.strip():
        sys.exit(f"commit first: pre-commit installs kvlint's hook from a commit, and these changed:\n{changed}")
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def checkout(version: str, directory: Path, commit: str) -> Path:
    """A git repository shaped like vLLM's: the wheel's package and the sdist's other Python directories."""
    repo = directory / "vllm"
    shutil.copytree(vllm_tree(version) / "vllm", repo / "vllm")
    sdist = vllm_sdist_tree(version)
    for entry in sorted(sdist.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            shutil.copytree(entry, repo / entry.name)
        else:
            shutil.copy2(entry, repo / entry.name)
    (repo / ".pre-commit-config.yaml").write_text(CONFIG.format(repo=ROOT, rev=commit, cache=directory / "cache"))
    subprocess.run([*GIT, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", f"vLLM {version}"], cwd=repo, check=True)
    return repo


def environment() -> dict[str, str]:
    found = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**found, "PRE_COMMIT_HOME": str(PRE_COMMIT_HOME), "PRE_COMMIT_COLOR": "never"}


def hook_kvlint(commit: str) -> Path:
    """The `kvlint` of the hook's environment (pre-commit's store records where it cloned each repo at a rev)."""
    with sqlite3.connect(PRE_COMMIT_HOME / "db.db") as db:
        rows = db.execute("SELECT path FROM repos WHERE repo = ? AND ref = ?", (str(ROOT), commit)).fetchall()
    found = [path for (path,) in rows for path in Path(path).glob("py_env-*/bin/kvlint")]
    if len(found) != 1:
        sys.exit(f"expected one kvlint in the hook's environment, found {found}")
    return found[0]


def partitions(repo: Path, entry: list[str]) -> list[int]:
    """How many files each run of the hook gets, as pre-commit cuts the list (`pre_commit.xargs.partition`)."""
    from pre_commit import xargs

    listed = subprocess.run(["git", "ls-files", "*.py", "*.pyi"], cwd=repo, capture_output=True, text=True,
                            check=True).stdout.split()
    return [len(part) for part in xargs.partition(tuple(entry), listed, 1)]


def timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU of the command and its children) in seconds; it must exit 0 (the release is clean)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, env=environment(), capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {completed.returncode}:\n{completed.stdout}{completed.stderr}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="0.33.0", help="vLLM release (default: 0.33.0)")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (default: 7)")
    args = parser.parse_args(argv)
    commit = kvlint_commit()
    pre_commit = [sys.executable, "-m", "pre_commit"]
    with tempfile.TemporaryDirectory(prefix="kvlint-precommit-bench-") as scratch:
        repo = checkout(args.version, Path(scratch), commit)
        subprocess.run([*pre_commit, "install-hooks"], cwd=repo, env=environment(), check=True,
                       stdout=subprocess.DEVNULL)
        kvlint = hook_kvlint(commit)
        cache = Path(scratch) / "cache"
        cached_run = " ".join([*map(shlex.quote, pre_commit), "run", "kvlint-cached", "--all-files"])
        commands = {
            "pre-commit run kvlint --all-files": [*pre_commit, "run", "kvlint", "--all-files"],
            "kvlint check .": [str(kvlint), "check", "."],
            "pre-commit run noop --all-files": [*pre_commit, "run", "noop", "--all-files"],
            # the hook with `args: [--cache-dir, DIR]`, DIR emptied first: its later runs reuse what the first read
            "the same, the hook given an empty --cache-dir":
                ["sh", "-c", f"rm -rf {shlex.quote(str(cache))} && {cached_run}"],
        }
        walls: dict[str, list[float]] = {label: [] for label in commands}
        cpus: dict[str, list[float]] = {label: [] for label in commands}
        for command in commands.values():
            timed(command, repo)  # warm-up: the page cache, pre-commit's store, the hook's bytecode
        for round_number in range(args.rounds):
            order = list(commands.items())
            for label, command in order if round_number % 2 == 0 else reversed(order):
                wall, cpu = timed(command, repo)
                walls[label].append(wall)
                cpus[label].append(cpu)
        files = partitions(repo, [str(kvlint), "check"])
    print(f"vLLM {args.version} checkout: {sum(files):,} Python files; kvlint {commit[:7]} from {kvlint.parent.parent}")
    print(f"{args.rounds} alternating rounds, medians; {len(os.sched_getaffinity(0))} CPUs, load average "
          f"{' '.join(f'{load:.2f}' for load in os.getloadavg())}")
    print(f"pre-commit runs kvlint {len(files)} times, one after another: "
          f"{', '.join(f'{count:,}' for count in files)} files\n")
    print("| command | wall median s | min s | max s | CPU median s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label in commands:
        print(f"| `{label}` | {statistics.median(walls[label]):.3f} | {min(walls[label]):.3f} | "
              f"{max(walls[label]):.3f} | {statistics.median(cpus[label]):.3f} |")
    hook, alone = "pre-commit run kvlint --all-files", "kvlint check ."
    ratios = [whole / single for whole, single in zip(walls[hook], walls[alone])]
    ratio = statistics.median(walls[hook]) / statistics.median(walls[alone])
    cpu_ratio = statistics.median(cpus[hook]) / statistics.median(cpus[alone])
    verdict = "met" if ratio <= BOUND else "NOT met"
    print(f"\npre-commit / kvlint check . : {ratio:.2f}x wall (each round's: {min(ratios):.2f}-{max(ratios):.2f}), "
          f"{cpu_ratio:.2f}x CPU; bound {BOUND}x: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

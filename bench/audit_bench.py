"""Wall time of `kvlint audit` on a whole vLLM release against ruff's pyflakes rules and grep.

    .venv/bin/python bench/audit_bench.py                 # vLLM 0.33.0, 7 alternating rounds
    .venv/bin/python bench/audit_bench.py --rounds 11 --version 0.33.0 --phases --timeline

Every round runs the commands in turn (the order alternates from round to
round). The kvlint/ruff comparison is cold: kvlint with no result cache,
ruff with `--no-cache`. A fourth command, `kvlint audit --cache-dir DIR`
with DIR filled by the warm-up run, shows a repeated run with kvlint's
opt-in result cache. It prints medians, the ratios, the grep floor and the peak memory of
each command (all its processes together, and its largest process, sampled
from /proc). `--phases` adds where kvlint's CPU time goes, measured
in-process with one job; `--timeline`, what each process of a run does when. ruff comes from PyPI into a venv under
~/.cache/kvlint/bench-venvs/ruff; vLLM from the test suite's source cache.
"""

from __future__ import annotations

import argparse
import os
import platform
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

BENCH_VENVS = Path.home() / ".cache" / "kvlint" / "bench-venvs"
# as a user runs it: Python may keep its .pyc files (some sandboxes set PYTHONDONTWRITEBYTECODE)
ENVIRONMENT = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def ruff_executable() -> Path:
    """ruff from PyPI in its own venv (created once)."""
    venv = BENCH_VENVS / "ruff"
    ruff = venv / "bin" / "ruff"
    if not ruff.exists():
        BENCH_VENVS.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "ruff"], check=True)
    return ruff


def commands(jobs: int | None, cache_dir: Path) -> dict[str, list[str]]:
    kvlint = [sys.executable, "-m", "kvlint", "audit", "vllm", "--format", "json", "--quiet", "--exit-zero"]
    if jobs:
        kvlint += ["--jobs", str(jobs)]
    return {
        "kvlint audit": kvlint,
        "ruff check --select F --no-cache": [str(ruff_executable()), "check", "--select", "F", "--no-cache",
                                             "--quiet", "--exit-zero", "vllm"],
        "grep -rl kv_connector_output": ["grep", "-rl", "kv_connector_output", "vllm"],
        "kvlint audit --cache-dir DIR (warm)": [*kvlint, "--cache-dir", str(cache_dir)],
    }


def _tree_memory_kib(pid: int) -> tuple[int, int]:
    """(resident memory of a process and all its descendants, largest VmHWM among them), from /proc."""
    total, largest, stack, seen = 0, 0, [pid], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            with open(f"/proc/{current}/status") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
            total += int(fields.get("VmRSS", "0 kB").split()[0])
            largest = max(largest, int(fields.get("VmHWM", "0 kB").split()[0]))
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    stack.extend(int(child) for child in children.read().split())
        except (OSError, ValueError):
            continue
    return total, largest


def timed_run(command: list[str], cwd: Path, sample_memory: bool = False) -> tuple[float, float, int, int]:
    """Run once; return (wall s, CPU s of all its processes, peak RSS of the process tree KiB, of its largest KiB).

    Memory is sampled from /proc every few milliseconds, and only when asked (it costs a little time).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               stdin=subprocess.DEVNULL, env=ENVIRONMENT)
    tree_peak = largest = 0
    if sample_memory:
        while process.poll() is None:
            total, hwm = _tree_memory_kib(process.pid)
            tree_peak, largest = max(tree_peak, total), max(largest, hwm)
            time.sleep(0.003)
    process.wait()
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    if process.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} failed ({process.returncode}): {process.stderr.read().decode()[-500:]}")
    return elapsed, cpu, tree_peak, largest


def tree_facts(tree: Path) -> str:
    files = list((tree / "vllm").rglob("*.py"))
    size = sum(path.stat().st_size for path in files)
    lines = sum(path.read_bytes().count(b"\n") for path in files)
    return f"{len(files):,} files, {size / 1e6:.1f} MB, {lines / 1e6:.2f} M lines"


def phases(tree: Path) -> list[tuple[str, float]]:
    """Where kvlint's CPU time goes: the runner's and engine's steps timed in-process with one job (CPU seconds:
    what the machine's other work disturbs least)."""
    from collections import defaultdict

    import kvlint.binding.module_resolution
    import kvlint.engine
    import kvlint.flow
    import kvlint.flow.source
    import kvlint.running.runner
    from kvlint.config import Config
    from kvlint.report.audit import build_audit
    from kvlint.report.formats import audit_renderer
    from kvlint.running.collector import collect_garbage_rarely

    spent: defaultdict[str, float] = defaultdict(float)
    labels: list[str] = []
    stage = [""]  # the step running now: `parse_source` serves both the prepare and the analyse step

    def wrap(owner: object, name: str, label: str, by_stage: dict[str, str] | None = None) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            started = time.process_time()
            outer, stage[0] = stage[0], name
            try:
                return original(*args, **kwargs)
            finally:
                stage[0] = outer
                spent[by_stage.get(outer, label) if by_stage else label] += time.process_time() - started

        timed.__qualname__, timed.__module__ = original.__qualname__, original.__module__
        setattr(owner, name, timed)
        labels.append(label)

    def wrap_steps(owner: object, name: str, label: str) -> None:  # a generator: each step is timed
        original = getattr(owner, name)

        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            steps = original(*args, **kwargs)
            while True:
                started = time.process_time()
                try:
                    value = next(steps)
                except StopIteration:
                    spent[label] += time.process_time() - started
                    return
                spent[label] += time.process_time() - started
                yield value

        setattr(owner, name, timed)
        labels.append(label)

    runner, engine = kvlint.running.runner, kvlint.engine
    wrap_steps(runner, "iter_python_files", "discovery")
    wrap(runner, "read_source", "read every file")
    wrap(runner, "_is_relevant", "byte scan of every file for the configured names")
    wrap(runner, "prepare_source", "prepare: decode, ast.parse, import table, index entries")
    parse_in_analysis = "  of which ast.parse of the relevant units"
    wrap(engine, "parse_source", "  of which ast.parse of the file", {"analyse_prepared": parse_in_analysis})
    wrap(runner, "imported_declarations_for", "declarations of the modules the relevant files import")
    wrap(runner.IndexBuild, "__init__", "tree index")
    wrap_steps(runner.IndexBuild, "scan_skipped", "scan of the skipped files for callers")
    wrap(runner, "analyse_prepared", "analyse: flow, rules (on the analysis thread)")
    wrap(engine, "reduced_text", "  of which reduced_text")
    # the relevant units are parsed a batch at a time inside the flow analysis's run (`flow.source.parsed_batches`)
    wrap(kvlint.flow.source, "parse_source", parse_in_analysis)
    wrap(kvlint.flow.FlowAnalysis, "run", "  of which flow analysis")
    collect_garbage_rarely()  # as the command line does
    previous = os.getcwd()
    os.chdir(tree)
    try:
        started = time.process_time()
        config = Config()
        result = kvlint.running.runner.run([Path("vllm")], config, jobs=1)
        run_seconds = time.process_time() - started
        reported = time.process_time()
        audit_renderer("json")(build_audit(result, config, ["vllm"], result.findings, []))
        report_seconds = time.process_time() - reported
    finally:
        os.chdir(previous)
    accounted = sum(seconds for label, seconds in spent.items() if not label.startswith("  "))
    rows = [(label, spent[label]) for label in labels]
    rows.append(("the rest of run() (pool, sorting)", run_seconds - accounted))
    rows.append(("run() in all, one job", run_seconds))
    rows.append(("the JSON report, built and rendered", report_seconds))
    return rows


def timeline(tree: Path, jobs: int) -> str:
    """What each process of a run does when (`--timeline`): the run in this process with `jobs` workers, its
    steps timed in the parent and in each worker (wall from the run's start, CPU seconds summed)."""
    import json

    import kvlint.engine
    import kvlint.running.runner
    from kvlint.config import Config
    from kvlint.running.collector import collect_garbage_rarely

    events = tempfile.NamedTemporaryFile(prefix="kvlint-timeline-", delete=False)
    events.close()
    descriptor = os.open(events.name, os.O_WRONLY | os.O_APPEND)
    origin = time.perf_counter()

    def wrap(owner: object, name: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                record = [os.getpid(), name, wall - origin, time.perf_counter() - origin, time.process_time() - cpu]
                os.write(descriptor, (json.dumps(record) + "\n").encode())

        timed.__qualname__, timed.__module__ = original.__qualname__, original.__module__
        setattr(owner, name, timed)

    runner = kvlint.running.runner
    for name in ("read_source", "_is_relevant", "_prepare_held", "imported_declarations_for", "_analyse_batch"):
        wrap(runner, name)
    wrap(runner.IndexBuild, "__init__")
    collect_garbage_rarely()
    previous = os.getcwd()
    os.chdir(tree)
    try:
        runner.run([Path("vllm")], Config(), jobs=jobs)
    finally:
        os.chdir(previous)
        os.close(descriptor)
    records = [json.loads(line) for line in Path(events.name).read_text().splitlines()]
    os.unlink(events.name)
    processes = sorted({r[0] for r in records}, key=lambda pid: min(r[2] for r in records if r[0] == pid))
    lines = ["| process | step | calls | from ms | to ms | CPU ms |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for number, pid in enumerate(processes):
        who = "parent" if pid == os.getpid() else f"worker {number}"
        steps: dict[str, list[float]] = {}
        for _, name, start, end, cpu in (r for r in records if r[0] == pid):
            step = steps.setdefault(name, [0, start, end, 0.0])
            step[0] += 1
            step[1], step[2], step[3] = min(step[1], start), max(step[2], end), step[3] + cpu
        for name, (calls, start, end, cpu) in steps.items():
            lines.append(f"| {who} | `{name}` | {calls:.0f} | {start * 1000:.0f} | {end * 1000:.0f} "
                         f"| {cpu * 1000:.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="0.33.0", help="vLLM release (default: 0.33.0)")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds (default: 7)")
    parser.add_argument("--jobs", type=int, help="kvlint --jobs (default: its own default, the CPU count)")
    parser.add_argument("--phases", action="store_true", help="also time kvlint's steps in-process")
    parser.add_argument("--timeline", action="store_true",
                        help="also show what each process of a run with --jobs (default 2) does when")
    args = parser.parse_args()

    from tests.support.vllm_sources import vllm_tree

    tree = vllm_tree(args.version)
    cache_dir = Path(tempfile.mkdtemp(prefix="kvlint-bench-cache-"))
    try:
        return measure(args, tree, commands(args.jobs, cache_dir))
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)


def measure(args: argparse.Namespace, tree: Path, runs: dict[str, list[str]]) -> int:
    names = list(runs)
    for command in runs.values():  # warm the page cache and the .pyc files once; not counted
        timed_run(command, tree)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(args.rounds):
        order = names if round_number % 2 == 0 else names[::-1]
        for name in order:
            wall, seconds, _, _ = timed_run(runs[name], tree)
            times[name].append(wall)
            cpu[name].append(seconds)
    memory = {name: timed_run(runs[name], tree, sample_memory=True)[2:] for name in names}

    ruff_version = subprocess.run([runs[names[1]][0], "--version"], capture_output=True, text=True).stdout.strip()
    print(f"vLLM {args.version}: {tree_facts(tree)}; {os.cpu_count()} CPUs; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; Python {platform.python_version()}; {ruff_version}")
    print(f"{args.rounds} alternating rounds; cold (no kvlint result cache, ruff --no-cache) but the last row\n")
    print("| command | wall median s | min s | max s | CPU median s (user+sys) | peak RSS, all processes (MiB) "
          "| peak RSS, largest process (MiB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        series = times[name]
        tree_peak, largest = memory[name]
        print(f"| `{name}` | {statistics.median(series):.3f} | {min(series):.3f} | {max(series):.3f} "
              f"| {statistics.median(cpu[name]):.3f} | {tree_peak / 1024:.0f} | {largest / 1024:.0f} |")
    ratio = statistics.median(times[names[0]]) / statistics.median(times[names[1]])
    cpu_ratio = statistics.median(cpu[names[0]]) / statistics.median(cpu[names[1]])
    print(f"\nkvlint / ruff median wall-time ratio: {ratio:.2f} (target: 0.8, issue 27); "
          f"CPU-time ratio: {cpu_ratio:.2f}")
    warm = statistics.median(times[names[3]]) / statistics.median(times[names[1]])
    print(f"with a warm --cache-dir: {warm:.2f}")
    if args.phases:
        print("\n| kvlint step (in-process, one job) | CPU seconds |\n| --- | ---: |")
        for label, seconds in phases(tree):
            print(f"| {label} | {seconds:.3f} |")
    if args.timeline:
        print(f"\n{timeline(tree, args.jobs or 2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

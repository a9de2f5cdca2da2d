"""Many small relevant files: what does kvlint cost per file over reading and parsing it? (issue 27)

Writes 10,000 files (100 directories of 100) of three lines each that mention a configured name, in two
shapes: `finding`, a function that reads `out.kv_connector_output` and dereferences it
(`.finished_sending`), so every file has one finding (KVC001, with its fix, which libcst builds); and
`clean`, the same read with a None check, so every file is analysed and has none. Then, for each shape,
rounds alternating, times:

- the floor: one Python process (`sys.executable`) that reads every file and `ast.parse`s it;
- `kvlint check --quiet DIR` (default jobs: the CPUs this process may use);
- `kvlint check --quiet --jobs 1 DIR`;
- `ruff check --select F --no-cache --isolated DIR` when `~/.cache/kvlint/bench-venvs/ruff` exists.

Wall and CPU (user+sys of the process and its children) medians, and each one's ratio to the floor's
wall time; issue 27's bound is kvlint at most three times the floor, with 2 CPUs available. The script
checks that every file's finding (or none) is reported. Run it with the development venv's Python:

    .venv/bin/python bench/small_files_bench.py [--files 10000] [--rounds 5] [--shapes finding clean] [--costs]
    .venv/bin/python bench/small_files_bench.py --instructions [--shapes finding clean]

`--costs` adds what one file of each shape costs, step by step, timed in this process. `--instructions` counts
instead of timing, which the machine's load does not move: the instructions of the floor and of `kvlint check
--quiet --jobs 1`, each run once under valgrind's callgrind over 100 and over 1,000 files, give what one more file
costs each (the difference over 900 files) and what a run costs before its first file (start-up and imports).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path.home() / ".cache" / "kvlint" / "bench-venvs" / "ruff" / "bin" / "ruff"
SHAPES = {
    "finding": "def step_{0}(out):\n    kvo = out.kv_connector_output\n    return kvo.finished_sending\n",
    "clean": "def step_{0}(out):\n    if (kvo := out.kv_connector_output) is not None:\n"
             "        return kvo.finished_sending\n",
}
FLOOR = """
import ast, os, sys
for directory, _, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith(".py"):
            with open(os.path.join(directory, name), "rb") as file:
                ast.parse(file.read())
"""


def write_tree(directory: Path, count: int, source: str) -> None:
    for number in range(count):
        package = directory / f"package_{number // 100:03d}"
        package.mkdir(exist_ok=True)
        (package / f"module_{number:05d}.py").write_text(source.format(number))


def measure(command: list[str], cwd: Path, environment: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the command and every process it waited for, and its stdout."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        before = os.times()
        started = time.perf_counter()
        completed = subprocess.run(command, cwd=cwd, env=environment, stdout=out, stderr=err, check=False)
        seconds = time.perf_counter() - started
        after = os.times()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if completed.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} failed: {stderr.decode(errors='replace')[-500:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return seconds, cpu, stdout.decode("utf-8", "replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["finding", "clean"])
    parser.add_argument("--costs", action="store_true", help="also what one file of each shape costs, step by step")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind (100 and 1,000 files) instead of timing")
    args = parser.parse_args()
    # as a user runs it: Python may keep its .pyc files (some sandboxes set PYTHONDONTWRITEBYTECODE)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    for variable in ("KVLINT_CACHE_DIR", "PYTHONDONTWRITEBYTECODE"):
        environment.pop(variable, None)
    if args.instructions:
        return report_instructions(args.shapes, environment)
    print(f"{args.files:,} files of three lines, {len(os.sched_getaffinity(0))} CPUs, {args.rounds} rounds")
    for shape in args.shapes:
        runs = measure_shape(shape, args.files, args.rounds, environment)
        floor = statistics.median(seconds for seconds, _ in next(iter(runs.values())))
        print()
        print(f"`{shape}` files:")
        print()
        print("| command | wall median s | min s | max s | CPU median s | wall / floor |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, measured in runs.items():
            walls = [seconds for seconds, _ in measured]
            cpu = statistics.median(c for _, c in measured)
            wall = statistics.median(walls)
            print(f"| {name} | {wall:.3f} | {min(walls):.3f} | {max(walls):.3f} | {cpu:.3f} | {wall / floor:.2f} |")
    if args.costs:
        print()
        print("What one file costs, in this process, on its analysis thread (microseconds, the least of 7 runs "
              "of 2,000):")
        print()
        print("| step | " + " | ".join(f"`{shape}`" for shape in args.shapes) + " |")
        print("| --- | " + " | ".join("---:" for _ in args.shapes) + " |")
        costs = {shape: file_costs(SHAPES[shape].format(0)) for shape in args.shapes}
        for step in next(iter(costs.values())):
            print(f"| {step} | " + " | ".join(f"{costs[shape][step]:.1f}" for shape in args.shapes) + " |")
    return 0


def file_costs(source: str) -> dict[str, float]:
    """Each step of one file's way through a run, timed on its own in this process (`--costs`)."""
    import ast
    import pickle
    import timeit

    sys.path.insert(0, str(ROOT))
    from kvlint import engine
    from kvlint.binding.tree_index import TreeIndex
    from kvlint.byte_scan import mentions_any
    from kvlint.config import Config
    from kvlint.running.collector import collect_garbage_rarely
    from kvlint.running.discovery import read_source
    from kvlint.running.module_names import ModuleNames

    collect_garbage_rarely()
    config = Config()
    with tempfile.TemporaryDirectory(prefix="kvlint-small-") as temporary:
        path = Path(temporary) / "module_00000.py"
        path.write_text(source)
        data = path.read_bytes()
        prepared = engine.prepare_source(data, "m.py", config, "m")
        index = TreeIndex(prepared.declarations, payload_classes=config.payload_classes)
        names = tuple(index.candidate_names())
        report = engine.analyse_prepared(prepared, config, index, names, fixes=False)
        module_names = ModuleNames()

        def kept() -> object:  # what a worker analyses: the file prepared with its tree kept
            held = engine.prepare_source(data, "m.py", config, "m", keep_tree=True)
            return engine.analyse_prepared(held, config, index, names, fixes=False)

        steps: dict[str, object] = {
            "the floor: read and `ast.parse`": lambda: ast.parse(path.read_bytes()),
            "read (`read_source`)": lambda: read_source(path),
            "byte scan": lambda: mentions_any(data, config.names()),
            "module name (`ModuleNames`, a directory known)": lambda: module_names(path),
            "prepare (`prepare_source`)": lambda: engine.prepare_source(data, "m.py", config, "m"),
            "analyse, no fix (`analyse_prepared`)": lambda: engine.analyse_prepared(
                prepared, config, index, names, fixes=False),
            "prepare with its tree kept, then analyse: a worker's share": kept,
            "analyse with the fixes built": lambda: engine.analyse_prepared(prepared, config, index, names),
            "hand-off: a prepared file pickled and back": lambda: pickle.loads(pickle.dumps(prepared, protocol=5)),
            "hand-off: a report pickled and back": lambda: pickle.loads(pickle.dumps(report, protocol=5)),
        }
        # on the analysis thread, as a worker runs a batch: no hand-over to the thread per call
        return engine.on_analysis_thread(lambda: {
            name: min(timeit.repeat(step, number=2000, repeat=7)) / 2000 * 1e6  # type: ignore[arg-type]
            for name, step in steps.items()
        })


def measure_shape(
    shape: str, files: int, rounds: int, environment: dict[str, str]
) -> dict[str, list[tuple[float, float]]]:
    """Each command's (wall, CPU) per round over a tree of `files` files of that shape."""
    expected = files if shape == "finding" else 0
    with tempfile.TemporaryDirectory(prefix="kvlint-small-") as temporary:
        directory = Path(temporary)
        tree = directory / "tree"
        tree.mkdir()
        write_tree(tree, files, SHAPES[shape])
        kvlint = [sys.executable, "-m", "kvlint", "check", "--quiet"]
        commands = {
            "floor: read and `ast.parse` each file, one process": [sys.executable, "-c", FLOOR, "tree"],
            "`kvlint check --quiet`": [*kvlint, "tree"],
            "`kvlint check --quiet --jobs 1`": [*kvlint, "--jobs", "1", "tree"],
        }
        if RUFF.exists():
            commands["`ruff check --select F --no-cache --isolated`"] = [
                str(RUFF), "check", "--select", "F", "--no-cache", "--isolated", "tree"]
        for command in commands.values():  # the page cache, and the first imports' .pyc files
            measure(command, directory, environment)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for round_number in range(rounds):
            names = list(commands) if round_number % 2 == 0 else list(reversed(commands))
            for name in names:
                seconds, cpu, stdout = measure(commands[name], directory, environment)
                if name.startswith("`kvlint"):
                    found = stdout.count(" KVC")
                    if found != expected:
                        raise SystemExit(f"{name}: {found} findings, expected {expected}")
                runs[name].append((seconds, cpu))
            print(f"  {shape}: round {round_number + 1} done", file=sys.stderr, flush=True)
    return runs


def report_instructions(shapes: list[str], environment: dict[str, str]) -> int:
    """`--instructions`: per file and before the first, the floor's and kvlint's, counted (one job: a worker's
    instructions would include what its parent ran before the fork)."""
    sizes = (100, 1_000)
    print("Instructions counted by callgrind, one run of each over 100 and over 1,000 files (`PYTHONHASHSEED=0`);")
    print("a file: the difference over 900 files; before the first: the run over 100 files less 100 such files.")
    print()
    print("| shape | command | a file (K) | before the first (M) | a file / the floor's |")
    print("| --- | --- | ---: | ---: | ---: |")
    for shape in shapes:
        counts: dict[str, list[int]] = {"floor": [], "kvlint": []}
        with tempfile.TemporaryDirectory(prefix="kvlint-small-") as temporary:
            for files in sizes:
                tree = Path(temporary) / f"tree-{files}"
                tree.mkdir()
                write_tree(tree, files, SHAPES[shape])
                commands = {"floor": [sys.executable, "-c", FLOOR, tree.name],
                            "kvlint": [sys.executable, "-m", "kvlint", "check", "--quiet", "--jobs", "1", tree.name]}
                for name, command in commands.items():
                    measure(command, Path(temporary), environment)  # the first imports' .pyc files: not counted
                    counts[name].append(counted(command, Path(temporary), environment))
        per_file = {name: (few_many[1] - few_many[0]) / (sizes[1] - sizes[0]) for name, few_many in counts.items()}
        for name, label in (("floor", "floor: read and `ast.parse`"), ("kvlint", "`kvlint check --quiet --jobs 1`")):
            fixed = counts[name][0] - sizes[0] * per_file[name]
            print(f"| `{shape}` | {label} | {per_file[name] / 1e3:,.0f} | {fixed / 1e6:,.0f} "
                  f"| {per_file[name] / per_file['floor']:.2f} |")
    return 0


def counted(command: list[str], cwd: Path, environment: dict[str, str]) -> int:
    """The instructions of one run of `command` (one process), counted by callgrind."""
    with tempfile.NamedTemporaryFile(prefix="callgrind-", dir=cwd) as out:
        try:
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", *command], cwd=cwd,
                           env={**environment, "PYTHONHASHSEED": "0"}, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        except FileNotFoundError:
            raise SystemExit("--instructions needs valgrind (Debian: apt install valgrind)") from None
        except subprocess.CalledProcessError as error:  # kvlint's 1: findings
            if command[2:3] != ["kvlint"] or error.returncode != 1:
                raise SystemExit(f"valgrind {command[:3]} failed ({error.returncode})") from None
        summary = [line for line in Path(out.name).read_text().splitlines() if line.startswith(("summary:", "totals:"))]
    return int(summary[0].split()[1])


if __name__ == "__main__":
    sys.exit(main())

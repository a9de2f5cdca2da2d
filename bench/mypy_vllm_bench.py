"""What the mypy plugin costs on a whole vLLM package: mypy over vLLM 0.33.0's `vllm/` under vLLM's own
`[tool.mypy]`, with and without `kvlint.mypy_plugin`, cold and warm.

The tree is a scratch copy of the release's `vllm/` (3,231 files, from the test suite's wheel cache) with
vLLM's own `pyproject.toml` from its sdist beside it. vLLM's `[tool.mypy]` is used as it stands
(`plugins = ['pydantic.mypy']`, `ignore_missing_imports`, `follow_imports = "silent"`,
`check_untyped_defs`); the run with the plugin reads a copy whose only change is `kvlint.mypy_plugin`
added to `plugins`. The command is what vLLM's pre-commit hook runs (`tools/pre_commit/mypy.py "3.11"`:
`mypy --python-version 3.11 FILES`, with mypy 1.20.2 and pydantic 2.13.5), given the package directory
rather than its files one by one. vLLM's third-party imports (torch, transformers, ...) are not installed,
nor the hook's `types-*` stubs: `ignore_missing_imports` makes each of them `Any`, for both runs alike.

- **cold**: every run gets a fresh `--cache-dir`, deleted after it: a CI job without a restored cache. mypy
  writes its cache as it goes, the plugin's configuration data included, so that is part of the cost measured;
  `--cache-dir=/dev/null` would spare both runs that writing and measure a run no one makes.
- **warm**: each configuration keeps a cache of its own, filled by an untimed run; nothing changes between
  runs: a CI job with a restored cache and a pre-commit run with nothing to recheck.

Each round runs both, the order alternating, after one untimed round (it fills the OS's file cache and the
warm caches). Wall times include the interpreter's start-up. CPU is user + system time of mypy and every
process it started: the plugin's analysis helper outlives mypy by a moment and is reaped here (this process
is their child subreaper, Linux only). `mypy_cpu` is mypy's own process alone: on a runner with a second CPU
free for the helper, that is what the wall time pays (this shared machine's wall times are too noisy to
show a 2% difference). `PYTHONDONTWRITEBYTECODE` is dropped from the runs' environment, so that the untimed
round writes kvlint's bytecode as an installed kvlint has it (else each run compiles the plugin's module
again: 4 ms of a warm run). mypy comes from the venv the tests make for this checkout
(`--mypy 1.20.2`, the default, or `--mypy 2.4.1`), or `--python PATH`:

    .venv/bin/python bench/mypy_vllm_bench.py [--cold-rounds 5] [--warm-rounds 15] [--in-process] [--callgrind]
        [--json FILE]

`--callgrind` also runs each configuration once, cold, under valgrind's callgrind (children traced, so the
helper's instructions count too), and compares instruction counts: on a shared machine whose CPU times drift by
more than 2% from one minute to the next, the ratio it can resolve. The two counted runs go side by side after
the timed rounds (the load does not move a count), about 40 times as long as a plain run. `--callgrind-warm`
counts one warm run of each the same way (a few minutes), after a plain run that fills its cache or finds it
warm; kvlint's sources must be settled first (older than `RACY_NS`), or the plugin's version, keyed by their
status only once they are, would change between the two runs and the counted one would check every module.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvlint.running.run_record import RACY_NS  # noqa: E402
from tests.support.vllm_sdist import vllm_sdist_file  # noqa: E402
from tests.support.vllm_sources import vllm_tree  # noqa: E402
from tests.test_mypy_plugin import venv_dir  # noqa: E402

VERSION = "0.33.0"
PYTHON_VERSION = "3.11"  # vLLM's hook: "Run mypy for the oldest supported Python version"
OVERHEAD_TARGET = 0.02
PLUGINS_LINE = re.compile(r"^plugins = \[(.*)\]$", re.MULTILINE)
PR_SET_CHILD_SUBREAPER = 36
# wall time; CPU of mypy and its helper; CPU of mypy's own process, what an idle second CPU leaves of the cost
KINDS = ("wall", "cpu", "mypy_cpu")


def vllm_pyproject() -> str:
    """vLLM's own pyproject.toml, checked to hold the `[tool.mypy]` this bench describes."""
    text = vllm_sdist_file(VERSION, "pyproject.toml")
    section = text[text.index("\n[tool.mypy]\n"):]
    section = section[:section.index("\n[tool.pytest")]
    for setting in ("plugins = ['pydantic.mypy']", "ignore_missing_imports = true", 'follow_imports = "silent"'):
        assert setting in section, f"vLLM {VERSION}'s [tool.mypy] no longer says {setting}"
    return text


def with_plugin(pyproject: str) -> str:
    """The same file with `kvlint.mypy_plugin` after vLLM's own plugins: the one change."""
    changed, count = PLUGINS_LINE.subn(lambda found: f"plugins = [{found.group(1)}, 'kvlint.mypy_plugin']",
                                       pyproject, count=1)
    assert count == 1
    return changed


def make_tree(scratch: Path) -> tuple[Path, dict[str, Path]]:
    tree = scratch / "tree"
    shutil.copytree(vllm_tree(VERSION) / "vllm", tree / "vllm")
    pyproject = vllm_pyproject()
    (tree / "pyproject.toml").write_text(pyproject)
    (scratch / "with-plugin.toml").write_text(with_plugin(pyproject))
    return tree, {"without": tree / "pyproject.toml", "with": scratch / "with-plugin.toml"}


def mypy_command(python: Path, config: Path, cache_dir: Path) -> list[str]:
    return [str(python), "-m", "mypy", "--config-file", str(config), "--cache-dir", str(cache_dir),
            "--python-version", PYTHON_VERSION, "vllm"]


def become_subreaper() -> None:
    """Orphans of the processes started here (the plugin's helper) are reparented to this process, so their
    CPU time reaches `RUSAGE_CHILDREN` when they are reaped."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def timed_run(command: list[str], cwd: Path, env: dict[str, str], output: Path) -> tuple[float, float]:
    """Wall seconds of the command, and CPU seconds of it and all it started (reaped before returning)."""
    wall, cpu, _ = timed_run_split(command, cwd, env, output)
    return wall, cpu


def timed_run_split(command: list[str], cwd: Path, env: dict[str, str], output: Path) -> tuple[float, float, float]:
    """`timed_run`, and the CPU seconds of the command's own process (mypy without its helper)."""
    started = time.perf_counter()
    with open(output, "wb") as sink:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    cpu = own = usage.ru_utime + usage.ru_stime  # the kernel's account, finer than os.times()'s clock ticks
    while True:  # the helper, orphaned when mypy exited: it ends at the end of its input
        try:
            _, _, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu += usage.ru_utime + usage.ru_stime
    return wall, cpu, own


def measure(python: Path, configs: dict[str, Path], tree: Path, scratch: Path, env: dict[str, str],
            rounds: int, warm: bool) -> dict[str, dict[str, list[float]]]:
    times: dict[str, dict[str, list[float]]] = {label: {kind: [] for kind in KINDS} for label in configs}
    for number in range(rounds + 1):  # round 0 warms the OS file cache (and the warm caches) and is not timed
        order = list(configs) if number % 2 else list(reversed(configs))
        for label in order:
            cache = scratch / (f"warm-{label}" if warm else f"cold-{label}-{number}")
            output = scratch / f"{'warm' if warm else 'cold'}-{label}.out"
            wall, cpu, own = timed_run_split(mypy_command(python, configs[label], cache), tree, env, output)
            if not warm:
                shutil.rmtree(cache, ignore_errors=True)
            if number:
                times[label]["wall"].append(wall)
                times[label]["cpu"].append(cpu)
                times[label]["mypy_cpu"].append(own)
    return times


def summary(times: dict[str, dict[str, list[float]]]) -> dict[str, object]:
    figures: dict[str, object] = {}
    for kind in KINDS:
        medians = {label: statistics.median(values[kind]) for label, values in times.items()}
        per_round = [w / o for w, o in zip(times["with"][kind], times["without"][kind])]
        figures[kind] = {
            "seconds": {label: {"median": medians[label], "min": min(times[label][kind]),
                                "max": max(times[label][kind])} for label in times},
            "ratio_of_medians": medians["with"] / medians["without"],
            "median_round_ratio": statistics.median(per_round),
            "round_ratios": per_round,
        }
    return figures


def callgrind_command(command: list[str], counts: Path) -> list[str]:
    """The command under callgrind, its children too (the helper's instructions count)."""
    counts.mkdir(parents=True, exist_ok=True)
    return ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={counts}/%p.out",
            f"--log-file={counts}/%p.log", *command]


def instructions_in(counts: Path) -> dict[str, int]:
    """The instructions of mypy's own process and of all, from one run's callgrind files."""
    found = {"mypy": 0, "all": 0}
    for record in counts.glob("*.out"):
        text = record.read_text(errors="replace")
        command_line = re.search(r"^cmd: (.*)$", text, re.MULTILINE)
        total = re.search(r"^(?:summary|totals): (\d+)", text, re.MULTILINE)
        if total is None:
            continue
        found["all"] += int(total.group(1))
        if command_line and " -m mypy " in f"{command_line.group(1)} ":
            found["mypy"] += int(total.group(1))
    return found


def count_instructions(python: Path, configs: dict[str, Path], tree: Path, scratch: Path,
                       env: dict[str, str]) -> dict[str, dict[str, int]]:
    """One cold run of each configuration under callgrind: instruction counts, which the machine's load does
    not move (about 40 times slower than a plain run; hash seeds fixed, the helper's timeout lifted). Since
    the load does not move them, the two runs go side by side, after the timed rounds."""
    counted_env = {**env, "PYTHONHASHSEED": "0", "KVLINT_MYPY_TIMEOUT": "86400"}
    outputs = []
    for label, config in configs.items():
        command = callgrind_command(mypy_command(python, config, scratch / f"counted-{label}"),
                                    scratch / f"callgrind-{label}")
        sink = open(scratch / f"counted-{label}.out", "wb")
        outputs.append(sink)
        subprocess.Popen(command, cwd=tree, env=counted_env, stdout=sink, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    while True:  # both runs and their helpers (orphans reaped here): each writes its counts at its exit
        try:
            os.wait4(-1, 0)
        except ChildProcessError:
            break
    for sink in outputs:
        sink.close()
    found = {}
    for label in configs:
        shutil.rmtree(scratch / f"counted-{label}", ignore_errors=True)
        found[label] = instructions_in(scratch / f"callgrind-{label}")
    return found


def wait_until_settled() -> None:
    """Sleep until kvlint's newest source is older than `RACY_NS`: from then on the plugin's version (keyed by the
    sources' status keys once every one is settled, by their bytes before) stays the same."""
    newest = max(max(path.stat().st_mtime_ns, path.stat().st_ctime_ns) for path in (ROOT / "kvlint").rglob("*.py"))
    wait = (newest + RACY_NS - time.time_ns()) / 1e9 + 0.5
    if wait > 0:
        time.sleep(wait)


def count_warm_instructions(python: Path, configs: dict[str, Path], tree: Path, scratch: Path,
                            env: dict[str, str]) -> dict[str, dict[str, int]]:
    """One warm run of each configuration under callgrind (hash seeds fixed), its cache filled by a plain run
    just before (or found warm by it: the warm rounds' cache)."""
    wait_until_settled()
    counted_env = {**env, "PYTHONHASHSEED": "0"}
    found = {}
    for label, config in configs.items():
        command = mypy_command(python, config, scratch / f"warm-{label}")
        subprocess.run(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL)
        with open(scratch / f"counted-warm-{label}.out", "wb") as sink:
            subprocess.run(callgrind_command(command, scratch / f"callgrind-warm-{label}"), cwd=tree,
                           env=counted_env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        found[label] = instructions_in(scratch / f"callgrind-warm-{label}")
    return found


def errors_of(path: Path) -> tuple[int, int, str]:
    lines = path.read_text(errors="replace").splitlines()
    return (sum(": error: " in line for line in lines), sum(line.endswith("[kvc]") for line in lines),
            lines[-1] if lines else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mypy", default="1.20.2", help="mypy version of a test venv (default: 1.20.2)")
    parser.add_argument("--python", type=Path, help="a Python with mypy and pydantic installed (overrides --mypy)")
    parser.add_argument("--cold-rounds", type=int, default=5, help="timed cold rounds (default: 5)")
    parser.add_argument("--warm-rounds", type=int, default=15, help="timed warm rounds (default: 15)")
    parser.add_argument("--in-process", action="store_true",
                        help="run kvlint's engine inside mypy's process (KVLINT_MYPY_WORKER=0), not in its helper")
    parser.add_argument("--callgrind", action="store_true",
                        help="also count instructions: one cold run of each under callgrind (tens of minutes)")
    parser.add_argument("--callgrind-warm", action="store_true",
                        help="also count instructions: one warm run of each under callgrind (minutes)")
    parser.add_argument("--keep", type=Path, help="copy both runs' last mypy output into this directory")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    python = args.python or venv_dir(args.mypy) / "bin" / "python"
    if not python.exists():
        parser.error(f"{python} does not exist: run the mypy plugin tests once to create it, or pass --python")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("KVLINT_MYPY_", "MYPY")) and key not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    if args.in_process:
        env["KVLINT_MYPY_WORKER"] = "0"
    become_subreaper()
    version = subprocess.run([str(python), "-m", "mypy", "--version"], capture_output=True, text=True).stdout.strip()
    figures: dict[str, object] = {"mypy": version, "vllm": VERSION, "cpus": len(os.sched_getaffinity(0)),
                                  "engine": "mypy's process" if args.in_process else "a helper process (default)"}
    with tempfile.TemporaryDirectory(prefix="kvlint-mypy-vllm-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        tree, configs = make_tree(scratch)
        files = sum(1 for _ in (tree / "vllm").rglob("*.py"))
        figures["files"] = files
        print(f"{version}, vLLM {VERSION} ({files} files), vLLM's [tool.mypy], {figures['cpus']} CPUs, "
              f"engine in {figures['engine']}", flush=True)
        for case, rounds in (("cold", args.cold_rounds), ("warm", args.warm_rounds)):
            if rounds <= 0:
                continue
            times = measure(python, configs, tree, scratch, env, rounds, warm=case == "warm")
            result = summary(times)
            result["rounds"] = rounds
            result["errors"] = {label: errors_of(scratch / f"{case}-{label}.out") for label in configs}
            figures[case] = result
            print(f"{case} ({rounds} rounds):")
            for kind in KINDS:
                found = result[kind]
                seconds = found["seconds"]
                print(f"  {kind:>8}: without {seconds['without']['median']:.3f} s, "
                      f"with {seconds['with']['median']:.3f} s"
                      f"  ratio {found['ratio_of_medians']:.3f} (median of rounds {found['median_round_ratio']:.3f};"
                      f" rounds {min(found['round_ratios']):.3f}-{max(found['round_ratios']):.3f})")
            for label, (errors, kvc, last) in result["errors"].items():
                print(f"  {label:>7} plugin: {last!r} ({kvc} [kvc])")
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                for label in configs:
                    shutil.copy(scratch / f"{case}-{label}.out", args.keep / f"{case}-{label}.out")
            sys.stdout.flush()
        if args.callgrind_warm:
            counts = count_warm_instructions(python, configs, tree, scratch, env)
            figures["warm_instructions"] = counts
            print("instructions, one warm run each under callgrind:")
            print(f"  all: without {counts['without']['all']:,}, with {counts['with']['all']:,}"
                  f"  ratio {counts['with']['all'] / counts['without']['all']:.4f}")
            print(f"  errors: {errors_of(scratch / 'counted-warm-without.out')[2]!r}, "
                  f"{errors_of(scratch / 'counted-warm-with.out')[2]!r}", flush=True)
        if args.callgrind:
            counts = count_instructions(python, configs, tree, scratch, env)
            figures["instructions"] = counts
            print("instructions, one cold run each under callgrind:")
            for part in ("all", "mypy"):
                print(f"  {part:>4}: without {counts['without'][part]:,}, with {counts['with'][part]:,}"
                      f"  ratio {counts['with'][part] / counts['without'][part]:.4f}")
            print(f"  errors: {errors_of(scratch / 'counted-without.out')[2]!r}, "
                  f"{errors_of(scratch / 'counted-with.out')[2]!r}")
    figures["target"] = OVERHEAD_TARGET
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

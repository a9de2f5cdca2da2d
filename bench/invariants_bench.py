"""What checking the encoder-cache invariant costs: the cold audit of a vLLM release with both presets
(the default) against the same audit with `presets = ["kv"]`.

    .venv/bin/python bench/invariants_bench.py                  # vLLM 0.33.0, 15 rounds
    .venv/bin/python bench/invariants_bench.py --rounds 15 --version 0.13.0
    .venv/bin/python bench/invariants_bench.py --instructions      # one run each under callgrind

One engine pass serves every invariant, so the second invariant should cost only what its own names
add: a few more relevant files and sites. Issue 11's bound is a ratio of at most 1.1. A third audit
adds to `kv` an invariant whose names occur nowhere in the tree: what it costs is the engine's own
cost of one more invariant (more names to search for, per-invariant bookkeeping), the encoder-cache
code aside. The commands run cold (no result cache), one after the other in each round, in rotating
order; the peer is kvlint itself, on the same tree in the same run. The bound is checked on the median
of the rounds' own ratios (a round's runs meet the same load on a shared machine, where the ratio of
two medians mixes runs minutes apart); both figures are printed. `--instructions` counts instead of
timing: each audit runs once under valgrind's callgrind, which counts the instructions of every process
of the run; the count does not depend on the machine's load (the same to 0.01% run after run here).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.audit_bench import ENVIRONMENT, timed_run, tree_facts  # noqa: E402

BOUND = 1.1
IDLE_INVARIANT = """\
[tool.kvlint]
presets = ["kv"]

[[tool.kvlint.invariants]]  # the `ec` preset's shape, under names no vLLM file has
name = "idle"
optional-fields = ["qq_connector_output"]
payload-class = "QQConnectorOutput"
payload-optional-fields = ["finished_sending", "finished_recving", "qq_connector_stats"]
output-classes = ["ModelRunnerOutput"]
empty-sentinels = ["EMPTY_MODEL_RUNNER_OUTPUT"]
attaching-helpers = ["ModelRunnerOutput.with_qq_conn_output_only"]
connector-guards = ["has_qq_transfer"]
connector-contexts = ["_get_qq_connector_output"]
optional-contexts = ["maybe_get_qq_connector_output"]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="0.33.0", help="vLLM release (default: 0.33.0)")
    parser.add_argument("--rounds", type=int, default=15, help="rounds, each running every audit once (default: 15)")
    parser.add_argument("--instructions", action="store_true",
                        help="count each audit's instructions once under callgrind (valgrind) instead of timing")
    args = parser.parse_args()

    from tests.support.vllm_sources import vllm_tree

    tree = vllm_tree(args.version)
    with tempfile.TemporaryDirectory(prefix="kvlint-bench-") as scratch:
        kv_only = Path(scratch, "pyproject.toml")
        kv_only.write_text('[tool.kvlint]\npresets = ["kv"]\n', encoding="utf-8")
        kv_and_idle = Path(scratch, "idle.toml")
        kv_and_idle.write_text(IDLE_INVARIANT, encoding="utf-8")
        audit = [sys.executable, "-m", "kvlint", "audit", "vllm", "--format", "json", "--quiet", "--exit-zero"]
        runs = {
            "both presets (kv, ec)": audit,
            'presets = ["kv"]': [*audit, "--config", str(kv_only)],
            '"kv" and an invariant the tree never names': [*audit, "--config", str(kv_and_idle)],
        }
        for command in runs.values():  # warm the page cache and the .pyc files; not counted
            timed_run(command, tree)
        if args.instructions:
            return _report_instructions({name: instructions(command, tree, Path(scratch))
                                         for name, command in runs.items()})
        times: dict[str, list[float]] = {name: [] for name in runs}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        for round_number in range(args.rounds):
            shift = round_number % len(runs)
            names = list(runs)[shift:] + list(runs)[:shift]
            for name in names:
                wall, seconds, _, _ = timed_run(runs[name], tree)
                times[name].append(wall)
                cpu[name].append(seconds)
    print(f"vLLM {args.version}: {tree_facts(tree)}; {args.rounds} rounds in rotating order, cold; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| kvlint audit with | wall median s | min s | max s | CPU median s (user+sys) |\n"
          "| --- | ---: | ---: | ---: | ---: |")
    for name, series in times.items():
        print(f"| {name} | {statistics.median(series):.3f} | {min(series):.3f} | {max(series):.3f} "
              f"| {statistics.median(cpu[name]):.3f} |")
    both, kv, _ = (statistics.median(series) for series in times.values())
    both_cpu, kv_cpu, _ = (statistics.median(series) for series in cpu.values())
    both_times, kv_times, idle_times = times.values()
    paired = sorted(b / k for b, k in zip(both_times, kv_times))
    ratio = statistics.median(paired)
    quartiles = statistics.quantiles(paired, n=4)
    print(f"\nboth / kv only, median of the rounds' wall-time ratios: {ratio:.3f} (bound: {BOUND}; quartiles "
          f"{quartiles[0]:.3f} to {quartiles[2]:.3f}); ratio of the medians: {both / kv:.3f}; CPU-time ratio of the "
          f"medians: {both_cpu / kv_cpu:.3f}")
    idle = statistics.median(i / k for i, k in zip(idle_times, kv_times))
    print(f"one more invariant the tree never names / kv only, median of the rounds' ratios: {idle:.3f} "
          "(the engine's own cost of an invariant; the rest of the first ratio is the encoder-cache code)")
    return 0 if ratio <= BOUND else 1


def instructions(command: list[str], cwd: Path, scratch: Path) -> list[int]:
    """The instructions each process of one run of `command` executed, counted by callgrind (the parent first:
    the lowest process id)."""
    out = scratch / f"callgrind-{len(list(scratch.iterdir()))}"
    out.mkdir()
    environment = {**ENVIRONMENT, "PYTHONHASHSEED": "0"}  # the same set orders, so the same work, every run
    try:
        subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                        f"--callgrind-out-file={out}/%p", *command],
                       cwd=cwd, env=environment, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise SystemExit("--instructions needs valgrind (Debian: apt install valgrind)") from None
    except subprocess.CalledProcessError as error:
        raise SystemExit(f"valgrind failed ({error.returncode}): {error.stderr.decode()[-500:]}") from None
    counts = []
    for path in sorted(out.iterdir(), key=lambda path: int(path.name)):
        summary = [line for line in path.read_text().splitlines() if line.startswith("summary:")]
        counts.append(int(summary[0].split()[1]))
    return counts


def _report_instructions(counts: dict[str, list[int]]) -> int:
    print("| kvlint audit with | instructions, all processes (M) | the parent's (M) | the workers' (M) |\n"
          "| --- | ---: | ---: | ---: |")
    for name, per_process in counts.items():
        print(f"| {name} | {sum(per_process) / 1e6:,.1f} | {per_process[0] / 1e6:,.1f} "
              f"| {sum(per_process[1:]) / 1e6:,.1f} |")
    both, kv, idle = (sum(per_process) for per_process in counts.values())
    print(f"\nboth / kv only, instructions: {both / kv:.3f} (the bound, {BOUND}, is on wall time); one more "
          f"invariant the tree never names / kv only: {idle / kv:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

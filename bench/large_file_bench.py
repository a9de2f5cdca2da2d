"""Is one huge relevant file analysed in time linear in its size, and in its findings? (issues 15, 27)

Sizes (the default): writes files of 1, 2, 4 and 8 MiB in which every function has a finding
(KVC001) and a `# noqa` comment for another code, so that the per-finding
`# noqa` lookup and the per-function analysis both scale with the size, and
times `kvlint check --jobs 1 --quiet FILE` against `ruff check --select F
--no-cache --isolated FILE` (ruff from `~/.cache/kvlint/bench-venvs/ruff`, as
`audit_bench.py` uses it) on each. Linear time shows as a flat seconds-per-MiB
column. The largest size is kvlint's per-file cap (`MAX_FILE_BYTES`).

Findings (`--findings 2500 10000`): files of that many functions with one finding each, in two shapes:
`kvc001` (the shape above) and `mixed` (the rules that build fixes taking turns: KVC001 twice, KVC002 to
KVC006), so that every fix builder runs once per finding. `kvlint check --jobs 1 --quiet FILE`, rounds
alternating between the counts; wall and CPU (user+sys) medians, peak RSS, the ratio of the largest count
to the smallest (linear: their quotient, 4 for 10,000 against 2,500; issue 27's bound: 4.5), and the peak
memory per finding, as the whole peak over the findings and as what the larger file adds over the
smaller per finding added (issue 27's bound: 4 KB). Run it with the development venv's Python:

    .venv/bin/python bench/large_file_bench.py [--sizes 1 2 4 8] [--rounds 3]
    .venv/bin/python bench/large_file_bench.py --findings 2500 10000 [--rounds 3] [--shapes kvc001 mixed]
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
HEADER = "from vllm.v1.outputs import KVConnectorOutput\n\n\n"
FUNCTION = (
    "def step_{0}(out):\n"
    "    kvo = out.kv_connector_output\n"
    "    return kvo.finished_sending  # noqa: E501\n\n\n"
)


# one function per rule that builds a fix, each with exactly one finding (the shapes of tests/test_linear_time.py)
MIXED = (
    FUNCTION,
    "def merge_{0}(outputs, done):\n    for out in outputs:\n        kvo = out.kv_connector_output\n"
    "        # tally what finished\n        done.update(kvo.finished_sending or ())\n\n\n",
    "def idle_{0}(self, sched):\n    with self._get_kv_connector_output(sched) as kvo:\n        pass\n"
    "    if not kvo.finished_sending and not kvo.finished_recving:\n        return EMPTY_MODEL_RUNNER_OUTPUT\n"
    "    return self.run(sched, kvo)\n\n\n",
    "def finish_{0}(self, sched):\n    with self._get_kv_connector_output(sched) as kvo:\n"
    "        tokens = self.run(sched)\n    return ModelRunnerOutput(\n        req_ids=sched.req_ids,\n"
    "        sampled_token_ids=tokens,  # per request\n    )\n\n\n",
    "def mutate_{0}(kvo):\n    output = EMPTY_MODEL_RUNNER_OUTPUT\n    output.kv_connector_output = kvo\n"
    "    return output\n\n\n",
    "def release_{0}(kvo: KVConnectorOutput):\n    for req_id in kvo.finished_recving:\n        free(req_id)\n\n\n",
    "def sample_{0}(self, grammar_output):\n    state, self.step_state = self.step_state, None\n"
    "    kvo = state.kv_connector_output\n    if not self.is_last_rank:\n        self.receive_from_last_rank()\n"
    "        return None\n    return ModelRunnerOutput(req_ids=state.req_ids, kv_connector_output=kvo)\n\n\n",
)
MIXED_HEADER = (
    "import copy\n\nfrom vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput\n\n\n"
)


def write_findings_file(directory: Path, shape: str, count: int) -> Path:
    """A file of `count` functions with one finding each: all KVC001, or the fixing rules taking turns."""
    if shape == "kvc001":
        text = HEADER + "".join(FUNCTION.format(number) for number in range(count))
    else:
        text = MIXED_HEADER + "".join(MIXED[number % len(MIXED)].format(number) for number in range(count))
    path = directory / f"{shape}_{count}.py"
    path.write_text(text)
    return path


def write_file(directory: Path, mebibytes: int) -> tuple[Path, int]:
    """A file of just under `mebibytes` MiB, one KVC001 per function; returns it and its function count."""
    parts, size, count = [HEADER], len(HEADER), 0
    while True:
        part = FUNCTION.format(count)
        if size + len(part) > mebibytes * 2**20:
            break
        parts.append(part)
        size += len(part)
        count += 1
    path = directory / f"huge_{mebibytes}mib.py"
    path.write_text("".join(parts))
    return path, count


def measure(command: list[str], cwd: Path, environment: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS in MiB and stdout of one run."""
    seconds, _, rss, stdout = measure_with_cpu(command, cwd, environment)
    return seconds, rss, stdout


def measure_with_cpu(command: list[str], cwd: Path, environment: dict[str, str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds (user+sys), peak RSS in MiB and stdout of one run."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode not in (0, 1):
        raise SystemExit(f"{command[0]} failed: {stderr.decode(errors='replace')[-500:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout.decode("utf-8", "replace")


def findings_table(counts: list[int], rounds: int, environment: dict[str, str],
                   shapes: tuple[str, ...] = ("kvc001", "mixed")) -> None:
    """The findings mode: each shape's counts, rounds alternating, medians; then the ratios."""
    counts = sorted(counts)
    with tempfile.TemporaryDirectory(prefix="kvlint-findings-") as temporary:
        directory = Path(temporary)
        runs: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
        files = {(shape, count): write_findings_file(directory, shape, count)
                 for shape in shapes for count in counts}
        for round_number in range(rounds):
            order = list(files) if round_number % 2 == 0 else list(reversed(files))
            for key in order:
                seconds, cpu, rss, stdout = measure_with_cpu(
                    [sys.executable, "-m", "kvlint", "check", "--jobs", "1", "--quiet", files[key].name], directory,
                    environment)
                found = sum(1 for line in stdout.splitlines() if " KVC0" in line)
                if found != key[1]:
                    raise SystemExit(f"{files[key].name}: {found} findings, expected {key[1]}")
                runs.setdefault(key, []).append((seconds, cpu, rss))
            print(f"  round {round_number + 1} done", file=sys.stderr, flush=True)
    print("| shape | functions (= findings) | wall median s | CPU median s | peak RSS MiB | peak KB per finding |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    medians = {}
    for (shape, count), measured in runs.items():
        wall = statistics.median(m[0] for m in measured)
        cpu = statistics.median(m[1] for m in measured)
        rss = max(m[2] for m in measured)
        medians[shape, count] = (wall, cpu, rss)
        print(f"| {shape} | {count:,} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | {rss * 1024 / count:.1f} |")
    low, high = counts[0], counts[-1]
    print()
    print(f"| shape | wall {high:,} / {low:,} | CPU {high:,} / {low:,} | linear | "
          f"peak KB per finding added ({low:,} to {high:,}) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for shape in shapes:
        (wall_low, cpu_low, rss_low), (wall_high, cpu_high, rss_high) = medians[shape, low], medians[shape, high]
        added = (rss_high - rss_low) * 1024 / (high - low)
        print(f"| {shape} | {wall_high / wall_low:.2f} | {cpu_high / cpu_low:.2f} | {high / low:.2f} | {added:.1f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8], metavar="MIB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--findings", type=int, nargs="+", metavar="COUNT",
                        help="measure files of COUNT functions with a finding each instead (e.g. 2500 10000)")
    parser.add_argument("--shapes", nargs="+", choices=("kvc001", "mixed"), default=["kvc001", "mixed"],
                        help="with --findings: which files")
    args = parser.parse_args()
    if args.findings:
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        environment.pop("KVLINT_CACHE_DIR", None)
        findings_table(args.findings, args.rounds, environment, tuple(args.shapes))
        return 0
    if not RUFF.exists():
        raise SystemExit(f"no ruff at {RUFF}: run bench/audit_bench.py once, which makes that venv")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("KVLINT_CACHE_DIR", None)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kvlint-large-") as temporary:
        directory = Path(temporary)
        for mebibytes in args.sizes:
            path, functions = write_file(directory, mebibytes)
            kvlint_runs, ruff_runs, memory = [], [], []
            for _ in range(args.rounds):
                seconds, rss, stdout = measure(
                    [sys.executable, "-m", "kvlint", "check", "--jobs", "1", "--quiet", path.name], directory,
                    environment)
                findings = stdout.count(" KVC001 ")
                if findings != functions:
                    raise SystemExit(f"{path.name}: {findings} findings, expected {functions}")
                kvlint_runs.append(seconds)
                memory.append(rss)
                ruff_runs.append(measure([str(RUFF), "check", "--select", "F", "--no-cache", "--isolated",
                                          path.name], directory, environment)[0])
            kvlint_s, ruff_s = statistics.median(kvlint_runs), statistics.median(ruff_runs)
            rows.append((mebibytes, functions, kvlint_s, kvlint_s / mebibytes, max(memory), ruff_s,
                         kvlint_s / ruff_s))
            print(f"  {mebibytes} MiB done", file=sys.stderr, flush=True)
    print("| file | functions (= findings) | kvlint s | kvlint s per MiB | kvlint peak RSS MiB | ruff s | ratio |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for mebibytes, functions, kvlint_s, per_mib, rss, ruff_s, ratio in rows:
        print(f"| {mebibytes} MiB | {functions:,} | {kvlint_s:.2f} | {per_mib:.2f} | {rss:.0f} | {ruff_s:.3f} "
              f"| {ratio:.0f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

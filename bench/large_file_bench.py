"""Is one huge relevant file analysed in time linear in its size? (issue 15)

Writes files of 1, 2, 4 and 8 MiB in which every function has a finding
(KVC001) and a `# noqa` comment for another code, so that the per-finding
`# noqa` lookup and the per-function analysis both scale with the size, and
times `kvlint check --jobs 1 --quiet FILE` against `ruff check --select F
--no-cache --isolated FILE` (ruff from `~/.cache/kvlint/bench-venvs/ruff`, as
`audit_bench.py` uses it) on each. Linear time shows as a flat seconds-per-MiB
column. The largest size is kvlint's per-file cap (`MAX_FILE_BYTES`). Run it with the development venv's Python:

    .venv/bin/python bench/large_file_bench.py [--sizes 1 2 4 8] [--rounds 3]
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
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout = process.stdout.read()  # type: ignore[union-attr]
    stderr = process.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{command[0]} failed: {stderr.decode(errors='replace')[-500:]}")
    return seconds, usage.ru_maxrss / 1024, stdout.decode("utf-8", "replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8], metavar="MIB")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
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

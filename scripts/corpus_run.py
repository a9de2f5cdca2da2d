"""Corpus run: kvlint over every .py file of real trees, every unit analysed.

    python scripts/corpus_run.py [--everything] [--sample N] PATH ...

Prints the time, the number of files, every KVC900 with whether CPython's own
`compile` also rejects the file (a justified KVC900), and every KVC902 (a kvlint
bug). Exit status 1 when there is a KVC902 or an unjustified KVC900.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kvlint.config import Config  # noqa: E402
from kvlint.running.runner import RunResult, run  # noqa: E402

SIZE_CAP_MESSAGE = "not analysed:"


def cpython_rejects(path: Path) -> bool:
    """Whether this Python's own compiler refuses the file (so KVC900 is justified)."""
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def corpus_run(paths: list[Path], everything: bool, jobs: int | None = None) -> tuple[RunResult, list[str], list[str]]:
    """Run kvlint; return the result, the unjustified KVC900 lines and the KVC902 lines."""
    result = run(paths, Config(), jobs=jobs, everything=everything)
    unjustified, internal = [], []
    for finding in result.findings:
        line = f"{finding.path}:{finding.line}:{finding.column + 1}: {finding.code} {finding.message}"
        if finding.code == "KVC902":
            internal.append(line)
        elif finding.code == "KVC900" and not finding.message.startswith(SIZE_CAP_MESSAGE):
            if not cpython_rejects(Path(finding.path)):
                unjustified.append(line)
    return result, unjustified, internal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--everything", action="store_true", help="analyse every unit of every file")
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    started = time.perf_counter()
    result, unjustified, internal = corpus_run(args.paths, args.everything, args.jobs)
    seconds = time.perf_counter() - started
    codes = Counter(f.code for f in result.findings)
    print(f"files: {result.files_found}, analysed: {result.files_analysed}, seconds: {seconds:.1f}")
    print("findings per code:", dict(sorted(codes.items())))
    for finding in result.findings:
        if finding.code == "KVC900":
            print(f"  KVC900 {finding.path}:{finding.line}: {finding.message}")
    for line in unjustified:
        print("UNJUSTIFIED", line)
    for line in internal:
        print("INTERNAL", line)
    return 1 if unjustified or internal else 0


if __name__ == "__main__":
    sys.exit(main())

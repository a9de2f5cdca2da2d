"""A longer fuzzing run than the test suite's: `python scripts/fuzz.py --examples 10000`.

It runs tests/test_fuzz.py with every strategy's example count scaled so that the
grammar-generated strategy makes about N examples, and prints pytest's summary.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE_EXAMPLES = 120  # the grammar strategy's count in the test suite


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="examples of the grammar strategy")
    args = parser.parse_args()
    environment = {**os.environ, "KVLINT_FUZZ_SCALE": str(args.examples / SUITE_EXAMPLES)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fuzz.py",
               "--hypothesis-show-statistics"]
    return subprocess.call(command, cwd=ROOT, env=environment)


if __name__ == "__main__":
    sys.exit(main())

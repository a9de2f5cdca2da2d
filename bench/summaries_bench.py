"""What the cross-function summaries cost (issue 26): their share of a cold `kvlint audit`, one process.

    .venv/bin/python bench/summaries_bench.py                 # vLLM 0.33.0 and 0.22.1 (a release that parks)

The summaries are read per function with the declarations (`kvlint.binding.summaries.function_summaries`),
asked at a `return` of a holder (`TreeIndex.holder_uses`), and, where a file checked alone parks a KV output,
looked for in the rest of the project (`module_resolution.caller_declarations`). cProfile attributes the
time of one in-process cold audit (`jobs=1`, so every step is in this process) to those functions; the
share is their cumulative time over the whole run's. cProfile's own overhead inflates small functions
called often, so the share printed is an upper bound. Issue 26's bound: at most 10%.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BOUND = 0.10
SUMMARY_FUNCTIONS = ("function_summaries", "holder_uses", "caller_declarations", "_check_parked")


def share(tree: Path) -> tuple[float, float]:
    """(the summaries' seconds, the whole audit's) of one cold in-process audit of `tree`'s `vllm/`."""
    from kvlint.config import Config
    from kvlint.running.runner import run

    previous = os.getcwd()
    os.chdir(tree)
    profile = cProfile.Profile()
    try:
        profile.runcall(run, [Path("vllm")], Config(), jobs=1)
    finally:
        os.chdir(previous)
    stats = pstats.Stats(profile)
    total = max(entry[3] for entry in stats.stats.values())  # type: ignore[attr-defined]
    spent = sum(entry[3] for (_, _, name), entry in stats.stats.items()  # type: ignore[attr-defined]
                if name in SUMMARY_FUNCTIONS)
    return spent, total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", default=["0.33.0", "0.22.1"], help="vLLM releases (wheels)")
    args = parser.parse_args()
    from tests.support.vllm_sources import vllm_tree

    worst = 0.0
    for version in args.versions:
        spent, total = share(vllm_tree(version))
        worst = max(worst, spent / total)
        print(f"vLLM {version}: summaries {spent:.3f} s of a {total:.2f} s cold audit (one process): "
              f"{spent / total:.1%}")
    print(f"worst share {worst:.1%} (bound {BOUND:.0%}): {'ok' if worst <= BOUND else 'OVER'}")
    return 0 if worst <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())

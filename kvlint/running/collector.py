"""How a kvlint process sets Python's cyclic garbage collector (the command line, and every run's workers)."""

from __future__ import annotations

import gc


def collect_garbage_rarely() -> None:
    """kvlint builds many short-lived `ast` trees (and libcst ones for fixes) that hold no reference cycles.

    With CPython's default thresholds the collector scans them over and over:
    `ast.parse` of vLLM's relevant files takes 2.5 times as long. A run is short,
    so collect young objects rarely and never rescan what is alive now (start-up's
    imports; in a forked worker, what it inherited, which a full collection would
    also copy page by page). mypy tunes its collector the same way.
    """
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)

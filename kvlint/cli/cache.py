"""`kvlint cache clean`: remove what kvlint keeps in the result cache directory."""

from __future__ import annotations

import argparse
import sys

from kvlint.cli.shared import CACHE_DIR_ENV, EXIT_CLEAN, EXIT_USAGE, _cache_directory


def _clean_cache(args: argparse.Namespace) -> int:
    """`kvlint cache clean`: remove what kvlint keeps in the cache directory."""
    from kvlint.running.cache import clean

    directory = _cache_directory(args)
    if directory is None:
        sys.stderr.write(f"kvlint: no cache directory: give --cache-dir DIR or set {CACHE_DIR_ENV}\n")
        return EXIT_USAGE
    if not directory.is_dir():
        sys.stderr.write(f"kvlint: {directory}: nothing to clean (no such directory)\n")
        return EXIT_CLEAN
    try:
        removed = clean(directory)
    except OSError as exc:
        sys.stderr.write(f"kvlint: cannot clean the cache: {exc.strerror.lower() if exc.strerror else exc}\n")
        return EXIT_USAGE
    for path in removed:
        sys.stderr.write(f"kvlint: removed {path}\n")
    if not removed:
        sys.stderr.write(f"kvlint: {directory}: no kvlint cache there\n")
    return EXIT_CLEAN

"""Compare kvlint's node positions with libcst's PositionProvider over a whole corpus, node for node.

    .venv/bin/python scripts/positions_oracle.py                   # the venv's site-packages
    .venv/bin/python scripts/positions_oracle.py PATH [PATH ...]

`tests/test_positions.py` does the same on the fixtures and vLLM's relevant
code; this is the long run. Files libcst cannot parse are counted and skipped.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
import time
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kvlint.fixing.positions import node_spans  # noqa: E402 - after the path set-up above


def mismatch(text: str) -> tuple[int, str]:
    """Return (nodes compared, the first node type whose span differs or '')."""
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    actual = node_spans(module)
    if actual.keys() != expected.keys():
        return len(expected), "(a different set of nodes)"
    for node, code_range in expected.items():
        if actual[node] != (code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column):
            return len(expected), type(node).__name__
    return len(expected), ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files or directories (default: site-packages)")
    args = parser.parse_args()
    roots = args.paths or [Path(sysconfig.get_paths()["purelib"])]
    files = sorted(path for root in roots for path in ([root] if root.is_file() else root.rglob("*.py")))
    started = time.perf_counter()
    checked = nodes = skipped = 0
    failures: list[str] = []
    for path in files:
        try:
            count, differing = mismatch(path.read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 - not Python 3 that libcst parses, or not UTF-8: not this oracle's business
            skipped += 1
            continue
        checked += 1
        nodes += count
        if differing:
            failures.append(f"{path}: {differing}")
    print("\n".join(failures))
    print(f"{checked} files, {nodes:,} nodes compared, {len(failures)} files differ, {skipped} skipped, "
          f"{time.perf_counter() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

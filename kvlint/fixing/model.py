"""What a fix is, and how fixes are applied to a file's text: ruff's model.

A fix is a set of edits that together repair one finding. Its applicability is
`safe` (the program's behaviour on every path the finding speaks of stays as
intended: `kvlint check --fix` applies it) or `unsafe` (it may change behaviour,
so only `--unsafe-fixes` applies it). Edits use the coordinates of a finding:
1-based lines, 0-based columns counted in code points, end exclusive.

Fixes are applied in one pass, in source order; a fix whose edits overlap an
edit already applied waits for the next pass (the caller re-analyses the new
text and asks again, up to a bound), as ruff does.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class Applicability(str, enum.Enum):
    """Whether `--fix` applies a fix on its own (`safe`) or only with `--unsafe-fixes`."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True, slots=True)
class Edit:
    """Replace the text from (line, column) up to (end_line, end_column) with `content`.

    An insertion has an empty range; a deletion has empty `content`.
    """

    line: int
    column: int
    end_line: int
    end_column: int
    content: str


@dataclass(frozen=True, slots=True)
class Fix:
    """The edits that repair one finding, with a title an editor can show (`Copy the sentinel`)."""

    title: str
    applicability: Applicability
    edits: tuple[Edit, ...]

    def applies(self, unsafe: bool) -> bool:
        """Whether a run with (or without) `--unsafe-fixes` applies this fix."""
        return self.applicability is Applicability.SAFE or unsafe


def line_offsets(lines: Sequence[str]) -> list[int]:
    """The offset in the text of each line's first character, for lines split as the tokenizer splits them."""
    return list(itertools.accumulate(map(len, lines), initial=0))


def _offset(starts: Sequence[int], line: int, column: int) -> int:
    if not 1 <= line <= len(starts):
        raise ValueError(f"edit outside the file: line {line}")
    start = starts[line - 1]
    if line < len(starts) and start + column > starts[line]:
        raise ValueError(f"edit outside its line: {line}:{column}")
    return start + column


def apply_fixes(text: str, lines: Sequence[str], fixes: Iterable[Fix]) -> tuple[str, list[Fix]]:
    """Apply the fixes whose edits overlap no edit applied before them; return the new text and those applied.

    `lines` is `text` split as the tokenizer splits it (`source.split_lines`). Two fixes that make
    the same edit (the same import, say) both count as applied and the edit is made once.
    """
    starts = line_offsets(lines)
    taken: list[tuple[int, int, str]] = []  # (start, end, content) of every edit made, kept sorted
    applied: list[Fix] = []
    for fix in sorted(fixes, key=lambda fix: sorted(fix.edits)):
        ranges = sorted(
            (_offset(starts, e.line, e.column), _offset(starts, e.end_line, e.end_column), e.content)
            for e in fix.edits
        )
        if not ranges or any(end < start for start, end, _ in ranges):
            continue
        if any(a[1] > b[0] or (a[0] == a[1] == b[0] == b[1]) for a, b in itertools.pairwise(ranges)):
            continue  # a fix whose own edits overlap is malformed: never apply it
        new = [edit for edit in ranges if edit not in taken]
        if any(_overlaps(edit, other) for edit in new for other in taken):
            continue
        taken = sorted([*taken, *new])
        applied.append(fix)
    pieces: list[str] = []
    position = 0
    for start, end, content in taken:
        pieces += [text[position:start], content]
        position = end
    pieces.append(text[position:])
    return "".join(pieces), applied


def _overlaps(first: tuple[int, int, str], second: tuple[int, int, str]) -> bool:
    """Whether two edits touch the same text; two insertions at one point also clash (their order is unknown)."""
    (a_start, a_end, _), (b_start, b_end, _) = first, second
    if a_start == a_end == b_start == b_end:
        return True
    return a_start < b_end and b_start < a_end

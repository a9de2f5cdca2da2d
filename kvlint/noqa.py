"""Read `# noqa` comments exactly as flake8 does, so that a line silenced for the flake8
face is silenced for every face.

flake8 searches the raw text of the line, not its comment tokens: a `# noqa`
inside a string literal counts, `#noqa` (no space) does not, and anything after
`# noqa` that is not `:` plus at most one whitespace plus a code (`# noqa : X`,
`# noqa:  X`, `# noqa: KVC`) makes it a blanket `# noqa`. Codes are compared
case-sensitively, so `# noqa: kvc001` silences nothing. For a multi-line string
or a backslash-continued line, flake8 searches all of its lines joined (lines
inside brackets stay separate): `noqa_line_mapping` gives that text per line.
"""

from __future__ import annotations

import functools
import io
import re
import tokenize
from collections.abc import Sequence

# NOQA_INLINE_REGEXP from flake8 (flake8/defaults.py, flake8 7.5.0),
# Copyright (C) 2011-2013 Tarek Ziade, 2012-2016 Ian Cordasco; MIT License.
NOQA_INLINE_REGEXP = re.compile(
    r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?",
    re.IGNORECASE,
)

_CODE_SEPARATOR = re.compile(r"[,\s]")


@functools.lru_cache(maxsize=512)
def noqa_codes(line: str) -> frozenset[str] | None:
    """Return the codes a line's `# noqa` lists: None without one, empty for a blanket one."""
    match = NOQA_INLINE_REGEXP.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if codes is None:
        return frozenset()
    return frozenset(item.strip() for item in _CODE_SEPARATOR.split(codes) if item.strip())


def is_suppressed(line: str, code: str) -> bool:
    """Say whether the `# noqa` on `line` silences `code`, as flake8's is_inline_ignored does."""
    codes = noqa_codes(line)
    if codes is None:
        return False
    if not codes:
        return True
    return code in codes or code.startswith(tuple(codes))


def noqa_line_mapping(lines: Sequence[str]) -> dict[int, str]:
    """Map each 1-based line number to the text flake8 searches for its `# noqa`."""
    mapping = dict(enumerate(lines, start=1))
    mapping.update(multi_line_texts(lines))
    return mapping


class NoqaLines:
    """The text flake8 searches for the `# noqa` of each line of a file, for one lookup per finding.

    Only the lines of multi-line strings and backslash-continued lines are stored (with their joined
    text); every other line is its own text. The tokens are read one at a time, never kept.
    """

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self.joined = multi_line_texts(lines)

    def text(self, line: int) -> str:
        """What flake8 searches for a `# noqa` of line `line` ("" for a line the file does not have)."""
        joined = self.joined.get(line)
        if joined is not None:
            return joined
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""


def multi_line_texts(lines: Sequence[str]) -> dict[int, str]:
    """The joined text of each line of a logical line that flake8 reads as several physical lines at once (a
    multi-line string, a backslash continuation); {} when the text does not tokenize (flake8 then reads each
    line alone)."""
    joined: dict[int, str] = {}
    first = last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            start, end = token.start[0], token.end[0]
            first = start if first is None else min(first, start)
            last = end if last is None else max(last, end)
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                if last > first:
                    text = "".join(lines[first - 1 : last])
                    for number in range(first, last + 1):
                        joined[number] = text
                else:
                    joined.pop(first, None)  # a later one-line group of the same line: the line alone, as before
                first = last = None
    except (tokenize.TokenError, SyntaxError):
        return {}
    return joined

"""The "disable KVC00N for this line" action: the edit that adds a code to the `# noqa` comment flake8 reads
for a line, or adds one.

flake8 searches a whole logical line for a multi-line string or a backslash
continuation (`kvlint.noqa`), so the comment goes at the end of that span's
last physical line, where it cannot land inside a string.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Sequence

from kvlint.fixing.model import Edit
from kvlint.noqa import NOQA_INLINE_REGEXP, is_suppressed
from kvlint.server.positions import line_content

_TRAILING_SEPARATORS = re.compile(r"[,\s]+$")


def noqa_edit(lines: Sequence[str], line: int, code: str) -> Edit | None:
    """The edit that silences `code` on 1-based `line`; None when its `# noqa` already does, or no comment fits."""
    if not 1 <= line <= len(lines):
        return None
    first, last, comments = _span(lines, line)
    for number, column, comment in comments:
        match = NOQA_INLINE_REGEXP.search(comment)
        if match is None:
            continue
        if is_suppressed(comment, code):
            return None
        codes_end = match.end("codes")
        if match.group("codes") is None:
            return None  # a blanket `# noqa` silences every code already
        trailing = _TRAILING_SEPARATORS.search(match.group("codes"))
        insert = column + codes_end - (len(trailing.group()) if trailing else 0)
        return Edit(number, insert, number, insert, f", {code}")
    content = line_content(lines[last - 1])
    if content.endswith("\\"):
        return None  # only when tokenizing failed: a comment after a continuation would break the line
    kept = content.rstrip()
    separator = "  " if kept else ""
    return Edit(last, len(kept), last, len(content), f"{separator}# noqa: {code}")


def _span(lines: Sequence[str], line: int) -> tuple[int, int, list[tuple[int, int, str]]]:
    """The physical lines flake8 joins with `line` (first, last), and the comments on them: (line, column, text)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
    except (tokenize.TokenError, SyntaxError):
        tokens = []
    first = None
    comments: list[tuple[int, int, str]] = []
    for token in tokens:
        if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        if first is None:
            first = token.start[0]
            if first > line:
                break  # `line` is in no logical line (a blank line)
        if token.type == tokenize.COMMENT:
            comments.append((token.start[0], token.start[1], token.string))
        if token.type in (tokenize.NL, tokenize.NEWLINE):
            last = token.end[0] if token.string else token.start[0]
            if first <= line <= last:
                return first, max(last, line), comments
            first, comments = None, []
    comment = _comment_of(lines[line - 1])
    return line, line, [(line, *comment)] if comment else []


def _comment_of(text: str) -> tuple[int, str] | None:
    """A `#` comment on a line that could not be tokenized (a guess: not inside a string)."""
    position = text.find("#")
    return (position, line_content(text[position:])) if position >= 0 else None

"""The `# kvlint: connector-path` marker: how it is spelt, and the comments that mark nothing.

The marker counts on the lines from `def` to the `:` that ends the signature (the flow
analysis reads it there, `FlowAnalysis._connector_marker`). Written above the `def`, on a
decorator or `class` line, or in a body, it marks nothing, and KVC101 says so. Only a
comment part that is the marker and nothing else counts as one there (`# kvlint: connector-path`,
`# kvlint: connector-path[ec]`, possibly beside other `#` directives such as `# noqa`), so a
comment that quotes the marker in a sentence is not reported.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator

# the marker, with the invariants it names in brackets (`connector-path[ec]`; none: the first invariant)
CONNECTOR_PATH_MARKER = re.compile(r"#\s*kvlint:\s*connector-path\b(?:\s*\[(?P<invariants>[\w\s,]*)\])?")
_COMMENT_PARTS = re.compile(r"#[^#]*")  # a comment's `#` directives, each to the next `#`


def misplaced_markers(text: str) -> Iterator[tuple[int, int, int, str]]:
    """(line, column, end column, marker) of each marker comment outside every `def`'s header, in `text`."""
    if "connector-path" not in text:  # nearly every file: no need to tokenize it
        return
    in_header = False  # the logical line being read starts with `def` (or `async def`)
    first = True  # the next significant token starts a logical line
    after_async = False  # the logical line started with `async`: `def` may follow
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = token.type
            if kind in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
                if kind == tokenize.NEWLINE:
                    in_header, first = False, True
                continue
            if kind == tokenize.COMMENT:
                if not in_header:
                    yield from _directives(token)
                continue
            if first or after_async:
                in_header = token.type == tokenize.NAME and token.string == "def"
                after_async = first and token.type == tokenize.NAME and token.string == "async"
                first = False
    except (tokenize.TokenError, SyntaxError):
        return  # `ast` parsed the file, so this is newer syntax than the tokenizer knows: say nothing


def _directives(token: tokenize.TokenInfo) -> Iterator[tuple[int, int, int, str]]:
    line, column = token.start
    for start, found in marker_directives(token.string):
        yield line, column + start, column + start + len(found.group()), found.group()


def marker_directives(comment: str) -> Iterator[tuple[int, re.Match[str]]]:
    """(offset in `comment`, match) of each `#` directive of a comment that is the marker and nothing else: the
    one definition of a marker, on a `def`'s header (where it marks) and off it (where KVC101 reports it)."""
    for part in _COMMENT_PARTS.finditer(comment):
        found = CONNECTOR_PATH_MARKER.fullmatch(part.group().rstrip())
        if found is not None:
            yield part.start(), found

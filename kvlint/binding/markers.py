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
    for part in _COMMENT_PARTS.finditer(token.string):
        marker = part.group().rstrip()
        if CONNECTOR_PATH_MARKER.fullmatch(marker):
            yield line, column + part.start(), column + part.start() + len(marker), marker

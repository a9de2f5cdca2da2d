"""`# kvlint: connector-path` comments that mark nothing because they are not on a `def`'s header.

The marker counts on the lines from `def` to the `:` that ends the signature (the flow
analysis reads it there, `FlowAnalysis._connector_marker`). Written above the `def`, on a
decorator or `class` line, or in a body, it marks nothing, and KVC101 says so. Only a
comment part that is the marker and nothing else counts as one here (`# kvlint: connector-path`,
`# kvlint: connector-path[ec]`, possibly beside other `#` directives such as `# noqa`), so a
comment that quotes the marker in a sentence is not reported.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator

# one `#`-separated part of a comment that is a marker and nothing else
_DIRECTIVE = re.compile(r"\s*kvlint:\s*connector-path\b(?:\s*\[[\w\s,]*\])?\s*")


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
            if kind in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
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
    offset = 0
    for part in token.string.split("#")[1:]:
        offset = token.string.index("#", offset)
        found = _DIRECTIVE.fullmatch(part)
        if found is not None:
            marker = "#" + part.rstrip()
            yield line, column + offset, column + offset + len(marker), marker
        offset += 1

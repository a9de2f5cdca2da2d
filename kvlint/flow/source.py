"""The text the flow analysis parsed, and what `ast` positions mean in the file.

`ast` gives UTF-8 byte columns in the parsed text; kvlint reports character
columns in the original file. The parsed text is the file's relevant units
(`kvlint.engine.reduced_text`), so its lines are the file's own lines and only
the line numbers need the map.
"""

from __future__ import annotations

import ast
import re
import tokenize
from collections.abc import Iterator, Sequence

from kvlint.flow.syntax import one_line
from kvlint.source import parse_source, split_lines, unit_batches
from kvlint.sites import Span

_DEFINITION_HEAD = re.compile(r"(?:async\s+)?(?:def|class)\s+")

BATCH_CHARACTERS = 1 << 17  # the flow analysis parses and analyses about this much of the text at a time


def parsed_batches(lines: Sequence[str], unit_starts: Sequence[int]) -> Iterator[ast.Module]:
    """The text of `lines` parsed a batch of whole top-level units of about `BATCH_CHARACTERS` at a time, in
    order (`kvlint.source.unit_batches`): only one batch's tree need be alive while the flow analysis reads it
    (issue 27: memory per finding). `unit_starts` are the (1-based) lines where a top-level statement of the
    text starts. A batch that does not parse raises the `SourceError` of its own parse (the caller then
    parses the text whole)."""
    for first, text in unit_batches(lines, unit_starts, BATCH_CHARACTERS):
        yield parse_source("\n" * (first - 1) + text)


class SourceText:
    """Spans and source text of the nodes of one `ast.parse` of `text`."""

    def __init__(self, text: str, line_map: Sequence[int], lines: list[str] | None = None) -> None:
        """`lines`: `split_lines(text)`, where the caller has them already."""
        # the tokenizer's lines: a form feed or U+2028 ends none
        self.lines = split_lines(text) if lines is None else lines
        self.line_map = line_map
        self._encoded: dict[int, bytes] = {}

    def column(self, line: int, offset: int) -> int:
        """The character column of the UTF-8 byte `offset` on `line` (1-based) of the parsed text."""
        if line > len(self.lines):
            return offset
        text = self.lines[line - 1]
        if text.isascii():
            return offset
        encoded = self._encoded.get(line)
        if encoded is None:
            encoded = self._encoded[line] = text.encode("utf-8", "surrogatepass")
        return len(encoded[:offset].decode("utf-8", "replace"))

    def _range(self, node: ast.AST) -> tuple[int, int, int, int]:
        """The node's lines and character columns in the parsed text."""
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        column = self.column(line, node.col_offset)  # type: ignore[attr-defined]
        return line, column, end_line, self.column(end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]

    def span(self, node: ast.AST) -> Span:
        """The node's span in the file's lines and character columns."""
        line, column, end_line, end_column = self._range(node)
        last = len(self.line_map)
        return Span(self.line_map[min(line, last) - 1], column, self.line_map[min(end_line, last) - 1], end_column)

    def segment(self, node: ast.AST) -> str:
        """The node's source text as written."""
        line, column, end_line, end_column = self._range(node)
        if line == end_line:
            return self.lines[line - 1][column:end_column]
        return "".join([self.lines[line - 1][column:], *self.lines[line : end_line - 1],
                        self.lines[end_line - 1][:end_column]])

    def code(self, node: ast.AST) -> str:
        """The node's source as a message shows it (one line, no comments, shortened)."""
        return one_line(self.segment(node))

    def name_of(self, definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> ast.AST:
        """A node at the name of a `def` or `class` (`ast` gives the name no position of its own)."""
        text = self.lines[definition.lineno - 1]
        start = self.column(definition.lineno, definition.col_offset)
        head = _DEFINITION_HEAD.match(text, start)
        if head is None or not text.startswith(definition.name, head.end()):
            return definition  # the name is on a later line (a backslash): the whole definition stands for it
        begin = len(text[: head.end()].encode("utf-8", "surrogatepass"))
        name = ast.Name(id=definition.name, ctx=ast.Load())
        name.lineno = name.end_lineno = definition.lineno
        name.col_offset, name.end_col_offset = begin, begin + len(definition.name.encode("utf-8", "surrogatepass"))
        return name

    def header_comments(self, definition: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[int, int, str]]:
        """The comments of a `def`'s header, from `def` to the end of the line of its colon: each one's line in
        the parsed text, character column and text."""
        header = self.lines[definition.lineno - 1 : definition.body[0].lineno]
        if not any("#" in line for line in header):
            return []  # most headers have no comment: no need to tokenize them
        lines = iter(header)
        comments: list[tuple[int, int, str]] = []
        depth, colon_line = 0, 0
        try:
            for token in tokenize.generate_tokens(lambda: next(lines, "")):
                if token.type == tokenize.COMMENT:
                    comments.append((definition.lineno + token.start[0] - 1, token.start[1], token.string))
                elif token.type == tokenize.OP and token.string in "([{":
                    depth += 1
                elif token.type == tokenize.OP and token.string in ")]}":
                    depth -= 1
                elif token.type == tokenize.OP and token.string == ":" and depth == 0 and not colon_line:
                    colon_line = token.start[0]
                if colon_line and token.start[0] > colon_line or token.type == tokenize.NEWLINE and colon_line:
                    break
        except (tokenize.TokenError, SyntaxError):
            pass  # the body's first line ends the text early (an indented block tokenizes to its end)
        return comments

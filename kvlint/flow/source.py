"""The text the flow analysis parsed, and what `ast` positions mean in the file.

`ast` gives UTF-8 byte columns in the parsed text; kvlint reports character
columns in the original file. The parsed text is the file's relevant units
(`kvlint.engine.reduced_text`), so its lines are the file's own lines and only
the line numbers need the map.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from kvlint.sites import Span

_DEFINITION_HEAD = re.compile(r"(?:async\s+)?(?:def|class)\s+")


class SourceText:
    """Spans and source text of the nodes of one `ast.parse` of `text`."""

    def __init__(self, text: str, line_map: Sequence[int]) -> None:
        self.lines = text.splitlines(keepends=True)
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

    def span(self, node: ast.AST) -> Span:
        """The node's span in the file's lines and character columns."""
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        column = self.column(line, node.col_offset)  # type: ignore[attr-defined]
        end_column = self.column(end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]
        last = len(self.line_map)
        return Span(self.line_map[min(line, last) - 1], column, self.line_map[min(end_line, last) - 1], end_column)

    def segment(self, node: ast.AST) -> str:
        """The node's source text as written."""
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        column = self.column(line, node.col_offset)  # type: ignore[attr-defined]
        end_column = self.column(end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]
        if line == end_line:
            return self.lines[line - 1][column:end_column]
        return "".join([self.lines[line - 1][column:], *self.lines[line : end_line - 1],
                        self.lines[end_line - 1][:end_column]])

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

    def header_lines(self, definition: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
        """The lines of a `def`'s header, from `def` to the colon (its comments are there)."""
        first = definition.lineno
        last = max([first, *(getattr(n, "end_lineno", first) or first for n in _header_nodes(definition))])
        body_line = definition.body[0].lineno
        found = []
        for line in range(first, min(body_line, len(self.lines)) + 1):
            found.append(self.lines[line - 1])
            if line >= last and _code_part(self.lines[line - 1]).rstrip().endswith(":"):
                break
        return found


def _header_nodes(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    args = definition.args
    nodes: list[ast.AST] = [*args.posonlyargs, *args.args, *args.kwonlyargs, *args.defaults]
    nodes += [d for d in args.kw_defaults if d is not None]
    nodes += [a for a in (args.vararg, args.kwarg, definition.returns) if a is not None]
    return nodes


def _code_part(line: str) -> str:
    """The line without a trailing comment (a `#` in a string on a header line is rare enough to ignore)."""
    return line.split("#", 1)[0]

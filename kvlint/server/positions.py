"""Positions between kvlint and LSP.

kvlint's findings and edits use 1-based lines and 0-based columns counted in code
points; LSP uses 0-based lines and columns counted in the negotiated position
encoding, UTF-16 code units unless the client offers another. Lines end at `\\n`,
`\\r\\n` or `\\r` in both (`source.split_lines`), so line numbers agree.
"""

from __future__ import annotations

from collections.abc import Sequence

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def line_content(line: str) -> str:
    """A physical line without its line ending."""
    return line.rstrip("\r\n")


def client_column(line: str, column: int, encoding: str = UTF16) -> int:
    """The LSP character offset of code-point `column` in `line`."""
    prefix = line_content(line)[:column]
    if encoding == UTF32 or prefix.isascii():
        return len(prefix)
    if encoding == UTF8:
        return len(prefix.encode("utf-8", "surrogatepass"))
    return len(prefix.encode("utf-16-le", "surrogatepass")) // 2


def code_point_column(line: str, character: int, encoding: str = UTF16) -> int:
    """The code-point column of LSP character offset `character` in `line` (clamped to the line's end)."""
    content = line_content(line)
    if encoding == UTF32 or content.isascii():
        return max(0, min(character, len(content)))
    units = 0
    for column, char in enumerate(content):
        if units >= character:
            return column
        if encoding == UTF8:
            units += len(char.encode("utf-8", "surrogatepass"))
        else:
            units += 2 if ord(char) > 0xFFFF else 1
    return len(content)


def to_client(lines: Sequence[str], line: int, column: int, encoding: str = UTF16) -> tuple[int, int]:
    """kvlint's (1-based line, code-point column) as LSP's (0-based line, character); past the end: the end."""
    index = line - 1
    if index < 0:
        return 0, 0
    if index >= len(lines):
        if not lines:
            return 0, 0
        last = lines[-1]
        if last.endswith(("\n", "\r")):
            return len(lines), 0
        return len(lines) - 1, client_column(last, len(last), encoding)
    return index, client_column(lines[index], column, encoding)


def from_client(lines: Sequence[str], line: int, character: int, encoding: str = UTF16) -> tuple[int, int]:
    """LSP's (0-based line, character) as kvlint's (1-based line, code-point column)."""
    if line >= len(lines):
        return len(lines) + 1, 0
    return line + 1, code_point_column(lines[line], character, encoding)


def offset_of(lines: Sequence[str], starts: Sequence[int], line: int, character: int, encoding: str = UTF16) -> int:
    """The offset in the text of LSP position (line, character); `starts` are the lines' offsets plus the end."""
    if line >= len(lines):
        return starts[-1]
    return starts[line] + code_point_column(lines[line], character, encoding)

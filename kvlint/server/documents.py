"""The open documents: their unsaved text as the editor holds it, kept in step with its changes."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from kvlint.source import split_lines
from kvlint.server.positions import UTF16, code_point_column

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Document:
    """One open document: what the editor shows, not what is on disk."""

    uri: str
    text: str
    version: int | None
    language_id: str = "python"
    _lines: list[str] | None = field(default=None, repr=False, compare=False)  # `split_lines(_lines_of)`
    _lines_of: str | None = field(default=None, repr=False, compare=False)

    @property
    def path(self) -> Path | None:
        """The file behind a `file:` URI; None for an unsaved (`untitled:`) buffer."""
        return path_of(self.uri)

    @property
    def is_python(self) -> bool:
        """kvlint looks only at Python: the editor's language id, or a `.py` / `.pyi` name."""
        if self.language_id == "python":
            return True
        path = self.path
        return not self.language_id and path is not None and path.suffix in PYTHON_SUFFIXES

    def lines(self) -> list[str]:
        """The text's lines (`split_lines`); the same list until the text changes (never changed in place)."""
        if self._lines is None or self._lines_of is not self.text:
            self._lines, self._lines_of = split_lines(self.text), self.text
        return self._lines

    def apply_change(
        self, text: str, change_range: tuple[int, int, int, int] | None, encoding: str = UTF16
    ) -> None:
        """Apply one `didChange` content change: the whole text, or (start line, character, end line,
        character) in the client's position encoding replaced by `text`. Only the lines around the change are
        split again (a keystroke in a 7,000-line file costs its lines, not the file's)."""
        if change_range is None:
            self.text = text
            return
        lines = self.lines()
        count = len(lines)
        if not count:
            self.text = text
            return
        first_line, last_line = change_range[0], max(change_range[0], change_range[2])
        low = max(min(first_line, count - 1) - 1, 0)  # a line more on each side: `\r` then `\n` join
        high = min(last_line + 1, count - 1)
        region = sum(map(len, lines[:low]))
        region_end = region + sum(map(len, lines[low : high + 1]))

        def offset(line: int, character: int) -> int:
            if line >= count:
                return len(self.text)
            return region + sum(map(len, lines[low:line])) + code_point_column(lines[line], character, encoding)

        start = offset(change_range[0], change_range[1])
        end = start if change_range[2] < change_range[0] else max(start, offset(change_range[2], change_range[3]))
        new = self.text[:start] + text + self.text[end:]
        grown = len(new) - len(self.text)
        self.text = new
        self._lines = [*lines[:low], *split_lines(new[region : region_end + grown]), *lines[high + 1 :]]
        self._lines_of = new


def path_of(uri: str) -> Path | None:
    """The local path of a `file:` URI (percent-decoded); None for any other scheme."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path, errors="surrogateescape")  # the bytes of any name Linux allows
    if "\x00" in path:
        return None  # `%00`: no file can be named so; the text is analysed as an unsaved buffer's
    if os.name == "nt" and path.startswith("/") and len(path) > 2 and path[2] == ":":
        path = path[1:]
    return Path(path)

"""The open documents: their unsaved text as the editor holds it, kept in step with its changes."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from kvlint.source import split_lines
from kvlint.fixing.model import line_offsets
from kvlint.server.positions import UTF16, offset_of

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass
class Document:
    """One open document: what the editor shows, not what is on disk."""

    uri: str
    text: str
    version: int | None
    language_id: str = "python"

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
        return split_lines(self.text)

    def apply_change(
        self, text: str, change_range: tuple[int, int, int, int] | None, encoding: str = UTF16
    ) -> None:
        """Apply one `didChange` content change: the whole text, or (start line, character, end line,
        character) in the client's position encoding replaced by `text`."""
        if change_range is None:
            self.text = text
            return
        lines = self.lines()
        starts = line_offsets(lines)
        start = offset_of(lines, starts, change_range[0], change_range[1], encoding)
        end = offset_of(lines, starts, change_range[2], change_range[3], encoding)
        self.text = self.text[:start] + text + self.text[max(start, end):]


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

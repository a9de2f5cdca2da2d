"""How kvlint shows a path: one rule for every output, the configuration's errors and discovery; and what makes a
directory a project's root."""

from __future__ import annotations

import os
from pathlib import Path

# what makes a directory a project's root: the configuration's search and the project walk stop there, and a
# namespace package's crawl up (`source.packages_of`) does not pass it
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", ".git")


def display_path(path: Path, cwd: Path | None = None) -> str:
    """Return `path` relative to `cwd` when under it, else absolute, with `/` separators."""
    if cwd is None and os.sep == "/":  # a relative path that stays below the current directory is itself,
        text = os.fspath(path)  # normalised (pre-commit names thousands of files: no `relpath` of each)
        if text and not text.startswith("/"):
            normal = os.path.normpath(text)
            if normal != os.pardir and not normal.startswith("../"):
                return normal
    base = os.path.abspath(cwd if cwd is not None else os.getcwd())
    absolute = os.path.normpath(os.path.join(base, path))
    try:
        relative = os.path.relpath(absolute, base)
    except ValueError:
        return Path(absolute).as_posix()
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return Path(absolute).as_posix()
    return Path(relative).as_posix()

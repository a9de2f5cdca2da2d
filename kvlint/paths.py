"""How kvlint shows a path: one rule for every output, the configuration's errors and discovery."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: Path, cwd: Path | None = None) -> str:
    """Return `path` relative to `cwd` when under it, else absolute, with `/` separators."""
    base = os.path.abspath(cwd if cwd is not None else os.getcwd())
    absolute = os.path.normpath(os.path.join(base, path))
    try:
        relative = os.path.relpath(absolute, base)
    except ValueError:
        return Path(absolute).as_posix()
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return Path(absolute).as_posix()
    return Path(relative).as_posix()

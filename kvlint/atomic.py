"""Write a file so that readers see the old content or the new, never a half-written one."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: Path | str, text: str, durable: bool = True) -> None:
    """Write `text` (UTF-8) to `path`: a temporary file in the same directory, fsync, then `os.replace`.

    `durable=False` skips the fsyncs: the rename is still atomic, but after a
    power loss the file may be empty (fine for a cache, which treats it as a miss).
    """
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)  # write through a symlink
    directory = target.parent if str(target.parent) else Path(os.curdir)
    mode = _mode_for(target)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(text.encode("utf-8"))
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if durable:
        _fsync_directory(directory)


def _mode_for(target: Path) -> int:
    """Keep an existing file's permissions; a new file gets what `open()` would give it (0666 less umask)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable where the platform allows it."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    try:
        fd = os.open(directory, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)

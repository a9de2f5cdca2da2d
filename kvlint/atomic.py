"""Write what the user asked for without destroying what is at the path.

`--output` and `--write-baseline` name a regular file (replaced atomically, so
readers see the old content or the new, never half of it, and keeping its
owner and mode), or a character device, FIFO or `/dev/stdout`-like stream
(written through, as a shell's `>` would: `/dev/null` stays a device and a log
that stdout appends to keeps its other lines).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import tempfile
from pathlib import Path

_STREAM = re.compile(r"/dev/(?P<name>stdout|stderr)|/dev/fd/(?P<fd>\d+)|/proc/self/fd/(?P<proc_fd>\d+)")


def write_output(path: Path | str, text: str) -> None:
    """Write `text` (UTF-8) to what `path` names: a caller's stream, a device or FIFO, or a regular file."""
    data = text.encode("utf-8")
    stream = _STREAM.fullmatch(os.path.normpath(os.fspath(path)))
    if stream is not None:
        name = stream.group("name")
        fd = {"stdout": 1, "stderr": 2}[name] if name else int(stream.group("fd") or stream.group("proc_fd"))
        _write_to_stream(fd, data)
        return
    try:
        status = os.stat(path)
    except FileNotFoundError:
        status = None
    if status is None or stat.S_ISREG(status.st_mode):
        write_atomic(path, text)
    elif stat.S_ISCHR(status.st_mode) or stat.S_ISFIFO(status.st_mode):
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)  # no O_TRUNC, no O_CREAT: write through
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
    elif stat.S_ISDIR(status.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", os.fspath(path))
    else:
        raise OSError(errno.EINVAL, "not a regular file, character device or FIFO", os.fspath(path))


def _write_to_stream(fd: int, data: bytes) -> None:
    """Write to the caller's open file descriptor itself: its offset and append mode are the caller's."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _write_all(fd, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class ChangedMeanwhile(Exception):
    """The file to be replaced is no longer the one read (`write_atomic(unchanged=...)`): nothing was written."""


def identity(status: os.stat_result) -> tuple[int, ...]:
    """What tells a file from an edited or replaced one: device, inode, size, mtime and ctime (ns)."""
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns


def write_atomic(path: Path | str, text: str | bytes, durable: bool = True,
                 unchanged: tuple[int, ...] | None = None) -> None:
    """Write `text` (UTF-8; bytes as they are) to the regular file `path`: a temporary file in the same
    directory, fsync,
    then `os.replace`. An existing file keeps its mode, owner and group; if the owner or group cannot
    be kept, nothing is replaced (PermissionError saying so).

    `durable=False` skips the fsyncs: the rename is still atomic, but after a
    power loss the file may be empty.

    `unchanged`: the `identity` of the file as it was read. It is compared again after the temporary file is
    written and synced, immediately before the rename, and a file that changed is not replaced
    (`ChangedMeanwhile`). What remains is the time between that `stat` and the rename: a save that lands
    there is lost (POSIX has no compare-and-rename).
    """
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)  # write through a symlink
    directory = target.parent if str(target.parent) else Path(os.curdir)
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    mode = stat.S_IMODE(existing.st_mode) if existing is not None else _new_file_mode()
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(text if isinstance(text, bytes) else text.encode("utf-8"))
            if existing is not None:
                _keep_owner(stream.fileno(), existing)
            os.fchmod(stream.fileno(), mode)
            if durable:
                stream.flush()
                os.fsync(stream.fileno())
        if unchanged is not None and identity(os.stat(target)) != unchanged:
            raise ChangedMeanwhile(os.fspath(target))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if durable:
        _fsync_directory(directory)


def _keep_owner(fd: int, existing: os.stat_result) -> None:
    """Give the new file the old one's owner and group, or refuse to replace it."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) == (existing.st_uid, existing.st_gid):
        return
    try:
        os.fchown(fd, existing.st_uid, existing.st_gid)
    except OSError:
        whose = (f"owned by uid {existing.st_uid}" if mine.st_uid != existing.st_uid
                 else f"of group {existing.st_gid}")
        raise PermissionError(
            errno.EPERM, f"Not replaced: it is {whose}, and a new file could not keep that"
        ) from None


def _new_file_mode() -> int:
    """What `open()` would give a new file: 0666 less the umask."""
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

"""A directory that only its owner can steer: where the result cache keeps its entries.

A cache directory may be shared (a CI cache, `/tmp`), and whoever can write
into it could plant a symlink where kvlint writes or an entry that says "no
findings". So, as ccache, pip and git do: below the directory the user named,
every step goes through directory file descriptors and never follows a
symlink (`O_NOFOLLOW`, `dir_fd`), and a directory or entry is used only when
the current user owns it and no one else may write to it. A named directory
that others may write to gets a per-user subdirectory (mode 0700) instead.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UntrustedDirectory(OSError):
    """A directory kvlint will not use: the message says why, for one warning."""


def _owner_problem(status: os.stat_result) -> str:
    """Why a directory or entry cannot be trusted, or "" when it can."""
    if status.st_uid != os.geteuid():
        return f"owned by another user (uid {status.st_uid})"
    if status.st_mode & 0o022:
        return "writable by other users"
    return ""


class PrivateDir:
    """An open directory owned by this user and writable by no one else; entries are named relative to it."""

    def __init__(self, fd: int, shown: str):
        self.fd = fd
        self.shown = shown  # for messages

    @classmethod
    def open_named(cls, directory: Path | str) -> PrivateDir:
        """The directory the user named (created 0700 if missing), or this user's subdirectory of a shared one.

        The named path itself may be a symlink (`~/.cache` often is): the user chose it.
        """
        path = os.fspath(directory)
        if not path:
            raise UntrustedDirectory("the cache directory is an empty path")
        try:
            fd = os.open(path, _DIRECTORY)
        except FileNotFoundError:
            os.makedirs(path, mode=0o700, exist_ok=True)
            fd = os.open(path, _DIRECTORY)
        named = cls(fd, path)
        problem = _owner_problem(os.fstat(fd))
        if not problem:
            return named
        try:
            return named.subdirectory(f"kvlint-{os.geteuid()}")  # what a shared, world-writable directory gets
        except OSError as exc:
            raise UntrustedDirectory(f"{path} is {problem}, and {_reason(exc)}") from None
        finally:
            named.close()

    def subdirectory(self, name: str) -> PrivateDir:
        """The subdirectory `name`, made 0700 if missing; never a symlink, never one someone else could write."""
        try:
            os.mkdir(name, 0o700, dir_fd=self.fd)
        except FileExistsError:
            pass
        shown = os.path.join(self.shown, name)
        try:
            fd = os.open(name, _DIRECTORY | _NOFOLLOW, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UntrustedDirectory(f"{shown} is not a directory (a symlink or a file)") from None
            raise
        problem = _owner_problem(os.fstat(fd))
        if problem:
            os.close(fd)
            raise UntrustedDirectory(f"{shown} is {problem}")
        return PrivateDir(fd, shown)

    def read(self, name: str, limit: int) -> bytes | None:
        """The bytes of entry `name`, or None unless it is a regular file of ours, at most `limit` bytes.

        A read entry's modification time is set to now: pruning removes the least recently used.
        """
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | _NOFOLLOW, dir_fd=self.fd)
        except OSError:
            return None
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or _owner_problem(status) or status.st_size > limit:
                return None
            chunks, size = [], 0
            while size <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > limit:
                return None
            try:
                os.utime(fd)
            except OSError:
                pass
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes) -> None:
        """Replace entry `name` atomically: a new 0600 file, renamed over it (a rename never follows a symlink)."""
        temporary = f".{name}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, 0o600,
                     dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
            os.replace(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=self.fd)
            except OSError:
                pass
            raise

    def entries(self) -> Iterator[tuple[str, os.stat_result]]:
        """Each name here with its own status (a symlink is reported as one, not followed)."""
        with os.scandir(self.fd) as listing:
            for entry in listing:
                try:
                    yield entry.name, entry.stat(follow_symlinks=False)
                except OSError:
                    continue

    def remove(self, name: str) -> None:
        """Remove entry `name`; a directory is removed with everything in it, without following symlinks."""
        status = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        if stat.S_ISDIR(status.st_mode):
            import shutil

            shutil.rmtree(name, dir_fd=self.fd)
        else:
            os.unlink(name, dir_fd=self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> PrivateDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reason(exc: OSError) -> str:
    if isinstance(exc, UntrustedDirectory):
        return str(exc)
    return f"its per-user subdirectory cannot be made: {(exc.strerror or str(exc)).lower()}"

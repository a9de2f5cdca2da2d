"""Turn command-line paths into the files to check, never opening a FIFO or device nor
following a directory symlink, and name every file that could not be checked."""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.paths import display_path

if TYPE_CHECKING:
    from kvlint.config import Config

PYTHON_SUFFIXES = (".py", ".pyi")
SKIPPED_DIRECTORIES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        ".eggs",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        "build",
        "dist",
        "node_modules",
        "site-packages",
    }
)

_REASONS = {
    errno.ENOENT: "no such file or directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.ELOOP: "symlink loop",
    errno.ENOTDIR: "not a directory",
    errno.ENAMETOOLONG: "file name too long",
}


@dataclass(frozen=True)
class SourceFile:
    """A regular file to check: where it is (`location`, as `os.fspath(Path(...))` spells it), and how reports
    show it."""

    location: str
    display_path: str

    @functools.cached_property
    def path(self) -> Path:
        """`location` as a `Path`, made when first asked: a `Path` for each file found cost discovery 2.5 us a
        file, and most files are only read and scanned (which take the string)."""
        return Path(self.location)


@dataclass(frozen=True)
class UnreadablePath:
    """A path that should have been checked but cannot be; reported as KVC901."""

    path: Path
    display_path: str
    reason: str


def _reason(exc: OSError) -> str:
    if exc.errno in _REASONS:
        return _REASONS[exc.errno]
    return (exc.strerror or str(exc) or type(exc).__name__).lower()


def _stat_reason(path: str) -> tuple[os.stat_result | None, str]:
    """Stat `path` following symlinks; on failure say why in one line."""
    try:
        return os.stat(path), ""
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return None, "dangling symlink"
        return None, _reason(exc)


def is_skipped_directory(path: str, name: str) -> bool:
    if name in SKIPPED_DIRECTORIES or name.endswith(".egg-info"):
        return True
    return os.path.lexists(os.path.join(path, "pyvenv.cfg"))


def iter_python_files(
    paths: Sequence[Path], config: Config, listed: list[str] | None = None
) -> Iterator[SourceFile | UnreadablePath]:
    """Yield the files to check under `paths`, and the paths that cannot be checked.

    `listed`, when given, gets every directory whose entries decided what was yielded (those listed, and
    those skipped for holding a `pyvenv.cfg`): the result cache's record of a run checks that they are unchanged.
    """
    walker = _Walker(config, listed)
    for given in paths or [Path(os.curdir)]:
        path = os.fspath(given)
        if config.is_excluded(Path(path)):
            continue
        info, reason = _stat_reason(path)
        if info is not None and stat.S_ISDIR(info.st_mode):
            yield from walker.walk(path)
        else:
            yield from walker.emit(path, info, reason)


class _Walker:
    """Walk directories in sorted order, remembering what was already yielded.

    Each directory on the stack carries its real path and its display path, so a
    file inside costs two string joins rather than `realpath` (a `lstat` per path
    component) and `relpath`: on vLLM's 3,231 files that is most of discovery.
    """

    def __init__(self, config: Config, listed: list[str] | None = None) -> None:
        self.config = config
        self.seen: set[str] = set()
        self.walked: set[str] = set()
        self.listed = listed
        self.real_directories: dict[str, str] = {}  # each named file's directory, resolved

    def emit(
        self, path: str, info: os.stat_result | None, reason: str, key: str = "", shown: str = ""
    ) -> Iterator[SourceFile | UnreadablePath]:
        """Yield `path` once, as a SourceFile if it is a regular file."""
        key = key or (self._real_path(path) if info is not None else os.path.abspath(path))
        if key in self.seen:
            return
        self.seen.add(key)
        shown = shown or display_path(Path(path))
        if info is None:
            yield UnreadablePath(Path(path), shown, reason)
        elif stat.S_ISREG(info.st_mode):
            yield SourceFile(_normalised(path), shown)
        else:
            yield UnreadablePath(Path(path), shown, "not a regular file")

    def _real_path(self, path: str) -> str:
        """`os.path.realpath(path)`, its directory's resolved once: a file named on the command line is one
        `lstat` where it is no link, not one for each part of its path (pre-commit names thousands)."""
        directory, name = os.path.split(path)
        if name in ("", os.curdir, os.pardir) or os.path.islink(path):
            return os.path.realpath(path)
        real = self.real_directories.get(directory)
        if real is None:
            real = self.real_directories[directory] = os.path.realpath(directory or os.curdir)
        return os.path.join(real, name)

    def walk(self, top: str) -> Iterator[SourceFile | UnreadablePath]:
        """Yield the Python files under `top`, depth first in name order."""
        stack: list[tuple[str, str, Iterator[os.DirEntry[str]]]] = []
        yield from self._enter(top, os.path.realpath(top), display_path(Path(top)), stack)
        while stack:
            real, shown, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            child_real, child_shown = os.path.join(real, entry.name), _display_child(shown, entry.name)
            is_directory = yield from self._visit(entry, child_real, child_shown)
            if is_directory:
                yield from self._enter(entry.path, child_real, child_shown, stack)

    def _enter(
        self, directory: str, real: str, shown: str, stack: list[tuple[str, str, Iterator[os.DirEntry[str]]]]
    ) -> Iterator[UnreadablePath]:
        """Push the sorted entries of `directory`, or yield why it cannot be listed."""
        if real in self.walked:
            return
        self.walked.add(real)
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as exc:
            yield UnreadablePath(Path(directory), shown, _reason(exc))
            return
        if self.listed is not None:
            self.listed.append(directory)
        stack.append((real, shown, iter(entries)))

    def _excluded(self, path: str) -> bool:
        return bool(self.config.exclude) and self.config.is_excluded(Path(path))

    def _visit(
        self, entry: os.DirEntry[str], real: str, shown: str
    ) -> Generator[SourceFile | UnreadablePath, None, bool]:
        """Yield the entry if it is a Python file; return whether it is a directory to walk.

        `real` is the entry's real path unless the entry itself is a symlink (its
        directory's real path joined with its name), `shown` its display path.
        """
        try:
            is_link = entry.is_symlink()
            is_dir = not is_link and entry.is_dir(follow_symlinks=False)
        except OSError as exc:
            if entry.name.endswith(PYTHON_SUFFIXES):
                yield from self.emit(entry.path, None, _reason(exc), shown=shown)
            return False
        if is_dir:
            if self._excluded(entry.path):
                return False
            if is_skipped_directory(entry.path, entry.name):
                if self.listed is not None and entry.name not in SKIPPED_DIRECTORIES:
                    self.listed.append(entry.path)  # its `pyvenv.cfg` decided: a change inside must be seen
                return False
            return True
        if not entry.name.endswith(PYTHON_SUFFIXES) or self._excluded(entry.path):
            return False
        if is_link:
            info, reason = _stat_reason(entry.path)
            if info is not None and stat.S_ISDIR(info.st_mode):
                return False
            yield from self.emit(entry.path, info, reason, shown=shown)
            return False
        try:  # the type the directory listing gave (no `lstat` of each file, where the file system says it)
            regular = entry.is_file(follow_symlinks=False)
        except OSError as exc:
            yield from self.emit(entry.path, None, _reason(exc), shown=shown)
            return False
        yield from self.emit(entry.path, _REGULAR if regular else _OTHER, "", key=real, shown=shown)
        return False


_REGULAR = os.stat_result((stat.S_IFREG, 0, 0, 0, 0, 0, 0, 0, 0, 0))  # what `emit` reads of a file's status
_OTHER = os.stat_result((0, 0, 0, 0, 0, 0, 0, 0, 0, 0))  # not a regular file (a FIFO, a socket, a device)


_HERE = os.curdir + os.sep


def _normalised(path: str) -> str:
    """The path as `Path` spells it (`os.fspath(Path(path))`): the walk's paths are joined to a given `Path`'s
    spelling, which is normalised already, but for the `./` that `os.scandir(".")` puts before each name."""
    while path.startswith(_HERE):
        path = path[len(_HERE):]
    return path


def _display_child(shown: str, name: str) -> str:
    """The display path of `name` inside a directory displayed as `shown` (what `display_path` would give)."""
    if shown == os.curdir:
        return name
    return f"{shown}{name}" if shown.endswith("/") else f"{shown}/{name}"


def read_source(path: Path | str) -> bytes:
    """Read a regular file's bytes without blocking on a FIFO or device."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    flags |= getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        first = os.read(fd, info.st_size + 1)  # one read: a regular file gives less than asked only at its end
        if len(first) == info.st_size:
            return first
        chunks = [first]  # it changed size since its status was taken (or a short read): read on to the end
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)

"""`kvlint check --fix` / `--diff` over files: read, fix (`kvlint.fixing.passes`), then diff or write back.

A file is read again here (its bytes, its encoding: a BOM, a coding cookie), fixed as text, encoded
as it was, and written atomically with its mode kept (`kvlint.atomic`); a file whose bytes changed
on disk since they were read is not written.

What is never written (docs/design.md, "What kvlint promises"): a file that is no longer a regular file (a FIFO put in
its place is never opened for a blocking read), a file reached through a symlink that resolves outside the
paths given, a file the user may not write (`os.access` and the mode's write bits: root does not replace a
0444 file either), and a file whose identity (device, inode, size, mtime, ctime) changed between the read
and the rename, which `write_atomic` checks right before it renames.
"""

from __future__ import annotations

import codecs
import difflib
import errno
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvlint.config import Config
from kvlint.source import SourceError, coding_cookie, decode_source, module_name_for
from kvlint.findings import Finding
from kvlint.fixing.passes import FixOutcome, fix_source
from kvlint.binding.tree_index import TreeIndex


@dataclass(frozen=True)
class FileFix:
    """What fixing one file did (or would do)."""

    display_path: str
    outcome: FixOutcome
    old_text: str
    problem: str = ""  # why the file was left alone: refused, changed on disk, could not be written

    @property
    def changed(self) -> bool:
        return not self.problem and self.outcome.text != self.old_text


def fixable_paths(findings: Iterable[Finding], unsafe: bool) -> list[str]:
    """The files with a finding whose fix applies under `unsafe`, in output order."""
    return sorted({f.path for f in findings if f.fix is not None and f.fix.applies(unsafe)})


def fix_file(display_path: str, config: Config, index: TreeIndex, unsafe: bool, write: bool,
             within: Sequence[Path | str] | None = None) -> FileFix:
    """Fix one file; with `write`, replace it when the fixed text differs and its bytes did not change.

    `within`: the paths the run was given; a file that resolves outside all of them (through a symlink)
    is checked, but not written.
    """
    path = Path(display_path)
    try:
        data, identity = _read_regular(path)
        text = decode_source(data)
    except (OSError, SourceError) as exc:
        reason = getattr(exc, "message", None) or getattr(exc, "strerror", None) or str(exc)
        return FileFix(display_path, FixOutcome("", (), ()), "", f"not fixed: {reason}")
    module_name, is_package = module_name_for(path)
    outcome = fix_source(text, display_path, config, index, unsafe=unsafe, module_name=module_name,
                         is_package=is_package)
    if outcome.refused:
        return FileFix(display_path, outcome, text, outcome.refused)
    if not write or outcome.text == text:
        return FileFix(display_path, outcome, text)
    try:
        encoded = encode_like(data, outcome.text)
    except UnicodeEncodeError as exc:
        reason = f"not fixed: the fix cannot be written in the file's encoding ({exc.reason})"
        return FileFix(display_path, outcome, text, reason)
    from kvlint.atomic import ChangedMeanwhile, write_atomic

    target = os.path.realpath(path)
    refused = _outside(target, within) or _read_only(target)
    if refused:
        return FileFix(display_path, outcome, text, refused)
    try:
        if _read_regular(path) != (data, identity):
            return FileFix(display_path, outcome, text, "not fixed: the file changed on disk while kvlint read it")
        write_atomic(target, encoded, unchanged=identity)
    except ChangedMeanwhile:
        return FileFix(display_path, outcome, text, "not fixed: the file changed on disk while kvlint wrote it")
    except OSError as exc:
        return FileFix(display_path, outcome, text, f"not written: {(exc.strerror or str(exc)).lower()}")
    return FileFix(display_path, outcome, text)


def _read_regular(path: Path) -> tuple[bytes, tuple[int, ...]]:
    """A regular file's bytes and identity, read without blocking on what replaced it (a FIFO, a device)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        from kvlint.atomic import identity

        return b"".join(chunks), identity(status)
    finally:
        os.close(fd)


def _outside(target: str, within: Sequence[Path | str] | None) -> str:
    """Why a file that resolves to `target` is not written: outside every path given ("" when inside one)."""
    if within is None:
        return ""
    for given in within or [os.curdir]:
        root = os.path.realpath(given)
        if target == root or target.startswith(root.rstrip(os.sep) + os.sep):
            return ""
    return f"not fixed: it is a symlink to {target}, outside the paths given"


def _read_only(target: str) -> str:
    """Why `target` is not replaced: the user may not write it ("" when they may). Root may write any file,
    but a file without the write bit (0444) is read-only to root too, as to its owner."""
    try:
        status = os.stat(target)
    except OSError:
        return ""  # written, or said why, by write_atomic
    bits = stat.S_IWUSR if status.st_uid == os.geteuid() else stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
    if not status.st_mode & bits or not os.access(target, os.W_OK):
        return f"not fixed: the file is read-only (mode {stat.S_IMODE(status.st_mode):04o})"
    return ""


def encode_like(original: bytes, text: str) -> bytes:
    """Encode `text` as `original` was: its coding cookie's encoding, its UTF-8 byte order mark."""
    cookie = coding_cookie(original)
    encoding = codecs.lookup(cookie).name if cookie else "utf-8"
    bom = codecs.BOM_UTF8 if original.startswith(codecs.BOM_UTF8) else b""
    return bom + text.encode(encoding)


def unified_diff(display_path: str, old: str, new: str) -> str:
    """A unified diff of one file, `--- a/PATH` / `+++ b/PATH` as git and ruff print it."""
    name = display_path if not os.path.isabs(display_path) else display_path.lstrip("/")
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{name}", f"b/{name}"
    )
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)

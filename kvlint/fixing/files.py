"""`kvlint check --fix` / `--diff` over files: read, fix (`kvlint.fixing.passes`), then diff or write back.

A file is read again here (its bytes, its encoding: a BOM, a coding cookie), fixed as text, encoded
as it was, and written atomically with its mode kept (`kvlint.atomic`); a file whose bytes changed
on disk since they were read is not written.
"""

from __future__ import annotations

import codecs
import difflib
import os
from collections.abc import Iterable
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


def fix_file(display_path: str, config: Config, index: TreeIndex, unsafe: bool, write: bool) -> FileFix:
    """Fix one file; with `write`, replace it when the fixed text differs and its bytes did not change."""
    path = Path(display_path)
    try:
        data = path.read_bytes()
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
    try:
        if path.read_bytes() != data:
            return FileFix(display_path, outcome, text, "not fixed: the file changed on disk while kvlint read it")
        from kvlint.atomic import write_atomic

        write_atomic(path, encoded)
    except OSError as exc:
        return FileFix(display_path, outcome, text, f"not written: {(exc.strerror or str(exc)).lower()}")
    return FileFix(display_path, outcome, text)


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

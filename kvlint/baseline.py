"""Baselines: record today's findings, then report only the new ones.

A finding is keyed by its path (relative to the baseline file's directory),
code, enclosing function and its source line with whitespace collapsed, plus an
occurrence number among findings sharing that key. Line numbers are not part
of the key, so edits elsewhere in a file that move a finding up or down keep
it recorded; editing the offending line itself, or renaming its function,
makes it new again.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvlint import __version__
from kvlint.atomic import write_output
from kvlint.findings import Finding
from kvlint.safe_text import json_document

BASELINE_VERSION = 1


class BaselineError(Exception):
    """The baseline file cannot be read or is not a kvlint baseline; the CLI exits 2."""


@dataclass(frozen=True, order=True)
class BaselineKey:
    """What identifies a finding across edits that move lines."""

    path: str
    code: str
    function: str
    snippet: str
    occurrence: int


def normalise_snippet(source_line: str) -> str:
    """The offending line with indentation and runs of whitespace collapsed."""
    return " ".join(source_line.split())


def baseline_path_of(display_path: str, base_directory: Path) -> str:
    """A finding's path relative to the baseline's directory, with `/` separators."""
    absolute = os.path.abspath(display_path)
    try:
        relative = os.path.relpath(absolute, os.path.abspath(base_directory))
    except ValueError:  # another drive on Windows
        return Path(absolute).as_posix()
    return Path(relative).as_posix()


def keyed(findings: Iterable[Finding], base_directory: Path) -> list[tuple[BaselineKey, Finding]]:
    """Key every finding; duplicates of one key are numbered in source order."""
    counters: Counter[tuple[str, str, str, str]] = Counter()
    result = []
    for finding in sorted(findings):
        stem = (baseline_path_of(finding.path, base_directory), finding.code, finding.function,
                normalise_snippet(finding.source_line))
        counters[stem] += 1
        result.append((BaselineKey(*stem, counters[stem]), finding))
    return result


@dataclass(frozen=True)
class Baseline:
    """The findings a baseline file records."""

    path: Path
    keys: frozenset[BaselineKey]

    @classmethod
    def load(cls, path: Path) -> Baseline:
        """Read a baseline file written by `write_baseline`."""
        try:
            text = _read_regular_file(Path(path)).decode("utf-8")
        except OSError as exc:
            raise BaselineError(f"{path}: cannot read baseline: {(exc.strerror or str(exc)).lower()}") from None
        except UnicodeDecodeError:
            raise BaselineError(f"{path}: not a kvlint baseline (not UTF-8 text)") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(f"{path}: not a kvlint baseline (invalid JSON at line {exc.lineno})") from None
        if not isinstance(data, dict) or data.get("tool") != "kvlint" or not isinstance(data.get("findings"), list):
            raise BaselineError(f"{path}: not a kvlint baseline (write one with --write-baseline)")
        if data.get("version") != BASELINE_VERSION:
            raise BaselineError(
                f"{path}: baseline version {data.get('version')!r} is not supported "
                f"(this kvlint reads version {BASELINE_VERSION}); write it again with --write-baseline"
            )
        keys = set()
        for number, entry in enumerate(data["findings"], start=1):
            try:
                keys.add(BaselineKey(str(entry["path"]), str(entry["code"]), str(entry["function"]),
                                     str(entry["snippet"]), int(entry["occurrence"])))
            except (KeyError, TypeError, ValueError):
                message = f"{path}: finding {number} of the baseline lacks a field or has a wrong type"
                raise BaselineError(message) from None
        return cls(Path(path), frozenset(keys))

    def new_findings(self, findings: Sequence[Finding]) -> tuple[list[Finding], int]:
        """Return the findings this baseline does not record, and how many it does."""
        new = []
        known = 0
        for key, finding in keyed(findings, self.path.parent):
            if key in self.keys:
                known += 1
            else:
                new.append(finding)
        return sorted(new), known


def _read_regular_file(path: Path) -> bytes:
    """The bytes of `path`, which must be a regular file: a FIFO or a device would block or never end."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Not a regular file")
        with os.fdopen(os.dup(fd), "rb") as stream:
            return stream.read()
    finally:
        os.close(fd)


def baseline_text(findings: Iterable[Finding], base_directory: Path) -> str:
    """The baseline file's content: sorted, without dates, so it diffs cleanly under version control."""
    entries = [
        {"path": key.path, "code": key.code, "function": key.function, "snippet": key.snippet,
         "occurrence": key.occurrence, "line": finding.line, "message": finding.message}
        for key, finding in sorted(keyed(findings, base_directory), key=lambda pair: pair[0])
    ]
    by_code: defaultdict[str, int] = defaultdict(int)
    for entry in entries:
        by_code[str(entry["code"])] += 1
    document = {
        "tool": "kvlint",
        "version": BASELINE_VERSION,
        "comment": "Findings recorded by `kvlint --write-baseline`; `--baseline` reports only findings not "
                   "listed here. `line` and `message` are for reading: matching uses path, code, function, "
                   "snippet and occurrence.",
        "written_by": f"kvlint {__version__}",
        "counts": dict(sorted(by_code.items())),
        "findings": entries,
    }
    return json_document(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


def write_baseline(path: Path, findings: Sequence[Finding]) -> int:
    """Record `findings` in `path` (a regular file atomically, or through to a device or stream); return how
    many were written."""
    write_output(path, baseline_text(findings, Path(path).parent))
    return len(findings)

"""Baselines: record today's findings, then report only the new ones.

A finding is keyed by its path (relative to the baseline file's directory),
code, the invariant it speaks for (`kv`, `ec`: one construction can be KVC003
for both), enclosing function, its source line and the nearest line of code above
and below it (the window), each with whitespace collapsed, plus an occurrence
number among findings sharing all of that. Blank lines and comment-only lines
are not part of the window.

What moves a key (the finding is then reported as new): editing the offending
line, editing or inserting a line of code right above or below it, renaming
its function, moving the file. What does not: edits elsewhere that shift line
numbers, re-indenting, blank lines and comments. So a recorded finding that is
fixed does not hide the same text added elsewhere (its neighbours differ), and
an identical line added above a recorded one is the one reported.
Version 1 baselines (no window) are still read, matched without the window, and
version 2 baselines (no invariant) matched without the invariant.
"""

from __future__ import annotations

import errno
import json
import os
import reprlib
import stat
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvlint import __version__
from kvlint.atomic import write_output
from kvlint.findings import Finding
from kvlint.report.safe_text import json_document

BASELINE_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)


class BaselineError(Exception):
    """The baseline file cannot be read or is not a kvlint baseline; the CLI exits 2."""


@dataclass(frozen=True, order=True)
class BaselineKey:
    """What identifies a finding across edits that move lines."""

    path: str
    code: str
    invariant: str  # "" for a file diagnostic, and in a key read from (or matched with) a version 1 or 2 baseline
    function: str
    snippet: str
    context: tuple[str, str]  # the nearest line of code above and below, normalised ("" for none)
    occurrence: int


def normalise_snippet(source_line: str) -> str:
    """The offending line with indentation and runs of whitespace collapsed."""
    return " ".join(source_line.split())


class _Sources:
    """The lines of each file findings are in, read once, split as Python's tokenizer splits them."""

    def __init__(self) -> None:
        self._lines: dict[str, list[str] | None] = {}

    def context(self, finding: Finding) -> tuple[str, str]:
        """The normalised nearest code lines above and below the finding's line."""
        if finding.path not in self._lines:
            self._lines[finding.path] = _read_lines(finding.path)
        lines = self._lines[finding.path]
        index = finding.line - 1
        if lines is None or not 0 <= index < len(lines) or \
                normalise_snippet(lines[index]) != normalise_snippet(finding.source_line):
            return "", ""  # the file is gone or changed since the analysis: the line alone
        indent = _indent(lines[index])
        return _nearest_code(lines, index, -1, indent), _nearest_code(lines, index, 1, indent)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _read_lines(path: str) -> list[str] | None:
    from kvlint.source import decode_source, split_lines

    try:
        return split_lines(decode_source(_read_regular_file(Path(path))))
    except Exception:  # noqa: BLE001 - unreadable or undecodable: no window
        return None


_HEADERS = ("def ", "async def ", "class ", "@")


def _nearest_code(lines: list[str], index: int, step: int, indent: int) -> str:
    """The nearest line of code in direction `step`; below, "" at the start of the next definition (a
    function appended after this one does not move the key)."""
    index += step
    while 0 <= index < len(lines):
        text = normalise_snippet(lines[index])
        if text and not text.startswith("#"):
            if step > 0 and _indent(lines[index]) <= indent and text.startswith(_HEADERS):
                return ""
            return text
        index += step
    return ""


def baseline_path_of(display_path: str, base_directory: Path) -> str:
    """A finding's path relative to the baseline's directory, with `/` separators."""
    absolute = os.path.abspath(display_path)
    try:
        relative = os.path.relpath(absolute, os.path.abspath(base_directory))
    except ValueError:  # another drive on Windows
        return Path(absolute).as_posix()
    return Path(relative).as_posix()


def keyed(findings: Iterable[Finding], base_directory: Path, version: int = BASELINE_VERSION
          ) -> list[tuple[BaselineKey, Finding]]:
    """Key every finding as a baseline of `version` keys it (version 1: no window; 1 and 2: no invariant);
    duplicates of one key are numbered in source order."""
    counters: Counter[tuple[str, str, str, str, str, tuple[str, str]]] = Counter()
    sources = _Sources()
    result = []
    for finding in sorted(findings):
        context = sources.context(finding) if version >= 2 else ("", "")
        stem = (baseline_path_of(finding.path, base_directory), finding.code,
                finding.invariant if version >= 3 else "", finding.function,
                normalise_snippet(finding.source_line), context)
        counters[stem] += 1
        result.append((BaselineKey(*stem, counters[stem]), finding))
    return result


@dataclass(frozen=True)
class Baseline:
    """The findings a baseline file records."""

    path: Path
    keys: frozenset[BaselineKey]
    version: int = BASELINE_VERSION

    @classmethod
    def load(cls, path: Path) -> Baseline:
        """Read a baseline file written by `write_baseline`."""
        try:
            text = _read_regular_file(Path(path)).decode("utf-8-sig")  # a BOM an editor added is fine
        except OSError as exc:
            raise BaselineError(f"{path}: cannot read baseline: {(exc.strerror or str(exc)).lower()}") from None
        except UnicodeDecodeError:
            raise BaselineError(f"{path}: not a kvlint baseline (not UTF-8 text)") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(f"{path}: not a kvlint baseline (invalid JSON at line {exc.lineno})") from None
        except ValueError:  # an integer of more digits than int() takes
            raise BaselineError(f"{path}: not a kvlint baseline (a number too long to read)") from None
        except RecursionError:
            raise BaselineError(f"{path}: not a kvlint baseline (nested too deeply to read)") from None
        if not isinstance(data, dict) or data.get("tool") != "kvlint" or not isinstance(data.get("findings"), list):
            raise BaselineError(f"{path}: not a kvlint baseline (write one with --write-baseline)")
        version = data.get("version")
        if version not in READABLE_VERSIONS:
            raise BaselineError(
                f"{path}: baseline version {reprlib.repr(version)} is not supported "
                f"(this kvlint reads versions 1 to {BASELINE_VERSION}); write it again with --write-baseline"
            )
        keys = set()
        for number, entry in enumerate(data["findings"], start=1):
            try:
                above, below = entry["context"] if version >= 2 else ("", "")
                invariant = entry["invariant"] if version >= 3 else ""
                keys.add(BaselineKey(str(entry["path"]), str(entry["code"]), str(invariant or ""),
                                     str(entry["function"]), str(entry["snippet"]), (str(above), str(below)),
                                     int(entry["occurrence"])))
            except (KeyError, TypeError, ValueError, RecursionError):
                message = f"{path}: finding {number} of the baseline lacks a field or has a wrong type"
                raise BaselineError(message) from None
        return cls(Path(path), frozenset(keys), version)

    def new_findings(self, findings: Sequence[Finding]) -> tuple[list[Finding], int]:
        """Return the findings this baseline does not record, and how many it does."""
        new = []
        known = 0
        for key, finding in keyed(findings, self.path.parent, self.version):
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
        {"path": key.path, "code": key.code, "invariant": key.invariant or None, "function": key.function,
         "snippet": key.snippet, "context": list(key.context), "occurrence": key.occurrence,
         "line": finding.line, "message": finding.message}
        for key, finding in sorted(keyed(findings, base_directory), key=lambda pair: pair[0])
    ]
    by_code: defaultdict[str, int] = defaultdict(int)
    for entry in entries:
        by_code[str(entry["code"])] += 1
    document = {
        "tool": "kvlint",
        "version": BASELINE_VERSION,
        "comment": "Findings recorded by `kvlint --write-baseline`; `--baseline` reports only findings not "
                   "listed here. `line` and `message` are for reading: matching uses path, code, "
                   "invariant, function, snippet, context (the nearest code lines above and below) and occurrence.",
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

"""Output formats for findings: one function per format, each returning the whole text.

Columns are 0-based inside kvlint (as flake8 keeps them) and 1-based
in every format here, like flake8's and ruff's output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from kvlint.findings import Finding
from kvlint.report.safe_text import json_document, printable


def as_text(findings: Sequence[Finding], unsafe: bool = False) -> str:
    """`path:line:col: CODE message`, the flake8/ruff shape (no summary: the plain lines); `[*]` before the
    message of a finding `--fix` repairs (ruff's mark; with `unsafe`, `--fix --unsafe-fixes`)."""
    return "".join(
        f"{printable(f.path)}:{f.line}:{f.column + 1}: {f.code} {fix_mark(f, unsafe)}{printable(f.message)}\n"
        for f in findings
    )


def fix_mark(finding: Finding, unsafe: bool = False) -> str:
    """`[*] ` when a fix of the finding applies in this run, else nothing."""
    return "[*] " if finding.fix is not None and finding.fix.applies(unsafe) else ""


def fix_hints(findings: Sequence[Finding], unsafe: bool = False, after_fix: bool = False) -> str:
    """ruff's closing line: how many findings `--fix` repairs, and how many more `--unsafe-fixes` would."""
    fixable = sum(1 for f in findings if f.fix is not None and f.fix.applies(unsafe))
    hidden = sum(1 for f in findings if f.fix is not None and not f.fix.applies(unsafe))
    more = f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option"
    if fixable:
        option = "`--fix --unsafe-fixes` options" if unsafe else "`--fix` option"
        return f"[*] {fixable} fixable with the {option}{f' ({more})' if hidden else ''}.\n"
    if hidden and after_fix:  # a plain check says nothing of unsafe fixes alone: that would be every KVC001 report
        return f"No fixes available ({more}).\n"
    return ""


# ANSI styles of the text report, as ruff colours its own: path bold, code red and bold
_BOLD, _DIM, _RED, _CYAN, _GREEN, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[1;31m", "\x1b[36m", "\x1b[32m", "\x1b[0m"


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color and text else text


def summary_line(findings: Sequence[Finding], color: bool = False, fixed: int | None = None) -> str:
    """`Found N findings in M files.`, or `All checks passed.`: the last line of the text report. After
    `--fix` (`fixed` given): `Found N findings (F fixed, R remaining).`"""
    if fixed:
        total = fixed + len(findings)
        return f"Found {total} finding{'s' if total != 1 else ''} ({fixed} fixed, {len(findings)} remaining).\n"
    if not findings:
        return _paint("All checks passed.", _GREEN, color) + "\n"
    files = len({f.path for f in findings})
    count = len(findings)
    return (f"Found {count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}.\n")


def _source_snippet(finding: Finding, color: bool) -> str:
    """The finding's line under it, the columns it spans marked with `^` (ruff's `--show-source`)."""
    line = printable(finding.source_line.rstrip("\r\n"))
    if not line.strip():
        return ""
    number = str(finding.line)
    gutter = " " * len(number)
    start = min(finding.column, len(line))
    end = finding.end_column if finding.end_line == finding.line else len(line.rstrip())
    end = max(start + 1, min(end, len(line.rstrip()) or start + 1))
    lead = "".join(character if character == "\t" else " " for character in finding.source_line[:start])
    marks = _paint("^" * (end - start), _RED, color)
    bar = _paint("|", _CYAN, color)
    snippet = f"{gutter} {bar}\n{_paint(number, _CYAN, color)} {bar} {line}\n{gutter} {bar} {lead}{marks}\n"
    if finding.fix is not None:
        snippet += f"{gutter} = fix ({finding.fix.applicability.value}): {printable(finding.fix.title)}\n"
    elif finding.no_fix:
        snippet += f"{gutter} = no fix: {printable(finding.no_fix)}\n"
    return snippet


def as_text_report(findings: Sequence[Finding], *, color: bool = False, show_source: bool = False,
                   summary: bool = True, unsafe: bool = False, fixed: int | None = None) -> str:
    """The text report of `kvlint check`: one line per finding, then the summary line (and, as ruff does,
    how many `--fix` would repair); `fixed`: how many `--fix` repaired."""
    parts = []
    for f in findings:
        location = _paint(printable(f.path), _BOLD, color) + _paint(f":{f.line}:{f.column + 1}:", _DIM, color)
        mark = _paint(fix_mark(f, unsafe).strip(), _CYAN, color) + " " if fix_mark(f, unsafe) else ""
        parts.append(f"{location} {_paint(f.code, _RED, color)} {mark}{printable(f.message)}\n")
        if show_source:
            parts.append(_source_snippet(f, color))
    if summary:
        parts.append(fix_hints(findings, unsafe, fixed is not None))  # the summary line stays the report's last
        parts.append(summary_line(findings, color, fixed))
    return "".join(parts)


def statistics(findings: Sequence[Finding]) -> list[tuple[str, str, int]]:
    """(code, rule name, count) per code, the most frequent first (`--statistics`)."""
    from kvlint.rules import RULES

    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    rows = [(code, RULES[code].name if code in RULES else "", count) for code, count in counts.items()]
    return sorted(rows, key=lambda row: (-row[2], row[0]))


def statistics_text(findings: Sequence[Finding], *, color: bool = False, summary: bool = True) -> str:
    """`--statistics` as text: `count  code  name` per code, ruff's table, then the summary line."""
    rows = statistics(findings)
    width = max((len(str(count)) for _, _, count in rows), default=1)
    text = "".join(f"{count:>{width}}\t{_paint(code, _RED, color)}\t{name}\n" for code, name, count in rows)
    return text + (summary_line(findings, color) if summary else "")


def statistics_json(findings: Sequence[Finding]) -> str:
    """`--statistics --format json`: one array of `{code, name, count}`."""
    records = [{"code": code, "name": name, "count": count} for code, name, count in statistics(findings)]
    return json.dumps(records, indent=2) + "\n"


def finding_record(finding: Finding) -> dict[str, object]:
    """The JSON object of one finding (1-based columns)."""
    return {
        "path": finding.path,
        "line": finding.line,
        "column": finding.column + 1,
        "end_line": finding.end_line,
        "end_column": finding.end_column + 1,
        "code": finding.code,
        "message": finding.message,
        "function": finding.function,
        "invariant": finding.invariant or None,
        "fix": fix_record(finding),
        "fix_unavailable": finding.no_fix or None,
    }


def fix_record(finding: Finding) -> dict[str, object] | None:
    """ruff's JSON `fix`: its applicability, its title and its edits (1-based columns, end exclusive)."""
    fix = finding.fix
    if fix is None:
        return None
    return {
        "applicability": fix.applicability.value,
        "message": fix.title,
        "edits": [
            {
                "content": edit.content,
                "location": {"row": edit.line, "column": edit.column + 1},
                "end_location": {"row": edit.end_line, "column": edit.end_column + 1},
            }
            for edit in fix.edits
        ],
    }


def as_json(findings: Sequence[Finding]) -> str:
    """One JSON array of finding objects."""
    return json_document(json.dumps([finding_record(f) for f in findings], indent=2, ensure_ascii=False)) + "\n"


def _escape_property(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def as_github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands: one `::error` annotation per finding."""
    lines = []
    for f in findings:
        properties = (
            f"file={_escape_property(printable(f.path))},line={f.line},col={f.column + 1},"
            f"endLine={f.end_line},endColumn={f.end_column + 1},title={_escape_property('kvlint ' + f.code)}"
        )
        lines.append(f"::error {properties}::{_escape_data(f'{f.code} {printable(f.message)}')}\n")
    return "".join(lines)


def as_sarif(findings: Sequence[Finding]) -> str:
    """SARIF 2.1.0 (`kvlint.report.sarif`, imported when asked for: a hook's start-up need not pay for it)."""
    from kvlint.report.sarif import as_sarif as render

    return render(findings)


FORMATS: dict[str, Callable[[Sequence[Finding]], str]] = {
    "text": as_text,
    "json": as_json,
    "github": as_github,
    "sarif": as_sarif,
}

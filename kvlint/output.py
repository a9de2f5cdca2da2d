"""Output formats for findings: one function per format, each returning the whole text.

Columns are 0-based inside kvlint (as libcst and flake8 keep them) and 1-based
in every format here, like flake8's and ruff's output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from kvlint.findings import Finding
from kvlint.report_formats import as_sarif


def as_text(findings: Sequence[Finding]) -> str:
    """`path:line:col: CODE message`, the flake8/ruff shape."""
    return "".join(f"{f.path}:{f.line}:{f.column + 1}: {f.code} {f.message}\n" for f in findings)


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
    }


def as_json(findings: Sequence[Finding]) -> str:
    """One JSON array of finding objects."""
    return json.dumps([finding_record(f) for f in findings], indent=2, ensure_ascii=False) + "\n"


def _escape_property(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def as_github(findings: Sequence[Finding]) -> str:
    """GitHub Actions workflow commands: one `::error` annotation per finding."""
    lines = []
    for f in findings:
        properties = (
            f"file={_escape_property(f.path)},line={f.line},col={f.column + 1},"
            f"endLine={f.end_line},endColumn={f.end_column + 1},title={_escape_property('kvlint ' + f.code)}"
        )
        lines.append(f"::error {properties}::{_escape_data(f'{f.code} {f.message}')}\n")
    return "".join(lines)


FORMATS: dict[str, Callable[[Sequence[Finding]], str]] = {
    "text": as_text,
    "json": as_json,
    "github": as_github,
    "sarif": as_sarif,
}

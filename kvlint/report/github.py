"""The github format of `kvlint check`: GitHub Actions workflow commands, one `::error` annotation per finding."""

from __future__ import annotations

from collections.abc import Sequence

from kvlint.findings import Finding
from kvlint.report.safe_text import printable


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

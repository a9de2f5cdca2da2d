"""The JSON format: `kvlint check`'s array of finding objects (and its `--statistics`), and `kvlint audit`'s
documented inventory (`kvlint.report.audit.AUDIT_JSON_SCHEMA`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kvlint.findings import Finding
from kvlint.report.safe_text import json_document
from kvlint.report.text import statistics

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport


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
        "resolved": resolved_record(finding.resolved),
    }


def resolved_record(resolved: Sequence[str]) -> list[dict[str, str]]:
    """The qualified names that decided a finding or a site, in order: `{role, name}` each (`Site.resolved`)."""
    return [dict(zip(("role", "name"), entry.split(": ", 1))) for entry in resolved]


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


def audit_json(report: AuditReport) -> str:
    """The documented inventory (`kvlint.report.audit.AUDIT_JSON_SCHEMA`)."""
    return json_document(json.dumps(report.to_json(), indent=2, ensure_ascii=False)) + "\n"

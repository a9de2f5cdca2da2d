"""The audit inventory as rows: what the text and markdown reports of `kvlint audit` list, and their counts."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport


@dataclass(frozen=True, order=True)
class _Row:
    """One inventory entry as the text and markdown reports list it."""

    path: str
    line: int
    column: int  # 1-based
    what: str
    function: str
    connector_path: str  # "on: reason" / "off"
    detail: str
    concern: bool  # a fact that breaks the invariant or risks None (shown in the warning colour)
    invariant: str = ""  # whose site it is: a row shows that invariant's findings only


def _path_text(on: bool, reason: str) -> str:
    return f"on: {reason}" if on else "off"


def _rows(report: AuditReport) -> list[_Row]:
    rows = []
    fields = {invariant.name: invariant.field_name for invariant in report.invariants}
    tag = (lambda name: f"[{name}] ") if len(report.invariants) > 1 else (lambda name: "")  # noqa: E731
    for c in report.output_constructions:
        field = fields.get(c.invariant, "connector output")
        if c.carries_connector_output is None:
            detail, concern = "cannot tell (`*args`/`**kwargs`)", False
        elif c.carries_connector_output:
            detail, concern = f"{field}={c.connector_output_argument}", False
        else:
            detail = f"{field}=None" if c.connector_output_argument else f"no {field}"
            concern = c.on_connector_path
        rows.append(_Row(c.position.path, c.position.line, c.position.column, f"{tag(c.invariant)}output construction",
                         c.function, _path_text(c.on_connector_path, c.path_reason), detail, concern, c.invariant))
    for p in report.payload_constructions:
        rows.append(_Row(p.position.path, p.position.line, p.position.column,
                         f"{tag(p.invariant)}payload construction",
                         p.function, _path_text(p.on_connector_path, p.path_reason), p.expression, False, p.invariant))
    for a in report.connector_output_accesses:
        detail = f"guarded by {a.guard}" if a.guarded else "may be None here"
        rows.append(_Row(a.position.path, a.position.line, a.position.column,
                         f"{fields.get(a.invariant, 'connector output')} read",
                         a.function, _path_text(a.on_connector_path, a.path_reason),
                         f"{a.expression}: {detail}", False, a.invariant))
    for w in report.connector_output_writes:
        detail = f"{w.expression} = {w.value}" + (" (may be None)" if w.may_be_none else "")
        rows.append(_Row(w.position.path, w.position.line, w.position.column,
                         f"{fields.get(w.invariant, 'connector output')} write",
                         w.function, _path_text(w.on_connector_path, w.path_reason), detail, False, w.invariant))
    for u in report.sentinel_uses:
        concern = u.use == "mutated" or (u.use == "returned" and u.on_connector_path and not u.allowed_empty)
        detail = u.expression + (" (allowed: the connector output is empty here)" if u.allowed_empty else "")
        rows.append(_Row(u.position.path, u.position.line, u.position.column, f"{tag(u.invariant)}sentinel {u.use}",
                         u.function, _path_text(u.on_connector_path, u.path_reason), detail, concern, u.invariant))
    for d in report.dropped_kv_outputs:
        if d.dropped_by:
            lost = f"`{d.operand}` parked on {d.parked_on}, which no caller reads: {', '.join(d.dropped_by)} drop it"
        elif d.parked_on:  # on an attribute of `self`
            lost = f"`{d.operand}` only stored on {d.parked_on}, which nothing in the project reads back"
        else:
            lost = f"`{d.operand}` not handed on"
        rows.append(_Row(d.position.path, d.position.line, d.position.column,
                         f"{tag(d.invariant)}connector output dropped", d.function,
                         _path_text(d.on_connector_path, ""), f"{d.expression}: {lost}", True, d.invariant))
    for s in report.connector_scopes:
        rows.append(_Row(s.position.path, s.position.line, s.position.column, f"{tag(s.invariant)}connector {s.kind}",
                         s.function, _path_text(True, s.path_reason), s.expression, False, s.invariant))
    return sorted(rows)


def _codes_at(report: AuditReport) -> dict[tuple[str, int, int, str], list[str]]:
    """Finding codes by (path, line, 1-based column, invariant): a row shows the rules its site breaks."""
    codes: defaultdict[tuple[str, int, int, str], list[str]] = defaultdict(list)
    for finding in report.findings:
        codes[(finding.path, finding.line, finding.column + 1, finding.invariant)].append(finding.code)
    return codes


def _deref_counts(report: AuditReport) -> tuple[int, int]:
    guarded = sum(1 for d in report.dereferences if d.guarded)
    return guarded, len(report.dereferences) - guarded


_SITE_LABELS = {
    "output_constructions": "output constructions",
    "payload_constructions": "payload constructions",
    "connector_output_accesses": "connector output reads",
    "connector_output_writes": "connector output writes",
    "dereferences": "dereferences",
    "sentinel_uses": "sentinel uses",
    "dropped_kv_outputs": "connector outputs dropped",
    "connector_scopes": "connector scopes",
}


def _files_line(report: AuditReport) -> str:
    s = report.summary
    line = (f"{s.files_scanned} files scanned: {s.files_analysed} analysed, {s.files_skipped} skipped "
            f"(no configured name), {s.files_not_checked} not checked")
    if s.files_test:
        line += f"; {s.files_test} test file{'s' if s.files_test != 1 else ''} ({_test_policy(report)})"
    return line


def _test_policy(report: AuditReport) -> str:
    """What the test-code policy does in a test file, in words."""
    if not report.test_ignore:
        return "test-ignore is empty: every rule reported"
    return f"{', '.join(report.test_ignore)} not reported there"

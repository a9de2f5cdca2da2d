"""The audit inventory: every relevant site of a run, grouped by kind, plus the findings.

Built only from the engine's `Site` records and the runner's `RunResult`; nothing
here looks at source code. `AuditReport.to_json()` is the documented, versioned
JSON form (`AUDIT_JSON_SCHEMA`); every other audit format renders the same object.

Positions follow the output edges of `kvlint check`: lines and columns 1-based.
Reads of `kv_connector_output` are `connector_output_accesses`; writes such as
`out.kv_connector_output = kvo` (attaching an output) are `connector_output_writes`;
a write onto the shared sentinel itself is also a `mutated` sentinel use.

The inventory covers test code too (`test-files`): every site, file and finding says
whether it lies in a test file, where the test-code policy silences `test-ignore`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from kvlint import __version__
from kvlint.config import Config
from kvlint.findings import Finding
from kvlint.invariants import EMPTY_OUTPUT_POLICIES, Invariant
from kvlint.report.json import finding_record, resolved_record
from kvlint.rules import RULES
from kvlint.running.runner import RunResult
from kvlint.sites import DerefTarget, SentinelUseKind, Site, SiteKind

# the codes an audit counts: KVC100 is `kvlint check --report-unused-noqa`'s alone
AUDIT_CODES = tuple(code for code, rule in RULES.items() if "audit" in rule.faces)

# bump when a field of the JSON changes meaning or disappears (2: entries name their invariant)
AUDIT_FORMAT_VERSION = 2


@dataclass(frozen=True, order=True)
class Position:
    """Where an inventory entry lies: path, then 1-based line and column (end inclusive of nothing)."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    test_file: bool = False  # in a file `test-files` matches

    @classmethod
    def of(cls, path: str, site: Site, test_file: bool = False) -> Position:
        span = site.span
        return cls(path, span.line, span.column + 1, span.end_line, span.end_column + 1, test_file)

    def record(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "column": self.column,
                "end_line": self.end_line, "end_column": self.end_column, "test_file": self.test_file}


@dataclass(frozen=True, order=True)
class OutputConstruction:
    """A `ModelRunnerOutput(...)` call: does it carry a KVConnectorOutput, is it on a connector path?"""

    position: Position
    function: str
    expression: str
    carries_connector_output: bool | None  # None: cannot tell (`**kwargs`, `*args`)
    connector_output_argument: str  # source of `kv_connector_output=`, "" when absent
    on_connector_path: bool
    path_reason: str
    invariant: str = ""  # the invariant the entry belongs to (`kv`, `ec`)
    resolved: tuple[str, ...] = ()  # the qualified names that decided it, "role: name" (`Site.resolved`)


@dataclass(frozen=True, order=True)
class PayloadConstruction:
    """A `KVConnectorOutput(...)` call."""

    position: Position
    function: str
    expression: str
    on_connector_path: bool
    path_reason: str
    invariant: str = ""  # the invariant the entry belongs to (`kv`, `ec`)


@dataclass(frozen=True, order=True)
class ConnectorOutputAccess:
    """A read of `x.kv_connector_output`; `guarded` when the value is proven non-None right there."""

    position: Position
    function: str
    expression: str
    guarded: bool
    guard: str  # how it was proven non-None; "" when not guarded
    on_connector_path: bool
    path_reason: str
    invariant: str = ""  # the invariant the entry belongs to (`kv`, `ec`)


@dataclass(frozen=True, order=True)
class ConnectorOutputWrite:
    """`x.kv_connector_output = value`: attaching an output; `may_be_none` when the value may be None."""

    position: Position
    function: str
    expression: str
    value: str
    may_be_none: bool
    on_connector_path: bool
    path_reason: str
    invariant: str = ""  # the invariant the entry belongs to (`kv`, `ec`)


@dataclass(frozen=True, order=True)
class Dereference:
    """A use that needs a non-None value (attribute, iteration, `len`, ...) of a tracked value."""

    position: Position
    function: str
    expression: str
    operand: str
    target: str  # "connector-output" (KVC001) or "payload-field" (KVC005)
    sink: str
    guarded: bool
    guard: str
    origin: str
    on_connector_path: bool
    invariant: str = ""  # the invariant the entry belongs to (`kv`, `ec`)
    resolved: tuple[str, ...] = ()  # the qualified names that decided it, "role: name" (`Site.resolved`)


@dataclass(frozen=True, order=True)
class SentinelUse:
    """A use of the shared empty sentinel: returned, copied, mutated or aliased."""

    position: Position
    function: str
    expression: str
    use: str
    operand: str
    on_connector_path: bool
    path_reason: str
    invariant: str = ""  # the invariant the entry belongs to (`kv`, `ec`)
    allowed_empty: bool = False  # a return that `empty-output = "allow-when-empty"` accepts (its output is empty)
    resolved: tuple[str, ...] = ()  # the qualified names that decided it, "role: name" (`Site.resolved`)


@dataclass(frozen=True, order=True)
class DroppedKVOutput:
    """A producer's return that loses the KV output it holds (`operand`, read from `origin`): KVC006."""

    position: Position
    function: str
    expression: str
    operand: str
    origin: str
    on_connector_path: bool
    invariant: str = ""  # the invariant the entry belongs to (`kv`, `ec`)
    # parked on a returned holder its callers drop: `holder` (`Class`), and the callers that drop it
    parked_on: str = ""
    dropped_by: tuple[str, ...] = ()
    resolved: tuple[str, ...] = ()  # the qualified names that decided it, "role: name" (`Site.resolved`)


@dataclass(frozen=True, order=True)
class ConnectorScope:
    """Where a connector path starts: a connector context, a guard call, or a marked/listed function."""

    position: Position
    function: str
    kind: str  # "context", "guard" or "function"
    expression: str
    path_reason: str
    invariant: str = ""  # the invariant the entry belongs to (`kv`, `ec`)


@dataclass(frozen=True, order=True)
class AuditedFile:
    """A file the engine looked at beyond the byte scan."""

    path: str
    analysed: bool  # False: it could not be checked (a KVC9xx finding says why)
    test_file: bool = False  # `test-files` matches it: the test-code policy applies


@dataclass(frozen=True)
class AuditSummary:
    """Counts over the whole run; `seconds` is shown by the text report only (the rest is deterministic)."""

    files_scanned: int  # files discovery yielded and the byte scan looked at
    files_analysed: int  # files that went through the flow analysis
    files_not_checked: int  # files with a KVC9xx finding (unreadable, unparsable, internal error)
    files_skipped: int  # files whose bytes mention no configured name
    files_test: int  # of the files listed, those `test-files` matches
    sites: dict[str, int]  # entries per inventory list
    sites_by_invariant: dict[str, dict[str, int]]  # the same, for each invariant
    findings_by_rule: dict[str, int]  # every registered code, 0 included
    findings: int
    baselined: int  # findings left out because a baseline already records them
    seconds: float


@dataclass(frozen=True)
class AuditReport:
    """Everything `kvlint audit` reports, in a deterministic order."""

    paths: tuple[str, ...]
    invariants: tuple[Invariant, ...]
    test_files: tuple[str, ...]
    test_ignore: tuple[str, ...]
    files: tuple[AuditedFile, ...]
    output_constructions: tuple[OutputConstruction, ...]
    payload_constructions: tuple[PayloadConstruction, ...]
    connector_output_accesses: tuple[ConnectorOutputAccess, ...]
    connector_output_writes: tuple[ConnectorOutputWrite, ...]
    dereferences: tuple[Dereference, ...]
    sentinel_uses: tuple[SentinelUse, ...]
    dropped_kv_outputs: tuple[DroppedKVOutput, ...]
    connector_scopes: tuple[ConnectorScope, ...]
    findings: tuple[Finding, ...]
    summary: AuditSummary = field(compare=False)
    test_paths: frozenset[str] = frozenset()  # the display paths of the test files among the run's

    def in_test_file(self, path: str) -> bool:
        return path in self.test_paths

    @property
    def output_classes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for i in self.invariants for name in i.output_classes))

    @property
    def optional_fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for i in self.invariants for name in i.optional_fields))

    def to_json(self) -> dict[str, object]:
        """The JSON object documented by `AUDIT_JSON_SCHEMA` (no time: two runs give the same bytes)."""
        summary = self.summary
        return {
            "version": AUDIT_FORMAT_VERSION,
            "tool": {"name": "kvlint", "version": __version__},
            "paths": list(self.paths),
            "configuration": {
                "invariants": [
                    {"name": i.name, "optional_fields": list(i.optional_fields), "payload_class": i.payload_class,
                     "output_classes": list(i.output_classes), "empty_sentinels": list(i.empty_sentinels),
                     "empty_output": i.empty_output}
                    for i in self.invariants
                ],
                "test_files": list(self.test_files),
                "test_ignore": list(self.test_ignore),
            },
            "summary": {
                "files": {
                    "scanned": summary.files_scanned,
                    "analysed": summary.files_analysed,
                    "not_checked": summary.files_not_checked,
                    "skipped": summary.files_skipped,
                    "test": summary.files_test,
                },
                "sites": dict(summary.sites),
                "sites_by_invariant": {name: dict(counts) for name, counts in summary.sites_by_invariant.items()},
                "findings": {
                    "total": summary.findings,
                    "baselined": summary.baselined,
                    "by_rule": dict(summary.findings_by_rule),
                },
            },
            "files": [{"path": f.path, "analysed": f.analysed, "test_file": f.test_file} for f in self.files],
            "output_constructions": [
                {**c.position.record(), "function": c.function,
                 "invariant": c.invariant, "expression": c.expression,
                 "carries_connector_output": c.carries_connector_output,
                 "connector_output_argument": c.connector_output_argument,
                 "on_connector_path": c.on_connector_path, "path_reason": c.path_reason,
                 "resolved": resolved_record(c.resolved)}
                for c in self.output_constructions
            ],
            "payload_constructions": [
                {**c.position.record(), "function": c.function,
                 "invariant": c.invariant, "expression": c.expression,
                 "on_connector_path": c.on_connector_path, "path_reason": c.path_reason}
                for c in self.payload_constructions
            ],
            "connector_output_accesses": [
                {**a.position.record(), "function": a.function,
                 "invariant": a.invariant, "expression": a.expression,
                 "guarded": a.guarded, "guard": a.guard,
                 "on_connector_path": a.on_connector_path, "path_reason": a.path_reason}
                for a in self.connector_output_accesses
            ],
            "connector_output_writes": [
                {**w.position.record(), "function": w.function,
                 "invariant": w.invariant, "expression": w.expression, "value": w.value,
                 "may_be_none": w.may_be_none, "on_connector_path": w.on_connector_path,
                 "path_reason": w.path_reason}
                for w in self.connector_output_writes
            ],
            "dereferences": [
                {**d.position.record(), "function": d.function,
                 "invariant": d.invariant, "expression": d.expression, "operand": d.operand,
                 "target": d.target, "sink": d.sink, "guarded": d.guarded, "guard": d.guard, "origin": d.origin,
                 "on_connector_path": d.on_connector_path, "resolved": resolved_record(d.resolved)}
                for d in self.dereferences
            ],
            "sentinel_uses": [
                {**u.position.record(), "function": u.function,
                 "invariant": u.invariant, "expression": u.expression, "use": u.use,
                 "operand": u.operand, "on_connector_path": u.on_connector_path, "path_reason": u.path_reason,
                 "allowed_empty": u.allowed_empty, "resolved": resolved_record(u.resolved)}
                for u in self.sentinel_uses
            ],
            "dropped_kv_outputs": [
                {**d.position.record(), "function": d.function,
                 "invariant": d.invariant, "expression": d.expression, "operand": d.operand,
                 "origin": d.origin, "on_connector_path": d.on_connector_path,
                 "parked_on": d.parked_on, "dropped_by": list(d.dropped_by), "resolved": resolved_record(d.resolved)}
                for d in self.dropped_kv_outputs
            ],
            "connector_scopes": [
                {**s.position.record(), "function": s.function,
                 "invariant": s.invariant, "kind": s.kind, "expression": s.expression,
                 "path_reason": s.path_reason}
                for s in self.connector_scopes
            ],
            "findings": [finding_record(f) for f in self.findings],
        }


# Which inventory list each site kind goes to; a test fails when a new SiteKind is not mapped.
INVENTORY_LISTS: dict[SiteKind, str] = {
    SiteKind.OUTPUT_CONSTRUCTION: "output_constructions",
    SiteKind.PAYLOAD_CONSTRUCTION: "payload_constructions",
    SiteKind.OPTIONAL_ACCESS: "connector_output_accesses",
    SiteKind.OPTIONAL_WRITE: "connector_output_writes",
    SiteKind.DEREFERENCE: "dereferences",
    SiteKind.SENTINEL_USE: "sentinel_uses",
    SiteKind.CONNECTOR_CONTEXT: "connector_scopes",
    SiteKind.CONNECTOR_FUNCTION: "connector_scopes",
    SiteKind.CONNECTOR_GUARD: "connector_scopes",
    SiteKind.KV_DROPPED: "dropped_kv_outputs",
}


def build_audit(
    result: RunResult, config: Config, paths: Sequence[str], findings: Iterable[Finding] | None = None,
    baselined: int = 0,
) -> AuditReport:
    """Turn a run's sites into the inventory; `findings` replaces the run's (e.g. after a baseline)."""
    entries: dict[str, list[object]] = {name: [] for name in dict.fromkeys(INVENTORY_LISTS.values())}
    test_paths = frozenset(r.display_path for r in result.reports if config.is_test_file(r.display_path))
    for report in result.reports:
        test_file = report.display_path in test_paths
        for site in report.sites:
            entries[INVENTORY_LISTS[site.kind]].append(_entry(report.display_path, site, test_file))
    shown = tuple(sorted(result.findings if findings is None else findings))
    not_checked = {f.path for f in result.findings if f.code.startswith("KVC9")}
    files = tuple(sorted(
        AuditedFile(r.display_path, r.analysed, r.display_path in test_paths) for r in result.reports
    ))
    by_rule = Counter(f.code for f in shown)
    summary = AuditSummary(
        files_scanned=result.files_found,
        files_analysed=result.files_analysed,
        files_not_checked=len(not_checked),
        files_skipped=max(0, result.files_found - result.files_analysed - len(not_checked)),
        files_test=len(test_paths),
        sites={name: len(items) for name, items in entries.items()},
        sites_by_invariant={
            invariant.name: {
                name: sum(1 for item in items if getattr(item, "invariant") == invariant.name)
                for name, items in entries.items()
            }
            for invariant in config.invariants.invariants
        },
        findings_by_rule={code: by_rule.get(code, 0) for code in AUDIT_CODES},
        findings=len(shown),
        baselined=baselined,
        seconds=result.seconds,
    )
    return AuditReport(
        paths=tuple(paths),
        invariants=config.invariants.invariants,
        test_files=config.test_files,
        test_ignore=config.test_ignore,
        files=files,
        findings=shown,
        summary=summary,
        test_paths=test_paths,
        **{name: tuple(sorted(items)) for name, items in entries.items()},  # type: ignore[arg-type]
    )


def without_time(report: AuditReport) -> AuditReport:
    """The same report with the time zeroed, for comparisons and golden files."""
    return replace(report, summary=replace(report.summary, seconds=0.0))


def _entry(path: str, site: Site, test_file: bool = False) -> object:
    position = Position.of(path, site, test_file)
    kind = site.kind
    if kind is SiteKind.OUTPUT_CONSTRUCTION:
        return OutputConstruction(position, site.function, site.expression, site.carries_connector_output,
                                  site.connector_output_argument, site.on_connector_path, site.path_reason,
                                  site.invariant, site.resolved)
    if kind is SiteKind.PAYLOAD_CONSTRUCTION:
        return PayloadConstruction(position, site.function, site.expression, site.on_connector_path,
                                   site.path_reason, site.invariant)
    if kind is SiteKind.OPTIONAL_ACCESS:
        return ConnectorOutputAccess(position, site.function, site.expression, not site.may_be_none, site.guard,
                                     site.on_connector_path, site.path_reason, site.invariant)
    if kind is SiteKind.OPTIONAL_WRITE:
        return ConnectorOutputWrite(position, site.function, site.expression, site.connector_output_argument,
                                    site.may_be_none, site.on_connector_path, site.path_reason, site.invariant)
    if kind is SiteKind.DEREFERENCE:
        target = (site.deref_target or DerefTarget.CONNECTOR_OUTPUT).value
        return Dereference(position, site.function, site.expression, site.operand, target, site.sink,
                           not site.may_be_none, site.guard, site.origin, site.on_connector_path, site.invariant,
                           site.resolved)
    if kind is SiteKind.SENTINEL_USE:
        use = site.sentinel_use.value if site.sentinel_use is not None else ""
        return SentinelUse(position, site.function, site.expression, use, site.operand, site.on_connector_path,
                           site.path_reason, site.invariant, site.allowed_empty, site.resolved)
    if kind is SiteKind.KV_DROPPED:
        parked = f"{site.parked_on} ({site.parked_class})" if site.parked_on else ""
        return DroppedKVOutput(position, site.function, site.expression, site.operand, site.origin,
                               site.on_connector_path, site.invariant, parked, site.dropped_by, site.resolved)
    scope_kind = {SiteKind.CONNECTOR_FUNCTION: "function", SiteKind.CONNECTOR_GUARD: "guard"}.get(kind, "context")
    return ConnectorScope(position, site.function, scope_kind, site.expression, site.path_reason, site.invariant)


def _object(properties: dict[str, object], required: Sequence[str] | None = None) -> dict[str, object]:
    return {"type": "object", "additionalProperties": False, "properties": properties,
            "required": list(required if required is not None else properties)}


_POSITION = {"path": {"type": "string"}, "line": {"type": "integer", "minimum": 1},
             "column": {"type": "integer", "minimum": 1}, "end_line": {"type": "integer", "minimum": 1},
             "end_column": {"type": "integer", "minimum": 1}}
_STRING, _BOOL, _COUNT = {"type": "string"}, {"type": "boolean"}, {"type": "integer", "minimum": 0}
_STRINGS = {"type": "array", "items": _STRING}
_RESOLVED = {"type": "array", "items": _object({"role": _STRING, "name": _STRING})}
_SITE = {**_POSITION, "test_file": _BOOL, "function": _STRING, "invariant": _STRING, "expression": _STRING}

# The JSON Schema (draft 2020-12) of `kvlint audit --format json`; docs/audit.md explains each field.
AUDIT_JSON_SCHEMA: dict[str, object] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "kvlint audit report",
    **_object({
        "version": {"const": AUDIT_FORMAT_VERSION},
        "tool": _object({"name": {"const": "kvlint"}, "version": _STRING}),
        "paths": _STRINGS,
        "configuration": _object({
            "invariants": {"type": "array", "items": _object({
                "name": _STRING, "optional_fields": _STRINGS, "payload_class": _STRING, "output_classes": _STRINGS,
                "empty_sentinels": _STRINGS, "empty_output": {"enum": list(EMPTY_OUTPUT_POLICIES)}})},
            "test_files": _STRINGS, "test_ignore": _STRINGS}),
        "summary": _object({
            "files": _object({"scanned": _COUNT, "analysed": _COUNT, "not_checked": _COUNT, "skipped": _COUNT,
                              "test": _COUNT}),
            "sites": _object({name: _COUNT for name in dict.fromkeys(INVENTORY_LISTS.values())}),
            "sites_by_invariant": {"type": "object", "additionalProperties": _object(
                {name: _COUNT for name in dict.fromkeys(INVENTORY_LISTS.values())})},
            "findings": _object({"total": _COUNT, "baselined": _COUNT,
                                 "by_rule": _object({code: _COUNT for code in AUDIT_CODES})}),
        }),
        "files": {"type": "array", "items": _object({"path": _STRING, "analysed": _BOOL, "test_file": _BOOL})},
        "output_constructions": {"type": "array", "items": _object({
            **_SITE, "carries_connector_output": {"type": ["boolean", "null"]},
            "connector_output_argument": _STRING, "on_connector_path": _BOOL, "path_reason": _STRING,
            "resolved": _RESOLVED})},
        "payload_constructions": {"type": "array", "items": _object({
            **_SITE, "on_connector_path": _BOOL, "path_reason": _STRING})},
        "connector_output_accesses": {"type": "array", "items": _object({
            **_SITE, "guarded": _BOOL, "guard": _STRING, "on_connector_path": _BOOL, "path_reason": _STRING})},
        "connector_output_writes": {"type": "array", "items": _object({
            **_SITE, "value": _STRING, "may_be_none": _BOOL, "on_connector_path": _BOOL, "path_reason": _STRING})},
        "dereferences": {"type": "array", "items": _object({
            **_SITE, "operand": _STRING, "target": {"enum": [t.value for t in DerefTarget]}, "sink": _STRING,
            "guarded": _BOOL, "guard": _STRING, "origin": _STRING, "on_connector_path": _BOOL,
            "resolved": _RESOLVED})},
        "sentinel_uses": {"type": "array", "items": _object({
            **_SITE, "use": {"enum": [u.value for u in SentinelUseKind]}, "operand": _STRING,
            "on_connector_path": _BOOL, "path_reason": _STRING, "allowed_empty": _BOOL, "resolved": _RESOLVED})},
        "dropped_kv_outputs": {"type": "array", "items": _object({
            **_SITE, "operand": _STRING, "origin": _STRING, "on_connector_path": _BOOL,
            "parked_on": _STRING, "dropped_by": {"type": "array", "items": _STRING}, "resolved": _RESOLVED})},
        "connector_scopes": {"type": "array", "items": _object({
            **_SITE, "kind": {"enum": ["context", "guard", "function"]}, "path_reason": _STRING})},
        # the elements of `kvlint check --format json`, which promises "at least" these keys
        "findings": {"type": "array", "items": {**_object({
            **_POSITION, "code": {"type": "string", "pattern": "^KVC[0-9]{3}$"}, "message": _STRING}),
            "additionalProperties": True}},
    }),
}

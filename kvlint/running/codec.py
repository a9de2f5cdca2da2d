"""The JSON form of findings and per-file reports, checked field by field when read back (the result
cache's entries and run records): a damaged or forged field raises, and the caller counts a miss."""

from __future__ import annotations

import functools
from dataclasses import astuple, fields
from typing import TYPE_CHECKING, Any

from kvlint.findings import Finding
from kvlint.fixing.model import Applicability, Edit, Fix

if TYPE_CHECKING:
    from kvlint.engine import FileReport
    from kvlint.sites import Site


def report_to_json(report: FileReport) -> dict[str, Any]:
    return {
        "path": report.display_path,
        "analysed": report.analysed,
        "sites": [_site_to_json(site) for site in report.sites],
        "findings": [finding_to_json(finding) for finding in report.findings],
    }


def report_from_json(data: dict[str, Any]) -> FileReport:
    """Decode a report, checking every field's type and range: a damaged entry must not reach the output."""
    from kvlint.engine import FileReport

    if type(data["analysed"]) is not bool:
        raise TypeError("analysed")
    return FileReport(
        string(data["path"]),
        sites=tuple(_site_from_json(site) for site in data["sites"]),
        findings=tuple(finding_from_json(finding) for finding in data["findings"]),
        analysed=data["analysed"],
    )


_LARGEST_NUMBER = 2**31  # lines and columns of a file kvlint reads fit easily


def string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not a string: {value!r:.40}")
    return value


def _number(value: object) -> int:
    if type(value) is not int or not 0 <= value < _LARGEST_NUMBER:
        raise ValueError(f"not a line or column number: {value!r:.40}")
    return value


def finding_to_json(finding: Finding) -> list[Any]:
    def encoded(value: object) -> object:
        if isinstance(value, Fix):
            return [value.title, value.applicability.value, [list(astuple(edit)) for edit in value.edits]]
        return value

    return [encoded(getattr(finding, f.name)) for f in fields(Finding)]


def _fix_from_json(value: object) -> Fix | None:
    if value is None:
        return None
    title, applicability, edits = value  # type: ignore[misc]
    return Fix(
        string(title),
        Applicability(applicability),
        tuple(_edit_from_json(edit) for edit in edits),
    )


def _edit_from_json(value: list[Any]) -> Edit:
    if len(value) != 5:
        raise ValueError(f"not an edit: {value!r:.40}")
    return Edit(*map(_number, value[:4]), string(value[4]))


def finding_from_json(row: list[Any]) -> Finding:
    checks = {"str": string, "int": _number, "Fix | None": _fix_from_json,
              "tuple[str, ...]": lambda value: tuple(string(name) for name in value)}
    return Finding(*(checks[f.type](value) for f, value in zip(fields(Finding), row, strict=True)))


def _optional(kind: type) -> Any:
    def check(value: object) -> object:
        return None if value is None else kind(value)
    return check


def _flag(value: object) -> bool:
    if type(value) is not bool:
        raise TypeError(f"not a boolean: {value!r:.40}")
    return value


@functools.cache
def _site_fields() -> dict[str, Any]:
    from kvlint.sites import DerefTarget, SentinelUseKind, Site, SiteKind, Span

    checks: dict[str, Any] = {
        "SiteKind": SiteKind,
        "Span": lambda value: Span(*(_number(number) for number in value)),
        "str": string,
        "bool": _flag,
        "bool | None": lambda value: None if value is None else _flag(value),
        "DerefTarget | None": _optional(DerefTarget),
        "SentinelUseKind | None": _optional(SentinelUseKind),
        "Span | None": lambda value: None if value is None else Span(*(_number(number) for number in value)),
        "tuple[str, ...]": lambda value: tuple(string(name) for name in value),
    }
    return {f.name: checks[f.type] for f in fields(Site)}


def _site_to_json(site: Site) -> dict[str, Any]:
    data = {f.name: getattr(site, f.name) for f in fields(site)}
    data["span"] = [site.span.line, site.span.column, site.span.end_line, site.span.end_column]
    if site.operand_span is not None:
        data["operand_span"] = list(astuple(site.operand_span))
    for name in ("candidates", "proven_candidates"):
        data[name] = list(data[name])
    for name in ("kind", "deref_target", "sentinel_use"):
        data[name] = data[name].value if data[name] is not None else None
    return data


def _site_from_json(data: dict[str, Any]) -> Site:
    from kvlint.sites import Site

    known = _site_fields()
    return Site(**{name: known[name](value) for name, value in data.items()})

"""The output formats of `kvlint check` and `kvlint audit`: each name spelled once, with the function of the module
of that name (`kvlint.report.text`, `.json`, ...) that renders it. A format's module is imported only when the
format is asked for: a hook's start-up need not pay for SARIF or rich."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm hook's cost)
if TYPE_CHECKING:
    from kvlint.findings import Finding
    from kvlint.report.audit import AuditReport


@dataclass(frozen=True)
class Format:
    """An output format: its name (also its module's) and the functions that render `check` and `audit`."""

    name: str
    check: str = ""  # renders `kvlint check`'s findings: (findings) -> text; "" when `check` has no such format
    audit: str = ""  # renders `kvlint audit`'s report: (report) -> text; "" when `audit` has no such format


FORMATS: dict[str, Format] = {
    format.name: format
    for format in (
        Format("text", check="as_text", audit="audit_text"),
        Format("json", check="as_json", audit="audit_json"),
        Format("markdown", audit="audit_markdown"),
        Format("github", check="as_github"),
        Format("sarif", check="as_sarif", audit="audit_sarif"),
        Format("mermaid", audit="audit_mermaid"),
        Format("dot", audit="audit_dot"),
    )
}
CHECK_FORMAT_NAMES = tuple(name for name, format in FORMATS.items() if format.check)
AUDIT_FORMAT_NAMES = tuple(name for name, format in FORMATS.items() if format.audit)
# `--graph-tests` (the audit's picture, `report.graph`): one node per test directory, or one per test function;
# here, not there, so that the command line's start-up does not import the picture
GRAPH_TESTS = ("fold", "expand")


def _renderer(name: str, function: str) -> Callable:  # type: ignore[type-arg]
    return getattr(importlib.import_module(f"kvlint.report.{name}"), function)  # type: ignore[no-any-return]


def check_renderer(name: str) -> Callable[[Sequence[Finding]], str]:
    """The function that renders `kvlint check`'s findings in format `name`."""
    return _renderer(name, FORMATS[name].check)


def audit_renderer(name: str) -> Callable[[AuditReport], str]:
    """The function that renders `kvlint audit`'s report in format `name`."""
    return _renderer(name, FORMATS[name].audit)


def check_renderers() -> dict[str, Callable[[Sequence[Finding]], str]]:
    """Every format of `kvlint check`, by name."""
    return {name: check_renderer(name) for name in CHECK_FORMAT_NAMES}


def audit_renderers() -> dict[str, Callable[[AuditReport], str]]:
    """Every format of `kvlint audit`, by name."""
    return {name: audit_renderer(name) for name in AUDIT_FORMAT_NAMES}

"""The mermaid format of `kvlint audit`: the connector graph as a mermaid flowchart."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.report.graph import _COLOURS, _drawn
from kvlint.report.safe_text import printable

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport


def _mermaid_text(text: str) -> str:
    """Mermaid's entity codes for what would end a label, and no backtick or line break (a markdown
    report holds the graph in a ``` fence)."""
    text = printable(text).replace("&", "#38;").replace("`", "#96;")
    return text.replace('"', "#quot;").replace("<", "#60;").replace(">", "#62;")


def audit_mermaid(report: AuditReport, tests: str = "fold") -> str:
    """A mermaid flowchart: producers -> the field they fill -> consumers, grouped by package and module."""
    drawn = _drawn(report, tests)
    lines = ["flowchart LR"]
    for kind, depth, ident, label, status in drawn.lines:
        indent = "  " * depth
        if kind == "open":
            lines.append(f'{indent}subgraph {ident}["{_mermaid_text(label)}"]')
            if depth == 1:
                lines.append(f"{indent}  direction TB")
        elif kind == "close":
            lines.append(f"{indent}end")
        else:
            lines.append(f'{indent}{ident}["{_mermaid_text(label)}"]:::{status}')
    for ident, label in drawn.hubs.items():
        lines.append(f'  {ident}(["{_mermaid_text(label)}"]):::hubnode')
    for source, target, labels, _ in drawn.edges:
        label = "<br>".join(_mermaid_text(line) for line in labels)
        lines.append(f'  {source} -- "{label}" --> {target}')
    for status, (fill, stroke) in _COLOURS.items():
        lines.append(f"  classDef {status} fill:{fill},stroke:{stroke},color:#000")
    lines.append("  classDef hubnode fill:#fff7d6,stroke:#8a6d00,color:#000,stroke-width:2px")
    for index, (_, _, _, status) in enumerate(drawn.edges):
        if status == "off":
            lines.append(f"  linkStyle {index} stroke:{_COLOURS[status][1]},stroke-dasharray:4 3")
        elif status == "quiet":
            lines.append(f"  linkStyle {index} stroke:{_COLOURS[status][1]},stroke-dasharray:1 3")
        else:
            lines.append(f"  linkStyle {index} stroke:{_COLOURS[status][1]},stroke-width:2px")
    return "\n".join(lines) + "\n"

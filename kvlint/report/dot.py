"""The dot format of `kvlint audit`: the connector graph for graphviz."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.report.graph import _COLOURS, GRAPH_LEGEND, _drawn
from kvlint.report.safe_text import printable

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport


def _dot_text(text: str) -> str:
    return printable(text).replace("\\", "\\\\").replace('"', '\\"')


def audit_dot(report: AuditReport, tests: str = "fold") -> str:
    """The same graph for Graphviz (`dot -Tsvg`, `dot -Tpng`): one cluster per side, package and module."""
    drawn = _drawn(report, tests)
    legend = "\\n".join(_dot_text(line) for line in GRAPH_LEGEND)
    hubs = ", ".join(drawn.hubs.values())
    lines = [
        "digraph kvlint {",
        # compact: boxes one text line high, close together (a whole checkout's ~50 nodes fit one screen)
        '  graph [rankdir=LR, fontname="Helvetica", fontsize=12, nodesep=0.15, ranksep=1.3, labelloc=t, '
        f'label="kvlint audit of {_dot_text(", ".join(report.paths))}: producers and consumers of '
        f'{_dot_text(hubs)}\\n{legend}"];',
        '  node [shape=box, height=0.3, margin="0.1,0.03", style="rounded,filled", fontname="Helvetica", '
        'fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    cluster_styles = {"side": 'style="rounded,dashed"; color="#9e9e9e";',
                      "package": 'style="rounded"; color="#9e9e9e"; fontsize=13;',
                      "module": 'style="rounded,filled"; color="#d6d6d6"; fillcolor="#fafafa"; fontsize=11;',
                      "tests": 'style="rounded,filled"; color="#d6d6d6"; fillcolor="#f6f6f0"; fontsize=11;'}
    for kind, depth, ident, label, status in drawn.lines:
        indent = "  " * depth
        if kind == "open":
            lines.append(f"{indent}subgraph cluster_{ident} {{")
            lines.append(f'{indent}  label="{_dot_text(label)}"; {cluster_styles[status]}')
        elif kind == "close":
            lines.append(f"{indent}}}")
        else:
            fill, stroke = _COLOURS[status]
            lines.append(f'{indent}{ident} [label="{_dot_text(label)}", fillcolor="{fill}", color="{stroke}"];')
    for ident, label in drawn.hubs.items():
        lines.append(f'  {ident} [label="{_dot_text(label)}", shape=ellipse, fillcolor="#fff7d6", '
                     'color="#8a6d00", penwidth=2];')
    for source, target, labels, status in drawn.edges:
        colour = _COLOURS[status][1]
        style = {"off": "dashed", "quiet": "dotted"}.get(status, "solid")
        label = "\\n".join(_dot_text(line) for line in labels)
        lines.append(f'  {source} -> {target} [label="{label}", color="{colour}", '
                     f'fontcolor="{colour}", style={style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"

"""Audit formats: text, json, markdown, sarif (from `kvlint.report.sarif`, which `check` shares too),
mermaid and dot.

Each format renders an `AuditReport` to one string. Nothing here analyses code;
the producer -> field -> consumer graph only groups the inventory by function, and the functions by module
and class. Every format but text holds no time, so two runs over the same tree print the same bytes.
"""

from __future__ import annotations

import io
import json
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvlint.rules import RULES
from kvlint.report.safe_text import json_document, printable, uri_quote
from kvlint.report.sarif import as_sarif_with_summary

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport
    from kvlint.findings import Finding

TEXT_WIDTH = 120  # the text report's width when it is not on a terminal (files, pipes, golden tests)


# ---------------------------------------------------------- SARIF and JSON


def audit_sarif(report: AuditReport) -> str:
    """The audit's findings as SARIF, with the inventory's counts as run properties."""
    return as_sarif_with_summary(report.findings, report.to_json()["summary"])


def audit_json(report: AuditReport) -> str:
    """The documented inventory (`kvlint.report.audit.AUDIT_JSON_SCHEMA`)."""
    return json_document(json.dumps(report.to_json(), indent=2, ensure_ascii=False)) + "\n"


# -------------------------------------------------------- row descriptions


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
        rows.append(_Row(d.position.path, d.position.line, d.position.column,
                         f"{tag(d.invariant)}connector output dropped", d.function,
                         _path_text(d.on_connector_path, ""), f"{d.expression}: `{d.operand}` not handed on", True,
                         d.invariant))
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


# ------------------------------------------------------------------- text


def fix_available(finding: Finding) -> str:
    """`fix available` (safe: `kvlint check --fix` applies it), or `unsafe fix available` (`--unsafe-fixes`)."""
    assert finding.fix is not None
    return "fix available" if finding.fix.applies(False) else "unsafe fix available"


def audit_text(report: AuditReport, color: bool = False, width: int | None = None) -> str:
    """A report for a terminal: sites grouped by file and function, the findings as `check` prints them, a summary."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from kvlint.report.output import as_text as findings_as_text

    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width or TEXT_WIDTH, force_terminal=color, color_system="auto" if color else None,
        no_color=not color, markup=False, highlight=False, emoji=False, _environ={},
    )
    console.print(Text.assemble(("kvlint audit", "bold"), " of ", printable(", ".join(report.paths))), soft_wrap=True)
    console.print(_files_line(report), style="dim", soft_wrap=True)
    codes_at = _codes_at(report)
    grouped: defaultdict[str, defaultdict[str, list[_Row]]] = defaultdict(lambda: defaultdict(list))
    for row in _rows(report):
        grouped[row.path][row.function].append(row)
    for path, functions in grouped.items():
        console.print()
        header = Text(printable(path), style="bold cyan")
        if report.in_test_file(path):
            header.append(f"  [test file: {_test_policy(report)}]", style="dim")
        console.print(header, soft_wrap=True)
        for function, rows in functions.items():
            console.print(Text("  " + (function or "<module>"), style="bold"), soft_wrap=True)
            table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 1), expand=True)
            table.add_column("line", justify="right", no_wrap=True, width=8)
            table.add_column("site", no_wrap=True, width=25)
            table.add_column("path", no_wrap=True, width=3)
            table.add_column("detail", overflow="fold", ratio=1)
            table.add_column("rule", no_wrap=True, width=6)
            for row in rows:
                codes = " ".join(codes_at.get((row.path, row.line, row.column, row.invariant), []))
                style = "red" if codes else ("yellow" if row.concern else "")
                on = row.connector_path.startswith("on")
                detail = Text(printable(row.detail))
                if on and row.connector_path[4:]:
                    detail.append(f"  ({row.connector_path[4:]})", style="dim")
                table.add_row(
                    f"{row.line}:{row.column}", Text(row.what, style=style),
                    Text("on" if on else "off", style="green" if on else "dim"), detail,
                    Text(codes, style="bold red"),
                )
            console.print(table)
    console.print()
    console.print(Text(f"Findings ({len(report.findings)})", style="bold"))
    for finding in report.findings:
        line = findings_as_text([finding]).rstrip("\n")
        location, _, rest = line.partition(f" {finding.code} ")
        available = f"  [{fix_available(finding)}]" if finding.fix is not None else ""
        console.print(Text.assemble(location, " ", (finding.code, "bold red"), " ", rest, (available, "cyan")),
                      soft_wrap=True)
    if not report.findings:
        console.print("none", style="green")
    console.print()
    _print_summary(console, report)
    text = buffer.getvalue()
    if not color:  # rich pads table cells; a file or a pipe gets no trailing blanks
        text = "".join(line.rstrip() + "\n" for line in text.splitlines())
    return text


def _print_summary(console, report: AuditReport) -> None:  # type: ignore[no-untyped-def]
    from rich import box
    from rich.table import Table
    from rich.text import Text

    s = report.summary
    guarded, unguarded = _deref_counts(report)
    sites = Table(box=None, show_header=True, header_style="bold", pad_edge=False, padding=(0, 2, 0, 0))
    sites.add_column("sites")
    sites.add_column("count", justify="right")
    for name, label in _SITE_LABELS.items():
        sites.add_row(label, str(s.sites.get(name, 0)))
        if name == "dereferences":
            sites.add_row(Text("  guarded / unguarded", style="dim"), Text(f"{guarded} / {unguarded}", style="dim"))
    rules = Table(box=None, show_header=True, header_style="bold", pad_edge=False, padding=(0, 2, 0, 0))
    rules.add_column("rule")
    rules.add_column("name")
    rules.add_column("findings", justify="right")
    for code, count in s.findings_by_rule.items():
        rules.add_row(code, RULES[code].name, Text(str(count), style="bold red" if count else "dim"))
    outer = Table(box=box.ROUNDED, show_header=False, title="Summary", title_justify="left", title_style="bold",
                  expand=False)
    outer.add_column()
    outer.add_column()
    outer.add_row(sites, rules)
    console.print(outer)
    total = Text.assemble((f"{s.findings} finding{'s' if s.findings != 1 else ''}",
                           "bold red" if s.findings else "bold green"))
    if s.baselined:
        total.append(f" (and {s.baselined} recorded in the baseline)")
    total.append(f" · {_files_line(report)} · {s.seconds:.2f} s")
    console.print(total, soft_wrap=True)


# --------------------------------------------------------------- markdown


def _md(text: str) -> str:
    """A table cell: no line breaks or control characters, pipes escaped."""
    return " ".join(printable(text).split()).replace("|", "\\|")


def _md_code(text: str) -> str:
    """A code span that `text` cannot close: its fence is longer than any run of backticks in it."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{fence}{pad}{_md(text)}{pad}{fence}"


GITHUB_COMMENT_LIMIT = 65_536  # characters GitHub accepts in an issue or pull-request comment


def github_base_url(environment: Mapping[str, str]) -> str | None:
    """The blob URL of the checked-out commit in GitHub Actions (GITHUB_SERVER_URL/REPOSITORY/SHA), else None."""
    server, repository, sha = (environment.get(name, "") for name in
                               ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_SHA"))
    if not (server and repository and sha):
        return None
    return f"{server.rstrip('/')}/{repository}/blob/{sha}/"


def _md_location(path: str, line: int, column: int, base_url: str | None) -> str:
    """`path:line:col`, a link to the line when a base URL is known and the path is relative."""
    text = _md_code(f"{path}:{line}:{column}")
    if not base_url or path.startswith("/") or path.startswith("<") or ":" in path.split("/")[0]:
        return text
    quoted = uri_quote(path)
    return f"[{text}]({base_url.rstrip('/')}/{quoted}#L{line})"


def audit_markdown(report: AuditReport, base_url: str | None = None, limit: int = GITHUB_COMMENT_LIMIT) -> str:
    """A report for a pull-request comment or an issue: summary, findings, inventory in folds, the graph.

    It fits in `limit` characters (a GitHub comment): the summary always comes
    first and whole; findings, then the inventory's folds, then the graph are
    added while they fit, and a note under the summary says what was cut.
    Locations link to their line under `base_url` (e.g. a GitHub blob URL).
    """
    s = report.summary
    head = [f"## kvlint audit of {', '.join(_md_code(p) for p in report.paths)}", ""]
    verdict = f"**{s.findings} finding{'s' if s.findings != 1 else ''}**"
    if s.baselined:
        verdict += f" (and {s.baselined} recorded in the baseline)"
    head += [f"{verdict}. {_files_line(report)}.", ""]
    head += ["| rule | name | findings |", "| --- | --- | ---: |"]
    head += [f"| {code} | {RULES[code].name} | {count} |" for code, count in s.findings_by_rule.items()]
    guarded, unguarded = _deref_counts(report)
    head += ["", "| sites | count |", "| --- | ---: |"]
    for name, label in _SITE_LABELS.items():
        extra = f" ({guarded} guarded, {unguarded} unguarded)" if name == "dereferences" else ""
        head.append(f"| {label} | {s.sites.get(name, 0)}{extra} |")

    # each block: (title, lines always shown with it, rows that may be cut, lines after the rows)
    blocks: list[tuple[str, list[str], list[str], list[str]]] = []
    if report.findings:
        blocks.append(("findings", ["", "### Findings", "", "| location | code | function | message |",
                                    "| --- | --- | --- | --- |"],
                       [f"| {_md_location(f.path, f.line, f.column + 1, base_url)} | {f.code} "
                        f"| {_md_code(f.function) if f.function else ''} | {_md(f.message)}"
                        f"{' (' + fix_available(f) + ')' if f.fix is not None else ''} |"
                        for f in report.findings], []))
    else:
        blocks.append(("findings", ["", "### Findings", "", "None."], [], []))
    codes_at = _codes_at(report)
    sections: dict[str, list[_Row]] = defaultdict(list)
    for row in _rows(report):
        sections[_section_of(row.what)].append(row)
    blocks.append(("the inventory", ["", "### Inventory", ""], [], []))
    for title in ("Output constructions", "Payload constructions", "Connector output reads", "Sentinel uses",
                  "Connector scopes"):
        rows = sections.get(title, [])
        opening = [f"<details><summary>{title} ({len(rows)})</summary>", ""]
        if not rows:
            blocks.append((title, [*opening, "None."], [], ["", "</details>", ""]))
            continue
        opening += ["| location | site | function | connector path | detail | rule |",
                    "| --- | --- | --- | --- | --- | --- |"]
        lines = [
            f"| {_md_location(row.path, row.line, row.column, base_url)} | {row.what} | {_md_code(row.function)} "
            f"| {_md(row.connector_path)} | {_md(row.detail)} | "
            f"{', '.join(codes_at.get((row.path, row.line, row.column, row.invariant), []))} |"
            for row in rows
        ]
        blocks.append((title, opening, lines, ["", "</details>", ""]))
    graph = ["### Producers and consumers of each connector output", "", "```mermaid",
             audit_mermaid(report).rstrip("\n"), "```"]

    whole = [*head, *(line for _, opening, rows, closing in blocks for line in (*opening, *rows, *closing)), *graph]
    text = "\n".join(whole) + "\n"
    if len(text) <= limit:
        return text
    return _cut_markdown(head, blocks, graph, limit)


def _cut_markdown(head: list[str], blocks: list[tuple[str, list[str], list[str], list[str]]], graph: list[str],
                  limit: int) -> str:
    """The markdown report cut to `limit` characters.

    The summary stays whole; then, while they fit, the findings, the graph and the
    inventory's folds in that order of priority; the report keeps its usual order.
    """
    reserve = 1_000  # for the note that says what was cut
    used = len("\n".join(head)) + 1 + reserve
    cut: list[str] = []
    shown_blocks: dict[int, list[str]] = {}

    def fit(number: int) -> None:
        nonlocal used
        title, opening, rows, closing = blocks[number]
        fixed = sum(len(line) + 1 for line in (*opening, *closing)) + (80 if rows else 0)  # 80: a "... more" row
        if used + fixed > limit:
            if rows:  # an empty fold left out loses nothing: the summary's count says 0
                cut.append(f"{title}: all {len(rows)}")
            return
        used += fixed
        shown = []
        for row in rows:
            if used + len(row) + 1 > limit:
                break
            shown.append(row)
            used += len(row) + 1
        lines = [*opening, *shown]
        if len(shown) < len(rows):
            missing = len(rows) - len(shown)
            lines.append(f"| … {missing} more not shown |" + " |" * (opening[-1].count("|") - 2))
            cut.append(f"{title}: {missing} of {len(rows)} rows")
        shown_blocks[number] = [*lines, *closing]

    fit(0)  # the findings
    graph_size = len("\n".join(graph)) + 1
    keep_graph = used + graph_size <= limit
    if keep_graph:
        used += graph_size
    for number in range(1, len(blocks)):
        fit(number)
    if not keep_graph:
        cut.append("the producer/consumer graph")
    body = [line for number in sorted(shown_blocks) for line in shown_blocks[number]]
    note = ["", f"> **This report was cut to fit a GitHub comment ({GITHUB_COMMENT_LIMIT:,} characters).** "
            f"Not shown: {'; '.join(cut)}. Run `kvlint audit --format markdown --output FILE` for all of it, "
            "`--format mermaid` for the graph alone, or `--format json` for the data."]
    return "\n".join([*head, *note, *body, *(graph if keep_graph else [])]) + "\n"


def _section_of(what: str) -> str:
    what = re.sub(r"^\[\w+\] ", "", what)  # the invariant's tag, when there are several
    if what.startswith("output"):
        return "Output constructions"
    if what.startswith("payload"):
        return "Payload constructions"
    if what.endswith(" read"):
        return "Connector output reads"
    if what.startswith("sentinel"):
        return "Sentinel uses"
    return "Connector scopes"


# ------------------------------------------------------------------ graph


@dataclass
class _GraphNode:
    """A function, as a producer or as a consumer of outputs."""

    path: str
    function: str
    edges: dict[tuple[str, str], int] = field(default_factory=dict)  # (hub key, edge label) -> count
    status: str = "off"  # "bad", "ok" or "off"


# Producer edges (label, status) and consumer edges, worst first so that a node takes its worst status.
_PRODUCER_EDGES = {
    "returns the sentinel on a connector path": "bad",
    "mutates the shared sentinel": "bad",
    "built without it on a connector path": "bad",
    "drops the connector output it holds": "bad",
    "built with it": "ok",
    "attaches a connector output": "ok",
    "copy of the sentinel": "copy",
    "returns the sentinel, its output empty": "copy",
    "built without it, off path": "off",
    "returns the sentinel, off path": "off",
    "unknown (**kwargs)": "off",
    "attaches a maybe-None value": "off",
}
_CONSUMER_EDGES = {
    "unguarded dereference": "bad",
    "guarded dereference": "ok",
    "read, passed on or checked": "off",
}
_RANK = {"bad": 0, "ok": 1, "copy": 2, "off": 3}


@dataclass
class ConnectorGraph:
    """Producing and consuming functions of outputs, meeting at the field they pass through (the hub).

    The static facts say what each function does with the field, not which output reaches which reader
    (kvlint has no inter-procedural flow), so a producer feeds a consumer exactly when both touch the same
    hub: every output a producer builds may reach every reader of that field. Nodes are drawn grouped by
    module, then class. Each invariant's field is a hub of its own (`ModelRunnerOutput.kv_connector_output`,
    `ModelRunnerOutput.ec_connector_output`); a function that touches both has edges to both.
    """

    hubs: dict[str, str]  # hub key -> label
    producers: list[_GraphNode]
    consumers: list[_GraphNode]

    def common_prefix(self) -> str:
        """The directory shared by every node's file, left out of the labels."""
        paths = [node.path for node in (*self.producers, *self.consumers)]
        if not paths:
            return ""
        prefix = posixpath.commonpath(paths) if len(paths) > 1 else posixpath.dirname(paths[0])
        if prefix in paths:  # a single file: keep its name
            prefix = posixpath.dirname(prefix)
        return prefix + "/" if prefix else ""


def class_of(function: str) -> str:
    """The class a qualified name lies in, by PEP 8's naming (`Worker.execute_model` -> `Worker`), else ""."""
    first = function.split(".", 1)[0]
    return first if first[:1].isupper() else ""


def grouped(nodes: list[_GraphNode]) -> list[tuple[str, list[tuple[str, list[_GraphNode]]]]]:
    """Nodes by module (file), then by class ("" for module-level functions first), in a stable order."""
    modules: dict[str, dict[str, list[_GraphNode]]] = {}
    for node in sorted(nodes, key=lambda node: (node.path, class_of(node.function), node.function)):
        modules.setdefault(node.path, {}).setdefault(class_of(node.function), []).append(node)
    return [(path, list(classes.items())) for path, classes in modules.items()]


def _short_name(node: _GraphNode) -> str:
    """The node's name inside its class's group (`execute_model`), or the class body's."""
    cls = class_of(node.function)
    if not cls:
        return node.function
    return node.function[len(cls) + 1:] if node.function != cls else "(class body)"


def _drawn_invariants(report: AuditReport) -> list[str]:
    """The invariants the graph draws a hub for: those with a site of their own in the tree (a read or write
    of their field, a payload construction, a dereference, a guard or context). Output constructions and
    returns of a sentinel that invariants share are no reason alone: vLLM 0.10 has no encoder-cache field."""
    own = {
        entry.invariant
        for entries in (report.connector_output_accesses, report.connector_output_writes,
                        report.payload_constructions, report.dereferences, report.connector_scopes)
        for entry in entries
    }
    return [invariant.name for invariant in report.invariants if invariant.name in own]


def connector_graph(report: AuditReport) -> ConnectorGraph:
    """Group the inventory by function into producer and consumer nodes, each edge through its invariant's hub."""
    drawn = _drawn_invariants(report)
    producers: dict[tuple[str, str], _GraphNode] = {}
    consumers: dict[tuple[str, str], _GraphNode] = {}

    def add(nodes: dict[tuple[str, str], _GraphNode], hub: str, path: str, function: str, label: str) -> None:
        if hub not in drawn:
            return
        node = nodes.setdefault((path, function), _GraphNode(path, function))
        node.edges[(hub, label)] = node.edges.get((hub, label), 0) + 1

    for c in report.output_constructions:
        if c.carries_connector_output is None:
            label = "unknown (**kwargs)"
        elif c.carries_connector_output:
            label = "built with it"
        elif c.on_connector_path:
            label = "built without it on a connector path"
        else:
            label = "built without it, off path"
        add(producers, c.invariant, c.position.path, c.function, label)
    for u in report.sentinel_uses:
        if u.use == "returned" and u.allowed_empty:
            label = "returns the sentinel, its output empty"
        elif u.use == "returned":
            label = ("returns the sentinel on a connector path" if u.on_connector_path
                     else "returns the sentinel, off path")
        elif u.use == "copied":
            label = "copy of the sentinel"
        elif u.use == "mutated":
            label = "mutates the shared sentinel"
        else:
            continue  # an alias is followed to its return or mutation
        add(producers, u.invariant, u.position.path, u.function, label)
    for d in report.dropped_kv_outputs:
        add(producers, d.invariant, d.position.path, d.function, "drops the connector output it holds")
    for w in report.connector_output_writes:
        label = "attaches a maybe-None value" if w.may_be_none else "attaches a connector output"
        add(producers, w.invariant, w.position.path, w.function, label)
    readers = {(a.invariant, a.position.path, a.function) for a in report.connector_output_accesses}
    for d in report.dereferences:
        key = (d.invariant, d.position.path, d.function)
        if not d.guarded:
            add(consumers, *key, "unguarded dereference")
        elif key in readers:
            add(consumers, *key, "guarded dereference")
    for hub, path, function in sorted(readers):
        node = consumers.get((path, function))
        if node is None or not any(key[0] == hub for key in node.edges):
            add(consumers, hub, path, function, "read, passed on or checked")
    order = [*_PRODUCER_EDGES, *_CONSUMER_EDGES]
    for nodes, ranks in ((producers, _PRODUCER_EDGES), (consumers, _CONSUMER_EDGES)):
        for node in nodes.values():
            node.status = min((ranks[label] for _, label in node.edges), key=_RANK.__getitem__)
            rank = lambda item: (drawn.index(item[0][0]), order.index(item[0][1]))  # noqa: E731
            node.edges = dict(sorted(node.edges.items(), key=rank))
    by_name = {invariant.name: invariant for invariant in report.invariants}
    hubs = {name: " / ".join(by_name[name].output_classes) + "." + " / ".join(by_name[name].optional_fields)
            for name in drawn}
    position = lambda node: (node.path, node.function)  # noqa: E731
    return ConnectorGraph(hubs, sorted(producers.values(), key=position), sorted(consumers.values(), key=position))


# status -> (fill, stroke): breaks the invariant, keeps it, copies the sentinel (attaches later?), off the path
_COLOURS = {"bad": ("#fde2e1", "#c62828"), "ok": ("#e3f4e1", "#2e7d32"), "copy": ("#e3ecfa", "#1f4e99"),
            "off": ("#f1f1f1", "#8a8a8a")}
GRAPH_LEGEND = (
    "red: breaks the invariant (a kvlint finding) · green: carries its connector output, or dereferences it guarded",
    "blue: copies the empty sentinel (a write may then attach the output) · grey, dashed: off the connector path, "
    "or read without a dereference",
)


def _edge_label(label: str, count: int) -> str:
    return f"{label} ×{count}" if count > 1 else label


def _status_of_edge(label: str) -> str:
    return _PRODUCER_EDGES.get(label) or _CONSUMER_EDGES[label]


def _mermaid_text(text: str) -> str:
    """Mermaid's entity codes for what would end a label, and no backtick or line break (a markdown
    report holds the graph in a ``` fence)."""
    text = printable(text).replace("&", "#38;").replace("`", "#96;")
    return text.replace('"', "#quot;").replace("<", "#60;").replace(">", "#62;")


_SIDES = (("p", "producers: build or return an output"), ("c", "consumers: read a connector output"))


@dataclass(frozen=True)
class _Drawn:
    """What both graph formats draw, in order: clusters opening and closing, nodes, then the edges."""

    lines: list[tuple[str, int, str, str, str]]  # (kind: "open"/"close"/"node", depth, ident, label, status)
    edges: list[tuple[str, str, str, str]]  # (source, target, label, status)
    hubs: dict[str, str]  # ident -> label


def _drawn(report: AuditReport) -> _Drawn:
    """Lay the graph out once: a cluster per side, per module inside it, per class inside that."""
    graph = connector_graph(report)
    prefix = graph.common_prefix()
    hub_ids = {key: f"h{number}" for number, key in enumerate(graph.hubs, start=1)}
    lines: list[tuple[str, int, str, str, str]] = []
    edges: list[tuple[str, str, str, str]] = []
    for (side, title), nodes in zip(_SIDES, (graph.producers, graph.consumers)):
        lines.append(("open", 1, side, title, ""))
        count = 0
        for module_number, (path, classes) in enumerate(grouped(nodes), start=1):
            module = f"{side}_m{module_number}"
            lines.append(("open", 2, module, path[len(prefix):] if path.startswith(prefix) else path, ""))
            for class_number, (cls, members) in enumerate(classes, start=1):
                depth = 3 if cls else 2
                if cls:
                    lines.append(("open", 3, f"{module}_k{class_number}", f"class {cls}", ""))
                for node in members:
                    count += 1
                    ident = f"{side}{count}"
                    lines.append(("node", depth + 1, ident, _short_name(node), node.status))
                    for (hub, label), times in node.edges.items():
                        pair = (ident, hub_ids[hub]) if side == "p" else (hub_ids[hub], ident)
                        edges.append((*pair, _edge_label(label, times), _status_of_edge(label)))
                if cls:
                    lines.append(("close", 3, "", "", ""))
            lines.append(("close", 2, "", "", ""))
        lines.append(("close", 1, "", "", ""))
    return _Drawn(lines, edges, {hub_ids[key]: label for key, label in graph.hubs.items()})


def audit_mermaid(report: AuditReport) -> str:
    """A mermaid flowchart: producers -> the field they fill -> consumers, grouped by module and class."""
    drawn = _drawn(report)
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
    for source, target, label, _ in drawn.edges:
        lines.append(f'  {source} -- "{_mermaid_text(label)}" --> {target}')
    for status, (fill, stroke) in _COLOURS.items():
        lines.append(f"  classDef {status} fill:{fill},stroke:{stroke},color:#000")
    lines.append("  classDef hubnode fill:#fff7d6,stroke:#8a6d00,color:#000,stroke-width:2px")
    for index, (_, _, _, status) in enumerate(drawn.edges):
        if status != "off":
            lines.append(f"  linkStyle {index} stroke:{_COLOURS[status][1]},stroke-width:2px")
        else:
            lines.append(f"  linkStyle {index} stroke:{_COLOURS[status][1]},stroke-dasharray:4 3")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    return printable(text).replace("\\", "\\\\").replace('"', '\\"')


def audit_dot(report: AuditReport) -> str:
    """The same graph for Graphviz (`dot -Tsvg`, `dot -Tpng`): one cluster per side, module and class."""
    drawn = _drawn(report)
    legend = "\\n".join(_dot_text(line) for line in GRAPH_LEGEND)
    hubs = ", ".join(drawn.hubs.values())
    lines = [
        "digraph kvlint {",
        '  graph [rankdir=LR, fontname="Helvetica", fontsize=12, nodesep=0.25, ranksep=1.6, labelloc=t, '
        f'label="kvlint audit of {_dot_text(", ".join(report.paths))}: producers and consumers of '
        f'{_dot_text(hubs)}\\n{legend}"];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    cluster_styles = {1: 'style="rounded,dashed"; color="#9e9e9e";', 2: 'style="rounded"; color="#bdbdbd";',
                      3: 'style="rounded,filled"; color="#e0e0e0"; fillcolor="#fafafa";'}
    for kind, depth, ident, label, status in drawn.lines:
        indent = "  " * depth
        if kind == "open":
            lines.append(f"{indent}subgraph cluster_{ident} {{")
            lines.append(f'{indent}  label="{_dot_text(label)}"; {cluster_styles[depth]}')
        elif kind == "close":
            lines.append(f"{indent}}}")
        else:
            fill, stroke = _COLOURS[status]
            lines.append(f'{indent}{ident} [label="{_dot_text(label)}", fillcolor="{fill}", color="{stroke}"];')
    for ident, label in drawn.hubs.items():
        lines.append(f'  {ident} [label="{_dot_text(label)}", shape=ellipse, fillcolor="#fff7d6", '
                     'color="#8a6d00", penwidth=2];')
    for source, target, label, status in drawn.edges:
        colour = _COLOURS[status][1]
        style = "dashed" if status == "off" else "solid"
        lines.append(f'  {source} -> {target} [label="{_dot_text(label)}", color="{colour}", '
                     f'fontcolor="{colour}", style={style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


AUDIT_FORMATS: dict[str, Callable[[AuditReport], str]] = {
    "text": audit_text,
    "json": audit_json,
    "markdown": audit_markdown,
    "sarif": audit_sarif,
    "mermaid": audit_mermaid,
    "dot": audit_dot,
}


# --------------------------------------------------------------- progress

PROGRESS_MIN_FILES = 20  # fewer files than this finish before a bar is worth drawing


class ProgressBar:
    """A rich progress bar on stderr, drawn only once a run proves to have many files; `None`-safe to call."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.progress = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < PROGRESS_MIN_FILES:
            return
        if self.progress is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                TextColumn("kvlint: analysing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(stderr=True), transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task("files", total=total)
        self.progress.update(self.task, completed=done, total=total)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

"""The markdown format of `kvlint audit`: a report for a pull-request comment, within GitHub's size limit, each
location linked to the checked-out commit."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kvlint.report.mermaid import audit_mermaid
from kvlint.report.rows import _SITE_LABELS, _codes_at, _deref_counts, _files_line, _Row, _rows
from kvlint.report.safe_text import printable, uri_quote
from kvlint.report.text import fix_available
from kvlint.rules import RULES

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport


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


# the inventory's folds, in the report's order: each counts the rows it lists (the summary's site counts)
SECTIONS = ("Output constructions", "Payload constructions", "Connector output reads", "Connector output writes",
            "Sentinel uses", "Connector outputs dropped", "Connector scopes")


def audit_markdown(report: AuditReport, base_url: str | None = None,
                   limit: int | None = GITHUB_COMMENT_LIMIT) -> str:
    """A report for a pull-request comment or an issue: summary, findings, inventory in folds, the graph.

    It fits in `limit` characters (a GitHub comment): the summary always comes
    first and whole; findings, then the inventory's folds, then the graph are
    added while they fit, and a note under the summary says what was cut.
    `limit=None`: the whole report (`--output FILE`). Locations link to their
    line under `base_url` (e.g. a GitHub blob URL).
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
    for title in SECTIONS:
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
    if limit is None or len(text) <= limit:
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
    if what.endswith(" write"):
        return "Connector output writes"
    if what.startswith("sentinel"):
        return "Sentinel uses"
    if what.endswith(" dropped"):
        return "Connector outputs dropped"
    return "Connector scopes"

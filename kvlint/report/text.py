"""The text format, for `kvlint check` (`path:line:col: CODE message`, the flake8/ruff shape, with ruff's
summary line and `--statistics` table) and for `kvlint audit` (sites grouped by file and function, drawn with rich).

Columns are 0-based inside kvlint (as flake8 keeps them) and 1-based in every format, like flake8's and ruff's output.
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable, Sequence

from kvlint.report.safe_text import printable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm hook's cost)
if TYPE_CHECKING:
    from kvlint.findings import Finding
    from kvlint.report.audit import AuditReport
    from kvlint.report.rows import _Row


def as_text(findings: Sequence[Finding], unsafe: bool = False) -> str:
    """`path:line:col: CODE message`, the flake8/ruff shape (no summary: the plain lines); `[*]` before the
    message of a finding `--fix` repairs (ruff's mark; with `unsafe`, `--fix --unsafe-fixes`)."""
    return "".join(
        f"{printable(f.path)}:{f.line}:{f.column + 1}: {f.code} {fix_mark(f, unsafe)}{printable(f.message)}\n"
        for f in findings
    )


def fix_mark(finding: Finding, unsafe: bool = False) -> str:
    """`[*] ` when a fix of the finding applies in this run, else nothing."""
    return "[*] " if finding.fix is not None and finding.fix.applies(unsafe) else ""


def fix_hints(findings: Sequence[Finding], unsafe: bool = False, after_fix: bool = False) -> str:
    """ruff's closing line: how many findings `--fix` repairs, and how many more `--unsafe-fixes` would
    (`after_fix`: kept for callers; ruff says the same after `--fix` as before it, of what remains)."""
    fixable = sum(1 for f in findings if f.fix is not None and f.fix.applies(unsafe))
    hidden = hidden_fixes(findings, unsafe)
    more = f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option"
    if fixable:
        option = "`--fix --unsafe-fixes` options" if unsafe else "`--fix` option"
        return f"[*] {fixable} fixable with the {option}{f' ({more})' if hidden else ''}.\n"
    if hidden:
        return f"No fixes available ({more}).\n"
    return ""


def hidden_fixes(findings: Iterable[Finding], unsafe: bool = False) -> int:
    """How many of the findings have a fix this run does not apply: one `--unsafe-fixes` would."""
    return sum(1 for f in findings if f.fix is not None and not f.fix.applies(unsafe))


def fix_only_summary(fixed: int, hidden: int, applied: bool) -> str:
    """ruff's line after `--diff` (`applied` False) or an applied fix where no finding is shown: what was
    (or would be) fixed, and how many fixes `--unsafe-fixes` would add; empty when there is neither."""
    s = "s" if fixed != 1 else ""
    es = "es" if hidden != 1 else ""
    if hidden and fixed:
        done = f"Fixed {fixed} finding{s}" if applied else f"Would fix {fixed} finding{s}"
        return f"{done} ({hidden} additional fix{es} available with `--unsafe-fixes`).\n"
    if hidden:
        done = "No findings fixed" if applied else "No findings would be fixed"
        return f"{done} ({hidden} fix{es} available with `--unsafe-fixes`).\n"
    if fixed:
        return f"Fixed {fixed} finding{s}.\n" if applied else f"Would fix {fixed} finding{s}.\n"
    return ""


# ANSI styles of the text report, as ruff colours its own: path bold, code red and bold
_BOLD, _DIM, _RED, _CYAN, _GREEN, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[1;31m", "\x1b[36m", "\x1b[32m", "\x1b[0m"


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color and text else text


def summary_line(findings: Sequence[Finding], color: bool = False, fixed: int | None = None) -> str:
    """`Found N findings in M files.`, or `All checks passed.`: the last line of the text report. After
    `--fix` (`fixed` given): `Found N findings (F fixed, R remaining).`"""
    if fixed:
        total = fixed + len(findings)
        return f"Found {total} finding{'s' if total != 1 else ''} ({fixed} fixed, {len(findings)} remaining).\n"
    if not findings:
        return _paint("All checks passed.", _GREEN, color) + "\n"
    files = len({f.path for f in findings})
    count = len(findings)
    return (f"Found {count} finding{'s' if count != 1 else ''} in {files} file{'s' if files != 1 else ''}.\n")


def _source_snippet(finding: Finding, color: bool) -> str:
    """The finding's line under it, the columns it spans marked with `^` (ruff's `--show-source`)."""
    line = printable(finding.source_line.rstrip("\r\n"))
    if not line.strip():
        return ""
    number = str(finding.line)
    gutter = " " * len(number)
    start = min(finding.column, len(line))
    end = finding.end_column if finding.end_line == finding.line else len(line.rstrip())
    end = max(start + 1, min(end, len(line.rstrip()) or start + 1))
    lead = "".join(character if character == "\t" else " " for character in finding.source_line[:start])
    marks = _paint("^" * (end - start), _RED, color)
    bar = _paint("|", _CYAN, color)
    snippet = f"{gutter} {bar}\n{_paint(number, _CYAN, color)} {bar} {line}\n{gutter} {bar} {lead}{marks}\n"
    if finding.fix is not None:
        snippet += f"{gutter} = fix ({finding.fix.applicability.value}): {printable(finding.fix.title)}\n"
    elif finding.no_fix:
        snippet += f"{gutter} = no fix: {printable(finding.no_fix)}\n"
    return snippet


def as_text_report(findings: Sequence[Finding], *, color: bool = False, show_source: bool = False,
                   summary: bool = True, unsafe: bool = False, fixed: int | None = None) -> str:
    """The text report of `kvlint check`: one line per finding, then the summary line (and, as ruff does,
    how many `--fix` would repair); `fixed`: how many `--fix` repaired."""
    parts = []
    for f in findings:
        location = _paint(printable(f.path), _BOLD, color) + _paint(f":{f.line}:{f.column + 1}:", _DIM, color)
        mark = _paint(fix_mark(f, unsafe).strip(), _CYAN, color) + " " if fix_mark(f, unsafe) else ""
        parts.append(f"{location} {_paint(f.code, _RED, color)} {mark}{printable(f.message)}\n")
        if show_source:
            parts.append(_source_snippet(f, color))
    if summary:
        parts.append(fix_hints(findings, unsafe, fixed is not None))  # the summary line stays the report's last
        parts.append(summary_line(findings, color, fixed))
    return "".join(parts)


def statistics(findings: Sequence[Finding]) -> list[tuple[str, str, int]]:
    """(code, rule name, count) per code, the most frequent first (`--statistics`)."""
    from kvlint.rules import RULES

    counts: dict[str, int] = {}
    for f in findings:
        counts[f.code] = counts.get(f.code, 0) + 1
    rows = [(code, RULES[code].name if code in RULES else "", count) for code, count in counts.items()]
    return sorted(rows, key=lambda row: (-row[2], row[0]))


def statistics_text(findings: Sequence[Finding], *, color: bool = False, summary: bool = True) -> str:
    """`--statistics` as text: `count  code  name` per code, ruff's table, then the summary line."""
    rows = statistics(findings)
    width = max((len(str(count)) for _, _, count in rows), default=1)
    text = "".join(f"{count:>{width}}\t{_paint(code, _RED, color)}\t{name}\n" for code, name, count in rows)
    return text + (summary_line(findings, color) if summary else "")


TEXT_WIDTH = 120  # the text report's width when it is not on a terminal (files, pipes, golden tests)


def fix_available(finding: Finding) -> str:
    """`fix available` (safe: `kvlint check --fix` applies it), or `unsafe fix available` (`--unsafe-fixes`)."""
    assert finding.fix is not None
    return "fix available" if finding.fix.applies(False) else "unsafe fix available"


def audit_text(report: AuditReport, color: bool = False, width: int | None = None) -> str:
    """A report for a terminal: sites grouped by file and function, the findings as `check` prints them, a summary."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from kvlint.report.rows import _codes_at, _files_line, _rows, _test_policy  # the audit's alone

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
        line = as_text([finding]).rstrip("\n")
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

    from kvlint.report.rows import _SITE_LABELS, _deref_counts, _files_line
    from kvlint.rules import RULES

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

"""Findings as LSP diagnostics, and the rule documentation a hover shows: the same ranges, codes and
messages as `kvlint check`, with the columns in the client's position encoding."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types

from kvlint.findings import Finding
from kvlint.rules import RULE_DOCS_FILE, RULES, SYNTAX_ERROR
from kvlint.server.positions import UTF16, to_client

SOURCE = "kvlint"


def rule_docs_url(code: str, template: str = "") -> str:
    """Where a diagnostic's code links: `template` with `{code}` and `{name}` filled in (a team's hosted docs),
    else the rule docs shipped in the package (`kvlint/rules/rules.md`)."""
    rule = RULES.get(code)
    name = rule.name if rule is not None else ""
    if template:
        return template.replace("{code}", code).replace("{name}", name)
    anchor = f"#{code.lower()}-{name}" if name else ""
    return (Path(__file__).resolve().parent.parent / "rules" / RULE_DOCS_FILE).as_uri() + anchor


def client_range(lines: Sequence[str], line: int, column: int, end_line: int, end_column: int,
                 encoding: str = UTF16) -> types.Range:
    """A range in kvlint's coordinates (1-based lines, code-point columns) as an LSP range."""
    start = to_client(lines, line, column, encoding)
    end = to_client(lines, end_line, end_column, encoding)
    if end < start:
        end = start
    return types.Range(types.Position(*start), types.Position(*end))


def diagnostic(finding: Finding, lines: Sequence[str], encoding: str = UTF16, docs_template: str = ""
               ) -> types.Diagnostic:
    """One finding as the editor shows it."""
    severity = types.DiagnosticSeverity.Error if finding.code == SYNTAX_ERROR else types.DiagnosticSeverity.Warning
    return types.Diagnostic(
        range=client_range(lines, finding.line, finding.column, finding.end_line, finding.end_column, encoding),
        message=finding.message,
        severity=severity,
        code=finding.code,
        code_description=types.CodeDescription(href=rule_docs_url(finding.code, docs_template)),
        source=SOURCE,
    )


def hover_text(findings: Sequence[Finding], markdown: bool = True) -> str:
    """What a hover over these findings shows: each message, then its rule's documentation (`kvlint explain`)."""
    parts: list[str] = []
    for code in dict.fromkeys(finding.code for finding in findings):
        messages = [finding.message for finding in findings if finding.code == code]
        rule = RULES.get(code)
        if markdown:
            shown = "\n".join(f"**{code}** {_escape(message)}" for message in messages)
            parts.append(shown + ("\n\n---\n\n" + rule.markdown("### ") if rule is not None else "\n"))
        else:
            shown = "\n".join(f"{code} {message}" for message in messages)
            parts.append(shown + ("\n\n" + rule.documentation() if rule is not None else "\n"))
    return ("\n---\n\n" if markdown else "\n").join(parts)


def _escape(message: str) -> str:
    """A message as Markdown text: its backtick spans stay code, nothing else in it is markup."""
    out: list[str] = []
    for index, piece in enumerate(message.split("`")):
        if index % 2:
            out.append(f"`{piece}`")
        else:
            out.append("".join("\\" + char if char in "\\*_[]<>#|~" else char for char in piece))
    return "".join(out)

"""Code actions: one quick fix per finding that has a fix, `source.fixAll.kvlint` (the safe fixes, as
`kvlint check --fix` applies them), and "disable KVC00N for this line" (`# noqa:`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lsprotocol import types

from kvlint.findings import Finding
from kvlint.fixing.model import Applicability, Edit, Fix
from kvlint.server.analysis import DocumentAnalysis
from kvlint.server.diagnostics import client_range, diagnostic
from kvlint.server.positions import UTF16
from kvlint.server.suppression import noqa_edit

FIX_ALL = "source.fixAll.kvlint"
KINDS = (types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL)


def workspace_edit(
    uri: str, version: int | None, lines: Sequence[str], edits: Iterable[Edit],
    encoding: str = UTF16, document_changes: bool = True,
) -> types.WorkspaceEdit:
    """kvlint edits (finding coordinates: 1-based lines, code-point columns, end exclusive) as a workspace edit
    on the document version they were computed for."""
    text_edits = [
        types.TextEdit(client_range(lines, e.line, e.column, e.end_line, e.end_column, encoding), e.content)
        for e in sorted(edits)
    ]
    if document_changes:
        identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(identifier, text_edits)])
    return types.WorkspaceEdit(changes={uri: text_edits})


def fix_title(fix: Fix, finding: Finding) -> str:
    """The quick fix's title: what it does, the code, and `(unsafe)` where `--fix` alone would not apply it."""
    unsafe = " (unsafe)" if fix.applicability is Applicability.UNSAFE else ""
    return f"{fix.title} ({finding.code}){unsafe}"


def quick_fixes(
    analysis: DocumentAnalysis, findings: Sequence[Finding], encoding: str = UTF16, document_changes: bool = True,
    docs_template: str = "",
) -> list[types.CodeAction]:
    """For each finding: its fix, if it has one, then the `# noqa` that silences it on its line."""
    actions: list[types.CodeAction] = []
    silenced: set[tuple[int, str]] = set()
    lines = analysis.lines
    for finding in findings:
        shown = [diagnostic(finding, lines, encoding, docs_template)]
        if finding.fix is not None and finding.fix.edits:
            actions.append(types.CodeAction(
                title=fix_title(finding.fix, finding),
                kind=types.CodeActionKind.QuickFix,
                diagnostics=shown,
                is_preferred=finding.fix.applicability is Applicability.SAFE,
                edit=workspace_edit(analysis.uri, analysis.version, lines, finding.fix.edits, encoding,
                                    document_changes),
            ))
        if (finding.line, finding.code) in silenced:
            continue
        silenced.add((finding.line, finding.code))
        edit = noqa_edit(lines, finding.line, finding.code)
        if edit is not None:
            actions.append(types.CodeAction(
                title=f"Disable {finding.code} for this line",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=shown,
                edit=workspace_edit(analysis.uri, analysis.version, lines, [edit], encoding, document_changes),
            ))
    return actions


def fix_all(analysis: DocumentAnalysis, encoding: str = UTF16, document_changes: bool = True
            ) -> types.CodeAction | None:
    """`source.fixAll.kvlint`: every safe fix, applied and re-checked as `kvlint check --fix` does; None when
    nothing changes."""
    from kvlint.fixing.passes import fix_source

    if analysis.config is None or analysis.index is None:
        return None
    outcome = fix_source(
        analysis.text, analysis.display_path, analysis.config, analysis.index, unsafe=False,
        module_name=analysis.module_name, is_package=analysis.is_package,
    )
    if outcome.text == analysis.text:
        return None
    edit = replacement(analysis.text, outcome.text, analysis.lines)
    return types.CodeAction(
        title="kvlint: fix all safe fixes",
        kind=FIX_ALL,
        edit=workspace_edit(analysis.uri, analysis.version, analysis.lines, [edit], encoding, document_changes),
    )


def replacement(old: str, new: str, lines: Sequence[str]) -> Edit:
    """One edit that turns `old` into `new`: the span between their common prefix and suffix, so the
    editor keeps the cursor and folds outside it."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    first_line, first_column = _position(lines, start)
    last_line, last_column = _position(lines, end_old)
    return Edit(first_line, first_column, last_line, last_column, new[start:end_new])


def _position(lines: Sequence[str], offset: int) -> tuple[int, int]:
    """kvlint's (1-based line, code-point column) of a text offset."""
    for number, line in enumerate(lines, start=1):
        if offset < len(line) or (offset == len(line) and not line.endswith(("\n", "\r"))):
            return number, offset
        offset -= len(line)
    return len(lines) + 1, 0

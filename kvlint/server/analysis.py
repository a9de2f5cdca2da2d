"""One document's analysis: its unsaved text through the engine, as `kvlint check` would see the file."""

from __future__ import annotations

import dataclasses
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.byte_scan import mentions_any
from kvlint.config import Config
from kvlint.engine import FileReport, PreparedFile, analyse_prepared, prepare_source
from kvlint.source import module_name_for, split_lines
from kvlint.findings import Finding
from kvlint.rules import INTERNAL_ERROR
from kvlint.server.incremental import UnitState, full_analysis, reanalyse, unparsable_unit, with_fixes
from kvlint.server.project import IndexedFile, ProjectIndex, caller_names, tree_index
from kvlint.binding.tree_index import TreeIndex


@dataclass(frozen=True)
class DocumentAnalysis:
    """What the server learnt about one version of a document; code actions and hovers read it."""

    uri: str
    version: int | None
    text: str
    findings: tuple[Finding, ...] = ()
    config: Config | None = None  # None: not analysed (not Python, excluded, or the configuration is broken)
    index: TreeIndex | None = None
    module_name: str = ""
    is_package: bool = False
    display_path: str = ""
    traceback: str = ""  # of an internal error, for the client's log
    lines: list[str] = field(default_factory=list)
    # what the next analysis of this document starts from (`kvlint.server.incremental`): this text's, or for
    # a text that does not parse, the last one that did; None: a full one. With a state of its own text,
    # `findings` carry no fixes: `fixed_findings()` builds them when a code action asks.
    state: UnitState | None = field(default=None, compare=False, repr=False)
    incremental: bool = False  # this one re-analysed one changed function only
    _fixed: list[tuple[Finding, ...]] = field(default_factory=list, compare=False, repr=False)

    def fixed_findings(self) -> tuple[Finding, ...]:
        """The findings with their fixes (the same findings: a finding's equality ignores its fix)."""
        if self.state is None or self.state.text != self.text:
            return self.findings
        if not self._fixed:
            try:
                self._fixed.append(with_fixes(self.state))
            except Exception:  # noqa: BLE001 - a fix builder's failure costs the fixes, never the findings
                self._fixed.append(self.findings)
        return self._fixed[0]


def analyse_text(
    uri: str, version: int | None, text: str, path: Path | None, config: Config, project: ProjectIndex | None,
    previous: DocumentAnalysis | None = None, lines: list[str] | None = None,
) -> DocumentAnalysis:
    """Analyse a buffer against its folder's tree index (or, outside any folder or before the index is
    built, the index of the buffer alone, as `kvlint check FILE` has it).

    With the `previous` analysis of the same document, an edit inside one function's body that changes no
    declaration re-analyses that function only (`kvlint.server.incremental`); the findings are those of a
    full analysis. `lines` are the text's (`split_lines`), when the caller has them."""
    display = str(path) if path is not None else uri
    module_name, is_package = module_name_for(path) if path is not None else ("", False)
    lines = lines if lines is not None else split_lines(text)
    done = dict(
        uri=uri, version=version, text=text, config=config, module_name=module_name,
        is_package=is_package, display_path=display, lines=lines,
    )
    if path is None:
        project = None  # a buffer without a file is analysed alone
    if previous is not None and previous.state is not None and previous.display_path == display:
        try:
            again = reanalyse(previous.state, text, lines, config, project)
        except Exception:  # noqa: BLE001 - the full analysis below says what is wrong, if anything
            again = None
        if again is not None:
            report, state = again
            return DocumentAnalysis(findings=report.findings, index=state.facts.index, traceback=report.traceback,
                                    state=state, incremental=True, **done)  # type: ignore[arg-type]
    state = None
    try:
        scanned = mentions_any(text, config.names())
        prepared = prepare_source(text, display, config, module_name, is_package) if scanned else None
        if prepared is not None and prepared.fallback_error is not None and previous is not None \
                and previous.state is not None:
            prepared = _without_fallback(prepared, unparsable_unit(previous.state, lines))
        if prepared is not None and prepared.error is not None:  # what a file that does not parse says
            report = analyse_prepared(prepared, config, TreeIndex(payload_classes=config.payload_classes))
            basis = previous.state if previous is not None else None  # the next text may mend it
            return DocumentAnalysis(findings=report.findings, state=basis, **done)  # type: ignore[arg-type]
        where = path or Path(display)
        own = IndexedFile.scanned_file(prepared, where) if prepared is not None else IndexedFile.skipped(text, where)
        index = project.index_for(own) if project is not None else None
        if index is None:
            index = tree_index([own], config)
        extra_names = tuple(sorted(index.candidate_names()))
        if prepared is None:
            callers = caller_names(index, config)
            if not (callers and mentions_any(text, callers)):
                return DocumentAnalysis(index=index, **done)  # type: ignore[arg-type]
            prepared = prepare_source(text, display, config, module_name, is_package, extra_names)
        kept = full_analysis(prepared, config, index, extra_names, project) if scanned else None
        if kept is not None:
            report, state = kept
        else:
            report = analyse_prepared(prepared, config, index, extra_names)
            if prepared.fallback_error is not None and previous is not None:
                state = previous.state  # `ast` cannot parse it: the next text is compared with the last that did
    except Exception as exc:  # noqa: BLE001 - a kvlint bug in one document must not stop the server
        message = " ".join(f"internal error analysing this file: {type(exc).__name__}: {exc}".split())[:300]
        finding = Finding(display, 1, 0, INTERNAL_ERROR, message + " (the server's log has the traceback)", 1, 0)
        report = FileReport(display, findings=(finding,), traceback=traceback.format_exc())
        index = None
    return DocumentAnalysis(findings=report.findings, index=index, traceback=report.traceback, state=state,
                            **done)  # type: ignore[arg-type]


def _without_fallback(prepared: PreparedFile, unit: tuple[int, int, str] | None) -> PreparedFile:
    """A file `ast` rejected at a line of the one function an edit broke: when libcst cannot parse that
    function either, it cannot parse the file, and the file is the syntax error `ast` saw (the engine would
    ask libcst about the whole file to learn so: a quarter of a second for a 7,000-line one)."""
    error = prepared.fallback_error
    if error is None or unit is None or not unit[0] <= error.line <= unit[1]:
        return prepared
    from kvlint.flow.lowering import lower_newer_syntax

    if lower_newer_syntax(unit[2]) is not None:
        return prepared  # newer syntax there, perhaps: the engine's lowering decides
    return dataclasses.replace(prepared, error=error, fallback_error=None)

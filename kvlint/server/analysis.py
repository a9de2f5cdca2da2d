"""One document's analysis: its unsaved text through the engine, as `kvlint check` would see the file."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.byte_scan import mentions_any
from kvlint.config import Config
from kvlint.engine import FileReport, analyse_prepared, prepare_source
from kvlint.source import module_name_for, split_lines
from kvlint.findings import Finding
from kvlint.rules import INTERNAL_ERROR
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


def analyse_text(
    uri: str, version: int | None, text: str, path: Path | None, config: Config, project: ProjectIndex | None,
) -> DocumentAnalysis:
    """Analyse a buffer against its folder's tree index (or, outside any folder or before the index is
    built, the index of the buffer alone, as `kvlint check FILE` has it)."""
    display = str(path) if path is not None else uri
    module_name, is_package = module_name_for(path) if path is not None else ("", False)
    lines = split_lines(text)
    done = dict(
        uri=uri, version=version, text=text, config=config, module_name=module_name,
        is_package=is_package, display_path=display, lines=lines,
    )
    try:
        scanned = mentions_any(text, config.names())
        prepared = prepare_source(text, display, config, module_name, is_package) if scanned else None
        where = path or Path(display)
        own = IndexedFile.scanned_file(prepared, where) if prepared is not None else IndexedFile.skipped(text, where)
        index = project.index_for(own) if project is not None and path is not None else None
        if index is None:
            index = tree_index([own], config)
        extra_names = tuple(sorted(index.candidate_names()))
        if prepared is None:
            callers = caller_names(index, config)
            if not (callers and mentions_any(text, callers)):
                return DocumentAnalysis(index=index, **done)  # type: ignore[arg-type]
            prepared = prepare_source(text, display, config, module_name, is_package, extra_names)
        report = analyse_prepared(prepared, config, index, extra_names)
    except Exception as exc:  # noqa: BLE001 - a kvlint bug in one document must not stop the server
        message = " ".join(f"internal error analysing this file: {type(exc).__name__}: {exc}".split())[:300]
        finding = Finding(display, 1, 0, INTERNAL_ERROR, message + " (the server's log has the traceback)", 1, 0)
        report = FileReport(display, findings=(finding,), traceback=traceback.format_exc())
        index = None
    return DocumentAnalysis(findings=report.findings, index=index, traceback=report.traceback, **done)  # type: ignore

"""Drive a real `kvlint server` process over stdio with pygls' own LSP client, as an editor does.

The session keeps what the server publishes, per document, and applies the
edits of a code action to its copy of the text the way an editor would
(independently of the server's own position code: UTF-16 offsets here).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from tests.conftest import ROOT

TIMEOUT = 60.0  # seconds; the test machine is shared


def utf16_offset(text: str, line: int, character: int) -> int:
    """The string offset of an LSP position (UTF-16 code units), counted without the server's helpers."""
    lines = text.splitlines(keepends=True)
    if line >= len(lines):
        return len(text)
    offset = sum(len(item) for item in lines[:line])
    units = 0
    for index, char in enumerate(lines[line]):
        if units >= character or char in "\r\n":
            return offset + index
        units += 2 if ord(char) > 0xFFFF else 1
    return offset + len(lines[line])


def apply_text_edits(text: str, edits: Sequence[types.TextEdit]) -> str:
    """Apply LSP text edits (all against the same text), last first."""
    spans = []
    for edit in edits:
        start = utf16_offset(text, edit.range.start.line, edit.range.start.character)
        end = utf16_offset(text, edit.range.end.line, edit.range.end.character)
        spans.append((start, end, edit.new_text))
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


class Session:
    """One server process and one client; use `async with Session(root) as session:`."""

    def __init__(self, root: Path, initialization_options: dict[str, Any] | None = None,
                 position_encodings: Sequence[str] | None = None, command: Sequence[str] | None = None):
        self.root = root
        self.command = list(command or [sys.executable, "-m", "kvlint", "server"])
        self.client = LanguageClient("kvlint-tests", "1")
        self.options = initialization_options
        self.position_encodings = position_encodings
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.logs: list[types.LogMessageParams] = []
        self.shown: list[types.ShowMessageParams] = []
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.arrivals: dict[str, list[float]] = {}  # perf_counter time of each publication, per document
        self.changed = asyncio.Event()
        self.registrations: list[types.RegistrationParams] = []
        self.initialize_result: types.InitializeResult | None = None

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)
            self.arrivals.setdefault(params.uri, []).append(time.perf_counter())
            self.changed.set()

        @self.client.feature(types.WINDOW_LOG_MESSAGE)
        def log(client: LanguageClient, params: types.LogMessageParams) -> None:
            self.logs.append(params)
            self.changed.set()

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def show(client: LanguageClient, params: types.ShowMessageParams) -> None:
            self.shown.append(params)
            self.changed.set()

        @self.client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(client: LanguageClient, params: types.RegistrationParams) -> None:
            self.registrations.append(params)

    async def __aenter__(self) -> Session:
        environment = {**os.environ, "PYTHONPATH": str(ROOT)}
        await self.client.start_io(*self.command, cwd=str(self.root), env=environment)
        general = types.GeneralClientCapabilities(position_encodings=list(self.position_encodings or ["utf-16"]))
        capabilities = types.ClientCapabilities(
            general=general,
            workspace=types.WorkspaceClientCapabilities(
                workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True),
            ),
            text_document=types.TextDocumentClientCapabilities(
                hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
                code_action=types.CodeActionClientCapabilities(
                    code_action_literal_support=types.ClientCodeActionLiteralOptions(
                        code_action_kind=types.ClientCodeActionKindOptions(value_set=list(types.CodeActionKind))
                    )
                ),
            ),
        )
        self.initialize_result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=capabilities,
            process_id=os.getpid(),
            root_uri=self.root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)],
            initialization_options=self.options,
        )), TIMEOUT)
        self.client.initialized(types.InitializedParams())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self.client.stopped:
            return
        server = self.client._server
        if server is not None and server.returncode is None:
            await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
            self.client.exit(None)
            await asyncio.wait_for(server.wait(), TIMEOUT)
        await self.client.stop()

    @property
    def returncode(self) -> int | None:
        server = self.client._server
        return server.returncode if server is not None else None

    # ------------------------------------------------------------ documents

    def open(self, path: Path, text: str | None = None, language_id: str = "python") -> str:
        uri = path.as_uri()
        self.texts[uri] = path.read_text() if text is None else text
        self.versions[uri] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=self.texts[uri])
        ))
        return uri

    def replace(self, uri: str, text: str) -> int:
        """Send the whole new text (one change, as a full-sync editor does); return the new version."""
        self.texts[uri] = text
        self.versions[uri] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        ))
        return self.versions[uri]

    def edit(self, uri: str, edits: Sequence[types.TextEdit]) -> int:
        """Send edits as incremental changes (in order, each against the text the previous one left)."""
        changes = []
        for edit in edits:
            self.texts[uri] = apply_text_edits(self.texts[uri], [edit])
            changes.append(types.TextDocumentContentChangePartial(range=edit.range, text=edit.new_text))
        self.versions[uri] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=changes,
        ))
        return self.versions[uri]

    def save(self, uri: str, path: Path) -> None:
        path.write_text(self.texts[uri])
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)
        ))

    def apply(self, uri: str, edit: types.WorkspaceEdit) -> int:
        """Apply a code action's edit to the document, as the editor does, and send the change."""
        text_edits: list[types.TextEdit] = []
        for change in edit.document_changes or []:
            assert isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
            assert change.text_document.version == self.versions[uri], "an edit for another version"
            text_edits += [e for e in change.edits if isinstance(e, types.TextEdit)]
        for target, edits in (edit.changes or {}).items():
            assert target == uri
            text_edits += edits
        return self.replace(uri, apply_text_edits(self.texts[uri], text_edits))

    # --------------------------------------------------------------- waiting

    async def until(self, condition: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
        """Wait until `condition()` is truthy (re-checked after each message); return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {what}; published: {self.published}; logs: "
                                     f"{[log.message for log in self.logs]}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(remaining, 1.0))
            except asyncio.TimeoutError:
                pass

    async def diagnostics(self, uri: str, version: int | None = None,
                          where: Callable[[Sequence[types.Diagnostic]], bool] | None = None,
                          ) -> Sequence[types.Diagnostic]:
        """The latest diagnostics for `uri` published for `version` (the current one by default) that
        satisfy `where`."""
        version = self.versions.get(uri) if version is None else version

        def latest() -> Sequence[types.Diagnostic] | None:
            for params in reversed(self.published.get(uri, [])):
                if params.version == version:
                    if where is None or where(params.diagnostics):
                        return params.diagnostics or [None]  # type: ignore[list-item]
                    return None
            return None

        found = await self.until(latest, f"diagnostics for {uri} version {version}")
        return [d for d in found if d is not None]

    async def code_actions(self, uri: str, diagnostic: types.Diagnostic,
                           only: Sequence[str] | None = None) -> list[types.CodeAction]:
        result = await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic], only=list(only) if only else None),
        )), TIMEOUT)
        return [action for action in result or [] if isinstance(action, types.CodeAction)]

    async def hover(self, uri: str, line: int, character: int) -> types.Hover | None:
        return await asyncio.wait_for(self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )), TIMEOUT)


def run(coroutine: Any) -> Any:
    """Run a scenario to its end (the tests are plain functions: no asyncio plugin needed)."""
    return asyncio.run(coroutine)

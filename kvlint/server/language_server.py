"""`kvlint server`: the pygls language server. It keeps the open documents, schedules their analyses on
one worker thread and the workspace folders' tree indexes on another, and answers diagnostics, code
actions and hovers from the results; it analyses nothing itself (`kvlint.server.analysis`)."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from kvlint import __version__
from kvlint.config import Config, ConfigError, load_config
from kvlint.findings import Finding
from kvlint.server.analysis import DocumentAnalysis, analyse_text
from kvlint.server.code_actions import FIX_ALL, KINDS, fix_all, quick_fixes
from kvlint.server.diagnostics import diagnostic, hover_text
from kvlint.server.documents import Document, path_of
from kvlint.server.positions import UTF16, from_client
from kvlint.server.project import ProjectIndex

CONFIG_SECONDS = 2.0  # a configuration read is used again this long, unless a configuration file is seen changing
DEBOUNCE_SECONDS = 0.05  # after a change, wait this long for the next keystroke before a full analysis
CONFIG_FILES = ("pyproject.toml", "setup.cfg")
WATCHED = ("**/*.py", "**/*.pyi", "**/pyproject.toml", "**/setup.cfg")
LOG = logging.getLogger("kvlint.server")
# JSON-RPC and LSP error codes
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, SERVER_NOT_INITIALIZED = -32700, -32600, -32602, -32002


class _Answered:
    """A request that could not be read, already answered with an error: nothing more to do with it."""

    jsonrpc = "2.0"


class KvlintProtocol(LanguageServerProtocol):
    """pygls' protocol, with an error reply wherever a client could otherwise wait forever on a request's id:
    before `initialize` (-32002, as LSP asks), after `shutdown` (-32600), and for params that do not fit the
    method (-32602). A body that is not JSON gets -32700 with a null id (`KvlintLanguageServer.report_server_error`).
    """

    initialize_seen = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" in data and "method" in data and isinstance(data.get("id"), (int, str)):
                code = INVALID_PARAMS if exc.code == INVALID_PARAMS else exc.code
                self.reply_error(data["id"], code, f"invalid params for {data['method']}")
                return _Answered()
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Answered):
            return
        method, msg_id = getattr(message, "method", None), getattr(message, "id", None)
        is_request = isinstance(method, str) and isinstance(msg_id, (int, str))
        if method == types.INITIALIZE:
            self.initialize_seen = True
        elif not self.initialize_seen and method != types.EXIT:
            if is_request:
                self.reply_error(msg_id, SERVER_NOT_INITIALIZED, "the server is not initialized yet")
            return  # a notification before `initialize` is dropped, as LSP says
        elif self._shutdown and is_request and method != types.EXIT:
            self.reply_error(msg_id, INVALID_REQUEST, "the server is shut down: only `exit` is accepted")
            return
        super().handle_message(message)

    # The server keeps its own documents (`kvlint.server.documents`); pygls' copy of each, which is never read,
    # cost a loop over every character of the text at each change (2.6 ms a keystroke in a 7,000-line file).

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    def reply_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


class KvlintLanguageServer(LanguageServer):
    """The state of one editor session: open documents, their last analyses, one index per workspace folder."""

    def __init__(self) -> None:
        super().__init__("kvlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=KvlintProtocol)
        self.documents: dict[str, Document] = {}
        self.analyses: dict[str, DocumentAnalysis] = {}
        self.rechecks: dict[str, int] = {}  # per document: how many times `recheck` made its analyses stale
        self.projects: dict[str, ProjectIndex] = {}  # by the folder's absolute path
        self.folders: list[Path] = []
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.docs_template = ""  # initializationOptions.ruleDocsUrl
        self.debounce = DEBOUNCE_SECONDS
        self.reported: set[str] = set()  # configuration errors and tracebacks already shown
        self.analysis_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvlint-server-analysis")
        self.index_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kvlint-server-index")
        self.tasks: set[asyncio.Future[Any]] = set()
        self.configs: dict[str, tuple[float, Config]] = {}  # by where the search starts: when read, what

    # ---------------------------------------------------------------- session

    @property
    def encoding(self) -> str:
        """The position encoding agreed at `initialize` (UTF-16 unless the client offered another)."""
        kind = self.workspace.position_encoding or UTF16
        return str(getattr(kind, "value", kind))

    @property
    def document_changes(self) -> bool:
        """Whether the client takes versioned document edits."""
        workspace = self.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace is not None else None
        return bool(edit is not None and edit.document_changes)

    def log(self, message: str, kind: types.MessageType = types.MessageType.Log) -> None:
        """Write to the client's log (the editor's output panel for this server)."""
        LOG.debug("%s", message)
        try:
            self.window_log_message(types.LogMessageParams(type=kind, message=message))
        except Exception:  # noqa: BLE001 - the connection may be gone; the log must never raise
            LOG.warning("%s", message)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A body that is not JSON gets JSON-RPC's parse error (id null); other errors as pygls reports them."""
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)) and isinstance(self.protocol, KvlintProtocol):
            self.protocol.reply_error(None, PARSE_ERROR, f"the message is not JSON: {error}")
            return
        super().report_server_error(error, source)

    def spawn(self, work: Awaitable[Any], what: str) -> None:
        """Run a coroutine in the background; its failure is logged to the client, never raised."""

        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - one document's failure must not stop the server
                import traceback

                self.log(f"kvlint: internal error while {what}: {type(exc).__name__}: {exc}\n"
                         f"{traceback.format_exc()}", types.MessageType.Error)

        task = asyncio.ensure_future(guarded())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def stop_threads(self) -> None:
        for timer in self.timers.values():
            timer.cancel()
        for project in self.projects.values():
            project.cancel()  # a running build stops at its next file
        self.analysis_thread.shutdown(wait=False, cancel_futures=True)
        self.index_thread.shutdown(wait=False, cancel_futures=True)

    # -------------------------------------------------------------- projects

    def set_folders(self, folders: Iterable[Path]) -> None:
        """Follow the workspace folders: a tree index for each, built in the background."""
        self.configs.clear()
        self.folders = sorted({Path(os.path.abspath(folder)) for folder in folders}, key=lambda p: -len(str(p)))
        wanted = {str(folder) for folder in self.folders}
        for key in [key for key in self.projects if key not in wanted]:
            self.projects.pop(key).cancel()
        self.refresh_projects()

    def folder_of(self, path: Path | None) -> Path | None:
        """The innermost workspace folder holding `path`."""
        if path is None:
            return None
        absolute = os.path.abspath(path)
        for folder in self.folders:  # longest first
            if absolute.startswith(str(folder).rstrip(os.sep) + os.sep):
                return folder
        return None

    def refresh_projects(self) -> None:
        """(Re)build the index of each folder whose configuration is new or changed since its last build."""
        for folder in self.folders:
            try:
                config = self.load_config(folder)
            except ConfigError as exc:
                self.report_config_error(exc)
                continue
            project = self.projects.get(str(folder))
            if project is not None and project.config == config:
                continue
            if project is not None:
                project.cancel()  # built for the old configuration: stale
            project = self.projects[str(folder)] = ProjectIndex(folder, config)
            self.log(f"kvlint: indexing {folder}")
            self.spawn(self.build(project), f"indexing {folder}")

    async def build(self, project: ProjectIndex) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self.index_thread, project.build)
        if self.projects.get(str(project.root)) is not project:
            return  # replaced by a newer configuration meanwhile
        self.log(f"kvlint: indexed {len(project.files)} files under {project.root}")
        self.recheck(self.documents_under(project.root))

    async def update_index(self, paths: list[Path]) -> None:
        """Read saved, created or deleted files into their folders' indexes; re-check the open files of each
        folder whose index changed."""
        loop = asyncio.get_running_loop()
        for folder in {folder for folder in map(self.folder_of, paths) if folder is not None}:
            project = self.projects.get(str(folder))
            if project is None:
                continue
            mine = [path for path in paths if self.folder_of(path) == folder]
            changed = await loop.run_in_executor(self.index_thread, project.update, mine)
            if changed and self.projects.get(str(folder)) is project:
                self.recheck(self.documents_under(folder))

    def documents_under(self, folder: Path) -> list[str]:
        return [uri for uri, document in self.documents.items() if self.folder_of(document.path) == folder]

    def report_config_error(self, error: ConfigError) -> None:
        message = f"kvlint: configuration error: {error}"
        if message not in self.reported:
            self.reported.add(message)
            self.log(message, types.MessageType.Error)
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=message))

    # ------------------------------------------------------------- analyses

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        """Analyse the document after `delay` seconds, unless another change comes first."""
        previous = self.timers.pop(uri, None)
        if previous is not None:
            previous.cancel()
        loop = asyncio.get_running_loop()
        self.timers[uri] = loop.call_later(delay, self._start, uri)

    def delay_for(self, uri: str) -> float:
        """How long to wait after a change before analysing: nothing when the document's last analysis was a
        re-analysis of one function (the next one most likely is too, and costs a few milliseconds), else the
        debounce, so that a keystroke does not start a full analysis the next one would make stale."""
        last = self.analyses.get(uri)
        return 0.0 if last is not None and last.incremental else self.debounce

    def _start(self, uri: str) -> None:
        self.timers.pop(uri, None)
        self.spawn(self.publish(uri), f"analysing {uri}")

    def recheck(self, uris: Iterable[str]) -> None:
        """Analyse these documents again now: the index or the configuration they were analysed with changed."""
        for uri in uris:
            self.analyses.pop(uri, None)
            self.rechecks[uri] = self.rechecks.get(uri, 0) + 1  # an analysis under way now is stale too
            self.schedule(uri)

    async def publish(self, uri: str) -> None:
        analysis = await self.analysis(uri, follow=False)
        document = self.documents.get(uri)
        if analysis is None or document is None or not _current(analysis, document):
            return  # closed, or changed meanwhile: the change scheduled its own analysis
        lines = analysis.lines
        diagnostics = [diagnostic(f, lines, self.encoding, self.docs_template) for f in analysis.findings]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=analysis.version)
        )

    async def analysis(self, uri: str, follow: bool = True) -> DocumentAnalysis | None:
        """The analysis of the document's current text: the last one if still current, else a new one.

        An analysis whose text changed while it waited for the worker thread is skipped (typing faster than
        the analysis runs leaves no backlog); `follow` then analyses the newer text, else gives None. So is one
        that a `recheck` made stale while it ran (the index it read was replaced meanwhile): kept, it would be
        the answer the re-check asks for, and the document would keep the diagnostics of the old index.
        """
        while True:
            rechecks = self.rechecks.get(uri, 0)
            document = self.documents.get(uri)
            if document is None or not document.is_python:
                return None
            cached = self.analyses.get(uri)
            path = document.path
            config = self.config_for(document)
            if cached is not None and _current(cached, document) and cached.config == config:
                return cached
            if config is None or (path is not None and config.is_excluded(path)):
                return DocumentAnalysis(uri, document.version, document.text)
            folder = self.folder_of(path)
            project = self.projects.get(str(folder)) if folder is not None else None
            if project is not None and project.config != config:
                project = None  # a file with a configuration of its own: its folder's index does not apply
            version, text, lines = document.version, document.text, document.lines()
            previous = cached if cached is not None and cached.config == config else None

            def work() -> DocumentAnalysis | None:
                latest = self.documents.get(uri)
                if latest is None or latest.version != version or latest.text is not text:
                    return None  # changed while waiting: a newer analysis is due
                return analyse_text(uri, version, text, path, config, project, previous, lines)

            analysis = await asyncio.get_running_loop().run_in_executor(self.analysis_thread, work)
            if analysis is None or self.rechecks.get(uri, 0) != rechecks:
                if follow:
                    continue
                return None
            if analysis.traceback and analysis.traceback not in self.reported:
                self.reported.add(analysis.traceback)
                self.log(f"kvlint: internal error analysing {uri}:\n{analysis.traceback}", types.MessageType.Error)
            current = self.documents.get(uri)
            if current is not None and _current(analysis, current):
                self.analyses[uri] = analysis
            return analysis

    def load_config(self, start: Path) -> Config:
        """`load_config([start])`, read again after `CONFIG_SECONDS` or once a configuration file changed (a
        keystroke would otherwise walk up the tree for `pyproject.toml` and `setup.cfg` each time)."""
        key = os.path.abspath(start)
        now = time.monotonic()
        found = self.configs.get(key)
        if found is not None and now - found[0] < CONFIG_SECONDS:
            return found[1]
        config = load_config([start])
        self.configs[key] = (now, config)
        return config

    def config_for(self, document: Document) -> Config | None:
        """The configuration `kvlint check` would use for the file (None, said once, when it is broken)."""
        start = document.path or self.folder_of(document.path) or (self.folders[-1] if self.folders else Path.cwd())
        try:
            config = self.load_config(start)
        except ConfigError as exc:
            self.report_config_error(exc)
            return None
        self.refresh_projects()
        return config


def _current(analysis: DocumentAnalysis, document: Document) -> bool:
    return analysis.version == document.version and analysis.text == document.text


def build_server() -> KvlintLanguageServer:
    """The server with its handlers registered."""
    server = KvlintLanguageServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: KvlintLanguageServer, params: types.InitializeParams) -> None:
        options = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        ls.docs_template = str(options.get("ruleDocsUrl") or "")
        if isinstance(options.get("debounceMs"), (int, float)):
            ls.debounce = max(0.0, float(options["debounceMs"]) / 1000)

    @server.feature(types.INITIALIZED)
    def initialized(ls: KvlintLanguageServer, params: types.InitializedParams) -> None:
        folders = [path_of(folder.uri) for folder in ls.workspace.folders.values()]
        if not folders and ls.workspace.root_uri:
            folders = [path_of(ls.workspace.root_uri)]
        ls.set_folders(folder for folder in folders if folder is not None)
        watched = ls.client_capabilities.workspace
        if watched is not None and watched.did_change_watched_files is not None \
                and watched.did_change_watched_files.dynamic_registration:
            registration = types.Registration(
                id="kvlint-watched-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern=glob) for glob in WATCHED]
                ),
            )
            ls.spawn(ls.client_register_capability_async(types.RegistrationParams([registration])),
                     "registering file watchers")

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: KvlintLanguageServer, params: None) -> None:
        ls.stop_threads()

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: KvlintLanguageServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        folders = [path_of(folder.uri) for folder in ls.workspace.folders.values()]
        ls.set_folders(folder for folder in folders if folder is not None)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: KvlintLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        document = Document(item.uri, item.text, item.version, item.language_id or "")
        if not document.is_python:
            return
        ls.documents[item.uri] = document
        ls.schedule(item.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: KvlintLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        document = ls.documents.get(params.text_document.uri)
        if document is None:
            return
        for change in params.content_changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                r = change.range
                bounds = (r.start.line, r.start.character, r.end.line, r.end.character)
                document.apply_change(change.text, bounds, ls.encoding)
            else:
                document.apply_change(change.text, None)
        document.version = params.text_document.version
        ls.schedule(document.uri, ls.delay_for(document.uri))

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: KvlintLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        path = path_of(uri)
        if path is not None and path.name in CONFIG_FILES:
            ls.configs.clear()
            ls.recheck(list(ls.documents))
            return
        document = ls.documents.get(uri)
        if document is None:
            return
        if params.text is not None and params.text != document.text:
            document.text = params.text
        ls.schedule(uri)
        if path is not None:
            ls.spawn(ls.update_index([path]), f"indexing {path}")

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: KvlintLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        timer = ls.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()
        ls.analyses.pop(uri, None)
        if ls.documents.pop(uri, None) is not None:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def files_changed(ls: KvlintLanguageServer, params: types.DidChangeWatchedFilesParams) -> None:
        paths = [path for path in (path_of(change.uri) for change in params.changes) if path is not None]
        if any(path.name in CONFIG_FILES for path in paths):
            ls.configs.clear()
            ls.refresh_projects()
            ls.recheck(list(ls.documents))
        sources = [path for path in paths if path.suffix in (".py", ".pyi")]
        if sources:
            ls.spawn(ls.update_index(sources), "indexing changed files")

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=list(KINDS)))
    async def code_action(ls: KvlintLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        analysis = await ls.analysis(params.text_document.uri)
        if analysis is None or analysis.config is None:
            return None
        only = params.context.only or []
        actions: list[types.CodeAction] = []
        if not only or _wants(only, types.CodeActionKind.QuickFix):
            r = params.range
            start = from_client(analysis.lines, r.start.line, r.start.character, ls.encoding)
            end = from_client(analysis.lines, r.end.line, r.end.character, ls.encoding)
            fixed = await asyncio.get_running_loop().run_in_executor(ls.analysis_thread, analysis.fixed_findings)
            touched = [f for f in fixed if _overlaps(f, start, end)]
            actions += quick_fixes(analysis, touched, ls.encoding, ls.document_changes, ls.docs_template)
        if not only or _wants(only, FIX_ALL):
            action = await asyncio.get_running_loop().run_in_executor(
                ls.analysis_thread, fix_all, analysis, ls.encoding, ls.document_changes
            )
            if action is not None:
                actions.append(action)
        return actions or None

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: KvlintLanguageServer, params: types.HoverParams) -> types.Hover | None:
        analysis = await ls.analysis(params.text_document.uri)
        if analysis is None or not analysis.findings:
            return None
        point = from_client(analysis.lines, params.position.line, params.position.character, ls.encoding)
        under = [f for f in analysis.findings if _covers(f, point, analysis.lines)]
        if not under:
            return None
        formats = _hover_formats(ls.client_capabilities)
        markdown = not formats or types.MarkupKind.Markdown in formats
        kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
        first = under[0]
        return types.Hover(
            contents=types.MarkupContent(kind=kind, value=hover_text(under, markdown)),
            range=diagnostic(first, analysis.lines, ls.encoding).range,
        )

    return server


def _wants(only: list[Any], kind: str) -> bool:
    """Whether a `context.only` filter admits actions of `kind` (a kind admits its sub-kinds)."""
    kind = str(getattr(kind, "value", kind))
    for wanted in only:
        wanted = str(getattr(wanted, "value", wanted))  # an enum's str() is its name, not its value
        if kind == wanted or kind.startswith(f"{wanted}."):
            return True
    return False


def _overlaps(finding: Finding, start: tuple[int, int], end: tuple[int, int]) -> bool:
    return (finding.line, finding.column) <= end and start <= (finding.end_line, finding.end_column)


def _covers(finding: Finding, point: tuple[int, int], lines: list[str]) -> bool:
    """Whether a hover at `point` is over the finding; a zero-width one (KVC9xx) covers its line."""
    end = (finding.end_line, finding.end_column)
    if end == (finding.line, finding.column):
        return point[0] == finding.line
    return (finding.line, finding.column) <= point <= end


def _hover_formats(capabilities: types.ClientCapabilities) -> list[Any]:
    document = capabilities.text_document
    hover = document.hover if document is not None else None
    return list(hover.content_format or []) if hover is not None else []


def serve(run: Callable[[KvlintLanguageServer], None] | None = None) -> int:
    """Serve on stdin/stdout; 0 after `shutdown` then `exit`, 1 when the client went away without them.

    Serving the real stdio (`run` None), the process ends as soon as it is told: at `exit`, at the end of
    stdin, at SIGTERM (143) or SIGINT (130), without waiting for the thread that reads stdin nor for an index
    build (`os._exit` once stdout is flushed; the server writes no file, so nothing is left half done).
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="kvlint server: %(message)s")
    if run is None:
        for signum, (status, word) in {signal.SIGTERM: (143, "terminated"), signal.SIGINT: (130, "interrupted")
                                       }.items():
            signal.signal(signum, functools.partial(_leave_on_signal, status, word))
    server = build_server()
    status = 1
    try:
        (run or (lambda s: s.start_io()))(server)
        status = 0 if getattr(server.protocol, "_shutdown", False) else 1
    except Exception as exc:  # noqa: BLE001 - real stdio: one line, then leave at once
        if run is not None:
            raise
        sys.stderr.write(f"kvlint: internal error in the server: {type(exc).__name__}: {exc}\n")
        status = 2
    finally:
        server.stop_threads()
        if run is None:
            _leave(status)
    return status


def _leave_on_signal(status: int, word: str, signum: int, frame: object) -> None:
    os.write(2, f"kvlint: {word}\n".encode())
    os._exit(status)  # not sys.exit: the interpreter would wait for the thread blocked reading stdin


def _leave(status: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the client may be gone
            pass
    os._exit(status)

"""The mypy face's analysis side, free of mypy: run the engine on a module file and keep
what the plugin's hooks look up, in mypy's process or in one helper process.

The helper (`serve_analyses`) imports only kvlint, so its start-up
costs no mypy import; the plugin feeds it each file as mypy parses it.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

import kvlint
from kvlint.byte_scan import mentions_any
from kvlint.config import Config, ConfigError, DirectoryConfigs

if TYPE_CHECKING:  # the rules, sites and findings are imported where a module is analysed: a run that mypy's
    # cache serves entirely never needs them
    from kvlint.binding.declarations import Declaration
    from kvlint.engine import PreparedFile
    from kvlint.findings import Finding
    from kvlint.running.cache import ResultCache
    from kvlint.sites import DerefTarget, Site


@functools.cache
def _mypy_codes() -> tuple[tuple[str, ...], dict[str, DerefTarget]]:
    """`REPORTED_CODES` and `DEREFERENCE_CODES`, from the rules' own declarations."""
    from kvlint.rules import RULES

    # Reported from any hook of the module: what no type shows, the producer side of the invariant (KVC002,
    # KVC003, KVC006), mutating the shared sentinel (KVC004), a marker that marks nothing (KVC101), files
    # kvlint could not check.
    reported = tuple(code for code, rule in RULES.items() if "mypy" in rule.faces and rule.mypy_dereference is None)
    # Reported once mypy has typed the dereferenced value, unless that type includes None (mypy then reports it).
    dereference = {code: rule.mypy_dereference for code, rule in RULES.items()
                   if "mypy" in rule.faces and rule.mypy_dereference is not None}
    return reported, dereference


def __getattr__(name: str) -> object:
    """`REPORTED_CODES` and `DEREFERENCE_CODES`, computed when first asked (PEP 562)."""
    if name == "REPORTED_CODES":
        return _mypy_codes()[0]
    if name == "DEREFERENCE_CODES":
        return _mypy_codes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TIMEOUT_ENV = "KVLINT_MYPY_TIMEOUT"  # seconds the helper may take over one file (default 60)
DEFAULT_TIMEOUT = 60.0
FALSE_SPELLINGS = ("", "0", "false", "no", "off", "n", "f")
FileKey = tuple[int, int]  # (st_mtime_ns, st_size): a file whose key changed is analysed again


@dataclass(frozen=True)
class Dereference:
    """A KVC001/KVC005 finding, with where its dereferenced value lies in mypy's coordinates.

    mypy's positions are those of Python's `ast` (columns in UTF-8 bytes), which the worker reads here.
    """

    finding: Finding
    operands: tuple[tuple[int, int, int, int], ...]  # (line, column, end line, end column) of the value
    loop_lines: tuple[int, int] | None = None  # first and last line of the outermost loop around it


@dataclass(frozen=True)
class ModuleAnalysis:
    """What the engine says about one module file, keyed by mypy's (line, column) of a node."""

    key: FileKey = (0, 0)
    narrowed: frozenset[tuple[int, int]] = frozenset()  # optional-field reads on a connector path
    # a construction is a site of each invariant whose output class it is
    constructions: dict[tuple[int, int], tuple[Site, ...]] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    dereferences: tuple[Dereference, ...] = ()


def scan_module(path: str, config: Config | ConfigError) -> ModuleAnalysis | None:
    """The analysis of a module file that needs no engine, else None: one whose bytes mention no configured
    name (most of a tree: the engine's byte scan would find nothing in it), one that can no longer be read,
    or one under a bad configuration. Cheap enough for mypy's process, where it spares the helper the file."""
    return _scanned(path, config)[0]


def file_key(path: str) -> FileKey | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def analyse_module(path: str, config: Config | ConfigError) -> ModuleAnalysis:
    """Run kvlint's engine on one module file and keep what the hooks look up."""
    scanned, key, data = _scanned(path, config)
    if scanned is not None:
        return scanned
    assert isinstance(config, Config) and key is not None
    from kvlint.engine import analyse_prepared  # the engine only where it runs
    from kvlint.binding.module_resolution import imported_declarations_for
    from kvlint.binding.tree_index import file_index
    from kvlint.sites import SiteKind
    from kvlint.source import module_name_for

    # `engine.analyse_source(..., imports_from=path)`, but each module is parsed once in this process (the memo's
    # key is its bytes): not once per importing file, nor again when it is analysed itself (`ImportedDeclarations`)
    module_name, is_package = module_name_for(Path(path))
    imported = _imported(config)
    prepared = imported.prepare(data, path, module_name, is_package)
    declared = list(prepared.declarations)
    if prepared.relevant:
        declared += imported_declarations_for(declared, config, [Path(path)], store=cast("ResultCache", imported),
                                              project_files=PROJECT_FILES,
                                              analysed_declarations=imported.analysed_declarations)
    index = file_index(declared, [prepared.text] if prepared.relevant else [], config.payload_classes)
    report = analyse_prepared(prepared, config, index, fixes=False)
    return ModuleAnalysis(
        key,
        narrowed=frozenset(
            _span_start(site) for site in report.sites
            if site.kind is SiteKind.OPTIONAL_ACCESS and site.on_connector_path
        ),
        constructions=_constructions(report.sites),
        findings=tuple(finding for finding in report.findings if finding.code.startswith(_mypy_codes()[0])),
        dereferences=_dereferences(report.findings, report.sites, data),
    )


def _scanned(path: str, config: Config | ConfigError) -> tuple[ModuleAnalysis | None, FileKey | None, bytes]:
    """`scan_module`'s answer, with the file's key and bytes for the engine when it has none."""
    try:
        descriptor = os.open(path, os.O_RDONLY)  # one lookup of the path for its key and its bytes
    except OSError:
        found = file_key(path)
        return (ModuleAnalysis(found) if found is not None else ModuleAnalysis()), found, b""
    key: FileKey | None = None
    try:
        status = os.fstat(descriptor)
        key = status.st_mtime_ns, status.st_size
        if isinstance(config, ConfigError):
            from kvlint.findings import Finding

            finding = Finding(path, 1, 0, "KVC", f"configuration error: {config}", 1, 0)
            return ModuleAnalysis(key, findings=(finding,)), key, b""
        data = os.read(descriptor, status.st_size + 1)  # a regular file gives less than asked only at its end
        if len(data) != status.st_size:  # it changed size since its status was taken: read on to the end
            chunks = [data]
            while chunk := os.read(descriptor, 1 << 16):
                chunks.append(chunk)
            data = b"".join(chunks)
    except OSError:  # mypy has read the file; it reports its own I/O errors
        return (ModuleAnalysis(key) if key is not None else ModuleAnalysis()), key, b""
    finally:
        os.close(descriptor)
    if not mentions_any(data, _names(config)):  # the engine's own first test (`engine.prepare_source`)
        return ModuleAnalysis(key), key, data
    return None, key, data


def _names(config: Config) -> tuple[str, ...]:
    """`config.names()`, once per configuration object (a tree's files share a handful)."""
    known = _NAMES.get(id(config))
    if known is None or known[0] is not config:
        known = _NAMES[id(config)] = (config, config.names())
    return known[1]


_NAMES: dict[int, tuple[Config, tuple[str, ...]]] = {}


class ImportedDeclarations:
    """What `imported_declarations_for` asks of a result cache, kept in memory for the process's life: the
    declarations of each module a relevant file's imports reach, by the module's bytes, so that the files
    importing one module (a tree's runners, workers and connectors share most of theirs) parse it once.
    Keyed by content, it stays right when a module changes under a long-lived process (`dmypy`).

    A module the process both analyses and reads, as an import or as a caller of a producer (most of the
    relevant files of a tree: the runners import the outputs, the mixins and the connectors' base; the
    workers call the runners), is parsed once: analysed first, what it declares is kept (`prepare`); read
    first, its cheap stage is kept for its analysis (`analysed_declarations`)."""

    LIMIT = 4096  # entries of each memo; a larger set starts over
    PREPARED_LIMIT = 256  # cheap stages of modules read before their analysis (a module mypy never parses stays)

    def __init__(self, config: Config) -> None:
        self.config = config
        self._known: dict[str, list[Declaration]] = {}  # as imports (`declarations_of`), by `file_key`
        self._declared: dict[str, list[Declaration]] = {}  # as the relevant files they are (`prepare_source`)
        self._prepared: dict[str, PreparedFile] = {}  # the cheap stage of each of those read before its analysis

    def prepare(self, data: bytes, path: str, module_name: str, is_package: bool) -> PreparedFile:
        """`engine.prepare_source` of a file to analyse: the one kept from its read as an import or a caller,
        when its bytes have not changed since; what it declares is kept for the files that read it next."""
        key = self.file_key("", module_name, is_package, data)
        prepared = self._prepared.pop(key, None)
        if prepared is None:
            from kvlint.engine import prepare_source

            prepared = prepare_source(data, path, self.config, module_name, is_package)
            self._keep(key, prepared)
        else:
            prepared.display_path = path  # kept only without an error: no finding holds the path
        return prepared

    def analysed_declarations(self, data: bytes, module_name: str, is_package: bool) -> list[Declaration] | None:
        """`module_resolution.AnalysedDeclarations`: what a relevant file declares, from its analysis here or
        from its cheap stage, kept for that analysis; None for bytes that mention no configured name."""
        if not mentions_any(data, _names(self.config)):  # first: the modules no analysis takes cost no digest
            return None
        key = self.file_key("", module_name, is_package, data)
        known = self._declared.get(key)
        if known is not None:
            return known
        from kvlint.engine import prepare_source

        prepared = prepare_source(data, "", self.config, module_name, is_package)
        if not self._keep(key, prepared):
            return None
        if len(self._prepared) >= self.PREPARED_LIMIT:
            self._prepared.clear()
        self._prepared[key] = prepared
        return prepared.declarations

    def _keep(self, key: str, prepared: PreparedFile) -> bool:
        """Keep what a relevant file that parsed declares; False for any other."""
        if not prepared.relevant or prepared.error is not None or prepared.fallback_error is not None:
            return False
        if len(self._declared) >= self.LIMIT:
            self._declared.clear()
        self._declared[key] = prepared.declarations
        return True

    def file_key(self, display_path: str, module_name: str, is_package: bool, data: bytes | None,
                 digest: str | None = None) -> str:
        content = digest if digest is not None else hashlib.blake2b(data or b"", digest_size=16).hexdigest()
        return f"{display_path}\0{module_name}\0{is_package}\0{content}"

    def recall_declarations(self, key: str) -> list[Declaration] | None:
        return self._known.get(key)

    def remember_declarations(self, key: str, declarations: list[Declaration]) -> None:
        if len(self._known) >= self.LIMIT:
            self._known.clear()
        self._known[key] = declarations


def _imported(config: Config) -> ImportedDeclarations:
    """The process's `ImportedDeclarations` for this configuration (a module's declarations depend on it); it has
    the three methods `imported_declarations_for` calls on its store."""
    memo = _IMPORTED.get(config)
    if memo is None:
        memo = _IMPORTED[config] = ImportedDeclarations(config)
    return memo


_IMPORTED: dict[Config, ImportedDeclarations] = {}


WalkResult = tuple[list[str], list[str], list[tuple[Path, bytes]]]  # directories listed, files read, their bytes


class ProjectMemo:
    """The project's files beyond each analysed file (`module_resolution.ProjectBeyondRun`), read once for the
    process, not once per file that defines a producer: what `project_files(root, config)` found, by root and
    configuration, served again only as far as it still stands.

    Every directory the walk listed and every file it read keeps its status key
    (`run_record.status_key`: device, inode, size, mtime and ctime), taken after the walk. A key *settled*
    before the walk (`run_record.settled`: older than `RACY_NS`, as the command line's warm cache trusts
    one) and unchanged proves what it stands for: a file added, removed or renamed changes its directory's
    key, a file changed in place its own, even within one timestamp tick. A directory whose key does not
    prove its listing makes the memo walk the project again; a file whose key does not prove its bytes is
    read again. mypy's daemon keeps its helper across runs: the memo then follows the edits between them."""

    LIMIT = 4  # projects (root and configuration) remembered; a fifth starts over

    def __init__(self) -> None:
        self._known: dict[tuple[str, Config], _Walk] = {}

    def files_under(self, root: Path, config: Config) -> WalkResult:
        from kvlint.binding.module_resolution import project_files

        key = (os.path.abspath(root), config)
        known = self._known.get(key)
        if known is not None and known.refreshed():
            return known.listed, known.read, known.found
        walk = _Walk.of(root, config, project_files)
        if len(self._known) >= self.LIMIT:
            self._known.clear()
        self._known[key] = walk
        return walk.listed, walk.read, walk.found

    def module_names(self, root: Path, config: Config) -> dict[Path, tuple[str, bool]]:
        """The module names of the files of the walk `files_under` last gave (a file's module name stands as
        long as the listings above it: the walk is done again when one of them changed)."""
        return self._known[(os.path.abspath(root), config)].module_names


@dataclass
class _Walk:
    """One `project_files` answer, and the status keys that prove it, with when each was proved from."""

    listed: list[str]
    read: list[str]
    found: list[tuple[Path, bytes]]
    directories: list[tuple[str, list[int] | None]]
    files: dict[str, tuple[list[int] | None, int]]  # each file read: its status key, and a time before its read
    started_ns: int  # when the walk began
    module_names: dict[Path, tuple[str, bool]] = field(default_factory=dict)  # `ProjectMemo.module_names`

    @classmethod
    def of(cls, root: Path, config: Config, walk: Callable[[Path, Config], WalkResult]) -> _Walk:
        import time

        from kvlint.running.run_record import current_key

        started = time.time_ns()
        listed, read, found = walk(root, config)
        # taken after the walk: a change between a read and its status is after `started`, which its ctime shows
        return cls(listed, read, found, [(path, current_key(path)) for path in listed],
                   {path: (current_key(path), started) for path in read}, started)

    def refreshed(self) -> bool:
        """Read again the files whose status does not prove their bytes; False if a listing is not proved."""
        import time

        from kvlint.binding.module_resolution import MAX_MODULE_BYTES
        from kvlint.running.discovery import read_source
        from kvlint.running.run_record import current_key, settled

        def proved(path: str, key: list[int] | None, seen_ns: int) -> bool:
            return key is not None and settled(key, seen_ns) and current_key(path) == key

        if not all(proved(path, key, self.started_ns) for path, key in self.directories):
            return False
        stale = [path for path, (key, seen) in self.files.items() if not proved(path, key, seen)]
        if not stale:
            return True
        fresh: dict[str, bytes | None] = {}
        for path in stale:
            seen = time.time_ns()
            try:
                data: bytes | None = read_source(Path(path))
            except OSError:
                data = None
            fresh[path] = data if data is not None and len(data) <= MAX_MODULE_BYTES else None
            self.files[path] = (current_key(path), seen)
        known = {os.fspath(path): data for path, data in self.found}
        known.update(fresh)
        self.found = [(Path(path), data) for path in self.read if (data := known.get(path)) is not None]
        return True


PROJECT_FILES = ProjectMemo()  # the helper's (and mypy's process's, with the engine there)


def _dereferences(findings: tuple[Finding, ...], sites: tuple[Site, ...], data: bytes) -> tuple[Dereference, ...]:
    """Locate the value each KVC001/KVC005 finding dereferences: the `ast` node inside the finding with the
    source text of a dereference site's operand."""
    from kvlint.sites import SiteKind, Span
    from kvlint.source import SourceError, decode_source, split_lines

    codes = _mypy_codes()[1]
    wanted = [finding for finding in findings if finding.code in codes]
    if not wanted:
        return ()
    try:
        source = decode_source(data)
        lines = split_lines(source)
        nodes = list(_expressions_with_loops(ast.parse(data)))
    except (SyntaxError, ValueError, RecursionError, SourceError):
        return ()  # the engine reports what it could not read; mypy its own syntax errors
    dereferences = []
    for finding in wanted:
        span = Span(finding.line, finding.column, finding.end_line, finding.end_column)
        texts = {_compact(site.operand) for site in sites
                 if site.kind is SiteKind.DEREFERENCE and site.span == span and site.may_be_none
                 and site.deref_target is codes[finding.code]}
        start = (finding.line, _byte_column(lines, finding.line, finding.column))
        end = (finding.end_line, _byte_column(lines, finding.end_line, finding.end_column))
        operands = [(node, loop) for node, loop in nodes
                    if start <= (node.lineno, node.col_offset) and (node.end_lineno, node.end_col_offset) <= end
                    and _compact(ast.get_source_segment(source, node) or "") in texts]
        dereferences.append(Dereference(
            finding,
            tuple((node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0)
                  for node, _ in operands),
            next((loop for _, loop in operands if loop is not None), None),
        ))
    return tuple(dereferences)


def _expressions_with_loops(
    node: ast.AST, loop: tuple[int, int] | None = None
) -> Iterator[tuple[ast.expr, tuple[int, int] | None]]:
    """Yield every expression with the lines of the outermost loop around it (mypy checks a loop body
    more than once)."""
    if loop is None and isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        loop = (node.lineno, node.end_lineno or node.lineno)
    if isinstance(node, ast.expr):
        yield node, loop
    for child in ast.iter_child_nodes(node):
        yield from _expressions_with_loops(child, loop)


def _byte_column(lines: list[str], line: int, column: int) -> int:
    """A kvlint column (characters) as mypy counts it (UTF-8 bytes)."""
    return len(lines[line - 1][:column].encode("utf-8")) if 0 < line <= len(lines) else column


def _compact(text: str) -> str:
    """Source text without whitespace or outer parentheses (`Site.operand` keeps those; `ast` does not)."""
    text = "".join(text.split())
    while text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    return text


def _constructions(sites: tuple[Site, ...]) -> dict[tuple[int, int], tuple[Site, ...]]:
    from kvlint.sites import SiteKind

    found: dict[tuple[int, int], tuple[Site, ...]] = {}
    for site in sites:
        if site.kind is SiteKind.OUTPUT_CONSTRUCTION:
            found[_span_start(site)] = (*found.get(_span_start(site), ()), site)
    return found


def _span_start(site: Site) -> tuple[int, int]:
    return site.span.line, site.span.column


def worker_wanted(value: str | None, default: bool) -> bool:
    """`KVLINT_MYPY_WORKER`: unset means `default`; 0, false, no, off (any case) or empty turn the helper off."""
    if value is None:
        return default
    return value.strip().lower() not in FALSE_SPELLINGS


def helper_timeout() -> float:
    """Seconds the helper may take over one file: `KVLINT_MYPY_TIMEOUT`, else 60."""
    try:
        seconds = float(os.environ.get(TIMEOUT_ENV, ""))
    except ValueError:
        return DEFAULT_TIMEOUT
    return seconds if seconds > 0 else DEFAULT_TIMEOUT


def helper_command(program: str) -> list[str]:
    """The command line of the helper that runs `program`: nothing of mypy's working directory (the tree
    being checked, where a `queue.py`, `pickle.py` or `kvlint/` may lie) nor of `PYTHONPATH` comes before
    the standard library or kvlint.

    `-I` (isolated mode) leaves the current directory off `sys.path` and ignores every `PYTHON*` variable and
    the user's site directory; `-S` defers `site`, so the helper first notes the standard library's entries,
    then adds the environment's site-packages (`site.main()`, `.pth` files and editable installs included) and
    puts kvlint's own installation right after the standard library: kvlint is the one the plugin was loaded
    from, even when another copy is installed (tests/test_trust_mypy_helper.py).
    """
    import site

    package_root = str(Path(kvlint.__file__).resolve().parent.parent)  # importable even if loaded by path
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else ""
    extra = [user_site] if user_site and user_site in sys.path else []  # `pip install --user`: libcst is there
    boot = (
        "import sys; standard = list(sys.path); import site; site.main(); "
        f"root = {package_root!r}; "
        "sys.path[:] = [*standard, root, *(p for p in sys.path if p not in standard and p != root), "
        f"*(p for p in {extra!r} if p not in sys.path)]; "
        "del standard, root, site"
    )
    return [sys.executable, "-I", "-S", "-c", f"{boot}\n{program}"]


class AnalysisWorker:
    """One helper process that analyses each file mypy parses, so the hooks find the facts ready.

    Requests and replies are pickles on the process's stdin and stdout; the helper
    answers every request, in order, and a thread here receives the replies. Any
    failure turns it off, and the plugin analyses in its own process instead; so
    does a helper that takes longer than `timeout` seconds over one file, which
    is said once on stderr.
    """

    HELPER = "from kvlint.mypy_worker import serve_analyses; serve_analyses()"  # the helper's program

    def __init__(self, timeout: float | None = None) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._pending: set[str] = set()
        self._received: dict[str, ModuleAnalysis | None] = {}
        self._replies: queue.Queue[tuple[str, ModuleAnalysis | None] | None] = queue.Queue()
        self._failed = False
        self.timeout = helper_timeout() if timeout is None else timeout
        self.problem = ""  # why the helper was turned off, said once

    def submit(self, path: str) -> None:
        if self._failed or path in self._pending or path in self._received:
            return
        try:
            if self._process is None:
                self._process = self._spawn()  # at the first parsed file: a run served from mypy's cache needs none
            assert self._process.stdin is not None
            pickle.dump(path, self._process.stdin)
            self._process.stdin.flush()  # now: only the files that need the engine come here, a few dozen in a
            # tree, and a buffer that waited for the first `take` would keep the helper idle until mypy waits on it
        except (OSError, ValueError):
            self._stop()
            return
        self._pending.add(path)

    def take(self, path: str) -> ModuleAnalysis | None:
        """Return the helper's analysis of `path`, waiting for it; None when it has none."""
        if path in self._received:
            return self._received.pop(path)
        if path not in self._pending or self._process is None:
            return None
        try:
            assert self._process.stdin is not None
            self._process.stdin.flush()
        except Exception:  # noqa: BLE001 - a dead helper: analyse in-process instead
            self._stop()
            return None
        while path in self._pending:
            try:
                reply = self._replies.get(timeout=self.timeout)
            except queue.Empty:
                self._say(f"the analysis helper took over {self.timeout:g} s on {path}; kvlint analyses in mypy's "
                          f"process from now on (set {TIMEOUT_ENV} to wait longer)")
                self._stop()
                return None
            if reply is None:  # a dead or confused helper: analyse in-process instead
                self._stop()
                return None
            replied, analysis = reply
            self._pending.discard(replied)
            self._received[replied] = analysis
        return self._received.pop(path)

    def _say(self, message: str) -> None:
        if not self.problem:
            self.problem = message
            sys.stderr.write(f"kvlint: {message}\n")

    def _receive(self, replies: IO[bytes]) -> None:
        """The reply thread: each `(path, analysis)` to the queue, then None when the helper is gone."""
        while True:
            try:
                self._replies.put(pickle.load(replies))
            except Exception:  # noqa: BLE001 - EOF or a torn pickle: the helper is gone
                self._replies.put(None)
                return

    def _spawn(self) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            helper_command(self.HELPER),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        threading.Thread(target=self._receive, args=(process.stdout,), daemon=True).start()
        return process

    def _stop(self) -> None:
        self._failed = True
        self._pending.clear()
        if self._process is not None:
            self._process.kill()
            for pipe in (self._process.stdin, self._process.stdout):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()  # now, not at exit where a broken pipe would print "Exception ignored"


def serve_analyses(requests: IO[bytes] | None = None, replies: IO[bytes] | None = None) -> None:
    """The helper process: analyse each requested path, reply `(path, ModuleAnalysis | None)` in order."""
    requests = requests or sys.stdin.buffer
    replies = replies or sys.stdout.buffer
    inbox: queue.Queue[str | None] = queue.Queue()

    def read_requests() -> None:  # drain stdin at once, so that mypy's writes never wait on the analysis
        while True:
            try:
                inbox.put(pickle.load(requests))
            except Exception:  # noqa: BLE001 - EOF: mypy is done
                inbox.put(None)
                return

    threading.Thread(target=read_requests, daemon=True).start()
    configs = DirectoryConfigs()
    while (path := inbox.get()) is not None:
        analysis: ModuleAnalysis | None = None
        try:
            analysis = analyse_module(path, configs.for_file(path))
        except Exception:  # noqa: BLE001 - None: the plugin then analyses this file itself and shows what failed
            pass
        try:
            pickle.dump((path, analysis), replies)
            replies.flush()
        except OSError:
            return

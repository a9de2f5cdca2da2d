"""Run the engine over a tree: find files, scan bytes, index, analyse in parallel.

Every face that looks at more than one file (`kvlint check`, `kvlint audit`)
calls `run`; the result is identical whatever the job count or file order.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvlint.running.collector import collect_garbage_rarely
from kvlint.config import Config
from kvlint.running.discovery import SourceFile, UnreadablePath, iter_python_files, read_source
from kvlint.engine import EVERYTHING, FileReport, PreparedFile, analyse_prepared, encoding_problem, prepare_source
from kvlint.source import module_name_for
from kvlint.byte_scan import mentions_any
from kvlint.findings import Finding
from kvlint.rules import INTERNAL_ERROR, UNREADABLE
from kvlint.binding.declarations import Declaration
from kvlint.binding.module_resolution import imported_declarations_for
from kvlint.binding.tree_index import TreeIndex
from kvlint.running.worker_pool import STILL_READING, WorkerPool
from kvlint.running.worker_pool import shared as shared_with_workers

if TYPE_CHECKING:
    from kvlint.running.cache import CachedFile, ResultCache

PARALLEL_THRESHOLD = 4  # below this many files found, worker start-up costs more than it saves


@dataclass
class RunResult:
    """Everything one run learnt, in a deterministic order."""

    reports: list[FileReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files_found: int = 0  # files that discovery yielded (including unreadable ones)
    files_analysed: int = 0  # files that went through the flow analysis
    seconds: float = 0.0
    cache_hits: int = 0  # reports reused from the cache directory
    cache_problem: str = ""  # why results could not be stored there
    pool_problem: str = ""  # why fewer worker processes ran than asked for
    index: TreeIndex | None = None  # the tree index the files were analysed with (`--fix` analyses with it again)


def default_jobs() -> int:
    """The CPU count this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run(
    paths: Sequence[Path], config: Config, jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None, everything: bool = False,
    cache_dir: Path | None = None, suppress: bool = True,
) -> RunResult:
    """Check every Python file under `paths` with `config`.

    The files are read and byte-scanned here while worker processes parse the
    relevant ones as they are found; the tree index needs them all, then the
    analysis runs in the workers, largest file first. The first worker starts
    with the index of the relevant files' declarations while this process reads
    the skipped files for the callers and for what could change that index
    (`IndexBuild`); in the rare run where something does, the files are
    analysed again with the final index.
    `everything` skips the byte scan and analyses every unit of every file (the
    corpus run and fuzzing use it to exercise the parser and the flow analysis).
    `cache_dir` reuses and stores per-file results there (`kvlint.running.cache`); a
    file whose entry matches is neither parsed nor analysed.
    `suppress=False` keeps what `# noqa`, select/ignore and per-file-ignores would drop
    (`--report-unused-noqa` compares the two); such a run uses no cache.
    """
    started = time.perf_counter()
    jobs = jobs or default_jobs()
    result = RunResult()
    entries = list(iter_python_files(paths, config))
    result.files_found = len(entries)
    names = EVERYTHING if everything else config.names()
    unreadable: list[Finding] = []
    skipped: list[tuple[SourceFile, bytes]] = []
    cache = _RunCache.open(cache_dir, config, everything) if cache_dir is not None and suppress else None
    relevant: Iterable[tuple[SourceFile, bytes, Config, tuple[str, ...]] | object] = (  # read and scanned
        (source, data, config, names) if _is_relevant(source, data, names, skipped, unreadable)  # as the workers
        else STILL_READING  # parse what it found: a skipped file lets the pool hand out what waits
        for source, data in _read(entries, unreadable)
    )
    if cache is not None:
        relevant = cache.unknown(relevant)
    jobs = min(jobs, default_jobs())  # more workers than CPUs only cost; the pool forks no more than its items
    with _Pool(jobs, len(entries)) as pool:
        prepared = pool.map(_prepare, relevant, on_crash=_prepare_crashed, size=_byte_count)
        declarations = [entry for p in prepared for entry in p.declarations]
        if cache is not None:
            declarations += cache.recalled_declarations()
        declarations += imported_declarations_for(declarations, config, paths, skipped,
                                                  cache.store if cache is not None else None)
        texts = [p.text for p in prepared]
        if cache is not None:
            texts += cache.recalled_texts()
        build = IndexBuild(declarations, skipped, config, texts)
        # what the files are analysed with is the index of the relevant files' declarations: while the first
        # worker analyses, this process reads the skipped files for what could change it (rarely anything)
        index = build.provisional
        extra_names = EVERYTHING if everything else tuple(sorted(index.candidate_names()))
        work = [_Analysis(p.display_path, len(p.text), prepared=p) for p in prepared]
        reports: list[FileReport] = []
        if cache is not None:  # the index first, as the callers' cached reports are picked with it
            build.scan_all()
            index = build.final()[0]
            caller_work = list(cache.unknown([(f, d, config, extra_names) for f, d in build.callers]))
            work += [_Analysis(p.display_path, len(p.text), prepared=p)
                     for p in pool.map(_prepare, caller_work, on_crash=_prepare_crashed)]
            reused, stale = cache.reports_for(cache.store.index_key(index, extra_names))
            reports += reused
            work += stale
        work.sort(key=lambda w: (-w.size, w.display_path))  # the longest first: workers finish together

        def task(item: _Analysis | object) -> object:
            return (item, config, extra_names, suppress) if isinstance(item, _Analysis) else item  # or STILL_READING

        tasks = [task(w) for w in work] if cache is not None else map(task, _then_callers(work, build, extra_names))
        analysed = pool.map(  # the index goes to each worker once (vLLM's is 0.3 MB), not with each file
            _analyse, tasks, progress, on_crash=_analyse_crashed, shared=index, size=_work_size,
        )
        if cache is None:
            index, changed = build.final()
            if changed:  # a skipped file changed the index: what was analysed with the provisional one is redone
                analysed = pool.map(_analyse, [task(w) for w in work], progress, on_crash=_analyse_crashed,
                                    shared=index, size=_work_size)
        if cache is not None:
            cache.remember(work, analysed)
        reports += analysed
    result.pool_problem = pool.problem
    result.index = index
    reports += [FileReport(f.path, findings=(f,)) for f in unreadable]  # KVC901, and KVC900 of skipped files
    reports.sort(key=lambda r: r.display_path)
    result.reports = reports
    result.findings = sorted(finding for report in reports for finding in report.findings)
    result.files_analysed = sum(report.analysed for report in reports)
    if cache is not None:
        if cache.store.written:
            cache.store.prune()
        cache.store.close()
        result.cache_hits, result.cache_problem = cache.store.hits, cache.store.problem
    result.seconds = time.perf_counter() - started
    return result


def _then_callers(work: list[_Analysis], build: IndexBuild, extra_names: tuple[str, ...]) -> Iterator[object]:
    """The files to analyse, then (while workers analyse them) the skipped files' scan, a step at a time, then
    the callers it found, each prepared where it is analysed; `work` gets them too."""
    yield from work
    for _ in build.scan_skipped():
        yield STILL_READING
    for source, data in build.callers:
        caller = _Analysis(source.display_path, len(data), unprepared=(source, data, extra_names))
        work.append(caller)
        yield caller


@dataclass
class _Analysis:
    """One file to analyse: prepared already, or its bytes to prepare first (a file whose cached report is stale,
    or a caller of an Optional-returning function that the scan of the skipped files found)."""

    display_path: str
    size: int
    prepared: PreparedFile | None = None
    unprepared: tuple[SourceFile, bytes, tuple[str, ...]] | None = None


class _RunCache:
    """One run's use of a `ResultCache`: which files it recalled, and the keys of those it works out."""

    def __init__(self, store: ResultCache):
        self.store = store
        self.index_key = ""
        self.keys: dict[str, str] = {}  # display path -> entry key
        self.recalled: dict[str, tuple[SourceFile, bytes, tuple[str, ...], CachedFile]] = {}  # by display path

    @classmethod
    def open(cls, directory: Path, config: Config, everything: bool) -> _RunCache:
        from kvlint.running.cache import ResultCache  # only a run that asks for a cache pays for its imports

        return cls(ResultCache(directory, config, everything))

    def unknown(self, items: Iterable[Any]) -> Iterator[Any]:
        """The items whose file has no cache entry; the others are set aside as recalled."""
        for item in items:
            if item is STILL_READING:
                yield item
                continue
            source, data, config, names = item
            key = self.store.file_key(source.display_path, *module_name_for(source.path), data)
            self.keys[source.display_path] = key
            cached = self.store.recall(key)
            if cached is None:
                yield source, data, config, names
            else:
                self.recalled[source.display_path] = (source, data, names, cached)

    def recalled_texts(self) -> list[str]:
        """The sources of the files recalled so far (connector callees are counted in them)."""
        return [data.decode("utf-8", "replace") for _, data, *_ in self.recalled.values()]

    def recalled_declarations(self) -> list[Declaration]:
        """The declarations of the files recalled so far (the tree index is built from them)."""
        return [entry for *_, cached in self.recalled.values() for entry in cached.declarations]

    def reports_for(self, index_key: str) -> tuple[list[FileReport], list[_Analysis]]:
        """The recalled files' reports made with this tree index, and the others to analyse again."""
        self.index_key = index_key
        reused: list[FileReport] = []
        stale: list[_Analysis] = []
        for source, data, names, cached in self.recalled.values():
            report = self.store.report(cached, index_key)
            if report is not None:
                reused.append(report)
            else:
                stale.append(_Analysis(source.display_path, len(data), unprepared=(source, data, names)))
        return reused, stale

    def remember(self, work: list[_Analysis], reports: list[FileReport]) -> None:
        """Store what this run worked out."""
        for item, report in zip(work, reports):
            declarations = (
                item.prepared.declarations if item.prepared else self.recalled[item.display_path][3].declarations
            )
            self.store.remember(self.keys[item.display_path], declarations, self.index_key, report)


def _is_relevant(
    source: SourceFile, data: bytes, names: Sequence[str],
    skipped: list[tuple[SourceFile, bytes]], unreadable: list[Finding],
) -> bool:
    """The byte scan; a file it skips is kept for the index, and said if it cannot even be decoded."""
    if mentions_any(data, names):
        return True
    skipped.append((source, data))
    problem = encoding_problem(data, source.display_path)
    if problem is not None:
        unreadable.append(problem)
    return False


def _unreadable(display_path: str, reason: str) -> Finding:
    return Finding(display_path, 1, 0, UNREADABLE, f"cannot read: {reason}", 1, 0)


def _byte_count(args: tuple[SourceFile, bytes, Config, tuple[str, ...]]) -> int:
    return len(args[1])


def _work_size(args: tuple[_Analysis, Config, tuple[str, ...], bool]) -> int:
    return args[0].size


def _prepare(args: tuple[SourceFile, bytes, Config, tuple[str, ...]]) -> PreparedFile:
    source, data, config, extra_names = args
    module_name, is_package = module_name_for(source.path)
    return prepare_source(data, source.display_path, config, module_name, is_package, extra_names)


def _analyse(args: tuple[_Analysis, Config, tuple[str, ...], bool]) -> FileReport:
    work, config, names, suppress = args
    index: TreeIndex = shared_with_workers()
    prepared = work.prepared
    if prepared is None:
        source, data, prepare_names = work.unprepared  # type: ignore[misc]
        prepared = _prepare((source, data, config, prepare_names))
    return analyse_prepared(prepared, config, index, names, suppress)


def index_tree(paths: Sequence[Path], config: Config) -> tuple[TreeIndex, frozenset[str]]:
    """The tree index of every file under `paths`, and the absolute paths it covers.

    For a host that analyses files one at a time but was given a whole tree
    (flake8): it then sees the same index `kvlint check` builds for `run`.
    """
    names = config.names()
    candidates = list(_read(iter_python_files(paths, config), []))
    relevant: list[tuple[SourceFile, bytes]] = []
    skipped: list[tuple[SourceFile, bytes]] = []
    for entry, data in candidates:  # one byte scan per file
        (relevant if mentions_any(data, names) else skipped).append((entry, data))
    prepared = [_prepare((entry, data, config, ())) for entry, data in relevant]
    entries = [entry for p in prepared for entry in p.declarations]
    entries += imported_declarations_for(entries, config, paths, skipped)
    index = build_index(entries, skipped, config, [p.text for p in prepared])[0]
    return index, frozenset(os.path.abspath(entry.path) for entry, _ in candidates)


def _read(
    entries: Iterable[SourceFile | UnreadablePath], unreadable: list[Finding]
) -> Iterator[tuple[SourceFile, bytes]]:
    """The bytes of each file; a KVC901 in `unreadable` for each that cannot be read."""
    for entry in entries:
        if isinstance(entry, UnreadablePath):
            unreadable.append(_unreadable(entry.display_path, entry.reason))
            continue
        try:
            data = read_source(entry.path)
        except OSError as exc:
            unreadable.append(_unreadable(entry.display_path, (exc.strerror or str(exc)).lower()))
            continue
        yield entry, data


def build_index(
    entries: list[Declaration], skipped: list[tuple[SourceFile, bytes]], config: Config,
    relevant_texts: Sequence[str] = (),
) -> tuple[TreeIndex, list[tuple[SourceFile, bytes]]]:
    """The tree index of the relevant files' declarations, and the skipped files that call what it
    declares Optional (`IndexBuild`, all at once)."""
    build = IndexBuild(entries, skipped, config, relevant_texts)
    build.scan_all()
    return build.final()[0], build.callers


class IndexBuild:
    """The tree index, in the steps a run can overlap with other work.

    From the relevant files' declarations alone comes a provisional index: what a
    skipped file can change in it is only that a method name is also defined there
    (so it is not Optional-only) or that a skipped file names a function the
    relevant files call only on connector paths (so it is not a connector callee).
    `scan_skipped` reads the skipped files for those two questions and for the
    callers of what the index declares Optional, one pass over their bytes in steps;
    `final` says whether the index they give differs from the provisional one.
    """

    _STEP_BYTES = 1 << 20  # the scan hands control back after about this many bytes (about 0.3 ms)

    def __init__(self, entries: list[Declaration], skipped: list[tuple[SourceFile, bytes]], config: Config,
                 relevant_texts: Sequence[str] = ()):
        self.entries, self.skipped, self.config = entries, skipped, config
        self.provisional = TreeIndex(entries, payload_classes=config.payload_classes)
        self.path_only = (
            self.provisional.path_only_callees(relevant_texts) if self.provisional.callee_candidates() else {}
        )
        self.provisional.settle_connector_callees(self.path_only, ())  # as if no skipped file named one
        self.callers: list[tuple[SourceFile, bytes]] = []
        self.named_elsewhere: set[str] = set()

    def scan_skipped(self) -> Iterator[None]:
        """Read the skipped files for callers and for the path-only callees' names, yielding between steps."""
        wanted = caller_names(self.provisional, self.config)
        unseen = sorted({call.lstrip(".").encode() for call in self.path_only})
        step = 0
        for source, data in self.skipped:
            if wanted and mentions_any(data, wanted):
                self.callers.append((source, data))
            if unseen:  # most runs have none: a callee of the relevant files' paths is rarely named elsewhere
                named = [name for name in unseen if name in data]
                self.named_elsewhere.update(name.decode() for name in named)
                unseen = [name for name in unseen if name not in named]
            step += len(data)
            if step >= self._STEP_BYTES:
                step = 0
                yield

    def scan_all(self) -> None:
        for _ in self.scan_skipped():
            pass

    def final(self) -> tuple[TreeIndex, bool]:
        """The index with what the skipped files showed, and whether it differs from the provisional one
        (then a file analysed with that must be analysed again)."""
        elsewhere: set[str] = set()
        if self.provisional.optional_method_names:
            names = sorted(self.provisional.optional_method_names)
            pattern = re.compile(rb"\bdef\s+(" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")
            elsewhere = {match.group(1).decode() for _, data in self.callers for match in pattern.finditer(data)}
        if not elsewhere and not self.named_elsewhere:
            return self.provisional, False
        index = TreeIndex(self.entries, elsewhere, self.config.payload_classes)
        index.settle_connector_callees(self.path_only, self.named_elsewhere)
        changed = (index.optional_method_names != self.provisional.optional_method_names
                   or index.connector_callees != self.provisional.connector_callees)
        return (index if changed else self.provisional), changed


def caller_names(index: TreeIndex, config: Config) -> tuple[str, ...]:
    """The names whose mention makes a file the byte scan skipped worth analysing: what the tree declares to
    return or hold the payload. A skipped file mentions no configured name, nor any name containing one, and a
    private name stays in its own file."""
    configured = config.names()
    return tuple(sorted(
        name for name in index.candidate_names()
        if not name.startswith("_") and not any(c in name for c in configured)
    ))


def _Pool(jobs: int, size: int) -> WorkerPool:  # noqa: N802 - reads as the class it returns
    """The run's worker processes (`kvlint.running.worker_pool`); fewer than PARALLEL_THRESHOLD files need none."""
    return WorkerPool(jobs, size, PARALLEL_THRESHOLD, initializer=_warm_worker)


def _warm_worker() -> None:
    """Import what the analysis needs while the parent is still reading files; then the collector is set as
    the command line sets it, what the worker inherited and imported frozen (`collect_garbage_rarely`)."""
    import kvlint.flow  # noqa: F401 - better spent now than in the first analysis

    collect_garbage_rarely()


def _quiet_worker() -> None:
    """A worker that imports nothing ahead (the pool itself makes workers ignore SIGINT and SIGTERM)."""


def _crashed(display_path: str) -> Finding:
    return Finding(display_path, 1, 0, INTERNAL_ERROR,
                   "the analysis process crashed on this file (run with --verbose and report it)", 1, 0)


def _prepare_crashed(args: tuple[SourceFile, bytes, Config, tuple[str, ...]]) -> PreparedFile:
    return PreparedFile(args[0].display_path, "", error=_crashed(args[0].display_path))


def _analyse_crashed(args: tuple[_Analysis, Config, tuple[str, ...], bool]) -> FileReport:
    return FileReport(args[0].display_path, findings=(_crashed(args[0].display_path),))

"""Run the engine over a tree: find files, scan bytes, index, analyse in parallel.

Every face that looks at more than one file (`kvlint check`, `kvlint audit`)
calls `run`; the result is identical whatever the job count or file order.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvlint.running.collector import collect_garbage_rarely
from kvlint.config import Config
from kvlint.running.discovery import SourceFile, UnreadablePath, iter_python_files, read_source
from kvlint.engine import (
    EVERYTHING, FileReport, PreparedFile, analyse_prepared, encoding_problem, on_analysis_thread, prepare_source,
)
from kvlint.running.module_names import ModuleNames
from kvlint.byte_scan import mentions_any
from kvlint.findings import Finding
from kvlint.rules import INTERNAL_ERROR, UNREADABLE
from kvlint.binding.declarations import Declaration
from kvlint.binding.module_resolution import ImportsRead, declarations_of, imported_declarations_for
from kvlint.binding.tree_index import TreeIndex, caller_names
from kvlint.running.run_record import FileRow, Record, RunResult, current_key, replay, settled
from kvlint.running.worker_pool import STILL_READING, WorkerPool, in_worker
from kvlint.running.worker_pool import shared as shared_with_workers

if TYPE_CHECKING:
    from kvlint.binding.search_path import SearchPath
    from kvlint.running.cache import CachedFile, ResultCache

PARALLEL_THRESHOLD = 4  # below this many files found, worker start-up costs more than it saves
_module_names = ModuleNames()  # this run's (`run` and `index_tree` start anew; a worker fills its own copy)


def default_jobs() -> int:
    """The CPU count this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def run(
    paths: Sequence[Path], config: Config, jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None, everything: bool = False,
    cache_dir: Path | None = None, suppress: bool = True, index_needed: bool = False,
    fixes: bool | frozenset[str] = True, sites: bool = True,
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
    With a cache, the run's record (`kvlint.running.run_record`) is read first: when nothing the last run
    with this command line read has changed, its result is the answer (without the tree index, so not
    when `index_needed`); else the files whose status is unchanged are not read, their digests and scan
    facts are the record's, and a new record is written at the end.
    `suppress=False` keeps what `# noqa`, select/ignore and per-file-ignores would drop
    (`--report-unused-noqa` compares the two); such a run uses no cache.
    `fixes`: the fixes to build (`engine.analyse_prepared`): all, none, or those of these rules' findings, for
    a report that shows no others; a run with a cache builds all, as its reports are kept for any report.
    `sites=False`: the reports carry no sites (a report of findings alone: the workers then send back a
    fraction of what they found).
    """
    global _module_names
    started = time.perf_counter()
    _module_names = ModuleNames()
    if cache_dir is not None and suppress and not index_needed:
        replayed = replay(paths, config, cache_dir, everything)
        if replayed is not None:
            replayed.seconds = time.perf_counter() - started
            return replayed
    seen_ns = time.time_ns()  # what a status recorded in this run is settled against
    jobs = jobs or default_jobs()
    if cache_dir is not None:
        fixes, sites = True, True
    result = RunResult()
    cache = _RunCache.open(cache_dir, config, everything, paths, seen_ns) if cache_dir is not None and suppress \
        else None
    listed: list[str] | None = [] if cache is not None else None
    listing = _Listing(iter_python_files(paths, config, listed))  # read as it is found
    entries = listing.found
    names = EVERYTHING if everything else config.names()
    unreadable: list[Finding] = []
    skipped: list[tuple[SourceFile, bytes]] = []
    relevant: Iterable[tuple[SourceFile, bytes, Config, tuple[str, ...]] | object] = (  # read and scanned
        (source, data, config, names) if _is_relevant(source, data, names, skipped, unreadable, cache)  # as the
        else STILL_READING  # workers parse what it found: a skipped file lets the pool hand out what waits
        for source, data in _read(listing, unreadable, cache)
    )
    if cache is not None:
        relevant = cache.unknown(relevant)
    jobs = min(jobs, default_jobs())  # more workers than CPUs only cost; the pool forks no more than its items
    _held.clear()
    with _Pool(jobs, listing.at_least) as pool:
        given: list[tuple[SourceFile, bytes, Config, tuple[str, ...], int]] = []
        prepared, work = _prepared_work(given, pool.map(  # what a worker holds is analysed there
            _prepare_held, _numbered(relevant, given), on_crash=_prepare_crashed, size=_byte_count))
        own = [entry for p in prepared for entry in p.declarations]
        if cache is not None:
            own += cache.recalled_declarations()
        read_imports = functools.partial(  # asked again once the scan has found the callers: one search, one memo
            imported_declarations_for, own, config, paths, skipped, memo=ImportsRead(),
            declare_all=functools.partial(_declare_all, pool, config),
        )
        imported = cache.imported_declarations(own, config, paths, skipped) if cache is not None else read_imports()
        declarations = own + imported
        texts = [p.text for p in prepared]
        if cache is not None:
            prepared_texts = texts
            texts = lambda: [*prepared_texts, *cache.recalled_texts()]  # noqa: E731 - read only if asked
        build = IndexBuild(declarations, skipped, config, texts,
                           recorded=cache.recorded_scan() if cache is not None else None, keep_facts=cache is not None)
        # what the files are analysed with is the index of the relevant files' declarations: while the first
        # worker analyses, this process reads the skipped files for what could change it (rarely anything)
        index = build.provisional
        extra_names = EVERYTHING if everything else tuple(sorted(index.candidate_names()))
        reports: list[FileReport] = []
        if cache is not None:  # the index first, as the callers' cached reports are picked with it
            build.scan_all()
            build.read_callers_imports(own, imported, functools.partial(cache.imported_with_callers, own, config,
                                                                        paths, skipped))
            index = build.final()[0]
            callers: list[tuple[SourceFile, bytes, Config, tuple[str, ...], int]] = []
            caller_work = list(cache.unknown([(f, d, config, extra_names) for f, d in build.callers]))
            work += _prepared_work(callers, pool.map(
                _prepare_held, list(_numbered(caller_work, callers, len(given))), on_crash=_prepare_crashed))[1]
            reused, stale = cache.reports_for(cache.store.index_key(index, extra_names))
            reports += reused
            work += stale
        work.sort(key=lambda w: (-w.size, w.display_path))  # the longest first: workers finish together

        def task(item: _Analysis | object) -> object:  # an item, or STILL_READING as it is
            return (item, config, extra_names, suppress, fixes, sites) if isinstance(item, _Analysis) else item

        def read_callers_imports() -> None:  # what the callers import, read while the workers analyse
            build.read_callers_imports(own, imported, read_imports)

        tasks = [task(w) for w in work] if cache is not None else map(
            task, _then_callers(work, build, extra_names, read_callers_imports))
        # the index goes to each worker once (vLLM's is 0.3 MB), not with each file; every worker works while
        # this process scans the skipped files: with one fewer, the other analysed its own files alone until
        # the scan ended, and then took a share of the first's, which it had to prepare again
        analysed = pool.map(
            _analyse, tasks, progress, on_crash=_analyse_crashed, shared=index, size=_work_size, batch=_analyse_batch,
            route=_holder, away=_away, all_working=True,
        )
        if cache is None:
            index, changed = build.final()
            if changed:  # a skipped file changed the index: what was analysed with the provisional one is redone
                analysed = pool.map(_analyse, [task(w) for w in work], progress, on_crash=_analyse_crashed,
                                    shared=index, size=_work_size, batch=_analyse_batch, route=_holder,
                                    away=_away)
        if cache is not None:
            cache.remember(work, analysed)
        reports += analysed
    _held.clear()
    listing.finish()  # read to its end by now, but for a run whose every file was skipped without a map's help
    result.files_found = len(entries)
    result.pool_problem = pool.problem
    result.index = index
    reports += [FileReport(f.path, findings=(f,)) for f in unreadable]  # KVC901, and KVC900 of skipped files
    reports.sort(key=lambda r: r.display_path)
    result.reports = reports
    result.findings = sorted(finding for report in reports for finding in report.findings)
    result.files_analysed = sum(report.analysed for report in reports)
    if cache is not None:
        cache.write_record(entries, listed or [], build, result)
        if cache.store.written:
            cache.store.prune()
        cache.store.close()
        result.cache_hits, result.cache_problem = cache.store.hits, cache.store.problem
    result.seconds = time.perf_counter() - started
    return result


class _Listing:
    """The files discovery finds, handed on as they are found; `found` has each one handed on or looked ahead at."""

    def __init__(self, files: Iterator[SourceFile | UnreadablePath]):
        self.files, self.found = files, []  # type: list[SourceFile | UnreadablePath]
        self.handed = 0

    def __iter__(self) -> Iterator[SourceFile | UnreadablePath]:
        while True:
            if self.handed == len(self.found):
                entry = next(self.files, None)
                if entry is None:
                    return
                self.found.append(entry)
            self.handed += 1
            yield self.found[self.handed - 1]

    def at_least(self, count: int) -> bool:
        """Whether the run has `count` files or more (discovery looks ahead as far as it must to say)."""
        while len(self.found) < count:
            entry = next(self.files, None)
            if entry is None:
                return False
            self.found.append(entry)
        return True

    def finish(self) -> None:
        self.found.extend(self.files)


def _then_callers(work: list[_Analysis], build: IndexBuild, extra_names: tuple[str, ...],
                  then: Callable[[], None]) -> Iterator[object]:
    """The files to analyse, then (while workers analyse them) the skipped files' scan, a step at a time, then
    the callers it found, each prepared where it is analysed; `work` gets them too. `then` runs last, while
    the workers analyse what they were given."""
    yield from work
    for _ in build.scan_skipped():
        yield STILL_READING
    for source, data in build.callers:
        caller = _Analysis(source.display_path, len(data), unprepared=(source, data, extra_names))
        work.append(caller)
        yield caller
    then()


@dataclass
class _Analysis:
    """One file to analyse: prepared already, or its bytes to prepare first (a file whose cached report is stale,
    or a caller of an Optional-returning function that the scan of the skipped files found); `held`: the
    process id of the worker that prepared it and keeps it (`_held`), and its number there. A held file goes
    to its worker as that number alone, to any other process with its bytes (`_away`), which it prepares again."""

    display_path: str
    size: int
    prepared: PreparedFile | None = None  # what this process has of it (for a held file: `_slim`'s)
    unprepared: tuple[SourceFile, bytes, tuple[str, ...]] | None = None
    held: tuple[int, int] | None = None

    def __reduce__(self) -> tuple[type[_Analysis], tuple[object, ...]]:
        """Pickled as the arguments that rebuild it (not a copy of its `__dict__`, 2 us more an item): a held
        file without what the holder has, a file to prepare without what was made of its bytes (they are
        smaller)."""
        if self.held is not None:
            return _Analysis, (self.display_path, self.size, None, None, self.held)
        if self.unprepared is not None:
            return _Analysis, (self.display_path, self.size, None, self.unprepared)
        return _Analysis, (self.display_path, self.size, self.prepared)


def _away(task: _Task) -> _Task:
    """A held file's analysis as it goes to a process that does not hold it: with its bytes."""
    return (dataclasses.replace(task[0], held=None), *task[1:])  # type: ignore[return-value]


_held: dict[int, PreparedFile] = {}  # in a worker: the files it prepared this run, by their number


def _numbered(items: Iterable[Any], given: list[Any], start: int = 0) -> Iterator[Any]:
    """The items to prepare, each with its number in this run (a key of `_held`), its file as two strings (a
    `Path` costs 6 us to pickle); `given` gets each one as it was, with the number."""
    for item in items:
        if item is not STILL_READING:
            source, data, config, names = item
            number = start + len(given) + 1
            given.append((source, data, config, names, number))
            item = ((source.location, source.display_path), data, config, names, number)
        yield item


def _prepared_work(
    given: list[tuple[SourceFile, bytes, Config, tuple[str, ...], int]],
    results: list[tuple[PreparedFile | tuple[str, list[Declaration]], int]],
) -> tuple[list[PreparedFile], list[_Analysis]]:
    """What this process has of the prepared files, and their analyses (each to the worker that holds it)."""
    prepared = [_unslim(p, source.display_path) for (p, _), (source, *_) in zip(results, given)]
    work = [  # a file whose worker crashed on it (no holder) is analysed as it came
        _Analysis(p.display_path, len(p.text), prepared=p, unprepared=(source, data, names) if holder else None,
                  held=(holder, number) if holder else None)
        for p, (_, holder), (source, data, _, names, number) in zip(prepared, results, given)
    ]
    return prepared, work


def _holder(task: object) -> int | None:
    """The worker an analysis goes to: the one that holds the file prepared (`WorkerPool.map`'s `route`)."""
    held = task[0].held if isinstance(task, tuple) else None
    return held[0] if held is not None else None


_Task = tuple[_Analysis, Config, tuple[str, ...], bool, "bool | frozenset[str]", bool]  # what an analysis is given


class _Unread:
    """A file whose status is the one the run's record holds, settled: its bytes are the record's digest, and
    are read only if some step needs them after all (a cached entry gone, a scan the record cannot answer)."""

    __slots__ = ("source", "row", "_data", "changed")

    def __init__(self, source: SourceFile, row: FileRow):
        self.source, self.row = source, row
        self._data: bytes | None = None
        self.changed = False  # read, and not the bytes the digest stands for (changed since its status)

    def read(self) -> bytes:
        if self._data is None:
            from kvlint.running.cache import content_digest

            try:
                self._data = read_source(self.source.location)
            except OSError:
                self._data = b""
            self.changed = content_digest(self._data) != self.row.digest
        return self._data


def _bytes(data: bytes | _Unread) -> bytes:
    return data.read() if isinstance(data, _Unread) else data


def _named_skipped(paths: Sequence[Path], skipped: list[tuple[SourceFile, bytes | _Unread]],
                   ) -> list[tuple[SourceFile, bytes | _Unread]]:
    """The skipped files the command line names (what a cached run's reading of the imports is asked for)."""
    named = {os.path.abspath(path) for path in paths}
    return [(source, data) for source, data in skipped if os.path.abspath(source.location) in named]


def _size(data: bytes | _Unread) -> int:
    return data.row.key[2] if isinstance(data, _Unread) else len(data)


class _RunCache:
    """One run's use of a `ResultCache` and of its record: which files it recalled, the keys of those it works
    out, and the rows of the record it writes at the end (`kvlint.running.run_record`)."""

    def __init__(self, store: ResultCache, material: str, seen_ns: int):
        from kvlint.running.run_record import read_record, record_name

        self.store = store
        self.index_key = ""
        self.keys: dict[str, str] = {}  # display path -> entry key
        self.recalled: dict[str, tuple[SourceFile, bytes | _Unread, tuple[str, ...], CachedFile]] = {}
        self.material, self.name, self.seen_ns = material, record_name(material), seen_ns
        runs = store.runs()
        self.record: Record | None = read_record(runs, self.name, material) if runs is not None else None
        self.old_rows = self.record.by_path() if self.record is not None else {}
        self.rows: dict[str, FileRow] = {}  # path -> this run's row
        self.unread: list[_Unread] = []
        self.roots: list[str] | None = None
        self.externals: list[tuple[str, list[int] | None]] = []
        self.imports: tuple[str, list[object]] | None = None
        self.search: SearchPath | None = None
        self.searched_for_callers: SearchPath | None = None  # the second reading's (`imported_with_callers`)

    @classmethod
    def open(cls, directory: Path, config: Config, everything: bool, paths: Sequence[Path],
             seen_ns: int) -> _RunCache:
        from kvlint.running.cache import ResultCache  # only a run that asks for a cache pays for its imports
        from kvlint.running.run_record import record_material

        store = ResultCache(directory, config, everything)
        return cls(store, record_material(store.salt, paths, True), seen_ns)

    def known(self, source: SourceFile) -> _Unread | None:
        """The file as the record knows it, if its status is the recorded one and settled; else None, and the
        status (taken before its bytes are read) goes into this run's row."""
        path = source.location  # (what `os.fspath(source.path)` gives: discovery's paths are normalised)
        key = current_key(path)
        row = self.old_rows.get(path)
        if row is not None and self.record is not None and key == row.key and settled(key, self.record.seen):
            self.rows[path] = FileRow(path, source.display_path, row.key, row.digest, row.relevant,
                                      row.undecodable, row.caller, list(row.named))
            unread = _Unread(source, row)
            self.unread.append(unread)
            return unread
        if key is not None:
            self.rows[path] = FileRow(path, source.display_path, key, "", False, False, False, [])
        return None

    def read_now(self, source: SourceFile, data: bytes) -> None:
        from kvlint.running.cache import content_digest

        row = self.rows.get(source.location)
        if row is not None:
            row.digest = content_digest(data)

    def row(self, source: SourceFile) -> FileRow | None:
        return self.rows.get(source.location)

    def digest(self, source: SourceFile, data: bytes | _Unread) -> str | None:
        if isinstance(data, _Unread):
            return data.row.digest
        row = self.row(source)
        return row.digest if row is not None and row.digest else None

    def unknown(self, items: Iterable[Any]) -> Iterator[Any]:
        """The items whose file has no cache entry; the others are set aside as recalled."""
        for item in items:
            if item is STILL_READING:
                yield item
                continue
            source, data, config, names = item
            module = _module_names(source.location)
            key = self.store.file_key(source.display_path, *module, _bytes(data) if not isinstance(data, _Unread)
                                      else None, self.digest(source, data))
            cached = self.store.recall(key)
            if cached is None:
                original, data = data, _bytes(data)
                if isinstance(original, _Unread) and original.changed:  # not the bytes its digest stands for
                    key = self.store.file_key(source.display_path, *module, data)
                self.keys[source.display_path] = key
                yield source, data, config, names
            else:
                self.keys[source.display_path] = key
                self.recalled[source.display_path] = (source, data, names, cached)

    def recalled_texts(self) -> list[str]:
        """The sources of the files recalled so far (connector callees are counted in them)."""
        return [_bytes(data).decode("utf-8", "replace") for _, data, *_ in self.recalled.values()]

    def recalled_declarations(self) -> list[Declaration]:
        """The declarations of the files recalled so far (the tree index is built from them)."""
        return [entry for *_, cached in self.recalled.values() for entry in cached.declarations]

    def recorded_scan(self) -> tuple[list[str], list[str]] | None:
        """The names the recorded run scanned the skipped files for (what their rows' facts answer)."""
        return (self.record.wanted, self.record.unseen) if self.record is not None else None

    def imported_declarations(self, declarations: list[Declaration], config: Config, paths: Sequence[Path],
                              skipped: list[tuple[SourceFile, bytes | _Unread]]) -> list[Declaration]:
        """`imported_declarations_for`, or the record's answer when it was asked the same and nothing the search
        path consulted for it has changed."""
        import hashlib
        import json

        from kvlint.binding.declarations import declaration_from_json
        from kvlint.binding.search_path import run_search_path

        named_skipped = _named_skipped(paths, skipped)
        facts = [[d.to_json() for d in declarations], [self.digest(s, d) for s, d in named_skipped],
                 [os.path.abspath(path) for path in paths]]
        fingerprint = hashlib.sha256(json.dumps(facts, default=repr).encode()).hexdigest()
        self.search = run_search_path(config, paths)
        self.roots = [str(root) for root in self.search.roots]
        record = self.record
        if (record is not None and record.imports is not None and record.imports[0] == fingerprint
                and record.roots == self.roots
                and all(key is None and current_key(path) is None
                        or settled(key, record.seen) and current_key(path) == key
                        for path, key in record.externals)):
            try:
                found = [declaration_from_json(item) for item in record.imports[1]]
            except Exception:  # noqa: BLE001 - a damaged record: ask again
                found = None
            if found is not None:
                self.externals = list(record.externals)
                self.imports = record.imports
                self.search = None
                return found
        found = imported_declarations_for(declarations, config, paths,
                                          [(s, _bytes(d)) for s, d in named_skipped], self.store, self.search)
        self.imports = (fingerprint, [d.to_json() for d in found])
        return found

    def imported_with_callers(self, declarations: list[Declaration], config: Config, paths: Sequence[Path],
                              skipped: list[tuple[SourceFile, bytes | _Unread]], *,
                              callers: list[tuple[SourceFile, bytes]]) -> list[Declaration]:
        """`imported_declarations_for` given the callers the scan found too (`IndexBuild.read_callers_imports`):
        not kept in the record, whose answer is what was read without them; what it consults is noted, so
        that the record replays only while that is unchanged too."""
        from kvlint.binding.search_path import run_search_path

        named_skipped = [(source, _bytes(data)) for source, data in _named_skipped(paths, skipped)]
        search = run_search_path(config, paths)
        found = imported_declarations_for(declarations, config, paths, named_skipped, self.store, search,
                                          callers=callers)
        self.searched_for_callers = search
        return found

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
                stale.append(_Analysis(source.display_path, _size(data), unprepared=(source, _bytes(data), names)))
        return reused, stale

    def remember(self, work: list[_Analysis], reports: list[FileReport]) -> None:
        """Store what this run worked out."""
        for item, report in zip(work, reports):
            declarations = (
                item.prepared.declarations if item.prepared else self.recalled[item.display_path][3].declarations
            )
            self.store.remember(self.keys[item.display_path], declarations, self.index_key, report)

    def write_record(self, entries: list[SourceFile | UnreadablePath], listed: list[str], build: IndexBuild,
                     result: RunResult) -> None:
        """The record of this run, for the next one with the same command line: written unless a file could
        not be read, changed while it was read, or an analysis failed."""
        from kvlint.running.codec import finding_to_json, report_to_json
        from kvlint.running.run_record import write_record

        if self.store.problem or any(isinstance(e, UnreadablePath) for e in entries) \
                or any(u.changed for u in self.unread) or any(f.code == INTERNAL_ERROR for f in result.findings):
            return
        rows = []
        for entry in entries:
            row = self.rows.get(os.fspath(entry.path))
            if row is None or not row.digest:
                return
            facts = build.facts.get(entry.display_path)
            if facts is not None:
                row.caller, row.named = facts
            rows.append(row)
        if self.search is not None:
            found, directories = self.search.consulted()
            self.externals = [(os.fspath(path), current_key(os.fspath(path))) for path in found]
            self.externals += [(directory, current_key(directory)) for directory in directories]
        if self.searched_for_callers is not None:
            found, directories = self.searched_for_callers.consulted()
            known = {path for path, _ in self.externals}
            for consulted in dict.fromkeys([*map(os.fspath, found), *directories]):
                if consulted not in known:
                    self.externals.append((consulted, current_key(consulted)))
        import secrets

        record = Record(
            seen=self.seen_ns, dirs=[(directory, current_key(directory)) for directory in listed], files=rows,
            wanted=list(build.wanted), unseen=list(build.unseen_asked), roots=self.roots, externals=self.externals,
            imports=self.imports, findings=[finding_to_json(f) for f in result.findings],
            files_found=result.files_found, files_analysed=result.files_analysed, token=secrets.token_hex(8),
        )
        runs = self.store.runs()
        if runs is None:
            return
        try:
            write_record(runs, self.name, self.material, record, [report_to_json(r) for r in result.reports])
        except OSError:
            pass


def _is_relevant(
    source: SourceFile, data: bytes | _Unread, names: Sequence[str],
    skipped: list[tuple[SourceFile, bytes]], unreadable: list[Finding], cache: _RunCache | None = None,
) -> bool:
    """The byte scan; a file it skips is kept for the index, and said if it cannot even be decoded. A file the
    run's record knows is not scanned: the record says."""
    if isinstance(data, _Unread):
        if data.row.relevant:
            return True
        skipped.append((source, data))  # type: ignore[arg-type] # its bytes are read if a step needs them
        if data.row.undecodable:
            problem = encoding_problem(data.read(), source.display_path)
            if problem is not None:
                unreadable.append(problem)
        return False
    row = cache.row(source) if cache is not None else None
    if mentions_any(data, names):
        if row is not None:
            row.relevant = True
        return True
    skipped.append((source, data))
    problem = encoding_problem(data, source.display_path)
    if problem is not None:
        unreadable.append(problem)
        if row is not None:
            row.undecodable = True
    return False


def _unreadable(display_path: str, reason: str) -> Finding:
    return Finding(display_path, 1, 0, UNREADABLE, f"cannot read: {reason}", 1, 0)


def _byte_count(args: tuple[tuple[str, str], bytes, Config, tuple[str, ...], int]) -> int:
    return len(args[1])


def _work_size(args: _Task) -> int:
    return args[0].size


def _prepare_held(
    args: tuple[tuple[str, str], bytes, Config, tuple[str, ...], int],
) -> tuple[PreparedFile | tuple[str, list[Declaration]], int]:
    """`_prepare`; the file is kept in this process for the analysis (`_held`), and what goes back is `_slim`
    (from a worker: the parent itself gets the file as it holds it) and the process id. A large file stays too:
    sent back whole and out again to whichever worker was free, vLLM 0.33.0's 21 files over 16 K characters
    cost 80 ms of pickling each way (40 ms of it in the parent while both workers waited for the index);
    where the holders' shares come out uneven, the idle one takes the other's smallest files and prepares
    them again (`WorkerPool.map`'s `route`)."""
    (path, display_path), data, config, extra_names, number = args
    module_name, is_package = _module_names(path)
    prepared = prepare_source(data, display_path, config, module_name, is_package, extra_names, keep_tree=True)
    _held[number] = prepared
    return _slim(prepared) if in_worker() else prepared, os.getpid()


def _slim(prepared: PreparedFile) -> tuple[str, list[Declaration]]:
    """What the parent needs of a prepared file its worker keeps: its text and declarations (the tree index's
    input), as a pair: a `PreparedFile` costs 11 us a file to pickle and unpickle, the pair 3 us."""
    return prepared.text, prepared.declarations


def _unslim(prepared: PreparedFile | tuple[str, list[Declaration]], display_path: str) -> PreparedFile:
    """The parent's `PreparedFile` of a file as it came back: whole, or `_slim`."""
    if isinstance(prepared, PreparedFile):
        return prepared
    text, declarations = prepared
    return PreparedFile(display_path, "", text=text, declarations=declarations)


def _prepare(args: tuple[SourceFile, bytes, Config, tuple[str, ...]]) -> PreparedFile:
    source, data, config, extra_names = args
    module_name, is_package = _module_names(source.path)
    return prepare_source(data, source.display_path, config, module_name, is_package, extra_names)


def _analyse(args: _Task) -> FileReport:
    return _analyse_ready(_ready(args), args)


def _analyse_batch(batch: list[_Task]) -> list[FileReport]:
    """`_analyse` of each, in a worker: the files to prepare are prepared here, then all are analysed in one
    stay on the analysis thread (`engine.on_analysis_thread`), not one hand-over to it each."""
    ready = [(_ready(args), args) for args in batch]
    return on_analysis_thread(lambda: [_analyse_ready(prepared, args) for prepared, args in ready])


def _ready(args: _Task) -> PreparedFile:
    """The file prepared: as this process holds it, as it came, or from its bytes."""
    work, config = args[0], args[1]
    held = _held.get(work.held[1]) if work.held is not None and work.held[0] == os.getpid() else None
    if held is not None:
        return held
    if work.unprepared is None:
        return work.prepared  # type: ignore[return-value]
    source, data, prepare_names = work.unprepared
    return _prepare((source, data, config, prepare_names))


def _analyse_ready(prepared: PreparedFile, args: _Task) -> FileReport:
    _, config, names, suppress, fixes, sites = args
    index: TreeIndex = shared_with_workers()
    report = analyse_prepared(prepared, config, index, names, suppress, fixes, sites)
    return report if sites else report.without_sites()


def index_tree(paths: Sequence[Path], config: Config) -> tuple[TreeIndex, frozenset[str]]:
    """The tree index of every file under `paths`, and the absolute paths it covers.

    For a host that analyses files one at a time but was given a whole tree
    (flake8): it then sees the same index `kvlint check` builds for `run`.
    """
    global _module_names
    _module_names = ModuleNames()
    names = config.names()
    candidates = list(_read(iter_python_files(paths, config), []))
    relevant: list[tuple[SourceFile, bytes]] = []
    skipped: list[tuple[SourceFile, bytes]] = []
    for entry, data in candidates:  # one byte scan per file
        (relevant if mentions_any(data, names) else skipped).append((entry, data))
    prepared = [_prepare((entry, data, config, ())) for entry, data in relevant]
    own = [entry for p in prepared for entry in p.declarations]
    read_imports = functools.partial(imported_declarations_for, own, config, paths, skipped,
                                     memo=ImportsRead())
    index = build_index(own, skipped, config, [p.text for p in prepared], read_imports)[0]
    return index, frozenset(os.path.abspath(entry.location) for entry, _ in candidates)


def _read(
    entries: Iterable[SourceFile | UnreadablePath], unreadable: list[Finding], cache: _RunCache | None = None,
) -> Iterator[tuple[SourceFile, bytes]]:
    """The bytes of each file; a KVC901 in `unreadable` for each that cannot be read. With a cache, a file
    whose status its record holds, settled, is not read (`_Unread`)."""
    for entry in entries:
        if isinstance(entry, UnreadablePath):
            unreadable.append(_unreadable(entry.display_path, entry.reason))
            continue
        if cache is not None:
            known = cache.known(entry)
            if known is not None:
                yield entry, known  # type: ignore[misc]
                continue
        try:
            data = read_source(entry.location)
        except OSError as exc:
            unreadable.append(_unreadable(entry.display_path, (exc.strerror or str(exc)).lower()))
            continue
        if cache is not None:
            cache.read_now(entry, data)
        yield entry, data


def build_index(
    own: list[Declaration], skipped: list[tuple[SourceFile, bytes]], config: Config,
    relevant_texts: Sequence[str] = (), read_imports: Callable[..., list[Declaration]] | None = None,
) -> tuple[TreeIndex, list[tuple[SourceFile, bytes]]]:
    """The tree index of the relevant files' declarations (`own`) and what their imports reach
    (`read_imports()`, `imported_declarations_for` but for its `callers`), and the skipped files that call what
    it declares Optional (`IndexBuild`, all at once): their imports are read too (`read_callers_imports`)."""
    imported = read_imports() if read_imports is not None else []
    build = IndexBuild([*own, *imported], skipped, config, relevant_texts)
    build.scan_all()
    if read_imports is not None:
        build.read_callers_imports(own, imported, read_imports)
    return build.final()[0], build.callers


class IndexBuild:
    """The tree index, in the steps a run can overlap with other work.

    From the relevant files' declarations alone comes a provisional index: what a
    skipped file can change in it is only that a method name is also defined there
    (so it is not Optional-only), that a skipped file names a function the
    relevant files call only on connector paths (so it is not a connector callee),
    or that it names an attribute the relevant files only ever store (so something
    may read it back). `scan_skipped` reads the skipped files for those questions and
    for the callers of what the index declares Optional, one pass over their bytes in
    steps; `final` says whether the index they give differs from the provisional one.
    """

    _STEP_BYTES = 1 << 20  # the scan hands control back after about this many bytes (about 0.3 ms)

    def __init__(self, entries: list[Declaration], skipped: list[tuple[SourceFile, bytes]], config: Config,
                 relevant_texts: Sequence[str] | Callable[[], Sequence[str]] = (),
                 recorded: tuple[list[str], list[str]] | None = None, keep_facts: bool = False):
        """`relevant_texts` may be a function giving them (called only when they are needed). `recorded`: a
        run's record (`kvlint.running.run_record`): the names its rows' scan facts answer; `keep_facts`: keep
        each skipped file's facts in `facts`, in full, for the next record."""
        self.entries, self.skipped, self.config = entries, skipped, config
        self.provisional = TreeIndex(entries, payload_classes=config.payload_classes)
        self.path_only: dict[str, tuple[str, ...]] = {}
        self.only_stored: frozenset[str] = frozenset()
        callees = bool(self.provisional.callee_candidates())
        if callees or self.provisional.stored_attributes:
            texts = relevant_texts() if callable(relevant_texts) else relevant_texts
            self.path_only = self.provisional.path_only_callees(texts) if callees else {}
            self.only_stored = self.provisional.only_stored_attributes(texts)
        self.provisional.settle_connector_callees(self.path_only, ())  # as if no skipped file named one
        self.provisional.settle_unread_attributes(self.only_stored, ())  # nor one of these
        self.callers: list[tuple[SourceFile, bytes]] = []
        self.named_elsewhere: set[str] = set()
        self.recorded, self.keep_facts = recorded, keep_facts
        self.facts: dict[str, tuple[bool, list[str]]] = {}  # display path -> (a caller, the unseen names it holds)
        self.wanted: tuple[str, ...] = ()
        self.unseen_asked: list[str] = []
        self.imported_again = False  # the callers' imports changed what the run's imports declare

    def scan_skipped(self) -> Iterator[None]:
        """Read the skipped files for callers and for the path-only callees' names, yielding between steps."""
        wanted = self.wanted = caller_names(self.provisional, self.config)
        unseen = sorted({call.lstrip(".").encode() for call in self.path_only}
                        | {name.encode() for name in self.only_stored})
        self.unseen_asked = [name.decode() for name in unseen]
        keep = self.keep_facts  # each file's facts in full, for the record
        answered = (self.recorded is not None and list(wanted) == self.recorded[0]
                    and set(self.unseen_asked) <= set(self.recorded[1]))
        asked = set(self.unseen_asked)
        step = 0
        for source, data in self.skipped:
            row = getattr(data, "row", None)  # a file the record knows (`_Unread`)
            if answered and row is not None:
                caller, named_names = row.caller, [name for name in row.named if name in asked]
            else:
                data = _bytes(data)
                caller = bool(wanted) and mentions_any(data, wanted)
                named = [name for name in unseen if name in data]
                named_names = [name.decode() for name in named]
                if not keep:
                    unseen = [name for name in unseen if name not in named]
                step += len(data)
            if caller:
                self.callers.append((source, data))
            self.named_elsewhere.update(named_names)
            if keep:
                self.facts[source.display_path] = (caller, named_names)
            if step >= self._STEP_BYTES:
                step = 0
                yield

    def scan_all(self) -> None:
        for _ in self.scan_skipped():
            pass

    def read_callers_imports(self, own: Sequence[Declaration], imported: Sequence[Declaration],
                             read_imports: Callable[..., list[Declaration]]) -> None:
        """Once the scan has found the callers: what the run's imports declare read again with the callers'
        imports too (`read_imports(callers=...)`, the reading that gave `imported`), as a run naming the caller reads
        them (`kvlint check caller.py` sees the `NoReturn` helper the caller imports). Where that differs
        from `imported`, what was read without them, the index is built anew from `own` and it (`final`).
        Nothing is read when the scan found no caller."""
        if not self.callers:
            return
        again = read_imports(callers=[(source, _bytes(data)) for source, data in self.callers])
        if again != list(imported):
            self.entries = [*own, *again]
            self.imported_again = True

    def final(self) -> tuple[TreeIndex, bool]:
        """The index with what the skipped files showed, and whether it differs from the provisional one
        (then a file analysed with that must be analysed again)."""
        if not self.named_elsewhere and not self.imported_again:
            return self.provisional, False
        index = TreeIndex(self.entries, self.config.payload_classes)
        index.settle_connector_callees(self.path_only, self.named_elsewhere)
        index.settle_unread_attributes(self.only_stored, self.named_elsewhere)
        changed = (self.imported_again or index.connector_callees != self.provisional.connector_callees
                   or index.unread_attributes != self.provisional.unread_attributes)
        return (index if changed else self.provisional), changed


def _declare_all(pool: WorkerPool, config: Config, modules: list[tuple[bytes, str, bool]]) -> list[list[Declaration]]:
    """`declarations_of` each module, in the workers (the project's relevant files a run naming many reads)."""
    return pool.map(_declare_module, [(*module, config) for module in modules], size=_module_size,
                    on_crash=_declares_nothing)


def _declare_module(module: tuple[bytes, str, bool, Config]) -> list[Declaration]:
    data, name, is_package, config = module
    return declarations_of(data, name, is_package, config)


def _module_size(module: tuple[bytes, str, bool, Config]) -> int:
    return len(module[0])


def _declares_nothing(module: tuple[bytes, str, bool, Config]) -> list[Declaration]:
    """A module whose parse took two processes down declares nothing, as one that does not parse (its file
    is checked in the run that names it, where it is a finding)."""
    return []


def _Pool(jobs: int, size: int | Callable[[int], bool]) -> WorkerPool:  # noqa: N802 - reads as the class it returns
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


def _prepare_crashed(args: tuple[tuple[str, str], bytes, Config, tuple[str, ...], int]) -> tuple[PreparedFile, int]:
    return PreparedFile(args[0][1], "", error=_crashed(args[0][1])), 0


def _analyse_crashed(args: _Task) -> FileReport:
    return FileReport(args[0].display_path, findings=(_crashed(args[0].display_path),))

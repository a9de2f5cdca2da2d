"""Where an imported module's source is, and the declarations the run's imports reach beyond its own files.

A module name is looked up as ty and mypy look it up: in the run's own package roots and the project's
root first, then the configured search path (`search-path`, `--search-path`), then the site-packages of
the project's environment (`--python`, `VIRTUAL_ENV`, a `.venv` in the project root, else kvlint's own
interpreter). Files are read, never imported. Only what the relevant files import is read (and what the
files the byte scan skipped import, where the command line names them or the run analyses them as
callers), and of that only what can change a verdict:

- a module that mentions a configured name (vLLM's `outputs.py` beside a plugin, a helper declared
  `-> KVConnectorOutput | None` in a file the pre-commit hook did not pass): all its declarations, and
  one level further, the modules that declare its classes' bases and what it re-exports of what was asked;
- a module that defines a function the relevant files call as a statement or in a condition, where it
  may never return or be a `TypeGuard`/`TypeIs` predicate (a `NoReturn` helper in a sibling module).
- a package the relevant files import a class from, where their classes build on it or hold one, that the
  package binds by an import of its own (`worker/__init__.py` doing `from .gpu_model_runner import
  GPUModelRunner`): its import table, followed to where the class is declared, at the depth of the import
  that asked for it (a re-export is where a name is, not one more import).

What imports the run's files, rather than what they import, is read from the rest of the project when the
run is not the whole project (the pre-commit hook): the callers of a function that parks a KV output on the
holder it returns, and the calls of the producers the run defines (`ProjectBeyondRun`).
"""

from __future__ import annotations

import dataclasses
import heapq
import os
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kvlint.binding.search_path import (  # re-exported: where they were first
    SearchPath,
    environment_site_packages,
    run_search_path,
    search_path_for,
    top_package_root,
)
from kvlint.binding.declarations import (
    AttributeReads, ClassDecl, Declaration, FunctionDecl, GlobalDecl, Mentions, ModuleDecl, PathCalls,
    declared_exports, module_declarations, producer_facts_wanted,
)
from kvlint.binding.names import ImportTable, matches, walk_statements
from kvlint.binding.summaries import HolderUse, ParkedReturn, PassThrough, SelfStore
from kvlint.binding.words import defined_names, word_count, word_mentions
from kvlint.byte_scan import mentions_any, names_found
from kvlint.source import SourceError, decode_source, module_name_for, parse_source

if TYPE_CHECKING:
    from kvlint.config import Config
    from kvlint.running.cache import ResultCache
    from kvlint.running.discovery import SourceFile

__all__ = ["ImportsRead", "SearchPath", "declarations_of", "environment_site_packages", "imported_declarations",
           "imported_declarations_for", "run_search_path", "search_path_for", "top_package_root"]

MAX_IMPORT_DEPTH = 2  # modules imported by modules imported by a relevant file, and no further
MAX_MODULES_READ = 400  # a bound on what one run reads beyond its own files
# files named on the command line that the byte scan skips, above which their imports are read only for those the
# analysis may reach, and the project's relevant files beyond the run are read instead: `pre-commit run
# --all-files` names a few thousand at a time, and reading each one's imports took 20 times the whole run
MANY_NAMED_SKIPPED = 64
MAX_MODULE_BYTES = 2 * 2**20
# what a `def` that may end a path or narrow holds: an annotation, a `raise`, or a call of `KNOWN_NO_RETURN`
_PREDICATE_WORDS = (b"NoReturn", b"Never", b"TypeGuard", b"TypeIs", b"raise", b"exit(", b"abort(", b"quit(",
                    b"fail(", b"skip(", b"assert_never(")


def imported_declarations(
    importers: Iterable[ModuleDecl], search: SearchPath, known_modules: Iterable[str], names: Sequence[str],
    declare: Callable[[bytes, str, bool], list[Declaration]], built_on: Collection[str] = (),
    held: _HeldBytes | None = None, also_imported: Iterable[str] = (),
) -> list[Declaration]:
    """The declarations of the modules the importers (the run's relevant files) import that the run did not
    declare (the module's docstring says which are read), in a stable order. `declare` reads one module's
    (`declarations_of`, through the result cache when the run has one). `built_on`: the resolved names the
    run's classes build on or hold (`_built_on`), the names followed through a package's re-export. `held`:
    the bytes of the files the run's byte scan skipped (for `names`), taken instead of reading them again.
    `also_imported`: modules read as if an importer imported them (the project's relevant files beyond a run
    that names too many files to read each one's imports: `imported_declarations_for`)."""
    known = set(known_modules)
    built_on = set(built_on)
    found: list[Declaration] = []
    wanted: dict[str, _Wanted] = {}  # what is still to read of each module
    order: list[tuple[int, str]] = []  # (depth, module) of each entry of `wanted` (and stale ones): a heap
    asked: dict[str, _Wanted] = {}  # what has been asked of each module so far (read again only for more)

    def want(target: str, depth: int, called: bool = False) -> None:
        """Ask for the module `target` names: whole (an import), or for the function it calls (`a.b.f`)."""
        module = target.rpartition(".")[0] if called or search.find(target) is None else target
        if not module or module in known or search.find(module) is None:
            return
        before = asked.setdefault(module, _Wanted(depth))
        name = target.rpartition(".")[2]
        if (before.whole and not called) or (called and name in before.called):
            return
        entry = wanted.setdefault(module, _Wanted(depth))
        entry.depth = min(entry.depth, depth)
        heapq.heappush(order, (entry.depth, module))
        if called:
            entry.called.add(name)
            before.called.add(name)
        else:
            entry.whole = before.whole = True

    imported_names: dict[str, set[str]] = {}  # module -> the names asked of it (`from m import X`: X)
    for module in also_imported:
        want(module, 1)
    for importer in sorted(importers, key=lambda decl: decl.module):
        for target in importer.imports:
            want(target, 1)
            module, _, name = target.rpartition(".")
            imported_names.setdefault(module, set()).add(name)
        for target in importer.called:
            want(target, 1, called=True)
    read = 0
    while wanted and order and read < MAX_MODULES_READ:
        depth, module = heapq.heappop(order)  # the least (depth, name) wanted: an entry popped already, or
        if module not in wanted or wanted[module].depth != depth:  # wanted nearer since, is passed over
            continue
        entry = wanted.pop(module)
        path = search.find(module)
        data = held.get(path) if held is not None and path is not None else None
        skipped = data is not None  # the run's byte scan found none of `names` in it
        data = data if skipped else _read(path)
        if path is None or data is None:
            continue
        is_package = path.name.startswith("__init__")
        relevant = entry.whole and not skipped and mentions_any(data, names)
        asked_names = sorted(name for name in imported_names.get(module, ()) if f"{module}.{name}" in built_on
                             ) if is_package and entry.whole else []
        # a package asked for a name it may bind by an import (`from vllm.v1.worker import GPUModelRunner`,
        # which `worker/__init__.py` re-exports): its imports say where the name is declared
        reexporting = not relevant and any(name.encode() in data for name in asked_names)
        if relevant or (entry.called and is_package) or reexporting:
            declarations = declare(data, module, is_package)
        else:
            called = _called_definitions(data, entry.called)  # only those functions: a module is 1,000 lines
            if not called:
                continue
            declarations = declare(called, module, False)
            if b"__all__" in data:  # what a star import of it binds: its `__all__`, read apart from the rest
                exports = _exports_of(data)
                declarations = [dataclasses.replace(d, exports=exports) if isinstance(d, ModuleDecl) else d
                                for d in declarations]
        read += 1
        defines_called = any(isinstance(d, FunctionDecl) and d.name in entry.called for d in declarations)
        if relevant or defines_called:  # calls on connector paths count in the run's own files only
            found.extend(dataclasses.replace(d, outside=True) if isinstance(d, ModuleDecl) else d
                         for d in declarations if not isinstance(d, PathCalls))
        for decl in declarations:
            if not isinstance(decl, ModuleDecl):
                continue
            aliases = dict(decl.aliases)
            exported = [name for name in entry.called if name in aliases]
            for name in exported:  # a package re-exporting the function: follow it to where it is defined
                want(aliases[name], entry.depth + 1, called=True)
            starred = [name for name in entry.called if name not in aliases and not name.startswith("_")]
            for name in starred if decl.stars else ():  # `from .errors import *`: it may be defined there
                exported.append(name)
                for star in decl.stars:
                    want(f"{star}.{name}", entry.depth + 1, called=True)
            passed_on = [name for name in asked_names if name in aliases] if reexporting else []
            for name in passed_on:  # where the name it re-exports is: as near as if it were imported there
                want(aliases[name], entry.depth)
                built_on.add(aliases[name])
                target_module, _, target_name = aliases[name].rpartition(".")
                imported_names.setdefault(target_module, set()).add(target_name)
            if (exported or passed_on) and not (relevant or defines_called):  # the binder follows the re-export
                found.append(dataclasses.replace(decl, outside=True))
            if relevant and entry.depth < MAX_IMPORT_DEPTH:
                for name in sorted(imported_names.get(module, ())):  # what it re-exports of what was asked of it
                    if name in aliases:
                        want(aliases[name], entry.depth + 1)
                        target_module, _, target_name = aliases[name].rpartition(".")
                        imported_names.setdefault(target_module, set()).add(target_name)
        if relevant and entry.depth < MAX_IMPORT_DEPTH:
            for base in sorted({base for d in declarations if isinstance(d, ClassDecl) for base in d.bases}):
                want(base, entry.depth + 1)  # where its classes' bases are declared
            for name in sorted(_imported_type_names(declarations, names)):
                want(name, entry.depth + 1)  # where a type it imports is declared: perhaps an alias of an Optional
    return found


def _built_on(declarations: Iterable[Declaration]) -> set[str]:
    """The resolved names the classes declared here build on or hold: their bases, and the classes their
    members are declared (or inferred) to be. Where one is a package's re-export, the MRO and the receivers'
    classes need the package's imports followed; the rest of what a package re-exports cannot change a verdict
    here (vLLM's `config/__init__.py` re-exports a hundred names)."""
    found: set[str] = set()
    for decl in declarations:
        if isinstance(decl, ClassDecl):
            found.update(decl.bases)
            found.update(type_.name for _, type_ in decl.members if type_.kind == "class")
    return found


def _imported_type_names(declarations: Sequence[Declaration], names: Sequence[str]) -> set[str]:
    """The imported names a module's declarations give as a type that is not plainly Optional, where the
    module imports them by name (`from .kv_types import MaybeKV`) and they are no configured name: each may be
    a type alias of one (`kv_types.MaybeKV: TypeAlias = Optional[KVConnectorOutput]`)."""
    imported = {target for decl in declarations if isinstance(decl, ModuleDecl) for _, target in decl.aliases}
    types = [decl.returns for decl in declarations if isinstance(decl, FunctionDecl) and decl.returns is not None]
    types += [decl.type for decl in declarations if isinstance(decl, GlobalDecl)]
    types += [type_ for decl in declarations if isinstance(decl, ClassDecl) for _, type_ in decl.members]
    return {type_.name for type_ in types if type_.kind == "class" and not type_.optional
            and type_.name in imported and not matches(type_.name, names)}


def _called_definitions(data: bytes, names: Iterable[str]) -> bytes:
    """The module-level `def`s of `names` (with their decorators) that could end a path or narrow: a body that
    raises or calls `sys.exit`, a `NoReturn`/`Never` or `TypeGuard`/`TypeIs` return. Each runs from its `def`
    to the next line that starts a statement at column 0; b"" when there is none."""
    found = []
    for name in sorted(names):
        for start, end in _top_level_defs(data, name.encode()):
            while start > 0:  # its decorators
                previous = data.rfind(b"\n", 0, start - 1) + 1
                if not data.startswith(b"@", previous):
                    break
                start = previous
            following = _TOP_LEVEL_LINE.search(data, end)
            snippet = data[start : following.start() if following else len(data)]
            if any(word in snippet for word in _PREDICATE_WORDS):
                found.append(snippet.rstrip() + b"\n")
    return b"\n\n".join(found)


_TOP_LEVEL_LINE = re.compile(rb"^[^\s#]", re.M)


def _exports_of(data: bytes) -> tuple[str, ...] | None:
    """A module's literal `__all__` (`declarations.declared_exports`); None without one, or unreadable. The whole
    module is parsed: only a star source of a called helper that names `__all__` costs this."""
    try:
        return declared_exports(parse_source(decode_source(data)))
    except SourceError:
        return None


def _top_level_defs(data: bytes, name: bytes) -> list[tuple[int, int]]:
    """Where `def name` / `async def name` starts a line, and where its header's name ends."""
    found = []
    position = data.find(b"def " + name)
    while position >= 0:
        end = position + 4 + len(name)
        line = data.rfind(b"\n", 0, position) + 1
        prefix = data[line:position]
        if prefix in (b"", b"async ") and not data[end : end + 1].isalnum() and data[end : end + 1] != b"_":
            found.append((line, end))
        position = data.find(b"def " + name, end)
    return found


class _HeldBytes:
    """The bytes of the files a run's byte scan skipped, by path: the modules its relevant files import are
    mostly among them (vLLM 0.33.0: all 268 read), read and scanned already. Found by the last two parts of a
    file's display path first (1.4 ms for vLLM's 3,231 files; an `abspath` of each would cost what reading the
    268 again saves), then by its absolute path."""

    def __init__(self, skipped: Sequence[tuple[SourceFile, bytes]]):
        self._by_tail: dict[str, list[tuple[SourceFile, bytes]]] = {}
        here = os.path.basename(os.getcwd())  # a display path is relative to the current directory, under it
        for source, data in skipped:
            if isinstance(data, bytes):  # (a file a cached run has not read: read it when asked)
                shown = source.display_path
                self._by_tail.setdefault(_tail(shown if "/" in shown else f"{here}/{shown}"), []).append((source, data))

    def get(self, path: Path) -> bytes | None:
        """The bytes held of `path` (at most `MAX_MODULE_BYTES`, as `_read` gives), or None."""
        candidates = self._by_tail.get(_tail(os.fspath(path).replace(os.sep, "/")))
        if not candidates:
            return None
        wanted = os.path.abspath(path)
        for source, data in candidates:
            if os.path.abspath(source.location) == wanted:
                return data if len(data) <= MAX_MODULE_BYTES else None
        return None


def _tail(path: str) -> str:
    """`a/b` of `x/y/a/b` (a display path's parts are separated by `/`)."""
    return path[path.rfind("/", 0, path.rfind("/")) + 1:]


@dataclass
class _Wanted:
    depth: int
    whole: bool = False  # imported: read all of it if it mentions a configured name
    called: set[str] = field(default_factory=set)  # the functions of it the relevant files call


def _read(path: Path | str | None) -> bytes | None:
    if path is None:
        return None
    from kvlint.running.discovery import read_source

    try:
        data = read_source(path)
    except OSError:
        return None
    return data if len(data) <= MAX_MODULE_BYTES else None


def imported_declarations_for(
    declarations: Sequence[Declaration], config: Config, paths: Sequence[Path],
    skipped: Sequence[tuple[SourceFile, bytes]] = (), store: ResultCache | None = None,
    search: SearchPath | None = None, covered: Sequence[Path] | None = None,
    project_files: ProjectFiles | None = None,
    analysed_declarations: AnalysedDeclarations | None = None,
    declare_all: Callable[[list[tuple[bytes, str, bool]]], list[list[Declaration]]] | None = None,
    callers: Sequence[tuple[SourceFile, bytes]] = (),
    memo: ImportsRead | None = None,
) -> list[Declaration]:
    """What the modules the run's relevant files import declare, where the run does not hold them: found in
    the run's package roots, the project, the search path and the environment (this module).
    A file named on the command line counts as an importer though the byte scan skipped it: the pre-commit
    hook names the changed files, whose calls may reach what only an unchanged file declares.
    `search`: the run's `run_search_path`, when the caller made it. `covered`: what the run holds, where it is
    more than `paths` (the editor's workspace folder, whose every file it indexes): not read again.
    `project_files`: where the project beyond the run is read from (`ProjectBeyondRun`), for a caller that
    runs on one file after another of one project (mypy's helper), with `analysed_declarations`, those of the
    modules it analyses too (`AnalysedDeclarations`). `declare_all`: `declarations_of` each of many modules
    at once (the run's worker processes), for the project's relevant files a run naming many files reads.
    `callers`: files the byte scan skipped that the run analyses as callers of what the index declares
    Optional (`IndexBuild.callers`), named or not: their imports are read as a named skipped file's (a
    caller guarding the value with an imported `NoReturn` helper). The whole-tree run asks again with them
    once its scan has found them (`IndexBuild.read_callers_imports`), with the same `memo` (`ImportsRead`)."""
    importers = [decl for decl in declarations if isinstance(decl, ModuleDecl)]
    built_on = _built_on(declarations)
    named_skipped = memo.named_of(paths, skipped) if memo is not None else _named_files(paths, skipped)
    if callers:
        named = {source.location for source, _ in named_skipped}
        named_skipped += [file for file in callers if file[0].location not in named]
    many = len(named_skipped) > MANY_NAMED_SKIPPED
    if not many:
        importers += _importers_of(named_skipped, config, built_on)
    if not importers and not many:
        return []
    # what the imports ask (each `want` below is idempotent), and the named files a run naming many reads the
    # callers among: asked the same, a run's second call answers as its first
    inputs = (frozenset(_asks(importers)), frozenset(built_on),
              frozenset(source.location for source, _ in named_skipped) if many else None)
    if memo is not None and memo.answered is not None and memo.answered[0] == inputs:
        return list(memo.answered[1])
    if memo is not None and memo.project is not None:
        search, project = memo.search, memo.project
    else:
        search = search if search is not None else run_search_path(config, paths)  # a caller's, to ask what it read
        project = ProjectBeyondRun(config, paths if covered is None else covered, search, project_files,
                                   analysed_declarations)
        if memo is not None:
            memo.search, memo.project = search, project

    stored = sorted({decl.attribute for decl in declarations if isinstance(decl, SelfStore)})
    reads: list[Declaration] = []  # a module read for its declarations may read a stored-only attribute

    declared_before = memo.declared if memo is not None else {}  # a module read twice is parsed once

    def declare(data: bytes, module: str, is_package: bool) -> list[Declaration]:
        """A module's declarations, from the result cache when it has them (keyed by the bytes read)."""
        named = tuple(name for name in stored if name.encode() in data)
        if named:
            reads.append(AttributeReads(module, named))
        known = declared_before.get((data, module, is_package))
        if known is None:
            known = declared_before[data, module, is_package] = _declared(data, module, is_package)
        return known

    def _declared(data: bytes, module: str, is_package: bool) -> list[Declaration]:
        if store is None:
            return declarations_of(data, module, is_package, config)
        key = store.file_key("<imported>", module, is_package, data)
        cached = store.recall_declarations(key)
        if cached is not None:
            return cached
        full = analysed_declarations(data, module, is_package) if analysed_declarations is not None else None
        declared = imported_view(full) if full is not None else declarations_of(data, module, is_package, config)
        store.remember_declarations(key, declared)
        return declared

    held = memo.held_of(skipped) if memo is not None else _HeldBytes(skipped) if skipped else None

    # what the run declares itself: its relevant files. A named file the byte scan skipped is not among them,
    # though it imports: what it declares is read where another file imports it, as any skipped file's
    declared_here = {decl.module for decl in declarations if isinstance(decl, ModuleDecl)}

    def imported(importers: list[ModuleDecl], beyond: Sequence[str] = ()) -> list[Declaration]:
        del reads[:]  # what a module read says of the stored attributes: once, from the last reading
        return imported_declarations(importers, search, declared_here, config.names(), declare, built_on, held,
                                     beyond)

    if many:  # `pre-commit run --all-files`: kvlint is given the project a few thousand files at a time
        relevant = _relevant_beyond_run(project, config, declared_here)
        missing = [module for module in relevant if module not in declared_before]  # (asked again: none)
        if declare_all is not None and store is None and missing:  # parsed side by side, read as imports below
            declared_before.update(zip(missing, declare_all(missing)))
        beyond = sorted({module for _, module, _ in relevant})
        found = imported(importers, beyond)
        callers = _callers_among(named_skipped, [*declarations, *found], config)
        importers += _importers_of(callers, config, built_on)  # only a named file the analysis may reach needs
        if callers:  # its imports read, as any other
            found = imported(importers, beyond)
    else:
        found = imported(importers)
    answer = (found + reads + caller_declarations(declarations, config, paths, search, project)
              + callee_declarations(declarations, config, project) + attribute_reads(declarations, project))
    if memo is not None:
        memo.answered = (inputs, answer)
    return list(answer)


def _asks(importers: Iterable[ModuleDecl]) -> Iterator[tuple[str, bool]]:
    """What the importers ask of the modules they import: (target, whether as a called function)."""
    for importer in importers:
        yield from ((target, False) for target in importer.imports)
        yield from ((target, True) for target in importer.called)


@dataclass
class ImportsRead:
    """What one run's calls of `imported_declarations_for` share (the whole-tree run asks again with the callers
    its scan found): the search path and the project beyond the run, made by the first (the project is read
    once), what each module read declares, by its bytes, name and whether a package (each is parsed once),
    and the last answer."""

    search: SearchPath | None = None
    project: ProjectBeyondRun | None = None
    declared: dict[tuple[bytes, str, bool], list[Declaration]] = field(default_factory=dict)
    # what the importers asked, the names the classes build on and (naming many) the named skipped files, and
    # the answer: a call that asks the same (its callers import only what was asked, or were named) is answered
    # without reading again
    answered: tuple[tuple[frozenset[tuple[str, bool]], frozenset[str], frozenset[str] | None],
                    list[Declaration]] | None = None
    _held: tuple[Sequence[tuple[SourceFile, bytes]], int, _HeldBytes | None] | None = None
    _named: tuple[Sequence[Path], Sequence[tuple[SourceFile, bytes]], int, list[tuple[SourceFile, bytes]]] | None \
        = None

    def named_of(self, paths: Sequence[Path], skipped: Sequence[tuple[SourceFile, bytes]]
                 ) -> list[tuple[SourceFile, bytes]]:
        """`_named_files`, found once while the paths and the skipped files are the same (a few thousand named
        files: 50 ms)."""
        known = self._named
        if known is None or known[0] is not paths or known[1] is not skipped or known[2] != len(skipped):
            known = self._named = (paths, skipped, len(skipped), _named_files(paths, skipped))
        return list(known[3])

    def held_of(self, skipped: Sequence[tuple[SourceFile, bytes]]) -> _HeldBytes | None:
        """`_HeldBytes` of the skipped files, made once while they are the same (vLLM's: 10 ms)."""
        if self._held is None or self._held[0] is not skipped or self._held[1] != len(skipped):
            self._held = (skipped, len(skipped), _HeldBytes(skipped) if skipped else None)
        return self._held[2]


def _named_files(paths: Sequence[Path], skipped: Sequence[tuple[SourceFile, bytes]]) -> list[tuple[SourceFile, bytes]]:
    """Each file named on the command line that the byte scan skipped: the pre-commit hook names the changed
    files, whose calls may reach what only an unchanged file declares."""
    named = {os.path.abspath(path) for path in paths}
    names = {os.path.basename(path) for path in named}  # a file's own name first: `abspath` costs 5 us a file
    return [(source, data) for source, data in skipped
            if source.display_path.rpartition("/")[2] in names and os.path.abspath(source.location) in named]


def _importers_of(files: Iterable[tuple[SourceFile, bytes]], config: Config, built_on: set[str]) -> list[ModuleDecl]:
    """What each of these files imports, as it declares it; the names their classes build on added to
    `built_on`."""
    importers: list[ModuleDecl] = []
    for source, data in files:
        module_name, is_package = module_name_for(source.path)
        declared = declarations_of(data, module_name, is_package, config)
        importers += [d for d in declared if isinstance(d, ModuleDecl)]
        built_on |= _built_on(declared)
    return importers


def _relevant_beyond_run(project: ProjectBeyondRun, config: Config, known: Collection[str],
                         ) -> list[tuple[bytes, str, bool]]:
    """(bytes, module name, is a package) of the project's files beyond the run that mention a configured name
    (what a whole-tree run analyses), but those the run declares: each is read as an import of the run's files."""
    names = config.names()
    found = [(data, *project.module_name(path)) for path, data in project.files() if mentions_any(data, names)]
    return [file for file in found if file[1] and file[1] not in known]  # (`files` holds none over the bound)


def _callers_among(files: Sequence[tuple[SourceFile, bytes]], declarations: Sequence[Declaration], config: Config,
                   ) -> list[tuple[SourceFile, bytes]]:
    """Those of the named files the byte scan skipped that name what the declarations say may return or hold
    the payload (`caller_names`): only such a file is analysed (as a caller), so only its imports matter."""
    from kvlint.binding.tree_index import TreeIndex, caller_names

    wanted = caller_names(TreeIndex(declarations, payload_classes=config.payload_classes), config)
    return [file for file in files if mentions_any(file[1], wanted)] if wanted else []


class ProjectBeyondRun:
    """The project's files beyond the run (the pre-commit hook passes the changed files, and a file checked
    alone gets what `kvlint check .` gives it), walked as a whole-tree run walks them and read once, only when
    asked. The search path notes every file read and directory listed: a run's record replays only while none
    of them changed."""

    def __init__(self, config: Config, paths: Sequence[Path], search: SearchPath | None,
                 project_files: ProjectFiles | None = None,
                 analysed_declarations: AnalysedDeclarations | None = None) -> None:
        self.config, self.paths, self.search = config, paths, search
        self._files: list[tuple[Path, bytes]] | None = None
        self._project_files = project_files
        self.analysed_declarations = analysed_declarations  # the caller's, where it analyses a relevant file too
        self._module_names: dict[Path, tuple[str, bool]] = {}  # a caller's memo's, once the files are read

    def files(self) -> list[tuple[Path, bytes]]:
        """(path, bytes) of each; empty when the run holds the whole project."""
        if self._files is None:
            self._files = self._read()
        return self._files

    def files_naming(
        self, names: Sequence[str], analysed: Collection[str], still: Collection[str] | None = None,
    ) -> Iterator[tuple[bytes, str, bool, list[str]]]:
        """(bytes, module name, is a package, those of `names` its bytes hold) of each file that holds one, but
        a file of a module the run analyses (two files of one module name: the run's own is the one it knows).
        `still`: a set the caller empties as it goes; only its names are looked for, and none once it is empty."""
        wanted, left = tuple(names), -1
        for path, data in self.files():
            if still is not None:
                if not still:
                    return
                if len(still) != left:  # the caller settled some: no longer looked for
                    wanted, left = tuple(name for name in wanted if name in still), len(still)
            named = names_found(data, wanted)
            if named:
                module, is_package = self.module_name(path)
                if module not in analysed:
                    yield data, module, is_package, named

    def module_name(self, path: Path) -> tuple[str, bool]:
        """`module_name_for` of one of `files()`, each found once (a few hundred files name a common word)."""
        known = self._module_names.get(path)
        if known is None:
            known = self._module_names[path] = module_name_for(path)
        return known

    def excluded_files(self) -> list[tuple[Path, bytes]]:
        """(path, bytes) of each project file the configuration's `exclude` leaves out of every run: never
        checked, but project code all the same (a benchmark may read back what a worker stores)."""
        if not self.config.exclude:
            return []
        from kvlint.running.discovery import SourceFile, iter_python_files  # the walk is theirs

        listed: list[str] = []
        read: list[str] = []
        found: list[tuple[Path, bytes]] = []
        walked = dataclasses.replace(self.config, exclude=())
        for entry in iter_python_files([self._root()], walked, listed):
            if isinstance(entry, SourceFile) and self.config.is_excluded(Path(entry.location)):
                read.append(entry.location)
                data = _read(entry.location)
                if data is not None:
                    found.append((Path(entry.location), data))
        if self.search is not None:
            self.search.note(read, listed)
        return found

    def _root(self) -> Path:
        from kvlint.config import project_root  # the config layer reads the binder: imported here, not at the top

        return (project_root(self.paths[0]) if self.paths else None) or Path(os.curdir).resolve()  # no marker: cwd

    def _read(self) -> list[tuple[Path, bytes]]:
        paths = self.paths
        root = self._root()
        directories = [path for path in paths if os.path.isdir(path)]  # a file holds no other (pre-commit names
        if any(root.is_relative_to(Path(path).resolve()) for path in directories):  # thousands of files)
            return []  # the run holds the whole project already
        in_run = tuple(os.path.join(os.path.abspath(path), "") for path in directories)  # the run read those already
        run_files = {os.path.abspath(path) for path in paths}
        if self._project_files is None:
            listed, read, found = project_files(root, self.config, in_run, run_files)
        else:  # the whole project, shared: the run's own directories and files are left out here
            listed, read, everything = self._project_files.files_under(root, self.config)
            self._module_names = self._project_files.module_names(root, self.config)
            # the walk's paths are under `root`, absolute and normal already: each is its own `abspath`
            inside = {path for path in read if path.startswith(in_run) or path in run_files}
            read = [path for path in read if path not in inside]
            found = [(path, data) for path, data in everything if os.fspath(path) not in inside]
        if self.search is not None:
            self.search.note(read, listed)
        return found


class AnalysedDeclarations(Protocol):
    """A caller's memo of what `engine.prepare_source` declares of the relevant files it analyses (mypy's helper
    analyses most of the modules it reads as imports or as callers, one after another): called with a module's
    bytes, its name and whether it is a package; None for bytes that are not a relevant file's."""

    def __call__(self, data: bytes, module_name: str, is_package: bool) -> list[Declaration] | None:
        ...


class ProjectFiles(Protocol):
    """A caller's memo of `project_files(root, config)`: what a whole-project walk lists and reads."""

    def files_under(self, root: Path, config: Config) -> tuple[list[str], list[str], list[tuple[Path, bytes]]]:
        ...

    def module_names(self, root: Path, config: Config) -> dict[Path, tuple[str, bool]]:
        """The memo of `module_name_for` of the files `files_under` gave, kept as long as their listing."""
        ...


def project_files(root: Path, config: Config, in_run: tuple[str, ...] = (), run_files: Collection[str] = ()
                  ) -> tuple[list[str], list[str], list[tuple[Path, bytes]]]:
    """The project's files under `root` as a whole-tree run walks them, but those in a directory of `in_run`
    (each ends in a separator) or in `run_files` (absolute paths): the directories listed, the files read,
    and (path, bytes) of each file that could be read."""
    from kvlint.running.discovery import SourceFile, is_skipped_directory, iter_python_files  # the walk is theirs

    tops = [  # the project's top entries as the walk would take them, but not a directory of the run again
        root / name for name in sorted(os.listdir(root))
        if not is_skipped_directory(str(root), name)
        and os.path.join(os.path.abspath(root / name), "") not in in_run
        and (name.endswith((".py", ".pyi")) or (root / name).is_dir())  # given alone, any file would be read
    ]
    listed: list[str] = [str(root)]
    read: list[str] = []
    found: list[tuple[Path, bytes]] = []
    for entry in iter_python_files(tops, config, listed) if tops else ():
        if not isinstance(entry, SourceFile):
            continue
        absolute = os.path.abspath(entry.location)  # (the string: a `Path` only for what is returned)
        if absolute.startswith(in_run) or absolute in run_files:
            continue
        read.append(entry.location)
        data = _read(entry.location)
        if data is not None:
            found.append((Path(entry.location), data))
    return listed, read, found


def caller_declarations(
    declarations: Sequence[Declaration], config: Config, paths: Sequence[Path], search: SearchPath | None = None,
    project: ProjectBeyondRun | None = None,
) -> list[Declaration]:
    """What the rest of the project does with the holders the run's functions return with a KV output parked
    on them (`binding.summaries`): the pre-commit hook passes the changed runner, not the unchanged worker
    that decides whether the value is lost. The project's relevant files (as a whole-tree run would analyse
    them) that call such a function are read for their holder uses, and for their own callers where they
    return the call's result as it is. Empty when nothing in the run parks, or every file is in the run."""
    parked = {decl.qualname for decl in declarations if isinstance(decl, ParkedReturn)}
    if not parked:
        return []
    wanted = {qualname.rpartition(".")[2] for qualname in parked}
    holders = tuple({  # a caller names the holder's class in its `isinstance` test
        name.rpartition(".")[2].encode() for decl in declarations if isinstance(decl, FunctionDecl)
        and decl.qualname in parked for name in decl.returned_classes if not matches(name, config.output_classes)
    })
    if not holders:
        return []  # it sets the field on what it returns, an output: that is attaching, not parking
    project = project if project is not None else ProjectBeyondRun(config, paths, search)
    analysed = {decl.module for decl in declarations if isinstance(decl, ModuleDecl)}
    names = config.names()
    candidates: list[tuple[bytes, str, bool]] = []
    for path, data in project.files():
        if not any(holder in data for holder in holders) or not mentions_any(data, names):
            continue  # a file a whole-tree run skips says nothing there either
        module, is_package = project.module_name(path)
        if module not in analysed:
            candidates.append((data, module, is_package))
    found: list[Declaration] = []
    passing = [decl for decl in declarations if isinstance(decl, PassThrough)]
    summaries: dict[str, list[HolderUse | PassThrough]] = {}  # by module: each candidate is parsed once
    asked: set[str] = set()
    while wanted - asked:  # a function returning the result as it is: its own callers are asked next
        wanted |= _passed_through(wanted, passing)
        needles = [f"{name}(".encode() for name in sorted(wanted - asked)]
        asked |= wanted
        for data, module, is_package in candidates:
            if module not in summaries and not any(needle in data for needle in needles):
                continue
            if module not in summaries:
                summaries[module] = _summaries_of(data, module, is_package, config)
            for decl in summaries[module]:
                if decl not in found and decl.method in asked:
                    found.append(decl)
                    if isinstance(decl, PassThrough):
                        wanted.add(decl.caller.rpartition(".")[2])
    return found


def callee_declarations(
    declarations: Sequence[Declaration], config: Config, project: ProjectBeyondRun,
) -> list[Declaration]:
    """How the rest of the project calls the run's producers: a producer every mention of which in the tree
    is a call on a connector path is on that path itself (`TreeIndex.callee_candidates`), and the hook that
    checks the mixin alone must count the runners' calls as `kvlint check .` does. For each project file that
    names one: its connector-path calls and its mentions when a whole-tree run analyses it, that it names one
    at all when the byte scan skips it. Empty when the run defines no producer, or holds the whole project."""
    own = [decl for decl in declarations if isinstance(decl, FunctionDecl)]
    defined = Counter(decl.name for decl in own)
    wanted = sorted({decl.name for decl in own if decl.returns_output and defined[decl.name] == 1})
    if not wanted:
        return []
    analysed = {decl.module for decl in declarations if isinstance(decl, ModuleDecl)}
    names = config.names()
    found: list[Declaration] = []
    named_in: list[tuple[bytes, str, bool, str, list[str]]] = []  # the relevant files naming one: bytes, module,
    # whether a package, text, the names
    unsettled = set(wanted)  # named by no file the byte scan skips (that alone settles a name: not a callee);
    # once settled, a name is looked for no further
    for data, module, is_package, named in project.files_naming(wanted, analysed, unsettled):
        text = None
        if mentions_any(data, names):
            try:
                text = decode_source(data)
            except SourceError:
                text = None
        if text is None or not mentions_any(text, names):
            found.append(Mentions(module, tuple((name, 1) for name in named), skipped=True))
            unsettled.difference_update(named)
        else:
            named_in.append((data, module, is_package, text, named))
    for data, module, is_package, text, named in named_in:
        named = [name for name in named if name in unsettled]
        if not named:
            continue
        words = word_mentions(text, named)
        called = [name for name in named if words[name] > 0]
        if called:  # only a file that names one can call it on a connector path: parsed only then
            found.extend(decl for decl in _relevant_declarations(data, text, module, is_package, config, project)
                         if isinstance(decl, PathCalls))
        definitions = tuple(sorted(defined_names(text, named).items()))
        if called or definitions:
            found.append(Mentions(module, tuple((name, words[name]) for name in called), definitions))
    return found


def _relevant_declarations(data: bytes, text: str, module: str, is_package: bool, config: Config,
                           project: ProjectBeyondRun) -> list[Declaration]:
    """What a relevant project file declares as a run's own (its producers and connector-path calls among it):
    the caller's, where it analyses the file too; [] where it does not parse (its text still counts, as the
    whole run counts it; it calls nothing)."""
    analysed = project.analysed_declarations
    known = analysed(data, module, is_package) if analysed is not None else None
    if known is not None:
        return known
    try:
        tree = parse_source(text)
    except SourceError:
        return []
    imports = ImportTable.from_statements(walk_statements(tree), module, is_package)
    return module_declarations(tree, module, imports, config.empty_sentinels, *producer_facts_wanted(text, config))


def attribute_reads(declarations: Sequence[Declaration], project: ProjectBeyondRun) -> list[Declaration]:
    """Which of the attributes the run's files only ever store (`SelfStore`) each project file beyond the run
    names, as a word, anywhere: a KV output parked there may be read back in it. Any mention counts, a store
    too (silence over a guess). The files `exclude` leaves out count too: they are the project's code. Empty
    when the run stores none."""
    wanted = sorted({decl.attribute for decl in declarations if isinstance(decl, SelfStore)})
    if not wanted:
        return []
    analysed = {decl.module for decl in declarations if isinstance(decl, ModuleDecl)}
    found: list[Declaration] = []
    excluded = [(data, project.module_name(path)[0], [name for name in wanted if name.encode() in data])
                for path, data in project.excluded_files()]
    beyond = [(data, module, named) for data, module, _, named in project.files_naming(wanted, analysed)]
    for data, module, named in beyond + [entry for entry in excluded if entry[2]]:
        try:
            text = decode_source(data)
        except SourceError:
            text = data.decode("latin-1")  # undecodable: its words still count
        words = word_count(text, named)
        if any(words[name] for name in named):
            found.append(AttributeReads(module, tuple(name for name in named if words[name])))
    return found


def _passed_through(names: set[str], passing: Sequence[PassThrough]) -> set[str]:
    """The functions that return, as it is, what a call of one of these names returned: at any remove."""
    found = set(names)
    grew = True
    while grew:
        more = {decl.caller.rpartition(".")[2] for decl in passing if decl.method in found}
        grew = not more <= found
        found |= more
    return found


def _summaries_of(data: bytes, module: str, is_package: bool, config: Config) -> list[HolderUse | PassThrough]:
    try:
        tree = parse_source(decode_source(data))
    except SourceError:
        return []
    imports = ImportTable.from_statements(walk_statements(tree), module, is_package)
    declared = module_declarations(
        tree, module, imports, config.empty_sentinels, optional_fields=config.optional_fields,
    )
    return [decl for decl in declared if isinstance(decl, (HolderUse, PassThrough))]


def declarations_of(data: bytes, module_name: str, is_package: bool, config: Config) -> list[Declaration]:
    """What a module the run does not analyse declares (a module its imports reach): [] if it cannot be read."""
    try:
        tree = parse_source(decode_source(data))
    except SourceError:
        return []
    imports = ImportTable.from_statements(walk_statements(tree), module_name, is_package)
    # no producers looked for: they matter for the run's own connector callees, which such a module never holds;
    # its tuples of step state are what a caller unpacks, as the run's own module's would be (`tuple_returns`),
    # but what its functions do with a call's result is a caller's, and such a module is never one
    declared = module_declarations(tree, module_name, imports, config.empty_sentinels,
                                   optional_fields=config.optional_fields)
    return [decl for decl in declared if not isinstance(decl, _RUN_ONLY)]


# what only the run's own files declare, dropped from a module read as an import (`declarations_of` does not
# even look for the connector-path calls and stored attributes; `imported_view` has them to drop)
_RUN_ONLY = (HolderUse, PassThrough, ParkedReturn, PathCalls, SelfStore)


def imported_view(declared: Iterable[Declaration]) -> list[Declaration]:
    """`declarations_of` a module, from what `engine.prepare_source` declared of it: without what only the run's
    own files declare (its producers, the calls on its connector paths, what it does with a call's result and
    the attributes it stores), for a process that both analyses a module and reads it as an import (mypy's
    helper) and parses it once. tests/test_binding.py holds the two equal."""
    return [dataclasses.replace(decl, returns_output=False) if isinstance(decl, FunctionDecl) and decl.returns_output
            else decl for decl in declared if not isinstance(decl, _RUN_ONLY)]

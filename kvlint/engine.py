"""The one analysis engine every face calls: bytes in, sites and findings out.

A file goes through: decode -> byte scan (does it mention any configured
name?) -> `ast.parse` (fast; syntax errors positioned as CPython gives them,
the import table, the tree index) -> `ast.parse` of only the units that
mention a configured name (a line map keeps the file's line numbers) ->
one flow analysis -> rule predicates -> `# noqa` -> fixes for the findings
(libcst, imported only then). Broken input becomes a
KVC900/KVC902 finding; nothing here prints, exits or writes.
"""

from __future__ import annotations

import ast
import bisect
import dataclasses
import functools
import os
import queue
import re
import sys
import threading
import traceback
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.config import Config
from kvlint.findings import Finding
from kvlint.fixing.model import line_offsets
from kvlint.byte_scan import distinct_needles, mentions_any
from kvlint.binding.annotations import AnnotationKind, classify_annotation
from kvlint.binding.markers import misplaced_markers
from kvlint.binding.names import ImportTable, first_line, matches, walk_statements
from kvlint.noqa import NoqaLines, is_suppressed
from kvlint.rules import (
    INTERNAL_ERROR, JUDGED_SITE_KINDS, MAYBE_NONE_KINDS, RULES, SYNTAX_ERROR, INEFFECTIVE_MARKER, site_rules,
)
from kvlint.sites import Site, SiteKind, Span
from kvlint.source import (
    SourceError, decode_source, decode_source_as, parse_source, parsed_batches, parses_in_batches, reject_nul,
    split_lines,
)
from kvlint.binding.declarations import (
    Declaration, batch_declarations, declared_exports, module_declarations, producer_facts_wanted, top_level_types,
)
from kvlint.binding.tree_index import TreeIndex, file_index

if TYPE_CHECKING:
    from kvlint.fixing.units import FileFixes
    from kvlint.rules.rule import Rule

MAX_FILE_BYTES = 8 * 2**20  # 16x vLLM's largest file; analysed in linear time (bench/large_file_bench.py)
MAX_FALLBACK_BRACKET_DEPTH = 100
ANALYSIS_STACK_BYTES = 256 * 1024 * 1024  # the flow analysis recurses on expression depth
ANALYSIS_RECURSION_LIMIT = 20_000
EVERYTHING = ("",)  # extra names under which every file and every unit is relevant (fuzzing, corpus runs)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
KEEP_TREE_CHARACTERS = 1 << 14  # `keep_tree`: a file's `ast` tree is kept up to this size (a small file is often
# relevant whole, and then the analysis parses what was parsed already)


@dataclass
class PreparedFile:
    """A file after the cheap stage: decoded, `ast`-parsed, indexed; ready for the flow analysis."""

    display_path: str
    module_name: str
    text: str = ""
    lines: list[str] = field(default_factory=list)
    imports: ImportTable = field(default_factory=ImportTable)
    declarations: list[Declaration] = field(default_factory=list)  # what it adds to the tree index
    segments: list[tuple[int, int, int]] = field(default_factory=list)  # (first, last, parent) of each unit
    relevant: bool = False
    is_package: bool = False
    fallback_error: Finding | None = None  # `ast` refused it; it may be newer syntax (`kvlint.flow.lowering`)
    local_names: tuple[str, ...] = ()  # names that make a unit of this file relevant besides the configured ones
    local_output_classes: tuple[str, ...] = ()  # local names of output classes: relevant where called
    optional_attributes: frozenset[str] = frozenset()  # attributes declared `KVConnectorOutput | None` here
    error: Finding | None = None
    tree: ast.Module | None = None  # `prepare_source(keep_tree=True)`: its `ast` tree, for one analysis to take


@dataclass(frozen=True)
class FileReport:
    """What the engine learnt about one file."""

    display_path: str
    sites: tuple[Site, ...] = ()
    findings: tuple[Finding, ...] = ()
    analysed: bool = False  # run through the flow analysis
    traceback: str = ""  # for KVC902, shown with --verbose

    def without_sites(self) -> FileReport:
        """The report a check sends back (only an audit lists the sites): built, not `dataclasses.replace`d,
        which looks the fields up at each of a run's files (5 us)."""
        return FileReport(self.display_path, (), self.findings, self.analysed, self.traceback) if self.sites else self


def _checked_text(text: str) -> str:
    """Text a host decoded: only the NUL byte check of `decode_source` still applies."""
    reject_nul(text)
    return text[1:] if text.startswith("\ufeff") else text


def declared_optional_attributes(
    statements: Iterable[ast.stmt], imports: ImportTable, payload_classes: tuple[str, ...]
) -> set[str]:
    """Names of attributes annotated `KVConnectorOutput | None` (class body or `self.x:`) among a
    module's statements (`walk_statements`)."""
    names: set[str] = set()
    for node in statements:
        if not isinstance(node, ast.AnnAssign):
            continue
        target = node.target
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            name = target.attr
        elif isinstance(target, ast.Name):
            name = target.id
        else:
            continue
        kind = classify_annotation(node.annotation, imports.resolve_dotted, payload_classes)
        if kind is AnnotationKind.OPTIONAL_PAYLOAD:
            names.add(name)
    return names


def _segments(tree: ast.Module, ranges: list[tuple[int, int, int]] | None = None) -> list[tuple[int, int, int]]:
    """Return (first, last, parent) line ranges of each top-level unit; methods of a
    class are units of their own whose parent is the class header's unit (-1: none).
    `ranges`: those of the module's statements before these (the batches of a large file), extended."""
    ranges = [] if ranges is None else ranges
    for node in tree.body:
        first, last = first_line(node), node.end_lineno or node.lineno
        if isinstance(node, ast.ClassDef) and len(node.body) > 1:
            header = len(ranges)
            ranges.append((first, max(first, first_line(node.body[0]) - 1), -1))
            for member in node.body:
                ranges.append((first_line(member), member.end_lineno or member.lineno, header))
        else:
            ranges.append((first, last, -1))
    return ranges


def prepare_source(
    data: bytes | str,
    display_path: str,
    config: Config,
    module_name: str = "",
    is_package: bool = False,
    extra_names: Iterable[str] = (),
    keep_tree: bool = False,
) -> PreparedFile:
    """The cheap stage: decode, scan, `ast.parse`, import table and index entries.

    `data` is the file's bytes, or text a host already decoded (flake8 gives its
    plugins decoded lines); text is used as it is. `keep_tree`: keep the `ast` tree of a
    small file (`KEEP_TREE_CHARACTERS`) for the analysis, where the whole file is relevant.
    """
    prepared = PreparedFile(display_path, module_name)
    # each once, in the configured order: the runner passes the configured names as extra ones, and this is
    # then the byte scan's key the parent built its probes for before forking the worker
    names = _scan_names(config, extra_names)
    if not mentions_any(data, names):
        return prepared
    if len(data) > MAX_FILE_BYTES:
        message = (
            f"not analysed: {len(data) / 2**20:.1f} MiB is over kvlint's {MAX_FILE_BYTES // 2**20} MiB limit per file"
        )
        prepared.error = Finding(display_path, 1, 0, SYNTAX_ERROR, message, 1, 0)
        return prepared
    try:
        # the text mentions a name where the bytes do, unless they were not UTF-8 (a name is no part of a BOM)
        text, encoding = decode_source_as(data) if isinstance(data, bytes) else (_checked_text(data), "utf-8")
        prepared.text = text
        if encoding not in ("utf-8", "utf-8-sig") and not mentions_any(text, names):
            return prepared
        prepared.relevant = True
        if parses_in_batches(text) and _prepare_in_batches(prepared, text, config):
            return prepared
        tree = parse_source(text)
    except SourceError as exc:
        finding = Finding(display_path, exc.line, exc.column, SYNTAX_ERROR, exc.message, exc.line, exc.column)
        if prepared.relevant and _may_be_newer_syntax(exc.message, prepared.text):
            prepared.fallback_error = finding  # it may be syntax newer than this Python's: libcst may lower it
            prepared.lines = split_lines(prepared.text)
            prepared.module_name, prepared.is_package = module_name, is_package
        else:
            prepared.error = finding
        return prepared
    prepared.lines = split_lines(text)
    statements = walk_statements(tree)
    prepared.imports = ImportTable.from_statements(statements, module_name, is_package)
    prepared.declarations = module_declarations(
        tree, module_name, prepared.imports, config.empty_sentinels, *producer_facts_wanted(text, config),
        config.optional_fields, text, statements,
    )
    _module_names(prepared, config, statements)
    prepared.segments = _segments(tree)
    if keep_tree and len(text) <= KEEP_TREE_CHARACTERS:
        prepared.tree = tree  # nothing above changes it
    return prepared


def _module_names(prepared: PreparedFile, config: Config, statements: Iterable[ast.stmt]) -> None:
    """The names that make a unit of the file relevant besides the configured ones, from its import table
    and its statements (`walk_statements`; only its annotated assignments are read)."""
    optional_attributes = declared_optional_attributes(statements, prepared.imports, config.payload_classes)
    prepared.optional_attributes = frozenset(optional_attributes)
    output_classes = prepared.imports.aliases_of(config.output_classes)
    mentioned = prepared.imports.aliases_of(_scan_names(config, ())) - output_classes
    prepared.local_names = tuple(sorted(mentioned | prepared.optional_attributes))
    prepared.local_output_classes = tuple(sorted(output_classes))


def _prepare_in_batches(prepared: PreparedFile, text: str, config: Config) -> bool:
    """The cheap stage of a large file a batch of top-level statements at a time, so that only one batch's
    `ast` tree is alive (issue 27: memory per finding): a first pass keeps what only the whole module says
    (its imports, annotated assignments, top-level classes and module-level code: `__all__`), a second
    declares each batch, parsed again. What it gives is what one tree gives (`tests/test_linear_time.py`).
    False, having changed nothing, where a batch does not parse alone."""
    imports: list[list[ast.stmt]] = []  # per batch, in `walk_statements`' order
    annotated: list[ast.stmt] = []
    module_level: list[ast.stmt] = []
    classes: set[str] = set()
    segments: list[tuple[int, int, int]] = []
    for batch in parsed_batches(text):
        if batch is None:
            return False
        statements = walk_statements(batch)
        imports.append([node for node in statements if isinstance(node, (ast.Import, ast.ImportFrom))])
        annotated += [node for node in statements if isinstance(node, ast.AnnAssign)]
        module_level += [node for node in batch.body if not isinstance(node, _DEFINITIONS)]
        classes |= top_level_types(batch.body)
        _segments(batch, segments)
        del batch, statements  # not alive while the next batch is parsed
    # `walk_statements` of the whole module takes its last top-level statement first: the batches in reverse
    prepared.imports = ImportTable.from_statements(
        [node for batch_imports in reversed(imports) for node in batch_imports], prepared.module_name,
        prepared.is_package,
    )
    prepared.declarations = batch_declarations(
        (batch for batch in parsed_batches(text) if batch is not None), prepared.module_name, prepared.imports,
        classes, declared_exports(ast.Module(body=module_level, type_ignores=[])), config.empty_sentinels,
        *producer_facts_wanted(text, config), config.optional_fields, text,
    )
    prepared.lines = split_lines(text)
    _module_names(prepared, config, annotated)
    prepared.segments = segments
    return True


_SCAN_NAMES: dict[tuple[int, tuple[str, ...]], tuple[Config, tuple[str, ...]]] = {}


def _scan_names(config: Config, extra_names: Iterable[str]) -> tuple[str, ...]:
    """The configured names and `extra_names`, each once: worked out once per configuration and extra names (a
    configuration is not changed once made; `Config.names` costs 2 us a call, and a file asks twice, with the
    runner's extra names and with none)."""
    extra = extra_names if isinstance(extra_names, tuple) else tuple(extra_names)
    key = (id(config), extra)
    known = _SCAN_NAMES.get(key)
    if known is None:  # (the entry holds its configuration, so no other one takes that id while it is kept)
        if len(_SCAN_NAMES) >= 64:  # a long-lived server makes a configuration per change of its files
            _SCAN_NAMES.clear()
        known = _SCAN_NAMES[key] = (config, tuple(dict.fromkeys((*config.names(), *extra))))
    return known[1]


_NESTING_ERRORS = ("too many nested", "too deeply nested", "too many levels of indentation", "too many statically")


def _may_be_newer_syntax(message: str, text: str) -> bool:
    """Whether to let libcst try a file `ast` rejected: never for nesting limits, which
    libcst's native parser survives worse than CPython (docs/design.md, "Hostile input")."""
    if any(marker in message for marker in _NESTING_ERRORS) or "decode" in message or "NUL" in message:
        return False
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest <= MAX_FALLBACK_BRACKET_DEPTH


def encoding_problem(data: bytes, display_path: str) -> Finding | None:
    """For a file the byte scan skipped: say if it cannot even be decoded (never a silent pass)."""
    if data.isascii() and b"\0" not in data:
        return None
    try:
        decode_source(data)
    except SourceError as exc:
        return Finding(display_path, exc.line, exc.column, SYNTAX_ERROR, exc.message, exc.line, exc.column)
    return None


@dataclass(frozen=True)
class _Relevance:
    """What makes a unit relevant: one of `patterns` matches in it; each match contains one of `words`."""

    patterns: tuple[re.Pattern[str], ...]
    words: tuple[str, ...]  # empty: every unit is relevant (EVERYTHING)

    def __add__(self, other: _Relevance) -> _Relevance:
        return _Relevance(self.patterns + other.patterns, distinct_needles(self.words + other.words))

    def matches(self, text: str) -> bool:
        return any(pattern.search(text) is not None for pattern in self.patterns)


def _relevance(config: Config, extra_names: tuple[str, ...], local_names: Iterable[str] = (),
               local_output_classes: tuple[str, ...] = ()) -> _Relevance:
    """A unit is relevant when it mentions a configured name, or calls an output class.

    Output classes (and the local names a module imports them as) count only
    when called: a function that merely annotates `-> ModelRunnerOutput` holds
    nothing any rule looks at, and vLLM has many of those. The names of a run are
    one pattern, compiled once per process; a file's own names (its aliases of them)
    another, small one: compiling a pattern of every name for each file cost more
    than the search (0.6 ms each, for 14 distinct files' names in a run over vLLM).
    """
    if "" in extra_names:
        return _Relevance((re.compile(""),), ())  # EVERYTHING: every unit is relevant
    relevance = _run_relevance(config, extra_names)
    local = tuple(sorted(set(local_names)))
    if local or local_output_classes:
        relevance += _names_relevance(local, local_output_classes)
    return relevance


@functools.lru_cache(maxsize=32)
def _run_relevance(config: Config, extra_names: tuple[str, ...]) -> _Relevance:
    mentioned = {
        name.rpartition(".")[2]
        for name in (
            *config.optional_fields,
            *config.payload_classes,
            *config.empty_sentinels,
            *config.connector_guards,
            *config.connector_contexts,
            *config.optional_contexts,
            *config.connector_functions,
            *config.payload_optional_fields,  # a unit that only reads a payload set may still misuse it (KVC005)
            *extra_names,
        )
        if name
    }
    called = tuple(name.rpartition(".")[2] for name in config.output_classes if name)
    return _names_relevance(tuple(sorted(mentioned)), called) + _MARKED


_MARKED = _Relevance((re.compile(r"kvlint:\s*connector-path"),), ("kvlint",))  # `# kvlint: connector-path`


@functools.lru_cache(maxsize=256)
def _names_relevance(mentioned: tuple[str, ...], called: tuple[str, ...]) -> _Relevance:
    """A unit mentions one of `mentioned` (as a word), or calls one of `called`."""
    alternatives = []
    if mentioned:
        alternatives.append(rf"\b(?:{'|'.join(map(re.escape, sorted(set(mentioned))))})\b")
    if called:
        alternatives.append(rf"\b(?:{'|'.join(map(re.escape, sorted(set(called))))})\s*\(")
    words = distinct_needles(sorted({*mentioned, *called}))  # a line with `_get_kv_connector_output` has both
    return _Relevance((re.compile("|".join(alternatives)),) if alternatives else (), words)


def _lines_mentioning(text: str, line_starts: list[int], words: Iterable[str]) -> list[int]:
    """The sorted numbers of the lines where any of `words` occurs (`str.find` is
    memchr-fast where the relevance regex crawls: 1.7 MB of vLLM in 2 ms, not 50)."""
    found: set[int] = set()
    for word in words:
        position = text.find(word)
        while position >= 0:
            found.add(bisect.bisect_right(line_starts, position))
            position = text.find(word, position + 1)
    return sorted(found)


def reduced_text(prepared: PreparedFile, config: Config, extra_names: Sequence[str] = ()) -> tuple[str, list[int]]:
    """Keep only the top-level units that mention a configured name.

    Returns the compact text and, for each of its lines, the original line
    number: the analysis then parses a fraction of the file (docs/design.md, "Why it is fast") and
    positions are mapped back at the edge.
    """
    relevance = _relevance(config, tuple(sorted(set(extra_names))), prepared.local_names, prepared.local_output_classes)
    lines = prepared.lines
    keep = [False] * (len(lines) + 2)
    segments = prepared.segments
    lines_are_text = len(prepared.text) == sum(map(len, lines))  # the text's own lines (`split_lines`)
    if relevance.words:
        line_starts = line_offsets(lines)
        mentioning = _lines_mentioning(prepared.text if lines_are_text else "".join(lines), line_starts,
                                       relevance.words)
    else:
        mentioning = list(range(1, len(lines) + 1))

    def is_relevant(first: int, last: int) -> bool:
        if bisect.bisect_left(mentioning, first) == bisect.bisect_right(mentioning, last):
            return False  # no configured word at all: the regex cannot match
        return relevance.matches("".join(lines[first - 1 : last]))

    relevant = [is_relevant(first, last) for first, last, _ in segments]
    for number, (first, last, parent) in enumerate(segments):
        if not (relevant[number] or (parent >= 0 and relevant[parent])):
            continue  # a class whose header mentions a name is kept whole, so its body is never empty
        ranges = [(first, last)]
        if parent >= 0:
            ranges.append(segments[parent][:2])
        for start, end in ranges:
            for line in range(start, end + 1):
                keep[line] = True
    kept_lines = [number for number in range(1, len(lines) + 1) if keep[number]]
    if lines_are_text and len(kept_lines) == len(lines):
        text = prepared.text  # every line kept (a small file, often): the text as it is, not joined again
    else:
        text = "".join(lines[number - 1] for number in kept_lines)
    if text and not text.endswith(("\n", "\r")):
        text += "\n"
    return text, kept_lines


def unit_relevant(prepared: PreparedFile, config: Config, extra_names: Sequence[str], text: str) -> bool:
    """Whether `reduced_text` keeps a unit of this text for itself (a class's member is also kept when its
    class header is relevant)."""
    relevance = _relevance(config, tuple(sorted(set(extra_names))), prepared.local_names, prepared.local_output_classes)
    if relevance.words and not any(word in text for word in relevance.words):
        return False
    return relevance.matches(text)


def analyse_prepared(
    prepared: PreparedFile,
    config: Config,
    index: TreeIndex,
    extra_names: Sequence[str] = (),
    suppress: bool = True,
    fixes: bool | Collection[str] = True,
    sites: bool = True,
) -> FileReport:
    """The costly stage: the flow analysis over the relevant units (`_sites`), then `judge`.

    `extra_names` make more units relevant (the runner passes the tree index's
    Optional-returning function names, so their call sites are analysed).
    `suppress=False` keeps what `# noqa`, select/ignore and per-file-ignores would
    drop, for a host that applies its own (flake8); the test-code policy still applies.
    `fixes=False` builds no fix, for a host that shows none (flake8, mypy): libcst is then never imported; a
    collection of codes builds the fixes of those rules' findings alone (what a report shows, `kvlint.cli.check`).
    `sites=False`, for a report of findings alone (`kvlint check`): the analysis records only the sites a rule may
    flag (of the kinds `rules.JUDGED_SITE_KINDS`, not proven non-None where only that is flagged:
    `rules.MAYBE_NONE_KINDS`), and the report holds only those.
    """
    if not suppress:
        config = dataclasses.replace(config, select=(), ignore=(), per_file_ignores=())
    if prepared.error is not None:
        return FileReport(
            prepared.display_path, findings=tuple(_unsuppressed([prepared.error], prepared, config, suppress))
        )
    if not prepared.relevant:
        return FileReport(prepared.display_path)
    try:
        names = (*extra_names, *index.candidate_names(), *_reexported_names(prepared, config, index))
        kinds = None if sites else JUDGED_SITE_KINDS
        found, markers, fix_context = _run_with_deep_stack(lambda: _sites(prepared, config, index, names, kinds))
    except SourceError as exc:
        finding = Finding(prepared.display_path, exc.line, exc.column, SYNTAX_ERROR, exc.message, exc.line, exc.column)
        return FileReport(prepared.display_path, findings=tuple(_unsuppressed([finding], prepared, config, suppress)))
    except Exception as exc:  # noqa: BLE001 - a kvlint bug must not stop the run
        message = f"internal error analysing this file: {type(exc).__name__}: {exc}"
        message = " ".join(message.split())[:300] + " (run with --verbose for the traceback)"
        finding = Finding(prepared.display_path, 1, 0, INTERNAL_ERROR, message, 1, 0)
        return FileReport(prepared.display_path, findings=(finding,), traceback=traceback.format_exc())
    codes = None if isinstance(fixes, bool) else fixes
    return judge(prepared, config, found, markers, fix_context if fixes else None, suppress, codes)


def _reexported_names(prepared: PreparedFile, config: Config, index: TreeIndex) -> tuple[str, ...]:
    """The names this module's imports bind to a configured name through another module's re-export under a
    name of its own (`from vllm_plugin.compat import EMPTY_OUTPUT`, which `compat` binds to vLLM's sentinel):
    a unit that mentions one is relevant, as one mentioning the configured name is."""
    configured = _scan_names(config, ())
    return tuple(sorted(
        name for name, target in prepared.imports.bindings.items()
        if not matches(target, configured) and matches(index.canonical(target), configured)
    ))


def judge(
    prepared: PreparedFile, config: Config, sites: Sequence[Site],
    markers: dict[Span, tuple[str, tuple[str, ...], str]], fix_context: Callable[[], FileFixes] | None,
    suppress: bool = True, fix_codes: Collection[str] | None = None,
) -> FileReport:
    """The last step: the rules' findings from the analysed sites and the connector-path markers, what
    suppression keeps of them, and their fixes (`fix_context` None: none are built; `fix_codes`: only those
    rules' are)."""
    judged = {finding: (site, rule) for finding, site, rule in _findings(sites, prepared)}
    marker_rule = RULES[INEFFECTIVE_MARKER]
    judged.update({finding: (None, marker_rule) for finding in _marker_findings(markers, prepared, config)})
    kept = _unsuppressed(judged, prepared, config, suppress)
    if fix_context is not None and any(_fixed_here(finding, judged, fix_codes) for finding in kept):
        kept = _run_with_deep_stack(lambda: _with_fixes(kept, judged, fix_context, fix_codes))
    return FileReport(prepared.display_path, tuple(sites), tuple(kept), analysed=True)


def _fixed_here(finding: Finding, judged: dict, fix_codes: Collection[str] | None) -> bool:  # type: ignore[type-arg]
    """Whether this run builds the finding's fix: its rule has one, and the run wants that rule's."""
    return judged[finding][1].fix is not None and (fix_codes is None or finding.code in fix_codes)


def _with_fixes(
    findings: list[Finding], judged: dict, file_fixes: Callable[[], FileFixes],  # type: ignore[type-arg]
    fix_codes: Collection[str] | None = None,
) -> list[Finding]:
    """Ask each finding's rule for its fix (only findings are asked: a clean file never builds one), in the
    context of the top-level statement it is in (`kvlint.fixing.units`); of `fix_codes`' rules alone when given.
    """
    from kvlint.fixing.context import NoFix
    from kvlint.fixing.units import CannotParse

    fixes = file_fixes()
    invariants_at: dict[object, set[str]] = {}
    for finding in findings:
        site, rule = judged[finding]
        if rule.fix_rewrites_return and site.span is not None:
            invariants_at.setdefault(site.span, set()).add(site.invariant)
    fixes.shared_returns = {span for span, names in invariants_at.items() if len(names) > 1}  # type: ignore[misc]
    fixed = []
    try:
        for finding in findings:
            site, rule = judged[finding]
            if rule.fix is None or not _fixed_here(finding, judged, fix_codes):
                fixed.append(finding)
                continue
            context = fixes.context_at(finding.line)
            try:
                fixed.append(dataclasses.replace(finding, fix=rule.fix(site, context)))
            except NoFix as reason:
                fixed.append(dataclasses.replace(finding, no_fix=str(reason)))
            except Exception as exc:  # noqa: BLE001 - a fix builder's bug costs the fix, never the finding
                reason = f"kvlint failed to build the fix ({type(exc).__name__}: {exc}); please report this"
                fixed.append(dataclasses.replace(finding, no_fix=" ".join(reason.split())[:300]))
        fixes.finish()
    except CannotParse as exc:  # libcst refusing what `ast` parsed costs the fixes, not the findings
        reason = f"kvlint cannot build fixes here: libcst cannot parse the file ({exc})"
        return [dataclasses.replace(f, no_fix=reason) if _fixed_here(f, judged, fix_codes) else f for f in findings]
    return fixed


def _sites(
    prepared: PreparedFile, config: Config, index: TreeIndex, names: Sequence[str],
    kinds: frozenset[SiteKind] | None = None,
) -> tuple[list[Site], dict[Span, tuple[str, tuple[str, ...], str]], Callable[[], FileFixes]]:
    """The file's sites (given `kinds`, only those a rule may flag: `analyse_prepared`), its markers that name no
    invariant (KVC101), and how to build the context its fixes are made in (only a file with findings does)."""
    from kvlint.flow import FlowAnalysis
    from kvlint.flow.source import SourceText, parsed_batches

    batches: Iterable[ast.Module] | None = None
    if prepared.fallback_error is not None:
        from kvlint.flow.lowering import lower_newer_syntax

        text, line_map = prepared.text, list(range(1, len(prepared.lines) + 2))
        parsed = lower_newer_syntax(text)  # the file's characters on each line, not always its bytes
        try:
            module = parse_source(parsed) if parsed is not None else None
        except SourceError:
            module = None
        if module is None:  # what `ast` said of the file as written, not of a lowering
            error = prepared.fallback_error
            raise SourceError(error.message, error.line, error.column)
        prepared.imports = ImportTable.from_ast(module, prepared.module_name, prepared.is_package)
        batches = [module]
    else:
        text, line_map = reduced_text(prepared, config, names)
        kept, prepared.tree = prepared.tree, None  # one analysis takes it: the flow analysis may annotate it
        parsed = text
        if kept is not None and text == prepared.text:  # a small file: the tree its preparation parsed
            batches = [kept]
    # the file's own lines where the analysis parses the file's text (`reduced_text` kept every line)
    source = SourceText(parsed, line_map, prepared.lines if parsed is prepared.text else None)

    def analysis() -> FlowAnalysis:
        return FlowAnalysis(source, prepared.imports, index, config, prepared.module_name, prepared.declarations,
                            kinds, MAYBE_NONE_KINDS if kinds is not None else frozenset())

    if batches is None:  # a batch of top-level units at a time (issue 27: memory per finding)
        starts = {first for first, _, parent in prepared.segments if parent < 0}  # the top-level statements'
        unit_starts = [number for number, line in enumerate(line_map, 1) if line in starts]
        try:
            flow = analysis()
            sites = flow.run(parsed_batches(source.lines, unit_starts))
        except SourceError:  # a batch that does not parse alone: the text whole, as CPython says of it
            flow = analysis()
            sites = flow.run([parse_source(text)])
    else:
        flow = analysis()
        sites = flow.run(batches)
    return sites, flow.unknown_markers, file_fixes(prepared, config, index, text, line_map)


def unit_sites(
    prepared: PreparedFile, config: Config, index: TreeIndex, text: str, line_map: Sequence[int]
) -> tuple[list[Site], dict[Span, tuple[str, tuple[str, ...], str]]]:
    """The flow analysis of some of the file's top-level units, with the module's facts of `prepared`: `text`
    is those units' lines (`line_map`: the file's line of each), as `reduced_text` gives them, perhaps with a
    unit's body replaced by a stand-in (the editor's re-analysis of one changed function, docs/server.md).
    Returns the sites and the markers that name no invariant; raises `SourceError` (the text does not parse,
    or is too deep) and whatever else the analysis raises."""
    from kvlint.flow import FlowAnalysis
    from kvlint.flow.source import SourceText

    def work() -> tuple[list[Site], dict[Span, tuple[str, tuple[str, ...], str]]]:
        analysis = FlowAnalysis(
            SourceText(text, line_map), prepared.imports, index, config, prepared.module_name, prepared.declarations
        )
        return analysis.run([parse_source(text)]), analysis.unknown_markers

    return _run_with_deep_stack(work)  # type: ignore[no-any-return]


def file_fixes(
    prepared: PreparedFile, config: Config, index: TreeIndex, text: str, line_map: Sequence[int]
) -> Callable[[], FileFixes]:
    """How to build the context the fixes of the file's findings are made in: libcst over the text the flow
    analysis read (`reduced_text`'s), so that fixes edit the code as written; only a file with a finding
    pays for it (`judge`)."""

    def fix_context() -> FileFixes:
        from kvlint.fixing.units import FileFixes, unit_bounds

        segments = prepared.segments if prepared.fallback_error is None else ()
        bounds = unit_bounds(text, line_map, prepared.lines, segments)
        return FileFixes(text, line_map, bounds, prepared.lines, prepared.segments, prepared.imports, index, config,
                         prepared.module_name)

    return fix_context


def _marker_findings(
    markers: dict[Span, tuple[str, tuple[str, ...], str]], prepared: PreparedFile, config: Config
) -> Iterable[Finding]:
    """KVC101 for each marker that names what is no invariant of `config`, and for each that is on no `def`'s
    header (`kvlint.binding.markers`)."""
    from kvlint.rules.kvc101_ineffective_path_marker import misplaced_message, unknown_invariants_message

    configured = [invariant.name for invariant in config.invariants.invariants]
    for span, (marker, unknown, function) in markers.items():
        message = unknown_invariants_message(marker, unknown, configured)
        yield Finding(prepared.display_path, span.line, span.column, INEFFECTIVE_MARKER, message,
                      span.end_line, span.end_column, function=function, source_line=_source_line(prepared, span.line))
    for line, column, end_column, marker in misplaced_markers(prepared.text):
        message = misplaced_message(marker)
        yield Finding(prepared.display_path, line, column, INEFFECTIVE_MARKER, message, line, end_column,
                      source_line=_source_line(prepared, line))


def _source_line(prepared: PreparedFile, line: int) -> str:
    """The physical line a finding is on, without its line break (noqa and baselines read it)."""
    return prepared.lines[line - 1].rstrip("\r\n") if 0 < line <= len(prepared.lines) else ""


class _AnalysisThread:
    """One thread that runs the work handed to it, one piece at a time, and hands back what it returned or
    raised (what `concurrent.futures.ThreadPoolExecutor(max_workers=1)` did, without importing `concurrent` and
    `logging` into every run: 15 M instructions of a run's start-up)."""

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[tuple[Callable[[], object], queue.SimpleQueue[tuple[bool, object]]]] = (
            queue.SimpleQueue()
        )
        thread = threading.Thread(target=self._serve, name="kvlint-analysis", daemon=True)
        thread.start()  # RuntimeError where no thread can start
        self.ident = thread.ident or 0

    def _serve(self) -> None:
        while True:
            work, answer = self._work.get()
            try:
                answer.put((True, work()))
            except BaseException as exc:  # noqa: BLE001 - raised again in the thread that handed the work over
                answer.put((False, exc))
            del work, answer

    def run(self, work: Callable[[], object]) -> object:
        answer: queue.SimpleQueue[tuple[bool, object]] = queue.SimpleQueue()
        self._work.put((work, answer))
        returned, value = answer.get()
        if not returned:
            raise value  # type: ignore[misc]
        return value


_analysis_executor: _AnalysisThread | None = None
_analysis_thread = 0  # the analysis thread's `threading.get_ident()` (0: none yet)


def _forget_analysis_thread() -> None:
    global _analysis_executor, _analysis_thread
    _analysis_executor, _analysis_thread = None, 0  # a forked child has no copy of the parent's threads


os.register_at_fork(after_in_child=_forget_analysis_thread)


def _shallow(work):  # type: ignore[no-untyped-def]
    """Run `work` on this thread's ordinary stack: deep code is a RecursionError long before a crash."""
    try:
        return work()
    except RecursionError:
        raise SourceError("cannot parse: too deeply nested for kvlint to analyse") from None


def _run_with_deep_stack(work):  # type: ignore[no-untyped-def]
    """Run `work` on this process's analysis thread, whose large stack turns deep code
    into a RecursionError (reported as KVC900) instead of a crash of the process; on that thread already
    (`on_analysis_thread`), right there."""
    global _analysis_executor, _analysis_thread
    if _analysis_thread and threading.get_ident() == _analysis_thread:
        try:
            return work()
        except RecursionError:
            raise SourceError("cannot parse: too deeply nested for kvlint to analyse") from None
    if _analysis_executor is None:
        previous = threading.stack_size()
        threading.stack_size(ANALYSIS_STACK_BYTES)
        try:
            executor = _AnalysisThread()  # started while the size is set
            _analysis_thread = executor.ident
            _analysis_executor = executor
        except RuntimeError:  # no thread can start (a process limit): here, with the ordinary recursion limit
            return _shallow(work)
        finally:
            threading.stack_size(previous)

    def guarded():  # type: ignore[no-untyped-def]
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, ANALYSIS_RECURSION_LIMIT))
        try:
            return work()
        finally:
            sys.setrecursionlimit(limit)

    try:
        return _analysis_executor.run(guarded)
    except RecursionError:
        raise SourceError("cannot parse: too deeply nested for kvlint to analyse") from None


def on_analysis_thread(work):  # type: ignore[no-untyped-def]
    """Run `work` (many files' analyses, say) on the analysis thread, once: each analysis in it then runs
    there directly, not handed to the thread and back one at a time (25 us a file)."""
    return _run_with_deep_stack(work)


def _findings(sites: Iterable[Site], prepared: PreparedFile) -> Iterable[tuple[Finding, Site, Rule]]:
    rules = list(site_rules())
    for site in sites:
        for rule in rules:
            message = rule.check(site) if rule.check else None
            if message is None:
                continue
            span = site.span
            yield Finding(
                prepared.display_path,
                span.line,
                span.column,
                rule.code,
                message,
                span.end_line,
                span.end_column,
                function=site.function,
                source_line=_source_line(prepared, span.line),
                invariant=site.invariant,
                resolved=site.resolved,
            ), site, rule


def _unsuppressed(
    findings: Iterable[Finding], prepared: PreparedFile, config: Config, noqa: bool = True
) -> list[Finding]:
    """Drop what `# noqa`, select/ignore, per-file-ignores and the test-code policy silence.

    The test-code policy (`test-files` / `test-ignore`) is kvlint's own configuration: it
    applies even with `noqa=False` (a host such as flake8 applies the rest itself), and
    `select` does not re-enable what it silences.
    """
    ignored: tuple[str, ...] | None = None  # asked at the first finding: a clean file never matches its path
    noqa_lines: NoqaLines | None = None
    has_noqa = noqa and bool(prepared.lines) and "noqa" in prepared.text.lower()  # once per file, not per finding
    kept = []
    for finding in findings:
        if not config.is_enabled(finding.code):
            continue
        if ignored is None:
            ignored = tuple(config.silenced_for(prepared.display_path))  # a `Path` would be built for nothing
        if finding.code.startswith(ignored):
            continue
        if has_noqa:
            if noqa_lines is None:
                noqa_lines = NoqaLines(prepared.lines)
            if is_suppressed(noqa_lines.text(finding.line), finding.code):
                continue
        kept.append(finding)
    return sorted(set(kept))


def analyse_source(
    source: bytes | str,
    display_path: str = "<stdin>",
    config: Config | None = None,
    index: TreeIndex | None = None,
    module_name: str = "",
    is_package: bool = False,
    fixes: bool = True,
    imports_from: Path | None = None,
) -> FileReport:
    """Analyse one file on its own: the index is what the file itself shows unless one is given, and what its
    imports reach when `imports_from` says where it lives (`kvlint.binding.module_resolution`)."""
    config = config or Config()
    prepared = prepare_source(source, display_path, config, module_name, is_package)
    if index is None:
        declared = list(prepared.declarations)
        if imports_from is not None and prepared.relevant:
            from kvlint.binding.module_resolution import imported_declarations_for

            declared += imported_declarations_for(declared, config, [imports_from])
        index = file_index(declared, [prepared.text] if prepared.relevant else [], config.payload_classes)
    return analyse_prepared(prepared, config, index, fixes=fixes)

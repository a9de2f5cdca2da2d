"""Re-analyse only the function an edit changed, when the edit changes no declaration (docs/server.md, "Speed").

The last analysis of an open document is kept by top-level unit (a top-level `def` or `class`, a method
of a class: `PreparedFile.segments`), with the sites the flow analysis found and the module's facts
(imports, declarations, the tree index it was analysed against). When the next text differs from it
only inside the body of one function unit, and that function declares what it declared before (its
fingerprint, below), the engine analyses that function alone, with every other relevant unit of the
file as context (module-level statements and class bodies whole, other functions reduced to their
headers: what the enclosing scope evaluates of them), the sites of the untouched units move by the
edit's line delta, and `engine.judge` makes the findings of the whole file, as a full analysis would.

A function's fingerprint is what it gives the declaration index: the declarations of a module made of
it alone (its function and nested functions, their summaries, the calls it makes on connector paths
and the imported functions it calls), and, conservatively, the text of its imports, its annotated
assignments and its assignments to attributes of `self` (what its class's declaration reads of it).
Anything else, and anything unsure, is a full analysis: an edit in a header, a class body or
module-level code, more than one unit touched, a unit that no longer parses alone, a change in the
names the file mentions, a tree index or configuration that changed, or the old sites disagreeing
with the re-analysed context.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import re
import tokenize
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from kvlint.binding.declarations import ClassDecl, module_declarations, producer_facts_wanted
from kvlint.binding.names import first_line, walk_statements
from kvlint.binding.summaries import DYNAMIC_ACCESS, HolderUse, only_stored_in
from kvlint.binding.tree_index import TreeIndex
from kvlint.binding.words import word_mentions
from kvlint.byte_scan import mentions_any
from kvlint.config import Config
from kvlint.findings import Finding
from kvlint.engine import (
    FileReport,
    PreparedFile,
    file_fixes,
    judge,
    reduced_text,
    unit_relevant,
    unit_sites,
)
from kvlint.sites import Site, Span

Markers = dict[Span, tuple[str, tuple[str, ...], str]]
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_CLASS_LINE = re.compile(r"[ \t]*class[ \t]+(\w+)")
_WORD = re.compile(r"\w+")
_LAYOUT = (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER, tokenize.NEWLINE)
_METHOD_WRAPPER = "if 1:\n"  # a method's text parses alone inside a block: its lines are then one later


@dataclass(frozen=True)
class Shape:
    """What one unit's text is: a function (with where its header ends) or something else."""

    function: bool
    name: str = ""
    is_async: bool = False
    header_end: int = 0  # relative to the unit's first line (1): the header's last line; 0 for a one-liner
    end: int = 0  # relative: the statement's last line
    body_indent: str = ""


NOT_A_FUNCTION = Shape(False)


@dataclass
class Facts:
    """What a document's analysis gives every later re-analysis of it while no declaration changes."""

    config: Config
    project_state: tuple[object, object, object]  # the folder's index and files, by identity, when analysed
    index: TreeIndex
    extra_names: tuple[str, ...]
    names: tuple[str, ...]  # the names that make a unit relevant (`analyse_prepared`'s)
    # the index's connector callee candidates and stored-only attributes: their mentions decide it
    callee_names: tuple[str, ...]
    scope: object  # `declarations.producer_facts_wanted` of the text
    top_classes: frozenset[str]  # the classes defined at the module's top level (how its names resolve)
    fingerprints: dict[tuple[str, str], object] = field(default_factory=dict)  # (unit text, class) ->


@dataclass(frozen=True)
class UnitState:
    """A document's last analysis, kept for the next one (`reanalyse`)."""

    text: str
    prepared: PreparedFile
    kept: frozenset[int]  # the units (numbers in `prepared.segments`) the flow analysis read
    sites: tuple[Site, ...]
    markers: Markers
    facts: Facts
    shapes: dict[tuple[str, bool], Shape]  # (unit text, is a method) -> its shape


def with_fixes(state: UnitState) -> tuple[Finding, ...]:
    """The findings of the analysis `state` keeps, with their fixes: what `engine.judge` gives them, in the
    text a full analysis reads (the server builds them only when a code action asks)."""
    facts = state.facts
    prepared, config, index = state.prepared, facts.config, facts.index
    text, line_map = reduced_text(prepared, config, facts.names)
    fix_context = file_fixes(prepared, config, index, text, line_map)
    return judge(prepared, config, state.sites, state.markers, fix_context).findings


def project_state(project: object) -> tuple[object, object, object]:
    """What decides the index a buffer is analysed against, by identity (`ProjectIndex.index_for`)."""
    if project is None:
        return (None, None, None)
    return (project, getattr(project, "index", None), getattr(project, "files", None))


def full_analysis(
    prepared: PreparedFile, config: Config, index: TreeIndex, extra_names: Sequence[str], project: object,
) -> tuple[FileReport, UnitState] | None:
    """`engine.analyse_prepared` of a file `ast` parsed, keeping what a later re-analysis needs; None when the
    engine's own path must say what went wrong (it raised), or the file is not one this applies to."""
    if prepared.error is not None or prepared.fallback_error is not None or not prepared.relevant:
        return None
    names = (*extra_names, *index.candidate_names())
    try:
        text, line_map = reduced_text(prepared, config, names)
        sites, markers = unit_sites(prepared, config, index, text, line_map)
    except Exception:  # noqa: BLE001 - `analyse_prepared` reports it as `kvlint check` does
        return None
    report = judge(prepared, config, sites, markers, None)  # fixes when a code action asks (`with_fixes`)
    facts = Facts(
        config, project_state(project), index, tuple(extra_names), names, index.counted_names(),
        producer_facts_wanted(prepared.text, config), _top_classes(prepared),
    )
    read = set(line_map)
    kept = frozenset(number for number, (first, _, _) in enumerate(prepared.segments) if first in read)
    return report, UnitState(prepared.text, prepared, kept, tuple(sites), dict(markers), facts, {})


@dataclass(frozen=True)
class _Edit:
    """Where the text changed: inside the body of unit `number`, old lines `first..last` now `first..new_last`
    (the unit's statement), `delta` lines more below it."""

    number: int
    first: int
    last: int
    new_last: int
    parent: int
    delta: int
    old_text: str
    new_text: str
    node: ast.FunctionDef | ast.AsyncFunctionDef


def reanalyse(
    state: UnitState, text: str, lines: list[str], config: Config, project: object
) -> tuple[FileReport, UnitState] | None:
    """The analysis of `text` from the last one, when only one function's body changed and none of its
    declarations; None when a full analysis is due."""
    facts = state.facts
    moved = any(now is not then for now, then in zip(project_state(project), facts.project_state))
    if config != facts.config or moved:
        return None  # another configuration, or the folder's index changed (by identity: never compared)
    if text == state.text:  # back to the text analysed last (a syntax error typed and mended since)
        return judge(state.prepared, config, state.sites, state.markers, None), state
    shapes = dict(state.shapes)
    edit = _locate(state, lines, shapes)
    if edit is None or not _same_declarations(state, edit, text, config):
        return None
    old = state.prepared
    number, first, delta = edit.number, edit.first, edit.delta
    segments = [
        *old.segments[:number],
        (first, edit.new_last, edit.parent),
        *((f + delta, l + delta, p) for f, l, p in old.segments[number + 1 :]),
    ]
    prepared = dataclasses.replace(old, text=text, lines=lines, segments=segments)
    kept = _kept(state, prepared, edit, config)
    index = facts.index
    analysed = number in kept or number in state.kept
    stand_ins: dict[int, Shape] = {}  # kept functions but the edited one: analysed as their headers only
    functions: list[tuple[int, int]] = []  # the lines of every kept function unit
    for unit in sorted(kept):
        u_first, u_last, u_parent = segments[unit]
        if unit == number:
            functions.append((u_first, u_last))
            continue
        shape = _shape("".join(lines[u_first - 1 : u_last]), u_parent >= 0, shapes)
        if shape.function:
            functions.append((u_first, u_last))
            if shape.header_end:
                stand_ins[unit] = shape
    sites: list[Site] = []
    markers: Markers = {}
    if analysed:
        try:
            mini_text, mini_map = _context_text(lines, segments, kept, stand_ins)
            sites, markers = unit_sites(prepared, config, index, mini_text, mini_map)
        except Exception:  # noqa: BLE001 - a full analysis says what is wrong, as `kvlint check` would
            return None
    last, new_last = edit.last, edit.new_last
    kept_old: list[Site] = []
    for site in state.sites:
        span = site.span
        if span.line < first <= span.end_line:
            return None  # a site around the unit: nothing the incremental path knows how to move
        if first <= span.line <= last:
            continue
        kept_old.append(_shifted(site, delta) if span.line > last and delta else site)
    if analysed:
        outside = [site for site in sites if not _in_ranges(site.span, functions)]
        before = [site for site in kept_old if not _in_ranges(site.span, functions)]
        if sorted(outside, key=_key) != sorted(before, key=_key):
            return None  # the unit's change reached the module or a class body (a value attached there)
    merged = sorted([*kept_old, *(s for s in sites if first <= s.span.line <= new_last)], key=_order)
    merged_markers: Markers = {}
    for span, marker in state.markers.items():
        if not first <= span.line <= last:
            merged_markers[_moved(span, delta) if span.line > last else span] = marker
    merged_markers.update((span, marker) for span, marker in markers.items() if first <= span.line <= new_last)

    report = judge(prepared, config, merged, merged_markers, None)
    used = {(edit.new_text, edit.parent >= 0)} | {
        ("".join(lines[segments[unit][0] - 1 : segments[unit][1]]), segments[unit][2] >= 0) for unit in kept
    }
    facts.fingerprints = {key: value for key, value in facts.fingerprints.items() if key[0] == edit.new_text}
    return report, UnitState(text, prepared, kept, tuple(merged), merged_markers, facts,
                             {key: shape for key, shape in shapes.items() if key in used})


def _unit_of_change(old: PreparedFile, lines: list[str]) -> tuple[int, int, int, int] | None:
    """The one top-level unit (or method) of the old text that a change to these lines lies in: its number in
    `old.segments`, the first changed line, the change in the number of lines, and the unit's last old line
    with the comments and blank lines up to the next unit; None when the change reaches another unit."""
    change = changed_lines(old.lines, lines)
    if change is None:
        return None
    first_changed, last_changed, _ = change
    segments = old.segments
    number = _unit_before(segments, first_changed - 1)
    if number is None:
        return None
    extent = segments[number + 1][0] - 1 if number + 1 < len(segments) else len(old.lines)
    if last_changed > extent:
        return None  # the change reaches the next unit
    return number, first_changed, len(lines) - len(old.lines), extent


def _changed_body(
    state: UnitState, lines: list[str], shapes: dict[tuple[str, bool], Shape]
) -> tuple[int, int, int, int, int, int, str, Shape] | None:
    """Where a change to these lines lies in the body of one function unit, not in its header: the unit's
    number, first and last line and parent (`PreparedFile.segments`), the change in the number of lines, its
    last old line and its old text with the comments and blank lines up to the next unit (`_unit_of_change`),
    and its old shape; None when it is not so (not a function, a one-liner, its header changed)."""
    old = state.prepared
    unit = _unit_of_change(old, lines)
    if unit is None:
        return None
    number, first_changed, delta, extent = unit
    first, last, parent = old.segments[number]
    old_text = "".join(old.lines[first - 1 : extent])
    old_shape = _shape(old_text, parent >= 0, shapes)
    if not old_shape.function or not old_shape.header_end or first_changed <= first - 1 + old_shape.header_end:
        return None
    return number, first, last, parent, delta, extent, old_text, old_shape


def _locate(state: UnitState, lines: list[str], shapes: dict[tuple[str, bool], Shape]) -> _Edit | None:
    """The one function unit whose body the change lies in, parsed anew; None when it is not so."""
    body = _changed_body(state, lines, shapes)
    if body is None:
        return None
    number, first, last, parent, delta, extent, old_text, old_shape = body
    in_class = parent >= 0
    new_text = "".join(lines[first - 1 : extent + delta])
    node = _parse_unit(new_text, in_class)
    if not isinstance(node, _FUNCTIONS) or node.name != old_shape.name \
            or isinstance(node, ast.AsyncFunctionDef) != old_shape.is_async:
        return None
    shape = shapes[(new_text, in_class)] = _shape_of(node, new_text, in_class)
    if not shape.header_end:
        return None
    return _Edit(number, first, last, first - 1 + shape.end, parent, delta, old_text, new_text, node)


def unparsable_unit(state: UnitState, lines: list[str]) -> tuple[int, int, str] | None:
    """Where a change made one function unit's body unparsable, when that is all it did: the unit's new
    lines (first, last) and its text as it parses alone (a method's inside a block); None otherwise.

    The text is a whole: every bracket, string and continuation it opens it closes, and it does not end
    with a decorator, so whatever parses the file parses it in its place as a run of statements, and what
    cannot parse it cannot parse the file (the server then spares asking libcst about the whole file,
    `kvlint.flow.lowering`, when `ast`'s error lies in it)."""
    body = _changed_body(state, lines, dict(state.shapes))
    if body is None:
        return None
    _, first, _, parent, delta, extent, _, _ = body
    in_class = parent >= 0
    new_lines = lines[first - 1 : extent + delta]
    text = "".join(new_lines)
    if _parse_unit(text, in_class) is not None or not _is_whole(text):
        return None
    return first, extent + delta, _METHOD_WRAPPER + text if in_class else text


def _is_whole(text: str) -> bool:
    """The text tokenizes to its end (no bracket, string or continuation left open), and its last logical line
    is no decorator."""
    current = completed = ""  # the first token of the logical line being read, and of the last one read
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.NEWLINE:
                completed, current = current, ""
            elif token.type not in _LAYOUT and not current:
                current = token.string
    except (tokenize.TokenError, SyntaxError):
        return False
    return completed != "@"


def _same_declarations(state: UnitState, edit: _Edit, text: str, config: Config) -> bool:
    """Whether the new text declares what the old one did: the edited function's fingerprint, the names the
    text mentions, and the line numbers declarations below it hold."""
    facts, old = state.facts, state.prepared
    if not mentions_any(text, config.names()) or producer_facts_wanted(text, config) != facts.scope:
        return False
    if edit.delta and any(isinstance(d, HolderUse) and d.line > edit.last for d in old.declarations):
        return False  # a declaration below holds a line number, which moves
    in_class = edit.parent >= 0
    class_name = _class_name(old.lines, *old.segments[edit.parent][:2]) if in_class else ""
    if in_class and not class_name:
        return False
    before = _fingerprint(edit.old_text, None, class_name, in_class, old, facts)
    if before != _fingerprint(edit.new_text, edit.node, class_name, in_class, old, facts):
        return False
    if not _same_stored_only(state.text, text, edit):
        return False
    callees = facts.callee_names  # one mention more or less of one can change the index (connector callees...)
    return not callees or word_mentions(edit.old_text, callees) == word_mentions(edit.new_text, callees)


def _same_stored_only(old_text: str, new_text: str, edit: _Edit) -> bool:
    """Whether the attributes the edit mentions more or less often are stored only (`SelfStore`) in the new
    text as in the old: a read added or taken away elsewhere in the file changes what it declares."""
    if any(edit.old_text.count(spelling) != edit.new_text.count(spelling) for spelling in DYNAMIC_ACCESS):
        return False  # an attribute read by a computed name: none is stored only in the file any more, or again
    before, after = Counter(_WORD.findall(edit.old_text)), Counter(_WORD.findall(edit.new_text))
    moved = {name for name in before.keys() | after.keys() if before[name] != after[name]}
    return not moved or only_stored_in(old_text, moved).keys() == only_stored_in(new_text, moved).keys()


def _kept(state: UnitState, prepared: PreparedFile, edit: _Edit, config: Config) -> frozenset[int]:
    """The units a full analysis of the new text reads (`reduced_text`): as before, but for the edited one
    and, for a method, its class header."""
    kept = set(state.kept)
    lines, segments, names = prepared.lines, prepared.segments, state.facts.names
    first, last, parent = segments[edit.number]
    relevant = unit_relevant(prepared, config, names, "".join(lines[first - 1 : last]))
    if parent < 0:
        return frozenset(kept | {edit.number} if relevant else kept - {edit.number})
    header = segments[parent]
    header_relevant = unit_relevant(prepared, config, names, "".join(lines[header[0] - 1 : header[1]]))
    kept.discard(edit.number)
    if relevant or header_relevant:
        kept.add(edit.number)
    members = any(unit in kept for unit, segment in enumerate(segments) if segment[2] == parent)
    if header_relevant or members:
        kept.add(parent)
    else:
        kept.discard(parent)
    return frozenset(kept)


def _context_text(lines: Sequence[str], segments: Sequence[tuple[int, int, int]], kept: frozenset[int],
                  stand_ins: dict[int, Shape]) -> tuple[str, list[int]]:
    """The kept units' lines, as `reduced_text` joins them, with each stand-in's body one `...` line."""
    out: list[str] = []
    numbers: list[int] = []
    for unit in sorted(kept):
        first, last, _ = segments[unit]
        shape = stand_ins.get(unit)
        end = last if shape is None else first + shape.header_end - 1
        out.extend(lines[first - 1 : end])
        numbers.extend(range(first, end + 1))
        if shape is not None:
            out.append(shape.body_indent + "...\n")
            numbers.append(end + 1)
    text = "".join(out)
    if text and not text.endswith(("\n", "\r")):
        text += "\n"
    return text, numbers


def _in_ranges(span: Span, ranges: list[tuple[int, int]]) -> bool:
    return any(low <= span.line <= high for low, high in ranges)


def _order(site: Site) -> tuple[object, ...]:
    return (site.span, site.kind.value, site.expression)


def changed_lines(old: Sequence[str], new: Sequence[str]) -> tuple[int, int, int] | None:
    """Old lines `first..last_old` (1-based, inclusive; empty when `last_old` is `first - 1`) became new lines
    `first..last_new`; None when nothing changed."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    if start == len(old) == len(new):
        return None
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return start + 1, end_old, end_new


def _unit_before(segments: Sequence[tuple[int, int, int]], line: int) -> int | None:
    """The number of the last unit that starts at or before `line`."""
    found = None
    low, high = 0, len(segments)
    while low < high:
        middle = (low + high) // 2
        if segments[middle][0] <= line:
            found, low = middle, middle + 1
        else:
            high = middle
    return found


def _parse_unit(text: str, in_class: bool) -> ast.stmt | None:
    """The one statement `text` is (a method's text parsed inside a block); None when it is not one."""
    source = _METHOD_WRAPPER + text if in_class else text
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    body = module.body
    if in_class:
        if len(body) != 1 or not isinstance(body[0], ast.If):
            return None
        body = body[0].body
    return body[0] if len(body) == 1 else None


def _shape(text: str, in_class: bool, shapes: dict[tuple[str, bool], Shape]) -> Shape:
    key = (text, in_class)
    found = shapes.get(key)
    if found is None:
        found = shapes[key] = _shape_of(_parse_unit(text, in_class), text, in_class)
    return found


def _shape_of(node: ast.stmt | None, text: str, in_class: bool) -> Shape:
    if not isinstance(node, _FUNCTIONS) or not node.body:
        return NOT_A_FUNCTION
    offset = 1 if in_class else 0
    start = first_line(node) - offset  # relative to the text: 1
    body = first_line(node.body[0]) - offset
    end = (node.end_lineno or node.lineno) - offset
    if start != 1 or body <= node.lineno - offset:
        return Shape(True, node.name, isinstance(node, ast.AsyncFunctionDef), 0, end)  # a one-liner
    lines = text.splitlines()
    line = lines[body - 1] if body - 1 < len(lines) else ""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    return Shape(True, node.name, isinstance(node, ast.AsyncFunctionDef), body - 1, end, indent)


def _class_name(lines: Sequence[str], first: int, last: int) -> str:
    """The name of the class whose header is lines `first..last` (decorators first)."""
    for line in lines[first - 1 : last]:
        found = _CLASS_LINE.match(line)
        if found is not None:
            return found.group(1)
    return ""


def _top_classes(prepared: PreparedFile) -> frozenset[str]:
    """The classes the module defines at its top level (its own names resolve to them), from the units'
    first lines, checked against the declarations."""
    declared = {
        d.name for d in prepared.declarations
        if isinstance(d, ClassDecl) and d.qualname == (f"{prepared.module_name}.{d.name}" if prepared.module_name
                                                       else d.name)
    }
    found = set()
    for first, _, parent in prepared.segments:
        if parent < 0:
            name = _top_level_class(prepared.lines, first)
            if name in declared:
                found.add(name)
    return frozenset(found)


def _top_level_class(lines: Sequence[str], first: int) -> str:
    """The class a top-level unit starting at `first` defines, "" when it defines none."""
    for line in lines[first - 1 :]:
        if line.startswith("class"):
            found = _CLASS_LINE.match(line)
            if found is not None:
                return found.group(1)
        if line[:1] not in ("@", "#", " ", "\t", ")", "]", "}", "\n", "\r", ""):
            return ""  # a `def`, or a statement: the first line at the unit's depth after its decorators
    return ""


def _fingerprint(text: str, node: ast.stmt | None, class_name: str, in_class: bool, prepared: PreparedFile,
                 facts: Facts) -> object:
    """What the function unit gives the module's declarations (see the module's docstring)."""
    key = (text, class_name)
    found = facts.fingerprints.get(key)
    if found is not None:
        return found
    if node is None:
        node = _parse_unit(text, in_class)
    if not isinstance(node, _FUNCTIONS):
        return ("unparsable", text)
    config = facts.config
    body: list[ast.stmt] = [_class_stub(name, [ast.Pass()]) for name in sorted(facts.top_classes - {class_name})]
    body.append(_class_stub(class_name, [node]) if in_class else node)
    output_classes, path_names = facts.scope  # type: ignore[misc]
    declarations = module_declarations(
        ast.Module(body=body, type_ignores=[]), prepared.module_name, prepared.imports, config.empty_sentinels,
        output_classes, path_names, config.optional_fields,
    )
    statements = walk_statements(node)
    receiver = node.args.args[0].arg if in_class and node.args.args else None
    found = (
        tuple(declarations),
        ast.dump(node.args), tuple(ast.dump(d) for d in node.decorator_list),
        ast.dump(node.returns) if node.returns is not None else "",
        tuple(ast.dump(s) for s in statements if isinstance(s, (ast.Import, ast.ImportFrom, ast.AnnAssign))),
        tuple(ast.dump(s) for s in statements if receiver is not None and _sets_attribute_of(s, receiver)),
    )
    facts.fingerprints[key] = found
    return found


def _class_stub(name: str, body: list[ast.stmt]) -> ast.ClassDef:
    fields: dict[str, object] = dict(name=name, bases=[], keywords=[], body=body, decorator_list=[])
    if "type_params" in ast.ClassDef._fields:
        fields["type_params"] = []
    stub = ast.ClassDef(**fields)
    stub.lineno = stub.end_lineno = 0
    stub.col_offset = stub.end_col_offset = 0
    return stub


def _sets_attribute_of(statement: ast.stmt, receiver: str) -> bool:
    """An assignment to an attribute of `receiver` (`self.x = ...`, `self.a, b = ...`, `self.x += ...`)."""
    if isinstance(statement, ast.Assign):
        targets: list[ast.expr] = list(statement.targets)
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        targets = [statement.target]
    else:
        return False
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets.extend(target.elts)
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == receiver:
            return True
    return False


def _moved(span: Span, delta: int) -> Span:
    return Span(span.line + delta, span.column, span.end_line + delta, span.end_column)


def _shifted(site: Site, delta: int) -> Site:
    operand = site.operand_span
    return dataclasses.replace(
        site, span=_moved(site.span, delta), operand_span=_moved(operand, delta) if operand is not None else None
    )


def _key(site: Site) -> tuple[object, ...]:
    return (site.span, site.kind.value, site.expression, site.invariant)

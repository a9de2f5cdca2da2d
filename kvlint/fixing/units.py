"""The fix contexts of one file's findings, built one top-level statement at a time.

Fixes edit the text the flow analysis ran over (the file's relevant units, `line_map` taking its lines
back to the file's). libcst parses that text a top-level statement at a time: a finding's builder gets
a `FixContext` of the statement it lies in, and the statement's tree, spans and parents are dropped
when the findings move on. The memory a file's fixes take is then that of its largest top-level
statement, not of the file (a libcst tree with its spans is some 20 times the size of its source), and
what each builder asks costs the statement it is in, never the module.

Every statement is parsed, with or without a finding, so a file that libcst cannot parse still gets
no fix at all (`Unparsable`), as when the module was parsed whole. What the module as a whole decides
is the module's: its default indentation and line ending (libcst takes them from the first indented
block and the first line ending of the text), its top-level statements (`ModuleFacts`), and the
comparisons with the sentinel that KVC004's fix looks for outside the function it edits.
"""

from __future__ import annotations

import bisect
import io
import re
import tokenize
from collections.abc import Callable, Sequence

import libcst as cst

from kvlint.binding.names import ImportTable
from kvlint.binding.tree_index import TreeIndex
from kvlint.config import Config
from kvlint.fixing.module_facts import ModuleFacts, Unparsable
from kvlint.fixing.positions import node_tree
from kvlint.sites import Span

_FALLBACK_INDENT = "    "  # libcst's, for a module without an indented block
_IS = re.compile(r"\bis\b")


class CannotParse(Exception):
    """libcst cannot parse the text: no finding of the file gets a fix. The message names libcst's error."""


def unit_bounds(text: str, line_map: Sequence[int], lines: Sequence[str],
                segments: Sequence[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """(first line index, first character) in `text` of each top-level statement that starts a line.

    `text` is the file's `lines` numbered `line_map` (what `kvlint.engine.reduced_text` keeps), perhaps with
    a line ending added at the end; `segments` are the file's units. Without segments (a file only libcst
    reads, `kvlint.flow.lowering`) the text is one unit.
    """
    if not segments:
        return [(0, 0)]
    starts: set[int] = set()
    end = 0
    for first, last, parent in segments:
        if parent < 0 and first > end:
            starts.add(first)
        end = max(end, last)
    bounds = [(0, 0)]
    offset = 0
    for position, number in enumerate(line_map):
        if position and number in starts:
            bounds.append((position, offset))
        offset += len(lines[number - 1])
    return bounds


class FileFixes:
    """Hands each finding the `FixContext` of its top-level statement, in the order of the findings."""

    def __init__(
        self, text: str, line_map: Sequence[int], bounds: list[tuple[int, int]], lines: Sequence[str],
        segments: Sequence[tuple[int, int, int]], imports: ImportTable, index: TreeIndex, config: Config,
        module_name: str,
    ) -> None:
        self.text = text
        self.line_map = line_map
        self.bounds = bounds
        self.starts = [first for first, _ in bounds]
        self.lines = lines
        self.segments = segments
        self.imports = imports
        self.index = index
        self.config = config
        self.module_name = module_name
        # spans of the `return`s reported for more than one invariant (a helper attaches only one of them)
        self.shared_returns: set[Span] = set()
        self.default_newline = "\n"
        self._parsed = 0  # the units before this one have been parsed
        self._current: tuple[int, object] | None = None  # (unit, its FixContext)
        self._indent: str | None = None
        self._facts: ModuleFacts | Unparsable | None = None
        self._identity: dict[object, list[tuple[int, frozenset[Span]]]] = {}

    # ------------------------------------------------------------------ units

    def _unit_text(self, unit: int) -> str:
        start = self.bounds[unit][1]
        end = self.bounds[unit + 1][1] if unit + 1 < len(self.bounds) else len(self.text)
        return self.text[start:end]

    def _unit_map(self, unit: int) -> Sequence[int]:
        """The unit's line map, with the line after it: a node ending at the start of the next line (a block's
        trailing line break) maps where it did in the module."""
        first = self.starts[unit]
        following = self.starts[unit + 1] if unit + 1 < len(self.starts) else len(self.line_map)
        return self.line_map[first : following + 1]

    def _parse(self, unit: int) -> cst.Module:
        try:
            module = cst.parse_module(self._unit_text(unit))
        except Exception as exc:  # noqa: BLE001 - libcst refusing what `ast` parsed costs the fixes
            raise CannotParse(type(exc).__name__) from None
        if unit == 0:
            self.default_newline = module.default_newline  # the first line ending of the text
        return module

    def _context(self, unit: int, module: cst.Module):  # type: ignore[no-untyped-def]
        from kvlint.fixing.context import FixContext

        try:
            tree = node_tree(module)
        except Exception as exc:  # noqa: BLE001
            raise CannotParse(type(exc).__name__) from None
        return FixContext(module, tree, self._unit_map(unit), self)

    def unit_of(self, line: int) -> int:
        """The unit that holds line `line` of the file."""
        return max(0, bisect.bisect_right(self.starts, bisect.bisect_left(self.line_map, line)) - 1)

    def context_at(self, line: int):  # type: ignore[no-untyped-def]
        """The `FixContext` of the top-level statement holding line `line` of the file; `CannotParse` when
        libcst cannot parse a statement up to it."""
        unit = self.unit_of(line)
        if self._current is not None and self._current[0] == unit:
            return self._current[1]
        self._current = None  # the previous statement's tree goes before the next one is built
        while self._parsed < unit:
            self._parse(self._parsed)
            self._parsed += 1
        context = self._context(unit, self._parse(unit))
        self._parsed = max(self._parsed, unit + 1)
        self._current = (unit, context)
        return context

    def finish(self) -> None:
        """Parse the statements no finding was in (`CannotParse` when libcst cannot), and let the last go."""
        self._current = None
        while self._parsed < len(self.bounds):
            self._parse(self._parsed)
            self._parsed += 1

    # --------------------------------------------------------- the module's

    def default_indent(self) -> str:
        """The module's indentation unit as libcst gives it: that of its first indented block."""
        if self._indent is None:
            self._indent = self._first_indent()
        return self._indent

    def _first_indent(self) -> str:
        if len(self.bounds) == 1:
            return self._module_of(0).default_indent
        try:
            for token in tokenize.generate_tokens(io.StringIO(self.text).readline):
                if token.type == tokenize.INDENT:
                    return self._module_of(self.unit_of(self.line_map[token.start[0] - 1])).default_indent
        except (tokenize.TokenError, SyntaxError):
            return cst.parse_module(self.text).default_indent
        return _FALLBACK_INDENT

    def _module_of(self, unit: int) -> cst.Module:
        if self._current is not None and self._current[0] == unit:
            return self._current[1].module  # type: ignore[attr-defined,no-any-return]
        return self._parse(unit)

    def facts(self) -> ModuleFacts | None:
        """The module's top-level facts, None when this Python cannot parse the file."""
        if self._facts is None:
            try:
                self._facts = ModuleFacts.gather(self.lines, self.segments)
            except Unparsable as exc:
                self._facts = exc
        return None if isinstance(self._facts, Unparsable) else self._facts

    def identity_comparisons(
        self, key: object, is_sentinel: Callable[[cst.CSTNode], bool]
    ) -> list[tuple[int, frozenset[Span]]]:
        """The `is` / `is not` comparisons with the sentinel in the text, in the order a search from the module's
        last statement to its first meets them: each one's line and the spans of the functions around it."""
        if key not in self._identity:
            found: list[tuple[int, frozenset[Span]]] = []
            for unit in reversed(range(len(self.bounds))):
                if _IS.search(self._unit_text(unit)) is None:
                    continue  # no `is`: no parse
                module = self._module_of(unit)
                hits = _identity_nodes(module, is_sentinel)
                if hits:
                    context = self._current[1] if self._current and self._current[0] == unit else self._context(
                        unit, module)
                    found += [(context.span(comparison).line, frozenset(context.span(f) for f in functions))
                              for comparison, functions in hits]
            self._identity[key] = found
        return self._identity[key]


def _identity_nodes(
    module: cst.Module, is_sentinel: Callable[[cst.CSTNode], bool]
) -> list[tuple[cst.Comparison, tuple[cst.FunctionDef, ...]]]:
    """The comparisons `x is S` / `x is not S` with a sentinel side, with the functions they are in, in the
    order of a depth-first search that takes a node's last child first."""
    found = []
    stack: list[tuple[cst.CSTNode, tuple[cst.FunctionDef, ...]]] = [(module, ())]
    while stack:
        current, functions = stack.pop()
        if isinstance(current, cst.Comparison):
            operands = [current.left, *(target.comparator for target in current.comparisons)]
            if any(
                isinstance(target.operator, (cst.Is, cst.IsNot)) and any(map(is_sentinel, operands[index : index + 2]))
                for index, target in enumerate(current.comparisons)
            ):
                found.append((current, functions))
                continue  # the search stops at the first match; one inside it comes later, never first
        inner = (*functions, current) if isinstance(current, cst.FunctionDef) else functions
        stack.extend((child, inner) for child in current.children)
    return found

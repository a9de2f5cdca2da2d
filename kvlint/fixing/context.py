"""What a rule's fix builder may ask about the code at a finding: nodes, text, names, imports.

The engine builds the contexts of a file only when it has a finding whose rule offers fixes:
`kvlint check` on a clean file never pays for them. A context holds the libcst tree of the
top-level statement the finding is in, of the text the flow analysis ran over (the file's relevant
units, `line_map` taking its lines back to the file's; `kvlint.fixing.units` builds one statement at
a time), and answers in the file's own coordinates, so every edit a builder makes is an `Edit` of the
original text. What the module as a whole decides (its imports, its module-level names, its
indentation) comes from the file's `FileFixes`, found once per file. Builders write new code as
text in the file's own indentation and line endings; they never print a libcst tree, so nothing
outside an edit can move.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from kvlint.fixing.model import Edit
from kvlint.fixing.module_facts import COPY_MODULE, ModuleFacts
from kvlint.invariants import Invariant
from kvlint.sites import Span

if TYPE_CHECKING:
    from kvlint.fixing.units import FileFixes

# a statement's spans, and its nodes' parents and children by id() (`kvlint.fixing.positions.node_tree`)
Tree = tuple[dict[cst.CSTNode, tuple[int, int, int, int]], dict[int, cst.CSTNode], dict[int, list[cst.CSTNode]]]

SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def cst_dotted_name(node: cst.CSTNode) -> str | None:
    """Return `a.b.c` for a libcst Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def is_cst_none(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "None" and not node.lpar


_INDENT = re.compile(r"[ \t\f]*")


class NoFix(Exception):
    """No fix is offered; the message says why (it is shown with the finding)."""


class FixContext:
    """The code around a finding (its top-level statement), in the file's coordinates."""

    def __init__(self, module: cst.Module, tree: Tree, line_map: Sequence[int], file: FileFixes) -> None:
        self.module = module  # the top-level statement the finding is in (`kvlint.fixing.units`)
        self.line_map = line_map
        self.lines = file.lines
        self.imports = file.imports
        self.index = file.index
        self.config = file.config
        self.module_name = file.module_name
        self._file = file
        self._spans, self._parents, self._children = tree  # the statement's spans and shape (`node_tree`)
        self._by_span: dict[Span, list[cst.CSTNode]] | None = None
        self._by_raw: dict[tuple[int, int, int, int], list[cst.CSTNode]] | None = None
        self._comments: list[tuple[Span, str]] | None = None
        self._comment_starts: list[tuple[int, int]] = []
        self._comment_start_set: set[tuple[int, int]] = set()
        self._names: dict[tuple[str, int], frozenset[str]] = {}  # by what and id() of a function of `module`

    @property
    def shared_returns(self) -> set[Span]:
        """The spans of the `return`s reported for more than one invariant (a helper attaches only one of them)."""
        return self._file.shared_returns

    # ------------------------------------------------------------ nodes and text

    def span(self, node: cst.CSTNode) -> Span:
        """The node's span in the file's coordinates."""
        line, column, end_line, end_column = self._spans[node]
        return Span(self.line_map[line - 1], column, self.line_map[min(end_line, len(self.line_map)) - 1], end_column)

    def nodes_at(self, span: Span, kind: type | tuple[type, ...] = cst.CSTNode) -> list[cst.CSTNode]:
        """The nodes of type `kind` that lie exactly at `span`, outermost first."""
        line, end_line = self._raw_line(span.line), self._raw_line(span.end_line)
        if line is None or end_line is None:
            return []
        if end_line < len(self.line_map):  # the statement's own lines: one span of libcst's each
            if self._by_raw is None:
                self._by_raw = {}
                for node, where in self._spans.items():
                    self._by_raw.setdefault(where, []).append(node)
            found = self._by_raw.get((line, span.column, end_line, span.end_column), ())
        else:  # its last line, where the spans that end past the text end too: mapped as they are
            if self._by_span is None:
                self._by_span = {}
                for node in self._spans:
                    self._by_span.setdefault(self.span(node), []).append(node)
            found = self._by_span.get(span, ())
        return [node for node in found if isinstance(node, kind)]

    def _raw_line(self, line: int) -> int | None:
        """The line of the statement's text that is line `line` of the file (None: none is)."""
        position = bisect.bisect_left(self.line_map, line)
        return position + 1 if position < len(self.line_map) and self.line_map[position] == line else None

    def node_at(self, span: Span | None, kind: type | tuple[type, ...]) -> cst.CSTNode:
        found = self.nodes_at(span, kind) if span is not None else []
        if not found:
            raise NoFix("kvlint could not find the code it reports (please report this)")
        return found[0]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(id(node))

    def children(self, node: cst.CSTNode) -> Sequence[cst.CSTNode]:
        """libcst's `node.children`, read once for the statement (`node_tree`: whitespace nodes may come in
        another order among them, or be missing where code generation writes none; no builder looks for
        them)."""
        return self._children.get(id(node), ())

    def ancestors(self, node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, cst.CSTNode]]:
        """(parent, child) pairs from the node up to the module."""
        child = node
        parent = self.parent(child)
        while parent is not None:
            yield parent, child
            child, parent = parent, self.parent(parent)

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        for parent, _ in self.ancestors(node):
            if isinstance(parent, cst.FunctionDef):
                return parent
            if isinstance(parent, (cst.ClassDef, cst.Lambda)):
                return None
        return None

    def check_not_self_documenting(self, node: cst.CSTNode) -> None:
        """`NoFix` when the node is inside an f-string's `{expression=}`, which prints the expression's own
        text: an edit there changes what is printed."""
        for parent, _ in self.ancestors(node):
            if isinstance(parent, cst.FormattedStringExpression) and parent.equal is not None:
                raise NoFix("the code is inside an f-string's `{...=}`, which prints its text: an edit there "
                            "changes the string")

    def text(self, span: Span) -> str:
        """The file's text in `span`."""
        if span.line == span.end_line:
            return self.lines[span.line - 1][span.column : span.end_column]
        middle = "".join(self.lines[span.line : span.end_line - 1])
        return self.lines[span.line - 1][span.column :] + middle + self.lines[span.end_line - 1][: span.end_column]

    def code(self, node: cst.CSTNode) -> str:
        return self.text(self.span(node))

    @staticmethod
    def short(code: str) -> str:
        """Code on one line for a fix's title: comments dropped, whitespace runs made one space."""
        text = " ".join(re.sub(r"#[^\r\n]*", "", code).split())
        return text if len(text) <= 80 else text[:77] + "..."

    def replace(self, span: Span, content: str) -> Edit:
        """The edit replacing `span` with `content`; `NoFix` when that would drop a comment inside the span."""
        for comment in self.comments_in(span):
            if comment not in content:
                raise NoFix(f"the edit would drop the comment `{comment}` inside the code it replaces")
        return Edit(span.line, span.column, span.end_line, span.end_column, content)

    def comments_in(self, span: Span) -> list[str]:
        """The comments that lie inside `span`."""
        if self._comments is None:
            self._comments = sorted(
                (self.span(node), node.value) for node in self._spans if isinstance(node, cst.Comment)
            )
            self._comment_starts = [(where.line, where.column) for where, _ in self._comments]
            self._comment_start_set = set(self._comment_starts)
        start, end = (span.line, span.column), (span.end_line, span.end_column)
        found = []  # comments lie on one line each and never overlap: sorted by start, they are sorted by end
        for position in range(bisect.bisect_left(self._comment_starts, start), len(self._comments)):
            where, text = self._comments[position]
            if (where.end_line, where.end_column) > end:
                break
            found.append(text)
        return found

    def newline(self, line: int) -> str:
        """The line ending of a line of the file (the module's default for the last line without one)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        ending = text[len(text.rstrip("\r\n")) :]
        return ending or self._file.default_newline

    def indentation(self, line: int) -> str:
        match = _INDENT.match(self.lines[line - 1])
        return match.group(0) if match else ""

    @property
    def indent_unit(self) -> str:
        return self._file.default_indent()

    # ---------------------------------------------------------------- statements

    def own_line_statement(self, node: cst.CSTNode, what: str) -> cst.CSTNode:
        """The statement line holding the small statement `node`, which must be alone on its line."""
        line = self.parent(node)
        if isinstance(line, cst.SimpleStatementSuite):
            raise NoFix(f"the {what} is in a one-line block (`...: {what.strip('`')} ...`)")
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            raise NoFix(f"the {what} shares its line with other statements")
        return line

    def statement_start(self, statement: cst.CSTNode) -> tuple[int, str]:
        """The line a statement starts on (after the comments right above it, which stay with it) and its
        indentation."""
        span = self.span(statement)
        indent = self.indentation(span.line)
        if span.column != len(indent):
            raise NoFix("the statement does not start its line")
        line = span.line
        self.comments_in(Span(1, 0, 1, 0))  # builds the comment index
        starts = self._comment_start_set
        while line > 1 and (line - 1, len(indent)) in starts and self.indentation(line - 1) == indent:
            line -= 1  # a comment token, not a line of a string that starts with `#`
        return line, indent

    def bound_names(self, function: cst.FunctionDef) -> frozenset[str]:
        """Every name the function mentions (a new local must be none of them); found once per function."""
        key = ("mentioned", id(function))
        if key not in self._names:
            found: set[str] = set()
            stack: list[cst.CSTNode] = [function]
            while stack:
                current = stack.pop()
                if isinstance(current, cst.Name):
                    found.add(current.value)
                stack.extend(self.children(current))
            self._names[key] = frozenset(found)
        return self._names[key]

    def fresh_name(self, node: cst.CSTNode, *preferred: str) -> str:
        """A local name that the enclosing function does not use yet: the first of `preferred` that is free,
        else the first with `_2`, `_3`, ..."""
        function = self.function_of(node)
        taken = set(self.bound_names(function)) if function is not None else set()
        taken |= set(self.imports.bindings)
        for name in preferred:
            if name not in taken:
                return name
        name, number = preferred[0], 1
        while name in taken:
            number += 1
            name = f"{preferred[0]}_{number}"
        return name

    # ------------------------------------------------------------------- imports

    def _facts(self) -> ModuleFacts:
        facts = self._file.facts()
        if facts is None:
            raise NoFix("this Python cannot parse the file to place an import")
        return facts

    def copy_function(self, at: cst.CSTNode) -> tuple[str, tuple[Edit, ...]]:
        """How the file spells `copy.copy` (its own `import copy` or `from copy import copy`), and the edit
        that imports the module when it has neither."""
        facts = self._facts()
        spelled = facts.copy_spelled
        root = spelled.partition(".")[0] or COPY_MODULE
        for parent, _ in self.ancestors(at):
            if isinstance(parent, cst.FunctionDef) and root in self._locals(parent):
                raise NoFix(f"`{root}` is a local name of `{parent.name.value}`, not the `copy` module")
        line = facts.bindings.get(root, 0)  # a module-level statement other than an import that binds it
        if line:
            raise NoFix(f"the module binds `{root}` at line {line}, not to the `copy` module")
        if spelled:
            return spelled, ()
        if self.imports.bindings.get(COPY_MODULE, COPY_MODULE) != COPY_MODULE:
            raise NoFix("the module binds `copy` to something else")
        return "copy.copy", (self._import_edit("import copy"),)

    def _locals(self, function: cst.FunctionDef) -> frozenset[str]:
        """The names the function binds (its parameters, assignments, imports, definitions); found once per
        function, however many fixes ask."""
        key = ("bound", id(function))
        if key not in self._names:
            self._names[key] = frozenset(_bound_in(function, self.children))
        return self._names[key]

    def _import_edit(self, statement: str) -> Edit:
        """Insert `statement` before the module's first plain `import` (else its first `from` import), after
        `from __future__` imports and the docstring when it has none."""
        facts = self._facts()
        if facts.anchor is not None:
            anchor_line, is_from, module, level = facts.anchor
            newline = self.newline(anchor_line)
            if is_from and (level or (module or "").partition(".")[0] not in sys.stdlib_module_names):
                return Edit(anchor_line, 0, anchor_line, 0, f"{statement}{newline}{newline}")  # its own group
            return Edit(anchor_line, 0, anchor_line, 0, f"{statement}{newline}")
        line = facts.prelude_line
        if line == 1:
            while line <= len(self.lines) and self.lines[line - 1].lstrip().startswith("#"):
                line += 1  # a shebang, a coding cookie or a licence header stays first
        while line <= len(self.lines) and not self.lines[line - 1].strip():
            line += 1  # the import goes after the blank lines that follow a docstring or a header
        if line > len(self.lines):
            last = len(self.lines)
            ending = "" if self.lines and self.lines[-1].endswith(("\n", "\r")) else self.newline(last)
            column = len(self.lines[-1]) if self.lines else 0
            return Edit(max(last, 1), column, max(last, 1), column, f"{ending}{statement}{self.newline(last)}")
        blank_lines = 2 if facts.following_statement(line) else 1
        return Edit(line, 0, line, 0, statement + self.newline(line) * (1 + blank_lines))  # PEP 8's spacing

    # ------------------------------------------------------------- invariant names

    def local_spelling(self, configured: Sequence[str]) -> str | None:
        """How this module names one of the configured names: its import alias or its own definition."""
        aliases = sorted(self.imports.aliases_of(configured))
        if aliases:
            return aliases[0]
        return self._facts().defined_as(tuple(configured), self.module_name)

    def visible_at_runtime(self, name: str, at: cst.CSTNode) -> bool:
        """Whether `name`'s root is bound when the code at `at` runs: by the module outside `if TYPE_CHECKING:`,
        or by an enclosing function (an import only for type checkers, or in another function, is not)."""
        root = name.partition(".")[0]
        for parent, _ in self.ancestors(at):
            if isinstance(parent, cst.FunctionDef) and root in self._locals(parent):
                return True
        return root in self._facts().runtime_names

    def identity_comparison_outside(
        self, function: cst.FunctionDef, key: object, is_sentinel: Callable[[cst.CSTNode], bool]
    ) -> int:
        """The line of the comparison `x is S` (or `is not`) with a sentinel side (`is_sentinel`; `key` names the
        sentinels) that a search of the module from its last statement meets first outside `function`, 0 when
        there is none. The module's comparisons are found once per file."""
        inside = self.span(function)
        for line, functions in self._file.identity_comparisons(key, is_sentinel):
            if inside not in functions:
                return line
        return 0

    def attaching_helper(self, invariant: Invariant, at: cst.CSTNode) -> str | None:
        """`ModelRunnerOutput.with_kv_conn_output_only`, spelled as this module can call it at `at`, when the
        tree's output class defines that helper."""
        for helper in invariant.attaching_helpers:
            class_name, _, method = helper.rpartition(".")
            if not class_name:
                continue
            spelled = self.local_spelling((class_name,))
            if spelled is None or not self.visible_at_runtime(spelled, at):
                continue
            resolved = self.imports.resolve_dotted(spelled)
            if "." not in resolved and self.module_name:
                resolved = f"{self.module_name}.{resolved}"
            declared = self.index.class_named(resolved, self.module_name)
            if declared is not None and self.index.method(declared.qualname, method) is not None:
                return f"{spelled}.{method}"
        return None

    def invariant(self, name: str) -> Invariant:
        found = self.config.invariants.by_name.get(name)
        if found is None:
            raise NoFix(f"no active invariant is named {name!r}")
        return found


def is_simple_reference(node: cst.BaseExpression) -> bool:
    """A name or a member chain of names: evaluating it twice reads the same thing."""
    return cst_dotted_name(node) is not None and not getattr(node, "lpar", ())


def _bound_in(function: cst.FunctionDef, children: Callable[[cst.CSTNode], Sequence[cst.CSTNode]]) -> set[str]:
    """The names the parameters and the body of a function bind (those of its nested scopes included)."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [function.params, function.body]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.AssignTarget, cst.Param, cst.AsName, cst.CompFor, cst.For, cst.NamedExpr)):
            target = getattr(current, "target", None) or getattr(current, "name", None)
            if isinstance(target, cst.Name):
                found.add(target.value)
        elif isinstance(current, cst.ImportAlias) and current.asname is None:
            found.add((cst_dotted_name(current.name) or "").partition(".")[0])
        elif isinstance(current, (cst.FunctionDef, cst.ClassDef)):
            found.add(current.name.value)
        elif isinstance(current, (cst.Global, cst.Nonlocal)):
            found.update(item.name.value for item in current.names)
        elif isinstance(current, (cst.AnnAssign, cst.AugAssign)) and isinstance(current.target, cst.Name):
            found.add(current.target.value)
        elif isinstance(current, cst.MatchAs) and current.name is not None:
            found.add(current.name.value)
        stack.extend(children(current))
    return found

"""What a rule's fix builder may ask about the code at a finding: nodes, text, names, imports.

The engine builds one `FixContext` per file, and only when the file has a finding whose rule
offers fixes: `kvlint check` on a clean file never pays for it. The context holds the libcst
module the flow analysis ran over (the file's relevant units, `line_map` taking its lines back to
the file's) and answers in the file's own coordinates, so every edit a builder makes is an
`Edit` of the original text. Builders write new code as text in the file's own indentation and
line endings; they never print a libcst tree, so nothing outside an edit can move.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator, Sequence

import libcst as cst

from kvlint.config import Config
from kvlint.fixing.model import Edit
from kvlint.invariants import Invariant
from kvlint.binding.names import ImportTable, first_line, matches
from kvlint.sites import Span
from kvlint.binding.tree_index import TreeIndex

SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def dotted_name(node: cst.CSTNode) -> str | None:
    """Return `a.b.c` for a libcst Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def is_none_literal(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "None" and not node.lpar


COPY_MODULE, COPY_FUNCTION = "copy", "copy.copy"
_INDENT = re.compile(r"[ \t\f]*")


class NoFix(Exception):
    """No fix is offered; the message says why (it is shown with the finding)."""


class FixContext:
    """The code around a file's findings, in the file's coordinates."""

    def __init__(
        self, module: cst.Module, spans: dict[cst.CSTNode, tuple[int, int, int, int]], line_map: Sequence[int],
        lines: Sequence[str], imports: ImportTable, index: TreeIndex, config: Config, module_name: str,
    ) -> None:
        self.module = module
        self.line_map = line_map
        self.lines = lines
        self.imports = imports
        self.index = index
        self.config = config
        self.module_name = module_name
        self._spans = spans
        self._by_span: dict[Span, list[cst.CSTNode]] | None = None
        self._parents: dict[int, cst.CSTNode] | None = None
        self._top_level: list[ast.stmt] | None = None
        self._comments: list[tuple[Span, str]] | None = None
        # spans of the `return`s reported for more than one invariant (a helper attaches only one of them)
        self.shared_returns: set[Span] = set()
        self._runtime_names: set[str] | None = None

    # ------------------------------------------------------------ nodes and text

    def span(self, node: cst.CSTNode) -> Span:
        """The node's span in the file's coordinates."""
        line, column, end_line, end_column = self._spans[node]
        return Span(self.line_map[line - 1], column, self.line_map[min(end_line, len(self.line_map)) - 1], end_column)

    def nodes_at(self, span: Span, kind: type | tuple[type, ...] = cst.CSTNode) -> list[cst.CSTNode]:
        """The nodes of type `kind` that lie exactly at `span`, outermost first."""
        if self._by_span is None:
            self._by_span = {}
            for node in self._spans:
                self._by_span.setdefault(self.span(node), []).append(node)
        return [node for node in self._by_span.get(span, ()) if isinstance(node, kind)]

    def node_at(self, span: Span | None, kind: type | tuple[type, ...]) -> cst.CSTNode:
        found = self.nodes_at(span, kind) if span is not None else []
        if not found:
            raise NoFix("kvlint could not find the code it reports (please report this)")
        return found[0]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        if self._parents is None:
            self._parents = {}
            stack: list[cst.CSTNode] = [self.module]
            while stack:
                current = stack.pop()
                for child in current.children:
                    self._parents[id(child)] = current
                    stack.append(child)
        return self._parents.get(id(node))

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
        start, end = (span.line, span.column), (span.end_line, span.end_column)
        return [text for where, text in self._comments
                if start <= (where.line, where.column) and (where.end_line, where.end_column) <= end]

    def newline(self, line: int) -> str:
        """The line ending of a line of the file (the module's default for the last line without one)."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        ending = text[len(text.rstrip("\r\n")) :]
        return ending or self.module.default_newline

    def indentation(self, line: int) -> str:
        match = _INDENT.match(self.lines[line - 1])
        return match.group(0) if match else ""

    @property
    def indent_unit(self) -> str:
        return self.module.default_indent

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
        starts = {(where.line, where.column) for where, _ in self._comments or ()}
        while line > 1 and (line - 1, len(indent)) in starts and self.indentation(line - 1) == indent:
            line -= 1  # a comment token, not a line of a string that starts with `#`
        return line, indent

    def bound_names(self, function: cst.FunctionDef) -> set[str]:
        """Every name the function mentions (a new local must be none of them)."""
        found: set[str] = set()
        stack: list[cst.CSTNode] = [function]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Name):
                found.add(current.value)
            stack.extend(current.children)
        return found

    def fresh_name(self, node: cst.CSTNode, *preferred: str) -> str:
        """A local name that the enclosing function does not use yet: the first of `preferred` that is free,
        else the first with `_2`, `_3`, ..."""
        function = self.function_of(node)
        taken = self.bound_names(function) if function is not None else set()
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

    def top_level(self) -> list[ast.stmt]:
        if self._top_level is None:
            text = "".join(self.lines)
            try:
                self._top_level = list(ast.parse(text).body)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                raise NoFix("this Python cannot parse the file to place an import") from None
        return self._top_level

    def copy_function(self, at: cst.CSTNode) -> tuple[str, tuple[Edit, ...]]:
        """How the file spells `copy.copy` (its own `import copy` or `from copy import copy`), and the edit
        that imports the module when it has neither."""
        spelled = ""
        for statement in self.top_level():
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    if alias.name == COPY_MODULE:
                        spelled = spelled or f"{alias.asname or COPY_MODULE}.copy"
            elif isinstance(statement, ast.ImportFrom) and statement.module == COPY_MODULE and not statement.level:
                for alias in statement.names:
                    if alias.name == "copy":
                        spelled = alias.asname or "copy"
        root = spelled.partition(".")[0] or COPY_MODULE
        for parent, _ in self.ancestors(at):
            if isinstance(parent, cst.FunctionDef) and root in self._locals(parent):
                raise NoFix(f"`{root}` is a local name of `{parent.name.value}`, not the `copy` module")
        line = self._module_binding(root)
        if line:
            raise NoFix(f"the module binds `{root}` at line {line}, not to the `copy` module")
        if spelled:
            return spelled, ()
        if self.imports.bindings.get(COPY_MODULE, COPY_MODULE) != COPY_MODULE:
            raise NoFix("the module binds `copy` to something else")
        return "copy.copy", (self._import_edit("import copy"),)

    def _module_binding(self, name: str) -> int:
        """The line of a module-level statement other than an import that binds `name` (a `def`, a class, an
        assignment, a loop target), 0 when there is none."""
        for statement in self.top_level():
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if statement.name == name:
                    return statement.lineno
                continue
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                continue
            stack: list[ast.AST] = [statement]
            while stack:
                node = stack.pop()
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    if node.name == name:
                        return node.lineno
                    continue
                if isinstance(node, ast.Lambda):
                    continue
                if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
                    return node.lineno
                if isinstance(node, (ast.Import, ast.ImportFrom)):  # under `if` / `try`: not seen as the module's
                    for alias in node.names:
                        plain = isinstance(node, ast.Import) and alias.name == COPY_MODULE and not alias.asname
                        if not plain and (alias.asname or alias.name.partition(".")[0]) == name:
                            return node.lineno
                    continue
                stack.extend(ast.iter_child_nodes(node))
        return 0

    @staticmethod
    def _locals(function: cst.FunctionDef) -> set[str]:
        found: set[str] = set()
        stack: list[cst.CSTNode] = [function.params, function.body]
        while stack:
            current = stack.pop()
            if isinstance(current, (cst.AssignTarget, cst.Param, cst.AsName, cst.CompFor, cst.For, cst.NamedExpr)):
                target = getattr(current, "target", None) or getattr(current, "name", None)
                if isinstance(target, cst.Name):
                    found.add(target.value)
            elif isinstance(current, cst.ImportAlias) and current.asname is None:
                found.add((dotted_name(current.name) or "").partition(".")[0])
            elif isinstance(current, (cst.FunctionDef, cst.ClassDef)):
                found.add(current.name.value)
            elif isinstance(current, (cst.Global, cst.Nonlocal)):
                found.update(item.name.value for item in current.names)
            elif isinstance(current, (cst.AnnAssign, cst.AugAssign)) and isinstance(current.target, cst.Name):
                found.add(current.target.value)
            elif isinstance(current, cst.MatchAs) and current.name is not None:
                found.add(current.name.value)
            stack.extend(current.children)
        return found

    def _import_edit(self, statement: str) -> Edit:
        """Insert `statement` before the module's first plain `import` (else its first `from` import), after
        `from __future__` imports and the docstring when it has none."""
        body = self.top_level()
        imports = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom)) and s.col_offset == 0]
        plain = [s for s in imports if isinstance(s, ast.Import)]
        other = [s for s in imports if not (isinstance(s, ast.ImportFrom) and s.module == "__future__")]
        anchor = plain[0] if plain else (other[0] if other else None)
        if anchor is not None:
            newline = self.newline(anchor.lineno)
            module = anchor.module if isinstance(anchor, ast.ImportFrom) else None
            if isinstance(anchor, ast.ImportFrom) and (anchor.level or (module or "").partition(".")[0] not in
                                                       sys.stdlib_module_names):
                return Edit(anchor.lineno, 0, anchor.lineno, 0, f"{statement}{newline}{newline}")  # its own group
            return Edit(anchor.lineno, 0, anchor.lineno, 0, f"{statement}{newline}")
        line = 1
        for position, node in enumerate(body):
            docstring = position == 0 and isinstance(node, ast.Expr) and isinstance(
                node.value, ast.Constant) and isinstance(node.value.value, str)
            future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
            if not (docstring or future):
                break
            line = (node.end_lineno or node.lineno) + 1
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
        following = next((node for node in body if first_line(node) >= line), None)
        blank_lines = 2 if isinstance(following, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else 1
        return Edit(line, 0, line, 0, statement + self.newline(line) * (1 + blank_lines))  # PEP 8's spacing

    # ------------------------------------------------------------- invariant names

    def local_spelling(self, configured: Sequence[str]) -> str | None:
        """How this module names one of the configured names: its import alias or its own definition."""
        aliases = sorted(self.imports.aliases_of(configured))
        if aliases:
            return aliases[0]
        for statement in self.top_level():
            if isinstance(statement, (ast.ClassDef, ast.Assign, ast.AnnAssign)):
                targets = [statement.name] if isinstance(statement, ast.ClassDef) else [
                    target.id for target in getattr(statement, "targets", [getattr(statement, "target", None)])
                    if isinstance(target, ast.Name)
                ]
                for name in targets:
                    qualified = f"{self.module_name}.{name}" if self.module_name else name
                    if matches(qualified, configured):
                        return name
        return None

    def visible_at_runtime(self, name: str, at: cst.CSTNode) -> bool:
        """Whether `name`'s root is bound when the code at `at` runs: by the module outside `if TYPE_CHECKING:`,
        or by an enclosing function (an import only for type checkers, or in another function, is not)."""
        root = name.partition(".")[0]
        for parent, _ in self.ancestors(at):
            if isinstance(parent, cst.FunctionDef) and root in self._locals(parent):
                return True
        if self._runtime_names is None:
            self._runtime_names = set()
            statements: list[ast.stmt] = list(self.top_level())
            while statements:
                statement = statements.pop()
                if isinstance(statement, (ast.Import, ast.ImportFrom)):
                    self._runtime_names.update(
                        (alias.asname or alias.name).partition(".")[0] for alias in statement.names)
                elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._runtime_names.add(statement.name)
                elif isinstance(statement, ast.If):
                    test = statement.test
                    spelled = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
                    if spelled != "TYPE_CHECKING":
                        statements += statement.body
                    statements += statement.orelse
                elif isinstance(statement, (ast.Try, ast.With)):
                    blocks = ("body", "orelse", "finalbody")
                    statements += [s for block in blocks for s in getattr(statement, block, [])]
                    statements += [s for handler in getattr(statement, "handlers", []) for s in handler.body]
                else:
                    self._runtime_names.update(
                        node.id for node in ast.walk(statement)
                        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
        return root in self._runtime_names

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
    return dotted_name(node) is not None and not getattr(node, "lpar", ())

"""What fix builders ask of a whole module's top-level statements, gathered once per file.

A fix that adds `import copy` or copies the sentinel asks how the module spells `copy.copy`, what it
binds at module level, which names exist when the code runs, where an import goes and how the module
names a configured class. Each answer comes from the file's top-level statements (the whole file, not
only the units the flow analysis read). They are read here in one pass and kept as plain names and
lines: asking again, for the next finding, rescans nothing, and no `ast` tree outlives the pass.

The statements are parsed in batches of whole top-level statements (their lines come from the file's
segments, which `ast` found when the file was prepared), each batch preceded by as many empty lines as
come before it, so that line numbers are the file's: the pass never holds the tree of a large file at
once. A valid file's top-level statements parse alone as they do together (a batch starts where the
tokenizer is at the start of a logical line at depth 0), so the facts are those of one `ast.parse`.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from kvlint.binding.names import first_line, matches
from kvlint.source import unit_batches

COPY_MODULE = "copy"
BATCH_CHARACTERS = 1 << 16  # about 64 KB of source per `ast.parse`: a large file's tree is never whole


class Unparsable(Exception):
    """The file's text does not parse here (the fix builders then say so)."""


def statement_batches(lines: Sequence[str], segments: Sequence[tuple[int, int, int]]) -> Iterator[list[ast.stmt]]:
    """The file's top-level statements, parsed a batch at a time, with the file's line numbers.

    `segments` are the file's units as `kvlint.engine` records them ((first, last, parent) lines; a class's
    members are units whose parent is its header's unit). Without them the whole text is parsed at once.
    """
    starts = _statement_starts(segments)
    if not starts:
        yield _parsed("".join(lines), 1)
        return
    for first, text in unit_batches(lines, starts, BATCH_CHARACTERS):
        yield _parsed(text, first)


def _statement_starts(segments: Sequence[tuple[int, int, int]]) -> list[int]:
    """The first line of each top-level statement that does not share a line with the one before it."""
    starts: list[int] = []
    end = 0
    for first, last, parent in segments:
        if parent < 0 and first > end:
            starts.append(first)
        end = max(end, last)
    return starts


def _parsed(text: str, first: int) -> list[ast.stmt]:
    try:
        return ast.parse("\n" * (first - 1) + text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise Unparsable from None


@dataclass
class ModuleFacts:
    """The answers fix builders need about the module's top-level statements (`gather`)."""

    copy_spelled: str = ""  # `copy.copy` as the module's own imports spell it ("" when they do not)
    bindings: dict[str, int] = field(default_factory=dict)  # name -> line of its first module-level binding
    anchor: tuple[int, bool, str | None, int] | None = None  # the import an import goes before: line, `from`?,
    # its module, its level
    prelude_line: int = 1  # the line after the docstring and the `from __future__` imports (1: none)
    first_lines: list[int] = field(default_factory=list)  # each statement's first line (its decorators')
    is_definition: list[bool] = field(default_factory=list)  # ... and whether it is a `def` or a `class`
    defined: list[str] = field(default_factory=list)  # names of module-level classes and assignments, in order
    runtime_names: set[str] = field(default_factory=set)  # names bound when the module runs (not TYPE_CHECKING)
    _defined_as: dict[tuple[tuple[str, ...], str], str | None] = field(default_factory=dict, repr=False)

    @classmethod
    def gather(cls, lines: Sequence[str], segments: Sequence[tuple[int, int, int]]) -> ModuleFacts:
        """One pass over the module's top-level statements; `Unparsable` when they do not parse."""
        facts = cls()
        position = 0
        prelude = True
        plain_anchor = other_anchor = None
        for batch in statement_batches(lines, segments):
            for statement in batch:
                if prelude:
                    docstring = position == 0 and isinstance(statement, ast.Expr) and isinstance(
                        statement.value, ast.Constant) and isinstance(statement.value.value, str)
                    future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
                    if docstring or future:
                        facts.prelude_line = (statement.end_lineno or statement.lineno) + 1
                    else:
                        prelude = False
                position += 1
                if isinstance(statement, (ast.Import, ast.ImportFrom)) and statement.col_offset == 0:
                    described = (statement.lineno, isinstance(statement, ast.ImportFrom),
                                 getattr(statement, "module", None), getattr(statement, "level", 0) or 0)
                    if isinstance(statement, ast.Import):
                        plain_anchor = plain_anchor or described
                    elif statement.module != "__future__":
                        other_anchor = other_anchor or described
                facts._read_copy_import(statement)
                facts._read_bindings(statement)
                facts._read_defined(statement)
                facts._read_runtime_names(statement)
                facts.first_lines.append(first_line(statement))
                facts.is_definition.append(isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                  ast.ClassDef)))
        facts.anchor = plain_anchor or other_anchor
        return facts

    def _read_copy_import(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.name == COPY_MODULE:
                    self.copy_spelled = self.copy_spelled or f"{alias.asname or COPY_MODULE}.copy"
        elif isinstance(statement, ast.ImportFrom) and statement.module == COPY_MODULE and not statement.level:
            for alias in statement.names:
                if alias.name == "copy":
                    self.copy_spelled = alias.asname or "copy"

    def _read_bindings(self, statement: ast.stmt) -> None:
        """Each name a module-level statement other than an import binds (a `def`, a class, an assignment, a
        loop target), at the line where a search for that name alone meets it first."""
        bindings = self.bindings
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bindings.setdefault(statement.name, statement.lineno)
            return
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            return
        stack: list[ast.AST] = [statement]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bindings.setdefault(node.name, node.lineno)
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bindings.setdefault(node.id, node.lineno)
            if isinstance(node, (ast.Import, ast.ImportFrom)):  # under `if` / `try`: not seen as the module's
                for alias in node.names:
                    plain = isinstance(node, ast.Import) and alias.name == COPY_MODULE and not alias.asname
                    if not plain:
                        bindings.setdefault(alias.asname or alias.name.partition(".")[0], node.lineno)
                continue
            stack.extend(ast.iter_child_nodes(node))

    def _read_defined(self, statement: ast.stmt) -> None:
        if isinstance(statement, ast.ClassDef):
            self.defined.append(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            self.defined.extend(target.id for target in targets if isinstance(target, ast.Name))

    def _read_runtime_names(self, statement: ast.stmt) -> None:
        names = self.runtime_names
        statements: list[ast.stmt] = [statement]
        while statements:
            current = statements.pop()
            if isinstance(current, (ast.Import, ast.ImportFrom)):
                names.update((alias.asname or alias.name).partition(".")[0] for alias in current.names)
            elif isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(current.name)
            elif isinstance(current, ast.If):
                test = current.test
                spelled = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
                if spelled != "TYPE_CHECKING":
                    statements += current.body
                statements += current.orelse
            elif isinstance(current, (ast.Try, ast.With)):
                blocks = ("body", "orelse", "finalbody")
                statements += [s for block in blocks for s in getattr(current, block, [])]
                statements += [s for handler in getattr(current, "handlers", []) for s in handler.body]
            else:
                names.update(node.id for node in ast.walk(current)
                             if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))

    def following_statement(self, line: int) -> bool | None:
        """Whether the first statement starting at or after `line` is a `def` or a class (None: there is none)."""
        position = bisect.bisect_left(self.first_lines, line)
        return self.is_definition[position] if position < len(self.first_lines) else None

    def defined_as(self, configured: tuple[str, ...], module_name: str) -> str | None:
        """The first module-level class or assignment that defines one of the configured names (asked once per
        tuple of names: each finding of the file asks the same)."""
        key = (configured, module_name)
        if key not in self._defined_as:
            self._defined_as[key] = next((
                name for name in self.defined
                if matches(f"{module_name}.{name}" if module_name else name, configured)
            ), None)
        return self._defined_as[key]

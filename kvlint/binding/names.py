"""Resolve spelled names to dotted names through a module's imports (no libcst here).

libcst's QualifiedNameProvider would do this too, but it resolves every name of
the whole module (ten times the parse, docs/design.md "Why it is fast"); the rules only need
the module's import table and the callee of a few calls.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable


def walk_statements(tree: ast.AST) -> list[ast.stmt]:
    """Return every statement of a module at any depth, without visiting expressions.

    Imports, definitions and annotations are statements; skipping the
    expressions makes this several times cheaper than `ast.walk`.
    """
    found: list[ast.stmt] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        stack.extend(child_statements(node))
        if isinstance(node, ast.stmt):
            found.append(node)
    return found


def child_statements(node: ast.AST) -> list[ast.AST]:
    """The statements (and except handlers, match cases) directly inside a node."""
    children: list[ast.AST] = []
    for name in _block_fields(type(node)):
        children.extend(getattr(node, name))
    return children


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


@functools.cache
def _block_fields(node_type: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a statement type that hold statements: most simple statements have none,
    and asking the type once beats five `getattr` calls per statement (vLLM's files have 50,000)."""
    return tuple(name for name in _BLOCK_FIELDS if name in node_type._fields)


def _module_of_relative(module_name: str, is_package: bool, level: int, target: str) -> str:
    """Return the absolute module named by a relative import."""
    package = module_name.split(".") if is_package else module_name.split(".")[:-1]
    if level > 1:
        package = package[: len(package) - (level - 1)]
    return ".".join([*package, target] if target else package)


class ImportTable:
    """The names a module binds by import, mapped to the dotted names they refer to.

    Built from the module's `ast` (the engine parses it anyway for syntax errors),
    so the table costs one cheap walk. Imports anywhere in the module count (vLLM
    often imports inside functions); the last import of a name wins.
    """

    def __init__(self, bindings: dict[str, str] | None = None, modules: Iterable[str] = (), stars: Iterable[str] = ()):
        self.bindings: dict[str, str] = dict(bindings or {})
        # what the imports name as written, made absolute: `a.b` (`import a.b`), `a.b.C` (`from a.b import C`)
        self.modules: frozenset[str] = frozenset(modules)
        # the modules `from m import *` binds every public name of (which names, the binder knows)
        self.stars: tuple[str, ...] = tuple(stars)

    @classmethod
    def from_ast(cls, tree: ast.AST, module_name: str = "", is_package: bool = False) -> ImportTable:
        """Collect the import bindings of a parsed module."""
        return cls.from_statements(walk_statements(tree), module_name, is_package)

    @classmethod
    def from_statements(
        cls, statements: Iterable[ast.stmt], module_name: str = "", is_package: bool = False
    ) -> ImportTable:
        """Collect the import bindings among a module's statements (`walk_statements`)."""
        bindings: dict[str, str] = {}
        modules: set[str] = set()
        stars: list[tuple[int, str]] = []  # (line, source): in the order the module runs them
        for node in statements:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    modules.add(alias.name)
                    if alias.asname:
                        bindings[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        bindings[root] = root
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level:
                    source = _module_of_relative(module_name, is_package, node.level, source)
                if source:
                    modules.add(source)
                for alias in node.names:
                    if alias.name == "*":
                        if source:
                            stars.append((node.lineno, source))
                        continue
                    bindings[alias.asname or alias.name] = f"{source}.{alias.name}" if source else alias.name
                    modules.add(bindings[alias.asname or alias.name])
        return cls(bindings, modules, dict.fromkeys(source for _, source in sorted(stars)))

    def resolve_dotted(self, spelled: str) -> str:
        """Return the dotted name a spelled `a.b.c` refers to, through imports."""
        root, _, rest = spelled.partition(".")
        target = self.bindings.get(root, root)
        return f"{target}.{rest}" if rest else target

    def aliases_of(self, configured: Iterable[str]) -> frozenset[str]:
        """Return the local names bound to any of the configured names."""
        configured = tuple(configured)
        return frozenset(name for name, target in self.bindings.items() if matches(target, configured))


def matches(qualified: str | None, configured: Iterable[str]) -> bool:
    """Say whether a resolved name is one of the configured names.

    A configured name without a dot matches the last component (so
    `self._get_kv_connector_output` and an aliased import both match); a dotted
    one matches the whole name or its trailing components.
    """
    if not qualified:
        return False
    last = qualified.rpartition(".")[2]
    for name in configured:
        if "." in name:
            if qualified == name or qualified.endswith("." + name):
                return True
        elif last == name:
            return True
    return False


def ast_dotted_name(node: ast.expr) -> str | None:
    """Return `a.b.c` for an ast Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def first_line(node: ast.stmt) -> int:
    """A statement's first line, its decorators included."""
    return min([node.lineno, *(decorator.lineno for decorator in getattr(node, "decorator_list", ()))])

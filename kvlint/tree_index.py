"""The interprocedural minimum: which functions of the tree return `KVConnectorOutput | None`.

Built before the per-file pass from each file's `ast` (cheap), so a call in one
file to a function declared Optional in another is a KVC001 source. Calls
resolve by qualified name where the import table gives one; a method call
`obj.name()` resolves by name only when every definition of that name in the
tree returns Optional (precision first: one non-Optional definition and the
call is not a source).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from kvlint.annotations import AnnotationKind, classify_annotation
from kvlint.names import ImportTable, child_statements


@dataclass(frozen=True, order=True)
class FunctionReturn:
    """One function or method definition and whether it returns Optional payload."""

    qualname: str  # module.Class.method
    name: str
    returns_optional_payload: bool


def index_entries(tree: ast.AST, module_name: str, imports: ImportTable, payload_class: str) -> list[FunctionReturn]:
    """List the function definitions of one module with their return kind."""
    entries: list[FunctionReturn] = []
    stack: list[tuple[ast.AST, str]] = [(tree, module_name)]
    while stack:
        node, prefix = stack.pop()
        for child in child_statements(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                kind = classify_annotation(child.returns, imports.resolve_dotted, (payload_class,))
                qualname = f"{prefix}.{child.name}" if prefix else child.name
                entries.append(FunctionReturn(qualname, child.name, kind is AnnotationKind.OPTIONAL_PAYLOAD))
                stack.append((child, f"{qualname}.<locals>"))
            elif isinstance(child, ast.ClassDef):
                stack.append((child, f"{prefix}.{child.name}" if prefix else child.name))
            else:
                stack.append((child, prefix))
    return sorted(entries)


class TreeIndex:
    """Answers: does a call to this callee return `KVConnectorOutput | None`?"""

    def __init__(self, entries: Iterable[FunctionReturn] = (), other_definitions: Iterable[str] = ()):
        entries = list(entries)
        self.optional_qualnames = frozenset(e.qualname for e in entries if e.returns_optional_payload)
        optional_names = {e.name for e in entries if e.returns_optional_payload}
        plain_names = {e.name for e in entries if not e.returns_optional_payload} | set(other_definitions)
        self.optional_method_names = frozenset(optional_names - plain_names)

    def candidate_names(self) -> frozenset[str]:
        """Names whose mention makes a file worth analysing (they may be called)."""
        return frozenset(q.rpartition(".")[2] for q in self.optional_qualnames)

    def returns_optional(self, callee: str, module_name: str) -> bool:
        """Say whether a call to the resolved callee returns Optional payload."""
        if callee in self.optional_qualnames or f"{module_name}.{callee}" in self.optional_qualnames:
            return True
        return "." in callee and callee.rpartition(".")[2] in self.optional_method_names

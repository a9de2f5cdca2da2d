"""Tell whether a type annotation spells `KVConnectorOutput` or its Optional.

One interpreter for every spelling (`Optional[X]`, `X | None`, `Union[X, None]`,
string annotations, `typing.` prefixes, import aliases), shared by the tree
index (which reads `ast`) and the flow analysis (which hands over libcst text).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable, Iterable

from kvlint.names import matches

Resolver = Callable[[str], str]


class AnnotationKind(enum.Enum):
    """What an annotation says about a value."""

    PAYLOAD = "payload"  # KVConnectorOutput
    OPTIONAL_PAYLOAD = "optional-payload"  # KVConnectorOutput | None


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


def classify_annotation(
    node: ast.expr | None, resolve: Resolver, payload_classes: Iterable[str]
) -> AnnotationKind | None:
    """Classify an annotation; None when it is neither the payload nor its Optional."""
    payload_classes = tuple(payload_classes)
    members = _union_members(node, resolve, depth=0)
    if members is None:
        return None
    has_none = any(m is None for m in members)
    named = [m for m in members if m is not None]
    if len(named) != 1 or not matches(named[0], payload_classes):
        return None
    return AnnotationKind.OPTIONAL_PAYLOAD if has_none else AnnotationKind.PAYLOAD


def classify_annotation_text(
    text: str, resolve: Resolver, payload_classes: Iterable[str]
) -> AnnotationKind | None:
    """Classify an annotation given as source text."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return classify_annotation(node, resolve, payload_classes)


def _union_members(node: ast.expr | None, resolve: Resolver, depth: int) -> list[str | None] | None:
    """Flatten a union annotation into resolved names (None for `None`)."""
    if node is None or depth > 8:
        return None
    if isinstance(node, ast.Constant):
        if node.value is None:
            return [None]
        if isinstance(node.value, str):
            try:
                inner = ast.parse(node.value.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
            return _union_members(inner, resolve, depth + 1)
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _union_members(node.left, resolve, depth + 1)
        right = _union_members(node.right, resolve, depth + 1)
        if left is None or right is None:
            return None
        return left + right
    if isinstance(node, ast.Subscript):
        origin = ast_dotted_name(node.value)
        if origin is None:
            return None
        resolved = resolve(origin)
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if matches(resolved, ("Optional",)) and len(args) == 1:
            inner = _union_members(args[0], resolve, depth + 1)
            return None if inner is None else [*inner, None]
        if matches(resolved, ("Union",)):
            members: list[str | None] = []
            for arg in args:
                inner = _union_members(arg, resolve, depth + 1)
                if inner is None:
                    return None
                members.extend(inner)
            return members
        return None
    name = ast_dotted_name(node)
    if name is None:
        return None
    return [resolve(name)]

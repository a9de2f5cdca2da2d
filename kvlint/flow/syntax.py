"""Small questions about libcst syntax the flow analysis asks: reference keys, literals, patterns."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator

import libcst as cst

from kvlint.names import ImportTable


def dotted_name(node: cst.BaseExpression) -> str | None:
    """Return `a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def ref_key(node: cst.BaseExpression) -> str | None:
    """Return the key of a reference expression (name, member chain, simple index)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = ref_key(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            inner = index.value
            if isinstance(inner, (cst.Integer, cst.SimpleString)):
                text = inner.value
            elif isinstance(inner, cst.Name):
                text = inner.value
            else:
                return None
            base = ref_key(node.value)
            return None if base is None else f"{base}[{text}]"
    return None


def is_none_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None" and not node.lpar


def _is_true_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "True"
    return isinstance(node, cst.Integer) and node.value not in ("0", "0x0", "0o0", "0b0")


def _is_false_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "False"
    return isinstance(node, cst.Integer) and node.value == "0"


def _is_none_pattern(pattern: cst.MatchPattern) -> bool:
    return isinstance(pattern, cst.MatchSingleton) and is_none_literal(pattern.value)


def _pattern_names(pattern: cst.CSTNode) -> Iterator[str]:
    """Yield the names a match pattern binds."""
    stack = [pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.MatchAs) and node.name is not None:
            yield node.name.value
        elif isinstance(node, cst.MatchStar) and node.name is not None:
            yield node.name.value
        elif isinstance(node, cst.MatchMapping) and node.rest is not None:
            yield node.rest.value
        stack.extend(node.children)


def imports_from_cst(module: cst.Module, module_name: str, is_package: bool) -> ImportTable:
    """The import table of a module only libcst could parse (syntax newer than this Python)."""
    import ast

    statements: list[ast.stmt] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            try:
                statements.extend(ast.parse(cst.Module(body=[cst.SimpleStatementLine(body=[node])]).code).body)
            except (SyntaxError, ValueError):
                pass
        elif not isinstance(node, cst.BaseExpression):
            stack.extend(node.children)
    return ImportTable.from_ast(ast.Module(body=statements, type_ignores=[]), module_name, is_package)


_AFTER_OPENING = re.compile(r"([(\[{]) ")
_BEFORE_CLOSING = re.compile(r",? ([)\]}])")  # a line's trailing comma goes with its break
_BEFORE_COMMA = re.compile(r" ,")
MAX_SHOWN = 80


def one_line(code: str) -> str:
    """Source text as messages show it: on one line, without comments and without the spaces a line break
    left inside brackets (`has_kv_transfer_group()`, not `has_kv_transfer_group( )`), and shortened at a
    word boundary."""
    text = _AFTER_OPENING.sub(r"\1", " ".join(_without_comments(code).split()))
    text = _BEFORE_COMMA.sub(",", _BEFORE_CLOSING.sub(r"\1", text))
    if len(text) <= MAX_SHOWN:
        return text
    cut = max(text.rfind(char, 0, MAX_SHOWN - 3) for char in " ,.([")
    if cut < MAX_SHOWN // 2:
        cut = MAX_SHOWN - 3
    elif text[cut] in ".([":
        cut += 1  # keep `x.` or `f(`; a cut after a space or comma drops the separator
    return text[:cut].rstrip(" ,") + "..."


def _without_comments(code: str) -> str:
    """The code with its comments taken out (a `#` inside a string stays); as it is when it does not tokenize."""
    if "#" not in code:
        return code
    try:
        kept = [token for token in tokenize.generate_tokens(io.StringIO(code).readline)
                if token.type != tokenize.COMMENT]
        return tokenize.untokenize(kept)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return code

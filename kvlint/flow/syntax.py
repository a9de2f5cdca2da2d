"""Small questions about `ast` syntax the flow analysis asks: reference keys, literals, patterns,
call arguments and parameters in source order, operator spellings."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from typing import NamedTuple

from kvlint.binding.names import ast_dotted_name


dotted_name = ast_dotted_name  # `a.b.c` of a Name/Attribute chain, else None (the declarations' own)


def ref_key(node: ast.AST) -> str | None:
    """Return the key of a reference expression (name, member chain, simple index)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = ref_key(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Subscript):
        index = node.slice
        if isinstance(index, ast.Constant):
            text = _literal(index.value)
            if text is None:
                return None
        elif isinstance(index, ast.Name):
            text = index.id
        else:
            return None
        base = ref_key(node.value)
        return None if base is None else f"{base}[{text}]"
    return None


def _literal(value: object) -> str | None:
    """A constant index as a key spells it: a string in double quotes, as vLLM's code writes it (None for
    an integer too long to print)."""
    try:
        text = repr(value)
    except ValueError:  # more digits than `sys.get_int_max_str_digits()` allows
        return None
    if isinstance(value, str) and text.startswith("'") and '"' not in value and "\\" not in text:
        return f'"{value}"'
    return text


def is_none_literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_true_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (bool, int) and bool(node.value)


def _non_empty_literal(node: ast.expr) -> bool:
    """A tuple, list or set display with an element that is not unpacked: iterating it runs a body once at least."""
    return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(
        not isinstance(element, ast.Starred) for element in node.elts
    )


def _is_false_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (bool, int) and not node.value


def _is_none_pattern(pattern: ast.pattern) -> bool:
    return isinstance(pattern, ast.MatchSingleton) and pattern.value is None


def _pattern_names(pattern: ast.AST) -> Iterator[str]:
    """Yield the names a match pattern binds."""
    for node in ast.walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name is not None:
            yield node.name
        elif isinstance(node, ast.MatchMapping) and node.rest is not None:
            yield node.rest


class Argument(NamedTuple):
    """One argument of a call as it is written: `star` is "", "*" or "**"; `keyword` None unless `k=v`."""

    value: ast.expr
    keyword: str | None = None
    star: str = ""


def call_arguments(call: ast.Call) -> list[Argument]:
    """The call's arguments in source order (`ast` keeps positional and keyword ones apart)."""
    found = [Argument(arg.value, None, "*") if isinstance(arg, ast.Starred) else Argument(arg) for arg in call.args]
    found += [Argument(kw.value, kw.arg, "" if kw.arg is not None else "**") for kw in call.keywords]
    if call.keywords and call.args:
        found.sort(key=lambda a: (a.value.lineno, a.value.col_offset))
    return found


class Parameter(NamedTuple):
    """One parameter of a function or lambda: `star` is "", "*" or "**"."""

    name: str
    annotation: ast.expr | None
    default: ast.expr | None
    star: str
    node: ast.arg


def parameters(args: ast.arguments) -> list[Parameter]:
    """Every parameter in declaration order: positional-only, ordinary, *args, keyword-only, **kwargs."""
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    found = [Parameter(a.arg, a.annotation, d, "", a) for a, d in zip(positional, defaults)]
    if args.vararg is not None:
        found.append(Parameter(args.vararg.arg, args.vararg.annotation, None, "*", args.vararg))
    found += [Parameter(a.arg, a.annotation, d, "", a) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg is not None:
        found.append(Parameter(args.kwarg.arg, args.kwarg.annotation, None, "**", args.kwarg))
    return found


OPERATORS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.MatMult: "@", ast.Div: "/", ast.Mod: "%", ast.Pow: "**",
    ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&", ast.FloorDiv: "//",
    ast.Invert: "~", ast.Not: "not", ast.UAdd: "+", ast.USub: "-",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
}


def operator_text(operator: ast.AST) -> str:
    """How an operator is spelled (`|`, `not in`)."""
    return OPERATORS[type(operator)]


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


_AFTER_OPENING = re.compile(r"([(\[{]) ")
_BEFORE_CLOSING = re.compile(r",? ([)\]}])")  # a line's trailing comma goes with its break
_BEFORE_COMMA = re.compile(r" ,")
MAX_SHOWN = 80


def one_line(code: str) -> str:
    """Source text as messages show it: on one line, without comments and without the spaces a line break
    left inside brackets (`has_kv_transfer_group()`, not `has_kv_transfer_group( )`), and shortened at a
    word boundary."""
    words = _without_comments(code).split()
    if len(words) == 1:  # no space left for the patterns to take out (most operands: `out.kv_connector_output`)
        text = words[0]
    else:
        text = _AFTER_OPENING.sub(r"\1", " ".join(words))
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

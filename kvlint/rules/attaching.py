"""The edits KVC002, KVC003 and KVC006 share: hand the one connector output in scope to what is returned.

Every invariant is served by the same code: its field, sentinel and attaching helpers come from
`kvlint/invariants.py`. A builder raises `NoFix` where the right edit is ambiguous.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from kvlint.fixing.context import NoFix, is_cst_none
from kvlint.fixing.model import Edit
from kvlint.sites import Site

if TYPE_CHECKING:
    from kvlint.fixing.context import FixContext
    from kvlint.invariants import Invariant


def the_candidate(site: Site) -> str:
    """The one local name holding the site's connector output; `NoFix` when there is none or several."""
    field = site.field or "the connector output"
    if not site.candidates:
        raise NoFix(f"no local name holds a `{field}` value here to attach")
    if len(site.candidates) > 1:
        named = ", ".join(f"`{name}`" for name in site.candidates)
        raise NoFix(f"several local names may hold the `{field}` value ({named}): which to attach is your call")
    return site.candidates[0]


def return_with_output(site: Site, context: FixContext, value: str, keep_none: bool) -> tuple[str, tuple[Edit, ...]]:
    """Replace the reported `return` by one that returns an output carrying `value`: the attaching helper of
    the tree's output class, else a copy of the sentinel with the field set. With `keep_none`, a None
    `value` still returns what the statement returned before. Returns the fix's title and edits."""
    invariant = context.invariant(site.invariant)
    node = context.node_at(site.span, cst.Return)
    line = context.own_line_statement(node, "`return`")
    original = context.code(node)
    helper = context.attaching_helper(invariant, node) if _bare(node.value, context, invariant) else None
    if helper is not None and context.span(node) in context.shared_returns:
        helper = None  # another invariant's output is dropped here too: the helper would set only this one
    if helper is not None:
        call = f"{helper}({value})"
        returned = f"{call} if {value} is not None else {_returned(node, context)}" if keep_none else call
        return f"Return `{call}`", (context.replace(context.span(node), f"return {returned}"),)
    sentinel = _sentinel(node, context, invariant)
    if _is_copy(node.value, context):
        copied, imports = sentinel, ()  # `return copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)`: that copy will do
    else:
        copy, imports = context.copy_function(node)
        copied = f"{copy}({sentinel})"
    name = context.fresh_name(node, "output", f"{invariant.name}_output")
    start, indent = context.statement_start(line)
    newline = context.newline(context.span(node).line)
    unit = context.indent_unit
    body = [f"{name} = {copied}", f"{name}.{invariant.field_name} = {value}", f"return {name}"]
    if keep_none:
        lines = [f"if {value} is not None:", *(unit + text for text in body), original]
    else:
        lines = body
    replacement = (newline + indent).join(lines)
    title = f"Return a copy of `{sentinel}` with `{invariant.field_name}={value}`"
    return title, (*imports, context.replace(context.span(node), replacement))


def _bare(value: cst.BaseExpression | None, context: FixContext, invariant: Invariant) -> bool:
    """What is returned carries nothing the attaching helper's new output would lose: None, the sentinel
    itself or a copy of it made in the `return`. A name may hold a copy with other fields set."""
    from kvlint.fixing.context import cst_dotted_name
    from kvlint.rules.kvc004_shared_sentinel_mutation import _is_sentinel

    if value is None or is_cst_none(value):
        return True
    if _is_copy(value, context):
        value = value.args[0].value if len(value.args) == 1 else None  # type: ignore[union-attr]
    spelled = cst_dotted_name(value) if value is not None else None
    return bool(spelled) and _is_sentinel(context, spelled or "", invariant.empty_sentinels)


def _is_copy(value: cst.BaseExpression | None, context: FixContext) -> bool:
    """`copy.copy(...)`, `copy.deepcopy(...)` or `dataclasses.replace(...)`, however the module spells them."""
    from kvlint.flow.expressions import COPY_FUNCTIONS
    from kvlint.fixing.context import cst_dotted_name
    from kvlint.binding.names import matches

    if not isinstance(value, cst.Call):
        return False
    return matches(context.imports.resolve_dotted(cst_dotted_name(value.func) or ""), COPY_FUNCTIONS)


def _returned(node: cst.Return, context: FixContext) -> str:
    return "None" if node.value is None else context.code(node.value)


def _sentinel(node: cst.Return, context: FixContext, invariant: Invariant) -> str:
    """The sentinel as the returned expression spells it, else as the module names it."""
    value = node.value
    if value is not None and not is_cst_none(value):
        return context.code(value)  # the sentinel, an alias or a bare copy of it: a copy of it is as empty
    spelled = context.local_spelling(invariant.empty_sentinels)
    if spelled is not None and not context.visible_at_runtime(spelled, node):
        raise NoFix(f"`{spelled}` is not bound where the code runs (imported only for type checking, or in "
                    "another function)")
    if spelled is None:
        raise NoFix(
            f"the module imports neither an attaching helper's class nor `{invariant.empty_sentinels[0]}`"
            if invariant.empty_sentinels else "the invariant names no empty sentinel to copy"
        )
    return spelled


def keyword_edit(call: cst.Call, context: FixContext, keyword: str, value: str) -> Edit:
    """Pass `keyword=value` to the call: replace a `keyword=None` it has, else add the argument after the last
    one in the call's own layout (one argument per line keeps that)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            if not is_cst_none(arg.value):
                raise NoFix(f"the call passes `{keyword}=` already")
            return context.replace(context.span(arg.value), value)
    if any(arg.star for arg in call.args):
        raise NoFix("the call passes `*args` or `**kwargs`: where the argument goes is your call")
    positional = sum(1 for arg in call.args if arg.keyword is None)
    if positional:
        fields = _fields(call, context)
        if fields is None:
            raise NoFix(f"the call passes arguments by position and kvlint cannot see the class's fields: "
                        f"`{keyword}=` might be given twice")
        if keyword in fields[:positional]:
            raise NoFix(f"the call passes `{keyword}` by position: replace that argument")
    span = context.span(call)
    if not call.args:
        if span.end_line != span.line:
            raise NoFix("the call's parentheses span several lines with nothing between them")
        return context.replace(_at(span.end_line, span.end_column - 1), f"{keyword}={value}")
    last = context.span(call.args[-1].value)
    line_text = context.lines[last.end_line - 1]
    rest = line_text[last.end_column :]
    stripped = rest.lstrip(" \t")
    if stripped.startswith(","):
        after_comma = stripped[1:].strip()
        if after_comma and not after_comma.startswith("#"):  # `f(a=1, )`: the same line goes on
            comma = last.end_column + len(rest) - len(stripped) + 1
            return context.replace(_at(last.end_line, comma), f" {keyword}={value},")
        first = context.span(call.args[-1])
        indent = context.indentation(first.line)
        if first.column != len(indent):
            raise NoFix("the call's last argument does not start its line")
        return context.replace(_at(last.end_line + 1, 0), f"{indent}{keyword}={value},{context.newline(last.end_line)}")
    return context.replace(_at(last.end_line, last.end_column), f", {keyword}={value}")


def _fields(call: cst.Call, context: FixContext) -> tuple[str, ...] | None:
    """The constructed class's fields in positional order, None when the tree does not declare the class."""
    from kvlint.fixing.context import cst_dotted_name

    spelled = cst_dotted_name(call.func) or ""
    resolved = context.imports.resolve_dotted(spelled) if spelled else ""
    if resolved and "." not in resolved and context.module_name:
        resolved = f"{context.module_name}.{resolved}"
    declared = context.index.class_named(resolved, context.module_name) if resolved else None
    return context.index.fields(declared.qualname) if declared is not None else None


def _at(line: int, column: int):  # type: ignore[no-untyped-def]
    from kvlint.sites import Span

    return Span(line, column, line, column)

"""KVC005 unguarded-optional-set: a `set[str] | None` payload field is used as a set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.fixing.model import Applicability, Fix
from kvlint.rules.rule import Rule
from kvlint.sites import DerefTarget, Site, SiteKind

if TYPE_CHECKING:
    from kvlint.fixing.context import FixContext

SET_OPERATORS = ("`|`", "`&`", "`-`", "`^`", "`|=`", "`&=`", "`-=`", "`^=`")


def check(site: Site) -> str | None:
    """Report iteration, `len()`, `in`, set operators or methods on a maybe-None payload field."""
    if site.kind is not SiteKind.DEREFERENCE or site.deref_target is not DerefTarget.PAYLOAD_FIELD:
        return None
    if not site.may_be_none:
        return None
    if site.sink.startswith(("attribute", "call", "subscript")):  # a method, a member: no `or ()` helps there
        return f"`{site.operand}` may be None; check it before the {site.sink}"
    return f"`{site.operand}` may be None; use `{site.operand} or ()` or check it before the {site.sink}"


def fix(site: Site, context: FixContext) -> Fix:
    """Default the field where it is used: `(x or ())`, `(x or set())` beside a set operator."""
    import libcst as cst

    from kvlint.fixing.context import NoFix

    operand = context.node_at(site.operand_span, cst.BaseExpression)
    context.check_not_self_documenting(operand)
    parent = context.parent(operand)
    if site.sink in SET_OPERATORS:
        if isinstance(parent, cst.AugAssign) and parent.target is operand:
            raise NoFix(f"the field is the target of `{context.code(parent.operator).strip()}`: assign it a set first")
        default = "set()"
    elif site.sink == "iteration" or site.sink == "`in`" or site.sink == "`*` unpacking" or (
        site.sink.startswith("`") and site.sink.endswith("()`")
    ):
        default = "()"
    else:
        raise NoFix(f"no default makes the {site.sink} right: check the field for None")
    text = context.code(operand)  # without the operand's own parentheses, which stay around the edit
    if not isinstance(operand, (cst.Name, cst.Attribute, cst.Subscript, cst.Call)):
        text = f"({text})"  # `a if c else None`, `x := ...`: `or` would bind tighter than they do
    argument = isinstance(parent, cst.Arg) and parent.value is operand and parent.keyword is None and not parent.star
    replacement = f"{text} or {default}" if argument else f"({text} or {default})"
    edit = context.replace(context.span(operand), replacement)
    return Fix(f"Use `{context.short(replacement)}`", Applicability.SAFE, (edit,))


RULE = Rule(
    code="KVC005",
    name="unguarded-optional-set",
    summary="A `finished_sending`/`finished_recving` field (`set[str] | None`) is used without a None check",
    what=(
        "Finds iteration, `len()`, `in`, set operators, method calls and other dereferences of a payload field "
        "that may be None (`finished_sending`, `finished_recving` of a KVConnectorOutput) with no `or ()` "
        "default and no None check."
        " Checked for every invariant in one pass: the KV connector's `kv_connector_output` and the encoder-cache "
        "connector's `ec_connector_output` by default, each with its own names; the message names the field."
    ),
    why=(
        "A KVConnectorOutput with nothing finished carries None, not an empty set, in these fields; iterating "
        "it raises `TypeError: 'NoneType' object is not iterable` in the scheduler or executor."
    ),
    bad="""
def release(kvo: KVConnectorOutput):
    for req_id in kvo.finished_recving:
        free(req_id)
""",
    good="""
def release(kvo: KVConnectorOutput):
    for req_id in kvo.finished_recving or ():
        free(req_id)
""",
    options=("payload-class", "payload-optional-fields"),
    check=check,
    site_kinds=frozenset({SiteKind.DEREFERENCE}),
    maybe_none_only=True,
    fix=fix,
    mypy_dereference=DerefTarget.PAYLOAD_FIELD,
    fix_doc=(
        "Safe. The use becomes `(field or ())` (iteration, `in`, `len()`, `*` unpacking, a function that iterates "
        "its argument) or `(field or set())` (beside a set operator). A None payload field means \"nothing "
        "finished\", exactly what an empty set means, so every path that did not raise behaves as before and "
        "the one that raised now sees nothing finished. No fix for a method call, a subscript, an attribute "
        "or the target of `|=`: no default makes those right; nor inside an f-string's `{...=}`, which prints "
        "the expression's own text."
    ),
    fix_before="""
def release(kvo: KVConnectorOutput):
    for req_id in kvo.finished_recving:
        free(req_id)
    return len(kvo.finished_sending), pending | kvo.finished_sending
""",
    fix_after="""
def release(kvo: KVConnectorOutput):
    for req_id in (kvo.finished_recving or ()):
        free(req_id)
    return len(kvo.finished_sending or ()), pending | (kvo.finished_sending or set())
""",
)

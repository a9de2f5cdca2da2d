"""KVC005 unguarded-optional-set: a `set[str] | None` payload field is used as a set."""

from __future__ import annotations

from kvlint.rules.rule import Rule
from kvlint.sites import DerefTarget, Site, SiteKind


def check(site: Site) -> str | None:
    """Report iteration, `len()`, `in`, set operators or methods on a maybe-None payload field."""
    if site.kind is not SiteKind.DEREFERENCE or site.deref_target is not DerefTarget.PAYLOAD_FIELD:
        return None
    if not site.may_be_none:
        return None
    if site.sink.startswith(("attribute", "call", "subscript")):  # a method, a member: no `or ()` helps there
        return f"`{site.operand}` may be None; check it before the {site.sink}"
    return f"`{site.operand}` may be None; use `{site.operand} or ()` or check it before the {site.sink}"


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
)

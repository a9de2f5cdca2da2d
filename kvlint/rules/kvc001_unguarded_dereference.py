"""KVC001 unguarded-dereference: a maybe-None connector output is dereferenced."""

from __future__ import annotations

from kvlint.rules.rule import Rule
from kvlint.sites import DerefTarget, Site, SiteKind


def check(site: Site) -> str | None:
    """Report a dereference of a `KVConnectorOutput | None` the flow could not prove non-None."""
    if site.kind is not SiteKind.DEREFERENCE or site.deref_target is not DerefTarget.CONNECTOR_OUTPUT:
        return None
    if not site.may_be_none:
        return None
    origin = f" (from {site.origin})" if site.origin and site.origin != f"`{site.operand}`" else ""
    if site.origin.startswith("declared "):
        origin = f" ({site.origin})"
    if site.definitely_none:
        return f"`{site.operand}` is None here{origin}; the {site.sink} raises"
    return f"`{site.operand}` may be None{origin}; check it before the {site.sink}"


RULE = Rule(
    code="KVC001",
    name="unguarded-dereference",
    summary="A `KVConnectorOutput | None` value is dereferenced without a None check",
    what=(
        "Finds attribute reads, subscripts, iteration, `len()`, `in`, calls, `with` and arithmetic on a value "
        "that may be None: a read of `kv_connector_output`, a name bound from one, a parameter or attribute "
        "annotated `KVConnectorOutput | None`, the target of an optional context, or the result of a function "
        "declared to return `KVConnectorOutput | None`."
        " Checked for every invariant in one pass: the KV connector's `kv_connector_output` and the encoder-cache "
        "connector's `ec_connector_output` by default, each with its own names; the message names the field."
    ),
    why=(
        "Outputs built from the shared empty sentinel carry `kv_connector_output=None`; dereferencing it raises "
        "`AttributeError: 'NoneType' object has no attribute 'finished_sending'` and kills the engine process."
    ),
    bad="""
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        done.update(kvo.finished_sending or ())
""",
    good="""
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        if kvo is None:
            continue
        done.update(kvo.finished_sending or ())
""",
    options=("optional-fields", "payload-class", "optional-contexts"),
    check=check,
)

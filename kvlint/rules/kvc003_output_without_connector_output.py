"""KVC003 output-without-connector-output: an output is built on a connector path without its KVConnectorOutput."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.fixing.model import Applicability, Fix
from kvlint.rules.rule import Rule
from kvlint.sites import Site, SiteKind

if TYPE_CHECKING:
    from kvlint.fixing.context import FixContext


def check(site: Site) -> str | None:
    """Report an output construction on a connector path that passes no connector output."""
    if site.kind is not SiteKind.OUTPUT_CONSTRUCTION or not site.on_connector_path:
        return None
    if site.carries_connector_output is not False:
        return None
    name = site.expression.split("(", 1)[0]
    field = site.field or "kv_connector_output"
    what = f"with `{field}=None`" if site.connector_output_argument else f"without `{field}=`"
    return f"`{name}(...)` on a connector path ({site.path_reason}) {what}"


def fix(site: Site, context: FixContext) -> Fix:
    """Pass the one connector output in scope to the construction: `kv_connector_output=v`."""
    import libcst as cst

    from kvlint.rules.attaching import keyword_edit, the_candidate

    value = the_candidate(site)
    field = context.invariant(site.invariant).field_name
    call = context.node_at(site.span, cst.Call)
    edit = keyword_edit(call, context, field, value)
    safe = value in site.proven_candidates
    return Fix(f"Pass `{field}={value}`", Applicability.SAFE if safe else Applicability.UNSAFE, (edit,))


RULE = Rule(
    code="KVC003",
    name="output-without-connector-output",
    summary="An output is constructed on a KV-connector path without a KVConnectorOutput",
    what=(
        "Finds constructions of an output class (`ModelRunnerOutput(...)`) at a point on a connector path that "
        "pass no `kv_connector_output=` argument, or pass `kv_connector_output=None`."
        " Checked for every invariant in one pass: the KV connector's `kv_connector_output` and the encoder-cache "
        "connector's `ec_connector_output` by default, each with its own names; the message names the field."
    ),
    why=(
        "Consumers rely on the invariant that an output produced with an active connector carries its "
        "KVConnectorOutput; an output built without one drops finished transfers and breaks that promise."
    ),
    bad="""
def finish_step(self, sched, tokens):
    with self._get_kv_connector_output(sched) as kvo:
        tokens = self.run(sched)
    return ModelRunnerOutput(req_ids=sched.req_ids, sampled_token_ids=tokens)
""",
    good="""
def finish_step(self, sched, tokens):
    with self._get_kv_connector_output(sched) as kvo:
        tokens = self.run(sched)
    return ModelRunnerOutput(req_ids=sched.req_ids, sampled_token_ids=tokens, kv_connector_output=kvo)
""",
    options=("output-classes", "optional-fields", "connector-guards", "connector-contexts"),
    check=check,
    site_kinds=frozenset({SiteKind.OUTPUT_CONSTRUCTION}),
    fix=fix,
    fix_doc=(
        "When exactly one local name `v` holds the connector output there, the construction gets "
        "`kv_connector_output=v` (the invariant's field): a `kv_connector_output=None` it passes becomes `v`, "
        "else the keyword is added after the last argument in the call's own layout. Safe when the flow proves "
        "`v` is not None there and does not show it empty: the output then carries the transfers it would "
        "have lost, and nothing else changes. Unsafe when `v` may be None or is known to be empty (leaving an "
        "empty output out may be deliberate). No fix when no name or several names hold a connector output, "
        "or the call passes `*args`/`**kwargs` or the field by position, or passes arguments by position to a "
        "class the tree does not declare (the keyword might then be given twice)."
    ),
    fix_before="""
def finish_step(self, sched):
    with self._get_kv_connector_output(sched) as kvo:
        tokens = self.run(sched)
    return ModelRunnerOutput(
        req_ids=sched.req_ids,
        sampled_token_ids=tokens,  # one list per request
    )
""",
    fix_after="""
def finish_step(self, sched):
    with self._get_kv_connector_output(sched) as kvo:
        tokens = self.run(sched)
    return ModelRunnerOutput(
        req_ids=sched.req_ids,
        sampled_token_ids=tokens,  # one list per request
        kv_connector_output=kvo,
    )
""",
)

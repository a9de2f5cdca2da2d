"""KVC006 kv-output-dropped: a producer returns without the KV output it holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.fixing.model import Applicability, Fix
from kvlint.rules.rule import Rule
from kvlint.sites import Site, SiteKind

if TYPE_CHECKING:
    from kvlint.fixing.context import FixContext


def check(site: Site) -> str | None:
    """Report a return that loses a live KV output value (KVC002/KVC003 sites are not recorded here)."""
    if site.kind is not SiteKind.KV_DROPPED:
        return None
    origin = f" (read from {site.origin})" if site.origin and site.origin != f"`{site.operand}`" else ""
    kv = site.invariant in ("", "kv")
    what = "finished KV transfers" if kv else f"what the `{site.invariant}` connector finished"
    if site.parked_on.startswith("self.") and site.operand == site.parked_on:
        return (
            f"`{site.expression}` drops what `{site.operand}` holds{origin}, which may carry {what}: nothing in "
            f"the project reads `{site.operand}` back; attach it to the output "
            f"(`{site.field or 'kv_connector_output'}=...`) or read `{site.operand}` where the step's output is built"
        )
    if site.parked_on.startswith("self."):
        return (
            f"`{site.expression}` drops `{site.operand}`{origin}, which may carry {what}: it is only stored on "
            f"`{site.parked_on}`, which nothing in the project reads back; attach it to the output "
            f"(`{site.field or 'kv_connector_output'}={site.operand}`) or read `{site.parked_on}` where the "
            "step's output is built"
        )
    if site.parked_on:
        field = site.field or "kv_connector_output"
        callers = ", ".join(site.dropped_by)
        who = f"its caller {callers} drops it" if len(site.dropped_by) == 1 else f"its callers {callers} drop it"
        return (
            f"`{site.operand}`{origin}, which may carry {what}, is only parked on the returned `{site.parked_on}` "
            f"(`{site.parked_class}`), and {who}: it reads other fields and returns without `.{field}`; "
            f"return it in an output (`{field}={site.operand}`) or read it back in the caller"
        )
    return (
        f"`{site.expression}` drops `{site.operand}`{origin}, which may carry {what}; "
        f"attach it to the output (`{site.field or 'kv_connector_output'}={site.operand}`) or hand it on before "
        "returning"
    )


def fix(site: Site, context: FixContext) -> Fix:
    """Hand the dropped value on in what is returned (always unsafe: callers get an output, not None)."""
    import libcst as cst

    from kvlint.fixing.context import NoFix
    from kvlint.fixing.context import cst_dotted_name, is_cst_none
    from kvlint.binding.names import matches
    from kvlint.rules.attaching import keyword_edit, return_with_output, the_candidate

    if site.parked_on and not site.parked_on.startswith("self."):
        raise NoFix("the output is lost in a caller: where it should go back is a design choice")
    if site.operand == site.parked_on:
        raise NoFix(f"`{site.operand}` holds it: where it should be read back is a design choice")
    value = the_candidate(site)
    if value != site.operand:
        raise NoFix(f"`{value}`, not `{site.operand}`, is the one connector output in scope here")
    node = context.node_at(site.span, cst.Return)
    returned = node.value
    invariant = context.invariant(site.invariant)
    if isinstance(returned, cst.Call) and matches(
        context.imports.resolve_dotted(cst_dotted_name(returned.func) or ""), invariant.output_classes
    ):
        edit = keyword_edit(returned, context, invariant.field_name, value)
        return Fix(f"Pass `{invariant.field_name}={value}`", Applicability.UNSAFE, (edit,))
    if returned is not None and _built_output(returned, context, invariant.output_classes):
        raise NoFix("the returned output is built elsewhere: attach the connector output where it is built")
    keep_none = returned is None or is_cst_none(returned)
    title, edits = return_with_output(site, context, value, keep_none=keep_none and value not in site.proven_candidates)
    return Fix(title, Applicability.UNSAFE, edits)


def _built_output(returned: object, context: FixContext, output_classes: tuple[str, ...]) -> bool:
    """The returned name is bound to an output construction in the function (not to the sentinel)."""
    import libcst as cst

    from kvlint.fixing.context import cst_dotted_name
    from kvlint.binding.names import matches
    from kvlint.rules.kvc004_shared_sentinel_mutation import _bindings

    if not isinstance(returned, cst.Name):
        return not isinstance(returned, cst.Call)  # an attribute, a subscript: kvlint cannot tell what it is
    function = context.function_of(returned)
    if function is None:
        return True
    for binding in _bindings(function, returned.value, context):
        value = getattr(binding, "value", None)
        if not isinstance(value, cst.Call):
            continue
        if matches(context.imports.resolve_dotted(cst_dotted_name(value.func) or ""), output_classes):
            return True
    return False


RULE = Rule(
    code="KVC006",
    name="kv-output-dropped",
    summary="A producer returns None, the empty sentinel or an output without the KV output it holds",
    what=(
        "Finds, in a function that produces outputs (it returns `ModelRunnerOutput(...)`, the empty sentinel or "
        "a copy of it, or is declared to return an output class), a `return None`, a return of the sentinel or "
        "of an unmodified copy, or a return of an output built without its connector output, at a point where "
        "the function holds a KV output (read from an output's or the step state's `kv_connector_output`, the "
        "optional context, a call declared `-> KVConnectorOutput | None`, or `KVConnectorOutput(...)`) that may "
        "be non-None and that it has not yet attached, stored, passed to a call or yielded. Where the flow shows "
        "the KV output is None or empty, or the same return is already KVC002 or KVC003, it stays silent."
        " A value stored on `self` (a name holding it, a tuple of them, or the read itself) counts as handed on "
        "unless nothing can read it back: "
        "every mention of the attribute in the project is a store, the class's bases are in sight, and no "
        "module reads attributes by computed names; the message then names the attribute. A value parked on "
        "a returned holder is lost when every caller that tests the holder's class drops it."
        " Checked for every invariant in one pass: the KV connector's `kv_connector_output` and the encoder-cache "
        "connector's `ec_connector_output` by default, each with its own names; the message names the field."
    ),
    why=(
        "The KV output carries `finished_sending` / `finished_recving`: the requests whose KV transfer ended "
        "this step. A path that returns without it never tells the scheduler, so those requests hold their KV "
        "blocks for ever or never start decoding. vLLM's newer model runner shipped this shape: it read the KV "
        "output from its step state and returned `None` on pipeline ranks other than the last."
    ),
    bad="""
def sample(self, grammar_output):
    state, self.step_state = self.step_state, None
    kvo = state.kv_connector_output
    if not self.is_last_rank:
        self.receive_from_last_rank()
        return None
    return ModelRunnerOutput(req_ids=state.req_ids, kv_connector_output=kvo)
""",
    good="""
def sample(self, grammar_output):
    state, self.step_state = self.step_state, None
    kvo = state.kv_connector_output
    if not self.is_last_rank:
        self.receive_from_last_rank()
        return ModelRunnerOutput.with_kv_conn_output_only(kvo) if kvo is not None else None
    return ModelRunnerOutput(req_ids=state.req_ids, kv_connector_output=kvo)
""",
    options=("optional-fields", "output-classes", "empty-sentinels", "optional-contexts"),
    check=check,
    site_kinds=frozenset({SiteKind.KV_DROPPED}),
    fix=fix,
    fix_rewrites_return=True,
    fix_applicabilities=frozenset({Applicability.UNSAFE}),
    fix_doc=(
        "Unsafe: callers that received None (or the bare sentinel) now receive an output carrying the KV "
        "output, on a path kvlint cannot show is a connector path. When the dropped value `v` is the one "
        "connector output in scope: `return None` becomes `return ModelRunnerOutput.with_kv_conn_output_only(v) "
        "if v is not None else None` when the tree's output class defines the attaching helper, else an "
        "`if v is not None:` block returning a copy of the sentinel with the field set, before the original "
        "`return`; a return of the sentinel or of a bare copy returns the helper's output (a copy of what is "
        "returned with the field set where that is a name, or where the return drops another invariant's "
        "output too); a construction returned in place gets `kv_connector_output=v`. No fix when several names "
        "hold a connector output, the output is built elsewhere, the construction passes the field by position, "
        "or the module names neither the helper's class nor the sentinel at run time (an import under "
        "`if TYPE_CHECKING:` does not count)."
    ),
    fix_before="""
from vllm.v1.outputs import ModelRunnerOutput


def sample(self, grammar_output):
    state, self.step_state = self.step_state, None
    kvo = state.kv_connector_output
    if not self.is_last_rank:
        self.receive_from_last_rank()
        return None
    return ModelRunnerOutput(req_ids=state.req_ids, kv_connector_output=kvo)
""",
    fix_after="""
from vllm.v1.outputs import ModelRunnerOutput


def sample(self, grammar_output):
    state, self.step_state = self.step_state, None
    kvo = state.kv_connector_output
    if not self.is_last_rank:
        self.receive_from_last_rank()
        return ModelRunnerOutput.with_kv_conn_output_only(kvo) if kvo is not None else None
    return ModelRunnerOutput(req_ids=state.req_ids, kv_connector_output=kvo)
""",
)

"""KVC006 kv-output-dropped: a producer returns without the KV output it holds."""

from __future__ import annotations

from kvlint.rules.rule import Rule
from kvlint.sites import Site, SiteKind


def check(site: Site) -> str | None:
    """Report a return that loses a live KV output value (KVC002/KVC003 sites are not recorded here)."""
    if site.kind is not SiteKind.KV_DROPPED:
        return None
    origin = f" (read from {site.origin})" if site.origin and site.origin != f"`{site.operand}`" else ""
    kv = site.invariant in ("", "kv")
    what = "finished KV transfers" if kv else f"what the `{site.invariant}` connector finished"
    return (
        f"`{site.expression}` drops `{site.operand}`{origin}, which may carry {what}; "
        f"attach it to the output (`{site.field or 'kv_connector_output'}={site.operand}`) or hand it on before "
        "returning"
    )


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
)

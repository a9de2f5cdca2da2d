"""KVC002 empty-output-on-connector-path: the empty sentinel is returned where a connector is active."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvlint.fixing.model import Applicability, Fix
from kvlint.rules.rule import Rule
from kvlint.sites import SentinelUseKind, Site, SiteKind

if TYPE_CHECKING:
    from kvlint.fixing.context import FixContext


def check(site: Site) -> str | None:
    """Report a return of the empty sentinel at a point on a connector path."""
    if site.kind is not SiteKind.SENTINEL_USE or site.sentinel_use is not SentinelUseKind.RETURNED:
        return None
    if not site.on_connector_path or site.allowed_empty:
        return None
    payload, field = site.payload or "KVConnectorOutput", site.field or "kv_connector_output"
    unchecked = ""
    if site.unchecked_fields:
        names = ", ".join(f"`{name}`" for name in site.unchecked_fields)
        unchecked = f" (not shown empty: its `is_empty()` also counts {names}, which the test left unchecked)"
    return (
        f"`return {site.operand}` on a connector path ({site.path_reason}) drops the {payload}{unchecked}; "
        f"return a copy with `{field}` set"
    )


def fix(site: Site, context: FixContext) -> Fix:
    """Return an output carrying the one connector output in scope, instead of the bare sentinel."""
    from kvlint.rules.attaching import return_with_output, the_candidate

    value = the_candidate(site)
    title, edits = return_with_output(site, context, value, keep_none=False)
    safe = value in site.proven_candidates
    return Fix(title, Applicability.SAFE if safe else Applicability.UNSAFE, edits)


RULE = Rule(
    code="KVC002",
    name="empty-output-on-connector-path",
    summary="The empty sentinel output is returned on a KV-connector path",
    what=(
        "Finds `return EMPTY_MODEL_RUNNER_OUTPUT` (or a name aliasing it without a copy, or a copy of it whose "
        "connector output was never set) at a point where a connector is known to be active: inside or after "
        "the connector context, where a connector output was proven non-None, under `has_kv_transfer_group()`, "
        "or in a function marked `# kvlint: connector-path`. It is checked for each invariant on its own path: "
        "the KV connector's `kv_connector_output` and the encoder-cache connector's `ec_connector_output` "
        "(under `has_ec_transfer()`, `_get_ec_connector_output`); the message names the field."
    ),
    why=(
        "The invariant is: on the connector path every output carries its connector output. The sentinel's "
        "field is None, so returning it there drops finished transfers and hands consumers a None they were "
        "promised would not come. Two schools disagree on the empty case, and `empty-output` chooses per "
        "invariant. `forbid` (the default, the invariant school) reports every such return: consumers may "
        "then rely on `connector active <=> output not None` and never guard. `allow-when-empty` (vLLM's own "
        "contract since `with_kv_conn_output_only`, the defensive school) accepts the bare sentinel where the "
        "flow shows the connector output is empty (`is_empty()` is true, or every payload field is falsy), "
        "because every consumer guards against None anyway and an empty output carries nothing to lose; a "
        "return that drops a non-empty output is still reported, and KVC003 and KVC006 are unaffected."
    ),
    bad="""
def idle_step(sched):
    with _get_kv_connector_output(sched) as kvo:
        pass
    if not kvo.finished_sending and not kvo.finished_recving:
        return EMPTY_MODEL_RUNNER_OUTPUT
    result = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
    result.kv_connector_output = kvo
    return result
""",
    good="""
def idle_step(sched):
    with _get_kv_connector_output(sched) as kvo:
        pass
    result = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
    result.kv_connector_output = kvo
    return result
""",
    options=("empty-sentinels", "connector-guards", "connector-contexts", "connector-functions", "empty-output"),
    check=check,
    site_kinds=frozenset({SiteKind.SENTINEL_USE}),
    fix=fix,
    fix_rewrites_return=True,
    fix_doc=(
        "When exactly one local name `v` holds the connector output there, the return hands it on: "
        "`return ModelRunnerOutput.with_kv_conn_output_only(v)` when the tree's output class defines the "
        "invariant's attaching helper (`attaching-helpers`) and the module imports that class at run time (not only "
        "under `if TYPE_CHECKING:`), the return hands back the bare sentinel (or a copy "
        "made in the `return`) and no other invariant's output is dropped there; else a copy of what is "
        "returned with the field set (`output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)`, "
        "`output.kv_connector_output = v`, `return output`), adding `import copy` if needed: a name holding a "
        "copy keeps the fields set on it, and a return that drops both invariants' outputs hands on both, one "
        "copy each. Safe when the flow proves `v` is not None there (a connector context, "
        "a None check) and does not show it empty: the bare sentinel then loses finished transfers, which no "
        "one means to do, and the fix only hands them on. Unsafe when `v` may be None, or is known to be empty "
        "there (`is_empty()`, every payload set falsy): returning the bare sentinel for an empty output is "
        "vLLM's own contract (`empty-output = \"allow-when-empty\"`), so it may be deliberate, and the fix "
        "changes what callers receive. No fix when no name or several names hold a connector output, or the `return` "
        "shares its line with other statements."
    ),
    fix_before="""
import copy

from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


def idle_step(self, sched):
    with self._get_kv_connector_output(sched) as kvo:
        pass
    if not kvo.finished_sending and not kvo.finished_recving:
        return EMPTY_MODEL_RUNNER_OUTPUT
    return self.run(sched, kvo)
""",
    fix_after="""
import copy

from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


def idle_step(self, sched):
    with self._get_kv_connector_output(sched) as kvo:
        pass
    if not kvo.finished_sending and not kvo.finished_recving:
        output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
        output.kv_connector_output = kvo
        return output
    return self.run(sched, kvo)
""",
)

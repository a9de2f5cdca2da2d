"""KVC002 empty-output-on-connector-path: the empty sentinel is returned where a connector is active."""

from __future__ import annotations

from kvlint.rules.rule import Rule
from kvlint.sites import SentinelUseKind, Site, SiteKind


def check(site: Site) -> str | None:
    """Report a return of the empty sentinel at a point on a connector path."""
    if site.kind is not SiteKind.SENTINEL_USE or site.sentinel_use is not SentinelUseKind.RETURNED:
        return None
    if not site.on_connector_path or site.allowed_empty:
        return None
    payload, field = site.payload or "KVConnectorOutput", site.field or "kv_connector_output"
    return (
        f"`return {site.operand}` on a connector path ({site.path_reason}) drops the {payload}; "
        f"return a copy with `{field}` set"
    )


RULE = Rule(
    code="KVC002",
    name="empty-output-on-connector-path",
    summary="The empty sentinel output is returned on a KV-connector path",
    what=(
        "Finds `return EMPTY_MODEL_RUNNER_OUTPUT` (or a name aliasing it without a copy) at a point where a KV "
        "connector is known to be active: inside or after the connector context, where a connector output was "
        "proven non-None, under `has_kv_transfer_group()`, or in a function marked `# kvlint: connector-path`."
    ),
    why=(
        "The invariant is: on the connector path every output carries a KVConnectorOutput. The sentinel's "
        "`kv_connector_output` is None, so returning it there silently drops finished transfers and hands "
        "consumers a None they were promised would not come."
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
    options=("empty-sentinels", "connector-guards", "connector-contexts", "connector-functions"),
    check=check,
)

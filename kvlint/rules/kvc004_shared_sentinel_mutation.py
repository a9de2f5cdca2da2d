"""KVC004 shared-sentinel-mutation: the process-wide empty sentinel is mutated."""

from __future__ import annotations

from kvlint.rules.rule import Rule
from kvlint.sites import SentinelUseKind, Site, SiteKind


def check(site: Site) -> str | None:
    """Report an attribute assignment, deletion or `setattr` on the sentinel or an alias of it."""
    if site.kind is not SiteKind.SENTINEL_USE or site.sentinel_use is not SentinelUseKind.MUTATED:
        return None
    if site.sink == "shallow-copy member":
        return (
            f"`{site.operand}` is the shared empty sentinel's own container (a shallow copy shares it); mutating "
            "it corrupts every later step; assign a new one or copy with `copy.deepcopy`"
        )
    if site.sink == "member":
        return (
            f"`{site.operand}` belongs to the shared empty sentinel; mutating it corrupts every later step; "
            "mutate a `copy.deepcopy(...)` of the sentinel instead"
        )
    return (
        f"`{site.operand}` is the shared empty sentinel (not a copy); mutating it corrupts every later step; "
        "mutate `copy.copy(...)` of it instead"
    )


RULE = Rule(
    code="KVC004",
    name="shared-sentinel-mutation",
    summary="The shared empty sentinel output is mutated in place",
    what=(
        "Finds attribute assignments, augmented assignments, `del` and `setattr` on the empty sentinel "
        "(`EMPTY_MODEL_RUNNER_OUTPUT`) or on a name bound to it without `copy.copy`, `copy.deepcopy` or "
        "`dataclasses.replace`."
        " Checked for every invariant in one pass: the KV connector's `kv_connector_output` and the encoder-cache "
        "connector's `ec_connector_output` by default, each with its own names; the message names the field."
    ),
    why=(
        "The sentinel is one module-level object returned by every idle step of the process; writing a "
        "KVConnectorOutput into it leaks that step's transfers into every later empty output."
    ),
    bad="""
def idle_step(kvo):
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return output
""",
    good="""
def idle_step(kvo):
    output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
    output.kv_connector_output = kvo
    return output
""",
    options=("empty-sentinels",),
    check=check,
)

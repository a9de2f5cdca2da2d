"""KVC101: a `# kvlint: connector-path` marker that marks nothing.

No site predicate: the flow analysis reads each `def`'s marker when it enters the function and
keeps the names no invariant has (`FlowAnalysis.unknown_markers`); `kvlint.binding.markers` finds the
markers written where no `def`'s header is. The engine reports both, with the messages written here.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvlint.rules.rule import Rule

RULE = Rule(
    code="KVC101",
    name="ineffective-path-marker",
    summary="A `# kvlint: connector-path` marker marks nothing: it is on no `def` line, or names no invariant",
    what=(
        "Reports a `# kvlint: connector-path` comment that puts no function on a connector path: one written "
        "anywhere but a `def`'s header (above the `def`, on a decorator or `class` line, in a body), and each "
        "name in the brackets of `connector-path[...]` that is not an invariant of this configuration "
        "(compared without case; the names the marker does know still apply). A comment that only quotes "
        "the marker in prose is not one."
    ),
    why=(
        "A misplaced or misspelt marker is silently nothing: the function stays off the connector path it was "
        "marked for, so the KVC002, KVC003 and KVC006 findings you asked for by marking it never come, and "
        "nothing says why."
    ),
    bad=(
        "# kvlint: connector-path\n"
        "def kv_idle_step(scheduler_output):\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT\n"
        "\n"
        "def encoder_idle_step(scheduler_output):  # kvlint: connector-path[ecc]\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT\n"
    ),
    good=(
        "def kv_idle_step(scheduler_output):  # kvlint: connector-path\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT  # KVC002: now on the KV connector's path\n"
        "\n"
        "def encoder_idle_step(scheduler_output):  # kvlint: connector-path[ec]\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT  # KVC002: now on the encoder-cache connector's path\n"
    ),
    options=("presets", "invariants"),
)


def unknown_invariants_message(marker: str, unknown: Sequence[str], invariants: Sequence[str]) -> str:
    """The finding on a marker that names `unknown`, none of the configuration's `invariants`."""
    configured = ", ".join(invariants) or "none"
    names = " and ".join(", ".join(f"`{name}`" for name in unknown).rsplit(", ", 1))
    return (f"`{marker}` names {names}, but this configuration's invariants are {configured}: the function "
            f"is on no connector path for {'it' if len(unknown) == 1 else 'them'}")


def misplaced_message(marker: str) -> str:
    """The finding on a marker written where no `def`'s header is."""
    return (f"`{marker}` is not on a `def` line, so it marks nothing: put it on the line of the `def` (or of "
            "the `):` that ends its signature)")

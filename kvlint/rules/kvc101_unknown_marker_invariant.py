"""KVC101: a `# kvlint: connector-path[...]` marker names an invariant the configuration does not have.

No site predicate: the flow analysis reads each `def`'s marker when it enters the function
(`FlowAnalysis.unknown_markers`), and the engine reports each name it could not place.
"""

from __future__ import annotations

from kvlint.rules.rule import Rule

RULE = Rule(
    code="KVC101",
    name="unknown-marker-invariant",
    summary="A `# kvlint: connector-path[...]` marker names no configured invariant",
    what=(
        "Reports each name in the brackets of a `# kvlint: connector-path[...]` comment on a `def` line that "
        "is not the name of an invariant this configuration checks (compared without case). The names it "
        "does know still put the function on their connector paths."
    ),
    why=(
        "A misspelt marker puts the function on no connector path, silently: the KVC002, KVC003 and KVC006 "
        "findings you asked for by marking it stay away, and nothing says why."
    ),
    bad=(
        "def encoder_idle_step(self, scheduler_output):  # kvlint: connector-path[ecc]\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT\n"
    ),
    good=(
        "def encoder_idle_step(self, scheduler_output):  # kvlint: connector-path[ec]\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT  # KVC002: now on the encoder-cache connector's path\n"
    ),
    options=("presets", "invariants"),
)

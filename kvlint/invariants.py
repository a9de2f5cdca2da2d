"""Invariants as data: each names one optional connector-output field and everything around it.

vLLM has two invariants of one shape. `ModelRunnerOutput.kv_connector_output` (the KV connector)
and `ModelRunnerOutput.ec_connector_output` (the encoder-cache connector, vLLM >= 0.13) are each
`Payload | None`, with their own payload sets, guard, contexts and attaching helpers, and one shared
empty sentinel. Every rule is stated for one invariant; the engine checks them all in one pass, and
`InvariantSet` answers "which invariant does this name belong to" for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace

from kvlint.binding.names import matches

EMPTY_OUTPUT_POLICIES = ("forbid", "allow-when-empty")


@dataclass(frozen=True)
class Invariant:
    """One optional connector-output field, its payload and the names that say a connector is active."""

    name: str
    optional_fields: tuple[str, ...] = ()
    payload_class: str = ""
    payload_optional_fields: tuple[str, ...] = ()
    # the payload's fields that are never None but that its `is_empty()` counts too (`invalid_block_ids`)
    emptiness_fields: tuple[str, ...] = ()
    output_classes: tuple[str, ...] = ()
    empty_sentinels: tuple[str, ...] = ()
    attaching_helpers: tuple[str, ...] = ()  # calls that return an output carrying the payload they are given
    connector_guards: tuple[str, ...] = ()
    connector_contexts: tuple[str, ...] = ()
    optional_contexts: tuple[str, ...] = ()
    connector_functions: tuple[str, ...] = ()
    empty_output: str = "forbid"  # or "allow-when-empty": the bare sentinel is fine where the output is empty

    @property
    def field_name(self) -> str:
        """The field the messages name (`kv_connector_output`)."""
        return self.optional_fields[0] if self.optional_fields else self.name

    @property
    def payload_name(self) -> str:
        """The payload class as the messages name it (`KVConnectorOutput`)."""
        return self.payload_class.rpartition(".")[2] or "connector output"

    def names(self) -> tuple[str, ...]:
        """The names of this invariant a file must mention for it to matter. Not the attaching helpers: a rule
        looks at a helper's call only in a unit that names the field, the payload, an output class, a sentinel,
        a guard or a context as well (a helper alone is no unit's reason to be analysed), so a file that
        mentions nothing but a helper holds nothing to check, and the byte scan need not look for them."""
        return (
            *self.optional_fields, self.payload_class, *self.output_classes, *self.empty_sentinels,
            *self.connector_guards, *self.connector_contexts, *self.optional_contexts, *self.connector_functions,
        )

    def as_dict(self) -> dict[str, object]:
        """Kebab-case keys and values, as a configuration table spells them."""
        return {item.name.replace("_", "-"): getattr(self, item.name) for item in fields(self)}


# Field by field from vLLM's own sources (vllm/v1/outputs.py and the connector mixins of 0.33).
PRESETS: dict[str, Invariant] = {
    "kv": Invariant(
        name="kv",
        optional_fields=("kv_connector_output",),
        payload_class="KVConnectorOutput",
        payload_optional_fields=(
            "finished_sending", "finished_recving", "kv_connector_stats", "kv_cache_events",
            "kv_connector_worker_meta",
        ),
        emptiness_fields=("invalid_block_ids", "failed_recving"),
        output_classes=("ModelRunnerOutput",),
        empty_sentinels=("EMPTY_MODEL_RUNNER_OUTPUT",),
        attaching_helpers=("ModelRunnerOutput.with_kv_conn_output_only",),
        connector_guards=("has_kv_transfer_group",),
        connector_contexts=("_get_kv_connector_output",),
        optional_contexts=("maybe_get_kv_connector_output",),
    ),
    "ec": Invariant(
        name="ec",
        optional_fields=("ec_connector_output",),
        payload_class="ECConnectorOutput",
        payload_optional_fields=(
            "finished_sending", "finished_recving", "ec_connector_stats", "ec_connector_worker_meta",
        ),
        output_classes=("ModelRunnerOutput",),
        empty_sentinels=("EMPTY_MODEL_RUNNER_OUTPUT",),
        attaching_helpers=("ModelRunnerOutput.with_ec_conn_output_only", "ModelRunnerOutput.with_ec_conn_output"),
        connector_guards=("has_ec_transfer",),
        connector_contexts=("_get_ec_connector_output",),
        optional_contexts=("maybe_get_ec_connector_output",),
    ),
}
DEFAULT_PRESETS = ("kv", "ec")
# The payload fields every release's KVConnectorOutput and ECConnectorOutput declares (vLLM 0.10 has only these):
# where the payload class is out of sight, a test that they are all empty is a test that the output is empty.
FIELDS_EVERY_RELEASE_HAS = ("finished_sending", "finished_recving")
INVARIANT_KEYS = tuple(item.name.replace("_", "-") for item in fields(Invariant) if item.name != "name")


def with_overrides(invariant: Invariant, overrides: Iterable[tuple[str, object]]) -> Invariant:
    """`invariant` with the given (snake_case) keys replaced."""
    return replace(invariant, **dict(overrides))


class InvariantSet:
    """The active invariants of a run, and which of them a name, field or class belongs to.

    The union properties serve what is the same for every invariant (the byte scan, the declaration
    index); the `*_of` lookups give the first invariant that claims a name, or every one that does
    (a sentinel or an output class several invariants share).
    """

    def __init__(self, invariants: Sequence[Invariant]) -> None:
        self.invariants = tuple(invariants)
        self.by_name = {invariant.name: invariant for invariant in self.invariants}
        self.optional_fields = _union(i.optional_fields for i in self.invariants)
        self.payload_classes = _union((i.payload_class,) for i in self.invariants if i.payload_class)
        self.payload_optional_fields = _union(i.payload_optional_fields for i in self.invariants)
        self.output_classes = _union(i.output_classes for i in self.invariants)
        self.empty_sentinels = _union(i.empty_sentinels for i in self.invariants)
        self.attaching_helpers = _union(i.attaching_helpers for i in self.invariants)
        self.connector_guards = _union(i.connector_guards for i in self.invariants)
        self.connector_contexts = _union(i.connector_contexts for i in self.invariants)
        self.optional_contexts = _union(i.optional_contexts for i in self.invariants)
        self.connector_functions = _union(i.connector_functions for i in self.invariants)
        self._field_owner = {}
        for invariant in self.invariants:
            for name in invariant.optional_fields:
                self._field_owner.setdefault(name, invariant.name)
        self.first = self.invariants[0].name if self.invariants else ""
        # the invariants a sentinel of unknown spelling belongs to: all, when all have the same sentinels
        same = len({frozenset(i.empty_sentinels) for i in self.invariants}) == 1
        self.shared_sentinel = tuple(self.by_name) if same else ()
        self._claims: dict[tuple[str, str], tuple[str, ...]] = {}  # `_every`'s answers

    def of_field(self, name: str) -> str:
        """The invariant whose optional field `name` is ("" none)."""
        return self._field_owner.get(name, "")

    def of_payload_class(self, qualified: str) -> str:
        return self._first(qualified, "payload_class")

    def with_guard(self, qualified: str | None) -> tuple[str, ...]:
        """Every invariant whose connector `qualified()` being true shows active (a guard may be shared)."""
        return self._every(qualified, "connector_guards")

    def with_context(self, qualified: str | None) -> tuple[str, ...]:
        return self._every(qualified, "connector_contexts")

    def of_optional_context(self, qualified: str | None) -> str:
        return self._first(qualified, "optional_contexts")

    def with_attaching_helper(self, qualified: str | None) -> tuple[str, ...]:
        return self._every(qualified, "attaching_helpers")

    def with_sentinel(self, qualified: str | None) -> tuple[str, ...]:
        """Every invariant whose empty sentinels include `qualified`."""
        return self._every(qualified, "empty_sentinels")

    def with_output_class(self, qualified: str | None) -> tuple[str, ...]:
        """Every invariant whose output classes include `qualified`."""
        return self._every(qualified, "output_classes")

    def payload_fields_of(self, invariant: str) -> tuple[str, ...]:
        """The payload optional fields of `invariant`; of every invariant when it is not known."""
        found = self.by_name.get(invariant)
        return found.payload_optional_fields if found is not None else self.payload_optional_fields

    def emptiness_fields_of(self, invariant: str) -> tuple[str, ...]:
        """The fields besides the optional ones that an empty payload of `invariant` has falsy."""
        found = self.by_name.get(invariant)
        return found.emptiness_fields if found is not None else ()

    def of_payload_field(self, name: str) -> str:
        """The first invariant whose payload has a field `name`."""
        for invariant in self.invariants:
            if name in invariant.payload_optional_fields:
                return invariant.name
        return ""

    def _first(self, qualified: str | None, key: str) -> str:
        every = self._every(qualified, key)
        return every[0] if every else ""

    def _every(self, qualified: str | None, key: str) -> tuple[str, ...]:
        """The invariants whose `key` names `qualified`; remembered, as the analysis asks it of every call."""
        if not qualified:
            return ()
        found = self._claims.get((qualified, key))
        if found is None:
            found = self._claims[(qualified, key)] = tuple(
                invariant.name for invariant in self.invariants
                if matches(qualified, (value,) if isinstance(value := getattr(invariant, key), str) else value)
            )
        return found


def _union(groups: Iterable[Iterable[str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for group in groups for name in group if name))

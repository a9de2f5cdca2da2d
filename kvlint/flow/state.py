"""The abstract state of the flow analysis: what is known about values and the connector
path at one program point, and how two incoming paths join (a "may" analysis)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Nullness(enum.Enum):
    """What is known about a value being None."""

    NOT_NONE = "not-none"
    MAYBE_NONE = "maybe-none"
    NONE = "none"
    UNKNOWN = "unknown"  # untracked: never reported


class PathFact(enum.Enum):
    """What explicit guards say about the KV connector at a point."""

    UNKNOWN = "unknown"
    ON = "on"  # has_kv_transfer_group() is true, a connector context, a marked function
    OFF = "off"  # under `not has_kv_transfer_group()`


@dataclass(frozen=True)
class Value:
    """The abstract value of an expression at a point."""

    nullness: Nullness
    connector_output: bool = False  # a KVConnectorOutput (when not None)
    payload: bool = False  # a payload field such as finished_sending (set | None)
    evidence: bool = False  # being non-None proves a connector is active
    sentinel: bool = False  # may be the shared empty sentinel itself
    origin: str = ""  # where a maybe-None value came from
    guard: str = ""  # how it was proven non-None

    @property
    def tracked(self) -> bool:
        return self.connector_output or self.payload or self.sentinel

    @property
    def may_be_none(self) -> bool:
        return self.nullness in (Nullness.MAYBE_NONE, Nullness.NONE)


UNTRACKED = Value(Nullness.UNKNOWN)
FRESH = Value(Nullness.NOT_NONE)  # a new object we know nothing else about


def join_nullness(a: Nullness, b: Nullness) -> Nullness:
    """Join two nullness facts (may-analysis)."""
    if a is b:
        return a
    pair = {a, b}
    if Nullness.MAYBE_NONE in pair:
        return Nullness.MAYBE_NONE
    if Nullness.UNKNOWN in pair:
        return Nullness.UNKNOWN
    return Nullness.MAYBE_NONE  # NONE with NOT_NONE


def join_values(a: Value, b: Value) -> Value:
    """Join two abstract values reaching one point."""
    if a == b:
        return a
    return Value(
        nullness=join_nullness(a.nullness, b.nullness),
        connector_output=a.connector_output or b.connector_output,
        payload=a.payload or b.payload,
        evidence=(a.evidence or a.nullness is Nullness.NONE) and (b.evidence or b.nullness is Nullness.NONE),
        sentinel=a.sentinel or b.sentinel,
        origin=min(filter(None, (a.origin, b.origin)), default=""),
        guard=a.guard if a.guard == b.guard else ("several guards" if a.guard and b.guard else ""),
    )


@dataclass
class NullnessState:
    """The facts at one program point: tracked values and the connector path."""

    values: dict[str, Value] = field(default_factory=dict)
    path: PathFact = PathFact.UNKNOWN
    path_reason: str = ""
    reachable: bool = True

    def copy(self) -> NullnessState:
        return NullnessState(dict(self.values), self.path, self.path_reason, self.reachable)

    def connector_path_reason(self) -> str:
        """Say why this point is on a connector path; "" when it is not."""
        if self.path is PathFact.OFF:
            return ""
        if self.path is PathFact.ON:
            return self.path_reason
        for key in sorted(self.values):
            value = self.values[key]
            if value.evidence and value.nullness is Nullness.NOT_NONE:
                return f"`{key}` is not None here"
        return ""


def unreachable() -> NullnessState:
    return NullnessState(reachable=False)


@dataclass
class LoopFrame:
    """States that leave a loop body early."""

    breaks: list[NullnessState] = field(default_factory=list)
    continues: list[NullnessState] = field(default_factory=list)


@dataclass
class ScopeContext:
    """What a function body is analysed with: its name and enclosing class."""

    qualname: str
    class_optional_attributes: frozenset[str] = frozenset()

"""The abstract state of the flow analysis: what is known about values and the connector
path at one program point, and how two incoming paths join (a "may" analysis)."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import TypeVar


_Record = TypeVar("_Record")
_INIT_FIELDS: dict[type, frozenset[str] | None] = {}  # per class: its fields, or None where `evolve` must not copy


def evolve(record: _Record, **changes: object) -> _Record:
    """`dataclasses.replace`, for the flow's hot path: a copy of `record` with `changes`.

    The flow makes a changed copy of a value at almost every step; `dataclasses.replace` looks the class's fields up
    and calls `__init__` each time, 5.6 us for a `Value`, where copying its `__dict__` takes 0.8 us. That copy is
    the same object only for a dataclass whose `__init__` does nothing else: every field is an `__init__`
    argument, no `__post_init__`, no slots. Any other class goes to `dataclasses.replace`.
    """
    cls = type(record)
    try:
        names = _INIT_FIELDS[cls]
    except KeyError:
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]
        plain = all(f.init for f in fields) and not hasattr(cls, "__post_init__") and hasattr(record, "__dict__")
        names = _INIT_FIELDS[cls] = frozenset(f.name for f in fields) if plain else None
    if names is None:
        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    if not names.issuperset(changes):
        raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(set(changes) - names))}")
    copied = object.__new__(cls)
    copied.__dict__.update(record.__dict__)
    copied.__dict__.update(changes)
    return copied


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


@dataclass(frozen=True, init=False)
class Value:
    """The abstract value of an expression at a point. Frozen, but made by its own `__init__`, which fills the
    instance's `__dict__` at once: the `__init__` a frozen dataclass is given sets each of the 29 fields through
    `object.__setattr__`, 40 K instructions a value, and the flow makes a few per statement."""

    nullness: Nullness
    connector_output: bool = False  # a KVConnectorOutput (when not None)
    payload: bool = False  # a payload field such as finished_sending (set | None)
    evidence: bool = False  # being non-None proves a connector is active
    sentinel: bool = False  # may be the shared empty sentinel itself
    origin: str = ""  # where a maybe-None value came from
    declared_by: str = ""  # the qualified name of the declaration that says it may be None (`Site.resolved`)
    guard: str = ""  # how it was proven non-None
    cls: str = ""  # the declared class of the value when it is not None ("" unknown)
    cls_args: tuple[object, ...] = ()  # its type arguments (`TypeRef`s), for a generic class of the tree
    element: Value | None = None  # what iterating it yields (a container), None unknown
    item: Value | None = None  # what indexing it yields (a list's element, a dict's value)
    parts: tuple[Value, ...] | None = None  # a tuple's members, for unpacking
    local_container: bool = False  # a list or dict built here: `append` and `d[k] = v` grow it
    kv_source: bool = False  # bound from a KV source: a producer must hand it on (KVC006)
    handed_on: bool = False  # attached, stored, passed to a call or yielded since it was bound
    held_by: str = ""  # `self.state.kv_connector_output` it was read from, still holding it (KVC006: not lost)
    # handed on only by parking it on this local holder (`hidden_states.kv_connector_output = kvo`): returning
    # the holder hands it on only if its callers keep it (`binding.summaries`)
    parked_on: str = ""
    empty: bool = False  # a connector output known to be empty (`is_empty()`, every payload set falsy)
    known_fields: frozenset[str] = frozenset()  # payload fields constructed non-None; of a copy: fields given anew
    sentinel_part: bool = False  # a member of the shared sentinel (mutating it is KVC004)
    shallow_copy: bool = False  # a shallow copy of the sentinel: its lists and dicts are the sentinel's
    empty_copy: bool = False  # a copy of the sentinel with a connector output never set (`sentinel_of` says whose)
    output_sites: frozenset[tuple[object, ...]] = frozenset()  # outputs built without a connector output (keys)
    never_returns: bool = False  # the value of a call that does not return
    # a bool holding a guard: ("path", invariant, why) or ("not-none", key, value)
    condition: tuple[object, ...] | None = None
    invariant: str = ""  # which invariant's connector output (or payload field) this is ("" none known)
    # the sentinel: the invariants whose sentinel it is; a copy of it: those whose connector output it still lacks
    sentinel_of: tuple[str, ...] = ()
    none_off_path: bool = False  # yielded by an optional context: None wherever its connector is off

    def __init__(self, nullness: Nullness, **facts: object) -> None:
        if not _VALUE_FIELDS.issuperset(facts):
            raise TypeError(f"Value has no field {', '.join(sorted(set(facts) - _VALUE_FIELDS))}")
        values = self.__dict__
        values.update(_VALUE_DEFAULTS)  # in the fields' order, as the dataclass's own `__init__` sets them
        values["nullness"] = nullness
        values.update(facts)

    @property
    def tracked(self) -> bool:
        return self.connector_output or self.payload or self.sentinel

    @property
    def may_be_none(self) -> bool:
        return self.nullness in (Nullness.MAYBE_NONE, Nullness.NONE)


# every field's default (`nullness` has none: its place), for `Value.__init__`; a default must be immutable
_VALUE_DEFAULTS = {f.name: None if f.default is dataclasses.MISSING else f.default for f in dataclasses.fields(Value)}
_VALUE_FIELDS = frozenset(_VALUE_DEFAULTS) - {"nullness"}
assert all(f.default_factory is dataclasses.MISSING for f in dataclasses.fields(Value))

UNTRACKED = Value(Nullness.UNKNOWN)
FRESH = Value(Nullness.NOT_NONE)  # a new object we know nothing else about
NONE = Value(Nullness.NONE)  # `None` itself (a value is immutable: one serves every `return` and `None` literal)


def _join_optional(a: Value | None, b: Value | None) -> Value | None:
    """Join two element values; an unknown one (None) adds nothing."""
    if a is None or b is None:
        return a or b
    return join_values(a, b)


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


def _join_sentinel_of(a: Value, b: Value) -> tuple[str, ...]:
    """What may be the sentinel is so for either path's invariants; two copies lack for sure only what both lack."""
    if a.sentinel_of == b.sentinel_of:
        return a.sentinel_of
    if a.empty_copy and b.empty_copy and not (a.sentinel or b.sentinel):
        return tuple(sorted(set(a.sentinel_of) & set(b.sentinel_of)))
    return tuple(sorted({*a.sentinel_of, *b.sentinel_of}))


def join_values(a: Value, b: Value) -> Value:
    """Join two abstract values reaching one point."""
    if a is b or a == b:
        return a
    return Value(
        nullness=join_nullness(a.nullness, b.nullness),
        connector_output=a.connector_output or b.connector_output,
        payload=a.payload or b.payload,
        evidence=(a.evidence or a.nullness is Nullness.NONE) and (b.evidence or b.nullness is Nullness.NONE),
        sentinel=a.sentinel or b.sentinel,
        origin=min(filter(None, (a.origin, b.origin)), default=""),
        declared_by=a.declared_by if a.declared_by == b.declared_by or not b.declared_by else (
            b.declared_by if not a.declared_by else ""),
        guard=a.guard if a.guard == b.guard else ("several guards" if a.guard and b.guard else ""),
        cls=a.cls if a.cls == b.cls else (a.cls or b.cls if Nullness.NONE in (a.nullness, b.nullness) else ""),
        cls_args=a.cls_args if a.cls_args == b.cls_args else (),
        element=_join_optional(a.element, b.element),
        item=_join_optional(a.item, b.item),
        parts=(
            tuple(join_values(x, y) for x, y in zip(a.parts, b.parts))
            if a.parts is not None and b.parts is not None and len(a.parts) == len(b.parts) else None
        ),
        local_container=a.local_container and b.local_container,
        kv_source=a.kv_source or b.kv_source,
        handed_on=a.handed_on or b.handed_on,  # handed on along one path: silence (precision first)
        held_by=a.held_by if a.held_by == b.held_by else "",
        parked_on=a.parked_on if a.parked_on == b.parked_on else "",  # parked on one path only: handed on
        empty=(a.empty or a.nullness is Nullness.NONE) and (b.empty or b.nullness is Nullness.NONE),
        known_fields=a.known_fields & b.known_fields,
        sentinel_part=a.sentinel_part or b.sentinel_part,
        shallow_copy=a.shallow_copy and b.shallow_copy,
        empty_copy=a.empty_copy and b.empty_copy and bool(_join_sentinel_of(a, b)),
        output_sites=a.output_sites | b.output_sites,  # either construction may be the one attached later
        never_returns=a.never_returns and b.never_returns,
        condition=a.condition if a.condition == b.condition else None,
        # two invariants' outputs met here: whose it is, nobody knows (it proves neither connector active)
        invariant=a.invariant if a.invariant == b.invariant or not b.invariant else (
            b.invariant if not a.invariant else ""),
        sentinel_of=_join_sentinel_of(a, b),
    )


@dataclass
class NullnessState:
    """The facts at one program point: tracked values and, per invariant, the connector path.

    `paths` maps an invariant's name to what explicit guards say of its connector and why
    (an invariant not in it is UNKNOWN there).
    """

    values: dict[str, Value] = field(default_factory=dict)
    paths: dict[str, tuple[PathFact, str]] = field(default_factory=dict)
    reachable: bool = True

    def copy(self) -> NullnessState:
        return NullnessState(dict(self.values), dict(self.paths), self.reachable)

    def path_of(self, invariant: str) -> PathFact:
        return self.paths.get(invariant, (PathFact.UNKNOWN, ""))[0]

    def set_path(self, invariant: str, fact: PathFact, reason: str = "") -> None:
        self.paths[invariant] = (fact, reason)

    def connector_path_reason(self, invariant: str) -> str:
        """Say why this point is on `invariant`'s connector path; "" when it is not."""
        fact, reason = self.paths.get(invariant, (PathFact.UNKNOWN, ""))
        if fact is PathFact.OFF:
            return ""
        if fact is PathFact.ON:
            return reason
        return self.evidence().get(invariant, "")

    def evidence(self) -> dict[str, str]:
        """Per invariant, the first (by key) value proven not None whose being so shows its connector is on."""
        found: dict[str, str] = {}
        for key, value in self.values.items():
            if value.evidence and value.nullness is Nullness.NOT_NONE and (
                value.invariant not in found or key < found[value.invariant]
            ):
                found[value.invariant] = key
        return {invariant: f"`{key}` is not None here" for invariant, key in found.items()}

    def path_reasons(self, invariants: tuple[str, ...]) -> dict[str, str]:
        """`connector_path_reason` of every invariant, the values looked at once."""
        evidence: dict[str, str] | None = None
        reasons = {}
        for invariant in invariants:
            fact, reason = self.paths.get(invariant, (PathFact.UNKNOWN, ""))
            if fact is PathFact.UNKNOWN:
                evidence = self.evidence() if evidence is None else evidence
                reason = evidence.get(invariant, "")
            reasons[invariant] = reason if fact is not PathFact.OFF else ""
        return reasons


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
    class_name: str = ""  # the enclosing class's qualified name (module.Class), for `self`
    captured: tuple[tuple[str, Value], ...] = ()  # maybe-None names a closure reads from its enclosing scope
    producer: bool = False  # the function returns an output (KVC006 applies)
    in_class_body: bool = False  # the scope is a class body: its functions are methods

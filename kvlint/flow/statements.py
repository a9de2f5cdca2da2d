"""Statements: assignment, control flow, loops to a fixpoint, try/with/match, nested scopes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import ast

from kvlint.binding.annotations import AnnotationKind, classify_annotation
from kvlint.flow.context import FlowContext
from kvlint.flow.recording import site_invariant, value_names
from kvlint.flow.state import (
    evolve,
    FRESH,
    NONE,
    join_values,
    UNTRACKED,
    LoopFrame,
    Nullness,
    NullnessState,
    PathFact,
    ScopeContext,
    Value,
    unreachable,
)
from kvlint.flow.syntax import (
    call_arguments,
    dotted_name,
    _is_false_literal,
    _is_none_pattern,
    _is_true_literal,
    _non_empty_literal,
    _pattern_names,
    operator_text,
    ref_key,
)
from kvlint.binding.names import matches
from kvlint.binding.summaries import is_test_module
from kvlint.sites import SentinelUseKind, SiteKind

if TYPE_CHECKING:  # the parts call one another: `FlowAnalysis` sets up which part calls which
    from kvlint.flow.expressions import Expressions
    from kvlint.flow.narrowing import Narrowing
    from kvlint.flow.recording import Recorder

NONE_ERRORS = ("AttributeError", "TypeError", "Exception", "BaseException")  # what `None.x` / `None[0]` raise
SUPPRESSORS = ("contextlib.suppress",)
MAX_LOOP_ITERATIONS = 4  # loops converge in two passes on real code; this bounds odd ones
MAX_FIXPOINT_DEPTH = 5  # deeper loop nests get a single pass from the widened head


class Statements:
    """Statement transfer functions: each statement's effect on the state of the point after it."""

    expressions: Expressions
    narrowing: Narrowing
    recorder: Recorder

    def __init__(self, context: FlowContext) -> None:
        self.context = context

    def _bind(self, key: str, value: Value, state: NullnessState) -> None:
        prefix_dot, prefix_index = key + ".", key + "["
        for existing in [k for k in state.values if k.startswith(prefix_dot) or k.startswith(prefix_index)]:
            del state.values[existing]
        declared_defaults = self.context.declared_defaults
        for existing in [k for k in declared_defaults if k.startswith(prefix_dot) or k.startswith(prefix_index)]:
            del declared_defaults[existing]  # the receiver changed: its members' declarations may differ
        for name, held in list(state.values.items()):
            if held.held_by and (held.held_by == key or held.held_by.startswith((prefix_dot, prefix_index))):
                state.values[name] = evolve(held, held_by="")  # `self.state = None`: only we hold it
            elif held.parked_on == key:  # the name is rebound: the holder lives on somewhere else, or nowhere
                state.values[name] = evolve(held, parked_on="")
        state.values[key] = value

    def _invalidate(self, key: str, state: NullnessState) -> None:
        self._bind(key, UNTRACKED, state)

    def _forget(self, name: str, state: NullnessState) -> None:
        """A `def`/`class` rebinds a name to something defined here: untrack it, but let
        it resolve to itself (a module defining `ModelRunnerOutput` then constructs it)."""
        if self.context.scope.qualname != "<module>":
            self.context.local_definitions.add(name)
        for existing in [k for k in state.values if k == name or k.startswith((name + ".", name + "["))]:
            del state.values[existing]

    def assign(
        self, target: ast.expr, value: Value, state: NullnessState, value_node: ast.AST | None
    ) -> None:
        if isinstance(target, ast.Name):
            source = ref_key(value_node) if isinstance(value_node, (ast.Attribute, ast.Subscript)) else None
            if value.kv_source and source is not None and source.startswith("self."):
                value = evolve(value, held_by=source)  # still stored on `self` as long as that stays
            declared = self.context.declared_names.get(target.id)
            if declared is not None and value.nullness is Nullness.UNKNOWN and not value.tracked:
                # a value of unknown type takes the declared type, without its None (mypy: `X | Any`); a path
                # that left the name None still joins in as maybe None
                value = evolve(declared, nullness=Nullness.NOT_NONE, guard="")
            if (
                self.context.scope.qualname == "<module>"
                and target.id not in self.context.imports.bindings
                and matches(target.id, self.context.invariants.empty_sentinels)
            ):
                value = evolve(self.expressions.sentinel_value(target.id), origin=f"`{target.id}`")
            elif value.sentinel and value_node is not None:
                self.recorder.record(
                    SiteKind.SENTINEL_USE,
                    target,
                    invariant=value.sentinel_of[0] if value.sentinel_of else "",
                    sentinel_use=SentinelUseKind.ALIASED,
                    expression=f"{target.id} = {self.context.source.code(value_node)}",
                    state=state,
                )
            self._bind(target.id, value, state)
        elif isinstance(target, ast.Attribute):
            receiver = self.expressions.eval(target.value, state)
            self.recorder.sink(target.value, receiver, f"attribute assignment `.{target.attr}`", target, state)
            if receiver.sentinel:
                self.recorder.record_mutation(target, target.value, state, receiver)
            invariant = self.context.invariants.of_field(target.attr)
            if invariant:
                self.attach(target.value, receiver, value, state, invariant)
                self.recorder.record(
                    SiteKind.OPTIONAL_WRITE,
                    target,
                    invariant=invariant,
                    may_be_none=value.nullness is not Nullness.NOT_NONE,
                    guard=value.guard,
                    origin=value.origin,
                    state=state,
                    connector_output_argument=self.context.source.code(value_node) if value_node is not None else "",
                )
            key = ref_key(target)
            if key is not None:
                payload_fields = self.context.invariants.payload_fields_of(receiver.invariant)
                if receiver.connector_output and target.attr in payload_fields:
                    value = evolve(
                        value, payload=value.payload or value.nullness is not Nullness.UNKNOWN,
                        invariant=value.invariant or receiver.invariant,
                    )
                self._bind(key, value, state)
        elif isinstance(target, ast.Subscript):
            receiver = self.expressions.eval(target.value, state)
            self.recorder.sink(target.value, receiver, "subscript assignment", target, state)
            if receiver.sentinel or receiver.sentinel_part:
                self.recorder.record_mutation(target, target.value, state, receiver)
            self.expressions.eval_slices(target, state)
            receiver_key = ref_key(target.value)
            if receiver.local_container and receiver_key is not None and value.tracked:
                item = join_values(receiver.item, value) if receiver.item is not None else value
                state.values[receiver_key] = evolve(receiver, item=item)
            key = ref_key(target)
            if key is not None:
                self._invalidate(key, state)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if value_node is not None and isinstance(value_node, ast.expr):
                self.recorder.sink(value_node, value, "unpacking", value_node, state)
            elements = target.elts
            starred = any(isinstance(e, ast.Starred) for e in elements)
            parts = value.parts if value.parts is not None else self._named_tuple_parts(value, value_node)
            parts = parts if parts is not None and len(parts) == len(elements) else None
            for number, element in enumerate(elements):
                inner = element.value if isinstance(element, ast.Starred) else element
                if parts is not None and not starred:
                    self.assign(inner, parts[number], state, None)
                elif value.element is not None:  # unpacking a container: each target is one of its elements
                    whole = isinstance(element, ast.Starred)
                    each = Value(Nullness.NOT_NONE, element=value.element) if whole else value.element
                    self.assign(inner, each, state, None)
                else:
                    self.assign(inner, UNTRACKED, state, None)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value, state, None)
        else:
            self.expressions.eval(target, state)

    def _named_tuple_parts(self, value: Value, value_node: ast.AST | None) -> tuple[Value, ...] | None:
        """Unpacking an instance of a NamedTuple of the tree: its fields, as its class declares them
        (`(..., ec_connector_output, ...) = self.execute_model_state` reads the step state's field)."""
        if not value.cls or value.nullness is not Nullness.NOT_NONE:
            return None
        decl = self.context.index.class_named(value.cls)
        if decl is None or not any(matches(base, ("NamedTuple",)) for base in decl.bases):
            return None
        fields = self.context.index.fields(decl.qualname)
        if fields is None:
            return None
        whole = self.context.source.code(value_node) if value_node is not None else "the tuple"
        return tuple(
            self.expressions.declared_attribute(value, name, f"`{whole}.{name}`") or UNTRACKED for name in fields
        )

    def declare(self, name: str, annotation: ast.expr) -> None:
        """Remember what a name is declared to hold: an assignment of a value kvlint cannot type takes it."""
        declared = self.expressions.annotation_value(annotation, f"declared `{self.context.source.code(annotation)}`")
        if declared is not None and (declared.tracked or declared.cls):
            self.context.declared_names[name] = evolve(declared, kv_source=False)
        else:
            self.context.declared_names.pop(name, None)

    def attach(
        self, node: ast.expr, receiver: Value, value: Value, state: NullnessState, invariant: str
    ) -> None:
        """`out.kv_connector_output = v` (or `setattr(out, "kv_connector_output", v)`): an output built without
        it, or a copy of the sentinel, now has it."""
        if value.nullness is Nullness.NONE:
            return
        attached = frozenset(site for site in receiver.output_sites if site_invariant(site) == invariant)
        self.context.attached_outputs.update(attached)
        key = ref_key(node)
        if key is not None and (attached or receiver.empty_copy):
            lacking = tuple(other for other in receiver.sentinel_of if other != invariant)
            state.values[key] = evolve(
                receiver, output_sites=receiver.output_sites - attached,
                empty_copy=receiver.empty_copy and bool(lacking), sentinel_of=lacking,
            )

    def block(self, statements: Sequence[ast.AST], state: NullnessState) -> NullnessState:
        """Run statements in order; mutates and returns the state."""
        for statement in statements:
            if not state.reachable:
                break
            state = self._statement(statement, state)
        return state

    def _statement(self, node: ast.AST, state: NullnessState) -> NullnessState:
        handler = getattr(self, f"_stmt_{type(node).__name__}", None)
        if handler is not None:
            return handler(node, state)
        if isinstance(node, ast.expr):
            self.expressions.eval(node, state)
        return state

    def _stmt_Expr(self, node: ast.Expr, state: NullnessState) -> NullnessState:
        value = self.expressions.eval(node.value, state)
        return unreachable() if value.never_returns else state

    def _stmt_Assign(self, node: ast.Assign, state: NullnessState) -> NullnessState:
        value = self.expressions.eval(node.value, state)
        targets = list(node.targets)
        on_self = self._stored_unread(node, state)
        if not on_self and not self._park(node, state):
            # merged into, stored in or aliased by the targets: not dropped
            self.expressions.hand_on([node.value], state)
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            condition = self.narrowing.condition_of(node.value, state)
            if condition is not None:
                value = evolve(FRESH, condition=condition)
        for target in targets:
            self.assign(target, value, state, node.value)
        for name in on_self:  # after the store, which would take a park on its own key back
            state.values[name] = evolve(state.values[name], handed_on=True, parked_on=ref_key(targets[0]) or "")
        return state

    def _stored_unread(self, node: ast.Assign, state: NullnessState) -> list[str]:
        """`self._pending = kvo` (or a tuple of names holding it), where nothing in the project reads
        `_pending` back (`TreeIndex.unread_attributes`) and the class's bases are all in sight: the KV values
        not yet handed on that it stores (the caller parks them there: a return that drops them is KVC006).
        [] where anything else is stored too (an output, a value of either invariant): it is handed on."""
        target = node.targets[0] if len(node.targets) == 1 else None
        context = self.context
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self" and target.attr in context.index.unread_attributes
                and context.scope.class_name and context.index.bases_in_sight(context.scope.class_name)):
            return []
        elements = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        names = [element.id for element in elements if isinstance(element, ast.Name)]
        values = [state.values.get(name, UNTRACKED) for name in names]
        if any(value.output_sites or (value.kv_source and not value.invariant) for value in values):
            return []
        return [name for name, value in zip(names, values)
                if value.kv_source and not value.handed_on and value.connector_output]

    def _park(self, node: ast.Assign, state: NullnessState) -> bool:
        """`hidden_states.kv_connector_output = kvo`: a KV value not yet handed on is parked on a local holder
        that is not an output. It counts as handed on, and remembers the holder, so that a `return` of the
        holder can ask what the callers do with it (`_check_parked`)."""
        target = node.targets[0] if len(node.targets) == 1 else None
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and isinstance(node.value, ast.Name) and self.context.invariants.of_field(target.attr)):
            return False
        holder, name = target.value.id, node.value.id
        held = state.values.get(name)
        receiver = state.values.get(holder, UNTRACKED)
        if (held is None or not held.kv_source or held.handed_on or holder in ("self", "cls")
                or receiver.sentinel or receiver.empty_copy or receiver.output_sites
                or (receiver.cls and matches(receiver.cls, self.context.invariants.output_classes))):
            return False
        state.values[name] = evolve(held, handed_on=True, parked_on=holder)
        self.context.parks[(self.context.scope.qualname, holder, name)] = node
        return True

    def _classify(self, annotation: ast.expr) -> AnnotationKind | None:
        if not any(name in self.context.source.segment(annotation) for name in self.context.payload_spellings):
            return None
        return classify_annotation(annotation, self.context.imports.resolve_dotted, self.context.config.payload_classes)

    def _stmt_AnnAssign(self, node: ast.AnnAssign, state: NullnessState) -> NullnessState:
        if node.value is not None:
            self.expressions.hand_on([node.value], state)  # names only: evaluation order does not matter here
        kind = self._classify(node.annotation)
        if isinstance(node.target, ast.Name):
            self.declare(node.target.id, node.annotation)
        if kind is None and node.value is not None and isinstance(node.target, ast.Name):
            declared = self.expressions.annotation_value(node.annotation, f"`{node.target.id}`")
            value = self.expressions.eval(node.value, state)
            if declared is not None and value.nullness is Nullness.UNKNOWN and not value.tracked:
                value = evolve(declared, kv_source=False)
            self.assign(node.target, value, state, node.value)
            return state
        declared_payload = self.expressions.annotation_value(node.annotation, "") if kind is not None else None
        invariant = declared_payload.invariant if declared_payload is not None else ""
        if node.value is None:
            if kind is AnnotationKind.OPTIONAL_PAYLOAD and isinstance(node.target, ast.Name):
                self._bind(
                    node.target.id,
                    Value(
                        Nullness.MAYBE_NONE,
                        connector_output=True,
                        evidence=True,
                        origin=f"declared `{self.context.source.code(node.annotation)}`",
                        invariant=invariant,
                    ),
                    state,
                )
            return state
        value = self.expressions.eval(node.value, state)
        if kind is AnnotationKind.OPTIONAL_PAYLOAD:
            if value.nullness is Nullness.NONE or (value.nullness is not Nullness.UNKNOWN and not value.tracked):
                value = evolve(
                    value,
                    connector_output=True,
                    evidence=True,
                    origin=value.origin or f"declared `{self.context.source.code(node.annotation)}`",
                    invariant=value.invariant or invariant,
                )
        elif kind is AnnotationKind.PAYLOAD and value.nullness is Nullness.UNKNOWN:
            value = Value(Nullness.NOT_NONE, connector_output=True, guard="annotated non-Optional", invariant=invariant)
        self.assign(node.target, value, state, node.value)
        return state

    def _stmt_AugAssign(self, node: ast.AugAssign, state: NullnessState) -> NullnessState:
        target_value = self.expressions.eval(node.target, state) if not isinstance(node.target, ast.Attribute) else None
        if isinstance(node.target, ast.Attribute):
            receiver = self.expressions.eval(node.target.value, state)
            what = f"attribute access `.{node.target.attr}`"
            self.recorder.sink(node.target.value, receiver, what, node.target, state)
            if receiver.sentinel:
                self.recorder.record_mutation(node.target, node.target.value, state, receiver)
            target_value = self.expressions.attribute_value(node.target, receiver, state)
            in_place = isinstance(node.value, (ast.List, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.Tuple))
            if target_value.sentinel_part and not receiver.sentinel and in_place:  # a list `+=` extends in place
                self.recorder.record_mutation(node.target, node.target, state, target_value)
        assert target_value is not None
        operator = operator_text(node.op) + "="  # `|=`: ast's op is the plain operator
        self.recorder.sink(node.target, target_value, f"`{operator}`", node.target, state)
        right = self.expressions.eval(node.value, state)
        self.recorder.sink(node.value, right, f"`{operator}`", node.value, state)
        key = ref_key(node.target)
        if key is not None:
            kept = evolve(target_value, nullness=Nullness.NOT_NONE) if target_value.tracked else UNTRACKED
            self._bind(key, kept, state)
        self.expressions.hand_on([node.value], state)  # `done |= kvo.finished_sending or set()` consumes `kvo`
        return state

    def _stmt_Delete(self, node: ast.Delete, state: NullnessState) -> NullnessState:
        # `del a, b`, `del (a, b)` and `del [a, b]` delete each name; `del (a, b), c` unpacks one level only
        targets = node.targets
        if len(targets) == 1 and isinstance(targets[0], (ast.Tuple, ast.List)):
            targets = targets[0].elts
        for target in targets:
            if isinstance(target, ast.Attribute):
                receiver = self.expressions.eval(target.value, state)
                self.recorder.sink(target.value, receiver, f"attribute deletion `.{target.attr}`", target, state)
                if receiver.sentinel:
                    self.recorder.record_mutation(target, target.value, state, receiver)
            elif isinstance(target, ast.Subscript):
                receiver = self.expressions.eval(target.value, state)
                self.recorder.sink(target.value, receiver, "subscript deletion", target, state)
            key = ref_key(target)
            if key is not None:
                self._invalidate(key, state)
        return state

    def _stmt_Return(self, node: ast.Return, state: NullnessState) -> NullnessState:
        value = NONE
        if node.value is not None:
            value = self.expressions.eval(node.value, state)
            if self.context.parks and self.context.scope.producer and isinstance(node.value, ast.Name):
                self._check_parked(node.value.id, state)
            self.expressions.hand_on([node.value], state)
            if value.sentinel or value.empty_copy:
                for invariant in value.sentinel_of:
                    self.recorder.record(
                        SiteKind.SENTINEL_USE,
                        node,
                        invariant=invariant,
                        sentinel_use=SentinelUseKind.RETURNED,
                        operand=self.context.source.code(node.value),
                        resolved=self.recorder.sentinel_names(node.value, state),
                        allowed_empty=self._allowed_empty(invariant, state),
                        unchecked_fields=self._unchecked_fields(invariant, state),
                        state=state,
                    )
        if self.context.scope.producer:
            self._check_dropped(node, value, state)
        return unreachable()

    def _check_dropped(self, node: ast.Return, value: Value, state: NullnessState) -> None:
        """KVC006: a producer returns None, the sentinel, a bare copy or an output without the KV value it holds."""
        unattached = value.output_sites - self.context.attached_outputs
        if not (value.nullness is Nullness.NONE or value.sentinel or value.empty_copy or unattached):
            return
        dropped = sorted(
            (key, held) for key, held in state.values.items()
            if "." not in key and "[" not in key and held.kv_source and held.connector_output
            and (not held.handed_on or held.parked_on.startswith("self.")) and not held.held_by
            and held.nullness in (Nullness.MAYBE_NONE, Nullness.NOT_NONE) and not self.known_empty(key, held, state)
        ) + self._stored_away(state)
        reported: set[str] = set()
        for key, held in dropped:
            invariant = held.invariant
            if not invariant or invariant in reported:
                continue  # "": a value that may be either of two invariants' outputs is not said to be lost
            reported.add(invariant)
            empty = (value.sentinel or value.empty_copy) and invariant in value.sentinel_of
            bare = any(site_invariant(site) == invariant for site in unattached)
            if not (value.nullness is Nullness.NONE or empty or bare):
                continue  # what it returns carries this invariant's output
            if state.connector_path_reason(invariant) and (empty or bare):
                continue  # KVC002 reports this return, or KVC003 the construction
            # the attribute of `self` nothing reads back that holds it: the name's park, or the key itself
            stored = held.parked_on if held.parked_on.startswith("self.") else key if key.startswith("self.") else ""
            self.recorder.record(
                SiteKind.KV_DROPPED,
                node,
                invariant=invariant,
                operand=key,
                origin=held.origin,
                expression=f"return {self.context.source.code(node.value)}" if node.value is not None else "return",
                parked_on=stored,
                parked_class=self.context.scope.class_name.rpartition(".")[2] if stored else "",
                resolved=(*value_names(held), *((f"holder class: {self.context.scope.class_name}",) if stored else ())),
                state=state,
            )

    def _stored_away(self, state: NullnessState) -> list[tuple[str, Value]]:
        """KV outputs stored straight on an attribute of `self` that nothing reads back
        (`self._pending = out.kv_connector_output`; `TreeIndex.unread_attributes`), no local name holding them:
        the attribute's key holds them, and a return that drops them is KVC006 (a name stored there is parked
        on it instead: `_stored_unread`)."""
        context = self.context
        unread = context.index.unread_attributes
        if not (unread and context.scope.class_name and context.index.bases_in_sight(context.scope.class_name)):
            return []
        parked = {held.parked_on for held in state.values.values() if held.parked_on}
        return sorted(
            (key, held) for key, held in state.values.items()
            if key.startswith("self.") and key[5:] in unread and key not in parked and held.kv_source
            and held.connector_output and not held.handed_on and not held.held_by
            and held.nullness in (Nullness.MAYBE_NONE, Nullness.NOT_NONE) and not self.known_empty(key, held, state)
        )

    def _check_parked(self, holder: str, state: NullnessState) -> None:
        """KVC006 across a call: the function returns the holder a KV value is parked on, and every caller that
        knows the holder's class (it tests `isinstance`) reads other fields of it and returns without it."""
        parked = sorted(
            (key, held) for key, held in state.values.items()
            if held.parked_on == holder and held.kv_source and held.invariant
            and held.nullness in (Nullness.MAYBE_NONE, Nullness.NOT_NONE) and not self.known_empty(key, held, state)
        )
        if not parked:
            return
        context = self.context
        qualname = f"{context.module_name}.{context.scope.qualname}" if context.module_name else context.scope.qualname
        declared = context.own_functions.get(qualname)
        holders = [
            name for name in (declared.returned_classes if declared is not None else ())
            if not matches(name, context.invariants.output_classes)
        ]
        uses = [use for use in context.index.holder_uses(context.scope.qualname.rpartition(".")[2], holders)
                if use.caller != qualname and not is_test_module(context.index.module_of(use.caller))]
        if not uses or not all(use.drops for use in uses):
            return  # nobody known receives it, or somebody keeps it: handed on
        callers = tuple(f"`{use.caller}` (line {use.line})" for use in uses)
        for key, held in parked:
            park = context.parks.get((context.scope.qualname, holder, key))
            if park is None:
                continue
            self.recorder.record(
                SiteKind.KV_DROPPED,
                park,
                invariant=held.invariant,
                operand=key,
                origin=held.origin,
                expression=self.context.source.code(park),
                parked_on=holder,
                parked_class=uses[0].holder.rpartition(".")[2],
                dropped_by=callers,
                resolved=(*value_names(held), f"holder class: {uses[0].holder}",
                          *(f"caller: {use.caller}" for use in uses)),
                state=state,
            )

    def known_empty(self, key: str, value: Value, state: NullnessState) -> bool:
        """The flow shows this connector output carries nothing: `is_empty()`, or every field its `is_empty()`
        counts falsy."""
        if value.empty:
            return True
        fields = self.expressions.emptiness_fields(value.invariant)
        return bool(fields) and all(
            (field := state.values.get(f"{key}.{name}")) is not None and field.empty for name in fields
        )

    def _allowed_empty(self, invariant: str, state: NullnessState) -> bool:
        """At a return of the sentinel, under `empty-output = "allow-when-empty"`: the flow shows `invariant`'s
        connector output is empty here. Every connector output of it the function holds is None or known
        empty, and it holds at least one."""
        found = self.context.invariants.by_name.get(invariant)
        if found is None or found.empty_output != "allow-when-empty":
            return False
        held = [
            (key, value) for key, value in state.values.items()
            if "." not in key and "[" not in key and value.connector_output and value.invariant == invariant
            and value.kv_source
        ]
        return bool(held) and all(
            value.nullness is Nullness.NONE or self.known_empty(key, value, state) for key, value in held
        )

    def _unchecked_fields(self, invariant: str, state: NullnessState) -> tuple[str, ...]:
        """Under `allow-when-empty`, where a test showed some of a held connector output's fields empty but not
        all that its `is_empty()` counts: the fields left unchecked (the message names them)."""
        found = self.context.invariants.by_name.get(invariant)
        if found is None or found.empty_output != "allow-when-empty":
            return ()
        fields = self.expressions.emptiness_fields(invariant)
        unchecked: set[str] = set()
        for key, value in state.values.items():
            if ("." in key or "[" in key or not value.connector_output or value.invariant != invariant
                    or not value.kv_source or value.nullness is Nullness.NONE or value.empty):
                continue
            empty = {name for name in fields if (held := state.values.get(f"{key}.{name}")) and held.empty}
            if empty:
                unchecked.update(name for name in fields if name not in empty)
        return tuple(name for name in fields if name in unchecked)

    def _stmt_Raise(self, node: ast.Raise, state: NullnessState) -> NullnessState:
        if node.exc is not None:
            self.expressions.eval(node.exc, state)
        if node.cause is not None:
            self.expressions.eval(node.cause, state)
        return unreachable()

    def _stmt_Assert(self, node: ast.Assert, state: NullnessState) -> NullnessState:
        if _is_false_literal(node.test):
            return unreachable()
        true_state, _ = self.narrowing.narrow(node.test, state, "assert")
        if node.msg is not None:
            self.expressions.eval(node.msg, state.copy())
        return true_state

    def _stmt_Pass(self, node: ast.Pass, state: NullnessState) -> NullnessState:
        return state

    def _stmt_Break(self, node: ast.Break, state: NullnessState) -> NullnessState:
        if self.context.loops:
            self.context.loops[-1].breaks.append(state)
        return unreachable()

    def _stmt_Continue(self, node: ast.Continue, state: NullnessState) -> NullnessState:
        if self.context.loops:
            self.context.loops[-1].continues.append(state)
        return unreachable()

    def _stmt_Global(self, node: ast.Global | ast.Nonlocal, state: NullnessState) -> NullnessState:
        for name in node.names:
            self._invalidate(name, state)
        return state

    _stmt_Nonlocal = _stmt_Global

    def _stmt_Import(self, node: ast.Import | ast.ImportFrom, state: NullnessState) -> NullnessState:
        if self.context.scope.qualname != "<module>":
            for alias in node.names:  # a local import hides a module global of the same name
                spelled = alias.asname if alias.asname is not None else alias.name
                if spelled and spelled != "*":  # `from m import *` binds no name we know
                    self.context.local_definitions.add(spelled.partition(".")[0])
        return state

    _stmt_ImportFrom = _stmt_Import

    def _stmt_If(self, node: ast.If, state: NullnessState) -> NullnessState:
        true_state, false_state = self.narrowing.narrow(node.test, state, "if")
        added = self._added_attribute(node.test)
        if added is not None:  # `if not hasattr(S, "x"): S.x = ...` at import: one-time set-up, not a step's change
            self.context.initialising.add(added)
        try:
            after_body = self.block(node.body, true_state)
        finally:
            self.context.initialising.discard(added)  # type: ignore[arg-type]
        if not node.orelse:
            after_else = false_state
        elif self._is_elif(node):
            after_else = self._stmt_If(node.orelse[0], false_state)  # narrowed even when unreachable
        else:
            after_else = self.block(node.orelse, false_state)
        return self.narrowing.join(after_body, after_else)

    def _added_attribute(self, test: ast.expr) -> tuple[str, str] | None:
        """`not hasattr(receiver, "name")` in a module's own body: the receiver's code and the name."""
        if self.context.scope.qualname != "<module>" or not (
            isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        ):
            return None
        call = test.operand
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "hasattr"
                and len(call.args) == 2 and not call.keywords):
            return None
        name = call.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return None
        return self.context.source.code(call.args[0]), name.value

    @staticmethod
    def _is_elif(node: ast.If) -> bool:
        """`elif` (an If starting in the column of its `if`), not an `if` nested in an `else:` block."""
        orelse = node.orelse
        return len(orelse) == 1 and isinstance(orelse[0], ast.If) and orelse[0].col_offset == node.col_offset

    def _stmt_While(self, node: ast.While, state: NullnessState) -> NullnessState:
        def body(head: NullnessState) -> tuple[NullnessState, NullnessState]:
            true_state, false_state = self.narrowing.narrow(node.test, head, "while")
            if _is_true_literal(node.test):
                false_state = unreachable()
            return self.block(node.body, true_state), false_state

        return self._loop(state, body, node.orelse)

    def _stmt_For(self, node: ast.For | ast.AsyncFor, state: NullnessState) -> NullnessState:
        iterable = self.expressions.eval(node.iter, state)
        self.recorder.sink(node.iter, iterable, "iteration", node.iter, state)

        def body(head: NullnessState) -> tuple[NullnessState, NullnessState]:
            exhausted = head.copy()
            inner = head.copy()
            self.assign(node.target, iterable.element or UNTRACKED, inner, None)
            return self.block(node.body, inner), exhausted

        return self._loop(state, body, node.orelse, runs_once=_non_empty_literal(node.iter))

    def _loop(
        self,
        entry: NullnessState,
        body: Callable[[NullnessState], tuple[NullnessState, NullnessState]],
        orelse: Sequence[ast.stmt],
        runs_once: bool = False,
    ) -> NullnessState:
        """Run a loop to a fixpoint without recording, then once recording. `runs_once`: the body runs at least
        once (a `for` over a literal with elements), so the loop ends only after it: `for name in
        ("kv_connector_output",): setattr(out, name, kvo)` attaches on every path out."""
        recording = self.context.recording
        head = entry
        if self.context.fixpoint_depth < MAX_FIXPOINT_DEPTH:
            self.context.recording = False
            self.context.fixpoint_depth += 1
            for _ in range(MAX_LOOP_ITERATIONS):
                frame = LoopFrame()
                self.context.loops.append(frame)
                end, _ = body(head.copy())
                self.context.loops.pop()
                new_head = self.narrowing.join_all([entry, end, *frame.continues])
                if new_head == head:
                    break
                head = new_head
            self.context.fixpoint_depth -= 1
            self.context.recording = recording
        frame = LoopFrame()
        self.context.loops.append(frame)
        end, exit_state = body(head.copy())
        self.context.loops.pop()
        if runs_once:
            exit_state = self.narrowing.join_all([end, *frame.continues])
        if orelse:
            exit_state = self.block(orelse, exit_state)
        return self.narrowing.join_all([exit_state, *frame.breaks])

    _stmt_AsyncFor = _stmt_For

    def _stmt_Try(self, node: ast.Try | ast.TryStar, state: NullnessState) -> NullnessState:
        seen: list[NullnessState] = [state.copy()]
        current = state
        shielded = self.context.shielded
        self.context.shielded = shielded or self._catches_none_errors(node.handlers)
        try:
            for statement in node.body:  # an exception may leave after any statement: the handlers see each state
                if not current.reachable:
                    break
                current = self._statement(statement, current)
                seen.append(current.copy())
        finally:
            self.context.shielded = shielded
        handler_entry = self.narrowing.join_all(seen)
        outcomes: list[NullnessState] = []
        normal = current
        if node.orelse:
            normal = self.block(node.orelse, normal)
        outcomes.append(normal)
        for handler in node.handlers:
            handler_state = handler_entry.copy()
            if handler.type is not None:
                self.expressions.eval(handler.type, handler_state)
            if handler.name is not None:
                name = ast.copy_location(ast.Name(id=handler.name, ctx=ast.Store()), handler)
                self.assign(name, UNTRACKED, handler_state, None)
            outcomes.append(self.block(handler.body, handler_state))
        after = self.narrowing.join_all(outcomes)
        if not node.finalbody:
            return after
        self.block(node.finalbody, self.narrowing.join(after, handler_entry))
        recording, self.context.recording = self.context.recording, False
        result = self.block(node.finalbody, after) if after.reachable else after
        self.context.recording = recording
        return result

    _stmt_TryStar = _stmt_Try

    def _catches_none_errors(self, handlers: Sequence[ast.ExceptHandler]) -> str:
        """The handler that catches what dereferencing None raises (AttributeError, TypeError or a base)."""
        for handler in handlers:
            if handler.type is None:
                return "`except:`"
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            for element in types:
                caught = element.value if isinstance(element, ast.Starred) else element
                if self._is_none_error(caught):
                    return f"`except {self.context.source.code(caught)}`"
        return ""

    def _is_none_error(self, node: ast.expr) -> bool:
        """`AttributeError`, `TypeError` or a base of them: what dereferencing None raises."""
        return matches(self.context.imports.resolve_dotted(dotted_name(node) or ""), NONE_ERRORS)

    def _stmt_With(self, node: ast.With | ast.AsyncWith, state: NullnessState) -> NullnessState:
        shielded = self.context.shielded
        for item in node.items:
            expr = item.context_expr
            value = self._with_item_value(expr, state)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, value, state, None)
            if isinstance(expr, ast.Call) and matches(self.expressions.resolve(expr.func, state), SUPPRESSORS):
                if any(self._is_none_error(arg.value) for arg in call_arguments(expr)):
                    self.context.shielded = shielded or f"`{self.context.source.code(expr)}`"
        try:
            after = self.block(node.body, state)
        finally:
            self.context.shielded = shielded
        for invariant, (fact, reason) in list(after.paths.items()):
            if fact is PathFact.ON and reason.startswith("inside `with "):
                after.paths[invariant] = (fact, "after `with " + reason[len("inside `with "):])  # the block ended
        return after

    _stmt_AsyncWith = _stmt_With

    def _with_item_value(self, expr: ast.expr, state: NullnessState) -> Value:
        if isinstance(expr, ast.Call):
            callee = self.expressions.resolve(expr.func, state)
            invariants = self.context.invariants.with_context(callee)
            if invariants:
                self.expressions.eval_call_parts(expr, state)
                name = callee.rpartition(".")[2] if callee else "?"
                reason = f"inside `with {name}(...)`"
                qualified = self.expressions.qualified_callee(callee)
                if qualified:  # the reason it gives inside the block, and after it
                    resolved = f"connector context: {qualified}"
                    self.context.path_names[reason] = self.context.path_names[f"after `with {name}(...)`"] = resolved
                for invariant in invariants:
                    self.recorder.record(SiteKind.CONNECTOR_CONTEXT, expr, on_connector_path=True,
                                         path_reason=reason, invariant=invariant)
                    state.set_path(invariant, PathFact.ON, reason)
                return Value(
                    Nullness.NOT_NONE,
                    connector_output=True,
                    evidence=True,
                    origin=f"`{self.context.source.code(expr)}`",
                    guard="connector context",
                    kv_source=True,
                    invariant=invariants[0],  # what it yields is the first one's output
                )
            invariant = self.context.invariants.of_optional_context(callee)
            if invariant:
                self.expressions.eval_call_parts(expr, state)
                return Value(
                    Nullness.MAYBE_NONE, connector_output=True, evidence=True,
                    origin=f"`{self.context.source.code(expr)}`", kv_source=True, invariant=invariant,
                    none_off_path=True,
                )
        value = self.expressions.eval(expr, state)
        self.recorder.sink(expr, value, "`with`", expr, state)
        return UNTRACKED

    def _stmt_Match(self, node: ast.Match, state: NullnessState) -> NullnessState:
        self.expressions.eval(node.subject, state)
        subject = ref_key(node.subject)
        outcomes: list[NullnessState] = []
        irrefutable = False
        for case in node.cases:
            case_state = state.copy()
            if subject is not None and isinstance(case.pattern, ast.MatchClass):
                self.narrowing.set_nullness(subject, Nullness.NOT_NONE, case_state, "class pattern in `match`")
            elif subject is not None and _is_none_pattern(case.pattern):
                self.narrowing.set_nullness(subject, Nullness.NONE, case_state, "")
                if case.guard is None:  # later cases only see values that are not None
                    self.narrowing.set_nullness(subject, Nullness.NOT_NONE, state, "`case None` handled earlier")
            if subject is not None:
                self._narrow_field_patterns(case.pattern, subject, case_state, state if case.guard is None else None)
            for name in _pattern_names(case.pattern):
                self._invalidate(name, case_state)
            self._bind_pattern(case.pattern, case_state, subject)
            if case.guard is not None:
                case_state, _ = self.narrowing.narrow(case.guard, case_state, "case guard")
            elif isinstance(case.pattern, ast.MatchAs) and case.pattern.pattern is None:
                irrefutable = True
            outcomes.append(self.block(case.body, case_state))
        if not irrefutable:
            outcomes.append(state)
        return self.narrowing.join_all(outcomes)

    def _narrow_field_patterns(
        self, pattern: ast.pattern, subject: str, case_state: NullnessState, later: NullnessState | None
    ) -> None:
        """`case Output(kv_connector_output=None)`: the field is None in the case, and not None in the cases after
        it when nothing else in the pattern can fail (`later`: the state they start from; None with a guard);
        `case Output(kv_connector_output=KVConnectorOutput())` (or `=x` bound to a class pattern): not None."""
        if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
            pattern = pattern.pattern
        if not isinstance(pattern, ast.MatchClass):
            return
        fields = [(key, inner) for key, inner in zip(pattern.kwd_attrs, pattern.kwd_patterns)
                  if self.context.invariants.of_field(key)]
        others_irrefutable = not pattern.patterns and all(
            isinstance(inner, ast.MatchAs) and inner.pattern is None
            for key, inner in zip(pattern.kwd_attrs, pattern.kwd_patterns) if not self.context.invariants.of_field(key)
        )
        for key, inner in fields:
            field_key = f"{subject}.{key}"
            if isinstance(inner, ast.MatchAs) and inner.pattern is not None:
                inner = inner.pattern
            if _is_none_pattern(inner):
                self.narrowing.set_nullness(field_key, Nullness.NONE, case_state, "")
                if later is not None and others_irrefutable and len(fields) == 1:
                    guard = f"`case ...({key}=None)` handled earlier"
                    self.narrowing.set_nullness(field_key, Nullness.NOT_NONE, later, guard)
            elif isinstance(inner, ast.MatchClass):
                self.narrowing.set_nullness(field_key, Nullness.NOT_NONE, case_state, "class pattern in `match`")

    def _bind_pattern(self, pattern: ast.pattern, state: NullnessState, subject: str | None = None) -> None:
        """`case Output(kv_connector_output=kvo)` reads the field (of `subject`, the match's subject where it is
        this pattern's: what the cases before said of its field holds); `case KVConnectorOutput() as k` narrows
        `k`."""
        captured = pattern.name if isinstance(pattern, ast.MatchAs) else None
        if isinstance(pattern, ast.MatchAs) and captured is not None and isinstance(pattern.pattern, ast.MatchClass):
            callee = self.context.imports.resolve_dotted(dotted_name(pattern.pattern.cls) or "")
            invariant = self.context.invariants.of_payload_class(callee)
            if invariant:
                state.values[captured] = Value(
                    Nullness.NOT_NONE, connector_output=True, guard="class pattern in `match`", invariant=invariant
                )
            pattern = pattern.pattern
        if not isinstance(pattern, ast.MatchClass):
            return
        class_name = self.context.imports.resolve_dotted(dotted_name(pattern.cls) or "")
        payload_of = self.expressions.payload_invariant(class_name)
        receiver = Value(Nullness.NOT_NONE, cls=self.expressions.class_of(class_name),
                         connector_output=bool(payload_of), invariant=payload_of)
        for key, inner in zip(pattern.kwd_attrs, pattern.kwd_patterns):
            if isinstance(inner, (ast.MatchClass, ast.MatchAs)) and not (
                isinstance(inner, ast.MatchAs) and inner.pattern is None
            ):
                self._bind_pattern(inner, state)  # `kv_connector_output=KVConnectorOutput(finished_sending=s)`
            if payload_of and key in self.context.invariants.payload_fields_of(payload_of) and isinstance(
                inner, ast.MatchAs
            ) and inner.pattern is None and inner.name is not None:
                state.values[inner.name] = evolve(  # a payload set captured: None unless declared
                    self.expressions.payload_field(receiver, key, None, f"the `{key}=` pattern", state),
                    origin=f"`{inner.name}`",
                )
                continue
            invariant = self.context.invariants.of_field(key)
            if (invariant and isinstance(inner, ast.MatchAs)
                    and inner.pattern is None and inner.name is not None):
                known = state.values.get(f"{subject}.{key}") if subject is not None else None
                if known is not None and known.nullness is Nullness.NOT_NONE:  # `case ...(key=None)` came first
                    state.values[inner.name] = known
                    continue
                declared = self.expressions.declared_attribute(receiver, key, f"`{inner.name}`")
                state.values[inner.name] = declared or self.expressions.field_source(
                    f"the `{key}=` pattern", invariant
                )

    def _stmt_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef, state: NullnessState) -> NullnessState:
        for decorator in node.decorator_list:
            self.expressions.eval(decorator, state)
        self.expressions.eval_defaults(node.args, state)
        enclosing = self.context.scope.qualname
        qualname = node.name if enclosing == "<module>" else f"{enclosing}.{node.name}"
        if self.context.recording:
            scope = self.expressions.nested_scope(qualname, state)
            if not self.context.scope.in_class_body:
                scope = evolve(scope, class_name="")  # a function nested in a method has no `self`
            self.context.pending.append((node, evolve(scope, in_class_body=False)))
        self._forget(node.name, state)
        return state

    _stmt_AsyncFunctionDef = _stmt_FunctionDef

    def _stmt_ClassDef(self, node: ast.ClassDef, state: NullnessState) -> NullnessState:
        enclosing = self.context.scope.qualname
        qualname = node.name if enclosing == "<module>" else f"{enclosing}.{node.name}"
        if self.context.recording:
            class_name = f"{self.context.module_name}.{qualname}" if self.context.module_name else qualname
            self.context.pending.append((node, ScopeContext(
                qualname, class_name=class_name, in_class_body=True
            )))
        self._forget(node.name, state)
        return state

"""Narrowing: the states where a condition is true and where it is false, and joins."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import ast

from kvlint.flow.context import FlowContext
from kvlint.flow.state import (
    evolve,
    Nullness,
    NullnessState,
    UNTRACKED,
    PathFact,
    Value,
    join_values,
    unreachable,
)
from kvlint.flow.syntax import (
    Argument,
    call_arguments,
    dotted_name,
    is_none_literal,
    ref_key,
)
from kvlint.binding.names import matches
from kvlint.sites import SiteKind

if TYPE_CHECKING:  # the parts call one another: `FlowAnalysis` sets up which part calls which
    from kvlint.flow.expressions import Expressions
    from kvlint.flow.recording import Recorder
    from kvlint.flow.statements import Statements


_TYPE_PREDICATES = ("typing.TypeGuard", "typing.TypeIs", "typing_extensions.TypeGuard", "typing_extensions.TypeIs")


class Narrowing:
    """Conditions and joins: the states where a condition is true and where it is false, and what two paths
    reaching one point both know."""

    statements: Statements
    expressions: Expressions
    recorder: Recorder

    def __init__(self, context: FlowContext) -> None:
        self.context = context

    def join(self, a: NullnessState, b: NullnessState) -> NullnessState:
        """Join the facts of two incoming paths."""
        if not a.reachable:
            return b.copy()
        if not b.reachable:
            return a.copy()
        values: dict[str, Value] = {}
        for key in a.values.keys() | b.values.keys():
            left = a.values.get(key)
            if left is not None and left is b.values.get(key):
                values[key] = left  # the same value on both paths (most keys, most joins)
                continue
            left = left or self.expressions.default_for_key(key)
            right = b.values.get(key) or self.expressions.default_for_key(key)
            if left is None or right is None:
                # bound on one path only: its value there proves nothing about the other path
                present = right if left is None else left
                assert present is not None
                values[key] = evolve(present, evidence=False) if present.evidence else present
            else:
                values[key] = join_values(left, right)
        paths: dict[str, tuple[PathFact, str]] = {}
        invariant_names = self.context.invariant_names
        reasons_a, reasons_b = a.path_reasons(invariant_names), b.path_reasons(invariant_names)
        for invariant in invariant_names:
            reason_a, reason_b = reasons_a[invariant], reasons_b[invariant]
            if reason_a and reason_b:
                paths[invariant] = (PathFact.ON, reason_a if reason_a == reason_b else min(reason_a, reason_b))
            elif a.path_of(invariant) is PathFact.OFF and b.path_of(invariant) is PathFact.OFF:
                paths[invariant] = (PathFact.OFF, "")
        return NullnessState(values, paths)

    def join_all(self, states: Sequence[NullnessState]) -> NullnessState:
        result = unreachable()
        for item in states:
            result = self.join(result, item)
        return result

    def narrow(self, test: ast.expr, state: NullnessState, how: str) -> tuple[NullnessState, NullnessState]:
        """Evaluate a condition; return the states where it is true and false."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            true_state, false_state = self.narrow(test.operand, state, how)
            return false_state, true_state
        if isinstance(test, ast.BoolOp):
            # n-ary: `a and b and c` narrows as `(a and b) and c` (left to right)
            left_true, left_false = self.narrow(test.values[0], state, how)
            for right in test.values[1:]:
                if isinstance(test.op, ast.And):
                    right_true, right_false = self.narrow(right, left_true, how)
                    left_true, left_false = right_true, self.join(left_false, right_false)
                else:
                    right_true, right_false = self.narrow(right, left_false, how)
                    left_true, left_false = self.join(left_true, right_true), right_false
            return left_true, left_false
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            narrowed = self._narrow_none_comparison(test, state) or self._narrow_sentinel_identity(test, state)
            if narrowed is not None:
                return narrowed
        if isinstance(test, ast.Call):
            narrowed = self._narrow_call(test, state, how)
            if narrowed is not None:
                return narrowed
        if isinstance(test, ast.NamedExpr):
            self.expressions.eval(test, state)
            return self._narrow_truthy(test.target, state, how)
        key = ref_key(test)
        if key is not None:
            self.expressions.eval(test, state)
            return self._narrow_truthy(test, state, how)
        self.expressions.eval(test, state)
        return state, state.copy()

    def _narrow_truthy(
        self, node: ast.expr, state: NullnessState, how: str
    ) -> tuple[NullnessState, NullnessState]:
        key = ref_key(node)
        true_state, false_state = state, state.copy()
        if key is not None:
            held = state.values.get(key)
            if held is not None and held.condition is not None and self._apply_condition(
                held.condition, true_state, false_state
            ):
                return true_state, false_state
            self.set_nullness(key, Nullness.NOT_NONE, true_state, f"truthiness check (`{how}`)")
            value = false_state.values.get(key) or self.expressions.default_for_key(key)
            if value is not None and (value.payload or value.connector_output):
                false_state.values[key] = evolve(value, empty=True)  # falsy: None or empty
                self._mark_empty_output(key, false_state)
            elif self._is_emptiness_field(key, false_state):  # `not kvo.invalid_block_ids`: never None, empty
                false_state.values[key] = evolve(value or UNTRACKED, empty=True)
                self._mark_empty_output(key, false_state)
        return true_state, false_state

    def _is_emptiness_field(self, key: str, state: NullnessState) -> bool:
        """`kvo.invalid_block_ids` of a connector output `kvo`: a field its `is_empty()` counts."""
        owner, _, name = key.rpartition(".")
        if not owner:
            return False
        if name not in self.context.invariants.emptiness_fields_of(self.expressions.lookup(owner, state).invariant):
            return False
        return self.expressions.lookup(owner, state).connector_output

    def _mark_empty_output(self, payload_key: str, state: NullnessState) -> None:
        """Every payload set of `x` is falsy here: `x` carries nothing (for KVC006)."""
        owner, _, name = payload_key.rpartition(".")
        if not owner:
            return
        value = self.expressions.lookup(owner, state)
        if value.connector_output and self.statements.known_empty(owner, value, state):
            state.values[owner] = evolve(value, empty=True)

    def condition_of(self, test: ast.expr, state: NullnessState) -> tuple[object, ...] | None:
        """What a boolean assigned from `test` remembers: `use_kv = has_kv_transfer_group()`, `ok = x is not None`."""
        invariants = (self.context.invariants.with_guard(self.expressions.resolve(test.func, state))
                      if isinstance(test, ast.Call) else ())
        if invariants:
            callee = self.expressions.resolve(test.func, state) or "?"
            return ("path", invariants, f"`{callee.rpartition('.')[2]}()` is true here")
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            operator = test.ops[0]
            if isinstance(operator, (ast.Is, ast.IsNot)) and is_none_literal(test.comparators[0]):
                key = ref_key(test.left)
                held = state.values.get(key) if key else None
                if key is not None and held is not None and held.tracked:
                    return ("not-none" if isinstance(operator, ast.IsNot) else "none", key, held)
        return None

    def _apply_condition(
        self, condition: tuple[object, ...], true_state: NullnessState, false_state: NullnessState
    ) -> bool:
        """Narrow by a remembered guard; False when the value it spoke of has changed since."""
        if condition[0] == "path":
            for invariant in condition[1]:  # type: ignore[union-attr]
                true_state.set_path(invariant, PathFact.ON, str(condition[2]))
                false_state.set_path(invariant, PathFact.OFF)
                self._none_off_path(invariant, false_state)
            return True
        kind, key, held = condition
        if true_state.values.get(str(key)) != held:
            return False
        positive, negative = (true_state, false_state) if kind == "not-none" else (false_state, true_state)
        self.set_nullness(str(key), Nullness.NOT_NONE, positive, "`is not None` check (held in a variable)")
        self.set_nullness(str(key), Nullness.NONE, negative, "")
        return True

    @staticmethod
    def _none_off_path(invariant: str, state: NullnessState) -> None:
        """Where `invariant`'s connector is off, what its optional context yielded is None (nothing to hand on)."""
        for key, value in list(state.values.items()):
            if value.none_off_path and value.invariant == invariant and value.nullness is Nullness.MAYBE_NONE:
                state.values[key] = evolve(value, nullness=Nullness.NONE, guard="")

    def _narrow_none_comparison(
        self, test: ast.Compare, state: NullnessState
    ) -> tuple[NullnessState, NullnessState] | None:
        operator = test.ops[0]
        comparator = test.comparators[0]
        if isinstance(operator, (ast.Is, ast.Eq)):
            positive = True
        elif isinstance(operator, (ast.IsNot, ast.NotEq)):
            positive = False
        else:
            return None
        if is_none_literal(comparator):
            subject = test.left
        elif is_none_literal(test.left):
            subject = comparator
        else:
            return None
        self.expressions.eval(subject, state)
        if isinstance(subject, ast.NamedExpr):
            subject = subject.target
        key = ref_key(subject)
        is_none, not_none = state, state.copy()
        if key is not None:
            self.set_nullness(key, Nullness.NONE, is_none, "")
            self.set_nullness(key, Nullness.NOT_NONE, not_none, "`is not None` check")
        return (is_none, not_none) if positive else (not_none, is_none)

    def _narrow_sentinel_identity(
        self, test: ast.Compare, state: NullnessState
    ) -> tuple[NullnessState, NullnessState] | None:
        """`if out is EMPTY_MODEL_RUNNER_OUTPUT:`: where it is true, `out` is the shared sentinel itself, which a
        mutation corrupts (KVC004). Its return is no KVC002 (no `sentinel_of`): a function that hands back the
        output it was given hands on whatever its caller had."""
        if not isinstance(test.ops[0], (ast.Is, ast.IsNot)):
            return None
        key, comparator = ref_key(test.left), test.comparators[0]
        if key is None or not isinstance(comparator, (ast.Name, ast.Attribute)):
            return None
        sentinel = self.expressions.eval(comparator, state)  # a read: the test's own evaluation reads it again
        if not sentinel.sentinel:
            return None
        self.expressions.eval(test.left, state)
        true_state, false_state = state, state.copy()
        true_state.values[key] = evolve(sentinel, sentinel_of=())
        return (true_state, false_state) if isinstance(test.ops[0], ast.Is) else (false_state, true_state)

    def _narrow_call(
        self, test: ast.Call, state: NullnessState, how: str
    ) -> tuple[NullnessState, NullnessState] | None:
        callee = self.expressions.resolve(test.func, state)
        invariants = self.context.invariants.with_guard(callee)
        if invariants:
            self.expressions.eval(test, state)
            name = callee.rpartition(".")[2] if callee else "?"
            for invariant in invariants:
                self.recorder.record(SiteKind.CONNECTOR_GUARD, test, state=state, invariant=invariant)
            true_state, false_state = state, state.copy()
            reason = f"`{name}()` is true here"
            qualified = self.expressions.qualified_callee(callee)
            if qualified:
                self.context.path_names[reason] = f"connector guard: {qualified}"
            for invariant in invariants:
                true_state.set_path(invariant, PathFact.ON, reason)
                false_state.set_path(invariant, PathFact.OFF)
                self._none_off_path(invariant, false_state)
            return true_state, false_state
        arguments = call_arguments(test)
        if isinstance(test.func, ast.Attribute) and test.func.attr == "is_empty" and not arguments:
            key = ref_key(test.func.value)
            self.expressions.eval(test, state)
            true_state, false_state = state, state.copy()
            if key is not None:
                value = self.expressions.lookup(key, state)
                if value.connector_output:
                    true_state.values[key] = evolve(value, nullness=Nullness.NOT_NONE, empty=True)
                    false_state.values[key] = evolve(value, nullness=Nullness.NOT_NONE)
            return true_state, false_state
        if callee in ("isinstance", "bool") and arguments and not arguments[0].star:
            self.expressions.eval(test, state)
            subject = arguments[0].value
            if isinstance(subject, ast.NamedExpr):
                subject = subject.target
            key = ref_key(subject)
            true_state, false_state = state, state.copy()
            if key is not None:
                self.set_nullness(key, Nullness.NOT_NONE, true_state, f"`{callee}()` check")
                narrowed = self._isinstance_class(test) if callee == "isinstance" else None
                held = true_state.values.get(key)
                if narrowed and held is not None:
                    true_state.values[key] = evolve(held, cls=narrowed)  # its declarations now apply
            return true_state, false_state
        return self._narrow_type_predicate(test, callee, arguments, state)

    def _narrow_type_predicate(
        self, test: ast.Call, callee: str | None, arguments: list[Argument], state: NullnessState
    ) -> tuple[NullnessState, NullnessState] | None:
        """A call of a function declared `-> TypeGuard[X]` or `-> TypeIs[X]` (PEP 647, PEP 742) narrows its first
        argument: to `X` where it is true; where a `TypeIs` is false, to what is not `X` (so a payload that may
        be None, tested for the payload class, is None there)."""
        if not arguments or arguments[0].star or arguments[0].keyword is not None:
            return None
        receiver = self.expressions.quiet_eval(test.func.value, state) if isinstance(test.func, ast.Attribute) else None
        decl = self.expressions.callee_declaration(test, callee, receiver)
        returns = decl.returns if decl is not None else None
        if returns is None or returns.kind != "class" or len(returns.args) != 1:
            return None
        predicate = returns.name.rpartition(".")[2]
        if predicate not in ("TypeGuard", "TypeIs") or not (
            matches(returns.name, _TYPE_PREDICATES) or returns.name == predicate  # `def` read without its imports
        ):
            return None
        self.expressions.eval(test, state)
        subject = arguments[0].value
        if isinstance(subject, ast.NamedExpr):
            subject = subject.target
        key = ref_key(subject)
        true_state, false_state = state, state.copy()
        narrowed = returns.args[0]
        if key is None or narrowed.optional or narrowed.kind in ("none", "other"):
            return true_state, false_state  # `TypeGuard[X | None]` says nothing about None
        name = f"`{self.context.source.code(test.func)}()` ({predicate})"
        self.set_nullness(key, Nullness.NOT_NONE, true_state, f"{name} check")
        held = false_state.values.get(key) or self.expressions.default_for_key(key)
        if predicate == "TypeIs" and held is not None and held.connector_output and narrowed.kind == "class" and (
            self.expressions.payload_invariant(narrowed.name) == held.invariant != ""
        ):
            self.set_nullness(key, Nullness.NONE, false_state, "")
        return true_state, false_state

    def _isinstance_class(self, test: ast.Call) -> str:
        """The tree's class `isinstance(x, C)` narrows to ("" for a tuple or a class the tree lacks)."""
        arguments = call_arguments(test)
        if len(arguments) < 2:
            return ""
        spelled = dotted_name(arguments[1].value)
        if not spelled:
            return ""
        context = self.context
        decl = context.index.class_named(context.imports.resolve_dotted(spelled), context.module_name, context.reach)
        return decl.qualname if decl is not None else ""

    def set_nullness(self, key: str, nullness: Nullness, state: NullnessState, guard: str) -> None:
        value = self.expressions.lookup(key, state)
        if not value.tracked and value.nullness is Nullness.UNKNOWN:
            return
        state.values[key] = evolve(
            value, nullness=nullness, guard=guard if nullness is Nullness.NOT_NONE else ""
        )

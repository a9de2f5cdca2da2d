"""Turning flow facts into `Site` records (the only output of the analysis)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kvlint.flow.context import FlowContext
from kvlint.flow.state import (
    Nullness,
    NullnessState,
    Value,
)
from kvlint.binding.names import matches
from kvlint.flow.syntax import Argument, call_arguments, is_none_literal
from kvlint.sites import DerefTarget, SentinelUseKind, Site, SiteKind

if TYPE_CHECKING:  # the parts call one another: `FlowAnalysis` sets up which part calls which
    from kvlint.flow.expressions import Expressions
    from kvlint.flow.statements import Statements


SiteKey = tuple[object, ...]  # (kind, span, sink, sentinel use, invariant): one site of one invariant


def site_invariant(key: SiteKey) -> str:
    """The invariant a site key belongs to (it ends the key)."""
    return str(key[-1])


# the sites that demand a connector output (KVC002, KVC006, KVC003): where one must be attached
ATTACHING_SITES = (SiteKind.SENTINEL_USE, SiteKind.KV_DROPPED, SiteKind.OUTPUT_CONSTRUCTION)
_PATH_DECIDES = (SiteKind.SENTINEL_USE, SiteKind.OUTPUT_CONSTRUCTION)  # KVC002, KVC003: only on a connector path


def _candidates(
    state: NullnessState, invariant: str, known_empty: Callable[[str, Value], bool]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The local names holding `invariant`'s connector output that may be non-None here, and of those the ones
    proven non-None and not known to be empty (an empty one left out may have been left out on purpose)."""
    held = sorted(
        (key, value) for key, value in state.values.items()
        if "." not in key and "[" not in key and value.connector_output and value.invariant == invariant
        and value.nullness in (Nullness.MAYBE_NONE, Nullness.NOT_NONE)
    )
    return (
        tuple(key for key, _ in held),
        tuple(key for key, value in held if value.nullness is Nullness.NOT_NONE and not known_empty(key, value)),
    )


def value_names(value: Value) -> tuple[str, ...]:
    """What a value's declarations resolved to (`Site.resolved`): the declaration that makes it maybe None, and
    the payload class it is an instance of."""
    return tuple(f"{role}: {name}" for role, name in (("declaration", value.declared_by), ("payload class", value.cls))
                 if name)


class Recorder:
    """Record sites: what the flow knows at a point, as the rules read it."""

    statements: Statements
    expressions: Expressions

    def __init__(self, context: FlowContext) -> None:
        self.context = context

    def record(
        self, kind: SiteKind, node: ast.AST, state: NullnessState | None = None, invariant: str = "",
        **facts: object,
    ) -> tuple[object, ...] | None:
        """Record a site of `invariant` (the first one when not known) and return its key; with `state`,
        its connector-path facts are that invariant's there."""
        context = self.context
        if not context.recording or not self.keeps(kind):
            return None
        invariants = context.invariants
        found = invariants.by_name.get(invariant) or invariants.by_name.get(invariants.first)
        invariant = found.name if found is not None else ""
        span = context.source.span(node)
        if not self.keeps(kind, bool(facts.get("may_be_none"))):
            # no rule flags it, and it still replaces what its key held (a node the flow records again)
            context.sites.pop((kind, span, facts.get("sink", ""), facts.get("sentinel_use"), invariant), None)
            return None
        if state is not None:
            reason = state.connector_path_reason(invariant)
            facts.update(on_connector_path=bool(reason), path_reason=reason)
            if reason in context.path_names and kind in _PATH_DECIDES:  # the path decides it: say whose guard
                facts["resolved"] = (*facts.get("resolved", ()), context.path_names[reason])  # type: ignore[misc]
            if kind in ATTACHING_SITES and (kind is not SiteKind.SENTINEL_USE or facts.get("sentinel_use") is
                                            SentinelUseKind.RETURNED):
                known_empty = self.statements.known_empty
                facts.update(zip(
                    ("candidates", "proven_candidates"),
                    _candidates(state, invariant, lambda key, value: known_empty(key, value, state)),
                ))
        if "expression" not in facts:
            facts["expression"] = context.source.code(node)
        site = Site(
            kind=kind, span=span, function=context.scope.qualname, invariant=invariant,
            field=found.field_name if found is not None else "",
            payload=found.payload_name if found is not None else "",
            **facts,  # type: ignore[arg-type]
        )
        key = (kind, span, site.sink, site.sentinel_use, invariant)
        context.sites[key] = site
        return key

    def keeps(self, kind: SiteKind, may_be_none: bool = True) -> bool:
        """Whether this analysis records such a site: every one, for a report that lists them; for findings alone,
        only one a rule may flag (`engine.analyse_prepared`'s `sites`)."""
        kinds = self.context.kinds
        return kinds is None or kind in kinds and (may_be_none or kind not in self.context.maybe_none_kinds)

    def sink(
        self, operand: ast.expr, value: Value, sink: str, at: ast.AST, state: NullnessState
    ) -> None:
        """Record a dereference of a tracked value (KVC001/KVC005 read these)."""
        context = self.context
        if not (context.recording and (value.connector_output or value.payload)):
            return  # (a loop's first passes, until its facts settle, record nothing: no text to build)
        shielded = context.shielded
        may_be_none = value.may_be_none and not shielded
        if not self.keeps(SiteKind.DEREFERENCE, may_be_none):  # proven non-None, for findings alone: no text to
            self.record(SiteKind.DEREFERENCE, at, invariant=value.invariant, sink=sys.intern(sink))  # build, and
            return  # what its key held goes
        self.record(
            SiteKind.DEREFERENCE,
            at,
            invariant=value.invariant,
            operand=context.source.code(operand),
            operand_span=context.source.span(operand),
            may_be_none=may_be_none,
            definitely_none=value.nullness is Nullness.NONE and not shielded,
            guard=f"caught by {shielded}" if shielded and value.may_be_none else value.guard,
            origin=sys.intern(value.origin),  # one string for the many sites that share it (memory per finding)
            deref_target=DerefTarget.PAYLOAD_FIELD if value.payload else DerefTarget.CONNECTOR_OUTPUT,
            sink=sys.intern(sink),
            resolved=value_names(value),
            state=state,
        )

    def record_mutation(
        self, target: ast.AST, receiver: ast.expr, state: NullnessState, value: Value | None = None
    ) -> None:
        """KVC004; `value`, the receiver's, tells a member of the sentinel (or of a shallow copy) from itself."""
        context = self.context
        if not context.recording:
            return
        if isinstance(target, ast.Attribute) and (context.source.code(receiver), target.attr) in context.initialising:
            return  # gives the sentinel a field it lacks, once, when the module is imported
        member = ""
        if value is not None and value.sentinel_part:
            member = "shallow-copy member" if value.shallow_copy else "member"
        self.record(
            SiteKind.SENTINEL_USE,
            target,
            invariant=self._mutated_invariant(target, value),
            sentinel_use=SentinelUseKind.MUTATED,
            operand=self.context.source.code(receiver),
            sink=member,
            resolved=self.sentinel_names(receiver, state),
            state=state,
        )

    def sentinel_names(self, spelled: ast.expr, state: NullnessState) -> tuple[str, ...]:
        """`sentinel: vllm.v1.outputs.EMPTY_MODEL_RUNNER_OUTPUT` where the expression resolves to a configured
        sentinel through the module's imports (a local bound to it, or a copy, names none)."""
        resolved = self.expressions.resolve(spelled, state)
        if resolved is None or not matches(resolved, self.context.invariants.empty_sentinels):
            return ()
        return (f"sentinel: {self.context.index.canonical(resolved)}",)

    def _mutated_invariant(self, target: ast.AST, value: Value | None) -> str:
        """The invariant a mutation of the sentinel speaks for: the field it sets, else the first whose
        sentinel it is (one finding, however many invariants share the sentinel)."""
        if isinstance(target, ast.Attribute) and self.context.invariants.of_field(target.attr):
            return self.context.invariants.of_field(target.attr)
        return value.sentinel_of[0] if value is not None and value.sentinel_of else ""

    def record_output_construction(self, node: ast.Call, state: NullnessState) -> list[tuple[object, ...]]:
        """Record `ModelRunnerOutput(...)` once per invariant whose output class it is; return the keys of
        the sites where it is built without that invariant's connector output."""
        callee = self.expressions.resolve(node.func, state)
        resolved = (f"output class: {self.expressions.class_of(callee)}",) if callee else ()
        arguments = call_arguments(node)
        positional = [arg for arg in arguments if arg.keyword is None and not arg.star]
        fields = self._positional_fields(node) if positional else ()
        bare = []
        for invariant in self.context.invariants.with_output_class(callee) or self.context.invariant_names[:1]:
            optional_fields = self.context.invariants.by_name[invariant].optional_fields
            carries: bool | None = False
            argument = ""
            if positional:
                carried = self._positional_field(positional, fields, optional_fields)
                if carried is None:
                    carries = None  # cannot tell which field the positions fill
                elif carried is not False:
                    argument = self.context.source.code(carried)
                    carries = not is_none_literal(carried)
            for arg in arguments:
                if arg.star:
                    carries = None
                elif arg.keyword is not None and arg.keyword in optional_fields:
                    argument = self.context.source.code(arg.value)
                    carries = not is_none_literal(arg.value)
                    break
            key = self.record(
                SiteKind.OUTPUT_CONSTRUCTION,
                node,
                state=state,
                invariant=invariant,
                carries_connector_output=carries,
                connector_output_argument=argument,
                resolved=resolved,
            )
            if key is not None and carries is False:
                bare.append(key)
        return bare

    def _positional_fields(self, node: ast.Call) -> tuple[str, ...] | None:
        """The constructed class's positional field order; None when it is not known (a class outside the tree)."""
        callee = self.expressions.resolve(node.func, NullnessState()) or ""
        decl = self.context.index.class_named(callee, self.context.module_name, self.context.reach)
        return self.context.index.fields(decl.qualname) if decl is not None else None

    @staticmethod
    def _positional_field(
        positional: list[Argument], fields: tuple[str, ...] | None, optional_fields: tuple[str, ...]
    ) -> ast.expr | bool | None:
        """The argument a positional call passes for the connector output: False when the positions stop
        before it, None when the class's field order is not known."""
        if fields is None:
            return None
        for number, name in enumerate(fields):
            if name in optional_fields:
                return positional[number].value if number < len(positional) else False
        return False

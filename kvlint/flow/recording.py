"""Turning flow facts into `Site` records (the only output of the analysis)."""

from __future__ import annotations

import libcst as cst

from kvlint.flow.state import (
    Nullness,
    NullnessState,
    Value,
)
from kvlint.flow.syntax import (
    one_line,
    is_none_literal,
)
from kvlint.sites import DerefTarget, SentinelUseKind, Site, SiteKind, Span


class Recording:
    """Record sites; mixed into `FlowAnalysis`."""

    def _span(self, node: cst.CSTNode) -> Span:
        return self.span_of(node)

    def _code(self, node: cst.CSTNode) -> str:
        return one_line(self.module.code_for_node(node))

    def _record(
        self, kind: SiteKind, node: cst.CSTNode, state: NullnessState | None = None, **facts: object
    ) -> tuple[object, ...] | None:
        """Record a site and return its key; with `state`, its connector-path facts are taken from there."""
        if not self.recording:
            return None
        if state is not None:
            reason = state.connector_path_reason()
            facts.update(on_connector_path=bool(reason), path_reason=reason)
        span = self._span(node)
        facts.setdefault("expression", self._code(node))
        site = Site(kind=kind, span=span, function=self.scope.qualname, **facts)  # type: ignore[arg-type]
        key = (kind, span, site.sink, site.sentinel_use)
        self.sites[key] = site
        return key

    def _sink(
        self, operand: cst.BaseExpression, value: Value, sink: str, at: cst.CSTNode, state: NullnessState
    ) -> None:
        """Record a dereference of a tracked value (KVC001/KVC005 read these)."""
        if not (value.connector_output or value.payload):
            return
        self._record(
            SiteKind.DEREFERENCE,
            at,
            operand=self._code(operand),
            may_be_none=value.may_be_none and not self.shielded,
            definitely_none=value.nullness is Nullness.NONE and not self.shielded,
            guard=f"caught by {self.shielded}" if self.shielded and value.may_be_none else value.guard,
            origin=value.origin,
            deref_target=DerefTarget.PAYLOAD_FIELD if value.payload else DerefTarget.CONNECTOR_OUTPUT,
            sink=sink,
            state=state,
        )

    def _record_mutation(
        self, target: cst.CSTNode, receiver: cst.BaseExpression, state: NullnessState, value: Value | None = None
    ) -> None:
        """KVC004; `value`, the receiver's, tells a member of the sentinel (or of a shallow copy) from itself."""
        member = ""
        if value is not None and value.sentinel_part:
            member = "shallow-copy member" if value.shallow_copy else "member"
        self._record(
            SiteKind.SENTINEL_USE,
            target,
            sentinel_use=SentinelUseKind.MUTATED,
            operand=self._code(receiver),
            sink=member,
            state=state,
        )

    def _record_output_construction(self, node: cst.Call, state: NullnessState) -> tuple[object, ...] | None:
        """Record `ModelRunnerOutput(...)`; return its site key when it is built without a connector output."""
        carries: bool | None = False
        argument = ""
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        if positional:
            carried = self._positional_field(node, positional)
            if carried is None:
                carries = None  # cannot tell which field the positions fill
            elif carried is not False:
                argument = self._code(carried)
                carries = not is_none_literal(carried)
        for arg in node.args:
            if arg.star:
                carries = None
            elif arg.keyword is not None and arg.keyword.value in self.config.optional_fields:
                argument = self._code(arg.value)
                carries = not is_none_literal(arg.value)
                break
        key = self._record(
            SiteKind.OUTPUT_CONSTRUCTION,
            node,
            state=state,
            carries_connector_output=carries,
            connector_output_argument=argument,
        )
        return key if carries is False else None

    def _positional_field(self, node: cst.Call, positional: list[cst.Arg]) -> cst.BaseExpression | bool | None:
        """The argument a positional call passes for the connector output: False when the positions stop
        before it, None when the class's field order is not known (a class outside the tree)."""
        callee = self._resolve(node.func, NullnessState()) or ""
        decl = self.index.class_named(callee, self.module_name)
        fields = self.index.fields(decl.qualname) if decl is not None else None
        if fields is None:
            return None
        for number, name in enumerate(fields):
            if name in self.config.optional_fields:
                return positional[number].value if number < len(positional) else False
        return False

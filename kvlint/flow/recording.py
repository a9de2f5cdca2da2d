"""Turning flow facts into `Site` records (the only output of the analysis)."""

from __future__ import annotations

import libcst as cst

from kvlint.flow.state import (
    NullnessState,
    Value,
)
from kvlint.flow.syntax import (
    is_none_literal,
)
from kvlint.sites import DerefTarget, SentinelUseKind, Site, SiteKind, Span


class Recording:
    """Record sites; mixed into `FlowAnalysis`."""

    def _span(self, node: cst.CSTNode) -> Span:
        return self.span_of(node)

    def _code(self, node: cst.CSTNode) -> str:
        text = " ".join(self.module.code_for_node(node).split())
        return text if len(text) <= 80 else text[:77] + "..."

    def _record(self, kind: SiteKind, node: cst.CSTNode, state: NullnessState | None = None, **facts: object) -> None:
        """Record a site; with `state`, its connector-path facts are taken from there."""
        if not self.recording:
            return
        if state is not None:
            reason = state.connector_path_reason()
            facts.update(on_connector_path=bool(reason), path_reason=reason)
        span = self._span(node)
        facts.setdefault("expression", self._code(node))
        site = Site(kind=kind, span=span, function=self.scope.qualname, **facts)  # type: ignore[arg-type]
        self.sites[(kind, span, site.sink, site.sentinel_use)] = site

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
            may_be_none=value.may_be_none,
            guard=value.guard,
            origin=value.origin,
            deref_target=DerefTarget.PAYLOAD_FIELD if value.payload else DerefTarget.CONNECTOR_OUTPUT,
            sink=sink,
            state=state,
        )

    def _record_mutation(self, target: cst.CSTNode, receiver: cst.BaseExpression, state: NullnessState) -> None:
        self._record(
            SiteKind.SENTINEL_USE,
            target,
            sentinel_use=SentinelUseKind.MUTATED,
            operand=self._code(receiver),
            state=state,
        )

    def _record_output_construction(self, node: cst.Call, state: NullnessState) -> None:
        carries: bool | None = False
        argument = ""
        for arg in node.args:
            if arg.star:
                carries = None
            elif arg.keyword is not None and arg.keyword.value in self.config.optional_fields:
                argument = self._code(arg.value)
                carries = not is_none_literal(arg.value)
                break
        self._record(
            SiteKind.OUTPUT_CONSTRUCTION,
            node,
            state=state,
            carries_connector_output=carries,
            connector_output_argument=argument,
        )

"""Evaluating expressions to abstract values, recording the sinks inside them."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import libcst as cst

from kvlint.flow.state import (
    FRESH,
    UNTRACKED,
    Nullness,
    NullnessState,
    ScopeContext,
    Value,
    join_values,
)
from kvlint.flow.syntax import (
    dotted_name,
    ref_key,
)
from kvlint.names import matches
from kvlint.sites import SentinelUseKind, SiteKind


class Expressions:
    """Expression evaluation; mixed into `FlowAnalysis`."""

    def _default_for_key(self, key: str) -> Value | None:
        """The value a key has before any assignment or narrowing in this scope."""
        if "." not in key and "[" not in key:
            return None
        last = re.split(r"[.\[]", key)[-1]
        if last in self.config.optional_fields:
            return Value(Nullness.MAYBE_NONE, connector_output=True, evidence=True, origin=f"`{key}`")
        if key.startswith("self.") and key.count(".") == 1 and last in self.scope.class_optional_attributes:
            return Value(Nullness.MAYBE_NONE, connector_output=True, evidence=True, origin=f"`{key}`")
        if last in self.config.payload_optional_fields:
            return Value(Nullness.MAYBE_NONE, payload=True, origin=f"`{key}`")
        return None

    def _lookup(self, key: str, state: NullnessState) -> Value:
        value = state.values.get(key)
        if value is not None:
            return value
        return self._default_for_key(key) or UNTRACKED

    def _resolve(self, node: cst.BaseExpression, state: NullnessState) -> str | None:
        """Resolve a callee/name through imports unless the root is a local."""
        spelled = dotted_name(node)
        if spelled is None:
            return None
        root = spelled.partition(".")[0]
        if root in state.values and not state.values[root].sentinel:
            return spelled if "." in spelled else None
        return self.imports.resolve_dotted(spelled)

    def _sentinel_value(self, name: str) -> Value:
        return Value(Nullness.NOT_NONE, sentinel=True, origin=f"`{name}`")

    def _eval(self, node: cst.BaseExpression, state: NullnessState) -> Value:
        """Evaluate an expression for its value, recording the sites inside it."""
        handler = getattr(self, f"_expr_{type(node).__name__}", None)
        if handler is not None:
            return handler(node, state)
        for child in node.children:
            if isinstance(child, cst.BaseExpression):
                self._eval(child, state)
            elif isinstance(child, (cst.Arg, cst.BaseElement, cst.BaseDictElement, cst.FormattedStringExpression)):
                for grandchild in child.children:
                    if isinstance(grandchild, cst.BaseExpression):
                        self._eval(grandchild, state)
        return UNTRACKED

    def _expr_Name(self, node: cst.Name, state: NullnessState) -> Value:
        value = state.values.get(node.value)
        if value is not None:
            return value
        if matches(self.imports.resolve_dotted(node.value), self.config.empty_sentinels):
            return self._sentinel_value(node.value)
        if node.value == "None":
            return Value(Nullness.NONE)
        return UNTRACKED

    def _expr_Attribute(self, node: cst.Attribute, state: NullnessState) -> Value:
        receiver = self._eval(node.value, state)
        self._sink(node.value, receiver, f"attribute access `.{node.attr.value}`", node, state)
        return self._attribute_value(node, receiver, state)

    def _attribute_value(self, node: cst.Attribute, receiver: Value, state: NullnessState) -> Value:
        attr = node.attr.value
        key = ref_key(node)
        if attr in self.config.optional_fields:
            value = (
                self._lookup(key, state)
                if key
                else Value(Nullness.MAYBE_NONE, connector_output=True, evidence=True, origin=f"`{self._code(node)}`")
            )
            self._record(
                SiteKind.OPTIONAL_ACCESS,
                node,
                may_be_none=value.may_be_none,
                guard=value.guard,
                state=state,
            )
            return value
        if receiver.connector_output and attr in self.config.payload_optional_fields:
            return (
                self._lookup(key, state)
                if key
                else Value(Nullness.MAYBE_NONE, payload=True, origin=f"`{self._code(node)}`")
            )
        if key is not None:
            if key in state.values:
                return state.values[key]
            default = self._default_for_key(key)
            if default is not None and default.connector_output:
                return default
        if receiver.nullness is Nullness.UNKNOWN and not receiver.tracked and key is None:
            return UNTRACKED
        if matches(self._resolve(node, state), self.config.empty_sentinels):
            return self._sentinel_value(self._code(node))
        return UNTRACKED

    def _expr_Subscript(self, node: cst.Subscript, state: NullnessState) -> Value:
        receiver = self._eval(node.value, state)
        self._sink(node.value, receiver, "subscript", node, state)
        self._eval_slices(node, state)
        key = ref_key(node)
        if key is not None and key in state.values:
            return state.values[key]
        return UNTRACKED

    def _eval_slices(self, node: cst.Subscript, state: NullnessState) -> None:
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index):
                self._eval(index.value, state)
            else:
                for part in (index.lower, index.upper, index.step):
                    if part is not None:
                        self._eval(part, state)

    def _eval_call_parts(self, node: cst.Call, state: NullnessState) -> list[Value]:
        values = []
        for arg in node.args:
            value = self._eval(arg.value, state)
            if arg.star == "*":
                self._sink(arg.value, value, "`*` unpacking", arg.value, state)
            elif arg.star == "**":
                self._sink(arg.value, value, "`**` unpacking", arg.value, state)
            values.append(value)
        return values

    def _expr_Call(self, node: cst.Call, state: NullnessState) -> Value:
        func = node.func
        callee = self._resolve(func, state)
        if callee == "len" and len(node.args) == 1 and not node.args[0].star:
            value = self._eval(node.args[0].value, state)
            self._sink(node.args[0].value, value, "`len()`", node, state)
            return FRESH
        function_value = self._eval(func, state)
        if function_value.tracked:
            self._sink(func, function_value, "call", node, state)
        args = self._eval_call_parts(node, state)
        if matches(callee, (self.config.payload_class,)):
            self._record(
                SiteKind.PAYLOAD_CONSTRUCTION,
                node,
                state=state,
            )
            return Value(
                Nullness.NOT_NONE,
                connector_output=True,
                evidence=True,
                origin=f"`{self._code(node)}`",
                guard=f"constructed `{self.config.payload_class}(...)`",
            )
        if matches(callee, self.config.output_classes):
            self._record_output_construction(node, state)
            return FRESH
        if matches(callee, ("copy.copy", "copy.deepcopy", "dataclasses.replace", "copy", "deepcopy", "replace")):
            if args and args[0].sentinel:
                self._record(
                    SiteKind.SENTINEL_USE,
                    node,
                    sentinel_use=SentinelUseKind.COPIED,
                    operand=self._code(node.args[0].value),
                    state=state,
                )
            return FRESH
        if callee == "setattr" and args and args[0].sentinel:
            self._record_mutation(node, node.args[0].value, state)
        if callee is not None and self.index.returns_optional(callee, self.module_name):
            return Value(
                Nullness.MAYBE_NONE,
                connector_output=True,
                evidence=True,
                origin=f"`{self._code(func)}()`, declared `-> {self.config.payload_class} | None`",
            )
        return UNTRACKED

    def _expr_BinaryOperation(self, node: cst.BinaryOperation, state: NullnessState) -> Value:
        left = self._eval(node.left, state)
        right = self._eval(node.right, state)
        operator = self.module.code_for_node(node.operator).strip()
        self._sink(node.left, left, f"`{operator}`", node, state)
        self._sink(node.right, right, f"`{operator}`", node, state)
        if left.payload or right.payload:
            return FRESH
        return UNTRACKED

    def _expr_UnaryOperation(self, node: cst.UnaryOperation, state: NullnessState) -> Value:
        value = self._eval(node.expression, state)
        if not isinstance(node.operator, cst.Not):
            self._sink(
                node.expression, value, f"unary `{self.module.code_for_node(node.operator).strip()}`", node, state
            )
        return UNTRACKED

    def _quiet_eval(self, node: cst.BaseExpression, state: NullnessState) -> Value:
        """Evaluate for the value only: no sites, no effect on the state."""
        recording, self.recording = self.recording, False
        try:
            return self._eval(node, state.copy())
        finally:
            self.recording = recording

    @staticmethod
    def _become(state: NullnessState, other: NullnessState) -> None:
        """Make `state` (which callers hold) equal to `other`, in place."""
        state.values, state.path, state.path_reason, state.reachable = (
            other.values,
            other.path,
            other.path_reason,
            other.reachable,
        )

    def _expr_BooleanOperation(self, node: cst.BooleanOperation, state: NullnessState) -> Value:
        left = self._quiet_eval(node.left, state)
        left_true, left_false = self._narrow(node.left, state.copy(), "and/or")
        if isinstance(node.operator, cst.And):
            right = self._eval(node.right, left_true)
            self._become(state, self.join(left_false, left_true))
            if left.may_be_none or not left.tracked:
                return join_values(left, right)
            return right
        right = self._eval(node.right, left_false)
        self._become(state, self.join(left_true, left_false))
        truthy_left = dataclasses.replace(left, nullness=Nullness.NOT_NONE) if left.tracked else FRESH
        if right.nullness is Nullness.NOT_NONE:
            return dataclasses.replace(
                join_values(truthy_left, right),
                nullness=Nullness.NOT_NONE,
                guard=f"`or {self._code(node.right)}` default",
            )
        return join_values(truthy_left, right)

    def _expr_Comparison(self, node: cst.Comparison, state: NullnessState) -> Value:
        self._eval(node.left, state)
        for comparison in node.comparisons:
            right = self._eval(comparison.comparator, state)
            if isinstance(comparison.operator, (cst.In, cst.NotIn)):
                self._sink(comparison.comparator, right, "`in`", comparison.comparator, state)
        return FRESH

    def _expr_IfExp(self, node: cst.IfExp, state: NullnessState) -> Value:
        true_state, false_state = self._narrow(node.test, state.copy(), "conditional expression")
        body = self._eval(node.body, true_state)
        orelse = self._eval(node.orelse, false_state)
        self._become(state, self.join(true_state, false_state))
        return join_values(body, orelse)

    def _expr_NamedExpr(self, node: cst.NamedExpr, state: NullnessState) -> Value:
        value = self._eval(node.value, state)
        self._assign(node.target, value, state, node.value)
        return value

    def _expr_Lambda(self, node: cst.Lambda, state: NullnessState) -> Value:
        if self.recording:
            self.pending.append(
                (node, ScopeContext(f"{self.scope.qualname}.<lambda>", self.scope.class_optional_attributes))
            )
        return FRESH

    def _comprehension(
        self, node: cst.BaseComp | cst.DictComp, state: NullnessState, results: Sequence[cst.BaseExpression]
    ) -> Value:
        inner = state.copy()
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            iterable = self._eval(comp.iter, inner)
            self._sink(comp.iter, iterable, "iteration", comp.iter, inner)
            self._assign(comp.target, UNTRACKED, inner, None)
            for condition in comp.ifs:
                inner, _ = self._narrow(condition.test, inner, "comprehension condition")
            comp = comp.inner_for_in
        for result in results:
            self._eval(result, inner)
        return FRESH

    def _expr_ListComp(self, node: cst.ListComp, state: NullnessState) -> Value:
        return self._comprehension(node, state, [node.elt])

    _expr_SetComp = _expr_ListComp
    _expr_GeneratorExp = _expr_ListComp

    def _expr_DictComp(self, node: cst.DictComp, state: NullnessState) -> Value:
        return self._comprehension(node, state, [node.key, node.value])

    def _elements(self, node: cst.Tuple | cst.List | cst.Set, state: NullnessState) -> Value:
        for element in node.elements:
            value = self._eval(element.value, state)
            if isinstance(element, cst.StarredElement):
                self._sink(element.value, value, "`*` unpacking", element.value, state)
        return FRESH

    _expr_Tuple = _elements
    _expr_List = _elements
    _expr_Set = _elements

    def _expr_Dict(self, node: cst.Dict, state: NullnessState) -> Value:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self._eval(element.key, state)
                self._eval(element.value, state)
            else:
                value = self._eval(element.value, state)
                self._sink(element.value, value, "`**` unpacking", element.value, state)
        return FRESH

"""One intra-procedural flow analysis: nullness of reference expressions and
connector-path facts, walked statement by statement over a libcst module.

It tracks names and member-access chains (`kvo`, `out.kv_connector_output`,
`self.kv_connector_output`) the way type checkers narrow them: a narrowing
lasts until the expression or a prefix of it is assigned. Joins are "may":
a value that may be None on any incoming path may be None after the join.
Values it knows nothing about are untracked and never reported (precision
first). Its output is a list of `Site`s; it reports nothing itself.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from kvlint.annotations import AnnotationKind, classify_annotation_text
from kvlint.config import Config
from kvlint.names import ImportTable, matches
from kvlint.sites import DerefTarget, SentinelUseKind, Site, SiteKind, Span
from kvlint.tree_index import TreeIndex

CONNECTOR_PATH_MARKER = re.compile(r"#\s*kvlint:\s*connector-path\b")
MAX_LOOP_ITERATIONS = 4  # loops converge in two passes on real code; this bounds odd ones
MAX_FIXPOINT_DEPTH = 5  # deeper loop nests get a single pass from the widened head


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


def dotted_name(node: cst.BaseExpression) -> str | None:
    """Return `a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def ref_key(node: cst.BaseExpression) -> str | None:
    """Return the key of a reference expression (name, member chain, simple index)."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = ref_key(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            inner = index.value
            if isinstance(inner, (cst.Integer, cst.SimpleString)):
                text = inner.value
            elif isinstance(inner, cst.Name):
                text = inner.value
            else:
                return None
            base = ref_key(node.value)
            return None if base is None else f"{base}[{text}]"
    return None


def is_none_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None" and not node.lpar


def _is_true_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "True"
    return isinstance(node, cst.Integer) and node.value not in ("0", "0x0", "0o0", "0b0")


def _is_false_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "False"
    return isinstance(node, cst.Integer) and node.value == "0"


class FlowAnalysis:
    """Analyse every scope of one module and collect its sites."""

    def __init__(
        self,
        module: cst.Module,
        span_of: Callable[[cst.CSTNode], Span],
        imports: ImportTable,
        index: TreeIndex,
        config: Config,
        module_name: str,
        source_lines: Sequence[str],
        optional_attributes: frozenset[str] = frozenset(),
    ) -> None:
        self.module = module
        self.span_of = span_of
        self.imports = imports
        self.index = index
        self.config = config
        self.module_name = module_name
        self.source_lines = source_lines
        self.optional_attributes = optional_attributes  # `self.x` declared `KVConnectorOutput | None` in this file
        self.sites: dict[tuple[object, ...], Site] = {}
        self.recording = True
        self.loops: list[LoopFrame] = []
        self.fixpoint_depth = 0
        self.scope = ScopeContext("<module>")
        self.pending: list[tuple[cst.CSTNode, ScopeContext]] = []
        payload_name = config.payload_class.rpartition(".")[2]
        self.payload_spellings = (payload_name, *imports.aliases_of((config.payload_class,)))

    # ----------------------------------------------------------- entry points

    def run(self) -> list[Site]:
        """Analyse the module body and every nested scope; return the sites."""
        self.pending.append((self.module, ScopeContext("<module>")))
        while self.pending:
            node, scope = self.pending.pop(0)
            self._analyse_scope(node, scope)
        return sorted(self.sites.values(), key=lambda s: (s.span, s.kind.value, s.expression))

    def _analyse_scope(self, node: cst.CSTNode, scope: ScopeContext) -> None:
        self.scope = scope
        self.loops = []
        self.fixpoint_depth = 0
        self.recording = True
        state = NullnessState()
        if isinstance(node, cst.Module):
            self._block(node.body, state)
        elif isinstance(node, cst.ClassDef):
            self._block(self._suite(node.body), state)
        elif isinstance(node, cst.FunctionDef):
            self._enter_function(node, state)
            self._block(self._suite(node.body), state)
        elif isinstance(node, cst.Lambda):
            self._bind_parameters(node.params, state)
            self._eval(node.body, state)

    def _enter_function(self, node: cst.FunctionDef, state: NullnessState) -> None:
        self._bind_parameters(node.params, state)
        reason = ""
        if node.name.value in self.config.connector_functions or matches(
            f"{self.scope.qualname}", self.config.connector_functions
        ):
            reason = f"`{node.name.value}` is listed in connector-functions"
        elif self._has_connector_marker(node):
            reason = "marked `# kvlint: connector-path`"
        if reason:
            state.path = PathFact.ON
            state.path_reason = reason
            self._record(
                SiteKind.CONNECTOR_FUNCTION,
                node.name,
                on_connector_path=True,
                path_reason=reason,
                expression=f"def {node.name.value}",
            )

    def _has_connector_marker(self, node: cst.FunctionDef) -> bool:
        line = self.span_of(node).line
        if 0 < line <= len(self.source_lines) and CONNECTOR_PATH_MARKER.search(self.source_lines[line - 1]):
            return True
        body = node.body
        if isinstance(body, cst.IndentedBlock) and body.header.comment is not None:
            return bool(CONNECTOR_PATH_MARKER.search(body.header.comment.value))
        if isinstance(body, cst.SimpleStatementSuite) and body.trailing_whitespace.comment is not None:
            return bool(CONNECTOR_PATH_MARKER.search(body.trailing_whitespace.comment.value))
        return False

    def _bind_parameters(self, params: cst.Parameters, state: NullnessState) -> None:
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                every.append(extra)
        for param in every:
            name = param.name.value
            value = UNTRACKED
            if param.annotation is not None and param not in (params.star_arg, params.star_kwarg):
                kind = self._classify(param.annotation.annotation)
                if kind is AnnotationKind.OPTIONAL_PAYLOAD:
                    value = Value(
                        Nullness.MAYBE_NONE,
                        connector_output=True,
                        evidence=True,
                        origin=f"parameter `{name}`",
                    )
                    if param.default is not None and not is_none_literal(param.default):
                        value = dataclasses.replace(value, nullness=Nullness.MAYBE_NONE)
                elif kind is AnnotationKind.PAYLOAD:
                    value = Value(Nullness.NOT_NONE, connector_output=True, guard="annotated non-Optional")
            state.values[name] = value

    def _classify(self, annotation: cst.BaseExpression) -> AnnotationKind | None:
        text = self.module.code_for_node(annotation)
        if not any(name in text for name in self.payload_spellings):
            return None
        return classify_annotation_text(text, self.imports.resolve_dotted, (self.config.payload_class,))

    # ------------------------------------------------------------- recording

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

    # -------------------------------------------------------------- lookups

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

    # ------------------------------------------------------------ assignment

    def _bind(self, key: str, value: Value, state: NullnessState) -> None:
        prefix_dot, prefix_index = key + ".", key + "["
        for existing in [k for k in state.values if k.startswith(prefix_dot) or k.startswith(prefix_index)]:
            del state.values[existing]
        state.values[key] = value

    def _invalidate(self, key: str, state: NullnessState) -> None:
        self._bind(key, UNTRACKED, state)

    def _forget(self, name: str, state: NullnessState) -> None:
        """A `def`/`class` rebinds a name to something defined here: untrack it, but let
        it resolve to itself (a module defining `ModelRunnerOutput` then constructs it)."""
        for existing in [k for k in state.values if k == name or k.startswith((name + ".", name + "["))]:
            del state.values[existing]

    def _assign(
        self, target: cst.BaseExpression, value: Value, state: NullnessState, value_node: cst.CSTNode | None
    ) -> None:
        if isinstance(target, cst.Name):
            if (
                self.scope.qualname == "<module>"
                and target.value not in self.imports.bindings
                and matches(target.value, self.config.empty_sentinels)
            ):
                value = dataclasses.replace(self._sentinel_value(target.value), origin=f"`{target.value}`")
            elif value.sentinel and value_node is not None:
                self._record(
                    SiteKind.SENTINEL_USE,
                    target,
                    sentinel_use=SentinelUseKind.ALIASED,
                    expression=f"{target.value} = {self._code(value_node)}",
                    state=state,
                )
            self._bind(target.value, value, state)
        elif isinstance(target, cst.Attribute):
            receiver = self._eval(target.value, state)
            self._sink(target.value, receiver, f"attribute assignment `.{target.attr.value}`", target, state)
            if receiver.sentinel:
                self._record_mutation(target, target.value, state)
            if target.attr.value in self.config.optional_fields:
                self._record(
                    SiteKind.OPTIONAL_WRITE,
                    target,
                    may_be_none=value.nullness is not Nullness.NOT_NONE,
                    guard=value.guard,
                    origin=value.origin,
                    state=state,
                    connector_output_argument=self._code(value_node) if value_node is not None else "",
                )
            key = ref_key(target)
            if key is not None:
                if receiver.connector_output and target.attr.value in self.config.payload_optional_fields:
                    value = dataclasses.replace(value, payload=value.payload or value.nullness is not Nullness.UNKNOWN)
                self._bind(key, value, state)
        elif isinstance(target, cst.Subscript):
            receiver = self._eval(target.value, state)
            self._sink(target.value, receiver, "subscript assignment", target, state)
            self._eval_slices(target, state)
            key = ref_key(target)
            if key is not None:
                self._invalidate(key, state)
        elif isinstance(target, (cst.Tuple, cst.List)):
            if value_node is not None and isinstance(value_node, cst.BaseExpression):
                self._sink(value_node, value, "unpacking", value_node, state)
            for element in target.elements:
                inner = element.value
                self._assign(inner, UNTRACKED, state, None)
        elif isinstance(target, cst.StarredElement):
            self._assign(target.value, UNTRACKED, state, None)
        else:
            self._eval(target, state)

    def _record_mutation(self, target: cst.CSTNode, receiver: cst.BaseExpression, state: NullnessState) -> None:
        self._record(
            SiteKind.SENTINEL_USE,
            target,
            sentinel_use=SentinelUseKind.MUTATED,
            operand=self._code(receiver),
            state=state,
        )

    # ----------------------------------------------------------- statements

    @staticmethod
    def _suite(body: cst.BaseSuite) -> Sequence[cst.CSTNode]:
        if isinstance(body, cst.IndentedBlock):
            return body.body
        if isinstance(body, cst.SimpleStatementSuite):
            return body.body
        return ()

    def _block(self, statements: Sequence[cst.CSTNode], state: NullnessState) -> NullnessState:
        """Run statements in order; mutates and returns the state."""
        for statement in statements:
            if not state.reachable:
                break
            state = self._statement(statement, state)
        return state

    def _statement(self, node: cst.CSTNode, state: NullnessState) -> NullnessState:
        if isinstance(node, cst.SimpleStatementLine):
            return self._block(node.body, state)
        handler = getattr(self, f"_stmt_{type(node).__name__}", None)
        if handler is not None:
            return handler(node, state)
        if isinstance(node, cst.BaseExpression):
            self._eval(node, state)
        return state

    def _stmt_Expr(self, node: cst.Expr, state: NullnessState) -> NullnessState:
        self._eval(node.value, state)
        return state

    def _stmt_Assign(self, node: cst.Assign, state: NullnessState) -> NullnessState:
        value = self._eval(node.value, state)
        for target in node.targets:
            self._assign(target.target, value, state, node.value)
        return state

    def _stmt_AnnAssign(self, node: cst.AnnAssign, state: NullnessState) -> NullnessState:
        kind = self._classify(node.annotation.annotation)
        if node.value is None:
            if kind is AnnotationKind.OPTIONAL_PAYLOAD and isinstance(node.target, cst.Name):
                self._bind(
                    node.target.value,
                    Value(
                        Nullness.MAYBE_NONE,
                        connector_output=True,
                        evidence=True,
                        origin=f"`{node.target.value}` (declared Optional)",
                    ),
                    state,
                )
            return state
        value = self._eval(node.value, state)
        if kind is AnnotationKind.OPTIONAL_PAYLOAD:
            if value.nullness is Nullness.NONE or (value.nullness is not Nullness.UNKNOWN and not value.tracked):
                value = dataclasses.replace(
                    value,
                    connector_output=True,
                    evidence=True,
                    origin=value.origin or f"`{self._code(node.target)}` (declared Optional)",
                )
        elif kind is AnnotationKind.PAYLOAD and value.nullness is Nullness.UNKNOWN:
            value = Value(Nullness.NOT_NONE, connector_output=True, guard="annotated non-Optional")
        self._assign(node.target, value, state, node.value)
        return state

    def _stmt_AugAssign(self, node: cst.AugAssign, state: NullnessState) -> NullnessState:
        target_value = self._eval(node.target, state) if not isinstance(node.target, cst.Attribute) else None
        if isinstance(node.target, cst.Attribute):
            receiver = self._eval(node.target.value, state)
            self._sink(node.target.value, receiver, f"attribute access `.{node.target.attr.value}`", node.target, state)
            if receiver.sentinel:
                self._record_mutation(node.target, node.target.value, state)
            target_value = self._attribute_value(node.target, receiver, state)
        assert target_value is not None
        operator = self.module.code_for_node(node.operator).strip()
        self._sink(node.target, target_value, f"`{operator}`", node.target, state)
        right = self._eval(node.value, state)
        self._sink(node.value, right, f"`{operator}`", node.value, state)
        key = ref_key(node.target)
        if key is not None:
            kept = dataclasses.replace(target_value, nullness=Nullness.NOT_NONE) if target_value.tracked else UNTRACKED
            self._bind(key, kept, state)
        return state

    def _stmt_Del(self, node: cst.Del, state: NullnessState) -> NullnessState:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for element in targets:
            target = element.value if isinstance(element, cst.BaseElement) else element
            if isinstance(target, cst.Attribute):
                receiver = self._eval(target.value, state)
                self._sink(target.value, receiver, f"attribute deletion `.{target.attr.value}`", target, state)
                if receiver.sentinel:
                    self._record_mutation(target, target.value, state)
            elif isinstance(target, cst.Subscript):
                receiver = self._eval(target.value, state)
                self._sink(target.value, receiver, "subscript deletion", target, state)
            key = ref_key(target)
            if key is not None:
                self._invalidate(key, state)
        return state

    def _stmt_Return(self, node: cst.Return, state: NullnessState) -> NullnessState:
        if node.value is not None:
            value = self._eval(node.value, state)
            if value.sentinel:
                self._record(
                    SiteKind.SENTINEL_USE,
                    node,
                    sentinel_use=SentinelUseKind.RETURNED,
                    operand=self._code(node.value),
                    state=state,
                )
        return unreachable()

    def _stmt_Raise(self, node: cst.Raise, state: NullnessState) -> NullnessState:
        if node.exc is not None:
            self._eval(node.exc, state)
        if node.cause is not None:
            self._eval(node.cause.item, state)
        return unreachable()

    def _stmt_Assert(self, node: cst.Assert, state: NullnessState) -> NullnessState:
        if _is_false_literal(node.test):
            return unreachable()
        true_state, _ = self._narrow(node.test, state, "assert")
        if node.msg is not None:
            self._eval(node.msg, state.copy())
        return true_state

    def _stmt_Pass(self, node: cst.Pass, state: NullnessState) -> NullnessState:
        return state

    def _stmt_Break(self, node: cst.Break, state: NullnessState) -> NullnessState:
        if self.loops:
            self.loops[-1].breaks.append(state)
        return unreachable()

    def _stmt_Continue(self, node: cst.Continue, state: NullnessState) -> NullnessState:
        if self.loops:
            self.loops[-1].continues.append(state)
        return unreachable()

    def _stmt_Global(self, node: cst.Global, state: NullnessState) -> NullnessState:
        for item in node.names:
            self._invalidate(item.name.value, state)
        return state

    _stmt_Nonlocal = _stmt_Global

    def _stmt_Import(self, node: cst.Import, state: NullnessState) -> NullnessState:
        return state

    _stmt_ImportFrom = _stmt_Import

    def _stmt_If(self, node: cst.If, state: NullnessState) -> NullnessState:
        true_state, false_state = self._narrow(node.test, state, "if")
        after_body = self._block(self._suite(node.body), true_state)
        if node.orelse is None:
            after_else = false_state
        elif isinstance(node.orelse, cst.If):
            after_else = self._stmt_If(node.orelse, false_state)
        else:
            after_else = self._block(self._suite(node.orelse.body), false_state)
        return self.join(after_body, after_else)

    def _stmt_While(self, node: cst.While, state: NullnessState) -> NullnessState:
        def body(head: NullnessState) -> tuple[NullnessState, NullnessState]:
            true_state, false_state = self._narrow(node.test, head, "while")
            if _is_true_literal(node.test):
                false_state = unreachable()
            return self._block(self._suite(node.body), true_state), false_state

        return self._loop(state, body, node.orelse)

    def _stmt_For(self, node: cst.For, state: NullnessState) -> NullnessState:
        iterable = self._eval(node.iter, state)
        self._sink(node.iter, iterable, "iteration", node.iter, state)

        def body(head: NullnessState) -> tuple[NullnessState, NullnessState]:
            exhausted = head.copy()
            inner = head.copy()
            self._assign(node.target, UNTRACKED, inner, None)
            return self._block(self._suite(node.body), inner), exhausted

        return self._loop(state, body, node.orelse)

    def _loop(
        self,
        entry: NullnessState,
        body: Callable[[NullnessState], tuple[NullnessState, NullnessState]],
        orelse: cst.Else | None,
    ) -> NullnessState:
        """Run a loop to a fixpoint without recording, then once recording."""
        recording = self.recording
        head = entry
        if self.fixpoint_depth < MAX_FIXPOINT_DEPTH:
            self.recording = False
            self.fixpoint_depth += 1
            for _ in range(MAX_LOOP_ITERATIONS):
                frame = LoopFrame()
                self.loops.append(frame)
                end, _ = body(head.copy())
                self.loops.pop()
                new_head = self.join_all([entry, end, *frame.continues])
                if new_head == head:
                    break
                head = new_head
            self.fixpoint_depth -= 1
            self.recording = recording
        frame = LoopFrame()
        self.loops.append(frame)
        end, exit_state = body(head.copy())
        self.loops.pop()
        if orelse is not None:
            exit_state = self._block(self._suite(orelse.body), exit_state)
        return self.join_all([exit_state, *frame.breaks])

    def _stmt_Try(self, node: cst.Try | cst.TryStar, state: NullnessState) -> NullnessState:
        seen: list[NullnessState] = [state.copy()]
        current = state
        for statement in self._suite(node.body):
            if not current.reachable:
                break
            current = self._statement(statement, current)
            seen.append(current.copy())
        handler_entry = self.join_all(seen)
        outcomes: list[NullnessState] = []
        normal = current
        if node.orelse is not None:
            normal = self._block(self._suite(node.orelse.body), normal)
        outcomes.append(normal)
        for handler in node.handlers:
            handler_state = handler_entry.copy()
            if handler.type is not None:
                self._eval(handler.type, handler_state)
            if handler.name is not None:
                self._assign(handler.name.name, UNTRACKED, handler_state, None)
            outcomes.append(self._block(self._suite(handler.body), handler_state))
        after = self.join_all(outcomes)
        if node.finalbody is None:
            return after
        self._block(self._suite(node.finalbody.body), self.join(after, handler_entry))
        recording, self.recording = self.recording, False
        result = self._block(self._suite(node.finalbody.body), after) if after.reachable else after
        self.recording = recording
        return result

    _stmt_TryStar = _stmt_Try

    def _stmt_With(self, node: cst.With, state: NullnessState) -> NullnessState:
        for item in node.items:
            value = self._with_item_value(item.item, state)
            if item.asname is not None:
                self._assign(item.asname.name, value, state, None)
        return self._block(self._suite(node.body), state)

    def _with_item_value(self, expr: cst.BaseExpression, state: NullnessState) -> Value:
        if isinstance(expr, cst.Call):
            callee = self._resolve(expr.func, state)
            if matches(callee, self.config.connector_contexts):
                self._eval_call_parts(expr, state)
                name = callee.rpartition(".")[2] if callee else "?"
                reason = f"inside `with {name}(...)`"
                self._record(SiteKind.CONNECTOR_CONTEXT, expr, on_connector_path=True, path_reason=reason)
                state.path, state.path_reason = PathFact.ON, reason
                return Value(
                    Nullness.NOT_NONE,
                    connector_output=True,
                    evidence=True,
                    origin=f"`{self._code(expr)}`",
                    guard="connector context",
                )
            if matches(callee, self.config.optional_contexts):
                self._eval_call_parts(expr, state)
                return Value(Nullness.MAYBE_NONE, connector_output=True, evidence=True, origin=f"`{self._code(expr)}`")
        value = self._eval(expr, state)
        self._sink(expr, value, "`with`", expr, state)
        return UNTRACKED

    def _stmt_Match(self, node: cst.Match, state: NullnessState) -> NullnessState:
        self._eval(node.subject, state)
        subject = ref_key(node.subject)
        outcomes: list[NullnessState] = []
        irrefutable = False
        for case in node.cases:
            case_state = state.copy()
            if subject is not None and isinstance(case.pattern, cst.MatchClass):
                self._set_nullness(subject, Nullness.NOT_NONE, case_state, "class pattern in `match`")
            elif subject is not None and _is_none_pattern(case.pattern):
                self._set_nullness(subject, Nullness.NONE, case_state, "")
                if case.guard is None:  # later cases only see values that are not None
                    self._set_nullness(subject, Nullness.NOT_NONE, state, "`case None` handled earlier")
            for name in _pattern_names(case.pattern):
                self._invalidate(name, case_state)
            if case.guard is not None:
                case_state, _ = self._narrow(case.guard, case_state, "case guard")
            elif isinstance(case.pattern, cst.MatchAs) and case.pattern.pattern is None:
                irrefutable = True
            outcomes.append(self._block(self._suite(case.body), case_state))
        if not irrefutable:
            outcomes.append(state)
        return self.join_all(outcomes)

    def _stmt_FunctionDef(self, node: cst.FunctionDef, state: NullnessState) -> NullnessState:
        for decorator in node.decorators:
            self._eval(decorator.decorator, state)
        qualname = node.name.value if self.scope.qualname == "<module>" else f"{self.scope.qualname}.{node.name.value}"
        if self.recording:
            self.pending.append((node, ScopeContext(qualname, self.scope.class_optional_attributes)))
        self._forget(node.name.value, state)
        return state

    def _stmt_ClassDef(self, node: cst.ClassDef, state: NullnessState) -> NullnessState:
        qualname = node.name.value if self.scope.qualname == "<module>" else f"{self.scope.qualname}.{node.name.value}"
        if self.recording:
            self.pending.append((node, ScopeContext(qualname, self.optional_attributes)))
        self._forget(node.name.value, state)
        return state

    # ------------------------------------------------------------ narrowing

    def join(self, a: NullnessState, b: NullnessState) -> NullnessState:
        """Join the facts of two incoming paths."""
        if not a.reachable:
            return b.copy()
        if not b.reachable:
            return a.copy()
        values: dict[str, Value] = {}
        for key in a.values.keys() | b.values.keys():
            left = a.values.get(key) or self._default_for_key(key)
            right = b.values.get(key) or self._default_for_key(key)
            if left is None or right is None:
                # bound on one path only: its value there proves nothing about the other path
                present = right if left is None else left
                assert present is not None
                values[key] = dataclasses.replace(present, evidence=False) if present.evidence else present
            else:
                values[key] = join_values(left, right)
        reason_a, reason_b = a.connector_path_reason(), b.connector_path_reason()
        if reason_a and reason_b:
            path, reason = PathFact.ON, reason_a if reason_a == reason_b else min(reason_a, reason_b)
        elif a.path is PathFact.OFF and b.path is PathFact.OFF:
            path, reason = PathFact.OFF, ""
        else:
            path, reason = PathFact.UNKNOWN, ""
        return NullnessState(values, path, reason)

    def join_all(self, states: Sequence[NullnessState]) -> NullnessState:
        result = unreachable()
        for item in states:
            result = self.join(result, item)
        return result

    def _narrow(self, test: cst.BaseExpression, state: NullnessState, how: str) -> tuple[NullnessState, NullnessState]:
        """Evaluate a condition; return the states where it is true and false."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            true_state, false_state = self._narrow(test.expression, state, how)
            return false_state, true_state
        if isinstance(test, cst.BooleanOperation):
            left_true, left_false = self._narrow(test.left, state, how)
            if isinstance(test.operator, cst.And):
                right_true, right_false = self._narrow(test.right, left_true, how)
                return right_true, self.join(left_false, right_false)
            right_true, right_false = self._narrow(test.right, left_false, how)
            return self.join(left_true, right_true), right_false
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            narrowed = self._narrow_none_comparison(test, state)
            if narrowed is not None:
                return narrowed
        if isinstance(test, cst.Call):
            narrowed = self._narrow_call(test, state, how)
            if narrowed is not None:
                return narrowed
        if isinstance(test, cst.NamedExpr):
            self._eval(test, state)
            return self._narrow_truthy(test.target, state, how)
        key = ref_key(test)
        if key is not None:
            self._eval(test, state)
            return self._narrow_truthy(test, state, how)
        self._eval(test, state)
        return state, state.copy()

    def _narrow_truthy(
        self, node: cst.BaseExpression, state: NullnessState, how: str
    ) -> tuple[NullnessState, NullnessState]:
        key = ref_key(node)
        true_state, false_state = state, state.copy()
        if key is not None:
            self._set_nullness(key, Nullness.NOT_NONE, true_state, f"truthiness check (`{how}`)")
        return true_state, false_state

    def _narrow_none_comparison(
        self, test: cst.Comparison, state: NullnessState
    ) -> tuple[NullnessState, NullnessState] | None:
        comparison = test.comparisons[0]
        operator = comparison.operator
        if isinstance(operator, (cst.Is, cst.Equal)):
            positive = True
        elif isinstance(operator, (cst.IsNot, cst.NotEqual)):
            positive = False
        else:
            return None
        if is_none_literal(comparison.comparator):
            subject = test.left
        elif is_none_literal(test.left):
            subject = comparison.comparator
        else:
            return None
        self._eval(subject, state)
        if isinstance(subject, cst.NamedExpr):
            subject = subject.target
        key = ref_key(subject)
        is_none, not_none = state, state.copy()
        if key is not None:
            self._set_nullness(key, Nullness.NONE, is_none, "")
            self._set_nullness(key, Nullness.NOT_NONE, not_none, "`is not None` check")
        return (is_none, not_none) if positive else (not_none, is_none)

    def _narrow_call(
        self, test: cst.Call, state: NullnessState, how: str
    ) -> tuple[NullnessState, NullnessState] | None:
        callee = self._resolve(test.func, state)
        if matches(callee, self.config.connector_guards):
            self._eval(test, state)
            name = callee.rpartition(".")[2] if callee else "?"
            self._record(
                SiteKind.CONNECTOR_GUARD,
                test,
                state=state,
            )
            true_state, false_state = state, state.copy()
            true_state.path, true_state.path_reason = PathFact.ON, f"`{name}()` is true here"
            false_state.path, false_state.path_reason = PathFact.OFF, ""
            return true_state, false_state
        if callee in ("isinstance", "bool") and test.args and not test.args[0].star:
            self._eval(test, state)
            subject = test.args[0].value
            if isinstance(subject, cst.NamedExpr):
                subject = subject.target
            key = ref_key(subject)
            true_state, false_state = state, state.copy()
            if key is not None:
                self._set_nullness(key, Nullness.NOT_NONE, true_state, f"`{callee}()` check")
            return true_state, false_state
        return None

    def _set_nullness(self, key: str, nullness: Nullness, state: NullnessState, guard: str) -> None:
        value = self._lookup(key, state)
        if not value.tracked and value.nullness is Nullness.UNKNOWN:
            return
        state.values[key] = dataclasses.replace(
            value, nullness=nullness, guard=guard if nullness is Nullness.NOT_NONE else ""
        )

    # ----------------------------------------------------------- expressions

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


def _is_none_pattern(pattern: cst.MatchPattern) -> bool:
    return isinstance(pattern, cst.MatchSingleton) and is_none_literal(pattern.value)


def _pattern_names(pattern: cst.CSTNode) -> Iterator[str]:
    """Yield the names a match pattern binds."""
    stack = [pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.MatchAs) and node.name is not None:
            yield node.name.value
        elif isinstance(node, cst.MatchStar) and node.name is not None:
            yield node.name.value
        elif isinstance(node, cst.MatchMapping) and node.rest is not None:
            yield node.rest.value
        stack.extend(node.children)


def imports_from_cst(module: cst.Module, module_name: str, is_package: bool) -> ImportTable:
    """The import table of a module only libcst could parse (syntax newer than this Python)."""
    import ast

    statements: list[ast.stmt] = []
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            try:
                statements.extend(ast.parse(cst.Module(body=[cst.SimpleStatementLine(body=[node])]).code).body)
            except (SyntaxError, ValueError):
                pass
        elif not isinstance(node, cst.BaseExpression):
            stack.extend(node.children)
    return ImportTable.from_ast(ast.Module(body=statements, type_ignores=[]), module_name, is_package)

"""One intra-procedural flow analysis per scope: nullness of reference expressions and
connector-path facts, walked statement by statement over a libcst module."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

import libcst as cst

from kvlint.annotations import AnnotationKind, classify_annotation_text
from kvlint.config import Config
from kvlint.flow.expressions import Expressions
from kvlint.flow.narrowing import Narrowing
from kvlint.flow.recording import Recording
from kvlint.flow.state import (
    UNTRACKED,
    LoopFrame,
    Nullness,
    NullnessState,
    PathFact,
    ScopeContext,
    Value,
)
from kvlint.flow.statements import Statements
from kvlint.flow.syntax import (
    is_none_literal,
)
from kvlint.names import ImportTable, matches
from kvlint.sites import Site, SiteKind, Span
from kvlint.tree_index import TreeIndex

CONNECTOR_PATH_MARKER = re.compile(r"#\s*kvlint:\s*connector-path\b")


class FlowAnalysis(Statements, Expressions, Narrowing, Recording):
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

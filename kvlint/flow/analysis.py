"""One intra-procedural flow analysis per scope: nullness of reference expressions and
connector-path facts, walked statement by statement over a libcst module."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence

import libcst as cst

from kvlint.annotations import AnnotationKind, classify_annotation_text
from kvlint.config import Config
from kvlint.declarations import Declaration, FunctionDecl, TypeRef
from kvlint.flow.expressions import COPY_FUNCTIONS, Expressions
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
from kvlint.flow.syntax import dotted_name
from kvlint.names import ImportTable, matches
from kvlint.sites import Site, SiteKind, Span
from kvlint.tree_index import TreeIndex

CONNECTOR_PATH_MARKER = re.compile(r"#\s*kvlint:\s*connector-path\b(?:\s*\[(?P<invariants>[\w\s,]*)\])?")


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
        own_declarations: Sequence[Declaration] = (),
    ) -> None:
        self.module = module
        self.span_of = span_of
        self.imports = imports
        self.index = index
        self.config = config
        self.module_name = module_name
        self.source_lines = source_lines
        # this file's own functions: what they are never depends on another file of the same module name
        self.own_functions = {d.qualname: d for d in own_declarations if isinstance(d, FunctionDecl)}
        self.sites: dict[tuple[object, ...], Site] = {}
        self.recording = True
        self.loops: list[LoopFrame] = []
        self.fixpoint_depth = 0
        self.scope = ScopeContext("<module>")
        self.pending: list[tuple[cst.CSTNode, ScopeContext]] = []
        self.annotation_types: dict[str, TypeRef | None] = {}  # annotation text -> what it declares
        self.declared_defaults: dict[str, Value] = {}  # reference keys whose default a declaration gave
        self.declared_names: dict[str, Value] = {}  # local names and parameters with a declared type
        self.local_definitions: set[str] = set()  # names a function binds by import, `def` or `class`
        self.shielded = ""  # inside `try` whose handlers catch AttributeError (or a base): the handler it names
        self.attached_outputs: set[tuple[object, ...]] = set()  # outputs given their connector output later
        self.names_within: dict[int, frozenset[str]] = {}  # by id() of a node of `module`, which keeps it alive
        self.payload_fields: dict[str, tuple[str, ...]] = {}  # by invariant: its payload's fields the tree declares
        self.invariants = config.invariants
        self.invariant_names = tuple(invariant.name for invariant in self.invariants.invariants)
        payload_names = tuple(name.rpartition(".")[2] for name in config.payload_classes)
        self.payload_spellings = (*payload_names, *imports.aliases_of(config.payload_classes))

    # ----------------------------------------------------------- entry points

    def run(self) -> list[Site]:
        """Analyse the module body and every nested scope; return the sites."""
        self.pending.append((self.module, ScopeContext("<module>")))
        while self.pending:
            node, scope = self.pending.pop(0)
            self._analyse_scope(node, scope)
        for key in self.attached_outputs & self.sites.keys():
            self.sites[key] = dataclasses.replace(
                self.sites[key], carries_connector_output=True, connector_output_argument="(assigned after it)"
            )
        return sorted(self.sites.values(), key=lambda s: (s.span, s.kind.value, s.expression))

    def _analyse_scope(self, node: cst.CSTNode, scope: ScopeContext) -> None:
        self.scope = scope
        self.loops = []
        self.fixpoint_depth = 0
        self.recording = True
        self.declared_defaults = {}
        self.declared_names = {}
        self.local_definitions = set()
        self.shielded = ""
        state = NullnessState(dict(scope.captured))
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
        if self.scope.class_name and node.params.params and not any(
            self._code(d.decorator) in ("staticmethod", "classmethod") for d in node.decorators
        ):
            receiver = node.params.params[0].name.value  # `self`: an instance of the enclosing class
            # in the payload class's own methods, `self` is a connector output (its payload sets may be None)
            payload = self._payload_invariant(self.scope.class_name)
            state.values[receiver] = Value(
                Nullness.NOT_NONE, cls=self.scope.class_name, connector_output=bool(payload), invariant=payload
            )
        self.scope = dataclasses.replace(self.scope, producer=self._is_producer(node))
        for invariant, reason in self._connector_function_reasons(node).items():
            state.set_path(invariant, PathFact.ON, reason)
            self._record(
                SiteKind.CONNECTOR_FUNCTION,
                node.name,
                on_connector_path=True,
                path_reason=reason,
                expression=f"def {node.name.value}",
                invariant=invariant,
            )

    def _connector_function_reasons(self, node: cst.FunctionDef) -> dict[str, str]:
        """The invariants whose connector is active throughout the function, and why."""
        reasons: dict[str, str] = {}
        name = node.name.value
        for invariant in self.invariants.invariants:
            if name in invariant.connector_functions or matches(self.scope.qualname, invariant.connector_functions):
                reasons[invariant.name] = f"`{name}` is listed in connector-functions"
        marked = self._connector_marker(node)
        if marked is not None:
            named = {name.lower() for name in marked}
            for invariant in self.invariant_names if marked else self.invariant_names[:1]:  # bare: the first (`kv`)
                if not marked or invariant.lower() in named:
                    reasons.setdefault(invariant, "marked `# kvlint: connector-path`")
        for invariant in self.index.connector_callees.get(f".{name}" if self.scope.class_name else name, ()):
            reasons.setdefault(invariant, f"every call of `{name}` in the tree is on a connector path")
        return reasons

    def _connector_marker(self, node: cst.FunctionDef) -> tuple[str, ...] | None:
        """The invariants a `# kvlint: connector-path` comment on the `def` line names (`connector-path[ec]`),
        () for a bare marker; None when there is none."""
        comments = []
        line = self.span_of(node).line
        if 0 < line <= len(self.source_lines):
            comments.append(self.source_lines[line - 1])
        body = node.body
        if isinstance(body, cst.IndentedBlock) and body.header.comment is not None:
            comments.append(body.header.comment.value)
        if isinstance(body, cst.SimpleStatementSuite) and body.trailing_whitespace.comment is not None:
            comments.append(body.trailing_whitespace.comment.value)
        for comment in comments:
            found = CONNECTOR_PATH_MARKER.search(comment)
            if found is not None:
                named = found.group("invariants") or ""
                return tuple(name.strip() for name in named.split(",") if name.strip())
        return None

    def _bind_parameters(self, params: cst.Parameters, state: NullnessState) -> None:
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                every.append(extra)
        for param in every:
            name = param.name.value
            value = UNTRACKED
            if param.annotation is not None and param not in (params.star_arg, params.star_kwarg):
                self._declare(name, param.annotation.annotation)
                declared = self._annotation_value(param.annotation.annotation, f"parameter `{name}`")
                if declared is not None:
                    # a parameter is not a KV source a producer must hand on (KVC006 is about what it reads)
                    value = dataclasses.replace(declared, kv_source=False)
                    if value.connector_output and value.nullness is Nullness.NOT_NONE:
                        value = dataclasses.replace(value, guard="annotated non-Optional")
            state.values[name] = value

    def _is_producer(self, node: cst.FunctionDef) -> bool:
        """Does the function return an output: declared so, or returning a construction, the sentinel or a copy?"""
        if node.returns is not None and self._names_output_class(node.returns.annotation):
            return True  # `-> ModelRunnerOutput | AsyncOutput | None` too: any member that is an output
        qualname = f"{self.module_name}.{self.scope.qualname}" if self.module_name else self.scope.qualname
        declared = self.own_functions.get(qualname)
        if declared is not None:
            return declared.returns_output  # the declaration index looked at its returns already
        stack: list[cst.CSTNode] = [node.body]
        while stack:
            current = stack.pop()
            if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            if isinstance(current, cst.Return) and current.value is not None and self._returns_output(current.value):
                return True
            if isinstance(current, cst.Call) and self._returns_output(current):
                return True  # it builds an output (to return it later, or a wrapper of it)
            stack.extend(current.children)
        return False

    def _names_output_class(self, annotation: cst.BaseExpression) -> bool:
        stack: list[cst.CSTNode] = [annotation]
        while stack:
            current = stack.pop()
            spelled = dotted_name(current) if isinstance(current, (cst.Name, cst.Attribute)) else None
            if spelled is not None and matches(self._resolve_type_name(spelled), self.config.output_classes):
                return True
            if isinstance(current, cst.SimpleString):
                text = current.evaluated_value
                outputs = [name.rpartition(".")[2] for name in self.config.output_classes]
                if isinstance(text, str) and any(name in text for name in outputs):
                    return True
            stack.extend(current.children)
        return False

    def _returns_output(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Call):
            callee = self.imports.resolve_dotted(dotted_name(value.func) or "")
            if matches(callee, self.config.output_classes):
                return True
            if matches(callee, COPY_FUNCTIONS) and value.args:
                return self._returns_output(value.args[0].value)
            return False
        spelled = dotted_name(value)
        return spelled is not None and matches(self.imports.resolve_dotted(spelled), self.config.empty_sentinels)

    def _classify(self, annotation: cst.BaseExpression) -> AnnotationKind | None:
        text = self.module.code_for_node(annotation)
        if not any(name in text for name in self.payload_spellings):
            return None
        return classify_annotation_text(text, self.imports.resolve_dotted, self.config.payload_classes)

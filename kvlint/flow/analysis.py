"""One intra-procedural flow analysis per scope: nullness of reference expressions and
connector-path facts, walked statement by statement over an `ast` module."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from kvlint.config import Config
from kvlint.binding.declarations import Declaration
from kvlint.flow.context import FlowContext
from kvlint.flow.expressions import COPY_FUNCTIONS, Expressions
from kvlint.flow.narrowing import Narrowing
from kvlint.flow.recording import ATTACHING_SITES, Recorder
from kvlint.flow.state import (
    evolve,
    UNTRACKED,
    Nullness,
    NullnessState,
    PathFact,
    ScopeContext,
    Value,
)
from kvlint.flow.statements import Statements
from kvlint.flow.source import SourceText
from kvlint.flow.syntax import FUNCTIONS, SCOPES, dotted_name, parameters
from kvlint.binding.markers import marker_directives
from kvlint.binding.names import ImportTable, matches
from kvlint.sites import Site, SiteKind, Span
from kvlint.binding.tree_index import TreeIndex


class FlowAnalysis:
    """Analyse every scope of one module and collect its sites: the driver, which starts each scope and
    hands its statements to the parts (`Statements`, `Expressions`, `Narrowing`, `Recorder`), which share
    a `FlowContext`."""

    def __init__(
        self,
        source: SourceText,
        imports: ImportTable,
        index: TreeIndex,
        config: Config,
        module_name: str,
        own_declarations: Sequence[Declaration] = (),
        kinds: frozenset[SiteKind] | None = None,
        maybe_none_kinds: frozenset[SiteKind] = frozenset(),
    ) -> None:
        """`kinds`: the kinds of site to record (None: every kind); of those, `maybe_none_kinds` only where the
        value may be None (`Recorder.keeps`)."""
        self.context = context = FlowContext(
            source, imports, index, config, module_name, own_declarations, kinds, maybe_none_kinds
        )
        # the `# kvlint: connector-path[...]` markers that name what is no invariant here: where -> the marker,
        # those names, the marked function
        self.unknown_markers: dict[Span, tuple[str, tuple[str, ...], str]] = {}
        self.statements = Statements(context)
        self.expressions = Expressions(context)
        self.narrowing = Narrowing(context)
        self.recorder = Recorder(context)
        self._connect()

    def _connect(self) -> None:
        """Which of the other parts each part calls: set up here, and only here."""
        statements, expressions, narrowing, recorder = self.statements, self.expressions, self.narrowing, self.recorder
        statements.expressions, statements.narrowing, statements.recorder = expressions, narrowing, recorder
        expressions.statements, expressions.narrowing, expressions.recorder = statements, narrowing, recorder
        narrowing.statements, narrowing.expressions, narrowing.recorder = statements, expressions, recorder
        recorder.statements, recorder.expressions = statements, expressions

    def _disconnect(self) -> None:
        """Undo `_connect` once the module is analysed: the parts refer to one another, a cycle that only the
        garbage collector would free, and kvlint runs it rarely (`running.collector`)."""
        statements, expressions, narrowing, recorder = self.statements, self.expressions, self.narrowing, self.recorder
        del statements.expressions, statements.narrowing, statements.recorder
        del expressions.statements, expressions.narrowing, expressions.recorder
        del narrowing.statements, narrowing.expressions, narrowing.recorder
        del recorder.statements, recorder.expressions

    # ----------------------------------------------------------- entry points

    def run(self, batches: Iterable[ast.Module]) -> list[Site]:
        """Analyse the module, whose top-level statements are the bodies of `batches` in order, and every scope
        nested in them; return the sites. Once: the parts are disconnected after it."""
        try:
            return self._run(batches)
        finally:
            self._disconnect()

    def _run(self, batches: Iterable[ast.Module]) -> list[Site]:
        """A batch at a time, so that only one batch's tree need be alive: the module's own scope goes on from
        one batch to the next as one scope (its state, its declarations), and a batch's nested scopes are
        analysed before the next batch is read. In what it records this is the order of one module: a scope
        reads only what it and its enclosing scopes did (`FlowContext` keeps the rest by scope or in sets)."""
        context = self.context
        module_scope = ScopeContext("<module>")
        state = NullnessState(dict(module_scope.captured))
        declared: tuple[dict[str, Value], dict[str, Value], set[str]] | None = None
        for batch in batches:
            self._start_scope(module_scope)
            if declared is not None:
                context.declared_defaults, context.declared_names, context.local_definitions = declared
            state = self.statements.block(batch.body, state)  # an unreachable state ends the module here, too
            declared = context.declared_defaults, context.declared_names, context.local_definitions
            while context.pending:
                node, scope = context.pending.pop(0)
                self._analyse_scope(node, scope)
            self.expressions.forget_nodes()
            del batch  # not alive while the next batch is parsed
        for key in self.context.attached_outputs & self.context.sites.keys():
            self.context.sites[key] = evolve(
                self.context.sites[key], carries_connector_output=True, connector_output_argument="(assigned after it)"
            )
        if any(site.kind in ATTACHING_SITES for site in self.context.sites.values()):
            self._forget_demands(self._fieldless_invariants())
        return sorted(self.context.sites.values(), key=lambda s: (s.span, s.kind.value, s.expression))

    def _fieldless_invariants(self) -> frozenset[str]:
        """The invariants whose output class, as this module resolves it, declares no such field (vLLM 0.10.0's
        `ModelRunnerOutput` has no `kv_connector_output`): nothing here can demand one. The output class is
        what the module imports or defines, or what the module it imports the sentinel from defines."""
        context = self.context
        fieldless = set()
        for invariant in context.invariants.invariants:
            names = set()
            for target in context.imports.bindings.values():
                if matches(target, invariant.output_classes):
                    names.add(target)
                elif matches(target, invariant.empty_sentinels):
                    names.update(f"{target.rpartition('.')[0]}.{output.rpartition('.')[2]}"
                                 for output in invariant.output_classes)
            names.update(f"{context.module_name}.{output.rpartition('.')[2]}" for output in invariant.output_classes)
            declared = [context.index.class_named(name, context.module_name, context.reach) for name in sorted(names)]
            found = {decl.qualname: decl for decl in declared if decl is not None}
            if found and all(
                context.index.declares_attribute(qualname, invariant.field_name) is False for qualname in found
            ):
                fieldless.add(invariant.name)
        return frozenset(fieldless)

    def _forget_demands(self, fieldless: frozenset[str]) -> None:
        """No return of the sentinel and no construction is on those invariants' connector paths, and no return
        drops what their output class cannot carry. A construction or a sentinel whose own class is in sight
        goes by that class (a module may define its own `ModelRunnerOutput` beside vLLM's); the rest by the
        module's (`fieldless`)."""
        for key, site in list(self.context.sites.items()):
            own = self._own_class_lacks_field(site) if site.invariant else None
            if not (site.invariant in fieldless if own is None else own):
                continue
            if site.kind is SiteKind.KV_DROPPED:
                del self.context.sites[key]
            elif site.kind in (SiteKind.SENTINEL_USE, SiteKind.OUTPUT_CONSTRUCTION) and site.on_connector_path:
                self.context.sites[key] = evolve(site, on_connector_path=False, path_reason="")

    def _own_class_lacks_field(self, site: Site) -> bool | None:
        """Whether the output class a construction builds, or the one a sentinel's module defines, declares no
        field of the site's invariant; None when the site names no class in sight."""
        context = self.context
        invariant = context.invariants.by_name[site.invariant]
        if site.kind is SiteKind.OUTPUT_CONSTRUCTION:
            names = [name.partition(": ")[2] for name in site.resolved if name.startswith("output class: ")]
        elif site.kind is SiteKind.SENTINEL_USE:
            names = [f"{name.partition(': ')[2].rpartition('.')[0]}.{output.rpartition('.')[2]}"
                     for name in site.resolved if name.startswith("sentinel: ") for output in invariant.output_classes]
        else:
            return None
        declared = [context.index.class_named(name, context.module_name, context.reach) for name in names]
        verdicts = {context.index.declares_attribute(decl.qualname, invariant.field_name)
                    for decl in declared if decl is not None}
        return None if not verdicts or None in verdicts else verdicts == {False}

    def _start_scope(self, scope: ScopeContext) -> None:
        context = self.context
        context.scope = scope
        context.loops = []
        context.fixpoint_depth = 0
        context.recording = True
        context.declared_defaults = {}
        context.declared_names = {}
        context.local_definitions = set()
        context.shielded = ""

    def _analyse_scope(self, node: ast.AST, scope: ScopeContext) -> None:
        self._start_scope(scope)
        state = NullnessState(dict(scope.captured))
        if isinstance(node, ast.ClassDef):
            self.statements.block(node.body, state)
        elif isinstance(node, FUNCTIONS):
            self._enter_function(node, state)
            self.statements.block(node.body, state)
        elif isinstance(node, ast.Lambda):
            self._bind_parameters(node.args, state)
            self.expressions.eval(node.body, state)

    def _enter_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, state: NullnessState) -> None:
        self._bind_parameters(node.args, state)
        positional = [*node.args.posonlyargs, *node.args.args]
        if self.context.scope.class_name and positional and not any(
            self.context.source.code(decorator) in ("staticmethod", "classmethod") for decorator in node.decorator_list
        ):
            receiver = positional[0].arg  # `self`: an instance of the enclosing class
            # in the payload class's own methods, `self` is a connector output (its payload sets may be None)
            payload = self.expressions.payload_invariant(self.context.scope.class_name)
            state.values[receiver] = Value(
                Nullness.NOT_NONE, cls=self.context.scope.class_name, connector_output=bool(payload), invariant=payload
            )
        self.context.scope = evolve(self.context.scope, producer=self._is_producer(node))
        for invariant, reason in self._connector_function_reasons(node).items():
            state.set_path(invariant, PathFact.ON, reason)
            self.recorder.record(
                SiteKind.CONNECTOR_FUNCTION,
                self.context.source.name_of(node),
                on_connector_path=True,
                path_reason=reason,
                expression=f"def {node.name}",
                invariant=invariant,
            )

    def _connector_function_reasons(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, str]:
        """The invariants whose connector is active throughout the function, and why."""
        context = self.context
        reasons: dict[str, str] = {}
        name = node.name
        # a configured name is the function's qualified name (`module.Class.method`) or a dotted tail of it
        qualname = f"{context.module_name}.{context.scope.qualname}" if context.module_name else context.scope.qualname
        for invariant in context.invariants.invariants:
            if name in invariant.connector_functions or matches(qualname, invariant.connector_functions):
                reasons[invariant.name] = f"`{name}` is listed in connector-functions"
        marked = self._connector_marker(node)
        if marked is not None:
            named = {name.lower() for name in marked}
            names = context.invariant_names
            for invariant in names if marked else names[:1]:  # bare: the first (`kv`)
                if not marked or invariant.lower() in named:
                    reasons.setdefault(invariant, "marked `# kvlint: connector-path`")
        for invariant in context.index.connector_callees.get(f".{name}" if context.scope.class_name else name, ()):
            found = context.invariants.by_name.get(invariant)
            if found is not None and matches(context.scope.qualname, found.attaching_helpers):
                continue  # it attaches what its caller gives it: whether there is one is the caller's to say
            reasons.setdefault(invariant, f"every call of `{name}` in the tree is on a connector path")
        return reasons

    def _connector_marker(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...] | None:
        """The invariants a `# kvlint: connector-path` comment on the `def`'s header names (`connector-path[ec]`),
        () for a bare marker; None when there is none."""
        for line, column, comment in self.context.source.header_comments(node):
            for start, found in marker_directives(comment):  # a comment that quotes the marker in prose is none
                named = tuple(name.strip() for name in (found.group("invariants") or "").split(",") if name.strip())
                known = {invariant.lower() for invariant in self.context.invariant_names}
                unknown = tuple(name for name in named if name.lower() not in known)
                if unknown:  # KVC101: a misspelt name would leave the function off the path it was marked for
                    file_line = self.context.source.line_map[line - 1]
                    where = Span(file_line, column + start, file_line, column + start + found.end())
                    self.unknown_markers[where] = (found.group(0), unknown, self.context.scope.qualname)
                return named
        return None

    def _bind_parameters(self, params: ast.arguments, state: NullnessState) -> None:
        for param in parameters(params):
            name = param.name
            value = UNTRACKED
            if param.annotation is not None and not param.star:
                self.statements.declare(name, param.annotation)
                declared = self.expressions.annotation_value(param.annotation, f"parameter `{name}`")
                if declared is not None:
                    # a parameter is not a KV source a producer must hand on (KVC006 is about what it reads)
                    value = evolve(declared, kv_source=False)
                    if value.connector_output and value.nullness is Nullness.NOT_NONE:
                        value = evolve(value, guard="annotated non-Optional")
            state.values[name] = value

    def _is_producer(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Does the function return an output: declared so, or returning a construction, the sentinel or a copy?"""
        if node.returns is not None and self._names_output_class(node.returns):
            return True  # `-> ModelRunnerOutput | AsyncOutput | None` too: any member that is an output
        context = self.context
        qualname = f"{context.module_name}.{context.scope.qualname}" if context.module_name else context.scope.qualname
        declared = context.own_functions.get(qualname)
        if declared is not None:
            return declared.returns_output  # the declaration index looked at its returns already
        stack: list[ast.AST] = list(node.body)
        while stack:
            current = stack.pop()
            if isinstance(current, SCOPES):
                continue
            if isinstance(current, ast.Return) and current.value is not None and self._returns_output(current.value):
                return True
            if isinstance(current, ast.Call) and self._returns_output(current):
                return True  # it builds an output (to return it later, or a wrapper of it)
            stack.extend(ast.iter_child_nodes(current))
        return False

    def _names_output_class(self, annotation: ast.expr) -> bool:
        output_classes = self.context.config.output_classes
        stack: list[ast.AST] = [annotation]
        while stack:
            current = stack.pop()
            spelled = dotted_name(current) if isinstance(current, (ast.Name, ast.Attribute)) else None
            if spelled is not None and matches(self.expressions.resolve_type_name(spelled), output_classes):
                return True
            if isinstance(current, ast.Constant) and isinstance(current.value, str):
                outputs = [name.rpartition(".")[2] for name in output_classes]
                if any(name in current.value for name in outputs):
                    return True
            if isinstance(current, ast.Attribute):  # `outputs.ModelRunnerOutput` names `ModelRunnerOutput` too
                stack.append(ast.Name(id=current.attr, ctx=ast.Load()))
            stack.extend(ast.iter_child_nodes(current))
        return False

    def _returns_output(self, value: ast.expr) -> bool:
        context = self.context
        if isinstance(value, ast.Call):
            callee = context.imports.resolve_dotted(dotted_name(value.func) or "")
            if matches(callee, context.config.output_classes):
                return True
            if matches(callee, COPY_FUNCTIONS) and value.args:
                first = value.args[0]
                return not isinstance(first, ast.Starred) and self._returns_output(first)
            return False
        spelled = dotted_name(value)
        return spelled is not None and matches(context.imports.resolve_dotted(spelled), context.config.empty_sentinels)

"""Evaluating expressions to abstract values, recording the sinks inside them."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kvlint.flow.context import FlowContext
from kvlint.flow.recording import site_invariant
from kvlint.flow.state import (
    evolve,
    FRESH,
    NONE,
    UNTRACKED,
    Nullness,
    NullnessState,
    ScopeContext,
    Value,
    join_values,
)
from kvlint.flow.syntax import (
    Argument,
    call_arguments,
    dotted_name,
    operator_text,
    ref_key,
)
from kvlint.binding.declarations import ClassDecl, FunctionDecl, TypeRef, type_of_annotation
from kvlint.binding.names import matches
from kvlint.invariants import FIELDS_EVERY_RELEASE_HAS
from kvlint.sites import SentinelUseKind, SiteKind

if TYPE_CHECKING:  # the parts call one another: `FlowAnalysis` sets up which part calls which
    from kvlint.flow.narrowing import Narrowing
    from kvlint.flow.recording import Recorder
    from kvlint.flow.statements import Statements

_LAST_PART = re.compile(r"[.\[]")  # what ends a reference key's parts: `a.b[0].c` ends in `c`
UNTYPED = frozenset({"typing.Any", "typing_extensions.Any", "Any", "object", "builtins.object"})
COPY_FUNCTIONS = ("copy.copy", "copy.deepcopy", "dataclasses.replace", "copy", "deepcopy", "replace")
# Callees that iterate their arguments: a payload set that is None there raises TypeError (KVC005).
ITERATING_BUILTINS = frozenset({
    "set", "frozenset", "list", "tuple", "sorted", "len", "any", "all", "sum", "min", "max", "iter",
    "enumerate", "zip", "reversed", "dict",
})
ITERATING_FUNCTIONS = ("itertools.chain", "itertools.chain.from_iterable", "heapq.merge")
ITERATING_METHODS = frozenset({
    "join", "update", "union", "intersection", "difference", "symmetric_difference", "issubset", "issuperset",
    "isdisjoint", "intersection_update", "difference_update", "symmetric_difference_update", "extend",
})
# Methods that change a container in place: on a member of the shared sentinel they are KVC004.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "update", "add", "discard", "setdefault", "popitem",
    "sort", "reverse", "__setitem__", "__delitem__", "difference_update", "intersection_update",
    "symmetric_difference_update",
})


class Expressions:
    """Expression evaluation: an expression's abstract value, and the sites inside it; what declarations say."""

    statements: Statements
    narrowing: Narrowing
    recorder: Recorder

    def __init__(self, context: FlowContext) -> None:
        self.context = context
        self.names_within: dict[int, frozenset[str]] = {}  # by id() of a node of the batch being analysed
        self.payload_fields_by_invariant: dict[str, tuple[str, ...]] = {}  # its payload's fields the tree declares
        self.emptiness_fields_by_invariant: dict[str, tuple[str, ...]] = {}  # what an empty payload has falsy
        self.payload_class_decls: dict[str, ClassDecl | None] = {}  # configured name -> the class this module means
        self.awaited: ast.expr | None = None  # the call an enclosing `await` awaits

    def default_for_key(self, key: str) -> Value | None:
        """The value a key has before any assignment or narrowing in this scope."""
        if "." not in key and "[" not in key:
            return self._global_value(key)
        declared = self.context.declared_defaults.get(key)
        if declared is not None:
            return declared
        last = _LAST_PART.split(key)[-1]
        invariant = self.context.invariants.of_field(last)
        if invariant:
            return self.field_source(f"`{key}`", invariant)
        invariant = self.context.invariants.of_payload_field(last)
        if invariant:
            return Value(Nullness.MAYBE_NONE, payload=True, origin=f"`{key}`", invariant=invariant)
        return None

    @staticmethod
    def field_source(origin: str, invariant: str) -> Value:
        """A read of a connector-output field whose declaration is not visible: by name, maybe None."""
        return Value(
            Nullness.MAYBE_NONE, connector_output=True, evidence=True, origin=origin, kv_source=True,
            invariant=invariant,
        )

    def lookup(self, key: str, state: NullnessState) -> Value:
        value = state.values.get(key)
        if value is not None:
            return value
        return self.default_for_key(key) or UNTRACKED

    def resolve(self, node: ast.expr, state: NullnessState) -> str | None:
        """Resolve a callee/name through imports unless the root is a local."""
        spelled = dotted_name(node)
        if spelled is None:
            return None
        root = spelled.partition(".")[0]
        if root in state.values and not state.values[root].sentinel:
            return spelled if "." in spelled else None
        return self.context.imports.resolve_dotted(spelled)

    def qualified_callee(self, callee: str | None) -> str:
        """A resolved callee's qualified name: through re-exports, and `self.method` through the enclosing
        class's MRO to the class that defines it ("" when no declaration is found for a method)."""
        if not callee:
            return ""
        receiver, _, method = callee.rpartition(".")
        if receiver in ("self", "cls"):
            scope_class = self.context.scope.class_name
            decl = self.context.index.method(scope_class, method) if scope_class else None
            return decl.qualname if decl is not None else ""
        return self.context.index.canonical(callee)

    def sentinel_value(self, name: str, resolved: str = "") -> Value:
        """The sentinel spelled `name`; `resolved`, the sentinel a class attribute of that name holds."""
        # a spelling that names no invariant's sentinel: every invariant's when they all share their
        # sentinels (vLLM's two do), else none (silence rather than a guess)
        sharing = self.context.invariants.with_sentinel(resolved or self.context.imports.resolve_dotted(name))
        return Value(Nullness.NOT_NONE, sentinel=True, origin=f"`{name}`",
                     sentinel_of=sharing or self.context.invariants.shared_sentinel)

    # ------------------------------------------------------- declarations

    def class_of(self, resolved: str) -> str:
        """The qualified name of the class a resolved name refers to (itself when the tree lacks it)."""
        decl = self.context.index.class_named(resolved, self.context.module_name, self.context.reach)
        return decl.qualname if decl is not None else resolved

    def _typed_value(
        self, declared: TypeRef | None, origin: str, source: bool = True, declared_by: str = ""
    ) -> Value | None:
        """The value a declaration promises; None when there is no declaration. `declared_by`: the declaration's
        qualified name, kept on a value it makes maybe None (`Site.resolved`)."""
        declared = self.context.index.expand_type_aliases(declared)
        if declared is None:
            return None
        if declared.kind == "class" and declared.name in UNTYPED:
            return None  # `Any` and `object` say nothing about None
        if declared.kind == "class":
            invariant = self.payload_invariant(declared.name)
            if invariant:
                cls = self.class_of(declared.name)
                if declared.optional:
                    return Value(
                        Nullness.MAYBE_NONE, connector_output=True, evidence=True, origin=origin, kv_source=source,
                        cls=cls, invariant=invariant, declared_by=declared_by,
                    )
                return Value(
                    Nullness.NOT_NONE, connector_output=True, guard=f"declared `{declared.name.rpartition('.')[2]}`",
                    kv_source=source, cls=cls, invariant=invariant,
                )
            nullness = Nullness.MAYBE_NONE if declared.optional else Nullness.NOT_NONE
            return Value(nullness, cls=self.class_of(declared.name), cls_args=declared.args)
        if declared.kind in ("list", "dict"):
            element = self._typed_value(declared.element, f"an element of {origin}", source=False)
            nullness = Nullness.MAYBE_NONE if declared.optional else Nullness.NOT_NONE
            if declared.kind == "list":
                return Value(nullness, element=element, item=element)
            return Value(nullness, item=element)
        if declared.kind == "noreturn":
            return Value(Nullness.UNKNOWN, never_returns=True)
        return UNTRACKED

    def _payload_class(self, configured: str) -> ClassDecl | None:
        """The payload class as this module names it: what its imports bind, else its own class of that name,
        else the only one it reaches through its imports; a test double elsewhere never stands in for it."""
        if configured in self.payload_class_decls:
            return self.payload_class_decls[configured]
        context = self.context
        imported = sorted({target for target in context.imports.bindings.values() if matches(target, (configured,))})
        decl = None
        for target in imported or [configured.rpartition(".")[2]]:
            decl = context.index.class_named(target, context.module_name, context.reach)
            if decl is not None:
                break
        self.payload_class_decls[configured] = decl
        return decl

    def payload_invariant(self, name: str) -> str:
        """The invariant whose payload class this is, or a class of the tree derived from ("" neither)."""
        invariant = self.context.invariants.of_payload_class(name)
        if invariant or not self.context.index.classes:
            return invariant
        for decl in self.context.index.mro(self.class_of(name)):
            for base in (decl.qualname, *decl.bases):
                invariant = self.context.invariants.of_payload_class(base)
                if invariant:
                    return invariant
        return ""

    def annotation_value(self, annotation: ast.expr, origin: str) -> Value | None:
        """The value an annotation in this module declares (a parameter, an annotated local)."""
        return self._typed_value(type_of_annotation(annotation, self.resolve_type_name), origin)

    def resolve_type_name(self, spelled: str) -> str:
        context = self.context
        root = spelled.partition(".")[0]
        local = f"{context.module_name}.{spelled}"
        if root not in context.imports.bindings and (
            context.index.class_named(local) is not None or local in context.index.type_aliases
        ):
            return local
        return context.imports.resolve_dotted(spelled)

    def declared_attribute(self, receiver: Value, attribute: str, origin: str) -> Value | None:
        """What the receiver's class declares about `attribute` (None: no declaration visible)."""
        if not receiver.cls:
            return None
        held = self.context.index.sentinel_member(receiver.cls, attribute)  # `_EMPTY: ClassVar[...] = EMPTY_...` too
        if held is not None:
            return self.sentinel_value(origin.strip("`"), held)
        declared = self.context.index.member(receiver.cls, attribute)
        held_tuple = self.context.index.tuple_member(receiver.cls, attribute)
        if held_tuple:  # `self.state = (..., kv_connector_output, ...)` elsewhere: unpacking it reads it back
            optional = declared is not None and (declared.optional or declared.kind == "none")
            parts = self._tuple_parts(held_tuple, origin)
            return Value(Nullness.MAYBE_NONE if optional else Nullness.NOT_NONE, parts=parts)
        if declared is not None:
            owner = self.context.index.declaring_class(receiver.cls, attribute)
            return self._typed_value(self._substituted(declared, receiver), origin,
                                     declared_by=f"{owner}.{attribute}" if owner else "")
        return None

    def _tuple_parts(self, held: Sequence[tuple[int, int, str]], origin: str) -> tuple[Value, ...]:
        """The members of a tuple that holds connector outputs by name at known positions: KV sources there."""
        parts: list[Value] = [UNTRACKED] * held[0][0]
        for _, position, field in held:
            parts[position] = Value(
                Nullness.MAYBE_NONE, connector_output=True, evidence=True, kv_source=True,
                origin=f"{origin}, which holds `{field}`", invariant=self.context.invariants.of_field(field),
            )
        return tuple(parts)

    def _substituted(self, declared: TypeRef, receiver: Value) -> TypeRef:
        """`T | None` declared in `class Buffer(Generic[T])`, read on a `Buffer[X]`: `X | None`."""
        if declared.kind != "class" or not receiver.cls_args:
            return declared
        decl = self.context.index.class_named(receiver.cls)
        params = decl.type_params if decl is not None else ()
        if declared.name not in params or params.index(declared.name) >= len(receiver.cls_args):
            return declared
        argument = receiver.cls_args[params.index(declared.name)]
        assert isinstance(argument, TypeRef)
        return evolve(argument, optional=argument.optional or declared.optional)

    # --------------------------------------------------------- evaluation

    def eval(self, node: ast.AST, state: NullnessState) -> Value:
        """Evaluate an expression for its value, recording the sites inside it."""
        handler = getattr(self, f"_expr_{type(node).__name__}", None)
        if handler is not None:
            return handler(node, state)
        for child in ast.iter_child_nodes(node):  # `await x`, `*x`, a slice...
            if isinstance(child, ast.expr):
                self.eval(child, state)
            elif isinstance(child, ast.keyword):
                self.eval(child.value, state)
        return UNTRACKED

    def _expr_Name(self, node: ast.Name, state: NullnessState) -> Value:
        value = state.values.get(node.id)
        if value is not None:
            return value
        if matches(self.context.imports.resolve_dotted(node.id), self.context.invariants.empty_sentinels):
            return self.sentinel_value(node.id)
        return self._global_value(node.id) or UNTRACKED

    @staticmethod
    def _expr_Constant(node: ast.Constant, state: NullnessState) -> Value:
        return NONE if node.value is None else UNTRACKED

    def _expr_JoinedStr(self, node: ast.JoinedStr, state: NullnessState) -> Value:
        for part in node.values:  # the replacement fields; not the ones nested in a format spec (`{x:{width}}`)
            if isinstance(part, ast.FormattedValue):
                self.eval(part.value, state)
        return UNTRACKED

    def _module_global(self, node: ast.Attribute, code: str, state: NullnessState) -> Value | None:
        """What an imported module declares of its global (`from vllm_plugin import kv_utils`: `kv_utils.LAST`,
        declared `LAST: KVConnectorOutput | None`)."""
        resolved = self.resolve(node, state)
        declared = self.context.index.global_type(resolved) if resolved and "." in resolved else None
        return self._typed_value(declared, f"`{code}`", declared_by=resolved or "") if declared is not None else None

    def _global_value(self, name: str) -> Value | None:
        """A module global's declared value (this module's, or imported from another of the tree)."""
        if name in self.context.local_definitions:
            return None  # a local import, `def` or `class` of that name hides the global
        local = f"{self.context.module_name}.{name}" if self.context.module_name else name
        imported = self.context.imports.bindings.get(name)
        declared = self.context.index.global_type(imported) if imported else self.context.index.global_type(local)
        if declared is None:
            return None
        return self._typed_value(declared, f"`{name}`", declared_by=self.context.index.canonical(imported or local))

    def _expr_Attribute(self, node: ast.Attribute, state: NullnessState) -> Value:
        receiver = self.eval(node.value, state)
        attr = node.attr
        if receiver.nullness is Nullness.NONE and not receiver.tracked and attr in self._payload_members():
            # `kvo = None`, then `kvo.finished_...`
            receiver = evolve(receiver, connector_output=True, invariant=self._member_invariant(attr))
        self.recorder.sink(node.value, receiver, f"attribute access `.{attr}`", node, state)
        return self.attribute_value(node, receiver, state)

    def _payload_members(self) -> frozenset[str]:
        """Attribute names that only a connector output has (its payload fields, declared or configured)."""
        names = set(self.context.invariants.payload_optional_fields)
        for payload in self.context.invariants.payload_classes:
            declared = self._payload_class(payload)
            if declared is not None:
                names.update(name for name, _ in declared.members)
        return frozenset(names)

    def _member_invariant(self, attr: str) -> str:
        """The invariant whose payload has a member `attr` (declared first, then configured)."""
        for invariant in self.context.invariants.invariants:
            declared = self._payload_class(invariant.payload_class)
            if declared is not None and attr in dict(declared.members):
                return invariant.name
        return self.context.invariants.of_payload_field(attr)

    def emptiness_fields(self, invariant: str) -> tuple[str, ...]:
        """What must be falsy for the payload to be empty: its optional fields (`_payload_fields`) and the
        configured `emptiness-fields` its class declares (vLLM 0.33's `is_empty()` counts `invalid_block_ids`
        and `failed_recving`, which are never None); only the optional ones where the class is out of sight."""
        fields = self.emptiness_fields_by_invariant.get(invariant)
        if fields is None:
            invariants = self.context.invariants
            fields = self._payload_fields(invariant)
            found = invariants.by_name.get(invariant)
            declared = self._payload_class(found.payload_class) if found is not None else None
            if declared is not None and declared.members:
                members = {name for decl in self.context.index.mro(declared.qualname) for name, _ in decl.members}
                fields += tuple(name for name in invariants.emptiness_fields_of(invariant) if name in members)
            self.emptiness_fields_by_invariant[invariant] = fields
        return fields

    def _payload_fields(self, invariant: str) -> tuple[str, ...]:
        """The payload's optional fields: the configured ones its class declares where the tree declares it
        (vLLM 0.10's payload has two of the five the newest one has); where this module's payload class is out
        of sight, those of them every release has (which release it is, nothing here says)."""
        fields = self.payload_fields_by_invariant.get(invariant)
        if fields is None:
            fields = configured = self.context.invariants.payload_fields_of(invariant)
            found = self.context.invariants.by_name.get(invariant)
            declared = self._payload_class(found.payload_class) if found is not None else None
            if declared is not None and declared.members:
                members = {name for decl in self.context.index.mro(declared.qualname) for name, _ in decl.members}
                fields = tuple(name for name in configured if name in members) or configured
            elif declared is None:
                fields = tuple(name for name in configured if name in FIELDS_EVERY_RELEASE_HAS) or configured
            self.payload_fields_by_invariant[invariant] = fields
        return fields

    def attribute_value(self, node: ast.Attribute, receiver: Value, state: NullnessState) -> Value:
        attr = node.attr
        key = ref_key(node)
        return self._member_value(receiver, attr, key, node, state)

    def _member_value(
        self, receiver: Value, attr: str, key: str | None, node: ast.AST, state: NullnessState
    ) -> Value:
        """The value of `receiver.attr` (`key` its reference key), from state, declaration or name."""
        code = key or self.context.source.code(node)
        if receiver.connector_output and attr in self.context.invariants.payload_fields_of(receiver.invariant):
            return self.payload_field(receiver, attr, key, code, state)
        if key is not None and key in state.values:
            value = state.values[key]
        else:
            value = self.declared_attribute(receiver, attr, f"`{code}`")
            if value is None and not receiver.cls and key is not None and isinstance(node, ast.Attribute):
                value = self._module_global(node, code, state)  # `kv_utils.LAST`, a global of an imported module
            if value is not None and key is not None:
                self.context.declared_defaults[key] = value
            elif value is None and receiver.cls and self.context.index.method(receiver.cls, attr) is not None:
                return FRESH  # `step.kv_connector_output()` of a class that declares it a method: a bound method
        invariant = self.context.invariants.of_field(attr)
        if invariant:
            if value is None:
                value = self.lookup(key, state) if key else self.field_source(f"`{code}`", invariant)
            if value.tracked or value.nullness is not Nullness.UNKNOWN:
                self.recorder.record(SiteKind.OPTIONAL_ACCESS, node, may_be_none=value.may_be_none,
                                     guard=value.guard, state=state, invariant=invariant)
            return value
        if value is not None:
            return value
        if key is not None:
            default = self.default_for_key(key)
            if default is not None and default.connector_output:
                return default
        if receiver.sentinel or (
            receiver.shallow_copy and attr not in receiver.known_fields and not attr.startswith("__")
        ):
            # a copy made with `copy.copy` / `dataclasses.replace` shares the sentinel's lists and dicts
            return Value(Nullness.UNKNOWN, sentinel_part=True, shallow_copy=receiver.shallow_copy, origin=f"`{code}`",
                         sentinel_of=receiver.sentinel_of)
        if receiver.nullness is Nullness.UNKNOWN and not receiver.tracked and key is None:
            return UNTRACKED
        empty_sentinels = self.context.invariants.empty_sentinels
        if isinstance(node, ast.Attribute) and matches(self.resolve(node, state), empty_sentinels):
            return self.sentinel_value(self.context.source.code(node))
        return UNTRACKED

    def payload_field(
        self, receiver: Value, attr: str, key: str | None, code: str, state: NullnessState
    ) -> Value:
        """`kvo.finished_sending`: from the state, else what the receiver's class (or the payload class)
        declares, else what the construction gave it, else maybe None by name."""
        if key is not None and key in state.values:
            return state.values[key]
        own = self.context.index.member(receiver.cls, attr) if receiver.cls else None
        invariant = receiver.invariant or self._member_invariant(attr)
        if own is not None:
            optional = own.optional or own.kind == "none"  # a subclass may re-declare it `set[str]`
            owner = self.context.index.declaring_class(receiver.cls, attr) if optional else ""
            value = Value(Nullness.MAYBE_NONE if optional else Nullness.NOT_NONE, payload=True, origin=f"`{code}`",
                          guard="" if optional else "declared non-Optional", invariant=invariant,
                          declared_by=f"{owner}.{attr}" if owner else "")
        else:
            value = self._declared_payload_field(attr, invariant) or (
                Value(Nullness.NOT_NONE, payload=True, guard="constructed with a value", invariant=invariant)
                if attr in receiver.known_fields
                else Value(Nullness.MAYBE_NONE, payload=True, origin=f"`{code}`", invariant=invariant)
            )
        if key is not None:
            self.context.declared_defaults[key] = value  # what joins and narrowing start from
        return value

    def _declared_payload_field(self, attr: str, invariant: str) -> Value | None:
        """A payload field the payload class declares non-Optional is never None."""
        found_invariant = self.context.invariants.by_name.get(invariant)
        declared = self._payload_class(found_invariant.payload_class) if found_invariant is not None else None
        if declared is None:
            return None
        found = self.context.index.member(declared.qualname, attr)
        if found is None or found.optional or found.kind == "none":
            return None
        return Value(Nullness.NOT_NONE, payload=True, guard="declared non-Optional", invariant=invariant)

    def _expr_Subscript(self, node: ast.Subscript, state: NullnessState) -> Value:
        receiver = self.eval(node.value, state)
        self.recorder.sink(node.value, receiver, "subscript", node, state)
        self.eval_slices(node, state)
        key = ref_key(node)
        if key is not None and key in state.values:
            return state.values[key]
        index = self._single_index(node)
        if receiver.parts is not None and index is not None:
            if isinstance(index, ast.Constant) and type(index.value) is int and index.value < len(receiver.parts):
                return receiver.parts[index.value]
        if receiver.item is not None and index is not None:
            return receiver.item
        if receiver.cls and index is not None:
            # a TypedDict's key
            if isinstance(index, ast.Constant) and isinstance(index.value, str):
                declared = self.declared_attribute(receiver, index.value, f"`{self.context.source.code(node)}`")
                if declared is not None:
                    return declared
        indexed = index is not None
        if (receiver.sentinel or receiver.sentinel_part) and indexed:  # `x[:]` is a new list; `x[0]` is shared
            return Value(Nullness.UNKNOWN, sentinel_part=True, origin=f"`{self.context.source.code(node)}`")
        return UNTRACKED

    def _subscript_elements(self, node: ast.Subscript) -> list[ast.expr]:
        """The comma-separated elements between the brackets (`x[a, b:c]`: `a` and `b:c`; `x[(a, b)]`: one)."""
        index = node.slice
        if isinstance(index, ast.Tuple) and not self._parenthesized(index):
            return index.elts
        return [index]

    def _single_index(self, node: ast.Subscript) -> ast.expr | None:
        """The index of `x[i]` (`x[i,]` and `x[*i]` too): one element between the brackets, not a slice."""
        elements = self._subscript_elements(node)
        if len(elements) != 1 or isinstance(elements[0], ast.Slice):
            return None
        return elements[0].value if isinstance(elements[0], ast.Starred) else elements[0]

    def _parenthesized(self, node: ast.Tuple) -> bool:
        """Whether a tuple is written in its own parentheses (`x[(a, b)]`, not `x[a, b]` nor `x[(a), (b)]`)."""
        text = self.context.source.segment(node)
        if not (text.startswith("(") and text.endswith(")")):
            return False
        depth = 0
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type != tokenize.OP:
                    continue
                if token.string in "([{":
                    depth += 1
                elif token.string in ")]}":
                    depth -= 1
                    if depth == 0:  # the first bracket closes: at the end of the text or before it
                        return token.end == (text.count("\n") + 1, len(text) - text.rfind("\n") - 1)
        except (tokenize.TokenError, SyntaxError):
            return True
        return True

    def eval_slices(self, node: ast.Subscript, state: NullnessState) -> None:
        for index in self._subscript_elements(node):
            if isinstance(index, ast.Slice):
                for part in (index.lower, index.upper, index.step):
                    if part is not None:
                        self.eval(part, state)
            else:
                self.eval(index.value if isinstance(index, ast.Starred) else index, state)  # `x[*a]`

    def eval_call_parts(self, node: ast.Call, state: NullnessState) -> list[Value]:
        values = []
        arguments = call_arguments(node)
        for arg in arguments:
            value = self.eval(arg.value, state)
            if arg.star == "*":
                self.recorder.sink(arg.value, value, "`*` unpacking", arg.value, state)
            elif arg.star == "**":
                self.recorder.sink(arg.value, value, "`**` unpacking", arg.value, state)
            values.append(value)
        self._attached_by_call(arguments, values, state)
        self.hand_on([arg.value for arg in arguments], state)
        for arg in arguments:  # a callee handed a shallow copy may give it fresh members: stop suspecting them
            if isinstance(arg.value, ast.Name) and (held := state.values.get(arg.value.id)) and held.shallow_copy:
                state.values[arg.value.id] = evolve(held, shallow_copy=False)
        return values

    def _attached_by_call(self, arguments: list[Argument], values: list[Value], state: NullnessState) -> None:
        """An output (or a copy of the sentinel) passed to a call together with a connector output may leave it
        with the connector output attached (`self._attach(output, kvo)`): nothing here says it does not."""
        given = {value.invariant: value for value in values
                 if value.connector_output and value.invariant and value.nullness is not Nullness.NONE}
        if not given:
            return
        for arg, value in zip(arguments, values):
            if value.output_sites or value.empty_copy:
                for invariant, connector_output in given.items():
                    self.statements.attach(arg.value, value, connector_output, state, invariant)
                    value = state.values.get(ref_key(arg.value) or "", value)

    def hand_on(self, expressions: Sequence[ast.AST], state: NullnessState) -> None:
        """The KV values named in these expressions are passed on, stored or attached (KVC006)."""
        if self.context.parks:  # a holder handed on takes what is parked on it along
            holders = {v.parked_on for v in state.values.values() if v.parked_on}
            named = {name for expression in expressions for name in holders & self._names_within(expression)}
            for key, held in list(state.values.items()):
                if held.parked_on in named:
                    state.values[key] = evolve(held, parked_on="")
        pending = {  # a parked value handed on again is handed on for good
            k for k, v in state.values.items()
            if "." not in k and ((v.kv_source and (not v.handed_on or v.parked_on)) or v.output_sites)
        }
        if not pending:
            return
        for expression in expressions:
            for name in pending & self._names_within(expression):
                pending.discard(name)
                # an output that escapes before its connector output is set stays without it (KVC003)
                state.values[name] = evolve(
                    state.values[name], handed_on=True, output_sites=frozenset(), parked_on="")

    def forget_nodes(self) -> None:
        """A batch of the module is analysed and its tree goes: `names_within` knew its nodes by id()."""
        self.names_within.clear()

    def _names_within(self, node: ast.AST) -> frozenset[str]:
        """Every name an expression mentions, a lambda's or nested function's included (they capture it).

        Every identifier counts, whatever its role (silence over a guess: a value whose name appears is
        taken as handed on): attribute names (`.kvo`), keyword names (`kvo=`), parameter names, a
        definition's or an import's names too.
        Remembered per node: loops are walked again until their facts settle, and a call's argument that is
        itself a call was asked about first (its arguments are handed on before it), so the walk takes a
        sub-expression's names as remembered rather than walk it again."""
        found = self.names_within.get(id(node))
        if found is None:
            names: set[str] = set()
            stack = [node]
            while stack:
                current = stack.pop()
                known = self.names_within.get(id(current)) if current is not node else None
                if known is not None:
                    names |= known
                    continue
                kind = type(current)
                if kind is ast.Name:
                    names.add(current.id)  # type: ignore[attr-defined]
                    continue  # its only child is its context (`Load`)
                if kind is ast.Constant:
                    continue
                identifiers = _IDENTIFIERS.get(kind)
                if identifiers is not None:
                    names.update(identifiers(current))
                stack.extend(ast.iter_child_nodes(current))
            found = self.names_within[id(node)] = frozenset(names)
        return found

    def _expr_Await(self, node: ast.Await, state: NullnessState) -> Value:
        """`await f()`: what the `async def` declares it returns (the call alone gives a coroutine)."""
        awaited, self.awaited = self.awaited, node.value
        try:
            return self.eval(node.value, state)
        finally:
            self.awaited = awaited

    def _expr_Call(self, node: ast.Call, state: NullnessState) -> Value:
        func = node.func
        callee = self.resolve(func, state)
        receiver: Value | None = None
        if isinstance(func, ast.Attribute):
            receiver = self.eval(func.value, state)
            self.recorder.sink(func.value, receiver, f"attribute access `.{func.attr}`", func, state)
            if self._calls_a_method_named_like_a_field(func.attr, receiver):
                function_value = FRESH
            else:
                function_value = self.attribute_value(func, receiver, state)
        else:
            function_value = self.eval(func, state)
        if function_value.tracked:
            self.recorder.sink(func, function_value, "call", node, state)
        args = self.eval_call_parts(node, state)
        self._call_sinks(node, callee, args, state)
        special = self._special_call(node, callee, receiver, args, state)
        if special is not None:
            return special
        return self._declared_call(node, callee, receiver)

    def _calls_a_method_named_like_a_field(self, attr: str, receiver: Value) -> bool:
        """`step.kv_connector_output()`: a field of that name holds a connector output or None, neither of which
        can be called, so a call names a method, unless the receiver's class declares the field itself (then the
        call is the field's, and its check is before the call). What the method returns, its declaration says."""
        if not self.context.invariants.of_field(attr):
            return False
        return not (receiver.cls and self.context.index.member(receiver.cls, attr) is not None)

    def _call_sinks(self, node: ast.Call, callee: str | None, args: list[Value], state: NullnessState) -> None:
        """Arguments that the callee iterates (KVC005): `set(x)`, `s.update(x)`, `",".join(x)`..."""
        if callee in ITERATING_BUILTINS or callee in ITERATING_FUNCTIONS:
            what = f"`{self.context.source.code(node.func)}()`"
        elif isinstance(node.func, ast.Attribute) and node.func.attr in ITERATING_METHODS:
            what = f"`.{node.func.attr}()`"
        else:
            return
        for arg, value in zip(call_arguments(node), args):
            if arg.keyword is None and not arg.star and (value.payload or (callee == "len" and value.tracked)):
                self.recorder.sink(arg.value, value, what, node if callee == "len" else arg.value, state)

    def _special_call(
        self, node: ast.Call, callee: str | None, receiver: Value | None, args: list[Value], state: NullnessState
    ) -> Value | None:
        """Calls whose meaning kvlint knows: constructions, copies, containers, getattr, mutation."""
        arguments = call_arguments(node)
        helped = self.context.invariants.with_attaching_helper(callee)
        if helped and any(value.output_sites for value in args):
            # `with_ec_conn_output(output, ec)`: the output it is given leaves with the connector output attached
            self.context.attached_outputs.update(
                site for value in args for site in value.output_sites if site_invariant(site) in helped
            )
        invariant = self.context.invariants.of_payload_class(callee) if callee else ""
        if invariant:
            self.recorder.record(SiteKind.PAYLOAD_CONSTRUCTION, node, state=state, invariant=invariant)
            known = frozenset(
                arg.keyword for arg, value in zip(arguments, args)
                if arg.keyword is not None and value.nullness is Nullness.NOT_NONE
            )
            return Value(
                Nullness.NOT_NONE, connector_output=True, evidence=True, origin=f"`{self.context.source.code(node)}`",
                guard=f"constructed `{self.context.invariants.by_name[invariant].payload_name}(...)`", kv_source=True,
                known_fields=known,
                invariant=invariant,
            )
        if matches(callee, self.context.invariants.output_classes):
            sites = frozenset(self.recorder.record_output_construction(node, state))
            return Value(Nullness.NOT_NONE, cls=self.class_of(callee or ""), output_sites=sites)
        if callee in _CASTS and node.args and not isinstance(node.args[0], ast.Starred):
            # `cast(T, x)`: what T declares, as a type checker takes it (`cast(Any, x)` says nothing)
            cast = self.annotation_value(node.args[0], f"`{self.context.source.code(node)}`")
            if cast is not None:
                return cast
        if matches(callee, COPY_FUNCTIONS):
            if args and args[0].sentinel:
                self.recorder.record(SiteKind.SENTINEL_USE, node, sentinel_use=SentinelUseKind.COPIED,
                                     operand=self.context.source.code(arguments[0].value), state=state,
                                     invariant=args[0].sentinel_of[0] if args[0].sentinel_of else "")
                unknown_fields = any(a.star == "**" for a in arguments)  # `replace(EMPTY, **fields)`
                shallow = not matches(callee, ("copy.deepcopy", "deepcopy")) and not unknown_fields
                given = frozenset(a.keyword for a in arguments if a.keyword is not None)  # fresh values
                lacking = tuple(  # the invariants whose connector output the copy does not get here
                    invariant for invariant in args[0].sentinel_of
                    if not given & set(self.context.invariants.by_name[invariant].optional_fields)
                )
                return Value(Nullness.NOT_NONE, empty_copy=bool(lacking), shallow_copy=shallow, known_fields=given,
                             origin=f"`{self.context.source.code(node)}`", sentinel_of=lacking)
            if args and args[0].shallow_copy and not matches(callee, ("copy.deepcopy", "deepcopy")):
                if not any(a.star == "**" for a in arguments):  # a shallow copy of a shallow copy: still shared
                    given = frozenset(a.keyword for a in arguments if a.keyword is not None)
                    return Value(Nullness.NOT_NONE, shallow_copy=True, known_fields=args[0].known_fields | given)
            return FRESH
        if callee in ("setattr", "object.__setattr__") and len(arguments) == 3 and not any(
            a.keyword or a.star for a in arguments
        ):
            self._set_by_name(arguments, args, state)
        if callee in ("setattr", "object.__setattr__", "object.__delattr__", "delattr") and args and args[0].sentinel:
            self.recorder.record_mutation(node, arguments[0].value, state, args[0])
            return UNTRACKED
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Attribute):
            owner = node.func.value  # `out.__dict__.update(...)` may give a copy fresh members
            if owner.attr == "__dict__" and isinstance(owner.value, ast.Name):
                held = state.values.get(owner.value.id)
                if held is not None and held.shallow_copy:
                    state.values[owner.value.id] = evolve(held, shallow_copy=False)
        if isinstance(node.func, ast.Attribute) and receiver is not None:
            name = node.func.attr
            if receiver.sentinel_part and name in MUTATING_METHODS:
                self.recorder.record_mutation(node, node.func.value, state, receiver)
                return UNTRACKED
            contained = self._container_method(node, name, receiver, args, state)
            if contained is not None:
                return contained
        if callee == "getattr" and len(arguments) >= 2 and isinstance(arguments[1].value, ast.Constant):
            field_name = arguments[1].value.value
            if isinstance(field_name, str) and self.context.invariants.of_field(field_name):
                value = self._member_value(args[0], field_name, None, node, state)
                if len(args) >= 3 and args[2].nullness is not Nullness.NONE:
                    return join_values(value, args[2])
                return value
        return self._container_builtin(callee, args)

    def _set_by_name(self, arguments: list[Argument], args: list[Value], state: NullnessState) -> None:
        """`setattr(out, "kv_connector_output", kvo)` attaches as `out.kv_connector_output = kvo` does; with a name
        nobody can read here (`setattr(out, name, value)`), it may set any invariant's field: each counts as set."""
        name = arguments[1].value
        if isinstance(name, ast.Constant) and isinstance(name.value, str):
            invariants = [self.context.invariants.of_field(name.value)]
        else:
            invariants = list(self.context.invariant_names)
        receiver, key = args[0], ref_key(arguments[0].value)
        for invariant in invariants:
            if invariant:  # each attach starts from what the one before left: a copy then lacks neither field
                self.statements.attach(arguments[0].value, receiver, args[2], state, invariant)
                receiver = state.values.get(key, receiver) if key is not None else receiver

    def _container_method(
        self, node: ast.Call, name: str, receiver: Value, args: list[Value], state: NullnessState
    ) -> Value | None:
        if name in ("get", "pop") and receiver.item is not None:
            default_none = len(args) < 2 or args[1].nullness is Nullness.NONE
            if name == "pop" and len(args) < 2:
                return receiver.item
            optional = join_values(receiver.item, NONE) if default_none else join_values(receiver.item, args[1])
            return evolve(optional, origin=optional.origin or f"`{self.context.source.code(node)}`")
        if name == "values" and receiver.item is not None:
            return Value(Nullness.NOT_NONE, element=receiver.item)
        if name == "items" and receiver.item is not None:
            return Value(Nullness.NOT_NONE, element=Value(Nullness.NOT_NONE, parts=(UNTRACKED, receiver.item)))
        if name in ("append", "add", "extend", "insert") and receiver.local_container:
            key = ref_key(node.func.value) if isinstance(node.func, ast.Attribute) else None
            if key is not None and args:
                added = args[-1].element if name == "extend" else args[-1]
                if added is not None:
                    element = join_values(receiver.element, added) if receiver.element else added
                    state.values[key] = evolve(receiver, element=element, item=element)
        return None

    def _container_builtin(self, callee: str | None, args: list[Value]) -> Value | None:
        if callee in ("list", "tuple", "sorted", "reversed", "iter", "set", "frozenset", "dict"):
            element = args[0].element if args and callee != "dict" else None
            return Value(Nullness.NOT_NONE, element=element, item=element)  # a constructor never gives None
        if callee == "enumerate" and args and args[0].element is not None:
            return Value(Nullness.NOT_NONE, element=Value(Nullness.NOT_NONE, parts=(FRESH, args[0].element)))
        if callee == "zip" and args and any(a.element is not None for a in args):
            parts = tuple(a.element or UNTRACKED for a in args)
            return Value(Nullness.NOT_NONE, element=Value(Nullness.NOT_NONE, parts=parts))
        if callee == "filter" and len(args) == 2 and args[0].nullness is Nullness.NONE and args[1].element:
            kept = evolve(args[1].element, nullness=Nullness.NOT_NONE, guard="`filter(None, ...)`")
            return Value(Nullness.NOT_NONE, element=kept)
        if callee == "next" and args and args[0].element is not None:
            if len(args) >= 2:
                return join_values(args[0].element, args[1])
            return args[0].element
        if matches(callee, ("itertools.chain",)) and args:
            elements = [a.element for a in args if a.element is not None]
            if elements and len(elements) == len(args):
                joined = elements[0]
                for element in elements[1:]:
                    joined = join_values(joined, element)
                return Value(Nullness.NOT_NONE, element=joined)
        return None

    def callee_declaration(self, node: ast.Call, callee: str | None, receiver: Value | None) -> FunctionDecl | None:
        """The declaration of the function or method a call calls: through the receiver's class where it is known,
        else by the callee's resolved name; None where the tree holds none."""
        if isinstance(node.func, ast.Attribute) and receiver is not None and receiver.cls:
            return self.context.index.method(receiver.cls, node.func.attr)
        if isinstance(node.func, ast.Attribute) and self._is_super(node.func.value):
            return self.context.index.inherited_method(self.context.scope.class_name, node.func.attr)
        return self.context.index.function(callee, self.context.module_name) if callee is not None else None

    def _is_super(self, node: ast.expr) -> bool:
        """`super()` (or `super(Cls, self)`) in a method of a class the scope names."""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
                and bool(self.context.scope.class_name) and not node.keywords
                and (not node.args or (len(node.args) == 2 and isinstance(node.args[0], ast.Name)
                                       and self.context.scope.class_name.endswith(f".{node.args[0].id}"))))

    def _declared_call(self, node: ast.Call, callee: str | None, receiver: Value | None) -> Value:
        """The value of a call from the callee's declaration; the name-based index when the receiver is unknown."""
        context = self.context
        decl = self.callee_declaration(node, callee, receiver)
        by_receiver = isinstance(node.func, ast.Attribute) and receiver is not None and receiver.cls
        if decl is None and callee is not None and not by_receiver:
            constructed = context.index.class_named(callee, context.module_name, context.reach)
            if constructed is not None:
                return Value(Nullness.NOT_NONE, cls=constructed.qualname)
        if decl is not None and decl.is_async and node is not self.awaited:
            return UNTRACKED  # a coroutine: what it returns comes only from `await`ing it
        if context.index.never_returns(callee, context.module_name) or (decl is not None and decl.never_returns):
            return Value(Nullness.UNKNOWN, never_returns=True)
        if decl is not None and decl.tuple_returns:  # `hidden, kvo = self._forward(...)`: what it returns
            parts = self._tuple_parts(decl.tuple_returns, f"`{context.source.code(node)}`")
            return Value(Nullness.NOT_NONE, parts=parts)
        if decl is not None:
            if decl.returns is None or decl.returns.kind not in ("class", "list", "dict"):
                return UNTRACKED
            returns = self._substituted(decl.returns, receiver) if receiver is not None else decl.returns
            return self._typed_value(returns, self._declared_origin(node, _payload_of(returns)),
                                     declared_by=decl.qualname) or UNTRACKED
        payloads = (None if callee is None
                    else context.index.returns_optional(callee, context.module_name))
        if payloads:
            owners = {self.payload_invariant(payload) for payload in payloads}
            invariant = owners.pop() if len(owners) == 1 else ""  # definitions of two invariants: say neither
            shown = {payload.rpartition(".")[2] for payload in payloads}
            return Value(Nullness.MAYBE_NONE, connector_output=True, evidence=True, kv_source=True,
                         origin=self._declared_origin(node, shown.pop() if len(shown) == 1 else ""),
                         invariant=invariant, declared_by=context.index.optional_qualname(callee, context.module_name))
        return UNTRACKED

    def _declared_origin(self, node: ast.Call, payload: str = "") -> str:
        name = payload.rpartition(".")[2] or "the payload class"
        return f"`{self.context.source.code(node.func)}()`, declared `-> {name} | None`"

    def _expr_BinOp(self, node: ast.BinOp, state: NullnessState) -> Value:
        left = self.eval(node.left, state)
        right = self.eval(node.right, state)
        operator = operator_text(node.op)
        self.recorder.sink(node.left, left, f"`{operator}`", node, state)
        self.recorder.sink(node.right, right, f"`{operator}`", node, state)
        if left.payload or right.payload:
            return FRESH
        return UNTRACKED

    def _expr_UnaryOp(self, node: ast.UnaryOp, state: NullnessState) -> Value:
        value = self.eval(node.operand, state)
        if not isinstance(node.op, ast.Not):
            self.recorder.sink(node.operand, value, f"unary `{operator_text(node.op)}`", node, state)
        return UNTRACKED

    def quiet_eval(self, node: ast.expr, state: NullnessState) -> Value:
        """Evaluate for the value only: no sites, no effect on the state."""
        recording, self.context.recording = self.context.recording, False
        try:
            return self.eval(node, state.copy())
        finally:
            self.context.recording = recording

    @staticmethod
    def _become(state: NullnessState, other: NullnessState) -> None:
        """Make `state` (which callers hold) equal to `other`, in place."""
        state.values, state.paths, state.reachable = other.values, other.paths, other.reachable

    def _expr_BoolOp(self, node: ast.BoolOp, state: NullnessState) -> Value:
        # `a and b and c` is one node: it is evaluated as `(a and b) and c`, its last value in the state where
        # the ones before it are all true (`and`) or all false (`or`), narrowed left to right as
        # `Narrowing.narrow` does.
        # The value of the part before the last is no reference when it has two values or more (or is itself
        # an `and`/`or`): evaluating it twice at every level is quadratic in the chain's length, for nothing.
        first, last = node.values[0], node.values[-1]
        left = UNTRACKED if len(node.values) > 2 or isinstance(first, ast.BoolOp) else self.quiet_eval(first, state)
        conjunction = isinstance(node.op, ast.And)
        left_true, left_false = self.narrowing.narrow(first, state.copy(), "and/or")
        for middle in node.values[1:-1]:
            if conjunction:
                middle_true, middle_false = self.narrowing.narrow(middle, left_true, "and/or")
                left_true, left_false = middle_true, self.narrowing.join(left_false, middle_false)
            else:
                middle_true, middle_false = self.narrowing.narrow(middle, left_false, "and/or")
                left_true, left_false = self.narrowing.join(left_true, middle_true), middle_false
        if conjunction:
            right = self.eval(last, left_true)
            self._become(state, self.narrowing.join(left_false, left_true))
            if left.may_be_none or not left.tracked:
                return join_values(left, right)
            return right
        right = self.eval(last, left_false)
        self._become(state, self.narrowing.join(left_true, left_false))
        truthy_left = evolve(left, nullness=Nullness.NOT_NONE) if left.tracked else FRESH
        if right.nullness is Nullness.NOT_NONE:
            return evolve(
                join_values(truthy_left, right),
                nullness=Nullness.NOT_NONE,
                guard=f"`or {self.context.source.code(last)}` default",
            )
        return join_values(truthy_left, right)

    def _expr_Compare(self, node: ast.Compare, state: NullnessState) -> Value:
        self.eval(node.left, state)
        for operator, comparator in zip(node.ops, node.comparators):
            right = self.eval(comparator, state)
            if isinstance(operator, (ast.In, ast.NotIn)):
                self.recorder.sink(comparator, right, "`in`", comparator, state)
        return FRESH

    def _expr_IfExp(self, node: ast.IfExp, state: NullnessState) -> Value:
        true_state, false_state = self.narrowing.narrow(node.test, state.copy(), "conditional expression")
        body = self.eval(node.body, true_state)
        orelse = self.eval(node.orelse, false_state)
        self._become(state, self.narrowing.join(true_state, false_state))
        return join_values(body, orelse)

    def _expr_NamedExpr(self, node: ast.NamedExpr, state: NullnessState) -> Value:
        value = self.eval(node.value, state)
        self.statements.assign(node.target, value, state, node.value)
        return value

    def _expr_Lambda(self, node: ast.Lambda, state: NullnessState) -> Value:
        self.eval_defaults(node.args, state)
        if self.context.recording:
            self.context.pending.append((node, self.nested_scope(f"{self.context.scope.qualname}.<lambda>", state)))
        return FRESH

    def nested_scope(self, qualname: str, state: NullnessState, producer: bool = False) -> ScopeContext:
        """A nested function sees the enclosing scope's maybe-None KV values as maybe None: it may run later.
        A name that is None for now is left out: `x = None` is often a placeholder set before the call."""
        captured = tuple(
            (key, evolve(value, guard="", handed_on=True, evidence=False))  # no path inside
            for key, value in sorted(state.values.items(), key=lambda item: item[0])
            if "." not in key and "[" not in key and value.connector_output
            and value.nullness in (Nullness.MAYBE_NONE, Nullness.NOT_NONE)
        )
        return evolve(self.context.scope, qualname=qualname, captured=captured, producer=producer)

    def eval_defaults(self, params: ast.arguments, state: NullnessState) -> None:
        """Default values are evaluated where the function is defined, in the parameters' order (the positional
        ones', then the keyword-only ones': `ast` keeps them so, and most functions have none)."""
        for default in (*params.defaults, *params.kw_defaults):
            if default is not None:  # a keyword-only parameter without one
                self.eval(default, state)

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, state: NullnessState,
        results: Sequence[ast.expr],
    ) -> Value:
        inner = state.copy()
        for comp in node.generators:
            iterable = self.eval(comp.iter, inner)
            self.recorder.sink(comp.iter, iterable, "iteration", comp.iter, inner)
            self.statements.assign(comp.target, iterable.element or UNTRACKED, inner, None)
            for condition in comp.ifs:
                inner, _ = self.narrowing.narrow(condition, inner, "comprehension condition")
        values = [self.eval(result, inner) for result in results]
        # outputs built here stay known as such: `for output in outputs: output.kv_connector_output = kvo`
        element = evolve(values[-1], kv_source=False) if values[-1].tracked or values[-1].output_sites else None
        if isinstance(node, ast.DictComp):
            return Value(Nullness.NOT_NONE, item=element, local_container=True)
        return Value(Nullness.NOT_NONE, element=element, item=element, local_container=True)

    def _expr_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp, state: NullnessState) -> Value:
        return self._comprehension(node, state, [node.elt])

    _expr_SetComp = _expr_ListComp
    _expr_GeneratorExp = _expr_ListComp

    def _expr_DictComp(self, node: ast.DictComp, state: NullnessState) -> Value:
        return self._comprehension(node, state, [node.key, node.value])

    def _elements(self, node: ast.Tuple | ast.List | ast.Set, state: NullnessState) -> Value:
        values = []
        starred = False
        for element in node.elts:
            if isinstance(element, ast.Starred):
                value = self.eval(element.value, state)
                starred = True
                self.recorder.sink(element.value, value, "`*` unpacking", element.value, state)
            else:
                value = self.eval(element, state)
            values.append(value)
        if isinstance(node, ast.Tuple) and not starred:
            return Value(Nullness.NOT_NONE, parts=tuple(values))
        tracked = [evolve(v, kv_source=False) for v in values if v.tracked]
        element = tracked[0] if tracked else None
        for value in tracked[1:]:
            element = join_values(element, value)  # type: ignore[arg-type]
        if starred and element is not None:
            return FRESH  # what the unpacked part adds is unknown
        return Value(Nullness.NOT_NONE, element=element, item=element, local_container=True)

    _expr_Tuple = _elements
    _expr_List = _elements
    _expr_Set = _elements

    def _expr_Dict(self, node: ast.Dict, state: NullnessState) -> Value:
        item: Value | None = None
        unknown = False
        for key, element in zip(node.keys, node.values):
            if key is not None:
                self.eval(key, state)
                value = self.eval(element, state)
                if value.tracked:
                    value = evolve(value, kv_source=False)
                    item = join_values(item, value) if item is not None else value
            else:  # `**x`
                unknown = True
                value = self.eval(element, state)
                self.recorder.sink(element, value, "`**` unpacking", element, state)
        return Value(Nullness.NOT_NONE, item=None if unknown else item, local_container=not unknown)

    def _expr_Yield(self, node: ast.Yield | ast.YieldFrom, state: NullnessState) -> Value:
        if node.value is not None:
            self.eval(node.value, state)
            self.hand_on([node.value], state)
        return UNTRACKED

    _expr_YieldFrom = _expr_Yield


_CASTS = ("typing.cast", "typing_extensions.cast")


def _payload_of(declared: TypeRef) -> str:
    """The class a declared type holds, through lists and dicts (`list[KVConnectorOutput | None]`)."""
    while declared.kind in ("list", "dict") and declared.element is not None:
        declared = declared.element
    return declared.name if declared.kind == "class" else ""


def _optional(name: str | None) -> tuple[str, ...]:
    return (name,) if name is not None else ()


def _alias_names(node: ast.alias) -> list[str]:
    return [*(node.name.split(".") if node.name != "*" else ()), *_optional(node.asname)]


# the identifiers each kind of node spells itself (its children are walked for theirs)
_IDENTIFIERS: dict[type, Callable[[Any], Iterable[str]]] = {
    ast.Attribute: lambda node: (node.attr,),
    ast.keyword: lambda node: _optional(node.arg),
    ast.ExceptHandler: lambda node: _optional(node.name),
    ast.MatchAs: lambda node: _optional(node.name),
    ast.MatchStar: lambda node: _optional(node.name),
    ast.arg: lambda node: (node.arg,),
    ast.FunctionDef: lambda node: (node.name,),
    ast.AsyncFunctionDef: lambda node: (node.name,),
    ast.ClassDef: lambda node: (node.name,),
    ast.alias: _alias_names,
    ast.ImportFrom: lambda node: node.module.split(".") if node.module else (),
    ast.Global: lambda node: node.names,
    ast.Nonlocal: lambda node: node.names,
    ast.MatchMapping: lambda node: _optional(node.rest),
    ast.MatchClass: lambda node: node.kwd_attrs,
}

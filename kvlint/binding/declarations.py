"""What one module declares that decides what may be None, read from its `ast`.

Declarations beat names: a field annotated `KVConnectorOutput` (not Optional)
is never None, whatever it is called; a method declared `-> KVConnectorOutput
| None` is a source on the class that declares it and nowhere else. This module
reads, per file and cheaply (statements only), the classes (dataclass fields,
annotated class attributes, `self.x: T` in methods, properties, base classes,
class attributes bound to an empty sentinel), the functions and methods with
their return types, annotated module globals, and the functions that never
return. `kvlint.binding.tree_index` merges them over the tree. Everything here is plain
data that round-trips through JSON, so the result cache can keep it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from kvlint.binding.names import ImportTable, ast_dotted_name, child_statements, matches, walk_statements
from kvlint.binding.summaries import (
    HolderUse, ParkedReturn, PassThrough, SelfStore, Summary, function_summaries, stored_only,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from kvlint.config import Config

Resolver = Callable[[str], str]

NO_RETURN_TYPES = ("typing.NoReturn", "typing.Never", "typing_extensions.NoReturn", "typing_extensions.Never")
# Functions every Python program knows never return (a path that calls one ends there).
KNOWN_NO_RETURN = (
    "sys.exit", "os._exit", "os.abort", "exit", "quit",
    "pytest.fail", "pytest.skip", "pytest.xfail", "pytest.exit",
    "typing.assert_never", "typing_extensions.assert_never",
)
_OPTIONAL = ("typing.Optional", "typing_extensions.Optional")
_UNION = ("typing.Union", "typing_extensions.Union")
_WRAPPERS = (
    "typing.ClassVar", "typing.Final", "typing.Annotated", "typing_extensions.Annotated", "dataclasses.InitVar",
    "typing.NotRequired", "typing.Required", "typing.ReadOnly", "typing_extensions.NotRequired",
    "typing_extensions.Required", "typing_extensions.ReadOnly",
)
_SEQUENCES = frozenset({
    "list", "set", "frozenset", "tuple", "List", "Set", "FrozenSet", "Tuple", "Sequence", "MutableSequence",
    "Iterable", "Iterator", "Collection", "AbstractSet", "MutableSet", "Generator", "AsyncIterator",
    "AsyncIterable", "deque", "Deque", "Reversible",
})
_MAPPINGS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "defaultdict", "DefaultDict", "OrderedDict"})
_PROPERTY_DECORATORS = ("property", "functools.cached_property", "cached_property")


@dataclass(frozen=True)
class TypeRef:
    """A declared type, reduced to what the analysis asks of it.

    `kind` is "class" (`name` is the resolved dotted name), "list" (anything
    iterated: `element` is what iteration yields), "dict" (`element` is the
    value type), "none" (`-> None`), "noreturn", or "other" (declared, but
    nothing the analysis follows). `optional` is a `| None` around it.
    """

    kind: str
    name: str = ""
    optional: bool = False
    element: TypeRef | None = None
    args: tuple[TypeRef, ...] = ()  # a generic class's type arguments: `Buffer[KVConnectorOutput]`

    def to_json(self) -> list[object]:
        element = self.element.to_json() if self.element else None
        return [self.kind, self.name, self.optional, element, [arg.to_json() for arg in self.args]]

    @classmethod
    def from_json(cls, data: list[object]) -> TypeRef:
        kind, name, optional, element, args = data
        inner = cls.from_json(element) if element else None  # type: ignore[arg-type]
        arguments = tuple(cls.from_json(a) for a in args)  # type: ignore[union-attr]
        return cls(str(kind), str(name), bool(optional), inner, arguments)


OTHER = TypeRef("other")


@dataclass(frozen=True)
class FunctionDecl:
    """A function or method: its return type and whether it can return at all."""

    qualname: str  # module.Class.method, module.function, module.f.<locals>.g
    name: str
    returns: TypeRef | None  # None: not annotated
    never_returns: bool = False
    returns_output: bool = False  # some `return` gives the empty sentinel or builds an output class
    is_async: bool = False  # `async def`: a call gives a coroutine, `await` gives what `returns` says
    # the classes its return annotation names, resolved (`-> ModelRunnerOutput | IntermediateTensors | None`)
    returned_classes: tuple[str, ...] = ()
    # every `return` gives a tuple of one length with a connector output by name at a position:
    # (length, position, the field it holds), as `ClassDecl.tuple_members` says of an attribute
    tuple_returns: tuple[tuple[int, int, str], ...] = ()

    def to_json(self) -> list[object]:
        returns = self.returns.to_json() if self.returns else None
        return ["f", self.qualname, self.name, returns, self.never_returns, self.is_async,
                list(self.returned_classes), [list(item) for item in self.tuple_returns], self.returns_output]


@dataclass(frozen=True)
class ClassDecl:
    """A class: its bases, declared members (fields, attributes, properties) and field order."""

    qualname: str
    name: str
    bases: tuple[str, ...] = ()
    members: tuple[tuple[str, TypeRef], ...] = ()
    fields: tuple[str, ...] = ()  # the positional parameters of its generated `__init__`, in order
    sentinel_members: tuple[str, ...] = ()  # class attributes bound to an empty sentinel
    positional: bool = False  # a dataclass or NamedTuple whose `fields` are its constructor's positions
    type_params: tuple[str, ...] = ()  # `class Buffer(Generic[T])`: the resolved names of T, ...
    rebound: tuple[str, ...] = ()  # class attributes bound to something else here, or on `self` in a method
    sentinel_sources: tuple[str, ...] = ()  # the resolved sentinel each of `sentinel_members` is bound to
    # `self.state = (a, kv_connector_output, b)` in a method: (attribute, length, position, the field it holds)
    tuple_members: tuple[tuple[str, int, int, str], ...] = ()

    def member_types(self) -> dict[str, TypeRef]:
        """The members by name (built once: the flow asks for them at every attribute read)."""
        found = self.__dict__.get("_member_types")
        if found is None:
            found = dict(self.members)
            object.__setattr__(self, "_member_types", found)
        return found

    def to_json(self) -> list[object]:
        return ["c", self.qualname, self.name, list(self.bases), [[n, t.to_json()] for n, t in self.members],
                list(self.fields), list(self.sentinel_members), self.positional, list(self.type_params),
                list(self.rebound), list(self.sentinel_sources), [list(item) for item in self.tuple_members]]


@dataclass(frozen=True)
class PathCalls:
    """How often a module calls each name where a connector is known to be active (syntactically)."""

    module: str
    counts: tuple[tuple[str, int], ...]

    def to_json(self) -> list[object]:
        return ["p", self.module, [list(item) for item in self.counts]]


@dataclass(frozen=True)
class Mentions:
    """How a project file beyond the files of the run names the run's producers (the pre-commit hook's view of
    the rest of the project): what a whole-tree run counts in it to decide whether a producer is only ever
    called on a connector path (`TreeIndex.callee_candidates`). Its connector-path calls are its `PathCalls`."""

    module: str
    words: tuple[tuple[str, int], ...]  # each name's mentions as a word, less its `def`s (`word_mentions`)
    definitions: tuple[tuple[str, int], ...] = ()  # the functions and methods of each name it defines
    skipped: bool = False  # the byte scan skips the file: that it names one at all is what counts

    def to_json(self) -> list[object]:
        return ["n", self.module, [list(item) for item in self.words], [list(item) for item in self.definitions],
                self.skipped]


@dataclass(frozen=True)
class AttributeReads:
    """The stored-only attributes of the run's files (`SelfStore`) that a project file beyond the run names:
    there they may be read back (the pre-commit hook's view of the rest of the project)."""

    module: str
    names: tuple[str, ...]

    def to_json(self) -> list[object]:
        return ["a", self.module, list(self.names)]


@dataclass(frozen=True)
class ModuleDecl:
    """A module of the run and the modules its imports name (`a.b` for `import a.b`, `a.b.C` for
    `from a.b import C`: the binder finds which of them is a module)."""

    module: str
    imports: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()  # the names its imports bind: what `module.name` re-exports
    called: tuple[str, ...] = ()  # imported functions it calls as a statement or in a condition (resolved)
    outside: bool = False  # read from beyond the run's files, for its declarations only (`module_resolution`)
    stars: tuple[str, ...] = ()  # the modules it star-imports (`from .errors import *`): their names are its
    # its `__all__` when a literal list of strings gives it: what `from module import *` binds; None: not
    # declared, or built in a way kvlint does not follow (then a star import binds its public names)
    exports: tuple[str, ...] | None = None

    def to_json(self) -> list[object]:
        return ["m", self.module, list(self.imports), [list(item) for item in self.aliases], list(self.called),
                self.outside, list(self.stars), None if self.exports is None else list(self.exports)]


@dataclass(frozen=True)
class GlobalDecl:
    """An annotated module-level name."""

    qualname: str
    type: TypeRef

    def to_json(self) -> list[object]:
        return ["g", self.qualname, self.type.to_json()]


@dataclass(frozen=True)
class TypeAliasDecl:
    """A module-level type alias (`MaybeKVOutput: TypeAlias = Optional[KVConnectorOutput]`, `type X = ...`,
    `MaybeKVOutput = KVConnectorOutput | None`): an annotation naming it means what it stands for."""

    qualname: str
    type: TypeRef

    def to_json(self) -> list[object]:
        return ["y", self.qualname, self.type.to_json()]


Declaration = (FunctionDecl | ClassDecl | GlobalDecl | TypeAliasDecl | PathCalls | ModuleDecl | HolderUse | PassThrough
               | ParkedReturn | SelfStore | Mentions | AttributeReads)


def declaration_from_json(data: list[object]) -> Declaration:
    """Decode what `to_json` wrote (the result cache stores declarations this way)."""
    tag = data[0]
    if tag == "f":
        _, qualname, name, returns, never, is_async, classes, tuples, produces = data
        decoded = TypeRef.from_json(returns) if returns else None  # type: ignore[arg-type]
        return FunctionDecl(str(qualname), str(name), decoded, bool(never), bool(produces), bool(is_async),
                            tuple(map(str, classes)),  # type: ignore[call-overload]
                            tuple((int(n), int(i), str(f)) for n, i, f in tuples))  # type: ignore[union-attr]
    if tag == "h":
        return HolderUse.from_json(data)
    if tag == "t":
        return PassThrough.from_json(data)
    if tag == "r":
        return ParkedReturn.from_json(data)
    if tag == "s":
        return SelfStore.from_json(data)
    if tag == "a":
        _, module, names = data
        return AttributeReads(str(module), tuple(map(str, names)))  # type: ignore[call-overload]
    if tag == "m":
        _, module, imports, aliases, called, outside, stars, exports = data
        return ModuleDecl(str(module), tuple(map(str, imports)),  # type: ignore[call-overload]
                          tuple((str(name), str(target)) for name, target in aliases),  # type: ignore[union-attr]
                          tuple(map(str, called)), bool(outside), tuple(map(str, stars)),  # type: ignore[call-overload]
                          None if exports is None else tuple(map(str, exports)))  # type: ignore[call-overload]
    if tag == "n":
        _, module, words, definitions, skipped = data
        return Mentions(str(module), tuple((str(n), int(c)) for n, c in words),  # type: ignore[union-attr]
                        tuple((str(n), int(c)) for n, c in definitions), bool(skipped))  # type: ignore[union-attr]
    if tag == "p":
        _, module, counts = data
        return PathCalls(str(module), tuple((str(n), int(c)) for n, c in counts))  # type: ignore[union-attr]
    if tag == "c":
        _, qualname, name, bases, members, fields, sentinels, positional, params, rebound, sources, tuples = data
        return ClassDecl(
            str(qualname), str(name), tuple(map(str, bases)),  # type: ignore[call-overload]
            tuple((str(n), TypeRef.from_json(t)) for n, t in members),  # type: ignore[union-attr]
            tuple(map(str, fields)), tuple(map(str, sentinels)), bool(positional),  # type: ignore[call-overload]
            tuple(map(str, params)), tuple(map(str, rebound)), tuple(map(str, sources)),  # type: ignore[call-overload]
            tuple((str(a), int(n), int(i), str(f)) for a, n, i, f in tuples),  # type: ignore[union-attr]
        )
    if tag == "g":
        _, qualname, type_ = data
        return GlobalDecl(str(qualname), TypeRef.from_json(type_))  # type: ignore[arg-type]
    if tag == "y":
        _, qualname, type_ = data
        return TypeAliasDecl(str(qualname), TypeRef.from_json(type_))  # type: ignore[arg-type]
    raise ValueError(f"unknown declaration tag {tag!r}")


# ------------------------------------------------------------ annotations


def type_of_annotation(node: ast.expr | None, resolve: Resolver, depth: int = 0) -> TypeRef | None:
    """Reduce an annotation to a `TypeRef`; None when there is none."""
    if node is None:
        return None
    if depth > 8:
        return OTHER
    if isinstance(node, ast.Constant):
        if node.value is None:
            return TypeRef("none")
        if isinstance(node.value, str):
            try:
                inner = ast.parse(node.value.strip(), mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return OTHER
            return type_of_annotation(inner, resolve, depth + 1)
        return OTHER
    members = _union_members(node, resolve, depth)
    if members is not None:
        named = [m for m in members if m.kind != "none"]
        optional = len(named) < len(members) or any(m.optional for m in named)
        if len(named) == 1:
            return TypeRef(named[0].kind, named[0].name, optional, named[0].element)
        return TypeRef("other", optional=optional) if named else TypeRef("none")
    if isinstance(node, ast.Subscript):
        generic = _generic(node, resolve)
        if generic is None:
            return OTHER
        resolved, args = generic
        if matches(resolved, _WRAPPERS) and args:
            return type_of_annotation(args[0], resolve, depth + 1)
        short = resolved.rpartition(".")[2]
        if short in _SEQUENCES and args:
            if short in ("tuple", "Tuple") and not (len(args) == 2 and _is_ellipsis(args[1])):
                return OTHER  # a fixed-length tuple of different things
            return TypeRef("list", element=type_of_annotation(args[0], resolve, depth + 1) or OTHER)
        if short in _MAPPINGS and len(args) == 2:
            return TypeRef("dict", element=type_of_annotation(args[1], resolve, depth + 1) or OTHER)
        if short[:1].isupper() and "." in resolved or resolved == short:  # a generic class: `Buffer[X]`
            arguments = tuple(type_of_annotation(arg, resolve, depth + 1) or OTHER for arg in args)
            return TypeRef("class", resolved, args=arguments)
        return OTHER
    name = ast_dotted_name(node)
    if name is None:
        return OTHER
    resolved = resolve(name)
    if resolved in NO_RETURN_TYPES or matches(resolved, ("NoReturn", "Never")):
        return TypeRef("noreturn")
    if resolved == "None":
        return TypeRef("none")
    return TypeRef("class", resolved)


def _union_members(node: ast.expr, resolve: Resolver, depth: int) -> list[TypeRef] | None:
    """The members of a union spelled `A | B`, `Optional[A]` or `Union[A, B]`; None if it is not one."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [type_of_annotation(side, resolve, depth + 1) or OTHER for side in (node.left, node.right)]
    if isinstance(node, ast.Subscript):
        generic = _generic(node, resolve)
        if generic is None:
            return None
        resolved, args = generic
        if matches(resolved, _OPTIONAL) or (resolved == "Optional"):
            return [type_of_annotation(args[0], resolve, depth + 1) or OTHER, TypeRef("none")]
        if matches(resolved, _UNION) or resolved == "Union":
            return [type_of_annotation(arg, resolve, depth + 1) or OTHER for arg in args]
    return None


def _generic(node: ast.Subscript, resolve: Resolver) -> tuple[str, list[ast.expr]] | None:
    """`X[A, B]` as X's resolved name and its arguments; None when X is not a name."""
    origin = ast_dotted_name(node.value)
    if origin is None:
        return None
    return resolve(origin), list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


# ------------------------------------------------------------- functions


def _never_returns(node: ast.FunctionDef | ast.AsyncFunctionDef, returns: TypeRef | None, resolve: Resolver) -> bool:
    """Annotated NoReturn, or a body that always raises (not an abstract `raise NotImplementedError`) or ends
    in a call that never returns (`sys.exit(message)`), as pyright infers for an unannotated function."""
    if returns is not None and returns.kind == "noreturn":
        return True
    if any(_decorator_name(d).endswith("abstractmethod") for d in node.decorator_list):
        return False
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Raise):
        raised = last.exc
        target = raised.func if isinstance(raised, ast.Call) else raised
        if raised is not None and (ast_dotted_name(target) or "").endswith("NotImplementedError"):
            return False
    elif isinstance(last, ast.Expr) and isinstance(last.value, ast.Call):
        called = ast_dotted_name(last.value.func)
        if called is None or resolve(called) not in KNOWN_NO_RETURN:
            return False
    else:
        return False
    return not any(_exits_normally(statement) for statement in body)


def _exits_normally(node: ast.AST) -> bool:
    """A `return`, `yield` or loop `break` out of the body, outside nested scopes."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (ast.Return, ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(current, (ast.If, ast.Try, ast.With, ast.For, ast.While, ast.Match)):
            return True  # a branch may fall through: only straight-line bodies count as always raising
        stack.extend(ast.iter_child_nodes(current))
    return False


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return ast_dotted_name(target) or ""


# ---------------------------------------------------------------- classes


def _class_decl(
    node: ast.ClassDef, qualname: str, resolve: Resolver, sentinels: tuple[str, ...],
    optional_fields: tuple[str, ...] = (),
) -> ClassDecl:
    members: dict[str, TypeRef] = {}
    fields: list[str] = []
    sentinel_members: list[str] = []
    sentinel_sources: list[str] = []  # which sentinel each holds, resolved through the module's imports
    assigned: dict[str, list[ast.expr]] = {}
    parameters: dict[str, ast.expr] = {}  # attributes set from a method's annotated parameter: its annotation
    positional = _generates_positional_init(node, resolve)
    rebound: list[str] = []
    keyword_only = False
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            type_ = type_of_annotation(statement.annotation, resolve)
            name = statement.target.id
            if type_ is not None:
                members[name] = type_
            if statement.value is not None and _is_sentinel(statement.value, resolve, sentinels):
                sentinel_members.append(name)
                sentinel_sources.append(resolve(ast_dotted_name(statement.value) or ""))
            elif statement.value is not None:
                rebound.append(name)  # `_EMPTY: ClassVar[...] = copy.deepcopy(...)` in a subclass
            if matches(resolve(ast_dotted_name(statement.annotation) or ""), ("KW_ONLY",)):
                keyword_only = True  # `_: KW_ONLY`: the fields after it are keyword-only
            elif not _is_class_var(statement.annotation, resolve) and not keyword_only and _in_init(statement):
                fields.append(name)
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name) and _is_sentinel(statement.value, resolve, sentinels):
                    sentinel_members.append(target.id)
                    sentinel_sources.append(resolve(ast_dotted_name(statement.value) or ""))
                elif isinstance(target, ast.Name):
                    rebound.append(target.id)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if statement.name == "__init__":
                positional = False  # its own constructor: the field order says nothing about the positions
            decorators = [resolve(_decorator_name(d)) for d in statement.decorator_list]
            if any(matches(d, _PROPERTY_DECORATORS) for d in decorators):
                returns = type_of_annotation(statement.returns, resolve)
                if returns is not None:
                    members.setdefault(statement.name, returns)
            _self_attributes(statement, resolve, members, assigned, parameters)
    for name, values in assigned.items():
        if name in members or len(values) != 1:
            continue  # an inferred type only from the one assignment that ever sets it
        if isinstance(values[0], ast.Call):  # `self.runner = NPUModelRunner(...)`
            callee = ast_dotted_name(values[0].func)
            if callee and callee.rpartition(".")[2][:1].isupper():
                members[name] = TypeRef("class", resolve(callee))
        elif name in parameters:  # `self.model_runner = model_runner`, a parameter declared `GPUModelRunner`
            declared = type_of_annotation(parameters[name], resolve)
            if declared is not None and declared.kind == "class":
                members[name] = declared
    bases = tuple(resolve(name) for name in map(ast_dotted_name, node.bases) if name)
    rebound.extend(assigned)  # `self._EMPTY = copy.deepcopy(...)`: this instance holds its own
    return ClassDecl(qualname, node.name, bases, tuple(sorted(members.items())), tuple(fields),
                     tuple(sentinel_members), positional, _type_params(node, resolve), tuple(sorted(set(rebound))),
                     tuple(sentinel_sources), _tuple_members(assigned, optional_fields))


def _tuple_members(
    assigned: dict[str, list[ast.expr]], optional_fields: tuple[str, ...]
) -> tuple[tuple[str, int, int, str], ...]:
    """Attributes a method sets to a tuple of step state that holds a connector output by name
    (`self.execute_model_state = (batch, hidden, kv_connector_output)`), when every such assignment is a
    tuple of that length with the output at that position: unpacking the attribute reads it back."""
    found = []
    for attribute, values in sorted(assigned.items()):
        values = [value for value in values if not (isinstance(value, ast.Constant) and value.value is None)]
        tuples = [value for value in values if isinstance(value, ast.Tuple)]
        if not tuples or len(tuples) != len(values) or any(len(t.elts) != len(tuples[0].elts) for t in tuples):
            continue
        for position, element in enumerate(tuples[0].elts):
            spelled = element.id if isinstance(element, ast.Name) else getattr(element, "attr", None)
            if spelled in optional_fields and all(
                (getattr(t.elts[position], "id", None) or getattr(t.elts[position], "attr", None)) == spelled
                for t in tuples
            ):
                found.append((attribute, len(tuples[0].elts), position, spelled))
    return tuple(found)


def _tuple_returns(
    node: ast.FunctionDef | ast.AsyncFunctionDef, optional_fields: tuple[str, ...],
) -> tuple[tuple[int, int, str], ...]:
    """`return hidden, kv_connector_output` at every `return` with a value (`return None` aside): where the
    tuple holds a connector output by name, as `_tuple_members` reads an attribute's tuples."""
    if not optional_fields:
        return ()
    values: list[ast.expr] = []
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Return) and current.value is not None:
            values.append(current.value)
        elif isinstance(current, ast.stmt) and not isinstance(current, _DEFINITIONS):
            stack.extend(child_statements(current))
    if not any(isinstance(value, ast.Tuple) for value in values):
        return ()
    return tuple(item[1:] for item in _tuple_members({"": values}, optional_fields))  # type: ignore[misc]


def _type_params(node: ast.ClassDef, resolve: Resolver) -> tuple[str, ...]:
    """The type variables a class is generic in: `class Buffer(Generic[T])`."""
    for base in node.bases:
        if isinstance(base, ast.Subscript) and matches(resolve(ast_dotted_name(base.value) or ""), ("Generic",)):
            items = base.slice.elts if isinstance(base.slice, ast.Tuple) else [base.slice]
            return tuple(resolve(name) for name in map(ast_dotted_name, items) if name)
    return ()


def _generates_positional_init(node: ast.ClassDef, resolve: Resolver) -> bool:
    """A `@dataclass` (not `kw_only=True`) or a `NamedTuple`: its fields are its constructor's positions."""
    if any(matches(resolve(ast_dotted_name(base) or ""), ("NamedTuple",)) for base in node.bases):
        return True
    for decorator in node.decorator_list:
        if matches(resolve(_decorator_name(decorator)), ("dataclass", "dataclasses.dataclass")):
            keywords = decorator.keywords if isinstance(decorator, ast.Call) else []
            return all(_keeps_positions(k) for k in keywords)
    return False


def _keeps_positions(keyword: ast.keyword) -> bool:
    """A `@dataclass(...)` argument that leaves the generated positional `__init__` alone."""
    if keyword.arg not in ("kw_only", "init"):
        return True
    wanted = keyword.arg == "init"  # `init=True` and `kw_only=False` keep it; anything else, or unknown, does not
    return isinstance(keyword.value, ast.Constant) and bool(keyword.value.value) is wanted


def _in_init(statement: ast.AnnAssign) -> bool:
    """A field `__init__` takes positionally (not `field(init=False)` nor `field(kw_only=True)`)."""
    value = statement.value
    if not isinstance(value, ast.Call) or (ast_dotted_name(value.func) or "").rpartition(".")[2] != "field":
        return True
    for keyword in value.keywords:
        if keyword.arg == "init" and isinstance(keyword.value, ast.Constant) and keyword.value.value is False:
            return False
        if keyword.arg == "kw_only" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True:
            return False
    return True


def _self_attributes(
    method: ast.FunctionDef | ast.AsyncFunctionDef, resolve: Resolver,
    members: dict[str, TypeRef], assigned: dict[str, list[ast.expr]], parameters: dict[str, ast.expr],
) -> None:
    """`self.x: T = ...` declares a member; plain `self.x = ...` is remembered for inference, and the annotation
    of the parameter it sets `self.x` from (`self.x = x`, `x: T` a parameter of the method)."""
    if not method.args.args:
        return
    receiver = method.args.args[0].arg
    arguments = method.args
    annotated = {argument.arg: argument.annotation
                 for argument in (*arguments.posonlyargs, *arguments.args[1:], *arguments.kwonlyargs)
                 if argument.annotation is not None}
    stack: list[ast.AST] = list(method.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.AnnAssign) and _is_self_attribute(node.target, receiver):
            type_ = type_of_annotation(node.annotation, resolve)
            if type_ is not None:
                members.setdefault(node.target.attr, type_)  # type: ignore[union-attr]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if _is_self_attribute(target, receiver):
                    assigned.setdefault(target.attr, []).append(node.value)  # type: ignore[union-attr]
                    if isinstance(node.value, ast.Name) and node.value.id in annotated:
                        parameters[target.attr] = annotated[node.value.id]  # type: ignore[union-attr]
                elif isinstance(target, (ast.Tuple, ast.List)):
                    for element in target.elts:
                        if _is_self_attribute(element, receiver):
                            values = assigned.setdefault(element.attr, [])  # type: ignore[union-attr]
                            values.extend([node.value, node.value])  # unpacked: no single construction
        elif isinstance(node, ast.AugAssign) and _is_self_attribute(node.target, receiver):
            assigned.setdefault(node.target.attr, []).append(node.value)  # type: ignore[union-attr]
        if isinstance(node, ast.stmt):
            stack.extend(child_statements(node))


def _is_self_attribute(node: ast.expr, receiver: str) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == receiver


def _is_class_var(annotation: ast.expr, resolve: Resolver) -> bool:
    target = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return matches(resolve(ast_dotted_name(target) or ""), ("ClassVar",))


def _is_sentinel(node: ast.expr, resolve: Resolver, sentinels: tuple[str, ...]) -> bool:
    name = ast_dotted_name(node)
    return name is not None and matches(resolve(name), sentinels)


# ---------------------------------------------------------------- modules


def module_declarations(
    tree: ast.Module, module_name: str, imports: ImportTable, empty_sentinels: Iterable[str] = (),
    output_classes: Iterable[str] = (), path_names: Iterable[tuple[str, tuple[str, ...], tuple[str, ...]]] = (),
    optional_fields: Iterable[str] = (), text: str = "", statements: Iterable[ast.stmt] | None = None,
) -> list[Declaration]:
    """Every declaration of one module, in a stable order. Empty `output_classes` (the module names no
    output class nor sentinel) skips looking for producers; `path_names`, each invariant's name with the
    guards and contexts of it the module mentions, says whose connector paths to count calls on (as
    `invariant:name`). `text`, the module's source, says which attributes of `self` it only ever stores
    (`SelfStore`); without it none is declared. `statements`: the tree's `walk_statements`, where the caller
    walked it already."""
    called = None if statements is None else called_imports(statements, imports)
    return batch_declarations([tree], module_name, imports, top_level_types(tree.body), declared_exports(tree),
                              empty_sentinels, output_classes, path_names, optional_fields, text, called)


_TYPE_ALIAS = ("typing.TypeAlias", "typing_extensions.TypeAlias")


def _type_alias(statement: ast.stmt, resolve: Resolver) -> tuple[str, TypeRef] | None:
    """The name and meaning of a module-level type alias that declares a class or its Optional: one
    `TypeAlias` annotates, a `type` statement, or a bare assignment of an Optional (`X = Optional[A]`,
    `X = A | None`: a value no other statement spells). None for anything else."""
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
        annotated = ast_dotted_name(statement.annotation)
        if annotated is None or not matches(resolve(annotated), _TYPE_ALIAS):
            return None
        name, value = statement.target.id, statement.value
    elif _TYPE_STATEMENT is not None and isinstance(statement, _TYPE_STATEMENT) and not statement.type_params:
        name, value = statement.name.id, statement.value
    elif (isinstance(statement, ast.Assign) and len(statement.targets) == 1
          and isinstance(statement.targets[0], ast.Name) and _union_members(statement.value, resolve, 0)):
        name, value = statement.targets[0].id, statement.value
    else:
        return None
    type_ = type_of_annotation(value, resolve)
    if type_ is None or type_.kind != "class" or (isinstance(statement, ast.Assign) and not type_.optional):
        return None
    return name, type_


_TYPE_STATEMENT = getattr(ast, "TypeAlias", None)  # `type X = ...`, Python 3.12 and later


def top_level_types(statements: Iterable[ast.stmt]) -> set[str]:
    """The classes and type aliases a module defines at its top level: a name of one resolves to
    `module.Class`."""
    return {statement.name for statement in statements if isinstance(statement, ast.ClassDef)} | {
        name for name in map(_alias_name, statements) if name
    }


def _alias_name(statement: ast.stmt) -> str:
    """The name a statement may bind a type alias to, by its spelling alone (`_type_alias` says whether it
    does); "" for any other statement."""
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
        annotated = ast_dotted_name(statement.annotation) or ""
        return statement.target.id if annotated.rpartition(".")[2] == "TypeAlias" else ""
    if _TYPE_STATEMENT is not None and isinstance(statement, _TYPE_STATEMENT):
        return statement.name.id
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
        value = statement.value
        if isinstance(value, ast.Subscript) or (isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr)):
            return statement.targets[0].id
    return ""


def batch_declarations(
    batches: Iterable[ast.Module], module_name: str, imports: ImportTable, local_classes: Collection[str],
    exports: tuple[str, ...] | None, empty_sentinels: Iterable[str] = (), output_classes: Iterable[str] = (),
    path_names: Iterable[tuple[str, tuple[str, ...], tuple[str, ...]]] = (), optional_fields: Iterable[str] = (),
    text: str = "", called: Iterable[str] | None = None,
) -> list[Declaration]:
    """`module_declarations` of the module whose top-level statements are the bodies of `batches`, in order,
    each read once: a large file's cheap stage holds one batch's tree at a time (`engine.prepare_source`).
    What only the whole module says comes from the caller: its import table, its top-level classes and its
    `__all__` (`declared_exports`); `called`, the module's `called_imports`, where the caller has walked its
    statements already (else each batch's are walked here)."""
    resolve = _local_resolver(local_classes, module_name, imports)
    fields = tuple(optional_fields)
    sentinels = tuple(empty_sentinels)
    outputs = tuple(output_classes)
    found: list[Declaration] = []
    summaries: list[Summary] = []
    found_called: set[str] = set(called or ())
    counter = PathCallCounter(resolve, [entry for entry in path_names if entry[1] or entry[2]])
    on: frozenset[str] = frozenset()  # the invariants whose path the module's next statement is on
    for tree in batches:
        if called is None:
            found_called.update(called_imports(walk_statements(tree), imports))
        for statement in tree.body:
            alias = _type_alias(statement, resolve)
            if alias is not None:
                found.append(TypeAliasDecl(_join(module_name, alias[0]), alias[1]))
            elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                type_ = type_of_annotation(statement.annotation, resolve)
                if type_ is not None and type_.kind in ("class", "list", "dict"):
                    found.append(GlobalDecl(_join(module_name, statement.target.id), type_))
        stack: list[tuple[ast.AST, str]] = [(tree, module_name)]
        while stack:
            node, prefix = stack.pop()
            for child in child_statements(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    returns = type_of_annotation(child.returns, resolve)
                    qualname = _join(prefix, child.name)
                    produces = bool(outputs) and _returns_output(child, resolve, sentinels, outputs)
                    annotated = _annotated_classes(child.returns, resolve)
                    found.append(FunctionDecl(qualname, child.name, returns, _never_returns(child, returns, resolve),
                                              produces, isinstance(child, ast.AsyncFunctionDef), annotated,
                                              _tuple_returns(child, fields)))
                    if fields:  # a value stored on `self` matters where a return can drop it: in a producer
                        producer = produces or any(matches(name, outputs) for name in annotated)
                        summaries.extend(function_summaries(child, qualname, resolve, fields, stores=producer))
                    stack.append((child, f"{qualname}.<locals>"))
                elif isinstance(child, ast.ClassDef):
                    qualname = _join(prefix, child.name)
                    found.append(_class_decl(child, qualname, resolve, sentinels, fields))
                    stack.append((child, qualname))
                else:
                    stack.append((child, prefix))
        on = counter.block(tree.body, on)
        del tree, stack  # one batch's tree at a time: not this one while the next is parsed
    if module_name:
        found.append(ModuleDecl(module_name, tuple(sorted(imports.modules)), tuple(sorted(imports.bindings.items())),
                                tuple(sorted(found_called)), stars=imports.stars, exports=exports))
    found.extend(stored_only(summaries, module_name, text) if text
                 else [s for s in summaries if not isinstance(s, SelfStore)])
    if counter.counts:
        found.append(PathCalls(module_name, tuple(sorted(counter.counts.items()))))
    return sorted(found, key=lambda d: (type(d).__name__, getattr(d, "qualname", getattr(d, "module", "")),
                                        repr(d) if isinstance(d, (HolderUse, PassThrough, SelfStore)) else ""))


def declared_exports(tree: ast.Module) -> tuple[str, ...] | None:
    """The module's `__all__`, where only literal lists or tuples of strings build it at the top level
    (`__all__ = [...]`, `+= [...]`, `.extend([...])`, `.append("x")`); None when it has none, or when anything
    else touches it (`__all__ = base.__all__ + [...]`): then nobody can say statically what it holds."""
    found: list[str] | None = None
    for statement in tree.body:
        target = value = None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
            target, value = statement.target, statement.value
        elif (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
              and isinstance(statement.value.func, ast.Attribute)
              and isinstance(statement.value.func.value, ast.Name) and statement.value.func.value.id == "__all__"):
            call = statement.value
            if found is None or call.keywords or len(call.args) != 1:
                return None
            if call.func.attr == "append" and _string(call.args[0]) is not None:
                found.append(_string(call.args[0]))  # type: ignore[arg-type]
            elif call.func.attr == "extend" and _strings(call.args[0]) is not None:
                found.extend(_strings(call.args[0]))  # type: ignore[arg-type]
            else:
                return None
            continue
        if not (isinstance(target, ast.Name) and target.id == "__all__"):
            if not isinstance(statement, _SIMPLE) and _binds_all(statement):
                return None  # bound in a branch, a loop, a tuple: not followed
            continue
        names = _strings(value) if value is not None else None
        if names is None:
            return None
        if isinstance(statement, ast.AugAssign):
            if found is None or not isinstance(statement.op, ast.Add):
                return None
            found.extend(names)
        else:
            found = list(names)
    return None if found is None else tuple(found)


# top-level statements that cannot bind a module's `__all__` elsewhere than where `declared_exports` looks
_SIMPLE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Expr, ast.Return,
           ast.Pass, ast.Raise, ast.Assert, ast.Delete, ast.Global, ast.Nonlocal)


def _binds_all(statement: ast.stmt) -> bool:
    """Whether an assignment target inside a compound or unpacking statement is `__all__` (statements only)."""
    for node in walk_statements(statement):
        if isinstance(node, _DEFINITIONS):
            continue
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        for target in targets:
            if any(isinstance(name, ast.Name) and name.id == "__all__" for name in ast.walk(target)):
                return True
    return False


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _string(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _strings(node: ast.expr) -> list[str] | None:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    found = [_string(element) for element in node.elts]
    return None if None in found else found  # type: ignore[return-value]


PathNames = list[tuple[str, tuple[str, ...], tuple[str, ...]]]  # (invariant, the guards, the contexts mentioned)


def producer_facts_wanted(text: str, config: Config) -> tuple[tuple[str, ...], PathNames]:
    """What `module_declarations` needs of a relevant file's text to find its producers and its connector-path
    calls: the output classes when it names one or a sentinel (else none), and each invariant's name with the
    guards and contexts of it the text mentions. A `str.find` per name spares an `ast` walk."""

    def mentioned(names: Iterable[str]) -> tuple[str, ...]:
        return tuple(name for name in names if name.rpartition(".")[2] in text)

    outputs = config.output_classes if mentioned((*config.output_classes, *config.empty_sentinels)) else ()
    return outputs, [
        (invariant.name, mentioned(invariant.connector_guards), mentioned(invariant.connector_contexts))
        for invariant in config.invariants.invariants
    ]


def called_imports(statements: Iterable[ast.stmt], imports: ImportTable) -> tuple[str, ...]:
    """The imported functions a module calls where a call can end a path or narrow (`fail(...)` alone on a line,
    `if is_ready(x):`), resolved: the search path is asked for their declarations (`module_resolution`)."""
    found: set[str] = set()
    for node in statements:
        if isinstance(node, ast.Expr):
            candidates = [node.value]
        elif isinstance(node, (ast.If, ast.While, ast.Assert)):
            candidates = [node.test]
        else:
            continue
        while candidates:
            expression = candidates.pop()
            if isinstance(expression, ast.UnaryOp):
                candidates.append(expression.operand)
            elif isinstance(expression, ast.BoolOp):
                candidates.extend(expression.values)
            elif isinstance(expression, ast.Call):
                spelled = ast_dotted_name(expression.func)
                if spelled is not None and spelled.partition(".")[0] in imports.bindings:
                    found.add(imports.resolve_dotted(spelled))
                elif spelled is not None and "." not in spelled:  # `fail()` a star import may have bound
                    found.update(f"{star}.{spelled}" for star in imports.stars)
    return tuple(sorted(found))


def _annotated_classes(annotation: ast.expr | None, resolve: Resolver) -> tuple[str, ...]:
    """The classes a return annotation's union names, resolved, in order (not `None`, nor generics' arguments)."""
    found: list[str] = []
    stack = [annotation] if annotation is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            stack += [node.right, node.left]
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                stack.append(ast.parse(node.value.strip(), mode="eval").body)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass
            continue
        generic = _generic(node, resolve) if isinstance(node, ast.Subscript) else None
        if generic is not None and (matches(generic[0], (*_OPTIONAL, *_UNION)) or generic[0] in ("Optional", "Union")):
            stack += reversed(generic[1])
            continue
        type_ = type_of_annotation(node, resolve)
        if type_ is not None and type_.kind == "class" and type_.name not in found:
            found.append(type_.name)
    return tuple(found)


def _returns_output(
    node: ast.FunctionDef | ast.AsyncFunctionDef, resolve: Resolver, sentinels: tuple[str, ...],
    outputs: tuple[str, ...],
) -> bool:
    """Some `return` of the function (not of a nested one) gives the sentinel or builds an output."""
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Return) and current.value is not None:
            value = current.value
            if isinstance(value, ast.Call) and ast_dotted_name(value.func) in _COPIES and value.args:
                value = value.args[0]  # `return copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)`
            target = value.func if isinstance(value, ast.Call) else value
            name = ast_dotted_name(target)
            if name is not None and matches(resolve(name), outputs if isinstance(value, ast.Call) else sentinels):
                return True
        if isinstance(current, (ast.Assign, ast.AnnAssign, ast.Expr)) and isinstance(current.value, ast.Call):
            name = ast_dotted_name(current.value.func)  # it builds an output, to return it (or a wrapper) later
            if name is not None and matches(resolve(name), outputs):
                return True
        nested = isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if isinstance(current, ast.stmt) and not nested:
            stack.extend(child_statements(current))
    return False


class PathCallCounter:
    """Count the calls a module returns or drops the result of where a connector is syntactically active: inside
    `if guard():`, after `if not guard(): <exit>` or `assert guard()`, inside or after `with connector_context(...)`.

    Only statements; a return's or an expression statement's value is read where found on such a path, so a module
    without guards costs one statement walk, whatever the number of invariants: each statement is
    visited once with the set of invariants whose path it is on. The tree index compares these counts
    with every mention of a name in the tree: a function all of whose mentions are such calls is on a path.
    """

    def __init__(self, resolve: Resolver, path_names: Iterable[tuple[str, tuple[str, ...], tuple[str, ...]]]):
        self.resolve = resolve
        self.path_names = tuple(path_names)  # (invariant, its guards, its contexts)
        self.counts: dict[str, int] = {}  # `invariant:name`

    def count(self, tree: ast.Module) -> dict[str, int]:
        self.block(tree.body, frozenset())
        return self.counts

    def block(self, statements: list[ast.stmt], on: frozenset[str]) -> frozenset[str]:
        """Count the calls of these statements, the first of them on the paths of `on`; return the invariants
        whose path the statement after them is on (a module's next batch of statements)."""
        return self._block(statements, on) if self.path_names else on

    def _is(self, node: ast.expr, names: tuple[str, ...]) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = ast_dotted_name(node.func)
        return name is not None and matches(self.resolve(name), names)

    def _polarity(self, test: ast.expr, guards: tuple[str, ...]) -> int:
        """+1: true only with a connector; -1: `not guard()`; 0: says nothing."""
        if self._is(test, guards):
            return 1
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and self._is(test.operand, guards):
            return -1
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return 1 if any(self._polarity(value, guards) == 1 for value in test.values) else 0
        return 0

    def _guarded(self, test: ast.expr) -> tuple[frozenset[str], frozenset[str]]:
        """The invariants whose guard the test asserts, and those whose guard it denies."""
        polarities = [(name, self._polarity(test, guards)) for name, guards, _ in self.path_names]
        return (frozenset(name for name, polarity in polarities if polarity == 1),
                frozenset(name for name, polarity in polarities if polarity == -1))

    def _block(self, statements: list[ast.stmt], on: frozenset[str]) -> frozenset[str]:
        for statement in statements:
            on = self._statement(statement, on)
        return on

    def _statement(self, node: ast.stmt, on: frozenset[str]) -> frozenset[str]:
        """Visit one statement; return the invariants whose path the statements after it are on."""
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._block(node.body, frozenset())  # defined here, called who knows where
            return on
        if on:
            self._calls(node, on)
        if isinstance(node, ast.If):
            asserted, denied = self._guarded(node.test)
            self._block(node.body, on | asserted)
            self._block(node.orelse, on | denied)
            if denied and node.body and isinstance(node.body[-1], _EXITS) and not node.orelse:
                return on | denied
            return on
        if isinstance(node, ast.Assert):
            return on | self._guarded(node.test)[0]
        if isinstance(node, (ast.With, ast.AsyncWith)):
            inside = on | {
                name for name, _, contexts in self.path_names
                if any(self._is(item.context_expr, contexts) for item in node.items)
            }
            self._block(node.body, inside)
            return inside
        for child in child_statements(node):
            if isinstance(child, ast.stmt):
                self._statement(child, on)
            else:  # an except handler or a match case: its body
                self._block(getattr(child, "body", []), on)
        return on

    def _calls(self, node: ast.stmt, on: frozenset[str]) -> None:
        """Count the calls whose result the statement returns as it is (`return self.kv_no_forward(...)`) or
        drops (`self.flush()` alone), for each invariant whose path the statement is on. A call whose result
        the caller keeps, completes or passes on (`out = self._bare_output(); out.kv_connector_output = kvo`)
        is not counted: the caller, not the callee, then answers for the connector output, and the uncounted
        mention keeps the callee off the path."""
        if not isinstance(node, (ast.Return, ast.Expr)) or node.value is None:
            return
        stack: list[ast.expr] = [node.value]
        while stack:
            current = stack.pop()
            if isinstance(current, ast.IfExp):  # `return self.a() if x else self.b()`: either is returned
                stack += [current.body, current.orelse]
            elif isinstance(current, ast.Await):
                stack.append(current.value)
            elif isinstance(current, ast.Call):
                target = current.func  # `obj.name(...)` can only be a method; `name(...)` only a function
                name = f".{target.attr}" if isinstance(target, ast.Attribute) else getattr(target, "id", None)
                if name:
                    for invariant in on:
                        key = f"{invariant}:{name}"
                        self.counts[key] = self.counts.get(key, 0) + 1


_COPIES = frozenset({"copy", "deepcopy", "replace", "copy.copy", "copy.deepcopy", "dataclasses.replace"})
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _local_resolver(local: Collection[str], module_name: str, imports: ImportTable) -> Resolver:
    """Resolve through imports, and a class defined at the module's top level (`local`) to `module.Class`."""

    def resolve(spelled: str) -> str:
        root = spelled.partition(".")[0]
        if root in local and root not in imports.bindings:
            return _join(module_name, spelled)
        return imports.resolve_dotted(spelled)

    return resolve

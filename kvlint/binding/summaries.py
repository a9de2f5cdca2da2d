"""What a caller does with a holder a callee returned: the other half of a parked KV output.

A runner on a pipeline rank other than the last parks the step's KV output on the intermediate tensors
it returns (`hidden_states.kv_connector_output = kvo; return hidden_states`). Whether the KV output
reaches the aggregator is then decided by the worker that called it: one that reads the parked field
back (or hands the holder itself on) keeps it; one that sends only `.tensors` and returns `None` drops
it. vLLM 0.22's newer model runner shipped that drop.

This module reads, per function and from `ast` alone, every such use of a holder: a name bound from a
call (`out = self.model_runner.execute_model(...)`), tested `isinstance(out, Holder)` (an `assert`, or an
`if` whose body ends in a `return`), and what the code under that test does with the name. The flow
analysis of the callee asks the tree index for the uses of its own name and returned classes
(`TreeIndex.holder_uses`); only when every caller that knows the class drops the holder is the park a
drop (KVC006). Anything else the caller does with the name (passes it, returns it, stores it, calls a
method on it, reads the parked field, rebinds it) keeps it: silence over a guess.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from kvlint.binding.names import ast_dotted_name, child_statements

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True)
class HolderUse:
    """`caller` binds `name` from a call of `method` and, where it is a `holder`, keeps it or drops it.

    `line` is the line of the statement that ends the code under the test (the `return` that drops it),
    or of the test itself where the holder is kept."""

    caller: str  # module.Class.method
    method: str  # the called function's or method's own name, as the call spells it
    holder: str  # the class of the `isinstance` test, resolved through the module's imports
    drops: bool
    line: int

    def to_json(self) -> list[object]:
        return ["h", self.caller, self.method, self.holder, self.drops, self.line]

    @classmethod
    def from_json(cls, data: list[object]) -> HolderUse:
        _, caller, method, holder, drops, line = data
        return cls(str(caller), str(method), str(holder), bool(drops), int(line))  # type: ignore[call-overload]


@dataclass(frozen=True)
class PassThrough:
    """`caller` returns what a call of `method` returned, untouched (`out = self._execute_model(...)`;
    `return out`): its own callers are the callee's callers."""

    caller: str  # module.Class.method
    method: str

    def to_json(self) -> list[object]:
        return ["t", self.caller, self.method]

    @classmethod
    def from_json(cls, data: list[object]) -> PassThrough:
        _, caller, method = data
        return cls(str(caller), str(method))


@dataclass(frozen=True)
class ParkedReturn:
    """`name` sets an optional field on a local name and returns that name (`hidden_states.kv_connector_output
    = kvo`; `return hidden_states`): its callers decide whether the value is lost. A file checked alone asks
    the rest of the project for them (`module_resolution.caller_declarations`)."""

    qualname: str
    name: str

    def to_json(self) -> list[object]:
        return ["r", self.qualname, self.name]

    @classmethod
    def from_json(cls, data: list[object]) -> ParkedReturn:
        _, qualname, name = data
        return cls(str(qualname), str(name))


@dataclass(frozen=True)
class SelfStore:
    """The `methods` of `module` (producers) store a value on `self.attribute` (`self._pending = kvo`, a tuple,
    `self._pending = out.kv_connector_output`), and each of the `mentions` of the attribute's name in the
    module is a store: unless another file of the project names it, nothing reads the value back
    (`TreeIndex.settle_unread_attributes`), and a KV output parked there is lost (KVC006)."""

    module: str
    attribute: str
    mentions: int
    methods: tuple[str, ...]

    def to_json(self) -> list[object]:
        return ["s", self.module, self.attribute, self.mentions, list(self.methods)]

    @classmethod
    def from_json(cls, data: list[object]) -> SelfStore:
        _, module, attribute, mentions, methods = data
        return cls(str(module), str(attribute), int(mentions), tuple(map(str, methods)))  # type: ignore[call-overload]


Summary = HolderUse | PassThrough | ParkedReturn | SelfStore


def function_summaries(
    function: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str, resolve: Callable[[str], str],
    fields: tuple[str, ...], stores: bool = True,
) -> list[Summary]:
    """Every use of a holder in the function's own body (nested functions are their own callers), the calls
    whose result it returns as it is, whether it returns a holder it parked an optional field on, and, with
    `stores`, the attributes of `self` it stores a value on (to be counted in the module: `stored_only`)."""
    parameters = {arg.arg for arg in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    called: dict[str, set[str]] = {}  # name -> the methods it is bound from
    tested: set[str] = set()  # the names an `assert` or `if` tests with `isinstance`
    parked: set[str] = set()  # the local names an optional field is set on
    returned: set[str] = set()  # the names it returns
    stored: set[str] = set()  # the attributes of `self` it stores a value on
    receiver = function.args.args[0].arg if function.args.args else ""
    for node in _own_nodes(function.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            method = _called_name(node.value)
            if method is not None:
                called.setdefault(node.targets[0].id, set()).add(method)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute):
            target = node.targets[0]
            if target.attr in fields and isinstance(target.value, ast.Name) and target.value.id not in ("self", "cls"):
                parked.add(target.value.id)
            elif stores and receiver == "self" and isinstance(target.value, ast.Name) and target.value.id == "self":
                stored.add(target.attr)  # whatever it stores: the flow analysis says whether it is a KV output
        elif isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            returned.add(node.value.id)
        elif isinstance(node, (ast.Assert, ast.If)) and isinstance(node.test, ast.Call) and node.test.args:
            subject = node.test.args[0]
            if isinstance(subject, ast.Name):
                tested.add(subject.id)
    found: list[Summary] = [ParkedReturn(qualname, function.name)] if parked & returned else []
    found.extend(SelfStore("", attribute, 0, (qualname,)) for attribute in sorted(stored))
    for name, methods in called.items():
        if name in parameters:
            continue
        if name in returned and _only_returned(function, name, len(methods)):
            found.extend(PassThrough(qualname, method) for method in sorted(methods))
        if name not in tested:
            continue
        for holder, region, end, test_line in _holder_regions(function.body, name, top_level=True):
            drops = end is not None and not _keeps(region, name, fields)
            resolved = resolve(holder)
            found.extend(
                HolderUse(qualname, method, resolved, drops, end if drops and end else test_line)
                for method in sorted(methods)
            )
    return found


# after `.name`: `= ...` (not `==`; `+=` reads it), or an annotation and `=` (`self.name: T = ...`)
_STORE = re.compile(r"[ \t]*=(?!=)")
_ANNOTATED = re.compile(r"[ \t]*:[^=\n]*=(?!=)")
_WORD_CHAR = re.compile(r"\w")
# how a module reads attributes by a computed name: then any of them may be read
DYNAMIC_ACCESS = ("getattr(", "__dict__", "vars(", "__getstate__", "__reduce", "asdict(", "astuple(", "inspect.")


def stored_only(summaries: list[Summary], module: str, text: str) -> list[Summary]:
    """The module's summaries, with its methods' `SelfStore`s made one per attribute that is stored only in
    the text (`only_stored_in`), with the count of those stores; the others dropped."""
    methods: dict[str, list[str]] = {}
    for summary in summaries:
        if isinstance(summary, SelfStore):
            methods.setdefault(summary.attribute, []).extend(summary.methods)
    kept: list[Summary] = [summary for summary in summaries if not isinstance(summary, SelfStore)]
    for name, stores in sorted(only_stored_in(text, methods).items()):
        kept.append(SelfStore(module, name, stores, tuple(sorted(methods[name]))))
    return kept


def only_stored_in(text: str, names: Iterable[str]) -> dict[str, int]:
    """Those of `names` every mention of which in the text is a store on an attribute of that name
    (`x.name = ...`, `self.name: T = ...`), with that count; none where the text reads attributes by a
    computed name (`getattr(`, `vars(`, `__dict__`...), which may read any. Mentions are words of the text
    (comments and strings count: silence over a guess)."""
    wanted = set(names)
    if not wanted or any(spelling in text for spelling in DYNAMIC_ACCESS):
        return {}
    found = {name: _stores(text, name) for name in wanted}
    return {name: count for name, count in found.items() if count}


def _stores(text: str, name: str) -> int:
    """How many stores on an attribute `name` the text makes, where each mention of the word is one; else 0.
    A `str.find` per mention, ended by the first mention that is not a store (most names are read early)."""
    stores = 0
    position = text.find(name)
    while position >= 0:
        end = position + len(name)
        if (position and _WORD_CHAR.match(text, position - 1)) or _WORD_CHAR.match(text, end):
            position = text.find(name, end)
            continue  # part of a longer word
        line = text.rfind("\n", 0, position) + 1
        if not (text[position - 1 : position] == "." and (_STORE.match(text, end) or (
                _ANNOTATED.match(text, end) and text[line:position].strip(" \t") == "self."))):
            return 0
        stores += 1
        position = text.find(name, end)
    return stores


def _only_returned(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, bindings: int) -> bool:
    """The name is bound once from a call (`bindings` is 1) and only ever read as the value of a `return`."""
    if bindings != 1:
        return False
    returned: set[int] = set()
    loads = stores = 0
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id == name:
            returned.add(id(node.value))
        elif isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load) and id(node) not in returned:
                return False
            stores += isinstance(node.ctx, (ast.Store, ast.Del))
            loads += isinstance(node.ctx, ast.Load)
        stack.extend(ast.iter_child_nodes(node))
    return stores == 1 and loads > 0


def _called_name(value: ast.expr) -> str | None:
    """`self.runner.execute_model(...)` or `execute_model(...)` (awaited or not): `execute_model`."""
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call):
        return None
    if isinstance(value.func, ast.Attribute):
        return value.func.attr
    return value.func.id if isinstance(value.func, ast.Name) else None


def _holder_regions(
    block: list[ast.stmt], name: str, top_level: bool,
) -> Iterator[tuple[str, list[ast.stmt], int | None, int]]:
    """(holder class as spelled, the statements under `isinstance(name, holder)`, the line of the statement
    that ends them or None when they fall through to code this walk does not follow, the test's line)."""
    for position, statement in enumerate(block):
        holder = _isinstance_of(statement.test, name) if isinstance(statement, (ast.Assert, ast.If)) else None
        if holder is not None and isinstance(statement, ast.Assert):
            region = block[position + 1:]
            if region and isinstance(region[-1], ast.Return):
                end: int | None = region[-1].lineno
            else:  # the function's own body falls off its end: it returns None there
                end = _last_line(block) if top_level and region else None
            yield holder, region, end, statement.lineno
            return  # the rest of this block is the region: nothing after the assert is tested again
        if holder is not None:
            body = statement.body  # type: ignore[attr-defined]
            yield holder, body, body[-1].lineno if isinstance(body[-1], ast.Return) else None, statement.lineno
            yield from _holder_regions(statement.orelse, name, top_level=False)  # type: ignore[attr-defined]
            continue
        if isinstance(statement, _SCOPES):
            continue
        for inner in _blocks_of(statement):
            yield from _holder_regions(inner, name, top_level=False)


def _blocks_of(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists directly inside a compound statement (an except handler's, a match case's too)."""
    blocks = [getattr(statement, field) for field in ("body", "orelse", "finalbody") if getattr(statement, field, None)]
    for child in (*getattr(statement, "handlers", ()), *getattr(statement, "cases", ())):
        blocks.append(child.body)
    return blocks


def _isinstance_of(test: ast.expr, name: str) -> str | None:
    """`isinstance(name, Holder)` (one class, spelled as a dotted name): `Holder`."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance"
            and len(test.args) == 2 and not test.keywords):
        return None
    subject, holder = test.args
    if not (isinstance(subject, ast.Name) and subject.id == name):
        return None
    return ast_dotted_name(holder)


def _keeps(region: list[ast.stmt], name: str, fields: tuple[str, ...]) -> bool:
    """Does the code under the test hand the holder (or its parked field) on? Only two uses of the name
    drop it: reading an attribute that is not a parked field (`out.tensors`), and an `isinstance` test."""
    allowed: set[int] = set()  # the `ast.Name` nodes whose use is one of those two
    nodes = [node for statement in region for node in ast.walk(statement)]
    for node in nodes:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
            if node.attr in fields or not isinstance(node.ctx, ast.Load):
                return True
            allowed.add(id(node.value))
        elif isinstance(node, ast.Call) and _isinstance_of(node, name) is not None:
            allowed.add(id(node.args[0]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            isinstance(node.func.value, ast.Name) and node.func.value.id == name
        ):
            return True  # `out.to_torch()`: a method of the holder may read the parked field itself
    # any other use: passed, returned, stored, compared, rebound, deleted, captured by a nested function
    return any(isinstance(node, ast.Name) and node.id == name and id(node) not in allowed for node in nodes)


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The statements of a body at any depth, not entering nested functions or classes."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(child_statements(node))


def _last_line(block: list[ast.stmt]) -> int:
    """Where a body that falls off its end returns None: its last statement's last line."""
    last = block[-1]
    return getattr(last, "end_lineno", None) or last.lineno


def is_test_module(module: str) -> bool:
    """A module of test code (`tests.worker.test_runner`, `pkg.conftest`): a test that calls a runner and
    looks only at `.tensors` checks the tensors; it is no caller that should receive the KV output."""
    parts = module.split(".")
    return any(part in ("test", "tests") or part.startswith("test_") or part.endswith("_test") or part == "conftest"
               for part in parts)

"""The tree-wide declaration index: every file's declarations, merged and looked up by class.

Built before the per-file pass from each file's `ast` (cheap), so a call in one
file to a method declared Optional in another is a KVC001 source, and a field
declared non-Optional in a wrapper class is not one anywhere. Lookups go
through the receiver's class and its bases, as a type checker's would. Only a
receiver of unknown class falls back to names: a method call `obj.name()` is a
source when every definition of that name in the tree returns Optional
(precision first: one non-Optional definition and the call is not a source).
It also knows which producers are only ever called on a connector path.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import chain
from typing import TypeVar

from kvlint.byte_scan import mentions_any
from kvlint.binding.declarations import (
    KNOWN_NO_RETURN, AttributeReads, ClassDecl, Declaration, FunctionDecl, GlobalDecl, Mentions, ModuleDecl, PathCalls,
    TypeAliasDecl,
    TypeRef,
)
from kvlint.binding.names import ImportTable, matches
from kvlint.binding.summaries import HolderUse, PassThrough, SelfStore
from kvlint.binding.words import word_count, word_mentions

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from kvlint.config import Config

MAX_BASE_DEPTH = 12
_Typed = TypeVar("_Typed", bound=Declaration)
_IMPLICIT_BASES = ("object", "typing.Generic", "typing.Protocol", "typing.NamedTuple", "abc.ABC", "enum.Enum")


def file_index(
    declarations: Iterable[Declaration], texts: Sequence[str], payload_classes: tuple[str, ...]
) -> TreeIndex:
    """The index of a file checked on its own, with what its imports and the project beyond it declare, as
    `kvlint check FILE` builds it (no file of that run is skipped): `texts`, the file's own text, settle its
    connector callees and the attributes it only ever stores. The flake8 and mypy faces use it."""
    index = TreeIndex(declarations, payload_classes=payload_classes)
    index.settle_connector_callees(index.path_only_callees(texts) if index.callee_candidates() else {}, ())
    index.settle_unread_attributes(index.only_stored_attributes(texts), ())
    return index


def returns_optional_payload(decl: FunctionDecl, payload_classes: tuple[str, ...]) -> bool:
    """The function is declared to return the payload class or None."""
    returns = decl.returns
    if returns is None or returns.kind != "class":
        return False
    return returns.optional and matches(returns.name, payload_classes)


def _holds(type_: TypeRef, payload: tuple[str, ...]) -> bool:
    """The type is the payload class, or a container of it."""
    while type_.kind in ("list", "dict") and type_.element is not None:
        type_ = type_.element
    return type_.kind == "class" and matches(type_.name, payload)


class TreeIndex:
    """Answers what the tree declares: return types, class members, globals, functions that never return."""

    def __init__(
        self, declarations: Iterable[Declaration] = (), payload_classes: tuple[str, ...] = ("KVConnectorOutput",),
    ):
        declarations = list(declarations)
        payload = payload_classes
        self.functions: dict[str, FunctionDecl] = {}
        self.classes: dict[str, ClassDecl] = {}
        self.globals: dict[str, TypeRef] = {}
        self._mro: dict[str, list[ClassDecl]] = {}  # lookups repeat for every attribute read of `self`
        # calls made where an invariant's connector is active: `kv:.name` (methods), `kv:name` (functions)
        self.path_calls: dict[str, int] = {}
        # functions only ever called there: `.name` or `name` -> the invariants whose path it is on
        self.connector_callees: dict[str, tuple[str, ...]] = {}
        # each module of the run and what its imports name: which declarations a module can reach
        self.modules: dict[str, tuple[str, ...]] = {}
        self._aliases: dict[str, dict[str, str]] = {}  # module -> the names its imports bind (re-exports)
        self._stars: dict[str, tuple[str, ...]] = {}  # module -> the modules it star-imports
        self._exports: dict[str, frozenset[str]] = {}  # module -> its literal `__all__`, where it declares one
        self.outside_modules: set[str] = set()  # read beyond the run's files: declarations, never callers
        self._reachable: dict[str, frozenset[str]] = {}
        # by the called name: what each caller does with a holder that call returned (`binding.summaries`)
        self._holder_uses: dict[str, list[HolderUse]] = {}
        self._pass_throughs: dict[str, list[str]] = {}  # by the called name: the functions returning its result
        # how the project's files beyond the run name the run's producers (the hook's view: `Mentions`)
        self._project_mentions: list[Mentions] = []
        # attributes of `self` a method stores a local name on, with the stores each file makes of them, where
        # they are all that file says of them (`SelfStore`); those nothing reads back (`settle_unread_attributes`)
        self.stored_attributes: dict[str, int] = {}
        self.unread_attributes: frozenset[str] = frozenset()
        self._attribute_reads: list[AttributeReads] = []  # what the project beyond the run names of them
        classes_by_name: dict[str, list[ClassDecl]] = {}
        ambiguous: set[str] = set()  # two files of one module name (scripts without packages): trust neither
        for decl in declarations:
            if isinstance(decl, FunctionDecl):
                if self.functions.setdefault(decl.qualname, decl) != decl:
                    ambiguous.add(decl.qualname)
            elif isinstance(decl, ClassDecl):
                if self.classes.setdefault(decl.qualname, decl) != decl:
                    ambiguous.add(decl.qualname)
                classes_by_name.setdefault(decl.name, []).append(decl)
            elif isinstance(decl, GlobalDecl):
                if self.globals.setdefault(decl.qualname, decl.type) != decl.type:
                    ambiguous.add(decl.qualname)
            elif isinstance(decl, PathCalls):
                for name, count in decl.counts:
                    self.path_calls[name] = self.path_calls.get(name, 0) + count
            elif isinstance(decl, HolderUse):
                self._holder_uses.setdefault(decl.method, []).append(decl)
            elif isinstance(decl, PassThrough):
                self._pass_throughs.setdefault(decl.method, []).append(decl.caller)
            elif isinstance(decl, Mentions):
                self._project_mentions.append(decl)
            elif isinstance(decl, SelfStore):
                self.stored_attributes[decl.attribute] = self.stored_attributes.get(decl.attribute, 0) + decl.mentions
            elif isinstance(decl, AttributeReads):
                self._attribute_reads.append(decl)
            elif isinstance(decl, ModuleDecl):
                if self.modules.setdefault(decl.module, decl.imports) != decl.imports:
                    self.modules[decl.module] = tuple(sorted({*self.modules[decl.module], *decl.imports}))
                self._aliases.setdefault(decl.module, {}).update(decl.aliases)
                if decl.stars:
                    self._stars[decl.module] = decl.stars
                if decl.exports is not None:
                    self._exports[decl.module] = frozenset(decl.exports)
                if decl.outside:
                    self.outside_modules.add(decl.module)
        for qualname in ambiguous:
            self.functions.pop(qualname, None)
            self.classes.pop(qualname, None)
            self.globals.pop(qualname, None)
        # `MaybeKVOutput: TypeAlias = Optional[KVConnectorOutput]`: every declaration naming it means its target
        self.type_aliases = {d.qualname: d.type for d in declarations if isinstance(d, TypeAliasDecl)}
        if self.type_aliases:
            declarations = [self._aliases_expanded(decl) for decl in declarations]
            self.functions = {name: self._aliases_expanded(decl) for name, decl in self.functions.items()}
            self.classes = {name: self._aliases_expanded(decl) for name, decl in self.classes.items()}
            self.globals = {name: self.expand_type_aliases(type_) for name, type_ in self.globals.items()}
            classes_by_name = {name: [self.classes.get(d.qualname, d) for d in found]
                               for name, found in classes_by_name.items()}
        self._classes_by_name = {name: tuple(found) for name, found in classes_by_name.items()}
        # every dotted prefix of a declared name: the modules (and classes) the tree holds
        scopes: set[str] = set()
        for qualname in chain(self.classes, self.functions):
            while "." in qualname:
                qualname = qualname.rpartition(".")[0]
                if qualname in scopes:
                    break
                scopes.add(qualname)
        self._scopes = frozenset(scopes)
        functions = [d for d in declarations if isinstance(d, FunctionDecl)]
        optional = [d for d in functions if returns_optional_payload(d, payload)]
        # the payload class each Optional-returning function declares (which invariant its value belongs to)
        self.optional_qualnames = {d.qualname: d.returns.name for d in optional if d.returns is not None}
        self.payload_names = frozenset(
            [name for decl in self.classes.values() for name, type_ in decl.members if _holds(type_, payload)]
            + [d.name for d in functions if d.returns is not None and _holds(d.returns, payload)]
            + [q.rpartition(".")[2] for q, type_ in self.globals.items() if _holds(type_, payload)]
            + [name for decl in self.classes.values() for name in decl.sentinel_members]  # `self._EMPTY.x = ...`
        )

    def expand_type_aliases(self, type_: TypeRef | None) -> TypeRef | None:
        """What a type names once the tree's type aliases are followed (`MaybeKVOutput` is
        `KVConnectorOutput | None`), through the re-exports on the alias's way; the type itself when it names
        none."""
        for _ in range(MAX_BASE_DEPTH):
            if type_ is None or not self.type_aliases:
                return type_
            if type_.kind in ("list", "dict") and type_.element is not None:
                element = self.expand_type_aliases(type_.element)
                return type_ if element == type_.element else dataclasses.replace(type_, element=element)
            if type_.kind != "class":
                return type_
            target = self.type_aliases.get(type_.name) or self.type_aliases.get(self.canonical(type_.name))
            if target is None:
                return type_
            type_ = dataclasses.replace(target, optional=target.optional or type_.optional)
        return type_

    def _aliases_expanded(self, decl: _Typed) -> _Typed:
        """A declaration with the type aliases its types name followed."""
        if isinstance(decl, FunctionDecl) and decl.returns is not None:
            returns = self.expand_type_aliases(decl.returns)
            return decl if returns == decl.returns else dataclasses.replace(decl, returns=returns)
        if isinstance(decl, ClassDecl) and decl.members:
            members = tuple((name, self.expand_type_aliases(type_) or type_) for name, type_ in decl.members)
            return decl if members == decl.members else dataclasses.replace(decl, members=members)
        if isinstance(decl, GlobalDecl):
            type_ = self.expand_type_aliases(decl.type) or decl.type
            return decl if type_ == decl.type else dataclasses.replace(decl, type=type_)
        return decl

    def candidate_names(self) -> frozenset[str]:
        """Names whose mention makes a file worth analysing: what is declared to hold or return the payload,
        and class attributes bound to the empty sentinel."""
        return frozenset(q.rpartition(".")[2] for q in self.optional_qualnames) | self.payload_names

    def key(self) -> list[object]:
        """Everything a file's report may depend on, for the result cache's key."""
        return [
            # `returns_output` matters to its own file (keyed by content) and through `connector_callees`
            sorted([d.to_json()[:-1] for d in self.functions.values()], key=repr),
            sorted([d.to_json() for d in self.classes.values()], key=repr),
            sorted([[q, t.to_json()] for q, t in self.globals.items()], key=repr),
            sorted(self.connector_callees.items()),
            # what each module imports and re-exports decides what the others reach
            sorted(self.modules.items()),
            sorted((module, sorted(aliases.items())) for module, aliases in self._aliases.items()),
            sorted(self._stars.items()),
            sorted((module, sorted(names)) for module, names in self._exports.items()),
            sorted(self.outside_modules),
            sorted(use.to_json() for uses in self._holder_uses.values() for use in uses),
            sorted((method, sorted(callers)) for method, callers in self._pass_throughs.items()),
            sorted(decl.to_json() for decl in self._project_mentions),
            sorted(self.unread_attributes),  # what the flow analysis asks of the stored-only attributes
        ]

    def callee_candidates(self) -> list[str]:
        """Functions that return an output and are called on a connector path somewhere: if every mention
        of the name in the tree is such a call, the function is on a connector path itself."""
        defined: dict[str, int] = {}
        own = [d for d in self.functions.values() if self.module_of(d.qualname) not in self.outside_modules]
        for decl in own:
            defined[decl.name] = defined.get(decl.name, 0) + 1
        for mentions in self._project_mentions:  # a project file beyond the run defining one of the names too
            for name, count in mentions.definitions:
                defined[name] = defined.get(name, 0) + count
        producing = {self._call_key(d) for d in own if d.returns_output and defined[d.name] == 1}
        return sorted(key for key in self.path_calls if key.partition(":")[2] in producing)

    def _call_key(self, decl: FunctionDecl) -> str:
        """How calls of the function are counted: `.name` for a method, `name` for a function."""
        return f".{decl.name}" if decl.qualname.rpartition(".")[0] in self.classes else decl.name

    def callee_names(self) -> tuple[str, ...]:
        """The names of the callee candidates, as a text mentions them."""
        return tuple(sorted({key.partition(":")[2].lstrip(".") for key in self.callee_candidates()}))

    def counted_names(self) -> tuple[str, ...]:
        """The names whose mentions in a file's text decide the index beyond its declarations: the callee
        candidates' (`path_only_callees`) and the stored-only attributes' (`only_stored_attributes`)."""
        return (*self.callee_names(), *sorted(self.stored_attributes))

    def path_only_callees(self, relevant_texts: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The candidates every mention of which in the relevant texts is a counted call: `.name` or `name`
        -> the invariants whose path those calls are on. Each is a connector callee unless a file outside
        the texts (one the byte scan skipped) names it too (`settle_connector_callees`)."""
        wanted = set(self.callee_names())
        mentions: Counter[str] = Counter()
        for text in relevant_texts:
            if mentions_any(text, wanted):  # most texts name none of them
                mentions.update(word_mentions(text, wanted))
        for project in self._project_mentions:
            if not project.skipped:
                mentions.update(dict(project.words))
        found: dict[str, tuple[str, ...]] = {}
        for key in self.callee_candidates():
            invariant, _, call = key.partition(":")
            if mentions[call.lstrip(".")] == self.path_calls[key]:  # else also called, or named, off the path
                found[call] = (*found.get(call, ()), invariant)
        return found

    def settle_connector_callees(self, path_only: dict[str, tuple[str, ...]], named_elsewhere: Collection[str]) -> None:
        """Keep those of `path_only_callees` that no other file names (the other files have no guard at all),
        in the run or, for the hook, in the project beyond it."""
        named = {name for project in self._project_mentions if project.skipped for name, _ in project.words}
        self.connector_callees = {
            call: invariants for call, invariants in path_only.items()
            if call.lstrip(".") not in named_elsewhere and call.lstrip(".") not in named
        }

    def only_stored_attributes(self, relevant_texts: Sequence[str]) -> frozenset[str]:
        """The stored-only attributes (`SelfStore`) no relevant text names but for those stores (their words
        over the texts add up to the stores the storing modules counted) and no project file beyond the run
        names. Each is read nowhere unless a file the byte scan skipped names it (`settle_unread_attributes`)."""
        wanted = set(self.stored_attributes)
        if not wanted:
            return frozenset()
        counts: Counter[str] = Counter()
        for text in relevant_texts:
            if mentions_any(text, wanted):
                counts.update(word_count(text, wanted))
        named = {name for reads in self._attribute_reads for name in reads.names}
        return frozenset(name for name in wanted if counts[name] == self.stored_attributes[name] and name not in named)

    def settle_unread_attributes(self, only_stored: Collection[str], named_elsewhere: Collection[str]) -> None:
        """Keep those of `only_stored_attributes` that no file the byte scan skipped names."""
        self.unread_attributes = frozenset(name for name in only_stored if name not in named_elsewhere)

    # ------------------------------------------------------------ functions

    def returns_optional(self, callee: str, module_name: str) -> tuple[str, ...] | None:
        """The payload class a call to the resolved callee (a function, or a method by its qualified name) is
        declared to return Optional; None when it returns no Optional payload. A method called on a receiver of
        unknown class (`step.result()`) resolves to nothing: what its name is declared to return elsewhere,
        perhaps by another library's class, says nothing about it."""
        for name in (callee, f"{module_name}.{callee}"):
            if name in self.optional_qualnames:
                return (self.optional_qualnames[name],)
        return None

    def optional_qualname(self, callee: str, module_name: str) -> str:
        """The qualified name of the one function a resolved callee names that is declared Optional ("" when the
        name fallback found it: several definitions of a method name)."""
        for name in (callee, f"{module_name}.{callee}"):
            if name in self.optional_qualnames:
                return name
        return ""

    def function(self, callee: str, module_name: str) -> FunctionDecl | None:
        """The declaration of a resolved function name (`pkg.mod.f`, or `f` of this module), through re-exports
        and, for a name no import binds, the module's star imports."""
        found = (self.functions.get(callee) or self.functions.get(f"{module_name}.{callee}")
                 or self.functions.get(self.canonical(callee)))
        if found is None and "." not in callee:
            target = self._star_target(module_name, callee)
            found = self.functions.get(self.canonical(target)) if target else None
        return found

    def _star_target(self, module: str, name: str) -> str | None:
        """`module.name` bound by one of the module's `from m import *`: the last star source that declares or
        re-exports `name` and exports it (its literal `__all__` lists it; without one, a public name), as the
        import system binds them: a later star import rebinds what an earlier one bound."""
        for star in reversed(self._stars.get(module, ())):
            exports = self._exports.get(star)
            if (name not in exports) if exports is not None else name.startswith("_"):
                continue
            candidate = f"{star}.{name}"
            if (candidate in self.functions or candidate in self.classes or candidate in self.globals
                    or name in self._aliases.get(star, {})):
                return candidate
        return None

    def holder_uses(self, method: str, holders: Iterable[str]) -> list[HolderUse]:
        """What the callers of `method` do where its result is one of these classes (resolved names), in a
        stable order: each keeps the holder or drops it."""
        wanted = {self.canonical(holder) for holder in holders}
        found: set[HolderUse] = set()
        methods, seen = [method], set()
        while methods:  # a function that returns the call's result as it is: its callers are the callee's
            called = methods.pop()
            if called in seen:
                continue
            seen.add(called)
            found.update(use for use in self._holder_uses.get(called, ()) if self.canonical(use.holder) in wanted)
            methods.extend(caller.rpartition(".")[2] for caller in self._pass_throughs.get(called, ()))
        return sorted(found, key=lambda use: (use.caller, use.line))

    def resolving_reexports(self, imports: ImportTable, configured: tuple[str, ...]) -> ImportTable:
        """The module's import table, a name resolved through the re-exports on its way where that makes it one
        of the configured names (`from vllm_plugin.compat import EMPTY_OUTPUT`, which `compat/__init__.py` binds
        by `from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT as EMPTY_OUTPUT`, is vLLM's sentinel); every
        other name as the module's imports spell it (`pytest.fail` stays `pytest.fail`, whatever pytest's
        `__init__` re-exports)."""
        return _ReExportedImports(imports, self.canonical, configured) if self._aliases else imports

    def canonical(self, name: str) -> str:
        """Where a dotted name is declared, following the re-exports of the modules on its way
        (`pkg.fail`, bound in `pkg/__init__.py` by `from .errors import fail`, is `pkg.errors.fail`)."""
        for _ in range(MAX_BASE_DEPTH):
            module, rest = name, ""
            while "." in module and module not in self._aliases:
                module, _, last = module.rpartition(".")
                rest = f"{last}.{rest}" if rest else last
            head, _, tail = rest.partition(".")
            target = self._aliases.get(module, {}).get(head) if head else None
            if not target and head:
                target = self._star_target(module, head)
            if not target or target == f"{module}.{head}":
                return name
            name = f"{target}.{tail}" if tail else target
        return name

    def never_returns(self, callee: str | None, module_name: str) -> bool:
        """A call to this resolved name ends the path."""
        if not callee:
            return False
        if callee in KNOWN_NO_RETURN:
            return True
        decl = self.function(callee, module_name)
        return decl is not None and decl.never_returns

    # -------------------------------------------------------------- classes

    def class_named(self, name: str, module_name: str = "", reach: frozenset[str] | None = None) -> ClassDecl | None:
        """The class a resolved name refers to in `module_name`: by qualified name, else the only class so named
        among the modules it reaches through its imports (a module the tree does not hold, or a script
        outside any package)."""
        found = self.classes.get(name) or (self.classes.get(f"{module_name}.{name}") if module_name else None)
        if found is None and "." in name and self._aliases:
            found = self.classes.get(self.canonical(name))
        if found is not None:
            return found
        if "." in name and (self._known_module(name) or not module_name):
            return None  # a qualified name no module resolves it in: the class is not in the tree
        candidates = self._classes_by_name.get(name.rpartition(".")[2], ())
        if reach is None and module_name in self.modules:
            reach = self.reachable(module_name)
        if reach is not None and self.modules:
            candidates = tuple(c for c in candidates if self.module_of(c.qualname) in reach)
        return candidates[0] if len(candidates) == 1 else None

    def with_own_classes(self, module_name: str, declarations: Iterable[Declaration]) -> TreeIndex:
        """This index, and the classes (with their methods) a module the index holds nothing of declares: a
        file the byte scan skipped but analyses as a caller of what the index declares Optional. Its receivers'
        classes then resolve through their MRO (`LeafRunner(MiddleRunner)`'s `self.take_kv_output()` is
        `BaseRunner.take_kv_output`), not by the method's bare name. Itself for a module the index holds."""
        if module_name in self.modules:
            return self
        declarations = list(declarations)
        classes = {d.qualname: d for d in declarations if isinstance(d, ClassDecl) and d.qualname not in self.classes}
        if not classes:
            return self
        methods = {d.qualname: d for d in declarations if isinstance(d, FunctionDecl)
                   and d.qualname.rpartition(".")[0] in classes and d.qualname not in self.functions}
        overlay = copy.copy(self)
        overlay.classes = {**self.classes, **classes}
        overlay.functions = {**self.functions, **methods}
        overlay._mro = {}
        overlay._classes_by_name = dict(self._classes_by_name)
        for decl in classes.values():
            overlay._classes_by_name[decl.name] = (*overlay._classes_by_name.get(decl.name, ()), decl)
        return overlay

    def module_of(self, qualname: str) -> str:
        """The module of the run a declared name lives in (its longest dotted prefix that is one; else its first
        component)."""
        module = qualname
        while "." in module:
            module = module.rpartition(".")[0]
            if module in self.modules:
                return module
        return module

    def reachable(self, module_name: str, imports: Collection[str] = ()) -> frozenset[str]:
        """The modules of the run that `module_name` imports, directly or through others it imports, and itself
        (with the packages they are in, whose `__init__` an import runs). `imports`: what the module's own
        imports name, for a module the index holds no entry of (a caller found among the skipped files)."""
        known = module_name in self.modules
        found = self._reachable.get(module_name) if known else None
        if found is not None:
            return found
        seen = {module_name}
        stack = [module_name]
        while stack:
            current = stack.pop()
            for target in self.modules.get(current, ()) if known or current != module_name else imports:
                while target:
                    if target in self.modules and target not in seen:
                        seen.add(target)
                        stack.append(target)
                    target = target.rpartition(".")[0]
        found = frozenset(seen)
        if known:
            self._reachable[module_name] = found
        return found

    def _known_module(self, name: str) -> bool:
        """Whether the tree holds the module a dotted class name points into (then it is not there)."""
        return name.rpartition(".")[0] in self._scopes

    def mro(self, qualname: str) -> list[ClassDecl]:
        """The class and its bases that the tree declares, nearest first (depth-first, cycle-safe)."""
        cached = self._mro.get(qualname)
        if cached is None:
            cached = self._mro[qualname] = self._compute_mro(qualname)
        return cached

    def _compute_mro(self, qualname: str) -> list[ClassDecl]:
        found: list[ClassDecl] = []
        seen: set[str] = set()
        stack = [(qualname, 0, "")]
        while stack:
            name, depth, module = stack.pop(0)
            decl = self.class_named(name, module) if module else self.classes.get(name)
            if decl is None or decl.qualname in seen or depth > MAX_BASE_DEPTH:
                continue
            seen.add(decl.qualname)
            found.append(decl)
            declaring = self.module_of(decl.qualname)
            stack.extend((base, depth + 1, declaring) for base in decl.bases)
        return found

    def member(self, class_name: str, attribute: str) -> TypeRef | None:
        """The declared type of `attribute` on instances of the class, from the nearest declaring class."""
        for decl in self.mro(class_name):
            found = decl.member_types().get(attribute)
            if found is not None:
                return found
        return None

    def declaring_class(self, class_name: str, attribute: str) -> str:
        """The qualified name of the nearest class in the MRO that declares `attribute` ("" none)."""
        for decl in self.mro(class_name):
            if attribute in decl.member_types():
                return decl.qualname
        return ""

    def declares_attribute(self, class_name: str, attribute: str) -> bool | None:
        """Whether instances of the class have `attribute` by declaration (a field, an annotated or assigned
        attribute, a property or method, of it or a base); None when a base is out of the tree's sight."""
        classes = self.mro(class_name)
        if not classes:
            return None
        known = {decl.qualname for decl in classes}
        for decl in classes:
            if attribute in decl.member_types() or attribute in decl.rebound or attribute in decl.sentinel_members:
                return True
            if f"{decl.qualname}.{attribute}" in self.functions:
                return True
            module = self.module_of(decl.qualname)
            for base in decl.bases:
                if matches(base, _IMPLICIT_BASES):
                    continue
                found = self.class_named(base, module)
                if found is None or found.qualname not in known:
                    return None
        return False

    def bases_in_sight(self, class_name: str) -> bool:
        """Whether the tree declares the class and each of its bases (but `object` and the like): what could
        read an attribute of it by inheritance was read too."""
        classes = self.mro(class_name)
        known = {decl.qualname for decl in classes}
        for decl in classes:
            module = self.module_of(decl.qualname)
            for base in decl.bases:
                if not matches(base, _IMPLICIT_BASES) and getattr(self.class_named(base, module), "qualname",
                                                                  None) not in known:
                    return False
        return bool(classes)

    def inherited_method(self, class_name: str, name: str) -> FunctionDecl | None:
        """What `super().name` calls in a method of the class: the nearest base's definition."""
        for decl in self.mro(class_name)[1:]:
            found = self.functions.get(f"{decl.qualname}.{name}")
            if found is not None:
                return found
        return None

    def method(self, class_name: str, name: str) -> FunctionDecl | None:
        """The declaration of a method, from the nearest class that defines it."""
        for decl in self.mro(class_name):
            found = self.functions.get(f"{decl.qualname}.{name}")
            if found is not None:
                return found
        return None

    def tuple_member(self, class_name: str, attribute: str) -> list[tuple[int, int, str]]:
        """Where a tuple of step state the class keeps in `attribute` holds a connector output: (length,
        position, field) from the nearest class that assigns it; [] when none does."""
        for decl in self.mro(class_name):
            found = [(length, position, field) for name, length, position, field in decl.tuple_members
                     if name == attribute]
            if found or attribute in decl.member_types() or attribute in decl.rebound:
                return found
        return []

    def sentinel_member(self, class_name: str, attribute: str) -> str | None:
        """The sentinel (resolved name) the attribute is the class's handle on, when no class on the way (nor
        an instance, through `self.x = ...`) binds it to anything else; None when it is no such handle."""
        for decl in self.mro(class_name):
            if attribute in decl.rebound:
                return None
            if attribute in decl.sentinel_members:
                position = decl.sentinel_members.index(attribute)
                return decl.sentinel_sources[position] if position < len(decl.sentinel_sources) else ""
        return None

    def fields(self, class_name: str) -> tuple[str, ...] | None:
        """A class's positional field order (bases first), or None when a base is not in the tree."""
        chain_: list[ClassDecl] = []
        decl = self.classes.get(class_name)
        while decl is not None:
            if not decl.positional:
                return None  # its own `__init__`, keyword-only fields, or not a dataclass: positions unknown
            chain_.append(decl)
            bases = [b for b in decl.bases if not matches(b, ("object", "Generic", "Protocol", "NamedTuple"))]
            if not bases:
                break
            if len(bases) > 1:
                return None
            decl = self.class_named(bases[0], self.module_of(decl.qualname))
            if decl is None or len(chain_) > MAX_BASE_DEPTH:
                return None
        if not chain_:
            return None
        return tuple(name for decl in reversed(chain_) for name in decl.fields)

    def global_type(self, qualname: str) -> TypeRef | None:
        found = self.globals.get(qualname)
        return found if found is not None or not self._aliases else self.globals.get(self.canonical(qualname))


class _ReExportedImports(ImportTable):
    """An import table whose resolved names are followed through the tree's re-exports (`canonical`) where
    that makes them configured names."""

    def __init__(self, imports: ImportTable, canonical: Callable[[str], str], configured: tuple[str, ...]) -> None:
        self._canonical, self._configured = canonical, configured
        self._resolved: dict[str, str] = {}  # the flow resolves the same spellings again and again
        bindings = {name: self._followed(target) for name, target in imports.bindings.items()}
        super().__init__(bindings, imports.modules, imports.stars)

    def _followed(self, name: str) -> str:
        if matches(name, self._configured):
            return name
        target = self._canonical(name)
        return target if target != name and matches(target, self._configured) else name

    def resolve_dotted(self, spelled: str) -> str:
        found = self._resolved.get(spelled)
        if found is None:
            found = self._resolved[spelled] = self._followed(super().resolve_dotted(spelled))
        return found


def caller_names(index: TreeIndex, config: Config) -> tuple[str, ...]:
    """The names whose mention makes a file the byte scan skipped worth analysing: what the tree declares to
    return or hold the payload. A skipped file mentions no configured name, nor any name containing one, and a
    private name stays in its own file."""
    configured = config.names()
    return tuple(sorted(
        name for name in index.candidate_names()
        if not name.startswith("_") and not any(c in name for c in configured)
    ))

"""What the parts of the flow analysis share while they analyse one module: declared once, here.

`FlowAnalysis` builds one `FlowContext` per module and hands it to each part
(`Statements`, `Expressions`, `Narrowing`, `Recorder`); a part reads and writes
the module's facts and the current scope's through it, and keeps nothing of
them itself (a part's own caches stay in the part).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from kvlint.binding.declarations import Declaration, FunctionDecl
from kvlint.binding.names import ImportTable
from kvlint.binding.tree_index import TreeIndex
from kvlint.config import Config
from kvlint.flow.source import SourceText
from kvlint.flow.state import LoopFrame, ScopeContext, Value
from kvlint.sites import Site, SiteKind


class FlowContext:
    """The shared state of one module's flow analysis: the module's facts, and the current scope's."""

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
        # ---- the module and the tree: set once
        self.source = source  # the parsed text: spans and the code of a node
        # the module's import table, a configured name re-exported under another name followed to it
        self.imports = index.resolving_reexports(imports, config.names())
        # the tree's declarations; a caller the index holds nothing of adds its own classes (their MRO)
        self.index = index.with_own_classes(module_name, own_declarations)
        self.config = config
        self.module_name = module_name
        # this file's own functions: what they are never depends on another file of the same module name
        self.own_functions = {d.qualname: d for d in own_declarations if isinstance(d, FunctionDecl)}
        # the modules this one reaches through its imports: where a name's fallback may find its declaration
        self.reach = index.reachable(module_name, imports.modules)
        self.invariants = config.invariants  # the configured invariants
        self.invariant_names = tuple(invariant.name for invariant in self.invariants.invariants)
        payload_names = tuple(name.rpartition(".")[2] for name in config.payload_classes)
        # how the module may spell a payload class: its names, and what the imports bind them to
        self.payload_spellings = (*payload_names, *self.imports.aliases_of(config.payload_classes))

        # ---- what the module's scopes add up to
        self.sites: dict[tuple[object, ...], Site] = {}  # by site key (`recording.SiteKey`): the analysis's output
        self.kinds = kinds  # the kinds of site recorded (None: all; a run for findings alone, those rules judge)
        self.maybe_none_kinds = maybe_none_kinds  # of those, the ones recorded only where the value may be None
        self.pending: list[tuple[ast.AST, ScopeContext]] = []  # scopes still to analyse, met in an enclosing one
        self.attached_outputs: set[tuple[object, ...]] = set()  # outputs given their connector output later
        self.parks: dict[tuple[str, str, str], ast.Assign] = {}  # (scope, holder, value) -> where it was parked
        self.initialising: set[tuple[str, str]] = set()  # `if not hasattr(S, "x"):` at import: (S's code, "x")
        # a connector path's reason -> the guard or context it names, resolved (`Site.resolved`)
        self.path_names: dict[str, str] = {}

        # ---- the scope being analysed: reset when a scope starts (`FlowAnalysis`)
        self.scope = ScopeContext("<module>")  # its name, enclosing class and what it captured
        self.recording = True  # sites are recorded (not during a loop's first passes, until its facts settle)
        self.loops: list[LoopFrame] = []  # the loops around this point, innermost last
        self.fixpoint_depth = 0  # how many loops around this point are being run to a fixpoint
        self.declared_defaults: dict[str, Value] = {}  # reference keys whose default a declaration gave
        self.declared_names: dict[str, Value] = {}  # local names and parameters with a declared type
        self.local_definitions: set[str] = set()  # names a function binds by import, `def` or `class`
        self.shielded = ""  # inside `try` whose handlers catch AttributeError (or a base): the handler it names

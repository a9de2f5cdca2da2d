"""kvlint's mypy face: narrow `kv_connector_output` on connector paths, report the engine's findings as mypy errors.

Enable with `plugins = kvlint.mypy_plugin`. Every fact comes from kvlint's own
engine run on the module's file; this module only routes mypy's hooks to those
facts by (line, column). mypy has no hook on names or `return`, nor one after it
has checked a module (python/mypy#6537), so a module's findings are reported from
every kvlint hook that fires in it (mypy keeps one of each), and the plugin adds
one hook of its own as the module's last statement, which mypy checks after the
module's functions (`_append_end_of_module`); KVC001/KVC005 wait until mypy has
typed the dereferenced value and are dropped where that type includes None
(`kvlint.mypy_dereferences`).

Most of a tree's files mention no configured name: the byte scan, as mypy parses each file, is then its
whole analysis (`kvlint.mypy_worker.scan_module`), and such a module gets no hook of its own (there is
nothing to report from it). The engine runs on the others in one helper process, fed each file as mypy
parses it, so that its cost overlaps mypy's own work; `KVLINT_MYPY_WORKER=0` keeps it in the mypy process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Callable, Set as AbstractSet
from pathlib import Path
from typing import TYPE_CHECKING

from mypy.errorcodes import ErrorCode
from mypy.nodes import (
    ARG_STAR2,
    AssertStmt,
    Block,
    CallExpr,
    Context,
    ExpressionStmt,
    IfStmt,
    IntExpr,
    MypyFile,
    NameExpr,
    RaiseStmt,
    Statement,
    TryStmt,
    WithStmt,
)
from mypy.options import Options
from mypy.plugin import (
    AttributeContext,
    CheckerPluginInterface,
    FunctionContext,
    MethodContext,
    Plugin,
    ReportConfigContext,
)
from mypy.types import Instance, NoneType, Type, UnionType, get_proper_type

import kvlint
from kvlint.config_files import ConfigError, DirectorySources, Source, source_of

if TYPE_CHECKING:  # imported where a module is analysed or judged: a run served from mypy's cache needs none
    from kvlint.config import Config, DirectoryConfigs
    from kvlint.findings import Finding
    from kvlint.mypy_dereferences import ModuleDereferences
    from kvlint.mypy_worker import AnalysisWorker, ModuleAnalysis
    from kvlint.sites import Site

KVC = ErrorCode("kvc", "kvlint: an invariant of KV-connector outputs is broken", "General")
TESTED_MYPY = {1: (1, 20), 2: (2, 0)}  # major version -> oldest tested (major, minor)
ALLOW_UNTESTED_ENV = "KVLINT_MYPY_ALLOW_UNTESTED"
WORKER_ENV = "KVLINT_MYPY_WORKER"
NARROWED_BY_DEFAULT = ("ModelRunnerOutput", "IntermediateTensors")  # vLLM's two carriers of the field
OPTIONAL_ARGUMENT = "KVC003"
HookContext = AttributeContext | FunctionContext | MethodContext
END_OF_MODULE_CALL = "builtins.object"  # what the statement the plugin appends to a module calls (`object()`)


@functools.cache
def plugin_version() -> str:
    """kvlint's version and what identifies its sources (`run_record.sources_identity`: their status keys
    when every one is settled, else a digest of their bytes), as the command line's cache keys them. It
    leads what the plugin stores with each module in mypy's cache: an edit of kvlint makes every module
    stale. Computed at first use: reading and hashing every source was a quarter of the plugin's import."""
    from kvlint.running.run_record import sources_identity

    return f"{kvlint.__version__}+{sources_identity()}"


def scan_module(path: str, config: Config | ConfigError) -> ModuleAnalysis | None:
    """`kvlint.mypy_worker.scan_module`. That module (the analysis side: the byte scan, the helper) is imported
    at the first module mypy parses; a run that mypy's cache serves entirely imports none of it."""
    from kvlint import mypy_worker

    return mypy_worker.scan_module(path, config)


def analyse_module(path: str, config: Config | ConfigError) -> ModuleAnalysis:
    """`kvlint.mypy_worker.analyse_module`."""
    from kvlint import mypy_worker

    return mypy_worker.analyse_module(path, config)


def file_key(path: str) -> tuple[int, int] | None:
    """`kvlint.mypy_worker.file_key`."""
    from kvlint import mypy_worker

    return mypy_worker.file_key(path)


def __getattr__(name: str) -> object:
    """This module's `__version__`, computed when asked (PEP 562): the plugin's version and a digest of the
    kvlint configuration found from the current directory; `PLUGIN_VERSION`, the plugin's version alone.

    mypy's daemon reads it before every `dmypy run` and restarts itself when a plugin's version changed
    ("plugins changed"). Without this, a daemon would keep the kvlint settings, and the kvlint errors of
    every file it does not recheck, from the moment it started.
    """
    if name == "PLUGIN_VERSION":
        return plugin_version()
    if name == "AnalysisWorker":  # the helper's class, where it is defined
        from kvlint.mypy_worker import AnalysisWorker

        return AnalysisWorker
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    source = source_of(os.getcwd())
    if isinstance(source, ConfigError):
        settings = f"error: {source}"
    elif source[0] == "root":  # no file configures kvlint: the defaults, which the plugin's version covers
        settings = repr(source)
    else:
        from kvlint.config import config_of_source

        config = config_of_source(source)
        settings = f"error: {config}" if isinstance(config, ConfigError) else repr(config)
    return f"{plugin_version()}+{hashlib.sha256(settings.encode()).hexdigest()[:16]}"


class KvlintPlugin(Plugin):
    """Routes mypy hooks to kvlint's engine facts."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        # mypy asks for a hook by fullname at every attribute, call and method it checks (862,133 times over vLLM
        # 0.33.0), and only a handful get one: each name is routed once, then looked up. mypy calls the hooks of
        # this object as its attributes, so the lookups are the routes' own, with no Python call each (half the
        # instructions of one through the methods below, which say the same)
        self._attribute_routes = _Routes(self._route_attribute)
        self._function_routes = _Routes(self._route_function)
        self._method_routes = _Routes(self._route_method)
        self.get_attribute_hook = self._attribute_routes.__getitem__  # type: ignore[method-assign]
        self.get_function_hook = self._function_routes.__getitem__  # type: ignore[method-assign]
        self.get_method_hook = self._method_routes.__getitem__  # type: ignore[method-assign]
        self._routing: _Routing | None = None  # made at the first lookup: a run served from mypy's cache makes none
        self._analyses: dict[str, ModuleAnalysis] = {}
        self._dereferences: dict[str, tuple[ModuleAnalysis, ModuleDereferences]] = {}
        self._sources = DirectorySources()  # where each directory's configuration comes from
        # what the paths mypy gives are relative to: mypy never changes it (the answers kept by the path as spelled
        # count on that too), so it is asked once, not once for each directory
        self._current_directory = os.getcwd()
        self._configs: DirectoryConfigs | None = None  # what it says, made at the first module that needs it
        self._directory_configs: dict[str, Config | ConfigError] = {}
        self._ends: dict[str, Statement] = {}  # the statement appended to each module's tree
        self._config_data: dict[str, str] = {}  # by the directory of a module's path, as mypy spells it
        self._config_data_by_source: dict[Source | ConfigError, str] = {}
        self._worker_wanted: bool | None = None  # decided at the first file that needs the engine
        self._worker: AnalysisWorker | None = None  # made there

    def get_attribute_hook(self, fullname: str) -> Callable[[AttributeContext], Type] | None:
        return self._attribute_routes[fullname]

    def get_function_hook(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        return self._function_routes[fullname]

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return self._method_routes[fullname]

    def _route_attribute(self, fullname: str) -> Callable[[AttributeContext], Type] | None:
        routing = self._routing or self._make_routing()
        attribute = fullname.rpartition(".")[2]
        if attribute in routing.optional_fields:
            return self._narrow_optional_field
        return self._anchor_attribute if attribute in routing.payload_fields else None

    def _route_function(self, fullname: str) -> Callable[[FunctionContext], Type] | None:
        routing = self._routing or self._make_routing()
        return (
            self._check_output_construction if routing.matches(fullname, routing.output_classes)
            else self._anchor_call if routing.matches(fullname, routing.anchors) or fullname == END_OF_MODULE_CALL
            else None
        )

    def _route_method(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        routing = self._routing or self._make_routing()
        return self._anchor_call if routing.matches(fullname, routing.anchors) else None

    def _make_routing(self) -> _Routing:
        self._routing = _Routing()
        return self._routing

    def get_additional_deps(self, file: MypyFile) -> list[tuple[int, str, int]]:
        if file.path.endswith(".py"):  # mypy has just parsed it
            scanned = scan_module(file.path, self._config_for(file.path))
            if scanned is not None:  # its bytes mention no configured name (most files): that is its analysis
                self._analyses[file.path] = scanned
            elif self._wants_worker():  # the helper analyses it while mypy goes on
                if self._worker is None:
                    from kvlint.mypy_worker import AnalysisWorker

                    self._worker = AnalysisWorker()
                self._worker.submit(file.path)
            reports = scanned is None or bool(scanned.findings)  # else no hook of it has anything to report
            if reports and (not file.defs or file.defs[-1] is not self._ends.get(file.path)):  # once per tree
                end = _append_end_of_module(file, self.options)
                if end is not None:
                    self._ends[file.path] = end
        return []

    def _wants_worker(self) -> bool:
        if self._worker_wanted is None:
            from kvlint.mypy_worker import worker_wanted

            self._worker_wanted = worker_wanted(os.environ.get(WORKER_ENV), _default_worker(self.options))
        return self._worker_wanted

    def report_config_data(self, ctx: ReportConfigContext) -> str | None:
        """What mypy stores with a module and compares on the next run: a change makes the module stale.

        mypy asks for every module it loads, its cached ones too (3,709 in a warm run over vLLM): the answer
        is made once per directory and per configuration, and looked up by the directory as the path spells
        it (everything before its last separator: one spelling names one directory)."""
        if _POSIX_SPELLING:
            directory, separator, name = ctx.path.rpartition("/")
            directory = directory or separator  # "/x.py" is in "/", "x.py" in "" (the current directory)
        else:
            directory, name = os.path.split(ctx.path)
        if name[-3:] != ".py":
            return None
        known = self._config_data.get(directory)
        if known is None:
            source = self._sources.of_directory(_absolute_directory(directory, self._current_directory))
            known = self._config_data[directory] = self._config_data_of(source)
        return known

    def _config_data_of(self, source: Source | ConfigError) -> str:
        """The answer for the modules of the directories whose configuration comes from `source` (a tree's
        directories share a handful): kvlint's version and one digest of what identifies its sources and of the
        settings. mypy stores it with every module and reads it back, and compares it, at every run, cached
        modules too: one short string (the six strings it once was cost a warm run over vLLM 1.5%)."""
        known = self._config_data_by_source.get(source)
        if known is not None:
            return known
        if isinstance(source, ConfigError):
            settings: list[object] = ["configuration error", str(source)]
        elif source[0] == "root":  # no file configures kvlint here: the defaults, which the plugin's version covers
            # (kvlint's sources), and the directories their globs are matched from; no `Config` is built
            settings = ["defaults", os.path.abspath(source[1] or os.getcwd()), os.getcwd()]
        else:
            config = self._loader().for_source(source)
            settings = (["configuration error", str(config)] if isinstance(config, ConfigError)
                        else [config.fingerprint(), config.select, config.ignore, _silencing(config)])
        known = self._config_data_by_source[source] = f"{kvlint.__version__}+{_digest([plugin_version(), settings])}"
        return known

    # -- callbacks -------------------------------------------------------------------------------------------

    def _narrow_optional_field(self, ctx: AttributeContext) -> Type:
        """Drop None from `X.kv_connector_output` where the engine puts the read on a connector path."""
        declared = ctx.default_attr_type
        self._report_module_findings(ctx)
        if ctx.is_lvalue or _position(ctx.context) not in self._analysis_of(ctx.api.path).narrowed:
            return declared
        config = self._config_for(ctx.api.path)
        if isinstance(config, ConfigError) or not _is_instance_of(ctx.type, _narrowed_classes(config)):
            return declared
        return _without_none(declared)

    def _anchor_attribute(self, ctx: AttributeContext) -> Type:
        self._report_module_findings(ctx)
        return ctx.default_attr_type

    def _anchor_call(self, ctx: FunctionContext | MethodContext) -> Type:
        self._report_module_findings(ctx)
        return ctx.default_return_type

    def _check_output_construction(self, ctx: FunctionContext) -> Type:
        """KVC003 for what only types show: a `kv_connector_output=` argument that may still be None, for each
        invariant on whose connector path the construction lies."""
        if not self._report_module_findings(ctx):
            return ctx.default_return_type
        config = self._config_for(ctx.api.path)
        if isinstance(config, ConfigError):
            return ctx.default_return_type
        for site in self._analysis_of(ctx.api.path).constructions.get(_position(ctx.context), ()):
            if site.on_connector_path and site.carries_connector_output:  # else off the path, or the engine's KVC003
                self._check_connector_argument(ctx, config, site)
        return ctx.default_return_type

    def _check_connector_argument(self, ctx: FunctionContext, config: Config, site: Site) -> None:
        fields = config.invariants.by_name[site.invariant].optional_fields if site.invariant else config.optional_fields
        for formal, name in enumerate(ctx.callee_arg_names):
            if name not in fields or not ctx.arg_types[formal]:
                continue
            if ARG_STAR2 in ctx.arg_kinds[formal] or not _may_be_none(ctx.arg_types[formal][0]):
                continue
            if _is_reported(config, ctx.api.path, OPTIONAL_ARGUMENT, ctx.context.line):
                described = _describe_type(ctx.arg_types[formal][0], ctx.api.options)
                constructed = site.expression.split("(", 1)[0]
                ctx.api.fail(
                    f"{OPTIONAL_ARGUMENT} `{constructed}(...)` on a connector path ({site.path_reason}) passes "
                    f"`{name}={site.connector_output_argument}` of type {described}, which may be None",
                    ctx.context, code=KVC,
                )

    # -- facts -----------------------------------------------------------------------------------------------

    def _report_module_findings(self, ctx: HookContext) -> bool:
        """Report the module's findings, if mypy shows its errors; say whether it does.

        mypy keeps one of each (line, message), so reporting them from every hook is harmless.
        """
        if ctx.api.path in _hidden_files(ctx.api):
            return False  # e.g. a module imported with follow_imports = silent: no analysis needed to report
        analysis = self._analysis_of(ctx.api.path)
        for finding in analysis.findings:
            _fail_at(ctx.api, f"{finding.code} {finding.message}", finding)
        if analysis.dereferences:
            dereferences = self._dereferences_of(ctx.api, analysis)
            for finding in dereferences.to_report(ctx.api, ctx.context.line) if dereferences else ():
                _fail_at(ctx.api, f"{finding.code} {finding.message}", finding)
        return True

    def _dereferences_of(self, api: CheckerPluginInterface, analysis: ModuleAnalysis) -> ModuleDereferences | None:
        """The module's KVC001/KVC005 findings matched to the tree mypy is checking (None: no tree found)."""
        tree = _tree_of(api)
        known = self._dereferences.get(api.path)
        if known is not None and known[0] is analysis and known[1].tree is tree:
            return known[1]
        if tree is None:
            return None
        from kvlint.mypy_dereferences import ModuleDereferences

        dereferences = ModuleDereferences(tree, analysis.dereferences)
        self._dereferences[api.path] = (analysis, dereferences)
        return dereferences

    def _analysis_of(self, path: str) -> ModuleAnalysis:
        key = file_key(path)
        cached = self._analyses.get(path)
        if cached is not None and cached.key == key:
            return cached
        analysis = self._worker.take(path) if self._worker is not None else None
        if analysis is None or analysis.key != key:
            analysis = analyse_module(path, self._config_for(path))
        self._analyses[path] = analysis
        return analysis

    def _config_for(self, path: str) -> Config | ConfigError:
        directory = os.path.dirname(path)  # as mypy spells it: a run's paths share a few hundred directories
        config = self._directory_configs.get(directory)
        if config is None:
            config = self._directory_configs[directory] = self._loader().for_file(path)
        return config

    def _loader(self) -> DirectoryConfigs:
        """What each directory's configuration says (`kvlint.config`, imported here: a run that mypy's cache
        serves needs only where each comes from)."""
        if self._configs is None:
            from kvlint.config import DirectoryConfigs

            self._configs = DirectoryConfigs(sources=self._sources)
        return self._configs


class _Routing:
    """The names that get a hook: those of the default configuration and of the current directory's (each module
    is judged by its own)."""

    def __init__(self) -> None:
        from kvlint.binding.names import matches
        from kvlint.config import Config, config_for_directory

        project = config_for_directory(os.getcwd())
        routing = [Config(), *([project] if isinstance(project, Config) else [])]  # a bad one is reported per module
        self.matches = matches
        self.optional_fields = frozenset(name for config in routing for name in config.optional_fields)
        self.payload_fields = frozenset(name for config in routing for name in config.payload_optional_fields)
        self.output_classes = tuple(name for config in routing for name in config.output_classes)
        self.anchors = tuple(
            name for config in routing for name in (
                *config.payload_classes, *config.connector_guards, *config.connector_contexts,
                *config.optional_contexts, *config.connector_functions,
            )
        )


class _Routes(dict[str, Callable[..., Type] | None]):
    """The hook of each fullname, routed at its first lookup."""

    def __init__(self, route: Callable[[str], Callable[..., Type] | None]) -> None:
        super().__init__()
        self._route = route

    def __missing__(self, fullname: str) -> Callable[..., Type] | None:
        hook = self[fullname] = self._route(fullname)
        return hook


END_OF_MODULE_NAME = "__kvlint_end_of_module__"
END_OF_MODULE = f"def {END_OF_MODULE_NAME}() -> None:\n    assert False, object()\n"


def _append_end_of_module(tree: MypyFile, options: Options) -> Statement | None:
    """Append a function whose body calls `object()` to a module mypy has just parsed: a hook after everything
    else in it.

    mypy checks a module's function bodies in their order, after its top level (mypy 2) or in place (mypy 1),
    so the body of the module's last function comes after every dereference of the module (unless mypy
    deferred its function) and after every pass over a loop: there the plugin reports what it found, wherever
    it sits in the module, and a finding no longer depends on what code follows it. The function is
    annotated (mypy checks its body whatever `check_untyped_defs` says), sits on the lines after the module's
    last one, and is named so that no code calls it; `assert False` keeps its `object()` out of
    `--warn-unreachable`. It is parsed by mypy's own parser (`mypy.parse.parse`, outside the plugin
    interface: tested on mypy 1.20 and 2.x); should that move, or mypy hand this hook another tree than the
    one it checks (python/mypy#21323), there is no such hook, and the findings after the module's last hook of
    its own are lost as before, never doubled.
    """
    if any(_may_end_the_module(statement) for statement in tree.defs):
        return None  # the appended function could be unreachable: `--warn-unreachable` would report it
    try:
        from mypy.errors import Errors

        parse, eager = _mypy_parser()
        line = max((statement.end_line or statement.line for statement in tree.defs), default=0)
        parsed = parse("\n" * line + END_OF_MODULE, tree.path, tree.fullname or None, Errors(options), options,
                       **eager)
        defs = list(parsed.defs)
    except Exception:  # noqa: BLE001 - mypy's internals moved: no hook of its own, as before
        return None
    if len(defs) != 1:
        return None
    tree.defs.append(defs[0])
    return defs[0]


@functools.cache
def _mypy_parser() -> tuple[Callable[..., MypyFile], dict[str, bool]]:
    """mypy's parser, and the keywords that make it parse function bodies now (mypy 2 parses them lazily)."""
    import inspect

    from mypy.parse import parse

    return parse, {"eager": True} if "eager" in inspect.signature(parse).parameters else {}


def _may_end_the_module(statement: Statement) -> bool:
    """Whether a top-level statement may leave the rest of the module unreachable for mypy: a `raise`, an
    `assert False`, a call that may be `NoReturn` (`sys.exit(...)`), or a block that always runs one."""

    def block(body: Block | None) -> bool:
        return body is not None and any(_may_end_the_module(inner) for inner in body.body)

    if isinstance(statement, RaiseStmt):
        return True
    if isinstance(statement, AssertStmt):
        condition = statement.expr
        return (isinstance(condition, NameExpr) and condition.name == "False") or (
            isinstance(condition, IntExpr) and condition.value == 0)
    if isinstance(statement, ExpressionStmt):
        return isinstance(statement.expr, CallExpr)
    if isinstance(statement, IfStmt):
        return all(block(body) for body in statement.body) and block(statement.else_body)
    if isinstance(statement, WithStmt):
        return block(statement.body)
    if isinstance(statement, TryStmt):
        return block(statement.body) or block(statement.finally_body)
    return False


def _default_worker(options: Options) -> bool:
    """Use the helper where a CPU is left for it: not on one CPU, nor when mypy runs workers of its own."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return cpus > 1 and not getattr(options, "num_workers", 0)


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point: refuse a mypy this plugin was not tested with."""
    found = re.match(r"(\d+)\.(\d+)", version)
    major_minor = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    oldest = TESTED_MYPY.get(major_minor[0])
    if (oldest is None or major_minor < oldest) and not os.environ.get(ALLOW_UNTESTED_ENV):
        tested = " and ".join(f"{major}.x (from {low[0]}.{low[1]})" for major, low in TESTED_MYPY.items())
        raise _configuration_error(
            f"kvlint.mypy_plugin is tested with mypy {tested}, not with mypy {version}: "
            f"install a tested mypy, or set {ALLOW_UNTESTED_ENV}=1 to try it anyway"
        )
    return KvlintPlugin


def _configuration_error(message: str) -> Exception:
    """Build the error that makes mypy stop with `error: MESSAGE` (exit 2), as for its own config errors.

    `mypy.errors.CompileError` is outside the plugin interface (tested on mypy 1.20 and 2.x); any other
    exception would show as a mypy INTERNAL ERROR that hides the message.
    """
    try:
        from mypy.errors import CompileError

        return CompileError([f"error: {message}"])
    except ImportError:
        return RuntimeError(message)


def _digest(settings: object) -> str:
    return hashlib.sha256(json.dumps(settings).encode()).hexdigest()[:32]


def _silencing(config: Config) -> list[str]:
    """What decides the codes that `per-file-ignores` and the test-code policy silence in a module, besides its
    path (fixed for a module's entry in mypy's cache): the settings and the directory their patterns are
    matched from. A change to any of them makes every module stale; a module's own silenced codes, computed for
    each module at each run, cost a cached run of vLLM a tenth of its time."""
    if not (config.per_file_ignores or (config.test_files and config.test_ignore)):
        return []
    root = os.path.abspath(config.root if config.root is not None else os.getcwd())
    settings = json.dumps([config.per_file_ignores, config.test_files, config.test_ignore])
    return ["-", root, os.getcwd(), settings]


_POSIX_SPELLING = os.sep == "/" and os.altsep is None


def _absolute_directory(directory: str, current: str) -> str:
    """A module's directory as `report_config_data` spells it (the module's path before its last separator; ""
    for the current directory `current`, "/" for the root), absolute as `os.path.abspath` spells it, without its
    work on a spelling that has nothing to normalise: no `.` or `..` part, no empty one."""
    framed = f"/{directory}/"
    if (_POSIX_SPELLING and directory and "//" not in framed[1:] and "/./" not in framed
            and "/../" not in framed):
        if directory[0] == "/":
            return directory
        return f"{current}/{directory}" if current != "/" else f"/{directory}"
    return os.path.normpath(os.path.join(current, directory))


def _position(context: Context) -> tuple[int, int]:
    return context.line, context.column


def _narrowed_classes(config: Config) -> tuple[str, ...]:
    from kvlint.config import Config

    return NARROWED_BY_DEFAULT if config.output_classes == Config().output_classes else config.output_classes


def _is_instance_of(receiver: Type, classes: tuple[str, ...]) -> bool:
    from kvlint.binding.names import matches

    receiver = get_proper_type(receiver)
    return isinstance(receiver, Instance) and any(matches(info.fullname, classes) for info in receiver.type.mro)


def _may_be_none(typ: Type) -> bool:
    typ = get_proper_type(typ)
    if isinstance(typ, UnionType):
        return any(isinstance(get_proper_type(item), NoneType) for item in typ.items)
    return isinstance(typ, NoneType)


def _without_none(typ: Type) -> Type:
    proper = get_proper_type(typ)
    if not isinstance(proper, UnionType):
        return typ
    return UnionType.make_union([item for item in proper.items if not isinstance(get_proper_type(item), NoneType)])


def _is_reported(config: Config, path: str, code: str, line: int) -> bool:
    """Apply kvlint's select/ignore, per-file-ignores, the test-code policy and `# noqa` to a finding
    the plugin makes itself."""
    from kvlint.source import SourceError, decode_source, split_lines
    from kvlint.noqa import is_suppressed, noqa_line_mapping

    if not config.is_enabled(code) or code.startswith(tuple(config.silenced_for(Path(path)))):
        return False
    try:
        text = decode_source(Path(path).read_bytes())
    except (OSError, SourceError):
        return True
    return "noqa" not in text or not is_suppressed(noqa_line_mapping(split_lines(text)).get(line, ""), code)


def _fail_at(api: CheckerPluginInterface, message: str, finding: Finding) -> None:
    context = Context(finding.line, finding.column)
    context.end_line, context.end_column = finding.end_line, finding.end_column
    api.fail(message, context, code=KVC)


def _tree_of(api: CheckerPluginInterface) -> MypyFile | None:
    """The tree of the module mypy is checking.

    `TypeChecker.tree` is outside the plugin interface (tested on mypy 1.20 and 2.x); should it move, there
    is no tree, which silences KVC001/KVC005, never adds one.
    """
    tree = getattr(api, "tree", None)
    return tree if isinstance(tree, MypyFile) and tree.path == api.path else None


def _hidden_files(api: CheckerPluginInterface) -> AbstractSet[str]:
    """Return the files whose errors mypy hides (follow_imports = silent, ignore_errors, ...).

    `Errors.ignored_files` is outside the plugin interface (tested on mypy 1.20 and 2.x); should it move,
    no file counts as hidden, which costs time, never results.
    """
    ignored = getattr(getattr(api.msg, "errors", None), "ignored_files", None)
    return ignored if isinstance(ignored, (set, frozenset)) else frozenset()


def _describe_type(typ: Type, options: Options) -> str:
    """Spell a type as mypy's own messages do.

    `mypy.messages.format_type` is outside the plugin interface (tested on mypy 1.20 and 2.x);
    `str()` is the fallback should it move.
    """
    try:
        from mypy.messages import format_type

        return format_type(typ, options)
    except (ImportError, TypeError):
        return f'"{typ}"'

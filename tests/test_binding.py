"""Names resolved through imports to one declaration: the binder's fixtures, the search path, real releases.

`fixtures/binding/project` is a package whose verdicts rest on what its imports bind (a test double beside
the real payload class, helpers in sibling modules, package re-exports of helpers and of runner bases,
`TypeGuard`/`TypeIs`, `async def`, a `Future.result()` beside an unrelated `result()`);
`fixtures/binding/plugin` is a platform plugin checked with and without a stand-in vLLM
(`fixtures/binding/stand_in/`, written for these tests) on the search path.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from kvlint.config import Config, ConfigError, load_config
from kvlint.binding.declarations import ModuleDecl, TypeRef, TypeAliasDecl, declaration_from_json
from kvlint.binding.module_resolution import SearchPath, environment_site_packages
from kvlint.running.runner import run
from tests.conftest import FIXTURES, run_kvlint
from tests.test_fixtures import expected_findings
from tests.test_real_plugins import Plugin
from tests.support.vllm_sources import plugin_tree, vllm_tree

BINDING = FIXTURES / "binding"
PROJECT = BINDING / "project"
PLUGIN = BINDING / "plugin"
NEW_VLLM = BINDING / "stand_in" / "vllm_new"
OLD_VLLM = BINDING / "stand_in" / "vllm_old"
REPOSITORY = FIXTURES.parent


def _found(paths: list[Path], config: Config | None = None) -> Counter[tuple[str, int, str]]:
    result = run(paths, config or Config(), jobs=1)
    assert not [f for f in result.findings if f.code.startswith("KVC9")], result.findings
    return Counter((f.path, f.line, f.code) for f in result.findings)


def test_the_project_fixture_findings_match_its_markers_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPOSITORY)
    assert _found([PROJECT.relative_to(REPOSITORY)]) == expected_findings(PROJECT)
    assert sum(expected_findings(PROJECT).values()) == 37


def test_each_project_file_checked_alone_reports_what_the_whole_run_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pre-commit hook passes only the changed files: their imports are still followed into the project."""
    monkeypatch.chdir(REPOSITORY)
    whole = _found([PROJECT.relative_to(REPOSITORY)])
    for path in sorted(PROJECT.rglob("*.py")):
        relative = path.relative_to(REPOSITORY).as_posix()
        assert _found([Path(relative)]) == Counter({k: n for k, n in whole.items() if k[0] == relative}), relative


@pytest.mark.parametrize("where", ["repository", "package"])
def test_the_modules_a_run_skipped_are_taken_as_read_not_read_again(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The modules the relevant files import are mostly files the byte scan skipped: their bytes are held (and
    known to name nothing configured), so they are not read from disk a second time, from the repository (display
    paths `fixtures/binding/...`) or from inside the package (`errors.py`), with the same findings."""
    from kvlint.binding import module_resolution

    read: list[Path] = []
    held: list[Path] = []
    original_read, original_get = module_resolution._read, module_resolution._HeldBytes.get
    monkeypatch.setattr(module_resolution, "_read", lambda path: read.append(path) or original_read(path))
    monkeypatch.setattr(module_resolution._HeldBytes, "get",
                        lambda self, path: held.append(path) or original_get(self, path))
    package = PROJECT / "kv_project"
    monkeypatch.chdir(REPOSITORY if where == "repository" else package)
    found = _found([PROJECT.relative_to(REPOSITORY) if where == "repository" else Path(".")])
    assert sum(found.values()) == sum(expected_findings(PROJECT).values())
    assert len(held) >= 5  # errors, checks, runner_base, ...: asked of the held bytes
    assert [path for path in read if path is not None and package in Path(path).resolve().parents] == []


def test_the_plugin_reads_the_vllm_on_its_search_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPOSITORY)
    plugin = PLUGIN.relative_to(REPOSITORY)
    with_new = Config(search_path=(str(NEW_VLLM),))
    assert _found([plugin], with_new) == expected_findings(PLUGIN)
    # without vLLM's declarations the asynchronous output's `get_kv_connector_output()` is unknown: silent; and
    # beside stats_runner.py's own `ModelRunnerOutput` (no such field), vLLM's, out of sight, may have none
    alone = _found([plugin])
    assert alone == Counter({k: n for k, n in expected_findings(PLUGIN).items() if k[0].endswith("/worker.py")})
    # vLLM 0.10.0's output class has no `kv_connector_output`: nothing can demand one
    assert _found([plugin], Config(search_path=(str(OLD_VLLM),))) == Counter()


def test_search_path_on_the_command_line_and_in_the_configuration(tmp_path: Path) -> None:
    shutil.copytree(PLUGIN, tmp_path / "plugin")
    shutil.copytree(NEW_VLLM, tmp_path / "vendor")
    (tmp_path / "pyproject.toml").write_text('[tool.kvlint]\nsearch-path = ["vendor"]\n')
    configured = run_kvlint("check", "plugin", cwd=tmp_path)
    assert "executor.py:16:21: KVC001" in configured.stdout and configured.returncode == 1
    assert load_config([tmp_path / "plugin"]).search_path == (str(tmp_path / "vendor"),)
    (tmp_path / "pyproject.toml").write_text("[tool.kvlint]\n")
    assert "executor.py" not in run_kvlint("check", "plugin", cwd=tmp_path).stdout
    given = run_kvlint("check", "plugin", "--search-path", "vendor", cwd=tmp_path)
    assert "executor.py:16:21: KVC001" in given.stdout
    shown = run_kvlint("config", "--search-path", "vendor", cwd=tmp_path).stdout
    assert "# imported modules are looked up in: " in shown and "vendor" in shown.split("\n[tool.kvlint]")[0]
    assert f'search-path = ["{tmp_path / "vendor"}"]  # from the command line (--search-path)' in shown


def test_a_search_path_that_is_not_a_list_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.kvlint]\nsearch-path = "vendor"\n')
    with pytest.raises(ConfigError, match="'search-path' in \\[tool.kvlint\\] must be a list of strings"):
        load_config([tmp_path])


def test_the_environment_is_found_as_ty_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv = tmp_path / ".venv"
    packages = venv / "lib" / "python3.11" / "site-packages"
    packages.mkdir(parents=True)
    (venv / "bin").mkdir()
    (venv / "bin" / "python").write_text("")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    assert environment_site_packages(None, tmp_path) == [packages]  # a .venv in the project root
    assert environment_site_packages(str(venv / "bin" / "python"), None) == [packages]  # an interpreter in it
    other = tmp_path / "other"
    (other / "lib" / "python3.12" / "site-packages").mkdir(parents=True)
    monkeypatch.setenv("VIRTUAL_ENV", str(other))
    assert environment_site_packages(None, tmp_path) == [other / "lib" / "python3.12" / "site-packages"]
    assert environment_site_packages(str(tmp_path / "missing"), tmp_path) == []  # asked for, not there


def test_a_vllm_in_the_project_environment_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(PLUGIN, tmp_path / "plugin")
    shutil.copytree(NEW_VLLM / "vllm", tmp_path / ".venv" / "lib" / "python3.11" / "site-packages" / "vllm")
    (tmp_path / "pyproject.toml").write_text("")
    environment = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    monkeypatch.setattr(os, "environ", environment)
    monkeypatch.chdir(tmp_path)
    assert _found([Path("plugin")])[("plugin/npu_plugin/executor.py", 16, "KVC001")] == 1


def test_module_lookup_prefers_the_first_root_and_remembers(tmp_path: Path) -> None:
    for root in ("first", "second"):
        (tmp_path / root / "pkg").mkdir(parents=True)
        (tmp_path / root / "pkg" / "__init__.py").write_text("")
        (tmp_path / root / "pkg" / "mod.py").write_text(f"# {root}\n")
    (tmp_path / "second" / "pkg" / "only.py").write_text("")
    search = SearchPath((tmp_path / "first", tmp_path / "second"))
    assert search.find("pkg.mod") == tmp_path / "first" / "pkg" / "mod.py"
    assert search.find("pkg") == tmp_path / "first" / "pkg" / "__init__.py"
    assert search.find("pkg.only") is None  # a package is found in one root, as Python imports it
    assert search.find("no.such.module") is None and search.find("not-a-name") is None


def test_a_module_declaration_round_trips_through_the_cache_format() -> None:
    decl = ModuleDecl("pkg.mod", ("pkg.errors",), (("fail", "pkg.errors.fail"),), ("pkg.errors.fail",), True)
    assert declaration_from_json(json.loads(json.dumps(decl.to_json()))) == decl
    alias = TypeAliasDecl("pkg.types.MaybeKV", TypeRef("class", "pkg.outputs.KVConnectorOutput", optional=True))
    assert declaration_from_json(json.loads(json.dumps(alias.to_json()))) == alias


@pytest.mark.parametrize(("source", "alias"), [
    ("MaybeKV: TypeAlias = Optional[KVConnectorOutput]\n", ("MaybeKV", True)),
    ("MaybeKV: typing.TypeAlias = 'KVConnectorOutput | None'\n", ("MaybeKV", True)),
    ("Settled: TypeAlias = KVConnectorOutput\n", ("Settled", False)),
    ("MaybeKV = KVConnectorOutput | None\n", ("MaybeKV", True)),
    ("MaybeKV = Union[KVConnectorOutput, None]\n", ("MaybeKV", True)),
    ("Settled = KVConnectorOutput\n", None),  # a bare name may be any value: only an Optional spells a type
    ("Outputs = list[KVConnectorOutput]\n", None),  # not a class
    ("FLAGS = READ | WRITE\n", None),  # a union of two names: flags, not an Optional
    ("latest: KVConnectorOutput | None = None\n", None),  # an annotated global, not an alias
])
def test_a_type_alias_is_read_from_each_spelling(source: str, alias: tuple[str, bool] | None) -> None:
    import ast

    from kvlint.binding.declarations import module_declarations
    from kvlint.binding.names import ImportTable

    prelude = (
        "import typing\nfrom typing import Optional, TypeAlias, Union\nfrom pkg.outputs import KVConnectorOutput\n"
    )
    tree = ast.parse(prelude + source)
    imports = ImportTable.from_statements(tree.body, "pkg.types", False)
    found = [(d.qualname, d.type) for d in module_declarations(tree, "pkg.types", imports)
             if isinstance(d, TypeAliasDecl)]
    expected = [] if alias is None else [
        (f"pkg.types.{alias[0]}", TypeRef("class", "pkg.outputs.KVConnectorOutput", optional=alias[1]))
    ]
    assert found == expected


# ------------------------------------------------------------------ real releases

VLLM_ASCEND_OLD = Plugin("vllm-ascend", "0.10.0rc1", "vllm_ascend", platform=(
    "--platform", "manylinux_2_24_x86_64", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
))
VLLM_ASCEND_NEXT = Plugin("vllm-ascend", "0.10.1rc1", "vllm_ascend", platform=VLLM_ASCEND_OLD.platform)
BINDING_PLUGINS = (VLLM_ASCEND_OLD, VLLM_ASCEND_NEXT)  # fetched by tests/support/fetch_sources.py


@pytest.mark.vllm
def test_vllm_0_10_0_whose_output_has_no_kv_field_gives_no_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(vllm_tree("0.10.0"))
    assert run([Path("vllm")], Config(), jobs=2).findings == []


def _plugin_findings(plugin: Plugin, vllm: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, str]]:
    monkeypatch.chdir(plugin_tree(plugin))
    config = Config(search_path=(str(vllm_tree(vllm)),))
    return [(f.path, f.line, f.code) for f in run([Path(plugin.package)], config, jobs=2).findings]


@pytest.mark.vllm
def test_vllm_ascend_on_the_vllm_it_builds_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """vllm-ascend 0.10.0rc1 with vLLM 0.10.0 (no KV field on the output): no empty-output finding; 0.10.1rc1
    with vLLM 0.10.1: the bare sentinel of its `kv_connector_no_forward` and of its pipeline-parallel branch."""
    old = _plugin_findings(VLLM_ASCEND_OLD, "0.10.0", monkeypatch)
    assert not [f for f in old if f[2] in ("KVC002", "KVC003", "KVC006")]
    newer = _plugin_findings(VLLM_ASCEND_NEXT, "0.10.1", monkeypatch)
    runner, worker = "vllm_ascend/worker/model_runner_v1.py", "vllm_ascend/worker/worker_v1.py"
    assert [f for f in newer if f[2] == "KVC002"] == [
        (runner, _line(runner, "return EMPTY_MODEL_RUNNER_OUTPUT", "def kv_connector_no_forward"), "KVC002"),
        (worker, _line(worker, "return EMPTY_MODEL_RUNNER_OUTPUT", "not finished_sending and not finished_recving"),
         "KVC002"),
    ]


def _line(path: str, text: str, after: str) -> int:
    lines = Path(path).read_text().splitlines()
    start = next(number for number, line in enumerate(lines) if after in line)
    return next(number for number in range(start, len(lines)) if text in lines[number]) + 1


@pytest.mark.vllm
@pytest.mark.parametrize("version", ["0.10.1", "0.22.1", "0.33.0"])  # 0.22.1: a KV output parked across a call
def test_a_file_checked_alone_in_a_real_release_reports_what_the_whole_tree_does(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pre-commit hook's view: every file the whole run analyses, checked alone, gets the same findings."""
    monkeypatch.chdir(vllm_tree(version))
    whole = run([Path("vllm")], Config(), jobs=2)
    analysed = [report.display_path for report in whole.reports if report.analysed]
    assert len(analysed) >= 20
    for path in analysed:
        alone = run([Path(path)], Config(), jobs=1)
        assert [(f.line, f.code) for f in alone.findings] == [
            (f.line, f.code) for f in whole.findings if f.path == path
        ], path


def test_a_cached_report_follows_a_change_of_what_another_module_imports(tmp_path: Path) -> None:
    """The result cache keys a file's report by the index, which holds every module's imports: a consumer that
    reached a producer's class through a middle module's import stops reaching it when that import goes."""
    (tmp_path / "producer.py").write_text(
        "from vllm.v1.outputs import KVConnectorOutput\n\n"
        "class Source:\n    def poll(self) -> KVConnectorOutput | None: ...\n"
    )
    middle = tmp_path / "middle.py"
    middle.write_text("import producer  # the sources it hands out: KVConnectorOutput producers\n")
    (tmp_path / "consumer.py").write_text(
        "import middle\n\n\ndef use():\n    return middle.producer.Source().poll().finished_sending\n"
    )
    cache = tmp_path / "cache"
    first = run_kvlint("check", "--cache-dir", str(cache), ".", cwd=tmp_path)
    assert "consumer.py:5:12: KVC001" in first.stdout
    middle.write_text("import json  # no KVConnectorOutput producers any more\n")
    second = run_kvlint("check", "--cache-dir", str(cache), ".", cwd=tmp_path)
    assert second.returncode == 0, second.stdout


def test_a_star_import_binds_the_public_names_its_module_declares(tmp_path: Path) -> None:
    """`from .errors import *` in a package's `__init__`: `pkg.fail` is `pkg.errors.fail`; a private name is not
    bound by a star import, and a name the star's module does not declare stays unresolved."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from .errors import *  # what kv_connector_output checks need\n")
    (tmp_path / "pkg" / "errors.py").write_text(
        "from typing import NoReturn  # ends a step whose kv_connector_output is missing\n\n\n"
        "def fail(why: str) -> NoReturn:\n    raise RuntimeError(why)\n\n\n"
        "def _fail_quietly(why: str) -> NoReturn:\n    raise RuntimeError(why)\n"
    )
    from kvlint.running.runner import index_tree

    index, _ = index_tree([tmp_path / "pkg"], Config())
    assert index.canonical("pkg.fail") == "pkg.errors.fail"
    assert index.canonical("pkg._fail_quietly") == "pkg._fail_quietly"
    assert index.canonical("pkg.missing") == "pkg.missing"
    assert index.never_returns("fail", "pkg") and not index.never_returns("_fail_quietly", "pkg")


def test_a_package_is_read_for_the_re_exports_a_class_of_the_run_builds_on_only(tmp_path: Path) -> None:
    """`runners/__init__.py` names no configured name: it is read for what the run's classes build on or hold
    (a base, an attribute's class), followed to where that is declared; a package re-exporting only what no
    class of the run uses (vLLM's `config/__init__.py`) is not read at all."""
    for package in ("runners", "settings"):
        (tmp_path / package).mkdir()
    (tmp_path / "runners" / "__init__.py").write_text("from runners.base import BaseRunner as Runner\n")
    (tmp_path / "runners" / "base.py").write_text(
        "from vllm.v1.outputs import KVConnectorOutput\n\n\n"
        "class BaseRunner:\n    def take(self) -> KVConnectorOutput | None: ...\n"
    )
    (tmp_path / "settings" / "__init__.py").write_text("from settings.model import ModelSettings\n")
    (tmp_path / "settings" / "model.py").write_text("class ModelSettings:\n    size: int = 0\n")
    (tmp_path / "worker.py").write_text(
        "from runners import Runner\nfrom settings import ModelSettings\n\n\n"
        "class Worker:\n    def __init__(self, runner: Runner, settings: ModelSettings) -> None:\n"
        "        self.runner = runner\n        self.size = settings.size\n\n"
        "    def sent(self, out):\n        return out.kv_connector_output, self.runner.take().finished_sending\n"
    )
    from kvlint.binding.module_resolution import imported_declarations_for
    from kvlint.engine import prepare_source

    worker = prepare_source((tmp_path / "worker.py").read_bytes(), "worker.py", Config(), "worker", False)
    found = imported_declarations_for(worker.declarations, Config(), [tmp_path / "worker.py"])
    modules = {decl.module for decl in found if isinstance(decl, ModuleDecl)}
    assert "runners" in modules and "settings" not in modules
    assert any(getattr(decl, "qualname", "") == "runners.base.BaseRunner.take" for decl in found)
    result = run([tmp_path / "worker.py"], Config(), jobs=1)
    assert [(f.line, f.code) for f in result.findings] == [(11, "KVC001")]


REALISTIC = sorted(path.name for path in FIXTURES.glob("realistic*") if path.is_dir())


@pytest.mark.parametrize("suite", REALISTIC)
def test_each_file_of_a_realistic_project_checked_alone_reports_what_check_dot_does(
    suite: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's promise: `kvlint check FILE` reports on FILE what `kvlint check .` reports on it, also
    where the verdict rests on how the unchanged files call FILE's functions (realistic_c's mixin: a producer
    every call of which, in the runners, is on a connector path)."""
    shutil.copytree(FIXTURES / suite, tmp_path / "pkg")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    monkeypatch.chdir(tmp_path)
    whole = _found([Path(".")])
    assert whole, suite
    for path in sorted(Path("pkg").glob("*.py")):
        relative = path.as_posix()
        assert _found([path]) == Counter({k: n for k, n in whole.items() if k[0] == relative}), relative


def _pre_commit_chunks(paths: list[Path], chunks: int) -> list[list[Path]]:
    """The files cut into consecutive chunks, as pre-commit hands a hook a long list (`pre_commit.xargs`)."""
    size = -(-len(paths) // chunks)
    return [paths[start:start + size] for start in range(0, len(paths), size)]


@pytest.mark.parametrize("suite", ["binding/project", *REALISTIC])
def test_the_project_named_in_pre_commit_s_chunks_reports_what_check_dot_does(
    suite: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pre-commit run --all-files` names every file, a few thousand a run, and a commit several: each chunk
    reports what `kvlint check .` reports on its files. A named file the byte scan skips is no file the run
    declares (`runners/__init__.py` beside a runner built on what it re-exports: the runner lost its base).
    With many such files a run reads the project's relevant files as imports, and only the callers' imports
    (what `MANY_NAMED_SKIPPED` says)."""
    from kvlint.binding import module_resolution

    root = tmp_path / "project"
    shutil.copytree(FIXTURES / suite, root if suite == "binding/project" else root / "pkg")  # its root, a package
    (root / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    monkeypatch.chdir(root)
    whole = _found([Path(".")])
    assert whole, suite
    files = sorted(Path(".").rglob("*.py"))
    for many in (len(files), 0):  # a few named files, each read for its imports; and many (the fixtures are small)
        monkeypatch.setattr(module_resolution, "MANY_NAMED_SKIPPED", many)
        chunked: Counter[tuple[str, int, str]] = Counter()
        for chunk in _pre_commit_chunks(files, 3):
            chunked += _found(chunk)
        assert chunked == whole, many


@pytest.mark.parametrize("cached", [False, True])
def test_a_caller_the_byte_scan_skipped_is_guarded_by_what_it_imports_in_the_whole_run(
    cached: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`request_finisher.py` mentions no configured name: the run analyses it only as a caller of
    `pop_finished`, and only its own imports bring `abandon_requests`, the `NoReturn` helper no relevant file
    calls. `kvlint check .` reads them once its scan has found the caller (as `kvlint check` of that file
    does), with and without a cache, and a cached run whose helper came to return is not replayed."""
    from kvlint.running import run_record

    monkeypatch.setattr(run_record, "RACY_NS", 0)  # every status counts as settled (tests/test_cache_records.py)
    shutil.copytree(PROJECT, tmp_path / "project")
    monkeypatch.chdir(tmp_path / "project")
    finisher = "kv_project/request_finisher.py"
    cache = tmp_path / "cache" if cached else None

    def finisher_lines() -> list[tuple[int, str]]:
        result = run([Path(".")], Config(), jobs=1, cache_dir=cache)
        return sorted((f.line, f.code) for f in result.findings if f.path == finisher)

    assert finisher_lines() == [(21, "KVC001")]  # `note_missing` returns: its neighbour is flagged
    assert finisher_lines() == [(21, "KVC001")]  # (replayed, with a cache)
    errors = Path("kv_project/errors.py")
    errors.write_text(errors.read_text().replace(
        "def abandon_requests(reason: str) -> NoReturn:\n    logger.error(\"abandoning the step's requests: %s\", "
        "reason)\n    raise TransferFailed(reason)\n",
        "def abandon_requests(reason: str) -> None:\n    logger.error(\"abandoning the step's requests: %s\", "
        "reason)\n",
    ))
    assert finisher_lines() == [(14, "KVC001"), (21, "KVC001"), (28, "KVC001"), (28, "KVC001")]


def test_a_skipped_caller_s_imports_on_the_search_path_are_in_the_run_s_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `NoReturn` helper a skipped caller imports from a vendored package on the search path: a cached
    `kvlint check .` reads it for the caller, so the run's record names it, and a change to it is no replay."""
    from kvlint.running import run_record

    monkeypatch.setattr(run_record, "RACY_NS", 0)
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    vendor = tmp_path / "vendor" / "step_errors"
    vendor.mkdir(parents=True)
    helper = vendor / "__init__.py"
    helper.write_text("from typing import NoReturn\n\n\ndef lost_step(reason: str) -> NoReturn:\n"
                      "    raise RuntimeError(reason)\n")
    (root / "kv_project" / "request_finisher.py").write_text(
        (root / "kv_project" / "request_finisher.py").read_text()
        .replace("from kv_project.errors import abandon_requests, note_missing\n",
                 "from kv_project.errors import note_missing\nfrom step_errors import lost_step\n")
        .replace("abandon_requests(", "lost_step(")
    )
    monkeypatch.chdir(root)
    config = Config(search_path=(str(tmp_path / "vendor"),))

    def finisher_lines() -> list[int]:
        result = run([Path(".")], config, jobs=1, cache_dir=tmp_path / "cache")
        return sorted(f.line for f in result.findings if f.path == "kv_project/request_finisher.py")

    assert finisher_lines() == [22]
    assert finisher_lines() == [22]
    helper.write_text("def lost_step(reason: str) -> None:\n    print(reason)\n")
    assert finisher_lines() == [15, 22, 29, 29]


def test_many_named_files_are_not_each_read_for_their_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run naming more files than `MANY_NAMED_SKIPPED` that mention no configured name reads the imports of
    those that call what the project declares to return the payload, not of every one (`pre-commit run
    --all-files` on vLLM: reading each one's took 20 times `kvlint check .`). The caller's imported `NoReturn`
    guard is still seen, as the hook given that file alone sees it."""
    from kvlint.binding import module_resolution

    package = tmp_path / "serving"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "outputs.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass\nclass KVConnectorOutput:\n"
        "    finished_sending: set[str] | None = None\n\n\n@dataclass\nclass ModelRunnerOutput:\n"
        "    kv_connector_output: KVConnectorOutput | None = None\n"
    )
    (package / "transfer.py").write_text(
        "from serving.outputs import KVConnectorOutput, ModelRunnerOutput\n\n\n"
        "def take_kv_output(output: ModelRunnerOutput) -> KVConnectorOutput | None:\n"
        "    return output.kv_connector_output\n"
    )
    (package / "errors.py").write_text(
        "from typing import NoReturn\n\n\ndef abort_step(reason: str) -> NoReturn:\n"
        "    raise RuntimeError(reason)\n"
    )
    (package / "scheduler.py").write_text(
        "from serving.errors import abort_step\nfrom serving.transfer import take_kv_output\n\n\n"
        "def sent_requests(output):\n"
        "    kvo = take_kv_output(output)\n"
        "    if kvo is None:\n"
        "        abort_step(\"the step came back without its transfer state\")\n"
        "    return kvo.finished_sending\n\n\n"
        "def sent_requests_unchecked(output):\n"
        "    kvo = take_kv_output(output)\n"
        "    return kvo.finished_sending  # the finding\n"
    )
    for number in range(80):  # the rest of a serving package: modules that never touch a connector output
        (package / f"sampling_{number:02d}.py").write_text(
            f"import math\n\n\ndef temperature_{number}(logits, value):\n"
            "    return [x / max(value, 1e-5) for x in logits] if math.isfinite(value) else logits\n"
        )
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'serving'\n")
    monkeypatch.chdir(tmp_path)
    read: list[str] = []
    declarations_of = module_resolution.declarations_of

    def counted(data: bytes, module_name: str, is_package: bool, config: Config) -> list:
        read.append(module_name)
        return declarations_of(data, module_name, is_package, config)

    monkeypatch.setattr(module_resolution, "declarations_of", counted)
    named = sorted(path for path in Path("serving").glob("*.py") if path.name not in ("outputs.py", "transfer.py"))
    assert len(named) > module_resolution.MANY_NAMED_SKIPPED
    assert _found(named) == Counter({("serving/scheduler.py", 14, "KVC001"): 1})
    assert "serving.scheduler" in read and "serving.errors" in read
    assert not [module for module in read if module.startswith("serving.sampling")]
    read.clear()
    assert _found([Path("serving/scheduler.py")]) == Counter({("serving/scheduler.py", 14, "KVC001"): 1})


def test_a_warm_hook_run_sees_a_runner_call_its_producer_off_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kvlint check kv_mixin.py --cache-dir` counts the runners' calls of `_poll_finished_transfers` (all on a
    connector path, so the sentinel it returns is KVC002); its run record holds the runners it read, so once a
    runner calls it off the path too, the next run is not a replay and the finding goes."""
    from kvlint.running import run_record

    monkeypatch.setattr(run_record, "RACY_NS", 0)  # every status counts as settled (tests/test_cache_records.py)
    shutil.copytree(FIXTURES / "realistic_c", tmp_path / "project" / "pkg")
    (tmp_path / "project" / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    monkeypatch.chdir(tmp_path / "project")

    def check() -> tuple[list[tuple[int, str]], bool]:
        result = run([Path("pkg/kv_mixin.py")], Config(), jobs=1, cache_dir=tmp_path / "cache")
        return [(f.line, f.code) for f in result.findings if f.line == 102], result.index is None

    assert check() == ([(102, "KVC002")], False)
    assert check() == ([(102, "KVC002")], True)  # replayed
    runner = Path("pkg/tpu_runner.py")
    runner.write_text(runner.read_text().replace(
        "            return EMPTY_MODEL_RUNNER_OUTPUT\n",
        "            return self._poll_finished_transfers(scheduler_output)\n", 1,
    ))
    assert check() == ([], False)


@pytest.mark.parametrize(("source", "exports"), [
    ("__all__ = ['fail', '_abort']\n", ("fail", "_abort")),
    ("__all__ = ['a']\n__all__ += ('b',)\n__all__.append('c')\n__all__.extend(['d'])\n", ("a", "b", "c", "d")),
    ("def f():\n    __all__ = ['local']\n__all__ = ('kept',)\n", ("kept",)),  # a function's local is not it
    ("x = 1\n", None),  # none declared: a star import binds the public names
    ("from base import __all__ as base_all\n__all__ = base_all + ['a']\n", None),  # built from another module's
    ("if TYPE_CHECKING:\n    __all__ = ['a']\n", None),  # in a branch: not followed
    ("__all__, version = ['a'], 1\n", None),
    ("__all__ = ['a']\n__all__.remove('a')\n", None),
])
def test_a_literal_all_is_what_a_star_import_binds(source: str, exports: tuple[str, ...] | None) -> None:
    import ast

    from kvlint.binding.declarations import declared_exports

    assert declared_exports(ast.parse(source)) == exports


def _relevant_files(root: Path) -> list[tuple[Path, bytes, str, bool]]:
    """(path, bytes, module name, is a package) of each file under `root` that mentions a configured name."""
    from kvlint.byte_scan import mentions_any
    from kvlint.source import module_name_for

    names = Config().names()
    found = []
    for path in sorted(root.rglob("*.py")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if mentions_any(data, names):
            found.append((path, data, *module_name_for(path)))
    return found


@pytest.mark.parametrize("where", ["fixtures", "vllm-0.33.0"])
def test_a_module_analysed_and_read_as_an_import_declares_the_same_either_way(where: str) -> None:
    """mypy's helper parses a module it both analyses and reads (as an import, or as a caller of a producer)
    once: what the cheap stage declares, cut to `imported_view`, is what `declarations_of` reads of it, and its
    connector-path calls are those a producer's callee lookup parses for. Every fixture, and real vLLM."""
    from kvlint.binding.declarations import PathCalls, module_declarations, producer_facts_wanted
    from kvlint.binding.module_resolution import declarations_of, imported_view
    from kvlint.binding.names import ImportTable, walk_statements
    from kvlint.engine import prepare_source
    from kvlint.source import decode_source, parse_source

    config = Config()
    root = FIXTURES if where == "fixtures" else vllm_tree("0.33.0") / "vllm"
    compared = calling = 0
    for path, data, module, is_package in _relevant_files(root):
        prepared = prepare_source(data, str(path), config, module, is_package)
        if not prepared.relevant or prepared.error or prepared.fallback_error:
            continue
        compared += 1
        assert imported_view(prepared.declarations) == declarations_of(data, module, is_package, config), path
        text = decode_source(data)
        tree = parse_source(text)
        imports = ImportTable.from_statements(walk_statements(tree), module, is_package)
        parsed = [decl for decl in module_declarations(tree, module, imports, config.empty_sentinels,
                                                       *producer_facts_wanted(text, config))
                  if isinstance(decl, PathCalls)]
        assert [decl for decl in prepared.declarations if isinstance(decl, PathCalls)] == parsed, path
        calling += bool(parsed)
    assert compared > 40 and calling > 2, (compared, calling)

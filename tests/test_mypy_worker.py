"""The mypy face's helper (issue 15): a helper stuck on a file costs at most the timeout, once, and the
face analyses in mypy's process from then on; `KVLINT_MYPY_WORKER` takes the usual false spellings. What the
analysis costs (issue 27): a file that mentions no configured name is answered by the byte scan alone, and the
modules a run's files import are declared once, with the engine's answers."""

from __future__ import annotations

from pathlib import Path

import pytest

import kvlint.mypy_worker as mypy_worker
from kvlint.binding.declarations import Declaration
from kvlint.config import Config, ConfigError
from kvlint.engine import analyse_source
from kvlint.findings import Finding
from kvlint.mypy_worker import (
    REPORTED_CODES,
    AnalysisWorker,
    ImportedDeclarations,
    ModuleAnalysis,
    analyse_module,
    file_key,
    scan_module,
    worker_wanted,
)
from kvlint.sites import SiteKind
from kvlint.source import module_name_for
from tests.conftest import FIXTURES


@pytest.mark.parametrize("value", ["0", "false", "False", "no", "NO", "off", "", " off "])
def test_false_spellings_turn_the_helper_off(value: str) -> None:
    assert worker_wanted(value, default=True) is False


@pytest.mark.parametrize("value", ["1", "true", "yes", "on"])
def test_true_spellings_turn_it_on(value: str) -> None:
    assert worker_wanted(value, default=False) is True


def test_unset_means_the_default() -> None:
    assert worker_wanted(None, default=True) is True and worker_wanted(None, default=False) is False


def test_a_stuck_helper_times_out_once_and_the_face_goes_on_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(AnalysisWorker, "HELPER", "import sys, time; sys.stdin.buffer.read(1); time.sleep(600)")
    worker = AnalysisWorker(timeout=0.5)
    first, second = str(FIXTURES / "nasty" / "canary.py"), str(FIXTURES / "vllm_like" / "worker.py")
    worker.submit(first)
    worker.submit(second)
    assert worker.take(first) is None  # the plugin then analyses this file itself
    assert worker.take(second) is None
    worker.submit(first)
    assert worker.take(first) is None
    assert capsys.readouterr().err == (
        f"kvlint: the analysis helper took over 0.5 s on {first}; kvlint analyses in mypy's process from now on "
        "(set KVLINT_MYPY_TIMEOUT to wait longer)\n"
    )
    assert worker._process is not None and worker._process.wait(timeout=10) is not None  # killed


def test_a_working_helper_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = AnalysisWorker(timeout=120)
    path = str(FIXTURES / "vllm_like" / "worker.py")
    assert Path(path).is_file()
    worker.submit(path)
    analysis = worker.take(path)
    assert analysis is not None and analysis.key != (0, 0)
    worker._stop()


# -- what the analysis costs: the byte scan alone for most files, each imported module declared once -----------


def _engine_analysis(path: str, config: Config) -> tuple[tuple[Finding, ...], frozenset[tuple[int, int]]]:
    """What `engine.analyse_source` says of a file as the plugin asks it (`imports_from`, no fixes): the findings
    the face reports from any hook, and the optional-field reads on a connector path."""
    data = Path(path).read_bytes()
    module_name, is_package = module_name_for(Path(path))
    report = analyse_source(data, path, config, module_name=module_name, is_package=is_package, fixes=False,
                            imports_from=Path(path))
    findings = tuple(finding for finding in report.findings if finding.code.startswith(REPORTED_CODES))
    narrowed = frozenset((site.span.line, site.span.column) for site in report.sites
                         if site.kind is SiteKind.OPTIONAL_ACCESS and site.on_connector_path)
    return findings, narrowed


def test_a_file_that_mentions_no_configured_name_is_answered_by_the_byte_scan(tmp_path: Path) -> None:
    quiet = tmp_path / "quiet.py"
    quiet.write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    config = Config()
    scanned = scan_module(str(quiet), config)
    assert scanned is not None and scanned == analyse_module(str(quiet), config)
    assert scanned.key == file_key(str(quiet)) and not scanned.findings and not scanned.narrowed
    # a file that names a configured field goes to the engine
    assert scan_module(str(FIXTURES / "vllm_like" / "worker.py"), config) is None
    bad = ConfigError("pyproject.toml: unknown key 'guards' in [tool.kvlint]")
    reported = scan_module(str(quiet), bad)
    assert reported is not None
    assert [finding.message for finding in reported.findings] == [f"configuration error: {bad}"]
    assert scan_module(str(tmp_path / "gone.py"), config) == ModuleAnalysis()


def test_the_face_analyses_as_the_engine_does_and_parses_each_module_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The helper runs for a whole mypy run: each module is parsed once, whether it is first analysed or first
    read as an import of another (then its cheap stage waits for its analysis), and each file's findings are
    those of `engine.analyse_source` with `imports_from`."""
    import kvlint.binding.module_resolution as module_resolution
    import kvlint.engine as engine

    config = Config()
    paths = sorted(str(path) for path in (FIXTURES / "vllm_like").glob("*.py"))
    expected = {path: _engine_analysis(path, config) for path in paths}
    assert any(findings for findings, _ in expected.values()) and any(narrowed for _, narrowed in expected.values())
    parsed: list[tuple[str, str]] = []  # (module, how): read as an import, prepared for an analysis or ahead of it
    declarations_of, prepare_source = module_resolution.declarations_of, engine.prepare_source

    def counted_import(data: bytes, module_name: str, is_package: bool, config: Config) -> list[Declaration]:
        parsed.append((module_name, "import"))
        return declarations_of(data, module_name, is_package, config)

    def counted_prepare(data: bytes, display_path: str, *args: object, **kwargs: object) -> engine.PreparedFile:
        prepared = prepare_source(data, display_path, *args, **kwargs)  # type: ignore[arg-type]
        parsed.append((prepared.module_name, "ahead" if not display_path else "analysis"))
        return prepared

    monkeypatch.setattr(module_resolution, "declarations_of", counted_import)
    monkeypatch.setattr(engine, "prepare_source", counted_prepare)
    monkeypatch.setattr(mypy_worker, "_IMPORTED", {})  # a fresh process
    for path in paths:
        analysis = analyse_module(path, config)
        assert (analysis.findings, analysis.narrowed) == expected[path], path
    modules = [module for module, _ in parsed]
    assert len(modules) == len(set(modules)), parsed  # once each, however it was first read
    hows = {how for _, how in parsed}
    assert {"ahead", "analysis"} <= hows, parsed  # read as an import before its analysis, and after it
    parsed.clear()
    for path in paths:  # and again, as a daemon's helper would: the imports from memory, the same answers
        assert (analyse_module(path, config).findings, analyse_module(path, config).narrowed) == expected[path]
    assert {how for _, how in parsed} <= {"analysis"}, parsed


def test_a_changed_imported_module_is_declared_again() -> None:
    memo = ImportedDeclarations(Config())
    before = memo.file_key("<imported>", "pkg.outputs", False, b"class A: ...\n")
    after = memo.file_key("<imported>", "pkg.outputs", False, b"class B: ...\n")
    assert before != after and before == memo.file_key("<imported>", "pkg.outputs", False, b"class A: ...\n")
    memo.remember_declarations(before, [])
    assert memo.recall_declarations(before) == [] and memo.recall_declarations(after) is None


@pytest.mark.parametrize(("tree", "relative", "line"), [
    ("realistic_c", "kv_mixin.py", 102),  # every call of the producer in the project is on a connector path
    ("summaries", "pp_stashed/runner.py", 24),  # stored on `self`, read back by nothing in the project
])
def test_a_module_gets_what_the_project_around_it_decides(
    tree: str, relative: str, line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mypy face analyses one module at a time, as `kvlint check FILE` does: with what the project's other
    files decide of it."""
    from kvlint.running.runner import run

    monkeypatch.chdir(FIXTURES / tree)
    config = Config()
    producers = ("KVC002", "KVC003", "KVC004", "KVC006")  # what the face reports from the engine's findings
    found = [f for f in analyse_module(relative, config).findings if f.code in producers]
    expected = [f for f in run([Path(relative)], config, jobs=1).findings if f.code in producers]
    assert line in {f.line for f in found}
    assert [(f.line, f.code) for f in found] == [(f.line, f.code) for f in expected]


CALLED_OFF_THE_PATH = """\
from .kv_mixin import KVConnectorRunnerMixin


class OffPathRunner(KVConnectorRunnerMixin):
    def idle_step(self, scheduler_output):
        return self._poll_finished_transfers(scheduler_output)
"""


def test_the_project_read_shared_across_files_follows_its_root_and_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The helper reads the project beyond its files once for all of them (`ProjectMemo`), not once per file
    that defines a producer: two projects in one process each get their own callers, and a caller added to a
    project after its read counts at the next file, as a run of its own would count it."""
    import shutil

    from kvlint.running.runner import run

    walks: list[Path] = []
    memo = mypy_worker.ProjectMemo()
    files_under = memo.files_under

    def counted(root: Path, config: Config) -> mypy_worker.WalkResult:
        walks.append(root)
        return files_under(root, config)

    monkeypatch.setattr(memo, "files_under", counted)
    monkeypatch.setattr(mypy_worker, "PROJECT_FILES", memo)
    one, other = tmp_path / "one", tmp_path / "other"
    for project in (one, other):
        shutil.copytree(FIXTURES / "realistic_c", project)
    (other / "off_path.py").write_text(CALLED_OFF_THE_PATH)
    config = Config()

    def producers(found: tuple[Finding, ...] | list[Finding]) -> list[tuple[int, str]]:
        return [(finding.line, finding.code) for finding in found if finding.code in ("KVC002", "KVC003")]

    def analysed(project: Path) -> list[tuple[int, str]]:
        found = producers(analyse_module(str(project / "kv_mixin.py"), config).findings)
        assert found == producers(run([project / "kv_mixin.py"], config, jobs=1).findings), project
        return found

    assert (102, "KVC002") in analysed(one)  # every call of the producer in this project is on a connector path
    assert (102, "KVC002") not in analysed(other)  # here one is not
    assert (102, "KVC002") in analysed(one)
    (one / "off_path.py").write_text(CALLED_OFF_THE_PATH)
    assert (102, "KVC002") not in analysed(one)
    assert len(walks) == 4 and set(walks) == {one, other}  # through the memo each time


def test_the_shared_project_read_serves_only_what_a_settled_status_proves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's status key proves its bytes only when it was settled before the walk (older than `RACY_NS`):
    a file rewritten within one timestamp tick keeps its size, mtime and ctime. Here every status is made to
    look unchanged: a young key is read again, a settled one is served from memory; a new configuration, or
    another root, is a walk of its own."""
    from kvlint.running import run_record

    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_bytes(b"first = 1\n")
    (root / "skipped").mkdir()
    (root / "skipped" / "b.py").write_bytes(b"second = 2\n")
    memo = mypy_worker.ProjectMemo()
    config = Config()

    def files(root: Path, config: Config) -> dict[str, bytes]:
        return {path.relative_to(root).as_posix(): data for path, data in memo.files_under(root, config)[2]}

    assert files(root, config) == {"pkg/a.py": b"first = 1\n", "skipped/b.py": b"second = 2\n"}
    looked_at = (root, root / "pkg", root / "skipped", root / "pkg" / "a.py", root / "skipped" / "b.py")
    recorded = {str(path): run_record.current_key(str(path)) for path in looked_at}
    monkeypatch.setattr(run_record, "current_key", lambda path: recorded.get(path))  # no status ever changes
    (root / "pkg" / "a.py").write_bytes(b"FIRST = 1\n")  # same size: as if within the tick of the walk
    assert files(root, config)["pkg/a.py"] == b"FIRST = 1\n"  # young: read again
    monkeypatch.setattr(run_record, "RACY_NS", -10**18)  # every key now counts as settled
    (root / "pkg" / "a.py").write_bytes(b"third = 3\n")
    assert files(root, config)["pkg/a.py"] == b"FIRST = 1\n"  # a settled, unchanged key: served from memory
    assert files(root, Config(exclude=("skipped",))) == {"pkg/a.py": b"third = 3\n"}  # another configuration
    other = tmp_path / "other"
    (other / "pkg").mkdir(parents=True)
    (other / "pkg" / "c.py").write_bytes(b"fourth = 4\n")
    assert files(other, config) == {"pkg/c.py": b"fourth = 4\n"}


def test_the_shared_project_walk_names_each_module_once_until_its_listing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files beyond each analysed file are named once for the process (`ProjectMemo.module_names`): a
    common word names hundreds of them, for each file that defines a producer. A walk done again, because a
    directory's listing changed, names its files again."""
    import kvlint.binding.module_resolution as module_resolution
    from kvlint.binding.module_resolution import ProjectBeyondRun
    from kvlint.running import run_record

    root = tmp_path / "project"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "mod.py").write_text("def step(): ...\n")
    (root / "pkg" / "runner.py").write_text("")
    monkeypatch.setattr(run_record, "RACY_NS", -10**18)  # every status counts as settled: the memo serves
    named: list[Path] = []
    module_name_for = module_resolution.module_name_for

    def counted(path: Path) -> tuple[str, bool]:
        named.append(path)
        return module_name_for(path)

    monkeypatch.setattr(module_resolution, "module_name_for", counted)
    memo, config = mypy_worker.ProjectMemo(), Config()

    def names_beyond(run_file: Path) -> list[tuple[str, bool]]:
        project = ProjectBeyondRun(config, [run_file], None, memo)
        return [(module, is_package) for _, module, is_package, _ in project.files_naming(["step"], set())]

    assert names_beyond(root / "pkg" / "runner.py") == [("pkg.sub.mod", False)]
    assert names_beyond(root / "pkg" / "__init__.py") == [("pkg.sub.mod", False)]  # another file: from memory
    assert len(named) == 1
    (root / "pkg" / "sub" / "other.py").write_text("step = None\n")  # the listing of pkg/sub changes
    assert names_beyond(root / "pkg" / "runner.py") == [("pkg.sub.mod", False), ("pkg.sub.other", False)]
    assert len(named) == 3  # a new walk: each named again


def test_a_name_settled_is_looked_for_no_further(tmp_path: Path) -> None:
    """`ProjectBeyondRun.files_naming(still=...)`: once the caller drops a name (a producer's name settled by a
    file the byte scan skips), no later file is tested for it, and an empty set ends the walk."""
    from kvlint.binding.module_resolution import ProjectBeyondRun

    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("")
    for name, text in (("a.py", "alpha beta\n"), ("b.py", "alpha beta\n"), ("c.py", "beta\n"), ("d.py", "alpha\n")):
        (root / name).write_text(text)
    (root / "run.py").write_text("")
    project = ProjectBeyondRun(Config(), [root / "run.py"], None)
    still = {"alpha", "beta"}
    seen = []
    for _, module, _, named in project.files_naming(["alpha", "beta"], set(), still):
        seen.append((module, named))
        still.discard("alpha")  # settled at the first file that names it
        if module == "c":
            still.clear()
    assert seen == [("a", ["alpha", "beta"]), ("b", ["beta"]), ("c", ["beta"])]  # d.py: never reached

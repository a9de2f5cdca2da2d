"""A KV output followed across a call: parked on a returned holder, kept or dropped by the callers.

`fixtures/summaries` holds runner + worker packages in the shapes vLLM 0.22 and tpu-inference shipped, each
beside its fixed twin (the worker reads the parked field back, the runner also keeps the value, the worker
sends the holder itself, only a test calls the runner), written for these tests.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from kvlint.binding.summaries import (
    HolderUse, ParkedReturn, PassThrough, SelfStore, function_summaries, is_test_module, stored_only,
)
from kvlint.config import Config, load_config
from kvlint.running.runner import run
from tests.conftest import FIXTURES
from tests.test_fixtures import expected_findings

SUMMARIES = FIXTURES / "summaries"
REPOSITORY = FIXTURES.parent


def _summaries(source: str) -> list[object]:
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    summaries = function_summaries(function, f"m.{function.name}", lambda name: f"m.{name}", ("kv_connector_output",))
    return [summary for summary in summaries if not isinstance(summary, SelfStore)]  # `_stored` asks for those


def test_the_fixture_findings_match_their_markers_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPOSITORY)
    result = run([SUMMARIES.relative_to(REPOSITORY)], Config(), jobs=1)
    found = {(f.path, f.line, f.code): 1 for f in result.findings}
    assert found == dict(expected_findings(SUMMARIES))
    assert len(found) == 6


def test_each_file_checked_alone_reports_what_the_whole_project_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook passes the changed runner only: its callers are found in the rest of the project."""
    project = tmp_path / "project"
    shutil.copytree(SUMMARIES, project)
    (project / "pyproject.toml").write_text('[project]\nname = "pipeline"\n')
    monkeypatch.chdir(project)
    whole = run([Path(".")], Config(), jobs=1)
    assert len(whole.findings) == 6
    for path in sorted(project.rglob("*.py")):
        relative = path.relative_to(project).as_posix()
        alone = run([Path(relative)], Config(), jobs=1)
        assert [(f.line, f.code) for f in alone.findings] == [
            (f.line, f.code) for f in whole.findings if f.path == relative
        ], relative


def test_the_message_names_the_holder_and_the_caller_that_drops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(SUMMARIES)
    [finding] = run([Path("pp_parked")], Config(), jobs=1).findings
    assert finding.code == "KVC006" and finding.path == "pp_parked/runner.py"
    assert "only parked on the returned `stage_output` (`StageTensors`)" in finding.message
    assert "its caller `pp_parked.worker.StageWorker.execute_model` (line 24) drops it" in finding.message


def test_an_assert_then_only_other_fields_read_drops_the_holder() -> None:
    source = (
        "def execute_model(self, s):\n"
        "    output = self.runner.execute_model(s)\n"
        "    if isinstance(output, Done):\n"
        "        return output\n"
        "    assert isinstance(output, Stage)\n"
        "    self.pipe.send(output.tensors, group=output.group)\n"
        "    return None\n"
    )
    assert _summaries(source) == [HolderUse("m.execute_model", "execute_model", "m.Done", False, 3),
                                  HolderUse("m.execute_model", "execute_model", "m.Stage", True, 7)]


@pytest.mark.parametrize("use", [
    "kv = output.kv_connector_output",  # the parked field read back
    "self.pipe.send(output)",  # the holder itself handed on
    "self.last = output",  # stored
    "tensors = output.to_wire()",  # a method of the holder may read the field itself
    "output = None",  # rebound: what follows is about something else
    "later = lambda: output",  # captured whole
])
def test_any_other_use_of_the_holder_keeps_it(use: str) -> None:
    source = (
        "def execute_model(self, s):\n"
        "    output = self.runner.execute_model(s)\n"
        "    if isinstance(output, Stage):\n"
        f"        {use}\n"
        "        return None\n"
        "    return output\n"
    )
    [found] = _summaries(source)
    assert found == HolderUse("m.execute_model", "execute_model", "m.Stage", False, 3)


def test_a_block_that_falls_through_to_code_not_followed_keeps_the_holder() -> None:
    source = (
        "def execute_model(self, s):\n"
        "    output = self.runner.execute_model(s)\n"
        "    if isinstance(output, Stage):\n"
        "        self.pipe.send(output.tensors)\n"
        "    return self.finish(output)\n"
    )
    assert _summaries(source) == [HolderUse("m.execute_model", "execute_model", "m.Stage", False, 3)]


def test_a_function_returning_a_call_result_as_it_is_passes_it_through() -> None:
    source = "def execute_model(self, s):\n    with self.mesh:\n        out = self._execute_model(s)\n    return out\n"
    assert _summaries(source) == [PassThrough("m.execute_model", "_execute_model")]
    used = "def execute_model(self, s):\n    out = self._execute_model(s)\n    self.log(out)\n    return out\n"
    assert _summaries(used) == []


def test_a_parked_return_is_declared_for_the_hook_to_look_for_callers() -> None:
    source = "def _execute_model(self, s):\n    h = self.f(s)\n    h.kv_connector_output = kvo\n    return h\n"
    assert _summaries(source) == [ParkedReturn("m._execute_model", "_execute_model")]
    on_self = "def _execute_model(self, s):\n    self.kv_connector_output = kvo\n    return self\n"
    assert _summaries(on_self) == []


@pytest.mark.parametrize(("module", "is_test"), [
    ("tests.worker.test_gpu_runner", True), ("pkg.conftest", True), ("runner_test", True),
    ("vllm.v1.worker.gpu_worker", False), ("vllm.testing_utils", False),
])
def test_test_modules_are_no_callers(module: str, is_test: bool) -> None:
    assert is_test_module(module) is is_test


def test_a_holder_use_round_trips_through_the_cache_format() -> None:
    from kvlint.binding.declarations import declaration_from_json

    from kvlint.binding.declarations import AttributeReads

    for decl in (HolderUse("m.W.execute_model", "execute_model", "m.Stage", True, 12),
                 PassThrough("m.R.execute_model", "_execute_model"),
                 ParkedReturn("m.R._execute_model", "_execute_model"),
                 SelfStore("m", "_pending", 2, ("m.R.execute_model", "m.R.warm_up")),
                 AttributeReads("m.worker", ("_pending",))):
        assert declaration_from_json(decl.to_json()) == decl


def test_the_audit_shows_where_it_was_parked_and_who_drops_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inventory row, the JSON and the picture's red edge say it was parked and which caller drops it."""
    import json

    from tests.conftest import run_kvlint

    monkeypatch.chdir(SUMMARIES)
    listed = json.loads(run_kvlint("audit", "pp_parked", "--format", "json", cwd=SUMMARIES).stdout)
    [dropped] = listed["dropped_kv_outputs"]
    assert dropped["parked_on"] == "stage_output (StageTensors)"
    assert dropped["dropped_by"] == ["`pp_parked.worker.StageWorker.execute_model` (line 24)"]
    text = " ".join(run_kvlint("audit", "pp_parked", cwd=SUMMARIES).stdout.split())
    assert "`kv_connector_output` parked on stage_output (StageTensors), which no caller reads" in text
    dot = run_kvlint("audit", "pp_parked", "--format", "dot", cwd=SUMMARIES).stdout
    [edge] = [line for line in dot.splitlines() if "parks it on a holder no caller reads" in line]
    assert 'color="#c62828"' in edge  # red: the KVC006 it stands for is reported


def test_a_warm_hook_run_sees_the_caller_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run record of `kvlint check runner.py --cache-dir` holds the project files it read for callers: when
    the worker, not a file of the run, starts reading the parked field back, the next run is not a replay."""
    from kvlint.running import run_record

    monkeypatch.setattr(run_record, "RACY_NS", 0)  # every status counts as settled (tests/test_cache_records.py)
    project = tmp_path / "project"
    shutil.copytree(SUMMARIES / "pp_parked", project / "pp_parked")
    (project / "pyproject.toml").write_text('[project]\nname = "pipeline"\n')
    monkeypatch.chdir(project)

    def check() -> tuple[list[str], bool]:
        result = run([Path("pp_parked/runner.py")], Config(), jobs=1, cache_dir=tmp_path / "cache")
        return [f.code for f in result.findings], result.index is None  # a replay indexes nothing

    assert check() == (["KVC006"], False)
    assert check() == (["KVC006"], True)
    worker = project / "pp_parked" / "worker.py"
    worker.write_text(worker.read_text().replace(
        "        self.pipe.send_tensor_dict(output.tensors)\n        return None\n",
        "        self.pipe.send_tensor_dict(output.tensors)\n        return output.kv_connector_output and None\n",
    ))
    assert check() == ([], False)


# ---------------------------------------------------------------- a KV output stored on `self`, read by nothing


STASHED = SUMMARIES / "pp_stashed"
STASHED_READ = SUMMARIES / "pp_stashed_read"


def _stored(source: str) -> list[SelfStore]:
    tree = ast.parse(source)
    summaries = [summary for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                 for summary in function_summaries(node, f"m.R.{node.name}", lambda name: f"m.{name}",
                                                   ("kv_connector_output",))]
    return [summary for summary in stored_only(summaries, "m", source) if isinstance(summary, SelfStore)]


STORE = "class R:\n    def step(self, kvo):\n        self._kept = kvo\n        return None\n"


@pytest.mark.parametrize(("more", "stored"), [
    ("", True),
    ("    def again(self, kvo):\n        self._kept: KVConnectorOutput | None = kvo\n", True),  # annotated, too
    ("    def later(self):\n        return self._kept\n", False),  # read back
    ("    def later(self):\n        self._kept += 1\n", False),  # an augmented store reads it
    ("    def later(self, x):\n        return x == self._kept\n", False),
    ("    # self._kept is read by the engine\n", False),  # a comment may say where: silence
    ("    def later(self):\n        return 'self._kept'\n", False),
    ("    def later(self, name):\n        return getattr(self, name)\n", False),  # a computed name
    ("    def later(self):\n        return vars(self)\n", False),
])
def test_an_attribute_is_stored_only_when_every_mention_of_it_in_its_module_is_a_store(
    more: str, stored: bool
) -> None:
    found = _stored(STORE + more)
    assert [(s.attribute, s.methods) for s in found] == ([("_kept", ("m.R.step",))] if stored else [])


def test_a_stored_only_attribute_counts_its_stores_once_per_module() -> None:
    [found] = _stored(STORE + "    def again(self, kvo):\n        self._kept = (1, kvo)\n")
    assert found.mentions == 2 and found.methods == ("m.R.again", "m.R.step")


def test_the_message_says_where_the_value_was_stored_and_that_nothing_reads_it(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(SUMMARIES)
    found = run([Path("pp_stashed")], Config(), jobs=1).findings
    assert [(f.path, f.line) for f in found] == [
        ("pp_stashed/pipeline_worker.py", 20), ("pp_stashed/runner.py", 24), ("pp_stashed/runner.py", 54)]
    worker, runner, deferred = found
    assert ("it is only stored on `self._kv_output_for_sampling`, which nothing in the project reads back"
            in runner.message)
    assert "only stored on `self._deferred_step`" in deferred.message  # in a tuple with the request ids
    assert runner.resolved[-1] == "holder class: pp_stashed.runner.StashingRunner"
    # stored as it is read, no local name holding it: the attribute is what holds it
    assert ("drops what `self._pending_kv_output` holds (read from `output.kv_connector_output`)" in worker.message
            and "nothing in the project reads `self._pending_kv_output` back" in worker.message)
    assert worker.fix is None and "design choice" in (worker.no_fix or "")


@pytest.mark.parametrize(("path", "old", "new"), [
    ("worker.py", "            self.pipe.send_kv_output(self.model_runner._kept_kv_output)\n", "            pass\n"),
    ("plugin_runner.py", "class PluginRunner(GPUModelRunner):", "class PluginRunner:"),
    ("reflective.py", "getattr(self, name)", "self.__class__"),
    ("pipeline_worker.py", "        if output.kv_connector_output is None:\n"
     "            output.kv_connector_output, self._held_kv_output = self._held_kv_output, None\n", ""),
])
def test_each_silent_twin_is_silent_for_its_own_reason(
    path: str, old: str, new: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker reads the kept value back; vLLM's base class, out of sight, may; a class that reads its
    attributes by computed names may: without that one thing, each runner is reported."""
    project = tmp_path / "project"
    shutil.copytree(STASHED_READ, project / "pp_stashed_read")
    (project / "pyproject.toml").write_text('[project]\nname = "pipeline"\n')
    monkeypatch.chdir(project)
    assert run([Path(".")], Config(), jobs=1).findings == []
    edited = project / "pp_stashed_read" / path
    assert old in edited.read_text()
    edited.write_text(edited.read_text().replace(old, new))
    reported = {f.path for f in run([Path(".")], Config(), jobs=1).findings}
    assert reported == {f"pp_stashed_read/{'runner.py' if path == 'worker.py' else path}"}


def test_a_file_the_configuration_excludes_may_read_the_attribute_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`exclude` keeps a benchmark out of the check, not out of the project: what it reads back is read, for
    `kvlint check .` and for the hook given the runner alone."""
    project = tmp_path / "project"
    shutil.copytree(SUMMARIES / "pp_stashed", project / "pp_stashed")
    (project / "pyproject.toml").write_text('[project]\nname = "pipeline"\n\n[tool.kvlint]\nexclude = ["benchmarks"]\n')
    bench = project / "benchmarks" / "bench_sampling.py"
    bench.parent.mkdir()
    bench.write_text("def sampled_transfers(runner):\n    return runner._kv_output_for_sampling\n")
    monkeypatch.chdir(project)
    config = load_config([project])
    for paths in ([Path(".")], [Path("pp_stashed/runner.py")]):
        found = [(f.path, f.line) for f in run(paths, config, jobs=1).findings if f.path == "pp_stashed/runner.py"]
        assert found == [("pp_stashed/runner.py", 54)], paths  # line 24's value is read back by the benchmark
    bench.write_text("def sampled_transfers(runner):\n    return None\n")
    found = [(f.path, f.line) for f in run([Path(".")], config, jobs=1).findings if f.path == "pp_stashed/runner.py"]
    assert found == [("pp_stashed/runner.py", 24), ("pp_stashed/runner.py", 54)]


def test_a_module_read_from_the_search_path_that_names_the_attribute_may_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin's runner built on a base class the search path holds: the base that reads the attribute keeps
    the stored value; one that never names it leaves the store a drop."""
    plugin, platform = tmp_path / "plugin", tmp_path / "platform"
    shutil.copytree(STASHED_READ, plugin / "pp_stashed_read")
    (plugin / "pyproject.toml").write_text('[project]\nname = "plugin"\n')
    base = platform / "vllm" / "v1" / "worker"
    base.mkdir(parents=True)
    for package in (platform / "vllm", platform / "vllm" / "v1", base):
        (package / "__init__.py").write_text("")
    monkeypatch.chdir(plugin)
    config = Config(search_path=(str(platform),))
    for reads, reported in ((False, True), (True, False)):
        (base / "gpu_model_runner.py").write_text(
            "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT\n\n\nclass GPUModelRunner:\n"
            "    def sample_tokens(self, grammar_output):\n"
            + ("        return self._plugin_kv_output\n" if reads else "        return EMPTY_MODEL_RUNNER_OUTPUT\n"))
        found = {f.path for f in run([Path("pp_stashed_read/plugin_runner.py")], config, jobs=1).findings}
        assert found == ({"pp_stashed_read/plugin_runner.py"} if reported else set()), reads


def test_a_warm_run_sees_a_skipped_file_start_reading_the_stored_attribute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the byte scan skips (it names no configured name) that reads the attribute back keeps the value:
    a cached run of the whole tree, and one of the runner alone, follow it."""
    from kvlint.running import run_record

    monkeypatch.setattr(run_record, "RACY_NS", 0)
    project = tmp_path / "project"
    shutil.copytree(STASHED, project / "pp_stashed")
    (project / "pyproject.toml").write_text('[project]\nname = "pipeline"\n')
    monkeypatch.chdir(project)
    reader = project / "pp_stashed" / "drain.py"
    reader.write_text("def drain(runner):\n    return None\n")

    def lines(paths: list[str]) -> list[int]:
        result = run([Path(p) for p in paths], Config(), jobs=1, cache_dir=tmp_path / "cache")
        return [f.line for f in result.findings if f.path == "pp_stashed/runner.py"]

    for paths in (["."], ["pp_stashed/runner.py"]):
        assert lines(paths) == [24, 54]
        assert lines(paths) == [24, 54]  # a replay
    reader.write_text("def drain(runner):\n    return runner._kv_output_for_sampling\n")
    for paths in (["."], ["pp_stashed/runner.py"]):
        assert lines(paths) == [54]

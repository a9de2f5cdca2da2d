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

from kvlint.binding.summaries import HolderUse, ParkedReturn, PassThrough, function_summaries, is_test_module
from kvlint.config import Config
from kvlint.running.runner import run
from tests.conftest import FIXTURES
from tests.test_fixtures import expected_findings

SUMMARIES = FIXTURES / "summaries"
REPOSITORY = FIXTURES.parent


def _summaries(source: str) -> list[object]:
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    return function_summaries(function, f"m.{function.name}", lambda name: f"m.{name}", ("kv_connector_output",))


def test_the_fixture_findings_match_their_markers_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPOSITORY)
    result = run([SUMMARIES.relative_to(REPOSITORY)], Config(), jobs=1)
    found = {(f.path, f.line, f.code): 1 for f in result.findings}
    assert found == dict(expected_findings(SUMMARIES))
    assert len(found) == 3


def test_each_file_checked_alone_reports_what_the_whole_project_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook passes the changed runner only: its callers are found in the rest of the project."""
    project = tmp_path / "project"
    shutil.copytree(SUMMARIES, project)
    (project / "pyproject.toml").write_text('[project]\nname = "pipeline"\n')
    monkeypatch.chdir(project)
    whole = run([Path(".")], Config(), jobs=1)
    assert len(whole.findings) == 3
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

    for decl in (HolderUse("m.W.execute_model", "execute_model", "m.Stage", True, 12),
                 PassThrough("m.R.execute_model", "_execute_model"),
                 ParkedReturn("m.R._execute_model", "_execute_model")):
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

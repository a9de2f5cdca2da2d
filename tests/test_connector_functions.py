"""`connector-functions`: a configured name is a function's qualified name (`module.Class.method`,
`module.function`) or a dotted tail of it that starts at a name boundary (`Class.method`, `method`), on
`fixtures/connector_functions/`, a plugin project of its own that lists its connector functions in each spelling."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kvlint.config import config_from_mapping, load_config
from kvlint.running.runner import run
from tests.conftest import FIXTURES, run_kvlint
from tests.test_fixtures import expected_findings

PROJECT = FIXTURES / "connector_functions"


def _findings(config_paths: list[Path], monkeypatch: pytest.MonkeyPatch, config=None) -> Counter[tuple[str, int, str]]:
    monkeypatch.chdir(FIXTURES.parent)
    config = config if config is not None else load_config([PROJECT])
    return Counter((f.path, f.line, f.code) for f in run(config_paths, config, jobs=1).findings)


def test_every_spelling_the_project_lists_marks_its_functions_and_no_neighbour(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = expected_findings(PROJECT)
    assert sum(expected.values()) == 6
    assert _findings([Path("fixtures/connector_functions")], monkeypatch) == expected


def test_a_file_checked_alone_is_marked_as_in_the_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    # the module's name comes from its packages, not from the paths given: `kvlint check FILE` names it alike
    runner = Path("fixtures/connector_functions/hpu_plugin/worker/hpu_model_runner.py")
    found = _findings([runner], monkeypatch)
    assert found == Counter({key: n for key, n in expected_findings(PROJECT).items() if key[0] == runner.as_posix()})
    assert sum(found.values()) == 4


RUNNER = "hpu_plugin/worker/hpu_model_runner.py"
LEGACY = "hpu_plugin/legacy/hpu_model_runner.py"
WORKER = "hpu_plugin/worker/hpu_worker.py"


@pytest.mark.parametrize(
    ("configured", "reported"),
    [
        ("hpu_plugin.worker.hpu_model_runner.HPUModelRunner.kv_only_step", {(RUNNER, 35)}),
        ("worker.hpu_model_runner.HPUModelRunner.kv_only_step", {(RUNNER, 35)}),
        ("hpu_model_runner.HPUModelRunner.kv_only_step", {(RUNNER, 35), (LEGACY, 23), (LEGACY, 24)}),
        ("HPUModelRunner.kv_only_step", {(RUNNER, 35), (LEGACY, 23), (LEGACY, 24)}),  # as before: any module's class
        ("kv_only_step", {(RUNNER, 35), (LEGACY, 23), (LEGACY, 24), (RUNNER, 57)}),  # as before: any function so named
        ("hpu_plugin.worker.hpu_model_runner.finish_kv_transfer", {(RUNNER, 12)}),
        ("hpu_plugin.legacy.hpu_model_runner.finish_kv_transfer", {(LEGACY, 14)}),
        ("finish_kv_transfer", {(RUNNER, 12), (LEGACY, 14)}),
        ("worker.hpu_worker.HPUWorker.execute_kv_only", {(WORKER, 20)}),  # not spec_worker's
        # no name boundary, or another module: nothing
        ("plugin.worker.hpu_model_runner.HPUModelRunner.kv_only_step", set()),
        ("hpu_plugin.worker.hpu_model_runner.kv_only_step", set()),  # the method, as if it were a module function
        ("hpu_plugin.worker.HPUModelRunner.kv_only_step", set()),  # the module's name cut short
        ("hpu_plugin.worker.hpu_model_runner.HPUModelRunner", set()),  # the class names no function
        ("only_step", set()),
    ],
)
def test_one_configured_name_marks_exactly_the_functions_it_names(
    configured: str, reported: set[tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = config_from_mapping({"connector-functions": [configured]}, PROJECT / "pyproject.toml")
    found = _findings([Path("fixtures/connector_functions")], monkeypatch, config)
    prefix = "fixtures/connector_functions/"
    assert {(path.removeprefix(prefix), line) for path, line, _ in found} == reported


def test_the_command_line_reads_the_project_s_list_and_says_why_a_function_is_on_the_path() -> None:
    completed = run_kvlint("check", "--format", "json", ".", cwd=PROJECT)
    assert completed.returncode == 1, completed.stderr
    messages = {(row["path"], row["line"]): row["message"] for row in json.loads(completed.stdout)}
    assert set(messages) == {(path.removeprefix("fixtures/connector_functions/"), line)
                             for path, line, _ in expected_findings(PROJECT)}
    assert "(`kv_only_step` is listed in connector-functions)" in messages[(RUNNER, 35)]
    assert "(`finish_kv_transfer` is listed in connector-functions)" in messages[(RUNNER, 12)]

"""kvlint over real vLLM sources (docs/design.md, "On real vLLM"): exactly the expected findings, nothing else."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kvlint.config import Config
from kvlint.running.runner import run
from tests.support.vllm_sources import vllm_tree

pytestmark = pytest.mark.vllm

MIXIN = "vllm/v1/worker/kv_connector_model_runner_mixin.py"
WORKER = "vllm/v1/worker/gpu_worker.py"
AGGREGATOR = "vllm/distributed/kv_transfer/kv_connector/utils.py"


def _findings(tree: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, str, str]]:
    monkeypatch.chdir(tree)
    result = run([Path("vllm")], Config(), jobs=2)
    return [(f.path, f.line, f.code, f.source_line.strip()) for f in result.findings]


def _line_of(path: Path, text: str, after: str) -> int:
    """Return the 1-based line of the first `text` after the first line containing `after`."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def _without_guard(version: str, guard: str, tmp_path: Path) -> Path:
    """A copy of the release's `vllm/` with the aggregator's one `guard` taken out."""
    copy = tmp_path / f"vllm-{version}-bug"
    shutil.copytree(vllm_tree(version) / "vllm", copy / "vllm")
    aggregator = copy / AGGREGATOR
    source = aggregator.read_text()
    assert source.count(guard) == 1, "the aggregator changed shape; update the test"
    aggregator.write_text(source.replace(guard, ""))
    return copy


def test_vllm_0_10_1_as_published(monkeypatch: pytest.MonkeyPatch) -> None:
    tree = vllm_tree("0.10.1")
    expected = [
        (MIXIN, _line_of(tree / MIXIN, "return EMPTY_MODEL_RUNNER_OUTPUT", "def kv_connector_no_forward"), "KVC002",
         "return EMPTY_MODEL_RUNNER_OUTPUT"),
        (WORKER, _line_of(tree / WORKER, "return EMPTY_MODEL_RUNNER_OUTPUT", "is_last_rank"), "KVC002",
         "return EMPTY_MODEL_RUNNER_OUTPUT"),
    ]
    assert _findings(tree, monkeypatch) == sorted(expected)


def test_vllm_0_10_1_without_the_aggregator_guard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The original bug: `if not output: continue` removed from KVOutputAggregator.aggregate."""
    copy = _without_guard("0.10.1", "            if not output:\n                continue\n", tmp_path)
    found = _findings(copy, monkeypatch)
    kvc001 = [f for f in found if f[2] == "KVC001"]
    assert [(path, code) for path, _, code, _ in kvc001] == [(AGGREGATOR, "KVC001")] * 2
    assert "output.finished_sending" in kvc001[0][3]
    assert "output.finished_recving" in kvc001[1][3]
    assert {f[2] for f in found} == {"KVC001", "KVC002"}


NEW_RUNNER = "vllm/v1/worker/gpu/model_runner.py"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"


def test_vllm_0_20_0_the_new_runner_drops_its_kv_output_on_non_last_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    """KVC006 as vLLM shipped it: `sample_tokens` and `pool` read the KV output from the step state, then
    return None on a non-last pipeline rank. The other two findings are the empty-output returns (KVC002,
    the mission's school: the sentinel is returned where the KV output is empty)."""
    tree = vllm_tree("0.20.0")
    runner = tree / NEW_RUNNER
    expected = [
        (NEW_RUNNER, _line_of(runner, "return None", "Receive the"), "KVC006", "return None"),
        (NEW_RUNNER, _line_of(runner, "return None", "self.postprocess_pool(input_batch)"), "KVC006", "return None"),
        (RUNNER, _line_of(tree / RUNNER, "return EMPTY_MODEL_RUNNER_OUTPUT", "kv_connector_output.is_empty()"),
         "KVC002", "return EMPTY_MODEL_RUNNER_OUTPUT"),
        (MIXIN, _line_of(tree / MIXIN, "return EMPTY_MODEL_RUNNER_OUTPUT", "def kv_connector_no_forward"), "KVC002",
         "return EMPTY_MODEL_RUNNER_OUTPUT"),
    ]
    assert _findings(tree, monkeypatch) == sorted(expected)


def test_vllm_0_17_1_drops_the_kv_output_it_unpacks_from_its_step_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM 0.17.1's newer runner keeps the KV output in the tuple `self.execute_model_state`; `sample_tokens`
    unpacks it and returns None on pipeline ranks other than the last (KVC006), beside the two KVC002 every
    release of that era has."""
    tree = vllm_tree("0.17.1")
    runner = "vllm/v1/worker/gpu/model_runner.py"
    dropped = _line_of(tree / runner, "return None", "sampled, num_sampled, num_rejected = pp_receive(")
    found = _findings(tree, monkeypatch)
    assert (runner, dropped, "KVC006", "return None") in found
    assert sorted(code for _, _, code, _ in found) == ["KVC002", "KVC002", "KVC006"]


def test_vllm_0_22_1_parks_the_kv_output_on_tensors_its_worker_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM 0.22.1's newer runner no longer keeps the KV output in its step state: on a non-last pipeline rank
    `execute_model` parks it on the returned `IntermediateTensors`, and `Worker.execute_model` sends only
    `.tensors` and returns None (KVC006 at the park; 0.24 moved it into `sample_tokens`'s output). The pre-commit
    hook, given only the runner, reports it too: the worker is found in the rest of the project."""
    tree = vllm_tree("0.22.1")
    runner = "vllm/v1/worker/gpu/model_runner.py"
    park = _line_of(tree / runner, "output_intermediate_tensors.kv_connector_output = kv_connector_output",
                    "# Non-last PP rank: return IntermediateTensors for sending.")
    found = _findings(tree, monkeypatch)
    assert (runner, park, "KVC006", "output_intermediate_tensors.kv_connector_output = kv_connector_output") in found
    assert sorted(code for _, _, code, _ in found) == ["KVC002", "KVC002", "KVC006"]
    message = next(f.message for f in run([Path(runner)], Config(), jobs=1).findings if f.line == park)
    assert "`IntermediateTensors`" in message and "`vllm.v1.worker.gpu_worker.Worker.execute_model`" in message


@pytest.mark.parametrize("version", ["0.24.0", "0.33.0"])
def test_releases_after_the_fix_are_clean(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _findings(vllm_tree(version), monkeypatch) == []


def test_vllm_0_33_0_without_the_guard_of_its_list_collecting_aggregator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newest aggregator first collects `o.kv_connector_output` into a `list[KVConnectorOutput | None]`,
    then loops over `chain(salvaged, kv_outputs)` behind `if not kv_output: continue`. Without that guard
    every dereference in the loop is KVC001, traced back to the field read."""
    copy = _without_guard("0.33.0", "            if not kv_output:\n                continue\n", tmp_path)
    found = _findings(copy, monkeypatch)
    assert found and {(path, code) for path, _, code, _ in found} == {(AGGREGATOR, "KVC001")}
    assert any("kv_output.finished_sending" in line for *_, line in found)
    assert any("kv_output.finished_recving" in line for *_, line in found)


@pytest.mark.parametrize("version", ["0.22.1", "0.33.0"])
def test_the_cheap_stage_a_batch_at_a_time_reads_each_relevant_file_as_one_tree_does(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file over 8 batches of `PARSE_BATCH_CHARACTERS` is prepared a batch at a time (issue 27's memory per
    finding); with batches of 1,000 characters, every relevant file of the release gives what one tree gives."""
    from kvlint import engine, source

    config = Config()
    batched = 0
    for path in sorted((vllm_tree(version) / "vllm").rglob("*.py")):
        data = path.read_bytes()
        monkeypatch.setattr(source, "PARSE_BATCH_CHARACTERS", 1 << 30)
        whole = engine.prepare_source(data, path.name, config, "vllm.module")
        if not whole.relevant:
            continue
        monkeypatch.setattr(source, "PARSE_BATCH_CHARACTERS", 1000)
        parts = engine.prepare_source(data, path.name, config, "vllm.module")
        facts = [(p.declarations, p.segments, p.local_names, p.local_output_classes, p.optional_attributes,
                  p.imports.bindings, p.imports.modules, p.imports.stars) for p in (whole, parts)]
        assert facts[0] == facts[1], path
        batched += source.parses_in_batches(whole.text)
    assert batched > 25

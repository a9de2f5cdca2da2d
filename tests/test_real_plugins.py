"""kvlint over real platform plugins built on vLLM, from their published wheels: exactly the expected
findings, nothing else. Code nobody here wrote, judged finding by finding (docs/design.md, "On real vLLM")."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.config import Config
from kvlint.running.runner import run
from tests.support.vllm_sources import Plugin, plugin_tree

pytestmark = pytest.mark.vllm

TPU_INFERENCE = Plugin("tpu-inference", "0.32.0", "tpu_inference")
TPU_INFERENCE_0_26 = Plugin("tpu-inference", "0.26.0", "tpu_inference")
ASCEND = Plugin("vllm-ascend", "0.23.0", "vllm_ascend", platform=(
    "--platform", "manylinux_2_34_x86_64", "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
))
SILENT = (  # connector-aware plugins on which every finding would be a false one
    Plugin("vllm-omni", "0.30.0", "vllm_omni"),
    Plugin("vllm-kunlun", "0.11.1", "vllm_kunlun"),
    Plugin("vllm-rbln", "0.12.0", "vllm_rbln"),
    Plugin("ai-dynamo", "1.6.1", "dynamo"),
)
# every plugin a test reads (tests/support/fetch_sources.py fetches them)
PLUGINS = (TPU_INFERENCE, TPU_INFERENCE_0_26, ASCEND, *SILENT)


def _check(plugin: Plugin, monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[str, int, str, str]], int]:
    tree = plugin_tree(plugin)
    monkeypatch.chdir(tree)
    result = run([Path(plugin.package)], Config(), jobs=2)
    found = [(f.path, f.line, f.code, f.source_line.strip()) for f in result.findings]
    return found, result.files_analysed


def _line_after(path: Path, text: str, after: str) -> int:
    """The 1-based line of the first `text` at or after the first line containing `after`."""
    lines = path.read_text().splitlines()
    start = next(number for number, line in enumerate(lines) if after in line)
    return next(number for number in range(start, len(lines)) if text in lines[number]) + 1


@pytest.mark.parametrize("plugin", [TPU_INFERENCE_0_26, TPU_INFERENCE], ids=lambda plugin: plugin.version)
def test_tpu_inference_drops_the_kv_output_twice(plugin: Plugin, monkeypatch: pytest.MonkeyPatch) -> None:
    """tpu-inference's runner reads the KV output from `maybe_get_kv_connector_output`. On a non-last pipeline
    rank it parks it on the returned `JaxIntermediateTensors`, and `TPUWorker.execute_model` (through the
    runner's public `execute_model`, which returns `_execute_model`'s result as it is) sends only `.tensors`
    and returns None: KVC006 at the park. Its pooling branch returns a `ModelRunnerOutput(...)` without it:
    KVC006 again. Nothing else."""
    runner = "tpu_inference/runner/tpu_runner.py"
    found, analysed = _check(plugin, monkeypatch)
    parked = "hidden_states.kv_connector_output = kv_connector_output"
    park = _line_after(Path(runner), parked, "if not self.is_last_rank:")
    pooling = _line_after(Path(runner), "return ModelRunnerOutput(", "if self.is_pooling_model:")
    assert found == [
        (runner, park, "KVC006", parked),
        (runner, pooling, "KVC006", "return ModelRunnerOutput("),
    ]
    assert analysed >= 3
    alone = run([Path(runner)], Config(), jobs=1)  # the pre-commit hook's view: the worker is not passed
    assert [(f.line, f.code) for f in alone.findings] == [(park, "KVC006"), (pooling, "KVC006")]


def test_ascend_returns_the_bare_sentinel_when_the_kv_output_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    """vllm-ascend 0.23.0 keeps vLLM 0.10's pipeline-parallel shape: an empty KV output becomes the bare
    sentinel (the KVC002 vLLM 0.10.1 has too, docs/design.md "On real vLLM"), in its worker and in its model runner."""
    worker, runner = "vllm_ascend/worker/worker.py", "vllm_ascend/worker/model_runner_v1.py"
    found, _ = _check(ASCEND, monkeypatch)
    expected = [
        (runner, _line_after(Path(runner), "return EMPTY_MODEL_RUNNER_OUTPUT", "if kv_connector_output.is_empty()"),
         "KVC002", "return EMPTY_MODEL_RUNNER_OUTPUT"),
        (worker, _line_after(Path(worker), "return EMPTY_MODEL_RUNNER_OUTPUT", "if not kv_connector_output.finished"),
         "KVC002", "return EMPTY_MODEL_RUNNER_OUTPUT"),
    ]
    assert found == sorted(expected)


@pytest.mark.parametrize("plugin", SILENT, ids=lambda plugin: plugin.distribution)
def test_connector_aware_plugins_are_clean(plugin: Plugin, monkeypatch: pytest.MonkeyPatch) -> None:
    found, analysed = _check(plugin, monkeypatch)
    assert found == []
    assert analysed >= 1, "the plugin no longer mentions a connector output: pick another release"

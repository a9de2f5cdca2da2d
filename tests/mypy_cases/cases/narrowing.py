"""Where `kv_connector_output` is narrowed to `KVConnectorOutput`, and where it keeps `| None`.

`# expect:` on a line says what mypy reports there with the plugin: `narrowed` and
`optional` are the revealed types, `union-attr` is mypy's own error. Where the read is
narrowed, mypy gives no error at a dereference of it, and the plugin reports kvlint's
KVC001 there (as `kvlint check` does: the field is read without a None check); where it
is not, mypy's `union-attr` says it and the plugin stays silent.
"""

from typing import reveal_type

from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import IntermediateTensors, ModelRunnerOutput
from vllm.v1.worker.kv_connector_model_runner_mixin import KVConnectorModelRunnerMixin


class Runner(KVConnectorModelRunnerMixin):
    def inside_connector_context(self, out: ModelRunnerOutput, sched: object) -> None:
        with self._get_kv_connector_output(sched):
            reveal_type(out.kv_connector_output)  # expect: narrowed
            out.kv_connector_output.finished_sending  # expect: KVC001


def inside_guard(out: ModelRunnerOutput) -> None:
    if has_kv_transfer_group():
        reveal_type(out.kv_connector_output)  # expect: narrowed
        out.kv_connector_output.finished_sending  # expect: KVC001
    else:
        reveal_type(out.kv_connector_output)  # expect: optional
        out.kv_connector_output.finished_sending  # expect: union-attr


def after_early_exit(out: ModelRunnerOutput) -> None:
    if not has_kv_transfer_group():
        reveal_type(out.kv_connector_output)  # expect: optional
        return
    reveal_type(out.kv_connector_output)  # expect: narrowed
    out.kv_connector_output.finished_recving  # expect: KVC001


def marked(out: ModelRunnerOutput) -> None:  # kvlint: connector-path
    reveal_type(out.kv_connector_output)  # expect: narrowed
    out.kv_connector_output.finished_sending  # expect: KVC001


def intermediate_tensors(tensors: IntermediateTensors) -> None:
    assert has_kv_transfer_group()
    reveal_type(tensors.kv_connector_output)  # expect: narrowed


def off_path(out: ModelRunnerOutput, tensors: IntermediateTensors) -> None:
    reveal_type(out.kv_connector_output)  # expect: optional
    out.kv_connector_output.finished_sending  # expect: union-attr
    reveal_type(tensors.kv_connector_output)  # expect: optional


def assignment_keeps_the_declared_type(out: ModelRunnerOutput) -> None:
    if has_kv_transfer_group():
        out.kv_connector_output = None

"""Stand-in for vllm/v1/worker/kv_connector_model_runner_mixin.py."""

from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Optional

from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import KVConnectorOutput


class KVConnectorModelRunnerMixin:
    @staticmethod
    def maybe_get_kv_connector_output(scheduler_output: object) -> AbstractContextManager[Optional[KVConnectorOutput]]:
        return KVConnectorModelRunnerMixin._get_kv_connector_output(
            scheduler_output) if has_kv_transfer_group() else nullcontext()

    @staticmethod
    @contextmanager
    def _get_kv_connector_output(scheduler_output: object) -> Generator[KVConnectorOutput, None, None]:
        output = KVConnectorOutput()
        yield output

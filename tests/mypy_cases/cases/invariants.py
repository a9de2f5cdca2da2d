"""KVC002-KVC004 and KVC006 as mypy errors, and good code that raises none (`# expect:` marks each)."""

import copy
from typing import Optional

from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput
from vllm.v1.worker.kv_connector_model_runner_mixin import KVConnectorModelRunnerMixin


class Runner(KVConnectorModelRunnerMixin):
    def without_connector_output(self, sched: object) -> ModelRunnerOutput:
        with self._get_kv_connector_output(sched):
            pass
        return ModelRunnerOutput(req_ids=[], sampled_token_ids=[])  # expect: KVC003

    def with_none(self, sched: object) -> ModelRunnerOutput:
        with self._get_kv_connector_output(sched):
            pass
        return ModelRunnerOutput(req_ids=[], sampled_token_ids=[], kv_connector_output=None)  # expect: KVC003

    def with_optional_argument(self, kvo: Optional[KVConnectorOutput]) -> ModelRunnerOutput:
        assert has_kv_transfer_group()
        return ModelRunnerOutput(req_ids=[], sampled_token_ids=[], kv_connector_output=kvo)  # expect: KVC003

    def with_connector_output(self, sched: object) -> ModelRunnerOutput:
        with self._get_kv_connector_output(sched) as kvo:
            pass
        return ModelRunnerOutput(req_ids=[], sampled_token_ids=[], kv_connector_output=kvo)

    def with_narrowed_field(self, previous: ModelRunnerOutput) -> ModelRunnerOutput:
        if has_kv_transfer_group():
            return ModelRunnerOutput(req_ids=[], sampled_token_ids=[],
                                     kv_connector_output=previous.kv_connector_output)
        return ModelRunnerOutput(req_ids=[], sampled_token_ids=[])

    def returns_the_sentinel(self, sched: object) -> ModelRunnerOutput:
        with self._get_kv_connector_output(sched) as kvo:
            pass
        if not kvo.finished_sending and not kvo.finished_recving:
            return EMPTY_MODEL_RUNNER_OUTPUT  # expect: KVC002
        output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
        output.kv_connector_output = kvo
        return output

    def attaches_the_output(self, sched: object) -> ModelRunnerOutput:
        with self._get_kv_connector_output(sched) as kvo:
            pass
        output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
        output.kv_connector_output = kvo
        return output


def off_path_sentinel() -> ModelRunnerOutput:
    if not has_kv_transfer_group():
        return EMPTY_MODEL_RUNNER_OUTPUT
    return ModelRunnerOutput(req_ids=[], sampled_token_ids=[], kv_connector_output=KVConnectorOutput())


def guarded_sentinel() -> ModelRunnerOutput:
    if has_kv_transfer_group():
        return EMPTY_MODEL_RUNNER_OUTPUT  # expect: KVC002
    return ModelRunnerOutput(req_ids=[], sampled_token_ids=[])


def silenced_for_mypy() -> ModelRunnerOutput:
    if has_kv_transfer_group():
        return EMPTY_MODEL_RUNNER_OUTPUT  # type: ignore[kvc]
    return EMPTY_MODEL_RUNNER_OUTPUT


def silenced_for_every_face(kvo: Optional[KVConnectorOutput]) -> ModelRunnerOutput:
    if has_kv_transfer_group():
        return ModelRunnerOutput(req_ids=[], sampled_token_ids=[], kv_connector_output=kvo)  # noqa: KVC003
    return EMPTY_MODEL_RUNNER_OUTPUT


class StepState:
    def __init__(self, kvo: Optional[KVConnectorOutput]) -> None:
        self.kv_connector_output = kvo


class PipelineRunner:
    def __init__(self, is_last_rank: bool) -> None:
        self.is_last_rank = is_last_rank
        self.state: Optional[StepState] = None

    def sample(self) -> Optional[ModelRunnerOutput]:
        state, self.state = self.state, None
        assert state is not None
        kvo = state.kv_connector_output
        if not self.is_last_rank:
            return None  # expect: KVC006
        return ModelRunnerOutput(req_ids=[], sampled_token_ids=[], kv_connector_output=kvo)

    def sample_fixed(self) -> Optional[ModelRunnerOutput]:
        state, self.state = self.state, None
        assert state is not None
        kvo = state.kv_connector_output
        if not self.is_last_rank:
            if kvo is None:
                return None
            output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
            output.kv_connector_output = kvo
            return output
        return ModelRunnerOutput(req_ids=[], sampled_token_ids=[], kv_connector_output=kvo)


def pad_the_sentinel(width: int) -> None:
    EMPTY_MODEL_RUNNER_OUTPUT.req_ids.append("pad" * width)  # expect: KVC004


def pad_a_copy(width: int) -> ModelRunnerOutput:
    output = copy.deepcopy(EMPTY_MODEL_RUNNER_OUTPUT)
    output.req_ids.append("pad" * width)
    return output

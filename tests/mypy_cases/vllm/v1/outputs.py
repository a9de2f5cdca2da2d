"""Stand-in for vllm/v1/outputs.py (vLLM 0.10.1 shapes, and the encoder-cache output of 0.13)."""

from dataclasses import dataclass
from typing import Optional


@dataclass
class KVConnectorOutput:
    finished_sending: Optional[set[str]] = None
    finished_recving: Optional[set[str]] = None


@dataclass
class ECConnectorOutput:
    finished_sending: Optional[set[str]] = None
    finished_recving: Optional[set[str]] = None


@dataclass
class ModelRunnerOutput:
    req_ids: list[str]
    sampled_token_ids: list[list[int]]
    kv_connector_output: Optional[KVConnectorOutput] = None
    ec_connector_output: Optional[ECConnectorOutput] = None


@dataclass
class IntermediateTensors:
    tensors: dict[str, object]
    kv_connector_output: Optional[KVConnectorOutput] = None


EMPTY_MODEL_RUNNER_OUTPUT = ModelRunnerOutput(req_ids=[], sampled_token_ids=[])

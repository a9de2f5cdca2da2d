"""The encoder-cache connector's field is narrowed on its own connector path, not on the KV one."""

from typing import reveal_type

from vllm.distributed.ec_transfer import has_ec_transfer
from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import ModelRunnerOutput


def under_the_ec_guard(out: ModelRunnerOutput) -> None:
    if has_ec_transfer():
        reveal_type(out.ec_connector_output)  # expect: narrowed
        reveal_type(out.kv_connector_output)  # expect: optional
    reveal_type(out.ec_connector_output)  # expect: optional


def under_the_kv_guard(out: ModelRunnerOutput) -> None:
    if has_kv_transfer_group():
        reveal_type(out.ec_connector_output)  # expect: optional
        out.ec_connector_output.finished_sending  # expect: union-attr


def guarded(out: ModelRunnerOutput) -> set[str]:
    ec = out.ec_connector_output
    if ec is None:
        return set()
    return ec.finished_recving or set()


def marked_for_the_encoder_cache(out: ModelRunnerOutput) -> None:  # kvlint: connector-path[ec]
    reveal_type(out.ec_connector_output)  # expect: narrowed


def misspelt_marker(out: ModelRunnerOutput) -> None:  # kvlint: connector-path[ecc]  # expect: KVC101
    reveal_type(out.ec_connector_output)  # expect: optional

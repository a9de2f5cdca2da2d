"""A KVC002 in an unannotated function: mypy calls no hook in a body it does not check (docs/mypy.md, Limits).

With `check_untyped_defs = True` mypy checks the body and the plugin reports it.
"""

from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


def idle(out):
    if has_kv_transfer_group():
        return EMPTY_MODEL_RUNNER_OUTPUT  # expect: kvlint-only KVC002
    return out

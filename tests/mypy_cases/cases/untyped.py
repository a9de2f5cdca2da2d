"""A KVC002 in an unannotated function: mypy calls no hook in a body it does not check, but the plugin's
own last statement of the module is checked, and reports it (with `check_untyped_defs = True` too).
"""

from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


def idle(out):
    if has_kv_transfer_group():
        return EMPTY_MODEL_RUNNER_OUTPUT  # expect: KVC002
    return out

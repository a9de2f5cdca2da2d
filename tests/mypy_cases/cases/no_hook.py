"""KVC002s mypy cannot report: no hook of the plugin fires in this module (docs/mypy.md, Limits).

`kvlint check` reports them; mypy has no hook on a name, a `return` or an `is None`
test, and nothing else here (no connector guard or context call, no read of
`kv_connector_output` or its fields) is one.
"""

from typing import Optional

from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput


def idle() -> ModelRunnerOutput:  # kvlint: connector-path
    return EMPTY_MODEL_RUNNER_OUTPUT  # expect: kvlint-only KVC002


def checked(kvo: Optional[KVConnectorOutput]) -> Optional[ModelRunnerOutput]:
    if kvo is not None:
        return EMPTY_MODEL_RUNNER_OUTPUT  # expect: kvlint-only KVC002
    return None

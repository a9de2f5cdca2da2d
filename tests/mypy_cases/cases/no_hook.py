"""KVC002s in a module where no hook of the code fires: the plugin's own last statement of the module does.

mypy has no hook on a name, a `return` or an `is None` test, and nothing else here (no connector
guard or context call, no read of `kv_connector_output` or its fields) is one.
"""

from typing import Optional

from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput


def idle() -> ModelRunnerOutput:  # kvlint: connector-path
    return EMPTY_MODEL_RUNNER_OUTPUT  # expect: KVC002


def checked(kvo: Optional[KVConnectorOutput]) -> Optional[ModelRunnerOutput]:
    if kvo is not None:
        return EMPTY_MODEL_RUNNER_OUTPUT  # expect: KVC002
    return None

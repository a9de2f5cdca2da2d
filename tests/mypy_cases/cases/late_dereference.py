"""A KVC001 after the module's last hook of its own: mypy types the value only after it.

The read of `kv_connector_output` on a typed output is a hook; the dereference below it is on `Any`,
which no hook reaches, and no hook in the code fires after it. The plugin's own last statement of the
module does: there the verdict (mypy's type has no None) is reached, and the plugin reports it.
"""

from typing import Any

from vllm.v1.outputs import ModelRunnerOutput


def is_idle(out: ModelRunnerOutput) -> bool:
    return out.kv_connector_output is None


def merge(outputs: list[Any]) -> set[str]:
    finished: set[str] = set()
    for out in outputs:
        kvo = out.kv_connector_output
        finished |= kvo.finished_sending or set()  # expect: KVC001
    return finished

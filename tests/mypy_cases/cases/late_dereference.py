"""A KVC001 mypy cannot report: mypy types the value only after the module's last hook (docs/mypy.md, Limits).

The read of `kv_connector_output` on a typed output is a hook; the dereference below it is on `Any`,
which no hook reaches, and no hook fires after it, so the verdict (mypy's type has no None) comes too late.
`kvlint check` reports it.
"""

from typing import Any

from vllm.v1.outputs import ModelRunnerOutput


def is_idle(out: ModelRunnerOutput) -> bool:
    return out.kv_connector_output is None


def merge(outputs: list[Any]) -> set[str]:
    finished: set[str] = set()
    for out in outputs:
        kvo = out.kv_connector_output
        finished |= kvo.finished_sending or set()  # expect: kvlint-only KVC001
    return finished

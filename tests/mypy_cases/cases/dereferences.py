"""KVC001/KVC005 in the mypy face: reported where mypy's type of the dereferenced value has no None, and left
to mypy's own error where it has (`# expect:` lists what mypy reports on a line, in any order)."""

from typing import Any, Optional

from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput


def rebound_loop_variable(outputs: list[ModelRunnerOutput]) -> set[str]:
    """The seed bug: mypy keeps `output: ModelRunnerOutput` (the re-binding is an error of its own)."""
    finished: set[str] = set()
    for output in outputs:
        output = output.kv_connector_output  # expect: assignment
        finished |= output.finished_sending or set()  # expect: attr-defined, KVC001
    return finished


def untyped_receiver(outputs: list[Any]) -> set[str]:
    """`Any` (a class mypy does not follow): mypy says nothing about the None."""
    finished: set[str] = set()
    for out in outputs:
        kvo = out.kv_connector_output
        finished |= kvo.finished_recving or set()  # expect: KVC001
    return finished


def typed_receiver(out: ModelRunnerOutput) -> Optional[set[str]]:
    kvo = out.kv_connector_output
    return kvo.finished_sending  # expect: union-attr


def typed_field_read(out: ModelRunnerOutput) -> Optional[set[str]]:
    return out.kv_connector_output.finished_recving  # expect: union-attr


def mypy_error_ignored(out: ModelRunnerOutput) -> Optional[set[str]]:
    """mypy's error is there and ignored on purpose: kvlint does not bring it back as `[kvc]`."""
    return out.kv_connector_output.finished_sending  # type: ignore[union-attr]


def narrowed_then_rebound(outputs: list[ModelRunnerOutput]) -> None:
    """mypy checks the loop twice: `KVConnectorOutput` on the first pass, `| None` on the second."""
    kvo: Optional[KVConnectorOutput] = KVConnectorOutput()
    for out in outputs:
        print(kvo.finished_sending)  # expect: union-attr
        kvo = out.kv_connector_output


def suppressed(outputs: list[Any]) -> None:
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)  # noqa: KVC001


def payload_of_untyped_receiver(outputs: list[Any]) -> int:
    count = 0
    for out in outputs:
        kvo = out.kv_connector_output
        if kvo is None:
            continue
        for req_id in kvo.finished_sending:  # expect: KVC005
            count += len(req_id)
    return count


def payload_rebound(kvo: KVConnectorOutput) -> int:
    """mypy keeps `done: set[str]` (the re-binding is an error of its own)."""
    done: set[str] = set()
    done = kvo.finished_recving  # expect: assignment
    return len(done)  # expect: KVC005


def payload_typed(kvo: KVConnectorOutput) -> int:
    count = len(kvo.finished_sending)  # expect: arg-type
    for req_id in kvo.finished_recving:  # expect: union-attr
        count += len(req_id)
    return count


def payload_guarded(kvo: KVConnectorOutput) -> int:
    return len(kvo.finished_sending or ())

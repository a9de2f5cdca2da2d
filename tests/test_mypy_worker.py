"""The mypy face's helper (issue 15): a helper stuck on a file costs at most the timeout, once, and the
face analyses in mypy's process from then on; `KVLINT_MYPY_WORKER` takes the usual false spellings."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.mypy_worker import AnalysisWorker, worker_wanted
from tests.conftest import FIXTURES


@pytest.mark.parametrize("value", ["0", "false", "False", "no", "NO", "off", "", " off "])
def test_false_spellings_turn_the_helper_off(value: str) -> None:
    assert worker_wanted(value, default=True) is False


@pytest.mark.parametrize("value", ["1", "true", "yes", "on"])
def test_true_spellings_turn_it_on(value: str) -> None:
    assert worker_wanted(value, default=False) is True


def test_unset_means_the_default() -> None:
    assert worker_wanted(None, default=True) is True and worker_wanted(None, default=False) is False


def test_a_stuck_helper_times_out_once_and_the_face_goes_on_in_process(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(AnalysisWorker, "HELPER", "import sys, time; sys.stdin.buffer.read(1); time.sleep(600)")
    worker = AnalysisWorker(timeout=0.5)
    first, second = str(FIXTURES / "nasty" / "canary.py"), str(FIXTURES / "vllm_like" / "worker.py")
    worker.submit(first)
    worker.submit(second)
    assert worker.take(first) is None  # the plugin then analyses this file itself
    assert worker.take(second) is None
    worker.submit(first)
    assert worker.take(first) is None
    assert capsys.readouterr().err == (
        f"kvlint: the analysis helper took over 0.5 s on {first}; kvlint analyses in mypy's process from now on "
        "(set KVLINT_MYPY_TIMEOUT to wait longer)\n"
    )
    assert worker._process is not None and worker._process.wait(timeout=10) is not None  # killed


def test_a_working_helper_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = AnalysisWorker(timeout=120)
    path = str(FIXTURES / "vllm_like" / "worker.py")
    assert Path(path).is_file()
    worker.submit(path)
    analysis = worker.take(path)
    assert analysis is not None and analysis.key != (0, 0)
    worker._stop()

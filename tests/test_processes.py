"""Processes that always end (issue 15): SIGTERM to a `--jobs 2` run's process group never hangs nor prints
a traceback and leaves no worker behind; a fork that fails falls back to fewer workers, then to none;
`--jobs` is capped by the relevant files and the CPUs."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvlint.running import runner, worker_pool
from kvlint.config import Config
from tests.conftest import FIXTURES, ROOT, run_kvlint
from tests.support.second_user import kvlint_as_other_user, shared_directory
from tests.support.vllm_sources import vllm_tree

NEWEST = "0.33.0"  # the newest release the tests fetch (tests/support/fetch_sources.py)
CANARY = (FIXTURES / "nasty" / "canary.py").read_text()


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_to_the_process_group_of_a_two_job_run_of_real_vllm_never_hangs() -> None:
    tree = vllm_tree(NEWEST)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("KVLINT_CACHE_DIR", None)
    command = [sys.executable, "-m", "kvlint", "check", "--jobs", "2", "--exit-zero", "."]
    started = time.monotonic()
    subprocess.run(command, cwd=tree, env=environment, stdout=subprocess.DEVNULL, check=True)
    run_time = time.monotonic() - started  # about 0.5 s here
    chance = random.Random(15)
    outcomes = []
    for attempt in range(20):
        process = subprocess.Popen(
            command, cwd=tree, env=environment,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )
        time.sleep(chance.uniform(0.05, 0.9 * run_time))  # from start-up to the end of the analysis
        os.killpg(process.pid, signal.SIGTERM)
        try:
            _, stderr = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"attempt {attempt}: kvlint hung after SIGTERM")
        assert "Traceback" not in stderr, stderr
        if process.returncode == 0:  # finished before the signal: nothing to stop
            assert stderr == ""
        elif process.returncode == -signal.SIGTERM:  # during Python's start-up, before kvlint's handler:
            assert stderr == ""  # the default action, which a shell also sees as 143
        else:
            assert (process.returncode, stderr) == (143, "kvlint: terminated\n"), f"attempt {attempt}"
        deadline = time.monotonic() + 5
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _group_alive(process.pid), f"attempt {attempt}: a worker outlived the run"
        outcomes.append(process.returncode)
    assert outcomes.count(143) >= 10, outcomes  # the signal came during kvlint's run most times


def test_once_the_run_is_over_sigterm_has_the_callers_handler_again(capsys: pytest.CaptureFixture[str]) -> None:
    """A SIGTERM while the interpreter exits (after `main` returned) must not raise kvlint's exception there:
    Python would print it as an ignored exception's traceback."""
    from kvlint.cli import main

    before = signal.getsignal(signal.SIGTERM)
    assert main(["rules"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
    assert "KVC001" in capsys.readouterr().out


def test_a_sigterm_as_the_run_ends_ends_it_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signal arrives after the run returned, as `main` gives the handler back (Python runs kvlint's handler
    at the entry of `signal.signal`, before it replaces it): terminated, one line, the caller's handler back."""
    from kvlint import cli

    before = signal.getsignal(signal.SIGTERM)
    real = signal.signal
    calls: list[object] = []

    def arriving_at_the_restore(number: int, handler: object) -> object:
        calls.append(handler)
        if len(calls) == 2:  # the first call installs kvlint's handler; the second gives the caller's back
            cli._terminate(number, None)
        return real(number, handler)  # type: ignore[arg-type]

    monkeypatch.setattr(cli.signal, "signal", arriving_at_the_restore)
    assert cli.main(["rules"]) == cli.EXIT_TERMINATED
    monkeypatch.undo()
    assert signal.getsignal(signal.SIGTERM) is before
    assert capsys.readouterr().err == "kvlint: terminated\n"


def test_a_worker_dies_with_its_parent(tmp_path: Path) -> None:
    """SIGKILL to the parent alone (no handler can run): its workers go too."""
    for number in range(300):
        (tmp_path / f"m{number}.py").write_text(CANARY.replace("step", f"step{number}") * 50)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "kvlint", "check", "--jobs", "2", "."], cwd=tmp_path,
                               env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    deadline = time.monotonic() + 60
    while len(_children(process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = _children(process.pid)
    assert len(workers) >= 2, "the workers never started"
    process.kill()
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)


def _children(pid: int) -> list[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] not in "ZX"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize(("limit", "expected"), [
    (1, "kvlint: warning: cannot start worker processes (resource temporarily unavailable); "
        "analysing with this process only\n"),
    (2, "kvlint: warning: cannot start worker processes (resource temporarily unavailable); "
        "analysing with this process only\n"),
])
def test_a_fork_failure_under_a_process_limit_falls_back_and_says_so_once(limit: int, expected: str) -> None:
    with shared_directory() as tree:
        for number in range(8):
            (tree / f"m{number}.py").write_text(CANARY.replace("step", f"step{number}"))
        completed = kvlint_as_other_user(["check", "--jobs", "2", "."], cwd=tree, processes=limit, timeout=120)
        plain = run_kvlint("check", "--jobs", "1", ".", cwd=tree)
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout == plain.stdout
    assert completed.stderr == expected


def test_jobs_is_capped_by_the_relevant_files_and_the_cpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers are forked as relevant files are found: never more than the CPUs, nor than the relevant files,
    and none for a single one."""
    for number in range(6):
        (tmp_path / f"m{number}.py").write_text(CANARY.replace("step", f"step{number}"))
    for number in range(20):
        (tmp_path / f"plain{number}.py").write_text("x = 1\n")
    forked: list[int] = []
    real_fork = worker_pool._fork_worker

    def counting_fork(initializer, siblings):  # type: ignore[no-untyped-def]
        worker = real_fork(initializer, siblings)
        forked.append(worker.pid)
        return worker

    monkeypatch.setattr(worker_pool, "_fork_worker", counting_fork)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "default_jobs", lambda: 4)
    expected = runner.run([Path(".")], Config(), jobs=1).findings
    assert forked == []  # one job: this process
    assert runner.run([Path(".")], Config(), jobs=64).findings == expected
    assert len(forked) == 4  # the CPUs
    forked.clear()
    monkeypatch.setattr(runner, "default_jobs", lambda: 16)
    assert runner.run([Path(".")], Config(), jobs=64).findings == expected
    assert len(forked) == 6  # the relevant files
    forked.clear()
    for number in range(1, 6):
        (tmp_path / f"m{number}.py").unlink()
    runner.run([Path(".")], Config(), jobs=64)
    assert forked == []  # one relevant file: analysed here

"""`--output` and `--write-baseline` respect what is at the path (issue 15): a device stays a device, a log
that stdout appends to keeps its lines, a file keeps its owner and mode or is refused, and a baseline is
never read from a FIFO."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kvlint.atomic import write_output
from tests.conftest import FIXTURES, ROOT, run_kvlint
from tests.support.second_user import OTHER_GID, OTHER_UID, kvlint_as_other_user, shared_directory

CANARY = (FIXTURES / "nasty" / "canary.py").read_text()
FINDING = "canary.py:3:12: KVC001"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "canary.py").write_text(CANARY)
    return tmp_path


def _shell(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "KVLINT": f"{sys.executable} -m kvlint"}
    return subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=environment)


@pytest.mark.parametrize("option", ["--output", "--write-baseline"])
def test_dev_stdout_inside_an_appended_log_keeps_the_log(tree: Path, option: str) -> None:
    completed = _shell(f"{{ echo step; $KVLINT check {option} /dev/stdout canary.py; echo after; }} >> build.log",
                       tree)
    assert completed.returncode == 0 or completed.returncode == 1, completed.stderr
    lines = (tree / "build.log").read_text().splitlines()
    assert lines[0] == "step" and lines[-1] == "after"
    body = "\n".join(lines[1:-1])
    if option == "--output":
        assert FINDING in body
    else:  # the baseline, then the report's summary line
        assert json.loads(body.removesuffix("All checks passed."))["tool"] == "kvlint"


def test_dev_stdout_into_a_truncated_file_writes_at_the_callers_offset(tree: Path) -> None:
    completed = _shell("{ echo step; $KVLINT check -o /dev/stdout canary.py; echo after; } > build.log", tree)
    assert completed.returncode == 0, completed.stderr
    lines = (tree / "build.log").read_text().splitlines()
    assert lines[0] == "step" and FINDING in lines[1] and lines[-1] == "after"


def test_a_character_device_stays_a_device(tree: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root") if os.environ.get("CI") != "true" else pytest.fail("root")
    null = tree / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a private /dev/null
    null.chmod(0o666)
    for option in ("--output", "--write-baseline"):
        completed = run_kvlint("check", option, str(null), "canary.py", cwd=tree)
        assert completed.returncode in (0, 1) and "Traceback" not in completed.stderr, completed.stderr
        assert stat.S_ISCHR(os.stat(null).st_mode) and stat.S_IMODE(os.stat(null).st_mode) == 0o666
    assert sorted(p.name for p in tree.iterdir()) == ["canary.py", "null"]


def test_a_fifo_is_written_through(tree: Path) -> None:
    fifo = tree / "report.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    completed = run_kvlint("check", "-o", str(fifo), "canary.py", cwd=tree)
    reader.join(timeout=60)
    assert completed.returncode == 1, completed.stderr
    assert FINDING in received[0].decode()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_file_of_another_user_keeps_its_owner_and_mode(tree: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root") if os.environ.get("CI") != "true" else pytest.fail("root")
    report = tree / "report.txt"
    report.write_text("old\n")
    os.chown(report, OTHER_UID, OTHER_GID)
    report.chmod(0o640)
    completed = run_kvlint("check", "-o", str(report), "canary.py", cwd=tree)
    assert completed.returncode == 1, completed.stderr
    status = os.stat(report)
    assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (OTHER_UID, OTHER_GID, 0o640)
    assert FINDING in report.read_text()


def test_a_file_whose_owner_cannot_be_kept_is_refused_clearly() -> None:
    with shared_directory() as shared:
        shared.chmod(0o777)  # the other user may replace files here, but cannot give them to root
        (shared / "canary.py").write_text(CANARY)
        report = shared / "report.txt"
        report.write_text("root's\n")
        completed = kvlint_as_other_user(["check", "-o", str(report), "canary.py"], cwd=shared)
        assert completed.returncode == 2, completed.stderr
        assert completed.stderr == (f"kvlint: {report}: cannot write: not replaced: it is owned by uid 0, "
                                    "and a new file could not keep that\n")
        assert report.read_text() == "root's\n" and os.stat(report).st_uid == 0
        assert sorted(p.name for p in shared.iterdir()) == ["canary.py", "report.txt"]


def test_a_baseline_is_never_read_from_a_fifo(tree: Path) -> None:
    fifo = tree / "baseline.json"
    os.mkfifo(fifo)
    started = time.monotonic()
    completed = run_kvlint("check", "--baseline", str(fifo), "canary.py", cwd=tree)
    assert time.monotonic() - started < 60
    assert completed.returncode == 2
    assert completed.stderr == f"kvlint: {fifo}: cannot read baseline: not a regular file\n"


def test_a_directory_is_not_an_output(tree: Path) -> None:
    with pytest.raises(IsADirectoryError):
        write_output(tree, "x")
    completed = run_kvlint("check", "-o", str(tree), "canary.py", cwd=tree)
    assert completed.returncode == 2 and completed.stderr == f"kvlint: {tree}: cannot write: is a directory\n"

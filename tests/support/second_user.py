"""Another user on the same machine, made with util-linux's `setpriv` as the permission tests do.

The tests run as root (in CI and here); `nobody` (uid 65534) plays the hostile or careless
co-user. Without root there is no second user to be: the test skips, and fails under `CI=true`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import ROOT

OTHER_UID = OTHER_GID = 65534


def _setpriv() -> str:
    reason = ""
    if os.geteuid() != 0:
        reason = "a second user needs root (setpriv --reuid)"
    elif shutil.which("setpriv") is None:
        reason = "a second user needs util-linux's setpriv"
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return shutil.which("setpriv")  # type: ignore[return-value]


def as_other_user(shell: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `sh -c shell` as the other user, with no capability (what a co-user can really do)."""
    command = [_setpriv(), f"--reuid={OTHER_UID}", f"--regid={OTHER_GID}", "--clear-groups", "sh", "-c", shell]
    completed = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    return completed


def kvlint_as_other_user(args: Sequence[str], cwd: Path, processes: int | None = None,
                         timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`python -m kvlint ARGS` as the other user, at most `processes` processes and threads of that user
    (RLIMIT_NPROC, which root is exempt from). The interpreter lives under root's 0700 home, so the process
    keeps the two capabilities that read files (not those that lift process limits)."""
    caps = "+dac_override,+dac_read_search"
    limit = [shutil.which("prlimit") or "prlimit", f"--nproc={processes}"] if processes is not None else []
    command = [_setpriv(), f"--reuid={OTHER_UID}", f"--regid={OTHER_GID}", "--clear-groups",
               f"--inh-caps={caps}", f"--ambient-caps={caps}", *limit, sys.executable, "-m", "kvlint", *args]
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    environment.pop("KVLINT_CACHE_DIR", None)
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=environment,
                          stdin=subprocess.DEVNULL)


@contextmanager
def shared_directory() -> Iterator[Path]:
    """A directory the other user can reach (pytest's tmp_path is under a 0700 directory of root's)."""
    directory = Path(tempfile.mkdtemp(prefix="kvlint-shared-", dir="/tmp"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(directory)], capture_output=True)
        shutil.rmtree(directory, ignore_errors=True)

"""Shared test helpers: run kvlint in-process or as a subprocess, paths to fixtures."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def run_kvlint(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python -m kvlint ARGS` the way a user would; return the completed process."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "kvlint", *args],
        cwd=cwd or ROOT,
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def kvlint():
    return run_kvlint


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root that is also the current directory; its `.git` stops kvlint's search for a configuration."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(autouse=True)
def no_result_cache_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's KVLINT_CACHE_DIR must not reach the kvlint runs of the tests (they ask for a cache explicitly)."""
    monkeypatch.delenv("KVLINT_CACHE_DIR", raising=False)


SUMMARY = re.compile(r"^(Found \d+ findings? in \d+ files?\.|All checks passed\.)$")
# ruff's hint before the summary where every fix of the findings is unsafe (a plain check says it, as ruff does)
UNSAFE_HINT = re.compile(
    r"^No fixes available \(\d+ hidden fix(es)? can be enabled with the `--unsafe-fixes` option\)\.$")


def finding_lines(stdout: str) -> list[str]:
    """The finding lines of `kvlint check`'s text output: its last line must be the summary line."""
    lines = stdout.splitlines()
    assert lines and SUMMARY.match(lines[-1]), f"no summary line at the end of {stdout!r}"
    findings = lines[:-2] if len(lines) > 1 and UNSAFE_HINT.match(lines[-2]) else lines[:-1]
    assert (lines[-1] == "All checks passed.") == (not findings), stdout
    return findings

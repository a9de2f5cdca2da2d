"""Fetch real vLLM sources for integration tests: the published wheel from the
package registry, cached, with only `vllm/**/*.py` extracted. Never committed.

Under `CI=true` a failed download fails the test; elsewhere it skips with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("KVLINT_TEST_CACHE", Path.home() / ".cache" / "kvlint"))  # downloads, venvs


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"vLLM sources unavailable under CI: {reason}")
    pytest.skip(f"vLLM sources unavailable: {reason}")


def vllm_tree(version: str) -> Path:
    """Return a directory holding `vllm/` of the given release (downloaded once)."""
    destination = CACHE / "src" / f"vllm-{version}"
    complete = destination / ".complete"
    if complete.is_file():
        return destination
    wheels = CACHE / "wheels" / version
    wheel = next(iter(sorted(wheels.glob("vllm-*.whl"))), None) if wheels.is_dir() else None
    if wheel is None:
        wheels.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                   "--dest", str(wheels), "--quiet", f"vllm=={version}"]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _unavailable(f"pip download failed: {exc}")
        if completed.returncode != 0:
            _unavailable(f"pip download failed: {completed.stderr.strip()[-500:]}")
        wheel = next(iter(sorted(wheels.glob("vllm-*.whl"))), None)
        if wheel is None:
            _unavailable("pip download produced no wheel")
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            name = info.filename
            if name.startswith("vllm/") and name.endswith(".py") and ".." not in Path(name).parts:
                archive.extract(info, destination)
    complete.write_text(f"{wheel.name}\n")
    return destination

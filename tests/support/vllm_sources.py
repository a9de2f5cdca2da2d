"""Fetch real vLLM sources (and its plugins' sources) for integration tests: the published wheel
from the package registry, cached, with only the package's `*.py` files extracted. Never committed.

Under `CI=true` a failed download fails the test; elsewhere it skips with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("KVLINT_TEST_CACHE", Path.home() / ".cache" / "kvlint"))  # downloads, venvs


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"vLLM sources unavailable under CI: {reason}")
    pytest.skip(f"vLLM sources unavailable: {reason}")


def vllm_tree(version: str) -> Path:
    """Return a directory holding `vllm/` of the given release (downloaded once)."""
    return wheel_tree("vllm", version, "vllm", destination=CACHE / "src" / f"vllm-{version}",
                      wheels=CACHE / "wheels" / version)


@dataclass(frozen=True)
class Plugin:
    """A platform plugin or connector package built on vLLM, read from its published wheel."""

    distribution: str  # the name on the registry
    version: str
    package: str  # the top-level import package the wheel holds
    platform: tuple[str, ...] = ()  # pip's --platform/--python-version/... for a wheel with compiled parts


def plugin_tree(plugin: Plugin) -> Path:
    """Return a directory holding the plugin's package of that release (downloaded once)."""
    name = f"{plugin.distribution}-{plugin.version}"
    return wheel_tree(plugin.distribution, plugin.version, plugin.package, destination=CACHE / "src" / name,
                      wheels=CACHE / "wheels" / name, pip_options=plugin.platform)


def wheel_tree(distribution: str, version: str, package: str, destination: Path, wheels: Path,
               pip_options: tuple[str, ...] = ()) -> Path:
    """Download `distribution==version`'s wheel into `wheels` once; extract only `package/**/*.py`."""
    complete = destination / ".complete"
    if complete.is_file():
        return destination
    pattern = f"{distribution.replace('-', '_')}-{version}-*.whl"
    wheel = next(iter(sorted(wheels.glob(pattern))), None) if wheels.is_dir() else None
    if wheel is None:
        wheels.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", *pip_options,
                   "--dest", str(wheels), "--quiet", f"{distribution}=={version}"]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _unavailable(f"pip download failed: {exc}")
        if completed.returncode != 0:
            _unavailable(f"pip download failed: {completed.stderr.strip()[-500:]}")
        wheel = next(iter(sorted(wheels.glob(pattern))), None)
        if wheel is None:
            _unavailable(f"pip download produced no wheel matching {pattern}")
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            name = info.filename
            if name.startswith(f"{package}/") and name.endswith(".py") and ".." not in Path(name).parts:
                archive.extract(info, destination)
    complete.write_text(f"{wheel.name}\n")
    return destination

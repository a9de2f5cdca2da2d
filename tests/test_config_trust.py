"""A configuration you can trust (issue 15): the search for one stops at a directory or file owned by
another user (like git's safe.directory), and `--verbose` names a configuration from a parent directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kvlint.config import find_config_file
from tests.conftest import FIXTURES, run_kvlint
from tests.support.second_user import OTHER_GID, OTHER_UID

CANARY = (FIXTURES / "nasty" / "canary.py").read_text()
FINDING = "canary.py:3:12: KVC001"
SILENCING = '[tool.kvlint]\nexclude = ["*.py"]\n'


@pytest.fixture
def root_only() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("files of another user need root")
        pytest.skip("files of another user need root")


def _project(parent: Path) -> Path:
    project = parent / "project"
    project.mkdir()
    (project / "canary.py").write_text(CANARY)
    return project


def test_a_parent_directory_of_another_user_is_not_searched(tmp_path: Path, root_only: None) -> None:
    parent = tmp_path / "theirs"
    parent.mkdir()
    (parent / "pyproject.toml").write_text(SILENCING)
    os.chown(parent / "pyproject.toml", OTHER_UID, OTHER_GID)
    os.chown(parent, OTHER_UID, OTHER_GID)
    project = _project(parent)
    completed = run_kvlint("check", ".", cwd=project)
    assert completed.returncode == 1 and FINDING in completed.stdout, completed.stderr
    assert find_config_file(project) is None
    verbose = run_kvlint("check", "--verbose", ".", cwd=project)
    assert verbose.stderr == ("kvlint: configuration: none found, kvlint's defaults\n"
                              f"kvlint: configuration search stopped at {parent}: owned by another user "
                              f"(uid {OTHER_UID})\n")


def test_a_configuration_file_of_another_user_in_a_shared_parent_is_not_read(tmp_path: Path, root_only: None) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: anyone may put a file here
    (shared / "pyproject.toml").write_text(SILENCING)
    os.chown(shared / "pyproject.toml", OTHER_UID, OTHER_GID)
    project = _project(shared)
    completed = run_kvlint("check", ".", cwd=project)
    assert completed.returncode == 1 and FINDING in completed.stdout, completed.stderr


def test_a_checkout_of_another_user_keeps_its_own_configuration(tmp_path: Path, root_only: None) -> None:
    """Root checking a user's checkout (a CI container): the start directory's owner is trusted."""
    project = _project(tmp_path)
    (project / "pyproject.toml").write_text(SILENCING)
    for path in (project / "pyproject.toml", project / "canary.py", project):
        os.chown(path, OTHER_UID, OTHER_GID)
    assert find_config_file(project) == project / "pyproject.toml"
    completed = run_kvlint("check", "canary.py", cwd=project)
    assert completed.returncode == 0 and "All checks passed." in completed.stdout


def test_verbose_names_a_configuration_from_a_parent_directory(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.kvlint]\nselect = ["KVC001"]\n')
    project = _project(tmp_path)
    completed = run_kvlint("check", "--verbose", ".", cwd=project)
    assert completed.returncode == 1
    assert completed.stderr == f"kvlint: configuration: {tmp_path}/pyproject.toml (in a parent directory of .)\n"
    here = run_kvlint("check", "--verbose", ".", cwd=tmp_path)
    assert here.stderr == "kvlint: configuration: pyproject.toml\n"
    quiet = run_kvlint("check", ".", cwd=project)
    assert quiet.stderr == ""

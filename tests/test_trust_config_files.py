"""Configuration files that are hostile or someone else's (issue 29, defects 11 and 12).

A deeply nested `pyproject.toml` made tomllib raise RecursionError, which every face called an internal
error (mypy: an INTERNAL ERROR traceback); it is a configuration error like any other now. And the project
root search (what `test-files = tests/**` is relative to) took another user's empty `setup.cfg` or `.git` in a
shared parent as the project's root; like the configuration search, it refuses foreign markers now.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvlint.config import ConfigError, DirectoryConfigs, config_for_directory, load_config, project_root
from tests.conftest import ROOT, run_kvlint

OTHER_UID = OTHER_GID = 65534  # `nobody`, as tests/support/second_user.py plays the other user

SEED = """\
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)
"""

TYPED = """\
class Output:
    kv_connector_output: "object | None" = None


def merge(outputs: "list[Output]") -> None:
    for out in outputs:
        print(out.kv_connector_output)
"""

NESTED = {
    # deeper than any recursion limit (mypy raises its own to 2**14)
    "arrays": "[tool.kvlint]\nselect = " + "[" * 100_000 + "]" * 100_000 + "\n",
    "inline tables": "[tool.kvlint]\nx = " + "{a = " * 100_000 + "1" + "}" * 100_000 + "\n",
    "arrays a recursion limit of 2**14 reads": "[tool.kvlint]\nselect = " + "[" * 5000 + "]" * 5000 + "\n",
    "a huge integer": "[tool.kvlint]\nx = " + "9" * 5000 + "\n",
}


@pytest.fixture(params=sorted(NESTED))
def hostile_tree(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(NESTED[request.param])
    (tmp_path / "merge.py").write_text(SEED)
    return tmp_path


def test_a_deeply_nested_pyproject_is_a_configuration_error(hostile_tree: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config([hostile_tree])
    assert len(str(raised.value)) < 500  # one short line, whatever the nesting
    assert isinstance(config_for_directory(str(hostile_tree)), ConfigError)  # the mypy face's question
    assert isinstance(DirectoryConfigs().for_file(str(hostile_tree / "merge.py")), ConfigError)  # flake8's


def test_kvlint_check_says_so_in_one_line_and_exits_2(hostile_tree: Path) -> None:
    completed = run_kvlint("check", ".", cwd=hostile_tree)
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and len(completed.stderr) < 500, completed.stderr[:1000]
    assert completed.stderr.startswith("kvlint: ") and "TOML" in completed.stderr
    assert "internal error" not in completed.stderr and "Traceback" not in completed.stderr


def test_the_flake8_face_reports_a_configuration_error(hostile_tree: Path) -> None:
    completed = subprocess.run([sys.executable, "-m", "flake8", "--select", "KVC", "merge.py"], cwd=hostile_tree,
                               capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert "configuration error" in completed.stdout and len(completed.stdout) < 600, completed.stdout[:1000]
    assert "Traceback" not in completed.stderr and "RecursionError" not in completed.stdout


def test_the_mypy_face_reports_a_configuration_error(tmp_path: Path) -> None:
    from tests.test_mypy_plugin import mypy_for

    (tmp_path / ".git").mkdir()
    (tmp_path / "mypy.ini").write_text("[mypy]\nplugins = kvlint.mypy_plugin\n")
    (tmp_path / "pyproject.toml").write_text(NESTED["arrays"])
    (tmp_path / "merge.py").write_text(TYPED)
    result = mypy_for("1.20.2").run(tmp_path, "merge.py", env={"KVLINT_MYPY_WORKER": "0"})
    assert "INTERNAL ERROR" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert "configuration error" in result.stdout and "invalid TOML" in result.stdout, result.stdout[:2000]


# ------------------------------------------------------------------------------------- foreign root markers


def _as_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("another user's file needs root to make (os.chown)")


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A shared parent (mode 1777, like /tmp) with a project below its `tests/`."""
    _as_root()
    parent = tmp_path / "shared"
    parent.mkdir()
    parent.chmod(0o1777)
    project = parent / "tests" / "proj"
    project.mkdir(parents=True)
    (project / "merge.py").write_text(SEED)
    return parent


def _foreign(path: Path) -> None:
    os.chown(path, OTHER_UID, OTHER_GID, follow_symlinks=False)


MARKERS = {
    "empty setup.cfg": lambda parent: (parent / "setup.cfg").write_text(""),
    "empty pyproject.toml": lambda parent: (parent / "pyproject.toml").write_text(""),
    ".git directory": lambda parent: (parent / ".git").mkdir(),
    ".git file": lambda parent: (parent / ".git").write_text("gitdir: /nowhere\n"),
    "symlink to a root-owned file": lambda parent: (parent / "setup.cfg").symlink_to(ROOT / "setup.cfg"),
}


@pytest.mark.parametrize("marker", sorted(MARKERS))
def test_another_users_marker_is_not_the_project_root(shared: Path, marker: str, tmp_path: Path) -> None:
    MARKERS[marker](shared)
    _foreign(next(path for path in shared.iterdir() if path.name != "tests"))
    project = shared / "tests" / "proj"
    assert project_root(project / "merge.py") is None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    completed = run_kvlint("check", str(project), cwd=elsewhere)
    assert completed.returncode == 1 and "KVC001" in completed.stdout, completed.stdout + completed.stderr


def test_a_marker_in_a_directory_of_another_user_is_not_the_root(shared: Path) -> None:
    middle = shared / "tests"
    (middle / "setup.cfg").write_text("")
    _foreign(middle)
    assert project_root(middle / "proj") is None


def test_ones_own_marker_still_is_the_root(shared: Path, tmp_path: Path) -> None:
    (shared / "setup.cfg").write_text("")
    project = shared / "tests" / "proj"
    assert project_root(project) == shared
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    completed = run_kvlint("check", str(project), cwd=elsewhere)
    assert completed.returncode == 0, completed.stdout  # tests/** of the user's own project: KVC001 silenced

"""Globs are matched in linear time (issue 29, defect 2).

An `exclude` / `per-file-ignores` / `test-files` pattern with n `**/` parts used to be spelled as 2^n
fnmatch variants: n = 16 took minutes and a gigabyte, in every face. A pattern with more than a few is now a
`_Glob`, one pass over the path; these tests check it means what the variants meant, and that a pattern with
dozens of `**/` parts costs nothing (a subprocess with a generous timeout: the old code never finishes).
"""

from __future__ import annotations

import fnmatch
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kvlint.config import _Glob, _zero_depth_variants, config_from_mapping
from tests.conftest import ROOT

MANY = 40  # distinct `**/` parts: 2^40 variants before
HANG = 18  # in a subprocess: 2^18 variants took the old code far longer than the timeout


def distinct_globstars(count: int) -> str:
    """`**/d0/**/d1/...`: each `**/` left out or kept makes another spelling."""
    return "".join(f"**/d{i}/" for i in range(count))


def _by_variants(pattern: str, name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, variant) for variant in _zero_depth_variants(pattern))


def test_a_glob_means_what_its_variants_mean() -> None:
    pieces = ["a", "b", "/", "*", "**/", "?", "[ab]", "[!a]", "[a-", "]", "**", "[]]", "[/]", "[!/]", "x/**/"]
    generator = random.Random(29)
    compared = 0
    for _ in range(20000):
        pattern = "".join(generator.choice(pieces) for _ in range(generator.randint(1, 7)))
        name = "".join(generator.choice("ab/]-[x") for _ in range(generator.randint(1, 9)))
        try:
            expected = _by_variants(pattern, name)
        except re.error:
            continue
        compared += 1
        assert _Glob(pattern).match(name) is expected, (pattern, name)
    assert compared > 15000


def test_the_automaton_reads_each_character_once() -> None:
    """Bounded by counting: one step per character of the path, whatever the number of `**/`."""
    glob = _Glob(distinct_globstars(MANY) + "tests/**/x.py")
    steps = 0

    class Counted(str):
        def __iter__(self):  # type: ignore[override]
            nonlocal steps
            for char in str.__iter__(self):
                steps += 1
                yield char

    path = Counted("/".join(f"a/d{i}" for i in range(MANY)) + "/tests/b/x.py")
    assert glob.match(path) is True
    assert steps == len(path)


def test_many_globstars_in_every_setting_match_as_they_mean(tmp_path: Path) -> None:
    many = distinct_globstars(MANY)
    inside = Path(*(f"d{i}" for i in range(MANY)))
    config = config_from_mapping({
        "exclude": [f"{many}build_*/**"],
        "per-file-ignores": {f"{many}generated/*.py": ["KVC001"]},
        "test-files": [f"{many}checks/*.py"],
    }, tmp_path / "pyproject.toml")
    assert Path(config._root()) == tmp_path
    assert config.is_excluded(tmp_path / inside / "build_x" / "a.py")
    assert config.is_excluded(tmp_path / "a" / inside / "build_x" / "sub" / "a.py")
    assert not config.is_excluded(tmp_path / "build_x" / "a.py")  # d0 ... d39 are not optional
    assert not config.is_excluded(tmp_path / inside / "build" / "a.py")
    assert config.ignored_for(tmp_path / inside / "generated" / "g.py") == {"KVC001"}
    assert config.ignored_for(tmp_path / "p" / inside / "generated" / "g.py") == {"KVC001"}
    assert config.ignored_for(tmp_path / inside / "g.py") == frozenset()
    assert config.is_test_file(tmp_path / inside / "checks" / "c.py")
    assert not config.is_test_file(tmp_path / "checks" / "c.py")


PYPROJECT = """\
[tool.kvlint]
exclude = ["{many}nothing_here/**"]
test-files = ["{many}tests/**"]
[tool.kvlint.per-file-ignores]
"{many}nowhere/*.py" = ["KVC001"]
"""

SEED = """\
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)
"""


def test_kvlint_check_finishes_on_a_pattern_with_many_globstars(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(many=distinct_globstars(HANG)))
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "merge.py").write_text(SEED)
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "kvlint", "check", "."], cwd=tmp_path, capture_output=True, text=True,
            timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("kvlint check hangs on a glob with many `**/` parts")
    assert completed.returncode == 1, completed.stderr
    assert "a/b/c/merge.py:4:" in completed.stdout and "KVC001" in completed.stdout


def test_the_flake8_face_finishes_too(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(PYPROJECT.format(many=distinct_globstars(HANG)))
    (tmp_path / "merge.py").write_text(SEED)
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "flake8", "--select", "KVC", "merge.py"], cwd=tmp_path, capture_output=True,
            text=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("flake8 --select KVC hangs on a glob with many `**/` parts")
    assert "KVC001" in completed.stdout, completed.stdout + completed.stderr

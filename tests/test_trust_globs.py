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


def _every_level_matches(path: str, patterns: tuple[str, ...], root: str) -> bool:
    """What `_path_matches` means, spelled as it was before it asked a directory's levels once per directory: the
    path's name, its path below the root and its absolute path, then its directories' the same way, up to the root."""
    import os

    from kvlint.config import _any_match, _compiled_patterns

    absolute = os.path.abspath(path)
    names, paths, absolutes = _compiled_patterns(patterns)
    if absolutes[0] is not None and _any_match(Path(absolute).as_posix(), absolutes):
        return True
    relative = os.path.relpath(absolute, root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return _any_match(os.path.basename(absolute), names)
    if relative == os.curdir:
        return False
    parts = relative.split(os.sep)
    return any(
        _any_match(parts[depth - 1], names) or _any_match("/".join(parts[:depth]), paths)
        or absolutes[0] is not None and _any_match(Path(root, *parts[:depth]).as_posix(), absolutes)
        for depth in range(len(parts), 0, -1)
    )


def test_a_path_matches_as_every_level_of_it_does(tmp_path: Path) -> None:
    """`_path_matches` asks a directory's levels once per directory (`_directory_matches`) and takes a path's part
    below the root without `os.path.relpath`: it says what asking every level of every path says, for paths in,
    at, above and beside the root, with name, root-relative, globstar and absolute patterns."""
    from kvlint.config import DEFAULT_TEST_FILES, _path_matches

    root = str(tmp_path / "project")
    pattern_sets = [
        DEFAULT_TEST_FILES,
        ("build", "*.pyi", "docs/*"),
        ("a/**/c/**/e/**/g/**/x.py", "**/b"),  # four `**/`: a `_Glob`
        (f"{root}/vendor", "/elsewhere/*.py"),
        ("project",),
    ]
    relatives = [
        "m.py", "tests/m.py", "pkg/tests/deep/m.py", "pkg/test_m.py", "pkg/m_test.py", "pkg/conftest.py",
        "build/x/m.py", "x/build/m.py", "docs/m.py", "docs/sub/m.py", "a/b/c/d/e/f/g/x.py", "a/c/e/g/x.py",
        "vendor/lib/m.py", "pkg/vendor/m.py", "project/m.py", "stub.pyi", "deep/er/still/m.py",
    ]
    paths = [f"{root}/{relative}" for relative in relatives]
    paths += [root, f"{root}-beside/tests/m.py", str(tmp_path / "m.py"), "/elsewhere/m.py", "/elsewhere/x/m.py"]
    other = str(tmp_path / "other")  # the same directories below another root: `f"{root}/vendor"` is not theirs
    for patterns in pattern_sets:
        for base in (root, other):
            for path in [path.replace(root, base, 1) for path in paths + paths[::-1]]:  # again once they are known
                assert _path_matches(path, patterns, base) == _every_level_matches(path, patterns, base), path
    assert sum(_path_matches(path, DEFAULT_TEST_FILES, root) for path in paths) == 4

"""The test-code policy (issue 16): `test-files` / `test-ignore`, how it composes with select/ignore and
per-file-ignores, `kvlint config`, and every face (check, audit, flake8, mypy) on `fixtures/tests_policy/`.

Markers in the fixtures: `# expect: CODE` is reported with the default policy; `# expect-without-policy: CODE`
only with `test-ignore = []`.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from kvlint.report.audit import AUDIT_JSON_SCHEMA
from kvlint.config import (
    DEFAULT_TEST_FILES,
    DEFAULT_TEST_IGNORE,
    DISPLAY_ORDER,
    KNOWN_KEYS,
    Config,
    ConfigError,
    config_from_mapping,
    load_config,
)
from kvlint.invariants import INVARIANT_KEYS
from kvlint.running.runner import run
from tests.conftest import FIXTURES, run_kvlint

POLICY_FIXTURES = FIXTURES / "tests_policy"
MARKER = re.compile(r"#\s*(?P<kind>expect|expect-without-policy):\s*(?P<codes>KVC\d{3}(?:\s*,\s*KVC\d{3})*)")
Row = tuple[str, int, str]  # path relative to the fixture project, line, code


def markers(root: Path) -> tuple[set[Row], set[Row]]:
    """(reported by default, reported only with `test-ignore = []`) from the fixture markers."""
    always: set[Row] = set()
    without_policy: set[Row] = set()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in MARKER.finditer(line):
                target = always if match.group("kind") == "expect" else without_policy
                target.update((relative, number, code) for code in re.split(r"\s*,\s*", match.group("codes")))
    return always, without_policy


DEFAULT_ROWS, POLICY_ROWS = markers(POLICY_FIXTURES)
ALL_ROWS = DEFAULT_ROWS | POLICY_ROWS


def project(tmp_path: Path, kvlint_section: str = "") -> Path:
    """A copy of the fixture project whose `[tool.kvlint]` holds `kvlint_section`."""
    tree = tmp_path / "project"
    shutil.copytree(POLICY_FIXTURES, tree)
    (tree / "pyproject.toml").write_text(f"[tool.kvlint]\n{kvlint_section}\n", encoding="utf-8")
    return tree


def check_rows(tree: Path, *args: str) -> set[Row]:
    completed = run_kvlint("check", "--format", "json", *args, ".", cwd=tree)
    assert completed.returncode in (0, 1), completed.stderr
    return {(f["path"], f["line"], f["code"]) for f in json.loads(completed.stdout)}


def engine_rows(tree: Path, config: Config, monkeypatch: pytest.MonkeyPatch) -> set[Row]:
    monkeypatch.chdir(tree)
    return {(f.path, f.line, f.code) for f in run([Path(".")], config, jobs=1).findings}


def only(rows: set[Row], *codes: str) -> set[Row]:
    return {row for row in rows if row[2] in codes}


def outside(rows: set[Row], *prefixes: str) -> set[Row]:
    return {row for row in rows if not row[0].startswith(prefixes)}


# --- the fixtures say what the issue asks -------------------------------------------------------------------


def test_the_fixtures_hold_the_three_cases_of_the_issue() -> None:
    assert ("tests/test_sentinel_mutation.py", 9, "KVC004") in DEFAULT_ROWS
    assert ("tests/test_runner_double.py", 17, "KVC002") in DEFAULT_ROWS
    assert ("tests/test_aggregator_result.py", 11, "KVC001") in POLICY_ROWS
    assert ("pkg/aggregate.py", 7, "KVC001") in DEFAULT_ROWS  # the same dereference in production code
    assert {code for _, _, code in POLICY_ROWS} == {"KVC001", "KVC005"}
    every_default_glob = {"tests/helpers.py", "test_at_root.py", "pkg/aggregate_test.py", "tests/conftest.py"}
    assert every_default_glob <= {path for path, _, _ in POLICY_ROWS}


# --- configuration --------------------------------------------------------------------------------------------


def test_defaults() -> None:
    config = Config()
    assert config.test_files == DEFAULT_TEST_FILES == ("tests/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
    assert config.test_ignore == DEFAULT_TEST_IGNORE == ("KVC001", "KVC005")
    assert "test_files=" in repr(config) and "test_ignore=" in repr(config)  # the result cache's key
    assert {"test-files", "test-ignore"} <= set(KNOWN_KEYS) == {*DISPLAY_ORDER, *INVARIANT_KEYS, "invariants"}


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("test_x.py", True),  # `**/` matches no directory, too
        ("a/b/test_x.py", True),
        ("conftest.py", True),
        ("a/conftest.py", True),
        ("x_test.py", True),
        ("a/x_test.py", True),
        ("tests/x.py", True),
        ("tests/a/b/utils.py", True),
        ("fixtures/vllm_like/aggregator.py", False),
        ("fixtures/tests_policy/pkg/aggregate.py", False),
        ("pkg/tests_util.py", False),
        ("pkg/contest.py", False),
        ("testsuite/x.py", False),
        ("a/tests/x.py", False),  # `tests/**` is anchored at the root, as `exclude` patterns with a `/` are
        ("vllm/v1/outputs.py", False),
        ("vllm/testing.py", False),
    ],
)
def test_default_globs(tmp_path: Path, relative: str, expected: bool) -> None:
    config = Config(root=tmp_path)
    assert config.is_test_file(tmp_path / relative) is expected
    assert config.test_ignored_for(tmp_path / relative) == (frozenset(DEFAULT_TEST_IGNORE) if expected else set())


def test_outside_the_root_no_default_glob_matches(tmp_path: Path) -> None:
    config = Config(root=tmp_path / "project")
    assert not config.is_test_file(tmp_path / "elsewhere" / "tests" / "test_x.py")
    assert Config(test_files=("test_*.py",), root=tmp_path / "project").is_test_file(tmp_path / "test_x.py")


def test_no_path_of_this_repository_outside_its_tests_is_test_code() -> None:
    """The repository's own layout: only `tests/` (and the fixtures that hold test code on purpose: the policy's,
    and the summaries' test that calls a runner) are test code."""
    config = load_config([FIXTURES])
    root = FIXTURES.parent
    matched = {path.relative_to(root).as_posix() for path in root.rglob("*.py")
               if ".venv" not in path.parts and config.is_test_file(path)}
    on_purpose = ("tests/", "fixtures/tests_policy/", "fixtures/summaries/tests/")
    assert matched and all(path.startswith(on_purpose) for path in matched)
    assert not any(path.startswith("fixtures/vllm_like/") or path.startswith("fixtures/nasty/") for path in matched)


def test_double_star_works_in_every_glob_key(tmp_path: Path) -> None:
    config = Config(exclude=("**/generated/*.py",), per_file_ignores=(("**/legacy_*.py", ("KVC001",)),),
                    root=tmp_path)
    assert config.is_excluded(tmp_path / "generated" / "a.py")
    assert config.is_excluded(tmp_path / "x" / "generated" / "a.py")
    assert config.ignored_for(tmp_path / "legacy_a.py") == {"KVC001"}
    assert config.ignored_for(tmp_path / "p" / "legacy_a.py") == {"KVC001"}
    middle = Config(test_files=("src/**/checks/*.py",), root=tmp_path)
    assert middle.is_test_file(tmp_path / "src" / "checks" / "a.py")
    assert middle.is_test_file(tmp_path / "src" / "x" / "y" / "checks" / "a.py")
    assert not middle.is_test_file(tmp_path / "lib" / "checks" / "a.py")


def test_keys_from_toml(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kvlint]\ntest-files = ["checks/**"]\ntest-ignore = ["KVC0"]\n', encoding="utf-8")
    config = load_config([tmp_path])
    assert (config.test_files, config.test_ignore) == (("checks/**",), ("KVC0",))
    assert config.explicit_keys == {"test-files", "test-ignore"}
    assert config.silenced_for(tmp_path / "checks" / "a.py") == {"KVC0"}


def test_keys_from_setup_cfg(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "setup.cfg").write_text(
        "[kvlint]\ntest-files =\n    checks/**\n    **/check_*.py\ntest-ignore =\n", encoding="utf-8")
    config = load_config([tmp_path])
    assert (config.test_files, config.test_ignore) == (("checks/**", "**/check_*.py"), ())
    assert config.test_ignored_for(tmp_path / "checks" / "a.py") == frozenset()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("test-files = 'tests/**'", "'test-files' in [tool.kvlint] must be a list of strings, got string"),
        ("test-ignore = 'KVC001'", "'test-ignore' in [tool.kvlint] must be a list of strings, got string"),
        ("test-files = ['tests/**', 1]", "'test-files' in [tool.kvlint] must be a list of strings, "
                                         "but item 1 is int 1"),
        ("test-files = ['']", "empty pattern in 'test-files' in [tool.kvlint]"),
        ("test-ignore = ['E501']", "invalid code 'E501' in 'test-ignore' in [tool.kvlint] "
                                   "(expected 'KVC' and up to three digits, e.g. 'KVC001' or 'KVC0')"),
        ("test_ignore = []", "unknown key 'test_ignore' in [tool.kvlint] (did you mean 'test-ignore'?)"),
    ],
)
def test_bad_values_are_configuration_errors(tmp_path: Path, body: str, expected: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(f"[tool.kvlint]\n{body}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config([tmp_path])
    assert str(info.value).endswith(f"pyproject.toml: {expected}")
    completed = run_kvlint("check", ".", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr == f"kvlint: pyproject.toml: {expected}\n"


def test_bad_cfg_value_names_key_and_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "setup.cfg").write_text("[kvlint]\ntest-ignore = KVC001, F401\n", encoding="utf-8")
    completed = run_kvlint("check", ".", cwd=tmp_path)
    assert (completed.returncode, completed.stderr) == (
        2, "kvlint: setup.cfg: invalid code 'F401' in 'test-ignore' in [kvlint] "
           "(expected 'KVC' and up to three digits, e.g. 'KVC001' or 'KVC0')\n")


def test_without_a_configuration_file_the_globs_are_relative_to_the_project_root(tmp_path: Path) -> None:
    """A vLLM checkout has no [tool.kvlint]: `tests/**` still means its tests when run from elsewhere."""
    tree = tmp_path / "checkout"
    shutil.copytree(POLICY_FIXTURES, tree)
    (tree / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")  # no kvlint section
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert load_config([tree / "tests"]).root == tree
    completed = run_kvlint("check", "--format", "json", str(tree), cwd=elsewhere)
    found = {(Path(f["path"]).relative_to(tree).as_posix(), f["line"], f["code"]) for f in json.loads(completed.stdout)}
    assert found == DEFAULT_ROWS


# --- semantics and composition (the engine, as `kvlint check` runs it) --------------------------------------


def test_default_policy(tmp_path: Path) -> None:
    assert check_rows(project(tmp_path)) == DEFAULT_ROWS


def test_empty_test_ignore_reports_everything(tmp_path: Path) -> None:
    assert check_rows(project(tmp_path, "test-ignore = []")) == ALL_ROWS


def test_empty_test_files_reports_everything(tmp_path: Path) -> None:
    assert check_rows(project(tmp_path, "test-files = []")) == ALL_ROWS


def test_custom_globs(tmp_path: Path) -> None:
    """Only `tests/**`: the root-level test module and the `*_test.py` next to production code are reported."""
    found = check_rows(project(tmp_path, 'test-files = ["tests/**"]'))
    assert found == DEFAULT_ROWS | {row for row in POLICY_ROWS if not row[0].startswith("tests/")}


def test_custom_codes(tmp_path: Path) -> None:
    """`test-ignore` takes prefixes: `KVC0` silences KVC002 and KVC004 in tests too."""
    found = check_rows(project(tmp_path, 'test-ignore = ["KVC0"]'))
    assert found == outside(DEFAULT_ROWS, "tests/", "test_at_root.py", "pkg/aggregate_test.py")
    assert check_rows(project(tmp_path / "b", 'test-ignore = ["KVC005"]')) == DEFAULT_ROWS | only(POLICY_ROWS, "KVC001")


def test_select_does_not_re_enable_what_the_policy_silences(tmp_path: Path) -> None:
    tree = project(tmp_path)
    assert check_rows(tree, "--select", "KVC001") == {("pkg/aggregate.py", 7, "KVC001")}
    assert check_rows(tree, "--select", "KVC001,KVC005") == {("pkg/aggregate.py", 7, "KVC001")}
    assert check_rows(project(tmp_path / "b", 'select = ["KVC001"]')) == {("pkg/aggregate.py", 7, "KVC001")}
    # ... `test-ignore = []` does
    assert check_rows(project(tmp_path / "c", "test-ignore = []"), "--select", "KVC001") == only(ALL_ROWS, "KVC001")


def test_ignore_and_per_file_ignores_add_to_the_policy(tmp_path: Path) -> None:
    tree = project(tmp_path)
    assert check_rows(tree, "--ignore", "KVC004") == only(DEFAULT_ROWS, "KVC001", "KVC002")
    per_file = project(tmp_path / "b", '[tool.kvlint.per-file-ignores]\n"tests/*" = ["KVC002"]')
    assert check_rows(per_file) == DEFAULT_ROWS - {("tests/test_runner_double.py", 17, "KVC002")}
    # per-file-ignores cannot bring back what the policy silences: both are ignores, and ignores add up
    unrelated = project(tmp_path / "c", '[tool.kvlint.per-file-ignores]\n"tests/*" = []')
    assert check_rows(unrelated) == DEFAULT_ROWS


def test_noqa_still_applies_in_test_files(tmp_path: Path) -> None:
    tree = project(tmp_path)
    module = tree / "tests" / "test_sentinel_mutation.py"
    module.write_text(module.read_text().replace("# expect: KVC004", "# noqa: KVC004"), encoding="utf-8")
    assert check_rows(tree) == {row for row in DEFAULT_ROWS if row[0] != "tests/test_sentinel_mutation.py"}


def test_the_engine_applies_the_policy_in_one_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run` (what check and audit call), with Config objects: the same rows as the command line."""
    tree = project(tmp_path)
    assert engine_rows(tree, Config(root=tree), monkeypatch) == DEFAULT_ROWS
    assert engine_rows(tree, Config(root=tree, test_ignore=()), monkeypatch) == ALL_ROWS


def test_file_level_findings_follow_the_policy_only_when_named(tmp_path: Path) -> None:
    """KVC900 in a test file is reported by default (it is not KVC001/KVC005)."""
    tree = project(tmp_path)
    (tree / "tests" / "test_broken.py").write_text("def f(out:\n    return out.kv_connector_output\n")
    assert check_rows(tree) == DEFAULT_ROWS | {("tests/test_broken.py", 1, "KVC900")}
    silenced = project(tmp_path / "b", 'test-ignore = ["KVC001", "KVC005", "KVC9"]')
    (silenced / "tests" / "test_broken.py").write_text("def f(out:\n    return out.kv_connector_output\n")
    assert check_rows(silenced) == DEFAULT_ROWS


def test_result_cache_follows_the_policy(tmp_path: Path) -> None:
    tree = project(tmp_path)
    cache = tmp_path / "cache"
    assert check_rows(tree, "--cache-dir", str(cache)) == DEFAULT_ROWS
    (tree / "pyproject.toml").write_text("[tool.kvlint]\ntest-ignore = []\n", encoding="utf-8")
    assert check_rows(tree, "--cache-dir", str(cache)) == ALL_ROWS


# --- kvlint config ---------------------------------------------------------------------------------------------


def _config_output(*args: str, cwd: Path) -> tuple[str, dict[str, object]]:
    completed = run_kvlint("config", *args, cwd=cwd)
    assert (completed.returncode, completed.stderr) == (0, ""), completed.stderr
    return completed.stdout, tomllib.loads(completed.stdout)["tool"]["kvlint"]


def test_config_shows_every_key_with_its_origin(tmp_path: Path) -> None:
    tree = project(tmp_path, 'test-ignore = ["KVC001"]\nexclude = ["build"]')
    text, table = _config_output("--select", "KVC0", cwd=tree)
    assert list(table) == [*DISPLAY_ORDER, "invariants"]
    assert [invariant["name"] for invariant in table["invariants"]] == ["kv", "ec"]
    assert table["test-files"] == list(DEFAULT_TEST_FILES)
    assert table["test-ignore"] == ["KVC001"]
    assert table["select"] == ["KVC0"]
    assert table["per-file-ignores"] == {}
    lines = {line.split(" = ")[0]: line for line in text.splitlines() if " = " in line and not line.startswith("#")}
    assert lines["test-files"].endswith("# default")
    assert lines["test-ignore"].endswith("# from pyproject.toml")
    assert lines["exclude"].endswith("# from pyproject.toml")
    assert lines["select"].endswith("# from the command line (--select)")
    assert lines["ignore"].endswith("# default")
    assert "# read from pyproject.toml ([tool.kvlint])" in text
    assert f"# globs (exclude, per-file-ignores, test-files) are relative to {tree.as_posix()}" in text


def test_config_without_a_file_shows_the_defaults(tmp_path: Path) -> None:
    text, table = _config_output(cwd=tmp_path)
    assert "# no configuration file found: every key is kvlint's default" in text
    defaults = Config()
    for key in DISPLAY_ORDER:
        value = getattr(defaults, key.replace("-", "_"))
        expected = dict((p, list(c)) for p, c in value) if key == "per-file-ignores" else (
            value if isinstance(value, str) else list(value))
        assert table[key] == expected, key
    assert all(line.endswith(("# default", "# default: every code", "# the 'kv' preset", "# the 'ec' preset"))
               for line in text.splitlines() if " = " in line and not line.startswith("#"))
    assert [invariant["name"] for invariant in table["invariants"]] == ["kv", "ec"]


def test_config_output_is_a_configuration_that_gives_the_same_settings(tmp_path: Path) -> None:
    section = ('test-files = ["checks/**"]\ntest-ignore = []\nselect = ["KVC0"]\n'
               'payload-class = "pkg.KVOut"\n[tool.kvlint.per-file-ignores]\n"a \\"b\\"/*.py" = ["KVC001"]')
    tree = project(tmp_path, section)
    _, table = _config_output(cwd=tree)
    again = config_from_mapping(table, tree / "pyproject.toml")
    original = load_config([tree])
    assert again.invariants.invariants == original.invariants.invariants  # every invariant spelled out in full
    assert again.invariants.by_name["kv"].payload_class == "pkg.KVOut"
    for key in DISPLAY_ORDER:
        assert getattr(again, key.replace("-", "_")) == getattr(original, key.replace("-", "_")), key


def test_config_from_setup_cfg_and_for_a_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "setup.cfg").write_text("[kvlint]\ntest-ignore = KVC001\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("")
    (tmp_path / "a.py").write_text("")
    text, table = _config_output("tests/test_a.py", cwd=tmp_path)
    assert table["test-ignore"] == ["KVC001"]
    assert "# read from setup.cfg ([kvlint])" in text
    assert "# tests/test_a.py is a test file: KVC001 not reported there" in text
    text, _ = _config_output("a.py", cwd=tmp_path)
    assert "# a.py is not a test file" in text


def test_config_reports_a_bad_configuration(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.kvlint]\ntest-ignore = 'KVC001'\n", encoding="utf-8")
    completed = run_kvlint("config", cwd=tmp_path)
    assert completed.returncode == 2
    assert "'test-ignore' in [tool.kvlint] must be a list of strings" in completed.stderr


# --- audit ------------------------------------------------------------------------------------------------------


def test_audit_inventories_test_sites_and_marks_them(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    tree = project(tmp_path)
    completed = run_kvlint("audit", "--format", "json", ".", cwd=tree)
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    jsonschema.validate(report, AUDIT_JSON_SCHEMA)
    assert {(f["path"], f["line"], f["code"]) for f in report["findings"]} == DEFAULT_ROWS
    assert report["configuration"]["test_files"] == list(DEFAULT_TEST_FILES)
    assert report["configuration"]["test_ignore"] == list(DEFAULT_TEST_IGNORE)
    config = Config(root=tree)
    files = {f["path"]: f["test_file"] for f in report["files"]}
    assert files == {path: config.is_test_file(tree / path) for path in files}
    assert report["summary"]["files"]["test"] == sum(files.values()) == 7
    # the silenced dereference is still inventoried, marked as test code
    reads = {(a["path"], a["line"]): a["test_file"] for a in report["connector_output_accesses"]}
    assert reads[("tests/test_aggregator_result.py", 11)] is True
    assert reads[("pkg/aggregate.py", 7)] is False
    for name in ("output_constructions", "connector_output_accesses", "connector_output_writes",
                 "dereferences", "sentinel_uses", "connector_scopes", "payload_constructions"):
        for entry in report[name]:
            assert entry["test_file"] is files[entry["path"]], (name, entry)
    assert any(entry["test_file"] for entry in report["dereferences"])


def test_audit_json_with_the_policy_off(tmp_path: Path) -> None:
    tree = project(tmp_path, "test-ignore = []")
    report = json.loads(run_kvlint("audit", "--format", "json", ".", cwd=tree).stdout)
    assert {(f["path"], f["line"], f["code"]) for f in report["findings"]} == ALL_ROWS
    assert report["configuration"]["test_ignore"] == []


def test_audit_text_marks_test_files(tmp_path: Path) -> None:
    tree = project(tmp_path)
    completed = run_kvlint("audit", "--quiet", ".", cwd=tree, env={"NO_COLOR": "1", "FORCE_COLOR": ""})
    lines = completed.stdout.splitlines()
    assert "tests/test_runner_double.py  [test file: KVC001, KVC005 not reported there]" in lines
    assert "pkg/aggregate.py" in lines
    assert "; 7 test files (KVC001, KVC005 not reported there)" in lines[1]


# --- flake8 ----------------------------------------------------------------------------------------------------


def flake8_rows(tree: Path, *args: str) -> set[Row]:
    completed = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--format=%(path)s|%(row)d|%(code)s", *args, "."],
        cwd=tree, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode in (0, 1) and "Traceback" not in completed.stderr, completed.stderr
    found = set()
    for line in completed.stdout.splitlines():
        path, number, code = line.split("|")
        found.add((path.removeprefix("./"), int(number), code))
    return found


def test_flake8_honours_the_policy(tmp_path: Path) -> None:
    tree = project(tmp_path)
    assert flake8_rows(tree, "--select", "KVC") == DEFAULT_ROWS
    # flake8's --select cannot bring back what kvlint's test policy silences
    assert flake8_rows(tree, "--select", "KVC001") == {("pkg/aggregate.py", 7, "KVC001")}
    # flake8's own per-file-ignores still apply on top
    assert flake8_rows(tree, "--select", "KVC", "--per-file-ignores", "tests/*:KVC004") == (
        DEFAULT_ROWS - only(DEFAULT_ROWS, "KVC004"))
    assert flake8_rows(project(tmp_path / "b", "test-ignore = []"), "--select", "KVC") == ALL_ROWS


def test_flake8_plugin_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """flake8's API: a test file's KVC001 row is dropped by the plugin itself (suppress=False keeps the policy)."""
    import argparse
    import ast

    from kvlint.flake8_plugin import KVLintChecker

    tree = project(tmp_path)
    monkeypatch.chdir(tree)
    KVLintChecker.parse_options(argparse.Namespace(filenames=["tests/test_aggregator_result.py"]))
    for relative, expected in (("tests/test_aggregator_result.py", set()),
                               ("pkg/aggregate.py", {(7, "KVC001")}),
                               ("tests/test_runner_double.py", {(17, "KVC002")})):
        text = (tree / relative).read_text()
        checker = KVLintChecker(ast.parse(text), text.splitlines(keepends=True), relative)
        assert {(line, message.split()[0]) for line, _, message, _ in checker.run()} == expected, relative
    KVLintChecker.parse_options(argparse.Namespace(filenames=[]))


# --- mypy ---------------------------------------------------------------------------------------------------------


MYPY_INI = (
    "[mypy]\nplugins = kvlint.mypy_plugin\nmypy_path = .\nshow_column_numbers = True\nignore_missing_imports = True\n"
)


@pytest.fixture(scope="module")
def mypy():
    from tests.test_mypy_plugin import MYPY_VERSIONS, mypy_for

    return mypy_for(MYPY_VERSIONS[0])


def _mypy_kvc(mypy, tree: Path) -> set[tuple[str, int, str]]:  # type: ignore[no-untyped-def]
    run_ = mypy.run(tree, "--config-file", "mypy.ini", "--cache-dir", str(tree / ".mypy_cache"),
                    "tests/test_runner_double.py", "tests/test_sentinel_mutation.py", "pkg/aggregate.py")
    assert run_.stderr == ""
    found = set()
    for line in run_.stdout.splitlines():
        if line.endswith("[kvc]"):
            path, number, _, rest = line.split(":", 3)
            found.add((path, int(number), rest.split()[1]))
    return found


def test_mypy_plugin_honours_the_policy_and_its_cache_follows_it(  # type: ignore[no-untyped-def]
    mypy, tmp_path: Path
) -> None:
    """mypy reports the producer rules and KVC004 (no type shows them): the runner double's KVC002 in a
    test file until `test-ignore` names it, the test's sentinel mutations (KVC004 stays on in tests);
    mypy's incremental cache notices the edit."""
    tree = project(tmp_path)
    (tree / "mypy.ini").write_text(MYPY_INI)
    kvc002 = {("tests/test_runner_double.py", 17, "KVC002")}
    kvc004 = {("tests/test_sentinel_mutation.py", 9, "KVC004"), ("tests/test_sentinel_mutation.py", 15, "KVC004")}
    assert _mypy_kvc(mypy, tree) == kvc002 | kvc004
    assert _mypy_kvc(mypy, tree) == kvc002 | kvc004  # from mypy's cache
    (tree / "pyproject.toml").write_text('[tool.kvlint]\ntest-ignore = ["KVC001", "KVC002", "KVC005"]\n')
    assert _mypy_kvc(mypy, tree) == kvc004
    (tree / "pyproject.toml").write_text('[tool.kvlint]\ntest-files = ["nothing/**"]\ntest-ignore = ["KVC002"]\n')
    assert _mypy_kvc(mypy, tree) == kvc002 | kvc004


def test_expected_rows_are_exact(tmp_path: Path) -> None:
    """No marker is duplicated or lost between the two kinds."""
    counts = Counter(row for row in [*DEFAULT_ROWS, *POLICY_ROWS])
    assert all(count == 1 for count in counts.values())

"""The flake8 face, run as users run it (`python -m flake8` in a subprocess): same findings as
`kvlint check`, flake8's own noqa / per-file-ignores / E999, kvlint's configuration."""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kvlint
from kvlint import flake8_plugin
from kvlint.flake8_plugin import KVLintChecker
from tests.conftest import FIXTURES, ROOT, run_kvlint
from tests.test_fixtures import PACKAGE, expected_findings
from tests.support.vllm_sources import vllm_tree

ROW_FORMAT = "%(path)s|%(row)d|%(col)d|%(code)s|%(text)s"

BAD = '''\
from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        done = kvo.finished_sending
        sent = kvo.finished_recving  # noqa: KVC001
    return done, sent


def execute_model(scheduler_output):
    if has_kv_transfer_group():
        return EMPTY_MODEL_RUNNER_OUTPUT
    return None
'''
BAD_ROWS = {(8, 16, "KVC001"), (15, 9, "KVC002")}  # 1-based columns, as flake8 prints them


def flake8(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m flake8 ARGS` in `cwd`; return the completed process (flake8 must not crash)."""
    completed = subprocess.run(
        [sys.executable, "-m", "flake8", f"--format={ROW_FORMAT}", *args], cwd=cwd, capture_output=True,
        text=True, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL, timeout=900,
    )
    assert completed.returncode in (0, 1) and "Traceback" not in completed.stderr, completed.stderr
    return completed


def rows(completed: subprocess.CompletedProcess[str]) -> set[tuple[str, int, int, str]]:
    """(path, line, column, code) of every row flake8 printed."""
    found = set()
    for line in completed.stdout.splitlines():
        path, row, column, code, _ = line.split("|", 4)
        found.add((path.removeprefix("./"), int(row), int(column), code))
    return found


def kvlint_rows(*paths: str, cwd: Path = ROOT) -> set[tuple[str, int, int, str]]:
    """(path, line, column, code) of every finding of `kvlint check --format json PATHS`."""
    completed = run_kvlint("check", "--format", "json", *paths, cwd=cwd)
    assert completed.returncode in (0, 1), completed.stderr
    return {(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(completed.stdout)}


def without_path(found: set[tuple[str, int, int, str]]) -> set[tuple[int, int, str]]:
    return {(line, column, code) for _, line, column, code in found}


def test_installing_kvlint_registers_the_plugin() -> None:
    entry_points = importlib.metadata.entry_points(group="flake8.extension", name="KVC")
    assert [entry.value for entry in entry_points] == ["kvlint.flake8_plugin:KVLintChecker"], (
        "reinstall kvlint (pip install -e .) so flake8 finds the entry point"
    )
    version = subprocess.run([sys.executable, "-m", "flake8", "--version"], capture_output=True, text=True)
    # flake8 names a plugin by its distribution, and wraps the line: compare with the whitespace collapsed
    assert f"vllm-kvlint: {kvlint.__version__}" in " ".join(version.stdout.split())


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda path: path.name)
def test_one_file_gives_what_kvlint_check_gives(path: Path) -> None:
    relative = path.relative_to(ROOT).as_posix()
    completed = flake8("--isolated", "--select", "KVC", relative, cwd=ROOT)
    assert completed.returncode == (1 if completed.stdout else 0), completed.stderr
    assert rows(completed) == kvlint_rows(relative)


def test_the_fixture_tree_gives_what_kvlint_check_and_the_markers_give() -> None:
    completed = flake8("--isolated", "--select", "KVC", "-j", "2", "fixtures/vllm_like", cwd=ROOT)
    found = rows(completed)
    assert found == kvlint_rows("fixtures/vllm_like")
    markers = expected_findings(PACKAGE)
    assert {(path, line, code) for path, line, _, code in found} == set(markers)
    assert len(found) == sum(markers.values())


def test_a_tree_s_skipped_caller_is_guarded_by_what_it_imports_as_kvlint_check_sees_it() -> None:
    """flake8 over a tree analyses each file with the index `kvlint check` builds for it (`index_tree`): the
    binder project's request finisher, a caller the byte scan skips, sees the `NoReturn` helper only its own
    imports bring, and only its unguarded neighbour is flagged."""
    project = "fixtures/binding/project"
    found = rows(flake8("--isolated", "--select", "KVC", "-j", "2", project, cwd=ROOT))
    assert found == kvlint_rows(project)
    finisher = f"{project}/kv_project/request_finisher.py"
    assert {(line, code) for path, line, _, code in found if path == finisher} == {(21, "KVC001")}


def test_one_file_sees_what_its_imports_declare_many_files_share_an_index() -> None:
    """scheduler.py calls `take_finished_transfers`, declared Optional in sources.py, which it imports."""
    scheduler = "fixtures/vllm_like/scheduler.py"
    cross_file = (scheduler, 47, 49, "KVC001")
    alone = rows(flake8("--isolated", "--select", "KVC", scheduler, cwd=ROOT))
    assert cross_file in alone and alone == kvlint_rows(scheduler)
    together = rows(flake8("--isolated", "--select", "KVC", scheduler, "fixtures/vllm_like/sources.py", cwd=ROOT))
    assert cross_file in together
    assert together == kvlint_rows(scheduler, "fixtures/vllm_like/sources.py")


def test_stdin_with_a_display_name(tmp_path: Path) -> None:
    completed = flake8("--isolated", "--select", "KVC", "--stdin-display-name", "pkg/worker.py", "-",
                       cwd=tmp_path, stdin=BAD)
    assert completed.returncode == 1, completed.stderr
    assert rows(completed) == {("pkg/worker.py", *row) for row in BAD_ROWS}


def test_noqa_is_left_to_flake8(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    assert without_path(rows(flake8("--isolated", "--select", "KVC", "bad.py", cwd=tmp_path))) == BAD_ROWS
    unsuppressed = rows(flake8("--isolated", "--select", "KVC", "--disable-noqa", "bad.py", cwd=tmp_path))
    assert without_path(unsuppressed) == BAD_ROWS | {(9, 16, "KVC001")}


def test_a_misspelt_marker_is_kvc101_in_flake8_too(tmp_path: Path) -> None:
    (tmp_path / "runner.py").write_text(
        "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT\n\n\n"
        "def idle_step(scheduler_output):  # kvlint: connector-path[ecc]\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT\n"
    )
    found = rows(flake8("--isolated", "--select", "KVC", "runner.py", cwd=tmp_path))
    assert without_path(found) == {(4, 35, "KVC101")}  # at the `#`, 1-based
    assert found == kvlint_rows("runner.py", cwd=tmp_path)


def test_per_file_ignores_from_flake8_config(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "ignored.py").write_text(BAD)
    (tmp_path / "setup.cfg").write_text("[flake8]\nselect = KVC\nper-file-ignores =\n    ignored.py: KVC001\n")
    completed = flake8("bad.py", "ignored.py", cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr
    assert rows(completed) == {("bad.py", *row) for row in BAD_ROWS} | {("ignored.py", 15, 9, "KVC002")}


MY_SENTINEL = '''\
from vllm.distributed.kv_transfer import has_kv_transfer_group
from myplatform.outputs import MY_EMPTY


def execute_model(scheduler_output):
    if has_kv_transfer_group():
        return MY_EMPTY
    return None
'''


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("setup.cfg", "[flake8]\nselect = KVC\n\n[kvlint]\nempty-sentinels = MY_EMPTY\n"),
        ("pyproject.toml", '[tool.kvlint]\nempty-sentinels = ["MY_EMPTY"]\n'),
    ],
)
def test_kvlint_configuration_is_read(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / "worker.py").write_text(MY_SENTINEL)
    select = [] if name == "setup.cfg" else ["--select", "KVC"]
    assert rows(flake8(*select, "worker.py", cwd=tmp_path)) == set(), "MY_EMPTY is no sentinel by default"
    (tmp_path / name).write_text(text)
    completed = flake8(*select, "worker.py", cwd=tmp_path)
    assert rows(completed) == {("worker.py", 7, 9, "KVC002")}
    assert rows(completed) == kvlint_rows("worker.py", cwd=tmp_path)


def test_a_configuration_error_is_one_row_and_a_warning_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "pyproject.toml").write_text("[tool.kvlint]\nempty-sentinel = ['MY_EMPTY']\n")
    completed = flake8("--select", "KVC", "bad.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert rows(completed) == {("bad.py", 1, 1, "KVC902")}
    assert "configuration error" in completed.stdout and "empty-sentinel" in completed.stdout
    assert "unknown key 'empty-sentinel'" in completed.stderr and "Traceback" not in completed.stderr


SYNTAX_ERROR = "def execute_model(:\n    return EMPTY_MODEL_RUNNER_OUTPUT.kv_connector_output\n"


def test_a_syntax_error_is_flake8s_e999_not_kvc(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(SYNTAX_ERROR)
    completed = flake8("--isolated", "--select", "KVC,E999,E902", "broken.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert [row[3] for row in rows(completed)] == ["E999"], completed.stdout
    assert "Traceback" not in completed.stderr
    # --select KVC alone passes the broken file silently: why the README says KVC,E999,E902.
    silent = flake8("--isolated", "--select", "KVC", "broken.py", cwd=tmp_path)
    assert (silent.returncode, silent.stdout) == (0, "")
    assert {row[3] for row in kvlint_rows("broken.py", cwd=tmp_path)} == {"KVC900"}


def test_a_coding_cookie_keeps_columns(tmp_path: Path) -> None:
    """flake8 decodes latin-1; the plugin must not shift columns after non-ASCII text."""
    source = (
        '# -*- coding: latin-1 -*-\ndef merge(out):\n    kvo = out.kv_connector_output\n'
        '    s = "\xe9\xe9"; kvo.finished_sending\n'
    )
    (tmp_path / "latin.py").write_bytes(source.encode("latin-1"))
    found = rows(flake8("--isolated", "--select", "KVC", "latin.py", cwd=tmp_path))
    assert found == {("latin.py", 4, 15, "KVC001")} == kvlint_rows("latin.py", cwd=tmp_path)


def _run_checker(source: str, filename: str = "x.py") -> list[tuple[int, int, str]]:
    checker = KVLintChecker(ast.parse(source), source.splitlines(keepends=True), filename)
    return [(line, column, text) for line, column, text, kind in checker.run()]


@pytest.fixture
def fresh_plugin_state():
    KVLintChecker.parse_options(argparse.Namespace(filenames=[]))
    yield
    KVLintChecker.parse_options(argparse.Namespace(filenames=[]))


def test_an_internal_error_is_one_kvc902_row_and_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fresh_plugin_state: None
) -> None:
    import kvlint.engine

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(kvlint.engine, "analyse_prepared", broken)
    with caplog.at_level(logging.WARNING, logger="kvlint"):
        found = _run_checker(BAD)
    assert found == [(1, 0, "KVC902 internal error analysing this file: RuntimeError: boom")]
    assert "internal error on x.py: RuntimeError: boom" in caplog.text


def test_the_index_is_built_once_per_process(monkeypatch: pytest.MonkeyPatch, fresh_plugin_state: None) -> None:
    builds: list[object] = []
    real = flake8_plugin._build_tree_view

    def counting(*args):  # type: ignore[no-untyped-def]
        builds.append(args)
        return real(*args)

    monkeypatch.setattr(flake8_plugin, "_build_tree_view", counting)
    monkeypatch.chdir(ROOT)
    KVLintChecker.parse_options(argparse.Namespace(filenames=["fixtures/vllm_like"]))
    found = set()
    for path in sorted(Path("fixtures/vllm_like").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        for line, column, text in _run_checker(source, str(path)):
            found.add((path.as_posix(), line, column + 1, text.split()[0]))
    assert len(builds) == 1
    expected = kvlint_rows("fixtures/vllm_like")
    assert expected <= found  # and the rest sit on `# noqa` lines: outside flake8, nothing applies them
    assert all("# noqa" in Path(path).read_text().splitlines()[line - 1] for path, line, _, _ in found - expected)


def test_the_engine_is_imported_only_for_relevant_files_and_libcst_never() -> None:
    """flake8 shows no fixes: even a file with a finding costs no libcst import."""
    script = textwrap.dedent("""
        import ast, sys
        from kvlint.flake8_plugin import KVLintChecker
        def check(source):
            return list(KVLintChecker(ast.parse(source), source.splitlines(True), "x.py").run())
        assert check("import os\\n\\ndef f(x):\\n    return x.other_output.items\\n") == []
        assert "kvlint.engine" not in sys.modules
        assert check("def f(out):\\n    return out.kv_connector_output.finished_sending\\n")
        assert "kvlint.engine" in sys.modules and "libcst" not in sys.modules
    """)
    completed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


@pytest.mark.vllm
def test_vllm_0_10_1_gives_exactly_spec_section_8() -> None:
    """The whole published tree, two jobs (about 20 s on 2 cores)."""
    tree = vllm_tree("0.10.1")
    completed = flake8("--isolated", "--select", "KVC", "-j", "2", "vllm", cwd=tree)
    assert completed.returncode == 1, completed.stderr
    mixin = "vllm/v1/worker/kv_connector_model_runner_mixin.py"
    worker = "vllm/v1/worker/gpu_worker.py"
    expected = {
        (mixin, _line_of(tree / mixin, "return EMPTY_MODEL_RUNNER_OUTPUT", "def kv_connector_no_forward"), "KVC002"),
        (worker, _line_of(tree / worker, "return EMPTY_MODEL_RUNNER_OUTPUT", "is_last_rank"), "KVC002"),
    }
    assert {(path, line, code) for path, line, _, code in rows(completed)} == expected
    assert len(completed.stdout.splitlines()) == 2


def _line_of(path: Path, text: str, after: str) -> int:
    """The 1-based line of the first `text` after the first line containing `after`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(number for number, line in enumerate(lines) if after in line)
    return next(number for number in range(start, len(lines)) if text in lines[number]) + 1


# --- one configuration, every face: [tool.kvlint] select/ignore/per-file-ignores/exclude, flake8's on top ---

@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ('ignore = ["KVC002"]', {("bad.py", 8, 16, "KVC001"), ("other.py", 8, 16, "KVC001")}),
        ('select = ["KVC002"]', {("bad.py", 15, 9, "KVC002"), ("other.py", 15, 9, "KVC002")}),
        ('select = ["ALL"]\nignore = ["KVC0"]', set()),
        ('per-file-ignores = {"other.py" = ["KVC0"]}', {("bad.py", 8, 16, "KVC001"), ("bad.py", 15, 9, "KVC002")}),
        ('exclude = ["other.py"]', {("bad.py", 8, 16, "KVC001"), ("bad.py", 15, 9, "KVC002")}),
    ],
    ids=["ignore", "select", "select-all-ignore-prefix", "per-file-ignores", "exclude"],
)
def test_kvlint_select_ignore_per_file_ignores_and_exclude_apply_to_flake8(
    tmp_path: Path, settings: str, expected: set[tuple[str, int, int, str]]
) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "other.py").write_text(BAD)
    (tmp_path / "pyproject.toml").write_text(f"[tool.kvlint]\n{settings}\n")
    completed = flake8("--select", "KVC", "bad.py", "other.py", cwd=tmp_path)
    assert rows(completed) == expected
    assert rows(completed) == kvlint_rows("bad.py", "other.py", cwd=tmp_path)  # every face agrees


def test_flake8s_own_options_apply_on_top_of_kvlints(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "pyproject.toml").write_text('[tool.kvlint]\nignore = ["KVC002"]\n')
    # flake8 can drop more ...
    assert rows(flake8("--select", "KVC", "--extend-ignore", "KVC001", "bad.py", cwd=tmp_path)) == set()
    assert rows(flake8("--select", "KVC", "--per-file-ignores", "bad.py:KVC001", "bad.py", cwd=tmp_path)) == set()
    # ... but selecting a code kvlint's configuration ignores does not bring it back
    assert without_path(rows(flake8("--select", "KVC002", "bad.py", cwd=tmp_path))) == set()
    # flake8 applies `# noqa`, so --disable-noqa still shows the silenced line
    assert without_path(rows(flake8("--select", "KVC", "--disable-noqa", "bad.py", cwd=tmp_path))) == {
        (8, 16, "KVC001"), (9, 16, "KVC001")}


@pytest.mark.parametrize("relative", ["kv_mixin.py", "pp_stashed/runner.py"])
def test_one_file_gets_what_the_project_around_it_decides(relative: str) -> None:
    """What the rest of the project decides for a file checked alone (a producer every call of which is on a
    connector path; an attribute of `self` nothing reads back) reaches flake8's rows as `kvlint check FILE`'s."""
    root = FIXTURES / ("realistic_c" if relative == "kv_mixin.py" else "summaries")
    completed = flake8("--isolated", "--select", "KVC", relative, cwd=root)
    expected = kvlint_rows(relative, cwd=root)
    assert rows(completed) == expected
    codes = {code for _, _, _, code in expected}
    assert codes & {"KVC002", "KVC006"}, expected

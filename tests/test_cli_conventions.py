"""ruff's conventions for `kvlint check`: stdin, --output-format, the summary line, --statistics,
--show-source, --color, the no-files warning, --exclude / --extend-exclude, --select ALL and
--report-unused-noqa (KVC100)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, finding_lines, run_kvlint

# ruff's line before the summary where the findings' only fixes are unsafe (issue 28)
UNSAFE_HINT = "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
BAD = """\
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)
"""
KVC001_LINE = (
    "bad.py:4:15: KVC001 `kvo` may be None (from `out.kv_connector_output`); "
    "check it before the attribute access `.finished_sending`"
)
GOOD = "def merge(outputs):\n    return [out.kv_connector_output for out in outputs]\n"
NO_COLOR_ENV = {"NO_COLOR": "", "FORCE_COLOR": ""}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _stdin(*args: str, source: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, **NO_COLOR_ENV, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "kvlint", "check", *args], input=source, cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=120)


# --- stdin ---

def test_dash_reads_stdin_named_by_stdin_filename(tmp_path: Path) -> None:
    completed = _stdin("-", "--stdin-filename", "pkg/bad.py", source=BAD, cwd=tmp_path)
    assert completed.returncode == 1, completed.stderr
    assert completed.stdout == f"pkg/{KVC001_LINE}\n{UNSAFE_HINT}Found 1 finding in 1 file.\n"
    assert not (tmp_path / "pkg").exists()  # the name need not exist, and nothing is written


def test_stdin_without_a_name_is_shown_as_dash(tmp_path: Path) -> None:
    completed = _stdin("-", "--format", "json", source=BAD, cwd=tmp_path)
    assert [record["path"] for record in json.loads(completed.stdout)] == ["-"]
    assert _stdin("-", source=GOOD, cwd=tmp_path).stdout == "All checks passed.\n"


def test_stdin_filename_picks_the_configuration_and_per_file_ignores(tmp_path: Path) -> None:
    _tree(tmp_path, {"pyproject.toml": '[tool.kvlint]\nper-file-ignores = {"legacy/*" = ["KVC001"]}\n'})
    assert _stdin("-", "--stdin-filename", "legacy/bad.py", source=BAD, cwd=tmp_path).returncode == 0
    assert _stdin("-", "--stdin-filename", "new/bad.py", source=BAD, cwd=tmp_path).returncode == 1


def test_stdin_usage_errors(tmp_path: Path) -> None:
    _tree(tmp_path, {"good.py": GOOD})
    mixed = _stdin("-", "good.py", source=BAD, cwd=tmp_path)
    assert mixed.returncode == 2 and "cannot be combined" in mixed.stderr
    orphan = run_kvlint("check", "--stdin-filename", "x.py", "good.py", cwd=tmp_path)
    assert orphan.returncode == 2 and "--stdin-filename needs `-`" in orphan.stderr


def test_stdin_that_cannot_be_parsed_is_kvc900(tmp_path: Path) -> None:
    completed = _stdin("-", "--stdin-filename", "x.py", source="def f(:\n    return x.kv_connector_output\n",
                       cwd=tmp_path)
    assert completed.returncode == 1
    assert finding_lines(completed.stdout)[0].startswith("x.py:1:7: KVC900 ")


# --- formats and the summary line ---

def test_output_format_is_ruffs_spelling_of_format(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    for output_format in ("json", "github", "sarif", "text"):
        spelled = run_kvlint("check", "--output-format", output_format, cwd=tmp_path, env=NO_COLOR_ENV)
        assert spelled.stdout == run_kvlint("check", "--format", output_format, cwd=tmp_path,
                                            env=NO_COLOR_ENV).stdout
    audit = run_kvlint("audit", "--output-format", "json", cwd=tmp_path)
    assert json.loads(audit.stdout)["summary"]["findings"]["total"] == 1


def test_summary_line_counts_findings_and_files(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD, "a/bad.py": BAD + BAD.replace("merge", "merge2"), "good.py": GOOD})
    completed = run_kvlint("check", cwd=tmp_path, env=NO_COLOR_ENV)
    assert completed.stdout.splitlines()[-1] == "Found 3 findings in 2 files."
    assert len(finding_lines(completed.stdout)) == 3
    assert completed.stderr == ""


def test_summary_line_is_text_only_and_quiet_drops_it(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    assert "Found" not in run_kvlint("check", "--format", "github", cwd=tmp_path).stdout
    json.loads(run_kvlint("check", "--format", "json", cwd=tmp_path).stdout)  # nothing after the array
    assert run_kvlint("check", "--quiet", cwd=tmp_path, env=NO_COLOR_ENV).stdout == KVC001_LINE + "\n"
    report = tmp_path / "report.txt"
    written = run_kvlint("check", "--output", str(report), cwd=tmp_path)
    assert written.stdout == "" and report.read_text() == f"{KVC001_LINE}\n{UNSAFE_HINT}Found 1 finding in 1 file.\n"


def test_statistics(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD, "b.py": BAD, "c.py": "EMPTY_MODEL_RUNNER_OUTPUT.kv_connector_output = 1\n"})
    text = run_kvlint("check", "--statistics", cwd=tmp_path, env=NO_COLOR_ENV)
    assert text.returncode == 1
    assert text.stdout == ("2\tKVC001\tunguarded-dereference\n1\tKVC004\tshared-sentinel-mutation\n"
                           "Found 3 findings in 3 files.\n")
    as_json = run_kvlint("check", "--statistics", "--format", "json", cwd=tmp_path)
    assert json.loads(as_json.stdout) == [{"code": "KVC001", "name": "unguarded-dereference", "count": 2},
                                          {"code": "KVC004", "name": "shared-sentinel-mutation", "count": 1}]
    other = run_kvlint("check", "--statistics", "--format", "sarif", cwd=tmp_path)
    assert other.returncode == 2 and "--statistics" in other.stderr


def test_show_source(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    completed = run_kvlint("check", "--show-source", cwd=tmp_path, env=NO_COLOR_ENV)
    assert completed.stdout == (
        f"{KVC001_LINE}\n"
        "  |\n"
        "4 |         print(kvo.finished_sending)\n"
        "  |               ^^^^^^^^^^^^^^^^^^^^\n"
        "  = fix (unsafe): Guard `kvo` with `if kvo is None: continue`\n"
        f"{UNSAFE_HINT}Found 1 finding in 1 file.\n"
    )


# --- colour ---

@pytest.mark.parametrize(
    ("arguments", "environment", "coloured"),
    [
        ((), {}, False),  # auto, not a terminal
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (("--color", "always"), {"NO_COLOR": "1"}, True),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        (("--color", "always", "--format", "json"), {}, False),  # colour is for text only
    ],
)
def test_color(tmp_path: Path, arguments: tuple[str, ...], environment: dict[str, str], coloured: bool) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    completed = run_kvlint("check", *arguments, cwd=tmp_path, env={**NO_COLOR_ENV, **environment})
    assert ("\x1b[" in completed.stdout) is coloured
    if coloured:
        assert "\x1b[1;31mKVC001\x1b[0m" in completed.stdout


def test_color_applies_to_the_audit_text(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    assert "\x1b[" in run_kvlint("audit", "--color", "always", cwd=tmp_path, env=NO_COLOR_ENV).stdout
    assert "\x1b[" not in run_kvlint("audit", "--color", "never", cwd=tmp_path,
                                     env={"FORCE_COLOR": "1", "NO_COLOR": ""}).stdout


# --- which files ---

def test_warning_when_no_python_files_were_found(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no code here\n")
    completed = run_kvlint("check", "empty", cwd=tmp_path)
    assert completed.returncode == 0
    assert completed.stderr == "kvlint: warning: no Python files found under empty\n"
    assert completed.stdout == "All checks passed.\n"
    assert run_kvlint("check", "--quiet", "empty", cwd=tmp_path).stderr == ""
    assert "no Python files" in run_kvlint("audit", "empty", cwd=tmp_path).stderr


def test_exclude_and_extend_exclude_on_the_command_line(tmp_path: Path) -> None:
    _tree(tmp_path, {"pyproject.toml": '[tool.kvlint]\nexclude = ["legacy"]\n',
                     "legacy/bad.py": BAD, "gen/bad.py": BAD, "src/bad.py": BAD})

    def paths(*arguments: str) -> list[str]:
        completed = run_kvlint("check", *arguments, cwd=tmp_path, env=NO_COLOR_ENV)
        return [line.split(":")[0] for line in finding_lines(completed.stdout)]

    assert paths() == ["gen/bad.py", "src/bad.py"]
    assert paths("--extend-exclude", "gen") == ["src/bad.py"]
    assert paths("--extend-exclude", "gen/*.py,nothing") == ["src/bad.py"]
    assert paths("--exclude", "gen") == ["legacy/bad.py", "src/bad.py"]  # replaces the configured list
    assert paths("--exclude", "gen", "--extend-exclude", "src") == ["legacy/bad.py"]


def test_select_all(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    assert run_kvlint("check", "--select", "ALL", cwd=tmp_path).returncode == 1
    assert run_kvlint("check", "--select", "ALL", "--ignore", "KVC001", cwd=tmp_path).returncode == 0
    _tree(tmp_path, {"pyproject.toml": '[tool.kvlint]\nselect = ["ALL"]\nignore = ["KVC0"]\n'})
    assert run_kvlint("check", cwd=tmp_path).returncode == 0
    assert run_kvlint("check", "--ignore", "KVC9", cwd=tmp_path).returncode == 1


# --- unused noqa (KVC100) ---

NOQA = """\
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)  # noqa: KVC001
        print(kvo.finished_recving)  # noqa: KVC001, KVC005, E501
        if kvo is not None:
            print(kvo.finished_sending)  # noqa: KVC001
            print(kvo.finished_sending)  # noqa
            print(kvo.finished_sending)  # noqa: E501
            print(kvo.finished_sending)  # noqa: KVC001, KVC100
"""


def test_unused_noqa_is_reported_only_when_asked(tmp_path: Path) -> None:
    _tree(tmp_path, {"noqa.py": NOQA})
    assert run_kvlint("check", cwd=tmp_path, env=NO_COLOR_ENV).stdout == "All checks passed.\n"
    completed = run_kvlint("check", "--report-unused-noqa", cwd=tmp_path, env=NO_COLOR_ENV)
    assert completed.returncode == 1
    assert finding_lines(completed.stdout) == [
        "noqa.py:5:38: KVC100 unused `# noqa` code KVC005: it silences no finding on this line; remove it",
        "noqa.py:7:42: KVC100 unused `# noqa` code KVC001: it silences no finding on this line; remove it",
    ]


def test_unused_noqa_follows_select_and_ignore(tmp_path: Path) -> None:
    _tree(tmp_path, {"noqa.py": NOQA})
    ignored = run_kvlint("check", "--report-unused-noqa", "--ignore", "KVC100", cwd=tmp_path)
    assert ignored.returncode == 0
    # KVC001 not selected: every `# noqa: KVC001` is unused now; --select need not name KVC100
    narrowed = run_kvlint("check", "--report-unused-noqa", "--select", "KVC005", cwd=tmp_path, env=NO_COLOR_ENV)
    assert [line.split(":")[1] for line in finding_lines(narrowed.stdout)] == ["4", "5", "7"]


def test_unused_noqa_on_stdin(tmp_path: Path) -> None:
    completed = _stdin("-", "--stdin-filename", "noqa.py", "--report-unused-noqa", source=NOQA, cwd=tmp_path)
    tree = run_kvlint("check", "--report-unused-noqa", cwd=_tree(tmp_path, {"noqa.py": NOQA}), env=NO_COLOR_ENV)
    assert completed.stdout == tree.stdout

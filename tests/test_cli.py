"""`kvlint check` as users run it: output shapes, exit codes, configuration errors, broken files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import finding_lines, run_kvlint

BAD = """\
from vllm.v1.outputs import KVConnectorOutput


def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)
"""

GOOD = """\
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        if kvo is None:
            continue
        print(kvo.finished_sending)
"""


def _tree(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return tmp_path


def test_text_output_and_exit_status(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD, "good.py": GOOD})
    completed = run_kvlint("check", ".", cwd=tmp_path)
    assert completed.returncode == 1
    assert completed.stdout == (
        "bad.py:7:15: KVC001 `kvo` may be None (from `out.kv_connector_output`); "
        "check it before the attribute access `.finished_sending`\n"
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"  # ruff's hint
        "Found 1 finding in 1 file.\n"
    )
    assert completed.stderr == ""


def test_clean_tree_exits_zero_and_says_so(tmp_path: Path) -> None:
    _tree(tmp_path, {"good.py": GOOD})
    completed = run_kvlint("check", cwd=tmp_path)
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "All checks passed.\n", "")
    quiet = run_kvlint("check", "--quiet", cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")


def test_exit_zero(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    completed = run_kvlint("check", "--exit-zero", "bad.py", cwd=tmp_path)
    assert completed.returncode == 0
    assert "KVC001" in completed.stdout


def test_json_output_contract(tmp_path: Path) -> None:
    _tree(tmp_path, {"pkg/bad.py": BAD})
    completed = run_kvlint("check", "--format", "json", "./pkg", cwd=tmp_path)
    assert completed.returncode == 1
    records = json.loads(completed.stdout)
    assert records == [
        {
            "path": "pkg/bad.py",
            "line": 7,
            "column": 15,
            "end_line": 7,
            "end_column": 35,
            "code": "KVC001",
            "function": "merge",
            "message": "`kvo` may be None (from `out.kv_connector_output`); "
            "check it before the attribute access `.finished_sending`",
            "invariant": "kv",
            "fix": {
                "applicability": "unsafe",
                "message": "Guard `kvo` with `if kvo is None: continue`",
                "edits": [{
                    "content": "        if kvo is None:\n            continue\n",
                    "location": {"row": 7, "column": 1},
                    "end_location": {"row": 7, "column": 1},
                }],
            },
            "fix_unavailable": None,
            "resolved": [],  # `out`'s class is not known: the field's name decided, no declaration
        }
    ]


def test_json_names_the_declarations_that_decided(tmp_path: Path) -> None:
    """Where the binder resolved what made a value maybe None, the JSON says which declaration it was."""
    _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/outputs.py": (
            "from dataclasses import dataclass\n\n\n@dataclass\nclass KVConnectorOutput:\n"
            "    finished_sending: set[str] | None = None\n\n\n@dataclass\nclass ModelRunnerOutput:\n"
            "    kv_connector_output: KVConnectorOutput | None = None\n"
        ),
        "pkg/merge.py": (
            "from pkg.outputs import ModelRunnerOutput\n\n\ndef sending(out: ModelRunnerOutput) -> int:\n"
            "    return len(out.kv_connector_output.finished_sending or ())\n"
        ),
    })
    completed = run_kvlint("check", "--format", "json", "pkg", cwd=tmp_path)
    (record,) = json.loads(completed.stdout)
    assert (record["code"], record["resolved"]) == ("KVC001", [
        {"role": "declaration", "name": "pkg.outputs.ModelRunnerOutput.kv_connector_output"},
        {"role": "payload class", "name": "pkg.outputs.KVConnectorOutput"},
    ])
    (tmp_path / "pkg" / "idle.py").write_text(
        "from vllm.distributed import kv_transfer as kvt\n"
        "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT\n\n\n"
        "def idle_step():\n    if kvt.has_kv_transfer_group():\n"
        "        return EMPTY_MODEL_RUNNER_OUTPUT\n    return None\n"
    )
    completed = run_kvlint("check", "--format", "json", "pkg/idle.py", cwd=tmp_path)
    (record,) = json.loads(completed.stdout)
    assert (record["code"], record["resolved"]) == ("KVC002", [
        {"role": "sentinel", "name": "vllm.v1.outputs.EMPTY_MODEL_RUNNER_OUTPUT"},
        {"role": "connector guard", "name": "vllm.distributed.kv_transfer.has_kv_transfer_group"},
    ])


def test_github_annotations(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    completed = run_kvlint("check", "--format", "github", "bad.py", cwd=tmp_path)
    assert completed.stdout.startswith(
        "::error file=bad.py,line=7,col=15,endLine=7,endColumn=35,title=kvlint KVC001::KVC001 "
    )


def test_paths_outside_cwd_are_absolute(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    completed = run_kvlint("check", str(tmp_path / "bad.py"), cwd=elsewhere)
    assert completed.stdout.startswith(f"{(tmp_path / 'bad.py').as_posix()}:7:15: KVC001")


def test_output_is_sorted_and_identical_across_runs_and_jobs(tmp_path: Path) -> None:
    files = {f"m{i}.py": BAD for i in range(6)}
    files["a/z.py"] = BAD
    _tree(tmp_path, files)
    runs = [
        run_kvlint("check", "--jobs", jobs, cwd=tmp_path, env={"PYTHONHASHSEED": seed}).stdout
        for jobs, seed in (("1", "1"), ("2", "2"), ("2", "3"))
    ]
    assert runs[0] == runs[1] == runs[2]
    paths = [line.split(":")[0] for line in finding_lines(runs[0])]
    assert paths == sorted(paths) and paths[0] == "a/z.py"


def test_select_and_ignore(tmp_path: Path) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    assert run_kvlint("check", "--ignore", "KVC001", cwd=tmp_path).returncode == 0
    assert run_kvlint("check", "--select", "KVC002", cwd=tmp_path).returncode == 0
    assert run_kvlint("check", "--select", "KVC0", cwd=tmp_path).returncode == 1


def test_noqa_silences_the_line(tmp_path: Path) -> None:
    _tree(
        tmp_path, {"bad.py": BAD.replace("print(kvo.finished_sending)", "print(kvo.finished_sending)  # noqa: KVC001")}
    )
    assert run_kvlint("check", cwd=tmp_path).returncode == 0


def test_pyproject_configuration_is_found_by_walking_up(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pyproject.toml": '[tool.kvlint]\nper-file-ignores = {"pkg/*" = ["KVC001"]}\n',
            "pkg/sub/bad.py": BAD,
            "other/bad.py": BAD,
        },
    )
    completed = run_kvlint("check", "pkg", "other", cwd=tmp_path)
    assert [line.split(":")[0] for line in finding_lines(completed.stdout)] == ["other/bad.py"]


def test_custom_names_from_configuration(tmp_path: Path) -> None:
    source = "def step(out):\n    with open_transfer(out) as kvo:\n        pass\n    return MY_EMPTY\n"
    _tree(
        tmp_path,
        {
            "setup.cfg": "[kvlint]\nempty-sentinels = MY_EMPTY\nconnector-contexts = open_transfer\n",
            "step.py": source,
        },
    )
    completed = run_kvlint("check", cwd=tmp_path)
    assert completed.stdout.startswith("step.py:4:5: KVC002 [*] `return MY_EMPTY` on a connector path")


def test_unknown_configuration_key_exits_2_naming_key_and_file(tmp_path: Path) -> None:
    _tree(tmp_path, {"pyproject.toml": '[tool.kvlint]\noptional_fields = ["x"]\n', "good.py": GOOD})
    completed = run_kvlint("check", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert "optional_fields" in completed.stderr and "pyproject.toml" in completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1


def test_wrong_type_exits_2(tmp_path: Path) -> None:
    _tree(tmp_path, {"pyproject.toml": '[tool.kvlint]\nselect = "KVC001"\n', "good.py": GOOD})
    completed = run_kvlint("check", cwd=tmp_path)
    assert completed.returncode == 2
    assert "select" in completed.stderr and "pyproject.toml" in completed.stderr


def test_a_configured_code_no_rule_has_exits_2_instead_of_passing(tmp_path: Path) -> None:
    """`select = ["KVC010"]` (a typo of KVC001) once selected nothing and passed over a real KVC001."""
    _tree(tmp_path, {"pyproject.toml": '[tool.kvlint]\nselect = ["KVC010"]\n', "bad.py": BAD})
    completed = run_kvlint("check", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr.startswith(
        "kvlint: pyproject.toml: unknown code 'KVC010' in 'select' in [tool.kvlint]: no kvlint rule has this code ("
    )
    assert len(completed.stderr.splitlines()) == 1


@pytest.mark.parametrize("command", ["check", "audit", "config"])
@pytest.mark.parametrize(("option", "value"), [("--select", "KVC010"), ("--ignore", "KVC001,KVC2")])
def test_a_command_line_code_no_rule_has_exits_2(tmp_path: Path, command: str, option: str, value: str) -> None:
    _tree(tmp_path, {"bad.py": BAD})
    completed = run_kvlint(command, option, value, cwd=tmp_path)
    unknown = value.rpartition(",")[2]
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr.splitlines()[-1].startswith(
        f"kvlint {command}: error: argument {option}: unknown code {unknown!r}: no kvlint rule has "
    )
    assert "Traceback" not in completed.stderr


def test_a_noqa_code_no_rule_has_is_left_as_flake8_leaves_it(tmp_path: Path) -> None:
    """`# noqa: KVC010` is flake8's convention, not configuration: no error, it silences nothing, and only
    `--report-unused-noqa` says it is unused."""
    source = BAD.replace("print(kvo.finished_sending)", "print(kvo.finished_sending)  # noqa: KVC010")
    _tree(tmp_path, {"bad.py": source})
    completed = run_kvlint("check", cwd=tmp_path)
    assert completed.returncode == 1
    assert [line.split()[1] for line in finding_lines(completed.stdout)] == ["KVC001"]
    completed = run_kvlint("check", "--report-unused-noqa", cwd=tmp_path)
    assert [line.split()[1] for line in finding_lines(completed.stdout)] == ["KVC001", "KVC100"]
    assert "unused `# noqa` code KVC010" in completed.stdout


def test_missing_path_exits_2(tmp_path: Path) -> None:
    completed = run_kvlint("check", "nope.py", cwd=tmp_path)
    assert completed.returncode == 2
    assert completed.stderr == "kvlint: nope.py: no such file or directory\n"


def test_broken_files_are_findings_and_the_run_goes_on(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "a_syntax.py": "from vllm.v1.outputs import KVConnectorOutput\ndef f(:\n    pass\n",
            "b_encoding.py": b"# kv_connector_output\nx = '\xff\xfe'\n",
            "c_nul.py": b"kv_connector_output = 1\x00\n",
            "d_bad.py": BAD,
        },
    )
    completed = run_kvlint("check", cwd=tmp_path)
    assert completed.returncode == 1
    lines = finding_lines(completed.stdout)
    assert lines[0] == "a_syntax.py:2:7: KVC900 cannot parse: invalid syntax"
    assert lines[1].startswith("b_encoding.py:2:6: KVC900 cannot decode as utf-8: invalid start byte")
    assert lines[2] == "c_nul.py:1:24: KVC900 cannot parse: source contains a NUL byte"
    assert lines[3].startswith("d_bad.py:7:15: KVC001")
    assert "Traceback" not in completed.stderr


def test_fifo_is_reported_not_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.py")
    completed = run_kvlint("check", "pipe.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert finding_lines(completed.stdout) == ["pipe.py:1:1: KVC901 cannot read: not a regular file"]


def test_python_dash_m_and_version() -> None:
    completed = run_kvlint("--version")
    assert completed.returncode == 0 and completed.stdout.startswith("kvlint ")


def test_usage_error_exits_2() -> None:
    completed = run_kvlint("check", "--format", "xml")
    assert completed.returncode == 2
    assert "invalid choice" in completed.stderr

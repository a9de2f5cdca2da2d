"""A run builds the fixes its report shows (`kvlint.cli.check._fixes_shown`), and every report is the one that
building all of them gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kvlint.cli import check as check_cli
from kvlint.cli import main
from kvlint.config import Config
from kvlint.rules import RULES
from kvlint.running.runner import run

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ROOT = FIXTURES.parent

UNSAFE_ONLY = """\
def step(out):
    kvo = out.kv_connector_output
    return kvo.finished_sending
"""


def test_each_rule_s_fixes_are_what_it_declares() -> None:
    findings = run([FIXTURES], Config(), jobs=1).findings
    seen = {(f.code, f.fix.applicability) for f in findings if f.fix is not None}
    assert {code for code, _ in seen} >= {"KVC001", "KVC002", "KVC003", "KVC004", "KVC005", "KVC006"}
    for code, applicability in seen:
        assert applicability in RULES[code].fix_applicabilities, (code, applicability)
    narrowed = {code for code, rule in RULES.items() if rule.fix is not None and len(rule.fix_applicabilities) == 1}
    assert narrowed == {"KVC001", "KVC006"} and all(any(c == code for c, _ in seen) for code in narrowed)


ARGUMENTS = [
    ["--quiet"], ["--quiet", "--unsafe-fixes"], ["--quiet", "--show-source"], [], ["--unsafe-fixes"],
    ["--statistics"], ["--statistics", "--quiet"], ["--format", "github"], ["--format", "json"],
    ["--format", "sarif"], ["--format", "json", "--quiet"], ["--diff"], ["--diff", "--unsafe-fixes"],
]


@pytest.mark.parametrize("arguments", ARGUMENTS, ids=" ".join)
def test_the_report_is_the_one_all_fixes_give(
    arguments: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(FIXTURES / "fixes")  # findings of every rule, with safe and unsafe fixes and none
    command = ["check", ".", "--jobs", "1", *arguments]
    status = _exit_status(command)
    shown = capsys.readouterr()
    monkeypatch.setattr(check_cli, "_fixes_shown", lambda args: True)
    assert (_exit_status(command), capsys.readouterr()) == (status, shown)


def _exit_status(command: list[str]) -> int:
    return main(command)


def test_what_each_report_asks_for() -> None:
    parser = check_cli_parser()
    asked = {" ".join(arguments): check_cli._fixes_shown(parser.parse_args(["check", *arguments]))
             for arguments in ARGUMENTS}
    assert asked["--quiet"] == frozenset({"KVC002", "KVC003", "KVC004", "KVC005"})  # KVC001, KVC006: unsafe only
    assert asked["--statistics"] is asked["--format github"] is False
    assert all(asked[key] is True for key in ("", "--unsafe-fixes", "--quiet --unsafe-fixes", "--quiet --show-source",
                                              "--format json", "--format sarif", "--diff"))


def check_cli_parser():  # type: ignore[no-untyped-def]
    from kvlint.cli import build_parser

    return build_parser("check")


def test_a_quiet_run_of_unsafe_only_findings_never_imports_libcst(tmp_path: Path) -> None:
    for number in range(6):  # more than one worker's worth
        (tmp_path / f"step_{number}.py").write_text(UNSAFE_ONLY)
    probe = (
        "import sys, kvlint.cli\n"
        "status = kvlint.cli.main(['check', '--quiet', '--jobs', '1', '.'])\n"
        "print('libcst' in sys.modules, status, file=sys.stderr)\n"
    )
    completed = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True,
                               env={"PYTHONPATH": str(ROOT), "PATH": ""}, check=False)
    assert completed.stderr.strip() == "False 1"
    assert completed.stdout.count("KVC001") == 6 and "[*]" not in completed.stdout
    loud = subprocess.run([sys.executable, "-c", probe.replace("'--quiet', ", "")], cwd=tmp_path,
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": ""}, check=False)
    assert loud.stderr.strip() == "True 1"  # the summary counts the hidden fixes: they are built
    assert "6 hidden fixes can be enabled" in loud.stdout

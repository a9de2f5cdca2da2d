"""Any file name (issue 15): a name that is not UTF-8, holds terminal escapes, a line break and backticks
is reported in every format, to a strict UTF-8 stdout and to `--output`, without breaking out of it."""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path

import pytest

from kvlint.report.safe_text import json_document, printable
from tests.conftest import FIXTURES, run_kvlint

NAME = b"bad\xff\x1b[31mname\n## injected```.py"  # not UTF-8, an ANSI escape, a line break, a fence
SHOWN = "bad\\xff\\x1b[31mname\\x0a## injected```.py"  # what text formats print
CHECK_FORMATS = ["text", "json", "github", "sarif"]
AUDIT_FORMATS = ["text", "json", "markdown", "sarif", "mermaid", "dot"]
STRICT = {"PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    with open(os.path.join(os.fsencode(tmp_path), NAME), "wb") as stream:
        stream.write((FIXTURES / "nasty" / "canary.py").read_bytes())
    return tmp_path


def _reports(tree: Path, command: str, output_format: str) -> list[str]:
    """The report on stdout and through --output, each checked to be valid UTF-8."""
    on_stdout = run_kvlint(command, "--format", output_format, ".", cwd=tree, env=STRICT)
    written = run_kvlint(command, "--format", output_format, "--output", "report.out", ".", cwd=tree, env=STRICT)
    reports = []
    for completed in (on_stdout, written):
        assert completed.returncode == 1, completed.stderr
        assert "Traceback" not in completed.stderr and "internal error" not in completed.stderr
    reports.append(on_stdout.stdout)
    reports.append((tree / "report.out").read_bytes().decode("utf-8"))  # strict: valid UTF-8 or it raises
    (tree / "report.out").unlink()
    assert reports[0] == reports[1] or output_format == "text" and command == "audit"  # audit text: timing
    return reports


@pytest.mark.parametrize(("command", "output_format"),
                         [("check", f) for f in CHECK_FORMATS] + [("audit", f) for f in AUDIT_FORMATS])
def test_a_name_that_is_not_utf8_in_every_format(tree: Path, command: str, output_format: str) -> None:
    for report in _reports(tree, command, output_format):
        assert "\x1b" not in report  # no terminal escape from a name, in any format
        if output_format in ("json", "sarif"):
            document = json.loads(report)
            if output_format == "json":
                paths = {item["path"] for item in (document if command == "check" else document["findings"])}
                assert [os.fsencode(path) for path in paths] == [NAME]  # the exact bytes, back
            else:
                uris = {result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                        for result in document["runs"][0]["results"]}
                assert uris == {urllib.parse.quote(NAME)}
        else:
            shown = SHOWN.replace("`", "#96;") if output_format == "mermaid" else SHOWN
            assert shown.replace("\\", "\\\\") in report if output_format == "dot" else shown in report
            assert "\n## injected" not in report


def test_a_name_cannot_break_out_of_the_markdown_report(tree: Path) -> None:
    report = _reports(tree, "audit", "markdown")[0]
    lines = report.splitlines()
    assert not any(line.startswith("## injected") for line in lines)
    assert [line for line in lines if line.startswith("## ")] == ["## kvlint audit of `.`"]
    fences = [line for line in lines if line.lstrip().startswith("```")]
    assert fences == ["```mermaid", "```"]  # the graph's fence opens once and closes once
    assert f"| ```` {SHOWN}:3:12 ```` |" in report  # the code span is longer than any backtick run in it


def test_check_text_output_on_a_terminal_shows_no_escape_from_a_name(tree: Path) -> None:
    completed = run_kvlint("check", "--color", "always", ".", cwd=tree, env=STRICT)
    assert completed.returncode == 1
    escapes = [part.split("m", 1)[0] for part in completed.stdout.split("\x1b[")[1:]]
    assert "31" not in escapes  # kvlint's own colours only (bold, dim, 1;31 for the code, 0 to reset)
    assert SHOWN in completed.stdout


def test_printable_and_json_document() -> None:
    name = os.fsdecode(NAME)
    assert printable(name) == SHOWN
    assert printable("tab\there") == "tab\there"
    assert printable("csi\x9b") == "csi\\x9b"
    document = json_document(json.dumps({"path": name}, ensure_ascii=False))
    document.encode("utf-8")  # valid UTF-8
    assert "\\udcff" in document and json.loads(document)["path"] == name

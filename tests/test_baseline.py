"""Baselines survive edits that move lines, catch new bugs, and are written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kvlint.atomic import write_atomic
from kvlint.report.baseline import Baseline, BaselineError, baseline_text, keyed, normalise_snippet
from kvlint.findings import Finding
from tests.conftest import run_kvlint

WORKER = '''\
import copy

from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


class Worker:
    def execute_model(self, scheduler_output):
        with self._get_kv_connector_output(scheduler_output) as kvo:
            pass
        if kvo.is_empty():
            return EMPTY_MODEL_RUNNER_OUTPUT
        out = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
        out.kv_connector_output = kvo
        return out


def merge(outputs):
    done = set()
    for out in outputs:
        kvo = out.kv_connector_output
        done |= kvo.finished_sending or set()
    return done
'''

NEW_BUG = '''

def tally(outputs):
    return [o.kv_connector_output.finished_recving for o in outputs]
'''


def _new(command: str, tree: Path, *args: str) -> list[dict]:
    completed = run_kvlint(command, ".", "--format", "json", *args, cwd=tree)
    assert completed.returncode in (0, 1), completed.stderr
    data = json.loads(completed.stdout)
    return data["findings"] if command == "audit" else data


@pytest.mark.parametrize("command", ("check", "audit"))
def test_baseline_survives_moved_lines_and_catches_one_new_bug(tmp_path: Path, command: str) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    worker = tree / "worker.py"
    worker.write_text(WORKER)
    baseline = tmp_path / "baseline.json"
    before = _new(command, tree)
    assert sorted(f["code"] for f in before) == ["KVC001", "KVC002"]

    written = run_kvlint(command, ".", "--write-baseline", str(baseline), cwd=tree)
    assert written.returncode == 0, written.stderr
    assert "recorded 2 findings" in written.stderr
    assert _new(command, tree, "--baseline", str(baseline)) == []

    # an unrelated edit above both findings moves them down three lines
    worker.write_text(WORKER.replace("import copy\n", "import copy\nimport logging\n\nlogger = logging.getLogger()\n"))
    moved = _new(command, tree)
    assert [f["line"] for f in moved] == [f["line"] + 3 for f in before]
    assert _new(command, tree, "--baseline", str(baseline)) == []
    assert run_kvlint(command, ".", "--baseline", str(baseline), cwd=tree).returncode == 0

    # a new bug is the one finding reported
    worker.write_text(worker.read_text() + NEW_BUG)
    new = _new(command, tree, "--baseline", str(baseline))
    assert [(f["code"], f["function"]) for f in new] == [("KVC001", "tally")]
    assert run_kvlint(command, ".", "--baseline", str(baseline), cwd=tree).returncode == 1


def test_audit_summary_counts_baselined_findings(tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text(WORKER + NEW_BUG)
    baseline = tmp_path / "baseline.json"
    assert run_kvlint("check", ".", "--write-baseline", str(baseline), cwd=tmp_path).returncode == 0
    (tmp_path / "worker.py").write_text(WORKER + NEW_BUG + NEW_BUG.replace("tally", "tally_again"))
    report = json.loads(run_kvlint("audit", ".", "--format", "json", "--baseline", str(baseline), cwd=tmp_path).stdout)
    assert report["summary"]["findings"]["total"] == 1
    assert report["summary"]["findings"]["baselined"] == 3
    kv_uses = [use for use in report["sentinel_uses"] if use["invariant"] == "kv"]
    assert len(kv_uses) == 2, "the inventory is not filtered by the baseline"


def test_duplicates_are_counted(tmp_path: Path) -> None:
    line = "    total += len(out.kv_connector_output.finished_sending)\n"
    source = "def count(out):\n    total = 0\n" + line * 2 + "    return total\n"
    (tmp_path / "count.py").write_text(source)
    baseline = tmp_path / "baseline.json"
    run_kvlint("check", ".", "--write-baseline", str(baseline), cwd=tmp_path)
    recorded = json.loads(baseline.read_text())["findings"]
    assert sorted(entry["context"] for entry in recorded if entry["code"] == "KVC001") == [
        ["total += len(out.kv_connector_output.finished_sending)", "return total"],
        ["total = 0", "total += len(out.kv_connector_output.finished_sending)"],
    ]  # the same line twice, told apart by its neighbours
    (tmp_path / "count.py").write_text(source.replace(line * 2, line * 3))
    new = json.loads(run_kvlint("check", ".", "--format", "json", "--baseline", str(baseline), cwd=tmp_path).stdout)
    assert sorted((f["line"], f["code"]) for f in new) == [(4, "KVC001"), (4, "KVC005")]  # one copy's findings


def test_paths_are_relative_to_the_baseline_file(tmp_path: Path) -> None:
    tree = tmp_path / "repo"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "worker.py").write_text(WORKER)
    baseline = tree / ".kvlint-baseline.json"
    run_kvlint("check", "pkg", "--write-baseline", str(baseline), cwd=tree)
    assert {entry["path"] for entry in json.loads(baseline.read_text())["findings"]} == {"pkg/worker.py"}
    # the same baseline from another directory (display paths differ) and with a file argument
    from_parent = run_kvlint("check", "repo", "--baseline", str(baseline), cwd=tmp_path)
    assert from_parent.returncode == 0, from_parent.stdout
    from_package = run_kvlint("check", "worker.py", "--baseline", str(baseline), cwd=tree / "pkg")
    assert from_package.returncode == 0, from_package.stdout


def test_baseline_file_is_deterministic_and_sorted(tmp_path: Path) -> None:
    (tmp_path / "worker.py").write_text(WORKER + NEW_BUG)
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    run_kvlint("check", ".", "--write-baseline", str(first), "--jobs", "1", cwd=tmp_path)
    run_kvlint("check", ".", "--write-baseline", str(second), "--jobs", "2", cwd=tmp_path)
    assert first.read_bytes() == second.read_bytes()
    data = json.loads(first.read_text())
    assert data["tool"] == "kvlint" and data["version"] == 3
    keys = [(e["path"], e["code"], e["invariant"] or "", e["function"], e["snippet"], e["context"], e["occurrence"])
            for e in data["findings"]]
    assert keys == sorted(keys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "worker.py"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read baseline"),
        ("{not json", "invalid JSON"),
        ('{"tool": "other", "findings": []}', "not a kvlint baseline"),
        ('{"tool": "kvlint", "version": 99, "findings": []}', "version 99 is not supported"),
        ('{"tool": "kvlint", "version": 1, "findings": [{"path": "x"}]}', "finding 1"),
    ],
)
def test_a_bad_baseline_is_a_usage_error(tmp_path: Path, content: str | None, message: str) -> None:
    (tmp_path / "worker.py").write_text(WORKER)
    baseline = tmp_path / "baseline.json"
    if content is not None:
        baseline.write_text(content)
    for command in ("check", "audit"):
        completed = run_kvlint(command, "worker.py", "--baseline", str(baseline), cwd=tmp_path)
        assert completed.returncode == 2
        assert message in completed.stderr and completed.stdout == ""


def test_baseline_and_write_baseline_exclude_each_other(tmp_path: Path) -> None:
    completed = run_kvlint("check", ".", "--baseline", "a", "--write-baseline", "b", cwd=tmp_path)
    assert completed.returncode == 2 and "not allowed" in completed.stderr


def test_key_ignores_whitespace_and_lines() -> None:
    a = Finding("p.py", 10, 4, "KVC001", "m", 10, 9, function="f", source_line="    x =  kvo.a")
    b = Finding("p.py", 30, 8, "KVC001", "m", 30, 13, function="f", source_line="\tx = kvo.a  ")
    assert normalise_snippet(a.source_line) == normalise_snippet(b.source_line) == "x = kvo.a"
    assert keyed([a], Path("."))[0][0] == keyed([b], Path("."))[0][0]


def test_loaded_baseline_matches_its_own_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    findings = [Finding("p.py", line, 0, "KVC002", "m", line, 5, function="f", source_line="return E")
                for line in (3, 9)]
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "b.json"
    path.write_text(baseline_text(findings, tmp_path))
    new, known = Baseline.load(path).new_findings(findings)
    assert (new, known) == ([], 2)
    with pytest.raises(BaselineError):
        Baseline.load(tmp_path / "missing.json")


def test_atomic_write_keeps_the_old_file_when_the_rename_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")

    def failing_replace(source: str, destination: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_write_goes_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"

"""Baseline keys (issue 15): a finding is keyed on its code, function, line and the nearest code lines
around it, so an identical line added elsewhere is the one reported, and a fixed finding never hides the
same text added somewhere else in the function."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_kvlint

SOURCE = """\
def merge(outputs, log):
    log.info("merging")
    for out in outputs:
        tally(out)
        done = out.kv_connector_output.finished_sending
        record(done)
    return None
"""
BUG = "        done = out.kv_connector_output.finished_sending\n"


def _baseline(tree: Path) -> Path:
    (tree / "merge.py").write_text(SOURCE)
    baseline = tree / "baseline.json"
    completed = run_kvlint("check", ".", "--write-baseline", str(baseline), cwd=tree)
    assert completed.returncode == 0, completed.stderr
    return baseline


def _new(tree: Path, baseline: Path) -> list[tuple[int, str]]:
    completed = run_kvlint("check", ".", "--format", "json", "--baseline", str(baseline), cwd=tree)
    assert completed.returncode in (0, 1), completed.stderr
    return [(f["line"], f["code"]) for f in json.loads(completed.stdout)]


def test_an_identical_line_added_above_is_the_one_reported(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    (tmp_path / "merge.py").write_text(SOURCE.replace("    for out in outputs:\n",
                                                      "    for out in outputs:\n" + BUG + "        flush()\n"))
    assert _new(tmp_path, baseline) == [(4, "KVC001")]  # the new line 4, not the recorded one (now 7)


def test_a_fixed_finding_does_not_hide_the_same_text_elsewhere(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    fixed = SOURCE.replace(BUG, "        done = (out.kv_connector_output or EMPTY).finished_sending\n")
    moved = "    last = outputs[-1]\n    done = last.kv_connector_output.finished_sending\n"  # the same text once
    (tmp_path / "merge.py").write_text(fixed.replace("    return None\n", moved.replace("last.", "out.") +
                                                     "    return None\n"))
    assert _new(tmp_path, baseline) == [(8, "KVC001")]


def test_what_does_not_move_a_key(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    edited = ("import logging\n\n\n" + SOURCE.replace("        tally(out)\n", "        tally(out)\n\n        # why\n")
              .replace("    ", "  ") + "\n\ndef later(out):\n    return out\n")
    (tmp_path / "merge.py").write_text(edited)  # lines moved, re-indented, a blank line, a comment, a function
    assert _new(tmp_path, baseline) == []


def test_what_moves_a_key(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    (tmp_path / "merge.py").write_text(SOURCE.replace("        tally(out)\n", "        tally(out, 1)\n"))
    assert _new(tmp_path, baseline) == [(5, "KVC001")]  # the line of code right above it changed


def test_a_version_1_baseline_is_still_read(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    data = json.loads(baseline.read_text())
    data["version"] = 1
    for entry in data["findings"]:
        del entry["context"]
    baseline.write_text(json.dumps(data))
    (tmp_path / "merge.py").write_text(SOURCE.replace("        tally(out)\n", "        tally(out, 1)\n"))
    assert _new(tmp_path, baseline) == []  # version 1 keys have no window

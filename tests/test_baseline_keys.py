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


RUNNER = """\
from vllm.distributed.ec_transfer import has_ec_transfer
from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import ModelRunnerOutput


def build(kvo):
    if has_kv_transfer_group() and has_ec_transfer():
        return ModelRunnerOutput(
            req_ids=[],
        )
    return None
"""
KV_ONLY = '[tool.kvlint]\npresets = ["kv"]\n'


def test_a_finding_of_another_invariant_on_a_recorded_line_is_new(tmp_path: Path) -> None:
    """Recorded with `presets = ["kv"]`: KVC003 for the KV output. The KV output attached, the encoder-cache
    preset turned on: the construction's KVC003 is now the encoder-cache one, at the same line. A version 3
    baseline keys the invariant, so it is new; a version 2 one did not, and hid it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(KV_ONLY)
    (tmp_path / "runner.py").write_text(RUNNER)
    baseline = tmp_path / "baseline.json"
    assert run_kvlint("check", ".", "--write-baseline", str(baseline), cwd=tmp_path).returncode == 0
    (entry,) = json.loads(baseline.read_text())["findings"]
    assert (entry["code"], entry["invariant"], entry["line"]) == ("KVC003", "kv", 8)
    (tmp_path / "pyproject.toml").write_text("[tool.kvlint]\n")
    attached = "            req_ids=[],\n            kv_connector_output=kvo,\n"
    (tmp_path / "runner.py").write_text(RUNNER.replace("            req_ids=[],\n", attached))
    assert _new(tmp_path, baseline) == [(8, "KVC003")]
    data = json.loads(baseline.read_text())
    data["version"] = 2
    for recorded in data["findings"]:
        del recorded["invariant"]
    baseline.write_text(json.dumps(data))
    assert _new(tmp_path, baseline) == []  # version 2 keys have no invariant

"""The opt-in result cache: a warm run reuses reports, and never gives a result a cold run would not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kvlint
from kvlint.running import run_record
from kvlint.running.cache import CACHE_FORMAT
from kvlint.config import Config
from kvlint.running.runner import RunResult, run
from tests.conftest import FIXTURES, ROOT, run_kvlint

PROVIDER = """\
from vllm.v1.outputs import KVConnectorOutput


def latest_output(runner) -> KVConnectorOutput | None:
    return runner.latest
"""

CONSUMER = """\
from provider import latest_output


def finished(runner):
    kvo = latest_output(runner)
    return kvo.finished_sending
"""


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(FIXTURES / "vllm_like", tmp_path / "vllm_like")
    (tmp_path / "provider.py").write_text(PROVIDER)
    (tmp_path / "consumer.py").write_text(CONSUMER)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(cache: Path | None, config: Config | None = None, jobs: int = 2) -> RunResult:
    return run([Path(".")], config or Config(), jobs=jobs, cache_dir=cache)


def _entries(cache: Path) -> list[Path]:
    """The per-file entries (not the run records beside them, `runs/`)."""
    return sorted(path for path in cache.rglob("*.json") if path.parent.name != "runs")


def _forget_runs(cache: Path) -> None:
    """Remove the run records, so that the next run reads the per-file entries (which a test damages)."""
    for runs in cache.rglob("runs"):
        shutil.rmtree(runs)


def _outcome(result: RunResult) -> list[tuple[object, ...]]:
    return [(r.display_path, r.sites, r.findings, r.analysed) for r in result.reports]


def test_a_warm_run_reuses_every_report_and_equals_a_run_without_cache(tree: Path) -> None:
    plain = _run(None)
    cold = _run(tree / "cache")
    warm = _run(tree / "cache", jobs=1)
    assert cold.cache_hits == 0 and cold.cache_problem == ""
    assert warm.cache_hits == plain.files_analysed > 15
    assert _outcome(plain) == _outcome(cold) == _outcome(warm)
    assert any(f.path == "consumer.py" and f.code == "KVC001" for f in warm.findings)


def test_an_edited_file_is_analysed_again(tree: Path) -> None:
    _run(tree / "cache")
    worker = tree / "vllm_like" / "worker.py"
    worker.write_text(worker.read_text().replace("return EMPTY_MODEL_RUNNER_OUTPUT", "return None"))
    warm = _run(tree / "cache")
    assert warm.cache_hits == warm.files_analysed - 1
    assert _outcome(warm) == _outcome(_run(None))


def test_a_change_elsewhere_in_the_tree_index_reaches_unchanged_files(tree: Path) -> None:
    """consumer.py is unchanged, but what `latest_output` returns changed in provider.py."""
    assert any(f.path == "consumer.py" for f in _run(tree / "cache").findings)
    (tree / "provider.py").write_text(PROVIDER.replace("KVConnectorOutput | None", "KVConnectorOutput"))
    warm = _run(tree / "cache")
    assert not any(f.path == "consumer.py" for f in warm.findings)
    assert _outcome(warm) == _outcome(_run(None))
    assert warm.cache_hits < warm.files_analysed - 1  # every report made with the old index is stale


def test_another_configuration_or_kvlint_version_misses(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(tree / "cache")
    narrowed = Config(select=("KVC002",))
    assert _run(tree / "cache", narrowed).cache_hits == 0
    assert _outcome(_run(tree / "cache", narrowed)) == _outcome(_run(None, narrowed))
    monkeypatch.setattr(kvlint, "source_digest", lambda: "another-build")  # kvlint's sources, by content
    monkeypatch.setattr(run_record, "sources_identity", lambda: "content:another-build")
    assert _run(tree / "cache").cache_hits == 0


def test_unreadable_or_corrupt_entries_are_misses(tree: Path) -> None:
    expected = _outcome(_run(tree / "cache"))
    entries = _entries(tree / "cache")
    _forget_runs(tree / "cache")
    for number, entry in enumerate(entries):
        entry.write_text(["", "{", '{"functions": 3}', "[]"][number % 4])
    again = _run(tree / "cache")
    assert again.cache_hits == 0 and _outcome(again) == expected
    assert _run(tree / "cache").cache_hits == again.files_analysed  # the bad entries were replaced


def test_an_entry_whose_report_cannot_be_decoded_is_analysed_again(tree: Path) -> None:
    expected = _outcome(_run(tree / "cache"))
    _forget_runs(tree / "cache")
    for entry in _entries(tree / "cache"):
        data = json.loads(entry.read_text())
        data["report"]["sites"] = [{"kind": "no-such-kind"}]
        entry.write_text(json.dumps(data))
    again = _run(tree / "cache")
    assert again.cache_hits == 0 and _outcome(again) == expected


def test_the_cache_directory_is_tagged_and_ignored_by_git(tree: Path) -> None:
    _run(tree / "cache")
    root = tree / "cache" / f"kvlint-v{CACHE_FORMAT}"
    assert (root / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (root / ".gitignore").read_text().splitlines()[-1] == "*"


def test_the_command_line_names_the_cache_by_option_or_environment(tree: Path) -> None:
    plain = run_kvlint("audit", ".", "--format", "json", "--exit-zero", cwd=tree)
    by_option = run_kvlint("audit", ".", "--format", "json", "--exit-zero", "--cache-dir", "c1", cwd=tree)
    by_environment = run_kvlint("check", ".", "--format", "json", cwd=tree, env={"KVLINT_CACHE_DIR": "c2"})
    assert plain.stdout == by_option.stdout and by_option.returncode == 0
    assert by_environment.returncode == 1 and by_environment.stderr == ""
    assert list((tree / "c1").rglob("*.json")) and list((tree / "c2").rglob("*.json"))
    warm = run_kvlint("audit", ".", "--format", "json", "--exit-zero", "--cache-dir", "c1", cwd=tree)
    assert warm.stdout == plain.stdout


def test_runs_sharing_a_cache_at_the_same_time_agree(tree: Path) -> None:
    """pre-commit runs hooks in parallel processes; entries are replaced atomically, never torn."""
    command = [sys.executable, "-m", "kvlint", "check", ".", "--format", "json", "--cache-dir", "shared"]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    runs = [subprocess.Popen(command, cwd=tree, env=environment, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = {run.communicate(timeout=300)[0] for run in runs}
    assert len(outputs) == 1 and [run.returncode for run in runs] == [1] * 4
    assert _run(tree / "shared").cache_hits == _run(None).files_analysed


def test_a_cache_that_cannot_be_written_is_one_warning_and_the_run_goes_on(tree: Path) -> None:
    (tree / "not-a-directory").write_text("")
    completed = run_kvlint("check", ".", "--cache-dir", "not-a-directory", cwd=tree)
    plain = run_kvlint("check", ".", cwd=tree)
    assert completed.returncode == plain.returncode == 1
    assert completed.stdout == plain.stdout
    assert completed.stderr == "kvlint: warning: results not cached: not-a-directory: not a directory\n"

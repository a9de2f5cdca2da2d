"""The run record (`kvlint.running.run_record`): a file whose status is unchanged is neither read nor scanned,
and each way a file can change under an unchanged-looking status is caught by the rule written for it.

Each test switches off the other rules that would also catch its case (`RACY_NS = 0` turns the "settled"
rule off: every status then counts as settled), so that it fails when its own rule is removed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import kvlint
from kvlint.config import Config, load_config
from kvlint.running import run_record, runner
from kvlint.running.run_record import CACHE_FORMAT
from kvlint.running.runner import RunResult, run
from tests.conftest import run_kvlint
from tests.test_cache import CONSUMER, PROVIDER  # a helper declared Optional in one file, used in another

BAD = (
    "from vllm.v1.outputs import KVConnectorOutput\n"
    "def step(out):\n"
    "    return out.kv_connector_output.finished_sending\n"
)
GOOD = BAD.replace("out.kv_connector_output.finished_sending", "out" + " " * 37)  # the same size, no finding
assert len(GOOD) == len(BAD)
OTHER = "def helper(x):\n    return x\n"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "tree"
    work.mkdir()
    (work / "worker.py").write_text(BAD)
    for number in range(3):
        (work / f"plain{number}.py").write_text(OTHER)
    monkeypatch.chdir(tmp_path)
    return work


@pytest.fixture
def settled_now(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every status counts as settled: the rule of "not in the recording run's last two seconds" is off."""
    monkeypatch.setattr(run_record, "RACY_NS", 0)


def _run(tmp_path: Path, config: Config | None = None) -> RunResult:
    return run([Path("tree")], config or Config(), jobs=1, cache_dir=tmp_path / "cache")


def _codes(result: RunResult) -> list[tuple[str, int, str]]:
    return [(f.path, f.line, f.code) for f in result.findings]


def _replayed(result: RunResult) -> bool:
    """A replayed record has no tree index (nothing was indexed); an ordinary run always has one."""
    return result.index is None


def _rewrite_in_place(path: Path, text: str) -> None:
    """New bytes in the same inode, then the old mtime back (as an editor that keeps times, or `os.utime`)."""
    before = path.stat()
    with open(path, "r+b") as stream:
        stream.write(text.encode())
        stream.truncate()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


class _CoarseClock:
    """`os` as run_record sees it on a file system with two-second timestamps (FAT's), where a file written
    twice in one tick keeps its mtime and ctime."""

    TICK = 2 * 10**9

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def stat(self, path: str, **options: object) -> SimpleNamespace:
        real = os.stat(path, **options)  # type: ignore[arg-type]
        return SimpleNamespace(st_dev=real.st_dev, st_ino=real.st_ino, st_size=real.st_size,
                               st_mtime_ns=real.st_mtime_ns // self.TICK * self.TICK,
                               st_ctime_ns=real.st_ctime_ns // self.TICK * self.TICK)


def _start_of_a_tick() -> None:
    """Wait for the start of a two-second tick, so that what follows within a second shares it."""
    while time.time() % 2 > 0.2:
        time.sleep(0.05)


def test_a_warm_run_with_nothing_changed_reads_no_file(
    tree: Path, settled_now: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = _run(tree.parent)
    assert _codes(cold) == [("tree/worker.py", 3, "KVC001")] and not _replayed(cold)

    def no_reading(path: Path) -> bytes:
        raise AssertionError(f"read {path}")

    monkeypatch.setattr(runner, "read_source", no_reading)
    warm = _run(tree.parent)
    assert _replayed(warm) and _codes(warm) == _codes(cold)
    assert warm.cache_hits == warm.files_analysed == cold.files_analysed and warm.files_found == 4


def test_an_unchanged_file_is_neither_read_nor_scanned_when_another_changed(
    tree: Path, settled_now: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _codes(_run(tree.parent)) == [("tree/worker.py", 3, "KVC001")]
    (tree / "plain0.py").write_text(OTHER + "# edited\n")
    read: list[str] = []
    scanned: list[bytes] = []
    real_read, real_scan = runner.read_source, runner.mentions_any

    def reading(path: Path) -> bytes:
        read.append(os.fspath(path))
        return real_read(path)

    def scanning(data: bytes, names: object) -> bool:
        scanned.append(data)
        return real_scan(data, names)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "read_source", reading)
    monkeypatch.setattr(runner, "mentions_any", scanning)
    warm = _run(tree.parent)
    assert not _replayed(warm) and _codes(warm) == [("tree/worker.py", 3, "KVC001")]
    assert read == ["tree/plain0.py"]
    assert all(data == (OTHER + "# edited\n").encode() for data in scanned) and scanned
    assert warm.cache_hits == 1  # worker.py's report, recalled by the digest its record holds


def test_a_file_rewritten_in_place_with_its_mtime_set_back_misses_by_its_ctime(tree: Path, settled_now: None) -> None:
    """Same inode, size and mtime_ns (`os.utime` set it back): only the ctime, which nothing but the clock sets,
    tells. Without the ctime in the key, the warm run would replay the old finding."""
    assert _codes(_run(tree.parent)) == [("tree/worker.py", 3, "KVC001")]
    _rewrite_in_place(tree / "worker.py", GOOD)
    warm = _run(tree.parent)
    assert _codes(warm) == [] and not _replayed(warm)


def test_a_file_changed_within_one_timestamp_tick_is_read_again(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a file system with two-second timestamps, a file rewritten in the tick it was recorded in keeps its
    whole status (size, mtime, ctime, inode). The record does not trust a status that is not older than the
    recording run's start by a tick (`RACY_NS`): without that rule the warm run would replay the old finding."""
    monkeypatch.setattr(run_record, "os", _CoarseClock())
    for _ in range(3):  # a run that happens to cross a tick proves nothing: try again
        _start_of_a_tick()
        (tree / "worker.py").write_text(BAD)
        (tree.parent / "cache").mkdir(exist_ok=True)
        assert _codes(_run(tree.parent)) == [("tree/worker.py", 3, "KVC001")]
        recorded = run_record.current_key("tree/worker.py")
        with open(tree / "worker.py", "r+b") as stream:
            stream.write(GOOD.encode())
        if run_record.current_key("tree/worker.py") == recorded:
            break
    else:
        pytest.fail("could not rewrite the file within one two-second tick")
    warm = _run(tree.parent)
    assert _codes(warm) == [] and not _replayed(warm)


def test_a_file_replaced_by_git_checkout_with_an_older_mtime_misses(
    tree: Path, settled_now: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git checkout` unlinks the file and writes it anew (here the same size, and ext4 gives it the inode just
    freed), and a tool that restores commit times (or a CI cache) gives it an mtime older than the recorded
    one. On a two-second-tick file system its ctime can fall in the recorded tick: only the mtime differs. The
    key is compared for equality, not "is the file newer than the record": that rule would replay the old
    finding here."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tree, check=True,
                       capture_output=True)

    git("init", "-q", "-b", "bad")
    git("add", ".")
    git("commit", "-q", "-m", "bad")
    git("checkout", "-q", "-b", "good")
    (tree / "worker.py").write_text(GOOD)
    git("commit", "-q", "-am", "good")
    monkeypatch.setattr(run_record, "os", _CoarseClock())
    for _ in range(3):
        git("checkout", "-q", "bad")
        _start_of_a_tick()
        os.utime(tree / "worker.py")
        assert _codes(_run(tree.parent)) == [("tree/worker.py", 3, "KVC001")]
        recorded = (tree / "worker.py").stat()
        recorded_key = run_record.current_key("tree/worker.py")
        git("checkout", "-q", "good")
        os.utime(tree / "worker.py", ns=(recorded.st_atime_ns, recorded.st_mtime_ns - 3600 * 10**9))
        now = run_record.current_key("tree/worker.py")
        assert recorded_key is not None and now is not None
        if now[4] == recorded_key[4]:  # the same ctime tick: the mtime alone tells
            break
    else:
        pytest.fail("could not check the file out within one two-second tick")
    warm = _run(tree.parent)
    assert _codes(warm) == [] and not _replayed(warm)


def test_a_swapped_symlink_misses_by_the_inode_of_the_file_it_names(tree: Path, settled_now: None,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`worker.py` is a symlink; it is pointed at another file of the same size, mtime and (two-second tick)
    ctime, in a directory whose own status stays the same in that tick. The key is the status of the file read
    (the link followed): without its inode the warm run would replay the old finding."""
    monkeypatch.setattr(run_record, "os", _CoarseClock())
    (tree / "worker.py").unlink()
    targets = tree.parent / "targets"
    targets.mkdir()
    for _ in range(3):
        _start_of_a_tick()
        (targets / "x.py").write_text(BAD)
        (targets / "y.py").write_text(GOOD)
        x = (targets / "x.py").stat()
        os.utime(targets / "y.py", ns=(x.st_atime_ns, x.st_mtime_ns))
        if (tree / "worker.py").is_symlink():
            (tree / "worker.py").unlink()
        (tree / "worker.py").symlink_to(targets / "x.py")
        assert _codes(_run(tree.parent)) == [("tree/worker.py", 3, "KVC001")]
        listed = run_record.current_key("tree")
        (tree / "new-link").symlink_to(targets / "y.py")
        os.replace(tree / "new-link", tree / "worker.py")
        x_key, y_key = run_record.current_key(str(targets / "x.py")), run_record.current_key(str(targets / "y.py"))
        assert x_key is not None and y_key is not None
        if x_key[2:] == y_key[2:] and run_record.current_key("tree") == listed:
            break
    else:
        pytest.fail("could not swap the symlink within one two-second tick")
    warm = _run(tree.parent)
    assert _codes(warm) == [] and not _replayed(warm)


def test_a_new_file_in_a_listed_directory_is_found(tree: Path, settled_now: None) -> None:
    """A directory's entries are recorded by its status: a file added changes it (here a subdirectory, which
    only discovery lists: the search path lists the top one for module names)."""
    (tree / "sub").mkdir()
    (tree / "sub" / "plain.py").write_text(OTHER)
    assert _codes(_run(tree.parent)) == [("tree/worker.py", 3, "KVC001")]
    (tree / "sub" / "second.py").write_text(BAD)
    warm = _run(tree.parent)
    assert _codes(warm) == [("tree/sub/second.py", 3, "KVC001"), ("tree/worker.py", 3, "KVC001")]


def test_a_configuration_change_misses(tree: Path, settled_now: None) -> None:
    """The record is named by the whole configuration: `ignore` added to the project's pyproject.toml."""
    assert _codes(_run(tree.parent, load_config([tree]))) == [("tree/worker.py", 3, "KVC001")]
    (tree.parent / "pyproject.toml").write_text('[tool.kvlint]\nignore = ["KVC001"]\n')
    warm = _run(tree.parent, load_config([tree]))
    assert _codes(warm) == [] and not _replayed(warm)
    (tree.parent / "pyproject.toml").write_text("[tool.kvlint]\n")
    assert _codes(_run(tree.parent, load_config([tree]))) == [("tree/worker.py", 3, "KVC001")]


def test_a_new_kvlint_version_or_python_misses(tree: Path, settled_now: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A record made by another kvlint (its version or its sources) or another Python is not replayed, and no
    per-file result of theirs is reused: the engine that made them may have found other things."""
    cold = _run(tree.parent)
    assert _replayed(_run(tree.parent))
    monkeypatch.setattr(kvlint, "__version__", "99.0.0")
    again = _run(tree.parent)
    assert not _replayed(again) and again.cache_hits == 0 and _codes(again) == _codes(cold)
    monkeypatch.setattr(run_record, "sources_identity", lambda: "content:edited-sources")
    again = _run(tree.parent)
    assert not _replayed(again) and again.cache_hits == 0
    monkeypatch.setattr(sys, "version", sys.version + " (another build)")
    again = _run(tree.parent)
    assert not _replayed(again) and again.cache_hits == 0


def _record(cache: Path) -> Path:
    found = [p for p in (cache / f"kvlint-v{CACHE_FORMAT}" / "runs").iterdir() if not p.name.endswith(".reports.json")]
    assert len(found) == 1
    return found[0]


def test_a_record_others_may_write_or_a_damaged_one_is_not_used(tree: Path, settled_now: None) -> None:
    """Records live in the cache's private directory under its trust rules; a bad one is the ordinary path."""
    assert _codes(_run(tree.parent)) == [("tree/worker.py", 3, "KVC001")]
    record = _record(tree.parent / "cache")
    entry = json.loads(record.read_text())
    entry["result"]["findings"] = []  # as if someone else had written "no findings"
    record.write_text(json.dumps(entry))
    record.chmod(0o666)
    forged = _run(tree.parent)
    assert not _replayed(forged) and _codes(forged) == [("tree/worker.py", 3, "KVC001")]
    for damage in ("", "{", '{"material": 3}', "[]", json.dumps({**entry, "files": [["tree/worker.py"]]})):
        _record(tree.parent / "cache").write_text(damage)
        _record(tree.parent / "cache").chmod(0o600)
        again = _run(tree.parent)
        assert not _replayed(again) and _codes(again) == [("tree/worker.py", 3, "KVC001")], damage


def test_the_command_line_replays_the_same_bytes(tree: Path) -> None:
    """Through `kvlint check` and `kvlint audit`, once the tree's status is settled (two seconds old)."""
    cache = tree.parent / "cache"
    plain = run_kvlint("check", "tree", cwd=tree.parent)
    audit = run_kvlint("audit", "tree", "--format", "json", "--exit-zero", cwd=tree.parent)
    time.sleep(2.2)
    for _ in range(2):  # the first writes a settled record, the second replays it
        check = run_kvlint("check", "tree", "--cache-dir", str(cache), cwd=tree.parent)
        assert (check.returncode, check.stdout, check.stderr) == (plain.returncode, plain.stdout, plain.stderr)
        warm = run_kvlint("audit", "tree", "--format", "json", "--exit-zero", "--cache-dir", str(cache),
                          cwd=tree.parent)
        assert json.loads(warm.stdout)["findings"] == json.loads(audit.stdout)["findings"]
    # one record and its reports: check and audit share it
    assert len(list((cache / f"kvlint-v{CACHE_FORMAT}" / "runs").iterdir())) == 2


def test_the_hook_sees_a_change_in_a_module_its_file_imports(
    tmp_path: Path, settled_now: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kvlint check consumer.py` binds `latest_output` through provider.py, which the run reads beyond its own
    files: the record keeps the status of every file and directory the search path consulted, and the
    declarations it found are reused only while they are all unchanged."""
    (tmp_path / "provider.py").write_text(PROVIDER)
    (tmp_path / "consumer.py").write_text(CONSUMER)
    (tmp_path / "cache").mkdir()  # before the runs: the search path lists tmp_path, which making it would change
    monkeypatch.chdir(tmp_path)

    def hook() -> RunResult:
        return run([Path("consumer.py")], Config(), jobs=1, cache_dir=tmp_path / "cache")

    assert [f.code for f in hook().findings] == ["KVC001"]
    assert _replayed(hook())
    not_optional = PROVIDER.replace("KVConnectorOutput | None", "KVConnectorOutput       ")
    _rewrite_in_place(tmp_path / "provider.py", not_optional)
    warm = hook()
    assert warm.findings == [] and not _replayed(warm)
    assert hook().findings == []

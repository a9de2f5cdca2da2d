"""The result cache trusts no one but its owner (issue 15): another user who can write to the cache
directory can neither redirect kvlint's writes nor forge its results, and a damaged entry is a miss."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from kvlint.running.cache import CACHE_FORMAT, ResultCache
from kvlint.config import Config
from kvlint.running.private_dir import PrivateDir
from kvlint.running.runner import run
from tests.conftest import FIXTURES, run_kvlint
from tests.support.second_user import OTHER_GID, OTHER_UID, as_other_user, shared_directory

CANARY = (FIXTURES / "nasty" / "canary.py").read_text()
FINDING = "canary.py:3:12: KVC001"


def _tree(directory: Path) -> Path:
    tree = directory / "tree"
    tree.mkdir()
    (tree / "canary.py").write_text(CANARY)
    for number in range(4):  # enough files for worker processes
        (tree / f"m{number}.py").write_text(CANARY.replace("step", f"step{number}"))
    return tree


def _check(tree: Path, cache: Path | str, *extra: str):  # type: ignore[no-untyped-def]
    completed = run_kvlint("check", ".", "--cache-dir", str(cache), *extra, cwd=tree)
    assert "Traceback" not in completed.stderr
    return completed


def _entries(directory: Path) -> list[Path]:
    """The per-file entries (the run records in `runs/` are checked in tests/test_cache_records.py)."""
    return sorted(path for path in directory.rglob("*.json") if path.is_file() and path.parent.name != "runs")


def _forget_runs(directory: Path) -> None:
    for runs in directory.rglob("runs"):
        shutil.rmtree(runs)


def test_a_shared_world_writable_directory_gets_a_private_per_user_subdirectory(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    cold = _check(tree, shared)
    warm = _check(tree, shared)
    assert cold.returncode == warm.returncode == 1 and warm.stdout == cold.stdout and warm.stderr == ""
    mine = shared / f"kvlint-{os.geteuid()}"
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700
    assert sorted(p.name for p in shared.iterdir()) == [mine.name]
    assert _entries(mine)


def test_a_per_user_subdirectory_planted_as_a_symlink_is_not_followed(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    with shared_directory() as shared:
        shared.chmod(0o1777)
        target = shared / "attackers"
        as_other_user(f"mkdir -m 777 {target} && ln -s {target} {shared}/kvlint-{os.geteuid()}")
        completed = _check(tree, shared)
        assert completed.returncode == 1 and FINDING in completed.stdout
        assert completed.stderr.startswith("kvlint: warning: results not cached: ")
        assert "not a directory (a symlink or a file)" in completed.stderr
        assert list(target.iterdir()) == []


def test_a_per_user_subdirectory_made_by_another_user_is_not_used(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    with shared_directory() as shared:
        shared.chmod(0o1777)
        as_other_user(f"mkdir -m 777 {shared}/kvlint-{os.geteuid()}")
        completed = _check(tree, shared)
        assert completed.returncode == 1 and FINDING in completed.stdout
        assert f"owned by another user (uid {OTHER_UID})" in completed.stderr
        assert _entries(shared) == []


def test_an_entry_forged_by_another_user_is_never_trusted(tmp_path: Path) -> None:
    """The other user pre-creates the cache layout in a shared directory and rewrites each entry
    to say "no findings" once the victim has written it."""
    tree = _tree(tmp_path)
    with shared_directory() as shared:
        shared.chmod(0o1777)
        as_other_user(f"mkdir -m 777 {shared}/kvlint-v{CACHE_FORMAT} && cd {shared}/kvlint-v{CACHE_FORMAT} && "
                      "for b in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do for c in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do "
                      "mkdir -m 777 $b$c; done; done")
        assert _check(tree, shared).returncode == 1
        assert _entries(shared)
        for entry in _entries(shared):  # forge what the victim wrote: as if the file had no finding
            data = json.loads(entry.read_text())
            data["report"]["findings"] = []
            forged = shared / "forged.tmp"
            forged.write_text(json.dumps(data))
            forged.chmod(0o644)
            planted = shared / f"kvlint-v{CACHE_FORMAT}" / entry.parent.name / entry.name  # the keys are predictable
            as_other_user(f"cp {forged} {planted}.new && mv -f {planted}.new {planted}")
        warm = _check(tree, shared)
        assert warm.returncode == 1 and FINDING in warm.stdout


def test_an_entry_planted_as_a_symlink_is_replaced_not_written_through(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    cache = tmp_path / "cache"
    assert _check(tree, cache).returncode == 1
    victim = tmp_path / "precious.txt"
    victim.write_text("precious\n")
    entries = _entries(cache)
    _forget_runs(cache)  # the next run reads the entries rather than replaying its record
    for entry in entries:  # as if planted while the directory was open to others
        entry.unlink()
        entry.symlink_to(victim)
    again = _check(tree, cache)
    assert again.returncode == 1 and FINDING in again.stdout and again.stderr == ""
    assert victim.read_text() == "precious\n"
    assert all(entry.is_file() and not entry.is_symlink() for entry in entries)


def test_an_entry_owned_by_another_user_is_a_miss(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    with PrivateDir.open_named(cache_dir) as store:
        store.write("entry", b"{}")
        assert store.read("entry", 100) == b"{}"
        os.chown("entry", OTHER_UID, OTHER_GID, dir_fd=store.fd, follow_symlinks=False) if os.geteuid() == 0 \
            else pytest.skip("chown to another user needs root")
        assert store.read("entry", 100) is None
        os.chown("entry", os.geteuid(), os.getegid(), dir_fd=store.fd)
        os.chmod("entry", 0o666, dir_fd=store.fd)
        assert store.read("entry", 100) is None  # writable by others
        os.chmod("entry", 0o600, dir_fd=store.fd)
        assert store.read("entry", 1) is None  # over the size bound
        assert store.read("entry", 2) == b"{}"


@pytest.mark.parametrize("damage", ["deep", "huge-number", "float-line", "negative", "string-column", "wrong-arity"])
def test_a_damaged_entry_is_a_miss_never_fatal(tmp_path: Path, damage: str) -> None:
    tree = _tree(tmp_path)
    cache = tmp_path / "cache"
    expected = _check(tree, cache)
    _forget_runs(cache)
    for entry in _entries(cache):
        data = json.loads(entry.read_text())
        findings = data["report"]["findings"]
        if damage == "deep":
            text = entry.read_text().replace('"declarations":[', '"declarations":[' + "[" * 100_000, 1)
            entry.write_text(text.replace('],"index"', "]" * 100_000 + '],"index"', 1))
            continue
        for finding in findings:
            if damage == "huge-number":
                finding[1] = 10**30
            elif damage == "float-line":
                finding[1] = 1e308
            elif damage == "negative":
                finding[2] = -5
            elif damage == "string-column":
                finding[2] = "3"
            else:
                finding.append("extra")
        if damage == "float-line":
            entry.write_text(json.dumps(data).replace("1e+308", "1e999"))  # infinity
        else:
            entry.write_text(json.dumps(data))
    again = _check(tree, cache)
    assert (again.returncode, again.stdout, again.stderr) == (1, expected.stdout, "")


def test_an_empty_cache_directory_name_is_a_usage_error(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    before = sorted(p.name for p in tree.iterdir())
    completed = run_kvlint("check", ".", "--cache-dir", "", cwd=tree)
    assert completed.returncode == 2 and "an empty path names no directory" in completed.stderr
    assert sorted(p.name for p in tree.iterdir()) == before


def test_the_cache_is_pruned_to_its_size_bound_least_recently_used_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    monkeypatch.chdir(tree)
    cache = tmp_path / "cache"
    run([Path(".")], Config(), jobs=1, cache_dir=cache)
    _forget_runs(cache)
    entries = _entries(cache)
    assert len(entries) == 5
    for age, entry in enumerate(entries):  # the first entry is the least recently used
        os.utime(entry, (1_000_000 + age, 1_000_000 + age))
    sizes = [entry.stat().st_size for entry in entries]
    store = ResultCache(cache, Config())
    assert store.prune(sum(sizes) - sizes[0]) == 1
    store.close()
    assert _entries(cache) == entries[1:]
    assert store.prune(0) == 4 and _entries(cache) == []


def test_a_run_over_the_size_bound_prunes(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    cache = tmp_path / "cache"
    completed = run_kvlint("check", ".", "--cache-dir", str(cache), cwd=tree, env={"KVLINT_CACHE_MAX_MB": "0"})
    assert completed.returncode == 1 and completed.stderr == ""
    assert _entries(cache) == []
    assert _check(tree, cache).returncode == 1 and len(_entries(cache)) == 5  # the default bound keeps them


def test_cache_clean_removes_the_cache_without_following_symlinks(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    cache = tmp_path / "cache"
    assert _check(tree, cache).returncode == 1
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "file").write_text("x")
    (cache / f"kvlint-v{CACHE_FORMAT}" / "evil").symlink_to(keep)
    (cache / "unrelated").write_text("not kvlint's")
    completed = run_kvlint("cache", "clean", "--cache-dir", str(cache), cwd=tree)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == f"kvlint: removed {cache}/kvlint-v{CACHE_FORMAT}\n"
    assert sorted(p.name for p in cache.iterdir()) == ["unrelated"]
    assert (keep / "file").read_text() == "x"
    by_environment = run_kvlint("cache", "clean", cwd=tree, env={"KVLINT_CACHE_DIR": str(cache)})
    assert by_environment.returncode == 0 and "no kvlint cache there" in by_environment.stderr
    neither = run_kvlint("cache", "clean", cwd=tree)
    assert neither.returncode == 2 and "give --cache-dir DIR or set KVLINT_CACHE_DIR" in neither.stderr
    shutil.rmtree(keep)

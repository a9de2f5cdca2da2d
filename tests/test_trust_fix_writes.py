"""`--fix` writes only what it may (issue 29, defects 3, 6, 7, 9 and 10).

Each test reproduces one way the old fix phase wrote what it should not have: code that parses but does not
compile, a file outside the tree through a symlink, a read-only file, a FIFO put in a file's place (a blocking
read, forever), an edit saved while the fixed file was being written (lost).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

import kvlint.atomic
import kvlint.fixing.files
from kvlint.config import Config
from kvlint.fixing.files import fix_file
from kvlint.fixing.passes import fix_source
from kvlint.running.runner import index_tree
from tests.conftest import FIXTURES, run_kvlint

FIXES = FIXTURES / "fixes"
CONFIG = Config()
INDEX, _ = index_tree([FIXES], CONFIG)
SAFE = "kvc005_defaults.py"  # safe fixes only: `--fix` writes it

SEED = """\
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)
"""


def _tree(root: Path) -> Path:
    """fixtures/fixes under `root`, the fixed versions left out."""
    target = root / "fixtures" / "fixes"
    target.mkdir(parents=True)
    (root / "fixtures" / "__init__.py").write_text("")
    for path in FIXES.glob("*.py"):
        if not path.name.endswith(".fixed.py"):
            (target / path.name).write_bytes(path.read_bytes())
    return target


# ------------------------------------------------------------------------------ defect 3: it must compile

EXCEPT_STAR = """\
def merge(outputs):
    for out in outputs:
        try:
            pass
        except* ValueError:
            kvo = out.kv_connector_output
            print(kvo.finished_sending)
"""

ASYNC_GENERATOR_RETURN = """\
async def merge(outputs):
    kvo = outputs.kv_connector_output
    yield 1
    print(kvo.finished_sending)
"""


@pytest.mark.parametrize("source", [EXCEPT_STAR, ASYNC_GENERATOR_RETURN], ids=["except*", "async generator"])
def test_an_unsafe_fix_that_does_not_compile_is_not_kept(source: str) -> None:
    outcome = fix_source(source, "merge.py", CONFIG, unsafe=True)
    compile(outcome.text, "merge.py", "exec", dont_inherit=True)  # whatever it did, the text compiles


def test_check_fix_unsafe_leaves_an_except_star_block_compiling(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "merge.py").write_text(EXCEPT_STAR)
    completed = run_kvlint("check", "--fix", "--unsafe-fixes", ".", cwd=tmp_path)
    compile((tmp_path / "merge.py").read_text(), "merge.py", "exec", dont_inherit=True)
    assert completed.returncode == 1, completed.stderr  # the finding remains, and says why


# --------------------------------------------------------------------- defect 6: symlinks out of the tree


def test_a_symlink_to_a_file_outside_the_tree_is_checked_not_fixed(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _tree(tree)
    outside = tmp_path / "outside" / "victim.py"
    outside.parent.mkdir()
    outside.write_bytes((FIXES / SAFE).read_bytes())
    (tree / "fixtures" / "fixes" / "planted.py").symlink_to(outside)
    before = outside.read_bytes()
    completed = run_kvlint("check", "--fix", "fixtures", cwd=tree)
    assert outside.read_bytes() == before
    assert (tree / "fixtures" / "fixes" / "planted.py").is_symlink()
    assert f"planted.py: not fixed: it is a symlink to {outside}, outside the paths given" in completed.stderr
    assert "fixtures/fixes/planted.py:" in completed.stdout  # still checked, its findings reported
    assert (tree / "fixtures" / "fixes" / SAFE).read_bytes() != (FIXES / SAFE).read_bytes()  # the rest fixed


def test_a_symlink_inside_the_tree_is_written_through(tmp_path: Path) -> None:
    target = _tree(tmp_path)
    real = target / "real_target.py"
    real.write_bytes((FIXES / SAFE).read_bytes())
    (target / SAFE).unlink()
    (target / SAFE).symlink_to(real)
    completed = run_kvlint("check", "--fix", "fixtures", cwd=tmp_path)
    assert "not fixed" not in completed.stderr, completed.stderr
    assert (target / SAFE).is_symlink() and real.read_bytes() != (FIXES / SAFE).read_bytes()


def test_a_file_named_on_the_command_line_through_a_symlink_is_fixed(tmp_path: Path) -> None:
    target = _tree(tmp_path / "tree")
    elsewhere = tmp_path / "link.py"
    elsewhere.symlink_to(target / SAFE)
    fixed = fix_file(str(elsewhere), CONFIG, INDEX, False, write=True, within=[elsewhere])
    assert not fixed.problem and (target / SAFE).read_bytes() != (FIXES / SAFE).read_bytes()


# ---------------------------------------------------------------------------- defect 7: read-only files


@pytest.mark.parametrize("mode", [0o444, 0o400, 0o555], ids=lambda mode: f"{mode:04o}")
def test_a_read_only_file_is_not_replaced(tmp_path: Path, mode: int) -> None:
    target = _tree(tmp_path) / SAFE
    target.chmod(mode)
    before = target.read_bytes()
    inode = target.stat().st_ino
    completed = run_kvlint("check", "--fix", "fixtures", cwd=tmp_path)
    assert target.read_bytes() == before and target.stat().st_ino == inode
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert f"{SAFE}: not fixed: the file is read-only (mode {mode:04o})" in completed.stderr
    assert completed.returncode == 1  # its findings are still reported


def test_a_file_the_user_may_not_write_is_not_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`os.access` as well as the mode: an ACL or a read-only mount denies what the bits allow."""
    target = _tree(tmp_path) / SAFE
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if mode == os.W_OK and
                        os.fspath(path).endswith(SAFE) else real_access(path, mode, **kw))
    monkeypatch.chdir(tmp_path)
    fixed = fix_file(f"fixtures/fixes/{SAFE}", CONFIG, INDEX, False, write=True, within=[Path("fixtures")])
    assert fixed.problem.startswith("not fixed: the file is read-only")
    assert target.read_bytes() == (FIXES / SAFE).read_bytes()


# ------------------------------------------------------------------------- defect 9: a FIFO in its place


def _without_hanging(work, fifo: Path) -> object:
    """Run `work` on a thread; if it blocks on the FIFO, open the FIFO's other end to free it, then fail."""
    result: list[object] = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(timeout=60)
    if thread.is_alive():
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(timeout=10)
        pytest.fail("the fix phase blocks on a FIFO put in a fixable file's place")
    return result[0]


def test_a_fifo_put_in_a_fixable_files_place_is_not_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _tree(tmp_path) / SAFE
    target.unlink()
    os.mkfifo(target)  # replaced after the run found its findings, before the fix phase
    monkeypatch.chdir(tmp_path)
    fixed = _without_hanging(lambda: fix_file(f"fixtures/fixes/{SAFE}", CONFIG, INDEX, False, write=True), target)
    assert fixed.problem == "not fixed: not a regular file"  # type: ignore[attr-defined]
    assert stat.S_ISFIFO(os.lstat(target).st_mode)


def test_a_fifo_put_there_while_fixing_is_not_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _tree(tmp_path) / SAFE
    real = kvlint.fixing.files.fix_source

    def racing(*args, **kwargs):  # type: ignore[no-untyped-def]
        outcome = real(*args, **kwargs)
        target.unlink()
        os.mkfifo(target)
        return outcome

    monkeypatch.setattr(kvlint.fixing.files, "fix_source", racing)
    monkeypatch.chdir(tmp_path)
    fixed = _without_hanging(lambda: fix_file(f"fixtures/fixes/{SAFE}", CONFIG, INDEX, False, write=True), target)
    assert fixed.problem  # type: ignore[attr-defined]
    assert stat.S_ISFIFO(os.lstat(target).st_mode)


# ------------------------------------------------------------------ defect 10: a save in the write window


@pytest.mark.parametrize("edit", ["append", "same size", "replace"])
def test_an_edit_saved_while_the_fix_is_written_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    target = _tree(tmp_path) / SAFE
    real_fsync = os.fsync
    saved = {"done": False}

    def save_meanwhile(fd: int) -> None:  # the editor saves while kvlint syncs its temporary file
        if not saved["done"]:
            saved["done"] = True
            text = target.read_text()
            if edit == "append":
                target.write_text(text + "# saved meanwhile\n")
            elif edit == "same size":
                target.write_text(text.replace("waiting", "WAITING", 1))
            else:  # an editor that writes a new file and renames it over the old one
                replacement = target.with_name("new.tmp")
                replacement.write_text(text + "# saved meanwhile\n")
                os.replace(replacement, target)
        real_fsync(fd)

    monkeypatch.setattr(kvlint.atomic.os, "fsync", save_meanwhile)
    monkeypatch.chdir(tmp_path)
    fixed = fix_file(f"fixtures/fixes/{SAFE}", CONFIG, INDEX, False, write=True)
    assert saved["done"]
    assert fixed.problem == "not fixed: the file changed on disk while kvlint wrote it"
    text = target.read_text()
    assert "# saved meanwhile" in text or "WAITING" in text
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]  # its temporary file removed

"""Check which files kvlint checks, which it reports as unreadable, and that none blocks it."""

from __future__ import annotations

import builtins
import io
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from kvlint.config import Config
from kvlint.running.discovery import (
    SourceFile,
    UnreadablePath,
    display_path,
    iter_python_files,
    read_source,
)

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def touch(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def within(seconds: float, work: Callable[[], object]) -> object:
    """Run `work` in a daemon thread and fail if it has not finished in time."""
    result: list[object] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert not thread.is_alive(), "blocked (a non-regular file was opened?)"
    if errors:
        raise errors[0]
    return result[0]


def found(paths: list[Path | str], config: Config | None = None) -> list[tuple[str, str]]:
    """Return (display path, reason or 'ok') for everything yielded."""
    given = [Path(p) for p in paths]
    items = within(10, lambda: list(iter_python_files(given, config or Config())))
    out = []
    for item in items:
        if isinstance(item, SourceFile):
            out.append((item.display_path, "ok"))
        else:
            assert isinstance(item, UnreadablePath)
            out.append((item.display_path, item.reason))
    return out


# --- display_path -----------------------------------------------------------------


def test_display_path(tmp_path: Path) -> None:
    assert display_path(tmp_path / "a" / "b.py", tmp_path) == "a/b.py"
    assert display_path(Path("a/./b.py"), tmp_path) == "a/b.py"
    assert display_path(tmp_path, tmp_path) == "."
    outside = tmp_path.parent / "other.py"
    assert display_path(outside, tmp_path) == outside.as_posix()
    assert display_path(tmp_path / "sub" / ".." / "x.py", tmp_path) == "x.py"


def test_display_path_defaults_to_the_cwd(tree: Path) -> None:
    assert display_path(Path("./pkg/mod.py")) == "pkg/mod.py"
    assert display_path(tree / "pkg" / "mod.py") == "pkg/mod.py"
    assert display_path(Path("../x.py")) == (tree.parent / "x.py").as_posix()


def test_display_path_of_a_sibling_with_a_common_prefix(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    sibling = tmp_path / "proj2" / "a.py"
    assert display_path(sibling, tmp_path / "proj") == sibling.as_posix()


# --- walking ----------------------------------------------------------------------


def test_walk_is_sorted_and_keeps_python_files_only(tree: Path) -> None:
    names = ["b.py", "a.py", "c.pyi", "notes.txt", "setup.PY"]
    names += ["pkg/z.py", "pkg/y.py", "pkg/sub/x.py"]
    for name in names:
        touch(tree / name)
    assert found(["."]) == [
        ("a.py", "ok"),
        ("b.py", "ok"),
        ("c.pyi", "ok"),
        ("pkg/sub/x.py", "ok"),
        ("pkg/y.py", "ok"),
        ("pkg/z.py", "ok"),
    ]


@pytest.mark.parametrize("top", [".", "./pkg", "pkg/", "pkg/../pkg", "ABSOLUTE", "../OUTSIDE"])
def test_walked_files_are_shown_as_display_path_shows_them(
    tree: Path, top: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The walk derives each file's display path from its directory's; it must match `display_path`."""
    outside = tmp_path_factory.mktemp("outside")
    for directory in (tree / "pkg", outside):
        touch(directory / "a.py")
        touch(directory / "sub" / "b.py")
    top = top.replace("ABSOLUTE", str(tree / "pkg")).replace("OUTSIDE", os.path.relpath(outside, tree.parent))
    entries = list(iter_python_files([Path(top)], Config()))
    assert len(entries) == 2
    assert [entry.display_path for entry in entries] == [display_path(entry.path) for entry in entries]
    # the path as found is what its `Path` spells (the run's record keys each file by it): no `./` of the walk
    assert [entry.location for entry in entries] == [os.fspath(Path(entry.location)) for entry in entries]
    assert all(isinstance(entry, SourceFile) and entry.path == Path(entry.location) for entry in entries)


def test_no_paths_means_the_cwd(tree: Path) -> None:
    touch(tree / "a.py")
    assert found([]) == [("a.py", "ok")]


def test_explicit_files_any_suffix_in_the_given_order(tree: Path) -> None:
    touch(tree / "script")
    touch(tree / "b.py")
    touch(tree / "a.txt")
    expected = [("script", "ok"), ("b.py", "ok"), ("a.txt", "ok")]
    assert found(["script", "b.py", "a.txt"]) == expected


def test_explicit_paths_keep_their_order_around_directories(tree: Path) -> None:
    touch(tree / "z.py")
    touch(tree / "d" / "b.py")
    touch(tree / "d" / "a.py")
    assert found(["z.py", "d"]) == [("z.py", "ok"), ("d/a.py", "ok"), ("d/b.py", "ok")]


def test_duplicates_are_yielded_once(tree: Path) -> None:
    touch(tree / "pkg" / "a.py")
    touch(tree / "pkg" / "b.py")
    (tree / "alias.py").symlink_to(tree / "pkg" / "a.py")
    absolute = str(tree / "pkg" / "a.py")
    result = found(["pkg/a.py", "./pkg/a.py", absolute, "alias.py", "pkg", "pkg", "nope", "nope"])
    assert result == [("pkg/a.py", "ok"), ("pkg/b.py", "ok"), ("nope", "no such file or directory")]


def test_nonexistent_path(tree: Path) -> None:
    assert found(["missing.py", "missing_dir"]) == [
        ("missing.py", "no such file or directory"),
        ("missing_dir", "no such file or directory"),
    ]


def test_file_used_as_directory(tree: Path) -> None:
    touch(tree / "a.py")
    assert found(["a.py/b.py"]) == [("a.py/b.py", "not a directory")]


def test_directory_named_like_a_python_file_is_walked(tree: Path) -> None:
    touch(tree / "x.py" / "inner.py")
    touch(tree / "x.py" / "data.txt")
    assert found(["."]) == [("x.py/inner.py", "ok")]
    assert found(["x.py"]) == [("x.py/inner.py", "ok")]


def test_skipped_directories(tree: Path) -> None:
    for name in [
        ".git", ".hg", ".svn", ".bzr", ".eggs", ".venv", "venv", "__pycache__", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", ".tox", ".nox", "build", "dist",
        "node_modules", "site-packages", "kvlint.egg-info",
    ]:
        touch(tree / name / "mod.py")
    touch(tree / "src" / "build" / "deep.py")
    touch(tree / "src" / "ok.py")
    assert found(["."]) == [("src/ok.py", "ok")]


def test_virtualenv_detection(tree: Path) -> None:
    touch(tree / "env" / "lib" / "mod.py")
    touch(tree / "myenv" / "pyvenv.cfg")
    touch(tree / "myenv" / "lib" / "mod.py")
    touch(tree / "environment" / "mod.py")
    assert found(["."]) == [("env/lib/mod.py", "ok"), ("environment/mod.py", "ok")]
    touch(tree / "env" / "pyvenv.cfg")
    assert found(["."]) == [("environment/mod.py", "ok")]


def test_explicit_paths_inside_skipped_directories_are_checked(tree: Path) -> None:
    touch(tree / "build" / "gen.py")
    touch(tree / "build" / "sub" / "more.py")
    expected = [("build/gen.py", "ok"), ("build/sub/more.py", "ok")]
    assert found(["build/gen.py", "build"]) == expected


def test_config_exclude_applies_to_walked_and_explicit_paths(tree: Path) -> None:
    touch(tree / "pkg" / "keep.py")
    touch(tree / "pkg" / "msg_pb2.py")
    touch(tree / "third_party" / "lib.py")
    touch(tree / "vllm" / "legacy" / "old.py")
    touch(tree / "vllm" / "new.py")
    config = Config(exclude=("*_pb2.py", "third_party", "vllm/legacy"), root=tree)
    assert found(["."], config) == [("pkg/keep.py", "ok"), ("vllm/new.py", "ok")]
    explicit = ["pkg/msg_pb2.py", "third_party/lib.py", "vllm/legacy", "vllm/legacy/old.py"]
    assert found(explicit, config) == []


def test_excluded_missing_path_is_not_reported(tree: Path) -> None:
    assert found(["third_party/gone.py"], Config(exclude=("third_party",), root=tree)) == []


# --- symlinks ---------------------------------------------------------------------


def test_directory_symlinks_are_not_followed_while_walking(tree: Path) -> None:
    touch(tree / "real" / "a.py")
    (tree / "src").mkdir()
    (tree / "src" / "link").symlink_to(tree / "real", target_is_directory=True)
    (tree / "src" / "link.py").symlink_to(tree / "real", target_is_directory=True)
    (tree / "src" / "self").symlink_to(tree / "src", target_is_directory=True)
    assert found(["src"]) == []


def test_an_explicit_directory_symlink_is_walked(tree: Path) -> None:
    touch(tree / "real" / "a.py")
    (tree / "link").symlink_to(tree / "real", target_is_directory=True)
    assert found(["link"]) == [("link/a.py", "ok")]


def test_file_symlinks_are_followed_to_regular_files(tree: Path) -> None:
    touch(tree / "elsewhere" / "target.txt")
    (tree / "src").mkdir()
    (tree / "src" / "a.py").symlink_to(tree / "elsewhere" / "target.txt")
    (tree / "src" / "b.txt").symlink_to(tree / "elsewhere" / "target.txt")
    assert found(["src"]) == [("src/a.py", "ok")]


def test_dangling_symlink(tree: Path) -> None:
    (tree / "src").mkdir()
    (tree / "src" / "gone.py").symlink_to(tree / "nowhere.py")
    (tree / "src" / "gone.txt").symlink_to(tree / "nowhere.txt")
    (tree / "top.py").symlink_to(tree / "nowhere.py")
    assert found(["src"]) == [("src/gone.py", "dangling symlink")]
    assert found(["top.py"]) == [("top.py", "dangling symlink")]


def test_symlink_loop(tree: Path) -> None:
    (tree / "src").mkdir()
    (tree / "src" / "a.py").symlink_to(tree / "src" / "b.py")
    (tree / "src" / "b.py").symlink_to(tree / "src" / "a.py")
    (tree / "src" / "self.py").symlink_to(tree / "src" / "self.py")
    assert found(["src"]) == [
        ("src/a.py", "symlink loop"),
        ("src/b.py", "symlink loop"),
        ("src/self.py", "symlink loop"),
    ]
    assert found(["src/self.py"]) == [("src/self.py", "symlink loop")]


# --- non-regular files ------------------------------------------------------------


@needs_fifo
def test_fifo_found_by_walking_is_reported_not_opened(tree: Path) -> None:
    touch(tree / "src" / "a.py")
    os.mkfifo(tree / "src" / "b.py")
    os.mkfifo(tree / "src" / "pipe")
    assert found(["src"]) == [("src/a.py", "ok"), ("src/b.py", "not a regular file")]


@needs_fifo
def test_discovery_opens_no_file_at_all(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    touch(tree / "src" / "a.py")
    os.mkfifo(tree / "src" / "b.py")
    os.mkfifo(tree / "c.py")
    opened: list[object] = []

    def spy(real: Callable[..., object]) -> Callable[..., object]:
        def wrapper(file: object, *args: object, **kwargs: object) -> object:
            opened.append(file)
            return real(file, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(builtins, "open", spy(builtins.open))
    monkeypatch.setattr(io, "open", spy(io.open))
    monkeypatch.setattr(os, "open", spy(os.open))
    assert found(["src", "c.py"]) == [
        ("src/a.py", "ok"),
        ("src/b.py", "not a regular file"),
        ("c.py", "not a regular file"),
    ]
    assert opened == []


@needs_fifo
def test_explicit_fifo_is_reported_not_opened(tree: Path) -> None:
    os.mkfifo(tree / "x.py")
    assert found(["x.py"]) == [("x.py", "not a regular file")]


@needs_fifo
def test_symlink_to_a_fifo_is_reported_not_opened(tree: Path) -> None:
    os.mkfifo(tree / "pipe")
    (tree / "src").mkdir()
    (tree / "src" / "x.py").symlink_to(tree / "pipe")
    assert found(["src"]) == [("src/x.py", "not a regular file")]


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_device_is_not_a_regular_file(tree: Path) -> None:
    assert found(["/dev/null"]) == [("/dev/null", "not a regular file")]


def test_directory_that_cannot_be_listed_is_reported(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tree / "a.py")
    touch(tree / "locked" / "b.py")
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        if os.path.basename(path) == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert found(["."]) == [("a.py", "ok"), ("locked", "permission denied")]


# --- read_source ------------------------------------------------------------------


def test_read_source(tree: Path) -> None:
    data = b"# coding: latin-1\nx = '\xe9'\r\n\x00"
    (tree / "a.py").write_bytes(data)
    assert read_source(Path("a.py")) == data
    (tree / "big.py").write_bytes(b"x" * (3 << 20))
    assert len(read_source(tree / "big.py")) == 3 << 20


def test_read_source_errors_are_oserrors(tree: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_source(tree / "missing.py")
    (tree / "d").mkdir()
    with pytest.raises(OSError):
        read_source(tree / "d")


@needs_fifo
def test_read_source_never_blocks_on_a_fifo(tree: Path) -> None:
    os.mkfifo(tree / "x.py")
    with pytest.raises(OSError, match="not a regular file"):
        within(5, lambda: read_source(tree / "x.py"))


def test_read_source_reads_a_file_in_one_read_and_a_growing_one_to_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os as os_module

    from kvlint.running import discovery

    path = tmp_path / "m.py"
    path.write_bytes(b"x = 1\n" * 1000)
    reads: list[int] = []
    real_read = os_module.read

    def counted(fd: int, size: int) -> bytes:
        reads.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(discovery.os, "read", counted)
    assert discovery.read_source(path) == b"x = 1\n" * 1000 and reads == [6001]
    real_fstat = os_module.fstat
    monkeypatch.setattr(discovery.os, "fstat", lambda fd: os_module.stat_result((*real_fstat(fd)[:6], 10, 0, 0, 0)))
    reads.clear()  # a status that says less than the file holds (it grew since): every byte all the same
    assert discovery.read_source(path) == b"x = 1\n" * 1000 and len(reads) > 1

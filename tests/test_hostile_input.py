"""No crash, no lost file, no surprise: every nasty input is a one-line diagnostic and the run goes on.

Each case is checked in one run together with `canary.py` (a plain bug), so a
case that took the run down, hung or hid other files would fail here.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kvlint.running import runner
from kvlint.config import Config
from tests.conftest import FIXTURES, ROOT, finding_lines, run_kvlint

NASTY = FIXTURES / "nasty"
CANARY = (
    "canary.py:3:12: KVC001 `out.kv_connector_output` may be None; "
    "check it before the attribute access `.finished_sending`"
)
HEADER = "from vllm.v1.outputs import KVConnectorOutput\n"


def _finding(name: str) -> str:
    return CANARY.replace("canary.py:3:", f"{name}:")


EXPECTED = {
    "syntax_error.py": "syntax_error.py:2:9: KVC900 cannot parse: '(' was never closed",
    "invalid_utf8.py": "invalid_utf8.py:2:6: KVC900 cannot decode as utf-8: invalid continuation byte at byte 51",
    "latin1_cookie.py": _finding("latin1_cookie.py:5"),
    "utf8_bom.py": _finding("utf8_bom.py:3"),
    "nul_byte.py": "nul_byte.py:2:6: KVC900 cannot parse: source contains a NUL byte",
    "crlf.py": _finding("crlf.py:3"),
    "lone_cr.py": _finding("lone_cr.py:3"),
    "form_feed.py": _finding("form_feed.py:4"),
    "inconsistent_tabs.py": "inconsistent_tabs.py:4:1: KVC900 cannot parse: "
    "inconsistent use of tabs and spaces in indentation",
    "python2.py": "python2.py:2:1: KVC900 cannot parse: "
    "Missing parentheses in call to 'print'. Did you mean print(...)?",
    "empty.py": None,
    "newer_syntax.py": _finding("newer_syntax.py:6"),
    "no_final_newline.py": _finding("no_final_newline.py:3"),
    "utf16.py": "utf16.py:1:1: KVC900 cannot decode: UTF-16 (byte order mark); Python source must be UTF-8 "
    "or an ASCII-compatible encoding named in a coding cookie",
    "unknown_codec.py": "unknown_codec.py:1:1: KVC900 cannot decode: "
    "unknown encoding 'no-such-codec' in the coding cookie",
}


@pytest.fixture
def nasty(tmp_path: Path) -> Path:
    tree = tmp_path / "nasty"
    shutil.copytree(NASTY, tree, symlinks=True)
    (tree / "README.md").unlink()
    return tree


def _check(tree: Path, *args: str) -> list[str]:
    completed = run_kvlint("check", *args, cwd=tree)
    assert "Traceback" not in completed.stderr
    assert completed.returncode in (0, 1), completed.stderr
    return finding_lines(completed.stdout)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_committed_nasty_file(nasty: Path, name: str) -> None:
    lines = _check(nasty, name, "canary.py")
    expected = [EXPECTED[name]] if EXPECTED[name] else []
    assert sorted(lines) == sorted([*expected, CANARY])


def test_whole_nasty_tree_in_one_run(nasty: Path) -> None:
    lines = _check(nasty)
    assert lines == sorted([CANARY, *filter(None, EXPECTED.values())])


def test_directory_named_like_a_module_is_walked_not_read(nasty: Path) -> None:
    assert _check(nasty, "dir_named.py", "canary.py") == [CANARY]


def test_symlink_loop_and_dangling_symlink(nasty: Path) -> None:
    os.symlink("loop_b.py", nasty / "loop_a.py")
    os.symlink("loop_a.py", nasty / "loop_b.py")
    os.symlink("missing_target.py", nasty / "dangling.py")
    lines = _check(nasty, "loop_a.py", "dangling.py", "canary.py")
    assert sorted(lines) == sorted(
        [
            "dangling.py:1:1: KVC901 cannot read: dangling symlink",
            "loop_a.py:1:1: KVC901 cannot read: symlink loop",
            CANARY,
        ]
    )


def test_directory_symlinks_are_not_followed(nasty: Path) -> None:
    os.symlink(".", nasty / "self_link")
    assert CANARY in _check(nasty)
    assert not any(line.startswith("self_link/") for line in _check(nasty))


def test_fifo_named_like_a_module_does_not_hang(nasty: Path) -> None:
    os.mkfifo(nasty / "pipe.py")
    started = time.monotonic()
    lines = _check(nasty, "pipe.py", "canary.py")
    assert time.monotonic() - started < 60
    assert sorted(lines) == sorted(["pipe.py:1:1: KVC901 cannot read: not a regular file", CANARY])
    assert "pipe.py:1:1: KVC901 cannot read: not a regular file" in _check(nasty)


def test_file_given_twice_is_checked_once(nasty: Path) -> None:
    assert _check(nasty, "canary.py", "./canary.py", str(nasty / "canary.py")) == [CANARY]


def test_missing_path_is_a_usage_error(nasty: Path) -> None:
    completed = run_kvlint("check", "canary.py", "gone.py", cwd=nasty)
    assert completed.returncode == 2
    assert completed.stderr == "kvlint: gone.py: no such file or directory\n"


def _unprivileged(command: list[str]) -> list[str]:
    """Run a command without the capabilities that let root read any file."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root needs util-linux's setpriv to test an unreadable file")
    drop = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}", *command]


def _check_unprivileged(tree: Path) -> subprocess.CompletedProcess[str]:
    """`kvlint check .` in `tree`, run without the capabilities that let root read anything."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    command = _unprivileged([sys.executable, "-m", "kvlint", "check", "."])
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=120, env=environment)


def test_unreadable_file_as_an_unprivileged_user(tmp_path: Path) -> None:
    shutil.copy(NASTY / "canary.py", tmp_path / "canary.py")
    secret = tmp_path / "secret.py"
    secret.write_text(HEADER)
    secret.chmod(0)
    completed = _check_unprivileged(tmp_path)
    assert completed.returncode == 1, completed.stderr
    assert finding_lines(completed.stdout) == [CANARY, "secret.py:1:1: KVC901 cannot read: permission denied"]


def test_unlistable_directory_as_an_unprivileged_user(tmp_path: Path) -> None:
    shutil.copy(NASTY / "canary.py", tmp_path / "canary.py")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "hidden.py").write_text(HEADER)
    locked.chmod(0)
    try:
        completed = _check_unprivileged(tmp_path)
    finally:
        locked.chmod(0o755)
    assert completed.returncode == 1, completed.stderr
    assert finding_lines(completed.stdout) == [CANARY, "locked:1:1: KVC901 cannot read: permission denied"]


def test_file_that_vanishes_during_the_run(nasty: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_read = runner.read_source

    def vanishing_read(path: Path | str) -> bytes:
        if Path(path).name == "utf8_bom.py":
            Path(path).unlink()
        return real_read(path)

    monkeypatch.setattr(runner, "read_source", vanishing_read)
    monkeypatch.chdir(nasty)
    result = runner.run([Path("utf8_bom.py"), Path("canary.py")], Config(), jobs=1)
    assert [(f.path, f.code, f.message) for f in result.findings] == [
        ("canary.py", "KVC001", CANARY.split(" KVC001 ")[1]),
        ("utf8_bom.py", "KVC901", "cannot read: no such file or directory"),
    ]


def test_huge_file_is_capped_with_a_diagnostic(nasty: Path) -> None:
    line = "kv_connector_output_table = [" + ", ".join(["1"] * 20) + "]\n"
    (nasty / "huge.py").write_text(HEADER + line * (10 * 2**20 // len(line)))
    started = time.monotonic()
    lines = _check(nasty, "huge.py", "canary.py")
    assert time.monotonic() - started < 60
    assert lines == [CANARY, "huge.py:1:1: KVC900 not analysed: 10.0 MiB is over kvlint's 8 MiB limit per file"]


def test_one_megabyte_single_line_is_analysed(nasty: Path) -> None:
    (nasty / "long_line.py").write_text(HEADER + "x = [" + "1, " * 330_000 + "]; y = out.kv_connector_output.z\n")
    started = time.monotonic()
    lines = _check(nasty, "long_line.py", "canary.py")
    assert time.monotonic() - started < 120
    assert lines[0] == CANARY
    assert lines[1].startswith("long_line.py:2:") and "KVC001" in lines[1]


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        (
            "brackets.py",
            "x = " + "(" * 2000 + "kv_connector_output" + ")" * 2000 + "\n",
            "brackets.py:2:205: KVC900 cannot parse: too many nested parentheses",
        ),
        (
            "plus_chain.py",
            "x = " + " + ".join(["kv_connector_output"] * 10_000) + "\n",
            "plus_chain.py:1:1: KVC900 cannot parse: too deeply nested",
        ),
        (
            "call_chain.py",
            "x = kv_connector_output" + "()" * 5000 + "\n",
            "call_chain.py:1:1: KVC900 cannot parse: too deeply nested",
        ),
        (
            "deep_blocks.py",
            "".join("    " * i + "if kv_connector_output:\n" for i in range(120)) + "    " * 120 + "pass\n",
            "deep_blocks.py:102:1: KVC900 cannot parse: too many levels of indentation",
        ),
    ],
)
def test_deeply_nested_code_is_a_diagnostic_not_a_crash(nasty: Path, name: str, source: str, expected: str) -> None:
    (nasty / name).write_text(HEADER + source)
    assert _check(nasty, name, "canary.py") == sorted([expected, CANARY])


def test_deep_code_that_parses_is_analysed_on_the_big_stack(nasty: Path) -> None:
    """190 nested brackets pass CPython's limit; the flow analysis must survive them."""
    nested = "(" * 190 + "out.kv_connector_output.finished_sending" + ")" * 190
    (nasty / "deep_ok.py").write_text(HEADER + f"def step(out):\n    return {nested}\n")
    lines = _check(nasty, "deep_ok.py", "canary.py")
    assert lines[0] == CANARY
    assert lines[1].startswith("deep_ok.py:3:") and "KVC001" in lines[1]


def test_the_analysis_thread_runs_each_piece_of_work_there_and_hands_back_its_answer_or_error() -> None:
    """`engine._AnalysisThread`: one thread, not the caller's, with the large stack; what the work returns comes
    back, what it raises is raised in the caller, and the thread serves the next piece after either."""
    import threading

    from kvlint import engine

    thread = engine._AnalysisThread()
    assert thread.run(threading.get_ident) == thread.ident != threading.get_ident()
    with pytest.raises(ZeroDivisionError):
        thread.run(lambda: 1 / 0)
    assert thread.run(lambda: "next") == "next"
    assert engine._run_with_deep_stack(threading.get_ident) == engine._analysis_thread

    def depth(n: int) -> int:
        return 0 if n == 0 else 1 + depth(n - 1)

    assert engine._run_with_deep_stack(lambda: depth(15_000)) == 15_000  # past the ordinary stack's reach
    with pytest.raises(engine.SourceError, match="too deeply nested"):
        engine._run_with_deep_stack(lambda: depth(10**6))


def _crash_on_poison(item: tuple[str, int]) -> str:
    name, _ = item
    if name == "poison":
        faulthandler.disable()  # pytest's handler would print the deliberate crash as if it were a real one
        os.kill(os.getpid(), signal.SIGSEGV)
    return name.upper()


def test_a_worker_that_dies_costs_only_its_own_file() -> None:
    """The pool retries a crashed worker's item alone; other items complete."""
    items = [("a", 0), ("b", 0), ("poison", 0), ("c", 0), ("d", 0)]
    with runner._Pool(jobs=2, size=len(items)) as pool:
        assert pool.parallel
        results = pool.map(_crash_on_poison, items, on_crash=lambda item: "crashed")
    assert results[:2] == ["A", "B"] and results[3:] == ["C", "D"]
    assert results[2] == "crashed"


def test_no_code_from_the_analysed_tree_is_executed(tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    payload = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    for name in ("conftest.py", "setup.py", "__init__.py", "module.py"):
        (tmp_path / name).write_text(HEADER + payload + "def step(out):\n    return out.kv_connector_output.x\n")
    (tmp_path / "pyproject.toml").write_text("[tool.kvlint]\nselect = ['KVC001']\n")
    completed = run_kvlint("check", ".", cwd=tmp_path)
    assert completed.returncode == 1
    assert not marker.exists()


def test_nothing_is_written(nasty: Path) -> None:
    def snapshot() -> dict[str, tuple[int, int]]:
        return {str(p): (p.lstat().st_mtime_ns, p.lstat().st_size) for p in nasty.rglob("*")}

    before = snapshot()
    _check(nasty)
    run_kvlint("check", "--format", "json", cwd=nasty)
    assert snapshot() == before


def _slow_tree(directory: Path) -> None:
    """A tree that takes kvlint well over a second: many files of many relevant functions."""
    function = (
        "def step_{0}(out):\n    kvo = out.kv_connector_output\n    if kvo is None:\n        return None\n"
        "    return kvo.finished_sending or ()\n\n\n"
    )
    body = HEADER + "".join(function.format(number) for number in range(150))
    for number in range(300):
        (directory / f"m{number:03}.py").write_text(body)


def test_ctrl_c_stops_cleanly_with_exit_130(tmp_path: Path) -> None:
    _slow_tree(tmp_path)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "kvlint", "check", "--jobs", "2", "."],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    stdout, stderr = process.communicate(timeout=60)
    if process.returncode in (0, 1):
        pytest.fail("the run finished before Ctrl-C arrived; make the tree larger")
    assert process.returncode == 130
    assert "Traceback" not in stderr
    assert stderr.strip() == "kvlint: interrupted"


def test_sigterm_never_leaves_a_truncated_output(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    _slow_tree(tree)
    report = tmp_path / "report.json"
    report.write_text("previous report\n")
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "kvlint", "audit", "--format", "json", "--output", str(report), "--jobs", "2", "."],
        cwd=tree,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    if process.returncode in (0, 1):
        pytest.fail("the run finished before SIGTERM arrived; make the tree larger")
    assert process.returncode == 143
    assert "Traceback" not in stderr
    assert report.read_text() == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json", "tree"]  # no temporary file left

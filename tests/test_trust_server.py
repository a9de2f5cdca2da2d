"""`kvlint server` ends when told (issue 29, defects 4 and 5, and the stale index builds).

SIGTERM and SIGINT used to print "terminated" and leave the process alive until the client closed stdin;
`exit` and the end of stdin waited for a running workspace index (58-95 s with a folder of `/`). The
timeouts here are hang detectors, generous for a shared machine: the old server outlived each of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import kvlint.server.project as project_module
from kvlint.config import Config
from kvlint.server.project import ProjectIndex
from tests.conftest import ROOT

HANG = 30  # seconds: the server must be gone well within this
RELEVANT = "def f(out):\n    return out.kv_connector_output\n"

# the real `kvlint server`, with an index build that takes a second per file (a folder of `/`, in small)
SLOW_INDEX = """\
import sys, time
sys.path.insert(0, {root!r})
import kvlint.server.project as project
real = project.IndexedFile.of.__func__
def slow(cls, *args, **kwargs):
    print("indexing a file", file=sys.stderr, flush=True)
    time.sleep(1)
    return real(cls, *args, **kwargs)
project.IndexedFile.of = classmethod(slow)
from kvlint.cli import main
sys.exit(main(["server"]))
"""


def _message(payload: dict[str, object]) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


def _server(*command: str, cwd: Path) -> subprocess.Popen[bytes]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(list(command) or [sys.executable, "-m", "kvlint", "server"], cwd=cwd, env=environment,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _ends(process: subprocess.Popen[bytes], what: str) -> int:
    try:
        return process.wait(timeout=HANG)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"kvlint server still runs {HANG} s after {what}")
    finally:
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def _initialize(process: subprocess.Popen[bytes], folder: Path) -> None:
    assert process.stdin is not None
    process.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": None, "rootUri": folder.as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": folder.as_uri(), "name": "w"}]}}))
    process.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    process.stdin.flush()


def _started(process: subprocess.Popen[bytes]) -> None:
    """Wait until the server answers `initialize` (its imports are done and it serves)."""
    assert process.stdout is not None
    header = process.stdout.readline()
    assert header.startswith(b"Content-Length"), header


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"])
def test_a_signal_ends_the_server_while_stdin_is_open(tmp_path: Path, signum: int, status: int) -> None:
    process = _server(cwd=tmp_path)
    _initialize(process, tmp_path)
    _started(process)
    process.send_signal(signum)
    assert _ends(process, f"signal {signum} with stdin open") == status


def _slow_tree(root: Path, files: int = 300) -> Path:
    root.mkdir()
    (root / ".git").mkdir()
    for index in range(files):
        (root / f"m{index}.py").write_text(RELEVANT)
    return root


@pytest.mark.parametrize("how", ["exit", "end of stdin", "SIGTERM"])
def test_the_server_does_not_wait_for_a_running_index_build(tmp_path: Path, how: str) -> None:
    folder = _slow_tree(tmp_path / "w")  # 300 s of indexing
    process = _server(sys.executable, "-c", SLOW_INDEX.format(root=str(ROOT)), cwd=tmp_path)
    _initialize(process, folder)
    _started(process)
    assert process.stderr is not None
    assert b"indexing a file" in process.stderr.readline()  # the build is running
    assert process.stdin is not None
    if how == "exit":
        process.stdin.write(_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        process.stdin.write(_message({"jsonrpc": "2.0", "method": "exit"}))
        process.stdin.flush()
        assert _ends(process, "shutdown and exit during an index build") == 0
    elif how == "end of stdin":
        process.stdin.close()
        assert _ends(process, "the end of stdin during an index build") == 1
    else:
        process.send_signal(signal.SIGTERM)
        assert _ends(process, "SIGTERM during an index build") == 143


# ---------------------------------------------------------------------------------------- cancellation


def test_a_cancelled_build_stops_at_its_next_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _slow_tree(tmp_path / "w", files=50)
    index = ProjectIndex(folder, Config())
    real = project_module.IndexedFile.of.__func__  # type: ignore[attr-defined]
    read: list[Path] = []

    def cancelling(cls, source, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(path)
        index.cancel()  # the folder was removed while its first file was read
        return real(cls, source, path, *args, **kwargs)

    monkeypatch.setattr(project_module.IndexedFile, "of", classmethod(cancelling))
    index.build()
    assert len(read) == 1 and index.index is None


def test_adding_and_removing_a_folder_runs_no_stale_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pygls")
    from kvlint.server.language_server import KvlintLanguageServer

    folder = _slow_tree(tmp_path / "w", files=20)
    real = project_module.IndexedFile.of.__func__  # type: ignore[attr-defined]
    read: list[Path] = []

    def counting(cls, source, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(path)
        return real(cls, source, path, *args, **kwargs)

    monkeypatch.setattr(project_module.IndexedFile, "of", classmethod(counting))

    async def scenario() -> None:
        server = KvlintLanguageServer()
        for _ in range(10):
            server.set_folders([folder])
            server.set_folders([])
        server.set_folders([folder])
        while server.tasks:
            await asyncio.gather(*list(server.tasks), return_exceptions=True)
        assert server.projects[str(folder)].index is not None
        server.stop_threads()

    asyncio.run(scenario())
    assert len(read) <= 2 * 20  # the last build, and at most the one that had started (11 builds before)


# ------------------------------------------------------------------------------------ JSON-RPC replies


def _replies(process: subprocess.Popen[bytes], count: int) -> list[dict[str, object]]:
    """The next `count` messages with an id (replies), skipping the server's notifications."""
    assert process.stdout is not None
    found: list[dict[str, object]] = []
    while len(found) < count:
        header = process.stdout.readline()
        assert header.startswith(b"Content-Length: "), header
        length = int(header.split(b":")[1])
        while process.stdout.readline() not in (b"\r\n", b""):
            pass
        message = json.loads(process.stdout.read(length))
        if "id" in message and "method" not in message:
            found.append(message)
    return found


HOVER = {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}


def test_every_request_gets_a_reply_even_an_unreadable_one(tmp_path: Path) -> None:
    process = _server(cwd=tmp_path)
    assert process.stdin is not None
    send = process.stdin.write
    send(_message({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": HOVER}))
    send(_message({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "processId": None, "rootUri": None, "capabilities": {}}}))
    send(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    send(b"Content-Length: 16\r\n\r\nthis is not json")
    send(_message({"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {"bogus": 1}}))
    send(_message({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}))
    send(_message({"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover", "params": HOVER}))
    process.stdin.flush()
    replies = _replies(process, 6)
    process.stdin.write(_message({"jsonrpc": "2.0", "method": "exit"}))
    process.stdin.flush()
    assert _ends(process, "exit") == 0
    by_id = {reply["id"]: reply for reply in replies}
    assert by_id[1]["error"]["code"] == -32002  # type: ignore[index]
    assert "result" in by_id[2]
    assert by_id[None]["error"]["code"] == -32700  # type: ignore[index]
    assert by_id[3]["error"]["code"] == -32602  # type: ignore[index]
    assert by_id[4] == {"jsonrpc": "2.0", "id": 4, "result": None} or by_id[4].get("result") is None
    assert by_id[5]["error"]["code"] == -32600  # type: ignore[index]

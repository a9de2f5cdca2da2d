"""How long after a one-line edit do the diagnostics arrive in the editor? (issues 13 and 27)

Starts `kvlint server` on the newest vLLM release's tree (0.33.0, from the test
suite's source cache: `tests/support/vllm_sources.py`) through the same LSP client the
end-to-end tests use (`tests/support/lsp_session.py`, pygls' client over stdio), opens
its largest runner file, `vllm/v1/worker/gpu_model_runner.py` (7,192 lines),
waits until the workspace's tree index is built and the file re-checked
against it, then makes one-line edits inside `execute_model`, a function the
engine analyses (a comment added at the end of a line, then removed), each
sent as one incremental `didChange`. The figure is the time from sending the
change to receiving the `publishDiagnostics` for that version, debounce
included (the server waits only before a full analysis: these edits re-analyse
`execute_model` alone, `kvlint/server/incremental.py`); the server's CPU time
over the edits comes from `/proc`. The client waits `--pause` seconds between
edits, as a typist who stops. `--phases` then times the server's own steps for
the same text in this process. `neovim_latency.py` makes the same edits in a real
Neovim. Run it with the development venv's Python:

    .venv/bin/python bench/server_latency.py [--edits 30] [--pause 0.3] [--phases]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lsprotocol import types  # noqa: E402

from tests.support.lsp_session import Session  # noqa: E402
from tests.support.vllm_sources import vllm_tree  # noqa: E402

RELEASE = "0.33.0"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"


def _edited_line(text: str) -> int:
    """A line inside `execute_model` that mentions `kv_connector_output` (0-based)."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.lstrip().startswith("def execute_model("))
    return next(n for n in range(start, len(lines)) if "kv_connector_output" in lines[n])


async def measure(tree: Path, edits: int, pause: float) -> dict[str, object]:
    path = tree / RUNNER
    started = time.perf_counter()
    async with Session(tree) as session:
        uri = session.open(path)
        first = await session.diagnostics(uri)
        opened = time.perf_counter() - started
        await session.until(lambda: any("indexed" in log.message for log in session.logs), "the tree index")
        indexed = time.perf_counter() - started
        await session.until(lambda: len(session.published.get(uri, [])) >= 2, "the re-check against the index")
        baseline = list(session.published[uri][-1].diagnostics)
        line = _edited_line(session.texts[uri])
        end = len(session.texts[uri].splitlines()[line])
        latencies: list[float] = []
        pid = session.client._server.pid
        for number in range(edits + 3):  # the first three warm the server up
            if number == 3:
                ticks = _cpu_ticks(pid)
            added = number % 2 == 0
            comment = "  # an edit"
            if added:
                change = types.TextEdit(types.Range(types.Position(line, end), types.Position(line, end)), comment)
            else:
                change = types.TextEdit(
                    types.Range(types.Position(line, end), types.Position(line, end + len(comment))), "")
            sent = time.perf_counter()
            version = session.edit(uri, [change])
            found = await session.diagnostics(uri, version)
            arrived = session.arrivals[uri][-1]
            assert len(found) == len(baseline), (found, baseline)
            if number >= 3:
                latencies.append(arrived - sent)
            await asyncio.sleep(pause)
        cpu = (_cpu_ticks(pid) - ticks) / os.sysconf("SC_CLK_TCK") / edits
        bursts: list[float] = []
        for _ in range(5):  # typing: ten keystrokes 40 ms apart, then the time from the last to the diagnostics
            for key in range(10):
                at = types.Position(line, end + key)
                version = session.edit(uri, [types.TextEdit(types.Range(at, at), "x")])
                sent = time.perf_counter()
                await asyncio.sleep(0.04)
            await session.diagnostics(uri, version)
            bursts.append(session.arrivals[uri][-1] - sent)
            typed = types.Range(types.Position(line, end), types.Position(line, end + 10))
            await session.diagnostics(uri, session.edit(uri, [types.TextEdit(typed, "")]))
            await asyncio.sleep(pause)
        memory = _peak_rss_mib(session.client._server.pid)
    return {"memory": memory, "bursts": bursts, "first": first, "opened": opened, "indexed": indexed,
            "latencies": latencies, "findings": len(baseline), "returncode": session.returncode, "cpu": cpu}


def _cpu_ticks(pid: int) -> int:
    """The process's user and system CPU time so far, in clock ticks (Linux `/proc`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def _peak_rss_mib(pid: int) -> float:
    """The server process's peak resident memory so far (Linux `/proc`)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def phases(tree: Path, rounds: int = 5) -> None:
    """The server's steps for one edited text, timed in this process (the index built as the server builds it)."""
    from kvlint.running.collector import collect_garbage_rarely
    from kvlint.config import load_config
    from kvlint.engine import analyse_prepared, prepare_source
    from kvlint.source import module_name_for
    from kvlint.server.analysis import analyse_text
    from kvlint.server.project import IndexedFile, ProjectIndex

    collect_garbage_rarely()  # as `kvlint server` runs (it starts through `kvlint.cli.main`)
    config = load_config([tree])
    project = ProjectIndex(tree, config)
    started = time.perf_counter()
    project.build()
    print(f"index build: {time.perf_counter() - started:.3f} s ({len(project.files)} files)")
    path = tree / RUNNER
    text = path.read_text()
    module_name, is_package = module_name_for(path)
    names = tuple(sorted(project.index.candidate_names()))
    lines = text.splitlines(keepends=True)
    line = _edited_line(text)
    previous = analyse_text(path.as_uri(), -1, text, path, config, project)
    for round_ in range(rounds):
        edited = "".join([*lines[:line], lines[line].rstrip("\n") + f"  # edit {round_}\n", *lines[line + 1:]])
        timings = {}
        t = time.perf_counter()
        own = IndexedFile.of(edited, path, config)
        timings["declarations of the buffer (ast)"] = time.perf_counter() - t
        t = time.perf_counter()
        index = project.index_for(own)
        timings["index for the buffer"] = time.perf_counter() - t
        t = time.perf_counter()
        prepared = prepare_source(edited, str(path), config, module_name, is_package)
        timings["prepare_source (ast)"] = time.perf_counter() - t
        t = time.perf_counter()
        analyse_prepared(prepared, config, index, names)
        timings["analyse_prepared (flow + rules)"] = time.perf_counter() - t
        t = time.perf_counter()
        whole = analyse_text(path.as_uri(), round_, edited, path, config, project)
        timings["analyse_text (all of it)"] = time.perf_counter() - t
        t = time.perf_counter()
        again = analyse_text(path.as_uri(), round_, edited, path, config, project, previous)
        timings["analyse_text from the last analysis (one function)"] = time.perf_counter() - t
        assert again.incremental and again.findings == whole.findings
        previous = again
        print(f"round {round_}: " + ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in timings.items()))
    declared = text.replace("def execute_model(", "def execute_model_renamed(", 1)  # a declaration changed
    for round_ in range(rounds):
        own = IndexedFile.of(declared + f"# {round_}\n", path, config)
        started = time.perf_counter()
        project.index_for(own)
        print(f"a changed declaration, round {round_}: the index with the buffer in the file's place "
              f"{(time.perf_counter() - started) * 1000:.0f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between an arrival and the next edit")
    parser.add_argument("--phases", action="store_true", help="also time the server's steps in this process")
    args = parser.parse_args()
    tree = vllm_tree(RELEASE)
    result = asyncio.run(measure(tree, args.edits, args.pause))
    latencies = sorted(result["latencies"])  # type: ignore[arg-type]
    lines = len((tree / RUNNER).read_text().splitlines())
    print(f"vLLM {RELEASE} {RUNNER} ({lines} lines), {result['findings']} findings; "
          f"first diagnostics {result['opened']:.2f} s after start, tree index {result['indexed']:.2f} s")
    print(f"{len(latencies)} one-line edits, change -> diagnostics (debounce included): "
          f"median {statistics.median(latencies) * 1000:.0f} ms, "
          f"p90 {latencies[int(len(latencies) * 0.9) - 1] * 1000:.0f} ms, "
          f"min {latencies[0] * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms "
          f"(target: 50 ms); server CPU {result['cpu'] * 1000:.0f} ms per edit; server peak RSS "
          f"{result['memory']:.0f} MiB, exit status {result['returncode']}")
    bursts = sorted(result["bursts"])  # type: ignore[arg-type]
    print(f"{len(bursts)} bursts of ten keystrokes 40 ms apart, last keystroke -> diagnostics: "
          f"median {statistics.median(bursts) * 1000:.0f} ms, max {bursts[-1] * 1000:.0f} ms")
    if args.phases:
        phases(tree)
    return 0


if __name__ == "__main__":
    sys.exit(main())

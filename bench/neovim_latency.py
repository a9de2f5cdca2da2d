"""How long after a one-line edit in a real Neovim do kvlint's diagnostics arrive there? (issue 27)

The same edits as `server_latency.py`, made in a headless Neovim (`nvim --headless --clean`) whose whole
`init.lua` is docs/server.md's snippet for Neovim 0.7 to 0.9 (it runs on 0.11 too, and keeps one server per
project root: vLLM's tree from the wheel has no `pyproject.toml`, so the root is the directory Neovim starts
in, the tree, which is then the workspace folder, as in `server_latency.py`). Neovim opens vLLM 0.33.0's
`vllm/v1/worker/gpu_model_runner.py` (7,192 lines); a Lua harness (`-c luafile`) waits for the tree index
and the re-check against it, then appends a comment to a line of `execute_model` that reads
`kv_connector_output` and removes it again, `--edits` times, `--pause` seconds apart (the first three warm
up). Each edit is timed from the buffer change (`nvim_buf_set_text`) and from the moment Neovim sends the
`didChange` to the arrival of the `publishDiagnostics` of that version; the server's CPU time over the
edits comes from `/proc`. Neovim's own `debounce_text_changes` (150 ms by default) only limits how often it
sends: an edit 150 ms after the last is sent at once.

    .venv/bin/python bench/neovim_latency.py [--edits 30] [--pause 0.3] [--nvim PATH ...]

Without `--nvim`, every Neovim `tests/support/neovim.py` finds (Debian's 0.7.2 on PATH, PyPI's 0.11.4
once fetched into the test cache).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.neovim import installed_neovims, version_of  # noqa: E402
from tests.support.vllm_sources import vllm_tree  # noqa: E402

RELEASE = "0.33.0"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"
DOC = ROOT / "docs" / "server.md"

HARNESS = r"""
local uv = vim.loop
local out_path = os.getenv("KVLINT_BENCH_OUT")
local edits = tonumber(os.getenv("KVLINT_BENCH_EDITS"))
local pause = tonumber(os.getenv("KVLINT_BENCH_PAUSE_MS"))
local line = tonumber(os.getenv("KVLINT_BENCH_LINE"))
local arrivals, published, indexed = {}, 0, false
local on_diagnostics = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
  published = published + 1
  if result and result.version then arrivals[result.version] = uv.hrtime() end
  return on_diagnostics(err, result, ctx, config)
end
local on_log = vim.lsp.handlers["window/logMessage"]
vim.lsp.handlers["window/logMessage"] = function(err, result, ctx, config)
  if result and type(result.message) == "string" and result.message:find("indexed") then indexed = true end
  return on_log(err, result, ctx, config)
end
local function write(result)
  vim.fn.writefile({ vim.fn.json_encode(result) }, out_path)
  vim.cmd("qa!")
end
local get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients
local client
if not vim.wait(60000, function() client = get_clients()[1]; return client ~= nil end, 10) then
  return write({ error = "no client attached" })
end
local sent = {}
local notify = client.notify
client.notify = function(...)
  local args = { ... }
  local method, params = args[1], args[2]
  if type(method) ~= "string" then method, params = args[2], args[3] end
  if method == "textDocument/didChange" then sent[params.textDocument.version] = uv.hrtime() end
  return notify(...)
end
if not vim.wait(180000, function() return indexed and published >= 2 end, 10) then
  return write({ error = "no tree index or no re-check", published = published, indexed = indexed })
end
local server = vim.fn.systemlist({ "pgrep", "-P", tostring(vim.fn.getpid()) })[1]
local function cpu_ticks()
  local file = io.open("/proc/" .. server .. "/stat")
  if not file then return -1 end
  local stat = file:read("*a")
  file:close()
  local fields = vim.split(stat:sub(stat:find(")", 1, true) + 2), " ")
  return tonumber(fields[12]) + tonumber(fields[13])  -- utime, stime (fields 14 and 15 of the whole line)
end
local buf = vim.api.nvim_get_current_buf()
local text = vim.api.nvim_buf_get_lines(buf, line, line + 1, true)[1]
local comment = "  # an edit"
local rows, ticks = {}, 0
for number = 1, edits + 3 do
  if number == 4 then ticks = cpu_ticks() end
  local started = uv.hrtime()
  if number % 2 == 1 then
    vim.api.nvim_buf_set_text(buf, line, #text, line, #text, { comment })
  else
    vim.api.nvim_buf_set_text(buf, line, #text, line, #text + #comment, { "" })
  end
  local version = vim.api.nvim_buf_get_changedtick(buf)
  if not vim.wait(30000, function() return arrivals[version] ~= nil end, 1) then
    return write({ error = "no diagnostics for version " .. version })
  end
  if number > 3 then
    table.insert(rows, { edit = (arrivals[version] - started) / 1e6,
                         sent = sent[version] and (arrivals[version] - sent[version]) / 1e6 or vim.NIL })
  end
  vim.wait(pause, function() return false end, 10)
end
local v = vim.version()
write({ rows = rows, cpu_ticks = cpu_ticks() - ticks, version = string.format("%d.%d.%d", v.major, v.minor, v.patch) })
"""


def snippet() -> str:
    """docs/server.md's `init.lua` for Neovim 0.7 to 0.9 (`tests/test_editor_neovim.py` runs it too)."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"```lua\n(-- Neovim 0\.7 to 0\.9:.*?)```", text, re.S)
    assert found, f"{DOC} lost its snippet for Neovim 0.7 to 0.9"
    return found.group(1)


def edited_line(text: str) -> int:
    """The line `server_latency.py` edits: inside `execute_model`, one that mentions `kv_connector_output`."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.lstrip().startswith("def execute_model("))
    return next(n for n in range(start, len(lines)) if "kv_connector_output" in lines[n])


def run(executable: Path, tree: Path, edits: int, pause: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="kvlint-nvim-bench-") as scratch:
        work = Path(scratch)
        (work / "init.lua").write_text(snippet())
        (work / "harness.lua").write_text(HARNESS)
        output = work / "result.json"
        venv_bin = Path(sys.executable).parent
        environment = {key: value for key, value in os.environ.items()
                       if key not in ("VIMINIT", "EXINIT", "NVIM_APPNAME", "NVIM_LOG_FILE", "VIMRUNTIME", "NVIM")}
        environment.update({
            "PATH": os.pathsep.join([str(venv_bin), environment.get("PATH", "")]),  # this tree's `kvlint`
            **{f"XDG_{kind}_HOME": str(work / "home" / kind.lower()) for kind in ("CONFIG", "DATA", "STATE", "CACHE")},
            "KVLINT_BENCH_OUT": str(output), "KVLINT_BENCH_EDITS": str(edits),
            "KVLINT_BENCH_PAUSE_MS": str(int(pause * 1000)),
            "KVLINT_BENCH_LINE": str(edited_line((tree / RUNNER).read_text())),
        })
        completed = subprocess.run(
            [str(executable), "--headless", "--clean", "-u", str(work / "init.lua"),
             "-c", f"luafile {work / 'harness.lua'}", RUNNER],
            cwd=tree, env=environment, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        if not output.is_file():
            raise SystemExit(f"{executable}: no result (exit {completed.returncode}): {completed.stderr[-2000:]}")
        result = json.loads(output.read_text())
    if "error" in result:
        raise SystemExit(f"{executable}: {result}")
    return result


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.9) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--pause", type=float, default=0.3, help="seconds between an arrival and the next edit")
    parser.add_argument("--nvim", type=Path, action="append", help="a Neovim to run (default: every one found)")
    args = parser.parse_args()
    tree = vllm_tree(RELEASE)
    found = {version_of(path): path for path in args.nvim} if args.nvim else installed_neovims()
    if not found:
        raise SystemExit("no Neovim here: `apt-get install -y neovim` (Debian's 0.7.2)")
    ticks = os.sysconf("SC_CLK_TCK")
    for version, executable in sorted((v, p) for v, p in found.items() if v is not None):
        result = run(executable, tree, args.edits, args.pause)
        rows = result["rows"]  # type: ignore[index]
        edit = [row["edit"] for row in rows]  # type: ignore[index]
        sent = [row["sent"] for row in rows if row["sent"] is not None]  # type: ignore[index]
        cpu = result["cpu_ticks"] / ticks / len(rows) * 1000  # type: ignore[operator]
        print(f"Neovim {result['version']} ({executable}), vLLM {RELEASE} {RUNNER}: {len(rows)} one-line edits, "
              f"buffer change -> diagnostics median {statistics.median(edit):.0f} ms, p90 {_p90(edit):.0f} ms, "
              f"max {max(edit):.0f} ms; didChange sent -> diagnostics median {statistics.median(sent):.0f} ms; "
              f"server CPU {cpu:.0f} ms per edit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

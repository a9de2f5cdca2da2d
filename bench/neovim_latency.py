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
RUFF = Path.home() / ".cache" / "kvlint" / "bench-venvs" / "ruff" / "bin" / "ruff"  # bench/audit_bench.py's

HARNESS = r"""
local uv = vim.loop
local out_path = os.getenv("KVLINT_BENCH_OUT")
local edits = tonumber(os.getenv("KVLINT_BENCH_EDITS"))
local pause = tonumber(os.getenv("KVLINT_BENCH_PAUSE_MS"))
local line = tonumber(os.getenv("KVLINT_BENCH_LINE"))
local peer = os.getenv("KVLINT_BENCH_PEER") == "1"  -- another server: no tree index to wait for
local arrivals, published, indexed, last = {}, 0, peer, 0
local on_diagnostics = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
  published = published + 1
  last = uv.hrtime()
  if result and result.version then arrivals[result.version] = last end
  return on_diagnostics(err, result, ctx, config)
end
local on_pulled = vim.lsp.handlers["textDocument/diagnostic"]  -- a server the client pulls from (0.10 and later)
if on_pulled then
  vim.lsp.handlers["textDocument/diagnostic"] = function(err, result, ctx, config)
    published = published + 1
    last = uv.hrtime()
    if ctx and ctx.version then arrivals[ctx.version] = last end
    return on_pulled(err, result, ctx, config)
  end
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
if not vim.wait(180000, function() return indexed and published >= (peer and 1 or 2) end, 10) then
  return write({ error = "no tree index or no re-check", published = published, indexed = indexed })
end
local server = vim.fn.systemlist({ "pgrep", "-P", tostring(vim.fn.getpid()) })[1]
local function cpu_ticks(pid)
  local file = io.open("/proc/" .. (pid or server) .. "/stat")
  if not file then return -1 end
  local stat = file:read("*a")
  file:close()
  local fields = vim.split(stat:sub(stat:find(")", 1, true) + 2), " ")
  return tonumber(fields[12]) + tonumber(fields[13])  -- utime, stime (fields 14 and 15 of the whole line)
end
local buf = vim.api.nvim_get_current_buf()
local text = vim.api.nvim_buf_get_lines(buf, line, line + 1, true)[1]
local comment = "  # an edit"
local rows, ticks, own = {}, 0, 0
for number = 1, edits + 3 do
  if number == 4 then ticks, own = cpu_ticks(), cpu_ticks(vim.fn.getpid()) end
  local started = uv.hrtime()
  if number % 2 == 1 then
    vim.api.nvim_buf_set_text(buf, line, #text, line, #text, { comment })
  else
    vim.api.nvim_buf_set_text(buf, line, #text, line, #text + #comment, { "" })
  end
  local version = vim.api.nvim_buf_get_changedtick(buf)
  local before = published
  if not vim.wait(30000, function()
    if arrivals[version] == nil and published > before and last > started and sent[version] then
      arrivals[version] = last  -- a server that does not say the version: the first publication after the edit
    end
    return arrivals[version] ~= nil
  end, 1) then
    return write({ error = "no diagnostics for version " .. version })
  end
  if number > 3 then
    table.insert(rows, { edit = (arrivals[version] - started) / 1e6,
                         sent = sent[version] and (arrivals[version] - sent[version]) / 1e6 or vim.NIL })
  end
  vim.wait(pause, function() return false end, 10)
end
local v = vim.version()
write({ rows = rows, cpu_ticks = cpu_ticks() - ticks, nvim_ticks = cpu_ticks(vim.fn.getpid()) - own,
        version = string.format("%d.%d.%d", v.major, v.minor, v.patch) })
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


def init_lua(server: Path | None) -> str:
    """The snippet as it stands, or with another server's command in kvlint's place (the peer)."""
    code = snippet()
    if server is None:
        return code
    kvlint = 'cmd = { "kvlint", "server" }'
    assert kvlint in code and 'name = "kvlint"' in code, "the snippet changed: update the peer's copy"
    return code.replace(kvlint, f'cmd = {{ "{server}", "server" }}').replace('name = "kvlint"', 'name = "peer"')


def run(executable: Path, tree: Path, edits: int, pause: float, peer: Path | None = None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="kvlint-nvim-bench-") as scratch:
        work = Path(scratch)
        (work / "init.lua").write_text(init_lua(peer))
        (work / "harness.lua").write_text(HARNESS)
        output = work / "result.json"
        venv_bin = Path(sys.executable).parent
        environment = {key: value for key, value in os.environ.items()
                       if key not in ("VIMINIT", "EXINIT", "NVIM_APPNAME", "NVIM_LOG_FILE", "VIMRUNTIME", "NVIM")}
        environment.update({
            "PATH": os.pathsep.join([str(venv_bin), environment.get("PATH", "")]),  # this tree's `kvlint`
            **{f"XDG_{kind}_HOME": str(work / "home" / kind.lower()) for kind in ("CONFIG", "DATA", "STATE", "CACHE")},
            "KVLINT_BENCH_OUT": str(output), "KVLINT_BENCH_EDITS": str(edits),
            "KVLINT_BENCH_PAUSE_MS": str(int(pause * 1000)), "KVLINT_BENCH_PEER": "1" if peer else "0",
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
    parser.add_argument("--rounds", type=int, default=1, help="runs of each server, their order alternating")
    parser.add_argument("--nvim", type=Path, action="append", help="a Neovim to run (default: every one found)")
    parser.add_argument("--peer", type=Path, default=RUFF if RUFF.is_file() else None,
                        help=f"another language server to time the same way (default: {RUFF}, when there)")
    parser.add_argument("--no-peer", action="store_true", help="time kvlint's server only")
    args = parser.parse_args()
    if args.no_peer:
        args.peer = None
    tree = vllm_tree(RELEASE)
    found = {version_of(path): path for path in args.nvim} if args.nvim else installed_neovims()
    if not found:
        raise SystemExit("no Neovim here: `apt-get install -y neovim` (Debian's 0.7.2)")
    ticks = os.sysconf("SC_CLK_TCK")
    servers: list[tuple[str, Path | None]] = [("kvlint server", None)]
    if args.peer is not None:
        servers.append((f"{args.peer.name} server ({_version(args.peer)})", args.peer))
    for version, executable in sorted((v, p) for v, p in found.items() if v is not None):
        rows: dict[str, list[dict[str, float]]] = {name: [] for name, _ in servers}
        cpu: dict[str, float] = {name: 0.0 for name, _ in servers}
        editor: dict[str, float] = {name: 0.0 for name, _ in servers}
        shown = ""
        for round_ in range(args.rounds):
            for name, peer in servers if round_ % 2 == 0 else servers[::-1]:
                result = run(executable, tree, args.edits, args.pause, peer)
                rows[name] += result["rows"]  # type: ignore[arg-type]
                cpu[name] += result["cpu_ticks"] / ticks  # type: ignore[operator]
                editor[name] += result["nvim_ticks"] / ticks  # type: ignore[operator]
                shown = str(result["version"])
        print(f"Neovim {shown} ({executable}), vLLM {RELEASE} {RUNNER}, {args.rounds} run(s) of {args.edits} "
              "one-line edits per server:")
        for name, _ in servers:
            edit = [row["edit"] for row in rows[name]]
            sent = [row["sent"] for row in rows[name] if row["sent"] is not None]
            print(f"  {name}: buffer change -> diagnostics median {statistics.median(edit):.0f} ms, "
                  f"p90 {_p90(edit):.0f} ms, max {max(edit):.0f} ms; didChange sent -> diagnostics median "
                  f"{statistics.median(sent):.0f} ms; server CPU {cpu[name] / len(edit) * 1000:.0f} ms per edit "
                  f"(Neovim's own {editor[name] / len(edit) * 1000:.0f} ms)")
    return 0


def _version(executable: Path) -> str:
    completed = subprocess.run([str(executable), "--version"], capture_output=True, text=True, timeout=60)
    return completed.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())

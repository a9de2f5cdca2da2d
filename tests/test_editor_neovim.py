"""The Neovim set-up of docs/server.md, run in a real Neovim (issue 28).

Each ```lua snippet of the page's Neovim section is read from the page itself (so the docs and this test cannot
drift) and written, as it stands, as the whole `init.lua` of `nvim --headless --clean -u init.lua`, which opens the
seed-bug file of `fixtures/server_workspace` (the executor's aggregator that dereferences `kv_connector_output`
unguarded). A harness passed with `-c` waits with `vim.wait` for the diagnostics, writes `vim.diagnostic.get()`
and the attached clients to a JSON file and quits with `:qa!`. The diagnostics must be kvlint's: the lines and
codes of the file's `# expect:` markers, at the columns `kvlint check` gives.

Each snippet's first line says which versions it is for (`-- Neovim 0.7 to 0.9: ...`); it runs on a Neovim of
that range: `nvim` on PATH (Debian bookworm's 0.7.2, which `.ci/run` installs), or PyPI's 0.11.4 build
(`tests/support/neovim.py`). Under CI=true a snippet without a Neovim to run it fails; elsewhere it is skipped
with the reason, never passed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT, run_kvlint
from tests.support.neovim import Version, fetch_pypi_neovim, installed_neovims

DOC = ROOT / "docs" / "server.md"
WORKSPACE = FIXTURES / "server_workspace"
SEED_BUG = "kvstack/aggregator.py"
IN_CI = os.environ.get("CI", "").lower() == "true"

# Waits for the first diagnostics of the buffer, then writes what Neovim holds. Nothing in it starts a client:
# that is the snippet's job alone.
HARNESS = """\
local out_path = os.getenv("KVLINT_NVIM_OUT")
local wait_ms = tonumber(os.getenv("KVLINT_NVIM_WAIT_MS"))
local arrived = vim.wait(wait_ms, function()
  return #vim.diagnostic.get(0) > 0
end, 20)
local diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(diagnostics, { lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
                              code = d.code, source = d.source, message = d.message, severity = d.severity })
end
local clients = {}
for _, client in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
  table.insert(clients, { name = client.name, root_dir = client.config.root_dir })
end
local v = vim.version()
vim.fn.writefile({ vim.fn.json_encode({
  arrived = arrived,
  version = string.format("%d.%d.%d", v.major, v.minor, v.patch),
  diagnostics = diagnostics,
  clients = clients,
  messages = vim.api.nvim_exec("messages", true),
}) }, out_path)
vim.cmd("qa!")
"""


@dataclass(frozen=True)
class Snippet:
    label: str  # the first line's `0.7 to 0.9`
    low: Version
    high: Version | None  # the last minor version it is for; None: "and later"
    code: str
    prose: str  # the paragraph before it

    def fits(self, version: Version) -> bool:
        return version >= self.low and (self.high is None or version[:2] <= self.high[:2])


def _version(text: str) -> Version:
    parts = [int(part) for part in text.split(".")]
    return (*parts, 0, 0)[:3]  # type: ignore[return-value]


def documented_snippets() -> list[Snippet]:
    """The ```lua blocks of the `### Neovim` section, each with the range its first line names."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### Neovim\n"):]
    section = section[:section.index("\n### ", 1)]
    snippets, previous_end = [], 0
    for match in re.finditer(r"```lua\n(.*?)```", section, re.S):
        code = match.group(1)
        head = re.match(r"-- Neovim (\d+\.\d+)(?: to (\d+\.\d+)| and later):", code)
        assert head, f"a Neovim snippet of {DOC.name} must start with `-- Neovim X.Y to X.Y:` or `... and later:`"
        label = head.group(0)[len("-- Neovim "):-1]
        snippets.append(Snippet(label, _version(head.group(1)), _version(head.group(2)) if head.group(2) else None,
                                code, section[previous_end:match.start()]))
        previous_end = match.end()
    return snippets


SNIPPETS = documented_snippets()


def test_the_page_has_a_snippet_for_old_and_new_neovim() -> None:
    """Debian's 0.7.2 and the 0.11 API each have a snippet, and each paragraph names a version it was tested on,
    inside its range."""
    assert any(snippet.fits((0, 7, 2)) for snippet in SNIPPETS)
    assert any(snippet.fits((0, 11, 0)) and "vim.lsp.enable" in snippet.code for snippet in SNIPPETS)
    for snippet in SNIPPETS:
        tested = [_version(found) for found in re.findall(r"tested on (\d+\.\d+\.\d+)", snippet.prose)]
        assert tested and all(snippet.fits(version) for version in tested), (snippet.label, snippet.prose)


def _expected() -> set[tuple[int, str]]:
    """(line, code) of the seed-bug file's `# expect:` markers."""
    expected = set()
    for number, line in enumerate((WORKSPACE / SEED_BUG).read_text().splitlines(), start=1):
        if "# expect:" in line:
            expected |= {(number, code.strip()) for code in line.split("# expect:")[1].split(",")}
    assert expected, "the seed-bug file lost its markers"
    return expected


def _neovim_for(snippet: Snippet) -> tuple[Version, Path]:
    """A Neovim in the snippet's range: one installed here, else PyPI's build when it fits; fail under CI."""
    found = installed_neovims()
    for version in sorted(found):
        if snippet.fits(version):
            return version, found[version]
    reason = f"no Neovim {snippet.label} here (found: {', '.join('.'.join(map(str, v)) for v in found) or 'none'})"
    from tests.support.neovim import PYPI_NEOVIM, PYPI_NEOVIM_VERSION

    if snippet.fits(_version(PYPI_NEOVIM_VERSION)):
        try:
            return _version(PYPI_NEOVIM_VERSION), fetch_pypi_neovim()
        except (OSError, subprocess.TimeoutExpired) as exc:
            reason += f"; PyPI's {PYPI_NEOVIM} could not be installed: {exc}"
    if IN_CI:
        pytest.fail(f"{reason} (under CI, .ci/run installs Debian's neovim)")
    pytest.skip(reason)


def _run_neovim(executable: Path, init: str, workspace: Path, tmp_path: Path, wait_ms: int) \
        -> tuple[subprocess.CompletedProcess[str], dict[str, object] | None]:
    """`nvim --headless --clean -u init.lua -c 'luafile harness.lua' SEED_BUG` in the workspace."""
    (tmp_path / "init.lua").write_text(init)
    (tmp_path / "harness.lua").write_text(HARNESS)
    output = tmp_path / "diagnostics.json"
    venv_bin = Path(sys.executable).parent
    assert (venv_bin / "kvlint").is_file(), f"the snippets run `kvlint`: none beside {sys.executable}"
    home = tmp_path / "home"
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("VIMINIT", "EXINIT", "NVIM_APPNAME", "NVIM_LOG_FILE", "VIMRUNTIME", "NVIM")}
    environment.update({
        "PATH": os.pathsep.join([str(venv_bin), environment.get("PATH", "")]),  # this tree's `kvlint`
        **{f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CONFIG", "DATA", "STATE", "CACHE")},
        "KVLINT_NVIM_OUT": str(output), "KVLINT_NVIM_WAIT_MS": str(wait_ms),
    })
    completed = subprocess.run(
        [str(executable), "--headless", "--clean", "-u", str(tmp_path / "init.lua"),
         "-c", f"luafile {tmp_path / 'harness.lua'}", SEED_BUG],
        cwd=workspace, env=environment, capture_output=True, text=True, timeout=wait_ms / 1000 + 60,
        stdin=subprocess.DEVNULL)
    return completed, json.loads(output.read_text()) if output.is_file() else None


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    copy = tmp_path / "server_workspace"
    shutil.copytree(WORKSPACE, copy)
    return copy


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[snippet.label for snippet in SNIPPETS])
def test_documented_snippet_shows_the_seed_bug_in_neovim(snippet: Snippet, workspace: Path, tmp_path: Path) -> None:
    version, executable = _neovim_for(snippet)
    print(f"the snippet for Neovim {snippet.label} ran on Neovim {'.'.join(map(str, version))}: {executable}")
    completed, result = _run_neovim(executable, snippet.code, workspace, tmp_path, wait_ms=60_000)
    assert completed.returncode == 0 and result is not None, (completed.returncode, completed.stderr)
    context = f"Neovim {version} ({executable}): {result}\nstderr: {completed.stderr}"
    assert result["version"] == ".".join(map(str, version)), context
    assert result["arrived"] is True, context
    assert "Error" not in completed.stderr and "E5" not in str(result["messages"]), context
    assert result["clients"] == [{"name": "kvlint", "root_dir": str(workspace)}], context
    diagnostics = result["diagnostics"]
    assert isinstance(diagnostics, list)
    assert {(d["lnum"] + 1, d["code"]) for d in diagnostics} == _expected(), context
    assert all(d["source"] == "kvlint" and d["severity"] == 2 for d in diagnostics), context  # warnings
    check = json.loads(run_kvlint("check", "--format", "json", SEED_BUG, cwd=workspace).stdout)
    assert sorted((d["lnum"] + 1, d["col"] + 1, d["code"], d["message"]) for d in diagnostics) == \
        sorted((f["line"], f["column"], f["code"], f["message"]) for f in check), context


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if not s.fits((0, 7, 2))],
                         ids=[s.label for s in SNIPPETS if not s.fits((0, 7, 2))])
def test_newer_snippets_fail_on_debian_neovim_as_the_page_says(
        snippet: Snippet, workspace: Path, tmp_path: Path) -> None:
    """The page says why a 0.7 user needs the old snippet: the newer ones stop with these errors there."""
    debian = installed_neovims().get((0, 7, 2))
    if debian is None:
        if IN_CI:
            pytest.fail("no Neovim 0.7.2 under CI (.ci/run installs Debian's neovim)")
        pytest.skip("no Neovim 0.7.2 here (Debian bookworm's neovim package)")
    completed, result = _run_neovim(debian, snippet.code, workspace, tmp_path, wait_ms=1_500)
    errors = re.findall(r"attempt to (?:call|index) field '\w+'", completed.stderr)
    assert errors, completed.stderr
    page = " ".join(DOC.read_text().split())  # the page names each error as Neovim prints it
    assert all(f"`{error}`" in page for error in errors), errors
    assert result is not None and result["diagnostics"] == [], result

"""Bad input is bad input, never "internal error" (issue 29, the minor defects).

A deeply nested or huge-numbered baseline, a baseline with a BOM, stdin or stdout closed, a `%00` in a
document URI, and a coding cookie naming no codec (which the flake8 face now reports as `check` does).
"""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvlint.server.documents import Document, path_of
from tests.conftest import ROOT, run_kvlint

SEED = """\
def merge(outputs):
    for out in outputs:
        kvo = out.kv_connector_output
        print(kvo.finished_sending)
"""


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "merge.py").write_text(SEED)
    return tmp_path


def _baseline(tree: Path) -> dict[str, object]:
    written = run_kvlint("check", "--write-baseline", "baseline.json", ".", cwd=tree)
    assert written.returncode in (0, 1), written.stderr
    return json.loads((tree / "baseline.json").read_text())


def test_a_baseline_with_a_bom_is_read(seeded: Path) -> None:
    document = _baseline(seeded)
    (seeded / "baseline.json").write_bytes(codecs.BOM_UTF8 + json.dumps(document).encode())
    completed = run_kvlint("check", "--baseline", "baseline.json", ".", cwd=seeded)
    assert completed.returncode == 0, completed.stderr


@pytest.mark.parametrize("hostile", [
    "[" * 100_000 + "]" * 100_000,
    '{"tool": "kvlint", "version": ' + "[" * 100_000 + "]" * 100_000 + ', "findings": []}',
    '{"tool": "kvlint", "version": 3, "findings": [], "x": ' + "9" * 5000 + "}",
    '{"tool": "kvlint", "version": 3, "findings": [{"path": ' + "[" * 100_000 + "]" * 100_000 + "}]}",
], ids=["nested", "nested version", "5000 digits", "nested field"])
def test_a_hostile_baseline_is_a_usage_error(seeded: Path, hostile: str) -> None:
    (seeded / "baseline.json").write_text(hostile)
    completed = run_kvlint("check", "--baseline", "baseline.json", ".", cwd=seeded)
    assert completed.returncode == 2
    assert "internal error" not in completed.stderr and "baseline" in completed.stderr
    assert completed.stderr.count("\n") == 1 and len(completed.stderr) < 400, completed.stderr[:500]


def _kvlint_with(*args: str, cwd: Path, shell: str) -> subprocess.CompletedProcess[str]:
    command = " ".join([sys.executable, "-m", "kvlint", *args])
    return subprocess.run(["sh", "-c", f"{command} {shell}"], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_closed_stdin_is_a_usage_error(seeded: Path) -> None:
    completed = _kvlint_with("check", "-", cwd=seeded, shell="<&-")
    assert completed.returncode == 2
    assert completed.stderr == (
        "kvlint: standard input is closed: nothing to check (give a path, or pipe the source in)\n")


def test_closed_stdout_still_gives_the_exit_status(seeded: Path) -> None:
    completed = _kvlint_with("check", ".", cwd=seeded, shell=">&-")
    assert completed.returncode == 1
    assert "internal error" not in completed.stderr and "standard output is closed" in completed.stderr


def test_a_nul_in_a_document_uri_names_no_file() -> None:
    assert path_of("file:///tmp/a%00b.py") is None
    document = Document("file:///tmp/a%00b.py", SEED, 1)
    assert document.is_python and document.path is None


def test_a_nul_in_a_document_uri_still_gets_its_diagnostics(tmp_path: Path) -> None:
    pytest.importorskip("pygls")
    from kvlint.config import Config
    from kvlint.server.analysis import analyse_text

    analysis = analyse_text("file:///tmp/a%00b.py", 1, SEED, path_of("file:///tmp/a%00b.py"), Config(), None)
    assert [finding.code for finding in analysis.findings] == ["KVC001"]


def test_the_flake8_face_and_check_agree_on_an_unknown_coding_cookie(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "bogus.py").write_text("# -*- coding: no-such-codec -*-\n" + SEED)
    checked = run_kvlint("check", "bogus.py", cwd=tmp_path)
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "KVC", "bogus.py"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    expected = "bogus.py:1:1: KVC900 cannot decode: unknown encoding 'no-such-codec' in the coding cookie"
    assert checked.stdout.splitlines()[0] == expected
    assert flake8.stdout.strip().removeprefix("./") == expected


INTERRUPTED_IMPORT = """\
import sys
class Interrupt:  # Ctrl-C while kvlint.cli and what it imports load
    def find_spec(self, name, path=None, target=None):
        if name == "kvlint.cli":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
import runpy
runpy.run_module("kvlint", run_name="__main__")
"""


def test_ctrl_c_while_python_m_kvlint_imports_is_one_line(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT, "check", "."], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (completed.returncode, completed.stderr) == (130, "kvlint: interrupted\n")


INTERRUPTED_SCRIPT = """\
import sys
from importlib.metadata import entry_points
class Interrupt:  # Ctrl-C while the `kvlint` command's modules load
    def find_spec(self, name, path=None, target=None):
        if name == "kvlint.cli":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
[script] = entry_points(group="console_scripts", name="kvlint")
sys.exit(script.load()())  # what the installed `kvlint` wrapper does
"""


def test_ctrl_c_while_the_kvlint_command_imports_is_one_line(tmp_path: Path) -> None:
    completed = subprocess.run([sys.executable, "-c", INTERRUPTED_SCRIPT, "check", "."], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300)
    assert (completed.returncode, completed.stderr) == (130, "kvlint: interrupted\n")


WITHOUT_THE_SERVER_EXTRA = """\
import sys
class Missing:  # the `server` extra not installed: lsprotocol (or pygls) cannot be imported
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == sys.argv[1]:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Missing())
from kvlint.server import main
sys.exit(main())
"""


@pytest.mark.parametrize("missing", ["lsprotocol", "pygls"])
def test_kvlint_server_without_its_extra_names_both_packages_and_how_to_install_them(missing: str) -> None:
    completed = subprocess.run([sys.executable, "-c", WITHOUT_THE_SERVER_EXTRA, missing], capture_output=True,
                               text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert completed.returncode == 2
    assert completed.stderr == (f"kvlint: `kvlint server` needs pygls and lsprotocol, the `server` extra ({missing} "
                                "is not installed): pip install 'vllm-kvlint[server]'\n")

"""The mypy face runs nothing of the checked tree (issue 29, defect 1).

mypy runs in the tree's root, and the plugin's analysis helper used to be `python -c ...` there: the current
directory came first on the helper's `sys.path`, so a `queue.py`, `pickle.py` or `kvlint/` of the tree ran in
it. These tests plant a module of every name the helper imports (found by running the helper's own start-up
and analysis) and prove that none of them runs and that the helper still answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvlint.mypy_worker import AnalysisWorker, helper_command
from tests.conftest import FIXTURES, ROOT

ANALYSED = FIXTURES / "vllm_like" / "worker.py"  # has findings, so the whole engine runs

# the helper's start-up, one analysis as `serve_analyses` does it and the pickling of its reply
IMPORTED = """\
import json, pickle, sys
from kvlint.mypy_worker import analyse_module, serve_analyses
from kvlint.config import DirectoryConfigs
path = sys.argv[1]
analysis = analyse_module(path, DirectoryConfigs().for_file(path))
assert analysis.findings, analysis
pickle.loads(pickle.dumps((path, analysis)))
print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})))
"""

PLANTED = """\
import os
with open(os.path.join({markers!r}, {name!r}), "w"):
    pass
raise SystemExit("the helper ran {name} from the checked tree")
"""

# run from the planted tree by an isolated driver (a plain `python -c` there would itself run the plants)
DRIVER = """\
import sys
sys.path.insert(0, {root!r})
from kvlint.mypy_worker import AnalysisWorker
worker = AnalysisWorker(timeout=300)
worker.submit({path!r})
analysis = worker.take({path!r})
worker._stop()
print("answered" if analysis is not None and analysis.findings else "no answer")
"""


def _helper_modules(cwd: Path) -> list[str]:
    completed = subprocess.run([*helper_command(IMPORTED), str(ANALYSED)], cwd=cwd, capture_output=True,
                               text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.splitlines()[-1])


def _plant(tree: Path, markers: Path, names: list[str]) -> None:
    for name in names:
        (tree / f"{name}.py").write_text(PLANTED.format(markers=str(markers), name=name))
    package = tree / "kvlint"  # a kvlint of the tree's own, beside the installed one
    package.mkdir()
    (package / "__init__.py").write_text(PLANTED.format(markers=str(markers), name="kvlint-package"))
    (package / "mypy_worker.py").write_text(PLANTED.format(markers=str(markers), name="kvlint-package-mypy_worker"))


@pytest.mark.parametrize("variables", ["none", "PYTHONPATH"])
def test_the_helper_imports_no_module_of_the_checked_tree(tmp_path: Path, variables: str) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    names = _helper_modules(clean)
    assert {"kvlint", "pickle", "queue", "ast", "threading"} <= set(names)
    tree, markers = tmp_path / "tree", tmp_path / "markers"
    tree.mkdir()
    markers.mkdir()
    _plant(tree, markers, [*names, "sitecustomize", "usercustomize"])
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    if variables == "PYTHONPATH":  # a CI job that sets PYTHONPATH=. for mypy
        environment.update(PYTHONPATH=str(tree), PYTHONSTARTUP=str(tree / "queue.py"))
    completed = subprocess.run(
        [sys.executable, "-I", "-c", DRIVER.format(root=str(ROOT), path=str(ANALYSED))],
        cwd=tree, capture_output=True, text=True, timeout=600, env=environment, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr
    assert sorted(os.listdir(markers)) == []
    assert completed.stdout.strip() == "answered"


def test_the_helper_runs_the_kvlint_the_plugin_was_loaded_from(tmp_path: Path) -> None:
    completed = subprocess.run(
        helper_command("import json, kvlint, sys; print(kvlint.__file__); print(json.dumps(sys.path))"),
        cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 0, completed.stderr
    found, path = completed.stdout.splitlines()
    assert Path(found) == ROOT / "kvlint" / "__init__.py"
    entries = json.loads(path)
    assert "" not in entries and str(tmp_path) not in entries and os.curdir not in entries
    assert entries.index(str(ROOT)) < min(
        (index for index, entry in enumerate(entries) if "site-packages" in entry), default=len(entries))


def test_a_helper_started_by_the_plugin_is_isolated(monkeypatch, tmp_path: Path) -> None:
    """The command the worker runs is the isolated one (`-I`), whatever the program."""
    started: list[list[str]] = []

    class Recorder:
        def __init__(self, argv: list[str], **_: object) -> None:
            started.append(argv)
            raise OSError("not started")

    monkeypatch.setattr(subprocess, "Popen", Recorder)
    worker = AnalysisWorker(timeout=5)
    worker.submit(str(ANALYSED))
    assert started and started[0][1:3] == ["-I", "-S"]

"""The mypy face, run by real mypy (`mypy.api.run` in a subprocess) in venvs of its own: mypy 1.20.2,
which vLLM pins, and the newest mypy. Outputs are compared exactly with `tests/mypy_cases/expected/`.

The case modules under `tests/mypy_cases/cases/` mark what mypy reports on a line with `# expect:`;
`tests/mypy_cases/vllm/` is a hand-written stand-in for vLLM's types, found through `mypy_path`.
Under `CI=true` a venv that cannot be created fails the tests; elsewhere they skip with the reason.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kvlint.config import Config
from kvlint.engine import analyse_source
from tests.conftest import ROOT
from tests.support.vllm_sdist import vllm_sdist_file
from tests.support.vllm_sources import CACHE, vllm_tree

# 1.20.2: what vLLM pins. 2.4.1: the newest on PyPI when last checked (`pip index versions mypy`);
# bump it together with kvlint.mypy_plugin.TESTED_MYPY.
MYPY_VERSIONS = tuple(os.environ.get("KVLINT_TEST_MYPY_VERSIONS", "1.20.2 2.4.1").split())
VENVS = CACHE / "mypy-venvs"
PYDANTIC = "2.13.5"  # what vLLM's pre-commit installs beside mypy (checked against its sdist in the vLLM test)
CASES = Path(__file__).resolve().parent / "mypy_cases"
EXPECTED = CASES / "expected"
RUN_MYPY = "import json, sys\n{prelude}\nfrom mypy import api\nprint(json.dumps(api.run(sys.argv[1:])))"
INI_STYLE = "[mypy]\nplugins = kvlint.mypy_plugin\nmypy_path = .\nshow_column_numbers = True\n{mypy_extra}{kvlint}"
MYPY_CONFIGS = {  # the same mypy settings in each place mypy reads them from
    "mypy.ini": INI_STYLE,
    "setup.cfg": INI_STYLE,
    "pyproject.toml": (
        '[tool.mypy]\nplugins = ["kvlint.mypy_plugin"]\nmypy_path = "."\nshow_column_numbers = true\n'
        "{mypy_extra}{kvlint}"
    ),
}
KVLINT_SECTIONS = {  # the kvlint configuration the cache test edits, in the style of the file it lives in
    "setup.cfg": "\n[kvlint]\nconnector-guards = {guard}\n",
    "pyproject.toml": '\n[tool.kvlint]\nconnector-guards = ["{guard}"]\n',
}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"mypy venv unavailable under CI: {reason}")
    pytest.skip(f"mypy venv unavailable: {reason}")


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
                   check=True, capture_output=True, text=True, timeout=1800)


def _runtime_requirements() -> list[str]:
    """kvlint's own dependencies (libcst, ...), pinned to the versions this test session runs with."""
    with open(ROOT / "pyproject.toml", "rb") as pyproject:
        declared = tomllib.load(pyproject)["project"]["dependencies"]
    pinned = []
    for requirement in declared:
        name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]
        try:
            pinned.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pinned.append(requirement)
    return pinned


def venv_dir(version: str) -> Path:
    """One venv per mypy version and checkout: two checkouts sharing the cache never swap each other's install."""
    return VENVS / f"{version}-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]}"


def mypy_venv(version: str) -> Path:
    """Return the Python of a venv with mypy==version, pydantic (for `pydantic.mypy`), kvlint's dependencies
    and this checkout (editable)."""
    venv = venv_dir(version)
    python = venv / "bin" / "python"
    stamp = venv / ".kvlint-venv"
    requirements = [f"mypy=={version}", f"pydantic=={PYDANTIC}", *_runtime_requirements()]
    wanted = f"{' '.join(requirements)} kvlint={ROOT}\n"
    VENVS.mkdir(parents=True, exist_ok=True)
    with open(VENVS / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test session may be building the same venv
        if stamp.is_file() and stamp.read_text() == wanted and python.exists():
            return python
        try:
            if not python.exists():
                subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True,
                               capture_output=True, text=True, timeout=600)
            _pip(python, *requirements)
            # the distribution was called `kvlint` before `vllm-kvlint`: an old editable install of it would
            # shadow this checkout (and two installs of one package confuse any import of it)
            subprocess.run([str(python), "-m", "pip", "uninstall", "--quiet", "--yes", "kvlint", "vllm-kvlint"],
                           capture_output=True, text=True, timeout=600)
            _pip(python, "--no-deps", "-e", str(ROOT))
        except subprocess.CalledProcessError as exc:
            _unavailable(f"{' '.join(map(str, exc.cmd))} failed: {(exc.stderr or '').strip()[-500:]}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            _unavailable(f"cannot create {venv}: {exc}")
        stamp.write_text(wanted)
    return python


@dataclass(frozen=True)
class MypyRun:
    stdout: str
    stderr: str
    status: int


@dataclass(frozen=True)
class Mypy:
    """One mypy release in its venv."""

    version: str
    python: Path

    def run(self, cwd: Path, *args: str, env: dict[str, str] | None = None, prelude: str = "") -> MypyRun:
        """Run `mypy.api.run(args)` in the venv; `prelude` is Python run before mypy is imported."""
        environment = {key: value for key, value in os.environ.items()
                       if not key.startswith(("KVLINT_MYPY_", "MYPY")) and key != "PYTHONPATH"}
        environment.update(env or {})
        completed = subprocess.run([str(self.python), "-c", RUN_MYPY.format(prelude=prelude), *args], cwd=cwd,
                                   capture_output=True, text=True, env=environment, timeout=900,
                                   stdin=subprocess.DEVNULL)
        assert completed.returncode == 0, completed.stderr
        stdout, stderr, status = json.loads(completed.stdout.splitlines()[-1])
        return MypyRun(stdout, stderr, status)


@pytest.fixture(scope="session", params=MYPY_VERSIONS)
def mypy(request: pytest.FixtureRequest) -> Mypy:
    return mypy_for(request.param)


@functools.lru_cache(maxsize=None)
def mypy_for(version: str) -> Mypy:
    python = mypy_venv(version)
    found = subprocess.run([str(python), "-c", "import kvlint, mypy.version; print(kvlint.__file__, "
                            "mypy.version.__version__)"], capture_output=True, text=True, check=True).stdout.split()
    assert found == [str(ROOT / "kvlint" / "__init__.py"), version], "the venv must run this checkout"
    return Mypy(version, python)


def case_tree(destination: Path, style: str, mypy_extra: str = "", guard: str = "") -> Path:
    """Copy the cases and the vLLM stand-in into `destination` with a mypy configuration in `style`.

    A `.git` directory stops kvlint's search for its own configuration at the copy's root.
    """
    shutil.copytree(CASES / "vllm", destination / "vllm")
    shutil.copytree(CASES / "cases", destination / "cases")
    (destination / ".git").mkdir()
    kvlint = KVLINT_SECTIONS[style].format(guard=guard) if guard else ""
    (destination / style).write_text(MYPY_CONFIGS[style].format(mypy_extra=mypy_extra, kvlint=kvlint))
    return destination


def check_cases(mypy: Mypy, tree: Path, style: str, *args: str, env: dict[str, str] | None = None) -> MypyRun:
    return mypy.run(tree, "--config-file", style, "--cache-dir", str(tree / ".mypy_cache"), *args, "cases", env=env)


def expected(name: str) -> str:
    return (EXPECTED / name).read_text()


# -- what the plugin reports on the cases ---------------------------------------------------------------------


@pytest.mark.parametrize("style", list(MYPY_CONFIGS))
def test_cases_in_each_config_style(mypy: Mypy, tmp_path: Path, style: str) -> None:
    run = check_cases(mypy, case_tree(tmp_path, style), style)
    assert (run.stdout, run.stderr, run.status) == (expected("default.txt"), "", 1)


def _marked(tree: Path) -> Iterator[tuple[str, int, str]]:
    """The `# expect:` markers: one entry per comma-separated item."""
    for path in sorted((tree / "cases").glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if match := re.search(r"# expect: (.+)$", line):
                for what in match.group(1).split(", "):
                    yield f"cases/{path.name}", number, what


def _reported(stdout: str) -> set[tuple[str, int, str]]:
    """Read mypy's output back as (path, line, what) in the vocabulary of the `# expect:` markers:
    the kvlint code for `[kvc]`, mypy's error code for its own errors."""
    found = set()
    for line in stdout.splitlines():
        if match := re.match(r"(\S+?):(\d+):\d+: (?:error|note): (.*)$", line):
            path, number, text = match.group(1), int(match.group(2)), match.group(3)
            if text.endswith("[kvc]"):
                what = text.split()[0]
            elif code := re.search(r"  \[([a-z-]+)\]$", text):
                what = code.group(1)
            elif text.startswith("Revealed type is"):
                what = "optional" if text.endswith('| None"') else "narrowed"
            else:
                what = text
            found.add((path, number, what))
    return found


def test_expected_output_agrees_with_the_markers() -> None:
    """The golden file says what the `# expect:` comments say (so it was not blessed blindly)."""
    marked = {(path, line, what) for path, line, what in _marked(CASES) if not what.startswith("kvlint-only")}
    assert _reported(expected("default.txt")) == marked


NONE_ERRORS = {"union-attr", "arg-type", "operator", "index"}  # how mypy reports a None where it types one


def test_each_dereference_finding_is_said_once_by_kvlint_or_by_mypy() -> None:
    """Every KVC001/KVC005 of the engine in the cases: `[kvc]` where mypy gives no None error of its own on that
    line, never beside one (nor beside one the line ignores); `kvlint-only` marks the documented limit."""
    reported = _reported(expected("default.txt"))
    seen = []
    for path in sorted((CASES / "cases").glob("*.py")):
        relative, lines = f"cases/{path.name}", path.read_text().splitlines()
        for finding in analyse_source(path.read_bytes(), relative, Config()).findings:
            if finding.code not in ("KVC001", "KVC005"):
                continue
            said = {what for where, line, what in reported if (where, line) == (relative, finding.line)}
            source = lines[finding.line - 1]
            by_mypy = bool(said & NONE_ERRORS) or "# type: ignore[union-attr]" in source
            assert (finding.code in said) == (not by_mypy and "kvlint-only" not in source), (relative, finding)
            seen.append((finding.code, finding.code in said))
    both_ways = {(code, ours) for code in ("KVC001", "KVC005") for ours in (True, False)}
    assert set(seen) == both_ways  # the cases show each code said by kvlint and left to mypy


def test_findings_after_the_last_hook_or_without_one_are_reported(mypy: Mypy, tmp_path: Path) -> None:
    """KVC002 where no hook of the code fires, KVC001 after the module's last hook, KVC002 in an unannotated body:
    the plugin's own last statement of each module reports them, as `kvlint check` does, with or without
    `check_untyped_defs` (issue 28: a finding must not depend on what code follows it)."""
    late = {"cases/late_dereference.py", "cases/no_hook.py", "cases/untyped.py"}
    engine = set()
    for path in late:
        report = analyse_source((CASES / path).read_bytes(), path, Config())
        engine |= {(path, finding.line, finding.code) for finding in report.findings}
    assert len(engine) == 4
    for mypy_extra in ("", "check_untyped_defs = True\n"):
        tree = case_tree(tmp_path / str(len(mypy_extra)), "mypy.ini", mypy_extra=mypy_extra)
        run = check_cases(mypy, tree, "mypy.ini")
        assert {entry for entry in _reported(run.stdout) if entry[0] in late} == engine, mypy_extra


# -- a finding does not depend on what code follows it (issue 28) ----------------------------------------------

PLACEMENTS = {  # module -> source: each dereference is the module's last hook-free code
    # the aggregator: `outputs` unannotated, the dereference in the last loop of the only function
    "single_function.py": (
        "def aggregate(outputs):\n"
        "    finished = set()\n"
        "    for out in outputs:\n"
        "        kvo = out.kv_connector_output\n"
        "        finished |= kvo.finished_sending\n"
        "    return finished\n"
    ),
    "last_statement.py": (
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def is_idle(out: ModelRunnerOutput) -> bool:\n"
        "    return out.kv_connector_output is None\n\n\n"
        "def last_sent(outputs):\n"
        "    kvo = outputs[-1].kv_connector_output\n"
        "    return kvo.finished_sending\n"
    ),
    "after_loop.py": (
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def first(out: ModelRunnerOutput) -> bool:\n"
        "    return out.kv_connector_output is None\n\n\n"
        "def drain(outputs):\n"
        "    for out in outputs:\n"
        "        first(out)\n"
        "    kvo = outputs[-1].kv_connector_output\n"
        "    print(kvo.finished_recving)\n"
    ),
    # mypy types this value `KVConnectorOutput | None` and reports it itself ([union-attr]): no [kvc] beside it
    "typed_last.py": (
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def last_sent(out: ModelRunnerOutput) -> object:\n"
        "    kvo = out.kv_connector_output\n"
        "    return kvo.finished_sending\n"
    ),
}
VLLM_TOOL_MYPY = (  # vLLM's own [tool.mypy] (pyproject.toml), with kvlint's plugin beside pydantic's
    "[tool.mypy]\nplugins = ['pydantic.mypy', 'kvlint.mypy_plugin']\nfollow_imports = \"silent\"\n"
    "ignore_missing_imports = true\ncheck_untyped_defs = true\nmypy_path = \".\"\nshow_column_numbers = true\n"
)


def _placement_tree(tree: Path, name: str, config_name: str, config: str) -> Path:
    shutil.copytree(CASES / "vllm", tree / "vllm")
    (tree / "placed").mkdir(parents=True)
    (tree / ".git").mkdir()
    (tree / "placed" / name).write_text(PLACEMENTS[name])
    (tree / config_name).write_text(config)
    return tree


@pytest.mark.parametrize("name", list(PLACEMENTS))
@pytest.mark.parametrize("settings", ["check_untyped_defs", "vllm"])
def test_a_finding_is_reported_wherever_it_sits(mypy: Mypy, tmp_path: Path, settings: str, name: str) -> None:
    """The last statement of the last function, after a loop, the last loop of a module's only function: each
    KVC001/KVC005 of the engine is a `[kvc]` error unless mypy gives its own None error on that line; under
    vLLM's `[tool.mypy]` too. Before the plugin appended a hook of its own to each module, mypy said
    "Success" on the first three (no hook fired after the dereference)."""
    if settings == "vllm":
        config, text = "pyproject.toml", VLLM_TOOL_MYPY
    else:
        config, text = "mypy.ini", INI_STYLE.format(mypy_extra="check_untyped_defs = True\n", kvlint="")
    tree = _placement_tree(tmp_path, name, config, text)
    run = mypy.run(tree, "--config-file", config, "--cache-dir", str(tree / ".mypy_cache"), "placed")
    reported = _reported(run.stdout)
    path = f"placed/{name}"
    engine = {(path, f.line, f.code) for f in analyse_source(PLACEMENTS[name].encode(), path, Config()).findings}
    assert engine
    mypy_none = {line for where, line, what in reported if where == path and what in NONE_ERRORS}
    kvc = {entry for entry in reported if entry[0] == path and entry[2].startswith("KVC")}
    assert kvc == {entry for entry in engine if entry[1] not in mypy_none}, run.stdout
    if name == "typed_last.py":  # said once: by mypy
        assert reported == {(path, 6, "union-attr")}, run.stdout
    else:
        assert kvc and not mypy_none, run.stdout


def test_disable_error_code_kvc(mypy: Mypy, tmp_path: Path) -> None:
    """`disable_error_code = kvc` silences the plugin's errors; the narrowing stays."""
    run = check_cases(mypy, case_tree(tmp_path, "mypy.ini", mypy_extra="disable_error_code = kvc\n"), "mypy.ini")
    lines = [line for line in expected("default.txt").splitlines()[:-1] if not line.endswith("[kvc]")]
    errors = [line for line in lines if ": error: " in line]
    files = len({line.split(":")[0] for line in errors})
    checked = len(list((CASES / "cases").glob("*.py")))
    summary = f"Found {len(errors)} errors in {files} file{'s' if files > 1 else ''} (checked {checked} source files)"
    assert (run.stdout, run.status) == ("\n".join([*lines, summary]) + "\n", 1)


@pytest.mark.parametrize("worker", ["0", "1"])
def test_helper_and_in_process_analysis_report_the_same(mypy: Mypy, tmp_path: Path, worker: str) -> None:
    """`KVLINT_MYPY_WORKER=1` forces the helper process, `=0` the engine in mypy's process: same output."""
    run = check_cases(mypy, case_tree(tmp_path, "mypy.ini"), "mypy.ini", env={"KVLINT_MYPY_WORKER": worker})
    assert (run.stdout, run.status) == (expected("default.txt"), 1)


def test_a_dead_helper_costs_nothing_but_time(mypy: Mypy, tmp_path: Path) -> None:
    """A helper process that dies at once: the plugin analyses in mypy's process, same output, no noise."""
    tree = case_tree(tmp_path, "mypy.ini")
    dies_at_once = (
        "import subprocess\nimport kvlint.mypy_plugin as plugin\n"
        "plugin.AnalysisWorker._spawn = lambda self: subprocess.Popen([sys.executable, '-c', 'pass'], "
        "stdin=subprocess.PIPE, stdout=subprocess.PIPE)"
    )
    run = mypy.run(tree, "--config-file", "mypy.ini", "--cache-dir", str(tree / ".mypy_cache"), "cases",
                   prelude=dies_at_once, env={"KVLINT_MYPY_WORKER": "1"})
    assert (run.stdout, run.stderr, run.status) == (expected("default.txt"), "", 1)


LOG_SUBMITTED = (  # record which files the plugin sends to its helper
    "import os\nimport kvlint.mypy_plugin as plugin\nsubmit = plugin.AnalysisWorker.submit\n"
    "def logged(self, path):\n"
    "    with open(os.environ['SUBMITTED_LOG'], 'a') as log:\n"
    "        log.write(path + '\\n')\n"
    "    return submit(self, path)\n"
    "plugin.AnalysisWorker.submit = logged"
)


def test_the_helper_is_sent_only_the_files_that_need_the_engine(mypy: Mypy, tmp_path: Path) -> None:
    """A file whose bytes mention no configured name is answered in mypy's process by the byte scan (issue 27:
    most of a tree), the rest go to the helper; the output is the same."""
    tree = case_tree(tmp_path / "tree", "mypy.ini")
    log = tmp_path / "submitted.log"
    run = mypy.run(tree, "--config-file", "mypy.ini", "--cache-dir", str(tree / ".mypy_cache"), "cases",
                   prelude=LOG_SUBMITTED, env={"KVLINT_MYPY_WORKER": "1", "SUBMITTED_LOG": str(log)})
    assert (run.stdout, run.status) == (expected("default.txt"), 1)
    submitted = {(Path(path).relative_to(tree) if os.path.isabs(path) else Path(path)).as_posix()
                 for path in log.read_text().split()}
    assert {"cases/dereferences.py", "cases/narrowing.py", "vllm/v1/outputs.py"} <= submitted
    assert not submitted & {"cases/__init__.py", "vllm/__init__.py", "vllm/v1/__init__.py"}, submitted


SILENCED_DEPENDENCY = """\
from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput

CONNECTED = has_kv_transfer_group()  # module level: checked (and hooked) even where mypy hides the errors


def idle() -> ModelRunnerOutput:
    if has_kv_transfer_group():
        return EMPTY_MODEL_RUNNER_OUTPUT
    return ModelRunnerOutput(req_ids=[], sampled_token_ids=[])
"""
LOG_ANALYSES = (  # record which files the plugin hands to the engine
    "import os\nimport kvlint.mypy_plugin as plugin\nanalyse = plugin.analyse_module\n"
    "def logged(path, config):\n"
    "    with open(os.environ['ANALYSED_LOG'], 'a') as log:\n"
    "        log.write(path + '\\n')\n"
    "    return analyse(path, config)\n"
    "plugin.analyse_module = logged"
)


@pytest.mark.parametrize("silent", [True, False])
def test_a_module_whose_errors_mypy_hides_is_not_analysed_for_them(mypy: Mypy, tmp_path: Path, silent: bool) -> None:
    """Under `follow_imports = silent` the hooks that still fire (module-level code) need no findings.

    This covers the mypy internal `Errors.ignored_files`: were it misread, the log would list the modules.
    """
    tree = case_tree(tmp_path, "mypy.ini", mypy_extra="follow_imports = silent\n" if silent else "")
    (tree / "dependency.py").write_text(SILENCED_DEPENDENCY)
    (tree / "main.py").write_text("from dependency import idle\n\nidle()\n")
    log = tmp_path / "analysed.log"
    run = mypy.run(tree, "--config-file", "mypy.ini", "--cache-dir", str(tree / ".mypy_cache"), "main.py",
                   *(() if silent else ("dependency.py",)), prelude=LOG_ANALYSES,
                   env={"ANALYSED_LOG": str(log), "KVLINT_MYPY_WORKER": "0"})
    analysed = set(log.read_text().split()) if log.exists() else set()
    if silent:  # main.py is analysed (the plugin's last statement of it is a hook), dependency.py is not
        assert (run.stdout, run.status) == ("Success: no issues found in 1 source file\n", 0)
        assert not [path for path in analysed if path.endswith("dependency.py")], analysed
    else:
        assert "dependency.py:9:9: error: KVC002 `return EMPTY_MODEL_RUNNER_OUTPUT`" in run.stdout
        assert "dependency.py" in analysed


@pytest.mark.parametrize("version", [v for v in MYPY_VERSIONS if int(v.split(".")[0]) >= 2])
def test_mypy_parallel_mode(version: str, tmp_path: Path) -> None:
    """mypy 2's `-n` (1.x has no parallel mode): each worker loads the plugin; the same lines, in any order, but
    those only the plugin's own last function of a module reports: a worker checks a tree of its own, not the
    one `get_additional_deps` saw (python/mypy#21323), so there the plugin has no hook after the module's last
    one, as before issue 28 (docs/mypy.md, Limits)."""
    mypy = mypy_for(version)
    run = check_cases(mypy, case_tree(tmp_path, "mypy.ini"), "mypy.ini", "-n", "2")
    end_only = {"cases/late_dereference.py", "cases/no_hook.py", "cases/untyped.py"}
    lines = expected("default.txt").splitlines()
    wanted = [line for line in lines[:-1] if line.split(":")[0] not in end_only]
    assert (sorted(run.stdout.splitlines()[:-1]), run.status) == (sorted(wanted), 1)
    assert run.stdout.splitlines()[-1] == "Found 27 errors in 4 files (checked 8 source files)"


# -- mypy's incremental cache follows kvlint's configuration ------------------------------------------------------


@pytest.mark.parametrize("style", list(KVLINT_SECTIONS))
def test_cache_follows_kvlint_configuration(mypy: Mypy, tmp_path: Path, style: str) -> None:
    tree = case_tree(tmp_path, style, guard="has_kv_transfer_group")
    first = check_cases(mypy, tree, style)
    again = check_cases(mypy, tree, style)
    assert first.stdout == again.stdout == expected("default.txt")
    config = tree / style
    config.write_text(config.read_text().replace("has_kv_transfer_group", "other_guard"))
    edited = check_cases(mypy, tree, style)
    edited_again = check_cases(mypy, tree, style)
    assert edited.stdout == edited_again.stdout == expected("connector-guards-edited.txt")


def test_a_bad_kvlint_configuration_is_reported(mypy: Mypy, tmp_path: Path) -> None:
    tree = case_tree(tmp_path, "pyproject.toml")
    (tree / "pyproject.toml").write_text((tree / "pyproject.toml").read_text() + "\n[tool.kvlint]\nguards = []\n")
    run = check_cases(mypy, tree, "pyproject.toml")
    complaint = ("KVC configuration error: pyproject.toml: unknown key 'guards' in [tool.kvlint] "
                 "(known keys: ")
    reported = [line for line in run.stdout.splitlines() if "[kvc]" in line]
    checked = {path.relative_to(tree).as_posix() for path in (tree / "cases").glob("*.py")}
    followed = {"vllm/__init__.py", "vllm/v1/__init__.py", "vllm/v1/outputs.py", "vllm/v1/worker/__init__.py",
                "vllm/v1/worker/kv_connector_model_runner_mixin.py", "vllm/distributed/__init__.py",
                "vllm/distributed/kv_transfer.py", "vllm/distributed/ec_transfer.py"}
    # each checked module: the plugin's own last statement of a module is a hook of it
    assert {line.split(":")[0] for line in reported} == checked | followed
    assert all(line.split(": error: ")[1].startswith(complaint) and ":1:1: error:" in line for line in reported)


CONFIG_DATA = """
import json, os, sys
from mypy.options import Options
from mypy.plugin import ReportConfigContext
import mypy.version
import kvlint.mypy_plugin as plugin
instance = plugin.plugin(mypy.version.__version__)(Options())
answers = [instance.report_config_data(ReportConfigContext("m", path, True)) for path in sys.argv[1:]]
print(json.dumps([answers, "kvlint.config" in sys.modules]))
"""


def test_the_data_stored_with_each_module_follows_its_configuration(mypy: Mypy, tmp_path: Path) -> None:
    """`report_config_data`, what mypy compares for each module at every run (a change makes it stale), in a
    fresh process each time as mypy's runs are: the same while nothing changes; a new project root below (the
    defaults' globs are matched from it), a kvlint section, an edit of its settings and an error in it each
    change the answer of the modules below and nowhere else, while an edit of another tool's section does not.
    Where no file configures kvlint, it is made without reading any settings (`kvlint.config` is not imported:
    a run that mypy's cache serves pays only for the directories' four system calls)."""
    (tmp_path / ".git").mkdir()
    for module in ("pkg/a.py", "pkg/sub/b.py", "pkg/sub/deep/c.py", "pkg/stubs.pyi"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("x = 1\n")
    spelled = ["pkg/a.py", "pkg/sub/b.py", "pkg/sub/deep/c.py", str(tmp_path / "pkg/sub/b.py"), "pkg/stubs.pyi",
               "./pkg/sub/../sub/b.py"]
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}

    def data() -> tuple[dict[str, str], bool]:
        completed = subprocess.run([str(mypy.python), "-c", CONFIG_DATA, *spelled], cwd=tmp_path, env=environment,
                                   capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert completed.returncode == 0, completed.stderr
        answers, settings_read = json.loads(completed.stdout)
        found = {path: json.dumps(answer) for path, answer in zip(spelled, answers)}  # what mypy stores
        assert found.pop(str(tmp_path / "pkg/sub/b.py")) == found.pop("./pkg/sub/../sub/b.py") == found["pkg/sub/b.py"]
        assert found.pop("pkg/stubs.pyi") == "null"  # a stub is never analysed
        return found, settings_read

    first, settings_read = data()
    assert len(set(first.values())) == 1 and not settings_read  # one project root, the defaults
    assert data() == (first, False)
    nested = tmp_path / "pkg" / "sub" / "pyproject.toml"
    history = [first]

    def edit(text: str) -> dict[str, str]:
        nested.write_text(text)
        found, _ = data()
        assert found["pkg/a.py"] == first["pkg/a.py"]
        assert found["pkg/sub/b.py"] == found["pkg/sub/deep/c.py"]
        return found

    root_moved = edit("[project]\nname = 'sub'\n")  # no kvlint section: the root the defaults' globs start from
    configured = edit("[tool.kvlint]\nselect = ['KVC001']\n")
    edited = edit("[tool.kvlint]\nselect = ['KVC002']\n")
    unrelated = edit("[tool.kvlint]\nselect = ['KVC002']\n\n[tool.ruff]\nline-length = 99\n")
    broken = edit("[tool.kvlint]\nselekt = ['KVC002']\n")
    history += [root_moved, configured, edited, broken]
    assert len({answers["pkg/sub/b.py"] for answers in history}) == len(history)
    assert unrelated == edited


def test_a_modules_directory_is_the_one_abspath_names(mypy: Mypy, tmp_path: Path) -> None:
    """`report_config_data` keys its answer by a module's directory as mypy spells it and names it absolute
    without `os.path.abspath` where the spelling has nothing to normalise: the same directory either way."""
    spellings = ["", "/", "pkg", "pkg/sub", "/abs/x", "pkg/./sub", "pkg/../sub", "./pkg", "../x", "a//b", "a/", ".",
                 "..", "a/..", "a/.", ".hidden/x", "x/...", "/a/../b", "//a", "a.b/c"]
    script = ("import json, os, sys\nfrom kvlint.mypy_plugin import _absolute_directory as absolute\n"
              "print(json.dumps([[absolute(d, os.getcwd()), os.path.abspath(d or '.')] for d in sys.argv[1:]]))")
    for cwd in (tmp_path, Path("/")):
        completed = subprocess.run([str(mypy.python), "-c", script, *spellings], cwd=cwd, capture_output=True,
                                   text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert completed.returncode == 0, completed.stderr
        assert all(ours == theirs for ours, theirs in json.loads(completed.stdout)), completed.stdout


def test_the_daemon_restarts_when_the_kvlint_configuration_changes(mypy: Mypy, tmp_path: Path) -> None:
    """`dmypy run` compares each plugin's `__version__` before every run; kvlint's carries a digest of its
    configuration, so an edited `[tool.kvlint]` restarts the daemon instead of leaving every unchanged file's
    kvlint errors as they were."""
    tree = case_tree(tmp_path / "tree", "pyproject.toml")
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith(("KVLINT_MYPY_", "MYPY")) and key != "PYTHONPATH"}
    dmypy = [str(mypy.python), "-m", "mypy.dmypy", "--status-file", str(tmp_path / "dmypy.json")]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run([*dmypy, "run", "--", "--config-file", "pyproject.toml", "cases"], cwd=tree,
                              capture_output=True, text=True, env=environment, timeout=600, stdin=subprocess.DEVNULL)

    def errors(output: str, kvc: bool = True) -> list[str]:  # without the daemon's own lines and the count
        return [line for line in output.splitlines()
                if line.startswith("cases/") and (kvc or not line.endswith("[kvc]"))]

    try:
        first = run()
        assert any("KVC002" in line for line in errors(first.stdout)), first.stdout + first.stderr
        again = run()
        assert errors(again.stdout) == errors(first.stdout)
        assert "Restarting" not in again.stdout + again.stderr  # nothing changed: the daemon went on
        with (tree / "pyproject.toml").open("a") as config:
            config.write('\n[tool.kvlint]\nignore = ["KVC002"]\n')
        edited = run()
        assert "Restarting: plugins changed" in edited.stdout + edited.stderr
        assert not any("KVC002" in line for line in errors(edited.stdout))
        assert any("KVC001" in line for line in errors(edited.stdout))
        assert errors(edited.stdout, kvc=False) == errors(first.stdout, kvc=False)  # mypy's own, unchanged
    finally:
        subprocess.run([*dmypy, "kill"], cwd=tree, capture_output=True, env=environment, timeout=120)


# -- versions -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("untested", ["3.0.0", "1.19.1", "0.991"])
def test_refuses_an_untested_mypy(mypy: Mypy, tmp_path: Path, untested: str) -> None:
    run = mypy.run(case_tree(tmp_path, "mypy.ini"), "--config-file", "mypy.ini", "cases",
                   prelude=f"import mypy.version\nmypy.version.__version__ = {untested!r}")
    assert run.status == 2
    assert run.stderr == (
        f"error: kvlint.mypy_plugin is tested with mypy 1.x (from 1.20) and 2.x (from 2.0), not with mypy "
        f"{untested}: install a tested mypy, or set KVLINT_MYPY_ALLOW_UNTESTED=1 to try it anyway\n"
    )


def test_an_untested_mypy_can_be_allowed(mypy: Mypy, tmp_path: Path) -> None:
    tree = case_tree(tmp_path, "mypy.ini")
    run = mypy.run(tree, "--config-file", "mypy.ini", "--cache-dir", str(tree / ".mypy_cache"), "cases",
                   prelude="import mypy.version\nmypy.version.__version__ = '3.0.0'",
                   env={"KVLINT_MYPY_ALLOW_UNTESTED": "1"})
    assert (run.stdout, run.status) == (expected("default.txt"), 1)


# -- real vLLM 0.10.1 -------------------------------------------------------------------------------------------------

VLLM_FILES = (
    "vllm/v1/worker/gpu_worker.py",
    "vllm/v1/worker/kv_connector_model_runner_mixin.py",
    "vllm/v1/outputs.py",
    "vllm/distributed/kv_transfer/kv_connector/utils.py",
)
# mypy errors on these files that the narrowing makes unnecessary: none in 0.10.1, whose four files read
# `kv_connector_output` only where mypy narrows it already (`if not kv_connector_output: return None`)
# or off the connector path (the aggregator, whose errors stay).
NARROWING_REMOVES: tuple[str, ...] = ()


def _vllm_mypy(mypy: Mypy, tree: Path, config: Path, cache_dir: Path) -> MypyRun:
    return mypy.run(tree, "--config-file", str(config), "--cache-dir", str(cache_dir),
                    "--ignore-missing-imports", "--follow-imports=silent", *VLLM_FILES)


def _line_of(path: Path, text: str, after: str) -> int:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


@pytest.mark.vllm
def test_real_vllm_0_10_1(mypy: Mypy, tmp_path: Path) -> None:
    tree = vllm_tree("0.10.1")
    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    (tmp_path / "without" / "mypy.ini").write_text("[mypy]\n")
    (tmp_path / "with" / "mypy.ini").write_text("[mypy]\nplugins = kvlint.mypy_plugin\n")
    # mypy alone on a fixed tree: its incremental cache may replay it; the run with the plugin is always cold
    baseline_cache = CACHE / "mypy-cache" / f"{mypy.version}-vllm-0.10.1-without-plugin"
    without = _vllm_mypy(mypy, tree, tmp_path / "without" / "mypy.ini", baseline_cache)
    with_plugin = _vllm_mypy(mypy, tree, tmp_path / "with" / "mypy.ini", tmp_path / "with" / "cache")
    assert without.stderr == with_plugin.stderr == ""
    baseline = without.stdout.splitlines()[:-1]  # the last line is mypy's summary
    assert not [line for line in baseline if "[kvc]" in line]

    # docs/design.md, "On real vLLM": KVC002 at the bare sentinel returns, with the engine's own messages
    mixin, worker = "vllm/v1/worker/kv_connector_model_runner_mixin.py", "vllm/v1/worker/gpu_worker.py"
    spec_lines = {
        (mixin, _line_of(tree / mixin, "return EMPTY_MODEL_RUNNER_OUTPUT", "def kv_connector_no_forward")),
        (worker, _line_of(tree / worker, "return EMPTY_MODEL_RUNNER_OUTPUT", "is_last_rank")),
    }
    engine = [(path, finding) for path in VLLM_FILES
              for finding in analyse_source((tree / path).read_bytes(), path, Config()).findings]
    assert {(path, finding.line) for path, finding in engine if finding.code == "KVC002"} == spec_lines
    added = sorted(f"{path}:{finding.line}: error: {finding.code} {finding.message}  [kvc]"
                   for path, finding in engine if finding.code == "KVC002")

    reported = with_plugin.stdout.splitlines()[:-1]
    assert sorted(line for line in reported if "[kvc]" in line) == added
    assert [line for line in reported if "[kvc]" not in line] == [
        line for line in baseline if line not in NARROWING_REMOVES]
    errors = len([line for line in reported if ": error: " in line])
    files = len({line.split(":")[0] for line in reported if ": error: " in line})
    assert with_plugin.stdout.splitlines()[-1] == f"Found {errors} errors in {files} files (checked 4 source files)"


# -- vLLM's own wiring: its [tool.mypy] and pre-commit pins, kvlint's plugin beside pydantic's ----------------------

AGGREGATOR = "vllm/distributed/kv_transfer/kv_connector/utils.py"
SEED_GUARD = "            if not output:\n                continue\n"  # KVOutputAggregator.aggregate, vLLM 0.10.1


def vllm_mypy_wiring() -> tuple[str, str, str]:
    """vLLM's `[tool.mypy]` with kvlint's plugin added after `pydantic.mypy` (the text of its sdist's pyproject,
    one line changed), and the mypy and Python versions its pre-commit hook runs mypy with."""
    pyproject = vllm_sdist_file("0.33.0", "pyproject.toml")
    pre_commit = vllm_sdist_file("0.33.0", ".pre-commit-config.yaml")
    lines = pyproject.splitlines(keepends=True)
    start = lines.index("[tool.mypy]\n")
    end = next(n for n in range(start + 1, len(lines))
               if lines[n].startswith("[") and not lines[n].startswith(("[tool.mypy.", "[[tool.mypy.")))
    section = "".join(lines[start:end]).replace(
        "plugins = ['pydantic.mypy']", "plugins = ['pydantic.mypy', 'kvlint.mypy_plugin']")
    ours, theirs = tomllib.loads(section)["tool"]["mypy"], tomllib.loads(pyproject)["tool"]["mypy"]
    assert ours == {**theirs, "plugins": ["pydantic.mypy", "kvlint.mypy_plugin"]}  # only the plugin line changed
    wanted = {"check_untyped_defs": True, "follow_imports": "silent", "ignore_missing_imports": True}
    assert wanted.items() <= ours.items()
    pins = dict(re.findall(r'"(mypy|pydantic)==([0-9.]+)"', pre_commit))
    assert pins == {"mypy": MYPY_VERSIONS[0], "pydantic": PYDANTIC}, "the test venvs install what vLLM pins"
    python = re.search(r'entry: python tools/pre_commit/mypy\.py "([0-9.]+)"', pre_commit)
    assert python is not None
    return section, pins["mypy"], python.group(1)


def _without_line_numbers(output: str) -> list[str]:
    return sorted(re.sub(r"^(\S+?):\d+:\d+:", r"\1:", line) for line in output.splitlines()[:-1])


@pytest.mark.vllm
def test_vllm_wiring_reports_the_seed_bug(tmp_path: Path) -> None:
    """vLLM 0.10.1's aggregator checked the way vLLM runs mypy (its sdist's `[tool.mypy]`: `pydantic.mypy`,
    `check_untyped_defs`, `follow_imports = "silent"`, `ignore_missing_imports`; its pinned mypy and pydantic;
    `--python-version` from its hook) with kvlint's plugin beside pydantic's. mypy's own errors are the same
    with and without the seed bug; the plugin adds KVC001 at its two dereferences, and nothing on the release."""
    section, version, python_version = vllm_mypy_wiring()
    mypy = mypy_for(version)
    shutil.copytree(vllm_tree("0.10.1") / "vllm", tmp_path / "vllm")
    (tmp_path / ".git").mkdir()  # the root of the checkout, for mypy and kvlint alike
    (tmp_path / "pyproject.toml").write_text(section)
    aggregator = tmp_path / AGGREGATOR
    released = aggregator.read_text()

    def check(cache: str) -> MypyRun:  # what vLLM's hook runs for a commit that changes the aggregator
        run = mypy.run(tmp_path, "--python-version", python_version, "--show-column-numbers",
                       "--cache-dir", str(tmp_path / cache), AGGREGATOR)
        assert run.stderr == "" and run.status in (0, 1), run
        return run

    before = check("cache-released")
    assert released.count(SEED_GUARD) == 1
    aggregator.write_text(released.replace(SEED_GUARD, ""))
    after = check("cache-seed")

    assert [line for line in before.stdout.splitlines() if "[kvc]" in line] == []
    mypy_alone = [line for line in _without_line_numbers(before.stdout) if "[kvc]" not in line]
    assert [line for line in _without_line_numbers(after.stdout) if "[kvc]" not in line] == mypy_alone
    seeded = aggregator.read_text().splitlines()
    expected = []
    for field in ("finished_sending", "finished_recving"):
        line = _line_of(aggregator, f"update_finished_set(output.{field},", "def aggregate")
        column = seeded[line - 1].index(f"output.{field}") + 1
        # mypy's own error at this expression is about the re-bound loop variable, not about None
        assert f'{AGGREGATOR}:{line}:{column}: error: "ModelRunnerOutput" has no attribute "{field}"  ' \
               "[attr-defined]" in after.stdout.splitlines()
        expected.append(f"{AGGREGATOR}:{line}:{column}: error: KVC001 `output` may be None (from "
                        f"`output.kv_connector_output`); check it before the attribute access `.{field}`  [kvc]")
    assert [line for line in after.stdout.splitlines() if "[kvc]" in line] == expected
    assert after.status == 1


# -- fuzzing: the plugin survives generated vLLM-shaped programs ---------------------------------------------


def test_plugin_survives_generated_programs(mypy: Mypy, tmp_path: Path) -> None:
    """Generated programs (tests/test_fuzz.py's vLLM-shaped strategy) through mypy with the plugin, in one run."""
    import warnings

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    from tests.test_fuzz import BLOCKS, _indent

    header = (
        "import copy\n"
        "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput\n"
        "from vllm.distributed.kv_transfer import has_kv_transfer_group\n"
        "def get_output() -> KVConnectorOutput | None: ...\n"
    )
    runs: list[MypyRun] = []

    def compiles(program: tuple[list[str], bool]) -> bool:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compile("def f():\n" + "\n".join(_indent(program[0])) + "\n", "generated.py", "exec")
        except SyntaxError:
            return False  # `break` outside a loop: mypy stops at it; not a program anyone writes
        return True

    @settings(max_examples=1, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(BLOCKS, st.booleans()).filter(compiles), min_size=20, max_size=20))
    def check(programs: list[tuple[list[str], bool]]) -> None:
        tree = case_tree(tmp_path / f"run{len(runs)}", "mypy.ini")
        for number, (body, marked) in enumerate(programs):
            marker = "  # kvlint: connector-path" if marked else ""
            source = header + f"def step(out: ModelRunnerOutput, outs: list[ModelRunnerOutput], sched: object, " \
                              f"flag: bool, kvo: KVConnectorOutput | None) -> object:{marker}\n"
            (tree / "cases" / f"generated_{number}.py").write_text(source + "\n".join(_indent(body)) + "\n")
        run = check_cases(mypy, tree, "mypy.ini")
        runs.append(run)
        assert run.status in (0, 1), run.stderr
        assert "INTERNAL ERROR" not in run.stdout + run.stderr and "Traceback" not in run.stderr
        for line in run.stdout.splitlines():
            match = re.match(r"(cases/[\w/]+\.py):(\d+):", line)
            if match and "[kvc]" in line:
                assert int(match.group(2)) <= len((tree / match.group(1)).read_text().splitlines())

    check()
    assert runs

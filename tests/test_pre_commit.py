"""Real pre-commit, as a user first meets kvlint: kvlint's own hook through `pre-commit try-repo`,
and flake8's hook with kvlint in `additional_dependencies`, each on a bad and a good file.

pre-commit is installed from the registry when missing, and builds its hook
environments from the registry. `run` keeps them in PRE_COMMIT_HOME (under
~/.cache/kvlint) until kvlint changes; `try-repo` always builds in a temporary
store. Under CI=true a failure to install fails the test; elsewhere it skips.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.vllm_sources import CACHE

PRE_COMMIT_HOME = CACHE / "pre-commit"
SNAPSHOTS = CACHE / "pre-commit-snapshots"
NOT_SHIPPED = ("tests/", "fixtures/", "bench/", "docs/")  # not part of the installed hook: kept out of the cache key
EXIT_PRE_COMMIT_ERROR = 3  # pre-commit's status for "an unexpected error" (a failed environment install)

BAD = '''\
from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


def execute_model(scheduler_output):
    if has_kv_transfer_group():
        return EMPTY_MODEL_RUNNER_OUTPUT
    return None
'''
GOOD = BAD.replace("if has_kv_transfer_group():", "if not has_kv_transfer_group():")
BROKEN = "def execute_model(:\n    return EMPTY_MODEL_RUNNER_OUTPUT\n"

# PyCQA/flake8's own .pre-commit-hooks.yaml entry, restated as a local hook: github.com is not
# reachable from CI, PyPI is. With `repo: https://github.com/PyCQA/flake8` the hook is the same.
FLAKE8_CONFIG = """\
repos:
  - repo: local
    hooks:
      - id: flake8
        name: flake8
        entry: flake8
        language: python
        types: [python]
        require_serial: true
        additional_dependencies: [{flake8}, {kvlint}]
        args: [--select, "KVC,E999,E902"]
"""


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"pre-commit unavailable under CI: {reason}")
    pytest.skip(f"pre-commit unavailable: {reason}")


def _git(*args: str, cwd: Path) -> str:
    environment = {**os.environ, "GIT_AUTHOR_NAME": "kvlint tests", "GIT_AUTHOR_EMAIL": "tests@kvlint.invalid",
                   "GIT_COMMITTER_NAME": "kvlint tests", "GIT_COMMITTER_EMAIL": "tests@kvlint.invalid",
                   "GIT_AUTHOR_DATE": "2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2025-01-01T00:00:00Z"}
    completed = subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
                               cwd=cwd, env=environment, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, f"git {' '.join(args)}: {completed.stderr}"
    return completed.stdout


@pytest.fixture(scope="module")
def pre_commit() -> list[str]:
    """The pre-commit command, installed from the registry into this interpreter if missing."""
    if shutil.which("git") is None:
        _unavailable("git is not installed")
    if importlib.util.find_spec("pre_commit") is None:
        completed = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "pre-commit"],
                                   capture_output=True, text=True, timeout=900)
        if completed.returncode != 0:
            _unavailable(f"pip install pre-commit failed: {completed.stderr.strip()[-500:]}")
    return [sys.executable, "-m", "pre_commit"]


@pytest.fixture(scope="module")
def kvlint_repo() -> Path:
    """A committed copy of this working tree (tracked and untracked files), as a clean clone would be.

    `try-repo` on a dirty checkout adds only tracked changes (`git add -u`), so new
    files would be missing; a copy keyed by content also lets pre-commit reuse its
    environments until kvlint changes.
    """
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    files = sorted(name for name in listed if name and not name.startswith(NOT_SHIPPED) and (ROOT / name).is_file())
    digest = hashlib.sha256()
    for name in files:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    destination = SNAPSHOTS / digest.hexdigest()[:16]
    if not (destination / ".complete").is_file():
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        building = Path(tempfile.mkdtemp(dir=SNAPSHOTS, prefix=".building-"))
        for name in files:
            (building / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, building / name)
        _git("init", "-q", cwd=building)
        _git("add", "-A", cwd=building)
        _git("commit", "-q", "-m", "kvlint working tree", cwd=building)
        (building / ".complete").write_text("\n")
        try:
            building.rename(destination)
        except OSError:  # another run built it meanwhile
            shutil.rmtree(building, ignore_errors=True)
    for old in SNAPSHOTS.iterdir():  # keep the cache from growing without bound
        if old != destination and time.time() - old.stat().st_mtime > 7 * 86400:
            shutil.rmtree(old, ignore_errors=True)
    return destination


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A throw-away project with a bad, a good and a broken file."""
    repo = tmp_path / "project"
    repo.mkdir()
    _git("init", "-q", cwd=repo)
    (repo / "bad.py").write_text(BAD)
    (repo / "good.py").write_text(GOOD)
    (repo / "broken.py").write_text(BROKEN)
    return repo


def _run(pre_commit: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PRE_COMMIT_HOME": str(PRE_COMMIT_HOME), "PRE_COMMIT_COLOR": "never"}
    environment.pop("PRE_COMMIT_ALLOW_NO_CONFIG", None)
    _git("add", "-A", cwd=cwd)
    completed = subprocess.run([*pre_commit, *args], cwd=cwd, env=environment, capture_output=True, text=True,
                               timeout=1800, stdin=subprocess.DEVNULL)
    if completed.returncode == EXIT_PRE_COMMIT_ERROR:
        log = PRE_COMMIT_HOME / "pre-commit.log"
        detail = log.read_text(errors="replace")[-1500:] if log.is_file() else completed.stdout[-1500:]
        _unavailable(f"pre-commit could not install a hook environment:\n{detail}")
    return completed


def test_kvlint_hook_through_try_repo(pre_commit: list[str], kvlint_repo: Path, user_repo: Path) -> None:
    # try-repo builds its environment in a temporary store each time (about 6 s): two runs only.
    failing = _run(pre_commit, "try-repo", str(kvlint_repo), "kvlint", "--files", "bad.py", "broken.py",
                   cwd=user_repo)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "kvlint" in failing.stdout and "Failed" in failing.stdout
    assert "bad.py:7:9: KVC002 " in failing.stdout
    assert "broken.py:1:" in failing.stdout and "KVC900" in failing.stdout
    passing = _run(pre_commit, "try-repo", str(kvlint_repo), "kvlint", "--files", "good.py", cwd=user_repo)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "Passed" in passing.stdout and "KVC" not in passing.stdout


def test_flake8_hook_with_kvlint_as_additional_dependency(
    pre_commit: list[str], kvlint_repo: Path, user_repo: Path
) -> None:
    config = FLAKE8_CONFIG.format(flake8=f"flake8=={importlib.metadata.version('flake8')}", kvlint=kvlint_repo)
    (user_repo / ".pre-commit-config.yaml").write_text(config)
    failing = _run(pre_commit, "run", "flake8", "--files", "bad.py", cwd=user_repo)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "bad.py:7:9: KVC002 " in failing.stdout
    passing = _run(pre_commit, "run", "flake8", "--files", "good.py", cwd=user_repo)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    broken = _run(pre_commit, "run", "flake8", "--files", "broken.py", cwd=user_repo)
    assert broken.returncode == 1 and "broken.py:1:" in broken.stdout and "E999" in broken.stdout


# --- the vLLM-style configuration of docs/pre-commit.md, run as written (ruff restated locally) ---

DOCS_PRE_COMMIT = ROOT / "docs" / "pre-commit.md"
RUFF_REPO = "https://github.com/astral-sh/ruff-pre-commit"
AGGREGATOR = "vllm/distributed/kv_transfer/kv_connector/utils.py"
AGGREGATOR_GUARD = "            if not kv_output:\n                continue\n"  # KVOutputAggregator.aggregate, 0.33.0
RELEASE = "0.33.0"
KVLINT_ITEM = "vllm-kvlint @ git+<URL of this repository>@<commit>"  # the mypy hook's dependency, as documented
MYPY_HOOK = "Run mypy for the oldest supported Python version"
# vLLM's tools/pre_commit/check_spdx_header.py, reduced to what the hook needs to do here
SPDX_CHECK = '''\
# SPDX-License-Identifier: Apache-2.0
import sys


def lacks_header(path):
    with open(path) as file:
        head = file.read(500)
    return head.strip() and "SPDX-License-Identifier" not in head


missing = [path for path in sys.argv[1:] if lacks_header(path)]
for path in missing:
    print(f"{path}: no SPDX-License-Identifier header")
sys.exit(1 if missing else 0)
'''


def vllm_style_config() -> dict:
    """The YAML block between the vllm-style-config markers of docs/pre-commit.md."""
    import yaml

    text = DOCS_PRE_COMMIT.read_text()
    block = text[text.index("<!-- vllm-style-config:start -->"):text.index("<!-- vllm-style-config:end -->")]
    return yaml.safe_load(block.split("```yaml\n", 1)[1].split("```", 1)[0])


def _runnable(config: dict, kvlint_repo: Path) -> dict:
    """The documented config with its placeholders filled: this tree's commit, ruff from PyPI.

    github.com is not reachable from CI, PyPI is: ruff-pre-commit's `ruff-check` hook is
    restated as a local hook with the same entry and ruff of the same version. The mypy hook's
    `vllm-kvlint @ git+<URL of this repository>@<commit>` gets the copy's file:// URL and commit.
    """
    repos = []
    commit = _git("rev-parse", "HEAD", cwd=kvlint_repo).strip()
    for repo in config["repos"]:
        if repo["repo"] == "<URL of this repository>":
            assert repo["rev"] == "<commit>"  # the docs never name a tag that does not exist
            repo = {**repo, "repo": str(kvlint_repo), "rev": commit}
        elif repo["repo"] == "local":
            hooks = []
            for hook in repo["hooks"]:
                dependencies = [f"vllm-kvlint @ git+{kvlint_repo.as_uri()}@{commit}" if item == KVLINT_ITEM else item
                                for item in hook.get("additional_dependencies", [])]
                hooks.append({**hook, "additional_dependencies": dependencies} if dependencies else hook)
            repo = {**repo, "hooks": hooks}
        elif repo["repo"] == RUFF_REPO:
            version = repo["rev"].removeprefix("v")
            hooks = []
            for hook in repo["hooks"]:
                assert hook["id"] == "ruff-check", hook
                hooks.append({**hook, "name": "ruff check", "entry": "ruff check --force-exclude",
                              "language": "python", "types_or": ["python", "pyi"], "require_serial": True,
                              "additional_dependencies": [f"ruff=={version}"]})
            repo = {"repo": "local", "hooks": hooks}
        repos.append(repo)
    return {**config, "repos": repos}


def _module_files(tree: Path, module: str) -> set[str]:
    """The file of `module` in `tree` and the `__init__.py` of each package on its way, if it is there."""
    parts = module.split(".")
    for candidate in ("/".join(parts) + ".py", "/".join(parts) + "/__init__.py"):
        if (tree / candidate).is_file():
            return {candidate} | {"/".join(parts[:n]) + "/__init__.py" for n in range(1, len(parts))
                                  if (tree / "/".join(parts[:n]) / "__init__.py").is_file()}
    return set()


def _imports(tree: Path, name: str) -> tuple[set[str], set[str]]:
    """(every module `name` imports, the submodules among them taken by `from package import module`)."""
    import ast

    modules, submodules = set(), set()
    for node in ast.walk(ast.parse((tree / name).read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            for alias in node.names:
                if _module_files(tree, f"{node.module}.{alias.name}"):
                    submodules.add(f"{node.module}.{alias.name}")
    return modules | submodules, submodules


def _imported_files(tree: Path, name: str) -> list[str]:
    """What mypy, under vLLM's `follow_imports = "silent"` and `ignore_missing_imports`, needs beside the
    module `name` to type it as in the whole tree: the modules it imports (one level), the packages on their
    way, and, for each file taken, the submodules it imports from a package that is there (`from vllm import
    _custom_ops`: an attribute of a package that is present, which `ignore_missing_imports` does not cover)."""
    modules, _ = _imports(tree, name)
    files = {file for module in [name.removesuffix(".py").replace("/", "."), *modules]
             for file in _module_files(tree, module)}
    waiting = sorted(files - {name})
    while waiting:
        _, submodules = _imports(tree, waiting.pop())
        for module in submodules:
            new = _module_files(tree, module) - files
            files |= new
            waiting += sorted(new)
    return sorted(files - {name})


@pytest.fixture
def vllm_repo(tmp_path: Path) -> Path:
    """A vLLM-shaped project from vLLM 0.33.0: its aggregator and the modules it imports (from the wheel), its
    `tools/pre_commit/mypy.py` and its `pyproject.toml` (from the sdist) with kvlint's plugin after pydantic's,
    and the local SPDX hook script."""
    from tests.support.vllm_sdist import vllm_sdist_file, vllm_sdist_tree
    from tests.support.vllm_sources import vllm_tree

    tree = vllm_tree(RELEASE)
    assert (tree / AGGREGATOR).read_text().count(AGGREGATOR_GUARD) == 1, "the aggregator changed shape"
    repo = tmp_path / "vllm"
    for name in [AGGREGATOR, *_imported_files(tree, AGGREGATOR)]:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tree / name, repo / name)
    (repo / "tools" / "pre_commit").mkdir(parents=True)
    (repo / "tools" / "pre_commit" / "check_spdx_header.py").write_text(SPDX_CHECK)
    shutil.copy(vllm_sdist_tree(RELEASE) / "tools" / "pre_commit" / "mypy.py", repo / "tools" / "pre_commit")
    pyproject = vllm_sdist_file(RELEASE, "pyproject.toml")
    assert pyproject.count("plugins = ['pydantic.mypy']\n") == 1
    (repo / "pyproject.toml").write_text(
        pyproject.replace("plugins = ['pydantic.mypy']\n", "plugins = ['pydantic.mypy', 'kvlint.mypy_plugin']\n"))
    _git("init", "-q", cwd=repo)
    return repo


def _hook_lines(stdout: str) -> dict[str, str]:
    """pre-commit's `name....Passed` lines, by hook name."""
    results = {}
    for line in stdout.splitlines():
        for outcome in ("Passed", "Failed", "(no files to check)Skipped"):
            if line.endswith(outcome) and "..." in line:
                results[line.split("...")[0].strip(". ")] = outcome
    return results


@pytest.mark.vllm
def test_vllm_style_config_from_the_docs_on_the_seed_bug(
    pre_commit: list[str], kvlint_repo: Path, vllm_repo: Path
) -> None:
    """`pre-commit run --all-files` with the documented config passes vLLM 0.33.0 as released and blocks it
    with the aggregator's guard removed: kvlint's hook with KVC001, the mypy hook with mypy's own union-attr,
    which kvlint's plugin does not repeat."""
    import yaml

    config = vllm_style_config()
    assert [repo["repo"] for repo in config["repos"]] == [RUFF_REPO, "<URL of this repository>", "local"]
    (vllm_repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(_runnable(config, kvlint_repo)))

    released = _run(pre_commit, "run", "--all-files", cwd=vllm_repo)
    assert released.returncode == 0, released.stdout + released.stderr
    assert _hook_lines(released.stdout) == {"ruff check": "Passed", "kvlint": "Passed",
                                            "Check SPDX headers": "Passed", MYPY_HOOK: "Passed"}, released.stdout

    aggregator = vllm_repo / AGGREGATOR
    aggregator.write_text(aggregator.read_text().replace(AGGREGATOR_GUARD, ""))
    seeded = _run(pre_commit, "run", "--all-files", cwd=vllm_repo)
    assert seeded.returncode == 1, seeded.stdout + seeded.stderr
    assert _hook_lines(seeded.stdout) == {"ruff check": "Passed", "kvlint": "Failed",
                                          "Check SPDX headers": "Passed", MYPY_HOOK: "Failed"}, seeded.stdout
    lines = [line for line in seeded.stdout.splitlines() if line.startswith(f"{AGGREGATOR}:")]
    kvc001 = [line for line in lines if " KVC001 " in line and ": error: " not in line]  # path:line:col: KVC001
    for field in ("finished_sending", "finished_recving"):
        assert any(line.endswith(f"the attribute access `.{field}`") for line in kvc001), seeded.stdout
    from_mypy = [line for line in lines if ": error: " in line]
    assert from_mypy and all(line.endswith("[union-attr]") for line in from_mypy), seeded.stdout
    mypy_lines = {line.split(":")[1] for line in from_mypy}
    assert mypy_lines <= {line.split(":")[1] for line in kvc001}  # the same dereferences, each said once by mypy


@pytest.mark.vllm
def test_the_documented_mypy_hook_is_vllm_s_with_kvlint_added() -> None:
    """docs/pre-commit.md's mypy hook is vLLM 0.33.0's own (from its sdist) with one more dependency, and
    docs/mypy.md gives the same list in both forms: the git URL of today and the registry's once released."""
    import yaml

    import kvlint
    from tests.support.vllm_sdist import vllm_sdist_file

    theirs = yaml.safe_load(vllm_sdist_file("0.33.0", ".pre-commit-config.yaml"))
    (vllm_hook,) = [hook for repo in theirs["repos"] if repo["repo"] == "local" for hook in repo["hooks"]
                    if hook["id"] == "mypy"]
    (ours,) = [hook for repo in vllm_style_config()["repos"] if repo["repo"] == "local" for hook in repo["hooks"]
               if hook["id"] == "mypy"]
    assert ours == {**vllm_hook, "additional_dependencies": [*vllm_hook["additional_dependencies"], KVLINT_ITEM]}
    released = [*vllm_hook["additional_dependencies"], f"vllm-kvlint=={kvlint.__version__}"]
    for page in ("pre-commit.md", "mypy.md"):
        listed = [yaml.safe_load(line.strip())["additional_dependencies"]
                  for line in (ROOT / "docs" / page).read_text().splitlines()
                  if line.strip().startswith("additional_dependencies: [\"mypy==")]
        assert released in listed, f"docs/{page} lacks the registry form"
        assert [*vllm_hook["additional_dependencies"], KVLINT_ITEM] in listed, f"docs/{page} lacks the git-URL form"

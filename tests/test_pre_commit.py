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
AGGREGATOR_GUARD = "            if not output:\n                continue\n"
# vLLM's tools/pre_commit/check_spdx_header.py, reduced to what the hook needs to do here
SPDX_CHECK = '''\
import sys

missing = [path for path in sys.argv[1:] if "SPDX-License-Identifier" not in open(path).read(500)]
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
    restated as a local hook with the same entry and ruff of the same version.
    """
    repos = []
    for repo in config["repos"]:
        if repo["repo"] == "<URL of this repository>":
            assert repo["rev"] == "<tag or commit>"  # the docs never name a tag that does not exist
            commit = _git("rev-parse", "HEAD", cwd=kvlint_repo).strip()
            repo = {**repo, "repo": str(kvlint_repo), "rev": commit}
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


@pytest.fixture
def vllm_repo(tmp_path: Path) -> Path:
    """A project holding vLLM 0.10.1's aggregator and vLLM's local SPDX hook script."""
    from tests.support.vllm_sources import vllm_tree

    source = (vllm_tree("0.10.1") / AGGREGATOR).read_text()
    assert source.count(AGGREGATOR_GUARD) == 1, "the aggregator changed shape; update the test"
    repo = tmp_path / "vllm"
    (repo / AGGREGATOR).parent.mkdir(parents=True)
    (repo / AGGREGATOR).write_text(source)
    (repo / "tools" / "pre_commit").mkdir(parents=True)
    (repo / "tools" / "pre_commit" / "check_spdx_header.py").write_text(SPDX_CHECK)
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
    import yaml

    config = vllm_style_config()
    assert [repo["repo"] for repo in config["repos"]] == [RUFF_REPO, "<URL of this repository>", "local"]
    (vllm_repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(_runnable(config, kvlint_repo)))

    released = _run(pre_commit, "run", "--files", AGGREGATOR, cwd=vllm_repo)
    assert released.returncode == 0, released.stdout + released.stderr
    assert _hook_lines(released.stdout) == {"ruff check": "Passed", "kvlint": "Passed",
                                            "Check SPDX headers": "Passed"}, released.stdout

    aggregator = vllm_repo / AGGREGATOR
    aggregator.write_text(aggregator.read_text().replace(AGGREGATOR_GUARD, ""))
    seeded = _run(pre_commit, "run", "--files", AGGREGATOR, cwd=vllm_repo)
    assert seeded.returncode == 1, seeded.stdout + seeded.stderr
    assert _hook_lines(seeded.stdout) == {"ruff check": "Passed", "kvlint": "Failed",
                                          "Check SPDX headers": "Passed"}, seeded.stdout
    kvc001 = [line for line in seeded.stdout.splitlines() if line.startswith(f"{AGGREGATOR}:") and " KVC001 " in line]
    assert len(kvc001) == 2, seeded.stdout
    assert "finished_sending" in kvc001[0] and "finished_recving" in kvc001[1]

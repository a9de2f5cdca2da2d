"""kvlint over vLLM's own test suite, examples, benchmarks and tools (issue 16), from the newest source
distribution: the default test-code policy leaves no finding; with `test-ignore = []` every finding is a
consumer-side one (KVC001/KVC005) in a test file, where a crash is only a failing test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlint.config import DEFAULT_TEST_IGNORE, Config, load_config
from tests.conftest import run_kvlint
from tests.support.vllm_sdist import DIRECTORIES, vllm_sdist_tree

pytestmark = pytest.mark.vllm

VERSION = "0.33.0"  # the newest release when last checked; bump with tests/support/vllm_sources.py's


@pytest.fixture(scope="module")
def tree() -> Path:
    return vllm_sdist_tree(VERSION)


def _check(tree: Path, *args: str) -> list[dict[str, object]]:
    completed = run_kvlint("check", "--format", "json", *args, *DIRECTORIES, cwd=tree)
    assert completed.returncode in (0, 1), completed.stderr
    assert completed.stderr == ""
    return json.loads(completed.stdout)


def test_the_sdist_holds_the_four_directories_only(tree: Path) -> None:
    found = {path.relative_to(tree).parts[0] for path in tree.rglob("*.py")}
    assert found == set(DIRECTORIES)
    assert sum(1 for _ in tree.rglob("*.py")) > 2000
    assert (tree / "tests" / "v1" / "kv_connector" / "unit" / "test_output_aggregator.py").is_file()


def test_default_policy_gives_no_finding(tree: Path) -> None:
    """No configuration file (vLLM's pyproject.toml has no [tool.kvlint]): the defaults, rooted at the tree."""
    assert load_config([tree / "tests"]).root == tree
    assert _check(tree) == []


def test_without_the_policy_only_consumer_findings_in_tests(tree: Path, tmp_path: Path) -> None:
    """Only dereferences of the aggregator's result, whose `kv_connector_output` ModelRunnerOutput declares
    Optional, and of its payload's Optional fields: none on the test's own `DummyModelRunnerOutput`, which
    declares the field non-Optional."""
    config_file = tmp_path / "pyproject.toml"
    config_file.write_text("[tool.kvlint]\ntest-ignore = []\n")
    findings = _check(tree, "--config", str(config_file))
    aggregator_test = "tests/v1/kv_connector/unit/test_output_aggregator.py"
    assert {str(f["path"]) for f in findings} == {aggregator_test, "tests/v1/kv_connector/unit/test_nixl_connector.py"}
    # KVC001 on `aggregated.kv_connector_output` (as `kv`), KVC005 on a `| None` payload field of that `kv`
    assert all("aggregated" in str(f["message"]) or str(f["message"]).startswith("`kv.") for f in findings), findings
    assert {f["code"] for f in findings if str(f["message"]).startswith("`kv.")} <= {"KVC005"}
    assert not any("DummyModelRunnerOutput" in str(f["message"]) or "output1" in str(f["message"]) for f in findings)
    defaults = Config(root=tree)
    for finding in findings:
        assert finding["code"] in DEFAULT_TEST_IGNORE, finding
        assert defaults.is_test_file(tree / str(finding["path"])), finding
        assert str(finding["path"]).startswith("tests/"), finding

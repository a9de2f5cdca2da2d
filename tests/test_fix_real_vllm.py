"""`kvlint check --fix --unsafe-fixes` on real code: vLLM 0.10.1 with the seed bug put back, and the example tree.

On each: no fixable finding is left, every file still compiles, the diff touches only the functions
that had findings (and the `import copy` a fix may add), and a second run changes no byte.
"""

from __future__ import annotations

import ast
import difflib
import json
import shutil
import warnings
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_kvlint
from tests.test_real_vllm import AGGREGATOR, MIXIN, WORKER, _without_guard

SEED_GUARD = "            if not output:\n                continue\n"


def _snapshot(tree: Path) -> dict[str, bytes]:
    return {path.relative_to(tree).as_posix(): path.read_bytes() for path in sorted(tree.rglob("*.py"))}


def _function_lines(source: str) -> dict[str, range]:
    """The lines of each function, by the qualified name findings give (`Class.method`, `outer.inner`)."""
    found: dict[str, range] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    found[name] = range(first, (child.end_lineno or child.lineno) + 1)
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _touched_lines(old: str, new: str) -> tuple[set[int], list[str]]:
    """The old file's lines a change replaces or inserts before (1-based), and the lines inserted at the top level."""
    matcher = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    touched: set[int] = set()
    top_level: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        inserted = new.splitlines()[j1:j2]
        if tag == "insert" and all(not line.startswith((" ", "\t")) for line in inserted):
            top_level += inserted
            continue
        touched |= set(range(i1 + 1, i2 + 1)) if i2 > i1 else {i1 + 1}
    return touched, top_level


def _fix_and_check(tree: Path, paths: list[str]) -> str:
    """Fix the tree, check every promise, and return the diff."""
    before = _snapshot(tree)
    findings = json.loads(run_kvlint("check", "--format", "json", "--unsafe-fixes", *paths, cwd=tree).stdout)
    assert any(f["fix"] for f in findings)
    flagged: dict[str, set[str]] = {}
    for finding in findings:
        flagged.setdefault(finding["path"], set()).add(finding["function"])
    fixed = run_kvlint("check", "--fix", "--unsafe-fixes", *paths, cwd=tree)
    assert fixed.stderr == "", fixed.stderr  # no file refused
    assert "fixed, " in fixed.stdout.splitlines()[-1]
    after = _snapshot(tree)
    assert after.keys() == before.keys()
    remaining = json.loads(run_kvlint("check", "--format", "json", "--unsafe-fixes", *paths, cwd=tree).stdout)
    assert [f for f in remaining if f["fix"]] == []  # no fixable finding is left
    diff = []
    for name, data in after.items():
        if data == before[name]:
            continue
        old, new = before[name].decode(), data.decode()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(new, name, "exec")
        functions = _function_lines(old)
        touched, top_level = _touched_lines(old, new)
        assert set(top_level) <= {"import copy", ""}, (name, top_level)
        allowed = set().union(*(functions[f] for f in flagged[name] if f in functions))
        assert touched <= allowed, (name, sorted(touched - allowed))
        diff += difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{name}", f"b/{name}")
    again = run_kvlint("check", "--fix", "--unsafe-fixes", *paths, cwd=tree)
    assert "fixed" not in again.stdout.splitlines()[-1]
    assert _snapshot(tree) == after  # a second run changes no byte
    assert run_kvlint("check", "--diff", "--unsafe-fixes", *paths, cwd=tree).returncode == 0
    return "".join(diff)


@pytest.mark.vllm
def test_vllm_0_10_1_with_the_seed_bug(tmp_path: Path) -> None:
    tree = _without_guard("0.10.1", SEED_GUARD, tmp_path)
    diff = _fix_and_check(tree, ["vllm"])
    (tmp_path / "vllm-0.10.1.diff").write_text(diff)
    changed = sorted({line[6:] for line in diff.splitlines() if line.startswith("+++ b/")})
    assert changed == sorted([AGGREGATOR, MIXIN, WORKER])
    assert "+            if output is None:\n+                continue\n" in diff  # the guard vLLM itself has
    assert diff.count("-                return EMPTY_MODEL_RUNNER_OUTPUT\n") == 1
    assert diff.count("-            return EMPTY_MODEL_RUNNER_OUTPUT\n") == 1
    assert diff.count("+                kv_output.kv_connector_output = kv_connector_output\n") == 1


def test_the_example_tree(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "vllm_like", tmp_path / "vllm_like")
    diff = _fix_and_check(tmp_path, ["vllm_like"])
    assert diff.count("\n+++ b/") + diff.startswith("+++ b/") >= 10


ORACLES = sorted(path.name for path in FIXTURES.glob("realistic*") if path.is_dir())


@pytest.mark.parametrize("oracle", ORACLES)
def test_the_oracle_trees(oracle: str, tmp_path: Path) -> None:
    """The trees written from the contract by people who never read the engine: runners, workers,
    aggregators, connectors, both invariants in one tree."""
    shutil.copytree(FIXTURES / oracle, tmp_path / oracle)
    assert _fix_and_check(tmp_path, [oracle])

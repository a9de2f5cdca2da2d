"""Both of vLLM's invariants on real releases: the encoder-cache connector's `ec_connector_output`
beside the KV connector's, the empty-output policy, and one engine pass for both."""

from __future__ import annotations

import ast
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from kvlint.report.audit import build_audit
from kvlint.config import Config, kv_overrides
from kvlint.running.runner import run
from tests.test_audit import _grep  # reads and writes of a field, by grep
from tests.support.vllm_sources import vllm_tree

pytestmark = pytest.mark.vllm

EC_ACCESS = re.compile(r"\.ec_connector_output\b(?P<write>\s*=(?!=))?")
EC_AGGREGATOR = "vllm/distributed/ec_transfer/ec_connector/utils.py"
KV_AGGREGATOR = "vllm/distributed/kv_transfer/kv_connector/utils.py"
RUNNER = "vllm/v1/worker/gpu_model_runner.py"


def _run(tree: Path, config: Config, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tree)
    return run([Path("vllm")], config, jobs=2)


def _mutated(version: str, tmp_path: Path, edits: dict[str, tuple[str, str]]) -> Path:
    """A copy of the release's `vllm/` with each file's one `old` text replaced by `new`."""
    copy = tmp_path / f"vllm-{version}-mutated"
    shutil.copytree(vllm_tree(version) / "vllm", copy / "vllm")
    for relative, (old, new) in edits.items():
        path = copy / relative
        source = path.read_text()
        assert source.count(old) == 1, f"{relative} changed shape; update the test"
        path.write_text(source.replace(old, new))
    return copy


def _constructions_passing_ec(tree: Path) -> set[tuple[str, int]]:
    """`ModelRunnerOutput(...)` calls with an `ec_connector_output=` keyword, from `ast` (not from kvlint)."""
    found = set()
    for path in sorted((tree / "vllm").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "ec_connector_output" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ModelRunnerOutput"
                    and any(keyword.arg == "ec_connector_output" for keyword in node.keywords)):
                found.add((path.relative_to(tree).as_posix(), node.lineno))
    return found


@pytest.mark.parametrize("version", ["0.13.0", "0.33.0"])
def test_the_ec_inventory_is_what_grep_finds(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM 0.13 is the first release with the encoder-cache output; 0.33 the newest."""
    tree = vllm_tree(version)
    config = Config()
    report = build_audit(_run(tree, config, monkeypatch), config, ["vllm"])
    reads, writes = _grep(tree, EC_ACCESS)
    constructions = _constructions_passing_ec(tree)
    assert constructions, "no construction passes `ec_connector_output=`: has the tree changed shape?"
    if version == "0.33.0":
        assert reads and writes, "the grep found no read or write: has the tree changed shape?"
    ec_reads = Counter((a.position.path, a.position.line) for a in report.connector_output_accesses
                       if a.invariant == "ec")
    ec_writes = Counter((w.position.path, w.position.line) for w in report.connector_output_writes
                        if w.invariant == "ec")
    assert (ec_reads, ec_writes) == (reads, writes)
    assert not any(a.invariant == "kv" and "ec_connector_output" in a.expression
                   for a in report.connector_output_accesses)
    passing = {(c.position.path, c.position.line) for c in report.output_constructions
               if c.invariant == "ec" and c.connector_output_argument and c.function != "<module>"}
    assert passing == constructions
    assert report.summary.sites_by_invariant["ec"]["connector_output_accesses"] == sum(reads.values())


def test_vllm_0_33_0_mutated_ec_paths_are_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The EC aggregator without its `if not ec_output: continue`, and the runner's output built without
    `ec_connector_output=`: every finding names the `ec` invariant; the KV side stays clean."""
    copy = _mutated("0.33.0", tmp_path, {
        EC_AGGREGATOR: ("            if not ec_output:\n                continue\n", ""),
        RUNNER: (
            "                ec_connector_output=ec_connector_output\n"
            "                if self.supports_mm_inputs\n                else None,\n",
            "",
        ),
    })
    findings = _run(copy, Config(), monkeypatch).findings
    assert {f.invariant for f in findings} == {"ec"}
    aggregator = [(f.code, f.source_line.strip()) for f in findings if f.path == EC_AGGREGATOR]
    assert {code for code, _ in aggregator} == {"KVC001"}
    for member in ("finished_sending", "finished_recving", "ec_connector_worker_meta", "ec_connector_stats"):
        assert any(f"ec_output.{member}" in line for _, line in aggregator), member
    dropped = [f for f in findings if f.path == RUNNER]
    assert [(f.code, f.source_line.strip()) for f in dropped] == [("KVC006", "return output")]
    message = dropped[0].message
    assert "`ec_connector_output`" in message and "ec_connector_output=ec_connector_output" in message


def test_one_pass_checks_both_and_presets_choose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`presets = ["kv"]` leaves the EC connector alone; the default finds both kinds in one run."""
    copy = _mutated("0.33.0", tmp_path, {
        EC_AGGREGATOR: ("            if not ec_output:\n                continue\n", ""),
        KV_AGGREGATOR: ("            if not kv_output:\n                continue\n", ""),
    })
    both = _run(copy, Config(), monkeypatch).findings
    assert {(f.invariant, f.code) for f in both} == {("kv", "KVC001"), ("ec", "KVC001")}
    kv_only = _run(copy, Config(presets=("kv",)), monkeypatch).findings
    assert kv_only == [f for f in both if f.invariant == "kv"]
    assert {f.invariant for f in _run(copy, Config(presets=("ec",)), monkeypatch).findings} == {"ec"}


def test_allow_when_empty_on_vllm_0_10_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's school: both findings of docs/design.md ("On real vLLM") return the sentinel where both
    payload sets are empty, so the policy removes exactly those two KVC002; the seed bug's KVC001 stays."""
    tree = vllm_tree("0.10.1")
    upstream = Config(kv_overrides=kv_overrides(empty_output="allow-when-empty"))
    default = _run(tree, Config(), monkeypatch).findings
    assert [f.code for f in default] == ["KVC002", "KVC002"]
    assert _run(tree, upstream, monkeypatch).findings == []
    copy = _mutated("0.10.1", tmp_path, {
        KV_AGGREGATOR: ("            if not output:\n                continue\n", ""),
    })
    seeded = _run(copy, upstream, monkeypatch).findings
    assert [(f.code, f.invariant) for f in seeded] == [("KVC001", "kv")] * 2

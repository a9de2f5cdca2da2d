"""The producer -> consumer graph a person reads (issue 28): modules grouped by package, test code folded into one
node per test directory unless `--graph-tests=expand`, red only where a finding is, and the picture of a whole
vLLM 0.33.0 checkout (package and tests) small enough for one screen.

The pictures in docs/ are this test's output: `KVLINT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest
tests/test_audit_graph.py` writes their `.dot` and `.mmd` and renders the `.png` and `.svg` with Graphviz; without
it, the `.dot` and `.mmd` in docs/ must be what kvlint draws today.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_kvlint
from tests.support.vllm_sdist import vllm_sdist_tree
from tests.support.vllm_sources import vllm_tree
from tests.test_audit_formats import CONSUMERS, HUB, PRODUCERS, _dot_structure, _mermaid_structure, _Structure

DOCS = ROOT / "docs"
UPDATE = os.environ.get("KVLINT_UPDATE_GOLDEN") == "1"
TESTS_CLUSTER = "test code: one node per directory (--graph-tests=expand draws each function)"
RED = "#c62828"

SMALL_TREE = {
    "pyproject.toml": "[tool.kvlint]\n",  # the root `tests/**` is anchored at
    "pkg/worker.py": (
        "from vllm.distributed.kv_transfer import has_kv_transfer_group\n"
        "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput\n\n\n"
        "class Worker:\n"
        "    def execute_model(self) -> ModelRunnerOutput:\n"
        "        if has_kv_transfer_group():\n"
        "            return EMPTY_MODEL_RUNNER_OUTPUT  # KVC002\n"
        "        return ModelRunnerOutput(req_ids=[])\n\n\n"
        "def idle() -> ModelRunnerOutput:\n"
        "    return EMPTY_MODEL_RUNNER_OUTPUT\n"
    ),
    "pkg/scheduler.py": (
        "class Scheduler:\n"
        "    def update_from_output(self, output):\n"
        "        kvo = output.kv_connector_output\n"
        "        if kvo is not None:\n"
        "            print(kvo.finished_sending)\n\n\n"
        "def merge(outputs):\n"
        "    for out in outputs:\n"
        "        print(out.kv_connector_output.finished_recving)\n\n\n"
        "def hushed(outputs):\n"
        "    for out in outputs:\n"
        "        print(out.kv_connector_output.finished_recving)  # noqa: KVC001\n"
    ),
    "pkg/executor.py": (
        "def collect(output):\n"
        "    kvo = output.kv_connector_output\n"
        "    return kvo.finished_sending if kvo else set()\n"
    ),
    "pkg/sub/reader.py": (
        "def read(output):\n"
        "    kvo = output.kv_connector_output\n"
        "    if kvo:\n"
        "        return kvo.finished_sending\n"
        "    return None\n"
    ),
    "tests/unit/test_a.py": (
        "def test_unguarded(output):\n"
        "    assert output.kv_connector_output.finished_sending == set()\n\n\n"
        "def test_guarded(output):\n"
        "    kvo = output.kv_connector_output\n"
        "    assert kvo is not None and kvo.finished_sending == set()\n"
    ),
    "tests/unit/test_b.py": (
        "from vllm.v1.outputs import ModelRunnerOutput\n\n\n"
        "def test_builds():\n"
        "    return ModelRunnerOutput(req_ids=[])\n"
    ),
    "tests/other/test_c.py": (
        "def test_other(output):\n"
        "    assert output.kv_connector_output.finished_recving == set()\n"
    ),
}


@pytest.fixture
def small(tmp_path: Path) -> Path:
    for name, text in SMALL_TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def _graphs(cwd: Path, *args: str) -> list[_Structure]:
    """The graph as mermaid and as dot draw it, read back; both must be the same graph."""
    drawn = []
    for output_format, read in (("mermaid", _mermaid_structure), ("dot", _dot_structure)):
        completed = run_kvlint("audit", *args, "--format", output_format, cwd=cwd)
        assert completed.returncode in (0, 1) and completed.stderr == "", completed.stderr
        drawn.append(read(completed.stdout))
    assert drawn[0] == drawn[1]
    return drawn


def test_test_directories_fold_into_one_node_each_and_expand_brings_the_functions_back(small: Path) -> None:
    graph, _ = _graphs(small, ".")
    folded = {node: status for node, status in graph.nodes.items() if TESTS_CLUSTER in node[0]}
    assert folded == {
        ((PRODUCERS, TESTS_CLUSTER), "tests/unit/ · 1 function in 1 file"): "off",
        ((CONSUMERS, TESTS_CLUSTER), "tests/other/ · 1 function in 1 file"): "quiet",
        ((CONSUMERS, TESTS_CLUSTER), "tests/unit/ · 2 functions in 1 file"): "quiet",
    }
    assert not any(label.startswith("test_") for _, label in graph.nodes)
    # the folded node holds the edges of its functions, one line per fact
    unit = ((CONSUMERS, TESTS_CLUSTER), "tests/unit/ · 2 functions in 1 file")
    assert {(HUB, "unguarded dereference", unit), (HUB, "guarded dereference", unit)} <= graph.edges

    expanded, _ = _graphs(small, ".", "--graph-tests=expand")
    assert not any(TESTS_CLUSTER in clusters for clusters, _ in expanded.nodes)
    tests = {node: status for node, status in expanded.nodes.items() if node[0][1].startswith("tests/")}
    assert tests == {
        ((PRODUCERS, "tests/unit/test_b.py"), "test_builds"): "off",
        ((CONSUMERS, "tests/other/test_c.py"), "test_other"): "quiet",
        ((CONSUMERS, "tests/unit/test_a.py"), "test_guarded"): "ok",
        ((CONSUMERS, "tests/unit/test_a.py"), "test_unguarded"): "quiet",
    }
    # package code is drawn the same either way
    assert {n: s for n, s in graph.nodes.items() if TESTS_CLUSTER not in n[0]} == \
        {n: s for n, s in expanded.nodes.items() if not n[0][1].startswith("tests/")}


def test_the_option_is_spelled_as_the_other_audit_options(small: Path) -> None:
    """`--graph-tests fold|expand`, as `--color auto|always|never`: a wrong value is a usage error (exit 2)."""
    assert run_kvlint("audit", ".", "--format", "dot", "--graph-tests", "expand", cwd=small).returncode == 1
    wrong = run_kvlint("audit", ".", "--format", "dot", "--graph-tests", "all", cwd=small)
    assert wrong.returncode == 2 and "--graph-tests" in wrong.stderr and "Traceback" not in wrong.stderr
    assert "--graph-tests" in run_kvlint("audit", "--help").stdout


def test_red_only_where_a_finding_is(small: Path) -> None:
    """The KVC002 return and the reported KVC001 are red; an unguarded dereference kvlint does not report (a test
    file under the test-code policy, a `# noqa`, an `--ignore`d code) is orange ("quiet"), in node and edge."""
    findings = json.loads(run_kvlint("check", ".", "--format", "json", cwd=small).stdout)
    assert {(f["path"], f["function"], f["code"]) for f in findings} == {
        ("pkg/worker.py", "Worker.execute_model", "KVC002"), ("pkg/scheduler.py", "merge", "KVC001")}
    for graph in _graphs(small, ".", "--graph-tests=expand"):
        red = {label for (_, label), status in graph.nodes.items() if status == "bad"}
        assert red == {"Worker.execute_model", "merge"}
        assert graph.nodes[((CONSUMERS, "pkg/", "scheduler.py"), "hushed")] == "quiet"
    dot = run_kvlint("audit", ".", "--format", "dot", "--graph-tests=expand", cwd=small).stdout
    red_edges = [line for line in dot.splitlines() if "->" in line and RED in line]
    assert len(red_edges) == 2, red_edges
    quiet = [line for line in dot.splitlines() if "->" in line and "style=dotted" in line]
    assert len(quiet) == 3 and all("#b26a00" in line for line in quiet), quiet  # hushed, test_other, test_unguarded
    ignored = _graphs(small, ".", "--ignore", "KVC001")[0]
    assert {label for (_, label), status in ignored.nodes.items() if status == "bad"} == {"Worker.execute_model"}
    assert ignored.nodes[((CONSUMERS, "pkg/", "scheduler.py"), "merge")] == "quiet"


def test_modules_are_grouped_by_package(small: Path) -> None:
    """A package of several modules is a cluster holding one per module; a package of one module is that module's
    cluster, named by its path. Every function sits in the cluster of its own file."""
    for graph in _graphs(small, ".", "--graph-tests=expand"):
        where = {label: clusters for clusters, label in graph.nodes}
        assert where["Scheduler.update_from_output"] == where["merge"] == (CONSUMERS, "pkg/", "scheduler.py")
        assert where["collect"] == (CONSUMERS, "pkg/", "executor.py")
        assert where["read"] == (CONSUMERS, "pkg/sub/reader.py")
        assert where["Worker.execute_model"] == where["idle"] == (PRODUCERS, "pkg/worker.py")
        assert where["test_unguarded"] == (CONSUMERS, "tests/unit/test_a.py")


# --- the whole vLLM 0.33.0 checkout -----------------------------------------------------------------------------

VERSION = "0.33.0"


def _checkout(root: Path, kvlint_table: str = "") -> Path:
    """vLLM 0.33.0 as a checkout holds it: `vllm/` (from the wheel), `tests/` and `pyproject.toml` (from the
    sdist, with KVLINT_TABLE added), the directories linked from the cache."""
    package, sdist = vllm_tree(VERSION), vllm_sdist_tree(VERSION)
    (root / "vllm").symlink_to(package / "vllm", target_is_directory=True)
    (root / "tests").symlink_to(sdist / "tests", target_is_directory=True)
    (root / "pyproject.toml").write_text((sdist / "pyproject.toml").read_text() + kvlint_table)
    return root


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _checkout(tmp_path_factory.mktemp("vllm-checkout"))


def _file_of(clusters: tuple[str, ...]) -> str:
    """The file a node's clusters name: (side, package/, module.py) or (side, path/of/module.py)."""
    return "".join(clusters[1:])


def _dot_program() -> str:
    found = shutil.which("dot")
    if found is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("graphviz's `dot` is missing under CI (.ci/run installs it)")
        pytest.skip("graphviz is not installed")
    return found


def _bounding_box(dot_program: str, dot_text: str) -> tuple[float, float]:
    """The laid-out graph's width and height in inches, from `dot -Tplain` (`graph SCALE WIDTH HEIGHT`)."""
    plain = subprocess.run([dot_program, "-Tplain"], input=dot_text, capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr
    _, _, width, height = plain.stdout.split("\n", 1)[0].split()
    return float(width), float(height)


def _png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", header[16:24])


def _compare_or_write(name: str, text: str) -> None:
    path = DOCS / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"docs/{name} is not what kvlint draws; KVLINT_UPDATE_GOLDEN=1"


def _render_docs(dot_program: str, stem: str) -> None:
    """docs/STEM.dot -> .png (96 dpi) and .svg, as docs/audit.md says."""
    source = DOCS / f"{stem}.dot"
    for output_format, options in (("png", ["-Gdpi=96"]), ("svg", [])):
        subprocess.run([dot_program, f"-T{output_format}", *options, str(source), "-o",
                        str(DOCS / f"{stem}.{output_format}")], check=True, timeout=300)


@pytest.mark.vllm
def test_the_whole_checkout_fits_one_screen(checkout: Path, tmp_path: Path) -> None:
    """Package and tests of vLLM 0.33.0 (issue 28: 2305x12656 px before) lay out within 26x26 inches (2496 px at
    96 dpi), with at most 60 function or directory nodes; expanded, the same tree is the hairball the bound
    exists for. It holds no finding, so nothing is red; the aggregator test's unguarded, unreported dereferences
    are orange."""
    dot_program = _dot_program()
    drawn = {}
    for output_format in ("dot", "mermaid"):
        completed = run_kvlint("audit", "vllm", "tests", "--format", output_format, cwd=checkout)
        assert completed.returncode == 0 and completed.stderr == "", completed.stderr
        drawn[output_format] = completed.stdout
    graph = _dot_structure(drawn["dot"])
    assert graph == _mermaid_structure(drawn["mermaid"])
    assert len(graph.nodes) <= 60, len(graph.nodes)
    width, height = _bounding_box(dot_program, drawn["dot"])
    assert width <= 26 and height <= 26, (width, height)
    assert RED not in drawn["dot"] and "bad" not in {status for status in graph.nodes.values()}
    quiet = {label for (_, label), status in graph.nodes.items() if status == "quiet"}
    assert {label.split(" · ")[0] for label in quiet} == {"tests/v1/kv_connector/unit/"}, quiet

    # one node per test directory the inventory has a producer or consumer in, counting its functions
    inventory = json.loads(run_kvlint("audit", "vllm", "tests", "--format", "json", cwd=checkout).stdout)
    folded = {label.split(" · ")[0].rstrip("/") for clusters, label in graph.nodes if TESTS_CLUSTER in clusters}
    in_tests = {entry["path"].rsplit("/", 1)[0]
                for kind in ("output_constructions", "sentinel_uses", "connector_output_accesses",
                             "connector_output_writes", "dereferences")
                for entry in inventory[kind] if entry["test_file"]}
    assert folded == in_tests and len(folded) >= 8, (folded, in_tests)
    assert not any(label.startswith("test_") for _, label in graph.nodes)

    expanded = run_kvlint("audit", "vllm", "tests", "--format", "dot", "--graph-tests=expand", cwd=checkout).stdout
    expanded_graph = _dot_structure(expanded)
    assert len(expanded_graph.nodes) > 3 * len(graph.nodes)
    assert _bounding_box(dot_program, expanded)[1] > 3 * height  # what the bound would catch
    assert RED not in expanded  # no finding: no red node among the 180, tests or not

    png = tmp_path / "whole.png"
    subprocess.run([dot_program, "-Tpng", "-Gdpi=96", "-o", str(png)], input=drawn["dot"], text=True, check=True,
                   timeout=300)
    assert max(_png_size(png)) <= 26 * 96 + 10
    _compare_or_write(f"vllm-{VERSION}-connector-graph.dot", drawn["dot"])
    _compare_or_write(f"vllm-{VERSION}-connector-graph.mmd", drawn["mermaid"])
    if UPDATE:
        _render_docs(dot_program, f"vllm-{VERSION}-connector-graph")


@pytest.mark.vllm
def test_findings_in_test_code_are_red_in_their_directory_node(tmp_path: Path) -> None:
    """With `test-ignore = []` the aggregator's and the NIXL connector's tests hold KVC001/KVC005 findings: their
    directory's node is red folded, and expanded exactly the functions that hold one."""
    checkout = _checkout(tmp_path, "\n[tool.kvlint]\ntest-ignore = []\n")
    findings = json.loads(run_kvlint("check", "vllm", "tests", "--format", "json", cwd=checkout).stdout)
    assert findings and all(str(f["path"]).startswith("tests/") for f in findings)
    folded = _dot_structure(run_kvlint("audit", "vllm", "tests", "--format", "dot", cwd=checkout).stdout)
    red = {label.split(" · ")[0] for (_, label), status in folded.nodes.items() if status == "bad"}
    assert red == {"tests/v1/kv_connector/unit/"}
    expanded = _dot_structure(run_kvlint("audit", "vllm", "tests", "--format", "dot", "--graph-tests=expand",
                                         cwd=checkout).stdout)
    red_functions = {(_file_of(clusters), label) for (clusters, label), status in expanded.nodes.items()
                     if status == "bad"}
    assert red_functions == {(str(f["path"]), str(f["function"])) for f in findings}


@pytest.mark.vllm
def test_the_seed_bug_release_is_drawn_with_its_findings_red() -> None:
    """vLLM 0.10.1's package: its two KVC002 returns are the red producers (docs/vllm-0.10.1-connector-graph.*)."""
    dot_program = _dot_program()
    tree = vllm_tree("0.10.1")
    findings = json.loads(run_kvlint("check", "vllm", "--format", "json", cwd=tree).stdout)
    assert sorted(f["code"] for f in findings) == ["KVC002", "KVC002"]
    drawn = {output_format: run_kvlint("audit", "vllm", "--format", output_format, "--exit-zero", cwd=tree).stdout
             for output_format in ("dot", "mermaid")}
    graph = _dot_structure(drawn["dot"])
    assert graph == _mermaid_structure(drawn["mermaid"])
    red = {label for (_, label), status in graph.nodes.items() if status == "bad"}
    assert red == {str(f["function"]) for f in findings}
    width, height = _bounding_box(dot_program, drawn["dot"])
    assert width <= 26 and height <= 26, (width, height)
    _compare_or_write("vllm-0.10.1-connector-graph.dot", drawn["dot"])
    _compare_or_write("vllm-0.10.1-connector-graph.mmd", drawn["mermaid"])
    if UPDATE:
        _render_docs(dot_program, "vllm-0.10.1-connector-graph")


def test_the_docs_show_the_pictures_this_test_draws() -> None:
    text = (DOCS / "audit.md").read_text()
    for stem in (f"vllm-{VERSION}-connector-graph", "vllm-0.10.1-connector-graph"):
        assert f"]({stem}.png)" in text
        for extension in ("dot", "mmd", "png", "svg"):
            assert (DOCS / f"{stem}.{extension}").is_file(), f"{stem}.{extension}"
    assert re.search(r"kvlint audit vllm tests --format dot", text)

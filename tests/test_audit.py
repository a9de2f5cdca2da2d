"""`kvlint audit`: the inventory model, its JSON schema, the command line, and the real vLLM 0.10.1 tree."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kvlint.report.audit import AUDIT_FORMAT_VERSION, AUDIT_JSON_SCHEMA, INVENTORY_LISTS
from kvlint.sites import SiteKind
from tests.conftest import ROOT, run_kvlint

FIXTURE_TREE = "fixtures/vllm_like"
BAD = "def f(out):\n    return out.kv_connector_output.finished_sending\n"


def _audit_json(*args: str, cwd: Path | None = None) -> dict:
    completed = run_kvlint("audit", *args, "--format", "json", cwd=cwd)
    assert completed.returncode in (0, 1), completed.stderr
    return json.loads(completed.stdout)


@pytest.fixture(scope="module")
def fixture_audit() -> dict:
    return _audit_json(FIXTURE_TREE)


def test_every_site_kind_has_an_inventory_list() -> None:
    assert set(INVENTORY_LISTS) == set(SiteKind)


def test_json_follows_the_documented_schema(fixture_audit: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(AUDIT_JSON_SCHEMA)
    jsonschema.validate(fixture_audit, AUDIT_JSON_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert fixture_audit["version"] == AUDIT_FORMAT_VERSION


def test_documentation_names_every_json_field() -> None:
    doc = (ROOT / "docs" / "audit.md").read_text(encoding="utf-8")

    def fields(schema: dict) -> set[str]:
        names = set(schema.get("properties", {}))
        for value in schema.get("properties", {}).values():
            names |= fields(value)
            if isinstance(value.get("items"), dict):
                names |= fields(value["items"])
        return names

    missing = {
        name
        for name in fields(AUDIT_JSON_SCHEMA)
        if not re.search(rf"[`.]{name}[`.]", doc) and not name.startswith("KVC")
    }
    assert not missing, f"docs/audit.md does not describe: {sorted(missing)}"


def test_findings_are_exactly_those_of_check(fixture_audit: dict) -> None:
    check = json.loads(run_kvlint("check", FIXTURE_TREE, "--format", "json").stdout)
    assert fixture_audit["findings"] == check


def test_summary_counts_the_lists(fixture_audit: dict) -> None:
    summary = fixture_audit["summary"]
    for name, count in summary["sites"].items():
        assert len(fixture_audit[name]) == count
    assert summary["findings"]["total"] == len(fixture_audit["findings"])
    assert summary["findings"]["by_rule"] == {
        code: sum(1 for f in fixture_audit["findings"] if f["code"] == code) for code in summary["findings"]["by_rule"]
    }
    files = summary["files"]
    assert files == {"scanned": 22, "analysed": 21, "not_checked": 0, "skipped": 1, "test": 0}
    assert files["scanned"] == files["analysed"] + files["not_checked"] + files["skipped"]


def test_inventory_entries_carry_their_facts(fixture_audit: dict) -> None:
    constructions = {(c["path"].rsplit("/", 1)[1], c["line"]): c for c in fixture_audit["output_constructions"]}
    bad = constructions[("paths.py", 30)]
    assert (bad["on_connector_path"], bad["carries_connector_output"]) == (True, False)
    assert bad["path_reason"] and bad["function"]
    good = constructions[("paths.py", 24)]
    assert (good["on_connector_path"], good["carries_connector_output"], good["connector_output_argument"]) == (
        True,
        True,
        "kvo",
    )
    assert constructions[("paths.py", 72)]["carries_connector_output"] is None  # **fields: cannot tell
    uses = Counter(u["use"] for u in fixture_audit["sentinel_uses"])
    assert set(uses) == {"returned", "copied", "mutated", "aliased"}
    accesses = fixture_audit["connector_output_accesses"]
    assert any(a["guarded"] and a["guard"] for a in accesses)
    assert any(not a["guarded"] and a["guard"] == "" for a in accesses)
    assert {s["kind"] for s in fixture_audit["connector_scopes"]} == {"context", "function", "guard"}


def test_jobs_one_and_two_give_byte_identical_json() -> None:
    outputs = [run_kvlint("audit", FIXTURE_TREE, "--format", "json", "--jobs", jobs).stdout for jobs in ("1", "2")]
    assert outputs[0] == outputs[1]
    assert len(json.loads(outputs[0])["findings"]) > 100


def test_exit_status_and_default_path(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("def f(out):\n    return out.kv_connector_output\n")
    clean = run_kvlint("audit", "--format", "json", cwd=tmp_path)
    assert clean.returncode == 0, clean.stderr
    report = json.loads(clean.stdout)
    assert report["paths"] == ["."]
    assert [a["path"] for a in report["connector_output_accesses"]] == ["clean.py"]
    (tmp_path / "bad.py").write_text(BAD)
    assert run_kvlint("audit", cwd=tmp_path).returncode == 1
    assert run_kvlint("audit", "--exit-zero", cwd=tmp_path).returncode == 0
    missing = run_kvlint("audit", "nowhere", cwd=tmp_path)
    assert missing.returncode == 2 and "nowhere" in missing.stderr
    assert run_kvlint("audit", "--format", "yaml", cwd=tmp_path).returncode == 2


def test_select_and_ignore_filter_findings_not_the_inventory(fixture_audit: dict) -> None:
    selected = _audit_json(FIXTURE_TREE, "--select", "KVC002")
    assert {f["code"] for f in selected["findings"]} == {"KVC002"}
    assert selected["sentinel_uses"] == fixture_audit["sentinel_uses"]
    ignored = _audit_json(FIXTURE_TREE, "--ignore", "KVC001,KVC005")
    assert {f["code"] for f in ignored["findings"]} == {"KVC002", "KVC003", "KVC004", "KVC006", "KVC101"}


def test_files_that_cannot_be_checked_are_counted(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def f(out:\n    return out.kv_connector_output\n")
    (tmp_path / "other.py").write_text("x = 1\n")
    report = _audit_json(".", cwd=tmp_path)
    assert report["summary"]["files"] == {"scanned": 2, "analysed": 0, "not_checked": 1, "skipped": 1, "test": 0}
    assert [f["code"] for f in report["findings"]] == ["KVC900"]
    assert report["files"] == [{"path": "broken.py", "analysed": False, "test_file": False}]


def test_output_file_is_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    target.chmod(0o640)
    completed = run_kvlint("audit", FIXTURE_TREE, "--format", "json", "--output", str(target))
    assert completed.returncode == 1 and completed.stdout == ""
    assert target.read_text() == run_kvlint("audit", FIXTURE_TREE, "--format", "json").stdout
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    text = run_kvlint("audit", FIXTURE_TREE, "--output", str(tmp_path / "report.txt"))
    assert "\x1b" not in (tmp_path / "report.txt").read_text()
    assert text.stdout == ""
    unwritable = run_kvlint("audit", FIXTURE_TREE, "--output", str(tmp_path / "no" / "such" / "dir.txt"))
    assert unwritable.returncode == 2 and "cannot write" in unwritable.stderr


# ------------------------------------------------------------ on a terminal


def _run_on_terminal(args: list[str], cwd: Path, stream: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    """Run kvlint with `stream` ("stdout" or "stderr") on a pseudo-terminal; return (terminal text, other stream)."""
    master, slave = pty.openpty()
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "TERM": "xterm-256color", **(env or {})}
    if "NO_COLOR" not in (env or {}):
        environment.pop("NO_COLOR", None)
    kwargs = (
        {"stdout": slave, "stderr": subprocess.PIPE}
        if stream == "stdout"
        else {"stdout": subprocess.PIPE, "stderr": slave}
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "kvlint", *args], cwd=cwd, env=environment, stdin=subprocess.DEVNULL, **kwargs
    )
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    other = (process.stderr if stream == "stdout" else process.stdout).read()
    process.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace"), other.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("many")
    for number in range(30):
        (root / f"module_{number:02}.py").write_text(
            f"def consume_{number}(out):\n    kvo = out.kv_connector_output\n    return kvo\n"
        )
    return root


def test_progress_bar_on_a_terminal_only(many_files: Path) -> None:
    terminal, stdout = _run_on_terminal(["audit", ".", "--jobs", "1"], many_files, "stderr")
    assert "analysing" in terminal and "30" in terminal
    assert "module_00.py" in stdout
    quiet, _ = _run_on_terminal(["audit", ".", "--jobs", "1", "--quiet"], many_files, "stderr")
    assert quiet == ""
    piped = run_kvlint("audit", ".", cwd=many_files)
    assert piped.stderr == ""


def test_colour_only_on_a_terminal(many_files: Path) -> None:
    (many_files / "bad.py").write_text(BAD)
    try:
        coloured, _ = _run_on_terminal(["audit", "bad.py"], many_files, "stdout")
        assert "\x1b[" in coloured and "KVC001" in coloured
        plain, _ = _run_on_terminal(["audit", "bad.py"], many_files, "stdout", env={"NO_COLOR": "1"})
        assert "\x1b[" not in plain and "KVC001" in plain
    finally:
        (many_files / "bad.py").unlink()


# ------------------------------------------------------------- real vLLM

MIXIN = "vllm/v1/worker/kv_connector_model_runner_mixin.py"
WORKER = "vllm/v1/worker/gpu_worker.py"
CONSTRUCTION = re.compile(r"\bModelRunnerOutput\(")
ACCESS = re.compile(r"\.kv_connector_output\b(?P<write>\s*=(?!=))?")
# Engine gap (reported to the owner): a construction at module level in the module that defines the class
# (`EMPTY_MODEL_RUNNER_OUTPUT = ModelRunnerOutput(...)` in vllm/v1/outputs.py) yields no site.


def _grep(tree: Path, pattern: re.Pattern[str]) -> tuple[Counter[tuple[str, int]], Counter[tuple[str, int]]]:
    """(reads, writes): every match of `pattern` in `vllm/**/*.py`, by (path, line); `write` groups are writes."""
    reads: Counter[tuple[str, int]] = Counter()
    writes: Counter[tuple[str, int]] = Counter()
    for path in sorted((tree / "vllm").rglob("*.py")):
        relative = path.relative_to(tree).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            for match in pattern.finditer(line):
                (writes if match.groupdict().get("write") else reads)[(relative, number)] += 1
    return reads, writes


@pytest.fixture(scope="module")
def vllm_0_10_1():
    from tests.support.vllm_sources import vllm_tree

    tree = vllm_tree("0.10.1")
    completed = run_kvlint("audit", "vllm", "--format", "json", "--jobs", "2", cwd=tree)
    assert completed.returncode == 1, completed.stderr
    return tree, completed.stdout, json.loads(completed.stdout)


@pytest.mark.vllm
def test_vllm_inventory_lists_every_read_grep_finds(vllm_0_10_1) -> None:
    tree, _, report = vllm_0_10_1
    reads, writes = _grep(tree, ACCESS)
    listed = Counter((a["path"], a["line"]) for a in report["connector_output_accesses"])
    assert len(reads) >= 4 and len(writes) >= 4, "the grep found too little: has the tree changed shape?"
    assert listed == reads
    assert not set(writes) & set(listed) - set(reads), "a write is listed as a read"


@pytest.mark.vllm
def test_vllm_inventory_lists_every_write_grep_finds(vllm_0_10_1) -> None:
    tree, _, report = vllm_0_10_1
    _, writes = _grep(tree, ACCESS)
    assert Counter((w["path"], w["line"]) for w in report["connector_output_writes"]) == writes


@pytest.mark.vllm
def test_vllm_inventory_lists_every_construction_grep_finds(vllm_0_10_1) -> None:
    tree, _, report = vllm_0_10_1
    found, _ = _grep(tree, CONSTRUCTION)
    kv = [c for c in report["output_constructions"] if c["invariant"] == "kv"]
    assert Counter((c["path"], c["line"]) for c in kv) == found
    # every construction is one of each invariant's (ModelRunnerOutput is both presets' output class)
    ec = [c for c in report["output_constructions"] if c["invariant"] == "ec"]
    assert sorted((c["path"], c["line"]) for c in ec) == sorted((c["path"], c["line"]) for c in kv)
    assert len(report["output_constructions"]) == 2 * len(kv)
    bare = [c for c in kv if not c["carries_connector_output"]]
    assert [(c["path"], c["function"]) for c in bare] == [("vllm/v1/outputs.py", "<module>")]  # the sentinel itself


@pytest.mark.vllm
def test_vllm_findings_are_those_of_spec_section_8(vllm_0_10_1) -> None:
    tree, _, report = vllm_0_10_1

    def line_of(path: str, text: str, after: str) -> int:
        lines = (tree / path).read_text().splitlines()
        start = next(i for i, line in enumerate(lines) if after in line)
        return next(i for i in range(start, len(lines)) if text in lines[i]) + 1

    expected = [
        (MIXIN, line_of(MIXIN, "return EMPTY_MODEL_RUNNER_OUTPUT", "def kv_connector_no_forward"), "KVC002"),
        (WORKER, line_of(WORKER, "return EMPTY_MODEL_RUNNER_OUTPUT", "is_last_rank"), "KVC002"),
    ]
    assert [(f["path"], f["line"], f["code"]) for f in report["findings"]] == sorted(expected)
    returned = {(u["path"], u["line"]): u for u in report["sentinel_uses"] if u["use"] == "returned"}
    for path, line, _ in expected:
        assert returned[(path, line)]["on_connector_path"] is True
    scopes = [(s["path"], s["kind"]) for s in report["connector_scopes"]]
    assert (MIXIN, "context") in scopes


@pytest.mark.vllm
def test_vllm_jobs_one_and_two_give_byte_identical_json(vllm_0_10_1) -> None:
    tree, two, _ = vllm_0_10_1
    one = run_kvlint("audit", "vllm", "--format", "json", "--jobs", "1", cwd=tree).stdout
    assert one == two

"""`kvlint check --fix`: before/after pairs for every fix kind, the guarantees, and the command line.

The pairs live in `fixtures/fixes/` (`NAME.py` before, `NAME.fixed.py` after `--fix --unsafe-fixes`);
each is also checked with CRLF line endings, tab indentation and a byte order mark, made from it here.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.config import Config
from kvlint.engine import analyse_source
from kvlint.source import module_name_for
from kvlint.fixing.passes import MAX_PASSES, fix_source
from kvlint.fixing.model import Applicability, Edit, Fix
from kvlint.rules import RULES
from kvlint.running.runner import index_tree
from tests.conftest import FIXTURES, ROOT, run_kvlint
from tests.test_fuzz import BLOCKS, _indent, fuzz

FIXES = FIXTURES / "fixes"
PAIRS = sorted(path.name[: -len(".fixed.py")] for path in FIXES.glob("*.fixed.py"))
CONFIG = Config()
INDEX, _ = index_tree([FIXES], CONFIG)


def _variant(text: str, kind: str) -> str:
    if kind == "crlf":
        return text.replace("\n", "\r\n")
    if kind == "tabs":
        return re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), text, flags=re.MULTILINE)
    if kind == "bom":
        return "\ufeff" + text
    return text


def _fix(name: str, text: str, unsafe: bool = True):  # type: ignore[no-untyped-def]
    module_name, is_package = module_name_for(FIXES / f"{name}.py")
    return fix_source(text, f"fixtures/fixes/{name}.py", CONFIG, INDEX, unsafe=unsafe, module_name=module_name,
                      is_package=is_package)


def test_every_fix_kind_has_a_pair() -> None:
    assert {"kvc001_guards", "kvc002_copy", "helpers_kv_and_ec", "kvc003_keyword", "kvc004_copy",
            "kvc004_from_import", "kvc005_defaults", "kvc006_return_none", "kvc006_helper",
            "several_in_one"} <= set(PAIRS)


@pytest.mark.parametrize("kind", ["lf", "crlf", "tabs", "bom"])
@pytest.mark.parametrize("name", PAIRS)
def test_the_pair(name: str, kind: str) -> None:
    before = _variant((FIXES / f"{name}.py").read_text(encoding="utf-8"), kind)
    after = _variant((FIXES / f"{name}.fixed.py").read_text(encoding="utf-8"), kind)
    outcome = _fix(name, before)
    assert outcome.refused == ""
    assert outcome.text == after
    assert outcome.fixed and all(f.fix is not None for f in outcome.fixed)
    ast.parse(outcome.text.lstrip("\ufeff"))
    assert not [f for f in outcome.remaining if f.fix is not None]  # nothing fixable is left
    again = _fix(name, outcome.text)
    assert (again.text, again.fixed, again.refused) == (outcome.text, (), "")  # a second run changes no byte


def test_where_the_edit_is_ambiguous_no_fix_is_offered_and_the_finding_says_why() -> None:
    source = (FIXES / "no_fix.py").read_text()
    outcome = _fix("no_fix", source)
    assert (outcome.text, outcome.fixed, outcome.refused) == (source, (), "")
    reasons = {(f.line, f.code): f.no_fix for f in outcome.remaining}
    assert all(f.fix is None for f in outcome.remaining)
    assert reasons == {
        (9, "KVC002"): "several local names may hold the `kv_connector_output` value (`kvo`, `other`): "
                       "which to attach is your call",
        (16, "KVC001"): "the dereference is in an `elif` condition, where no guard statement fits",
        (21, "KVC001"): "the dereference is in a one-line block, where no guard statement fits",
        (21, "KVC005"): "no default makes the attribute access `.copy` right: check the field for None",
        (22, "KVC001"): "neither a loop nor the function's returns show what to do when it is None",
        (26, "KVC004"): "`EMPTY_MODEL_RUNNER_OUTPUT` is the sentinel itself: which copy to mutate instead is your call",
    }


def test_an_edit_that_would_drop_a_comment_inside_it_is_not_offered() -> None:
    outcome = _fix("comments_inside", (FIXES / "comments_inside.py").read_text())
    assert [(f.code, f.no_fix) for f in outcome.remaining] == [
        ("KVC002", "the edit would drop the comment `# nothing ran` inside the code it replaces")]
    assert all("\n" not in f.fix.title for f in outcome.fixed if f.fix is not None)  # titles are one line


def test_without_unsafe_fixes_only_the_safe_ones_apply() -> None:
    guards = (FIXES / "kvc001_guards.py").read_text()
    assert _fix("kvc001_guards", guards, unsafe=False).text == guards  # every guard changes behaviour
    defaults = (FIXES / "kvc005_defaults.py").read_text()
    assert _fix("kvc005_defaults", defaults, unsafe=False).text == (FIXES / "kvc005_defaults.fixed.py").read_text()
    dropped = (FIXES / "kvc006_return_none.py").read_text()
    assert _fix("kvc006_return_none", dropped, unsafe=False).text == dropped
    applicability = {f.code: f.fix.applicability for f in analyse_source(
        (FIXES / "several_in_one.py").read_bytes(), "x.py", CONFIG, INDEX).findings if f.fix is not None}
    assert applicability == {"KVC001": Applicability.UNSAFE, "KVC004": Applicability.SAFE,
                             "KVC005": Applicability.SAFE}


@pytest.mark.parametrize("code", [code for code, rule in RULES.items() if rule.fix is not None])
def test_each_rule_documents_its_fix_and_the_example_is_what_the_fix_does(code: str, tmp_path: Path) -> None:
    rule = RULES[code]
    assert rule.fix_doc and rule.fix_before and rule.fix_after
    assert re.search(r"\b(Safe|Unsafe)\b", rule.fix_doc)  # the applicability, and why
    explained = run_kvlint("explain", code).stdout
    assert "\nFix\n" in explained and "  Before\n" in explained and "  After\n" in explained
    before = rule.fix_before.lstrip("\n")
    # the module the example imports, `vllm.v1.outputs`: an output class with the attaching helpers
    stand_in = tmp_path / "vllm" / "v1" / "outputs.py"
    stand_in.parent.mkdir(parents=True)
    for package in (tmp_path / "vllm", stand_in.parent):
        (package / "__init__.py").write_text("")
    stand_in.write_bytes((FIXES / "outputs.py").read_bytes())
    index, _ = index_tree([stand_in], CONFIG)
    outcome = fix_source(before, "example.py", CONFIG, index, unsafe=True)
    assert outcome.refused == ""
    assert outcome.text == rule.fix_after.lstrip("\n")


def test_every_rule_that_reports_sites_offers_fixes() -> None:
    assert {code for code, rule in RULES.items() if rule.fix is not None} == {
        "KVC001", "KVC002", "KVC003", "KVC004", "KVC005", "KVC006"}


# ------------------------------------------------------------------ guarantees


def test_a_file_libcst_does_not_print_back_byte_for_byte_is_refused() -> None:
    source = "def count(kvo: KVConnectorOutput):\r    return len(kvo.finished_sending)\r"
    report = analyse_source(source, "cr.py", CONFIG)
    assert report.findings and report.findings[0].fix is not None  # there is something to fix ...
    outcome = fix_source(source, "cr.py", CONFIG, unsafe=True)
    assert outcome.text == source and outcome.fixed == ()  # ... but the file is left alone, and says why
    assert outcome.refused == "not fixed: libcst does not print this file back byte for byte (line endings?)"
    (left,) = outcome.remaining  # no longer offered as fixable: it says why instead
    assert (left.code, left.fix, left.no_fix) == ("KVC005", None, outcome.refused)


def test_a_refused_file_is_not_reported_as_fixable(tmp_path: Path) -> None:
    """After `--fix`, a file kvlint left alone shows no `[*]` and no fix count, whether read from the tree or
    from stdin; the warning says why."""
    source = "def count(kvo: KVConnectorOutput):\r    return len(kvo.finished_sending)\r"
    (tmp_path / "cr.py").write_bytes(source.encode())
    from_tree = run_kvlint("check", "--fix", "--show-source", "cr.py", cwd=tmp_path)
    from_stdin = subprocess.run(
        [sys.executable, "-m", "kvlint", "check", "--fix", "--show-source", "--stdin-filename", "cr.py", "-"],
        input=source.encode(), capture_output=True, cwd=tmp_path, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    reason = "not fixed: libcst does not print this file back byte for byte (line endings?)"
    for report, errors in ((from_tree.stdout, from_tree.stderr), (from_stdin.stderr.decode(), "")):
        assert "KVC005" in report and "[*]" not in report and "fixable" not in report, report
        assert f"= no fix: {reason}" in report
        assert reason in errors or reason in report
    assert from_stdin.stdout == source.encode()  # the source comes back as it was
    assert (tmp_path / "cr.py").read_bytes() == source.encode()


def _with_fix(monkeypatch: pytest.MonkeyPatch, code: str, content: str) -> None:
    """Make the rule's fix replace the reported span with `content`."""
    def broken(site, context):  # type: ignore[no-untyped-def]
        span = site.operand_span or site.span
        return Fix("broken", Applicability.SAFE, (Edit(span.line, span.column, span.end_line, span.end_column,
                                                       content),))

    monkeypatch.setitem(RULES, code, dataclasses.replace(RULES[code], fix=broken))


def test_a_fix_that_would_not_parse_is_reverted(monkeypatch: pytest.MonkeyPatch) -> None:
    source = (FIXES / "kvc005_defaults.py").read_text()
    _with_fix(monkeypatch, "KVC005", "(kvo.finished_sending or (")
    outcome = _fix("kvc005_defaults", source)
    assert (outcome.text, outcome.fixed) == (source, ())
    assert outcome.refused.startswith("not fixed: the fixed file would not parse")


def test_a_fix_that_leaves_its_finding_or_adds_one_is_reverted(monkeypatch: pytest.MonkeyPatch) -> None:
    source = (FIXES / "kvc005_defaults.py").read_text()
    _with_fix(monkeypatch, "KVC005", "kvo.finished_sending")  # the same finding, on another field
    outcome = _fix("kvc005_defaults", source)
    assert (outcome.text, outcome.fixed) == (source, ())
    assert outcome.refused.startswith("not fixed: the fixes would leave KVC005 in `")


def test_a_fix_that_fails_verification_is_left_out_and_the_others_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    source = (FIXES / "several_in_one.py").read_text()
    _with_fix(monkeypatch, "KVC004", "EMPTY_MODEL_RUNNER_OUTPUT.kv_connector_output")  # a new finding
    outcome = _fix("several_in_one", source)
    assert outcome.refused == ""
    assert sorted(f.code for f in outcome.fixed) == ["KVC001", "KVC001", "KVC005", "KVC005"]
    assert "idle = EMPTY_MODEL_RUNNER_OUTPUT\n" in outcome.text and "if kvo is None:" in outcome.text
    [left] = outcome.remaining
    assert left.code == "KVC004" and left.fix is None
    assert left.no_fix.startswith("its fix was not applied: the fixes would leave KVC004 in `finish_step`")


def test_passes_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fix that keeps finding work (here: adding a comment each pass) stops after MAX_PASSES and is reverted."""
    source = "def f(kvo: KVConnectorOutput):\n    return len(kvo.finished_sending)\n"

    def grows(site, context):  # type: ignore[no-untyped-def]
        return Fix("grow", Applicability.SAFE, (Edit(1, 0, 1, 0, "# more\n"),))

    monkeypatch.setitem(RULES, "KVC005", dataclasses.replace(RULES["KVC005"], fix=grows))
    outcome = fix_source(source, "grow.py", CONFIG)
    assert outcome.text == source and "leave KVC005" in outcome.refused
    assert MAX_PASSES == 10


# ------------------------------------------------------------------ command line


def _tree(tmp_path: Path) -> Path:
    target = tmp_path / "fixtures" / "fixes"
    target.mkdir(parents=True)
    (tmp_path / "fixtures" / "__init__.py").write_text("")
    for path in FIXES.glob("*.py"):
        if not path.name.endswith(".fixed.py"):
            (target / path.name).write_bytes(path.read_bytes())
    return target


def test_fix_writes_the_files_atomically_keeping_mode_bytes_and_line_endings(tmp_path: Path) -> None:
    target = _tree(tmp_path)
    crlf = target / "kvc004_copy.py"
    crlf.write_bytes(b"\xef\xbb\xbf" + crlf.read_bytes().replace(b"\n", b"\r\n"))
    os.chmod(crlf, 0o640)
    completed = run_kvlint("check", "--fix", "--unsafe-fixes", "fixtures", cwd=tmp_path)
    expected = (FIXES / "kvc004_copy.fixed.py").read_bytes().replace(b"\n", b"\r\n")
    assert crlf.read_bytes() == b"\xef\xbb\xbf" + expected
    assert stat.S_IMODE(crlf.stat().st_mode) == 0o640
    for name in PAIRS:
        if name != "kvc004_copy":
            assert (target / f"{name}.py").read_bytes() == (FIXES / f"{name}.fixed.py").read_bytes(), name
    assert completed.returncode == 1  # no_fix.py's findings remain
    assert completed.stdout.endswith("Found 37 findings (29 fixed, 8 remaining).\n"), completed.stdout
    assert not list(tmp_path.rglob("*.tmp"))
    second = run_kvlint("check", "--diff", "--unsafe-fixes", "fixtures", cwd=tmp_path)
    assert (second.returncode, second.stdout) == (0, "")


def test_safe_fix_leaves_the_unsafe_ones_and_says_so(tmp_path: Path) -> None:
    _tree(tmp_path)
    completed = run_kvlint("check", "--fix", "fixtures/fixes/kvc001_guards.py", "fixtures/fixes/kvc005_defaults.py",
                           cwd=tmp_path)
    assert "(7 fixed, " in completed.stdout
    assert "[*]" not in completed.stdout
    assert "hidden fixes can be enabled with the `--unsafe-fixes` option" in completed.stdout


def test_diff_writes_nothing_and_exits_1(tmp_path: Path) -> None:
    target = _tree(tmp_path)
    before = {path: path.read_bytes() for path in target.iterdir()}
    completed = run_kvlint("check", "--diff", "fixtures/fixes/kvc004_copy.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert completed.stdout.startswith("--- a/fixtures/fixes/kvc004_copy.py\n+++ b/fixtures/fixes/kvc004_copy.py\n")
    assert "+import copy\n" in completed.stdout
    assert "-    output = EMPTY_MODEL_RUNNER_OUTPUT  # the shared one\n" in completed.stdout
    assert completed.stderr == "Would fix 2 findings.\n"
    assert {path: path.read_bytes() for path in target.iterdir()} == before


def _stdin(tmp_path: Path, data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "kvlint", "check", *args], cwd=tmp_path, input=data,
                          capture_output=True, env=environment, timeout=600)


def test_fix_with_stdin_prints_the_fixed_source(tmp_path: Path) -> None:
    source = (FIXES / "kvc005_defaults.py").read_bytes()
    completed = _stdin(tmp_path, source, "--fix", "-", "--stdin-filename", "kvc005_defaults.py")
    assert completed.stdout == (FIXES / "kvc005_defaults.fixed.py").read_bytes()
    assert "Found 8 findings (7 fixed, 1 remaining)." in completed.stderr.decode()
    assert completed.returncode == 1
    clean = _stdin(tmp_path, b"x = 1\n", "--fix", "-")
    assert (clean.returncode, clean.stdout) == (0, b"x = 1\n")
    diff = _stdin(tmp_path, source, "--diff", "-")
    assert diff.returncode == 1 and diff.stdout.startswith(b"--- a/-\n+++ b/-\n")


def test_a_file_changed_on_disk_since_it_was_read_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kvlint.fixing.files

    target = _tree(tmp_path) / "kvc005_defaults.py"
    real = kvlint.fixing.files.fix_source

    def racing(*args, **kwargs):  # type: ignore[no-untyped-def]
        outcome = real(*args, **kwargs)
        target.write_text(target.read_text() + "# edited meanwhile\n")
        return outcome

    monkeypatch.setattr(kvlint.fixing.files, "fix_source", racing)
    monkeypatch.chdir(tmp_path)
    result = kvlint.fixing.files.fix_file("fixtures/fixes/kvc005_defaults.py", CONFIG, INDEX, False, write=True)
    assert result.problem == "not fixed: the file changed on disk while kvlint read it"
    assert target.read_text().endswith("# edited meanwhile\n")


def test_json_and_sarif_carry_the_fix(tmp_path: Path) -> None:
    _tree(tmp_path)
    records = json.loads(run_kvlint("check", "--format", "json", "fixtures/fixes/kvc004_copy.py",
                                    cwd=tmp_path).stdout)
    assert records[0]["fix"] == {
        "applicability": "safe",
        "message": "Bind `output` to `copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)`",
        "edits": [
            {"content": "import copy\n", "location": {"row": 3, "column": 1}, "end_location": {"row": 3, "column": 1}},
            {"content": "copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)", "location": {"row": 12, "column": 14},
             "end_location": {"row": 12, "column": 39}},
        ],
    }
    sarif = json.loads(run_kvlint("check", "--format", "sarif", "fixtures/fixes/kvc004_copy.py",
                                  cwd=tmp_path).stdout)
    fix = sarif["runs"][0]["results"][0]["fixes"][0]
    assert fix["description"]["text"] == "Bind `output` to `copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)`"
    assert fix["artifactChanges"][0]["replacements"][1] == {
        "deletedRegion": {"startLine": 12, "startColumn": 14, "endLine": 12, "endColumn": 39},
        "insertedContent": {"text": "copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)"},
    }


def test_the_flake8_and_mypy_faces_point_to_kvlint_check_fix() -> None:
    for doc in ("flake8.md", "mypy.md"):
        assert "kvlint check --fix" in (ROOT / "docs" / doc).read_text(), doc


# ------------------------------------------------------------------ property

EXTRA = st.sampled_from([
    "o = EMPTY_MODEL_RUNNER_OUTPUT",
    "o.kv_connector_output = kvo",
    "total = len(kvo.finished_sending)",
    "done = done | kvo.finished_recving",
    "return o",
    "return EMPTY_MODEL_RUNNER_OUTPUT",
    "return ModelRunnerOutput(req_ids=[], sampled_token_ids=[])",
    "kvo = out.kv_connector_output",
])
FUZZ_STATISTICS = {"programs": 0, "fixed": 0}
EXTRAS = st.lists(EXTRA, min_size=1, max_size=3)
PROGRAMS = st.tuples(EXTRAS, BLOCKS, EXTRAS)  # the fuzzer's blocks between lines that give fixes work


@settings(fuzz(80), derandomize=True)  # the same programs every run: the statistics below are then stable
@given(PROGRAMS, st.booleans(), st.booleans())
def test_fixing_never_breaks_a_file_and_a_fixed_file_rechecks_clean(
    parts: tuple[list[str], ...], marked: bool, imports_copy: bool
) -> None:
    header = (
        ("import copy\n" if imports_copy else "")
        + "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput\n\n\n"
    )
    marker = "  # kvlint: connector-path" if marked else ""
    body = [line for part in parts for line in part]
    source = header + f"def step(self, out, outs, sched, flag, done):{marker}\n" + "\n".join(_indent(body)) + "\n"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "fuzzed.py", "exec")
    except SyntaxError:
        return
    outcome = fix_source(source, "fuzzed.py", CONFIG, unsafe=True)
    assert outcome.refused == "", (outcome.refused, source)
    FUZZ_STATISTICS["programs"] += 1
    FUZZ_STATISTICS["fixed"] += bool(outcome.fixed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(outcome.text, "fixed.py", "exec")
    fixed = {(f.code, f.message) for f in outcome.fixed}
    assert not [f for f in outcome.remaining if (f.code, f.message) in fixed and f.fix is not None]
    again = fix_source(outcome.text, "fuzzed.py", CONFIG, unsafe=True)
    assert again.text == outcome.text, source


def test_the_property_test_saw_programs_that_were_fixed() -> None:
    """Runs after the property test (same module, file order): it must not pass by generating nothing to fix."""
    assert FUZZ_STATISTICS["programs"] >= 20 and FUZZ_STATISTICS["fixed"] >= 3, FUZZ_STATISTICS


# ------------------------------------------------------------------ review: fixes that would change behaviour

def _reasons(name: str, source: str) -> dict[tuple[int, str], str]:
    """Fix the source (it must stay as it is) and return each finding's reason for having no fix."""
    outcome = _fix(name, source)
    assert (outcome.text, outcome.fixed, outcome.refused) == (source, (), "")
    assert all(f.fix is None for f in outcome.remaining)
    return {(f.line, f.code): f.no_fix for f in outcome.remaining}


def test_no_copy_of_the_sentinel_where_the_function_or_module_relies_on_its_identity() -> None:
    source = '''from fixtures.fixes.old_outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput


def publish_compared(kvo: KVConnectorOutput):
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    if output is EMPTY_MODEL_RUNNER_OUTPUT:
        log_idle()
    return output


def publish_then_return_the_sentinel(kvo: KVConnectorOutput):
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return EMPTY_MODEL_RUNNER_OUTPUT


def publish_in_a_loop(outputs):
    for out in outputs:
        if out.req_ids:
            yield EMPTY_MODEL_RUNNER_OUTPUT
        idle = EMPTY_MODEL_RUNNER_OUTPUT
        idle.req_ids = out.req_ids


def publish_returned(kvo: KVConnectorOutput):
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return output


def caller(kvo):
    result = publish_returned(kvo)
    if result is EMPTY_MODEL_RUNNER_OUTPUT:
        return None
    return result
'''
    assert _reasons("identity", source) == {
        (6, "KVC004"): "`output is EMPTY_MODEL_RUNNER_OUTPUT` compares `output`: with a copy of the sentinel its "
                       "result would change",
        (14, "KVC004"): "the function also uses `EMPTY_MODEL_RUNNER_OUTPUT` itself (line 15), which sees the "
                        "mutation made through `output`; with a copy it would not",
        (23, "KVC004"): "the function also uses `EMPTY_MODEL_RUNNER_OUTPUT` itself (line 21), which sees the "
                        "mutation made through `idle`; with a copy it would not",
        (28, "KVC004"): "`output` is returned, and this module compares with the sentinel by identity (line 34): "
                        "a copy would change what that comparison says",
    }


def test_the_copy_is_still_safe_where_only_a_none_check_or_an_earlier_return_sees_the_sentinel() -> None:
    source = '''from fixtures.fixes.old_outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput


def publish(kvo: KVConnectorOutput, busy: bool):
    if busy:
        return EMPTY_MODEL_RUNNER_OUTPUT
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    assert output is not None
    return output
'''
    outcome = _fix("identity_free", source, unsafe=False)
    assert "    output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)\n" in outcome.text
    assert outcome.text.startswith("import copy\n\n")


def test_no_import_of_copy_where_the_name_means_something_else() -> None:
    source = '''from fixtures.fixes.old_outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput


def idle(kvo: KVConnectorOutput):
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return output


def copy(state):
    return dict(state)
'''
    assert _reasons("copy_defined", source) == {
        (6, "KVC004"): "the module binds `copy` at line 10, not to the `copy` module"}
    local = '''from fixtures.fixes.old_outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput


def idle(kvo: KVConnectorOutput):
    from mylib import copy
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return copy(output)


def outer(copy: bool):
    def inner(kvo: KVConnectorOutput):
        output = EMPTY_MODEL_RUNNER_OUTPUT
        output.kv_connector_output = kvo
        return output
    return inner
'''
    assert _reasons("copy_local", local) == {
        (7, "KVC004"): "`copy` is a local name of `idle`, not the `copy` module",
        (14, "KVC004"): "`copy` is a local name of `outer`, not the `copy` module",
    }


def test_the_attaching_helper_replaces_only_a_bare_sentinel_and_one_invariant() -> None:
    source = '''import copy

from fixtures.fixes.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput


class Runner:

    def idle(self, sched):
        with self._get_kv_connector_output(sched) as kvo:
            pass
        result = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
        result.req_ids = list(sched.req_ids)
        return result

    def both(self, sched):
        with self._get_kv_connector_output(sched) as kvo:
            with self._get_ec_connector_output(sched) as eco:
                pass
        return EMPTY_MODEL_RUNNER_OUTPUT

    def alone(self, sched) -> ModelRunnerOutput:
        with self._get_kv_connector_output(sched) as kvo:
            pass
        return EMPTY_MODEL_RUNNER_OUTPUT
'''
    outcome = _fix("helper_review", source, unsafe=False)
    assert outcome.refused == "" and len(outcome.fixed) == 4 and not outcome.remaining
    assert outcome.text == source.replace('''        return result
''', '''        output = copy.copy(result)
        output.kv_connector_output = kvo
        return output
''').replace('''        return EMPTY_MODEL_RUNNER_OUTPUT
''', '''        output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
        output.ec_connector_output = eco
        kv_output = copy.copy(output)
        kv_output.kv_connector_output = kvo
        return kv_output
''', 1).replace('''            pass
        return EMPTY_MODEL_RUNNER_OUTPUT
''', '''            pass
        return ModelRunnerOutput.with_kv_conn_output_only(kvo)
''')  # the bare sentinel, one invariant: the helper
    assert _fix("helper_review", outcome.text).text == outcome.text


def test_no_keyword_for_a_field_passed_by_position() -> None:
    source = '''from fixtures.fixes.outputs import ModelRunnerOutput


class Runner:

    def build(self, sched, tokens):
        with self._get_kv_connector_output(sched) as kvo:
            pass
        return ModelRunnerOutput(sched.req_ids, tokens, None)

    def sample(self, state):
        kvo = state.kv_connector_output
        if not self.is_last_rank:
            return ModelRunnerOutput(state.req_ids, [], None)
        return ModelRunnerOutput(req_ids=state.req_ids, kv_connector_output=kvo)
'''
    assert _reasons("positional", source) == {
        (9, "KVC003"): "the call passes `kv_connector_output` by position: replace that argument",
        (14, "KVC006"): "the call passes `kv_connector_output` by position: replace that argument",
    }
    fewer = source.replace("tokens, None)", "tokens)")  # the positions stop before the field: the keyword is fine
    assert "ModelRunnerOutput(sched.req_ids, tokens, kv_connector_output=kvo)" in _fix("positional", fewer).text


def test_no_fix_in_a_one_line_block_or_a_self_documenting_fstring_and_the_reason_says_so() -> None:
    source = '''from fixtures.fixes.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput


def idle(self, sched):
    with self._get_kv_connector_output(sched) as kvo:
        pass
    if sched.total == 0: return EMPTY_MODEL_RUNNER_OUTPUT
    return ModelRunnerOutput(kv_connector_output=kvo)


def tally(kvo: KVConnectorOutput, log):
    log.debug(f"{len(kvo.finished_recving)=}")
    log.debug(f"{kvo.finished_sending=}")
    return kvo
'''
    reasons = _reasons("one_line", source)
    assert reasons[(7, "KVC002")] == "the `return` is in a one-line block (`...: return ...`)"
    assert reasons[(12, "KVC005")] == (
        "the code is inside an f-string's `{...=}`, which prints its text: an edit there changes the string")


def test_an_import_of_copy_under_type_checking_does_not_stop_the_fix() -> None:
    source = '''"""Idle outputs."""
from __future__ import annotations

from typing import TYPE_CHECKING

from fixtures.fixes.old_outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput

if TYPE_CHECKING:
    import copy


def idle(kvo: KVConnectorOutput):
    output = EMPTY_MODEL_RUNNER_OUTPUT
    output.kv_connector_output = kvo
    return output
'''
    outcome = _fix("type_checking_copy", source, unsafe=False)
    assert outcome.text == source.replace("from typing import", "import copy\nfrom typing import").replace(
        "output = EMPTY_MODEL_RUNNER_OUTPUT", "output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)")
    assert _fix("type_checking_copy", outcome.text).text == outcome.text


def test_no_guard_before_a_statement_that_dereferences_on_some_paths_only() -> None:
    source = '''def aggregate(outputs, tally):
    for out in outputs:
        kvo = out.kv_connector_output
        if out.req_ids and kvo.finished_sending:
            tally(kvo)
        tally(out)


def count(outputs):
    n = 0
    for out in outputs:
        n += 1 if out.finished else len(out.kv_connector_output.finished_sending or ())
    return n


def first(outputs):
    for out in outputs:
        match out.kind:
            case "kv" if out.kv_connector_output.finished_sending:
                return out
            case _:
                print(out)


def pending(outputs):
    for out in outputs:
        print([r for r in out.req_ids if r in (out.kv_connector_output.finished_recving or ())])
'''
    why = "the dereference runs only on some paths through its statement ({}): a guard before the statement " \
          "would skip the others too"
    assert _reasons("partly", source) == {
        (4, "KVC001"): why.format("`and`"),
        (12, "KVC001"): why.format("a conditional expression"),
        (19, "KVC001"): why.format("a `case` guard"),
        (27, "KVC001"): why.format("a comprehension"),
    }


def test_a_guard_goes_above_comments_but_not_into_a_string_whose_line_starts_with_a_hash() -> None:
    source = '''def merge(outputs, tally, log):
    for out in outputs:
        kvo = out.kv_connector_output
        log("""finished:
        # sending""")
        tally(kvo.finished_sending or ())
'''
    outcome = _fix("string_hash", source)
    assert outcome.refused == ""
    assert outcome.text == source.replace('''        tally(''', '''        if kvo is None:
            continue
        tally(''')


def test_a_default_keeps_its_operand_whole_and_a_conditional_read_is_no_fix_for_an_iterating_method() -> None:
    source = '''def collect(out, done, flag):
    kvo = out.kv_connector_output
    done.update(kvo.finished_sending)
    if kvo is None:
        return done
    done.update((kvo.finished_recving if flag else None))
    for r in (kvo.finished_recving if flag else None):
        done.add(r)
    return done
'''
    outcome = _fix("operand_whole", source)
    assert outcome.refused == ""
    assert outcome.text == source.replace(
        "done.update(kvo.finished_sending)", "done.update(kvo.finished_sending or ())").replace(
        "done.update((kvo.finished_recving if flag else None))",
        "done.update(((kvo.finished_recving if flag else None) or ()))").replace(
        "for r in (kvo.finished_recving if flag else None):",
        "for r in (((kvo.finished_recving if flag else None) or ())):")
    [left] = outcome.remaining  # `done.update(None)` raises too: a read only when kvo is set would move the crash
    assert (left.code, left.no_fix) == (
        "KVC001", "neither a loop nor the function's returns show what to do when it is None")


def test_fixes_that_never_settle_are_not_kept_even_when_the_findings_count_the_same(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shape of a bug found in review: a conditional read (KVC001) went in first, then a default without
    parentheses (KVC005) made `(a if c else None or ())`, whose finding came back with a new message each
    pass: never claimed, applied ten times, and the counts by place still matched."""
    import libcst as cst

    def conditional_read(site, context):  # type: ignore[no-untyped-def]
        read = context.parent(context.node_at(site.operand_span, cst.BaseExpression))
        text = f"({context.code(read)} if kvo is not None else None)"
        return Fix("read", Applicability.UNSAFE, (context.replace(context.span(read), text),))

    def bare_default(site, context):  # type: ignore[no-untyped-def]
        operand = context.node_at(site.operand_span, cst.BaseExpression)
        text = context.code(operand) + " or ()"
        return Fix("bare", Applicability.SAFE, (context.replace(context.span(operand), text),))

    monkeypatch.setitem(RULES, "KVC001", dataclasses.replace(RULES["KVC001"], fix=conditional_read))
    monkeypatch.setitem(RULES, "KVC005", dataclasses.replace(RULES["KVC005"], fix=bare_default))
    source = """def collect(out, done):
    kvo = out.kv_connector_output
    done.update(kvo.finished_sending)
    return done if done else out
"""
    outcome = fix_source(source, "settle.py", CONFIG, unsafe=True)
    assert "or () or ()" not in outcome.text
    assert [f.code for f in outcome.fixed] == ["KVC001"]  # applied alone, it passes; the default is left out
    assert [(f.code, f.no_fix.startswith("its fix was not applied: ")) for f in outcome.remaining] == [("KVC005", True)]


def test_no_helper_or_sentinel_that_is_imported_only_for_type_checkers() -> None:
    source = '''from __future__ import annotations

from typing import TYPE_CHECKING

from fixtures.fixes.outputs import EMPTY_MODEL_RUNNER_OUTPUT

if TYPE_CHECKING:
    from fixtures.fixes.outputs import ModelRunnerOutput


class Runner:

    def idle(self, sched) -> ModelRunnerOutput:
        with self._get_kv_connector_output(sched) as kvo:
            pass
        return EMPTY_MODEL_RUNNER_OUTPUT
'''
    outcome = _fix("type_checking_helper", source, unsafe=False)
    assert "with_kv_conn_output_only" not in outcome.text  # a NameError when it runs
    assert "        output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)\n" in outcome.text
    hidden = '''from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fixtures.fixes.old_outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput


def sample(self, state) -> ModelRunnerOutput:
    kvo = state.kv_connector_output
    if not self.is_last_rank:
        return None
    return self.finish(state, kvo)
'''
    assert _reasons("type_checking_sentinel", hidden) == {
        (12, "KVC006"): "`EMPTY_MODEL_RUNNER_OUTPUT` is not bound where the code runs (imported only for type "
                        "checking, or in another function)"}


def test_a_default_around_a_walrus_leaves_the_bound_name_as_it_was() -> None:
    source = '''from fixtures.fixes.old_outputs import KVConnectorOutput


def drain(kvo: KVConnectorOutput, free):
    for r in (sending := kvo.finished_sending):
        free(r)
    sending.add("sentinel")
'''
    outcome = _fix("walrus_default", source, unsafe=False)
    # `(sending := kvo.finished_sending or ())` would bind `()` for an empty set, and `.add` would then raise
    assert "    for r in (((sending := kvo.finished_sending) or ())):\n" in outcome.text


@pytest.mark.parametrize("header", ["", '"""Idle steps."""\n\n\n', "#!/usr/bin/env python\n# header\n\nSTEP = 1\n\n\n"])
def test_an_import_added_to_a_module_without_imports_keeps_pep8_spacing(header: str) -> None:
    """`import copy` goes after a shebang, header comments and a docstring, with the blank lines PEP 8 wants
    around it (two before a `def`), so pycodestyle has nothing to say about the fixed file."""
    import pycodestyle

    body = (
        "def idle(kvo: KVConnectorOutput):\n"
        "    output = EMPTY_MODEL_RUNNER_OUTPUT\n"
        "    output.kv_connector_output = kvo\n"
        "    return output\n"
    )
    outcome = fix_source(header + body, "idle.py", CONFIG)
    assert outcome.refused == "" and [f.code for f in outcome.fixed] == ["KVC004"]
    fixed = body.replace("= EMPTY_MODEL_RUNNER_OUTPUT", "= copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)")
    if header.startswith("#!"):
        assert outcome.text == "#!/usr/bin/env python\n# header\n\nimport copy\n\nSTEP = 1\n\n\n" + fixed
    else:
        assert outcome.text == header + "import copy\n\n\n" + fixed
    checker = pycodestyle.Checker(lines=outcome.text.splitlines(keepends=True), quiet=True)
    assert checker.check_all() == 0


# --- ruff's hints where every fix is unsafe (issue 28): check, --fix and --diff say how many ---

ONLY_UNSAFE = "fixtures/fixes/kvc001_guards.py"  # four KVC001 findings, each with an unsafe fix only


def test_check_says_how_many_unsafe_fixes_are_hidden(tmp_path: Path) -> None:
    _tree(tmp_path)
    completed = run_kvlint("check", ONLY_UNSAFE, cwd=tmp_path)
    assert completed.returncode == 1
    assert completed.stdout.endswith(
        "No fixes available (4 hidden fixes can be enabled with the `--unsafe-fixes` option).\n"
        "Found 4 findings in 1 file.\n")


def test_fix_with_only_unsafe_fixes_says_how_many_and_exits_1(tmp_path: Path) -> None:
    target = _tree(tmp_path)
    before = (target / "kvc001_guards.py").read_bytes()
    completed = run_kvlint("check", "--fix", ONLY_UNSAFE, cwd=tmp_path)
    assert completed.returncode == 1  # ruff: findings remain after --fix
    assert completed.stdout.endswith(
        "No fixes available (4 hidden fixes can be enabled with the `--unsafe-fixes` option).\n"
        "Found 4 findings in 1 file.\n")
    assert (target / "kvc001_guards.py").read_bytes() == before


@pytest.mark.parametrize("fix", [[], ["--fix"]])
def test_diff_with_only_unsafe_fixes_says_how_many_and_exits_0(tmp_path: Path, fix: list[str]) -> None:
    """ruff's `--diff`: exit 1 only when there is a diff; the line says what `--unsafe-fixes` would add."""
    _tree(tmp_path)
    completed = run_kvlint("check", *fix, "--diff", ONLY_UNSAFE, cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (0, "")
    assert completed.stderr == "No findings would be fixed (4 fixes available with `--unsafe-fixes`).\n"
    piped = _stdin(tmp_path, (tmp_path / ONLY_UNSAFE).read_bytes(), *fix, "--diff", "-", "--stdin-filename",
                   ONLY_UNSAFE)
    assert (piped.returncode, piped.stdout, piped.stderr.decode()) == (0, b"", completed.stderr)
    unsafe = run_kvlint("check", *fix, "--diff", "--unsafe-fixes", ONLY_UNSAFE, cwd=tmp_path)
    assert unsafe.returncode == 1 and unsafe.stderr == "Would fix 4 findings.\n"


def test_diff_says_how_many_more_unsafe_fixes_there_are(tmp_path: Path) -> None:
    _tree(tmp_path)
    completed = run_kvlint("check", "--diff", ONLY_UNSAFE, "fixtures/fixes/kvc004_copy.py", cwd=tmp_path)
    assert completed.returncode == 1
    assert completed.stderr == "Would fix 2 findings (4 additional fixes available with `--unsafe-fixes`).\n"

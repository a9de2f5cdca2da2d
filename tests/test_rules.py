"""The rule registry is the one source of rule docs: examples are tests, docs cannot drift."""

from __future__ import annotations

import re

import pytest

from kvlint.engine import analyse_source
from kvlint.rules import (
    INEFFECTIVE_MARKER,
    INTERNAL_ERROR,
    RULES,
    SYNTAX_ERROR,
    UNREADABLE,
    UNUSED_NOQA,
    rules_table_markdown,
    site_rules,
)
from kvlint.rules.rule import FACES
from tests.conftest import ROOT, run_kvlint

PRELUDE = (
    "import copy\n"
    "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput\n"
    "from vllm.distributed.kv_transfer import has_kv_transfer_group\n"
)


def _codes(source: str) -> list[str]:
    return [f.code for f in analyse_source(PRELUDE + source, "example.py").findings]


@pytest.mark.parametrize("rule", list(site_rules()), ids=lambda rule: rule.code)
def test_bad_example_triggers_its_rule(rule) -> None:
    assert rule.code in _codes(rule.bad)


@pytest.mark.parametrize("rule", list(site_rules()), ids=lambda rule: rule.code)
def test_good_example_is_clean(rule) -> None:
    assert _codes(rule.good) == []


def test_syntax_error_example_is_kvc900() -> None:
    assert _codes(RULES["KVC900"].bad) == ["KVC900"]
    assert _codes(RULES["KVC900"].good) == []


def test_every_rule_is_documented_in_every_section() -> None:
    for rule in RULES.values():
        assert re.fullmatch(r"KVC\d{3}", rule.code)
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", rule.name)
        for section in (rule.summary, rule.what, rule.why, rule.bad, rule.good):
            assert section.strip()
    assert len({rule.name for rule in RULES.values()}) == len(RULES)


def test_readme_rule_table_is_generated_from_the_registry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- rules:start -->\n(.*?)<!-- rules:end -->", readme, re.S)
    assert block, "README.md lacks the <!-- rules:start --> ... <!-- rules:end --> block"
    assert block.group(1) == rules_table_markdown(), "run `kvlint rules --format markdown` and paste it into README.md"


def test_explain_prints_the_registry_documentation() -> None:
    for code, rule in RULES.items():
        completed = run_kvlint("explain", code.lower())
        assert completed.returncode == 0
        assert completed.stdout == rule.documentation()
        assert "What it does" in completed.stdout and "Use instead" in completed.stdout


def test_explain_unknown_code_is_a_usage_error() -> None:
    completed = run_kvlint("explain", "KVC999")
    assert completed.returncode == 2
    assert "unknown rule" in completed.stderr


def test_rules_lists_every_code() -> None:
    completed = run_kvlint("rules")
    assert completed.returncode == 0
    table, _, footer = completed.stdout.partition("\n\n")
    assert [line.split()[0] for line in table.splitlines()] == list(RULES)
    assert footer.startswith("invariants: kv (kv_connector_output), ec (ec_connector_output)")


# --- each face knows every rule: its facts live on the rule, and no face keeps a list of its own ---

ENGINE_FILE_CODES = {SYNTAX_ERROR, INTERNAL_ERROR, INEFFECTIVE_MARKER}  # what the engine reports beside site rules


def faces_of(face: str) -> set[str]:
    return {code for code, rule in RULES.items() if face in rule.faces}


def test_every_rule_names_only_known_faces() -> None:
    for code, rule in RULES.items():
        assert rule.faces and rule.faces <= FACES, code
        assert "check" in rule.faces, f"{code}: `kvlint check` reports every rule"


def test_every_rule_is_reported_by_someone() -> None:
    """A rule with no predicate must be one a face reports by other means, or no face ever sees it."""
    produced_elsewhere = ENGINE_FILE_CODES | {UNUSED_NOQA, UNREADABLE}
    for code in RULES:
        assert code in {rule.code for rule in site_rules()} | produced_elsewhere, code


def test_the_mypy_face_knows_every_rule() -> None:
    from kvlint.mypy_worker import DEREFERENCE_CODES, REPORTED_CODES

    assert set(REPORTED_CODES) | set(DEREFERENCE_CODES) == faces_of("mypy")
    assert not set(REPORTED_CODES) & set(DEREFERENCE_CODES)
    for code, target in DEREFERENCE_CODES.items():
        assert RULES[code].check is not None and RULES[code].mypy_dereference is target, code


def test_the_audit_knows_every_rule() -> None:
    from kvlint.report.audit import AUDIT_CODES

    assert set(AUDIT_CODES) == faces_of("audit")


@pytest.mark.parametrize("face", ["flake8", "server"])
def test_the_faces_that_show_the_engine_s_findings_know_every_rule(face: str) -> None:
    """flake8 and the editor show what the engine reports on the text they hold, and nothing else."""
    assert faces_of(face) == {rule.code for rule in site_rules()} | ENGINE_FILE_CODES


def test_each_rule_judges_only_the_kinds_of_site_it_declares() -> None:
    """A run that reports only findings records only `JUDGED_SITE_KINDS`, and of `MAYBE_NONE_KINDS` only what may
    be None (`analyse_prepared(sites=False)`): a rule's check must flag no site of a kind it does not declare, nor
    one proven non-None where it says so, here over every site of every fixture file, and pass each site it flags
    once given any other kind (or proven); and such a run finds what the full one finds."""
    import dataclasses

    from kvlint.config import Config
    from kvlint.rules import JUDGED_SITE_KINDS, MAYBE_NONE_KINDS
    from kvlint.running.runner import run
    from kvlint.sites import SiteKind

    full = run([ROOT / "fixtures"], Config(), jobs=1, everything=True)
    sites = [site for report in full.reports for site in report.sites]
    assert {site.kind for site in sites} == set(SiteKind)  # the fixtures hold every kind
    flagged = 0
    for rule in site_rules():
        assert rule.site_kinds, rule.code
        for site in sites:
            if rule.check(site) is None:
                continue
            flagged += 1
            assert site.kind in rule.site_kinds, (rule.code, site)
            for kind in set(SiteKind) - rule.site_kinds:
                assert rule.check(dataclasses.replace(site, kind=kind)) is None, (rule.code, kind)
            if rule.maybe_none_only:
                assert site.may_be_none, (rule.code, site)
                assert rule.check(dataclasses.replace(site, may_be_none=False, definitely_none=False)) is None
    assert flagged > 50
    assert JUDGED_SITE_KINDS == {kind for rule in site_rules() for kind in rule.site_kinds} != set(SiteKind)
    assert MAYBE_NONE_KINDS == {SiteKind.DEREFERENCE}  # KVC001's and KVC005's
    proven = [site for site in sites if site.kind is SiteKind.DEREFERENCE and not site.may_be_none]
    assert len(proven) > 100  # what such a run does not record
    findings_only = run([ROOT / "fixtures"], Config(), jobs=1, everything=True, sites=False)
    assert findings_only.findings == full.findings and findings_only.findings
    assert findings_only.reports == [dataclasses.replace(report, sites=()) for report in full.reports]
    from kvlint.binding.tree_index import file_index
    from kvlint.engine import analyse_prepared, prepare_source

    config = Config()
    for path in sorted(p for p in (ROOT / "fixtures").rglob("*.py") if p.is_file()):  # what such an analysis records
        def prepared():  # type: ignore[no-untyped-def]
            return prepare_source(path.read_bytes(), path.name, config, path.stem)

        index = file_index(prepared().declarations, [prepared().text], config.payload_classes)
        every = analyse_prepared(prepared(), config, index)
        judged = analyse_prepared(prepared(), config, index, sites=False)
        assert judged.findings == every.findings, path
        assert set(judged.sites) == {
            site for site in every.sites
            if site.kind in JUDGED_SITE_KINDS and (site.may_be_none or site.kind not in MAYBE_NONE_KINDS)
        }, path


def test_a_site_left_unrecorded_still_replaces_what_its_key_held() -> None:
    """Both operands of `&` are dereferenced at the operator's span: the second one's site replaces the first
    one's (a maybe-None `b.finished_sending` then, not reported, where the proven one comes second). An analysis
    for findings alone does not record the proven site, and still drops what it replaced."""
    from kvlint.binding.tree_index import file_index
    from kvlint.config import Config
    from kvlint.engine import analyse_prepared, prepare_source

    source = (
        "from vllm.v1.outputs import KVConnectorOutput\n"
        "class DenseKVOutput(KVConnectorOutput):\n"
        "    finished_sending: set[str]\n"
        "def merge(a: DenseKVOutput, b: KVConnectorOutput) -> set[str]:\n"
        "    return b.finished_sending & a.finished_sending\n"
        "def merge_other_way(a: DenseKVOutput, b: KVConnectorOutput) -> set[str]:\n"
        "    return a.finished_sending & b.finished_sending\n"
    )
    config = Config()
    prepared = prepare_source(source, "m.py", config, "m")
    index = file_index(prepared.declarations, [prepared.text], config.payload_classes)
    for sites in (True, False):
        report = analyse_prepared(prepare_source(source, "m.py", config, "m"), config, index, sites=sites)
        assert [(finding.line, finding.code) for finding in report.findings] == [(7, "KVC005")], sites


def test_the_registry_holds_every_rule_module_of_the_package() -> None:
    """`RULES` comes from a listing of the package's directory: it holds the rules of every `kvcNNN_*` module
    `pkgutil` finds there, in the order of the modules' names."""
    import importlib
    import pkgutil

    import kvlint.rules

    names = sorted(m.name for m in pkgutil.iter_modules(kvlint.rules.__path__) if m.name.startswith("kvc"))
    assert len(names) >= 9
    expected = []
    for name in names:
        module = importlib.import_module(f"kvlint.rules.{name}")
        expected += getattr(module, "RULES", None) or [module.RULE]
    assert list(RULES.values()) == expected


CONNECTOR_IDLE_STEP = """
class Runner:
    def idle_step(self, scheduler_output, field_name):
        with self._get_kv_connector_output(scheduler_output) as kvo:
            pass
        output = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
{attach}
        return output
"""


@pytest.mark.parametrize(("attach", "codes"), [
    ("        setattr(output, field_name, kvo)", []),  # may set either field: each counts as set
    ("        setattr(output, 'kv_connector_output', kvo)", []),
    ("        for name, value in (('kv_connector_output', kvo),):\n            setattr(output, name, value)", []),
    ("        for name in ('kv_connector_output', 'ec_connector_output'):\n"
     "            setattr(output, name, getattr(self, name))", []),
    ("        setattr(output, 'ec_connector_output', kvo)", ["KVC002"]),  # the wrong field: the KV output dropped
    ("        output.note = kvo", ["KVC002"]),
])
def test_a_field_set_by_name_attaches_for_each_invariant_it_may_be(attach: str, codes: list[str]) -> None:
    """`setattr(out, name, value)` with a name the code cannot read may set the KV or the EC field: each counts
    as set, the second no less than the first (each attach starts from what the one before left)."""
    assert _codes(CONNECTOR_IDLE_STEP.format(attach=attach)) == codes


@pytest.mark.parametrize(("loop", "codes"), [
    ("for _ in (scheduler_output,):", []),  # a literal with an element: the body runs
    ("for _ in [scheduler_output, *more]:", []),
    ("for _ in more:", ["KVC001"]),  # may run no time: the field read before, maybe None
    ("for _ in (*more,):", ["KVC001"]),
])
def test_a_loop_over_a_literal_with_an_element_runs_its_body(loop: str, codes: list[str]) -> None:
    source = (
        "class Runner:\n"
        "    def sent(self, scheduler_output, more):\n"
        "        transfers = self._pending.kv_connector_output\n"
        f"        {loop}\n"
        "            with self._get_kv_connector_output(scheduler_output) as transfers:\n"
        "                pass\n"
        "        return len(transfers.finished_sending or ())\n"
    )
    assert _codes(source) == codes

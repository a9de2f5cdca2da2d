"""The rule registry is the one source of rule docs: examples are tests, docs cannot drift."""

from __future__ import annotations

import re

import pytest

from kvlint.engine import analyse_source
from kvlint.rules import RULES, rules_table_markdown, site_rules
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

"""The rule registry: every rule's code, name, documentation and predicate.

`kvlint explain`, `kvlint rules`, the README rule table and SARIF rule metadata
are all generated from `RULES`; tests fail when any of them drifts.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvlint.rules.rule import Rule


def _load() -> dict[str, Rule]:
    from kvlint.rules import (
        kvc001_unguarded_dereference,
        kvc002_empty_output_on_connector_path,
        kvc003_output_without_connector_output,
        kvc004_shared_sentinel_mutation,
        kvc005_unguarded_optional_set,
        kvc006_kv_output_dropped,
        kvc9xx_file_diagnostics,
        kvc100_unused_noqa,
        kvc101_ineffective_path_marker,
    )

    rules = [
        kvc001_unguarded_dereference.RULE,
        kvc002_empty_output_on_connector_path.RULE,
        kvc003_output_without_connector_output.RULE,
        kvc004_shared_sentinel_mutation.RULE,
        kvc005_unguarded_optional_set.RULE,
        kvc006_kv_output_dropped.RULE,
        kvc100_unused_noqa.RULE,
        kvc101_ineffective_path_marker.RULE,
        *kvc9xx_file_diagnostics.RULES,
    ]
    return {rule.code: rule for rule in rules}


RULES: dict[str, Rule] = _load()

SYNTAX_ERROR = "KVC900"
UNREADABLE = "KVC901"
INTERNAL_ERROR = "KVC902"
UNUSED_NOQA = "KVC100"  # reported by `kvlint check --report-unused-noqa` only
INEFFECTIVE_MARKER = "KVC101"


def rules_table_markdown() -> str:
    """The README's rule table, generated so that it cannot drift from the registry."""
    rows = ["| code | name | what it reports |", "| --- | --- | --- |"]
    rows += [f"| {rule.code} | {rule.name} | {rule.summary.replace('|', chr(92) + '|')} |" for rule in RULES.values()]
    return "\n".join(rows) + "\n"


RULE_DOCS_FILE = "rules.md"  # in this package: what the editor's diagnostics link to


def rule_docs_markdown() -> str:
    """`kvlint/rules/rules.md`, every rule's documentation on one page, generated so that it cannot drift."""
    header = [
        "<!-- Generated from the rule registry (kvlint/rules/__init__.py: rule_docs_markdown); do not edit. -->",
        "",
        "# kvlint rules",
        "",
        "What `kvlint explain CODE` prints, for every rule. The editor face (`kvlint server`) links each",
        "diagnostic here.",
        "",
    ]
    return "\n".join(header) + "\n" + "\n".join(rule.markdown("## ") for rule in RULES.values())


def site_rules() -> Iterable[Rule]:
    """The rules that judge sites (not the file-level KVC9xx diagnostics)."""
    return (rule for rule in RULES.values() if rule.check is not None)

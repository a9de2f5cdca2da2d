"""The rule registry: every rule's code, name, documentation and predicate.

`kvlint explain`, `kvlint rules`, the README rule table and SARIF rule metadata
are all generated from `RULES`; tests fail when any of them drifts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kvlint.rules.rule import Rule

_RULE_MODULE = re.compile(r"kvc[0-9]")  # kvc001_unguarded_dereference, ..., kvc9xx_file_diagnostics


def _load() -> dict[str, Rule]:
    """Every rule module of this package (`kvcNNN_name.py`, holding `RULE` or a tuple `RULES`), in the order of
    their names: adding a rule is adding its module. The package's directory is listed, not walked with
    `pkgutil` (whose import is 14 M instructions of every run's start-up)."""
    import importlib
    import os

    found = {entry[:-3] for directory in __path__ for entry in os.listdir(directory) if entry.endswith(".py")}
    rules: list[Rule] = []
    for name in sorted(name for name in found if _RULE_MODULE.match(name)):
        module = importlib.import_module(f"{__name__}.{name}")
        rules += getattr(module, "RULES", None) or [module.RULE]
    return {rule.code: rule for rule in rules}


RULES: dict[str, Rule] = _load()

# The codes of rules taken out of the registry (none yet): a code is never handed out again, and a configuration
# that names a retired one still loads (it selects or ignores nothing).
RETIRED_CODES: tuple[str, ...] = ()


def unknown_selector(selector: str) -> str | None:
    """Why a code or prefix of `select`, `ignore` and their kin (`KVC010`, `KVC2`) selects no rule, or None when it
    selects one (`KVC001`, `KVC0`, `KVC`, `KVC9`), or is (a prefix of) a retired code: a misspelt code would
    otherwise select nothing, or ignore nothing, and say nothing."""
    if any(code.startswith(selector) for code in (*RULES, *RETIRED_CODES)):
        return None
    if len(selector) > len(SYNTAX_ERROR):
        return "a kvlint code is 'KVC' and three digits"
    what = "has this code" if len(selector) == len(SYNTAX_ERROR) else "has a code that starts with it"
    return f"no kvlint rule {what} (the codes: {', '.join(RULES)})"


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


# the kinds of site some rule judges: what an analysis for findings alone records (`engine.analyse_prepared`)
JUDGED_SITE_KINDS = frozenset(kind for rule in site_rules() for kind in rule.site_kinds)
# of those, the kinds every rule of which flags only what may be None: such an analysis records none of them the
# flow proved non-None (a guarded dereference)
MAYBE_NONE_KINDS = frozenset(
    kind for kind in JUDGED_SITE_KINDS
    if all(rule.maybe_none_only for rule in site_rules() if kind in rule.site_kinds)
)

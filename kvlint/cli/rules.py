"""`kvlint rules` and `kvlint explain CODE`: the rule registry, printed."""

from __future__ import annotations

import sys
from pathlib import Path

from kvlint.cli.shared import EXIT_CLEAN, EXIT_USAGE
from kvlint.config import ConfigError, load_config
from kvlint.paths import display_path
from kvlint.rules import RULES, rules_table_markdown


def _rules(output_format: str) -> int:
    if output_format == "markdown":
        sys.stdout.write(rules_table_markdown())
        return EXIT_CLEAN
    width = max(len(rule.name) for rule in RULES.values())
    for rule in RULES.values():
        sys.stdout.write(f"{rule.code}  {rule.name:<{width}}  {rule.summary}\n")
    sys.stdout.write(f"\n{_active_invariants()}\n")
    return EXIT_CLEAN


def _active_invariants() -> str:
    """Which invariants the rules check here (the configuration of the current directory)."""
    try:
        config = load_config([Path.cwd()])
    except ConfigError as exc:
        return f"invariants: (the configuration cannot be read: {exc})"
    shown = ", ".join(f"{i.name} ({', '.join(i.optional_fields)})" for i in config.invariants.invariants)
    origin = f"from {display_path(config.source)}" if config.source is not None else "the defaults"
    return f"invariants: {shown or 'none'} ({origin}; every rule applies to each; `kvlint config` shows their names)"


def _explain(code: str) -> int:
    rule = RULES.get(code.upper())
    if rule is None:
        sys.stderr.write(f"kvlint: unknown rule {code!r}; `kvlint rules` lists them\n")
        return EXIT_USAGE
    sys.stdout.write(rule.documentation())
    return EXIT_CLEAN

"""What a rule is: its code, name, documentation in ruff's sections, a predicate over sites, and what every face
needs to know of it (which faces report it, how the mypy face does, what its fix rewrites)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvlint.fixing.model import Applicability, Fix
from kvlint.sites import DerefTarget, Site, SiteKind

if TYPE_CHECKING:
    from kvlint.fixing.context import FixContext

# The faces that report findings: `kvlint check`, `kvlint audit`, the flake8 plugin, the mypy plugin, `kvlint server`.
FACES = frozenset({"check", "audit", "flake8", "mypy", "server"})


@dataclass(frozen=True)
class Rule:
    """A rule: documentation in ruff's sections, and a predicate over sites."""

    code: str
    name: str  # kebab-case slug, stable like the code
    summary: str  # one line, for tables
    what: str  # what it does
    why: str  # why it is bad
    bad: str  # example that triggers the rule
    good: str  # the same code, fixed
    options: tuple[str, ...] = ()  # configuration keys that shape the rule
    check: Callable[[Site], str | None] | None = None  # message when the site violates the rule
    # the kinds of site `check` judges (it passes every other): a run that reports only findings records no other
    # kind (`engine.analyse_prepared`'s `sites`; tests/test_rules.py holds each rule to what it declares)
    site_kinds: frozenset[SiteKind] = frozenset()
    maybe_none_only: bool = False  # `check` flags only a site the flow could not prove non-None (`may_be_none`)
    # the fix of a finding at a site, built only for findings; raises `NoFix` saying why there is none
    fix: Callable[[Site, FixContext], Fix] | None = None
    fix_doc: str = ""  # what the fix does and when it is safe
    fix_before: str = ""  # code the fix changes ...
    fix_after: str = ""  # ... and what `kvlint check --fix` (or `--unsafe-fixes`) makes of it
    faces: frozenset[str] = FACES  # the faces that report it (tests/test_rules.py holds each face to this)
    # the mypy face: None reports it from any hook of the module (what no type shows); a target waits until mypy
    # has typed the dereferenced value of that kind, and reports it unless that type includes None (mypy then does)
    mypy_dereference: DerefTarget | None = None
    # its fix rewrites the reported `return`: where findings of several invariants share that `return`, one
    # attaching helper would hand on only one of their outputs (`FixContext.shared_returns`)
    fix_rewrites_return: bool = False
    # what its fixes can be: a run whose report shows only the fixes that apply (`kvlint check --quiet` without
    # `--unsafe-fixes`) builds none of a rule whose fixes are all unsafe (tests/test_fix_demand.py holds each
    # rule to what it declares)
    fix_applicabilities: frozenset[Applicability] = frozenset(Applicability)

    def documentation(self) -> str:
        """Render the rule's documentation as `kvlint explain` prints it."""
        lines = [
            f"{self.code} ({self.name})",
            "",
            "What it does",
            f"  {self.what}",
            "",
            "Why is this bad?",
            f"  {self.why}",
            "",
            "Example",
            *("    " + line if line else "" for line in self.bad.strip("\n").splitlines()),
            "",
            "Use instead",
            *("    " + line if line else "" for line in self.good.strip("\n").splitlines()),
        ]
        if self.fix_doc:
            lines += ["", "Fix", *_wrapped(self.fix_doc)]
            lines += ["", "  Before", *_indented(self.fix_before)]
            lines += ["", "  After", *_indented(self.fix_after)]
        if self.options:
            lines += ["", "Options", *(f"  - {option}" for option in self.options)]
        return "\n".join(lines) + "\n"

    def markdown(self, heading: str = "") -> str:
        """Render the same documentation as Markdown (the editor's hover, `kvlint/rules/rules.md`);
        `heading` is put before the title line (`## ` for a page of rules)."""
        lines = [
            f"{heading}{self.code} ({self.name})",
            "",
            "**What it does**",
            "",
            self.what,
            "",
            "**Why is this bad?**",
            "",
            self.why,
            "",
            "**Example**",
            "",
            "```python",
            self.bad.strip("\n"),
            "```",
            "",
            "**Use instead**",
            "",
            "```python",
            self.good.strip("\n"),
            "```",
        ]
        if self.fix_doc:
            lines += ["", "**Fix**", "", self.fix_doc, "", "Before:", "", "```python", self.fix_before.strip("\n"),
                      "```", "", "After:", "", "```python", self.fix_after.strip("\n"), "```"]
        if self.options:
            lines += ["", "**Options**", "", *(f"- `{option}`" for option in self.options)]
        return "\n".join(lines) + "\n"


def _wrapped(text: str) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=100, initial_indent="  ", subsequent_indent="  ")


def _indented(code: str) -> list[str]:
    return ["    " + line if line else "" for line in code.strip("\n").splitlines()]

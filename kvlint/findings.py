"""The one result type every face prints: a finding at a place in a file."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvlint.fixing.model import Fix


@dataclass(frozen=True, order=True, slots=True)
class Finding:
    """A rule violation (or a file-level diagnostic) at a source range.

    Field order is the sort order of every output: path, line, column, code.
    `line`/`end_line` are 1-based; `column`/`end_column` are 0-based characters, as
    flake8 gives them; output formats convert to 1-based columns.
    """

    path: str
    line: int
    column: int
    code: str
    message: str
    end_line: int
    end_column: int
    function: str = ""  # enclosing scope, used by baselines and the audit
    source_line: str = ""  # the physical line, used by noqa and snippets
    invariant: str = ""  # the invariant a rule finding speaks for (`kv`, `ec`); "" for KVC9xx and KVC100
    fix: Fix | None = field(default=None, compare=False)  # the edits that repair it, where kvlint knows them
    no_fix: str = field(default="", compare=False)  # why a rule that fixes offers no fix here ("" otherwise)
    # the qualified names that decided it, each "role: name" (`Site.resolved`): the JSON's `resolved`
    resolved: tuple[str, ...] = field(default=(), compare=False)

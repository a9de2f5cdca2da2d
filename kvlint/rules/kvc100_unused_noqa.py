"""KVC100: a `# noqa: KVC...` comment that silences nothing (ruff's RUF100), reported only when asked.

No site predicate: `kvlint check --report-unused-noqa` compares each file's `# noqa`
comments with the findings they would silence (`kvlint.running.unused_noqa`).
"""

from __future__ import annotations

from kvlint.rules.rule import Rule

RULE = Rule(
    code="KVC100",
    name="unused-noqa",
    summary="A `# noqa: KVC...` comment silences no finding (only with `--report-unused-noqa`)",
    what=(
        "Reports each kvlint code in a `# noqa:` comment that silences no finding on its line, because the "
        "code was fixed, the finding moved, or the code is not selected. Reported only by `kvlint check "
        "--report-unused-noqa`; other tools' codes and a bare `# noqa` are left alone."
    ),
    why=(
        "A stale `# noqa` hides the next real finding on that line: the bug it once excused is gone, but "
        "the exemption stays."
    ),
    bad=(
        "kvo = out.kv_connector_output\n"
        "if kvo is not None:\n"
        "    done |= kvo.finished_sending or set()  # noqa: KVC001\n"
    ),
    good=(
        "kvo = out.kv_connector_output\n"
        "if kvo is not None:\n"
        "    done |= kvo.finished_sending or set()\n"
    ),
    faces=frozenset({"check"}),  # a pass of its own over the tree's `# noqa` comments, only `kvlint check` runs it
)

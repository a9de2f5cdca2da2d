"""KVC900-KVC902: a file that could not be checked is a finding, never a silent pass."""

from __future__ import annotations

from kvlint.rules.rule import Rule

RULES = (
    Rule(
        code="KVC900",
        name="unparsable-file",
        summary="The file cannot be decoded or parsed",
        what=(
            "Reports a file kvlint could not decode (bad encoding, NUL byte) or parse (syntax error, too deeply "
            "nested, over the size limit)."
        ),
        why="A file that was not analysed may hide any of the other findings; passing it silently would lie.",
        bad="def step(:\n    return EMPTY_MODEL_RUNNER_OUTPUT\n",
        good="def step():\n    return EMPTY_MODEL_RUNNER_OUTPUT\n",
    ),
    Rule(
        code="KVC901",
        name="unreadable-file",
        summary="The file cannot be read",
        what="Reports a path that could not be read: missing, not a regular file, permission denied, an I/O error.",
        why="A file that was not read was not checked; the run says so instead of passing it.",
        bad="kvlint check missing.py  # no such file",
        good="kvlint check present.py",
        faces=frozenset({"check", "audit"}),  # only a tree run reads files; flake8, mypy and editors give the text
    ),
    Rule(
        code="KVC902",
        name="internal-error",
        summary="kvlint failed while analysing the file (a bug in kvlint)",
        what="Reports that the analysis of this file raised an unexpected error; the rest of the run goes on.",
        why="It is kvlint's bug, not yours: run with `--verbose` for the traceback and report it.",
        bad="(any file that triggers a kvlint bug)",
        good="(the same file, once the bug is fixed)",
    ),
)

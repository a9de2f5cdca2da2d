"""`--report-unused-noqa` is linear in `# noqa` lines plus findings (issue 29, defect 8).

Each `# noqa` line used to look at every finding of the file: 10k lines took 53 s, 20k 275 s. The bound is
checked by counting how often a finding is looked at, never by timing.
"""

from __future__ import annotations

from kvlint.config import Config
from kvlint.findings import Finding
from kvlint.running.unused_noqa import unused_noqa_in_text


class Counted:
    """A finding that counts the reads of its attributes."""

    reads = 0

    def __init__(self, finding: Finding) -> None:
        self._finding = finding

    def __getattr__(self, name: str) -> object:
        Counted.reads += 1
        return getattr(self._finding, name)


def _reads(size: int) -> tuple[int, int]:
    """A file of `size` `# noqa: KVC001` lines and `size` KVC005 findings (so every noqa is unused)."""
    noqa = [f"x{i} = 1  # noqa: KVC001\n" for i in range(size)]
    plain = [f"y{i} = 2\n" for i in range(size)]
    text = "".join(noqa + plain)
    findings = [Finding("f.py", size + i + 1, 0, "KVC005", "m", size + i + 1, 1) for i in range(size)]
    Counted.reads = 0
    found = unused_noqa_in_text("f.py", text, Config(), [Counted(f) for f in findings])  # type: ignore[misc]
    return Counted.reads, len(found)


def test_unused_noqa_looks_at_each_finding_a_bounded_number_of_times() -> None:
    reads, found = _reads(400)
    assert found == 400
    assert reads <= 20 * 400  # before: every noqa line read every finding (400 x 400 x 2)
    double, found_double = _reads(800)
    assert found_double == 800
    assert double <= 2.2 * reads


def test_the_answers_are_unchanged() -> None:
    text = (
        "a = kvo.finished_sending  # noqa: KVC001, KVC005\n"
        "b = kvo.x + \\\n"
        "    1  # noqa: KVC0\n"
        "d = (\n"
        "    kvo.y  # noqa: KVC006\n"
        ")\n"
        "c = 1  # noqa: E501, KVC004\n"
    )
    findings = [
        Finding("f.py", 1, 4, "KVC005", "m", 1, 10),
        Finding("f.py", 2, 4, "KVC001", "m", 2, 10),  # the same (backslash-joined) line as line 3's noqa
        Finding("f.py", 4, 4, "KVC006", "m", 4, 10),  # inside brackets, lines stay separate (flake8)
    ]
    found = unused_noqa_in_text("f.py", text, Config(), findings)
    assert [(f.line, f.message.split(":")[0]) for f in found] == [
        (1, "unused `# noqa` code KVC001"), (5, "unused `# noqa` code KVC006"), (7, "unused `# noqa` code KVC004")]

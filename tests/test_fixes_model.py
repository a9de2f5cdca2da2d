"""How fixes are applied to a file's text: in source order, overlapping ones left for a later pass."""

from __future__ import annotations

from kvlint.running.codec import finding_from_json, finding_to_json
from kvlint.source import split_lines
from kvlint.findings import Finding
from kvlint.fixing.model import Applicability, Edit, Fix, apply_fixes

SOURCE = "def f(out):\r\n    out = EMPTY\r\n    out.x = 1\n    return out\n"


def _fix(title: str, *edits: Edit, unsafe: bool = False) -> Fix:
    return Fix(title, Applicability.UNSAFE if unsafe else Applicability.SAFE, edits)


def test_edits_are_made_in_the_original_coordinates_whatever_the_line_endings():
    wrap = _fix("copy", Edit(2, 10, 2, 15, "copy.copy(EMPTY)"))
    header = _fix("import", Edit(1, 0, 1, 0, "import copy\r\n"))
    fixed, applied = apply_fixes(SOURCE, split_lines(SOURCE), [wrap, header])
    assert fixed == "import copy\r\ndef f(out):\r\n    out = copy.copy(EMPTY)\r\n    out.x = 1\n    return out\n"
    assert applied == [header, wrap]


def test_an_overlapping_fix_waits_for_the_next_pass_and_a_shared_edit_is_made_once():
    first = _fix("a", Edit(1, 0, 1, 0, "import copy\r\n"), Edit(2, 10, 2, 15, "A"))
    same_import = _fix("b", Edit(1, 0, 1, 0, "import copy\r\n"), Edit(3, 4, 3, 9, "B"))
    overlapping = _fix("c", Edit(2, 4, 2, 15, "C"))
    fixed, applied = apply_fixes(SOURCE, split_lines(SOURCE), [overlapping, same_import, first])
    assert applied == [first, same_import]
    assert fixed == "import copy\r\ndef f(out):\r\n    out = A\r\n    B = 1\n    return out\n"


def test_two_insertions_at_one_point_clash_and_a_malformed_fix_is_never_applied():
    one, two = _fix("1", Edit(4, 4, 4, 4, "x")), _fix("2", Edit(4, 4, 4, 4, "y"))
    reversed_range = _fix("r", Edit(3, 9, 3, 4, "z"))
    self_overlap = _fix("s", Edit(3, 4, 3, 9, "p"), Edit(3, 6, 3, 12, "q"))
    fixed, applied = apply_fixes(SOURCE, split_lines(SOURCE), [one, two, reversed_range, self_overlap])
    assert applied == [one]
    assert fixed == SOURCE.replace("    return", "    xreturn")


def test_a_finding_keeps_its_fix_through_the_cache_and_the_fix_does_not_change_its_identity():
    fix = _fix("Copy the sentinel", Edit(2, 10, 2, 15, "copy.copy(EMPTY)"), unsafe=True)
    finding = Finding("a.py", 2, 4, "KVC004", "m", 2, 7, invariant="kv", fix=fix)
    again = finding_from_json(finding_to_json(finding))
    assert again.fix == fix and again.fix.applies(unsafe=True) and not again.fix.applies(unsafe=False)
    assert again == Finding("a.py", 2, 4, "KVC004", "m", 2, 7, invariant="kv")
    assert finding_from_json(finding_to_json(Finding("a.py", 1, 0, "KVC900", "m", 1, 0))).fix is None

"""Pin kvlint's `# noqa` reading to flake8 7.5.0's NOQA_INLINE_REGEXP and is_inline_ignored."""

from __future__ import annotations

import pytest

from kvlint.noqa import is_suppressed, noqa_codes, noqa_line_mapping


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("x = 1\n", None),
        ("x = 1  # noqa\n", frozenset()),
        ("x = 1  # NOQA\n", frozenset()),
        ("x = 1  # NoQa\n", frozenset()),
        ("x = 1  # noqa:KVC001\n", frozenset({"KVC001"})),
        ("x = 1  # noqa: KVC001\n", frozenset({"KVC001"})),
        ("x = 1  # NOQA: KVC001,KVC002\n", frozenset({"KVC001", "KVC002"})),
        ("x = 1  # noqa:KVC001 KVC002\n", frozenset({"KVC001", "KVC002"})),
        ("x = 1  # noqa: KVC001, KVC002,\n", frozenset({"KVC001", "KVC002"})),
        ("x = 1  # noqa: KVC001,,KVC002\n", frozenset({"KVC001", "KVC002"})),
        ("x = 1  # noqa:\tKVC001\n", frozenset({"KVC001"})),
        # The regex wants "# noqa" with exactly one space.
        ("x = 1  #noqa:KVC001\n", None),
        ("x = 1  #noqa\n", None),
        ("x = 1  #  noqa\n", None),
        # Anything after "noqa" that is not ":" + at most one space + a code: blanket.
        ("x = 1  # noqa : E501\n", frozenset()),
        ("x = 1  # noqa :KVC001\n", frozenset()),
        ("x = 1  # noqa:  KVC001\n", frozenset()),
        ("x = 1  # noqa: KVC\n", frozenset()),
        ("x = 1  # noqa-KVC001\n", frozenset()),
        ("x = 1  # noqa because reasons\n", frozenset()),
        ("x = 1  # noqa:\n", frozenset()),
        # Codes match case-insensitively in the regex and are kept as written.
        ("x = 1  # noqa:kvc001\n", frozenset({"kvc001"})),
        # Code-like words after the codes are taken as codes; prose is not.
        ("x = 1  # noqa: KVC001 PR1234 and more\n", frozenset({"KVC001", "PR1234"})),
        ("x = 1  # noqa: KVC001 see PR1234\n", frozenset({"KVC001"})),
        # The first "# noqa" on the line decides.
        ("x = 1  # noqa # noqa: KVC001\n", frozenset()),
        ("x = 1  # type: ignore # noqa: KVC002\n", frozenset({"KVC002"})),
        # flake8 searches the physical line's text, so string contents count.
        ('x = "# noqa"\n', frozenset()),
        ('x = "# noqa: KVC001"\n', frozenset({"KVC001"})),
        ('x = f"{y}# noqa: KVC005"\n', frozenset({"KVC005"})),
    ],
)
def test_noqa_codes(line: str, expected: frozenset[str] | None) -> None:
    assert noqa_codes(line) == expected


@pytest.mark.parametrize(
    ("line", "code", "expected"),
    [
        ("kvo.finished_sending\n", "KVC001", False),
        ("kvo.finished_sending  # noqa\n", "KVC001", True),
        ("kvo.finished_sending  # noqa\n", "KVC900", True),
        ("kvo.finished_sending  # noqa: KVC001\n", "KVC001", True),
        ("kvo.finished_sending  # noqa: KVC001\n", "KVC002", False),
        ("kvo.finished_sending  # NOQA: KVC001,KVC002\n", "KVC002", True),
        ("kvo.finished_sending  # noqa:KVC001 KVC002\n", "KVC002", True),
        ("kvo.finished_sending  # noqa:KVC001 KVC002\n", "KVC003", False),
        ("kvo.finished_sending  #noqa:KVC001\n", "KVC001", False),
        # A listed code silences the codes it is a prefix of (code.startswith).
        ("kvo.finished_sending  # noqa: KVC0\n", "KVC001", True),
        ("kvo.finished_sending  # noqa: KVC0\n", "KVC005", True),
        ("kvo.finished_sending  # noqa: KVC0\n", "KVC900", False),
        ("kvo.finished_sending  # noqa: KVC9\n", "KVC901", True),
        ("kvo.finished_sending  # noqa: KVC00\n", "KVC001", True),
        # ...but not the other way round.
        ("kvo.finished_sending  # noqa: KVC0011\n", "KVC001", False),
        # "KVC" alone has no digit, so the regex sees a blanket noqa.
        ("kvo.finished_sending  # noqa: KVC\n", "KVC003", True),
        ("kvo.finished_sending  # noqa : E501\n", "KVC001", True),
        ("kvo.finished_sending  # noqa:  E501\n", "KVC001", True),
        # The comparison is case-sensitive: a lower-case code silences nothing.
        ("kvo.finished_sending  # noqa:kvc001\n", "KVC001", False),
        ("kvo.finished_sending  # noqa: E501\n", "KVC001", False),
        ('s = "# noqa"; kvo.finished_sending\n', "KVC001", True),
    ],
)
def test_is_suppressed(line: str, code: str, expected: bool) -> None:
    assert is_suppressed(line, code) is expected


def test_line_mapping_keeps_bracketed_lines_apart() -> None:
    lines = [
        "x = f(\n",
        "    kvo.finished_sending,\n",
        ")  # noqa: KVC001\n",
    ]
    mapping = noqa_line_mapping(lines)
    assert mapping == {1: lines[0], 2: lines[1], 3: lines[2]}
    assert not is_suppressed(mapping[2], "KVC001")


def test_line_mapping_joins_backslash_continuations() -> None:
    lines = ["x = a + \\\n", "    kvo.finished_sending  # noqa\n", "y = kvo.b\n"]
    mapping = noqa_line_mapping(lines)
    assert mapping[1] == mapping[2] == lines[0] + lines[1]
    assert is_suppressed(mapping[1], "KVC001")
    assert mapping[3] == lines[2]


def test_line_mapping_joins_a_multiline_string() -> None:
    lines = ['s = """\n', "# noqa\n", '"""\n', "kvo.x\n"]
    mapping = noqa_line_mapping(lines)
    assert is_suppressed(mapping[1], "KVC001")
    assert not is_suppressed(mapping[4], "KVC001")


def test_line_mapping_falls_back_to_physical_lines_when_tokenizing_fails() -> None:
    lines = ["x = (\n", "  kvo.a  # noqa\n"]
    mapping = noqa_line_mapping(lines)
    assert mapping == {1: lines[0], 2: lines[1]}
    assert not is_suppressed(mapping[1], "KVC001")
    assert is_suppressed(mapping[2], "KVC001")


def test_line_mapping_covers_a_last_line_without_newline() -> None:
    mapping = noqa_line_mapping(["a = 1\n", "kvo.b  # noqa"])
    assert is_suppressed(mapping[2], "KVC001")
    assert not is_suppressed(mapping[1], "KVC001")

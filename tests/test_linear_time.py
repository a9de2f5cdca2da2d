"""Linear time (issue 15): the `# noqa` search runs once per file, not once per finding, and the
connector-function needles cost in proportion to their count, not its square. The time itself is
measured in bench/large_file_bench.py; these tests count the work instead of timing it."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from kvlint import engine
from kvlint.binding import tree_index
from kvlint.config import Config
from kvlint.byte_scan import _needles
from kvlint.engine import PreparedFile, _unsuppressed
from kvlint.findings import Finding
from kvlint.binding.tree_index import TreeIndex


class _CountingText(str):
    """A file's text that counts how often it is lower-cased (the old noqa check did it per finding)."""

    calls = 0

    def lower(self) -> str:
        type(self).calls += 1
        return str.lower(self)


def test_the_noqa_search_lowers_the_text_once_per_file() -> None:
    lines = [f"x{n} = out.kv_connector_output.a  # noqa: E501\n" for n in range(2000)]
    lines[7] = "y = out.kv_connector_output.a  # noqa: KVC001\n"
    _CountingText.calls = 0
    prepared = PreparedFile("big.py", "big", text=_CountingText("".join(lines)), lines=lines)
    findings = [Finding("big.py", n, 4, "KVC001", "m", n, 10) for n in range(1, len(lines) + 1)]
    kept = _unsuppressed(findings, prepared, Config())
    assert len(kept) == len(findings) - 1 and all(f.line != 8 for f in kept)
    assert _CountingText.calls == 1


class _CountingName(str):
    """A needle that counts the pairwise `other in name` tests the old pruning made (count squared)."""

    tests = 0

    def __contains__(self, other: object) -> bool:
        type(self).tests += 1
        return str.__contains__(self, other)  # type: ignore[operator]


def test_needle_pruning_makes_no_pairwise_tests() -> None:
    names = tuple(_CountingName(f"producer_{n}") for n in range(2000)) + ("producer_1",)
    _CountingName.tests = 0
    kept, encoded = _needles(names)
    assert _CountingName.tests == 0
    assert "producer_1" in kept and "producer_12" not in kept and "producer_7" in kept  # 12 contains 1
    assert encoded == tuple(name.encode() for name in kept)


@pytest.mark.parametrize("count", [10, 400])
def test_connector_callees_compile_no_pattern_per_name(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The old search compiled two patterns and scanned every text once per candidate."""
    compiled: list[str] = []
    real_compile = re.compile
    monkeypatch.setattr(tree_index.re, "compile", lambda pattern, *a: compiled.append(pattern) or
                        real_compile(pattern, *a))
    index = TreeIndex([])
    monkeypatch.setattr(index, "callee_candidates", lambda: [f"kv:make_{n}" for n in range(count)])
    index.path_calls = {f"kv:make_{n}": 1 for n in range(count)}  # calls on the `kv` invariant's path
    texts = ["".join(f"def make_{n}():\n    pass\nmake_{n}()\n" for n in range(count))]
    index.settle_connector_callees(index.path_only_callees(texts), frozenset())
    assert compiled == []
    assert index.connector_callees == {f"make_{n}": ("kv",) for n in range(count)}
    off_the_path = texts + ["make_3()\n"]  # a second mention of `make_3`, not on a path
    index.settle_connector_callees(index.path_only_callees(off_the_path), frozenset())
    assert "make_3" not in index.connector_callees and "make_4" in index.connector_callees


def test_the_size_cap_is_the_measured_one() -> None:
    assert engine.MAX_FILE_BYTES == 8 * 2**20  # bench/README.md: linear up to 8 MiB


def test_word_mentions_counts_the_same_for_few_names_and_many() -> None:
    text = "def make(x):\n    remake(make_1(x)) + make(x) + x.make\n# make\nmake_1 = 'make'\n"
    few = tree_index.word_mentions(text, ["make", "make_1"])  # `str.find` per name
    many = tree_index.word_mentions(text, ["make", "make_1", *(f"other_{n}" for n in range(20))])  # every word
    assert +few == +many == Counter({"make": 4, "make_1": 2})  # `def make` is not a mention

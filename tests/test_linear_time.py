"""Linear time (issue 15): the `# noqa` search runs once per file, not once per finding, and the
connector-function needles cost in proportion to their count, not its square. Linear in the findings
(issue 27): a file of many findings costs calls in proportion to them, its fixes hold one top-level
statement's libcst tree at a time, and neither the `# noqa` lookup nor `ast.parse` of a large text holds
what it once did. The time and memory themselves are measured in bench/large_file_bench.py; these tests
count the work (and trace the memory) instead of timing it."""

from __future__ import annotations

import re
import sys
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


# ---------------------------------------------------------------- many findings in one file (issue 27)

HEADER = (
    "import copy\n\nfrom vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput\n\n\n"
)
# one function per rule that builds a fix, each with exactly one finding; `{0}` makes the names distinct
SHAPES = (
    "def step_{0}(out):\n    kvo = out.kv_connector_output\n    return kvo.finished_sending  # noqa: E501\n\n\n",
    "def merge_{0}(outputs, done):\n    for out in outputs:\n        kvo = out.kv_connector_output\n"
    "        # tally what finished\n        done.update(kvo.finished_sending or ())\n\n\n",
    "def idle_{0}(self, sched):\n    with self._get_kv_connector_output(sched) as kvo:\n        pass\n"
    "    if not kvo.finished_sending and not kvo.finished_recving:\n        return EMPTY_MODEL_RUNNER_OUTPUT\n"
    "    return self.run(sched, kvo)\n\n\n",
    "def finish_{0}(self, sched):\n    with self._get_kv_connector_output(sched) as kvo:\n"
    "        tokens = self.run(sched)\n"
    "    return ModelRunnerOutput(\n        req_ids=sched.req_ids,\n        sampled_token_ids=tokens,  # per request\n"
    "    )\n\n\n",
    "def mutate_{0}(kvo):\n    output = EMPTY_MODEL_RUNNER_OUTPUT\n    output.kv_connector_output = kvo\n"
    "    return output\n\n\n",
    "def release_{0}(kvo: KVConnectorOutput):\n    for req_id in kvo.finished_recving:\n"
    "        free(req_id)\n\n\n",
    "def sample_{0}(self, grammar_output):\n    state, self.step_state = self.step_state, None\n"
    "    kvo = state.kv_connector_output\n    if not self.is_last_rank:\n        self.receive_from_last_rank()\n"
    "        return None\n    return ModelRunnerOutput(req_ids=state.req_ids, kv_connector_output=kvo)\n\n\n",
)


def many_findings(count: int) -> str:
    """A module of `count` functions, one finding with a fix in each, the rules taking turns."""
    return HEADER + "".join(SHAPES[number % len(SHAPES)].format(number) for number in range(count))


@pytest.fixture
def on_this_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis runs on the calling thread, where a profile hook or tracemalloc's peak sees it."""
    monkeypatch.setattr(engine, "_run_with_deep_stack", lambda work: work())


def _operations(text: str) -> tuple[int, list[Finding]]:
    """How many Python and C function calls one analysis of `text` makes (deterministic, unlike its time)."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        calls += 1

    engine.analyse_source(text, "many.py")  # imports and caches: the second run counts the work itself
    sys.setprofile(count)
    try:
        report = engine.analyse_source(text, "many.py")
    finally:
        sys.setprofile(None)
    return calls, list(report.findings)


def test_the_work_grows_linearly_with_the_findings(on_this_thread: None) -> None:
    """Four times the findings cost four times the calls (the fix builders once rescanned the module for
    each finding: 9 times then)."""
    small, small_findings = _operations(many_findings(21))
    large, large_findings = _operations(many_findings(84))
    assert len(small_findings) == 21 and len(large_findings) == 84
    assert all(f.fix is not None for f in large_findings), [f.no_fix for f in large_findings if f.fix is None]
    assert large / small < 4.3


def test_fixes_parse_one_top_level_statement_at_a_time(on_this_thread: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """libcst never holds the module: each statement is parsed once, on its own."""
    import libcst

    from kvlint.fixing import units

    parsed: list[str] = []
    real_parse = libcst.parse_module
    monkeypatch.setattr(units.cst, "parse_module", lambda text: parsed.append(text) or real_parse(text))
    text = many_findings(14)
    report = engine.analyse_source(text, "many.py")
    assert len(report.findings) == 14 and all(f.fix is not None for f in report.findings)
    # the import statement, then each function; one more: the first indented block, for the indentation unit
    assert parsed[0].startswith("from vllm") and parsed[0].count("\n") == 1
    functions = parsed[1:]
    assert all(piece.startswith("def ") and "\ndef " not in piece for piece in functions)
    assert len(functions) == 15 and len(set(functions)) == 14


def test_the_fix_stage_holds_little_per_finding(on_this_thread: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """What building the fixes of 700 findings adds at its peak is the fixes themselves, not a tree of the
    module with its spans and parents (about 20 KB per finding of this size before)."""
    import tracemalloc

    peaks: list[int] = []
    real = engine._with_fixes

    def measured(*args):  # type: ignore[no-untyped-def]
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        try:
            return real(*args)
        finally:
            peaks.append(tracemalloc.get_traced_memory()[1] - start)

    from kvlint.fixing import module_facts

    monkeypatch.setattr(module_facts, "BATCH_CHARACTERS", 8192)  # the module's statements, 8 KB at a time
    monkeypatch.setattr(engine, "_with_fixes", measured)
    text = many_findings(700)
    engine.analyse_source(text, "many.py")  # imports before measuring
    tracemalloc.start()
    try:
        report = engine.analyse_source(text, "many.py")
    finally:
        tracemalloc.stop()
    assert len(report.findings) == 700
    assert peaks[-1] / 700 < 3000, f"{peaks[-1] / 700:.0f} bytes per finding"


def test_the_flow_stage_holds_no_tree_of_the_whole_module(on_this_thread: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow analysis parses and analyses the text a batch of top-level statements at a time: at its peak
    it holds one batch's tree and what the module's sites need, not the whole module's tree (about 20 KB per
    finding of this size, whole)."""
    import tracemalloc

    from kvlint.flow import source as flow_source

    peaks: list[int] = []
    real = engine._sites

    def measured(*args):  # type: ignore[no-untyped-def]
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        try:
            return real(*args)
        finally:
            peaks.append(tracemalloc.get_traced_memory()[1] - start)

    monkeypatch.setattr(flow_source, "BATCH_CHARACTERS", 8192)
    monkeypatch.setattr(engine, "_sites", measured)
    text = many_findings(2800)
    engine.analyse_source(text, "many.py", fixes=False)  # imports before measuring
    tracemalloc.start()
    try:
        report = engine.analyse_source(text, "many.py", fixes=False)
    finally:
        tracemalloc.stop()
    assert len(report.findings) == 2800
    assert peaks[-1] / 2800 < 5000, f"{peaks[-1] / 2800:.0f} bytes per finding"


def test_the_noqa_lines_keep_no_tokens() -> None:
    """`# noqa` is looked up in one pass over the tokens, which are never kept (a list of them was 50 times
    the text), and only multi-line logical lines are stored."""
    import tracemalloc

    from kvlint.noqa import NoqaLines, noqa_line_mapping

    lines = [f"x{n} = out.kv_connector_output.a  # noqa: E501\n" for n in range(5000)]
    lines[10:12] = ['y = """first\n', 'second"""  # noqa: KVC001\n']
    lines[20:22] = ["z = 1 + \\\n", "    2\n"]
    tracemalloc.start()
    try:
        found = NoqaLines(lines)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = "".join(lines)
    assert peak < 8 * len(text) + 256 * 1024, peak
    assert sorted(found.joined) == [11, 12, 21, 22]
    mapping = noqa_line_mapping(lines)
    assert all(found.text(number) == mapping[number] for number in range(1, len(lines) + 1))
    assert found.text(11) == 'y = """first\nsecond"""  # noqa: KVC001\n' and found.text(0) == found.text(5001) == ""


def test_module_facts_parse_the_file_a_batch_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fix asking how the module spells `copy.copy` reads the file's top-level statements in batches,
    with the file's line numbers, and never again for the next finding."""
    from kvlint.fixing import module_facts

    monkeypatch.setattr(module_facts, "BATCH_CHARACTERS", 200)
    sizes: list[int] = []
    real_parsed = module_facts._parsed
    monkeypatch.setattr(module_facts, "_parsed",
                        lambda text, first: sizes.append(len(text)) or real_parsed(text, first))
    text = "import os\n\n\n" + "".join(SHAPES[4].format(n) for n in range(30)) + "copy = None\n"
    report = engine.analyse_source(text, "mutating.py")
    assert len(report.findings) == 30
    line = text.count("\n")
    assert {f.no_fix for f in report.findings} == {
        f"the module binds `copy` at line {line}, not to the `copy` module"}
    assert len(sizes) > 3 and max(sizes) < 400 and sum(sizes) == len(text)  # once, in pieces


def test_parse_source_in_batches_gives_one_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large text is parsed a batch of definitions at a time (the C tree of a batch, not of the text, is
    held beside the Python one), and the tree is that of one `ast.parse`; where a batch would start inside a
    string, the text is parsed whole."""
    import ast

    from kvlint import source

    monkeypatch.setattr(source, "PARSE_BATCH_CHARACTERS", 300)
    sizes: list[int] = []
    real_parse = ast.parse
    monkeypatch.setattr(source.ast, "parse", lambda text, *more, **named: sizes.append(
        len(text.lstrip("\n"))) or real_parse(text, *more, **named))
    text = many_findings(40).replace("def idle_9(", "@decorated\n@twice\ndef idle_9(")
    tree = source.parse_source(text)
    assert ast.dump(tree, include_attributes=True) == ast.dump(real_parse(text), include_attributes=True)
    assert len(sizes) > 5 and max(sizes) < 1200
    sizes.clear()
    inside_a_string = 'NOTE = """\n' + "def not_code():\n    pass\n" * 200 + '"""\n' + "x = 1\n" * 100
    tree = source.parse_source(inside_a_string)
    assert ast.dump(tree, include_attributes=True) == ast.dump(real_parse(inside_a_string), include_attributes=True)
    assert sizes[-1] == len(inside_a_string)  # the batch before did not parse alone: parsed whole
    with pytest.raises(source.SourceError) as raised:
        source.parse_source(many_findings(40) + "def broken(:\n")
    assert raised.value.line == many_findings(40).count("\n") + 1

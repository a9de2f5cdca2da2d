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
from kvlint.binding import words
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
    monkeypatch.setattr(words.re, "compile", lambda pattern, *a: compiled.append(pattern) or
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
    few = words.word_mentions(text, ["make", "make_1"])  # `str.find` per name
    many = words.word_mentions(text, ["make", "make_1", *(f"other_{n}" for n in range(20))])  # every word
    assert +few == +many == Counter({"make": 4, "make_1": 2})  # `def make` is not a mention


def test_defined_names_counts_a_def_only_where_def_is_a_word() -> None:
    """`def` is matched as a literal and its word boundary tested apart (a pattern starting with `\\b` was tried
    at every position of the text): the same `def`s as `\\bdef\\s+(\\w+)` finds."""
    text = ("def make():\n    pass\nasync def make():\n    pass\nundef make\n_def make()\nredef  make_1\n"
            "def\tmake_1(): ...\n(def make)\ndef make_2(): ...\n")
    assert words.defined_names(text, ["make", "make_1"]) == Counter({"make": 3, "make_1": 1})
    assert +words.word_mentions(text, ["make"]) == Counter({"make": 2})  # 5 words `make`, 3 of them `def`s
    # a `def` that starts inside a refused one (`undef` then `def make` on the next line) is still found
    assert words.defined_names("    return undef\ndef make():\n    x = mydef  def\n", ["make", "def"]) == Counter(
        {"make": 1})
    assert words.defined_names("undef def make", ["make", "def"]) == Counter({"make": 1})


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


def _stage_peaks(monkeypatch: pytest.MonkeyPatch, stage: str) -> list[int]:
    """The traced peak over its start of each call of the engine's `stage` (tracemalloc running)."""
    import tracemalloc

    peaks: list[int] = []
    real = getattr(engine, stage)

    def measured(*args):  # type: ignore[no-untyped-def]
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        try:
            return real(*args)
        finally:
            peaks.append(tracemalloc.get_traced_memory()[1] - start)

    monkeypatch.setattr(engine, stage, measured)
    return peaks


def _traced_report(text: str, fixes: bool) -> engine.FileReport:
    import tracemalloc

    engine.analyse_source(text, "many.py", fixes=fixes)  # imports before measuring
    tracemalloc.start()
    try:
        return engine.analyse_source(text, "many.py", fixes=fixes)
    finally:
        tracemalloc.stop()


def test_the_fix_stage_holds_little_per_finding(on_this_thread: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """What building the fixes of 700 findings adds at its peak is the fixes themselves, not a tree of the
    module with its spans and parents (about 20 KB per finding of this size before)."""
    from kvlint.fixing import module_facts

    monkeypatch.setattr(module_facts, "BATCH_CHARACTERS", 8192)  # the module's statements, 8 KB at a time
    peaks = _stage_peaks(monkeypatch, "_with_fixes")
    report = _traced_report(many_findings(700), fixes=True)
    assert len(report.findings) == 700
    assert peaks[-1] / 700 < 3000, f"{peaks[-1] / 700:.0f} bytes per finding"


def test_the_flow_stage_holds_no_tree_of_the_whole_module(on_this_thread: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow analysis parses and analyses the text a batch of top-level statements at a time: at its peak
    it holds one batch's tree and what the module's sites need, not the whole module's tree (about 20 KB per
    finding of this size, whole)."""
    from kvlint.flow import source as flow_source

    monkeypatch.setattr(flow_source, "BATCH_CHARACTERS", 8192)
    peaks = _stage_peaks(monkeypatch, "_sites")
    report = _traced_report(many_findings(2800), fixes=False)
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


# ---------------------------------------------------------------- the cheap stage of a large file, a batch at a time

ACROSS_BATCHES = (
    '"""A module whose facts reach across its batches."""\n'
    "from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput\n\n"
    "__all__ = ['first']\n\n\n"
    "def first(out) -> 'Late | None':\n    return out.kv_connector_output\n\n\n"
    + "".join(f"def filler_{n}(out):\n    kvo = out.kv_connector_output\n    return kvo\n\n\n" for n in range(30))
    + "if not has_kv_transfer_group():\n    raise SystemExit(0)\n\n\n"
    "__all__ += ['Late']\n\n\n"
    "from vllm.distributed.kv_transfer import has_kv_transfer_group  # noqa: E402 - late, and still the module's\n\n\n"
    "class Late:\n    pending: KVConnectorOutput | None = None\n\n"
    "    def stash(self, kvo):\n        self._kept = kvo\n        return ModelRunnerOutput()\n\n\n"
    + "".join(f"def more_{n}(out):\n    return out.kv_connector_output\n\n\n" for n in range(30))
    + "produce_step(ModelRunnerOutput())\n"
)


def _prepared_facts(prepared: PreparedFile) -> tuple[object, ...]:
    imports = prepared.imports
    return (prepared.declarations, prepared.segments, prepared.local_names, prepared.local_output_classes,
            prepared.optional_attributes, prepared.lines, imports.bindings, imports.modules, imports.stars)


@pytest.mark.parametrize("batch_characters", [60, 200, 500])
def test_the_cheap_stage_of_a_large_file_a_batch_at_a_time_gives_what_one_tree_gives(
    batch_characters: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Imports, `__all__`, a module-level guard and a class that come late in the file, read a batch at a time."""
    from kvlint import source

    config = Config()
    whole = engine.prepare_source(ACROSS_BATCHES, "across.py", config, "across")
    taken: list[bool] = []
    real = engine._prepare_in_batches
    monkeypatch.setattr(engine, "_prepare_in_batches", lambda *a: taken.append(real(*a)) or taken[-1])
    monkeypatch.setattr(source, "PARSE_BATCH_CHARACTERS", batch_characters)
    batched = engine.prepare_source(ACROSS_BATCHES, "across.py", config, "across")
    assert taken == [True]
    assert _prepared_facts(batched) == _prepared_facts(whole)
    module = next(d for d in batched.declarations if type(d).__name__ == "ModuleDecl")
    assert module.exports == ("first", "Late")  # type: ignore[attr-defined]
    assert any(type(d).__name__ == "PathCalls" for d in batched.declarations)  # the guard's path, batches later


def test_the_cheap_stage_of_every_fixture_file_a_batch_at_a_time_is_as_of_one_tree(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    from kvlint import source
    from tests.conftest import FIXTURES

    config = Config()
    taken = 0
    for path in sorted(FIXTURES.rglob("*.py")):
        if not path.is_file():
            continue  # `nasty/` holds a directory named like a module
        data = path.read_bytes()
        monkeypatch.setattr(source, "PARSE_BATCH_CHARACTERS", 1 << 30)
        whole = engine.prepare_source(data, path.name, config, "fixture.module", extra_names=("",))
        monkeypatch.setattr(source, "PARSE_BATCH_CHARACTERS", 200)
        batched = engine.prepare_source(data, path.name, config, "fixture.module", extra_names=("",))
        assert _prepared_facts(batched) == _prepared_facts(whole), path
        taken += bool(whole.relevant and whole.error is None and source.parses_in_batches(whole.text))
    assert taken > 100


def test_the_cheap_stage_holds_one_batch_of_a_large_file_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 functions: as one tree, `ast` holds about 18 KB at its peak for each; a batch at a time, under
    a fifth of that (issue 27: memory per finding)."""
    import gc
    import tracemalloc

    from kvlint import source

    text = many_findings(10_000)
    default = source.PARSE_BATCH_CHARACTERS

    def peak_per_function(batch_characters: int) -> float:
        monkeypatch.setattr(source, "PARSE_BATCH_CHARACTERS", batch_characters)
        gc.collect()
        tracemalloc.start()
        try:
            prepared = engine.prepare_source(text, "many.py", Config(), "many")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len([d for d in prepared.declarations if type(d).__name__ == "FunctionDecl"]) >= 10_000
        return peak / 10_000

    whole, batched = peak_per_function(1 << 30), peak_per_function(default)
    assert batched < whole / 5, (batched, whole)

"""Fuzzing the engine: generated programs never make an exception escape, and every
finding lies inside its file. A longer run: `python scripts/fuzz.py --examples N`."""

from __future__ import annotations

import os
import warnings

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvlint.config import Config
from kvlint.engine import EVERYTHING, analyse_prepared, prepare_source
from kvlint.source import split_lines
from kvlint.binding.tree_index import TreeIndex

CONFIG = Config()
# hypothesmith compiles the programs it generates; their SyntaxWarnings are not kvlint's
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")
SCALE = float(os.environ.get("KVLINT_FUZZ_SCALE", "1"))  # scripts/fuzz.py raises it for long runs


def fuzz(examples: int) -> settings:
    return settings(max_examples=int(examples * SCALE), deadline=None, suppress_health_check=list(HealthCheck))


def check_everything(source: str) -> list:
    """Run the whole engine with every unit relevant; return the findings after checking them."""
    data = source.encode("utf-8", "surrogatepass")
    prepared = prepare_source(data, "fuzzed.py", CONFIG, "fuzzed", extra_names=EVERYTHING)
    report = analyse_prepared(prepared, CONFIG, TreeIndex(prepared.declarations), EVERYTHING)
    lines = split_lines(source) or [""]
    for finding in report.findings:
        assert finding.code != "KVC902", f"internal error: {finding.message}\n{report.traceback}"
        assert 1 <= finding.line <= max(len(lines), 1) + 1, finding
        if finding.code != "KVC900":
            assert finding.line <= len(lines), finding
            assert 0 <= finding.column <= len(lines[finding.line - 1]), finding
            assert (finding.end_line, finding.end_column) >= (finding.line, finding.column), finding
    return list(report.findings)


@fuzz(120)
@given(hypothesmith.from_grammar())
def test_grammar_generated_programs(source: str) -> None:
    check_everything(source)


@fuzz(30)  # hypothesmith's CST strategy is slow to generate: about 3 s an example
@given(hypothesmith.from_node())
def test_cst_generated_programs(source: str) -> None:
    check_everything(source)


RECEIVERS = st.sampled_from(["out", "self", "outs[0]", "kvo", "self.out", "x"])
VALUES = st.sampled_from(
    [
        "out.kv_connector_output",
        "self.kv_connector_output",
        "KVConnectorOutput()",
        "None",
        "EMPTY_MODEL_RUNNER_OUTPUT",
        "copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)",
        "get_output()",
        "kvo or KVConnectorOutput()",
    ]
)
NAMES = st.sampled_from(["kvo", "out", "result", "x"])
CONDITIONS = st.sampled_from(
    [
        "kvo is None",
        "kvo is not None",
        "not kvo",
        "kvo",
        "has_kv_transfer_group()",
        "not has_kv_transfer_group()",
        "isinstance(kvo, KVConnectorOutput)",
        "(kvo := out.kv_connector_output) is not None",
        "kvo and kvo.is_empty()",
        "kvo is None or kvo.is_empty()",
        "flag",
    ]
)
SIMPLE = st.one_of(
    st.builds("{} = {}".format, NAMES, VALUES),
    st.builds("use({}.finished_sending)".format, NAMES),
    st.builds("for r in {}.finished_recving: pass".format, NAMES),
    st.builds("{}.kv_connector_output = {}".format, RECEIVERS, VALUES),
    st.builds("return {}".format, VALUES),
    st.just("EMPTY_MODEL_RUNNER_OUTPUT.kv_connector_output = kvo"),
    st.just("return ModelRunnerOutput(req_ids=[])"),
    st.just("continue"),
    st.just("break"),
    st.just("pass"),
    st.just("raise ValueError"),
    st.builds("assert {}".format, CONDITIONS),
)


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines] or ["    pass"]


BLOCKS = st.recursive(
    st.lists(SIMPLE, min_size=1, max_size=4),
    lambda inner: st.one_of(
        st.builds(lambda c, a, b: [f"if {c}:", *_indent(a), "else:", *_indent(b)], CONDITIONS, inner, inner),
        st.builds(lambda a: ["for out in outs:", *_indent(a)], inner),
        st.builds(lambda c, a: [f"while {c}:", *_indent(a)], CONDITIONS, inner),
        st.builds(lambda a, b: ["try:", *_indent(a), "except Exception:", *_indent(b)], inner, inner),
        st.builds(lambda a: ["with _get_kv_connector_output(sched) as kvo:", *_indent(a)], inner),
        st.builds(
            lambda a: ["match kvo:", "    case None:", *_indent(_indent(a)), "    case _:", "        pass"], inner
        ),
        st.builds(lambda a, b: a + b, inner, inner),
    ),
    max_leaves=12,
)


@fuzz(150)
@given(BLOCKS, st.booleans())
def test_vllm_shaped_programs(body: list[str], marked: bool) -> None:
    header = (
        "import copy\n"
        "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput\n"
        "def get_output() -> KVConnectorOutput | None: ...\n"
    )
    marker = "  # kvlint: connector-path" if marked else ""
    source = header + f"def step(self, out, outs, sched, flag):{marker}\n" + "\n".join(_indent(body)) + "\n"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "fuzzed.py", "exec")
    except SyntaxError:
        return  # `break` outside a loop and the like: not a program anyone writes
    findings = check_everything(source)
    assert all(f.code != "KVC900" for f in findings), findings
    check_every_face(source)


def check_every_face(source: str) -> None:
    """The flake8 plugin and every audit and check format take the same program without an exception."""
    import ast

    from kvlint.report.audit import build_audit
    from kvlint.engine import analyse_source
    from kvlint.flake8_plugin import KVLintChecker
    from kvlint.report.formats import audit_renderers, check_renderers

    FORMATS, AUDIT_FORMATS = check_renderers(), audit_renderers()
    from kvlint.running.runner import RunResult

    report = analyse_source(source, "fuzzed.py", CONFIG)
    rows = list(KVLintChecker(ast.parse(source), source.splitlines(keepends=True), "fuzzed.py").run())
    assert sorted((line, column, text.split()[0]) for line, column, text, _ in rows) == sorted(
        (f.line, f.column, f.code) for f in report.findings
    )
    result = RunResult(
        reports=[report], findings=list(report.findings), files_found=1, files_analysed=int(report.analysed)
    )
    audit = build_audit(result, CONFIG, ["fuzzed.py"])
    for render in (*AUDIT_FORMATS.values(), *(lambda _, f=f: f(list(report.findings)) for f in FORMATS.values())):
        assert isinstance(render(audit), str)

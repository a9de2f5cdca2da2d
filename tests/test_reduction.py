"""The flow analysis sees only the units that can matter (docs/design.md, "Why it is fast"): these tests
pin which ones."""

from __future__ import annotations

import pytest

from kvlint.config import Config
from kvlint.engine import analyse_source, prepare_source, reduced_text

SOURCE = """\
from vllm.v1.outputs import ModelRunnerOutput as MRO, KVConnectorOutput


def annotated_only(runner) -> MRO:
    return runner.step()


def constructs(kvo: KVConnectorOutput):
    return MRO(req_ids=[], kv_connector_output=kvo)


class Runner:
    name = "runner"

    def unrelated(self) -> MRO:
        return self.last

    def reads(self, output: MRO):
        return output.kv_connector_output.finished_sending
"""


def _kept(source: str) -> list[str]:
    prepared = prepare_source(source.encode(), "example.py", Config(), "example")
    text, line_map = reduced_text(prepared, Config())
    assert text == "".join(prepared.lines[number - 1] for number in line_map)
    return [line.strip() for line in text.splitlines() if line.strip().startswith(("def ", "class ", "from "))]


def test_an_output_class_named_only_in_an_annotation_is_not_relevant() -> None:
    assert _kept(SOURCE) == [
        "from vllm.v1.outputs import ModelRunnerOutput as MRO, KVConnectorOutput",
        "def constructs(kvo: KVConnectorOutput):",
        "class Runner:",
        "def reads(self, output: MRO):",
    ]


def test_findings_in_kept_units_keep_their_original_lines() -> None:
    findings = analyse_source(SOURCE, "example.py").findings
    assert [(f.line, f.column, f.code) for f in findings] == [(19, 15, "KVC001")]


HELPER_ONLY = """\
def finish_step(step_output, finished):
    \"\"\"Hand the step's output on with the transfers that finished.\"\"\"
    if not finished:
        return step_output
    return step_output.with_kv_conn_output_only(finished)
"""

HELPER_BESIDE_THE_FIELD = """\
def finish_step(step_output, outputs):
    kvo = outputs[0].kv_connector_output
    done = kvo.finished_sending
    return step_output.with_kv_conn_output_only(done)
"""


def test_a_file_that_names_only_an_attaching_helper_is_not_analysed() -> None:
    """A rule reads a helper's call only where the unit names the field, a sentinel, an output class, a
    guard or a context too: a file that names nothing but the helper has nothing to check."""
    assert not prepare_source(HELPER_ONLY.encode(), "finish.py", Config(), "finish").relevant
    assert not analyse_source(HELPER_ONLY, "finish.py").analysed
    beside = analyse_source(HELPER_BESIDE_THE_FIELD, "finish.py")
    assert beside.analysed
    assert [(f.line, f.code) for f in beside.findings] == [(3, "KVC001")]


@pytest.mark.parametrize(("code", "shown"), [
    ("has_kv_transfer_group(\n)", "has_kv_transfer_group()"),
    ("KVConnectorOutput(\n    finished_sending=done,\n    finished_recving=recv,\n)",
     "KVConnectorOutput(finished_sending=done, finished_recving=recv)"),
    ("(req_id,)", "(req_id,)"),  # a one-element tuple keeps its comma
    ("outputs[\n    0\n].kv_connector_output", "outputs[0].kv_connector_output"),
    ("self._get_kv_connector_output(scheduler_output, wait_for_save=True, something_else=another_value)",
     "self._get_kv_connector_output(scheduler_output, wait_for_save=True..."),  # cut between words
    ("x" * 100, "x" * 77 + "..."),  # nowhere to cut: at the limit
    ("ModelRunnerOutput(  # the step's tokens\n    req_ids=ids,  # kept\n    note='a # b',\n)",
     "ModelRunnerOutput(req_ids=ids, note='a # b')"),  # comments go, a `#` in a string stays
])
def test_messages_show_source_on_one_line_without_stray_spaces(code: str, shown: str) -> None:
    from kvlint.flow.syntax import one_line

    assert one_line(code) == shown


def test_a_file_relevant_whole_is_parsed_once_and_analysed_as_if_parsed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kvlint import engine
    from kvlint.binding.tree_index import TreeIndex

    whole = "def step(out):\n    kvo = out.kv_connector_output\n    return kvo.finished_sending\n"
    config = Config()
    for source, reused in ((whole, True), (SOURCE, False)):  # SOURCE has units the analysis leaves out
        kept = prepare_source(source.encode(), "m.py", config, "m", keep_tree=True)
        plain = prepare_source(source.encode(), "m.py", config, "m")
        assert kept.tree is not None and plain.tree is None
        index = TreeIndex(kept.declarations, payload_classes=config.payload_classes)
        parsed: list[str] = []
        real_parse = engine.parse_source
        monkeypatch.setattr(engine, "parse_source", lambda text: parsed.append(text) or real_parse(text))
        report = engine.analyse_prepared(kept, config, index)
        assert (parsed == []) is reused and kept.tree is None  # taken once: a second analysis parses
        assert report == engine.analyse_prepared(plain, config, index)
        assert report.findings == engine.analyse_prepared(kept, config, index).findings
        monkeypatch.undo()

"""libcst sees only the units that can matter (docs/design.md, "Why it is fast"); these tests pin which ones."""

from __future__ import annotations

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

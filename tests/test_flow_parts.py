"""The flow analysis's parts: plain classes that share one `FlowContext` and call one another through the
attributes `FlowAnalysis` sets up, which a run takes down again (no reference cycle outlives it); and a module
analysed a batch of top-level statements at a time finds what it finds analysed whole."""

from __future__ import annotations

import ast
import gc
import textwrap
import weakref

import pytest

import kvlint.flow.source as flow_source
from kvlint.binding.declarations import module_declarations
from kvlint.binding.names import ImportTable
from kvlint.binding.tree_index import TreeIndex
from kvlint.config import Config
from kvlint.engine import analyse_source
from kvlint.flow import FlowAnalysis
from kvlint.flow.source import SourceText
from kvlint.running.runner import run
from kvlint.sites import SiteKind
from tests.conftest import ROOT

MODULE = textwrap.dedent("""
    from vllm.v1.outputs import KVConnectorOutput

    def step(out):
        kvo = out.kv_connector_output
        return kvo.finished_sending
""").lstrip()


def _analysis(text: str) -> FlowAnalysis:
    tree = ast.parse(text)
    imports = ImportTable.from_ast(tree, "m")
    index = TreeIndex(module_declarations(tree, "m", imports))
    line_map = list(range(1, text.count("\n") + 2))
    return FlowAnalysis(SourceText(text, line_map), imports, index, Config(), "m")


def test_the_parts_call_one_another_through_the_attributes_the_analysis_sets_up() -> None:
    analysis = _analysis(MODULE)
    assert analysis.statements.expressions is analysis.expressions
    assert analysis.expressions.narrowing is analysis.narrowing
    assert analysis.narrowing.recorder is analysis.recorder
    assert analysis.recorder.statements is analysis.statements
    parts = (analysis.statements, analysis.expressions, analysis.narrowing, analysis.recorder)
    assert {id(part.context) for part in parts} == {id(analysis.context)}


def test_a_run_leaves_no_cycle_between_the_parts() -> None:
    """kvlint collects garbage rarely: parts that still referred to one another after a run would keep every
    module's context (its text, sites and caches) alive until a collection."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        analysis = _analysis(MODULE)
        parts = [weakref.ref(part) for part in (analysis.statements, analysis.expressions, analysis.narrowing,
                                                analysis.recorder)]
        context = weakref.ref(analysis.context)
        sites = analysis.run([ast.parse(MODULE)])
        del analysis
        assert [part() for part in parts] == [None] * 4
        assert context() is None
    finally:
        if enabled:
            gc.enable()
    assert [site.kind for site in sites if site.kind is SiteKind.DEREFERENCE]  # it analysed the function


# Module-level facts a later top-level statement reads: an annotated global, the state of the module's own
# scope, a sentinel given a field once at import, two definitions of one name, and the module ending early.
ACROSS_UNITS = textwrap.dedent("""
    from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput

    pending: KVConnectorOutput | None = None
    if STEP.kv_connector_output is None:
        raise SystemExit("no connector")
    kvo = STEP.kv_connector_output

    if not hasattr(EMPTY_MODEL_RUNNER_OUTPUT, "tag"):
        EMPTY_MODEL_RUNNER_OUTPUT.tag = 1

    print(kvo.finished_sending)

    def first(out):
        held = out.kv_connector_output
        return held.finished_sending

    def first(out):
        return pending.finished_recving

    class Runner:
        def step(self, out):
            return out.kv_connector_output.finished_sending

    class Runner:
        def step(self, out):
            if out.kv_connector_output is None:
                return EMPTY_MODEL_RUNNER_OUTPUT
            return ModelRunnerOutput(kv_connector_output=out.kv_connector_output)

    pending = KVConnectorOutput.restored()
    print(pending.finished_sending)
    EMPTY_MODEL_RUNNER_OUTPUT.tag = 2
    print(kvo.finished_recving)
    raise SystemExit(repr(EMPTY_MODEL_RUNNER_OUTPUT))

    def never_analysed(out):
        return out.kv_connector_output.finished_sending
""").lstrip()


def _sites_of(text: str, batch_characters: int, monkeypatch: pytest.MonkeyPatch) -> tuple[object, ...]:
    monkeypatch.setattr(flow_source, "BATCH_CHARACTERS", batch_characters)
    report = analyse_source(text, "across.py", Config(), module_name="across", fixes=False)
    return report.sites, report.findings


def test_a_unit_at_a_time_finds_what_the_whole_module_does(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = _sites_of(ACROSS_UNITS, 1 << 30, monkeypatch)
    assert _sites_of(ACROSS_UNITS, 1, monkeypatch) == whole  # every top-level statement its own batch
    sites, findings = whole
    lines = ACROSS_UNITS.splitlines()
    dereferenced = {lines[site.span.line - 1].strip(): site for site in sites if site.kind is SiteKind.DEREFERENCE}
    assert not dereferenced["print(kvo.finished_sending)"].may_be_none  # the module's state, statements before
    assert dereferenced["return pending.finished_recving"].may_be_none  # the annotated global
    assert not dereferenced["print(pending.finished_sending)"].may_be_none  # assigned what it was declared
    assert not any("never_analysed" in site.function for site in sites)  # the `raise` ended the module
    mutated = [lines[site.span.line - 1].strip() for site in sites if site.kind is SiteKind.SENTINEL_USE]
    assert "EMPTY_MODEL_RUNNER_OUTPUT.tag = 2" in mutated and "EMPTY_MODEL_RUNNER_OUTPUT.tag = 1" not in mutated
    assert {finding.code for finding in findings} >= {"KVC001", "KVC004"}


def test_the_fixtures_analysed_a_unit_at_a_time_are_as_analysed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every unit of every fixture file (`everything`), the tree's index as a run builds it."""
    def reports(batch_characters: int) -> list[tuple[object, ...]]:
        monkeypatch.setattr(flow_source, "BATCH_CHARACTERS", batch_characters)
        result = run([ROOT / "fixtures"], Config(), jobs=1, everything=True)
        return [(report.display_path, report.sites, report.findings) for report in result.reports]

    whole = reports(1 << 30)
    assert sum(len(sites) for _, sites, _ in whole) > 1000
    assert reports(1) == whole


def test_what_the_analysis_knew_of_a_batch_by_id_goes_with_the_batch() -> None:
    """`names_within` is by id() of the batch's nodes, which a later batch's nodes may reuse once it is gone."""
    again = MODULE.replace("step", "again")
    analysis = _analysis(MODULE + again)
    seen: list[int] = []
    forget = analysis.expressions.forget_nodes

    def forget_nodes() -> None:
        seen.append(len(analysis.expressions.names_within))
        forget()

    analysis.expressions.forget_nodes = forget_nodes  # type: ignore[method-assign]
    analysis.run([ast.parse(MODULE), ast.parse("\n" * MODULE.count("\n") + again)])
    assert len(seen) == 2 and seen[0] > 0 and analysis.expressions.names_within == {}


def test_evolve_copies_as_dataclasses_replace_does():
    """The flow's cheap copy of a value equals `dataclasses.replace`'s, hashes alike, leaves the original alone,
    refuses a field the class lacks, and hands a class it cannot copy by its `__dict__` to `dataclasses.replace`."""
    import dataclasses

    from kvlint.flow.state import Nullness, ScopeContext, Value, evolve
    from kvlint.sites import Span

    held = Value(Nullness.MAYBE_NONE, connector_output=True, origin="`out.kv_connector_output`", kv_source=True)
    copied = evolve(held, nullness=Nullness.NOT_NONE, guard="`is not None`")
    assert copied == dataclasses.replace(held, nullness=Nullness.NOT_NONE, guard="`is not None`")
    assert hash(copied) == hash(dataclasses.replace(held, nullness=Nullness.NOT_NONE, guard="`is not None`"))
    assert (held.nullness, held.guard, copied.kv_source) == (Nullness.MAYBE_NONE, "", True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        copied.guard = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError, match="no field nulness"):
        evolve(held, nulness=Nullness.NONE)
    scope = ScopeContext("module.step")
    assert evolve(scope, producer=True) == ScopeContext("module.step", producer=True) and not scope.producer
    span = Span(1, 2, 3, 4)  # slots: no `__dict__` to copy
    assert evolve(span, line=5) == dataclasses.replace(span, line=5)

    @dataclasses.dataclass(frozen=True)
    class Derived:
        base: int
        double: int = dataclasses.field(init=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "double", 2 * self.base)

    assert evolve(Derived(1), base=4).double == 8  # `__post_init__` runs again, as `dataclasses.replace` has it


def test_a_value_is_made_as_the_frozen_dataclass_makes_it():
    """`Value.__init__` fills the instance's `__dict__` itself: every field as given or its default, in the fields'
    order, an unknown field refused, and the value frozen all the same."""
    import dataclasses

    from kvlint.flow.state import Nullness, Value

    value = Value(Nullness.MAYBE_NONE, connector_output=True, origin="`out.kv_connector_output`", invariant="kv")
    fields = dataclasses.fields(Value)
    assert list(vars(value)) == [field.name for field in fields]
    given = {"nullness": Nullness.MAYBE_NONE, "connector_output": True, "origin": "`out.kv_connector_output`",
             "invariant": "kv"}
    assert {field.name: getattr(value, field.name) for field in fields} == {
        field.name: given.get(field.name, field.default) for field in fields}
    assert value == Value(nullness=Nullness.MAYBE_NONE, invariant="kv", origin="`out.kv_connector_output`",
                          connector_output=True)
    assert dataclasses.replace(value, guard="checked").guard == "checked"
    assert hash(value) == hash(dataclasses.replace(value))
    with pytest.raises(TypeError, match="no field gaurd"):
        Value(Nullness.NONE, gaurd="checked")
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.origin = "changed"  # type: ignore[misc]


def test_a_report_without_its_sites_keeps_everything_else():
    """What a check's worker sends back: the report with no sites, every other field as it was (a field added
    to `FileReport` and not copied by `without_sites` fails here)."""
    import dataclasses

    from kvlint.engine import FileReport

    report = analyse_source(MODULE, "m.py", Config())
    assert report.sites and report.findings
    full = dataclasses.replace(report, traceback="Traceback (most recent call last): ...")
    assert full.without_sites() == dataclasses.replace(full, sites=())
    assert [field.name for field in dataclasses.fields(FileReport)] == [
        "display_path", "sites", "findings", "analysed", "traceback"]
    bare = FileReport("m.py")
    assert bare.without_sites() is bare

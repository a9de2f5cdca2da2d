"""The flow analysis's parts: plain classes that share one `FlowContext` and call one another through the
attributes `FlowAnalysis` sets up, which a run takes down again (no reference cycle outlives it)."""

from __future__ import annotations

import ast
import gc
import textwrap
import weakref

from kvlint.binding.declarations import module_declarations
from kvlint.binding.names import ImportTable
from kvlint.binding.tree_index import TreeIndex
from kvlint.config import Config
from kvlint.flow import FlowAnalysis
from kvlint.flow.source import SourceText
from kvlint.sites import SiteKind

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
    return FlowAnalysis(ast.parse(text), SourceText(text, line_map), imports, index, Config(), "m")


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
        sites = analysis.run()
        del analysis
        assert [part() for part in parts] == [None] * 4
        assert context() is None
    finally:
        if enabled:
            gc.enable()
    assert [site.kind for site in sites if site.kind is SiteKind.DEREFERENCE]  # it analysed the function

"""Annotation spellings and the tree index: which calls are sources of maybe-None outputs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvlint.annotations import AnnotationKind, classify_annotation_text
from kvlint.config import Config
from kvlint.names import ImportTable
from kvlint.runner import run
from kvlint.declarations import FunctionDecl, module_declarations
from kvlint.tree_index import TreeIndex, returns_optional_payload

IMPORTS = ImportTable({
    "KVConnectorOutput": "vllm.v1.outputs.KVConnectorOutput",
    "KVO": "vllm.v1.outputs.KVConnectorOutput",
    "Optional": "typing.Optional",
    "Union": "typing.Union",
    "t": "typing",
    "outputs": "vllm.v1.outputs",
    "Other": "elsewhere.Other",
})


@pytest.mark.parametrize(("text", "expected"), [
    ("KVConnectorOutput", AnnotationKind.PAYLOAD),
    ("KVO", AnnotationKind.PAYLOAD),
    ("outputs.KVConnectorOutput", AnnotationKind.PAYLOAD),
    ("'KVConnectorOutput'", AnnotationKind.PAYLOAD),
    ("KVConnectorOutput | None", AnnotationKind.OPTIONAL_PAYLOAD),
    ("None | KVConnectorOutput", AnnotationKind.OPTIONAL_PAYLOAD),
    ("Optional[KVConnectorOutput]", AnnotationKind.OPTIONAL_PAYLOAD),
    ("t.Optional[KVO]", AnnotationKind.OPTIONAL_PAYLOAD),
    ("Union[KVConnectorOutput, None]", AnnotationKind.OPTIONAL_PAYLOAD),
    ("Union[None, outputs.KVConnectorOutput]", AnnotationKind.OPTIONAL_PAYLOAD),
    ("'Optional[KVConnectorOutput]'", AnnotationKind.OPTIONAL_PAYLOAD),
    ("Optional['KVConnectorOutput']", AnnotationKind.OPTIONAL_PAYLOAD),
    ("'KVConnectorOutput | None'", AnnotationKind.OPTIONAL_PAYLOAD),
    ("KVConnectorOutput | Other | None", None),  # a union of two classes is not the payload
    ("Optional[Other]", None),
    ("list[KVConnectorOutput]", None),
    ("Optional[list[KVConnectorOutput]]", None),
    ("'not an annotation ('", None),
])
def test_annotation_spellings(text: str, expected: AnnotationKind | None) -> None:
    assert classify_annotation_text(text, IMPORTS.resolve_dotted, ("KVConnectorOutput",)) is expected


SOURCE = '''
from typing import Optional
from vllm.v1.outputs import KVConnectorOutput

def fetch() -> Optional[KVConnectorOutput]: ...
def plain() -> KVConnectorOutput: ...

class Runner:
    def take(self) -> "KVConnectorOutput | None": ...
    def shared(self) -> KVConnectorOutput | None: ...
    class Inner:
        def deep(self) -> KVConnectorOutput | None: ...

class Other:
    def shared(self) -> int: ...
'''


def test_index_entries_name_every_definition_with_its_qualified_name() -> None:
    tree = ast.parse(SOURCE)
    entries = module_declarations(tree, "pkg.mod", ImportTable.from_ast(tree, "pkg.mod"))
    functions = [e for e in entries if isinstance(e, FunctionDecl)]
    assert {(e.qualname, returns_optional_payload(e, ("KVConnectorOutput",))) for e in functions} == {
        ("pkg.mod.fetch", True), ("pkg.mod.plain", False), ("pkg.mod.Runner.take", True),
        ("pkg.mod.Runner.shared", True), ("pkg.mod.Runner.Inner.deep", True), ("pkg.mod.Other.shared", False),
    }


def test_calls_resolve_by_qualified_name_or_by_an_unambiguous_method_name() -> None:
    tree = ast.parse(SOURCE)
    index = TreeIndex(module_declarations(tree, "pkg.mod", ImportTable.from_ast(tree, "pkg.mod")))
    assert index.returns_optional("pkg.mod.fetch", "elsewhere")  # imported by qualified name
    assert index.returns_optional("fetch", "pkg.mod")  # called in its own module
    assert not index.returns_optional("fetch", "elsewhere")  # a bare name from another module is not it
    assert index.returns_optional("self.take", "pkg.mod")  # every `take` of the tree returns Optional
    assert not index.returns_optional("self.shared", "pkg.mod")  # one `shared` returns int: not a source
    assert not index.returns_optional("plain", "pkg.mod")
    assert index.candidate_names() == {"fetch", "plain", "take", "shared", "deep"}  # what holds the payload


def test_a_definition_in_a_file_the_scan_skipped_still_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "producer.py").write_text(
        "from vllm.v1.outputs import KVConnectorOutput\n\n"
        "class Producer:\n    def poll(self) -> KVConnectorOutput | None: ...\n"
    )
    (tmp_path / "consumer.py").write_text("def use(p):\n    return p.poll().finished_sending\n")
    monkeypatch.chdir(tmp_path)
    assert [(f.path, f.code) for f in run([Path(".")], Config(), jobs=1).findings] == [("consumer.py", "KVC001")]
    (tmp_path / "unrelated.py").write_text("class Queue:\n    def poll(self):\n        return 1\n")
    assert run([Path(".")], Config(), jobs=1).findings == []

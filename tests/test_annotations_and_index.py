"""Annotation spellings and the tree index: which calls are sources of maybe-None outputs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kvlint.binding.annotations import AnnotationKind, classify_annotation
from kvlint.config import Config
from kvlint.binding.names import ImportTable
from kvlint.running.runner import run
from kvlint.binding.declarations import FunctionDecl, module_declarations
from kvlint.binding.tree_index import TreeIndex, returns_optional_payload

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
    annotation = ast.parse(text, mode="eval").body
    assert classify_annotation(annotation, IMPORTS.resolve_dotted, ("KVConnectorOutput",)) is expected


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


def test_calls_resolve_by_qualified_name_never_by_a_method_name_alone() -> None:
    tree = ast.parse(SOURCE)
    index = TreeIndex(module_declarations(tree, "pkg.mod", ImportTable.from_ast(tree, "pkg.mod")))
    assert index.returns_optional("pkg.mod.fetch", "elsewhere")  # imported by qualified name
    assert index.returns_optional("fetch", "pkg.mod")  # called in its own module
    assert not index.returns_optional("fetch", "elsewhere")  # a bare name from another module is not it
    assert index.returns_optional("pkg.mod.Runner.take", "elsewhere")  # a method by its class
    assert not index.returns_optional("self.take", "pkg.mod")  # a receiver of unknown class: nothing resolved
    assert not index.returns_optional("plain", "pkg.mod")
    assert index.candidate_names() == {"fetch", "plain", "take", "shared", "deep"}  # what holds the payload


def test_a_method_is_its_receivers_class_whatever_a_skipped_file_declares_by_its_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consumer mentions no configured name (the byte scan skips it) and calls `poll` on a `Producer`: it is
    analysed as a caller, and `Producer.poll` decides; the receiver of unknown class resolves to nothing."""
    (tmp_path / "producer.py").write_text(
        "from vllm.v1.outputs import KVConnectorOutput\n\n"
        "class Producer:\n    def poll(self) -> KVConnectorOutput | None: ...\n"
    )
    (tmp_path / "consumer.py").write_text(CONSUMER)
    monkeypatch.chdir(tmp_path)
    expected = [("consumer.py", 5, "KVC001")]
    assert [(f.path, f.line, f.code) for f in run([Path(".")], Config(), jobs=1).findings] == expected
    (tmp_path / "unrelated.py").write_text("class Queue:\n    def poll(self):\n        return 1\n")
    assert [(f.path, f.line, f.code) for f in run([Path(".")], Config(), jobs=1).findings] == expected


CONSUMER = (
    "import producer\n\n\ndef use(p: 'producer.Producer'):\n    return p.poll().finished_sending\n\n\n"
    "def use_any(p):\n    return p.poll().finished_sending\n"
)


def test_a_method_called_on_a_receiver_of_unknown_class_is_no_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fut.result()` on a `concurrent.futures.Future` is not the `result()` a package declares Optional, even
    one the caller imports: a receiver of unknown class resolves to nothing; one of known class
    resolves through it."""
    (tmp_path / "producer.py").write_text(
        "from vllm.v1.outputs import KVConnectorOutput\n\n"
        "class AsyncStep:\n    async def result(self) -> KVConnectorOutput | None: ...\n"
    )
    (tmp_path / "pool.py").write_text(
        "from concurrent.futures import ThreadPoolExecutor\n\n\n"
        "def finished(pool: ThreadPoolExecutor, step):\n    return pool.submit(step).result().finished_sending\n"
    )
    (tmp_path / "importer.py").write_text(
        "import producer\n\n\nasync def finished(step):\n    return (await step.result()).finished_sending\n\n\n"
        "async def finished_of(step: producer.AsyncStep):\n    return (await step.result()).finished_sending\n"
    )
    monkeypatch.chdir(tmp_path)
    assert [(f.path, f.line, f.code) for f in run([Path(".")], Config(), jobs=1).findings] == [
        ("importer.py", 9, "KVC001"),
    ]


DECLARED = '''
import sys
from dataclasses import dataclass
from typing import NoReturn, Optional
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, KVConnectorOutput, ModelRunnerOutput

LAST: KVConnectorOutput | None = None

@dataclass
class StepOutput:
    req_ids: list[str]
    kv_connector_output: KVConnectorOutput
    extra: "Optional[KVConnectorOutput]" = None

class Runner(Base):
    _EMPTY = EMPTY_MODEL_RUNNER_OUTPUT

    def __init__(self):
        self.pending: dict[int, KVConnectorOutput | None] = {}
        self.helper = Helper()

    @property
    def last(self) -> KVConnectorOutput | None: ...

    def fail(self, why: str) -> NoReturn: ...

    def stop(self, why):
        raise RuntimeError(why)

    def todo(self):
        raise NotImplementedError

    def step(self):
        return EMPTY_MODEL_RUNNER_OUTPUT
'''


def _declarations():
    from kvlint.binding.declarations import ClassDecl, GlobalDecl, TypeRef

    tree = ast.parse(DECLARED)
    found = module_declarations(tree, "pkg.mod", ImportTable.from_ast(tree, "pkg.mod"),
                                ("EMPTY_MODEL_RUNNER_OUTPUT",), ("ModelRunnerOutput",))
    classes = {d.name: d for d in found if isinstance(d, ClassDecl)}
    functions = {d.qualname: d for d in found if isinstance(d, FunctionDecl)}
    globals_ = {d.qualname: d.type for d in found if isinstance(d, GlobalDecl)}
    return found, classes, functions, globals_, TypeRef


def test_declarations_read_fields_properties_attributes_and_globals() -> None:
    found, classes, functions, globals_, TypeRef = _declarations()
    payload = "vllm.v1.outputs.KVConnectorOutput"
    step = dict(classes["StepOutput"].members)
    assert step["kv_connector_output"] == TypeRef("class", payload)
    assert step["extra"] == TypeRef("class", payload, optional=True)
    assert classes["StepOutput"].fields == ("req_ids", "kv_connector_output", "extra")
    runner = dict(classes["Runner"].members)
    assert runner["last"] == TypeRef("class", payload, optional=True)  # a property
    assert runner["pending"] == TypeRef("dict", element=TypeRef("class", payload, optional=True))
    assert runner["helper"] == TypeRef("class", "Helper")  # the one construction that ever sets it
    assert classes["Runner"].sentinel_members == ("_EMPTY",)
    assert classes["Runner"].bases == ("Base",)
    assert globals_["pkg.mod.LAST"] == TypeRef("class", payload, optional=True)
    assert functions["pkg.mod.Runner.fail"].never_returns
    assert functions["pkg.mod.Runner.stop"].never_returns  # its body always raises
    assert not functions["pkg.mod.Runner.todo"].never_returns  # an abstract stub is no NoReturn
    assert functions["pkg.mod.Runner.step"].returns_output
    from kvlint.binding.declarations import declaration_from_json

    assert [declaration_from_json(d.to_json()) for d in found] == found  # what the result cache keeps


def test_the_index_looks_members_up_through_bases() -> None:
    source = (
        "from vllm.v1.outputs import KVConnectorOutput\n"
        "class Base:\n    kv_connector_output: KVConnectorOutput | None = None\n"
        "    def poll(self) -> KVConnectorOutput | None: ...\n"
        "class Wrapper(Base):\n    kv_connector_output: KVConnectorOutput\n"
        "class Child(Base):\n    pass\n"
        "class Other:\n    def poll(self) -> int: ...\n"
    )
    tree = ast.parse(source)
    index = TreeIndex(module_declarations(tree, "m", ImportTable.from_ast(tree, "m")))
    assert not index.member("m.Wrapper", "kv_connector_output").optional  # the nearest declaration wins
    assert index.member("m.Child", "kv_connector_output").optional
    assert index.method("m.Child", "poll").returns.optional
    assert index.method("m.Other", "poll").returns.name == "int"
    assert not index.returns_optional("x.poll", "m")  # by name alone, `poll` is ambiguous: silence


CALLERS = '''
from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT

class Runner:
    def flush(self):
        return EMPTY_MODEL_RUNNER_OUTPUT

    def idle(self):
        return EMPTY_MODEL_RUNNER_OUTPUT

    def step(self, work):
        if not work:
            if not has_kv_transfer_group():
                return None
            return self.flush()
        if has_kv_transfer_group() and self.ready:
            self.flush()
        self.idle()
'''


def test_a_function_called_only_on_connector_paths_is_on_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "runner.py").write_text(CALLERS)
    monkeypatch.chdir(tmp_path)
    found = [(f.line, f.code) for f in run([Path(".")], Config(), jobs=1).findings]
    assert found == [(7, "KVC002")]  # `flush`; `idle` is also called off the path
    (tmp_path / "elsewhere.py").write_text("def later(runner):\n    return runner.flush\n")
    assert run([Path(".")], Config(), jobs=1).findings == []  # a mention that is not a guarded call


COMPLETING_CALLERS = '''
import copy

from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput


class Runner:
    def _bare_output(self, scheduler_output):
        return ModelRunnerOutput(req_ids=list(scheduler_output.req_ids), req_id_to_index={})

    def _empty_copy(self):
        return copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)

    def _no_forward(self, scheduler_output):
        return EMPTY_MODEL_RUNNER_OUTPUT

    def execute_model(self, scheduler_output):
        with self._get_kv_connector_output(scheduler_output) as kvo:
            self.model(scheduler_output)
        output = self._bare_output(scheduler_output)
        output.kv_connector_output = kvo
        return output

    def idle(self, scheduler_output):
        if not has_kv_transfer_group():
            return EMPTY_MODEL_RUNNER_OUTPUT
        if not scheduler_output.total_num_scheduled_tokens:
            return self._no_forward(scheduler_output)
        with self._get_kv_connector_output(scheduler_output) as kvo:
            pass
        output = self._empty_copy()
        output.kv_connector_output = kvo
        return output
'''


def test_a_helper_whose_callers_complete_its_output_is_not_on_their_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller that keeps a helper's output and attaches the connector output to it answers for it: the
    helper is not on the caller's path (`_bare_output`, `_empty_copy`: silent), where a helper whose result the
    caller returns as it is still is (`_no_forward`: KVC002)."""
    (tmp_path / "runner.py").write_text(COMPLETING_CALLERS)
    monkeypatch.chdir(tmp_path)
    found = [(f.line, f.code) for f in run([Path(".")], Config(), jobs=1).findings]
    assert found == [(16, "KVC002")]


ATTACHING_HELPER = '''
from copy import copy
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class KVConnectorOutput:
    finished_sending: Optional[set[str]] = None
    finished_recving: Optional[set[str]] = None

    def is_empty(self) -> bool:
        return not self.finished_sending and not self.finished_recving


@dataclass
class ModelRunnerOutput:
    req_ids: list[str]
    req_id_to_index: dict[str, int]
    kv_connector_output: Optional[KVConnectorOutput] = None

    @staticmethod
    def with_kv_conn_output_only(kv_connector_output: Optional[KVConnectorOutput]) -> "ModelRunnerOutput":
        if kv_connector_output is None or kv_connector_output.is_empty():
            return EMPTY_MODEL_RUNNER_OUTPUT
        output = copy(EMPTY_MODEL_RUNNER_OUTPUT)
        output.kv_connector_output = kv_connector_output
        return output


EMPTY_MODEL_RUNNER_OUTPUT = ModelRunnerOutput(req_ids=[], req_id_to_index={})
'''

ATTACHING_CALLER = '''
from vllm.v1.outputs import ModelRunnerOutput


class Worker:
    def execute_model(self, scheduler_output):
        with self.model_runner._get_kv_connector_output(scheduler_output) as kvo:
            self.model_runner.execute_model(scheduler_output)
        return ModelRunnerOutput.with_kv_conn_output_only(kvo)
'''


def test_the_attaching_helper_is_never_on_its_callers_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`with_kv_conn_output_only` (the preset's attaching helper) returns the sentinel for an empty connector
    output by design: that every call of it is on a connector path makes its own return no KVC002 (what the
    fix of a bare sentinel's return writes must not be reported in turn)."""
    (tmp_path / "vllm" / "v1" / "worker").mkdir(parents=True)
    for package in ("vllm", "vllm/v1", "vllm/v1/worker"):
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "vllm" / "v1" / "outputs.py").write_text(ATTACHING_HELPER)
    (tmp_path / "vllm" / "v1" / "worker" / "worker.py").write_text(ATTACHING_CALLER)
    monkeypatch.chdir(tmp_path)
    result = run([Path(".")], Config(), jobs=1)
    assert result.findings == [] and result.index is not None
    assert result.index.connector_callees == {".with_kv_conn_output_only": ("kv",)}  # inferred, and waived


def test_two_files_of_one_module_name_do_not_decide_for_each_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripts without packages: `a/worker.py` and `b/worker.py` are both module `worker`."""
    header = "from vllm.v1.outputs import ModelRunnerOutput\n\nclass Worker:\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "worker.py").write_text(
        header + "    def step(self, out):\n        kvo = out.kv_connector_output\n        self.log(kvo)\n"
        "        return None\n"
    )
    (tmp_path / "b" / "worker.py").write_text(header + "    def step(self):\n        return ModelRunnerOutput([])\n")
    monkeypatch.chdir(tmp_path)
    forward = run([Path("a"), Path("b")], Config(), jobs=1).findings
    backward = run([Path("b"), Path("a")], Config(), jobs=1).findings
    assert forward == backward == []


def test_a_method_called_on_the_path_does_not_put_a_same_named_function_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "runner.py").write_text(
        "from vllm.distributed.kv_transfer import has_kv_transfer_group\n"
        "from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT\n\n"
        "class Runner:\n    def step(self, sched):\n        if has_kv_transfer_group():\n"
        "            return self.connector_runner.idle_output(sched)\n        return None\n\n"
        "def idle_output(sched):\n    return EMPTY_MODEL_RUNNER_OUTPUT\n"
    )
    monkeypatch.chdir(tmp_path)
    assert run([Path(".")], Config(), jobs=1).findings == []


POSITIONAL = '''
from dataclasses import KW_ONLY, dataclass, field
from vllm.distributed.kv_transfer import has_kv_transfer_group
from vllm.v1.outputs import KVConnectorOutput

class OwnInit:
    req_ids: list[str]
    kv_connector_output: KVConnectorOutput | None
    def __init__(self, req_ids, kv_connector_output):
        self.req_ids, self.kv_connector_output = req_ids, kv_connector_output

@dataclass
class Fields:
    req_ids: list[str]
    kv_connector_output: KVConnectorOutput | None = None

@dataclass
class KeywordOnly:
    req_ids: list[str]
    _: KW_ONLY
    kv_connector_output: KVConnectorOutput | None = None

@dataclass
class NotInInit:
    req_ids: list[str]
    cache: dict = field(init=False)
    kv_connector_output: KVConnectorOutput | None = None

def build(kvo: KVConnectorOutput):
    if has_kv_transfer_group():
        a = OwnInit([], kvo)
        b = Fields([], kvo)
        c = Fields([])
        d = KeywordOnly([])
        e = NotInInit([], kvo)
        return a, b, c, d, e
    return None
'''


def test_positional_arguments_follow_the_generated_init_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = Config(kv_overrides=(("output_classes", ("OwnInit", "Fields", "KeywordOnly", "NotInInit")),))
    (tmp_path / "outputs.py").write_text(POSITIONAL)
    monkeypatch.chdir(tmp_path)
    found = [(f.line, f.code) for f in run([Path(".")], config, jobs=1).findings]
    # `Fields([])` stops before the field; `KeywordOnly([])` cannot pass it positionally at all. The others pass it
    # (`OwnInit` through its own `__init__`, where kvlint cannot read positions, so it says nothing).
    assert found == [(33, "KVC003"), (34, "KVC003")]


def test_an_attribute_declared_optional_in_one_class_is_not_a_source_in_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "runners.py").write_text(
        "from vllm.v1.outputs import KVConnectorOutput\n\n"
        "class Lazy:\n    def __init__(self):\n        self._kv: KVConnectorOutput | None = None\n\n"
        "    def sent(self):\n        return len(self._kv.finished_sending or ())\n\n"
        "class Eager:\n    def __init__(self, kv):\n        self._kv = kv\n\n"
        "    def sent(self):\n        return len(self._kv.finished_sending or ())\n"
    )
    monkeypatch.chdir(tmp_path)
    assert [(f.line, f.code) for f in run([Path(".")], Config(), jobs=1).findings] == [(8, "KVC001")]


def test_a_generic_class_of_the_tree_substitutes_its_type_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "buffers.py").write_text(
        "from typing import Generic, TypeVar\nfrom vllm.v1.outputs import KVConnectorOutput\n\n"
        "T = TypeVar('T')\n\nclass Buffer(Generic[T]):\n"
        "    def pop(self) -> T | None: ...\n    def peek(self) -> T: ...\n\n"
        "def drop(buf: Buffer[KVConnectorOutput]) -> int:\n    return len(buf.pop().finished_sending or ())\n\n"
        "def head(buf: Buffer[KVConnectorOutput]) -> int:\n    return len(buf.peek().finished_sending or ())\n"
    )
    monkeypatch.chdir(tmp_path)
    assert [(f.line, f.code) for f in run([Path(".")], Config(), jobs=1).findings] == [(11, "KVC001")]


RELEVANT_NEIGHBOUR = (
    "from vllm.v1.outputs import KVConnectorOutput\n\ndef make{n}() -> KVConnectorOutput:\n"
    "    return KVConnectorOutput()\n"
)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_skipped_file_naming_a_path_only_callee_is_heard_with_worker_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    (tmp_path / "runner.py").write_text(CALLERS)
    for n in range(4):
        (tmp_path / f"neighbour{n}.py").write_text(RELEVANT_NEIGHBOUR.format(n=n))
    monkeypatch.chdir(tmp_path)
    assert [(f.path, f.line, f.code) for f in run([Path(".")], Config(), jobs=jobs).findings] == [
        ("runner.py", 7, "KVC002"),
    ]
    (tmp_path / "elsewhere.py").write_text("def later(runner):\n    return runner.flush\n")
    result = run([Path(".")], Config(), jobs=jobs)
    assert result.findings == [] and result.index is not None and result.index.connector_callees == {}

"""One engine pass, several invariants: facts of one never leak into another, shared names serve each.

Each case is a shape a review of the multi-invariant engine found wrong; the neighbours beside every
flagged line stay silent.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from kvlint.config import load_config
from kvlint.running.runner import run
from tests.conftest import run_kvlint

FOO = """
[tool.kvlint]

[[tool.kvlint.invariants]]
name = "foo"
optional-fields = ["foo_output"]
payload-class = "FooOutput"
output-classes = ["ModelRunnerOutput"]
empty-sentinels = ["EMPTY_FOO_OUTPUT"]
connector-guards = ["has_foo"]
"""


def _write(project: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _found(project: Path) -> list[tuple[str, int, str, str]]:
    result = run([Path(".")], load_config([project]), jobs=1)
    return [(f.path, f.line, f.code, f.invariant) for f in result.findings]


def test_one_method_declared_in_two_spellings_of_one_payload_class(project: Path) -> None:
    """Two definitions name `KVConnectorOutput` through different modules: still the `kv` invariant's
    source, so a point where it is proven not None is on the KV path (KVC002, not KVC006)."""
    _write(project, {
        "a.py": """
            from typing import Optional
            from vllm.v1.outputs import KVConnectorOutput
            class A:
                def take(self) -> Optional[KVConnectorOutput]:
                    return None
        """,
        "b.py": """
            from typing import Optional
            from vllm.distributed.kv_transfer.kv_connector.v1 import KVConnectorOutput
            class B:
                def take(self) -> Optional[KVConnectorOutput]:
                    return None
        """,
        "c.py": """
            from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT
            import a, b
            def step(worker: a.A):
                kvo = worker.take()
                if kvo is not None:
                    return EMPTY_MODEL_RUNNER_OUTPUT
                return None
            def merge(worker: b.B):
                kvo = worker.take()
                return kvo.finished_sending
        """,
    })
    assert _found(project) == [("c.py", 6, "KVC002", "kv"), ("c.py", 10, "KVC001", "kv")]
    messages = [f.message for f in run([Path(".")], load_config([project]), jobs=1).findings]
    assert "declared `-> KVConnectorOutput | None`" in messages[1]


def test_the_origin_of_a_container_return_names_the_payload(project: Path) -> None:
    _write(project, {"a.py": """
        from typing import Optional, Sequence
        from vllm.v1.outputs import KVConnectorOutput
        class Agg:
            def collect_kv(self, outputs: Sequence) -> list[Optional[KVConnectorOutput]]:
                return [o.kv_connector_output for o in outputs]
            def total(self, outputs):
                for kvo in self.collect_kv(outputs):
                    print(kvo.finished_sending)
            def guarded(self, outputs):
                for kvo in self.collect_kv(outputs):
                    print(kvo.finished_sending if kvo else None)
    """})
    (finding,) = run([Path(".")], load_config([project]), jobs=1).findings
    assert finding.line == 8 and "declared `-> KVConnectorOutput | None`" in finding.message


def test_a_guard_two_invariants_share_puts_the_point_on_both_paths(project: Path) -> None:
    _write(project, {
        "pyproject.toml": FOO.replace("[tool.kvlint]\n", '[tool.kvlint]\npresets = ["kv"]\n').replace(
            'connector-guards = ["has_foo"]', 'connector-guards = ["has_kv_transfer_group"]'),
        "a.py": """
            from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput
            from vllm.distributed import has_kv_transfer_group
            def step(kvo, foo):
                if has_kv_transfer_group():
                    return ModelRunnerOutput(kv_connector_output=kvo)
                return ModelRunnerOutput(kv_connector_output=kvo)
            def carried(kvo, foo):
                if has_kv_transfer_group():
                    return ModelRunnerOutput(kv_connector_output=kvo, foo_output=foo)
                return None
        """,
    })
    assert _found(project) == [("a.py", 5, "KVC003", "foo")]


def test_a_sentinel_of_unknown_spelling_belongs_to_no_invariant_when_their_sentinels_differ(project: Path) -> None:
    """`self._EMPTY` holds vLLM's sentinel: not `foo`'s, whose own sentinel is another object."""
    _write(project, {
        "pyproject.toml": FOO,
        "a.py": """
            from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT
            from foo import EMPTY_FOO_OUTPUT, has_foo
            class Runner:
                _EMPTY = EMPTY_MODEL_RUNNER_OUTPUT
                def step(self):
                    if has_foo():
                        return self._EMPTY
                    return None
                def step2(self):
                    if has_foo():
                        return EMPTY_MODEL_RUNNER_OUTPUT
                    return None
                def step3(self):
                    if has_foo():
                        return EMPTY_FOO_OUTPUT
                    return None
        """,
        "b.py": """
            import copy
            from foo import EMPTY_FOO_OUTPUT
            def mutate_alias(x):
                e = EMPTY_FOO_OUTPUT
                e.req_ids = x
            def mutate_copy(x):
                e = copy.copy(EMPTY_FOO_OUTPUT)
                e.req_ids = x
        """,
    })
    assert _found(project) == [("a.py", 15, "KVC002", "foo"), ("b.py", 5, "KVC004", "foo")]
    audit = json.loads(run_kvlint("audit", ".", "--format", "json", cwd=project).stdout)
    uses = {(u["path"], u["line"], u["use"]): u["invariant"] for u in audit["sentinel_uses"] if u["path"] == "b.py"}
    assert uses == {("b.py", 4, "aliased"): "foo", ("b.py", 5, "mutated"): "foo", ("b.py", 7, "copied"): "foo"}


def test_a_value_that_may_be_either_invariants_output_proves_neither_active(project: Path) -> None:
    _write(project, {"a.py": """
        from vllm.v1.outputs import ModelRunnerOutput
        def pick(out, use_kv):
            conn = out.kv_connector_output if use_kv else out.ec_connector_output
            if conn is not None:
                return ModelRunnerOutput(kv_connector_output=conn)
            return None
        def one(out):
            conn = out.ec_connector_output
            if conn is not None:
                return ModelRunnerOutput(kv_connector_output=conn)
            return None
    """})
    assert _found(project) == [("a.py", 10, "KVC003", "ec")]


def test_the_audit_shows_each_invariants_findings_on_its_own_row(project: Path) -> None:
    _write(project, {"a.py": """
        from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT
        def f(sched):
            with _get_kv_connector_output(sched) as kvo:
                pass
            return EMPTY_MODEL_RUNNER_OUTPUT
    """})
    rows = [line for line in run_kvlint("audit", ".", cwd=project).stdout.splitlines() if "sentinel returned" in line]
    assert len(rows) == 2
    (kv,) = [row for row in rows if "[kv]" in row]
    (ec,) = [row for row in rows if "[ec]" in row]
    assert kv.rstrip().endswith("KVC002") and "KVC002" not in ec


def test_a_return_the_empty_output_policy_accepts_is_not_drawn_as_a_finding(project: Path) -> None:
    _write(project, {
        "pyproject.toml": '[tool.kvlint]\nempty-output = "allow-when-empty"\n',
        "a.py": """
            import copy
            from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT
            def idle(sched):
                with _get_kv_connector_output(sched) as kvo:
                    pass
                if kvo.is_empty():
                    return EMPTY_MODEL_RUNNER_OUTPUT
                out = copy.copy(EMPTY_MODEL_RUNNER_OUTPUT)
                out.kv_connector_output = kvo
                return out
        """,
    })
    assert _found(project) == []
    audit = json.loads(run_kvlint("audit", ".", "--format", "json", cwd=project).stdout)
    (returned,) = [u for u in audit["sentinel_uses"] if u["use"] == "returned" and u["invariant"] == "kv"]
    assert returned["allowed_empty"] and returned["on_connector_path"]
    dot = run_kvlint("audit", ".", "--format", "dot", cwd=project).stdout
    assert "returns the sentinel, its output empty" in dot and "#c62828" not in dot.split("legend")[0]


def test_markers_name_invariants_with_spaces_and_any_case(project: Path) -> None:
    _write(project, {"a.py": """
        from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT
        def spaced():  # kvlint: connector-path [ec]
            return EMPTY_MODEL_RUNNER_OUTPUT
        def upper():  # kvlint: connector-path[EC]
            return EMPTY_MODEL_RUNNER_OUTPUT
        def unknown():  # kvlint: connector-path[fp8]
            return EMPTY_MODEL_RUNNER_OUTPUT
    """})
    assert _found(project) == [("a.py", 3, "KVC002", "ec"), ("a.py", 5, "KVC002", "ec"), ("a.py", 6, "KVC101", "")]


def test_a_class_attribute_knows_which_sentinel_it_holds(project: Path) -> None:
    """`_EMPTY = EMPTY_FOO_OUTPUT` is `foo`'s sentinel under any spelling; `_VLLM = EMPTY_MODEL_RUNNER_OUTPUT`
    is the `kv` and `ec` presets' one, and returning it under `has_foo()` drops nothing of `foo`'s."""
    _write(project, {
        "pyproject.toml": FOO,
        "a.py": """
            from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT
            from foo import EMPTY_FOO_OUTPUT, has_foo
            class Runner:
                _EMPTY = EMPTY_FOO_OUTPUT
                _VLLM = EMPTY_MODEL_RUNNER_OUTPUT
                def step(self):
                    if has_foo():
                        return self._EMPTY
                    return None
                def other(self):
                    if has_foo():
                        return self._VLLM
                    return None
                def spoil(self, x):
                    self._EMPTY.req_ids = x
        """,
    })
    assert _found(project) == [("a.py", 8, "KVC002", "foo"), ("a.py", 15, "KVC004", "foo")]


def test_a_marker_naming_no_invariant_is_kvc101_where_it_is_written(project: Path) -> None:
    """KVC101 is reported at the marker, once per marker, naming only what no invariant is called; the names the
    marker knows still put the function on their paths. A marker's text in a docstring is no marker, and a
    `# noqa: KVC101` silences it like any finding."""
    _write(project, {"runner.py": '''
        from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT


        class EncoderRunner:
            def idle_step(self, scheduler_output):  # kvlint: connector-path[ecc]
                return EMPTY_MODEL_RUNNER_OUTPUT

            def drain(
                self,
                scheduler_output,
            ):  # kvlint: connector-path[KV, ecc, xx]
                return EMPTY_MODEL_RUNNER_OUTPUT

            def documented(self):
                """Mark a function `# kvlint: connector-path[nope]` to put it on a path."""
                return EMPTY_MODEL_RUNNER_OUTPUT

            def known(self):  # kvlint: connector-path[Ec]
                return EMPTY_MODEL_RUNNER_OUTPUT

            def excused(self):  # kvlint: connector-path[zz]  # noqa: KVC101
                return EMPTY_MODEL_RUNNER_OUTPUT
    '''})
    findings = run([Path(".")], load_config([project]), jobs=1).findings
    assert [(f.line, f.column, f.code, f.invariant, f.function) for f in findings] == [
        (5, 44, "KVC101", "", "EncoderRunner.idle_step"),
        (11, 8, "KVC101", "", "EncoderRunner.drain"),
        (12, 8, "KVC002", "kv", "EncoderRunner.drain"),  # `KV` is known: the function is on the KV path
        (19, 8, "KVC002", "ec", "EncoderRunner.known"),
    ]
    assert findings[0].message == (
        "`# kvlint: connector-path[ecc]` names `ecc`, but this configuration's invariants are kv, ec: the function "
        "is on no connector path for it"
    )
    assert "names `ecc` and `xx`, but" in findings[1].message and findings[1].message.endswith("for them")
    completed = run_kvlint("check", "--select", "KVC101", "--format", "json", ".", cwd=project)
    assert [(f["line"], f["column"], f["end_column"]) for f in json.loads(completed.stdout)] == [
        (5, 45, 74), (11, 9, 46),  # 1-based, the end after the marker's `]`
    ]


def test_a_marker_names_the_invariants_of_the_configuration_in_use(project: Path) -> None:
    """With `presets = []` and one invariant of a project's own, `[draft]` marks and `[kv]` is KVC101."""
    _write(project, {
        "pyproject.toml": """
            [tool.kvlint]
            presets = []

            [[tool.kvlint.invariants]]
            name = "draft"
            optional-fields = ["spec_output"]
            payload-class = "SpecOutput"
            output-classes = ["DraftOutput"]
            empty-sentinels = ["EMPTY_DRAFT"]
        """,
        "drafter.py": """
            from drafts import EMPTY_DRAFT
            def propose():  # kvlint: connector-path[draft]
                return EMPTY_DRAFT
            def verify():  # kvlint: connector-path[kv]
                return EMPTY_DRAFT
        """,
    })
    assert _found(project) == [("drafter.py", 3, "KVC002", "draft"), ("drafter.py", 4, "KVC101", "")]


_PAYLOAD_OF_0_33 = '''
    from dataclasses import dataclass, field


    @dataclass
    class KVConnectorOutput:
        finished_sending: set[str] | None = None
        finished_recving: set[str] | None = None
        kv_connector_stats: object | None = None
        invalid_block_ids: set[int] = field(default_factory=set)
        failed_recving: set[str] = field(default_factory=set)

        def is_empty(self) -> bool:
            return not (self.finished_sending or self.finished_recving or self.kv_connector_stats
                        or self.invalid_block_ids or self.failed_recving)


    @dataclass
    class ModelRunnerOutput:
        req_ids: list[str]
        kv_connector_output: KVConnectorOutput | None = None


    EMPTY_MODEL_RUNNER_OUTPUT = ModelRunnerOutput(req_ids=[])
'''

_IDLE_STEPS = '''
    from vllm.v1.outputs import EMPTY_MODEL_RUNNER_OUTPUT, ModelRunnerOutput


    class IdleSteps:
        def two_sets_only(self, scheduler_output):
            with self._get_kv_connector_output(scheduler_output) as kvo:
                pass
            if not kvo.finished_sending and not kvo.finished_recving:
                return EMPTY_MODEL_RUNNER_OUTPUT
            return ModelRunnerOutput(req_ids=[], kv_connector_output=kvo)

        def every_field(self, scheduler_output):
            with self._get_kv_connector_output(scheduler_output) as kvo:
                pass
            if (not kvo.finished_sending and not kvo.finished_recving and not kvo.kv_connector_stats
                    and not kvo.invalid_block_ids and not kvo.failed_recving):
                return EMPTY_MODEL_RUNNER_OUTPUT
            return ModelRunnerOutput(req_ids=[], kv_connector_output=kvo)

        def asks_the_payload(self, scheduler_output):
            with self._get_kv_connector_output(scheduler_output) as kvo:
                pass
            if kvo.is_empty():
                return EMPTY_MODEL_RUNNER_OUTPUT
            return ModelRunnerOutput(req_ids=[], kv_connector_output=kvo)
'''


def test_allow_when_empty_counts_every_field_is_empty_counts(project: Path) -> None:
    """vLLM's `is_empty()` counts `invalid_block_ids` and `failed_recving`, which are never None: a test of the
    two finished sets alone is not "empty", and the message names what it left unchecked."""
    _write(project, {
        "pyproject.toml": '[tool.kvlint]\nempty-output = "allow-when-empty"\n',
        "vllm/v1/outputs.py": _PAYLOAD_OF_0_33,
        "runner.py": _IDLE_STEPS,
    })
    result = run([Path(".")], load_config([project]), jobs=1)
    assert [(f.path, f.line, f.code) for f in result.findings] == [("runner.py", 9, "KVC002")]
    assert ("(not shown empty: its `is_empty()` also counts `kv_connector_stats`, `invalid_block_ids`, "
            "`failed_recving`, which the test left unchecked)") in result.findings[0].message


def test_allow_when_empty_with_the_payload_out_of_sight_trusts_the_two_sets(project: Path) -> None:
    """Which release's payload it is, nothing says: the two sets every release has are the test (silence)."""
    _write(project, {
        "pyproject.toml": '[tool.kvlint]\nempty-output = "allow-when-empty"\n',
        "runner.py": _IDLE_STEPS,
    })
    assert _found(project) == []

"""Invariants as data: `[[tool.kvlint.invariants]]`, `[kvlint.invariants.NAME]`, presets, the flat keys
as overrides of `kv`, the empty-output policy, and an invariant that has nothing to do with vLLM."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kvlint.config import KNOWN_KEYS, Config, ConfigError, describe, kv_overrides, load_config
from kvlint.invariants import INVARIANT_KEYS, PRESETS
from kvlint.running.runner import run
from tests.conftest import run_kvlint


def _load(project: Path, toml: str) -> Config:
    (project / "pyproject.toml").write_text(textwrap.dedent(toml), encoding="utf-8")
    return load_config([project])


def _error(project: Path, toml: str) -> str:
    with pytest.raises(ConfigError) as info:
        _load(project, toml)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_the_defaults_are_both_presets() -> None:
    invariants = Config().invariants
    assert [i.name for i in invariants.invariants] == ["kv", "ec"]
    assert invariants.by_name["ec"].optional_fields == ("ec_connector_output",)
    assert invariants.by_name["ec"].payload_class == "ECConnectorOutput"
    assert invariants.by_name["ec"].connector_guards == ("has_ec_transfer",)
    assert invariants.with_sentinel("vllm.v1.outputs.EMPTY_MODEL_RUNNER_OUTPUT") == ("kv", "ec")
    assert invariants.of_field("ec_connector_output") == "ec"
    assert all(i.empty_output == "forbid" for i in invariants.invariants)


def test_every_key_of_an_invariant_table(project: Path) -> None:
    config = _load(project, """
        [tool.kvlint]
        presets = ["kv"]

        [[tool.kvlint.invariants]]
        name = "kv"
        optional-fields = ["kv_connector_output", "kv_out"]
        payload-class = "plugin.outputs.KVOut"
        payload-optional-fields = ["done_sending"]
        emptiness-fields = ["failed_ids"]
        output-classes = ["plugin.outputs.PluginOutput"]
        empty-sentinels = ["EMPTY_PLUGIN_OUTPUT"]
        attaching-helpers = ["PluginOutput.with_kv"]
        connector-guards = ["plugin.has_connector"]
        connector-contexts = ["connector_scope"]
        optional-contexts = ["maybe_scope"]
        connector-functions = ["Worker.execute_model"]
        empty-output = "allow-when-empty"
    """)
    (kv,) = config.invariants.invariants
    assert kv.as_dict() == {
        "name": "kv",
        "optional-fields": ("kv_connector_output", "kv_out"),
        "payload-class": "plugin.outputs.KVOut",
        "payload-optional-fields": ("done_sending",),
        "emptiness-fields": ("failed_ids",),
        "output-classes": ("plugin.outputs.PluginOutput",),
        "empty-sentinels": ("EMPTY_PLUGIN_OUTPUT",),
        "attaching-helpers": ("PluginOutput.with_kv",),
        "connector-guards": ("plugin.has_connector",),
        "connector-contexts": ("connector_scope",),
        "optional-contexts": ("maybe_scope",),
        "connector-functions": ("Worker.execute_model",),
        "empty-output": "allow-when-empty",
    }
    assert set(kv.as_dict()) - {"name"} == set(INVARIANT_KEYS) <= set(KNOWN_KEYS)


def test_a_table_changes_only_the_keys_it_gives(project: Path) -> None:
    config = _load(project, """
        [[tool.kvlint.invariants]]
        name = "ec"
        empty-output = "allow-when-empty"
    """)
    kv, ec = config.invariants.invariants
    assert kv == PRESETS["kv"]
    assert ec.empty_output == "allow-when-empty" and ec.optional_fields == PRESETS["ec"].optional_fields


def test_flat_keys_override_kv_and_keep_old_configurations_working(project: Path) -> None:
    config = _load(project, """
        [tool.kvlint]
        optional-fields = ["kv_out"]
        empty-output = "allow-when-empty"
    """)
    kv, ec = config.invariants.invariants
    assert kv.optional_fields == ("kv_out",) and kv.empty_output == "allow-when-empty"
    assert kv.payload_class == "KVConnectorOutput"
    assert ec == PRESETS["ec"]
    assert config == Config(source=project / "pyproject.toml", root=project,
                            kv_overrides=kv_overrides(optional_fields=("kv_out",), empty_output="allow-when-empty"))


def test_the_same_in_setup_cfg(project: Path) -> None:
    (project / "setup.cfg").write_text(textwrap.dedent("""
        [kvlint]
        presets = ec

        [kvlint.invariants.draft]
        optional-fields = spec_output
        payload-class = SpecOutput
        output-classes = DraftOutput
        empty-sentinels = EMPTY_DRAFT
        empty-output = allow-when-empty
    """), encoding="utf-8")
    config = load_config([project])
    assert [i.name for i in config.invariants.invariants] == ["ec", "draft"]
    draft = config.invariants.by_name["draft"]
    assert (draft.optional_fields, draft.payload_class, draft.empty_output) == (
        ("spec_output",), "SpecOutput", "allow-when-empty")


@pytest.mark.parametrize(("toml", "message"), [
    ('presets = ["kv", "fp8"]', "unknown preset 'fp8' in 'presets' in [tool.kvlint] (known: kv, ec)"),
    ('presets = "kv"', "'presets' in [tool.kvlint] must be a list of strings, got string"),
    ('invariants = {name = "kv"}', "'invariants' in [tool.kvlint] must be a list of tables, got table"),
    ('empty-output = "sometimes"',
     "'empty-output' in [tool.kvlint] must be 'forbid' or 'allow-when-empty', got 'sometimes'"),
    ('presets = []\noptional-fields = ["x"]',
     "'optional-fields' in [tool.kvlint] override the 'kv' preset, which 'presets' leaves out"),
    ('[[tool.kvlint.invariants]]\nname = "kv"\noptional-feilds = ["x"]',
     "unknown key 'optional-feilds' in [tool.kvlint] invariant 'kv' (did you mean 'optional-fields'?)"),
    ('[[tool.kvlint.invariants]]\noptional-fields = ["x"]',
     "[tool.kvlint] invariant 0 needs a 'name' (a Python identifier, e.g. 'kv')"),
    ('[[tool.kvlint.invariants]]\nname = "draft"\noptional-fields = ["spec_output"]',
     "[tool.kvlint] invariant 'draft' is not a preset, so it needs 'payload-class'"),
    ('[[tool.kvlint.invariants]]\nname = "kv"\n[[tool.kvlint.invariants]]\nname = "kv"',
     "[tool.kvlint] invariant 'kv' is given twice"),
    ('presets = ["ec"]\n[[tool.kvlint.invariants]]\nname = "kv"\nempty-output = "allow-when-empty"',
     "[tool.kvlint] invariant 'kv' changes the 'kv' preset, which 'presets' leaves out"),
    ('[[tool.kvlint.invariants]]\nname = "ec"\nconnector-guards = "has_ec_transfer"',
     "'connector-guards' in [tool.kvlint] invariant 'ec' must be a list of strings, got string"),
    ('[[tool.kvlint.invariants]]\nname = "ec"\npayload-class = "not a name"',
     "invalid name 'not a name' in 'payload-class' in [tool.kvlint] invariant 'ec' "
     "(expected a Python identifier or dotted name)"),
])
def test_bad_invariant_configuration_is_one_line_naming_key_and_file(project: Path, toml: str, message: str) -> None:
    text = toml if toml.startswith("[[") else "[tool.kvlint]\n" + toml
    if text.startswith("[["):
        text = "[tool.kvlint]\n" + text
    assert _error(project, text) == f"pyproject.toml: {message}"
    completed = run_kvlint("check", ".", cwd=project)
    assert completed.returncode == 2 and completed.stderr.strip().endswith(message)


SHARED = '''
from dataclasses import dataclass


@dataclass
class KVConnectorOutput:
    finished_sending: set[str] | None = None
    finished_recving: set[str] | None = None


@dataclass
class ECConnectorOutput:
    finished_sending: set[str] | None = None
    finished_recving: set[str] | None = None


@dataclass
class ModelRunnerOutput:
    req_ids: list[str]
    kv_connector_output: KVConnectorOutput | None = None
    ec_connector_output: ECConnectorOutput | None = None


EMPTY_MODEL_RUNNER_OUTPUT = ModelRunnerOutput(req_ids=[])


def has_kv_transfer_group() -> bool: ...
def has_ec_transfer() -> bool: ...


def both_connectors() -> ModelRunnerOutput:
    if has_kv_transfer_group() and has_ec_transfer():
        return EMPTY_MODEL_RUNNER_OUTPUT
    if has_ec_transfer():
        return ModelRunnerOutput(req_ids=[], kv_connector_output=KVConnectorOutput())
    if has_kv_transfer_group():
        return ModelRunnerOutput(req_ids=[], kv_connector_output=KVConnectorOutput())
    return EMPTY_MODEL_RUNNER_OUTPUT
'''


def test_two_invariants_that_share_a_sentinel_and_an_output_class(project: Path) -> None:
    """One return of the shared sentinel on both paths is one finding per invariant, each naming its field;
    a construction that carries only the KV output is a KVC003 on the EC path alone."""
    (project / "outputs.py").write_text(SHARED, encoding="utf-8")
    findings = run([Path(".")], Config(root=project), jobs=1).findings
    assert [(f.line, f.code, f.invariant) for f in findings] == [
        (33, "KVC002", "ec"), (33, "KVC002", "kv"), (35, "KVC003", "ec"),
    ]
    by_invariant = {f.invariant: f.message for f in findings if f.code == "KVC002"}
    assert "drops the ECConnectorOutput" in by_invariant["ec"] and "`ec_connector_output` set" in by_invariant["ec"]
    assert "drops the KVConnectorOutput" in by_invariant["kv"]
    records = json.loads(run_kvlint("check", ".", "--format", "json", cwd=project).stdout)
    assert [record["invariant"] for record in records] == ["ec", "kv", "ec"]
    sarif = json.loads(run_kvlint("check", ".", "--format", "sarif", cwd=project).stdout)
    assert [r["properties"]["invariant"] for r in sarif["runs"][0]["results"]] == ["ec", "kv", "ec"]
    assert [f.code for f in run([Path(".")], Config(root=project, presets=("kv",)), jobs=1).findings] == ["KVC002"]


DRAFTS = '''
import copy
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class SpecOutput:
    accepted_ids: list[int] | None = None


@dataclass
class DraftOutput:
    tokens: list[int]
    spec_output: SpecOutput | None = None


EMPTY_DRAFT = DraftOutput(tokens=[])


def has_drafter() -> bool: ...


@contextmanager
def drafting(batch): ...


def merge(outputs: list[DraftOutput]) -> int:
    accepted = 0
    for out in outputs:
        spec = out.spec_output
        accepted += len(spec.accepted_ids or ())
    for out in outputs:
        spec = out.spec_output
        if spec is None:
            continue
        accepted += len(spec.accepted_ids or ())
    return accepted


def count(spec: SpecOutput) -> int:
    total = 0
    for token in spec.accepted_ids:
        total += token
    for token in spec.accepted_ids or ():
        total += token
    return total


def propose(batch) -> DraftOutput:
    if not has_drafter():
        return EMPTY_DRAFT
    with drafting(batch) as spec:
        tokens = list(batch)
    if not tokens:
        return EMPTY_DRAFT
    if len(tokens) > 8:
        return DraftOutput(tokens=tokens)
    result = copy.copy(EMPTY_DRAFT)
    result.spec_output = spec
    return result


def reset() -> None:
    EMPTY_DRAFT.spec_output = None


def step(state) -> DraftOutput | None:
    spec = state.spec_output
    if state.skip:
        return None
    return DraftOutput(tokens=state.tokens, spec_output=spec)
'''


def test_an_invariant_that_is_not_vllms(project: Path) -> None:
    """`presets = []` and one hand-written invariant: every rule works on names kvlint has never seen."""
    (project / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.kvlint]
        presets = []

        [[tool.kvlint.invariants]]
        name = "draft"
        optional-fields = ["spec_output"]
        payload-class = "SpecOutput"
        payload-optional-fields = ["accepted_ids"]
        output-classes = ["DraftOutput"]
        empty-sentinels = ["EMPTY_DRAFT"]
        connector-guards = ["has_drafter"]
        connector-contexts = ["drafting"]
    """), encoding="utf-8")
    (project / "drafts.py").write_text(DRAFTS, encoding="utf-8")
    findings = run([Path(".")], load_config([project]), jobs=1).findings
    lines = DRAFTS.splitlines()
    found = [(f.code, lines[f.line - 1].strip()) for f in findings]
    assert found == [
        ("KVC001", "accepted += len(spec.accepted_ids or ())"),
        ("KVC005", "for token in spec.accepted_ids:"),
        ("KVC002", "return EMPTY_DRAFT"),
        ("KVC003", "return DraftOutput(tokens=tokens)"),
        ("KVC004", "EMPTY_DRAFT.spec_output = None"),
        ("KVC006", "return None"),
    ]
    assert {f.invariant for f in findings} == {"draft"}
    assert "`spec_output=`" in findings[3].message and "SpecOutput" in findings[2].message
    assert run([Path(".")], Config(root=project), jobs=1).findings == []  # the vLLM presets see nothing here


def test_kvlint_config_shows_each_invariant_and_where_its_keys_came_from(project: Path) -> None:
    config = _load(project, """
        [tool.kvlint]
        optional-fields = ["kv_out"]

        [[tool.kvlint.invariants]]
        name = "ec"
        empty-output = "allow-when-empty"
    """)
    text = describe(config)
    assert "presets = [\"kv\", \"ec\"]  # default" in text
    assert "optional-fields = [\"kv_out\"]  # from pyproject.toml (the flat key 'optional-fields')" in text
    assert ("empty-output = \"allow-when-empty\"  # from pyproject.toml ([[tool.kvlint.invariants]] 'ec')"
            in text)
    assert "payload-class = \"ECConnectorOutput\"  # the 'ec' preset" in text
    completed = run_kvlint("rules", cwd=project)
    assert "invariants: kv (kv_out), ec (ec_connector_output) (from pyproject.toml;" in completed.stdout


MARKED = '''
from outputs import EMPTY_MODEL_RUNNER_OUTPUT


def bare():  # kvlint: connector-path
    return EMPTY_MODEL_RUNNER_OUTPUT


def encoder_only():  # kvlint: connector-path[ec]
    return EMPTY_MODEL_RUNNER_OUTPUT


def both():  # kvlint: connector-path[kv, ec]
    return EMPTY_MODEL_RUNNER_OUTPUT


def unknown():  # kvlint: connector-path[fp8]
    return EMPTY_MODEL_RUNNER_OUTPUT
'''


def test_the_connector_path_marker_names_its_invariants(project: Path) -> None:
    """A bare marker means the first invariant (`kv`, as it always did); `[ec]` and `[kv, ec]` name them;
    a name that is no active invariant marks nothing, and is reported."""
    (project / "outputs.py").write_text(SHARED, encoding="utf-8")
    (project / "marked.py").write_text(MARKED, encoding="utf-8")
    findings = [f for f in run([Path(".")], Config(root=project), jobs=1).findings if f.path == "marked.py"]
    assert [(f.function, f.code, f.invariant) for f in findings] == [
        ("bare", "KVC002", "kv"), ("encoder_only", "KVC002", "ec"), ("both", "KVC002", "ec"),
        ("both", "KVC002", "kv"), ("unknown", "KVC101", ""),
    ]

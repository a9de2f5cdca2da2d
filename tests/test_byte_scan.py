"""The byte scan (kvlint/byte_scan.py): whether a file mentions any configured name, searched for through
a tree of shared substrings. It must answer exactly what one search per name would, and a second invariant
whose names share substrings with the first must add few searches over the files that mention neither."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kvlint.byte_scan import _prefix_groups, _probes, distinct_needles, mentions_any, names_found
from kvlint.config import Config, config_from_mapping


class _CountingText(str):
    """A file's text that counts the substring searches made in it."""

    searches = 0

    def find(self, needle: str, *bounds: int) -> int:  # type: ignore[override]
        type(self).searches += 1
        return str.find(self, needle, *bounds)


def _searches(text: str, names: tuple[str, ...]) -> int:
    _CountingText.searches = 0
    mentions_any(_CountingText(text), names)
    return _CountingText.searches


UNRELATED = '''\
from vllm.distributed.parallel_state import get_pp_group


class CacheConnectorStats:
    """Counts of what the connector moved in one step."""

    def reset(self) -> None:
        self.connector_bytes = 0
'''


def test_the_ec_preset_adds_no_search_over_a_file_that_names_the_connector_but_no_invariant() -> None:
    both, kv = Config().names(), Config(presets=("kv",)).names()
    assert not mentions_any(UNRELATED, both)
    assert _searches(UNRELATED, both) == _searches(UNRELATED, kv) == 7  # 4 probes, then 3 under `onnector`
    assert _searches("x = 1\n", both) == _searches("x = 1\n", kv)  # most files: one search per probe


def test_needles_that_share_a_long_substring_are_searched_for_through_it() -> None:
    text_probes, byte_probes = _probes(Config().names())
    assert [probe for probe, _ in text_probes] == [
        "ModelRunnerOutput", "EMPTY_MODEL_RUNNER_OUTPUT", "_transfer", "onnector",
    ]
    connector = dict(text_probes)["onnector"]
    assert sorted(probe for probe, _ in connector) == ["ConnectorOutput", "_connector_output", "kvlint: connector-path"]
    assert sorted(probe for probe, _ in dict(connector)["_connector_output"]) == [
        "ec_connector_output", "kv_connector_output",
    ]
    assert byte_probes[0] == (b"ModelRunnerOutput", ())


@given(
    names=st.lists(st.sampled_from([
        "kv_connector_output", "ec_connector_output", "KVConnectorOutput", "ECConnectorOutput", "has_kv_transfer_group",
        "has_ec_transfer", "kvlint: connector-path", "draft_output", "DraftOutput", "spec_output", "get_output",
    ]), min_size=1, max_size=8),
    text=st.lists(st.sampled_from([
        "kv_connector", "connector_output", "ec_", "_output", "Output", "ConnectorOut", "has_", "transfer",
        "_transfer_group", "get_", "draft", "spec", "kvlint: ", "connector-path", " ", "\n", "x",
    ]), max_size=12).map("".join),
)
@settings(max_examples=400, deadline=None)
def test_the_probe_tree_answers_what_one_search_per_name_would(names: list[str], text: str) -> None:
    expected = any(name in text for name in names)
    assert mentions_any(text, names) is expected
    assert mentions_any(text.encode(), names) is expected


@given(
    names=st.lists(st.sampled_from([
        "test_kv_connector_basic", "test_kv_connector_stats", "test_ec_connector", "test_", "tes", "make_output",
        "make_outputs", "mock_output", "_mk_output", "create_model_runner_output", "step",
    ]), min_size=1, max_size=8, unique=True),
    text=st.lists(st.sampled_from([
        "test_", "kv_connector", "_basic", "_stats", "ec_", "connector", "make_", "output", "s", "mock", "_mk",
        "create_model_runner", "_output", "ste", "p", " ", "\n",
    ]), max_size=14).map("".join),
)
@settings(max_examples=400, deadline=None)
def test_the_names_found_are_those_one_search_per_name_finds_in_order(names: list[str], text: str) -> None:
    assert names_found(text.encode(), tuple(names)) == [name for name in names if name in text]


def test_names_that_share_their_first_bytes_are_looked_for_under_one_search() -> None:
    """A project's tests define dozens of `test_...` producers, looked for in each of its other files: a file
    without `test_` costs one search for all of them."""
    names = ("test_kv_connector_basic", "test_ec_connector_unable_to_allocate", "make_output", "mock_output")
    groups = dict(_prefix_groups(names))
    assert [name for name, _ in groups[b"test_"]] == ["test_kv_connector_basic", "test_ec_connector_unable_to_allocate"]
    assert b"make_output" in groups and b"mock_output" in groups  # alone under its prefix: searched for itself
    assert names_found(b"def run(self):\n    return make_output(self.step)\n", names) == ["make_output"]


def test_the_prepare_stage_asks_for_the_probes_the_parent_built_before_forking() -> None:
    """The runner hands each file to `prepare_source` with the configured names as its extra names: building
    the probes for that doubled list again cost each worker a millisecond per invariant."""
    from kvlint.engine import prepare_source

    config = Config()
    mentions_any(b"", config.names())  # the parent's scan, before the workers fork
    misses = _probes.cache_info().misses
    prepared = prepare_source(b"out = runner_output.ec_connector_output\n", "w.py", config, "w", False,
                              config.names())
    assert prepared.relevant
    assert _probes.cache_info().misses == misses


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab_c", min_size=1, max_size=8), max_size=12))
def test_needle_pruning_keeps_exactly_the_names_that_contain_no_other(names: list[str]) -> None:
    unique = list(dict.fromkeys(names))
    expected = tuple(name for name in unique if not any(other != name and other in name for other in unique))
    assert distinct_needles(names) == expected


def test_the_scan_names_are_worked_out_per_configuration_and_extra_names():
    """A file asks for the scan's names twice, with the runner's extra names and with none: each answer is
    its own (a one-entry memo thrashed between them), and two configurations never share one."""
    from kvlint.engine import _scan_names

    kv_only, both = config_from_mapping({"presets": ["kv"]}, Path("pyproject.toml")), Config()
    for _ in range(2):
        assert _scan_names(both, ()) == both.names()
        assert _scan_names(both, ("step_state",)) == (*both.names(), "step_state")
        assert _scan_names(kv_only, ()) == kv_only.names() != both.names()
    assert _scan_names(both, iter(["step_state", "step_state"])) == (*both.names(), "step_state")


def test_a_file_not_in_utf_8_is_scanned_again_as_text() -> None:
    """UTF-8 text mentions a name exactly where its bytes do, so `prepare_source` takes the byte scan's word for
    it; bytes in another encoding are scanned again once decoded: EBCDIC bytes that spell the field's name in
    ASCII do not mention it (nor parse), Latin-1 ones do, and a UTF-8 file with a BOM does."""
    from kvlint.engine import prepare_source

    body = b"def f(out):\n    return out.kv_connector_output.finished_sending\n"
    config = Config()
    assert mentions_any(b"# coding: cp500\n" + body, config.names())
    ebcdic = prepare_source(b"# coding: cp500\n" + body, "e.py", config, "e")
    assert not ebcdic.relevant and ebcdic.error is None
    latin = prepare_source(b"# coding: latin-1\n# caf\xe9\n" + body, "l.py", config, "l")
    assert latin.relevant and "kv_connector_output" in latin.text
    assert prepare_source(b"\xef\xbb\xbf" + body, "b.py", config, "b").relevant

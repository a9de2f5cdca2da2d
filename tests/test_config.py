"""Check how kvlint finds, reads and validates its configuration."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from kvlint.config import (
    CONNECTOR_PATH_MARKER,
    Config,
    ConfigError,
    DirectoryConfigs,
    config_from_mapping,
    config_for_directory,
    config_of_source,
    find_config_file,
    kv_overrides,
    load_config,
)
from kvlint.config_files import DirectorySources, source_of


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def config_error(path: Path, text: str) -> str:
    write(path, text)
    with pytest.raises(ConfigError) as info:
        load_config([path.parent])
    message = str(info.value)
    assert "\n" not in message
    return message


# --- finding the file -------------------------------------------------------


def test_no_config_gives_defaults(project: Path) -> None:
    # the defaults, anchored at the project root (.git here) so that `test-files` globs mean its tests
    assert load_config([project]) == Config(root=project)
    assert load_config([]) == Config(root=project)
    assert load_config([project / "pkg" / "a.py"]) == Config(root=project)


def test_pyproject_found_from_a_subdirectory_and_a_file(project: Path) -> None:
    pyproject = write(project / "pyproject.toml", "[tool.kvlint]\nselect = ['KVC001']\n")
    source = write(project / "pkg" / "sub" / "mod.py", "")
    assert find_config_file(source.parent) == pyproject
    assert find_config_file(source) == pyproject
    config = load_config([source])
    assert config.select == ("KVC001",)
    assert config.source == pyproject
    assert config.root == project


def test_pyproject_without_section_falls_back_to_setup_cfg(project: Path) -> None:
    write(project / "pyproject.toml", "[tool.black]\nline-length = 100\n")
    setup_cfg = write(project / "setup.cfg", "[kvlint]\nselect = KVC002\n")
    assert find_config_file(project) == setup_cfg
    assert load_config([project]).select == ("KVC002",)


def test_pyproject_wins_over_setup_cfg(project: Path) -> None:
    pyproject = write(project / "pyproject.toml", "[tool.kvlint]\n")
    write(project / "setup.cfg", "[kvlint]\nselect = KVC002\n")
    assert find_config_file(project) == pyproject


def test_search_continues_upward_past_files_without_a_section(project: Path) -> None:
    pyproject = write(project / "pyproject.toml", "[tool.kvlint]\nignore = ['KVC004']\n")
    write(project / "pkg" / "pyproject.toml", "[project]\nname = 'pkg'  # kvlint is not here\n")
    write(project / "pkg" / "setup.cfg", "[flake8]\nselect = E\n")
    assert find_config_file(project / "pkg") == pyproject


def test_search_stops_at_a_git_directory(project: Path) -> None:
    write(project / "pyproject.toml", "[tool.kvlint]\n")
    (project / "inner" / ".git").mkdir(parents=True)
    assert find_config_file(project / "inner") is None
    write(project / "inner" / "setup.cfg", "[kvlint]\n")
    assert find_config_file(project / "inner") == project / "inner" / "setup.cfg"


def test_search_from_a_missing_path_starts_at_its_directory(project: Path) -> None:
    pyproject = write(project / "pyproject.toml", "[tool.kvlint]\n")
    assert find_config_file(project / "nope" / "x.py") == pyproject


def test_a_directory_named_pyproject_toml_is_not_a_config(project: Path) -> None:
    (project / "pyproject.toml").mkdir()
    assert find_config_file(project) is None


def test_search_uses_the_first_path(project: Path) -> None:
    write(project / "a" / "pyproject.toml", "[tool.kvlint]\nselect = ['KVC001']\n")
    write(project / "b" / "pyproject.toml", "[tool.kvlint]\nselect = ['KVC002']\n")
    assert load_config([project / "b", project / "a"]).select == ("KVC002",)


def test_search_uses_the_cwd_without_paths(project: Path) -> None:
    write(project / "setup.cfg", "[kvlint]\nselect = KVC003\n")
    assert load_config([]).select == ("KVC003",)


# --- explicit --config --------------------------------------------------------


def test_explicit_config_file(project: Path) -> None:
    other = write(project / "conf" / "lint.ini", "[kvlint]\nselect = KVC005\n")
    write(project / "pyproject.toml", "[tool.kvlint]\nselect = ['KVC001']\n")
    config = load_config([project], other)
    assert config.select == ("KVC005",)
    assert config.root == project / "conf"


def test_explicit_toml_with_another_name(project: Path) -> None:
    path = write(project / "kvlint.toml", "[tool.kvlint]\nselect = ['KVC001']\n")
    assert load_config([], path).select == ("KVC001",)


def test_explicit_config_file_missing(project: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config([], Path("missing.toml"))
    assert str(info.value) == "missing.toml: cannot read: No such file or directory"


def test_explicit_config_file_without_section(project: Path) -> None:
    write(project / "pyproject.toml", "[tool.ruff]\n")
    write(project / "setup.cfg", "[flake8]\n")
    with pytest.raises(ConfigError, match=r"^pyproject\.toml: no \[tool\.kvlint\] table$"):
        load_config([], Path("pyproject.toml"))
    with pytest.raises(ConfigError, match=r"^setup\.cfg: no \[kvlint\] section$"):
        load_config([], Path("setup.cfg"))


def test_explicit_config_file_of_unknown_type(project: Path) -> None:
    write(project / "kvlint.yaml", "select: [KVC001]\n")
    with pytest.raises(ConfigError, match=r"^kvlint\.yaml: unsupported config file type"):
        load_config([], Path("kvlint.yaml"))


def test_explicit_config_that_is_a_directory(project: Path) -> None:
    (project / "setup.cfg").mkdir()
    with pytest.raises(ConfigError, match=r"^setup\.cfg: cannot read: not a regular file$"):
        load_config([], Path("setup.cfg"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_explicit_config_that_is_a_fifo_does_not_block(project: Path) -> None:
    os.mkfifo(project / "pyproject.toml")
    outcome: list[object] = []

    def run() -> None:
        try:
            load_config([], Path("pyproject.toml"))
        except ConfigError as exc:
            outcome.append(str(exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=5)
    assert not thread.is_alive(), "reading a FIFO config blocked"
    assert outcome == ["pyproject.toml: cannot read: not a regular file"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_search_skips_a_fifo_named_like_a_config(project: Path) -> None:
    os.mkfifo(project / "setup.cfg")
    assert find_config_file(project) is None


def test_config_outside_the_cwd_is_named_by_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(tmp_path / "proj" / "pyproject.toml", "[tool.kvlint]\nselect = 'KVC001'\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(ConfigError) as info:
        load_config([], config)
    assert str(info.value).startswith(f"{config.as_posix()}: ")


# --- parse errors ---------------------------------------------------------------


def test_toml_syntax_error(project: Path) -> None:
    message = config_error(project / "pyproject.toml", "[tool.kvlint]\nselect = [KVC001]\n")
    assert message.startswith("pyproject.toml: invalid TOML: ")
    assert "line 2" in message


def test_cfg_syntax_error_is_one_line(project: Path) -> None:
    message = config_error(project / "setup.cfg", "kvlint\n[kvlint]\nselect = KVC001\n")
    assert message.startswith("setup.cfg: invalid INI syntax: ")


def test_cfg_duplicate_key(project: Path) -> None:
    message = config_error(project / "setup.cfg", "[kvlint]\nselect = KVC001\nselect = KVC002\n")
    assert message.startswith("setup.cfg: invalid INI syntax: ")
    assert "select" in message


def test_invalid_utf8(project: Path) -> None:
    (project / "pyproject.toml").write_bytes(b"[tool.kvlint]\n# \xff\n")
    with pytest.raises(ConfigError, match=r"^pyproject\.toml: cannot decode as UTF-8: "):
        load_config([project])


def test_tool_kvlint_must_be_a_table(project: Path) -> None:
    message = config_error(project / "pyproject.toml", "[tool]\nkvlint = 1\n")
    assert message == "pyproject.toml: [tool.kvlint] must be a table, got int"


# --- validation -----------------------------------------------------------------


def test_unknown_key_suggests_the_kebab_case_spelling(project: Path) -> None:
    message = config_error(
        project / "pyproject.toml", "[tool.kvlint]\noptional_fields = ['x']\n"
    )
    assert message == (
        "pyproject.toml: unknown key 'optional_fields' in [tool.kvlint] "
        "(did you mean 'optional-fields'?)"
    )


def test_unknown_key_without_a_close_match_lists_the_keys(project: Path) -> None:
    message = config_error(project / "setup.cfg", "[kvlint]\nzzz = 1\n")
    assert message.startswith("setup.cfg: unknown key 'zzz' in [kvlint] (known keys: select, ")


def test_cfg_keys_are_case_sensitive(project: Path) -> None:
    message = config_error(project / "setup.cfg", "[kvlint]\nSelect = KVC001\n")
    assert message == "setup.cfg: unknown key 'Select' in [kvlint] (did you mean 'select'?)"


def test_cfg_default_section_does_not_leak(project: Path) -> None:
    write(project / "setup.cfg", "[DEFAULT]\nfoo = 1\n[kvlint]\nselect = KVC001\n")
    assert load_config([project]).select == ("KVC001",)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "select = 'KVC001'",
            "pyproject.toml: 'select' in [tool.kvlint] must be a list of strings, got string",
        ),
        (
            "exclude = ['a', 3]",
            "pyproject.toml: 'exclude' in [tool.kvlint] must be a list of strings, "
            "but item 1 is int 3",
        ),
        (
            "optional-fields = true",
            "pyproject.toml: 'optional-fields' in [tool.kvlint] must be a list of strings, "
            "got boolean",
        ),
        (
            "payload-class = ['KVConnectorOutput']",
            "pyproject.toml: 'payload-class' in [tool.kvlint] must be a string, got list",
        ),
        (
            "per-file-ignores = ['tests/*']",
            "pyproject.toml: 'per-file-ignores' in [tool.kvlint] must be a table of "
            "glob = [codes], got list",
        ),
        (
            "per-file-ignores = {'tests/*' = 'KVC001'}",
            "pyproject.toml: 'per-file-ignores' in [tool.kvlint]: the value for 'tests/*' "
            "must be a list of codes, got string",
        ),
    ],
)
def test_wrong_types(project: Path, body: str, expected: str) -> None:
    assert config_error(project / "pyproject.toml", f"[tool.kvlint]\n{body}\n") == expected


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("select", "E501"),
        ("select", "kvc001"),
        ("ignore", "KVC0001"),
        ("ignore", "KVC01a"),
        ("select", ""),
        ("per-file-ignores", None),
    ],
)
def test_invalid_codes(project: Path, key: str, value: str | None) -> None:
    if value is None:
        body, key, value = "[tool.kvlint.per-file-ignores]\n'tests/*' = ['F401']", key, "F401"
    else:
        body = f"[tool.kvlint]\n{key} = [{value!r}]"
    message = config_error(project / "pyproject.toml", body + "\n")
    assert message == (
        f"pyproject.toml: invalid code {value!r} in {key!r} in [tool.kvlint] "
        "(expected 'KVC' and up to three digits, e.g. 'KVC001' or 'KVC0')"
    )


def test_valid_code_prefixes(project: Path) -> None:
    body = "[tool.kvlint]\nselect = ['KVC', 'KVC0', 'KVC00', 'KVC001']\n"
    write(project / "pyproject.toml", body)
    assert load_config([project]).select == ("KVC", "KVC0", "KVC00", "KVC001")


CODES = "KVC001, KVC002, KVC003, KVC004, KVC005, KVC006, KVC100, KVC101, KVC900, KVC901, KVC902"


@pytest.mark.parametrize(
    ("file", "body", "key", "value"),
    [
        ("pyproject.toml", "[tool.kvlint]\nselect = ['KVC010']", "select", "KVC010"),  # a typo of KVC001
        ("pyproject.toml", "[tool.kvlint]\nselect = ['KVC0', 'KVC2']", "select", "KVC2"),
        ("pyproject.toml", "[tool.kvlint]\nignore = ['KVC01']", "ignore", "KVC01"),
        ("pyproject.toml", "[tool.kvlint]\ntest-ignore = ['KVC001', 'KVC007']", "test-ignore", "KVC007"),
        ("pyproject.toml", "[tool.kvlint.per-file-ignores]\n'tests/*' = ['KVC003', 'KVC903']", "per-file-ignores",
         "KVC903"),
        ("setup.cfg", "[kvlint]\nselect = KVC001, KVC010", "select", "KVC010"),
        ("setup.cfg", "[kvlint]\nignore = KVC2", "ignore", "KVC2"),
        ("setup.cfg", "[kvlint]\ntest-ignore = KVC11", "test-ignore", "KVC11"),
        ("setup.cfg", "[kvlint]\nper-file-ignores =\n    tests/*: KVC001, KVC099", "per-file-ignores", "KVC099"),
    ],
)
def test_a_code_no_rule_has_is_an_error(project: Path, file: str, body: str, key: str, value: str) -> None:
    """ruff's "unknown rule selector": a well-formed code or prefix that selects no rule would silently select (or
    ignore) nothing; the run stops naming the file, the key and the value."""
    message = config_error(project / file, body + "\n")
    section = "[tool.kvlint]" if file == "pyproject.toml" else "[kvlint]"
    what = "has this code" if len(value) == 6 else "has a code that starts with it"
    assert message == (
        f"{file}: unknown code {value!r} in {key!r} in {section}: no kvlint rule {what} (the codes: {CODES})"
    )


@pytest.mark.parametrize("key", ["select", "ignore", "test-ignore", "per-file-ignores"])
def test_every_prefix_of_a_rule_s_code_stays_valid(project: Path, key: str) -> None:
    prefixes = ["KVC", "KVC0", "KVC00", "KVC006", "KVC1", "KVC10", "KVC101", "KVC9", "KVC90", "KVC902"]
    if key == "per-file-ignores":
        write(project / "pyproject.toml", f"[tool.kvlint.per-file-ignores]\n'tests/*' = {prefixes!r}\n")
        assert load_config([project]).per_file_ignores == (("tests/*", tuple(prefixes)),)
    else:
        write(project / "pyproject.toml", f"[tool.kvlint]\n{key} = {[*prefixes, 'ALL']!r}\n")
        assert getattr(load_config([project]), key.replace("-", "_")) == (*prefixes, "KVC")


def test_a_retired_code_stays_valid(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A code is never handed out again once its rule is taken out, and a configuration naming it still loads."""
    import kvlint.rules

    write(project / "pyproject.toml", "[tool.kvlint]\nignore = ['KVC007', 'KVC2']\n")
    assert "unknown code 'KVC007'" in str(pytest.raises(ConfigError, load_config, [project]).value)
    monkeypatch.setattr(kvlint.rules, "RETIRED_CODES", ("KVC007", "KVC201"))
    assert load_config([project]).ignore == ("KVC007", "KVC2")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("optional-fields", "1abc", "a Python identifier"),
        ("optional-fields", "self.kv_connector_output", "a Python identifier"),
        ("payload-optional-fields", "finished-sending", "a Python identifier"),
        ("connector-guards", "a..b", "a Python identifier or dotted name"),
        ("connector-guards", "", "a Python identifier or dotted name"),
        ("empty-sentinels", "class", "a Python identifier or dotted name"),
        ("output-classes", " ModelRunnerOutput", "a Python identifier or dotted name"),
    ],
)
def test_invalid_names(project: Path, key: str, value: str, expected: str) -> None:
    message = config_error(project / "pyproject.toml", f"[tool.kvlint]\n{key} = [{value!r}]\n")
    assert message == (
        f"pyproject.toml: invalid name {value!r} in {key!r} in [tool.kvlint] (expected {expected})"
    )


def test_invalid_payload_class(project: Path) -> None:
    message = config_error(project / "pyproject.toml", "[tool.kvlint]\npayload-class = ''\n")
    assert message == (
        "pyproject.toml: invalid name '' in 'payload-class' in [tool.kvlint] "
        "(expected a Python identifier or dotted name)"
    )


def test_every_key_from_toml(project: Path) -> None:
    write(
        project / "pyproject.toml",
        """
[tool.kvlint]
select = ["KVC0"]
ignore = ["KVC004"]
exclude = ["third_party", "vllm/legacy/*.py"]
optional-fields = ["kv_connector_output", "kv_out"]
payload-class = "plugin.outputs.KVOut"
payload-optional-fields = ["done_sending"]
output-classes = ["ModelRunnerOutput", "plugin.outputs.PluginOutput"]
empty-sentinels = ["EMPTY_OUTPUT"]
connector-guards = ["plugin.has_connector"]
connector-contexts = ["connector_scope"]
optional-contexts = ["maybe_scope"]
connector-functions = ["Worker.execute_model"]

[tool.kvlint.per-file-ignores]
"tests/*" = ["KVC001", "KVC00"]
"__init__.py" = []
""",
    )
    config = load_config([project])
    assert config == Config(
        select=("KVC0",),
        ignore=("KVC004",),
        exclude=("third_party", "vllm/legacy/*.py"),
        per_file_ignores=(("tests/*", ("KVC001", "KVC00")), ("__init__.py", ())),
        kv_overrides=kv_overrides(
            optional_fields=("kv_connector_output", "kv_out"),
            payload_class="plugin.outputs.KVOut",
            payload_optional_fields=("done_sending",),
            output_classes=("ModelRunnerOutput", "plugin.outputs.PluginOutput"),
            empty_sentinels=("EMPTY_OUTPUT",),
            connector_guards=("plugin.has_connector",),
            connector_contexts=("connector_scope",),
            optional_contexts=("maybe_scope",),
            connector_functions=("Worker.execute_model",),
        ),
        source=project / "pyproject.toml",
        root=project,
    )


def test_every_list_key_from_setup_cfg(project: Path) -> None:
    write(
        project / "setup.cfg",
        """
[kvlint]
select = KVC001, KVC002
ignore =
    KVC004
    KVC005,KVC9
exclude = third_party,build-*
optional-fields = kv_connector_output kv_out
payload-class =   plugin.KVOut
per-file-ignores =
    tests/*: KVC001,KVC002
    __init__.py, conftest.py : KVC003
    tests/*:KVC005
""",
    )
    config = load_config([project])
    assert config.select == ("KVC001", "KVC002")
    assert config.ignore == ("KVC004", "KVC005", "KVC9")
    assert config.exclude == ("third_party", "build-*")
    assert config.invariants.by_name["kv"].optional_fields == ("kv_connector_output", "kv_out")
    assert config.invariants.by_name["kv"].payload_class == "plugin.KVOut"
    assert config.optional_fields == ("kv_connector_output", "kv_out", "ec_connector_output")
    assert config.per_file_ignores == (
        ("tests/*", ("KVC001", "KVC002", "KVC005")),
        ("__init__.py", ("KVC003",)),
        ("conftest.py", ("KVC003",)),
    )


@pytest.mark.parametrize("line", ["tests/*", "tests/*:", ": KVC001"])
def test_setup_cfg_per_file_ignores_errors(project: Path, line: str) -> None:
    message = config_error(project / "setup.cfg", f"[kvlint]\nper-file-ignores =\n    {line}\n")
    assert message == (
        "setup.cfg: 'per-file-ignores' in [kvlint]: expected 'glob: CODE[, CODE...]', "
        f"got {line!r}"
    )


def test_setup_cfg_invalid_code(project: Path) -> None:
    message = config_error(project / "setup.cfg", "[kvlint]\nignore = KVC001 # why\n")
    assert message.startswith("setup.cfg: invalid code '#' in 'ignore' in [kvlint]")


def test_config_from_mapping_directly() -> None:
    source = Path("/proj/pyproject.toml")
    config = config_from_mapping({"select": ["KVC001"]}, source)
    assert config.select == ("KVC001",)
    assert config.root == Path("/proj")
    with pytest.raises(ConfigError, match=r"must be a list of strings, got string"):
        config_from_mapping({"select": "KVC001"}, source)


# --- behaviour ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("select", "ignore", "code", "expected"),
    [
        ((), (), "KVC001", True),
        ((), (), "KVC900", True),
        (("KVC001",), (), "KVC001", True),
        (("KVC001",), (), "KVC002", False),
        (("KVC0",), (), "KVC005", True),
        (("KVC0",), ("KVC005",), "KVC005", False),
        (("KVC0",), ("KVC005",), "KVC004", True),
        (("KVC005",), ("KVC0",), "KVC005", True),
        (("KVC005",), ("KVC0",), "KVC004", False),
        (("KVC001",), ("KVC001",), "KVC001", False),
        (("KVC",), ("KVC",), "KVC001", False),
        ((), ("KVC00",), "KVC001", False),
        ((), ("KVC00",), "KVC010", True),
        # KVC9xx stays on unless an ignore prefix matches it.
        (("KVC001",), (), "KVC900", True),
        (("KVC001",), (), "KVC902", True),
        (("KVC001",), ("KVC9",), "KVC901", False),
        (("KVC001",), ("KVC901",), "KVC901", False),
        (("KVC001",), ("KVC901",), "KVC900", True),
        ((), ("KVC",), "KVC900", False),
        (("KVC9",), ("KVC",), "KVC900", True),
        (("KVC0",), ("KVC0",), "KVC900", True),
    ],
)
def test_is_enabled(
    select: tuple[str, ...], ignore: tuple[str, ...], code: str, expected: bool
) -> None:
    assert Config(select=select, ignore=ignore).is_enabled(code) is expected


def test_is_excluded(tmp_path: Path) -> None:
    config = Config(
        exclude=("third_party", "*_pb2.py", "vllm/legacy/*", "./gen/", str(tmp_path / "abs")),
        root=tmp_path,
    )
    assert config.is_excluded(tmp_path / "third_party")
    assert config.is_excluded(tmp_path / "third_party" / "x" / "y.py")
    assert config.is_excluded(tmp_path / "pkg" / "third_party" / "y.py")
    assert config.is_excluded(tmp_path / "pkg" / "msg_pb2.py")
    assert config.is_excluded(tmp_path / "vllm" / "legacy" / "a.py")
    assert config.is_excluded(tmp_path / "vllm" / "legacy" / "sub" / "a.py")
    assert not config.is_excluded(tmp_path / "other" / "vllm" / "legacy" / "a.py")
    assert config.is_excluded(tmp_path / "gen" / "a.py")
    assert not config.is_excluded(tmp_path / "pkg" / "gen" / "a.py")
    assert config.is_excluded(tmp_path / "abs" / "a.py")
    assert not config.is_excluded(tmp_path / "vllm" / "a.py")
    assert not config.is_excluded(tmp_path)


def test_is_excluded_outside_the_root_matches_only_the_name(tmp_path: Path) -> None:
    config = Config(exclude=("third_party", "vllm/*"), root=tmp_path / "proj")
    assert config.is_excluded(tmp_path / "third_party")
    assert config.is_excluded(tmp_path / "x" / "third_party")
    assert not config.is_excluded(tmp_path / "third_party" / "a.py")
    assert not config.is_excluded(tmp_path / "vllm" / "a.py")


def test_is_excluded_relative_to_cwd_without_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = Config(exclude=("vllm/legacy",))
    assert config.is_excluded(Path("vllm/legacy/a.py"))
    assert config.is_excluded(tmp_path / "vllm" / "legacy")
    assert not config.is_excluded(Path("vllm/a.py"))


def test_ignored_for(tmp_path: Path) -> None:
    config = Config(
        per_file_ignores=(
            ("tests/*", ("KVC001",)),
            ("__init__.py", ("KVC002", "KVC0")),
            ("*.pyi", ("KVC9",)),
        ),
        root=tmp_path,
    )
    assert config.ignored_for(tmp_path / "tests" / "a.py") == {"KVC001"}
    assert config.ignored_for(tmp_path / "tests" / "__init__.py") == {"KVC001", "KVC002", "KVC0"}
    assert config.ignored_for(tmp_path / "pkg" / "x.pyi") == {"KVC9"}
    assert config.ignored_for(tmp_path / "pkg" / "x.py") == frozenset()


def test_fingerprint_tracks_analysis_settings_only() -> None:
    base = Config()
    assert base.fingerprint() == Config().fingerprint()
    assert len(base.fingerprint()) == 64
    assert Config(kv_overrides=kv_overrides(optional_fields=("kv",))).fingerprint() != base.fingerprint()
    assert Config(kv_overrides=kv_overrides(connector_functions=("f",))).fingerprint() != base.fingerprint()
    assert Config(kv_overrides=kv_overrides(payload_class="X")).fingerprint() != base.fingerprint()
    assert Config(kv_overrides=kv_overrides(empty_output="allow-when-empty")).fingerprint() != base.fingerprint()
    assert Config(presets=("kv",)).fingerprint() != base.fingerprint()
    assert Config(select=("KVC001",), exclude=("x",)).fingerprint() == base.fingerprint()
    assert Config(root=Path("/elsewhere")).fingerprint() == base.fingerprint()


def test_names() -> None:
    # the attaching helpers are not among them: a file that names only a helper has nothing to check
    assert Config(presets=("kv",)).names() == (
        "kv_connector_output",
        "KVConnectorOutput",
        "ModelRunnerOutput",
        "EMPTY_MODEL_RUNNER_OUTPUT",
        "has_kv_transfer_group",
        "_get_kv_connector_output",
        "maybe_get_kv_connector_output",
        CONNECTOR_PATH_MARKER,
    )
    assert Config().names() == (  # the `ec` preset adds its own names; the shared ones appear once
        "kv_connector_output",
        "KVConnectorOutput",
        "ModelRunnerOutput",
        "EMPTY_MODEL_RUNNER_OUTPUT",
        "has_kv_transfer_group",
        "_get_kv_connector_output",
        "maybe_get_kv_connector_output",
        "ec_connector_output",
        "ECConnectorOutput",
        "has_ec_transfer",
        "_get_ec_connector_output",
        "maybe_get_ec_connector_output",
        CONNECTOR_PATH_MARKER,
    )
    config = Config(kv_overrides=kv_overrides(
        payload_class="plugin.outputs.KVOut",
        output_classes=("ModelRunnerOutput", "plugin.ModelRunnerOutput"),
        connector_functions=("Worker.execute_model",),
    ))
    names = config.names()
    assert "KVOut" in names and "execute_model" in names
    assert names.count("ModelRunnerOutput") == 1
    assert CONNECTOR_PATH_MARKER == "kvlint: connector-path"


def test_directory_configs_load_each_directory_once_and_report_a_bad_file_once(project: Path) -> None:
    write(project / "good" / "pyproject.toml", "[tool.kvlint]\nselect = ['KVC001']\n")
    write(project / "bad" / "pyproject.toml", "[tool.kvlint]\nselekt = ['KVC001']\n")
    errors: list[ConfigError] = []
    configs = DirectoryConfigs(on_error=errors.append)
    first = configs.for_file(str(project / "good" / "a.py"))
    assert isinstance(first, Config) and first.select == ("KVC001",)
    (project / "good" / "pyproject.toml").write_text("[tool.kvlint]\nselect = ['KVC002']\n")
    assert configs.for_file(str(project / "good" / "b.py")) is first  # loaded once for the object's life
    bad = [configs.for_file(str(project / "bad" / name)) for name in ("a.py", "b.py")]
    assert all(isinstance(result, ConfigError) and "selekt" in str(result) for result in bad)
    assert errors == [bad[0]]
    assert configs.for_file(str(project / "c.py")) == Config(root=project)


def _tree_of_directories(root: Path) -> list[Path]:
    """A project shaped like a package tree: a configured sub-package, a vendored one with its own
    pyproject.toml but no kvlint section (which does not stop the search), and an unconfigured one."""
    write(root / "pyproject.toml", "[tool.kvlint]\nselect = ['KVC001']\n")
    write(root / "pkg" / "sub" / "pyproject.toml", "[tool.kvlint]\nselect = ['KVC002']\n")
    write(root / "pkg" / "vendored" / "pyproject.toml", "[project]\nname = 'vendored'\n")
    directories = []
    for branch in ("sub", "vendored", "plain"):
        for depth in range(1, 4):
            directory = root.joinpath("pkg", branch, *(f"level{n}" for n in range(depth)))
            directory.mkdir(parents=True, exist_ok=True)
            directories.append(directory)
    return [root, root / "pkg", *directories]


@pytest.mark.parametrize("order", ["deepest first", "shallowest first"])
def test_directory_configs_answer_as_a_search_from_each_directory_would(project: Path, order: str) -> None:
    directories = _tree_of_directories(project)
    if order == "deepest first":
        directories = sorted(directories, key=lambda d: -len(d.parts))
    configs = DirectoryConfigs()
    for directory in directories:
        shared = configs.for_file(str(directory / "module.py"))
        alone = load_config([directory])
        assert shared == alone, directory
        assert find_config_file(directory, {}) == find_config_file(directory)
    assert configs.for_file(str(project / "pkg" / "sub" / "level0" / "m.py")).select == ("KVC002",)
    assert configs.for_file(str(project / "pkg" / "vendored" / "level0" / "m.py")).select == ("KVC001",)


def test_sibling_directories_share_the_search_above_them(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mypy and flake8 ask for the configuration of every module's directory: the walk up from a sibling
    ends where an earlier one passed, so the cost grows with the directories, not their depth times them."""
    from kvlint import config_files

    deep = project.joinpath(*(f"level{n}" for n in range(12)))
    siblings = [deep / f"sibling{n}" for n in range(40)]
    for directory in siblings:
        directory.mkdir(parents=True)
    looked_at: list[str] = []
    real = config_files._is_regular_file
    monkeypatch.setattr(config_files, "_is_regular_file", lambda path: looked_at.append(str(path)) or real(path))
    configs = DirectoryConfigs()
    assert all(configs.for_file(str(directory / "m.py")) == Config(root=project) for directory in siblings)
    per_directory = 2 * 2  # pyproject.toml and setup.cfg, by the configuration search and by the root search
    assert len(looked_at) <= per_directory * (len(siblings) + 13 + 1)  # each sibling, the levels, the project


def _directories_with_every_stop(project: Path) -> list[Path]:
    """A configured project whose directories hold each name a search stops at, or another owner, and directories
    without one below them."""
    write(project / "pyproject.toml", "[tool.kvlint]\nselect = ['KVC001']\n")
    plain = project / "pkg" / "plain" / "deeper"
    plain.mkdir(parents=True)
    (project / "pkg" / "repo" / "inner").mkdir(parents=True)
    (project / "pkg" / "repo" / ".git").mkdir()
    write(project / "pkg" / "cfg" / "setup.cfg", "[kvlint]\nselect = KVC002\n")
    (project / "pkg" / "cfg" / "inner").mkdir()
    write(project / "pkg" / "vendored" / "pyproject.toml", "[project]\nname = 'v'\n")
    (project / "pkg" / "vendored" / "inner").mkdir()
    (project / "pkg" / "link").mkdir()
    (project / "pkg" / "link" / "setup.cfg").symlink_to(project / "nowhere")
    directories = [project, project / "pkg", plain.parent, plain, *(
        project / "pkg" / name / inner for name in ("repo", "cfg", "vendored", "link") for inner in ("", "inner"))]
    if os.geteuid() == 0:  # another user's directory needs root to make
        (project / "pkg" / "theirs" / "inner").mkdir(parents=True)
        os.chown(project / "pkg" / "theirs", 65534, 65534)
        directories += [project / "pkg" / "theirs", project / "pkg" / "theirs" / "inner"]
    return directories


@pytest.mark.parametrize("order", ["deepest first", "shallowest first"])
def test_a_directory_takes_its_parents_configuration_only_where_a_search_from_it_would(
    project: Path, order: str
) -> None:
    """`DirectoryConfigs` gives a directory its parent's configuration when it holds none of the names a
    search stops at and has its parent's owner: a `.git`, a `setup.cfg` or `pyproject.toml` of any content
    (one without a kvlint section is passed, but could move the project root), a broken symlink of one of
    those names, or another owner each make it search for itself, and must give what that search gives."""
    directories = _directories_with_every_stop(project)
    if order == "deepest first":
        directories.sort(key=lambda directory: -len(directory.parts))
    configs = DirectoryConfigs()
    found = {directory: configs.for_file(str(directory / "m.py")) for directory in directories}
    for directory, config in found.items():
        assert config == config_for_directory(str(directory)), directory
    plain = project / "pkg" / "plain" / "deeper"
    assert found[plain] is found[project]  # inherited, not searched again
    assert found[project / "pkg" / "cfg" / "inner"].select == ("KVC002",)
    assert found[project / "pkg" / "vendored" / "inner"].select == ("KVC001",)  # searched, and passed
    assert found[project / "pkg" / "repo" / "inner"].select == ()  # the inner repository's own defaults
    assert found[project / "pkg" / "repo"] is found[project / "pkg" / "repo" / "inner"]  # one Config a source


@pytest.mark.parametrize("order", ["deepest first", "shallowest first"])
def test_directory_sources_answer_as_each_directorys_own_search(project: Path, order: str) -> None:
    """`DirectorySources` (what the mypy plugin's answer for mypy's cache is made of, without a `Config`) keeps
    for each directory what a search from it finds, `config_files.source_of`, and that stands for the very
    configuration `config_for_directory` loads there."""
    directories = _directories_with_every_stop(project)
    if order == "deepest first":
        directories.sort(key=lambda directory: -len(directory.parts))
    sources = DirectorySources()
    found = {directory: sources.of_directory(str(directory)) for directory in directories}
    for directory, source in found.items():
        assert source == source_of(str(directory)), directory
        assert config_of_source(source) == config_for_directory(str(directory)), directory
    assert found[project / "pkg" / "plain" / "deeper"] == ("file", str(project / "pyproject.toml"))
    assert found[project / "pkg" / "cfg" / "inner"] == ("file", str(project / "pkg" / "cfg" / "setup.cfg"))
    assert found[project / "pkg" / "repo" / "inner"] == ("root", str(project / "pkg" / "repo"))
    (project / "pyproject.toml").unlink()
    assert source_of(str(project / "pkg" / "plain")) == ("root", str(project))  # the project's .git (fixture)

"""Read and validate `[tool.kvlint]` / `[kvlint]` so that every face analyses with the same
settings and a bad setting stops the run with one clear line."""

from __future__ import annotations

import configparser
import difflib
import fnmatch
import hashlib
import json
import keyword
import os
import re
import stat
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.paths import display_path

CONNECTOR_PATH_MARKER = "kvlint: connector-path"

_CODE_RE = re.compile(r"^KVC[0-9]{0,3}$", re.ASCII)
_CFG_SPLIT_RE = re.compile(r"[,\s]+")
_FILE_LEVEL_PREFIX = "KVC9"
ALL_CODES = "KVC"  # what `ALL` (ruff's word for every code) stands for in select and ignore
_FINGERPRINT_VERSION = "kvlint-config-1"

_CODE_KEYS = ("select", "ignore", "test-ignore")
_GLOB_KEYS = ("exclude", "test-files")
_ATTRIBUTE_KEYS = ("optional-fields", "payload-optional-fields")
_DOTTED_KEYS = (
    "output-classes",
    "empty-sentinels",
    "connector-guards",
    "connector-contexts",
    "optional-contexts",
    "connector-functions",
)
_STRING_KEYS = ("payload-class",)
_MAPPING_KEYS = ("per-file-ignores",)
_LIST_KEYS = _CODE_KEYS + _GLOB_KEYS + _ATTRIBUTE_KEYS + _DOTTED_KEYS
KNOWN_KEYS = _LIST_KEYS + _STRING_KEYS + _MAPPING_KEYS

_ANALYSIS_FIELDS = (
    "optional_fields",
    "payload_class",
    "payload_optional_fields",
    "output_classes",
    "empty_sentinels",
    "connector_guards",
    "connector_contexts",
    "optional_contexts",
    "connector_functions",
)


# The test-code policy (issue 16): in files matching `test-files`, findings whose code matches
# `test-ignore` are not reported, as if a built-in per-file-ignores entry said so. A crash of a
# consumer-side dereference (KVC001, KVC005) in a test is a failing test, not a production crash;
# KVC004 (a test mutating the shared sentinel leaks into every later test) and the producer rules
# (KVC002, KVC003, KVC006: test doubles that pretend to be runners) stay on.
DEFAULT_TEST_FILES = ("tests/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
DEFAULT_TEST_IGNORE = ("KVC001", "KVC005")


class ConfigError(Exception):
    """A configuration problem; the CLI prints str(e) and exits 2."""


@dataclass(frozen=True)
class Config:
    """The settings of one run; the defaults are the vLLM preset."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    optional_fields: tuple[str, ...] = ("kv_connector_output",)
    payload_class: str = "KVConnectorOutput"
    payload_optional_fields: tuple[str, ...] = ("finished_sending", "finished_recving")
    output_classes: tuple[str, ...] = ("ModelRunnerOutput",)
    empty_sentinels: tuple[str, ...] = ("EMPTY_MODEL_RUNNER_OUTPUT",)
    connector_guards: tuple[str, ...] = ("has_kv_transfer_group",)
    connector_contexts: tuple[str, ...] = ("_get_kv_connector_output",)
    optional_contexts: tuple[str, ...] = ("maybe_get_kv_connector_output",)
    connector_functions: tuple[str, ...] = ()
    test_files: tuple[str, ...] = DEFAULT_TEST_FILES
    test_ignore: tuple[str, ...] = DEFAULT_TEST_IGNORE
    source: Path | None = None
    root: Path | None = None
    # the kebab-case keys the configuration file set (the rest are defaults); `kvlint config` shows them
    explicit_keys: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def is_enabled(self, code: str) -> bool:
        """Decide flake8-style (longest prefix wins, ties ignore) whether `code` is reported."""
        selected = _longest_prefix(code, self.select)
        if not self.select:
            selected = 0
        elif selected is None and code.startswith(_FILE_LEVEL_PREFIX):
            selected = 0
        if selected is None:
            return False
        ignored = _longest_prefix(code, self.ignore)
        return ignored is None or selected > ignored

    def ignored_for(self, path: Path) -> frozenset[str]:
        """Return the codes and prefixes that per-file-ignores silence for `path`."""
        codes: set[str] = set()
        for pattern, pattern_codes in self.per_file_ignores:
            if _path_matches(path, (pattern,), self._root()):
                codes.update(pattern_codes)
        return frozenset(codes)

    def is_test_file(self, path: Path | str) -> bool:
        """Say whether `path` matches `test-files` (relative to the root, as `exclude` is matched)."""
        return bool(self.test_files) and _path_matches(path, self.test_files, self._root())

    def test_ignored_for(self, path: Path | str) -> frozenset[str]:
        """Return the codes and prefixes the test-code policy silences for `path` (none outside tests)."""
        if not self.test_ignore or not self.is_test_file(path):
            return frozenset()
        return frozenset(self.test_ignore)

    def silenced_for(self, path: Path) -> frozenset[str]:
        """Return every code and prefix not reported in `path`: per-file-ignores plus the test-code policy.

        The one question each face's suppression step asks; `select` cannot re-enable these.
        """
        return self.ignored_for(path) | self.test_ignored_for(path)

    def is_excluded(self, path: Path) -> bool:
        """Say whether `path` or one of its directories below the root matches `exclude`."""
        return bool(self.exclude) and _path_matches(path, self.exclude, self._root())

    def fingerprint(self) -> str:
        """Return a stable sha256 hex digest of the settings that change analysis results."""
        payload = {name: getattr(self, name) for name in _ANALYSIS_FIELDS}
        payload["version"] = _FINGERPRINT_VERSION
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def names(self) -> tuple[str, ...]:
        """Return the identifiers a file must mention for any rule to fire in it."""
        configured = (
            *self.optional_fields,
            self.payload_class,
            *self.output_classes,
            *self.empty_sentinels,
            *self.connector_guards,
            *self.connector_contexts,
            *self.optional_contexts,
            *self.connector_functions,
        )
        found = dict.fromkeys(name.rpartition(".")[2] for name in configured if name)
        found[CONNECTOR_PATH_MARKER] = None
        return tuple(found)

    def _root(self) -> str:
        return os.path.abspath(self.root if self.root is not None else os.getcwd())


def _longest_prefix(code: str, prefixes: Sequence[str]) -> int | None:
    lengths = [len(prefix) for prefix in prefixes if code.startswith(prefix)]
    return max(lengths) if lengths else None


def _split_patterns(patterns: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """Sort patterns into name, root-relative and absolute ones, as flake8 anchors them."""
    names, relative, absolute = [], [], []
    for raw in patterns:
        pattern = raw.replace(os.sep, "/")
        if "/" not in pattern:
            names.append(pattern)
        elif pattern.startswith("/"):
            absolute.append(pattern.rstrip("/") or "/")
        else:
            while pattern.startswith("./"):
                pattern = pattern[2:]
            relative.extend(_zero_depth_variants(pattern.rstrip("/") or "."))
    return names, relative, absolute


def _zero_depth_variants(pattern: str) -> list[str]:
    """`pattern` and, for each `**/` in it, the spelling without it: `**` also matches no directory.

    fnmatch's `*` already crosses `/` (as flake8's matching does), so `**/test_*.py` matches
    `a/b/test_x.py`; the variants make it match `test_x.py` at the root too.
    """
    variants = [pattern]
    index = 0
    while index < len(variants):
        current = variants[index]
        index += 1
        for start in _segment_starts(current, "**/"):
            shorter = current[:start] + current[start + 3:]
            if shorter and shorter not in variants:
                variants.append(shorter)
    return variants


def _segment_starts(pattern: str, segment: str) -> list[int]:
    """Where `segment` starts a path segment of `pattern` (at the start, or after a `/`)."""
    return [
        position for position in range(len(pattern))
        if pattern.startswith(segment, position) and (position == 0 or pattern[position - 1] == "/")
    ]


def _path_matches(path: Path | str, patterns: Sequence[str], root: str) -> bool:
    """Match `path` or a directory of it below `root` against exclude-style patterns."""
    absolute = os.path.abspath(path)
    name_patterns, path_patterns, absolute_patterns = _split_patterns(patterns)
    if absolute_patterns and _any_match(Path(absolute).as_posix(), absolute_patterns):
        return True
    try:
        relative = os.path.relpath(absolute, root)
    except ValueError:
        relative = os.pardir
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return _any_match(os.path.basename(absolute), name_patterns)
    if relative == os.curdir:
        return False
    parts = relative.split(os.sep)
    for depth in range(len(parts), 0, -1):
        if _any_match(parts[depth - 1], name_patterns):
            return True
        if _any_match("/".join(parts[:depth]), path_patterns):
            return True
        if absolute_patterns and _any_match(
            Path(root, *parts[:depth]).as_posix(), absolute_patterns
        ):
            return True
    return False


def _any_match(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def _error(source: Path | None, message: str) -> ConfigError:
    where = display_path(source) if source is not None else "<config>"
    text = f"{where}: {message}"
    return ConfigError(" ".join(part.strip() for part in text.splitlines() if part.strip()))


def _section_name(source: Path) -> str:
    return "[tool.kvlint]" if source.suffix == ".toml" else "[kvlint]"


def _is_name(value: str, dotted: bool) -> bool:
    parts = value.split(".") if dotted else [value]
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in parts)


def _type_name(value: object) -> str:
    return {dict: "table", list: "list", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def config_from_mapping(data: Mapping[str, object], source: Path) -> Config:
    """Validate a kebab-case settings mapping and build a Config from it."""
    section = _section_name(source)
    for key in data:
        if key not in KNOWN_KEYS:
            close = difflib.get_close_matches(str(key), KNOWN_KEYS, n=1, cutoff=0.6)
            if close:
                hint = f"did you mean {close[0]!r}?"
            else:
                hint = "known keys: " + ", ".join(KNOWN_KEYS)
            raise _error(source, f"unknown key {key!r} in {section} ({hint})")

    fields: dict[str, object] = {}
    for key in _LIST_KEYS:
        if key in data:
            fields[key.replace("-", "_")] = _string_list(data[key], key, section, source)
    for key in _CODE_KEYS:
        name = key.replace("-", "_")
        if name in fields:  # `ALL`, ruff's spelling of every code, is the prefix every code starts with
            codes: tuple[str, ...] = fields[name]  # type: ignore[assignment]
            fields[name] = tuple(ALL_CODES if value == "ALL" else value for value in codes)
        for value in fields.get(name, ()):
            _check_code(value, key, section, source)
    for key in _GLOB_KEYS:
        for value in fields.get(key.replace("-", "_"), ()):
            if not value:
                raise _error(source, f"empty pattern in {key!r} in {section}")
    for key in _ATTRIBUTE_KEYS + _DOTTED_KEYS:
        dotted = key in _DOTTED_KEYS
        for value in fields.get(key.replace("-", "_"), ()):
            _check_name(value, key, section, source, dotted)
    if "payload-class" in data:
        value = data["payload-class"]
        if not isinstance(value, str):
            raise _error(
                source,
                f"'payload-class' in {section} must be a string, got {_type_name(value)}",
            )
        _check_name(value, "payload-class", section, source, dotted=True)
        fields["payload_class"] = value
    if "per-file-ignores" in data:
        fields["per_file_ignores"] = _per_file_ignores(data["per-file-ignores"], section, source)

    absolute = Path(os.path.abspath(source))
    explicit = frozenset(str(key) for key in data)
    return Config(source=absolute, root=absolute.parent, explicit_keys=explicit, **fields)  # type: ignore[arg-type]


def _string_list(value: object, key: str, section: str, source: Path) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise _error(
            source, f"{key!r} in {section} must be a list of strings, got {_type_name(value)}"
        )
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _error(
                source,
                f"{key!r} in {section} must be a list of strings, "
                f"but item {index} is {_type_name(item)} {item!r}",
            )
    return tuple(value)


def _check_code(value: str, key: str, section: str, source: Path) -> None:
    if not _CODE_RE.match(value):
        raise _error(
            source,
            f"invalid code {value!r} in {key!r} in {section} "
            "(expected 'KVC' and up to three digits, e.g. 'KVC001' or 'KVC0')",
        )


def _check_name(value: str, key: str, section: str, source: Path, dotted: bool) -> None:
    if not _is_name(value, dotted):
        expected = "a Python identifier or dotted name" if dotted else "a Python identifier"
        raise _error(
            source, f"invalid name {value!r} in {key!r} in {section} (expected {expected})"
        )


def _per_file_ignores(
    value: object, section: str, source: Path
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    key = "per-file-ignores"
    if not isinstance(value, Mapping):
        raise _error(
            source,
            f"{key!r} in {section} must be a table of glob = [codes], got {_type_name(value)}",
        )
    result = []
    for pattern, codes in value.items():
        if not isinstance(pattern, str) or not pattern:
            raise _error(source, f"empty pattern in {key!r} in {section}")
        if not isinstance(codes, (list, tuple)) or not all(isinstance(c, str) for c in codes):
            raise _error(
                source,
                f"{key!r} in {section}: the value for {pattern!r} must be a list of codes, "
                f"got {_type_name(codes)}",
            )
        for code in codes:
            _check_code(code, key, section, source)
        result.append((pattern, tuple(codes)))
    return tuple(result)


def _read_bytes(path: Path) -> bytes:
    """Read a config file, refusing anything but a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _error(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _error(path, "cannot read: not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise _error(path, f"cannot read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _error(path, f"cannot decode as UTF-8: {exc.reason} at byte {exc.start}") from exc


def _toml_section(path: Path, raw: bytes) -> Mapping[str, object] | None:
    try:
        document = tomllib.loads(_decode(path, raw))
    except tomllib.TOMLDecodeError as exc:
        raise _error(path, f"invalid TOML: {exc}") from exc
    tool = document.get("tool")
    if not isinstance(tool, dict) or "kvlint" not in tool:
        return None
    section = tool["kvlint"]
    if not isinstance(section, dict):
        raise _error(path, f"[tool.kvlint] must be a table, got {_type_name(section)}")
    return section


def _cfg_section(path: Path, raw: bytes) -> Mapping[str, object] | None:
    parser = configparser.ConfigParser(
        interpolation=None, default_section="\0kvlint-no-default-section"
    )
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(_decode(path, raw), source=str(path))
    except configparser.Error as exc:
        raise _error(path, f"invalid INI syntax: {exc}") from exc
    if not parser.has_section("kvlint"):
        return None
    data: dict[str, object] = {}
    for key, value in parser.items("kvlint"):
        if key == "per-file-ignores":
            data[key] = _parse_cfg_per_file_ignores(path, value)
        elif key in _STRING_KEYS:
            data[key] = value.strip()
        elif key in _LIST_KEYS:
            data[key] = [item for item in _CFG_SPLIT_RE.split(value) if item]
        else:
            data[key] = value
    return data


def _parse_cfg_per_file_ignores(path: Path, value: str) -> dict[str, list[str]]:
    """Parse flake8's `glob[, glob]: code[, code]` lines."""
    mapping: dict[str, list[str]] = {}
    for line in value.splitlines():
        if not line.strip():
            continue
        patterns, colon, codes = line.partition(":")
        pattern_list = [p for p in _CFG_SPLIT_RE.split(patterns) if p]
        code_list = [c for c in _CFG_SPLIT_RE.split(codes) if c]
        if not colon or not pattern_list or not code_list:
            raise _error(
                path,
                "'per-file-ignores' in [kvlint]: expected 'glob: CODE[, CODE...]', "
                f"got {line.strip()!r}",
            )
        for pattern in pattern_list:
            mapping.setdefault(pattern, []).extend(code_list)
    return mapping


def _is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _section_in(path: Path) -> Mapping[str, object] | None:
    raw = _read_bytes(path)
    if b"kvlint" not in raw:
        return None
    if path.name == "pyproject.toml":
        return _toml_section(path, raw)
    return _cfg_section(path, raw)


def find_config_file(start: Path) -> Path | None:
    """Return the nearest pyproject.toml or setup.cfg above `start` with a kvlint section.

    The search stops at the repository root and at a directory or file owned by another user
    (`kvlint.ownership`, like git's safe.directory).
    """
    from kvlint.ownership import foreign_owner, trusted_owners

    current = os.path.abspath(start)
    if not os.path.isdir(current):
        current = os.path.dirname(current)
    trusted = trusted_owners(current)
    while True:
        if foreign_owner(current, trusted) is not None:
            return None
        for name in ("pyproject.toml", "setup.cfg"):
            candidate = Path(current, name)
            if _is_regular_file(candidate) and foreign_owner(candidate, trusted) is not None:
                return None
            if _is_regular_file(candidate) and _section_in(candidate) is not None:
                return candidate
        if os.path.exists(os.path.join(current, ".git")):
            return None
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def project_root(start: Path) -> Path | None:
    """The directory the defaults' globs (`test-files`) are relative to when no file configures kvlint.

    The nearest directory at or above `start` holding `.git`, `pyproject.toml` or `setup.cfg`
    (a project's root: `tests/**` then means the project's tests wherever kvlint runs from);
    None, the current directory, when there is none.
    """
    current = os.path.abspath(start)
    if not os.path.isdir(current):
        current = os.path.dirname(current)
    while True:
        if os.path.exists(os.path.join(current, ".git")) or any(
            _is_regular_file(Path(current, name)) for name in ("pyproject.toml", "setup.cfg")
        ):
            return Path(current)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def load_config(paths: Sequence[Path], config_file: Path | None = None) -> Config:
    """Load the configuration for a run over `paths`, or from `config_file` when given."""
    if config_file is None:
        start = Path(paths[0]) if paths else Path.cwd()
        found = find_config_file(start)
        if found is None:
            return Config(root=project_root(start))
        config_file = found
    config_file = Path(config_file)
    raw = _read_bytes(config_file)
    if config_file.suffix == ".toml":
        section = _toml_section(config_file, raw)
        missing = "no [tool.kvlint] table"
    elif config_file.suffix in (".cfg", ".ini"):
        section = _cfg_section(config_file, raw)
        missing = "no [kvlint] section"
    else:
        raise _error(
            config_file,
            "unsupported config file type (expected pyproject.toml, a .toml, .cfg or .ini file)",
        )
    if section is None:
        raise _error(config_file, missing)
    return config_from_mapping(section, config_file)


# `kvlint config` lists the keys in this order: what is reported where, then the names of the preset.
DISPLAY_ORDER = (
    "select", "ignore", "exclude", "per-file-ignores", "test-files", "test-ignore",
    "optional-fields", "payload-class", "payload-optional-fields", "output-classes", "empty-sentinels",
    "connector-guards", "connector-contexts", "optional-contexts", "connector-functions",
)


def _toml_value(value: object, table: bool = False) -> str:
    """`value` in TOML: a basic string, an array of them, or (`table`) per-file-ignores' inline table."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's string escapes are TOML's
    assert isinstance(value, tuple)
    if table:
        return "{" + ", ".join(f"{_toml_value(pattern)} = {_toml_value(codes)}" for pattern, codes in value) + "}"
    return "[" + ", ".join(_toml_value(item) for item in value) + "]"


def describe(config: Config, command_line: Mapping[str, str] = {}, path: Path | None = None) -> str:
    """The effective configuration as a `[tool.kvlint]` table, each key marked with where it came from.

    `command_line` maps keys the command line overrode to the option that did; `path`, a file,
    adds whether the test-code policy applies to it.
    """
    origin = display_path(config.source) if config.source is not None else ""
    lines = ["# kvlint: the configuration in effect"]
    if config.source is not None:
        lines.append(f"# read from {origin} ({_section_name(config.source)}); other keys are kvlint's defaults")
    else:
        lines.append("# no configuration file found: every key is kvlint's default")
    root = Path(config._root())
    lines.append(f"# globs (exclude, per-file-ignores, test-files) are relative to {root.as_posix()}")
    if path is not None and os.path.isfile(path):
        silenced = sorted(config.test_ignored_for(path))
        if silenced:
            lines.append(f"# {display_path(path)} is a test file: {', '.join(silenced)} not reported there")
        else:
            test = "a test file, but test-ignore is empty" if config.is_test_file(path) else "not a test file"
            lines.append(f"# {display_path(path)} is {test}")
    lines.append("[tool.kvlint]")
    for key in DISPLAY_ORDER:
        value = getattr(config, key.replace("-", "_"))
        if key in command_line:
            where = f"from the command line ({command_line[key]})"
        elif key in config.explicit_keys:
            where = f"from {origin}"
        else:
            where = "default"
        if key == "select" and not value:
            where += ": every code"
        lines.append(f"{key} = {_toml_value(value, table=key == 'per-file-ignores')}  # {where}")
    return "\n".join(lines) + "\n"


def config_for_directory(directory: str) -> Config | ConfigError:
    """The configuration of the files in `directory`; a bad configuration file gives its error."""
    try:
        return load_config([Path(directory)])
    except ConfigError as error:
        return error


class DirectoryConfigs:
    """The configuration of each file's directory, loaded once for this object's life.

    The faces that see one file at a time (flake8, mypy) keep one of these:
    a tree's files share a handful of directories. `on_error` hears of each
    bad configuration once, when it is first loaded.
    """

    def __init__(self, on_error: Callable[[ConfigError], None] | None = None) -> None:
        self._loaded: dict[str, Config | ConfigError] = {}
        self._on_error = on_error

    def for_file(self, path: str) -> Config | ConfigError:
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in self._loaded:
            loaded = self._loaded[directory] = config_for_directory(directory)
            if isinstance(loaded, ConfigError) and self._on_error is not None:
                self._on_error(loaded)
        return self._loaded[directory]

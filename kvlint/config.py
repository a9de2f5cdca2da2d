"""Read and validate `[tool.kvlint]` / `[kvlint]` so that every face analyses with the same
settings and a bad setting stops the run with one clear line."""

from __future__ import annotations

import functools
import fnmatch
import json
import keyword
import os
import re
import reprlib  # a value quoted in an error: short, and never recursing into a nested one
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kvlint.config_files import (
    CFG_INVARIANT_PREFIX,
    ConfigError,
    DirectorySources,
    Searches,
    Source,
    config_error as _error,
    find_config_file,
    ini_file,
    project_root,
    read_config_bytes,
    toml_section,
    type_name as _type_name,
)
from kvlint.invariants import (
    DEFAULT_PRESETS,
    EMPTY_OUTPUT_POLICIES,
    INVARIANT_KEYS,
    PRESETS,
    Invariant,
    InvariantSet,
    with_overrides,
)
from kvlint.paths import display_path

CONNECTOR_PATH_MARKER = "kvlint: connector-path"

_CODE_RE = re.compile(r"^KVC[0-9]{0,3}$", re.ASCII)
_CFG_SPLIT_RE = re.compile(r"[,\s]+")
_FILE_LEVEL_PREFIX = "KVC9"
ALL_CODES = "KVC"  # what `ALL` (ruff's word for every code) stands for in select and ignore
_FINGERPRINT_VERSION = "kvlint-config-2"

_CODE_KEYS = ("select", "ignore", "test-ignore")
_GLOB_KEYS = ("exclude", "test-files")
_ATTRIBUTE_KEYS = ("optional-fields", "payload-optional-fields", "emptiness-fields")
_DOTTED_KEYS = (
    "output-classes",
    "empty-sentinels",
    "attaching-helpers",
    "connector-guards",
    "connector-contexts",
    "optional-contexts",
    "connector-functions",
)
_STRING_KEYS = ("payload-class",)
_CHOICE_KEYS = {"empty-output": EMPTY_OUTPUT_POLICIES}
_MAPPING_KEYS = ("per-file-ignores",)
_LIST_KEYS = _CODE_KEYS + _GLOB_KEYS + _ATTRIBUTE_KEYS + _DOTTED_KEYS
_TABLE_KEYS = ("presets", "invariants")
_PATH_KEYS = ("search-path", "python")  # where imported modules' declarations are read from (section 5a)
KNOWN_KEYS = _LIST_KEYS + _STRING_KEYS + tuple(_CHOICE_KEYS) + _MAPPING_KEYS + _TABLE_KEYS + _PATH_KEYS
_INVARIANT_TABLE_KEYS = ("name", *INVARIANT_KEYS)


# The test-code policy (issue 16): in files matching `test-files`, findings whose code matches
# `test-ignore` are not reported, as if a built-in per-file-ignores entry said so. A crash of a
# consumer-side dereference (KVC001, KVC005) in a test is a failing test, not a production crash;
# KVC004 (a test mutating the shared sentinel leaks into every later test) and the producer rules
# (KVC002, KVC003, KVC006: test doubles that pretend to be runners) stay on.
DEFAULT_TEST_FILES = ("tests/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
DEFAULT_TEST_IGNORE = ("KVC001", "KVC005")


Overrides = tuple[tuple[str, object], ...]  # snake_case invariant keys and their values


def kv_overrides(**keys: object) -> Overrides:
    """Flat keys for `Config(kv_overrides=...)` in the order a configuration file gives them."""
    order = [key.replace("-", "_") for key in INVARIANT_KEYS]
    return tuple(sorted(keys.items(), key=lambda item: order.index(item[0])))


@dataclass(frozen=True)
class Config:
    """The settings of one run; the defaults are the vLLM presets (`kv` and `ec`)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    presets: tuple[str, ...] = DEFAULT_PRESETS
    kv_overrides: Overrides = ()  # today's flat keys (`optional-fields = [...]`): they override the `kv` preset
    invariant_tables: tuple[tuple[str, Overrides], ...] = ()  # `[[tool.kvlint.invariants]]`: name, keys
    test_files: tuple[str, ...] = DEFAULT_TEST_FILES
    test_ignore: tuple[str, ...] = DEFAULT_TEST_IGNORE
    search_path: tuple[str, ...] = ()  # absolute directories, looked up after the project's own
    python: str = ""  # the project's environment (a venv or an interpreter in one); "" finds it (section 5a)
    source: Path | None = None
    root: Path | None = None
    # the kebab-case keys the configuration file set (the rest are defaults); `kvlint config` shows them
    explicit_keys: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    @functools.cached_property
    def invariants(self) -> InvariantSet:
        """The active invariants: the presets, the flat keys on `kv`, then each table on its namesake."""
        chosen = {name: PRESETS[name] for name in self.presets}
        if self.kv_overrides:
            chosen["kv"] = with_overrides(chosen.get("kv", PRESETS["kv"]), self.kv_overrides)
        for name, overrides in self.invariant_tables:
            start = chosen.get(name) or Invariant(name)
            chosen[name] = with_overrides(start, overrides)
        return InvariantSet(tuple(chosen.values()))

    # Every invariant's names together: what the byte scan, the declaration index and the faces that
    # do not tell invariants apart look for.
    optional_fields = property(lambda self: self.invariants.optional_fields)
    payload_classes = property(lambda self: self.invariants.payload_classes)
    payload_optional_fields = property(lambda self: self.invariants.payload_optional_fields)
    output_classes = property(lambda self: self.invariants.output_classes)
    empty_sentinels = property(lambda self: self.invariants.empty_sentinels)
    attaching_helpers = property(lambda self: self.invariants.attaching_helpers)
    connector_guards = property(lambda self: self.invariants.connector_guards)
    connector_contexts = property(lambda self: self.invariants.connector_contexts)
    optional_contexts = property(lambda self: self.invariants.optional_contexts)
    connector_functions = property(lambda self: self.invariants.connector_functions)

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

    def ignored_for(self, path: Path | str) -> frozenset[str]:
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

    def silenced_for(self, path: Path | str) -> frozenset[str]:
        """Return every code and prefix not reported in `path`: per-file-ignores plus the test-code policy.

        The one question each face's suppression step asks; `select` cannot re-enable these.
        """
        return self.ignored_for(path) | self.test_ignored_for(path)

    def is_excluded(self, path: Path) -> bool:
        """Say whether `path` or one of its directories below the root matches `exclude`."""
        return bool(self.exclude) and _path_matches(path, self.exclude, self._root())

    def fingerprint(self) -> str:
        """Return a stable sha256 hex digest of the settings that change analysis results."""
        payload: dict[str, object] = {
            "invariants": [invariant.as_dict() for invariant in self.invariants.invariants],
            "version": _FINGERPRINT_VERSION,
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        import hashlib

        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def names(self) -> tuple[str, ...]:
        """Return the identifiers a file must mention for any rule to fire in it."""
        return self._names

    @functools.cached_property
    def _names(self) -> tuple[str, ...]:  # worked out once: every analysis asks (2 us a call)
        configured = [name for invariant in self.invariants.invariants for name in invariant.names()]
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
            relative.append(pattern.rstrip("/") or ".")
    return names, relative, absolute


def _zero_depth_variants(pattern: str) -> list[str]:
    """`pattern` and, for each `**/` in it, the spelling without it: `**` also matches no directory.

    fnmatch's `*` already crosses `/` (as flake8's matching does), so `**/test_*.py` matches
    `a/b/test_x.py`; the variants make it match `test_x.py` at the root too. There are 2^n of them for
    n `**/` parts: only patterns with at most `_MAX_EXPANDED_GLOBSTARS` are spelled so (`_Glob` matches
    the others).
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
    patterns = tuple(patterns)
    name_patterns, _, absolute_patterns = _compiled_patterns(patterns)
    if absolute_patterns[0] is not None and _any_match(Path(absolute).as_posix(), absolute_patterns):
        return True
    relative = _relative(absolute, root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return _any_match(os.path.basename(absolute), name_patterns)
    if relative == os.curdir:
        return False
    directory = os.path.dirname(relative)
    return _level_matches(relative, patterns, root) or bool(directory) and _directory_matches(directory, patterns, root)


@functools.lru_cache(maxsize=4096)
def _directory_matches(relative: str, patterns: tuple[str, ...], root: str) -> bool:
    """`_path_matches` of a directory below `root` (`relative` to it, not "."): the same for every file in it, so
    worked out once per directory (`kvlint check` asks it of each file with a finding)."""
    parent = os.path.dirname(relative)
    return _level_matches(relative, patterns, root) or bool(parent) and _directory_matches(parent, patterns, root)


def _level_matches(relative: str, patterns: tuple[str, ...], root: str) -> bool:
    """Whether the file or directory `relative` to `root` matches a pattern by itself (its name, its path below
    `root` or its absolute path), whatever the directories it is in do."""
    name_patterns, path_patterns, absolute_patterns = _compiled_patterns(patterns)
    return (_any_match(os.path.basename(relative), name_patterns)
            or _any_match(relative.replace(os.sep, "/"), path_patterns)
            or absolute_patterns[0] is not None and _any_match(Path(root, relative).as_posix(), absolute_patterns))


def _relative(absolute: str, root: str) -> str:
    """`os.path.relpath(absolute, root)` of two normalised absolute paths (`os.pardir` where there is none): below
    the root, the rest of the path, without relpath's splitting of both."""
    if absolute.startswith(root) and absolute[len(root):len(root) + 1] == os.sep and not root.endswith(os.sep):
        return absolute[len(root) + 1:]
    try:
        return os.path.relpath(absolute, root)
    except ValueError:
        return os.pardir


_MAX_EXPANDED_GLOBSTARS = 3  # a pattern with more `**/` parts is matched by `_Glob`, not by 2^n regex variants
_Matchers = tuple[re.Pattern[str] | None, tuple["_Glob", ...]]


@functools.lru_cache(maxsize=64)
def _compiled_patterns(patterns: tuple[str, ...]) -> tuple[_Matchers, ...]:
    """Name, root-relative and absolute patterns, each kind one regular expression (a path is matched
    once per directory level: `fnmatch` per pattern made that a tenth of a millisecond a file).

    A root-relative pattern stands for its `_zero_depth_variants` when it has a few `**/` parts; one with
    more is a `_Glob` of its own, matched in time linear in the path and the pattern (issue 29: n `**/`
    parts made 2^n variants, and n = 16 took minutes and a gigabyte in every face).
    """
    names, relative, absolute = _split_patterns(patterns)
    globs = tuple(_Glob(os.path.normcase(p)) for p in relative if _globstars(p) > _MAX_EXPANDED_GLOBSTARS)
    expanded = [v for p in relative if _globstars(p) <= _MAX_EXPANDED_GLOBSTARS for v in _zero_depth_variants(p)]
    return tuple(
        (re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in kind)) if kind else None,
         kind_globs)
        for kind, kind_globs in ((names, ()), (expanded, globs), (absolute, ()))
    )


def _globstars(pattern: str) -> int:
    return len(_segment_starts(pattern, "**/"))


def _any_match(name: str, matchers: _Matchers) -> bool:
    """`fnmatch.fnmatch` against any of the patterns compiled into `matchers`."""
    pattern, globs = matchers
    name = os.path.normcase(name)
    return (pattern is not None and pattern.match(name) is not None) or any(glob.match(name) for glob in globs)


_SEPARATOR = os.path.normcase("/")


class _Glob:
    """One exclude-style pattern as a bit-parallel automaton: `**/` at the start of a segment matches no
    directory or any ending in `/`, and otherwise fnmatch's rules (`*` and `?` cross `/`). A name is matched
    in one pass, a few integer operations per character: linear in the name and the pattern, as git's and
    ruff's glob matching are, where the variants of `_zero_depth_variants` double with each `**/`."""

    __slots__ = ("_literals", "_classes", "_any", "_star", "_globstar", "_loop", "_accept", "_consume")

    def __init__(self, pattern: str) -> None:
        literals: dict[str, int] = {}
        classes: list[tuple[int, re.Pattern[str]]] = []
        any_char = star = globstar = loop = 0
        state, i, n = 0, 0, len(pattern)
        after_star = False  # `**` that starts no segment is one `*`, as in fnmatch
        while i < n:
            if (i == 0 or pattern[i - 1] == _SEPARATOR) and pattern.startswith("**" + _SEPARATOR, i):
                globstar |= 1 << state  # skips to state + 2, or enters the loop at state + 1
                loop |= 1 << (state + 1)  # any character; a `/` also leaves for state + 2
                state, i, after_star = state + 2, i + 3, False
                continue
            char = pattern[i]
            i += 1
            if char == "*":
                if not after_star:
                    star |= 1 << state
                    state += 1
                after_star = True
                continue
            after_star = False
            if char == "?":
                any_char |= 1 << state
            elif char == "[":  # a bracket expression where fnmatch.translate sees one
                j = i
                if j < n and pattern[j] == "!":
                    j += 1
                if j < n and pattern[j] == "]":
                    j += 1
                while j < n and pattern[j] != "]":
                    j += 1
                if j >= n:
                    literals["["] = literals.get("[", 0) | 1 << state
                else:
                    classes.append((1 << state, re.compile(fnmatch.translate(pattern[i - 1:j + 1]))))
                    i = j + 1
            else:
                literals[char] = literals.get(char, 0) | 1 << state
            state += 1
        self._literals, self._classes, self._any = literals, tuple(classes), any_char
        self._star, self._globstar, self._loop = star, globstar, loop
        self._accept = 1 << state
        self._consume: dict[str, int] = {}  # per character: the states that move on it

    def _closure(self, states: int) -> int:
        while True:
            grown = states | ((states & (self._star | self._globstar)) << 1) | ((states & self._globstar) << 2)
            if grown == states:
                return states
            states = grown

    def match(self, name: str) -> bool:
        states = self._closure(1)
        keep = self._star | self._loop
        for char in name:
            mask = self._consume.get(char)
            if mask is None:
                mask = self._literals.get(char, 0) | self._any
                for bit, bracket in self._classes:
                    if bracket.match(char):
                        mask |= bit
                if len(self._consume) < 256:
                    self._consume[char] = mask
            moved = ((states & mask) << 1) | (states & keep)
            if char == _SEPARATOR:
                moved |= (states & self._loop) << 1
            if not moved:
                return False
            states = self._closure(moved)
        return bool(states & self._accept)


def _section_name(source: Path) -> str:
    return "[tool.kvlint]" if source.suffix == ".toml" else "[kvlint]"


def _is_name(value: str, dotted: bool) -> bool:
    parts = value.split(".") if dotted else [value]
    return all(part.isidentifier() and not keyword.iskeyword(part) for part in parts)


def config_from_mapping(data: Mapping[str, object], source: Path) -> Config:
    """Validate a kebab-case settings mapping and build a Config from it."""
    section = _section_name(source)
    _check_keys(data, KNOWN_KEYS, section, source)

    fields: dict[str, object] = {}
    for key in _CODE_KEYS + _GLOB_KEYS:
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
    if "per-file-ignores" in data:
        fields["per_file_ignores"] = _per_file_ignores(data["per-file-ignores"], section, source)
    if "presets" in data:
        presets = _string_list(data["presets"], "presets", section, source)
        for name in presets:
            if name not in PRESETS:
                raise _error(source, f"unknown preset {name!r} in 'presets' in {section} (known: {', '.join(PRESETS)})")
        fields["presets"] = tuple(dict.fromkeys(presets))
    kv_overrides = _invariant_keys(data, section, source)
    if kv_overrides:
        if "kv" not in fields.get("presets", DEFAULT_PRESETS):  # type: ignore[operator]
            flat = ", ".join(repr(key.replace("_", "-")) for key, _ in kv_overrides)
            raise _error(source, f"{flat} in {section} override the 'kv' preset, which 'presets' leaves out")
        fields["kv_overrides"] = kv_overrides
    if "invariants" in data:
        fields["invariant_tables"] = _invariant_tables(data["invariants"], section, source)
        chosen = fields.get("presets", DEFAULT_PRESETS)
        for name, _ in fields["invariant_tables"]:  # type: ignore[attr-defined]
            if name in PRESETS and name not in chosen:  # type: ignore[operator]
                raise _error(
                    source, f"{section} invariant {name!r} changes the {name!r} preset, which 'presets' leaves out"
                )

    absolute = Path(os.path.abspath(source))
    if "search-path" in data:  # relative to the file that says it, as mypy's `mypy_path` is not but ty's is
        directories = _string_list(data["search-path"], "search-path", section, source)
        fields["search_path"] = tuple(os.path.normpath(absolute.parent / item) for item in directories)
    if "python" in data:  # "" (what `kvlint config` shows by default): found as without the key
        if not isinstance(data["python"], str):
            raise _error(source, f"'python' in {section} must be a path, got {_type_name(data['python'])}")
        if data["python"]:
            fields["python"] = os.path.normpath(absolute.parent / os.path.expanduser(data["python"]))
    explicit = frozenset(str(key) for key in data)
    return Config(source=absolute, root=absolute.parent, explicit_keys=explicit, **fields)  # type: ignore[arg-type]


def _check_keys(data: Mapping[str, object], known: Sequence[str], section: str, source: Path) -> None:
    for key in data:
        if key not in known:
            import difflib  # only for a misspelt key: not every run's import

            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(known)
            raise _error(source, f"unknown key {key!r} in {section} ({hint})")


def _invariant_keys(data: Mapping[str, object], section: str, source: Path) -> Overrides:
    """The invariant keys `data` sets, validated, as snake_case (key, value) pairs in the dataclass's order."""
    found: dict[str, object] = {}
    for key in INVARIANT_KEYS:
        if key not in data:
            continue
        value = data[key]
        if key in _STRING_KEYS or key in _CHOICE_KEYS:
            if not isinstance(value, str):
                raise _error(source, f"{key!r} in {section} must be a string, got {_type_name(value)}")
            if key in _CHOICE_KEYS and value not in _CHOICE_KEYS[key]:
                choices = " or ".join(repr(choice) for choice in _CHOICE_KEYS[key])
                raise _error(source, f"{key!r} in {section} must be {choices}, got {reprlib.repr(value)}")
            if key in _STRING_KEYS:
                _check_name(value, key, section, source, dotted=True)
        else:
            value = _string_list(value, key, section, source)
            for item in value:
                _check_name(item, key, section, source, dotted=key in _DOTTED_KEYS)
        found[key.replace("-", "_")] = value
    return tuple(found.items())


def _invariant_tables(value: object, section: str, source: Path) -> tuple[tuple[str, Overrides], ...]:
    """`[[tool.kvlint.invariants]]`: a list of tables, each with a `name` and invariant keys."""
    key = "invariants"
    if not isinstance(value, (list, tuple)):
        raise _error(source, f"{key!r} in {section} must be a list of tables, got {_type_name(value)}")
    tables: dict[str, Overrides] = {}
    for index, table in enumerate(value):
        if not isinstance(table, Mapping):
            raise _error(
                source, f"{key!r} in {section} must be a list of tables, but item {index} is {_type_name(table)}"
            )
        name = table.get("name")
        where = f"{section} invariant {index}" if not isinstance(name, str) else f"{section} invariant {name!r}"
        if not isinstance(name, str) or not _is_name(name, dotted=False):
            raise _error(source, f"{where} needs a 'name' (a Python identifier, e.g. 'kv')")
        if name in tables:
            raise _error(source, f"{where} is given twice")
        _check_keys(table, _INVARIANT_TABLE_KEYS, where, source)
        overrides = _invariant_keys(table, where, source)
        if name not in PRESETS:
            keys = dict(overrides)
            for required in ("optional_fields", "payload_class"):
                if not keys.get(required):
                    raise _error(
                        source, f"{where} is not a preset, so it needs {required.replace('_', '-')!r}"
                    )
        tables[name] = overrides
    return tuple(tables.items())


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
                f"but item {index} is {_type_name(item)} {reprlib.repr(item)}",
            )
    return tuple(value)


def _check_code(value: str, key: str, section: str, source: Path) -> None:
    if not _CODE_RE.match(value):
        raise _error(
            source,
            f"invalid code {value!r} in {key!r} in {section} "
            "(expected 'KVC' and up to three digits, e.g. 'KVC001' or 'KVC0')",
        )
    from kvlint.rules import unknown_selector  # the registry: only where a configuration names codes

    unknown = unknown_selector(value)
    if unknown is not None:  # ruff's "unknown rule selector": a typo of a code must not silently select nothing
        raise _error(source, f"unknown code {value!r} in {key!r} in {section}: {unknown}")


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


def _cfg_section(path: Path, raw: bytes) -> Mapping[str, object] | None:
    parser = ini_file(path, raw)
    tables = [name for name in parser.sections() if name.startswith(CFG_INVARIANT_PREFIX)]
    if not parser.has_section("kvlint") and not tables:
        return None
    data = _cfg_values(path, parser.items("kvlint")) if parser.has_section("kvlint") else {}
    if tables:  # `[kvlint.invariants.NAME]`: a section per invariant, the TOML list of tables' twin
        data["invariants"] = [  # the section names the invariant: a `name =` inside it cannot rename it
            {**_cfg_values(path, parser.items(name)), "name": name[len(CFG_INVARIANT_PREFIX):]} for name in tables
        ]
    return data


def _cfg_values(path: Path, items: Sequence[tuple[str, str]]) -> dict[str, object]:
    """An INI section's values in the types the TOML spelling gives them."""
    data: dict[str, object] = {}
    for key, value in items:
        if key == "per-file-ignores":
            data[key] = _parse_cfg_per_file_ignores(path, value)
        elif key in _STRING_KEYS or key in _CHOICE_KEYS or key == "python":
            data[key] = value.strip()
        elif key in _LIST_KEYS or key in ("presets", "search-path"):
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


def load_config(paths: Sequence[Path], config_file: Path | None = None, searches: Searches | None = None) -> Config:
    """Load the configuration for a run over `paths`, or from `config_file` when given. `searches` remembers
    the directories' answers for a caller that loads the configuration of many (`DirectoryConfigs`)."""
    if config_file is None:
        start = Path(paths[0]) if paths else Path.cwd()
        found = find_config_file(start, searches.config_files if searches is not None else None)
        if found is None:
            return Config(root=project_root(start, searches.roots if searches is not None else None))
        config_file = found
    config_file = Path(config_file)
    raw = read_config_bytes(config_file)
    if config_file.suffix == ".toml":
        section = toml_section(config_file, raw)
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
    "select", "ignore", "exclude", "per-file-ignores", "test-files", "test-ignore", "search-path", "python", "presets",
)


def _toml_value(value: object, table: bool = False) -> str:
    """`value` in TOML: a basic string, an array of them, or (`table`) per-file-ignores' inline table."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # JSON's string escapes are TOML's
    assert isinstance(value, tuple)
    if table:
        return "{" + ", ".join(f"{_toml_value(pattern)} = {_toml_value(codes)}" for pattern, codes in value) + "}"
    return "[" + ", ".join(_toml_value(item) for item in value) + "]"


def describe(config: Config, command_line: Mapping[str, str] = {}, path: Path | None = None,
             search_path: Sequence[Path] | None = None) -> str:
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
    if search_path is not None:
        shown = ", ".join(display_path(directory) for directory in search_path) or "nothing beyond the files checked"
        lines.append(f"# imported modules are looked up in: {shown}")
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
    tables = dict(config.invariant_tables)
    for invariant in config.invariants.invariants:
        set_here = dict(tables.get(invariant.name, ()))
        flat = dict(config.kv_overrides) if invariant.name == "kv" else {}
        preset = f"the {invariant.name!r} preset" if invariant.name in PRESETS else "default"
        lines += ["", "[[tool.kvlint.invariants]]", f"name = {_toml_value(invariant.name)}  # {preset}"]
        for key in INVARIANT_KEYS:
            name = key.replace("-", "_")
            if name in set_here:
                where = f"from {origin} ([[tool.kvlint.invariants]] {invariant.name!r})"
            elif name in flat:
                where = f"from {origin} (the flat key {key!r})"
            else:
                where = preset
            lines.append(f"{key} = {_toml_value(getattr(invariant, name))}  # {where}")
    return "\n".join(lines) + "\n"


def config_for_directory(directory: str, searches: Searches | None = None) -> Config | ConfigError:
    """The configuration of the files in `directory`; a bad configuration file gives its error."""
    try:
        return load_config([Path(directory)], searches=searches)
    except ConfigError as error:
        return error


def config_of_source(source: Source) -> Config | ConfigError:
    """The configuration a `config_files.source_of` answer stands for: as `load_config` builds it once its search
    has ended there; a bad configuration file gives its error."""
    kind, path = source
    if kind != "file":
        return Config(root=Path(path) if path else None)
    try:
        return load_config((), config_file=Path(path))
    except ConfigError as error:
        return error


class DirectoryConfigs:
    """The configuration of each file's directory, loaded once for this object's life.

    The faces that see one file at a time (flake8, mypy) keep one of these:
    a tree's files share a handful of directories, and those a handful of
    configurations (`config_files.DirectorySources`: most directories take
    their parent's). `on_error` hears of each bad configuration once, when it
    is first loaded.
    """

    def __init__(self, on_error: Callable[[ConfigError], None] | None = None,
                 sources: DirectorySources | None = None) -> None:
        self._loaded: dict[str, Config | ConfigError] = {}  # by directory
        self._by_source: dict[Source | ConfigError, Config | ConfigError] = {}  # an error stands for itself
        self._sources = sources if sources is not None else DirectorySources()
        self._on_error = on_error

    def for_file(self, path: str) -> Config | ConfigError:
        directory = os.path.dirname(os.path.abspath(path))
        loaded = self._loaded.get(directory)
        if loaded is None:
            loaded = self._loaded[directory] = self.for_source(self._sources.of_directory(directory))
        return loaded

    def for_source(self, source: Source | ConfigError) -> Config | ConfigError:
        """The configuration of a directory whose `DirectorySources` answer is `source`."""
        loaded = self._by_source.get(source)
        if loaded is None:
            loaded = source if isinstance(source, ConfigError) else config_of_source(source)
            self._by_source[source] = loaded
            if isinstance(loaded, ConfigError) and self._on_error is not None:
                self._on_error(loaded)
        return loaded

"""Where a directory's kvlint configuration comes from: the nearest `pyproject.toml` or `setup.cfg` with a kvlint
section, or, where none has one, the project root the defaults' globs are relative to.

The searches stop at the repository root and at a directory or file owned by someone untrusted
(`kvlint.ownership`). This module reads configuration files only as far as the searches need (is there a
kvlint section?); what the settings mean is `kvlint.config`'s. It builds no `Config` and no dataclass, so a
face that only needs to know *which* file configures each directory (the mypy plugin's answer for a run that
mypy's cache serves) need not import the settings' code.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from kvlint.ownership import foreign_owner, trusted_owners
from kvlint.paths import PROJECT_MARKERS, display_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a hook's start-up)
if TYPE_CHECKING:
    from configparser import ConfigParser

CFG_INVARIANT_PREFIX = "kvlint.invariants."  # `[kvlint.invariants.NAME]` in setup.cfg
# where a directory's configuration comes from: ("file", the configuration file) or ("root", the project root
# the defaults' globs are relative to, "" for none: the current directory), both absolute
Source = tuple[str, str]


class ConfigError(Exception):
    """A configuration problem; the CLI prints str(e) and exits 2."""


def config_error(source: Path | None, message: str) -> ConfigError:
    where = display_path(source) if source is not None else "<config>"
    text = f"{where}: {message}"
    return ConfigError(" ".join(part.strip() for part in text.splitlines() if part.strip()))


def type_name(value: object) -> str:
    return {dict: "table", list: "list", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


def read_config_bytes(path: Path) -> bytes:
    """Read a config file, refusing anything but a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise config_error(path, f"cannot read: {exc.strerror or exc}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise config_error(path, "cannot read: not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise config_error(path, f"cannot read: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _decode(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise config_error(path, f"cannot decode as UTF-8: {exc.reason} at byte {exc.start}") from exc


def toml_section(path: Path, raw: bytes) -> Mapping[str, object] | None:
    """The `[tool.kvlint]` table of a TOML file's bytes; None without one."""
    import tomllib  # only for a file that names kvlint: a project's pyproject.toml without it is not parsed

    try:
        document = tomllib.loads(_decode(path, raw))
    except ValueError as exc:  # TOMLDecodeError, and an integer of more digits than int() takes
        raise config_error(path, f"invalid TOML: {exc}") from exc
    except (RecursionError, MemoryError) as exc:  # tomllib recurses once per nested array or inline table
        raise config_error(path, "invalid TOML: nested too deeply to read") from exc
    tool = document.get("tool")
    if not isinstance(tool, dict) or "kvlint" not in tool:
        return None
    section = tool["kvlint"]
    if not isinstance(section, dict):
        raise config_error(path, f"[tool.kvlint] must be a table, got {type_name(section)}")
    return section


def ini_file(path: Path, raw: bytes) -> ConfigParser:
    """An INI file's bytes, parsed as `setup.cfg` and `[kvlint]` sections are: keys as written, no interpolation."""
    import configparser  # only for a .cfg or .ini file: not every run's import

    parser = configparser.ConfigParser(
        interpolation=None, default_section="\0kvlint-no-default-section"
    )
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(_decode(path, raw), source=str(path))
    except configparser.Error as exc:
        raise config_error(path, f"invalid INI syntax: {exc}") from exc
    return parser


def _has_section(path: Path) -> bool:
    """Whether the file has a kvlint section (`[tool.kvlint]`; `[kvlint]` or `[kvlint.invariants.NAME]`); a file
    that cannot be read or parsed is a configuration error. What the section says is checked where it is loaded
    (`kvlint.config.load_config`)."""
    raw = read_config_bytes(path)
    if b"kvlint" not in raw:
        return False
    if path.name == "pyproject.toml":
        return toml_section(path, raw) is not None
    parser = ini_file(path, raw)
    return parser.has_section("kvlint") or any(name.startswith(CFG_INVARIANT_PREFIX) for name in parser.sections())


def _is_regular_file(path: str | Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def find_config_file(start: Path, searched: dict[tuple[str, frozenset[int]], Path | None] | None = None
                     ) -> Path | None:
    """Return the nearest pyproject.toml or setup.cfg above `start` with a kvlint section.

    The search stops at the repository root and at a directory or file owned by another user
    (`kvlint.ownership`, like git's safe.directory). `searched` remembers each directory's answer
    for a caller that asks for many directories of one tree (mypy, flake8): a sibling's search
    ends where an earlier one passed.
    """
    return _search_up(start, searched, _config_file_in)


def _config_file_in(directory: str, trusted: frozenset[int]) -> tuple[Path | None, bool]:
    """The directory's own pyproject.toml or setup.cfg with a kvlint section, and whether the search stops
    here (it does at that file, at one owned by someone untrusted, and at the repository root)."""

    for name in ("pyproject.toml", "setup.cfg"):
        candidate = os.path.join(directory, name)
        if not _is_regular_file(candidate):
            continue
        if _foreign(candidate, trusted):
            return None, True
        if _has_section(Path(candidate)):
            return Path(candidate), True
    return None, os.path.exists(os.path.join(directory, ".git"))


def _foreign(path: str, trusted: frozenset[int]) -> bool:
    """Whether `path`, or the symlink that names it, is owned by someone untrusted (a link planted in a shared
    directory may point at a file root owns)."""
    try:
        link_owner = os.lstat(path).st_uid
    except OSError:
        link_owner = None
    return (link_owner is not None and link_owner not in trusted) or foreign_owner(path, trusted) is not None


def project_root(start: Path, searched: dict[tuple[str, frozenset[int]], Path | None] | None = None
                 ) -> Path | None:
    """The directory the defaults' globs (`test-files`) are relative to when no file configures kvlint.

    The nearest directory at or above `start` holding `.git`, `pyproject.toml` or `setup.cfg`
    (a project's root: `tests/**` then means the project's tests wherever kvlint runs from);
    None, the current directory, when there is none. As for the configuration search, a directory or
    marker owned by someone untrusted (`kvlint.ownership`) ends the search with None: another user's empty
    `setup.cfg` in a shared parent must not make a project below it "tests". `searched` as for
    `find_config_file`.
    """
    return _search_up(start, searched, _root_marked)


def _root_marked(directory: str, trusted: frozenset[int]) -> tuple[Path | None, bool]:
    """The directory itself if it holds a project's marker, and whether the search stops here (at any marker:
    one owned by someone untrusted ends it with None)."""
    markers = [os.path.join(directory, ".git")] if os.path.exists(os.path.join(directory, ".git")) else []
    markers += [path for path in (os.path.join(directory, name) for name in ("pyproject.toml", "setup.cfg"))
                if _is_regular_file(path)]
    if not markers:
        return None, False
    return (None if any(_foreign(marker, trusted) for marker in markers) else Path(directory)), True


def _search_up(
    start: Path, searched: dict[tuple[str, frozenset[int]], Path | None] | None,
    step: Callable[[str, frozenset[int]], tuple[Path | None, bool]],
) -> Path | None:
    """Walk from `start` (its directory, for a file) up to the filesystem's root, asking `step(directory,
    trusted)` for (what it found, whether the search stops there); a directory owned by someone untrusted
    stops it with None. Each directory passed, and where it stopped, shares the answer in `searched`."""
    current = os.path.abspath(start)
    if not os.path.isdir(current):
        current = os.path.dirname(current)
    trusted = trusted_owners(current)
    passed: list[tuple[str, frozenset[int]]] = []  # where the search went on or stopped: all share its answer
    found: Path | None = None
    while True:
        key = (current, trusted)
        if searched is not None and key in searched:
            found = searched[key]
            break
        passed.append(key)
        if foreign_owner(current, trusted) is not None:
            break
        found, stop = step(current, trusted)
        if stop:
            break
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    if searched is not None:
        searched.update(dict.fromkeys(passed, found))
    return found


class Searches:
    """What the configuration searches from many directories found, by directory."""

    def __init__(self) -> None:
        self.config_files: dict[tuple[str, frozenset[int]], Path | None] = {}
        self.roots: dict[tuple[str, frozenset[int]], Path | None] = {}


def source_of(directory: str, searches: Searches | None = None) -> Source | ConfigError:
    """What configures the files in `directory`, as `kvlint.config.load_config` searches for it: the nearest file
    with a kvlint section, else the project root; a file that cannot be read or parsed gives its error."""
    start = Path(directory)
    try:
        found = find_config_file(start, searches.config_files if searches is not None else None)
    except ConfigError as error:
        return error
    if found is not None:
        return "file", str(found)
    root = project_root(start, searches.roots if searches is not None else None)
    return "root", str(root) if root is not None else ""


class DirectorySources:
    """Where each directory's configuration comes from (`source_of`), found once per directory for this object's
    life. The faces that see one file at a time (flake8, mypy) keep one (through `kvlint.config.DirectoryConfigs`,
    or alone where the answer is all they need): a tree's files share a few hundred directories, and nearly all of
    them take their parent's answer.
    """

    def __init__(self) -> None:
        self._known: dict[str, Source | ConfigError] = {}  # by directory, absolute and normalised
        self._owners: dict[str, int | None] = {}  # each known directory's owner (None: not a directory)
        self._searches = Searches()  # a directory's search ends where a sibling's passed

    def of_directory(self, directory: str) -> Source | ConfigError:
        """The source of `directory`, spelled as `os.path.abspath` spells it."""
        known = self._known.get(directory)
        return known if known is not None else self._find(directory)

    def _find(self, directory: str) -> Source | ConfigError:
        """The directory's parent's source, when the directory holds none of the names either search stops at and
        has the parent's owner (both searches from it then pass it and go on exactly as from the parent, with the
        same trusted owners: `ownership.trusted_owners`), else a search of its own. Four system calls for most
        directories of a tree, rather than a dozen, and no more Python around them than they need (the mypy
        plugin asks this of each of a tree's directories at every run, a cached one too)."""
        if _POSIX:  # an absolute, normalised spelling: its parent is its text up to its last separator
            parent = directory.rpartition("/")[0] or "/"
            stem = directory + "/" if directory != "/" else directory
        else:
            parent = os.path.dirname(directory)
            stem = os.path.join(directory, "")
        owner: int | None = None
        try:
            owner = os.stat(directory).st_uid
        except OSError:
            inherits = False
        else:
            inherits = parent != directory and not (
                _access(stem + _MARKER_1, os.F_OK, effective_ids=_EFFECTIVE_IDS)
                or _access(stem + _MARKER_2, os.F_OK, effective_ids=_EFFECTIVE_IDS)
                or _access(stem + _MARKER_3, os.F_OK, effective_ids=_EFFECTIVE_IDS))
        if inherits:
            inherited = self._known.get(parent)
            if inherited is None:
                inherited = self._find(parent)
            inherits = self._owners.get(parent) == owner
        found = inherited if inherits else source_of(directory, self._searches)
        self._known[directory], self._owners[directory] = found, owner
        return found


_access = os.access
# whether a name is there, a symlink followed, as the searches' `os.stat` and `os.path.exists` see it (as this
# process's effective user): `os.access`, which answers without raising an exception for each absent name
_EFFECTIVE_IDS = os.access in os.supports_effective_ids
_POSIX = os.sep == "/" and os.altsep is None
_MARKER_1, _MARKER_2, _MARKER_3 = PROJECT_MARKERS  # what `DirectorySources._find` probes for, one by one

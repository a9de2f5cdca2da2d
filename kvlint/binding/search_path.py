"""The search path: where a module name's source is found, and the directories it is looked up in, found as
ty and mypy find them (`kvlint.binding.module_resolution` reads what it finds). Apart so that a warm run can
check that its search path is unchanged without importing what reads declarations."""

from __future__ import annotations

import os
import site
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm hook's cost)
if TYPE_CHECKING:
    from kvlint.config import Config


@dataclass
class SearchPath:
    """The directories module names are looked up in, first match wins; each answer is remembered, and each
    directory is listed once (a run asks for thousands of names, most of them in no root: `torch.nn`)."""

    roots: tuple[Path, ...] = ()
    _found: dict[str, Path | None] = field(default_factory=dict, repr=False)
    _listings: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    # read or listed beyond the lookups (the project's callers of a parked return: `caller_declarations`)
    _noted_files: list[str] = field(default_factory=list, repr=False)
    _noted_directories: list[str] = field(default_factory=list, repr=False)

    def find(self, module: str) -> Path | None:
        """The source file of a dotted module name (`a/b.py`, `a/b/__init__.py`, or the `.pyi` of either)."""
        if module in self._found:
            return self._found[module]
        found = None
        parts = module.split(".")
        if all(part.isidentifier() for part in parts):
            for root in self.roots:
                root_string = os.fspath(root)
                found = self._find_in(root_string, parts)
                if found is not None:
                    break
                top = self._listing(_join(root_string, parts[0]))
                if "__init__.py" in top or "__init__.pyi" in top:
                    break  # a regular package lives in one root: the first that has it hides the others
        self._found[module] = found
        return found

    def consulted(self) -> tuple[list[Path], list[str]]:
        """The files it found and the directories it listed so far: what its answers depend on (the result
        cache's record of a run checks that they are unchanged)."""
        found = [path for path in self._found.values() if path is not None] + [Path(p) for p in self._noted_files]
        return found, [*self._listings, *self._noted_directories]

    def note(self, files: Iterable[str], directories: Iterable[str]) -> None:
        """Files read and directories listed for this run's answers besides the lookups: consulted too."""
        self._noted_files.extend(files)
        self._noted_directories.extend(directories)

    def _find_in(self, directory: str, parts: list[str]) -> Path | None:
        for part in parts[:-1]:
            if part not in self._listing(directory):
                return None
            directory = _join(directory, part)
        last, entries = parts[-1], self._listing(directory)
        for name in (f"{last}.py", f"{last}.pyi"):
            if name in entries and os.path.isfile(_join(directory, name)):
                return Path(directory, name)
        if last in entries:
            package = _join(directory, last)
            for name in ("__init__.py", "__init__.pyi"):
                candidate = _join(package, name)
                if name in self._listing(package) and os.path.isfile(candidate):
                    return Path(candidate)
        return None

    def _listing(self, directory: str) -> frozenset[str]:
        found = self._listings.get(directory)
        if found is None:
            try:
                found = frozenset(os.listdir(directory))
            except OSError:
                found = frozenset()
            self._listings[directory] = found
        return found


def _join(directory: str, name: str) -> str:
    """`os.path.join` of a directory and a name that is no path (a module name's part): on POSIX the two with a
    `/` between (a run looks thousands of names up, `posixpath.join` was a third of it)."""
    if os.sep == "/" and directory and not directory.endswith("/"):
        return f"{directory}/{name}"
    return os.path.join(directory, name)


def top_package_root(path: Path) -> Path:
    """The directory the top-level package of a checked path sits in (`/x` for `/x/pkg/sub/mod.py` and for
    `/x/pkg`, where `pkg` and `sub` hold an `__init__.py`); a directory of no package is its own root."""
    return _package_top(_directory_of(path))


def _package_top(directory: Path) -> Path:
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        directory = directory.parent
    return directory


def _directory_of(path: Path) -> Path:
    return Path(_directory_name(path))


def _directory_name(path: Path) -> str:
    """The path itself where it is a directory, else the directory it is in: absolute."""
    absolute = os.path.abspath(path)
    return absolute if os.path.isdir(absolute) else os.path.dirname(absolute)


def first_party_roots(paths: Sequence[Path]) -> list[Path]:
    """The roots the run's own modules are found in: each path's `top_package_root` (a directory of no package
    is one, as ty tries each directory above a file that holds no `__init__.py`), then, for a path in a
    directory without one inside a regular package (`/x/pkg/ns/mod.py`, or `/x/pkg/ns`: a namespace portion),
    the directory its modules are named from (`/x`: `kvlint.source.packages_of`), so `from .checks import f`
    there is found without a project root."""
    directories = set(map(Path, {_directory_name(path) for path in paths}))  # a directory's files share its roots
    # (pre-commit names thousands of files)
    tops = sorted(set(map(_package_top, directories)))
    portions = {directory for directory in directories if not (directory / "__init__.py").is_file()}
    if not portions:
        return tops
    from kvlint.source import packages_of  # the modules' own walk; only for a path outside a regular package

    bases = {packages_of(portion)[1] for portion in portions}
    return tops + sorted(bases.difference(tops))


def environment_site_packages(python: str | None, project_root: Path | None) -> list[Path]:
    """The site-packages of the project's environment, found as ty finds it: `python` (a venv or an
    interpreter in one), else `VIRTUAL_ENV`, else a `.venv` in the project root, else kvlint's own
    interpreter's. Nothing is run: a venv's layout says where its packages are."""
    for candidate in (python, os.environ.get("VIRTUAL_ENV"),
                      str(project_root / ".venv") if project_root is not None else None):
        if not candidate:
            continue
        prefix = Path(candidate)
        if prefix.is_file():  # an interpreter: its venv or installation is two levels up (`bin/python`)
            prefix = prefix.parent.parent
        found = _site_packages_under(prefix)
        if found:
            return found
        if candidate == python:
            return []  # asked for, not there: no other environment stands in for it
    own = [Path(p) for p in (*site.getsitepackages(), site.getusersitepackages()) if os.path.isdir(p)]
    return own


def _site_packages_under(prefix: Path) -> list[Path]:
    if not prefix.is_dir():  # no venv there (a project without `.venv`): nothing to glob
        return []
    import glob

    patterns = ("lib/python3*/site-packages", "lib64/python3*/site-packages", "Lib/site-packages",
                "lib/python3*/dist-packages")  # the last: a Debian interpreter's own
    return sorted({Path(p) for pattern in patterns for p in glob.glob(str(prefix / pattern)) if os.path.isdir(p)})


def search_path_for(first_party: Iterable[Path], configured: Sequence[Path], python: str | None,
                    project_root: Path | None) -> SearchPath:
    """The run's search path: first-party roots, the project root, the configured directories, the environment."""
    roots: list[Path] = []
    for root in (*first_party, *([project_root] if project_root else []), *configured,
                 *environment_site_packages(python, project_root)):
        resolved = Path(os.path.realpath(root))
        if resolved not in roots and resolved.is_dir():
            roots.append(resolved)
    return SearchPath(tuple(roots))


def run_search_path(config: Config, paths: Sequence[Path]) -> SearchPath:
    """The search path of a run over `paths`: their package roots, the project's root, then `search_path_for`."""
    from kvlint.config import project_root  # the config layer reads the binder: imported here, not at the top

    first_party = first_party_roots(paths)
    root = project_root(paths[0]) if paths else None
    return search_path_for(first_party, [Path(p) for p in config.search_path], config.python or None, root)

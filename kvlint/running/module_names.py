"""The dotted module name of each file of a run (`kvlint.source.module_name_for`), with what a directory says
worked out once for all its files.

`module_name_for` resolves the file's path (an `lstat` per component) and looks for `__init__.py` in each
package above it (`packages_of`, a namespace portion's too): 40 us a file, as much as reading and parsing a
small one. A file that is not a symlink resolves to its directory's resolved path and its own name, so the
directory's packages are looked up once; a symlinked file (or a name such as `..`) is resolved on its own,
as `module_name_for` does.
"""

from __future__ import annotations

import os
from pathlib import Path

from kvlint.source import module_name_for, packages_of


class ModuleNames:
    """`module_name_for` for the files of one run: the packages above each directory are looked up once (a
    run reads a tree as it is; a long-lived host makes a new one per run)."""

    def __init__(self) -> None:
        self._packages: dict[str, tuple[str, ...]] = {}  # a directory as the paths give it -> its packages

    def __call__(self, path: Path | str) -> tuple[str, bool]:
        text = os.fspath(path)
        directory, name = os.path.split(text)
        if name in ("", os.curdir, os.pardir) or os.path.islink(text):
            return module_name_for(Path(text))
        packages = self._packages.get(directory)
        if packages is None:
            packages = self._packages[directory] = _packages_of(directory)
        stem = _stem(name)
        if stem == "__init__":
            return ".".join(packages), True
        return ".".join((*packages, stem)), False


def _stem(name: str) -> str:
    """`Path(name).stem`: the name without its last suffix (a leading or trailing dot is no suffix)."""
    dot = name.rfind(".")
    return name[:dot] if 0 < dot < len(name) - 1 else name


def _packages_of(directory: str) -> tuple[str, ...]:
    """The packages a file of `directory` is in, outermost first, as `module_name_for` finds them."""
    return packages_of(Path.cwd().joinpath(directory).resolve())[0]

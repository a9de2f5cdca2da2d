"""The package's layout: the map of "How it is built" (docs/design.md) names every module and nothing that is gone,
no module imports itself back through others, and an underscore-private name is imported only inside its folder."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "kvlint"
MAP = ROOT / "docs" / "design.md"  # the module map moved there from the README (issue 28)
_CODE = re.compile(r"`([^`\n]+)`")
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


def module_files() -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a folder's `__init__.py` under the folder's name)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def map_rows() -> list[tuple[list[str], str]]:
    """(the paths of the first cell, the second cell) of each row of the module map."""
    text = MAP.read_text()
    section = text[text.index("\n## How it is built\n"):]
    section = section[:section.index("\n## ", 2)] if "\n## " in section[2:] else section
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `kvlint/"):
            continue
        first, second = line.strip("|").split("|", 1)
        rows.append((_CODE.findall(first), second))
    return rows


def mapped_modules() -> tuple[set[Path], list[str]]:
    """The files the map names, and what it names that is not in the tree."""
    named: set[Path] = set()
    missing = []
    for paths, holds in map_rows():
        for path in paths:
            target = ROOT / path
            if not target.exists():
                missing.append(path)
            elif path.endswith("/"):
                for word in _CODE.findall(holds):
                    if "*" in word and word.endswith(".py") and "/" not in word:  # a family of modules, e.g. rules
                        matched = set(target.glob(word))
                        named |= matched
                        missing += [] if matched else [f"{path}{word}"]
                    if not _IDENTIFIER.match(word):
                        continue
                    module = target / f"{word}.py"
                    if module.is_file():
                        named.add(module)
                    else:
                        missing.append(f"{path}{word}.py")
            else:
                named.add(target)
    return named, missing


def test_the_map_names_every_module() -> None:
    named, _ = mapped_modules()
    unnamed = [
        path.relative_to(ROOT).as_posix() for path in sorted(PACKAGE.rglob("*.py"))
        if path not in named and not (path.name == "__init__.py" and path.parent != PACKAGE)
    ]
    assert unnamed == [], "add these modules to the map in docs/design.md (## How it is built)"


def test_the_map_names_nothing_that_is_gone() -> None:
    _, missing = mapped_modules()
    assert missing == []


def test_the_map_is_read_whole() -> None:
    """The section read is the map itself, a row per folder and per module of kvlint/ (none lost by the move)."""
    assert len(map_rows()) >= 15
    assert "## How it is built" not in (ROOT / "README.md").read_text(), "one map, in docs/design.md"


def _imports(path: Path, modules: dict[str, Path]) -> list[tuple[str, tuple[str, ...], int]]:
    """(module imported, names taken from it, line) for each import of kvlint in `path`, at any depth, but not
    under `if TYPE_CHECKING:` (those never run)."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for statement in node.body for child in ast.walk(statement))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, (), node.lineno) for alias in node.names if alias.name.startswith("kvlint.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("kvlint"):
            assert node.module is not None
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in modules:
                    found.append((submodule, (), node.lineno))
                else:
                    found.append((node.module, (alias.name,), node.lineno))
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imported, _, _ in _imports(path, modules):
            if imported in modules and imported != "kvlint":  # every module's parent package runs first anyway
                graph[name].add(imported)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), and the modules importing themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for neighbour in sorted(graph[node]):
            if neighbour not in index:
                visit(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in on_stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _folder(path: Path) -> Path:
    return path.parent


def private_imports_across_folders() -> list[str]:
    modules = module_files()
    crossing = []
    for path in modules.values():
        for imported, names, line in _imports(path, modules):
            source = modules.get(imported)
            for name in names:
                if name.startswith("_") and not name.startswith("__") and (
                    source is None or _folder(source) != _folder(path)
                    or source.name == "__init__.py" and source.parent != path.parent
                ):
                    crossing.append(f"{path.relative_to(ROOT)}:{line}: {name} from {imported}")
    return crossing


def test_no_private_name_is_imported_from_another_folder() -> None:
    assert private_imports_across_folders() == []

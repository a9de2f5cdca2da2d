"""`kvlint.running.module_names`: the run's module names are `module_name_for`'s, a directory looked up once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kvlint.running import module_names
from kvlint.running.module_names import ModuleNames
from kvlint.source import module_name_for


def _tree(root: Path) -> list[Path]:
    """Packages, a namespace directory, odd names, a symlinked file and a symlinked directory."""
    files = [
        "pkg/__init__.py", "pkg/mod.py", "pkg/sub/__init__.py", "pkg/sub/deep.py", "pkg/sub/a.b.py",
        "pkg/sub/.hidden.py", "pkg/sub/trailing.", "ns/plain.py", "ns/inner/__init__.py", "ns/inner/x.pyi",
        "top.py", "other/__init__.py", "other/target.py", "pkg/portion/mod.py", "pkg/portion/deeper/leaf.py",
        "pkg/portion/inner/__init__.py", "pkg/portion/inner/y.py", "ns/bad-name/z.py",
        "outer/__init__.py", "outer/project/pyproject.toml", "outer/project/tool.py",
    ]
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    (root / "pkg" / "linked.py").symlink_to(root / "other" / "target.py")  # named as where it points
    (root / "pkg" / "dirlink").symlink_to(root / "other", target_is_directory=True)
    return [root / name for name in files] + [root / "pkg" / "linked.py", root / "pkg" / "dirlink" / "target.py"]


def test_every_file_gets_module_name_for_s_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _tree(tmp_path)
    monkeypatch.chdir(tmp_path / "pkg")
    names = ModuleNames()
    spellings = []
    for path in files:
        relative = Path(os.path.relpath(path, tmp_path / "pkg"))
        spellings += [path, relative, Path("..") / "pkg" / ".." / path.relative_to(tmp_path)]
    for path in spellings:
        assert names(path) == module_name_for(path), path
    assert names(tmp_path / "pkg" / "linked.py") == ("other.target", False)
    assert names(tmp_path / "pkg" / "sub" / "__init__.py") == ("pkg.sub", True)
    assert names(tmp_path / "ns" / "plain.py") == ("plain", False)


def test_a_directory_without_init_inside_a_package_is_a_namespace_portion_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As mypy, ty and pyright name it: `pkg/portion/mod.py` is `pkg.portion.mod` (PEP 420), at any depth, so a
    relative import there names a module of `pkg`. A regular package keeps its name (`inner` in the portion is
    `inner`); the crawl stops at a name that is no identifier and at a project's root, and a directory that no
    regular package holds still names its modules by their file alone."""
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    expected = {
        "pkg/portion/mod.py": ("pkg.portion.mod", False),
        "pkg/portion/deeper/leaf.py": ("pkg.portion.deeper.leaf", False),
        "pkg/portion/inner/y.py": ("inner.y", False),
        "pkg/portion/inner/__init__.py": ("inner", True),
        "ns/bad-name/z.py": ("z", False),
        "outer/project/tool.py": ("tool", False),
    }
    names = ModuleNames()
    for relative, name in expected.items():
        assert module_name_for(Path(relative)) == name, relative
        assert names(Path(relative)) == name, relative
        assert names(tmp_path / relative) == name, relative
    from kvlint.binding.search_path import first_party_roots

    assert first_party_roots([Path("pkg/portion/deeper/leaf.py")]) == [tmp_path / "pkg/portion/deeper", tmp_path]
    assert first_party_roots([Path("pkg/portion")]) == [tmp_path / "pkg/portion", tmp_path]
    assert first_party_roots([Path("pkg/sub/deep.py"), Path("ns/plain.py")]) == [tmp_path, tmp_path / "ns"]


def test_a_directory_is_looked_up_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    calls: list[str] = []
    original = module_names._packages_of
    monkeypatch.setattr(module_names, "_packages_of", lambda directory: calls.append(directory) or original(directory))
    names = ModuleNames()
    for name in ("mod.py", "__init__.py", "mod.py", "sub/deep.py", "sub/a.b.py"):
        names(tmp_path / "pkg" / name)
    assert calls == [str(tmp_path / "pkg"), str(tmp_path / "pkg" / "sub")]
    names(tmp_path / "pkg" / "linked.py")  # a symlink is resolved on its own, never from its directory's entry
    assert len(calls) == 2

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
        "top.py", "other/__init__.py", "other/target.py",
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

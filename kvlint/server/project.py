"""The tree index of a workspace folder, as `kvlint check FOLDER` builds it, kept up to date file by file.

Built once in the background from every Python file under the folder that the
configuration does not exclude; a saved (created, deleted) file is read again
on its own and the index merged anew, so a change in one file reaches the open
files that call it. A document whose unsaved text declares something else than
its saved file is analysed against the index with its text in the file's place.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kvlint.byte_scan import mentions_any
from kvlint.config import Config
from kvlint.binding.declarations import Declaration
from kvlint.running.discovery import (
    PYTHON_SUFFIXES,
    SourceFile,
    UnreadablePath,
    is_skipped_directory,
    iter_python_files,
    read_source,
)
from kvlint.engine import PreparedFile, prepare_source
from kvlint.source import module_name_for
from kvlint.binding.module_resolution import ImportsRead, imported_declarations_for
from kvlint.running.runner import build_index
from kvlint.binding.tree_index import TreeIndex, caller_names
from kvlint.binding.words import word_mentions


@dataclass(frozen=True)
class IndexedFile:
    """What one file gives the tree index, as the runner reads it: a file the byte scan keeps gives its
    declarations and text; any other file, its bytes (searched for callers and connector callees)."""

    path: Path
    scanned: bool  # it mentions a configured name
    declarations: tuple[Declaration, ...] = ()
    text: str = ""
    data: bytes = b""
    signature: tuple[int, int] | None = None  # (mtime_ns, size) of the file read; None for a buffer

    @classmethod
    def of(cls, source: bytes | str, path: Path, config: Config, signature: tuple[int, int] | None = None
           ) -> IndexedFile:
        if not mentions_any(source, config.names()):
            return cls.skipped(source, path, signature)
        module_name, is_package = module_name_for(path)
        return cls.scanned_file(prepare_source(source, str(path), config, module_name, is_package), path, signature)

    @classmethod
    def skipped(cls, source: bytes | str, path: Path, signature: tuple[int, int] | None = None) -> IndexedFile:
        """A file the byte scan skips (it mentions no configured name)."""
        data = source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass")
        return cls(path, False, data=data, signature=signature)

    @classmethod
    def scanned_file(cls, prepared: PreparedFile, path: Path, signature: tuple[int, int] | None = None
                     ) -> IndexedFile:
        """A file the byte scan keeps, from its cheap stage (`engine.prepare_source`)."""
        return cls(path, True, tuple(prepared.declarations), prepared.text, signature=signature)


def tree_index(files: Iterable[IndexedFile], config: Config, root: Path | None = None) -> TreeIndex:
    """The tree index `kvlint check` builds from these files (`runner.build_index`); `root`, the workspace
    folder they are all of (`kvlint check ROOT`), else they are checked as the files they are."""
    files = list(files)
    declarations = [entry for file in files if file.scanned for entry in file.declarations]
    skipped = [(SourceFile(os.fspath(file.path), str(file.path)), file.data) for file in files if not file.scanned]
    texts = [file.text for file in files if file.scanned]
    paths = [file.path for file in files if file.scanned]
    read_imports = functools.partial(imported_declarations_for, declarations, config, paths, memo=ImportsRead(),
                                     covered=[root] if root is not None else None)
    return build_index(declarations, skipped, config, texts, read_imports)[0]


def index_key(index: TreeIndex | None) -> object:
    """What the open files' reports depend on in an index: when it is unchanged, nothing needs a re-check."""
    if index is None:
        return None
    return index.key(), sorted(index.candidate_names())


def _signature(path: Path | str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


class ProjectIndex:
    """The tree index of one workspace folder under one configuration."""

    def __init__(self, root: Path, config: Config):
        self.root = root
        self.config = config
        self.files: dict[str, IndexedFile] = {}  # absolute path -> what it gives the index
        self.index: TreeIndex | None = None  # None until the first build is done
        self._lock = threading.Lock()
        self._overlays: dict[str, tuple[IndexedFile, TreeIndex]] = {}  # per document: its buffer's index
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Stop a build of this index that is running or waiting: its folder is gone, its configuration
        changed, or the server is exiting. The build checks before each file; a cancelled index stays
        unbuilt."""
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def covers(self, path: Path) -> bool:
        """The file is one `kvlint check ROOT` would check: a Python file under the root, in no directory the
        walk skips (`.venv`, `build`, a virtualenv, ...) and not excluded."""
        absolute = os.path.abspath(path)
        root = os.path.abspath(self.root)
        if not absolute.startswith(root.rstrip(os.sep) + os.sep) or not absolute.endswith(PYTHON_SUFFIXES):
            return False
        directory = root
        for name in Path(os.path.relpath(absolute, root)).parts[:-1]:
            directory = os.path.join(directory, name)
            if is_skipped_directory(directory, name):
                return False
        return not self.config.is_excluded(Path(absolute))

    def build(self) -> None:
        """Read every file (again); a file whose size and time did not change is not parsed again."""
        known = self.files
        files: dict[str, IndexedFile] = {}
        for entry in iter_python_files([self.root], self.config):
            if self._cancelled.is_set():  # a cancellation point per file: `/` as a folder is a million of them
                return
            if isinstance(entry, UnreadablePath):
                continue
            key = os.path.abspath(entry.location)
            signature = _signature(entry.location)
            previous = known.get(key)
            if previous is not None and signature is not None and previous.signature == signature:
                files[key] = previous
                continue
            try:
                data = read_source(entry.location)
            except OSError:
                continue
            files[key] = IndexedFile.of(data, Path(key), self.config, signature)
        if self._cancelled.is_set():
            return
        index = tree_index(files.values(), self.config, self.root)
        with self._lock:
            self.files, self.index = files, index
            self._overlays.clear()

    def update(self, paths: Iterable[Path]) -> bool:
        """Read these saved, created or deleted files again; return whether the index changed."""
        files = dict(self.files)
        touched = False
        for path in paths:
            if self._cancelled.is_set():
                return False
            key = os.path.abspath(path)
            if not self.covers(Path(key)):
                continue
            touched = True
            signature = _signature(Path(key))
            try:
                data = read_source(Path(key)) if signature is not None else None
            except OSError:
                data = None
            if data is None:
                files.pop(key, None)
            else:
                files[key] = IndexedFile.of(data, Path(key), self.config, signature)
        if not touched or self.index is None:
            return False
        index = tree_index(files.values(), self.config, self.root)
        changed = index_key(index) != index_key(self.index)
        with self._lock:
            self.files, self.index = files, index
            self._overlays.clear()
        return changed

    def index_for(self, own: IndexedFile) -> TreeIndex | None:
        """The index a document is analysed against: this folder's, with the document's buffer in its file's
        place where that makes a difference; None before the first build."""
        with self._lock:
            index, files = self.index, self.files
        if index is None:
            return None
        key = os.path.abspath(own.path)
        saved = files.get(key)
        if saved is not None and _gives_the_same(saved, own, index, self.config):
            return index
        overlay = self._overlays.get(key)
        if overlay is not None and _gives_the_same(overlay[0], own, overlay[1], self.config):
            return overlay[1]  # the next keystroke in a signature being edited, or in a file not saved yet
        index = tree_index([*(file for path, file in files.items() if path != key), own], self.config, self.root)
        with self._lock:
            if self.files is files:
                self._overlays[key] = (own, index)
        return index


def _gives_the_same(saved: IndexedFile, own: IndexedFile, index: TreeIndex, config: Config) -> bool:
    """Whether the index built with `own` in place of `saved` is `index` (most edits change no declaration)."""
    if saved.scanned != own.scanned:
        return False
    callees = index.counted_names()
    if saved.scanned:
        if saved.declarations != own.declarations:
            return False
        return saved.text == own.text or _mentions(saved.text, callees) == _mentions(own.text, callees)
    if saved.data == own.data:
        return True
    return _skipped_traits(saved.data, index, config, callees) == _skipped_traits(own.data, index, config, callees)


@functools.lru_cache(maxsize=16)  # a saved file's text is the same object from one keystroke to the next
def _mentions(text: str, names: tuple[str, ...]) -> Counter[str]:
    """How often each name is a word of the text, less its definitions (`TreeIndex.path_only_callees`)."""
    return +word_mentions(text, names)  # (without the names it never mentions, as the counts compare)


def _skipped_traits(data: bytes, index: TreeIndex, config: Config, callees: tuple[str, ...]) -> object:
    """What the index reads of a file the byte scan skipped: whether it calls an Optional-returning function,
    and which connector callee candidates it names."""
    caller = bool(caller_names(index, config)) and mentions_any(data, caller_names(index, config))
    return caller, frozenset(name for name in callees if name.encode() in data)

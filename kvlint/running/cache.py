"""An opt-in cache of per-file results, keyed by content, for runs that repeat (docs/design.md, "Why it is fast").

Nothing is written unless the user names a directory (`--cache-dir DIR` or
`KVLINT_CACHE_DIR`). An entry holds what a file contributes to the tree index
(its function entries) and its report, and is keyed by everything the result
depends on: the file's bytes, its display path and module name, the whole
configuration, kvlint's own sources, Python's and libcst's versions. A report
also depends on the rest of the tree through the index, so it is reused only
while the index is unchanged. Entries are JSON (never pickle: a cache
directory may be shared), written atomically; an entry that cannot be read
or decoded is a miss, never an error.

Only its owner can steer the cache (`kvlint.running.private_dir`): no symlink is
followed below the named directory, entries and directories owned by someone
else or writable by others are not used, a shared directory gets a per-user
subdirectory. An entry is at most `ENTRY_LIMIT` bytes and is checked field by
field when decoded. When a run has written entries and the cache holds more
than its size bound (`KVLINT_CACHE_MAX_MB`, default 256), the least recently
used entries are removed; `kvlint cache clean` removes it all.

A file's bytes are known by their `content_digest`; which files are unchanged since the last run with the
same command line, so that they need not be read at all, is the run record's business
(`kvlint.running.run_record`, kept in this cache's `runs/`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvlint.config import Config
from kvlint.running.codec import report_from_json, report_to_json, string
from kvlint.running.private_dir import PrivateDir, UntrustedDirectory
from kvlint.running.run_record import CACHE_FORMAT, salt
from kvlint.rules import INTERNAL_ERROR
from kvlint.binding.declarations import Declaration, declaration_from_json

if TYPE_CHECKING:
    from kvlint.binding.tree_index import TreeIndex
    from kvlint.engine import FileReport

__all__ = ["CACHE_FORMAT", "CachedFile", "ResultCache", "clean", "content_digest", "size_limit"]
_TAG = (  # https://bford.info/cachedir/: backup tools skip a directory holding this file
    "Signature: 8a477f597d28d172789f06886806bc55\n# a cache directory written by kvlint\n"
)


def content_digest(data: bytes) -> str:
    """The digest a file's bytes are known by (in its entry's key and in the run's record)."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class CachedFile:
    """A cache entry: the file's index entries, and its report with the index it was made with."""

    declarations: list[Declaration]
    index_key: str
    report: dict[str, Any]  # decoded only when the index still matches


ENTRY_LIMIT = 64 * 2**20  # bytes: a larger entry is neither written nor read
SIZE_LIMIT_ENV = "KVLINT_CACHE_MAX_MB"  # the size bound pruning keeps the cache under
DEFAULT_SIZE_LIMIT_MB = 256


class ResultCache:
    """Per-file entries under `directory`; `hits` counts the reports reused in this run."""

    def __init__(self, directory: Path, config: Config, everything: bool = False):
        self.directory = Path(directory)
        self.salt = salt(config, everything)
        self.hits = 0
        self.written = 0
        self.problem = ""  # why the cache could not be used or written, once
        self._store: PrivateDir | None = None  # kvlint-vN, opened at first use
        self._buckets: dict[str, PrivateDir] = {}  # the two-hex-digit subdirectories opened so far

    def file_key(self, display_path: str, module_name: str, is_package: bool, data: bytes | None,
                 digest: str | None = None) -> str:
        """The key of one file's entry: from its bytes, or from their `content_digest` when known."""
        digest = digest if digest is not None else content_digest(data or b"")
        material = json.dumps([self.salt, display_path, module_name, is_package, digest])
        return hashlib.sha256(material.encode()).hexdigest()

    @staticmethod
    def index_key(index: TreeIndex, extra_names: tuple[str, ...]) -> str:
        """What a report depends on beyond its own file."""
        facts = [index.key(), list(extra_names)]
        return hashlib.sha256(json.dumps(facts).encode()).hexdigest()

    def recall(self, key: str) -> CachedFile | None:
        """The entry for `key`, or None when there is none or it fails any check."""
        bucket = self._bucket(key[:2])
        if bucket is None:
            return None
        data = bucket.read(f"{key[2:]}.json", ENTRY_LIMIT)
        if data is None:
            return None
        try:
            entry = json.loads(data)
            declarations = [declaration_from_json(item) for item in entry["declarations"]]
            cached = CachedFile(declarations, string(entry["index"]), dict(entry["report"]))
        except Exception:  # noqa: BLE001 - damaged, too deep (RecursionError), out of range: a miss
            return None
        return cached

    def report(self, cached: CachedFile, index_key: str) -> FileReport | None:
        """The entry's report if it was made with this index, else None."""
        if cached.index_key != index_key:
            return None
        try:
            report = report_from_json(cached.report)
        except Exception:  # noqa: BLE001 - any field of the wrong type or out of range: a miss
            return None
        self.hits += 1
        return report

    def recall_declarations(self, key: str) -> list[Declaration] | None:
        """The declarations stored for `key` by `remember_declarations` (a module read for its declarations only)."""
        cached = self.recall(key)
        return cached.declarations if cached is not None else None

    def remember_declarations(self, key: str, declarations: list[Declaration]) -> None:
        from kvlint.engine import FileReport

        self.remember(key, declarations, "", FileReport("<declarations>"))

    def remember(self, key: str, declarations: list[Declaration], index_key: str, report: FileReport) -> None:
        """Store a file's entry; a report of an internal error (KVC902) is not kept: the next run retries it."""
        if self.problem or any(f.code == INTERNAL_ERROR for f in report.findings):
            return
        entry = {
            "declarations": [d.to_json() for d in declarations],
            "index": index_key,
            "report": report_to_json(report),
        }
        data = json.dumps(entry, separators=(",", ":")).encode()
        if len(data) > ENTRY_LIMIT:
            return
        bucket = self._bucket(key[:2])
        if bucket is None:
            return
        try:
            bucket.write(f"{key[2:]}.json", data)
            self.written += 1
        except OSError as exc:
            self._failed(exc)

    def prune(self, limit: int | None = None) -> int:
        """Remove the least recently used entries while the cache is over `limit` bytes; return how many."""
        limit = size_limit() if limit is None else limit
        store = self._open()
        if store is None:
            return 0
        entries: list[tuple[float, int, str, str]] = []
        total = 0
        try:
            for name, status in store.entries():
                if (len(name) != 2 and name != "runs") or not stat.S_ISDIR(status.st_mode):
                    continue
                bucket = self._bucket(name)
                if bucket is None:
                    continue
                for entry, entry_status in bucket.entries():
                    if stat.S_ISREG(entry_status.st_mode):
                        total += entry_status.st_size
                        entries.append((entry_status.st_mtime, entry_status.st_size, name, entry))
        except OSError:
            return 0
        removed = 0
        for _, size, name, entry in sorted(entries):
            if total <= limit:
                break
            with contextlib.suppress(OSError):
                self._buckets[name].remove(entry)
                total -= size
                removed += 1
        return removed

    def close(self) -> None:
        """Close the directories this cache holds open."""
        for bucket in self._buckets.values():
            bucket.close()
        self._buckets.clear()
        if self._store is not None:
            self._store.close()
            self._store = None

    def runs(self) -> PrivateDir | None:
        """The directory of run records (`kvlint.running.run_record`), made on first use."""
        return self._bucket("runs")

    def _open(self) -> PrivateDir | None:
        """The directory of this cache format, made on first use with a CACHEDIR.TAG and a .gitignore."""
        if self._store is not None or self.problem:
            return self._store
        try:
            with PrivateDir.open_named(self.directory) as named:
                fresh = f"kvlint-v{CACHE_FORMAT}" not in {name for name, _ in named.entries()}
                self._store = named.subdirectory(f"kvlint-v{CACHE_FORMAT}")
        except OSError as exc:
            self._failed(exc)
            return None
        if fresh:
            with contextlib.suppress(OSError):
                self._store.write("CACHEDIR.TAG", _TAG.encode())
                self._store.write(".gitignore", b"# written by kvlint\n*\n")
        return self._store

    def _bucket(self, name: str) -> PrivateDir | None:
        if name not in self._buckets:
            store = self._open()
            if store is None:
                return None
            try:
                self._buckets[name] = store.subdirectory(name)
            except OSError as exc:
                self._failed(exc)
                return None
        return self._buckets[name]

    def _failed(self, exc: OSError) -> None:
        if isinstance(exc, UntrustedDirectory):
            self.problem = str(exc)
        else:
            where = exc.filename if isinstance(exc.filename, str) and exc.filename.startswith("/") else self.directory
            self.problem = f"{where}: {(exc.strerror or str(exc)).lower()}"


def size_limit() -> int:
    """The size bound of a cache in bytes: `KVLINT_CACHE_MAX_MB` (MiB), default 256 MiB."""
    value = os.environ.get(SIZE_LIMIT_ENV, "").strip()
    try:
        megabytes = float(value) if value else DEFAULT_SIZE_LIMIT_MB
    except ValueError:
        megabytes = DEFAULT_SIZE_LIMIT_MB
    return max(0, int(megabytes * 2**20))


def clean(directory: Path) -> list[str]:
    """Remove every cache kvlint keeps in `directory` (each format's); return what was removed."""
    removed = []
    with PrivateDir.open_named(directory) as named:
        for name, status in list(named.entries()):
            if re.fullmatch(r"kvlint-v\d+", name) and stat.S_ISDIR(status.st_mode):
                named.remove(name)
                removed.append(os.path.join(named.shown, name))
    return removed

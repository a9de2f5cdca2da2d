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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import sys
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

import kvlint
from kvlint.config import Config
from kvlint.engine import FileReport
from kvlint.findings import Finding
from kvlint.fixing.model import Applicability, Edit, Fix
from kvlint.running.private_dir import PrivateDir, UntrustedDirectory
from kvlint.rules import INTERNAL_ERROR
from kvlint.sites import DerefTarget, SentinelUseKind, Site, SiteKind, Span
from kvlint.binding.declarations import Declaration, declaration_from_json
from kvlint.binding.tree_index import TreeIndex

CACHE_FORMAT = 7  # bump when an entry's layout changes
_TAG = (  # https://bford.info/cachedir/: backup tools skip a directory holding this file
    "Signature: 8a477f597d28d172789f06886806bc55\n# a cache directory written by kvlint\n"
)


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
        salt = {
            "format": CACHE_FORMAT,
            "kvlint": f"{kvlint.__version__}+{kvlint.source_digest()}",
            "python": sys.version,
            "libcst": _libcst_version(),
            "config": repr(config),
            "everything": everything,
        }
        self.salt = json.dumps(salt, sort_keys=True)
        self.hits = 0
        self.written = 0
        self.problem = ""  # why the cache could not be used or written, once
        self._store: PrivateDir | None = None  # kvlint-vN, opened at first use
        self._buckets: dict[str, PrivateDir] = {}  # the two-hex-digit subdirectories opened so far

    def file_key(self, display_path: str, module_name: str, is_package: bool, data: bytes) -> str:
        """The key of one file's entry."""
        digest = hashlib.sha256(self.salt.encode())
        digest.update(json.dumps([display_path, module_name, is_package]).encode() + b"\0")
        digest.update(data)
        return digest.hexdigest()

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
            cached = CachedFile(declarations, _string(entry["index"]), dict(entry["report"]))
        except Exception:  # noqa: BLE001 - damaged, too deep (RecursionError), out of range: a miss
            return None
        return cached

    def report(self, cached: CachedFile, index_key: str) -> FileReport | None:
        """The entry's report if it was made with this index, else None."""
        if cached.index_key != index_key:
            return None
        try:
            report = _report_from_json(cached.report)
        except Exception:  # noqa: BLE001 - any field of the wrong type or out of range: a miss
            return None
        self.hits += 1
        return report

    def recall_declarations(self, key: str) -> list[Declaration] | None:
        """The declarations stored for `key` by `remember_declarations` (a module read for its declarations only)."""
        cached = self.recall(key)
        return cached.declarations if cached is not None else None

    def remember_declarations(self, key: str, declarations: list[Declaration]) -> None:
        self.remember(key, declarations, "", FileReport("<declarations>"))

    def remember(self, key: str, declarations: list[Declaration], index_key: str, report: FileReport) -> None:
        """Store a file's entry; a report of an internal error (KVC902) is not kept: the next run retries it."""
        if self.problem or any(f.code == INTERNAL_ERROR for f in report.findings):
            return
        entry = {
            "declarations": [d.to_json() for d in declarations],
            "index": index_key,
            "report": _report_to_json(report),
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
                if len(name) != 2 or not stat.S_ISDIR(status.st_mode):
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


def _libcst_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("libcst")
    except metadata.PackageNotFoundError:  # pragma: no cover - libcst is a dependency
        return "unknown"


def _report_to_json(report: FileReport) -> dict[str, Any]:
    return {
        "path": report.display_path,
        "analysed": report.analysed,
        "sites": [_site_to_json(site) for site in report.sites],
        "findings": [_finding_to_json(finding) for finding in report.findings],
    }


def _report_from_json(data: dict[str, Any]) -> FileReport:
    """Decode a report, checking every field's type and range: a damaged entry must not reach the output."""
    if type(data["analysed"]) is not bool:
        raise TypeError("analysed")
    return FileReport(
        _string(data["path"]),
        sites=tuple(_site_from_json(site) for site in data["sites"]),
        findings=tuple(_finding_from_json(finding) for finding in data["findings"]),
        analysed=data["analysed"],
    )


_LARGEST_NUMBER = 2**31  # lines and columns of a file kvlint reads fit easily


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not a string: {value!r:.40}")
    return value


def _number(value: object) -> int:
    if type(value) is not int or not 0 <= value < _LARGEST_NUMBER:
        raise ValueError(f"not a line or column number: {value!r:.40}")
    return value


def _finding_to_json(finding: Finding) -> list[Any]:
    def encoded(value: object) -> object:
        if isinstance(value, Fix):
            return [value.title, value.applicability.value, [list(astuple(edit)) for edit in value.edits]]
        return value

    return [encoded(getattr(finding, f.name)) for f in fields(Finding)]


def _fix_from_json(value: object) -> Fix | None:
    if value is None:
        return None
    title, applicability, edits = value  # type: ignore[misc]
    return Fix(
        _string(title),
        Applicability(applicability),
        tuple(_edit_from_json(edit) for edit in edits),
    )


def _edit_from_json(value: list[Any]) -> Edit:
    if len(value) != 5:
        raise ValueError(f"not an edit: {value!r:.40}")
    return Edit(*map(_number, value[:4]), _string(value[4]))


def _finding_from_json(row: list[Any]) -> Finding:
    checks = {"str": _string, "int": _number, "Fix | None": _fix_from_json}
    return Finding(*(checks[f.type](value) for f, value in zip(fields(Finding), row, strict=True)))


def _optional(kind: type) -> Any:
    def check(value: object) -> object:
        return None if value is None else kind(value)
    return check


def _flag(value: object) -> bool:
    if type(value) is not bool:
        raise TypeError(f"not a boolean: {value!r:.40}")
    return value


_SITE_FIELDS: dict[str, Any] = {
    "SiteKind": SiteKind,
    "Span": lambda value: Span(*(_number(number) for number in value)),
    "str": _string,
    "bool": _flag,
    "bool | None": lambda value: None if value is None else _flag(value),
    "DerefTarget | None": _optional(DerefTarget),
    "SentinelUseKind | None": _optional(SentinelUseKind),
    "Span | None": lambda value: None if value is None else Span(*(_number(number) for number in value)),
    "tuple[str, ...]": lambda value: tuple(_string(name) for name in value),
}


def _site_to_json(site: Site) -> dict[str, Any]:
    data = {f.name: getattr(site, f.name) for f in fields(Site)}
    data["span"] = [site.span.line, site.span.column, site.span.end_line, site.span.end_column]
    if site.operand_span is not None:
        data["operand_span"] = list(astuple(site.operand_span))
    for name in ("candidates", "proven_candidates"):
        data[name] = list(data[name])
    for name in ("kind", "deref_target", "sentinel_use"):
        data[name] = data[name].value if data[name] is not None else None
    return data


def _site_from_json(data: dict[str, Any]) -> Site:
    known = {f.name: _SITE_FIELDS[f.type] for f in fields(Site)}
    return Site(**{name: known[name](value) for name, value in data.items()})

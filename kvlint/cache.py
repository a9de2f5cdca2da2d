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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import kvlint
from kvlint.atomic import write_atomic
from kvlint.config import Config
from kvlint.engine import FileReport
from kvlint.findings import Finding
from kvlint.rules import INTERNAL_ERROR
from kvlint.sites import DerefTarget, SentinelUseKind, Site, SiteKind, Span
from kvlint.declarations import Declaration, declaration_from_json
from kvlint.tree_index import TreeIndex

CACHE_FORMAT = 4  # bump when an entry's layout changes
_TAG = (  # https://bford.info/cachedir/: backup tools skip a directory holding this file
    "Signature: 8a477f597d28d172789f06886806bc55\n# a cache directory written by kvlint\n"
)


@dataclass(frozen=True)
class CachedFile:
    """A cache entry: the file's index entries, and its report with the index it was made with."""

    declarations: list[Declaration]
    index_key: str
    report: dict[str, Any]  # decoded only when the index still matches


class ResultCache:
    """Per-file entries under `directory`; `hits` counts the reports reused in this run."""

    def __init__(self, directory: Path, config: Config, everything: bool = False):
        self.root = Path(directory) / f"kvlint-v{CACHE_FORMAT}"
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
        self.problem = ""  # why the cache could not be written, once

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
        """The entry for `key`, or None when there is none or it cannot be read."""
        try:
            entry = json.loads(self._path(key).read_bytes())
            declarations = [declaration_from_json(item) for item in entry["declarations"]]
            return CachedFile(declarations, str(entry["index"]), dict(entry["report"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def report(self, cached: CachedFile, index_key: str) -> FileReport | None:
        """The entry's report if it was made with this index, else None."""
        if cached.index_key != index_key:
            return None
        try:
            report = _report_from_json(cached.report)
        except (ValueError, KeyError, TypeError):
            return None
        self.hits += 1
        return report

    def remember(self, key: str, declarations: list[Declaration], index_key: str, report: FileReport) -> None:
        """Store a file's entry; a report of an internal error (KVC902) is not kept: the next run retries it."""
        if self.problem or any(f.code == INTERNAL_ERROR for f in report.findings):
            return
        entry = {
            "declarations": [d.to_json() for d in declarations],
            "index": index_key,
            "report": _report_to_json(report),
        }
        path = self._path(key)
        try:
            if not path.parent.is_dir():
                self._create(path.parent)
            write_atomic(path, json.dumps(entry, separators=(",", ":")), durable=False)
        except OSError as exc:
            self.problem = f"{self.root}: {(exc.strerror or str(exc)).lower()}"

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key[2:]}.json"

    def _create(self, directory: Path) -> None:
        """Make an entry's directory; a new cache root gets a CACHEDIR.TAG and a .gitignore."""
        if not self.root.is_dir():
            self.root.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                write_atomic(self.root / "CACHEDIR.TAG", _TAG, durable=False)
                write_atomic(self.root / ".gitignore", "# written by kvlint\n*\n", durable=False)
        directory.mkdir(exist_ok=True)


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
        "findings": [[getattr(finding, f.name) for f in fields(Finding)] for finding in report.findings],
    }


def _report_from_json(data: dict[str, Any]) -> FileReport:
    return FileReport(
        data["path"],
        sites=tuple(_site_from_json(site) for site in data["sites"]),
        findings=tuple(Finding(*finding) for finding in data["findings"]),
        analysed=bool(data["analysed"]),
    )


def _site_to_json(site: Site) -> dict[str, Any]:
    data = {f.name: getattr(site, f.name) for f in fields(Site)}
    data["span"] = [site.span.line, site.span.column, site.span.end_line, site.span.end_column]
    for name in ("kind", "deref_target", "sentinel_use"):
        data[name] = data[name].value if data[name] is not None else None
    return data


def _site_from_json(data: dict[str, Any]) -> Site:
    data = dict(data)
    data["kind"] = SiteKind(data["kind"])
    data["span"] = Span(*data["span"])
    if data["deref_target"] is not None:
        data["deref_target"] = DerefTarget(data["deref_target"])
    if data["sentinel_use"] is not None:
        data["sentinel_use"] = SentinelUseKind(data["sentinel_use"])
    return Site(**data)

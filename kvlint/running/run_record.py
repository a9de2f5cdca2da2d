"""The record of a cached run: every file and directory it read, keyed by its status, and what it reported.

A run with a result cache (`kvlint.running.cache`) ends by writing one record for its command line (the
paths, the current directory, the configuration, kvlint's and Python's versions, the environment). It
holds, for each file, its status key `(device, inode, size, mtime_ns, ctime_ns)`, the digest of its bytes
and what the byte scans found in them; the directories discovery listed; the files and directories the
search path consulted; and the run's findings and reports. The next run with that command line:

- replays the findings without reading any file (`replay`) when every recorded status is unchanged and
  *settled*, the search path is the same, and the record has a result: ruff's warm run, one `stat` per file;
- otherwise (`kvlint.running.runner`) reads only the files whose status changed or is not settled and
  takes the others' digests and scan facts from the record; a file whose status changed is read, hashed
  and scanned again, and everything that depends on its bytes is keyed by that digest, as before.

A status is *settled* when its mtime and ctime are more than `RACY_NS` older than the start of the run
that recorded it (git's "racily clean" entries). A file written in the same timestamp tick as it was read
keeps its size, mtime and ctime (a file system with one-second or two-second timestamps, a coarse kernel
clock), so only a status from before the recording run began proves the bytes were not changed under it;
any change after that start gives a ctime at or after it, which the key sees. The ctime is in the key
because nothing but the clock sets it: `os.utime` setting an mtime back, or a checkout restoring an older
one on a reused inode, still moves it. The inode and device are those of the file read (a symlink is
followed), so a symlink pointed at another file misses. A status taken after the bytes were read is safe
for the same reason: a change in between is after the run's start.

Records live under the cache's private directory (`runs/`), so the cache's trust rules hold for them, and
they are JSON, checked field by field; anything unexpected makes the run take the ordinary path.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm hook's cost)
if TYPE_CHECKING:
    from typing import Any

    from kvlint.binding.tree_index import TreeIndex
    from kvlint.config import Config
    from kvlint.engine import FileReport
    from kvlint.findings import Finding
    from kvlint.running.private_dir import PrivateDir

CACHE_FORMAT = 9  # bump when an entry's or a record's layout changes
RACY_NS = 2 * 10**9  # a status younger than this at its recording is verified by content (FAT's 2 s ticks)
RECORD_LIMIT = 256 * 2**20


@dataclass
class RunResult:
    """Everything one run learnt, in a deterministic order."""

    reports: list[FileReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    files_found: int = 0  # files that discovery yielded (including unreadable ones)
    files_analysed: int = 0  # files that went through the flow analysis
    seconds: float = 0.0
    cache_hits: int = 0  # reports reused from the cache directory
    cache_problem: str = ""  # why results could not be stored there
    pool_problem: str = ""  # why fewer worker processes ran than asked for
    index: TreeIndex | None = None  # the tree index the files were analysed with (`--fix` analyses with it again)


def status_key(status: os.stat_result) -> list[int]:
    return [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]


def current_key(path: str) -> list[int] | None:
    """The status key of `path` now (a symlink followed), None when there is nothing there."""
    try:
        return status_key(os.stat(path))
    except (OSError, ValueError):
        return None


def settled(key: object, seen_ns: int) -> bool:
    """Whether a status key recorded by a run that started at `seen_ns` proves the bytes it stands for."""
    return isinstance(key, list) and len(key) == 5 and max(key[3], key[4]) < seen_ns - RACY_NS


def unchanged(path: str, key: object, seen_ns: int) -> bool:
    """Whether `path` still has the settled status `key` (None: still absent)."""
    if key is None:
        return current_key(path) is None
    return settled(key, seen_ns) and current_key(path) == key


def salt(config: Config, everything: bool) -> str:
    """What every cached result depends on besides its inputs: formats, versions, the whole configuration."""
    import kvlint

    facts = {
        "format": CACHE_FORMAT,
        "kvlint": f"{kvlint.__version__}+{sources_identity()}",
        "python": sys.version,
        "libcst": libcst_version(),
        "config": repr(config),
        "everything": everything,
    }
    return json.dumps(facts, sort_keys=True)


def sha256_hex(data: bytes) -> str:
    """sha256, from the interpreter's own module where it has one (OpenSSL's costs a hook 2 ms to load)."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # Python 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef]
        except ImportError:  # pragma: no cover - an interpreter built without it
            from hashlib import sha256  # type: ignore[assignment]
    return sha256(data).hexdigest()  # type: ignore[no-any-return]


def sources_identity() -> str:
    """What identifies kvlint's own sources: the status keys of its files when every one is settled (older
    than `RACY_NS` now, so that no later change can keep its key), else the digest of their bytes."""
    import kvlint

    keys: list[tuple[str, list[int]]] = []
    root = os.path.dirname(os.path.abspath(kvlint.__file__))
    stack = [root]
    start = len(root) + 1
    try:
        while stack:
            directory = stack.pop()
            with os.scandir(directory) as listing:
                for entry in listing:
                    if entry.name.endswith(".py"):
                        keys.append((entry.path[start:], status_key(entry.stat())))
                    elif entry.name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
    except OSError:
        keys = []
    import time

    before = time.time_ns() - RACY_NS
    if keys and all(max(key[3], key[4]) < before for _, key in keys):
        return "status:" + sha256_hex(repr([root, sorted(keys)]).encode())[:32]
    return "content:" + kvlint.source_digest()


def libcst_version() -> str:
    """libcst's version from its distribution's metadata directory on `sys.path` (as `importlib.metadata`
    finds it, without importing that: it costs a hook more than the rest of a warm run)."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or os.curdir)
        except OSError:
            continue
        found = sorted(name for name in names
                       if name.startswith("libcst-") and name.endswith((".dist-info", ".egg-info")))
        if found:
            return found[0][len("libcst-"):].rpartition(".")[0]
    return "unknown"


def record_material(salted: str, paths: Sequence[Path], suppress: bool) -> str:
    """What names a run's record: the command line's paths as given and where they were given from, and
    the environment the search path is found in."""
    facts = [salted, os.getcwd(), [os.fspath(p) for p in paths], [os.path.abspath(p) for p in paths], suppress,
             sys.prefix, sys.executable, os.environ.get("VIRTUAL_ENV", "")]
    return json.dumps(facts)


def record_name(material: str) -> str:
    return sha256_hex(material.encode())[:40]


class FileRow:
    """What a record holds for one file (a plain class: a warm run pays for every class it defines)."""

    __slots__ = ("path", "display_path", "key", "digest", "relevant", "undecodable", "caller", "named")

    def __init__(self, path: str, display_path: str, key: list[int], digest: str, relevant: bool,
                 undecodable: bool, caller: bool, named: list[str]):
        self.path, self.display_path, self.key, self.digest = path, display_path, key, digest
        self.relevant = relevant
        self.undecodable = undecodable  # the byte scan skipped it and it is not UTF-8: its KVC900 needs the bytes
        self.caller = caller  # a skipped file mentioning a name of `wanted`
        self.named = named  # the names of `unseen` it holds


class Record:
    """A run's record, decoded and checked (`findings` None: no result to replay)."""

    def __init__(self, seen: int, dirs: list[tuple[str, list[int] | None]], files: list[FileRow],
                 wanted: list[str], unseen: list[str], roots: list[str] | None,
                 externals: list[tuple[str, list[int] | None]], imports: tuple[str, list[Any]] | None,
                 findings: list[Any] | None, files_found: int, files_analysed: int, token: str):
        self.seen, self.dirs, self.files, self.wanted, self.unseen = seen, dirs, files, wanted, unseen
        self.roots, self.externals = roots, externals
        self.imports = imports  # the fingerprint of the imports asked, and the declarations found
        self.findings, self.files_found, self.files_analysed, self.token = findings, files_found, files_analysed, token

    def by_path(self) -> dict[str, FileRow]:
        return {row.path: row for row in self.files}


def read_record(runs: PrivateDir, name: str, material: str) -> Record | None:
    data = runs.read(f"{name}.json", RECORD_LIMIT)
    if data is None:
        return None
    try:
        entry = json.loads(data)
        if entry["material"] != material:
            return None
        result = entry["result"]
        imports = entry["imports"]
        return Record(
            seen=_integer(entry["seen"]),
            dirs=[(_text(path), _key(key)) for path, key in entry["dirs"]],
            files=[FileRow(_text(r[0]), _text(r[1]), _key_required(r[2]), _text(r[3]), _flag(r[4]), _flag(r[5]),
                           _flag(r[6]), [_text(n) for n in r[7]]) for r in entry["files"]],
            wanted=[_text(n) for n in entry["wanted"]],
            unseen=[_text(n) for n in entry["unseen"]],
            roots=None if entry["roots"] is None else [_text(r) for r in entry["roots"]],
            externals=[(_text(path), _key(key)) for path, key in entry["externals"]],
            imports=None if imports is None else (_text(imports[0]), list(imports[1])),
            findings=None if result is None else list(result["findings"]),
            files_found=0 if result is None else _integer(result["files_found"]),
            files_analysed=0 if result is None else _integer(result["files_analysed"]),
            token=_text(entry["token"]),
        )
    except Exception:  # noqa: BLE001 - damaged, too deep, a field of the wrong type: no record
        return None


def write_record(runs: PrivateDir, name: str, material: str, record: Record, reports: list[Any] | None) -> None:
    """Write the record (and, beside it, its reports for the faces that need them) atomically."""
    rows = [[r.path, r.display_path, r.key, r.digest, r.relevant, r.undecodable, r.caller, r.named]
            for r in record.files]
    result = None if record.findings is None else {
        "findings": record.findings, "files_found": record.files_found, "files_analysed": record.files_analysed}
    entry = {
        "material": material, "seen": record.seen, "token": record.token,
        "dirs": [list(d) for d in record.dirs], "files": rows, "wanted": record.wanted, "unseen": record.unseen,
        "roots": record.roots, "externals": [list(e) for e in record.externals],
        "imports": None if record.imports is None else list(record.imports), "result": result,
    }
    if reports is not None:  # first, so that a record never names reports that are not there yet
        runs.write(f"{name}.reports.json", json.dumps({"token": record.token, "reports": reports},
                                                      separators=(",", ":")).encode())
    data = json.dumps(entry, separators=(",", ":")).encode()
    if len(data) <= RECORD_LIMIT:
        runs.write(f"{name}.json", data)


def open_runs(directory: Path) -> PrivateDir | None:
    """The cache's directory of records, or None when it cannot be used (the ordinary path says why)."""
    from kvlint.running.private_dir import PrivateDir

    if not os.path.isdir(directory):
        return None  # nothing is made here: the ordinary path makes the cache, tag and all
    try:
        with PrivateDir.open_named(directory) as named:
            os.stat(f"kvlint-v{CACHE_FORMAT}", dir_fd=named.fd, follow_symlinks=False)
            with named.subdirectory(f"kvlint-v{CACHE_FORMAT}") as store:
                os.stat("runs", dir_fd=store.fd, follow_symlinks=False)
                return store.subdirectory("runs")
    except OSError:
        return None


def still_true(entry: dict[str, Any], config: Config, paths: Sequence[Path]) -> bool:
    """Whether everything a recorded run read (`entry`, a record as JSON gives it) is as it was: its
    directories, files and search path. Checked on the raw rows: a warm run does little else."""
    seen = entry["seen"]
    if type(seen) is not int:
        return False
    stat = os.stat
    for path, key in entry["dirs"]:
        if not unchanged(path, key, seen):
            return False
    settled_before = seen - RACY_NS
    for row in entry["files"]:
        key = row[2]
        try:
            status = stat(row[0])
        except (OSError, ValueError, TypeError):
            return False
        if (key[3] != status.st_mtime_ns or key[4] != status.st_ctime_ns or key[2] != status.st_size
                or key[1] != status.st_ino or key[0] != status.st_dev or not max(key[3], key[4]) < settled_before
                or type(key[3]) is not int or type(key[4]) is not int):
            return False
    roots = entry["roots"]
    if roots is None:
        return True
    from kvlint.binding.search_path import run_search_path

    if [str(root) for root in run_search_path(config, paths).roots] != roots:
        return False
    return all(unchanged(path, key, seen) for path, key in entry["externals"])


def replay(paths: Sequence[Path], config: Config, directory: Path, everything: bool = False,
           reports: bool = True) -> RunResult | None:
    """The recorded result of this command line when nothing it read has changed, else None.

    `reports=False` gives the findings alone (`kvlint check` needs no more, and skips decoding the sites).
    """
    material = record_material(salt(config, everything), paths, True)
    runs = open_runs(directory)
    if runs is None:
        return None
    try:
        name = record_name(material)
        data = runs.read(f"{name}.json", RECORD_LIMIT)
        if data is None:
            return None
        entry = json.loads(data)
        outcome = entry["result"]
        if entry["material"] != material or outcome is None or not still_true(entry, config, paths):
            return None
        result = RunResult(files_found=_integer(outcome["files_found"]),
                           files_analysed=_integer(outcome["files_analysed"]))
        result.cache_hits = result.files_analysed
        if outcome["findings"]:  # "All checks passed." needs no finding's classes
            from kvlint.running.codec import finding_from_json

            result.findings = [finding_from_json(row) for row in outcome["findings"]]
        if reports:
            stored = runs.read(f"{name}.reports.json", RECORD_LIMIT)
            if stored is None:
                return None
            from kvlint.running.codec import report_from_json

            beside = json.loads(stored)
            if beside["token"] != entry["token"]:
                return None
            result.reports = [report_from_json(report) for report in beside["reports"]]
        return result
    except Exception:  # noqa: BLE001 - a damaged record or reports: the ordinary path
        return None
    finally:
        runs.close()


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _flag(value: object) -> bool:
    if type(value) is not bool:
        raise TypeError("not a boolean")
    return value


def _integer(value: object) -> int:
    if type(value) is not int or value < 0:
        raise ValueError("not a count")
    return value


def _key(value: object) -> list[int] | None:
    return None if value is None else _key_required(value)


def _key_required(value: object) -> list[int]:
    if not isinstance(value, list) or len(value) != 5 or any(type(n) is not int for n in value):
        raise ValueError("not a status key")
    return value

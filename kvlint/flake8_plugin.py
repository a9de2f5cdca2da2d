"""The flake8 face: `flake8 --select KVC` runs the engine on the text flake8 read; it analyses nothing itself.

One configuration, every face: the plugin reads `[tool.kvlint]` / `[kvlint]` like
`kvlint check` and yields only what that configuration reports (its `select`,
`ignore`, `per-file-ignores` and `exclude`). flake8's own options then apply on
top of those rows: its select/ignore/per-file-ignores and `# noqa` (which
`--disable-noqa` turns off) can drop a row, never bring back one kvlint's
configuration dropped. flake8 runs tree plugins only on files it parsed (a
syntax error is its E999). kvlint's test-code policy (`test-files`, `test-ignore`)
is applied by the engine too, so `flake8 --select KVC001` does not bring it back.

Tree index: a run on one file sees what that file declares and what its imports
reach (`kvlint.binding.module_resolution`), as `kvlint check FILE` does; stdin sees only
its own. When flake8 is given several paths or a directory, the index is built
once per process from exactly those paths, walked as `kvlint check` walks them,
so both faces give the same findings for the same arguments.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import gc
import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kvlint import __version__

if TYPE_CHECKING:
    from kvlint.config import Config, ConfigError, DirectoryConfigs
    from kvlint.binding.tree_index import TreeIndex

LOG = logging.getLogger("kvlint")
INTERNAL_ERROR = "KVC902"
Row = tuple[int, int, str, str]  # line (1-based), column (0-based), code, message


@dataclasses.dataclass(frozen=True)
class _TreeView:
    """The index of the paths flake8 was given, and the files it covers."""

    index: TreeIndex
    covered: frozenset[str]  # absolute paths


class KVLintChecker:
    """flake8 tree plugin: one instance per file, rows from the engine."""

    name = "kvlint"
    version = __version__

    _options: ClassVar[argparse.Namespace | None] = None
    _configs: ClassVar[DirectoryConfigs | None] = None
    _tree: ClassVar[dict[tuple[str, ...], _TreeView]] = {}

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        # `tree` goes unused, but its name makes flake8 run this plugin once per file
        self.lines = lines
        self.filename = filename

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        """Remember flake8's options (the paths it was given); forget what an earlier run cached."""
        cls._options = options
        cls._configs = None
        cls._tree = {}

    def run(self) -> Iterator[tuple[int, int, str, type[KVLintChecker]]]:
        """Yield flake8 rows; never raise: a failure becomes one KVC902 row and a logged warning."""
        try:
            rows = self._rows()
        except Exception as exc:  # noqa: BLE001 - a kvlint bug must not abort the flake8 run
            LOG.warning("kvlint: internal error on %s: %s: %s", self.filename, type(exc).__name__, exc)
            LOG.debug("kvlint traceback", exc_info=True)
            message = f"internal error analysing this file: {type(exc).__name__}: {exc}"
            rows = [(1, 0, INTERNAL_ERROR, " ".join(message.split())[:300])]
        for line, column, code, message in rows:
            yield line, column, f"{code} {message}", type(self)

    def _rows(self) -> list[Row]:
        from kvlint.config import ConfigError

        config = self._config()
        if isinstance(config, ConfigError):
            return [(1, 0, INTERNAL_ERROR, f"kvlint cannot run: configuration error: {config}")]
        tree = self._tree_view(config)
        extra_names = tuple(sorted(tree.index.candidate_names())) if tree else ()
        text = "".join(self.lines)
        # byte_scan.mentions_any, inlined: most files end here, before the engine is even imported (~15 ms)
        if not any(name in text for name in (*config.names(), *extra_names)):
            return []
        if config.is_excluded(Path(self.filename)):
            return []

        from kvlint.engine import analyse_prepared, prepare_source
        from kvlint.source import module_name_for
        from kvlint.binding.tree_index import file_index

        unknown = _unknown_coding_cookie(self.lines)
        if unknown is not None:  # flake8 read the file as latin-1; `kvlint check` cannot decode it: say so alike
            if not config.is_enabled("KVC900") or "KVC900".startswith(tuple(config.ignored_for(Path(self.filename)))):
                return []
            return [(1, 0, "KVC900", f"cannot decode: unknown encoding {unknown!r} in the coding cookie")]

        module_name, is_package = module_name_for(Path(self.filename))
        prepared = prepare_source(text, self.filename, config, module_name, is_package, extra_names)
        if prepared.error is not None and prepared.error.message.startswith("cannot parse"):
            return []  # flake8's E999; unreachable unless flake8 parsed what Python cannot
        covered = tree is not None and os.path.abspath(self.filename) in tree.covered
        if covered:
            index = tree.index
        else:
            from kvlint.binding.module_resolution import imported_declarations_for

            declared = list(prepared.declarations)
            if os.path.isfile(self.filename):  # not stdin: its imports are followed, as `kvlint check FILE` does
                declared += imported_declarations_for(declared, config, [Path(self.filename)])
            index = file_index(declared, [prepared.text] if prepared.relevant else [], config.payload_classes)
        # flake8 applies `# noqa` itself (so that --disable-noqa works): the engine keeps every finding but the
        # test-code policy's, and kvlint's select/ignore/per-file-ignores are applied here, flake8's own after them
        report = analyse_prepared(prepared, config, index, extra_names, suppress=False, fixes=False)
        _freeze_once()
        if report.traceback:
            LOG.warning("kvlint: internal error on %s; `kvlint check --verbose %s` shows the traceback",
                        self.filename, self.filename)
        ignored = tuple(config.ignored_for(Path(self.filename)))
        return sorted({
            (f.line, f.column, f.code, f.message) for f in report.findings
            if f.code == INTERNAL_ERROR or (config.is_enabled(f.code) and not f.code.startswith(ignored))
        })

    def _config(self) -> Config | ConfigError:
        """The configuration of this file's directory (loaded once); a bad file is logged once."""
        from kvlint.config import DirectoryConfigs

        checker = type(self)
        if checker._configs is None:
            checker._configs = DirectoryConfigs(on_error=lambda error: LOG.warning("kvlint: %s", error))
        return checker._configs.for_file(self.filename)

    def _tree_view(self, config: Config) -> _TreeView | None:
        """The index of the paths flake8 was given, built on first use; None for a one-file run."""
        paths = _given_paths(self._options)
        if not paths:
            return None
        if paths not in self._tree:
            self._tree[paths] = _build_tree_view([Path(path) for path in paths], config)
        return self._tree[paths]


def _unknown_coding_cookie(lines: Sequence[str]) -> str | None:
    """The coding cookie of the first two lines when Python knows no such codec (None otherwise)."""
    import codecs

    from kvlint.source import coding_cookie

    head = "".join(lines[:2])
    if "coding" not in head:
        return None
    cookie = coding_cookie(head.encode("latin-1", "replace"))
    if cookie is None:
        return None
    try:
        codecs.lookup(cookie)
    except LookupError:
        return cookie
    return None


def _given_paths(options: argparse.Namespace | None) -> tuple[str, ...]:
    """The paths of a many-file run (as flake8 defaults them); empty for one file or stdin."""
    if options is None:
        return ()
    paths = tuple(getattr(options, "filenames", None) or (".",))
    if len(paths) == 1 and (paths[0] == "-" or not os.path.isdir(paths[0])):
        return ()
    return tuple(path for path in paths if path != "-")


def _build_tree_view(paths: list[Path], config: Config) -> _TreeView:
    """Index every file under `paths`, as `kvlint check` does before its per-file pass."""
    from kvlint.running.runner import index_tree

    index, covered = index_tree(paths, config)
    LOG.debug("kvlint: indexed %d files under %s", len(covered), ", ".join(map(str, paths)))
    return _TreeView(index, covered)


def _freeze_once() -> None:
    """Move what is alive now (the engine's modules, the tree index) out of the host's garbage collections:
    every full collection of the flake8 process would rescan them (with libcst imported, as the analysis
    once was, about 2.3 s over vLLM's 3,231 files, half the plugin's cost)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.collect()
        gc.freeze()


_frozen = False

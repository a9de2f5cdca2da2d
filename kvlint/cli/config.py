"""`kvlint config`: the configuration in effect, every key, defaults included."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kvlint.cli.shared import EXIT_CLEAN, EXIT_USAGE, _load
from kvlint.config import Config


def _show_config(args: argparse.Namespace) -> int:
    """`kvlint config`: the effective configuration, as TOML, each key marked default or where it came from."""
    from kvlint.config import describe

    config = _load(args)
    if config is None:
        return EXIT_USAGE
    command_line = {key: f"--{key}" for key in ("select", "ignore") if getattr(args, key) is not None}
    if args.exclude is not None or args.extend_exclude:
        command_line["exclude"] = "--exclude" if args.extend_exclude is None else "--extend-exclude"
    command_line.update({key: f"--{key}" for key in ("search-path", "python")
                         if getattr(args, key.replace("-", "_"), None)})
    sys.stdout.write(describe(config, command_line, args.paths[0] if args.paths else None, _search_path(config)))
    return EXIT_CLEAN


def _search_path(config: Config) -> tuple[Path, ...]:
    """The directories a run from here looks imported modules up in, after its own files' package roots."""
    from kvlint.binding.module_resolution import search_path_for
    from kvlint.config import project_root

    root = project_root(Path(config.root or os.getcwd()))
    return search_path_for((), [Path(p) for p in config.search_path], config.python or None, root).roots

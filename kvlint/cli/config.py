"""`kvlint config`: the configuration in effect, every key, defaults included."""

from __future__ import annotations

import argparse
import sys

from kvlint.cli.shared import EXIT_CLEAN, EXIT_USAGE, _load


def _show_config(args: argparse.Namespace) -> int:
    """`kvlint config`: the effective configuration, as TOML, each key marked default or where it came from."""
    from kvlint.config import describe

    config = _load(args)
    if config is None:
        return EXIT_USAGE
    command_line = {key: f"--{key}" for key in ("select", "ignore") if getattr(args, key) is not None}
    if args.exclude is not None or args.extend_exclude:
        command_line["exclude"] = "--exclude" if args.extend_exclude is None else "--extend-exclude"
    sys.stdout.write(describe(config, command_line, args.paths[0] if args.paths else None))
    return EXIT_CLEAN

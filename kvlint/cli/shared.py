"""What `kvlint check` and `kvlint audit` share: the configuration and its command-line overrides, the cache
directory, baselines, `--output`, colour, warnings and the exit statuses."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kvlint.config import Config, ConfigError, load_config

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm hook's cost)
if TYPE_CHECKING:
    from kvlint.running.runner import RunResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143


CACHE_DIR_ENV = "KVLINT_CACHE_DIR"  # the result cache directory when --cache-dir is not given


def _load(args: argparse.Namespace) -> Config | None:
    """Load the configuration and apply the command-line overrides; None after reporting an error."""
    try:
        config = load_config(args.paths, args.config)
    except ConfigError as exc:
        sys.stderr.write(f"kvlint: {exc}\n")
        return None
    return _overrides(args, config)


def _overrides(args: argparse.Namespace, config: Config) -> Config:
    """The configuration with the command line's --select, --ignore, --exclude, --extend-exclude, --search-path and
    --python applied."""
    import dataclasses

    overrides: dict[str, object] = {}
    if getattr(args, "search_path", None):  # after the configured directories, as ty's `--extra-search-path`
        overrides["search_path"] = (*config.search_path, *(os.path.abspath(p) for p in args.search_path))
    if getattr(args, "python", None):
        overrides["python"] = os.path.abspath(args.python)
    if args.select is not None:
        overrides["select"] = args.select
    if args.ignore is not None:
        overrides["ignore"] = args.ignore
    if args.exclude is not None:  # replaces the configured exclude, as ruff's --exclude does
        overrides["exclude"] = args.exclude
    if args.extend_exclude:
        overrides["exclude"] = (*overrides.get("exclude", config.exclude), *args.extend_exclude)
    return dataclasses.replace(config, **overrides) if overrides else config


def _load_for_run(args: argparse.Namespace) -> Config | None:
    """The configuration of a `check` or `audit` run; None after reporting a usage error."""
    config = _load(args)
    if config is not None and args.verbose:
        _say_where_the_configuration_is(args, config)
    missing = [path for path in args.paths if not os.path.lexists(path)]
    for path in missing:
        sys.stderr.write(f"kvlint: {path}: no such file or directory\n")
    return None if config is None or missing else config


def _say_where_the_configuration_is(args: argparse.Namespace, config: Config) -> None:
    """--verbose: name the configuration file, saying so when it is in a parent directory, and where the
    search stopped at a directory of another user."""
    from kvlint.ownership import search_stop
    from kvlint.paths import display_path
    from kvlint.report.safe_text import printable

    start = Path(args.paths[0]) if args.paths else Path.cwd()
    directory = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(os.path.abspath(start)))
    if config.source is not None:
        where = "" if str(config.source.parent) == directory else f" (in a parent directory of {start})"
        sys.stderr.write(f"kvlint: configuration: {printable(display_path(config.source))}{where}\n")
    elif args.config is None:
        sys.stderr.write("kvlint: configuration: none found, kvlint's defaults\n")
    stop = search_stop(start) if args.config is None else None
    if stop is not None:
        sys.stderr.write(f"kvlint: configuration search stopped at {printable(stop[0])}: owned by another user "
                         f"(uid {stop[1]})\n")


def _cache_directory(args: argparse.Namespace) -> Path | None:
    """The result cache a run asked for: `--cache-dir`, else $KVLINT_CACHE_DIR, else none (nothing written)."""
    if args.cache_dir is not None:
        return Path(args.cache_dir)
    from_environment = os.environ.get(CACHE_DIR_ENV, "")
    return Path(from_environment) if from_environment else None


def _warn_about_cache(result: RunResult) -> None:
    if result.pool_problem:
        sys.stderr.write(f"kvlint: warning: {result.pool_problem}\n")
    if result.cache_problem:
        sys.stderr.write(f"kvlint: warning: results not cached: {result.cache_problem}\n")


def _print_tracebacks(result: RunResult) -> None:
    """--verbose: the traceback behind each KVC902."""
    for report in result.reports:
        if report.traceback:
            sys.stderr.write(f"--- traceback for {report.display_path}\n{report.traceback}")


def _warn_if_nothing_found(args: argparse.Namespace, files_found: int) -> None:
    if files_found == 0:
        shown = ", ".join(path.as_posix() for path in args.paths) or "."
        sys.stderr.write(f"kvlint: warning: no Python files found under {shown}\n")


def _use_color(choice: str, output: Path | None) -> bool:
    """--color: `always` and `never` as said; `auto` colours a terminal, NO_COLOR wins over FORCE_COLOR."""
    if choice != "auto":
        return choice == "always"
    if output is not None and str(output) != "-":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    return bool(os.environ.get("FORCE_COLOR")) or (sys.stdout is not None and sys.stdout.isatty())


class _UsageError(Exception):
    """A problem with the command line or a file it names: one line on stderr, exit 2."""


def _read_baseline(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    if args.baseline is None:
        return None
    from kvlint.report.baseline import Baseline, BaselineError

    try:
        return Baseline.load(args.baseline)
    except BaselineError as exc:
        raise _UsageError(str(exc)) from None


def _new_findings(args: argparse.Namespace, baseline, findings):  # type: ignore[no-untyped-def]
    """Apply --baseline / --write-baseline; return the findings to report and how many a baseline hid."""
    if args.write_baseline is not None:
        from kvlint.report.baseline import write_baseline

        try:
            count = write_baseline(args.write_baseline, findings)
        except OSError as exc:
            reason = (exc.strerror or str(exc)).lower()
            raise _UsageError(f"{args.write_baseline}: cannot write baseline: {reason}") from None
        if not getattr(args, "quiet", False):
            sys.stderr.write(f"kvlint: recorded {count} finding{'s' if count != 1 else ''} in {args.write_baseline}\n")
        return [], count  # every finding is now recorded: none is new
    if baseline is None:
        return list(findings), 0
    return baseline.new_findings(findings)


def _emit(output: Path | None, text: str) -> None:
    """Print `text`, or write it to `output` (`kvlint.atomic.write_output`)."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # a name no format escaped: never a crash
    if output is None or str(output) == "-":
        sys.stdout.write(text)
        return
    from kvlint.atomic import write_output

    try:
        write_output(output, text)
    except OSError as exc:
        raise _UsageError(f"{output}: cannot write: {(exc.strerror or str(exc)).lower()}") from None

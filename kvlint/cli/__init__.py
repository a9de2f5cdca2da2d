"""The `kvlint` command: `check`, `audit`, `config`, `rules`, `explain`, `cache`, `server`. It parses
arguments, calls the runner (or the language server), prints a format; it analyses nothing itself.

Exit status: 0 no findings, 1 findings, 2 usage or configuration error, 130 on Ctrl-C,
143 on SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from kvlint import __version__
from kvlint.cli.shared import (
    CACHE_DIR_ENV,
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    _UsageError,
)
from kvlint.config import ALL_CODES
from kvlint.report.formats import AUDIT_FORMAT_NAMES, CHECK_FORMAT_NAMES, GRAPH_TESTS
from kvlint.running.collector import collect_garbage_rarely

__all__ = ["AUDIT_FORMAT_NAMES", "CACHE_DIR_ENV", "EXIT_CLEAN", "EXIT_FINDINGS", "EXIT_INTERRUPTED", "EXIT_TERMINATED",
           "EXIT_USAGE", "build_parser", "main"]


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, with the terminal's width found as `shutil.get_terminal_size` finds it: argparse
    makes one for every option it is given, and `import shutil` (bz2, lzma) would cost each run more than a
    warm hook spends on its work."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, width if width is not None else _columns() - 2)


def _columns() -> int:
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a one-line message (it already does) and never 1."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; `only`: with that subcommand's parser alone (what a run of it needs, and all
    its output and errors say is the same: the top level's usage names no command; a parser costs each run)."""
    parser = _Parser(prog="kvlint", description="Static invariant checker for vLLM KV-connector outputs.")
    parser.add_argument("--version", action="version", version=f"kvlint {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    if only in (None, "check"):
        _add_check(commands)
    if only in (None, "audit"):
        _add_audit(commands)
    if only in (None, "rules", "config", "explain", "server", "cache"):
        _add_others(commands)
    return parser


def _add_check(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    check = commands.add_parser("check", help="report findings in files or directories (the pre-commit hook)")
    check.add_argument("--format", "--output-format", dest="format", choices=sorted(CHECK_FORMAT_NAMES),
                       default="text",
                       help="output format (default: text); --output-format is ruff's spelling")
    check.add_argument("--quiet", "-q", action="store_true",
                       help="text: print the findings only, without the summary line and warnings")
    check.add_argument("--statistics", action="store_true",
                       help="print the number of findings per code instead of the findings (text or json)")
    check.add_argument("--show-source", action="store_true", help="text: show each finding's source line")
    check.add_argument("--stdin-filename", metavar="PATH",
                       help="with `-`: the path the source read from stdin is reported, configured and ignored as")
    check.add_argument("--report-unused-noqa", action="store_true",
                       help="also report `# noqa: KVC...` codes that silence nothing (KVC100)")
    check.add_argument("--fix", action="store_true",
                       help="apply the safe fixes to the files (with `-`: print the fixed source), then report "
                       "what remains")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="also offer (with --fix, apply) the fixes that may change behaviour")
    check.add_argument("--diff", action="store_true",
                       help="print a unified diff of what --fix would change, write nothing; exit 1 if there is any")
    _add_run_options(check)


def _add_audit(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    audit = commands.add_parser("audit", help="inventory every output, connector-output read and sentinel use")
    audit.add_argument("--format", "--output-format", dest="format", choices=list(AUDIT_FORMAT_NAMES), default="text",
                       help="output format (default: text); --output-format is ruff's spelling")
    audit.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no notes on stderr")
    audit.add_argument("--base-url", metavar="URL",
                       help="markdown: link each location to URL/PATH#LLINE (default in GitHub Actions: the "
                       "checked-out commit, from GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_SHA)")
    audit.add_argument("--graph-tests", choices=GRAPH_TESTS, default="fold",
                       help="mermaid, dot: `fold` the functions of test files into one node per test directory "
                       "(default), or `expand` them, one node per function")
    _add_run_options(audit)


def _add_others(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rules = commands.add_parser("rules", help="list every rule")
    rules.add_argument("--format", choices=("text", "markdown"), default="text", help="output format (default: text)")
    config = commands.add_parser("config", help="print the configuration in effect (every key, defaults included)")
    config.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                        help="where to look for the configuration, as `check` does (default: .)")
    config.add_argument("--config", type=Path, metavar="FILE", help="read [tool.kvlint] / [kvlint] from this file")
    config.add_argument("--select", type=_codes, help="show the effect of this --select")
    config.add_argument("--ignore", type=_codes, help="show the effect of this --ignore")
    config.add_argument("--exclude", type=_patterns, metavar="PATTERNS", help="show the effect of this --exclude")
    config.add_argument("--extend-exclude", type=_patterns, metavar="PATTERNS", action="extend",
                        help="show the effect of this --extend-exclude")
    _add_search_options(config)
    explain = commands.add_parser("explain", help="print a rule's documentation")
    explain.add_argument("code", metavar="CODE")
    commands.add_parser("server", help="serve the findings to an editor: the Language Server Protocol over stdio "
                        "(needs the `server` extra)")
    cache = commands.add_parser("cache", help="manage the result cache: `kvlint cache clean` removes it")
    cache.add_argument("action", choices=("clean",), help="clean: remove every entry kvlint keeps there")
    cache.add_argument("--cache-dir", type=_directory, metavar="DIR", help="the cache (default: $KVLINT_CACHE_DIR)")


def _codes(value: str) -> tuple[str, ...]:
    codes = tuple(part.strip().upper() for part in value.replace(" ", ",").split(",") if part.strip())
    codes = tuple(ALL_CODES if code == "ALL" else code for code in codes)  # ruff's word for every code
    for code in codes:
        if not code.startswith("KVC") or not code[3:].isdigit() and code != "KVC":
            raise argparse.ArgumentTypeError(f"not a kvlint code or prefix: {code!r}")
    from kvlint.rules import unknown_selector  # the registry: only when the command line names codes

    for code in codes:
        unknown = unknown_selector(code)
        if unknown is not None:
            raise argparse.ArgumentTypeError(f"unknown code {code!r}: {unknown}")
    return codes


def _patterns(value: str) -> tuple[str, ...]:
    """Comma-separated exclude patterns; one with a `/` is anchored at the current directory."""
    patterns = tuple(part.strip() for part in value.split(",") if part.strip())
    if not patterns:
        raise argparse.ArgumentTypeError("no pattern given")
    return tuple(os.path.normpath(os.path.join(os.getcwd(), p)) if "/" in p.rstrip("/") else p.rstrip("/")
                 for p in patterns)


def _directory(value: str) -> Path:
    if not value:
        raise argparse.ArgumentTypeError("an empty path names no directory")
    return Path(value)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


class _Terminated(BaseException):
    """SIGTERM arrived: stop like Ctrl-C does (temporary files removed, no traceback)."""


def _terminate(signum: int, frame: object) -> None:
    raise _Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    collect_garbage_rarely()
    if sys.stdout is None:  # started with stdout closed (`>&-`): the exit status still tells the result
        if sys.stderr is not None:
            sys.stderr.write("kvlint: standard output is closed: the report is not shown\n")
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the rest of the process
    try:
        previous = signal.signal(signal.SIGTERM, _terminate)
    except ValueError:  # not the main thread (a caller's thread): no handler of ours
        return _main_reporting(argv)
    try:
        try:
            return _main_reporting(argv)
        finally:  # a SIGTERM once the run is over (the interpreter exiting) gets the handler the caller had
            signal.signal(signal.SIGTERM, previous)
    except _Terminated:  # it came as the run ended, before that handler was back: the run ends as terminated
        signal.signal(signal.SIGTERM, previous)
        return _terminated()


def _terminated() -> int:
    sys.stderr.write("kvlint: terminated\n")
    return EXIT_TERMINATED


def _main_reporting(argv: Sequence[str] | None) -> int:
    """`_main`, and how each way it can end is told to the user: a status and at most one line."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("kvlint: interrupted\n")
        return EXIT_INTERRUPTED
    except _Terminated:
        return _terminated()
    except BrokenPipeError:
        # stdout was closed early (`kvlint check | head`): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_CLEAN
    except Exception as exc:  # noqa: BLE001 - a kvlint bug: one line unless --verbose
        arguments = sys.argv[1:] if argv is None else list(argv)
        if "--verbose" in arguments or "-v" in arguments:
            import traceback

            traceback.print_exc()
        summary = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        sys.stderr.write(f"kvlint: internal error: {summary} (run with --verbose for the traceback)\n")
        return EXIT_USAGE


_COMMANDS = ("check", "audit")  # what a run most often is: only its parser is built


def _main(argv: Sequence[str] | None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(arguments[0] if arguments and arguments[0] in _COMMANDS else None)
    args = parser.parse_args(arguments)
    if args.command == "rules":
        from kvlint.cli.rules import _rules

        return _rules(args.format)
    if args.command == "explain":
        from kvlint.cli.rules import _explain

        return _explain(args.code)
    if args.command == "config":
        from kvlint.cli.config import _show_config

        return _show_config(args)
    if args.command == "cache":
        from kvlint.cli.cache import _clean_cache

        return _clean_cache(args)
    if args.command == "server":
        from kvlint.cli.server import serve

        return serve()
    try:
        if args.command == "check":
            from kvlint.cli.check import _check

            return _check(args)
        if args.command == "audit":
            from kvlint.cli.audit import _audit

            return _audit(args)
    except _UsageError as exc:
        sys.stderr.write(f"kvlint: {exc}\n")
        return EXIT_USAGE
    parser.print_help()
    return EXIT_USAGE


def _add_search_options(parser: argparse.ArgumentParser) -> None:
    """Where imported modules' declarations are read (`search-path`, `python`); `check`, `audit`, `config`."""
    parser.add_argument("--search-path", type=Path, metavar="DIR", action="append",
                        help="look imported modules up in DIR too, after the project's own (repeatable; e.g. the "
                        "vLLM a plugin builds on)")
    parser.add_argument("--python", metavar="PATH",
                        help="the project's environment, a venv or an interpreter in one, whose site-packages "
                        "are read for imported modules (default: $VIRTUAL_ENV, a .venv in the project root, "
                        "else kvlint's own)")


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options `check` and `audit` share."""
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or directories (default: .)")
    parser.add_argument("--select", type=_codes, help="comma-separated codes or prefixes to report")
    parser.add_argument("--ignore", type=_codes, help="comma-separated codes or prefixes not to report")
    parser.add_argument("--config", type=Path, metavar="FILE", help="read [tool.kvlint] / [kvlint] from this file")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--jobs", "-j", type=_positive, metavar="N", help="worker processes (default: CPU count)")
    parser.add_argument("--verbose", "-v", action="store_true", help="show tracebacks of internal errors")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the text report: auto (a terminal; NO_COLOR and FORCE_COLOR honoured), "
                        "always, never")
    parser.add_argument("--exclude", type=_patterns, metavar="PATTERNS",
                        help="comma-separated glob patterns not to check, replacing the configured exclude")
    parser.add_argument("--extend-exclude", type=_patterns, metavar="PATTERNS", action="extend",
                        help="comma-separated glob patterns not to check, added to the configured exclude")
    _add_search_options(parser)
    parser.add_argument("--output", "-o", type=Path, metavar="FILE",
                        help="write the report to FILE (atomically) instead of stdout")
    parser.add_argument("--cache-dir", type=_directory, metavar="DIR",
                        help="reuse and store per-file results in DIR (default: $KVLINT_CACHE_DIR; none: nothing "
                        "is written)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--baseline", type=Path, metavar="FILE", help="report only findings FILE does not record")
    group.add_argument("--write-baseline", type=Path, metavar="FILE",
                       help="record every current finding in FILE; none is then reported")

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
import threading
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint import __version__
from kvlint.collector import collect_garbage_rarely
from kvlint.config import ALL_CODES, Config, ConfigError, load_config
from kvlint.output import FORMATS
from kvlint.paths import display_path
from kvlint.rules import RULES, rules_table_markdown
from kvlint.safe_text import printable

# `kvlint audit --format`: the keys of `report_formats.AUDIT_FORMATS`, which `check` need not import
AUDIT_FORMAT_NAMES = ("text", "json", "markdown", "sarif", "mermaid", "dot")

if TYPE_CHECKING:
    from kvlint.fix_files import FileFix
    from kvlint.runner import RunResult

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143
CACHE_DIR_ENV = "KVLINT_CACHE_DIR"  # the result cache directory when --cache-dir is not given


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with a one-line message (it already does) and never 1."""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kvlint", description="Static invariant checker for vLLM KV-connector outputs.")
    parser.add_argument("--version", action="version", version=f"kvlint {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    check = commands.add_parser("check", help="report findings in files or directories (the pre-commit hook)")
    check.add_argument("--format", "--output-format", dest="format", choices=sorted(FORMATS), default="text",
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

    audit = commands.add_parser("audit", help="inventory every output, connector-output read and sentinel use")
    audit.add_argument("--format", "--output-format", dest="format", choices=list(AUDIT_FORMAT_NAMES), default="text",
                       help="output format (default: text); --output-format is ruff's spelling")
    audit.add_argument("--quiet", "-q", action="store_true", help="no progress bar and no notes on stderr")
    audit.add_argument("--base-url", metavar="URL",
                       help="markdown: link each location to URL/PATH#LLINE (default in GitHub Actions: the "
                       "checked-out commit, from GITHUB_SERVER_URL, GITHUB_REPOSITORY and GITHUB_SHA)")
    _add_run_options(audit)

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
    explain = commands.add_parser("explain", help="print a rule's documentation")
    explain.add_argument("code", metavar="CODE")
    commands.add_parser("server", help="serve the findings to an editor: the Language Server Protocol over stdio "
                        "(needs the `server` extra)")
    cache = commands.add_parser("cache", help="manage the result cache: `kvlint cache clean` removes it")
    cache.add_argument("action", choices=("clean",), help="clean: remove every entry kvlint keeps there")
    cache.add_argument("--cache-dir", type=_directory, metavar="DIR", help="the cache (default: $KVLINT_CACHE_DIR)")
    return parser


def _codes(value: str) -> tuple[str, ...]:
    codes = tuple(part.strip().upper() for part in value.replace(" ", ",").split(",") if part.strip())
    codes = tuple(ALL_CODES if code == "ALL" else code for code in codes)  # ruff's word for every code
    for code in codes:
        if not code.startswith("KVC") or not code[3:].isdigit() and code != "KVC":
            raise argparse.ArgumentTypeError(f"not a kvlint code or prefix: {code!r}")
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
    if threading.current_thread() is not threading.main_thread():
        return _main_reporting(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
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
            traceback.print_exc()
        summary = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        sys.stderr.write(f"kvlint: internal error: {summary} (run with --verbose for the traceback)\n")
        return EXIT_USAGE


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "rules":
        return _rules(args.format)
    if args.command == "explain":
        return _explain(args.code)
    if args.command == "config":
        return _show_config(args)
    if args.command == "cache":
        return _clean_cache(args)
    if args.command == "server":
        from kvlint.server import main as serve

        return serve()
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "audit":
            return _audit(args)
    except _UsageError as exc:
        sys.stderr.write(f"kvlint: {exc}\n")
        return EXIT_USAGE
    parser.print_help()
    return EXIT_USAGE


def _rules(output_format: str) -> int:
    if output_format == "markdown":
        sys.stdout.write(rules_table_markdown())
        return EXIT_CLEAN
    width = max(len(rule.name) for rule in RULES.values())
    for rule in RULES.values():
        sys.stdout.write(f"{rule.code}  {rule.name:<{width}}  {rule.summary}\n")
    sys.stdout.write(f"\n{_active_invariants()}\n")
    return EXIT_CLEAN


def _active_invariants() -> str:
    """Which invariants the rules check here (the configuration of the current directory)."""
    try:
        config = load_config([Path.cwd()])
    except ConfigError as exc:
        return f"invariants: (the configuration cannot be read: {exc})"
    shown = ", ".join(f"{i.name} ({', '.join(i.optional_fields)})" for i in config.invariants.invariants)
    origin = f"from {display_path(config.source)}" if config.source is not None else "the defaults"
    return f"invariants: {shown or 'none'} ({origin}; every rule applies to each; `kvlint config` shows their names)"


def _explain(code: str) -> int:
    rule = RULES.get(code.upper())
    if rule is None:
        sys.stderr.write(f"kvlint: unknown rule {code!r}; `kvlint rules` lists them\n")
        return EXIT_USAGE
    sys.stdout.write(rule.documentation())
    return EXIT_CLEAN


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


def _load(args: argparse.Namespace) -> Config | None:
    """Load the configuration and apply the command-line overrides; None after reporting an error."""
    try:
        config = load_config(args.paths, args.config)
    except ConfigError as exc:
        sys.stderr.write(f"kvlint: {exc}\n")
        return None
    return _overrides(args, config)


def _overrides(args: argparse.Namespace, config: Config) -> Config:
    """The configuration with the command line's --select, --ignore, --exclude and --extend-exclude applied."""
    import dataclasses

    overrides: dict[str, tuple[str, ...]] = {}
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
    from kvlint.safe_text import printable

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


def _clean_cache(args: argparse.Namespace) -> int:
    """`kvlint cache clean`: remove what kvlint keeps in the cache directory."""
    from kvlint.cache import clean

    directory = _cache_directory(args)
    if directory is None:
        sys.stderr.write(f"kvlint: no cache directory: give --cache-dir DIR or set {CACHE_DIR_ENV}\n")
        return EXIT_USAGE
    if not directory.is_dir():
        sys.stderr.write(f"kvlint: {directory}: nothing to clean (no such directory)\n")
        return EXIT_CLEAN
    try:
        removed = clean(directory)
    except OSError as exc:
        sys.stderr.write(f"kvlint: cannot clean the cache: {exc.strerror.lower() if exc.strerror else exc}\n")
        return EXIT_USAGE
    for path in removed:
        sys.stderr.write(f"kvlint: removed {path}\n")
    if not removed:
        sys.stderr.write(f"kvlint: {directory}: no kvlint cache there\n")
    return EXIT_CLEAN


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


def _check(args: argparse.Namespace) -> int:
    from kvlint.runner import run

    if any(str(path) == "-" for path in args.paths):
        return _check_stdin(args)
    if args.stdin_filename is not None:
        raise _UsageError("--stdin-filename needs `-` (standard input) as the path")
    config = _load_for_run(args)
    if config is None:
        return EXIT_USAGE
    baseline = _read_baseline(args)
    result = run(args.paths, config, jobs=args.jobs, cache_dir=_cache_directory(args))
    if not args.quiet:
        _warn_about_cache(result)
        _warn_if_nothing_found(args, result.files_found)
    reported = result.findings
    if args.report_unused_noqa:
        from kvlint.unused_noqa import unused_noqa

        config = _with_unused_noqa(config)
        raw = run(args.paths, config, jobs=args.jobs, suppress=False)
        reported = sorted([*reported, *unused_noqa(args.paths, config, raw.findings)])
    fixed = None
    if args.fix or args.diff:
        if args.report_unused_noqa:
            raise _UsageError("--report-unused-noqa cannot be combined with --fix or --diff")
        from kvlint.fix_files import fix_file, fixable_paths
        from kvlint.fixer import REJECTED, left_alone

        assert result.index is not None
        files = [
            fix_file(path, config, result.index, args.unsafe_fixes, write=not args.diff, within=args.paths)
            for path in fixable_paths(reported, args.unsafe_fixes)
        ]
        problems = {f.display_path: f.problem for f in files if f.problem}
        for shown, problem in problems.items():
            sys.stderr.write(f"kvlint: warning: {printable(shown)}: {problem}\n")
        changed = {f.display_path: f for f in files if f.changed}
        for f in changed.values():
            for left in (finding for finding in f.outcome.remaining if finding.no_fix.startswith(REJECTED)):
                sys.stderr.write(f"kvlint: warning: {printable(left.path)}:{left.line}: {left.code} {left.no_fix}\n")
        if args.diff:
            return _report_diff(args, changed.values())
        reported = sorted([
            *(finding for finding in reported if finding.path not in changed and finding.path not in problems),
            *(finding for path, problem in problems.items() for finding in left_alone(
                (finding for finding in reported if finding.path == path), problem)),
            *(finding for f in changed.values() for finding in f.outcome.remaining),
        ])
        fixed = sum(len(f.outcome.fixed) for f in changed.values())
    findings, _ = _new_findings(args, baseline, reported)
    _emit(args.output, _check_report(args, findings, fixed))
    if args.verbose:
        _print_tracebacks(result)
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _report_diff(args: argparse.Namespace, files: Iterable[FileFix]) -> int:
    """--diff: the unified diffs on stdout (or --output), `Would fix N findings.` on stderr; 1 if any diff."""
    from kvlint.fix_files import unified_diff

    files = list(files)
    _emit(args.output, "".join(unified_diff(f.display_path, f.old_text, f.outcome.text) for f in files))
    count = sum(len(f.outcome.fixed) for f in files)
    if not args.quiet:
        plural = "s" if count != 1 else ""
        sys.stderr.write(f"Would fix {count} finding{plural}.\n" if count else "No fixes to apply.\n")
    return EXIT_FINDINGS if files else EXIT_CLEAN


def _with_unused_noqa(config: Config) -> Config:
    """--report-unused-noqa asks for KVC100: a configured `select` need not name it (`ignore` still can)."""
    import dataclasses

    from kvlint.rules import UNUSED_NOQA

    return dataclasses.replace(config, select=(*config.select, UNUSED_NOQA)) if config.select else config


def _check_stdin(args: argparse.Namespace) -> int:
    """`kvlint check -`: the source on standard input, named by --stdin-filename (default `-`)."""
    from kvlint.engine import analyse_source, module_name_for

    if len(args.paths) != 1:
        raise _UsageError("`-` (standard input) cannot be combined with other paths")
    name = args.stdin_filename
    shown = Path(name) if name else Path(".")
    try:
        config = load_config([shown], args.config)
    except ConfigError as exc:
        sys.stderr.write(f"kvlint: {exc}\n")
        return EXIT_USAGE
    args.paths = []  # the overrides below read no paths
    config = _overrides(args, config)
    if args.write_baseline is not None or args.baseline is not None:
        baseline = _read_baseline(args)
    else:
        baseline = None
    if sys.stdin is None:  # started with stdin closed (`<&-`): bad input, not a kvlint bug
        raise _UsageError("standard input is closed: nothing to check (give a path, or pipe the source in)")
    try:
        data = sys.stdin.buffer.read()
    except OSError as exc:
        raise _UsageError(f"cannot read standard input: {(exc.strerror or str(exc)).lower()}") from None
    from kvlint.paths import display_path

    display = display_path(Path(name)) if name else "-"
    module_name, is_package = module_name_for(Path(name)) if name else ("", False)
    if args.fix or args.diff:
        return _fix_stdin(args, data, display, config, module_name, is_package, baseline)
    report = analyse_source(data, display, config, module_name=module_name, is_package=is_package)
    findings = list(report.findings)
    if args.report_unused_noqa:
        from kvlint.engine import analyse_prepared, decode_source, prepare_source
        from kvlint.tree_index import TreeIndex
        from kvlint.unused_noqa import unused_noqa_in_text

        config = _with_unused_noqa(config)
        prepared = prepare_source(data, display, config, module_name, is_package)
        index = TreeIndex(prepared.declarations, payload_classes=config.payload_classes)
        raw = analyse_prepared(prepared, config, index, suppress=False)
        try:
            text = decode_source(data)
        except Exception:  # noqa: BLE001 - the file's KVC900 says why
            text = ""
        findings = sorted([*findings, *unused_noqa_in_text(display, text, config, raw.findings)])
    findings, _ = _new_findings(args, baseline, findings)
    _emit(args.output, _check_report(args, findings))
    if args.verbose and report.traceback:
        sys.stderr.write(f"--- traceback for {display}\n{report.traceback}")
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def _fix_stdin(
    args: argparse.Namespace, data: bytes, display: str, config: Config, module_name: str, is_package: bool,
    baseline: object,
) -> int:
    """`kvlint check --fix -`: the fixed source on stdout (every byte of it when nothing is fixed), the
    remaining findings on stderr; `--diff -`: the diff on stdout."""
    from kvlint.engine import SourceError, decode_source
    from kvlint.fix_files import encode_like, unified_diff
    from kvlint.fixer import fix_source

    if args.report_unused_noqa:
        raise _UsageError("--report-unused-noqa cannot be combined with --fix or --diff")
    try:
        text = decode_source(data)
    except SourceError:
        text = None
    fixed_data, fixed, remaining = data, 0, None
    if text is not None:
        outcome = fix_source(text, display, config, unsafe=args.unsafe_fixes, module_name=module_name,
                             is_package=is_package)
        if outcome.refused:
            sys.stderr.write(f"kvlint: warning: {printable(display)}: {outcome.refused}\n")
            remaining = outcome.remaining  # each says why it was not fixed
        elif outcome.text != text:
            if args.diff:
                sys.stdout.write(unified_diff(display, text, outcome.text))
                count = len(outcome.fixed)
                if not args.quiet:
                    sys.stderr.write(f"Would fix {count} finding{'s' if count != 1 else ''}.\n")
                return EXIT_FINDINGS
            fixed_data, fixed, remaining = encode_like(data, outcome.text), len(outcome.fixed), outcome.remaining
    if args.diff:
        if not args.quiet:
            sys.stderr.write("No fixes to apply.\n")
        return EXIT_CLEAN
    if remaining is None:
        from kvlint.engine import analyse_source

        remaining = analyse_source(data, display, config, module_name=module_name, is_package=is_package).findings
    sys.stdout.flush()
    sys.stdout.buffer.write(fixed_data)
    sys.stdout.flush()
    findings, _ = _new_findings(args, baseline, list(remaining))
    report = _check_report(args, findings, fixed or None)
    if args.output is not None:
        _emit(args.output, report)
    else:
        sys.stderr.write(report)
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


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


def _check_report(args: argparse.Namespace, findings: list, fixed: int | None = None) -> str:  # type: ignore[type-arg]
    """The text of `kvlint check`'s report in the chosen format (`fixed`: how many --fix repaired)."""
    from kvlint.output import as_text_report, statistics_json, statistics_text

    color = _use_color(args.color, args.output) if args.format == "text" else False
    if args.statistics:
        if args.format == "json":
            return statistics_json(findings)
        if args.format != "text":
            raise _UsageError(f"--statistics prints text or json, not {args.format}")
        return statistics_text(findings, color=color, summary=not args.quiet)
    if args.format == "text":
        return as_text_report(findings, color=color, show_source=args.show_source, summary=not args.quiet,
                              unsafe=args.unsafe_fixes, fixed=fixed)
    return FORMATS[args.format](findings)


class _UsageError(Exception):
    """A problem with the command line or a file it names: one line on stderr, exit 2."""


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
    parser.add_argument("--output", "-o", type=Path, metavar="FILE",
                        help="write the report to FILE (atomically) instead of stdout")
    parser.add_argument("--cache-dir", type=_directory, metavar="DIR",
                        help="reuse and store per-file results in DIR (default: $KVLINT_CACHE_DIR; none: nothing "
                        "is written)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--baseline", type=Path, metavar="FILE", help="report only findings FILE does not record")
    group.add_argument("--write-baseline", type=Path, metavar="FILE",
                       help="record every current finding in FILE; none is then reported")


def _read_baseline(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    if args.baseline is None:
        return None
    from kvlint.baseline import Baseline, BaselineError

    try:
        return Baseline.load(args.baseline)
    except BaselineError as exc:
        raise _UsageError(str(exc)) from None


def _new_findings(args: argparse.Namespace, baseline, findings):  # type: ignore[no-untyped-def]
    """Apply --baseline / --write-baseline; return the findings to report and how many a baseline hid."""
    if args.write_baseline is not None:
        from kvlint.baseline import write_baseline

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


def _audit(args: argparse.Namespace) -> int:
    import shutil

    from kvlint.audit import build_audit
    from kvlint.report_formats import ProgressBar, audit_text
    from kvlint.runner import run

    config = _load_for_run(args)
    if config is None:
        return EXIT_USAGE
    baseline = _read_baseline(args)
    with ProgressBar(enabled=not args.quiet and sys.stderr.isatty()) as progress:
        result = run(args.paths, config, jobs=args.jobs, progress=progress, cache_dir=_cache_directory(args))
    if not args.quiet:
        _warn_about_cache(result)
        _warn_if_nothing_found(args, result.files_found)
    findings, baselined = _new_findings(args, baseline, result.findings)
    shown = [path.as_posix() for path in args.paths] or ["."]
    report = build_audit(result, config, shown, findings, baselined)
    if args.format == "text":
        terminal = args.output is None and sys.stdout is not None and sys.stdout.isatty()
        color = _use_color(args.color, args.output)  # FORCE_COLOR: e.g. CI logs, which are no tty
        width = shutil.get_terminal_size().columns if terminal else None
        text = audit_text(report, color=color, width=width)
    elif args.format == "markdown":
        from kvlint.report_formats import audit_markdown, github_base_url

        text = audit_markdown(report, base_url=args.base_url or github_base_url(os.environ))
    else:
        from kvlint.report_formats import AUDIT_FORMATS

        text = AUDIT_FORMATS[args.format](report)
    _emit(args.output, text)
    if args.verbose:
        _print_tracebacks(result)
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN

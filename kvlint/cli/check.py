"""`kvlint check`: findings in files, directories or standard input, `--fix` and `--diff`, in a format of
`kvlint.report`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from kvlint.cli.shared import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_USAGE,
    _cache_directory,
    _emit,
    _load_for_run,
    _new_findings,
    _overrides,
    _print_tracebacks,
    _read_baseline,
    _UsageError,
    _use_color,
    _warn_about_cache,
    _warn_if_nothing_found,
)
from kvlint.config import Config, ConfigError, load_config
from kvlint.report.safe_text import printable
from kvlint.report.text import fix_only_summary, hidden_fixes

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a warm hook's cost)
if TYPE_CHECKING:
    from kvlint.fixing.files import FileFix


def _check(args: argparse.Namespace) -> int:
    if any(str(path) == "-" for path in args.paths):
        return _check_stdin(args)
    if args.stdin_filename is not None:
        raise _UsageError("--stdin-filename needs `-` (standard input) as the path")
    config = _load_for_run(args)
    if config is None:
        return EXIT_USAGE
    baseline = _read_baseline(args)
    cache_dir = _cache_directory(args)
    result = None
    index_needed = args.fix or args.diff
    if cache_dir is not None and not index_needed:  # a warm run: the findings, with no engine imported
        from kvlint.running.run_record import replay

        result = replay(args.paths, config, cache_dir, reports=False)
    if result is None:
        from kvlint.running.runner import run

        result = run(args.paths, config, jobs=args.jobs, cache_dir=cache_dir, index_needed=index_needed,
                     fixes=_fixes_shown(args), sites=False)  # a check reports findings, never the sites
    if not args.quiet:
        _warn_about_cache(result)
        _warn_if_nothing_found(args, result.files_found)
    reported = result.findings
    if args.report_unused_noqa:
        from kvlint.running.unused_noqa import unused_noqa

        from kvlint.running.runner import run

        config = _with_unused_noqa(config)
        raw = run(args.paths, config, jobs=args.jobs, suppress=False, fixes=False, sites=False)  # the codes alone
        reported = sorted([*reported, *unused_noqa(args.paths, config, raw.findings)])
    fixed = None
    if args.fix or args.diff:
        if args.report_unused_noqa:
            raise _UsageError("--report-unused-noqa cannot be combined with --fix or --diff")
        from kvlint.fixing.files import fix_file, fixable_paths
        from kvlint.fixing.passes import REJECTED, left_alone

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
            remaining = [*(finding for finding in reported if finding.path not in changed),
                         *(finding for f in changed.values() for finding in f.outcome.remaining)]
            return _report_diff(args, changed.values(), hidden_fixes(remaining, args.unsafe_fixes))
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


def _fixes_shown(args: argparse.Namespace) -> bool | frozenset[str]:
    """The fixes the report shows, so the run builds no other (the run's docstring says when it builds all):
    `--statistics` and the github format show none; the text report of `--quiet`, without `--show-source`, shows
    only the mark of a fix that applies: without `--unsafe-fixes`, the fixes of rules whose fixes can be safe.
    Every other report shows each fix, or counts those `--unsafe-fixes` would add."""
    if args.fix or args.diff or args.write_baseline is not None:
        return True
    if args.statistics or args.format == "github":
        return False
    if args.format == "text" and args.quiet and not args.show_source and not args.unsafe_fixes:
        from kvlint.fixing.model import Applicability
        from kvlint.rules import RULES

        return frozenset(code for code, rule in RULES.items()
                         if rule.fix is not None and Applicability.SAFE in rule.fix_applicabilities)
    return True


def _report_diff(args: argparse.Namespace, files: Iterable[FileFix], hidden: int) -> int:
    """--diff: the unified diffs on stdout (or --output), `Would fix N findings.` on stderr, with how many fixes
    `--unsafe-fixes` would add (`hidden`), as ruff says it; 1 if any diff (ruff: findings alone leave it 0)."""
    from kvlint.fixing.files import unified_diff

    files = list(files)
    _emit(args.output, "".join(unified_diff(f.display_path, f.old_text, f.outcome.text) for f in files))
    count = sum(len(f.outcome.fixed) for f in files)
    if not args.quiet:
        sys.stderr.write(fix_only_summary(count, hidden, applied=False) or "No fixes to apply.\n")
    return EXIT_FINDINGS if files else EXIT_CLEAN


def _with_unused_noqa(config: Config) -> Config:
    """--report-unused-noqa asks for KVC100: a configured `select` need not name it (`ignore` still can)."""
    import dataclasses

    from kvlint.rules import UNUSED_NOQA

    return dataclasses.replace(config, select=(*config.select, UNUSED_NOQA)) if config.select else config


def _check_stdin(args: argparse.Namespace) -> int:
    """`kvlint check -`: the source on standard input, named by --stdin-filename (default `-`)."""
    from kvlint.engine import analyse_source
    from kvlint.source import module_name_for

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
    report = analyse_source(data, display, config, module_name=module_name, is_package=is_package,
                            imports_from=Path(name) if name else None)
    findings = list(report.findings)
    if args.report_unused_noqa:
        from kvlint.engine import analyse_prepared, prepare_source
        from kvlint.source import decode_source
        from kvlint.binding.tree_index import TreeIndex
        from kvlint.running.unused_noqa import unused_noqa_in_text

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
    from kvlint.source import SourceError, decode_source
    from kvlint.fixing.files import encode_like, unified_diff
    from kvlint.fixing.passes import fix_source

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
                if not args.quiet:
                    hidden = hidden_fixes(outcome.remaining, args.unsafe_fixes)
                    sys.stderr.write(fix_only_summary(len(outcome.fixed), hidden, applied=False))
                return EXIT_FINDINGS
            fixed_data, fixed, remaining = encode_like(data, outcome.text), len(outcome.fixed), outcome.remaining
    if args.diff:
        if not args.quiet:
            hidden = hidden_fixes(outcome.remaining if text is not None else (), args.unsafe_fixes)
            sys.stderr.write(fix_only_summary(0, hidden, applied=False) or "No fixes to apply.\n")
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


def _check_report(args: argparse.Namespace, findings: list, fixed: int | None = None) -> str:  # type: ignore[type-arg]
    """The text of `kvlint check`'s report in the chosen format (`fixed`: how many --fix repaired)."""
    from kvlint.report.text import as_text_report, statistics_text

    color = _use_color(args.color, args.output) if args.format == "text" else False
    if args.statistics:
        if args.format == "json":
            from kvlint.report.json import statistics_json

            return statistics_json(findings)
        if args.format != "text":
            raise _UsageError(f"--statistics prints text or json, not {args.format}")
        return statistics_text(findings, color=color, summary=not args.quiet)
    if args.format == "text":
        return as_text_report(findings, color=color, show_source=args.show_source, summary=not args.quiet,
                              unsafe=args.unsafe_fixes, fixed=fixed)
    from kvlint.report.formats import check_renderer

    return check_renderer(args.format)(findings)

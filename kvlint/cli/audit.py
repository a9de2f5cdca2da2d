"""`kvlint audit`: the inventory of every site, in a format of `kvlint.report`."""

from __future__ import annotations

import argparse
import os
import sys

from kvlint.cli.shared import (
    EXIT_CLEAN,
    EXIT_FINDINGS,
    EXIT_USAGE,
    _cache_directory,
    _emit,
    _load_for_run,
    _new_findings,
    _print_tracebacks,
    _read_baseline,
    _use_color,
    _warn_about_cache,
    _warn_if_nothing_found,
)


GRAPH_FORMATS = ("mermaid", "dot")  # the formats that draw the producer -> consumer graph alone


def _audit(args: argparse.Namespace) -> int:
    import shutil

    from kvlint.report.audit import build_audit
    from kvlint.report.progress import ProgressBar
    from kvlint.report.text import audit_text
    from kvlint.running.runner import run

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
        from kvlint.report.markdown import GITHUB_COMMENT_LIMIT, audit_markdown, github_base_url

        whole = args.output is not None and str(args.output) != "-"  # a file holds all of it; stdout a comment's worth
        text = audit_markdown(report, base_url=args.base_url or github_base_url(os.environ),
                              limit=None if whole else GITHUB_COMMENT_LIMIT)
    else:
        from kvlint.report.formats import audit_renderer

        render = audit_renderer(args.format)
        # the graph formats fold test code unless --graph-tests=expand (the markdown report's graph always does)
        text = render(report, tests=args.graph_tests) if args.format in GRAPH_FORMATS else render(report)
    _emit(args.output, text)
    if args.verbose:
        _print_tracebacks(result)
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN

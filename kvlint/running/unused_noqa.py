"""KVC100: `# noqa: KVC...` comments that silence nothing (ruff's RUF100), for `--report-unused-noqa`.

The caller runs the tree twice: once as usual, once keeping every finding that
`# noqa`, select/ignore and per-file-ignores would drop. A kvlint code in a
`# noqa:` comment is used when a finding of the second run that the
configuration reports (select/ignore, per-file-ignores) is on the comment's
line, or on another physical line of the same logical line as flake8 joins
them. Other tools' codes (`E501`) and a bare `# noqa` are never reported: they
may serve another linter.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from kvlint.config import Config
from kvlint.running.discovery import SourceFile, UnreadablePath, iter_python_files, read_source
from kvlint.source import decode_source, split_lines
from kvlint.findings import Finding
from kvlint.noqa import NOQA_INLINE_REGEXP, noqa_codes, noqa_line_mapping
from kvlint.rules import UNUSED_NOQA

PREFIX = "KVC"


def unused_noqa(paths: Sequence[Path], config: Config, raw_findings: Iterable[Finding]) -> list[Finding]:
    """The KVC100 findings of every file under `paths`, given the run's unsuppressed findings."""
    by_path: dict[str, list[Finding]] = {}
    for finding in raw_findings:
        by_path.setdefault(finding.path, []).append(finding)
    found: list[Finding] = []
    for entry in iter_python_files(paths, config):
        if isinstance(entry, UnreadablePath):
            continue
        found += _unused_in_file(entry, config, by_path.get(entry.display_path, []))
    return sorted(found)


def unused_noqa_in_text(display_path: str, text: str, config: Config, raw_findings: Sequence[Finding]) -> list[Finding]:
    """The KVC100 findings of one file's text (stdin, or a file already read)."""
    lines = split_lines(text)
    mapping = noqa_line_mapping(lines)
    ignored = tuple(config.ignored_for(Path(display_path)))
    reported = [f for f in raw_findings if config.is_enabled(f.code) and not f.code.startswith(ignored)]
    # the prefixes of the codes found on each line and on each logical line (by the identity of its joined
    # text): a `# noqa` line asks two lookups per code, not one per finding (10k noqa lines x 10k findings)
    by_line: dict[int, set[str]] = {}
    by_group: dict[int, set[str]] = {}
    for finding in reported:
        prefixes = {finding.code[:end] for end in range(1, len(finding.code) + 1)}
        by_line.setdefault(finding.line, set()).update(prefixes)
        group_text = mapping.get(finding.line)
        if group_text is not None:
            by_group.setdefault(id(group_text), set()).update(prefixes)
    found = []
    for number, line in enumerate(lines, start=1):
        match = NOQA_INLINE_REGEXP.search(line)
        if match is None or not match.group("codes"):
            continue
        codes = noqa_codes(line)
        if codes is None or codes != noqa_codes(mapping.get(number, line)):
            continue  # flake8 uses an earlier `# noqa` of the same logical line
        if any(UNUSED_NOQA.startswith(code) for code in codes):
            continue  # `# noqa: KVC100`: this line asks for no report of its unused codes
        group = mapping.get(number)
        here = by_line.get(number, set()) | (by_group.get(id(group), set()) if group is not None else set())
        unused = [code for code in sorted(codes) if code.startswith(PREFIX) and code not in here]  # not another tool's
        if not unused or not config.is_enabled(UNUSED_NOQA) or UNUSED_NOQA.startswith(ignored):
            continue
        named = ", ".join(unused)
        message = (
            f"unused `# noqa` code{'s' if len(unused) > 1 else ''} {named}: "
            f"{'they silence' if len(unused) > 1 else 'it silences'} no finding on this line; remove "
            f"{'them' if len(unused) > 1 else 'it'}"
        )
        found.append(Finding(display_path, number, match.start(), UNUSED_NOQA, message, number, match.end(),
                             source_line=line.rstrip("\r\n")))
    return found


def _unused_in_file(entry: SourceFile, config: Config, raw_findings: Sequence[Finding]) -> list[Finding]:
    try:
        data = read_source(entry.location)
    except OSError:
        return []  # reported as KVC901 by the run itself
    if b"noqa" not in data.lower():
        return []
    try:
        text = decode_source(data)
    except Exception:  # noqa: BLE001 - reported as KVC900 by the run itself
        return []
    return unused_noqa_in_text(entry.display_path, text, config, raw_findings)

"""Fix one file's source: apply the findings' fixes in passes, re-analyse, verify, or leave it alone.

As ruff does: analyse, apply every applicable fix whose edits overlap none applied before it,
analyse the new text, and go again until nothing applies or `MAX_PASSES` is reached. The result is
kept only when the file round-trips through libcst byte for byte, the new text parses with `ast`,
and the findings of the new text are the original ones less those fixed (nothing new appears);
otherwise the source is returned unchanged and `refused` says why. Nothing here reads or writes a file.
"""

from __future__ import annotations

import ast
import collections
import warnings
from dataclasses import dataclass

from kvlint.config import Config
from kvlint.engine import analyse_prepared, prepare_source, split_lines
from kvlint.findings import Finding
from kvlint.fixes import Fix, apply_fixes
from kvlint.tree_index import TreeIndex

MAX_PASSES = 10  # ruff's bound is 100; kvlint's fixes settle in two or three
GUARD_CODE = "KVC001"  # several guards of one value in one function: one per pass, the next ones are then moot


@dataclass(frozen=True)
class FixOutcome:
    """What fixing one source did."""

    text: str  # the fixed source (== input when nothing applied or refused)
    fixed: tuple[Finding, ...]  # findings of the ORIGINAL text whose fix was applied
    remaining: tuple[Finding, ...]  # findings of the final text
    refused: str = ""  # one-line reason the file was left alone ("" when not refused)


def fix_source(
    source: str, display_path: str, config: Config, index: TreeIndex | None = None, *,
    unsafe: bool = False, module_name: str = "", is_package: bool = False,
) -> FixOutcome:
    """Apply the safe (with `unsafe`, also the unsafe) fixes of the source's findings, and verify the result."""
    bom = "\ufeff" if source.startswith("\ufeff") else ""
    text = source[len(bom):]

    def analyse(current: str) -> list[Finding]:
        prepared = prepare_source(current, display_path, config, module_name, is_package)
        own = index if index is not None else TreeIndex(prepared.declarations, payload_classes=config.payload_classes)
        return list(analyse_prepared(prepared, config, own).findings)

    original = analyse(text)
    if not any(_applicable(f, unsafe) for f in original):
        return FixOutcome(source, (), tuple(original), "")
    problem = _round_trip_problem(text)
    if problem:
        return FixOutcome(source, (), tuple(original), problem)
    unclaimed = collections.Counter(_key(f) for f in original)
    by_key: dict[tuple[str, ...], list[Finding]] = collections.defaultdict(list)
    for finding in original:
        by_key[_key(finding)].append(finding)
    fixed: list[Finding] = []
    current, findings = text, original
    for _ in range(MAX_PASSES):
        chosen = _one_guard_per_value([f for f in findings if _applicable(f, unsafe)])
        if not chosen:
            break
        new_text, applied = apply_fixes(current, split_lines(current), [f.fix for f in chosen])  # type: ignore[misc]
        if not applied or new_text == current:
            break
        applied_ids = {id(fix) for fix in applied}
        for finding in chosen:
            key = _key(finding)
            if id(finding.fix) in applied_ids and unclaimed[key] > 0:
                unclaimed[key] -= 1
                fixed.append(by_key[key][len(by_key[key]) - unclaimed[key] - 1])
        current, findings = new_text, analyse(new_text)
    if current == text:
        return FixOutcome(source, (), tuple(original), "")
    problem = _verification_problem(current, original, fixed, findings)
    if problem:
        return FixOutcome(source, (), tuple(original), problem)
    return FixOutcome(bom + current, tuple(sorted(fixed)), tuple(findings), "")


def _applicable(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and finding.fix.applies(unsafe)


def _key(finding: Finding) -> tuple[str, ...]:
    """What identifies a finding across edits that move lines."""
    return (finding.code, finding.function, finding.invariant, finding.message)


def _one_guard_per_value(findings: list[Finding]) -> list[Finding]:
    """Of the KVC001 guards of one value in one function, only the first this pass: it may make the others
    moot, and two guards of one value would be one too many."""
    seen: set[tuple[str, str]] = set()
    chosen = []
    for finding in sorted(findings):
        fix: Fix = finding.fix  # type: ignore[assignment]
        if finding.code == GUARD_CODE:
            key = (finding.function, fix.title)
            if key in seen:
                continue
            seen.add(key)
        chosen.append(finding)
    return chosen


def _round_trip_problem(text: str) -> str:
    """Why libcst's tree of the file does not print back byte for byte ("" when it does)."""
    import libcst as cst

    try:
        module = cst.parse_module(text)
    except Exception as exc:  # noqa: BLE001 - any failure means: do not touch this file
        return f"not fixed: libcst cannot parse the file ({type(exc).__name__})"
    if module.code != text:
        return "not fixed: libcst does not print this file back byte for byte (line endings?)"
    return ""


def _verification_problem(
    text: str, original: list[Finding], fixed: list[Finding], remaining: list[Finding]
) -> str:
    """Why the fixed text is not kept: it does not parse, a fixed finding is still there, or one is new."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<fixed>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"not fixed: the fixed file would not parse ({exc}); please report this"
    expected = collections.Counter(_key(f) for f in original) - collections.Counter(_key(f) for f in fixed)
    new = collections.Counter(_key(f) for f in remaining) - expected
    if new:
        code, function, _, message = sorted(new)[0]
        place = f" in `{function}`" if function else ""
        return f"not fixed: the fixes would leave {code}{place} ({message}); please report this"
    return ""

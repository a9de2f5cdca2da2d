"""Fix one file's source: apply the findings' fixes in passes, re-analyse, verify, or leave it alone.

As ruff does: analyse, apply every applicable fix whose edits overlap none applied before it,
analyse the new text, and go again until nothing applies or `MAX_PASSES` is reached. The result is
kept only when the file round-trips through libcst byte for byte, the new text compiles (`compile`, not just
`ast.parse`: the compiler's own checks too),
and the findings of the new text are the original ones less those fixed (nothing new appears).
Otherwise the fixes are applied again one at a time, each kept only if the file it makes passes the
same checks; a finding whose fix was left out says why (`REJECTED`). When none passes, the source is
returned unchanged and `refused` says why. Nothing here reads or writes a file.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import io
import tokenize
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kvlint.config import Config
from kvlint.engine import analyse_prepared, prepare_source
from kvlint.source import split_lines
from kvlint.findings import Finding
from kvlint.fixing.model import Fix, apply_fixes
from kvlint.binding.tree_index import TreeIndex

REJECTED = "its fix was not applied: "  # how a finding whose fix failed verification says so
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
        return FixOutcome(source, (), left_alone(original, problem), problem)
    claims = _Claims(original)
    current, findings = text, original
    settled = False
    for _ in range(MAX_PASSES):
        chosen = _one_guard_per_value([f for f in findings if _applicable(f, unsafe)])
        if not chosen:
            settled = True
            break
        new_text, applied = apply_fixes(current, split_lines(current), [f.fix for f in chosen])  # type: ignore[misc]
        if not applied or new_text == current:
            settled = True
            break
        applied_ids = {id(fix) for fix in applied}
        for finding in chosen:
            if id(finding.fix) in applied_ids:
                claims.claim(finding)
        current, findings = new_text, analyse(new_text)
    if current == text:
        return FixOutcome(source, (), tuple(original), "")
    fixed = claims.fixed
    problem = _verification_problem(current, original, fixed, findings) or _lost_comment(text, current) or (
        "" if settled else f"not fixed: the fixes still change the file after {MAX_PASSES} passes; please report this")
    if not problem:
        return FixOutcome(bom + current, _gone(original, findings), tuple(findings), "")
    # some fix broke the whole: apply them one at a time, each verified on its own, and keep those that pass
    current, fixed, findings, rejected = _one_at_a_time(text, original, analyse, unsafe)
    if not fixed:
        return FixOutcome(source, (), left_alone(original, problem), problem)
    remaining = [
        dataclasses.replace(f, fix=None, no_fix=REJECTED + rejected[_key(f)]) if _key(f) in rejected else f
        for f in findings
    ]
    return FixOutcome(bom + current, _gone(original, findings), tuple(remaining), "")


def left_alone(findings: Iterable[Finding], problem: str) -> tuple[Finding, ...]:
    """The findings of a file kvlint would not fix, each saying so instead of offering its fix."""
    return tuple(
        dataclasses.replace(f, fix=None, no_fix=problem) if f.fix is not None else f for f in findings
    )


def _gone(original: list[Finding], remaining: list[Finding]) -> tuple[Finding, ...]:
    """The original findings the final text no longer has: those a fix repaired, and those it made moot (a
    guard of a value covers its every later dereference). A remaining finding stands for the original with
    its very message, else for one of its code, function and invariant (a fix may change the expression a
    message quotes: `return EMPTY_MODEL_RUNNER_OUTPUT` becomes `return output`)."""
    gone = list(original)
    unmatched = []
    for finding in remaining:
        same = next((o for o in gone if _key(o) == _key(finding)), None)
        if same is not None:
            gone.remove(same)
        else:
            unmatched.append(finding)
    for finding in unmatched:
        similar = next((o for o in gone if _place(o) == _place(finding)), None)
        if similar is not None:
            gone.remove(similar)
    return tuple(sorted(gone))


def _lost_comment(old: str, new: str) -> str:
    """Why the new text is not kept when a comment of the old one is missing from it ("" when none is)."""
    lost = _comments(old) - _comments(new)
    if lost:
        return f"not fixed: the fixes would drop the comment `{sorted(lost)[0]}`; please report this"
    return ""


def _comments(text: str) -> collections.Counter[str]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return collections.Counter()
    return collections.Counter(token.string for token in tokens if token.type == tokenize.COMMENT)


def _place(finding: Finding) -> tuple[str, ...]:
    """What a finding is about, whatever its message quotes."""
    return (finding.code, finding.function, finding.invariant)


def _one_at_a_time(
    text: str, original: list[Finding], analyse: Callable[[str], list[Finding]], unsafe: bool
) -> tuple[str, list[Finding], list[Finding], dict[tuple[str, ...], str]]:
    """Apply the fixes one by one in source order, keeping each only if the file it makes passes verification
    on its own; return the text, the original findings fixed, the findings left and why each rejected fix was."""
    claims = _Claims(original)
    rejected: dict[tuple[str, ...], str] = {}
    current, findings = text, original
    for _ in range(len(original) * MAX_PASSES):
        candidates = [f for f in sorted(findings) if _applicable(f, unsafe) and _key(f) not in rejected]
        if not candidates:
            break
        finding = candidates[0]
        new_text, applied = apply_fixes(current, split_lines(current), [finding.fix])  # type: ignore[list-item]
        if not applied or new_text == current:
            rejected[_key(finding)] = "it changes nothing"
            continue
        new_findings = analyse(new_text)
        problem = _verification_problem(new_text, findings, [finding], new_findings) or _lost_comment(current, new_text)
        if problem:
            rejected[_key(finding)] = problem.removeprefix("not fixed: ")
            continue
        claims.claim(finding)
        current, findings = new_text, new_findings
    return current, claims.fixed, findings, rejected


class _Claims:
    """The original findings a fix of a later text repairs, matched by `_key` (lines move, keys do not)."""

    def __init__(self, original: list[Finding]) -> None:
        self.unclaimed = collections.Counter(_key(f) for f in original)
        self.by_key: dict[tuple[str, ...], list[Finding]] = collections.defaultdict(list)
        for finding in original:
            self.by_key[_key(finding)].append(finding)
        self.fixed: list[Finding] = []

    def claim(self, finding: Finding) -> None:
        key = _key(finding)
        if self.unclaimed[key] > 0:
            self.unclaimed[key] -= 1
            self.fixed.append(self.by_key[key][len(self.by_key[key]) - self.unclaimed[key] - 1])


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
    """Why the fixed text is not kept: it does not parse, a fixed finding is still there, or one is new. Findings
    are counted by code, function and invariant: a fix may change the expression a message quotes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<fixed>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return f"not fixed: the fixed file would not parse ({exc}); please report this"
        try:  # the compiler's own checks too: `continue` in an `except*` block parses, but does not compile
            compile(text, "<fixed>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return f"not fixed: the fixed file would not compile ({exc}); please report this"
    expected = collections.Counter(map(_place, original)) - collections.Counter(map(_place, fixed))
    new = collections.Counter(map(_place, remaining)) - expected
    if new:
        code, function, invariant = sorted(new)[0]
        message = next(f.message for f in remaining if _place(f) == (code, function, invariant))
        place = f" in `{function}`" if function else ""
        return f"not fixed: the fixes would leave {code}{place} ({message}); please report this"
    return ""

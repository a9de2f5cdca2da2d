"""SARIF 2.1.0 (GitHub code scanning) for `kvlint check --format sarif` and `kvlint audit --format sarif`:
rule metadata generated from the registry, one result per finding."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from kvlint import __version__
from kvlint.report.baseline import keyed
from kvlint.findings import Finding
from kvlint.rules import RULES, Rule
from kvlint.report.safe_text import json_document, uri_quote, utf8_bytes

if TYPE_CHECKING:
    from kvlint.report.audit import AuditReport

SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def _sarif_rule(rule: Rule) -> dict[str, object]:
    example = "\n".join(
        ["**Example**", "", "```python", rule.bad.strip("\n"), "```", "", "**Use instead**", "",
         "```python", rule.good.strip("\n"), "```"]
    )
    options = "\n".join(f"- `{option}`" for option in rule.options)
    markdown = f"{rule.what}\n\n**Why is this bad?** {rule.why}\n\n{example}\n"
    if options:
        markdown += f"\n**Options**\n\n{options}\n"
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.what},
        "help": {"text": rule.documentation(), "markdown": markdown},
        "defaultConfiguration": {"level": "error"},
        "properties": {"tags": ["kvlint", "correctness"], "precision": "high", "problem.severity": "error"},
    }


def _artifact_uri(path: str) -> dict[str, str]:
    """A relative path stays relative to the checkout (`%SRCROOT%`); an absolute one becomes a file URI."""
    if path.startswith("/") or re.match(r"^[A-Za-z]:[/\\]", path):
        return {"uri": "file://" + uri_quote(PurePosixPath(path.replace("\\", "/")).as_posix())}
    return {"uri": uri_quote(path), "uriBaseId": "%SRCROOT%"}


def sarif_log(findings: Sequence[Finding], properties: dict[str, object] | None = None) -> dict[str, object]:
    """A SARIF 2.1.0 log with one run: every registered rule and one result per finding."""
    codes = list(RULES)
    results = []
    # version 2 keys, as before baselines keyed the invariant: the fingerprints code scanning tracks stay the same
    for key, finding in sorted(keyed(findings, Path(os.curdir), version=2), key=lambda pair: pair[1]):
        fingerprint = hashlib.sha256(utf8_bytes(
            "\0".join((key.path, key.code, key.function, key.snippet, str(key.occurrence))))
        ).hexdigest()
        result: dict[str, object] = {
            "ruleId": finding.code,
            "level": "error",
            "message": {"text": finding.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": _artifact_uri(finding.path),
                    "region": {
                        "startLine": finding.line,
                        "startColumn": finding.column + 1,
                        "endLine": max(finding.end_line, finding.line),
                        "endColumn": finding.end_column + 1,
                    },
                },
                **({"logicalLocations": [{"fullyQualifiedName": finding.function, "kind": "function"}]}
                   if finding.function and finding.function != "<module>" else {}),
            }],
            # the baseline key: stable when unrelated edits move the finding's line
            "partialFingerprints": {"kvlintFinding/v1": fingerprint},
        }
        if finding.code in RULES:
            result["ruleIndex"] = codes.index(finding.code)
        if finding.invariant:
            result["properties"] = {"invariant": finding.invariant}
        if finding.fix is not None:
            result["fixes"] = [_sarif_fix(finding)]
        results.append(result)
    run: dict[str, object] = {
        "tool": {
            "driver": {
                "name": "kvlint",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_sarif_rule(rule) for rule in RULES.values()],
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if properties:
        run["properties"] = properties
    return {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _sarif_fix(finding: Finding) -> dict[str, object]:
    """A SARIF `fix`: the edits as replacements of regions (an insertion deletes an empty region)."""
    fix = finding.fix
    assert fix is not None
    return {
        "description": {"text": fix.title},
        "artifactChanges": [{
            "artifactLocation": _artifact_uri(finding.path),
            "replacements": [
                {
                    "deletedRegion": {
                        "startLine": edit.line, "startColumn": edit.column + 1,
                        "endLine": edit.end_line, "endColumn": edit.end_column + 1,
                    },
                    "insertedContent": {"text": edit.content},
                }
                for edit in fix.edits
            ],
        }],
        "properties": {"applicability": fix.applicability.value},
    }


def as_sarif(findings: Sequence[Finding]) -> str:
    """`kvlint check --format sarif`: SARIF 2.1.0 for GitHub code scanning."""
    return json_document(json.dumps(sarif_log(findings), indent=2, ensure_ascii=False)) + "\n"


def as_sarif_with_summary(findings: Sequence[Finding], summary: object) -> str:
    """Findings as SARIF with an audit's inventory counts as run properties (`kvlint audit --format sarif`)."""
    document = json.dumps(sarif_log(findings, {"kvlintAuditSummary": summary}), indent=2, ensure_ascii=False)
    return json_document(document) + "\n"


def audit_sarif(report: AuditReport) -> str:
    """The audit's findings as SARIF, with the inventory's counts as run properties."""
    return as_sarif_with_summary(report.findings, report.to_json()["summary"])

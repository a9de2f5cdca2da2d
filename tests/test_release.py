"""What a release promises beyond what scripts/check_release.sh runs: one version string, a changelog entry for it
in Keep a Changelog form, and a release workflow that publishes only a `v*` tag through PyPI's trusted publishing.

The script builds, checks and runs the wheel and validates the workflow against GitHub's schema; a schema says
nothing about what the workflow does, so these tests read what it does."""

from __future__ import annotations

import re
import tomllib

import yaml

import kvlint
from tests.conftest import ROOT

CHANGELOG = ROOT / "CHANGELOG.md"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
_VERSION_HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?$")
_KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}  # Keep a Changelog 1.1.0


def changelog_versions(text: str) -> list[tuple[str, str | None]]:
    """(version, date) of each `## [...]` heading, in order; an AssertionError for a heading of the wrong form."""
    versions = []
    for line in text.splitlines():
        if line.startswith("## "):
            match = _VERSION_HEADING.match(line)
            assert match, f"not a Keep a Changelog heading: {line!r}"
            versions.append((match.group("version"), match.group("date")))
        elif line.startswith("### "):
            assert line[4:] in _KINDS, f"not a Keep a Changelog kind of change: {line!r}"
    return versions


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_the_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kvlint.__version__"}
    written = [path.relative_to(ROOT).as_posix() for path in sorted((ROOT / "kvlint").rglob("*.py"))
               if re.search(r"^__version__\s*=", path.read_text(), re.MULTILINE)]
    assert written == ["kvlint/__init__.py"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", kvlint.__version__)


def test_the_changelog_has_an_entry_for_this_version() -> None:
    text = CHANGELOG.read_text()
    assert text.startswith("# Changelog\n")
    versions = changelog_versions(text)
    assert versions[0] == ("Unreleased", None)
    released = versions[1:]
    assert released and all(date for _, date in released), "every released version has its date"
    assert released[0][0] == kvlint.__version__, "the newest entry is the version kvlint declares"
    assert [version for version, _ in released] == sorted((v for v, _ in released), key=_key, reverse=True)
    assert [date for _, date in released] == sorted((d for _, d in released), reverse=True)


def test_the_changelog_check_catches_a_wrong_heading() -> None:
    for wrong in ("## 0.1.0", "## [0.1.0] 2026-12-01", "### New"):
        try:
            changelog_versions(f"# Changelog\n\n{wrong}\n")
        except AssertionError:
            continue
        raise AssertionError(f"accepted {wrong!r}")


def _workflow() -> dict:
    workflow = yaml.safe_load(RELEASE.read_text())
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads the key `on` as true
    return workflow


def test_the_release_workflow_publishes_a_v_tag_with_trusted_publishing() -> None:
    workflow = _workflow()
    assert workflow["on"] == {"push": {"tags": ["v*"]}}, "only a pushed v* tag releases"
    assert workflow["permissions"] == {"contents": "read"}, "no job gets more than it asks for"
    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    assert publish["needs"] == "build"
    assert publish["permissions"] == {"id-token": "write"}, "trusted publishing needs the OIDC token, nothing more"
    assert publish["environment"]["name"] == "pypi"
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert any(use.startswith("pypa/gh-action-pypi-publish@") for use in uses)
    for step in publish["steps"]:
        assert not {"password", "user"} & set(step.get("with", {})), "no API token: PyPI trusts the workflow"
    scripts = "\n".join(step.get("run", "") for step in build["steps"])
    assert "scripts/check_release.sh --dist dist" in scripts, "what is published is what the script checked"
    assert '"$GITHUB_REF_NAME" != "v$version"' in scripts, "a tag that is not v<__version__> fails the build"
    uploaded = [step for step in build["steps"] if step.get("uses", "").startswith("actions/upload-artifact@")]
    downloaded = [step for step in publish["steps"] if step.get("uses", "").startswith("actions/download-artifact@")]
    assert uploaded[0]["with"]["name"] == downloaded[0]["with"]["name"] == "dist"
    assert uploaded[0]["with"]["path"] == downloaded[0]["with"]["path"] == "dist/"


def test_ci_runs_the_release_check() -> None:
    """.ci/run runs the README's test command, and that command checks the release before pytest."""
    ci = (ROOT / ".ci" / "run").read_text()
    test = (ROOT / "scripts" / "test.sh").read_text()
    assert "KVLINT_SKIP_RELEASE_CHECK=0 scripts/test.sh" in ci
    assert test.index("scripts/check_release.sh") < test.index("exec .venv/bin/python -m pytest")
    assert "scripts/test.sh" in (ROOT / "README.md").read_text()


def test_the_docs_pin_the_version_kvlint_declares() -> None:
    """The registry pins the docs show for once a release exists (`vllm-kvlint==X`, `rev: vX`) name this version,
    and each is labelled as waiting for that release: a line that works only then never leads."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    pins = []
    for page in pages:
        text = page.read_text()
        for match in re.finditer(r"vllm-kvlint==(\d[\w.+-]*\w)|`rev: v(\d[\w.+-]*\w)`", text):
            pins.append((page.name, match.group(1) or match.group(2)))
            before = text[max(0, match.start() - 600):match.start()]
            labelled = re.search(r"[Oo]nce\s+(?:a\s+release|released|one\s+is)", before)
            assert labelled, f"{page.name}: {match.group(0)} is not labelled as waiting for the release"
    assert pins and {version for _, version in pins} == {kvlint.__version__}, pins

"""The docs a new user follows: every install line installs this project's distribution.

`kvlint` on PyPI is an unrelated project (it also installs a `kvlint` command), so an
install line that names `kvlint`, or any other distribution in kvlint's place, installs
someone else's tool. These tests read README.md, docs/*.md and bench/README.md the way a
user copies from them, and hold every install line to the name in pyproject.toml.
"""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from tests.conftest import ROOT

DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "bench" / "README.md"])
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
DISTRIBUTION = canonicalize_name(PROJECT["name"])
EXTRAS = set(PROJECT["optional-dependencies"])
# Other tools the docs may install next to kvlint: each is the real project of that name.
THIRD_PARTY = {"flake8", "mypy", "pre-commit", "ruff", "pydantic", "vllm", "pytest", "graphviz",
               # vLLM's mypy hook's environment (docs/pre-commit.md, docs/mypy.md)
               "regex", "types-cachetools", "types-setuptools", "types-pyyaml", "types-requests", "types-torch"}

_PIP_INSTALL = re.compile(r"\b(?:uv\s+)?pip3?\s+install\s+([^`\n#]*)")
_PIPX_INSTALL = re.compile(r"\bpipx\s+install\s+([^`\n#]*)")
_ADDITIONAL = re.compile(r"additional_dependencies:\s*\[([^\]\n]*)\]")


def _requirement_name(argument: str) -> tuple[str, set[str]] | None:
    """(distribution, extras) named by one install argument; None for options and local paths."""
    argument = argument.strip().strip("'\"")
    if not argument or argument.startswith(("-", ".", "/", "<")):  # options, local paths, placeholders
        return None
    try:
        requirement = Requirement(re.sub(r"<[^<>]*>", "placeholder", argument))
    except InvalidRequirement:
        raise AssertionError(f"not a requirement: {argument!r}") from None
    return canonicalize_name(requirement.name), set(requirement.extras)


def install_lines(text: str) -> list[tuple[int, str, list[str]]]:
    """(line number, line, arguments) of every pip/pipx install and pre-commit additional_dependencies."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in (_PIP_INSTALL, _PIPX_INSTALL):
            for match in pattern.finditer(line):
                try:
                    arguments = shlex.split(match.group(1))
                except ValueError:
                    arguments = match.group(1).split()
                found.append((number, line, arguments))
        for match in _ADDITIONAL.finditer(line):
            arguments = [item.strip() for item in match.group(1).split(",") if item.strip()]
            found.append((number, line, arguments))
    return found


def wrong_install_names(text: str) -> list[str]:
    """Each install argument that names a distribution other than this project's (or a known third party)."""
    wrong = []
    for number, line, arguments in install_lines(text):
        for argument in arguments:
            named = _requirement_name(argument)
            if named is None:
                continue
            name, extras = named
            if name == DISTRIBUTION:
                if not extras <= EXTRAS:
                    wrong.append(f"{number}: unknown extra {sorted(extras - EXTRAS)} in {line.strip()!r}")
            elif name not in THIRD_PARTY:
                wrong.append(f"{number}: installs {name!r}, not {DISTRIBUTION!r}: {line.strip()!r}")
    return wrong


def test_the_distribution_is_not_the_taken_name() -> None:
    assert DISTRIBUTION == "vllm-kvlint"
    assert PROJECT["scripts"] == {"kvlint": "kvlint:run"}  # the command stays `kvlint`


@pytest.mark.parametrize("path", DOCS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_install_line_installs_this_distribution(path: Path) -> None:
    assert wrong_install_names(path.read_text()) == []


def test_the_docs_show_how_to_install_it() -> None:
    lines = [line for path in DOCS for _, line, _ in install_lines(path.read_text())]
    assert any("pip install vllm-kvlint" in line for line in lines)
    assert any("additional_dependencies: [vllm-kvlint]" in line for line in lines)
    assert any("vllm-kvlint[mypy]" in line for line in lines)


@pytest.mark.parametrize(
    "line",
    [
        "$ pip install kvlint",
        "$ pip install 'kvlint[mypy]'",
        "$ pip install --upgrade kv-lint",
        "        additional_dependencies: [kvlint]",
        "        additional_dependencies: [flake8-bugbear, kvlint==0.1.1]",
        "$ pipx install kvlint",
        "$ pip install 'vllm-kvlint[nosuchextra]'",
    ],
)
def test_the_check_catches_a_wrong_install_line(line: str) -> None:
    assert wrong_install_names(line) != []


@pytest.mark.parametrize(
    "line",
    [
        "$ pip install vllm-kvlint",
        "$ pip install -e '.[test]'",
        "$ pip install 'vllm-kvlint[mypy]' flake8",
        "        additional_dependencies: [vllm-kvlint, 'pydantic>=2']",
        "`pip install 'vllm-kvlint @ git+<URL of this repository>@<tag or commit>'`",
    ],
)
def test_the_check_accepts_a_right_install_line(line: str) -> None:
    assert wrong_install_names(line) == []


# --- the docs cite only what the repository holds ---

MARKDOWN = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "bench" / "README.md"])
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
# a code span that names a file or directory of this repository
_TOP_LEVEL = ("kvlint/", "tests/", "docs/", "bench/", "scripts/", "fixtures/", ".ci/")
_TOP_FILES = {"README.md", "pyproject.toml", "setup.cfg", ".pre-commit-hooks.yaml"}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors, seen = set(), {}
    in_fence = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def broken_references(path: Path) -> list[str]:
    """Relative links (with their #anchors) and repository paths in code spans that do not exist."""
    text = path.read_text()
    broken = []
    for match in _LINK.finditer(text):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"link to missing {target!r}")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"link to missing anchor {target!r}")
    for match in _CODE_SPAN.finditer(text):
        span = match.group(1).strip()
        words = span.split()
        if not words:
            continue
        candidate = words[-1] if words[0] in {"cat", "python", "bash"} else words[0]
        if not (candidate.startswith(_TOP_LEVEL) or candidate in _TOP_FILES) or "<" in candidate:
            continue
        pattern = candidate.rstrip("/").replace("N", "?") if "*" in candidate else candidate.rstrip("/")
        if "*" in pattern or "?" in pattern:
            if not list(ROOT.glob(pattern)):
                broken.append(f"no file matches `{candidate}`")
        elif not (ROOT / pattern).exists():
            broken.append(f"`{candidate}` is not in the repository")
    return broken


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_reference_in_the_docs_exists(path: Path) -> None:
    assert broken_references(path) == []


def test_the_reference_check_catches_a_missing_file(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nSee [the spec](SPEC.md), [here](#title), [there](#nowhere) and `kvlint/nosuch.py`.\n")
    assert broken_references(page) == [
        "link to missing 'SPEC.md'",
        "link to missing anchor '#nowhere'",
        "`kvlint/nosuch.py` is not in the repository",
    ]


def test_no_doc_cites_the_spec() -> None:
    """The design lives in docs/design.md; nothing points at a SPEC file the repository does not have."""
    cited = []
    for directory in ("kvlint", "docs", "tests", "bench", "scripts"):
        for path in (ROOT / directory).rglob("*"):
            if path.suffix in {".py", ".md"} and path != Path(__file__):
                cited += [f"{path.relative_to(ROOT)}:{n}" for n, line in enumerate(path.read_text().splitlines(), 1)
                          if re.search(r"\bSPEC\b|\bthe spec\b", line)]
    readme = (ROOT / "README.md").read_text()
    cited += [f"README.md:{n}" for n, line in enumerate(readme.splitlines(), 1) if re.search(r"\bSPEC\b", line)]
    assert cited == []


def test_the_fetch_step_knows_every_release_the_tests_read() -> None:
    """`scripts/test.sh` fetches the vLLM releases before pytest; a test reading another would fetch silently."""
    import re

    from tests.support.fetch_sources import SDISTS, WHEELS

    sources = "".join(path.read_text(encoding="utf-8") for path in (ROOT / "tests").glob("test_*.py"))
    literal = set(re.findall(r'vllm_tree\("([0-9.]+)"\)', sources))
    parametrized = set(re.findall(r'parametrize\("version", \[([^\]]*)\]', sources))
    versions = literal | {v for group in parametrized for v in re.findall(r'"(0\.\d+\.\d+)"', group)}
    assert versions <= set(WHEELS), versions - set(WHEELS)
    assert set(re.findall(r'vllm_sdist_(?:tree|file)\("([0-9.]+)"', sources)) <= set(SDISTS)


@pytest.mark.vllm
def test_the_readme_example_is_what_kvlint_prints_on_vllm_0_10_1() -> None:
    """The quick start's `kvlint check vllm/` block is the output of vLLM 0.10.1 as released, byte for byte."""
    import subprocess
    import sys

    from tests.support.vllm_sources import vllm_tree

    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```console\n\$ kvlint check vllm/\n(.*?)```", readme, re.DOTALL)
    assert block, "the README lost its example run"
    run = subprocess.run([sys.executable, "-m", "kvlint", "check", "vllm/"], cwd=vllm_tree("0.10.1"),
                         capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert run.returncode == 1, run.stderr
    assert run.stdout == block.group(1)

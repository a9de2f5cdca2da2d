"""The figures the docs quote agree with their one measured source, and the README fits a first read.

Speed figures are measured by the scripts under bench/ and written once, in bench/README.md's "Today's figures"
(the mypy plugin's overhead in docs/mypy.md's "Overhead"); the test suite's download size is what the cache
holds. Every other page that quotes one must quote the same number, and the README quotes no speed figure that
is not in that table.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.fetch_sources import DOWNLOAD_SIZE_GB, SDISTS, WHEELS
from tests.support.vllm_sources import CACHE

README = ROOT / "README.md"
BENCH = ROOT / "bench" / "README.md"
PAGES = sorted([README, *(ROOT / "docs").glob("*.md"), BENCH])
README_LIMIT = 12_000  # characters (issue 28)

_SPEED_FIGURE = re.compile(r"(?<![\w.])[+-]?\d+(?:[.,]\d+)*(?:x\b|%|\s?ms\b|\s?s\b)")
_GIGABYTES = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s?GB\b")


def section(path: Path, heading: str) -> str:
    """The text under `heading` up to the next heading of the same or a higher level."""
    text = path.read_text()
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    end = re.search(r"^#{1,%d} " % len(level), text[start:], re.MULTILINE)
    return text[start:start + end.start()] if end else text[start:]


def todays_figures() -> str:
    return section(BENCH, "## Today's figures")


def the_one(pattern: str, text: str, where: str) -> str:
    """The value captured by the one match of `pattern` in `text`."""
    found = re.findall(pattern, text)
    assert len(found) == 1, f"{where}: {len(found)} matches of {pattern!r}, not one"
    return found[0]


def test_the_readme_fits_a_first_read() -> None:
    assert len(README.read_text()) <= README_LIMIT


def unsourced_speed_figures(text: str, source: str) -> list[str]:
    """The speed figures of `text` (ratios, percentages, times) that `source` does not state."""
    return [figure for figure in _SPEED_FIGURE.findall(text) if figure not in source]


def test_the_readme_quotes_only_measured_speed_figures() -> None:
    readme = re.sub(r"```.*?```", "", README.read_text(), flags=re.DOTALL)  # example output is not a figure
    assert unsourced_speed_figures(readme, todays_figures()) == []


def test_the_figure_check_catches_an_unsourced_figure() -> None:
    source = "| audit | 0.47 s | ruff: 0.40 s | 1.17x |"
    assert unsourced_speed_figures("about 1.17x ruff's time, in 0.47 s", source) == []
    assert unsourced_speed_figures("about 1.5x ruff's time, +3% memory, 98 ms", source) == ["1.5x", "+3%", "98 ms"]


# (what, the source's page and pattern, the pages that quote it and their patterns): each pattern matches once.
QUOTED = [
    ("flake8 over vLLM with kvlint installed", (BENCH, r"\| (\+\d+\.\d+%) \(target \+10%\) \|"),
     [(ROOT / "docs" / "flake8.md", r"\| \*\*(\+\d+\.\d+%)\*\* \(target ≤ \+10%\) \|")]),
    ("flake8 over vLLM, wall times", (BENCH, r"with kvlint installed \| (\d+\.\d s) \| the same flake8 without "
                                             r"kvlint: (\d+\.\d s) \|"),
     [(ROOT / "docs" / "flake8.md", r"without it \(`-j 2`\) \| (\d+\.\d s) \| (\d+\.\d s) \|")]),
    ("the editor's one-line edit, median", (BENCH, r"\(`server_latency\.py`, pygls' client\) \| (\d+ ms) median"),
     [(ROOT / "docs" / "server.md", r"for\nthat version: median (\d+ ms),")]),
    ("the editor's one-line edit in Neovim", (BENCH, r"\(`neovim_latency\.py`\) \| (\d+ ms) / (\d+ ms) \(server"),
     [(ROOT / "docs" / "server.md", r"median (\d+ ms) on Neovim 0\.7\.2 and (\d+ ms) on 0\.11\.4")]),
    ("mypy 1.20.2's overhead with the plugin", (ROOT / "docs" / "mypy.md", r"mypy 1\.20\.2 \*\*(\+\d+\.\d+%)\*\*"),
     [(BENCH, r"aggregator files, cold cache, with the plugin \| \| the same mypy without it \| (\+\d+\.\d+%)")]),
    ("mypy 2.4.1's overhead with the plugin", (ROOT / "docs" / "mypy.md", r"mypy 2\.4\.1 \*\*(\+\d+\.\d+%)\*\*"),
     [(BENCH, r"\| the same with mypy 2\.4\.1 \| \| \| (\+\d+\.\d+%)")]),
    ("mypy 1.20.2's overhead on vLLM 0.33.0's package", (ROOT / "docs" / "mypy.md",
                                                         r"whole package, cold: \*\*(\+\d+\.\d+%) in instructions\*\*"),
     [(BENCH, r"own `\[tool\.mypy\]`, cold cache, with the plugin \|[^|]*\|[^|]*\| (\+\d+\.\d+%) in instructions")]),
]


@pytest.mark.parametrize("what, source, quotes", QUOTED, ids=[what for what, _, _ in QUOTED])
def test_a_figure_quoted_elsewhere_is_its_source_s(what: str, source: tuple[Path, str],
                                                   quotes: list[tuple[Path, str]]) -> None:
    page, pattern = source
    measured = the_one(pattern, todays_figures() if page == BENCH else page.read_text(), page.name)
    for quoting, quoted_pattern in quotes:
        text = todays_figures() if quoting == BENCH else quoting.read_text()
        assert the_one(quoted_pattern, text, quoting.name) == measured, f"{quoting.name} on {what}"


def blocks(text: str) -> list[str]:
    """Paragraphs and table rows: where a figure and what it is a figure of are written together."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        rows = [line for line in paragraph.splitlines() if line.startswith("|")]
        found += rows if rows else [paragraph]
    return found


def current_targets(text: str, subject: str) -> list[str]:
    """Each target stated in a paragraph or table row that names `subject` (a regular expression), unless it
    is said to be past ("the target then", "the target was")."""
    targets = []
    for block in blocks(text):
        if not re.search(subject, block):
            continue
        for match in re.finditer(r"\btarget\b(?! then| was)[^|;)]*?(below )?(\+?\d+(?:\.\d+)?(?:x|%)?)", block):
            targets.append(f"{match.group(1) or ''}{match.group(2)}")  # "≤ 0.8x", "within 0.8x": 0.8x
    return targets


# What a target is a target of: the cold audit against ruff, the one-file hook, flake8 with kvlint installed,
# the warm run against ruff's own warm run.
_WARM = r"warm run|repeated with a warm"
SUBJECTS = (rf"^(?![\s\S]*(?:{_WARM}))[\s\S]*\bruff\b", r"hook on one|one-file hook", r"with kvlint installed", _WARM)


def test_each_speed_target_is_stated_once_and_alike() -> None:
    """The issue-28 disagreement (the cold audit's target 1.5x on one page, below 1 on another) cannot return."""
    for subject in SUBJECTS:
        stated = {page.relative_to(ROOT).as_posix(): current_targets(page.read_text(), subject) for page in PAGES}
        values = {value for targets in stated.values() for value in targets}
        assert len(values) <= 1, f"targets for {subject!r} disagree: {stated}"


def test_the_target_check_tells_a_past_target_from_a_current_one() -> None:
    page = ("| audit | ruff check --select F | 1.17x (target ≤ 0.8x, issue 27's; issue 10's 1.5x met) |\n\n"
            "kvlint / ruff: 1.49 (the target then: below 1.0)\n\n"
            "kvlint takes 1.5 times as long as ruff's pyflakes rules (the target is\nbelow 1).\n")
    assert current_targets(page, SUBJECTS[0]) == ["0.8x", "below 1"]
    assert current_targets("| flake8 with kvlint installed | +1.3% (target ≤ +10%) |", SUBJECTS[2]) == ["+10%"]


def test_the_download_size_is_said_once_and_is_what_the_cache_holds() -> None:
    """The README gives the test suite's download size; no other page gives another, and the figure is what
    the cached archives (vLLM's wheels and sdist, the plugins' wheels) add up to."""
    from tests.support.fetch_sources import PLUGINS, BINDING_PLUGINS

    assert the_one(r"about (\d+(?:\.\d+)?) GB", README.read_text(), "README.md") == f"{DOWNLOAD_SIZE_GB}"
    for page in PAGES + [ROOT / "tests" / "support" / "fetch_sources.py"]:
        for figure in _GIGABYTES.findall(page.read_text()):
            assert figure == f"{DOWNLOAD_SIZE_GB}", f"{page.name} says {figure} GB"
    folders = [CACHE / "wheels" / version for version in WHEELS] + [CACHE / "sdists" / version for version in SDISTS]
    folders += [CACHE / "wheels" / f"{plugin.distribution}-{plugin.version}" for plugin in (*PLUGINS, *BINDING_PLUGINS)]
    archives = [path for folder in folders if folder.is_dir() for path in folder.iterdir()
                if path.suffix in {".whl", ".gz"}]
    if len(archives) < len(folders):
        message = f"the test cache holds {len(archives)} of {len(folders)} archives (scripts/test.sh fetches them)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    total = sum(path.stat().st_size for path in archives)
    assert round(total / 1e9, 1) == DOWNLOAD_SIZE_GB, f"{total / 1e9:.2f} GB in {len(archives)} archives"

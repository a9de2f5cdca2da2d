"""Corpus run: kvlint over real code it did not see before, with no internal error and
no KVC900 that CPython's own compiler would not also give. The full everything-mode
run is `scripts/corpus_run.py --everything PATH` (figures in docs/design.md, "Bad input")."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from scripts.corpus_run import corpus_run
from tests.support.vllm_sources import vllm_tree


def _site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def test_every_file_of_site_packages() -> None:
    result, unjustified, internal = corpus_run([_site_packages()], everything=False, jobs=2)
    assert result.files_found > 500
    assert internal == [] and unjustified == []


def test_every_unit_of_a_sample_of_site_packages() -> None:
    """Every unit parsed and run through the flow analysis, not only relevant ones."""
    files = sorted(_site_packages().rglob("*.py"))[::5]
    result, unjustified, internal = corpus_run(files, everything=True, jobs=2)
    assert result.files_analysed > 300
    assert internal == [] and unjustified == []


@pytest.mark.vllm
def test_every_file_of_the_newest_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    tree = vllm_tree("0.33.0")
    monkeypatch.chdir(tree)
    result, unjustified, internal = corpus_run([Path("vllm")], everything=False, jobs=2)
    assert result.files_found > 3000
    assert internal == [] and unjustified == []
    assert [f for f in result.findings if f.code.startswith("KVC9")] == []


@pytest.mark.vllm
def test_every_unit_of_the_newest_vllm_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    tree = vllm_tree("0.33.0")
    monkeypatch.chdir(tree)
    result, unjustified, internal = corpus_run([Path("vllm/v1")], everything=True, jobs=2)
    assert result.files_analysed > 300
    assert internal == [] and unjustified == []

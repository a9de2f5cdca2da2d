"""kvlint is clean on its own source, and the bundled example tree is not."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT, finding_lines, run_kvlint


def test_kvlint_is_clean_on_its_own_source() -> None:
    completed = run_kvlint("check", "kvlint", "tests", "scripts", "bench")
    assert (completed.returncode, completed.stdout, completed.stderr) == (0, "All checks passed.\n", "")


def test_example_tree_reports_findings() -> None:
    completed = run_kvlint("check", "fixtures/vllm_like")
    assert completed.returncode == 1
    assert {"KVC001", "KVC002", "KVC003", "KVC004", "KVC005"} <= {
        line.split()[1] for line in finding_lines(completed.stdout)
    }


def test_kvlint_passes_its_own_flake8_configuration() -> None:
    """setup.cfg's [flake8] section is what kvlint lints itself with (the KVC plugin included)."""
    completed = subprocess.run(
        [sys.executable, "-m", "flake8", "kvlint", "tests", "scripts", "bench"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert (completed.returncode, completed.stdout) == (0, "")

"""The repository's own setup.cfg carries an example [kvlint] section; it must load."""

from __future__ import annotations

from kvlint.config import Config, load_config
from tests.conftest import ROOT


def test_setup_cfg_example_section_loads_and_restates_the_defaults() -> None:
    config = load_config([], ROOT / "setup.cfg")
    assert config.invariant_tables and config.presets == ("kv", "ec")  # it says something, in a section of its own
    assert config.invariants.invariants == Config().invariants.invariants
    assert config.source == ROOT / "setup.cfg" or config.source.name == "setup.cfg"

"""The repository's own setup.cfg carries an example [kvlint] section; it must load."""

from __future__ import annotations

from kvlint.config import Config, load_config
from tests.conftest import ROOT


def test_setup_cfg_example_section_loads_and_restates_the_defaults() -> None:
    config = load_config([], ROOT / "setup.cfg")
    defaults = Config()
    for field in ("optional_fields", "payload_class", "payload_optional_fields", "output_classes",
                  "empty_sentinels", "connector_guards", "connector_contexts", "optional_contexts"):
        assert getattr(config, field) == getattr(defaults, field), field
    assert config.source == ROOT / "setup.cfg" or config.source.name == "setup.cfg"

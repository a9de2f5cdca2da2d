"""Fetch the real vLLM sources the tests read, before pytest starts, saying what is downloaded.

`scripts/test.sh` runs this first, so that a first run shows its progress instead of a silent
pause inside one test. What is already in the cache costs nothing. A download that fails is
reported here in one line and left to the tests that need it (they fail under `CI=true`).
"""

from __future__ import annotations

import sys
import time

import pytest

from tests.support.vllm_sdist import vllm_sdist_tree
from tests.test_binding import BINDING_PLUGINS
from tests.test_real_plugins import PLUGINS
from tests.support.vllm_sources import CACHE, plugin_tree, vllm_tree

# every release a test reads through `vllm_tree`
WHEELS = ("0.10.0", "0.10.1", "0.13.0", "0.17.1", "0.20.0", "0.22.1", "0.24.0", "0.33.0")
SDISTS = ("0.33.0",)  # every release a test reads through `vllm_sdist_tree`
# What a first run downloads: the archives above and the plugins' wheels, summed from the cache
# (tests/test_figures.py measures it again and holds the README to the same figure).
DOWNLOAD_SIZE_GB = 2.9


def _fetch(what: str, cached: bool, fetch) -> None:  # type: ignore[no-untyped-def]
    if cached:
        print(f"  {what}: cached", flush=True)
        return
    print(f"  {what}: fetching ...", end="", flush=True)
    started = time.monotonic()
    try:
        fetch()
    except (pytest.skip.Exception, pytest.fail.Exception) as exc:  # what the cache helpers raise
        print(f" not available ({str(exc).strip()[:200]}); the tests that need it will say so", flush=True)
        return
    print(f" done in {time.monotonic() - started:.0f} s", flush=True)


def main() -> int:
    print(f"Real vLLM sources for the tests (cached under {CACHE}; a first run downloads about "
          f"{DOWNLOAD_SIZE_GB} GB):", flush=True)
    for version in WHEELS:
        cached = (CACHE / "src" / f"vllm-{version}" / ".complete").is_file()
        _fetch(f"vLLM {version} wheel (only vllm/**/*.py is kept)", cached,
               lambda version=version: vllm_tree(version))
    for version in SDISTS:
        cached = (CACHE / "src" / f"vllm-{version}-sdist" / ".complete").is_file()
        _fetch(f"vLLM {version} source distribution (tests/, examples/, benchmarks/, tools/)", cached,
               lambda version=version: vllm_sdist_tree(version))
    for plugin in (*PLUGINS, *BINDING_PLUGINS):
        cached = (CACHE / "src" / f"{plugin.distribution}-{plugin.version}" / ".complete").is_file()
        _fetch(f"{plugin.distribution} {plugin.version} wheel (a plugin built on vLLM; only its *.py is kept)", cached,
               lambda plugin=plugin: plugin_tree(plugin))
    return 0


if __name__ == "__main__":
    sys.exit(main())

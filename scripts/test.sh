#!/usr/bin/env bash
# Run kvlint's test suite: creates .venv, installs kvlint with its test extras, checks the release
# (scripts/check_release.sh: builds the sdist and the wheel, installs the wheel into a fresh venv and runs
# every face from it), then runs pytest. Extra arguments go to pytest (e.g. `scripts/test.sh -k fixtures`).
# KVLINT_SKIP_RELEASE_CHECK=1 skips the release check (about 20 s) for a quick local run; CI never sets it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
# The distribution was called `kvlint` before it became `vllm-kvlint` (the name `kvlint` on the
# registry is another project): drop an old editable install so the flake8 plugin is not registered twice.
if .venv/bin/python -m pip show --quiet kvlint >/dev/null 2>&1; then
    .venv/bin/python -m pip uninstall --quiet --yes kvlint
fi
rm -rf kvlint.egg-info  # setuptools' metadata of that old name, found on sys.path from the checkout
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
if [ "${KVLINT_SKIP_RELEASE_CHECK:-0}" != "1" ]; then
    scripts/check_release.sh
fi
# The real vLLM sources the tests read: fetched (once, cached) before pytest, with a line per download.
.venv/bin/python -m tests.support.fetch_sources
exec .venv/bin/python -m pytest "$@"

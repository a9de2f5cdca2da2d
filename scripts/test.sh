#!/usr/bin/env bash
# Run kvlint's test suite: creates .venv, installs kvlint with its test extras, runs pytest.
# Extra arguments go to pytest (e.g. `scripts/test.sh -k fixtures`).
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
# The real vLLM sources the tests read: fetched (once, cached) before pytest, with a line per download.
.venv/bin/python -m tests.support.fetch_sources
exec .venv/bin/python -m pytest "$@"

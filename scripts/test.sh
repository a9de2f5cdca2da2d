#!/usr/bin/env bash
# Run kvlint's test suite: creates .venv, installs kvlint with its test extras, runs pytest.
# Extra arguments go to pytest (e.g. `scripts/test.sh -k fixtures`).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
exec .venv/bin/python -m pytest "$@"

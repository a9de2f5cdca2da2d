#!/usr/bin/env bash
# The main job on a fresh clone: install kvlint into .venv and audit the bundled
# example tree (fixtures/vllm_like, a hand-written vLLM-shaped package with bugs):
# every output construction, connector-output read and sentinel use, then the findings.
# Extra arguments replace the default path (e.g. `scripts/run-example.sh ~/src/vllm`).
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
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
if [ "$#" -eq 0 ]; then
    set -- fixtures/vllm_like
fi
status=0
.venv/bin/kvlint audit "$@" || status=$?
if [ "$status" -eq 1 ]; then
    echo "kvlint: exit 1 means findings (the example tree is full of them on purpose)" >&2
fi
exit "$status"

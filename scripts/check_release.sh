#!/usr/bin/env bash
# What a release is checked for before anyone pins it: `python -m build` makes an sdist and a wheel that
# `twine check` passes and that hold what they should; the wheel (not the checkout) installed into a fresh
# venv runs every face (`kvlint --version`, `kvlint check` and `kvlint audit` on the bundled example tree,
# `flake8 --select KVC`, mypy with the plugin on a seed bug); the workflows under .github/ validate against
# GitHub's workflow schema. Every step fails the script loudly. scripts/test.sh runs it before pytest.
#
#   scripts/check_release.sh [--dist DIR]     # --dist: keep the sdist and the wheel in DIR (the release workflow)
#
# The tools (build, twine, check-jsonschema) come from .venv, as scripts/test.sh installs them with the test
# extras; they are installed there when missing. PYTHON names the interpreter of the fresh venv.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PYTHON="${PYTHON:-python3}"
DIST=""
if [ "${1:-}" = "--dist" ]; then
    DIST="${2:?--dist needs a directory}"
    shift 2
fi
[ "$#" -eq 0 ] || { echo "usage: scripts/check_release.sh [--dist DIR]" >&2; exit 2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kvlint-release.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
step() { echo "== check_release: $*"; }
fail() { echo "check_release: FAILED: $*" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
TOOLS=.venv/bin/python
if ! "$TOOLS" -c "import build, twine, check_jsonschema" 2>/dev/null; then
    step "installing build, twine and check-jsonschema into .venv"
    "$TOOLS" -m pip install --quiet --disable-pip-version-check build twine check-jsonschema
fi

step "workflows against GitHub's workflow schema (check-jsonschema's built-in copy: no network)"
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
found=()
for workflow in "${workflows[@]}"; do [ -f "$workflow" ] && found+=("$workflow"); done
[ "${#found[@]}" -gt 0 ] || fail "no workflow under .github/workflows"
.venv/bin/check-jsonschema --builtin-schema vendor.github-workflows "${found[@]}" \
    || fail "a workflow does not validate against vendor.github-workflows"
.venv/bin/check-jsonschema --builtin-schema custom.github-workflows-require-timeout "${found[@]}" \
    || fail "a workflow job has no timeout-minutes"

step "python -m build"
OUT="$WORK/dist"
"$TOOLS" -m build --outdir "$OUT" . >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; fail "python -m build"; }
if grep -E "^(WARNING|SetuptoolsDeprecationWarning)|Warning:" "$WORK/build.log" | grep -v "byte-compiling is disabled" >&2; then
    fail "python -m build warned (above)"
fi
VERSION="$("$TOOLS" -c 'import re, pathlib; print(re.search(r"__version__ = \"([^\"]+)\"", pathlib.Path("kvlint/__init__.py").read_text()).group(1))')"
SDIST="$OUT/vllm_kvlint-$VERSION.tar.gz"
WHEEL="$OUT/vllm_kvlint-$VERSION-py3-none-any.whl"
[ -f "$SDIST" ] && [ -f "$WHEEL" ] || { ls -l "$OUT" >&2; fail "expected $SDIST and $WHEEL"; }
grep -q "^## \[$VERSION\] - " CHANGELOG.md || fail "CHANGELOG.md has no entry for $VERSION"

step "twine check --strict"
.venv/bin/twine check --strict "$SDIST" "$WHEEL" || fail "twine check"

step "what the sdist and the wheel hold"
"$TOOLS" - "$SDIST" "$WHEEL" "$VERSION" <<'EOF' || fail "the sdist or the wheel holds the wrong files"
"""The sdist holds the package, its docs and the build files; the wheel the package and its data; nothing else."""
import pathlib
import sys
import tarfile
import zipfile

sdist, wheel, version = sys.argv[1:]
package = {path.as_posix() for path in pathlib.Path("kvlint").rglob("*")
           if path.is_file() and "__pycache__" not in path.parts}
docs = {path.as_posix() for path in pathlib.Path("docs").glob("*.md")}
top = {"README.md", "CHANGELOG.md", "pyproject.toml", "setup.cfg", "MANIFEST.in"}
egg = {f"vllm_kvlint.egg-info/{name}" for name in
       ("PKG-INFO", "SOURCES.txt", "dependency_links.txt", "entry_points.txt", "requires.txt", "top_level.txt")}
prefix = f"vllm_kvlint-{version}/"
with tarfile.open(sdist) as archive:
    held = {member.name.removeprefix(prefix) for member in archive.getmembers() if member.isfile()}
wanted = package | docs | top | egg | {"PKG-INFO"}
problems = [f"sdist lacks {path}" for path in sorted(wanted - held)]
problems += [f"sdist holds {path}" for path in sorted(held - wanted)]
with zipfile.ZipFile(wheel) as archive:
    names = set(archive.namelist())
    info = f"vllm_kvlint-{version}.dist-info/"
    entry_points = archive.read(info + "entry_points.txt").decode()
    metadata = archive.read(info + "METADATA").decode()
problems += [f"wheel lacks {path}" for path in sorted(package - names)]
problems += [f"wheel holds {path}" for path in sorted(names) if not (path in package or path.startswith(info))]
for line in ("kvlint = kvlint:run", "KVC = kvlint.flake8_plugin:KVLintChecker"):
    if line not in entry_points:
        problems.append(f"wheel's entry_points.txt lacks {line!r}")
for line in (f"Version: {version}", "Name: vllm-kvlint", "License-Expression: Apache-2.0"):
    if line not in metadata.splitlines():
        problems.append(f"wheel's METADATA lacks {line!r}")
for problem in problems:
    print(problem, file=sys.stderr)
print(f"sdist: {len(held)} files, wheel: {len(names)} files")
sys.exit(1 if problems else 0)
EOF

step "a fresh venv with the wheel (and its flake8 and mypy extras), not the checkout"
"$PYTHON" -m venv "$WORK/venv"
BIN="$WORK/venv/bin"
"$BIN/python" -m pip install --quiet --disable-pip-version-check "$WHEEL[flake8,mypy]" 2>"$WORK/pip.err" \
    || { cat "$WORK/pip.err" >&2; fail "pip install the wheel"; }
# Everything below runs in a directory outside the checkout, so nothing can import the checkout's kvlint.
EXAMPLE="$WORK/example"
mkdir -p "$EXAMPLE/fixtures"
cp fixtures/__init__.py "$EXAMPLE/fixtures/"
cp -R fixtures/vllm_like "$EXAMPLE/fixtures/vllm_like"
find "$EXAMPLE" -name __pycache__ -prune -exec rm -rf {} +
touch "$EXAMPLE/pyproject.toml"  # the project root; kvlint's defaults (the checkout's setup.cfg only restates them)
cd "$EXAMPLE"
installed="$("$BIN/python" -c 'import kvlint; print(kvlint.__file__)')"
case "$installed" in
    "$WORK/venv/"*) ;;
    *) fail "kvlint is imported from $installed, not from the fresh venv" ;;
esac

step "kvlint --version"
reported="$("$BIN/kvlint" --version)" || fail "kvlint --version exited $?"
[ "$reported" = "kvlint $VERSION" ] || fail "kvlint --version said '$reported', not 'kvlint $VERSION'"
"$BIN/kvlint" explain KVC001 >/dev/null || fail "kvlint explain KVC001"
[ -f "$(dirname "$installed")/rules/rules.md" ] || fail "the wheel installed no kvlint/rules/rules.md"

# The findings a face reports on the example tree must be exactly its `# expect:` markers.
compare() {  # compare FACE FILE: FILE holds one `path:line:col: CODE ...` per finding
    "$BIN/python" - "$1" "$2" <<'EOF'
import collections
import pathlib
import re
import sys

face, report = sys.argv[1:]
expect = re.compile(r"#\s*expect:\s*(KVC\d{3}(?:\s*,\s*KVC\d{3})*)")
expected = collections.Counter()
for path in sorted(pathlib.Path("fixtures/vllm_like").rglob("*.py")):
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if match := expect.search(line):
            for code in re.split(r"\s*,\s*", match.group(1)):
                expected[(path.as_posix(), number, code)] += 1
found = collections.Counter()
for line in pathlib.Path(report).read_text().splitlines():
    if match := re.match(r"^(?:\./)?(\S+?):(\d+):\d+: (KVC\d{3}) ", line):
        found[(match.group(1), int(match.group(2)), match.group(3))] += 1
missing, extra = sorted((expected - found).elements()), sorted((found - expected).elements())
for item in missing:
    print(f"{face}: missing {item}", file=sys.stderr)
for item in extra:
    print(f"{face}: unexpected {item}", file=sys.stderr)
print(f"{face}: {sum(found.values())} findings, the {sum(expected.values())} the markers expect"
      if not (missing or extra) else f"{face}: {len(missing)} missing, {len(extra)} unexpected")
sys.exit(1 if missing or extra else 0)
EOF
}

step "kvlint check fixtures/vllm_like (the bundled example tree: its known findings, exit 1)"
status=0
"$BIN/kvlint" check --jobs 2 fixtures/vllm_like >"$WORK/check.txt" 2>"$WORK/check.err" || status=$?
[ "$status" -eq 1 ] || { cat "$WORK/check.err" >&2; fail "kvlint check exited $status, not 1"; }
compare "kvlint check" "$WORK/check.txt" || fail "kvlint check's findings are not the example tree's markers"

step "kvlint audit fixtures/vllm_like (the main job of scripts/run-example.sh)"
status=0
"$BIN/kvlint" audit --format json fixtures/vllm_like >"$WORK/audit.json" 2>"$WORK/audit.err" || status=$?
[ "$status" -eq 1 ] || { cat "$WORK/audit.err" >&2; fail "kvlint audit exited $status, not 1"; }
"$BIN/python" -c 'import json, sys; report = json.load(open(sys.argv[1])); assert report["findings"], "no findings"' \
    "$WORK/audit.json" || fail "kvlint audit's JSON report"

step "flake8 --select KVC,E999,E902 fixtures/vllm_like (the plugin the wheel registers)"
"$BIN/flake8" --version | tr -s ' \n' ' ' | grep -q "vllm-kvlint: $VERSION" || fail "flake8 does not list vllm-kvlint $VERSION"
status=0
"$BIN/flake8" --select KVC,E999,E902 fixtures/vllm_like >"$WORK/flake8.txt" 2>"$WORK/flake8.err" || status=$?
[ "$status" -eq 1 ] || { cat "$WORK/flake8.err" >&2; fail "flake8 exited $status, not 1"; }
compare "flake8" "$WORK/flake8.txt" || fail "flake8's KVC findings are not the example tree's markers"

step "mypy with plugins = kvlint.mypy_plugin on the seed bug"
mkdir -p "$WORK/mypy" && cd "$WORK/mypy"
# The issue-28 shape: the aggregator's `outputs` unannotated, the dereference in the last loop of the module's
# last function (no plugin hook fires after it), the `if not output: continue` guard removed.
cat >seed_bug.py <<'PY'
from dataclasses import dataclass
from typing import Optional


@dataclass
class KVConnectorOutput:
    finished_sending: Optional[set[str]] = None
    finished_recving: Optional[set[str]] = None


@dataclass
class ModelRunnerOutput:
    kv_connector_output: Optional[KVConnectorOutput] = None


def aggregate(outputs):
    finished: set[str] = set()
    for output in outputs:
        output = output.kv_connector_output
        finished.update(output.finished_sending or ())
    return finished
PY
printf '[mypy]\nplugins = kvlint.mypy_plugin\ncheck_untyped_defs = True\n' >mypy.ini
status=0
"$BIN/mypy" --no-incremental --show-column-numbers seed_bug.py >"$WORK/mypy.txt" 2>&1 || status=$?
cat "$WORK/mypy.txt"
[ "$status" -eq 1 ] || fail "mypy exited $status, not 1"
grep -q '^seed_bug.py:20:25: error: KVC001 .*\[kvc\]$' "$WORK/mypy.txt" || fail "mypy did not report KVC001 [kvc] at 20:25"
sed -i 's/        output = output.kv_connector_output/&\n        if not output:\n            continue/' seed_bug.py
"$BIN/mypy" --no-incremental seed_bug.py >"$WORK/mypy-fixed.txt" 2>&1 || { cat "$WORK/mypy-fixed.txt" >&2; fail "mypy on the fixed seed bug"; }
cat "$WORK/mypy-fixed.txt"

cd "$ROOT"
if [ -n "$DIST" ]; then
    mkdir -p "$DIST"
    cp "$SDIST" "$WHEEL" "$DIST/"
    step "kept $(basename "$SDIST") and $(basename "$WHEEL") in $DIST"
fi
step "all passed (vllm-kvlint $VERSION)"

"""Where the mypy plugin's time goes: one mypy run over vLLM 0.33.0's `vllm/` under vLLM's `[tool.mypy]` with
`kvlint.mypy_plugin` (the tree and configuration of `bench/mypy_vllm_bench.py`), in this process, with the
CPU time of each of the plugin's entry points added up as mypy calls them.

The hooks mypy asks for by fullname (`get_attribute_hook`, `get_method_hook`, `get_function_hook`, hundreds of
thousands of calls) are only counted during the run, since timing each call would cost more than the call;
afterwards the same calls, in the same proportions, are replayed against the plugin and timed. The engine
runs in mypy's process (`KVLINT_MYPY_WORKER=0`) unless `--helper`, so that its time shows here. mypy comes from
the test venv of `--mypy` (default 1.20.2) or `--python`; `--kvlint DIR` profiles the kvlint found in DIR (a
checkout of another commit) instead of this one. `--engine` runs no mypy: it gives the helper's share, the
engine's steps on each file that needs it, analysed one at a time in a fresh process as the helper does:

    .venv/bin/python bench/mypy_profile.py [--helper] [--engine] [--kvlint DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.mypy_vllm_bench import make_tree, mypy_command  # noqa: E402
from kvlint.running.run_record import RACY_NS  # noqa: E402
from tests.test_mypy_plugin import venv_dir  # noqa: E402

# Run inside mypy's Python: time the plugin's entry points, run mypy, print the totals as JSON.
DRIVER = r'''
import collections, functools, json, sys, time
import mypy.main, mypy.plugin  # mypy's own imports are not the plugin's
started = time.process_time()
import kvlint.mypy_plugin as plugin
imported = time.process_time() - started
totals = collections.defaultdict(float)
walls = collections.defaultdict(float)
counts = collections.Counter()
asked = {"get_attribute_hook": collections.Counter(), "get_method_hook": collections.Counter(),
         "get_function_hook": collections.Counter()}

def timed(name, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start, started = time.process_time(), time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            totals[name] += time.process_time() - start
            walls[name] += time.perf_counter() - started
            counts[name] += 1
    return wrapper

def counted(name, lookup):  # the plugin's hook lookups are attributes of its instance (its routes' own lookups)
    names = asked[name]
    def wrapper(fullname):
        names[fullname] += 1
        return lookup(fullname)
    wrapper.lookup = lookup
    return wrapper

cls = plugin.KvlintPlugin
for name in ("__init__", "get_additional_deps", "report_config_data", "_narrow_optional_field", "_anchor_attribute",
             "_anchor_call", "_check_output_construction"):
    if name in cls.__dict__:
        setattr(cls, name, timed(name, cls.__dict__[name]))
for module, name in ((plugin, "analyse_module"), (plugin, "scan_module"), (plugin, "_append_end_of_module")):
    if hasattr(module, name):
        setattr(module, name, timed(name, getattr(module, name)))
for name in ("take", "submit"):
    setattr(plugin.AnalysisWorker, name, timed(f"AnalysisWorker.{name}", getattr(plugin.AnalysisWorker, name)))
instances = []
original_init = cls.__init__
def remembered(self, options):
    original_init(self, options)
    for name in asked:
        setattr(self, name, counted(name, getattr(self, name)))
    instances.append(self)
cls.__init__ = remembered

from mypy.main import main
run_started = time.process_time()
try:
    main(args=sys.argv[1:], clean_exit=True)
except SystemExit:
    pass
run = time.process_time() - run_started
replayed = {}
for name, names in asked.items():  # the same calls again, timed as a whole
    hook = getattr(instances[0], name).lookup if instances else None
    calls = [fullname for fullname, times in names.items() for _ in range(times)]
    start = time.process_time()
    for fullname in calls:
        hook(fullname)
    replayed[name] = {"calls": len(calls), "names": len(names), "seconds": time.process_time() - start}
entry_points = {name: {"calls": counts[name], "seconds": totals[name], "wall": walls[name]} for name in totals}
print(json.dumps({"import": imported, "run": run, "routing": replayed, "entry_points": entry_points}))
'''

# Run inside mypy's Python, in the tree: the engine's steps on each file the byte scan leaves, as the helper
# takes them (one `analyse_module` each, in one process).
ENGINE_DRIVER = r'''
import collections, functools, json, os, time
import kvlint.engine as engine
import kvlint.binding.module_resolution as resolution
from kvlint.config import DirectoryConfigs
from kvlint.mypy_worker import analyse_module, scan_module
totals, counts = collections.Counter(), collections.Counter()

def timed(owner, name, label):
    function = getattr(owner, name)
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            totals[label] += time.process_time() - start
            counts[label] += 1
    setattr(owner, name, wrapper)

paths = sorted(os.path.join(folder, name) for folder, _, names in os.walk("vllm") for name in names
               if name.endswith(".py"))
configs = DirectoryConfigs()
configured = {path: configs.for_file(path) for path in paths}
relevant = [path for path in paths if scan_module(path, configured[path]) is None]
steps = ((engine, "prepare_source", "prepare_source (parse, declarations)"),
         (resolution, "imported_declarations", "imported_declarations (modules imported)"),
         (resolution, "caller_declarations", "caller_declarations"),
         (resolution, "callee_declarations", "callee_declarations (the project's calls)"),
         (resolution.ProjectBeyondRun, "_read", "  of which ProjectBeyondRun._read"),
         (resolution, "project_files", "    of which project_files (the walk)"),
         (engine, "analyse_prepared", "analyse_prepared (the flow analysis)"))
for owner, name, label in steps:
    timed(owner, name, label)
start = time.process_time()
for path in relevant:
    analyse_module(path, configured[path])
print(json.dumps({"files": len(paths), "relevant": len(relevant), "engine": time.process_time() - start,
                  "steps": {label: {"calls": counts[label], "seconds": totals[label]} for _, _, label in steps}}))
'''


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mypy", default="1.20.2", help="mypy version of a test venv (default: 1.20.2)")
    parser.add_argument("--python", type=Path, help="a Python with mypy and pydantic installed (overrides --mypy)")
    parser.add_argument("--helper", action="store_true", help="leave the engine in its helper process")
    parser.add_argument("--kvlint", type=Path, help="profile the kvlint package found in this directory")
    parser.add_argument("--engine", action="store_true",
                        help="no mypy: the engine's steps on the files that need it, in a fresh process")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    python = args.python or venv_dir(args.mypy) / "bin" / "python"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("KVLINT_MYPY_", "MYPY")) and key not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env["KVLINT_MYPY_WORKER"] = "1" if args.helper else "0"
    if args.kvlint:
        env["PYTHONPATH"] = str(args.kvlint.resolve())  # before the editable install's finder
    with tempfile.TemporaryDirectory(prefix="kvlint-mypy-profile-") as scratch_dir:
        scratch = Path(scratch_dir)
        tree, configs = make_tree(scratch)
        if args.engine:
            time.sleep(RACY_NS / 1e9 + 0.1)  # the copy's statuses settle, as a checkout's have: the helper's memo
            # of the project (`mypy_worker.ProjectMemo`) trusts no status younger than that
            completed = subprocess.run([str(python), "-c", ENGINE_DRIVER], cwd=tree, env=env, capture_output=True,
                                       text=True)
            return engine_report(completed, args.json)
        command = mypy_command(python, configs["with"], scratch / "cache")
        command[1:3] = ["-c", DRIVER]  # `python -m mypy ARGS` becomes the driver with the same ARGS
        completed = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
        shutil.rmtree(scratch / "cache", ignore_errors=True)
    figures = json.loads(completed.stdout.splitlines()[-1])
    plugin = figures["import"] + sum(entry["seconds"] for name, entry in figures["entry_points"].items()
                                     if name in ("__init__", "get_additional_deps", "report_config_data",
                                                 "_narrow_optional_field", "_anchor_attribute", "_anchor_call",
                                                 "_check_output_construction"))
    plugin += sum(entry["seconds"] for entry in figures["routing"].values())
    figures["plugin"] = plugin
    print(f"mypy in-process run: {figures['run']:.2f} s CPU; the plugin's entry points: {plugin:.3f} s "
          f"({plugin / figures['run']:.1%}), engine in {'its helper' if args.helper else 'this process'}")
    print(f"  {'import of kvlint.mypy_plugin':<34} {'':>9} {figures['import'] * 1000:9.1f} ms")
    for name, entry in sorted(figures["entry_points"].items(), key=lambda item: -item[1]["seconds"]):
        print(f"  {name:<34} {entry['calls']:>9} {entry['seconds'] * 1000:9.1f} ms")
    take = figures["entry_points"].get("AnalysisWorker.take")
    if take:
        print(f"  {'waited for the helper (wall)':<34} {take['calls']:>9} {take['wall'] * 1000:9.1f} ms")
    for name, entry in figures["routing"].items():
        print(f"  {name + ' (replayed)':<34} {entry['calls']:>9} {entry['seconds'] * 1000:9.1f} ms"
              f"  ({entry['names']} names)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def engine_report(completed: subprocess.CompletedProcess[str], json_file: Path | None) -> int:
    if completed.returncode != 0:
        sys.stderr.write(completed.stderr)
        return completed.returncode
    figures = json.loads(completed.stdout.splitlines()[-1])
    print(f"the engine on the {figures['relevant']} of {figures['files']} files that need it, one at a time in a "
          f"fresh process: {figures['engine']:.3f} s CPU")
    for name, entry in figures["steps"].items():
        print(f"  {name:<44} {entry['calls']:>5} {entry['seconds'] * 1000:9.1f} ms")
    if json_file:
        json_file.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

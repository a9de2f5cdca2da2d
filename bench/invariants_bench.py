"""What checking the encoder-cache invariant costs: the cold audit of a vLLM release with both presets
(the default) against the same audit with `presets = ["kv"]`.

    .venv/bin/python bench/invariants_bench.py                  # vLLM 0.33.0, 9 alternating rounds
    .venv/bin/python bench/invariants_bench.py --rounds 15 --version 0.13.0

One engine pass serves every invariant, so the second invariant should cost only what its own names
add: a few more relevant files and sites. Issue 11's bound is a ratio of at most 1.1. Both commands run
cold (no result cache), one after the other in each round, in alternating order; the peer is kvlint
itself, on the same tree in the same run. The bound is checked on the median of the rounds' own ratios
(each round's two runs meet the same load on a shared machine, where the ratio of the two medians
mixes runs minutes apart); both figures are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.audit_bench import timed_run, tree_facts  # noqa: E402

BOUND = 1.1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="0.33.0", help="vLLM release (default: 0.33.0)")
    parser.add_argument("--rounds", type=int, default=15, help="alternating rounds (default: 15)")
    args = parser.parse_args()

    from tests.vllm_sources import vllm_tree

    tree = vllm_tree(args.version)
    with tempfile.TemporaryDirectory(prefix="kvlint-bench-") as scratch:
        kv_only = Path(scratch, "pyproject.toml")
        kv_only.write_text('[tool.kvlint]\npresets = ["kv"]\n', encoding="utf-8")
        audit = [sys.executable, "-m", "kvlint", "audit", "vllm", "--format", "json", "--quiet", "--exit-zero"]
        runs = {"both presets (kv, ec)": audit, 'presets = ["kv"]': [*audit, "--config", str(kv_only)]}
        for command in runs.values():  # warm the page cache and the .pyc files; not counted
            timed_run(command, tree)
        times: dict[str, list[float]] = {name: [] for name in runs}
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        for round_number in range(args.rounds):
            names = list(runs) if round_number % 2 == 0 else list(runs)[::-1]
            for name in names:
                wall, seconds, _, _ = timed_run(runs[name], tree)
                times[name].append(wall)
                cpu[name].append(seconds)
    print(f"vLLM {args.version}: {tree_facts(tree)}; {args.rounds} alternating rounds, cold; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| kvlint audit with | wall median s | min s | max s | CPU median s (user+sys) |\n"
          "| --- | ---: | ---: | ---: | ---: |")
    for name, series in times.items():
        print(f"| {name} | {statistics.median(series):.3f} | {min(series):.3f} | {max(series):.3f} "
              f"| {statistics.median(cpu[name]):.3f} |")
    both, kv = (statistics.median(series) for series in times.values())
    both_cpu, kv_cpu = (statistics.median(series) for series in cpu.values())
    paired = sorted(b / k for b, k in zip(*times.values()))
    ratio = statistics.median(paired)
    quartiles = statistics.quantiles(paired, n=4)
    print(f"\nboth / kv only, median of the rounds' wall-time ratios: {ratio:.3f} (bound: {BOUND}; quartiles "
          f"{quartiles[0]:.3f} to {quartiles[2]:.3f}); ratio of the medians: {both / kv:.3f}; CPU-time ratio of the "
          f"medians: {both_cpu / kv_cpu:.3f}")
    return 0 if ratio <= BOUND else 1


if __name__ == "__main__":
    sys.exit(main())

"""Multi-core scaling: simulated cycles of each model on 1, 2 and 4 cores of an arch
(default: the compute-bound `default,dram_bw=4096`), and the 4-vs-1-core speedup;
the roofline models and two BERT-base layers at 128 tokens (`bench/transformers.py`).

    python bench/multicore.py [--arch SPEC] [--models a,b] [--out bench/results/multicore.md]
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import bench_args, close_table, geomean, model_list, simulate  # noqa: E402
from bench.transformers import MODELS as TRANSFORMERS  # noqa: E402

CORES = (1, 2, 4)


def main() -> int:
    catalogue = {**model_list(), "bert_2l_128": TRANSFORMERS["bert_2l_128"]}
    arch, todo, out = bench_args(__doc__, default_arch="default,dram_bw=4096", catalogue=catalogue)
    lines = [f"arch: {arch.spec()} (cores varied)", "",
             "| model | " + " | ".join(f"{c} core{'s' if c > 1 else ''}" for c in CORES) + " | speedup 4 vs 1 |",
             "|---|" + "---|" * (len(CORES) + 1)]
    speedups = []
    for name, make in todo.items():
        model, inputs = make()
        cycles = [simulate(model, inputs, replace(arch, cores=c))["cycles"] for c in CORES]
        speedups.append(cycles[0] / cycles[-1])
        lines.append(f"| {name} | " + " | ".join(map(str, cycles)) + f" | {speedups[-1]:.2f} |")
        print(lines[-1], flush=True)
    return close_table(lines, f"geometric mean speedup 4 vs 1 core: {geomean(speedups):.2f}", out)


if __name__ == "__main__":
    sys.exit(main())

"""Memory plans: DRAM activation arena vs the lower bound over the same schedule,
weights, SRAM peak per core and event slots used, per model.

    python bench/memory.py [--arch SPEC] [--models a,b] [--out bench/results/memory.md]

The lower bound (`npu-memplan`) is the heaviest set of pairwise conflicting
activation buffers it finds (buffers whose tasks the schedule does not order: no
plan can overlap them), at least the most bytes live at once over program order;
arena/bound = 1.00 means the packing wastes nothing."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import bench_args, simulate, write_table  # noqa: E402


def main() -> int:
    arch, todo, out = bench_args(__doc__)
    lines = [f"arch: {arch.spec()}", "",
             "| model | DRAM arena B | lower bound B | arena/bound | weights B | SRAM peak per core B | events |",
             "|---|---|---|---|---|---|---|"]
    for name, make in todo.items():
        model, inputs = make()
        r = simulate(model, inputs, arch)
        m = r["memory"]
        ratio = m["dram_arena_bytes"] / m["dram_lower_bound_bytes"] if m["dram_lower_bound_bytes"] else 1.0
        lines.append(f"| {name} | {m['dram_arena_bytes']} | {m['dram_lower_bound_bytes']} | {ratio:.3f} "
                     f"| {m['weights_bytes']} | {', '.join(map(str, m['sram_peak_bytes']))} | {r['events_used']} |")
        print(lines[-1], flush=True)
    write_table(lines, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

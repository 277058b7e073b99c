"""Memory plans: DRAM activation arena vs the lower bound over the same schedule,
weights, SRAM peak per core and event slots used, per model.

    python bench/memory.py [--arch SPEC] [--models a,b] [--out bench/results/memory.md]

The lower bound is the most activation bytes live at once over program order
(`npu-memplan`); arena/bound = 1.00 means the packing wastes nothing."""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from npu_dialects.arch import parse_arch_spec  # noqa: E402
from bench.roofline import selected, simulate, write_table  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="default")
    ap.add_argument("--models", default=None)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    arch = parse_arch_spec(args.arch)
    todo = selected(args.models)
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
    write_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Batch-split layer groups: LeNet at batch 8, 16 and 64 with and without them, on
four cores and on one.

    python bench/batch_split.py [--out bench/results/batch_split.md]

Per batch and arch: simulated cycles with `npu-default{batch-split=false}` and with
batch-split groups (the default), their ratio, the roofline bound, and the kernels
of the default compile (a batch-split group as `name [slices x rows]`). Cycles are
deterministic (seeded random weights and inputs)."""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import close_table, geomean, simulate  # noqa: E402
from npu_dialects.arch import parse_arch_spec  # noqa: E402
from tools.testkit import models, zoo  # noqa: E402
from tools.testkit.e2e import grouped_kernels  # noqa: E402

BATCHES = (8, 16, 64)
ARCHES = ("default", "default,cores=1")


def groups(model, arch) -> list[str]:
    """The kernels npu-layer-group leaves, batch-split ones as `name [slices x rows]`."""
    return [k.kernel.data + (f" [{k.trip_counts[0]} x {k.tile_sizes[0]}]" if k.loop_names == ["n"] else "")
            for k in grouped_kernels(model, arch) if k.kind.data != "view"]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--out", default=None)
    out = ap.parse_args().out
    lines = ["`python bench/batch_split.py`", "",
             "| model | arch | cycles without | cycles | speedup | roofline | ratio | kernels |",
             "|---|---|---|---|---|---|---|---|"]
    gains = []
    t0 = time.time()
    for spec in ARCHES:
        arch = parse_arch_spec(spec)
        for batch in BATCHES:
            model = models.lenet(batch=batch)
            inputs = zoo.random_inputs(model, 0)
            off = simulate(model, inputs, arch, batch_split=False)
            on = simulate(model, inputs, arch)
            gains.append(off["cycles"] / on["cycles"])
            lines.append(f"| lenet_b{batch} | {spec} | {off['cycles']} | {on['cycles']} | {gains[-1]:.2f} "
                         f"| {on['roofline_cycles']} | {on['cycles'] / on['roofline_cycles']:.2f} "
                         f"| {', '.join(groups(model, arch))} |")
            print(lines[-1], flush=True)
    return close_table(lines, f"geometric mean speedup from batch-split groups {geomean(gains):.2f} "
                              f"({len(gains)} runs, {time.time() - t0:.0f} s)", out)


if __name__ == "__main__":
    sys.exit(main())

"""Cost-model calibration: predicted vs simulated cycles per kernel.

    python bench/calibration.py [--arch SPEC] [--models a,b] [--out bench/results/calibration.md]

For every kernel of each model (compiled for ARCH, run on ARCH) it compares the
cost model's prediction (`predicted_cycles` of its tasks, on the parts it was
split over) with the simulated run time of its longest task (`task_cycles`: from
the task's start, after its event waits, to its end - from its body's start for a
task that prefetched, less the time it stood at its gate with nothing in flight;
the kernel's span across
cores also holds the skew of where the schedule placed its parts, which is not
the kernel's cost), and reports the error per
model and the geometric mean of |simulated/predicted| over all kernels
(exp(mean |log ratio|) - 1). Calibration constants belong to the arch, not to
passes: this script is how to see whether they need to change."""

from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import bench_args, close_table, simulate  # noqa: E402


def kernel_errors(report: dict) -> list[tuple[str, int, float]]:
    """(kernel, predicted, simulated) for kernels with a prediction and a span > 0."""
    out = []
    for k in report["kernels"]:
        pred = k.get("predicted_cycles")
        if pred and k["task_cycles"] and pred > 0:
            out.append((k["name"], pred, float(k["task_cycles"])))
    return out


def main() -> int:
    arch, todo, out = bench_args(__doc__)
    lines = [f"arch: {arch.spec()}", "",
             "| model | kernels | geo-mean error | worst kernel (predicted -> simulated) |", "|---|---|---|---|"]
    logs: list[float] = []
    for name, make in todo.items():
        model, inputs = make()
        rows = kernel_errors(simulate(model, inputs, arch))
        if not rows:
            continue
        errs = [abs(math.log(sim / pred)) for _, pred, sim in rows]
        logs += errs
        worst = max(rows, key=lambda r: abs(math.log(r[2] / r[1])))
        lines.append(f"| {name} | {len(rows)} | {math.exp(sum(errs) / len(errs)) - 1:.1%} "
                     f"| {worst[0]} ({worst[1]} -> {worst[2]:.0f}) |")
        print(lines[-1], flush=True)
    return close_table(lines, f"all kernels: geometric-mean error {math.exp(sum(logs) / len(logs)) - 1:.1%} "
                              f"over {len(logs)}", out)


if __name__ == "__main__":
    sys.exit(main())

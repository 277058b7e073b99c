"""Timing-only simulation against the functional run (issue 19: at least 5x faster on
ResNet-50 with identical cycles).

    python bench/timing_only.py [--repeat N] [--models a,b] [--out bench/results/timing_only.md]

Models: light-zoo CNNs (seeded weights, `tools/testkit/zoo.py:prepare`) and the
built-in sweep models of `tools/dse/models.py`. Each is compiled once on the default
arch; then `runtime.run.run` simulates it functionally (seeded random inputs, the
sanitizer off as `npu-run` runs by default) and timing-only (no weights, no inputs),
alternately, --repeat times each. Columns: the median wall seconds of each, their
ratio, the same for CPU seconds of the process (`time.process_time`: steadier than
wall time on a loaded machine, though a busy machine inflates it too), and whether
the whole run reports (cycles, DRAM bytes, per-kernel rows, utilisation, memory) are
identical. Wall times are medians on a shared 2-core machine (load average in the
heading): compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import write_table  # noqa: E402
from runtime.run import random_inputs, run  # noqa: E402
from sim import signature  # noqa: E402
from tools.api import compile as compile_model  # noqa: E402
from tools.dse.models import display_name, load  # noqa: E402

MODELS = ("resnet50", "squeezenet", "inception_v1", "densenet121", "mobilenet_v2", "bert_base_128")
TARGET = 5.0  # acceptance on ResNet-50


def measure(name: str, repeat: int) -> dict:
    import onnx
    os.environ.pop("NPU_SANITIZE", None)
    model = onnx.load_from_string(load(name))
    t0 = time.perf_counter()
    exe = compile_model(model)
    compile_s = time.perf_counter() - t0
    inputs = random_inputs(signature(exe.module), 0)
    full_t, timed_t, full_c, timed_c = [], [], [], []
    same = True
    cycles = 0
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        full = run(exe.module, exe.weights, inputs, sanitize=False)
        t1, c1 = time.perf_counter(), time.process_time()
        timed = run(exe.module, {}, None, timing_only=True)
        t2, c2 = time.perf_counter(), time.process_time()
        full_t.append(t1 - t0)
        timed_t.append(t2 - t1)
        full_c.append(c1 - c0)
        timed_c.append(c2 - c1)
        same = same and full.report == timed.report
        cycles = timed.report["cycles"]
    f, t = statistics.median(full_t), statistics.median(timed_t)
    fc, tc = statistics.median(full_c), statistics.median(timed_c)
    return {"model": display_name(name), "tasks": timed.report["tasks"], "cycles": cycles, "compile_s": compile_s,
            "functional_s": f, "timing_s": t, "ratio": f / t, "functional_cpu": fc, "timing_cpu": tc,
            "cpu_ratio": fc / tc, "same": same}


def table(rows: list[dict], repeat: int) -> str:
    load = os.getloadavg()[0]
    lines = [f"# Timing-only simulation vs functional (median of {repeat}; load average {load:.1f} at the end)", "",
             "`python bench/timing_only.py` - same compiled program, `runtime.run.run` functional (sanitizer off) "
             "and `timing_only=True`.", "",
             "| model | tasks | cycles | compile s | functional s | timing-only s | speed-up | functional CPU s | "
             "timing-only CPU s | CPU speed-up | identical report |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['tasks']} | {r['cycles']} | {r['compile_s']:.1f} | {r['functional_s']:.2f} | "
                     f"{r['timing_s']:.2f} | {r['ratio']:.1f}x | {r['functional_cpu']:.2f} | {r['timing_cpu']:.2f} | "
                     f"{r['cpu_ratio']:.1f}x | {'yes' if r['same'] else 'NO'} |")
    r50 = next((r for r in rows if r["model"] == "resnet50"), None)
    if r50 is not None:
        verdict = "met" if r50["ratio"] >= TARGET and r50["same"] else "NOT met"
        lines += ["", f"ResNet-50: timing-only is {r50['ratio']:.1f}x faster than the functional run ({r50['cpu_ratio']:.1f}x "
                      f"in CPU time) with identical cycles ({r50['cycles']}); target >= {TARGET:g}x: {verdict}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description="Timing-only simulation against the functional run.")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--out", help="write the table (markdown) here too")
    args = ap.parse_args()
    rows = []
    for name in args.models.split(","):
        r = measure(name, args.repeat)
        print(f"{r['model']}: functional {r['functional_s']:.2f} s, timing-only {r['timing_s']:.2f} s "
              f"({r['ratio']:.1f}x; CPU {r['cpu_ratio']:.1f}x), identical: {r['same']}", file=sys.stderr)
        rows.append(r)
    text = table(rows, args.repeat)
    print(text)
    write_table(text.rstrip("\n").split("\n"), args.out)
    return 0 if all(r["same"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

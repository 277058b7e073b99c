"""Per model: import + compile wall time, simulation wall time, node counts and
simulated cycles on an arch (default: `default`).

    python bench/models.py [--arch SPEC] [--repeat N] [--out bench/results/models.md]

Wall times are medians over --repeat runs (noisy on 2-core machines: compare
ratios from one run); cycles are deterministic."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import write_table  # noqa: E402
from lowering.importer.onnx_import import import_model  # noqa: E402
from lowering.pipeline import compile_module  # noqa: E402
from npu_dialects.arch import parse_arch_spec  # noqa: E402
from npu_dialects.task import TaskOp  # noqa: E402
from npu_dialects.weights import weights_of  # noqa: E402
from runtime.run import random_inputs, run  # noqa: E402
from sim.program import signature  # noqa: E402
from tools.testkit import models  # noqa: E402

MODELS = {
    "mlp (PyTorch, batch 4)": models.torch_mlp,
    "lenet (PyTorch, batch 1)": models.torch_lenet,
    "lenet (batch 8)": lambda: models.lenet(batch=8),
    "mlp 256-512-512-10 (batch 64)": lambda: models.mlp(batch=64, sizes=(256, 512, 512, 10)),
}


def measure(model_fn, arch, repeat: int) -> dict:
    compile_s, sim_s = [], []
    for _ in range(repeat):
        model = model_fn()
        t0 = time.perf_counter()
        module, weights = import_model(model, arch)
        nodes = len(model.graph.node)
        compile_module(module, arch, weights)  # (passes fold and pack constants: they need the data)
        t1 = time.perf_counter()
        inputs = random_inputs(signature(module))
        res = run(module, weights_of(module), inputs, arch)
        t2 = time.perf_counter()
        compile_s.append(t1 - t0)
        sim_s.append(t2 - t1)
    tasks = sum(1 for op in module.walk() if isinstance(op, TaskOp))
    r = res.report
    return {"nodes": nodes, "tasks": tasks, "cycles": r["cycles"], "compile_s": statistics.median(compile_s),
            "sim_s": statistics.median(sim_s), "cube": r["utilization"]["cube"], "dma": r["utilization"]["dma"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--arch", default="default")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None, help="also write the table (markdown) to this file")
    args = ap.parse_args()
    arch = parse_arch_spec(args.arch)
    lines = [f"arch: {arch.spec()}  (wall times: median of {args.repeat})", "",
             "| model | ONNX nodes | tasks | simulated cycles | cube util | DMA util | import+compile s | simulate s |",
             "|---|---|---|---|---|---|---|---|"]
    for name, fn in MODELS.items():
        m = measure(fn, arch, args.repeat)
        lines.append(f"| {name} | {m['nodes']} | {m['tasks']} | {m['cycles']} | {m['cube']:.1%} | {m['dma']:.1%} "
                     f"| {m['compile_s']:.3f} | {m['sim_s']:.3f} |")
        print(lines[-1], flush=True)
    write_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How close compiled models run to the machine's roofline, and what the compiler
gains over an op-by-op baseline.

    python bench/roofline.py [--arch SPEC] [--models a,b] [--out bench/results/roofline.md]

Per model: simulated cycles; roofline bound = max(MACs / (cores x cube MACs per
cycle), (weights + inputs + outputs bytes) / dram_bw); their ratio; the attainable
bound (the roofline with one core's SRAM limiting reuse: `bench/attainable.py`) and
simulated cycles over it; DRAM
traffic over that minimum; the kernel bound over that minimum (the bytes if each
fused kernel of `npu-fuse` moved its operands and results exactly once: only
layer groups go below it, see `lowering/roofline.kernel_bytes`); the group floor over
that minimum (the fewest bytes of layer groups of consecutive kernels whose weights
fit one core's SRAM, activations inside a group free: `fusion_floor_bytes`); cube utilisation; and the same model compiled op by
op (no fusion, no layer groups, one core, no double buffering) with the speedup over it. Cycles
are deterministic; the light models use seeded random weights (tools/testkit/zoo.py), as do
EfficientNet-B0, ConvNeXt-Tiny and Swin-T (tools/testkit/modern_cnns.py)."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import write_table  # noqa: E402, F401  (re-exported: the other benchmarks import it from here)
from bench.attainable import attainable_cycles  # noqa: E402
from lowering.graph.fuse import RULES  # noqa: E402
from lowering.importer.onnx_import import import_model  # noqa: E402
from lowering.pipeline import compile_module  # noqa: E402
from npu_dialects.arch import parse_arch_spec  # noqa: E402
from npu_dialects.weights import weights_of  # noqa: E402
from runtime.run import run  # noqa: E402
from tools.testkit import models, modern_cnns, zoo  # noqa: E402

ModelMaker = Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]
"""Builds one bench model and its seeded inputs."""


def model_list() -> dict[str, ModelMaker]:
    out: dict[str, ModelMaker] = {name: (lambda p=path: zoo.prepare(p, 0)) for name, path in zoo.light_models().items()}
    for name in ("bert_encoder", "gpt_decoder"):
        path = models.MODELS_DIR / f"{name}.onnx"
        if path.exists():
            out[name] = lambda p=path: (lambda m: (m, zoo.random_inputs(m, 0)))(onnx.load(p))
    out["lenet_b8"] = lambda: (lambda m: (m, zoo.random_inputs(m, 0)))(models.lenet(batch=8))
    for name in ("efficientnet_b0", "convnext_tiny", "swin_t"):  # 224x224, seeded weights
        out[name] = lambda f=getattr(modern_cnns, name): (lambda m: (m, zoo.random_inputs(m, 0)))(f())
    return out


def selected(models_arg: str | None, catalogue: dict[str, ModelMaker] | None = None) -> dict[str, ModelMaker]:
    """The models of `catalogue` (default `model_list()`), restricted to a comma-separated
    subset when given."""
    todo = model_list() if catalogue is None else catalogue
    if models_arg:
        todo = {k: v for k, v in todo.items() if k in models_arg.split(",")}
    return todo


def bench_args(doc: str | None, default_arch: str = "default", catalogue: dict[str, ModelMaker] | None = None):
    """The options every bench script takes: (arch, the selected models of `catalogue`
    (default `model_list()`), --out path)."""
    ap = argparse.ArgumentParser(description=(doc or "").partition("\n")[0])
    ap.add_argument("--arch", default=default_arch)
    ap.add_argument("--models", default=None, help="comma-separated subset")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    return parse_arch_spec(args.arch), selected(args.models, catalogue), args.out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def close_table(lines: list[str], summary: str, out: str | None) -> int:
    """End a table with its summary line: print it, write the table to `out`; exit code 0."""
    lines += ["", summary]
    print(summary)
    write_table(lines, out)
    return 0


def simulate(model, inputs, arch, **options):
    """The run report of `model` compiled with `options` and simulated on `arch`, with
    `attainable_cycles` (`bench/attainable.py`, from the module between the graph
    optimisations and the rest of the pipeline)."""
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights, stage="graph", verify_each=False, **options)
    bound = attainable_cycles(module, arch)
    compile_module(module, stage="backend", verify_each=False, **options)
    report = run(module, weights_of(module), inputs, arch).report
    return {**report, "attainable_cycles": max(bound, report["roofline_cycles"])}


def precision_columns(model, inputs, arch) -> tuple[str, float | None]:
    """The f16 and int8 columns of a model (cycles, and their ratio to the roofline of the
    chip computing in that type): `--precision f16`, and the QDQ model onnxruntime's
    `quantize_static` makes of it (`bench.qdq.int8_model`); and the int8 ratio."""
    from bench.qdq import int8_model
    cells, int8 = [], None
    for label in ("f16", "int8"):
        try:
            r = simulate(model, inputs, arch, precision="f16") if label == "f16" else simulate(int8_model(model), inputs, arch)
        except Exception as e:  # noqa: BLE001 - a model that fails is a cell saying so
            cells.append(f"failed: {str(e).splitlines()[0][:80]}")
            continue
        ratio = r["cycles"] / r["roofline_cycles"]
        int8 = ratio if label == "int8" else int8
        cells.append(f"{r['cycles']} ({ratio:.2f})")
    return " | ".join(cells), int8


def main() -> int:
    arch, todo, out = bench_args(__doc__)
    one_core = replace(arch, cores=1)
    lines = [f"arch: {arch.spec()}; baseline: op by op (no fusion or layer groups), one core, no double buffering; "
             "f16: `--precision f16`; int8: onnxruntime's quantize_static QDQ model (per-channel int8 weights, "
             "symmetric int8 activations, 4 calibration inputs); their ratio is to the roofline of the chip computing "
             "in that type", "",
             "| model | cycles | roofline | ratio | attainable | / attainable | DRAM traffic / min | kernel bound / min | group floor / min "
             "| cube util | baseline cycles | speedup | f16 cycles (ratio) | int8 cycles (ratio) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ratios, attained, speedups, int8s = [], [], [], []
    t0 = time.time()
    for name, make in todo.items():
        model, inputs = make()
        r = simulate(model, inputs, arch)
        low, int8 = precision_columns(model, inputs, arch)
        if int8 is not None:
            int8s.append(int8)
        b = simulate(model, inputs, one_core, disable=("npu-fuse", "npu-layer-group"), double_buffer=False)
        traffic = (r["dram_bytes_read"] + r["dram_bytes_written"]) / r["model_min_dram_bytes"]
        kernel_bound = r["kernel_min_dram_bytes"] / r["model_min_dram_bytes"]
        floor = r["fusion_floor_dram_bytes"] / r["model_min_dram_bytes"]
        ratio, speedup = r["cycles"] / r["roofline_cycles"], b["cycles"] / r["cycles"]
        ratios.append(ratio)
        attained.append(r["cycles"] / r["attainable_cycles"])
        speedups.append(speedup)
        lines.append(f"| {name} | {r['cycles']} | {r['roofline_cycles']} | {ratio:.2f} | {r['attainable_cycles']} "
                     f"| {attained[-1]:.2f} | {traffic:.2f} | {kernel_bound:.2f} | {floor:.2f} "
                     f"| {r['utilization']['cube']:.1%} | {b['cycles']} | {speedup:.2f} | {low} |")
        print(lines[-1], flush=True)
    gm = geomean
    int8_gm = f", int8 simulated/int8 roofline {gm(int8s):.2f} ({len(int8s)} models)" if int8s else ""
    return close_table(lines, f"geometric mean: simulated/roofline {gm(ratios):.2f}, simulated/attainable "
                              f"{gm(attained):.2f}, speedup over op by op "
                              f"{gm(speedups):.2f}{int8_gm} ({len(ratios)} models, {time.time() - t0:.0f} s; fusion "
                              f"rules: {', '.join(RULES)})", out)


if __name__ == "__main__":
    sys.exit(main())

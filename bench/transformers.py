"""Transformers at real size: BERT-base encoder layers, GPT-2-small prefill and decode
against a KV cache, a ViT-B/16 block - simulated cycles against the roofline, DRAM
traffic against its minimum, and the numerics against onnxruntime.

    python bench/transformers.py [--arch SPEC] [--models a,b] [--out bench/results/transformers.md]

Models (`tools/testkit/transformers.py`, hidden 768, 12 heads, seeded weights):
`bert_2l_{128,512,2048}` (two encoder layers, FFN 3072, batch 1, an attention
mask), `gpt2_prefill_512` (one block, causal mask), `gpt2_decode_p{127,2047}_b{1,8}`
(one block, one new token per sequence against a KV cache of 127 or 2047
positions, batch 1 or 8), `vit_b16_block` (197 tokens, MLP 3072).

Columns: simulated cycles; the roofline bound (max of MACs over the cube's peak on
all cores and the minimum DRAM bytes over `dram_bw`) and their ratio; DRAM
traffic over the minimum (weights, inputs and outputs once); cube utilisation;
kernels; compile and simulate wall time (noisy on a shared machine); match: the
largest |sim - ort| / (atol + rtol |ort|) over the outputs with rtol 1e-3 and
atol 1e-4 x max |ort| (at most 1 passes). A model that fails is one row with its
diagnostic; the script goes on.

SRAM bound (`sram_bound`): the roofline or, when larger, the I/O lower bound of
the matmuls against weights on cores with S = sram_bytes / 4 f32 words each
(Smith and van de Geijn's tight form of Hong and Kung's bound: an M x K x N
product moves at least 2MNK / sqrt(S) - 2S words per core between DRAM and
SRAM), summed over those matmuls, over `dram_bw`. It holds for schedules that
read such a matmul's operands from DRAM and write its result there (ours: at
these sizes they never share a layer group), whatever the tiling.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import ModelMaker, bench_args, close_table, geomean, precision_columns  # noqa: E402
from lowering.errors import CompileError  # noqa: E402
from lowering.importer.onnx_import import import_model  # noqa: E402
from lowering.pipeline import compile_module  # noqa: E402
from npu_dialects.weights import weights_of  # noqa: E402
from runtime.run import run  # noqa: E402
from tools.testkit.e2e import onnxruntime_outputs  # noqa: E402
from tools.testkit.transformers import bert_layers, block_inputs, gpt2_block, vit_block  # noqa: E402


def _with_inputs(make: Callable[[], onnx.ModelProto]) -> ModelMaker:
    return lambda: (lambda m: (m, block_inputs(m)))(make())


MODELS: dict[str, ModelMaker] = {
    **{f"bert_2l_{s}": _with_inputs(lambda s=s: bert_layers(layers=2, seq=s)) for s in (128, 512, 2048)},
    "gpt2_prefill_512": _with_inputs(lambda: gpt2_block(seq=512)),
    **{f"gpt2_decode_p{p}_b{b}": _with_inputs(lambda p=p, b=b: gpt2_block(past=p, batch=b))
       for p in (127, 2047) for b in (1, 8)},
    "vit_b16_block": _with_inputs(lambda: vit_block(tokens=197)),
}


def sram_bound(model: onnx.ModelProto, arch) -> int:
    """Cycles the weight matmuls' DRAM traffic needs at least (see the module docstring)."""
    model = onnx.shape_inference.infer_shapes(model)
    weights = {i.name for i in model.graph.initializer}
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in [*model.graph.input, *model.graph.value_info]}
    s = arch.sram_bytes // 4
    words = 0.0
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm") or node.input[1] not in weights or node.input[0] not in shapes:
            continue
        a = shapes[node.input[0]]
        b = next(list(i.dims) for i in model.graph.initializer if i.name == node.input[1])
        trans_b = any(at.name == "transB" and at.i for at in node.attribute)
        m, k, n = int(np.prod(a[:-1])), a[-1], (b[0] if trans_b else b[-1])
        words += max(0.0, 2 * m * n * k / s ** 0.5 - 2 * s * arch.cores)
    return int(words * 4 / arch.dram_bw)


def match(got: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> float:
    """Largest error in units of the acceptance tolerance (<= 1 passes)."""
    worst = 0.0
    for k, r in ref.items():
        atol = 1e-4 * float(np.abs(r).max(initial=0.0))
        worst = max(worst, float((np.abs(got[k] - r) / (atol + 1e-3 * np.abs(r))).max(initial=0.0)))
    return worst


def row(name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray], arch
        ) -> tuple[str, float | None, float | None]:
    """A model's row, its simulated/roofline ratio and its int8 one (None when it failed)."""
    t0 = time.time()
    try:
        module, weights = import_model(model, arch)
        compile_module(module, arch, weights, verify_each=False)
    except CompileError as e:
        return f"| {name} | failed: {str(e).splitlines()[0]} |", None, None
    t1 = time.time()
    res = run(module, weights_of(module), inputs, arch)
    t2 = time.time()
    r = res.report
    ratio = r["cycles"] / r["roofline_cycles"]
    traffic = (r["dram_bytes_read"] + r["dram_bytes_written"]) / r["model_min_dram_bytes"]
    m = match(res.outputs, onnxruntime_outputs(model, inputs))
    bound = max(r["roofline_cycles"], sram_bound(model, arch))
    low, int8 = precision_columns(model, inputs, arch)
    return (f"| {name} | {r['cycles']} | {r['roofline_cycles']} | {ratio:.2f} | {bound} | {r['cycles'] / bound:.2f} "
            f"| {traffic:.2f} "
            f"| {r['utilization']['cube']:.1%} | {len(r['kernels'])} | {t1 - t0:.1f} | {t2 - t1:.1f} "
            f"| {m:.3f}{'' if m <= 1 else ' FAIL'} | {low} |"), ratio, int8


def main() -> int:
    arch, todo, out = bench_args(__doc__, catalogue=MODELS)
    lines = [f"`python bench/transformers.py --arch {arch.spec()}`", "",
             "f16: `--precision f16`; int8: onnxruntime's quantize_static QDQ model (per-channel int8 weights, "
             "symmetric int8 activations, 4 calibration inputs); their ratio is to the roofline of the chip computing "
             "in that type", "",
             "| model | cycles | roofline | ratio | SRAM bound | / SRAM bound | DRAM traffic / min | cube util "
             "| kernels | compile s | simulate s | match | f16 cycles (ratio) | int8 cycles (ratio) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ratios, int8s = [], []
    t0 = time.time()
    for name, make in todo.items():
        line, ratio, int8 = row(name, *make(), arch)
        lines.append(line)
        print(line, flush=True)
        if ratio is not None:
            ratios.append(ratio)
        if int8 is not None:
            int8s.append(int8)
    int8_gm = f", int8 simulated/int8 roofline {geomean(int8s):.2f} over {len(int8s)}" if int8s else ""
    summary = (f"geometric mean simulated/roofline {geomean(ratios):.2f} over {len(ratios)} of {len(todo)} models"
               f"{int8_gm} ({time.time() - t0:.0f} s)") if ratios else "no model compiled"
    return close_table(lines, summary, out)


if __name__ == "__main__":
    sys.exit(main())

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

Attainable (`bench/attainable.py`, which generalises the SRAM bound this table had):
the roofline or, when larger, the roofline with the I/O lower bound of the products
against weights on cores with S = sram_bytes / element size words each (Smith and van
de Geijn's tight form of Hong and Kung's bound: an M x K x N product moves at least
2MNK / sqrt(S) - 2S words per core between DRAM and SRAM), products assumed to read
their operand from DRAM and write their result there (ours: at these sizes they never
share a layer group). Changed from that SRAM bound: only products whose weights exceed
all cores' SRAM together count (the assumption's domain); the model's other compulsory
bytes are added to their traffic instead of taking the larger of the two; products
reading one operand merge (the Q, K and V projections may read the hidden state once);
words are of the types used, not f32 always.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.attainable import attainable_cycles  # noqa: E402
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


def match(got: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> float:
    """Largest error in units of the acceptance tolerance (<= 1 passes)."""
    worst = 0.0
    for k, r in ref.items():
        atol = 1e-4 * float(np.abs(r).max(initial=0.0))
        worst = max(worst, float((np.abs(got[k] - r) / (atol + 1e-3 * np.abs(r))).max(initial=0.0)))
    return worst


def row(name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray], arch
        ) -> tuple[str, tuple[float, float] | None, float | None]:
    """A model's row, its simulated/roofline and simulated/attainable ratios and its int8
    one (None when it failed)."""
    t0 = time.time()
    try:
        module, weights = import_model(model, arch)
        compile_module(module, arch, weights, stage="graph", verify_each=False)
        bound = attainable_cycles(module, arch)
        compile_module(module, stage="backend", verify_each=False)
    except CompileError as e:
        return f"| {name} | failed: {str(e).splitlines()[0]} |", None, None
    t1 = time.time()
    res = run(module, weights_of(module), inputs, arch)
    t2 = time.time()
    r = res.report
    ratio = r["cycles"] / r["roofline_cycles"]
    traffic = (r["dram_bytes_read"] + r["dram_bytes_written"]) / r["model_min_dram_bytes"]
    m = match(res.outputs, onnxruntime_outputs(model, inputs))
    bound = max(r["roofline_cycles"], bound)
    low, int8 = precision_columns(model, inputs, arch)
    return (f"| {name} | {r['cycles']} | {r['roofline_cycles']} | {ratio:.2f} | {bound} | {r['cycles'] / bound:.2f} "
            f"| {traffic:.2f} "
            f"| {r['utilization']['cube']:.1%} | {len(r['kernels'])} | {t1 - t0:.1f} | {t2 - t1:.1f} "
            f"| {m:.3f}{'' if m <= 1 else ' FAIL'} | {low} |"), (ratio, r["cycles"] / bound), int8


def main() -> int:
    arch, todo, out = bench_args(__doc__, catalogue=MODELS)
    lines = [f"`python bench/transformers.py --arch {arch.spec()}`", "",
             "f16: `--precision f16`; int8: onnxruntime's quantize_static QDQ model (per-channel int8 weights, "
             "symmetric int8 activations, 4 calibration inputs); their ratio is to the roofline of the chip computing "
             "in that type", "",
             "| model | cycles | roofline | ratio | attainable | / attainable | DRAM traffic / min | cube util "
             "| kernels | compile s | simulate s | match | f16 cycles (ratio) | int8 cycles (ratio) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    ratios, attained, int8s = [], [], []
    t0 = time.time()
    for name, make in todo.items():
        line, ratio, int8 = row(name, *make(), arch)
        lines.append(line)
        print(line, flush=True)
        if ratio is not None:
            ratios.append(ratio[0])
            attained.append(ratio[1])
        if int8 is not None:
            int8s.append(int8)
    int8_gm = f", int8 simulated/int8 roofline {geomean(int8s):.2f} over {len(int8s)}" if int8s else ""
    summary = (f"geometric mean simulated/roofline {geomean(ratios):.2f}, simulated/attainable "
               f"{geomean(attained):.2f} over {len(ratios)} of {len(todo)} models"
               f"{int8_gm} ({time.time() - t0:.0f} s)") if ratios else "no model compiled"
    return close_table(lines, summary, out)


if __name__ == "__main__":
    sys.exit(main())

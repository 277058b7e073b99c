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
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import ModelMaker, bench_args, close_table, geomean  # noqa: E402
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


def row(name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray], arch) -> tuple[str, float | None]:
    t0 = time.time()
    try:
        module, weights = import_model(model, arch)
        compile_module(module, arch, weights, verify_each=False)
    except CompileError as e:
        return f"| {name} | failed: {str(e).splitlines()[0]} |", None
    t1 = time.time()
    res = run(module, weights_of(module), inputs, arch)
    t2 = time.time()
    r = res.report
    ratio = r["cycles"] / r["roofline_cycles"]
    traffic = (r["dram_bytes_read"] + r["dram_bytes_written"]) / r["model_min_dram_bytes"]
    m = match(res.outputs, onnxruntime_outputs(model, inputs))
    return (f"| {name} | {r['cycles']} | {r['roofline_cycles']} | {ratio:.2f} | {traffic:.2f} "
            f"| {r['utilization']['cube']:.1%} | {len(r['kernels'])} | {t1 - t0:.1f} | {t2 - t1:.1f} "
            f"| {m:.3f}{'' if m <= 1 else ' FAIL'} |"), ratio


def main() -> int:
    arch, todo, out = bench_args(__doc__, catalogue=MODELS)
    lines = [f"`python bench/transformers.py --arch {arch.spec()}`", "",
             "| model | cycles | roofline | ratio | DRAM traffic / min | cube util | kernels | compile s "
             "| simulate s | match |", "|---|---|---|---|---|---|---|---|---|---|"]
    ratios = []
    t0 = time.time()
    for name, make in todo.items():
        line, ratio = row(name, *make(), arch)
        lines.append(line)
        print(line, flush=True)
        if ratio is not None:
            ratios.append(ratio)
    summary = (f"geometric mean simulated/roofline {geomean(ratios):.2f} over {len(ratios)} of {len(todo)} models "
               f"({time.time() - t0:.0f} s)") if ratios else "no model compiled"
    return close_table(lines, summary, out)


if __name__ == "__main__":
    sys.exit(main())

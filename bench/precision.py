"""16-bit runs against what the type allows: every model of `bench/roofline.py` (the
light zoo, the BERT and GPT test models, LeNet, EfficientNet-B0, ConvNeXt-T, Swin-T) and
of `bench/transformers.py` compiled with `--precision f16` and `bf16` and simulated,
their outputs compared with onnxruntime's float32 run of the same model and inputs.

    python bench/precision.py [--arch SPEC] [--models a,b] [--precisions f16,bf16]
                              [--out bench/results/precision.md]

What the type allows is measured, not assumed: the same model evaluated by
onnxruntime with every node's float inputs and outputs rounded to the type (a Cast
there and back, weights included; `tools.quantize.mixed.emulated`, BatchNorm folded
first as npu-bn-fold does) - an engine that stores every tensor in the type and
computes each op in f32, the chip's contract (the cube accumulates in f32; softmax and
normalisation statistics stay f32). Columns per type: the simulated outputs' cosine
and relative L2 error (||sim - f32|| / ||f32||, over all outputs) against the f32 run,
the emulation's relative L2 error, and the verdict; over three input samples (the
bench's own and two drawn like it: one sample judges a classifier's softmax by luck).

Criterion: the simulated relative L2 error is at most twice the emulation's, or at
most four spacings of the type at 1 (4 x 2^-10 for f16, 4 x 2^-7 for bf16) when the
emulation's is smaller still. The compiled program rounds fewer tensors than the
emulation (a fused kernel keeps its intermediates in f32) and some in other places
(a cast at the function's edge), so its error may sit on either side of the
emulation's; twice it is a bound that a stored tensor rounded twice, or an op
computed in 16 bits where the contract says f32, would break. A model that fails is
a row with its diagnostic; the script goes on. Random weights (seeded) and random
inputs: deep random networks amplify rounding more than trained ones do.
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np
import onnx
import onnx.version_converter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.roofline import ModelMaker, close_table, model_list  # noqa: E402
from lowering.importer.onnx_import import import_model  # noqa: E402
from lowering.pipeline import compile_module  # noqa: E402
from npu_dialects.arch import parse_arch_spec  # noqa: E402
from npu_dialects.weights import weights_of  # noqa: E402
from runtime.run import run  # noqa: E402
from tools.quantize.mixed import cosine_and_error  # noqa: E402
from tools.testkit.e2e import onnxruntime_outputs  # noqa: E402
from tools.tolerance import PRECISION_RTOL  # noqa: E402

SPACINGS = PRECISION_RTOL
"""The floor of the criterion: four spacings of the type at 1 (--check's 16-bit tolerance)."""
FACTOR = 2.0
"""How far above the emulation's error the simulated one may be."""


def catalogue() -> dict[str, ModelMaker]:
    """The roofline models, then the transformer models."""
    from bench.transformers import MODELS
    return {**model_list(), **MODELS}


def flat(outputs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([np.asarray(o, np.float64).ravel() for o in outputs])


def samples(inputs: dict[str, np.ndarray], n: int) -> list[dict[str, np.ndarray]]:
    """`inputs` and n - 1 more like them (seeded): each float input drawn again with its
    mean and standard deviation, the others (token ids, masks) as they are. One sample
    judges a classifier's softmax by luck: which logits its rounding errors hit."""
    out = [inputs]
    for seed in range(1, n):
        rng = np.random.default_rng(seed)
        out.append({k: (rng.standard_normal(v.shape) * (float(v.std()) or 1.0) + float(v.mean())).astype(v.dtype)
                    if v.dtype.kind == "f" else v for k, v in inputs.items()})
    return out


def emulated_error(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]], names: list[str],
                   ref: np.ndarray, precision: str) -> float:
    """The relative L2 error of `model` evaluated with every node's float tensors rounded
    to `precision` (onnxruntime) against the f32 outputs `ref`, over `feeds`."""
    from tools.quantize import mixed
    from tools.quantize.prepare import fold_batchnorm
    from tools.quantize.qdq import PRECISION_KEY
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {i.name for i in m.graph.initializer}  # (IR 3's initializers are graph inputs too: not after folding)
    kept = [i for i in m.graph.input if i.name not in inits]
    del m.graph.input[:]
    m.graph.input.extend(kept)
    m.ir_version = max(m.ir_version, 4)
    m, _ = fold_batchnorm(m)
    if precision == "bf16" and next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) < 13:
        m = onnx.version_converter.convert_version(m, 13)  # (a Cast to bfloat16 needs opset 13)
    for n in m.graph.node:
        n.metadata_props.add(key=PRECISION_KEY, value=precision)
    sess = mixed.session(mixed.emulated(m))
    return cosine_and_error(flat([o for f in feeds for o in sess.run(names, f)]), ref)[1]


def simulated(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]], arch, precision: str,
              names: list[str]) -> np.ndarray:
    """The outputs of `model` compiled once with `--precision` and simulated on each of
    `feeds`, flattened."""
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights, verify_each=False, precision=precision)
    got = []
    for f in feeds:
        outs = run(module, weights_of(module), f, arch).outputs
        got += [outs[n] for n in names]
    return flat(got)


def row(name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray], arch,
        precisions: list[str], n: int) -> tuple[str, list[bool]]:
    """A model's table row and whether each precision met the criterion (over `n` samples)."""
    names = [o.name for o in model.graph.output]
    feeds = samples(inputs, n)
    ref = flat([o for f in feeds for o in (onnxruntime_outputs(model, f)[k] for k in names)])
    cells, verdicts = [], []
    for p in precisions:
        try:
            cos, err = cosine_and_error(simulated(model, feeds, arch, p, names), ref)
            emu = emulated_error(model, feeds, names, ref, p)
        except Exception as e:  # noqa: BLE001 - a model that fails is a row saying so
            cells += [f"failed: {str(e).splitlines()[0][:80]}", "-", "-", "-"]
            verdicts.append(False)
            continue
        ok = math.isfinite(err) and err <= max(FACTOR * emu, SPACINGS[p])
        verdicts.append(ok)
        cells += [f"{cos:.6f}", f"{err:.2e}", f"{emu:.2e}", "ok" if ok else "NO"]
    return f"| {name} | " + " | ".join(cells) + " |", verdicts


def main() -> int:
    import argparse
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--arch", default="default")
    ap.add_argument("--models", default=None, help="comma-separated subset")
    ap.add_argument("--precisions", default="f16,bf16")
    ap.add_argument("--samples", type=int, default=3, help="input samples per model (the first: the bench's own)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    arch = parse_arch_spec(args.arch)
    precisions = [p for p in args.precisions.split(",") if p]
    bad = [p for p in precisions if p not in SPACINGS]
    if bad:
        print(f"error: --precisions: {', '.join(bad)} not among {', '.join(SPACINGS)}", file=sys.stderr)
        return 2
    todo = catalogue()
    if args.models:
        unknown = [m for m in args.models.split(",") if m not in todo]
        if unknown:
            print(f"error: --models: unknown {', '.join(unknown)}; known: {', '.join(todo)}", file=sys.stderr)
            return 2
        todo = {k: v for k, v in todo.items() if k in args.models.split(",")}
    head = " | ".join(f"{p} cosine | {p} rel. L2 err | {p} emulated err | {p} ok" for p in precisions)
    lines = [f"`python bench/precision.py --arch {args.arch}`", "",
             "Simulated outputs with `--precision` against onnxruntime's float32 run; emulated: onnxruntime "
             "with every node's float tensors rounded to the type (BatchNorm folded); ok: the simulated relative "
             f"L2 error <= {FACTOR:g} x the emulated one, or <= 4 spacings of the type (f16 {SPACINGS['f16']:.2e}, "
             f"bf16 {SPACINGS['bf16']:.2e}); errors over {args.samples} input samples. Seeded random weights and "
             "inputs.", "",
             f"| model | {head} |", "|---|" + "---|" * (4 * len(precisions))]
    t0, met = time.time(), [0] * len(precisions)
    for name, make in todo.items():
        model, inputs = make()
        line, verdicts = row(name, model, inputs, arch, precisions, args.samples)
        print(line, flush=True)
        lines.append(line)
        met = [m + v for m, v in zip(met, verdicts)]
    summary = ", ".join(f"{p}: {m} of {len(todo)} models within the criterion" for p, m in zip(precisions, met))
    close_table(lines, f"{summary} ({time.time() - t0:.0f} s)", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Per-layer sensitivity and automatic mixed precision (issue 45): which layers of a
model lose most in int8, and the fewest of them `npu-quantize --target cosine=X`
keeps in bf16 for the outputs to reach X against the float model, with the simulated
cycles of that choice against all-int8 and all-bf16.

    python bench/sensitivity.py [--models resnet50,bert_encoder] [--samples 16] [--top 12]
        [--targets 0.99,0.9999] [--precisions bf16,f16] [--out bench/results/sensitivity.md]

Models (random weights): the light zoo's ResNet-50 (`tools/testkit/zoo.py:prepare`,
seed 0, as `bench/qdq.py`) and a 2-layer BERT encoder (128 tokens, hidden 256, 4
heads, FFN 1024: `tools/testkit/transformers.py:bert_layers`). Calibration: N seeded
inputs (`random_inputs`, seeds 100..: standard normal images and hidden states; BERT's
attention mask 1 for a seeded number of tokens in [64, 128], 0 after them), min/max,
uint8 activations, per-channel int8 weights. Per model:
- the sensitivity table: each layer (node with weights) quantized alone, the others
  float32; the outputs' cosine and relative L2 error against the float model over the
  samples (onnxruntime), the `--top` worst;
- the choice: the layers by sensitivity (then the other quantized ops) kept in bf16,
  the shortest such prefix reaching the target by bisection; the cosines tried; every
  model judged in onnxruntime with its bf16 nodes' tensors rounded to bf16
  (`tools/quantize/mixed.py:emulated`);
- the simulated cycles (timing only, default chip) of the float model in f32 and in
  bf16 (`--precision bf16`), of the all-int8 model and of the mixed one (its bf16
  nodes compiled in bf16: per-node npu-convert-precision).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np
import onnx

from bench import write_table
from tools.testkit.ort_exact import install as exact_onnxruntime  # noqa: E402

# onnxruntime, the reference, in its exact integer mode as the tests and bench/fuzz.py
# have it (`tools/testkit/ort_exact.py`): its default u8 x s8 kernels saturate on CPUs
# without VNNI, many steps off the ONNX result (on a VNNI host the mode changes nothing)
exact_onnxruntime()

MODELS = ("resnet50", "bert_encoder")


@dataclass
class Choice:
    """One search: its target, the type layers are kept in, what it kept and reached."""

    target: float
    precision: str
    kept: list[str]
    search: list[tuple[int, float]]
    cosine: float
    cycles: int = 0
    ops_16: int = 0  # quantized ops computed in 16 bits (a kept layer's Relu too)
    simulated: float = float("nan")  # the outputs' cosine on the simulator, first sample


@dataclass
class Result:
    """One model's figures."""

    name: str
    layers: int = 0
    layer_names: set[str] = field(default_factory=set)
    quantized_ops: int = 0
    sensitivity: list[tuple[str, float, float]] = field(default_factory=list)
    op_sensitivity: list[tuple[str, float, float]] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)  # node -> "Conv 64x64x3x3", "Add"
    cosine: dict[str, float] = field(default_factory=dict)  # all int8 / all bf16 / all f16
    simulated: dict[str, float] = field(default_factory=dict)  # the same on the simulator, first sample
    cycles: dict[str, int] = field(default_factory=dict)
    choices: list[Choice] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


def float_model(name: str) -> onnx.ModelProto:
    from bench.qdq import float_model as qdq_float_model
    return qdq_float_model(name)


def calibration(model: onnx.ModelProto, n: int, path: str) -> list[dict[str, np.ndarray]]:
    """`n` seeded inputs stacked into one .npz at `path` (what `npu-quantize --data` takes)."""
    from tools.testkit.zoo import random_inputs
    samples = [random_inputs(model, seed=100 + s) for s in range(n)]
    for s, x in enumerate(samples):
        if "attention_mask" in x:  # (a real mask: 1 for the tokens, 0 for the padding after them)
            mask = x["attention_mask"]
            length = int(np.random.default_rng(100 + s).integers(mask.shape[-1] // 2, mask.shape[-1] + 1))
            x["attention_mask"] = (np.arange(mask.shape[-1]) < length).astype(mask.dtype) * np.ones_like(mask)
    stacked: dict[str, Any] = {k: np.stack([s[k] for s in samples]) for k in samples[0]}
    np.savez(path, **stacked)
    return samples


def all_16bit_cosine(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]], precision: str) -> float:
    """The outputs' cosine with every node's float tensors rounded to `precision`
    (onnxruntime; BatchNormalization folded first, as npu-bn-fold does before the
    compiler's npu-convert-precision)."""
    from tools.quantize import mixed
    from tools.quantize.prepare import fold_batchnorm
    from tools.quantize.qdq import PRECISION_KEY
    m, _ = fold_batchnorm(model)
    for n in m.graph.node:
        n.metadata_props.add(key=PRECISION_KEY, value=precision)
    return mixed.output_error(m, feeds, mixed.float_outputs(model, feeds))[0]


def mixed_float_output(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> np.ndarray:
    from tools.quantize import mixed
    return mixed.float_outputs(model, [feed])[0][0]


def layer_kinds(model: onnx.ModelProto) -> dict[str, str]:
    """Layer name -> its op type and weight shape."""
    from tools.quantize.mixed import layers
    inits = {i.name: list(i.dims) for i in model.graph.initializer}
    nodes = {n.name: n for n in model.graph.node}
    kinds = {n.name: n.op_type for n in model.graph.node}
    kinds.update({name: f"{nodes[name].op_type} {'x'.join(map(str, inits.get(nodes[name].input[1], [])))}"
                  for name in layers(model)})
    return kinds


def simulated_cosine(m: onnx.ModelProto, arch: str, feed: dict[str, np.ndarray], ref: np.ndarray,
                     **options) -> float:
    """The cosine of `m`'s first output simulated on `feed` (compiled with `options`) against `ref`."""
    from runtime.run import run
    from tools.api import compile as compile_model
    exe = compile_model(m, arch=arch, **options)
    got = np.asarray(run(exe.module, exe.weights, feed, exe.arch).outputs[m.graph.output[0].name], np.float64).ravel()
    want = np.asarray(ref, np.float64).ravel()
    return float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))


def run_model(name: str, args: argparse.Namespace) -> Result:
    from tools.quantize import EVAL_SAMPLES, quantize
    from tools.quantize.mixed import layers, simulated_cycles
    from tools.quantize.prepare import fold_batchnorm
    from tools.quantize.qdq import QUANTIZED_OPS
    r = Result(name)
    start = time.perf_counter()
    model = float_model(name)
    r.layer_names = set(layers(model))
    r.layers = len(r.layer_names)
    r.quantized_ops = sum(1 for n in fold_batchnorm(model)[0].graph.node if n.op_type in QUANTIZED_OPS)
    r.kinds = layer_kinds(fold_batchnorm(model)[0])
    compiled: dict[bytes, int] = {}
    chosen: list[onnx.ModelProto] = []
    all_int8 = model

    def cycles(m: onnx.ModelProto, **options) -> int:
        key = m.SerializeToString() + repr(sorted(options.items())).encode()
        if key not in compiled:
            compiled[key] = simulated_cycles(m, args.arch, **options)
        return compiled[key]

    with tempfile.TemporaryDirectory() as tmp:
        calib = os.path.join(tmp, "calib.npz")
        feeds = calibration(model, args.samples, calib)
        t = time.perf_counter()
        sens = None
        for target in args.targets:
            for prec in args.precisions:
                q, rep = quantize(model, calib, cache_dir=tmp, sensitivity=True, target_cosine=target,
                                  keep_precision=prec, known_sensitivity=sens,
                                  progress=lambda msg: print(f"\r{name}: {msg}", end="", file=sys.stderr))
                if sens is None:
                    print(file=sys.stderr)
                    r.seconds["sensitivity"] = time.perf_counter() - t
                sens = r.sensitivity = rep.sensitivity
                r.cosine["all int8"] = rep.search[0][1]
                assert rep.all_int8 is not None and rep.cosine is not None
                r.choices.append(Choice(target, prec, rep.float_layers, rep.search, rep.cosine))
                r.op_sensitivity = rep.op_sensitivity or r.op_sensitivity
                r.choices[-1].cycles = cycles(q)
                chosen.append(q)
                all_int8 = rep.all_int8
                r.choices[-1].ops_16 = sum(1 for n in q.graph.node if n.metadata_props and n.op_type in QUANTIZED_OPS)
                r.cycles["all int8"] = cycles(rep.all_int8)
                print(f"{name}: cosine >= {target:g} in {prec}: {len(rep.float_layers)} kept, {rep.cosine:.4f}, "
                      f"{r.choices[-1].cycles:,} cycles", file=sys.stderr)
        r.seconds["searches and compiles"] = time.perf_counter() - t - r.seconds["sensitivity"]
    for prec in ("bf16", "f16"):
        r.cosine[f"all {prec}"] = all_16bit_cosine(model, feeds[:EVAL_SAMPLES], prec)
    ref = mixed_float_output(model, feeds[0])
    sims: dict[bytes, float] = {}
    for ch, q in zip(r.choices, chosen):
        key = q.SerializeToString()
        if key not in sims:
            sims[key] = simulated_cosine(q, args.arch, feeds[0], ref)
        ch.simulated = sims[key]
    for prec in ("bf16", "f16"):
        r.simulated[f"all {prec}"] = simulated_cosine(model, args.arch, feeds[0], ref, precision=prec)
    r.simulated["all int8"] = simulated_cosine(all_int8, args.arch, feeds[0], ref)
    r.cycles["f32"] = cycles(model)
    r.cycles["all bf16"] = cycles(model, precision="bf16")
    r.cycles["all f16"] = cycles(model, precision="f16")
    r.seconds["total"] = time.perf_counter() - start
    return r


def _names(kept: list[str], total: int) -> str:
    return "all" if len(kept) == total else ", ".join(kept) if len(kept) <= 24 else f"all but {total - len(kept)}"


def markdown(results: list[Result], args: argparse.Namespace) -> list[str]:
    lines = [f"# Per-layer sensitivity and automatic mixed precision (arch {args.arch}, {args.samples} seeded "
             "calibration samples, min/max, uint8 activations, per-channel int8 weights)", "",
             "Outputs' cosine against the float model over the samples (onnxruntime; 16-bit tensors rounded to "
             "their type: what the search judges) and, in brackets, of the simulated chip on the first sample; "
             "cycles simulated (timing only).", "",
             "| model | layers | quantized ops | cosine all int8 | cosine all bf16 | cosine all f16 | cycles f32 "
             "| cycles all bf16 | cycles all f16 | cycles all int8 | run time |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        c = r.cycles
        cos = {k: f"{v:.6f} ({r.simulated.get(k, float('nan')):.6f})" for k, v in r.cosine.items()}
        lines.append(f"| {r.name} | {r.layers} | {r.quantized_ops} | {cos['all int8']} "
                     f"| {cos['all bf16']} | {cos['all f16']} | {c['f32']:,} | {c['all bf16']:,} "
                     f"| {c['all f16']:,} | {c['all int8']:,} | {r.seconds['total']:.0f} s |")
    lines += ["", "Automatic choices (`npu-quantize --target cosine=X --keep-precision P`): the layers by "
              "sensitivity (a layer's Relu follows it), then, when all of them are not enough, the other quantized "
              "ops by theirs, kept in P; the shortest such prefix reaching X (bisection).", "",
              "| model | target cosine | kept in | quantized ops in 16 bits | cosine | cycles | vs all int8 "
              "| vs all bf16 | search (prefix length: cosine) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for ch in r.choices:
            reached = "" if ch.cosine >= ch.target else " (not reached)"
            steps = ", ".join(f"{k}: {cos:.6f}" for k, cos in ch.search)
            lines.append(f"| {r.name} | {ch.target:g} | {ch.precision} | {ch.ops_16} of {r.quantized_ops} "
                         f"| {ch.cosine:.6f}{reached} ({ch.simulated:.6f}) | {ch.cycles:,} | {ch.cycles / r.cycles['all int8']:.2f}x "
                         f"| {ch.cycles / r.cycles['all bf16']:.2f}x | {steps} |")
    for r in results:
        lines += ["", f"## {r.name}", "",
                  f"Sensitivity: the {min(args.top, len(r.sensitivity))} worst of {len(r.sensitivity)} layers, "
                  "each quantized alone (the rest float32):", "",
                  "| layer | op, weights | output cosine | output rel. error |", "|---|---|---|---|"]
        lines += [f"| {n} | {r.kinds.get(n, '')} | {cos:.6f} | {rel:.3e} |" for n, cos, rel in r.sensitivity[:args.top]]
        if r.op_sensitivity:
            lines += ["", f"The other quantized ops (measured when all the layers were not enough), the "
                      f"{min(args.top, len(r.op_sensitivity))} worst of {len(r.op_sensitivity)}:", "",
                      "| op | type | output cosine | output rel. error |", "|---|---|---|---|"]
            lines += [f"| {n} | {r.kinds.get(n, '')} | {cos:.6f} | {rel:.3e} |"
                      for n, cos, rel in r.op_sensitivity[:args.top]]
        for ch in r.choices:
            layers = [n for n in ch.kept if n in r.layer_names]
            others = [f"{n} ({r.kinds.get(n, '')})" for n in ch.kept if n not in r.layer_names]
            if ch.kept and ch.cosine >= ch.target:
                lines += ["", f"Kept in {ch.precision} for cosine >= {ch.target:g}: {len(layers)} of {r.layers} "
                          f"layers ({_names(layers, r.layers)})"
                          + (f" and {len(others)} other ops: {', '.join(others)}" if others else "") + "."]
        lines += ["", f"Run time: {r.seconds['total']:.0f} s (sensitivity {r.seconds['sensitivity']:.0f} s, "
                  f"searches and their compiles {r.seconds['searches and compiles']:.0f} s)."]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--samples", type=int, default=16)
    p.add_argument("--targets", default="0.99,0.9999", help="target cosines, comma-separated")
    p.add_argument("--precisions", default="bf16,f16", help="--keep-precision values, comma-separated")
    p.add_argument("--top", type=int, default=12, help="sensitivity rows per model")
    p.add_argument("--arch", default="default")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    args.targets = [float(t) for t in args.targets.split(",")]
    args.precisions = args.precisions.split(",")
    results = [run_model(n, args) for n in args.models.split(",")]
    lines = markdown(results, args)
    print("\n".join(lines))
    write_table(lines, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Mixed precision for `npu-quantize`: the precision table a person writes (`--qtable`),
per-layer sensitivity, and the search that keeps the fewest, most sensitive layers
out of int8 (in bf16 by default) until an output criterion holds (`--target
cosine=0.99`).

A qtable line is `PATTERN PRECISION`: an ONNX node name or a shell-style pattern of
names (`/layer4/*`), and `int8`, `bf16`, `f16` or `f32`. Anything but int8 keeps the
layer float (no pairs of its own); bf16 and f16 also mark its node (and its
Relu/Clip) to be computed in that type by `npu-compile` (`qdq.py`: the node's
`npu.precision` metadata entry). `#` starts a comment; the last line naming a node
decides it. A layer is a node with weights (Conv, MatMul, Gemm).

Algorithm
---------
Sensitivity quantizes each layer alone (the others float32) and measures the
model's outputs against the float model over the calibration samples
(onnxruntime): cosine and relative L2 error. The search keeps the most sensitive
layers in `--keep-precision`; every model it judges runs in onnxruntime with its
16-bit nodes' inputs and outputs rounded to their type (`emulated`: the chip's
16-bit ops read and write that type and accumulate in f32), so the cosine it
reaches is the chip's within the rounding of the accumulations.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

import numpy as np
import onnx

from tools.quantize.data import CalibrationError

PRECISIONS = ("int8", "bf16", "f16", "f32")
ROUND_TO = {"bf16": onnx.TensorProto.BFLOAT16, "f16": onnx.TensorProto.FLOAT16}
"""The ONNX type each 16-bit precision rounds to in `emulated`."""
LAYER_OPS = ("Conv", "MatMul", "Gemm")


def parse_qtable(path: str, model: onnx.ModelProto) -> dict[str, str]:
    """Node name -> precision from the qtable at `path`; CalibrationError naming the
    file and line for a malformed line, an unknown precision or a pattern that matches
    no node."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise CalibrationError(f"{path}: cannot read the qtable: {e.strerror or e}") from None
    names = [n.name for n in model.graph.node if n.name]
    out: dict[str, str] = {}
    for i, raw in enumerate(text.splitlines(), 1):
        body = raw.split("#", 1)[0].strip()
        if not body:
            continue
        parts = body.split()
        if len(parts) != 2:
            raise CalibrationError(f"{path}:{i}: expected 'PATTERN PRECISION', got '{body}'")
        pattern, prec = parts
        if prec not in PRECISIONS:
            raise CalibrationError(f"{path}:{i}: unknown precision '{prec}' (one of {', '.join(PRECISIONS)})")
        hit = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if not hit:
            raise CalibrationError(f"{path}:{i}: pattern '{pattern}' matches no node of the model")
        out.update({n: prec for n in hit})
    return out


def layers(model: onnx.ModelProto) -> list[str]:
    """The model's layers: named nodes with weights, in graph order."""
    inits = {i.name for i in model.graph.initializer}
    return [n.name for n in model.graph.node if n.op_type in LAYER_OPS and n.name
            and any(x in inits for x in n.input[1:])]


def session(model: onnx.ModelProto):
    """An onnxruntime CPU session of `model` in its exact integer mode where it can
    (`tools/ort_session.py`: without VNNI its default int8 kernels saturate, which would
    skew every judgement of a quantized layer), its warnings about the model silenced."""
    from tools.ort_session import ReferenceSession
    return ReferenceSession(model.SerializeToString(), log_severity=3)


def emulated(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` as onnxruntime evaluates it for the chip: each float input and output of a
    node marked bf16/f16 (`npu.precision`) rounded to that type by a Cast there and
    back (weights included; shapes, scales and bounds are not). `model` itself when no
    node is marked."""
    from tools.quantize.qdq import PRECISION_KEY, SHAPE_INPUTS
    marked = {id(n): p.value for n in model.graph.node for p in n.metadata_props
              if p.key == PRECISION_KEY and p.value in ROUND_TO}
    if not marked:
        return model
    types = _float_tensors(model)
    nodes: list[onnx.NodeProto] = []
    for n in model.graph.node:
        to = ROUND_TO.get(marked.get(id(n), ""))
        if to is None:
            nodes.append(n)
            continue
        n = onnx.NodeProto.FromString(n.SerializeToString())
        for i, x in enumerate(n.input):
            if x and x in types and i not in SHAPE_INPUTS.get(n.op_type, ()):
                n.input[i] = _round_trip(nodes, x, f"{x}_rounded_{len(nodes)}", to)
        nodes.append(n)
        for i, y in enumerate(n.output):
            if y and y in types:
                n.output[i] = f"{y}_before_rounding"
                _round_trip(nodes, n.output[i], y, to, name=y)
    out = onnx.ModelProto.FromString(model.SerializeToString())
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


def _float_tensors(model: onnx.ModelProto) -> set[str]:
    """The float32 tensors of `model` (initializers, inputs, shape inference's values)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    out = {v.name for v in [*g.value_info, *g.input, *g.output] if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT}
    return out | {i.name for i in g.initializer if i.data_type == onnx.TensorProto.FLOAT}


def _round_trip(nodes: list[onnx.NodeProto], x: str, out: str, to: int, name: str | None = None) -> str:
    """Append Cast(x -> `to`) -> Cast(-> float) making `out`; returns `out`."""
    mid = f"{out}_rounded"
    nodes.append(onnx.helper.make_node("Cast", [x], [mid], to=to, name=f"{name or out}_round"))
    nodes.append(onnx.helper.make_node("Cast", [mid], [out], to=onnx.TensorProto.FLOAT, name=f"{name or out}_back"))
    return out


def output_error(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]],
                 reference: list[list[np.ndarray]]) -> tuple[float, float]:
    """(cosine, relative L2 error) of `model`'s outputs over `feeds` against `reference`
    (its 16-bit nodes `emulated`)."""
    sess = session(emulated(model))
    got = np.concatenate([np.asarray(o, np.float64).ravel() for f in feeds for o in sess.run(None, f)])
    ref = np.concatenate([np.asarray(o, np.float64).ravel() for r in reference for o in r])
    return cosine_and_error(got, ref)


def cosine_and_error(got: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """(cosine, relative L2 error ||got - ref|| / ||ref||) of two flat float64 vectors."""
    den = float(np.linalg.norm(got) * np.linalg.norm(ref))
    cos = float(np.dot(got, ref) / den) if den else 1.0
    return cos, float(np.linalg.norm(got - ref) / max(float(np.linalg.norm(ref)), 1e-30))


def float_outputs(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]]) -> list[list[np.ndarray]]:
    sess = session(model)
    return [[np.asarray(o) for o in sess.run(None, f)] for f in feeds]


def sensitivity(build: Callable[[set[str]], onnx.ModelProto], all_layers: list[str],
                feeds: list[dict[str, np.ndarray]], reference: list[list[np.ndarray]],
                progress: Callable[[str], None] | None = None) -> list[tuple[str, float, float]]:
    """(layer, cosine, relative error) of the model with only that layer quantized
    (`build(float_layers)` makes a QDQ model keeping `float_layers` float), worst first."""
    rows = []
    for i, name in enumerate(all_layers):
        if progress is not None:
            progress(f"sensitivity: layer {i + 1} of {len(all_layers)}")
        cos, rel = output_error(build(set(all_layers) - {name}), feeds, reference)
        rows.append((name, cos, rel))
    return sorted(rows, key=lambda r: (-r[2], r[0]))


def accuracy(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]], labels: list[np.ndarray]) -> float:
    """Top-1 accuracy of `model`'s first output (argmax over its last axis) against
    `labels` over `feeds` (its 16-bit nodes `emulated`)."""
    sess = session(emulated(model))
    hits = total = 0
    for f, y in zip(feeds, labels):
        pred = np.asarray(sess.run(None, f)[0]).argmax(-1).reshape(-1)
        y = np.asarray(y).reshape(-1)
        if pred.size != y.size:
            raise CalibrationError(f"the first output gives {pred.size} predictions per sample, the labels "
                                   f"{y.size}")
        hits += int((pred == y).sum())
        total += y.size
    return hits / max(total, 1)


def search_target(build: Callable[[set[str]], onnx.ModelProto], ranked: list[str], target: float,
                  score: Callable[[onnx.ModelProto], float], tried: dict[int, float], first: int = 0) -> set[str]:
    """The shortest prefix of `ranked` (most sensitive first), at least `first` long,
    kept out of int8 for `score` (the outputs' cosine, a task accuracy) to reach
    `target`, by bisection over the prefix length (all of it when even that does not
    reach it). `tried` holds the score of each prefix length tried (and is reused)."""
    def value(k: int) -> float:
        if k not in tried:
            tried[k] = score(build(set(ranked[:k])))
        return tried[k]

    if value(first) >= target:
        return set(ranked[:first])
    if value(len(ranked)) < target:
        return set(ranked)  # (not reachable by keeping these out of int8)
    lo, hi = first, len(ranked)  # (bisection: the score grows with the prefix, mostly)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if value(mid) >= target:
            hi = mid
        else:
            lo = mid
    return set(ranked[:hi])


def format_sensitivity(rows: list[tuple[str, float, float]], what: str = "layer") -> str:
    lines = [f"| {what} (quantized alone) | output cosine | output rel. error |", "|---|---|---|"]
    lines += [f"| {n} | {c:.6f} | {r:.3e} |" for n, c, r in rows]
    return "\n".join(lines) + "\n"


def simulated_cycles(model: onnx.ModelProto, arch: str = "default", **options) -> int:
    """The simulated cycles (timing only) of `model` compiled for `arch` (options go to
    npu-default, e.g. precision="bf16"); its 16-bit nodes compiled in their type."""
    from runtime.run import run
    from tools.api import compile as compile_model
    exe = compile_model(model, arch=arch, **options)
    return int(run(exe.module, {}, None, exe.arch, timing_only=True).report["cycles"])

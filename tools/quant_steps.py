"""Quantized outputs judged in quantization steps (`npu-run --check`, `--compare-all`).

An output of a QDQ model that a DequantizeLinear produces (directly or through data
movement and softmax-like ops, `PASS_THROUGH`) can differ from onnxruntime's by a
rounding of requantization: it is compared in steps of that DequantizeLinear's scale
(when it dequantizes a requantization of a value an earlier DequantizeLinear made, in
the steps one flip of that earlier rounding makes: `coarser_step`).
`STEP_RULE` is the issue-44 acceptance criterion: at least 99% of the elements within
one step and none beyond three. An integer output (int8/uint8 made by a QuantizeLinear)
is compared in steps of 1 by the same rule; other integer outputs (int32, int64, bool)
must be equal. Only models with quantization ops (`QUANTIZATION_OPS`) are judged so.
`output_steps(model)` finds each output's step, `step_metrics` measures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

STEP_RULE = ">= 99% of the elements within one quantization step, none beyond three"

PASS_THROUGH = frozenset({
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Dropout", "Slice", "Gather",
    "Expand", "Tile", "Split", "Concat", "DepthToSpace", "SpaceToDepth", "Pad", "Resize", "Upsample",
    "MaxPool", "GlobalMaxPool", "AveragePool", "GlobalAveragePool", "ReduceMax", "ReduceMin", "ReduceMean",
    "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Softmax", "Cast"})
"""Ops an output may pass through after its last DequantizeLinear and still be judged
in that DequantizeLinear's steps (none moves an element by more than about its input's
difference). Only their first input is followed (Concat: every input)."""

QUANTIZATION_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
                              "QLinearMatMul", "MatMulInteger", "ConvInteger"})

ELEMENTWISE = frozenset({"Identity", "Dropout", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                         "Cast"})
"""The pass-through ops that keep each element where it is (a per-axis scale still applies)."""

VALUE_KEEPING = frozenset({
    "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity", "Dropout", "Slice", "Gather", "Expand",
    "Tile", "Split", "Concat", "DepthToSpace", "SpaceToDepth", "Pad", "MaxPool", "GlobalMaxPool", "ReduceMax",
    "ReduceMin", "Relu", "Clip"})
"""The pass-through ops whose every output element is one of their input elements, a
constant or their bound (Relu, Clip): a difference of one step upstream reaches their
output as at most the same difference. A QuantizeLinear requantizing such a value
(DequantizeLinear -> these -> QuantizeLinear -> DequantizeLinear, at another scale) keeps
the earlier rounding's step: a flip there is one step of the earlier scale at the output,
so the output is judged in the steps such a flip makes (`_requantized_step`,
`coarser_step`)."""


SLACK = 1e-3
"""Steps are whole numbers up to the float32 rounding of the dequantized values (a
difference of k steps of 127 x scale values is k steps to a few 1e-6)."""


@dataclass
class Step:
    """An output's quantization step: `scale` (a float, or per-axis values broadcast to
    the output) and whether the rule applies (`exact`: integers that must be equal)."""
    scale: float | np.ndarray
    exact: bool = False

    def largest(self) -> float:
        return float(np.max(self.scale))


def _constants(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    out = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output:
            for a in n.attribute:
                if a.name == "value":
                    out[n.output[0]] = numpy_helper.to_array(a.t)
    return out


def _integer_types() -> set[int]:
    T = onnx.TensorProto
    return {T.INT8, T.UINT8, T.INT16, T.UINT16, T.INT32, T.UINT32, T.INT64, T.UINT64, T.BOOL}


def _dequantize_step(node: onnx.NodeProto, consts: dict[str, np.ndarray], elementwise: bool,
                     rank: int | None) -> float | np.ndarray | None:
    scale = consts.get(node.input[1]) if len(node.input) > 1 else None
    if scale is None:
        return None
    scale = np.asarray(scale, np.float64)
    if scale.size == 1:
        return float(scale.reshape(-1)[0])
    if not elementwise or rank is None:
        return float(np.max(scale))
    axis = next((a.i for a in node.attribute if a.name == "axis"), 1) % rank
    return scale.reshape([-1 if d == axis else 1 for d in range(rank)])


def _walk(name: str, producers: dict[str, onnx.NodeProto], consts: dict[str, np.ndarray], rank: int | None,
          elementwise: bool = True, depth: int = 0,
          through: frozenset[str] = PASS_THROUGH) -> tuple[str, float | np.ndarray] | None:
    """('dequantize', scale) or ('quantize', 1.0) of the last quantization op before
    tensor `name` through `through` ops; None when there is none. A dequantized
    requantization of a value an earlier DequantizeLinear made takes the coarser
    step of the two (`_requantized_step`)."""
    node = producers.get(name)
    if node is None or depth > 64:
        return None
    if node.op_type == "DequantizeLinear":
        s = _dequantize_step(node, consts, elementwise, rank)
        if s is None:
            return None
        earlier = _requantized_step(node, producers, consts, depth)
        return "dequantize", s if earlier is None else coarser_step(s, earlier)
    if node.op_type in ("QuantizeLinear", "DynamicQuantizeLinear"):
        return "quantize", 1.0
    if node.op_type not in through or not node.input:
        return None
    keep = elementwise and node.op_type in ELEMENTWISE
    inputs = node.input if node.op_type == "Concat" else node.input[:1]
    found = [_walk(i, producers, consts, rank, keep, depth + 1, through) for i in inputs]
    if not found or any(f is None for f in found):
        return None
    kinds = {f[0] for f in found if f is not None}
    if len(kinds) != 1:
        return None
    if len(found) == 1 and found[0] is not None:
        return found[0]
    return kinds.pop(), max(float(np.max(f[1])) for f in found if f is not None)


def coarser_step(step: float | np.ndarray, earlier: float) -> float | np.ndarray:
    """The step of a requantization at `step` of a value rounded before at `earlier`: one
    flip of the earlier rounding moves the output by `earlier` rounded to this grid, at
    most `ceil(earlier / step)` of its steps (`step` itself when the earlier is finer)."""
    k = np.maximum(np.ceil(earlier / np.asarray(step, np.float64) - SLACK), 1.0)
    out = step * k
    return float(out) if np.ndim(out) == 0 else out


def _requantized_step(dq: onnx.NodeProto, producers: dict[str, onnx.NodeProto], consts: dict[str, np.ndarray],
                      depth: int) -> float | None:
    """The step of the DequantizeLinear an int8 value was requantized from: `dq` reads
    a QuantizeLinear of a value an earlier DequantizeLinear made through `VALUE_KEEPING`
    ops (its largest scale); None otherwise."""
    q = producers.get(dq.input[0]) if dq.input else None
    if q is None or q.op_type != "QuantizeLinear" or not q.input:
        return None
    found = _walk(q.input[0], producers, consts, None, False, depth + 1, VALUE_KEEPING)
    return float(np.max(found[1])) if found is not None and found[0] == "dequantize" else None


def output_steps(model: onnx.ModelProto) -> dict[str, Step]:
    """Each output judged in quantization steps (see the module docstring), by name;
    outputs computed in float without a DequantizeLinear before them are absent, and
    so is every output of a model without quantization ops (`QUANTIZATION_OPS`: its
    integer outputs keep the float tolerance, as before issue 44)."""
    if not any(n.op_type in QUANTIZATION_OPS for n in model.graph.node):
        return {}
    producers = {o: n for n in model.graph.node for o in n.output}
    consts = _constants(model)
    ints = _integer_types()
    steps: dict[str, Step] = {}
    for out in model.graph.output:
        t = out.type.tensor_type
        rank = len(t.shape.dim) if t.HasField("shape") else None
        found = _walk(out.name, producers, consts, rank)
        if t.elem_type in ints:
            steps[out.name] = Step(1.0, exact=found is None or found[0] != "quantize"
                                   or t.elem_type not in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8))
        elif found is not None and found[0] == "dequantize":
            steps[out.name] = Step(found[1])
    return steps


def step_metrics(got: np.ndarray, ref: np.ndarray, step: Step) -> dict[str, Any]:
    """{exact, within_one, max_steps, step, ok} of `got` against `ref` in steps of `step`
    (the shares of the elements equal and within one step; `ok` by `STEP_RULE`, or all
    equal for an exact step)."""
    g, r = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    scale = step.scale if np.ndim(step.scale) == 0 or np.ndim(step.scale) == g.ndim else step.largest()
    d = (np.abs(g - r) / np.asarray(scale, np.float64)).reshape(-1) if g.size else np.zeros(0)
    d = np.where(np.isnan(d), np.inf, d)
    exact = float(np.mean(np.abs(g - r).reshape(-1) == 0)) if g.size else 1.0
    within = float(np.mean(d <= 1 + SLACK)) if d.size else 1.0
    worst = float(np.max(d)) if d.size else 0.0
    ok = exact == 1.0 if step.exact else (within >= 0.99 and worst <= 3 + SLACK)
    return {"exact": exact, "within_one": within, "max_steps": worst, "step": step.largest(),
            "ok": bool(ok)}


def percent(share: float, digits: int = 4) -> str:
    """`share` (0..1) as a percentage of `digits` significant digits ('99.2%'), never
    shown as 100% unless it is all: 0.99997 is '>99.99%' (a line saying '100% within
    one step, largest difference 3 steps' contradicts itself)."""
    text = f"{100 * share:.{digits}g}"
    if share < 1 and text == "100":
        return f">{100 - 10.0 ** (2 - digits):.{digits - 2}f}%"
    return f"{text}%"


def describe(m: dict[str, Any]) -> str:
    """One phrase: '99.2% equal, 100% within one step of 0.05, largest difference 1 step'."""
    worst = f"{m['max_steps']:.3g}"
    return (f"{percent(m['exact'])} equal, {percent(m['within_one'])} within one step of {m['step']:.3g}, "
            f"largest difference {worst} step{'' if worst == '1' else 's'}")

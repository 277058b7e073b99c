"""Low-precision generators (issue 44), drawn only in the graphs `fuzz_graphs` makes
low precision, so every f32 graph stays as it was. `QDQ_OPS` (kind "qdq"): QDQ
segments as onnxruntime's quantize_static writes them - QuantizeLinear ->
DequantizeLinear around Conv, MatMul and Gemm (int8 per-channel weights, an int32 bias
of scale sx * sw), Add, Relu, MaxPool, Reshape, Transpose and Concat; int8 or uint8
activations, per-tensor scales (asymmetric, or symmetric) from the tensor's range on a
calibration input run by onnxruntime. `CAST_OPS` (kind "cast"): a float32 tensor cast
to float16 or bfloat16, a few ops in that type (bfloat16: data movement only, all
onnxruntime's CPU kernels take) and cast back, sometimes through the other 16-bit type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from tools.testkit.fuzz_builder import MAX_RANK, ONNX_TYPES, Builder, Tensor, factorize, matmul_shape
from tools.testkit.fuzz_ops.table import CAST_OPS, QDQ_OPS, op, within_limits

QRANGE = {"int8": (-128, 127), "uint8": (0, 255)}
CALIBRATION_SEED = 44


@dataclass(frozen=True)
class QParams:
    """How a DequantizeLinear output was quantized: the integer tensor's name, scale,
    zero point and type."""

    q: str
    scale: float
    zero_point: int
    qtype: str


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _draw_window(b: Builder, spatial: tuple[int, ...], **kw: Any) -> Any:
    """`spatial.draw_window` (imported here: importing spatial first would reorder `OPS`,
    and with it every seed's draws)."""
    from tools.testkit.fuzz_ops.spatial import draw_window as draw
    return draw(b, spatial, **kw)


def calibrated(b: Builder, t: Tensor) -> tuple[float, float]:
    """t's range on a calibration input (standard normal, seeded) run by onnxruntime on
    the graph grown so far; t's bounds if that fails."""
    try:
        graph = helper.make_graph(list(b.nodes), "calib",
                                  [helper.make_tensor_value_info(i.name, b.onnx_type(i.dtype), list(i.shape))
                                   for i in b.inputs],
                                  [helper.make_tensor_value_info(t.name, b.onnx_type(t.dtype), None)], list(b.inits))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", b.opset)])
        model.ir_version = helper.find_min_ir_version_for(list(model.opset_import))
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(CALIBRATION_SEED)
        feed = {i.name: rng.standard_normal(i.shape).astype(np.float32) for i in b.inputs}
        v = np.asarray(sess.run([t.name], feed)[0], np.float64)
        if v.size and np.isfinite(v).all():
            return float(v.min()), float(v.max())
    except Exception:
        pass
    return t.lo, t.hi


def _hidden(b: Builder, op_type: str, inputs: list[Tensor | str], shape: tuple[int, ...], dtype: str = "float",
            **attrs) -> Tensor:
    """A node whose output no generator reads but the segment (left out of the pool)."""
    t = b.node(op_type, inputs, shape, 0.0, 0.0, dtype=dtype, **attrs)
    b.pool.remove(t)
    return t


def act_params(b: Builder, lo: float, hi: float) -> tuple[float, int, str]:
    """Per-tensor (scale, zero point, type) of an activation in [lo, hi], as quantize_static
    computes them: int8 or uint8, asymmetric (min/max) or symmetric."""
    qtype = b.draw(["uint8", "int8"])
    qmin, qmax = QRANGE[qtype]
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if b.coin(0.3):
        m = max(-lo, hi) or 1.0
        scale = float(np.float32(2 * m / (qmax - qmin)))
        return scale, (qmin + qmax + 1) // 2, qtype
    scale = float(np.float32((hi - lo) / (qmax - qmin) or 1.0))
    zp = int(np.clip(round(qmin - lo / scale), qmin, qmax))
    return scale, zp, qtype


def quantize_dequantize(b: Builder, t: Tensor, params: tuple[float, int, str] | None = None) -> Tensor:
    """QuantizeLinear -> DequantizeLinear of t (params from its calibrated range unless
    given); the DequantizeLinear output joins the pool with its `QParams`."""
    scale, zp, qtype = params or act_params(b, *calibrated(b, t))
    s, z = b.const(np.float32(scale)), b.const(np.array(zp, dtype=qtype))
    q = _hidden(b, "QuantizeLinear", [t, s, z], t.shape, dtype=qtype)
    qmin, qmax = QRANGE[qtype]
    dq = b.node("DequantizeLinear", [q, s, z], t.shape, (qmin - zp) * scale, (qmax - zp) * scale)
    b.qparams[dq.name] = QParams(q.name, scale, zp, qtype)
    return dq


def quantized(b: Builder, t: Tensor) -> Tensor:
    """t when it is a DequantizeLinear output, else t quantized and dequantized."""
    return t if t.name in b.qparams else quantize_dequantize(b, t)


def _same(b: Builder, x: Tensor) -> tuple[float, int, str]:
    p: QParams = b.qparams[x.name]
    return p.scale, p.zero_point, p.qtype


def weight_dq(b: Builder, w: np.ndarray, axis: int | None) -> tuple[Tensor, np.ndarray]:
    """DequantizeLinear of w quantized to int8, symmetric, per channel along `axis` (None:
    per tensor); returns the float weight and its scales."""
    if axis is None:
        scale = np.array(max(float(np.abs(w).max()), 1e-6) / 127, np.float32)
    else:
        other = tuple(i for i in range(w.ndim) if i != axis)
        scale = np.maximum(np.abs(w).max(axis=other), 1e-6).astype(np.float32) / np.float32(127)
    shaped = scale if axis is None else scale.reshape([-1 if i == axis else 1 for i in range(w.ndim)])
    wq = np.clip(np.round(w / shaped), -127, 127).astype(np.int8)
    zp = np.zeros(scale.shape, np.int8)
    attrs: dict[str, Any] = {} if axis is None else {"axis": axis}
    dq = _hidden(b, "DequantizeLinear", [b.const(wq), b.const(scale), b.const(zp)], w.shape, **attrs)
    return dq, scale


def bias_dq(b: Builder, bias: np.ndarray, sx: float, sw: np.ndarray) -> Tensor:
    """DequantizeLinear of an int32 bias of scale sx * sw (per channel: axis 0)."""
    scale = (np.float32(sx) * sw).astype(np.float32).reshape(-1)
    scale = np.broadcast_to(scale, bias.shape).astype(np.float32) if scale.size == 1 else scale
    bq = np.round(bias / scale).astype(np.int32)
    attrs: dict[str, Any] = {"axis": 0} if scale.size > 1 else {}
    s = b.const(scale if scale.size > 1 else np.float32(scale.reshape(-1)[0]))
    z = b.const(np.zeros(scale.shape, np.int32) if scale.size > 1 else np.array(0, np.int32))
    return _hidden(b, "DequantizeLinear", [b.const(bq), s, z], bias.shape, **attrs)


def _requantized(b: Builder, y: Tensor, params: tuple[float, int, str] | None = None) -> Tensor:
    """The op's float output y (left out of the pool) quantized and dequantized."""
    if y in b.pool:
        b.pool.remove(y)
    return quantize_dequantize(b, y, params)


# --------------------------------------------------------------------------------------
# QDQ segments
# --------------------------------------------------------------------------------------


@op("qdq_Conv", weight=3.0, since=13, ranks=(4, 4), table=QDQ_OPS)
def _qdq_conv(b: Builder, t: Tensor) -> Tensor | None:
    """Conv (kernels 1-3, strides, pads; depthwise sometimes) of int8 per-channel weights
    and an int32 bias."""
    c = t.shape[1]
    w = _draw_window(b, t.shape[2:], dilate=False)
    if w is None:
        return None
    group = c if c > 1 and b.coin(0.2) else 1
    co = c if group > 1 else b.randint(1, 8)
    shape = (t.shape[0], co, *w.out)
    if not within_limits(shape):
        return None
    x = quantized(b, t)
    fan_in = c // group * int(np.prod(w.kernel))
    weight = (b.rng.standard_normal((co, c // group, *w.kernel)) / math.sqrt(fan_in)).astype(np.float32)
    wdq, sw = weight_dq(b, weight, 0 if b.coin(0.8) else None)
    args: list[Tensor | str] = [x, wdq]
    if b.coin(0.7):
        args.append(bias_dq(b, (b.rng.standard_normal(co) * 0.3).astype(np.float32), b.qparams[x.name].scale, sw))
    attrs = w.attrs(b)
    if group > 1:
        attrs["group"] = group
    mag = 3 * x.mag + 1
    return _requantized(b, b.node("Conv", args, shape, -mag, mag, **attrs))


@op("qdq_MatMul", weight=2.0, since=13, ranks=(2, MAX_RANK), table=QDQ_OPS)
def _qdq_matmul(b: Builder, t: Tensor) -> Tensor | None:
    """x @ W, W [K, N] int8 per channel (axis 1) or per tensor."""
    k, n = t.shape[-1], b.draw([1, 3, 8, b.randint(1, 17)])
    shape = matmul_shape(t.shape, (k, n))
    if shape is None or not within_limits(shape):
        return None
    x = quantized(b, t)
    weight = (b.rng.standard_normal((k, n)) / math.sqrt(k)).astype(np.float32)
    wdq, _ = weight_dq(b, weight, 1 if b.coin(0.7) else None)
    mag = 3 * x.mag + 1
    return _requantized(b, b.node("MatMul", [x, wdq], shape, -mag, mag))


@op("qdq_Gemm", weight=2.0, since=13, ranks=(2, 2), table=QDQ_OPS)
def _qdq_gemm(b: Builder, t: Tensor) -> Tensor | None:
    """A @ B^T + C: B [N, K] int8 per channel (axis 0), C an int32 bias (or none)."""
    m, k = t.shape
    n = b.draw([1, 4, 7, b.randint(1, 16)])
    if not within_limits((m, n)):
        return None
    x = quantized(b, t)
    weight = (b.rng.standard_normal((n, k)) / math.sqrt(k)).astype(np.float32)
    wdq, sw = weight_dq(b, weight, 0 if b.coin(0.8) else None)
    args: list[Tensor | str] = [x, wdq]
    if b.coin(0.7):
        args.append(bias_dq(b, (b.rng.standard_normal(n) * 0.3).astype(np.float32), b.qparams[x.name].scale, sw))
    mag = 3 * x.mag + 1
    return _requantized(b, b.node("Gemm", args, (m, n), -mag, mag, transB=1))


@op("qdq_Add", weight=1.5, since=13, ranks=(1, MAX_RANK), table=QDQ_OPS)
def _qdq_add(b: Builder, t: Tensor) -> Tensor | None:
    """x + y, y another live tensor of x's shape (a residual) or a constant."""
    p = b.partner(lambda p: p.is_float and p.shape == t.shape and p.name != t.name, t)
    x = quantized(b, t)
    if p is None or p is t or b.coin(0.3):
        y = quantize_dequantize(b, b.const_tensor((b.rng.standard_normal(t.shape) * 0.5).astype(np.float32)))
    else:
        y = quantized(b, p)
    return _requantized(b, b.node("Add", [x, y], t.shape, x.lo + y.lo, x.hi + y.hi))


@op("qdq_Relu", weight=1.0, since=13, ranks=(1, MAX_RANK), table=QDQ_OPS)
def _qdq_relu(b: Builder, t: Tensor) -> Tensor | None:
    x = quantized(b, t)
    return _requantized(b, b.node("Relu", [x], t.shape, 0.0, max(x.hi, 0.0)))


@op("qdq_MaxPool", weight=1.0, since=13, ranks=(4, 4), table=QDQ_OPS)
def _qdq_maxpool(b: Builder, t: Tensor) -> Tensor | None:
    """MaxPool, its output quantized as its input (npu-fuse-qdq pools the integers)."""
    w = _draw_window(b, t.shape[2:], dilate=False, pads_below_k=True)
    if w is None:
        return None
    x = quantized(b, t)
    y = b.node("MaxPool", [x], (*t.shape[:2], *w.out), x.lo, x.hi, **w.attrs(b, dilations=False))
    return _requantized(b, y, _same(b, x))


@op("qdq_Reshape", weight=0.8, since=13, ranks=(1, MAX_RANK), table=QDQ_OPS)
def _qdq_reshape(b: Builder, t: Tensor) -> Tensor | None:
    x = quantized(b, t)
    shape = factorize(t.size, b.randint(1, MAX_RANK), b.rng)
    y = b.node("Reshape", [x, b.ints(list(shape))], shape, x.lo, x.hi)
    return _requantized(b, y, _same(b, x))


@op("qdq_Transpose", weight=0.8, since=13, ranks=(2, MAX_RANK), table=QDQ_OPS)
def _qdq_transpose(b: Builder, t: Tensor) -> Tensor | None:
    x = quantized(b, t)
    perm = [int(p) for p in b.rng.permutation(t.rank)]
    y = b.node("Transpose", [x], tuple(t.shape[p] for p in perm), x.lo, x.hi, perm=perm)
    return _requantized(b, y, _same(b, x))


@op("qdq_Concat", weight=1.0, since=13, ranks=(1, MAX_RANK), table=QDQ_OPS)
def _qdq_concat(b: Builder, t: Tensor) -> Tensor | None:
    """Concat of t and another live tensor fitting along an axis (or t twice)."""
    axis = b.randint(0, t.rank - 1)

    def fits(p: Tensor) -> bool:
        return (p.is_float and p.rank == t.rank
                and all(d == e for i, (d, e) in enumerate(zip(p.shape, t.shape)) if i != axis))
    p = b.partner(fits, t) or t
    shape = tuple(d + (p.shape[i] if i == axis else 0) for i, d in enumerate(t.shape))
    if not within_limits(shape):
        return None
    x, y = quantized(b, t), quantized(b, p)
    return _requantized(b, b.node("Concat", [x, y], shape, min(x.lo, y.lo), max(x.hi, y.hi), axis=axis))


# --------------------------------------------------------------------------------------
# Cast segments
# --------------------------------------------------------------------------------------

F16_MAX_INPUT = 1000.0  # a segment casts tensors bounded by this (f16 overflows at 65504)


def _inner(b: Builder, x: Tensor, to: str) -> Tensor:
    """One op in the 16-bit type `to` (constants of that type)."""
    def const(a: np.ndarray) -> str:
        return b.const(np.asarray(a, np.float32).astype(to if to == "float16" else np.float32))
    kw: dict[str, Any] = {"dtype": to}
    moves = ["transpose", "reshape", "concat"]
    choices = moves + (["relu", "neg", "add", "mul", "sigmoid", "tanh", "matmul", "softmax", "maxpool"]
                       if to == "float16" else [])
    how = b.draw(choices)
    if how == "transpose" and x.rank >= 2:
        perm = [int(p) for p in b.rng.permutation(x.rank)]
        return b.node("Transpose", [x], tuple(x.shape[p] for p in perm), x.lo, x.hi, exact=x.exact, perm=perm, **kw)
    if how == "concat" and within_limits((*x.shape[:-1], 2 * x.shape[-1])):
        return b.node("Concat", [x, x], (*x.shape[:-1], 2 * x.shape[-1]), x.lo, x.hi, exact=x.exact, axis=-1, **kw)
    if how == "relu":
        return b.node("Relu", [x], x.shape, 0.0, max(x.hi, 0.0), exact=x.exact, **kw)
    if how == "neg":
        return b.node("Neg", [x], x.shape, -x.hi, -x.lo, exact=x.exact, **kw)
    if how in ("add", "mul"):
        c = (b.rng.standard_normal(x.shape[b.randint(0, x.rank):]) * 0.5 + (1.0 if how == "mul" else 0.0))
        m = float(np.abs(c).max(initial=0.0))
        bound = x.mag * m if how == "mul" else x.mag + m
        return b.node("Add" if how == "add" else "Mul", [x, const(c)], x.shape, -bound, bound, **kw)
    if how == "sigmoid":
        return b.node("Sigmoid", [x], x.shape, 0.0, 1.0, **kw)
    if how == "tanh":
        return b.node("Tanh", [x], x.shape, -1.0, 1.0, **kw)
    if how == "softmax":
        return b.node("Softmax", [x], x.shape, 0.0, 1.0, axis=-1, **kw)
    if how == "matmul" and x.mag <= 30:
        k, n = x.shape[-1], b.draw([1, 4, 8, 16])
        shape = matmul_shape(x.shape, (k, n))
        if shape is not None and within_limits(shape):
            w = b.rng.standard_normal((k, n)) / math.sqrt(k)
            return b.node("MatMul", [x, const(w)], shape, -3 * x.mag - 1, 3 * x.mag + 1, **kw)
    if how == "maxpool" and x.rank == 4:
        w = _draw_window(b, x.shape[2:], dilate=False, pads_below_k=True)
        if w is not None:
            return b.node("MaxPool", [x], (*x.shape[:2], *w.out), x.lo, x.hi, exact=x.exact,
                          **w.attrs(b, dilations=False), **kw)
    shape = factorize(x.size, b.randint(1, MAX_RANK), b.rng)
    return b.node("Reshape", [x, b.ints(list(shape))], shape, x.lo, x.hi, exact=x.exact, **kw)


def _cast(b: Builder, x: Tensor, to: str) -> Tensor:
    return b.node("Cast", [x], x.shape, x.lo, x.hi, dtype=to, exact=x.exact, to=ONNX_TYPES.get(to, TensorProto.FLOAT))


@op("cast_segment", weight=50.0, ranks=(1, MAX_RANK), table=CAST_OPS)
def _cast_segment(b: Builder, t: Tensor) -> Tensor | None:
    """Cast to float16 (or bfloat16), 1-3 ops in that type, cast back to float32 (through
    the other 16-bit type sometimes), or left in float16 (a graph output in that type)."""
    if t.mag > F16_MAX_INPUT:
        return None
    to = "float16" if b.coin(0.7) else "bfloat16"
    first = len(b.pool)
    x = _cast(b, t, to)
    for _ in range(b.randint(1, 3)):
        x = _inner(b, x, to)
    if not (to == "float16" and b.coin(0.2)):  # (else x stays: no generator reads it, a float16 output)
        if b.coin(0.25):
            x = _cast(b, x, "bfloat16" if to == "float16" else "float16")
        x = _cast(b, x, "float")
    b.pool[first:] = [x]  # (the segment's 16-bit values are no output: onnxruntime gives no bfloat16 one)
    return x

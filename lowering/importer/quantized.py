"""Quantized ONNX ops -> `npu_graph`'s typed ops (docs/low-precision.md).

QuantizeLinear / DequantizeLinear (opsets 10 on; per tensor and per axis; int8, uint8,
and int32 for DequantizeLinear) become `npu_graph.quantize` / `dequantize` with scale and
zero point as f32 tensors broadcasting to x (a per-axis [C] one reshaped to [1, C, 1, 1]).
They are never folded at import: npu-fuse-qdq reads dequantize(int8 weight constant).
QLinearConv / QLinearMatMul are an integer conv2d / matmul into i32 and a `requantize` by
x_scale * w_scale / y_scale (float32, as onnxruntime; the arch's `requant` mode);
ConvInteger / MatMulInteger the integer op alone. DynamicQuantizeLinear is reductions and
elementwise ops (ONNX's formula), its y a `quantize` to ui8.
Refused, naming the node: 2/4/16-bit integers and float8/float4 types, blocked
quantization (block_size), zero points outside their type (an int32 one not 0), constant
scales that are zero, negative, NaN or infinite, computed scales where the multiplier
must be known at compile time, per-channel weight zero points that differ.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from lowering.importer.base import NodeContext, NodeError, Output, converter
from lowering.importer.nn import build_conv
from npu_dialects.dtypes import bf16, element_type, f16, f32, i8, i32, qrange, type_name, ui8
from npu_dialects.graph import (
    SIMPLE_UNARY,
    AddOp,
    ClipOp,
    Conv2dOp,
    DequantizeOp,
    DivOp,
    MatMulOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    QuantizeOp,
    ReduceMaxOp,
    ReduceMinOp,
    RequantizeOp,
    ReshapeOp,
    SubOp,
    conv2d_ref,
    matmul_shape,
    shape_of,
)

FLOAT_INPUTS = ("float", "float16", "bfloat16", "double")
"""ONNX element types QuantizeLinear quantizes (as the f32, f16 or bf16 tensor that holds them)."""
QTYPES = {np.dtype(np.int8): i8, np.dtype(np.uint8): ui8}
"""The quantized element types the chip holds, by numpy dtype."""


def _type_label(dtype: np.dtype | int) -> str:
    """An element type as ONNX names it (int4, float8e4m3fn, uint16...)."""
    if isinstance(dtype, int):
        return onnx.TensorProto.DataType.Name(dtype).lower()
    try:
        return onnx.TensorProto.DataType.Name(onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))).lower()
    except Exception:
        return str(dtype)


def qtype(dtype: np.dtype | int, what: str, int32: bool = False) -> Attribute:
    """The element type of quantized data of `dtype` (an ONNX type number or numpy
    dtype): i8, ui8 (or i32 with `int32`); other types are refused, naming `what`."""
    if isinstance(dtype, int):
        try:
            dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(dtype))
        except Exception:
            raise NodeError(f"{what} has element type {_type_label(dtype)}; only int8 and uint8 quantization is "
                            "supported") from None
    dt = np.dtype(dtype)
    if dt in QTYPES:
        return QTYPES[dt]
    if int32 and dt == np.int32:
        return i32
    ok = "int8, uint8 and int32" if int32 else "int8 and uint8"
    raise NodeError(f"{what} has element type {_type_label(dt)}; only {ok} quantization is supported "
                    "(4- and 16-bit integers and float8 are not)")


def _no_blocks(ctx: NodeContext) -> None:
    if int(ctx.attr("block_size", 0)) != 0:
        raise NodeError(f"blocked quantization (block_size={ctx.attr('block_size')}) is not supported; "
                        "per-tensor and per-axis are")


def _broadcast_shape(param: Sequence[int], shape: Sequence[int], axis: int, what: str) -> tuple[int, ...]:
    """The shape a per-tensor ([] or [1]) or per-axis ([C] along `axis`, one value per
    index of that axis) parameter takes to broadcast against a tensor of `shape` (a
    NodeError naming both lengths otherwise, e.g. a Conv weight's per-output-channel
    scales given axis 1)."""
    rank = len(shape)
    if len(param) == 0 or (len(param) == 1 and param[0] == 1):
        return tuple(param)
    if len(param) != 1:
        raise NodeError(f"{what} of shape {list(param)} must be a scalar or 1-D (blocked quantization is "
                        "not supported)")
    if not -rank <= axis < rank:
        raise NodeError(f"axis {axis} is out of range for rank {rank}")
    if param[0] != shape[axis]:
        raise NodeError(f"{what} holds {param[0]} values, one per index of axis {axis}, but that axis of the "
                        f"{list(shape)} input has {shape[axis]}")
    out = [1] * rank
    out[axis % rank] = param[0]
    return tuple(out)


def scale_param(ctx: NodeContext, i: int, shape: Sequence[int], axis: int, what: str,
                constant: bool = False) -> SSAValue:
    """Scale input `i` as an f32 tensor broadcasting to a tensor of `shape` (per axis:
    [C] along `axis`). A constant one must be positive and finite; a computed one is
    refused with `constant` (the multiplier is computed at compile time)."""
    t = ctx.tensor(i)
    shape = _broadcast_shape(t.shape, shape, axis, what)
    if t.data is None:
        if constant:
            raise NodeError(f"{what} (input {i}, '{t.name}') is computed at run time; only constant scales are "
                            "supported here (the requantization multiplier is fixed at compile time)")
        v = ctx.value(i, carried=True)
        return v if shape == t.shape else ctx.build(ReshapeOp(v, TensorType(f32, shape))).results[0]
    data = np.asarray(t.data).astype(np.float32)
    bad = data[~(np.isfinite(data) & (data > 0))]
    if bad.size:
        raise NodeError(f"{what} (input {i}, '{t.name}') holds {bad.flat[0]}; scales must be positive and finite")
    return ctx.const(data.reshape(shape), what, f32)


def zero_point_param(ctx: NodeContext, i: int, shape: Sequence[int], axis: int, qt: Attribute,
                     what: str) -> SSAValue:
    """Zero-point input `i` (absent: 0) as an f32 tensor holding integers, broadcasting
    like the scale; each constant value must lie in `qt` (an int32 one must be 0)."""
    if not ctx.has_input(i):
        return ctx.scalar32(0.0)
    t = ctx.tensor(i)
    shape = _broadcast_shape(t.shape, shape, axis, what)
    if t.data is None:
        v = ctx.value(i, carried=True)
        return v if shape == t.shape else ctx.build(ReshapeOp(v, TensorType(f32, shape))).results[0]
    data = np.asarray(t.data)
    lo, hi = (0, 0) if qt == i32 else qrange(qt)
    bad = data[(data < lo) | (data > hi)]
    if bad.size:
        raise NodeError(f"{what} (input {i}, '{t.name}') holds {int(bad.flat[0])}, outside {qt} [{lo}, {hi}]"
                        + (" (an int32 zero point must be 0)" if qt == i32 else ""))
    return ctx.const(data.astype(np.float32).reshape(shape), what, f32)


def _axis(ctx: NodeContext) -> int:
    return int(ctx.attr("axis", 1))


@converter("QuantizeLinear", attrs=("axis", "block_size", "output_dtype", "saturate"))
def convert_quantize_linear(ctx: NodeContext) -> Sequence[Output]:
    """y = saturate(round_half_even(x / y_scale) + y_zero_point): `npu_graph.quantize`
    to the zero point's type (or `output_dtype`; uint8 by default)."""
    _no_blocks(ctx)
    if ctx.has_input(2):
        qt = qtype(ctx.dtype(2), "y_zero_point")
    else:
        qt = qtype(int(ctx.attr("output_dtype", 0)) or onnx.TensorProto.UINT8, "the output")
    x = ctx.value(0, carried=True)
    if type_name(element_type(x)) not in ("f32", "f16", "bf16") or _type_label(ctx.dtype(0)) not in FLOAT_INPUTS:
        raise NodeError(f"x has element type {_type_label(ctx.dtype(0))}; only float inputs are supported")
    axis = _axis(ctx)
    scale = scale_param(ctx, 1, shape_of(x), axis, "y_scale")
    zp = zero_point_param(ctx, 2, shape_of(x), axis, qt, "y_zero_point")
    y = ctx.build(QuantizeOp(x, scale, zp, TensorType(qt, shape_of(x)))).results[0]
    return [ctx.typed(y, np.int8 if qt == i8 else np.uint8)]


@converter("DequantizeLinear", attrs=("axis", "block_size", "output_dtype"))
def convert_dequantize_linear(ctx: NodeContext) -> Sequence[Output]:
    """y = (x - x_zero_point) * x_scale: `npu_graph.dequantize` of int8, uint8 or int32 data
    (an int32 bias: zero point 0) into the scale's float type (or `output_dtype`);
    constant x stays an integer constant."""
    _no_blocks(ctx)
    qt = qtype(ctx.dtype(0), "x", int32=True)
    floats = {int(onnx.TensorProto.FLOAT): f32, int(onnx.TensorProto.FLOAT16): f16, int(onnx.TensorProto.BFLOAT16): bf16}
    out = int(ctx.attr("output_dtype", 0)) or int(onnx.helper.np_dtype_to_tensor_dtype(np.dtype(ctx.dtype(1))))
    if out not in floats:
        raise NodeError(f"output type {_type_label(out)} is not supported (float32, float16, bfloat16)")
    x = ctx.typed_value(0, (type_name(qt) or "",), "x")
    axis = _axis(ctx)
    scale = scale_param(ctx, 1, shape_of(x), axis, "x_scale")
    zp = zero_point_param(ctx, 2, shape_of(x), axis, qt, "x_zero_point")
    return [ctx.build(DequantizeOp(x, scale, zp, TensorType(floats[out], shape_of(x)))).results[0]]


def uniform_zero_point(ctx: NodeContext, i: int, qt: Attribute, what: str) -> int:
    """A per-tensor zero point known at import (absent: 0); a per-channel one must hold
    one value (the integer ops take one zero point per operand)."""
    if not ctx.has_input(i):
        return 0
    data = np.asarray(ctx.constant(i, what))
    lo, hi = qrange(qt)
    if data.size == 0 or np.any(data != data.flat[0]):
        raise NodeError(f"{what} (input {i}) differs per channel ({', '.join(map(str, data.flat[:4]))}...); "
                        "only one zero point per operand is supported")
    z = int(data.flat[0])
    if not lo <= z <= hi:
        raise NodeError(f"{what} (input {i}) is {z}, outside {qt} [{lo}, {hi}]")
    return z


def _requant_mode(ctx: NodeContext) -> str:
    """The arch's requantization unit: `float` or `fixed`."""
    return str(getattr(ctx.arch, "requant", "float"))


def requantized(ctx: NodeContext, acc: SSAValue, scales: Sequence[int], axis: int,
                y_qt: Attribute) -> SSAValue:
    """`acc` (i32) requantized to `y_qt` by x_scale * w_scale / y_scale (inputs `scales`:
    constant, w_scale per tensor or per output channel along `axis`) plus y_zero_point
    (input scales[2] + 1)."""
    xs, ws, ys = (np.asarray(ctx.constant(i, name)).astype(np.float32)
                  for i, name in zip(scales, ("x_scale", "w_scale", "y_scale")))
    for i, name, data in zip(scales, ("x_scale", "w_scale", "y_scale"), (xs, ws, ys)):
        if not np.all(np.isfinite(data) & (data > 0)):
            raise NodeError(f"{name} (input {i}) holds {data.reshape(-1)[0]}; scales must be positive and finite")
    mult = (xs.reshape(-1)[0] * ws) / ys.reshape(-1)[0]  # (float32, as onnxruntime computes it)
    shape = _broadcast_shape(mult.shape, shape_of(acc), axis, "w_scale")
    m = ctx.const(mult.astype(np.float32).reshape(shape), "multiplier", f32)
    zi = scales[2] + 1
    y_zp = uniform_zero_point(ctx, zi, y_qt, "y_zero_point")
    op = RequantizeOp(acc, m, ctx.scalar32(float(y_zp)), TensorType(y_qt, shape_of(acc)), mode=_requant_mode(ctx))
    return ctx.build(op).results[0]


def _operand(ctx: NodeContext, i: int, what: str) -> tuple[SSAValue, Attribute]:
    qt = qtype(ctx.dtype(i), what)
    return ctx.typed_value(i, (type_name(qt) or "",), what), qt


@converter("QLinearConv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def convert_qlinear_conv(ctx: NodeContext) -> Sequence[Output]:
    """Integer conv2d (x, w; zero points per tensor; int32 bias B) into i32, then
    `requantize` by x_scale * w_scale / y_scale (per output channel) and y_zero_point."""
    x, xq = _operand(ctx, 0, "x")
    w, wq = _operand(ctx, 3, "w")
    yq = qtype(ctx.dtype(7), "y_zero_point")
    bias = ctx.typed_value(8, ("i32",), "B") if ctx.has_input(8) else None
    zx, zw = uniform_zero_point(ctx, 2, xq, "x_zero_point"), uniform_zero_point(ctx, 5, wq, "w_zero_point")
    acc = build_conv(ctx, x, w, bias, i32, input_zero_point=zx, weight_zero_point=zw)
    y = requantized(ctx, acc, (1, 4, 6), 1, yq)
    return [ctx.typed(y, np.int8 if yq == i8 else np.uint8)]


@converter("ConvInteger", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def convert_conv_integer(ctx: NodeContext) -> Sequence[Output]:
    """Integer conv2d (zero points per tensor) into i32, exact. A computed x_zero_point
    (DynamicQuantizeLinear's) is corrected in f32 as MatMulInteger's: the conv of x with
    zero point 0 minus x_zero_point * the conv of the input's ones (padding is 0: edge
    outputs sum fewer taps) with (w - w_zero_point), a constant."""
    x, xq = _operand(ctx, 0, "x")
    w, wq = _operand(ctx, 1, "w")
    zw = uniform_zero_point(ctx, 3, wq, "w_zero_point")
    if not ctx.has_input(2) or ctx.tensor(2).data is not None:
        zx = uniform_zero_point(ctx, 2, xq, "x_zero_point")
        return [ctx.typed(build_conv(ctx, x, w, None, i32, input_zero_point=zx, weight_zero_point=zw), np.int32)]
    wdata = _runtime_zero_point_operand(ctx, 1, "W")
    acc = build_conv(ctx, x, w, None, i32, weight_zero_point=zw)
    conv = acc.owner
    if isinstance(conv, ReshapeOp):  # (1-D: the conv is reshaped back)
        conv = conv.input.owner
    assert isinstance(conv, Conv2dOp)
    ones = np.ones((1, *shape_of(conv.input)[1:]))
    wf = (np.asarray(wdata).astype(np.float64) - zw).reshape(shape_of(conv.weight))
    taps = conv2d_ref(ones, wf, None, **conv.params).reshape((1, *shape_of(acc)[1:])).astype(np.float32)
    return [ctx.typed(_corrected(ctx, acc, taps), np.int32)]


def _runtime_zero_point_operand(ctx: NodeContext, i: int, what: str) -> np.ndarray:
    """The constant data of input `i`, needed to correct for a computed zero point of the other operand."""
    if ctx.tensor(2).shape not in ((), (1,)):
        raise NodeError("a computed zero point must be a scalar")
    t = ctx.tensor(i)
    if t.data is None:
        raise NodeError(f"{what} (input {i}, '{t.name}') is computed at run time; only constant values are "
                        "supported with a computed zero point (its sums correct the product)")
    return t.data


def _corrected(ctx: NodeContext, acc: SSAValue, sums: np.ndarray) -> SSAValue:
    """`acc` (i32, operand zero point 0) minus the computed zero point (input 2) times
    `sums`, in f32: the integer result carried as f32."""
    corr = ctx.build(MulOp(ctx.value(2, carried=True), ctx.const(sums, "zero_point_sums", f32),
                           TensorType(f32, sums.shape))).results[0]
    return ctx.build(SubOp(ctx.carried_value(acc), corr, TensorType(f32, shape_of(acc)))).results[0]


def _integer_matmul(ctx: NodeContext, a: SSAValue, b: SSAValue, za: int, zb: int) -> SSAValue:
    shape = matmul_shape(shape_of(a), shape_of(b))
    if shape is None:
        raise NodeError(f"shapes {list(shape_of(a))} and {list(shape_of(b))} do not multiply")
    op = MatMulOp(a, b, TensorType(i32, shape), input_zero_point=za, weight_zero_point=zb)
    return ctx.build(op).results[0]


@converter("QLinearMatMul")
def convert_qlinear_matmul(ctx: NodeContext) -> Sequence[Output]:
    """Integer matmul into i32, then `requantize` by a_scale * b_scale / y_scale (b_scale
    per tensor or per column) and y_zero_point."""
    a, aq = _operand(ctx, 0, "a")
    b, bq = _operand(ctx, 3, "b")
    yq = qtype(ctx.dtype(7), "y_zero_point")
    acc = _integer_matmul(ctx, a, b, uniform_zero_point(ctx, 2, aq, "a_zero_point"),
                          uniform_zero_point(ctx, 5, bq, "b_zero_point"))
    y = requantized(ctx, acc, (1, 4, 6), -1, yq)
    return [ctx.typed(y, np.int8 if yq == i8 else np.uint8)]


@converter("MatMulInteger")
def convert_matmul_integer(ctx: NodeContext) -> Sequence[Output]:
    """(A - a_zero_point) @ (B - b_zero_point) into i32, exact. A computed a_zero_point
    (DynamicQuantizeLinear's) cannot be an attribute: the product of A with zero point 0
    is corrected in f32 by a_zero_point * column sums of (B - b_zero_point), a constant
    (a carried int32 result: exact below 2^24, else float32 rounding)."""
    a, aq = _operand(ctx, 0, "A")
    b, bq = _operand(ctx, 1, "B")
    zb = uniform_zero_point(ctx, 3, bq, "b_zero_point")
    if not ctx.has_input(2) or ctx.tensor(2).data is not None:
        return [ctx.typed(_integer_matmul(ctx, a, b, uniform_zero_point(ctx, 2, aq, "a_zero_point"), zb), np.int32)]
    wb = _runtime_zero_point_operand(ctx, 1, "B")
    acc = _integer_matmul(ctx, a, b, 0, zb)
    sums = (np.asarray(wb).astype(np.float64) - zb).sum(axis=-2, keepdims=True).astype(np.float32)
    return [ctx.typed(_corrected(ctx, acc, sums), np.int32)]


@converter("DynamicQuantizeLinear")
def convert_dynamic_quantize_linear(ctx: NodeContext) -> Sequence[Output]:
    """ONNX's formula: x_min = min(0, min(x)), x_max = max(0, max(x)), y_scale = (x_max -
    x_min) / 255, y_zero_point = saturate(round_half_even(-x_min / y_scale)) in [0, 255],
    y = quantize(x, y_scale, y_zero_point) to ui8; y_zero_point is ui8 too."""
    x = ctx.value(0)
    rank = len(shape_of(x))
    scalar = TensorType(f32, ())

    def reduce(cls: type) -> SSAValue:
        return ctx.build(cls(x, tuple(range(rank)), False, scalar)).results[0]

    def op(cls: type, *vals: SSAValue) -> SSAValue:
        return ctx.build(cls(*vals, scalar)).results[0]

    lo = op(MinOp, reduce(ReduceMinOp), ctx.scalar(0.0))
    hi = op(MaxOp, reduce(ReduceMaxOp), ctx.scalar(0.0))
    scale = op(DivOp, op(SubOp, hi, lo), ctx.scalar(255.0))
    # (onnxruntime: round(clamp(qmin - min / scale, qmin, qmax)), std::round: halves away from zero)
    zp = op(ClipOp, op(DivOp, op(NegOp, lo), scale), ctx.scalar(0.0), ctx.scalar(255.0))
    zp = op(SIMPLE_UNARY["floor"], op(AddOp, zp, ctx.scalar(0.5)))
    y = ctx.build(QuantizeOp(x, scale, zp, TensorType(ui8, shape_of(x)))).results[0]
    zq = ctx.build(QuantizeOp(zp, ctx.scalar32(1.0), ctx.scalar32(0.0), TensorType(ui8, ()))).results[0]
    return [ctx.typed(y, np.uint8), scale, ctx.typed(zq, np.uint8)]


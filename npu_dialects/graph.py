"""`npu_graph`: tensor-level ops with value semantics, what the ONNX importer maps onto.

Each op carries the location of the ONNX node it came from and its numpy
reference semantics (`evaluate`), so constant folding, the float64 reference
and the simulator's tile kernels share one definition of what an op computes.
The pure functions (`conv2d_ref`, `gemm_ref`, `pool_ref`, `ELEMENTWISE`) are
what the simulator calls on tiles.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, TypeVar

import ml_dtypes
import numpy as np
from numpy.typing import ArrayLike
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsTerminator, NoMemoryEffect, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from npu_dialects import special
from npu_dialects.arch import Arch, DType, value_type, widest_type
from npu_dialects.dtypes import ELEMENT_TYPES, FLOATS, QUANTIZED, check_types, compute_view, np_dtype, qrange, type_name
from npu_dialects.special import erf_ref

_T = TypeVar("_T")

# --------------------------------------------------------------------------------------
# Reference semantics (numpy). Inputs are float arrays; outputs keep the input dtype.
# --------------------------------------------------------------------------------------


def _windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
             dilations: Sequence[int]) -> np.ndarray:
    """[N, C, OH, OW, KH, KW] strided view of the sliding windows of an NCHW array."""
    kh, kw = kernel
    dh, dw = dilations
    sh, sw = strides
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    v = np.lib.stride_tricks.sliding_window_view(x, (eh, ew), axis=(2, 3))
    return v[:, :, ::sh, ::sw, ::dh, ::dw]


def conv2d_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, *,
               strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
               dilations: Sequence[int] = (1, 1), group: int = 1) -> np.ndarray:
    """ONNX Conv, NCHW / OIHW; pads are (top, left, bottom, right). Computed as
    im2col + one matrix product per group (BLAS), in the input's dtype."""
    xp = _pad_spatial(x, pads, 0.0)  # (top, left, bottom, right: H, W begins then ends)
    co, cig, kh, kw = w.shape
    win = _windows(xp, (kh, kw), strides, dilations)  # N C OH OW KH KW (a view)
    n, _, oh, ow = win.shape[:4]
    cog = co // group
    y = np.empty((n, oh, ow, co), dtype=np.result_type(x, w))
    for g in range(group):
        cols = win[:, g * cig:(g + 1) * cig].transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, cig * kh * kw)
        y[..., g * cog:(g + 1) * cog] = (cols @ w[g * cog:(g + 1) * cog].reshape(cog, -1).T).reshape(n, oh, ow, cog)
    y = y.transpose(0, 3, 1, 2)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(x.dtype, copy=False)


def integer_operands(x: np.ndarray, w: np.ndarray, x_zero_point: int = 0,
                     w_zero_point: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Integer operands of the cube minus their zero points, in float64: products and
    sums of them are exact (|x - zx| * |w - zw| <= 2^16, so any K < 2^37 is exact)."""
    return x.astype(np.float64) - x_zero_point, w.astype(np.float64) - w_zero_point


def conv2d_int_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, *, x_zero_point: int = 0,
                   w_zero_point: int = 0, **params) -> np.ndarray:
    """Integer convolution (ONNX ConvInteger plus an int32 bias): sum((x - zx) * (w - zw))
    + b exactly, as int32; padding is a real zero (the zero point before subtracting)."""
    xf, wf = integer_operands(x, w, x_zero_point, w_zero_point)
    y = conv2d_ref(xf, wf, None if b is None else b.astype(np.float64), **params)
    return y.astype(np.int32)


def matmul_int_ref(a: np.ndarray, b: np.ndarray, a_zero_point: int = 0, b_zero_point: int = 0) -> np.ndarray:
    """Integer matmul (ONNX MatMulInteger): (a - za) @ (b - zb) exactly, as int32."""
    af, bf = integer_operands(a, b, a_zero_point, b_zero_point)
    return np.matmul(af, bf).astype(np.int32)


def conv_transpose_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, *,
                       strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
                       dilations: Sequence[int] = (1, 1), output_padding: Sequence[int] = (0, 0),
                       group: int = 1) -> np.ndarray:
    """ONNX ConvTranspose, NCHW input, weight [C_in, C_out/group, kH, kW]; pads are
    (top, left, bottom, right) and crop the full result (negative ones extend it with
    zeros). Computed as one product per group and kernel tap, scattered (strided) into
    the full result."""
    n, ci, h, wd = x.shape
    _, cog, kh, kw = w.shape
    (sh, sw), (dh, dw) = strides, dilations
    full = (sh * (h - 1) + dh * (kh - 1) + 1 + output_padding[0], sw * (wd - 1) + dw * (kw - 1) + 1 + output_padding[1])
    y = np.zeros((n, group * cog) + full, dtype=np.result_type(x, w))
    cig = ci // group
    for g in range(group):
        taps = np.einsum("nchw,cokl->klnohw", x[:, g * cig:(g + 1) * cig], w[g * cig:(g + 1) * cig])
        for i in range(kh):
            for j in range(kw):
                y[:, g * cog:(g + 1) * cog, i * dh:i * dh + sh * (h - 1) + 1:sh,
                  j * dw:j * dw + sw * (wd - 1) + 1:sw] += taps[i, j]
    y = _pad_spatial(y, [max(-p, 0) for p in pads], 0.0)
    top, left, bottom, right = (max(p, 0) for p in pads)
    y = y[:, :, top:y.shape[2] - bottom, left:y.shape[3] - right]
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(x.dtype, copy=False)


def gemm_ref(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, *, alpha: float = 1.0,
             beta: float = 1.0, trans_a: bool = False, trans_b: bool = False) -> np.ndarray:
    """ONNX Gemm: alpha * op(A) @ op(B) + beta * C."""
    y = (a.T if trans_a else a) @ (b.T if trans_b else b)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y.astype(a.dtype, copy=False)


def _pad_spatial(x: np.ndarray, pads: Sequence[int], value: float) -> np.ndarray:
    """`x` padded with `value` in its last len(pads) // 2 dims (`pads`: the begin
    counts of those dims, then the end counts, as ONNX orders them); a negative
    count crops that many rows or columns instead (compute ops of strip groups)."""
    n = len(pads) // 2
    if not any(pads):
        return x
    if any(p < 0 for p in pads):
        lead = (slice(None),) * (x.ndim - n)
        x = x[lead + tuple(slice(max(0, -b), x.shape[x.ndim - n + i] - max(0, -e))
                           for i, (b, e) in enumerate(zip(pads[:n], pads[n:])))]
        pads = [max(0, p) for p in pads]
        if not any(pads):
            return x
    return np.pad(x, [(0, 0)] * (x.ndim - n) + list(zip(pads[:n], pads[n:])), constant_values=value)


def _spatial_windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
                     dilations: Sequence[int]) -> np.ndarray:
    """[N, C, O1..On, K1..Kn] strided view of the sliding windows over the last
    n = len(kernel) dims of `x`."""
    n = len(kernel)
    extent = tuple((k - 1) * d + 1 for k, d in zip(kernel, dilations))
    v = np.lib.stride_tricks.sliding_window_view(x, extent, axis=tuple(range(x.ndim - n, x.ndim)))
    lead = (slice(None),) * (x.ndim - n)
    return v[lead + tuple(slice(None, None, s) for s in strides) + tuple(slice(None, None, d) for d in dilations)]


POOL_PAD = {"max": float("-inf"), "avg": float("nan")}
"""What a pooling window reads outside its input, per kind: padding never wins a
max; NaN marks padding for an average (counted in the divisor only with
`count_include_pad`)."""


def pool_ref(x: np.ndarray, kind: str, kernel: Sequence[int], strides: Sequence[int],
             pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
             count_include_pad: bool = False) -> np.ndarray:
    """Max (`kind` "max") or average ("avg") pooling over the last n = len(kernel)
    dims of `x` ([N, C, spatial...]), for any n: the one definition of pooling that
    `npu_graph.maxpool`, `npu_graph.maxpool_nd`, `npu_graph.avgpool` and the
    simulator's pool tiles share. `pads` are the begin counts of the spatial dims,
    then the end counts ((top, left, bottom, right) in 2-D). Positions outside `x`
    read `POOL_PAD[kind]`: -inf never wins a max; NaN marks padding for an average,
    which divides by the number of non-NaN positions, or by the kernel size with
    `count_include_pad` (a NaN inside the input is taken for padding too)."""
    n = len(kernel)
    if kind not in POOL_PAD:
        raise ValueError(f"unknown pool kind '{kind}'")
    pads = tuple(pads) if pads is not None else (0,) * (2 * n)
    dilations = tuple(dilations) if dilations is not None else (1,) * n
    pad = np.iinfo(x.dtype).min if kind == "max" and np.issubdtype(x.dtype, np.integer) else POOL_PAD[kind]
    win = _spatial_windows(_pad_spatial(x, pads, pad), kernel, strides, dilations)
    axes = tuple(range(x.ndim, x.ndim + n))
    if kind == "max":
        return win.max(axis=axes)
    valid = ~np.isnan(win)
    total = np.where(valid, win, 0).sum(axis=axes)
    with np.errstate(all="ignore"):
        count = math.prod(kernel) if count_include_pad else valid.sum(axis=axes)
        return (total / count).astype(x.dtype, copy=False)


def pool_out_shape(x: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                   dilations: Sequence[int]) -> tuple[int, ...] | None:
    """Result shape of pooling [N, C, spatial...] `x` (floor mode; ceil mode is extra
    end padding), or None when a spatial dim would be empty."""
    n = len(kernel)
    lead = tuple(x[:len(x) - n])
    out = tuple((s + b + e - (k - 1) * d - 1) // st + 1
                for s, k, st, b, e, d in zip(x[len(x) - n:], kernel, strides, pads[:n], pads[n:], dilations))
    return lead + out if all(o > 0 for o in out) else None


def _quiet(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """`fn` with numpy's floating-point warnings off (log(0), 1/0, overflow in exp are
    well-defined results on the vector unit, and padded tile rows compute them too)."""

    def wrapped(*args: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(*args)

    wrapped.__doc__ = fn.__doc__
    return wrapped


def in_f32(fn: Callable[..., np.ndarray], inputs: Sequence[np.ndarray]) -> np.ndarray:
    """`fn(*inputs)` computed as the units do: f16/bf16 inputs widened to f32
    (`dtypes.compute_view`), the result rounded back to that type; other inputs as they are."""
    narrow = next((a.dtype for a in inputs if a.dtype in _NARROW), None)
    if narrow is None:
        return fn(*inputs)
    return np.asarray(fn(*[compute_view(a) for a in inputs])).astype(narrow)


_NARROW = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _like(x: np.ndarray, *others: np.ndarray) -> np.dtype:
    return np.result_type(x, *others)


def _gelu(x: np.ndarray) -> np.ndarray:
    """In float64 with `erf_ref`; in f32 when the arch approximates erf (`special`)."""
    ev = special.active()
    if ev is not None and "erf" in ev.k:
        v = x.astype(np.float32)
        return (np.float32(0.5) * v * (1 + ev.erf(v * np.float32(1 / np.sqrt(2.0))))).astype(x.dtype, copy=False)
    y = 0.5 * x.astype(np.float64) * (1.0 + erf_ref(x.astype(np.float64) / np.sqrt(2.0)))
    return y.astype(x.dtype, copy=False)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    """In float64; in f32 when the arch approximates tanh (`special`)."""
    ev = special.active()
    wide = np.float32 if ev is not None and "tanh" in ev.k else np.float64
    v = x.astype(wide)
    inner = wide(np.sqrt(2.0 / np.pi)) * (v + wide(0.044715) * v ** 3)
    y = wide(0.5) * v * (1 + (ev.tanh(inner) if wide is np.float32 and ev is not None else np.tanh(inner)))
    return y.astype(x.dtype, copy=False)


def _flag(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    """A comparison giving 1.0 / 0.0 in the operands' (float) dtype."""
    return lambda a, b: fn(a, b).astype(_like(a, b), copy=False)


ELEMENTWISE: dict[str, tuple[int, Callable[..., np.ndarray]]] = {
    "relu": (1, lambda x: np.maximum(x, 0).astype(x.dtype, copy=False)),
    "add": (2, np.add),
    "mul": (2, np.multiply),
    "sub": (2, np.subtract),
    "div": (2, _quiet(np.divide)),
    # unary
    "sigmoid": (1, _quiet(special.sigmoid)),
    "tanh": (1, special.tanh),
    "erf": (1, special.erf),
    "gelu": (1, _quiet(_gelu)),
    "gelu_tanh": (1, _quiet(_gelu_tanh)),
    "sqrt": (1, _quiet(np.sqrt)),
    "exp": (1, _quiet(special.exp)),
    "log": (1, _quiet(np.log)),
    "neg": (1, np.negative),
    "abs": (1, np.abs),
    "reciprocal": (1, _quiet(special.reciprocal)),
    "trunc": (1, np.trunc),
    "floor": (1, np.floor),
    "ceil": (1, np.ceil),
    "round": (1, np.round),  # (half to even, as ONNX Round)
    "sign": (1, np.sign),
    "sin": (1, np.sin),
    "cos": (1, np.cos),
    "tan": (1, _quiet(np.tan)),
    "asin": (1, _quiet(np.arcsin)),
    "acos": (1, _quiet(np.arccos)),
    "atan": (1, np.arctan),
    "sinh": (1, _quiet(np.sinh)),
    "cosh": (1, _quiet(np.cosh)),
    "asinh": (1, np.arcsinh),
    "acosh": (1, _quiet(np.arccosh)),
    "atanh": (1, _quiet(np.arctanh)),
    "softplus": (1, _quiet(lambda x: np.logaddexp(x.dtype.type(0), x))),  # (log(1 + e^x) without overflow)
    "isnan": (1, lambda x: np.isnan(x).astype(x.dtype, copy=False)),
    "isinf": (1, lambda x: np.isinf(x).astype(x.dtype, copy=False)),
    "copy": (1, lambda x: x),
    # binary
    "pow": (2, _quiet(np.power)),
    "fmod": (2, _quiet(np.fmod)),
    "mod": (2, _quiet(np.mod)),
    "prelu": (2, lambda x, s: np.where(x < 0, x * s, x).astype(_like(x, s), copy=False)),
    "max": (2, np.maximum),
    "min": (2, np.minimum),
    "equal": (2, _flag(np.equal)),
    "less": (2, _flag(np.less)),
    "greater": (2, _flag(np.greater)),
    # ternary
    "clip": (3, lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    "where": (3, lambda c, a, b: np.where(c != 0, a, b).astype(_like(a, b), copy=False)),
}
"""name -> (arity, numpy function with broadcasting): the vector unit's repertoire.
Every function keeps float32 inputs float32. Comparisons give 1.0/0.0 and `where`
takes any non-zero condition as true: booleans and integers live on the device as
float32 values. `copy` is the identity; writing its result into a larger output
tile broadcasts it (`npu_graph.expand`)."""


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def ints(attr: Attribute | None, default: Sequence[int]) -> tuple[int, ...]:
    """Values of an `array<i64: ...>` attribute (VerifyException for other element types)."""
    if attr is None:
        return tuple(default)
    if not isinstance(attr, DenseArrayBase) or not isinstance(attr.elt_type, IntegerType):
        raise VerifyException(f"expected an integer array such as array<i64: 1, 2>, got {attr}")
    return tuple(int(v) for v in attr.get_values())


def _check_lengths_and_signs(op: str, params: Sequence[tuple[str, Sequence[int], int]],
                             crop: bool = False) -> None:
    """Each (key, values, wanted length): the length, and the sign (pads >= 0 unless
    `crop` lets a negative pad crop, others > 0)."""
    for key, vals, n in params:
        if len(vals) != n:
            raise VerifyException(f"'{op}': {key} needs {n} values, got {list(vals)}")
        if key == "pads" and not crop and any(v < 0 for v in vals):
            raise VerifyException(f"'{op}': pads must be non-negative, got {list(vals)}")
        if key != "pads" and any(v <= 0 for v in vals):
            raise VerifyException(f"'{op}': {key} must be positive, got {list(vals)}")


def check_window_params(op: str, rank4: Sequence[int], p: dict, kernel_key: str | None = None,
                        crop: bool = False) -> None:
    """Lengths and signs of strides/dilations (2, > 0), pads (4, >= 0; any sign with
    `crop`) and kernel (2, > 0)."""
    want = {"strides": 2, "dilations": 2, "pads": 4}
    if kernel_key:
        want[kernel_key] = 2
    _check_lengths_and_signs(op, [(key, p[key], n) for key, n in want.items()], crop)
    if len(rank4) != 4:
        raise VerifyException(f"'{op}': input must be 4-D NCHW, got shape {list(rank4)}")


def check_f32(op: IRDLOperation) -> None:
    """The default type rule of a graph op: every tensor operand and result holds one
    float type (f32, f16 or bf16; `npu_dialects.dtypes.check_types`)."""
    check_types(op)


ANY_TYPE = tuple(ELEMENT_TYPES)
"""Every element type: what data-movement ops take (any one of them; exact on integers)."""


def check_with_f32_stats(op: IRDLOperation, stats: SSAValue) -> None:
    """One float type throughout but `stats` (row statistics), which is f32: a softmax or
    layer normalisation applied in f16/bf16 from statistics summed in f32."""
    expect_type(op, stats, "stats", ("f32",))
    check_types(op, FLOATS, same=False)
    others = [_type_of(v) for v in (*op.operands, *op.results) if v is not stats]
    if any(t != others[0] for t in others):
        raise VerifyException(f"'{op.name}': its operands and result but the statistics must have one element "
                              f"type, got {', '.join(str(t) for t in others)} (insert a cast)")


def check_any_one_type(op: IRDLOperation) -> None:
    """The type rule of data movement (reshape, transpose, slice, concat, pad, expand,
    max pooling, constants): any one element type, integers included."""
    check_types(op, ANY_TYPE)


def _type_of(v: SSAValue) -> Attribute:
    return v.type.element_type if isinstance(v.type, TensorType) else v.type


def expect_type(op: IRDLOperation, v: SSAValue, what: str, allowed: Sequence[str]) -> None:
    """`v` (named `what` in the message) has one of the element types `allowed`."""
    t = _type_of(v)
    if type_name(t) not in allowed:
        raise VerifyException(f"'{op.name}': {what} has element type {t}; it must be {' or '.join(allowed)}")


def zero_point_attrs(input_zero_point: int | None, weight_zero_point: int | None) -> dict[str, Attribute]:
    """The zero-point attributes of an integer conv2d/matmul (0 and None are left out)."""
    return {k: IntegerAttr(v, i64) for k, v in (("input_zero_point", input_zero_point),
                                                 ("weight_zero_point", weight_zero_point)) if v}


def zero_points_of(op: IRDLOperation) -> tuple[int, int]:
    return (attr_int(dict(op.attributes), "input_zero_point", 0), attr_int(dict(op.attributes), "weight_zero_point", 0))


def check_float_product(op: IRDLOperation, x: SSAValue, w: SSAValue, bias: SSAValue | None) -> None:
    """A float conv2d/matmul/gemm computes in one float type, or (bias-less, f16/bf16
    operands of one type) sums into an f32 result: a tile's accumulator over several
    reduction steps (`tile_search.wide_accumulator`)."""
    if (bias is None and type_name(_type_of(op.results[0])) == "f32" and type_name(_type_of(x)) in ("f16", "bf16")
            and _type_of(x) == _type_of(w)):
        check_types(op, same=False)
    else:
        check_f32(op)


def check_cube_types(op: IRDLOperation, x: SSAValue, w: SSAValue, bias: SSAValue | None) -> None:
    """conv2d/matmul types: one float type throughout (`check_float_product`), or integer
    operands (i8/ui8 input and weight, each zero point within its operand's
    type) with an i32 bias and result."""
    names = (("input", x), ("weight", w))
    if not any(type_name(_type_of(v)) in QUANTIZED for _, v in names):
        zps = [k for k in ("input_zero_point", "weight_zero_point") if k in op.attributes]
        if zps:
            raise VerifyException(f"'{op.name}': {', '.join(zps)} only applies to integer (i8/ui8) operands")
        check_float_product(op, x, w, bias)
        return
    for (what, v), zp in zip(names, zero_points_of(op)):
        expect_type(op, v, what, QUANTIZED)
        lo, hi = qrange(_type_of(v))
        if not lo <= zp <= hi:
            raise VerifyException(f"'{op.name}': {what}_zero_point {zp} is outside {_type_of(v)} [{lo}, {hi}]")
    if bias is not None:
        expect_type(op, bias, "bias", ("i32",))
    expect_type(op, op.results[0], "result", ("i32",))


def int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def shape_of(v: SSAValue | Attribute) -> tuple[int, ...]:
    t = v.type if isinstance(v, SSAValue) else v
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a ranked tensor, got {t}")
    return tuple(t.get_shape())


def f32_tensor(shape: Sequence[int]) -> TensorType:
    return TensorType(Float32Type(), list(shape))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        return None


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """Result shape of numpy/ONNX matmul (a 1-D operand is promoted and its extra dim
    dropped again, batch dims broadcast), or None when the shapes do not multiply."""
    if not a or not b:
        return None
    a2 = (1, a[0]) if len(a) == 1 else tuple(a)
    b2 = (b[0], 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        return None
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    if batch is None:
        return None
    out = [*batch, a2[-2], b2[-1]]
    if len(b) == 1:
        out.pop(-1)
    if len(a) == 1:
        out.pop(-2 if len(b) != 1 else -1)
    return tuple(out)


def matmul_dims(a: Sequence[int], b: Sequence[int], trans_a: bool = False,
                trans_b: bool = False) -> tuple[int, int, int, int]:
    """(batch, m, k, n) of numpy/ONNX matmul of shapes `a` and `b` (1-D operands
    promoted, batch dims broadcast; `batch` is the product of the result's batch dims)."""
    a2 = (1, a[0]) if len(a) == 1 else tuple(a)
    b2 = (b[0], 1) if len(b) == 1 else tuple(b)
    m, k = (a2[-1], a2[-2]) if trans_a else a2[-2:]
    n = b2[-2] if trans_b else b2[-1]
    return math.prod(broadcast_shapes(a2[:-2], b2[:-2]) or ()), m, k, n


FORMAT = "operands attr-dict `:` functional-type(operands, results)"


class GraphOp(IRDLOperation):
    """Common base: `evaluate` maps numpy inputs to numpy outputs; `cycles` says what
    the op costs on a core of an arch."""

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        raise NotImplementedError(f"{self.name} has no reference semantics")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """Cycles of this op computed whole on one core, or of the part of its result of
        shape `out_shape` (a strip), as the simulator charges the compute ops
        bufferization emits for it (`Arch.cube_cycles`/`vector_cycles`). None: the op
        has no single-step mapping onto the units (it is tiled as a kernel of its own)."""
        return None

    def macs(self) -> int:
        """Multiply-accumulates of the op (cube work, for the roofline); 0 for others."""
        return 0

    def decompose(self) -> tuple[list[Operation], list[SSAValue]] | None:
        """The op as other graph ops (MLIR's `AggregatedOpInterface.decomposeOperation`):
        new ops, in order, and the values that replace the op's results; None (the
        default) when the op is compiled as itself. `npu-canonicalize` applies it."""
        return None

    def out_elements(self, out_shape: Sequence[int] | None = None) -> int:
        """Elements of the result (or of the part of it of shape `out_shape`)."""
        return math.prod(shape_of(self.results[0]) if out_shape is None else out_shape)

    def check_element_types(self) -> None:
        """The op's element-type rule (default: one float type, `check_f32`)."""
        check_f32(self)

    def _expect_result_shape(self, shape: Sequence[int] | None, what: str) -> None:
        self.check_element_types()
        got = shape_of(self.results[0])
        if shape is None or tuple(shape) != got:
            raise VerifyException(f"'{self.name}': {what} gives "
                                  f"{'no valid shape' if shape is None else 'shape ' + str(list(shape))}, "
                                  f"but the result type has {list(got)}")


# --------------------------------------------------------------------------------------
# Tiling interface of structured ops
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Follow:
    """How one input dimension's window follows the output tile: a tile of t output
    elements starting at output index o reads input indices from `scale` * o +
    `offset`, (t - 1) * `scale` + 1 + `halo` of them (a pooling window of k with
    stride s and pad p: scale=s, offset=-p, halo=k-1). `out_dim=None` means the
    whole input dimension is in every tile (reduced, broadcast or gathered)."""

    out_dim: int | None = None
    scale: int = 1
    offset: int = 0
    halo: int = 0


@dataclass(frozen=True)
class TileMap:
    """How a structured op is computed tile by tile: any output tile is `compute`
    of the input windows. `tileable[d]` says whether tiles may cut output dim d
    (False: every tile spans it whole, e.g. a softmax axis); `inputs[i][k]` says
    how dim k of input i follows the output tile. Reads past an input's edge (only
    in cut dims of edge tiles) give `pad_value`; those outputs are clipped."""

    tileable: tuple[bool, ...]
    inputs: tuple[tuple[Follow, ...], ...]
    pad_value: float = 0.0


def same_dims(rank: int, whole: Sequence[int] = ()) -> tuple[Follow, ...]:
    """An input laid out like the output: dim d follows output dim d, except `whole` dims."""
    return tuple(Follow(None) if d in whole else Follow(d) for d in range(rank))


def broadcast_follow(in_shape: Sequence[int], out_shape: Sequence[int]) -> tuple[Follow, ...]:
    """numpy broadcasting: input dims align right; size-1 dims (broadcast) stay whole."""
    lead = len(out_shape) - len(in_shape)
    return tuple(Follow(None) if s == 1 and out_shape[lead + k] != 1 else Follow(lead + k)
                 for k, s in enumerate(in_shape))


# --------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(GraphOp):
    """A constant tensor: `weight` names an entry of the module's weight file
    (`npu.weights`), or `value` holds a small dense literal."""

    name = "npu_graph.constant"
    weight = opt_attr_def(StringAttr)
    value = opt_attr_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: TensorType, *, weight: str | None = None,
                 value: DenseIntOrFPElementsAttr | None = None):
        attrs: dict[str, Attribute] = {}
        if weight is not None:
            attrs["weight"] = StringAttr(weight)
        if value is not None:
            attrs["value"] = value
        super().__init__(result_types=[result_type], attributes=attrs)

    def verify_(self) -> None:
        check_any_one_type(self)
        if (self.weight is None) == (self.value is None):
            raise VerifyException("'npu_graph.constant' needs exactly one of 'weight' or 'value'")
        if self.value is not None and tuple(self.value.get_shape()) != shape_of(self.result):
            raise VerifyException(f"'npu_graph.constant': value shape {list(self.value.get_shape())} does not "
                                  f"match the result type {self.result.type}")
        if self.value is not None and self.value.get_element_type() != _type_of(self.result):
            raise VerifyException(f"'npu_graph.constant': value of element type {self.value.get_element_type()} "
                                  f"does not match the result type {self.result.type}")


@irdl_op_definition
class Conv2dOp(GraphOp):
    """2-D convolution, NCHW input, OIHW weight, optional bias (ONNX Conv)."""

    name = "npu_graph.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = opt_attr_def(DenseArrayBase)
    pads = opt_attr_def(DenseArrayBase)  # top, left, bottom, right
    dilations = opt_attr_def(DenseArrayBase)
    group = opt_attr_def(IntegerAttr)
    input_zero_point = opt_attr_def(IntegerAttr)
    weight_zero_point = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, w: SSAValue, b: SSAValue | None, result_type: TensorType, *,
                 strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
                 dilations: Sequence[int] = (1, 1), group: int = 1, input_zero_point: int | None = None,
                 weight_zero_point: int | None = None):
        super().__init__(operands=[x, w, b], result_types=[result_type], attributes={
            "strides": int_array(strides), "pads": int_array(pads),
            "dilations": int_array(dilations), "group": IntegerAttr(group, i64),
            **zero_point_attrs(input_zero_point, weight_zero_point)})

    @property
    def zero_points(self) -> tuple[int, int]:
        """(input, weight) zero points of an integer convolution (0 when not given)."""
        return zero_points_of(self)

    def check_element_types(self) -> None:
        """Float: one float type. Integer: i8/ui8 input and weight, i32 bias and result."""
        check_cube_types(self, self.input, self.weight, self.bias)

    @property
    def params(self) -> dict:
        return dict(strides=ints(self.strides, (1, 1)), pads=ints(self.pads, (0, 0, 0, 0)),
                    dilations=ints(self.dilations, (1, 1)),
                    group=self.group.value.data if self.group is not None else 1)

    def with_operands(self, x: SSAValue, w: SSAValue, b: SSAValue | None,
                      result_type: TensorType | None = None) -> Conv2dOp:
        """The same convolution (strides, pads, dilations, group) of other operands."""
        zx, zw = (self.input_zero_point, self.weight_zero_point)
        op = Conv2dOp(x, w, b, result_type or self.result.type, **self.params)  # type: ignore[arg-type]
        op.attributes.update({k: v for k, v in (("input_zero_point", zx), ("weight_zero_point", zw)) if v})
        return op

    def infer_shape(self) -> tuple[int, ...] | None:
        return conv_out_shape(shape_of(self.input), shape_of(self.weight), **self.params)

    def verify_(self) -> None:
        x, w = shape_of(self.input), shape_of(self.weight)
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(f"'npu_graph.conv2d': input and weight must be 4-D, got {list(x)} and {list(w)}")
        p = self.params
        check_window_params(self.name, x, p)
        if p["group"] <= 0 or w[0] % p["group"]:
            raise VerifyException(f"'npu_graph.conv2d': group {p['group']} must be positive and divide "
                                  f"the {w[0]} output channels")
        if x[1] != w[1] * p["group"]:
            raise VerifyException(f"'npu_graph.conv2d': input has {x[1]} channels but weight expects "
                                  f"{w[1]} x group {p['group']}")
        if self.bias is not None and shape_of(self.bias) != (w[0],):
            raise VerifyException(f"'npu_graph.conv2d': bias must have shape [{w[0]}]")
        self._expect_result_shape(self.infer_shape(), "convolution")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """The cube: per group an [n*oh*ow, ci*kh*kw] @ [ci*kh*kw, co/group] product;
        a bias is one vector pass over the result."""
        o = tuple(shape_of(self.result) if out_shape is None else out_shape)
        w, g = shape_of(self.weight), self.params["group"]
        cube = arch.cube_cycles(o[0] * o[2] * o[3], w[1] * w[2] * w[3], w[0] // g, batch=g,
                                dtype=value_type(self.input))
        if self.bias is None:
            return cube
        return cube + arch.vector_cycles(math.prod(o), dtype=widest_type((self.bias, self.result)))

    def macs(self) -> int:
        n, co, oh, ow = shape_of(self.result)
        _, cig, kh, kw = shape_of(self.weight)
        return n * co * oh * ow * cig * kh * kw

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        if type_name(_type_of(self.input)) in QUANTIZED:
            zx, zw = self.zero_points
            return (conv2d_int_ref(*inputs, x_zero_point=zx, w_zero_point=zw, **self.params),)
        return (in_f32(lambda *a: conv2d_ref(*a, **self.params), inputs),)


def conv_out_shape(x: Sequence[int], w: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                   dilations: Sequence[int], group: int = 1) -> tuple[int, ...] | None:
    oh = (x[2] + pads[0] + pads[2] - (w[2] - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (x[3] + pads[1] + pads[3] - (w[3] - 1) * dilations[1] - 1) // strides[1] + 1
    if oh <= 0 or ow <= 0:
        return None
    return (x[0], w[0], oh, ow)


@irdl_op_definition
class ConvTransposeOp(GraphOp):
    """2-D transposed convolution (ONNX ConvTranspose): NCHW input, weight [C_in,
    C_out/group, kH, kW], optional bias [C_out]; `pads` (top, left, bottom, right)
    crop the full result, `output_padding` extends its bottom/right.

    It decomposes (`decompose`, applied by `npu-canonicalize`) into one cube
    convolution over all stride phases plus a pixel shuffle: output row
    s*a + r - pad only takes kernel taps k with k*d = r (mod s), so phase r is a
    stride-1 convolution with the sub-kernel of those taps (Q + 1 = d*(k-1)//s + 1
    taps, zero where a phase has fewer). The phases' sub-kernels stack as output
    channels of one `npu_graph.conv2d`; reshape-transpose-reshape interleaves them
    and a slice crops. The weight rearrangement is graph ops on the weight
    (reshape, pad, gather, transpose), which `npu-constant-fold` folds."""

    name = "npu_graph.conv_transpose"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = attr_def(DenseArrayBase)
    pads = attr_def(DenseArrayBase)  # top, left, bottom, right
    dilations = attr_def(DenseArrayBase)
    output_padding = attr_def(DenseArrayBase)
    group = attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, w: SSAValue, b: SSAValue | None, result_type: TensorType, *,
                 strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
                 dilations: Sequence[int] = (1, 1), output_padding: Sequence[int] = (0, 0), group: int = 1):
        super().__init__(operands=[x, w, b], result_types=[result_type], attributes={
            "strides": int_array(strides), "pads": int_array(pads), "dilations": int_array(dilations),
            "output_padding": int_array(output_padding), "group": IntegerAttr(group, i64)})

    @property
    def params(self) -> dict:
        return dict(strides=ints(self.strides, ()), pads=ints(self.pads, ()), dilations=ints(self.dilations, ()),
                    output_padding=ints(self.output_padding, ()), group=self.group.value.data)

    def infer_shape(self) -> tuple[int, ...] | None:
        return conv_transpose_out_shape(shape_of(self.input), shape_of(self.weight), **self.params)

    def verify_(self) -> None:
        check_f32(self)
        x, w, p = shape_of(self.input), shape_of(self.weight), self.params
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(f"'{self.name}': input and weight must be 4-D, got {list(x)} and {list(w)}")
        check_window_params(self.name, x, p, crop=True)
        op, s, d = p["output_padding"], p["strides"], p["dilations"]
        if len(op) != 2 or any(not 0 <= o < max(si, di) for o, si, di in zip(op, s, d)):
            raise VerifyException(f"'{self.name}': output_padding {list(op)} must have 2 values, each "
                                  f"below its stride or dilation")
        if p["group"] <= 0 or x[1] % p["group"] or w[0] != x[1]:
            raise VerifyException(f"'{self.name}': weight {list(w)} must have the input's {x[1]} channels "
                                  f"first, a multiple of group {p['group']}")
        if self.bias is not None and shape_of(self.bias) != (w[1] * p["group"],):
            raise VerifyException(f"'{self.name}': bias must have shape [{w[1] * p['group']}]")
        self._expect_result_shape(self.infer_shape(), "transposed convolution")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """The direct form on the cube: per group an [n*h*w, ci] @ [ci, co*kh*kw] product
        (the decomposed convolution does the same work plus any phase padding)."""
        x, w, g = shape_of(self.input), shape_of(self.weight), self.params["group"]
        return arch.cube_cycles(x[0] * x[2] * x[3], w[0] // g, w[1] * w[2] * w[3], batch=g,
                                dtype=value_type(self.input))

    def macs(self) -> int:
        x, w = shape_of(self.input), shape_of(self.weight)
        return x[0] * x[2] * x[3] * w[0] * w[1] * w[2] * w[3]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (in_f32(lambda *a: conv_transpose_ref(*a, **self.params), inputs),)

    def decompose(self) -> tuple[list[Operation], list[SSAValue]] | None:
        return conv_transpose_as_conv(self)


def conv_transpose_out_shape(x: Sequence[int], w: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                             dilations: Sequence[int], output_padding: Sequence[int],
                             group: int = 1) -> tuple[int, ...] | None:
    """ONNX: out = s * (in - 1) + output_padding + (k - 1) * d + 1 - pad_begin - pad_end."""
    if len(x) != 4 or len(w) != 4 or len(strides) != 2 or len(pads) != 4 or len(output_padding) != 2:
        return None
    out = tuple(s * (i - 1) + o + (k - 1) * d + 1 - pb - pe for i, k, s, d, o, pb, pe in
                zip(x[2:], w[2:], strides, dilations, output_padding, pads[:2], pads[2:]))
    return (x[0], w[1] * group) + out if all(o > 0 for o in out) else None


@dataclass(frozen=True)
class _Phases:
    """One spatial dim of a transposed convolution as a stride-1 convolution per phase:
    `taps[r][j]` is the kernel tap phase r uses at sub-kernel position j (or k, the
    zero tap); the convolution pads (`begin`, `end`); `A` positions per phase; the
    interleaved result is cropped from `start`."""

    taps: tuple[tuple[int, ...], ...]
    begin: int
    end: int
    A: int
    start: int

    @staticmethod
    def of(n_in: int, k: int, s: int, d: int, pad_begin: int, n_out: int) -> _Phases:
        q = d * (k - 1) // s
        taps = tuple(tuple((s * (q - j) + r) // d if (s * (q - j) + r) % d == 0 and (s * (q - j) + r) // d < k
                           else k for j in range(q + 1)) for r in range(s))
        shift = min(pad_begin // s, q)  # phase positions before the crop that need no computing
        begin, start = q - shift, pad_begin - s * shift
        end = max(0, -(-(start + n_out) // s) - n_in + shift)
        return _Phases(taps, begin, end, n_in + begin + end - q, start)


def conv_transpose_as_conv(op: ConvTransposeOp) -> tuple[list[Operation], list[SSAValue]]:
    """`ConvTransposeOp.decompose`: the phase convolution and the pixel shuffle (see the op)."""
    x, w, p = shape_of(op.input), shape_of(op.weight), op.params
    n, out = x[0], shape_of(op.result)
    g, co = p["group"], out[1]
    cig, cog, (kh, kw), (sh, sw) = x[1] // g, w[1], w[2:], p["strides"]
    ph, pw = (_Phases.of(x[2 + i], w[2 + i], p["strides"][i], p["dilations"][i], p["pads"][i], out[2 + i])
              for i in range(2))
    qh, qw = len(ph.taps[0]), len(pw.taps[0])
    ops: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    def const(values: np.ndarray) -> SSAValue:
        t = TensorType(Float32Type(), values.shape)
        return add(ConstantOp(t, value=DenseIntOrFPElementsAttr.from_list(t, values.astype(np.float32).ravel().tolist())))

    # weight [ci, cog, kh, kw] -> [g * cog * sh * sw, cig, qh, qw]: the phases' sub-kernels, zero tap last
    flat = add(ReshapeOp(op.weight, f32_tensor((x[1], cog, kh * kw))))
    flat = add(PadOp(flat, (0, 0, 0, 0, 0, 1), 0.0, f32_tensor((x[1], cog, kh * kw + 1))))
    idx = np.array([[[[th * kw + tw if th < kh and tw < kw else kh * kw for tw in rw_taps] for th in rh_taps]
                     for rw_taps in pw.taps] for rh_taps in ph.taps])  # [sh, sw, qh, qw]
    sub = add(GatherOp(flat, const(idx), 2, f32_tensor((x[1], cog, sh, sw, qh, qw))))
    sub = add(ReshapeOp(sub, f32_tensor((g, cig, cog, sh, sw, qh, qw))))
    sub = add(TransposeOp(sub, (0, 2, 3, 4, 1, 5, 6), f32_tensor((g, cog, sh, sw, cig, qh, qw))))
    sub = add(ReshapeOp(sub, f32_tensor((g * cog * sh * sw, cig, qh, qw))))
    bias = None
    if op.bias is not None:  # every phase of a channel adds its bias
        col = add(ReshapeOp(op.bias, f32_tensor((co, 1))))
        bias = add(AddOp(col, const(np.zeros((1, sh * sw))), f32_tensor((co, sh * sw))))
        bias = add(ReshapeOp(bias, f32_tensor((co * sh * sw,))))
    y = add(Conv2dOp(op.input, sub, bias, f32_tensor((n, co * sh * sw, ph.A, pw.A)),
                     pads=(ph.begin, pw.begin, ph.end, pw.end), group=g))
    y = add(ReshapeOp(y, f32_tensor((n, co, sh, sw, ph.A, pw.A))))
    y = add(TransposeOp(y, (0, 1, 4, 2, 5, 3), f32_tensor((n, co, ph.A, sh, pw.A, sw))))
    y = add(ReshapeOp(y, f32_tensor((n, co, ph.A * sh, pw.A * sw))))
    if (ph.start, pw.start, ph.A * sh, pw.A * sw) != (0, 0, out[2], out[3]):
        y = add(SliceOp(y, (0, 0, ph.start, pw.start), (n, co, ph.start + out[2], pw.start + out[3]), (1, 1, 1, 1),
                        f32_tensor(out)))
    return ops, [y]


@irdl_op_definition
class GemmOp(GraphOp):
    """ONNX Gemm: alpha * op(A) @ op(B) + beta * C (C broadcast to [M, N])."""

    name = "npu_graph.gemm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    alpha = opt_attr_def(FloatAttr)
    beta = opt_attr_def(FloatAttr)
    trans_a = opt_attr_def(BoolAttr)
    trans_b = opt_attr_def(BoolAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue | None, result_type: TensorType, *,
                 alpha: float = 1.0, beta: float = 1.0, trans_a: bool = False, trans_b: bool = False):
        attrs: dict[str, Attribute] = {}
        if alpha != 1.0:
            attrs["alpha"] = FloatAttr(alpha, Float32Type())
        if beta != 1.0:
            attrs["beta"] = FloatAttr(beta, Float32Type())
        if trans_a:
            attrs["trans_a"] = BoolAttr.from_bool(True)
        if trans_b:
            attrs["trans_b"] = BoolAttr.from_bool(True)
        super().__init__(operands=[a, b, c], result_types=[result_type], attributes=attrs)

    @property
    def params(self) -> dict:
        return dict(alpha=self.alpha.value.data if self.alpha else 1.0,
                    beta=self.beta.value.data if self.beta else 1.0,
                    trans_a=bool(self.trans_a and self.trans_a.value.data),
                    trans_b=bool(self.trans_b and self.trans_b.value.data))

    def mkn(self) -> tuple[int, int, int]:
        a, b, p = shape_of(self.a), shape_of(self.b), self.params
        m, k = (a[1], a[0]) if p["trans_a"] else a
        k2, n = (b[1], b[0]) if p["trans_b"] else b
        if k != k2:
            raise VerifyException(f"'npu_graph.gemm': inner dimensions differ ({k} vs {k2})")
        return m, k, n

    def check_element_types(self) -> None:
        check_float_product(self, self.a, self.b, self.c)

    def verify_(self) -> None:
        if len(shape_of(self.a)) != 2 or len(shape_of(self.b)) != 2:
            raise VerifyException(f"'npu_graph.gemm': A and B must be 2-D, got {list(shape_of(self.a))} "
                                  f"and {list(shape_of(self.b))}")
        m, _, n = self.mkn()
        if self.c is not None and broadcast_shapes(shape_of(self.c), (m, n)) != (m, n):
            raise VerifyException(f"'npu_graph.gemm': C of shape {list(shape_of(self.c))} does not "
                                  f"broadcast to [{m}, {n}]")
        self._expect_result_shape((m, n), "gemm")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """The cube ([m, k] @ [k, n]); the bias C is one vector pass over the result."""
        p = self.params
        batch, m, k, n = matmul_dims(shape_of(self.a), shape_of(self.b), p["trans_a"], p["trans_b"])
        bias = 0 if self.c is None else arch.vector_cycles(self.out_elements(),
                                                            dtype=widest_type((self.c, self.result)))
        return arch.cube_cycles(m, k, n, batch, dtype=value_type(self.a)) + bias

    def macs(self) -> int:
        m, k, n = self.mkn()
        return m * k * n

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (in_f32(lambda *a: gemm_ref(*a, **self.params), inputs),)


@irdl_op_definition
class MatMulOp(GraphOp):
    """ONNX MatMul (numpy matmul semantics, batch dimensions broadcast)."""

    name = "npu_graph.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    input_zero_point = opt_attr_def(IntegerAttr)
    weight_zero_point = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType, *, input_zero_point: int | None = None,
                 weight_zero_point: int | None = None):
        super().__init__(operands=[a, b], result_types=[result_type],
                         attributes=zero_point_attrs(input_zero_point, weight_zero_point))

    @property
    def zero_points(self) -> tuple[int, int]:
        """(a, b) zero points of an integer matmul (0 when not given)."""
        return zero_points_of(self)

    def check_element_types(self) -> None:
        """Float: one float type. Integer: i8/ui8 a and b, i32 result."""
        check_cube_types(self, self.a, self.b, None)

    def verify_(self) -> None:
        a, b = shape_of(self.a), shape_of(self.b)
        shape = matmul_shape(a, b)
        if shape is None:
            raise VerifyException(f"'npu_graph.matmul': shapes {list(a)} and {list(b)} do not multiply")
        self._expect_result_shape(shape, "matmul")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """The cube: one [m, k] @ [k, n] product per batch element."""
        batch, m, k, n = matmul_dims(shape_of(self.operands[0]), shape_of(self.operands[1]))
        return arch.cube_cycles(m, k, n, batch, dtype=value_type(self.operands[0]))

    def macs(self) -> int:
        return math.prod(shape_of(self.result)) * shape_of(self.a)[-1]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        if type_name(_type_of(self.a)) in QUANTIZED:
            return (matmul_int_ref(inputs[0], inputs[1], *self.zero_points),)
        return (in_f32(np.matmul, inputs),)


class StructuredOp(GraphOp):
    """A graph op the compiler tiles generically: it describes its tiles with
    `tile_map()` and computes any tile with the classmethod `compute(attrs, *arrays)`
    (also its whole-tensor semantics). `tile_attrs()` gives the attributes a tile's
    compute uses (default: the op's own). `VECTOR_COST` is vector-unit work per
    output element (in units of one lane-cycle), for the cost model and simulator.

    To add one: subclass, define operands/results, `verify_`, `tile_map`,
    `compute`, and list it in GRAPH_OPS; tiling, bufferization and simulation
    follow with no further code."""

    VECTOR_COST: ClassVar[int] = 1
    SPECIAL: ClassVar[tuple[str, ...]] = ()
    """The special functions (`special.FUNCTIONS`) it evaluates per output element: the
    arch's method of each adds its passes (`Arch.special_passes`)."""
    USES: ClassVar[tuple[str, ...] | None] = None
    """Every special function it evaluates, per element or per row (None: `SPECIAL`)."""

    def tile_map(self) -> TileMap:
        raise NotImplementedError

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        """The attributes that compute one tile from input windows of shapes `tile_inputs`."""
        return dict(self.attributes)

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """`VECTOR_COST` vector passes over the result (in the widest type it touches),
        and those of its `SPECIAL` functions."""
        t = self.vector_type()
        return arch.vector_cycles(self.out_elements(out_shape), self.VECTOR_COST + arch.special_passes(self.SPECIAL, t), t)

    def vector_type(self) -> str:
        """The type name the op's work is priced by (`tile_type` of its operands and results)."""
        return self.tile_type((*self.operands, *self.results))

    @classmethod
    def tile_type(cls, values: Sequence[SSAValue | Attribute]) -> str:
        """The type name a tile reading and writing `values` (inputs, then the output:
        tensors, buffers or their types) is priced in: the widest of them."""
        return widest_type(values)

    @classmethod
    def tile_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    dtype: DType = "f32") -> int:
        """Cycles of one tile with inputs of `in_shapes` (the cost model's and the
        simulator's `npu_compute.apply`): `VECTOR_COST` vector passes over its output,
        in `dtype` (the widest type the tile reads or writes), and those of its `SPECIAL` functions."""
        return arch.vector_cycles(math.prod(out_shape), cls.VECTOR_COST + arch.special_passes(cls.SPECIAL, dtype), dtype)

    @classmethod
    def tile_scratch_bytes(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int]) -> int:
        """SRAM a tile needs on `arch` besides its inputs and output (intermediates):
        none."""
        return 0

    @classmethod
    def tile_scratch_bytes_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                              out_shape: Sequence[int]) -> int:
        """`tile_scratch_bytes` of a tile of an op with `attrs` (shapes canonical)."""
        return cls.tile_scratch_bytes(arch, in_shapes, out_shape)

    @classmethod
    def canonical_shapes(cls, attrs: dict[str, Attribute], in_shapes: Sequence[Sequence[int]],
                         out_shape: Sequence[int]) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
        """The shapes `tile_cycles` and `tile_scratch_bytes` take, for tiles of an op with
        `attrs` (an op whose attributes choose its operands' layout reorders them)."""
        return [tuple(s) for s in in_shapes], tuple(out_shape)

    @classmethod
    def tile_cycles_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                       out_shape: Sequence[int], dtype: DType = "f32") -> int:
        """`tile_cycles` of a tile of an op with `attrs` (its shapes canonical first) in
        `dtype` (the widest type the tile reads or writes; the cube's input type for attention)."""
        return cls.tile_cycles(arch, *cls.canonical_shapes(attrs, in_shapes, out_shape), dtype=dtype)

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def combine(cls, attrs: dict[str, Attribute], acc: np.ndarray, part: np.ndarray) -> np.ndarray:
        """A reduction step's tile `part` merged into the accumulated `acc` (the tile
        loop's `npu_tile.reduce`): a sum unless the op says otherwise."""
        return acc + part

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        attrs = dict(self.attributes)
        return (in_f32(lambda *a: self.compute(attrs, *a).astype(a[0].dtype, copy=False), inputs),)


def attr_int(attrs: dict[str, Attribute], name: str, default: int) -> int:
    a = attrs.get(name)
    return a.value.data if isinstance(a, IntegerAttr) else default


def attr_float(attrs: dict[str, Attribute], name: str, default: float) -> float:
    a = attrs.get(name)
    return a.value.data if isinstance(a, FloatAttr) else default


def attr_ints(attrs: dict[str, Attribute], name: str, default: Sequence[int]) -> tuple[int, ...]:
    return ints(attrs.get(name), default)


@irdl_op_definition
class BatchNormOp(StructuredOp):
    """Inference batch normalisation over dim 1 (ONNX BatchNormalization):
    (x - mean) / sqrt(var + epsilon) * scale + bias, per channel."""

    name = "npu_graph.batchnorm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    epsilon = opt_attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 2

    def __init__(self, x: SSAValue, scale: SSAValue, bias: SSAValue, mean: SSAValue, var: SSAValue,
                 epsilon: float, result_type: TensorType):
        super().__init__(operands=[x, scale, bias, mean, var], result_types=[result_type],
                         attributes={"epsilon": FloatAttr(epsilon, Float32Type())})

    def verify_(self) -> None:
        x = shape_of(self.input)
        if len(x) < 2:
            raise VerifyException(f"'npu_graph.batchnorm': input must have a channel dim 1, got {list(x)}")
        for name in ("scale", "bias", "mean", "var"):
            if shape_of(getattr(self, name)) != (x[1],):
                raise VerifyException(f"'npu_graph.batchnorm': {name} must have shape [{x[1]}], "
                                      f"got {list(shape_of(getattr(self, name)))}")
        self._expect_result_shape(x, "batchnorm")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap((True,) * r, (same_dims(r),) + ((Follow(1),),) * 4)

    @staticmethod
    def folded(attrs: dict[str, Attribute], scale, bias, mean, var) -> tuple[np.ndarray, np.ndarray]:
        """(multiplier, offset) per channel: y = x * multiplier + offset."""
        mul = scale / np.sqrt(var + attr_float(attrs, "epsilon", 1e-5))
        return mul, bias - mean * mul

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, scale, bias, mean, var = arrays
        mul, off = cls.folded(attrs, scale, bias, mean, var)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return x * mul.reshape(shape) + off.reshape(shape)


@irdl_op_definition
class TransposeOp(StructuredOp):
    """Permute dims: result dim i is input dim perm[i] (ONNX Transpose)."""

    name = "npu_graph.transpose"
    input = operand_def(TensorType)
    perm = attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    def __init__(self, x: SSAValue, perm: Sequence[int], result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type], attributes={"perm": int_array(perm)})

    def verify_(self) -> None:
        x, perm = shape_of(self.input), ints(self.perm, ())
        if sorted(perm) != list(range(len(x))):
            raise VerifyException(f"'npu_graph.transpose': perm {list(perm)} is not a permutation of "
                                  f"0..{len(x) - 1}")
        self._expect_result_shape(tuple(x[p] for p in perm), "transposing")

    def tile_map(self) -> TileMap:
        perm = ints(self.perm, ())
        inv = {p: i for i, p in enumerate(perm)}
        return TileMap((True,) * len(perm), (tuple(Follow(inv[d]) for d in range(len(perm))),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        return np.transpose(arrays[0], attr_ints(attrs, "perm", ()))


@irdl_op_definition
class SoftmaxOp(StructuredOp):
    """softmax along `axis` (ONNX Softmax, opset >= 13 semantics)."""

    name = "npu_graph.softmax"
    input = operand_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 4  # max, exp, sum, divide
    SPECIAL: ClassVar[tuple[str, ...]] = ("exp",)
    USES: ClassVar[tuple[str, ...]] = ("exp", "reciprocal")

    def __init__(self, x: SSAValue, axis: int, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type], attributes={"axis": IntegerAttr(axis, i64)})

    def norm_axis(self) -> int:
        r = len(shape_of(self.input))
        a = attr_int(dict(self.attributes), "axis", -1)
        return a + r if a < 0 else a

    def verify_(self) -> None:
        r = len(shape_of(self.input))
        a = attr_int(dict(self.attributes), "axis", -1)
        if not -r <= a < r:
            raise VerifyException(f"'npu_graph.softmax': axis {a} is out of range for rank {r}")
        self._expect_result_shape(shape_of(self.input), "softmax")

    def tile_map(self) -> TileMap:
        r, a = len(shape_of(self.input)), self.norm_axis()
        return TileMap(tuple(d != a for d in range(r)), (same_dims(r, whole=(a,)),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        a = attr_int(attrs, "axis", -1)
        e = special.exp(x - x.max(axis=a, keepdims=True))
        return special.divide(e, e.sum(axis=a, keepdims=True))


def attr_bool(attrs: dict[str, Attribute], name: str, default: bool) -> bool:
    a = attrs.get(name)
    return bool(a.value.data) if isinstance(a, IntegerAttr) else default


def _axis_in(op: str, axis: int, rank: int, what: str = "axis") -> int:
    """`axis` normalised to [0, rank) (VerifyException naming `op` when out of range)."""
    if not -rank <= axis < rank:
        raise VerifyException(f"'{op}': {what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


INT64_MAX = 2 ** 63 - 1
"""`ends` value meaning "to the end of the dimension"."""


@irdl_op_definition
class LayerNormOp(StructuredOp):
    """Layer normalisation over dims axis..rank-1 (ONNX LayerNormalization):
    (x - mean) / sqrt(var + epsilon) * scale + bias, scale and bias broadcast to
    the normalised dims."""

    name = "npu_graph.layernorm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    axis = attr_def(IntegerAttr)
    epsilon = opt_attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 6  # mean, centre, square, mean, scale, shift
    USES: ClassVar[tuple[str, ...]] = ("rsqrt",)  # (a row's: not charged per element)

    def __init__(self, x: SSAValue, scale: SSAValue, bias: SSAValue | None, axis: int, epsilon: float,
                 result_type: TensorType):
        super().__init__(operands=[x, scale, bias], result_types=[result_type],
                         attributes={"axis": IntegerAttr(axis, i64),
                                     "epsilon": FloatAttr(epsilon, Float32Type())})

    def infer_shape(self) -> tuple[int, ...] | None:
        x = shape_of(self.input)
        a = attr_int(dict(self.attributes), "axis", -1)
        if not -len(x) <= a < len(x):
            return None
        norm = x[a % len(x):]
        ok = all(len(shape_of(v)) <= len(norm) and broadcast_shapes(shape_of(v), norm) == norm
                 for v in self.operands[1:])
        return x if ok else None

    def verify_(self) -> None:
        x = shape_of(self.input)
        axis = _axis_in(self.name, attr_int(dict(self.attributes), "axis", -1), len(x))
        norm = x[axis:]
        for name in ("scale", "bias"):
            v = getattr(self, name)
            if v is None:
                continue
            s = shape_of(v)
            if len(s) > len(norm) or broadcast_shapes(s, norm) != norm:
                raise VerifyException(f"'npu_graph.layernorm': {name} of shape {list(s)} does not broadcast "
                                      f"to the normalised dims {list(norm)}")
        self._expect_result_shape(self.infer_shape(), "layer normalisation")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        axis = attr_int(dict(self.attributes), "axis", -1) % r
        whole = tuple(range(axis, r))
        params = tuple(tuple(Follow(None) for _ in shape_of(v)) for v in self.operands[1:])
        return TileMap(tuple(d < axis for d in range(r)), (same_dims(r, whole),) + params)

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, scale, *bias = arrays
        axes = tuple(range(attr_int(attrs, "axis", -1) % x.ndim, x.ndim))
        d = x - x.mean(axis=axes, keepdims=True)
        var = (d * d).mean(axis=axes, keepdims=True)
        y = special.over_sqrt(d, var + np.asarray(attr_float(attrs, "epsilon", 1e-5), x.dtype)) * scale
        return y + bias[0] if bias else y


def softmax_block(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A block's online-softmax pieces along the last axis: (row max, exp(x - max),
    row sum). A row whose entries are all -inf (masked) has max -inf and sum 0."""
    m = x.max(axis=-1, keepdims=True)
    e = special.exp(x - np.where(np.isneginf(m), 0, m))
    return m, e, e.sum(axis=-1, keepdims=True)


def merge_softmax(ma: np.ndarray, sa: np.ndarray, mb: np.ndarray, sb: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two disjoint blocks' (max, sum) merged: (new max, each side's sum rescaled to it);
    a side with max -inf weighs nothing."""
    m = np.maximum(ma, mb)
    base = np.where(np.isneginf(m), 0, m)
    return m, sa * special.exp(ma - base), sb * special.exp(mb - base)


ROW_STATS = {"softmax": 2, "moments": 3}
"""`npu_graph.row_stats` kinds -> state columns: softmax (row max, sum of exp(x -
max)), moments (count, mean, sum of squared deviations)."""


@irdl_op_definition
class RowStatsOp(StructuredOp):
    """The statistics of each row (last dim) of x that a softmax or a layer
    normalisation needs, as a mergeable state [..., K] (`ROW_STATS`): over a block of
    columns it is the block's state, and `combine` merges the states of disjoint
    blocks (online softmax; Chan's pairwise moments), so rows too long for SRAM are
    reduced block by block (`npu-split-rows`; the tile loop's column loop `c`)."""

    name = "npu_graph.row_stats"
    input = operand_def(TensorType)
    kind = attr_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, kind: str):
        shape = shape_of(x)
        super().__init__(operands=[x], result_types=[TensorType(Float32Type(), [*shape[:-1], ROW_STATS[kind]])],
                         attributes={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        k = self.kind.data
        if k not in ROW_STATS:
            raise VerifyException(f"'npu_graph.row_stats': kind must be one of {', '.join(ROW_STATS)}, got '{k}'")
        x = shape_of(self.input)
        if not x:
            raise VerifyException("'npu_graph.row_stats': the input needs a row dim")
        self._expect_result_shape((*x[:-1], ROW_STATS[k]), "row statistics")

    def check_element_types(self) -> None:
        """Any float input; the statistics are f32 (a 16-bit row is summed in f32)."""
        expect_type(self, self.input, "input", FLOATS)
        expect_type(self, self.result, "result", ("f32",))

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap(tuple(d < r - 1 for d in range(r)), (same_dims(r, whole=(r - 1,)),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        if attrs["kind"] == StringAttr("softmax"):
            m, _, total = softmax_block(x)
            return np.concatenate([m, total], axis=-1)
        mean = x.mean(axis=-1, keepdims=True)
        n = np.full_like(mean, x.shape[-1])
        return np.concatenate([n, mean, ((x - mean) ** 2).sum(axis=-1, keepdims=True)], axis=-1)

    @classmethod
    def combine(cls, attrs: dict[str, Attribute], acc: np.ndarray, part: np.ndarray) -> np.ndarray:
        if attrs["kind"] == StringAttr("softmax"):
            m, wa, wb = merge_softmax(acc[..., :1], acc[..., 1:], part[..., :1], part[..., 1:])
            return np.concatenate([m, wa + wb], axis=-1)
        (na, ma, qa), (nb, mb, qb) = ((x[..., :1], x[..., 1:2], x[..., 2:]) for x in (acc, part))
        n = na + nb
        d = mb - ma
        return np.concatenate([n, ma + d * nb / n, qa + qb + d * d * na * nb / n], axis=-1).astype(acc.dtype)

    @classmethod
    def tile_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    dtype: DType = "f32") -> int:
        """Three vector passes over the block (max or mean, exp or deviation, sum) and
        the merge over the state (statistics are f32: both passes are f32 ones)."""
        return arch.vector_cycles(math.prod(in_shapes[0]), 3) + arch.vector_cycles(math.prod(out_shape), 4)

    @classmethod
    def tile_cycles_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                       out_shape: Sequence[int], dtype: DType = "f32") -> int:
        """`tile_cycles`, and a softmax block's exp by the arch's method (`SPECIAL`)."""
        extra = arch.special_passes(("exp",)) if attrs.get("kind") == StringAttr("softmax") else 0
        return super().tile_cycles_of(attrs, arch, in_shapes, out_shape, dtype) + \
            (arch.vector_cycles(math.prod(in_shapes[0]), extra) if extra else 0)


@irdl_op_definition
class SoftmaxApplyOp(StructuredOp):
    """softmax over the last dim of x from its row statistics (`row_stats` kind
    softmax): exp(x - max) / sum; every dim of x may be tiled."""

    name = "npu_graph.softmax_apply"
    input = operand_def(TensorType)
    stats = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 3  # subtract, exp, divide
    SPECIAL: ClassVar[tuple[str, ...]] = ("exp",)
    USES: ClassVar[tuple[str, ...]] = ("exp", "reciprocal")

    def __init__(self, x: SSAValue, stats: SSAValue):
        super().__init__(operands=[x, stats], result_types=[x.type])

    def verify_(self) -> None:
        x, st = shape_of(self.input), shape_of(self.stats)
        if tuple(st) != (*x[:-1], 2):
            raise VerifyException(f"'npu_graph.softmax_apply': stats must be {[*x[:-1], 2]}, got {list(st)}")
        self._expect_result_shape(x, "softmax")

    def check_element_types(self) -> None:
        """One float type, but the row statistics: f32 (`row_stats`)."""
        check_with_f32_stats(self, self.stats)

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap((True,) * r, (same_dims(r), same_dims(r, whole=(r - 1,))))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, st = arrays
        return special.divide(special.exp(x - st[..., :1]), st[..., 1:])


@irdl_op_definition
class LayerNormApplyOp(StructuredOp):
    """Layer normalisation over the last dim of x from its row statistics
    (`row_stats` kind moments): (x - mean) / sqrt(M2 / n + epsilon) * scale + bias;
    every dim of x may be tiled, scale and bias follow its last dim."""

    name = "npu_graph.layernorm_apply"
    input = operand_def(TensorType)
    stats = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    epsilon = opt_attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 4  # centre, normalise, scale, shift (`passes`: fewer without the last two)
    USES: ClassVar[tuple[str, ...]] = ("rsqrt",)  # (a row's: not charged per element)

    def __init__(self, x: SSAValue, stats: SSAValue, scale: SSAValue, bias: SSAValue | None, epsilon: float):
        super().__init__(operands=[x, stats, scale, bias], result_types=[x.type],
                         attributes={"epsilon": FloatAttr(epsilon, Float32Type())})

    def verify_(self) -> None:
        x, st = shape_of(self.input), shape_of(self.stats)
        if tuple(st) != (*x[:-1], 3):
            raise VerifyException(f"'npu_graph.layernorm_apply': stats must be {[*x[:-1], 3]}, got {list(st)}")
        for v in self.operands[2:]:
            if shape_of(v) not in ((x[-1],), (1,), ()):
                raise VerifyException(f"'npu_graph.layernorm_apply': scale and bias must be [{x[-1]}] or scalars, "
                                      f"got {list(shape_of(v))}")
        self._expect_result_shape(x, "layer normalisation")

    def check_element_types(self) -> None:
        """One float type, but the row statistics: f32 (`row_stats`)."""
        check_with_f32_stats(self, self.stats)

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        params = tuple((Follow(r - 1) if shape_of(v) and shape_of(v)[0] > 1 else Follow(None),)
                       if shape_of(v) else () for v in self.operands[2:])
        return TileMap((True,) * r, (same_dims(r), same_dims(r, whole=(r - 1,))) + params)

    @staticmethod
    def passes(in_shapes: Sequence[Sequence[int]]) -> int:
        """Vector passes over a tile: centre and normalise (the rows' factor times a
        scalar scale), then a per-column scale and a bias when there are."""
        return 2 + (math.prod(in_shapes[2]) > 1) + (len(in_shapes) > 3)

    @classmethod
    def tile_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    dtype: DType = "f32") -> int:
        return arch.vector_cycles(math.prod(out_shape), cls.passes(in_shapes), dtype)

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """`passes` over the result (as a tile's, `tile_cycles`)."""
        return arch.vector_cycles(self.out_elements(out_shape), self.passes([shape_of(v) for v in self.operands]),
                                  self.vector_type())

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, st, scale, *bias = arrays
        eps = np.asarray(attr_float(attrs, "epsilon", 1e-5), x.dtype)
        y = special.over_sqrt(x - st[..., 1:2], st[..., 2:] / st[..., :1] + eps) * scale
        return y + bias[0] if bias else y


@irdl_op_definition
class AttentionOp(StructuredOp):
    """Scaled dot-product attention with the scores kept on chip:
    softmax(q @ kt * scale + mask, last axis) @ v, per leading index (batch, head):
    q [..., S, D], kt [..., D, T] (keys transposed, as exporters leave them),
    v [..., T, Dv], an optional additive mask broadcasting to [..., S, T]; result
    [..., S, Dv]. Tiles cut the leading dims and the query rows S, and the keys T
    into blocks (`key_blocks`) when a tile's score rows do not fit SRAM whole: the
    tile op then carries `online` and gives its block's online-softmax state,
    [..., S, Dv + 2] = (exp(block scores - row max) @ v block, row max, row sum of
    exp), which `combine` merges across key blocks (flash attention, the output
    kept unnormalised as in FlashAttention-2); the last block's merge, `finish`,
    divides the output by the row sums, and the result is the state's first Dv
    columns. `key_rows`: the keys come untransposed, k [..., T, D]
    in the `kt` operand (the cube reads it transposed; no transposed copy in DRAM).
    `bshd`: the tensors (0 q, 1 k, 2 v, 3 result; rank 4) laid out [batch, rows,
    heads, dim] as the projections leave them, not [batch, heads, rows, dim]: tiles
    read and write their heads in place, with no transposed copy (k needs
    `key_rows`). `head_window = [oq, ok, ov, H]`: q, k and v hold more heads than the
    result's H (the columns of a fused projection, e.g. GPT-2's c_attn split three
    ways); the attention reads heads o .. o + H of each (tiles carry their heads
    only: a tile op has no window). `causal = k`: the mask is a causal one given by
    two small operands instead of [S, T] values, the last visible key position of
    each query row `qlim` [..., S, 1] and the position of each key `kpos` [..., 1, T]:
    the mask is 0 where kpos <= qlim, else k (tiles load their rows' and keys'
    positions, not a block of a dense mask).

    `quant` (with `score_table`): the attention of a QDQ model computed as its graph
    writes it, in integers where the graph has them (`QUANT_FIELDS`, `quantized`):
    i8/ui8 q, kt, v and result; the scores (q - zq) @ (kt - zk) in i32, requantized
    (m1, z1, range lo1..hi1; `fixed`: the arch's fixed-point mode), looked up in
    `score_table` (256 entries indexed by the code's 8 bits, optional), dequantized
    (s1, z1t), times `scale` or divided by `div` (unless 0), plus the mask in f32,
    fake-quantized (s2, z2, lo2..hi2; none when s2 is
    0), the softmax in f32 quantized (s3, z3, lo3..hi3), its product with v - zv in
    i32 requantized (m2, z4, lo4..hi4). The probabilities are rounded before the
    second product, so the keys are never cut into blocks (no `online`)."""

    name = "npu_graph.attention"
    USES: ClassVar[tuple[str, ...] | None] = ("exp", "reciprocal")  # (exp charged in `tile_cycles`)
    q = operand_def(TensorType)
    kt = operand_def(TensorType)
    v = operand_def(TensorType)
    masks = var_operand_def(TensorType)  # none, an additive mask, or (qlim, kpos) with `causal`
    scale = attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    causal = opt_attr_def(FloatAttr)
    online = opt_attr_def(UnitAttr)
    finish = opt_attr_def(UnitAttr)  # (an online tile merged as its output tile's last key block)
    key_rows = opt_attr_def(UnitAttr)
    bshd = opt_attr_def(DenseArrayBase)
    head_window = opt_attr_def(DenseArrayBase)
    quant = opt_attr_def(DenseArrayBase)
    score_table = opt_attr_def(DenseArrayBase)
    QUANT_FIELDS: ClassVar[tuple[str, ...]] = (
        "zq", "zk", "zv", "m1", "z1", "lo1", "hi1", "s1", "z1t", "s2", "z2", "lo2", "hi2",
        "s3", "z3", "lo3", "hi3", "m2", "z4", "lo4", "hi4", "fixed", "div")
    STATE_COLUMNS: ClassVar[int] = 2  # (row max, row sum) after the output columns of an online state
    ONLINE_ROW_PASSES: ClassVar[int] = 5  # a merge's per-row work: max, 2 exps, the new sum's multiply and fma
    RESULT: ClassVar[int] = 3  # the result's index in `bshd`

    def __init__(self, q: SSAValue, kt: SSAValue, v: SSAValue, mask: SSAValue | Sequence[SSAValue] | None,
                 scale: float, result_type: TensorType, online: bool = False, key_rows: bool = False,
                 bshd: Sequence[int] = (), head_window: Sequence[int] = (), causal: float | None = None,
                 quant: dict[str, float] | None = None, score_table: Sequence[int] = ()):
        attrs: dict[str, Attribute] = {"scale": FloatAttr(scale, Float32Type())}
        if quant is not None:
            attrs["quant"] = DenseArrayBase.from_list(Float32Type(), [float(quant.get(k, 0.0)) for k in self.QUANT_FIELDS])
        if score_table:
            attrs["score_table"] = int_array(score_table)
        if causal is not None:
            attrs["causal"] = FloatAttr(causal, Float32Type())
        for name, on in (("online", online), ("key_rows", key_rows)):
            if on:
                attrs[name] = UnitAttr()
        if bshd:
            attrs["bshd"] = int_array(sorted(bshd))
        if head_window:
            attrs["head_window"] = int_array(head_window)
        masks = [] if mask is None else [mask] if isinstance(mask, SSAValue) else list(mask)
        super().__init__(operands=[q, kt, v, masks], result_types=[result_type], attributes=attrs)

    @classmethod
    def quantized(cls, attrs: dict[str, Attribute]) -> dict[str, float] | None:
        """The `quant` parameters by name (`QUANT_FIELDS`), None for a float attention."""
        a = attrs.get("quant")
        if not isinstance(a, DenseArrayBase):
            return None
        return dict(zip(cls.QUANT_FIELDS, (float(x) for x in a.get_values())))

    def key_axes(self) -> tuple[int, int]:
        """Where the keys run in kt (or k, `key_rows`) and in v, as negative axes: kt's last
        dim, k's rows, v's rows; a [B, S, H, D] tensor's rows are dim -3."""
        sw = self.swapped(dict(self.attributes))
        return (-3 if 1 in sw else -2) if self.key_rows else -1, -3 if 2 in sw else -2

    @classmethod
    def head_axis(cls, attrs: dict[str, Attribute], i: int) -> int:
        """Where operand i (0 q, 1 k, 2 v) keeps its heads: -2 in [B, S, H, D], else -3."""
        return -2 if i in cls.swapped(attrs) else -3

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        """A tile's inputs hold its heads only: no `head_window`."""
        return {k: v for k, v in self.attributes.items() if k != "head_window"}

    @staticmethod
    def swapped(attrs: dict[str, Attribute]) -> tuple[int, ...]:
        """The tensors (0 q, 1 k, 2 v, 3 result) an op with `attrs` keeps [B, S, H, D]."""
        return attr_ints(attrs, "bshd", ())

    @staticmethod
    def heads_first(shape: Sequence[_T]) -> tuple[_T, ...]:
        """[B, S, H, D] seen as [B, H, S, D] (or back: the swap is its own inverse)."""
        s = tuple(shape)
        return (*s[:-3], s[-2], s[-3], s[-1]) if len(s) >= 3 else s

    @classmethod
    def canonical_shapes(cls, attrs: dict[str, Attribute], in_shapes: Sequence[Sequence[int]],
                         out_shape: Sequence[int]) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
        """The shapes heads first ([B, H, S, D]), as `tile_cycles` reads them."""
        sw = cls.swapped(attrs)
        ins = [cls.heads_first(s) if i in sw and i < 3 else tuple(s) for i, s in enumerate(in_shapes)]
        hw = attr_ints(attrs, "head_window", ())
        if hw:  # (the heads read, not the operand's)
            ins = [(*x[:-3], hw[3], *x[-2:]) if i < 3 and len(x) >= 3 else x for i, x in enumerate(ins)]
        return ins, cls.heads_first(out_shape) if cls.RESULT in sw else tuple(out_shape)

    def canonical(self) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
        """The operand and result shapes heads first."""
        return self.canonical_shapes(dict(self.attributes), [shape_of(v) for v in self.operands],
                                     shape_of(self.result))

    @staticmethod
    def key_blocks(t: int, align: int) -> list[int]:
        """The key-block sizes a tile may take, ascending: T whole, and the divisors of T
        that are multiples of `align` (blocks never pad: a padded key would take part in
        the softmax)."""
        return [b for b in range(align, t, align) if t % b == 0] + [t]

    def dims(self) -> tuple[tuple[int, ...], int, int, int, int]:
        """(leading dims, S, D, T, Dv), heads first."""
        (q, _, v, *_), _ = self.canonical()
        return q[:-2], q[-2], q[-1], v[-2], v[-1]

    def verify_(self) -> None:
        sw = self.swapped(dict(self.attributes))
        if any(i not in range(4) for i in sw) or len(set(sw)) != len(sw):
            raise VerifyException(f"'npu_graph.attention': bshd {list(sw)} must name distinct tensors "
                                  f"among 0 (q), 1 (k), 2 (v) and 3 (result)")
        if sw and any(len(shape_of(x)) != 4 for x in (self.q, self.kt, self.v)):
            raise VerifyException("'npu_graph.attention': bshd layouts need rank-4 q, k and v")
        if 1 in sw and not self.key_rows:
            raise VerifyException("'npu_graph.attention': bshd k (1) needs key_rows: k [B, T, H, D]")
        hw = attr_ints(dict(self.attributes), "head_window", ())
        if hw:
            if len(hw) != 4 or min(hw) < 0 or hw[3] < 1 or any(len(shape_of(x)) < 3 for x in (self.q, self.kt, self.v)):
                raise VerifyException(f"'npu_graph.attention': head_window {list(hw)} must be [oq, ok, ov, H] "
                                      f"with H >= 1 on q, k and v of rank >= 3")
            for i, (x, o) in enumerate(zip((self.q, self.kt, self.v), hw)):
                have = shape_of(x)[self.head_axis(dict(self.attributes), i)]
                if o + hw[3] > have:
                    raise VerifyException(f"'npu_graph.attention': head_window reads heads {o}..{o + hw[3] - 1} "
                                          f"of {'q k v'.split()[i]}, which has {have}")
        (q, kt, v, *_), _ = self.canonical()
        lead, s, d, t, dv = self.dims()
        k_shape = (t, d) if self.key_rows else (d, t)
        if len(q) < 2 or len(kt) != len(q) or len(v) != len(q) or kt[:-2] != lead or v[:-2] != lead \
                or tuple(kt[-2:]) != k_shape:
            k = "k [..., T, D]" if self.key_rows else "[..., D, T]"
            raise VerifyException(f"'npu_graph.attention': q {list(q)}, kt {list(kt)} and v {list(v)} must be "
                                  f"[..., S, D], {k} and [..., T, Dv] with the same leading dims")
        self.verify_masks(len(q), lead, s, t)
        self.verify_quant()
        if self.finish and not self.online:
            raise VerifyException("'npu_graph.attention': finish merges an online state: it needs online")
        out = (*lead, s, dv + (self.STATE_COLUMNS if self.online else 0))
        self._expect_result_shape(self.heads_first(out) if self.RESULT in sw else out, "attention")

    def check_element_types(self) -> None:
        """Floats of one type, or with `quant` i8/ui8 q, kt, v and result (f32 masks)."""
        if self.quant is None:
            check_f32(self)
            return
        for what, v in (("q", self.q), ("kt", self.kt), ("v", self.v), ("result", self.result)):
            expect_type(self, v, what, QUANTIZED)
        for i, m in enumerate(self.masks):
            expect_type(self, m, f"mask #{i}", ("f32",))

    def verify_quant(self) -> None:
        """`quant` has every field, integral zero points and ranges, positive scales;
        `score_table` 256 entries and only with `quant`; no `online` state."""
        p = self.quantized(dict(self.attributes))
        if p is None:
            if self.score_table is not None:
                raise VerifyException("'npu_graph.attention': score_table needs quant")
            return
        if len(self.quant.get_values()) != len(self.QUANT_FIELDS):  # type: ignore[union-attr]
            raise VerifyException(f"'npu_graph.attention': quant has {len(self.quant.get_values())} values, "  # type: ignore[union-attr]
                                  f"expected {len(self.QUANT_FIELDS)} ({', '.join(self.QUANT_FIELDS)})")
        bad = [k for k in ("m1", "s1", "s3", "m2") if not p[k] > 0] + \
            [k for k in self.QUANT_FIELDS if k[0] in "zlh" and p[k] != round(p[k])]
        if bad:
            raise VerifyException(f"'npu_graph.attention': quant {', '.join(bad)} must be "
                                  "positive (scales, multipliers) or integral (zero points, ranges)")
        if self.online:
            raise VerifyException("'npu_graph.attention': a quantized attention takes its keys whole (no online state)")
        if self.score_table is not None and len(ints(self.score_table, ())) != 256:
            raise VerifyException(f"'npu_graph.attention': score_table has {len(ints(self.score_table, ()))} "
                                  "entries, expected 256")

    def verify_masks(self, rank: int, lead: tuple[int, ...], s: int, t: int) -> None:
        """No mask, one additive mask broadcasting to the scores, or (`causal`) qlim
        broadcasting to [..., S, 1] and kpos to [..., 1, T]."""
        causal = self.causal is not None
        if (len(self.masks) != 2) if causal else (len(self.masks) > 1):
            raise VerifyException(f"'npu_graph.attention': {len(self.masks)} mask operands: expected "
                                  + ("2 (qlim, kpos) with causal" if causal else "at most one"))
        targets = [(*lead, s, 1), (*lead, 1, t)] if causal else [(*lead, s, t)]
        for what, m, want in zip(("qlim", "kpos") if causal else ("mask",), self.masks, targets):
            m = shape_of(m)
            if len(m) > rank or broadcast_shapes(m, want) != want:
                raise VerifyException(f"'npu_graph.attention': {what} {list(m)} does not broadcast to the "
                                      f"{'scores' if not causal else 'positions'} {list(want)}")

    def tile_map(self) -> TileMap:
        """Heads first: q's rows follow the tile's (D whole), kt and v follow its head
        (whole), the mask broadcasts; then each [B, S, H, D] tensor's two middle dims
        swap (the result's: the output dims the inputs follow)."""
        lead, s, _, t, _ = self.dims()
        r = len(lead) + 2
        sw = self.swapped(dict(self.attributes))
        follows = [same_dims(r, whole=(r - 1,)),
                   tuple(Follow(d) for d in range(r - 2)) + (Follow(None), Follow(None)),
                   tuple(Follow(d) for d in range(r - 2)) + (Follow(None), Follow(None))]
        for mask in self.masks:  # (a mask's keys: whole here; the tiling model cuts them in blocks)
            m = shape_of(mask)
            follows.append(broadcast_follow(m[:-1], (*lead, s)) + (Follow(None),))
        to_out = (lambda d: self.heads_first(range(r))[d]) if self.RESULT in sw else (lambda d: d)
        follows = [tuple(Follow(None if f.out_dim is None else to_out(f.out_dim)) for f in fs) for fs in follows]
        follows = [self.heads_first(fs) if i in sw and i < 3 else fs for i, fs in enumerate(follows)]
        hw = attr_ints(dict(self.attributes), "head_window", ())
        for i, o in enumerate(hw[:3]):  # (a window's heads start at its offset)
            fs = list(follows[i])
            ax = len(fs) + self.head_axis(dict(self.attributes), i)
            fs[ax] = Follow(fs[ax].out_dim, offset=o)
            follows[i] = tuple(fs)
        tileable = tuple(d < r - 1 for d in range(r))
        return TileMap(self.heads_first(tileable) if self.RESULT in sw else tileable, tuple(follows))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        sw, hw = cls.swapped(attrs), attr_ints(attrs, "head_window", ())
        if hw:  # (a whole operand: its heads o .. o + H)
            arrays = tuple(np.take(a, range(hw[i], hw[i] + hw[3]), axis=cls.head_axis(attrs, i)) if i < 3 else a
                           for i, a in enumerate(arrays))
        q, kt, v, *mask = (np.swapaxes(a, -3, -2) if i in sw and i < 3 else a for i, a in enumerate(arrays))
        y = cls._compute(attrs, q, kt, v, *mask)
        return np.swapaxes(y, -3, -2) if cls.RESULT in sw else y

    @classmethod
    def _compute(cls, attrs: dict[str, Attribute], q: np.ndarray, kt: np.ndarray, v: np.ndarray,
                 *mask: np.ndarray) -> np.ndarray:
        if "key_rows" in attrs:
            kt = np.swapaxes(kt, -1, -2)
        quant = cls.quantized(attrs)
        if quant is not None:
            return cls._quantized(attrs, quant, q, kt, v, *mask)
        scores = cls.masked(attrs, np.matmul(q, kt) * np.asarray(attr_float(attrs, "scale", 1.0), q.dtype), mask)
        if "online" not in attrs:
            e = special.exp(scores - scores.max(axis=-1, keepdims=True))
            return np.matmul(special.divide(e, e.sum(axis=-1, keepdims=True)), v)
        m, e, s = softmax_block(scores)  # (a block whose keys are all masked: -inf, nothing to add)
        return np.concatenate([np.matmul(e, v), m, s], axis=-1)

    @staticmethod
    def masked(attrs: dict[str, Attribute], scores: np.ndarray, mask: Sequence[np.ndarray]) -> np.ndarray:
        """The scores plus the additive mask, or plus the causal fill where kpos > qlim."""
        if "causal" in attrs:  # (qlim, kpos)
            return scores + np.where(mask[1] <= mask[0], np.float32(0), np.float32(attr_float(attrs, "causal", 0.0)))
        return scores + mask[0] if mask else scores

    @classmethod
    def _quantized(cls, attrs: dict[str, Attribute], p: dict[str, float], q: np.ndarray, kt: np.ndarray,
                   v: np.ndarray, *mask: np.ndarray) -> np.ndarray:
        """The `quant` attention: the ops of the QDQ graph it replaces, each with the
        arithmetic of its own reference (`requantize_ref`, `TableOp`, `dequantize_ref`,
        `quantize_ref`, `SoftmaxOp`), so it equals that graph bit for bit; integer
        codes (int64) out."""
        def f(x: float) -> np.ndarray:
            return np.asarray(x, np.float32)

        mode = "fixed" if p["fixed"] else "float"
        acc = np.matmul(*integer_operands(q, kt, int(p["zq"]), int(p["zk"])))
        c = requantize_ref(acc, f(p["m1"]), f(p["z1"]), int(p["lo1"]), int(p["hi1"]), mode)
        table = ints(attrs.get("score_table"), ())
        if table:
            c = TableOp.compute({}, c, np.asarray(table))
        x = dequantize_ref(c, f(p["s1"]), f(p["z1t"]))
        if attr_float(attrs, "scale", 1.0) != 1.0:  # (as MulOp / DivOp compute them)
            x = x * f(attr_float(attrs, "scale", 1.0))
        if p["div"]:
            x = x / f(p["div"])
        x = cls.masked(attrs, x, mask)
        if p["s2"]:
            x = dequantize_ref(quantize_ref(x, f(p["s2"]), f(p["z2"]), int(p["lo2"]), int(p["hi2"])),
                               f(p["s2"]), f(p["z2"]))
        probs = SoftmaxOp.compute({}, x.astype(np.float32))
        c3 = quantize_ref(probs, f(p["s3"]), f(p["z3"]), int(p["lo3"]), int(p["hi3"]))
        acc = np.matmul(*integer_operands(c3, v, int(p["z3"]), int(p["zv"])))
        out = requantize_ref(acc, f(p["m2"]), f(p["z4"]), int(p["lo4"]), int(p["hi4"]), mode)
        return np.rint(out).astype(np.int64)

    @classmethod
    def combine(cls, attrs: dict[str, Attribute], acc: np.ndarray, part: np.ndarray) -> np.ndarray:
        """Merge two online-softmax states [..., Dv + 2] (of disjoint key blocks, their
        outputs unnormalised): the row max is the larger, each side's output and sum
        are rescaled by exp(its max - the new max) - per row one side's factor is 1,
        so the outputs merge in one multiply-add a row, as `tile_cycles` counts. With
        `finish` (the output tile's last block) the merged output is then divided by
        the row sums (a reciprocal a row, a multiply an element). A row whose keys are
        all masked (-inf max) contributes nothing; one with no key at all stays 0."""
        n = cls.STATE_COLUMNS
        (oa, ma, sa), (ob, mb, sb) = ((x[..., :-n], x[..., -n:-n + 1], x[..., -1:]) for x in (acc, part))
        m, wa, wb = merge_softmax(ma, np.ones_like(sa), mb, np.ones_like(sb))
        o, s = oa * wa + ob * wb, sa * wa + sb * wb
        if "finish" in attrs:
            o = o * special.reciprocal(np.where(s == 0, 1, s))
        return np.concatenate([o, m, s], axis=-1).astype(acc.dtype, copy=False)

    @classmethod
    def tile_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    scaled: bool = True, finish: bool = False, dtype: DType = "f32") -> int:
        """Both products on the cube; on the vector unit, for a tile with inputs of
        `in_shapes` (q, kt, v, masks): the scale on q (a pass over [S, D]; none when
        not `scaled`, a scale of 1, as npu-fold-attention-scale leaves it), over the
        scores a pass per mask operand (an additive mask's add; a causal mask's compare
        and select-add), the row max, exp(s - max) and the row sum (the sum, and a mask
        that is one row per key, on the cube instead where cheaper: `on_cube`); then one pass over
        the output ([S, Dv], after the second product: the probabilities are never
        divided), its normalisation by the row sums. An online tile (its out has the
        state's 2 extra columns), merged into a running state (`combine`), keeps the
        output unnormalised: per row the new max, both sides' factors exp(m - max) and
        the new sum (`ONLINE_ROW_PASSES` passes over [S]), then one multiply-add over
        [S, Dv] (the side with the smaller max times its factor plus the other; a
        tile's first block, with nothing to merge, pays the same for its copy); the
        last block's merge (`finish`) adds the normalisation, a reciprocal a row and a
        pass over [S, Dv]. The products run in `dtype` (q's type); the passes over the
        scores and the row statistics are f32 (the scores are f32), the ones over q and
        the output in the wider of f32 (the state) and `dtype`: all f32 today."""
        q, v = in_shapes[0], in_shapes[2]
        heads = math.prod(q[:-2])
        s, d, t, dv = q[-2], q[-1], v[-2], v[-1]
        if out_shape[-1] != dv:  # (online)
            out = arch.vector_cycles(heads * s * dv) + arch.vector_cycles(heads * s, cls.ONLINE_ROW_PASSES)
            out += cls.finish_cycles(arch, heads * s, dv) if finish else 0
        else:
            out = arch.vector_cycles(heads * s * dv)
        sums, mask = cls.on_cube(arch, in_shapes)  # (decided as `tile_scratch_bytes` does)
        passes = 2 + (0 if sums else 1) + (0 if mask else len(in_shapes[3:])) + arch.special_passes(("exp",))
        cube = arch.cube_cycles(s, d, t, heads, dtype) + arch.cube_cycles(s, t, dv, heads, dtype)
        cube += (arch.cube_cycles(s, t, 1, heads, dtype) if sums else 0) + \
            (arch.cube_cycles(s, 1, t, heads, dtype) if mask else 0)
        scale = arch.vector_cycles(heads * s * d) if scaled else 0
        return cube + arch.vector_cycles(heads * s * t, passes) + scale + out

    @classmethod
    def tile_type(cls, values: Sequence[SSAValue | Attribute]) -> str:
        """q's type: the products' (the vector passes' are fixed, see `tile_cycles`)."""
        return value_type(values[0])

    @classmethod
    def on_cube(cls, arch: Arch, in_shapes: Sequence[Sequence[int]]) -> tuple[bool, bool]:
        """(row sums, mask): whether a tile with inputs of `in_shapes` (canonical)
        computes its scores' row sums, and adds its mask, on the cube rather than in a
        vector pass over the scores [S, T] - each where the product is cheaper (the
        cube pads it to whole blocks: not for a few rows, e.g. a decode step's). Row
        sums: exp(scores) times a column of ones [T, 1]. Mask: only one that is a row
        per key ([..., 1, T], BERT's padding mask), added as the product of a column of
        ones [S, 1] and the mask row, accumulated into the scores (q kt + mask as one
        product of q and kt extended by them). The same sums, in another order."""
        q, v, masks = in_shapes[0], in_shapes[2], in_shapes[3:]
        heads, s, t = math.prod(q[:-2]), q[-2], v[-2]
        vector = arch.vector_cycles(heads * s * t)
        sums = arch.cube_cycles(s, t, 1, batch=heads) < vector
        per_key = len(masks) == 1 and (len(masks[0]) < 2 or masks[0][-2] == 1)
        return sums, per_key and arch.cube_cycles(s, 1, t, batch=heads) < vector

    @classmethod
    def tile_cycles_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                       out_shape: Sequence[int], dtype: DType = "f32") -> int:
        """`tile_cycles`, with no pass scaling q when the scale is 1, and the
        normalisation of a `finish` merge; `dtype` is q's type (the products')."""
        ins, out = cls.canonical_shapes(attrs, in_shapes, out_shape)
        quant = cls.quantized(attrs)
        if quant is not None:
            return cls.quantized_cycles(arch, ins, out, quant, "score_table" in attrs,
                                        attr_float(attrs, "scale", 1.0) != 1.0 or bool(quant["div"]))
        return cls.tile_cycles(arch, ins, out, attr_float(attrs, "scale", 1.0) != 1.0, "finish" in attrs, dtype)

    @classmethod
    def quantized_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                         quant: dict[str, float], table: bool, scaled: bool) -> int:
        """A `quant` tile: both products on the cube at the 8-bit rate; over the scores
        [S, T] the passes of the ops it replaces, at their own rates: the requantize
        (`RequantizeOp.VECTOR_COST`; in the cube's output stage with `requant_unit =
        cube`, as a conv's), the table lookup (`TableOp`, 8-bit), the
        dequantize, the scale's multiply or divide when `scaled`, a pass per mask
        operand, the fake quantization (quantize and dequantize: 3) when s2 is set, the
        softmax's max, exp, sum and divide (4; the exp as the arch evaluates it) and the
        quantize of the probabilities (2); over the output the requantize (the same way
        as the first)."""
        q, v = in_shapes[0], in_shapes[2]
        heads = math.prod(q[:-2])
        s, d, t, dv = q[-2], q[-1], v[-2], v[-1]
        n, out = heads * s * t, math.prod(out_shape)
        cube = arch.cube_cycles(s, d, t, heads, "i8") + arch.cube_cycles(s, t, dv, heads, "i8")
        passes = 1 + int(scaled) + len(in_shapes[3:]) + (3 if quant["s2"] else 0) + 4 + QuantizeOp.VECTOR_COST
        passes += arch.special_passes(("exp",))  # (the softmax's exp by the arch's method)
        lookup = arch.vector_cycles(n, TableOp.VECTOR_COST, "i8") if table else 0
        requant = RequantizeOp.after_product_cycles(arch, n) + RequantizeOp.after_product_cycles(arch, out)
        return cube + arch.vector_cycles(n, passes) + lookup + requant

    @staticmethod
    def finish_cycles(arch: Arch, rows: int, dv: int) -> int:
        """The normalisation a `finish` merge adds: a reciprocal of each row's sum and a
        multiply over the output [rows, Dv]."""
        return arch.vector_cycles(rows) + arch.vector_cycles(rows * dv)

    @classmethod
    def tile_scratch_bytes(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int]) -> int:
        """The tile's scores, [..., S, T] f32 (T: its key block), held in SRAM between
        the products; with `on_cube`, the ones its extra products read: a column [T, 1]
        for the row sums, a column [S, 1] for the mask (its row is the mask's tile)."""
        q, v = in_shapes[0], in_shapes[2]
        s, t = q[-2], v[-2]
        sums, mask = cls.on_cube(arch, in_shapes)
        return (math.prod(q[:-1]) * t + (t if sums else 0) + (s if mask else 0)) * 4

    @classmethod
    def tile_scratch_bytes_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                              out_shape: Sequence[int]) -> int:
        """A `quant` tile whose requantizes run in the cube's output stage holds its
        scores as the 8-bit codes that stage writes ([..., S, T], 1 byte each: the
        logits after the table, mask and quantize/dequantize pair are 8-bit codes again)
        and one row of them in f32 for the softmax; otherwise `tile_scratch_bytes`."""
        if cls.quantized(attrs) is None or arch.requant_unit != "cube":
            return cls.tile_scratch_bytes(arch, in_shapes, out_shape)
        q, v = in_shapes[0], in_shapes[2]
        return math.prod(q[:-1]) * v[-2] + v[-2] * 4

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        shapes = [shape_of(v) for v in self.operands]
        out = shape_of(self.result) if out_shape is None else out_shape
        return self.tile_cycles_of(dict(self.attributes), arch, shapes, out, value_type(self.operands[0]))

    def macs(self) -> int:
        lead, s, d, t, dv = self.dims()
        return math.prod(lead) * s * t * (d + dv)


class ReduceOp(StructuredOp):
    """Base of reductions over `axes` (sorted, non-negative, unique), keeping the
    reduced dims as size 1 when `keepdims`. Reduced dims are whole in every tile.
    `EMPTY` is the result of reducing an empty set (ONNX: sum 0, max -inf, min +inf;
    mean is undefined there, onnxruntime gives 0): the importer folds a reduction over
    an empty dim to that constant data, so these ops never reduce one."""

    input = operand_def(TensorType)
    axes = attr_def(DenseArrayBase)
    keepdims = attr_def(BoolAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    REDUCE: ClassVar[Callable[..., ArrayLike]]
    EMPTY: ClassVar[float] = 0.0

    def __init__(self, x: SSAValue, axes: Sequence[int], keepdims: bool, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type],
                         attributes={"axes": int_array(axes), "keepdims": BoolAttr.from_bool(keepdims)})

    @staticmethod
    def out_shape(x: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
        if keepdims:
            return tuple(1 if d in axes else s for d, s in enumerate(x))
        return tuple(s for d, s in enumerate(x) if d not in axes)

    def infer_shape(self) -> tuple[int, ...] | None:
        x, axes = shape_of(self.input), ints(self.axes, ())
        if any(not 0 <= a < len(x) for a in axes):
            return None
        return self.out_shape(x, axes, bool(self.keepdims.value.data))

    def verify_(self) -> None:
        x, axes = shape_of(self.input), ints(self.axes, ())
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < len(x) for a in axes):
            raise VerifyException(f"'{self.name}': axes {list(axes)} must be sorted, unique and in "
                                  f"0..{len(x) - 1}")
        if not isinstance(self, ReduceSumOp) and any(x[a] == 0 for a in axes):
            raise VerifyException(f"'{self.name}': cannot reduce the empty dims of {list(x)}")
        self._expect_result_shape(self.infer_shape(), "reducing")

    def tile_map(self) -> TileMap:
        r, axes = len(shape_of(self.input)), ints(self.axes, ())
        out_rank = len(shape_of(self.result))
        if attr_bool(dict(self.attributes), "keepdims", True):
            follows = same_dims(r, whole=axes)
        else:
            kept = [d for d in range(r) if d not in axes]
            follows = tuple(Follow(None) if d in axes else Follow(kept.index(d)) for d in range(r))
        return TileMap((True,) * out_rank, (follows,))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        return np.asarray(cls.REDUCE(x, axis=attr_ints(attrs, "axes", ()),
                                     keepdims=attr_bool(attrs, "keepdims", True)), dtype=x.dtype)


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Mean over `axes` (ONNX ReduceMean, GlobalAveragePool)."""

    name = "npu_graph.reduce_mean"
    REDUCE: ClassVar[Callable[..., ArrayLike]] = staticmethod(np.mean)


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over `axes` (ONNX ReduceSum)."""

    name = "npu_graph.reduce_sum"
    REDUCE: ClassVar[Callable[..., ArrayLike]] = staticmethod(np.sum)


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over `axes` (ONNX ReduceMax, GlobalMaxPool)."""

    name = "npu_graph.reduce_max"
    REDUCE: ClassVar[Callable[..., ArrayLike]] = staticmethod(np.max)
    EMPTY: ClassVar[float] = float("-inf")


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over `axes` (ONNX ReduceMin)."""

    name = "npu_graph.reduce_min"
    REDUCE: ClassVar[Callable[..., ArrayLike]] = staticmethod(np.min)
    EMPTY: ClassVar[float] = float("inf")


@irdl_op_definition
class ConcatOp(StructuredOp):
    """Join the operands along `axis` (ONNX Concat); the axis is whole in every tile."""

    name = "npu_graph.concat"
    inputs = var_operand_def(TensorType)
    axis = attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    def __init__(self, xs: Sequence[SSAValue], axis: int, result_type: TensorType):
        super().__init__(operands=[list(xs)], result_types=[result_type], attributes={"axis": IntegerAttr(axis, i64)})

    def infer_shape(self) -> tuple[int, ...] | None:
        shapes = [shape_of(v) for v in self.inputs]
        r = len(shapes[0]) if shapes else 0
        a = attr_int(dict(self.attributes), "axis", 0)
        if not shapes or not -r <= a < r:
            return None
        a %= r
        if any(len(s) != r or any(d != a and s[d] != shapes[0][d] for d in range(r)) for s in shapes):
            return None
        return tuple(sum(s[a] for s in shapes) if d == a else shapes[0][d] for d in range(r))

    def verify_(self) -> None:
        shapes = [shape_of(v) for v in self.inputs]
        if not shapes:
            raise VerifyException("'npu_graph.concat' needs at least one operand")
        r = len(shapes[0])
        a = _axis_in(self.name, attr_int(dict(self.attributes), "axis", 0), max(r, 1))
        for i, s in enumerate(shapes):
            if len(s) != r or any(d != a and s[d] != shapes[0][d] for d in range(r)):
                raise VerifyException(f"'npu_graph.concat': operand #{i} of shape {list(s)} does not match "
                                      f"{list(shapes[0])} outside axis {a}")
        self._expect_result_shape(self.infer_shape(), "concatenating")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.result))
        a = attr_int(dict(self.attributes), "axis", 0) % r
        return TileMap(tuple(d != a for d in range(r)), (same_dims(r, whole=(a,)),) * len(self.inputs))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        return np.concatenate(arrays, axis=attr_int(attrs, "axis", 0))


@irdl_op_definition
class SliceOp(StructuredOp):
    """x[starts[d]:ends[d]:steps[d]] in every dim d (ONNX Slice with clamped,
    non-negative starts; `ends` -1 with a negative step runs through index 0).
    Dims with a positive step tile (the DMA applies the start and the stride's
    span); dims with a negative step are whole in every tile."""

    name = "npu_graph.slice"
    input = operand_def(TensorType)
    starts = attr_def(DenseArrayBase)
    ends = attr_def(DenseArrayBase)
    steps = attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int],
                 result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "starts": int_array(starts), "ends": int_array(ends), "steps": int_array(steps)})

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    @staticmethod
    def sizes(starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]) -> tuple[int, ...]:
        """Result shape (a Python range counts end -1 with a negative step as intended)."""
        return tuple(len(range(s, e, st)) for s, e, st in zip(starts, ends, steps))

    def infer_shape(self) -> tuple[int, ...] | None:
        starts, ends, steps = ints(self.starts, ()), ints(self.ends, ()), ints(self.steps, ())
        if not len(starts) == len(ends) == len(steps) == len(shape_of(self.input)) or 0 in steps:
            return None
        return self.sizes(starts, ends, steps)

    def verify_(self) -> None:
        x = shape_of(self.input)
        starts, ends, steps = ints(self.starts, ()), ints(self.ends, ()), ints(self.steps, ())
        if not len(starts) == len(ends) == len(steps) == len(x):
            raise VerifyException(f"'npu_graph.slice': starts, ends and steps need {len(x)} values (the rank), "
                                  f"got {list(starts)}, {list(ends)}, {list(steps)}")
        for d, (s, e, st) in enumerate(zip(starts, ends, steps)):
            if st == 0:
                raise VerifyException(f"'npu_graph.slice': step of dim {d} is 0")
            ok = (0 <= s <= x[d] and 0 <= e <= x[d]) if st > 0 else \
                (0 <= s <= max(x[d] - 1, 0) and -1 <= e <= x[d] - 1)
            if not ok:
                raise VerifyException(f"'npu_graph.slice': start {s} / end {e} of dim {d} are out of range "
                                      f"for size {x[d]} and step {st}")
        self._expect_result_shape(self.infer_shape(), "slicing")

    def tile_map(self) -> TileMap:
        starts, steps = ints(self.starts, ()), ints(self.steps, ())
        follows = tuple(Follow(d, scale=st, offset=s) if st > 0 else Follow(None)
                        for d, (s, st) in enumerate(zip(starts, steps)))
        return TileMap(tuple(st > 0 for st in steps), (follows,))

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        """A cut dim (positive step) slices its whole input window: from 0 to the window's
        size (to the end when the size is not given)."""
        starts, ends, steps = ints(self.starts, ()), ints(self.ends, ()), ints(self.steps, ())
        size = tuple(tile_inputs[0]) if tile_inputs else (INT64_MAX,) * len(steps)
        return {"starts": int_array([0 if st > 0 else s for s, st in zip(starts, steps)]),
                "ends": int_array([n if st > 0 else e for e, st, n in zip(ends, steps, size)]),
                "steps": int_array(steps)}

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        idx = tuple(slice(s, e if e >= 0 or st > 0 else None, st) for s, e, st in
                    zip(attr_ints(attrs, "starts", ()), attr_ints(attrs, "ends", ()), attr_ints(attrs, "steps", ())))
        return x[idx]


@irdl_op_definition
class GatherOp(StructuredOp):
    """data gathered along `axis` at `indices` (ONNX Gather): the result has shape
    data[:axis] + indices + data[axis+1:]. Indices are integers carried as f32
    values (negative ones count from the end); the data's `axis` dim is whole in
    every tile."""

    name = "npu_graph.gather"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, data: SSAValue, indices: SSAValue, axis: int, result_type: TensorType):
        super().__init__(operands=[data, indices], result_types=[result_type],
                         attributes={"axis": IntegerAttr(axis, i64)})

    def check_element_types(self) -> None:
        """The data and the result: any one element type; the indices: f32 (carried
        integers) or i32."""
        expect_type(self, self.data, "data", ANY_TYPE)
        expect_type(self, self.indices, "indices", ("f32", "i32"))
        if _type_of(self.result) != _type_of(self.data):
            raise VerifyException(f"'{self.name}': result is {_type_of(self.result)} but data is "
                                  f"{_type_of(self.data)}; gathering keeps the element type")

    def infer_shape(self) -> tuple[int, ...] | None:
        x, i = shape_of(self.data), shape_of(self.indices)
        a = attr_int(dict(self.attributes), "axis", 0)
        if not -len(x) <= a < len(x):
            return None
        a %= len(x)
        return x[:a] + i + x[a + 1:]

    def verify_(self) -> None:
        x = shape_of(self.data)
        if not x:
            raise VerifyException("'npu_graph.gather': data must have rank >= 1")
        _axis_in(self.name, attr_int(dict(self.attributes), "axis", 0), len(x))
        self._expect_result_shape(self.infer_shape(), "gathering")

    def tile_map(self) -> TileMap:
        x, q = shape_of(self.data), len(shape_of(self.indices))
        a = attr_int(dict(self.attributes), "axis", 0) % len(x)
        data = tuple(Follow(d) if d < a else Follow(None) if d == a else Follow(d - 1 + q) for d in range(len(x)))
        return TileMap((True,) * (len(x) - 1 + q), (data, tuple(Follow(a + k) for k in range(q))))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        data, indices = arrays
        a = attr_int(attrs, "axis", 0) % data.ndim
        idx = indices.astype(np.int64)
        idx = np.where(idx < 0, idx + data.shape[a], idx)
        return np.take(data, idx, axis=a)


@irdl_op_definition
class TriluOp(StructuredOp):
    """Upper (`upper`) or lower triangle of the last two dims, from diagonal `k` on
    (ONNX Trilu); the other elements are 0. The last two dims are whole in every tile."""

    name = "npu_graph.trilu"
    input = operand_def(TensorType)
    upper = attr_def(BoolAttr)
    k = attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, upper: bool, k: int, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type],
                         attributes={"upper": BoolAttr.from_bool(upper), "k": IntegerAttr(k, i64)})

    def infer_shape(self) -> tuple[int, ...] | None:
        x = shape_of(self.input)
        return x if len(x) >= 2 else None

    def verify_(self) -> None:
        x = shape_of(self.input)
        if len(x) < 2:
            raise VerifyException(f"'npu_graph.trilu': input must have rank >= 2, got {list(x)}")
        self._expect_result_shape(x, "trilu")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap(tuple(d < r - 2 for d in range(r)), (same_dims(r, whole=(r - 2, r - 1)),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        k = attr_int(attrs, "k", 0)
        return np.triu(arrays[0], k) if attr_bool(attrs, "upper", True) else np.tril(arrays[0], k)


@irdl_op_definition
class LrnOp(StructuredOp):
    """Local response normalisation across channels (dim 1; ONNX LRN):
    x / (bias + alpha / size * sum of x^2 over the `size` channels around)^beta.
    Channels are whole in every tile."""

    name = "npu_graph.lrn"
    input = operand_def(TensorType)
    size = attr_def(IntegerAttr)
    alpha = attr_def(FloatAttr)
    beta = attr_def(FloatAttr)
    bias = attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, size: int, alpha: float, beta: float, bias: float, result_type: TensorType):
        f = Float32Type()
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "size": IntegerAttr(size, i64), "alpha": FloatAttr(alpha, f), "beta": FloatAttr(beta, f),
            "bias": FloatAttr(bias, f)})

    VECTOR_COST: ClassVar[int] = 8  # square, windowed sum (size ~5), scale, power, divide

    def infer_shape(self) -> tuple[int, ...] | None:
        x = shape_of(self.input)
        return x if len(x) >= 3 else None

    def verify_(self) -> None:
        x = shape_of(self.input)
        if len(x) < 3:
            raise VerifyException(f"'npu_graph.lrn': input must be [N, C, ...] with rank >= 3, got {list(x)}")
        if attr_int(dict(self.attributes), "size", 1) <= 0:
            raise VerifyException(f"'npu_graph.lrn': size must be positive, got {attr_int(dict(self.attributes), 'size', 1)}")
        self._expect_result_shape(x, "lrn")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap(tuple(d != 1 for d in range(r)), (same_dims(r, whole=(1,)),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        size = attr_int(attrs, "size", 1)
        lo = (size - 1) // 2
        sq = np.pad(x * x, [(0, 0), (lo, size - 1 - lo)] + [(0, 0)] * (x.ndim - 2))
        acc = sum(sq[:, i:i + x.shape[1]] for i in range(size))
        scale = attr_float(attrs, "bias", 1.0) + attr_float(attrs, "alpha", 1e-4) / size * acc
        return x / scale ** attr_float(attrs, "beta", 0.75)


def check_pool_params(op: str, x: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                      pads: Sequence[int], dilations: Sequence[int]) -> int:
    """The number n of spatial dims of a pooling op on `x` ([N, C, spatial...]), after
    checking the lengths (kernel, strides and dilations n values, pads 2n) and signs
    (pads >= 0, the others > 0) of its window parameters."""
    n = len(kernel)
    if n == 0:
        raise VerifyException(f"'{op}': kernel needs at least one value")
    _check_lengths_and_signs(op, [("kernel", kernel, n), ("strides", strides, n), ("dilations", dilations, n),
                                  ("pads", pads, 2 * n)])
    if len(x) != n + 2:
        raise VerifyException(f"'{op}': input must be [N, C] and {n} spatial dim{'s' if n > 1 else ''} "
                              f"for a {n}-D kernel, got shape {list(x)}")
    return n


def check_max_pool_pads(op: str, x: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                        pads: Sequence[int], dilations: Sequence[int]) -> None:
    """Max pooling never yields a window of padding only: begin pads are smaller than
    the kernel, and no window starts in the end padding (ceil mode's extra end padding
    is fine, as ONNX drops a last window that would start there)."""
    n = len(kernel)
    if any(p >= k for p, k in zip(pads[:n], kernel)):
        raise VerifyException(f"'{op}': begin pads {list(pads[:n])} must be smaller than the kernel {list(kernel)}")
    out = pool_out_shape(x, kernel, strides, pads, dilations)
    if out is None:
        return
    for i in range(n):
        size, begin = x[len(x) - n + i], pads[i]
        if (out[len(x) - n + i] - 1) * strides[i] >= size + begin:
            raise VerifyException(f"'{op}': pads {list(pads)}: the last window of spatial dim {i} starts in the "
                                  f"end padding")


class WindowPoolOp(StructuredOp):
    """Base of the structured pooling ops: windows over the trailing n spatial dims of
    [N, C, spatial...] (any n >= 1), computed by `pool_ref` of kind `KIND`. `pads` are
    the begin counts of the spatial dims, then the end counts. Tiles may cut every
    dim; along a spatial dim the input window follows the output tile with a halo of
    the kernel's extent, and reads outside the input are `POOL_PAD[KIND]`, so a tile
    computes with no padding of its own."""

    input = operand_def(TensorType)
    kernel = attr_def(DenseArrayBase)
    strides = attr_def(DenseArrayBase)
    pads = attr_def(DenseArrayBase)
    dilations = attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    KIND: ClassVar[str]
    VECTOR_COST: ClassVar[int] = 9  # a 3x3 window (the class constant cannot follow the kernel)

    @property
    def params(self) -> dict:
        kernel = ints(self.kernel, ())
        n = len(kernel)
        return dict(kernel=kernel, strides=ints(self.strides, (1,) * n), pads=ints(self.pads, (0,) * (2 * n)),
                    dilations=ints(self.dilations, (1,) * n))

    def infer_shape(self) -> tuple[int, ...] | None:
        x, p = shape_of(self.input), self.params
        n = len(p["kernel"])
        if n == 0 or len(x) != n + 2 or len(p["pads"]) != 2 * n or not len(p["strides"]) == len(p["dilations"]) == n:
            return None
        return pool_out_shape(x, **p)

    def verify_(self) -> None:
        self.check_element_types()
        x, p = shape_of(self.input), self.params
        check_pool_params(self.name, x, **p)
        if self.KIND == "max":
            check_max_pool_pads(self.name, x, **p)
        self._expect_result_shape(self.infer_shape(), "pooling")

    def tile_map(self) -> TileMap:
        x, p = shape_of(self.input), self.params
        n = len(p["kernel"])
        lead = len(x) - n
        spatial = tuple(Follow(lead + i, s, -b, (k - 1) * d)
                        for i, (k, s, b, d) in enumerate(zip(p["kernel"], p["strides"], p["pads"], p["dilations"])))
        pad = POOL_PAD[self.KIND]
        if self.KIND == "max" and type_name(_type_of(self.input)) in ("i8", "ui8", "i32"):
            pad = float(qrange(_type_of(self.input))[0])  # (integers: the type's minimum never wins either)
        return TileMap((True,) * len(x), (same_dims(lead) + spatial,), pad_value=pad)

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        return dict(self.attributes, pads=int_array((0,) * len(ints(self.pads, ()))))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        kernel = attr_ints(attrs, "kernel", ())
        n = len(kernel)
        return pool_ref(arrays[0], cls.KIND, kernel, attr_ints(attrs, "strides", (1,) * n),
                        attr_ints(attrs, "pads", (0,) * (2 * n)), attr_ints(attrs, "dilations", (1,) * n),
                        attr_bool(attrs, "count_include_pad", False))


@irdl_op_definition
class AvgPoolOp(WindowPoolOp):
    """Average pooling over the spatial dims of [N, C, spatial...], any number of them
    (ONNX AveragePool); `count_include_pad` says whether padded positions count in the
    divisor. Tiles read their windows with halos; reads outside the input are NaN,
    which marks them as padding."""

    name = "npu_graph.avgpool"
    count_include_pad = attr_def(BoolAttr)
    KIND: ClassVar[str] = "avg"

    def __init__(self, x: SSAValue, result_type: TensorType, *, kernel: Sequence[int], strides: Sequence[int],
                 pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
                 count_include_pad: bool = False):
        n = len(kernel)
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "kernel": int_array(kernel), "strides": int_array(strides),
            "pads": int_array(pads if pads is not None else (0,) * (2 * n)),
            "dilations": int_array(dilations if dilations is not None else (1,) * n),
            "count_include_pad": BoolAttr.from_bool(count_include_pad)})


@irdl_op_definition
class MaxPoolNdOp(WindowPoolOp):
    """Max pooling over the spatial dims of [N, C, spatial...], any number of them, as a
    structured op (1-D and 3-D ONNX MaxPool; the 2-D case is `npu_graph.maxpool`, which
    has a hand-written tiling). Reads outside the input are -inf: padding never wins."""

    name = "npu_graph.maxpool_nd"
    KIND: ClassVar[str] = "max"

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    def __init__(self, x: SSAValue, result_type: TensorType, *, kernel: Sequence[int], strides: Sequence[int],
                 pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None):
        n = len(kernel)
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "kernel": int_array(kernel), "strides": int_array(strides),
            "pads": int_array(pads if pads is not None else (0,) * (2 * n)),
            "dilations": int_array(dilations if dilations is not None else (1,) * n)})


@irdl_op_definition
class PadOp(StructuredOp):
    """Constant padding (ONNX Pad, mode "constant"): `pads` holds the begin counts of
    every dim then the end counts (negative ones crop); new elements are `value`.
    Tiles read their window at the shifted position and the DMA fills reads outside
    the input with `value`."""

    name = "npu_graph.pad"
    input = operand_def(TensorType)
    pads = attr_def(DenseArrayBase)
    value = attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    def __init__(self, x: SSAValue, pads: Sequence[int], value: float, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "pads": int_array(pads), "value": FloatAttr(value, Float32Type())})

    def infer_shape(self) -> tuple[int, ...] | None:
        x, pads = shape_of(self.input), ints(self.pads, ())
        if len(pads) != 2 * len(x):
            return None
        out = tuple(s + b + e for s, b, e in zip(x, pads, pads[len(x):]))
        return out if all(o >= 0 for o in out) else None

    def verify_(self) -> None:
        x, pads = shape_of(self.input), ints(self.pads, ())
        if len(pads) != 2 * len(x):
            raise VerifyException(f"'npu_graph.pad': pads needs {2 * len(x)} values (begin and end per dim), "
                                  f"got {list(pads)}")
        out = tuple(s + b + e for s, b, e in zip(x, pads, pads[len(x):]))
        if any(o < 0 for o in out):
            raise VerifyException(f"'npu_graph.pad': pads {list(pads)} crop more than the input {list(x)}")
        self._expect_result_shape(out, "padding")

    def tile_map(self) -> TileMap:
        r, pads = len(shape_of(self.input)), ints(self.pads, ())
        return TileMap((True,) * r, (tuple(Follow(d, offset=-pads[d]) for d in range(r)),),
                       pad_value=attr_float(dict(self.attributes), "value", 0.0))

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        return dict(self.attributes, pads=int_array([0] * len(ints(self.pads, ()))))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        pads = attr_ints(attrs, "pads", ())
        begin, end = pads[:x.ndim], pads[x.ndim:]
        shape = tuple(s + b + e for s, b, e in zip(x.shape, begin, end))
        out = np.full(shape, attr_float(attrs, "value", 0.0), dtype=x.dtype)
        # out[o] = x[o - begin] where that is inside x: a crop deeper than its side of
        # the input (begin < -size) leaves only padding, never a shifted window
        lo = [min(max(b, 0), o) for b, o in zip(begin, shape)]
        hi = [max(min(o, s + b), l) for b, o, s, l in zip(begin, shape, x.shape, lo)]
        out[tuple(map(slice, lo, hi))] = x[tuple(slice(l - b, h - b) for l, h, b in zip(lo, hi, begin))]
        return out


def quantize_ref(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point) to [lo, hi],
    computed in float32 (as onnxruntime: one division, nearbyint), integral values in
    float32 (the typed result buffer stores them exactly)."""
    with np.errstate(all="ignore"):
        y = np.rint(x.astype(np.float32) / scale.astype(np.float32)) + zero_point.astype(np.float32)
    return np.clip(y, lo, hi).astype(np.float32, copy=False)


def dequantize_ref(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """ONNX DequantizeLinear: (x - zero_point) * scale in float32 (the difference is exact:
    taken in int64, as onnxruntime takes it in int32)."""
    diff = x.astype(np.int64) - zero_point.astype(np.int64)
    with np.errstate(over="ignore"):  # (an infinite product stays inf, as in onnxruntime)
        return (diff.astype(np.float32) * scale.astype(np.float32)).astype(np.float32, copy=False)


def quantize_multiplier(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's QuantizeMultiplier of each (positive) float: int32 q in [2^30, 2^31) and
    shift with m = q * 2^(shift - 31); a multiplier below 2^-31 gives q = 0."""
    frac, shift = np.frexp(np.asarray(m, dtype=np.float64))
    q = np.floor(np.abs(frac) * 2.0 ** 31 + 0.5) * np.sign(frac)  # (std::round: halves away from zero)
    shift = np.where(q == 2 ** 31, shift + 1, shift)
    q = np.where(q == 2 ** 31, 2 ** 30, q)
    tiny = shift < -31
    return np.where(tiny, 0, q).astype(np.int64), np.where(tiny, 0, shift).astype(np.int64)


def fixed_point_multiply(acc: np.ndarray, q: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier: SaturatingRoundingDoublingHighMul of
    acc * 2^max(shift, 0) (saturated to int32) and q, then RoundingDivideByPOT by
    max(-shift, 0) (rounds half away from zero), in int64."""
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    x = np.clip(acc.astype(np.int64) << left, -2 ** 31, 2 ** 31 - 1)
    ab = x * q
    t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(t >= 0, t >> 31, -((-t) >> 31))  # (C division: toward zero)
    high = np.where((x == -2 ** 31) & (q == -2 ** 31), 2 ** 31 - 1, high)
    mask = (np.int64(1) << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + (remainder > threshold)


def requantize_ref(acc: np.ndarray, multiplier: np.ndarray, zero_point: np.ndarray, lo: int, hi: int,
                   mode: str = "float") -> np.ndarray:
    """An int32 accumulator to [lo, hi]: `float` mode as onnxruntime's
    MlasRequantizeOutput (float32(acc) * multiplier, round half to even, + zero point,
    clamp); `fixed` mode as TFLite (an int32 multiplier and shift derived from the float
    multiplier, `fixed_point_multiply`, + zero point, clamp). Integral float32 values."""
    zp = zero_point.astype(np.float32)
    if mode == "fixed":
        q, shift = quantize_multiplier(multiplier.astype(np.float32))
        y = fixed_point_multiply(acc, q, shift).astype(np.float64) + zp
    else:
        with np.errstate(all="ignore"):
            y = np.rint(acc.astype(np.float32) * multiplier.astype(np.float32)) + zp
    return np.clip(y, lo, hi).astype(np.float32)


REQUANT_MODES = ("float", "fixed")


class QuantOp(StructuredOp):
    """Base of the ops converting between floats and integers elementwise (quantize,
    dequantize, requantize, cast): operands broadcast to the first one's shape (a
    per-axis parameter is [1, C, 1, 1]), so they tile like elementwise ops (every
    output dim may be cut; broadcast dims of a parameter stay whole). `IN` and `OUT`
    name the element types of the first operand and of the result; parameters are f32.
    `compute` gets the saturation range as `min`/`max` (`tile_attrs` fills them in
    from the result type when the op has none) and returns the values in float32:
    the typed result buffer stores them (exactly, for integral values)."""

    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    IN: ClassVar[tuple[str, ...]]
    OUT: ClassVar[tuple[str, ...]]
    PARAMS: ClassVar[tuple[str, ...]] = ()

    def verify_(self) -> None:
        x = self.operands[0]
        expect_type(self, x, "operand #0", self.IN)
        for i, (what, v) in enumerate(zip(self.PARAMS, self.operands[1:]), start=1):
            expect_type(self, v, f"{what} (operand #{i})", ("f32",))
            if broadcast_shapes(shape_of(v), shape_of(x)) != shape_of(x):
                raise VerifyException(f"'{self.name}': {what} of shape {list(shape_of(v))} does not broadcast "
                                      f"to the input's {list(shape_of(x))}")
        expect_type(self, self.results[0], "result", self.OUT)
        if shape_of(self.results[0]) != shape_of(x):
            raise VerifyException(f"'{self.name}': result shape {list(shape_of(self.results[0]))} must be the "
                                  f"input's {list(shape_of(x))}")
        self.verify_range()

    def verify_range(self) -> None:
        """`min`/`max` (if given) within the result type, min <= max."""
        if "min" not in self.attributes and "max" not in self.attributes:
            return
        t = _type_of(self.results[0])
        tlo, thi = qrange(t)
        lo, hi = self.bounds()
        if not tlo <= lo <= hi <= thi:
            raise VerifyException(f"'{self.name}': min {lo} / max {hi} must satisfy {tlo} <= min <= max <= {thi} "
                                  f"({t})")

    def bounds(self) -> tuple[int, int]:
        """The saturation range: `min`/`max`, by default the result type's range."""
        tlo, thi = qrange(_type_of(self.results[0]))
        attrs = dict(self.attributes)
        return attr_int(attrs, "min", tlo), attr_int(attrs, "max", thi)

    def tile_map(self) -> TileMap:
        out = shape_of(self.results[0])
        return TileMap((True,) * len(out), tuple(broadcast_follow(shape_of(v), out) for v in self.operands))

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        attrs = dict(self.attributes)
        if type_name(_type_of(self.results[0])) in ("i8", "ui8"):
            lo, hi = self.bounds()
            attrs.update(min=IntegerAttr(lo, i64), max=IntegerAttr(hi, i64))
        return attrs

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (self.compute(self.tile_attrs(), *inputs).astype(np_dtype(self.results[0])),)


def _range_attrs(lo: int | None, hi: int | None) -> dict[str, Attribute]:
    return {k: IntegerAttr(v, i64) for k, v in (("min", lo), ("max", hi)) if v is not None}


@irdl_op_definition
class QuantizeOp(QuantOp):
    """A float tensor to i8/ui8 (ONNX QuantizeLinear): saturate(round_half_even(x /
    scale) + zero_point), `quantize_ref`. `scale` and `zero_point` are f32 tensors
    broadcastable to x (zero points hold integers); optional `min`/`max` narrow the
    saturation range (a fused Relu/Clip; default: the result type's range)."""

    name = "npu_graph.quantize"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    min = opt_attr_def(IntegerAttr)
    max = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = FLOATS
    OUT: ClassVar[tuple[str, ...]] = QUANTIZED
    PARAMS: ClassVar[tuple[str, ...]] = ("scale", "zero_point")
    VECTOR_COST: ClassVar[int] = 2  # divide, round-add-clamp

    def __init__(self, x: SSAValue, scale: SSAValue, zero_point: SSAValue, result_type: TensorType, *,
                 min: int | None = None, max: int | None = None):
        super().__init__(operands=[x, scale, zero_point], result_types=[result_type], attributes=_range_attrs(min, max))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, scale, zp = arrays
        return quantize_ref(x, scale, zp, attr_int(attrs, "min", -128), attr_int(attrs, "max", 127))


@irdl_op_definition
class DequantizeOp(QuantOp):
    """An i8/ui8/i32 tensor to float (ONNX DequantizeLinear): (x - zero_point) * scale in
    f32, `dequantize_ref`; `scale`, `zero_point` are f32 tensors broadcastable to x."""

    name = "npu_graph.dequantize"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = ("i8", "ui8", "i32")
    OUT: ClassVar[tuple[str, ...]] = FLOATS
    PARAMS: ClassVar[tuple[str, ...]] = ("scale", "zero_point")

    def __init__(self, x: SSAValue, scale: SSAValue, zero_point: SSAValue, result_type: TensorType):
        super().__init__(operands=[x, scale, zero_point], result_types=[result_type])

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        return dequantize_ref(*arrays)


@irdl_op_definition
class RequantizeOp(QuantOp):
    """An i32 accumulator to i8/ui8 (`requantize_ref`): clamp(round(acc * multiplier) +
    zero_point, min, max). `multiplier` (input scale * weight scale / output scale; per
    channel allowed) and `zero_point` are f32 tensors broadcastable to acc. `mode`
    "float" multiplies in float32 and rounds half to even (onnxruntime's CPU kernels);
    "fixed" uses the int32 multiplier and shift TFLite derives from the float
    (`quantize_multiplier`; rounding half away from zero). `min`/`max` default to the
    result type's range; a fused Relu/Clip narrows them."""

    name = "npu_graph.requantize"
    input = operand_def(TensorType)
    multiplier = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    min = opt_attr_def(IntegerAttr)
    max = opt_attr_def(IntegerAttr)
    mode = opt_attr_def(StringAttr)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = ("i32",)
    OUT: ClassVar[tuple[str, ...]] = QUANTIZED
    PARAMS: ClassVar[tuple[str, ...]] = ("multiplier", "zero_point")
    VECTOR_COST: ClassVar[int] = 2  # multiply, round-add-clamp

    def __init__(self, acc: SSAValue, multiplier: SSAValue, zero_point: SSAValue, result_type: TensorType, *,
                 min: int | None = None, max: int | None = None, mode: str = "float"):
        attrs = _range_attrs(min, max)
        if mode != "float":
            attrs["mode"] = StringAttr(mode)
        super().__init__(operands=[acc, multiplier, zero_point], result_types=[result_type], attributes=attrs)

    @property
    def requant_mode(self) -> str:
        return self.mode.data if self.mode is not None else "float"

    @classmethod
    def after_product_cycles(cls, arch: Arch, elements: int) -> int:
        """Cycles of the requantize of `elements` accumulators a cube product just wrote:
        in the cube's output stage with `requant_unit = cube` (`Arch.cube_output_cycles`),
        else `VECTOR_COST` vector passes."""
        if arch.requant_unit == "cube":
            return arch.cube_output_cycles(elements)
        return arch.vector_cycles(elements, cls.VECTOR_COST)

    def verify_range(self) -> None:
        if self.requant_mode not in REQUANT_MODES:
            raise VerifyException(f"'{self.name}': mode '{self.requant_mode}' must be one of "
                                  f"{', '.join(REQUANT_MODES)}")
        super().verify_range()

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        acc, mul, zp = arrays
        mode = attrs.get("mode")
        return requantize_ref(acc, mul, zp, attr_int(attrs, "min", -128), attr_int(attrs, "max", 127),
                              mode.data if isinstance(mode, StringAttr) else "float")


@irdl_op_definition
class CastOp(QuantOp):
    """A float tensor to another float type (f32, f16, bf16; ONNX Cast between them):
    rounding to nearest even when narrowing (numpy float16, ml_dtypes bfloat16). A tile
    computes the identity in the input's type; storing into the typed result buffer
    rounds."""

    name = "npu_graph.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = FLOATS
    OUT: ClassVar[tuple[str, ...]] = FLOATS

    def __init__(self, x: SSAValue, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type])

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        return arrays[0]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (inputs[0].astype(np.float32).astype(np_dtype(self.result)),)


@irdl_op_definition
class TableOp(StructuredOp):
    """An i8/ui8 tensor through a 256-entry lookup table (TOSA's `table` for 8-bit
    inputs) indexed by each element's 8 bits: out = table[x mod 256] (x for ui8, x + 256
    for a negative i8). `table` is [256], or [C, 256] with `axis` naming the input dim
    of size C whose index picks the row (per-channel functions). The result has the table's element
    type (i8/ui8). npu-fuse-qdq computes these tables from chains of elementwise ops
    between a dequantize and a quantize; VECTOR_COST 2 (index, gather) at the 8-bit rate."""

    name = "npu_graph.table"
    input = operand_def(TensorType)
    table = operand_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 2  # index, gather

    def __init__(self, x: SSAValue, table: SSAValue, result_type: TensorType, axis: int | None = None):
        attrs = {} if axis is None else {"axis": IntegerAttr(axis, i64)}
        super().__init__(operands=[x, table], result_types=[result_type], attributes=attrs)

    def verify_(self) -> None:
        expect_type(self, self.input, "input", QUANTIZED)
        expect_type(self, self.table, "table", QUANTIZED)
        if _type_of(self.result) != _type_of(self.table):
            raise VerifyException(f"'{self.name}': result element type {_type_of(self.result)} must be the "
                                  f"table's {_type_of(self.table)}")
        x, t = shape_of(self.input), shape_of(self.table)
        if shape_of(self.result) != x:
            raise VerifyException(f"'{self.name}': result shape {list(shape_of(self.result))} must be the "
                                  f"input's {list(x)}")
        if self.axis is None:
            if t != (256,):
                raise VerifyException(f"'{self.name}': a table without `axis` has shape [256], got {list(t)}")
            return
        a = self.axis.value.data
        if not 0 <= a < len(x) or t != (x[a], 256):
            raise VerifyException(f"'{self.name}': axis {a} needs a table of shape [input dim {a}, 256] = "
                                  f"{[x[a] if 0 <= a < len(x) else '?', 256]}, got {list(t)}")

    def tile_map(self) -> TileMap:
        rank = len(shape_of(self.result))
        rows = (Follow(None),) if self.axis is None else (Follow(self.axis.value.data), Follow(None))
        return TileMap((True,) * rank, (same_dims(rank), rows))

    @classmethod
    def tile_type(cls, values: Sequence[SSAValue | Attribute]) -> str:
        """Priced at the 8-bit rate: it reads and writes 8-bit values (the f32 buffer a
        tile's compute sees is the simulator's view)."""
        return "i8"

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, table = arrays
        idx = np.rint(x).astype(np.int64) & 255  # (x's 8 bits)
        table = np.rint(table).astype(np.int64)  # (the result is the table's integers)
        if table.ndim == 1:
            return table[idx]
        shape = [1] * x.ndim
        shape[attr_int(attrs, "axis", 1)] = table.shape[0]
        return table[np.arange(table.shape[0]).reshape(shape), idx]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (self.compute(self.tile_attrs(), *inputs).astype(np_dtype(self.results[0])),)


class ElementwiseOp(GraphOp):
    """Base of elementwise ops; `FN` names the entry of `ELEMENTWISE`."""

    FN: ClassVar[str]
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def verify_(self) -> None:
        arity = ELEMENTWISE[self.FN][0]
        if len(self.operands) != arity:
            raise VerifyException(f"'{self.name}' takes {arity} operands")
        self._expect_result_shape(broadcast_shapes(*[shape_of(o) for o in self.operands]),
                                  "broadcasting the operands")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """One vector pass over the result (in the widest type the op reads or writes),
        more for a special function the arch approximates (`special.ELTWISE_USES`)."""
        t = widest_type((*self.operands, *self.results))
        return arch.vector_cycles(self.out_elements(out_shape), 1 + arch.special_passes(special.ELTWISE_USES.get(self.FN, ()), t), t)

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (in_f32(ELEMENTWISE[self.FN][1], inputs),)


class UnaryOp(ElementwiseOp):
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, x: SSAValue, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type])


class BinaryOp(ElementwiseOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType):
        super().__init__(operands=[a, b], result_types=[result_type])


class TernaryOp(ElementwiseOp):
    """Three operands broadcast together (the subclass says what each one means)."""

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, result_type: TensorType):
        super().__init__(operands=[a, b, c], result_types=[result_type])


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0)"""

    name = "npu_graph.relu"
    FN: ClassVar[str] = "relu"


@irdl_op_definition
class AddOp(BinaryOp):
    """a + b with numpy broadcasting; in one float type, or in i32 (an integer
    accumulator plus its bias, as npu-fuse-qdq adds a quantized Gemm's bias)."""

    name = "npu_graph.add"
    FN: ClassVar[str] = "add"

    def check_element_types(self) -> None:
        check_types(self, (*FLOATS, "i32"))


@irdl_op_definition
class MulOp(BinaryOp):
    """a * b with numpy broadcasting"""

    name = "npu_graph.mul"
    FN: ClassVar[str] = "mul"


@irdl_op_definition
class SubOp(BinaryOp):
    """a - b with numpy broadcasting"""

    name = "npu_graph.sub"
    FN: ClassVar[str] = "sub"


@irdl_op_definition
class DivOp(BinaryOp):
    """a / b with numpy broadcasting"""

    name = "npu_graph.div"
    FN: ClassVar[str] = "div"


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x))"""

    name = "npu_graph.sigmoid"
    FN: ClassVar[str] = "sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    """tanh(x)"""

    name = "npu_graph.tanh"
    FN: ClassVar[str] = "tanh"


@irdl_op_definition
class ErfOp(UnaryOp):
    """the error function erf(x)"""

    name = "npu_graph.erf"
    FN: ClassVar[str] = "erf"


@irdl_op_definition
class GeluOp(UnaryOp):
    """exact GELU: x / 2 * (1 + erf(x / sqrt(2)))"""

    name = "npu_graph.gelu"
    FN: ClassVar[str] = "gelu"


@irdl_op_definition
class GeluTanhOp(UnaryOp):
    """GELU, tanh approximation: x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))"""

    name = "npu_graph.gelu_tanh"
    FN: ClassVar[str] = "gelu_tanh"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """sqrt(x) (NaN below 0)"""

    name = "npu_graph.sqrt"
    FN: ClassVar[str] = "sqrt"


@irdl_op_definition
class ExpOp(UnaryOp):
    """exp(x)"""

    name = "npu_graph.exp"
    FN: ClassVar[str] = "exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """natural logarithm (-inf at 0, NaN below)"""

    name = "npu_graph.log"
    FN: ClassVar[str] = "log"


@irdl_op_definition
class NegOp(UnaryOp):
    """-x"""

    name = "npu_graph.neg"
    FN: ClassVar[str] = "neg"


@irdl_op_definition
class AbsOp(UnaryOp):
    """|x|"""

    name = "npu_graph.abs"
    FN: ClassVar[str] = "abs"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """1 / x"""

    name = "npu_graph.reciprocal"
    FN: ClassVar[str] = "reciprocal"


@irdl_op_definition
class TruncOp(UnaryOp):
    """x rounded toward zero (ONNX Cast to an integer type; the integer stays a float32 value)"""

    name = "npu_graph.trunc"
    FN: ClassVar[str] = "trunc"


def _unary_op(fn: str, doc: str) -> type[UnaryOp]:
    """An elementwise `npu_graph.<fn>` op computing `ELEMENTWISE[fn]` (defined the same
    way as the classes above, from a table: they differ only in name and function)."""
    cls = type("".join(p.title() for p in fn.split("_")) + "Op", (UnaryOp,),
               {"__doc__": doc, "__module__": __name__, "__annotations__": {"FN": ClassVar[str]},
                "name": f"npu_graph.{fn}", "FN": fn})
    return irdl_op_definition(cls)


SIMPLE_UNARY: dict[str, type[UnaryOp]] = {fn: _unary_op(fn, doc) for fn, doc in (
    ("floor", "x rounded down"), ("ceil", "x rounded up"), ("round", "x rounded to the nearest, halves to even"),
    ("sign", "-1, 0 or 1 by the sign of x"), ("sin", "sin(x)"), ("cos", "cos(x)"), ("tan", "tan(x)"),
    ("asin", "arcsin(x)"), ("acos", "arccos(x)"), ("atan", "arctan(x)"), ("sinh", "sinh(x)"), ("cosh", "cosh(x)"),
    ("asinh", "arsinh(x)"), ("acosh", "arcosh(x)"), ("atanh", "artanh(x)"),
    ("softplus", "log(1 + exp(x)), computed without overflow"),
    ("isnan", "1.0 where x is NaN, else 0.0"), ("isinf", "1.0 where x is infinite, else 0.0"))}
"""Unary elementwise ops that differ only in their function (ONNX Floor, Sin, IsNaN ...)."""


@irdl_op_definition
class FmodOp(BinaryOp):
    """the remainder of a / b with the sign of a (C's fmod; ONNX Mod with fmod=1)"""

    name = "npu_graph.fmod"
    FN: ClassVar[str] = "fmod"


@irdl_op_definition
class ModOp(BinaryOp):
    """a mod b with the sign of b (Python's %, numpy.mod; ONNX Mod with fmod=0)"""

    name = "npu_graph.mod"
    FN: ClassVar[str] = "mod"


@irdl_op_definition
class PowOp(BinaryOp):
    """a ** b with numpy broadcasting"""

    name = "npu_graph.pow"
    FN: ClassVar[str] = "pow"


@irdl_op_definition
class PReluOp(BinaryOp):
    """x where x >= 0, else x * slope (slope broadcast; LeakyRelu has a scalar slope)"""

    name = "npu_graph.prelu"
    FN: ClassVar[str] = "prelu"


@irdl_op_definition
class MaxOp(BinaryOp):
    """elementwise maximum with numpy broadcasting"""

    name = "npu_graph.max"
    FN: ClassVar[str] = "max"


@irdl_op_definition
class MinOp(BinaryOp):
    """elementwise minimum with numpy broadcasting"""

    name = "npu_graph.min"
    FN: ClassVar[str] = "min"


@irdl_op_definition
class EqualOp(BinaryOp):
    """1.0 where a == b, else 0.0 (a boolean carried as f32)"""

    name = "npu_graph.equal"
    FN: ClassVar[str] = "equal"


@irdl_op_definition
class LessOp(BinaryOp):
    """1.0 where a < b, else 0.0 (a boolean carried as f32)"""

    name = "npu_graph.less"
    FN: ClassVar[str] = "less"


@irdl_op_definition
class GreaterOp(BinaryOp):
    """1.0 where a > b, else 0.0 (a boolean carried as f32)"""

    name = "npu_graph.greater"
    FN: ClassVar[str] = "greater"


@irdl_op_definition
class ClipOp(TernaryOp):
    """min(max(x, lo), hi) for operands (x, lo, hi), broadcast (ONNX Clip, ReLU6)"""

    name = "npu_graph.clip"
    FN: ClassVar[str] = "clip"


@irdl_op_definition
class WhereOp(TernaryOp):
    """a where cond != 0, else b, for operands (cond, a, b), broadcast (ONNX Where)"""

    name = "npu_graph.where"
    FN: ClassVar[str] = "where"


@irdl_op_definition
class ExpandOp(UnaryOp):
    """x broadcast to the result type's shape (ONNX Expand): an elementwise copy whose
    input broadcasts into the output tile."""

    name = "npu_graph.expand"
    FN: ClassVar[str] = "copy"

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    def infer_shape(self) -> tuple[int, ...] | None:
        return broadcast_shapes(shape_of(self.input), shape_of(self.result))

    def verify_(self) -> None:
        x, out = shape_of(self.input), shape_of(self.result)
        self._expect_result_shape(self.infer_shape(), f"broadcasting {list(x)} to {list(out)}")

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.broadcast_to(inputs[0], shape_of(self.result)).copy(),)


@irdl_op_definition
class MaxPoolOp(GraphOp):
    """2-D max pooling over NCHW (`pool_ref` of kind "max"); padded positions never win.
    It has a hand-written tiling (`lowering/tile/tile_search.py`); other spatial ranks are
    `npu_graph.maxpool_nd`."""

    name = "npu_graph.maxpool"
    input = operand_def(TensorType)
    kernel = opt_attr_def(DenseArrayBase)
    strides = opt_attr_def(DenseArrayBase)
    pads = opt_attr_def(DenseArrayBase)
    dilations = opt_attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, result_type: TensorType, *, kernel: Sequence[int],
                 strides: Sequence[int], pads: Sequence[int] = (0, 0, 0, 0),
                 dilations: Sequence[int] = (1, 1)):
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "kernel": int_array(kernel), "strides": int_array(strides), "pads": int_array(pads),
            "dilations": int_array(dilations)})

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    @property
    def params(self) -> dict:
        return dict(kernel=ints(self.kernel, (1, 1)), strides=ints(self.strides, (1, 1)),
                    pads=ints(self.pads, (0, 0, 0, 0)), dilations=ints(self.dilations, (1, 1)))

    def verify_(self) -> None:
        x, p = shape_of(self.input), self.params
        check_window_params(self.name, x, p, "kernel")
        check_max_pool_pads(self.name, x, **p)
        self._expect_result_shape(pool_out_shape(x, **p), "pooling")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """One vector pass per window element over the result."""
        kh, kw = self.params["kernel"]
        return arch.vector_cycles(self.out_elements(out_shape), kh * kw, value_type(self.input))

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (pool_ref(inputs[0], "max", **self.params),)


@irdl_op_definition
class ReshapeOp(GraphOp):
    """Reshape to the result type's shape (row-major, same element count)."""

    name = "npu_graph.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type])

    def verify_(self) -> None:
        check_any_one_type(self)
        a, b = shape_of(self.input), shape_of(self.result)
        if int(np.prod(a)) != int(np.prod(b)):
            raise VerifyException(f"'npu_graph.reshape': {list(a)} and {list(b)} have different element counts")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """A view: no work."""
        return 0

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (inputs[0].reshape(shape_of(self.result)),)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `npu_graph.fused`: the values the kernel produces."""

    name = "npu_graph.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), NoMemoryEffect())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), FusedOp):
            raise VerifyException("'npu_graph.yield' must be inside 'npu_graph.fused'")


@irdl_op_definition
class FusedOp(GraphOp):
    """A group of graph ops that runs as one kernel. The body's block arguments
    are the operands; `npu_graph.yield` gives the results. `rule` names the
    fusion rule that formed it (so it can be toggled and reported)."""

    name = "npu_graph.fused"
    ins = var_operand_def(TensorType)
    kernel = opt_attr_def(StringAttr)
    rule = opt_attr_def(StringAttr)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), NoMemoryEffect())
    assembly_format = "`(` $ins `)` attr-dict `:` functional-type($ins, $outs) $body"

    def __init__(self, ins: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region, *,
                 kernel: str, rule: str):
        super().__init__(operands=[list(ins)], result_types=[list(result_types)], regions=[body],
                         attributes={"kernel": StringAttr(kernel), "rule": StringAttr(rule)})

    def verify_(self) -> None:
        block = self.body.block
        if [a.type for a in block.args] != [o.type for o in self.ins]:
            raise VerifyException(f"'npu_graph.fused': block argument types {[str(a.type) for a in block.args]} "
                                  f"must match the operand types {[str(o.type) for o in self.ins]}")
        term = block.last_op
        if isinstance(term, YieldOp) and [v.type for v in term.values] != [r.type for r in self.outs]:
            raise VerifyException(f"'npu_graph.fused': yielded types {[str(v.type) for v in term.values]} "
                                  f"must match the result types {[str(r.type) for r in self.outs]}")

    def ops(self) -> list[Operation]:
        return [op for op in self.body.block.ops if not isinstance(op, YieldOp)]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        env: dict[SSAValue, np.ndarray] = dict(zip(self.body.block.args, inputs))
        for op in self.body.block.ops:
            if isinstance(op, YieldOp):
                return tuple(env[v] for v in op.values)
            assert isinstance(op, GraphOp)
            for r, v in zip(op.results, evaluate_op(op, [env[o] for o in op.operands])):
                env[r] = v
        raise ValueError("fused body without yield")


def special_uses(op: Operation) -> tuple[str, ...]:
    """The special functions (`special.FUNCTIONS`) `op` evaluates, per element or per row."""
    if isinstance(op, ElementwiseOp):
        return special.ELTWISE_USES.get(op.FN, ())
    if isinstance(op, RowStatsOp):
        return ("exp",) if op.kind.data == "softmax" else ()
    if isinstance(op, StructuredOp):
        return op.SPECIAL if op.USES is None else op.USES
    return ()


def evaluate_op(op: GraphOp, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    return op.evaluate(*inputs)


GRAPH_OPS: list[type[IRDLOperation]] = [
    ConstantOp, Conv2dOp, ConvTransposeOp, GemmOp, MatMulOp, ReluOp, AddOp, MulOp, SubOp, DivOp,
    MaxPoolOp, ReshapeOp, FusedOp, YieldOp, SoftmaxOp, BatchNormOp, TransposeOp,
    # elementwise
    SigmoidOp, TanhOp, ErfOp, GeluOp, GeluTanhOp, SqrtOp, ExpOp, LogOp, NegOp, AbsOp, ReciprocalOp,
    TruncOp, ExpandOp, PowOp, PReluOp, MaxOp, MinOp, EqualOp, LessOp, GreaterOp, ClipOp, WhereOp,
    *SIMPLE_UNARY.values(), FmodOp, ModOp,
    # structured
    LayerNormOp, RowStatsOp, SoftmaxApplyOp, LayerNormApplyOp, AttentionOp, ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp, ConcatOp, SliceOp, GatherOp,
    TriluOp, LrnOp, AvgPoolOp, MaxPoolNdOp, PadOp,
    # element types
    QuantizeOp, DequantizeOp, RequantizeOp, CastOp, TableOp,
]

GRAPH_OP_BY_NAME: dict[str, type[IRDLOperation]] = {op.name: op for op in GRAPH_OPS}
ELEMENTWISE_OP_BY_FN: dict[str, type[ElementwiseOp]] = {
    op.FN: op for op in GRAPH_OPS if isinstance(op, type) and issubclass(op, ElementwiseOp)}
"""The `npu_graph` op computing each `ELEMENTWISE` function."""

NpuGraph = Dialect("npu_graph", list(GRAPH_OPS), [])


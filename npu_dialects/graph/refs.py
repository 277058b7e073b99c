"""`npu_graph` reference semantics: the pure numpy functions the ops' `evaluate` and the
simulator's tile kernels share (`conv2d_ref`, `gemm_ref`, `pool_ref`, the `ELEMENTWISE`
table of element functions, and the f32/narrow-float evaluation helpers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np

from npu_dialects import special
from npu_dialects.dtypes import compute_view
from npu_dialects.special import erf_ref

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


POOL_PAD = {"max": float("-inf"), "avg": float("nan"), "sum": 0.0}
"""What a pooling window reads outside its input, per kind: padding never wins a
max; NaN marks padding for an average (counted in the divisor only with
`count_include_pad`); zeros add nothing to a sum."""


def pool_ref(x: np.ndarray, kind: str, kernel: Sequence[int], strides: Sequence[int],
             pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
             count_include_pad: bool = False) -> np.ndarray:
    """Max (`kind` "max"), average ("avg") or sum ("sum") pooling over the last n = len(kernel)
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
    if kind == "sum":
        return total.astype(x.dtype, copy=False)
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
    y = wide(0.5) * v * (1 + special.tanh(inner))  # (numpy's tanh in float64 when exact)
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

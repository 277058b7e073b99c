"""Spatial and matrix generators of the fuzzer's op table: Conv (1-D, 2-D; kernels,
strides, dilations, pads or auto_pad, groups), ConvTranspose (output_padding,
output_shape), MaxPool, AveragePool, LpPool (ceil_mode, count_include_pad), the global
pools, MatMul (1-D and batched operands), Gemm (transA/transB, alpha, beta, C shapes),
Resize (every mode) and MaxPool's indices with MaxUnpool."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from tools.testkit.fuzz_builder import (
    Builder,
    Out,
    Tensor,
    matmul_shape,
)
from tools.testkit.fuzz_ops.table import OPS, OpGen, op, within_limits

# ======================================================================================
# Convolutions and pooling
# ======================================================================================


@dataclass
class _Window:
    """A sliding window over the spatial dims: kernel, strides, dilations, begin+end pads
    or an auto_pad mode, and the output sizes."""

    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    pads: list[int]
    auto_pad: str
    out: list[int]

    def attrs(self, b: Builder, dilations: bool = True) -> dict:
        n = len(self.kernel)
        a: dict = {"kernel_shape": self.kernel}
        if self.strides != [1] * n or b.coin(0.3):
            a["strides"] = self.strides
        if dilations and (self.dilations != [1] * n or b.coin(0.2)):
            a["dilations"] = self.dilations
        if self.auto_pad != "NOTSET":
            a["auto_pad"] = self.auto_pad
        elif any(self.pads) or b.coin(0.3):
            a["pads"] = self.pads
        return a


def _span(k: int, d: int) -> int:
    return (k - 1) * d + 1


def draw_window(b: Builder, spatial: Sequence[int], *, max_k: int = 3, dilate: bool = True, pads_below_k: bool = False,
                 ceil_mode: bool = False) -> _Window | None:
    """A random window over `spatial` with a non-empty output (None when none fits)."""
    n = len(spatial)
    kernel = [b.draw([1, 2, 3, 3, 5][: 4 if max_k < 5 else 5]) for _ in range(n)]
    kernel = [min(k, max_k) for k in kernel]
    strides = [b.draw([1, 1, 2, 3]) for _ in range(n)]
    dilations = [b.draw([1, 1, 1, 2]) if dilate else 1 for _ in range(n)]
    auto = b.draw(["NOTSET"] * 5 + ["SAME_UPPER", "SAME_LOWER", "VALID"])
    if auto.startswith("SAME") and any(d > 1 or s > k for k, s, d in zip(kernel, strides, dilations)):
        auto = "NOTSET"  # (onnxruntime: no dilations with SAME, negative pads when the stride passes the kernel)
    if auto == "NOTSET":
        pads = [b.randint(0, k - 1) if b.coin(0.5) else 0 for k in kernel * 2]
        if not pads_below_k:
            pads = [min(p, _span(k, d) - 1) for p, k, d in zip(pads, kernel * 2, dilations * 2)]
    else:
        pads = [0] * (2 * n)
    out = []
    for i, (x, k, s, d) in enumerate(zip(spatial, kernel, strides, dilations)):
        if auto.startswith("SAME"):
            o = -(-x // s)
        else:
            span = x + pads[i] + pads[n + i] - _span(k, d)
            if span < 0:
                return None
            o = (-(-span // s) if ceil_mode else span // s) + 1
            if ceil_mode and (o - 1) * s >= x + pads[i]:
                return None  # (ONNX drops a window starting in the end padding; its shape inference does not)
        out.append(o)
    return _Window(kernel, strides, dilations, pads, auto, out)


@op("Conv", weight=2.0, ranks=(3, 4))
def _conv(b: Builder, t: Tensor) -> Tensor | None:
    """1-D (rank 3, sometimes) or 2-D: kernels 1-5 (not square), strides, dilations,
    asymmetric pads or auto_pad, groups (depthwise too), a bias sometimes."""
    if t.rank == 3 and b.coin(0.4):
        return None
    c = t.shape[1]
    w = draw_window(b, t.shape[2:])
    if w is None:
        return None
    group = b.draw([g for g in range(1, c + 1) if c % g == 0]) if b.coin(0.3) else 1
    co = group * b.randint(1, max(1, 8 // group)) if group < c or b.coin(0.5) else c
    shape = (t.shape[0], co, *w.out)
    if not within_limits(shape):
        return None
    fan_in = c // group * int(np.prod(w.kernel))
    args: list[Tensor | str] = [t, b.normal([co, c // group, *w.kernel], 1 / math.sqrt(fan_in))]
    if b.coin(0.5):
        args.append(b.normal([co], 0.5))
    attrs = w.attrs(b)
    if group > 1 or b.coin(0.2):
        attrs["group"] = group
    if b.coin(0.3):
        del attrs["kernel_shape"]
    return b.node("Conv", args, shape, -2 * t.mag - 1.5, 2 * t.mag + 1.5, **attrs)


@op("CausalConvWithState", weight=8.0, since=27, ranks=(3, 3))
def _causal_conv(b: Builder, t: Tensor) -> Tensor | None:
    """A stateful causal depthwise 1-D conv [N, C, L] (kernel 2-4; a bias, a past state
    [N, C, k - 1] and the SiLU activation sometimes); its present state is a second
    output (always named: ONNX's shape inference fails on the node without it)."""
    n, c, _ = t.shape
    k = b.randint(2, 4)
    args: list[Tensor | str] = [t, b.normal([c, 1, k], 1 / math.sqrt(k)), b.normal([c], 0.5) if b.coin(0.5) else ""]
    if b.coin(0.5):
        args.append(b.normal([n, c, k - 1], 1.0))
    while args[-1] == "":
        args.pop()
    bound = 3 * max(t.mag, 3.0) + 2.0
    state = Out((n, c, k - 1), -max(t.mag, 5.0), max(t.mag, 5.0), exact=True)
    activation = b.draw(["none", "silu", "swish"]) if b.coin(0.6) else None
    attrs = {"activation": activation} if activation else {}
    return b.multi("CausalConvWithState", args, [Out(t.shape, -bound, bound), state], **attrs)[0]


@op("ConvTranspose", weight=1.2, ranks=(3, 4))
def _conv_transpose(b: Builder, t: Tensor) -> Tensor | None:
    """1-D or 2-D: strides, pads, output_padding, dilations, groups, output_shape or auto_pad."""
    c, n = t.shape[1], t.rank - 2
    spatial = t.shape[2:]
    kernel = [b.draw([1, 2, 3, 4]) for _ in range(n)]
    strides = [b.draw([1, 1, 2, 3]) for _ in range(n)]
    dil = [b.draw([1, 1, 2]) for _ in range(n)]
    group = b.draw([g for g in range(1, c + 1) if c % g == 0]) if b.coin(0.25) else 1
    co_g = b.randint(1, max(1, 6 // group))
    attrs: dict = {"strides": strides} if strides != [1] * n or b.coin(0.3) else {}
    if dil != [1] * n or b.coin(0.2):
        attrs["dilations"] = dil
    how = b.draw(["pads", "pads", "pads", "output_shape", "auto"])
    if how == "pads":
        pads = [b.randint(0, max(0, (k - 1) * d)) if b.coin(0.5) else 0 for k, d in zip(kernel * 2, dil * 2)]
        opad = [b.randint(0, s - 1) if b.coin(0.4) else 0 for s in strides]  # (onnxruntime: below the stride)
        out = [s * (x - 1) + o + _span(k, d) - p - q
               for x, k, s, d, o, p, q in zip(spatial, kernel, strides, dil, opad, pads[:n], pads[n:])]
        if any(pads) or b.coin(0.3):
            attrs["pads"] = pads
        if any(opad):
            attrs["output_padding"] = opad
    elif how == "output_shape":
        # (at least x * s: ONNX's shape inference gives up below)
        out = [max(s * (x - 1) + _span(k, d), x * s) for x, k, s, d in zip(spatial, kernel, strides, dil)]
        attrs["output_shape"] = out
    else:
        attrs["auto_pad"] = b.draw(["SAME_UPPER", "SAME_LOWER", "VALID"])
        if attrs["auto_pad"] != "VALID" and any(_span(k, d) < s for k, s, d in zip(kernel, strides, dil)):
            return None  # (a negative total padding: onnxruntime clamps it to 0, the ONNX reference does not)
        out = [x * s if attrs["auto_pad"] != "VALID" else s * (x - 1) + _span(k, d)
               for x, k, s, d in zip(spatial, kernel, strides, dil)]
    shape = (t.shape[0], co_g * group, *out)
    if min(out) < 1 or not within_limits(shape):
        return None
    args: list[Tensor | str] = [t, b.normal([c, co_g, *kernel], 1 / math.sqrt(c // group * int(np.prod(kernel))))]
    if b.coin(0.4):
        args.append(b.normal([co_g * group], 0.5))
    if group > 1:
        attrs["group"] = group
    if b.coin(0.5):
        attrs["kernel_shape"] = kernel
    return b.node("ConvTranspose", args, shape, -3 * t.mag - 1.5, 3 * t.mag + 1.5, **attrs)


def _pool(name: str) -> None:
    """MaxPool, AveragePool, LpPool over 1 or 2 spatial dims: kernels, strides, pads
    below the kernel, dilations (MaxPool 10, AveragePool 19, LpPool 18), ceil_mode."""
    dil_since = {"MaxPool": 10, "AveragePool": 19, "LpPool": 18}[name]
    ceil_since = {"MaxPool": 10, "AveragePool": 10, "LpPool": 18}[name]

    def gen(b: Builder, t: Tensor) -> Tensor | None:
        x = t
        ceil_mode = b.opset >= ceil_since and b.coin(0.3)
        w = draw_window(b, x.shape[2:], dilate=b.opset >= dil_since, pads_below_k=True, ceil_mode=ceil_mode)
        if w is None or ceil_mode and w.auto_pad != "NOTSET":
            return None
        shape = (*x.shape[:2], *w.out)
        attrs = w.attrs(b, dilations=b.opset >= dil_since)
        if ceil_mode:
            attrs["ceil_mode"] = 1
        lo, hi = x.lo, x.hi
        if name == "AveragePool" and b.coin(0.4):
            attrs["count_include_pad"] = int(b.coin(0.7))
            lo, hi = min(lo, 0), max(hi, 0)
        if name == "LpPool":
            p = b.draw([1, 2, 3])
            if p != 2 or b.coin(0.3):
                attrs["p"] = p
            lo, hi = 0.0, x.mag * int(np.prod(w.kernel))
        if name == "AveragePool" and w.auto_pad != "NOTSET":
            lo, hi = min(lo, 0), max(hi, 0)
        return b.node(name, [x], shape, lo, hi, exact=x.exact and name == "MaxPool", **attrs)
    OPS[name] = OpGen(gen, 1.5 if name != "LpPool" else 0.8, ranks=(3, 4))


for _name in ("MaxPool", "AveragePool", "LpPool"):
    _pool(_name)


def _global_pool(name: str) -> None:
    def gen(b: Builder, t: Tensor) -> Tensor:
        shape = (*t.shape[:2], *[1] * (t.rank - 2))
        attrs: dict = {"p": b.draw([1, 3])} if name == "GlobalLpPool" and b.coin(0.5) else {}
        hi = t.mag * int(np.prod(t.shape[2:])) if name == "GlobalLpPool" else t.hi
        lo = 0.0 if name == "GlobalLpPool" else t.lo
        return b.node(name, [t], shape, lo, hi, exact=t.exact and name == "GlobalMaxPool", **attrs)
    OPS[name] = OpGen(gen, 0.8, until=21 if name == "GlobalLpPool" else 99, ranks=(3, 4))  # (no kernel after 21)


for _name in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"):
    _global_pool(_name)


# ======================================================================================
# Matrix products
# ======================================================================================


@op("MatMul", weight=2.0)
def _matmul(b: Builder, t: Tensor) -> Tensor | None:
    """t @ W (a weight, 1-D or batched too), t @ another live tensor, or t @ t^T / t^T @ t."""
    k = t.shape[-1]
    choice = b.rng.random()
    if choice < 0.4:
        n = b.draw([1, 3, 8, b.randint(1, 17)])
        wshape = b.draw([[k, n], [k, n], [k], [b.randint(1, 3), k, n]])
        shape = matmul_shape(t.shape, tuple(wshape))
        if shape is None or not within_limits(shape or (1,)):
            return None
        return b.node("MatMul", [t, b.normal(wshape, 1 / math.sqrt(k))], shape, -2 * t.mag, 2 * t.mag)
    if choice < 0.7:
        def fits(p: Tensor) -> bool:
            s = matmul_shape(t.shape, p.shape)
            return p.is_float and s is not None and len(s) >= 1 and within_limits(s)
        p = b.partner(fits, t, same_shape=0.1)
        if p is not None and p is not t:
            shape = matmul_shape(t.shape, p.shape)
            assert shape is not None
            return b.node("MatMul", [t, p], shape, -t.mag * p.mag * k, t.mag * p.mag * k)
    if t.rank < 2 or t.mag > 5 or not within_limits((*t.shape[:-2], max(t.shape[-2:]), max(t.shape[-2:]))):
        return None
    perm = [*range(t.rank - 2), t.rank - 1, t.rank - 2]
    tt = b.node("Transpose", [t], [t.shape[p] for p in perm], t.lo, t.hi, perm=perm)
    a, c = (t, tt) if b.coin(0.5) else (tt, t)
    shape = matmul_shape(a.shape, c.shape)
    assert shape is not None
    m = t.mag * t.mag * a.shape[-1]
    return b.node("MatMul", [a, c], shape, -m, m)


@op("Gemm", weight=3.0, ranks=(2, 2))
def _gemm(b: Builder, t: Tensor) -> Tensor | None:
    """alpha * op(A) @ op(B) + beta * C: transA/transB, B a weight or a live matrix, C
    absent, a scalar, a row, a column or full."""
    trans_a = b.coin(0.3)
    m, k = (t.shape[1], t.shape[0]) if trans_a else t.shape
    trans_b = b.coin(0.5)
    bt = b.partner(lambda p: p.is_float and p.rank == 2 and (p.shape[1] if trans_b else p.shape[0]) == k
                   and p.mag <= 10, t, same_shape=0.0) if b.coin(0.3) else None
    if bt is not None and bt is not t:
        n = bt.shape[0] if trans_b else bt.shape[1]
        bv: Tensor | str = bt
        scale = bt.mag * k
    else:
        n = b.draw([1, 4, 7, b.randint(1, 16)])
        bv = b.normal([n, k] if trans_b else [k, n], 1 / math.sqrt(k))
        scale = 2.0
    if not within_limits((m, n)):
        return None
    alpha, beta = float(b.draw([1.0, 1.0, 0.5, -1.3])), float(b.draw([1.0, 1.0, 0.25, -2.0]))
    attrs: dict = {k_: v for k_, v in (("transA", int(trans_a)), ("transB", int(trans_b)), ("alpha", alpha),
                                 ("beta", beta)) if v != (0 if k_.startswith("trans") else 1.0) or b.coin(0.2)}
    args: list[Tensor | str] = [t, bv]
    cshape = b.draw([None, [], [n], [1, n], [m, 1], [m, n]])
    if cshape is not None:
        args.append(b.normal(cshape, 0.5))
    mag = abs(alpha) * t.mag * scale + abs(beta) * 2
    return b.node("Gemm", args, (m, n), -mag, mag, **attrs)


# ======================================================================================
# Resize, MaxPool indices and MaxUnpool
# ======================================================================================


def _resize_sizes(b: Builder, t: Tensor, axes: Sequence[int]) -> tuple[list[float] | None, list[int]]:
    """(scales, output sizes) or (None, sizes) for the resized axes: up or down, integer
    and fractional factors. (Not a scale other than 1 that leaves the size as it is:
    onnxruntime then copies the axis, the spec and ONNX's reference resample it.)"""
    if b.coin(0.5):
        scales = [float(b.draw([0.5, 2.0, 3.0, 1.5, 0.75, 1.0, 1.25])) for _ in axes]
        scales = [1.0 if math.floor(t.shape[a] * sc) == t.shape[a] else sc for a, sc in zip(axes, scales)]
        return scales, [int(math.floor(t.shape[a] * sc)) for a, sc in zip(axes, scales)]
    return None, [max(1, b.randint(max(1, t.shape[a] // 2), 2 * t.shape[a] + 1)) for a in axes]


@op("Resize", weight=1.2, since=11, ranks=(2, 4))
def _resize(b: Builder, t: Tensor) -> Tensor | None:
    """nearest (its four roundings), linear, cubic (coeff a, exclude_outside, antialias at
    18); every coordinate mode (tf_crop_and_resize with a roi and an extrapolation
    value); scales or sizes; the spatial axes, or `axes` (from 18) with
    keep_aspect_ratio_policy."""
    mode = b.draw(["nearest", "nearest", "linear", "cubic"])
    coord = b.draw(["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_crop_and_resize"]
                   + (["half_pixel_symmetric"] if b.opset >= 19 else []))
    axes = list(range(2, t.rank)) if t.rank > 2 else [t.rank - 1]
    attrs: dict = {"mode": mode} if mode != "nearest" or b.coin(0.5) else {}
    if b.opset >= 18 and b.coin(0.4):
        axes = sorted(int(a) for a in b.rng.choice(t.rank, size=b.randint(1, t.rank), replace=False))
        attrs["axes"] = [a - t.rank if b.coin(0.3) else a for a in axes]
    scales, sizes = _resize_sizes(b, t, axes)
    if coord == "tf_crop_and_resize":  # (not a size kept: onnxruntime then copies the axis, roi or not)
        scales, sizes = None, [b.draw([n for n in range(1, 2 * t.shape[a] + 1) if n != t.shape[a]] or [2])
                               for a in axes]
    if coord != "half_pixel" or b.coin(0.3):
        attrs["coordinate_transformation_mode"] = coord
    if mode == "nearest" and b.coin(0.6):
        attrs["nearest_mode"] = b.draw(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
    if mode == "cubic":
        attrs.update({k: v for k, v in (("cubic_coeff_a", -0.5), ("exclude_outside", 1)) if b.coin(0.3)})
    if mode != "nearest" and b.opset >= 18 and b.coin(0.3):
        attrs["antialias"] = 1
    full_axes = "axes" not in attrs
    if mode == "cubic" and not (t.rank == 2 or t.rank == 4 and min(axes) >= 2):
        return None  # (onnxruntime: bicubic over 2-D inputs or the spatial dims of 4-D ones only)
    if mode == "linear" and t.rank == 4 and min(axes) < 2:
        return None  # (onnxruntime: 4-D linear leaves N and C alone)
    if coord == "pytorch_half_pixel" and 1 in sizes:
        return None  # (lowering/importer/resize.py takes x = -0.5 there, as ONNX's reference; the spec, 0)
    shape = list(t.shape)
    for a, n in zip(axes, sizes):
        shape[a] = n
    if min(shape) < 1 or not within_limits(shape):
        return None
    roi: Tensor | str = ""
    if coord == "tf_crop_and_resize":
        lo = b.rng.uniform(-0.2, 0.4, len(axes))
        hi = lo + b.rng.uniform(0.3, 1.0, len(axes))
        if full_axes:
            lo, hi = np.concatenate([np.zeros(t.rank - len(axes)), lo]), np.concatenate([np.ones(t.rank - len(axes)), hi])
        roi = b.const(np.concatenate([lo, hi]).astype(np.float32))
        attrs["extrapolation_value"] = float(b.draw([0.0, -1.0]))
    if scales is not None:
        sc = [1.0] * (t.rank - len(axes)) + scales if full_axes else scales
        ins: list[Tensor | str] = [t, roi, b.const(np.array(sc, np.float32))]
    else:
        sz = list(t.shape[:t.rank - len(axes)]) + sizes if full_axes else sizes
        ins = [t, roi, "", b.ints(sz)]
    m = 2 * t.mag if mode == "cubic" else t.mag
    lo_v, hi_v = (-m, m) if mode == "cubic" or coord == "tf_crop_and_resize" else (t.lo, t.hi)
    return b.node("Resize", ins, shape, min(lo_v, -1.0), max(hi_v, 1.0), exact=mode == "nearest" and t.exact,
                  **attrs)


@op("MaxUnpool", since=11, ranks=(3, 4))
def _max_unpool(b: Builder, t: Tensor) -> Tensor | None:
    """MaxPool with its Indices output (storage_order 0 or 1) on an exact tensor, then
    MaxUnpool of its values and indices (the pooled shape back, or an output_shape
    input); the indices alone, cast to float, sometimes."""
    x = b.exact_float(t)
    if x.rank not in (3, 4):
        return None
    w = draw_window(b, x.shape[2:], dilate=False, pads_below_k=True)
    if w is None or w.auto_pad != "NOTSET":
        return None
    pooled = (*x.shape[:2], *w.out)
    attrs = w.attrs(b, dilations=False)
    order = {"storage_order": 1} if b.coin(0.3) else {}
    y, idx = b.multi("MaxPool", [x], [Out(pooled, x.lo, x.hi, exact=True),
                                      Out(pooled, 0, x.size - 1, "int64", exact=True)], **attrs, **order)
    if b.coin(0.2):
        return b.node("Cast", [idx], pooled, 0, x.size - 1, exact=True, to=TensorProto.FLOAT)
    if order:
        return y  # (MaxUnpool reads row-major indices)
    attrs.pop("auto_pad", None)
    default = [(o - 1) * s + k - p - q for o, s, k, p, q in
               zip(w.out, w.strides, w.kernel, w.pads[:len(w.out)], w.pads[len(w.out):])]
    if min(default) < 1:
        return y  # (onnxruntime checks this formula's dims even beside an output_shape: seed 205795)
    ins: list[Tensor | str] = [y, idx]
    shape = [*x.shape[:2], *default]
    if list(x.shape[2:]) != default or b.coin(0.3):
        if any(d > s for d, s in zip(default, x.shape[2:])):
            return y
        ins.append(b.ints(list(x.shape)))
        shape = list(x.shape)
    if min(shape) < 1:
        return y
    return b.node("MaxUnpool", ins, shape, min(x.lo, 0), max(x.hi, 0), exact=True, **attrs)

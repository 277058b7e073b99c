"""Resize (opsets 10..) and Upsample (7..9): converters of the ONNX importer.

Every mode of the spec: `nearest` (the four nearest_modes), `linear` and `cubic`
(cubic_coeff_a, exclude_outside, antialias), every coordinate_transformation_mode
(half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric,
tf_crop_and_resize with its roi and extrapolation_value), `axes` and
keep_aspect_ratio_policy. Assumes static shapes and constant roi, scales and sizes
(which exporters give: they are computed from shapes); a computed one is diagnosed.
Resize-10 and Upsample are Resize with asymmetric coordinates and, for nearest,
the floor rounding.

Algorithm
---------
Resize is separable: each resized axis is a linear map of its own, an `[out, in]`
matrix built here with numpy from the spec's formulas (source coordinate of each
output position, the mode's coefficients on its neighbours, edge clamping). A
matrix with one 1.0 per row (nearest) is an index map along the axis: a broadcast
(`npu_graph.expand`) when it repeats every element k times (integer upsampling
with floor rounding, the common nearest case), else an `npu_graph.gather`. Any other
matrix is a matmul on the cube: `x @ Mᵀ` for the last axis, `M @ x` for the second
to last (batch dims broadcast), a transpose around it for the others. Output positions
that tf_crop_and_resize extrapolates get extrapolation_value through a 0/1 mask.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue

from lowering.importer.base import NodeContext, NodeError, Output, converter, f32_tensor
from lowering.importer.elementwise import eltwise
from npu_dialects.graph import (
    AddOp,
    ExpandOp,
    GatherOp,
    MatMulOp,
    MulOp,
    ReshapeOp,
    TransposeOp,
)

_MODES = ("nearest", "linear", "cubic")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_COORD_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                "tf_crop_and_resize")


@dataclass(frozen=True)
class Params:
    """The interpolation attributes of a Resize node."""

    mode: str = "nearest"
    coord: str = "half_pixel"
    nearest: str = "round_prefer_floor"
    cubic_a: float = -0.75
    exclude_outside: bool = False
    antialias: bool = False
    extrapolation: float = 0.0


def source_coords(p: Params, out_n: int, scale: float, in_n: int,
                  roi: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The input coordinate each output position reads (float64) and which positions
    tf_crop_and_resize extrapolates (all False for the other modes). align_corners and
    tf_crop_and_resize divide by the output length less one, as onnxruntime does (onnx's
    reference takes scale * in_n, which differs when that is not an integer)."""
    y = np.arange(out_n, dtype=np.float64)
    width = scale * in_n  # the output width before rounding (pytorch_half_pixel, half_pixel_symmetric)
    outside = np.zeros(out_n, dtype=bool)
    if p.coord == "align_corners":
        x = np.zeros(out_n) if out_n == 1 else y * (in_n - 1) / (out_n - 1)
    elif p.coord == "asymmetric":
        x = y / scale
    elif p.coord == "tf_crop_and_resize":
        lo, hi = roi
        x = np.full(out_n, (hi - lo) * (in_n - 1) / 2) if out_n == 1 else y * (hi - lo) * (in_n - 1) / (out_n - 1)
        x = x + lo * (in_n - 1)
        outside = (x < 0) | (x > in_n - 1)
    elif p.coord == "pytorch_half_pixel":
        x = np.full(out_n, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    elif p.coord == "half_pixel_symmetric":
        offset = in_n / 2 * (1 - out_n / width)
        x = offset + (y + 0.5) / scale - 0.5
    else:
        x = (y + 0.5) / scale - 0.5
    if p.mode == "nearest":  # (floor, ceil and rounding decide at whole and half coordinates: exactly)
        x = snap_halves(x)
    return x, outside


SNAP = 1e-9
"""How close (relative to max(1, |x|)) a float64 source coordinate must come to a whole or
half number to be that number (`snap_halves`)."""


def snap_halves(x: np.ndarray) -> np.ndarray:
    """Source coordinates within `SNAP` of a multiple of 1/2 set to it. The coordinate
    modes are ratios of small integers, exact on paper; float64 evaluation leaves them an
    ulp or so off, which decides a nearest mode's floor or ceil at a whole number (and its
    rounding at a half) the wrong way: half_pixel_symmetric with 7 -> 10 (scale 1.5)
    puts output 0 at 1/6 + 1/3 - 1/2 = 0, computed as 1.1e-16, whose ceil is input 1,
    not 0 (onnxruntime, in float32, lands on 0; onnx's reference takes 1)."""
    halves = np.rint(2 * x) / 2
    return np.where(np.abs(x - halves) <= SNAP * np.maximum(1.0, np.abs(x)), halves, x)


def _coeffs(p: Params, ratio: float, scale: float) -> np.ndarray:
    """The weights of the neighbours of a source coordinate whose distance past its left
    neighbour is `ratio` (in (0, 1]), for the node's mode."""
    if p.mode == "nearest":
        if ratio == 1.0:
            return np.array([0.0, 1.0])
        up = {"round_prefer_floor": ratio > 0.5, "round_prefer_ceil": ratio >= 0.5, "floor": False,
              "ceil": True}[p.nearest]
        return np.array([0.0, 1.0]) if up else np.array([1.0, 0.0])
    if p.antialias and scale < 1.0:
        return _antialias_coeffs(p, ratio, scale)
    if p.mode == "linear":
        return np.array([1.0 - ratio, ratio])
    a = p.cubic_a
    r, s = ratio, 1.0 - ratio
    return np.array([((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                     ((a + 2) * r - (a + 3)) * r * r + 1,
                     ((a + 2) * s - (a + 3)) * s * s + 1,
                     ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a])


def _antialias_coeffs(p: Params, ratio: float, scale: float) -> np.ndarray:
    """Downsampling with antialias: the linear (triangle) or cubic kernel stretched by
    1/scale, normalised."""
    if p.mode == "linear":
        start = math.floor(-1 / scale) + 1
        t = (np.arange(start, 2 - start) - ratio) * scale
        w = np.clip(1 - np.abs(t), 0, 1)
    else:
        a = p.cubic_a
        start = math.floor(-2 / scale) + 1
        t = np.abs((np.arange(start, 2 - start) - ratio) * scale)
        w = np.where(t <= 1, (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1,
                     np.where(t < 2, a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a, 0.0))
    return w / w.sum()


def axis_matrix(p: Params, in_n: int, out_n: int, scale: float,
                roi: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray]:
    """The `[out_n, in_n]` float64 matrix of the resize along one axis, and the mask of
    extrapolated output positions (their rows are zero)."""
    x, outside = source_coords(p, out_n, scale, in_n, roi)
    m = np.zeros((out_n, in_n))
    for row, xo in enumerate(x):
        if outside[row]:
            continue
        left = math.floor(xo)
        w = _coeffs(p, 1.0 if xo == left else xo - left, scale)
        n = len(w)
        # the n neighbours nearest to xo, ties to the smaller index (as the spec's reference)
        pad = math.ceil(n / 2)
        xp = xo + pad
        base = math.floor(xp)
        frac = xp - base
        if n % 2 == 0:
            start = base - n // 2 + (0 if frac == 0 else 1)
        else:
            start = base - (n - 1) // 2 + (0 if frac <= 0.5 else 1)
        idx = np.arange(start, start + n) - pad
        if p.exclude_outside:
            w = np.where((idx < 0) | (idx >= in_n), 0.0, w)
            w = w / (w.sum() or 1.0)
        np.add.at(m[row], np.clip(idx, 0, in_n - 1), w)
    return m, outside


def _plan(shape: Sequence[int], scales: np.ndarray | None, sizes: np.ndarray | None, axes: Sequence[int],
          policy: str) -> tuple[list[float], list[int]]:
    """Per axis of the input: (scale, output size), as the spec derives them from
    `scales` or `sizes` over `axes` and keep_aspect_ratio_policy."""
    r = len(shape)
    if sizes is not None:
        if len(sizes) != len(axes):
            raise NodeError(f"sizes has {len(sizes)} values for {len(axes)} axes")
        out = list(shape)
        for a, s in zip(axes, sizes):
            out[a] = int(s)
        factors = [out[i] / shape[i] for i in range(r)]
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            common = pick(factors[a] for a in axes)
            factors = [common if i in axes else 1.0 for i in range(r)]
            out = [int(common * shape[i] + 0.5) if i in axes else shape[i] for i in range(r)]
        return factors, out
    assert scales is not None
    if len(scales) != len(axes):
        raise NodeError(f"scales has {len(scales)} values for {len(axes)} axes")
    full = np.ones(r, dtype=scales.dtype)
    full[list(axes)] = scales
    if (full <= 0).any():
        raise NodeError(f"scales must be positive, got {scales.tolist()}")
    return [float(s) for s in full], [int(v) for v in (full * np.array(shape))]


def _repeat(m: np.ndarray) -> int:
    """k when the matrix `m` repeats every input element k times in order, else 0."""
    k = m.shape[0] // m.shape[1]
    ok = m.shape[0] == k * m.shape[1] and np.array_equal(m, np.eye(m.shape[1])[np.arange(m.shape[0]) // k])
    return k if ok else 0


def _repeated(ctx: NodeContext, v: SSAValue, shape: tuple[int, ...], reps: dict[int, int]) -> SSAValue:
    """`v` with every element repeated reps[a] times along each axis a: one broadcast of
    a reshape with a unit axis after each such axis."""
    wide = tuple(d for a, n in enumerate(shape) for d in ((n, 1) if a in reps else (n,)))
    rep = tuple(d for a, n in enumerate(shape) for d in ((n, reps[a]) if a in reps else (n,)))
    out = tuple(n * reps.get(a, 1) for a, n in enumerate(shape))
    v = ctx.build(ReshapeOp(v, f32_tensor(wide))).results[0]
    v = ctx.build(ExpandOp(v, f32_tensor(rep))).results[0]
    return ctx.build(ReshapeOp(v, f32_tensor(out))).results[0]


def _along(ctx: NodeContext, v: SSAValue, shape: tuple[int, ...], axis: int, m: np.ndarray) -> SSAValue:
    """`v` resized along `axis` by the matrix `m` ([out, in]): a gather when every row
    picks one element, else a matmul."""
    out = shape[:axis] + (m.shape[0],) + shape[axis + 1:]
    picks = m.argmax(axis=1)
    if np.array_equal(m, np.eye(m.shape[1])[picks]):
        return ctx.build(GatherOp(v, ctx.const(picks, "indices"), axis, f32_tensor(out))).results[0]
    rank = len(shape)
    if axis == rank - 1:
        return ctx.build(MatMulOp(v, ctx.const(m.T, "interp"), f32_tensor(out))).results[0]
    if axis == rank - 2:
        return ctx.build(MatMulOp(ctx.const(m, "interp"), v, f32_tensor(out))).results[0]
    perm = [d for d in range(rank) if d != axis] + [axis]
    moved = tuple(shape[d] for d in perm)
    v = ctx.build(TransposeOp(v, perm, f32_tensor(moved))).results[0]
    v = ctx.build(MatMulOp(v, ctx.const(m.T, "interp"), f32_tensor(moved[:-1] + (m.shape[0],)))).results[0]
    back = [perm.index(d) for d in range(rank)]
    return ctx.build(TransposeOp(v, back, f32_tensor(out))).results[0]


def resize(ctx: NodeContext, p: Params, factors: Sequence[float], out: Sequence[int],
           roi: np.ndarray | None) -> Output:
    """Input 0 resized to `out` with per-axis `factors` (`roi`: [starts..., ends...] over
    all axes, for tf_crop_and_resize): the repeating axes first, in one broadcast, then
    each other resized axis."""
    shape = tuple(ctx.shape(0))
    if any(n <= 0 for n in out):
        raise NodeError(f"the result of shape {list(out)} is empty; empty tensors are not supported")
    r = len(shape)
    inside = np.ones(tuple(out), dtype=bool)
    maps: dict[int, np.ndarray] = {}
    for a in range(r):
        lo, hi = (float(roi[a]), float(roi[a + r])) if roi is not None else (0.0, 1.0)
        crop = p.coord == "tf_crop_and_resize" and (lo, hi) != (0.0, 1.0)
        if math.isclose(factors[a], 1.0) and out[a] == shape[a] and not crop:
            continue
        maps[a], outside = axis_matrix(p, shape[a], out[a], factors[a], (lo, hi))
        inside &= ~outside.reshape([-1 if d == a else 1 for d in range(r)])
    reps = {a: k for a, m in maps.items() if (k := _repeat(m))}
    v, now = ctx.value(0), shape
    if reps:
        v = _repeated(ctx, v, now, reps)
        now = tuple(n * reps.get(a, 1) for a, n in enumerate(now))
    for a, m in maps.items():
        if a not in reps:
            v = _along(ctx, v, now, a, m)
            now = now[:a] + (out[a],) + now[a + 1:]
    if not inside.all():
        v = eltwise(ctx, MulOp, v, ctx.const(inside, "inside"))
        if p.extrapolation != 0.0:
            v = eltwise(ctx, AddOp, v, ctx.const(np.where(inside, 0.0, p.extrapolation), "extrapolated"))
    return ctx.typed(v, ctx.dtype(0))


def _choice(ctx: NodeContext, name: str, default: str, allowed: Sequence[str]) -> str:
    v = str(ctx.attr(name, default))
    if v not in allowed:
        raise NodeError(f"{name} '{v}' is not one of {', '.join(allowed)}")
    return v


def _optional_constant(ctx: NodeContext, i: int, what: str) -> np.ndarray | None:
    """Input `i` as constant data, None when absent or empty."""
    if not ctx.has_input(i):
        return None
    data = np.asarray(ctx.constant(i, what))
    return data if data.size else None


@converter("Resize", attrs=("antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a",
                            "exclude_outside", "extrapolation_value", "keep_aspect_ratio_policy", "mode",
                            "nearest_mode"))
def convert_resize(ctx: NodeContext) -> Sequence[Output]:
    """Resize with constant roi, scales or sizes (see the module docstring)."""
    shape = ctx.shape(0)
    mode = _choice(ctx, "mode", "nearest", _MODES)
    if ctx.opset < 11:  # Resize-10: X, scales; asymmetric coordinates, floor rounding
        p = Params(mode, "asymmetric", "floor")
        scales, sizes, roi = _optional_constant(ctx, 1, "scales"), None, None
    else:
        p = Params(mode, _choice(ctx, "coordinate_transformation_mode", "half_pixel", _COORD_MODES),
                   _choice(ctx, "nearest_mode", "round_prefer_floor", _NEAREST_MODES),
                   float(ctx.attr("cubic_coeff_a", -0.75)), bool(int(ctx.attr("exclude_outside", 0))),
                   bool(int(ctx.attr("antialias", 0))), float(ctx.attr("extrapolation_value", 0.0)))
        roi = _optional_constant(ctx, 1, "roi")
        scales, sizes = _optional_constant(ctx, 2, "scales"), _optional_constant(ctx, 3, "sizes")
    if (scales is None) == (sizes is None):
        raise NodeError("exactly one of scales and sizes must be given")
    axes = [a % len(shape) if -len(shape) <= a < len(shape) else -1
            for a in ctx.ints_attr("axes", range(len(shape)))]
    if -1 in axes or len(set(axes)) != len(axes):
        raise NodeError(f"axes {list(ctx.ints_attr('axes', ()))} are not distinct axes of a rank-{len(shape)} input")
    if roi is not None and len(axes) != len(shape):
        full = np.array([0.0] * len(shape) + [1.0] * len(shape))
        full[axes] = roi[:len(axes)]
        full[[a + len(shape) for a in axes]] = roi[len(axes):]
        roi = full
    if p.coord == "tf_crop_and_resize" and (roi is None or len(roi) != 2 * len(shape)):
        raise NodeError("tf_crop_and_resize needs a constant roi with a start and an end per axis")
    policy = _choice(ctx, "keep_aspect_ratio_policy", "stretch", ("stretch", "not_larger", "not_smaller"))
    factors, out = _plan(shape, scales, sizes, axes, policy)
    return [resize(ctx, p, factors, out, roi)]


@converter("Upsample", attrs=("mode", "scales"))
def convert_upsample(ctx: NodeContext) -> Sequence[Output]:
    """Upsample (opsets 7-9): Resize with asymmetric coordinates and floor rounding; the
    scales are an attribute at opset 7, an input from 9."""
    shape = ctx.shape(0)
    mode = _choice(ctx, "mode", "nearest", ("nearest", "linear", "bilinear"))
    if ctx.opset < 9:
        scales = np.asarray(ctx.attr("scales", []), dtype=np.float32)
    else:
        scales = np.asarray(ctx.constant(1, "scales"), dtype=np.float32)
    if len(scales) != len(shape):
        raise NodeError(f"scales has {len(scales)} values for a rank-{len(shape)} input")
    p = Params("linear" if mode == "bilinear" else mode, "asymmetric", "floor")
    factors, out = _plan(shape, scales, None, range(len(shape)), "stretch")
    return [resize(ctx, p, factors, out, None)]

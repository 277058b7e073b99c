"""Einsum, ReduceProd, MaxUnpool and MaxPool's Indices output: converters of the ONNX
importer built from existing `npu_graph` ops.

Assumes static shapes. Einsum takes any number of operands (contracted pairwise, left
to right), ellipses and repeated letters (diagonals); batch dims of the two operands of
a contraction must have equal sizes. MaxUnpool takes run-time indices (what MaxPool's
Indices output gives) and an optional constant output_shape.

Algorithm
---------
Einsum: per operand, a diagonal (a letter twice) is a product with an identity mask
and a sum over one of the two axes; letters neither the output nor the other operand
has are summed away. Two operands are then one batched matmul: each is transposed to
[batch, free, contracted] (resp. [batch, contracted, free]) and reshaped to rank 3; the
result is reshaped and transposed to the output's letter order.
ReduceProd: exp(sum(log|x|)) times the sign, (-1)^(number of negatives).
MaxPool with Indices: every window's elements are gathered at once (K kernel offsets
along a new leading axis, -inf for padding), the max is a reduction over that axis and
the index the constant flat index of its first hit (row- or column-major per
storage_order). MaxUnpool: per (n, c) plane, a one-hot of the indices against the
output positions (an equality with a constant iota), multiplied by the values.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
from xdsl.ir import SSAValue

from lowering.importer.base import (
    NodeContext,
    NodeError,
    Output,
    Tensor,
    axes_arg,
    converter,
    f32_tensor,
    norm_axes,
    prod_of,
)
from lowering.importer.elementwise import eltwise
from lowering.importer.scans import first_extreme
from npu_dialects.graph import (
    AbsOp,
    ConcatOp,
    DivOp,
    EqualOp,
    ExpOp,
    GatherOp,
    LessOp,
    LogOp,
    MatMulOp,
    MaxOp,
    ModOp,
    MulOp,
    ReduceMaxOp,
    ReduceOp,
    ReduceSumOp,
    ReshapeOp,
    SubOp,
    TransposeOp,
    shape_of,
)

# ----------------------------------------------------------------------------------------
# Small builders
# ----------------------------------------------------------------------------------------


def reshape_value(ctx: NodeContext, v: SSAValue, shape: Sequence[int]) -> SSAValue:
    """`v` reshaped to `shape` (`v` itself when it already has that shape)."""
    if tuple(shape_of(v)) == tuple(shape):
        return v
    return ctx.build(ReshapeOp(v, f32_tensor(tuple(shape)))).results[0]


def transpose_value(ctx: NodeContext, v: SSAValue, perm: Sequence[int]) -> SSAValue:
    """`v` transposed by `perm` (`v` itself when `perm` is the identity)."""
    if list(perm) == list(range(len(perm))):
        return v
    shape = shape_of(v)
    return ctx.build(TransposeOp(v, list(perm), f32_tensor(tuple(shape[p] for p in perm)))).results[0]


def _sum(ctx: NodeContext, v: SSAValue, axes: Sequence[int], keep: bool = False) -> SSAValue:
    if not axes:
        return v
    out = ReduceOp.out_shape(shape_of(v), tuple(axes), keep)
    return ctx.build(ReduceSumOp(v, tuple(axes), keep, f32_tensor(out))).results[0]


# ----------------------------------------------------------------------------------------
# Einsum
# ----------------------------------------------------------------------------------------


def _terms(ctx: NodeContext, equation: str) -> tuple[list[str], str]:
    """The operands' letter strings and the output's, ellipses replaced by upper-case
    letters (one per broadcast dim), implicit outputs made explicit."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != ctx.num_inputs:
        raise NodeError(f"equation '{equation}' has {len(terms)} operands but the node {ctx.num_inputs} inputs")
    ell = max((len(ctx.shape(i)) - len(t.replace("...", "")) for i, t in enumerate(terms) if "..." in t),
              default=0)
    fill = "".join(chr(ord("A") + j) for j in range(ell))
    out_terms = []
    for i, t in enumerate(terms):
        if "..." in t:
            n = len(ctx.shape(i)) - len(t.replace("...", ""))
            t = t.replace("...", fill[ell - n:])
        if not t.isalpha() or len(t) != len(ctx.shape(i)):
            raise NodeError(f"equation term '{terms[i]}' does not name the {len(ctx.shape(i))} dims of input {i}")
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", fill)
    else:
        letters = "".join(out_terms)
        out = fill + "".join(sorted(c for c in set(letters) if c.islower() and letters.count(c) == 1))
    if not (out.isalpha() or out == "") or len(set(out)) != len(out) or any(c not in "".join(out_terms)
                                                                            for c in out):
        raise NodeError(f"equation '{equation}' has an invalid output term")
    return out_terms, out


def _undiagonal(ctx: NodeContext, v: SSAValue, term: str) -> tuple[SSAValue, str]:
    """`v` with every repeated letter of `term` reduced to its diagonal."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        p, q = term.index(c), term.index(c, term.index(c) + 1)
        shape = shape_of(v)
        mask = np.zeros([shape[d] if d in (p, q) else 1 for d in range(len(shape))], dtype=np.float32)
        idx = [0] * len(shape)
        for i in range(shape[p]):
            idx[p] = idx[q] = i
            mask[tuple(idx)] = 1.0
        v = _sum(ctx, eltwise(ctx, MulOp, v, ctx.const(mask, "diagonal")), [q])
        term = term[:q] + term[q + 1:]
    return v, term


def _keep_only(ctx: NodeContext, v: SSAValue, term: str, needed: str) -> tuple[SSAValue, str]:
    """`v` summed over the letters of `term` not in `needed`."""
    axes = [i for i, c in enumerate(term) if c not in needed]
    return _sum(ctx, v, axes), "".join(c for c in term if c in needed)


def _contract(ctx: NodeContext, a: SSAValue, ta: str, b: SSAValue, tb: str, keep: str) -> tuple[SSAValue, str]:
    """The product of `a` and `b` summed over their common letters not in `keep`: one
    batched matmul between transposes and reshapes."""
    sa, sb = dict(zip(ta, shape_of(a))), dict(zip(tb, shape_of(b)))
    batch = [c for c in ta if c in tb and c in keep]
    red = [c for c in ta if c in tb and c not in keep]
    left, right = [c for c in ta if c not in tb], [c for c in tb if c not in ta]
    bad = [c for c in batch + red if sa[c] != sb[c]]
    if bad:
        raise NodeError(f"dim '{bad[0]}' has size {sa[bad[0]]} in one operand and {sb[bad[0]]} in the other")
    size = lambda cs, s: prod_of([s[c] for c in cs])  # noqa: E731
    a = transpose_value(ctx, a, [ta.index(c) for c in batch + left + red])
    a = reshape_value(ctx, a, (size(batch, sa), size(left, sa), size(red, sa)))
    b = transpose_value(ctx, b, [tb.index(c) for c in batch + red + right])
    b = reshape_value(ctx, b, (size(batch, sb), size(red, sb), size(right, sb)))
    out3 = (size(batch, sa), size(left, sa), size(right, sb))
    y = ctx.build(MatMulOp(a, b, f32_tensor(out3))).results[0]
    term = "".join(batch + left + right)
    return reshape_value(ctx, y, [sa[c] if c in sa else sb[c] for c in term]), term


@converter("Einsum", attrs=("equation",))
def convert_einsum(ctx: NodeContext) -> Sequence[Output]:
    """Einsum as diagonals, sums and batched matmuls (see the module docstring)."""
    terms, out = _terms(ctx, str(ctx.attr("equation", "")))
    vals = []
    for i, t in enumerate(terms):
        v, t = _undiagonal(ctx, ctx.value(i), t)
        others = out + "".join(terms[j] for j in range(len(terms)) if j != i)
        vals.append(_keep_only(ctx, v, t, others))
    v, t = vals[0]
    for k, (w, tw) in enumerate(vals[1:], start=1):
        keep = out + "".join(terms[k + 1:])
        v, t = _contract(ctx, v, t, w, tw, keep)
    v, t = _keep_only(ctx, v, t, out)
    v = transpose_value(ctx, v, [t.index(c) for c in out])
    if not out:
        v = reshape_value(ctx, v, ())
    return [ctx.typed(v, ctx.dtype(0))]


# ----------------------------------------------------------------------------------------
# ReduceProd
# ----------------------------------------------------------------------------------------


@converter("ReduceProd", attrs=("axes", "keepdims", "noop_with_empty_axes"))
def convert_reduce_prod(ctx: NodeContext) -> Sequence[Output]:
    """The product over `axes` (attribute before opset 18, input after): exp of the sum
    of log|x| (a zero gives log 0 = -inf, exp -inf = 0), times (-1)^(negatives)."""
    x = ctx.shape(0)
    axes = axes_arg(ctx, 18)
    if not axes:
        if int(ctx.attr("noop_with_empty_axes", 0)):
            return [ctx.tensor(0)]
        axes = tuple(range(len(x)))
    axes = norm_axes(axes, max(len(x), 1)) if x else ()
    keep = bool(int(ctx.attr("keepdims", 1)))
    out = ReduceOp.out_shape(x, axes, keep)
    if prod_of(out) == 0 or any(x[a] == 0 for a in axes):
        data = np.ones(out, np.float32)  # (constant data: the empty product is 1)
        return [Tensor(ctx.node.output[0], out, data.dtype, data=data, origin=ctx.label)]
    v = ctx.value(0)
    mag = eltwise(ctx, ExpOp, _sum(ctx, eltwise(ctx, LogOp, eltwise(ctx, AbsOp, v)), axes, keep))
    negatives = _sum(ctx, eltwise(ctx, LessOp, v, ctx.scalar(0.0)), axes, keep)
    odd = eltwise(ctx, ModOp, negatives, ctx.scalar(2.0))
    sign = eltwise(ctx, SubOp, ctx.scalar(1.0), eltwise(ctx, MulOp, odd, ctx.scalar(2.0)))
    return [eltwise(ctx, MulOp, mag, sign)]


# ----------------------------------------------------------------------------------------
# MaxPool's Indices, MaxUnpool
# ----------------------------------------------------------------------------------------


def window_flat_indices(x: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                        dilations: Sequence[int], out: Sequence[int], column_major: bool) -> np.ndarray:
    """[K, *out] int64: for each kernel offset and output position, the flat index (over
    the whole input, ONNX's Indices numbering) of the element it reads, -1 in padding."""
    n = len(kernel)
    spatial = x[2:]
    res = np.full((prod_of(kernel), *out), -1, dtype=np.int64)
    grids = np.meshgrid(*[np.arange(o) for o in out[2:]], indexing="ij")
    plane = np.arange(out[0] * out[1]).reshape(out[0], out[1], *([1] * n)) * prod_of(spatial)
    for k, off in enumerate(itertools.product(*[range(kk) for kk in kernel])):
        coords = [g * s - p + o * d for g, s, p, o, d in zip(grids, strides, pads[:n], off, dilations)]
        valid = np.all([(c >= 0) & (c < size) for c, size in zip(coords, spatial)], axis=0)
        clipped = [np.clip(c, 0, size - 1) for c, size in zip(coords, spatial)]
        flat = np.ravel_multi_index(clipped, spatial, order="F" if column_major else "C")
        res[k] = np.where(valid, plane + flat, -1)
    return res


def maxpool_with_indices(ctx: NodeContext, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                         dilations: Sequence[int], out: Sequence[int]) -> list[Output]:
    """MaxPool's Values and Indices outputs: all windows gathered along a new leading axis
    (-inf for padding), their max, and the flat index of its first hit."""
    x = ctx.shape(0)
    idx = window_flat_indices(x, kernel, strides, pads, dilations, out, False)
    numbered = window_flat_indices(x, kernel, strides, pads, dilations, out, bool(int(ctx.attr("storage_order", 0))))
    n = prod_of(x)
    flat = reshape_value(ctx, ctx.value(0), (n,))
    padded = ctx.build(ConcatOp([flat, ctx.const(np.full(1, -np.inf), "pad")], 0, f32_tensor((n + 1,)))).results[0]
    gathered = ctx.build(GatherOp(padded, ctx.const(np.where(idx < 0, n, idx), "windows"), 0,
                                  f32_tensor(idx.shape))).results[0]
    values = ctx.build(ReduceMaxOp(gathered, (0,), False, f32_tensor(tuple(out)))).results[0]
    hot = first_extreme(ctx, gathered, idx.shape, 0, True, False)
    where = _sum(ctx, eltwise(ctx, MulOp, hot, ctx.const(np.maximum(numbered, 0), "flat")), [0])
    return [values, ctx.typed(where, np.int64, 1)]


UNPOOL_DENSE_MAX = 1 << 22
"""The largest one-hot (input elements x output elements) MaxUnpool builds over the whole
tensor; larger ones are per (n, c) plane."""


@converter("MaxUnpool", attrs=("kernel_shape", "pads", "strides"))
def convert_max_unpool(ctx: NodeContext) -> Sequence[Output]:
    """Values scattered to their (run-time) flat indices in zeros of the output shape
    (output_shape input, else the default unpooled size): the values times a one-hot of
    the indices against the output positions, a matmul; a position named more than once
    (overlapping windows pick the same max) takes the mean of its values, the one-hot's
    column sums counting them. Over the whole tensor when the
    one-hot has at most UNPOOL_DENSE_MAX elements; else per (n, c) plane, which assumes
    each index lies in its own plane of the output (as when the output has the shape of
    the MaxPool input the indices came from)."""
    x = ctx.shape(0)
    kernel = ctx.ints_attr("kernel_shape", ())
    k = len(kernel)
    if not kernel or len(x) != k + 2:
        raise NodeError(f"input {list(x)} must be [N, C] and one spatial dim per kernel_shape value {list(kernel)}")
    strides = ctx.ints_attr("strides", [1] * k)
    pads = ctx.ints_attr("pads", [0] * 2 * k)
    default = [(x[2 + i] - 1) * strides[i] - pads[i] - pads[k + i] + kernel[i] for i in range(k)]
    out = (x[0], x[1], *default)
    if ctx.has_input(2):
        out = tuple(int(v) for v in ctx.constant(2, "output_shape").reshape(-1))
        if len(out) != len(x) or out[:2] != tuple(x[:2]):
            raise NodeError(f"output_shape {list(out)} must be [N, C, spatial...] of input {list(x)}")
    planes, hw_in, hw_out = x[0] * x[1], prod_of(x[2:]), prod_of(out[2:])
    if prod_of(x) * prod_of(out) <= UNPOOL_DENSE_MAX:
        planes, hw_in, hw_out = 1, prod_of(x), prod_of(out)
    if ctx.shape(1) != tuple(x):
        raise NodeError(f"indices of shape {list(ctx.shape(1))} must have the shape of X {list(x)}")
    offsets = (np.arange(planes) * hw_out).reshape(planes, 1, 1)
    local = eltwise(ctx, SubOp, reshape_value(ctx, ctx.value(1, carried=True), (planes, hw_in, 1)),
                     ctx.const(offsets, "plane_offsets"))
    onehot = eltwise(ctx, EqualOp, local, ctx.const(np.arange(hw_out).reshape(1, 1, hw_out), "positions"))
    vals = reshape_value(ctx, ctx.value(0), (planes, 1, hw_in))
    y = ctx.build(MatMulOp(vals, onehot, f32_tensor((planes, 1, hw_out)))).results[0]
    ones = ctx.const(np.ones((1, 1, hw_in)), "ones")
    count = ctx.build(MatMulOp(ones, onehot, f32_tensor((planes, 1, hw_out)))).results[0]
    y = eltwise(ctx, DivOp, y, eltwise(ctx, MaxOp, count, ctx.scalar(1.0)))
    return [reshape_value(ctx, y, out)]

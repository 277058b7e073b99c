"""Scans along one axis, built from `npu_graph` ops, that converters of two families
share: running sums (CumSum, in nn.py) and the one-hot of the first maximum or minimum
(ArgMax/ArgMin, TopK, Hardmax in nn.py; MaxPool's Indices output in indexing.py).
"""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from lowering.importer.base import NodeContext, f32_tensor
from lowering.importer.elementwise import eltwise
from npu_dialects.graph import EqualOp, MatMulOp, MulOp, ReduceMaxOp, ReduceMinOp, ReduceOp, TransposeOp


def running_sum(ctx: NodeContext, xv: SSAValue, x: tuple[int, ...], axis: int, exclusive: bool,
                reverse: bool) -> SSAValue:
    """Running sums of `xv` (shape `x`) along `axis`: a matmul with a 0/1 triangular
    constant (the cube does the adds); other axes are transposed to the last and back."""
    n = x[axis]
    j, i = np.indices((n, n))
    keep = (j >= i) if reverse else (j <= i)
    if exclusive:
        keep &= j != i
    tri = ctx.const(keep, "triangle")
    perm = [d for d in range(len(x)) if d != axis] + [axis]
    moved = tuple(x[d] for d in perm)
    if axis != len(x) - 1:
        xv = ctx.build(TransposeOp(xv, perm, f32_tensor(moved))).results[0]
    y = ctx.build(MatMulOp(xv, tri, f32_tensor(moved))).results[0]
    if axis != len(x) - 1:
        y = ctx.build(TransposeOp(y, [perm.index(d) for d in range(len(x))], f32_tensor(x))).results[0]
    return y


def first_extreme(ctx: NodeContext, xv: SSAValue, x: tuple[int, ...], axis: int, largest: bool,
                   last: bool, free: SSAValue | None = None) -> SSAValue:
    """1.0 at the first (or `last`) position along `axis` holding the max (or min), 0.0
    elsewhere: x == extreme, kept where the running count of such hits is 1. With
    `free`, only positions where it is 1.0 count as hits."""
    stat = f32_tensor(ReduceOp.out_shape(x, (axis,), True))
    m = ctx.build((ReduceMaxOp if largest else ReduceMinOp)(xv, (axis,), True, stat)).results[0]
    hit = eltwise(ctx, EqualOp, xv, m)
    if free is not None:
        hit = eltwise(ctx, MulOp, hit, free)
    count = running_sum(ctx, hit, x, axis, False, last)
    return eltwise(ctx, MulOp, hit, eltwise(ctx, EqualOp, count, ctx.scalar(1.0)))

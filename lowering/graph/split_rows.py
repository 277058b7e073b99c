"""`npu-split-rows`: softmax and layer normalisation over rows too long for a
core's SRAM become two passes over the row: `npu_graph.row_stats` (the row's
statistics, reduced block by block: npu-tile gives it a column loop whose
states merge) then `npu_graph.softmax_apply` / `npu_graph.layernorm_apply`
(elementwise given the statistics, tiled freely); a reduction (mean, sum, max,
min) over more elements per result than SRAM holds becomes two reductions.

Assumes graph-level IR after npu-fuse (ops inside a fused kernel are left alone:
their kernel holds whole rows). A softmax over the last axis and a layer
normalisation over the last axis only (scale and bias vectors or scalars) are
split when one row of input and output, single buffered, passes `sram_bytes`
(no tiling of the whole-row op could fit); others keep their whole rows. A
reduction is split when the elements reduced into one result, with it, pass
`sram_bytes` (a tile holds its reduced dims whole: none could fit). No options.

Algorithm
---------
softmax(x) = softmax_apply(x, row_stats(x, softmax)): the state (max, sum of
exp(x - max)) of column blocks merges exactly as online softmax does.
layernorm(x, s, b) = layernorm_apply(x, row_stats(x, moments), s, b): the state
(count, mean, M2) merges by Chan's pairwise formula, so the variance needs no
second pass over a whole row.
reduce(x, axes) = reduce(reduce(x, inner, keepdims), axes): `inner` the longest run of
the last reduced axes whose elements take at most a quarter of SRAM (double buffered,
beside the results); when the last reduced axis alone takes more, it is first viewed
as two (`reshape`, [.., D] -> [.., D / f, f], f the largest divisor of D that fits)
and `inner` is the second. The outer reduction, smaller, is split again if it still
passes SRAM. Max and min are exact; a mean is the mean of equal-sized groups' means and
a sum the sum of partial sums (the same value in exact arithmetic, f32 rounding
reassociated); a dequantizing reduction (`input_scale`) dequantizes in the first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)

from lowering.instrument import PatternWalker
from npu_dialects.arch import Arch, arch_of
from npu_dialects.dtypes import elem_bytes
from npu_dialects.graph import (
    FusedOp,
    LayerNormApplyOp,
    LayerNormOp,
    ReduceOp,
    ReshapeOp,
    RowStatsOp,
    SoftmaxApplyOp,
    SoftmaxOp,
    attr_bool,
    attr_float,
    attr_int,
    ints,
    shape_of,
)


def too_long(row: int, arch: Arch, elem: int) -> bool:
    """One row in and one out (`elem` bytes an element, single buffered) pass a core's SRAM."""
    return 2 * row * elem > arch.sram_bytes


class SplitLongRows(RewritePattern):
    """softmax / layernorm over a too long last axis -> row_stats + its apply op."""

    def __init__(self, arch: Arch):
        self.arch = arch

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (SoftmaxOp, LayerNormOp)) or isinstance(op.parent_op(), FusedOp):
            return
        x = op.operands[0]
        shape = shape_of(x)
        attrs = dict(op.attributes)
        if not shape or attr_int(attrs, "axis", -1) % len(shape) != len(shape) - 1 or not too_long(shape[-1], self.arch, elem_bytes(x)):
            return
        if isinstance(op, SoftmaxOp):
            stats = RowStatsOp(x, "softmax")
            new: Operation = SoftmaxApplyOp(x, stats.results[0])
        else:
            if any(shape_of(v) not in ((shape[-1],), (1,), ()) for v in op.operands[1:]):
                return
            stats = RowStatsOp(x, "moments")
            bias = op.operands[2] if len(op.operands) > 2 else None
            new = LayerNormApplyOp(x, stats.results[0], op.operands[1], bias, attr_float(attrs, "epsilon", 1e-5))
        stats.location = new.location = op.location
        rewriter.replace(op, [stats, new], [new.results[0]])


class SplitLongReduction(RewritePattern):
    """reduce(x, axes) over more elements per result than SRAM holds -> an inner and an
    outer reduction (see the module docstring)."""

    def __init__(self, arch: Arch):
        self.arch = arch

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ReduceOp) or isinstance(op.parent_op(), FusedOp):
            return
        x = op.input
        shape, axes = shape_of(x), ints(op.axes, ())
        elem = elem_bytes(x)
        reduced = math.prod(shape[a] for a in axes)
        if not axes or reduced * elem + elem_bytes(op.result) <= self.arch.sram_bytes:
            return
        budget = self.arch.sram_bytes // 4
        inner: list[int] = []
        for a in reversed(axes):  # (the longest run of last reduced axes that fits)
            if math.prod(shape[b] for b in [a, *inner]) * elem > budget:
                break
            inner.insert(0, a)
        new: list[Operation] = []
        if not inner:  # (the last reduced axis alone passes: view it as two)
            d = axes[-1]
            f = next((f for f in range(min(shape[d] - 1, budget // elem), 1, -1) if shape[d] % f == 0), None)
            if f is None:
                return  # (a prime extent: npu-tile names the op that does not fit)
            viewed = (*shape[:d], shape[d] // f, f, *shape[d + 1:])
            view = ReshapeOp(x, TensorType(x.type.element_type, viewed))  # type: ignore[attr-defined]
            new.append(view)
            x, shape, inner = view.results[0], viewed, [d + 1]
            axes = tuple(a + (a > d) for a in axes) + (d + 1,)
            axes = tuple(sorted(axes))
        attrs = dict(op.attributes)
        first = type(op)(x, inner, True, TensorType(op.result.type.element_type,  # type: ignore[attr-defined]
                                                    ReduceOp.out_shape(shape, inner, True)))
        for k in ("input_scale", "input_zero_point"):  # (the first reads the 8-bit input)
            if k in attrs:
                first.attributes[k] = attrs[k]
        keep = attr_bool(attrs, "keepdims", True)
        second = type(op)(first.results[0], axes, keep, TensorType(op.result.type.element_type,  # type: ignore[attr-defined]
                                                                   ReduceOp.out_shape(shape, axes, keep)))
        new += [first, second]
        if second.result.type != op.result.type:  # (kept dims of a viewed axis: one more than asked)
            new.append(ReshapeOp(second.result, op.result.type))  # type: ignore[arg-type]
        for o in new:
            o.location = op.location
        rewriter.replace(op, new, [new[-1].results[0]])


@dataclass(frozen=True)
class SplitRows(ModulePass):
    """Softmax and layer normalisation over rows too long for SRAM: row statistics, then an elementwise pass;
    reductions over more than SRAM holds per result: two reductions.

    See the module docstring. No options."""

    name = "npu-split-rows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)
        walker = PatternWalker(GreedyRewritePatternApplier([SplitLongRows(arch), SplitLongReduction(arch)]))
        walker.rewrite_module(op)

"""`npu-hoist-pool`: max pooling moves ahead of the monotone elementwise ops feeding it
(a ReLU, a per-channel add, a conv's bias), so they run on the pooled tensor.

`maxpool(relu(conv2d(x, W, b)))` becomes `relu(add(maxpool(conv2d(x, W)), b'))`
with b' the bias as a [C, 1, 1] constant: a 2x2 stride-2 pool then leaves the bias
and the ReLU a quarter of the elements (a vector pass each, `ElementwiseOp.cycles`).
Exact: the same float operations on the same elements (see Algorithm). Only when
the pool reduces the element count (it has strides above 1), and each op moved has
one use, the pool. Assumes graph-level IR after `npu-bn-fold` (a folded BatchNorm is
the conv's bias), before `npu-fuse`. Options: `bias=false` leaves convs' biases.

Algorithm
---------
A function f non-decreasing in x commutes with max: max_i f(x_i) = f(max_i x_i),
also in floating point (rounding is monotone) and with NaN (both sides NaN).
`HoistPool` moves the pool above f(x, c...) when f is relu or copy; add, max or
min in either operand; sub in its first; clip in x - and every other operand c
has size 1 in the two pooled dims, so it is one value over each pooling window.
f's result must have x's type (no broadcast of x). Padded positions never win a max
(`npu_graph.maxpool`), so a window's max is over the same elements before and after.
`PeelBias`: conv2d(x, W, b) read only by the pool is conv2d(x, W) + b, b a constant.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from lowering.graph.constants import ConstantReader, make_constant, weight_hint
from lowering.instrument import PatternWalker
from npu_dialects.dtypes import element_type
from npu_dialects.graph import AddOp, Conv2dOp, ElementwiseOp, MaxPoolOp, shape_of

MONOTONE: dict[str, tuple[int, ...]] = {
    "relu": (0,), "copy": (0,), "add": (0, 1), "max": (0, 1), "min": (0, 1), "sub": (0,), "clip": (0,)}
"""Elementwise function (`ElementwiseOp.FN`) -> the operands it is non-decreasing in
(the others held fixed)."""


def reduces(pool: MaxPoolOp) -> bool:
    """The pool has fewer elements than its input (so work moved after it shrinks)."""
    return prod(shape_of(pool.result)) < prod(shape_of(pool.input))


def window_constant(v: SSAValue, rank: int) -> bool:
    """`v` broadcast against a rank-`rank` tensor has size 1 in its last two (pooled) dims."""
    s = shape_of(v)
    return len(s) <= rank and all(d == 1 for d in s[-2:])


def pooled(pool: MaxPoolOp, x: SSAValue) -> MaxPoolOp:
    """`pool`'s pooling (kernel, strides, pads, dilations) of `x`, at its location."""
    p = pool.params
    new = MaxPoolOp(x, pool.result.type, kernel=p["kernel"], strides=p["strides"], pads=p["pads"],
                    dilations=p["dilations"])
    new.location = pool.location
    return new


class HoistPool(RewritePattern):
    """maxpool(f(x, c...)) -> f(maxpool(x), c...) for a monotone elementwise f (see the
    module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MaxPoolOp, rewriter: PatternRewriter) -> None:
        f = op.input.owner
        if not isinstance(f, ElementwiseOp) or f.FN not in MONOTONE or not reduces(op):
            return
        if not f.results[0].has_one_use() or f.parent_block() is not op.parent_block():
            return
        rank = len(shape_of(op.input))
        for k in MONOTONE[f.FN]:
            x = f.operands[k]
            others = [o for j, o in enumerate(f.operands) if j != k]
            if x.type == f.results[0].type and all(window_constant(o, rank) for o in others):
                pool = pooled(op, x)
                operands = list(f.operands)
                operands[k] = pool.result
                moved = type(f).create(operands=operands, result_types=[op.result.type], attributes=dict(f.attributes))
                moved.location = f.location
                rewriter.insert(pool, InsertPoint.before(op))
                rewriter.replace(op, moved)
                rewriter.erase(f)
                return


class PeelBias(RewritePattern):
    """maxpool(conv2d(x, W, b)) -> add(maxpool(conv2d(x, W)), b as [C, 1, 1])."""

    def __init__(self, module: ModuleOp, constants: ConstantReader):
        self.module, self.constants = module, constants

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MaxPoolOp, rewriter: PatternRewriter) -> None:
        conv = op.input.owner
        if not isinstance(conv, Conv2dOp) or conv.bias is None or not reduces(op):
            return
        if not conv.result.has_one_use() or conv.parent_block() is not op.parent_block():
            return
        b = self.constants.array(conv.bias)
        if b is None or b.size != shape_of(conv.result)[1]:
            return
        bias = make_constant(self.module, b.reshape(-1, 1, 1), weight_hint(conv.location, "bias", "conv"),
                             conv.location, element_type=element_type(conv.bias))
        plain = conv.with_operands(conv.input, conv.weight, None)
        plain.location, plain.result.name_hint = conv.location, conv.result.name_hint
        pool = pooled(op, plain.result)
        add = AddOp(pool.result, bias.result, op.result.type)
        add.location = conv.location
        rewriter.insert([bias, plain, pool], InsertPoint.before(op))
        rewriter.replace(op, add)
        rewriter.erase(conv)


@dataclass(frozen=True)
class HoistPoolPass(ModulePass):
    """Move max pooling ahead of the monotone elementwise ops feeding it and of a conv's
    bias, so they run on the pooled tensor (exact; see the module docstring).

    Assumes graph-level IR, after npu-bn-fold and before npu-fuse. Options:
    `bias=false` leaves convs' biases in the conv (only elementwise ops move)."""

    name = "npu-hoist-pool"
    bias: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns: list[RewritePattern] = [HoistPool()]
        if self.bias:
            patterns.append(PeelBias(op, ConstantReader(op, self.name)))
        PatternWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)

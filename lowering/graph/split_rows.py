"""`npu-split-rows`: softmax and layer normalisation over rows too long for a
core's SRAM become two passes over the row: `npu_graph.row_stats` (the row's
statistics, reduced block by block: npu-tile gives it a column loop whose
states merge) then `npu_graph.softmax_apply` / `npu_graph.layernorm_apply`
(elementwise given the statistics, tiled freely).

Assumes graph-level IR after npu-fuse (ops inside a fused kernel are left alone:
their kernel holds whole rows). A softmax over the last axis and a layer
normalisation over the last axis only (scale and bias vectors or scalars) are
split when one row of input and output, single buffered, passes `sram_bytes`
(no tiling of the whole-row op could fit); others keep their whole rows. No
options.

Algorithm
---------
softmax(x) = softmax_apply(x, row_stats(x, softmax)): the state (max, sum of
exp(x - max)) of column blocks merges exactly as online softmax does.
layernorm(x, s, b) = layernorm_apply(x, row_stats(x, moments), s, b): the state
(count, mean, M2) merges by Chan's pairwise formula, so the variance needs no
second pass over a whole row.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
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
    RowStatsOp,
    SoftmaxApplyOp,
    SoftmaxOp,
    attr_float,
    attr_int,
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


@dataclass(frozen=True)
class SplitRows(ModulePass):
    """Softmax and layer normalisation over rows too long for SRAM: row statistics, then an elementwise pass.

    See the module docstring. No options."""

    name = "npu-split-rows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        walker = PatternWalker(GreedyRewritePatternApplier([SplitLongRows(arch_of(op))]))
        walker.rewrite_module(op)

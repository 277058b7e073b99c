"""`npu-canonicalize`: local algebraic clean-ups on `npu_graph`.

Patterns (each declines when it does not match):
- `reshape(reshape(x))` -> `reshape(x)`;
- `reshape(x)` to x's own shape -> `x`.
Assumes value semantics (graph level); dead ops are removed by the driver."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from npu_dialects.graph import ReshapeOp


class FoldReshapeChain(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp):
            return
        new = ReshapeOp(inner.input, op.result.type)
        new.location = op.location
        rewriter.replace(op, new)


class FoldIdentityReshape(RewritePattern):
    """reshape(x) with the shape of x -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.input.type != op.result.type:
            return
        rewriter.replace(op, [], [op.input])


@dataclass(frozen=True)
class Canonicalize(ModulePass):
    """Graph-level canonicalisation (reshape chains, identity reshapes)."""

    name = "npu-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([
            FoldReshapeChain(), FoldIdentityReshape()])).rewrite_module(op)

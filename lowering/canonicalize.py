"""`npu-canonicalize`: local algebraic clean-ups on `npu_graph`.

Patterns (each declines when it does not match):
- `reshape(reshape(x))` -> `reshape(x)` (locations merged);
- `reshape(x)` to x's own shape -> `x`;
- `gemm{alpha, beta}(A, B, C)` -> `add(mul(gemm(A, B), alpha), mul(C, beta))`:
  the scalings become elementwise epilogue ops the matmul kernel can fuse;
- `matmul(A, B)` with a 1-D operand, or with an N-D `A` and a 2-D `B`, ->
  reshapes around a 2-D matmul (numpy matmul semantics kept).
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

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, Float32Type, TensorType
from xdsl.ir import Operation, SSAValue

from npu_dialects.graph import AddOp, ConstantOp, GemmOp, MatMulOp, MulOp, ReshapeOp, f32_tensor, shape_of
from npu_dialects.locs import fused_loc, loc_names


def _scalar(value: float, loc) -> ConstantOp:
    t = TensorType(Float32Type(), [1])
    c = ConstantOp(t, value=DenseIntOrFPElementsAttr.from_list(t, [value]))
    c.location = loc
    return c


def _at(op: Operation, loc) -> Operation:
    op.location = loc
    return op


class FoldReshapeChain(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp):
            return
        new = ReshapeOp(inner.input, op.result.type)
        new.location = fused_loc(loc_names(inner.location) + loc_names(op.location))
        rewriter.replace(op, new)


class GemmScalingToEpilogue(RewritePattern):
    """gemm{alpha, beta}(A, B, C) -> add(mul(gemm(A, B), alpha), mul(C, beta))."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GemmOp, rewriter: PatternRewriter) -> None:
        p = op.params
        if p["alpha"] == 1.0 and (p["beta"] == 1.0 or op.c is None):
            return
        loc = op.location
        ops: list[Operation] = []
        core = _at(GemmOp(op.a, op.b, None if p["beta"] != 1.0 else op.c, op.result.type,
                          trans_a=p["trans_a"], trans_b=p["trans_b"]), loc)
        ops.append(core)
        y: SSAValue = core.results[0]
        if p["alpha"] != 1.0:
            alpha = _scalar(p["alpha"], loc)
            ops += [alpha, _at(MulOp(y, alpha.result, op.result.type), loc)]
            y = ops[-1].results[0]
        if p["beta"] != 1.0 and op.c is not None:
            beta = _scalar(p["beta"], loc)
            scaled = _at(MulOp(op.c, beta.result, op.c.type), loc)
            ops += [beta, scaled, _at(AddOp(y, scaled.results[0], op.result.type), loc)]
        rewriter.replace(op, ops, [ops[-1].results[0]])


class MatmulTo2D(RewritePattern):
    """matmul with a 1-D operand, or N-D x 2-D, -> reshape, 2-D matmul, reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatMulOp, rewriter: PatternRewriter) -> None:
        a, b = shape_of(op.a), shape_of(op.b)
        if len(a) == 2 and len(b) == 2:
            return
        if len(b) > 2:
            return  # a truly batched B: needs a batched kernel
        loc = op.location
        k = a[-1]
        a2 = (1, k) if len(a) == 1 else (int(np_prod(a[:-1])), k)
        b2 = (b[0], 1) if len(b) == 1 else b
        ops: list[Operation] = []
        av, bv = op.a, op.b
        if a2 != a:
            ops.append(_at(ReshapeOp(op.a, f32_tensor(a2)), loc))
            av = ops[-1].results[0]
        if b2 != b:
            ops.append(_at(ReshapeOp(op.b, f32_tensor(b2)), loc))
            bv = ops[-1].results[0]
        mm = _at(MatMulOp(av, bv, f32_tensor((a2[0], b2[1]))), loc)
        ops += [mm, _at(ReshapeOp(mm.result, op.result.type), loc)]
        rewriter.replace(op, ops, [ops[-1].results[0]])


def np_prod(xs) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


class FoldIdentityReshape(RewritePattern):
    """reshape(x) with the shape of x -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.input.type != op.result.type:
            return
        rewriter.replace(op, [], [op.input])


@dataclass(frozen=True)
class Canonicalize(ModulePass):
    """Graph-level canonicalisation (reshape chains, gemm scaling, matmul ranks)."""

    name = "npu-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([
            FoldReshapeChain(), FoldIdentityReshape(), GemmScalingToEpilogue(),
            MatmulTo2D()])).rewrite_module(op)

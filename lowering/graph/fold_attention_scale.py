"""`npu-fold-attention-scale`: a product scaled by a constant, (a @ b) / c (or times c),
whose a or b is a projection by constant weights seen through reshapes and
transposes, becomes the product of the projection scaled in its weights and bias:
an attention's scores scale, q @ kt / sqrt(d), moves into the q projection. The
attention kernel (npu-fuse's `attention` rule) then has scale 1 and does not scale
its query rows again at every key block (a vector pass over [S, D] per block).

Only when: c is a scalar constant; the product, the projection and every reshape or
transpose between them have one use, but for one slice of the projection's columns
whose other readers are slices of other columns (GPT-2's c_attn split into q, k and
v: only q's columns scale); the projection is x @ W with W constant, optionally plus
a constant bias. Tries a's projection, then b's. Runs after npu-cse,
before npu-merge-projections (which merges the scaled q projection with k and v). No
options. Errors: an unreadable weight store names the pass.

Algorithm
---------
(x @ W + bias) f = x @ (W f) + bias f, and reshapes and transposes only move
elements, so view(x @ W f + bias f) @ b = f (view(x @ W + bias) @ b): the scale op
goes and the projection reads new weights W f and bias f (new weights; the old ones
stay in the store, unreferenced). With f a power of two (1 / 8 for 64-dim heads) the
result is bit-identical barring overflow and underflow; otherwise the weights round
once where the scores rounded once (within the float tolerance onnxruntime is
compared with).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from lowering.graph.constants import ConstantReader, make_constant, weight_hint
from lowering.graph.fuse import replace_operand
from lowering.instrument import PatternWalker
from lowering.remarks import remark
from npu_dialects.dtypes import element_type
from npu_dialects.graph import AddOp, DivOp, MatMulOp, MulOp, ReshapeOp, SliceOp, TransposeOp, ints, shape_of
from npu_dialects.locs import node_names
from npu_dialects.recipe import Derived


class FoldAttentionScale(RewritePattern):
    """Anchored at the scale op (see the module docstring)."""

    def __init__(self, module: ModuleOp, constants: ConstantReader):
        self.module, self.constants = module, constants

    def factor(self, op: Operation) -> tuple[MatMulOp, float] | None:
        """(the product, the factor) of op = p / c, p * c or c * p with a scalar constant c."""
        if not isinstance(op, (MulOp, DivOp)):
            return None
        a, b = op.operands
        sides = [(a, b)] if isinstance(op, DivOp) else [(a, b), (b, a)]
        for p, c in sides:
            k = self.constants.scalar(c)
            if k and isinstance(p.owner, MatMulOp) and p.type == op.results[0].type and p.has_one_use():
                return p.owner, (1.0 / k if isinstance(op, DivOp) else k)
        return None

    def projection(self, x: SSAValue) -> tuple[MatMulOp, AddOp | None, slice] | None:
        """(the matmul by constant weights, its constant bias add or None, the columns of
        it `x` reads) that `x` views through single-use reshapes and transposes and at
        most one slice of columns (`columns`), each op one use but the sliced one."""
        while isinstance(x.owner, (ReshapeOp, TransposeOp)) and x.has_one_use():
            x = x.owner.operands[0]
        cols = slice(None)
        if isinstance(x.owner, SliceOp) and x.has_one_use():
            found = self.columns(x.owner)
            if found is None:
                return None
            x, cols = found
        elif not x.has_one_use():
            return None
        add = x.owner if isinstance(x.owner, AddOp) else None
        if add is not None:
            mm, bias = (add.operands[0].owner, add.operands[1]) if isinstance(add.operands[0].owner, MatMulOp) \
                else (add.operands[1].owner, add.operands[0])
            if not isinstance(mm, MatMulOp) or not mm.results[0].has_one_use() or self.constants.derived(bias) is None \
                    or add.results[0].type != mm.results[0].type:
                return None
        else:
            mm = x.owner
        if not isinstance(mm, MatMulOp) or (w := self.constants.derived(mm.operands[1])) is None:
            return None
        if cols != slice(None) and add is not None:  # (a bias scaled in part runs along the columns)
            b = self.constants.derived(bias)
            if b is None or len(b.shape) == 0 or b.shape[-1] != w.shape[-1]:
                return None
        return mm, add, cols

    @staticmethod
    def columns(sl: SliceOp) -> tuple[SSAValue, slice] | None:
        """(the projection's result, the columns) when `sl` takes columns c0 .. c1 of y (all
        of y's other dims, step 1), y is the result seen through single-use reshapes that
        keep its last dim, and y's other readers are slices of columns apart from c0 .. c1
        (GPT-2's c_attn split three ways: q's scale leaves k and v alone)."""
        y = sl.input
        shape = shape_of(y)

        def cut(s: SliceOp) -> tuple[int, int] | None:
            a, b, st = (ints(v, ()) for v in (s.starts, s.ends, s.steps))
            whole = all(a[d] == 0 and b[d] == shape[d] for d in range(len(shape) - 1))
            return (a[-1], b[-1]) if whole and set(st) == {1} else None

        mine = cut(sl)
        if mine is None:
            return None
        others = [u.operation for u in y.uses if u.operation is not sl]
        if not all(isinstance(o, SliceOp) and (c := cut(o)) is not None and (c[1] <= mine[0] or c[0] >= mine[1])
                   for o in others):
            return None
        while isinstance(y.owner, ReshapeOp) and shape_of(y.owner.input)[-1:] == shape[-1:] \
                and y.owner.input.has_one_use():
            y = y.owner.input
        return y, slice(*mine)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        found = self.factor(op)
        if found is None:
            return
        product, f = found
        for side in product.operands:
            proj = self.projection(side)
            if proj is not None:
                break
        else:
            return
        mm, add, cols = proj
        for owner, i in [(mm, 1), *([(add, next(j for j in (0, 1) if add.operands[j].owner is not mm))] if add else [])]:
            old = owner.operands[i]
            data = self.constants.derived(old)
            assert data is not None  # (checked by `projection`)
            # (the columns the operand reads: a bias broadcasts along them)
            scaled = Derived.apply("scale_cols", data, start=cols.start, stop=cols.stop, factor=float(f))
            new = make_constant(self.module, scaled, weight_hint(owner.location, "scaled"), owner.location,
                                element_type=element_type(old))
            rewriter.insert(new, InsertPoint.before(owner))
            replace_operand(owner, i, new.result, rewriter)
        remark("npu-fold-attention-scale", "applied", node_names(op) + node_names(mm),
               f"the product's scale {f:g} folded into the weights of its operand's projection")
        rewriter.replace_all_uses_with(op.results[0], product.results[0])
        consts = [c.owner for c in op.operands if c is not product.results[0]]
        rewriter.erase(op)
        for c in consts:  # (the scale, once nothing reads it)
            if isinstance(c, Operation) and not any(r.uses for r in c.results):
                rewriter.erase(c)


@dataclass(frozen=True)
class FoldAttentionScalePass(ModulePass):
    """Fold a product's constant scale into the projection one of its operands views
    (an attention's q @ kt / sqrt(d) into the q projection; see the module docstring).
    No options."""

    name = "npu-fold-attention-scale"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternWalker(FoldAttentionScale(op, ConstantReader(op, self.name)), apply_recursively=False).rewrite_module(op)

"""`npu-merge-projections`: the q, k and v projections of an attention, matmuls of one
input by constant weights, become one matmul by the weights side by side, whose
column slices the attention then reads in place as head windows (npu-fuse's
`attention` rule, as for GPT-2's fused c_attn). BERT's encoder layers project q, k
and v separately: three kernels, each streaming its weights and reading the input
again, and run one or two at a time; merged, one kernel streams all the weights
over the cores and reads the input once per core.

Only when: two or more `matmul`s read the same 2-D input [M, K] with constant 2-D
weights [K, N_i] (each with a constant [N_i] bias add, or none has one); each result
is read only by reshapes into attention heads [B, S, H, D] (B S = M, H D = N_i, the
same D for all) that a head transpose (heads first) alone reads. Assumes graph-level IR
after npu-cse. No options. Errors: an unreadable weight store names the pass.

Algorithm
---------
x @ W_i (+ b_i) for i = 1..n become y = x @ [W_1 ... W_n] (+ [b_1 ... b_n]), seen as
[B, S, sum N_i], and each old head reshape reads slice i of it along the last axis:
reshape(slice(y, N_1 + ... + N_{i-1}, + N_i)), the form npu-fuse's `head_slice` reads
as head windows of one [B, S, sum N_i / D, D] view. Each column of the product is the
same dot product as before, so the result is exact. The merged weights are a new
weight; the originals stay in the store, unreferenced (`referenced_weights` leaves
them out of side files).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from lowering.graph.constants import ConstantReader, make_constant, weight_hint
from lowering.instrument import PatternWalker
from lowering.remarks import remark
from npu_dialects.dtypes import element_type, is_float
from npu_dialects.graph import AddOp, MatMulOp, ReshapeOp, SliceOp, TransposeOp, ints, shape_of
from npu_dialects.locs import fused_loc, node_names

HEADS_FIRST = ((0, 2, 1, 3), (0, 2, 3, 1))
"""The transposes of [B, S, H, D] heads an attention reads (q and v; k as kt)."""


@dataclass
class Projection:
    """One projection of the input: its matmul, weights, bias add and bias (or None),
    and the head reshapes reading its result."""

    matmul: MatMulOp
    weights: np.ndarray
    add: AddOp | None
    bias: np.ndarray | None
    reshapes: list[ReshapeOp]


class MergeProjections(RewritePattern):
    """Anchored at a matmul: merge it with its siblings (see the module docstring)."""

    def __init__(self, module: ModuleOp, constants: ConstantReader):
        self.module, self.constants = module, constants

    def projection(self, mm: MatMulOp) -> Projection | None:
        """`mm` as a projection whose result only heads read, else None."""
        w = self.constants.array(mm.operands[1])
        if w is None or w.ndim != 2 or not is_float(element_type(mm.results[0])):
            return None  # (an integer product's zero points and i32 result stay its own)
        out, add, bias = mm.results[0], None, None
        if out.has_one_use() and isinstance(user := next(iter(out.uses)).operation, AddOp):
            other = user.operands[1] if user.operands[0] is out else user.operands[0]
            bias = self.constants.array(other)
            if bias is None or bias.shape != (w.shape[1],) or user.results[0].type != out.type:
                return None
            out, add = user.results[0], user
        reshapes = [u.operation for u in out.uses]
        if not reshapes or not all(isinstance(r, ReshapeOp) and self.heads(r, shape_of(out)) for r in reshapes):
            return None
        return Projection(mm, w, add, bias, reshapes)  # type: ignore[arg-type]

    @staticmethod
    def heads(r: Operation, source: tuple[int, ...]) -> bool:
        """`r` reshapes [M, N] into heads [B, S, H, D] (B S = M, H D = N) that one head
        transpose alone reads."""
        shape = shape_of(r.results[0])
        if len(shape) != 4 or shape[0] * shape[1] != source[0] or shape[2] * shape[3] != source[1]:
            return False
        uses = list(r.results[0].uses)
        return len(uses) == 1 and isinstance(t := uses[0].operation, TransposeOp) and \
            tuple(ints(t.perm, ())) in HEADS_FIRST

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, MatMulOp) or len(shape_of(op.operands[0])) != 2:
            return
        x, block = op.operands[0], op.parent_block()
        mms = [u.operation for u in x.uses if isinstance(u.operation, MatMulOp) and u.index == 0
               and u.operation.parent_block() is block]
        if block is None or len(mms) < 2:
            return
        order = {o: i for i, o in enumerate(block.ops)}
        mms.sort(key=order.__getitem__)
        if mms[0] is not op:
            return  # (anchored at the first reader: one merge per input)
        found = [self.projection(m) for m in mms]  # type: ignore[arg-type]
        group = [p for p in found if p is not None]
        if len(group) < 2 or len({p.bias is None for p in group}) != 1 or len(
                {p.weights.shape[0] for p in group}) != 1 or len({shape_of(r.results[0])[3] for p in group
                                                                   for r in p.reshapes}) != 1:
            return
        self.merge(x, group, rewriter)

    def merge(self, x: SSAValue, group: list[Projection], rewriter: PatternRewriter) -> None:
        m, n = shape_of(x)[0], sum(p.weights.shape[1] for p in group)
        b, s = shape_of(group[0].reshapes[0].results[0])[:2]
        names = [nm for p in group for o in (p.matmul, p.add) if o is not None for nm in node_names(o)]
        loc = fused_loc(names)
        first = group[0].matmul
        t = element_type(x)  # (the projections compute in x's type, their weights and biases too)
        w = make_constant(self.module, np.concatenate([p.weights for p in group], axis=1),
                          weight_hint(first.location, "merged"), loc, element_type=t)
        new: list[Operation] = [w, MatMulOp(x, w.result, TensorType(t, [m, n]))]
        if group[0].bias is not None:
            c = make_constant(self.module, np.concatenate([p.bias for p in group]),  # type: ignore[misc]
                              weight_hint(first.location, "merged_bias"), loc, element_type=t)
            new += [c, AddOp(new[-1].results[0], c.result, TensorType(t, [m, n]))]
        new.append(ReshapeOp(new[-1].results[0], TensorType(t, [b, s, n])))
        for o in new:
            o.location = loc
        rewriter.insert(new, InsertPoint.before(first))
        y, off, at = new[-1].results[0], 0, new[-1]
        for p in group:
            k = p.weights.shape[1]
            sl = SliceOp(y, [0, 0, off], [b, s, off + k], [1, 1, 1], TensorType(t, [b, s, k]))
            sl.location = (p.add or p.matmul).location
            rewriter.insert(sl, InsertPoint.after(at))
            at, off = sl, off + k
            for r in p.reshapes:
                heads = ReshapeOp(sl.result, r.results[0].type)  # type: ignore[arg-type]
                heads.location = r.location
                rewriter.replace(r, heads)
            consts = [o.owner for o in (*p.matmul.operands[1:], *(p.add.operands if p.add else ())) if o is not x]
            for o in (p.add, p.matmul, *consts):  # (the originals' weights too, once nothing reads them)
                if isinstance(o, Operation) and o.parent is not None and not any(r.uses for r in o.results):
                    rewriter.erase(o)
        remark("npu-merge-projections", "applied", names,
               f"{len(group)} projections of one input as one matmul [{shape_of(x)[1]} x {n}], read as head "
               "windows of it")


@dataclass(frozen=True)
class MergeProjectionsPass(ModulePass):
    """Merge an attention's q, k and v projections of one input into one matmul whose
    column slices the attention reads in place (see the module docstring). No options."""

    name = "npu-merge-projections"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternWalker(MergeProjections(op, ConstantReader(op, self.name)), apply_recursively=False).rewrite_module(op)

"""`npu-merge-projections`: the q, k and v projections of an attention, matmuls of one
input by constant weights, become one matmul by the weights side by side, whose
column slices the attention then reads in place as head windows (npu-fuse's
`attention` rule, as for GPT-2's fused c_attn): one kernel streams all the weights
over the cores and reads the input once per core, not three one or two at a time.

Only when: two or more `matmul`s read the same 2-D input [M, K] with constant 2-D
weights [K, N_i] (each with a constant [N_i] bias add, or none has one; an integer
product - npu-fuse-qdq's - then a requantize by constants per tensor or per column,
the same zero points, result type, range and mode for all); each result is read only
by reshapes into attention heads [B, S, H, D] (B S = M, H D = N_i, the same D for all)
that a head transpose (heads first) alone reads. Assumes graph-level IR after
npu-cse. No options. Errors: an unreadable weight store names the pass.

Algorithm
---------
x @ W_i (+ b_i) for i = 1..n become y = x @ [W_1 ... W_n] (+ [b_1 ... b_n]), seen as
[B, S, sum N_i], and each old head reshape reads slice i of it along the last axis:
reshape(slice(y, N_1 + ... + N_{i-1}, + N_i)), the form npu-fuse's `head_slice` reads
as head windows of one [B, S, sum N_i / D, D] view. Each column of the product is the
same dot product as before, so the result is exact. The merged weights are a new
weight; the originals stay in the store, unreferenced (`referenced_weights` leaves
them out of side files). An integer group's requantize takes the multipliers and
output zero points side by side as per-column constants: each column is requantized
as before.
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
from npu_dialects.dtypes import element_type, is_float, qrange
from npu_dialects.graph import AddOp, MatMulOp, RequantizeOp, ReshapeOp, SliceOp, TransposeOp, ints, shape_of
from npu_dialects.locs import fused_loc, node_names
from npu_dialects.recipe import Derived

HEADS_FIRST = ((0, 2, 1, 3), (0, 2, 3, 1))
"""The transposes of [B, S, H, D] heads an attention reads (q and v; k as kt)."""


@dataclass
class Projection:
    """One projection of the input: its matmul, weights, bias add and bias (or None),
    the requantize of an integer one with its multiplier and zero point per column
    (or None), and the head reshapes reading its result."""

    matmul: MatMulOp
    weights: Derived
    add: AddOp | None
    bias: Derived | None
    reshapes: list[ReshapeOp]
    requant: RequantizeOp | None = None
    scales: tuple[np.ndarray, np.ndarray] | None = None

    def integer_key(self) -> tuple | None:
        """What integer projections must share to merge: zero points, and the
        requantize's result type, range and mode."""
        r = self.requant
        return None if r is None else (self.matmul.zero_points, r.result.type, r.bounds(), r.requant_mode)


class MergeProjections(RewritePattern):
    """Anchored at a matmul: merge it with its siblings (see the module docstring)."""

    def __init__(self, module: ModuleOp, constants: ConstantReader):
        self.module, self.constants = module, constants

    def projection(self, mm: MatMulOp) -> Projection | None:
        """`mm` as a projection whose result only heads read, else None."""
        w = self.constants.derived(mm.operands[1])
        if w is None or len(w.shape) != 2:
            return None
        out, add, bias = mm.results[0], None, None
        if out.has_one_use() and isinstance(user := next(iter(out.uses)).operation, AddOp):
            other = user.operands[1] if user.operands[0] is out else user.operands[0]
            bias = self.constants.derived(other)
            if bias is None or bias.shape != (w.shape[1],) or user.results[0].type != out.type:
                return None
            out, add = user.results[0], user
        requant, scales = None, None
        if not is_float(element_type(out)):  # (an integer product: its requantize, per column)
            found = self.requantize(out, w.shape[1])
            if found is None:
                return None
            requant, scales = found
            out = requant.result
        reshapes = [u.operation for u in out.uses]
        if not reshapes or not all(isinstance(r, ReshapeOp) and self.heads(r, shape_of(out)) for r in reshapes):
            return None
        return Projection(mm, w, add, bias, reshapes, requant, scales)  # type: ignore[arg-type]

    def requantize(self, acc: SSAValue, n: int) -> tuple[RequantizeOp, tuple[np.ndarray, np.ndarray]] | None:
        """The requantize alone reading `acc` [M, n], with its multiplier and zero point
        as [n] columns (constants per tensor or per column)."""
        uses = list(acc.uses)
        r = uses[0].operation if len(uses) == 1 else None
        if not isinstance(r, RequantizeOp) or r.input is not acc:
            return None
        cols = []
        for v in (r.multiplier, r.zero_point):
            a = self.constants.array(v)
            if a is None or a.size not in (1, n) or (a.size == n and a.shape[-1:] != (n,)):
                return None
            cols.append(np.broadcast_to(a.reshape(-1), (n,)).astype(np.float32))
        return r, (cols[0], cols[1])

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
        if len(group) < 2 or len({p.bias is None for p in group}) != 1 or len({p.integer_key() for p in group}) != 1 \
                or len(
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
        acc = element_type(first.results[0])  # (x's type, or i32 for an integer product)
        w = make_constant(self.module, Derived.apply("concat", *(p.weights for p in group), axis=1),
                          weight_hint(first.location, "merged"), loc, element_type=element_type(first.operands[1]))
        zx, zw = first.zero_points
        new: list[Operation] = [w, MatMulOp(x, w.result, TensorType(acc, [m, n]), input_zero_point=zx,
                                            weight_zero_point=zw)]
        if group[0].bias is not None:
            c = make_constant(self.module, Derived.apply("concat", *(p.bias for p in group), axis=0),  # type: ignore[misc]
                              weight_hint(first.location, "merged_bias"), loc, element_type=acc)
            new += [c, AddOp(new[-1].results[0], c.result, TensorType(acc, [m, n]))]
        new += self.merged_requantize(group, new[-1].results[0], loc)
        t = element_type(new[-1].results[0])
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
            consts = [o.owner for o in (*p.matmul.operands[1:], *(p.add.operands if p.add else ()),
                                        *(p.requant.operands[1:] if p.requant else ())) if o is not x]
            for o in (p.requant, p.add, p.matmul, *consts):  # (the originals' weights too, once nothing reads them)
                if isinstance(o, Operation) and o.parent is not None and not any(r.uses for r in o.results):
                    rewriter.erase(o)
        remark("npu-merge-projections", "applied", names,
               f"{len(group)} projections of one input as one matmul [{shape_of(x)[1]} x {n}], read as head "
               "windows of it")

    def merged_requantize(self, group: list[Projection], acc: SSAValue, loc) -> list[Operation]:
        """The requantize of the merged integer product: the projections' multipliers and
        zero points side by side (per column), their common range and mode; [] for
        float projections."""
        r = group[0].requant
        if r is None:
            return []
        made = [make_constant(self.module, np.concatenate([p.scales[i] for p in group]),  # type: ignore[index]
                              weight_hint(group[0].matmul.location, what), loc)
                for i, what in enumerate(("merged_requant", "merged_zp"))]
        lo, hi = r.bounds()
        out = TensorType(element_type(r.result), shape_of(acc))
        full = qrange(element_type(r.result)) == (lo, hi)
        req = RequantizeOp(acc, made[0].result, made[1].result, out, mode=r.requant_mode,
                           min=None if full else lo, max=None if full else hi)
        return [*made, req]


@dataclass(frozen=True)
class MergeProjectionsPass(ModulePass):
    """Merge an attention's q, k and v projections of one input into one matmul whose
    column slices the attention reads in place (see the module docstring). No options."""

    name = "npu-merge-projections"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternWalker(MergeProjections(op, ConstantReader(op, self.name)), apply_recursively=False).rewrite_module(op)

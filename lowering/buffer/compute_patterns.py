"""Bufferization patterns: a graph op on SRAM buffers -> its `npu_compute` op.

While `npu-bufferize` builds a task it leaves each graph op it places (a kernel's
anchor on tiles, a prologue or epilogue step, a layer group's op) as the op itself
on `npu_compute.to_tensor` operands, its result written by `npu_compute.materialize`
into the destination buffer (destination passing). One pattern per op family then
rewrites each such pair into compute ops:
- `MatmulPattern`: gemm/matmul (no bias, alpha = beta = 1) -> `npu_compute.matmul`;
- `ConvPattern`, `MaxPoolPattern`: conv2d without bias, max-pool -> `npu_compute.conv2d`, `pool "max"`;
- `StructuredPattern`: any other structured op -> `npu_compute.apply` (`cube_output`
  on a requantize of a cube op's accumulator);
- `ElementwisePattern`: an elementwise op -> `npu_compute.eltwise` (`cube_output` on
  the per-channel bias add of a cube op's accumulator).
`lower_compute` applies them to a task (a graph op no pattern lowers is reported);
a new op family is one more pattern in `COMPUTE_PATTERNS`.

Algorithm
---------
`ConvPattern` keeps the conv's `pads`: a layer group pads on the fly, a tile's
input window is already padded. With `StructuredPattern`'s `npu_compute.apply` the
vector unit runs the op's reference semantics on the buffers.

`accumulate` on the materialize makes a cube op add into its destination (later
reduction steps), and an `npu_compute.apply` merge into it by its op's `combine`.
"""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)

from lowering.instrument import PatternWalker
from npu_dialects.compute import (
    ApplyOp,
    Conv2dOp,
    EltwiseFn,
    EltwiseOp,
    MaterializeOp,
    MatmulOp,
    PoolKind,
    PoolOp,
    ToTensorOp,
    bias_shape,
    tensor_of,
)
from npu_dialects.graph import Conv2dOp as GraphConv2dOp
from npu_dialects.graph import (
    ElementwiseOp,
    GemmOp,
    MatMulOp,
    MaxPoolOp,
    RequantizeOp,
    StructuredOp,
    shape_of,
)


class ComputePattern(RewritePattern):
    """Base: matches `materialize(op(to_tensor(b)...), dest)` for the graph ops of
    `family`; `lower` returns the compute ops writing `dest` from buffers `ins`."""

    family: tuple[type[Operation], ...] = ()

    def applies(self, op: Operation) -> bool:
        return isinstance(op, self.family)

    def lower(self, op: Operation, ins: list[SSAValue], dest: SSAValue, accumulate: bool) -> list[Operation]:
        raise NotImplementedError

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, MaterializeOp) or not isinstance(graph := op.value.owner, Operation):
            return
        if not self.applies(graph) or not all(isinstance(o.owner, ToTensorOp) for o in graph.operands):
            return
        ins = [o.owner.buffer for o in graph.operands]  # type: ignore[union-attr]
        new = self.lower(graph, ins, op.dest, op.accumulate is not None)
        for n in new:
            n.location = op.location
        rewriter.replace(op, new, [])
        if not graph.results[0].uses:
            rewriter.erase(graph)


def with_zero_points(new: Operation, op: Operation) -> Operation:
    """`new` (a cube compute op) with the zero points of the integer graph op `op`."""
    for name in ("input_zero_point", "weight_zero_point"):
        if name in op.attributes:
            new.attributes[name] = op.attributes[name]
    return new


class MatmulPattern(ComputePattern):
    family = (GemmOp, MatMulOp)

    def applies(self, op: Operation) -> bool:
        if isinstance(op, GemmOp):
            p = op.params
            return op.c is None and p["alpha"] == 1.0 and p["beta"] == 1.0
        return isinstance(op, MatMulOp)

    def lower(self, op: Operation, ins: list[SSAValue], dest: SSAValue, accumulate: bool) -> list[Operation]:
        p = op.params if isinstance(op, GemmOp) else {}
        new = MatmulOp(ins[0], ins[1], dest, trans_a=p.get("trans_a", False), trans_b=p.get("trans_b", False),
                       accumulate=accumulate)
        return [with_zero_points(new, op)]


class ConvPattern(ComputePattern):
    family = (GraphConv2dOp,)

    def applies(self, op: Operation) -> bool:
        return isinstance(op, GraphConv2dOp) and op.bias is None

    def lower(self, op: Operation, ins: list[SSAValue], dest: SSAValue, accumulate: bool) -> list[Operation]:
        assert isinstance(op, GraphConv2dOp)
        p = op.params
        return [with_zero_points(Conv2dOp(ins[0], ins[1], dest, strides=p["strides"], dilations=p["dilations"],
                                          group=p["group"], pads=p["pads"], accumulate=accumulate), op)]


class MaxPoolPattern(ComputePattern):
    family = (MaxPoolOp,)

    def lower(self, op: Operation, ins: list[SSAValue], dest: SSAValue, accumulate: bool) -> list[Operation]:
        assert isinstance(op, MaxPoolOp)
        p = op.params
        return [PoolOp(PoolKind.MAX, ins[0], dest, kernel=p["kernel"], strides=p["strides"], dilations=p["dilations"],
                       pads=p["pads"])]


class StructuredPattern(ComputePattern):
    family = (StructuredOp,)

    def lower(self, op: Operation, ins: list[SSAValue], dest: SSAValue, accumulate: bool) -> list[Operation]:
        cube_output = isinstance(op, RequantizeOp) and written_by_cube(ins[0])
        return [ApplyOp(op.name, dict(op.attributes), ins, dest, accumulate, cube_output=cube_output)]


def written_by_cube(buf: SSAValue) -> bool:
    """Whether a cube op writes `buf` (its accumulator): a requantize of it can run in
    the cube's output stage (`ApplyOp.cube_output`)."""
    for use in buf.uses:
        o = use.operation
        if isinstance(o, MatmulOp | Conv2dOp) and o.operands[-1] is buf:
            return True
        if isinstance(o, MaterializeOp) and o.dest is buf and isinstance(o.value.owner, MatMulOp | GemmOp | GraphConv2dOp):
            return True
    return False


class ElementwisePattern(ComputePattern):
    family = (ElementwiseOp,)

    def lower(self, op: Operation, ins: list[SSAValue], dest: SSAValue, accumulate: bool) -> list[Operation]:
        assert isinstance(op, ElementwiseOp)
        if len(ins) == 2 and ins[1] is dest and ins[0] is not dest:
            swapped = [dest, ins[0]]  # (the accumulator first: a sum's operands commute exactly)
            if bias_add(op, swapped, dest):
                return [EltwiseOp(EltwiseFn(op.FN), swapped, dest, cube_output=True)]
        return [EltwiseOp(EltwiseFn(op.FN), ins, dest, cube_output=bias_add(op, ins, dest))]


def bias_add(op: ElementwiseOp, ins: list[SSAValue], dest: SSAValue) -> bool:
    """Whether `op` on these buffers is the bias add of a cube op's accumulator in place,
    right after the product (`EltwiseOp.cube_output`: the cube's output stage may run
    it; `tile_search.bias_step` prices an epilogue's first step so)."""
    return (op.FN == "add" and len(ins) == 2 and ins[0] is dest and isinstance(dest.type, MemRefType)
            and isinstance(ins[1].type, MemRefType) and bias_shape(ins[1].type.get_shape(), dest.type.get_shape())
            and last_writer_is_cube(op, dest))


def last_writer_is_cube(op: Operation, buf: SSAValue) -> bool:
    """Whether the op that last wrote `buf` before `op` (back through its block, then
    the blocks around it) is a cube product: a cube compute op, or the materialize of a
    graph matmul/gemm/conv, or an op with regions each of whose blocks last writes
    `buf` so (an scf.if of a reduction's first and later steps)."""
    cur: Operation | None = op
    while cur is not None:
        prev = cur.prev_op
        while prev is not None:
            found = _writes_last(prev, buf)
            if found is not None:
                return found
            prev = prev.prev_op
        cur = cur.parent_op()
    return False


def _writes_last(op: Operation, buf: SSAValue) -> bool | None:
    """None when `op` leaves `buf` alone; else whether its last write to it is a cube
    product's (`last_writer_is_cube`)."""
    if isinstance(op, MatmulOp | Conv2dOp) and op.operands[-1] is buf:
        return True
    if isinstance(op, MaterializeOp) and op.dest is buf:
        return isinstance(op.value.owner, MatMulOp | GemmOp | GraphConv2dOp)
    if op.regions:
        blocks = [b for r in op.regions for b in r.blocks]
        lasts = [_block_writes_last(b, buf) for b in blocks]
        if all(x is None for x in lasts):
            return None
        return all(x is True for x in lasts)
    return None if buf not in op.operands or isinstance(op, ToTensorOp) else False


def _block_writes_last(block, buf: SSAValue) -> bool | None:
    for o in reversed(list(block.ops)):
        found = _writes_last(o, buf)
        if found is not None:
            return found
    return None


class DeadToTensor(RewritePattern):
    """A `to_tensor` no graph op reads any more is erased."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, ToTensorOp) and not op.tensor.uses:
            rewriter.erase(op)


COMPUTE_PATTERNS: list[RewritePattern] = [MatmulPattern(), ConvPattern(), MaxPoolPattern(), StructuredPattern(),
                                          ElementwisePattern(), DeadToTensor()]


WALKER = PatternWalker(GreedyRewritePatternApplier(COMPUTE_PATTERNS), apply_recursively=True)
"""Applies the compute patterns (built once: `lower_compute` runs per task)."""


def stage(op: Operation | type[Operation], ins: list[SSAValue], dest: SSAValue, accumulate: bool = False,
          **attributes) -> list[Operation]:
    """The ops that stand for graph op `op` (or a new op of class `op`) computed from
    buffers `ins` into `dest` until `lower_compute` runs: to_tensor per input, the op
    on them (`attributes` override its own), materialize into `dest`."""
    views = [ToTensorOp(b) for b in ins]
    assert isinstance(dest.type, MemRefType)
    cls = op if isinstance(op, type) else type(op)
    attrs = attributes if isinstance(op, type) else {**op.attributes, **attributes}
    clone = cls.create(operands=[v.tensor for v in views], result_types=[tensor_of(dest.type)],
                            attributes=attrs)
    return [*views, clone, MaterializeOp(clone.results[0], dest, accumulate)]


def lower_compute(root: Operation) -> Operation | None:
    """Apply the compute patterns under `root`; returns a graph op left unlowered (None: all were)."""
    for region in root.regions:
        WALKER.rewrite_region(region)
    for op in root.walk():
        if isinstance(op, MaterializeOp):
            owner = op.value.owner
            return owner if isinstance(owner, Operation) else op
    return None


def describe_unlowered(op: Operation) -> str:
    return (f"'{op.name}' on buffers of shapes {[list(shape_of(o)) for o in op.operands]} has no "
            f"npu_compute lowering")

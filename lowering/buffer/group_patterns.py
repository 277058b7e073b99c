"""Bufferization patterns of a layer group: its body (whole-tensor `npu_tile.load`s in
its DMA order, then the graph ops on the loaded tensors), placed in its task -> DMA
copies into the SRAM buffers its `#npu_tile.group` plan places, and staged compute.

`npu-bufferize` places the body in the task (inputs as `npu_compute.to_tensor` of
their DRAM buffers) and runs `assign_group_buffers`, the analysis the patterns
consult. The patterns, applied in one walk in body order by `lower_group`:
- `GroupLoadToCopy`: `npu_tile.load` -> `npu_dma.copy` into the input's buffer,
  waited for before the first op computing from it (through views);
- `GroupViewToBuffer`: a reshape or 1-D slice -> a view of its operand's buffer;
- `StageGroupOp`: a graph op -> staged into its buffer for the compute patterns (a
  conv's or gemm's bias an `add` after it); a value the group returns is stored
  to DRAM right after the op computing it.
Errors (`TilingError`): no group plan, a plan past `sram_bytes`, a body without its
loads, an op the patterns leave.

Algorithm
---------
The plan gives a byte offset per body value (the inputs, then each op's result):
`npu_task.sram` buffers sit there. Buffers viewing one value (reshapes, slices,
rank-extended operands) share its `value` number; a result written in place over
its operand is a new value at the same bytes. A load with no op computing from it
is waited for before the first view reading it; a view the group returns counts as
computing from it (its store reads the loaded bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import LocationAttr, MemRefType
from xdsl.ir import Operation, OpResult, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from lowering.buffer.tile_loop_patterns import Emitter, sram_type
from lowering.instrument import PatternWalker
from lowering.tile.group_plan import is_view
from lowering.tile.tile_search import TilingError, matmul_views
from npu_dialects.arch import Arch
from npu_dialects.compute import ToTensorOp
from npu_dialects.dma import CopyOp, WaitOp
from npu_dialects.graph import AddOp, GemmOp, GraphOp, MatMulOp, ints, shape_of
from npu_dialects.graph import Conv2dOp as GraphConv2dOp
from npu_dialects.task import SramOp
from npu_dialects.tile import GroupPlanAttr, KernelOp, LoadOp


@dataclass
class GroupBuffers:
    """The SRAM buffers of one layer group's task, and what the patterns consult."""

    em: Emitter  # the task block's
    loc: LocationAttr  # the kernel's (its loads' and stores' copies)
    offset: dict[SSAValue, int]  # each body value (a load's tile, an op's result) -> its planned offset
    out_dram: dict[SSAValue, SSAValue]  # a returned body value -> its DRAM output
    waited_by: dict[Operation, Operation]  # each load -> the op it is waited for before
    ops: set[Operation]  # the body's graph ops (what `StageGroupOp` and `GroupViewToBuffer` rewrite)
    values: int = 0  # `value` numbers given so far
    bufs: dict[tuple[int, int, tuple[int, ...]], SSAValue] = field(default_factory=dict)
    row0: SSAValue | None = None  # a batch-split group's: its slice's first row (its buffers: in the task block)

    def starts(self, em: Emitter, shape: Sequence[int], dram: SSAValue) -> list[SSAValue]:
        """Where a tile of `shape` starts in DRAM buffer `dram`: 0 on every dim but a
        batch slice's rows (dim 0 shorter than the buffer's)."""
        zeros = [em.const(0)] * len(shape)
        assert isinstance(dram.type, MemRefType)
        if self.row0 is not None and shape and shape[0] != dram.type.get_shape()[0]:
            zeros[0] = self.row0
        return zeros

    def buffer(self, before: Operation, offset: int, shape: Sequence[int], like: SSAValue,
               value: int | None = None) -> SSAValue:
        """The `npu_task.sram` buffer at `offset` with `shape` and the element type of
        tensor/buffer `like` holding `value` (None: a new value, that of `before`), created
        before `before` the first time it is asked for."""
        loc = self.loc
        if value is None:
            value, self.values, loc = self.values, self.values + 1, before.location
        key = (value, offset, tuple(shape))
        if key not in self.bufs:
            em = self.em.at(before) if self.row0 is None else self.em.nested(self.em.task_block)
            em.loc = loc
            self.bufs[key] = em.add(SramOp(sram_type(shape, like), offset, value)).results[0]
        return self.bufs[key]

    def view(self, before: Operation, buf: SSAValue, shape: Sequence[int]) -> SSAValue:
        """Buffer `buf` (an `npu_task.sram`) viewed with `shape`: the same value and bytes."""
        sram = buf.owner
        assert isinstance(sram, SramOp) and sram.value_id is not None
        return self.buffer(before, sram.offset.value.data, shape, buf, sram.value_id)

    def store(self, op: Operation, v: SSAValue, buf: SSAValue) -> None:
        """Body value v (in `buf`) stored to its DRAM output right after `op`, if returned."""
        if v in self.out_dram:
            em = self.em.at(op)
            em.loc = self.loc
            out, shape = self.out_dram[v], shape_of(v)
            em.add(CopyOp(buf, [em.const(0)] * len(shape), out, self.starts(em, shape, out), shape))


def first_reader(load: LoadOp, returned: set[SSAValue]) -> Operation:
    """The op a load is waited for before: the first op computing from its tile (through
    views) or a view of it the group returns (its store reads the tile right after it),
    else the first view reading it."""
    seen: set[SSAValue] = {load.tile}
    views: list[Operation] = []
    readers: list[Operation] = []
    stack: list[SSAValue] = [load.tile]
    while stack:
        for use in stack.pop().uses:
            o = use.operation
            if isinstance(o, GraphOp) and is_view(o):
                (readers if o.results[0] in returned else views).append(o)
                if o.results[0] not in seen:
                    seen.add(o.results[0])
                    stack.append(o.results[0])
            elif isinstance(o, GraphOp):
                readers.append(o)
    block = load.parent_block()
    assert block is not None and (readers or views)  # (a load is only issued for an op reading it)
    order = {o: i for i, o in enumerate(block.ops)}
    return min(readers or views, key=order.__getitem__)


def assign_group_buffers(kernel: KernelOp, body: Sequence[Operation], outs: Sequence[SSAValue], em: Emitter,
                         arch: Arch) -> GroupBuffers:
    """The analysis of `kernel`'s body cloned as `body` (its yield left out) into the task
    block `em` adds to, its results going to DRAM buffers `outs`."""
    plan = kernel.plan
    if not isinstance(plan, GroupPlanAttr):
        raise TilingError("a layer group needs its #npu_tile.group plan (npu-layer-group records it)")
    if plan.sram.data > arch.sram_bytes:
        raise TilingError(f"its plan {plan} needs more than sram_bytes={arch.sram_bytes}")
    loads = [o for o in body if isinstance(o, LoadOp)]
    ops = [o for o in body if not isinstance(o, LoadOp)]
    if kernel.body.block.args and not loads:
        raise TilingError("a layer group's body has no loads (run npu-tile-loops first)")
    offsets = ints(plan.offsets, ())
    args = list(kernel.body.block.args)
    offset: dict[SSAValue, int] = {ld.tile: offsets[args.index(orig.source)]  # type: ignore[arg-type]
                                   for ld, orig in zip(loads, (o for o in kernel.body.block.ops
                                                               if isinstance(o, LoadOp)))}
    offset.update((o.results[0], off) for o, off in zip(ops, offsets[len(args):]))
    position = {o: i for i, o in enumerate(kernel.body.block.ops)}
    out_dram: dict[SSAValue, SSAValue] = {}
    for v, o in zip(kernel.yield_op.values, outs):
        if not isinstance(v, OpResult):
            raise TilingError("a layer group returns one of its inputs")
        out_dram.setdefault(body[position[v.op]].results[v.index], o)
    return GroupBuffers(em, kernel.location, offset, out_dram, {ld: first_reader(ld, set(out_dram)) for ld in loads},
                        set(ops))


class GroupLoadToCopy(RewritePattern):
    """`npu_tile.load` of a DRAM buffer's tensor -> `npu_dma.copy` of it whole into its
    planned buffer (a new value), waited for before its first reader; the tile becomes
    the buffer's tensor."""

    def __init__(self, bufs: GroupBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if not isinstance(op, LoadOp) or op not in b.waited_by or not isinstance(op.source.owner, ToTensorOp):
            return
        shape = shape_of(op.tile)
        dst = b.buffer(op, b.offset[op.tile], shape, op.tile)
        em = b.em.at(op)
        em.loc = op.location
        src = op.source.owner.buffer
        copy = em.add(CopyOp(src, b.starts(em, shape, src), dst, [em.const(0)] * len(shape), shape))
        rewriter.insert(WaitOp(copy.results[0]), InsertPoint.before(b.waited_by.pop(op)))
        tile = ToTensorOp(dst)
        rewriter.replace(op, [tile], [tile.tensor])


def buffer_of(v: SSAValue) -> SSAValue | None:
    return v.owner.buffer if isinstance(v.owner, ToTensorOp) else None


class GroupViewToBuffer(RewritePattern):
    """A reshape or 1-D slice of a buffer's tensor -> the buffer's bytes at the view's
    planned offset, seen with its shape (the same value)."""

    def __init__(self, bufs: GroupBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if op not in b.ops or not is_view(op) or (src := buffer_of(op.operands[0])) is None:
            return
        sram = src.owner
        assert isinstance(sram, SramOp)
        r = op.results[0]
        buf = b.buffer(op, b.offset[r], shape_of(r), r, sram.value_id)
        b.store(op, r, buf)
        tile = ToTensorOp(buf)
        rewriter.replace(op, [tile], [tile.tensor])


class StageGroupOp(RewritePattern):
    """A computing graph op on buffers' tensors -> staged into its planned buffer (a new
    value) for the compute patterns: a gemm or matmul on rank-2 views, a conv's or
    gemm's bias an `add` after it; then stored if the group returns it."""

    def __init__(self, bufs: GroupBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if op not in b.ops or is_view(op) or not all(buffer_of(v) is not None for v in op.operands):
            return
        r = op.results[0]
        ins = [buffer_of(v) for v in op.operands]
        em = b.em.at(op)
        em.loc = op.location
        if isinstance(op, (GemmOp, MatMulOp)):
            mv = matmul_views(op)
            a, w = b.view(op, ins[0], mv.a), b.view(op, ins[1], mv.b)  # type: ignore[arg-type]
            out = b.buffer(op, b.offset[r], mv.out, r)
            em.stage(op, [a, w], out)
            out = b.view(op, out, shape_of(r))
            if isinstance(op, GemmOp) and op.c is not None:
                em.stage(AddOp, [out, ins[2]], out)  # type: ignore[list-item]
        else:
            out = b.buffer(op, b.offset[r], shape_of(r), r)
            if isinstance(op, GraphConv2dOp):
                em.stage(op, ins[:2], out)  # type: ignore[arg-type]
                if op.bias is not None:
                    c = shape_of(op.bias)[0]
                    em.stage(AddOp, [out, b.view(op, ins[2], (1, c, 1, 1))], out)  # type: ignore[arg-type]
            else:
                em.stage(op, ins, out)  # type: ignore[arg-type]
        b.store(op, r, out)
        tile = ToTensorOp(out)
        rewriter.replace(op, [tile], [tile.tensor])


def lower_group(bufs: GroupBuffers, region: Region) -> None:
    """Apply the patterns to the task body `region` holding the group's body, in order."""
    applier = GreedyRewritePatternApplier([GroupLoadToCopy(bufs), GroupViewToBuffer(bufs), StageGroupOp(bufs)],
                                          dce_enabled=False)
    PatternWalker(applier, apply_recursively=False).rewrite_region(region)
    for op in region.walk():
        if op in bufs.ops or isinstance(op, LoadOp):
            raise TilingError(f"'{op.name}' in a layer group was left unlowered (its operands are not buffers)")

"""Bufferization patterns of a strip group: its `npu_tile.strip_loop`, placed in its
task, -> an `scf.for` over the task's strips with DMA copies and staged compute.

`npu-bufferize` places the loop in the task and runs `assign_strip_buffers`, the
analysis the patterns consult: the plan's geometry (`recorded_plan`) and the SRAM
buffers (constants loaded once, per-slot input, side input and mask buffers, the work
area). The patterns, in turn (`lower_strip_loop`):
- `StripLoopToFor`: the loop -> `scf.for` over strips (from lo - warm), its body cloned
  with its loads first and the masks' loads, the line buffers' shifts carried;
- `StripLoadToCopy`, `SideLoadToCopy`: the input's / a side input's rows -> a copy into
  the slot; `MaskRows`: a masked value's rows outside the tensor zeroed (edge strips);
- `StageStripOp`: a graph op -> staged on the buffers the analysis placed;
- `ShiftLineBuffers`: `npu_tile.line_buffer` -> the new rows moved in;
  `StripStoreToCopy`: the output rows -> a clipped copy (not in warm-up strips);
- `PrefetchStrips`: the next strip's loads go to the other slot set, the last strip peeled.

Algorithm
---------
See `lowering/tile/strip_plan.py` for the geometry and buffers. The slot sets
alternate by the parity of s - start; a line buffer's shift moves the rows the next
strip shares with this one to the top once its last reader is done (awaited before the
next strip's new rows land); the first shifts, before the loop, pad with zeros.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import prod

from xdsl.dialects import arith, scf
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from lowering.buffer.tile_loop_patterns import (
    INDEX,
    DeadIndexMath,
    Emitter,
    PrefetchLoads,
    after_loads,
    sram_type,
    tile_bytes,
)
from lowering.instrument import PatternWalker
from lowering.tile.strip_plan import (
    WINDOWED,
    StripPlan,
    computed_shape,
    mask_kinds,
    pointwise,
    pooled_epilogues,
    side_inputs,
    side_shape,
    stored_shape,
    strip_shape,
)
from lowering.tile.tile_search import TilingError, align_up
from npu_dialects.arch import Arch
from npu_dialects.compute import ToTensorOp
from npu_dialects.dma import CopyOp, TokenType, WaitOp
from npu_dialects.dtypes import elem_bytes
from npu_dialects.graph import (
    AddOp,
    AvgPoolOp,
    ConcatOp,
    ElementwiseOp,
    GraphOp,
    MaxOp,
    MaxPoolOp,
    MinOp,
    MulOp,
    QuantOp,
    ReluOp,
    SliceOp,
    StructuredOp,
    SumPoolOp,
    TableOp,
    int_array,
    shape_of,
)
from npu_dialects.graph import Conv2dOp as GraphConv2dOp
from npu_dialects.task import SramOp
from npu_dialects.tile import LineBufferOp, LoadOp, StoreOp, StripLoopOp, TeeOp

MaskFn = Callable[[list[float], float, float, SSAValue], SSAValue]  # (rows, inside, outside, masked) -> a DRAM mask


# --------------------------------------------------------------------------------------
# Buffer assignment (the analysis)
# --------------------------------------------------------------------------------------


@dataclass
class StripBuffers:
    """The SRAM buffers of one strip group's task, and what the patterns record."""

    loop: StripLoopOp
    plan: StripPlan
    em: Emitter  # the task block's
    dram: dict[SSAValue, SSAValue]  # group input (kernel argument) -> its DRAM buffer
    outs: list[SSAValue]  # the strip loop's results (DRAM): the last op's, then `StripGeometry.stored`'s
    arch: Arch
    offset: int = 0  # the next free byte
    held: dict[SSAValue, int] = field(default_factory=dict)  # constant -> its SRAM offset
    loaded: dict[SSAValue, SSAValue] = field(default_factory=dict)  # constant -> its buffer
    bufs: dict[tuple[int, tuple[int, ...], int], SSAValue] = field(default_factory=dict)
    values: dict[object, int] = field(default_factory=dict)  # what a buffer holds -> its `value` number
    source: dict[Operation, Operation] = field(default_factory=dict)  # a body graph op -> its group op
    moving: dict[Block, dict[SSAValue, SSAValue]] = field(default_factory=dict)  # strip body -> shifts in flight
    side_of: dict[Operation, tuple[Operation, int]] = field(default_factory=dict)  # a side load -> (reader, operand)
    masked: set[Operation] = field(default_factory=set)  # body ops whose rows outside the tensor are masked
    args: dict[Operation, list[SSAValue | None]] = field(default_factory=dict)  # elementwise op -> its constants
    bias: dict[Operation, SSAValue] = field(default_factory=dict)  # conv -> its bias, loaded once
    rolled: list[SSAValue] = field(default_factory=list)  # line-buffered values (the input first)
    last_read: dict[SSAValue, int] = field(default_factory=dict)  # line-buffered value -> its last reader
    pooled: dict = field(default_factory=dict)  # max-pool -> (conv, relu) whose bias and relu follow it
    deferred: set[Operation] = field(default_factory=set)  # those convs and relus
    steps: scf.ForOp | None = None  # the strip loop, once built

    def __post_init__(self) -> None:
        self.g, self.ops = self.plan.geometry, self.plan.geometry.ops
        self.x = self.g.x
        self.slots = 2 if self.plan.prefetch else 1

    def sram(self, shape: Sequence[int], like: SSAValue, offset: int | None = None, holds: object = None) -> SSAValue:
        """A buffer of the elements of value `like` holding `holds` (a graph value or a key
        naming what it is for; None: a new value): new, or a view of the bytes at `offset`
        (one per offset, shape, value)."""
        size = prod(shape) * elem_bytes(like)
        if offset is None:
            offset = self.offset
            self.offset += align_up(size, self.arch.align)
        value = self.values.setdefault(holds if holds is not None else ("new", len(self.values)), len(self.values))
        key = (offset, tuple(shape), value)
        if key not in self.bufs:
            end = offset + size
            if end > self.arch.sram_bytes:  # (the plan's accounting and the buffers disagree: a bug, said so)
                raise TilingError(f"strip buffers reach byte {end} of sram_bytes={self.arch.sram_bytes} "
                                  f"(planned {self.plan.sram_bytes})")
            op = self.em.add(SramOp(sram_type(shape, like), offset, value))
            if isinstance(holds, SSAValue) and isinstance(holds.owner, Operation):
                op.location = holds.owner.location
            self.bufs[key] = op.results[0]
        return self.bufs[key]

    def const(self, v: SSAValue) -> SSAValue:
        """A constant loaded once, viewed with rank 4 (it broadcasts over H and W)."""
        s = tuple(shape_of(v))
        return self.loaded[v] if len(s) == 4 else self.sram((1,) * (4 - len(s)) + s, v, self.held[v], v)

    def load_constants(self) -> None:
        """The constants, loaded once per task."""
        em, toks = self.em, []
        for v in self.plan.once:
            self.held[v] = self.offset
            zeros = [em.const(0)] * len(shape_of(v))
            self.loaded[v] = self.sram(shape_of(v), v, holds=v)
            toks.append(em.add(CopyOp(self.dram[v], zeros, self.loaded[v], zeros, shape_of(v))).results[0])
        for t in toks:
            em.add(WaitOp(t))

    def slot_buffers(self, mask: MaskFn) -> None:
        """Per slot (two with prefetch): what is loaded per strip - the input, side inputs, masks."""
        g, x, slots = self.g, self.x, self.slots
        self.xin = [self.sram(strip_shape(g, x), x, holds=("x", k)) for k in range(slots)]
        self.side: list[dict[tuple[Operation, int], SSAValue]] = [{} for _ in range(slots)]
        for o in self.ops:
            for i in side_inputs(o, g, {}):
                for k in range(slots):
                    self.side[k][(o, i)] = self.sram(side_shape(g, o, o.operands[i]), o.operands[i])
        self.mask_dram: dict[SSAValue, list[SSAValue]] = {}
        self.mask_sram: list[dict[SSAValue, list[SSAValue]]] = [{} for _ in range(slots)]
        for v, pad in g.masked.items():
            kinds = mask_kinds(v, pad)
            self.mask_dram[v] = [mask(g.mask_rows(v), inside, outside, v) for _, inside, outside in kinds]
            for k in range(slots):
                self.mask_sram[k][v] = [self.sram((1, 1, g.computed(v)[2], 1), v) for _ in kinds]

    def work_area(self) -> None:
        """Every computed value's buffer (per slot when it is the input's); a line-buffered
        value's new rows apart (`fresh`); copies of rows of a wider value (`local`)."""
        g, x, plan = self.g, self.x, self.plan
        base = self.offset
        self.views: dict[SSAValue, list[SSAValue]] = {x: self.xin}
        self.bufs = {}  # (the buffers above are not reused from here on)
        view_of = plan.buffers.view_of
        for op in self.ops:
            r = op.results[0]
            off = plan.buffers.offset[r]
            holds = view_of.get(r, r)
            if off is not None:
                self.views[r] = [self.sram(strip_shape(g, r), r, base + off, holds)]
            elif holds is x:  # a reshape of the input (one slot: no prefetch)
                self.views[r] = [self.sram(strip_shape(g, r), r, offset_of(self.xin[0]), ("x", 0))]
            else:  # an elementwise result overwriting the input slot(s)
                self.views[r] = [self.sram(strip_shape(g, r), r, offset_of(b), (r, k))
                                 for k, b in enumerate(self.xin)]
        self.fresh = {r: self.sram(computed_shape(g, r), r, base + off, view_of.get(r, ("fresh", r)))
                      for r, off in plan.buffers.fresh.items()}
        self.local = {key: self.sram(computed_shape(g, key[0].results[0]), key[0].results[0], base + off)
                      for key, off in plan.buffers.local.items()}

    def pairs(self) -> list[tuple[SSAValue, SSAValue]]:
        """(slot-0 buffer, slot-1 buffer) of everything a strip loads or computes in its slot."""
        out = [(bs[0], bs[1]) for bs in self.views.values() if len(bs) == 2]
        out += [(buf, self.side[1][key]) for key, buf in self.side[0].items()]
        return out + [p for v, bs in self.mask_sram[0].items() for p in zip(bs, self.mask_sram[1][v])]

    def at(self, v: SSAValue) -> SSAValue:
        """v's strip buffer (in slot 0: `PrefetchStrips` alternates the slots)."""
        return self.views[v][0]


def offset_of(buf: SSAValue) -> int:
    """The byte offset of an `npu_task.sram` buffer."""
    assert isinstance(buf.owner, SramOp)
    return buf.owner.offset.value.data


def assign_strip_buffers(body: StripLoopOp, plan: StripPlan, em: Emitter, dram: dict[SSAValue, SSAValue],
                         outs: list[SSAValue], arch: Arch, mask: MaskFn) -> StripBuffers:
    """Place the buffers of the strip group whose loop `body` is placed in a task (whose
    block `em` adds to), its constants loaded once; `plan` is the group's geometry (its
    values the kernel's), `dram` the kernel arguments' buffers, `outs` the loop results'.
    The body's graph ops map to the plan's ops, its loads after the input's to the side
    inputs, in order."""
    b = StripBuffers(body, plan, em, dram, outs, arch)
    b.load_constants()
    b.slot_buffers(mask)
    b.work_area()
    b.args = {op: [b.const(o) if o in b.held else None for o in op.operands]
              for op in b.ops if isinstance(op, ElementwiseOp | QuantOp)}
    b.args.update({op: [None, b.loaded[op.operands[1]]] for op in b.ops if isinstance(op, TableOp)})  # (as it is)
    b.bias = {op: b.sram((1, shape_of(op.bias)[0], 1, 1), op.bias, b.held[op.bias], op.bias)
              for op in b.ops if isinstance(op, GraphConv2dOp) and op.bias is not None}
    order = {v: i for i, v in enumerate([b.x] + [op.results[0] for op in b.ops])}  # (the input first)
    b.rolled = sorted(b.g.rolled, key=order.__getitem__)
    b.last_read = {v: max(i for i, op in enumerate(b.ops) if v in op.operands) for v in b.rolled}
    b.pooled = pooled_epilogues(b.ops, {}, b.g.stored)  # max-pool -> (conv, relu): their bias and relu follow it
    b.deferred = {o for pair in b.pooled.values() for o in pair if o is not None}
    ops = list(body.body.block.ops)
    b.source = dict(zip([o for o in ops if isinstance(o, GraphOp) and not isinstance(o, SliceOp)], b.ops))
    sides = [(o, i) for o in b.ops for i in side_inputs(o, b.g, {})]
    b.side_of = dict(zip([o for o in ops if isinstance(o, LoadOp)][1:], sides))  # (the input's load first)
    return b


def row_at(e: Emitter, v: SSAValue, row: int | SSAValue) -> list[SSAValue]:
    """Offsets into a strip buffer (or tensor) of v at `row` of its H dim, 0 elsewhere."""
    zero = e.const(0)
    return [zero] * (len(shape_of(v)) - 2) + [e.const(row) if isinstance(row, int) else row, zero]


def new_rows(b: StripBuffers, e: Emitter, v: SSAValue) -> list[SSAValue]:
    """Where in v's strip buffer the rows a strip computes (or loads) go: its last ones."""
    a, _, r = b.g.rows[v]
    return row_at(e, v, r - a if v in b.g.rolled else 0)


def shift(b: StripBuffers, e: Emitter, v: SSAValue, first: bool = False) -> SSAValue:
    """Line buffer v: move the rows the next strip shares with this one to the top. The
    `first`, before any strip, has no rows to move: it pads them with zeros (its source
    window lies below the buffer), so the first warm-up strip reads defined rows."""
    a, _, r = b.g.rows[v]
    buf = b.views[v][0]
    size = list(strip_shape(b.g, v))
    size[-2] = r - a
    if first:
        return e.add(CopyOp(buf, row_at(e, v, r), buf, row_at(e, v, 0), size, pad_value=0.0)).results[0]
    return e.add(CopyOp(buf, row_at(e, v, a), buf, row_at(e, v, 0), size)).results[0]


def issue_masks(b: StripBuffers, e: Emitter, s: SSAValue) -> list[SSAValue]:
    """The masks' rows of strip `s` into slot 0."""
    g, zero = b.g, e.const(0)
    toks = []
    for v, drams in b.mask_dram.items():
        off = e.mul_c(e.add_i(s, e.const(g.warm)) if g.warm else s, g.rows[v][0])
        for dram, sram in zip(drams, b.mask_sram[0][v]):
            toks.append(e.add(CopyOp(dram, [zero, zero, off, zero], sram, [zero] * 4,
                                     (1, 1, g.computed(v)[2], 1))).results[0])
    return toks


# --------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------




class StripLoopToFor(RewritePattern):
    """`npu_tile.strip_loop` -> `scf.for %s` over the task's strips [lo - warm, hi), its
    body cloned with the loads first, smallest first (the masks' rows, then the input
    and side inputs by size); the line buffers' shifts
    (after the last reader of each) are loop-carried, the first ones before the loop."""

    def __init__(self, bufs: StripBuffers):
        self.bufs = bufs

    def clone_body(self, op: StripLoopOp, body: Block) -> list[SSAValue]:
        """The strip's ops into `body` (loads first); the shifts it issues."""
        b, be = self.bufs, self.bufs.em.nested(body)
        vmap: dict[SSAValue, SSAValue] = {op.body.block.args[0]: body.args[0]}
        ops = list(op.body.block.ops)
        # issued smallest first, as the cost model prices them (`stall_for`): the masks' rows,
        # then the loads by size, so a big load never holds up the core's last free channel
        masks = issue_masks(b, be, body.args[0])
        for o in sorted((o for o in ops if isinstance(o, LoadOp)), key=tile_bytes):
            new = be.add(o.clone(vmap))
            if o in b.side_of:
                b.side_of[new] = b.side_of.pop(o)
        for t in masks:
            be.add(WaitOp(t))
        moved: dict[SSAValue, SSAValue] = {}
        due: list[SSAValue] = []
        for o in ops:
            if isinstance(o, LoadOp):
                continue
            new = be.add(o.clone(vmap))
            if o in b.source:
                b.source[new] = src = b.source.pop(o)
                due = [v for v in b.rolled if b.ops[b.last_read[v]] is src]
            if due and not isinstance(o.next_op, LineBufferOp):  # (after the new rows are in)
                moved.update((v, shift(b, be, v)) for v in due)
                due = []
        return [moved[v] for v in b.rolled]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if op is not b.loop:
            return
        assert isinstance(op, StripLoopOp)
        lo, hi = b.em.task_block.args
        em = b.em.at(op)
        start = em.add(arith.SubiOp(lo, em.const(b.g.warm))).results[0] if b.g.warm else lo  # (warm-up first)
        shifts0 = [shift(b, em, v, first=True) for v in b.rolled]
        body = Block(arg_types=[INDEX] + [TokenType()] * len(b.rolled))
        b.moving[body] = dict(zip(b.rolled, body.args[1:]))
        body.add_op(scf.YieldOp(*self.clone_body(op, body)))
        b.steps = scf.ForOp(start, hi, em.const(1), shifts0, Region(body))
        em.add(b.steps)
        for t in b.steps.results:
            em.add(WaitOp(t))
        rewriter.erase(op)


def slot_copy(rewriter: PatternRewriter, op: LoadOp, em: Emitter, dst: SSAValue, dst_at: list[SSAValue],
              pad: float) -> None:
    """Load `op` -> a copy of its rows into `dst` at `dst_at`, waited for after the
    strip's loads; the tile becomes `dst`'s tensor."""
    assert isinstance(op.source.owner, ToTensorOp)
    copy = em.add(CopyOp(op.source.owner.buffer, em.offsets(op), dst, dst_at, list(op.window()[3]), pad_value=pad))
    rewriter.insert(WaitOp(copy.results[0]), InsertPoint.before(after_loads(op)))
    tile = ToTensorOp(dst)
    rewriter.replace(op, [tile], [tile.tensor])


class StripLoadToCopy(RewritePattern):
    """The input's rows -> a copy into the input slot (a line buffer's new rows below the
    ones it keeps), padded outside the tensor as the plan says."""

    def __init__(self, bufs: StripBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if not isinstance(op, LoadOp) or op in b.side_of or not isinstance(op.source.owner, ToTensorOp) \
                or op.source.owner.buffer is not b.dram.get(b.x):
            return
        em = b.em.at(op)
        slot_copy(rewriter, op, em, b.xin[0], new_rows(b, em, b.x), b.g.x_pad)


class SideLoadToCopy(RewritePattern):
    """A side input's rows -> a copy into its reader's slot buffer (padded as its load
    says: `ElementwiseOp.outside_value`)."""

    def __init__(self, bufs: StripBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if not isinstance(op, LoadOp) or op not in b.side_of or not isinstance(op.source.owner, ToTensorOp):
            return
        em = b.em.at(op)
        pad = op.pad_value.value.data if op.pad_value is not None else 0.0
        slot_copy(rewriter, op, em, b.side[0][b.side_of.pop(op)], row_at(em, op.tile, 0), pad)


class MaskRows(RewritePattern):
    """After a graph op whose value some strips compute rows of outside the tensor (a
    padded conv or pool reads them): in those strips only, multiply the rows by the
    loaded mask (then add -3.4e38 outside for a max-pool)."""

    def __init__(self, bufs: StripBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        src = b.source.get(op)
        if src is None or op in b.masked or src.results[0] not in b.g.masked or op.next_op is None:
            return
        b.masked.add(op)
        block = op.parent_block()
        assert block is not None  # (in the strip loop's body)
        res, e = src.results[0], b.em.at(op.next_op)
        e.loc = src.location
        out, (first, end) = b.fresh.get(res) or b.at(res), b.g.boundary(res)
        s, g, me, edge, then_b = block.args[0], b.g, e, None, None
        if -g.warm < first or end < g.S:
            edge = e.add(arith.CmpiOp(s, e.const(first), "slt")).results[0] if first > -g.warm else None
            if end < g.S:
                past = e.add(arith.CmpiOp(s, e.const(end), "sge")).results[0]
                edge = past if edge is None else e.add(arith.OrIOp(edge, past)).results[0]
            then_b = Block()
            me = e.nested(then_b)
        fns = {"mul": MulOp, "add": AddOp, "max": MaxOp, "min": MinOp}
        for (fn, _, _), m in zip(mask_kinds(res, b.g.masked[res]), b.mask_sram[0][res]):
            me.stage(fns[fn], [out, m], out)
        if then_b is not None and edge is not None:
            then_b.add_op(scf.YieldOp())
            e.add(scf.IfOp(edge, [], Region(then_b)))


class StageStripOp(RewritePattern):
    """A graph op of the strip -> staged on the buffers the analysis placed (a conv or
    pool padded along W only, cropping rows; the bias and relu a max-pool defers after
    it; an elementwise op's side inputs from their slots, rows of a wider value copied
    out first); its readers read its buffer."""

    def __init__(self, bufs: StripBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        src = b.source.get(op)
        if src is None or (src.results[0] in b.g.masked and op not in b.masked):
            return
        res = src.results[0]
        out = b.fresh.get(res) or b.at(res)
        e = b.em.at(op)
        e.loc = src.location  # (each op's compute names its own ONNX node)
        self.stage(e, src, out)
        del b.source[op]
        tile = ToTensorOp(out)
        rewriter.replace(op, [tile], [tile.tensor])

    def stage(self, e: Emitter, op: Operation, out: SSAValue) -> None:
        b = self.bufs
        if isinstance(op, WINDOWED):  # padded along W only; rows other readers need cropped
            p = op.params
            top, bottom = b.g.crop[op]
            pads = int_array((-top, p["pads"][1], -bottom, p["pads"][3]))
        if isinstance(op, GraphConv2dOp):
            e.stage(op, [b.at(op.input), b.loaded[op.weight]], out, pads=pads)
            if op.bias is not None and op not in b.deferred:  # (per output channel)
                e.stage(AddOp, [out, b.bias[op]], out)
        elif isinstance(op, MaxPoolOp):
            e.stage(op, [b.at(op.input)], out, pads=pads)
            conv, relu = b.pooled.get(op, (None, None))
            if conv is not None and conv.bias is not None:
                e.stage(AddOp, [out, b.bias[conv]], out)
            if relu is not None:
                e.stage(ReluOp, [out], out)
        elif isinstance(op, (AvgPoolOp, SumPoolOp)):  # (an average's rows outside x read NaN, a sum's 0: the DMA pads them)
            e.stage(op, [b.at(op.input)], out, pads=pads)
        elif pointwise(op) and op not in b.deferred:  # (a deferred relu follows the pool)
            self.elementwise(e, op, out)
        elif isinstance(op, QuantOp | TableOp):  # its parameters (a table) loaded once
            params = [c for c in b.args[op][1:] if c is not None]
            assert len(params) == len(op.operands) - 1  # (constants over H and W: `link_ok`)
            e.stage(op, [b.at(op.operands[0]), *params], out)
        elif isinstance(op, StructuredOp) and not isinstance(op, ConcatOp):  # a transpose keeping H, W; an LRN
            e.stage(op, [b.at(op.operands[0])], out)
        # (a reshape views its operand; a concat's operands were computed into it)

    def elementwise(self, e: Emitter, op: Operation, out: SSAValue) -> None:
        """An elementwise op: its side inputs from the slot, rows of a wider value copied out first."""
        b = self.bufs
        ins = [b.side[0][(op, i)] if (op, i) in b.side[0] else b.local.get((op, v)) or (b.at(v) if c is None else c)
               for i, (c, v) in enumerate(zip(b.args[op], op.operands))]
        copies = [e.add(CopyOp(b.at(v), row_at(e, v, first), b.local[(op, v)], row_at(e, v, 0),
                               computed_shape(b.g, op.results[0]))).results[0]
                  for (o, v), first in b.g.local.items() if o is op]  # (rows of a wider value)
        for t in copies:
            e.add(WaitOp(t))
        e.stage(op, ins, out)


class ShiftLineBuffers(RewritePattern):
    """`npu_tile.line_buffer` of the input -> its load waits for the shift in flight; of a
    computed value -> its new rows moved in below the kept ones (after that shift)."""

    def __init__(self, bufs: StripBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        block = op.parent_block()
        if not isinstance(op, LineBufferOp) or block is None or block not in b.moving \
                or not isinstance(op.new.owner, ToTensorOp):
            return
        buf = op.new.owner.buffer
        v = b.x if buf is b.xin[0] else next((r for r, f in b.fresh.items() if f is buf), None)
        if v is None:
            return
        moving = b.moving[block][v]
        if v is b.x:  # (before the strip's loads)
            rewriter.insert(WaitOp(moving), InsertPoint.at_start(block))
        else:
            e = b.em.at(op)
            e.add(WaitOp(moving))
            e.add(WaitOp(e.add(CopyOp(buf, row_at(e, v, 0), b.at(v), new_rows(b, e, v),
                                      computed_shape(b.g, v))).results[0]))
        tile = ToTensorOp(b.at(v))
        rewriter.replace(op, [tile], [tile.tensor])


class StripStoreToCopy(RewritePattern):
    """The strip's output rows -> a copy to the output (clipped at its end), and each
    `npu_tile.tee` of a stored inner value's rows -> a copy to its result, issued together
    and waited for; not in the warm-up strips before the task's first."""

    def __init__(self, bufs: StripBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if not isinstance(op, StoreOp) or not isinstance(op.value.owner, ToTensorOp):
            return
        block = op.parent_block()
        assert block is not None  # (the strip loop's body)
        tees = [o for o in block.ops if isinstance(o, TeeOp)]
        e = b.em.at(op)
        se, then_b = e, None
        if b.g.warm:  # (the warm-up strips before the task's first store nothing)
            then_b = Block()
            se = e.nested(then_b)
        y = b.ops[-1].results[0]
        zero = se.const(0)
        toks = []
        for tee in tees:  # (rows [A*s, A*s + A) of v: from row -c0 of its strip buffer)
            i = tee.into.value.data
            v = b.g.stored[i - 1]
            toks.append(se.add(CopyOp(b.at(v), row_at(se, v, -b.g.rows[v][1]), b.outs[i], se.offsets(tee),
                                      stored_shape(b.g, v), clip=True)).results[0])
        toks.append(se.add(CopyOp(b.at(y), [zero] * len(shape_of(y)), b.outs[0], se.offsets(op),
                                  strip_shape(b.g, y), clip=True)).results[0])
        for t in toks:
            se.add(WaitOp(t))
        for tee in tees:
            rewriter.erase(tee)
        if then_b is not None:
            then_b.add_op(scf.YieldOp())
            e.add(scf.IfOp(e.add(arith.CmpiOp(op.indices[0], b.em.task_block.args[0], "sge")).results[0], [],
                           Region(then_b)))
        rewriter.erase(op)


def slot_sets(em: Emitter, pairs: list[tuple[SSAValue, SSAValue]], s: SSAValue, start: SSAValue
              ) -> tuple[list[SSAValue], list[SSAValue]]:
    """The buffers strip s computes in and the ones it prefetches into (by s - start's parity)."""
    odd = em.eq_c(em.rem_c(em.add(arith.SubiOp(s, start)).results[0], 2), 1)
    return [em.select(odd, b1, b0) for b0, b1 in pairs], [em.select(odd, b0, b1) for b0, b1 in pairs]


class PrefetchStrips(RewritePattern):
    """Prefetch: the copies into slot 0 at the top of the strip loop are issued one strip
    ahead into the other slot (the first strip's before the loop); the last strip is
    peeled. Line buffers' shifts stay loop-carried."""

    def __init__(self, bufs: StripBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if op is not b.steps or b.slots != 2:
            return
        assert isinstance(op, scf.ForOp)
        pairs = b.pairs()
        slot0 = [p[0] for p in pairs]
        body, start = op.body.block, op.lb
        s, carried = body.args[0], list(body.args[1:])
        copies = [o for o in body.ops if isinstance(o, CopyOp) and o.dst in slot0]
        waits = [o for o in body.ops if isinstance(o, WaitOp) and o.token.owner in copies]
        rest = [o for o in body.ops if o not in copies and o not in waits and not isinstance(o, scf.YieldOp)]
        yielded = list(body.last_op.operands) if body.last_op is not None else []
        em = b.em.at(op)
        toks0 = PrefetchLoads.issue(em, copies, {s: start})
        last = em.add(arith.SubiOp(op.ub, em.const(1))).results[0]
        new = Block(arg_types=[INDEX] + [TokenType()] * (len(toks0) + len(carried)))
        ne = em.nested(new)
        cur, nxt = slot_sets(ne, pairs, new.args[0], start)
        nxt_toks = PrefetchLoads.issue(ne, copies, {s: ne.add_i(new.args[0], ne.const(1)), **dict(zip(slot0, nxt))})
        for tk in new.args[1:1 + len(toks0)]:
            ne.add(WaitOp(tk))
        vmap = {s: new.args[0], **dict(zip(slot0, cur)), **dict(zip(carried, new.args[1 + len(toks0):]))}
        for o in rest:
            ne.add(o.clone(vmap)).location = o.location
        new.add_op(scf.YieldOp(*nxt_toks, *[vmap.get(v, v) for v in yielded]))
        loop = em.add(scf.ForOp(start, last, em.const(1), toks0 + list(op.iter_args), Region(new)))
        for tk in loop.results[:len(toks0)]:
            em.add(WaitOp(tk))
        cur, _ = slot_sets(em, pairs, last, start)
        vmap = {s: last, **dict(zip(slot0, cur)), **dict(zip(carried, loop.results[len(toks0):]))}
        for o in rest:
            em.add(o.clone(vmap)).location = o.location
        b.steps = None
        rewriter.replace(op, [], [vmap.get(v, v) for v in yielded])


class DeadStripValues(RewritePattern):
    """A row slice, line buffer or `to_tensor` nothing reads any more is erased."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, (SliceOp, LineBufferOp, ToTensorOp)) and not op.results[0].uses:
            rewriter.erase(op)


def lower_strip_loop(bufs: StripBuffers, region: Region) -> None:
    """Apply the patterns, stage by stage, to the task body `region` holding `bufs.loop`."""
    # (the stages that rewrite one known op - the strip loop, the step loop - walk once, as
    # `lower_tile_loop`'s)
    stages: list[tuple[list[RewritePattern], bool]] = [
        ([StripLoopToFor(bufs)], False), ([StripLoadToCopy(bufs), SideLoadToCopy(bufs), MaskRows(bufs)], True),
        ([StageStripOp(bufs)], True), ([ShiftLineBuffers(bufs), StripStoreToCopy(bufs)], True),
        ([PrefetchStrips(bufs)], False), ([DeadStripValues(), DeadIndexMath()], True)]
    for patterns, again in stages:
        applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)  # (the buffers have no uses yet)
        PatternWalker(applier, apply_recursively=again).rewrite_region(region)

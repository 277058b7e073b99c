"""`npu-bufferize`: tiled kernels -> explicit DMA and compute on DRAM/SRAM buffers.

Assumes every non-constant op of `func.func` bodies is an `npu_tile.kernel`, tiled
kernels in their `npu_tile.loop` form (run `npu-tile`, `npu-tile-loops` first).
Produces the task-level form documented in `npu_dialects/task.py`:
- the function takes the model inputs then outputs as `dram` memrefs (outputs
  are written in place), constants become `npu_task.weight`, kernel results
  `npu_task.alloc` buffers (a returned result uses the output argument), view
  kernels `npu_task.view`;
- each kernel becomes one `npu_task.task` on core 0 covering all its parallel
  tiles (`range = [0, P)`); `npu-schedule` splits and places it.
A tiled kernel's task is its `npu_tile.loop` lowered by the patterns of
`tile_loop_patterns.py`; layer and strip groups are still emitted by `GroupBuilder`
and `StripBuilder`. Graph ops in tasks go to `npu_compute` by the patterns of
`compute_patterns.py`. No options.

Algorithm
---------
See `tile_loop_patterns.py` for a tiled kernel's task. Buffers: kernel results
get `npu_task.alloc` buffers, which may take the bytes of an input the kernel
reads once at exactly its output tile's position (`in_place_source`); a concat's
operands are written in place into its buffer (`concat_placement`).

Group kernels follow the `plan` `npu-layer-group` recorded (`#npu_tile.group`: the
buffer offsets; `#npu_tile.strip`: rows per strip, prefetch, line buffers, the operand
overwritten in place): only the geometry those decisions imply is recomputed (rows per
value and strip, buffer layout, DMA order), and a plan it does not reproduce is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    LocationAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from lowering.buffer.compute_patterns import describe_unlowered, lower_compute
from lowering.buffer.tile_loop_patterns import INDEX, Emitter, assign_buffers, loop_parts, lower_tile_loop, sram_type
from lowering.errors import CompileError
from lowering.task.taskgraph import span
from lowering.tile.group_plan import group_schedule, is_view
from lowering.tile.strip_loops import strip_loop_of
from lowering.tile.strip_plan import (
    NEG,
    WINDOWED,
    StripPlan,
    computed_shape,
    in_place_candidates,
    pooled_epilogues,
    recorded_plan,
    side_inputs,
    strip_shape,
)
from lowering.tile.tile_loops import loop_of
from lowering.tile.tile_search import (
    DimMap,
    KernelShape,
    Loop,
    TilingError,
    Window,
    align_up,
    matmul_views,
)
from npu_dialects.arch import Arch, arch_of
from npu_dialects.compute import ToTensorOp
from npu_dialects.dma import CopyOp, TokenType, WaitOp
from npu_dialects.graph import (
    AddOp,
    AvgPoolOp,
    ConcatOp,
    ConstantOp,
    ElementwiseOp,
    GemmOp,
    MatMulOp,
    MaxPoolOp,
    MulOp,
    ReluOp,
    StructuredOp,
    attr_int,
    int_array,
    ints,
    shape_of,
)
from npu_dialects.graph import Conv2dOp as GraphConv2dOp
from npu_dialects.task import AllocOp, SramOp, TaskOp, ViewOp, WeightOp
from npu_dialects.tile import GroupPlanAttr, KernelKind, KernelOp, ReduceOp, StoreOp, StripPlanAttr, WindowOp
from npu_dialects.tile import LoadOp as TileLoadOp


def dram_type(shape: Sequence[int]) -> MemRefType:
    return MemRefType(f32, list(shape), memory_space=StringAttr("dram"))


def window_of(op: WindowOp, loops: Sequence[str], source: int | None) -> Window:
    """The `Window` an `npu_tile.load`/`store` spells out."""
    view, terms, consts, sizes = op.window()
    dims = tuple(DimMap(tuple((loops[j], c) for j, c in ts), const, size)
                 for ts, const, size in zip(terms, consts, sizes))
    pad = op.pad_value.value.data if isinstance(op, TileLoadOp) and op.pad_value is not None else None
    return Window(source, view, dims, pad)


def loop_shape(kernel: KernelOp) -> KernelShape:
    """The windows the kernel's `npu_tile.loop` spells out (for the in-place analysis
    and the task's range)."""
    loop = loop_of(kernel)
    if loop is None:
        raise TilingError("the kernel has no tile loop (run npu-tile-loops first)")
    names, tile, grid = loop.loop_names, loop.tile_sizes, loop.trip_counts
    nred = loop.reductions.value.data
    loops = [Loop(n, s * g, i >= len(names) - nred) for i, (n, s, g) in enumerate(zip(names, tile, grid))]
    args: list[SSAValue] = list(kernel.body.block.args)
    loads, _, _, epi_loads, _, store = loop_parts(loop)
    return KernelShape(kernel.kind.data, loops, dict(zip(names, tile)),
                       [window_of(o, names, args.index(o.source)) for o in loads], window_of(store, names, None),
                       [window_of(o, names, args.index(o.source)) for o in epi_loads])


class GroupBuilder:
    """Emits the body of a layer group's task (`lowering/tile/group_plan.py`): whole tensors in
    SRAM at the planned offsets, one compute op per graph op, the planned DMA order."""

    def __init__(self, kernel: KernelOp, ins: list[SSAValue], outs: list[SSAValue], arch: Arch):
        self.kernel, self.arch = kernel, arch
        self.block = Block(arg_types=[INDEX, INDEX])
        self.em = Emitter(self.block, self.block, {}, kernel.location)
        self.dram: dict[SSAValue, SSAValue] = dict(zip(kernel.body.block.args, ins))
        self.out_dram = dict(zip(kernel.yield_op.values, outs))
        self.bufs: dict[tuple[int, int, tuple[int, ...]], SSAValue] = {}  # (value, offset, shape) -> npu_task.sram
        self.values: dict[SSAValue, int] = {}  # a value owning its bytes -> its `value` number
        self.offset: dict[SSAValue, int] = {}  # every body value -> its recorded SRAM offset

    def sram(self, v: SSAValue, shape: Sequence[int] | None = None) -> SSAValue:
        """The SRAM buffer holding `v` (viewed with `shape`, e.g. rank-extended): a view
        of the value it aliases for a reshape or slice, else a value of its own (an
        in-place result too, at its operand's bytes)."""
        shape = tuple(shape_of(v) if shape is None else shape)
        base = v
        while isinstance(base.owner, Operation) and base.owner.parent_block() is self.kernel.body.block \
                and is_view(base.owner):
            base = base.owner.operands[0]
        value = self.values.setdefault(base, len(self.values))
        key = (value, self.offset[v], shape)
        if key not in self.bufs:
            op = self.em.add(SramOp(sram_type(shape), self.offset[v], value))
            if isinstance(base.owner, Operation):
                op.location = base.owner.location
            self.bufs[key] = op.results[0]
        return self.bufs[key]

    def copy(self, src: SSAValue, dst: SSAValue, shape: Sequence[int]) -> SSAValue:
        zeros = [self.em.const(0)] * len(shape)
        return self.em.add(CopyOp(src, zeros, dst, zeros, list(shape))).results[0]

    def build(self) -> Block:
        """The group's loads, computes and stores in the planned order, its buffers where
        its recorded `#npu_tile.group` plan puts them."""
        k, ops = self.kernel, self.kernel.graph_ops()
        plan = k.plan
        if not isinstance(plan, GroupPlanAttr):
            raise TilingError("a layer group needs its #npu_tile.group plan (npu-layer-group records it)")
        if plan.sram.data > self.arch.sram_bytes:
            raise TilingError(f"its plan {plan} needs more than sram_bytes={self.arch.sram_bytes}")
        self.offset = dict(zip([*k.body.block.args, *(op.results[0] for op in ops)], ints(plan.offsets, ())))
        loads, actions = group_schedule(ops, list(k.yield_op.values), self.arch)
        toks: dict[int, SSAValue] = {}
        for act in actions:
            if act[0] == "load":
                (v,) = loads[act[1]]  # (packed weights are one input by now)
                toks[act[1]] = self.copy(self.dram[v], self.sram(v), shape_of(v))
            elif act[0] == "wait":
                self.em.add(WaitOp(toks[act[1]]))
            elif act[0] == "compute":
                self.em.loc = ops[act[1]].location  # (each compute op names its own ONNX node)
                self.compute(ops[act[1]])
                self.em.loc = self.kernel.location
            else:
                v = act[1]
                self.copy(self.sram(v), self.out_dram[v], shape_of(v))
        return self.block

    def compute(self, op: Operation) -> None:
        """`op` on whole SRAM buffers (lowered by `compute_patterns`); a gemm's or conv's
        bias is an `add` after it."""
        out = op.results[0]
        if is_view(op):
            return  # the result aliases (part of) the input's buffer
        if isinstance(op, GraphConv2dOp):
            self.em.stage(op, [self.sram(op.input), self.sram(op.weight)], self.sram(out))
            if op.bias is not None:
                c = shape_of(op.bias)[0]
                self.em.stage(AddOp, [self.sram(out), self.sram(op.bias, (1, c, 1, 1))], self.sram(out))
        elif isinstance(op, (GemmOp, MatMulOp)):
            v = matmul_views(op)
            self.em.stage(op, [self.sram(op.operands[0], v.a), self.sram(op.operands[1], v.b)], self.sram(out, v.out))
            if isinstance(op, GemmOp) and op.c is not None:
                self.em.stage(AddOp, [self.sram(out), self.sram(op.c)], self.sram(out))
        else:
            self.em.stage(op, [self.sram(v) for v in op.operands], self.sram(out))


class StripBuilder:
    """Emits the body of a strip group's task (`lowering/tile/strip_plan.py`): the constants
    loaded once, then a loop over its strips [lo, hi): load the input rows (the DMA
    pads outside the tensor), the side inputs' and the masks' rows, run each op on
    the strip buffers `strip_buffers` placed (elementwise ops in place, reshapes as
    views, a concat's operands computed into its channel ranges; convs and pools
    padded along W only, cropping the rows of their input only other readers
    need), mask the values a padded op reads next, store the output rows (clipped
    at the end)."""

    def __init__(self, kernel: KernelOp, plan: StripPlan, ins: list[SSAValue], out: SSAValue, arch: Arch,
                 top: "FuncBuilder"):
        self.kernel, self.plan, self.arch, self.top, self.out = kernel, plan, arch, top, out
        self.dram: dict[SSAValue, SSAValue] = dict(zip(kernel.body.block.args, ins))
        self.block = Block(arg_types=[INDEX, INDEX])
        self.em = Emitter(self.block, self.block, {}, kernel.location)
        self.offset = 0
        self.held: dict[SSAValue, int] = {}  # constant -> its SRAM offset
        self.bufs: dict[tuple[int, tuple[int, ...], int], SSAValue] = {}  # (offset, shape, value) -> npu_task.sram
        self.values: dict[object, int] = {}  # what a buffer holds -> its `value` number

    def sram(self, shape: Sequence[int], offset: int | None = None, holds: object = None) -> SSAValue:
        """A buffer in the task's SRAM holding `holds` (a graph value, or any key naming
        what the buffer is for; None: a new value): a new one, or a view of the bytes at
        `offset` (one buffer per offset, shape and value)."""
        if offset is None:
            offset = self.offset
            self.offset += align_up(prod(shape) * 4, self.arch.align)
        value = self.values.setdefault(holds if holds is not None else ("new", len(self.values)), len(self.values))
        key = (offset, tuple(shape), value)
        if key not in self.bufs:
            end = offset + prod(shape) * 4
            if end > self.arch.sram_bytes:  # (the plan's accounting and the buffers disagree: a bug, said so)
                raise TilingError(f"strip buffers reach byte {end} of sram_bytes={self.arch.sram_bytes} "
                                  f"(planned {self.plan.sram_bytes})")
            op = self.em.add(SramOp(sram_type(shape), offset, value))
            if isinstance(holds, SSAValue) and isinstance(holds.owner, Operation):
                op.location = holds.owner.location
            self.bufs[key] = op.results[0]
        return self.bufs[key]

    @staticmethod
    def offset_of(buf: SSAValue) -> int:
        """The byte offset of an `npu_task.sram` buffer."""
        assert isinstance(buf.owner, SramOp)
        return buf.owner.offset.value.data

    def const(self, v: SSAValue) -> SSAValue:
        """A constant loaded once, viewed with rank 4 (it broadcasts over H and W)."""
        s = tuple(shape_of(v))
        return self.loaded[v] if len(s) == 4 else self.sram((1,) * (4 - len(s)) + s, self.held[v], v)

    def build(self) -> Block:
        self.ops = self.plan.geometry.ops
        self.g, self.x = self.plan.geometry, self.plan.geometry.x
        self.load_constants()
        self.slot_buffers()
        self.work_area()
        ops, g = self.ops, self.g
        self.args = {op: [self.const(o) if o in self.held else None for o in op.operands]
                     for op in ops if isinstance(op, ElementwiseOp)}
        self.bias = {op: self.sram((1, shape_of(op.bias)[0], 1, 1), self.held[op.bias], op.bias)
                     for op in ops if isinstance(op, GraphConv2dOp) and op.bias is not None}

        def order(v: SSAValue) -> int:  # (the input first, then in op order)
            if v is self.x:
                return -1
            assert isinstance(v.owner, Operation)
            return ops.index(v.owner)

        self.rolled = sorted(g.rolled, key=order)
        self.last_read = {v: max(i for i, op in enumerate(ops) if v in op.operands) for v in self.rolled}
        self.pooled = pooled_epilogues(ops, {})  # max-pool -> (conv, relu): their bias and relu follow it
        self.deferred = {o for pair in self.pooled.values() for o in pair if o is not None}
        return self.emit_loop()

    def load_constants(self) -> None:
        """The constants, loaded once per task."""
        em, toks = self.em, []
        self.loaded: dict[SSAValue, SSAValue] = {}
        for v in self.plan.once:
            self.held[v] = self.offset
            zeros = [em.const(0)] * len(shape_of(v))
            self.loaded[v] = self.sram(shape_of(v), holds=v)
            toks.append(em.add(CopyOp(self.dram[v], zeros, self.loaded[v], zeros, shape_of(v))).results[0])
        for t in toks:
            em.add(WaitOp(t))

    def slot_buffers(self) -> None:
        """Per slot (two with prefetch): what is loaded per strip - the input, side inputs, masks."""
        g, x = self.g, self.x
        slots = self.slots = 2 if self.plan.prefetch else 1
        self.xin = [self.sram(strip_shape(g, x), holds=("x", k)) for k in range(slots)]
        self.side: list[dict[tuple[Operation, int], SSAValue]] = [{} for _ in range(slots)]
        for o in self.ops:
            for i in side_inputs(o, g, {}):
                for k in range(slots):
                    self.side[k][(o, i)] = self.sram(computed_shape(g, o.results[0]))
        self.mask_dram: dict[SSAValue, list[SSAValue]] = {}
        self.mask_sram: list[dict[SSAValue, list[SSAValue]]] = [{} for _ in range(slots)]
        for v, pad in g.masked.items():
            rows = g.mask_rows(v)
            kinds = [(1.0, 0.0)] + ([(0.0, NEG)] if pad != 0.0 else [])  # (inside, outside)
            self.mask_dram[v] = [self.top.mask(rows, inside, outside, self.kernel.location)
                                 for inside, outside in kinds]
            for k in range(slots):
                self.mask_sram[k][v] = [self.sram((1, 1, g.computed(v)[2], 1)) for _ in kinds]

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
                self.views[r] = [self.sram(strip_shape(g, r), base + off, holds)]
            elif holds is x:  # a reshape of the input (one slot: no prefetch)
                self.views[r] = [self.sram(strip_shape(g, r), self.offset_of(self.xin[0]), ("x", 0))]
            else:  # an elementwise result overwriting the input slot(s)
                self.views[r] = [self.sram(strip_shape(g, r), self.offset_of(b), (r, k))
                                 for k, b in enumerate(self.xin)]
        self.fresh = {r: self.sram(computed_shape(g, r), base + off, view_of.get(r, ("fresh", r)))
                      for r, off in plan.buffers.fresh.items()}
        self.local = {key: self.sram(computed_shape(g, key[0].results[0]), base + off)
                      for key, off in plan.buffers.local.items()}

    @staticmethod
    def row_at(e: Emitter, v: SSAValue, row: int | SSAValue) -> list[SSAValue]:
        """Offsets into a strip buffer (or tensor) of v at `row` of its H dim, 0 elsewhere."""
        zero = e.const(0)
        return [zero] * (len(shape_of(v)) - 2) + [e.const(row) if isinstance(row, int) else row, zero]

    def rows_of(self, e: Emitter, s: SSAValue, v: SSAValue) -> list[SSAValue]:
        """Where in tensor v the rows strip `s` computes of it start."""
        a, c0, _ = self.g.computed(v)
        first = e.mul_c(s, a)
        return self.row_at(e, v, e.add_i(first, e.const(c0)) if c0 else first)

    def issue(self, e: Emitter, s: SSAValue, k: int) -> list[SSAValue]:
        """The loads of strip `s` into slot k."""
        g, x = self.g, self.x
        zero = e.const(0)
        toks: list[SSAValue] = [e.add(CopyOp(self.dram[x], self.rows_of(e, s, x), self.xin[k], self.new_rows(e, x),
                                             computed_shape(g, x), pad_value=g.x_pad)).results[0]]
        for (o, i), sram in self.side[k].items():
            r = o.results[0]
            toks.append(e.add(CopyOp(self.dram[o.operands[i]], self.rows_of(e, s, r), sram, self.row_at(e, r, 0),
                                     computed_shape(g, r), pad_value=0.0)).results[0])
        for v, drams in self.mask_dram.items():
            off = e.mul_c(e.add_i(s, e.const(g.warm)) if g.warm else s, g.rows[v][0])
            for dram, sram in zip(drams, self.mask_sram[k][v]):
                toks.append(e.add(CopyOp(dram, [zero, zero, off, zero], sram, [zero] * 4,
                                         (1, 1, g.computed(v)[2], 1))).results[0])
        return toks

    def new_rows(self, e: Emitter, v: SSAValue) -> list[SSAValue]:
        """Where in v's strip buffer the rows a strip computes (or loads) go: its last ones."""
        a, _, r = self.g.rows[v]
        return self.row_at(e, v, r - a if v in self.g.rolled else 0)

    def shift(self, e: Emitter, v: SSAValue, first: bool = False) -> SSAValue:
        """Line buffer v: move the rows the next strip shares with this one to the top
        (issued once this strip's last reader of v is done; awaited before the next
        strip's new rows land). The `first`, before any strip, has no rows to move: it
        pads them with zeros (its source window lies below the buffer), so the first
        warm-up strip reads defined rows."""
        a, _, r = self.g.rows[v]
        buf = self.xin[0] if v is self.x else self.views[v][0]
        size = list(strip_shape(self.g, v))
        size[-2] = r - a
        if first:
            return e.add(CopyOp(buf, self.row_at(e, v, r), buf, self.row_at(e, v, 0), size, pad_value=0.0)).results[0]
        return e.add(CopyOp(buf, self.row_at(e, v, a), buf, self.row_at(e, v, 0), size)).results[0]

    @staticmethod
    def pick(e: Emitter, odd: SSAValue | None, vals: list[SSAValue]) -> SSAValue:
        return vals[0] if odd is None or len(vals) == 1 else e.select(odd, vals[1], vals[0])

    def compute(self, e: Emitter, s: SSAValue, odd: SSAValue | None, moving: dict[SSAValue, SSAValue]
                ) -> dict[SSAValue, SSAValue]:
        """Strip `s`'s ops on the slot `odd` selects, and its store; `moving`: the line
        buffers' shifts in flight, and the ones it issues are returned."""
        g = self.g
        moved: dict[SSAValue, SSAValue] = {}
        picked: dict[SSAValue, SSAValue] = {}

        def at(v: SSAValue) -> SSAValue:
            if v not in picked:
                picked[v] = self.pick(e, odd, self.views[v])
            return picked[v]

        for op in self.ops:
            e.loc = op.location  # (each op's compute names its own ONNX node)
            res = op.results[0]
            out = self.fresh.get(res) or at(res)
            self.compute_op(e, op, out, at, odd)
            # (a reshape views its operand; a concat's operands were computed into it)
            if res in g.masked:  # only in the strips that hold rows outside the tensor
                self.mask(e, s, res, out, odd)
            if res in self.fresh:
                e.add(WaitOp(moving[res]))
                e.add(WaitOp(e.add(CopyOp(out, self.row_at(e, res, 0), at(res), self.new_rows(e, res),
                                          computed_shape(g, res))).results[0]))
            for v in self.rolled:
                if self.ops[self.last_read[v]] is op:
                    moved[v] = self.shift(e, v)
        e.loc = self.kernel.location
        self.store(e, s, at(self.ops[-1].results[0]))
        return moved

    def compute_op(self, e: Emitter, op: Operation, out: SSAValue, at, odd: SSAValue | None) -> None:
        """One graph op on the strip's buffers (staged for the compute patterns)."""
        g = self.g
        if isinstance(op, WINDOWED):  # padded along W only; rows other readers need cropped
            p = op.params
            top, bottom = g.crop[op]
            pads = int_array((-top, p["pads"][1], -bottom, p["pads"][3]))
        if isinstance(op, GraphConv2dOp):
            e.stage(op, [at(op.input), self.loaded[op.weight]], out, pads=pads)
            if op.bias is not None and op not in self.deferred:  # (per output channel)
                e.stage(AddOp, [out, self.bias[op]], out)
        elif isinstance(op, MaxPoolOp):
            e.stage(op, [at(op.input)], out, pads=pads)
            conv, relu = self.pooled.get(op, (None, None))
            if conv is not None and conv.bias is not None:
                e.stage(AddOp, [out, self.bias[conv]], out)
            if relu is not None:
                e.stage(ReluOp, [out], out)
        elif isinstance(op, AvgPoolOp):  # (rows outside x read NaN: the DMA pads them)
            e.stage(op, [at(op.input)], out, pads=pads)
        elif isinstance(op, StructuredOp) and not isinstance(op, ConcatOp):  # a transpose keeping H, W; an LRN
            e.stage(op, [at(op.operands[0])], out)
        elif isinstance(op, ElementwiseOp) and op not in self.deferred:  # (a deferred relu follows the pool)
            self.elementwise(e, op, out, at, odd)

    def elementwise(self, e: Emitter, op: ElementwiseOp, out: SSAValue, at, odd: SSAValue | None) -> None:
        """An elementwise op: its side inputs from the slot, rows of a wider value copied out first."""
        side, local = self.side, self.local
        ins = [self.pick(e, odd, [side[k][(op, i)] for k in range(self.slots)]) if (op, i) in side[0]
               else local.get((op, v)) or (at(v) if c is None else c)
               for i, (c, v) in enumerate(zip(self.args[op], op.operands))]
        copies = [e.add(CopyOp(at(v), self.row_at(e, v, first), local[(op, v)], self.row_at(e, v, 0),
                               computed_shape(self.g, op.results[0]))).results[0]
                  for (o, v), first in self.g.local.items() if o is op]  # (rows of a wider value)
        for t in copies:
            e.add(WaitOp(t))
        e.stage(op, ins, out)

    def mask(self, e: Emitter, s: SSAValue, res: SSAValue, out: SSAValue, odd: SSAValue | None) -> None:
        """Zero (or -inf) the rows of `res` outside the tensor, in the strips that hold any."""
        g = self.g
        first, end = g.boundary(res)
        me = e
        edge: SSAValue | None = None
        then_b: Block | None = None
        if -g.warm < first or end < g.S:
            edge = e.add(arith.CmpiOp(s, e.const(first), "slt")).results[0] if first > -g.warm else None
            if end < g.S:
                past = e.add(arith.CmpiOp(s, e.const(end), "sge")).results[0]
                edge = past if edge is None else e.add(arith.OrIOp(edge, past)).results[0]
            then_b = Block()
            me = e.nested(then_b)
        for j, fn in enumerate((MulOp, AddOp)[:len(self.mask_dram[res])]):
            me.stage(fn, [out, self.pick(me, odd, [self.mask_sram[k][res][j] for k in range(self.slots)])], out)
        if then_b is not None:
            assert edge is not None  # (a strip before `first` or from `end` on)
            then_b.add_op(scf.YieldOp())
            e.add(scf.IfOp(edge, [], Region(then_b)))

    def store(self, e: Emitter, s: SSAValue, cur: SSAValue) -> None:
        """Store strip `s`'s output rows (clipped at the end; not in warm-up strips)."""
        g = self.g
        zero = e.const(0)
        y = self.ops[-1].results[0]
        rank = len(shape_of(y))
        se, then_b = e, None
        if g.warm:  # (the warm-up strips before the task's first store nothing)
            then_b = Block()
            se = e.nested(then_b)
        store = se.add(CopyOp(cur, [zero] * rank, self.out, [zero] * (rank - 2) + [se.mul_c(s, g.T), zero],
                              strip_shape(g, y), clip=True)).results[0]
        se.add(WaitOp(store))
        if then_b is not None:
            then_b.add_op(scf.YieldOp())
            e.add(scf.IfOp(e.add(arith.CmpiOp(s, self.block.args[0], "sge")).results[0], [], Region(then_b)))

    def emit_loop(self) -> Block:
        """The loop over strips [lo, hi) (from lo - warm with line buffers), carrying the
        line buffers' shifts in flight (the first ones move nothing yet)."""
        em, g, rolled = self.em, self.g, self.rolled
        lo, hi = self.block.args
        one = em.const(1)
        start = em.add(arith.SubiOp(lo, em.const(g.warm))).results[0] if g.warm else lo  # (warm-up strips first)
        shifts0 = [self.shift(em, v, first=True) for v in rolled]
        if not self.plan.prefetch:
            body = Block(arg_types=[INDEX] + [TokenType()] * len(rolled))
            be = em.nested(body)
            moving: dict[SSAValue, SSAValue] = dict(zip(rolled, body.args[1:]))
            if self.x in moving:
                be.add(WaitOp(moving[self.x]))
            for t in self.issue(be, body.args[0], 0):
                be.add(WaitOp(t))
            moved = self.compute(be, body.args[0], None, moving)
            body.add_op(scf.YieldOp(*[moved[v] for v in rolled]))
            loop = em.add(scf.ForOp(start, hi, one, shifts0, Region(body)))
            for t in loop.results:
                em.add(WaitOp(t))
            return self.block
        return self.emit_prefetched_loop(start, one, shifts0)

    def emit_prefetched_loop(self, start: SSAValue, one: SSAValue, shifts0: list[SSAValue]) -> Block:
        """Prefetch: strip lo's loads first; each strip issues the next one's into the
        other slot; the last strip is peeled."""
        em, rolled = self.em, self.rolled
        hi = self.block.args[1]
        toks0 = self.issue(em, start, 0)
        last = em.add(arith.SubiOp(hi, one)).results[0]
        body = Block(arg_types=[INDEX] + [TokenType()] * (len(toks0) + len(rolled)))
        be = em.nested(body)
        s = body.args[0]
        loads = body.args[1:1 + len(toks0)]
        moving: dict[SSAValue, SSAValue] = dict(zip(rolled, body.args[1 + len(toks0):]))
        odd = be.eq_c(be.rem_c(be.add(arith.SubiOp(s, start)).results[0], 2), 1)
        nxt = be.add_i(s, one)
        then_b, else_b = Block(), Block()
        then_t = self.issue(em.nested(then_b), nxt, 0)  # s odd: the next strip is even
        else_t = self.issue(em.nested(else_b), nxt, 1)
        then_b.add_op(scf.YieldOp(*then_t))
        else_b.add_op(scf.YieldOp(*else_t))
        next_toks = be.add(scf.IfOp(odd, [TokenType()] * len(toks0), Region(then_b), Region(else_b))).results
        for t in loads:
            be.add(WaitOp(t))
        moved = self.compute(be, s, odd, moving)
        body.add_op(scf.YieldOp(*next_toks, *[moved[v] for v in rolled]))
        loop = em.add(scf.ForOp(start, last, one, toks0 + shifts0, Region(body)))
        for t in loop.results[:len(toks0)]:
            em.add(WaitOp(t))
        moved = self.compute(em, last, em.eq_c(em.rem_c(em.add(arith.SubiOp(last, start)).results[0], 2), 1),
                             dict(zip(rolled, loop.results[len(toks0):])))
        for t in moved.values():
            em.add(WaitOp(t))
        return self.block


def concat_placement(block: Block, returned: set[SSAValue]) -> dict[SSAValue, tuple[SSAValue, int]]:
    """Concats whose operands their producers can write in place: value -> (concat
    result, byte offset in its buffer). A concat qualifies when every dim before its
    axis is 1 (each operand is then a contiguous byte range of the result) and every
    operand is a distinct result of a kernel that writes DRAM (not a view, an input,
    a weight or a returned value) and is not already placed in another concat."""
    placement: dict[SSAValue, tuple[SSAValue, int]] = {}
    kernels = [op for op in block.ops if isinstance(op, KernelOp)]
    for k in reversed(kernels):  # outer concats first: a placed concat may hold others
        loop = loop_of(k)
        if loop is None:
            continue
        body = [o for o in loop.body.block.ops if not isinstance(o, (TileLoadOp, ReduceOp, StoreOp))]
        if len(body) != 1 or not isinstance(body[0], ConcatOp):
            continue
        cat = body[0]
        loads = [o.owner for o in cat.operands if isinstance(o.owner, TileLoadOp)]
        if len(loads) != len(cat.operands):
            continue
        out = shape_of(k.outs[0])
        axis = attr_int(dict(cat.attributes), "axis", 0) % len(out)
        args: dict[SSAValue, SSAValue] = dict(zip(k.body.block.args, k.ins))
        vals = [args.get(o.source) for o in loads]
        if any(d != 1 for d in out[:axis]) or len(set(vals)) != len(vals):
            continue
        if not all(v is not None and isinstance(v.owner, KernelOp) and v.owner.kind.data != KernelKind.VIEW
                   and v not in returned and v not in placement for v in vals):
            continue
        off = 0
        for v in vals:
            assert v is not None
            placement[v] = (k.outs[0], off)
            off += prod(shape_of(v)) * 4
    return placement


def in_place_source(ks: KernelShape, ins: list[SSAValue]) -> SSAValue | None:
    """An input buffer the kernel could overwrite with its output: an activation buffer
    (`npu_task.alloc`) of the output's size that the kernel reads through one window
    only, at exactly the output tile's position (an elementwise operand, a residual
    epilogue operand). Each tile of it is then loaded before the same tile of the
    output is stored, and no other tile reads it."""
    windows = ks.loads + ks.epilogue
    for w in windows:
        if w.source is None or w.pad_value is not None or w.shape != ks.out.shape:
            continue
        if any(a != b and not (n == 1 and a.size == b.size == 1 and a.const == b.const == 0)
               for a, b, n in zip(w.dims, ks.out.dims, w.shape)):
            continue  # (a size-1 dim is at 0 whatever its loop)
        buf = ins[w.source]
        if not isinstance(buf.owner, AllocOp) or tuple(buf.owner.result.type.get_shape()) != tuple(ks.out.shape):
            continue
        if sum(ins[x.source] is buf for x in windows if x.source is not None) == 1:
            return buf
    return None


def strip_in_place_source(k: KernelOp, plan: StripPlan, ins: list[SSAValue]) -> SSAValue | None:
    """The operand buffer strip group `k`'s plan says its output overwrites (`in_place`),
    when that is an activation buffer (`npu_task.alloc`); a TilingError when the operand
    is not a side input the output may overwrite (`in_place_candidates`)."""
    rec = k.plan
    i = rec.in_place_operand if isinstance(rec, StripPlanAttr) else None
    if i is None:
        return None
    if k.body.block.args[i] not in in_place_candidates(plan.geometry.ops, plan.geometry, {}):
        raise TilingError(f"its plan overwrites operand {i} in place, which is not a side input read once at "
                          "the rows each strip stores")
    return ins[i] if isinstance(ins[i].owner, AllocOp) else None


class FuncBuilder:
    """Rewrites one graph-level function into the task-level form."""

    def __init__(self, func: FuncOp, arch: Arch, pass_name: str):
        self.func, self.arch, self.pass_name = func, arch, pass_name
        self.block = Block()
        self.buf: dict[SSAValue, SSAValue] = {}
        self.views: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
        self.inline_consts = 0

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def view(self, buf: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        assert isinstance(buf.type, MemRefType)
        if tuple(buf.type.get_shape()) == tuple(shape):
            return buf
        key = (buf, tuple(shape))
        if key not in self.views:
            self.views[key] = self.add(ViewOp(buf, dram_type(shape))).results[0]
        return self.views[key]

    def copy_task(self, name: str, src: SSAValue, dst: SSAValue, loc: LocationAttr) -> None:
        assert isinstance(dst.type, MemRefType)
        shape = tuple(dst.type.get_shape())
        if 0 in shape:
            return  # nothing to move
        block = Block(arg_types=[INDEX, INDEX])
        em = Emitter(block, block, {}, loc)
        zeros = [em.const(0)] * len(shape)
        tok = em.add(CopyOp(src, zeros, dst, zeros, shape))
        em.add(WaitOp(tok.results[0]))
        task = TaskOp(name, 0, Region(block), range=(0, 1), predicted_cycles=0)
        task.location = loc
        self.add(task)

    def run(self) -> FuncOp:
        old = self.func.body.block
        ret = old.last_op
        if not isinstance(ret, ReturnOp):
            raise CompileError(self.pass_name, f"function @{self.func.sym_name.data} has no func.return", self.func)
        returned = list(ret.arguments)
        arg_types = [dram_type(shape_of(a)) for a in old.args] + [dram_type(shape_of(v)) for v in returned]
        self.block = Block(arg_types=arg_types)
        n_in = len(old.args)
        for a, b in zip(old.args, self.block.args):
            self.buf[a] = b
        outs = list(self.block.args[n_in:])
        writes_output: dict[SSAValue, SSAValue] = {}
        for v, o in zip(returned, outs):
            if isinstance(v.owner, KernelOp) and v.owner.kind.data != KernelKind.VIEW and v not in writes_output:
                writes_output[v] = o
        for v, o in zip(returned, outs):
            # a returned reshape of a kernel result: the kernel writes the output through a view
            src = v.owner.ins[0] if isinstance(v.owner, KernelOp) and v.owner.kind.data == KernelKind.VIEW else None
            if (src is not None and isinstance(src.owner, KernelOp) and src.owner.kind.data != KernelKind.VIEW
                    and src not in writes_output and o not in writes_output.values()):
                writes_output[src] = self.view(o, tuple(shape_of(src)))
        self.writes_output = writes_output
        self.placement = concat_placement(old, set(returned))
        self.in_place = {c for c, _ in self.placement.values()}
        for op in old.ops:
            if isinstance(op, ConstantOp):
                self.constant(op)
            elif isinstance(op, KernelOp):
                self.kernel(op)
            elif isinstance(op, ReturnOp):
                continue
            else:
                raise CompileError(self.pass_name, "expected only npu_tile.kernel and constants "
                                                   "(run npu-tile first)", op)
        for i, (v, o) in enumerate(zip(returned, outs)):
            if span(self.buf[v]) != span(o):  # (not already written there, maybe through views)
                self.copy_task(f"output{i}_copy", self.buf[v], o, ret.location)
        self.add(ReturnOp())
        new = FuncOp(self.func.sym_name.data, (arg_types, []), Region(self.block))
        for k, v in self.func.attributes.items():
            if k not in ("sym_name", "function_type"):
                new.attributes[k] = v
        new.location = self.func.location
        return new

    def mask(self, rows: list[float], inside: float, outside: float, loc: LocationAttr) -> SSAValue:
        """A small inline weight [1, 1, len(rows), 1]: `inside` where rows is 1, else `outside`."""
        values = [inside if r else outside for r in rows]
        t = dram_type((1, 1, len(values), 1))
        self.inline_consts += 1
        attr = DenseIntOrFPElementsAttr.from_list(TensorType(f32, [1, 1, len(values), 1]), values)
        w = WeightOp(f"inline{self.inline_consts}", t, value=attr)
        w.location = loc
        return self.add(w).results[0]

    def constant(self, op: ConstantOp) -> None:
        t = dram_type(shape_of(op.result))
        if op.weight is not None:
            w = WeightOp(op.weight.data, t)
        else:
            self.inline_consts += 1
            w = WeightOp(f"inline{self.inline_consts}", t, value=op.value)
        w.location = op.location
        self.buf[op.result] = self.add(w).results[0]

    def placed(self, v: SSAValue) -> SSAValue:
        """The buffer of a value its consumer concat holds in place: a view of that concat's buffer."""
        if v not in self.buf:
            concat, off = self.placement[v]
            view = ViewOp(self.concat_buffer(concat), dram_type(shape_of(v)), off)
            assert isinstance(v.owner, KernelOp)  # (a placed value is a kernel's result)
            view.location = v.owner.location
            self.buf[v] = self.add(view).results[0]
        return self.buf[v]

    def concat_buffer(self, c: SSAValue) -> SSAValue:
        """The buffer of an in-place concat (allocated when its first operand is produced)."""
        if c not in self.buf:
            if c in self.placement:
                return self.placed(c)
            assert isinstance(c.owner, KernelOp)  # (an in-place concat is a kernel's result)
            self.output_buffer(c, c.owner)
        return self.buf[c]

    def output_buffer(self, res: SSAValue, k: KernelOp, reuse: SSAValue | None = None) -> SSAValue:
        """Where kernel `k` writes its result `res`: a slice of an in-place concat, the
        function's output buffer, or a new DRAM buffer (that may take `reuse`'s bytes)."""
        if res in self.placement:
            return self.placed(res)
        if res in self.writes_output:
            out = self.writes_output[res]
        else:
            alloc = AllocOp(dram_type(shape_of(res)), reuse=reuse)
            alloc.location = k.location
            out = self.add(alloc).results[0]
        self.buf[res] = out
        return out

    def kernel(self, k: KernelOp) -> None:
        res = k.outs[0]
        ins = [self.buf[v] for v in k.ins]
        if k.kind.data == KernelKind.VIEW:
            self.buf[res] = self.view(ins[0], shape_of(res))
            return
        if res in self.in_place:
            self.concat_buffer(res)  # its operands were written in place: nothing to move
            return
        try:
            if k.kind.data == KernelKind.GROUP and k.loop_names == ["h"]:
                loop = strip_loop_of(k)
                if loop is None:
                    raise TilingError("the strip group has no strip loop (run npu-tile-loops first)")
                splan = recorded_plan(loop.group_ops(), k.plan, self.arch)
                out = self.output_buffer(res, k, strip_in_place_source(k, splan, ins))
                block = StripBuilder(k, splan, ins, out, self.arch, self).build()
                tiles = k.trip_counts[0]
            elif k.kind.data == KernelKind.GROUP:
                outs = [self.output_buffer(r, k) for r in k.outs]
                block = GroupBuilder(k, ins, outs, self.arch).build()
                tiles = 1
            else:
                ks = loop_shape(k)
                out = self.output_buffer(res, k, in_place_source(ks, ins))
                block = self.tiled_task(k, ins, out)
                tiles = ks.parallel_tiles
        except TilingError as e:
            raise CompileError(self.pass_name, f"kernel '{k.kernel.data}': {e}", k) from None
        pc = k.predicted_cycles.value.data if k.predicted_cycles else None
        nb = k.dram_bytes.value.data if k.dram_bytes else None
        parts = k.parts.value.data if k.parts else None
        task = TaskOp(k.kernel.data, 0, Region(block), range=(0, tiles), predicted_cycles=pc,
                      dram_bytes=nb, parts=parts)
        task.location = k.location
        bad = lower_compute(task)
        if bad is not None:
            raise CompileError(self.pass_name, f"kernel '{k.kernel.data}': {describe_unlowered(bad)}", bad)
        self.add(task)


    def tiled_task(self, k: KernelOp, ins: list[SSAValue], out: SSAValue) -> Block:
        """The body of a tiled kernel's task: its `npu_tile.loop` on the DRAM buffers'
        tensors, lowered by the patterns of `tile_loop_patterns.py`."""
        loop = loop_of(k)
        assert loop is not None  # (loop_shape checked)
        block = Block(arg_types=[INDEX, INDEX])
        em = Emitter(block, block, {}, k.location)
        vmap: dict[SSAValue, SSAValue] = {a: em.add(ToTensorOp(b)).results[0] for a, b in zip(k.body.block.args, ins)}
        loop = loop.clone(vmap)
        bufs = assign_buffers(loop, em, self.arch, out, self.view)
        em.add(loop)
        region = Region(block)
        lower_tile_loop(bufs, region)
        return region.detach_block(block)


@dataclass(frozen=True)
class Bufferize(ModulePass):
    """Lower tiled kernels to DMA + compute tasks on DRAM/SRAM buffers (one task per kernel)."""

    name = "npu-bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)
        for func in list(op.ops):
            if isinstance(func, FuncOp) and func.body.blocks:
                new = FuncBuilder(func, arch, self.name).run()
                op.body.block.insert_op_before(new, func)
                op.body.block.erase_op(func)




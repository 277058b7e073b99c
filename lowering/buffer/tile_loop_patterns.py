"""Bufferization patterns of a tiled kernel: its `npu_tile.loop`, placed in its task,
-> an `scf.for` over the task's steps with DMA copies and staged compute.

`npu-bufferize` places the loop in the task (inputs as `npu_compute.to_tensor` of
their DRAM buffers) and runs `assign_buffers`, the SRAM slot analysis the patterns
consult. The patterns, applied in turn by `lower_tile_loop`:
- `TileLoopToSteps`: `npu_tile.loop` -> `scf.for` over steps, the body cloned per step;
- `LoadToCopy`: `npu_tile.load` -> `npu_dma.copy` of the window into its slot + wait;
- `StageOnBuffers`: a graph op on slot tensors -> written in place into a buffer;
- `StoreToCopy`: `npu_tile.store` -> `npu_dma.copy` of the accumulator + wait;
- `TeeToCopy`: `npu_tile.tee` -> a copy of its slot, awaited at the end of the step;
- `PrefetchLoads` (double buffering): a step's loads move one step ahead.
The compute patterns (`compute_patterns.py`) then lower the staged graph ops. Errors
(`TilingError`): the slots do not fit SRAM, more than one reduction loop.

Algorithm
---------
Buffer assignment (`TileBuffers`): a slot per tile loaded each step (the loads
before `npu_tile.reduce`, and with R == 1 the ones after it), two sets with double
buffering; a slot per tile loaded once at the last reduction step (R > 1); one slot
per hoisted tile, whose window stays put over every step (`stays_put`, the tile
search's `KernelShape.is_hoisted`; not a conv prologue's input, rewritten in place
each step) and per tile that stays put over an output tile's R > 1 reduction steps
(`stays_per_tile`, `KernelShape.is_per_tile`: attention's query rows over the key
blocks); an accumulator for the output tile (with an online-softmax reduce, the
state's extra columns too). Offsets follow allocation order, aligned. While a step
would issue more loads than the core has DMA channels, its smallest load whose
blocks over the reduction steps run contiguously (`coalesce_dim`) and together stay
under `dram_bw` x `dma_latency` bytes (`coalesces`) loads its whole run instead
(`whole_run`: hoisted, or per tile when a parallel loop moves it), and each step
reads its block through `npu_task.view %buf[%r]` (the tile search's `load_split`).

`TileLoopToSteps`: the task runs steps t in [lo*R, hi*R) (P parallel tiles x R
reduction tiles, reduction innermost); the tile indices come from t by div/rem.
The anchor's result is written into the accumulator (`npu_compute.materialize`,
accumulating for r > 0, or always when the reduce starts from an `init` tile, which
is loaded into the accumulator as a per-tile or hoisted load; an online-softmax
state's last step merges a copy of the tile op with `finish`, which normalises the
output); with R > 1 the ops after the reduce run in an `scf.if` at
the last reduction step, with R == 1 their loads join the step's loads.

`TileLoopToSteps` clones the hoisted loads before the step loop, the per-tile
loads into an `scf.if` at the task's first step (awaited there) and into one at each
output tile's last step, right after its store copy, for the next tile (when there
is one): the store is awaited after them, so the two transfers overlap. A sum's
init tile, landing in the accumulator the store reads, keeps them all at each
tile's first step. `LoadToCopy`
waits for a copy after the step's last load, before the first compute, so a step's
copies run concurrently; a hoisted copy is awaited there too, inside the steps, so
the first step's loads overlap it. `StageOnBuffers` writes an op into the
accumulator when it reads it (epilogue), else into the first load's slot
(a conv prologue on its input tile).

A KV-cache append's key block is the sum of two zero-padded loads whose windows
split one block of the concatenation (`seam_pairs`): both land in one slot with
`src_clip` copies, the second (the new rows) in an `scf.if` at the steps whose
block reaches it, and the add goes. A tee's copy reads the slot while the step
computes from it and is awaited before the step ends (the next one prefetches into
the other slot set, the one after into this). Over a float cache converted in SRAM
(`AppendAttentionAnchor.converting`) the new rows are a load of their own, and the
widened rows, the sum, its quantized tile and the dequantized present each get a
buffer of their own (`TileBuffers.staged`); the tee's copy reads the last.

A pipelined load whose window stays put over runs of L consecutive steps (`run_steps`,
the tile search's `run_length`: one reduction step per output tile, and iterating
loops after the last one it moves with - a matmul's row tile over the steps along n,
attention's kt and v over a head's query tiles) keeps its slot(s) but is copied only
at the steps starting a run, t == t0 or t % L == 0 (`run_copy`: an `scf.if` yielding
the copy's token, `npu_dma.done` at the others); double buffered, its two slots
alternate by the run's parity (t / L - t0 / L), not the step's.

`PrefetchLoads` (software pipelining): the copies at the top of the step body are
issued for step t+1 into the other slot set before step t computes (the slot sets
alternate by the parity of t - t0); their tokens are loop-carried; the first
step's copies precede the loop and the last step is peeled. With one step per
output tile and SRAM left for it (`TileBuffers.store_pair`, the tile search's
`stores_deferred`), the buffer the store reads alternates too, and a step's store
is awaited just before the next step issues its own (its token carried, starting
from `npu_dma.done`): the store overlaps the next step's compute. A step's per-tile loads
(at r == 0) go out before the next step's copies: the step computes from them, so
they must not queue behind loads only the next step needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from math import prod

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, LocationAttr, MemRefType, StringAttr, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from lowering.buffer.compute_patterns import stage
from lowering.instrument import PatternWalker
from lowering.tile.group_plan import scratch_bytes
from lowering.tile.tile_search import TilingError, align_up, coalesce_dim, coalesced, coalesces
from npu_dialects.arch import Arch
from npu_dialects.compute import MaterializeOp, ToTensorOp
from npu_dialects.dma import CopyOp, DoneOp, TokenType, WaitOp
from npu_dialects.dtypes import elem_bytes, element_type, nbytes
from npu_dialects.graph import AddOp, ElementwiseOp, GraphOp, QuantOp, StructuredOp, ints, shape_of
from npu_dialects.task import SramOp, ViewOp
from npu_dialects.tile import LoadOp, LoopOp, ReduceOp, StoreOp, TeeOp, WindowOp

INDEX = IndexType()


def sram_type(shape: Sequence[int], like: SSAValue | Attribute) -> MemRefType:
    """An SRAM buffer of `shape` holding the elements of tensor/memref value or type `like`."""
    return memref_type(element_type(like), tuple(shape), "sram")


@lru_cache(maxsize=4096)
def index_attr(v: int) -> IntegerAttr:
    """The `index` constant `v`, built once (an attribute is immutable)."""
    return IntegerAttr(v, INDEX)


@lru_cache(maxsize=4096)
def memref_type(element: Attribute, shape: tuple[int, ...], space: str) -> MemRefType:
    """The memref type of `shape` and `element` in memory `space`, built once (a type is
    immutable: every buffer of one shape and type shares it; building one verifies its
    parameters, which the buffer ops of a task would otherwise repeat per op)."""
    return MemRefType(element, list(shape), memory_space=StringAttr(space))


class Emitter:
    """Adds ops at an insertion point (the end of `block`, or before `before`); index
    constants are created once, at the top of the task block."""

    def __init__(self, block: Block, task_block: Block, consts: dict[int, SSAValue], loc: LocationAttr,
                 before: Operation | None = None):
        self.block, self.task_block, self.consts, self.loc, self.before = block, task_block, consts, loc, before

    def nested(self, block: Block) -> Emitter:
        return Emitter(block, self.task_block, self.consts, self.loc)

    def at(self, before: Operation) -> Emitter:
        """An emitter inserting before `before` (in its block)."""
        assert before.parent is not None
        return Emitter(before.parent, self.task_block, self.consts, self.loc, before)

    def add(self, op: Operation) -> Operation:
        op.location = self.loc
        return self.insert(op)

    def insert(self, op: Operation) -> Operation:
        if self.before is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.before)
        return op

    def add_clone(self, op: Operation, vmap: dict[SSAValue, SSAValue]) -> Operation:
        """A clone of `op` with `vmap`, keeping `op`'s location: a graph op's own ONNX
        node, not the kernel's (its compute op names it)."""
        return self.insert(op.clone(vmap))

    def stage(self, op: Operation | type[Operation], ins: list[SSAValue], dest: SSAValue, accumulate: bool = False,
              **attributes: Attribute) -> None:
        """Graph op `op` (or a new op of that class) from buffers `ins` into `dest`, as
        `compute_patterns.stage` leaves it for the compute patterns."""
        for o in stage(op, ins, dest, accumulate, **attributes):
            self.add(o)

    def const(self, v: int) -> SSAValue:
        if v not in self.consts:
            op = arith.ConstantOp(index_attr(v))
            first = self.task_block.first_op
            if first is None:
                self.task_block.add_op(op)
            else:
                self.task_block.insert_op_before(op, first)
            self.consts[v] = op.result
        return self.consts[v]

    def add_i(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.AddiOp(a, b)).results[0]

    def mul_c(self, a: SSAValue, c: int) -> SSAValue:
        return a if c == 1 else self.add(arith.MuliOp(a, self.const(c))).results[0]

    def div_c(self, a: SSAValue, c: int) -> SSAValue:
        return a if c == 1 else self.add(arith.DivUIOp(a, self.const(c))).results[0]

    def rem_c(self, a: SSAValue, c: int) -> SSAValue:
        return self.const(0) if c == 1 else self.add(arith.RemUIOp(a, self.const(c))).results[0]

    def eq_c(self, a: SSAValue, c: int) -> SSAValue:
        return self.add(arith.CmpiOp(a, self.const(c), "eq")).results[0]

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return a if a is b else self.add(arith.SelectOp(cond, a, b)).results[0]

    def offsets(self, w: WindowOp) -> list[SSAValue]:
        """Where window `w` starts along each dim, from its index operands (an index that
        is the constant 0 drops its term)."""
        _, terms, consts, _ = w.window()
        zero, out = self.const(0), []
        for ts, c in zip(terms, consts):
            v: SSAValue | None = None
            for j, k in ts:
                if w.indices[j] is not zero:
                    x = self.mul_c(w.indices[j], k)
                    v = x if v is None else self.add_i(v, x)
            if c or v is None:
                v = self.const(c) if v is None else self.add_i(v, self.const(c))
            out.append(v)
        return out


# --------------------------------------------------------------------------------------
# Buffer assignment (the analysis)
# --------------------------------------------------------------------------------------


@dataclass
class TileBuffers:
    """The SRAM buffers of one tiled kernel's task, and what the patterns record."""

    loop: LoopOp
    outs: list[SSAValue]  # the kernel's outputs (DRAM): the store's, then the tees'
    view: Callable[[SSAValue, tuple[int, ...]], SSAValue]  # a DRAM buffer viewed with a shape
    em: Emitter  # the task block's
    steps_per_tile: int  # R: reduction steps per output tile
    slots: list[list[SSAValue]]  # per slot set (two with double buffering), a slot per tile loaded each step
    once: list[SSAValue]  # per tile loaded once, at the last reduction step (R > 1)
    hoisted: list[Operation]  # loaded once, before the steps: windows that stay put (`blocks`' runs too)
    acc: SSAValue  # the output tile (of the reduce's element type)
    out_view: tuple[int, ...]  # the shape the store views the output with
    slot_of: dict[Operation, SSAValue]  # each load of `loop` -> its slot (set 0) or once buffer
    dest: dict[Operation, SSAValue] = field(default_factory=dict)  # a cloned load -> its slot
    steps: scf.ForOp | None = None  # the step loop, once built
    hoisted_clones: set[Operation] = field(default_factory=set)  # the hoisted loads, cloned before the steps
    per_tile: list[Operation] = field(default_factory=list)  # loaded once per output tile (R > 1; `blocks`' runs too)
    first_step: scf.IfOp | None = None  # the step body's `scf.if` issuing (and awaiting) the first per-tile loads
    next_tile: Operation | None = None  # the last step's `scf.if` issuing (and awaiting) the next tile's
    seams: dict[Operation, tuple[LoadOp, LoadOp]] = field(default_factory=dict)  # `seam_pairs` of `loop`
    # a small load keyed by the reduction loop -> (its whole run over an output tile's steps, a
    # detached load in `hoisted` or `per_tile`, and its buffer): each step reads its block
    blocks: dict[LoadOp, tuple[LoadOp, SSAValue]] = field(default_factory=dict)
    clipped: set[Operation] = field(default_factory=set)  # cloned loads copied with `src_clip` (a seam's parts)
    # a float KV cache's conversions and sums before the anchor (`AppendAttentionAnchor.converting`) -> the
    # buffer each writes; their clones in the step body (`TileLoopToSteps.clone_into`) -> the same
    staged: dict[Operation, SSAValue] = field(default_factory=dict)
    staged_clones: dict[Operation, SSAValue] = field(default_factory=dict)
    typed: dict[Attribute, SSAValue] = field(default_factory=dict)  # the running tile's buffer per element type
    derived: dict[tuple[Attribute, tuple[int, ...]], SSAValue] = field(default_factory=dict)  # `chain_buffers`
    # (the buffer the store reads, its twin): with double buffering and one step per output
    # tile, tiles alternate between them and a tile's store is awaited a step later
    store_pair: tuple[SSAValue, SSAValue] | None = None
    store: tuple[CopyOp, WaitOp] | None = None  # the store's copy and wait in the step body
    # a pipelined load staying put over runs of L steps (`run_steps`) -> L: loaded only at a run's first
    # step; its clones in the step body -> L, the `scf.if`s issuing their copies, and its slot (set 0) -> L
    run_of: dict[Operation, int] = field(default_factory=dict)
    run_clones: dict[Operation, int] = field(default_factory=dict)
    run_ifs: set[Operation] = field(default_factory=set)
    run_slots: dict[SSAValue, int] = field(default_factory=dict)

    @property
    def double_buffered(self) -> bool:
        return len(self.slots) == 2

    @property
    def out(self) -> SSAValue:
        """The output the store writes."""
        return self.outs[0]


def loop_parts(loop: LoopOp) -> tuple[list[LoadOp], list[Operation], ReduceOp, list[LoadOp], list[Operation],
                                      StoreOp]:
    """The loop body as (loads before the reduce, other ops before it, the reduce,
    loads after it, other ops after it, the store)."""
    body = list(loop.body.block.ops)
    i = next(i for i, o in enumerate(body) if isinstance(o, ReduceOp))
    reduce, store = body[i], body[-1]
    assert isinstance(reduce, ReduceOp) and isinstance(store, StoreOp)
    pre, post = body[:i], body[i + 1:-1]
    return ([o for o in pre if isinstance(o, LoadOp)], [o for o in pre if not isinstance(o, LoadOp)], reduce,
            [o for o in post if isinstance(o, LoadOp)], [o for o in post if not isinstance(o, LoadOp)], store)


def tile_bytes(ld: LoadOp) -> int:
    """Bytes of a load's tile (a step issues its loads smallest first: with more loads
    than DMA channels, the core waits for a free channel, the soonest the smaller
    transfers ahead finish; `costmodel.issue_stall` assumes the same order)."""
    return nbytes(ld.tile)


def stays_put(loop: LoopOp, ld: LoadOp) -> bool:
    """A load loaded once per task, before the steps (`KernelShape.is_hoisted`): its
    window moves with no loop that iterates, and the loop has more than one step."""
    grid = loop.trip_counts
    return prod(grid) > 1 and all(grid[j] == 1 for ts in ld.window()[1] for j, _ in ts)


def stays_per_tile(loop: LoopOp, ld: LoadOp) -> bool:
    """A load loaded once per output tile, at its first reduction step
    (`KernelShape.is_per_tile`): its window moves with no reduction loop that
    iterates, and there is more than one reduction step."""
    grid, nred = loop.trip_counts, loop.reductions.value.data
    red = range(len(grid) - nred, len(grid))
    return prod(grid[j] for j in red) > 1 and all(grid[j] == 1 for ts in ld.window()[1] for j, _ in ts if j in red)


def run_steps(loop: LoopOp, ld: LoadOp) -> int:
    """How many consecutive steps a pipelined load's window stays put over with one
    reduction step per output tile (`KernelShape.run_length`): the product of the trip
    counts of the iterating loops after the last iterating loop it moves with; 1 when
    it moves with the innermost one or there are more reduction steps."""
    grid, nred = loop.trip_counts, loop.reductions.value.data
    if prod(grid[len(grid) - nred:]) != 1:
        return 1
    moved = {j for ts in ld.window()[1] for j, c in ts if c}
    n = 1
    for j in reversed(range(len(grid))):
        if j in moved and grid[j] > 1:
            return n
        n *= grid[j]
    return 1


def seam_pairs(loop: LoopOp) -> dict[Operation, tuple[LoadOp, LoadOp]]:
    """add -> (block, seam): the adds before the reduce of two zero-padded loads whose
    windows are one block of their sources' concatenation along a dim d (a KV-cache
    append, `AppendAttentionAnchor`): the seam's window is the block's, shifted by the
    block source's extent along d, and the block never leaves the concatenation. The
    sum is then the two copies' in-bounds parts landed in one slot (`src_clip`), the
    seam's only at the steps whose block reaches it."""
    pre, pre_ops, *_ = loop_parts(loop)
    out: dict[Operation, tuple[LoadOp, LoadOp]] = {}
    for op in pre_ops:
        if not isinstance(op, AddOp):
            continue
        a, b = (o.owner for o in op.operands)
        if not (isinstance(a, LoadOp) and isinstance(b, LoadOp) and a in pre and b in pre and a is not b):
            continue
        if a.pad_value is None or b.pad_value is None or a.pad_value.value.data or b.pad_value.value.data:
            continue
        (va, ta, ca, sa), (vb, tb, cb, sb) = a.window(), b.window()
        diff = [d for d in range(len(va)) if va[d] != vb[d] or ca[d] != cb[d]]
        if ta != tb or sa != sb or len(va) != len(vb) or len(diff) != 1 or cb[diff[0]] != ca[diff[0]] - va[diff[0]]:
            continue
        d = diff[0]
        starts = a.start_ranges()
        if starts is None or any(lo < 0 or hi + sa[e] > va[e] + (vb[e] if e == d else 0)
                                 for e, (lo, hi) in enumerate(starts)):
            continue
        out[op] = (a, b)
    return out


def chain_buffers(loop: LoopOp, reduce: ReduceOp, acc: SSAValue, sram: Callable[[SSAValue], SSAValue]
                  ) -> tuple[dict[Attribute, SSAValue], dict[tuple[Attribute, tuple[int, ...]], SSAValue]]:
    """The epilogue's tile buffers by element type (`acc` for the reduce's type; one more
    per other type the running tile takes: an int32 accumulator requantized to int8,
    dequantized to f32...) and one per (type, shape) of its derived operands (a
    dequantize of another input, `EpilogueStep.to`); `sram` allocates."""
    running = reduce.results[0]
    typed: dict[Attribute, SSAValue] = {element_type(running): acc}
    derived: dict[tuple[Attribute, tuple[int, ...]], SSAValue] = {}
    for op in loop_parts(loop)[4]:
        if not op.results:
            continue
        res = op.results[0]
        t = element_type(res)
        if running in op.operands:
            running = res
            if t not in typed:
                typed[t] = sram(res)
        elif (t, tuple(shape_of(res))) not in derived:
            derived[(t, tuple(shape_of(res)))] = sram(res)
    return typed, derived


def assign_buffers(loop: LoopOp, em: Emitter, arch: Arch, outs: list[SSAValue],
                   view: Callable[[SSAValue, tuple[int, ...]], SSAValue]) -> TileBuffers:
    """Allocate the task's SRAM buffers (`npu_task.sram` ops added by `em`); TilingError
    when they exceed `sram_bytes`."""
    nred = loop.reductions.value.data
    if nred > 1:
        raise TilingError("a tile loop with more than one reduction loop is not supported")
    steps = prod(loop.trip_counts[len(loop.trip_counts) - nred:])
    pre, pre_ops, reduce, post, _, store = loop_parts(loop)
    seams = seam_pairs(loop)
    seam_loads = {b for _, b in seams.values()}
    every = [ld for ld in pre + (post if steps == 1 else []) if ld not in seam_loads]
    # (a conv prologue - ops before the anchor - rewrites its input tile, the first load, in place every step)
    prologue = any(o is not reduce.operands[0].owner for o in pre_ops)
    hoisted: list[Operation] = [ld for ld in every if stays_put(loop, ld) and not (prologue and ld is pre[0])]
    per_tile: list[Operation] = [ld for ld in every if ld not in hoisted and stays_per_tile(loop, ld)]
    piped = [ld for ld in every if ld not in hoisted and ld not in per_tile]
    # (never a conv prologue's input, rewritten in place every step, nor a sum's init tile)
    start = reduce.init.owner if reduce.init is not None else None
    wholes = {ld: whole for ld in piped if not (prologue and ld is pre[0]) and ld is not start
              and (whole := whole_run(loop, ld, steps, arch)) is not None}
    runs = {ld: wholes[ld] for ld in coalesced([(ld, tile_bytes(ld)) for ld in wholes], len(piped), arch)}
    for ld, whole in wholes.items():
        if ld not in runs:
            whole.erase()  # (detached, reading the loop's indices: it must not stay a use of them)
    piped = [ld for ld in piped if ld not in runs]
    for whole in runs.values():
        (hoisted if stays_put(loop, whole) else per_tile).append(whole)
    offset = 0

    def sram(v: SSAValue) -> SSAValue:
        """A new buffer for tile `v` (its shape and element type)."""
        nonlocal offset
        op = SramOp(sram_type(v.type.get_shape(), v), offset)  # type: ignore[attr-defined]
        offset += align_up(nbytes(v), arch.align)
        return em.add(op).results[0]

    init = reduce.init.owner if reduce.init is not None and isinstance(reduce.init.owner, LoadOp) else None
    # (the init tile's load lands in the accumulator)
    if init is not None and (steps == 1 or init in piped):
        raise TilingError("a sum starting from an init tile needs reduction steps it stays put over")
    slots = [[sram(ld.tile) for ld in piped] for _ in range(2 if loop.double_buffer is not None else 1)]
    once = [] if steps == 1 else [sram(ld.tile) for ld in post]
    own = [ld for ld in hoisted + per_tile if ld is not init]
    kept = [sram(ld.results[0]) for ld in own]
    acc = sram(reduce.results[0])
    typed, derived = chain_buffers(loop, reduce, acc, sram)
    # (a KV-cache append converting a float cache: each quantize, sum and dequantize before the anchor in a
    # buffer of its own; the seam, no longer landed in its block's slot, a load of its own)
    tees = any(isinstance(o, TeeOp) for o in pre_ops)
    staged: dict[Operation, SSAValue] = {o: sram(o.results[0]) for o in pre_ops
                                          if tees and o not in seams and isinstance(o, QuantOp | AddOp)}
    offset += sum(align_up(scratch_bytes(o, arch), arch.align)  # (a structured op's intermediates, e.g. attention scores)
                  for o in loop.body.block.ops if isinstance(o, StructuredOp))
    if offset > arch.sram_bytes:
        raise TilingError(f"tile buffers need {offset} bytes of SRAM, more than sram_bytes={arch.sram_bytes}")
    pair = None
    stored = typed.get(element_type(store.value), acc)
    if loop.double_buffer is not None and steps == 1 and offset + align_up(nbytes(stored), arch.align) <= arch.sram_bytes:
        pair = (stored, sram(stored))
    slot_of: dict[Operation, SSAValue] = {**dict(zip(piped, slots[0])), **dict(zip(post if steps > 1 else [], once)),
                                          **dict(zip(own, kept)), **({init: acc} if init is not None else {})}
    slot_of.update({b: slot_of[a] for a, b in seams.values()})  # (a seam lands in its block's slot)
    run_of: dict[Operation, int] = {ld: n for ld in piped if not (prologue and ld is pre[0]) and (n := run_steps(loop, ld)) > 1}
    return TileBuffers(loop, outs, view, em, steps, slots, once, hoisted, acc, store.view_shape(), slot_of,
                       per_tile=per_tile, seams=seams, typed=typed, derived=derived, store_pair=pair, staged=staged,
                       blocks={ld: (whole, slot_of[whole]) for ld, whole in runs.items()}, run_of=run_of,
                       run_slots={slot_of[ld]: n for ld, n in run_of.items()})


def whole_run(loop: LoopOp, ld: LoadOp, steps: int, arch: Arch) -> LoadOp | None:
    """A detached load of `ld`'s window over all of an output tile's reduction steps, when
    its blocks may coalesce (`coalesce_dim`, `coalesces`; `coalesced` picks which do, as
    the tile search's `load_split`)."""
    view, terms, consts, sizes = ld.window()
    red = len(loop.trip_counts) - 1  # (the one reduction loop, innermost)
    d = coalesce_dim(list(zip(terms, consts, sizes)), view, red, steps)
    if d is None or not coalesces(steps, prod(sizes) * elem_bytes(ld.source), arch):
        return None
    n = len(ld.indices)
    coefs = list(ints(ld.coefs, ()))
    coefs[d * n + red] = 0
    run = [sz * steps if i == d else sz for i, sz in enumerate(sizes)]
    whole = LoadOp(ld.source, ld.indices, view, coefs, consts, run,
                   ld.pad_value.value.data if ld.pad_value is not None else None)
    whole.location = ld.location
    return whole


# --------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------


def step_indices(em: Emitter, t: SSAValue, grid: Sequence[int], nred: int) -> list[SSAValue]:
    """The tile index along each loop at step `t` (reduction loops innermost in t)."""
    steps = prod(grid[len(grid) - nred:])
    par = list(range(len(grid) - nred))
    idx: list[SSAValue | None] = [None] * len(grid)
    outer = next((i for i in par if grid[i] > 1), len(par))
    p = em.div_c(t, steps) if outer < len(par) else t
    for i in reversed(par):
        if grid[i] == 1:
            idx[i] = em.const(0)
        elif i == outer:
            idx[i] = p  # the outermost loop that iterates needs no remainder
        else:
            idx[i] = em.rem_c(p, grid[i])
            p = em.div_c(p, grid[i])
    for i in range(len(par), len(grid)):
        idx[i] = em.rem_c(t, steps)
    return [v for v in idx if v is not None]


def materialize(value: SSAValue, dest: SSAValue, accumulate: bool = False) -> MaterializeOp:
    """`value` materialized into `dest`, at the location of the op computing it (the
    anchor's ONNX node: the compute op it lowers to names it)."""
    op = MaterializeOp(value, dest, accumulate=accumulate)
    if isinstance(owner := value.owner, Operation):
        op.location = owner.location
    return op


class TileLoopToSteps(RewritePattern):
    """`npu_tile.loop` -> `scf.for %t` over the task's steps, its body cloned per step
    (see the module's Algorithm)."""

    def __init__(self, bufs: TileBuffers):
        self.bufs = bufs

    def clone_into(self, em: Emitter, ops: Sequence[Operation], vmap: dict[SSAValue, SSAValue]) -> SSAValue | None:
        """Clone `ops` with `vmap` at `em`; the last clone's first result, if any."""
        new: Operation | None = None
        for op in ops:
            new = em.add_clone(op, vmap)
            if op in self.bufs.staged:
                self.bufs.staged_clones[new] = self.bufs.staged[op]
            if isinstance(op, LoadOp):
                self.bufs.dest[new] = self.bufs.slot_of[op]
                if op in self.bufs.run_of:
                    self.bufs.run_clones[new] = self.bufs.run_of[op]
                if op in self.bufs.hoisted:
                    self.bufs.hoisted_clones.add(new)
                if any(op in pair for pair in self.bufs.seams.values()):
                    self.bufs.clipped.add(new)
        return new.results[0] if new is not None and new.results else None

    def land_seam(self, em: Emitter, add: Operation, vmap: dict[SSAValue, SSAValue]) -> None:
        """A seam pair's sum (`seam_pairs`): the block's tile, with the seam's part landed
        in its slot (a copy awaited in an `scf.if`) at the steps its window reaches into
        its source along the seam's dim."""
        block, seam = self.bufs.seams[add]
        inside = Block()
        self.clone_into(em.nested(inside), [seam], vmap)
        clone = inside.first_op
        assert isinstance(clone, LoadOp)
        d = next(d for d, (x, y) in enumerate(zip(block.window()[2], seam.window()[2])) if x != y)
        start, size, extent = em.offsets(clone)[d], seam.window()[3][d], seam.view_shape()[d]
        reach = em.add(arith.CmpiOp(start, em.const(extent), "slt")).results[0]
        ends = em.add(arith.CmpiOp(em.add_i(start, em.const(size)), em.const(0), "sgt")).results[0]
        inside.add_op(scf.YieldOp())
        em.add(scf.IfOp(em.add(arith.AndIOp(reach, ends)).results[0], [], Region(inside)))
        vmap[add.results[0]] = vmap[block.results[0]]

    def next_tile_loads(self, em: Emitter, t: SSAValue, tend: SSAValue, vmap: dict[SSAValue, SSAValue]) -> None:
        """At an output tile's last step, after its store: the next tile's per-tile loads
        (their slots are read no more), in an `scf.if` when there is a next tile; the
        store's wait follows it (`StoreToCopy`), so the store and the loads overlap."""
        loop = self.bufs.loop
        t1 = em.add_i(t, em.const(1))
        inside = Block()
        ie = em.nested(inside)
        idx = step_indices(ie, t1, loop.trip_counts, loop.reductions.value.data)
        self.clone_into(ie, self.bufs.per_tile, {**vmap, **dict(zip(loop.body.block.args, idx))})
        inside.add_op(scf.YieldOp())
        more = em.add(arith.CmpiOp(t1, tend, "slt")).results[0]
        self.bufs.next_tile = em.add(scf.IfOp(more, [], Region(inside)))

    def merge(self, em: Emitter, anchor: SSAValue, r: SSAValue, reduce: ReduceOp) -> None:
        """A later reduction step's tile merged into the accumulator; an online-softmax
        state's last one by a copy of the tile op with `finish` (normalising the
        merged output: the state's is kept unnormalised until then)."""
        if reduce.combine is None or reduce.combine.data != "online_softmax":
            em.insert(materialize(anchor, self.bufs.acc, True))
            return
        last, other = Block(), Block()
        tile_op = anchor.owner
        assert isinstance(tile_op, Operation)  # (the anchor is the tile op's result)
        fin = tile_op.clone()
        fin.attributes["finish"] = UnitAttr()
        last.add_ops([fin, materialize(fin.results[0], self.bufs.acc, True), scf.YieldOp()])
        other.add_ops([materialize(anchor, self.bufs.acc, True), scf.YieldOp()])
        em.add(scf.IfOp(em.eq_c(r, self.bufs.steps_per_tile - 1), [], Region(last), Region(other)))

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if op is not b.loop:
            return
        assert isinstance(op, LoopOp)
        lo, hi = b.em.task_block.args
        em = b.em.at(op)
        t0, tend = em.mul_c(lo, b.steps_per_tile), em.mul_c(hi, b.steps_per_tile)
        body = Block(arg_types=[INDEX])
        be = em.nested(body)
        idx = step_indices(be, body.args[0], op.trip_counts, op.reductions.value.data)
        vmap: dict[SSAValue, SSAValue] = dict(zip(op.body.block.args, idx))
        outer: dict[SSAValue, SSAValue] = {i: em.const(0) for i in op.body.block.args}  # (the hoisted move with none)
        for ld in b.hoisted:
            tile = self.clone_into(em, [ld], outer)
            assert tile is not None  # (a load has its tile)
            vmap[ld.results[0]] = tile
        pre, pre_ops, reduce, post, post_ops, store = loop_parts(op)
        seam_loads = [sb for _, sb in b.seams.values()]
        every = [o for o in pre + (post if b.steps_per_tile == 1 else [])
                 if o not in b.hoisted + b.per_tile + seam_loads and o not in b.blocks]
        every.sort(key=tile_bytes)  # (issued smallest first: a channel frees soonest for the rest)
        self.clone_into(be, every, vmap)
        # the next tile's per-tile loads go out at a tile's last step, unless one lands in the
        # accumulator (a sum's init tile) the store still reads
        ahead = all(b.slot_of[ld] is not b.acc for ld in b.per_tile)
        if b.per_tile:  # loaded at an output tile's first step (`ahead`: the task's first only); read from their slots
            first_step = Block()
            self.clone_into(be.nested(first_step), b.per_tile, vmap)
            first_step.add_op(scf.YieldOp())
            cond = be.add(arith.CmpiOp(body.args[0], t0, "eq")).results[0] if ahead else be.eq_c(idx[-1], 0)
            b.first_step = scf.IfOp(cond, [], Region(first_step))
            be.add(b.first_step)
            vmap.update({ld.results[0]: be.add(ToTensorOp(b.slot_of[ld])).results[0] for ld in b.per_tile})
        for ld, (_, buf) in b.blocks.items():  # (a coalesced load: the step's block of its whole run)
            block = be.add(ViewOp(buf, sram_type(ld.tile.type.get_shape(), ld.tile), index=idx[-1])).results[0]
            vmap[ld.results[0]] = be.add(ToTensorOp(block)).results[0]
        for o in pre_ops:
            if o in b.seams:
                self.land_seam(be, o, vmap)
            else:
                self.clone_into(be, [o], vmap)
        anchor = vmap[reduce.operands[0]]
        if b.steps_per_tile == 1:
            be.insert(materialize(anchor, b.acc))
            vmap[reduce.results[0]] = be.add(ToTensorOp(b.acc)).results[0]
            self.clone_into(be, [*post_ops, store], vmap)
        else:
            r = idx[-1]
            if reduce.init is not None:  # (the accumulator starts from the init tile, loaded at r == 0)
                be.insert(materialize(anchor, b.acc, True))
            else:
                first, other = Block(), Block()
                be.nested(first).insert(materialize(anchor, b.acc))
                self.merge(be.nested(other), anchor, r, reduce)
                for blk in (first, other):
                    blk.add_op(scf.YieldOp())
                be.add(scf.IfOp(be.eq_c(r, 0), [], Region(first), Region(other)))
            last = Block()
            le = be.nested(last)
            vmap[reduce.results[0]] = le.add(ToTensorOp(b.acc)).results[0]
            self.clone_into(le, [*post, *post_ops, store], vmap)
            if b.per_tile and ahead:
                self.next_tile_loads(le, body.args[0], tend, vmap)
            last.add_op(scf.YieldOp())
            be.add(scf.IfOp(be.eq_c(r, b.steps_per_tile - 1), [], Region(last)))
        body.add_op(scf.YieldOp())
        b.steps = scf.ForOp(t0, tend, em.const(1), [], Region(body))
        em.add(b.steps)
        for whole, _ in b.blocks.values():  # (cloned where they load; the detached originals go)
            whole.erase()
        rewriter.erase(op)


def after_loads(op: Operation) -> Operation:
    """The first op after `op` that is not a load, a copy, a wait or index arithmetic:
    where the waits of a step's loads go."""
    nxt = op.next_op
    while nxt is not None and (isinstance(nxt, (LoadOp, CopyOp, WaitOp)) or nxt.dialect_name() == "arith"):
        nxt = nxt.next_op
    assert nxt is not None  # (a load is always followed by what reads its tile)
    return nxt


def default_pad(load: LoadOp) -> float:
    """What a tile load's reads outside the tensor (a partial tile's) hold when the plan
    leaves them open: what the elementwise op reading the tile wants there
    (`ElementwiseOp.outside_value`: 1 for a divisor), else 0."""
    return max((u.operation.outside_value(u.index) for u in load.results[0].uses
                if isinstance(u.operation, ElementwiseOp)), default=0.0)


class LoadToCopy(RewritePattern):
    """`npu_tile.load` of a DRAM buffer's tensor -> `npu_dma.copy` of its window into the
    slot the buffer assignment gives it (reads outside the tensor padded), waited for
    after the step's last load; the tile becomes the slot's tensor."""

    def __init__(self, bufs: TileBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, LoadOp) or op not in self.bufs.dest or not isinstance(op.source.owner, ToTensorOp):
            return
        b = self.bufs
        slot = b.dest.pop(op)
        em = b.em.at(op)
        src = b.view(op.source.owner.buffer, op.view_shape())
        sizes = list(op.window()[3])
        clipped = op in b.clipped  # (a seam pair's part: the other part fills the rest of the slot)
        pad = None if clipped else op.pad_value.value.data if op.pad_value is not None else default_pad(op)
        copy: Operation = CopyOp(src, em.offsets(op), slot, [em.const(0)] * len(sizes), sizes, pad_value=pad,
                                 src_clip=clipped)
        if op in b.run_clones and b.steps is not None:  # (issued at a run's first step only: `run_copy`)
            copy = run_copy(em, copy, b.steps, b.run_clones.pop(op), b)
        else:
            em.add(copy)
        if op in b.hoisted_clones and b.steps is not None:  # (awaited in the steps: the first one's loads overlap it)
            body = b.steps.body.block
            first = next(o for o in body.ops if not isinstance(o, (LoadOp, CopyOp, WaitOp)) and o.dialect_name() != "arith")
            rewriter.insert(WaitOp(copy.results[0]), InsertPoint.before(first))
        else:
            wait = WaitOp(copy.results[0])
            wait.location = op.location
            rewriter.insert(wait, InsertPoint.before(after_loads(op)))
        tile = ToTensorOp(slot)
        rewriter.replace(op, [tile], [tile.tensor])


def run_copy(em: Emitter, copy: Operation, steps: scf.ForOp, n: int, bufs: TileBuffers) -> scf.IfOp:
    """`copy` of a load staying put over runs of `n` steps (`run_steps`), issued in an
    `scf.if` at the steps starting a run - the task's first (t == t0) and each t with
    t % n == 0 - whose token it yields (`npu_dma.done` at the others)."""
    t, t0 = steps.body.block.args[0], steps.lb
    starts = em.add(arith.OrIOp(em.add(arith.CmpiOp(t, t0, "eq")).results[0], em.eq_c(em.rem_c(t, n), 0))).results[0]
    copy.location = em.loc
    done = DoneOp()
    issue = em.add(scf.IfOp(starts, [TokenType()], Region(Block([copy, scf.YieldOp(copy.results[0])])),
                            Region(Block([done, scf.YieldOp(done.results[0])]))))
    assert isinstance(issue, scf.IfOp)
    bufs.run_ifs.add(issue)
    return issue


class StageOnBuffers(RewritePattern):
    """A graph op on buffer tensors whose result is not yet written anywhere -> its
    result materialized in place: into the accumulator when it reads it (an epilogue
    op), else into the first load's slot (a prologue op on the input tile); readers
    of the result read that buffer."""

    def __init__(self, bufs: TileBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, GraphOp) or not op.operands or len(op.results) != 1:
            return
        if not all(isinstance(o.owner, ToTensorOp) for o in op.operands):
            return
        res = op.results[0]
        if any(isinstance(u.operation, MaterializeOp) for u in res.uses):
            return
        read = [o.owner.buffer for o in op.operands]  # type: ignore[union-attr]
        first = self.bufs.slots[0][0] if self.bufs.slots and self.bufs.slots[0] else None
        t = element_type(res)
        if op in self.bufs.staged_clones:
            dest = self.bufs.staged_clones[op]
        elif self.bufs.acc in read or any(b in read for b in self.bufs.typed.values()):
            dest = self.bufs.typed.get(t, self.bufs.acc)  # (the running tile, in its type's buffer)
        elif first in read:
            dest = first
        else:
            dest = self.bufs.derived.get((t, tuple(shape_of(res))))
        if dest is None:
            return  # (left for `lower_compute` to report)
        after = ToTensorOp(dest)
        mat = MaterializeOp(res, dest)
        mat.location = after.location = op.location  # (its compute op names the graph op's ONNX node)
        rewriter.insert([mat, after], InsertPoint.after(op))
        rewriter.replace_uses_with_if(res, after.tensor, lambda u: not isinstance(u.operation, MaterializeOp))


class StoreToCopy(RewritePattern):
    """`npu_tile.store` of the accumulator -> `npu_dma.copy` to the output's window
    (clipped at the tensor's edge), waited for."""

    def __init__(self, bufs: TileBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, StoreOp) or not isinstance(op.value.owner, ToTensorOp):
            return
        token = store_copy(self.bufs, op, self.bufs.out, self.bufs.out_view)
        wait = WaitOp(token)
        wait.location = op.location
        assert isinstance(token.owner, CopyOp)
        self.bufs.store = (token.owner, wait)
        nxt = self.bufs.next_tile
        if nxt is not None and nxt.parent is op.parent:  # (the next tile's loads overlap the store)
            rewriter.insert(wait, InsertPoint.after(nxt))
        else:
            self.bufs.em.at(op).add(wait)
        rewriter.erase(op)


def store_copy(bufs: TileBuffers, op: StoreOp | TeeOp, out: SSAValue, view: tuple[int, ...]) -> SSAValue:
    """Issue the copy of a store's or tee's tile (a slot) to its window of `out` seen as
    `view`, clipped at the tensor's edge, where the op is; its token."""
    em = bufs.em.at(op)
    owner = op.value.owner
    assert isinstance(owner, ToTensorOp)  # (the callers matched a tile in a buffer)
    sizes = list(op.window()[3])
    copy = em.add(CopyOp(owner.buffer, [em.const(0)] * len(sizes), bufs.view(out, view), em.offsets(op), sizes,
                         clip=True))
    return copy.results[0]


class TeeToCopy(RewritePattern):
    """`npu_tile.tee` of a step's tile -> `npu_dma.copy` of its slot to the window of
    the output it writes (clipped at the tensor's edge), awaited at the end of the
    step: it runs while the step computes from the same slot (both read it), and is
    out before the next step loads into its slot set."""

    def __init__(self, bufs: TileBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, TeeOp) or not isinstance(op.value.owner, ToTensorOp):
            return
        token = store_copy(self.bufs, op, self.bufs.outs[op.into.value.data], op.view_shape())
        end = op.parent_block()
        assert end is not None and end.last_op is not None  # (a step body, ending in its scf.yield)
        wait = WaitOp(token)
        wait.location = op.location
        rewriter.insert(wait, InsertPoint.before(end.last_op))
        rewriter.erase(op)


class PrefetchLoads(RewritePattern):
    """Double buffering: the copies into slot set 0 at the top of the step loop are
    issued one step ahead into the other set (see the module's Algorithm)."""

    def __init__(self, bufs: TileBuffers):
        self.bufs = bufs

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        b = self.bufs
        if op is not b.steps or not b.double_buffered:
            return
        assert isinstance(op, scf.ForOp)
        body, t0 = op.body.block, op.lb
        t = body.args[0]
        copies = [o for o in body.ops if (isinstance(o, CopyOp) and o.dst in b.slots[0]) or o in b.run_ifs]
        if not copies:
            return  # (every load is hoisted: nothing to pipeline)
        waits = [o for o in body.ops if isinstance(o, WaitOp) and o.token.owner in copies]
        rest = [o for o in body.ops if o not in copies and o not in waits and not isinstance(o, scf.YieldOp)]
        # a tile's per-tile loads (its query rows, a residual) go out before the next step's: the
        # step computes from them, the next step's loads only overlap that compute
        first = b.first_step
        head = rest[:rest.index(first) + 1] if first is not None and first in rest else []
        em = b.em.at(op)
        toks0 = self.issue(em, copies, {t: t0})
        deferred = self.deferred_store(rest)
        tlast = em.add(arith.SubiOp(op.ub, em.const(1))).results[0]
        carried = toks0 + ([em.add(DoneOp()).results[0]] if deferred else [])  # (no store before the first step)
        new = Block(arg_types=[INDEX] + [TokenType()] * len(carried))
        ne = em.nested(new)
        cur, nxt = self.slot_sets(ne, new.args[0], t0)
        vmap = {t: new.args[0], **dict(zip(self.sets()[0], cur))}
        for o in head:
            ne.add_clone(o, vmap)
        t1 = ne.add_i(new.args[0], ne.const(1))
        nxt_toks = self.issue(ne, copies, {t: t1, **dict(zip(self.sets()[0], nxt))})
        for tk in new.args[1:len(toks0) + 1]:
            ne.add(WaitOp(tk))
        stored = self.clone_steps(ne, rest[len(head):], vmap, new.args[-1] if deferred else None)
        new.add_op(scf.YieldOp(*nxt_toks, *stored))
        loop = em.add(scf.ForOp(t0, tlast, em.const(1), carried, Region(new)))
        cur, _ = self.slot_sets(em, tlast, t0)
        for tk in loop.results[:len(toks0)]:
            em.add(WaitOp(tk))
        vmap = {t: tlast, **dict(zip(self.sets()[0], cur))}
        self.clone_steps(em, rest, vmap, loop.results[-1] if deferred else None, last=True)
        b.steps = None
        rewriter.erase(op)

    def deferred_store(self, rest: list[Operation]) -> bool:
        """Whether the step's store is awaited a step later (`TileBuffers.store_pair`):
        its copy and wait are in the step body, reading the paired buffer."""
        b = self.bufs
        return b.store_pair is not None and b.store is not None and all(o in rest for o in b.store) \
            and b.store[0].src is b.store_pair[0]

    def clone_steps(self, em: Emitter, ops: list[Operation], vmap: dict[SSAValue, SSAValue],
                    before: SSAValue | None, last: bool = False) -> list[SSAValue]:
        """Clone a step's `ops` with `vmap`; with a deferred store, the previous store
        (token `before`) is awaited just before this one is issued, and this one's token
        returned instead of awaited (unless `last`: the task's last step awaits it)."""
        b = self.bufs
        out: list[SSAValue] = []
        for o in ops:
            if before is not None and b.store is not None:
                if o is b.store[0]:
                    em.add(WaitOp(before))
                elif o is b.store[1] and not last:
                    continue
            new = em.add_clone(o, vmap)
            if before is not None and b.store is not None and o is b.store[0]:
                out.append(new.results[0])
                vmap[o.results[0]] = new.results[0]
        return out

    def sets(self) -> list[list[SSAValue]]:
        """The slot sets with the stored buffer's pair, when stores are deferred."""
        b = self.bufs
        if b.store_pair is None:
            return b.slots
        return [b.slots[0] + [b.store_pair[0]], b.slots[1] + [b.store_pair[1]]]

    def slot_sets(self, em: Emitter, t: SSAValue, t0: SSAValue) -> tuple[list[SSAValue], list[SSAValue]]:
        """The slots step t computes from and the ones it prefetches into (by t - t0's
        parity; a load staying put over runs of L steps, `run_steps`, by the parity of
        t // L - t0 // L: its run's, the slots alternating at each run's first step)."""
        odd: dict[int, SSAValue] = {}
        pairs = list(zip(*self.sets()))
        runs = [self.bufs.run_slots.get(b0, 1) for b0, _ in pairs]
        for n in runs:
            if n not in odd:
                rel = em.add(arith.SubiOp(em.div_c(t, n), em.div_c(t0, n))).results[0]
                odd[n] = em.eq_c(em.rem_c(rel, 2), 1)
        cur = [em.select(odd[n], b1, b0) for (b0, b1), n in zip(pairs, runs)]
        nxt = [em.select(odd[n], b0, b1) for (b0, b1), n in zip(pairs, runs)]
        return cur, nxt

    @staticmethod
    def issue(em: Emitter, copies: Sequence[Operation], vmap: dict[SSAValue, SSAValue]) -> list[SSAValue]:
        """Clone `copies` and the index arithmetic they use, with `vmap` (the step index
        and slots they are issued for)."""
        needed: list[Operation] = []
        for c in copies:
            stack: list[Operation] = [c]
            while stack:
                o = stack.pop()
                for v in (x for inner in o.walk() for x in inner.operands):  # (a run's `scf.if`: its copy's too)
                    d = v.owner
                    if isinstance(d, Operation) and d.parent is c.parent and d not in needed and d not in copies:
                        needed.append(d)
                        stack.append(d)
        block = copies[0].parent
        assert block is not None
        order = {o: i for i, o in enumerate(block.ops)}
        toks = []
        for o in sorted([*needed, *copies], key=order.__getitem__):
            new = em.add_clone(o, vmap)
            if o in copies:
                toks.append(new.results[0])
        return toks


class DeadIndexMath(RewritePattern):
    """Index arithmetic nothing uses any more (left by `PrefetchLoads`' clones) is erased."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.dialect_name() == "arith" and not isinstance(op, arith.ConstantOp) and not any(r.uses for r in op.results):
            rewriter.erase(op)


def lower_tile_loop(bufs: TileBuffers, region: Region) -> None:
    """Apply the patterns, stage by stage, to the task body `region` holding `bufs.loop`."""
    # (a stage that rewrites one known op - the tile loop, the step loop - walks once: its
    # pattern matches nothing it creates, so a second walk would find nothing to do)
    stages: list[tuple[list[RewritePattern], bool]] = [
        ([TileLoopToSteps(bufs)], False),
        ([LoadToCopy(bufs), StageOnBuffers(bufs), StoreToCopy(bufs), TeeToCopy(bufs)], True),
        ([PrefetchLoads(bufs)], False), ([DeadIndexMath()], True)]
    for patterns, again in stages:
        applier = GreedyRewritePatternApplier(patterns, dce_enabled=False)  # (the slots have no uses yet)
        PatternWalker(applier, apply_recursively=again).rewrite_region(region)

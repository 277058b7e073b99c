"""`npu-early-load`: a task loads its weights while the core's previous task runs.

A core drains each task before the next begins, so a task's weight loads used to
start only when its core was free (`npu-prefetch` overlaps them with its wait for
events). A weight depends on nothing another task computes: its load may go out as
soon as the SRAM bytes it lands in are free. This pass marks the first `early` body ops of a task
(`TaskOp.early`: its SRAM buffers, scalar ops and the loads of weights into bytes
the core's previous task never touches) and the point from which that task lets
them run (`TaskOp.handoff`); the simulator issues those loads from there on, on a
DMA channel the running task is not waiting for.

Assumes SRAM offsets are final (npu-bufferize) and runs after `npu-prefetch` (the
loads stay among a task's `prefetch` ops). Options: `mirror=false` keeps every
task's SRAM layout as bufferization left it.

Algorithm
---------
Per core, in program order, each task B after a task A. The footprint of A is the
byte range of every SRAM buffer of its body. B's candidates are the loads of
weights into an SRAM buffer in its prologue (its leading scalar ops, buffers and
loads) of at least dram_bw x dma_latency bytes (a smaller one saves at most its
latency, which B's other prologue loads overlap anyway) and of weights B does not
also load in a loop (a tile loop's first tile: the loop's pace is its DRAM traffic,
a head start only shifts its tiles). B's layout may be mirrored: its buffers, in
clusters of overlapping byte ranges (views of one value and in-place values move
together), are placed in reverse order from the top of SRAM - a cluster [a, b)
moves to start at align_down(S - b), which keeps clusters apart and aligned (a,
like every buffer start, is aligned; S is); the layout, as is or mirrored, whose
candidates have more bytes outside A's footprint is kept (as is on a tie). Those
loads move to the front of the prologue behind its scalar ops and buffers, and
`early` counts them with those. A hands its core over (`handoff`) just past its
last wait for a load from DRAM (or the last loop that loads one): what follows
computes and stores, leaving DMA channels and DRAM bandwidth to B's loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import takewhile

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from lowering.task.prefetch import lead_with, prologue
from lowering.task.taskgraph import copy_ends
from npu_dialects.arch import Arch, arch_of
from npu_dialects.dma import CopyOp, WaitOp, memory_space
from npu_dialects.task import SramOp, TaskOp, byte_size, prefetchable

Ranges = list[tuple[int, int]]


def buffers(task: TaskOp) -> list[SramOp]:
    """The task's SRAM buffers (all directly in its body)."""
    return [op for op in task.body.block.ops if isinstance(op, SramOp)]


def extent(buf: SramOp, offsets: dict[SramOp, int]) -> tuple[int, int]:
    off = offsets.get(buf, buf.offset.value.data)
    return off, off + byte_size(buf.result.type)


def footprint(task: TaskOp) -> Ranges:
    return [extent(b, {}) for b in buffers(task)]


def mirrored(task: TaskOp, sram_bytes: int, align: int) -> dict[SramOp, int] | None:
    """The offsets of the task's buffers with its clusters of overlapping buffers in
    reverse order from the top of SRAM (None: a cluster starts unaligned)."""
    bufs = sorted(buffers(task), key=lambda b: extent(b, {}))
    clusters: list[tuple[int, int, list[SramOp]]] = []
    for b in bufs:
        lo, hi = extent(b, {})
        if clusters and lo < clusters[-1][1]:
            a, e, members = clusters[-1]
            clusters[-1] = (a, max(e, hi), members + [b])
        else:
            clusters.append((lo, hi, [b]))
    out: dict[SramOp, int] = {}
    for a, e, members in clusters:
        if a % align:
            return None
        delta = (sram_bytes - e) // align * align - a
        for b in members:
            out[b] = b.offset.value.data + delta
    return out


def candidates(task: TaskOp) -> list[CopyOp]:
    """The prologue's loads of weights into an SRAM buffer of the task, of weights the
    task does not also stream in a loop (a tile loop's first tile: the loop's pace is
    its DRAM traffic, which a head start does not change)."""
    loads = [op for op in prologue(task.body.block.ops)
             if isinstance(op, CopyOp) and prefetchable(op) and isinstance(copy_ends(op)[1].owner, SramOp)]
    if not loads:
        return []
    streamed = {copy_ends(o)[0] for op in task.body.block.ops if op.regions for o in op.walk() if isinstance(o, CopyOp)}
    return [op for op in loads if copy_ends(op)[0] not in streamed]


def destination(ld: CopyOp) -> SramOp:
    buf = copy_ends(ld)[1].owner
    assert isinstance(buf, SramOp)  # (`candidates`)
    return buf


def free_bytes(loads: list[CopyOp], offsets: dict[SramOp, int], busy: Ranges) -> list[CopyOp]:
    """The loads whose destination buffer (at `offsets`) is outside every range of `busy`."""
    out = []
    for ld in loads:
        lo, hi = extent(destination(ld), offsets)
        if all(hi <= a or b <= lo for a, b in busy):
            out.append(ld)
    return out


def mark_early(task: TaskOp, loads: list[CopyOp]) -> None:
    """Move `loads` to the front of the prologue behind its scalar ops and buffers;
    `early` counts them with those. A task's `prefetch` then counts its leading ops
    that may run before its waits (as many as before, or more: npu-prefetch with
    `reorder=false` may have left scalar ops behind an activation load)."""
    head = prologue(task.body.block.ops)
    first = [o for o in head if not isinstance(o, CopyOp)] + loads
    lead_with(task.body.block, head, first)
    task.early = IntegerAttr(len(first), i64)
    if task.prefetch_ops:
        task.prefetch = IntegerAttr(len(list(takewhile(prefetchable, task.body.block.ops))), i64)


def loads_dram(op: Operation) -> bool:
    """A copy from DRAM into SRAM."""
    if not isinstance(op, CopyOp):
        return False
    src, dst = copy_ends(op)
    return memory_space(src.type) == "dram" and memory_space(dst.type) == "sram"


def handoff_point(task: TaskOp) -> int:
    """The number of body ops after which the task loads nothing more from DRAM: just
    past its last wait for such a load, or its last op (a loop) holding one."""
    point = 0
    for i, op in enumerate(task.body.block.ops):
        if isinstance(op, WaitOp) and isinstance(op.token.owner, Operation) and loads_dram(op.token.owner) or \
                op.regions and any(loads_dram(o) for o in op.walk()):
            point = i + 1
    return point


def plan_core(tasks: list[TaskOp], arch: Arch, mirror: bool) -> None:
    """Decide each task's layout and early loads given the task before it on the core."""
    sram_bytes, align = arch.sram_bytes, arch.align
    for prev, task in zip(tasks, tasks[1:]):
        busy = footprint(prev)
        loads = [ld for ld in candidates(task) if byte_size(destination(ld).result.type) >= arch.dram_bw * arch.dma_latency]
        if not loads:
            continue
        flipped = mirrored(task, sram_bytes, align) if mirror else None
        layouts = [{}] if flipped is None else [{}, flipped]
        frees = [free_bytes(loads, offsets, busy) for offsets in layouts]
        sizes = [sum(byte_size(destination(ld).result.type) for ld in free) for free in frees]
        k = max(range(len(layouts)), key=lambda i: (sizes[i], -i))  # (as is on a tie)
        offsets, free = layouts[k], frees[k]
        if not free:
            continue
        for b, off in offsets.items():
            b.offset = IntegerAttr(off, i64)
        mark_early(task, free)
        prev.handoff = IntegerAttr(handoff_point(prev), i64)


def early_loads(op: Operation, mirror: bool = True) -> None:
    """Run the pass on every function of module `op`."""
    assert isinstance(op, ModuleOp)
    arch = arch_of(op)
    for func in op.ops:
        if not isinstance(func, FuncOp):
            continue
        per_core: dict[int, list[TaskOp]] = {}
        for t in func.body.block.ops:
            if isinstance(t, TaskOp):
                per_core.setdefault(t.core_id, []).append(t)
        for tasks in per_core.values():
            plan_core(tasks, arch, mirror)


@dataclass(frozen=True)
class EarlyLoad(ModulePass):
    """A task's weight loads into SRAM its core's previous task does not touch run while
    that task runs (`TaskOp.early`), a task's SRAM layout mirrored where that frees more.

    Assumes final SRAM offsets (npu-bufferize) and `npu-prefetch` before it. Options:
    `mirror=false` keeps every task's layout."""

    name = "npu-early-load"
    mirror: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        early_loads(op, self.mirror)

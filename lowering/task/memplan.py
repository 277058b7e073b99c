"""`npu-memplan`: DRAM addresses for weights and activation buffers.

Assumes scheduled tasks with events (`npu-events`): concurrency is read off
the IR (queue order + events, `lowering/task/taskgraph.py`), so the plan is safe
for the schedule actually emitted. Two activation buffers may share bytes only
when every task touching one has completed before any task touching the other
starts; an alloc marked `reuse(%r)` may take `%r`'s bytes in place. Activations
are placed first fit, the smallest arena of several orders kept (deterministic).
Weights get consecutive fixed addresses in their own region.

Results go on the module: `npu.dram_weights_bytes`, `npu.dram_arena_bytes`,
`npu.dram_lower_bound_bytes`: the heaviest set of pairwise conflicting buffers
found (at least the most bytes live at once over program order), which no plan
for this schedule can beat. A program needing more than the device DRAM
(`DRAM_BYTES`: weights, arena, inputs, outputs) is an error. No options.

Algorithm
---------
In place: an alloc marked `reuse(%r)` by `npu-bufferize` (its writers read `%r`
only at the positions they write) takes `%r`'s bytes when every other task
touching `%r` happens before each of its writers; the two are then one buffer.

Offsets: first fit, each buffer at the lowest `align`-ed address that overlaps
no conflicting buffer already placed, in three orders - by size (greedy by
size, Pisarchyk & Lee 2020), by first use, by lifetime - keeping the smallest
arena; while that is above the lower bound, seeded random orders (bigger
buffers mostly first) are tried too, up to RANDOM_TRIES placements' worth of
work (deterministic: the same IR gets the same plan).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from lowering.errors import CompileError
from lowering.task.taskgraph import TaskInfo, happens_before, tasks_of
from lowering.tile.tile_search import align_up, first_fit
from npu_dialects.arch import DRAM_BYTES, arch_of
from npu_dialects.entry import INPUTS_ATTR, OUTPUTS_ATTR, find_main, io_names
from npu_dialects.task import AllocOp, WeightOp, byte_size


def ordered(a_mask: int, b_tasks: list[int], hb: list[int]) -> bool:
    """Every task in a_mask completes before each task of b starts."""
    return all(a_mask & ~hb[b] == 0 for b in b_tasks)


def live_lower_bound(buffers: list[tuple[int, list[int]]], n_tasks: int) -> int:
    """Max over program points of the bytes of buffers whose first and last use straddle it."""
    delta = [0] * (n_tasks + 1)
    for size, tasks in buffers:
        if tasks:
            delta[min(tasks)] += size
            delta[max(tasks) + 1] -= size
    best = cur = 0
    for d in delta:
        cur += d
        best = max(best, cur)
    return best


@dataclass(eq=False)
class Buffer:
    """Bytes to place: one alloc, or several that take each other's bytes in place."""

    allocs: list[AllocOp]
    size: int
    order: int
    tasks: list[int]
    mask: int
    offset: int = 0

    def conflicts(self, other: "Buffer", hb: list[int]) -> bool:
        """Neither buffer's tasks all complete before the other's start."""
        return not (ordered(other.mask, self.tasks, hb) or ordered(self.mask, other.tasks, hb))


def buffers(func: FuncOp, tasks: list[TaskInfo], hb: list[int], align: int) -> list[Buffer]:
    """The function's activation buffers, an alloc merged into the buffer it `reuse`s when
    every other task touching that buffer happens before each task writing the alloc."""
    users: dict[SSAValue, list[int]] = {}
    writers: dict[SSAValue, list[int]] = {}
    for t in tasks:
        for b in t.touches:
            users.setdefault(b, []).append(t.index)
        for b in t.dma_writes:  # (not the `reuse` buffers a task is ordered as writing: a later
            writers.setdefault(b, []).append(t.index)  # in-place candidate still reads its input)
    of: dict[SSAValue, Buffer] = {}
    out: list[Buffer] = []
    for order, a in enumerate(op for op in func.body.block.ops if isinstance(op, AllocOp)):
        ts = users.get(a.result, [])
        mask = 0
        for i in ts:
            mask |= 1 << i
        if a.reuse is not None and a.reuse in of:
            into = of[a.reuse]
            ws = writers.get(a.result, [])
            others = into.mask & ~sum(1 << w for w in ws)
            if ws and all(others & ~hb[w] == 0 for w in ws):
                into.allocs.append(a)
                into.tasks = sorted(set(into.tasks) | set(ts))
                into.mask |= mask
                of[a.result] = into
                continue
        b = Buffer([a], align_up(byte_size(a.result.type), align), order, list(ts), mask)
        of[a.result] = b
        out.append(b)
    return out


def conflicts(bufs: list[Buffer], hb: list[int]) -> list[list[bool]]:
    return [[a is not b and a.conflicts(b, hb) for b in bufs] for a in bufs]


RANDOM_TRIES = 4000
"""Buffers placed by the random orders at most (the number of orders is this over the
number of buffers), only while the arena is above the lower bound."""

# placement orders tried; the plan with the smallest arena wins
ORDERS = {
    "size": lambda b: (-b.size, b.order),  # greedy by size (Pisarchyk & Lee 2020)
    "start": lambda b: (min(b.tasks, default=0), -b.size),
    "lifetime": lambda b: (-(max(b.tasks, default=0) - min(b.tasks, default=0)), -b.size),
}


def first_fit_plan(bufs: list[Buffer], conflict: list[list[bool]], order: list[int],
                   align: int) -> tuple[int, list[int]]:
    """Place buffers in `order`, each at the lowest offset clear of the conflicting ones
    already placed: (arena bytes, offset per buffer)."""
    offsets = [0] * len(bufs)
    placed: list[int] = []
    arena = 0
    for i in order:
        busy = [(offsets[j], offsets[j] + bufs[j].size) for j in placed if conflict[i][j]]
        offsets[i] = first_fit(bufs[i].size, busy, align)
        placed.append(i)
        arena = max(arena, offsets[i] + bufs[i].size)
    return arena, offsets


def clique_lower_bound(bufs: list[Buffer], conflict: list[list[bool]]) -> int:
    """Bytes of a heavy set of pairwise conflicting buffers (no plan can overlap any two
    of them, so every plan needs at least their sum): grown greedily, heaviest first,
    from each buffer."""
    by_size = sorted(range(len(bufs)), key=lambda i: -bufs[i].size)
    best = 0
    for seed in by_size:
        clique = [seed]
        for j in by_size:
            if j != seed and all(conflict[j][i] for i in clique):
                clique.append(j)
        best = max(best, sum(bufs[i].size for i in clique))
    return best


@dataclass(frozen=True)
class MemPlan(ModulePass):
    """Assign DRAM offsets: weights at fixed addresses, activations by greedy-by-size packing."""

    name = "npu-memplan"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)
        totals = {"weights": 0, "arena": 0, "bound": 0}
        for func in op.ops:
            if isinstance(func, FuncOp):
                w, a, b = self.plan(func, arch.align)
                totals["weights"] += w
                totals["arena"] = max(totals["arena"], a)
                totals["bound"] = max(totals["bound"], b)
        self.check_fits(op, totals["weights"], totals["arena"])
        op.attributes["npu.dram_weights_bytes"] = IntegerAttr(totals["weights"], i64)
        op.attributes["npu.dram_arena_bytes"] = IntegerAttr(totals["arena"], i64)
        op.attributes["npu.dram_lower_bound_bytes"] = IntegerAttr(totals["bound"], i64)

    def check_fits(self, op: ModuleOp, weights: int, arena: int) -> None:
        """The weights, the arena and `@main`'s inputs and outputs (what the runtime
        allocates on the device) must fit the device DRAM (`DRAM_BYTES`); else a
        CompileError naming the largest of them."""
        parts = [(weights, "the weights"), (arena, "the activation arena")]
        main = find_main(op)
        if main is not None:
            names = ([f"input '{n}'" for n in io_names(main, INPUTS_ATTR) or []]
                     + [f"output '{n}'" for n in io_names(main, OUTPUTS_ATTR) or []])
            for i, arg in enumerate(main.body.block.args):
                if isinstance(arg.type, MemRefType):
                    what = names[i] if i < len(names) else f"argument {i}"
                    parts.append((byte_size(arg.type), f"{what} ({arg.type})"))
        need = sum(n for n, _ in parts)
        if need > DRAM_BYTES:
            size, what = max(parts, key=lambda part: part[0])
            raise CompileError(self.name, f"the program needs {need} bytes of device DRAM, more than its "
                                          f"{DRAM_BYTES}: {what} alone takes {size}")

    def plan(self, func: FuncOp, align: int) -> tuple[int, int, int]:
        woff = 0
        for w in func.body.block.ops:
            if isinstance(w, WeightOp):
                assert isinstance(w.result.type, MemRefType)
                w.attributes["offset"] = IntegerAttr(woff, i64)
                woff = align_up(woff + byte_size(w.result.type), align)
        tasks = tasks_of(func)
        hb = happens_before(tasks)
        bufs = buffers(func, tasks, hb, align)
        conflict = conflicts(bufs, hb)
        plans = [first_fit_plan(bufs, conflict, sorted(range(len(bufs)), key=lambda i: key(bufs[i])), align)
                 for key in ORDERS.values()]
        arena, offsets = min(plans, key=lambda plan: plan[0])  # the first of the smallest
        bound = max(live_lower_bound([(b.size, b.tasks) for b in bufs], len(tasks)),
                    clique_lower_bound(bufs, conflict))
        rng = random.Random(0)
        for _ in range(RANDOM_TRIES // max(1, len(bufs)) if arena > bound else 0):
            order = sorted(range(len(bufs)), key=lambda i: -bufs[i].size * rng.uniform(0.5, 1.5))
            a, offs = first_fit_plan(bufs, conflict, order, align)
            if a < arena:
                arena, offsets = a, offs
                if a <= bound:
                    break
        for b, off in zip(bufs, offsets):
            b.offset = off
            for a in b.allocs:
                a.attributes["offset"] = IntegerAttr(off, i64)
        return woff, arena, bound

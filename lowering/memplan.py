"""`npu-memplan`: DRAM addresses for weights and activation buffers.

Assumes scheduled tasks with events (`npu-events`): concurrency is read off
the IR (queue order + events, `lowering/taskgraph.py`), so the plan is safe
for the schedule actually emitted. Two activation buffers may share bytes only
when every task touching one has completed before any task touching the other
starts. Offsets are assigned greedily by size, each buffer at the lowest
`align`-ed address that overlaps no conflicting buffer already placed
(Pisarchyk & Lee 2020). Weights get consecutive fixed addresses in their own
region. Results go on the module: `npu.dram_weights_bytes`,
`npu.dram_arena_bytes`, `npu.dram_lower_bound_bytes` (the most bytes live at
once over program order, the bound a plan can reach).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, i64
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from npu_dialects.arch import arch_of
from npu_dialects.task import AllocOp, WeightOp, byte_size
from lowering.taskgraph import happens_before, tasks_of


def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def ordered(a_mask: int, b_tasks: list[int], hb: list[int]) -> bool:
    """Every task in a_mask completes before each task of b starts."""
    return all(a_mask & ~hb[b] == 0 for b in b_tasks)


def first_fit(size: int, busy: list[tuple[int, int]], align: int) -> int:
    """Lowest aligned offset where [off, off+size) misses every busy interval."""
    off = 0
    for lo, hi in sorted(busy):
        if off + size <= lo:
            break
        off = max(off, align_up(hi, align))
    return off


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
        op.attributes["npu.dram_weights_bytes"] = IntegerAttr(totals["weights"], i64)
        op.attributes["npu.dram_arena_bytes"] = IntegerAttr(totals["arena"], i64)
        op.attributes["npu.dram_lower_bound_bytes"] = IntegerAttr(totals["bound"], i64)

    def plan(self, func: FuncOp, align: int) -> tuple[int, int, int]:
        woff = 0
        for w in func.body.block.ops:
            if isinstance(w, WeightOp):
                assert isinstance(w.result.type, MemRefType)
                w.attributes["offset"] = IntegerAttr(woff, i64)
                woff = align_up(woff + byte_size(w.result.type), align)
        tasks = tasks_of(func)
        hb = happens_before(tasks)
        users: dict[SSAValue, list[int]] = {}
        for t in tasks:
            for b in t.touches:
                users.setdefault(b, []).append(t.index)
        allocs = [a for a in func.body.block.ops if isinstance(a, AllocOp)]
        info = []
        for order, a in enumerate(allocs):
            ts = users.get(a.result, [])
            mask = 0
            for i in ts:
                mask |= 1 << i
            info.append((align_up(byte_size(a.result.type), align), order, a, ts, mask))
        placed: list[tuple[int, int, list[int], int]] = []  # (offset, size, tasks, mask)
        arena = 0
        for size, _, a, ts, mask in sorted(info, key=lambda x: (-x[0], x[1])):
            busy = [(o, o + s) for o, s, ts2, m2 in placed
                    if not (ordered(m2, ts, hb) or ordered(mask, ts2, hb))]
            off = first_fit(size, busy, align)
            a.attributes["offset"] = IntegerAttr(off, i64)
            placed.append((off, size, ts, mask))
            arena = max(arena, off + size)
        bound = live_lower_bound([(s, ts) for s, _, _, ts, _ in info], len(tasks))
        return woff, arena, bound

"""`npu-events`: cross-core synchronisation with reusable event slots.

Assumes scheduled tasks (`npu-schedule`). Dependencies come from the DRAM
buffers tasks read and write (`lowering/task/taskgraph.py`). A dependency needs no
event when it is already guaranteed (queue order, or events placed so far);
otherwise the producer signals a slot the consumer waits on. Slots are counting
semaphores, so each consumer gets one slot that all its cross-core producers
signal (`waits` lists it once per producer): a kernel split over k cores followed
by another costs k slots, not k*(k-1). Slots are reused when provably free;
allocation always succeeds and `event_slots` is never exceeded. No options.

Algorithm
---------
A dependency is already guaranteed when the producer is earlier in the same
core's queue, or happens-before the consumer through events placed so far
(producers are visited latest first so one event covers its predecessors).

Slot reuse: a slot last used by waiter w0 (with producers S0) can serve a new
waiter w with producers S only when w0 has completed before every s in S
starts, or is that s (so no signal for w0 is still pending when S signal), and
w0 has completed before w starts (so w cannot take a signal meant for w0).
Hence in program order a slot's signals and waits form epochs: the signals
after one waiter belong to the next waiter. When no slot is free, the task is
moved onto a producer's core (queue order then covers that producer and frees
slots). If that fails too, the allocation starts over with the highest core's
tasks folded onto the others (queues merged in program order, which every
dependency already respects); on one core no event is needed, so allocation
always succeeds and `event_slots` is never exceeded.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from lowering.errors import CompileError
from lowering.task.taskgraph import dependencies, tasks_of
from npu_dialects.arch import arch_of
from npu_dialects.graph import int_array
from npu_dialects.task import TaskOp


def fold_highest_core(func: FuncOp) -> None:
    """Move the tasks of the highest core in use onto the others (round robin)."""
    tasks = [op for op in func.body.block.ops if isinstance(op, TaskOp)]
    cores = sorted({t.core_id for t in tasks})
    assert len(cores) > 1, "one core needs no events"
    k = 0
    for t in tasks:
        if t.core_id == cores[-1]:
            t.core = IntegerAttr(cores[k % (len(cores) - 1)], i64)
            k += 1


@dataclass(frozen=True)
class Events(ModulePass):
    """Allocate event slots for cross-core dependencies (slots reused when provably free)."""

    name = "npu-events"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)
        for func in op.ops:
            if isinstance(func, FuncOp):
                for t in func.body.block.ops:
                    if isinstance(t, TaskOp) and t.core_id >= arch.cores:
                        raise CompileError(self.name, f"task '{t.kernel.data}' is on core {t.core_id} but the "
                                                      f"arch has cores={arch.cores}", t)
                while not self.allocate(func, arch.event_slots):
                    fold_highest_core(func)

    def allocate(self, func: FuncOp, n_slots: int) -> bool:
        """Set every task's waits and signals; False when the slots run out."""
        tasks = tasks_of(func)
        deps = dependencies(tasks)
        hb: list[int] = []
        last_on_core: dict[int, int] = {}  # core -> last task placed on it so far
        last_waiter: dict[int, int] = {}  # slot -> the task that last waited on it
        waits: dict[int, list[int]] = {t.index: [] for t in tasks}
        signals: dict[int, list[int]] = {t.index: [] for t in tasks}
        for t in tasks:
            plan = self.plan_waits(t, deps[t.index], hb, last_on_core, last_waiter, n_slots)
            if plan is None:
                # out of slots: run the task on a producer's core instead, where queue order
                # covers that producer and more slots become provably free (latest producer first)
                for core in dict.fromkeys(tasks[s].core for s in sorted(deps[t.index], reverse=True)):
                    t.op.core = IntegerAttr(core, i64)
                    plan = self.plan_waits(t, deps[t.index], hb, last_on_core, last_waiter, n_slots)
                    if plan is not None:
                        break
            if plan is None:
                return False
            m, slot, producers = plan
            if producers:
                last_waiter[slot] = t.index
                for s in producers:
                    signals[s].append(slot)
                    waits[t.index].append(slot)
            hb.append(m)
            last_on_core[t.core] = t.index
        for t in tasks:
            t.op.waits, t.op.signals = int_array(waits[t.index]), int_array(signals[t.index])
        return True

    def plan_waits(self, t, deps: list[int], hb: list[int], last_on_core: dict[int, int],
                   last_waiter: dict[int, int], n_slots: int) -> tuple[int, int, list[int]] | None:
        """(happens-before set of t, slot, producers needing an event) for t on its current
        core, or None when no slot is free."""
        q = last_on_core.get(t.core)
        hbq = (hb[q] | (1 << q)) if q is not None else 0
        m = hbq
        producers = []
        for s in sorted(deps, reverse=True):
            if m >> s & 1:
                continue
            producers.append(s)
            m |= hb[s] | (1 << s)
        if not producers:
            return m, -1, []
        slot = self.free_slot(last_waiter, n_slots, producers, hb, hbq)
        return None if slot is None else (m, slot, producers)

    @staticmethod
    def free_slot(last_waiter: dict[int, int], n_slots: int, producers: list[int],
                  hb: list[int], hbq_w: int) -> int | None:
        """Lowest slot that is unused, or whose last waiter is provably done with it."""
        for slot in range(n_slots):
            w0 = last_waiter.get(slot)
            if w0 is None:
                return slot
            before_signals = all(w0 == s or hb[s] >> w0 & 1 for s in producers)
            if before_signals and hbq_w >> w0 & 1:
                return slot
        return None

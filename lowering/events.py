"""`npu-events`: cross-core synchronisation with reusable event slots.

Assumes scheduled tasks (`npu-schedule`). Dependencies come from the DRAM
buffers tasks read and write (`lowering/taskgraph.py`). A dependency needs no
event when it is already guaranteed: the producer is earlier in the same core's
queue, or happens-before the consumer through events placed so far (producers
are visited latest first so one event covers its predecessors). Otherwise the
producer signals a slot the consumer waits on.

Slot reuse: a slot whose last event was (s0 -> w0) can carry a new event
(s -> w) only when w0 has completed before s starts or is s itself (so s0's
signal is gone before s signals) and w0 has completed before w starts (so w
cannot consume s0's signal). With these rules the k-th signal of a slot is
consumed by its k-th wait, in program order, and no slot ever holds two
signals. Running out of `event_slots` is a diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from npu_dialects.arch import arch_of
from npu_dialects.graph import int_array
from lowering.errors import CompileError
from lowering.taskgraph import dependencies, queue_predecessor, tasks_of


@dataclass(frozen=True)
class Events(ModulePass):
    """Allocate event slots for cross-core dependencies (slots reused when provably free)."""

    name = "npu-events"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)
        for func in op.ops:
            if isinstance(func, FuncOp):
                self.allocate(func, arch.event_slots)

    def allocate(self, func: FuncOp, n_slots: int) -> None:
        tasks = tasks_of(func)
        deps = dependencies(tasks)
        qp = queue_predecessor(tasks)
        hb: list[int] = []
        last_use: dict[int, tuple[int, int]] = {}  # slot -> (signaller, waiter)
        waits: dict[int, list[int]] = {t.index: [] for t in tasks}
        signals: dict[int, list[int]] = {t.index: [] for t in tasks}
        for t in tasks:
            q = qp[t.index]
            hbq = (hb[q] | (1 << q)) if q is not None else 0
            m = hbq
            for s in sorted(deps[t.index], reverse=True):
                if m >> s & 1:
                    continue
                slot = self.free_slot(last_use, n_slots, s, t.index, hb, hbq)
                if slot is None:
                    raise CompileError(self.name, f"more than event_slots={n_slots} cross-core events "
                                                  f"would be live at task '{t.op.kernel.data}'", t.op)
                last_use[slot] = (s, t.index)
                signals[s].append(slot)
                waits[t.index].append(slot)
                m |= hb[s] | (1 << s)
            hb.append(m)
        for t in tasks:
            for key, vals in (("waits", waits[t.index]), ("signals", signals[t.index])):
                if vals:
                    t.op.attributes[key] = int_array(vals)
                elif key in t.op.attributes:
                    del t.op.attributes[key]

    @staticmethod
    def free_slot(last_use: dict[int, tuple[int, int]], n_slots: int, s: int, w: int,
                  hb: list[int], hbq_w: int) -> int | None:
        for slot in range(n_slots):
            if slot not in last_use:
                return slot
            _, w0 = last_use[slot]
            if w0 == w:
                continue
            done_before_s = w0 == s or (hb[s] >> w0 & 1)
            if done_before_s and (hbq_w >> w0 & 1):
                return slot
        return None

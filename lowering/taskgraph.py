"""The task graph of a task-level function, read off the IR: which DRAM buffers
each task reads and writes, the dependencies between tasks, and the
happens-before relation that queue order and events guarantee.

Happens-before sets are Python ints used as bitsets over task indices
(program order). `a` happens before `b` when `a` has completed before `b`
starts: `a` is earlier in `b`'s core queue, or reaches `b` through events.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue

from npu_dialects.dma import CopyOp, memory_space
from npu_dialects.task import TaskOp, ViewOp


def root(v: SSAValue) -> SSAValue:
    """The buffer a (possibly viewed) DRAM value aliases."""
    while isinstance(v.owner, ViewOp):
        v = v.owner.source
    return v


@dataclass
class TaskInfo:
    op: TaskOp
    index: int
    reads: set[SSAValue] = field(default_factory=set)
    writes: set[SSAValue] = field(default_factory=set)

    @property
    def core(self) -> int:
        return self.op.core_id

    @property
    def touches(self) -> set[SSAValue]:
        return self.reads | self.writes


def tasks_of(func: FuncOp) -> list[TaskInfo]:
    """Tasks in program order with the DRAM buffers (roots) their DMAs read and write."""
    out: list[TaskInfo] = []
    for op in func.body.block.ops:
        if not isinstance(op, TaskOp):
            continue
        info = TaskInfo(op, len(out))
        for inner in op.walk():
            if isinstance(inner, CopyOp):
                if memory_space(inner.src.type) == "dram":
                    info.reads.add(root(inner.src))
                if memory_space(inner.dst.type) == "dram":
                    info.writes.add(root(inner.dst))
        out.append(info)
    return out


def dependencies(tasks: list[TaskInfo]) -> list[list[int]]:
    """For each task, the earlier tasks it must follow (RAW, WAR and WAW on a buffer)."""
    last_writer: dict[SSAValue, list[int]] = defaultdict(list)
    readers: dict[SSAValue, list[int]] = defaultdict(list)
    deps: list[list[int]] = []
    for t in tasks:
        d: set[int] = set()
        for b in t.reads:
            d.update(last_writer[b])
        for b in t.writes:
            d.update(last_writer[b])
            d.update(readers[b])
        # parts of one split kernel touch disjoint tiles and never wait on each other
        deps.append(sorted(i for i in d if tasks[i].op.kernel != t.op.kernel))
        for b in t.reads:
            readers[b].append(t.index)
        for b in t.writes:
            if readers[b]:
                last_writer[b] = []
                readers[b] = []
            last_writer[b].append(t.index)
    return deps


def queue_predecessor(tasks: list[TaskInfo]) -> list[int | None]:
    last: dict[int, int] = {}
    out: list[int | None] = []
    for t in tasks:
        out.append(last.get(t.core))
        last[t.core] = t.index
    return out


def event_edges(tasks: list[TaskInfo]) -> list[tuple[int, int, int]]:
    """(signaller, waiter, slot) triples. In program order a slot's signals belong to
    the next task that waits on it (the epoch invariant `npu-events` maintains); a
    task takes its waits before it gives its signals."""
    pending: dict[int, list[int]] = defaultdict(list)
    edges = []
    for t in tasks:
        for slot in dict.fromkeys(t.op.wait_slots):
            edges.extend((s, t.index, slot) for s in pending.pop(slot, []))
        for slot in t.op.signal_slots:
            pending[slot].append(t.index)
    return edges


def happens_before(tasks: list[TaskInfo]) -> list[int]:
    """Bitset per task of the tasks guaranteed complete before it starts."""
    preds: dict[int, list[int]] = defaultdict(list)
    for s, w, _ in event_edges(tasks):
        preds[w].append(s)
    qp = queue_predecessor(tasks)
    hb: list[int] = []
    for t in tasks:
        m = 0
        srcs = list(preds[t.index]) + ([qp[t.index]] if qp[t.index] is not None else [])
        for s in srcs:
            if s < t.index:
                m |= hb[s] | (1 << s)
        hb.append(m)
    return hb

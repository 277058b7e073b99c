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

from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, SSAValue

from npu_dialects.dma import CopyOp, memory_space
from npu_dialects.task import AllocOp, TaskOp, ViewOp, span


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
    writes: set[SSAValue] = field(default_factory=set)  # (with the in-place candidates' `reuse` buffers)
    spans: list[tuple[SSAValue, int, int, bool]] = field(default_factory=list)  # (root, lo, hi, write)
    dma_writes: set[SSAValue] = field(default_factory=set)  # what its DMAs really write

    @property
    def core(self) -> int:
        return self.op.core_id

    @property
    def touches(self) -> set[SSAValue]:
        return self.reads | self.writes


assert [name for name, _ in CopyOp.get_irdl_definition().operands[:2]] == ["src", "dst"]  # (`copy_ends`)


def task_ops(module: ModuleOp) -> list[TaskOp]:
    """The tasks of every function of `module` (they sit at the top of a function's body:
    no walk through their bodies)."""
    return [t for f in module.ops if isinstance(f, FuncOp) for t in f.body.block.ops if isinstance(t, TaskOp)]


def copy_ends(copy: CopyOp) -> tuple[SSAValue, SSAValue]:
    """(source, destination) of `copy`: its first two operands, as `CopyOp` defines them
    before its variadic offsets (xDSL's named accessors decode the operand segment
    sizes on every read, some 10 us a read)."""
    operands = copy.operands
    return operands[0], operands[1]


def copies_in(block: Block) -> list[CopyOp]:
    """The copies in `block` and the blocks nested in it, in walk order (looking inside
    only ops with regions: faster than `walk`, which yields every op)."""
    out: list[CopyOp] = []
    for op in block.ops:
        if isinstance(op, CopyOp):
            out.append(op)
        elif op.regions:
            for region in op.regions:
                for b in region.blocks:
                    out += copies_in(b)
    return out


def tasks_of(func: FuncOp) -> list[TaskInfo]:
    """Tasks in program order with the DRAM buffers (roots) their DMAs read and write."""
    out: list[TaskInfo] = []
    for op in func.body.block.ops:
        if not isinstance(op, TaskOp):
            continue
        info = TaskInfo(op, len(out))
        seen = set()
        for inner in (c for region in op.regions for block in region.blocks for c in copies_in(block)):
            src, dst = copy_ends(inner)
            for v, write in ((src, False), (dst, True)):
                dram = isinstance(v.type, MemRefType) and memory_space(v.type) == "dram"  # (always a memref)
                if dram and (v, write) not in seen:
                    seen.add((v, write))
                    r, lo, hi = span(v)
                    (info.writes if write else info.reads).add(r)
                    info.spans.append((r, lo, hi, write))
        info.dma_writes = set(info.writes)
        for r in list(info.writes):
            # an in-place candidate (`npu_task.alloc reuse(%b)`) is ordered as if it wrote
            # %b: every earlier task touching %b then precedes it, so npu-memplan can give
            # both the same bytes
            if isinstance(r.owner, AllocOp) and r.owner.reuse is not None:
                b = r.owner.reuse
                info.writes.add(b)
                info.spans.append((*span(b), True))  # (an alloc: its whole buffer)
        out.append(info)
    return out


def dependencies(tasks: list[TaskInfo]) -> list[list[int]]:
    """For each task, the earlier tasks it must follow: RAW, WAR and WAW on overlapping
    bytes of a buffer (views of one buffer that do not overlap, like the slices of a
    concat written in place, do not order their tasks). An access covered by a later
    write of another kernel is forgotten: whatever conflicts with it conflicts with
    that write, which follows it."""
    seen: dict[SSAValue, list[tuple[int, int, int, bool]]] = defaultdict(list)
    deps: list[list[int]] = []
    covering: list[tuple[SSAValue, int, int]] = []  # writes of the current kernel's parts
    for n, t in enumerate(tasks):
        if n and tasks[n - 1].op.kernel != t.op.kernel:
            # the previous kernel's parts are all placed: what their writes cover is forgotten
            # (parts run concurrently, so one part's write does not order the next part)
            kernel = tasks[n - 1].op.kernel
            for r, lo, hi in covering:
                seen[r] = [a for a in seen[r] if not (lo <= a[1] and a[2] <= hi) or tasks[a[0]].op.kernel == kernel]
            covering = []
        d: set[int] = set()
        for r, lo, hi, write in t.spans:
            for i, plo, phi, pwrite in seen[r]:
                if (write or pwrite) and plo < hi and lo < phi:
                    d.add(i)
        # parts of one split kernel touch disjoint tiles and never wait on each other
        deps.append(sorted(i for i in d if tasks[i].op.kernel != t.op.kernel))
        for r, lo, hi, write in t.spans:
            if write:
                covering.append((r, lo, hi))
            seen[r].append((t.index, lo, hi, write))
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
        q = qp[t.index]
        srcs = list(preds[t.index]) + ([q] if q is not None else [])
        for s in srcs:
            if s < t.index:
                m |= hb[s] | (1 << s)
        hb.append(m)
    return hb

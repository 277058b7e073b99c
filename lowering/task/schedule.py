"""`npu-schedule`: split kernels across cores and place every task on a core.

Assumes the task-level form of `npu-bufferize` (one task per kernel, range
[0, P) over its parallel tiles, `predicted_cycles` from the cost model).

Each task is split into the number of parts `npu-tile` recorded (`parts`),
capped by the cores available and the tiles, or fewer where cores are busy; parts get contiguous, balanced
sub-ranges and are list-scheduled onto cores by predicted times. After placement
each part's `predicted_cycles` is stretched for the DRAM bandwidth it shares with
the parts that overlap it.

Options: `max-cores` (0 = all cores of the arch) limits the cores used.

Algorithm
---------
`parts` is the cost model's choice (`lowering/tile/costmodel.py:best_parts`, which
splits only where the gain beats the sync cost and the bandwidth the parts share).
Placement is list scheduling on predicted times: each part goes to the core where
it can start earliest, given its dependencies' predicted finish times (plus
sync_latency across cores) and the core's queue. A kernel split in k parts whose
k-th earliest core is still busy (a concurrent branch holds it) runs on fewer cores
when its span there (`part_cycles`, the cost model's span on 1..k cores) ends
sooner than waiting for that core (`parts_on`).

Contention: parts placed on different cores at overlapping times share
`dram_bw`. After placement each part's `predicted_cycles` is stretched to the
larger of two estimates. Bytes: the time the DRAM needs to carry its own bytes
plus the bytes of the parts that overlap it in the placement (each spread evenly
over its own span), plus one `dma_latency`. Fair share (`share_dram`): a fluid replay in
which each part first wants the loads leading its body at their own rate (a layer
group's inputs and weights arrive in a burst before it computes), then the rest of
its bytes over the rest of its time; the parts running at once split `dram_bw`
max-min fairly, and a part given less than it wants slows in proportion. The first
misses a neighbour that slows down too (its bytes then stay in flight past its time
alone) and a burst that collides with a neighbour's; the second misses neighbours
that take an equal share per DMA in flight (the simulator's rule) whatever they
want on average. The placement itself uses the unstretched predictions;
`bench/calibration.py` measures the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, prod

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp
from xdsl.passes import ModulePass

from lowering.errors import CompileError
from lowering.task.prefetch import prologue
from lowering.task.taskgraph import copy_ends, dependencies, tasks_of
from lowering.tile.costmodel import load_cycles
from npu_dialects.arch import Arch, arch_of
from npu_dialects.dma import CopyOp, memory_space
from npu_dialects.dtypes import elem_bytes
from npu_dialects.graph import int_array, ints
from npu_dialects.task import TaskOp


def split_range(lo: int, hi: int, k: int) -> list[tuple[int, int]]:
    n = hi - lo
    bounds = [lo + n * i // k for i in range(k + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


@dataclass(frozen=True)
class Schedule(ModulePass):
    """Split kernels across cores where it pays, and list-schedule tasks onto cores."""

    name = "npu-schedule"
    max_cores: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)
        if self.max_cores < 0:
            raise CompileError(self.name, f"max-cores must be >= 0, got {self.max_cores}")
        cores = min(arch.cores, self.max_cores) if self.max_cores else arch.cores
        for func in op.ops:
            if isinstance(func, FuncOp):
                self.schedule(func, arch, cores)

    def schedule(self, func: FuncOp, arch: Arch, cores: int) -> None:
        tasks = tasks_of(func)
        deps = dependencies(tasks)
        finish: dict[int, list[tuple[int, int]]] = {}  # original task -> [(core, finish)]
        core_free = [0] * cores
        timeline: list[Part] = []
        for t, d in zip(tasks, deps):
            task = t.op
            lo, hi = task.bounds
            starts = [max([core_free[c], *(pf + (arch.sync_latency if pc != c else 0)
                                           for p in d for pc, pf in finish[p])]) for c in range(cores)]
            k, span = parts_on(task, starts, cores)
            parts = split_range(lo, hi, k)
            by_start = sorted(range(cores), key=lambda c: (starts[c], c))[:len(parts)]
            head = head_load(task, arch, k)
            placed: list[tuple[int, int]] = []
            for (plo, phi), c in zip(parts, by_start):
                # parts run concurrently: each is predicted to take the kernel's span
                part_cycles = span if k > 1 else ceil(span * (phi - plo) / max(1, hi - lo))
                start = starts[c]
                core_free[c] = start + part_cycles
                placed.append((c, start + part_cycles))
                new = task.clone() if (plo, phi) != parts[-1] else task
                new.core = IntegerAttr(c, i64)
                new.range = int_array((plo, phi))
                new.predicted_cycles = IntegerAttr(part_cycles, i64)
                if task.dram_bytes is not None:
                    nbytes = task.dram_bytes.value.data
                    new.dram_bytes = IntegerAttr(nbytes * (phi - plo) // max(1, hi - lo), i64)
                if new is not task:
                    func.body.block.insert_op_before(new, task)
                nbytes = new.dram_bytes.value.data if new.dram_bytes is not None else 0
                timeline.append(Part(new, t.index, c, part_cycles, nbytes, start, head=head))
            finish[t.index] = placed
        stretch_for_contention(timeline, deps, arch)


def parts_on(task: TaskOp, starts: list[int], cores: int) -> tuple[int, int]:
    """(parts, predicted span) of `task` given the time each core could start it: its
    `parts` (capped by the cores and its tiles), or fewer where that finishes sooner
    (the k earliest cores, then the span on k cores from `part_cycles`): a kernel split
    over all cores would otherwise wait for one still busy with a concurrent branch."""
    lo, hi = task.bounds
    cycles = task.predicted_cycles.value.data if task.predicted_cycles else 0
    hint = task.parts.value.data if task.parts else 1
    k = max(1, min(hint, cores, hi - lo))
    spans = ints(task.part_cycles, ())
    if len(spans) < k:
        return k, cycles
    order = sorted(starts)
    best = (order[k - 1] + spans[k - 1], k, spans[k - 1])  # (capped by max-cores: the span on k)
    for j in range(k - 1, 0, -1):
        if order[j - 1] + spans[j - 1] < best[0]:
            best = (order[j - 1] + spans[j - 1], j, spans[j - 1])
    return best[1], best[2]


@dataclass(eq=False)
class Part:
    """One placed task: its predicted cycles alone (`base`), DRAM bytes and start."""

    op: TaskOp
    task: int  # index of the original task (its dependencies)
    core: int
    base: int
    nbytes: int
    start: float
    cycles: float = 0.0
    head: tuple[float, int] = (0.0, 0)  # (cycles alone, bytes) of the loads leading its body

    @property
    def end(self) -> float:
        return self.start + self.cycles


def stretch_for_contention(parts: list[Part], deps: list[list[int]], arch: Arch) -> None:
    """Set each part's `predicted_cycles` to its time with the DRAM bandwidth shared with
    the parts overlapping it: the larger of the bytes estimate and the fair-share
    estimate (`share_dram`), see the module docstring."""
    for p in parts:
        p.cycles = float(p.base)
    if arch.cores == 1 or len({p.core for p in parts}) < 2:
        return
    placed = [p.start for p in parts]
    share_dram(parts, deps, arch)
    fair = [p.cycles for p in parts]
    for p, start in zip(parts, placed):
        p.start, p.cycles = start, float(p.base)
    by_start = sorted(parts, key=lambda p: p.start)
    for p, f in zip(parts, fair):
        other = 0.0
        for q in by_start:
            if q.start >= p.end:
                break
            if q is not p and q.core != p.core and q.end > p.start and q.cycles > 0:
                other += q.nbytes * (min(p.end, q.end) - max(p.start, q.start)) / q.cycles
        need = (p.nbytes + other) / arch.dram_bw + arch.dma_latency if other > 0 else 0.0
        p.op.predicted_cycles = IntegerAttr(ceil(max(float(p.base), need, f)), i64)


def share_dram(parts: list[Part], deps: list[list[int]], arch: Arch) -> None:
    """Replay the placement as a fluid model of the DRAM: each part runs as phases that,
    alone, move their bytes at a demand rate (`_phases`: the loads leading its body at
    their own rate, then the rest of its bytes over the rest of its time); the phases
    running at once on different cores share `dram_bw` max-min fairly (water-filling: one
    wanting less than an equal share keeps its demand, the rest split what remains), and
    a phase given less than its demand progresses at that fraction of its speed. Sets
    every part's start and cycles."""
    bw = float(arch.dram_bw)
    queues: dict[int, list[Part]] = {}
    for p in parts:
        queues.setdefault(p.core, []).append(p)
    ends: dict[int, list[Part]] = {}  # original task -> its finished parts
    phases = {id(p): _phases(p, bw) for p in parts}
    left = {id(p): phases[id(p)][0][0] for p in parts}
    need = {id(p): phases[id(p)][0][1] for p in parts}
    count: dict[int, int] = {}
    for p in parts:
        count[p.task] = count.get(p.task, 0) + 1
    free = {c: 0.0 for c in queues}
    running: list[Part] = []
    now = 0.0
    while True:
        ready: list[tuple[float, Part]] = []
        for c, q in queues.items():
            if q and not any(r.core == c for r in running):
                p = q[0]
                if all(len(ends.get(d, ())) == count.get(d, 0) for d in deps[p.task]):
                    t = max([free[c], *(e.end + (arch.sync_latency if e.core != c else 0)
                                        for d in deps[p.task] for e in ends.get(d, ()))])
                    ready.append((t, p))
        if not running and not ready:
            break
        rates = _water_fill([need[id(p)] for p in running], bw)
        speed = [r / need[id(p)] if need[id(p)] > 0 else 1.0 for p, r in zip(running, rates)]
        t_next = min([now + left[id(p)] / s for p, s in zip(running, speed)] + [t for t, _ in ready])
        for p, s in zip(running, speed):
            left[id(p)] -= (t_next - now) * s
        now = t_next
        for p in [p for p in running if left[id(p)] <= 1e-6 and len(phases[id(p)]) > 1]:
            phases[id(p)].pop(0)
            left[id(p)], need[id(p)] = phases[id(p)][0]
        for p in [p for p in running if left[id(p)] <= 1e-6]:
            running.remove(p)
            p.cycles = now - p.start
            free[p.core] = now
            ends.setdefault(p.task, []).append(p)
        for t, p in ready:
            if t <= now:  # (a part of no time ends at the next step, which is now)
                queues[p.core].pop(0)
                p.start = now
                running.append(p)


def _phases(p: Part, bw: float) -> list[tuple[float, float]]:
    """(work in cycles alone, DRAM demand in B/cycle) of each phase of `p`: the loads
    leading its body, then the rest of its time (or its whole time at its average rate)."""
    t, b = p.head
    if p.base <= 0 or not 0 < t < p.base:
        return [(float(p.base), min(bw, p.nbytes / p.base) if p.base > 0 else 0.0)]
    rest = max(0, p.nbytes - b)
    return [(t, min(bw, b / t)), (p.base - t, min(bw, rest / (p.base - t)))]


def head_load(task: TaskOp, arch: Arch, parts: int) -> tuple[float, int]:
    """(cycles, bytes) of the loads into SRAM leading `task`'s body, issued together
    on the core's channels (`load_cycles`), with `dram_bw` shared by the kernel's `parts`."""
    sizes = tuple(prod(o.window) * elem_bytes(copy_ends(o)[0]) for o in prologue(task.body.block.ops)
                  if isinstance(o, CopyOp) and memory_space(copy_ends(o)[0].type) == "dram")
    return float(load_cycles(sizes, arch, max(1, arch.dram_bw // parts))), sum(sizes)


def _water_fill(demands: list[float], bw: float) -> list[float]:
    """Max-min fair shares of `bw` for `demands` (each gets at most its demand)."""
    out = [0.0] * len(demands)
    budget, todo = bw, sorted(range(len(demands)), key=lambda i: demands[i])
    for n, i in enumerate(todo):
        out[i] = min(demands[i], budget / (len(todo) - n))
        budget -= out[i]
    return out

"""Discrete-event timing model of the NPU (see `sim/__init__.py` for the model).

The engine drives one generator per running task (`sim.interp`), advancing a
global clock from event to event: compute ops finishing, DMA latency phases
ending, DMA transfers finishing (DRAM bandwidth is processor-shared by every
transfer in flight), and event signals becoming visible. It also checks data
races between tasks on DRAM (vector clocks + per-element shadow memory) and
flags in-task SRAM hazards (an op touching bytes an in-flight DMA still owns)
as warnings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npu_dialects.arch import Arch
from sim.errors import SimError
from sim.interp import REQ_COMPUTE, REQ_DMA, OpInfo, TaskProgram
from sim.memory import DRAM, Buf, CopyPlan, fmt_slices
from sim.program import Program
from sim.sanitizer import Sanitizer
from sim.trace import Trace

START, RUN, BUSY, WAITDMA, WAITCHAN, DRAIN, DONE = range(7)
_STATE_NAMES = ["waiting for its events", "running", "computing", "waiting for a DMA",
                "waiting for a free DMA channel", "draining its DMAs", "done"]
LAT, XFER, FIXED = range(3)
EPS = 1e-6  # bytes
MAX_WARNINGS = 50


@dataclass
class TaskRecord:
    """What one task did: when (cycles) and how much DRAM traffic its DMAs caused."""

    index: int
    kernel: str
    core: int
    range: tuple[int, ...]
    nodes: list[str]
    predicted_cycles: int | None
    ready: float = 0.0  # the core reached the task (began waiting for its events)
    start: float = 0.0  # its events were consumed and its body began
    end: float = 0.0  # its DMAs drained and it signalled
    dram_bytes_read: int = 0
    dram_bytes_written: int = 0
    dmas: int = 0
    compute_cycles: dict[str, int] = field(default_factory=lambda: {"cube": 0, "vector": 0})

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "kernel": self.kernel, "core": self.core, "range": list(self.range),
                "onnx_nodes": list(self.nodes), "predicted_cycles": self.predicted_cycles, "ready": self.ready, "start": self.start, "end": self.end,
                "dram_bytes_read": self.dram_bytes_read, "dram_bytes_written": self.dram_bytes_written,
                "dmas": self.dmas, "compute_cycles": dict(self.compute_cycles)}


class Dma:
    """One DMA in flight; it is also the token `npu_dma.copy` returns."""

    __slots__ = ("core", "chan", "task", "plan", "issue", "lat_end", "phase", "rem", "end", "done",
                 "shared", "seq")

    def __init__(self, core: int, chan: int, task: TaskProgram, plan: CopyPlan, issue: float,
                 lat: int, seq: int):
        self.core = core
        self.chan = chan
        self.task = task
        self.plan = plan
        self.issue = issue
        self.lat_end = issue + lat
        self.phase = LAT
        self.rem = float(plan.nbytes)
        self.end = 0.0
        self.done = False
        self.shared = plan.src.region.space == DRAM or plan.dst.region.space == DRAM
        self.seq = seq


class Signal:
    __slots__ = ("visible_at", "vc", "task", "time")

    def __init__(self, visible_at: float, vc: tuple[int, ...], task: TaskProgram, time: float):
        self.visible_at = visible_at
        self.vc = vc
        self.task = task
        self.time = time


class Core:
    __slots__ = ("id", "queue", "qi", "state", "gen", "task", "val", "pending", "wait_tok", "busy_until",
                 "waits_left", "chans", "inflight", "vc", "rec")

    def __init__(self, cid: int, queue: list[TaskProgram], channels: int, cores: int):
        self.id = cid
        self.queue = queue
        self.qi = 0
        self.state = START
        self.gen: Any = None
        self.task: TaskProgram | None = None
        self.val: Any = None
        self.pending: CopyPlan | None = None
        self.wait_tok: Dma | None = None
        self.busy_until = 0.0
        self.waits_left: list[int] = []
        self.chans: list[Dma | None] = [None] * channels
        self.inflight = 0
        self.vc = [0] * cores
        self.rec: TaskRecord | None = None


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


class Engine:
    """Runs a loaded `Program` once; see `run()`."""

    def __init__(self, prog: Program, trace: bool, check_races: bool, sanitize: bool = False):
        arch: Arch = prog.arch
        self.prog = prog
        self.arch = arch
        self.bw = float(arch.dram_bw)
        self.now = 0.0
        queues: list[list[TaskProgram]] = [[] for _ in range(arch.cores)]
        for t in prog.tasks:
            queues[t.core].append(t)
        self.cores = [Core(c, queues[c], arch.dma_channels, arch.cores) for c in range(arch.cores)]
        self.inflight: list[Dma] = []
        self.shared: list[Dma] = []
        self.slots: dict[int, list[Signal]] = {}  # counting semaphores: pending signals per slot
        self.records: list[TaskRecord | None] = [None] * len(prog.tasks)
        self.task_vc: list[tuple[int, ...] | None] = [None] * len(prog.tasks)
        self.san = Sanitizer(self, prog.values, sanitize, check_races)
        for b in prog.host_written + prog.inputs:
            self.san.host_write(b)
        self.trace = Trace(arch.cores, arch.dma_channels, arch.freq, trace)
        self.busy = {"cube": [0] * arch.cores, "vector": [0] * arch.cores, "dma": [0.0] * arch.cores}
        self.dram_busy = 0.0
        self.dram_read = 0
        self.dram_written = 0
        self.dram_moved = 0
        self.warnings: list[str] = list(prog.warnings)
        self._warned: set = set()
        self._dma_seq = 0

    # ------------------------------------------------------------------ main loop
    def run(self) -> None:
        """Simulate until every core has run its queue (raises SimError)."""
        cores = self.cores
        with np.errstate(all="ignore"):
            while True:
                progressed = True
                while progressed:
                    progressed = False
                    for c in cores:
                        if c.state != DONE and self.step(c):
                            progressed = True
                if all(c.state == DONE for c in cores):
                    break
                t = self.next_time()
                if t is None:
                    raise self.deadlock()
                self.advance(t)
        self.san.finish(self.prog.outputs)
        for s, sigs in sorted(self.slots.items()):
            for sig in sigs:
                self.warnings.append(f"event slot {s} signalled by {sig.task.where} at cycle {sig.time:g} "
                                     "is never waited on")

    def step(self, c: Core) -> bool:
        """Advance core `c` at the current time as far as it can go; True if it moved."""
        moved = False
        while True:
            st = c.state
            if st == RUN:
                self.resume(c)
                moved = True
            elif st == BUSY:
                if self.now < c.busy_until:
                    return moved
                c.state = RUN
                moved = True
            elif st == WAITDMA:
                assert c.wait_tok is not None
                if not c.wait_tok.done:
                    return moved
                c.wait_tok = None
                c.state = RUN
                moved = True
            elif st == WAITCHAN:
                ch = self.free_channel(c)
                if ch < 0:
                    return moved
                assert c.pending is not None
                c.val = self.issue(c, ch, c.pending)
                c.pending = None
                c.state = RUN
                moved = True
            elif st == START:
                if not self.begin(c):
                    return moved
                moved = True
            elif st == DRAIN:
                if c.inflight:
                    return moved
                self.finish(c)
                moved = True
            else:
                return moved

    def resume(self, c: Core) -> None:
        """Run the task of `c` to its next request and act on it: compute, issue a DMA
        (or wait for a free channel), wait for a DMA; DRAIN once the body has ended."""
        try:
            req = c.gen.send(c.val)
        except StopIteration:
            c.state = DRAIN
            return
        c.val = None
        kind = req[0]
        if kind == REQ_COMPUTE:
            self.compute(c, req[1], req[2])
        elif kind == REQ_DMA:
            ch = self.free_channel(c)
            if ch < 0:
                c.pending = req[1]
                c.state = WAITCHAN
            else:
                c.val = self.issue(c, ch, req[1])
        else:
            tok = req[1]
            if not tok.done:
                c.wait_tok = tok
                c.state = WAITDMA

    def next_time(self) -> float | None:
        now = self.now
        t = float("inf")
        for c in self.cores:
            if c.state == BUSY and c.busy_until < t:
                t = c.busy_until
        for d in self.inflight:
            if d.phase == LAT:
                if d.lat_end < t:
                    t = d.lat_end
            elif d.phase == FIXED and d.end < t:
                t = d.end
        if self.shared:
            m = min(d.rem for d in self.shared)
            tx = now + m * len(self.shared) / self.bw
            if tx <= now:  # below float resolution: finish them now
                for d in self.shared:
                    if d.rem <= m:
                        d.rem = 0.0
                tx = now
            if tx < t:
                t = tx
        for sigs in self.slots.values():
            for s in sigs:
                if now < s.visible_at < t:
                    t = s.visible_at
        return None if t == float("inf") else t

    def advance(self, t: float) -> None:
        dt = t - self.now
        if self.shared and dt > 0:
            dec = dt * self.bw / len(self.shared)
            for d in self.shared:
                d.rem -= dec
            self.dram_busy += dt
        self.now = t
        finished: list[Dma] = []
        for d in self.inflight:
            ph = d.phase
            if ph == XFER:
                if d.rem <= EPS:
                    finished.append(d)
            elif ph == LAT:
                if d.lat_end <= t:
                    if d.plan.nbytes == 0:
                        finished.append(d)
                    elif d.shared:
                        d.phase = XFER
                        self.shared.append(d)
                    else:  # SRAM -> SRAM: local, at full rate, no DRAM bandwidth
                        d.phase = FIXED
                        d.end = t + d.plan.nbytes / self.bw
            elif d.end <= t:
                finished.append(d)
        for d in finished:
            self.complete(d)
        if finished:
            self.inflight = [d for d in self.inflight if not d.done]
            self.shared = [d for d in self.shared if not d.done]

    # ------------------------------------------------------------------ tasks
    def begin(self, c: Core) -> bool:
        """Start (or keep trying to start) the next task of `c`: True once its body runs."""
        if c.task is None:
            if c.qi >= len(c.queue):
                c.state = DONE
                return True
            t = c.queue[c.qi]
            c.task = t
            c.waits_left = list(t.waits)
            c.rec = TaskRecord(t.index, t.kernel, t.core, t.range, t.nodes, t.predicted_cycles, ready=self.now)
            self.records[t.index] = c.rec
        now = self.now
        while c.waits_left:
            s = c.waits_left[0]
            sigs = self.slots.get(s, [])
            i = next((i for i, g in enumerate(sigs) if g.visible_at <= now), None)
            if i is None:
                return False
            sig = sigs.pop(i)
            if not sigs:
                del self.slots[s]
            c.vc = [max(a, b) for a, b in zip(c.vc, sig.vc)]
            c.waits_left.pop(0)
        t = c.task
        assert c.rec is not None
        c.rec.start = now
        self.task_vc[t.index] = tuple(c.vc)
        c.gen = t.start()
        c.val = None
        c.state = RUN
        return True

    def finish(self, c: Core) -> None:
        t = c.task
        rec = c.rec
        assert t is not None and rec is not None
        now = self.now
        rec.end = now
        c.vc[c.id] = t.seq + 1
        vc = tuple(c.vc)
        for s in t.signals:
            self.slots.setdefault(s, []).append(Signal(now + self.arch.sync_latency, vc, t, now))
        self.trace.span(self.trace.core_tid(c.id), t.kernel, "task", rec.start, now,
                        {"onnx_nodes": t.nodes, "task": t.index, "range": list(t.range), "waits": list(t.waits),
                         "signals": list(t.signals), "waited_cycles": rec.start - rec.ready,
                         "dram_bytes_read": rec.dram_bytes_read, "dram_bytes_written": rec.dram_bytes_written})
        c.task = None
        c.rec = None
        c.gen = None
        c.qi += 1
        c.state = START

    # ------------------------------------------------------------------ compute
    def compute(self, c: Core, info: OpInfo, bufs: list[Buf]) -> None:
        if c.inflight:
            self.compute_hazards(c, info, bufs)
        assert c.task is not None and info.execute is not None  # (a compute op of the running task)
        self.san.compute(info, bufs, c.task.index)
        try:
            info.execute([b.arr for b in bufs])
        except Exception as e:
            raise SimError(f"{info.where}: cannot execute: {type(e).__name__}: {e}",
                           "operands: " + ", ".join(f"{list(b.shape)} at {b.desc}" for b in bufs)) from None
        cyc = info.cycles
        rec = c.rec
        assert rec is not None
        rec.compute_cycles[info.unit] += cyc
        self.busy[info.unit][c.id] += cyc
        if cyc > 0:
            c.busy_until = self.now + cyc
            c.state = BUSY
            self.trace.span(self.trace.core_tid(c.id), info.label, info.unit, self.now, c.busy_until,
                            {"op": info.name, "cycles": cyc, "onnx_nodes": info.nodes})

    def compute_hazards(self, c: Core, info: OpInfo, bufs: list[Buf]) -> None:
        ranges = [(b.off, b.off + b.nbytes) for b in bufs]
        out = ranges[-1]
        for d in c.chans:
            if d is None:
                continue
            w, r = d.plan.sram_write, d.plan.sram_read
            if w is not None and any(_overlap(w, rng) for rng in ranges):
                self.hazard(c, info, d, "uses", w, "is still writing")
            if r is not None and _overlap(r, out):
                self.hazard(c, info, d, "overwrites", r, "is still reading")

    def hazard(self, c: Core, info: OpInfo, d: Dma, verb: str, rng: tuple[int, int], state: str) -> None:
        key = (c.task.index if c.task else -1, info.index, d.plan.info.index)
        if key in self._warned:
            return
        self._warned.add(key)
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(
                f"{info.where} {verb} SRAM bytes [{rng[0]}, {rng[1]}) of core {c.id} that the 'npu_dma.copy' "
                f"(op #{d.plan.info.index}) issued at cycle {d.issue:g} {state} (missing npu_dma.wait?)")

    # ------------------------------------------------------------------ DMA
    def free_channel(self, c: Core) -> int:
        for i, d in enumerate(c.chans):
            if d is None:
                return i
        return -1

    def issue(self, c: Core, ch: int, plan: CopyPlan) -> Dma:
        t = c.task
        assert t is not None
        w, r = plan.sram_write, plan.sram_read
        if c.inflight and (r is not None or w is not None):
            for d in c.chans:
                if d is None:
                    continue
                p = d.plan
                if w is not None and (_overlap(w, p.sram_write) or _overlap(w, p.sram_read)):
                    self.hazard(c, plan.info, d, "writes", w, "still owns")
                elif r is not None and _overlap(r, p.sram_write):
                    self.hazard(c, plan.info, d, "reads", r, "is still writing")
        self._dma_seq += 1
        d = Dma(c.id, ch, t, plan, self.now, self.arch.dma_latency, self._dma_seq)
        c.chans[ch] = d
        c.inflight += 1
        self.inflight.append(d)
        return d

    def complete(self, d: Dma) -> None:
        plan = d.plan
        c = self.cores[d.core]
        rec = c.rec
        assert rec is not None
        self.san.dma(d)
        plan.move()
        d.done = True
        d.end = self.now
        c.chans[d.chan] = None
        c.inflight -= 1
        r, w = plan.dram_read, plan.dram_write
        rec.dram_bytes_read += r
        rec.dram_bytes_written += w
        rec.dmas += 1
        self.dram_read += r
        self.dram_written += w
        if d.shared:
            self.dram_moved += plan.nbytes
        self.busy["dma"][d.core] += self.now - d.issue
        if self.trace.enabled:
            direction = f"{plan.src.region.space}->{plan.dst.region.space}"
            self.trace.span(self.trace.dma_tid(d.core, d.chan), f"dma {direction}", "dma", d.issue, self.now,
                            {"bytes": plan.nbytes, "src": plan.src.desc, "dst": plan.dst.desc,
                             "src_window": fmt_slices(plan.src_sl), "dst_window": fmt_slices(plan.dst_sl),
                             "latency_cycles": self.arch.dma_latency, "onnx_nodes": plan.info.nodes,
                             "task": d.task.kernel})

    def hb(self, w: int, t: int) -> bool:
        """Task `w` happens before task `t` (program order on a core or events)."""
        vc = self.task_vc[t]
        tw = self.prog.tasks[w]
        return vc is not None and vc[tw.core] > tw.seq

    # ------------------------------------------------------------------ deadlock
    def deadlock(self) -> SimError:
        now = self.now
        lines: list[str] = [f"cycle {now:g}:"]
        blocked: list[str] = []
        remaining_signals: dict[int, list[TaskProgram]] = {}
        for c in self.cores:
            for t in c.queue[c.qi + (1 if c.task is not None and c.state != START else 0):]:
                for s in t.signals:
                    remaining_signals.setdefault(s, []).append(t)
            if c.task is not None and c.state != START:
                for s in c.task.signals:
                    remaining_signals.setdefault(s, []).append(c.task)
        for c in self.cores:
            n = len(c.queue)
            if c.state == DONE:
                lines.append(f"  core {c.id}: done ({n} task{'s' if n != 1 else ''})")
                continue
            t = c.task
            assert t is not None
            pos = f"task {c.qi + 1} of {n} in its queue"
            if c.state == START:
                waits = c.waits_left
                lines.append(f"  core {c.id}: {t.where} ({pos}) waits on event slot(s) {waits}"
                             f" (all waits: {list(t.waits)})")
                for s in waits:
                    who = [x for x in remaining_signals.get(s, []) if x is not t]
                    if who:
                        lines.append(f"    slot {s}: would be signalled by "
                                     + ", ".join(f"task {x.label()}" for x in who))
                    else:
                        lines.append(f"    slot {s}: no remaining task signals it")
                blocked.append(f"core {c.id}: {t.where} waits on slot {waits[0]}")
            else:
                lines.append(f"  core {c.id}: {t.where} ({pos}) is {_STATE_NAMES[c.state]}")
                blocked.append(f"core {c.id}: {t.where} is {_STATE_NAMES[c.state]}")
        pend = [(s, g) for s, sigs in sorted(self.slots.items()) for g in sigs]
        if pend:
            lines.append("  pending (signalled, not consumed) slots: "
                         + ", ".join(f"{s} (by '{g.task.kernel}' at cycle {g.time:g})" for s, g in pend))
        else:
            lines.append("  pending (signalled, not consumed) slots: none")
        return SimError(f"deadlock at cycle {now:g}: no core can make progress ({'; '.join(blocked)})",
                        "\n".join(lines))



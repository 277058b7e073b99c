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

import math
from collections import deque
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

import numpy as np

from npu_dialects.arch import Arch
from npu_dialects.files import collector_paused
from sim.blas import one_blas_thread
from sim.errors import SimError
from sim.interp import (
    PASS,
    REQ_COMPUTE,
    REQ_DMA,
    REQ_EARLY,
    REQ_FENCE,
    REQ_GATE,
    REQ_HANDOFF,
    REQ_NONE,
    REQ_WAIT,
    STOP,
    OpInfo,
    TaskProgram,
    gather_fault,
    passes,
)
from sim.memory import Buf, CopyPlan, fmt_slices
from sim.program import Program
from sim.records import FIXED, STALL_KINDS, XFER, Dma, TaskRecord
from sim.sanitizer import Sanitizer
from sim.trace import Trace
from sim.values import Values

START, RUN, BUSY, WAITDMA, WAITCHAN, DRAIN, DONE, HUNG = range(8)
_STATE_NAMES = ["waiting for its events", "running", "computing", "waiting for a DMA",
                "waiting for a free DMA channel", "draining its DMAs", "done",
                "running and never finishing (an injected hang)"]
_STALL_NAMES = {BUSY: "compute", WAITDMA: "dma_wait", WAITCHAN: "channel_wait", DRAIN: "drain", HUNG: "hung"}
"""What a core in each state is doing, for the profiler (`TaskRecord.stalls`)."""
_STALL_OF = [STALL_KINDS.index(_STALL_NAMES.get(st, "other")) for st in range(8)]  # (by state: `stall_cycles` index)
_INF = float("inf")
EPS = 1e-6  # bytes
MAX_WARNINGS = 50
QUEUE_DEPTH = 16
"""Compute ops a unit's queue holds not yet started (`units = concurrent`): issuing one
more stalls the core until the oldest starts."""


class Gate:
    """When the host lets a task start (`time`; None: not submitted yet) and the vector
    clock of the tasks the host had seen complete by then (`vc`): a task the host
    submits after observing others' completion happens after them."""

    __slots__ = ("time", "vc")

    def __init__(self, time: float | None = None, vc: tuple[int, ...] | None = None):
        self.time = time
        self.vc = vc


class WatchdogError(SimError):
    """A task waited or ran longer than the watchdog budget; `details` is the dump."""


class Signal:
    __slots__ = ("visible_at", "vc", "task", "time")

    def __init__(self, visible_at: float, vc: tuple[int, ...], task: TaskProgram, time: float):
        self.visible_at = visible_at
        self.vc = vc
        self.task = task
        self.time = time


class Core:
    __slots__ = ("id", "queue", "qi", "state", "gen", "task", "val", "pending", "wait_tok", "busy_until",
                 "waits_left", "chans", "inflight", "vc", "rec", "lanes", "heads", "started", "idle_since",
                 "prefetching", "lend", "nx", "nx_gen", "nx_rec", "nx_pending", "nx_done", "nx_inflight",
                 "ufree", "umax", "recent", "queued", "hook", "nx_hook")

    def __init__(self, cid: int, queue: list[TaskProgram], channels: int, cores: int):
        self.id = cid
        self.queue = queue  # every task queued on the core, in submission order
        self.qi = 0  # how many of them finished
        self.lanes: dict[int, list[TaskProgram]] = {}  # in-order queues (streams), each run in order
        self.heads: dict[int, int] = {}
        self.started = 0
        self.idle_since = 0.0
        self.state = START
        self.gen: Any = None
        self.task: TaskProgram | None = None
        self.val: Any = None
        self.pending: CopyPlan | None = None
        self.wait_tok: Dma | None = None
        self.busy_until = 0.0
        self.waits_left: list[int] = []
        self.prefetching = False  # the task's prefetch runs (or ran) before its waits
        self.chans: list[Dma | None] = [None] * channels
        self.inflight = 0
        self.vc = [0] * cores
        self.rec: TaskRecord | None = None
        self.lend = False  # `task` passed its handoff: the next task's early ops may run (`Engine.early`)
        # the next task, started early: its first `early` ops run while `task` runs
        self.nx: TaskProgram | None = None
        self.nx_gen: Any = None
        self.nx_rec: TaskRecord | None = None
        self.nx_pending: CopyPlan | None = None  # its load waiting for a free channel
        self.nx_done = False  # its early ops have all run
        self.nx_inflight = 0  # its DMAs in flight (within `inflight`)
        # concurrent units: when each is free, the SRAM uses of compute ops that may still
        # run (unit, first byte, end byte, end time, written?, op), the start times of ops
        # queued and not yet started
        self.ufree = {"cube": 0.0, "vector": 0.0}
        self.umax = 0.0  # max(ufree.values()): each unit's free time only grows
        self.recent: list[tuple[str, int, int, float, bool, OpInfo]] = []
        self.queued: dict[str, deque[float]] = {"cube": deque(), "vector": deque()}
        # the hooks of the task's generator (`sim.interp`: the engine's `inline` while the
        # task runs, cleared when it finishes - the engine and the hook's closure would
        # otherwise hold each other, and a finished run's program with them, until the
        # cyclic collector's next full pass) and of the next task's (started early: none
        # until it runs)
        self.hook: list = [passes]
        self.nx_hook: list = [passes]

    def free_at(self, unit: str, t: float) -> None:
        """Unit `unit` is busy until `t` (later than before: a unit's free time only grows)."""
        self.ufree[unit] = t
        if t > self.umax:
            self.umax = t


def _issued(d: Dma) -> int:
    return d.seq


class Engine:
    """Runs a loaded `Program` once; see `run()`."""

    def __init__(self, prog: Program | None, trace: bool, check_races: bool, sanitize: bool = False, *,
                 arch: Arch | None = None, values: Values | None = None,
                 on_done: Callable[[int, float], None] | None = None, watchdog: int | None = None,
                 timing_only: bool = False):
        """`prog`: a loaded program whose tasks run at once (None: tasks come from `add`,
        on `arch`, with the sanitizer naming `values`). `on_done(task, cycle)` is called
        as each task ends (the host model sets later tasks' gates from it). `watchdog`:
        a task waiting for its events, or running, longer than this many cycles stops
        the run with a WatchdogError and a dump of every task. `timing_only`: compute ops
        and DMAs keep their timing but move and compute no data (no sanitizer, no race
        checks: they read the data's provenance)."""
        arch = arch if prog is None else prog.arch
        assert arch is not None, "an engine without a program needs an arch"
        self.prog = prog
        self.arch = arch
        self.bw = float(arch.dram_bw)
        self.now = 0.0
        self.cores = [Core(c, [], arch.dma_channels, arch.cores) for c in range(arch.cores)]
        self.wake = [True] * arch.cores  # per core: something it may wait for happened (`run`)
        self.gated = False  # some task has a host gate (then every clock step wakes every core)
        self.tasks: list[TaskProgram] = []
        self.gates: list[Gate | None] = []
        self.done: list[bool] = []
        self.seqs: list[int] = []  # per task, its place in its core's start order
        self.live_from = 0  # tasks before this one have all finished
        self.dump_from = 0  # the dumps list the tasks from this one on (the runtime's oldest request)
        self.hung: set[int] = set()  # tasks that never finish (fault injection)
        self.on_done = on_done
        self.watchdog = watchdog
        self.stop_at: float | None = None  # a host time the clock must stop at (`run(until)`)
        # DMAs in flight by phase: in their latency (issue order, which is the order their
        # latencies end in: one `dma_latency`), transferring over DRAM (processor-shared),
        # SRAM -> SRAM copies at a fixed rate
        self.lat: deque[Dma] = deque()
        self.shared: list[Dma] = []
        self.fixed: list[Dma] = []
        self.slots: dict[int, list[Signal]] = {}  # counting semaphores: pending signals per slot
        self.records: list[TaskRecord | None] = []
        self.task_vc: list[tuple[int, ...] | None] = []
        self.numeric = not timing_only
        self.san = Sanitizer(self, prog.values if prog is not None else values or Values(), sanitize and self.numeric,
                             check_races and self.numeric)
        if prog is not None:
            self.add(prog.tasks)
            for b in prog.host_written + prog.inputs:
                self.san.host_write(b)
        self.trace = Trace(arch.cores, arch.dma_channels, arch.freq, trace, units=arch.units == "concurrent")
        self.busy = {"cube": [0] * arch.cores, "vector": [0] * arch.cores, "dma": [0.0] * arch.cores}
        self.dram_busy = 0.0
        self.dram_read = 0
        self.dram_written = 0
        self.dram_moved = 0
        self.warnings: list[str] = list(prog.warnings) if prog is not None else []
        self._warned: set = set()
        self.concurrent = arch.units == "concurrent"
        self._dma_seq = 0

    # ------------------------------------------------------------------ main loop
    def add(self, tasks: list[TaskProgram], gates: list[Gate] | None = None, slot_base: int = 0,
            lane: int = 0) -> None:
        """Queue `tasks` (in program order) behind those already in `lane` of their cores,
        numbered after them, their event slots moved up by `slot_base`; `gates` (one per
        task) hold them until the host submits them (default: submitted now). A core
        runs each lane in order; between lanes it starts the first task whose events
        have all arrived (with a single lane: the next task, waiting for its events)."""
        for i, t in enumerate(tasks):
            t.index = len(self.tasks)
            core = self.cores[t.core]
            t.lane = lane  # (its `seq`, the order it starts in on its core, is set when it starts)
            t.waits = [slot_base + s for s in t.wait_slots]
            t.signals = [slot_base + s for s in t.signal_slots]
            core.queue.append(t)
            core.lanes.setdefault(lane, []).append(t)
            core.heads.setdefault(lane, 0)
            if core.state == DONE:
                core.state = START
            self.tasks.append(t)
            self.gates.append(gates[i] if gates is not None else None)
            self.gated = self.gated or gates is not None
            self.done.append(False)
            self.seqs.append(-1)
            self.records.append(None)
            self.task_vc.append(None)

    def run(self, until: Callable[[], bool] | None = None) -> None:
        """Simulate until every core has run its queue (raises SimError), or with
        `until`, only until it returns True or the device idles waiting for the host.

        At each instant the cores are stepped in order, round after round, while `wake`
        marks some: those something they may wait for concerned (their compute ending,
        their DMA completing, an event signal becoming visible, a host gate), so skipping
        the others changes nothing (a core that cannot move has no side effect). A core
        steps as far as it can, so it is not stepped again at that instant unless
        something marks it anew (a task ending with a signal visible at once, or the host
        told: `finish`) - nothing else one core does at an instant lets another move."""
        cores = self.cores
        wake = self.wake
        wake[:] = [True] * len(cores)  # (the host may have queued tasks or opened gates)
        with np.errstate(all="ignore"), one_blas_thread() if self.numeric else nullcontext(), collector_paused():
            while True:
                while True in wake:
                    for c in cores:
                        if not wake[c.id]:
                            continue
                        wake[c.id] = False
                        if c.state != DONE:
                            self.step(c)
                        if c.task is not None and (c.nx is not None or c.lend):
                            self.early(c)
                if until is not None and until():
                    return
                for c in cores:
                    if c.state != DONE:
                        break
                else:
                    break  # (every core has run its queue)
                t = self.next_time()
                if self.stop_at is not None or self.watchdog is not None or t is None or t <= self.now:
                    t = self.host_time(t)
                if t is None:
                    if until is not None and not any(self.stuck(c) for c in cores):
                        return  # idle until the host submits more
                    raise self.deadlock()
                self.advance(t)
                if self.watchdog is not None:
                    self.check_watchdog()
        if until is None and self.prog is not None:
            self.close(self.prog.outputs)

    def close(self, outputs: list[Buf]) -> None:
        """After the last task: the sanitizer's check of the outputs, and a warning per
        event signalled and never consumed."""
        self.san.finish(outputs)
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
            elif st == START or st == DRAIN:
                if not (self.begin(c) if st == START else self.drain(c)):
                    return moved
                moved = True
            else:
                return moved

    def drain(self, c: Core) -> bool:
        """A task whose body has ended: once its DMAs (and on concurrent units, its units'
        queues) are done, it finishes (or hangs, when a fault was injected). False: not yet."""
        if c.inflight > c.nx_inflight:  # (the next task's early loads are not this task's)
            return False
        if self.concurrent:
            busy = c.umax
            if busy > self.now:  # (its units finish their queues; then it drains again)
                c.busy_until, c.state = busy, BUSY
                return True
        assert c.task is not None
        if c.task.index in self.hung:
            c.state = HUNG
            return True
        self.finish(c)
        return True

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
            if self.concurrent:
                self.dispatch(c, req[1], req[2])
            else:
                self.compute(c, req[1], req[2])
        elif kind == REQ_DMA:
            ch = self.free_channel(c)
            if ch < 0:
                c.pending = req[1]
                c.state = WAITCHAN
            else:
                c.val = self.issue(c, ch, req[1])
        elif kind == REQ_FENCE:
            self.fence(c, req[1], req[2], req[3])
        elif kind == REQ_GATE:
            if c.prefetching:
                c.state = START  # (`begin` takes the waits, then the body goes on)
        elif kind == REQ_HANDOFF:
            c.lend = True
        elif kind == REQ_EARLY or kind == REQ_NONE:
            pass  # (the end of the early ops: the task runs on; an `inline` answer stopped the core)
        else:
            tok = req[1]
            if not tok.done:
                c.wait_tok = tok
                c.state = WAITDMA

    def make_inline(self, c: Core) -> Callable[[tuple], Any]:
        """The `inline` hook of core `c`'s running task (`sim.interp`): acts on a request
        exactly as `resume` would when that leaves the core running - a fence, a copy with
        a free channel (answer: its token), a wait on a completed copy, a compute op queued
        on its unit - answering STOP when the fence or the queue stopped the core; PASS
        for the rest (a copy without a channel, a pending wait, a compute op on an arch
        whose units run one op at a time, the markers)."""
        fence, dispatch, issue = self.fence, self.dispatch, self.issue
        concurrent = self.concurrent

        def inline(req: tuple) -> Any:
            kind = req[0]
            if kind == REQ_FENCE:
                fence(c, req[1], req[2], req[3])
            elif kind == REQ_DMA:
                chans = c.chans
                if None not in chans:
                    return PASS
                return issue(c, chans.index(None), req[1])
            elif kind == REQ_WAIT:
                return None if req[1].done else PASS
            elif kind == REQ_COMPUTE and concurrent:
                dispatch(c, req[1], req[2])
            else:
                return PASS
            return None if c.state == RUN else STOP
        return inline

    def next_time(self) -> float | None:
        """The time of the next event (None: none is coming): a compute ending, a DMA's
        latency or fixed-time copy ending, the first shared transfer finishing at its
        share of `dram_bw`, a signal becoming visible, a host gate opening."""
        now = self.now
        t = _INF
        for c in self.cores:
            if c.state == BUSY and c.busy_until < t:
                t = c.busy_until
        if self.lat and self.lat[0].lat_end < t:
            t = self.lat[0].lat_end
        for d in self.fixed:
            if d.end < t:
                t = d.end
        if self.shared:
            tx = self.next_transfer()
            if tx < t:
                t = tx
        if self.slots:
            for sigs in self.slots.values():
                for s in sigs:
                    if now < s.visible_at < t:
                        t = s.visible_at
        if self.gated:
            t = min(t, self.next_gate())
        return None if t == _INF else t

    def next_transfer(self) -> float:
        """When the first shared transfer finishes at its share of `dram_bw`."""
        now = self.now
        shared = self.shared
        m = _INF
        for d in shared:
            if d.rem < m:
                m = d.rem
        tx = now + m * len(shared) / self.bw
        if tx <= now:  # below float resolution: they finish at the next representable time
            for d in shared:
                if d.rem <= m:
                    d.rem = 0.0
            tx = math.nextafter(now, math.inf)  # (a time not after `now` is never stopped at)
        return tx

    def next_gate(self) -> float:
        """The next time the host opens the gate of a task an idle core could start."""
        t = float("inf")
        if not self.gated:
            return t
        for c in self.cores:
            if c.task is None:
                for h in self.lane_heads(c):
                    gate = self.gates[h.index]
                    if gate is not None and gate.time is not None and self.now < gate.time < t:
                        t = gate.time
        return t

    def host_time(self, t: float | None) -> float | None:
        """The next time to stop at given the device's next event `t`: also the host's
        `stop_at` and watchdog deadlines, which matter only while something may still
        happen - a task blocked with nothing in flight is a deadlock (None), found at
        once; a hung task looks busy, and only the watchdog stops it."""
        now = self.now
        if t is not None and self.stop_at is None and self.watchdog is None:
            return t if t > now else None  # (the common case: the device's own next event)
        hung = any(c.state == HUNG for c in self.cores)
        if t is None and not hung and any(self.stuck(c) for c in self.cores):
            return None
        cands = [x for x in (t, self.stop_at) if x is not None and x > now]
        if self.watchdog is not None:
            cands += [d for d in (self.watch_deadline(c) for c in self.cores) if d is not None and d > now]
        return min(cands, default=None)

    def advance(self, t: float) -> None:
        """Move the clock to `t`: DMAs progress and complete; `wake` marks the cores this
        concerns (see `run`)."""
        prev = self.now
        dt = t - prev
        shared = self.shared
        self.pass_time(prev, t)
        if dt > 0 and shared:
            dec = dt * self.bw / len(shared)
            for d in shared:
                d.rem -= dec
            self.dram_busy += dt
        self.now = t
        finished = [d for d in shared if d.rem <= EPS] if shared else []
        if self.fixed:
            finished += [d for d in self.fixed if d.end <= t]
        lat = self.lat
        while lat and lat[0].lat_end <= t:  # (then its transfer begins: not finished by this step)
            d = lat.popleft()
            if d.plan.nbytes == 0:
                finished.append(d)
            elif d.shared:
                d.phase = XFER
                shared.append(d)
            else:  # SRAM -> SRAM: local, at full rate, no DRAM bandwidth
                d.phase = FIXED
                d.end = t + d.plan.nbytes / self.bw
                self.fixed.append(d)
        if finished:
            if len(finished) > 1:
                finished.sort(key=_issued)  # (they complete in the order they were issued)
            for d in finished:
                self.complete(d)
            self.shared = [d for d in self.shared if not d.done]
            if self.fixed:
                self.fixed = [d for d in self.fixed if not d.done]

    def pass_time(self, prev: float, t: float) -> None:
        """The cores as the clock moves from `prev` to `t`, before any DMA completes: charge
        the cycles to what each running task's core does (`TaskRecord.stalls`), and mark
        in `wake` the cores this may let move - one whose compute ends, every core waiting
        for events when a signal becomes visible, every core when tasks have host gates
        (the cores of completed DMAs are marked by `complete`)."""
        dt = t - prev
        wake = self.wake
        gated = self.gated
        visible = False
        if self.slots and not gated:
            visible = any(prev < g.visible_at <= t for sigs in self.slots.values() for g in sigs)
        concurrent = self.concurrent
        for c in self.cores:
            st = c.state
            rec = c.rec
            if rec is not None and dt > 0:
                if st != START:
                    acc = rec.stall_cycles
                    # (on concurrent units, a unit working while the core waits is compute)
                    if st == BUSY:
                        busy = dt
                    elif concurrent:
                        busy = (t if t < c.umax else c.umax) - prev
                        if not busy > 0.0:
                            busy = 0.0
                    else:
                        busy = 0.0
                    if busy:
                        acc[0] += busy  # (compute)
                    if dt > busy:
                        i = _STALL_OF[st]
                        acc[i] = acc[i] + dt - busy  # (as (acc + dt) - busy: the profile's figures unchanged)
                    if busy and c.inflight:
                        rec.overlap += busy
                elif c.prefetching and not c.inflight:
                    rec.gated += dt  # (at its gate with nothing in flight: idle, not the kernel's work)
            if gated or (st == BUSY and c.busy_until <= t) or (visible and st == START):
                wake[c.id] = True

    # ------------------------------------------------------------------ tasks
    def begin(self, c: Core) -> bool:
        """Start (or keep trying to start) the next task of `c`: True once its body runs."""
        if c.task is None:
            if c.qi >= len(c.queue):
                c.state = DONE
                return True
            t = self.pick(c)
            if t is None:
                return False
            gate = self.gates[t.index]
            if gate is not None and gate.vc is not None:
                c.vc = [max(a, b) for a, b in zip(c.vc, gate.vc)]
            t.seq = self.seqs[t.index] = c.started
            c.started += 1
            c.task = t
            c.waits_left = list(t.waits)
            c.gen = None
            c.lend = False
            if c.nx is t:  # started early: its generator and record go on
                c.gen, c.rec, c.hook = c.nx_gen, c.nx_rec, c.nx_hook
                c.hook[0] = self.make_inline(c)
                assert c.rec is not None
                c.rec.ready = self.now
            else:
                c.rec = TaskRecord(t.index, t.kernel, t.core, t.range, t.nodes, t.predicted_cycles, ready=self.now)
                self.records[t.index] = c.rec
            c.rec.body_start = self.now
            if t.prefetch and c.waits_left:  # its weight loads go out before the waits
                c.prefetching = True
                self.go_on(c, t)
                return True
        now = self.now
        assert c.rec is not None
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
            c.rec.deps.append(sig.task.index)
            self.trace.flow(self.trace.core_tid(sig.task.core), sig.time, self.trace.core_tid(c.id), now,
                            f"event slot {s}")
            c.waits_left.pop(0)
        t = c.task
        assert c.rec is not None
        c.rec.start = now
        self.task_vc[t.index] = tuple(c.vc)
        if c.prefetching:  # (the body goes on from its gate)
            c.prefetching = False
            c.state = RUN
        else:
            c.rec.body_start = now
            self.go_on(c, t)
        return True

    def go_on(self, c: Core, t: TaskProgram) -> None:
        """Run the body of `c`'s new task `t`: from its start, or where its early ops
        left it (a load waiting for a channel)."""
        c.val = None
        c.state = RUN
        if c.gen is None:
            c.hook = [self.make_inline(c)]
            c.gen = t.start(c.hook)
        elif c.nx is t:
            if c.nx_pending is not None:
                c.pending, c.state = c.nx_pending, WAITCHAN
            c.nx, c.nx_gen, c.nx_rec, c.nx_pending, c.nx_done, c.nx_inflight = None, None, None, None, False, 0

    def early(self, c: Core) -> bool:
        """While `c` runs a task whose body has begun, run the next task's `early` ops
        (`TaskOp.early`: SRAM buffers and loads of weights into bytes the running task
        does not touch), its loads taking a channel the running task is not waiting
        for. The next task must follow in the same lane of a core with one lane (with
        several, another lane's task might run in between). True if it moved."""
        if c.nx is None:
            running = c.task
            if running is None or not c.lend or c.state == START or len(c.lanes) != 1:
                return False
            lane = c.lanes[running.lane]
            i = c.heads[running.lane] + 1
            t = lane[i] if i < len(lane) else None
            if t is None or not t.early:
                c.lend = False  # (nothing to run early: stop looking until the next task hands over)
                return False
            if not self.submitted(t):
                return False
            c.nx_hook = [passes]  # (its early ops yield every request to `early`)
            c.nx, c.nx_gen, c.nx_done = t, t.start(c.nx_hook), False
            c.nx_rec = TaskRecord(t.index, t.kernel, t.core, t.range, t.nodes, t.predicted_cycles)
            self.records[t.index] = c.nx_rec
        moved = False
        while not c.nx_done:
            tok = None
            if c.nx_pending is not None:
                ch = self.free_channel(c)
                if ch < 0 or c.state == WAITCHAN:
                    return moved
                tok = self.issue(c, ch, c.nx_pending, c.nx)
                c.nx_inflight += 1
                c.nx_pending = None
            moved = True
            req = c.nx_gen.send(tok)
            if req[0] == REQ_EARLY:
                c.nx_done = True
            elif req[0] == REQ_DMA:
                c.nx_pending = req[1]
            else:
                raise SimError(f"{c.nx.where}: an op among its `early` ops blocks (only buffers, scalar ops and "
                               "loads may run during the previous task)")
        return moved

    def lane_heads(self, c: Core) -> list[TaskProgram]:
        return [lane[c.heads[k]] for k, lane in c.lanes.items() if c.heads[k] < len(lane)]

    def submitted(self, t: TaskProgram) -> bool:
        gate = self.gates[t.index]
        return gate is None or (gate.time is not None and gate.time <= self.now)

    def pick(self, c: Core) -> TaskProgram | None:
        """The task idle core `c` starts next: its one submitted lane head, or among
        several the first whose events have all arrived (None: none can start yet)."""
        open_ = [h for h in self.lane_heads(c) if self.submitted(h)]
        if len(open_) <= 1:
            return open_[0] if open_ else None
        return next((h for h in open_ if self.events_arrived(h)), None)

    def events_arrived(self, t: TaskProgram) -> bool:
        need: dict[int, int] = {}
        for s in t.waits:
            need[s] = need.get(s, 0) + 1
        return all(sum(1 for g in self.slots.get(s, []) if g.visible_at <= self.now) >= n for s, n in need.items())

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
        if (t.signals and self.arch.sync_latency <= 0) or self.on_done is not None:
            self.wake[:] = [True] * len(self.cores)  # (visible at once / the host may open gates)
        self.trace.span(self.trace.core_tid(c.id), t.kernel, "task", rec.start, now,
                        {"onnx_nodes": t.nodes, "task": t.index, "range": list(t.range), "waits": list(t.waits),
                         "signals": list(t.signals), "waited_cycles": rec.start - rec.ready,
                         "dram_bytes_read": rec.dram_bytes_read, "dram_bytes_written": rec.dram_bytes_written})
        c.task = None
        c.rec = None
        c.gen = None
        c.hook[0] = passes
        if self.concurrent:
            c.recent = []
        c.qi += 1
        c.heads[t.lane] += 1
        c.idle_since = now
        c.state = START
        self.done[t.index] = True
        if self.on_done is not None:
            self.on_done(t.index, now)

    # ------------------------------------------------------------------ compute
    def compute(self, c: Core, info: OpInfo, bufs: list[Buf]) -> None:
        if c.inflight:
            self.compute_hazards(c, info, bufs)
        assert c.task is not None and info.execute is not None  # (a compute op of the running task)
        if self.numeric:
            self.execute(c, info, bufs)
        cyc = info.cycles
        rec = c.rec
        assert rec is not None
        rec.compute_cycles[info.unit] += cyc
        self.busy[info.unit][c.id] += cyc
        if cyc > 0:
            c.busy_until = self.now + cyc
            c.state = BUSY
            if self.trace.enabled:
                self.trace.span(self.trace.core_tid(c.id), f"{info.label}: {c.task.kernel}", info.unit, self.now,
                                c.busy_until, {"op": info.name, "cycles": cyc, "onnx_nodes": info.nodes})

    def dispatch(self, c: Core, info: OpInfo, bufs: list[Buf]) -> None:
        """`units = concurrent`: queue a compute op on its unit, which starts it when it is
        free (and past any fence), and go on; the core stalls only when the unit already
        holds `QUEUE_DEPTH` ops not yet started. Its numpy semantics run now, in program
        order (a missing fence is reported as a race, never computed differently)."""
        u = info.unit
        now = self.now
        start = max(now, c.ufree[u])
        cyc = info.cycles
        end = start + cyc
        if c.recent:
            c.recent = [r for r in c.recent if r[3] > now]
            if self.numeric:  # (a timing-only run checks no data and no race)
                self.unit_races(c, info, u, start, bufs)
        if c.inflight:
            self.compute_hazards(c, info, bufs)
        assert c.task is not None
        if self.numeric:
            self.execute(c, info, bufs)
        rec = c.rec
        assert rec is not None
        rec.compute_cycles[u] += cyc
        self.busy[u][c.id] += cyc
        if cyc <= 0:
            return
        c.free_at(u, end)
        if bufs:  # (the last buffer is the one it writes)
            recent = c.recent
            recent += [(u, b.off, b.off + b.nbytes, end, False, info) for b in bufs[:-1]]
            b = bufs[-1]
            recent.append((u, b.off, b.off + b.nbytes, end, True, info))
        if self.trace.enabled:
            self.trace.span(self.trace.unit_tid(c.id, u), f"{info.label}: {c.task.kernel}", u, start, end,
                            {"op": info.name, "cycles": cyc, "onnx_nodes": info.nodes, "issued": now})
        q = c.queued[u]
        q.append(start)
        while q and q[0] <= now:
            q.popleft()
        if len(q) > QUEUE_DEPTH:
            c.busy_until, c.state = q[0], BUSY

    def execute(self, c: Core, info: OpInfo, bufs: list[Buf]) -> None:
        """Run a compute op's numpy semantics (and the sanitizer's check of it)."""
        assert c.task is not None and info.execute is not None
        self.san.compute(info, bufs, c.task.index)
        try:
            info.execute([b.arr for b in bufs])
        except Exception as e:
            bad = gather_fault(info, [b.arr for b in bufs])
            if bad is not None:
                raise SimError(*bad) from None
            raise SimError(f"{info.own_where}: cannot execute: {type(e).__name__}: {e}",
                           "operands: " + ", ".join(f"{list(b.shape)} at {b.desc}" for b in bufs)) from None

    def fence(self, c: Core, src: str, dst: str, bufs: list[Buf]) -> None:
        """`npu_compute.fence src -> dst`: `dst` (a unit, or the next copy) starts no earlier
        than the end of the `src` ops issued so far that touch `bufs`, plus `flag_latency`
        when it has to wait for them."""
        t = 0.0
        spans = None
        for u, lo, hi, end, _, _ in c.recent:
            if u == src and end > t:
                if spans is None:
                    spans = [(b.off, b.off + b.nbytes) for b in bufs]
                for b0, b1 in spans:
                    if lo < b1 and b0 < hi:
                        t = end
                        break
        if dst == "dma":
            if t > self.now:  # (the core issues its copies: it waits)
                c.busy_until, c.state = t + self.arch.flag_latency, BUSY
        elif t > self.now and t > c.ufree[dst]:
            c.free_at(dst, t + self.arch.flag_latency)

    def unit_races(self, c: Core, info: OpInfo, unit: str, start: float, bufs: list[Buf]) -> None:
        """Report a compute op starting while another unit's op still uses bytes it
        touches (one of them writing): a missing `npu_compute.fence`."""
        last = len(bufs) - 1
        for u, lo, hi, end, wrote, other in c.recent:
            if u == unit or end <= start:
                continue
            for i, b in enumerate(bufs):
                if (wrote or i == last) and lo < b.off + b.nbytes and b.off < hi:
                    self.race(c, info, unit, start, other, u, wrote, (lo, hi), end)
                    break

    def race(self, c: Core, info: OpInfo, unit: str, start: float, other: OpInfo, other_unit: str,
             wrote: bool, rng: tuple[int, int], end: float) -> None:
        key = (c.task.index if c.task else -1, info.index, other.index)
        if key in self._warned:
            return
        self._warned.add(key)
        if len(self.warnings) < MAX_WARNINGS:
            verb = "writes" if wrote else "reads"
            self.warnings.append(
                f"race: {info.where} starts on the {unit} of core {c.id} at cycle {start:g} while '{other.name}' "
                f"(op #{other.index}) on the {other_unit} still {verb} SRAM bytes [{rng[0]}, {rng[1]}) until "
                f"cycle {end:g} (missing npu_compute.fence {other_unit} -> {unit}?)")

    def copy_races(self, c: Core, plan: CopyPlan, start: float) -> None:
        """Report a copy starting while a compute op still writes the SRAM bytes it reads,
        or uses the bytes it writes."""
        w, r = plan.sram_write, plan.sram_read
        for u, lo, hi, end, wrote, other in c.recent:
            if end <= start:
                continue
            for rng, needs_write in ((w, False), (r, True)):
                if rng is not None and (wrote or not needs_write) and lo < rng[1] and rng[0] < hi:
                    self.race(c, plan.info, "dma", start, other, u, wrote, (lo, hi), end)
                    break

    def compute_hazards(self, c: Core, info: OpInfo, bufs: list[Buf]) -> None:
        """Warn when a compute op uses bytes a DMA in flight still writes, or overwrites
        bytes one still reads."""
        out = bufs[-1]
        for d in c.chans:
            if d is None:
                continue
            w, r = d.plan.sram_write, d.plan.sram_read
            if w is not None:
                w0, w1 = w
                for b in bufs:
                    if w0 < b.off + b.nbytes and b.off < w1:
                        self.hazard(c, info, d, "uses", w, "is still writing")
                        break
            if r is not None and r[0] < out.off + out.nbytes and out.off < r[1]:
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
        chans = c.chans
        return chans.index(None) if None in chans else -1

    def issue(self, c: Core, ch: int, plan: CopyPlan, task: TaskProgram | None = None) -> Dma:
        t = task or c.task
        assert t is not None
        w, r = plan.sram_write, plan.sram_read
        if c.inflight and (r is not None or w is not None):
            self.issue_hazards(c, plan, w, r)
        if c.recent and self.numeric and (r is not None or w is not None):
            c.recent = [x for x in c.recent if x[3] > self.now]
            self.copy_races(c, plan, self.now)
        self._dma_seq += 1
        d = Dma(c.id, ch, t, plan, self.now, self.arch.dma_latency, self._dma_seq)
        c.chans[ch] = d
        c.inflight += 1
        self.lat.append(d)
        return d

    def issue_hazards(self, c: Core, plan: CopyPlan, w: tuple[int, int] | None, r: tuple[int, int] | None) -> None:
        """Warn when a DMA `c` issues writes SRAM bytes `w` a DMA in flight still reads or
        writes, or reads bytes `r` one still writes."""
        for d in c.chans:
            if d is None:
                continue
            pw, pr = d.plan.sram_write, d.plan.sram_read
            if w is not None and ((pw is not None and w[0] < pw[1] and pw[0] < w[1])
                                  or (pr is not None and w[0] < pr[1] and pr[0] < w[1])):
                self.hazard(c, plan.info, d, "writes", w, "still owns")
            elif r is not None and pw is not None and r[0] < pw[1] and pw[0] < r[1]:
                self.hazard(c, plan.info, d, "reads", r, "is still writing")

    def complete(self, d: Dma) -> None:
        plan = d.plan
        c = self.cores[d.core]
        rec = self.records[d.task.index]  # (the next task's, for its early loads)
        assert rec is not None
        if d.task is c.nx:
            c.nx_inflight -= 1
        if self.numeric:
            self.san.dma(d)
            plan.move()
        else:
            plan.check_writeable()
        d.done = True
        d.end = self.now
        c.chans[d.chan] = None
        self.wake[c.id] = True
        c.inflight -= 1
        r = plan.nbytes if d.reads_dram else 0
        w = plan.nbytes if d.writes_dram else 0
        rec.dram_bytes_read += r
        rec.dram_bytes_written += w
        rec.dmas += 1
        self.dram_read += r
        self.dram_written += w
        if d.shared:
            self.dram_moved += plan.nbytes
            rec.dram_bytes_moved += plan.nbytes
        self.busy["dma"][d.core] += self.now - d.issue
        if self.trace.enabled:
            direction = f"{plan.src.region.space}->{plan.dst.region.space}"
            self.trace.span(self.trace.dma_tid(d.core, d.chan), f"dma {direction}: {d.task.kernel}", "dma",
                            d.issue, self.now,
                            {"bytes": plan.nbytes, "src": plan.src.desc, "dst": plan.dst.desc,
                             "src_window": fmt_slices(plan.src_sl), "dst_window": fmt_slices(plan.dst_sl),
                             "latency_cycles": self.arch.dma_latency, "onnx_nodes": plan.info.nodes,
                             "task": d.task.kernel})

    def hb(self, w: int, t: int) -> bool:
        """Task `w` happens before task `t` (program order on a core or events)."""
        vc = self.task_vc[t]
        tw = self.tasks[w]
        return vc is not None and vc[tw.core] > self.seqs[w]

    # ------------------------------------------------------------------ watchdog
    def watch_deadline(self, c: Core) -> float | None:
        """When the watchdog fires for core `c`'s task: `watchdog` cycles after it began
        waiting for its events (submitted and reached on its core), or after its body
        began when it is running."""
        rec = c.rec
        if self.watchdog is None:
            return None
        if c.task is None or rec is None:  # idle: since a submitted lane head could have started
            gates = [g.time if g is not None and g.time is not None else 0.0
                     for g in (self.gates[h.index] for h in self.lane_heads(c) if self.submitted(h))]
            return max(c.idle_since, min(gates)) + self.watchdog if gates else None
        return (rec.ready if c.state == START else rec.start) + self.watchdog

    def stuck(self, c: Core) -> bool:
        """Core `c` holds a task, or a submitted task it cannot start."""
        return c.task is not None or any(self.submitted(h) for h in self.lane_heads(c))

    def check_watchdog(self) -> None:
        for c in self.cores:
            d = self.watch_deadline(c)
            if d is None or self.now < d:
                continue
            t = c.task or next(h for h in self.lane_heads(c) if self.submitted(h))
            if c.task is None or c.state == START:
                slots = c.waits_left if c.task is not None else t.waits
                what = f"waited {self.watchdog} cycles for event slot(s) {slots}"
            else:
                what = f"ran {self.watchdog} cycles without finishing"
            raise WatchdogError(f"watchdog: {t.where} (task #{t.index}, core {c.id}) {what} "
                                f"(budget --watchdog-cycles {self.watchdog}) at cycle {self.now:g}",
                                "\n".join(self.task_dump()))

    def task_state(self, t: TaskProgram, index: int | None = None) -> str:
        """One task's state for the dumps: done, running, waiting on which slot from whom,
        queued behind which task, or not submitted (`index`: its number, when `t` may
        have been queued again since)."""
        i = t.index if index is None else index
        if self.done[i]:
            rec = self.records[i]
            return f"done [{rec.start:g}, {rec.end:g})" if rec is not None else "done"
        c = self.cores[t.core]
        if c.task is t:
            assert c.rec is not None
            if c.state != START:
                return f"{_STATE_NAMES[c.state]} since cycle {c.rec.start:g}"
            slot = c.waits_left[0]
            who = self.signallers(slot, t)
            src = ", ".join(f"#{x.index} '{x.kernel}'" for x in who) or "no remaining task"
            return f"waiting since cycle {c.rec.ready:g} on event slot {slot} (signalled by {src})"
        gate = self.gates[t.index]
        if gate is not None and (gate.time is None or gate.time > self.now):
            return "not submitted by the host yet"
        head = c.task or c.lanes[t.lane][c.heads[t.lane]]
        if head is t:
            return f"submitted, waiting for its events on idle core {t.core}"
        return f"queued on core {t.core} behind #{head.index} '{head.kernel}'"

    def live(self) -> list[TaskProgram]:
        """The tasks from the first unfinished one on (a runtime reuses a finished
        request's task objects for later requests)."""
        while self.live_from < len(self.tasks) and self.done[self.live_from]:
            self.live_from += 1
        return self.tasks[self.live_from:]

    def signallers(self, slot: int, waiter: TaskProgram) -> list[TaskProgram]:
        """The unfinished task whose signal of `slot` `waiter` waits for: the nearest
        before it in program order (the compiler reuses slots), else the first after."""
        who = [x for x in self.live() if not self.done[x.index] and x is not waiter and slot in x.signals]
        before = [x for x in who if x.index < waiter.index]
        return before[-1:] or who[:1]

    def blocker(self, t: TaskProgram) -> TaskProgram | None:
        """The task `t` waits for: the first would-be signaller of the slot it waits on,
        or the task holding its core; None when nothing can unblock it or it runs."""
        c = self.cores[t.core]
        if c.task is t:
            if c.state != START:
                return None
            who = self.signallers(c.waits_left[0], t)
            return who[0] if who else None
        head = c.task or c.lanes[t.lane][c.heads[t.lane]]
        if head is not t:
            return head
        who = [x for s in t.waits for x in self.signallers(s, t)]
        return who[0] if who else None

    def wait_chain(self, first: TaskProgram) -> list[str]:
        """Follow who-waits-for-whom from `first`: a cycle (naming its first task), a
        wait no remaining task can satisfy (a missing signal), or a task that runs."""
        seen: list[TaskProgram] = []
        t: TaskProgram | None = first
        while t is not None and t not in seen:
            seen.append(t)
            t = self.blocker(t)
        chain = " -> ".join(f"#{x.index} '{x.kernel}'" for x in seen)
        last = seen[-1]
        if t is not None:
            return [f"wait chain: {chain} -> #{t.index} (a cycle)",
                    f"first task in the wait cycle: {t.where} (task #{t.index}, core {t.core})"]
        c = self.cores[last.core]
        if c.task is last and c.state == START:
            return [f"wait chain: {chain}",
                    f"first blocked task: {last.where} (task #{last.index}) waits on event slot "
                    f"{c.waits_left[0]}, which no remaining task signals (a missing signal)"]
        return [f"wait chain: {chain}",
                f"first blocking task: {last.where} (task #{last.index}, core {last.core}) is "
                f"{self.task_state(last)}"]

    def task_dump(self) -> list[str]:
        """Every task's state with its ONNX nodes, then the wait chain from the first
        blocked task."""
        lines = [f"cycle {self.now:g}: tasks:"]
        if self.dump_from:
            lines.append(f"  (tasks #0 to #{self.dump_from - 1}: earlier requests, done)")
        for i in range(self.dump_from, len(self.tasks)):
            t = self.tasks[i]
            nodes = f"  nodes: {', '.join(t.nodes)}" if t.nodes else ""
            lines.append(f"  #{i} '{t.kernel}' core {t.core}: {self.task_state(t, i)}{nodes}")
        waiting = [c.task for c in self.cores if c.task is not None and c.state == START]
        blocked = waiting or [c.task for c in self.cores if c.task is not None]
        if blocked:
            lines += self.wait_chain(min(blocked, key=lambda t: t.index))
        return lines

    # ------------------------------------------------------------------ deadlock
    def deadlock(self) -> SimError:
        now = self.now
        lines: list[str] = [f"cycle {now:g}:"]
        blocked: list[str] = []
        for c in self.cores:
            n = len(c.queue)
            if c.state == DONE:
                lines.append(f"  core {c.id}: done ({n} task{'s' if n != 1 else ''})")
                continue
            t = c.task
            if t is None:
                heads = [h for h in self.lane_heads(c) if self.submitted(h)]
                lines.append(f"  core {c.id}: idle, " + (
                    "its next task not submitted by the host" if not heads else
                    "no submitted task has all its events: " + ", ".join(f"#{h.index} '{h.kernel}'" for h in heads)))
                if heads:
                    blocked.append(f"core {c.id}: {heads[0].where} waits on slot(s) {list(heads[0].waits)}")
                continue
            pos = f"task {c.qi + 1} of {n} in its queue"
            if c.state == START:
                waits = c.waits_left
                lines.append(f"  core {c.id}: {t.where} ({pos}) waits on event slot(s) {waits}"
                             f" (all waits: {list(t.waits)})")
                for s in waits:
                    who = self.signallers(s, t)
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
                        "\n".join(lines + self.task_dump()))



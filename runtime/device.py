"""The host runtime over the simulated device: load executables, allocate device
memory, bind inputs, submit, wait, fetch outputs - in three run modes, with streams,
waves, two levels of events, a watchdog and deferred release.

    rt = Runtime(mode="graph-async", wait="blocking")
    exe = rt.load("model.npuexe")              # or an Executable / (module, weights)
    req = rt.submit(exe, {"x": x})             # or inputs as DeviceBuffers from rt.alloc
    outs = req.wait().outputs                  # req.report: the run report + "host"

Modes, waits and their host costs under Algorithm; every entry point raises
`DeviceError` (a one-line message; `details` for dumps).

Algorithm
---------
Modes (`mode=`): `strict-sync` issues one task at a time and waits for its completion
before the next (debugging: every task runs alone); `graph-async` (default) submits a
graph's tasks to run by their events, one graph at a time in submission order;
`full-async` lets several graphs be in flight on several `Stream`s, each stream in
order (its own lane of each core's queue), streams ordered only by `Event`s
(`stream.record(ev)`, `other.wait_event(ev)`). `queue_depth=N` bounds the command
queue: a graph goes in waves of N descriptors, the next written when the host sees
the previous wave's completion event.

Host waits (`wait=`): `blocking`, `polling` (every `HostModel.poll_interval` cycles) or
`callback` (interrupt-style: `req.on_complete(fn)`); each adds its host-side cycles
(`HostModel`), reported per request under `report["host"]`.

The device is one `sim.engine.Engine` for the runtime's life: a request's tasks join
the cores' in-order queues at submission, held by gates (`sim.engine.Gate`) the host
model opens at simulated times: a wave opens `doorbell + submit_cycles x len` after
the host wrote it (the first wave: after its dependencies' last task, + sync_latency,
on the device); later waves after the host sees the previous one end (`notify`).
The engine runs lazily, when the host waits, up to the time the host sees the
completion, so later submissions overlap what is still running. A gate carries the
vector clock of what it waits for, so the race checker knows host-ordered tasks.

Events. Device-internal: a request's event slots (the compiler's, from 0) move up by
a base from the arch's `event_slots`, allocated while it runs; a graph waits for a
free range. Device-to-host: a pool of `host_events` completion slots, one held per
request from submission until the host has waited on it; exhausting it raises.

Memory. `DeviceHeap` is the device DRAM address space (first fit, `arch.align`).
An executable's weights stay allocated while it is loaded; a request allocates its
arena and I/O buffers at submission and frees them at completion. `free(buf)` of a
buffer a queued request still reads or writes is deferred until the last task of
that request touching it completes (logged at debug level on `npu.runtime`). The
simulator's data for a request lives in a context (a loaded `sim.Program`) reused
by later requests that run after it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from math import ceil
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from npu_dialects import dtypes
from npu_dialects.arch import DRAM_BYTES, Arch, arch_of
from npu_dialects.task import ViewOp
from sim import SimError, SimResult, load_program
from sim.engine import Engine, Gate
from sim.memory import host_values
from sim.program import Program, carried_out
from sim.records import TaskRecord
from sim.values import Values

log = logging.getLogger("npu.runtime")

MODES = ("strict-sync", "graph-async", "full-async")
HELD_DTYPES = tuple(dt for _, _, dt in dtypes.ELEMENT_TYPES.values())
"""The numpy dtypes of the device's element types (`npu_dialects.dtypes`)."""


def _elem_name(dt: np.dtype) -> str:
    """`f32`, `i8`, ... for a held numpy dtype."""
    return next(name for name, (_, _, d) in dtypes.ELEMENT_TYPES.items() if d == dt)
WAIT_STYLES = ("blocking", "polling", "callback")
DEFAULT_WATCHDOG_CYCLES = 100_000_000
"""A task waiting for its events (or running) this long stops the device."""


class DeviceError(Exception):
    """A runtime call that cannot be done: `str(e)` one line, `details` a dump."""

    def __init__(self, message: str, details: str | None = None):
        super().__init__(message)
        self.details = details


@dataclass(frozen=True)
class HostModel:
    """Host-side costs, in device cycles: writing one descriptor into the command
    queue, ringing the doorbell for a batch, a completion interrupt reaching the
    host, a blocked thread waking, an interrupt-style callback, and polling (one
    read of a completion event every `poll_interval`)."""

    submit_cycles: int = 200
    doorbell_cycles: int = 1000
    interrupt_cycles: int = 2000
    wake_cycles: int = 5000
    callback_cycles: int = 500
    poll_interval: int = 1000
    poll_cycles: int = 100

    def notify(self, style: str, end: float, since: float) -> float:
        """When a host waiting (or servicing completions) since `since` in `style` sees
        a completion event the device set at `end`."""
        if end <= since:
            return since + self.poll_cycles  # already set: one read
        if style == "polling":
            return since + ceil((end - since) / self.poll_interval) * self.poll_interval + self.poll_cycles
        if style == "callback":
            return end + self.interrupt_cycles + self.callback_cycles
        return end + self.interrupt_cycles + self.wake_cycles


class DeviceHeap:
    """First-fit allocator of the device DRAM address space (`align`-byte blocks)."""

    def __init__(self, size: int, align: int):
        self.size, self.align = size, align
        self.free_list: list[tuple[int, int]] = [(0, size)]  # (address, bytes), sorted
        self.in_use = self.peak = self.allocations = self.frees = 0

    def alloc(self, nbytes: int, what: str) -> int:
        n = max(self.align, -(-nbytes // self.align) * self.align)
        for i, (addr, size) in enumerate(self.free_list):
            if size >= n:
                self.free_list[i:i + 1] = [(addr + n, size - n)] if size > n else []
                self.in_use += n
                self.peak = max(self.peak, self.in_use)
                self.allocations += 1
                return addr
        raise DeviceError(f"device memory exhausted: {what} needs {nbytes} bytes, {self.size - self.in_use} "
                          f"of {self.size} free (largest block {max((s for _, s in self.free_list), default=0)})")

    def release(self, addr: int, nbytes: int) -> None:
        n = max(self.align, -(-nbytes // self.align) * self.align)
        self.in_use -= n
        self.frees += 1
        blocks = sorted(self.free_list + [(addr, n)])
        merged: list[tuple[int, int]] = []
        for a, s in blocks:
            if merged and merged[-1][0] + merged[-1][1] == a:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((a, s))
        self.free_list = merged


@dataclass(eq=False)
class DeviceBuffer:
    """Device memory the host allocated (`Runtime.alloc`): address, size, contents."""

    addr: int
    nbytes: int
    name: str
    data: np.ndarray
    users: set = field(default_factory=set)  # (request id, local task) still to touch it
    last_user: str = ""
    freed: bool = False  # the host freed it (released once `users` is empty)
    released: bool = False


@dataclass(eq=False)
class Stream:
    """An in-order queue of requests (full-async); `record`/`wait_event` order streams."""

    rt: "Runtime"
    id: int
    last: "Request | None" = None
    waits: list["Event"] = field(default_factory=list)

    def record(self, ev: "Event") -> None:
        """`ev` completes when every request submitted on this stream so far has."""
        ev.after = self.last

    def wait_event(self, ev: "Event") -> None:
        """The next request on this stream starts after `ev` (recorded on another stream)."""
        self.waits.append(ev)


@dataclass(eq=False)
class Event:
    """A user event: the point of a stream it was recorded at."""

    after: "Request | None" = None


@dataclass(eq=False)
class LoadedExecutable:
    """An executable on the device: its program, weights (allocated) and contexts."""

    name: str
    module: ModuleOp
    weights: Mapping[str, np.ndarray]
    arch: Arch
    meta: dict[str, Any]
    weights_addr: int
    weights_bytes: int
    slots: int  # device-internal event slots its tasks use
    contexts: list["_Context"] = field(default_factory=list)


@dataclass(eq=False)
class _Context:
    program: Program
    last: "Request | None" = None


@dataclass(eq=False)
class Request:
    """One submitted run of an executable: `wait()` for it, then `outputs`, `report`."""

    rt: "Runtime"
    id: int
    exe: LoadedExecutable
    ctx: _Context
    stream: Stream | None
    deps: list["Request"]
    waves: list[list[int]]  # global task indices per wave
    submit_time: float
    buffers: list[tuple[int, int, str]] = field(default_factory=list)  # (addr, bytes, what) it allocated
    bound_in: dict[str, DeviceBuffer] = field(default_factory=dict)
    bound_out: dict[str, DeviceBuffer] = field(default_factory=dict)
    slot_base: int | None = None
    wave: int = 0  # the wave in flight
    wave_left: int = 0
    wave_written: float = 0.0
    first_release: float | None = None
    device_end: float | None = None
    observed: float | None = None
    host_cycles: dict[str, float] = field(default_factory=lambda: {"submit": 0.0, "notify": 0.0})
    vc: list[int] | None = None
    callbacks: list[Callable[["Request"], None]] = field(default_factory=list)
    outputs_raw: dict[str, np.ndarray] | None = None  # the outputs when its last task ended
    outputs: dict[str, np.ndarray] | None = None  # ... once the host has seen the completion
    report: dict[str, Any] | None = None
    records: list[TaskRecord] = field(default_factory=list)  # its tasks, times from its first release
    captured: list[tuple[list[str], np.ndarray]] = field(default_factory=list)  # (ONNX nodes, value) per alloc
    capture_plan: tuple[list[list[int]], list[int]] | None = None  # allocs per task, tasks left per alloc

    def profile(self, top: int = 10) -> dict[str, Any]:
        """`runtime.profile.profile` of this (waited) request."""
        from runtime.profile import profile
        assert self.report is not None, "wait for the request first"
        return profile(self.records, self.exe.arch, self.report["cycles"],
                       sum(r.dram_bytes_moved for r in self.records), top)

    @property
    def done(self) -> bool:
        """The host has seen it complete (`wait`, or a poll that found it)."""
        return self.outputs is not None

    def wait(self, style: str | None = None) -> "Request":
        return self.rt.wait(self, style)

    def on_complete(self, fn: Callable[["Request"], None]) -> None:
        """Call `fn(request)` when the host sees the completion (interrupt-style)."""
        self.callbacks.append(fn)


class Runtime:
    """The host side of one simulated device (see the module docstring).

    Options: `arch` (default: the first executable's), `mode`, `queue_depth` (None: the
    whole command buffer at once), `wait` (the default wait style), `host` (HostModel),
    `watchdog_cycles` (None: off), `host_events` (the completion-event pool),
    `device_bytes` (the DRAM address space, `DRAM_BYTES`), `sanitize`/`check_races` (simulator
    checks), `trace` (keep a Chrome trace of the device: `Runtime.trace_json()`), `timing_only`
    (the same timing without data: inputs may be omitted, outputs are empty; `sim.simulate`)."""

    def __init__(self, arch: Arch | None = None, *, mode: str = "graph-async", queue_depth: int | None = None,
                 wait: str = "blocking", host: HostModel | None = None,
                 watchdog_cycles: int | None = DEFAULT_WATCHDOG_CYCLES, host_events: int = 16,
                 device_bytes: int = DRAM_BYTES, sanitize: bool = False, check_races: bool = True,
                 trace: bool = False, capture: bool = False, timing_only: bool = False):
        if mode not in MODES:
            raise DeviceError(f"unknown run mode '{mode}' (expected one of {', '.join(MODES)})")
        if wait not in WAIT_STYLES:
            raise DeviceError(f"unknown wait style '{wait}' (expected one of {', '.join(WAIT_STYLES)})")
        if queue_depth is not None and queue_depth < 1:
            raise DeviceError(f"queue depth must be at least 1, got {queue_depth}")
        if host_events < 1:
            raise DeviceError(f"the completion-event pool needs at least 1 slot, got {host_events}")
        if watchdog_cycles is not None and watchdog_cycles < 1:
            raise DeviceError(f"the watchdog budget must be at least 1 cycle, got {watchdog_cycles}")
        self.arch = arch
        self.mode, self.queue_depth, self.wait_style = mode, queue_depth, wait
        self.host = host or HostModel()
        self.watchdog, self.host_events = watchdog_cycles, host_events
        self.device_bytes, self.sanitize, self.check_races, self.trace = device_bytes, sanitize, check_races, trace
        self.capture = capture
        self.timing_only = timing_only
        self.heap: DeviceHeap | None = None
        self.eng: Engine | None = None
        self.values = Values()
        self.time = 0.0  # the host's clock, in device cycles
        self.requests: list[Request] = []  # submitted, not yet waited on
        self.owner: dict[int, tuple[Request, int]] = {}  # global task -> (request, local index)
        self.slot_ranges: list[tuple[int, int]] = []  # device event slots held by running requests
        self.streams: list[Stream] = []
        self.buffers: list[DeviceBuffer] = []  # live host allocations
        self.deferred_total = 0
        self.faults: list[tuple[str, int]] = []
        self.failed: str | None = None
        self._last_done: Request | None = None  # the request the host saw complete last
        self._ids = 0
        self.default_stream = self.stream()

    # ------------------------------------------------------------------ device
    def _device(self, arch: Arch) -> Engine:
        if self.eng is None:
            self.arch = self.arch or arch
            self.heap = DeviceHeap(self.device_bytes, self.arch.align)
            self.eng = Engine(None, self.trace, self.check_races, self.sanitize, arch=self.arch,
                              values=self.values, on_done=self._task_done, watchdog=self.watchdog,
                              timing_only=self.timing_only)
        assert self.arch is not None
        if arch != self.arch:
            raise DeviceError(f"the executable was compiled for arch '{arch.spec()}' but the device is "
                              f"'{self.arch.spec()}'")
        return self.eng

    def _check(self) -> None:
        if self.failed is not None:
            raise DeviceError(f"the device stopped earlier ({self.failed}); create a new Runtime")

    def load(self, exe: Any, weights: Mapping[str, np.ndarray] | None = None, name: str = "",
             arch: Arch | None = None) -> LoadedExecutable:
        """Load an executable: a `.npuexe` path, a `runtime.executable.Executable`, or
        a task-level module with `weights` (run on `arch`, default its `npu.arch`).
        Its weights are allocated on the device."""
        self._check()
        meta: dict[str, Any] = {}
        if isinstance(exe, str):
            from runtime.executable import ExecutableError, read_executable
            try:
                exe = read_executable(exe)
            except ExecutableError as e:
                raise DeviceError(str(e)) from None
        if isinstance(exe, ModuleOp):
            module, weights, arch = exe, weights or {}, arch or arch_of(exe)
        else:
            module, weights, arch, meta = exe.module, exe.weights, exe.arch, dict(exe.meta)
        assert arch is not None and weights is not None
        self._device(arch)
        assert self.heap is not None
        try:
            program = load_program(module, weights, arch, values=self.values,  # (value ids the engine names)
                                   timing_only=self.timing_only)
        except SimError as e:
            raise DeviceError(str(e), e.details) from None
        slots = max((s + 1 for t in program.tasks for s in (*t.op.wait_slots, *t.op.signal_slots)), default=0)
        label = name or meta.get("name") or f"executable {len(self.streams)}"
        addr = self.heap.alloc(program.weights_bytes, f"the weights of {label}")
        log.debug("load %s: weights at 0x%x, %d bytes", label, addr, program.weights_bytes)
        loaded = LoadedExecutable(label, module, weights, arch, meta, addr, program.weights_bytes, slots)
        loaded.contexts.append(_Context(program))
        return loaded

    def unload(self, exe: LoadedExecutable) -> None:
        """Free an executable's weights (after every request using it completed)."""
        if any(r.exe is exe for r in self.requests):
            raise DeviceError(f"{exe.name} still has requests the host has not waited on")
        assert self.heap is not None
        self.heap.release(exe.weights_addr, exe.weights_bytes)
        exe.contexts.clear()

    # ------------------------------------------------------------------ memory
    def alloc(self, nbytes: int, name: str = "") -> DeviceBuffer:
        """A device buffer of `nbytes` (aligned to the arch's `align`)."""
        self._check()
        if self.heap is None:
            raise DeviceError("no executable is loaded yet (the device's arch is not known)")
        what = name or f"buffer {len(self.buffers)}"
        buf = DeviceBuffer(self.heap.alloc(nbytes, what), nbytes, what, np.zeros(nbytes, dtype=np.uint8))
        self.buffers.append(buf)
        return buf

    def write(self, buf: DeviceBuffer, array: np.ndarray) -> None:
        """Host -> device: copy `array` into `buf`, as the bytes of its own element type
        when the device holds it (float32, float16, bfloat16, int8, uint8, int32), else
        as float32 (float64, int64: carried as f32)."""
        array = np.asarray(array)
        dtype = array.dtype if array.dtype in HELD_DTYPES else np.dtype(np.float32)
        raw = np.ascontiguousarray(array, dtype=dtype).view(np.uint8).reshape(-1)
        if buf.released or buf.freed:
            raise DeviceError(f"write to {buf.name} at 0x{buf.addr:x}, which the host freed")
        if raw.size != buf.nbytes:
            raise DeviceError(f"write of {raw.size} bytes into {buf.name} of {buf.nbytes} bytes")
        buf.data[...] = raw

    def read(self, buf: DeviceBuffer, shape: tuple[int, ...] | None = None,
             dtype: np.dtype | type = np.float32) -> np.ndarray:
        """Device -> host: `buf` as `dtype` elements (float32 by default; reshaped to `shape`)."""
        arr = buf.data.view(dtype).copy()
        return arr.reshape(shape) if shape is not None else arr

    def free(self, buf: DeviceBuffer) -> None:
        """Free `buf`: now, or when the last queued task using it completes (deferred)."""
        if buf.freed:
            raise DeviceError(f"double free of {buf.name} at 0x{buf.addr:x}")
        buf.freed = True
        if buf.users:
            self.deferred_total += 1
            log.debug("free %s at 0x%x (%d bytes) deferred: %d queued task(s) still use it",
                      buf.name, buf.addr, buf.nbytes, len(buf.users))
            return
        self._release(buf, "")

    def _release(self, buf: DeviceBuffer, last: str) -> None:
        assert self.heap is not None
        self.heap.release(buf.addr, buf.nbytes)
        buf.released = True
        self.buffers.remove(buf)
        log.debug("release %s at 0x%x, %d bytes%s", buf.name, buf.addr, buf.nbytes,
                  f" (deferred; last task {last})" if last else "")

    def stats(self) -> dict[str, int]:
        """Device memory: allocations and frees so far, peak and in-use bytes, buffers
        whose free is deferred now (`deferred`) and ever (`deferred_total`), live
        host buffers, requests not yet waited on."""
        h = self.heap
        return {"allocations": h.allocations if h else 0, "frees": h.frees if h else 0,
                "peak_bytes": h.peak if h else 0, "in_use_bytes": h.in_use if h else 0,
                "deferred": sum(1 for b in self.buffers if b.freed), "deferred_total": self.deferred_total,
                "live_buffers": len(self.buffers), "pending_requests": len(self.requests)}

    # ------------------------------------------------------------------ streams
    def stream(self) -> Stream:
        s = Stream(self, len(self.streams))
        self.streams.append(s)
        return s

    def event(self) -> Event:
        return Event()

    def inject_fault(self, kind: str, task: int) -> None:
        """Testing: make task `task` (program order) of the next request `hang` (never
        finish) or `drop-signal` (signal nothing)."""
        if kind not in ("hang", "drop-signal"):
            raise DeviceError(f"unknown fault '{kind}' (expected hang or drop-signal)")
        self.faults.append((kind, task))

    # ------------------------------------------------------------------ submission
    def submit(self, exe: LoadedExecutable, inputs: Mapping[str, Any], stream: Stream | None = None,
               outputs: Mapping[str, DeviceBuffer] | None = None) -> Request:
        """Submit one run of `exe` on `inputs` (arrays keyed by ONNX input name, or
        DeviceBuffers), on `stream` (full-async; default: the default stream).
        `outputs` binds DeviceBuffers the outputs are copied into."""
        self._check()
        eng = self._device(exe.arch)
        if len(self.requests) >= self.host_events:
            raise DeviceError(f"the device-to-host completion event pool is exhausted: {len(self.requests)} "
                              f"requests hold one until the host waits on them (wait on a request first, or "
                              f"create the Runtime with host_events > {self.host_events})")
        stream = stream or self.default_stream
        deps = self._deps(stream)
        ctx = self._context(exe)
        if ctx.last is not None and ctx.last not in deps:
            deps.append(ctx.last)
        self._ids += 1
        req = Request(self, self._ids, exe, ctx, stream, deps, [], self.time)
        self._bind(req, inputs, outputs or {})
        gates = [Gate() for _ in ctx.program.tasks]
        first = len(eng.tasks)
        eng.add(ctx.program.tasks, gates, lane=stream.id if self.mode == "full-async" else 0)
        for kind, k in self.faults:
            if 0 <= k < len(ctx.program.tasks):
                if kind == "hang":
                    eng.hung.add(first + k)
                else:
                    ctx.program.tasks[k].signals = []
        self.faults.clear()
        n = len(ctx.program.tasks)
        depth = 1 if self.mode == "strict-sync" else (self.queue_depth or max(n, 1))
        req.waves = [list(range(first + i, first + min(i + depth, n))) for i in range(0, n, depth)] or [[]]
        for i in range(first, first + n):
            self.owner[i] = (req, i - first)
        self._users(req)
        if self.capture:
            req.capture_plan = _capture_plan(ctx.program)
        self.time = req.wave_written = self._write_wave(req, 0, self.time)
        ctx.last = req
        stream.last = req
        self.requests.append(req)
        self._activate_ready()
        return req

    def _deps(self, stream: Stream) -> list[Request]:
        if self.mode != "full-async":
            last = self.requests[-1] if self.requests else self._last_done
            return [last] if last is not None else []
        deps = [stream.last] if stream.last is not None else []
        deps += [ev.after for ev in stream.waits if ev.after is not None and ev.after not in deps]
        stream.waits.clear()
        return deps

    def _context(self, exe: LoadedExecutable) -> _Context:
        """A context whose last request has run on the device, else a new one."""
        for ctx in exe.contexts:
            if ctx.last is None or ctx.last.device_end is not None:
                return ctx
        try:
            program = load_program(exe.module, exe.weights, exe.arch, values=self.values,
                                   timing_only=self.timing_only)
        except SimError as e:
            raise DeviceError(str(e), e.details) from None
        ctx = _Context(program)
        exe.contexts.append(ctx)
        return ctx

    def _bind(self, req: Request, inputs: Mapping[str, Any], outputs: Mapping[str, DeviceBuffer]) -> None:
        """Write the inputs into the request's input buffers (host -> device) and allocate
        its arena and the I/O buffers the host did not bind."""
        from runtime.run import RunError, validate_inputs
        prog = req.ctx.program
        arrays = {k: v for k, v in inputs.items() if not isinstance(v, DeviceBuffer)}
        bound = {k: v for k, v in inputs.items() if isinstance(v, DeviceBuffer)}
        held = {name: b for (name, _), b in zip(prog.sig.inputs, prog.inputs)}
        for name, buf in bound.items():
            if buf.freed:
                raise DeviceError(f"input '{name}' is bound to {buf.name}, which the host freed")
            shape = dict(prog.sig.inputs).get(name)
            if shape is not None:
                b = held[name]
                if buf.nbytes != b.nbytes:
                    raise DeviceError(f"input '{name}' is bound to {buf.name} of {buf.nbytes} bytes, the model "
                                      f"reads {list(shape)} {_elem_name(b.dtype)} ({b.nbytes} bytes)")
                arrays[name] = buf.data.view(b.dtype).reshape(shape)
        try:
            checked = validate_inputs(prog.sig, arrays) if arrays or not self.timing_only else {}
        except RunError as e:
            raise DeviceError(str(e)) from None
        unknown = [k for k in outputs if k not in dict(prog.sig.outputs)]
        if unknown:
            raise DeviceError(f"unknown output '{unknown[0]}' (the model's outputs: "
                              f"{', '.join(n for n, _ in prog.sig.outputs)})")
        assert self.heap is not None and self.eng is not None
        for (name, _), b in zip(prog.sig.inputs, prog.inputs):
            if name in checked:
                try:
                    b.arr[...] = host_values(b.dtype, checked[name])
                except ValueError as e:
                    raise DeviceError(f"input '{name}' {e}") from None
                self.eng.san.host_write(b)
        req.bound_in, req.bound_out = dict(bound), dict(outputs)
        what = f"request {req.id} of {req.exe.name}"
        need = [(prog.arena_bytes, f"the arena of {what}")]
        need += [(b.nbytes, f"input '{n}' of {what}") for (n, _), b in zip(prog.sig.inputs, prog.inputs)
                 if n not in bound]
        need += [(b.nbytes, f"output '{n}' of {what}") for (n, _), b in zip(prog.sig.outputs, prog.outputs)
                 if n not in outputs]
        for nbytes, label in need:
            req.buffers.append((self.heap.alloc(nbytes, label), nbytes, label))

    def _users(self, req: Request) -> None:
        """Mark each bound buffer used by the request's tasks touching its region."""
        prog = req.ctx.program
        regions = {n: b.region.name for (n, _), b in zip(prog.sig.inputs, prog.inputs)}
        regions.update({n: b.region.name for (n, _), b in zip(prog.sig.outputs, prog.outputs)})
        for name, buf in (*req.bound_in.items(), *req.bound_out.items()):
            for k, t in enumerate(prog.tasks):
                if regions[name] in t.touches:
                    buf.users.add((req.id, k))

    def _write_wave(self, req: Request, w: int, at: float) -> float:
        """The host writes wave `w` into the command queue from `at`; returns when the
        doorbell has rung."""
        cost = self.host.doorbell_cycles + self.host.submit_cycles * len(req.waves[w])
        req.host_cycles["submit"] += cost
        return at + cost

    def _activate_ready(self) -> None:
        """Start each request whose dependencies completed on the device and for which
        device event slots are free: open its first wave's gates."""
        assert self.eng is not None
        for req in self.requests:
            if req.first_release is not None or any(d.device_end is None for d in req.deps):
                continue
            base = self._slot_range(req.exe.slots)
            if base is None:
                continue  # waits for a running graph to free event slots
            req.slot_base = base
            eng = self.eng
            for w in req.waves:
                for i in w:
                    t = eng.tasks[i]
                    t.waits = [base + s for s in t.waits]  # (from 0 as queued; a dropped signal stays dropped)
                    t.signals = [base + s for s in t.signals]
            assert self.arch is not None
            ready = max([req.wave_written, eng.now] + [d.device_end + self.arch.sync_latency for d in req.deps
                                                       if d.device_end is not None])
            vc = _join([d.vc for d in req.deps])
            req.first_release = ready
            self._open(req, 0, ready, vc)

    def _slot_range(self, n: int) -> int | None:
        assert self.arch is not None
        if n > self.arch.event_slots:
            raise DeviceError(f"an executable uses {n} event slots but the device has {self.arch.event_slots}")
        base = 0
        for lo, hi in sorted(self.slot_ranges):
            if base + n <= lo:
                break
            base = max(base, hi)
        if base + n > self.arch.event_slots:
            return None
        self.slot_ranges.append((base, base + n))
        return base

    def _open(self, req: Request, w: int, at: float, vc: list[int] | None) -> None:
        assert self.eng is not None
        req.wave, req.wave_left = w, len(req.waves[w])
        for i in req.waves[w]:
            g = self.eng.gates[i]
            assert g is not None
            g.time, g.vc = at, tuple(vc) if vc is not None else None
        if not req.waves[w]:
            self._request_end(req, at)

    def _task_done(self, index: int, now: float) -> None:
        """Engine callback as a task ends: deferred releases, wave refills, completion."""
        req, k = self.owner.pop(index)
        assert self.eng is not None
        t = self.eng.tasks[index]
        req.vc = _join([req.vc, self.eng.cores[t.core].vc])
        for buf in (*req.bound_in.values(), *req.bound_out.values()):
            if (req.id, k) in buf.users:
                buf.users.discard((req.id, k))
                buf.last_user = t.label()
                if buf.freed and not buf.users and not buf.released:
                    self._release(buf, buf.last_user)
        if req.capture_plan is not None:
            self._capture(req, k)
        req.wave_left -= 1
        if req.wave_left:
            return
        if req.wave + 1 < len(req.waves):
            seen = self.host.notify(self.wait_style, now, req.wave_written)
            req.host_cycles["notify"] += seen - now
            req.wave_written = self._write_wave(req, req.wave + 1, seen)
            self._open(req, req.wave + 1, req.wave_written, req.vc)
            return
        self._request_end(req, now, t.label())

    def _capture(self, req: Request, k: int) -> None:
        """Keep each DRAM alloc's value once the tasks writing it have run (`_capture_plan`;
        the memory plan may give its bytes to another value while it is still read)."""
        assert req.capture_plan is not None
        per_task, left = req.capture_plan
        allocs = req.ctx.program.allocs
        for a in per_task[k]:
            left[a] -= 1
            if left[a] == 0:
                req.captured.append((allocs[a][2], allocs[a][1].arr.copy()))

    def _request_end(self, req: Request, now: float, last: str = "none") -> None:
        """The request's last task ended at `now`: keep its outputs, free its device
        memory and event slots, start what waited for it."""
        req.device_end = now
        prog = req.ctx.program
        req.outputs_raw = {} if self.timing_only else {
            n: b.arr.copy() for (n, _), b in zip(prog.sig.outputs, prog.outputs)}
        for name, buf in req.bound_out.items():
            if not buf.released and name in req.outputs_raw:
                buf.data[...] = req.outputs_raw[name].view(np.uint8).reshape(-1)
        assert self.heap is not None and self.eng is not None
        for addr, nbytes, what in req.buffers:
            self.heap.release(addr, nbytes)
            log.debug("release %s at 0x%x, %d bytes (last task %s)", what, addr, nbytes, last)
        req.buffers.clear()
        if req.slot_base is not None:
            self._drop_slots(req)
        self.eng.san.finish(prog.outputs)
        self._activate_ready()

    def _drop_slots(self, req: Request) -> None:
        """Free the request's event slots; a signal nobody consumed is a warning (it
        would confuse the next graph given the range)."""
        assert req.slot_base is not None and self.eng is not None
        lo, hi = req.slot_base, req.slot_base + req.exe.slots
        for s in range(lo, hi):
            for sig in self.eng.slots.pop(s, []):
                self.eng.warnings.append(f"event slot {s - lo} signalled by {sig.task.where} at cycle "
                                         f"{sig.time:g} is never waited on")
        self.slot_ranges.remove((lo, hi))

    # ------------------------------------------------------------------ waiting
    def _run(self, until: Callable[[], bool]) -> None:
        """Run the device until `until()` or it idles; a fault stops the device."""
        assert self.eng is not None
        try:
            self.eng.run(until)
        except SimError as e:
            self.failed = str(e)
            raise DeviceError(str(e), e.details) from None

    def _advance_to(self, t: float) -> None:
        """Run the device up to host time `t`."""
        assert self.eng is not None
        eng = self.eng
        eng.stop_at = t
        self._run(lambda: eng.now >= t)
        eng.stop_at = None
        if eng.now < t:
            eng.advance(t)  # (idle: nothing in flight)

    def wait(self, req: Request, style: str | None = None) -> Request:
        """Block the host until it sees `req` complete (`style`: the runtime's default
        wait style, or blocking / polling / callback); returns `req` with `outputs` and
        `report`. Its completion event goes back to the pool."""
        self._check()
        if req.done:
            return req
        if req not in self.requests:
            raise DeviceError(f"request {req.id} does not belong to this runtime")
        style = style or self.wait_style
        if style not in WAIT_STYLES:
            raise DeviceError(f"unknown wait style '{style}' (expected one of {', '.join(WAIT_STYLES)})")
        since = self.time
        self._run(lambda: req.device_end is not None)
        if req.device_end is None:
            raise DeviceError(f"request {req.id} of {req.exe.name} can never complete: the device is idle "
                              f"and {sum(1 for r, _ in self.owner.values() if r is req)} of its tasks never ran")
        seen = self.host.notify(style, req.device_end, since)
        self._advance_to(seen)
        self.time = max(self.time, seen)
        self._finish(req, seen, style)
        self._deliver()
        return req

    def poll(self, req: Request) -> bool:
        """One host poll of `req`'s completion event (costs `poll_cycles`): True once
        it completed (the request is then done, as after `wait`)."""
        self._check()
        if req.done:
            return True
        self.time += self.host.poll_cycles
        self._advance_to(self.time)
        if req.device_end is not None and req.device_end <= self.time:
            self._finish(req, self.time, "polling")
            return True
        return False

    def synchronize(self) -> None:
        """Wait for every request submitted so far, in submission order."""
        for req in list(self.requests):
            self.wait(req)

    def _deliver(self) -> None:
        """Interrupt-style completions the device has reached: run their callbacks."""
        assert self.eng is not None
        for req in list(self.requests):
            if req.callbacks and req.device_end is not None:
                seen = self.host.notify("callback", req.device_end, req.submit_time)
                if seen <= self.eng.now:
                    self._finish(req, seen, "callback")

    @staticmethod
    def _host_output(req: Request, name: str, a: np.ndarray) -> np.ndarray:
        """An output as the host receives it: an f32 buffer's array as it is (as always), a
        typed buffer's in the model's ONNX type of that output (`sim.program.carried_out`)."""
        if a.dtype == np.float32:
            return a
        return carried_out(a, req.ctx.program.sig.output_dtypes.get(name, a.dtype.name))

    def _finish(self, req: Request, seen: float, style: str) -> None:
        """The host saw `req` complete at `seen`: outputs, report, callbacks, and its
        completion event back to the pool."""
        assert req.outputs_raw is not None and req.device_end is not None
        req.observed = seen
        req.host_cycles["notify"] += seen - req.device_end if seen > req.device_end else 0.0
        req.outputs = {name: self._host_output(req, name, a) for name, a in req.outputs_raw.items()}
        req.report = self._report(req, style)
        self.requests.remove(req)
        self._last_done = req
        assert self.eng is not None
        self.eng.dump_from = min((r.waves[0][0] for r in self.requests if r.waves[0]), default=len(self.eng.tasks))
        for fn in req.callbacks:
            fn(req)

    def _report(self, req: Request, style: str) -> dict[str, Any]:
        """The run report of one request (`runtime.run.make_report`, times from the
        release of its first wave) plus `host`: mode, waves, host-side cycles."""
        from runtime.run import make_report
        assert self.eng is not None and self.arch is not None and req.device_end is not None
        t0 = req.first_release or 0.0
        recs = [self.eng.records[i] for w in req.waves for i in w]
        shifted = [_shift(r, t0) for r in recs if r is not None]
        cores = self.arch.cores
        busy: dict[str, list[float]] = {u: [0.0] * cores for u in ("cube", "vector", "dma")}
        for r in shifted:
            for u in ("cube", "vector"):
                busy[u][r.core] += r.compute_cycles[u]
        end = max((r.end for r in shifted), default=0.0)
        res = SimResult(arch=self.arch, outputs=req.outputs or {}, cycles=int(ceil(end - 1e-9)) if end > 0 else 0,
                        tasks=shifted, dram_bytes_read=sum(r.dram_bytes_read for r in shifted),
                        dram_bytes_written=sum(r.dram_bytes_written for r in shifted),
                        dram_bytes_transferred=sum(r.dram_bytes_moved for r in shifted), dram_busy_cycles=0.0,
                        busy=busy, warnings=list(self.eng.warnings), layout=req.ctx.program.layout)
        req.records = shifted
        report = make_report(res, req.exe.module)
        submit, notify = req.host_cycles["submit"], req.host_cycles["notify"]
        depth = max(len(w) for w in req.waves) if len(req.waves) > 1 else None
        report["host"] = {"mode": self.mode, "wait": style, "queue_depth": depth,
                          "waves": len(req.waves), "submit_cycles": round(submit), "notify_cycles": round(notify),
                          "overhead_cycles": round(submit + notify),
                          "end_to_end_cycles": int(ceil((req.observed or req.device_end) - req.submit_time - 1e-9)),  # (as `cycles`)
                          "stream": req.stream.id if req.stream else 0}
        return report

    def run(self, exe: LoadedExecutable, inputs: Mapping[str, Any], style: str | None = None) -> Request:
        """Submit and wait: one run of `exe`."""
        return self.wait(self.submit(exe, inputs), style)

    def trace_json(self) -> dict[str, Any]:
        """The device's Chrome trace so far (`trace=True`)."""
        assert self.eng is not None
        return self.eng.trace.to_json()


def _capture_plan(prog: Program) -> tuple[list[list[int]], list[int]]:
    """Per task the allocs it captures, per alloc how many tasks before its value is
    kept: the tasks whose DMA copies write it (once they all ran the value is complete;
    later its bytes may hold another alloc's value, e.g. an add written in place over
    its input), else every task using it (directly or through views)."""
    index = {v: i for i, (v, _, _) in enumerate(prog.allocs)}
    used: list[set[int]] = []
    written: list[set[int]] = []
    for t in prog.tasks:
        used.append({i for i in (index.get(_root(v)) for v in t.uses) if i is not None})
        written.append({i for i in (index.get(_root(v)) for v in _dram_writes(t.op)) if i is not None})
    has_writer = set().union(*written) if written else set()
    per_task = [sorted(w | {a for a in u if a not in has_writer}) for u, w in zip(used, written)]
    left = [0] * len(prog.allocs)
    for allocs in per_task:
        for a in allocs:
            left[a] += 1
    return per_task, left


def _root(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, ViewOp):
        v = v.owner.source
    return v


def _dram_writes(task: Operation) -> list[SSAValue]:
    """The DRAM buffers a task's DMA copies write."""
    from npu_dialects.dma import CopyOp, memory_space
    return [op.dst for op in task.walk() if isinstance(op, CopyOp) and memory_space(op.dst.type) == "dram"]


def _join(vcs: list[Any]) -> list[int] | None:
    out: list[int] | None = None
    for v in vcs:
        if v is None:
            continue
        out = list(v) if out is None else [max(a, b) for a, b in zip(out, v)]
    return out


def _shift(r: TaskRecord, t0: float) -> TaskRecord:
    """A copy of a task record with its times from `t0`."""
    return replace(r, ready=r.ready - t0, start=r.start - t0, end=r.end - t0)


def run_module(module: ModuleOp, weights: Mapping[str, np.ndarray], inputs: Mapping[str, Any],
               arch: Arch | None = None, *, wait: str | None = None, trace: bool = False,
               **options: Any) -> tuple[Request, Runtime]:
    """One run of a task-level module on a fresh Runtime (`options`: its keyword
    options, e.g. `mode`, `queue_depth`, `watchdog_cycles`, `sanitize`); returns the
    waited request (`outputs`, `report`) and the runtime (`trace_json()`, `stats()`).
    Raises DeviceError."""
    rt = Runtime(arch, trace=trace, **options)
    exe = rt.load(module, weights, arch=arch)
    return rt.run(exe, inputs, wait), rt

"""The memory checker: a value sanitizer over DRAM and every core's SRAM, and the
DRAM race detector, as one shadow-memory checker the engine calls on every
access.

Values: every buffer the program names is one *value*; a read must find every byte
it reads holding the value of the buffer it reads through, else the run stops with
a `SimError` naming the reading op and task, the value expected, the value found
and its writer, and the address range. At the end every model output must hold its
value; weights are read-only (a write into them is an error). Races (DRAM): a DMA
that touches an element another task wrote (or read, for a write) must be ordered
after that task by queue order or events, whatever the timing happened to be this
run. Races are always checked unless turned off; the value checks run with
`sanitize` (`npu-run --sanitize`, every test run).

Algorithm
---------
Values. Every buffer the program names is one *value* (`sim.memory.Buf.value`):
a model input or output, a weight, an `npu_task.alloc` (an alloc that takes
another's bytes in place, `reuse(%r)`, is a value of its own), and in a task an
`npu_task.sram` buffer - all `npu_task.sram` ops of a task with the same
`value` attribute are views of one value, one without it is a value of its
own; a `npu_task.view` is its source's value. Shadow memory records, per granule
of every region (4 bytes; the smallest element size of a module holding 1- or
2-byte buffers), which value it holds and which write put it there.

- a write (a DMA landing, a compute op's output) makes the bytes it writes hold
  the written buffer's value;
- a read (a DMA's source when it lands, a compute op's inputs when it starts)
  must find every byte holding the value of the buffer it reads through. If
  not, the bytes were never written, or a write of another value destroyed the
  value while it still had this reader: the run stops with a `SimError` naming
  the reading op and task, the value it expected and its ONNX node, the value
  found and the op, task and ONNX node that wrote it, and the address range;
- at the end, every model output must hold its value (nothing overwrote it);
- weights are read-only: they keep no shadow, and a write into them is an error.

A destroyed value is reported at its first later read (the first point where the
destruction is observable; a value no one reads again may be overwritten).

Races (DRAM): per element the last writing and last reading task; a DMA that
touches an element another task wrote (or read, for a write) must be ordered
after that task by queue order or events (vector clocks).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Protocol

import numpy as np

from sim.errors import SimError
from sim.memory import HOST, Buf, CopyPlan, fmt_slices
from sim.values import NOTHING, Values

if TYPE_CHECKING:
    from sim.interp import OpInfo, TaskProgram
    from sim.records import Dma, TaskRecord


class RunState(Protocol):
    """What the sanitizer reads of the engine running it (`sim.engine.Engine`): the
    clock, the tasks and their records, the happens-before order of two tasks."""

    now: float
    tasks: list[TaskProgram]
    records: list[TaskRecord | None]

    def hb(self, w: int, t: int) -> bool: ...

class Write:
    """Who wrote: the task (HOST for the initial contents), the op and when."""

    __slots__ = ("task", "info", "cycle", "what")

    def __init__(self, task: int, info: "OpInfo | None", cycle: float, what: str):
        self.task, self.info, self.cycle, self.what = task, info, cycle, what

    def describe(self) -> str:
        if self.info is None:
            return self.what
        return f"{self.info.where} at cycle {self.cycle:g}"


class Sanitizer:
    """Shadow memory of one run (see the module docstring)."""

    def __init__(self, eng: RunState, values: Values, sanitize: bool, races: bool):
        # (a proxy: the engine holds its sanitizer, and a cycle between them would keep a
        # finished run's whole program - closures, buffers, records - until the cyclic
        # collector's next full pass, a pause of ~0.1 s on ResNet-50 charged to later work)
        self.eng = weakref.proxy(eng)
        self.values = values
        self.sanitize = sanitize
        self.races = races
        self.writes: list[Write] = [Write(HOST, None, 0.0, "nothing")]
        self.host = self._record(Write(HOST, None, 0.0, "the host (initial contents)"))

    def _record(self, w: Write) -> int:
        self.writes.append(w)
        return len(self.writes) - 1

    # ------------------------------------------------------------------ initial contents
    def host_write(self, buf: Buf) -> None:
        """The host wrote `buf` whole (an input, a weight) before any task ran."""
        if self.sanitize and not buf.region.readonly:
            vals, who = buf.value_shadows()
            vals[...] = buf.value
            who[...] = self.host

    # ------------------------------------------------------------------ accesses
    def dma(self, d: "Dma") -> None:
        """DMA `d` lands: check its read, then record its write."""
        plan = d.plan
        if self.races:
            self.race_check(d)
        if not self.sanitize:
            return
        if plan.nbytes:
            self.check_read(plan.src, plan.src_sl, plan.info, d.task.index, "reads")
        wsl = plan.written_slices()
        if wsl is not None:
            self.write(plan.dst, wsl, plan.info, d.task.index)

    def compute(self, info: "OpInfo", bufs: list[Buf], task: int) -> None:
        """Compute op `info` starts: its inputs (every operand but the last) are read,
        its output (the last) written."""
        if not self.sanitize:
            return
        out = bufs[-1]
        for b in bufs[:-1]:
            if b is not out:
                self.check_read(b, None, info, task, "reads")
        self.write(out, None, info, task)

    def write(self, buf: Buf, sl: tuple | None, info: "OpInfo", task: int) -> None:
        if buf.region.readonly:
            raise SimError(f"sanitizer: {info.where} writes {buf.desc} in the DRAM {buf.region.name} region, "
                           "which only the host writes")
        vals, who = buf.value_shadows()
        rec = self._record(Write(task, info, self.eng.now, ""))
        if sl is None:
            vals[...] = buf.value
            who[...] = rec
        else:
            vals[sl] = buf.value
            who[sl] = rec

    def check_read(self, buf: Buf, sl: tuple | None, info: "OpInfo", task: int, verb: str) -> None:
        if buf.region.readonly:  # (weights: no task writes them, see `write`)
            return
        vals, _ = buf.value_shadows()
        seen = vals if sl is None else vals[sl]
        if seen.size and (seen != buf.value).any():
            raise self.violation(buf, sl, info, task, verb)

    def finish(self, outputs: list[Buf]) -> None:
        """At the end of the run: every model output holds its value."""
        if not self.sanitize:
            return
        for buf in outputs:
            vals, _ = buf.value_shadows()
            if (vals != buf.value).any():
                raise self.violation(buf, None, None, -1, "")

    # ------------------------------------------------------------------ diagnostics
    def violation(self, buf: Buf, sl: tuple | None, info: "OpInfo | None", task: int, verb: str) -> SimError:
        vals, who = buf.value_shadows()
        g = buf.region.granule
        elems = np.arange(buf.nbytes // g, dtype=np.int64).reshape(vals.shape) + buf.off // g
        if sl is not None:
            vals, who, elems = vals[sl], who[sl], elems[sl]
        bad = (vals != buf.value).ravel()
        first = int(np.argmax(bad))
        found, writer = int(vals.ravel()[first]), self.writes[int(who.ravel()[first])]
        addrs = elems.ravel()[first:]
        run = ((vals.ravel()[first:] == found) & bad[first:]
               & (np.diff(addrs, prepend=addrs[0] - 1) == 1))  # (the first contiguous run of them)
        end = int(np.argmin(run)) if not run.all() else len(run)
        lo, hi = int(addrs[0]) * g, int(addrs[end - 1]) * g + g
        region = buf.region
        where = f"bytes [{lo}, {hi}) of {region.name}"
        expected = self.values.name(buf.value)
        reader = info.where if info is not None else f"the end of the run ({buf.desc})"
        if info is None and found == NOTHING:
            msg = f"sanitizer: {expected} is returned with {where} never written"
        elif info is None:
            msg = (f"sanitizer: {expected} is returned with {where} overwritten by {writer.describe()} "
                   f"with {self.values.name(found)}")
        elif found == NOTHING:
            msg = (f"sanitizer: {reader} {verb} {where} expecting {expected}, "
                   "but no write has defined them (read before written)")
        else:
            msg = (f"sanitizer: {reader} {verb} {where} expecting {expected}, but {writer.describe()} "
                   f"overwrote them with {self.values.name(found)}")
        details = [f"reader: {reader}" + (f", task #{task}, at cycle {self.eng.now:g}" if task >= 0 else ""),
                   f"expected value: {expected}",
                   f"found value: {self.values.name(found)}",
                   f"written by: {writer.describe()}" + (f" (task #{writer.task})" if writer.task >= 0 else ""),
                   f"buffer: {buf.desc}, {list(buf.shape)} at byte {buf.off} of {region.name}"
                   + (f", window {fmt_slices(sl)}" if sl is not None else ""),
                   f"address range: [{lo}, {hi}) (the first run of wrong bytes; {int(bad.sum()) * g} "
                   "wrong in all)"]
        return SimError(msg, "\n".join(details))

    # ------------------------------------------------------------------ races
    def race_check(self, d: "Dma") -> None:
        plan: CopyPlan = d.plan
        t = d.task.index
        src = plan.src
        if plan.nbytes and src.region.tracked:
            wsh, rsh = src.shadows()
            if src.region.written:
                self._check_ids(wsh[plan.src_sl], d, src, plan.src_sl, "reads", "writes")
            rsh[plan.src_sl] = t
        dst = plan.dst
        wsl = plan.written_slices()
        if wsl is not None and dst.region.tracked:
            wsh, rsh = dst.shadows()
            if dst.region.written:
                self._check_ids(wsh[wsl], d, dst, wsl, "writes", "writes")
            self._check_ids(rsh[wsl], d, dst, wsl, "writes", "reads")
            wsh[wsl] = t
            dst.region.written = True

    def _check_ids(self, ids: np.ndarray, d: "Dma", buf: Buf, sl: tuple, verb: str, other_verb: str) -> None:
        if ids.size == 0:
            return
        t = d.task.index
        lo, hi = int(ids.min()), int(ids.max())
        if lo == hi:
            if lo == t or lo == HOST:
                return
            cand = [lo]
        else:
            cand = [int(x) for x in np.unique(ids)]
        eng = self.eng
        for w in cand:
            if w == t or w == HOST or eng.hb(w, t):
                continue
            tw, tt = eng.tasks[w], d.task
            rw, rt = eng.records[w], eng.records[t]
            t_start = f"{rt.start:g}" if rt else "?"
            w_start = f"{rw.start:g}" if rw else "?"
            raise SimError(
                f"race: {tt.where} on core {tt.core} {verb} {buf.desc} window {fmt_slices(sl)} which "
                f"{tw.where} on core {tw.core} {other_verb}, and no event orders the two tasks",
                f"access: {d.plan.info.where}, DMA issued at cycle {d.issue:g}, completed at {eng.now:g}\n"
                f"task {tt.label()}: started at cycle {t_start}\n"
                f"task {tw.label()}: started at cycle {w_start}"
                + (f", ended at {rw.end:g}" if rw and rw.end else " (still running)")
                + f"\nbuffer: {buf.desc}, {list(buf.shape)} in DRAM region '{buf.region.name}' at byte {buf.off}")




__all__ = ["NOTHING", "Sanitizer", "Values"]

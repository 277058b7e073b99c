"""The simulated NPU: runs a task-level module (`npu_task`) with numpy at tile
granularity under a discrete-event timing model derived from `Arch`.

Timing model (in full under Algorithm): each core runs its tasks in program order,
synchronised by event slots; in a task body a compute op keeps its unit busy
`op.cycles(arch)` cycles (the cube and vector units of a core run at once,
ordered by fences), an `npu_dma.copy` runs on one of the core's `dma_channels`,
and transfers touching DRAM share `dram_bw`. Total cycles = the time the last
task ends.

Checks: SRAM/DRAM capacity, copy windows leaving a buffer without
`pad_value`/`clip`, event slot range, double signals, deadlock (with a dump
of every core), DRAM races between tasks not ordered by events (per-element
shadow memory and vector clocks), unknown ops. In-task SRAM hazards (a compute
op or DMA touching bytes an in-flight DMA or another unit still owns) are warnings.

Algorithm
---------
Timing model:
- Each core runs its tasks (`npu_task.task` with that `core`) in program
  order. A task first runs its `prefetch` ops (weight loads, `npu-prefetch`), then
  consumes its `waits` event slots in order, blocking
  until each is signalled and visible (a signal becomes visible
  `sync_latency` cycles after the signalling task ends; consuming clears the
  slot), then runs its body, then drains every DMA it issued, then signals
  each slot in `signals` (signalling a slot that is still set is a SimError).
  A task's first `early` ops (SRAM buffers, scalar ops and weight loads into bytes
  the task before it never touches: `npu-early-load`) run while the task before it
  in its core's queue runs, from that task's `handoff` point on, each load on a DMA
  channel that task is not waiting for (a core with one queue only: with several
  streams another stream's task could come in between).
- In a task body, ops are issued in order. Scalar ops (arith, scf, select, sram)
  take no time. A compute op keeps its unit (`cube`/`vector`) busy
  `op.cycles(arch)` cycles. On `units = serial` the core waits for it; on
  `units = concurrent` (the default) it is queued on its unit, which starts it when
  free and past any `npu_compute.fence` (the fence waits for the other unit's ops
  on its buffers, `flag_latency` more when it binds; one to `dma` makes the core
  wait before its next copy), and the core goes on (it stalls once a unit holds 16
  ops not yet started); a task ends when its units are idle too. A compute op
  starting while another unit's op still uses bytes it touches (one writing) is
  reported as a race. Numpy semantics run at issue, in program order. An
  `npu_dma.copy` is issued on a free DMA channel of the core (the op stream
  stalls while all `dma_channels` are busy) and returns at once; the DMA takes
  `dma_latency` cycles and then transfers its bytes (elements inside both
  buffers x 4). Transfers touching DRAM share `dram_bw` equally among all
  such transfers in flight on all cores (processor sharing); an SRAM->SRAM
  copy runs at `dram_bw` without sharing. The data lands when the DMA
  completes, so a missing `npu_dma.wait` reads stale data.
  `npu_dma.wait` blocks until that DMA has completed.
- Total cycles = the time the last task ends.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from math import ceil
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from npu_dialects.arch import Arch, arch_of
from npu_dialects.files import collector_paused
from sim.engine import Engine
from sim.errors import SimError
from sim.memory import host_values
from sim.program import Layout, Program, Signature, carried_out, load_program, signature
from sim.records import TaskRecord

__all__ = ["SimError", "SimResult", "TaskRecord", "Signature", "simulate", "signature", "load_program"]


@dataclass
class SimResult:
    """Everything one simulation produced.

    `busy` holds per-core busy cycles of each unit: `cube`, `vector`, and `dma`
    (summed durations of the core's DMAs, issue to completion).
    `dram_bytes_transferred` counts bytes that used DRAM bandwidth (each DMA
    touching DRAM once); `dram_busy_cycles` the time at least one transfer ran.
    `trace` is the list of Chrome trace events (empty unless asked for)."""

    arch: Arch
    outputs: dict[str, np.ndarray]
    cycles: int
    tasks: list[TaskRecord]
    dram_bytes_read: int
    dram_bytes_written: int
    dram_bytes_transferred: int
    dram_busy_cycles: float
    busy: dict[str, list[float]]
    trace: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    weights_bytes: int = 0
    arena_bytes: int = 0
    layout: Layout | None = None  # the program's (`sim.program.Layout`), for the run report

    def trace_json(self) -> dict[str, Any]:
        """The Chrome trace-event JSON object (`{"traceEvents": [...], "displayTimeUnit": "ns"}`)."""
        return {"traceEvents": self.trace, "displayTimeUnit": "ns"}

    @property
    def time_us(self) -> float:
        return self.cycles / self.arch.freq * 1e6


def _write_inputs(prog: Program, inputs: Mapping[str, np.ndarray]) -> None:
    for (name, shape), buf in zip(prog.sig.inputs, prog.inputs):
        if name not in inputs:
            raise SimError(f"missing input '{name}' (the model's inputs: "
                           f"{', '.join(n for n, _ in prog.sig.inputs)})")
        x = np.asarray(inputs[name])
        if tuple(x.shape) != shape:
            raise SimError(f"input '{name}' has shape {list(x.shape)}, expected {list(shape)}")
        try:
            buf.arr[...] = host_values(buf.dtype, x)
        except ValueError as e:
            raise SimError(f"input '{name}' {e}") from None


def simulate(module: ModuleOp, weights: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray] | None,
             arch: Arch | None = None, trace: bool = False, check_bounds: bool = True,
             check_races: bool = True, sanitize: bool | None = None, timing_only: bool = False) -> SimResult:
    """Run the task-level `module` on the simulated NPU.

    `weights` maps `npu_task.weight` keys to arrays; `inputs` maps the ONNX input
    names (`npu.inputs`) to arrays. `arch` defaults to the module's `npu.arch`.
    `check_bounds=False` turns windows leaving a buffer into silent pad-with-0/clip;
    `check_races=False` skips the inter-task DRAM race checker; `sanitize` runs the
    memory sanitizer (`sim.sanitizer`: every read finds the value it names; default:
    on when the environment sets NPU_SANITIZE=1, as the test suite does).
    `timing_only=True` computes no data: the same cycles, DMAs and trace, from the
    control flow alone (no scalar op reads tensor data); `weights` and `inputs` may be
    empty, `outputs` is empty, and neither the sanitizer nor the race checker runs.
    Raises SimError (one-line message, `.details` for the dump)."""
    arch = arch or arch_of(module)
    if sanitize is None:
        sanitize = os.environ.get("NPU_SANITIZE") == "1"
    # (loading compiles every task body and the engine runs: one pause over both, ended
    # once the program and the engine are dropped - a collector let back in while they
    # live walks all their young objects at its first allocation)
    with collector_paused():
        prog = load_program(module, weights, arch, check_bounds, timing_only=timing_only)
        if not timing_only:
            _write_inputs(prog, inputs or {})
        eng = Engine(prog, trace, check_races, sanitize, timing_only=timing_only)
        eng.run()
        records = [r for r in eng.records if r is not None]
        end = max((r.end for r in records), default=0.0)
        cycles = int(ceil(end - 1e-9)) if end > 0 else 0
        events = []
        if trace:
            events = eng.trace.to_json()["traceEvents"]
        outputs = {} if timing_only else {
            name: carried_out(buf.arr.copy(), prog.sig.output_dtypes.get(name, "float32"))
            for (name, _), buf in zip(prog.sig.outputs, prog.outputs)}
        res = SimResult(arch=arch, outputs=outputs, cycles=cycles, tasks=records,
                        dram_bytes_read=eng.dram_read, dram_bytes_written=eng.dram_written,
                        dram_bytes_transferred=eng.dram_moved, dram_busy_cycles=eng.dram_busy,
                        busy=eng.busy, trace=events, warnings=eng.warnings,
                        weights_bytes=prog.weights_bytes, arena_bytes=prog.arena_bytes, layout=prog.layout)
        del eng, prog
    return res

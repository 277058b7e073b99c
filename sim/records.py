"""What the timing engine (`sim.engine`) keeps of a run that the sanitizer reads too:
`TaskRecord` (what one task did and when), `Dma` (one DMA in flight, the token
`npu_dma.copy` returns) and a DMA's phases (`LAT`, `XFER`, `FIXED`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.interp import TaskProgram
from sim.memory import DRAM, CopyPlan

STALL_KINDS = ("compute", "dma_wait", "channel_wait", "drain", "hung", "other")
"""What a task's core did in its body, by which `TaskRecord.stalls` counts its cycles."""

LAT, XFER, FIXED = range(3)
"""A DMA's phases: its latency, its transfer (sharing DRAM bandwidth), a fixed-time copy."""


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
    start: float = 0.0  # its events were consumed and its body began (or went on past its prefetch)
    end: float = 0.0  # its DMAs drained and it signalled
    body_start: float = 0.0  # its body began: `start`, or `ready` when it prefetched before its waits
    gated: float = 0.0  # cycles its prefetched body waited for events with none of its DMAs in flight
    dram_bytes_read: int = 0
    dram_bytes_written: int = 0
    dmas: int = 0
    dram_bytes_moved: int = 0  # bytes its DMAs moved over the shared DRAM bandwidth
    compute_cycles: dict[str, int] = field(default_factory=lambda: {"cube": 0, "vector": 0})
    stall_cycles: list[float] = field(default_factory=lambda: [0.0] * len(STALL_KINDS))  # (by `STALL_KINDS`)
    overlap: float = 0.0  # cycles of compute with one of its DMAs in flight
    deps: list[int] = field(default_factory=list)  # tasks whose signals it consumed

    @property
    def stalls(self) -> dict[str, float]:
        """Cycles of its body by what the core did (`STALL_KINDS`; a kind it never did is absent)."""
        return {k: v for k, v in zip(STALL_KINDS, self.stall_cycles) if v}

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "kernel": self.kernel, "core": self.core, "range": list(self.range),
                "onnx_nodes": list(self.nodes), "predicted_cycles": self.predicted_cycles, "ready": self.ready, "start": self.start, "end": self.end,
                "dram_bytes_read": self.dram_bytes_read, "dram_bytes_written": self.dram_bytes_written,
                "dmas": self.dmas, "compute_cycles": dict(self.compute_cycles)}


class Dma:
    """One DMA in flight; it is also the token `npu_dma.copy` returns."""

    __slots__ = ("core", "chan", "task", "plan", "issue", "lat_end", "phase", "rem", "end", "done",
                 "shared", "seq", "reads_dram", "writes_dram")

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
        self.reads_dram = plan.src.region.space == DRAM  # (its bytes count as DRAM read)
        self.writes_dram = plan.dst.region.space == DRAM
        self.shared = self.reads_dram or self.writes_dram  # (it shares the DRAM bandwidth)
        self.seq = seq

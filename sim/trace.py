"""Chrome trace-event (Perfetto) timeline of a simulation.

One process (pid 0), one track (tid) per core holding its task spans with the
compute op spans nested inside (on `units = concurrent`: one track per unit of
each core, `cube` and `vector`, holding them), and one track per DMA channel of
each core holding the DMA spans; slices are named by op or DMA direction and kernel, with the
ONNX nodes in their args; a flow arrow per consumed event runs from the signalling
task to the task consuming it. Times are microseconds (`cycles / freq * 1e6`).
"""

from __future__ import annotations

from typing import Any


class Trace:
    """Collects complete ("X") events; `to_json()` gives the trace dict."""

    UNITS = ("cube", "vector")

    def __init__(self, cores: int, channels: int, freq: int, enabled: bool, units: bool = False):
        """`units`: compute spans go on a track per unit (`unit_tid`), not the core's."""
        self.enabled = enabled
        self.cores = cores
        self.channels = channels
        self.units = self.UNITS if units else ()
        self.stride = channels + 1 + len(self.units)
        self.scale = 1e6 / freq
        self.events: list[dict[str, Any]] = []
        self.flows = 0

    def core_tid(self, core: int) -> int:
        return core * self.stride

    def unit_tid(self, core: int, unit: str) -> int:
        return core * self.stride + 1 + self.units.index(unit)

    def dma_tid(self, core: int, chan: int) -> int:
        return core * self.stride + 1 + len(self.units) + chan

    def span(self, tid: int, name: str, cat: str, start: float, end: float, args: dict[str, Any]) -> None:
        if self.enabled:
            self.events.append({"name": name, "cat": cat, "ph": "X", "pid": 0, "tid": tid,
                                "ts": start * self.scale, "dur": (end - start) * self.scale,
                                "args": args})

    def flow(self, tid_from: int, t_from: float, tid_to: int, t_to: float, name: str) -> None:
        """An arrow from the slice on `tid_from` at `t_from` to the one on `tid_to` at `t_to`
        (an event from its signalling task to the task consuming it)."""
        if self.enabled:
            self.flows += 1
            common = {"name": name, "cat": "event", "id": self.flows, "pid": 0}
            self.events.append({**common, "ph": "s", "tid": tid_from, "ts": t_from * self.scale - 1e-3})
            self.events.append({**common, "ph": "f", "bp": "e", "tid": tid_to, "ts": t_to * self.scale})

    def metadata(self) -> list[dict[str, Any]]:
        meta: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0,
                                       "args": {"name": "npu"}}]
        for c in range(self.cores):
            tracks = [(self.core_tid(c), f"core {c}")]
            tracks += [(self.unit_tid(c, u), f"core {c} {u}") for u in self.units]
            tracks += [(self.dma_tid(c, k), f"core {c} dma {k}") for k in range(self.channels)]
            for tid, name in tracks:
                meta.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": name}})
                meta.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": tid,
                             "args": {"sort_index": tid}})
        return meta

    def to_json(self) -> dict[str, Any]:
        """`{"traceEvents": [...], "displayTimeUnit": "ns"}` (events sorted, parents first)."""
        evs = sorted(self.events, key=lambda e: (e["tid"], e["ts"], -e.get("dur", 0.0)))
        return {"traceEvents": self.metadata() + evs, "displayTimeUnit": "ns"}

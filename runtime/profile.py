"""`npu-run --profile`: where a run's cycles went, from its task records.

Graph level: total cycles, and per core the shares of compute, DMA (waiting for a
DMA, for a free channel, draining at the end), sync wait (for events) and idle.
Task level: the top-N tasks by span with that split, marked when on the critical
path. Hardware level: cube and vector utilisation, DRAM bandwidth utilisation,
DMA/compute overlap and the stalls by cause. `profile()` gives the JSON object,
`format_profile()` the terminal table.

Algorithm
---------
A task's body time splits by what its core did (`sim.engine.TaskRecord.stalls`,
charged as the clock advances); its sync wait is start - ready (the core reached it,
its events had not all arrived). Idle is what is left of each core's timeline.
Critical path, walking back from the task that ends last: a task that waited for
events was released by the consumed signal that came last (its signaller's end +
sync_latency), else by the task before it on its core (the core was busy); the
walk stops at a task nothing held up. Overlap: compute cycles with one of the same
task's DMAs in flight, over all compute cycles.
"""

from __future__ import annotations

from typing import Any

from npu_dialects.arch import Arch
from sim.records import TaskRecord

DMA_STALLS = ("dma_wait", "channel_wait", "drain")


def _dma(r: TaskRecord) -> float:
    return sum(r.stalls.get(k, 0.0) for k in DMA_STALLS)


def critical_path(recs: list[TaskRecord], sync_latency: int) -> list[int]:
    """Task indices on the critical path, first to last (see Algorithm)."""
    by = {r.index: r for r in recs}
    if not by:
        return []
    on_core: dict[int, list[TaskRecord]] = {}
    for r in sorted(recs, key=lambda r: r.start):
        on_core.setdefault(r.core, []).append(r)
    prev = {b.index: a for rs in on_core.values() for a, b in zip(rs, rs[1:])}
    path: list[int] = []
    t: TaskRecord | None = max(recs, key=lambda r: r.end)
    while t is not None and t.index not in path:
        path.append(t.index)
        deps = [by[d] for d in t.deps if d in by]
        if t.start > t.ready + 1e-9 and deps:
            t = max(deps, key=lambda d: d.end + sync_latency)
        else:
            p = prev.get(t.index)
            t = p if p is not None and p.end >= t.ready - 1e-9 else None
    return path[::-1]


def profile(recs: list[TaskRecord], arch: Arch, cycles: int, dram_bytes_moved: int, top: int = 10) -> dict[str, Any]:
    """The profile of one run (see the module docstring) as a JSON-ready dict."""
    total = max(cycles, 1)
    crit = critical_path(recs, arch.sync_latency)
    on_path = set(crit)
    cores = []
    for c in range(arch.cores):
        mine = [r for r in recs if r.core == c]
        compute = sum(r.stalls.get("compute", 0.0) for r in mine)
        dma = sum(_dma(r) for r in mine)
        wait = sum(r.start - r.ready for r in mine)
        busy = sum(r.end - r.start for r in mine)
        cores.append({"core": c, "tasks": len(mine), "compute": compute / total, "dma": dma / total,
                      "sync_wait": wait / total, "idle": max(0.0, total - busy - wait) / total})
    tasks = [{"index": r.index, "kernel": r.kernel, "core": r.core, "span": r.end - r.start,
              "start": r.start, "end": r.end, "compute": r.stalls.get("compute", 0.0), "dma": _dma(r),
              "wait": r.start - r.ready, "critical": r.index in on_path, "onnx_nodes": list(r.nodes)}
             for r in recs]
    tasks.sort(key=lambda t: -t["span"])
    compute_all = sum(r.stalls.get("compute", 0.0) for r in recs)
    stalls = {k: sum(r.stalls.get(k, 0.0) for r in recs) for k in DMA_STALLS}
    stalls["sync_wait"] = sum(r.start - r.ready for r in recs)
    stalls["idle"] = sum(c["idle"] for c in cores) * total
    hardware = {
        "cube_utilization": sum(r.compute_cycles["cube"] for r in recs) / (arch.cores * total),
        "vector_utilization": sum(r.compute_cycles["vector"] for r in recs) / (arch.cores * total),
        "dram_bw_utilization": dram_bytes_moved / (arch.dram_bw * total),
        "dma_compute_overlap": sum(r.overlap for r in recs) / compute_all if compute_all else 0.0,
        "stalls": stalls,
    }
    return {"cycles": cycles, "cores": cores, "top_tasks": tasks[:top], "critical_path": crit,
            "critical_path_cycles": sum(t["span"] + t["wait"] for t in tasks if t["critical"]),
            "hardware": hardware}


def format_profile(p: dict[str, Any]) -> str:
    """The terminal table of a profile."""
    lines = [f"profile: {p['cycles']} cycles; critical path {len(p['critical_path'])} tasks",
             "core  tasks  compute    dma  sync-wait   idle"]
    for c in p["cores"]:
        lines.append(f"{c['core']:>4} {c['tasks']:>6} {c['compute']:>8.1%} {c['dma']:>6.1%} {c['sync_wait']:>10.1%} "
                     f"{c['idle']:>6.1%}")
    lines.append("top tasks by span (* on the critical path):")
    lines.append("     #  core      span   compute       dma      wait  kernel")
    for t in p["top_tasks"]:
        mark = "*" if t["critical"] else " "
        lines.append(f"{mark}{t['index']:>5} {t['core']:>5} {t['span']:>9.0f} {t['compute']:>9.0f} {t['dma']:>9.0f} "
                     f"{t['wait']:>9.0f}  {t['kernel']}")
    h = p["hardware"]
    st = h["stalls"]
    lines.append(f"hardware: cube {h['cube_utilization']:.1%}, vector {h['vector_utilization']:.1%}, DRAM bandwidth "
                 f"{h['dram_bw_utilization']:.1%}, DMA/compute overlap {h['dma_compute_overlap']:.1%}")
    lines.append("stalls (core-cycles): " + ", ".join(f"{k.replace('_', ' ')} {v:.0f}" for k, v in st.items()))
    return "\n".join(lines)

"""One-parameter sweeps of a model: the fusion depth (npu-layer-group's `max-kernels`:
1 is no layer groups) and the SRAM per core, with what an architect reads off them.

Fusion depth: per depth, cycles, DRAM traffic (and over the model's minimum) and the
SRAM peak the planner placed; the knee is the smallest depth within 1% of the best
cycles, and a depth whose cycles rise more than 1% over a shallower one is flagged
(deeper groups that spill or serialise). SRAM: per size, the same figures; the smallest
SRAM within 5% of the best cycles, the smallest whose DRAM traffic is at most
`dram_target` x the minimum, and the recommended margin: how far that knee size sits
above the SRAM peak the planner placed on it (a chip sized at the planner's peak alone
would be smaller than the one that reached the knee).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from npu_dialects.arch import parse_arch_spec
from tools.cli import write_output

KNEE_TOLERANCE = 0.01  # fusion depth: within 1% of the best cycles
SRAM_TOLERANCE = 0.05  # SRAM: within 5% of the best cycles (issue 19)

_SIZE = re.compile(r"^(\d+)\s*([kKmM]?)(i?[bB])?$")


def parse_size(text: str) -> int:
    """`524288`, `512K`, `512KiB`, `2M` -> bytes (K = 1024)."""
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError(f"bad size '{text}' (expected bytes, or a number with K or M: 512K, 2M)")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]


def parse_values(text: str, parse: Callable[[str], int] = int) -> list[int]:
    """`1..12` (every integer; for sizes, doubling), `1,2,4,8`, or one value."""
    if ".." in text:
        lo_t, hi_t = text.split("..", 1)
        lo, hi = parse(lo_t), parse(hi_t)
        if lo < 1 or hi < lo:
            raise ValueError(f"bad range '{text}': expected 1 <= from <= to")
        if parse is int:
            return list(range(lo, hi + 1))
        out = []
        while lo <= hi:
            out.append(lo)
            lo *= 2
        return out
    vals = [parse(t) for t in text.split(",") if t.strip()]
    if not vals or any(v < 1 for v in vals):
        raise ValueError(f"bad values '{text}': expected positive numbers")
    return sorted(set(vals))


def depth_options(depth: int, base: dict[str, Any]) -> dict[str, Any]:
    """npu-default options of a fusion depth: 1 switches layer groups off, N bounds them to N kernels."""
    opts = dict(base)
    if depth == 1:
        opts["fuse_disable"] = sorted({*opts.get("fuse_disable", ()), "layer-group"})
    else:
        opts["group_max_kernels"] = depth
    return opts


def sram_arch(base: str, size: int) -> str:
    return parse_arch_spec(f"{base},sram_bytes={size}").spec()


def summarize_depth(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Best depth, knee and the depths that got slower than a shallower one (rows by depth)."""
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return {"best": None, "knee": None, "slower": []}
    best = min(ok, key=lambda r: (r["cycles"], r["value"]))
    knee = min(r["value"] for r in ok if r["cycles"] <= best["cycles"] * (1 + KNEE_TOLERANCE))
    slower, low = [], None
    for r in ok:
        if low is not None and r["cycles"] > low * (1 + KNEE_TOLERANCE):
            slower.append(r["value"])
        low = r["cycles"] if low is None else min(low, r["cycles"])
    return {"best": best["value"], "best_cycles": best["cycles"], "knee": knee, "slower": slower}


def summarize_sram(rows: list[dict[str, Any]], dram_target: float) -> dict[str, Any]:
    """Smallest SRAM within 5% of the best cycles, the smallest meeting the DRAM target,
    and the recommended margin over the planner's peak (rows by size)."""
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return {"best": None, "knee": None, "dram_target": dram_target, "meets_dram_target": None}
    best = min(ok, key=lambda r: (r["cycles"], r["value"]))
    knee = next(r for r in ok if r["cycles"] <= best["cycles"] * (1 + SRAM_TOLERANCE))
    meets = next((r["value"] for r in ok if r["dram_vs_min"] is not None and r["dram_vs_min"] <= dram_target), None)
    peak = knee["memory.sram_peak_bytes"] or 0
    return {"best": best["value"], "best_cycles": best["cycles"], "knee": knee["value"], "knee_cycles": knee["cycles"],
            "knee_sram_peak": peak, "margin": round(knee["value"] / peak - 1, 4) if peak else None,
            "dram_target": dram_target, "meets_dram_target": meets}


def write_curve(out: Path, stem: str, what: str, by_model: dict[str, list[dict[str, Any]]],
                summaries: dict[str, dict[str, Any]]) -> None:
    """STEM.csv, STEM.json and (with matplotlib) STEM.svg/.png: cycles, DRAM over its minimum
    and the SRAM peak against the swept value, one line per model."""
    out.mkdir(parents=True, exist_ok=True)
    from tools.dse.evaluate import FIGURES
    cols = [what, "model", "arch", "status", "error", *FIGURES]
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(cols)
    for model, rows in by_model.items():
        for r in rows:
            w.writerow([r["value"], model] + ["" if r.get(c) is None else r.get(c) for c in cols[2:]])
    write_output(str(out / f"{stem}.csv"), f.getvalue())  # (atomic, as every output file)
    write_output(str(out / f"{stem}.json"), json.dumps({"swept": what, "models": by_model, "summary": summaries},
                                                       indent=1) + "\n")
    _plot_curve(out, stem, what, by_model)


def _plot_curve(out: Path, stem: str, what: str, by_model: dict[str, list[dict[str, Any]]]) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    panels = (("cycles", "cycles"), ("dram_vs_min", "DRAM traffic / minimum"),
              ("memory.sram_peak_bytes", "SRAM peak planned (bytes)"))
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, (key, label) in zip(axes, panels):
        for model, rows in by_model.items():
            ok = [r for r in rows if r["status"] == "ok"]
            ax.plot([r["value"] for r in ok], [r[key] for r in ok], "-o", ms=4, label=model)
        ax.set_xlabel(what)
        ax.set_ylabel(label)
        if what == "sram_bytes":
            ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    for ext in ("svg", "png"):
        fig.savefig(out / f"{stem}.{ext}", dpi=110)
    plt.close(fig)


def format_curve(what: str, model: str, rows: list[dict[str, Any]], summary: dict[str, Any]) -> str:
    """The terminal table of one model's curve and its summary line."""
    lines = [f"{model}: {what} sweep", f"{what:>12} {'cycles':>12} {'DRAM bytes':>14} {'DRAM/min':>9} "
             f"{'SRAM peak':>10} {'kernels':>8}"]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"{r['value']:>12} {r['status']}: {r['error']}")
            continue
        lines.append(f"{r['value']:>12} {r['cycles']:>12,} {r['dram_bytes']:>14,} {r['dram_vs_min'] or 0:>9.3f} "
                     f"{r['memory.sram_peak_bytes'] or 0:>10,} {r['kernels']:>8}")
    s = summary
    if s.get("best") is None:
        lines.append("no value ran")
    elif what == "fusion_depth":
        slower = f"; slower than a shallower depth at {', '.join(map(str, s['slower']))}" if s["slower"] else ""
        lines.append(f"best {s['best']} ({s['best_cycles']:,} cycles); knee {s['knee']} (within 1% of the best)"
                     + slower)
    else:
        meets = s["meets_dram_target"]
        target = (f"DRAM <= {s['dram_target']:g}x minimum from {meets:,} bytes" if meets is not None
                  else f"DRAM <= {s['dram_target']:g}x minimum: not reached in the sweep")
        margin = f"{s['margin']:.1%}" if s["margin"] is not None else "-"
        lines.append(f"best {s['best']:,} ({s['best_cycles']:,} cycles); within 5% from {s['knee']:,} bytes "
                     f"(planner peak there {s['knee_sram_peak']:,}: margin {margin}); {target}")
    return "\n".join(lines)

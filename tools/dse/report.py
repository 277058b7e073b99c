"""What a sweep writes: `results.csv` (a row per point and model: the arch parameters,
the area proxy, every figure of `evaluate.FIGURES`, the status and diagnostic of a
failed point), `results.json` (the same with the spec, the area formula and the Pareto
fronts) and `pareto.svg`/`pareto.png` (matplotlib: cycles against area per model and
for the geometric mean, fronts drawn, the base arch starred); and the terminal table."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from tools.cli import write_output
from tools.dse.evaluate import ACCURACY, FIGURES
from tools.dse.spec import AREA, DseSpec
from tools.dse.sweep import Point


def pareto(items: list[tuple[float, float, str]]) -> list[str]:
    """Names of the items (x, y, name) no other item beats in both x and y (minimised), by x."""
    front: list[tuple[float, float, str]] = []
    for x, y, name in sorted(items):
        if not front or y < front[-1][1]:
            front.append((x, y, name))
    return [n for _, _, n in front]


def fronts(points: list[Point], models: list[str]) -> dict[str, list[str]]:
    """The Pareto front (archs) of area against cycles per model, and `geomean` over all."""
    out = {"geomean": pareto([(p.area, p.geomean_cycles() or 0.0, p.arch) for p in points if p.ok()])}
    for m in models:
        out[m] = pareto([(p.area, p.rows[m]["cycles"], p.arch) for p in points
                         if m in p.rows and p.rows[m]["status"] == "ok"])
    return out


COLUMNS = ["arch", "area", "model", "status", "error", *FIGURES, *ACCURACY, "compile_s", "simulate_s"]


def write_results(out: Path, spec: DseSpec, points: list[Point], meta: dict[str, Any]) -> dict[str, Any]:
    """results.csv and results.json in `out`; returns the JSON document."""
    out.mkdir(parents=True, exist_ok=True)
    params = [a.name for a in spec.axes]
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(params + COLUMNS)
    for p in points:
        for m in spec.models:
            row = {**p.rows.get(m, {"status": "missing"}), "arch": p.arch, "area": p.area, "model": m}
            w.writerow([p.params.get(k) for k in params] + [_cell(row.get(c)) for c in COLUMNS])
    write_output(str(out / "results.csv"), f.getvalue())  # (atomic, as every output file)
    doc = {
        "spec": {"source": spec.source, "models": spec.models, "base": spec.base, "search": spec.search,
                 "budget": spec.budget, "seed": spec.seed, "numerics": spec.numerics, "options": spec.options,
                 "pipeline": spec.pipeline,
                 "space": {a.name: list(a.values) for a in spec.axes}},
        "area_formula": ("cores x (mac x M*K*N + lane x vector_lanes + sram_kib x sram_bytes/1024 + dma_channel x "
                         "dma_channels) + event_slot x event_slots + dram_bw x dram_bw"),
        "area_coefficients": spec.area,
        **meta,
        "points": [{"arch": p.arch, "params": p.params, "area": p.area, "geomean_cycles": p.geomean_cycles(),
                    "models": p.rows} for p in points],
        "pareto": fronts(points, spec.models),
    }
    write_output(str(out / "results.json"), json.dumps(doc, indent=1) + "\n")
    return doc


def _cell(v: Any) -> Any:
    return "" if v is None else v


def table(spec: DseSpec, points: list[Point], front: list[str], top: int = 12) -> str:
    """The terminal summary: the Pareto points of the geometric mean, then the failures."""
    lines = [f"{len(points)} points x {len(spec.models)} models; "
             f"{sum(p.ok() for p in points)} points ran every model"]
    by_arch = {p.arch: p for p in points}
    head = f"{'area':>9}  {'geomean cycles':>15}  " + "  ".join(f"{m[:16]:>16}" for m in spec.models) + "  arch"
    lines += ["", "Pareto front (area proxy vs geometric-mean cycles):", head]
    for a in front[:top]:
        p = by_arch[a]
        cells = "  ".join(f"{p.rows[m]['cycles']:>16,}" for m in spec.models)
        lines.append(f"{p.area:>9,.0f}  {p.geomean_cycles() or 0:>15,.0f}  {cells}  {a}")
    if len(front) > top:
        lines.append(f"... {len(front) - top} more on the front")
    failed = [(p.arch, m, r) for p in points for m, r in p.rows.items() if r["status"] != "ok"]
    if failed:
        lines += ["", f"{len(failed)} (point, model) runs failed, e.g.:"]
        lines += [f"  {m} at {a}: {r['status']}: {r['error']}" for a, m, r in failed[:5]]
    return "\n".join(lines)


PANEL_INCHES = 4.2
"""The width of one panel of the Pareto picture."""


def plot_pareto(out: Path, spec: DseSpec, points: list[Point]) -> list[Path]:
    """pareto.svg and pareto.png (needs matplotlib; returns the files written, none without it)."""
    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    panels = ["geomean", *spec.models] if len(spec.models) > 1 else list(spec.models)
    fr = fronts(points, spec.models)
    fig, axes = plt.subplots(1, len(panels), figsize=(PANEL_INCHES * len(panels), 3.8), squeeze=False)
    for ax, name in zip(axes[0], panels):
        xs, ys, names = _series(points, name)
        ax.scatter(xs, ys, s=14, c="#9aa5b1", label=f"{len(xs)} points")
        pts = dict(zip(names, zip(xs, ys)))
        f = [pts[a] for a in fr[name] if a in pts]
        ax.plot([x for x, _ in f], [y for _, y in f], "-o", c="#c0392b", ms=4, label="Pareto front")
        based = [pts[a] for a in base_points(spec, points) if a in pts]
        if based:
            ax.scatter([x for x, _ in based], [y for _, y in based], marker="*", s=160, c="#2471a3", zorder=5,
                       label=spec.base if len(based) == 1 else f"{spec.base} ({len(based)} option values)")
        n_failed = sum(1 for p in points if (not p.ok() if name == "geomean" else p.rows[name]["status"] != "ok"))
        ax.set_title(f"{name}" + (f" ({n_failed} points fail)" if n_failed else ""), fontsize=10)
        ax.set_xlabel("area proxy (cube-MAC units)")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(5))  # (five-digit areas: more labels overlap)
        ax.set_ylabel("cycles" if name != "geomean" else "geometric-mean cycles")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    import textwrap  # (the area formula wraps to the figure instead of running off both edges of one panel)
    fig.suptitle(textwrap.fill(f"npu-dse: {len(points)} arch points, area = {_area_text(spec)}",
                               width=int(15 * PANEL_INCHES * len(panels))), fontsize=8)  # (~15 characters an inch)
    fig.tight_layout()
    files = [out / "pareto.svg", out / "pareto.png"]
    for p in files:
        fig.savefig(p, dpi=110)
    plt.close(fig)
    return files


def _series(points: list[Point], name: str) -> tuple[list[float], list[float], list[str]]:
    xs, ys, names = [], [], []
    for p in points:
        y = p.geomean_cycles() if name == "geomean" else (
            p.rows[name]["cycles"] if p.rows.get(name, {}).get("status") == "ok" else None)
        if y is not None:
            xs.append(p.area)
            ys.append(y)
            names.append(p.arch)
    return xs, ys, names


def base_points(spec: DseSpec, points: list[Point]) -> list[str]:
    """The labels of the points at the base arch: one, or one per value of the sweep's
    option axes (a `precision` axis labels each `... precision=f16`)."""
    from npu_dialects.arch import parse_arch_spec
    base = parse_arch_spec(spec.base).spec()
    return [p.arch for p in points if (p.spec or p.arch) == base]


def _area_text(spec: DseSpec) -> str:
    c = spec.area
    changed = "" if c == AREA else " (custom coefficients)"
    return (f"cores x ({c['mac']:g} MAC + {c['lane']:g} lane + {c['sram_kib']:g}/KiB SRAM + {c['dma_channel']:g}/DMA "
            f"channel) + {c['event_slot']:g}/event + {c['dram_bw']:g}/(B/cycle){changed}")

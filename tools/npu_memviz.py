"""`npu-memviz INPUT [--arch SPEC] [--time cycles|tasks] [--seed N] -o OUT.svg`:
draw the memory plan of a lowered module as an SVG.

INPUT is an ONNX model (imported and compiled with `npu-default`), a graph-level
`.mlir` (compiled) or a lowered task-level `.mlir` (drawn as is). The picture
has one panel for the DRAM activation arena and one per core for its SRAM; each
buffer is a rectangle: x = time, y = its address range [offset, offset + size).
Time (`--time`): `cycles` (default) simulates the module on random inputs (seed
`--seed`); `tasks` needs no simulation: task #i occupies [i, i+1) in program order.
The peak and, for DRAM, the lower bound are marked.

Exit codes: 0 success, 1 a diagnosed error (bad model or IR, no memory plan,
simulator fault, cannot write OUT), 2 bad command-line usage. `NPU_DEBUG=1`
shows Python tracebacks.

Algorithm
---------
The DRAM panel draws the `npu_task.alloc` buffers at their planned `offset`; a
core's SRAM panel each task's `npu_task.sram` buffers, on the task's core, during
the task.

Time: with `cycles` each task is placed at its simulated [start, end); a DRAM
buffer spans from the first start to the last end of the tasks that read or
write it. With `tasks` a DRAM buffer spans its first to its last task.

Marked: the peak (the highest address in use; for DRAM the end of the last
aligned buffer, i.e. the arena size `npu.dram_arena_bytes`) and, for DRAM, the
lower bound `npu.dram_lower_bound_bytes` (max live bytes over program order).
Buffers are coloured by kernel (the producing kernel for a DRAM buffer) and
carry hover titles (buffer, kernel, ONNX nodes, size, span). The SVG holds
exactly one `<rect>` per buffer; frames and marks are paths, lines and text.
"""

from __future__ import annotations

import argparse
import colorsys
import math
import os
import sys
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from tools.cli import EXIT_OK, UserError, cli_main, error_line, write_output

# ----------------------------------------------------------------------------- the plan


@dataclass
class Buffer:
    """One rectangle: [t0, t1) x [offset, offset + size)."""

    offset: int
    size: int
    t0: float
    t1: float
    kernel: str
    title: str
    unused: bool = False


@dataclass
class Panel:
    key: str  # "dram" or "sram-core<N>"
    label: str
    buffers: list[Buffer] = field(default_factory=list)
    peak: int = 0  # highest address in use (exclusive)
    lower_bound: int | None = None
    capacity: int | None = None


@dataclass
class Picture:
    title: str
    subtitle: str
    time_unit: str  # "cycles" | "tasks"
    t_end: float
    panels: list[Panel]
    kernels: list[str]  # in order of first task: colour index


def _align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a if a > 1 else n


def _type_str(t) -> str:
    shape = "x".join(str(d) for d in t.get_shape())
    return f"{shape}xf32" if shape else "f32"



def _names(items: list[str], limit: int = 6) -> str:
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f", ... (+{len(items) - limit})"


def fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def collect(module, arch, spans: list[tuple[float, float]] | None, time_unit: str) -> Picture:
    """The panels of a lowered module. `spans[i]` is task #i's simulated [start, end)
    (None: time in task indices). Raises UserError for a module without tasks or plan."""
    from lowering.task.taskgraph import tasks_of
    from sim.errors import SimError
    from sim.program import main_func

    try:
        fn = main_func(module)
    except SimError as e:
        raise UserError(str(e)) from None
    tasks = tasks_of(fn)
    if not tasks:
        raise UserError("the module has no 'npu_task.task' ops (is it a lowered module?)")
    if spans is None:
        spans = [(float(t.index), float(t.index + 1)) for t in tasks]
    if len(spans) != len(tasks):
        raise UserError(f"the simulation recorded {len(spans)} tasks but the module has {len(tasks)}")

    kernels: list[str] = []
    for t in tasks:
        k = t.op.kernel.data
        if k not in kernels:
            kernels.append(k)
    dram = _dram_panel(module, fn, tasks, spans, time_unit, arch)
    cores = _sram_panels(tasks, spans, time_unit, arch)
    t_end = max(s[1] for s in spans)
    return Picture("", "", time_unit, t_end, [dram, *cores], kernels)


def _dram_panel(module, fn, tasks: list, spans: list[tuple[float, float]], time_unit: str, arch) -> Panel:
    """DRAM arena: every npu_task.alloc, at its planned offset (UserError without a plan)."""
    from npu_dialects.entry import int_attr
    from npu_dialects.task import AllocOp, TaskOp

    touched: dict = {}
    for t in tasks:
        for b in t.touches:
            touched.setdefault(b, []).append(t)
    dram = Panel("dram", "DRAM activation arena")
    allocs = []
    n_seen = 0  # tasks before the op, in program order
    for op in fn.body.block.ops:
        if isinstance(op, TaskOp):
            n_seen += 1
        elif isinstance(op, AllocOp):
            allocs.append((op, n_seen))
    peak = 0
    for k, (op, before) in enumerate(allocs):
        buf = _alloc_buffer(k, op, before, touched.get(op.result, []), tasks, spans, time_unit)
        dram.buffers.append(buf)
        peak = max(peak, buf.offset + _align_up(buf.size, arch.align))
    dram.peak = peak
    dram.lower_bound = int_attr(module, "npu.dram_lower_bound_bytes")
    arena = int_attr(module, "npu.dram_arena_bytes")
    weights = int_attr(module, "npu.dram_weights_bytes")
    extra = [f"{len(allocs)} buffers"]
    if arena is not None and arena != peak:
        extra.append(f"npu.dram_arena_bytes {arena} B")
    if weights is not None:
        extra.append(f"weights {fmt_bytes(weights)} (own region, not drawn)")
    dram.label += " (" + "; ".join(extra) + ")"
    return dram


def _alloc_buffer(k: int, op, before: int, users: list, tasks: list, spans: list[tuple[float, float]],
                  time_unit: str) -> Buffer:
    """The rectangle of alloc #k: from the first to the last task using it (`users`), else
    at the task that follows it (`before` tasks precede it), marked unused."""
    from npu_dialects.locs import node_names
    from npu_dialects.task import byte_size

    if op.offset is None:
        raise UserError(f"npu_task.alloc #{k} ({_type_str(op.result.type)}) has no offset: the module "
                        "has no DRAM memory plan (run npu-memplan)")
    off, size = op.offset.value.data, byte_size(op.result.type)
    nodes = node_names(op)
    head = f"alloc #{k} {_type_str(op.result.type)}: {size} B at [{off}, {off + size})"
    if not users:
        i = min(before, len(tasks) - 1)
        t0, t1 = spans[i]
        lines = [head, "not read or written by any task", f"ONNX nodes: {_names(nodes) or '-'}"]
        return Buffer(off, size, t0, t1, tasks[i].op.kernel.data, "\n".join(lines), True)
    idx = [u.index for u in users]
    writers = [u for u in users if op.result in u.writes]
    producer = (writers or users)[0].op.kernel.data
    readers: list[str] = []
    for u in users:
        if op.result in u.reads and u.op.kernel.data not in readers:
            readers.append(u.op.kernel.data)
    t0 = min(spans[i][0] for i in idx)
    t1 = max(spans[i][1] for i in idx)
    span = f"tasks #{min(idx)}-#{max(idx)}"
    if time_unit == "cycles":
        span += f", cycles {t0:.0f}-{t1:.0f}"
    lines = [head, f"kernel: {producer}" + (f"; read by {_names(readers)}" if readers else ""),
             f"ONNX nodes: {_names(nodes) or '-'}", span]
    return Buffer(off, size, t0, t1, producer, "\n".join(lines), False)


def _sram_panels(tasks: list, spans: list[tuple[float, float]], time_unit: str, arch) -> list[Panel]:
    """One panel per core: each task's npu_task.sram buffers during the task."""
    from npu_dialects.locs import node_names
    from npu_dialects.task import SramOp, byte_size

    n_cores = max([arch.cores] + [t.core + 1 for t in tasks])
    cores = [Panel(f"sram-core{c}", f"core {c} SRAM", capacity=arch.sram_bytes) for c in range(n_cores)]
    n_tasks = [0] * n_cores
    for t in tasks:
        n_tasks[t.core] += 1
        kernel = t.op.kernel.data
        nodes = node_names(t.op)
        t0, t1 = spans[t.index]
        lo, hi = t.op.bounds
        panel = cores[t.core]
        for j, s in enumerate(o for o in t.op.body.block.ops if isinstance(o, SramOp)):
            off, size = s.offset.value.data, byte_size(s.result.type)
            snodes = node_names(s) or nodes
            span = f"task #{t.index} range [{lo}, {hi})"
            if time_unit == "cycles":
                span += f", cycles {t0:.0f}-{t1:.0f}"
            title = "\n".join([f"core {t.core} sram #{j} {_type_str(s.result.type)}: {size} B at "
                               f"[{off}, {off + size})", f"kernel: {kernel}",
                               f"ONNX nodes: {_names(snodes) or '-'}", span])
            panel.buffers.append(Buffer(off, size, t0, t1, kernel, title))
            panel.peak = max(panel.peak, off + size)
    for p, n in zip(cores, n_tasks):
        p.label += (f" ({len(p.buffers)} buffers in {n} tasks; capacity {fmt_bytes(arch.sram_bytes)})"
                    if n else " (no tasks)")
    return cores


# ----------------------------------------------------------------------------- drawing

WIDTH = 1400
ML, MR = 92, 190  # plot margins left (address ticks) and right (peak labels)
DRAM_H, SRAM_H, EMPTY_H = 300, 130, 24  # plot heights (EMPTY_H: a core without tasks)
PANEL_GAP = 64  # title above a plot + x tick labels below it
HEADER = 56


def kernel_colour(i: int) -> str:
    """Distinct, light colours: golden-angle hue steps, alternating lightness."""
    h = (i * 0.381966) % 1.0
    light = (0.70, 0.60, 0.78)[i % 3]
    r, g, b = colorsys.hls_to_rgb(h, light, 0.62)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def nice_ticks(hi: float, n: int = 5) -> list[float]:
    if hi <= 0:
        return [0.0]
    raw = hi / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    out, v = [], 0.0
    while v <= hi * (1 + 1e-9):
        out.append(v)
        v += step
    return out


def nice_byte_ticks(hi: int, n: int = 4) -> list[int]:
    """Ticks at round multiples of a power-of-two unit (B, KiB, MiB)."""
    if hi <= 0:
        return [0]
    unit = 1 << 20 if hi >= 4 << 20 else 1 << 10 if hi >= 4 << 10 else 1
    ticks = nice_ticks(hi / unit, n)
    return [int(round(t * unit)) for t in ticks]


def tick_bytes(n: int) -> str:
    if n == 0:
        return "0"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


def tick_time(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e4:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def _f(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def render(pic: Picture) -> str:
    plot_w = WIDTH - ML - MR
    heights = [DRAM_H if p.key == "dram" else SRAM_H if p.buffers else EMPTY_H for p in pic.panels]
    total_h = HEADER + sum(h + (PANEL_GAP if p.buffers else 40) for p, h in zip(pic.panels, heights)) + 10
    colour = {k: kernel_colour(i) for i, k in enumerate(pic.kernels)}
    t_end = pic.t_end if pic.t_end > 0 else 1.0
    xt = nice_ticks(t_end, 10)
    out: list[str] = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{total_h}" '
        f'viewBox="0 0 {WIDTH} {total_h}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
        "<style>.b{stroke:#1a1a1a;stroke-width:0.3;fill-opacity:0.9}"
        ".b.unused{stroke-dasharray:2,1;fill-opacity:0.3}"
        ".b:hover{stroke:#000;stroke-width:1.5;fill-opacity:1}"
        ".frame{fill:#f7f7f7;stroke:#888;stroke-width:0.6}"
        ".grid{stroke:#ddd;stroke-width:0.5}"
        ".peak{stroke:#d62728;stroke-width:1.2}"
        ".bound{stroke:#1f4e9c;stroke-width:1.2;stroke-dasharray:5,3}"
        ".ptitle{font-size:13px;font-weight:bold}.tick{fill:#444;font-size:10px}</style>",
        f'<text x="{ML}" y="22" font-size="16" font-weight="bold">{escape(pic.title)}</text>',
        f'<text x="{ML}" y="42" fill="#444">{escape(pic.subtitle)}</text>',
    ]
    y = HEADER
    for p, h in zip(pic.panels, heights):
        top = y + 24
        bottom = top + h
        y_max = max(p.peak, p.lower_bound or 0, 1)
        y_top = y_max * 1.08
        sx = plot_w / t_end
        sy = h / y_top

        def X(t: float) -> float:
            return ML + t * sx

        def Y(a: float) -> float:
            return bottom - a * sy

        out.append(f'<g class="panel" id="{p.key}" data-buffers="{len(p.buffers)}" '
                   f'data-peak-bytes="{p.peak}">')
        out.append(f'<text class="ptitle" x="{ML}" y="{top - 8}">{escape(p.label)}</text>')
        out.append(f'<path class="frame" d="M{ML},{top}h{plot_w}v{h}h{-plot_w}z"/>')
        grid = []
        for a in nice_byte_ticks(int(y_top)) if p.buffers else []:
            if a > y_top:
                continue
            yy = Y(a)
            grid.append(f"M{ML},{_f(yy)}h{plot_w}")
            out.append(f'<text class="tick" x="{ML - 6}" y="{_f(yy + 3.5)}" text-anchor="end">'
                       f'{tick_bytes(a)}</text>')
        for t in xt:
            grid.append(f"M{_f(X(t))},{top}v{h}")
            if p.buffers:
                out.append(f'<text class="tick" x="{_f(X(t))}" y="{bottom + 13}" text-anchor="middle">'
                           f'{tick_time(t)}</text>')
        out.append(f'<path class="grid" d="{" ".join(grid)}"/>')
        unit = "cycles" if pic.time_unit == "cycles" else "task #"
        if p.buffers:
            out.append(f'<text class="tick" x="{ML + plot_w}" y="{bottom + 26}" text-anchor="end">{unit}</text>')
            out.append(f'<text class="tick" x="{ML - 6}" y="{top - 8}" text-anchor="end">address</text>')
        for b in p.buffers:
            x0, x1 = X(b.t0), X(b.t1)
            y0, y1 = Y(b.offset + b.size), Y(b.offset)
            w, hh = max(x1 - x0, 0.6), max(y1 - y0, 0.6)
            cls = "b unused" if b.unused else "b"
            out.append(f'<rect class="{cls}" x="{_f(x0)}" y="{_f(y0)}" width="{_f(w)}" height="{_f(hh)}" '
                       f'fill="{colour.get(b.kernel, "#bbbbbb")}"><title>{escape(b.title)}</title></rect>')
        if not p.buffers:
            out.append(f'<text class="tick" x="{ML + plot_w / 2}" y="{(top + bottom) / 2 + 3.5}" '
                       f'text-anchor="middle">no buffers</text>')
        # peak above its line, lower bound below its line: never overlapping (bound <= peak)
        lx = ML + plot_w + 6
        if p.buffers:
            yp = Y(p.peak)
            out.append(f'<line class="peak" x1="{ML}" y1="{_f(yp)}" x2="{ML + plot_w}" y2="{_f(yp)}"/>')
            out.append(f'<text class="peak-label" fill="#d62728" x="{lx}" y="{_f(yp - 3)}" '
                       f'data-bytes="{p.peak}">peak {p.peak} B ({fmt_bytes(p.peak)})</text>')
        if p.lower_bound is not None:
            yb = Y(p.lower_bound)
            out.append(f'<line class="bound" x1="{ML}" y1="{_f(yb)}" x2="{ML + plot_w}" y2="{_f(yb)}"/>')
            ratio = f", arena/bound {p.peak / p.lower_bound:.3f}" if p.lower_bound else ""
            out.append(f'<text class="bound-label" fill="#1f4e9c" x="{lx}" y="{_f(yb + 11)}" '
                       f'data-bytes="{p.lower_bound}">lower bound {p.lower_bound} B</text>')
            out.append(f'<text class="tick" x="{lx}" y="{_f(yb + 23)}">({fmt_bytes(p.lower_bound)}{ratio})</text>')
        if p.capacity and p.buffers:
            out.append(f'<text class="tick" x="{lx}" y="{_f(yp + 11)}">'
                       f'{100 * p.peak / p.capacity:.1f}% of {fmt_bytes(p.capacity)}</text>')
        out.append("</g>")
        y = bottom + (PANEL_GAP - 24 if p.buffers else 16)
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="npu-memviz",
        description="Draw the memory plan of a lowered module (DRAM arena and each core's SRAM: "
                    "buffers as time x address rectangles) as an SVG.")
    p.add_argument("input", metavar="INPUT", help="model.onnx, a graph-level .mlir or a lowered .mlir")
    p.add_argument("-o", "--output", metavar="OUT.svg", required=True, help="the SVG file to write")
    p.add_argument("--arch", metavar="SPEC", help="machine: a preset plus overrides, e.g. 'default,cores=1'")
    p.add_argument("--time", choices=("cycles", "tasks"), default="cycles",
                   help="x axis: simulated cycles (runs the simulator on random inputs; default) "
                        "or task index in program order (no simulation)")
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="seed of the random inputs of --time cycles (default 0)")
    return p


def _simulated_spans(loaded, seed: int) -> list[tuple[float, float]]:
    from runtime.run import RunError, random_inputs, run
    from sim import SimError, signature
    try:
        inputs = random_inputs(signature(loaded.module), seed)
        result = run(loaded.module, loaded.weights, inputs, loaded.arch)
    except RunError as e:
        raise UserError(str(e)) from None
    except SimError as e:
        raise UserError(error_line(str(e)), e.details) from None
    assert result.sim is not None  # (runtime.run keeps the simulator's result)
    recs = sorted(result.sim.tasks, key=lambda r: r.index)
    return [(float(r.start), float(r.end)) for r in recs]


def _run(args: argparse.Namespace) -> int:
    from tools.loading import load_input
    loaded = load_input(args.input, args.arch, False)
    spans = _simulated_spans(loaded, args.seed) if args.time == "cycles" else None
    pic = collect(loaded.module, loaded.arch, spans, args.time)
    n_dram = len(pic.panels[0].buffers)
    n_sram = sum(len(p.buffers) for p in pic.panels[1:])
    pic.title = f"Memory plan of {os.path.basename(args.input)}"
    axis = (f"simulated cycles (random inputs, seed {args.seed}), {pic.t_end:.0f} in all"
            if args.time == "cycles" else f"task index in program order, {pic.t_end:.0f} tasks")
    pic.subtitle = (f"arch {loaded.arch.spec()}; x: {axis}; y: byte address; {n_dram} DRAM + {n_sram} SRAM "
                    f"buffers, coloured by kernel ({len(pic.kernels)}); hover a buffer for details")
    svg = render(pic)
    write_output(args.output, svg)
    dram = pic.panels[0]
    print(f"wrote {args.output}: DRAM arena peak {dram.peak} B"
          + (f" (lower bound {dram.lower_bound} B)" if dram.lower_bound is not None else "")
          + ", SRAM peak per core " + ", ".join(str(p.peak) for p in pic.panels[1:]) + " B")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of `npu-memviz`; returns the exit code."""
    return cli_main(build_parser, _run, argv)


if __name__ == "__main__":
    sys.exit(main())

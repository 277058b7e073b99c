"""Pictures of a compile and the self-contained HTML compile report (`npu-run --graph`,
`npu-run --html`).

- `graph_dot`: the ONNX graph as Graphviz DOT, one box per node (name, op), and
  after fusion each fused kernel boxed, each layer or strip group (a compiled
  kernel spanning several fused kernels) boxed around its kernels.
- `render_dot`: SVG/PNG through the `dot` binary when it is on PATH (None else).
- `kernel_chart_svg`, `timeline_svg`: predicted vs simulated cycles per kernel, and
  the tasks on each core over time, as inline SVG.
- `html_report`: title (the model's name), summary, the graph after fusion, the
  per-kernel table, the chart, the timeline, the memory map (`npu-memviz`), the
  passes with their times, remarks - one file, no external resources.
"""

from __future__ import annotations

import html
import shutil
import subprocess
from collections.abc import Iterable
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from npu_dialects.entry import find_main
from npu_dialects.graph import ConstantOp, FusedOp
from npu_dialects.locs import node_names
from npu_dialects.task import TaskOp

DOT_MISSING = ("graphviz's 'dot' is not on PATH: wrote the DOT text only (install graphviz, e.g. "
               "'apt-get install graphviz', for SVG/PNG)")


def _q(s: str) -> str:
    """A DOT string literal (newlines become line breaks)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def fused_kernels(module: ModuleOp) -> list[list[str]]:
    """The ONNX nodes of each `npu_graph.fused` kernel of a graph module after npu-fuse."""
    return [node_names(op) for op in module.walk() if isinstance(op, FusedOp) and node_names(op)]


def compiled_kernels(module: ModuleOp) -> list[tuple[str, list[str]]]:
    """(kernel, ONNX nodes) of each kernel of a task-level module, in program order."""
    out: dict[str, list[str]] = {}
    for op in module.walk():
        if isinstance(op, TaskOp):
            nodes = out.setdefault(op.kernel.data, [])
            for body_op in op.body.walk():
                nodes += [n for n in node_names(body_op) if n not in nodes]
            nodes += [n for n in node_names(op) if n not in nodes]
    return list(out.items())


def _graph_nodes(graph: ModuleOp) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """(id, ONNX node, label) per op of `@main` and the edges between them."""
    fn = find_main(graph)
    assert fn is not None, "a graph module has @main"
    ids: dict[SSAValue, str] = {}
    nodes: list[tuple[str, str, str]] = []
    edges: list[tuple[str, str]] = []
    for i, arg in enumerate(fn.body.block.args):
        ids[arg] = f"in{i}"
        nodes.append((f"in{i}", "", f"input {i}"))
    for k, op in enumerate(fn.body.block.ops):
        if isinstance(op, ConstantOp):
            continue
        nid = f"op{k}"
        if isinstance(op, func.ReturnOp):
            nid, label, name = "out", "outputs", ""
        else:
            name = (node_names(op) or [op.name])[-1]
            label = f"{name}\n{op.name.split('.', 1)[-1]}"
        nodes.append((nid, name, label))
        edges += [(ids[v], nid) for v in op.operands if v in ids]
        for r in op.results:
            ids[r] = nid
    return nodes, edges


def graph_dot(graph: ModuleOp, title: str, kernels: list[list[str]] | None = None,
              compiled: list[tuple[str, list[str]]] | None = None) -> str:
    """DOT of the graph-level module `graph`; with `kernels` (fused kernels' ONNX
    nodes) each is boxed, with `compiled` (a task module's kernels) each layer or strip
    group - a compiled kernel holding several fused kernels - is boxed around them."""
    nodes, edges = _graph_nodes(graph)
    kernels = kernels or []
    groups = [(k, set(ns)) for k, ns in compiled or [] if sum(1 for f in kernels if set(f) <= set(ns)) > 1]
    lines = [f"digraph {_q(title)} {{", f"  label={_q(title)}; labelloc=t; fontname=Helvetica;",
             "  node [shape=box, style=rounded, fontname=Helvetica, fontsize=10];"]
    placed: set[str] = set()

    def emit(members: Iterable[tuple[str, str, str]], indent: str) -> None:
        for nid, _, label in members:
            if nid not in placed:
                placed.add(nid)
                lines.append(f"{indent}{nid} [label={_q(label)}];")

    def kernel_box(i: int, names: list[str], indent: str) -> None:
        lines.append(f"{indent}subgraph cluster_k{i} {{ label={_q('kernel ' + names[0])}; style=filled; "
                     "fillcolor=\"#e8f0fe\"; color=\"#4a78c2\";")
        emit([n for n in nodes if n[1] in names], indent + "  ")
        lines.append(f"{indent}}}")

    done: set[int] = set()
    for g, (name, members) in enumerate(groups):
        lines.append(f"  subgraph cluster_g{g} {{ label={_q('layer group ' + name)}; style=dashed; "
                     "color=\"#c2452d\";")
        for i, f in enumerate(kernels):
            if set(f) <= members and i not in done:
                done.add(i)
                kernel_box(i, f, "    ")
        emit([n for n in nodes if n[1] in members], "    ")
        lines.append("  }")
    for i, f in enumerate(kernels):
        if i not in done:
            kernel_box(i, f, "  ")
    emit(nodes, "  ")
    lines += [f"  {a} -> {b};" for a, b in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_dot(dot: str, fmt: str = "svg") -> bytes | None:
    """The picture through graphviz's `dot` (found at run time), None when it is absent."""
    exe = shutil.which("dot")
    if exe is None:
        return None
    proc = subprocess.run([exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"dot failed: {proc.stderr.decode(errors='replace').strip()[:200]}")
    return proc.stdout


def _bar_svg(rows: list[tuple[str, list[tuple[float, str]]]], width: int = 900, unit: str = "cycles") -> str:
    """Horizontal bars: per row a label and (value, colour) bars."""
    hi = max((v for _, bars in rows for v, _ in bars), default=1.0) or 1.0
    bh, gap, left = 9, 6, 260
    h = len(rows) * (bh * 2 + gap) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" font-family="Helvetica" '
           'font-size="10">']
    for i, (label, bars) in enumerate(rows):
        y = 20 + i * (bh * 2 + gap)
        out.append(f'<text x="{left - 6}" y="{y + bh + 3}" text-anchor="end">{html.escape(label[:40])}</text>')
        for j, (v, colour) in enumerate(bars):
            w = (width - left - 80) * v / hi
            out.append(f'<rect x="{left}" y="{y + j * bh}" width="{w:.1f}" height="{bh - 1}" fill="{colour}">'
                       f'<title>{html.escape(label)}: {v:.0f} {unit}</title></rect>')
            out.append(f'<text x="{left + w + 4:.1f}" y="{y + j * bh + bh - 2}">{v:.0f}</text>')
    out.append("</svg>")
    return "".join(out)


def kernel_chart_svg(report: dict[str, Any]) -> str:
    """Predicted (grey) and simulated (blue) cycles of each kernel, in program order."""
    rows = [(k["name"], [(float(k.get("predicted_cycles") or 0), "#9aa0a6"), (float(k["cycles"]), "#4a78c2")])
            for k in report["kernels"]]
    return _bar_svg(rows)


def timeline_svg(records: list[Any], cores: int, width: int = 900) -> str:
    """Each task as a bar on its core's row over [start, end), coloured by kernel."""
    end = max((r.end for r in records), default=1.0) or 1.0
    left, rh = 60, 22
    palette = ["#4a78c2", "#c2452d", "#3b9c5a", "#d08c1f", "#7a4fb0", "#2a9ca3", "#b0417a", "#6b7b2a"]
    colour = {k: palette[i % len(palette)] for i, k in enumerate(dict.fromkeys(r.kernel for r in records))}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{cores * rh + 30}" '
           'font-family="Helvetica" font-size="10">']
    for c in range(cores):
        out.append(f'<text x="4" y="{20 + c * rh + 14}">core {c}</text>')
    scale = (width - left - 10) / end
    for r in records:
        x, w = left + r.start * scale, max(0.5, (r.end - r.start) * scale)
        out.append(f'<rect x="{x:.1f}" y="{20 + r.core * rh}" width="{w:.1f}" height="{rh - 4}" '
                   f'fill="{colour[r.kernel]}"><title>{html.escape(r.kernel)} [{r.start:.0f}, {r.end:.0f})'
                   f"</title></rect>")
    out.append(f'<text x="{width - 10}" y="12" text-anchor="end">{end:.0f} cycles</text></svg>')
    return "".join(out)


def _table(head: list[str], rows: list[list[Any]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def html_report(name: str, arch_spec: str, report: dict[str, Any], graph_svg: str | None, graph_dot_text: str,
                timeline: str, memory_svg: str | None, passes: list[tuple[str, float]] | None,
                remarks: list[str] | None) -> str:
    """The compile report page (see the module docstring); `graph_svg` None shows the DOT
    text with the note that graphviz is missing."""
    k_rows = [[k["name"], ", ".join(k["onnx_nodes"][:6]) + (" ..." if len(k["onnx_nodes"]) > 6 else ""),
               ",".join(map(str, k["cores"])), k["tasks"], k.get("predicted_cycles") or "", k["cycles"],
               f"{k['cycles'] / k['predicted_cycles']:.2f}" if k.get("predicted_cycles") else "",
               k["dram_bytes_read"], k["dram_bytes_written"], k.get("dram_vs_min", "")]
              for k in report["kernels"]]
    graph = graph_svg if graph_svg is not None else \
        f"<p>{html.escape(DOT_MISSING)}</p><pre>{html.escape(graph_dot_text)}</pre>"
    u = report["utilization"]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(name)} - npu-compiler report</title>",
        "<style>body{font-family:Helvetica,Arial,sans-serif;margin:0 24px 24px 24px;color:#202124}"
        "h1{font-size:40px;margin:0;padding:16px 0;height:48px;background:#fff}"
        "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;"
        "text-align:left}h2{font-size:18px;margin-top:28px}svg{max-width:100%;height:auto}</style></head><body>",
        f"<h1 id='model-name'>{html.escape(name)}</h1>",
        f"<p>arch {html.escape(arch_spec)} - {report['cycles']} cycles, {report['tasks']} "
        f"tasks in {len(report['kernels'])} kernels; DRAM read {report['dram_bytes_read']} B, written "
        f"{report['dram_bytes_written']} B; utilisation cube {u['cube']:.1%}, vector {u['vector']:.1%}, "
        f"DMA {u['dma']:.1%}" + (f"; roofline ratio {report['roofline_ratio']}" if "roofline_ratio" in report
                                 else "") + "</p>",
        "<h2>Graph after fusion (kernels boxed, layer groups dashed)</h2>", graph,
        "<h2>Kernels: predicted vs simulated cycles</h2>",
        _table(["kernel", "ONNX nodes", "cores", "tasks", "predicted", "simulated", "sim/pred", "DRAM read",
                "DRAM written", "DRAM / min"], k_rows),
        kernel_chart_svg(report), "<h2>Timeline</h2>", timeline,
        "<h2>Memory map</h2>", memory_svg or "<p>(no memory plan)</p>",
        "<h2>Passes</h2>", _table(["pass", "seconds"], [[n, f"{t:.3f}"] for n, t in passes]) if passes
        else "<p>(pass times not recorded)</p>",
        "<h2>Remarks</h2>", "<pre>" + html.escape("\n".join(remarks)) + "</pre>" if remarks
        else "<p>(no remarks recorded)</p>",
        "</body></html>"]
    return "\n".join(parts)

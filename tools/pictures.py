"""Pictures of a compile and the self-contained HTML compile report (`npu-run --graph`,
`npu-run --html`).

- `graph_dot`: the graph as imported as Graphviz DOT, one box per op (ONNX node, op).
- `compiled_dot`: the graph as compiled (the module after `npu-tile`: graph rewrites
  such as npu-hoist-pool done, ops fused into kernels), each kernel of the compiled
  program - the run report's `kernels`, `compiled_kernels` - boxed around the ops it
  runs, a layer or strip group dashed around a box per kernel it merged.
- `render_dot`: SVG/PNG through the `dot` binary when it is on PATH (None else).
- `kernel_chart_svg`, `timeline_svg`: predicted vs simulated cycles per kernel, and
  the tasks on each core over time, as inline SVG.
- `html_report`: title, summary, the graph as compiled, the kernel table (with each
  kernel's element types, `kernel_types`) and chart, the --check verdict and the
  --compare-all table (when run), the timeline, the memory map (`npu-memviz`), the
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
from xdsl.ir import Operation, SSAValue

from npu_dialects.entry import find_main
from npu_dialects.graph import ConstantOp
from npu_dialects.locs import node_names
from npu_dialects.task import TaskOp
from npu_dialects.tile import KernelOp
from tools.quant_steps import percent

DOT_MISSING = ("graphviz's 'dot' is not on PATH: wrote the DOT text only (install graphviz, e.g. "
               "'apt-get install graphviz', for SVG/PNG)")


def _q(s: str) -> str:
    """A DOT string literal (newlines become line breaks)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def compiled_kernels(module: ModuleOp) -> list[tuple[str, list[str]]]:
    """(kernel, ONNX nodes) of each kernel of a task-level module, in program order: the
    mapping the run report's `kernels` use (`runtime/run.py`, each task's `task_nodes`)."""
    from sim.interp import task_nodes
    out: dict[str, list[str]] = {}
    for op in module.walk():
        if isinstance(op, TaskOp):
            nodes = out.setdefault(op.kernel.data, [])
            nodes += [n for n in task_nodes(op) if n not in nodes]
    return list(out.items())


def kernel_types(module: ModuleOp) -> dict[str, dict[str, list[str]]]:
    """Element types of each kernel of a task-level module, by kernel name: `inputs` and
    `outputs` (what its DMA copies read from and write to DRAM), `accumulator` (what its
    cube ops accumulate in: i32 for integer products, f32 for float ones, which the
    cube accumulates in f32 whatever they store; empty without a cube op)."""
    from npu_dialects.compute import ComputeOp
    from npu_dialects.dma import CopyOp, memory_space
    from npu_dialects.dtypes import element_type, is_float, type_name
    out: dict[str, dict[str, list[str]]] = {}

    def add(k: dict[str, list[str]], key: str, t: str) -> None:
        if t not in k[key]:
            k[key].append(t)

    for task in module.walk():
        if not isinstance(task, TaskOp):
            continue
        k = out.setdefault(task.kernel.data, {"inputs": [], "outputs": [], "accumulator": []})
        for op in task.body.walk():
            if isinstance(op, CopyOp):
                src, dst = memory_space(op.src.type), memory_space(op.dst.type)
                if src == "dram" and dst != "dram":
                    add(k, "inputs", type_name(element_type(op.src)) or "?")
                elif dst == "dram" and src != "dram":
                    add(k, "outputs", type_name(element_type(op.dst)) or "?")
            elif isinstance(op, ComputeOp) and op.UNIT == "cube":
                t = element_type(op.operands[-1])
                add(k, "accumulator", "f32" if is_float(t) else type_name(t) or "?")
    return out


def _types_cell(types: dict[str, list[str]] | None) -> str:
    """'i8, f32 -> f32 (acc i32)' of `kernel_types`' entry."""
    if types is None:
        return ""
    text = f"{', '.join(types['inputs']) or '-'} -> {', '.join(types['outputs']) or '-'}"
    return text + (f" (acc {', '.join(types['accumulator'])})" if types["accumulator"] else "")


def _op_names(op: Operation) -> list[str]:
    """The ONNX nodes of a graph op (and of the ops in its regions)."""
    names: list[str] = []
    for o in op.walk():
        names += [n for n in node_names(o) if n not in names]
    return names


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


def _header(title: str) -> list[str]:
    return [f"digraph {_q(title)} {{", f"  label={_q(title)}; labelloc=t; fontname=Helvetica;",
            "  node [shape=box, style=rounded, fontname=Helvetica, fontsize=10];"]


def graph_dot(graph: ModuleOp, title: str) -> str:
    """DOT of the graph-level module `graph` as imported: one box per op, no kernels."""
    nodes, edges = _graph_nodes(graph)
    lines = _header(title)
    lines += [f"  {nid} [label={_q(label)}];" for nid, _, label in nodes]
    lines += [f"  {a} -> {b};" for a, b in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


class _TiledGraph:
    """The graph as compiled, read from a module after `npu-tile`: one node per graph op
    inside each `npu_tile.kernel` (its ONNX nodes and op), the data edges between them
    (through kernel operands and results), and each kernel's node ids."""

    def __init__(self, tiled: ModuleOp | None):
        fn = find_main(tiled) if tiled is not None else None
        self.nodes: list[tuple[str, list[str], str]] = []  # (id, ONNX nodes, label)
        self.edges: list[tuple[str, str]] = []
        self.kernels: list[tuple[str, list[str]]] = []  # (kernel, its node ids) in program order
        self.loose: list[str] = []  # nodes outside every tile kernel (inputs, outputs)
        self.src: dict[SSAValue, str] = {}
        if fn is None:
            return
        for i, arg in enumerate(fn.body.block.args):
            self.src[arg] = f"in{i}"
            self._node(f"in{i}", [], f"input {i}")
            self.loose.append(f"in{i}")
        for op in fn.body.block.ops:
            if isinstance(op, ConstantOp):
                continue
            if isinstance(op, KernelOp):
                self._kernel(op)
            elif isinstance(op, func.ReturnOp):
                self._node("out", [], "outputs", op.operands)
                self.loose.append("out")
            else:  # (not a tile-level op: drawn on its own)
                nid = self._op(op, op.operands)
                self.loose.append(nid)
                for r in op.results:
                    self.src[r] = nid

    def _node(self, nid: str, names: list[str], label: str, operands: Iterable[SSAValue] = ()) -> None:
        self.nodes.append((nid, names, label))
        for v in operands:
            if v in self.src and (self.src[v], nid) not in self.edges:
                self.edges.append((self.src[v], nid))

    def _op(self, op: Operation, operands: Iterable[SSAValue]) -> str:
        nid = f"op{len(self.nodes)}"
        names = _op_names(op)
        self._node(nid, names, "\n".join([*names, op.name.split(".", 1)[-1]]), operands)
        return nid

    def _kernel(self, k: KernelOp) -> None:
        for arg, outer in zip(k.body.block.args, k.ins):
            if outer in self.src:
                self.src[arg] = self.src[outer]
        ids: list[str] = []
        for op in k.graph_ops():
            ids.append(self._op(op, op.operands))
            for r in op.results:
                self.src[r] = ids[-1]
        for r, v in zip(k.outs, k.yield_op.operands):
            if v in self.src:
                self.src[r] = self.src[v]
        self.kernels.append((k.kernel.data, ids))

    def names(self, ids: Iterable[str]) -> list[str]:
        """The ONNX nodes of the nodes `ids`, in order, without duplicates."""
        of = {nid: names for nid, names, _ in self.nodes}
        out: list[str] = []
        for nid in ids:
            out += [n for n in of[nid] if n not in out]
        return out


def _members(name: str, index: dict[str, int]) -> list[int] | None:
    """The tile kernels (indices in program order) a compiled kernel `name` runs: the
    kernel of that name, or a layer/strip/batch group `first..last` and every kernel
    between (`npu-layer-group` groups runs of consecutive kernels); None: neither."""
    if name in index:
        return [index[name]]
    for i in range(len(name)):
        if name.startswith("..", i) and name[:i] in index and name[i + 2:] in index:
            lo, hi = index[name[:i]], index[name[i + 2:]]
            if lo <= hi:
                return list(range(lo, hi + 1))
    return None


def compiled_dot(tiled: ModuleOp | None, compiled: list[tuple[str, list[str]]], title: str) -> str:
    """DOT of the graph as compiled: the ops of `tiled` (the module after `npu-tile`, so
    after the graph rewrites and fusion), one box per kernel of `compiled` (the task
    module's kernels, `compiled_kernels`: the run report's) holding the ops it runs; a
    layer group's box holds a box per tiled kernel it merged. An op no compiled kernel
    runs (a view) is drawn unboxed. A compiled kernel whose ONNX nodes the tiled module
    does not reproduce (it came from another compile, or is None) is drawn as one box
    listing them, so the picture never claims a kernel the program does not have."""
    g = _TiledGraph(tiled)
    index = {name: i for i, (name, _) in enumerate(g.kernels)}
    lines = _header(title)
    drawn: set[str] = set()
    claimed: set[int] = set()

    def node(nid: str, indent: str) -> None:
        drawn.add(nid)
        lines.append(f"{indent}{nid} [label={_q(label[nid])}];")

    label = {nid: text for nid, _, text in g.nodes}
    for c, (name, nodes) in enumerate(compiled):
        members = _members(name, index)
        if members is not None and (claimed & set(members)
                                    or set(g.names(i for m in members for i in g.kernels[m][1])) != set(nodes)):
            members = None
        if members is None:  # (not reproduced: the compiled kernel's ONNX nodes, as one box)
            nid = f"task{c}"
            label[nid] = "\n".join([*nodes, "(as compiled)"])
            lines.append(f"  subgraph cluster_c{c} {{ label={_q('kernel ' + name)}; style=filled; "
                         'fillcolor="#e8f0fe"; color="#4a78c2";')
            node(nid, "    ")
            lines.append("  }")
            continue
        claimed |= set(members)
        if len(members) == 1:
            lines.append(f"  subgraph cluster_c{c} {{ label={_q('kernel ' + name)}; style=filled; "
                         'fillcolor="#e8f0fe"; color="#4a78c2";')
            for nid in g.kernels[members[0]][1]:
                node(nid, "    ")
            lines.append("  }")
            continue
        lines.append(f"  subgraph cluster_c{c} {{ label={_q('layer group ' + name)}; style=dashed; "
                     'color="#c2452d";')
        for m in members:
            kname, ids = g.kernels[m]
            lines.append(f"    subgraph cluster_c{c}_{m} {{ label={_q('kernel ' + kname)}; style=filled; "
                         'fillcolor="#e8f0fe"; color="#4a78c2";')
            for nid in ids:
                node(nid, "      ")
            lines.append("    }")
        lines.append("  }")
    for nid, _, _ in g.nodes:
        if nid not in drawn:
            node(nid, "  ")
    lines += [f"  {a} -> {b};" for a, b in g.edges]
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


def _accuracy(report: dict[str, Any]) -> list[str]:
    """The --check verdict and the --compare-all table, when the run made them."""
    out: list[str] = []
    c = report.get("check")
    if c is not None:
        steps = "".join(f"; '{html.escape(n)}' {html.escape(percent(s['within_one']))} within one step of {s['step']:.3g}, "
                        f"largest {s['max_steps']:.3g} steps" for n, s in (c.get("steps") or {}).items())
        out.append(f"<h2>Check</h2><p>{'ok' if c['ok'] else 'FAILED'} vs {html.escape(str(c.get('reference')))} "
                   f"(max abs err {c['max_abs_err']:.3g}, max rel err {c['max_rel_err']:.3g}){steps}</p>")
    a = report.get("compare_all")
    if a is not None:
        def step_cells(r: dict[str, Any]) -> list[str]:
            s, loc = r.get("steps"), r.get("local_steps")
            return ([f"{100 * s['within_one']:.2f}%", f"{s['max_steps']:.3g}"] if s else ["", ""]) + \
                [f"{loc['max_steps']:.3g}" if loc else ""]
        rows = [[r["node"], r.get("type", "f32"), f"{r['max_abs_err']:.3g}", f"{r['max_rel_err']:.3g}",
                 f"{r['cosine']:.6f}", *step_cells(r), "ok" if r["ok"] else "NO",
                 "" if "onnxruntime" not in r else "ok" if r["onnxruntime"]["ok"] else "NO"] for r in a["tensors"]]
        first = a.get("first_over_tolerance")
        out += ["<h2>Accuracy per layer (--compare-all)</h2>",
                f"<p>first node over tolerance: {html.escape(first)}</p>" if first else
                "<p>every tensor within its type's tolerance</p>",
                _table(["node", "type", "max abs err", "max rel err", "cosine", "<=1 step", "max steps", "local max", "ok",
                        "vs onnxruntime"], rows)]
        approx = a.get("approximations")
        if approx:
            out += ["<h3>Special functions as the arch evaluates them (each op alone against float64)</h3>",
                    _table(["node", "op", "method", "max abs err", "max rel err", "cosine", "ok"],
                           [[r["node"], r["op"], ", ".join(f"{f} {m}" for f, m in r["functions"].items()),
                             f"{r['max_abs_err']:.3g}", f"{r['max_rel_err']:.3g}", f"{r['cosine']:.6f}",
                             "ok" if r["ok"] else "NO"] for r in approx])]
    return out


def _cache_note(report: dict[str, Any]) -> str:
    """What the compile cache did for this compile (the report's `compile_cache`): with
    --html every pass runs, and earlier compiles' per-kernel results are reused."""
    events = report.get("compile_cache") or []
    if not events:
        return "<p>compile cache: off</p>"
    return "<p>compile cache: " + html.escape(", ".join(f"{e['level']} {e['outcome']}" for e in events)) + "</p>"


def html_report(name: str, arch_spec: str, report: dict[str, Any], graph_svg: str | None, graph_dot_text: str,
                timeline: str, memory_svg: str | None, passes: list[tuple[str, float]] | None,
                remarks: list[str] | None, types: dict[str, dict[str, list[str]]] | None = None) -> str:
    """The compile report page (see the module docstring); `graph_svg` None shows the DOT
    text with the note that graphviz is missing. `types` (`kernel_types`) adds each
    kernel's element types: inputs -> outputs (accumulator)."""
    types = types or {}
    k_rows = [[k["name"], _types_cell(types.get(k["name"])),
               ", ".join(k["onnx_nodes"][:6]) + (" ..." if len(k["onnx_nodes"]) > 6 else ""),
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
        "<h2>Graph as compiled (each kernel of the table boxed; a layer group dashed, around the kernels it "
        "merged)</h2>", graph,
        "<h2>Kernels: predicted vs simulated cycles</h2>",
        _table(["kernel", "types (in -> out, accumulator)", "ONNX nodes", "cores", "tasks", "predicted", "simulated", "sim/pred", "DRAM read",
                "DRAM written", "DRAM / min"], k_rows),
        kernel_chart_svg(report), *_accuracy(report), "<h2>Timeline</h2>", timeline,
        "<h2>Memory map</h2>", memory_svg or "<p>(no memory plan)</p>",
        "<h2>Passes</h2>", _table(["pass", "seconds"], [[n, f"{t:.3f}"] for n, t in passes]) if passes
        else "<p>(pass times not recorded)</p>", _cache_note(report),
        "<h2>Remarks</h2>", "<pre>" + html.escape("\n".join(remarks)) + "</pre>" if remarks
        else "<p>(no remarks recorded)</p>",
        "</body></html>"]
    return "\n".join(parts)

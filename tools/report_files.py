"""`npu-run --graph PREFIX` and `--html R.html`: the files of `tools/pictures.py` for one
run (the original graph, its fused kernels, the compiled kernels, the run's records).
Graphviz's `dot` is looked up at run time; without it the DOT files are still written,
with a note on stderr, and the HTML report shows the DOT text."""

from __future__ import annotations

import os
import sys
from typing import Any

from npu_dialects import make_context
from tools.pictures import (
    DOT_MISSING,
    compiled_kernels,
    fused_kernels,
    graph_dot,
    html_report,
    render_dot,
    timeline_svg,
)


def fused_graph(graph):
    """A copy of the graph-level module through the default graph passes, npu-fuse and
    npu-split-rows (for an executable, whose compile did not run here)."""
    from lowering import get_all_passes
    from lowering.pipeline import DEFAULT_PIPELINE
    module = graph.clone()
    ctx = make_context()
    passes = get_all_passes()
    for name in DEFAULT_PIPELINE[:DEFAULT_PIPELINE.index("npu-split-rows") + 1]:
        passes[name]()().apply(ctx, module)
    return module


def _write(path: str, data: str | bytes) -> None:
    from tools.npu_run import UserError
    try:
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
    except OSError as e:
        raise UserError(f"cannot write '{path}': {e.strerror or e}") from None


def _memory_svg(loaded, records) -> str | None:
    from tools.npu_memviz import collect, render
    from tools.npu_run import UserError
    spans = [(float(r.start), float(r.end)) for r in sorted(records, key=lambda r: r.index)]
    try:
        return render(collect(loaded.module, loaded.arch, spans or None, "cycles" if spans else "tasks"))
    except UserError:
        return None


def write_pictures(args: Any, loaded, result, reference) -> None:
    """Write what --graph and --html ask for."""
    graph, _ = reference
    name = os.path.splitext(os.path.basename(args.input))[0]
    fused = getattr(args, "fused_module", None)  # (kept by the compile; an executable was not compiled here)
    kernels = fused_kernels(fused if fused is not None else fused_graph(graph))
    after = graph_dot(graph, f"{name} after fusion", kernels, compiled_kernels(loaded.module))
    after_svg = render_dot(after)
    if args.graph:
        before = graph_dot(graph, f"{name} before fusion")
        for tag, text in (("before", before), ("after", after)):
            _write(f"{args.graph}.{tag}.dot", text)
            svg = after_svg if tag == "after" else render_dot(text)
            if svg is not None:
                _write(f"{args.graph}.{tag}.svg", svg)
        if after_svg is None:
            print(f"note: {DOT_MISSING}", file=sys.stderr)
    if args.html:
        svg = after_svg.decode() if after_svg is not None else None
        if svg is not None and svg.startswith("<?xml"):
            svg = svg[svg.index("<svg"):]
        page = html_report(name, loaded.arch.spec(), result.report, svg, after,
                           timeline_svg(result.records, loaded.arch.cores), _memory_svg(loaded, result.records),
                           getattr(args, "pass_times", None), getattr(args, "remarks_list", None))
        _write(args.html, page)

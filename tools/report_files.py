"""`npu-run --graph PREFIX` and `--html R.html`: the files of `tools/pictures.py` for one
run (the original graph, the graph as compiled - after `npu-tile` - with the compiled
kernels the run report lists, the run's records).
Graphviz's `dot` is looked up at run time; without it the DOT files are still written,
with a note on stderr, and the HTML report shows the DOT text."""

from __future__ import annotations

import io
import os
import sys
from typing import Any

from tools.pictures import (
    DOT_MISSING,
    compiled_dot,
    compiled_kernels,
    graph_dot,
    html_report,
    kernel_types,
    render_dot,
    timeline_svg,
)


def tiled_graph(graph, weights, arch, pipeline: str | None):
    """The graph-level module as `pipeline` (None: `npu-default`) leaves it after
    `npu-tile`, compiling a copy (for an executable, whose compile did not run here:
    the pipeline it records); None when that compile fails."""
    from lowering.instrument import Instrumentation, InstrumentOptions
    from tools.api import compile_graph
    from tools.cli import UsageError, UserError
    with Instrumentation(InstrumentOptions(progress=False, keep_after=("npu-tile",)), stream=io.StringIO()) as inst:
        try:
            compile_graph(graph.clone(), arch, dict(weights), pipeline)
        except (UsageError, UserError):
            return None
    return inst.kept.get("npu-tile")


def _recorded_pipeline(loaded, path: str) -> str | None:
    """The pipeline an executable records (None: npu-default)."""
    if loaded.kind != "npuexe":
        return None
    from runtime.executable import ExecutableError, read_executable
    try:
        pipeline = read_executable(path, loaded.arch).meta.get("pipeline")
    except ExecutableError:
        return None
    return pipeline if isinstance(pipeline, str) else None


def _write(path: str, data: str | bytes) -> None:
    from tools.cli import write_output
    write_output(path, data)  # (atomic: a failed write keeps the old file)


def _memory_svg(loaded, records) -> str | None:
    from tools.cli import UserError
    from tools.npu_memviz import collect, render
    spans = [(float(r.start), float(r.end)) for r in sorted(records, key=lambda r: r.index)]
    try:
        return render(collect(loaded.module, loaded.arch, spans or None, "cycles" if spans else "tasks"))
    except UserError:
        return None


def write_pictures(args: Any, loaded, result, reference) -> None:
    """Write what --graph and --html ask for."""
    graph, weights = reference
    name = os.path.splitext(os.path.basename(args.input))[0]
    tiled = getattr(args, "tiled_module", None)  # (kept by the compile; an executable was not compiled here)
    if tiled is None:
        tiled = tiled_graph(graph, weights, loaded.arch, _recorded_pipeline(loaded, args.input))
    after = compiled_dot(tiled, compiled_kernels(loaded.module), f"{name} as compiled")
    after_svg = render_dot(after)
    if args.graph:
        before = graph_dot(graph, f"{name} as imported")
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
                           getattr(args, "pass_times", None), getattr(args, "remarks_list", None),
                           kernel_types(loaded.module))
        _write(args.html, page)

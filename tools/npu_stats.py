"""`npu-stats MODEL [MODEL ...] [--arch SPEC] [--json FILE] [--top N]`: what a model does
on the NPU, for a chip architect: its operator mix (ONNX op types: nodes, MACs), the
fusion patterns and layer/strip groups the compiler formed, kernels on slow paths
(matmul-like work on the vector unit, cube padding waste, element gathers, short-run
strided DMA), SRAM pressure and DRAM traffic against its minimum per kernel, the
optimisations that were blocked and why (the compiler's `missed` remarks), and the
figures for the next ISA (cycles by unit, DMA- vs compute-bound time, cube utilisation,
the vector-unit op types that cost most).

MODEL: an `.onnx` file or a light zoo name (`resnet50`: `tools/testkit/zoo.py`). Each
model is compiled with `npu-default` (`tools.api.compile`) and simulated once (timing
only when the simulator offers it). With several models, an aggregate follows. The
terminal shows the top rows of each table (`--top`); `--json` writes everything.
Exit codes: 0 success, 1 a diagnosed error (bad model, unsupported op, does not fit),
2 bad usage (a bad --arch).

Algorithm
---------
Sources: the graph after the graph passes (before fusion) for the op mix; the module
after `npu-tile` (fused kernels) and after `npu-layer-group` (the kernels that run:
plans, SRAM bytes, body ops); the remarks of the compile; the run report and the
simulator's task records (per task: cube/vector cycles, what its core waited on) and
trace (one span per compute op); the task-level program for DMA shapes.

- Op mix: ONNX nodes per op type; an npu_graph op's MACs (`GraphOp.macs`) count for
  the first ONNX node its location names; `kept` nodes are those some graph op names
  (the rest were folded or canonicalized away).
- Op mix by element type (`--precision` compiles in f16/bf16; a QDQ model runs i8):
  per type the graph ops computing in it (a cube op's input type, else the widest
  type it touches), their MACs, and the bytes of the tensors of that type.
- Cube waste of a kernel: 1 - (MACs of its cube ops, each over the cube's MACs per
  cycle for its input type, `Arch.cube_rate`) / (its simulated cube cycles): the
  blocks padded up to the cube's m x k x n (and, in strip groups, recomputed halo rows).
- Vector matmul: MACs of a kernel's structured ops (`npu_compute.apply` on the vector
  unit, e.g. fused attention) - matmul work that no cube op does.
- Strided DMA (static, per `npu_dma.copy` op in the program, not per execution): its
  DRAM side is read or written in runs of contiguous bytes; `short` runs are below the
  arch's `align` bytes (one burst), which real DRAM moves as whole bursts.
- Slow-path rows carry the cycles at stake: a vector matmul's or a gather's vector-unit
  cycles (its ONNX nodes'), the cube cycles lost to padding, a strided kernel's DMA
  waits (the simulator does not charge short runs: what a better DMA could win at most).
- SRAM: the kernel's planned `sram_bytes` over the core's `sram_bytes`.
- Bound: a task's body time splits into compute and DMA waits (`TaskRecord.stalls`);
  a kernel is DMA-bound when its DMA waits exceed its compute. `dma_bound_share`: DMA
  waits / (compute + DMA waits), summed over all tasks.
- Cube utilisation: cube busy cycles / (cores x cycles); cube efficiency: model cube
  MACs at their types' rates / cube busy cycles.
- Vector ops by cycles: the simulated vector-unit spans summed by compute op
  (`eltwise relu`, `apply`, `pool`) and the ONNX op type of the node they came from.
- Blocked: `missed` remarks by pass and reason (numbers replaced by N, the detail after
  " - " or " (" dropped), counted, with one full message as an example.
"""

from __future__ import annotations

import argparse
import inspect
import io
import os
import re
import time
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from npu_dialects.files import collector_paused
from tools.cli import EXIT_OK, UsageError, UserError, cli_main, console, error_line

SECTIONS = ("model", "arch", "headline", "op_mix", "graph_ops", "types", "patterns", "kernels", "slow_paths",
            "blocked", "isa")
"""The keys of one model's JSON object (the aggregate's are in `aggregate`)."""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="npu-stats",
                                description="Statistics of models on the NPU for chip architects: op mix, fusion "
                                            "patterns, slow paths, SRAM and DRAM per kernel, blocked "
                                            "optimisations, figures for the next ISA.")
    p.add_argument("models", metavar="MODEL", nargs="+",
                   help="an .onnx model or a light zoo name (resnet50, squeezenet, ...)")
    p.add_argument("--arch", metavar="SPEC", help="machine: a preset plus overrides, e.g. 'default,cores=1'")
    p.add_argument("--json", metavar="FILE", help="write every figure (no truncation) as JSON")
    p.add_argument("--top", type=int, default=8, metavar="N", help="rows per terminal table (default 8)")
    from tools.npu_compile import add_precision_option
    add_precision_option(p)
    return p


# ----------------------------------------------------------------------------- compile and run


@dataclass
class Compiled:
    """One model compiled, with what the passes left behind on the way."""

    path: str
    onnx_types: dict[str, str]  # ONNX node name -> op type
    exe: Any  # runtime.executable.Executable
    graph: Any  # ModuleOp after the graph passes, before fusion
    tiled: Any  # ModuleOp after npu-tile
    grouped: Any  # ModuleOp after npu-layer-group
    remarks: list[Any]  # lowering.remarks.Remark
    compile_seconds: float


KEEP = ("npu-cse", "npu-tile", "npu-layer-group")
"""The passes after which the compile keeps a copy of the module (`npu-cse`: the last graph pass)."""
CONVERTED = "npu-convert-precision"
"""Kept too when it runs (`--precision`): the graph in the types it computes in."""


def resolve_model(arg: str) -> str:
    """The .onnx path MODEL names: a file, else a light zoo name."""
    if os.path.splitext(arg)[1].lower() == ".onnx" or os.sep in arg or os.path.exists(arg):
        if not os.path.isfile(arg):
            raise UserError(f"cannot read model '{arg}': no such file")
        return arg
    from tools.testkit.zoo import LIGHT_MODELS, light_models
    if arg not in LIGHT_MODELS:
        raise UserError(f"model '{arg}' is neither an .onnx file nor a light zoo model ({', '.join(LIGHT_MODELS)})")
    try:
        return str(light_models()[arg])
    except FileNotFoundError as e:
        raise UserError(str(e)) from None


def compile_model(arg: str, arch_spec: str | None, precision: str | None = None) -> Compiled:
    """Compile MODEL with `tools.api.compile`, keeping the remarks and the modules of `KEEP`."""
    from lowering.importer.onnx_import import OnnxImportError, load_model
    from lowering.instrument import Instrumentation, InstrumentOptions
    from lowering.remarks import collecting
    from tools.api import compile as api_compile

    path = resolve_model(arg)
    try:
        model = load_model(path)
    except OnnxImportError as e:
        raise UserError(e.located(path)) from None
    types = {n.name: n.op_type for n in model.graph.node if n.name}
    options = InstrumentOptions(progress=False, keep_after=(*KEEP, CONVERTED))
    start = time.perf_counter()
    with collector_paused(), collecting() as remarks, Instrumentation(options, stream=io.StringIO()) as inst:
        exe = api_compile(model, arch=arch_spec, **({"precision": precision} if precision else {}))
    seconds = time.perf_counter() - start
    kept = inst.kept
    if any(p not in kept for p in KEEP):
        raise UserError(f"'{path}': the compile ran no {', '.join(p for p in KEEP if p not in kept)}")
    return Compiled(path, types, exe, kept.get(CONVERTED, kept["npu-cse"]), kept["npu-tile"], kept["npu-layer-group"],
                    list(remarks), seconds)


def _simulate(module, weights, arch):
    """The one simulation of a model: timing only when `sim.simulate` offers it (same
    cycles, no numerics), else functional on seeded random inputs; with the trace."""
    import sim
    from runtime.run import RunError, random_inputs, run
    from sim import SimError, signature

    options: dict[str, Any] = {"sanitize": False}
    if "timing_only" in inspect.signature(sim.simulate).parameters:
        options["timing_only"] = True
    try:
        return run(module, weights, random_inputs(signature(module), 0), arch, trace=True, **options)
    except RunError as e:
        raise UserError(str(e)) from None
    except SimError as e:
        raise UserError(error_line(str(e)), e.details) from None


# ----------------------------------------------------------------------------- sections


def _graph_ops(module) -> list[Any]:
    """The graph ops of a graph-level module's functions (constants left out)."""
    from xdsl.dialects.func import FuncOp

    from npu_dialects.graph import ConstantOp, GraphOp
    return [op for func in module.ops if isinstance(func, FuncOp) for op in func.body.walk()
            if isinstance(op, GraphOp) and not isinstance(op, ConstantOp)]


def source_node(name: str, onnx_types: dict[str, str]) -> str | None:
    """The ONNX node a location name stands for: itself, or the node whose function body
    it is a node of (the importer names those `NODE/OpType#i`, nested bodies deeper)."""
    while name not in onnx_types:
        if "/" not in name:
            return None
        name = name.rsplit("/", 1)[0]
    return name


def op_mix(c: Compiled) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows per ONNX op type (nodes, kept, MACs, share) and per npu_graph op (count, MACs,
    unit) of the graph before fusion (Algorithm)."""
    from npu_dialects.graph import StructuredOp
    from npu_dialects.locs import node_names

    nodes = Counter(c.onnx_types.values())
    kept: dict[str, set[str]] = {}
    macs: Counter[str] = Counter()
    ops: dict[str, dict[str, Any]] = {}
    for op in _graph_ops(c.graph):
        names = list(dict.fromkeys(s for n in node_names(op) if (s := source_node(n, c.onnx_types)) is not None))
        for n in names:
            kept.setdefault(c.onnx_types[n], set()).add(n)
        m = op.macs()
        if names:
            macs[c.onnx_types[names[0]]] += m
        short = op.name.split(".")[-1]
        row = ops.setdefault(short, {"op": short, "count": 0, "macs": 0,
                                     "unit": "vector" if isinstance(op, StructuredOp) or not m else "cube"})
        row["count"] += 1
        row["macs"] += m
    total = sum(macs.values()) or 1
    rows = [{"op_type": t, "nodes": nodes[t], "kept": len(kept.get(t, ())), "macs": macs[t],
             "macs_share": macs[t] / total} for t in nodes]
    rows.sort(key=lambda r: (-r["macs"], -r["nodes"], r["op_type"]))
    graph_rows = sorted(ops.values(), key=lambda r: (-r["macs"], -r["count"], r["op"]))
    for r in graph_rows:
        r["macs_share"] = r["macs"] / total
    return rows, graph_rows


def compute_type(op) -> str:
    """The element type an op computes in: a cube op's input type, else the widest it
    reads or writes (`npu_dialects.arch`: how its cycles are priced)."""
    from npu_dialects.arch import value_type, widest_type
    return value_type(op.operands[0]) if op.macs() and op.operands else widest_type((*op.operands, *op.results))


def type_mix(module) -> list[dict[str, Any]]:
    """Per element type of the graph before fusion: the ops computing in it, their MACs,
    and the bytes of the tensors of that type (results and the constants ops read)."""
    from npu_dialects.dtypes import nbytes, type_name
    from npu_dialects.graph import ConstantOp
    rows: dict[str, dict[str, Any]] = {}

    def row(t: str) -> dict[str, Any]:
        return rows.setdefault(t, {"type": t, "ops": 0, "macs": 0, "bytes": 0})
    seen: set[Any] = set()
    for op in _graph_ops(module):
        r = row(compute_type(op))
        r["ops"] += 1
        r["macs"] += op.macs()
        for v in (*op.results, *(o for o in op.operands if isinstance(o.owner, ConstantOp))):
            name = type_name(v.type.element_type) if hasattr(v.type, "element_type") else None
            if name is not None and v not in seen:
                seen.add(v)
                row(name)["bytes"] += nbytes(v)
    total = sum(r["macs"] for r in rows.values()) or 1
    for r in rows.values():
        r["macs_share"] = r["macs"] / total
    return sorted(rows.values(), key=lambda r: (-r["macs"], -r["ops"], r["type"]))


def _kernels(module) -> list[Any]:
    from npu_dialects.tile import KernelOp
    return [op for op in module.walk() if isinstance(op, KernelOp)]


def composition(kernel) -> str:
    """A fused kernel's ops joined by '+' (`conv2d+add+relu`), constants and reshapes left out."""
    from npu_dialects.graph import ConstantOp, ReshapeOp, SliceOp
    ops = [o.name.split(".")[-1] for o in kernel.graph_ops() if not isinstance(o, (ConstantOp, ReshapeOp, SliceOp))]
    return "+".join(ops) or "view"


def group_label(kernel) -> str | None:
    """`strip group` or `layer group` for a group kernel, else None."""
    from npu_dialects.tile import KernelKind, StripPlanAttr
    if kernel.kind.data != KernelKind.GROUP:
        return None
    return "strip group" if isinstance(kernel.plan, StripPlanAttr) else "layer group"


def patterns(c: Compiled) -> dict[str, Any]:
    """Kernel compositions after npu-tile (each counted, also those inside groups) and
    the groups npu-layer-group formed, by kind and size."""
    tiled = _kernels(c.tiled)
    order = {k.kernel.data: i for i, k in enumerate(tiled)}
    kernels = Counter(composition(k) for k in tiled)
    groups: Counter[str] = Counter()
    members: dict[str, list[str]] = {}
    for k in _kernels(c.grouped):
        label = group_label(k)
        if label is None:
            continue
        first, _, last = k.kernel.data.partition("..")
        span = [composition(t) for t in tiled[order.get(first, 0):order.get(last, -2) + 1]]
        groups[f"{label} of {len(span)} kernels" if span else label] += 1
        members[k.kernel.data] = span
    return {"kernels": dict(kernels.most_common()), "groups": dict(groups.most_common()), "group_members": members}


def _records_by_kernel(records) -> dict[str, dict[str, float]]:
    """Per kernel: cube and vector cycles, compute and DMA-wait cycles, summed over its tasks."""
    from runtime.profile import DMA_STALLS
    out: dict[str, dict[str, float]] = {}
    for r in records:
        k = out.setdefault(r.kernel, {"cube": 0, "vector": 0, "compute": 0.0, "dma_wait": 0.0})
        k["cube"] += r.compute_cycles.get("cube", 0)
        k["vector"] += r.compute_cycles.get("vector", 0)
        k["compute"] += r.stalls.get("compute", 0.0)
        k["dma_wait"] += sum(r.stalls.get(s, 0.0) for s in DMA_STALLS)
    return out


def dma_shapes(module, align: int) -> dict[str, dict[str, int]]:
    """Per kernel, its `npu_dma.copy` ops touching DRAM (static count): how many, how many
    strided (several contiguous runs), how many with runs shorter than `align` bytes, and
    the shortest run in bytes."""
    from npu_dialects.dma import CopyOp, memory_space
    from npu_dialects.task import TaskOp

    out: dict[str, dict[str, int]] = {}
    for task in module.walk():
        if not isinstance(task, TaskOp):
            continue
        row = out.setdefault(task.kernel.data, {"copies": 0, "strided": 0, "short_runs": 0, "min_run_bytes": 0})
        for op in task.body.walk():
            if not isinstance(op, CopyOp):
                continue
            dram = [v for v in (op.src, op.dst) if memory_space(v.type) == "dram"]
            if not dram:
                continue
            run, runs = _run_elements(tuple(dram[0].type.get_shape()), tuple(op.window))  # type: ignore[union-attr]
            row["copies"] += 1
            row["strided"] += runs > 1
            row["short_runs"] += runs > 1 and run * 4 < align
            row["min_run_bytes"] = min(row["min_run_bytes"] or run * 4, run * 4)
    return out


def _run_elements(shape: tuple[int, ...], window: tuple[int, ...]) -> tuple[int, int]:
    """(elements per contiguous run, runs) of a row-major window of a buffer of `shape`."""
    run = 1
    for d in range(len(window) - 1, -1, -1):
        run *= window[d]
        if window[d] != shape[d]:
            break
    total = 1
    for w in window:
        total *= w
    return run, (total // run if run else 0)


def kernel_rows(c: Compiled, report: dict[str, Any], records, arch) -> list[dict[str, Any]]:
    """One row per kernel that ran: the run report's row with its kind and pattern, SRAM
    planned, cube/vector cycles, useful and vector MACs, cube waste, bound and DMA shapes."""
    from npu_dialects.graph import StructuredOp
    from npu_dialects.locs import node_names
    by_name = {k.kernel.data: k for k in _kernels(c.grouped)}
    per = _records_by_kernel(records)
    dmas = dma_shapes(c.exe.module, arch.align)
    rows = []
    for r in report["kernels"]:
        k = by_name.get(r["name"])
        sim = per.get(r["name"], {"cube": 0, "vector": 0, "compute": 0.0, "dma_wait": 0.0})
        ops = k.graph_ops() if k is not None else []
        on_cube = [o for o in ops if not isinstance(o, StructuredOp) and o.macs()]
        cube_macs = sum(o.macs() for o in on_cube)
        ideal = sum((Fraction(o.macs()) / arch.cube_rate(compute_type(o)) for o in on_cube), Fraction(0))
        on_vector = [o for o in ops if isinstance(o, StructuredOp) and o.macs()]
        vector_macs = sum(o.macs() for o in on_vector)
        sram = k.sram_bytes.value.data if k is not None else 0
        rows.append({
            **{key: r.get(key) for key in ("name", "onnx_nodes", "cycles", "task_cycles", "predicted_cycles",
                                             "dram_bytes_read", "dram_bytes_written", "min_dram_bytes",
                                             "dram_vs_min")},
            "kind": (group_label(k) or k.kind.data.value) if k is not None else "?",
            "pattern": composition(k) if k is not None else "?",
            "sram_bytes": sram, "sram_share": sram / arch.sram_bytes,
            "cube_cycles": sim["cube"], "vector_cycles": sim["vector"],
            "compute_wait": round(sim["compute"], 3), "dma_wait": round(sim["dma_wait"], 3),
            "bound": "dma" if sim["dma_wait"] > sim["compute"] else "compute",
            "cube_macs": cube_macs, "vector_macs": vector_macs,
            "vector_matmul_nodes": list(dict.fromkeys(n for o in on_vector for n in node_names(o))),
            "cube_waste": 1 - float(ideal / sim["cube"]) if sim["cube"] else None,
            "dma": dmas.get(r["name"], {"copies": 0, "strided": 0, "short_runs": 0, "min_run_bytes": 0}),
        })
    return rows


def node_vector_cycles(trace: list[dict[str, Any]]) -> Counter[str]:
    """Simulated vector-unit cycles per ONNX node (a compute op's span counts for the
    first node its location names)."""
    out: Counter[str] = Counter()
    for e in trace:
        nodes = e["args"].get("onnx_nodes") if e.get("cat") == "vector" else None
        if nodes:
            out[nodes[0]] += e["args"].get("cycles", 0)
    return out


def slow_paths(kernels: list[dict[str, Any]], remarks, node_cycles: Counter[str]) -> list[dict[str, Any]]:
    """Kernels on a slow path, one row per (kernel, reason), worst first; the cycles of a
    vector matmul or a gather are the vector-unit cycles of its ONNX nodes."""
    rows: list[dict[str, Any]] = []
    owner = {n: k["name"] for k in kernels for n in k["onnx_nodes"]}
    for k in kernels:
        if k["vector_macs"]:
            rows.append({"kernel": k["name"], "path": "vector matmul",
                         "cycles": sum(node_cycles[n] for n in k["vector_matmul_nodes"]),
                         "nodes": k["vector_matmul_nodes"],
                         "detail": f"{k['vector_macs']} MACs on the vector unit ({_nodes(k['vector_matmul_nodes'])})"})
        if k["cube_waste"] is not None and k["cube_waste"] >= 0.25:
            wasted = round(k["cube_cycles"] * k["cube_waste"])
            rows.append({"kernel": k["name"], "path": "cube padding", "cycles": wasted,
                         "detail": f"{k['cube_waste']:.0%} of {k['cube_cycles']} cube cycles wasted"})
        if k["dma"]["short_runs"]:
            d = k["dma"]
            rows.append({"kernel": k["name"], "path": "strided DMA", "cycles": k["dma_wait"],
                         "detail": f"{d['short_runs']} of {d['copies']} copies in DRAM runs below a burst "
                                   f"(shortest {d['min_run_bytes']} B)"})
    for r in remarks:
        if r.kind == "missed" and "slow path:" in r.message:
            name = next((owner[n] for n in r.nodes if n in owner), "?")
            rows.append({"kernel": name, "path": "gather", "cycles": sum(node_cycles[n] for n in r.nodes),
                         "nodes": list(r.nodes),
                         "detail": r.message.split("slow path: ", 1)[1].split(" (")[0]})
    rows.sort(key=lambda r: -r["cycles"])
    return rows


def _nodes(names: list[str]) -> str:
    return ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")


_NUMBER = re.compile(r"\d+")


def reason(message: str) -> str:
    """A remark's message without names, numbers and detail: the key remarks group by."""
    m = re.sub(r"^kernel '[^']*': ", "", message)
    m = re.sub(r"^'[^']*' and the next kernel ", "", m)
    # (a quoted name opens and closes outside a word: "core's" and "op's" are not quotes)
    m = re.sub(r"(?<!\w)'[^']*'(?!\w)", lambda q: q.group(0) if q.group(0).startswith("'npu_") else "'X'", m)
    m = m.split(" - ")[0].split(" (")[0]
    return _NUMBER.sub("N", m)


def blocked(remarks) -> list[dict[str, Any]]:
    """The `missed` remarks by (pass, reason), counted, most frequent first."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for r in remarks:
        if r.kind != "missed":
            continue
        key = (r.pass_name, reason(r.message))
        g = groups.setdefault(key, {"pass": key[0], "reason": key[1], "count": 0, "example": r.line()})
        g["count"] += 1
    return sorted(groups.values(), key=lambda g: (-g["count"], g["pass"], g["reason"]))


def vector_ops(trace: list[dict[str, Any]], onnx_types: dict[str, str]) -> list[dict[str, Any]]:
    """Simulated vector-unit cycles by compute op and ONNX op type (Algorithm)."""
    cycles: Counter[str] = Counter()
    for e in trace:
        if e.get("cat") != "vector":
            continue
        label = e["name"].split(": ", 1)[0]
        nodes = e["args"].get("onnx_nodes") or []
        kind = next((onnx_types[s] for n in nodes if (s := source_node(n, onnx_types)) is not None), "?")
        cycles[f"{label} ({kind})"] += e["args"].get("cycles", 0)
    total = sum(cycles.values()) or 1
    return [{"op": k, "cycles": v, "share": v / total} for k, v in cycles.most_common()]


def isa_figures(report: dict[str, Any], kernels: list[dict[str, Any]], sim, c: Compiled) -> dict[str, Any]:
    """The figures for the next ISA (Algorithm) from the run report, the kernel rows and
    the simulator's result `sim`."""
    arch = sim.arch
    cube = sum(k["cube_cycles"] for k in kernels)
    vector = sum(k["vector_cycles"] for k in kernels)
    compute = sum(k["compute_wait"] for k in kernels)
    dma = sum(k["dma_wait"] for k in kernels)
    spans = {b: sum(k["cycles"] or 0 for k in kernels if k["bound"] == b) for b in ("compute", "dma")}
    by_type = report.get("model_macs_by_type") or {"f32": report.get("model_macs", 0)}
    ideal = sum((Fraction(m) / arch.cube_rate(t) for t, m in by_type.items()), Fraction(0))
    return {
        "cube_cycles": cube, "vector_cycles": vector,
        "vector_share_of_compute": vector / (cube + vector) if cube + vector else 0.0,
        "compute_cycles": round(compute, 3), "dma_wait_cycles": round(dma, 3),
        "dma_bound_share": dma / (compute + dma) if compute + dma else 0.0,
        "kernel_cycles_by_bound": spans,
        "cube_utilization": report["utilization"]["cube"],
        "vector_utilization": report["utilization"]["vector"],
        "dram_bw_utilization": report["utilization"]["dma"],
        "cube_efficiency": float(ideal / cube) if cube else None,
        "vector_macs": sum(k["vector_macs"] for k in kernels),
        "top_vector_ops": vector_ops(sim.trace, c.onnx_types),
    }


def model_stats(arg: str, arch_spec: str | None, precision: str | None = None) -> dict[str, Any]:
    """Every section of one model (`SECTIONS`)."""
    start = time.perf_counter()
    c = compile_model(arg, arch_spec, precision)
    res = _simulate(c.exe.module, c.exe.weights, c.exe.arch)
    report, sim = res.report, res.sim
    assert sim is not None, "runtime.run.run keeps the simulator's result"
    kernels = kernel_rows(c, report, sim.tasks, c.exe.arch)
    mix, graph_ops = op_mix(c)
    moved = report["dram_bytes_read"] + report["dram_bytes_written"]
    headline = {
        "cycles": report["cycles"], "roofline_cycles": report.get("roofline_cycles"),
        "roofline_ratio": report.get("roofline_ratio"), "model_macs": report.get("model_macs"),
        "dram_bytes": moved, "model_min_dram_bytes": report.get("model_min_dram_bytes"),
        "dram_vs_min": moved / report["model_min_dram_bytes"] if report.get("model_min_dram_bytes") else None,
        "kernel_min_dram_bytes": report.get("kernel_min_dram_bytes"),
        "cube_utilization": report["utilization"]["cube"], "kernels": len(kernels), "tasks": report["tasks"],
        "sram_peak_bytes": report.get("memory", {}).get("sram_peak_bytes"),
        "compile_seconds": round(c.compile_seconds, 3), "seconds": round(time.perf_counter() - start, 3),
    }
    return {"model": c.path, "arch": c.exe.arch.spec(), "headline": headline, "op_mix": mix,
            "graph_ops": graph_ops, "types": type_mix(c.graph), "patterns": patterns(c), "kernels": kernels,
            "slow_paths": slow_paths(kernels, c.remarks, node_vector_cycles(sim.trace)), "blocked": blocked(c.remarks),
            "isa": isa_figures(report, kernels, sim, c)}


def summed(stats: list[dict[str, Any]], table: str, key: str, counts: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The rows of each model's `table` summed over the models, by their `key` field."""
    out: dict[str, dict[str, Any]] = {}
    for s in stats:
        for r in s[table]:
            a = out.setdefault(r[key], {key: r[key], **{c: 0 for c in counts}})
            for c in counts:
                a[c] += r[c]
    return out


def aggregate(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Op mix, patterns and blocked reasons summed over the models; a headline row per model."""
    mix = summed(stats, "op_mix", "op_type", ("nodes", "kept", "macs"))
    total = sum(r["macs"] for r in mix.values()) or 1
    for r in mix.values():
        r["macs_share"] = r["macs"] / total
    types = summed(stats, "types", "type", ("ops", "macs", "bytes"))
    kernels: Counter[str] = Counter()
    groups: Counter[str] = Counter()
    reasons: Counter[tuple[str, str]] = Counter()
    for s in stats:
        kernels.update(s["patterns"]["kernels"])
        groups.update(s["patterns"]["groups"])
        reasons.update({(b["pass"], b["reason"]): b["count"] for b in s["blocked"]})
    return {
        "models": [{"model": s["model"], **{k: s["headline"][k] for k in (
            "cycles", "roofline_ratio", "dram_vs_min", "cube_utilization")}} for s in stats],
        "op_mix": sorted(mix.values(), key=lambda r: (-r["macs"], -r["nodes"], r["op_type"])),
        "types": sorted(types.values(), key=lambda r: (-r["macs"], -r["ops"], r["type"])),
        "patterns": {"kernels": dict(kernels.most_common()), "groups": dict(groups.most_common())},
        "blocked": [{"pass": p, "reason": r, "count": n} for (p, r), n in reasons.most_common()],
    }


# ----------------------------------------------------------------------------- terminal


_NUMERIC = re.compile(r"-|[\d.]+[%x]?")


def table(title: str, header: list[str], rows: list[list[Any]], top: int) -> list[str]:
    """An aligned table (numbers right, text left), `top` rows and a '... N more' line."""
    if not rows:
        return [f"{title}: none"]
    shown = [[str(x) for x in r] for r in rows[:top]]
    widths = [max(len(r[i]) for r in [header, *shown]) for i in range(len(header))]

    numeric = [i > 0 and all(_NUMERIC.fullmatch(r[i]) for r in shown) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  " + "  ".join(c.rjust(w) if num else c.ljust(w)
                                for c, w, num in zip(cells, widths, numeric)).rstrip()
    out = [f"{title}:", line(header), *(line(r) for r in shown)]
    if len(rows) > top:
        out.append(f"  ... {len(rows) - top} more")
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}x"


def _short(name: str, width: int = 28) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."


def format_model(s: dict[str, Any], top: int) -> str:
    """One model's sections as terminal tables."""
    h, isa = s["headline"], s["isa"]
    out = [f"== {s['model']} on {s['arch']}",
           f"cycles {h['cycles']} (roofline {h['roofline_cycles']}, {_ratio(h['roofline_ratio'])}), DRAM "
           f"{h['dram_bytes']} B ({_ratio(h['dram_vs_min'])} its minimum), {h['kernels']} kernels, "
           f"{h['tasks']} tasks, {h['model_macs']} MACs"]
    out += table("op mix (ONNX op types)", ["op type", "nodes", "kept", "MACs", "share"],
                 [[r["op_type"], r["nodes"], r["kept"], r["macs"], _pct(r["macs_share"])] for r in s["op_mix"]], top)
    out += table("op mix by element type", ["type", "ops", "MACs", "share", "bytes"],
                 [[r["type"], r["ops"], r["macs"], _pct(r["macs_share"]), r["bytes"]] for r in s["types"]], top)
    p = s["patterns"]
    out += table("fusion patterns (kernels after npu-tile)", ["pattern", "count"], list(map(list, p["kernels"].items())),
                 top)
    out += table("groups (npu-layer-group)", ["group", "count"], list(map(list, p["groups"].items())), top)
    out += table("slow paths", ["kernel", "path", "cycles at stake", "detail"],
                 [[_short(r["kernel"]), r["path"], round(r["cycles"]), r["detail"]] for r in s["slow_paths"]], top)
    ks = sorted(s["kernels"], key=lambda k: -(k["cycles"] or 0))
    out += table("kernels by cycles", ["kernel", "kind", "cycles", "bound", "SRAM", "DRAM/min", "cube waste"],
                 [[_short(k["name"]), k["kind"], round(k["cycles"] or 0), k["bound"], _pct(k["sram_share"]),
                   _ratio(k["dram_vs_min"]), _pct(k["cube_waste"])] for k in ks], top)
    out += table("blocked optimisations (missed remarks)", ["pass", "count", "reason"],
                 [[b["pass"], b["count"], b["reason"]] for b in s["blocked"]], top)
    out += [f"figures for the next ISA: cube {isa['cube_cycles']} / vector {isa['vector_cycles']} busy "
            f"core-cycles (vector {_pct(isa['vector_share_of_compute'])} of compute); DMA-bound "
            f"{_pct(isa['dma_bound_share'])} of task time; cube utilisation {_pct(isa['cube_utilization'])}, "
            f"efficiency {_pct(isa['cube_efficiency'])}; DRAM bandwidth {_pct(isa['dram_bw_utilization'])}"]
    out += table("vector unit by op", ["op (ONNX type)", "cycles", "share"],
                 [[r["op"], r["cycles"], _pct(r["share"])] for r in isa["top_vector_ops"]], top)
    return "\n".join(out)


def format_aggregate(a: dict[str, Any], top: int) -> str:
    out = ["== aggregate over the models"]
    out += table("models", ["model", "cycles", "roofline", "DRAM/min", "cube util"],
                 [[os.path.basename(m["model"]), m["cycles"], _ratio(m["roofline_ratio"]), _ratio(m["dram_vs_min"]),
                   _pct(m["cube_utilization"])] for m in a["models"]], len(a["models"]))
    out += table("op mix", ["op type", "nodes", "MACs", "share"],
                 [[r["op_type"], r["nodes"], r["macs"], _pct(r["macs_share"])] for r in a["op_mix"]], top)
    out += table("op mix by element type", ["type", "ops", "MACs", "bytes"],
                 [[r["type"], r["ops"], r["macs"], r["bytes"]] for r in a["types"]], top)
    out += table("fusion patterns", ["pattern", "count"], list(map(list, a["patterns"]["kernels"].items())), top)
    out += table("groups", ["group", "count"], list(map(list, a["patterns"]["groups"].items())), top)
    out += table("blocked optimisations", ["pass", "count", "reason"],
                 [[b["pass"], b["count"], b["reason"]] for b in a["blocked"]], top)
    return "\n".join(out)


# ----------------------------------------------------------------------------- entry


def _run(args: argparse.Namespace) -> int:
    from tools.api import parse_arch
    from tools.cli import write_json
    parse_arch(args.arch)  # (a bad --arch is a usage error before any compile)
    if args.top < 1:
        raise UsageError(f"--top must be at least 1, got {args.top}")
    stats = []
    for m in args.models:
        s = model_stats(m, args.arch, args.precision)
        stats.append(s)
        print(format_model(s, args.top), flush=True)
    result: dict[str, Any] = {"models": stats}
    if len(stats) > 1:
        result["aggregate"] = aggregate(stats)
        print(format_aggregate(result["aggregate"], args.top))
    if args.json:
        write_json(args.json, result)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of `npu-stats`; returns the exit code."""
    return cli_main(build_parser, _run, argv)


console_main = console(main)
"""The `npu-stats` console script (`tools.cli.console`)."""

if __name__ == "__main__":
    console_main()

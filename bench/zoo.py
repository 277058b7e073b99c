"""Model zoo benchmark: per model, import + compile wall time, node counts before and
after graph optimisation, simulated cycles, and whether the outputs match onnxruntime.

    python bench/zoo.py [--arch SPEC] [--repeat N] [--models a,b] [--out bench/results/zoo.md]

Models: the nine light CNNs of the onnx wheel with seeded random weights
(`tools/testkit/zoo.py:prepare`) and the transformers of `tests/models/` (BERT-style
encoder, GPT-style decoder with the causal mask computed in forward and kept as a
buffer). A transformer that cannot be compiled with its int64 token ids (not
supported yet) is measured again from its embeddings on (`... from embeddings`:
the token Gather cut off, its output fed as a float input).

Columns:
- ONNX nodes: nodes of the model as compiled (for the light models, after
  `prepare` removed the ConstantOfShape fills);
- imported: non-constant `npu_graph` ops right after the ONNX import (which
  already folds Constant/Shape subgraphs, Identity and Dropout);
- optimised: non-constant `npu_graph` ops after the graph-level passes of
  `npu-default` (every pass before `npu-fuse`);
- kernels, tasks: fused kernels and tasks on the simulator;
- import+compile s: wall time of import + the whole `npu-default`, median of
  --repeat runs (the graph passes' share in brackets); cpu s: process time of the
  same (less sensitive to a loaded machine); simulate s: wall time of the run;
  sanitized s: the same run with the memory sanitizer (`sim/sanitizer.py`) on, whose
  outputs are the ones checked (a sanitizer finding fails the row);
- match: the largest |sim - ort| / (atol + rtol |ort|) with rtol 1e-3, atol 1e-4 x
  max |ort|: at most 1 passes.

Wall times are noisy on a shared 2-core machine: compare ratios within one run.
A model that fails is one row with its diagnostic; the script never stops on one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np
import onnx
import onnxruntime as ort
from xdsl.dialects.builtin import ModuleOp

from bench import write_table
from lowering import get_all_passes
from lowering.importer.onnx_import import import_model
from lowering.pipeline import DEFAULT_PIPELINE, run_pass
from npu_dialects import make_context
from npu_dialects.arch import parse_arch_spec, set_arch
from npu_dialects.weights import attach_weights, weights_of
from runtime.run import run
from tools.testkit.e2e import onnxruntime_outputs
from tools.testkit.zoo import (
    LIGHT_MODELS,
    NOT_SUPPORTED_YET,
    diagnostic_summary,
    embeddings_as_inputs,
    light_models,
    output_errors,
    prepare,
    random_inputs,
)

TRANSFORMERS = ("bert_encoder", "gpt_decoder", "gpt_decoder_buffer")
GRAPH_PASSES: tuple[str, ...] = DEFAULT_PIPELINE[:DEFAULT_PIPELINE.index("npu-fuse")]
"""The graph-level passes of npu-default: everything before fusion."""


def graph_op_count(module: ModuleOp) -> int:
    """Non-constant npu_graph ops (terminators not counted)."""
    return sum(1 for op in module.walk()
               if op.name.startswith("npu_graph.") and op.name not in ("npu_graph.constant", "npu_graph.yield"))


@dataclass
class Row:
    name: str
    onnx_nodes: int
    imported: int | None = None
    optimised: int | None = None
    kernels: int | None = None
    tasks: int | None = None
    cycles: float | None = None
    compile_s: float | None = None
    graph_s: float | None = None
    cpu_s: float | None = None
    simulate_s: float | None = None
    sanitized_s: float | None = None
    ratio: float | None = None
    error: str | None = None

    def markdown(self) -> str:
        def f(v, fmt="{}"):
            return "-" if v is None else fmt.format(v)
        if self.error:
            return (f"| {self.name} | {self.onnx_nodes} | {f(self.imported)} | - | - | - | - | - | - | - | - "
                    f"| failed: {self.error} |")
        ratio = self.ratio if self.ratio is not None else float("nan")
        match = f"{ratio:.3g} ({'ok' if ratio <= 1 else 'MISMATCH'})"
        return (f"| {self.name} | {self.onnx_nodes} | {self.imported} | {self.optimised} | {self.kernels} "
                f"| {self.tasks} | {self.cycles} | {self.compile_s:.2f} ({self.graph_s:.2f}) | {self.cpu_s:.2f} "
                f"| {self.simulate_s:.2f} | {self.sanitized_s:.2f} | {match} |")


def measure(name: str, model: onnx.ModelProto, inputs: dict[str, np.ndarray], arch_spec: str,
            repeat: int) -> Row:
    """Import + compile + simulate `model` `repeat` times; raises what the compiler raises."""
    arch = parse_arch_spec(arch_spec)
    row = Row(name, len(model.graph.node))
    walls, graph_walls, cpus, sims, sanitized = [], [], [], [], []
    passes = get_all_passes()
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        module, weights = import_model(model, arch)
        row.imported = graph_op_count(module)
        set_arch(module, arch)
        attach_weights(module, weights)
        ctx = make_context()
        g0 = time.perf_counter()
        for pass_name in DEFAULT_PIPELINE:
            if pass_name == "npu-fuse":
                graph_walls.append(time.perf_counter() - g0)
                row.optimised = graph_op_count(module)
            run_pass(passes[pass_name]()(), ctx, module)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        s0 = time.perf_counter()
        run(module, weights_of(module), inputs, arch, sanitize=False)
        sims.append(time.perf_counter() - s0)
        s0 = time.perf_counter()
        res = run(module, weights_of(module), inputs, arch, sanitize=True)
        sanitized.append(time.perf_counter() - s0)
    ref = onnxruntime_outputs(model, inputs)
    row.ratio = max(output_errors(res.outputs[k], v)["tolerance_ratio"] for k, v in ref.items())
    row.kernels = len(res.report["kernels"])
    row.tasks = res.report["tasks"]
    row.cycles = res.report["cycles"]
    row.compile_s = statistics.median(walls)
    row.graph_s = statistics.median(graph_walls)
    row.cpu_s = statistics.median(cpus)
    row.simulate_s = statistics.median(sims)
    row.sanitized_s = statistics.median(sanitized)
    return row


def _light(name: str) -> Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]:
    return lambda: prepare(light_models()[name], seed=0)


def _transformer(name: str) -> Callable[[], tuple[onnx.ModelProto, dict[str, np.ndarray]]]:
    def load() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
        model = onnx.load(str(ROOT / "tests" / "models" / f"{name}.onnx"))
        return model, random_inputs(model, seed=0)
    return load


def bench_one(name: str, load, arch: str, repeat: int) -> list[Row]:
    try:
        model, inputs = load()
    except Exception as e:  # noqa: BLE001 - a broken model file or harness: report, go on
        return [Row(name, 0, error=f"cannot prepare: {type(e).__name__}: {e}")]
    try:
        return [measure(name, model, inputs, arch, repeat)]
    except Exception as e:  # noqa: BLE001 - report it, go on
        row = Row(name, len(model.graph.node), error=_one_line(e))
        if name not in TRANSFORMERS or not isinstance(e, NOT_SUPPORTED_YET):
            return [row]
    body, feeds = embeddings_as_inputs(model, inputs)
    try:
        return [row, measure(f"{name} from embeddings", body, feeds, arch, repeat)]
    except Exception as e:  # noqa: BLE001 - report it, go on
        return [row, Row(f"{name} from embeddings", len(body.graph.node), error=_one_line(e))]


def _one_line(e: BaseException) -> str:
    text = diagnostic_summary(e) if str(e).strip() else type(e).__name__
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 400 else text[:397] + "..."


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--arch", default="default")
    ap.add_argument("--repeat", type=int, default=3, help="runs per model; wall times are medians")
    ap.add_argument("--models", default=None,
                    help="comma-separated subset of: " + ", ".join((*LIGHT_MODELS, *TRANSFORMERS)))
    ap.add_argument("--out", default=None, help="also write the table (markdown) to this file")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    ort.set_default_logger_severity(3)
    models: dict[str, Callable] = {n: _light(n) for n in LIGHT_MODELS}
    models.update({n: _transformer(n) for n in TRANSFORMERS})
    if args.models:
        wanted = [m.strip() for m in args.models.split(",") if m.strip()]
        unknown = [m for m in wanted if m not in models]
        if unknown:
            ap.error(f"unknown model(s) {', '.join(unknown)}")
        models = {m: models[m] for m in wanted}

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [(f"arch: {parse_arch_spec(args.arch).spec()}; wall times: median of {args.repeat}; "
              f"{os.cpu_count()} CPUs, load average {load:.1f} at start; graph passes: {', '.join(GRAPH_PASSES)}"),
             "",
             ("| model | ONNX nodes | imported | optimised | kernels | tasks | simulated cycles "
              "| import+compile s (graph passes) | cpu s | simulate s | sanitized s | match |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    failed = 0
    for name, loader in models.items():
        for row in bench_one(name, loader, args.arch, args.repeat):
            failed += row.error is not None or (row.ratio is not None and row.ratio > 1)
            lines.append(row.markdown())
            print(lines[-1], flush=True)
    if args.out:
        write_table(lines, args.out)
        print(f"wrote {args.out}")
    print(f"{len(lines) - 4 - failed} rows ok, {failed} failed or mismatched")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`npu-run INPUT [--arch SPEC] [--inputs IN.npz] [--outputs OUT.npz] [--report R.json]
[--trace T.json] [--check [--reference MODEL.onnx]] [--sanitize] [--timing-only] [--seed N]
[--shape-buckets SPEC]... [--pad-dims DIMS]`: run a model on the simulated NPU.

INPUT: an ONNX model or a graph-level `.mlir` (compiled with `npu-default` first), a
lowered `.mlir` or an executable (`.npuexe` from `npu-compile`), run as is. No
`--inputs`: seeded random ones. `--check`: onnxruntime (ONNX input; an executable's
`--reference`, else its recorded source model if unchanged) or the numpy reference of
a graph-level `.mlir`. `--timing-only`: the same timing, no data computed (for
sweeps). `--sanitize`, `--shape-buckets`: see Algorithm.

`--mode`, `--queue-depth`, `--wait`, `--watchdog-cycles`: the run goes through
`runtime.device` (run modes, waves, host waits, watchdog). Exit codes: 0 success,
1 a diagnosed error (bad input, unsupported op, does not fit, device fault, failed
check; an internal error too, "internal error: ..."), 2 bad usage.

Algorithm
---------
Random inputs (no `--inputs`, seeded by `--seed`): float inputs standard normal; an
integer input is drawn from the range the compiler recorded for it (`npu.input_ranges`
on `@main`, also in an `.npuexe`): inside every table it indexes, 0/1 for a mask or a
bool (`lowering/graph/input_ranges.py`); when none is known the run stops asking for
`--inputs`. `--check` feeds onnxruntime the inputs in the model's own dtypes.

`--check` of a quantized (QDQ) model (`tools/quant_steps.py`): an output a
DequantizeLinear produces (directly or through data movement and softmax-like ops) is
judged in steps of that DequantizeLinear's scale - `ok` when at least 99% of its elements
are within one step of onnxruntime's and none beyond three (issue 44's acceptance
criterion; requantization may round the other way) - and an int8/uint8 output of a
QuantizeLinear in steps of 1 by the same rule; other integer outputs must be equal. The
report's `check` gains `steps` {output: {exact, within_one, max_steps, step}}; other
outputs keep the float tolerance.

`--sanitize` (the memory sanitizer, `sim/sanitizer.py`): the run stops at the first read that does not find the value the IR
says it reads (a buffer overwritten while it still had a reader), naming both ops
and the bytes.

Shape buckets (ONNX input with symbolic dims; spec syntax in `lowering/importer/buckets.py`):
`--shape-buckets batch=1,4,8` compiles only the bucket the inputs need: an exact
match, else the smallest bucket at least as large on the padded dims (all dims of
the spec, or those of `--pad-dims`); the inputs are zero-padded up to it and the
outputs sliced back (valid only for batch-like dims: see `runtime/buckets.py`).
With random inputs the first bucket runs. `--check` runs onnxruntime on the
original, unpadded inputs. The report gains `bucket` ({dim: size} compiled and
run) and `bucket_actual` ({dim: size} of the inputs).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from npu_dialects.files import collector_paused
from tools.cli import (
    EXIT_OK,
    EXIT_USER,
    UsageError,
    UserError,
    cli_main,
    console,
    error_line,
    fmt_bytes,
    write_json,
    write_output,
)
from tools.loading import Loaded, load_input
from tools.tolerance import coarsest, metrics, model_precision


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="npu-run", description="Run an ONNX model or an .mlir module on the simulated NPU.")
    p.add_argument("input", metavar="INPUT",
                   help="model.onnx, a graph-level .mlir, a lowered .mlir or an executable (.npuexe)")
    p.add_argument("--arch", metavar="SPEC", help="machine: a preset plus overrides, e.g. 'default,cores=1'")
    p.add_argument("--inputs", metavar="IN.npz", help="inputs keyed by ONNX input name (default: random)")
    p.add_argument("--outputs", metavar="OUT.npz", help="write the outputs, keyed by ONNX output name")
    p.add_argument("--report", metavar="R.json", help="write the run report (JSON)")
    p.add_argument("--trace", metavar="T.json", help="write a Chrome trace / Perfetto timeline (JSON)")
    p.add_argument("--check", action="store_true",
                   help="compare with onnxruntime (or the graph-level numpy reference)")
    p.add_argument("--compare-all", action="store_true",
                   help="per-layer accuracy: every ONNX tensor kept in DRAM by the compiled program against a "
                        "float64 evaluation of the original graph (max abs/rel error, cosine); names the first "
                        "node over tolerance")
    p.add_argument("-p", "--pass-pipeline", dest="pipeline", metavar="PIPELINE",
                   help="compile with this pipeline instead of npu-default, as npu-opt takes it: "
                        "'npu-default{fuse-disable=layer-group}' or 'builtin.module(npu-fuse,...)'")
    p.add_argument("--remarks", nargs="?", const="-", metavar="FILE",
                   help="optimisation remarks of the compile: every fusion, layer/strip group and tiling made or "
                        "missed, with the ONNX nodes and why (to stderr, or to FILE)")
    p.add_argument("--time-passes", action="store_true",
                   help="time every pass of the compile (npu-default's nested passes each a row), to stderr")
    p.add_argument("--print-ir-after", action="append", default=[], metavar="PASS[,PASS]",
                   help="print the IR to stderr after the named passes (npu-default's nested passes too)")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR to stderr after every pass")
    p.add_argument("--pattern-stats", action="store_true",
                   help="print to stderr how often each rewrite pattern fired, per pass")
    p.add_argument("--graph", metavar="PREFIX",
                   help="write the graph as imported and as compiled as PREFIX.before.dot / PREFIX.after.dot "
                        "(each kernel of the run report boxed, a layer group around the kernels it merged), "
                        "and .svg when graphviz's dot is on PATH")
    p.add_argument("--html", metavar="R.html",
                   help="write a self-contained HTML compile report: graph, kernels predicted vs simulated, "
                        "timeline, memory map, passes, remarks")
    p.add_argument("--reference", metavar="MODEL.onnx",
                   help="with --check on an .npuexe: the ONNX model to compare with (default: the source "
                        "model the executable records, if it still exists unchanged)")
    p.add_argument("--sanitize", action="store_true",
                   help="check every read finds the value it names (shadow memory of DRAM and SRAM); "
                        "slower. NPU_SANITIZE=1 turns it on too")
    p.add_argument("--timing-only", action="store_true",
                   help="simulate timing only: the same cycles, DMAs, report and trace, without computing any "
                        "data (several times faster; no outputs, so not with --check, --outputs or --compare-all)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the random inputs (default 0)")
    p.add_argument("--shape-buckets", metavar="SPEC", action="append",
                   help="sizes to compile the model's symbolic input dims for: 'batch=1,4,8', "
                        "'batch=1,4;seq=16,32' (cross product); repeat for an explicit union. The "
                        "bucket is picked from the --inputs shapes (exact, else the smallest larger "
                        "one, inputs zero-padded and outputs sliced); random inputs use the first")
    p.add_argument("--pad-dims", metavar="DIMS",
                   help="comma-separated dims of --shape-buckets that may be padded, or 'none' "
                        "(default: every dim of the spec; pad only dims that index independent "
                        "samples, such as a batch)")
    p.add_argument("--mode", choices=("strict-sync", "graph-async", "full-async"), default="graph-async",
                   help="run mode: strict-sync issues one task at a time (debugging), graph-async (default) "
                        "submits the graph to run by its events, full-async allows graphs on several streams")
    p.add_argument("--queue-depth", type=_positive, metavar="N",
                   help="command-queue capacity: submit the tasks in waves of N (default: all at once)")
    p.add_argument("--wait", choices=("blocking", "polling", "callback"), default="blocking",
                   help="how the host waits for completion events (default blocking)")
    p.add_argument("--poll-interval", type=_positive, default=1000, metavar="CYCLES",
                   help="polling: cycles between two reads of a completion event (default 1000)")
    p.add_argument("--profile", nargs="?", const="", metavar="P.json",
                   help="print where the cycles went (per core, top tasks with the critical path, hardware "
                        "utilisation and stalls); with a file, also write it as JSON")
    from tools.npu_compile import add_cache_options, add_precision_option
    add_precision_option(p)
    add_cache_options(p)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="log the runtime's device memory at debug level (allocations released, deferred frees)")
    p.add_argument("--watchdog-cycles", type=int, default=100_000_000, metavar="N",
                   help="stop with a dump of every task when one waits or runs longer than N cycles "
                        "(default 100000000; 0 turns the watchdog off)")
    return p


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return n


# ----------------------------------------------------------------------------- loading


def input_headers(path: str):
    """The `.npy` headers of the --inputs file (`npu_dialects.npz`): a bad file is found
    without reading any array data."""
    from npu_dialects.npz import npz_headers
    try:
        return npz_headers(path)
    except ValueError as e:
        raise UserError(f"cannot read inputs file '{path}': {e}") from None


def check_input_headers(headers, sig) -> None:
    """The inputs' names, shapes and (numbers, not strings) dtypes, from their headers,
    against the model's signature (`sim.signature`), with the messages of
    `runtime.run.validate_inputs`."""
    known = [n for n, _ in sig.inputs]
    listing = ", ".join(f"'{n}' {list(s)}" for n, s in sig.inputs) or "none"
    for name in headers:
        if name not in known:
            raise UserError(f"unknown input '{name}' (the model's inputs: {listing})")
    for name, shape in sig.inputs:
        if name not in headers:
            raise UserError(f"missing input '{name}' (the model's inputs: {listing})")
        h = headers[name]
        if h.dtype.kind not in "fiub":  # (not a number: its item size is unbounded; the rest of the
            want = sig.input_dtypes.get(name, "float32")  # dtype rules are validate_inputs')
            raise UserError(f"input '{name}' has dtype {h.dtype}, expected {want}")
        if h.shape != tuple(shape):
            raise UserError(f"input '{name}' has shape {list(h.shape)}, expected {list(shape)}")


def read_inputs(path: str, sig=None) -> dict[str, np.ndarray]:
    """The arrays of the --inputs file; with `sig` (the model's signature) each header
    is checked against it before any data is read (a small file may declare, or inflate
    to, gigabytes)."""
    from npu_dialects.npz import read_members
    headers = input_headers(path)
    if sig is not None:
        check_input_headers(headers, sig)
    try:
        return read_members(path, headers.values())
    except ValueError as e:
        raise UserError(f"cannot read inputs file '{path}': {e}") from None


# ----------------------------------------------------------------------------- check


def reference_outputs(loaded: Loaded, path: str, inputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], str]:
    """Reference outputs for --check and what produced them."""
    if loaded.kind in ("onnx", "npuexe"):
        path = loaded.reference or path  # an executable's --reference or recorded source model
        try:
            names, outs = ort_run(path, inputs)
        except Exception as e:  # onnxruntime raises many exception types
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise UserError(f"onnxruntime cannot run '{path}': {msg}") from None
        refs: dict[str, np.ndarray] = {}
        for name, out in zip(names, outs):
            if not isinstance(out, np.ndarray):
                raise UserError(f"onnxruntime output '{name}' is a {type(out).__name__}, not a tensor")
            refs[name] = out
        return refs, "onnxruntime"
    from lowering.graph.evaluate import GraphEvalError, evaluate_graph
    assert loaded.graph is not None, "load_input keeps the graph-level module for --check"
    values = {k: np.asarray(v, dtype=np.float32) for k, v in inputs.items()}  # (integers carried as f32)
    try:
        return evaluate_graph(loaded.graph, loaded.weights, values, dtype=np.float64), "numpy float64 reference"
    except GraphEvalError as e:
        raise UserError(f"the graph-level reference cannot evaluate '{path}': {e}") from None


def ort_run(model: str | bytes, inputs: Mapping[str, np.ndarray],
            names: list[str] | None = None) -> tuple[list[str], list[Any]]:
    """onnxruntime's CPU run of `model` (a path or the serialized model): its outputs
    `names` (default: all) and their values, in its exact integer mode where it can
    (`tools/ort_session.py`: on x86-64 without VNNI its default int8 kernels saturate)."""
    from tools.ort_session import ReferenceSession
    sess = ReferenceSession(model)
    want = names or [o.name for o in sess.get_outputs()]
    feed = {i.name: _as_ort_type(inputs[i.name], i.type) for i in sess.get_inputs() if i.name in inputs}
    return want, sess.run(want, feed)


_ORT_FLOATS = {"float": np.float32, "double": np.float64}


def _as_ort_type(x: np.ndarray, ort_type: str) -> np.ndarray:
    """An input as the element type onnxruntime declares for it (`tensor(int64)`, ...):
    the model's own dtype, whatever the inputs file or the random draw holds."""
    name = ort_type[len("tensor("):-1] if ort_type.startswith("tensor(") and ort_type.endswith(")") else ""
    try:
        dtype = np.dtype(_ORT_FLOATS.get(name, name)) if name else None
    except TypeError:
        dtype = None
    return np.asarray(x) if dtype is None else np.asarray(x).astype(dtype, copy=False)


def compare(outputs: dict[str, np.ndarray], refs: dict[str, np.ndarray], precision: str | None = None,
            steps: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """`check` report entry {max_abs_err, max_rel_err, ok, outputs} and problem lines
    (`metrics` per output; `precision`: the type a --precision model computed in).
    `steps` ({output: `tools.quant_steps.Step`}, a QDQ model's quantized and integer
    outputs) judges those outputs in quantization steps instead (`STEP_RULE`: >= 99%
    within one step, none beyond three; integers not from a QuantizeLinear equal): the
    entry gains `steps` {output: {exact, within_one, max_steps, step}}."""
    from tools.quant_steps import STEP_RULE, describe, step_metrics
    max_abs = max_rel = 0.0
    ok = True
    per: dict[str, Any] = {}
    by_steps: dict[str, Any] = {}
    problems: list[str] = []
    for name, out in outputs.items():
        if name not in refs:
            ok = False
            problems.append(f"output '{name}': the reference has no such output")
            continue
        if np.shape(refs[name]) != np.shape(out):
            ok = False
            problems.append(f"output '{name}': shape {list(np.shape(out))} but the reference has "
                            f"{list(np.shape(refs[name]))}")
            continue
        m = metrics(out, refs[name], precision)
        a, r = m["max_abs_err"], m["max_rel_err"]
        step = (steps or {}).get(name)
        s = step_metrics(out, refs[name], step) if step is not None else None
        good = s["ok"] if s is not None else m["ok"]
        per[name] = {"max_abs_err": a, "max_rel_err": r, "ok": good}
        max_abs, max_rel = max(max_abs, a), max(max_rel, r)
        if s is not None:
            by_steps[name] = {k: s[k] for k in ("exact", "within_one", "max_steps", "step")}
            per[name]["steps"] = by_steps[name]
        if good:
            continue
        ok = False
        if s is None:
            problems.append(f"output '{name}' differs from the reference: max abs err {a:.3g}, "
                            f"max rel err {r:.3g} (rtol {m['rtol']:.3g}, atol {m['atol']:.3g})")
        elif step is not None and step.exact:
            problems.append(f"output '{name}' (integers) differs from the reference: {describe(s)} "
                            "(integers not made by a QuantizeLinear must be equal)")
        else:
            problems.append(f"output '{name}' differs from the reference: {describe(s)} (needs {STEP_RULE})")
    entry: dict[str, Any] = {"max_abs_err": max_abs, "max_rel_err": max_rel, "ok": ok, "outputs": per}
    if by_steps:
        entry["steps"] = by_steps
    return entry, problems


def quantization_steps(loaded: Loaded, path: str) -> dict[str, Any] | None:
    """--check's quantization steps of the outputs (`tools.quant_steps`): of an ONNX model
    (an executable's reference model), or of a graph-level `.mlir` (`graph_steps`)."""
    if loaded.kind == "graph" and loaded.graph is not None:
        return graph_steps(loaded.graph, loaded.weights)
    if loaded.kind not in ("onnx", "npuexe"):
        return None
    from tools.quant_steps import output_steps
    try:
        import onnx
        model = onnx.load(loaded.reference or path, load_external_data=False)
    except Exception:  # noqa: BLE001 - onnxruntime read it: no steps then, float tolerance
        return None
    return output_steps(model)


def graph_steps(graph, weights) -> dict[str, Any]:
    """The steps of a graph-level module's outputs: a result an `npu_graph.dequantize`
    makes (through `tools.accuracy.PASS_THROUGH` ops) in steps of its scale (of a
    requantization, the steps one earlier flip makes: `QuantParams.steps_per_flip`), an
    i8/ui8 result of a quantize in steps of 1, other integer results equal."""
    from npu_dialects.dtypes import type_name
    from npu_dialects.graph import QuantizeOp
    from tools.accuracy import QuantParams, returned_values
    from tools.quant_steps import Step
    params = QuantParams(graph, weights)
    steps: dict[str, Any] = {}
    if not params.quantized:  # (a float graph's integer results keep the float tolerance)
        return steps
    for name, v in returned_values(graph).items():
        t = type_name(v.type.element_type) if hasattr(v.type, "element_type") else None  # pyright: ignore
        if t in ("i8", "ui8", "i32"):
            steps[name] = Step(1.0, exact=not isinstance(v.owner, QuantizeOp))
            continue
        p = params.of_value(v, forward=False)
        if p is not None:
            scale = p[0] if p[0].size == 1 or p[0].ndim == len(v.type.get_shape()) else float(p[0].max())  # pyright: ignore
            steps[name] = Step(scale * params.steps_per_flip(v, forward=False))
    return steps


# ----------------------------------------------------------------------------- output


def summary(report: dict[str, Any], path: str, arch) -> str:
    u = report["utilization"]
    lines = [
        f"model:       {path}",
        f"arch:        {arch.spec()}",
        f"cycles:      {report['cycles']} ({report['time_us']:.3f} us at {arch.freq / 1e6:g} MHz)",
        f"tasks:       {report['tasks']} ({len(report['kernels'])} kernels)",
        f"DRAM bytes:  read {fmt_bytes(report['dram_bytes_read'])}, "
        f"written {fmt_bytes(report['dram_bytes_written'])}",
        f"utilization: cube {u['cube']:.1%}, vector {u['vector']:.1%}, dma {u['dma']:.1%}",
    ]
    over = sorted((k for k in report["kernels"] if k.get("dram_vs_min")),
                  key=lambda k: k["dram_bytes_read"] + k["dram_bytes_written"] - k["min_dram_bytes"], reverse=True)
    if over and over[0]["dram_vs_min"] > 1.0:
        worst = ", ".join(f"{k['name']} {k['dram_vs_min']:.2f}x" for k in over[:3] if k["dram_vs_min"] > 1.0)
        lines.append(f"DRAM / min:  most bytes over their kernel's minimum: {worst}")
    b = report.get("bucket")
    if b is not None:
        line = ", ".join(f"{d}={v}" for d, v in b.items())
        actual = report.get("bucket_actual") or b
        if actual != b:
            line += " (inputs padded from " + ", ".join(f"{d}={v}" for d, v in actual.items()) + ")"
        lines.insert(2, f"bucket:      {line}")
    h = report.get("host")
    if h is not None:
        waves = f", {h['waves']} waves of <= {h['queue_depth']}" if h["queue_depth"] else ""
        lines.append(f"host:        {h['mode']}{waves}, {h['wait']} wait: {h['overhead_cycles']} cycles of host "
                     f"overhead (submit {h['submit_cycles']}, completion {h['notify_cycles']}); "
                     f"end to end {h['end_to_end_cycles']} cycles")
    c = report.get("check")
    if c is not None:
        verdict = "ok" if c["ok"] else "FAILED"
        lines.append(f"check:       {verdict} vs {c['reference']} (max abs err {c['max_abs_err']:.3g}, "
                     f"max rel err {c['max_rel_err']:.3g})")
        from tools.quant_steps import describe
        for name, st in (c.get("steps") or {}).items():
            lines.append(f"  in steps:  '{name}' {describe(st)}")
    return "\n".join(lines)


class _Bucketed:
    """What a --shape-buckets run adds: the chosen bucket, the padded inputs to run
    and the shapes to slice the outputs back to (None: no padding)."""

    def __init__(self, bucket: dict[str, int], actual: dict[str, int], run_inputs=None, out_shapes=None):
        self.bucket, self.actual = bucket, actual
        self.run_inputs, self.out_shapes = run_inputs, out_shapes


def _parse_buckets(args: argparse.Namespace):
    """The parsed --shape-buckets and the set of dims that may be padded, or None."""
    if not args.shape_buckets:
        if args.pad_dims is not None:
            raise UsageError("--pad-dims needs --shape-buckets")
        return None
    from lowering.importer.buckets import BucketSpecError, parse_shape_buckets
    try:
        buckets = parse_shape_buckets(args.shape_buckets)
    except BucketSpecError as e:
        raise UsageError(str(e)) from None
    if os.path.splitext(args.input)[1].lower() != ".onnx":
        raise UsageError(f"--shape-buckets needs an .onnx INPUT (the model with symbolic dims), got "
                         f"'{args.input}'; an .mlir module has static shapes")
    pad = set(buckets.dims)
    if args.pad_dims is not None:
        names = [d.strip() for d in args.pad_dims.split(",") if d.strip()]
        pad = set() if names == ["none"] else set(names)
        unknown = [d for d in names if d not in buckets.dims and names != ["none"]]
        if unknown or not names:
            raise UsageError(f"bad --pad-dims '{args.pad_dims}': expected 'none' or dims of "
                             f"--shape-buckets ({', '.join(buckets.dims)})")
    return buckets, pad


def _load_bucketed(args: argparse.Namespace, buckets, pad_dims) -> tuple[Loaded, _Bucketed, dict | None]:
    """Load the ONNX model, pick the bucket (from the --inputs shapes, else the first),
    compile only that bucket; returns it with the inputs read (None: random)."""
    from lowering.importer.buckets import check_buckets, output_shapes
    from lowering.importer.onnx_import import OnnxImportError, load_model
    from lowering.importer.symbolic import input_templates
    from runtime.buckets import BucketError, pad_inputs, select_bucket
    from tools.api import parse_arch

    parse_arch(args.arch)  # a bad --arch is a usage error before anything is read
    try:
        model = load_model(args.input)
        check_buckets(model, buckets)
    except OnnxImportError as e:
        raise UserError(e.located(args.input)) from None
    headers = input_headers(args.inputs) if args.inputs else None  # (shapes from the headers: no data read)
    if headers is None:
        inputs = None
        bucket = buckets.first()
        chosen = _Bucketed(bucket, dict(bucket))
    else:
        templates = input_templates(model)
        try:
            d = select_bucket(templates, list(buckets), {k: h.shape for k, h in headers.items()}, pad_dims)
        except BucketError as e:
            raise UserError(str(e)) from None
        for name, h in headers.items():  # (the shapes of the model's inputs are within the bucket)
            if name not in templates:
                raise UserError(f"unknown input '{name}' (the model's inputs: {', '.join(map(repr, templates))})")
            if h.dtype.kind not in "fiub":
                raise UserError(f"input '{name}' has dtype {h.dtype}, expected a number")
        inputs = read_inputs(args.inputs)
        chosen = _Bucketed(d.bucket, d.actual)
        if d.padded:
            try:
                chosen.out_shapes = output_shapes(model, d.actual)
            except OnnxImportError as e:
                raise UserError(e.located(args.input)) from None
            chosen.run_inputs = pad_inputs(inputs, templates, d.bucket)
    loaded = load_input(args.input, args.arch, args.check, model=model, dims=chosen.bucket, pipeline=args.pipeline,
                        cache=_cache(args)[0])
    return loaded, chosen, inputs


def _run_on_device(args: argparse.Namespace, loaded: Loaded, inputs: dict[str, np.ndarray]):
    """One request through `runtime.device` in the mode and wait style asked for."""
    from runtime.device import DeviceError, HostModel, run_module
    from runtime.run import RunResult
    if args.watchdog_cycles < 0:
        raise UsageError(f"--watchdog-cycles must be >= 0, got {args.watchdog_cycles}")
    sanitize = args.sanitize or os.environ.get("NPU_SANITIZE") == "1"
    if args.verbose:
        import logging
        logging.basicConfig(format="%(name)s: %(message)s")
        logging.getLogger("npu.runtime").setLevel(logging.DEBUG)
    try:
        req, rt = run_module(loaded.module, loaded.weights, inputs, loaded.arch, trace=bool(args.trace),
                             mode=args.mode, queue_depth=args.queue_depth, wait=args.wait,
                             host=HostModel(poll_interval=args.poll_interval),
                             watchdog_cycles=args.watchdog_cycles or None, sanitize=sanitize,
                             capture=args.compare_all, timing_only=args.timing_only)
    except DeviceError as e:
        raise UserError(error_line(str(e)), e.details) from None
    assert req.outputs is not None and req.report is not None
    if args.profile is not None:
        from runtime.profile import format_profile
        prof = req.profile()
        if args.profile:
            write_json(args.profile, prof)
        args.profile_text = format_profile(prof)
    result = RunResult(outputs=req.outputs, report=req.report, trace=rt.trace_json() if args.trace else None,
                       sim=None)
    result.captured = req.captured
    result.records = req.records
    return result


def _load_with_remarks(args: argparse.Namespace) -> Loaded:
    """`load_input` collecting the compile's remarks (`args.remarks_list`; --remarks writes them)."""
    import io

    from lowering import get_all_passes
    from lowering.instrument import Instrumentation, InstrumentOptions, print_after_names
    from lowering.remarks import collecting, write_remarks
    try:
        after = print_after_names(args.print_ir_after, get_all_passes())
    except ValueError as e:
        raise UsageError(str(e)) from None
    shown = args.time_passes or after or args.print_ir_after_all or args.pattern_stats
    options = InstrumentOptions(time_passes=args.time_passes, print_ir_after=after,
                                print_ir_after_all=args.print_ir_after_all, pattern_stats=args.pattern_stats,
                                progress=None if shown else False,
                                keep_after=("npu-tile",) if args.graph or args.html else ())
    stream = sys.stderr if shown else io.StringIO()
    from lowering import kernel_cache
    cache, shared = _cache(args)
    with collecting() as remarks, Instrumentation(options, stream=stream) as inst, kernel_cache.using(shared):
        loaded = load_input(args.input, args.arch, args.check or _needs_graph(args), args.reference,
                            pipeline=args.pipeline, cache=cache)
        if shared is not None and loaded.kind == "onnx":  # (observed: every model level bypassed)
            shared.note("executable", "bypassed (the compile reports on itself)")
        if shared is not None and kernel_cache.summary():  # (an ONNX or graph-level input compiled)
            shared.note("kernels", kernel_cache.summary())
    if shared is not None and shared.events and args.time_passes:
        from tools.npu_compile import cache_line
        print(cache_line(shared), file=sys.stderr)
    args.remarks_list = [r.line() for r in remarks]
    args.pass_times = _pass_times(inst.root)
    args.tiled_module = inst.kept.get("npu-tile")  # the graph as compiled, for --graph/--html
    if args.remarks is not None:
        try:
            write_remarks(remarks, args.remarks)
        except ValueError as e:
            raise UserError(str(e)) from None
    return loaded


def _cache(args: argparse.Namespace):
    """(the compile cache npu-run compiles through, the one only its per-kernel results
    come from): (cache, None), or (None, cache) when a report on the compile itself was
    asked for (remarks, pictures, pass timings, IR dumps: every pass runs), or (None,
    None) with --no-cache or NPU_NO_CACHE=1. `args.compile_cache` is the one used."""
    from tools.compile_cache import Cache, cache_dir
    observed = (args.remarks is not None or args.time_passes or args.print_ir_after or args.print_ir_after_all
                or args.pattern_stats or args.graph or args.html)
    root = cache_dir(args.cache_dir, args.no_cache)
    args.compile_cache = Cache(root) if root is not None else None
    return (None, args.compile_cache) if observed else (args.compile_cache, None)


def _pass_times(node, out: list[tuple[str, float]] | None = None) -> list[tuple[str, float]]:
    """(pass, seconds) of every pass the compile ran (the instrumentation's timer tree)."""
    out = [] if out is None else out
    for child in node.children.values():
        if child.name.startswith("npu-"):
            out.append((child.name, child.seconds))
        _pass_times(child, out)
    return out


def _needs_graph(args: argparse.Namespace) -> bool:
    """--compare-all, --graph and --html need the original graph next to the compiled one."""
    return bool(args.compare_all or args.graph or args.html)


def _graph_reference(args: argparse.Namespace, loaded: Loaded):
    """The original graph-level module and weights --compare-all evaluates in float64."""
    if loaded.kind == "graph":
        return loaded.graph, loaded.weights
    if loaded.kind == "lowered":
        raise UsageError("--compare-all, --graph and --html need the original graph: an .onnx model, a "
                         "graph-level .mlir or an .npuexe with its source model, not a lowered .mlir")
    from lowering.importer.onnx_import import OnnxImportError, import_model, load_model
    model = loaded.reference or args.input
    try:
        return import_model(load_model(model), loaded.arch)
    except OnnxImportError as e:
        raise UserError(e.located(model)) from None


def _compare_all(args: argparse.Namespace, loaded: Loaded, inputs, result, report) -> str:
    """Run --compare-all; its table (the report gains `compare_all`)."""
    from lowering.graph.evaluate import GraphEvalError
    from tools.accuracy import (
        approximation_errors,
        compare_all,
        effective_precision,
        first_over,
        format_approximations,
        format_rows,
    )
    graph, weights = _graph_reference(args, loaded)
    assert graph is not None, "load_input keeps the graph-level module for --compare-all"
    theirs = _onnxruntime_values(loaded, args.input, inputs, [n[-1] for n, _ in result.captured if n])
    try:
        rows, first = compare_all(graph, weights, inputs, result.captured, result.outputs, args.precision,
                                  onnxruntime=theirs)
    except GraphEvalError as e:
        raise UserError(f"the float64 reference cannot evaluate '{args.input}': {e}") from None
    report["compare_all"] = {"tensors": rows, "first_over_tolerance": first}
    if theirs is not None:
        report["compare_all"]["first_over_tolerance_onnxruntime"] = first_over(rows, "onnxruntime")
    table = format_rows(rows, first, effective_precision(result.captured, result.outputs, args.precision))
    approx = approximation_errors(graph, weights, inputs, loaded.arch)
    if approx:
        report["compare_all"]["approximations"] = approx
        table += "\n" + format_approximations(approx)
    return table


def _onnxruntime_values(loaded: Loaded, path: str, inputs, nodes: list[str]) -> dict[str, np.ndarray] | None:
    """A QDQ model's tensors as onnxruntime computes them (the model outputs as "output
    'NAME'" from its own run; the output of each node in `nodes` from a second run that
    asks for them as extra graph outputs, which may stop some of onnxruntime's fusions),
    for --compare-all; None for a model without quantization ops or one onnxruntime
    cannot run so (a note on stderr)."""
    if loaded.kind not in ("onnx", "npuexe"):
        return None
    import onnx
    path = loaded.reference or path
    try:
        model = onnx.load(path)
    except Exception:  # noqa: BLE001 - the run read it; no onnxruntime column then
        return None
    from tools.quant_steps import QUANTIZATION_OPS
    if not any(n.op_type in QUANTIZATION_OPS for n in model.graph.node):
        return None
    labels = {n.name or f"{n.op_type}#{i}": n.output[0] for i, n in enumerate(model.graph.node) if n.output}
    outputs = [o.name for o in model.graph.output]
    extra = [labels[n] for n in dict.fromkeys(nodes) if n in labels and labels[n] not in outputs]
    wider = onnx.ModelProto()
    wider.CopyFrom(model)
    wider.graph.output.extend(onnx.ValueInfoProto(name=t) for t in extra)
    try:
        got: dict[str, Any] = {}
        for proto, names in ((model, outputs), (wider, extra)):  # (exposing a tensor may stop a fusion)
            if names:
                got.update(zip(*ort_run(proto.SerializeToString(), inputs, names)))
    except Exception as e:  # noqa: BLE001 - onnxruntime raises many exception types
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"note: --compare-all: onnxruntime cannot run '{path}' with its intermediate tensors: {msg}",
              file=sys.stderr)
        return None
    by_tensor = {t: n for n, t in labels.items()}
    values: dict[str, np.ndarray] = {}
    for t, v in got.items():
        if isinstance(v, np.ndarray):
            values[f"output '{t}'" if t in outputs else by_tensor[t]] = v
    return values


def _write_files(args: argparse.Namespace, result) -> None:
    """--outputs, --report, --trace."""
    if args.outputs:
        from npu_dialects.weights import save_npz
        write_output(args.outputs, lambda f: save_npz(f, result.outputs))
    if args.report:
        write_json(args.report, result.report)
    if args.trace:
        write_json(args.trace, result.trace)


def _annotate(args: argparse.Namespace, report: dict[str, Any], bucketed: _Bucketed | None) -> None:
    """The report gains what the compile cache did and the bucket run."""
    cache = getattr(args, "compile_cache", None)
    if cache is not None and cache.events:
        report["compile_cache"] = [{"level": level, "outcome": outcome} for level, outcome in cache.events]
        if args.verbose:
            from tools.npu_compile import cache_line
            print(cache_line(cache), file=sys.stderr)
    if bucketed is not None:
        report["bucket"] = dict(bucketed.bucket)
        report["bucket_actual"] = dict(bucketed.actual)


def _check_timing_only(args: argparse.Namespace) -> None:
    """--timing-only computes no outputs: the flags that need them are a usage error."""
    clash = [f for f, on in (("--check", args.check), ("--outputs", args.outputs),
                             ("--compare-all", args.compare_all)) if on]
    if args.timing_only and clash:
        raise UsageError(f"--timing-only computes no outputs: it cannot be combined with {clash[0]}")


def _apply_precision(args: argparse.Namespace) -> None:
    """--precision as the pipeline npu-default runs with (an .npuexe is already compiled)."""
    from tools.npu_compile import precision_pipeline
    if args.precision not in (None, "f32") and args.input.lower().endswith(".npuexe"):
        raise UsageError("--precision applies when compiling: an .npuexe runs as it was compiled")
    args.pipeline = precision_pipeline(args.precision, args.pipeline)


def _run(args: argparse.Namespace) -> int:
    from runtime.buckets import BucketError, slice_outputs
    from runtime.run import RunError, random_inputs
    from sim import SimError, signature
    from tools.api import parse_arch

    parse_arch(args.arch)
    _check_timing_only(args)
    _apply_precision(args)
    parsed = _parse_buckets(args)
    bucketed: _Bucketed | None = None
    if parsed is None:
        if args.inputs:
            input_headers(args.inputs)  # (a bad file is found before the compile)
        with collector_paused():  # (the compile; the simulation collects as usual)
            loaded = _load_with_remarks(args)
        # (the headers checked against the model before any data is read)
        inputs = read_inputs(args.inputs, signature(loaded.module)) if args.inputs else None
    else:
        loaded, bucketed, inputs = _load_bucketed(args, *parsed)
    try:
        if inputs is None:
            inputs = {} if args.timing_only else random_inputs(signature(loaded.module), args.seed)
        run_inputs = bucketed.run_inputs if bucketed and bucketed.run_inputs is not None else inputs
        result = _run_on_device(args, loaded, run_inputs)
        if bucketed and bucketed.out_shapes is not None:
            result.outputs = slice_outputs(result.outputs, bucketed.out_shapes)
    except (RunError, BucketError) as e:
        raise UserError(str(e)) from None
    except SimError as e:
        raise UserError(error_line(str(e)), e.details) from None
    for w in result.report["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    report = result.report
    _annotate(args, report, bucketed)
    problems: list[str] = []
    if args.check:
        refs, what = reference_outputs(loaded, args.input, inputs)  # (in the model's own dtypes)
        precision = coarsest(args.precision, model_precision(loaded.reference or args.input))  # (a mixed model: its 16-bit type's)
        check, problems = compare(result.outputs, refs, precision, quantization_steps(loaded, args.input))
        check["reference"] = what
        report["check"] = check
    if args.compare_all:
        table = _compare_all(args, loaded, inputs, result, report)
    if args.graph or args.html:
        from tools.report_files import write_pictures
        write_pictures(args, loaded, result, _graph_reference(args, loaded))
    _write_files(args, result)
    print(summary(report, args.input, loaded.arch))
    if args.compare_all:
        print(table)
    if getattr(args, "profile_text", None):
        print(args.profile_text)
    if problems:
        print(f"error: check failed: {problems[0]}", file=sys.stderr)
        for p in problems[1:]:
            print(f"error: check failed: {p}", file=sys.stderr)
        return EXIT_USER
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    """Entry point of `npu-run`; returns the exit code."""
    return cli_main(build_parser, _run, argv)


console_main = console(main)
"""The `npu-run` console script (`tools.cli.console`)."""

if __name__ == "__main__":
    console_main()

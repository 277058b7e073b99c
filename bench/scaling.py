"""Cost in model size: a chain of N elementwise ops compiled and simulated as whole
processes, at N = 1,000, 10,000 and 100,000 (issue 47 item 3: every figure grows
linearly in N; 10,000 ops compile in <= 30 s, 100,000 in <= 300 s), and BERT-base
encoders of 12, 24 and 48 layers at 128 tokens (weights as ONNX external data).

    python bench/scaling.py [--sizes 1000,10000,100000] [--bert-layers 12,24,48] [--out bench/results/scaling.md]

The model (written with onnx.helper): Relu, Neg, Abs, Sigmoid in turn on a [1, 64]
float tensor, node i named `n<i>`; npu-fuse makes the whole chain one kernel, so any
cost per op that walks the kernel (its fused location on every op, a scan of its ops
per op) shows up as quadratic growth here.

Columns, one whole process each (`os.wait4` gives its own CPU time and peak RSS):
- compile s, compile CPU s, peak MB: `python -m tools.npu_compile MODEL --no-cache`;
- executable bytes: the `.npuexe` written;
- simulate s, simulate CPU s, sim peak MB: `python -m tools.npu_run EXE` (functional:
  the outputs are computed);
- s / 1k ops: the slope of compile and simulate CPU seconds between this size and the
  previous one, per 1,000 ops added (flat when the growth is linear; CPU rather than
  wall seconds, which a loaded machine inflates); for BERT, per layer added, with the
  peak memory over the weights' bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import onnx
from onnx import TensorProto, helper

from bench import run_checked, write_table
from bench.compile import byte_compile

SIZES = (1_000, 10_000, 100_000)
OPS = ("Relu", "Neg", "Abs", "Sigmoid")
TARGETS = {10_000: 30.0, 100_000: 300.0}
"""Compile seconds the issue asks for, by chain length."""


def chain_model(n: int) -> onnx.ModelProto:
    """`n` elementwise nodes in a chain x -> y on a [1, 64] float tensor."""
    nodes, prev = [], "x"
    for i in range(n):
        out = f"t{i}" if i < n - 1 else "y"
        nodes.append(helper.make_node(OPS[i % len(OPS)], [prev], [out], name=f"n{i}"))
        prev = out
    graph = helper.make_graph(nodes, f"chain{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def measure(cmd: list[str], tmp: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one whole process (`bench.run_checked`)."""
    _, wall, cpu, peak = run_checked(cmd, ROOT)
    return wall, cpu, peak


def compile_and_run(row: dict, model: Path, exe: Path, tmp: Path) -> dict:
    """Fill `row` with the compile's and the simulation's figures (or `error`); the
    model's and executable's files are removed (`tmp` holds the rest)."""
    try:
        row["compile"], row["compile_cpu"], row["compile_mb"] = measure(
            [sys.executable, "-m", "tools.npu_compile", str(model), "-o", str(exe), "--no-cache"], tmp)
        row["bytes"] = exe.stat().st_size
        row["sim"], row["sim_cpu"], row["sim_mb"] = measure([sys.executable, "-m", "tools.npu_run", str(exe)], tmp)
    except RuntimeError as e:
        row["error"] = str(e)
    for p in (model, exe):
        p.unlink(missing_ok=True)
    return row


def bench_size(n: int, tmp: Path) -> dict:
    model = tmp / f"chain{n}.onnx"
    onnx.save(chain_model(n), str(model))
    return compile_and_run({"n": n}, model, tmp / f"chain{n}.npuexe", tmp)


def bench_bert(layers: int, tmp: Path) -> dict:
    """One BERT-base encoder of `layers` layers (the same columns as `bench_size`)."""
    model, data = tmp / f"bert{layers}.onnx", tmp / f"bert{layers}.data"
    # (written by a child process: a parent holding the model would inflate the peak RSS
    # of every process it forks after)
    measure([sys.executable, "-c", "import onnx; from tools.testkit.transformers import bert_layers; "
             f"onnx.save(bert_layers(layers={layers}, seq=128), {str(model)!r}, save_as_external_data=True, "
             f"location='bert{layers}.data')"], tmp)
    row = compile_and_run({"n": layers, "weights_mb": data.stat().st_size / 2**20}, model,
                          tmp / f"bert{layers}.npuexe", tmp)
    data.unlink(missing_ok=True)
    return row


def slopes(r: dict, prev: dict | None, per: float) -> list[str]:
    """Compile and simulate CPU seconds added per `per` units of size since `prev`."""
    if prev is None:
        return ["", ""]
    k = (r["n"] - prev["n"]) / per
    return [f"{(r[c] - prev[c]) / k:.3f}" for c in ("compile_cpu", "sim_cpu")]


def bert_table(rows: list[dict]) -> list[str]:
    lines = ["", "BERT-base encoders at 128 tokens (whole processes as above; slopes per layer added):", "",
             "| layers | weights MB | compile s | compile CPU s | peak MB | peak / weights | executable MB | "
             "simulate s | simulate CPU s | sim peak MB | compile CPU s / layer | simulate CPU s / layer |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    prev = None
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['n']} | {r['weights_mb']:.0f} | error: {r['error']} | | | | | | | | | |")
            prev = None
            continue
        slope = slopes(r, prev, 1)
        lines.append(f"| {r['n']} | {r['weights_mb']:.0f} | {r['compile']:.2f} | {r['compile_cpu']:.2f} | "
                     f"{r['compile_mb']:.0f} | {r['compile_mb'] / r['weights_mb']:.2f} | {r['bytes'] / 2**20:.0f} | "
                     f"{r['sim']:.2f} | {r['sim_cpu']:.2f} | {r['sim_mb']:.0f} | {slope[0]} | {slope[1]} |")
        prev = r
    return lines


def table(rows: list[dict]) -> list[str]:
    load = os.getloadavg()[0]
    lines = [f"# Cost in model size: a chain of N elementwise ops, one fused kernel (load average {load:.1f} "
             "at the end)", "",
             "Whole processes: `npu-compile --no-cache`, then `npu-run` on the executable (functional). "
             "Targets: 10,000 ops compile in <= 30 s, 100,000 in <= 300 s (checked on wall and on CPU seconds: "
             "a loaded machine inflates wall time, not CPU time); slopes are CPU seconds per 1,000 ops added "
             "since the previous size (flat: linear).", "",
             "| ops | compile s | compile CPU s | peak MB | executable bytes | bytes / op | simulate s | "
             "simulate CPU s | sim peak MB | compile CPU s / 1k ops | simulate CPU s / 1k ops |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    prev = None
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['n']:,} | error: {r['error']} | | | | | | | | | |")
            prev = None
            continue
        target = TARGETS.get(r["n"])
        mark = "" if target is None else f" ({'ok' if r['compile'] <= target else 'over'} <= {target:.0f})"
        cpu_mark = "" if target is None else f" ({'ok' if r['compile_cpu'] <= target else 'over'})"
        slope = slopes(r, prev, 1000)
        lines.append(f"| {r['n']:,} | {r['compile']:.2f}{mark} | {r['compile_cpu']:.2f}{cpu_mark} | {r['compile_mb']:.0f} | "
                     f"{r['bytes']:,} | {r['bytes'] / r['n']:.0f} | {r['sim']:.2f} | {r['sim_cpu']:.2f} | "
                     f"{r['sim_mb']:.0f} | {slope[0]} | {slope[1]} |")
        prev = r
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="chain lengths, comma-separated")
    ap.add_argument("--bert-layers", default="12,24,48", help="BERT-base encoder depths ('' for none)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "scaling.md"))
    args = ap.parse_args()
    byte_compile()  # (as bench/compile.py: no timed process compiles the checkout from source)
    rows, berts = [], []
    with tempfile.TemporaryDirectory() as d:
        for n in sorted(int(s) for s in args.sizes.split(",")):
            rows.append(bench_size(n, Path(d)))
            r = rows[-1]
            print(f"{n:>7} ops: " + (f"error: {r['error']}" if "error" in r else
                  f"compile {r['compile']:.2f} s (CPU {r['compile_cpu']:.2f}, {r['compile_mb']:.0f} MB), "
                  f"{r['bytes']:,} bytes, simulate {r['sim']:.2f} s (CPU {r['sim_cpu']:.2f}, {r['sim_mb']:.0f} MB)"),
                  flush=True)
        for layers in sorted(int(s) for s in args.bert_layers.split(",") if s):
            berts.append(bench_bert(layers, Path(d)))
            print(f"bert {layers} layers: {berts[-1]}", flush=True)
    lines = table(rows) + (bert_table(berts) if berts else [])
    print("\n".join(lines))
    write_table(lines, args.out)


if __name__ == "__main__":
    main()

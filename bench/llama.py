"""A Llama-style decoder of about one billion parameters on this machine: written as
ONNX with external data, compiled and simulated as whole processes, checked against
onnxruntime.

    python bench/llama.py [--layers 16] [--hidden 2048] [--past 128] [--precisions f32,bf16,int8]
                          [--max-gb 20] [--out bench/results/llama.md]

Model (`tools/testkit/transformers.py:llama_decoder`, seeded random weights): hidden
2048, 16 layers, grouped-query attention (32 query heads over 8 KV heads of 64),
rotary position embeddings, SwiGLU MLP 8192 wide, RMSNorm (Pow/ReduceMean/Add/Sqrt/
Div/Mul), a final RMSNorm, no embedding table or LM head: one decode step of one new
token (`hidden_states` [1, 1, 2048]) against a KV cache of --past positions per layer
(`past_key_values.{i}.key`/`.value` [1, 8, P, 64] in, `present.{i}.key`/`.value`
[1, 8, P + 1, 64] out). 0.97 G parameters, 3.9 GB of f32 weights; `onnx.save` with
`save_as_external_data=True` into one `.onnx.data` file (one protobuf cannot hold
more than 2 GB). Smaller sizes (`--layers 2 --hidden 256 --heads 4 --kv-heads 2
--ffn 512`) debug the script.

Every step is a whole process (`python -m ...`), timed, its peak resident memory its
ru_maxrss from `os.wait4` (as `bench/compile.py`), and watched: a step whose process
tree's proportional set size passes --max-gb is killed and its row says so.
- write: build the model and its seeded inputs (`block_inputs`, seed 0) and save them;
- reference: onnxruntime (CPU) on the external-data model, outputs saved;
- compile: `npu-compile MODEL --no-cache [--precision P]`;
- run: `npu-run EXE --inputs IN.npz --outputs OUT.npz --report R.json` (functional
  simulation: every value computed); from its report the simulated cycles, the
  roofline (max of MACs over the cube's peak and the minimum DRAM bytes - weights,
  inputs and outputs once - over `dram_bw`, for the chip computing in that
  precision) and their ratio, and DRAM traffic over that minimum.
- int8 (steps `quantize`, `reference-int8`): onnxruntime's `quantize_dynamic` of the
  model (int8 weights per output channel, external data; every MatMul becomes
  DynamicQuantizeLinear of its activation + MatMulInteger + the scale's Mul), compiled
  as it is (no `--precision`), against onnxruntime's run of that quantized model in its
  exact integer mode (`tools/ort_session.py`: the default kernels of a machine without
  VNNI saturate); its error against the f32 reference is shown beside.
Error: the largest |npu - ort| over all outputs, and match, the largest
|npu - ort| / (atol + rtol |ort|) with rtol 1e-3 and atol 1e-4 x max |ort| (at most 1
passes; as `bench/transformers.py`), that tolerance judging f32 only; the bf16 row
against the same f32 reference, its error also over the largest |ort| of the output.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np

from bench import write_table

GB = 2**30


def _pss(pid: int) -> int:
    """Bytes of proportional set size of `pid` and its descendants (0 when gone)."""
    total = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(ln.split()[1]) for ln in f if ln.startswith("Pss:")) * 1024
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


def _run(cmd: list[str], max_gb: float) -> tuple[float, str, float]:
    """Seconds, stdout and peak resident GB of one whole process; raises RuntimeError
    with its last stderr line, or when its tree's PSS passed `max_gb` (killed)."""
    import subprocess
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NPU_NO_CACHE": "1"}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, cwd=ROOT, start_new_session=True)
        watched = 0
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            watched = max(watched, _pss(p.pid))
            if watched > max_gb * GB:
                os.killpg(p.pid, signal.SIGKILL)
                os.wait4(p.pid, 0)
                raise RuntimeError(f"killed at {watched / GB:.1f} GB (over --max-gb {max_gb:g}) "
                                   f"after {time.perf_counter() - t:.0f} s")
            time.sleep(1.0)
        seconds = time.perf_counter() - t
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if code != 0:
            raise RuntimeError((err.read().strip().splitlines() or [f"failed ({code})"])[-1])
        return seconds, out.read(), usage.ru_maxrss / 2**20


def _sizes(args: argparse.Namespace) -> dict:
    return dict(layers=args.layers, hidden=args.hidden, heads=args.heads, kv_heads=args.kv_heads, ffn=args.ffn,
                past=args.past)


def write_model(sizes: dict, model: Path, inputs: Path) -> None:
    """Step `write`: the model with external data next to it, and its inputs."""
    import onnx

    from tools.testkit.transformers import block_inputs, llama_decoder
    m = llama_decoder(**sizes)
    feed: dict[str, Any] = block_inputs(m)
    np.savez(inputs, **feed)
    onnx.save(m, str(model), save_as_external_data=True, all_tensors_to_one_file=True,
              location=model.name + ".data")


def reference(model: Path, inputs: Path, out: Path) -> None:
    """Step `reference`: onnxruntime's outputs."""
    import onnxruntime as ort
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    feed = dict(np.load(inputs))
    names = [o.name for o in sess.get_outputs()]
    outs: dict[str, Any] = dict(zip(names, sess.run(names, feed)))
    np.savez(out, **outs)


def quantize(model: Path, out: Path) -> None:
    """Step `quantize`: onnxruntime's dynamic quantization of the model (int8 weights per
    output channel), its weights in external data beside it."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic
    logging.getLogger().setLevel(logging.ERROR)  # (its advice to run shape inference first)
    quantize_dynamic(str(model), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     use_external_data_format=True)


def reference_int8(model: Path, inputs: Path, out: Path) -> None:
    """Step `reference-int8`: onnxruntime's outputs of the quantized model, in its exact
    integer mode."""
    from tools.npu_run import ort_run
    names, outs = ort_run(str(model), dict(np.load(inputs)))
    np.savez(out, **dict(zip(names, outs)))


def errors(got: Path, ref: Path) -> tuple[float, float, float]:
    """Largest |got - ref|, it over the largest |ref| of its output, and the match
    (module docstring), each over all outputs."""
    worst_abs = worst_rel = worst = 0.0
    with np.load(got) as g, np.load(ref) as r:
        for k in r.files:
            a, b = g[k].astype(np.float64), r[k].astype(np.float64)
            diff = np.abs(a - b)
            atol = 1e-4 * float(np.abs(b).max(initial=0.0))
            worst_abs = max(worst_abs, float(diff.max(initial=0.0)))
            worst_rel = max(worst_rel, float(diff.max(initial=0.0)) / max(float(np.abs(b).max(initial=0.0)), 1e-30))
            worst = max(worst, float((diff / (atol + 1e-3 * np.abs(b))).max(initial=0.0)))
    return worst_abs, worst_rel, worst


def params(sizes: dict) -> int:
    h, d = sizes["hidden"], sizes["hidden"] // sizes["heads"]
    kv = sizes["kv_heads"] * d
    per_layer = h * h * 2 + 2 * h * kv + 3 * h * sizes["ffn"] + 2 * h
    return sizes["layers"] * per_layer + h


def bench(args: argparse.Namespace, tmp: Path) -> list[str]:
    py = sys.executable
    sizes = _sizes(args)
    model, inputs, ref = tmp / "llama.onnx", tmp / "inputs.npz", tmp / "ort.npz"
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in sizes.items()]
    me = [py, str(Path(__file__).resolve()), *flags]
    secs, _, peak = _run([*me, "--step", "write", "--dir", str(tmp)], args.max_gb)
    data = model.with_name(model.name + ".data").stat().st_size
    head = [f"`python bench/llama.py {' '.join(flags)}` "
            f"(load average {os.getloadavg()[0]:.1f} at the start; 2 cores, 24 GB)", "",
            f"Model: {params(sizes) / 1e9:.3f} G parameters; `llama.onnx` {model.stat().st_size / 2**20:.2f} MB "
            f"+ `llama.onnx.data` {data / GB:.2f} GB, written in {secs:.0f} s (peak {peak:.1f} GB).", ""]
    print("\n".join(head), flush=True)
    try:
        rs, _, rpeak = _run([*me, "--step", "reference", "--dir", str(tmp)], args.max_gb)
        head.append(f"onnxruntime (CPU, the external-data model): {rs:.1f} s, peak {rpeak:.1f} GB.")
    except RuntimeError as e:
        head.append(f"onnxruntime failed: {e}")
        ref = None
    head += ["", "bf16: `--precision bf16` (weights converted to bf16 at compile time, computed in bf16, statistics "
             "in f32), against the same f32 onnxruntime reference: the f32 tolerance of match does not apply."]
    precisions = args.precisions.split(",")
    qmodel, qref = tmp / "llama_int8.onnx", tmp / "ort_int8.npz"
    if "int8" in precisions:
        head += ["", "int8: onnxruntime's `quantize_dynamic` (int8 weights per output channel; activations "
                 "quantized at run time by DynamicQuantizeLinear), compiled as it is; its error against "
                 "onnxruntime's exact-integer run of the quantized model (match judged there), and in brackets "
                 "against the f32 reference."]
        try:
            qs, _, qpeak = _run([*me, "--step", "quantize", "--dir", str(tmp)], args.max_gb)
            qdata = qmodel.with_name(qmodel.name + ".data")
            head.append(f"Quantized in {qs:.0f} s (peak {qpeak:.1f} GB): `llama_int8.onnx.data` "
                        f"{qdata.stat().st_size / GB:.2f} GB.")
            _run([*me, "--step", "reference-int8", "--dir", str(tmp)], args.max_gb)
        except RuntimeError as e:
            head.append(f"quantization failed: {e}")
            precisions.remove("int8")
    head += ["", "| precision | compile s | compile peak GB | .npuexe GB | run s | run peak GB | cycles "
             "| roofline | ratio | DRAM traffic / min | max abs err vs ORT | / max abs ORT | match |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for prec in precisions:
        exe, outs, rep = tmp / f"llama_{prec}.npuexe", tmp / f"out_{prec}.npz", tmp / f"report_{prec}.json"
        cells = [prec]
        src, flags_p = (qmodel, []) if prec == "int8" else (model, ["--precision", prec])
        try:
            cs, _, cpeak = _run([py, "-m", "tools.npu_compile", str(src), "-o", str(exe), "--no-cache",
                                 *flags_p], args.max_gb)
            cells += [f"{cs:.0f}", f"{cpeak:.1f}", f"{exe.stat().st_size / GB:.2f}"]
            rs, _, rpeak = _run([py, "-m", "tools.npu_run", str(exe), "--inputs", str(inputs), "--outputs",
                                 str(outs), "--report", str(rep)], args.max_gb)
            r = json.loads(rep.read_text())
            cells += [f"{rs:.0f}", f"{rpeak:.1f}", str(r["cycles"]), str(r["roofline_cycles"]),
                      f"{r['cycles'] / r['roofline_cycles']:.2f}",
                      f"{(r['dram_bytes_read'] + r['dram_bytes_written']) / r['model_min_dram_bytes']:.2f}"]
            if prec == "int8":
                ea, er, m = errors(outs, qref)
                fa, fr, _ = errors(outs, ref) if ref is not None else (float("nan"),) * 3
                cells += [f"{ea:.2e} ({fa:.2e})", f"{er:.2e} ({fr:.2e})", f"{m:.3f}{'' if m <= 1 else ' FAIL'}"]
            elif ref is not None:
                ea, er, m = errors(outs, ref)
                cells += [f"{ea:.2e}", f"{er:.2e}", f"{m:.3f}{'' if m <= 1 or prec != 'f32' else ' FAIL'}"]
            exe.unlink()
        except RuntimeError as e:
            cells.append(f"failed: {e}")
        rows.append(f"| {' | '.join(cells)} |")
        print(rows[-1], flush=True)
    return [*head, *rows]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=8192)
    p.add_argument("--past", type=int, default=128)
    p.add_argument("--precisions", default="f32,bf16,int8", help="comma-separated: f32, f16, bf16, int8")
    p.add_argument("--max-gb", type=float, default=20.0, help="kill a step whose memory passes this")
    p.add_argument("--out", default="bench/results/llama.md", help="write the table here ('' for none)")
    p.add_argument("--step", choices=("write", "reference", "quantize", "reference-int8"), help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.step:
        tmp = Path(args.dir)
        if args.step == "write":
            write_model(_sizes(args), tmp / "llama.onnx", tmp / "inputs.npz")
        elif args.step == "quantize":
            quantize(tmp / "llama.onnx", tmp / "llama_int8.onnx")
        elif args.step == "reference-int8":
            reference_int8(tmp / "llama_int8.onnx", tmp / "inputs.npz", tmp / "ort_int8.npz")
        else:
            reference(tmp / "llama.onnx", tmp / "inputs.npz", tmp / "ort.npz")
        return 0
    t = time.time()
    with tempfile.TemporaryDirectory(prefix="llama-") as d:
        lines = bench(args, Path(d))
    lines += ["", f"({time.time() - t:.0f} s in all)"]
    print("\n".join(lines))
    write_table(lines, args.out or None)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Post-training quantization with real accuracy (issue 45): an MLP trained here on the
handwritten digits (`tests/models/digits.npz`: the 1,797 8x8 images scikit-learn
bundles, a copy of the UCI optdigits test set, CC BY 4.0), quantized by
`npu-quantize` with each calibration method and by onnxruntime's `quantize_static`
with the same samples and settings, then run on the simulator (ours) and in
onnxruntime (theirs); test-split accuracy in f32, int8, bf16 (`--precision bf16`) and
mixed precision (`--target cosine=0.9999`), with simulated cycles.

    python bench/quantize.py --out bench/results/quantize.md

The split is fixed (the first 1,437 images train, the last 360 test); training is
numpy full-batch Adam from seed 0, so `tests/models/digits_mlp.onnx` is rebuilt the
same by `--train` (the committed file is that model). Calibration: 128 training images.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "models", "digits.npz")
MODEL = os.path.join(ROOT, "tests", "models", "digits_mlp.onnx")
TRAIN, TEST, CALIB = 1437, 360, 128
HIDDEN = (64, 32)


def split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    with np.load(DATA) as z:
        x, y = z["x"].astype(np.float32) / 16.0, z["y"].astype(np.int64)
    return x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]


def train(epochs: int = 600, lr: float = 0.01) -> list[tuple[np.ndarray, np.ndarray]]:
    """Weights of a 64 -> 64 -> 32 -> 10 ReLU MLP (softmax cross entropy, Adam)."""
    x, y, _, _ = split()
    rng = np.random.default_rng(0)
    sizes = (64, *HIDDEN, 10)
    params = [(rng.standard_normal((a, b)) * np.sqrt(2.0 / a), np.zeros(b)) for a, b in zip(sizes, sizes[1:])]
    flat = [p for wb in params for p in wb]
    m = [np.zeros_like(p) for p in flat]
    v = [np.zeros_like(p) for p in flat]
    onehot = np.eye(10)[y]
    for t in range(1, epochs + 1):
        acts = [x.astype(np.float64)]
        for i, (w, b) in enumerate(params):
            z = acts[-1] @ w + b
            acts.append(np.maximum(z, 0) if i < len(params) - 1 else z)
        p = np.exp(acts[-1] - acts[-1].max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        g = (p - onehot) / len(x)
        grads = []
        for i in reversed(range(len(params))):
            w, _ = params[i]
            grads = [acts[i].T @ g, g.sum(0)] + grads
            if i:
                g = (g @ w.T) * (acts[i] > 0)
        for k, (p_, g_) in enumerate(zip(flat, grads)):
            m[k] = 0.9 * m[k] + 0.1 * g_
            v[k] = 0.999 * v[k] + 0.001 * g_ * g_
            p_ -= lr * (m[k] / (1 - 0.9 ** t)) / (np.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
    return params


def export(params: list[tuple[np.ndarray, np.ndarray]]) -> onnx.ModelProto:
    """The MLP as ONNX (Gemm + Relu), batch dim 'N'."""
    nodes, inits, cur = [], [], "x"
    for i, (w, b) in enumerate(params):
        inits += [numpy_helper.from_array(w.astype(np.float32), f"fc{i}.w"),
                  numpy_helper.from_array(b.astype(np.float32), f"fc{i}.b")]
        out = f"fc{i}" if i < len(params) - 1 else "logits"
        nodes.append(helper.make_node("Gemm", [cur, f"fc{i}.w", f"fc{i}.b"], [out], name=f"/fc{i}/Gemm"))
        cur = out
        if i < len(params) - 1:
            nodes.append(helper.make_node("Relu", [out], [f"relu{i}"], name=f"/relu{i}/Relu"))
            cur = f"relu{i}"
    g = helper.make_graph(nodes, "digits_mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def accuracy_ort(path: str, x: np.ndarray, y: np.ndarray) -> float:
    import onnxruntime as ort
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return float((np.asarray(s.run(None, {"x": x})[0]).argmax(1) == y).mean())


def simulate(path: str, x: np.ndarray, precision: str | None = None) -> tuple[np.ndarray, int]:
    """Logits and cycles of the model compiled for the default arch (batch = len(x))."""
    with tempfile.TemporaryDirectory() as d:
        np.savez(os.path.join(d, "in.npz"), x=x)
        cmd = [sys.executable, "-m", "tools.npu_run", path, "--inputs", os.path.join(d, "in.npz"), "--outputs",
               os.path.join(d, "out.npz"), "--shape-buckets", f"N={len(x)}", "--no-cache"]
        if precision:
            cmd += ["--precision", precision]
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if r.returncode:
            raise RuntimeError(f"npu-run {path}: {r.stderr.strip()}")
        cycles = int(next(ln for ln in r.stdout.splitlines() if ln.startswith("cycles:")).split()[1])
        with np.load(os.path.join(d, "out.npz")) as z:
            return z["logits"], cycles


def ort_quantized(src: str, dst: str, calib: np.ndarray, method: str) -> None:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": calib[i:i + 1]} for i in range(len(calib))])

        def get_next(self):
            return next(self.it, None)
    cm = {"minmax": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
          "percentile": CalibrationMethod.Percentile}[method]
    quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, calibrate_method=cm)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--train", action="store_true", help="retrain and rewrite tests/models/digits_mlp.onnx")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.train or not os.path.exists(MODEL):
        onnx.save(export(train()), MODEL)
    xtr, _, x, y = split()
    calib = xtr[:CALIB]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        np.savez(os.path.join(d, "calib.npz"), x=calib[:, None, :])  # (128 samples of [1, 64])
        logits, cyc = simulate(MODEL, x)
        f32 = float((logits.argmax(1) == y).mean())
        rows.append(("f32", "-", f32, accuracy_ort(MODEL, x, y), cyc))
        lo, cyc = simulate(MODEL, x, "bf16")
        rows.append(("bf16 (--precision bf16)", "-", float((lo.argmax(1) == y).mean()), None, cyc))
        for method in ("minmax", "percentile", "entropy", "mse"):
            q = os.path.join(d, f"q_{method}.onnx")
            subprocess.run([sys.executable, "-m", "tools.npu_quantize", MODEL, "--data", os.path.join(d, "calib.npz"),
                            "-o", q, "--method", method, "--no-cache"], check=True, capture_output=True, cwd=ROOT)
            lo, cyc = simulate(q, x)
            theirs = None
            if method != "mse":
                t = os.path.join(d, f"ort_{method}.onnx")
                ort_quantized(MODEL, t, calib, method)
                theirs = accuracy_ort(t, x, y)
            rows.append((f"int8 {method}", "npu-quantize", float((lo.argmax(1) == y).mean()), theirs, cyc))
        q = os.path.join(d, "q_mixed.onnx")
        r = subprocess.run([sys.executable, "-m", "tools.npu_quantize", MODEL, "--data", os.path.join(d, "calib.npz"),
                            "-o", q, "--method", "mse", "--target", "cosine=0.9999", "--no-cache"],
                           check=True, capture_output=True, text=True, cwd=ROOT)
        kept = next((ln.split(": ", 1)[1] for ln in r.stdout.splitlines() if ln.startswith("kept float")), "none")
        lo, cyc = simulate(q, x)
        rows.append((f"mixed mse, cosine 0.9999 (float: {kept})", "npu-quantize", float((lo.argmax(1) == y).mean()),
                     None, cyc))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    lines = [f"`python bench/quantize.py` at commit {commit.strip()}: digits MLP 64-64-32-10, "
             f"{TEST} test images, {CALIB} calibration images; accuracy on the simulator (default arch, "
             "batch 360) and, for onnxruntime's quantize_static (QDQ, per-channel int8 weights, uint8 "
             "activations, same samples), in onnxruntime", "",
             "| model | quantized by | accuracy (simulator) | onnxruntime quantize_static, same method | "
             "vs f32 (points) | cycles |", "|---|---|---|---|---|---|"]
    for name, by, acc, theirs, cyc in rows:
        t = f"{100 * theirs:.2f}%" if theirs is not None else "-"
        lines.append(f"| {name} | {by} | {100 * acc:.2f}% | {t} | {100 * (acc - f32):+.2f} | {cyc:,} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

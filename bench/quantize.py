"""Post-training quantization with real accuracy (issue 45): two models trained here on
the handwritten digits (`tests/models/digits.npz`: the 1,797 8x8 images scikit-learn
bundles, a copy of the UCI optdigits test set, CC BY 4.0), an MLP and a small CNN
(`bench/train_digits_cnn.py`), each quantized by `npu-quantize` with each calibration
method and by onnxruntime's `quantize_static` with the same samples and settings, then
run on the simulator (ours) and in onnxruntime (theirs); test-split accuracy in f32,
int8, bf16 (`--precision bf16`) and mixed precision (`--target cosine=0.9999`), with
the logits' relative error against f32 and simulated cycles.

    python bench/quantize.py --out bench/results/quantize.md

The split is fixed (the first 1,437 images train, the last 360 test); training is
numpy full-batch Adam from seed 0, so `tests/models/digits_mlp.onnx` is rebuilt the
same by `--train` (the committed file is that model); the CNN is rebuilt by
`python bench/train_digits_cnn.py`. Calibration: 128 training images.
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
from tools.testkit.ort_exact import install as exact_onnxruntime  # noqa: E402

# onnxruntime, the reference, in its exact integer mode as the tests and bench/fuzz.py
# have it (`tools/testkit/ort_exact.py`): its default u8 x s8 kernels saturate on CPUs
# without VNNI, many steps off the ONNX result (on a VNNI host the mode changes nothing)
exact_onnxruntime()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "models", "digits.npz")
MODEL = os.path.join(ROOT, "tests", "models", "digits_mlp.onnx")
TRAIN, TEST, CALIB = 1437, 360, 128
HIDDEN = (64, 32)
Row = tuple[str, str, float, float | None, int, float | None, float | None]
"""name, quantized by, accuracy, quantize_static's accuracy, cycles, relative error: ours, quantize_static's"""


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


def run_ort(path: str, x: np.ndarray) -> np.ndarray:
    """The logits of `x` in onnxruntime."""
    import onnxruntime as ort
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return np.asarray(s.run(None, {"x": x})[0])


def accuracy_ort(path: str, x: np.ndarray, y: np.ndarray) -> float:
    return float((run_ort(path, x).argmax(1) == y).mean())


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


def quantize_rows(model: str, x: np.ndarray, y: np.ndarray, calib: np.ndarray, d: str) -> list[Row]:
    """Rows (name, by, accuracy, quantize_static's accuracy, cycles, our logits' and its relative error
    against f32) of one model: f32, bf16, int8 by each method, mixed; `d` a scratch directory."""
    tag = os.path.splitext(os.path.basename(model))[0]
    data = os.path.join(d, f"{tag}_calib.npz")
    np.savez(data, x=calib[:, None])  # (one sample of the model's input shape, batch 1, per leading index)
    ref, cyc = simulate(model, x)
    ref_ort = run_ort(model, x)

    def acc(lo: np.ndarray) -> float:
        return float((lo.argmax(1) == y).mean())

    def err(lo: np.ndarray, base: np.ndarray) -> float:
        return float(np.linalg.norm(lo - base) / np.linalg.norm(base))

    def ours(method: str, *extra: str) -> tuple[np.ndarray, int, str]:
        q = os.path.join(d, f"{tag}_q_{method}{'_mixed' if extra else ''}.onnx")
        r = subprocess.run([sys.executable, "-m", "tools.npu_quantize", model, "--data", data, "-o", q, "--method",
                            method, "--no-cache", *extra], check=True, capture_output=True, text=True, cwd=ROOT)
        lo, c = simulate(q, x)
        return lo, c, r.stdout

    rows: list[Row] = [("f32", "-", acc(ref), acc(ref_ort), cyc, None, None)]
    lo, cyc = simulate(model, x, "bf16")
    rows.append(("bf16 (--precision bf16)", "-", acc(lo), None, cyc, err(lo, ref), None))
    for method in ("minmax", "percentile", "entropy", "mse"):
        lo, cyc, _ = ours(method)
        theirs = their_err = None
        if method != "mse":
            t = os.path.join(d, f"{tag}_ort_{method}.onnx")
            ort_quantized(model, t, calib, method)
            lt = run_ort(t, x)
            theirs, their_err = acc(lt), err(lt, ref_ort)
        rows.append((f"int8 {method}", "npu-quantize", acc(lo), theirs, cyc, err(lo, ref), their_err))
    lo, cyc, out = ours("mse", "--target", "cosine=0.9999")
    kept = "; ".join(ln.removeprefix("kept in ").replace(" (", " ", 1).replace("):", ":", 1)
                     for ln in out.splitlines() if ln.startswith("kept in ")) or "all int8"
    rows.append((f"mixed mse, cosine 0.9999 ({kept})", "npu-quantize", acc(lo), None, cyc, err(lo, ref), None))
    return rows


def table(title: str, rows: list[Row]) -> list[str]:
    f32 = rows[0][2]
    lines = [title, "", "| model | quantized by | accuracy (simulator) | onnxruntime quantize_static, same method | "
             "vs f32 (points) | logits' relative error vs f32: ours / quantize_static's | cycles |",
             "|---|---|---|---|---|---|---|"]
    for name, by, acc, theirs, cyc, ours_err, their_err in rows:
        t = f"{100 * theirs:.2f}%" if theirs is not None else "-"
        e = " / ".join(f"{100 * v:.2f}%" if v is not None else "-" for v in (ours_err, their_err))
        lines.append(f"| {name} | {by} | {100 * acc:.2f}% | {t} | {100 * (acc - f32):+.2f} | {e} | {cyc:,} |")
    return lines + [""]


def main() -> int:
    from bench.train_digits_cnn import MODEL as CNN
    from bench.train_digits_cnn import export as export_cnn
    from bench.train_digits_cnn import train as train_cnn
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--train", action="store_true", help="retrain and rewrite tests/models/digits_mlp.onnx")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.train or not os.path.exists(MODEL):
        onnx.save(export(train()), MODEL)
    if not os.path.exists(CNN):
        onnx.save(export_cnn(train_cnn()), CNN)
    xtr, _, x, y = split()
    with tempfile.TemporaryDirectory() as d:
        mlp = quantize_rows(MODEL, x, y, xtr[:CALIB], d)
        images = (xtr[:CALIB].reshape(-1, 1, 8, 8), x.reshape(-1, 1, 8, 8))
        cnn = quantize_rows(CNN, images[1], y, images[0], d)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    lines = [f"`python bench/quantize.py` at commit {commit.strip()}: {TEST} test images, {CALIB} calibration "
             "images; accuracy on the simulator (default arch, batch 360) and, for onnxruntime's quantize_static "
             "(QDQ, per-channel int8 weights, uint8 activations, same samples), in onnxruntime. Relative error: "
             "|logits - f32 logits| / |f32 logits| over the test images (ours on the simulator against the "
             "simulated f32 model, quantize_static's in onnxruntime against onnxruntime's f32 run)", ""]
    lines += table("Digits MLP 64-64-32-10 (`tests/models/digits_mlp.onnx`):", mlp)
    lines += table("Digits CNN (`tests/models/digits_cnn.onnx`, `bench/train_digits_cnn.py`): Conv3x3 1->8, "
                   "Conv3x3 8->16, MaxPool, Conv3x3 16->32, MaxPool (each conv pad 1 + Relu), Flatten, Gemm -> 10:",
                   cnn)
    text = "\n".join(lines).rstrip("\n") + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

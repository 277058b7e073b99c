"""Train the small digits CNN of issue 45's "real accuracy" table once, in plain numpy,
and write it as `tests/models/digits_cnn.onnx` (opset 17, input x [N, 1, 8, 8]
float32 = pixel / 16, output logits [N, 10]).

    python bench/train_digits_cnn.py            # trains (about a minute), prints the accuracy

Data: `tests/models/digits.npz` (scikit-learn's bundled 8x8 digits, a copy of UCI
optdigits, CC BY 4.0) with bench/quantize.py's fixed split: the first 1,437 images
train, the last 360 test. Network: Conv3x3(1->8, pad 1) + Relu, Conv3x3(8->16, pad 1)
+ Relu, MaxPool 2x2, Conv3x3(16->32, pad 1) + Relu, MaxPool 2x2, Flatten, Gemm -> 10
logits (about 11k parameters). Forward and backward are written by hand (im2col
convolutions), softmax cross entropy, mini-batch Adam with a cosine-decayed step size
and one-pixel random shifts of the training images, all from seed 0: the same machine
writes the same file every time (threaded BLAS elsewhere may differ in the last bits).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "models", "digits.npz")
MODEL = os.path.join(ROOT, "tests", "models", "digits_cnn.onnx")
TRAIN = 1437
CONVS = ((1, 8), (8, 16), (16, 32))  # (in, out) channels of the 3x3 convolutions
POOL_AFTER = (1, 2)  # a 2x2 max pool follows these convolutions (0-based)
FLAT = 32 * 2 * 2

Params = dict[str, np.ndarray]


def split() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Train and test images as NCHW float32 [n, 1, 8, 8] in [0, 1], and their labels."""
    with np.load(DATA) as z:
        x, y = (z["x"].astype(np.float32) / 16.0).reshape(-1, 1, 8, 8), z["y"].astype(np.int64)
    return x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]


def init(rng: np.random.Generator) -> Params:
    """He-initialised weights: conv{i}.w [out, in, 3, 3], conv{i}.b, fc.w [FLAT, 10], fc.b."""
    p: Params = {}
    for i, (ci, co) in enumerate(CONVS):
        p[f"conv{i}.w"] = rng.standard_normal((co, ci, 3, 3)) * np.sqrt(2.0 / (9 * ci))
        p[f"conv{i}.b"] = np.zeros(co)
    p["fc.w"] = rng.standard_normal((FLAT, 10)) * np.sqrt(1.0 / FLAT)
    p["fc.b"] = np.zeros(10)
    return p


def conv_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """3x3 convolution, stride 1, pad 1, of NHWC `x` by OIHW `w`: output NHWC and the im2col matrix."""
    n, h, wd, c = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(1, 2))  # [n, h, w, c, 3, 3]
    cols = cols.reshape(n * h * wd, c * 9)
    out = cols @ w.reshape(w.shape[0], -1).T + b
    return out.reshape(n, h, wd, -1), cols


def conv_backward(g: np.ndarray, cols: np.ndarray, w: np.ndarray, shape: tuple[int, ...]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of the input (NHWC `shape`), the weight and the bias from the output's `g`."""
    n, h, wd, c = shape
    g2 = g.reshape(n * h * wd, -1)
    dw = (g2.T @ cols).reshape(w.shape)
    dcols = (g2 @ w.reshape(w.shape[0], -1)).reshape(n, h, wd, c, 3, 3)
    dxp = np.zeros((n, h + 2, wd + 2, c))
    for i in range(3):
        for j in range(3):
            dxp[:, i:i + h, j:j + wd, :] += dcols[..., i, j]
    return dxp[:, 1:-1, 1:-1, :], dw, g2.sum(0)


def pool_forward(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2x2 max pool, stride 2, of NHWC `x`, and the one-hot mask of each window's first maximum."""
    n, h, w, c = x.shape
    win = x.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, h // 2, w // 2, c, 4)
    arg = win.argmax(-1)
    return np.take_along_axis(win, arg[..., None], -1)[..., 0], np.eye(4)[arg]


def pool_backward(g: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n, h, w, c, _ = mask.shape
    d = (g[..., None] * mask).reshape(n, h, w, c, 2, 2).transpose(0, 1, 4, 2, 5, 3)
    return d.reshape(n, 2 * h, 2 * w, c)


def forward(p: Params, x: np.ndarray) -> tuple[np.ndarray, list]:
    """Logits of NCHW `x` and what the backward pass needs."""
    a = x.transpose(0, 2, 3, 1).astype(np.float64)
    tape = []
    for i in range(len(CONVS)):
        z, cols = conv_forward(a, p[f"conv{i}.w"], p[f"conv{i}.b"])
        shape = a.shape
        a = np.maximum(z, 0.0)
        mask = None
        if i in POOL_AFTER:
            a, mask = pool_forward(a)
        tape.append((cols, shape, z > 0, mask))
    # ONNX's Flatten of NCHW orders the features (c, h, w)
    flat = a.transpose(0, 3, 1, 2).reshape(len(a), -1)
    tape.append((flat, a.shape))
    return flat @ p["fc.w"] + p["fc.b"], tape


def backward(p: Params, tape: list, g: np.ndarray) -> Params:
    """Gradients of every parameter from the logits' gradient `g`."""
    flat, shape = tape[-1]
    grads = {"fc.w": flat.T @ g, "fc.b": g.sum(0)}
    d = (g @ p["fc.w"].T).reshape(shape[0], shape[3], shape[1], shape[2]).transpose(0, 2, 3, 1)
    for i in reversed(range(len(CONVS))):
        cols, in_shape, active, mask = tape[i]
        if mask is not None:
            d = pool_backward(d, mask)
        d, grads[f"conv{i}.w"], grads[f"conv{i}.b"] = conv_backward(d * active, cols, p[f"conv{i}.w"], in_shape)
    return grads


def shifted(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each image moved by -1, 0 or 1 pixel in each direction (zeros shifted in)."""
    out = np.zeros_like(x)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    dy, dx = rng.integers(0, 3, len(x)), rng.integers(0, 3, len(x))
    for a in range(3):
        for b in range(3):
            sel = (dy == a) & (dx == b)
            out[sel] = xp[sel, :, a:a + 8, b:b + 8]
    return out


def train(epochs: int = 40, batch: int = 32, lr: float = 3e-3, seed: int = 0) -> Params:
    """The trained parameters (softmax cross entropy, Adam, cosine step size, shifted images)."""
    x, y, _, _ = split()
    rng = np.random.default_rng(seed)
    p = init(rng)
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(v) for k, v in p.items()}
    steps_per_epoch = -(-len(x) // batch)
    total, t = epochs * steps_per_epoch, 0
    for _ in range(epochs):
        order = rng.permutation(len(x))
        xa = shifted(x, rng)
        for s in range(steps_per_epoch):
            idx = order[s * batch:(s + 1) * batch]
            logits, tape = forward(p, xa[idx])
            q = np.exp(logits - logits.max(1, keepdims=True))
            q /= q.sum(1, keepdims=True)
            q[np.arange(len(idx)), y[idx]] -= 1.0
            grads = backward(p, tape, q / len(idx))
            t += 1
            step = lr * 0.5 * (1.0 + np.cos(np.pi * (t - 1) / total))
            for k in p:
                m[k] = 0.9 * m[k] + 0.1 * grads[k]
                v[k] = 0.999 * v[k] + 0.001 * grads[k] ** 2
                p[k] -= step * (m[k] / (1 - 0.9 ** t)) / (np.sqrt(v[k] / (1 - 0.999 ** t)) + 1e-8)
    return p


def accuracy(p: Params, x: np.ndarray, y: np.ndarray) -> float:
    return float((forward(p, x)[0].argmax(1) == y).mean())


def export(p: Params) -> onnx.ModelProto:
    """The CNN as ONNX opset 17: Conv/Relu/MaxPool, Flatten, Gemm; batch dim 'N'."""
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in p.items()]
    nodes, cur = [], "x"
    for i in range(len(CONVS)):
        nodes.append(helper.make_node("Conv", [cur, f"conv{i}.w", f"conv{i}.b"], [f"conv{i}"], name=f"/conv{i}/Conv",
                                      kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"conv{i}"], [f"relu{i}"], name=f"/relu{i}/Relu"))
        cur = f"relu{i}"
        if i in POOL_AFTER:
            nodes.append(helper.make_node("MaxPool", [cur], [f"pool{i}"], name=f"/pool{i}/MaxPool",
                                          kernel_shape=[2, 2], strides=[2, 2]))
            cur = f"pool{i}"
    nodes.append(helper.make_node("Flatten", [cur], ["flat"], name="/flatten/Flatten", axis=1))
    nodes.append(helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="/fc/Gemm"))
    g = helper.make_graph(nodes, "digits_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench/train_digits_cnn.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("-o", "--out", default=MODEL, help="the .onnx to write (default tests/models/digits_cnn.onnx)")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    p = train(args.epochs)
    took = time.perf_counter() - start
    xtr, ytr, x, y = split()
    onnx.save(export(p), args.out)
    print(f"trained in {took:.1f} s: train accuracy {100 * accuracy(p, xtr, ytr):.2f}%, "
          f"test accuracy (float) {100 * accuracy(p, x, y):.2f}% on {len(y)} images; wrote {args.out} "
          f"({os.path.getsize(args.out):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Activation statistics and the calibration methods of `npu-quantize`.

`collect` runs the float model over the samples in onnxruntime (the numerical
reference, as onnxruntime's own quantizer does), every float tensor a node makes
added as an output, and keeps per tensor its min and max (pass 1) and a histogram
of |x| over [0, max |x|] in `BINS` bins (pass 2). `Stats` are cached on disk, keyed
by the model's and the data files' bytes, so another method costs no inference.

Algorithm
---------
Methods turn a tensor's statistics into a threshold t (the range is then [-t, t],
cut to the tensor's own [min, max] and widened to hold 0):
- `minmax`: the largest |x| seen;
- `percentile`: the `percentile`-th percentile of |x| (default 99.999);
- `entropy`: TensorRT's KL calibration: the t whose 128-level quantization of the
  clipped histogram diverges least from it;
- `mse`: the t with the least expected squared error (rounding inside, clipping
  outside), over the histogram.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from tools.quantize.data import CalibrationError, Samples

BINS = 2048
METHODS = ("minmax", "percentile", "entropy", "mse")
STATS_VERSION = "1"


@dataclass
class Stats:
    """Per tensor name: [min, max] and the histogram of |x| over [0, absmax]."""

    lo: dict[str, float]
    hi: dict[str, float]
    hist: dict[str, np.ndarray]

    def absmax(self, name: str) -> float:
        return max(abs(self.lo[name]), abs(self.hi[name]))


def float_tensors(model: onnx.ModelProto) -> list[str]:
    """The float32 tensors nodes make (shape inference's types), graph inputs first."""
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type.tensor_type.elem_type for v in
             [*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input]}
    inits = {i.name for i in model.graph.initializer}
    names = [v.name for v in model.graph.input if v.name not in inits and types.get(v.name) == TensorProto.FLOAT]
    for n in model.graph.node:
        names += [o for o in n.output if o and types.get(o) == TensorProto.FLOAT and o not in names]
    return names


def _session(model: onnx.ModelProto, names: list[str]):
    import onnxruntime as ort
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # (every tensor as written)
    opts.log_severity_level = 3  # (onnxruntime's warnings about the model are not the user's calibration)
    return ort.InferenceSession(m.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def collect(model: onnx.ModelProto, samples: Samples, progress: Callable[[str], None] | None = None) -> Stats:
    """The statistics of every float tensor over `samples` (two passes)."""
    names = float_tensors(model)
    try:
        sess = _session(model, names)
    except Exception as e:  # onnxruntime raises many types
        raise CalibrationError(f"onnxruntime cannot run the float model: {str(e).strip().splitlines()[0]}") from None
    lo = {n: np.inf for n in names}
    hi = {n: -np.inf for n in names}
    hist = {n: np.zeros(BINS, np.int64) for n in names}
    n = len(samples.samples)
    for p in (1, 2):
        for i, feed in enumerate(samples.samples):
            if progress is not None:
                progress(f"calibrating: pass {p} of 2, sample {i + 1} of {n}")
            outs = sess.run(names, feed)
            for name, out in zip(names, outs):
                a = np.asarray(out)
                if p == 1:
                    lo[name] = min(lo[name], float(a.min()))
                    hi[name] = max(hi[name], float(a.max()))
                else:
                    top = max(abs(lo[name]), abs(hi[name]))
                    if top > 0:
                        hist[name] += np.histogram(np.abs(a), bins=BINS, range=(0.0, top))[0]
    return Stats(lo, hi, hist)


def cache_key(model: onnx.ModelProto, samples: Samples) -> str:
    """The statistics' key: the model's bytes and every data file's bytes."""
    h = hashlib.sha256(STATS_VERSION.encode())
    h.update(model.SerializeToString())
    for f in samples.files:
        with open(f, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:32]


def cached_collect(model: onnx.ModelProto, samples: Samples, cache: str | None,
                   progress: Callable[[str], None] | None = None) -> tuple[Stats, bool]:
    """`collect`, read from or written to the directory `cache` (None: no cache); and
    whether it was a hit."""
    path = os.path.join(cache, "calibration", cache_key(model, samples) + ".npz") if cache else None
    if path and os.path.exists(path):
        try:
            with np.load(path, allow_pickle=False) as z:
                names = [str(x) for x in z["names"]]
                return Stats(dict(zip(names, map(float, z["lo"]))), dict(zip(names, map(float, z["hi"]))),
                             dict(zip(names, z["hist"]))), True
        except (OSError, ValueError, KeyError):
            pass  # (a damaged entry is recomputed)
    stats = collect(model, samples, progress)
    if path:
        names = list(stats.lo)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + f".{os.getpid()}.tmp.npz"
        np.savez(tmp, names=np.array(names), lo=np.array([stats.lo[n] for n in names]),
                 hi=np.array([stats.hi[n] for n in names]),
                 hist=np.stack([stats.hist[n] for n in names]) if names else np.zeros((0, BINS)))
        os.replace(tmp, path)
    return stats, False


# ------------------------------------------------------------------------- methods


def _edges(top: float) -> np.ndarray:
    return np.linspace(0.0, top, BINS + 1)


def percentile_threshold(hist: np.ndarray, top: float, percentile: float) -> float:
    """The `percentile`-th percentile of |x| from its histogram over [0, top]."""
    total = hist.sum()
    if total == 0 or top == 0:
        return top
    cdf = np.cumsum(hist) / total
    i = int(np.searchsorted(cdf, percentile / 100.0))
    return float(_edges(top)[min(i + 1, BINS)])


def entropy_threshold(hist: np.ndarray, top: float, levels: int = 128) -> float:
    """TensorRT's KL calibration: over thresholds at bin edges i >= `levels`, the
    clipped histogram P (outliers added to its last bin) against Q, the histogram's
    first i bins merged into `levels` bins and spread back over P's non-empty bins;
    the i of least KL(P || Q)."""
    if hist.sum() == 0 or top == 0:
        return top
    h = hist.astype(np.float64)
    h[0] = 0.0  # (the zeros a ReLU makes are exact at any scale: left out, they would pull t down)
    if h.sum() == 0:
        return top
    best, best_i = np.inf, BINS
    for i in range(levels, BINS + 1, max(1, (BINS - levels) // 256)):
        p = h[:i].copy()
        p[-1] += h[i:].sum()
        nz = p > 0
        q = np.zeros(i)
        for chunk in np.array_split(np.arange(i), levels):  # (Q from the histogram itself, outliers left out)
            m = nz[chunk]
            if m.any():
                q[chunk[m]] = h[chunk].sum() / m.sum()
        with np.errstate(divide="ignore", invalid="ignore"):  # (an empty candidate: NaN, never the best)
            ps, qs = p / p.sum(), q / q.sum()
            kl = float(np.sum(ps[nz] * np.log(ps[nz] / np.where(qs[nz] > 0, qs[nz], 1e-12))))
        if kl < best:
            best, best_i = kl, i
    return float(_edges(top)[best_i])


def mse_threshold(hist: np.ndarray, top: float, levels: int = 127, candidates: int = 200) -> float:
    """The threshold t minimising the histogram's expected squared error of a
    symmetric quantization with `levels` steps each side: rounding to multiples of
    t / levels inside [0, t], clipping to t beyond it (bin centres stand for their
    values)."""
    if hist.sum() == 0 or top == 0:
        return top
    edges = _edges(top)
    centre, w = (edges[:-1] + edges[1:]) / 2, hist.astype(np.float64)
    best, best_t = np.inf, top
    for t in np.linspace(top / candidates, top, candidates):
        step = t / levels
        q = np.minimum(np.round(centre / step) * step, t)
        err = float(np.sum(w * (centre - q) ** 2))
        if err < best:
            best, best_t = err, float(t)
    return best_t


def tensor_range(stats: Stats, name: str, method: str, percentile: float = 99.999) -> tuple[float, float]:
    """The calibrated [lo, hi] of tensor `name` by `method`, holding 0."""
    lo, hi, top = stats.lo[name], stats.hi[name], stats.absmax(name)
    hist = stats.hist[name]
    if method == "minmax":
        t = top
    elif method == "percentile":
        t = percentile_threshold(hist, top, percentile)
    elif method == "entropy":
        t = entropy_threshold(hist, top)
    elif method == "mse":
        t = mse_threshold(hist, top)
    else:
        raise ValueError(f"unknown calibration method '{method}' (one of {', '.join(METHODS)})")
    return min(0.0, max(lo, -t)), max(0.0, min(hi, t))

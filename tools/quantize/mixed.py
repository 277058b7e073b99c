"""Mixed precision for `npu-quantize`: the precision table a person writes (`--qtable`),
per-layer sensitivity, and the search that keeps the fewest, most sensitive layers
in float until an output criterion holds (`--target cosine=0.99`).

A qtable line is `PATTERN PRECISION`: an ONNX node name or a shell-style pattern of
names (`/layer4/*`), and `int8` or `f32` (the layer stays float: no pairs of its
own). `#` starts a comment; the last line naming a node decides it. A layer is a
node with weights (Conv, MatMul, Gemm). Sensitivity quantizes each layer alone and
measures the model's outputs against the float model over the calibration samples
(onnxruntime): cosine and relative L2 error.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

import numpy as np
import onnx

from tools.quantize.data import CalibrationError

PRECISIONS = ("int8", "f32")
LAYER_OPS = ("Conv", "MatMul", "Gemm")


def parse_qtable(path: str, model: onnx.ModelProto) -> dict[str, str]:
    """Node name -> precision from the qtable at `path`; CalibrationError naming the
    file and line for a malformed line, an unknown precision or a pattern that matches
    no node."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise CalibrationError(f"{path}: cannot read the qtable: {e.strerror or e}") from None
    names = [n.name for n in model.graph.node if n.name]
    out: dict[str, str] = {}
    for i, raw in enumerate(text.splitlines(), 1):
        body = raw.split("#", 1)[0].strip()
        if not body:
            continue
        parts = body.split()
        if len(parts) != 2:
            raise CalibrationError(f"{path}:{i}: expected 'PATTERN PRECISION', got '{body}'")
        pattern, prec = parts
        if prec not in PRECISIONS:
            hint = " (16-bit layers are not written by npu-quantize yet: f32 keeps the layer float)" \
                if prec in ("bf16", "f16") else ""
            raise CalibrationError(f"{path}:{i}: unknown precision '{prec}' (one of {', '.join(PRECISIONS)}){hint}")
        hit = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if not hit:
            raise CalibrationError(f"{path}:{i}: pattern '{pattern}' matches no node of the model")
        out.update({n: prec for n in hit})
    return out


def layers(model: onnx.ModelProto) -> list[str]:
    """The model's layers: named nodes with weights, in graph order."""
    inits = {i.name for i in model.graph.initializer}
    return [n.name for n in model.graph.node if n.op_type in LAYER_OPS and n.name
            and any(x in inits for x in n.input[1:])]


def session(model: onnx.ModelProto):
    """An onnxruntime CPU session of `model`, its warnings about the model silenced."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def output_error(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]],
                 reference: list[list[np.ndarray]]) -> tuple[float, float]:
    """(cosine, relative L2 error) of `model`'s outputs over `feeds` against `reference`."""
    sess = session(model)
    got = np.concatenate([np.asarray(o, np.float64).ravel() for f in feeds for o in sess.run(None, f)])
    ref = np.concatenate([np.asarray(o, np.float64).ravel() for r in reference for o in r])
    den = float(np.linalg.norm(got) * np.linalg.norm(ref))
    cos = float(np.dot(got, ref) / den) if den else 1.0
    rel = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
    return cos, rel


def float_outputs(model: onnx.ModelProto, feeds: list[dict[str, np.ndarray]]) -> list[list[np.ndarray]]:
    sess = session(model)
    return [[np.asarray(o) for o in sess.run(None, f)] for f in feeds]


def sensitivity(build: Callable[[set[str]], onnx.ModelProto], all_layers: list[str],
                feeds: list[dict[str, np.ndarray]], reference: list[list[np.ndarray]],
                progress: Callable[[str], None] | None = None) -> list[tuple[str, float, float]]:
    """(layer, cosine, relative error) of the model with only that layer quantized
    (`build(float_layers)` makes a QDQ model keeping `float_layers` float), worst first."""
    rows = []
    for i, name in enumerate(all_layers):
        if progress is not None:
            progress(f"sensitivity: layer {i + 1} of {len(all_layers)}")
        cos, rel = output_error(build(set(all_layers) - {name}), feeds, reference)
        rows.append((name, cos, rel))
    return sorted(rows, key=lambda r: (-r[2], r[0]))


def search_target(build: Callable[[set[str]], onnx.ModelProto], ranked: list[str], target_cosine: float,
                  feeds: list[dict[str, np.ndarray]], reference: list[list[np.ndarray]],
                  ) -> tuple[set[str], list[tuple[int, float]]]:
    """The shortest prefix of `ranked` (most sensitive first) kept float for the output
    cosine to reach `target_cosine`, by bisection over the prefix length (all of it
    when even that does not reach it); and (nodes float, cosine) of each step tried."""
    def cosine(k: int) -> float:
        cos = output_error(build(set(ranked[:k])), feeds, reference)[0]
        steps.append((k, cos))
        return cos

    steps: list[tuple[int, float]] = []
    if cosine(0) >= target_cosine:
        return set(), steps
    if cosine(len(ranked)) < target_cosine:
        return set(ranked), steps  # (not reachable by keeping these float)
    lo, hi = 0, len(ranked)  # (bisection: the cosine grows with the float prefix, mostly)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cosine(mid) >= target_cosine:
            hi = mid
        else:
            lo = mid
    return set(ranked[:hi]), steps


def format_sensitivity(rows: list[tuple[str, float, float]]) -> str:
    lines = ["| layer (quantized alone) | output cosine | output rel. error |", "|---|---|---|"]
    lines += [f"| {n} | {c:.6f} | {r:.3e} |" for n, c, r in rows]
    return "\n".join(lines) + "\n"

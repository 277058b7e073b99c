"""The tolerance `npu-run --check` compares outputs with (`metrics`, one tensor), and the
widened one of a model computed in f16/bf16 (`PRECISION_RTOL`); `tools.accuracy`'s
per-layer comparison uses the same. Only numpy: `npu-run` imports it at start.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PRECISION_RTOL = {"f16": 4 * 2.0 ** -10, "bf16": 4 * 2.0 ** -7}
"""--check's tolerance for a model computed in f16/bf16 (`--precision`): 4 spacings of
the type at 1, relative to each element and, as the absolute tolerance, to the output's
largest magnitude (rounding errors of intermediates scale with the activations)."""


def coarsest(*precisions: str | None) -> str | None:
    """The type among `precisions` (f32, f16, bf16 or None: f32) whose tolerance is the
    widest: a model holding f16 tensors run at `--precision f32` still computes them in
    f16 (only f32 tensors are converted), one run at bf16 computes in both."""
    return max(precisions, key=lambda p: PRECISION_RTOL.get(p or "", 0.0), default=None)


def metrics(got: np.ndarray, ref: np.ndarray, precision: str | None = None) -> dict[str, Any]:
    """The --check tolerance on one tensor: max abs / max rel error, cosine similarity,
    `ok` = allclose(rtol=1e-3, atol=1e-4 * max(1, max|ref|)) and that `atol`; the
    relative error of an element is |got - ref| / max(|ref|, atol). A model computed in
    f16/bf16 (`precision`) gets rtol `PRECISION_RTOL` and atol rtol * max|ref|."""
    g, r = np.asarray(got, np.float64).reshape(-1), np.asarray(ref, np.float64).reshape(-1)
    scale = float(np.max(np.abs(r))) if r.size and np.isfinite(r).all() else 1.0
    rtol = PRECISION_RTOL.get(precision or "", 1e-3)
    atol = 1e-4 * max(1.0, scale) if precision not in PRECISION_RTOL else rtol * (scale or 1.0)
    err = np.abs(g - r)
    a = float(np.max(err)) if err.size else 0.0
    rel = float(np.max(err / np.maximum(np.abs(r), atol))) if err.size else 0.0
    if not np.isfinite(a):
        a = rel = float("inf")
    norm = float(np.linalg.norm(g) * np.linalg.norm(r))
    cosine = float(np.dot(g, r) / norm) if norm > 0 else (1.0 if not g.any() and not r.any() else 0.0)
    return {"max_abs_err": a, "max_rel_err": rel, "cosine": cosine,
            "ok": bool(np.allclose(g, r, rtol=rtol, atol=atol)), "atol": atol, "rtol": rtol}


def model_precision(path: str | None) -> str | None:
    """The 16-bit type whose tolerance `--check` gives a model: one with per-node
    precisions (node `metadata_props` `npu.precision`, an npu-quantize mixed model), or
    one holding f16 or bf16 tensors itself (an all-f16 file, e.g. onnxconverter-common's
    `convert_float_to_float16`, with or without f32 inputs and outputs: its inputs,
    outputs, initializers, value infos or Casts) - bf16 when any is bf16, else f16.
    None for any other model or file."""
    if path is None or not path.lower().endswith(".onnx"):
        return None
    import onnx
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception:  # (onnx raises many types; the model's own errors come from the importer)
        return None
    kinds = {p.value for n in model.graph.node for p in n.metadata_props if p.key == "npu.precision"}
    g, t = model.graph, onnx.TensorProto
    types = {v.type.tensor_type.elem_type for v in (*g.input, *g.output, *g.value_info)}
    types |= {i.data_type for i in g.initializer}
    types |= {a.i for n in g.node if n.op_type == "Cast" for a in n.attribute if a.name == "to"}
    kinds |= {"bf16"} if t.BFLOAT16 in types else set()
    kinds |= {"f16"} if t.FLOAT16 in types else set()
    return next((k for k in ("bf16", "f16") if k in kinds), None)

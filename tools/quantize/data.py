"""Calibration data for `npu-quantize`: a directory of `.npz` files (one sample each, as
`npu-run --inputs` takes them) or one `.npz` whose arrays stack the samples on a new
leading axis. Every sample is checked against the model's inputs before any
statistic is taken: names, shapes (a symbolic dim takes any size), element types,
finite values, an input that never varies (a zero range). Each problem is one
`CalibrationError` line naming the file and the input. Labelled data (`--target
accuracy=X`) adds an integer array `labels` (unless the model has an input of that
name): per sample its classes (a stacked file: one row per sample).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper


class CalibrationError(Exception):
    """Calibration data that cannot be used (one diagnostic line)."""


@dataclass(frozen=True)
class InputSpec:
    """A model input: its name, numpy dtype and shape (None: a symbolic dim)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | None, ...]


def input_specs(model: onnx.ModelProto) -> list[InputSpec]:
    """The model's graph inputs that are not initializers."""
    inits = {i.name for i in model.graph.initializer}
    out = []
    for v in model.graph.input:
        if v.name in inits:
            continue
        t = v.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        out.append(InputSpec(v.name, np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type)), dims))
    return out


@dataclass
class Samples:
    """The calibration samples (each a dict input name -> array with the model's batch
    dims) and where each came from (file, and index within a stacked file)."""

    samples: list[dict[str, np.ndarray]]
    sources: list[str]
    files: list[str]  # the files read, in order (the cache key hashes them)
    labels: list[np.ndarray] | None = None  # each sample's classes (with labels=True)


LABELS = "labels"


def _labels(arrays: dict[str, np.ndarray], specs: list[InputSpec], where: str, want: bool) -> np.ndarray | None:
    """Pop the `labels` array (not an input of the model) from `arrays`: required and an
    integer array when `want`, else ignored."""
    if any(s.name == LABELS for s in specs):
        return None if not want else _no_labels(where, "the model has an input of that name")
    labels = arrays.pop(LABELS, None)
    if not want:
        return None
    if labels is None:
        return _no_labels(where, "the file has none")
    if labels.dtype.kind not in "iu":
        raise CalibrationError(f"{where}: array '{LABELS}' holds {labels.dtype}, expected integer classes")
    return labels


def _no_labels(where: str, why: str) -> np.ndarray:
    raise CalibrationError(f"{where}: no '{LABELS}' array ({why}): an accuracy target needs each sample's "
                           "classes")


def _npz(path: str) -> dict[str, np.ndarray]:
    import zipfile
    if os.path.isfile(path) and not zipfile.is_zipfile(path):
        raise CalibrationError(f"{path}: not an .npz archive (np.savez writes one)")
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except Exception as e:  # numpy raises several types for a bad archive
        raise CalibrationError(f"{path}: cannot read it as .npz: {str(e).splitlines()[0] if str(e) else type(e).__name__}") \
            from None


def _check(arrays: dict[str, np.ndarray], specs: list[InputSpec], where: str, stacked: bool) -> None:
    names = {s.name for s in specs}
    missing = [s.name for s in specs if s.name not in arrays]
    if missing:
        raise CalibrationError(f"{where}: no array for input '{missing[0]}' (the model's inputs: "
                               f"{', '.join(sorted(names))}; the file has: {', '.join(sorted(arrays)) or 'none'})")
    extra = sorted(set(arrays) - names)
    if extra:
        raise CalibrationError(f"{where}: array '{extra[0]}' is not an input of the model "
                               f"(its inputs: {', '.join(sorted(names))})")
    for s in specs:
        a = arrays[s.name]
        shape = a.shape[1:] if stacked else a.shape
        if len(shape) != len(s.shape) or any(d is not None and d != x for d, x in zip(s.shape, shape)):
            want = "x".join("?" if d is None else str(d) for d in s.shape)
            lead = "samples x " if stacked else ""
            raise CalibrationError(f"{where}: input '{s.name}' has shape {list(a.shape)}, expected {lead}[{want}]")
        if a.dtype != s.dtype and not (a.dtype.kind == s.dtype.kind == "f"):
            raise CalibrationError(f"{where}: input '{s.name}' holds {a.dtype}, the model takes {s.dtype}")
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            bad = "NaN" if np.any(np.isnan(a)) else "infinite"
            raise CalibrationError(f"{where}: input '{s.name}' holds {bad} values")


def load_samples(path: str, model: onnx.ModelProto, labels: bool = False) -> Samples:
    """The samples of `path` (a directory of .npz files, or one stacked .npz), checked
    against `model`'s inputs, with their `labels` when asked; CalibrationError naming
    the file and input otherwise."""
    specs = input_specs(model)
    if os.path.isdir(path):
        files = sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(".npz"))
        if not files:
            raise CalibrationError(f"{path}: no .npz files in the directory (one sample per file, as "
                                   "npu-run --inputs takes them)")
        samples, sources, classes = [], [], []
        for f in files:
            arrays = _npz(f)
            classes.append(_labels(arrays, specs, f, labels))
            _check(arrays, specs, f, stacked=False)
            samples.append({s.name: arrays[s.name].astype(s.dtype, copy=False) for s in specs})
            sources.append(f)
        return Samples(samples, sources, files, [c for c in classes if c is not None] if labels else None)
    if not os.path.exists(path):
        raise CalibrationError(f"{path}: no such file or directory")
    arrays = _npz(path)
    classes = _labels(arrays, specs, path, labels)
    _check(arrays, specs, path, stacked=True)
    counts = {len(arrays[s.name]) for s in specs}
    if len(counts) != 1:
        raise CalibrationError(f"{path}: the inputs stack different numbers of samples "
                               f"({', '.join(f'{s.name}: {len(arrays[s.name])}' for s in specs)})")
    n = counts.pop()
    if n == 0:
        raise CalibrationError(f"{path}: no samples (the arrays' leading axis is empty)")
    samples = [{s.name: arrays[s.name][i].astype(s.dtype, copy=False) for s in specs} for i in range(n)]
    if classes is not None and len(classes) != n:
        raise CalibrationError(f"{path}: '{LABELS}' has {len(classes)} rows for {n} samples")
    return Samples(samples, [f"{path}[{i}]" for i in range(n)], [path],
                   [classes[i] for i in range(n)] if classes is not None else None)


def check_varies(samples: Samples, specs: list[InputSpec]) -> None:
    """A float input that holds one value in every sample gives a zero range: error."""
    for s in specs:
        if s.dtype.kind != "f":
            continue
        lo = min(float(x[s.name].min()) for x in samples.samples)
        hi = max(float(x[s.name].max()) for x in samples.samples)
        if lo == hi:
            raise CalibrationError(f"{samples.files[0] if len(samples.files) == 1 else os.path.dirname(samples.files[0])}: "
                                   f"input '{s.name}' is {lo:g} in every sample: its range is zero, so no scale "
                                   "can be derived (calibrate with varied data)")

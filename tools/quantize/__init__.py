"""Post-training quantization (`npu-quantize`, issue 45): calibrate a float ONNX model
on sample inputs and write the standard QDQ model onnxruntime runs and `npu-compile`
compiles to integer kernels.

    from tools.quantize import quantize
    qmodel, report = quantize("model.onnx", "calib/", method="entropy")
    onnx.save(qmodel, "model.q.onnx")

`data.py` reads and checks the samples, `calibrate.py` takes the activation
statistics (cached) and turns them into ranges by a method, `qdq.py` writes the
model. Errors are `CalibrationError` (one line naming the file and the input).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import onnx

from tools.quantize.calibrate import METHODS, cached_collect, tensor_range
from tools.quantize.data import CalibrationError, check_varies, input_specs, load_samples
from tools.quantize.qdq import QdqOptions, write_qdq


@dataclass
class QuantizeReport:
    """What a quantization did: samples, whether the statistics came from the cache,
    and per activation tensor its calibrated range."""

    samples: int
    cache_hit: bool
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)


def quantize(model: onnx.ModelProto | str | os.PathLike[str], data: str, method: str = "minmax",
             percentile: float = 99.999, per_channel: bool = True, symmetric: bool = False,
             cache_dir: str | None = None, progress: Callable[[str], None] | None = None
             ) -> tuple[onnx.ModelProto, QuantizeReport]:
    """The QDQ model of float `model` calibrated on `data` (a directory of .npz files
    or one stacked .npz) by `method` (one of METHODS), and a report."""
    if method not in METHODS:
        raise CalibrationError(f"unknown calibration method '{method}' (one of {', '.join(METHODS)})")
    if not 0 < percentile <= 100:
        raise CalibrationError(f"percentile {percentile:g} is not in (0, 100]")
    m = model if isinstance(model, onnx.ModelProto) else onnx.load(os.fspath(model))
    samples = load_samples(data, m)
    check_varies(samples, input_specs(m))
    stats, hit = cached_collect(m, samples, cache_dir, progress)
    ranges = {n: tensor_range(stats, n, method, percentile) for n in stats.lo}
    q = write_qdq(m, ranges, QdqOptions(per_channel=per_channel, symmetric=symmetric))
    return q, QuantizeReport(len(samples.samples), hit, ranges)


__all__ = ["METHODS", "CalibrationError", "QuantizeReport", "quantize"]

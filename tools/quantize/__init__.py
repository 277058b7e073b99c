"""Post-training quantization (`npu-quantize`, issue 45): calibrate a float ONNX model
on sample inputs and write the standard QDQ model onnxruntime runs and `npu-compile`
compiles to integer kernels.

    from tools.quantize import quantize
    qmodel, report = quantize("model.onnx", "calib/", method="entropy")
    onnx.save(qmodel, "model.q.onnx")

`data.py` reads and checks the samples, `calibrate.py` takes the activation
statistics (cached) and turns them into ranges by a method, `qdq.py` writes the
model, `mixed.py` chooses the layers kept out of int8 (a qtable, or a search for an
output cosine or a task accuracy; kept in bf16, f16 or f32, a 16-bit layer marked
for `npu-compile`). Errors are `CalibrationError` (one line naming the file and the
input).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

import onnx

from tools.quantize import mixed
from tools.quantize.calibrate import METHODS, cached_collect, tensor_range
from tools.quantize.data import CalibrationError, Samples, check_varies, input_specs, load_samples
from tools.quantize.prepare import constant_weights, fold_batchnorm
from tools.quantize.qdq import QUANTIZED_OPS, QdqOptions, write_qdq

EVAL_SAMPLES = 16
"""Calibration samples the sensitivity analysis and the target search evaluate on."""


@dataclass
class QuantizeReport:
    """What a quantization did: samples, whether the statistics came from the cache,
    per activation tensor its calibrated range, the layers kept float, and (when
    asked) the per-layer sensitivity, the target search's steps and the output
    cosine of the result against the float model (its 16-bit layers emulated:
    `mixed.emulated`)."""

    samples: int
    cache_hit: bool
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    float_layers: list[str] = field(default_factory=list)
    precisions: dict[str, str] = field(default_factory=dict)  # each float layer's type (bf16, f16, f32)
    sensitivity: list[tuple[str, float, float]] = field(default_factory=list)
    op_sensitivity: list[tuple[str, float, float]] = field(default_factory=list)  # (the other ops, when searched)
    search: list[tuple[int, float]] = field(default_factory=list)  # (ops kept, the target's measure)
    cosine: float | None = None
    accuracy: float | None = None  # (with a target accuracy: the result's top-1 on the labelled samples)
    float_accuracy: float | None = None  # (the float model's)
    all_int8: onnx.ModelProto | None = None  # (with a qtable or target: every layer quantized, for --cycles)


def quantize(model: onnx.ModelProto | str | os.PathLike[str], data: str, method: str = "minmax",
             percentile: float = 99.999, per_channel: bool = True, symmetric: bool = False,
             cache_dir: str | None = None, progress: Callable[[str], None] | None = None,
             qtable: str | None = None, target_cosine: float | None = None, sensitivity: bool = False,
             keep_precision: str = "bf16", target_accuracy: float | None = None,
             known_sensitivity: list[tuple[str, float, float]] | None = None
             ) -> tuple[onnx.ModelProto, QuantizeReport]:
    """The QDQ model of float `model` calibrated on `data` (a directory of .npz files
    or one stacked .npz) by `method` (one of METHODS), and a report. `qtable`: a
    precision table file (`mixed.parse_qtable`); `sensitivity`: measure each layer
    quantized alone; `target_cosine`: keep the most sensitive layers in
    `keep_precision` (bf16, f16 or f32) until the outputs' cosine against the float
    model reaches it; `target_accuracy` (instead): until the top-1 accuracy of the
    first output on the samples' `labels` (all of them) reaches it.
    `known_sensitivity`: an earlier report's `sensitivity` for the same model, data
    and settings, used as it is (another target or precision without measuring it
    again)."""
    if keep_precision not in ("bf16", "f16", "f32"):
        raise CalibrationError(f"unknown precision '{keep_precision}' to keep layers in (one of bf16, f16, f32)")
    if method not in METHODS:
        raise CalibrationError(f"unknown calibration method '{method}' (one of {', '.join(METHODS)})")
    if not 0 < percentile <= 100:
        raise CalibrationError(f"percentile {percentile:g} is not in (0, 100]")
    if target_cosine is not None and target_accuracy is not None:
        raise CalibrationError("one target: an output cosine or a task accuracy, not both")
    m = model if isinstance(model, onnx.ModelProto) else onnx.load(os.fspath(model))
    m, _ = fold_batchnorm(constant_weights(m))
    table = mixed.parse_qtable(qtable, m) if qtable else {}
    samples = load_samples(data, m, labels=target_accuracy is not None)
    check_varies(samples, input_specs(m))
    stats, hit = cached_collect(m, samples, cache_dir, progress)
    ranges = {n: tensor_range(stats, n, method, percentile) for n in stats.lo}
    forced = {n: p for n, p in table.items() if p != "int8"}  # (the qtable's float layers and their types)

    def build(float_nodes: set[str], keep: str = keep_precision) -> onnx.ModelProto:
        precision = {**{n: keep for n in float_nodes}, **forced}
        return write_qdq(m, ranges, QdqOptions(per_channel=per_channel, symmetric=symmetric,
                                               keep_float=lambda n: n.name in precision, precision=precision))

    rep = QuantizeReport(len(samples.samples), hit, ranges)
    targeted = target_cosine is not None or target_accuracy is not None
    if qtable or targeted:
        rep.all_int8 = write_qdq(m, ranges, QdqOptions(per_channel=per_channel, symmetric=symmetric))
    keep: set[str] = set()
    if sensitivity or targeted:
        rep.sensitivity = list(known_sensitivity or [])
        keep = _mixed(m, table, samples, build, rep, progress, target_cosine, target_accuracy)
    q = build(keep)
    if sensitivity or targeted:
        feeds = samples.samples[:EVAL_SAMPLES]
        rep.cosine = mixed.output_error(q, feeds, mixed.float_outputs(m, feeds))[0]
    if target_accuracy is not None:
        assert samples.labels is not None
        rep.accuracy = mixed.accuracy(q, samples.samples, samples.labels)
    rep.precisions = {**{n: keep_precision for n in keep}, **forced}
    rep.float_layers = sorted(rep.precisions)
    return q, rep


def _mixed(m: onnx.ModelProto, table: dict[str, str], samples: Samples, build: Callable[..., onnx.ModelProto],
           rep: QuantizeReport, progress: Callable[[str], None] | None, target_cosine: float | None,
           target_accuracy: float | None) -> set[str]:
    """The sensitivity of each layer (into `rep`) and, with a target, what the search
    keeps out of int8: a prefix of the layers by sensitivity; when all of them do not
    reach the target, of those then the other quantized ops by their own sensitivity
    (measured only then; a layer's Relu/Clip is not one: it follows its layer)."""
    feeds = samples.samples[:EVAL_SAMPLES]
    ref = mixed.float_outputs(m, feeds)
    named = {n.name for n in m.graph.node if n.name}
    candidates = [n for n in mixed.layers(m) if n not in table]  # (the qtable's layers stay as it says)
    if not rep.sensitivity:
        rep.sensitivity = mixed.sensitivity(lambda f: build(f | (named - set(candidates)), "f32"), candidates,
                                            feeds, ref, progress)  # (each layer's own error: the rest f32)
    if target_cosine is None and target_accuracy is None:
        return set()
    if target_accuracy is not None:
        labels = samples.labels
        assert labels is not None
        rep.float_accuracy = mixed.accuracy(m, samples.samples, labels)
        target, score = target_accuracy, lambda q: mixed.accuracy(q, samples.samples, labels)
    else:
        assert target_cosine is not None
        target, score = target_cosine, lambda q: mixed.output_error(q, feeds, ref)[0]
    ranked = [r[0] for r in rep.sensitivity if r[0] in candidates]
    tried: dict[int, float] = {}
    keep = mixed.search_target(build, ranked, target, score, tried)
    rest = _other_ops(m, set(candidates) | set(table))
    if tried.get(len(ranked), target) < target and rest:  # (all the layers are not enough)
        tried[len(ranked) + len(rest)] = everything = score(build(set(ranked + rest)))
        if everything < target:  # (nor is every op: no ranking to measure)
            rep.search = list(tried.items())
            return set(ranked + rest)
        rep.op_sensitivity = mixed.sensitivity(lambda f: build(f | (named - set(rest)), "f32"), rest, feeds, ref,
                                               progress)
        ranked += [r[0] for r in rep.op_sensitivity]
        keep = mixed.search_target(build, ranked, target, score, tried, first=len(ranked) - len(rest))
    rep.search = list(tried.items())
    return keep


def _other_ops(m: onnx.ModelProto, layers: set[str]) -> list[str]:
    """The quantized ops of `m` that are not `layers` nor a layer's Relu/Clip."""
    from tools.quantize.qdq import ACTIVATIONS
    producer = {o: n.name for n in m.graph.node for o in n.output}
    return [n.name for n in m.graph.node if n.name and n.name not in layers and n.op_type in QUANTIZED_OPS
            and not (n.op_type in ACTIVATIONS and producer.get(n.input[0]) in layers)]


__all__ = ["EVAL_SAMPLES", "METHODS", "CalibrationError", "QuantizeReport", "quantize"]

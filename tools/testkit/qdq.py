"""onnxruntime's static QDQ quantization of a float model, as the QDQ benches and tests use it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnx


def quantize(model: onnx.ModelProto, calib: list[dict[str, np.ndarray]], symmetric: bool,
             pre_process: bool = True, qoperator: bool = False, activation_bits: int = 8,
             contrib_qdq: bool = False) -> onnx.ModelProto:
    """`model` through onnxruntime's `quantize_static` calibrated on the inputs `calib`:
    QDQ format, per-channel int8 weights, int8 symmetric (`symmetric`) or uint8 asymmetric
    activations; after its `quant_pre_process` (shape inference, BatchNorm folded into
    Conv) when `pre_process`; with `qoperator` the QOperator format instead (QLinearConv
    and onnxruntime's com.microsoft QLinear* ops); `contrib_qdq` writes onnxruntime's
    com.microsoft QuantizeLinear/DequantizeLinear (`UseQDQContribOps`), which
    `activation_bits = 16` needs below opset 21 (int16 or uint16 activations)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(calib)

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory() as d:
        raw, src, dst = Path(d) / "raw.onnx", Path(d) / "f.onnx", Path(d) / "q.onnx"
        onnx.save(model, raw)
        if pre_process:
            quant_pre_process(str(raw), str(src))
        else:
            src = raw
        fmt = QuantFormat.QOperator if qoperator else QuantFormat.QDQ
        acts = {(8, True): QuantType.QInt8, (8, False): QuantType.QUInt8,
                (16, True): QuantType.QInt16, (16, False): QuantType.QUInt16}[activation_bits, symmetric]
        quantize_static(str(src), str(dst), Reader(), quant_format=fmt, per_channel=True, activation_type=acts,
                        weight_type=QuantType.QInt8,
                        extra_options={"ActivationSymmetric": symmetric, "UseQDQContribOps": contrib_qdq},
                        nodes_to_exclude=infinite_nodes(model))
        return onnx.load(dst)


def infinite_nodes(model: onnx.ModelProto) -> list[str]:
    """The names of `model`'s nodes that read a constant (an initializer or a Constant
    node's value) holding an infinity, and of their outputs' readers (onnxruntime
    quantizes an excluded node's output for a quantized reader)."""
    from onnx import numpy_helper

    g = model.graph
    consts = {i.name: i for i in g.initializer}
    consts.update({n.output[0]: a.t for n in g.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"})
    infinite = {k for k, t in consts.items() if t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE,
                                                                 onnx.TensorProto.FLOAT16)
                and np.isinf(numpy_helper.to_array(t)).any()}
    bad = [n for n in g.node if infinite.intersection(n.input)]
    outs = {o for n in bad for o in n.output}
    return [n.name for n in g.node if n in bad or outs.intersection(n.input)]

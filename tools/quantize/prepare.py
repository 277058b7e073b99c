"""Pre-processing before calibration (`npu-quantize`): the weights stop being graph
inputs (`constant_weights`: an IR version 3 model lists every initializer as one),
and a BatchNormalization that alone reads a Conv's output is folded into the Conv's
weights and bias (W' = W * g, b' = (b - mean) * g + beta with g = gamma / sqrt(var +
eps)), as onnxruntime's `quant_pre_process` and TPU-MLIR do: the folded conv
quantizes as one integer op, where a BatchNormalization between a conv's pair and
the next would stay float.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper


def constant_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with no graph input naming an initializer, at IR version 4 or later (where
    initializers need not be inputs): the quantized model replaces the weights, so an
    input of that name would be left without its value (onnxruntime then asks for it
    in the feed), and an IR version 3 model's new scales would make it invalid. The
    model itself when it has none."""
    inits = {i.name for i in model.graph.initializer}
    if not any(v.name in inits for v in model.graph.input):
        return model
    m = onnx.ModelProto()
    m.CopyFrom(model)
    keep = [v for v in m.graph.input if v.name not in inits]
    del m.graph.input[:]
    m.graph.input.extend(keep)
    m.ir_version = max(m.ir_version, 4)
    return m


def fold_batchnorm(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A copy of `model` with each Conv -> BatchNormalization pair folded; and how many."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    readers: dict[str, int] = {}
    for n in g.node:
        for x in n.input:
            readers[x] = readers.get(x, 0) + 1
    producer = {o: n for n in g.node for o in n.output}
    outputs = {o.name for o in g.output}
    drop, folded = [], 0
    for bn in g.node:
        if bn.op_type != "BatchNormalization" or len(bn.output) != 1 or not all(x in inits for x in bn.input[1:5]):
            continue
        conv = producer.get(bn.input[0])
        if conv is None or conv.op_type != "Conv" or readers.get(bn.input[0]) != 1 or bn.input[0] in outputs \
                or conv.input[1] not in inits or (len(conv.input) > 2 and conv.input[2] and conv.input[2] not in inits):
            continue
        gamma, beta, mean, var = (numpy_helper.to_array(inits[x]).astype(np.float64) for x in bn.input[1:5])
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        scale = gamma / np.sqrt(var + eps)
        w = numpy_helper.to_array(inits[conv.input[1]]).astype(np.float64)
        b = numpy_helper.to_array(inits[conv.input[2]]).astype(np.float64) \
            if len(conv.input) > 2 and conv.input[2] else np.zeros(w.shape[0])
        wname, bname = f"{conv.input[1]}_bn_folded", f"{conv.name or conv.output[0]}_bias_bn_folded"
        g.initializer.extend([
            numpy_helper.from_array((w * scale.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32), wname),
            numpy_helper.from_array(((b - mean) * scale + beta).astype(np.float32), bname)])
        del conv.input[1:]
        conv.input.extend([wname, bname])
        conv.output[0] = bn.output[0]
        drop.append(bn)
        folded += 1
    for bn in drop:
        g.node.remove(bn)
    used = {x for n in g.node for x in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return m, folded

"""onnxruntime's QOperator format (`quantize_static(quant_format=QuantFormat.QOperator)`:
QLinearConv plus its com.microsoft QLinearAdd, QLinearConcat, QLinearAveragePool,
QLinearGlobalAveragePool, QGemm, QLinearSoftmax...) imports as the QDQ form each op
computes (`lowering/importer/contrib.py`) and runs within one output step of
onnxruntime's own contrib kernels, as does the QDQ format written with onnxruntime's own
com.microsoft QuantizeLinear/DequantizeLinear (`UseQDQContribOps`; per-channel weights
below opset 13 too), whose 16-bit activations are refused, named; a contrib op the
expansion does not know stays an unsupported operator, named."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from lowering.importer.onnx_import import import_model
from lowering.importer.symbolic import OnnxImportError
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs
from tools.testkit.models import Graph
from tools.testkit.qdq import quantize
from tools.testkit.zoo import random_inputs


def _net(opset: int = 13) -> onnx.ModelProto:
    """conv -> relu, a residual add, a concat, an average pool, a global average pool,
    a Gemm and a softmax: the QOperator ops onnxruntime writes for them."""
    g = Graph(seed=4)
    g.node("Conv", ["x", g.weight("c1.w", (8, 8, 3, 3))], "c1", name="c1", kernel_shape=[3, 3], pads=[1] * 4)
    g.node("Relu", ["c1"], "r1", name="r1")
    g.node("Add", ["r1", "x"], "s", name="res")
    g.node("Conv", ["s", g.weight("c2.w", (8, 8, 1, 1))], "c2", name="c2", kernel_shape=[1, 1])
    g.node("Concat", ["s", "c2"], "k", name="cat", axis=1)
    g.node("AveragePool", ["k"], "p", name="pool", kernel_shape=[2, 2], strides=[2, 2])
    g.node("GlobalAveragePool", ["p"], "gp", name="gap")
    g.node("Flatten", ["gp"], "f", name="flat")
    g.node("Gemm", ["f", g.weight("fc.w", (16, 10)), g.weight("fc.b", (10,))], "l", name="fc")
    g.node("Softmax", ["l"], "y", name="sm", axis=-1)
    return g.model("qop", {"x": [1, 8, 8, 8]}, {"y": [1, 10]}, opset)


def _within_one_step(q: onnx.ModelProto) -> None:
    """Every output element within one step of onnxruntime's: the step of the
    DequantizeLinear making `y` (QDQ), else QLinearSoftmax's 1/256."""
    last = next(n for n in q.graph.node if "y" in n.output)
    inits = {i.name: i for i in q.graph.initializer}
    step = float(numpy_helper.to_array(inits[last.input[1]])) if last.op_type == "DequantizeLinear" else 1 / 256
    for seed in range(2):
        inputs = random_inputs(q, seed=seed)
        got, _ = compile_and_run(q, "default", inputs=dict(inputs))
        want = onnxruntime_outputs(q, inputs)["y"]
        steps = np.abs(got.outputs["y"].astype(np.float64) - want.astype(np.float64)) / step
        assert steps.max() <= 1.001, steps.max()  # (its QLinearSoftmax rounds through its own exp table)


@pytest.mark.parametrize("symmetric", [True, False], ids=["int8", "uint8"])
def test_qoperator_model_matches_onnxruntime(symmetric):
    model = _net()
    q = quantize(model, [random_inputs(model, seed=100 + s) for s in range(4)], symmetric, qoperator=True)
    contrib = {n.op_type for n in q.graph.node if n.domain == "com.microsoft"}
    assert {"QLinearAdd", "QLinearConcat", "QLinearGlobalAveragePool"} <= contrib, contrib
    _within_one_step(q)


@pytest.mark.parametrize("symmetric, opset", [(True, 13), (False, 11)], ids=["int8", "uint8-opset11"])
def test_contrib_quantize_dequantize_match_onnxruntime(symmetric, opset):
    model = _net(opset)
    q = quantize(model, [random_inputs(model, seed=100 + s) for s in range(4)], symmetric, contrib_qdq=True)
    contrib = {n.op_type for n in q.graph.node if n.domain == "com.microsoft"}
    assert contrib == {"QuantizeLinear", "DequantizeLinear"}, contrib
    assert any(a.name == "axis" for n in q.graph.node for a in n.attribute if n.op_type == "DequantizeLinear")
    _within_one_step(q)


def test_contrib_16_bit_activations_are_refused_naming_the_node():
    model = _net()
    q = quantize(model, [random_inputs(model, seed=100)], True, contrib_qdq=True, activation_bits=16)
    with pytest.raises(OnnxImportError, match=r"node '\S+' \(com.microsoft.QuantizeLinear, opset 1\): y_zero_point "
                                              r"has element type int16; only int8 and uint8"):
        import_model(q)


def test_an_unknown_contrib_op_is_named():
    n = helper.make_node("QLinearWhere", ["c", "x", "s", "z", "x", "s", "z", "s", "z"], ["y"], name="qwhere",
                         domain="com.microsoft")
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, [4]),
                                     helper.make_tensor_value_info("x", TensorProto.UINT8, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [4])],
                          [helper.make_tensor("s", TensorProto.FLOAT, [], [0.1]),
                           helper.make_tensor("z", TensorProto.UINT8, [], [0])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(OnnxImportError, match=r"node 'qwhere' \(com.microsoft.QLinearWhere, opset 1\): unsupported"):
        import_model(model)


def test_a_softmax_axis_read_the_other_way_is_refused():
    n = helper.make_node("QLinearSoftmax", ["x", "s", "z", "s", "z"], ["y"], name="qsm", domain="com.microsoft",
                         axis=1, opset=11)
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3, 4])],
                          [helper.make_tensor("s", TensorProto.FLOAT, [], [0.1]),
                           helper.make_tensor("z", TensorProto.UINT8, [], [0])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(OnnxImportError, match=r"node 'qsm' \(com.microsoft.QLinearSoftmax\): its axis 1 follows "
                                              r"Softmax-11's reading, the model's Softmax is opset 13's"):
        import_model(model)

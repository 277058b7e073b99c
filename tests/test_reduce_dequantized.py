"""A QDQ model's reduction of a dequantized 8-bit tensor (npu-fuse-qdq's
`ReduceDequantized`): the reduction reads the 8-bit tensor and dequantizes it as it reads,
so no float copy of the tensor is written; its values are the graph's own (onnxruntime's
unoptimised run of the QDQ graph, bit for bit)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.test_qadd import _ort
from tests.test_qmul import _applied
from tools.testkit.e2e import compile_and_run


def _qdq_pool(op: str, elem: int) -> onnx.ModelProto:
    """y = Q(op(DQ(x))) over x [1, 8, 14, 14] (op GlobalAveragePool or ReduceMean over H, W)."""
    zp = 0 if elem == TensorProto.INT8 else 128
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [0.047]), helper.make_tensor("sy", TensorProto.FLOAT, [], [0.01]),
             helper.make_tensor("z", elem, [], [zp - 3]), helper.make_tensor("zy", elem, [], [zp + 2])]
    pool = helper.make_node(op, ["d"], ["m"], name="pool")
    if op == "ReduceMean":
        pool.attribute.append(helper.make_attribute("axes", [2, 3]))
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"], name="dq"), pool,
             helper.make_node("QuantizeLinear", ["m", "sy", "zy"], ["y"], name="q")]
    graph = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", elem, [1, 8, 14, 14])],
                              [helper.make_tensor_value_info("y", elem, [1, 8, 1, 1])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("op", ["GlobalAveragePool", "ReduceMean"])
@pytest.mark.parametrize("elem", [TensorProto.INT8, TensorProto.UINT8], ids=["int8", "uint8"])
def test_the_mean_reads_the_8_bit_tensor_and_equals_the_graph(op, elem):
    model = _qdq_pool(op, elem)
    dtype = np.int8 if elem == TensorProto.INT8 else np.uint8
    info = np.iinfo(dtype)
    x = np.random.default_rng(4).integers(info.min, info.max + 1, (1, 8, 14, 14)).astype(dtype)
    result, _ = compile_and_run(model, "default", inputs={"x": x})
    np.testing.assert_array_equal(result.outputs["y"], _ort(model, {"x": x}, optimise=False))
    applied = _applied(model, "default")
    assert "npu_graph.dequantize" not in applied and "npu_graph.reduce_mean" in applied, applied
    assert result.report["dram_bytes_read"] < x.size * 2  # (the i8 tensor, not a float copy)

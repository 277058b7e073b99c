"""A QDQ model's average pool leaving its padding out of the divisor, of a dequantized
8-bit tensor (npu-fuse-qdq's `AvgPoolDivisor`): a sum pool divided by each window's
count, so the dequantize, the pool and the quantize run as one kernel on the 8-bit
tensor (an 8-bit tile has no NaN to mark padding); the values are the graph's own
(its ops' references, bit for bit: the same sum and count as the float pool) and
within one step of onnxruntime's unoptimised run (which sums a window in its own
order: a tie now and then lands on the other side)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npu_dialects.graph.quant import dequantize_ref, quantize_ref
from npu_dialects.graph.refs import pool_ref
from tests.test_qadd import _ort
from tests.test_qmul import _applied
from tools.testkit.e2e import compile_and_run

POOLS = {  # kernel, strides, pads, ceil_mode; input H = W
    "shufflenet_3x3_s2": ([3, 3], [2, 2], [1, 1, 1, 1], 0, 28),
    "inception_3x3_s1": ([3, 3], [1, 1], [1, 1, 1, 1], 0, 14),
    "inception_7x7_end": ([7, 7], [1, 1], [0, 0, 1, 1], 0, 7),
    "ceil_3x3_s2": ([3, 3], [2, 2], [0, 0, 0, 0], 1, 8),
    "uneven_2x3": ([2, 3], [2, 1], [0, 1, 1, 2], 0, 11),
}


def _qdq_avgpool(kernel, strides, pads, ceil, hw: int, elem: int) -> onnx.ModelProto:
    """y = Q(AveragePool(DQ(x))) over x [1, 16, hw, hw], count_include_pad = 0."""
    zp = 0 if elem == TensorProto.INT8 else 128
    inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [0.047]), helper.make_tensor("sy", TensorProto.FLOAT, [], [0.03]),
             helper.make_tensor("z", elem, [], [zp - 3]), helper.make_tensor("zy", elem, [], [zp + 2])]
    nodes = [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["d"], name="dq"),
             helper.make_node("AveragePool", ["d"], ["m"], name="pool", kernel_shape=kernel, strides=strides,
                              pads=pads, ceil_mode=ceil, count_include_pad=0),
             helper.make_node("QuantizeLinear", ["m", "sy", "zy"], ["y"], name="q")]
    graph = helper.make_graph(nodes, "pool", [helper.make_tensor_value_info("x", elem, [1, 16, hw, hw])],
                              [helper.make_tensor_value_info("y", elem, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("pool", list(POOLS))
@pytest.mark.parametrize("elem", [TensorProto.INT8, TensorProto.UINT8], ids=["int8", "uint8"])
def test_the_pool_reads_the_8_bit_tensor_and_equals_the_graph(pool, elem):
    kernel, strides, pads, ceil, hw = POOLS[pool]
    model = _qdq_avgpool(kernel, strides, pads, ceil, hw, elem)
    dtype = np.int8 if elem == TensorProto.INT8 else np.uint8
    info = np.iinfo(dtype)
    x = np.random.default_rng(5).integers(info.min, info.max + 1, (1, 16, hw, hw)).astype(dtype)
    result, _ = compile_and_run(model, "default", inputs={"x": x})
    zp = np.array(0 if elem == TensorProto.INT8 else 128, np.float32)
    d = dequantize_ref(x, np.array(0.047, np.float32), zp - 3)
    ends = [p + (s - 1 if ceil else 0) for p, s in zip(pads[2:], strides)]  # (ceil mode: extra end padding)
    m = pool_ref(d, "avg", kernel, strides, pads[:2] + ends)
    want = quantize_ref(m, np.array(0.03, np.float32), zp + 2, int(info.min), int(info.max)).astype(dtype)
    np.testing.assert_array_equal(result.outputs["y"], want)
    ort = _ort(model, {"x": x}, optimise=False).astype(np.int32)
    steps = np.abs(result.outputs["y"].astype(np.int32) - ort)
    assert steps.max() <= 1 and (steps == 0).mean() >= 0.999, (steps.max(), (steps == 0).mean())
    applied = _applied(model, "default")
    assert "npu_graph.sumpool" in applied and "npu_graph.avgpool" not in applied, applied
    assert len(result.report["kernels"]) == 1, [k["name"] for k in result.report["kernels"]]
    assert result.report["dram_bytes_read"] < x.size * 2  # (the 8-bit tensor, not a float copy)

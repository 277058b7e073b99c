"""Reductions over more elements per result than a core's SRAM holds (npu-split-rows:
an inner and an outer reduction) compile and match onnxruntime: a global max, min, mean
and sum over a 1 MB tensor, a mean over one 300,000-wide axis, and the model
onnxruntime's `quantize_dynamic` makes of a conv on a 256x256 image (its
DynamicQuantizeLinear takes the min and max of the whole input) - each refused by
npu-tile before ('no tile fits sram_bytes=524288')."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tools.npu_run import main as run_main


def _reduce_model(op: str, shape: list[int], axes: list[int] | None, keepdims: int) -> onnx.ModelProto:
    reduced = range(len(shape)) if axes is None else axes
    out = [1 if d in reduced else n for d, n in enumerate(shape) if keepdims or d not in reduced]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, out)
    inputs = ["x"]
    inits = []
    if axes is not None:
        inits.append(onnx.numpy_helper.from_array(np.array(axes, np.int64), "axes"))
        inputs.append("axes")
    node = helper.make_node(op, inputs, ["y"], name="r", keepdims=keepdims)
    graph = helper.make_graph([node], "g", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("op,shape,axes,keepdims", [
    ("ReduceMax", [1, 4, 256, 256], None, 0),
    ("ReduceMin", [1, 4, 256, 256], [1, 2, 3], 1),
    ("ReduceMean", [1, 4, 256, 256], None, 1),
    ("ReduceSum", [8, 4, 32768], [0, 2], 0),
    ("ReduceMean", [2, 300000], [1], 1),
])
def test_a_reduction_larger_than_sram_matches_onnxruntime(op, shape, axes, keepdims, tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(_reduce_model(op, shape, axes, keepdims), str(path))
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    assert run_main([str(path), "--inputs", str(tmp_path / "in.npz"), "--check"]) == 0
    assert "check:       ok vs onnxruntime" in capsys.readouterr().out


def test_a_dynamically_quantized_conv_on_a_large_image(tmp_path, capsys):
    from onnxruntime.quantization import QuantType, quantize_dynamic
    rng = np.random.default_rng(1)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 256, 256])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 256, 256])
    w = onnx.numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    model = helper.make_model(helper.make_graph([conv], "g", [x], [y], [w]),
                              opset_imports=[helper.make_opsetid("", 17)])
    src, out = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(model, str(src))
    quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8, op_types_to_quantize=["Conv"])
    assert "DynamicQuantizeLinear" in [n.op_type for n in onnx.load(str(out)).graph.node]
    np.savez(tmp_path / "in.npz", x=rng.standard_normal((1, 3, 256, 256)).astype(np.float32))
    assert run_main([str(out), "--inputs", str(tmp_path / "in.npz"), "--check"]) == 0
    assert "check:       ok vs onnxruntime" in capsys.readouterr().out

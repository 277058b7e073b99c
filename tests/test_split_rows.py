"""Softmax and layer normalisation over rows longer than a core's SRAM
(`npu-split-rows`): the rows are reduced block by block into their statistics,
then normalised elementwise; the results match onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.arch import parse_arch_spec
from npu_dialects.compute import ApplyOp
from npu_dialects.weights import weights_of
from runtime.run import run
from tools.testkit.e2e import onnxruntime_outputs


def long_rows_model(width: int) -> onnx.ModelProto:
    """softmax(x) and LayerNorm(x * 3 + 1) over rows of `width`."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), "g"),
             numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), "b"),
             numpy_helper.from_array(np.array(3.0, np.float32), "three"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    nodes = [helper.make_node("Softmax", ["x"], ["s"], axis=-1, name="sm"),
             helper.make_node("Mul", ["x", "three"], ["x3"], name="mul"),
             helper.make_node("Add", ["x3", "one"], ["x4"], name="add"),
             helper.make_node("LayerNormalization", ["x4", "g", "b"], ["l"], axis=-1, epsilon=1e-5, name="ln")]
    g = helper.make_graph(nodes, "long_rows", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, width])],
                          [helper.make_tensor_value_info("s", TensorProto.FLOAT, [3, width]),
                           helper.make_tensor_value_info("l", TensorProto.FLOAT, [3, width])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("arch,width", [("edge-small", 20000), ("default,sram_bytes=16384", 5000)])
def test_long_rows_match_onnxruntime(arch: str, width: int) -> None:
    model, spec = long_rows_model(width), parse_arch_spec(arch)
    module, weights = import_model(model, spec)
    compile_module(module, spec, weights)
    stats = [op for op in module.walk() if isinstance(op, ApplyOp) and op.op.data == "npu_graph.row_stats"]
    assert {op.attrs.data["kind"].data for op in stats} == {"softmax", "moments"}  # type: ignore[attr-defined]
    assert any(op.accumulate is not None for op in stats)  # (blocks merged)
    x = {"x": np.random.default_rng(1).standard_normal((3, width)).astype(np.float32) * 4}
    res = run(module, weights_of(module), x, spec)
    for k, ref in onnxruntime_outputs(model, x).items():
        np.testing.assert_allclose(res.outputs[k], ref, rtol=1e-3, atol=1e-4 * float(np.abs(ref).max()), err_msg=k)


def test_rows_that_fit_stay_whole() -> None:
    spec = parse_arch_spec("default")
    module, weights = import_model(long_rows_model(3000), spec)
    compile_module(module, spec, weights)
    assert not [op for op in module.walk() if isinstance(op, ApplyOp) and op.op.data == "npu_graph.row_stats"]

"""Loads that stay put over runs of steps (`npu-bufferize`'s `run_copy`, the tile search's
`run_length` and `ordered`): a window whose loops are outside the innermost iterating
one is copied only at a run's first step, in an `scf.if` yielding its token. Models
whose kernels do so - a matmul whose whole K row tiles (or column tiles) stay put,
double and single buffered, split over cores that start mid-run; a QDQ BERT layer whose
attention keeps a head's k and v over its query tiles - match onnxruntime (or the
graph-level evaluation, bit for bit, for the QDQ model) under the memory sanitizer
(conftest's NPU_SANITIZE=1), and move the DRAM bytes the cost model predicts."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from xdsl.dialects import scf

from lowering.graph.evaluate import evaluate_graph
from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.arch import parse_arch_spec
from npu_dialects.dma import CopyOp
from npu_dialects.task import TaskOp
from npu_dialects.weights import weights_of
from runtime.run import run
from tools.testkit.e2e import onnxruntime_outputs
from tools.testkit.qdq import quantize
from tools.testkit.transformers import bert_layers, block_inputs


def matmul_model(m: int, k: int, n: int) -> onnx.ModelProto:
    """y = x @ w, w an initializer."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [k, n], np.random.default_rng(1).standard_normal(k * n))
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def run_copies(module) -> list[scf.IfOp]:
    """The `scf.if`s issuing a copy and yielding its token (`run_copy`)."""
    return [op for op in module.walk() if isinstance(op, scf.IfOp) and op.results
            and any(isinstance(o, CopyOp) for o in op.true_region.walk())]


def predicted_bytes(module) -> int:
    """The tasks' predicted DRAM bytes (each its part's share of its kernel's)."""
    return sum(t.properties["dram_bytes"].value.data for t in module.walk()  # type: ignore[attr-defined]
               if isinstance(t, TaskOp) and "dram_bytes" in t.properties)


@pytest.mark.parametrize("spec", ["default,sram_bytes=131072", "default,sram_bytes=65536,cores=1",
                                  "default,sram_bytes=32768,cores=3"])
def test_matmul_row_tiles_load_once_a_run(spec: str):
    model = matmul_model(1024, 64, 1024)
    arch = parse_arch_spec(spec)
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights, verify_each=False)
    assert run_copies(module), "no load stays put over a run"
    x = np.random.default_rng(0).standard_normal((1024, 64)).astype(np.float32)
    r = run(module, weights_of(module), {"x": x}, arch)
    want = onnxruntime_outputs(model, {"x": x})["y"]
    np.testing.assert_allclose(r.outputs["y"], want, rtol=1e-4, atol=1e-4)
    moved = r.report["dram_bytes_read"] + r.report["dram_bytes_written"]
    every_step = 1024 * 1024 * 4 + 1024 * 64 * 4  # (the output, and x read once: the least a tiling moves)
    assert moved >= every_step
    # the cost model counts a run's loads once a run (and once more per task after the first)
    assert moved <= predicted_bytes(module)


def test_quantized_attention_keeps_a_heads_keys_over_its_query_tiles():
    model = bert_layers(layers=1, seq=512, hidden=128, heads=2, ffn=256)
    qmodel = quantize(model, [block_inputs(model, seed=10 + s) for s in range(2)], True, pre_process=False)
    arch = parse_arch_spec("default,sram_bytes=262144")
    reference, ref_weights = import_model(qmodel, arch)
    module, weights = import_model(qmodel, arch)
    compile_module(module, arch, weights, verify_each=False)
    kernels = [t for t in module.walk() if isinstance(t, TaskOp) and any(
        getattr(o, "op", None) is not None and o.op.data == "npu_graph.attention" for o in t.walk())]  # type: ignore
    assert kernels and all(run_copies(t) for t in kernels), "the attention reloads k and v every step"
    inputs = block_inputs(model, seed=0)
    want = evaluate_graph(reference, ref_weights, inputs)
    got = run(module, weights_of(module), inputs, arch).outputs
    for out, value in want.items():
        np.testing.assert_array_equal(got[out], value, err_msg=out)

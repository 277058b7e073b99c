"""Einsum, ReduceProd, MaxPool's Indices output and MaxUnpool
(`lowering/importer/indexing.py`), compiled, simulated and compared with onnxruntime;
and the diagnostics for what cannot be imported."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from lowering.importer.onnx_import import OnnxImportError, import_model
from tools.testkit.e2e import compile_and_run

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs: dict[str, tuple[int, ...]], outputs: dict[str, int], opset: int = 17,
           inits: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, list(s)) for n, s in inputs.items()],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs.items()],
                          [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    return onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]))


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> str:
    res, _ = compile_and_run(model, "default", inputs=feeds)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for o, ref in zip(model.graph.output, sess.run(None, feeds)):
        got = res.outputs[o.name]
        assert got.shape == ref.shape and got.dtype == ref.dtype, o.name
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    return str(import_model(model)[0])


@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij->ji", [(3, 4)]), ("ij->i", [(3, 4)]), ("i,i", [(5,), (5,)]),
    ("...ii->...i", [(2, 3, 3)]), ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ij->", [(3, 4)]), ("ab,cd->abcd", [(2, 3), (4, 5)]),
    ("bij,jk", [(2, 3, 4), (4, 5)]), ("b...i,b...i->b...", [(2, 3, 4), (2, 3, 4)]),
])
def test_einsum_matches_onnxruntime(equation, shapes):
    rng = np.random.default_rng(0)
    names = [f"x{i}" for i in range(len(shapes))]
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes)}
    ir = _check(_model([helper.make_node("Einsum", names, ["y"], equation=equation)], dict(zip(names, shapes)),
                       {"y": F}), feeds)
    if equation == "bhqd,bhkd->bhqk":  # attention scores: one batched matmul, no reductions
        assert ir.count("npu_graph.matmul") == 1 and "reduce_sum" not in ir


def test_einsum_diagnostics():
    m = _model([helper.make_node("Einsum", ["a", "b"], ["y"], name="es", equation="ij,kl->ijm")],
               {"a": (2, 3), "b": (3, 4)}, {"y": F})
    with pytest.raises(OnnxImportError, match="node 'es' .*equation 'ij,kl->ijm' has an invalid output term"):
        import_model(m)
    m = _model([helper.make_node("Einsum", ["a", "b"], ["y"], name="es", equation="ij,jk->ik")],
               {"a": (2, 3), "b": (4, 5)}, {"y": F})
    with pytest.raises(OnnxImportError, match="dim 'j' has size 3 in one operand and 4 in the other"):
        import_model(m)


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_prod_with_zeros_and_negatives(keepdims):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)
    x[0, 0, 0] = 0.0
    m = _model([helper.make_node("ReduceProd", ["x", "ax"], ["y"], keepdims=keepdims)], {"x": x.shape}, {"y": F},
               18, {"ax": np.array([1], dtype=np.int64)})
    _check(m, {"x": x})


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1},
    {"kernel_shape": [3], "strides": [1], "dilations": [2]},
])
def test_maxpool_indices(attrs):
    shape = (2, 3, 6, 6) if len(attrs["kernel_shape"]) == 2 else (2, 3, 9)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    ir = _check(_model([helper.make_node("MaxPool", ["x"], ["p", "i"], **attrs)], {"x": shape}, {"p": F, "i": I64}),
                {"x": x})
    assert "npu_graph.gather" in ir and "maxpool" not in ir


@pytest.mark.parametrize("output_shape", [None, (2, 3, 7, 7)])
def test_maxunpool_of_maxpool_indices(output_shape):
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 6)).astype(np.float32)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    inputs, inits = ["p", "i"], {}
    if output_shape:
        inputs.append("shape")
        inits["shape"] = np.array(output_shape, dtype=np.int64)
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "i"], **attrs), helper.make_node("MaxUnpool", inputs, ["y"], **attrs)]
    _check(_model(nodes, {"x": x.shape}, {"y": F}, inits=inits), {"x": x})


def test_maxunpool_per_plane(monkeypatch):
    from lowering.importer import indexing
    monkeypatch.setattr(indexing, "UNPOOL_DENSE_MAX", 0)
    test_maxunpool_of_maxpool_indices(None)


def test_maxunpool_of_overlapping_windows_writes_each_max_once():
    """Overlapping windows (kernel 3, stride 2) name one input position twice when it is
    the max of both: the unpooled value is that max, not twice it (found by the fuzzer)."""
    x = np.random.default_rng(4).standard_normal((1, 3, 5, 9)).astype(np.float32)
    attrs = {"kernel_shape": [3, 3], "strides": [3, 2], "pads": [1, 0, 0, 0]}
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "i"], **attrs),
             helper.make_node("MaxUnpool", ["p", "i", "shape"], ["y"], **attrs)]
    _check(_model(nodes, {"x": x.shape}, {"y": F}, inits={"shape": np.array(x.shape, np.int64)}), {"x": x})

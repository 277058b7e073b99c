"""onnxruntime as the tools' reference (`tools/ort_session.py`, used by `npu-run --check`
and `npu-quantize`'s judgements): its exact integer mode where it runs the model (a
uint8 QLinearConv whose large activations and weights saturate the default kernel on a
CPU without VNNI comes out as the ONNX integer result), the basic mode where it cannot
(a signed QLinearConv). The test suite's global patch (tests/conftest.py) is lifted here,
so the tools' own sessions are what is tested."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from lowering.graph.evaluate import evaluate_graph
from lowering.importer.onnx_import import import_model
from tests.test_quant_import import init, model, vi
from tools.ort_session import EXACT, ReferenceSession


@pytest.fixture(autouse=True)
def plain_onnxruntime(monkeypatch):
    cls = ort.InferenceSession
    if getattr(cls, "_npu_exact", False):
        monkeypatch.setattr(ort, "InferenceSession", cls.__mro__[1])


def qlinear_conv(signed: bool):
    dt, tp = (np.int8, TensorProto.INT8) if signed else (np.uint8, TensorProto.UINT8)
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv",
                              pads=[1, 1, 1, 1])]
    inits = [init("xs", np.array(0.03, np.float32)), init("xz", np.array(0, dt)),
             init("w", np.where(rng.random((8, 16, 3, 3)) < 0.5, -127, 127).astype(np.int8)),
             init("ws", np.array(0.001, np.float32)), init("wz", np.array(0, np.int8)),
             init("ys", np.array(0.5, np.float32)), init("yz", np.array(0, dt))]
    m = model(nodes, [vi("x", tp, (1, 16, 6, 6))], [vi("y", tp, (1, 8, 6, 6))], inits, opset=13)
    hi = np.iinfo(dt).max
    x = np.full((1, 16, 6, 6), hi, dt)
    return m, {"x": x}


def test_exact_mode_gives_the_onnx_integer_result() -> None:
    m, feed = qlinear_conv(signed=False)
    sess = ReferenceSession(m.SerializeToString())
    assert sess.sess.get_session_options().get_session_config_entry(EXACT[0]) == EXACT[1]
    module, weights = import_model(m)
    want = evaluate_graph(module, weights, feed)["y"]
    np.testing.assert_array_equal(sess.run(["y"], feed)[0], want)


def test_basic_mode_where_the_exact_one_cannot_run() -> None:
    m, feed = qlinear_conv(signed=True)
    sess = ReferenceSession(m.SerializeToString())
    (y,) = sess.run(["y"], feed)
    assert y.shape == (1, 8, 6, 6)
    assert sess.sess.get_session_options().graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_BASIC


def test_npu_quantize_judges_with_the_reference_session() -> None:
    from tools.quantize.mixed import session
    m, _ = qlinear_conv(signed=False)
    assert isinstance(session(m), ReferenceSession)

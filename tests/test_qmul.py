"""The integer multiply (`npu_graph.qmul`, npu-fuse-qdq's `FuseBinary`): a QDQ model's
DequantizeLinear -> Mul -> QuantizeLinear computed on the 8-bit tensors.

- `float` mode (the default arch's `requant`) computes what the QDQ graph computes, in
  float32: the outputs equal onnxruntime's run of the graph as written bit for bit, and
  are within one step of its optimised run (its QLinearMul: `tests/test_qadd.py`'s
  bit-for-bit test, op Mul);
- `fixed` mode is TFLite's int8 MUL, checked against a scalar transcription of TFLite's
  reference kernel (`tflite::reference_integer_ops::Mul`) in Python integers;
- a squeeze-and-excitation gate (x times a per-channel sigmoid) quantized by onnxruntime
  becomes a qmul and matches onnxruntime within one step, in both modes.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from npu_dialects.graph.quant import qadd_ref, qmul_ref
from tests.test_qadd import (
    _mul_by_quantized_multiplier_smaller_than_one_exp,
    _ort,
    _qdq_add,
    _quantize_multiplier,
    _srdhm,
)
from tools.testkit.e2e import compile_and_run
from tools.testkit.models import Graph
from tools.testkit.qdq import quantize
from tools.testkit.zoo import random_inputs


def test_the_mul_becomes_a_qmul():
    """(Its numerics in float mode: `tests/test_qadd.py`'s bit-for-bit test, op Mul.)"""
    applied = _applied(_qdq_add([1, 8, 1, 1], TensorProto.INT8, True, "Mul"), "default")
    assert "npu_graph.qmul" in applied and not {"npu_graph.mul", "npu_graph.quantize"} & applied, applied


def _applied(model: onnx.ModelProto, arch: str) -> set[str]:
    """The ops the compiled tasks apply (`npu_compute.apply`)."""
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import compile_module
    from npu_dialects.arch import parse_arch_spec
    module, weights = import_model(model, parse_arch_spec(arch))
    compile_module(module, parse_arch_spec(arch), weights)
    return {o.attributes["op"].data for o in module.walk() if o.name == "npu_compute.apply"}  # pyright: ignore


def _tflite_mul(a: int, b: int, sa: float, za: int, sb: float, zb: int, s: float, z: int, lo: int, hi: int) -> int:
    """tflite::reference_integer_ops::MulElementwise with its Prepare's parameters (the
    multiplier sa * sb / s in double; QuantizeMultiplier; MultiplyByQuantizedMultiplier)."""
    q, shift = _quantize_multiplier(sa * sb / s)
    x = (a - za) * (b - zb)
    if shift > 0:  # (MultiplyByQuantizedMultiplier: a left shift first, then the high multiply)
        raw = _srdhm(x * (1 << shift), q)
    else:
        raw = _mul_by_quantized_multiplier_smaller_than_one_exp(x, q, shift)
    return min(max(raw + z, lo), hi)


def test_fixed_mode_is_tflites_int8_mul():
    rng = np.random.default_rng(11)
    for i in range(40):
        sa, sb = (float(np.float32(rng.uniform(0.002, 0.2))) for _ in range(2))
        s = float(np.float32(rng.uniform(0.00005, 0.05) if i % 2 else rng.uniform(0.00001, 0.0005)))
        za, zb, z = (int(rng.integers(-20, 21)) for _ in range(3))
        a, b = rng.integers(-128, 128, 64), rng.integers(-128, 128, 64)
        got = qmul_ref(a, b, [sa, za, sb, zb, s, z], -128, 127, "fixed")
        want = [_tflite_mul(int(x), int(y), sa, za, sb, zb, s, z, -128, 127) for x, y in zip(a, b)]
        np.testing.assert_array_equal(got, np.array(want, np.float32), err_msg=f"{sa} {za} {sb} {zb} {s} {z}")
        floats = qmul_ref(a, b, [sa, za, sb, zb, s, z], -128, 127)
        assert np.abs(got - floats).max() <= 1  # (two roundings of the same real product)
    assert not np.array_equal(qmul_ref(a, b, [sa, za, sb, zb, s, z], -128, 127),  # (not the add's arithmetic)
                              qadd_ref(a, b, [sa, za, sb, zb, s, z], -128, 127))


def _se_gate() -> onnx.ModelProto:
    """conv -> relu -> x * sigmoid(conv1x1(mean over H, W)): a squeeze-and-excitation gate."""
    g = Graph(seed=5)
    g.node("Conv", ["x", g.weight("c1.w", (16, 16, 3, 3))], "c1", name="c1", kernel_shape=[3, 3], pads=[1] * 4)
    g.node("Relu", ["c1"], "r1", name="r1")
    g.node("GlobalAveragePool", ["r1"], "m", name="squeeze")
    g.node("Conv", ["m", g.weight("e.w", (16, 16, 1, 1))], "e", name="excite", kernel_shape=[1, 1])
    g.node("Sigmoid", ["e"], "gate", name="gate")
    g.node("Mul", ["r1", "gate"], "y", name="scale")
    return g.model("se", {"x": [1, 16, 12, 12]}, {"y": [1, 16, 12, 12]}, 13)


@pytest.mark.parametrize("arch", ["default", "default,requant=fixed"])
def test_squeeze_excitation_gate_is_a_qmul(arch):
    model = _se_gate()
    q = quantize(model, [random_inputs(model, seed=100 + s) for s in range(2)], True, pre_process=False)
    inputs = random_inputs(q, seed=0)
    result, _ = compile_and_run(q, arch, inputs=dict(inputs))
    applied = _applied(q, arch)
    assert "npu_graph.qmul" in applied and "npu_graph.mul" not in applied, applied
    want = _ort(q, inputs, optimise=False)
    step = float(onnx.numpy_helper.to_array(next(i for i in q.graph.initializer if i.name.endswith("y_scale"))))
    diff = np.abs(result.outputs["y"].astype(np.float64) - want.astype(np.float64)) / step
    assert diff.max() <= 1.001, diff.max()
    if arch == "default":  # (float mode: the graph's own arithmetic)
        assert diff.max() < 0.5, diff.max()

"""The integer residual add (`npu_graph.qadd`, npu-fuse-qdq's `FuseBinary`): a QDQ model's
DequantizeLinear -> Add -> QuantizeLinear computed on the 8-bit tensors.

- `float` mode (the default arch's `requant`) computes what the QDQ graph computes, in
  float32: the outputs equal onnxruntime's run of the graph as written (no graph
  optimisations: DequantizeLinear, Add, QuantizeLinear kernels) bit for bit, and are
  within one step of its optimised run (its QLinearAdd);
- `fixed` mode is TFLite's int8 ADD, checked against a scalar transcription of TFLite's
  reference kernel (`tflite::reference_integer_ops::Add`) in Python integers;
- a residual block after a conv fuses the qadd into the conv's epilogue whichever Add
  operand the conv feeds, and matches onnxruntime within one step.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from npu_dialects.graph.quant import qadd_ref
from tools.testkit.e2e import compile_and_run, run_session
from tools.testkit.models import Graph
from tools.testkit.qdq import quantize
from tools.testkit.zoo import random_inputs


def _qdq_add(shape_b: list[int], elem: int, relu: bool, op: str = "Add") -> onnx.ModelProto:
    """y = Q(relu?(DQ(a) op DQ(b))) on 8-bit inputs a [2, 8, 5, 5] and b `shape_b` (op Add
    or Mul: `tests/test_qmul.py`'s too; a product's step is a tenth of a sum's)."""
    zp = 0 if elem == TensorProto.INT8 else 128
    inits = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in
             (("sa", 0.047), ("sb", 0.0123456791), ("sy", 0.061 if op == "Add" else 0.0061))]
    inits += [helper.make_tensor(n, elem, [], [z]) for n, z in (("za", zp - 3), ("zb", zp + 5), ("zy", zp + 1))]
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["da"], name="dqa"),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["db"], name="dqb"),
             helper.make_node(op, ["db", "da"], ["s"], name=op.lower())]
    if relu:
        nodes.append(helper.make_node("Relu", ["s"], ["r"], name="relu"))
    nodes.append(helper.make_node("QuantizeLinear", ["r" if relu else "s", "sy", "zy"], ["y"], name="q"))
    graph = helper.make_graph(nodes, "q" + op.lower(), [helper.make_tensor_value_info("a", elem, [2, 8, 5, 5]),
                                                        helper.make_tensor_value_info("b", elem, shape_b)],
                              [helper.make_tensor_value_info("y", elem, [2, 8, 5, 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _ort(model: onnx.ModelProto, inputs: dict[str, np.ndarray], optimise: bool) -> np.ndarray:
    so = ort.SessionOptions()
    if not optimise:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return run_session(sess, ["y"], inputs)[0]


@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("elem", [TensorProto.INT8, TensorProto.UINT8], ids=["int8", "uint8"])
@pytest.mark.parametrize("shape_b, relu", [([2, 8, 5, 5], False), ([1, 8, 1, 1], True)], ids=["same", "broadcast"])
def test_qadd_qmul_equal_the_qdq_graph_bit_for_bit(op, elem, shape_b, relu):
    """qadd, and qmul (`tests/test_qmul.py`), in float mode."""
    model = _qdq_add(shape_b, elem, relu, op)
    rng = np.random.default_rng(1)
    dtype = np.int8 if elem == TensorProto.INT8 else np.uint8
    info = np.iinfo(dtype)
    inputs = {"a": rng.integers(info.min, info.max + 1, (2, 8, 5, 5)).astype(dtype),
              "b": rng.integers(info.min, info.max + 1, shape_b).astype(dtype)}
    result, _ = compile_and_run(model, "default", inputs=dict(inputs))
    got = result.outputs["y"]
    np.testing.assert_array_equal(got, _ort(model, inputs, optimise=False))
    steps = np.abs(got.astype(np.int64) - _ort(model, inputs, optimise=True).astype(np.int64))
    assert steps.max() <= 1, steps.max()


def test_the_qadd_is_located_at_the_add_and_the_quantize():
    """The add's node (npu-stats counts it as the Sum it is) and the quantize's, whose
    tensor the qadd computes (`--compare-all` compares it under that name)."""
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import compile_module
    from npu_dialects.arch import parse_arch_spec
    from npu_dialects.graph import QAddOp
    from npu_dialects.locs import node_names
    arch = parse_arch_spec("default")
    module, weights = import_model(_qdq_add([2, 8, 5, 5], TensorProto.INT8, False), arch)
    compile_module(module, arch, weights, stage="graph")
    assert [node_names(op) for op in module.walk() if isinstance(op, QAddOp)] == [["add", "q"]]


def test_the_add_becomes_a_qadd_in_the_kernel():
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import compile_module
    from npu_dialects.arch import parse_arch_spec
    arch = parse_arch_spec("default")
    module, weights = import_model(_qdq_add([2, 8, 5, 5], TensorProto.INT8, True), arch)
    compile_module(module, arch, weights)
    names = {o.attributes["op"].data for o in module.walk() if o.name == "npu_compute.apply"}  # pyright: ignore
    assert "npu_graph.qadd" in names, names
    assert not {"npu_graph.dequantize", "npu_graph.quantize"} & names, names


# --- fixed mode: TFLite's int8 ADD, transcribed in Python integers -------------------

def _srdhm(a: int, b: int) -> int:
    """gemmlowp's SaturatingRoundingDoublingHighMul."""
    if a == b == -2 ** 31:
        return 2 ** 31 - 1
    ab = a * b
    nudge = (1 << 30) if ab >= 0 else 1 - (1 << 30)
    return _div_toward_zero(ab + nudge, 1 << 31)


def _div_toward_zero(a: int, b: int) -> int:
    q = abs(a) // b
    return q if a >= 0 else -q


def _rdbypot(x: int, exponent: int) -> int:
    """gemmlowp's RoundingDivideByPOT."""
    mask = (1 << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> exponent) + (1 if remainder > threshold else 0)


def _quantize_multiplier(m: float) -> tuple[int, int]:
    import math
    frac, shift = math.frexp(m)
    q = math.floor(frac * (1 << 31) + 0.5)  # (TfLiteRound of a positive value)
    if q == 1 << 31:
        q, shift = q // 2, shift + 1
    return q, shift


def _mul_by_quantized_multiplier_smaller_than_one_exp(x: int, q: int, shift: int) -> int:
    return _rdbypot(_srdhm(x, q), -shift)


def _tflite_add(a: int, b: int, sa: float, za: int, sb: float, zb: int, s: float, z: int, lo: int, hi: int) -> int:
    """tflite::reference_integer_ops::Add with PrepareGeneralSubOp's parameters."""
    left_shift = 20
    twice = 2 * max(sa, sb)
    qa, ha = _quantize_multiplier(sa / twice)
    qb, hb = _quantize_multiplier(sb / twice)
    qo, ho = _quantize_multiplier(twice / ((1 << left_shift) * s))
    xa = _mul_by_quantized_multiplier_smaller_than_one_exp((a - za) * (1 << left_shift), qa, ha)
    xb = _mul_by_quantized_multiplier_smaller_than_one_exp((b - zb) * (1 << left_shift), qb, hb)
    raw = _mul_by_quantized_multiplier_smaller_than_one_exp(xa + xb, qo, ho) + z
    return min(max(raw, lo), hi)


def test_fixed_mode_is_tflites_int8_add():
    rng = np.random.default_rng(7)
    for _ in range(40):
        sa, sb, s = (float(np.float32(rng.uniform(0.002, 0.2))) for _ in range(3))
        za, zb, z = (int(rng.integers(-20, 21)) for _ in range(3))
        a, b = rng.integers(-128, 128, 64), rng.integers(-128, 128, 64)
        got = qadd_ref(a, b, [sa, za, sb, zb, s, z], -128, 127, "fixed")
        want = [_tflite_add(int(x), int(y), sa, za, sb, zb, s, z, -128, 127) for x, y in zip(a, b)]
        np.testing.assert_array_equal(got, np.array(want, np.float32), err_msg=f"{sa} {za} {sb} {zb} {s} {z}")
        floats = qadd_ref(a, b, [sa, za, sb, zb, s, z], -128, 127)
        assert np.abs(got - floats).max() <= 1  # (two roundings of the same real sum)


def _residual_block(skip_first: bool) -> onnx.ModelProto:
    g = Graph(seed=3)
    g.node("Conv", ["x", g.weight("c1.w", (16, 16, 3, 3))], "c1", name="c1", kernel_shape=[3, 3], pads=[1] * 4)
    g.node("Relu", ["c1"], "r1", name="r1")
    g.node("Conv", ["r1", g.weight("c2.w", (16, 16, 1, 1))], "c2", name="c2", kernel_shape=[1, 1])
    g.node("Add", ["x", "c2"] if skip_first else ["c2", "x"], "s", name="add")
    g.node("Relu", ["s"], "y", name="y")
    return g.model("residual", {"x": [1, 16, 12, 12]}, {"y": [1, 16, 12, 12]}, 13)


@pytest.mark.parametrize("skip_first", [True, False], ids=["skip-first", "conv-first"])
@pytest.mark.parametrize("arch", ["default", "default,requant=fixed"])
def test_residual_block_fuses_the_qadd_into_the_conv(skip_first, arch):
    model = _residual_block(skip_first)
    q = quantize(model, [random_inputs(model, seed=100 + s) for s in range(2)], True, pre_process=False)
    inputs = random_inputs(q, seed=0)
    result, _ = compile_and_run(q, arch, inputs=dict(inputs), fuse_disable=("layer-group",))
    conv2 = next(k for k in result.report["kernels"] if "c2" in k["onnx_nodes"])
    assert "add" in conv2["onnx_nodes"], result.report["kernels"]  # (the qadd in c2's epilogue)
    want = _ort(q, inputs, optimise=False)
    step = float(onnx.numpy_helper.to_array(next(i for i in q.graph.initializer if i.name.endswith("y_scale"))))
    diff = np.abs(result.outputs["y"].astype(np.float64) - want.astype(np.float64)) / step
    assert diff.max() <= 1.001, diff.max()  # (outputs dequantized: f32 multiples of the step)
    assert (diff < 0.5).mean() >= 0.99

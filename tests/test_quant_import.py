"""Quantized and float16 ONNX models at import (issue 44, docs/low-precision.md).

Each small model is built with onnx.helper, imported, evaluated with the graph ops'
reference semantics (`evaluate_graph`) and compared with onnxruntime's CPU run:

- integer outputs (QuantizeLinear, QLinearConv, QLinearMatMul, MatMulInteger,
  ConvInteger) are exactly equal: the integer conv/matmul is exact (where onnxruntime's
  u8s8 kernel can saturate, it runs with exact_u8s8, see `run_ort`), quantize divides in
  float32 and rounds half to even as onnxruntime's MlasQuantizeLinear, requantize
  multiplies float32(acc) by the float32 multiplier as MlasRequantizeOutput;
- float outputs of QDQ graphs (DequantizeLinear -> MatMul/Conv in float) agree to
  float32 rounding (the float products are summed in another order);
- DynamicQuantizeLinear -> MatMulInteger with a computed zero point: within one unit
  of the int32 result (the zero-point correction is in float32);
- the all-f16 model: within float16 rounding (onnxruntime computes some f16 ops in f32).
Refusals are one diagnostic line naming the node and what is unsupported.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from lowering.graph.evaluate import evaluate_graph, main_func
from lowering.importer.onnx_import import OnnxImportError, import_model
from npu_dialects.dtypes import element_type, type_name


def model(nodes, inputs, outputs, inits=(), opset: int = 19) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "q", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset < 21 else 10
    onnx.checker.check_model(m)
    return m


def vi(name: str, dtype: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, list(shape))


def init(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def run_ort(m: onnx.ModelProto, feeds: dict[str, np.ndarray], *, exact_u8s8: bool = False) -> dict[str, np.ndarray]:
    """onnxruntime's CPU run. On x86-64 without VNNI (AVX2, or AVX-512 without VNNI) MLAS's
    u8s8 GEMM adds pairs of u8 x s8 products in saturating int16 (vpmaddubsw: 255 * 127 * 2 >
    32767), so a QLinearConv/QGemm/MatMulInteger whose activations and weights are both large
    is off by many steps. `exact_u8s8` sets `session.x64quantprecision`: onnxruntime converts
    the int8 weights to uint8 (+128) for its exact u8u8 kernel (a no-op on hosts with VNNI).
    Not the default: in onnxruntime 1.32 that conversion breaks some graphs (a per-axis
    DequantizeLinear without zero point; a signed QLinearConv gets no NHWC kernel)."""
    so = ort.SessionOptions()
    if exact_u8s8:
        so.add_session_config_entry("session.x64quantprecision", "1")
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return {n: np.asarray(v) for n, v in zip(names, sess.run(names, feeds))}


def compare(m: onnx.ModelProto, feeds: dict[str, np.ndarray], *, steps: int = 0, rtol: float = 1e-5,
            arch: str = "default", exact_u8s8: bool = False):
    """Import `m` for `arch`, evaluate it and compare each output with onnxruntime (`run_ort`):
    integers within `steps` units, floats to `rtol`. Returns the module."""
    from npu_dialects.arch import parse_arch_spec
    module, weights = import_model(m, parse_arch_spec(arch))
    got = evaluate_graph(module, weights, feeds)
    want = run_ort(m, feeds, exact_u8s8=exact_u8s8)
    for name, w in want.items():
        g = got[name]
        assert g.shape == w.shape, name
        if np.issubdtype(w.dtype, np.integer):
            diff = np.abs(g.astype(np.int64) - w.astype(np.int64))
            assert diff.max(initial=0) <= steps, f"{name}: {diff.max()} steps"
        else:
            np.testing.assert_allclose(g.astype(np.float32), w.astype(np.float32), rtol=rtol, atol=rtol, err_msg=name)
    return module


def errors(m: onnx.ModelProto) -> list[str]:
    with pytest.raises(OnnxImportError) as info:
        import_model(m)
    return info.value.lines


def io_types(module) -> tuple[list[str | None], list[str | None]]:
    """The element types of @main's arguments and results ('f32', 'i8'...)."""
    ft = main_func(module).function_type
    return ([type_name(element_type(t)) for t in ft.inputs.data], [type_name(element_type(t)) for t in ft.outputs.data])


def op_names(module) -> list[str]:
    return [op.name for op in main_func(module).body.block.ops]


RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def qdq_matmul(qtype: int, per_axis: bool = False) -> onnx.ModelProto:
    """Q -> DQ on the activation, DQ of an int8 weight (per tensor or per column), MatMul,
    then Q of the result: what onnxruntime's quantize_static writes."""
    zp_dtype = np.uint8 if qtype == TensorProto.UINT8 else np.int8
    w = RNG.integers(-127, 128, (16, 8)).astype(np.int8)
    ws = np.full(8, 0.02, np.float32) * (1 + np.arange(8, dtype=np.float32) / 8) if per_axis \
        else np.array(0.02, np.float32)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dqx"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="dqw", axis=1),
        helper.make_node("MatMul", ["xd", "wd"], ["y"], name="mm"),
        helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["yq"], name="qy"),
    ]
    inits = [init("xs", np.array(0.05, np.float32)), init("xz", np.array(3 if zp_dtype == np.int8 else 128, zp_dtype)),
             init("w", w), init("ws", ws), init("wz", np.zeros(ws.shape, np.int8)),
             init("ys", np.array(0.1, np.float32)), init("yz", np.array(-2 if zp_dtype == np.int8 else 120, zp_dtype))]
    return model(nodes, [vi("x", TensorProto.FLOAT, (4, 16))],
                 [vi("yq", qtype, (4, 8)), vi("y", TensorProto.FLOAT, (4, 8))], inits)


@pytest.mark.parametrize("qtype", [TensorProto.INT8, TensorProto.UINT8])
@pytest.mark.parametrize("per_axis", [False, True])
def test_qdq_matmul(qtype: int, per_axis: bool) -> None:
    """Within one step: onnxruntime runs the QDQ MatMul as QLinearMatMul (an integer sum
    requantized), the evaluator as the float graph; a product at a rounding tie lands a
    step apart (1 in 20 seeded inputs; the inputs were the module RNG's, so the order
    pytest-xdist ran the tests in decided whether this test failed)."""
    m = qdq_matmul(qtype, per_axis)
    module = compare(m, {"x": np.random.default_rng(5).standard_normal((4, 16)).astype(np.float32) * 2}, steps=1)
    names = op_names(module)
    assert names.count("npu_graph.quantize") == 2 and names.count("npu_graph.dequantize") == 2
    assert io_types(module)[1] == ["i8" if qtype == TensorProto.INT8 else "ui8", "f32"]


def test_qdq_conv_per_channel_with_int32_bias() -> None:
    w = RNG.integers(-127, 128, (6, 3, 3, 3)).astype(np.int8)
    ws = (0.01 + 0.005 * np.arange(6)).astype(np.float32)
    b = RNG.integers(-500, 500, 6).astype(np.int32)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dqx"),
        helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"], name="dqw", axis=0),
        helper.make_node("DequantizeLinear", ["b", "bs"], ["bd"], name="dqb", axis=0),
        helper.make_node("Conv", ["xd", "wd", "bd"], ["y"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["y", "ys", "yz"], ["yq"], name="qy"),
    ]
    inits = [init("xs", np.array(0.04, np.float32)), init("xz", np.array(128, np.uint8)), init("w", w),
             init("ws", ws), init("b", b), init("bs", (0.04 * ws).astype(np.float32)),
             init("ys", np.array(0.2, np.float32)), init("yz", np.array(100, np.uint8))]
    m = model(nodes, [vi("x", TensorProto.FLOAT, (1, 3, 8, 8))],
              [vi("yq", TensorProto.UINT8, (1, 6, 8, 8)), vi("y", TensorProto.FLOAT, (1, 6, 8, 8))], inits)
    module = compare(m, {"x": rand(1, 3, 8, 8) * 3}, rtol=1e-4)
    consts = [op for op in main_func(module).body.block.ops if op.name == "npu_graph.constant"]
    assert any(type_name(element_type(op.results[0])) == "i8" for op in consts)  # (the weight stays int8)


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("requant", ["float", "fixed"])
def test_qlinear_conv(signed: bool, requant: str) -> None:
    """`float` requantization is onnxruntime's bit for bit; `fixed` (TFLite's) within one step."""
    dt, tp = (np.int8, TensorProto.INT8) if signed else (np.uint8, TensorProto.UINT8)
    lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    w = RNG.integers(-127, 128, (4, 2, 3, 3)).astype(np.int8)
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                              name="qconv", pads=[1, 0, 1, 2], strides=[1, 2], group=1)]
    inits = [init("xs", np.array(0.03, np.float32)), init("xz", np.array(5 if signed else 130, dt)), init("w", w),
             init("ws", np.array([0.01, 0.02, 0.015, 0.03], np.float32)), init("wz", np.zeros(4, np.int8)),
             init("ys", np.array(0.07, np.float32)), init("yz", np.array(-7 if signed else 90, dt)),
             init("b", RNG.integers(-300, 300, 4).astype(np.int32))]
    m = model(nodes, [vi("x", tp, (2, 2, 7, 9))], [vi("y", tp, (2, 4, 7, 5))], inits, opset=13)
    x = RNG.integers(lo, hi + 1, (2, 2, 7, 9)).astype(dt)
    # uniform uint8 inputs x int8 weights saturate onnxruntime's u8s8 kernel without VNNI; the
    # exact mode is only for uint8 (onnxruntime 1.32 has no NHWC QLinearConv for s8 x u8-converted)
    module = compare(m, {"x": x}, steps=0 if requant == "float" else 1, arch=f"default,requant={requant}",
                     exact_u8s8=not signed)
    assert io_types(module)[0] == ["i8" if signed else "ui8"]
    assert {"npu_graph.conv2d", "npu_graph.requantize"} <= set(op_names(module))


def test_qlinear_matmul_per_column() -> None:
    b = RNG.integers(0, 256, (12, 5)).astype(np.uint8)
    nodes = [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="qmm")]
    inits = [init("as", np.array(0.02, np.float32)), init("az", np.array(120, np.uint8)), init("b", b),
             init("bs", np.linspace(0.01, 0.03, 5).astype(np.float32)), init("bz", np.full(5, 128, np.uint8)),
             init("ys", np.array(0.05, np.float32)), init("yz", np.array(110, np.uint8))]
    m = model(nodes, [vi("a", TensorProto.UINT8, (3, 6, 12))], [vi("y", TensorProto.UINT8, (3, 6, 5))], inits,
              opset=21)
    compare(m, {"a": RNG.integers(0, 256, (3, 6, 12)).astype(np.uint8)})


def test_matmul_integer_and_conv_integer() -> None:
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"], name="mmi"),
             helper.make_node("ConvInteger", ["x", "w", "xz"], ["c"], name="convi", pads=[1, 1, 1, 1])]
    inits = [init("b", RNG.integers(-128, 128, (10, 4)).astype(np.int8)), init("az", np.array(7, np.uint8)),
             init("bz", np.array(-3, np.int8)), init("w", RNG.integers(0, 256, (3, 2, 3, 3)).astype(np.uint8)),
             init("xz", np.array(100, np.uint8))]
    m = model(nodes, [vi("a", TensorProto.UINT8, (5, 10)), vi("x", TensorProto.UINT8, (1, 2, 5, 5))],
              [vi("y", TensorProto.INT32, (5, 4)), vi("c", TensorProto.INT32, (1, 3, 5, 5))], inits, opset=13)
    module = compare(m, {"a": RNG.integers(0, 256, (5, 10)).astype(np.uint8),
                         "x": RNG.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)})
    assert io_types(module)[1] == ["i32", "i32"]


def test_dynamic_quantize_linear_matmul_integer() -> None:
    """onnxruntime's quantize_dynamic form: DynamicQuantizeLinear -> MatMulInteger (a
    computed zero point) -> Cast -> Mul by the scales."""
    w = RNG.integers(-127, 128, (16, 6)).astype(np.int8)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
             helper.make_node("MatMulInteger", ["xq", "w", "xz"], ["acc"], name="mmi"),
             helper.make_node("Cast", ["acc"], ["accf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"], name="scale"),
             helper.make_node("Mul", ["accf", "s"], ["y"], name="y")]
    inits = [init("w", w), init("ws", np.array(0.01, np.float32))]
    m = model(nodes, [vi("x", TensorProto.FLOAT, (4, 16))],
              [vi("y", TensorProto.FLOAT, (4, 6)), vi("xq", TensorProto.UINT8, (4, 16)),
               vi("xs", TensorProto.FLOAT, ()), vi("xz", TensorProto.UINT8, ())], inits, opset=13)
    compare(m, {"x": rand(4, 16) * 3}, rtol=1e-5, exact_u8s8=True)


def test_all_f16_model() -> None:
    w = (rand(8, 6) * 0.3).astype(np.float16)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "b"], ["hb"], name="add"),
             helper.make_node("Relu", ["hb"], ["r"], name="relu"),
             helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1)]
    inits = [init("w", w), init("b", rand(6).astype(np.float16))]
    m = model(nodes, [vi("x", TensorProto.FLOAT16, (4, 8))], [vi("y", TensorProto.FLOAT16, (4, 6))], inits)
    module = compare(m, {"x": rand(4, 8).astype(np.float16)}, rtol=2e-3)
    assert io_types(module) == (["f16"], ["f16"])
    assert "npu_graph.cast" not in op_names(module)  # (computed in f16 throughout)


def test_cast_to_f16_and_bf16_is_a_real_cast() -> None:
    nodes = [helper.make_node("Cast", ["x"], ["h"], name="to_f16", to=TensorProto.FLOAT16),
             helper.make_node("Cast", ["h"], ["y"], name="to_f32", to=TensorProto.FLOAT),
             helper.make_node("Cast", ["x"], ["b"], name="to_bf16", to=TensorProto.BFLOAT16),
             helper.make_node("Cast", ["b"], ["z"], name="bf_to_f32", to=TensorProto.FLOAT)]
    m = model(nodes, [vi("x", TensorProto.FLOAT, (3, 5))],
              [vi("y", TensorProto.FLOAT, (3, 5)), vi("z", TensorProto.FLOAT, (3, 5))], opset=13)
    x = rand(3, 5) * 1000
    module, weights = import_model(m)
    got = evaluate_graph(module, weights, {"x": x})
    assert np.array_equal(got["y"], x.astype(np.float16).astype(np.float32))
    import ml_dtypes
    assert np.array_equal(got["z"], x.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert op_names(module).count("npu_graph.cast") == 4


# ----------------------------------------------------------------------------------------
# Refusals
# ----------------------------------------------------------------------------------------


def _q(zp: np.ndarray | None = None, scale: float = 0.1, **attrs) -> onnx.ModelProto:
    ins = ["x", "s"] + (["z"] if zp is not None else [])
    inits = [init("s", np.array(scale, np.float32))] + ([init("z", zp)] if zp is not None else [])
    node = helper.make_node("QuantizeLinear", ins, ["y"], name="q", **attrs)
    out_type = helper.np_dtype_to_tensor_dtype(zp.dtype) if zp is not None else TensorProto.UINT8
    return model([node], [vi("x", TensorProto.FLOAT, (4,))], [vi("y", out_type, (4,))], inits, opset=21)


@pytest.mark.parametrize("zp,what", [
    (np.array(0, np.int16), "int16"), (np.array(0, np.uint16), "uint16")])
def test_refuses_16_bit(zp: np.ndarray, what: str) -> None:
    assert errors(_q(zp)) == [f"error: node 'q' (QuantizeLinear, opset 21): y_zero_point has element type {what}; "
                              "only int8 and uint8 quantization is supported (4- and 16-bit integers and float8 "
                              "are not)"]


def test_refuses_int4_and_float8() -> None:
    for tp, name in ((TensorProto.INT4, "int4"), (TensorProto.FLOAT8E4M3FN, "float8e4m3fn")):
        z = helper.make_tensor("z", tp, [], [0])
        node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")
        m = model([node], [vi("x", TensorProto.FLOAT, (4,))], [vi("y", tp, (4,))],
                  [init("s", np.array(0.1, np.float32)), z], opset=21)
        lines = errors(m)
        assert lines[0].startswith(f"error: node 'q' (QuantizeLinear, opset 21): y_zero_point has element type {name}")


def test_refuses_blocked_quantization() -> None:
    node = helper.make_node("DequantizeLinear", ["w", "s"], ["y"], name="dq", axis=1, block_size=2)
    m = model([node], [], [vi("y", TensorProto.FLOAT, (2, 4))],
              [init("w", np.ones((2, 4), np.int8)), init("s", np.ones((2, 2), np.float32))], opset=21)
    assert errors(m)[0] == ("error: node 'dq' (DequantizeLinear, opset 21): blocked quantization (block_size=2) "
                            "is not supported; per-tensor and per-axis are")


def test_refuses_per_axis_parameters_of_another_length() -> None:
    """A Conv weight's per-output-channel scales given axis 1 (the input channels): the
    message says both lengths (it was the verifier's 'scale of shape [1, 8, 1, 1] does
    not broadcast to the input's [16, 8, 3, 3]')."""
    node = helper.make_node("DequantizeLinear", ["w", "s", "z"], ["y"], name="dq", axis=1)
    m = model([node], [], [vi("y", TensorProto.FLOAT, (16, 8, 3, 3))],
              [init("w", np.ones((16, 8, 3, 3), np.int8)), init("s", np.full(16, 0.1, np.float32)),
               init("z", np.zeros(16, np.int8))], opset=13)
    assert errors(m)[0] == ("error: node 'dq' (DequantizeLinear, opset 13): x_scale holds 16 values, one per index "
                            "of axis 1, but that axis of the [16, 8, 3, 3] input has 8")


@pytest.mark.parametrize("scale,shown", [(0.0, "0.0"), (-1.0, "-1.0"), (float("nan"), "nan"), (float("inf"), "inf")])
def test_refuses_bad_scales(scale: float, shown: str) -> None:
    assert errors(_q(np.array(0, np.uint8), scale)) == [
        f"error: node 'q' (QuantizeLinear, opset 21): y_scale (input 1, 's') holds {shown}; scales must be "
        "positive and finite"]


def test_refuses_int32_zero_point_not_zero_and_computed_multiplier() -> None:
    node = helper.make_node("DequantizeLinear", ["b", "s", "z"], ["y"], name="dq")
    m = model([node], [], [vi("y", TensorProto.FLOAT, (3,))],
              [init("b", np.ones(3, np.int32)), init("s", np.array(0.5, np.float32)), init("z", np.array(4, np.int32))])
    assert errors(m) == ["error: node 'dq' (DequantizeLinear, opset 19): x_zero_point (input 2, 'z') holds 4, "
                         "outside i32 [0, 0] (an int32 zero point must be 0)"]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], name="qmm")
    inits = [init("az", np.array(0, np.int8)), init("b", np.ones((4, 2), np.int8)), init("bs", np.array(1, np.float32)),
             init("bz", np.array(0, np.int8)), init("ys", np.array(1, np.float32)), init("yz", np.array(0, np.int8))]
    m = model([node], [vi("a", TensorProto.INT8, (3, 4)), vi("as", TensorProto.FLOAT, ())],
              [vi("y", TensorProto.INT8, (3, 2))], inits, opset=13)
    assert errors(m) == ["error: node 'qmm' (QLinearMatMul, opset 13): x_scale (input 1, 'as') is computed at run "
                         "time; only constant values are supported"]


def test_refuses_per_channel_zero_points_that_differ() -> None:
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"], name="mmi")
    m = model([node], [vi("a", TensorProto.UINT8, (3, 4))], [vi("y", TensorProto.INT32, (3, 2))],
              [init("b", np.ones((4, 2), np.uint8)), init("az", np.array(1, np.uint8)),
               init("bz", np.array([1, 2], np.uint8))], opset=13)
    assert errors(m) == ["error: node 'mmi' (MatMulInteger, opset 13): b_zero_point (input 3) differs per channel "
                         "(1, 2...); only one zero point per operand is supported"]


def test_cli_refusal_exits_1_without_traceback(tmp_path, capsys) -> None:
    from tools.npu_import import main
    path = tmp_path / "q16.onnx"
    onnx.save(_q(np.array(0, np.int16)), str(path))
    code = main([str(path), "-o", str(tmp_path / "out.mlir")])
    out, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    assert "node 'q' (QuantizeLinear, opset 21): y_zero_point has element type int16" in err


def to_f16(m: onnx.ModelProto) -> onnx.ModelProto:
    """`m` as an all-float16 model (what onnxconverter-common's convert_float_to_float16
    writes for these graphs): float initializers, Constant values, graph inputs/outputs
    and Cast targets become float16."""
    m = onnx.ModelProto.FromString(m.SerializeToString())
    g = m.graph
    for i, t in enumerate(g.initializer):
        if t.data_type == TensorProto.FLOAT:
            g.initializer[i].CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for v in [*g.input, *g.output]:
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    for n in g.node:
        for a in n.attribute:
            if a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float16), a.t.name))
    return m


@pytest.mark.parametrize("name", ["lenet", "bert_encoder", "llama_block", "gru_speech"])
def test_zoo_models_in_f16(name: str) -> None:
    """Whole models converted to float16 import with f16 tensors throughout (no cast
    back to f32) and match onnxruntime's float16 run within f16 rounding: |error| at
    most 2^-8 of the output's largest magnitude (a few f16 spacings: onnxruntime
    accumulates some f16 ops in f32 as the cube does, rounds others per step)."""
    from pathlib import Path
    m = to_f16(onnx.load(str(Path(__file__).parent / "models" / f"{name}.onnx")))
    module, weights = import_model(m)
    rng = np.random.default_rng(0)
    inits = {i.name for i in m.graph.initializer}
    feeds = {}
    for v in m.graph.input:
        if v.name in inits:
            continue
        shape, et = [d.dim_value for d in v.type.tensor_type.shape.dim], v.type.tensor_type.elem_type
        feeds[v.name] = rng.standard_normal(shape).astype(np.float16) if et == TensorProto.FLOAT16 else \
            rng.integers(0, 10, shape).astype(helper.tensor_dtype_to_np_dtype(et))
    got, want = evaluate_graph(module, weights, feeds), run_ort(m, feeds)
    for k, w in want.items():
        assert got[k].dtype == np.float16
        err = np.abs(got[k].astype(np.float32) - w.astype(np.float32)).max()
        assert err <= np.abs(w.astype(np.float32)).max() / 256, (k, err)
    assert "f16" in io_types(module)[1]


def _tflite_requantize(acc: int, m: float, zp: int, lo: int, hi: int) -> int:
    """TFLite's QuantizeMultiplier + MultiplyByQuantizedMultiplier in Python integers
    (gemmlowp's SaturatingRoundingDoublingHighMul and RoundingDivideByPOT)."""
    import math
    frac, shift = math.frexp(m)
    q = round(frac * (1 << 31)) if frac * (1 << 31) % 1 != 0.5 else math.floor(frac * (1 << 31) + 0.5)
    if q == 1 << 31:
        q, shift = q // 2, shift + 1
    left, right = max(shift, 0), max(-shift, 0)
    x = max(min(acc * (1 << left), 2 ** 31 - 1), -2 ** 31)
    ab = x * q
    t = ab + ((1 << 30) if ab >= 0 else 1 - (1 << 30))
    high = abs(t) // (1 << 31) * (1 if t >= 0 else -1)
    mask = (1 << right) - 1
    rem, threshold = high & mask, (mask >> 1) + (1 if high < 0 else 0)
    y = (high >> right) + (1 if rem > threshold else 0) + zp
    return max(lo, min(hi, y))


def test_requantize_fixed_matches_tflite_and_float_mode_onnxruntime() -> None:
    """`fixed` mode is TFLite's integer arithmetic bit for bit; `float` and `fixed` differ
    by at most one step (the float product rounds half to even, TFLite's shift rounds
    half away from zero and its 31-bit multiplier is rounded)."""
    from npu_dialects.graph import requantize_ref
    rng = np.random.default_rng(3)
    acc = rng.integers(-2 ** 20, 2 ** 20, 2000).astype(np.int32)
    mult = np.exp(rng.uniform(np.log(1e-5), np.log(0.9), 2000)).astype(np.float32)
    zp = np.float32(-5)
    fixed = requantize_ref(acc, mult, np.array(zp), -128, 127, "fixed")
    want = [_tflite_requantize(int(a), float(m), -5, -128, 127) for a, m in zip(acc, mult)]
    assert np.array_equal(fixed, np.array(want, np.float32))
    flt = requantize_ref(acc, mult, np.array(zp), -128, 127, "float")
    assert np.abs(flt - fixed).max() <= 1
    assert np.array_equal(flt, np.clip(np.rint(acc.astype(np.float32) * mult) + zp, -128, 127))


def _zoo_feeds(m: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    inits = {i.name for i in m.graph.initializer}
    return {v.name: rng.standard_normal([d.dim_value for d in v.type.tensor_type.shape.dim]).astype(np.float32)
            for v in m.graph.input if v.name not in inits}


@pytest.mark.parametrize("how", ["qdq_uint8", "qdq_int8", "dynamic"])
def test_onnxruntime_quantized_lenet(how: str, tmp_path) -> None:
    """LeNet through onnxruntime's own quantization tools: quantize_static (QDQ, per-channel
    int8 weights, uint8 or int8 activations) imports and evaluates to onnxruntime's
    result exactly; quantize_dynamic (DynamicQuantizeLinear -> ConvInteger/MatMulInteger
    with computed zero points) to float32 rounding."""
    from pathlib import Path

    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    src = str(Path(__file__).parent / "models" / "lenet.onnx")
    m, out = onnx.load(src), str(tmp_path / "q.onnx")

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter([_zoo_feeds(m, s) for s in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    if how == "dynamic":
        quantize_dynamic(src, out, weight_type=QuantType.QInt8)
    else:
        act = QuantType.QUInt8 if how == "qdq_uint8" else QuantType.QInt8
        quantize_static(src, out, Reader(), quant_format=QuantFormat.QDQ, activation_type=act,
                        weight_type=QuantType.QInt8, per_channel=True)
    # exact_u8s8: LeNet's activations and weights are large enough that onnxruntime's u8s8
    # int16 pair sums saturate on hosts without VNNI (the first QLinearConv is 33 steps off)
    compare(onnx.load(out), _zoo_feeds(m, 99), rtol=0 if how != "dynamic" else 1e-5, exact_u8s8=True)


def test_f16_node_with_integer_output_computes_in_f32() -> None:
    """An ArgMax of an f16 tensor (an int64 result: indices past 2048 are not f16 values)
    computes on the input widened to f32 exactly; the Relu beside it stays f16."""
    nodes = [helper.make_node("ArgMax", ["x"], ["i"], name="am", axis=1, keepdims=0),
             helper.make_node("Relu", ["x"], ["r"], name="relu")]
    m = model(nodes, [vi("x", TensorProto.FLOAT16, (2, 5000))],
              [vi("i", TensorProto.INT64, (2,)), vi("r", TensorProto.FLOAT16, (2, 5000))], opset=13)
    x = rand(2, 5000).astype(np.float16)
    x[0, 4321] = x[1, 3001] = 100
    module = compare(m, {"x": x})
    assert op_names(module).count("npu_graph.cast") == 1 and io_types(module)[1] == ["f32", "f16"]


def test_f16_where_of_a_comparison() -> None:
    """Greater of f16 values computes in f32 (a boolean result); the Where choosing
    between f16 values takes the condition cast to f16 and stays f16."""
    nodes = [helper.make_node("Greater", ["x", "z"], ["c"], name="gt"),
             helper.make_node("Where", ["c", "x", "z"], ["y"], name="wh")]
    m = model(nodes, [vi("x", TensorProto.FLOAT16, (3, 4))], [vi("y", TensorProto.FLOAT16, (3, 4))],
              [init("z", np.zeros(1, np.float16))], opset=13)
    module = compare(m, {"x": rand(3, 4).astype(np.float16)})
    assert io_types(module) == (["f16"], ["f16"])


def test_data_movement_on_uint8_stays_uint8() -> None:
    """Split, Concat, Slice, Gather, Transpose and Reshape of uint8 values are ops on the
    integers (exact), not conversions to f32 and back."""
    nodes = [helper.make_node("Split", ["x", "sp"], ["a", "b"], name="split", axis=1),
             helper.make_node("Concat", ["b", "a", "k"], ["c"], name="concat", axis=1),
             helper.make_node("Slice", ["c", "st", "en"], ["s"], name="slice"),
             helper.make_node("Gather", ["s", "ix"], ["g"], name="gather", axis=1),
             helper.make_node("Transpose", ["g"], ["t"], name="tr", perm=[1, 0, 2, 3]),
             helper.make_node("Reshape", ["t", "shape"], ["y"], name="rs")]
    inits = [init("sp", np.array([2, 4], np.int64)), init("k", np.full((3, 1, 5), 7, np.uint8)),
             init("st", np.array([0, 1], np.int64)), init("en", np.array([3, 7], np.int64)),
             init("ix", np.array([[0, 5], [2, 2]], np.int64)), init("shape", np.array([-1], np.int64))]
    m = model(nodes, [vi("x", TensorProto.UINT8, (3, 6, 5))], [vi("y", TensorProto.UINT8, (60,))], inits, opset=13)
    module = compare(m, {"x": RNG.integers(0, 256, (3, 6, 5)).astype(np.uint8)})
    names = op_names(module)
    assert "npu_graph.quantize" not in names and "npu_graph.dequantize" not in names, names
    assert io_types(module) == (["ui8"], ["ui8"])


def test_int32_input_is_typed_and_indexes_a_table() -> None:
    """An int32 input keeps i32 in the signature; a Gather takes it as i32 indices
    directly, other ops (the Add) on it exactly converted to f32 (dequantize by 1, 0),
    which npu.input_ranges sees through: the input gets its table's range, checked
    through the Add against the second (51-row) table."""
    from lowering.graph.input_ranges import input_ranges
    emb = RNG.standard_normal((50, 8)).astype(np.float32)
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"], name="g"),
             helper.make_node("Add", ["ids", "one"], ["ids1"], name="add"),
             helper.make_node("Gather", ["emb1", "ids1"], ["f"], name="g1")]
    m = model(nodes, [vi("ids", TensorProto.INT32, (2, 3))],
              [vi("e", TensorProto.FLOAT, (2, 3, 8)), vi("f", TensorProto.FLOAT, (2, 3, 8))],
              [init("emb", emb), init("emb1", np.vstack([emb, emb[:1]])), init("one", np.array(1, np.int32))],
              opset=13)
    module = compare(m, {"ids": RNG.integers(0, 49, (2, 3)).astype(np.int32)})
    assert io_types(module)[0] == ["i32"]
    assert input_ranges(module) == {"ids": (0, 50)}  # ([lo, hi) to draw from)


@pytest.mark.parametrize("qt", [TensorProto.INT8, TensorProto.UINT8])
def test_per_axis_quantize_of_activations(qt: int) -> None:
    """QuantizeLinear and DequantizeLinear per axis (axis 1 and -1) on computed tensors:
    the [C] parameters become [1, C, 1] / [1, 1, C] broadcasting constants; exact."""
    dt = np.int8 if qt == TensorProto.INT8 else np.uint8
    nodes = [helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q"], name="q", axis=1),
             helper.make_node("DequantizeLinear", ["q", "s1", "z1"], ["d"], name="dq", axis=1),
             helper.make_node("QuantizeLinear", ["d", "s2", "z2"], ["y"], name="q2", axis=-1)]
    inits = [init("s1", np.array([0.1, 0.02, 0.5], np.float32)), init("z1", np.array([0, 3, 9], dt)),
             init("s2", np.linspace(0.01, 0.2, 4).astype(np.float32)), init("z2", np.array([1, 2, 3, 4], dt))]
    m = model(nodes, [vi("x", TensorProto.FLOAT, (2, 3, 4))], [vi("y", qt, (2, 3, 4)), vi("d", TensorProto.FLOAT,
                                                                                           (2, 3, 4))], inits)
    compare(m, {"x": rand(2, 3, 4) * 4}, rtol=0)


def test_padded_max_pooling_on_integers() -> None:
    """MaxPool of int8 (2-D, `npu_graph.maxpool`) and uint8 (1-D, `maxpool_nd`) inputs with
    padding: padding never wins (the type's minimum), exact, types kept."""
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["x3"], ["p3"], name="pool1d", kernel_shape=[3], strides=[2], pads=[1, 1])]
    m = model(nodes, [vi("x", TensorProto.INT8, (1, 2, 7, 7)), vi("x3", TensorProto.UINT8, (1, 2, 9))],
              [vi("p", TensorProto.INT8, (1, 2, 4, 4)), vi("p3", TensorProto.UINT8, (1, 2, 5))], opset=13)
    x = RNG.integers(-128, 128, (1, 2, 7, 7)).astype(np.int8)
    x[..., 0, 0] = -128  # (a corner window of the minimum and padding only)
    module = compare(m, {"x": x, "x3": RNG.integers(0, 256, (1, 2, 9)).astype(np.uint8)})
    assert io_types(module) == (["i8", "ui8"], ["i8", "ui8"])


@pytest.mark.parametrize("name", ["lenet", "mlp", "gru_speech"])
def test_zoo_models_in_bf16(name: str) -> None:
    """Whole models with bfloat16 weights, inputs and outputs import in bf16 throughout;
    onnxruntime has no bf16 CPU kernels, so the reference is its float32 run of the
    original model on the same (bf16-rounded) inputs: within 2^-5 of the output's
    largest magnitude (bf16 keeps 8 significant bits; each op rounds)."""
    from pathlib import Path

    import ml_dtypes
    src = onnx.load(str(Path(__file__).parent / "models" / f"{name}.onnx"))
    m = onnx.ModelProto.FromString(src.SerializeToString())
    for i, t in enumerate(m.graph.initializer):
        if t.data_type == TensorProto.FLOAT:
            bf = numpy_helper.to_array(t).astype(ml_dtypes.bfloat16)
            m.graph.initializer[i].CopyFrom(numpy_helper.from_array(bf, t.name))
    for v in [*m.graph.input, *m.graph.output]:
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            v.type.tensor_type.elem_type = TensorProto.BFLOAT16
    del m.graph.value_info[:]
    module, weights = import_model(m)
    feeds = {k: v.astype(ml_dtypes.bfloat16) for k, v in _zoo_feeds(src, 0).items()}
    got = evaluate_graph(module, weights, feeds)
    want = run_ort(src, {k: v.astype(np.float32) for k, v in feeds.items()})
    for k, w in want.items():
        assert got[k].dtype == ml_dtypes.bfloat16
        assert np.abs(got[k].astype(np.float32) - w).max() <= np.abs(w).max() / 32, k
    assert io_types(module) == (["bf16"], ["bf16"])


def test_onnx_node_test_cases() -> None:
    """onnx's own node test cases of the quantized ops, evaluated at import with the
    expected outputs (integers exactly): an input the importer asks to be constant
    becomes an initializer first, as bench/conformance.py does. Every case of int8 /
    uint8 / int32 passes; the rest are refused with a diagnostic (float8, float4,
    2/4/16-bit integers, blocked quantization, per-channel zero points that differ)."""
    import re
    import warnings

    from onnx.backend.test.case.node import collect_testcases
    ops = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger",
           "DynamicQuantizeLinear"}
    passed, refused = [], {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = [c for c in collect_testcases(None) if "expanded" not in c.name and c.model is not None
                 and {n.op_type for n in c.model.graph.node} & ops]
    for case in cases:
        assert case.model is not None and case.data_sets
        m, (ins, outs) = case.model, case.data_sets[0]
        feeds = dict(zip([i.name for i in m.graph.input], ins))
        module = None
        while module is None:
            try:
                module, weights = import_model(m)
            except OnnxImportError as e:
                hit = re.search(r"\(input \d+, '([^']+)'\) is computed at run time", e.lines[0])
                if hit is None or hit[1] not in feeds:
                    refused[case.name] = e.lines[0]
                    break
                m = onnx.ModelProto.FromString(m.SerializeToString())
                m.graph.initializer.append(numpy_helper.from_array(np.asarray(feeds.pop(hit[1])), hit[1]))
                kept = [i for i in m.graph.input if i.name != hit[1]]
                del m.graph.input[:]
                m.graph.input.extend(kept)
        if module is None:
            continue
        got = evaluate_graph(module, weights, feeds)
        for o, want in zip([o.name for o in m.graph.output], outs):
            g, w = np.asarray(got[o], np.float64), np.asarray(want, np.float64)
            tol = 0 if np.issubdtype(np.asarray(want).dtype, np.integer) else 1e-5 * max(1.0, np.abs(w).max())
            assert np.abs(g - w).max() <= tol, (case.name, o)
        passed.append(case.name)
    assert len(passed) >= 18 and {"test_qlinearconv", "test_matmulinteger", "test_convinteger_without_padding",
                                  "test_dynamicquantizelinear", "test_quantizelinear_axis"} <= set(passed)
    why = re.compile(r"element type (float8|float4|u?int(2|4|16))|blocked quantization|differs per channel")
    assert all(why.search(line) for line in refused.values()), refused


def test_qdq_in_float16() -> None:
    """QuantizeLinear of an f16 tensor with an f16 scale (opset 19+) quantizes in f32 (the
    input widened exactly); DequantizeLinear gives the scale's type, f16, so the Relu
    after it stays f16. Exact against onnxruntime."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
             helper.make_node("Relu", ["d"], ["y"], name="relu")]
    m = model(nodes, [vi("x", TensorProto.FLOAT16, (2, 5))], [vi("y", TensorProto.FLOAT16, (2, 5))],
              [init("s", np.array(0.05, np.float16)), init("z", np.array(3, np.int8))], opset=21)
    module = compare(m, {"x": (rand(2, 5) * 3).astype(np.float16)}, rtol=0)
    assert io_types(module) == (["f16"], ["f16"])


def test_pad_and_expand_on_int8_stay_int8() -> None:
    """Constant Pad (by a value of the type) and Expand of int8 values are int8 ops."""
    nodes = [helper.make_node("Pad", ["x", "pads", "v"], ["p"], name="pad"),
             helper.make_node("Expand", ["p", "shape"], ["y"], name="expand")]
    inits = [init("pads", np.array([0, 1, 2, 0, 0, 1], np.int64)), init("v", np.array(-7, np.int8)),
             init("shape", np.array([2, 1, 1], np.int64))]
    m = model(nodes, [vi("x", TensorProto.INT8, (1, 3, 4))], [vi("y", TensorProto.INT8, (2, 4, 7))], inits, opset=13)
    module = compare(m, {"x": RNG.integers(-128, 128, (1, 3, 4)).astype(np.int8)})
    assert "npu_graph.dequantize" not in op_names(module) and io_types(module) == (["i8"], ["i8"])


def test_a_quantized_model_of_an_ir_version_3_model_imports(tmp_path, capsys):
    """onnxruntime's quantizers keep a model's IR version and add its scales and zero
    points as initializers only; at IR version 3 (every initializer a graph input, as
    the light zoo's models) the checker rejects that ('r0_scale in initializer but not
    in graph input') while onnxruntime runs it: the importer reads it as IR 4 does."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from tools.npu_run import main as run_main
    m = onnx.load("tests/models/lenet.onnx")
    m.graph.input.extend(onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                         for i in m.graph.initializer)
    m.ir_version = 3
    src, out = tmp_path / "ir3.onnx", tmp_path / "ir3_dyn.onnx"
    onnx.save(m, str(src))
    quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8)
    q = onnx.load(str(out))
    assert q.ir_version == 3 and {i.name for i in q.graph.initializer} - {i.name for i in q.graph.input}
    x = np.random.default_rng(2).standard_normal((1, 1, 28, 28)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    assert run_main([str(out), "--inputs", str(tmp_path / "in.npz"), "--check"]) == 0
    assert "check:       ok vs onnxruntime" in capsys.readouterr().out

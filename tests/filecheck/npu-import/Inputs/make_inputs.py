"""Regenerate the ONNX inputs of the npu-import lit tests (run from anywhere):

    python tests/filecheck/npu-import/Inputs/make_inputs.py

- mlp.onnx: x[2, 8] -> /fc1/Gemm (16) -> /relu/Relu -> /fc2/Gemm (16) -> /relu_1/Relu -> /fc3/Gemm (4)
- cnn.onnx: x[1, 1, 8, 8] -> /conv1/Conv 3x3 pad 1 (2) -> /relu/Relu -> /pool/MaxPool 2x2
  -> /flatten/Flatten -> /fc/Gemm (3)
- unsupported.onnx: a RandomNormalLike named 'odd_node' and a Pad 'pad' in mode 'symmetric' (not an ONNX mode)
- symbolic.onnx: an input with the symbolic dimension 'batch'
- batched_mlp.onnx: the MLP of mlp.onnx with a symbolic batch, x['batch', 8] -> y['batch', 4]
- functions.onnx: x[2, 3, 4] -> Elu 'elu' (alpha 0.5) -> Mish 'mish' -> LogSoftmax 'lsm'
  (axis 2), opset 18: three ops imported as their ONNX function bodies
- resize.onnx: x[1, 2, 4, 4] -> Resize 'up' (nearest, x2 on H and W, asymmetric floor) ->
  Resize 'down' (linear half_pixel, scales 0.5 and 0.75), scales from Constant nodes
- gru.onnx: x[2, 1, 2] (2 steps, batch 1) -> GRU 'gru' (hidden 2, W, R and B from Constant
  nodes) -> Y and Y_h, opset 14: unrolled over its steps
- function_unsupported.onnx: a Bernoulli 'bern' (its body needs RandomUniformLike)
- qdq10.onnx / qdq21.onnx: a QDQ conv (uint8 activations, int8 weight per channel, int32 bias)
- qlinear.onnx: QLinearConv -> MaxPool -> Reshape -> QLinearMatMul on uint8
- q16.onnx: a QuantizeLinear 'q16' to int16 (refused)
- opset6.onnx / opset28.onnx: a Relu at opset 6 (below the range) and 28 (the newest)
- ops11.onnx / ops18.onnx: the same small attention-like graph at opset 11 and 18, where
  Softmax, Squeeze/Unsqueeze, Split and the reductions take their axes differently, with a
  Shape -> Gather -> Unsqueeze -> Concat -> Reshape subgraph that folds at import

The builders live in tools/testkit/models.py and are seeded, so the files are reproducible.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))  # the repository root, for tools/testkit/models.py

from tools.testkit import models  # noqa: E402


def cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(11)
    w = lambda name, *shape: numpy_helper.from_array(  # noqa: E731
        rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["/conv1/Conv_output_0"],
                         name="/conv1/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["/conv1/Conv_output_0"], ["/relu/Relu_output_0"], name="/relu/Relu"),
        helper.make_node("MaxPool", ["/relu/Relu_output_0"], ["/pool/MaxPool_output_0"], name="/pool/MaxPool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["/pool/MaxPool_output_0"], ["/flatten/Flatten_output_0"],
                         name="/flatten/Flatten", axis=1),
        helper.make_node("Gemm", ["/flatten/Flatten_output_0", "fc.weight", "fc.bias"], ["y"],
                         name="/fc/Gemm", transB=1),
    ]
    g = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [w("conv1.weight", 2, 1, 3, 3), w("conv1.bias", 2), w("fc.weight", 3, 32), w("fc.bias", 3)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_inputs")


def opset_graph(opset: int) -> onnx.ModelProto:
    """x[2, 6, 9]: Unsqueeze -> Split (3 parts) -> Softmax / ReduceSum / ReduceMean ->
    Squeeze -> Concat, and a Shape-derived Reshape; attributes at opset < 13 (< 18 for
    ReduceMean and Split sizes), inputs after."""
    ints = lambda name, *v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"), ints("ax0", 0), ints("m1", -1)]
    n = helper.make_node
    if opset < 13:
        nodes = [n("Unsqueeze", ["x"], ["u"], name="unsq", axes=[1]),
                 n("Split", ["u"], ["s0", "s1", "s2"], name="split", axis=3, split=[3, 3, 3]),
                 n("ReduceSum", ["s1"], ["r1"], name="rsum", axes=[3], keepdims=1)]
    else:
        inits += [ints("ax1", 1), ints("ax3", 3), ints("sizes", 3, 3, 3)]
        nodes = [n("Unsqueeze", ["x", "ax1"], ["u"], name="unsq"),
                 n("Split", ["u"] + (["sizes"] if opset < 18 else []), ["s0", "s1", "s2"], name="split",
                   axis=3, **({} if opset < 18 else {"num_outputs": 3})),
                 n("ReduceSum", ["s1", "ax3"], ["r1"], name="rsum", keepdims=1)]
    nodes.append(n("Softmax", ["s0"], ["p0"], name="softmax", axis=2))
    if opset < 18:
        nodes.append(n("ReduceMean", ["s2"], ["r2"], name="rmean", axes=[3], keepdims=1))
    else:
        nodes.append(n("ReduceMean", ["s2", "ax3"], ["r2"], name="rmean", keepdims=1))
    nodes += [n("Concat", ["r1", "r2", "r1"], ["c"], name="concat", axis=3),
              n("Mul", ["p0", "c"], ["m"], name="mul"),
              n("Shape", ["x"], ["shape"], name="shape"),
              n("Gather", ["shape", "zero"], ["b"], name="gather", axis=0),
              n("Unsqueeze", ["b"] + (["ax0"] if opset >= 13 else []), ["bu"], name="unsq_b",
                **({} if opset >= 13 else {"axes": [0]})),
              n("Concat", ["bu", "m1"], ["target"], name="target", axis=0),
              n("Reshape", ["m", "target"], ["y"], name="flatten")]
    g = helper.make_graph(nodes, f"ops{opset}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 9])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 18])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_inputs")


def single(nodes: list[onnx.NodeProto], outputs: list[str], opset: int, shape=(2, 3, 4)) -> onnx.ModelProto:
    """A graph of `nodes` on a float input x of `shape` (output types left to inference)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    g = helper.make_graph(nodes, "g", [x], outs)
    return onnx.shape_inference.infer_shapes(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]))


def qdq(opset: int) -> onnx.ModelProto:
    """x[2, 3, 6, 6] -> QuantizeLinear 'qx' (uint8) -> DequantizeLinear 'dqx'; an int8 weight
    per output channel (per tensor before opset 13) through DequantizeLinear 'dqw' and an int32 bias through
    'dqb' -> Conv 'conv' -> QuantizeLinear 'qy' (int8) -> DequantizeLinear 'dqy' -> y."""
    rng = np.random.default_rng(7)
    n = helper.make_node
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    ws = np.array([0.01, 0.02, 0.015, 0.03], np.float32) if opset >= 13 else np.array(0.02, np.float32)
    inits = [numpy_helper.from_array(a, name) for name, a in (
        ("xs", np.array(0.05, np.float32)), ("xz", np.array(128, np.uint8)), ("w", w), ("ws", ws),
        ("wz", np.zeros(ws.shape, np.int8)), ("b", rng.integers(-200, 200, 4).astype(np.int32)),
        ("bs", (0.05 * ws).astype(np.float32)), ("ys", np.array(0.1, np.float32)), ("yz", np.array(-3, np.int8)))]
    axis0 = {"axis": 0} if opset >= 13 else {}
    nodes = [n("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
             n("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dqx"),
             n("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="dqw", **axis0),
             n("DequantizeLinear", ["b", "bs"], ["bd"], name="dqb", **axis0),
             n("Conv", ["xd", "wd", "bd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             n("QuantizeLinear", ["c", "ys", "yz"], ["cq"], name="qy"),
             n("DequantizeLinear", ["cq", "ys", "yz"], ["y"], name="dqy")]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 6, 6])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_inputs")


def qlinear() -> onnx.ModelProto:
    """x[1, 2, 5, 5] uint8 -> QLinearConv 'qconv' (int8 weight, int32 bias) -> MaxPool 'pool'
    -> QLinearMatMul 'qmm' after a Reshape 'flat' -> y uint8 (onnxruntime's QOperator form)."""
    rng = np.random.default_rng(8)
    n = helper.make_node
    inits = [numpy_helper.from_array(a, name) for name, a in (
        ("xs", np.array(0.02, np.float32)), ("xz", np.array(100, np.uint8)),
        ("w", rng.integers(-127, 128, (3, 2, 3, 3)).astype(np.int8)), ("ws", np.array(0.03, np.float32)),
        ("wz", np.array(0, np.int8)), ("cs", np.array(0.05, np.float32)), ("cz", np.array(120, np.uint8)),
        ("b", rng.integers(-100, 100, 3).astype(np.int32)), ("shape", np.array([1, 12], np.int64)),
        ("m", rng.integers(0, 256, (12, 4)).astype(np.uint8)), ("ms", np.array(0.01, np.float32)),
        ("mz", np.array(128, np.uint8)), ("ys", np.array(0.2, np.float32)), ("yz", np.array(90, np.uint8)))]
    nodes = [n("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "cs", "cz", "b"], ["c"], name="qconv"),
             n("MaxPool", ["c"], ["p"], name="pool", kernel_shape=[2, 2], strides=[1, 1]),
             n("Reshape", ["p", "shape"], ["f"], name="flat"),
             n("QLinearMatMul", ["f", "cs", "cz", "m", "ms", "mz", "ys", "yz"], ["y"], name="qmm")]
    g = helper.make_graph(nodes, "qlinear", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 5, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_inputs")


def contrib(channels_last: int = 0) -> onnx.ModelProto:
    """onnxruntime's com.microsoft quantized ops (QOperator form): uint8 a[1, 4, 4, 4] and
    b -> QLinearAdd 'qadd' -> QLinearConcat 'qcat' (with a, axis 1) ->
    QLinearGlobalAveragePool 'qgap' (`channels_last` as given) -> Reshape 'flat' ->
    QGemm 'qgemm' (int8 weight per column, int32 bias) -> QLinearSoftmax 'qsm' -> y uint8."""
    rng = np.random.default_rng(9)
    n = helper.make_node
    f = lambda v: np.array(v, np.float32)  # noqa: E731
    u = lambda v: np.array(v, np.uint8)  # noqa: E731
    inits = [numpy_helper.from_array(a, name) for name, a in (
        ("as", f(0.05)), ("az", u(120)), ("bs", f(0.03)), ("bz", u(128)), ("cs", f(0.06)), ("cz", u(125)),
        ("ks", f(0.07)), ("kz", u(100)), ("gs", f(0.04)), ("gz", u(110)), ("shape", np.array([1, 8], np.int64)),
        ("w", rng.integers(-127, 128, (8, 5)).astype(np.int8)), ("ws", rng.uniform(0.01, 0.03, 5).astype(np.float32)),
        ("wz", np.zeros(5, np.int8)), ("bias", rng.integers(-300, 300, 5).astype(np.int32)),
        ("ys", f(0.1)), ("yz", u(128)), ("ps", f(1 / 256)), ("pz", u(0)))]
    ms = "com.microsoft"
    nodes = [n("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["s"], name="qadd", domain=ms),
             n("QLinearConcat", ["ks", "kz", "s", "cs", "cz", "a", "as", "az"], ["k"], name="qcat", domain=ms, axis=1),
             n("QLinearGlobalAveragePool", ["k", "ks", "kz", "gs", "gz"], ["g"], name="qgap", domain=ms,
               channels_last=channels_last),
             n("Reshape", ["g", "shape"], ["r"], name="flat"),
             n("QGemm", ["r", "gs", "gz", "w", "ws", "wz", "bias", "ys", "yz"], ["m"], name="qgemm", domain=ms),
             n("QLinearSoftmax", ["m", "ys", "yz", "ps", "pz"], ["y"], name="qsm", domain=ms, axis=-1, opset=13)]
    g = helper.make_graph(nodes, "contrib", [helper.make_tensor_value_info(x, TensorProto.UINT8, [1, 4, 4, 4])
                                             for x in ("a", "b")],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(ms, 1)],
                             producer_name="make_inputs")


def gru() -> onnx.ModelProto:
    """A tiny GRU, its weights in Constant nodes (`single` takes no initializers)."""
    rng = np.random.default_rng(5)
    consts = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        rng.uniform(-0.8, 0.8, shape).astype(np.float32))) for name, shape in
        (("W", (1, 6, 2)), ("R", (1, 6, 2)), ("B", (1, 12)))]
    node = helper.make_node("GRU", ["x", "W", "R", "B"], ["y", "h"], name="gru", hidden_size=2)
    return single([*consts, node], ["y", "h"], 14, shape=(2, 1, 2))


def main() -> int:
    files = {
        "mlp.onnx": models.mlp(batch=2, sizes=(8, 16, 16, 4)),
        "cnn.onnx": cnn(),
        "unsupported.onnx": models.unsupported(),
        "symbolic.onnx": models.symbolic_batch(),
        "batched_mlp.onnx": models.mlp(batch="batch", sizes=(8, 16, 16, 4)),  # type: ignore[arg-type]
        "ops11.onnx": opset_graph(11),
        "ops18.onnx": opset_graph(18),
        "functions.onnx": single([helper.make_node("Elu", ["x"], ["e"], name="elu", alpha=0.5),
                                  helper.make_node("Mish", ["e"], ["m"], name="mish"),
                                  helper.make_node("LogSoftmax", ["m"], ["y"], name="lsm", axis=2)], ["y"], 18),
        "resize.onnx": single([
            helper.make_node("Constant", [], ["s1"], value=numpy_helper.from_array(
                np.array([1, 1, 2, 2], dtype=np.float32))),
            helper.make_node("Resize", ["x", "", "s1"], ["u"], name="up", mode="nearest",
                             coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
            helper.make_node("Constant", [], ["s2"], value=numpy_helper.from_array(
                np.array([1, 1, 0.5, 0.75], dtype=np.float32))),
            helper.make_node("Resize", ["u", "", "s2"], ["y"], name="down", mode="linear")], ["y"], 17,
            shape=(1, 2, 4, 4)),
        "gru.onnx": gru(),
        "qdq10.onnx": qdq(10),
        "qdq21.onnx": qdq(21),
        "qlinear.onnx": qlinear(),
        "contrib.onnx": contrib(),
        "contrib_nhwc.onnx": contrib(channels_last=1),
        "q16.onnx": single([helper.make_node("Constant", [], ["s"], value_float=0.1),
                            helper.make_node("Constant", [], ["z"], value=numpy_helper.from_array(np.array(0, np.int16))),
                            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q16")], ["y"], 21),
        "function_unsupported.onnx": single([helper.make_node("Bernoulli", ["x"], ["y"], name="bern")], ["y"], 18),
        "opset6.onnx": single([helper.make_node("Relu", ["x"], ["y"], name="relu")], ["y"], 6),
        "opset28.onnx": single([helper.make_node("Relu", ["x"], ["y"], name="relu")], ["y"], 28),
    }
    for name, model in files.items():
        onnx.checker.check_model(model)
        onnx.save(model, str(HERE / name))
        print(f"wrote {HERE / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

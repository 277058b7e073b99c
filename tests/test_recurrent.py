"""ONNX LSTM, GRU and RNN (`lowering/importer/recurrent.py`) unrolled into graph ops,
compiled with npu-default, simulated and compared with onnxruntime: every op in each
direction, layout 1, initial states computed at run time, per-row sequence lengths
shorter than the sequence, a stacked bidirectional LSTM, clip, peepholes,
input_forget, linear_before_reset, the optional activations with their alphas and
betas; and the diagnostics of what is not supported."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from lowering.importer.onnx_import import OnnxImportError, import_model
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _model(op: str, *, seq: int = 3, batch: int = 2, inputs: int = 3, hidden: int = 4,
           direction: str = "forward", layout: int = 0, lens: list[int] | None = None,
           runtime_states: bool = False, constant_states: bool = False, peepholes: bool = False,
           opset: int = 14, seed: int = 0,
           **attrs) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A one-node model: X a graph input, W, R, B (and P) initializers, optional
    sequence_lens initializer and initial states (graph inputs or initializers); all
    outputs used."""
    rng = np.random.default_rng(seed)
    nd, g = (2 if direction == "bidirectional" else 1), GATES[op]

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.7).astype(np.float32)

    x_shape = [seq, batch, inputs] if layout == 0 else [batch, seq, inputs]
    state_shape = [nd, batch, hidden] if layout == 0 else [batch, nd, hidden]
    feeds = {"X": rand(*x_shape)}
    inits = {"W": rand(nd, g * hidden, inputs), "R": rand(nd, g * hidden, hidden), "B": rand(nd, 2 * g * hidden)}
    names = ["X", "W", "R", "B", ""]
    if lens is not None:
        inits["lens"] = np.array(lens, np.int32)
        names[4] = "lens"
    states = ["initial_h", "initial_c"] if op == "LSTM" else ["initial_h"]
    if runtime_states or constant_states:
        names += states
        (feeds if runtime_states else inits).update({s: rand(*state_shape) for s in states})
    if peepholes:
        names += [""] * (7 - len(names)) + ["P"]
        inits["P"] = rand(nd, 3 * hidden)
    outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    if layout:
        attrs["layout"] = layout
    node = helper.make_node(op, names, outs, name="rnn", hidden_size=hidden, direction=direction, **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), feeds


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray],
           ref: dict[str, np.ndarray] | None = None) -> None:
    res, _ = compile_and_run(model, "default", inputs=feeds)
    ref = ref or onnxruntime_outputs(model, feeds)
    for name, want in ref.items():
        np.testing.assert_allclose(res.outputs[name], want, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_directions(op, direction):
    _check(*_model(op, direction=direction))


def _check_layout_1(op: str, **kw) -> None:
    """onnxruntime has no layout 1: the reference is the layout-0 twin (the same weights)
    on the transposed inputs, its outputs transposed back."""
    model, feeds = _model(op, layout=1, **kw)
    twin, _ = _model(op, layout=0, **kw)
    for init, twin_init in zip(model.graph.initializer, twin.graph.initializer):
        if init.name.startswith("initial_"):
            twin_init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).transpose(1, 0, 2), init.name))
    ref = onnxruntime_outputs(twin, {k: v.transpose(1, 0, 2) for k, v in feeds.items()})
    ref = {k: v.transpose(2, 0, 1, 3) if k == "Y" else v.transpose(1, 0, 2) for k, v in ref.items()}
    _check(model, feeds, ref)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_layout_1_with_initial_states_computed_at_run_time(op):
    _check_layout_1(op, direction="bidirectional", runtime_states=True, seed=1)


def test_constant_initial_states_with_layout_1():
    _check_layout_1("LSTM", seq=2, direction="bidirectional", constant_states=True, seed=8)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_sequence_lens_shorter_than_the_sequence(op):
    """Rows of lengths 4, 2, 0 and 1 of 4 steps: zeros in Y past each row's length,
    Y_h (Y_c) from its last step (zeros for length 0), reverse starting at it."""
    _check(*_model(op, seq=4, batch=4, direction="bidirectional", lens=[4, 2, 0, 1], runtime_states=True,
                   seed=2))


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_every_input_constant_is_converted_not_folded(op):
    """X an initializer too: the node is still converted, not evaluated by onnx's reference
    at import (its recurrences ignore sequence_lens, direction, activations and clip; found
    by the fuzzer: a bidirectional RNN with sequence_lens folded to other numbers)."""
    model, feeds = _model(op, seq=3, batch=2, direction="bidirectional", lens=[1, 3], seed=5,
                          activations=["Sigmoid", "Tanh", "Tanh"][:GATES[op] // 2 + 1] * 2, clip=0.5)
    model.graph.initializer.append(numpy_helper.from_array(feeds.pop("X"), "X"))
    del model.graph.input[:]
    _check(model, feeds)


def test_sequence_lens_with_layout_1():
    _check_layout_1("GRU", seq=3, batch=3, direction="reverse", lens=[1, 3, 2], seed=3)


def test_stacked_bidirectional_lstm():
    """Two LSTM layers as PyTorch exports them: Y [T, 2, B, H] -> Transpose -> Reshape
    [T, B, 2H] -> the second layer."""
    rng = np.random.default_rng(4)
    seq, batch, inputs, hidden = 3, 2, 3, 4

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.6).astype(np.float32)

    inits = {"W1": rand(2, 4 * hidden, inputs), "R1": rand(2, 4 * hidden, hidden), "B1": rand(2, 8 * hidden),
             "W2": rand(1, 4 * hidden, 2 * hidden), "R2": rand(1, 4 * hidden, hidden), "B2": rand(1, 8 * hidden),
             "shape": np.array([seq, batch, 2 * hidden], np.int64)}
    nodes = [helper.make_node("LSTM", ["X", "W1", "R1", "B1"], ["Y1", "H1", "C1"], name="l1", hidden_size=hidden,
                              direction="bidirectional"),
             helper.make_node("Transpose", ["Y1"], ["Y1t"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["Y1t", "shape"], ["X2"]),
             helper.make_node("LSTM", ["X2", "W2", "R2", "B2"], ["Y", "Y_h"], name="l2", hidden_size=hidden)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, inputs])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("Y", "Y_h", "C1")],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    _check(model, {"X": rand(seq, batch, inputs)})


@pytest.mark.parametrize("op, attrs", [
    ("LSTM", {"clip": 0.4}), ("GRU", {"clip": 0.4}), ("RNN", {"clip": 0.4}),
    ("GRU", {"linear_before_reset": 1}), ("LSTM", {"input_forget": 1}),
])
def test_clip_and_gate_variants(op, attrs):
    """clip bounds the gates' inputs (not the cell fed to LSTM's h)."""
    _check(*_model(op, seq=4, direction="bidirectional", seed=5, **attrs))


def test_peepholes_with_clip():
    _check(*_model("LSTM", seq=4, peepholes=True, runtime_states=True, clip=0.6, seed=6))


@pytest.mark.parametrize("op, acts, alphas, betas", [
    ("LSTM", ["HardSigmoid", "LeakyRelu", "ScaledTanh"], [0.3, 0.1, 0.8], [0.4, 1.2]),
    ("GRU", ["Affine", "Elu"], [0.5, 0.7], [0.1]),
    ("RNN", ["ThresholdedRelu"], [0.2], []),
    ("GRU", ["Softsign", "Softplus"], [], []),
    ("RNN", ["Relu"], [], []),
])
def test_activations_with_alpha_and_beta(op, acts, alphas, betas):
    """activation_alpha/beta are consumed in order by the activations that take them."""
    attrs = {"activations": acts}
    if alphas:
        attrs["activation_alpha"] = alphas
    if betas:
        attrs["activation_beta"] = betas
    _check(*_model(op, seq=2, seed=7, **attrs))


def test_default_activations_per_direction_at_opset_7():
    _check(*_model("GRU", seq=2, direction="bidirectional", opset=7,
                   activations=["Sigmoid", "Tanh", "sigmoid", "relu"]))


def _diagnostic(model: onnx.ModelProto) -> str:
    with pytest.raises(OnnxImportError) as e:
        import_model(model)
    return str(e.value)


def test_unsupported_activation_is_named():
    model, _ = _model("GRU", activations=["Sigmoid", "Gelu"])
    msg = _diagnostic(model)
    assert "error: node 'rnn' (GRU, opset 14): unsupported activation 'Gelu'" in msg
    assert "Sigmoid, Tanh, Relu" in msg


def test_activation_count_and_runtime_weights_are_diagnosed():
    model, _ = _model("RNN", direction="bidirectional", activations=["Tanh"])
    assert "activations ['Tanh'] must have 2 names (1 per direction)" in _diagnostic(model)
    model, _ = _model("LSTM")
    w = model.graph.initializer[0]
    model.graph.input.append(helper.make_tensor_value_info("W", TensorProto.FLOAT, list(w.dims)))
    del model.graph.initializer[0]
    assert ("W (input 1, 'W') is computed at run time; only constant values are supported"
            in _diagnostic(model))


def test_only_y_h_builds_no_concat():
    """Y unused: no concat of the steps (Y_h is the last step's state itself)."""
    model, _ = _model("RNN", seq=3)
    model.graph.node[0].output[0] = ""
    del model.graph.output[0]
    module, _ = import_model(model)
    names = [op.name for op in module.walk()]
    assert "npu_graph.concat" not in names
    assert names.count("npu_graph.gemm") == 1  # the projection of every step, with the bias
    assert names.count("npu_graph.matmul") == 3  # h @ R^T of each step

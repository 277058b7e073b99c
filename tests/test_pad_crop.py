"""Pad with negative pads (crops), against onnxruntime: a crop deeper than its side
of the input while the other side pads (the output holds only padding there), in a
layer group and in tile loops (issue 43, item 5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from npu_dialects.graph import PadOp
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs

REPROS = Path(__file__).parent / "repros"

CASES = [  # (input shape, pads): begin counts of every dim, then end counts
    ((1, 2, 1, 1, 1), [0, 0, 0, -2, 1, 0, 0, 0, 3, 2]),  # crop 2 of a size-1 dim, pad 3
    ((3, 5), [-1, 2, 0, -3]),
    ((3, 5), [-4, 0, 5, 0]),
    ((2, 3), [1, -5, 0, 4]),
    ((2, 6, 9, 9), [0, 0, -11, 2, 0, 0, 12, -3]),
]


def _pad_model(shape: tuple[int, ...], pads: list[int], before: str | None = None) -> onnx.ModelProto:
    nodes, x = [], "x"
    if before:
        nodes.append(helper.make_node(before, ["x"], ["t"], name="pre"))
        x = "t"
    nodes.append(helper.make_node("Pad", [x, "pads"], ["y"], name="pad"))
    graph = helper.make_graph(nodes, "pad_crop", [helper.make_tensor_value_info("x", 1, shape)],
                              [helper.make_tensor_value_info("y", 1, None)],
                              [numpy_helper.from_array(np.array(pads, np.int64), "pads")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("shape", "pads"), CASES)
def test_pad_reference_semantics_match_onnxruntime(shape, pads):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ref = onnxruntime_outputs(_pad_model(shape, pads), {"x": x})["y"]
    got = PadOp.compute(PadOp(*_pad_args(shape, pads)).attributes, x)
    assert got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


def _pad_args(shape, pads):
    from xdsl.dialects.builtin import Float32Type, TensorType
    from xdsl.utils.test_value import create_ssa_value
    out = [s + b + e for s, b, e in zip(shape, pads, pads[len(shape):])]
    return create_ssa_value(TensorType(Float32Type(), shape)), pads, 0.0, TensorType(Float32Type(), out)


@pytest.mark.parametrize(("shape", "pads"), CASES)
@pytest.mark.parametrize("arch", ["default", "default,sram_bytes=4096"])
def test_pad_crop_compiles_and_matches_onnxruntime(shape, pads, arch):
    model = _pad_model(shape, pads, before="Relu")
    res, inputs = compile_and_run(model, arch)
    ref = onnxruntime_outputs(model, inputs)["y"]
    assert res.outputs["y"].shape == ref.shape
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=1e-6, atol=1e-6)


def test_pad_crop_inside_layer_group_repro():
    """The fuzzer's graph: GlobalAveragePool then a Pad cropping 2 of a size-1 dim, in a
    layer group (was: 'the tile computes shape [1, 2, 1, 3, 4] but the out buffer is
    [1, 2, 1, 2, 4]')."""
    model = onnx.load(REPROS / "pad_negative_in_group.onnx")
    inputs = dict(np.load(REPROS / "pad_negative_in_group.inputs.npz"))
    res, _ = compile_and_run(model, inputs=inputs)
    ref = onnxruntime_outputs(model, inputs)
    for name, want in ref.items():
        np.testing.assert_allclose(res.outputs[name], want, rtol=1e-5, atol=1e-5)

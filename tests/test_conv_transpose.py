"""ONNX ConvTranspose, end to end: `npu_graph.conv_transpose` (its reference
semantics), its decomposition into a phase convolution + pixel shuffle, compiled and
simulated against onnxruntime on every attribute (strides, pads, output_padding,
output_shape, auto_pad, dilations, groups, 1-D), a U-Net compiled at three arches,
and the importer's diagnostics naming the node.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from lowering.graph.evaluate import evaluate_graph
from lowering.importer.onnx_import import OnnxImportError, import_model
from npu_dialects.weights import weights_of
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs
from tools.testkit.models import randn, single_node, unet

CASES: dict[str, tuple[list[int], tuple[int, int, tuple[int, ...]], dict]] = {
    # name: (input shape, (C_in, C_out/group, kernel), attributes)
    "unet_k2s2": ([1, 8, 6, 6], (8, 4, (2, 2)), dict(strides=[2, 2])),
    "k3s1p1": ([1, 3, 5, 5], (3, 2, (3, 3)), dict(pads=[1, 1, 1, 1])),
    "dcgan_k4s2p1": ([2, 4, 5, 7], (4, 3, (4, 4)), dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "output_padding": ([1, 4, 5, 5], (4, 4, (3, 3)), dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])),
    "dilations": ([1, 2, 4, 4], (2, 3, (3, 3)), dict(strides=[2, 2], dilations=[2, 2])),
    "dilation_vs_stride": ([1, 2, 4, 5], (2, 3, (3, 2)), dict(strides=[2, 3], dilations=[3, 2], pads=[2, 0, 1, 3])),
    "groups": ([1, 4, 5, 5], (4, 3, (3, 3)), dict(group=2, strides=[2, 1], pads=[0, 1, 2, 0])),
    "depthwise": ([1, 6, 5, 5], (6, 1, (4, 4)), dict(group=6, strides=[2, 2], pads=[1, 1, 1, 1])),
    "pads_over_stride": ([1, 2, 6, 6], (2, 2, (3, 3)), dict(strides=[2, 2], pads=[4, 3, 2, 5])),
    "stride3": ([1, 3, 4, 4], (3, 2, (5, 3)), dict(strides=[3, 3], pads=[1, 2, 0, 1], output_padding=[2, 1])),
    "output_shape": ([1, 1, 3, 3], (1, 2, (3, 3)), dict(strides=[3, 2], output_shape=[10, 8])),
    # two past the full size (a total padding of -2): zeros at the end, no shift (found by the fuzzer)
    "output_shape_beyond": ([1, 2, 3, 2], (2, 1, (1, 4)), dict(strides=[3, 3], dilations=[2, 2], output_shape=[9, 12])),
    "same_upper": ([1, 2, 3, 3], (2, 2, (3, 3)), dict(strides=[2, 2], auto_pad="SAME_UPPER")),
    "same_lower": ([1, 2, 3, 3], (2, 2, (3, 3)), dict(strides=[2, 2], auto_pad="SAME_LOWER")),
    "conv1d": ([1, 3, 7], (3, 2, (3,)), dict(strides=[2], pads=[1, 0])),
}


def model(name: str, bias: bool = True) -> onnx.ModelProto:
    x, (ci, cog, k), attrs = CASES[name]
    rng = np.random.default_rng(sorted(CASES).index(name))
    weights = {"w": randn(rng, ci, cog, *k)}
    if bias:
        weights["b"] = randn(rng, cog * attrs.get("group", 1))
    return single_node("ConvTranspose", {"x": x}, None, weights, **attrs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_matches_onnxruntime(name: str) -> None:
    m = model(name, bias=name != "depthwise")
    res, inputs = compile_and_run(m)
    ref = onnxruntime_outputs(m, inputs)["y"]
    assert res.outputs["y"].shape == ref.shape
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reference_semantics_match_onnxruntime(name: str) -> None:
    """`ConvTransposeOp.evaluate` (constant folding, the float64 reference) on the
    imported, undecomposed op."""
    m = model(name)
    module, weights = import_model(m)
    x = np.random.default_rng(1).standard_normal(CASES[name][0]).astype(np.float32)
    got = evaluate_graph(module, weights_of(module) or weights, {"x": x}, dtype=np.float64)["y"]
    np.testing.assert_allclose(got, onnxruntime_outputs(m, {"x": x})["y"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("arch,size", [("default", 32), ("default", 128), ("edge-small", 64), ("server", 64)])
def test_unet_matches_onnxruntime(arch: str, size: int) -> None:
    """A U-Net (ConvTranspose up-sampling, skip concats): one layer group at 32x32,
    tiled kernels and strip groups at 128x128 and on the small arch."""
    m = unet(size=size)
    res, inputs = compile_and_run(m, arch)
    ref = onnxruntime_outputs(m, inputs)["y"]
    np.testing.assert_allclose(res.outputs["y"], ref, rtol=1e-4, atol=1e-5)


def import_error(m: onnx.ModelProto) -> str:
    with pytest.raises(OnnxImportError) as info:
        import_model(m)
    (line,) = info.value.lines
    return line


@pytest.mark.parametrize("inputs,weights,attrs,needle", [
    ({"x": [1, 1, 3, 4, 5, 2]}, (1, 2, (3, 3, 3, 1)), {},
     "only 1-D, 2-D and 3-D transposed convolutions are supported: input [1, 1, 3, 4, 5, 2]"),
    ({"x": [1, 2, 3, 3]}, (2, 2, (3, 3)), dict(strides=[2, 2], pads=[1, 1, 1, 1], output_shape=[6, 6]),
     "pads cannot be combined with output_shape"),
    ({"x": [1, 2, 3, 3]}, (2, 2, (3, 3)), dict(strides=[2, 2], output_padding=[2, 0]),
     "output_padding [2, 0] must be below the stride or the dilation"),
    ({"x": [1, 2, 3, 3]}, (2, 2, (3, 3)), dict(strides=[0, 2]), "strides [0, 2] must have 2 positive values"),
    ({"x": [1, 3, 3, 3]}, (3, 2, (3, 3)), dict(group=2),
     "weight [3, 2, 3, 3] must have the input's 3 channels first, divisible by group 2"),
    ({"x": [1, 2, 3, 3]}, (2, 2, (3, 3)), dict(pads=[3, 3, 3, 3]), "the output would be empty"),
    ({"x": [1, 2, 3, 3]}, (2, 2, (3, 3)), dict(auto_pad="FOO"), "unsupported attribute auto_pad=FOO"),
])
def test_import_diagnostics_name_the_node(inputs, weights, attrs, needle) -> None:
    ci, cog, k = weights
    m = single_node("ConvTranspose", inputs, None, {"w": randn(np.random.default_rng(0), ci, cog, *k)}, **attrs)
    line = import_error(m)
    assert line.startswith("error: node '/convtranspose/ConvTranspose' (ConvTranspose, opset 17): "), line
    assert needle in line, line

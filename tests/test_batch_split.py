"""Batch-split layer groups (`lowering/tile/batch_split.py`): batched CNNs whose
per-image work spreads over the cores match onnxruntime under the memory sanitizer."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block

from lowering.tile.batch_split import batched_values
from npu_dialects.graph import ConcatOp, GemmOp
from tools.testkit import models
from tools.testkit.e2e import compile_and_run, grouped_kernels, onnxruntime_outputs


def split_kernels(model, arch: str = "default") -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
    """(name, tile, grid) of the batch-split groups npu-layer-group forms in `model`."""
    return [(k.kernel.data, tuple(k.tile_sizes), tuple(k.trip_counts)) for k in grouped_kernels(model, arch)
            if k.loop_names == ["n"]]


@pytest.mark.parametrize("batch", [16, 64])
def test_batched_lenet_splits_and_matches_onnxruntime(batch):
    model = models.lenet(batch=batch)
    groups = split_kernels(model)
    assert groups and all(t[0] * g[0] == batch and g[0] >= 2 for _, t, g in groups), groups
    res, inputs = compile_and_run(model)
    ref = onnxruntime_outputs(model, inputs)
    np.testing.assert_allclose(res.outputs["y"], ref["y"], rtol=1e-4, atol=1e-4)
    split = [k for k in res.report["kernels"] if k["name"] == groups[0][0]]
    assert len(split[0]["cores"]) == min(4, groups[0][2][0])  # (a slice per core, or several a core)


def test_one_core_loops_over_slices_and_one_image_does_not_split():
    """On one core the slices run one after another (the task's loop): a slice's
    tensors fit SRAM where the whole batch's do not."""
    model = models.lenet(batch=16)
    groups = split_kernels(model, "default,cores=1")
    assert groups and all(g[0] >= 2 for _, _, g in groups), groups
    res, inputs = compile_and_run(model, "default,cores=1")
    np.testing.assert_allclose(res.outputs["y"], onnxruntime_outputs(model, inputs)["y"], rtol=1e-4, atol=1e-4)
    assert split_kernels(models.lenet(batch=1)) == []


def branchy_net(seed: int) -> onnx.ModelProto:
    """A random batched net: conv 3x3 + relu, a 1x1 branch concatenated to it along
    the channels, a residual add, max-pool, flatten, gemm (batch 4, 6 or 8)."""
    rng = np.random.default_rng(seed)
    n, c, h = int(rng.choice([4, 6, 8])), int(rng.integers(2, 6)), int(rng.choice([8, 12, 16]))
    c2, c3 = int(rng.integers(2, 8)), int(rng.integers(1, 5))
    g = models.Graph(seed=seed)
    a = g.node("Conv", ["x", g.weight("w1", (c2, c, 3, 3)), g.weight("b1", (c2,))], "a", pads=[1, 1, 1, 1])
    a = g.node("Relu", [a], "ar")
    b = g.node("Conv", [a, g.weight("w2", (c3, c2, 1, 1))], "b")
    cat = g.node("Concat", [a, b], "cat", axis=1)
    res = g.node("Add", [cat, g.node("Conv", ["x", g.weight("w3", (c2 + c3, c, 1, 1))], "skip")], "res")
    p = g.node("MaxPool", [res], "p", kernel_shape=[2, 2], strides=[2, 2])
    f = g.node("Flatten", [p], "f", axis=1)
    g.node("Gemm", [f, g.weight("fc", ((c2 + c3) * (h // 2) ** 2, 10)), g.weight("fcb", (10,))], "y")
    return g.model("branchy", {"x": [n, c, h, h]}, {"y": [n, 10]}, models.DEFAULT_OPSET)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("arch", ["default,sram_bytes=32768", "default,cores=2,sram_bytes=65536"])
def test_random_batched_nets_match_onnxruntime(seed, arch):
    """Small SRAM makes the batch split pay on these nets (slices fit where the batch
    does not); whatever the cost model picks must match onnxruntime, sanitized."""
    model = branchy_net(seed)
    res, inputs = compile_and_run(model, arch)
    np.testing.assert_allclose(res.outputs["y"], onnxruntime_outputs(model, inputs)["y"], rtol=1e-4, atol=1e-4)


def test_random_batched_nets_split():
    """The nets above do form batch-split groups (the test exercises the split)."""
    assert sum(bool(split_kernels(branchy_net(s), "default,sram_bytes=32768")) for s in range(6)) >= 3


def test_unet_batch_matches_onnxruntime():
    """Concats along channels, transposed convs (which stay out of a split) and skips."""
    model = models.unet(batch=4, size=16)
    res, inputs = compile_and_run(model)
    ref = onnxruntime_outputs(model, inputs)
    for k, r in ref.items():
        np.testing.assert_allclose(res.outputs[k], r, rtol=1e-4, atol=1e-4)


def test_samples_that_mix_are_not_separable():
    """A gemm reading its batch transposed (trans_a), or adding a bias per row, and a
    concat with an unsliced operand would mix (or mis-slice) the samples."""
    blk = Block(arg_types=[TensorType(f32, [4, 8]), TensorType(f32, [8, 3]), TensorType(f32, [4, 3]),
                           TensorType(f32, [3]), TensorType(f32, [4, 2])])
    x, w, w2, bias, rows = blk.args
    ok = GemmOp(x, w, bias, TensorType(f32, [4, 3]))
    mixed = GemmOp(x, w2, None, TensorType(f32, [8, 3]), trans_a=True)
    per_row = GemmOp(x, w, w2, TensorType(f32, [4, 3]))
    cat = ConcatOp([x, rows], 1, TensorType(f32, [4, 10]))
    assert batched_values([ok], [x]) == ({x, ok.results[0]}, 4)
    assert batched_values([mixed], [x]) is None
    assert batched_values([per_row], [x]) is None
    assert batched_values([cat], [x]) is None
    assert batched_values([cat], [x, rows]) is not None

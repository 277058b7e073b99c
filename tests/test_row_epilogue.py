"""Elementwise chains with a LayerNorm or softmax in them (npu-fuse's eltwise-chain
taking a row op; npu-tile keeps the normalised dims whole in every tile): one kernel,
the same numbers as onnxruntime, with rows cut into tiles over the cores."""

from __future__ import annotations

import numpy as np
import pytest

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.arch import parse_arch_spec
from npu_dialects.weights import weights_of
from runtime.run import run
from tools.testkit.e2e import onnxruntime_outputs
from tools.testkit.models import Graph
from tools.testkit.zoo import random_inputs


def residual_layernorm(rows: int):
    g = Graph(seed=7)
    rng = np.random.default_rng(7)
    g.const("gamma", rng.uniform(0.5, 1.5, 256).astype(np.float32))
    g.const("beta", rng.uniform(-0.5, 0.5, 256).astype(np.float32))
    g.node("Add", ["x", "r"], "s", name="residual")
    g.node("LayerNormalization", ["s", "gamma", "beta"], "ln", name="ln", axis=-1, epsilon=1e-5)
    g.node("Relu", ["ln"], "y", name="relu")
    return g.model("residual_ln", {"x": [1, rows, 256], "r": [1, rows, 256]}, {"y": [1, rows, 256]}, 17)


def masked_softmax(rows: int):
    g = Graph(seed=8)
    g.const("scale", np.array(0.125, np.float32))
    g.node("Mul", ["x", "scale"], "m", name="scale")
    g.node("Add", ["m", "mask"], "a", name="mask")
    g.node("Softmax", ["a"], "y", name="softmax", axis=-1)
    return g.model("masked_softmax", {"x": [4, rows, 128], "mask": [4, rows, 128]}, {"y": [4, rows, 128]}, 17)


@pytest.mark.parametrize("make", [residual_layernorm, masked_softmax], ids=["layernorm", "softmax"])
@pytest.mark.parametrize("rows", [8, 1024])
def test_row_op_in_an_elementwise_kernel(make, rows):
    model = make(rows)
    arch = parse_arch_spec("default")
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights)
    inputs = random_inputs(model, seed=rows)
    result = run(module, weights_of(module), inputs, arch)
    assert len(result.report["kernels"]) == 1, [k["name"] for k in result.report["kernels"]]
    for name, want in onnxruntime_outputs(model, inputs).items():
        np.testing.assert_allclose(result.outputs[name], want, rtol=1e-5, atol=1e-5, err_msg=name)

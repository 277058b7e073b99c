"""The timing model responds to the machine: fewer cores or less DRAM bandwidth
never makes a model faster, a larger cube makes a compute-bound kernel faster.

Each model is compiled for each machine (the compiler adapts tiling, splits and
placement) and simulated on it; cycles are deterministic, so the comparisons
are exact."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from tools.testkit import models
from tools.testkit.e2e import compile_and_run

MODELS = {
    "mlp": models.mlp,
    "lenet": models.lenet,
    "torch_lenet": models.torch_lenet,
    "lenet_b8": lambda: models.lenet(batch=8),
    "mlp_b64": lambda: models.mlp(batch=64, sizes=(256, 512, 512, 10)),
}


def cycles(model, arch: str) -> int:
    return compile_and_run(model, arch)[0].report["cycles"]


@pytest.mark.parametrize("name", MODELS)
def test_fewer_cores_never_faster(name):
    model = MODELS[name]()
    c = [cycles(model, f"default,cores={n}") for n in (1, 2, 3, 4, 8)]
    assert all(a >= b for a, b in zip(c, c[1:])), c


@pytest.mark.parametrize("name", MODELS)
def test_less_dram_bandwidth_never_faster(name):
    model = MODELS[name]()
    c = [cycles(model, f"default,dram_bw={bw}") for bw in (32, 64, 128, 256, 1024)]
    assert all(a >= b for a, b in zip(c, c[1:])), c


def test_more_dma_latency_never_faster():
    model = models.lenet(batch=2)
    c = [cycles(model, f"default,dma_latency={lat}") for lat in (800, 400, 200, 50)]
    assert all(a >= b for a, b in zip(c, c[1:])), c


def _matmul_model(m: int, k: int, n: int):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((k, n)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_larger_cube_speeds_up_a_compute_bound_kernel():
    model = _matmul_model(512, 512, 512)
    fast_dram = "default,cores=1,dram_bw=8192"
    small = cycles(model, fast_dram + ",cube=16x16x16")
    large = cycles(model, fast_dram + ",cube=32x32x32")
    # 8x the MACs per cycle: the compute-bound kernel gets several times faster
    assert large * 3 < small


def test_same_program_on_slower_dram_is_not_faster():
    """The simulator alone: one compiled program, run with less bandwidth."""
    from dataclasses import replace

    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import compile_module
    from npu_dialects.arch import parse_arch_spec
    from npu_dialects.weights import weights_of
    from runtime.run import random_inputs, run
    from sim.program import signature

    arch = parse_arch_spec("default")
    module, weights = import_model(models.lenet(batch=4), arch)
    compile_module(module, arch, weights)
    weights = weights_of(module)  # passes add weights (folded, packed)
    inputs = random_inputs(signature(module))
    c = [run(module, weights, inputs, replace(arch, dram_bw=bw)).report["cycles"] for bw in (16, 64, 128, 512)]
    assert all(a > b for a, b in zip(c, c[1:])), c

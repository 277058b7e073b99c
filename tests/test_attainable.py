"""bench/attainable.py: the Hong-Kung term, products against weights (matmul, conv,
merged projections), and the bound against the roofline and simulated cycles."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest

from bench.attainable import attainable_cycles, graph_module, hk_words, memory_bytes, product_bytes, products
from bench.roofline import simulate
from lowering.tile.roofline import model_work
from npu_dialects.arch import parse_arch_spec
from tools.testkit import models, zoo
from tools.testkit.models import DEFAULT_OPSET, Graph, single_node

SMALL = "default,cores=1,sram_bytes=16K"
"""One core of 4096 f32 words: a 128 x 128 f32 weight (64 KiB) does not fit."""


def matmul(m: int, k: int, n: int) -> onnx.ModelProto:
    w = np.random.default_rng(0).standard_normal((k, n)).astype(np.float32)
    return single_node("MatMul", {"x": [m, k]}, [m, n], {"w": w})


def conv(c: int, hw: int, stride: int) -> onnx.ModelProto:
    w = np.random.default_rng(0).standard_normal((c, c, 3, 3)).astype(np.float32)
    out = (hw + 2 - 3) // stride + 1
    return single_node("Conv", {"x": [1, c, hw, hw]}, [1, c, out, out], {"w": w}, kernel_shape=[3, 3],
                       pads=[1, 1, 1, 1], strides=[stride, stride])


def projections() -> onnx.ModelProto:
    """x[256, 128] @ wq and x @ wk: two products reading x."""
    g = Graph(seed=3)
    rng = np.random.default_rng(1)
    for name in ("wq", "wk"):
        g.const(name, rng.standard_normal((128, 128)).astype(np.float32))
    g.node("MatMul", ["x", "wq"], "q", name="/q")
    g.node("MatMul", ["x", "wk"], "k", name="/k")
    return g.model("projections", {"x": [256, 128]}, {"q": [256, 128], "k": [256, 128]}, DEFAULT_OPSET)


def test_hk_words_is_smith_van_de_geijn():
    assert hk_words(256 * 128 * 128, 1, 4096, 1) == 2 * 256 * 128 * 128 / 64 - 2 * 4096
    assert hk_words(1000, 1, 4096, 1) == 0.0  # the -2S of what a core holds dominates
    assert hk_words(10**9, 9, 4096, 2) == pytest.approx(2e9 / 192 - 4 * 4096)


def test_a_matmul_that_fits_moves_its_compulsory_bytes():
    arch = parse_arch_spec("default")
    module = graph_module(matmul(256, 128, 128), arch)
    assert memory_bytes(module, arch) == model_work(module)[1] == (256 * 128 * 2 + 128 * 128) * 4


def test_a_matmul_that_does_not_fit_moves_the_hong_kung_words():
    arch = parse_arch_spec(SMALL)
    module = graph_module(matmul(256, 128, 128), arch)
    (p,) = products(module)
    assert (p.macs, p.kappa, p.weight_bytes) == (256 * 128 * 128, 1, 128 * 128 * 4)
    hk = math.ceil(2 * 256 * 128 * 128 / 64 - 2 * 4096) * 4
    assert hk > model_work(module)[1]
    assert memory_bytes(module, arch) == product_bytes(p, arch) == hk
    assert attainable_cycles(module, arch) == math.ceil(hk / arch.dram_bw)


@pytest.mark.parametrize("stride, window", [(1, 9), (2, 4)])
def test_a_convolution_counts_its_window_reuse(stride, window):
    """Implicit GEMM: an input element is up to ceil(k / s)^2 entries of the im2col matrix,
    so the Hong-Kung words shrink by sqrt of that; the compulsory bytes are the input,
    filter and output once."""
    arch = parse_arch_spec(SMALL)
    module = graph_module(conv(64, 32, stride), arch)
    (p,) = products(module)
    assert p.kappa == window
    out = (32 + 2 - 3) // stride + 1
    macs = out * out * 64 * 64 * 9
    assert p.macs == macs
    compulsory = (64 * 32 * 32 + 64 * 64 * 9 + 64 * out * out) * 4
    assert model_work(module)[1] == compulsory
    hk = math.ceil(2 * macs / math.sqrt(window * 4096) - 2 * 4096) * 4
    assert memory_bytes(module, arch) == max(compulsory, hk)


def test_products_reading_one_operand_merge():
    arch = parse_arch_spec(SMALL)
    module = graph_module(projections(), arch)
    (p,) = products(module)  # x is read once for both
    assert p.macs == 2 * 256 * 128 * 128 and p.weight_bytes == 2 * 128 * 128 * 4
    assert memory_bytes(module, arch) == math.ceil(2 * p.macs / 64 - 2 * 4096) * 4


CASES = [
    ("lenet_b8", lambda: models.lenet(batch=8), "default"),
    ("lenet_small_sram", lambda: models.lenet(batch=8), "default,sram_bytes=8K"),
    ("matmul", lambda: matmul(256, 128, 128), SMALL),
    ("matmul_4_cores", lambda: matmul(512, 256, 256), "default,sram_bytes=32K"),
    ("projections", projections, SMALL),
    ("conv", lambda: conv(64, 32, 1), SMALL),
    ("mlp", lambda: models.mlp(batch=512, sizes=(256, 512, 512, 64)), "default,sram_bytes=64K"),
]


@pytest.mark.parametrize("name, make, spec", CASES, ids=[c[0] for c in CASES])
def test_roofline_le_attainable_le_simulated(name, make, spec):
    """The bound is at least the roofline and, being a lower bound, at most what the
    compiled model takes on the simulator."""
    model = make()
    arch = parse_arch_spec(spec)
    r = simulate(model, zoo.random_inputs(model, 0), arch)
    bound = attainable_cycles(graph_module(model, arch), arch)
    assert r["roofline_cycles"] <= bound <= r["cycles"], name
    assert r["attainable_cycles"] == bound

"""End to end: ONNX -> npu-default -> simulator, compared with onnxruntime.

The acceptance models of the walking skeleton (an MLP and a LeNet-style CNN,
both as PyTorch exports them at opset 17 and as built with onnx.helper) on
several machines, with passes and fusion rules switched off, plus randomised
single-kernel models on tiny SRAMs that force edge tiles, several reduction
tiles and halos."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from lowering.graph.fuse import RULES
from tools.testkit import models
from tools.testkit.e2e import (
    compile_and_run,
    line_buffered_kernels,
    max_abs_error,
    onnxruntime_outputs,
)

NETWORKS = {
    "torch_mlp": models.torch_mlp,
    "torch_lenet": models.torch_lenet,
    "mlp": models.mlp,
    "lenet": models.lenet,
}
ARCHES = ["default", "default,cores=1", "default,cores=3", "edge-small", "server", "default,dram_bw=16"]


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("name", NETWORKS)
def test_networks_match_onnxruntime(name, arch):
    assert max_abs_error(NETWORKS[name](), arch) <= 1e-4


@pytest.mark.parametrize("arch", ["default", "default,cores=1,sram_bytes=65536"])
def test_mobilenet_v2_matches_onnxruntime(arch):
    """The MobileNetV2 generator (depthwise convs, ReLU6, inverted residuals) at a small
    resolution and width, as the DSE sweeps compile it at full size."""
    model = models.mobilenet_v2(resolution=64, width=0.5, classes=10)
    groups = [a.i for n in model.graph.node if n.op_type == "Conv" for a in n.attribute if a.name == "group"]
    assert sum(g > 1 for g in groups) == 17  # (one depthwise conv per inverted residual block)
    assert max_abs_error(model, arch) <= 1e-4


@pytest.mark.parametrize("options", [
    {"disable": ("npu-fuse",)},
    {"disable": ("npu-canonicalize",)},
    {"fuse_disable": ("conv-epilogue",)},
    {"fuse_disable": ("matmul-epilogue", "eltwise-chain")},
])
def test_switching_passes_and_rules_off_keeps_numerics(options):
    assert max_abs_error(models.torch_lenet(), "default", **options) <= 1e-4


@pytest.mark.parametrize("rule", [None, *RULES])
@pytest.mark.parametrize("model", ["residual_block", "dense_block"])
def test_each_fusion_rule_off_keeps_numerics(model, rule):
    """Every rule on, then each rule off, on blocks that have every rule's pattern."""
    options = {"fuse_disable": (rule,)} if rule else {}
    assert max_abs_error(getattr(models, model)(), "default", **options) <= 1e-4


APART = {(models.widened_residual, "default,sram_bytes=32768,cores=1")}
"""Strip-group models the cost model rightly keeps apart on one arch: on one core the 3x3
conv alone starts its sum from the shortcut (npu_tile.reduce init), 3,107 cycles apart
against 3,919 as a strip group; on 4 cores the group forms (the strip-local path stays covered)."""


@pytest.mark.parametrize("arch", ["default,sram_bytes=32768", "default,sram_bytes=32768,cores=1",
                                  "default,sram_bytes=65536,cores=3", "default,sram_bytes=16384"])
def test_strip_groups_match_onnxruntime(arch):
    """Small SRAMs turn the chain, the shuffle unit (channel shuffle, residual side
    input), the fire modules (branches joined by a concat), the LRN stem, a DenseNet
    transition and an Inception pool branch (average pools), and residual adds reading
    the middle rows of a value a 3x3 conv widened or of the group input (a bottleneck)
    into strip groups (one core or split over cores)."""
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import compile_module
    from npu_dialects.arch import parse_arch_spec
    from npu_dialects.task import TaskOp

    for make in (models.strip_chain, models.shuffle_unit, models.fire_modules, models.lrn_stem, models.transition,
                 models.pool_branch, models.widened_residual, models.bottleneck):
        assert max_abs_error(make(), arch) <= 1e-4
        a = parse_arch_spec(arch)
        module, weights = import_model(make(), a)
        compile_module(module, a, weights)
        kernels = {t.kernel.data for t in module.walk() if isinstance(t, TaskOp)}
        if arch != "default,sram_bytes=16384" and (make, arch) not in APART:  # (there no strip height fits and pays)
            assert any(".." in k for k in kernels), kernels
        if (make, arch) in APART:  # (the pool may still group with the ReLU npu-hoist-pool moved after it)
            assert not any(".." in k and "Conv" in k for k in kernels), kernels



def test_line_buffered_strip_groups_match_onnxruntime():
    """A DenseNet layer whose 3x3 conv reads a 64-channel value: the cost model keeps
    the rows strips share in SRAM (a line buffer) rather than recompute them. With
    line-buffers=always the other strip models take line buffers too, batch 3 as well."""
    arch = "default,sram_bytes=98304"
    layer = models.dense_layer(32, 64, 8, 48)
    assert line_buffered_kernels(layer, arch) == ["/bn0/BatchNormalization../conv1/Conv"]
    assert max_abs_error(layer, arch) <= 1e-4
    assert line_buffered_kernels(layer, arch, line_buffers="never") == []
    batched = models.strip_chain()
    for v in (batched.graph.input[0], batched.graph.output[0]):
        v.type.tensor_type.shape.dim[0].dim_value = 3
    for make, arch in ((models.strip_chain, "default,sram_bytes=32768"), (models.lrn_stem, "default,sram_bytes=32768"),
                       (models.shuffle_unit, "default,sram_bytes=32768"), (models.pool_branch, "default,sram_bytes=32768"),
                       (models.widened_residual, "default,sram_bytes=16384"),
                       (models.bottleneck, "default,sram_bytes=24576"),
                       (lambda: batched, "default,sram_bytes=65536"),
                       (models.strip_chain, "default,sram_bytes=65536,cores=3")):
        assert line_buffered_kernels(make(), arch, line_buffers="always"), (make, arch)
        assert max_abs_error(make(), arch, line_buffers="always") <= 1e-4, (make, arch)


def test_strip_groups_with_a_batch_match_onnxruntime():
    """Strips cut H of every image of a batch of 3."""
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import compile_module
    from npu_dialects.arch import parse_arch_spec
    from npu_dialects.task import TaskOp

    model = models.strip_chain()
    for v in (model.graph.input[0], model.graph.output[0]):
        v.type.tensor_type.shape.dim[0].dim_value = 3
    arch = parse_arch_spec("default,sram_bytes=65536")
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights)
    assert any(t.kernel.data == "/c1/Conv../pool/MaxPool" for t in module.walk() if isinstance(t, TaskOp))
    assert max_abs_error(model, arch) <= 1e-4


@pytest.mark.parametrize("arch", ["default", "default,cores=1,sram_bytes=8192", "edge-small"])
def test_conv_prologue_numerics_across_machines(arch):
    """Small SRAM cuts the input channels into reduction steps: the prologue runs per step."""
    assert max_abs_error(models.dense_block(), arch, fuse_disable=("layer-group",)) <= 1e-4


def test_fusion_rules_change_the_kernels():
    """layer-group off keeps the kernels apart; conv-bn off keeps the batchnorms out of the
    conv weights (they become multiply-adds in the conv epilogues)."""
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import compile_module
    from npu_dialects.arch import parse_arch_spec
    from npu_dialects.task import TaskOp, WeightOp

    def compiled(*off):
        arch = parse_arch_spec("default")
        module, weights = import_model(models.residual_block(), arch)
        compile_module(module, arch, weights, fuse_disable=off)
        keys = [op.key.data for op in module.walk() if isinstance(op, WeightOp)]
        return len([op for op in module.walk() if isinstance(op, TaskOp)]), keys

    tasks, _ = compiled()
    separate, keys = compiled("layer-group")
    assert tasks == 1 and separate == 4  # one layer group vs conv, conv, pool, fc
    assert sum("bn_weight" in k for k in keys) == 2  # both batchnorms folded into the convs
    assert not any("bn_weight" in k for k in compiled("layer-group", "conv-bn")[1])


def _compile_with_tile_options(model, arch_spec, **tile_options):
    from lowering import get_all_passes
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import DEFAULT_PIPELINE, run_pass
    from npu_dialects import make_context
    from npu_dialects.arch import parse_arch_spec

    arch = parse_arch_spec(arch_spec)
    module, weights = import_model(model, arch)
    ctx = make_context()
    for name in DEFAULT_PIPELINE:
        if name in ("npu-layer-group", "npu-dma-order"):
            continue  # these tests look at the tile loops of single kernels, as npu-tile made them
        cls = get_all_passes()[name]()
        run_pass(cls(**tile_options) if name == "npu-tile" else cls(), ctx, module)
    return module, weights, arch


@pytest.mark.parametrize("model,arch", [
    (lambda: models.lenet(batch=4), "default,sram_bytes=32768"),
    (lambda: models.lenet(batch=8), "default,cores=1,dram_bw=1024"),
    (lambda: models.mlp(batch=64, sizes=(256, 512, 512, 10)), "default,cores=1,dram_bw=1024"),
])
def test_double_buffering_overlaps_dma_with_compute(model, arch):
    """With double buffering allowed the search may overlap loads with compute (never
    slower in the model); the numerics stay; where compute and DMA are of the same
    order (fast DRAM, one core) the overlap pays."""
    from runtime.run import random_inputs, run
    from sim.program import signature

    model = model()
    cycles = {}
    for db in (True, False):
        module, weights, a = _compile_with_tile_options(model, arch, double_buffer=db)
        inputs = random_inputs(signature(module))
        res = run(module, weights, inputs, a)
        ref = onnxruntime_outputs(model, inputs)
        assert np.abs(res.outputs["y"] - ref["y"]).max() <= 1e-4
        cycles[db] = res.report["cycles"]
    assert cycles[True] <= cycles[False]
    if "dram_bw=1024" in arch:
        assert cycles[True] < 0.9 * cycles[False]


def _single_node_model(node, inputs, weights, out_shape):
    g = helper.make_graph(
        [node], "k",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        [numpy_helper.from_array(w, n) for n, w in weights.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _random_conv(rng):
    n, c, h, w = 1, int(rng.integers(1, 9)), int(rng.integers(5, 20)), int(rng.integers(5, 20))
    co, k = int(rng.integers(1, 12)), int(rng.choice([1, 3, 5]))
    s, d = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    p = [int(x) for x in rng.integers(0, k, 4)]
    oh = (h + p[0] + p[2] - (k - 1) * d - 1) // s + 1
    ow = (w + p[1] + p[3] - (k - 1) * d - 1) // s + 1
    if oh <= 0 or ow <= 0:
        return None
    wts = {"w": rng.standard_normal((co, c, k, k)).astype(np.float32),
           "b": rng.standard_normal(co).astype(np.float32)}
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", kernel_shape=[k, k],
                            strides=[s, s], dilations=[d, d], pads=p)
    return _single_node_model(node, [("x", [n, c, h, w])], wts, [n, co, oh, ow])


def _random_group_conv(rng):
    g = int(rng.choice([2, 3, 4]))
    cig, cog = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    if rng.integers(0, 2):
        cig, cog = 1, 1  # depthwise
        g = int(rng.integers(2, 12))
    h, w, k = int(rng.integers(4, 14)), int(rng.integers(4, 14)), int(rng.choice([1, 3]))
    s = int(rng.integers(1, 3))
    p = [int(x) for x in rng.integers(0, k, 4)]
    oh = (h + p[0] + p[2] - k) // s + 1
    ow = (w + p[1] + p[3] - k) // s + 1
    wts = {"w": rng.standard_normal((g * cog, cig, k, k)).astype(np.float32)}
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="gconv", kernel_shape=[k, k], strides=[s, s],
                            pads=p, group=g)
    return _single_node_model(node, [("x", [1, g * cig, h, w])], wts, [1, g * cog, oh, ow])


def _random_batched_matmul(rng):
    m, k, n = (int(x) for x in rng.integers(1, 40, 3))
    b0, b1 = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    a_shape = [b0, b1, m, k]
    b_shape = [[b1, k, n], [b0, 1, k, n], [k, n], [b0, b1, k, n]][int(rng.integers(0, 4))]
    node = helper.make_node("MatMul", ["x", "z"], ["y"], name="bmm")
    out = list(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))) + [m, n]
    return _single_node_model(node, [("x", a_shape), ("z", b_shape)], {}, out)


def _random_gemm(rng):
    m, k, n = (int(x) for x in rng.integers(1, 70, 3))
    tb = bool(rng.integers(0, 2))
    wts = {"w": rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32),
           "b": rng.standard_normal(n).astype(np.float32)}
    node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="fc", transB=int(tb))
    return _single_node_model(node, [("x", [m, k])], wts, [m, n])


def _random_pool(rng):
    c, h, w = int(rng.integers(1, 9)), int(rng.integers(4, 20)), int(rng.integers(4, 20))
    k, s = int(rng.integers(2, 4)), int(rng.integers(1, 3))
    p = [int(x) for x in rng.integers(0, k, 4)]
    oh = (h + p[0] + p[2] - k) // s + 1
    ow = (w + p[1] + p[3] - k) // s + 1
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[k, k], strides=[s, s], pads=p)
    return _single_node_model(node, [("x", [1, c, h, w])], {}, [1, c, oh, ow])


def _random_add(rng):
    a = [int(x) for x in rng.integers(1, 12, 3)]
    b = [1 if rng.integers(0, 2) else d for d in a][int(rng.integers(0, 3)):]
    node = helper.make_node("Add", ["x", "z"], ["y"], name="add")
    return _single_node_model(node, [("x", a), ("z", b)], {}, a)


@pytest.mark.parametrize("kind", [_random_conv, _random_group_conv, _random_gemm, _random_batched_matmul,
                                  _random_pool, _random_add])
def test_random_kernels_on_tiny_srams(kind):
    """Tiny SRAMs force many tiles: edge tiles, split reductions, halos, padding."""
    rng = np.random.default_rng(hash(kind.__name__) % 2**32)
    done = 0
    while done < 6:
        model = kind(rng)
        if model is None:
            continue
        sram = int(rng.choice([2048, 4096, 16384]))
        for arch in (f"default,sram_bytes={sram},cores=1", f"default,sram_bytes={sram}"):
            res, inputs = compile_and_run(model, arch, seed=done)
            ref = onnxruntime_outputs(model, inputs)["y"]
            err = float(np.abs(res.outputs["y"] - ref).max())
            assert err <= 1e-4 * max(1.0, float(np.abs(ref).max())), (arch, err)
        done += 1


def test_strip_group_writing_over_its_residual_computes_the_right_values():
    """npu-bufferize/strips_in_place.mlir, simulated: the group's output takes its
    residual's bytes (each strip loads its residual rows before storing the same rows)
    and the result is still -(conv(sigmoid(x), w) + relu(x)); the race detector is on."""
    from pathlib import Path

    from xdsl.dialects.builtin import ArrayAttr, StringAttr
    from xdsl.parser import Parser

    from lowering import get_all_passes
    from lowering.pipeline import run_pass
    from npu_dialects import make_context
    from npu_dialects.arch import arch_of
    from npu_dialects.graph import conv2d_ref
    from npu_dialects.task import AllocOp
    from runtime.run import run

    text = (Path(__file__).parent / "filecheck" / "npu-bufferize" / "strips_in_place.mlir").read_text()
    text = text.replace('{weight = "w"}', "{value = dense<0.03> : tensor<16x16x3x3xf32>}")
    module = Parser(make_context(), text).parse_module()
    ctx = make_context()
    for name in ("npu-tile-loops", "npu-bufferize", "npu-schedule", "npu-events", "npu-memplan"):
        run_pass(get_all_passes()[name]()(), ctx, module)
    reused = [a for a in module.walk() if isinstance(a, AllocOp) and a.reuse is not None]
    assert reused and all(a.offset == a.reuse.owner.offset for a in reused)
    main = next(iter(module.ops))
    main.attributes["npu.inputs"] = ArrayAttr([StringAttr("x")])
    main.attributes["npu.outputs"] = ArrayAttr([StringAttr("y")])
    x = np.random.default_rng(3).standard_normal((1, 16, 32, 32)).astype(np.float32)
    res = run(module, {}, {"x": x}, arch_of(module))
    w = np.full((16, 16, 3, 3), 0.03, np.float32)
    want = -(conv2d_ref(1 / (1 + np.exp(-x)), w, pads=(1, 1, 1, 1)) + np.maximum(x, 0))
    got = next(iter(res.outputs.values()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

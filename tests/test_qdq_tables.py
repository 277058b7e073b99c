"""Lookup tables for quantized elementwise chains (npu-fuse-qdq's FoldTable): chains of
elementwise ops between an 8-bit input and a quantize, as onnxruntime's quantize_static
writes them (a quantize/dequantize pair after every op), become one 256-entry table
(per channel when constants vary along one axis). The table is the chain's own
arithmetic on each of the 256 inputs, so the compiled program must equal, bit for bit,
the graph-level evaluation of the imported QDQ model (every op as written) - int8
symmetric and uint8 asymmetric activations alike."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from lowering.graph.evaluate import evaluate_graph
from lowering.importer.onnx_import import import_model
from npu_dialects.arch import parse_arch_spec
from npu_dialects.graph import TableOp, shape_of
from tools.testkit.e2e import compile_and_run
from tools.testkit.models import Graph
from tools.testkit.qdq import quantize
from tools.testkit.zoo import random_inputs


def gelu() -> onnx.ModelProto:
    """BERT's erf GELU on a [4, 64] activation (one table of 256 entries)."""
    g = Graph(seed=3)
    g.const("sqrt2", np.array(1.4142135, np.float32))
    g.const("one", np.array(1.0, np.float32))
    g.const("half", np.array(0.5, np.float32))
    g.node("Div", ["x", "sqrt2"], "d", name="div")
    g.node("Erf", ["d"], "e", name="erf")
    g.node("Add", ["e", "one"], "a", name="add")
    g.node("Mul", ["x", "a"], "m", name="mul")
    g.node("Mul", ["m", "half"], "y", name="mul_half")
    return g.model("gelu", {"x": [4, 64]}, {"y": [4, 64]}, 13)


def scale_shift() -> onnx.ModelProto:
    """DenseNet's BatchNorm -> Mul -> Add -> Relu after a concat (per-channel: an 8 x 256
    table), then a SiLU (x * sigmoid(x)) and a tanh on another branch."""
    g = Graph(seed=5)
    rng = np.random.default_rng(5)
    for name, lo, hi in (("bn_s", .5, 1.5), ("bn_b", -.3, .3), ("bn_m", -.2, .2), ("bn_v", .5, 2.0)):
        g.const(name, rng.uniform(lo, hi, 8).astype(np.float32))
    g.const("mul", rng.uniform(.5, 2, (8, 1, 1)).astype(np.float32))
    g.const("add", rng.uniform(-.5, .5, (8, 1, 1)).astype(np.float32))
    g.node("Concat", ["x", "x2"], "c", name="concat", axis=1)
    g.node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], "b", name="bn")
    g.node("Mul", ["b", "mul"], "m", name="scale")
    g.node("Add", ["m", "add"], "a", name="shift")
    g.node("Relu", ["a"], "y", name="relu")
    g.node("Sigmoid", ["x"], "s", name="sigmoid")
    g.node("Mul", ["x", "s"], "silu", name="silu")
    g.node("Tanh", ["silu"], "t", name="tanh")
    return g.model("scale_shift", {"x": [1, 4, 6, 6], "x2": [1, 4, 6, 6]},
                   {"y": [1, 8, 6, 6], "t": [1, 4, 6, 6]}, 13)


def conv_scale() -> onnx.ModelProto:
    """A conv, then a per-channel scale and shift and a SiLU: per-channel tables in the
    conv's epilogue (each tile loads its output channels' rows of the table)."""
    g = Graph(seed=6)
    rng = np.random.default_rng(6)
    g.const("w", rng.normal(0, 0.3, (16, 8, 3, 3)).astype(np.float32))
    g.const("mul", rng.uniform(.5, 2, (16, 1, 1)).astype(np.float32))
    g.const("add", rng.uniform(-.5, .5, (16, 1, 1)).astype(np.float32))
    g.node("Conv", ["x", "w"], "c", name="conv", pads=[1, 1, 1, 1])
    g.node("Mul", ["c", "mul"], "m", name="scale")
    g.node("Add", ["m", "add"], "a", name="shift")
    g.node("Sigmoid", ["a"], "s", name="sigmoid")
    g.node("Mul", ["a", "s"], "y", name="silu")
    return g.model("conv_scale", {"x": [1, 8, 12, 12]}, {"y": [1, 16, 12, 12]}, 13)


def dense_layer() -> onnx.ModelProto:
    """A DenseNet layer: concat, BatchNorm -> ReLU (a per-channel table) in front of an
    unpadded 1x1 conv (the table runs in the conv's prologue, on its input tiles)."""
    g = Graph(seed=8)
    rng = np.random.default_rng(8)
    for name, lo, hi in (("bn_s", .5, 1.5), ("bn_b", -.3, .3), ("bn_m", -.2, .2), ("bn_v", .5, 2.0)):
        g.const(name, rng.uniform(lo, hi, 24).astype(np.float32))
    g.const("w", rng.normal(0, 0.3, (16, 24, 1, 1)).astype(np.float32))
    g.node("Concat", ["x", "x2"], "c", name="concat", axis=1)
    g.node("BatchNormalization", ["c", "bn_s", "bn_b", "bn_m", "bn_v"], "b", name="bn")
    g.node("Relu", ["b"], "r", name="relu")
    g.node("Conv", ["r", "w"], "y", name="conv", kernel_shape=[1, 1])
    return g.model("dense_layer", {"x": [1, 16, 10, 10], "x2": [1, 8, 10, 10]}, {"y": [1, 16, 10, 10]}, 13)


MODELS = {"gelu": gelu, "scale_shift": scale_shift, "conv_scale": conv_scale, "dense_layer": dense_layer}


def quantized(name: str, symmetric: bool) -> onnx.ModelProto:
    model = MODELS[name]()
    return quantize(model, [random_inputs(model, seed=100 + s) for s in range(4)], symmetric, pre_process=False)


@pytest.mark.parametrize("symmetric", [True, False], ids=["int8", "uint8"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_tables_equal_the_graph_as_written(name, symmetric):
    qmodel = quantized(name, symmetric)
    arch = parse_arch_spec("default")
    module, weights = import_model(qmodel, arch)
    for seed in range(3):
        inputs = random_inputs(qmodel, seed=seed)
        want = evaluate_graph(module, weights, inputs)
        got, _ = compile_and_run(qmodel, arch, inputs=dict(inputs))
        for out, value in want.items():
            np.testing.assert_array_equal(got.outputs[out], value, err_msg=f"{out}, input seed {seed}")


@pytest.mark.parametrize("name, tables", [("gelu", [(256,)]), ("scale_shift", [(8, 256), (256,), (256,), (256,)])])
def test_each_chain_is_one_table(name, tables):
    """GELU's five ops and their quantize/dequantize pairs are one table; the BatchNorm,
    Mul, Add, Relu chain one table with a row per channel (its constants vary along
    dim 1); SiLU and tanh together one table (scalar constants); each concat operand
    quantized with other parameters than the concat's a table of that rescale."""
    from lowering.pipeline import compile_module
    arch = parse_arch_spec("default")
    module, weights = import_model(quantized(name, False), arch)
    compile_module(module, arch, weights, stage="graph")
    shapes = [shape_of(op.table) for op in module.walk() if isinstance(op, TableOp)]
    assert sorted(shapes) == sorted(tables), shapes


def test_per_channel_table_in_a_tiled_conv_epilogue():
    """With SRAM for a few output channels at a time, each conv tile loads its channels'
    rows of the table (`TableShape`): still the graph as written, bit for bit."""
    qmodel = quantized("conv_scale", True)
    arch = parse_arch_spec("default,sram_bytes=12288")
    module, weights = import_model(qmodel, arch)
    inputs = random_inputs(qmodel, seed=5)
    want = evaluate_graph(module, weights, inputs)
    got, _ = compile_and_run(qmodel, arch, inputs=dict(inputs))
    for out, value in want.items():
        np.testing.assert_array_equal(got.outputs[out], value, err_msg=out)


def test_a_table_in_front_of_a_1x1_conv_is_its_prologue():
    """The dense layer's per-channel table joins the conv's kernel (npu-fuse's
    conv-prologue): no kernel of its own writes the looked-up tensor to DRAM."""
    qmodel = quantized("dense_layer", True)
    got, _ = compile_and_run(qmodel, "default", inputs=random_inputs(qmodel, seed=0), fuse_disable=("layer-group",))
    conv = next(k for k in got.report["kernels"] if "conv" in k["onnx_nodes"])
    assert "r_QuantizeLinear" in conv["onnx_nodes"], got.report["kernels"]  # (the table: at relu's quantize)

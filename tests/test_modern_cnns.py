"""EfficientNet-B0, ConvNeXt-Tiny and Swin-T (tools/testkit/modern_cnns.py): tiny variants
compile with `npu-default` and match onnxruntime; the full-size builds have the
torchvision models' parameter counts and export forms (built, not compiled: the
compile is bench/roofline.py's).

The tiny variants compile with `group_max_kernels=16`: on a model this small every
tensor fits SRAM, so npu-layer-group's search plans runs of up to 128 kernels for
each kernel it ends at (tiny Swin: 30 s against 3 s on the 2-core CI machine); the
groups it picks stay real ones, only shorter."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest

from tools.testkit import modern_cnns as mc
from tools.testkit.zoo import compare, random_inputs

TINY = {
    "efficientnet_b0": lambda: mc.efficientnet_b0(resolution=32, width=0.25, stages=3, classes=10),
    "efficientnet_b0_bn": lambda: mc.efficientnet_b0(resolution=32, width=0.25, stages=3, classes=10,
                                                     fold_bn=False),
    "convnext_tiny": lambda: mc.convnext_tiny(resolution=32, width=1 / 6, depths=(1, 1, 1, 1), classes=10),
    "convnext_tiny_opset13": lambda: mc.convnext_tiny(resolution=32, width=1 / 6, depths=(1, 1, 1, 1),
                                                      classes=10, opset=13),
    "swin_t": lambda: mc.swin_t(resolution=16, window=2, embed_dim=16, head_dim=8, depths=(2, 1), classes=10),
}


def ops(model: onnx.ModelProto) -> Counter[str]:
    return Counter(n.op_type for n in model.graph.node)


def parameters(model: onnx.ModelProto) -> int:
    """Elements of the named (module) initializers: not the exporter's folded constants."""
    return sum(int(np.prod(t.dims)) for t in model.graph.initializer if not t.name.startswith("/"))


@pytest.mark.parametrize("name", TINY)
def test_tiny_variant_matches_onnxruntime(name):
    model = TINY[name]()
    onnx.checker.check_model(model)
    result = compare(model, random_inputs(model, 0), group_max_kernels=16)
    assert result.ok, result


@pytest.mark.parametrize("make, torchvision", [
    (mc.efficientnet_b0, 5_288_548), (mc.convnext_tiny, 28_589_128), (mc.swin_t, 28_288_354)])
def test_full_size_parameter_counts(make, torchvision):
    """Within 0.5% of torchvision's count (folded BatchNorm keeps one bias per channel
    instead of four statistics; Swin's relative position tables become constants)."""
    model = make()
    assert model.graph.input[0].type.tensor_type.shape.dim[2].dim_value == 224
    assert abs(parameters(model) - torchvision) / torchvision < 0.005


def test_export_forms():
    """The ops torchvision's models export to at opset 17 (below it LayerNorm is ReduceMean)."""
    eff, cnx, swin = mc.efficientnet_b0(), mc.convnext_tiny(), mc.swin_t()
    depthwise = [n for n in eff.graph.node if n.op_type == "Conv" and any(a.name == "group" and a.i > 1
                                                                            for a in n.attribute)]
    assert len(depthwise) == 16 and ops(eff)["GlobalAveragePool"] == 17  # 16 MBConv SE blocks + the head
    assert ops(eff)["Sigmoid"] == 49 + 16 and "BatchNormalization" not in ops(eff)
    assert ops(mc.efficientnet_b0(fold_bn=False))["BatchNormalization"] == 49
    assert ops(cnx)["LayerNormalization"] == 18 + 1 + 3 + 1 and ops(cnx)["Erf"] == 18
    assert ops(swin)["Softmax"] == 12 and ops(swin)["Concat"] == 2 * 2 * 5 + 3  # rolls of 5 shifted blocks
    assert "LayerNormalization" not in ops(mc.convnext_tiny(opset=13, depths=(1, 1, 1, 1)))


def test_swin_mask_and_bias():
    """The shifted-window mask separates the rolled grid's regions; the relative position
    bias of a token to itself is the table's centre row in every window."""
    mask = mc.shifted_window_mask(size=8, window=4, shift=2)
    assert mask.shape == (1, 4, 1, 16, 16)
    assert not mask[0, 0].any() and mask[0, 3].min() == -100.0  # the top-left window is one region
    table = np.arange(49 * 2, dtype=np.float32).reshape(49, 2)
    bias = mc.relative_position_bias(table, 4)
    assert bias.shape == (1, 2, 16, 16) and (np.diagonal(bias[0, 0]) == table[24, 0]).all()

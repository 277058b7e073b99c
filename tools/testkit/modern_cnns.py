"""EfficientNet-B0, ConvNeXt-Tiny and Swin-T as `torch.onnx.export` (opset 17, eval
mode, constant folding on) writes the torchvision models, with seeded random weights:
the full-size rows of `bench/roofline.py` and the tiny variants of
`tests/test_modern_cnns.py`.

- `efficientnet_b0`: MBConv blocks (depthwise convs, SiLU, squeeze-and-excitation);
  `width`/`depth` are torchvision's multipliers (B0 = 1.0/1.0, ~5.3M parameters).
- `convnext_tiny`: 7x7 depthwise convs, channels-last LayerNorm, 4x MLP with GELU,
  layer scale, residuals, LayerNorm + 2x2/2 conv downsampling (~28.6M parameters).
- `swin_t`: 4x4/4 patch embedding, shifted-window attention with relative position
  bias and the shifted windows' mask, GELU MLP, patch merging (~28.3M parameters).

Each takes `resolution`, a width (`width` or `embed_dim`), a depth (`depth` or
`depths`, EfficientNet also `stages`), `classes`, `batch` and `opset`; below opset 17 LayerNorm is exported in
its ReduceMean form, as the exporter writes it there.

Algorithm
---------
Weights are uniform with variance gain / (3 fan_in), the gain chosen so activations
stay O(1) at any depth (6 before an activation, 3 before none, 12 for MBConv's
projection after the SE gate); BatchNorm is folded into the conv's bias
as the exporter does in eval mode, or kept as BatchNormalization nodes after a
bias-free conv (`fold_bn=False`, random statistics). SiLU is Sigmoid then Mul; GELU
is its Erf formula (Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5); Linear on a 3-D or
4-D tensor is MatMul with a [in, out] weight then Add of the bias, the classifier a
Gemm (transB=1). Global average pooling (AdaptiveAvgPool2d(1)) is GlobalAveragePool;
Dropout and stochastic depth vanish in eval mode.

EfficientNet's SE squeezes to a quarter of the block's input channels:
GlobalAveragePool, 1x1 conv, SiLU, 1x1 conv, Sigmoid, Mul with the block's tensor.
ConvNeXt's LayerNorm2d is Transpose(0,2,3,1), LayerNormalization (eps 1e-6),
Transpose(0,3,1,2); a block is dwconv 7x7, Transpose, LayerNorm, Linear 4x, GELU,
Linear, Transpose, Mul by the [C,1,1] layer scale, Add of the input.

Swin works channels-last [B, H, W, C]. The cyclic shift torch.roll(x, -s, dims 1 and
2) is exported per dim as two Slices and a Concat; windows are partitioned by Reshape
to [B, H/w, w, W/w, w, C], Transpose(0,1,3,2,4,5) and Reshape to [B*nW, w*w, C]
(reversed the same way). Attention: one qkv Linear, Reshape + Transpose(2,0,3,1,4),
Gather of q/k/v, q scaled by Mul, q @ k^T, Add of the relative position bias (the
table gathered by the relative index: a [1, heads, w*w, w*w] constant after folding),
on shifted blocks Reshape to [B, nW, heads, w*w, w*w], Add of the -100/0 mask
constant and Reshape back, Softmax, @ v, Transpose + Reshape, the proj Linear. The
shift is 0 where the window covers the whole grid, so the last stage at 224 is never
shifted. Patch merging takes x[:, 0::2, 0::2], [1::2, 0::2], [0::2, 1::2],
[1::2, 1::2] (two strided Slices each), Concat on channels, LayerNorm, Linear 4C->2C
without bias. The head: LayerNorm, Transpose to NCHW, GlobalAveragePool, Flatten,
Gemm. Every stage's grid must be a multiple of the window (224 = 32 x 7 with four
stages; torchvision would pad, not exported here).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import onnx

from tools.testkit.models import Graph

OPSET = 17

EFFICIENTNET_B0_STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                          (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
"""EfficientNet-B0's MBConv stages: (expand ratio, kernel, first stride, channels, blocks)."""

CONVNEXT_TINY_DEPTHS = (3, 3, 9, 3)
CONVNEXT_TINY_DIMS = (96, 192, 384, 768)
SWIN_T_DEPTHS = (2, 2, 6, 2)


class _Net:
    """Graph-building helpers that name nodes `/{scope}/{Op}_{n}` as the exporter does."""

    def __init__(self, seed: int, opset: int):
        self.g = Graph(seed=seed)
        self.opset = opset
        self.n = 0

    def op(self, op_type: str, inputs: Sequence[str], scope: str, **attrs) -> str:
        self.n += 1
        name = f"/{scope}/{op_type}_{self.n}"
        return self.g.node(op_type, inputs, f"{name}_output_0", name=name, **attrs)

    def floats(self, scope: str, value: np.ndarray | float) -> str:
        self.n += 1
        return self.g.const(f"/{scope}/Constant_{self.n}_output_0", np.asarray(value, dtype=np.float32))

    def ints(self, scope: str, values: Sequence[int]) -> str:
        self.n += 1
        return self.g.const(f"/{scope}/Constant_{self.n}_output_0", np.asarray(values, dtype=np.int64))

    def params(self, name: str, shape: Sequence[int], lo: float, hi: float) -> str:
        return self.g.const(name, self.g.rng.uniform(lo, hi, tuple(shape)).astype(np.float32))

    def conv(self, x: str, scope: str, c_in: int, c_out: int, k: int, stride: int = 1, groups: int = 1,
             pad: int | None = None, gain: float = 6.0, bias: bool = True) -> str:
        """Conv with a U(+-sqrt(gain / fan_in)) weight (6: He for an activation after it)."""
        fan_in = c_in // groups * k * k
        w = self.g.weight(f"{scope}.weight", (c_out, c_in // groups, k, k), scale=math.sqrt(gain / fan_in))
        inputs = [x, w] + ([self.g.weight(f"{scope}.bias", (c_out,), scale=0.1)] if bias else [])
        p = k // 2 if pad is None else pad
        return self.op("Conv", inputs, scope, kernel_shape=[k, k], strides=[stride, stride], pads=[p] * 4,
                       group=groups, dilations=[1, 1])

    def conv_bn(self, x: str, scope: str, c_in: int, c_out: int, k: int, fold_bn: bool, stride: int = 1,
                groups: int = 1, gain: float = 6.0) -> str:
        """Conv2d(bias=False) + BatchNorm2d: one Conv with the folded bias, or Conv + BatchNormalization."""
        h = self.conv(x, f"{scope}.0", c_in, c_out, k, stride, groups, gain=gain, bias=fold_bn)
        if fold_bn:
            return h
        stats = [self.params(f"{scope}.1.{k}", (c_out,), lo, hi) for k, lo, hi in
                 (("weight", 0.5, 1.5), ("bias", -0.2, 0.2), ("running_mean", -0.1, 0.1), ("running_var", 0.5, 1.5))]
        return self.op("BatchNormalization", [h, *stats], f"{scope}.1", epsilon=1e-5, momentum=0.9)

    def silu(self, x: str, scope: str) -> str:
        return self.op("Mul", [x, self.op("Sigmoid", [x], scope)], scope)

    def gelu(self, x: str, scope: str) -> str:
        e = self.op("Erf", [self.op("Div", [x, self.floats(scope, math.sqrt(2.0))], scope)], scope)
        h = self.op("Mul", [x, self.op("Add", [e, self.floats(scope, 1.0)], scope)], scope)
        return self.op("Mul", [h, self.floats(scope, 0.5)], scope)

    def linear(self, x: str, scope: str, d_in: int, d_out: int, bias: bool = True, gain: float = 3.0) -> str:
        """nn.Linear on a 3-D/4-D tensor: MatMul with the [in, out] weight, Add of the bias."""
        w = self.g.weight(f"{scope}.weight", (d_in, d_out), scale=math.sqrt(gain / d_in))
        h = self.op("MatMul", [x, w], scope)
        return self.op("Add", [h, self.g.weight(f"{scope}.bias", (d_out,), scale=0.1)], scope) if bias else h

    def classifier(self, x: str, scope: str, d_in: int, classes: int) -> str:
        """Flatten then nn.Linear on 2-D: Gemm(x, W[out, in], b, transB=1), output `logits`."""
        h = self.op("Flatten", [x], scope, axis=1)
        w = self.g.weight(f"{scope}.weight", (classes, d_in))
        b = self.g.weight(f"{scope}.bias", (classes,), scale=1.0 / math.sqrt(d_in))
        return self.g.node("Gemm", [h, w, b], "logits", name=f"/{scope}/Gemm", alpha=1.0, beta=1.0, transB=1)

    def layer_norm(self, x: str, scope: str, d: int, eps: float) -> str:
        """LayerNorm over the last dim: LayerNormalization, or its ReduceMean form below opset 17."""
        w = self.params(f"{scope}.weight", (d,), 0.9, 1.1)
        b = self.params(f"{scope}.bias", (d,), -0.1, 0.1)
        if self.opset >= 17:
            return self.op("LayerNormalization", [x, w, b], scope, axis=-1, epsilon=eps)
        centred = self.op("Sub", [x, self.op("ReduceMean", [x], scope, axes=[-1], keepdims=1)], scope)
        var = self.op("ReduceMean", [self.op("Pow", [centred, self.floats(scope, 2.0)], scope)], scope,
                      axes=[-1], keepdims=1)
        std = self.op("Sqrt", [self.op("Add", [var, self.floats(scope, eps)], scope)], scope)
        return self.op("Add", [self.op("Mul", [self.op("Div", [centred, std], scope), w], scope), b], scope)

    def layer_norm_2d(self, x: str, scope: str, c: int, eps: float = 1e-6) -> str:
        """ConvNeXt's LayerNorm2d: channels-last LayerNorm between two Transposes."""
        h = self.op("Transpose", [x], scope, perm=[0, 2, 3, 1])
        return self.op("Transpose", [self.layer_norm(h, scope, c, eps)], scope, perm=[0, 3, 1, 2])

    def roll(self, x: str, scope: str, shift: int, size: int) -> str:
        """torch.roll(x, shift, dims=(1, 2)) on a square grid, as its ONNX export: per dim
        Slice(x, size - shift', end) and Slice(x, 0, size - shift') then Concat."""
        s = shift % size
        for axis in (1, 2):
            tail = self.op("Slice", [x, self.ints(scope, [size - s]), self.ints(scope, [2**63 - 1]),
                                     self.ints(scope, [axis]), self.ints(scope, [1])], scope)
            head = self.op("Slice", [x, self.ints(scope, [0]), self.ints(scope, [size - s]),
                                     self.ints(scope, [axis]), self.ints(scope, [1])], scope)
            x = self.op("Concat", [tail, head], scope, axis=axis)
        return x

    def reshape(self, x: str, scope: str, shape: Sequence[int]) -> str:
        return self.op("Reshape", [x, self.ints(scope, shape)], scope)


# ----------------------------------------------------------------------------------------
# EfficientNet-B0
# ----------------------------------------------------------------------------------------


def _divisible(v: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible: the nearest multiple of 8, at most 10% below `v`."""
    out = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * v else out


def _mbconv(n: _Net, x: str, scope: str, c_in: int, c_out: int, expand: int, k: int, stride: int,
            fold_bn: bool) -> str:
    """One MBConv: 1x1 expand + SiLU, kxk depthwise + SiLU, squeeze-and-excitation,
    1x1 projection, residual Add when the shape is kept."""
    hidden, i, h = _divisible(c_in * expand), 0, x
    if hidden != c_in:
        h, i = n.silu(n.conv_bn(h, f"{scope}.block.0", c_in, hidden, 1, fold_bn), f"{scope}.block.0.2"), 1
    h = n.conv_bn(h, f"{scope}.block.{i}", hidden, hidden, k, fold_bn, stride=stride, groups=hidden)
    h = n.silu(h, f"{scope}.block.{i}.2")
    se, squeeze = f"{scope}.block.{i + 1}", max(1, c_in // 4)
    s = n.op("GlobalAveragePool", [h], f"{se}/avgpool")
    s = n.silu(n.conv(s, f"{se}.fc1", hidden, squeeze, 1), f"{se}/activation")
    s = n.op("Sigmoid", [n.conv(s, f"{se}.fc2", squeeze, hidden, 1, gain=3.0)], f"{se}/scale_activation")
    h = n.op("Mul", [s, h], se)
    h = n.conv_bn(h, f"{scope}.block.{i + 2}", hidden, c_out, 1, fold_bn, gain=12.0)
    return n.op("Add", [h, x], scope) if stride == 1 and c_in == c_out else h


def efficientnet_b0(resolution: int = 224, width: float = 1.0, depth: float = 1.0, classes: int = 1000,
                    batch: int = 1, fold_bn: bool = True, stages: int = 7, opset: int = OPSET) -> onnx.ModelProto:
    """EfficientNet (Tan and Le 2019) as torchvision builds B0 (`width`, `depth` = 1.0) on
    x[batch, 3, resolution, resolution]: 3x3/2 stem, the first `stages` of
    EFFICIENTNET_B0_STAGES of MBConv, 1x1 conv to 4 x the last stage's channels,
    pooling, classifier (module docstring)."""
    n = _Net(seed=41, opset=opset)
    c_in = _divisible(32 * width)
    h = n.silu(n.conv_bn("x", "features.0", 3, c_in, 3, fold_bn, stride=2), "features.0.2")
    for stage, (expand, k, stride, c, blocks) in enumerate(EFFICIENTNET_B0_STAGES[:stages], start=1):
        c_out = _divisible(c * width)
        for j in range(int(math.ceil(blocks * depth))):
            h = _mbconv(n, h, f"features.{stage}.{j}", c_in, c_out, expand, k, stride if j == 0 else 1, fold_bn)
            c_in = c_out
    last = 4 * c_in
    h = n.silu(n.conv_bn(h, "features.8", c_in, last, 1, fold_bn), "features.8.2")
    n.classifier(n.op("GlobalAveragePool", [h], "avgpool"), "classifier.1", last, classes)
    return n.g.model("efficientnet_b0", {"x": [batch, 3, resolution, resolution]}, {"logits": [batch, classes]},
                     opset)


# ----------------------------------------------------------------------------------------
# ConvNeXt-Tiny
# ----------------------------------------------------------------------------------------


def _cn_block(n: _Net, x: str, scope: str, dim: int) -> str:
    """ConvNeXt block: dwconv 7x7, LayerNorm (channels last), Linear 4x, GELU, Linear,
    layer scale, residual."""
    h = n.conv(x, f"{scope}.block.0", dim, dim, 7, groups=dim, gain=3.0)
    h = n.op("Transpose", [h], f"{scope}/block/block.1", perm=[0, 2, 3, 1])
    h = n.layer_norm(h, f"{scope}.block.2", dim, 1e-6)
    h = n.gelu(n.linear(h, f"{scope}.block.3", dim, 4 * dim), f"{scope}/block/block.4")
    h = n.linear(h, f"{scope}.block.5", 4 * dim, dim)
    h = n.op("Transpose", [h], f"{scope}/block/block.6", perm=[0, 3, 1, 2])
    h = n.op("Mul", [n.params(f"{scope}.layer_scale", (dim, 1, 1), 0.1, 0.5), h], scope)
    return n.op("Add", [h, x], scope)


def convnext_tiny(resolution: int = 224, width: float = 1.0, depths: Sequence[int] = CONVNEXT_TINY_DEPTHS,
                  classes: int = 1000, batch: int = 1, opset: int = OPSET) -> onnx.ModelProto:
    """ConvNeXt (Liu et al. 2022) as torchvision builds Tiny on x[batch, 3, resolution,
    resolution]: 4x4/4 stem + LayerNorm2d, four stages of `depths` blocks with channels
    CONVNEXT_TINY_DIMS x `width`, LayerNorm2d + 2x2/2 conv between stages, pooling,
    LayerNorm2d, classifier (module docstring)."""
    n = _Net(seed=42, opset=opset)
    dims = [int(d * width) for d in CONVNEXT_TINY_DIMS]
    h = n.layer_norm_2d(n.conv("x", "features.0.0", 3, dims[0], 4, stride=4, pad=0, gain=3.0), "features.0.1",
                        dims[0])
    for stage, (dim, blocks) in enumerate(zip(dims, depths)):
        if stage:
            down = f"features.{2 * stage}"
            h = n.layer_norm_2d(h, f"{down}.0", dims[stage - 1])
            h = n.conv(h, f"{down}.1", dims[stage - 1], dim, 2, stride=2, pad=0, gain=3.0)
        for j in range(blocks):
            h = _cn_block(n, h, f"features.{2 * stage + 1}.{j}", dim)
    h = n.layer_norm_2d(n.op("GlobalAveragePool", [h], "avgpool"), "classifier.0", dims[-1])
    n.classifier(h, "classifier.2", dims[-1], classes)
    return n.g.model("convnext_tiny", {"x": [batch, 3, resolution, resolution]}, {"logits": [batch, classes]},
                     opset)


# ----------------------------------------------------------------------------------------
# Swin-T
# ----------------------------------------------------------------------------------------


def relative_position_bias(table: np.ndarray, window: int) -> np.ndarray:
    """torchvision's bias [1, heads, w*w, w*w] from a table [(2w-1)^2, heads]: entry
    (i, j) is the table row of the (dy, dx) offset between tokens i and j of a window."""
    yy, xx = np.meshgrid(np.arange(window), np.arange(window), indexing="ij")
    coords = np.stack([yy.ravel(), xx.ravel()])  # [2, w*w]
    rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + (window - 1)
    index = rel[..., 0] * (2 * window - 1) + rel[..., 1]
    return table[index.ravel()].reshape(window * window, window * window, -1).transpose(2, 0, 1)[None]


def shifted_window_mask(size: int, window: int, shift: int) -> np.ndarray:
    """torchvision's mask for shifted windows [1, nW, 1, w*w, w*w]: -100 between tokens
    that came from different regions of the rolled grid, 0 inside one."""
    regions = np.zeros((size, size), dtype=np.float32)
    spans = ((0, size - window), (size - window, size - shift), (size - shift, size))
    for r, (h0, h1) in enumerate(spans):
        for c, (w0, w1) in enumerate(spans):
            regions[h0:h1, w0:w1] = 3 * r + c
    g = size // window
    per_window = regions.reshape(g, window, g, window).transpose(0, 2, 1, 3).reshape(g * g, window * window)
    diff = per_window[:, None, :] - per_window[:, :, None]
    return np.where(diff != 0, -100.0, 0.0).astype(np.float32)[None, :, None]


def _window_attention(n: _Net, x: str, scope: str, batch: int, size: int, dim: int, heads: int, window: int,
                      shift: int) -> str:
    """Shifted-window multi-head self-attention on x [B, size, size, dim] (module docstring)."""
    g, t, d = size // window, window * window, dim // heads
    nw = batch * g * g
    h = n.roll(x, scope, -shift, size) if shift else x
    h = n.reshape(h, scope, [batch, g, window, g, window, dim])
    h = n.reshape(n.op("Transpose", [h], scope, perm=[0, 1, 3, 2, 4, 5]), scope, [nw, t, dim])
    qkv = n.reshape(n.linear(h, f"{scope}.qkv", dim, 3 * dim), scope, [nw, t, 3, heads, d])
    qkv = n.op("Transpose", [qkv], scope, perm=[2, 0, 3, 1, 4])
    q, k, v = (n.op("Gather", [qkv, n.g.const(f"/{scope}/Constant_idx{i}", np.asarray(i, dtype=np.int64))], scope,
                    axis=0) for i in range(3))
    q = n.op("Mul", [q, n.floats(scope, d ** -0.5)], scope)
    a = n.op("MatMul", [q, n.op("Transpose", [k], scope, perm=[0, 1, 3, 2])], scope)
    table = n.g.rng.normal(0.0, 0.5, ((2 * window - 1) ** 2, heads)).astype(np.float32)
    a = n.op("Add", [a, n.floats(scope, relative_position_bias(table, window))], scope)
    if shift:
        a = n.reshape(a, scope, [batch, g * g, heads, t, t])
        a = n.op("Add", [a, n.floats(scope, shifted_window_mask(size, window, shift))], scope)
        a = n.reshape(a, scope, [nw, heads, t, t])
    h = n.op("MatMul", [n.op("Softmax", [a], scope, axis=-1), v], scope)
    h = n.reshape(n.op("Transpose", [h], scope, perm=[0, 2, 1, 3]), scope, [nw, t, dim])
    h = n.reshape(n.linear(h, f"{scope}.proj", dim, dim), scope, [batch, g, g, window, window, dim])
    h = n.reshape(n.op("Transpose", [h], scope, perm=[0, 1, 3, 2, 4, 5]), scope, [batch, size, size, dim])
    return n.roll(h, scope, shift, size) if shift else h


def _swin_block(n: _Net, x: str, scope: str, batch: int, size: int, dim: int, heads: int, window: int,
                shift: int) -> str:
    """x + attn(norm1(x)), then + mlp(norm2(x)) with a 4x GELU MLP."""
    h = n.layer_norm(x, f"{scope}.norm1", dim, 1e-5)
    x = n.op("Add", [x, _window_attention(n, h, f"{scope}.attn", batch, size, dim, heads, window, shift)], scope)
    h = n.layer_norm(x, f"{scope}.norm2", dim, 1e-5)
    h = n.linear(n.gelu(n.linear(h, f"{scope}.mlp.0", dim, 4 * dim), f"{scope}/mlp/mlp.1"), f"{scope}.mlp.3",
                 4 * dim, dim)
    return n.op("Add", [x, h], scope)


def _patch_merging(n: _Net, x: str, scope: str, dim: int) -> str:
    """x[B, H, W, C] -> the four 2x2 phases concatenated, LayerNorm, Linear 4C -> 2C (no bias)."""
    parts = []
    for y0, x0 in ((0, 0), (1, 0), (0, 1), (1, 1)):
        h = x
        for axis, start in ((1, y0), (2, x0)):
            h = n.op("Slice", [h, n.ints(scope, [start]), n.ints(scope, [2**63 - 1]), n.ints(scope, [axis]),
                               n.ints(scope, [2])], scope)
        parts.append(h)
    h = n.layer_norm(n.op("Concat", parts, scope, axis=-1), f"{scope}.norm", 4 * dim, 1e-5)
    return n.linear(h, f"{scope}.reduction", 4 * dim, 2 * dim, bias=False)


def swin_t(resolution: int = 224, window: int = 7, embed_dim: int = 96, depths: Sequence[int] = SWIN_T_DEPTHS,
           head_dim: int = 32, classes: int = 1000, batch: int = 1, opset: int = OPSET) -> onnx.ModelProto:
    """Swin Transformer (Liu et al. 2021) as torchvision builds Swin-T on x[batch, 3,
    resolution, resolution]: 4x4/4 patch embedding + LayerNorm, four stages of `depths`
    blocks (every second one shifted by window // 2) with embed_dim x 2^i channels in
    heads of `head_dim`, patch merging between stages, the head (module docstring)."""
    if resolution % (4 * 2 ** (len(depths) - 1) * window):
        raise ValueError(f"resolution {resolution}: the last stage's grid is not a multiple of window {window}")
    n = _Net(seed=43, opset=opset)
    h = n.conv("x", "features.0.0", 3, embed_dim, 4, stride=4, pad=0, gain=3.0)
    h = n.layer_norm(n.op("Transpose", [h], "features.0.1", perm=[0, 2, 3, 1]), "features.0.2", embed_dim, 1e-5)
    size, dim = resolution // 4, embed_dim
    for stage, blocks in enumerate(depths):
        if stage:
            h, size, dim = _patch_merging(n, h, f"features.{2 * stage}", dim), size // 2, 2 * dim
        for j in range(blocks):
            shift = window // 2 if j % 2 and window < size else 0
            h = _swin_block(n, h, f"features.{2 * stage + 1}.{j}", batch, size, dim, dim // head_dim, window, shift)
    h = n.op("Transpose", [n.layer_norm(h, "norm", dim, 1e-5)], "permute", perm=[0, 3, 1, 2])
    n.classifier(n.op("GlobalAveragePool", [h], "avgpool"), "head", dim, classes)
    return n.g.model("swin_t", {"x": [batch, 3, resolution, resolution]}, {"logits": [batch, classes]}, opset)

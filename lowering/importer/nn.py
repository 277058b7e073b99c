"""ONNX converters for neural-network and reduction ops: Gemm, MatMul, Conv, ConvTranspose,
MaxPool, AveragePool, LpPool and the global pools, Softmax, LayerNormalization,
InstanceNormalization, LpNormalization, BatchNormalization, LRN, the Reduce* ops, CumSum,
ArgMax/ArgMin, OneHot, TopK and Hardmax.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import (
    TensorType,
)
from xdsl.ir import Attribute, SSAValue

from lowering.importer.base import (
    Converter,
    NodeContext,
    NodeError,
    Output,
    Tensor,
    axes_arg,
    constant_indices,
    converter,
    f32_tensor,
    node_float,
    norm_axes,
    norm_axis,
    prod_of,
    statistics_in_f32,
    window_pads,
)
from lowering.importer.elementwise import eltwise
from lowering.importer.indexing import maxpool_with_indices
from lowering.importer.scans import first_extreme, running_sum
from npu_dialects.dtypes import element_type
from npu_dialects.graph import (
    AbsOp,
    AddOp,
    AvgPoolOp,
    BatchNormOp,
    ConcatOp,
    Conv2dOp,
    ConvTransposeOp,
    DivOp,
    EqualOp,
    GemmOp,
    LayerNormOp,
    LessOp,
    LrnOp,
    MatMulOp,
    MaxPoolNdOp,
    MaxPoolOp,
    MulOp,
    PadOp,
    PowOp,
    ReciprocalOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceOp,
    ReduceSumOp,
    ReshapeOp,
    SliceOp,
    SoftmaxOp,
    SqrtOp,
    SubOp,
    WhereOp,
    broadcast_shapes,
    conv_out_shape,
    conv_transpose_out_shape,
    matmul_shape,
    pool_out_shape,
    shape_of,
)

# --------------------------------------------------------------------------------------
# Converters: one per ONNX op type
# --------------------------------------------------------------------------------------


@converter("Gemm", attrs=("alpha", "beta", "transA", "transB"))
def convert_gemm(ctx: NodeContext) -> Sequence[Output]:
    """Y = alpha * op(A) @ op(B) + beta * C, C broadcast to [M, N]."""
    a, b = ctx.shape(0), ctx.shape(1)
    trans_a, trans_b = bool(ctx.attr("transA", 0)), bool(ctx.attr("transB", 0))
    if len(a) != 2 or len(b) != 2:
        raise NodeError(f"A and B must be 2-D, got {list(a)} and {list(b)}")
    m, k = (a[1], a[0]) if trans_a else a
    k2, n = (b[1], b[0]) if trans_b else b
    if k != k2:
        raise NodeError(f"inner dimensions differ: A {list(a)} (transA={int(trans_a)}) has K={k}, "
                        f"B {list(b)} (transB={int(trans_b)}) has K={k2}")
    if ctx.has_input(2) and broadcast_shapes(ctx.shape(2), (m, n)) != (m, n):
        raise NodeError(f"C of shape {list(ctx.shape(2))} does not broadcast to [{m}, {n}]")
    op = GemmOp(ctx.value(0), ctx.value(1), ctx.optional_value(2), f32_tensor((m, n)),
                alpha=float(ctx.attr("alpha", 1.0)), beta=float(ctx.attr("beta", 1.0)),
                trans_a=trans_a, trans_b=trans_b)
    return [ctx.build(op).results[0]]


@converter("MatMul")
def convert_matmul(ctx: NodeContext) -> Sequence[Output]:
    """numpy matmul semantics (batch dimensions broadcast)."""
    a, b = ctx.shape(0), ctx.shape(1)
    shape = matmul_shape(a, b)
    if shape is None:
        raise NodeError(f"shapes {list(a)} and {list(b)} do not multiply")
    return [ctx.build(MatMulOp(ctx.value(0), ctx.value(1), f32_tensor(shape))).results[0]]


@converter("Conv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def convert_conv(ctx: NodeContext) -> Sequence[Output]:
    """1-D or 2-D convolution, NC[H]W input, OI[H]W weight, optional bias; a 1-D one is
    2-D with a unit height (reshapes around it)."""
    return [build_conv(ctx, ctx.value(0), ctx.value(1), ctx.optional_value(2), node_float())]


def build_conv(ctx: NodeContext, xv: SSAValue, wv: SSAValue, bias: SSAValue | None, result: Attribute,
               **zero_points: int) -> SSAValue:
    """The node's convolution (attributes as ONNX Conv's) of input `xv`, weight `wv` and
    `bias`, with result element type `result` (i32 for an integer one, whose
    `zero_points` are `Conv2dOp`'s); 1-D is 2-D with a unit height."""
    x, w = shape_of(xv), shape_of(wv)
    if len(x) not in (3, 4) or len(w) != len(x):
        raise NodeError(f"only 1-D and 2-D convolutions are supported: input {list(x)} and weight {list(w)} "
                        "must both be 3-D or 4-D")
    n = len(x) - 2
    group = int(ctx.attr("group", 1))
    if group <= 0:
        raise NodeError(f"group={group} must be positive")
    if x[1] != w[1] * group:
        raise NodeError(f"input channels {x[1]} do not match weight ({w[1]} x group {group})")
    if w[0] % group:
        raise NodeError(f"output channels {w[0]} are not divisible by group {group}")
    kernel = ctx.ints_attr("kernel_shape", w[2:])
    if kernel != w[2:]:
        raise NodeError(f"kernel_shape {list(kernel)} does not match the weight's {list(w[2:])}")
    if bias is not None and shape_of(bias) != (w[0],):
        raise NodeError(f"bias of shape {list(shape_of(bias))} must have shape [{w[0]}]")
    strides, dilations = _ints_n(ctx, "strides", n), _ints_n(ctx, "dilations", n)
    pads = window_pads(ctx, x[2:], w[2:], strides, dilations)
    if n == 1:
        strides, dilations, pads = (1, *strides), (1, *dilations), (0, pads[0], 0, pads[1])
        x, w = (*x[:2], 1, x[2]), (*w[:2], 1, w[2])
        xv = ctx.build(ReshapeOp(xv, TensorType(element_type(xv), x))).results[0]
        wv = ctx.build(ReshapeOp(wv, TensorType(element_type(wv), w))).results[0]
    out = conv_out_shape(x, w, strides, pads, dilations, group)
    if out is None:
        raise NodeError(f"the output would be empty: input {list(x)} is smaller than the "
                        f"{'x'.join(map(str, w[2:]))} kernel (dilations {list(dilations)}, pads {list(pads)})")
    op = Conv2dOp(xv, wv, bias, TensorType(result, out), strides=strides, pads=pads, dilations=dilations,
                  group=group, **zero_points)
    y = ctx.build(op).results[0]
    return y if n == 2 else ctx.build(ReshapeOp(y, TensorType(result, (out[0], out[1], out[3])))).results[0]


def _conv_transpose_pads(ctx: NodeContext, x: Sequence[int], k: Sequence[int], s: Sequence[int],
                         d: Sequence[int], op: Sequence[int]) -> tuple[int, ...]:
    """ConvTranspose pads (begins, then ends) from `pads`, or from `output_shape` /
    `auto_pad` by the spec's formula (SAME_UPPER puts the odd unit at the end); a
    negative total extends the result with zeros at the end, as onnxruntime and ONNX's
    reference do (the formula would also shift it by half the total)."""
    n, auto_pad = len(x), ctx.attr("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise NodeError(f"unsupported attribute auto_pad={auto_pad}")
    if ctx.has_attr("output_shape") and ctx.has_attr("pads"):
        raise NodeError("pads cannot be combined with output_shape")
    if not ctx.has_attr("output_shape") and auto_pad in ("NOTSET", "VALID"):
        pads = ctx.ints_attr("pads", (0,) * (2 * n)) if auto_pad == "NOTSET" else (0,) * (2 * n)
        if len(pads) != 2 * n:
            raise NodeError(f"pads {list(pads)} must have {2 * n} values for a {n}-D window")
        return pads
    out = ctx.ints_attr("output_shape", tuple(i * si for i, si in zip(x, s)))[-n:]
    if len(out) != n:
        raise NodeError(f"output_shape {list(ctx.attr('output_shape'))} must give {n} spatial sizes")
    total = [si * (i - 1) + o + (ki - 1) * di + 1 - t for i, ki, si, di, o, t in zip(x, k, s, d, op, out)]
    upper = auto_pad == "SAME_UPPER"
    begin = [0 if t < 0 else t // 2 if upper else t - t // 2 for t in total]
    return (*begin, *(t - b for t, b in zip(total, begin)))


@converter("ConvTranspose", attrs=("auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                                   "output_shape", "pads", "strides"))
def convert_conv_transpose(ctx: NodeContext) -> Sequence[Output]:
    """Transposed convolution, 1-D or 2-D (a 1-D one as 2-D with a unit height):
    NCHW input, weight [C_in, C_out/group, kH, kW], optional bias."""
    x, w = ctx.shape(0), ctx.shape(1)
    if len(x) not in (3, 4, 5) or len(w) != len(x):
        raise NodeError(f"only 1-D, 2-D and 3-D transposed convolutions are supported: input {list(x)} and "
                        f"weight {list(w)} must both be 3-D, 4-D or 5-D")
    n = len(x) - 2
    group = int(ctx.attr("group", 1))
    if group <= 0 or x[1] % group or w[0] != x[1]:
        raise NodeError(f"weight {list(w)} must have the input's {x[1]} channels first, divisible by "
                        f"group {group}")
    if ctx.ints_attr("kernel_shape", w[2:]) != w[2:]:
        raise NodeError(f"kernel_shape {list(ctx.attr('kernel_shape'))} does not match the weight's {list(w[2:])}")
    if ctx.has_input(2) and ctx.shape(2) != (w[1] * group,):
        raise NodeError(f"bias of shape {list(ctx.shape(2))} must have shape [{w[1] * group}]")
    s, d, op = (ctx.ints_attr(a, (v,) * n) for a, v in (("strides", 1), ("dilations", 1), ("output_padding", 0)))
    for name, v in (("strides", s), ("dilations", d), ("output_padding", op)):
        if len(v) != n or any(e < (0 if name == "output_padding" else 1) for e in v):
            raise NodeError(f"{name} {list(v)} must have {n} {'non-negative' if name == 'output_padding' else 'positive'}"
                            " values")
    if any(o >= max(si, di) for o, si, di in zip(op, s, d)):
        raise NodeError(f"output_padding {list(op)} must be below the stride or the dilation")
    pads = _conv_transpose_pads(ctx, x[2:], w[2:], s, d, op)
    if n == 3:
        return [_conv_transpose_3d(ctx, s, d, op, pads, group)]
    xv, wv = ctx.value(0), ctx.value(1)
    if n == 1:  # as 2-D with a unit height
        s, d, op, pads = (1, *s), (1, *d), (0, *op), (0, pads[0], 0, pads[1])
        xv = ctx.build(ReshapeOp(xv, f32_tensor((*x[:2], 1, x[2])))).results[0]
        wv = ctx.build(ReshapeOp(wv, f32_tensor((*w[:2], 1, w[2])))).results[0]
    out = conv_transpose_out_shape(shape_of(xv), shape_of(wv), s, pads, d, op, group)
    if out is None:
        raise NodeError(f"the output would be empty (input {list(x)}, kernel {list(w[2:])}, pads {list(pads)})")
    y = ctx.build(ConvTransposeOp(xv, wv, ctx.optional_value(2), f32_tensor(out), strides=s, pads=pads,
                                  dilations=d, output_padding=op, group=group)).results[0]
    if n == 1:
        y = ctx.build(ReshapeOp(y, f32_tensor((out[0], out[1], out[3])))).results[0]
    return [y]

def _conv_transpose_3d(ctx: NodeContext, s: Sequence[int], d: Sequence[int], op: Sequence[int],
                       pads: Sequence[int], group: int) -> SSAValue:
    """A 3-D transposed convolution as 2-D ones: output depth plane o sums the 2-D
    transposed convolutions of input plane i with kernel plane k over i*s + k*d - pad = o
    (a plane nothing reaches is zeros); the planes are stacked, then the bias added."""
    x, w = ctx.shape(0), ctx.shape(1)
    xv, wv = ctx.value(0), ctx.value(1)
    depth = (x[2] - 1) * s[0] + (w[2] - 1) * d[0] + 1 + op[0] - pads[0] - pads[3]
    pads2 = (pads[1], pads[2], pads[4], pads[5])
    planes_in = [ctx.build(ReshapeOp(ctx.build(SliceOp(xv, [0, 0, i, 0, 0], [x[0], x[1], i + 1, x[3], x[4]],
                                                      [1] * 5, f32_tensor((x[0], x[1], 1, x[3], x[4])))).results[0],
                                     f32_tensor((x[0], x[1], x[3], x[4])))).results[0] for i in range(x[2])]
    kernels = [ctx.build(ReshapeOp(ctx.build(SliceOp(wv, [0, 0, k, 0, 0], [w[0], w[1], k + 1, w[3], w[4]],
                                                    [1] * 5, f32_tensor((w[0], w[1], 1, w[3], w[4])))).results[0],
                                   f32_tensor((w[0], w[1], w[3], w[4])))).results[0] for k in range(w[2])]
    plane = conv_transpose_out_shape((x[0], x[1], x[3], x[4]), (w[0], w[1], w[3], w[4]), s[1:], pads2, d[1:], op[1:],
                                     group)
    if plane is None or depth <= 0:
        raise NodeError(f"the output would be empty (input {list(x)}, kernel {list(w[2:])}, pads {list(pads)})")
    outs = []
    for o in range(depth):
        acc = None
        for i in range(x[2]):
            for k in range(w[2]):
                if i * s[0] + k * d[0] - pads[0] != o:
                    continue
                y = ctx.build(ConvTransposeOp(planes_in[i], kernels[k], None, f32_tensor(plane), strides=s[1:],
                                              pads=pads2, dilations=d[1:], output_padding=op[1:],
                                              group=group)).results[0]
                acc = y if acc is None else eltwise(ctx, AddOp, acc, y)
        if acc is None:  # (a plane only output_padding or a stride gap reaches)
            acc = ctx.const(np.zeros(plane, np.float32), "zeros")
        outs.append(ctx.build(ReshapeOp(acc, f32_tensor((plane[0], plane[1], 1, plane[2], plane[3])))).results[0])
    full = (plane[0], plane[1], depth, plane[2], plane[3])
    y = outs[0] if len(outs) == 1 else ctx.build(ConcatOp(outs, 2, f32_tensor(full))).results[0]
    if ctx.has_input(2):
        bias = ctx.build(ReshapeOp(ctx.value(2), f32_tensor((plane[1], 1, 1, 1)))).results[0]
        y = eltwise(ctx, AddOp, y, bias)
    return y


@converter("MaxPool", attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                             "storage_order", "strides"))
def convert_maxpool(ctx: NodeContext) -> Sequence[Output]:
    """Max pooling over any number of spatial dims: 2-D is `npu_graph.maxpool` (with
    its hand-written tiling), 1-D and 3-D `npu_graph.maxpool_nd`. ceil_mode=1 is extra
    end padding (see `_pool_window`), which never wins a max. A used Indices output
    (`storage_order` numbers it) takes `indexing.maxpool_with_indices` instead."""
    x = ctx.shape(0)
    kernel, strides, dilations, pads, extra = _pool_window(ctx, x)
    n = len(kernel)
    if any(p >= k for p, k in zip(pads, kernel * 2)):
        raise NodeError(f"pads {list(pads)} must be smaller than kernel_shape {list(kernel)}")
    pads = (*pads[:n], *(e + x_ for e, x_ in zip(pads[n:], extra)))
    out = _pool_out(x, kernel, strides, pads, dilations)
    if ctx.output_used(1):
        return maxpool_with_indices(ctx, kernel, strides, pads, dilations, out)
    cls = MaxPoolOp if n == 2 else MaxPoolNdOp
    xv = ctx.moved(0)
    op = cls(xv, ctx.like(xv, out), kernel=kernel, strides=strides, pads=pads, dilations=dilations)
    return [ctx.build(op).results[0]]


def _pool_window(ctx: NodeContext, x: Sequence[int]
                 ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(kernel, strides, dilations, pads, ceil-mode extra end padding) of a pooling node
    over the spatial dims of [N, C, spatial...] input `x` (one per kernel_shape value).

    ceil_mode=1 rounds the output size up: the last window may run past the (padded)
    input, which is extra end padding - unless it would start in the end padding, when
    ONNX (and onnxruntime) drop it. The extra padding is never a max and never counts
    in an average's divisor, even with count_include_pad=1."""
    kernel = ctx.ints_attr("kernel_shape", ())
    n = len(kernel)
    if n == 0 or len(x) != n + 2:
        raise NodeError(f"input {list(x)} must be [N, C] and one spatial dim per kernel_shape value "
                        f"{list(kernel)}")
    if any(k <= 0 for k in kernel):
        raise NodeError(f"kernel_shape {list(kernel)} must be positive")
    strides, dilations = _ints_n(ctx, "strides", n), _ints_n(ctx, "dilations", n)
    pads = window_pads(ctx, x[2:], kernel, strides, dilations)
    extra = [0] * n
    if int(ctx.attr("ceil_mode", 0)):
        for i in range(n):
            size, begin, k, s, d = x[2 + i], pads[i], kernel[i], strides[i], dilations[i]
            span = size + begin + pads[n + i] - ((k - 1) * d + 1)
            if span < 0 or span % s == 0:
                continue
            out = span // s + 2  # ceil
            if (out - 1) * s >= size + begin:
                continue  # the extra window would start in the end padding: ONNX drops it
            extra[i] = s - span % s
    return kernel, strides, dilations, pads, tuple(extra)


def _pool_out(x: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
              dilations: Sequence[int]) -> tuple[int, ...]:
    out = pool_out_shape(x, kernel, strides, pads, dilations)
    if out is None:
        raise NodeError(f"the output would be empty: input {list(x)} is smaller than the "
                        f"{'x'.join(map(str, kernel))} window")
    return out


@converter("Softmax", attrs=("axis",))
def convert_softmax(ctx: NodeContext) -> Sequence[Output]:
    """Softmax along `axis` (default -1) from opset 13; before 13 the input is flattened
    to 2-D at `axis` (default 1) and normalised over the second dim, which becomes
    reshape + softmax + reshape (just softmax when axis is the last dim)."""
    x = ctx.shape(0)
    r = len(x)
    if ctx.opset >= 13:
        axis = norm_axis(int(ctx.attr("axis", -1)), max(r, 1))
        return [ctx.build(SoftmaxOp(ctx.value(0), axis, f32_tensor(x))).results[0]]
    axis = int(ctx.attr("axis", 1))
    if not -r <= axis <= r:
        raise NodeError(f"axis={axis} is out of range for an input of rank {r}")
    axis = axis + r if axis < 0 else axis
    if axis == r - 1:
        return [ctx.build(SoftmaxOp(ctx.value(0), axis, f32_tensor(x))).results[0]]
    flat_type = f32_tensor((prod_of(x[:axis]), prod_of(x[axis:])))
    flat = ctx.build(ReshapeOp(ctx.value(0), flat_type)).results[0]
    y = ctx.build(SoftmaxOp(flat, 1, flat_type)).results[0]
    return [ctx.build(ReshapeOp(y, f32_tensor(x))).results[0]]


@converter("LayerNormalization", attrs=("axis", "epsilon", "stash_type"))
def convert_layer_norm(ctx: NodeContext) -> Sequence[Output]:
    """Normalisation over dims axis.. (default -1) with scale and optional bias
    (`npu_graph.layernorm`); the Mean and InvStdDev outputs, when used, are computed
    by reductions and elementwise ops of their own."""
    x = ctx.shape(0)
    axis = norm_axis(int(ctx.attr("axis", -1)), len(x))
    if int(ctx.attr("stash_type", 1)) != 1:
        raise NodeError(f"unsupported attribute stash_type={ctx.attr('stash_type')} (only float32 statistics)")
    norm = x[axis:]
    for i, what in ((1, "scale"), (2, "bias")):
        if ctx.has_input(i) and broadcast_shapes(ctx.shape(i), norm) != norm:
            raise NodeError(f"{what} of shape {list(ctx.shape(i))} does not broadcast to the normalised "
                            f"dims {list(norm)}")
    eps = float(ctx.attr("epsilon", 1e-5))
    op = LayerNormOp(ctx.value(0), ctx.value(1), ctx.optional_value(2), axis, eps, f32_tensor(x))
    outs: list[Output] = [ctx.build(op).results[0]]
    if ctx.output_used(1) or ctx.output_used(2):
        # Mean and InvStdDev (shape x[:axis] + [1, ...]) as separate ops: every op has one result.
        mean, _, var = _moments(ctx, tuple(range(axis, len(x))))
        outs += [mean, ctx.build(ReciprocalOp(_std(ctx, var, eps), f32_tensor(shape_of(var)))).results[0]]
    return outs


def _moments(ctx: NodeContext, axes: tuple[int, ...]) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(mean, x - mean, biased variance) of input 0 over `axes`, the statistics kept with
    their dims."""
    x, xv = ctx.shape(0), ctx.value(0)
    stat = f32_tensor(ReduceOp.out_shape(x, axes, True))
    mean = ctx.build(ReduceMeanOp(xv, axes, True, stat)).results[0]
    d = eltwise(ctx, SubOp, xv, mean)
    return mean, d, ctx.build(ReduceMeanOp(eltwise(ctx, MulOp, d, d), axes, True, stat)).results[0]


def _std(ctx: NodeContext, var: SSAValue, eps: float) -> SSAValue:
    """sqrt(var + eps)."""
    return ctx.build(SqrtOp(eltwise(ctx, AddOp, var, ctx.scalar(eps)), f32_tensor(shape_of(var)))).results[0]


@converter("InstanceNormalization", attrs=("epsilon",))
@statistics_in_f32
def convert_instance_norm(ctx: NodeContext) -> Sequence[Output]:
    """(x - mean) / sqrt(var + epsilon) * scale[c] + bias[c], the statistics over the
    spatial dims of each (n, c): reductions and elementwise ops."""
    x = ctx.shape(0)
    if len(x) < 3:
        raise NodeError(f"input must be N x C x D1 ..., got shape {list(x)}")
    for i, what in ((1, "scale"), (2, "bias")):
        if ctx.shape(i) != (x[1],):
            raise NodeError(f"{what} of shape {list(ctx.shape(i))} must have shape [{x[1]}]")
    _, d, var = _moments(ctx, tuple(range(2, len(x))))
    sd = _std(ctx, var, float(ctx.attr("epsilon", 1e-5)))
    per_c = f32_tensor((x[1],) + (1,) * (len(x) - 2))
    scale, bias = (ctx.build(ReshapeOp(ctx.value(i), per_c)).results[0] for i in (1, 2))
    y = eltwise(ctx, MulOp, eltwise(ctx, DivOp, d, sd), scale)
    return [eltwise(ctx, AddOp, y, bias)]


@converter("LpNormalization", attrs=("axis", "p"))
@statistics_in_f32
def convert_lp_norm(ctx: NodeContext) -> Sequence[Output]:
    """x / ||x||_p along `axis` (p 1 or 2); 0 where the norm is 0 (ONNX's reference)."""
    x = ctx.shape(0)
    axis = norm_axis(int(ctx.attr("axis", -1)), len(x))
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise NodeError(f"unsupported attribute p={p} (1 or 2)")
    xv = ctx.value(0)
    mag = eltwise(ctx, AbsOp, xv) if p == 1 else eltwise(ctx, MulOp, xv, xv)
    stat = f32_tensor(ReduceOp.out_shape(x, (axis,), True))
    norm = ctx.build(ReduceSumOp(mag, (axis,), True, stat)).results[0]
    if p == 2:
        norm = ctx.build(SqrtOp(norm, stat)).results[0]
    y = eltwise(ctx, DivOp, xv, norm)
    return [eltwise(ctx, WhereOp, eltwise(ctx, EqualOp, norm, ctx.scalar(0.0)), ctx.scalar(0.0), y)]


@converter("CumSum", attrs=("exclusive", "reverse"))
def convert_cumsum(ctx: NodeContext) -> Sequence[Output]:
    """Running sums along a constant axis (`running_sum`: a triangular matmul)."""
    x = ctx.shape(0)
    if not x:
        raise NodeError("input must have rank >= 1")
    axis = norm_axis(int(constant_indices(ctx, 1, "axis").reshape(-1)[0]), len(x))
    y = running_sum(ctx, ctx.value(0), x, axis, bool(int(ctx.attr("exclusive", 0))),
                     bool(int(ctx.attr("reverse", 0))))
    return [ctx.typed(y, ctx.dtype(0))]


def _iota(ctx: NodeContext, n: int, axis: int, rank: int) -> SSAValue:
    """The constant 0..n-1 along `axis` of a rank-`rank` tensor (size 1 elsewhere)."""
    return ctx.const(np.arange(n).reshape([n if d == axis else 1 for d in range(rank)]), "iota")


def _arg(largest: bool) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        x = ctx.shape(0)
        if not x:
            raise NodeError("input must have rank >= 1")
        axis = norm_axis(int(ctx.attr("axis", 0)), len(x))
        keep = bool(int(ctx.attr("keepdims", 1)))
        hot = first_extreme(ctx, ctx.value(0), x, axis, largest, bool(int(ctx.attr("select_last_index", 0))))
        pos = _iota(ctx, x[axis], axis, len(x))
        out = ReduceOp.out_shape(x, (axis,), keep)
        y = ctx.build(ReduceSumOp(eltwise(ctx, MulOp, hot, pos), (axis,), keep, f32_tensor(out))).results[0]
        return [ctx.typed(y, np.dtype(np.int64))]

    convert.__doc__ = (f"The index of the first (select_last_index: last) {'max' if largest else 'min'} along "
                       "`axis`: the one-hot of `first_extreme` times the positions, summed (an int64 carried "
                       "as f32).")
    return convert


converter("ArgMax", attrs=("axis", "keepdims", "select_last_index"))(_arg(True))
converter("ArgMin", attrs=("axis", "keepdims", "select_last_index"))(_arg(False))


@converter("OneHot", attrs=("axis",))
def convert_onehot(ctx: NodeContext) -> Sequence[Output]:
    """values[1] where the position along the new `axis` equals the index (negative ones
    count from depth), values[0] elsewhere: an equality with a constant iota and a where.
    Depth and values are constants; the indices may be computed (carried as f32)."""
    idx_shape = ctx.shape(0)
    depth = int(np.asarray(ctx.constant(1, "depth")).reshape(-1)[0])
    values = np.asarray(ctx.constant(2, "values"), np.float64).reshape(-1)
    if values.size != 2:
        raise NodeError(f"values must be an [off, on] pair, got {values.size} values")
    if depth <= 0:
        raise NodeError(f"depth {depth} must be positive")
    rank = len(idx_shape) + 1
    axis = norm_axis(int(ctx.attr("axis", -1)), rank)
    out = (*idx_shape[:axis], depth, *idx_shape[axis:])
    iv = ctx.value(0, carried=True)
    iv = eltwise(ctx, WhereOp, eltwise(ctx, LessOp, iv, ctx.scalar(0.0)),
                  eltwise(ctx, AddOp, iv, ctx.scalar(float(depth))), iv)
    iv = ctx.build(ReshapeOp(iv, f32_tensor((*idx_shape[:axis], 1, *idx_shape[axis:])))).results[0]
    pos = _iota(ctx, depth, axis, rank)
    hit = eltwise(ctx, EqualOp, iv, pos)
    y = eltwise(ctx, WhereOp, hit, ctx.scalar(float(values[1])), ctx.scalar(float(values[0])))
    if tuple(shape_of(y)) != out:
        raise NodeError(f"indices {list(idx_shape)} give a one-hot of shape {list(shape_of(y))}, not {list(out)}")
    return [ctx.typed(y, ctx.dtype(2))]


TOPK_MAX_K = 64
"""TopK builds k rounds of `first_extreme`: up to this many."""


@converter("TopK", attrs=("axis", "largest", "sorted"))
def convert_topk(ctx: NodeContext) -> Sequence[Output]:
    """The k largest (or smallest) along `axis` with their indices, in order, ties to the
    lower index: k rounds, each taking the first extreme among the positions not taken
    yet (`first_extreme` with a mask), its value and position, and masking it out (to
    -inf, or +inf) for the next. k must be constant, at most
    TOPK_MAX_K; the order is always sorted (any order is allowed when sorted=0)."""
    x = ctx.shape(0)
    if not x:
        raise NodeError("input must have rank >= 1")
    axis = norm_axis(int(ctx.attr("axis", -1)), len(x))
    k = int(np.asarray(ctx.constant(1, "k")).reshape(-1)[0])
    if not 1 <= k <= min(x[axis], TOPK_MAX_K):
        raise NodeError(f"k={k} must be in 1..{min(x[axis], TOPK_MAX_K)} (dim {axis} has {x[axis]}; at most "
                        f"{TOPK_MAX_K} rounds)")
    largest = bool(int(ctx.attr("largest", 1)))
    pos = _iota(ctx, x[axis], axis, len(x))
    stat = f32_tensor(ReduceOp.out_shape(x, (axis,), True))
    xv = cur = ctx.value(0)
    masked = ctx.scalar(-np.inf if largest else np.inf)
    free: SSAValue | None = None  # 1.0 where not taken yet (a real -inf ties with the mask)
    values, indices = [], []
    for _ in range(k):
        hot = first_extreme(ctx, cur, x, axis, largest, False, free)
        picked = eltwise(ctx, WhereOp, hot, xv, ctx.scalar(0.0))  # (not hot * x: inf * 0 is NaN)
        values.append(ctx.build(ReduceSumOp(picked, (axis,), True, stat)).results[0])
        indices.append(ctx.build(ReduceSumOp(eltwise(ctx, MulOp, hot, pos), (axis,), True, stat)).results[0])
        cur = eltwise(ctx, WhereOp, hot, masked, cur)
        free = eltwise(ctx, SubOp, ctx.scalar(1.0) if free is None else free, hot)
    out = f32_tensor(tuple(k if d == axis else n for d, n in enumerate(x)))
    vals = values[0] if k == 1 else ctx.build(ConcatOp(values, axis, out)).results[0]
    idx = indices[0] if k == 1 else ctx.build(ConcatOp(indices, axis, out)).results[0]
    return [ctx.typed(vals, ctx.dtype(0)), ctx.typed(idx, np.dtype(np.int64))]


@converter("Hardmax", attrs=("axis",))
def convert_hardmax(ctx: NodeContext) -> Sequence[Output]:
    """1.0 at the first max along `axis`, 0.0 elsewhere (`first_extreme`); before opset
    13 the input is viewed as 2-D at `axis` first, as ONNX did."""
    x = ctx.shape(0)
    if not x:
        raise NodeError("input must have rank >= 1")
    axis = norm_axis(int(ctx.attr("axis", -1 if ctx.opset >= 13 else 1)), len(x))
    if ctx.opset >= 13:
        return [first_extreme(ctx, ctx.value(0), x, axis, True, False)]
    flat = (int(np.prod(x[:axis], dtype=np.int64)), int(np.prod(x[axis:], dtype=np.int64)))
    v = ctx.build(ReshapeOp(ctx.value(0), f32_tensor(flat))).results[0]
    hot = first_extreme(ctx, v, flat, 1, True, False)
    return [ctx.build(ReshapeOp(hot, f32_tensor(x))).results[0]]


@converter("BatchNormalization", attrs=("epsilon", "momentum", "spatial", "training_mode"))
def convert_batchnorm(ctx: NodeContext) -> Sequence[Output]:
    """Batch normalisation over dim 1 (`npu_graph.batchnorm`). In training mode
    (opset 14 on) it normalises with the batch statistics - the mean and the (biased)
    variance over every dim but 1, as `npu_graph.reduce_mean`s - and its optional
    outputs are the running statistics input * momentum + batch * (1 - momentum).
    spatial=0 and the statistics outputs of older opsets are not supported."""
    x = ctx.shape(0)
    if len(x) < 2:
        raise NodeError(f"input must have a channel dim 1, got shape {list(x)}")
    if not int(ctx.attr("spatial", 1)):
        raise NodeError("unsupported attribute spatial=0")
    for i, what in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")):
        if ctx.shape(i) != (x[1],):
            raise NodeError(f"{what} of shape {list(ctx.shape(i))} must have shape [{x[1]}]")
    eps = float(ctx.attr("epsilon", 1e-5))
    if not int(ctx.attr("training_mode", 0)):
        op = BatchNormOp(ctx.value(0), ctx.value(1), ctx.value(2), ctx.value(3), ctx.value(4), eps, f32_tensor(x))
        return [ctx.build(op).results[0]]
    xv, c = ctx.value(0), f32_tensor((x[1],))
    mean, _, var = _moments(ctx, (0, *range(2, len(x))))
    mean, var = (ctx.build(ReshapeOp(v, c)).results[0] for v in (mean, var))
    y = ctx.build(BatchNormOp(xv, ctx.value(1), ctx.value(2), mean, var, eps, f32_tensor(x))).results[0]
    outs: list[Output] = [y]
    if ctx.output_used(1) or ctx.output_used(2):
        momentum = float(ctx.attr("momentum", 0.9))
        for i, batch in ((3, mean), (4, var)):
            running = eltwise(ctx, MulOp, ctx.value(i), ctx.scalar(momentum))
            outs.append(eltwise(ctx, AddOp, running, eltwise(ctx, MulOp, batch, ctx.scalar(1.0 - momentum))))
    return outs


def _reduce(op_class: type[ReduceOp], input_since: int) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        x = ctx.shape(0)
        axes = axes_arg(ctx, input_since)
        if not axes:  # absent or empty: all dims, or none with noop_with_empty_axes (opset 13/18)
            if int(ctx.attr("noop_with_empty_axes", 0)):
                return [ctx.tensor(0)]
            axes = tuple(range(len(x)))
        axes = norm_axes(axes, max(len(x), 1)) if x else ()
        keep = bool(int(ctx.attr("keepdims", 1)))
        out = op_class.out_shape(x, axes, keep)
        if prod_of(out) == 0 or any(x[a] == 0 for a in axes):
            # The result does not depend on the input's values: an empty result, or
            # reductions of the empty set (`EMPTY`: 0, -inf, +inf).
            data = np.full(out, op_class.EMPTY, np.float32)
            return [Tensor(ctx.node.output[0], out, data.dtype, data=data, origin=ctx.label)]
        return [ctx.build(op_class(ctx.value(0), axes, keep, f32_tensor(out))).results[0]]

    convert.__doc__ = (f"`{op_class.name}`: axes are an attribute before opset {input_since}, an input "
                       "from then on; none means all dims (unless noop_with_empty_axes). A reduction "
                       "over an empty dim, or with an empty result, is constant data.")
    return convert


converter("ReduceMean", attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce(ReduceMeanOp, 18))
converter("ReduceSum", attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce(ReduceSumOp, 13))
converter("ReduceMax", attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce(ReduceMaxOp, 18))
converter("ReduceMin", attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce(ReduceMinOp, 18))


def _global_pool(op_class: type[ReduceOp]) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        x = ctx.shape(0)
        if len(x) < 3:
            raise NodeError(f"input must be [N, C, spatial...], got shape {list(x)}")
        axes = tuple(range(2, len(x)))
        out = op_class.out_shape(x, axes, True)
        return [ctx.build(op_class(ctx.value(0), axes, True, f32_tensor(out))).results[0]]

    convert.__doc__ = f"`{op_class.name}` over the spatial dims, kept as size 1."
    return convert


converter("GlobalAveragePool")(_global_pool(ReduceMeanOp))
converter("GlobalMaxPool")(_global_pool(ReduceMaxOp))


@converter("AveragePool", attrs=("auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape",
                                 "pads", "strides"))
def convert_avgpool(ctx: NodeContext) -> Sequence[Output]:
    """Average pooling over any number of spatial dims (`npu_graph.avgpool`). With
    ceil_mode=1 the extra windows read extra end padding (see `_pool_window`), which
    never counts in the divisor; when count_include_pad=1 must count the declared pads
    but not that extra padding, the declared pads become zeros of an `npu_graph.pad`
    first, and the pooling counts only what it reads from its (padded) input."""
    x = ctx.shape(0)
    kernel, strides, dilations, pads, extra = _pool_window(ctx, x)
    n = len(kernel)
    include = bool(int(ctx.attr("count_include_pad", 0)))
    v = ctx.value(0)
    if include and any(extra):
        if any(pads):
            padded = tuple(s + b + e for s, b, e in zip(x[2:], pads[:n], pads[n:]))
            full = (0, 0, *pads[:n], 0, 0, *pads[n:])
            v = ctx.build(PadOp(v, full, 0.0, f32_tensor((*x[:2], *padded)))).results[0]
        x, pads, include = shape_of(v), (0,) * (2 * n), False
    pads = (*pads[:n], *(e + x_ for e, x_ in zip(pads[n:], extra)))
    out = _pool_out(x, kernel, strides, pads, dilations)
    op = AvgPoolOp(v, f32_tensor(out), kernel=kernel, strides=strides, pads=pads, dilations=dilations,
                   count_include_pad=include)
    return [ctx.build(op).results[0]]


def _lp_order(ctx: NodeContext) -> float:
    """The `p` attribute of an Lp pooling (default 2), which must be positive."""
    p = float(ctx.attr("p", 2))
    if p <= 0:
        raise NodeError(f"p={p} must be positive")
    return p


def _powered(ctx: NodeContext, v: SSAValue, p: float) -> SSAValue:
    """|v| ** p (x * x for p = 2, |x| for p = 1)."""
    if p == 2:
        return eltwise(ctx, MulOp, v, v)
    a = eltwise(ctx, AbsOp, v)
    return a if p == 1 else eltwise(ctx, PowOp, a, ctx.scalar(p))


def _root(ctx: NodeContext, v: SSAValue, p: float) -> SSAValue:
    """v ** (1 / p) (a square root for p = 2)."""
    if p == 1:
        return v
    if p == 2:
        return ctx.build(SqrtOp(v, f32_tensor(shape_of(v)))).results[0]
    return eltwise(ctx, PowOp, v, ctx.scalar(1.0 / p))


@converter("LpPool", attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"))
@statistics_in_f32
def convert_lppool(ctx: NodeContext) -> Sequence[Output]:
    """(sum over each window of |x|^p)^(1/p): an `npu_graph.avgpool` of |x|^p counting the
    padding (zeros), times the window's size, then the root. ceil_mode's partial last
    windows read zeros padded at the end first (|0|^p adds nothing)."""
    x = ctx.shape(0)
    p = _lp_order(ctx)
    kernel, strides, dilations, pads, extra = _pool_window(ctx, x)
    n = len(kernel)
    v = _powered(ctx, ctx.value(0), p)
    if any(extra):
        x = (*x[:2], *(s + e for s, e in zip(x[2:], extra)))
        v = ctx.build(PadOp(v, (0,) * (n + 2) + (0, 0, *extra), 0.0, f32_tensor(x))).results[0]
    out = _pool_out(x, kernel, strides, pads, dilations)
    op = AvgPoolOp(v, f32_tensor(out), kernel=kernel, strides=strides, pads=pads,
                   dilations=dilations, count_include_pad=True)
    total = eltwise(ctx, MulOp, ctx.build(op).results[0], ctx.scalar(float(np.prod(kernel))))
    return [_root(ctx, total, p)]


@converter("GlobalLpPool", attrs=("p",))
@statistics_in_f32
def convert_global_lppool(ctx: NodeContext) -> Sequence[Output]:
    """(sum over the spatial dims of |x|^p)^(1/p), kept as 1s: a reduction and the root."""
    x = ctx.shape(0)
    if len(x) < 3:
        raise NodeError(f"input must be N x C x D1 ..., got shape {list(x)}")
    p = _lp_order(ctx)
    axes = tuple(range(2, len(x)))
    out = f32_tensor(ReduceOp.out_shape(x, axes, True))
    total = ctx.build(ReduceSumOp(_powered(ctx, ctx.value(0), p), axes, True, out)).results[0]
    return [_root(ctx, total, p)]


def _ints_n(ctx: NodeContext, name: str, n: int) -> tuple[int, ...]:
    """An n-value positive int attribute (strides, dilations), default all 1."""
    v = ctx.ints_attr(name, (1,) * n)
    if len(v) != n or any(x <= 0 for x in v):
        raise NodeError(f"{name} {list(v)} must have {n} positive value{'s' if n > 1 else ''}")
    return v


@converter("LRN", attrs=("alpha", "beta", "bias", "size"))
def convert_lrn(ctx: NodeContext) -> Sequence[Output]:
    """Local response normalisation across channels."""
    x = ctx.shape(0)
    if len(x) < 3:
        raise NodeError(f"input must be [N, C, ...] with rank >= 3, got shape {list(x)}")
    size = int(ctx.attr("size", 0))
    if size <= 0:
        raise NodeError(f"size={size} must be positive")
    op = LrnOp(ctx.value(0), size, float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75)),
               float(ctx.attr("bias", 1.0)), f32_tensor(x))
    return [ctx.build(op).results[0]]

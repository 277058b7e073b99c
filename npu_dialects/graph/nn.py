"""`npu_graph` cube and window ops: convolution (`Conv2dOp`, `ConvTransposeOp` and its
rewrite as phase convolutions), `GemmOp`, `MatMulOp`, local response normalization
(`LrnOp`) and pooling (`AvgPoolOp`, `SumPoolOp`, `MaxPoolNdOp`, the 2-D `MaxPoolOp`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    attr_def,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from npu_dialects.arch import Arch, value_type, widest_type
from npu_dialects.dtypes import QUANTIZED, qrange, type_name
from npu_dialects.graph.base import (
    FORMAT,
    ConstantOp,
    Follow,
    GraphOp,
    StructuredOp,
    TileMap,
    attr_bool,
    attr_float,
    attr_int,
    attr_ints,
    broadcast_shapes,
    check_any_one_type,
    check_cube_types,
    check_f32,
    check_float_product,
    check_lengths_and_signs,
    check_window_params,
    f32_tensor,
    int_array,
    ints,
    matmul_dims,
    matmul_shape,
    same_dims,
    shape_of,
    type_of,
    zero_point_attrs,
    zero_points_of,
)
from npu_dialects.graph.elementwise import AddOp
from npu_dialects.graph.refs import (
    POOL_PAD,
    conv2d_int_ref,
    conv2d_ref,
    conv_transpose_ref,
    gemm_ref,
    in_f32,
    matmul_int_ref,
    pool_out_shape,
    pool_ref,
)
from npu_dialects.graph.tensor import GatherOp, PadOp, ReshapeOp, SliceOp, TransposeOp


@irdl_op_definition
class Conv2dOp(GraphOp):
    """2-D convolution, NCHW input, OIHW weight, optional bias (ONNX Conv)."""

    name = "npu_graph.conv2d"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = opt_attr_def(DenseArrayBase)
    pads = opt_attr_def(DenseArrayBase)  # top, left, bottom, right
    dilations = opt_attr_def(DenseArrayBase)
    group = opt_attr_def(IntegerAttr)
    input_zero_point = opt_attr_def(IntegerAttr)
    weight_zero_point = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, w: SSAValue, b: SSAValue | None, result_type: TensorType, *,
                 strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
                 dilations: Sequence[int] = (1, 1), group: int = 1, input_zero_point: int | None = None,
                 weight_zero_point: int | None = None):
        super().__init__(operands=[x, w, b], result_types=[result_type], attributes={
            "strides": int_array(strides), "pads": int_array(pads),
            "dilations": int_array(dilations), "group": IntegerAttr(group, i64),
            **zero_point_attrs(input_zero_point, weight_zero_point)})

    @property
    def zero_points(self) -> tuple[int, int]:
        """(input, weight) zero points of an integer convolution (0 when not given)."""
        return zero_points_of(self)

    def check_element_types(self) -> None:
        """Float: one float type. Integer: i8/ui8 input and weight, i32 bias and result."""
        check_cube_types(self, self.input, self.weight, self.bias)

    @property
    def params(self) -> dict:
        return dict(strides=ints(self.strides, (1, 1)), pads=ints(self.pads, (0, 0, 0, 0)),
                    dilations=ints(self.dilations, (1, 1)),
                    group=self.group.value.data if self.group is not None else 1)

    def with_operands(self, x: SSAValue, w: SSAValue, b: SSAValue | None,
                      result_type: TensorType | None = None) -> Conv2dOp:
        """The same convolution (strides, pads, dilations, group) of other operands."""
        zx, zw = (self.input_zero_point, self.weight_zero_point)
        op = Conv2dOp(x, w, b, result_type or self.result.type, **self.params)  # type: ignore[arg-type]
        op.attributes.update({k: v for k, v in (("input_zero_point", zx), ("weight_zero_point", zw)) if v})
        return op

    def infer_shape(self) -> tuple[int, ...] | None:
        return conv_out_shape(shape_of(self.input), shape_of(self.weight), **self.params)

    def verify_(self) -> None:
        x, w = shape_of(self.input), shape_of(self.weight)
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(f"'npu_graph.conv2d': input and weight must be 4-D, got {list(x)} and {list(w)}")
        p = self.params
        check_window_params(self.name, x, p)
        if p["group"] <= 0 or w[0] % p["group"]:
            raise VerifyException(f"'npu_graph.conv2d': group {p['group']} must be positive and divide "
                                  f"the {w[0]} output channels")
        if x[1] != w[1] * p["group"]:
            raise VerifyException(f"'npu_graph.conv2d': input has {x[1]} channels but weight expects "
                                  f"{w[1]} x group {p['group']}")
        if self.bias is not None and shape_of(self.bias) != (w[0],):
            raise VerifyException(f"'npu_graph.conv2d': bias must have shape [{w[0]}]")
        self._expect_result_shape(self.infer_shape(), "convolution")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """The cube: per group an [n*oh*ow, ci*kh*kw] @ [ci*kh*kw, co/group] product;
        a bias is one vector pass over the result."""
        o = tuple(shape_of(self.result) if out_shape is None else out_shape)
        w, g = shape_of(self.weight), self.params["group"]
        cube = arch.cube_cycles(o[0] * o[2] * o[3], w[1] * w[2] * w[3], w[0] // g, batch=g,
                                dtype=value_type(self.input))
        if self.bias is None:
            return cube
        return cube + arch.vector_cycles(math.prod(o), dtype=widest_type((self.bias, self.result)))

    def macs(self) -> int:
        n, co, oh, ow = shape_of(self.result)
        _, cig, kh, kw = shape_of(self.weight)
        return n * co * oh * ow * cig * kh * kw

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        if type_name(type_of(self.input)) in QUANTIZED:
            zx, zw = self.zero_points
            return (conv2d_int_ref(*inputs, x_zero_point=zx, w_zero_point=zw, **self.params),)
        return (in_f32(lambda *a: conv2d_ref(*a, **self.params), inputs),)


def conv_out_shape(x: Sequence[int], w: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                   dilations: Sequence[int], group: int = 1) -> tuple[int, ...] | None:
    oh = (x[2] + pads[0] + pads[2] - (w[2] - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (x[3] + pads[1] + pads[3] - (w[3] - 1) * dilations[1] - 1) // strides[1] + 1
    if oh <= 0 or ow <= 0:
        return None
    return (x[0], w[0], oh, ow)


@irdl_op_definition
class ConvTransposeOp(GraphOp):
    """2-D transposed convolution (ONNX ConvTranspose): NCHW input, weight [C_in,
    C_out/group, kH, kW], optional bias [C_out]; `pads` (top, left, bottom, right)
    crop the full result, `output_padding` extends its bottom/right.

    It decomposes (`decompose`, applied by `npu-canonicalize`) into one cube
    convolution over all stride phases plus a pixel shuffle: output row
    s*a + r - pad only takes kernel taps k with k*d = r (mod s), so phase r is a
    stride-1 convolution with the sub-kernel of those taps (Q + 1 = d*(k-1)//s + 1
    taps, zero where a phase has fewer). The phases' sub-kernels stack as output
    channels of one `npu_graph.conv2d`; reshape-transpose-reshape interleaves them
    and a slice crops. The weight rearrangement is graph ops on the weight
    (reshape, pad, gather, transpose), which `npu-constant-fold` folds."""

    name = "npu_graph.conv_transpose"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    strides = attr_def(DenseArrayBase)
    pads = attr_def(DenseArrayBase)  # top, left, bottom, right
    dilations = attr_def(DenseArrayBase)
    output_padding = attr_def(DenseArrayBase)
    group = attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, w: SSAValue, b: SSAValue | None, result_type: TensorType, *,
                 strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
                 dilations: Sequence[int] = (1, 1), output_padding: Sequence[int] = (0, 0), group: int = 1):
        super().__init__(operands=[x, w, b], result_types=[result_type], attributes={
            "strides": int_array(strides), "pads": int_array(pads), "dilations": int_array(dilations),
            "output_padding": int_array(output_padding), "group": IntegerAttr(group, i64)})

    @property
    def params(self) -> dict:
        return dict(strides=ints(self.strides, ()), pads=ints(self.pads, ()), dilations=ints(self.dilations, ()),
                    output_padding=ints(self.output_padding, ()), group=self.group.value.data)

    def infer_shape(self) -> tuple[int, ...] | None:
        return conv_transpose_out_shape(shape_of(self.input), shape_of(self.weight), **self.params)

    def verify_(self) -> None:
        check_f32(self)
        x, w, p = shape_of(self.input), shape_of(self.weight), self.params
        if len(x) != 4 or len(w) != 4:
            raise VerifyException(f"'{self.name}': input and weight must be 4-D, got {list(x)} and {list(w)}")
        check_window_params(self.name, x, p, crop=True)
        op, s, d = p["output_padding"], p["strides"], p["dilations"]
        if len(op) != 2 or any(not 0 <= o < max(si, di) for o, si, di in zip(op, s, d)):
            raise VerifyException(f"'{self.name}': output_padding {list(op)} must have 2 values, each "
                                  f"below its stride or dilation")
        if p["group"] <= 0 or x[1] % p["group"] or w[0] != x[1]:
            raise VerifyException(f"'{self.name}': weight {list(w)} must have the input's {x[1]} channels "
                                  f"first, a multiple of group {p['group']}")
        if self.bias is not None and shape_of(self.bias) != (w[1] * p["group"],):
            raise VerifyException(f"'{self.name}': bias must have shape [{w[1] * p['group']}]")
        self._expect_result_shape(self.infer_shape(), "transposed convolution")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """The direct form on the cube: per group an [n*h*w, ci] @ [ci, co*kh*kw] product
        (the decomposed convolution does the same work plus any phase padding)."""
        x, w, g = shape_of(self.input), shape_of(self.weight), self.params["group"]
        return arch.cube_cycles(x[0] * x[2] * x[3], w[0] // g, w[1] * w[2] * w[3], batch=g,
                                dtype=value_type(self.input))

    def macs(self) -> int:
        x, w = shape_of(self.input), shape_of(self.weight)
        return x[0] * x[2] * x[3] * w[0] * w[1] * w[2] * w[3]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (in_f32(lambda *a: conv_transpose_ref(*a, **self.params), inputs),)

    def decompose(self) -> tuple[list[Operation], list[SSAValue]] | None:
        return conv_transpose_as_conv(self)


def conv_transpose_out_shape(x: Sequence[int], w: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                             dilations: Sequence[int], output_padding: Sequence[int],
                             group: int = 1) -> tuple[int, ...] | None:
    """ONNX: out = s * (in - 1) + output_padding + (k - 1) * d + 1 - pad_begin - pad_end."""
    if len(x) != 4 or len(w) != 4 or len(strides) != 2 or len(pads) != 4 or len(output_padding) != 2:
        return None
    out = tuple(s * (i - 1) + o + (k - 1) * d + 1 - pb - pe for i, k, s, d, o, pb, pe in
                zip(x[2:], w[2:], strides, dilations, output_padding, pads[:2], pads[2:]))
    return (x[0], w[1] * group) + out if all(o > 0 for o in out) else None


@dataclass(frozen=True)
class _Phases:
    """One spatial dim of a transposed convolution as a stride-1 convolution per phase:
    `taps[r][j]` is the kernel tap phase r uses at sub-kernel position j (or k, the
    zero tap); the convolution pads (`begin`, `end`); `A` positions per phase; the
    interleaved result is cropped from `start`."""

    taps: tuple[tuple[int, ...], ...]
    begin: int
    end: int
    A: int
    start: int

    @staticmethod
    def of(n_in: int, k: int, s: int, d: int, pad_begin: int, n_out: int) -> _Phases:
        q = d * (k - 1) // s
        taps = tuple(tuple((s * (q - j) + r) // d if (s * (q - j) + r) % d == 0 and (s * (q - j) + r) // d < k
                           else k for j in range(q + 1)) for r in range(s))
        shift = min(pad_begin // s, q)  # phase positions before the crop that need no computing
        begin, start = q - shift, pad_begin - s * shift
        end = max(0, -(-(start + n_out) // s) - n_in + shift)
        return _Phases(taps, begin, end, n_in + begin + end - q, start)


def conv_transpose_as_conv(op: ConvTransposeOp) -> tuple[list[Operation], list[SSAValue]]:
    """`ConvTransposeOp.decompose`: the phase convolution and the pixel shuffle (see the op)."""
    x, w, p = shape_of(op.input), shape_of(op.weight), op.params
    n, out = x[0], shape_of(op.result)
    g, co = p["group"], out[1]
    cig, cog, (kh, kw), (sh, sw) = x[1] // g, w[1], w[2:], p["strides"]
    ph, pw = (_Phases.of(x[2 + i], w[2 + i], p["strides"][i], p["dilations"][i], p["pads"][i], out[2 + i])
              for i in range(2))
    qh, qw = len(ph.taps[0]), len(pw.taps[0])
    ops: list[Operation] = []

    def add(o: Operation) -> SSAValue:
        ops.append(o)
        return o.results[0]

    def const(values: np.ndarray) -> SSAValue:
        t = TensorType(Float32Type(), values.shape)
        return add(ConstantOp(t, value=DenseIntOrFPElementsAttr.from_list(t, values.astype(np.float32).ravel().tolist())))

    # weight [ci, cog, kh, kw] -> [g * cog * sh * sw, cig, qh, qw]: the phases' sub-kernels, zero tap last
    flat = add(ReshapeOp(op.weight, f32_tensor((x[1], cog, kh * kw))))
    flat = add(PadOp(flat, (0, 0, 0, 0, 0, 1), 0.0, f32_tensor((x[1], cog, kh * kw + 1))))
    idx = np.array([[[[th * kw + tw if th < kh and tw < kw else kh * kw for tw in rw_taps] for th in rh_taps]
                     for rw_taps in pw.taps] for rh_taps in ph.taps])  # [sh, sw, qh, qw]
    sub = add(GatherOp(flat, const(idx), 2, f32_tensor((x[1], cog, sh, sw, qh, qw))))
    sub = add(ReshapeOp(sub, f32_tensor((g, cig, cog, sh, sw, qh, qw))))
    sub = add(TransposeOp(sub, (0, 2, 3, 4, 1, 5, 6), f32_tensor((g, cog, sh, sw, cig, qh, qw))))
    sub = add(ReshapeOp(sub, f32_tensor((g * cog * sh * sw, cig, qh, qw))))
    bias = None
    if op.bias is not None:  # every phase of a channel adds its bias
        col = add(ReshapeOp(op.bias, f32_tensor((co, 1))))
        bias = add(AddOp(col, const(np.zeros((1, sh * sw))), f32_tensor((co, sh * sw))))
        bias = add(ReshapeOp(bias, f32_tensor((co * sh * sw,))))
    y = add(Conv2dOp(op.input, sub, bias, f32_tensor((n, co * sh * sw, ph.A, pw.A)),
                     pads=(ph.begin, pw.begin, ph.end, pw.end), group=g))
    y = add(ReshapeOp(y, f32_tensor((n, co, sh, sw, ph.A, pw.A))))
    y = add(TransposeOp(y, (0, 1, 4, 2, 5, 3), f32_tensor((n, co, ph.A, sh, pw.A, sw))))
    y = add(ReshapeOp(y, f32_tensor((n, co, ph.A * sh, pw.A * sw))))
    if (ph.start, pw.start, ph.A * sh, pw.A * sw) != (0, 0, out[2], out[3]):
        y = add(SliceOp(y, (0, 0, ph.start, pw.start), (n, co, ph.start + out[2], pw.start + out[3]), (1, 1, 1, 1),
                        f32_tensor(out)))
    return ops, [y]


@irdl_op_definition
class GemmOp(GraphOp):
    """ONNX Gemm: alpha * op(A) @ op(B) + beta * C (C broadcast to [M, N])."""

    name = "npu_graph.gemm"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = opt_operand_def(TensorType)
    alpha = opt_attr_def(FloatAttr)
    beta = opt_attr_def(FloatAttr)
    trans_a = opt_attr_def(BoolAttr)
    trans_b = opt_attr_def(BoolAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue | None, result_type: TensorType, *,
                 alpha: float = 1.0, beta: float = 1.0, trans_a: bool = False, trans_b: bool = False):
        attrs: dict[str, Attribute] = {}
        if alpha != 1.0:
            attrs["alpha"] = FloatAttr(alpha, Float32Type())
        if beta != 1.0:
            attrs["beta"] = FloatAttr(beta, Float32Type())
        if trans_a:
            attrs["trans_a"] = BoolAttr.from_bool(True)
        if trans_b:
            attrs["trans_b"] = BoolAttr.from_bool(True)
        super().__init__(operands=[a, b, c], result_types=[result_type], attributes=attrs)

    @property
    def params(self) -> dict:
        return dict(alpha=self.alpha.value.data if self.alpha else 1.0,
                    beta=self.beta.value.data if self.beta else 1.0,
                    trans_a=bool(self.trans_a and self.trans_a.value.data),
                    trans_b=bool(self.trans_b and self.trans_b.value.data))

    def mkn(self) -> tuple[int, int, int]:
        a, b, p = shape_of(self.a), shape_of(self.b), self.params
        m, k = (a[1], a[0]) if p["trans_a"] else a
        k2, n = (b[1], b[0]) if p["trans_b"] else b
        if k != k2:
            raise VerifyException(f"'npu_graph.gemm': inner dimensions differ ({k} vs {k2})")
        return m, k, n

    def check_element_types(self) -> None:
        check_float_product(self, self.a, self.b, self.c)

    def verify_(self) -> None:
        if len(shape_of(self.a)) != 2 or len(shape_of(self.b)) != 2:
            raise VerifyException(f"'npu_graph.gemm': A and B must be 2-D, got {list(shape_of(self.a))} "
                                  f"and {list(shape_of(self.b))}")
        m, _, n = self.mkn()
        if self.c is not None and broadcast_shapes(shape_of(self.c), (m, n)) != (m, n):
            raise VerifyException(f"'npu_graph.gemm': C of shape {list(shape_of(self.c))} does not "
                                  f"broadcast to [{m}, {n}]")
        self._expect_result_shape((m, n), "gemm")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """The cube ([m, k] @ [k, n]); the bias C is one vector pass over the result."""
        p = self.params
        batch, m, k, n = matmul_dims(shape_of(self.a), shape_of(self.b), p["trans_a"], p["trans_b"])
        bias = 0 if self.c is None else arch.vector_cycles(self.out_elements(),
                                                            dtype=widest_type((self.c, self.result)))
        return arch.cube_cycles(m, k, n, batch, dtype=value_type(self.a)) + bias

    def macs(self) -> int:
        m, k, n = self.mkn()
        return m * k * n

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (in_f32(lambda *a: gemm_ref(*a, **self.params), inputs),)


@irdl_op_definition
class MatMulOp(GraphOp):
    """ONNX MatMul (numpy matmul semantics, batch dimensions broadcast)."""

    name = "npu_graph.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    input_zero_point = opt_attr_def(IntegerAttr)
    weight_zero_point = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType, *, input_zero_point: int | None = None,
                 weight_zero_point: int | None = None):
        super().__init__(operands=[a, b], result_types=[result_type],
                         attributes=zero_point_attrs(input_zero_point, weight_zero_point))

    @property
    def zero_points(self) -> tuple[int, int]:
        """(a, b) zero points of an integer matmul (0 when not given)."""
        return zero_points_of(self)

    def check_element_types(self) -> None:
        """Float: one float type. Integer: i8/ui8 a and b, i32 result."""
        check_cube_types(self, self.a, self.b, None)

    def verify_(self) -> None:
        a, b = shape_of(self.a), shape_of(self.b)
        shape = matmul_shape(a, b)
        if shape is None:
            raise VerifyException(f"'npu_graph.matmul': shapes {list(a)} and {list(b)} do not multiply")
        self._expect_result_shape(shape, "matmul")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """The cube: one [m, k] @ [k, n] product per batch element."""
        batch, m, k, n = matmul_dims(shape_of(self.operands[0]), shape_of(self.operands[1]))
        return arch.cube_cycles(m, k, n, batch, dtype=value_type(self.operands[0]))

    def macs(self) -> int:
        return math.prod(shape_of(self.result)) * shape_of(self.a)[-1]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        if type_name(type_of(self.a)) in QUANTIZED:
            return (matmul_int_ref(inputs[0], inputs[1], *self.zero_points),)
        return (in_f32(np.matmul, inputs),)


@irdl_op_definition
class LrnOp(StructuredOp):
    """Local response normalisation across channels (dim 1; ONNX LRN):
    x / (bias + alpha / size * sum of x^2 over the `size` channels around)^beta.
    Channels are whole in every tile."""

    name = "npu_graph.lrn"
    input = operand_def(TensorType)
    size = attr_def(IntegerAttr)
    alpha = attr_def(FloatAttr)
    beta = attr_def(FloatAttr)
    bias = attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, size: int, alpha: float, beta: float, bias: float, result_type: TensorType):
        f = Float32Type()
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "size": IntegerAttr(size, i64), "alpha": FloatAttr(alpha, f), "beta": FloatAttr(beta, f),
            "bias": FloatAttr(bias, f)})

    VECTOR_COST: ClassVar[int] = 8  # square, windowed sum (size ~5), scale, power, divide

    def infer_shape(self) -> tuple[int, ...] | None:
        x = shape_of(self.input)
        return x if len(x) >= 3 else None

    def verify_(self) -> None:
        x = shape_of(self.input)
        if len(x) < 3:
            raise VerifyException(f"'npu_graph.lrn': input must be [N, C, ...] with rank >= 3, got {list(x)}")
        if attr_int(dict(self.attributes), "size", 1) <= 0:
            raise VerifyException(f"'npu_graph.lrn': size must be positive, got {attr_int(dict(self.attributes), 'size', 1)}")
        self._expect_result_shape(x, "lrn")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap(tuple(d != 1 for d in range(r)), (same_dims(r, whole=(1,)),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        size = attr_int(attrs, "size", 1)
        lo = (size - 1) // 2
        sq = np.pad(x * x, [(0, 0), (lo, size - 1 - lo)] + [(0, 0)] * (x.ndim - 2))
        acc = sum(sq[:, i:i + x.shape[1]] for i in range(size))
        scale = attr_float(attrs, "bias", 1.0) + attr_float(attrs, "alpha", 1e-4) / size * acc
        return x / scale ** attr_float(attrs, "beta", 0.75)


def check_pool_params(op: str, x: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                      pads: Sequence[int], dilations: Sequence[int]) -> int:
    """The number n of spatial dims of a pooling op on `x` ([N, C, spatial...]), after
    checking the lengths (kernel, strides and dilations n values, pads 2n) and signs
    (pads >= 0, the others > 0) of its window parameters."""
    n = len(kernel)
    if n == 0:
        raise VerifyException(f"'{op}': kernel needs at least one value")
    check_lengths_and_signs(op, [("kernel", kernel, n), ("strides", strides, n), ("dilations", dilations, n),
                                  ("pads", pads, 2 * n)])
    if len(x) != n + 2:
        raise VerifyException(f"'{op}': input must be [N, C] and {n} spatial dim{'s' if n > 1 else ''} "
                              f"for a {n}-D kernel, got shape {list(x)}")
    return n


def check_max_pool_pads(op: str, x: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                        pads: Sequence[int], dilations: Sequence[int]) -> None:
    """Max pooling never yields a window of padding only: begin pads are smaller than
    the kernel, and no window starts in the end padding (ceil mode's extra end padding
    is fine, as ONNX drops a last window that would start there)."""
    n = len(kernel)
    if any(p >= k for p, k in zip(pads[:n], kernel)):
        raise VerifyException(f"'{op}': begin pads {list(pads[:n])} must be smaller than the kernel {list(kernel)}")
    out = pool_out_shape(x, kernel, strides, pads, dilations)
    if out is None:
        return
    for i in range(n):
        size, begin = x[len(x) - n + i], pads[i]
        if (out[len(x) - n + i] - 1) * strides[i] >= size + begin:
            raise VerifyException(f"'{op}': pads {list(pads)}: the last window of spatial dim {i} starts in the "
                                  f"end padding")


class WindowPoolOp(StructuredOp):
    """Base of the structured pooling ops: windows over the trailing n spatial dims of
    [N, C, spatial...] (any n >= 1), computed by `pool_ref` of kind `KIND`. `pads` are
    the begin counts of the spatial dims, then the end counts. Tiles may cut every
    dim; along a spatial dim the input window follows the output tile with a halo of
    the kernel's extent, and reads outside the input are `POOL_PAD[KIND]`, so a tile
    computes with no padding of its own."""

    input = operand_def(TensorType)
    kernel = attr_def(DenseArrayBase)
    strides = attr_def(DenseArrayBase)
    pads = attr_def(DenseArrayBase)
    dilations = attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    KIND: ClassVar[str]
    VECTOR_COST: ClassVar[int] = 9  # a 3x3 window (the class constant cannot follow the kernel)

    def __init__(self, x: SSAValue, result_type: TensorType, *, kernel: Sequence[int], strides: Sequence[int],
                 pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None, **extra: Attribute):
        n = len(kernel)
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "kernel": int_array(kernel), "strides": int_array(strides),
            "pads": int_array(pads if pads is not None else (0,) * (2 * n)),
            "dilations": int_array(dilations if dilations is not None else (1,) * n), **extra})

    @property
    def params(self) -> dict:
        kernel = ints(self.kernel, ())
        n = len(kernel)
        return dict(kernel=kernel, strides=ints(self.strides, (1,) * n), pads=ints(self.pads, (0,) * (2 * n)),
                    dilations=ints(self.dilations, (1,) * n))

    def infer_shape(self) -> tuple[int, ...] | None:
        x, p = shape_of(self.input), self.params
        n = len(p["kernel"])
        if n == 0 or len(x) != n + 2 or len(p["pads"]) != 2 * n or not len(p["strides"]) == len(p["dilations"]) == n:
            return None
        return pool_out_shape(x, **p)

    def verify_(self) -> None:
        self.check_element_types()
        x, p = shape_of(self.input), self.params
        check_pool_params(self.name, x, **p)
        if self.KIND == "max":
            check_max_pool_pads(self.name, x, **p)
        self._expect_result_shape(self.infer_shape(), "pooling")

    def tile_map(self) -> TileMap:
        x, p = shape_of(self.input), self.params
        n = len(p["kernel"])
        lead = len(x) - n
        spatial = tuple(Follow(lead + i, s, -b, (k - 1) * d)
                        for i, (k, s, b, d) in enumerate(zip(p["kernel"], p["strides"], p["pads"], p["dilations"])))
        pad = POOL_PAD[self.KIND]
        if self.KIND == "max" and type_name(type_of(self.input)) in ("i8", "ui8", "i32"):
            pad = float(qrange(type_of(self.input))[0])  # (integers: the type's minimum never wins either)
        return TileMap((True,) * len(x), (same_dims(lead) + spatial,), pad_value=pad)

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        return dict(self.attributes, pads=int_array((0,) * len(ints(self.pads, ()))))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        kernel = attr_ints(attrs, "kernel", ())
        n = len(kernel)
        return pool_ref(arrays[0], cls.KIND, kernel, attr_ints(attrs, "strides", (1,) * n),
                        attr_ints(attrs, "pads", (0,) * (2 * n)), attr_ints(attrs, "dilations", (1,) * n),
                        attr_bool(attrs, "count_include_pad", False))


@irdl_op_definition
class AvgPoolOp(WindowPoolOp):
    """Average pooling over the spatial dims of [N, C, spatial...], any number of them
    (ONNX AveragePool); `count_include_pad` says whether padded positions count in the
    divisor. Tiles read their windows with halos; reads outside the input are NaN,
    which marks them as padding."""

    name = "npu_graph.avgpool"
    count_include_pad = attr_def(BoolAttr)
    KIND: ClassVar[str] = "avg"

    def __init__(self, x: SSAValue, result_type: TensorType, *, kernel: Sequence[int], strides: Sequence[int],
                 pads: Sequence[int] | None = None, dilations: Sequence[int] | None = None,
                 count_include_pad: bool = False):
        super().__init__(x, result_type, kernel=kernel, strides=strides, pads=pads, dilations=dilations,
                         count_include_pad=BoolAttr.from_bool(count_include_pad))


@irdl_op_definition
class SumPoolOp(WindowPoolOp):
    """Sum over the windows of [N, C, spatial...] (reads outside the input add 0): an
    average pool leaving its padding out of the divisor is sumpool / (the count of each
    window's positions inside), the same float32 values, when its input cannot mark
    padding with NaN (npu-fuse-qdq: a dequantized 8-bit tensor)."""

    name = "npu_graph.sumpool"
    KIND: ClassVar[str] = "sum"


@irdl_op_definition
class MaxPoolNdOp(WindowPoolOp):
    """Max pooling over the spatial dims of [N, C, spatial...], any number of them, as a
    structured op (1-D and 3-D ONNX MaxPool; the 2-D case is `npu_graph.maxpool`, which
    has a hand-written tiling). Reads outside the input are -inf: padding never wins."""

    name = "npu_graph.maxpool_nd"
    KIND: ClassVar[str] = "max"

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)


@irdl_op_definition
class MaxPoolOp(GraphOp):
    """2-D max pooling over NCHW (`pool_ref` of kind "max"); padded positions never win.
    It has a hand-written tiling (`lowering/tile/anchors.py`); other spatial ranks are
    `npu_graph.maxpool_nd`."""

    name = "npu_graph.maxpool"
    input = operand_def(TensorType)
    kernel = opt_attr_def(DenseArrayBase)
    strides = opt_attr_def(DenseArrayBase)
    pads = opt_attr_def(DenseArrayBase)
    dilations = opt_attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, result_type: TensorType, *, kernel: Sequence[int],
                 strides: Sequence[int], pads: Sequence[int] = (0, 0, 0, 0),
                 dilations: Sequence[int] = (1, 1)):
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "kernel": int_array(kernel), "strides": int_array(strides), "pads": int_array(pads),
            "dilations": int_array(dilations)})

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    @property
    def params(self) -> dict:
        return dict(kernel=ints(self.kernel, (1, 1)), strides=ints(self.strides, (1, 1)),
                    pads=ints(self.pads, (0, 0, 0, 0)), dilations=ints(self.dilations, (1, 1)))

    def verify_(self) -> None:
        x, p = shape_of(self.input), self.params
        check_window_params(self.name, x, p, "kernel")
        check_max_pool_pads(self.name, x, **p)
        self._expect_result_shape(pool_out_shape(x, **p), "pooling")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """One vector pass per window element over the result."""
        kh, kw = self.params["kernel"]
        return arch.vector_cycles(self.out_elements(out_shape), kh * kw, value_type(self.input))

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (pool_ref(inputs[0], "max", **self.params),)

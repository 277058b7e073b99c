"""`npu_graph`: tensor-level ops with value semantics, what the ONNX importer maps onto.

Each op carries the location of the ONNX node it came from and its numpy
reference semantics (`evaluate`), so constant folding, the float64 reference
and the simulator's tile kernels share one definition of what an op computes.
The pure functions (`conv2d_ref`, `gemm_ref`, `pool_ref`, `ELEMENTWISE`) are
what the simulator calls on tiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    BoolAttr,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    opt_attr_def,
    opt_operand_def,
    operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsTerminator, NoMemoryEffect, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

# --------------------------------------------------------------------------------------
# Reference semantics (numpy). Inputs are float arrays; outputs keep the input dtype.
# --------------------------------------------------------------------------------------


def _pad_nchw(x: np.ndarray, pads: Sequence[int], value: float) -> np.ndarray:
    t, l, b, r = pads
    if not any(pads):
        return x
    return np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=value)


def _windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int],
             dilations: Sequence[int]) -> np.ndarray:
    """[N, C, OH, OW, KH, KW] strided view of the sliding windows of an NCHW array."""
    kh, kw = kernel
    dh, dw = dilations
    sh, sw = strides
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    v = np.lib.stride_tricks.sliding_window_view(x, (eh, ew), axis=(2, 3))
    return v[:, :, ::sh, ::sw, ::dh, ::dw]


def conv2d_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
               strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
               dilations: Sequence[int] = (1, 1), group: int = 1) -> np.ndarray:
    """ONNX Conv, NCHW / OIHW; pads are (top, left, bottom, right)."""
    xp = _pad_nchw(x, pads, 0.0)
    co, cig, kh, kw = w.shape
    win = _windows(xp, (kh, kw), strides, dilations)  # N C OH OW KH KW
    n, _, oh, ow = win.shape[:4]
    outs = []
    cog = co // group
    for g in range(group):
        wg = win[:, g * cig:(g + 1) * cig]
        outs.append(np.einsum("ncxykl,ockl->noxy", wg, w[g * cog:(g + 1) * cog], optimize=True))
    y = outs[0] if group == 1 else np.concatenate(outs, axis=1)
    if b is not None:
        y = y + b.reshape(1, -1, 1, 1)
    return y.astype(x.dtype, copy=False)


def gemm_ref(a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None, alpha: float = 1.0,
             beta: float = 1.0, trans_a: bool = False, trans_b: bool = False) -> np.ndarray:
    """ONNX Gemm: alpha * op(A) @ op(B) + beta * C."""
    y = (a.T if trans_a else a) @ (b.T if trans_b else b)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y.astype(a.dtype, copy=False)


def pool_ref(x: np.ndarray, kind: str, kernel: Sequence[int], strides: Sequence[int],
             pads: Sequence[int] = (0, 0, 0, 0), dilations: Sequence[int] = (1, 1)) -> np.ndarray:
    """Max pooling over NCHW windows; padded positions never win (-inf)."""
    if kind != "max":
        raise ValueError(f"unknown pool kind '{kind}'")
    xp = _pad_nchw(x, pads, -np.inf)
    return _windows(xp, kernel, strides, dilations).max(axis=(4, 5))


ELEMENTWISE: dict[str, tuple[int, Callable[..., np.ndarray]]] = {
    "relu": (1, lambda x: np.maximum(x, 0).astype(x.dtype, copy=False)),
    "add": (2, np.add),
    "mul": (2, np.multiply),
    "sub": (2, np.subtract),
    "div": (2, np.divide),
}
"""name -> (arity, numpy function with broadcasting): the vector unit's repertoire."""


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def ints(attr: Attribute | None, default: Sequence[int]) -> tuple[int, ...]:
    """Values of an `array<i64: ...>` attribute (VerifyException for other element types)."""
    if attr is None:
        return tuple(default)
    if not isinstance(attr, DenseArrayBase) or not isinstance(attr.elt_type, IntegerType):
        raise VerifyException(f"expected an integer array such as array<i64: 1, 2>, got {attr}")
    return tuple(int(v) for v in attr.get_values())


def check_window_params(op: str, rank4: Sequence[int], p: dict, kernel_key: str | None = None) -> None:
    """Lengths and signs of strides/dilations (2, > 0), pads (4, >= 0) and kernel (2, > 0)."""
    want = {"strides": 2, "dilations": 2, "pads": 4}
    if kernel_key:
        want[kernel_key] = 2
    for key, n in want.items():
        vals = p[key]
        if len(vals) != n:
            raise VerifyException(f"'{op}': {key} needs {n} values, got {list(vals)}")
        if key == "pads" and any(v < 0 for v in vals):
            raise VerifyException(f"'{op}': pads must be non-negative, got {list(vals)}")
        if key != "pads" and any(v <= 0 for v in vals):
            raise VerifyException(f"'{op}': {key} must be positive, got {list(vals)}")
    if len(rank4) != 4:
        raise VerifyException(f"'{op}': input must be 4-D NCHW, got shape {list(rank4)}")


def check_f32(op: IRDLOperation) -> None:
    """Every tensor/memref operand and result holds f32 (the only element type supported)."""
    for kind, vals in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(vals):
            t = v.type
            if isinstance(t, TensorType | MemRefType) and not isinstance(t.element_type, Float32Type):
                raise VerifyException(f"'{op.name}': {kind} #{i} has element type {t.element_type}; "
                                      f"only f32 is supported")


def int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def shape_of(v: SSAValue | Attribute) -> tuple[int, ...]:
    t = v.type if isinstance(v, SSAValue) else v
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a ranked tensor, got {t}")
    return tuple(t.get_shape())


def f32_tensor(shape: Sequence[int]) -> TensorType:
    return TensorType(Float32Type(), list(shape))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        return None


def matmul_shape(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...] | None:
    """Result shape of numpy/ONNX matmul (a 1-D operand is promoted and its extra dim
    dropped again, batch dims broadcast), or None when the shapes do not multiply."""
    if not a or not b:
        return None
    a2 = (1, a[0]) if len(a) == 1 else tuple(a)
    b2 = (b[0], 1) if len(b) == 1 else tuple(b)
    if a2[-1] != b2[-2]:
        return None
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    if batch is None:
        return None
    out = [*batch, a2[-2], b2[-1]]
    if len(b) == 1:
        out.pop(-1)
    if len(a) == 1:
        out.pop(-2 if len(b) != 1 else -1)
    return tuple(out)


FORMAT = "operands attr-dict `:` functional-type(operands, results)"


class GraphOp(IRDLOperation):
    """Common base: `evaluate` maps numpy inputs to numpy outputs."""

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        raise NotImplementedError(f"{self.name} has no reference semantics")

    def _expect_result_shape(self, shape: Sequence[int] | None, what: str) -> None:
        check_f32(self)
        got = shape_of(self.results[0])
        if shape is None or tuple(shape) != got:
            raise VerifyException(f"'{self.name}': {what} gives "
                                  f"{'no valid shape' if shape is None else 'shape ' + str(list(shape))}, "
                                  f"but the result type has {list(got)}")


# --------------------------------------------------------------------------------------
# Tiling interface of structured ops
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Follow:
    """How one input dimension's window follows the output tile: a tile of t output
    elements starting at output index o reads input indices from `scale` * o +
    `offset`, (t - 1) * `scale` + 1 + `halo` of them (a pooling window of k with
    stride s and pad p: scale=s, offset=-p, halo=k-1). `out_dim=None` means the
    whole input dimension is in every tile (reduced, broadcast or gathered)."""

    out_dim: int | None = None
    scale: int = 1
    offset: int = 0
    halo: int = 0


@dataclass(frozen=True)
class TileMap:
    """How a structured op is computed tile by tile: any output tile is `compute`
    of the input windows. `tileable[d]` says whether tiles may cut output dim d
    (False: every tile spans it whole, e.g. a softmax axis); `inputs[i][k]` says
    how dim k of input i follows the output tile. Reads past an input's edge (only
    in cut dims of edge tiles) give `pad_value`; those outputs are clipped."""

    tileable: tuple[bool, ...]
    inputs: tuple[tuple[Follow, ...], ...]
    pad_value: float = 0.0


def same_dims(rank: int, whole: Sequence[int] = ()) -> tuple[Follow, ...]:
    """An input laid out like the output: dim d follows output dim d, except `whole` dims."""
    return tuple(Follow(None) if d in whole else Follow(d) for d in range(rank))


def broadcast_follow(in_shape: Sequence[int], out_shape: Sequence[int]) -> tuple[Follow, ...]:
    """numpy broadcasting: input dims align right; size-1 dims (broadcast) stay whole."""
    lead = len(out_shape) - len(in_shape)
    return tuple(Follow(None) if s == 1 and out_shape[lead + k] != 1 else Follow(lead + k)
                 for k, s in enumerate(in_shape))


# --------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(GraphOp):
    """A constant tensor: `weight` names an entry of the module's weight file
    (`npu.weights`), or `value` holds a small dense literal."""

    name = "npu_graph.constant"
    weight = opt_attr_def(StringAttr)
    value = opt_attr_def(DenseIntOrFPElementsAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: TensorType, *, weight: str | None = None,
                 value: DenseIntOrFPElementsAttr | None = None):
        attrs: dict[str, Attribute] = {}
        if weight is not None:
            attrs["weight"] = StringAttr(weight)
        if value is not None:
            attrs["value"] = value
        super().__init__(result_types=[result_type], attributes=attrs)

    def verify_(self) -> None:
        check_f32(self)
        if (self.weight is None) == (self.value is None):
            raise VerifyException("'npu_graph.constant' needs exactly one of 'weight' or 'value'")
        if self.value is not None and tuple(self.value.get_shape()) != shape_of(self.result):
            raise VerifyException(f"'npu_graph.constant': value shape {list(self.value.get_shape())} does not "
                                  f"match the result type {self.result.type}")


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
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, w: SSAValue, b: SSAValue | None, result_type: TensorType, *,
                 strides: Sequence[int] = (1, 1), pads: Sequence[int] = (0, 0, 0, 0),
                 dilations: Sequence[int] = (1, 1), group: int = 1):
        super().__init__(operands=[x, w, b], result_types=[result_type], attributes={
            "strides": int_array(strides), "pads": int_array(pads),
            "dilations": int_array(dilations), "group": IntegerAttr(group, i64)})

    @property
    def params(self) -> dict:
        return dict(strides=ints(self.strides, (1, 1)), pads=ints(self.pads, (0, 0, 0, 0)),
                    dilations=ints(self.dilations, (1, 1)),
                    group=self.group.value.data if self.group is not None else 1)

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

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (conv2d_ref(*inputs, **self.params),)


def conv_out_shape(x: Sequence[int], w: Sequence[int], strides: Sequence[int], pads: Sequence[int],
                   dilations: Sequence[int], group: int = 1) -> tuple[int, ...] | None:
    oh = (x[2] + pads[0] + pads[2] - (w[2] - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (x[3] + pads[1] + pads[3] - (w[3] - 1) * dilations[1] - 1) // strides[1] + 1
    if oh <= 0 or ow <= 0:
        return None
    return (x[0], w[0], oh, ow)


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

    def verify_(self) -> None:
        if len(shape_of(self.a)) != 2 or len(shape_of(self.b)) != 2:
            raise VerifyException(f"'npu_graph.gemm': A and B must be 2-D, got {list(shape_of(self.a))} "
                                  f"and {list(shape_of(self.b))}")
        m, _, n = self.mkn()
        if self.c is not None and broadcast_shapes(shape_of(self.c), (m, n)) != (m, n):
            raise VerifyException(f"'npu_graph.gemm': C of shape {list(shape_of(self.c))} does not "
                                  f"broadcast to [{m}, {n}]")
        self._expect_result_shape((m, n), "gemm")

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (gemm_ref(*inputs, **self.params),)


@irdl_op_definition
class MatMulOp(GraphOp):
    """ONNX MatMul (numpy matmul semantics, batch dimensions broadcast)."""

    name = "npu_graph.matmul"
    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType):
        super().__init__(operands=[a, b], result_types=[result_type])

    def verify_(self) -> None:
        a, b = shape_of(self.a), shape_of(self.b)
        shape = matmul_shape(a, b)
        if shape is None:
            raise VerifyException(f"'npu_graph.matmul': shapes {list(a)} and {list(b)} do not multiply")
        self._expect_result_shape(shape, "matmul")

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.matmul(*inputs),)


class StructuredOp(GraphOp):
    """A graph op the compiler tiles generically: it describes its tiles with
    `tile_map()` and computes any tile with the classmethod `compute(attrs, *arrays)`
    (also its whole-tensor semantics). `tile_attrs()` gives the attributes a tile's
    compute uses (default: the op's own). `VECTOR_COST` is vector-unit work per
    output element (in units of one lane-cycle), for the cost model and simulator.

    To add one: subclass, define operands/results, `verify_`, `tile_map`,
    `compute`, and list it in GRAPH_OPS; tiling, bufferization and simulation
    follow with no further code."""

    VECTOR_COST: ClassVar[int] = 1

    def tile_map(self) -> TileMap:
        raise NotImplementedError

    def tile_attrs(self) -> dict[str, Attribute]:
        return dict(self.attributes)

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (self.compute(dict(self.attributes), *inputs).astype(inputs[0].dtype, copy=False),)


def attr_int(attrs: dict[str, Attribute], name: str, default: int) -> int:
    a = attrs.get(name)
    return a.value.data if isinstance(a, IntegerAttr) else default


def attr_float(attrs: dict[str, Attribute], name: str, default: float) -> float:
    a = attrs.get(name)
    return a.value.data if isinstance(a, FloatAttr) else default


def attr_ints(attrs: dict[str, Attribute], name: str, default: Sequence[int]) -> tuple[int, ...]:
    return ints(attrs.get(name), default)


@irdl_op_definition
class BatchNormOp(StructuredOp):
    """Inference batch normalisation over dim 1 (ONNX BatchNormalization):
    (x - mean) / sqrt(var + epsilon) * scale + bias, per channel."""

    name = "npu_graph.batchnorm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    epsilon = opt_attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 2

    def __init__(self, x: SSAValue, scale: SSAValue, bias: SSAValue, mean: SSAValue, var: SSAValue,
                 epsilon: float, result_type: TensorType):
        super().__init__(operands=[x, scale, bias, mean, var], result_types=[result_type],
                         attributes={"epsilon": FloatAttr(epsilon, Float32Type())})

    def verify_(self) -> None:
        x = shape_of(self.input)
        if len(x) < 2:
            raise VerifyException(f"'npu_graph.batchnorm': input must have a channel dim 1, got {list(x)}")
        for name in ("scale", "bias", "mean", "var"):
            if shape_of(getattr(self, name)) != (x[1],):
                raise VerifyException(f"'npu_graph.batchnorm': {name} must have shape [{x[1]}], "
                                      f"got {list(shape_of(getattr(self, name)))}")
        self._expect_result_shape(x, "batchnorm")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap((True,) * r, (same_dims(r),) + ((Follow(1),),) * 4)

    @staticmethod
    def folded(attrs: dict[str, Attribute], scale, bias, mean, var) -> tuple[np.ndarray, np.ndarray]:
        """(multiplier, offset) per channel: y = x * multiplier + offset."""
        mul = scale / np.sqrt(var + attr_float(attrs, "epsilon", 1e-5))
        return mul, bias - mean * mul

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, scale, bias, mean, var = arrays
        mul, off = cls.folded(attrs, scale, bias, mean, var)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        return x * mul.reshape(shape) + off.reshape(shape)


@irdl_op_definition
class TransposeOp(StructuredOp):
    """Permute dims: result dim i is input dim perm[i] (ONNX Transpose)."""

    name = "npu_graph.transpose"
    input = operand_def(TensorType)
    perm = attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, perm: Sequence[int], result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type], attributes={"perm": int_array(perm)})

    def verify_(self) -> None:
        x, perm = shape_of(self.input), ints(self.perm, ())
        if sorted(perm) != list(range(len(x))):
            raise VerifyException(f"'npu_graph.transpose': perm {list(perm)} is not a permutation of "
                                  f"0..{len(x) - 1}")
        self._expect_result_shape(tuple(x[p] for p in perm), "transposing")

    def tile_map(self) -> TileMap:
        perm = ints(self.perm, ())
        inv = {p: i for i, p in enumerate(perm)}
        return TileMap((True,) * len(perm), (tuple(Follow(inv[d]) for d in range(len(perm))),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        return np.transpose(arrays[0], attr_ints(attrs, "perm", ()))


@irdl_op_definition
class SoftmaxOp(StructuredOp):
    """softmax along `axis` (ONNX Softmax, opset >= 13 semantics)."""

    name = "npu_graph.softmax"
    input = operand_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 4  # max, exp, sum, divide

    def __init__(self, x: SSAValue, axis: int, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type], attributes={"axis": IntegerAttr(axis, i64)})

    def norm_axis(self) -> int:
        r = len(shape_of(self.input))
        a = attr_int(dict(self.attributes), "axis", -1)
        return a + r if a < 0 else a

    def verify_(self) -> None:
        r = len(shape_of(self.input))
        a = attr_int(dict(self.attributes), "axis", -1)
        if not -r <= a < r:
            raise VerifyException(f"'npu_graph.softmax': axis {a} is out of range for rank {r}")
        self._expect_result_shape(shape_of(self.input), "softmax")

    def tile_map(self) -> TileMap:
        r, a = len(shape_of(self.input)), self.norm_axis()
        return TileMap(tuple(d != a for d in range(r)), (same_dims(r, whole=(a,)),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        a = attr_int(attrs, "axis", -1)
        e = np.exp(x - x.max(axis=a, keepdims=True))
        return e / e.sum(axis=a, keepdims=True)


class ElementwiseOp(GraphOp):
    """Base of elementwise ops; `FN` names the entry of `ELEMENTWISE`."""

    FN: ClassVar[str]
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def verify_(self) -> None:
        arity = ELEMENTWISE[self.FN][0]
        if len(self.operands) != arity:
            raise VerifyException(f"'{self.name}' takes {arity} operands")
        self._expect_result_shape(broadcast_shapes(*[shape_of(o) for o in self.operands]),
                                  "broadcasting the operands")

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (ELEMENTWISE[self.FN][1](*inputs),)


class UnaryOp(ElementwiseOp):
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, x: SSAValue, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type])


class BinaryOp(ElementwiseOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType):
        super().__init__(operands=[a, b], result_types=[result_type])


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0)"""

    name = "npu_graph.relu"
    FN: ClassVar[str] = "relu"


@irdl_op_definition
class AddOp(BinaryOp):
    """a + b with numpy broadcasting"""

    name = "npu_graph.add"
    FN: ClassVar[str] = "add"


@irdl_op_definition
class MulOp(BinaryOp):
    """a * b with numpy broadcasting"""

    name = "npu_graph.mul"
    FN: ClassVar[str] = "mul"


@irdl_op_definition
class SubOp(BinaryOp):
    """a - b with numpy broadcasting"""

    name = "npu_graph.sub"
    FN: ClassVar[str] = "sub"


@irdl_op_definition
class DivOp(BinaryOp):
    """a / b with numpy broadcasting"""

    name = "npu_graph.div"
    FN: ClassVar[str] = "div"


@irdl_op_definition
class MaxPoolOp(GraphOp):
    """2-D max pooling over NCHW; padded positions never win."""

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

    @property
    def params(self) -> dict:
        return dict(kernel=ints(self.kernel, (1, 1)), strides=ints(self.strides, (1, 1)),
                    pads=ints(self.pads, (0, 0, 0, 0)), dilations=ints(self.dilations, (1, 1)))

    def verify_(self) -> None:
        x, p = shape_of(self.input), self.params
        check_window_params(self.name, x, p, "kernel")
        if any(pd >= k for pd, k in zip(p["pads"], p["kernel"] * 2)):
            raise VerifyException(f"'npu_graph.maxpool': pads {list(p['pads'])} must be smaller than "
                                  f"the kernel {list(p['kernel'])}")
        out = conv_out_shape(x, (x[1], 1, *p["kernel"]), p["strides"], p["pads"], p["dilations"])
        self._expect_result_shape(out, "pooling")

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (pool_ref(inputs[0], "max", **self.params),)


@irdl_op_definition
class ReshapeOp(GraphOp):
    """Reshape to the result type's shape (row-major, same element count)."""

    name = "npu_graph.reshape"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type])

    def verify_(self) -> None:
        check_f32(self)
        a, b = shape_of(self.input), shape_of(self.result)
        if int(np.prod(a)) != int(np.prod(b)):
            raise VerifyException(f"'npu_graph.reshape': {list(a)} and {list(b)} have different element counts")

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (inputs[0].reshape(shape_of(self.result)),)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of `npu_graph.fused`: the values the kernel produces."""

    name = "npu_graph.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), NoMemoryEffect())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), FusedOp):
            raise VerifyException("'npu_graph.yield' must be inside 'npu_graph.fused'")


@irdl_op_definition
class FusedOp(GraphOp):
    """A group of graph ops that runs as one kernel. The body's block arguments
    are the operands; `npu_graph.yield` gives the results. `rule` names the
    fusion rule that formed it (so it can be toggled and reported)."""

    name = "npu_graph.fused"
    ins = var_operand_def(TensorType)
    kernel = opt_attr_def(StringAttr)
    rule = opt_attr_def(StringAttr)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), NoMemoryEffect())
    assembly_format = "`(` $ins `)` attr-dict `:` functional-type($ins, $outs) $body"

    def __init__(self, ins: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region, *,
                 kernel: str, rule: str):
        super().__init__(operands=[list(ins)], result_types=[list(result_types)], regions=[body],
                         attributes={"kernel": StringAttr(kernel), "rule": StringAttr(rule)})

    def verify_(self) -> None:
        block = self.body.block
        if [a.type for a in block.args] != [o.type for o in self.ins]:
            raise VerifyException(f"'npu_graph.fused': block argument types {[str(a.type) for a in block.args]} "
                                  f"must match the operand types {[str(o.type) for o in self.ins]}")
        term = block.last_op
        if isinstance(term, YieldOp) and [v.type for v in term.values] != [r.type for r in self.outs]:
            raise VerifyException(f"'npu_graph.fused': yielded types {[str(v.type) for v in term.values]} "
                                  f"must match the result types {[str(r.type) for r in self.outs]}")

    def ops(self) -> list[Operation]:
        return [op for op in self.body.block.ops if not isinstance(op, YieldOp)]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        env: dict[SSAValue, np.ndarray] = dict(zip(self.body.block.args, inputs))
        for op in self.body.block.ops:
            if isinstance(op, YieldOp):
                return tuple(env[v] for v in op.values)
            assert isinstance(op, GraphOp)
            for r, v in zip(op.results, evaluate_op(op, [env[o] for o in op.operands])):
                env[r] = v
        raise ValueError("fused body without yield")


def evaluate_op(op: GraphOp, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    return op.evaluate(*inputs)


GRAPH_OPS: list[type[IRDLOperation]] = [
    ConstantOp, Conv2dOp, GemmOp, MatMulOp, ReluOp, AddOp, MulOp, SubOp, DivOp,
    MaxPoolOp, ReshapeOp, FusedOp, YieldOp, SoftmaxOp, BatchNormOp, TransposeOp,
]

GRAPH_OP_BY_NAME: dict[str, type[IRDLOperation]] = {op.name: op for op in GRAPH_OPS}

NpuGraph = Dialect("npu_graph", GRAPH_OPS, [])


"""`npu_graph` normalization ops: `BatchNormOp`, `SoftmaxOp`, `LayerNormOp`, and the
split forms the compiler tiles along a row (`RowStatsOp` for a row's softmax or moment
statistics, `SoftmaxApplyOp`, `LayerNormApplyOp`) with their merge helpers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, SSAValue
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

from npu_dialects import special
from npu_dialects.arch import Arch, DType
from npu_dialects.dtypes import FLOATS
from npu_dialects.graph.base import (
    FORMAT,
    Follow,
    StructuredOp,
    TileMap,
    attr_float,
    attr_int,
    axis_in,
    broadcast_shapes,
    check_with_f32_stats,
    expect_type,
    same_dims,
    shape_of,
)


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
class SoftmaxOp(StructuredOp):
    """softmax along `axis` (ONNX Softmax, opset >= 13 semantics)."""

    name = "npu_graph.softmax"
    input = operand_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 4  # max, exp, sum, divide
    SPECIAL: ClassVar[tuple[str, ...]] = ("exp",)
    USES: ClassVar[tuple[str, ...]] = ("exp", "reciprocal")

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
        e = special.exp(x - x.max(axis=a, keepdims=True))
        return special.divide(e, e.sum(axis=a, keepdims=True))


@irdl_op_definition
class LayerNormOp(StructuredOp):
    """Layer normalisation over dims axis..rank-1 (ONNX LayerNormalization):
    (x - mean) / sqrt(var + epsilon) * scale + bias, scale and bias broadcast to
    the normalised dims."""

    name = "npu_graph.layernorm"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    axis = attr_def(IntegerAttr)
    epsilon = opt_attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 6  # mean, centre, square, mean, scale, shift
    USES: ClassVar[tuple[str, ...]] = ("rsqrt",)  # (a row's: not charged per element)

    def __init__(self, x: SSAValue, scale: SSAValue, bias: SSAValue | None, axis: int, epsilon: float,
                 result_type: TensorType):
        super().__init__(operands=[x, scale, bias], result_types=[result_type],
                         attributes={"axis": IntegerAttr(axis, i64),
                                     "epsilon": FloatAttr(epsilon, Float32Type())})

    def infer_shape(self) -> tuple[int, ...] | None:
        x = shape_of(self.input)
        a = attr_int(dict(self.attributes), "axis", -1)
        if not -len(x) <= a < len(x):
            return None
        norm = x[a % len(x):]
        ok = all(len(shape_of(v)) <= len(norm) and broadcast_shapes(shape_of(v), norm) == norm
                 for v in self.operands[1:])
        return x if ok else None

    def verify_(self) -> None:
        x = shape_of(self.input)
        axis = axis_in(self.name, attr_int(dict(self.attributes), "axis", -1), len(x))
        norm = x[axis:]
        for name in ("scale", "bias"):
            v = getattr(self, name)
            if v is None:
                continue
            s = shape_of(v)
            if len(s) > len(norm) or broadcast_shapes(s, norm) != norm:
                raise VerifyException(f"'npu_graph.layernorm': {name} of shape {list(s)} does not broadcast "
                                      f"to the normalised dims {list(norm)}")
        self._expect_result_shape(self.infer_shape(), "layer normalisation")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        axis = attr_int(dict(self.attributes), "axis", -1) % r
        whole = tuple(range(axis, r))
        params = tuple(tuple(Follow(None) for _ in shape_of(v)) for v in self.operands[1:])
        return TileMap(tuple(d < axis for d in range(r)), (same_dims(r, whole),) + params)

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, scale, *bias = arrays
        axes = tuple(range(attr_int(attrs, "axis", -1) % x.ndim, x.ndim))
        d = x - x.mean(axis=axes, keepdims=True)
        var = (d * d).mean(axis=axes, keepdims=True)
        y = special.over_sqrt(d, var + np.asarray(attr_float(attrs, "epsilon", 1e-5), x.dtype)) * scale
        return y + bias[0] if bias else y


def softmax_block(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A block's online-softmax pieces along the last axis: (row max, exp(x - max),
    row sum). A row whose entries are all -inf (masked) has max -inf and sum 0."""
    m = x.max(axis=-1, keepdims=True)
    e = special.exp(x - np.where(np.isneginf(m), 0, m))
    return m, e, e.sum(axis=-1, keepdims=True)


def merge_softmax(ma: np.ndarray, sa: np.ndarray, mb: np.ndarray, sb: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two disjoint blocks' (max, sum) merged: (new max, each side's sum rescaled to it);
    a side with max -inf weighs nothing."""
    m = np.maximum(ma, mb)
    base = np.where(np.isneginf(m), 0, m)
    return m, sa * special.exp(ma - base), sb * special.exp(mb - base)


ROW_STATS = {"softmax": 2, "moments": 3}
"""`npu_graph.row_stats` kinds -> state columns: softmax (row max, sum of exp(x -
max)), moments (count, mean, sum of squared deviations)."""


@irdl_op_definition
class RowStatsOp(StructuredOp):
    """The statistics of each row (last dim) of x that a softmax or a layer
    normalisation needs, as a mergeable state [..., K] (`ROW_STATS`): over a block of
    columns it is the block's state, and `combine` merges the states of disjoint
    blocks (online softmax; Chan's pairwise moments), so rows too long for SRAM are
    reduced block by block (`npu-split-rows`; the tile loop's column loop `c`)."""

    name = "npu_graph.row_stats"
    input = operand_def(TensorType)
    kind = attr_def(StringAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, kind: str):
        shape = shape_of(x)
        super().__init__(operands=[x], result_types=[TensorType(Float32Type(), [*shape[:-1], ROW_STATS[kind]])],
                         attributes={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        k = self.kind.data
        if k not in ROW_STATS:
            raise VerifyException(f"'npu_graph.row_stats': kind must be one of {', '.join(ROW_STATS)}, got '{k}'")
        x = shape_of(self.input)
        if not x:
            raise VerifyException("'npu_graph.row_stats': the input needs a row dim")
        self._expect_result_shape((*x[:-1], ROW_STATS[k]), "row statistics")

    def check_element_types(self) -> None:
        """Any float input; the statistics are f32 (a 16-bit row is summed in f32)."""
        expect_type(self, self.input, "input", FLOATS)
        expect_type(self, self.result, "result", ("f32",))

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap(tuple(d < r - 1 for d in range(r)), (same_dims(r, whole=(r - 1,)),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        if attrs["kind"] == StringAttr("softmax"):
            m, _, total = softmax_block(x)
            return np.concatenate([m, total], axis=-1)
        mean = x.mean(axis=-1, keepdims=True)
        n = np.full_like(mean, x.shape[-1])
        return np.concatenate([n, mean, ((x - mean) ** 2).sum(axis=-1, keepdims=True)], axis=-1)

    @classmethod
    def combine(cls, attrs: dict[str, Attribute], acc: np.ndarray, part: np.ndarray) -> np.ndarray:
        if attrs["kind"] == StringAttr("softmax"):
            m, wa, wb = merge_softmax(acc[..., :1], acc[..., 1:], part[..., :1], part[..., 1:])
            return np.concatenate([m, wa + wb], axis=-1)
        (na, ma, qa), (nb, mb, qb) = ((x[..., :1], x[..., 1:2], x[..., 2:]) for x in (acc, part))
        n = na + nb
        d = mb - ma
        return np.concatenate([n, ma + d * nb / n, qa + qb + d * d * na * nb / n], axis=-1).astype(acc.dtype)

    @classmethod
    def tile_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    dtype: DType = "f32") -> int:
        """Three vector passes over the block (max or mean, exp or deviation, sum) and
        the merge over the state (statistics are f32: both passes are f32 ones)."""
        return arch.vector_cycles(math.prod(in_shapes[0]), 3) + arch.vector_cycles(math.prod(out_shape), 4)

    @classmethod
    def tile_cycles_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                       out_shape: Sequence[int], dtype: DType = "f32") -> int:
        """`tile_cycles`, and a softmax block's exp by the arch's method (`SPECIAL`)."""
        extra = arch.special_passes(("exp",)) if attrs.get("kind") == StringAttr("softmax") else 0
        return super().tile_cycles_of(attrs, arch, in_shapes, out_shape, dtype) + \
            (arch.vector_cycles(math.prod(in_shapes[0]), extra) if extra else 0)


@irdl_op_definition
class SoftmaxApplyOp(StructuredOp):
    """softmax over the last dim of x from its row statistics (`row_stats` kind
    softmax): exp(x - max) / sum; every dim of x may be tiled."""

    name = "npu_graph.softmax_apply"
    input = operand_def(TensorType)
    stats = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 3  # subtract, exp, divide
    SPECIAL: ClassVar[tuple[str, ...]] = ("exp",)
    USES: ClassVar[tuple[str, ...]] = ("exp", "reciprocal")

    def __init__(self, x: SSAValue, stats: SSAValue):
        super().__init__(operands=[x, stats], result_types=[x.type])

    def verify_(self) -> None:
        x, st = shape_of(self.input), shape_of(self.stats)
        if tuple(st) != (*x[:-1], 2):
            raise VerifyException(f"'npu_graph.softmax_apply': stats must be {[*x[:-1], 2]}, got {list(st)}")
        self._expect_result_shape(x, "softmax")

    def check_element_types(self) -> None:
        """One float type, but the row statistics: f32 (`row_stats`)."""
        check_with_f32_stats(self, self.stats)

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap((True,) * r, (same_dims(r), same_dims(r, whole=(r - 1,))))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, st = arrays
        return special.divide(special.exp(x - st[..., :1]), st[..., 1:])


@irdl_op_definition
class LayerNormApplyOp(StructuredOp):
    """Layer normalisation over the last dim of x from its row statistics
    (`row_stats` kind moments): (x - mean) / sqrt(M2 / n + epsilon) * scale + bias;
    every dim of x may be tiled, scale and bias follow its last dim."""

    name = "npu_graph.layernorm_apply"
    input = operand_def(TensorType)
    stats = operand_def(TensorType)
    scale = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    epsilon = opt_attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 4  # centre, normalise, scale, shift (`passes`: fewer without the last two)
    USES: ClassVar[tuple[str, ...]] = ("rsqrt",)  # (a row's: not charged per element)

    def __init__(self, x: SSAValue, stats: SSAValue, scale: SSAValue, bias: SSAValue | None, epsilon: float):
        super().__init__(operands=[x, stats, scale, bias], result_types=[x.type],
                         attributes={"epsilon": FloatAttr(epsilon, Float32Type())})

    def verify_(self) -> None:
        x, st = shape_of(self.input), shape_of(self.stats)
        if tuple(st) != (*x[:-1], 3):
            raise VerifyException(f"'npu_graph.layernorm_apply': stats must be {[*x[:-1], 3]}, got {list(st)}")
        for v in self.operands[2:]:
            if shape_of(v) not in ((x[-1],), (1,), ()):
                raise VerifyException(f"'npu_graph.layernorm_apply': scale and bias must be [{x[-1]}] or scalars, "
                                      f"got {list(shape_of(v))}")
        self._expect_result_shape(x, "layer normalisation")

    def check_element_types(self) -> None:
        """One float type, but the row statistics: f32 (`row_stats`)."""
        check_with_f32_stats(self, self.stats)

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        params = tuple((Follow(r - 1) if shape_of(v) and shape_of(v)[0] > 1 else Follow(None),)
                       if shape_of(v) else () for v in self.operands[2:])
        return TileMap((True,) * r, (same_dims(r), same_dims(r, whole=(r - 1,))) + params)

    @staticmethod
    def passes(in_shapes: Sequence[Sequence[int]]) -> int:
        """Vector passes over a tile: centre and normalise (the rows' factor times a
        scalar scale), then a per-column scale and a bias when there are."""
        return 2 + (math.prod(in_shapes[2]) > 1) + (len(in_shapes) > 3)

    @classmethod
    def tile_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    dtype: DType = "f32") -> int:
        return arch.vector_cycles(math.prod(out_shape), cls.passes(in_shapes), dtype)

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """`passes` over the result (as a tile's, `tile_cycles`)."""
        return arch.vector_cycles(self.out_elements(out_shape), self.passes([shape_of(v) for v in self.operands]),
                                  self.vector_type())

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, st, scale, *bias = arrays
        eps = np.asarray(attr_float(attrs, "epsilon", 1e-5), x.dtype)
        y = special.over_sqrt(x - st[..., 1:2], st[..., 2:] / st[..., :1] + eps) * scale
        return y + bias[0] if bias else y

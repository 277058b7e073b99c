"""`npu_graph` data-movement and reduction ops: `ReshapeOp`, `TransposeOp`,
`ExpandOp`, `ConcatOp`, `SliceOp`, `GatherOp`, `TriluOp`, `PadOp` and the reductions
(`ReduceOp`: mean, sum, max, min).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    attr_def,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from npu_dialects.arch import Arch, DType
from npu_dialects.dtypes import QUANTIZED, compute_view, qrange, type_name
from npu_dialects.graph.base import (
    ANY_TYPE,
    FORMAT,
    INT64_MAX,
    Follow,
    GraphOp,
    StructuredOp,
    TileMap,
    attr_bool,
    attr_float,
    attr_int,
    attr_ints,
    axis_in,
    broadcast_shapes,
    check_any_one_type,
    expect_type,
    int_array,
    ints,
    same_dims,
    shape_of,
    type_of,
)
from npu_dialects.graph.elementwise import UnaryOp
from npu_dialects.graph.quant import DequantizeOp, dequantize_ref


@irdl_op_definition
class TransposeOp(StructuredOp):
    """Permute dims: result dim i is input dim perm[i] (ONNX Transpose)."""

    name = "npu_graph.transpose"
    input = operand_def(TensorType)
    perm = attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

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


class ReduceOp(StructuredOp):
    """Base of reductions over `axes` (sorted, non-negative, unique), keeping the
    reduced dims as size 1 when `keepdims`. Reduced dims are whole in every tile.
    `EMPTY` is the result of reducing an empty set (ONNX: sum 0, max -inf, min +inf;
    mean is undefined there, onnxruntime gives 0): the importer folds a reduction over
    an empty dim to that constant data, so these ops never reduce one.

    `input_scale` and `input_zero_point` (f32, per tensor): the input is an i8/ui8
    tensor the reduction dequantizes as it reads it (`dequantize_ref`, ONNX's
    DequantizeLinear), reducing the f32 values in an f32 result - what npu-fuse-qdq
    makes of a QDQ model's reduce(dequantize(x)) (a global average pool), so the 8-bit
    tensor is read, not its float copy; priced one more vector pass over the input.
    A mean or sum of an f16/bf16 input may have an f32 result (a widening reduction:
    the 16-bit values summed in f32, as npu-convert-precision keeps sums), so the input
    is read as it is, not its f32 copy. A 16-bit input is always reduced in f32 (the
    unit's arithmetic, `dtypes.compute_view`), its result rounded to the result's type."""

    input = operand_def(TensorType)
    axes = attr_def(DenseArrayBase)
    keepdims = attr_def(BoolAttr)
    input_scale = opt_attr_def(FloatAttr)
    input_zero_point = opt_attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    REDUCE: ClassVar[Callable[..., ArrayLike]]
    EMPTY: ClassVar[float] = 0.0
    SUMS: ClassVar[bool] = False  # a sum (mean, sum): may widen a 16-bit input into an f32 result

    def __init__(self, x: SSAValue, axes: Sequence[int], keepdims: bool, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type],
                         attributes={"axes": int_array(axes), "keepdims": BoolAttr.from_bool(keepdims)})

    @staticmethod
    def out_shape(x: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
        if keepdims:
            return tuple(1 if d in axes else s for d, s in enumerate(x))
        return tuple(s for d, s in enumerate(x) if d not in axes)

    def infer_shape(self) -> tuple[int, ...] | None:
        x, axes = shape_of(self.input), ints(self.axes, ())
        if any(not 0 <= a < len(x) for a in axes):
            return None
        return self.out_shape(x, axes, bool(self.keepdims.value.data))

    def verify_(self) -> None:
        x, axes = shape_of(self.input), ints(self.axes, ())
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < len(x) for a in axes):
            raise VerifyException(f"'{self.name}': axes {list(axes)} must be sorted, unique and in "
                                  f"0..{len(x) - 1}")
        if not isinstance(self, ReduceSumOp) and any(x[a] == 0 for a in axes):
            raise VerifyException(f"'{self.name}': cannot reduce the empty dims of {list(x)}")
        self._expect_result_shape(self.infer_shape(), "reducing")

    def check_element_types(self) -> None:
        """One float type, or (with `input_scale`) an i8/ui8 input, its zero point within
        the type and a positive finite scale, and an f32 result."""
        if self.input_scale is None and self.input_zero_point is None:
            if self.SUMS and type_name(type_of(self.result)) == "f32" and type_name(type_of(self.input)) in ("f16", "bf16"):
                return  # (a widening sum: 16-bit values summed in f32)
            super().check_element_types()
            return
        expect_type(self, self.input, "input", QUANTIZED)
        expect_type(self, self.result, "result", ("f32",))
        s, z = attr_float(dict(self.attributes), "input_scale", float("nan")), \
            attr_float(dict(self.attributes), "input_zero_point", float("nan"))
        if not (np.isfinite(s) and s > 0):
            raise VerifyException(f"'{self.name}': input_scale = {s:g} must be a positive finite scale")
        lo, hi = qrange(type_of(self.input))
        if not (np.isfinite(z) and z == round(z) and lo <= z <= hi):
            raise VerifyException(f"'{self.name}': input_zero_point = {z:g} must be an integer in "
                                  f"{type_name(type_of(self.input))}'s [{lo}, {hi}]")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """`StructuredOp.cycles`, and a dequantizing input's pass over the input."""
        base = super().cycles(arch, out_shape)
        if self.input_scale is None or base is None:
            return base
        return base + self.dequantize_cycles(arch, shape_of(self.input), out_shape, shape_of(self.result))

    @staticmethod
    def dequantize_cycles(arch: Arch, in_shape: Sequence[int], out_shape: Sequence[int] | None,
                          whole: Sequence[int]) -> int:
        """The dequantize of the input elements of a result part of `out_shape` (of the
        whole `whole`): their share of `in_shape`."""
        n = math.prod(in_shape)
        if out_shape is not None and math.prod(whole):
            n = n * math.prod(out_shape) // math.prod(whole)
        return arch.vector_cycles(n, DequantizeOp.VECTOR_COST)

    @classmethod
    def tile_cycles_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                       out_shape: Sequence[int], dtype: DType = "f32") -> int:
        """`StructuredOp.tile_cycles_of`, and a dequantizing input's pass over the input tile."""
        base = super().tile_cycles_of(attrs, arch, in_shapes, out_shape, dtype)
        if "input_scale" not in attrs:
            return base
        return base + arch.vector_cycles(math.prod(in_shapes[0]), DequantizeOp.VECTOR_COST)

    def tile_map(self) -> TileMap:
        r, axes = len(shape_of(self.input)), ints(self.axes, ())
        out_rank = len(shape_of(self.result))
        if attr_bool(dict(self.attributes), "keepdims", True):
            follows = same_dims(r, whole=axes)
        else:
            kept = [d for d in range(r) if d not in axes]
            follows = tuple(Follow(None) if d in axes else Follow(kept.index(d)) for d in range(r))
        return TileMap((True,) * out_rank, (follows,))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = compute_view(arrays[0])  # (16-bit values reduced in f32)
        if "input_scale" in attrs:
            x = dequantize_ref(x, np.array(attr_float(attrs, "input_scale", 1.0), np.float32),
                               np.array(attr_float(attrs, "input_zero_point", 0.0), np.float32))
        return np.asarray(cls.REDUCE(x, axis=attr_ints(attrs, "axes", ()),
                                     keepdims=attr_bool(attrs, "keepdims", True)), dtype=x.dtype)


@irdl_op_definition
class ReduceMeanOp(ReduceOp):
    """Mean over `axes` (ONNX ReduceMean, GlobalAveragePool)."""

    name = "npu_graph.reduce_mean"
    REDUCE: ClassVar[Callable[..., ArrayLike]] = staticmethod(np.mean)
    SUMS: ClassVar[bool] = True


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over `axes` (ONNX ReduceSum)."""

    name = "npu_graph.reduce_sum"
    REDUCE: ClassVar[Callable[..., ArrayLike]] = staticmethod(np.sum)
    SUMS: ClassVar[bool] = True


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over `axes` (ONNX ReduceMax, GlobalMaxPool)."""

    name = "npu_graph.reduce_max"
    REDUCE: ClassVar[Callable[..., ArrayLike]] = staticmethod(np.max)
    EMPTY: ClassVar[float] = float("-inf")


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over `axes` (ONNX ReduceMin)."""

    name = "npu_graph.reduce_min"
    REDUCE: ClassVar[Callable[..., ArrayLike]] = staticmethod(np.min)
    EMPTY: ClassVar[float] = float("inf")


@irdl_op_definition
class ConcatOp(StructuredOp):
    """Join the operands along `axis` (ONNX Concat); the axis is whole in every tile."""

    name = "npu_graph.concat"
    inputs = var_operand_def(TensorType)
    axis = attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    def __init__(self, xs: Sequence[SSAValue], axis: int, result_type: TensorType):
        super().__init__(operands=[list(xs)], result_types=[result_type], attributes={"axis": IntegerAttr(axis, i64)})

    def infer_shape(self) -> tuple[int, ...] | None:
        shapes = [shape_of(v) for v in self.inputs]
        r = len(shapes[0]) if shapes else 0
        a = attr_int(dict(self.attributes), "axis", 0)
        if not shapes or not -r <= a < r:
            return None
        a %= r
        if any(len(s) != r or any(d != a and s[d] != shapes[0][d] for d in range(r)) for s in shapes):
            return None
        return tuple(sum(s[a] for s in shapes) if d == a else shapes[0][d] for d in range(r))

    def verify_(self) -> None:
        shapes = [shape_of(v) for v in self.inputs]
        if not shapes:
            raise VerifyException("'npu_graph.concat' needs at least one operand")
        r = len(shapes[0])
        a = axis_in(self.name, attr_int(dict(self.attributes), "axis", 0), max(r, 1))
        for i, s in enumerate(shapes):
            if len(s) != r or any(d != a and s[d] != shapes[0][d] for d in range(r)):
                raise VerifyException(f"'npu_graph.concat': operand #{i} of shape {list(s)} does not match "
                                      f"{list(shapes[0])} outside axis {a}")
        self._expect_result_shape(self.infer_shape(), "concatenating")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.result))
        a = attr_int(dict(self.attributes), "axis", 0) % r
        return TileMap(tuple(d != a for d in range(r)), (same_dims(r, whole=(a,)),) * len(self.inputs))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        return np.concatenate(arrays, axis=attr_int(attrs, "axis", 0))


@irdl_op_definition
class SliceOp(StructuredOp):
    """x[starts[d]:ends[d]:steps[d]] in every dim d (ONNX Slice with clamped,
    non-negative starts; `ends` -1 with a negative step runs through index 0).
    Dims with a positive step tile (the DMA applies the start and the stride's
    span); dims with a negative step are whole in every tile."""

    name = "npu_graph.slice"
    input = operand_def(TensorType)
    starts = attr_def(DenseArrayBase)
    ends = attr_def(DenseArrayBase)
    steps = attr_def(DenseArrayBase)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int],
                 result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "starts": int_array(starts), "ends": int_array(ends), "steps": int_array(steps)})

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    @staticmethod
    def sizes(starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]) -> tuple[int, ...]:
        """Result shape (a Python range counts end -1 with a negative step as intended)."""
        return tuple(len(range(s, e, st)) for s, e, st in zip(starts, ends, steps))

    def infer_shape(self) -> tuple[int, ...] | None:
        starts, ends, steps = ints(self.starts, ()), ints(self.ends, ()), ints(self.steps, ())
        if not len(starts) == len(ends) == len(steps) == len(shape_of(self.input)) or 0 in steps:
            return None
        return self.sizes(starts, ends, steps)

    def verify_(self) -> None:
        x = shape_of(self.input)
        starts, ends, steps = ints(self.starts, ()), ints(self.ends, ()), ints(self.steps, ())
        if not len(starts) == len(ends) == len(steps) == len(x):
            raise VerifyException(f"'npu_graph.slice': starts, ends and steps need {len(x)} values (the rank), "
                                  f"got {list(starts)}, {list(ends)}, {list(steps)}")
        for d, (s, e, st) in enumerate(zip(starts, ends, steps)):
            if st == 0:
                raise VerifyException(f"'npu_graph.slice': step of dim {d} is 0")
            ok = (0 <= s <= x[d] and 0 <= e <= x[d]) if st > 0 else \
                (0 <= s <= max(x[d] - 1, 0) and -1 <= e <= x[d] - 1)
            if not ok:
                raise VerifyException(f"'npu_graph.slice': start {s} / end {e} of dim {d} are out of range "
                                      f"for size {x[d]} and step {st}")
        self._expect_result_shape(self.infer_shape(), "slicing")

    def tile_map(self) -> TileMap:
        starts, steps = ints(self.starts, ()), ints(self.steps, ())
        follows = tuple(Follow(d, scale=st, offset=s) if st > 0 else Follow(None)
                        for d, (s, st) in enumerate(zip(starts, steps)))
        return TileMap(tuple(st > 0 for st in steps), (follows,))

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        """A cut dim (positive step) slices its whole input window: from 0 to the window's
        size (to the end when the size is not given)."""
        starts, ends, steps = ints(self.starts, ()), ints(self.ends, ()), ints(self.steps, ())
        size = tuple(tile_inputs[0]) if tile_inputs else (INT64_MAX,) * len(steps)
        return {"starts": int_array([0 if st > 0 else s for s, st in zip(starts, steps)]),
                "ends": int_array([n if st > 0 else e for e, st, n in zip(ends, steps, size)]),
                "steps": int_array(steps)}

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        idx = tuple(slice(s, e if e >= 0 or st > 0 else None, st) for s, e, st in
                    zip(attr_ints(attrs, "starts", ()), attr_ints(attrs, "ends", ()), attr_ints(attrs, "steps", ())))
        return x[idx]


@irdl_op_definition
class GatherOp(StructuredOp):
    """data gathered along `axis` at `indices` (ONNX Gather): the result has shape
    data[:axis] + indices + data[axis+1:]. Indices are integers carried as f32
    values (negative ones count from the end); the data's `axis` dim is whole in
    every tile."""

    name = "npu_graph.gather"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, data: SSAValue, indices: SSAValue, axis: int, result_type: TensorType):
        super().__init__(operands=[data, indices], result_types=[result_type],
                         attributes={"axis": IntegerAttr(axis, i64)})

    def check_element_types(self) -> None:
        """The data and the result: any one element type; the indices: f32 (carried
        integers) or i32."""
        expect_type(self, self.data, "data", ANY_TYPE)
        expect_type(self, self.indices, "indices", ("f32", "i32"))
        if type_of(self.result) != type_of(self.data):
            raise VerifyException(f"'{self.name}': result is {type_of(self.result)} but data is "
                                  f"{type_of(self.data)}; gathering keeps the element type")

    def infer_shape(self) -> tuple[int, ...] | None:
        x, i = shape_of(self.data), shape_of(self.indices)
        a = attr_int(dict(self.attributes), "axis", 0)
        if not -len(x) <= a < len(x):
            return None
        a %= len(x)
        return x[:a] + i + x[a + 1:]

    def verify_(self) -> None:
        x = shape_of(self.data)
        if not x:
            raise VerifyException("'npu_graph.gather': data must have rank >= 1")
        axis_in(self.name, attr_int(dict(self.attributes), "axis", 0), len(x))
        self._expect_result_shape(self.infer_shape(), "gathering")

    def tile_map(self) -> TileMap:
        x, q = shape_of(self.data), len(shape_of(self.indices))
        a = attr_int(dict(self.attributes), "axis", 0) % len(x)
        data = tuple(Follow(d) if d < a else Follow(None) if d == a else Follow(d - 1 + q) for d in range(len(x)))
        return TileMap((True,) * (len(x) - 1 + q), (data, tuple(Follow(a + k) for k in range(q))))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        data, indices = arrays
        a = attr_int(attrs, "axis", 0) % data.ndim
        idx = indices.astype(np.int64)
        idx = np.where(idx < 0, idx + data.shape[a], idx)
        return np.take(data, idx, axis=a)


@irdl_op_definition
class TriluOp(StructuredOp):
    """Upper (`upper`) or lower triangle of the last two dims, from diagonal `k` on
    (ONNX Trilu); the other elements are 0. The last two dims are whole in every tile."""

    name = "npu_graph.trilu"
    input = operand_def(TensorType)
    upper = attr_def(BoolAttr)
    k = attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def __init__(self, x: SSAValue, upper: bool, k: int, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type],
                         attributes={"upper": BoolAttr.from_bool(upper), "k": IntegerAttr(k, i64)})

    def infer_shape(self) -> tuple[int, ...] | None:
        x = shape_of(self.input)
        return x if len(x) >= 2 else None

    def verify_(self) -> None:
        x = shape_of(self.input)
        if len(x) < 2:
            raise VerifyException(f"'npu_graph.trilu': input must have rank >= 2, got {list(x)}")
        self._expect_result_shape(x, "trilu")

    def tile_map(self) -> TileMap:
        r = len(shape_of(self.input))
        return TileMap(tuple(d < r - 2 for d in range(r)), (same_dims(r, whole=(r - 2, r - 1)),))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        k = attr_int(attrs, "k", 0)
        return np.triu(arrays[0], k) if attr_bool(attrs, "upper", True) else np.tril(arrays[0], k)


@irdl_op_definition
class PadOp(StructuredOp):
    """Constant padding (ONNX Pad, mode "constant"): `pads` holds the begin counts of
    every dim then the end counts (negative ones crop); new elements are `value`.
    Tiles read their window at the shifted position and the DMA fills reads outside
    the input with `value`."""

    name = "npu_graph.pad"
    input = operand_def(TensorType)
    pads = attr_def(DenseArrayBase)
    value = attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    def __init__(self, x: SSAValue, pads: Sequence[int], value: float, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type], attributes={
            "pads": int_array(pads), "value": FloatAttr(value, Float32Type())})

    def infer_shape(self) -> tuple[int, ...] | None:
        x, pads = shape_of(self.input), ints(self.pads, ())
        if len(pads) != 2 * len(x):
            return None
        out = tuple(s + b + e for s, b, e in zip(x, pads, pads[len(x):]))
        return out if all(o >= 0 for o in out) else None

    def verify_(self) -> None:
        x, pads = shape_of(self.input), ints(self.pads, ())
        if len(pads) != 2 * len(x):
            raise VerifyException(f"'npu_graph.pad': pads needs {2 * len(x)} values (begin and end per dim), "
                                  f"got {list(pads)}")
        out = tuple(s + b + e for s, b, e in zip(x, pads, pads[len(x):]))
        if any(o < 0 for o in out):
            raise VerifyException(f"'npu_graph.pad': pads {list(pads)} crop more than the input {list(x)}")
        self._expect_result_shape(out, "padding")

    def tile_map(self) -> TileMap:
        r, pads = len(shape_of(self.input)), ints(self.pads, ())
        return TileMap((True,) * r, (tuple(Follow(d, offset=-pads[d]) for d in range(r)),),
                       pad_value=attr_float(dict(self.attributes), "value", 0.0))

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        return dict(self.attributes, pads=int_array([0] * len(ints(self.pads, ()))))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x = arrays[0]
        pads = attr_ints(attrs, "pads", ())
        begin, end = pads[:x.ndim], pads[x.ndim:]
        shape = tuple(s + b + e for s, b, e in zip(x.shape, begin, end))
        out = np.full(shape, attr_float(attrs, "value", 0.0), dtype=x.dtype)
        # out[o] = x[o - begin] where that is inside x: a crop deeper than its side of
        # the input (begin < -size) leaves only padding, never a shifted window
        lo = [min(max(b, 0), o) for b, o in zip(begin, shape)]
        hi = [max(min(o, s + b), l) for b, o, s, l in zip(begin, shape, x.shape, lo)]
        out[tuple(map(slice, lo, hi))] = x[tuple(slice(l - b, h - b) for l, h, b in zip(lo, hi, begin))]
        return out


@irdl_op_definition
class ExpandOp(UnaryOp):
    """x broadcast to the result type's shape (ONNX Expand): an elementwise copy whose
    input broadcasts into the output tile."""

    name = "npu_graph.expand"
    FN: ClassVar[str] = "copy"

    def check_element_types(self) -> None:
        """Data movement: any one element type (`check_any_one_type`)."""
        check_any_one_type(self)

    def infer_shape(self) -> tuple[int, ...] | None:
        return broadcast_shapes(shape_of(self.input), shape_of(self.result))

    def verify_(self) -> None:
        x, out = shape_of(self.input), shape_of(self.result)
        self._expect_result_shape(self.infer_shape(), f"broadcasting {list(x)} to {list(out)}")

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.broadcast_to(inputs[0], shape_of(self.result)).copy(),)


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
        check_any_one_type(self)
        a, b = shape_of(self.input), shape_of(self.result)
        if int(np.prod(a)) != int(np.prod(b)):
            raise VerifyException(f"'npu_graph.reshape': {list(a)} and {list(b)} have different element counts")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """A view: no work."""
        return 0

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (inputs[0].reshape(shape_of(self.result)),)

"""`npu_graph`: tensor-level ops with value semantics, what the ONNX importer maps onto.

This module holds what every op family of the `npu_dialects.graph` package builds on:
`GraphOp` (reference semantics, cycles, MACs, decomposition), `StructuredOp` (generic
tiling through `tile_map`/`compute`), the tiling interface (`Follow`, `TileMap`), the
verification and attribute helpers, `npu_graph.constant`, and the `npu_graph.fused`
kernel with its `npu_graph.yield` terminator.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_attr_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsTerminator, NoMemoryEffect, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from npu_dialects.arch import Arch, DType, widest_type
from npu_dialects.dtypes import ELEMENT_TYPES, FLOATS, QUANTIZED, check_types, qrange, type_name
from npu_dialects.graph.refs import in_f32

# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


_INTS: dict[tuple[int, object, bytes], tuple[int, ...]] = {}
"""`ints` by (element width, signedness, the array's bytes): the compiler and the simulator decode
the same few thousand arrays (copy windows, strides, pads) over and over."""


def ints(attr: Attribute | None, default: Sequence[int]) -> tuple[int, ...]:
    """Values of an `array<i64: ...>` attribute (VerifyException for other element types)."""
    if attr is None:
        return tuple(default)
    if not isinstance(attr, DenseArrayBase) or not isinstance(attr.elt_type, IntegerType):
        raise VerifyException(f"expected an integer array such as array<i64: 1, 2>, got {attr}")
    t = attr.elt_type
    key = (t.width.data, t.signedness.data, attr.data.data)
    got = _INTS.get(key)
    if got is None:
        if len(_INTS) >= 1 << 16:  # (bounded: a long-lived process compiles many models)
            _INTS.clear()
        got = _INTS[key] = tuple(attr.get_values())  # type: ignore[arg-type]
    return got


def check_lengths_and_signs(op: str, params: Sequence[tuple[str, Sequence[int], int]],
                             crop: bool = False) -> None:
    """Each (key, values, wanted length): the length, and the sign (pads >= 0 unless
    `crop` lets a negative pad crop, others > 0)."""
    for key, vals, n in params:
        if len(vals) != n:
            raise VerifyException(f"'{op}': {key} needs {n} values, got {list(vals)}")
        if key == "pads" and not crop and any(v < 0 for v in vals):
            raise VerifyException(f"'{op}': pads must be non-negative, got {list(vals)}")
        if key != "pads" and any(v <= 0 for v in vals):
            raise VerifyException(f"'{op}': {key} must be positive, got {list(vals)}")


def check_window_params(op: str, rank4: Sequence[int], p: dict, kernel_key: str | None = None,
                        crop: bool = False) -> None:
    """Lengths and signs of strides/dilations (2, > 0), pads (4, >= 0; any sign with
    `crop`) and kernel (2, > 0)."""
    want = {"strides": 2, "dilations": 2, "pads": 4}
    if kernel_key:
        want[kernel_key] = 2
    check_lengths_and_signs(op, [(key, p[key], n) for key, n in want.items()], crop)
    if len(rank4) != 4:
        raise VerifyException(f"'{op}': input must be 4-D NCHW, got shape {list(rank4)}")


def check_f32(op: IRDLOperation) -> None:
    """The default type rule of a graph op: every tensor operand and result holds one
    float type (f32, f16 or bf16; `npu_dialects.dtypes.check_types`)."""
    check_types(op)


ANY_TYPE = tuple(ELEMENT_TYPES)
"""Every element type: what data-movement ops take (any one of them; exact on integers)."""


def check_with_f32_stats(op: IRDLOperation, stats: SSAValue) -> None:
    """One float type throughout but `stats` (row statistics), which is f32: a softmax or
    layer normalisation applied in f16/bf16 from statistics summed in f32."""
    expect_type(op, stats, "stats", ("f32",))
    check_types(op, FLOATS, same=False)
    others = [type_of(v) for v in (*op.operands, *op.results) if v is not stats]
    if any(t != others[0] for t in others):
        raise VerifyException(f"'{op.name}': its operands and result but the statistics must have one element "
                              f"type, got {', '.join(str(t) for t in others)} (insert a cast)")


def check_any_one_type(op: IRDLOperation) -> None:
    """The type rule of data movement (reshape, transpose, slice, concat, pad, expand,
    max pooling, constants): any one element type, integers included."""
    check_types(op, ANY_TYPE)


def type_of(v: SSAValue) -> Attribute:
    """The element type of `v` (its type itself when it is not a tensor)."""
    return v.type.element_type if isinstance(v.type, TensorType) else v.type


def expect_type(op: IRDLOperation, v: SSAValue, what: str, allowed: Sequence[str]) -> None:
    """`v` (named `what` in the message) has one of the element types `allowed`."""
    t = type_of(v)
    if type_name(t) not in allowed:
        raise VerifyException(f"'{op.name}': {what} has element type {t}; it must be {' or '.join(allowed)}")


def zero_point_attrs(input_zero_point: int | None, weight_zero_point: int | None) -> dict[str, Attribute]:
    """The zero-point attributes of an integer conv2d/matmul (0 and None are left out)."""
    return {k: IntegerAttr(v, i64) for k, v in (("input_zero_point", input_zero_point),
                                                 ("weight_zero_point", weight_zero_point)) if v}


def zero_points_of(op: IRDLOperation) -> tuple[int, int]:
    return (attr_int(dict(op.attributes), "input_zero_point", 0), attr_int(dict(op.attributes), "weight_zero_point", 0))


def check_float_product(op: IRDLOperation, x: SSAValue, w: SSAValue, bias: SSAValue | None) -> None:
    """A float conv2d/matmul/gemm computes in one float type, or (bias-less, f16/bf16
    operands of one type) sums into an f32 result: a tile's accumulator over several
    reduction steps (`tile_search.wide_accumulator`)."""
    if (bias is None and type_name(type_of(op.results[0])) == "f32" and type_name(type_of(x)) in ("f16", "bf16")
            and type_of(x) == type_of(w)):
        check_types(op, same=False)
    else:
        check_f32(op)


def check_cube_types(op: IRDLOperation, x: SSAValue, w: SSAValue, bias: SSAValue | None) -> None:
    """conv2d/matmul types: one float type throughout (`check_float_product`), or integer
    operands (i8/ui8 input and weight, each zero point within its operand's
    type) with an i32 bias and result."""
    names = (("input", x), ("weight", w))
    if not any(type_name(type_of(v)) in QUANTIZED for _, v in names):
        zps = [k for k in ("input_zero_point", "weight_zero_point") if k in op.attributes]
        if zps:
            raise VerifyException(f"'{op.name}': {', '.join(zps)} only applies to integer (i8/ui8) operands")
        check_float_product(op, x, w, bias)
        return
    for (what, v), zp in zip(names, zero_points_of(op)):
        expect_type(op, v, what, QUANTIZED)
        lo, hi = qrange(type_of(v))
        if not lo <= zp <= hi:
            raise VerifyException(f"'{op.name}': {what}_zero_point {zp} is outside {type_of(v)} [{lo}, {hi}]")
    if bias is not None:
        expect_type(op, bias, "bias", ("i32",))
    expect_type(op, op.results[0], "result", ("i32",))


def int_array(values: Sequence[int]) -> DenseArrayBase:
    return _int_array(tuple(int(v) for v in values))


@lru_cache(maxsize=4096)
def _int_array(values: tuple[int, ...]) -> DenseArrayBase:
    """`array<i64: values>`, built once (an attribute is immutable; building one packs
    and verifies it)."""
    return DenseArrayBase.from_list(i64, list(values))


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


def matmul_dims(a: Sequence[int], b: Sequence[int], trans_a: bool = False,
                trans_b: bool = False) -> tuple[int, int, int, int]:
    """(batch, m, k, n) of numpy/ONNX matmul of shapes `a` and `b` (1-D operands
    promoted, batch dims broadcast; `batch` is the product of the result's batch dims)."""
    a2 = (1, a[0]) if len(a) == 1 else tuple(a)
    b2 = (b[0], 1) if len(b) == 1 else tuple(b)
    m, k = (a2[-1], a2[-2]) if trans_a else a2[-2:]
    n = b2[-2] if trans_b else b2[-1]
    return math.prod(broadcast_shapes(a2[:-2], b2[:-2]) or ()), m, k, n


FORMAT = "operands attr-dict `:` functional-type(operands, results)"


class GraphOp(IRDLOperation):
    """Common base: `evaluate` maps numpy inputs to numpy outputs; `cycles` says what
    the op costs on a core of an arch."""

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        raise NotImplementedError(f"{self.name} has no reference semantics")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """Cycles of this op computed whole on one core, or of the part of its result of
        shape `out_shape` (a strip), as the simulator charges the compute ops
        bufferization emits for it (`Arch.cube_cycles`/`vector_cycles`). None: the op
        has no single-step mapping onto the units (it is tiled as a kernel of its own)."""
        return None

    def macs(self) -> int:
        """Multiply-accumulates of the op (cube work, for the roofline); 0 for others."""
        return 0

    def decompose(self) -> tuple[list[Operation], list[SSAValue]] | None:
        """The op as other graph ops (MLIR's `AggregatedOpInterface.decomposeOperation`):
        new ops, in order, and the values that replace the op's results; None (the
        default) when the op is compiled as itself. `npu-canonicalize` applies it."""
        return None

    def out_elements(self, out_shape: Sequence[int] | None = None) -> int:
        """Elements of the result (or of the part of it of shape `out_shape`)."""
        return math.prod(shape_of(self.results[0]) if out_shape is None else out_shape)

    def check_element_types(self) -> None:
        """The op's element-type rule (default: one float type, `check_f32`)."""
        check_f32(self)

    def _expect_result_shape(self, shape: Sequence[int] | None, what: str) -> None:
        self.check_element_types()
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
        check_any_one_type(self)
        if (self.weight is None) == (self.value is None):
            raise VerifyException("'npu_graph.constant' needs exactly one of 'weight' or 'value'")
        if self.value is not None and tuple(self.value.get_shape()) != shape_of(self.result):
            raise VerifyException(f"'npu_graph.constant': value shape {list(self.value.get_shape())} does not "
                                  f"match the result type {self.result.type}")
        if self.value is not None and self.value.get_element_type() != type_of(self.result):
            raise VerifyException(f"'npu_graph.constant': value of element type {self.value.get_element_type()} "
                                  f"does not match the result type {self.result.type}")


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
    SPECIAL: ClassVar[tuple[str, ...]] = ()
    """The special functions (`special.FUNCTIONS`) it evaluates per output element: the
    arch's method of each adds its passes (`Arch.special_passes`)."""
    USES: ClassVar[tuple[str, ...] | None] = None
    """Every special function it evaluates, per element or per row (None: `SPECIAL`)."""

    def tile_map(self) -> TileMap:
        raise NotImplementedError

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        """The attributes that compute one tile from input windows of shapes `tile_inputs`."""
        return dict(self.attributes)

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """`VECTOR_COST` vector passes over the result (in the widest type it touches),
        and those of its `SPECIAL` functions."""
        t = self.vector_type()
        return arch.vector_cycles(self.out_elements(out_shape), self.VECTOR_COST + arch.special_passes(self.SPECIAL, t), t)

    def vector_type(self) -> str:
        """The type name the op's work is priced by (`tile_type` of its operands and results)."""
        return self.tile_type((*self.operands, *self.results))

    @classmethod
    def tile_type(cls, values: Sequence[SSAValue | Attribute]) -> str:
        """The type name a tile reading and writing `values` (inputs, then the output:
        tensors, buffers or their types) is priced in: the widest of them."""
        return widest_type(values)

    @classmethod
    def tile_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    dtype: DType = "f32") -> int:
        """Cycles of one tile with inputs of `in_shapes` (the cost model's and the
        simulator's `npu_compute.apply`): `VECTOR_COST` vector passes over its output,
        in `dtype` (the widest type the tile reads or writes), and those of its `SPECIAL` functions."""
        return arch.vector_cycles(math.prod(out_shape), cls.VECTOR_COST + arch.special_passes(cls.SPECIAL, dtype), dtype)

    @classmethod
    def tile_scratch_bytes(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int]) -> int:
        """SRAM a tile needs on `arch` besides its inputs and output (intermediates):
        none."""
        return 0

    @classmethod
    def tile_scratch_bytes_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                              out_shape: Sequence[int]) -> int:
        """`tile_scratch_bytes` of a tile of an op with `attrs` (shapes canonical)."""
        return cls.tile_scratch_bytes(arch, in_shapes, out_shape)

    @classmethod
    def canonical_shapes(cls, attrs: dict[str, Attribute], in_shapes: Sequence[Sequence[int]],
                         out_shape: Sequence[int]) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
        """The shapes `tile_cycles` and `tile_scratch_bytes` take, for tiles of an op with
        `attrs` (an op whose attributes choose its operands' layout reorders them)."""
        return [tuple(s) for s in in_shapes], tuple(out_shape)

    @classmethod
    def tile_cycles_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                       out_shape: Sequence[int], dtype: DType = "f32") -> int:
        """`tile_cycles` of a tile of an op with `attrs` (its shapes canonical first) in
        `dtype` (the widest type the tile reads or writes; the cube's input type for attention)."""
        return cls.tile_cycles(arch, *cls.canonical_shapes(attrs, in_shapes, out_shape), dtype=dtype)

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @classmethod
    def combine(cls, attrs: dict[str, Attribute], acc: np.ndarray, part: np.ndarray) -> np.ndarray:
        """A reduction step's tile `part` merged into the accumulated `acc` (the tile
        loop's `npu_tile.reduce`): a sum unless the op says otherwise."""
        return acc + part

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        attrs = dict(self.attributes)
        return (in_f32(lambda *a: self.compute(attrs, *a).astype(a[0].dtype, copy=False), inputs),)


def attr_int(attrs: dict[str, Attribute], name: str, default: int) -> int:
    a = attrs.get(name)
    return a.value.data if isinstance(a, IntegerAttr) else default


def attr_float(attrs: dict[str, Attribute], name: str, default: float) -> float:
    a = attrs.get(name)
    return a.value.data if isinstance(a, FloatAttr) else default


def attr_ints(attrs: dict[str, Attribute], name: str, default: Sequence[int]) -> tuple[int, ...]:
    return ints(attrs.get(name), default)


def attr_bool(attrs: dict[str, Attribute], name: str, default: bool) -> bool:
    a = attrs.get(name)
    return bool(a.value.data) if isinstance(a, IntegerAttr) else default


def axis_in(op: str, axis: int, rank: int, what: str = "axis") -> int:
    """`axis` normalised to [0, rank) (VerifyException naming `op` when out of range)."""
    if not -rank <= axis < rank:
        raise VerifyException(f"'{op}': {what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


INT64_MAX = 2 ** 63 - 1
"""`ends` value meaning "to the end of the dimension"."""


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

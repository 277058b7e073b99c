"""`npu_graph` element-type ops: quantization references (`quantize_ref`, `requantize_ref`,
`qadd_ref`, `qmul_ref`, fixed-point multipliers), `QuantizeOp`, `DequantizeOp`,
`RequantizeOp`, `CastOp`, the integer residual add `QAddOp` and multiply `QMulOp`, and
the lookup-table op `TableOp`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
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
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from npu_dialects.arch import Arch
from npu_dialects.dtypes import FLOATS, QUANTIZED, np_dtype, qrange, type_name
from npu_dialects.graph.base import (
    FORMAT,
    Follow,
    StructuredOp,
    TileMap,
    attr_float,
    attr_int,
    broadcast_follow,
    broadcast_shapes,
    expect_type,
    same_dims,
    shape_of,
    type_of,
)


def quantize_ref(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point) to [lo, hi],
    computed in float32 (as onnxruntime: one division, nearbyint), integral values in
    float32 (the typed result buffer stores them exactly)."""
    with np.errstate(all="ignore"):
        y = np.rint(x.astype(np.float32) / scale.astype(np.float32)) + zero_point.astype(np.float32)
    return np.clip(y, lo, hi).astype(np.float32, copy=False)


def dequantize_ref(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """ONNX DequantizeLinear: (x - zero_point) * scale in float32 (the difference is exact:
    taken in int64, as onnxruntime takes it in int32)."""
    diff = x.astype(np.int64) - zero_point.astype(np.int64)
    with np.errstate(over="ignore"):  # (an infinite product stays inf, as in onnxruntime)
        return (diff.astype(np.float32) * scale.astype(np.float32)).astype(np.float32, copy=False)


def quantize_multiplier(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's QuantizeMultiplier of each (positive) float: int32 q in [2^30, 2^31) and
    shift with m = q * 2^(shift - 31); a multiplier below 2^-31 gives q = 0."""
    frac, shift = np.frexp(np.asarray(m, dtype=np.float64))
    q = np.floor(np.abs(frac) * 2.0 ** 31 + 0.5) * np.sign(frac)  # (std::round: halves away from zero)
    shift = np.where(q == 2 ** 31, shift + 1, shift)
    q = np.where(q == 2 ** 31, 2 ** 30, q)
    tiny = shift < -31
    return np.where(tiny, 0, q).astype(np.int64), np.where(tiny, 0, shift).astype(np.int64)


def fixed_point_multiply(acc: np.ndarray, q: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier: SaturatingRoundingDoublingHighMul of
    acc * 2^max(shift, 0) (saturated to int32) and q, then RoundingDivideByPOT by
    max(-shift, 0) (rounds half away from zero), in int64."""
    left, right = np.maximum(shift, 0), np.maximum(-shift, 0)
    x = np.clip(acc.astype(np.int64) << left, -2 ** 31, 2 ** 31 - 1)
    ab = x * q
    t = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = np.where(t >= 0, t >> 31, -((-t) >> 31))  # (C division: toward zero)
    high = np.where((x == -2 ** 31) & (q == -2 ** 31), 2 ** 31 - 1, high)
    mask = (np.int64(1) << right) - 1
    remainder = high & mask
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + (remainder > threshold)


def requantize_ref(acc: np.ndarray, multiplier: np.ndarray, zero_point: np.ndarray, lo: int, hi: int,
                   mode: str = "float") -> np.ndarray:
    """An int32 accumulator to [lo, hi]: `float` mode as onnxruntime's
    MlasRequantizeOutput (float32(acc) * multiplier, round half to even, + zero point,
    clamp); `fixed` mode as TFLite (an int32 multiplier and shift derived from the float
    multiplier, `fixed_point_multiply`, + zero point, clamp). Integral float32 values."""
    zp = zero_point.astype(np.float32)
    if mode == "fixed":
        q, shift = quantize_multiplier(multiplier.astype(np.float32))
        y = fixed_point_multiply(acc, q, shift).astype(np.float64) + zp
    else:
        with np.errstate(all="ignore"):
            y = np.rint(acc.astype(np.float32) * multiplier.astype(np.float32)) + zp
    return np.clip(y, lo, hi).astype(np.float32)


REQUANT_MODES = ("float", "fixed")


class EightBit:
    """Mixin of the ops that read and write only 8-bit values (a lookup table, a
    requantizing add): priced at the vector unit's 8-bit rate."""

    @classmethod
    def tile_type(cls, values: Sequence[SSAValue | Attribute]) -> str:
        """"i8", whatever `values` are (the f32 buffer a tile's compute sees is the
        simulator's view)."""
        return "i8"


QADD_PARAMS = ("a_scale", "a_zero_point", "b_scale", "b_zero_point", "scale", "zero_point")
"""`QAddOp`'s and `QMulOp`'s f32 attributes: each input's and the result's quantization
parameters."""

ADD_LEFT_SHIFT = 20
"""TFLite's int8 ADD: inputs (minus their zero points) shifted left by 20 bits before scaling."""


def qadd_ref(a: np.ndarray, b: np.ndarray, params: Sequence[float], lo: int, hi: int,
             mode: str = "float") -> np.ndarray:
    """Two 8-bit tensors added in their real values and requantized, `params` in
    `QADD_PARAMS` order. `float` mode: quantize(dequantize(a) + dequantize(b)) in float32,
    as a QDQ graph computes it (`dequantize_ref`, an f32 add, `quantize_ref`; onnxruntime's
    QLinearAdd reference kernel). `fixed` mode: TFLite's int8 ADD (each input minus its
    zero point, shifted left by `ADD_LEFT_SHIFT` and scaled by a fixed-point multiplier
    relative to twice the larger input scale; the sum scaled to the output's; rounding
    half away from zero). Integral float32 values in [lo, hi]."""
    sa, za, sb, zb, s, z = (np.float32(p) for p in params)
    if mode == "fixed":
        twice = 2.0 * max(float(sa), float(sb))
        (qa, qb, qo), (ha, hb, ho) = quantize_multiplier(
            np.array([float(sa) / twice, float(sb) / twice, twice / ((1 << ADD_LEFT_SHIFT) * float(s))]))
        xa = fixed_point_multiply((a.astype(np.int64) - int(za)) << ADD_LEFT_SHIFT, qa, ha)
        xb = fixed_point_multiply((b.astype(np.int64) - int(zb)) << ADD_LEFT_SHIFT, qb, hb)
        y = fixed_point_multiply(np.clip(xa + xb, -2 ** 31, 2 ** 31 - 1), qo, ho).astype(np.float64) + float(z)
        return np.clip(y, lo, hi).astype(np.float32)
    total = dequantize_ref(a, np.array(sa), np.array(za)) + dequantize_ref(b, np.array(sb), np.array(zb))
    return quantize_ref(total, np.array(s), np.array(z), lo, hi)


def qmul_ref(a: np.ndarray, b: np.ndarray, params: Sequence[float], lo: int, hi: int,
             mode: str = "float") -> np.ndarray:
    """Two 8-bit tensors multiplied in their real values and requantized, `params` in
    `QADD_PARAMS` order. `float` mode: quantize(dequantize(a) * dequantize(b)) in float32,
    as a QDQ graph computes it (onnxruntime's QLinearMul reference). `fixed` mode: TFLite's
    int8 MUL (the product of the inputs minus their zero points in int32, scaled by the
    fixed-point multiplier of sa * sb / s computed in double, plus the zero point).
    Integral float32 values in [lo, hi]."""
    sa, za, sb, zb, s, z = (np.float32(p) for p in params)
    if mode == "fixed":
        (q,), (shift,) = quantize_multiplier(np.array([float(sa) * float(sb) / float(s)]))
        prod = (a.astype(np.int64) - int(za)) * (b.astype(np.int64) - int(zb))
        y = fixed_point_multiply(prod, q, shift).astype(np.float64) + float(z)
        return np.clip(y, lo, hi).astype(np.float32)
    product = dequantize_ref(a, np.array(sa), np.array(za)) * dequantize_ref(b, np.array(sb), np.array(zb))
    return quantize_ref(product, np.array(s), np.array(z), lo, hi)


class QuantOp(StructuredOp):
    """Base of the ops converting between floats and integers elementwise (quantize,
    dequantize, requantize, cast, a requantizing add): operands broadcast to the first
    one's shape (a per-axis parameter is [1, C, 1, 1]), so they tile like elementwise ops
    (every output dim may be cut; broadcast dims of a parameter stay whole). `IN` and `OUT`
    name the element types of the first operand and of the result; parameters are f32.
    `DATA`: how many leading operands are data (a chain's running value may be any of
    them), the rest parameters.
    `compute` gets the saturation range as `min`/`max` (`tile_attrs` fills them in
    from the result type when the op has none) and returns the values in float32:
    the typed result buffer stores them (exactly, for integral values)."""

    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    IN: ClassVar[tuple[str, ...]]
    OUT: ClassVar[tuple[str, ...]]
    PARAMS: ClassVar[tuple[str, ...]] = ()
    DATA: ClassVar[int] = 1

    def verify_(self) -> None:
        x = self.operands[0]
        expect_type(self, x, "operand #0", self.IN)
        for i, (what, v) in enumerate(zip(self.PARAMS, self.operands[1:]), start=1):
            expect_type(self, v, f"{what} (operand #{i})", ("f32",))
            if broadcast_shapes(shape_of(v), shape_of(x)) != shape_of(x):
                raise VerifyException(f"'{self.name}': {what} of shape {list(shape_of(v))} does not broadcast "
                                      f"to the input's {list(shape_of(x))}")
        expect_type(self, self.results[0], "result", self.OUT)
        if shape_of(self.results[0]) != shape_of(x):
            raise VerifyException(f"'{self.name}': result shape {list(shape_of(self.results[0]))} must be the "
                                  f"input's {list(shape_of(x))}")
        self.verify_range()

    def verify_range(self) -> None:
        """`min`/`max` (if given) within the result type, min <= max."""
        if "min" not in self.attributes and "max" not in self.attributes:
            return
        t = type_of(self.results[0])
        tlo, thi = qrange(t)
        lo, hi = self.bounds()
        if not tlo <= lo <= hi <= thi:
            raise VerifyException(f"'{self.name}': min {lo} / max {hi} must satisfy {tlo} <= min <= max <= {thi} "
                                  f"({t})")

    def bounds(self) -> tuple[int, int]:
        """The saturation range: `min`/`max`, by default the result type's range."""
        tlo, thi = qrange(type_of(self.results[0]))
        attrs = dict(self.attributes)
        return attr_int(attrs, "min", tlo), attr_int(attrs, "max", thi)

    def tile_map(self) -> TileMap:
        out = shape_of(self.results[0])
        return TileMap((True,) * len(out), tuple(broadcast_follow(shape_of(v), out) for v in self.operands))

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        attrs = dict(self.attributes)
        if type_name(type_of(self.results[0])) in ("i8", "ui8"):
            lo, hi = self.bounds()
            attrs.update(min=IntegerAttr(lo, i64), max=IntegerAttr(hi, i64))
        return attrs

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (self.compute(self.tile_attrs(), *inputs).astype(np_dtype(self.results[0])),)


def _range_attrs(lo: int | None, hi: int | None) -> dict[str, Attribute]:
    return {k: IntegerAttr(v, i64) for k, v in (("min", lo), ("max", hi)) if v is not None}


@irdl_op_definition
class QuantizeOp(QuantOp):
    """A float tensor to i8/ui8 (ONNX QuantizeLinear): saturate(round_half_even(x /
    scale) + zero_point), `quantize_ref`. `scale` and `zero_point` are f32 tensors
    broadcastable to x (zero points hold integers); optional `min`/`max` narrow the
    saturation range (a fused Relu/Clip; default: the result type's range)."""

    name = "npu_graph.quantize"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    min = opt_attr_def(IntegerAttr)
    max = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = FLOATS
    OUT: ClassVar[tuple[str, ...]] = QUANTIZED
    PARAMS: ClassVar[tuple[str, ...]] = ("scale", "zero_point")
    VECTOR_COST: ClassVar[int] = 2  # divide, round-add-clamp

    def __init__(self, x: SSAValue, scale: SSAValue, zero_point: SSAValue, result_type: TensorType, *,
                 min: int | None = None, max: int | None = None):
        super().__init__(operands=[x, scale, zero_point], result_types=[result_type], attributes=_range_attrs(min, max))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, scale, zp = arrays
        return quantize_ref(x, scale, zp, attr_int(attrs, "min", -128), attr_int(attrs, "max", 127))


@irdl_op_definition
class DequantizeOp(QuantOp):
    """An i8/ui8/i32 tensor to float (ONNX DequantizeLinear): (x - zero_point) * scale in
    f32, `dequantize_ref`; `scale`, `zero_point` are f32 tensors broadcastable to x."""

    name = "npu_graph.dequantize"
    input = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = ("i8", "ui8", "i32")
    OUT: ClassVar[tuple[str, ...]] = FLOATS
    PARAMS: ClassVar[tuple[str, ...]] = ("scale", "zero_point")

    def __init__(self, x: SSAValue, scale: SSAValue, zero_point: SSAValue, result_type: TensorType):
        super().__init__(operands=[x, scale, zero_point], result_types=[result_type])

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        return dequantize_ref(*arrays)


@irdl_op_definition
class RequantizeOp(QuantOp):
    """An i32 accumulator to i8/ui8 (`requantize_ref`): clamp(round(acc * multiplier) +
    zero_point, min, max). `multiplier` (input scale * weight scale / output scale; per
    channel allowed) and `zero_point` are f32 tensors broadcastable to acc. `mode`
    "float" multiplies in float32 and rounds half to even (onnxruntime's CPU kernels);
    "fixed" uses the int32 multiplier and shift TFLite derives from the float
    (`quantize_multiplier`; rounding half away from zero). `min`/`max` default to the
    result type's range; a fused Relu/Clip narrows them."""

    name = "npu_graph.requantize"
    input = operand_def(TensorType)
    multiplier = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    min = opt_attr_def(IntegerAttr)
    max = opt_attr_def(IntegerAttr)
    mode = opt_attr_def(StringAttr)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = ("i32",)
    OUT: ClassVar[tuple[str, ...]] = QUANTIZED
    PARAMS: ClassVar[tuple[str, ...]] = ("multiplier", "zero_point")
    VECTOR_COST: ClassVar[int] = 2  # multiply, round-add-clamp

    def __init__(self, acc: SSAValue, multiplier: SSAValue, zero_point: SSAValue, result_type: TensorType, *,
                 min: int | None = None, max: int | None = None, mode: str = "float"):
        attrs = _range_attrs(min, max)
        if mode != "float":
            attrs["mode"] = StringAttr(mode)
        super().__init__(operands=[acc, multiplier, zero_point], result_types=[result_type], attributes=attrs)

    @property
    def requant_mode(self) -> str:
        return self.mode.data if self.mode is not None else "float"

    @classmethod
    def after_product_cycles(cls, arch: Arch, elements: int) -> int:
        """Cycles of the requantize of `elements` accumulators a cube product just wrote:
        in the cube's output stage with `requant_unit = cube` (`Arch.cube_output_cycles`),
        else `VECTOR_COST` vector passes."""
        if arch.requant_unit == "cube":
            return arch.cube_output_cycles(elements)
        return arch.vector_cycles(elements, cls.VECTOR_COST)

    def verify_range(self) -> None:
        if self.requant_mode not in REQUANT_MODES:
            raise VerifyException(f"'{self.name}': mode '{self.requant_mode}' must be one of "
                                  f"{', '.join(REQUANT_MODES)}")
        super().verify_range()

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        acc, mul, zp = arrays
        mode = attrs.get("mode")
        return requantize_ref(acc, mul, zp, attr_int(attrs, "min", -128), attr_int(attrs, "max", 127),
                              mode.data if isinstance(mode, StringAttr) else "float")


class QBinaryOp(EightBit, QuantOp):
    """Base of the requantizing binary ops of two 8-bit tensors (i8/ui8), `QAddOp` and
    `QMulOp`: `b` broadcasts to `a`'s shape; each input's and the result's scale and zero
    point are f32 attributes (`QADD_PARAMS`: per tensor); `mode` as `RequantizeOp`'s (the
    arch's `requant`: "float" is the QDQ graph's float32 arithmetic, bit-identical to it;
    "fixed" TFLite's integer one); `min`/`max` narrow the saturation range (a fused
    Relu/Clip). Both operands are data (`DATA`): an epilogue or a strip group may carry
    its chain through either. Priced as the 8-bit elementwise ops they are, at the vector
    unit's 8-bit rate (the rescales pipelined per lane, as Ethos-U's elementwise unit):
    VECTOR_COST 4. `REF`: the reference (`qadd_ref`, `qmul_ref`)."""

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    a_scale = attr_def(FloatAttr)
    a_zero_point = attr_def(FloatAttr)
    b_scale = attr_def(FloatAttr)
    b_zero_point = attr_def(FloatAttr)
    scale = attr_def(FloatAttr)
    zero_point = attr_def(FloatAttr)
    min = opt_attr_def(IntegerAttr)
    max = opt_attr_def(IntegerAttr)
    mode = opt_attr_def(StringAttr)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = QUANTIZED
    OUT: ClassVar[tuple[str, ...]] = QUANTIZED
    DATA: ClassVar[int] = 2
    VECTOR_COST: ClassVar[int] = 4  # two input rescales (or zero-point subtractions), the op, output rescale
    REF: ClassVar[Callable[..., np.ndarray]]

    def __init__(self, a: SSAValue, b: SSAValue, params: Sequence[float], result_type: TensorType, *,
                 min: int | None = None, max: int | None = None, mode: str = "float"):
        attrs: dict[str, Attribute] = {k: FloatAttr(float(v), f32) for k, v in zip(QADD_PARAMS, params, strict=True)}
        attrs.update(_range_attrs(min, max))
        if mode != "float":
            attrs["mode"] = StringAttr(mode)
        super().__init__(operands=[a, b], result_types=[result_type], attributes=attrs)

    def verify_(self) -> None:
        expect_type(self, self.a, "operand a", self.IN)
        expect_type(self, self.b, "operand b", self.IN)
        expect_type(self, self.result, "result", self.OUT)
        x = shape_of(self.a)
        if broadcast_shapes(shape_of(self.b), x) != x:
            raise VerifyException(f"'{self.name}': operand b of shape {list(shape_of(self.b))} does not broadcast "
                                  f"to a's {list(x)}")
        if shape_of(self.result) != x:
            raise VerifyException(f"'{self.name}': result shape {list(shape_of(self.result))} must be a's {list(x)}")
        params = self.params()
        for k, v in zip(QADD_PARAMS, params):
            bad = not np.isfinite(v) or (v <= 0 if k.endswith("scale") else v != round(v))
            if bad:
                want = "a positive finite scale" if k.endswith("scale") else "an integral zero point"
                raise VerifyException(f"'{self.name}': {k} = {v} must be {want}")
        for k, t in (("a_zero_point", self.a), ("b_zero_point", self.b), ("zero_point", self.result)):
            lo, hi = qrange(type_of(t))
            if not lo <= params[QADD_PARAMS.index(k)] <= hi:
                raise VerifyException(f"'{self.name}': {k} = {params[QADD_PARAMS.index(k)]:g} outside "
                                      f"{type_of(t)}'s [{lo}, {hi}]")
        if (self.mode.data if self.mode is not None else "float") not in REQUANT_MODES:
            raise VerifyException(f"'{self.name}': mode '{self.mode.data}' must be one of "  # pyright: ignore
                                  f"{', '.join(REQUANT_MODES)}")
        self.verify_range()

    def params(self) -> list[float]:
        """The six parameters in `QADD_PARAMS` order."""
        return [attr_float(dict(self.attributes), k, float("nan")) for k in QADD_PARAMS]

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        a, b = arrays
        mode = attrs.get("mode")
        return cls.REF(a, b, [attr_float(attrs, k, float("nan")) for k in QADD_PARAMS],
                       attr_int(attrs, "min", -128), attr_int(attrs, "max", 127),
                       mode.data if isinstance(mode, StringAttr) else "float")


@irdl_op_definition
class QAddOp(QBinaryOp):
    """Two 8-bit tensors added in their real values, the sum requantized to an 8-bit
    result (`qadd_ref`; ONNX's DequantizeLinear -> Add -> QuantizeLinear, what onnxruntime
    runs as QLinearAdd and TFLite as its int8 ADD): a residual add. VECTOR_COST 4 (two
    input rescales, the add, the output's rescale-round-clamp)."""

    name = "npu_graph.qadd"
    REF = staticmethod(qadd_ref)


@irdl_op_definition
class QMulOp(QBinaryOp):
    """Two 8-bit tensors (i8/ui8) multiplied in their real values, the product
    requantized to an 8-bit result (`qmul_ref`; ONNX's DequantizeLinear -> Mul ->
    QuantizeLinear, onnxruntime's QLinearMul, TFLite's int8 MUL): a squeeze-and-excitation
    block's channel gate, a gated activation. VECTOR_COST 4 (the two zero-point
    subtractions, the multiply, the output's rescale-round-clamp)."""

    name = "npu_graph.qmul"
    REF = staticmethod(qmul_ref)


@irdl_op_definition
class CastOp(QuantOp):
    """A float tensor to another float type (f32, f16, bf16; ONNX Cast between them):
    rounding to nearest even when narrowing (numpy float16, ml_dtypes bfloat16). A tile
    computes the identity in the input's type; storing into the typed result buffer
    rounds."""

    name = "npu_graph.cast"
    input = operand_def(TensorType)
    result = result_def(TensorType)
    IN: ClassVar[tuple[str, ...]] = FLOATS
    OUT: ClassVar[tuple[str, ...]] = FLOATS

    def __init__(self, x: SSAValue, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type])

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        return arrays[0]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (inputs[0].astype(np.float32).astype(np_dtype(self.result)),)


@irdl_op_definition
class TableOp(EightBit, StructuredOp):
    """An i8/ui8 tensor through a 256-entry lookup table (TOSA's `table` for 8-bit
    inputs) indexed by each element's 8 bits: out = table[x mod 256] (x for ui8, x + 256
    for a negative i8). `table` is [256], or [C, 256] with `axis` naming the input dim
    of size C whose index picks the row (per-channel functions). The result has the table's element
    type (i8/ui8). npu-fuse-qdq computes these tables from chains of elementwise ops
    between a dequantize and a quantize; VECTOR_COST 2 (index, gather) at the 8-bit rate."""

    name = "npu_graph.table"
    input = operand_def(TensorType)
    table = operand_def(TensorType)
    axis = opt_attr_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT
    VECTOR_COST: ClassVar[int] = 2  # index, gather

    def __init__(self, x: SSAValue, table: SSAValue, result_type: TensorType, axis: int | None = None):
        attrs = {} if axis is None else {"axis": IntegerAttr(axis, i64)}
        super().__init__(operands=[x, table], result_types=[result_type], attributes=attrs)

    def verify_(self) -> None:
        expect_type(self, self.input, "input", QUANTIZED)
        expect_type(self, self.table, "table", QUANTIZED)
        if type_of(self.result) != type_of(self.table):
            raise VerifyException(f"'{self.name}': result element type {type_of(self.result)} must be the "
                                  f"table's {type_of(self.table)}")
        x, t = shape_of(self.input), shape_of(self.table)
        if shape_of(self.result) != x:
            raise VerifyException(f"'{self.name}': result shape {list(shape_of(self.result))} must be the "
                                  f"input's {list(x)}")
        if self.axis is None:
            if t != (256,):
                raise VerifyException(f"'{self.name}': a table without `axis` has shape [256], got {list(t)}")
            return
        a = self.axis.value.data
        if not 0 <= a < len(x) or t != (x[a], 256):
            raise VerifyException(f"'{self.name}': axis {a} needs a table of shape [input dim {a}, 256] = "
                                  f"{[x[a] if 0 <= a < len(x) else '?', 256]}, got {list(t)}")

    def tile_map(self) -> TileMap:
        rank = len(shape_of(self.result))
        rows = (Follow(None),) if self.axis is None else (Follow(self.axis.value.data), Follow(None))
        return TileMap((True,) * rank, (same_dims(rank), rows))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        x, table = arrays
        idx = np.rint(x).astype(np.int64) & 255  # (x's 8 bits)
        table = np.rint(table).astype(np.int64)  # (the result is the table's integers)
        if table.ndim == 1:
            return table[idx]
        shape = [1] * x.ndim
        shape[attr_int(attrs, "axis", 1)] = table.shape[0]
        return table[np.arange(table.shape[0]).reshape(shape), idx]

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (self.compute(self.tile_attrs(), *inputs).astype(np_dtype(self.results[0])),)

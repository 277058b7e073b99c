"""ONNX converters for elementwise ops: arithmetic and variadic ops (Add ... Sum, Mean, Max,
Min), activations (Relu, Sigmoid, Gelu, LeakyRelu, PRelu, HardSigmoid, HardSwish, Clip ...),
unary math (Sqrt, Floor, Sin ...), Mod, Pow, comparisons, logical ops, Where, Cast and
CastLike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ml_dtypes
import numpy as np
import onnx
import onnx.checker
import onnx.defs
import onnx.shape_inference
from xdsl.dialects.builtin import (
    TensorType,
)
from xdsl.ir import SSAValue

from lowering.importer.base import (
    NODE_FLOAT,
    Converter,
    NodeContext,
    NodeError,
    Output,
    Tensor,
    converter,
    f32_tensor,
    in_f32,
    node_float,
)
from npu_dialects.dtypes import bf16, element_type, f16, f32
from npu_dialects.graph import (
    SIMPLE_UNARY,
    AbsOp,
    AddOp,
    BinaryOp,
    CastOp,
    ClipOp,
    DivOp,
    ElementwiseOp,
    EqualOp,
    ErfOp,
    ExpOp,
    FmodOp,
    GeluOp,
    GeluTanhOp,
    GreaterOp,
    LessOp,
    LogOp,
    MaxOp,
    MinOp,
    ModOp,
    MulOp,
    NegOp,
    PowOp,
    PReluOp,
    ReciprocalOp,
    ReluOp,
    SigmoidOp,
    SqrtOp,
    SubOp,
    TanhOp,
    TruncOp,
    UnaryOp,
    WhereOp,
    broadcast_shapes,
    shape_of,
)


def is_float(dtype: np.dtype) -> bool:
    """Whether `dtype` is a floating-point type."""
    return np.issubdtype(dtype, np.floating)


def eltwise(ctx: NodeContext, op_class: Callable[..., ElementwiseOp], *values: SSAValue) -> SSAValue:
    """`op_class(values...)` with the broadcast result shape (NodeError when the shapes
    do not broadcast)."""
    shapes = [shape_of(v) for v in values]
    shape = broadcast_shapes(*shapes)
    if shape is None:
        listed = [str(list(s)) for s in shapes]
        raise NodeError(f"operand shapes {', '.join(listed[:-1])} and {listed[-1]} do not broadcast")
    return ctx.build(op_class(*values, f32_tensor(shape))).results[0]


def same_type_operands(ctx: NodeContext, indices: Sequence[int]) -> list[SSAValue]:
    """The inputs as SSA values; integer/boolean constants are carried as f32 when all
    the inputs share their type (an int64 constant next to a float tensor stays an error)."""
    dtypes = {ctx.dtype(i) for i in indices}
    carried = len(dtypes) == 1 and not is_float(next(iter(dtypes)))
    return [ctx.value(i, carried=carried) for i in indices]


def _binary(op_class: type[BinaryOp]) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        a, b = same_type_operands(ctx, (0, 1))
        y = eltwise(ctx, op_class, a, b)
        if op_class is DivOp and not is_float(ctx.dtype(0)):
            y = eltwise(ctx, TruncOp, y)  # integer division truncates
        return [ctx.typed(y, ctx.dtype(0))]

    convert.__doc__ = f"Elementwise `{op_class.name}` with numpy broadcasting."
    return convert


converter("Add")(_binary(AddOp))
converter("Sub")(_binary(SubOp))
converter("Mul")(_binary(MulOp))
converter("Div")(_binary(DivOp))


@converter("Relu")
def convert_relu(ctx: NodeContext) -> Sequence[Output]:
    """max(x, 0)."""
    return [ctx.build(ReluOp(ctx.value(0), f32_tensor(ctx.shape(0)))).results[0]]


# --------------------------------------------------------------------------------------
# Converters: elementwise, activations, comparisons
# --------------------------------------------------------------------------------------


def _unary(op_class: type[UnaryOp]) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        return [ctx.build(op_class(ctx.value(0), f32_tensor(ctx.shape(0)))).results[0]]

    convert.__doc__ = f"Elementwise `{op_class.name}`."
    return convert


for _op_type, _cls in (("Sigmoid", SigmoidOp), ("Tanh", TanhOp), ("Erf", ErfOp), ("Sqrt", SqrtOp),
                       ("Exp", ExpOp), ("Log", LogOp), ("Neg", NegOp), ("Abs", AbsOp),
                       ("Reciprocal", ReciprocalOp)):
    converter(_op_type)(_unary(_cls))


for _op_type in ("Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
                 "Asinh", "Acosh", "Atanh", "Softplus"):
    converter(_op_type)(_unary(SIMPLE_UNARY[_op_type.lower()]))


@converter("IsNaN")
def convert_isnan(ctx: NodeContext) -> Sequence[Output]:
    """`npu_graph.isnan`: a boolean carried as 1.0 / 0.0."""
    return [ctx.typed(eltwise(ctx, SIMPLE_UNARY["isnan"], ctx.value(0)), np.bool_)]


@converter("IsInf", attrs=("detect_negative", "detect_positive"))
def convert_isinf(ctx: NodeContext) -> Sequence[Output]:
    """`npu_graph.isinf`, times x > 0 or x < 0 when only one sign is detected."""
    x = ctx.value(0)
    neg, pos = int(ctx.attr("detect_negative", 1)), int(ctx.attr("detect_positive", 1))
    y = eltwise(ctx, SIMPLE_UNARY["isinf"], x)
    if neg and not pos:
        y = eltwise(ctx, MulOp, y, eltwise(ctx, LessOp, x, ctx.scalar(0.0)))
    elif pos and not neg:
        y = eltwise(ctx, MulOp, y, eltwise(ctx, GreaterOp, x, ctx.scalar(0.0)))
    elif not pos and not neg:
        y = eltwise(ctx, MulOp, y, ctx.scalar(0.0))
    return [ctx.typed(y, np.bool_)]


@converter("Mod", attrs=("fmod",))
def convert_mod(ctx: NodeContext) -> Sequence[Output]:
    """fmod=1: `npu_graph.fmod` (the remainder takes the dividend's sign); fmod=0:
    `npu_graph.mod` (the divisor's sign; integers are carried as f32: exact below 2^24)."""
    a, b = same_type_operands(ctx, (0, 1))
    op = FmodOp if int(ctx.attr("fmod", 0)) else ModOp
    return [ctx.typed(eltwise(ctx, op, a, b), ctx.dtype(0))]


@converter("Gelu", attrs=("approximate",))
def convert_gelu(ctx: NodeContext) -> Sequence[Output]:
    """Gelu (opset 20): exact (erf) or `approximate="tanh"`."""
    approx = ctx.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise NodeError(f"unsupported attribute approximate={approx}")
    cls = GeluTanhOp if approx == "tanh" else GeluOp
    return [ctx.build(cls(ctx.value(0), f32_tensor(ctx.shape(0)))).results[0]]


@converter("LeakyRelu", attrs=("alpha",))
def convert_leaky_relu(ctx: NodeContext) -> Sequence[Output]:
    """x where x >= 0 else alpha * x: `npu_graph.prelu` with an inline scalar slope."""
    return [eltwise(ctx, PReluOp, ctx.value(0), ctx.scalar(float(ctx.attr("alpha", 0.01))))]


@converter("PRelu")
def convert_prelu(ctx: NodeContext) -> Sequence[Output]:
    """x where x >= 0 else slope * x, the slope broadcast to x."""
    if broadcast_shapes(ctx.shape(0), ctx.shape(1)) != ctx.shape(0):
        raise NodeError(f"slope of shape {list(ctx.shape(1))} does not broadcast to the input "
                        f"{list(ctx.shape(0))}")
    return [eltwise(ctx, PReluOp, ctx.value(0), ctx.value(1))]


@converter("Pow")
def convert_pow(ctx: NodeContext) -> Sequence[Output]:
    """x ** y; an integer exponent is carried as f32. ONNX lets the exponent's type differ
    from the base's (an f32 exponent of an f16 base): then the power is computed in f32
    and rounded to the base's type, as onnxruntime's f32 kernel between casts does."""
    x, y = ctx.value(0), ctx.value(1, carried=True)
    if element_type(x) == element_type(y):
        return [eltwise(ctx, PowOp, x, y)]
    return in_f32(ctx, lambda: [eltwise(ctx, PowOp, ctx.value(0), ctx.value(1, carried=True))], element_type(x))


@converter("Clip", attrs=("min", "max"))
def convert_clip(ctx: NodeContext) -> Sequence[Output]:
    """min(max(x, lo), hi): bounds are attributes before opset 11 and optional inputs
    from 11 on; a missing bound is -inf / +inf (Clip(0, 6) is ReLU6). Integers (from
    opset 12) and their bounds are carried as f32."""
    carried = not is_float(ctx.dtype(0))
    x = ctx.value(0, carried=carried)
    if ctx.opset < 11:
        lo = ctx.scalar(float(ctx.attr("min", -np.inf)))
        hi = ctx.scalar(float(ctx.attr("max", np.inf)))
    else:
        lo = ctx.value(1, carried=carried) if ctx.has_input(1) else ctx.scalar(-np.inf)
        hi = ctx.value(2, carried=carried) if ctx.has_input(2) else ctx.scalar(np.inf)
    for v, what in ((lo, "min"), (hi, "max")):
        if int(np.prod(shape_of(v))) != 1:
            raise NodeError(f"{what} must be a scalar, got shape {list(shape_of(v))}")
    return [ctx.typed(eltwise(ctx, ClipOp, x, lo, hi), ctx.dtype(0))]


def hard_sigmoid(ctx: NodeContext, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    """`clip(alpha * x + beta, 0, 1)` built from elementwise ops."""
    y = eltwise(ctx, AddOp, eltwise(ctx, MulOp, x, ctx.scalar(alpha)), ctx.scalar(beta))
    return eltwise(ctx, ClipOp, y, ctx.scalar(0.0), ctx.scalar(1.0))


@converter("HardSigmoid", attrs=("alpha", "beta"))
def convert_hard_sigmoid(ctx: NodeContext) -> Sequence[Output]:
    """clip(alpha * x + beta, 0, 1) as mul, add, clip."""
    return [hard_sigmoid(ctx, ctx.value(0), float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5)))]


@converter("HardSwish")
def convert_hard_swish(ctx: NodeContext) -> Sequence[Output]:
    """x * clip(x / 6 + 1 / 2, 0, 1) as mul, add, clip, mul."""
    x = ctx.value(0)
    return [eltwise(ctx, MulOp, x, hard_sigmoid(ctx, x, 1.0 / 6.0, 0.5))]


def _variadic(op_class: type[BinaryOp], mean: bool = False) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        idx = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
        if not idx:
            raise NodeError("needs at least one input")
        vals = same_type_operands(ctx, idx)
        if len(vals) == 1:
            return [ctx.tensor(idx[0])]
        y = vals[0]
        for v in vals[1:]:
            y = eltwise(ctx, op_class, y, v)
        if mean:
            y = eltwise(ctx, MulOp, y, ctx.scalar(1.0 / len(vals)))
        return [ctx.typed(y, ctx.dtype(idx[0]))]

    convert.__doc__ = (f"A chain of `{op_class.name}` over the inputs (numpy broadcasting)"
                       + (", times 1/n" if mean else "") + ".")
    return convert


converter("Sum")(_variadic(AddOp))
converter("Mean")(_variadic(AddOp, mean=True))
converter("Max")(_variadic(MaxOp))
converter("Min")(_variadic(MinOp))


def _compare(op_class: type[BinaryOp], negate: bool = False) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        y = eltwise(ctx, op_class, *same_type_operands(ctx, (0, 1)))
        if negate:
            y = eltwise(ctx, SubOp, ctx.scalar(1.0), y)
        return [ctx.typed(y, np.bool_)]

    convert.__doc__ = (f"{'1 - ' if negate else ''}`{op_class.name}`: a boolean carried as 1.0 / 0.0"
                       + (" (NaN operands give true)" if negate else "") + ".")
    return convert


converter("Equal")(_compare(EqualOp))
converter("Less")(_compare(LessOp))
converter("Greater")(_compare(GreaterOp))
converter("LessOrEqual")(_compare(GreaterOp, negate=True))
converter("GreaterOrEqual")(_compare(LessOp, negate=True))


@converter("Not")
def convert_not(ctx: NodeContext) -> Sequence[Output]:
    """1 - x on a boolean carried as 1.0 / 0.0."""
    return [ctx.typed(eltwise(ctx, SubOp, ctx.scalar(1.0), ctx.value(0, carried=True)), np.bool_)]


def _logical(op_class: type[BinaryOp], doc: str, xor: bool = False) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        y = eltwise(ctx, op_class, ctx.value(0, carried=True), ctx.value(1, carried=True))
        if xor:
            y = eltwise(ctx, AbsOp, y)
        return [ctx.typed(y, np.bool_)]

    convert.__doc__ = doc
    return convert


converter("And")(_logical(MulOp, "a * b on booleans carried as 1.0 / 0.0."))
converter("Or")(_logical(MaxOp, "max(a, b) on booleans carried as 1.0 / 0.0."))
converter("Xor")(_logical(SubOp, "|a - b| on booleans carried as 1.0 / 0.0.", xor=True))


@converter("Where")
def convert_where(ctx: NodeContext) -> Sequence[Output]:
    """a where cond else b; the boolean condition is carried as 1.0 / 0.0 (cast to f16/bf16
    when a and b are: only its being non-zero counts)."""
    cond = ctx.value(0, carried=True)
    if element_type(cond) != node_float():
        cond = ctx.build(CastOp(cond, TensorType(node_float(), shape_of(cond)))).results[0]
    vals = [cond, *same_type_operands(ctx, (1, 2))]
    return [ctx.typed(eltwise(ctx, WhereOp, *vals), ctx.dtype(1))]


_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}
"""Cast targets held as f32 (float16 and bfloat16 are cast for real: `_cast`)."""


def _cast(ctx: NodeContext, to: int) -> Sequence[Output]:
    """Cast to ONNX type `to`: to float16/bfloat16 a real `npu_graph.cast` (rounding to
    nearest even), from them a cast to f32 first; float32/double stay f32, integer
    targets truncate toward zero (carried as f32), bool gives x != 0 as 1.0 / 0.0;
    constant data is cast at import (`_cast_constant`)."""
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to))
    except Exception:
        raise NodeError(f"unsupported target type {to}") from None
    folded = _cast_constant(ctx, dtype)
    if folded is not None:
        return folded
    x = ctx.value(0, carried=True)
    narrow = {int(onnx.TensorProto.FLOAT16): f16, int(onnx.TensorProto.BFLOAT16): bf16}.get(to)
    if narrow is not None:
        y = x if element_type(x) == narrow else ctx.build(CastOp(x, TensorType(narrow, shape_of(x)))).results[0]
        return [ctx.typed(y, dtype)]
    if element_type(x) != f32:  # (f16/bf16 -> f32, then as from f32)
        x = ctx.build(CastOp(x, TensorType(f32, shape_of(x)))).results[0]
    token = NODE_FLOAT.set(f32)
    try:
        return _cast_from_f32(ctx, x, to, dtype)
    finally:
        NODE_FLOAT.reset(token)


def _cast_from_f32(ctx: NodeContext, x: SSAValue, to: int, dtype: np.dtype) -> Sequence[Output]:
    """`_cast` of an f32 value (integers and booleans carried as f32) to a type other than f16/bf16."""
    src = ctx.dtype(0)
    if to in _FLOAT_TYPES or to == onnx.TensorProto.BOOL and src == np.bool_:
        return [ctx.typed(x, np.float32 if to in _FLOAT_TYPES else dtype)]
    if to == onnx.TensorProto.BOOL:
        y = eltwise(ctx, WhereOp, x, ctx.scalar(1.0), ctx.scalar(0.0))
        return [ctx.typed(y, np.bool_)]
    if not np.issubdtype(dtype, np.integer):
        raise NodeError(f"unsupported target type {onnx.TensorProto.DataType.Name(to).lower()}")
    if not is_float(src) and src != ml_dtypes.bfloat16:
        return [ctx.typed(x, dtype)]
    return [ctx.typed(eltwise(ctx, TruncOp, x), dtype)]


@converter("Cast", attrs=("to", "saturate"))
def convert_cast(ctx: NodeContext) -> Sequence[Output]:
    """Integers and booleans are carried as f32 values: see `_cast`."""
    return _cast(ctx, int(ctx.attr("to")))


@converter("CastLike", attrs=("saturate",))
def convert_cast_like(ctx: NodeContext) -> Sequence[Output]:
    """Cast to the element type of input 1 (see `_cast`); only that input's type is read."""
    return _cast(ctx, onnx.helper.np_dtype_to_tensor_dtype(ctx.dtype(1)))


def _cast_constant(ctx: NodeContext, dtype: np.dtype) -> list[Output] | None:
    """The cast of constant input data, done at import (None: not constant, or a
    conversion left to the device): a Cast of constant data stays constant for the
    operands that must be (ONNX's Attention body casts its -inf fill like the query,
    then pads the mask with it: a Pad value must be a constant)."""
    t = ctx.tensor(0)
    if t.data is None or t.placeholder:
        return None
    data = np.asarray(t.data)
    if dtype in (np.float16, ml_dtypes.bfloat16):
        data = data.astype(np.float32).astype(dtype)  # (rounded: a real cast)
    elif is_float(dtype):
        data = data.astype(np.float32)  # (double is carried as f32)
    elif dtype == np.bool_:
        data = data != 0
    elif np.issubdtype(dtype, np.integer) and data.dtype == ml_dtypes.bfloat16:
        return None
    elif np.issubdtype(dtype, np.integer) and is_float(data.dtype) and np.isfinite(data).all():
        data = np.trunc(data).astype(dtype)
    elif np.issubdtype(dtype, np.integer) and not is_float(data.dtype):
        data = data.astype(dtype)
    else:
        return None
    return [Tensor(ctx.node.output[0], tuple(data.shape), data.dtype, data=data, origin=ctx.label)]

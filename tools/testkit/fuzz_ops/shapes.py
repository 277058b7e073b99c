"""Shape, constant and cast generators of the fuzzer's op table: Shape (start/end),
Size, ConstantOfShape, Range, Constant, the Hann/Hamming/Blackman windows, Cast and
CastLike (float, double, int32, int64, bool), integer arithmetic."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from tools.testkit.fuzz_builder import (
    INT_TYPES,
    MAX_RANK,
    ONNX_TYPES,
    Builder,
    Tensor,
    broadcast,
)
from tools.testkit.fuzz_ops.table import ALL_TYPES, OPS, OpGen, bcast_shape, f32, like, op


@op("Shape", since=1, weight=0.8, ranks=(0, MAX_RANK), dtypes=ALL_TYPES)
def _shape(b: Builder, t: Tensor) -> Tensor | None:
    """t reshaped to another live tensor's shape (that tensor's Shape, or a slice of it
    with start/end joined to constant dims), or expanded to it."""
    def same_size(p: Tensor) -> bool:
        return p.size == t.size and p.rank >= 1 and p.shape != t.shape
    p = b.partner(same_size, t, same_shape=0.0)
    if p is None or p is t:
        p = b.partner(lambda q: broadcast(t.shape, q.shape) == q.shape and q.rank >= 1, t, same_shape=0.0)
        if p is None or p is t or t.rank > p.rank:
            return None
        s = b.node("Shape", [p], [p.rank], min(p.shape), max(p.shape), dtype="int64", exact=True)
        return b.node("Expand", [t, s], p.shape, t.lo, t.hi, **like(t, p.shape))
    if b.opset >= 15 and p.rank >= 2 and b.coin(0.4):
        start = b.randint(1, p.rank - 1)
        part = b.node("Shape", [p], [p.rank - start], min(p.shape), max(p.shape), dtype="int64", exact=True,
                      start=start)
        s = b.node("Concat", [b.ints(list(p.shape[:start])), part], [p.rank], min(p.shape), max(p.shape),
                   dtype="int64", exact=True, axis=0)
    else:
        s = b.node("Shape", [p], [p.rank], min(p.shape), max(p.shape), dtype="int64", exact=True)
    return b.node("Reshape", [t, s], p.shape, t.lo, t.hi, **like(t, p.shape))


@op("Size", weight=0.5, ranks=(0, MAX_RANK))
def _size(b: Builder, t: Tensor) -> Tensor:
    """t divided by its element count (Size, cast to float)."""
    n = b.node("Size", [t], [], t.size, t.size, dtype="int64", exact=True)
    f = b.node("Cast", [n], [], t.size, t.size, exact=True, to=TensorProto.FLOAT)
    return b.node("Div", [t, f], t.shape, t.lo / t.size, t.hi / t.size)


@op("ConstantOfShape", since=9, weight=0.5, ranks=(1, MAX_RANK))
def _constant_of_shape(b: Builder, t: Tensor) -> Tensor:
    """t plus a filled tensor of its shape (the shape from Shape(t) or a constant)."""
    shape_in = b.node("Shape", [t], [t.rank], min(t.shape), max(t.shape), dtype="int64", exact=True) \
        if b.coin(0.5) else b.ints(t.shape)
    v = float(b.draw([0.0, 1.5, -0.25]))
    attrs: dict = {"value": helper.make_tensor("value", TensorProto.FLOAT, [1], [v])} if v else {}
    c = b.node("ConstantOfShape", [shape_in], t.shape, v, v, exact=True, **attrs)
    return b.node("Add", [t, c], t.shape, t.lo + v, t.hi + v)


@op("Range", since=11, weight=0.5)
def _range_op(b: Builder, t: Tensor) -> Tensor:
    """t plus a Range along its last dim (float start and delta, or int64 then a Cast)."""
    n = t.shape[-1]
    if b.coin(0.5):
        start, delta = float(b.draw([0.0, -1.0, 0.5])), float(b.draw([0.25, -0.5, 1.0]))
        r = b.node("Range", [b.const(f32(start)), b.const(f32(start + delta * (n - 0.5))), b.const(f32(delta))],
                   [n], -abs(delta) * n - 1, abs(delta) * n + 1, exact=True)
    else:
        start, delta = b.randint(-3, 3), b.draw([1, 2, -1])
        ri = b.node("Range", [b.ints(start), b.ints(start + delta * n), b.ints(delta)], [n], -2 * n - 3, 2 * n + 3,
                    dtype="int64", exact=True)
        r = b.node("Cast", [ri], [n], ri.lo, ri.hi, exact=True, to=TensorProto.FLOAT)
    return b.node("Add", [t, r], t.shape, t.lo + r.lo, t.hi + r.hi)


@op("Constant", weight=0.6, ranks=(0, MAX_RANK))
def _constant(b: Builder, t: Tensor) -> Tensor:
    """t times a Constant node's value (a tensor broadcasting to t, a float or floats)."""
    how = b.draw(["value", "value_float", "value_floats"] if t.rank >= 1 else ["value", "value_float"])
    if how == "value_float":
        shape: list[int] = []
        attrs: dict = {"value_float": float(b.rng.uniform(-2, 2))}
    elif how == "value_floats":
        shape = [t.shape[-1]]
        attrs = {"value_floats": [float(v) for v in b.rng.uniform(-2, 2, shape)]}
    else:
        shape = bcast_shape(b, t)
        attrs = {"value": numpy_helper.from_array(b.rng.uniform(-2, 2, shape).astype(np.float32), "value")}
    c = b.node("Constant", [], shape, -2, 2, exact=True, **attrs)
    return b.node("Mul", [t, c], t.shape, -2 * t.mag, 2 * t.mag)


def _window(name: str) -> None:
    def gen(b: Builder, t: Tensor) -> Tensor | None:
        """The window added to t's last dim, not multiplied: its ends are 0 in exact
        arithmetic but rounding noise in onnxruntime's float32 (BlackmanWindow's first
        value 1.5e-8), so a product's end columns would be noise a later normalization
        (LpNormalization) scales up to O(1)."""
        n = t.shape[-1]
        if n < 2:
            return None  # (size 1, symmetric: 0 / 0 in ONNX's formula; onnxruntime gives 1)
        attrs: dict = {"periodic": int(b.coin(0.5))} if b.coin(0.6) else {}
        w = b.node(name, [b.ints(n)], [n], -0.1, 1.0, **attrs)
        return b.node("Add", [t, w], t.shape, t.lo - 0.1, t.hi + 1.0)
    OPS[name] = OpGen(gen, 0.4, 17)


for _name in ("HannWindow", "HammingWindow", "BlackmanWindow"):
    _window(_name)


def _cast_to(b: Builder, t: Tensor, dtype: str, like: bool = False) -> Tensor:
    """t cast to `dtype` (Cast, or CastLike with a constant of that type)."""
    if dtype in INT_TYPES and t.is_float:  # truncation: exact inputs, kept small
        lo, hi = math.trunc(t.lo), math.trunc(t.hi)
    else:
        lo, hi = t.lo, t.hi
    if dtype == "bool":
        lo, hi = 0, 1
    kw: dict = dict(dtype=dtype, exact=t.exact or not t.is_float and dtype != "float")
    if like:
        target = b.const(np.zeros([1], np.float32 if dtype == "float" else np.dtype(dtype)))
        return b.node("CastLike", [t, target], t.shape, lo, hi, **kw)
    return b.node("Cast", [t], t.shape, lo, hi, **kw, to=ONNX_TYPES[dtype])


@op("Cast", weight=1.2, ranks=(0, MAX_RANK), dtypes=ALL_TYPES)
def _cast(b: Builder, t: Tensor) -> Tensor:
    """float (exact) -> int32/int64/bool, float -> double -> float, int/bool -> float or int."""
    like = b.opset >= 15 and b.coin(0.3)
    if not t.is_float:
        return _cast_to(b, t, b.draw(["float", "float", *(d for d in INT_TYPES if d != t.dtype)]), like)
    if b.coin(0.25):  # through double and back: exact
        d = b.node("Cast", [t], t.shape, t.lo, t.hi, dtype="float", exact=t.exact, pos=t.pos, to=TensorProto.DOUBLE)
        b.pool.remove(d)  # (a double tensor: only this Cast reads it)
        return b.node("Cast", [d], t.shape, t.lo, t.hi, exact=t.exact, pos=t.pos, to=TensorProto.FLOAT)
    x = b.exact_float(t)
    if x.mag > 1000:
        return _cast_to(b, x, "bool", like)
    return _cast_to(b, x, b.draw(["int64", "int32", "bool"]), like)


OPS["CastLike"] = OpGen(lambda b, t: _cast_to(b, t, "float", True) if not t.is_float else
                        _cast_to(b, b.exact_float(t), b.draw(["int64", "int32"]), True),
                        0.5, 15, ranks=(0, MAX_RANK), dtypes=ALL_TYPES)


def _int_binary(b: Builder, t: Tensor) -> Tensor | None:
    """Add/Sub/Mul/Div of an integer tensor with a small nonzero constant or a live
    tensor of its type (Div truncates toward zero)."""
    op_type = b.draw(["Add", "Sub", "Mul", "Div"])
    shape = bcast_shape(b, t)
    if op_type == "Div":
        d = b.rng.integers(1, 4, shape) * b.rng.choice([-1, 1], shape)
        return b.node("Div", [t, b.const(np.asarray(d, t.dtype))], t.shape, -t.mag, t.mag, dtype=t.dtype, exact=True)
    p = b.partner(lambda q: q.dtype == t.dtype and broadcast(t.shape, q.shape) == t.shape and q.mag <= 64, t)
    other: Tensor | str = p if p is not None and p is not t and b.coin(0.5) else \
        b.const(np.asarray(b.rng.integers(-3, 4, shape), t.dtype))
    m = t.mag * 4 + 4 if op_type != "Mul" else (t.mag + 1) * max(4.0, other.mag if isinstance(other, Tensor) else 4.0)
    if m > 2 ** 20:
        return None
    return b.node(op_type, [t, other], t.shape, -m, m, dtype=t.dtype, exact=True)


OPS["int_binary"] = OpGen(_int_binary, 1.0, 7, ranks=(0, MAX_RANK), dtypes=INT_TYPES)
OPS["int_unary"] = OpGen(lambda b, t: b.node(b.draw(["Abs", "Neg"]), [t], t.shape, -t.mag, t.mag, dtype=t.dtype,
                                             exact=True), 0.5, 6, ranks=(0, MAX_RANK), dtypes=INT_TYPES)

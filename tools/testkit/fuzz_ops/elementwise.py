"""Elementwise generators of the fuzzer's op table: unary activations and functions
(domains kept: Log, Sqrt, Reciprocal read positive tensors, Acos/Asin/Atanh bounded
ones; Floor, Ceil, Round, Sign, ThresholdedRelu, Shrink exact ones), Clip, IsNaN,
IsInf (of real infinities), Dropout; binary arithmetic with constants or live tensors
(broadcasting, residuals), Max/Min/Sum/Mean, Pow, PRelu, Mod, the comparisons, And,
Or, Xor, Not and Where."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from tools.testkit.fuzz_builder import (
    EXP_MAX_INPUT,
    MAX_ELEMS,
    MAX_RANK,
    SIGMOID_RELATIVE_FROM,
    Builder,
    Out,
    Tensor,
    broadcast,
    interval_mul,
)
from tools.testkit.fuzz_ops.table import OPS, OpGen, bcast_shape, f32, op

# ======================================================================================
# Elementwise unary
# ======================================================================================


def _monotone(name: str, f: Callable[[float], float], *, exact: bool = False, pos: bool = False,
              decreasing: bool = False, attrs: Callable[[Builder], dict] | None = None,
              since: int = 1, weight: float = 1.0, mag: float | None = None) -> None:
    """A same-shape op whose output interval is f of the input's ends (`mag`: only for
    inputs bounded by it)."""
    def gen(b: Builder, t: Tensor) -> Tensor | None:
        if mag is not None and t.mag > mag:
            return None
        kw = attrs(b) if attrs else {}
        ends = sorted((f(t.lo), f(t.hi)))
        relative = name != "Sigmoid" or t.lo >= SIGMOID_RELATIVE_FROM
        return b.node(name, [t], t.shape, ends[0], ends[1], exact=exact and t.exact, pos=pos and relative, **kw)
    OPS[name] = OpGen(gen, weight, since, ranks=(0, MAX_RANK))


def _range(name: str, lo: float, hi_of: Callable[[Tensor], float], *, attrs: Callable[[Builder], dict] | None = None,
           since: int = 1, weight: float = 1.0) -> None:
    """A same-shape op with outputs in [lo, hi_of(t)] (activations not monotone)."""
    def gen(b: Builder, t: Tensor) -> Tensor | None:
        kw = attrs(b) if attrs else {}
        return b.node(name, [t], t.shape, min(lo, 0.0), max(hi_of(t), 0.0), **kw)
    OPS[name] = OpGen(gen, weight, since, ranks=(0, MAX_RANK))


def _sp(x: float) -> float:
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


_monotone("Relu", lambda x: max(x, 0.0), exact=True, weight=2.0)
_monotone("Neg", lambda x: -x, exact=True, weight=1.5)
_monotone("Sigmoid", lambda x: 1 / (1 + math.exp(-max(min(x, 80), -80))), pos=True, weight=1.5)
_monotone("Tanh", math.tanh, weight=1.5)
_monotone("Erf", math.erf)
_monotone("Atan", math.atan)
_monotone("Asinh", math.asinh)
_monotone("Softsign", lambda x: x / (1 + abs(x)))
_monotone("Softplus", _sp)
_monotone("Identity", lambda x: x, exact=True, weight=0.5)
_monotone("Exp", lambda x: math.exp(x), pos=True, mag=EXP_MAX_INPUT, weight=1.5)
_monotone("Sinh", math.sinh, mag=EXP_MAX_INPUT)
_monotone("LeakyRelu", lambda x: x if x > 0 else 0.5 * x, attrs=lambda b: {"alpha": float(b.draw([0.01, 0.1, 0.5]))})
_monotone("Elu", lambda x: x if x > 0 else 2.0 * (math.exp(x) - 1),
          attrs=lambda b: {"alpha": float(b.draw([0.5, 1.0, 2.0]))})
_monotone("Celu", lambda x: x if x > 0 else 2.0 * (math.exp(x / 2.0) - 1) - 1, since=12,
          attrs=lambda b: {"alpha": float(b.draw([0.5, 1.0, 2.0]))})
_monotone("Selu", lambda x: 1.06 * x if x > 0 else -1.76, attrs=lambda b: b.draw([{}, {"alpha": 1.5, "gamma": 0.8}]))
_range("Sin", -1.0, lambda t: 1.0)
_range("Cos", -1.0, lambda t: 1.0)
_range("HardSigmoid", 0.0, lambda t: 1.0,
       attrs=lambda b: b.draw([{}, {"alpha": 0.3, "beta": 0.4}, {"alpha": 1.0, "beta": 0.0}]))
_range("HardSwish", -0.4, lambda t: t.hi, since=14)
_range("Mish", -0.31, lambda t: t.hi, since=18)
_range("Swish", -1.0, lambda t: t.hi, since=24,
       attrs=lambda b: b.draw([{}, {"alpha": 0.5}, {"alpha": 2.0}]))
_range("Gelu", -0.2, lambda t: t.hi, since=20, attrs=lambda b: b.draw([{}, {"approximate": "tanh"}]))


@op("Abs", weight=1.5, ranks=(0, MAX_RANK))
def _abs(b: Builder, t: Tensor) -> Tensor:
    lo = 0.0 if t.lo <= 0 <= t.hi else min(abs(t.lo), abs(t.hi))
    return b.node("Abs", [t], t.shape, lo, t.mag, exact=t.exact)


@op("Cosh", ranks=(0, MAX_RANK))
def _cosh(b: Builder, t: Tensor) -> Tensor | None:
    if t.mag > EXP_MAX_INPUT:
        return None
    return b.node("Cosh", [t], t.shape, 1.0, math.cosh(t.mag), pos=True)


@op("Log", weight=1.5, ranks=(0, MAX_RANK))
def _log(b: Builder, t: Tensor) -> Tensor:
    x = b.positive(t)
    return b.node("Log", [x], x.shape, math.log(max(x.lo, 1e-30)), math.log(max(x.hi, 1e-30)) + 1e-6)


@op("Sqrt", weight=1.5, ranks=(0, MAX_RANK))
def _sqrt(b: Builder, t: Tensor) -> Tensor:
    x = b.positive(t)
    return b.node("Sqrt", [x], x.shape, math.sqrt(x.lo), math.sqrt(x.hi), pos=True)


@op("Reciprocal", ranks=(0, MAX_RANK))
def _reciprocal(b: Builder, t: Tensor) -> Tensor:
    x = b.positive(t, floor=0.1)
    return b.node("Reciprocal", [x], x.shape, 1 / x.hi, 1 / x.lo, pos=True)


def _inverse_trig(name: str, f: Callable[[float], float], bound: float) -> None:
    def gen(b: Builder, t: Tensor) -> Tensor:
        x = b.bounded(t, bound)
        ends = sorted((f(x.lo), f(x.hi)))
        return b.node(name, [x], x.shape, ends[0], ends[1])
    OPS[name] = OpGen(gen, ranks=(0, MAX_RANK))


_inverse_trig("Asin", math.asin, 0.9)
_inverse_trig("Acos", math.acos, 0.9)
_inverse_trig("Atanh", math.atanh, 0.9)
_inverse_trig("Tan", math.tan, 1.2)


@op("Acosh", ranks=(0, MAX_RANK))
def _acosh(b: Builder, t: Tensor) -> Tensor:
    x = b.positive(t, floor=1.05)
    return b.node("Acosh", [x], x.shape, math.acosh(x.lo), math.acosh(x.hi))


def _discrete(name: str, f: Callable[[float], float]) -> None:
    """Floor, Ceil, Round, Sign: discontinuous, so they read exact tensors."""
    def gen(b: Builder, t: Tensor) -> Tensor:
        x = b.exact_float(t)
        if b.coin(0.4):  # finer steps: more values near the jumps (x * 2 is exact)
            x = b.node("Mul", [x, b.const(f32(b.draw([2.0, 4.0, 0.5])))], x.shape, -2 * x.mag, 2 * x.mag,
                       exact=True)
        return b.node(name, [x], x.shape, f(x.lo) - 1, f(x.hi) + 1, exact=True)
    OPS[name] = OpGen(gen, ranks=(1, MAX_RANK))


_discrete("Floor", math.floor)
_discrete("Ceil", math.ceil)
_discrete("Round", round)
_discrete("Sign", lambda x: float(np.sign(x)))


@op("ThresholdedRelu", since=10)
def _thresholded_relu(b: Builder, t: Tensor) -> Tensor:
    x = b.exact_float(t)
    return b.node("ThresholdedRelu", [x], x.shape, 0.0, max(x.hi, 0.0), exact=True,
                  alpha=float(b.draw([0.0, 0.5, 1.0, 1.5])))


@op("Shrink", since=9)
def _shrink(b: Builder, t: Tensor) -> Tensor:
    x = b.exact_float(t)
    bias = float(b.draw([0.0, 0.5, 1.0]))
    return b.node("Shrink", [x], x.shape, x.lo - bias, x.hi + bias, lambd=float(b.draw([0.0, 0.5, 1.5])),
                  bias=bias)


@op("Clip", weight=1.0, ranks=(0, MAX_RANK), dtypes=("float", "int64", "int32"))
def _clip(b: Builder, t: Tensor) -> Tensor | None:
    """Bounds within t's range; either may be absent (an input from opset 11)."""
    if t.dtype != "float" and b.opset < 12:
        return None
    width = t.hi - t.lo
    lo, hi = sorted(float(v) for v in b.rng.uniform(t.lo - 0.1 * width, t.hi + 0.1 * width, 2))
    if t.dtype != "float":
        lo, hi = math.floor(lo), math.ceil(hi)
    use_lo, use_hi = b.draw([(True, True), (True, False), (False, True), (False, False)])
    out_lo, out_hi = (lo if use_lo else t.lo), (hi if use_hi else t.hi)
    kw: dict = dict(dtype=t.dtype, exact=t.exact, pos=t.pos and (not use_lo or lo > 0))
    if b.opset < 11:
        attrs: dict = {**({"min": lo} if use_lo else {}), **({"max": hi} if use_hi else {})}
        return b.node("Clip", [t], t.shape, out_lo, out_hi, **kw, **attrs)
    np_type = np.float32 if t.dtype == "float" else np.dtype(t.dtype)
    ins: list[Tensor | str] = [t, b.const(np.asarray(lo, np_type)) if use_lo else "",
                               b.const(np.asarray(hi, np_type)) if use_hi else ""]
    while ins[-1] == "":
        ins.pop()
    return b.node("Clip", ins, t.shape, out_lo, out_hi, **kw)


@op("IsNaN", since=9, weight=0.5, ranks=(0, MAX_RANK))
def _isnan(b: Builder, t: Tensor) -> Tensor:
    return b.node("IsNaN", [t], t.shape, 0, 1, dtype="bool", exact=True)


@op("IsInf", since=10, weight=0.7)
def _isinf(b: Builder, t: Tensor) -> Tensor:
    """Often of a tensor holding infinities: Log of exact zeros (Relu of an exact tensor)."""
    x = t
    if b.coin(0.6):
        e = b.exact_float(t)
        r = b.node("Relu", [e], e.shape, 0.0, max(e.hi, 0.0), exact=True)
        x = b.node("Log", [r], r.shape, -math.inf, math.log(max(r.hi, 1e-3)) + 1, exact=True)
    attrs: dict = b.draw([{}, {"detect_negative": 0}, {"detect_positive": 0}, {"detect_negative": 0, "detect_positive": 0}])
    m = b.node("IsInf", [x], x.shape, 0, 1, dtype="bool", exact=True, **attrs)
    if x is not t:  # keep the infinities away from any other reader
        b.pool.remove(x)
    return m


@op("Dropout", weight=0.4, ranks=(0, MAX_RANK))
def _dropout(b: Builder, t: Tensor) -> Tensor:
    """Inference: the identity. A ratio (attribute before 12, input after), an unused mask."""
    outs: list[Out | None] = [Out(t.shape, t.lo, t.hi, exact=t.exact, pos=t.pos)]
    if b.opset < 12:
        return b.multi("Dropout", [t], outs, **({"ratio": 0.3} if b.coin(0.5) else {}))[0]
    ins: list[Tensor | str] = [t]
    if b.coin(0.5):
        ins.append(b.const(f32(0.25)))
        if b.coin(0.5):
            ins.append(b.const(np.array(False)))
    return b.multi("Dropout", ins, outs)[0]


# ======================================================================================
# Elementwise binary and variadic
# ======================================================================================


def _arith(op_type: str, a: tuple[float, float], c: tuple[float, float]) -> tuple[float, float]:
    if op_type == "Add":
        return a[0] + c[0], a[1] + c[1]
    if op_type == "Sub":
        return a[0] - c[1], a[1] - c[0]
    return interval_mul(a, c)


@op("binary_const", weight=3.0, ranks=(0, MAX_RANK))
def binary_const(b: Builder, t: Tensor) -> Tensor:
    """Add/Mul/Sub/Div with an initializer broadcasting to t; a divisor is kept in +-[0.5, 2]."""
    op_type = b.draw(["Add", "Mul", "Sub", "Div"])
    shape = bcast_shape(b, t)
    if op_type == "Div":
        data = b.rng.uniform(0.5, 2.0, shape) * b.rng.choice([-1.0, 1.0], shape)
        return b.node("Div", [t, b.const(data)], t.shape, -2 * t.mag, 2 * t.mag)
    data = b.rng.standard_normal(shape) * 0.5
    c = b.const(data)
    args = [t, c] if b.coin(0.6) else [c, t]
    cr = (float(data.min(initial=0)), float(data.max(initial=0)))
    lo, hi = _arith(op_type, (t.lo, t.hi), cr) if args[0] is t or op_type != "Sub" else _arith("Sub", cr, (t.lo, t.hi))
    return b.node(op_type, args, t.shape, lo, hi)


@op("binary_live", weight=3.0, ranks=(0, MAX_RANK))
def _binary_live(b: Builder, t: Tensor) -> Tensor | None:
    """Add/Mul/Sub with another live tensor broadcasting against t (often one of t's
    shape: a residual), or Div by a positive tensor made of it."""
    def fits(p: Tensor) -> bool:
        s = broadcast(t.shape, p.shape)
        return p.is_float and s is not None and int(np.prod(s)) <= MAX_ELEMS
    p = b.partner(fits, t)
    if p is None:
        return None
    shape = broadcast(t.shape, p.shape)
    assert shape is not None
    ops = ["Add", "Sub"] + (["Mul"] if t.mag * p.mag <= 120 else []) + (["Div"] if b.budget() >= 2 else [])
    op_type = b.draw(ops)
    if op_type == "Div":
        d = b.positive(p, floor=0.2)
        return b.node("Div", [t, d], shape, -t.mag / d.lo, t.mag / d.lo)
    a, c = (t, p) if b.coin(0.5) else (p, t)
    lo, hi = _arith(op_type, (a.lo, a.hi), (c.lo, c.hi))
    return b.node(op_type, [a, c], shape, lo, hi, pos=op_type in ("Add", "Mul") and a.pos and c.pos)


def _variadic(name: str, exact: bool) -> None:
    def gen(b: Builder, t: Tensor) -> Tensor | None:
        ins = [t]
        shape: tuple[int, ...] | None = t.shape
        for _ in range(b.draw([0, 1, 1, 2])):
            def fits(p: Tensor) -> bool:
                s = broadcast(shape, p.shape) if shape is not None else None
                return p.dtype == t.dtype and s is not None and int(np.prod(s)) <= MAX_ELEMS
            p = b.partner(fits, t)
            if p is None:
                break
            if b.coin(0.3):  # a constant operand
                cshape = bcast_shape(b, t)
                data = b.rng.standard_normal(cshape) * 0.5
                p = b.const_tensor(data if t.dtype == "float" else np.round(data * 3).astype(t.dtype))
            shape = broadcast(shape, p.shape) if shape is not None else None
            ins.append(p)
        if shape is None:
            return None
        lo, hi = min(x.lo for x in ins), max(x.hi for x in ins)
        if name == "Sum":
            lo, hi = sum(min(x.lo, 0) for x in ins), sum(max(x.hi, 0) for x in ins)
        return b.node(name, ins, shape, lo, hi, dtype=t.dtype, exact=exact and all(x.exact for x in ins),
                      pos=all(x.pos for x in ins) and name != "Sum")
    OPS[name] = OpGen(lambda b, t: gen(b, t) if t.is_float or b.opset >= 12 else None, 1.0, 8, ranks=(0, MAX_RANK),
                      dtypes=("float",) + (("int64", "int32") if name in ("Max", "Min") else ()))


_variadic("Max", exact=True)
_variadic("Min", exact=True)
_variadic("Sum", exact=False)
_variadic("Mean", exact=False)


@op("Pow", weight=1.2, ranks=(0, MAX_RANK))
def _pow(b: Builder, t: Tensor) -> Tensor:
    """A positive base to a constant or bounded live power, or any base to 2 or 3 (a
    float or an int64 exponent)."""
    how = b.draw(["const", "live", "integer"])
    if how == "integer":
        x = b.bounded(t, 3.0)
        e = b.draw([2, 3])
        exp = b.const(np.int64(e)) if b.coin(0.3) else b.const(f32(e))
        return b.node("Pow", [x, exp], x.shape, -(x.mag ** e), x.mag ** e)
    x = b.positive(b.bounded(t, 3.0), floor=0.05)
    if how == "const":
        e = float(b.draw([0.5, 1.5, -0.5, -1.0, 2.0, 1 / 3]))
        shape = [] if b.coin(0.7) else bcast_shape(b, x)
        exp = b.const(np.full(shape, e, np.float32))
        ends = sorted((x.lo ** e, x.hi ** e))
        return b.node("Pow", [x, exp], x.shape, ends[0], ends[1], pos=True)

    def fits(p: Tensor) -> bool:
        s = broadcast(x.shape, p.shape)
        return p.is_float and s is not None and s == x.shape
    p = b.partner(fits, x)
    y = b.bounded(p if p is not None else t, 2.0)
    m = max(abs(math.log(x.lo)), abs(math.log(x.hi))) * 2.0
    return b.node("Pow", [x, y], x.shape, math.exp(-m), math.exp(m), pos=True)


@op("PRelu", ranks=(1, MAX_RANK))
def _prelu(b: Builder, t: Tensor) -> Tensor:
    """The slope a constant broadcasting to t (per channel, ...), or a live tensor."""
    def fits(p: Tensor) -> bool:
        return p.is_float and broadcast(t.shape, p.shape) == t.shape and p.mag <= 2
    p = b.partner(fits, t) if b.coin(0.3) else None
    slope: Tensor | str = p if p is not None and p is not t else b.uniform(bcast_shape(b, t), -0.5, 1.5)
    m = t.mag * (slope.mag if isinstance(slope, Tensor) else 1.5)
    return b.node("PRelu", [t, slope], t.shape, -m, max(t.hi, m))


@op("Mod", since=10, dtypes=("float", "int64", "int32"))
def _mod(b: Builder, t: Tensor) -> Tensor:
    """fmod=1 (required for floats) or, on integers, fmod 0 or 1, by a nonzero constant."""
    if t.is_float:
        x = b.exact_float(t)
        shape = [] if b.coin(0.6) else bcast_shape(b, x)
        d = b.rng.uniform(0.5, 3.0, shape) * b.rng.choice([-1.0, 1.0], shape)
        return b.node("Mod", [x, b.const(d)], x.shape, -3.0, 3.0, fmod=1)
    shape = bcast_shape(b, t)
    d = b.rng.integers(1, 4, shape) * b.rng.choice([-1, 1], shape)
    return b.node("Mod", [t, b.const(np.asarray(d, t.dtype))], t.shape, -3, 3, dtype=t.dtype, exact=True,
                  fmod=int(b.coin(0.5)))


_COMPARE = ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")


def _compare(b: Builder, t: Tensor, op_type: str | None = None) -> Tensor:
    """A comparison of an exact tensor with a constant or another exact tensor: a bool."""
    ops = [o for o in _COMPARE if b.opset >= 12 or "Or" not in o]
    op_type = op_type or str(b.draw(ops))
    x = b.exact_float(t) if t.is_float else t

    def fits(p: Tensor) -> bool:
        s = broadcast(x.shape, p.shape)
        return p.exact and p.dtype == x.dtype and s is not None and int(np.prod(s)) <= MAX_ELEMS
    p = b.partner(fits, x) if b.coin(0.4) else None
    if p is None or p is x:
        shape = bcast_shape(b, x)
        if x.is_float:
            xlo, xhi = x.lo + 0.0, x.hi + 0.0  # (-0.0 as 0.0: numpy's uniform(0.0, -0.0) raised, seed 207876)
            lo, hi = max(xlo, -2), min(xhi, 2)
            lo, hi = (lo, hi) if lo < hi else (xlo, xhi)
            data = np.round(b.rng.uniform(xlo, xhi, shape) * 2) / 2 if op_type == "Equal" else \
                b.rng.uniform(lo, hi, shape)
            other: Tensor | str = b.const(np.asarray(data, np.float32))
        else:
            other = b.const(np.asarray(b.rng.integers(-2, 3, shape), x.dtype))
        shape_out = x.shape
    else:
        other, shape_out = p, broadcast(x.shape, p.shape)
    args = [x, other] if b.coin(0.7) else [other, x]
    return b.node(op_type, args, shape_out or x.shape, 0, 1, dtype="bool", exact=True)


for _name in _COMPARE:
    OPS[_name] = OpGen(lambda b, t, _n=_name: _compare(b, t, _n), 0.6, 12 if "Or" in _name else 7,
                       dtypes=("float", "int64", "int32"))


def _a_bool(b: Builder, t: Tensor, shape: Sequence[int] | None = None) -> Tensor:
    """A live bool tensor broadcasting to `shape` (default t's), else a new comparison."""
    target = tuple(shape if shape is not None else t.shape)
    cands = [p for p in b.of_type("bool") if broadcast(target, p.shape) == target and p.name != t.name]
    if cands and b.coin(0.7):
        return b.draw(cands)
    src = b.exact_float(t)
    if src.shape != target and broadcast(target, src.shape) != target:
        src = next((p for p in b.pool if p.exact and p.is_float and broadcast(target, p.shape) == target), src)
    if broadcast(target, src.shape) == target:
        m = _compare(b, src)
        if broadcast(target, m.shape) == target:
            return m
    return b.node("Less", [b.const(np.zeros(target, np.float32)), b.const(b.rng.standard_normal(target))],
                  target, 0, 1, dtype="bool", exact=True)


def _logical(name: str) -> None:
    """And, Or, Xor of t (a bool, or a comparison of a float t) and another bool."""
    def gen(b: Builder, t: Tensor) -> Tensor | None:
        t = t if t.dtype == "bool" else _compare(b, t)
        p = _a_bool(b, t)
        shape = broadcast(t.shape, p.shape)
        if shape is None:
            return None
        return b.node(name, [t, p] if b.coin(0.5) else [p, t], shape, 0, 1, dtype="bool", exact=True)
    OPS[name] = OpGen(gen, 1.0, 7, ranks=(0, MAX_RANK), dtypes=("bool", "float"))


for _name in ("And", "Or", "Xor"):
    _logical(_name)


@op("Not", weight=1.0, ranks=(0, MAX_RANK), dtypes=("bool", "float"))
def _not(b: Builder, t: Tensor) -> Tensor:
    t = t if t.dtype == "bool" else _compare(b, t)
    return b.node("Not", [t], t.shape, 0, 1, dtype="bool", exact=True)


@op("Where", weight=1.5, since=9, ranks=(0, MAX_RANK), dtypes=("float", "bool", "int64", "int32"))
def _where(b: Builder, t: Tensor) -> Tensor | None:
    """t (a bool: the condition; else a branch) with another branch of its type, a live
    tensor or a constant, broadcasting."""
    if t.dtype == "bool":
        cond = t
        x = b.partner(lambda p: p.is_float and broadcast(cond.shape, p.shape) is not None, t)
        if x is None:
            return None
    else:
        x = t
        cond = _a_bool(b, t, broadcast(t.shape, tuple(bcast_shape(b, t))) if b.coin(0.5) else t.shape)
    def fits(p: Tensor) -> bool:
        s = broadcast(broadcast(cond.shape, x.shape) or (), p.shape)
        return p.dtype == x.dtype and s is not None and int(np.prod(s)) <= MAX_ELEMS
    y = b.partner(fits, x) if b.coin(0.6) else None
    if y is None or y is x:
        data = b.rng.standard_normal(bcast_shape(b, x))
        y = b.const_tensor(data if x.is_float else np.round(data).astype(x.dtype))
        shape = broadcast(broadcast(cond.shape, x.shape) or (), np.shape(data))
    else:
        shape = broadcast(broadcast(cond.shape, x.shape) or (), y.shape)
    if shape is None or int(np.prod(shape)) > MAX_ELEMS:
        return None
    a, c = (x, y) if b.coin(0.5) else (y, x)
    return b.node("Where", [cond, a, c], shape, min(x.lo, y.lo), max(x.hi, y.hi), dtype=x.dtype,
                  exact=x.exact and y.exact)

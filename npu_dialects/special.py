"""The vector unit's special functions - exp, tanh, erf, sigmoid, reciprocal, rsqrt - as
the arch says it evaluates them: exactly, by a table of N entries with linear
interpolation, or by a polynomial of degree d, per element type. The simulator emulates
the method (`Evaluator`, active inside `evaluating`), the cost model and the simulator
charge its vector passes (`Arch.special_passes`), `--compare-all` names its error.

An arch parameter `fn_<function>` (`fn_exp`, ...) is `exact` (the default: a
special-function unit at the vector rate, as every table before issue 45), `tableN`
(2 <= N <= 2^20) or `polyD` (1 <= D <= 24), or such items joined by `+`, each with an
optional type prefix: `f16:table256+bf16:table256` computes 16-bit tiles by table and f32
ones exactly; an item without a prefix is the method of every other type.

Outside `evaluating` the graph references call numpy as before (`exp(x)` is `np.exp(x)`
bit for bit): constant folding and the float64 reference stay exact.

Algorithm
---------
Each function is reduced to an interval where the table or polynomial approximates it:

- exp: x log2(e) = k + f (k = floor), 2^f on [0, 1], scaled by 2^k (`ldexp`);
- reciprocal: x = m 2^e (`frexp`, |m| in [0.5, 1)), 1/m on [0.5, 1], scaled by 2^-e;
- rsqrt: x = m 2^e with e even (m in [0.5, 2)), 1/sqrt(m), scaled by 2^(-e/2);
- tanh and erf (odd) and sigmoid (sigmoid(-x) = 1 - sigmoid(x)) on [0, R], R where the
  function is within f32 rounding of its limit (tanh 9, erf 4, sigmoid 17), the limit beyond.

A table of N entries samples the interval at N evenly spaced points, both ends
included, rounded to f32; between two entries the value is interpolated linearly. A
polynomial of degree d interpolates the function at the d + 1 Chebyshev points of the
interval (close to the minimax polynomial) and is evaluated by Horner's rule. The
arithmetic is f32 (a 16-bit tile computes in f32 and rounds its result, as every vector
op). Vector passes per element: exact 1, table 3 (index, gather, interpolate), polyD
D + 2 (reduce, D multiply-adds, scale) - `Method.passes`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

FUNCTIONS = ("exp", "tanh", "erf", "sigmoid", "reciprocal", "rsqrt")
"""The functions whose evaluation the arch chooses."""
PARAMS = {f"fn_{f}": f for f in FUNCTIONS}
"""Arch parameter -> function."""
TYPES = ("f32", "f16", "bf16")
"""The types a spec item may name (the vector unit computes special functions in floats)."""
MAX_TABLE, MAX_DEGREE = 1 << 20, 24

ELTWISE_USES: dict[str, tuple[str, ...]] = {
    "sigmoid": ("sigmoid",), "tanh": ("tanh",), "erf": ("erf",), "gelu": ("erf",), "gelu_tanh": ("tanh",),
    "exp": ("exp",), "reciprocal": ("reciprocal",)}
"""The special functions an elementwise function (`graph.ELEMENTWISE`) evaluates per element."""


@dataclass(frozen=True)
class Method:
    """How one function is evaluated: `exact`, `table` (`size` entries) or `poly` (degree `size`)."""

    kind: str = "exact"
    size: int = 0

    @property
    def passes(self) -> int:
        """Vector passes per element (see the module docstring)."""
        return 1 if self.kind == "exact" else 3 if self.kind == "table" else self.size + 2

    def __str__(self) -> str:
        return "exact" if self.kind == "exact" else f"{self.kind}{self.size}"


EXACT = Method()
_ITEM = re.compile(r"(?:(\w+):)?(exact|table(\d+)|poly(\d+))")


@lru_cache(maxsize=256)
def parse_spec(text: str) -> dict[str, Method]:
    """`fn_*`'s value -> {type name or "" (every other type): Method}; ValueError saying
    what is wrong."""
    out: dict[str, Method] = {}
    for item in text.strip().split("+"):
        m = _ITEM.fullmatch(item.strip())
        if m is None:
            raise ValueError(f"'{item}' is not exact, tableN or polyD (optionally TYPE:..., items joined by '+')")
        ty, _, n, d = m.groups()
        if ty is not None and ty not in TYPES:
            raise ValueError(f"'{ty}' is not a float type ({', '.join(TYPES)})")
        if n is not None and not 2 <= int(n) <= MAX_TABLE:
            raise ValueError(f"a table has 2 to {MAX_TABLE} entries, got {int(n)}")
        if d is not None and not 1 <= int(d) <= MAX_DEGREE:
            raise ValueError(f"a polynomial has degree 1 to {MAX_DEGREE}, got {int(d)}")
        key = ty or ""
        if key in out:
            raise ValueError(f"{'type ' + key if key else 'the default method'} is given twice")
        out[key] = Method("table", int(n)) if n is not None else Method("poly", int(d)) if d is not None else EXACT
    return out


def method_of(spec: str, dtype: str) -> Method:
    """The method a `fn_*` value gives tiles computed in `dtype`."""
    by_type = parse_spec(spec)
    return by_type.get(dtype, by_type.get("", EXACT))


def _erf64(t: np.ndarray) -> np.ndarray:
    return np.asarray(np.frompyfunc(math.erf, 1, 1)(t), dtype=np.float64)


_REDUCED: dict[str, tuple[Callable[[np.ndarray], np.ndarray], float, float]] = {
    "exp": (lambda t: np.exp2(t), 0.0, 1.0),
    "reciprocal": (lambda t: 1.0 / t, 0.5, 1.0),
    "rsqrt": (lambda t: 1.0 / np.sqrt(t), 0.5, 2.0),
    "tanh": (np.tanh, 0.0, 9.0),
    "erf": (_erf64, 0.0, 4.0),
    "sigmoid": (lambda t: 1.0 / (1.0 + np.exp(-t)), 0.0, 17.0),
}
"""Function -> (its float64 reference on the reduced interval, the interval)."""


@lru_cache(maxsize=64)
def _kernel(fn: str, method: Method) -> Callable[[np.ndarray], np.ndarray]:
    """The approximation of `fn` on its reduced interval: f32 in, f32 out."""
    ref, lo, hi = _REDUCED[fn]
    if method.kind == "table":
        n = method.size
        vals = ref(np.linspace(lo, hi, n)).astype(np.float32)
        diffs = np.append(np.diff(vals), np.float32(0))
        step = np.float32((n - 1) / (hi - lo))

        def table(t: np.ndarray) -> np.ndarray:
            pos = np.nan_to_num((t - np.float32(lo)) * step, nan=0.0)
            i = np.clip(np.floor(pos), 0, n - 2).astype(np.int64)
            y = vals[i] + (pos - i.astype(np.float32)) * diffs[i]
            return np.where(np.isnan(t), np.float32(np.nan), y)
        return table
    cheb = np.polynomial.Chebyshev.interpolate(ref, method.size, domain=[lo, hi])
    coef = cheb.convert(kind=np.polynomial.Polynomial, domain=[lo, hi]).coef.astype(np.float32)
    mid, half = np.float32((lo + hi) / 2), np.float32((hi - lo) / 2)

    def poly(t: np.ndarray) -> np.ndarray:
        u = (t - mid) / half
        y = np.full_like(u, coef[-1])
        for c in coef[-2::-1]:
            y = y * u + c
        return y
    return poly


def _f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


class Evaluator:
    """The special functions by `methods` (function -> Method; absent: exact), on f32."""

    def __init__(self, methods: dict[str, Method]):
        self.methods = methods
        self.k = {f: _kernel(f, m) for f, m in methods.items() if m.kind != "exact"}

    def exp(self, x: np.ndarray) -> np.ndarray:
        if "exp" not in self.k:
            return np.exp(x)
        x = _f32(x)
        y = x * np.float32(1 / math.log(2))
        k = np.floor(np.clip(np.nan_to_num(y), -300, 300))
        with np.errstate(over="ignore", under="ignore"):
            out = np.ldexp(self.k["exp"](y - k), k.astype(np.int32))
        return np.where(np.isnan(x), x, np.where(x == np.inf, x, np.where(x == -np.inf, 0, out))).astype(np.float32)

    def reciprocal(self, x: np.ndarray) -> np.ndarray:
        if "reciprocal" not in self.k:
            return np.reciprocal(x)
        x = _f32(x)
        m, e = np.frexp(x)
        out = np.copysign(np.ldexp(self.k["reciprocal"](np.abs(m)), -e), x)
        out = np.where(x == 0, np.copysign(np.float32(np.inf), x), out)
        return np.where(np.isinf(x), np.copysign(np.float32(0), x), out).astype(np.float32)

    def rsqrt(self, x: np.ndarray) -> np.ndarray:
        if "rsqrt" not in self.k:
            return 1 / np.sqrt(x)
        x = _f32(x)
        m, e = np.frexp(np.where(x > 0, x, np.float32(1)))
        odd = (e & 1).astype(bool)
        m, e = np.where(odd, m * 2, m), np.where(odd, e - 1, e)
        out = np.ldexp(self.k["rsqrt"](m), -(e // 2))
        out = np.where(x == 0, np.float32(np.inf), np.where(x < 0, np.float32(np.nan), out))
        return np.where(np.isinf(x) & (x > 0), np.float32(0), np.where(np.isnan(x), x, out)).astype(np.float32)

    def _odd(self, fn: str, x: np.ndarray) -> np.ndarray:
        x = _f32(x)
        a = np.abs(x)
        hi = _REDUCED[fn][2]
        r = np.where(a >= hi, np.float32(1), self.k[fn](np.minimum(a, np.float32(hi))))
        return (np.sign(x) * r).astype(np.float32)

    def tanh(self, x: np.ndarray) -> np.ndarray:
        return self._odd("tanh", x) if "tanh" in self.k else np.tanh(x)

    def erf(self, x: np.ndarray) -> np.ndarray:
        return self._odd("erf", x) if "erf" in self.k else erf_ref(x)

    def sigmoid(self, x: np.ndarray) -> np.ndarray:
        if "sigmoid" not in self.k:
            return _sigmoid_ref(x)
        x = _f32(x)
        hi = np.float32(_REDUCED["sigmoid"][2])
        a = np.abs(x)
        s = np.where(a >= hi, np.float32(1), self.k["sigmoid"](np.minimum(a, hi)))
        return np.where(x < 0, np.float32(1) - s, s).astype(np.float32)


_ACTIVE: ContextVar[Evaluator | None] = ContextVar("npu_special_functions", default=None)


@contextmanager
def evaluating(ev: Evaluator | None) -> Iterator[None]:
    """The graph references evaluate special functions by `ev` inside (None: exactly)."""
    token = _ACTIVE.set(ev)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def evaluator(specs: dict[str, str], dtype: str) -> Evaluator | None:
    """The evaluator of an arch's `fn_*` values (function -> spec) for tiles in `dtype`;
    None when every function is exact there."""
    methods = {f: method_of(s, dtype) for f, s in specs.items()}
    return Evaluator(methods) if any(m.kind != "exact" for m in methods.values()) else None


def active() -> Evaluator | None:
    return _ACTIVE.get()


# What the graph references call: numpy's functions exactly outside `evaluating`.

def _dispatch(name: str, exact: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """`exact(x)` outside `evaluating`, else the active evaluator's `name` in x's dtype."""
    def fn(x: np.ndarray) -> np.ndarray:
        ev = _ACTIVE.get()
        return exact(x) if ev is None else getattr(ev, name)(x).astype(np.result_type(x), copy=False)
    fn.__name__ = name
    return fn


def divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b; with an approximate reciprocal, a times the reciprocal of b (as the vector unit divides)."""
    ev = _ACTIVE.get()
    if ev is None or "reciprocal" not in ev.k:
        return a / b
    return (a * ev.reciprocal(b)).astype(np.result_type(a, b), copy=False)


def over_sqrt(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / sqrt(b); with an approximate rsqrt, a times rsqrt(b)."""
    ev = _ACTIVE.get()
    if ev is None or "rsqrt" not in ev.k:
        return a / np.sqrt(b)
    return (a * ev.rsqrt(b)).astype(np.result_type(a, b), copy=False)


def passes(specs: dict[str, str], functions: Sequence[str], dtype: str) -> int:
    """Extra vector passes per element for evaluating `functions` by the arch's methods
    (function -> spec) in `dtype`, beyond the one exact evaluation each already counted."""
    return sum(method_of(specs[f], dtype).passes - 1 for f in functions if f in specs)


def _sigmoid_ref(x: np.ndarray) -> np.ndarray:
    return (1 / (1 + np.exp(-x))).astype(np.result_type(x), copy=False)


_ERFC_FIT = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
             -1.13520398, 1.48851587, -0.82215223, 0.17087277)


def erf_ref(x: np.ndarray) -> np.ndarray:
    """The error function, elementwise, to about 1e-7 relative error (float64 inside,
    result in x's dtype): a Taylor series for |x| < 0.5, elsewhere 1 - erfc with the
    Chebyshev fit of Numerical Recipes (`erfcc`, fractional error < 1.2e-7)."""
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        z = np.abs(x.astype(np.float64))
        z2 = z * z
        term, series = z.copy(), z.copy()
        for n in range(1, 12):
            term = term * -z2 / n
            series = series + term / (2 * n + 1)
        t = 1.0 / (1.0 + 0.5 * z)
        poly = np.full_like(t, _ERFC_FIT[-1])
        for c in reversed(_ERFC_FIT[:-1]):
            poly = c + t * poly
        erfc = t * np.exp(-z2 + poly)
        r = np.where(z < 0.5, series * (2.0 / np.sqrt(np.pi)), 1.0 - erfc)
        return (np.sign(x) * r).astype(x.dtype, copy=False)


exp = _dispatch("exp", np.exp)
tanh = _dispatch("tanh", np.tanh)
erf = _dispatch("erf", erf_ref)
sigmoid = _dispatch("sigmoid", _sigmoid_ref)
reciprocal = _dispatch("reciprocal", np.reciprocal)

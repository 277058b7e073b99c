"""Recipes: how a weight a pass made is computed from other weights, as data.

A pass that derives a weight from others (BatchNorm folding, merging projections,
folding a scale) computes it as a `Derived`: the array together with its recipe, a
JSON expression over weight-store keys. The pass gets the array it always computed
(the recipe's ops are the very numpy calls it made), and the recipe is kept with the
weight (`npu_dialects.weights.add_weight`), so a compile of the same model with other
weight values can rebuild every such weight without running a pass
(`tools/compile_cache.py`, level 0).

Expressions: `{"w": key}` (a weight of the store), `{"c": values, "dtype": d,
"shape": s}` (inline data; dtype "py": a Python scalar), `{"op": name, "args": [expr, ...], ...attributes}` with
the ops of `OPS`; `evaluate(expr, read)` computes one, `leaves(expr)` lists its keys.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

Expr = dict[str, Any]


def _scale_cols(x: np.ndarray, start: int, stop: int, factor: float) -> np.ndarray:
    out = np.array(x, dtype=np.float32)
    out[..., start:stop] *= np.float32(factor)
    return out


def _mul_rounded(a: np.ndarray, b: np.ndarray, dtype: str) -> np.ndarray:
    """`a * b` computed in float64 and rounded once to `dtype` (into a float32 array
    straight away: no float64 copy of the operands, the values astype gives)."""
    if np.dtype(dtype) != np.float32:
        return np.asarray(a).astype(np.float64) * b
    out = np.empty(np.broadcast_shapes(np.shape(a), np.shape(b)), np.float32)
    np.multiply(a, b, out=out, dtype=np.float64, casting="unsafe")
    return out


def _place(*parts: np.ndarray, size: int, offsets: list[int]) -> np.ndarray:
    data = np.zeros(size, dtype=np.float32)
    for a, offset in zip(parts, offsets):
        flat = np.asarray(a, dtype=np.float32).reshape(-1)
        data[offset:offset + flat.size] = flat
    return data


OPS: dict[str, Callable[..., np.ndarray]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "sqrt": np.sqrt,
    "concat": lambda *args, axis: np.concatenate(args, axis=axis),
    "reshape": lambda a, shape: a.reshape(shape),
    "transpose": lambda a, perm: np.transpose(a, perm),
    "broadcast_to": lambda a, shape: np.broadcast_to(a, shape),
    "cast": lambda a, dtype: np.asarray(a, dtype=np.dtype(dtype)),
    "scale_cols": _scale_cols,
    "place": _place,
    "mul_rounded": _mul_rounded,
    "flat_slice": lambda a, start, stop: np.asarray(a).reshape(-1)[start:stop],
    "slice_axis": lambda a, axis, start, stop: np.asarray(a)[(slice(None),) * axis + (slice(start, stop),)],
}
"""The ops a recipe may use: each is the numpy computation the pass performs."""


def _binary(op: str, reflected: bool = False) -> Any:
    """The operator method `op` of `Derived` (`reflected`: `other op self`)."""
    if reflected:
        return lambda self, other: Derived.apply(op, other, self)
    return lambda self, other: Derived.apply(op, self, other)


class Derived:
    """An array a pass computed and the recipe that computes it again."""

    __slots__ = ("value", "expr")

    def __init__(self, value: np.ndarray, expr: Expr):
        self.value, self.expr = value, expr

    @staticmethod
    def weight(key: str, value: np.ndarray) -> Derived:
        """A weight of the store (`value`: its contents, as the pass reads them)."""
        return Derived(value, {"w": key})

    @staticmethod
    def const(value: Any, dtype: Any = None) -> Derived:
        """Inline data (an inline constant's contents; a Python scalar stays one, so
        numpy's promotion treats it as the pass's own arithmetic did)."""
        if isinstance(value, (bool, int, float)) and dtype is None:
            return Derived(value, {"c": value, "dtype": "py"})  # type: ignore[arg-type]
        a = np.asarray(value, dtype=dtype)
        return Derived(a, {"c": a.reshape(-1).tolist(), "dtype": str(a.dtype), "shape": list(a.shape)})

    @staticmethod
    def apply(op: str, *args: Any, **attrs: Any) -> Derived:
        """`OPS[op]` of the arguments' arrays (others: constants), with its recipe."""
        lifted = [a if isinstance(a, Derived) else Derived.const(a) for a in args]
        value = OPS[op](*(a.value for a in lifted), **attrs)
        return Derived(value, {"op": op, "args": [a.expr for a in lifted], **attrs})

    _UFUNCS = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.divide: "div", np.sqrt: "sqrt"}

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """np.sqrt(d), np.multiply(a, d), ...: the op with its recipe (the ufuncs of `OPS`)."""
        name = self._UFUNCS.get(ufunc)
        if method != "__call__" or kwargs or name is None:
            return NotImplemented
        return Derived.apply(name, *inputs)

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("sub"), _binary("sub", True)
    __mul__, __rmul__ = _binary("mul"), _binary("mul", True)
    __truediv__, __rtruediv__ = _binary("div"), _binary("div", True)

    def reshape(self, *shape: Any) -> Derived:
        """As ndarray.reshape: `d.reshape(2, 3)` or `d.reshape((2, 3))`."""
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return Derived.apply("reshape", self, shape=[int(d) for d in dims])

    def astype(self, dtype: Any) -> Derived:
        return Derived.apply("cast", self, dtype=str(np.dtype(dtype)))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.value.shape)


def evaluate(expr: Expr, read: Callable[[str], np.ndarray]) -> np.ndarray:
    """The array `expr` computes, reading weights by key with `read` (KeyError, ValueError:
    a bad recipe or a missing weight)."""
    if "w" in expr:
        return read(expr["w"])
    if "c" in expr:
        if expr["dtype"] == "py":
            return expr["c"]
        return np.asarray(expr["c"], dtype=np.dtype(expr["dtype"])).reshape(expr["shape"])
    attrs = {k: v for k, v in expr.items() if k not in ("op", "args")}
    return OPS[expr["op"]](*(evaluate(a, read) for a in expr["args"]), **attrs)


def uniform_value(data: np.ndarray) -> float | None:
    """The value every element of `data` holds (None: they differ, or there are none):
    what a pass that tests a weight for one value depends on (`weights.test_uniform`)."""
    if data.size == 0 or not np.all(data == data.flat[0]):
        return None
    return float(data.flat[0])


def leaves(exprs: Iterable[Expr]) -> set[str]:
    """The weight keys the expressions read."""
    out: set[str] = set()
    stack = list(exprs)
    while stack:
        e = stack.pop()
        if "w" in e:
            out.add(e["w"])
        else:
            stack += e.get("args", [])
    return out

"""The graph a fuzz generator grows (`fuzz_graphs`, op generators in `fuzz_ops`): the
live tensors with their static shapes, element types and value bounds, and the
primitives an op generator builds with - initializers, nodes, picking a tensor to
read and a partner for it, and adapters that bring a tensor into an op's domain.

Each tensor carries what its values are good for, so float32 comparisons with
onnxruntime stay meaningful: `lo`/`hi` bound its values (Exp only reads small ones,
large ones are squashed first); `pos` marks values that are positive with a small
relative error (Exp, Sigmoid, |x| + c ...: what Log, Sqrt, Reciprocal and divisors
read); `exact` marks values every implementation computes bit for bit (graph
inputs, data movement, Neg, Abs, Max ...: what discontinuous ops - Floor, Sign,
comparisons, ArgMax, Cast to an integer - read, so no rounding difference upstream
can flip their result).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

Shape = tuple[int, ...]

MAX_ELEMS = 2048  # no tensor grows beyond this many elements
MAX_RANK = 4
INPUT_BOUND = 5.0  # graph inputs are standard normal: |x| <= 5 but for one in 2 million
SQUASH_ABOVE = 30.0  # a tensor bounded by more than this is squashed (Tanh) before anything else
EXP_MAX_INPUT = 4.0  # Exp, Sinh, Cosh only read tensors bounded by this
SIGMOID_RELATIVE_FROM = -6.0
"""onnxruntime's Sigmoid is accurate to ~1e-7 absolute only (0 below -17): its small
outputs are `pos` (relatively accurate) only for inputs from here up."""

ONNX_TYPES = {"float": TensorProto.FLOAT, "bool": TensorProto.BOOL, "int64": TensorProto.INT64,
              "int32": TensorProto.INT32, "float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
              "int8": TensorProto.INT8, "uint8": TensorProto.UINT8}
FLOAT_TYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}
"""A graph's float type (`Builder.ftype`): what its "float" tensors and float constants are."""
INT_TYPES = ("int64", "int32")


@dataclass(frozen=True)
class Tensor:
    """A live tensor: name, static shape, bounds on its values and what they are good
    for (see the module docstring); `dtype` is float, bool, int64 or int32."""

    name: str
    shape: Shape
    lo: float
    hi: float
    dtype: str = "float"
    exact: bool = False
    pos: bool = False

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def mag(self) -> float:
        return max(abs(self.lo), abs(self.hi))

    @property
    def is_float(self) -> bool:
        return self.dtype == "float"


@dataclass(frozen=True)
class Out:
    """What a node output will be (`Builder.node`'s multi-output form)."""

    shape: Sequence[int]
    lo: float
    hi: float
    dtype: str = "float"
    exact: bool = False
    pos: bool = False


class Builder:
    """The graph under construction: nodes, initializers, the pool of live tensors,
    how often each is read, and the opset the nodes are written for."""

    def __init__(self, rng: np.random.Generator, limit: int, opset: int, kind: str = "f32"):
        self.rng = rng
        self.kind = kind  # f32, qdq, f16 (ftype float16), cast (fuzz_graphs.KINDS)
        self.ftype = "float16" if kind == "f16" else "float32"
        self.qparams: dict[str, Any] = {}  # DequantizeLinear outputs -> their quantization (fuzz_ops.quantized)
        self.limit = limit  # nodes to grow
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[Tensor] = []
        self.pool: list[Tensor] = []
        self.readers: Counter[str] = Counter()
        self.wants_reader: list[Tensor] = []  # viewed tensors still waiting for their other reader
        self.motif_outputs: list[str] = []  # view-chain results and other readers of the viewed tensors

    # ----------------------------------------------------------------- random helpers

    def coin(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def draw(self, seq: Sequence[Any]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def randint(self, lo: int, hi: int) -> int:
        """An int in lo..hi (both included)."""
        return int(self.rng.integers(lo, hi + 1))

    def axis(self, t: Tensor, negative: float = 0.3) -> int:
        """A random axis of t, negative (counted from the end) with probability `negative`."""
        a = self.randint(0, t.rank - 1)
        return a - t.rank if self.coin(negative) else a

    # ----------------------------------------------------------------- primitives

    def input(self, shape: Shape) -> Tensor:
        t = Tensor(f"in{len(self.inputs)}", shape, -INPUT_BOUND, INPUT_BOUND, exact=True)
        self.inputs.append(t)
        self.pool.append(t)
        return t

    def int_input(self, shape: Shape, n: int) -> Tensor:
        """An int64 graph input whose values are in [0, n) (token ids of an n-row table,
        or a 0/1 mask for n = 2): the run draws them from the range the compiler
        records for it (`npu.input_ranges`)."""
        t = Tensor(f"in{len(self.inputs)}", shape, 0, n - 1, "int64", exact=True)
        self.inputs.append(t)
        self.pool.append(t)
        return t

    def const(self, data: Any, dtype: Any = None) -> str:
        """An initializer holding `data` (float32 unless it is an integer or bool array
        or `dtype` says otherwise); returns its name."""
        name = f"c{len(self.inits)}"
        arr = np.asarray(data, dtype=dtype)
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        if arr.dtype == np.float32 and self.ftype != "float32":
            arr = arr.astype(self.ftype)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def const_tensor(self, data: Any, dtype: Any = None) -> Tensor:
        """An initializer as an operand like a live tensor: its exact bounds, exact values."""
        arr = np.asarray(data, dtype=dtype)
        arr = arr.astype(np.float32) if arr.dtype == np.float64 else arr
        kind = "float" if arr.dtype in (np.float32, np.dtype(self.ftype)) else "bool" if arr.dtype == np.bool_ else str(arr.dtype)
        lo, hi = (float(arr.min()), float(arr.max())) if arr.size else (0.0, 0.0)
        return Tensor(self.const(arr), tuple(arr.shape), lo, hi, kind, exact=True, pos=lo > 0 and kind == "float")

    def ints(self, values: Sequence[int] | int, dtype: Any = np.int64) -> str:
        """An integer initializer: 1-D from a sequence, a scalar from an int."""
        return self.const(np.asarray(values, dtype=dtype))

    def normal(self, shape: Sequence[int], std: float) -> str:
        return self.const((self.rng.standard_normal(tuple(shape)) * std).astype(np.float32))

    def uniform(self, shape: Sequence[int], lo: float, hi: float) -> str:
        return self.const(self.rng.uniform(lo, hi, tuple(shape)).astype(np.float32))

    def node(self, op: str, inputs: Sequence[Tensor | str], shape: Sequence[int], lo: float, hi: float, *,
             dtype: str = "float", exact: bool = False, pos: bool = False, **attrs: Any) -> Tensor:
        """Append `op` reading `inputs` (tensors, initializer names, "" for an absent
        optional input) with one output as described; returns it."""
        return self.multi(op, inputs, [Out(shape, lo, hi, dtype, exact, pos)], **attrs)[0]

    def multi(self, op: str, inputs: Sequence[Tensor | str], outs: Sequence[Out | None], **attrs: Any
              ) -> list[Tensor]:
        """Append `op` with several outputs (None: an output left unnamed); returns the
        named ones, in order, each added to the pool."""
        k = len(self.nodes)
        made: list[Tensor] = []
        names: list[str] = []
        for i, o in enumerate(outs):
            if o is None:
                names.append("")
                continue
            lo, hi = (float(v) for v in (o.lo, o.hi))
            t = Tensor(f"t{k}" if len(outs) == 1 else f"t{k}_{i}", tuple(int(d) for d in o.shape),
                       lo, hi, o.dtype, o.exact, o.pos)
            made.append(t)
            names.append(t.name)
        while names and not names[-1]:
            names.pop()
        ins = [x.name if isinstance(x, Tensor) else x for x in inputs]
        self.nodes.append(helper.make_node(op, ins, names, name=f"{op.lower()}{k}", **attrs))
        for x in inputs:
            if isinstance(x, Tensor):
                self.readers[x.name] += 1
        self.pool.extend(made)
        return made

    def onnx_type(self, dtype: str) -> int:
        """The ONNX element type of a tensor of `dtype` ("float": the graph's `ftype`)."""
        return FLOAT_TYPES[self.ftype] if dtype == "float" else ONNX_TYPES[dtype]

    def budget(self) -> int:
        return self.limit - len(self.nodes)

    # ----------------------------------------------------------------- picking

    def pick(self) -> Tensor:
        """A live tensor to read next: mostly one with no or one reader yet (so tensors
        get 2-3 readers), the newest ones more often; first any viewed tensor whose
        other reader is still missing."""
        if self.wants_reader and self.coin(0.8):
            return self.wants_reader.pop(int(self.rng.integers(len(self.wants_reader))))
        w = np.array([{0: 3.0, 1: 2.5, 2: 1.0}.get(self.readers[t.name], 0.3) * (1.0 if t.is_float else 0.6)
                      for t in self.pool])
        w[-2:] += 2.0
        return self.pool[int(self.rng.choice(len(self.pool), p=w / w.sum()))]

    def partner(self, ok: Callable[[Tensor], bool], t: Tensor, same_shape: float = 0.5) -> Tensor | None:
        """Another live tensor satisfying `ok` (t itself only if nothing else does), or
        None; one of t's shape (a residual) with probability `same_shape` when any fits."""
        cands = [p for p in self.pool if ok(p) and p.name != t.name]
        if not cands:
            return t if ok(t) else None
        same = [p for p in cands if p.shape == t.shape]
        if same and self.coin(same_shape):
            cands = same
        return self.draw(cands)

    def exact_float(self, t: Tensor) -> Tensor:
        """t when exact, else an exact float tensor of the pool (the graph inputs are)."""
        if t.exact and t.is_float:
            return t
        cands = [p for p in self.pool if p.exact and p.is_float and p.rank >= 1]
        same = [p for p in cands if p.shape == t.shape]
        return self.draw(same or cands)

    def of_type(self, dtype: str) -> list[Tensor]:
        return [p for p in self.pool if p.dtype == dtype]

    # ----------------------------------------------------------------- adapters

    def scaled(self, t: Tensor, k: float) -> Tensor:
        """t * k (a scalar initializer)."""
        lo, hi = sorted((t.lo * k, t.hi * k))
        return self.node("Mul", [t, self.const(np.float32(k))], t.shape, lo, hi, pos=t.pos and k > 0)

    def positive(self, t: Tensor, floor: float = 0.0) -> Tensor:
        """t itself when `pos` (and above `floor`), else positive values made of it
        (Sigmoid, Exp of a small tensor, or |x| + c), above `floor` if given."""
        if t.pos and t.lo > floor:
            return t
        how = self.draw(["sigmoid", "abs", "exp"] if t.mag <= EXP_MAX_INPUT else ["sigmoid", "abs"])
        if how == "sigmoid" and t.lo < SIGMOID_RELATIVE_FROM:
            how = "abs"
        if how == "sigmoid" and floor <= 0:
            return self.node("Sigmoid", [t], t.shape, _sigmoid(t.lo), _sigmoid(t.hi), pos=True)
        if how == "exp" and floor <= 0:
            return self.node("Exp", [t], t.shape, math.exp(t.lo), math.exp(t.hi), pos=True)
        a = self.node("Abs", [t], t.shape, 0.0, t.mag, exact=t.exact)
        c = floor + float(self.rng.uniform(0.2, 1.0))
        return self.node("Add", [a, self.const(np.float32(c))], t.shape, c, t.mag + c, pos=True)

    def bounded(self, t: Tensor, bound: float) -> Tensor:
        """Values within +-bound made of t (Tanh, Sin or Clip, scaled); t itself if
        already so bounded."""
        if t.mag <= bound:
            return t
        how = self.draw(["tanh", "sin", "clip", "hardsigmoid"])
        if how == "clip":
            lo, hi = self.const(np.float32(-bound)), self.const(np.float32(bound))
            if self.opset < 11:
                return self.node("Clip", [t], t.shape, -bound, bound, exact=t.exact, min=-bound, max=bound)
            return self.node("Clip", [t, lo, hi], t.shape, -bound, bound, exact=t.exact)
        if how == "hardsigmoid":  # [0, 1]
            u = self.node("HardSigmoid", [t], t.shape, 0.0, 1.0, alpha=float(self.rng.uniform(0.1, 0.5)))
        else:
            u = self.node("Tanh" if how == "tanh" else "Sin", [t], t.shape, -1.0, 1.0)
        return self.scaled(u, bound)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(x, 80.0), -80.0)))


def broadcast(a: Shape, b: Shape) -> Shape | None:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(a, b))
    except ValueError:
        return None


def matmul_shape(a: Shape, b: Shape) -> Shape | None:
    """numpy matmul's result shape (1-D operands too), or None."""
    if not a or not b:
        return None
    a2, b2 = (1, *a) if len(a) == 1 else a, (*b, 1) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        return None
    batch = broadcast(a2[:-2], b2[:-2])
    if batch is None:
        return None
    return (*batch, *a2[-2:-1] * (len(a) > 1), *b2[-1:] * (len(b) > 1))


def factorize(n: int, rank: int, rng: np.random.Generator) -> Shape:
    """A random shape of `rank` dims with n elements (n's prime factors dealt out)."""
    dims = [1] * rank
    p, m = 2, n
    while m > 1:
        while m % p == 0:
            dims[int(rng.integers(rank))] *= p
            m //= p
        p += 1
    return tuple(dims)


def interval_mul(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return min(p), max(p)

"""Reduction and normalisation generators of the fuzzer's op table: the Reduce* ops
(axes as attribute or input, keepdims, noop_with_empty_axes), ArgMax/ArgMin
(select_last_index), CumSum (exclusive, reverse), TopK, Hardmax, Softmax, LogSoftmax;
BatchNormalization (training mode too), InstanceNormalization, LayerNormalization,
GroupNormalization, RMSNormalization, LpNormalization, MeanVarianceNormalization, LRN."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tools.testkit.fuzz_builder import (
    MAX_RANK,
    Builder,
    Out,
    Tensor,
)
from tools.testkit.fuzz_ops.table import OPS, OpGen, op

# ======================================================================================
# Reductions, scans, selections
# ======================================================================================

_REDUCE_INPUT_SINCE = {"ReduceSum": 13}  # the others take axes as an input from 18


def _reduce_bounds(op_type: str, t: Tensor, n: int) -> tuple[float, float, bool]:
    """(lo, hi, pos) of a reduction of n elements of t."""
    m = t.mag
    same = (t.lo, t.hi, t.pos)
    table: dict[str, Callable[[], tuple[float, float, bool]]] = {
        "ReduceSum": lambda: (n * min(t.lo, 0), n * max(t.hi, 0), t.pos),
        "ReduceMean": lambda: same, "ReduceMax": lambda: same, "ReduceMin": lambda: same,
        "ReduceL1": lambda: (0.0, n * m, False), "ReduceL2": lambda: (0.0, math.sqrt(n) * m, False),
        "ReduceSumSquare": lambda: (0.0, n * m * m, False),
        "ReduceLogSumExp": lambda: (t.lo, t.hi + math.log(n), False),
        "ReduceLogSum": lambda: (math.log(max(t.lo, 1e-30)), math.log(n * max(t.hi, 1e-30)) + 1e-6, False),
        "ReduceProd": lambda: (-(m ** n), m ** n, t.pos),
    }
    return table[op_type]()


def _reduce(op_type: str) -> None:
    """axes: a random subset, all (absent) or none (empty with noop_with_empty_axes);
    an attribute or an input per opset; keepdims 0/1 (a rank-0 result sometimes)."""
    def gen(b: Builder, t: Tensor) -> Tensor | None:
        x = b.positive(t) if op_type == "ReduceLogSum" else b.bounded(t, 1.5) if op_type == "ReduceProd" else t
        how = b.draw(["subset", "subset", "subset", "all", "noop"])
        input_since = _REDUCE_INPUT_SINCE.get(op_type, 18)
        if how == "noop" and b.opset < input_since:
            how = "all"
        axes = sorted(int(a) for a in b.rng.choice(x.rank, size=b.randint(1, x.rank), replace=False)) \
            if how == "subset" else list(range(x.rank)) if how == "all" else []
        keep = b.coin(0.6)
        shape = list(x.shape) if how == "noop" else \
            [1 if d in axes else s for d, s in enumerate(x.shape) if keep or d not in axes]
        if not shape and (b.coin(0.7) or x.dtype != "float"):
            keep, shape = True, [1] * x.rank
        n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64)) if axes else 1
        if op_type == "ReduceProd" and n > 32:
            return None  # (1.5 ** n stays finite)
        lo, hi, pos = _reduce_bounds(op_type, x, n)
        spelled = [a - x.rank if b.coin(0.3) else a for a in axes]
        ins: list[Tensor | str] = [x]
        attrs: dict = {} if keep and b.coin(0.5) else {"keepdims": int(keep)}
        if how == "noop":
            ins.append(b.ints([]))
            attrs["noop_with_empty_axes"] = 1
            lo, hi, pos = x.lo, x.hi, x.pos
        elif how == "subset" and b.opset >= input_since:
            ins.append(b.ints(spelled))
        elif how == "subset":
            attrs["axes"] = spelled
        exact = x.exact and op_type in ("ReduceMax", "ReduceMin")
        return b.node(op_type, ins, shape, lo, hi, dtype=x.dtype, exact=exact, pos=pos, **attrs)
    weight = 1.2 if op_type in ("ReduceSum", "ReduceMean", "ReduceMax") else 0.8
    OPS[op_type] = OpGen(gen, weight)


for _name in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1", "ReduceL2", "ReduceLogSum",
              "ReduceLogSumExp", "ReduceSumSquare", "ReduceProd"):
    _reduce(_name)


def _arg(name: str) -> None:
    def gen(b: Builder, t: Tensor) -> Tensor:
        x = b.exact_float(t) if t.is_float else t
        axis = b.axis(x)
        a = axis % x.rank
        keep = b.coin(0.5)
        shape = [1 if d == a else s for d, s in enumerate(x.shape) if keep or d != a]
        if not shape:
            keep, shape = True, [1]
        attrs: dict = {"axis": axis, "keepdims": int(keep)}
        if b.opset >= 12 and b.coin(0.4):
            attrs["select_last_index"] = int(b.coin(0.5))
        return b.node(name, [x], shape, 0, x.shape[a] - 1, dtype="int64", exact=True, **attrs)
    OPS[name] = OpGen(gen, 1.5, dtypes=("float", "int64", "int32"))


_arg("ArgMax")
_arg("ArgMin")


@op("CumSum", since=11, dtypes=("float", "int64", "int32"))
def _cumsum(b: Builder, t: Tensor) -> Tensor:
    axis = b.axis(t)
    n = t.shape[axis]
    attrs: dict = {k: 1 for k in ("exclusive", "reverse") if b.coin(0.35)}
    ax = b.const(np.asarray(axis, b.draw([np.int64, np.int32])))
    return b.node("CumSum", [t, ax], t.shape, n * min(t.lo, 0), n * max(t.hi, 0), dtype=t.dtype,
                  exact=not t.is_float and t.exact, **attrs)


@op("TopK", since=10, dtypes=("float", "int64", "int32"))
def _topk(b: Builder, t: Tensor) -> Tensor:
    """k constant (up to 3), any axis, largest or smallest (from 11); values and indices."""
    x = b.exact_float(t) if t.is_float else t
    axis = b.axis(x)
    n = x.shape[axis]
    k = b.randint(1, min(n, 3))  # (k rounds of kernels each: compile time grows fast)
    shape = [k if d == axis % x.rank else s for d, s in enumerate(x.shape)]
    attrs: dict = {"axis": axis}
    if b.opset >= 11 and b.coin(0.5):
        attrs["largest"] = int(b.coin(0.5))
    if b.opset >= 11 and b.coin(0.2):
        attrs["sorted"] = 1
    vals, idx = b.multi("TopK", [x, b.ints([k])], [Out(shape, x.lo, x.hi, x.dtype, True),
                                                    Out(shape, 0, n - 1, "int64", True)], **attrs)
    return b.draw([vals, vals, idx])


@op("Hardmax")
def _hardmax(b: Builder, t: Tensor) -> Tensor:
    x = b.exact_float(t)
    return b.node("Hardmax", [x], x.shape, 0, 1, exact=True, axis=b.axis(x))


@op("Softmax", weight=1.2, ranks=(1, MAX_RANK))
def _softmax(b: Builder, t: Tensor) -> Tensor:
    attrs: dict = {"axis": b.axis(t)} if b.coin(0.8) else {}
    return b.node("Softmax", [t], t.shape, 0.0, 1.0, pos=True, **attrs)


@op("LogSoftmax", ranks=(1, MAX_RANK))
def _log_softmax(b: Builder, t: Tensor) -> Tensor:
    attrs: dict = {"axis": b.axis(t)} if b.coin(0.8) else {}
    n = max(t.shape)
    return b.node("LogSoftmax", [t], t.shape, -2 * t.mag - math.log(n) - 1, 0.0, **attrs)


# ======================================================================================
# Normalisations
# ======================================================================================


def _eps(b: Builder) -> dict:
    return {} if b.coin(0.4) else {"epsilon": float(b.draw([1e-5, 1e-3, 0.1, 1e-6]))}


@op("BatchNormalization", ranks=(2, MAX_RANK))
def _batchnorm(b: Builder, t: Tensor) -> Tensor:
    """Inference statistics, or training mode (from 14) with its running statistics unread."""
    c = t.shape[1]
    scale = b.rng.uniform(0.5, 1.5, c) * b.rng.choice([-1.0, 1.0], c)
    args: list[Tensor | str] = [t, b.const(scale), b.normal([c], 0.5), b.normal([c], 0.5), b.uniform([c], 0.5, 1.5)]
    if b.opset >= 14 and b.coin(0.2):
        m = 1.5 * math.sqrt(t.size / c) + 1
        stats = [Out([c], -5, 5), Out([c], 0, 1e3)]  # (the running statistics: outputs ONNX requires)
        return b.multi("BatchNormalization", args, [Out(t.shape, -m, m), *stats], training_mode=1, **_eps(b))[0]
    return b.node("BatchNormalization", args, t.shape, -1.5 * (t.mag + 1) / 0.7 - 1, 1.5 * (t.mag + 1) / 0.7 + 1,
                  **_eps(b))


@op("InstanceNormalization", ranks=(3, MAX_RANK))
def _instance_norm(b: Builder, t: Tensor) -> Tensor:
    c = t.shape[1]
    m = 1.5 * math.sqrt(int(np.prod(t.shape[2:]))) + 1.5
    return b.node("InstanceNormalization", [t, b.uniform([c], 0.5, 1.5), b.normal([c], 0.5)], t.shape, -m, m,
                  **_eps(b))


def _an_input(b: Builder, t: Tensor, fits) -> Tensor | None:
    """`t` when it is a graph input `fits` takes, else one of those drawn (None: none):
    the normalisations of near-constant data are ill-conditioned, graph inputs are not."""
    ins = [x for x in b.inputs if fits(x)]
    if t in ins:
        return t
    return b.draw(ins) if ins else None


@op("LayerNormalization", weight=1.2, since=17)
def _layernorm(b: Builder, t: Tensor) -> Tensor | None:
    """Over dims axis.. with a scale (and a bias) of those dims' shape or broadcasting
    to it; the Mean and InvStdDev outputs sometimes. In a float16 graph, of a graph
    input only (as GroupNormalization): a computed f16 tensor can be near-constant (a
    transcendental chain saturating), and normalising it multiplies each 1-spacing
    rounding difference of the ops before by mean / std - seed 206444: a Pow, Cos and
    Reciprocal chain within 2 spacings of onnxruntime, its LayerNorm 145 off."""
    if b.kind == "f16":
        x = _an_input(b, t, lambda x: x.is_float)
        if x is None:
            return None
        t = x
    axis = b.axis(t) if b.coin(0.7) else -1
    a = axis % t.rank
    norm = list(t.shape[a:])
    sshape = norm if b.coin(0.7) else [d if b.coin(0.5) else 1 for d in norm][b.randint(0, len(norm) - 1):]
    args: list[Tensor | str] = [t, b.uniform(sshape, 0.5, 1.5)]
    if b.coin(0.7):
        args.append(b.normal(sshape, 0.5))
    m = 1.5 * math.sqrt(int(np.prod(norm))) + 1.5
    outs: list[Out | None] = [Out(t.shape, -m, m)]
    if b.coin(0.2):
        stat = [*t.shape[:a], *[1] * len(norm)]
        outs += [Out(stat, t.lo, t.hi), Out(stat, 0, 1e3, pos=True)]
    return b.draw(b.multi("LayerNormalization", args, outs, **({"axis": axis} if axis != -1 or b.coin(0.5) else {}),
                          **_eps(b)))


@op("GroupNormalization", since=18, ranks=(3, MAX_RANK))
def _group_norm(b: Builder, t: Tensor) -> Tensor | None:
    """Of a graph input (as MeanVarianceNormalization): a near-constant group (a
    saturated Tanh) is ill-conditioned - onnxruntime's kernel is 0.02 off float64
    there, the reference itself too far off for a comparison (npu-canonicalize's
    StableVariance keeps this compiler within 1e-4)."""
    x = _an_input(b, t, lambda x: x.rank >= 3 and x.is_float)
    if x is None:
        return None
    t = x
    c = t.shape[1]
    groups = b.draw([g for g in range(1, c + 1) if c % g == 0])
    per = c if b.opset >= 21 else groups
    m = 1.5 * math.sqrt(int(np.prod(t.shape[2:])) * c // groups) + 1.5
    return b.node("GroupNormalization", [t, b.uniform([per], 0.5, 1.5), b.normal([per], 0.5)], t.shape, -m, m,
                  num_groups=groups, **_eps(b))


@op("RMSNormalization", since=23)
def _rms_norm(b: Builder, t: Tensor) -> Tensor:
    axis = b.axis(t) if b.coin(0.7) else -1
    norm = list(t.shape[axis % t.rank:])
    m = 1.5 * math.sqrt(int(np.prod(norm))) + 1.5
    return b.node("RMSNormalization", [t, b.uniform(norm, 0.5, 1.5)], t.shape, -m, m,
                  **({"axis": axis} if axis != -1 else {}), **_eps(b))


@op("LpNormalization")
def _lp_norm(b: Builder, t: Tensor) -> Tensor:
    attrs: dict = {k: v for k, v in (("axis", b.axis(t)), ("p", b.draw([1, 2]))) if b.coin(0.7)}
    return b.node("LpNormalization", [t], t.shape, -1.0, 1.0, **attrs)


@op("MeanVarianceNormalization", since=9)
def _mvn(b: Builder, t: Tensor) -> Tensor | None:
    """Of a graph input over axes holding at least 8 elements: the ONNX body divides by
    sqrt(E[x^2] - E[x]^2) + 1e-9, ill-conditioned for near-constant data."""
    x = _an_input(b, t, lambda x: x.is_float)  # (not a token-id input: seed 207008)
    if x is None:
        return None
    # (always with axes: ONNX's shape inference cannot expand the body with the default)
    axes = sorted(int(a) for a in b.rng.choice(x.rank, size=b.randint(1, x.rank), replace=False))
    count = int(np.prod([x.shape[a] for a in axes]))
    if count < 8:
        return None
    m = 1.5 * math.sqrt(count) + 1.5
    return b.node("MeanVarianceNormalization", [x], x.shape, -m, m, axes=axes)


@op("LRN", ranks=(4, 4))
def _lrn(b: Builder, t: Tensor) -> Tensor:
    attrs: dict = {"size": b.draw([1, 3, 5])}  # (onnxruntime takes odd sizes only)
    attrs.update({k: v for k, v in (("alpha", 1e-3), ("beta", 0.5), ("bias", 2.0)) if b.coin(0.5)})
    return b.node("LRN", [t], t.shape, -t.mag, t.mag, **attrs)

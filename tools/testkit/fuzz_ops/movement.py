"""Data movement generators of the fuzzer's op table (any element type): Reshape
(0 and -1 in the target), Flatten, Squeeze, Unsqueeze, Transpose, Expand, Tile, Slice
(negative steps, clamped and huge indices), Split (sizes, equal parts, num_outputs),
Concat, Pad (constant, reflect, edge, wrap; axes; crops), Gather (constant or
computed indices), GatherElements, GatherND, ScatterElements and ScatterND (each
reduction), DepthToSpace, SpaceToDepth, Trilu, CenterCropPad, OneHot."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tools.testkit.fuzz_builder import (
    INT_TYPES,
    MAX_ELEMS,
    MAX_RANK,
    Builder,
    Out,
    Tensor,
    broadcast,
    factorize,
)
from tools.testkit.fuzz_ops.table import ALL_TYPES, f32, like, op, within_limits


@op("Reshape", weight=1.5, ranks=(0, MAX_RANK), dtypes=ALL_TYPES)
def reshape_view(b: Builder, t: Tensor) -> Tensor:
    """To a random shape of t's size; the target may hold one -1 and 0s (copy that dim)."""
    shape = factorize(t.size, b.randint(1, MAX_RANK), b.rng)
    spec = list(shape)
    for i in range(min(len(spec), t.rank)):
        if spec[i] == t.shape[i] and b.coin(0.3):
            spec[i] = 0
    if b.coin(0.3):
        spec[b.randint(0, len(spec) - 1)] = -1
    attrs: dict = {"allowzero": 0} if b.opset >= 14 and b.coin(0.2) else {}
    return b.node("Reshape", [t, b.ints(spec)], shape, t.lo, t.hi, **like(t, shape), **attrs)


@op("Flatten", ranks=(0, MAX_RANK), dtypes=ALL_TYPES)
def flatten_view(b: Builder, t: Tensor) -> Tensor:
    axis = b.randint(-t.rank if b.opset >= 11 else 0, t.rank)
    a = axis + t.rank if axis < 0 else axis
    head = int(np.prod(t.shape[:a], dtype=np.int64))
    shape = (head, t.size // head)
    return b.node("Flatten", [t], shape, t.lo, t.hi, **like(t, shape), axis=axis)


def _axes_in(b: Builder, axes: Sequence[int], attr_before: int) -> tuple[list[Tensor | str], dict]:
    """`axes` as an input (from opset `attr_before` on) or as an attribute (before)."""
    if b.opset >= attr_before:
        return [b.ints(axes)], {}
    return [], {"axes": list(axes)}


@op("Squeeze", ranks=(1, MAX_RANK), dtypes=ALL_TYPES)
def squeeze_view(b: Builder, t: Tensor) -> Tensor | None:
    ones = [d for d, s in enumerate(t.shape) if s == 1]
    if not ones:
        return None
    if len(ones) == t.rank and b.coin(0.8):  # keep one dim (rank 0 only sometimes)
        ones = ones[1:]
        if not ones:
            return None
    if b.coin(0.2) and len(ones) < t.rank:  # no axes: every size-1 dim
        shape = [s for s in t.shape if s != 1]
        return b.node("Squeeze", [t], shape, t.lo, t.hi, **like(t, shape))
    axes = sorted(int(a) for a in b.rng.choice(ones, size=b.randint(1, len(ones)), replace=False))
    shape = [s for d, s in enumerate(t.shape) if d not in axes]
    axes = [a - t.rank if b.coin(0.3) else a for a in axes]
    ins, attrs = _axes_in(b, axes, 13)
    return b.node("Squeeze", [t, *ins], shape, t.lo, t.hi, **like(t, shape), **attrs)


@op("Unsqueeze", ranks=(0, MAX_RANK - 1), dtypes=ALL_TYPES)
def unsqueeze_view(b: Builder, t: Tensor) -> Tensor | None:
    if t.rank >= MAX_RANK:
        return None
    n = b.randint(1, min(2, MAX_RANK - t.rank))
    r = t.rank + n
    axes = sorted(int(a) for a in b.rng.choice(r, size=n, replace=False))
    it = iter(t.shape)
    shape = [1 if d in axes else next(it) for d in range(r)]
    axes = [a - r if b.coin(0.3) else a for a in axes]
    ins, attrs = _axes_in(b, axes, 13)
    return b.node("Unsqueeze", [t, *ins], shape, t.lo, t.hi, **like(t, shape), **attrs)


@op("Transpose", weight=1.2, ranks=(2, MAX_RANK), dtypes=ALL_TYPES)
def _transpose(b: Builder, t: Tensor) -> Tensor | None:
    if b.coin(0.15):  # no perm: reversed
        shape = t.shape[::-1]
        return b.node("Transpose", [t], shape, t.lo, t.hi, **like(t, shape))
    perm = [int(p) for p in b.rng.permutation(t.rank)]
    if perm == sorted(perm):
        perm = perm[1:] + perm[:1]
    shape = [t.shape[p] for p in perm]
    return b.node("Transpose", [t], shape, t.lo, t.hi, **like(t, shape), perm=perm)


@op("Expand", since=8, ranks=(0, MAX_RANK), dtypes=ALL_TYPES)
def _expand(b: Builder, t: Tensor) -> Tensor | None:
    """To a shape with new leading dims and size-1 dims grown (the target may keep 1s
    where t is larger: numpy rules)."""
    lead = [b.randint(1, 3) for _ in range(b.randint(0, MAX_RANK - t.rank))]
    tail = [b.draw([2, 3, 5]) if d == 1 and b.coin(0.6) else (1 if b.coin(0.2) else d) for d in t.shape]
    target = lead + tail
    shape = broadcast(t.shape, tuple(target))
    if shape is None or not within_limits(shape) or shape == t.shape and b.coin(0.7):
        return None
    return b.node("Expand", [t, b.ints(target)], shape, t.lo, t.hi, **like(t, shape))


@op("Tile", since=6, dtypes=ALL_TYPES)
def _tile(b: Builder, t: Tensor) -> Tensor | None:
    reps = [b.draw([1, 1, 2, 3]) for _ in t.shape]
    shape = [d * r for d, r in zip(t.shape, reps)]
    if not within_limits(shape):
        return None
    return b.node("Tile", [t, b.ints(reps)], shape, t.lo, t.hi, **like(t, shape))


def _slice_len(dim: int, start: int, end: int, step: int) -> int:
    """ONNX Slice's result length along one axis (negative indices from the end, clamped)."""
    start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        return max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return max(0, -(-(start - end) // -step))


def _slice_axis(b: Builder, dim: int) -> tuple[int, int, int, int]:
    """(start, end, step, length) for one axis: steps 1-3 or negative, indices negative,
    past the ends, or huge (INT64 limits) - a non-empty result."""
    big = 2 ** 62
    for _ in range(20):
        step = b.draw([1, 1, 1, 2, 3, -1, -1, -2])
        start = b.draw([b.randint(-dim - 2, dim + 1), 0, -1, big, -big])
        end = b.draw([b.randint(-dim - 2, dim + 2), big if step > 0 else -big, -big if step > 0 else big])
        n = _slice_len(dim, start, end, step)
        if n > 0:
            return start, end, step, n
    return 0, dim, 1, dim


@op("Slice", weight=1.5, since=10, dtypes=ALL_TYPES)
def _slice(b: Builder, t: Tensor) -> Tensor:
    axes = sorted(int(a) for a in b.rng.choice(t.rank, size=b.randint(1, t.rank), replace=False))
    shape = list(t.shape)
    starts, ends, steps = [], [], []
    for a in axes:
        s, e, st, n = _slice_axis(b, t.shape[a])
        starts.append(s)
        ends.append(e)
        steps.append(st)
        shape[a] = n
    ins: list[Tensor | str] = [t, b.ints(starts), b.ints(ends)]
    with_axes = b.coin(0.7) or axes != list(range(len(axes)))
    with_steps = any(st != 1 for st in steps) or b.coin(0.3)
    if with_axes or with_steps:
        ins.append(b.ints([a - t.rank if b.coin(0.3) else a for a in axes]))
    if with_steps:
        ins.append(b.ints(steps))
    return b.node("Slice", ins, shape, t.lo, t.hi, **like(t, shape))


@op("Split", since=2, dtypes=ALL_TYPES)
def _split(b: Builder, t: Tensor) -> Tensor | None:
    """2-3 parts along an axis: sizes as an attribute (before 13) or an input, equal parts,
    or num_outputs (from 18: ceil-sized, the last smaller); some parts unread."""
    axis = b.axis(t)
    n = t.shape[axis]
    k = b.randint(2, 3)
    if n < k:
        return None
    how = b.draw(["sizes", "equal"] if b.opset < 18 else ["sizes", "num_outputs"])
    if how == "equal" and n % k or how == "num_outputs" and (-(-n // k)) * (k - 1) >= n:
        how = "sizes"
    if how == "sizes":
        cuts = sorted(int(c) for c in b.rng.choice(np.arange(1, n), size=k - 1, replace=False))
        sizes = [e - s for s, e in zip([0, *cuts], [*cuts, n])]
    else:
        part = -(-n // k)
        sizes = [min(part, n - i * part) for i in range(k)]
    ins: list[Tensor | str] = [t]
    attrs: dict = {"axis": axis}
    if how == "sizes" and b.opset < 13:
        attrs["split"] = sizes
    elif how == "sizes":
        ins.append(b.ints(sizes))
    elif how == "num_outputs":
        attrs["num_outputs"] = k
    outs = []
    for s in sizes:
        shape = list(t.shape)
        shape[axis] = s
        outs.append(Out(shape, t.lo, t.hi, t.dtype, t.exact, t.pos))
    return b.draw(b.multi("Split", ins, outs, **attrs))


@op("Concat", weight=1.2, dtypes=ALL_TYPES)
def _concat(b: Builder, t: Tensor) -> Tensor | None:
    """Along a random axis with 1-2 live tensors matching t elsewhere (else t itself)."""
    axis = b.axis(t)
    a = axis % t.rank
    ins = [t]
    for _ in range(b.draw([1, 1, 2])):
        def fits(p: Tensor) -> bool:
            return (p.dtype == t.dtype and p.rank == t.rank
                    and all(p.shape[d] == t.shape[d] for d in range(t.rank) if d != a))
        p = b.partner(fits, t, same_shape=0.2)
        ins.append(p or t)
    shape = list(t.shape)
    shape[a] = sum(x.shape[a] for x in ins)
    if not within_limits(shape):
        return None
    b.rng.shuffle(ins)  # type: ignore[arg-type]
    return b.node("Concat", ins, shape, min(x.lo for x in ins), max(x.hi for x in ins), dtype=t.dtype,
                  exact=all(x.exact for x in ins), pos=all(x.pos for x in ins), axis=axis)


def _pad_amounts(b: Builder, t: Tensor, mode: str) -> list[int]:
    """Begin and end pads per dim: non-negative and below the dim for reflect (at most
    the dim for wrap), any for edge, negative (a crop) sometimes for constant: mostly
    within its half of the dim, sometimes deeper than the dim while the other side pads
    (the output there is padding only; draws that leave no element are dropped)."""
    pads = []
    for _ in range(2):
        for d in t.shape:
            hi = d - 1 if mode == "reflect" else d if mode == "wrap" else 3
            p = b.randint(0, max(min(hi, 3), 0)) if b.coin(0.6) else 0
            if mode == "constant" and d > 2 and b.coin(0.15):
                p = -b.randint(1, (d - 1) // 2)
            elif mode == "constant" and b.coin(0.05):
                p = -b.randint(1, d + 2)
            pads.append(p)
    return pads


@op("Pad", weight=1.2, since=2, dtypes=("float",))
def _pad(b: Builder, t: Tensor) -> Tensor | None:
    modes = ["constant", "constant", "reflect", "edge"] + (["wrap"] if b.opset >= 19 else [])
    mode = b.draw(modes)
    pads = _pad_amounts(b, t, mode)
    r = t.rank
    shape = [d + p + q for d, p, q in zip(t.shape, pads[:r], pads[r:])]
    if not within_limits(shape) or not any(pads):
        return None
    value = float(b.draw([0.0, 0.0, 1.5, -2.0]))
    lo, hi = (min(t.lo, value), max(t.hi, value)) if mode == "constant" else (t.lo, t.hi)
    kw: dict = dict(exact=t.exact, pos=t.pos and (mode != "constant" or value > 0))
    mode_attr: dict = {} if mode == "constant" and b.coin(0.5) else {"mode": mode}
    if b.opset < 11:
        return b.node("Pad", [t], shape, lo, hi, **kw, pads=pads, value=value, **mode_attr)
    ins: list[Tensor | str] = [t]
    axes = [d for d in range(r) if pads[d] or pads[d + r]]
    if b.opset >= 18 and b.coin(0.4) and len(axes) < r:
        ins.append(b.ints([pads[d] for d in axes] + [pads[d + r] for d in axes]))
        ins += [b.const(f32(value)) if mode == "constant" and value else "", b.ints(axes)]
    else:
        ins.append(b.ints(pads))
        if mode == "constant" and (value or b.coin(0.3)):
            ins.append(b.const(f32(value)))
    return b.node("Pad", ins, shape, lo, hi, **kw, **mode_attr)


def _index_source(b: Builder, n: int, shape: Sequence[int]) -> Tensor | None:
    """A live integer tensor of `shape` with values in [-n, n) (computed indices), or None."""
    for p in b.pool:
        if p.dtype in INT_TYPES and tuple(p.shape) == tuple(shape) and p.lo >= -n and p.hi <= n - 1:
            return p
    return None


@op("Gather", weight=1.2, dtypes=ALL_TYPES)
def _gather(b: Builder, t: Tensor) -> Tensor | None:
    """Constant indices (a scalar, 1-D or 2-D, negative ones too, repeats) or computed ones
    (a live int tensor in range, e.g. an ArgMax)."""
    axis = b.axis(t)
    n = t.shape[axis]
    ishape = b.draw([(), (b.randint(1, 5),), (b.randint(1, 3), b.randint(1, 3))])
    ints = [p for p in b.pool if p.dtype in INT_TYPES and p.lo >= -n and p.hi <= n - 1 and 0 < p.rank <= 2]
    idx: Tensor | str
    if ints and b.coin(0.3):
        src = b.draw(ints)
        idx, ishape = src, src.shape
    else:
        idx = b.const(np.asarray(b.rng.integers(-n, n, ishape), b.draw([np.int64, np.int32])))
    a = axis % t.rank
    shape = [*t.shape[:a], *ishape, *t.shape[a + 1:]]
    if len(shape) > MAX_RANK or not shape and t.dtype != "float" or int(np.prod(shape)) > MAX_ELEMS:
        return None
    return b.node("Gather", [t, idx], shape, t.lo, t.hi, **like(t, shape), axis=axis)


@op("GatherElements", since=11, dtypes=ALL_TYPES)
def _gather_elements(b: Builder, t: Tensor) -> Tensor | None:
    axis = b.axis(t)
    a = axis % t.rank
    n = t.shape[a]
    shape = [b.randint(1, n + 2) if d == a else (b.randint(1, s) if b.coin(0.2) else s)
             for d, s in enumerate(t.shape)]
    if not within_limits(shape):
        return None
    idx = b.rng.integers(-n, n, shape)
    return b.node("GatherElements", [t, b.const(idx.astype(np.int64))], shape, t.lo, t.hi,
                  **like(t, shape), axis=axis)


@op("GatherND", since=11, dtypes=ALL_TYPES)
def _gather_nd(b: Builder, t: Tensor) -> Tensor | None:
    bd = 1 if t.rank >= 2 and b.opset >= 12 and b.coin(0.3) else 0
    k = b.randint(1, t.rank - bd)
    q = [b.randint(1, 3) for _ in range(b.randint(0, 1))]
    ishape = [*t.shape[:bd], *q, k]
    cols = [b.rng.integers(-d, d, [*t.shape[:bd], *q]) for d in t.shape[bd:bd + k]]
    idx = np.stack(cols, axis=-1).astype(np.int64).reshape(ishape)
    shape = [*t.shape[:bd], *q, *t.shape[bd + k:]]
    if not within_limits(shape):
        return None
    attrs: dict = {"batch_dims": bd} if bd else {}
    return b.node("GatherND", [t, b.const(idx)], shape, t.lo, t.hi, **like(t, shape), **attrs)


def _scatter_reduction(b: Builder) -> str:
    return b.draw(["none", "none"] + (["add", "mul"] if b.opset >= 16 else []) + (["max", "min"] if b.opset >= 18 else []))


def _updates(b: Builder, t: Tensor, shape: Sequence[int]) -> Tensor:
    """A live tensor of t's type and `shape`, else a constant one."""
    cands = [p for p in b.pool if p.dtype == t.dtype and tuple(p.shape) == tuple(shape) and p.name != t.name
             and p.mag <= 10]
    if cands and b.coin(0.6):
        return b.draw(cands)
    data = b.rng.standard_normal(shape)
    data = data.astype(np.float32) if t.is_float else np.round(data * 2).astype(t.dtype)
    return b.const_tensor(data)


def _scatter_bounds(t: Tensor, u: Tensor, reduction: str) -> tuple[float, float]:
    m = max(t.mag, u.mag)
    return {"add": (-2 * m, 2 * m), "mul": (-m * m, m * m)}.get(reduction, (min(t.lo, u.lo), max(t.hi, u.hi)))


@op("ScatterElements", since=11, dtypes=("float", "int64", "int32"))
def _scatter_elements(b: Builder, t: Tensor) -> Tensor | None:
    """Constant indices (distinct along the axis for reduction none), updates live or constant."""
    axis = b.axis(t)
    a = axis % t.rank
    n = t.shape[a]
    m = b.randint(1, n)
    shape = [m if d == a else s for d, s in enumerate(t.shape)]
    reduction = _scatter_reduction(b)
    if reduction == "none":
        keys = b.rng.random([*shape[:a], n, *shape[a + 1:]])
        idx = np.argsort(keys, axis=a).take(range(m), axis=a)
    else:
        idx = b.rng.integers(0, n, shape)
    idx = np.where(b.rng.random(shape) < 0.3, idx - n, idx).astype(np.int64)
    u = _updates(b, t, shape)
    lo, hi = _scatter_bounds(t, u, reduction)
    attrs: dict = {"reduction": reduction} if reduction != "none" or b.coin(0.2) and b.opset >= 16 else {}
    return b.node("ScatterElements", [t, b.const(idx), u], t.shape, lo, hi, dtype=t.dtype,
                  exact=t.exact and u.exact and reduction in ("none", "max", "min"), axis=axis, **attrs)


@op("ScatterND", since=11, dtypes=("float", "int64", "int32"))
def _scatter_nd(b: Builder, t: Tensor) -> Tensor | None:
    k = b.randint(1, t.rank)
    cells = int(np.prod(t.shape[:k]))
    reduction = _scatter_reduction(b)
    q = b.randint(1, min(cells, 4))
    flat = b.rng.choice(cells, size=q, replace=reduction != "none")
    idx = np.stack(np.unravel_index(flat, t.shape[:k]), axis=-1).astype(np.int64)
    idx = np.where(b.rng.random(idx.shape) < 0.3, idx - np.array(t.shape[:k]), idx)
    u = _updates(b, t, [q, *t.shape[k:]])
    lo, hi = _scatter_bounds(t, u, reduction)
    attrs: dict = {"reduction": reduction} if reduction != "none" else {}
    return b.node("ScatterND", [t, b.const(idx), u], t.shape, lo, hi, dtype=t.dtype,
                  exact=t.exact and u.exact and reduction in ("none", "max", "min"), **attrs)


def _channels(b: Builder, t: Tensor, multiple: int) -> Tensor:
    """t with a channel count divisible by `multiple` (a 1x1 Conv to that many when not)."""
    c = t.shape[1]
    if c % multiple == 0:
        return t
    co = multiple * b.randint(1, 2)
    w = b.normal([co, c, 1, 1], 1 / math.sqrt(c))
    return b.node("Conv", [t, w], (t.shape[0], co, *t.shape[2:]), -2 * t.mag, 2 * t.mag)


@op("DepthToSpace", weight=1.5, ranks=(4, 4))
def _depth_to_space(b: Builder, t: Tensor) -> Tensor | None:
    bs = b.draw([2, 2, 3])
    x = _channels(b, t, bs * bs)
    n, c, h, w = x.shape
    shape = (n, c // (bs * bs), h * bs, w * bs)
    if not within_limits(shape):
        return None
    attrs: dict = {"mode": b.draw(["DCR", "CRD"])} if b.opset >= 11 and b.coin(0.7) else {}
    return b.node("DepthToSpace", [x], shape, x.lo, x.hi, **like(x, shape), blocksize=bs, **attrs)


@op("SpaceToDepth", weight=1.5, ranks=(4, 4))
def _space_to_depth(b: Builder, t: Tensor) -> Tensor | None:
    """(H and W padded up to multiples of the block size when they are not)."""
    n, c, h, w = t.shape
    bs = b.draw([2, 2, 3])
    x = t
    if h % bs or w % bs:
        ph, pw = -h % bs, -w % bs
        padded = (n, c, h + ph, w + pw)
        if not within_limits(padded):
            return None
        x = b.node("Pad", [t, b.ints([0, 0, 0, 0, 0, 0, ph, pw])], padded, min(t.lo, 0), max(t.hi, 0),
                   exact=t.exact)
    shape = (n, c * bs * bs, x.shape[2] // bs, x.shape[3] // bs)
    return b.node("SpaceToDepth", [x], shape, x.lo, x.hi, **like(x, shape), blocksize=bs)


@op("Trilu", since=14, ranks=(2, MAX_RANK), dtypes=("float", "int64"))
def _trilu(b: Builder, t: Tensor) -> Tensor:
    ins: list[Tensor | str] = [t]
    if b.coin(0.7):
        ins.append(b.ints(b.randint(-3, 3)))
    attrs: dict = {"upper": int(b.coin(0.5))} if b.coin(0.8) else {}
    return b.node("Trilu", ins, t.shape, min(t.lo, 0), max(t.hi, 0), dtype=t.dtype, exact=t.exact, **attrs)


@op("CenterCropPad", since=18)
def _center_crop_pad(b: Builder, t: Tensor) -> Tensor | None:
    axes = sorted(int(a) for a in b.rng.choice(t.rank, size=b.randint(1, t.rank), replace=False))
    every = len(axes) == t.rank and b.coin(0.5)
    target = [max(1, t.shape[a] + b.randint(-3, 3)) for a in axes]
    shape = list(t.shape)
    for a, s in zip(axes, target):
        shape[a] = s
    if not within_limits(shape):
        return None
    attrs: dict = {} if every else {"axes": [a - t.rank if b.coin(0.3) else a for a in axes]}
    return b.node("CenterCropPad", [t, b.ints(target)], shape, min(t.lo, 0), max(t.hi, 0), exact=t.exact, **attrs)


@op("OneHot", weight=2.0, since=9, ranks=(1, MAX_RANK - 1), dtypes=INT_TYPES)
def _onehot(b: Builder, t: Tensor) -> Tensor | None:
    depth = b.randint(2, 6)
    axis = b.randint(-t.rank - 1, t.rank)
    a = axis % (t.rank + 1)
    shape = [*t.shape[:a], depth, *t.shape[a:]]
    if not within_limits(shape):
        return None
    off, on = float(b.draw([0.0, -1.0])), float(b.draw([1.0, 2.5]))
    depth_in = b.ints(depth, dtype=t.dtype)  # (onnxruntime has kernels for depth of the indices' type)
    return b.node("OneHot", [t, depth_in, b.const(np.array([off, on], np.float32))], shape, off, on,
                  exact=True, axis=axis)

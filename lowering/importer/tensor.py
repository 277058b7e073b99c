"""ONNX converters for data movement and shapes: Flatten, Reshape, Identity, Dropout,
Constant, Transpose, Squeeze, Unsqueeze, Concat, Slice, Split, Gather, GatherElements,
GatherND, ScatterElements, ScatterND, Tile, Expand, Trilu, Pad, Shape, Size,
ConstantOfShape and Range.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx import numpy_helper
from xdsl.dialects.builtin import (
    TensorType,
)

from lowering.importer.base import (
    HELD,
    NodeContext,
    NodeError,
    Output,
    Tensor,
    attr_value,
    axes_arg,
    constant_indices,
    converter,
    f32_tensor,
    norm_axes,
    norm_axis,
    prod_of,
    reshape_shape,
)
from lowering.importer.elementwise import eltwise, same_type_operands
from npu_dialects.dtypes import element_type, i8, i32, type_name, ui8
from npu_dialects.graph import (
    AddOp,
    BinaryOp,
    ConcatOp,
    ExpandOp,
    GatherOp,
    MaxOp,
    MinOp,
    MulOp,
    PadOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
    TriluOp,
    broadcast_shapes,
)


@converter("Flatten", attrs=("axis",))
def convert_flatten(ctx: NodeContext) -> Sequence[Output]:
    """[d0..d(axis-1), d(axis)..] -> [prod(front), prod(back)], an `npu_graph.reshape`."""
    x = ctx.shape(0)
    axis = int(ctx.attr("axis", 1))
    if not -len(x) <= axis <= len(x):
        raise NodeError(f"axis={axis} is out of range for an input of rank {len(x)}")
    if axis < 0:
        axis += len(x)
    shape = (prod_of(x[:axis]), prod_of(x[axis:]))
    xv = ctx.moved(0)
    return [ctx.build(ReshapeOp(xv, ctx.like(xv, shape))).results[0]]


@converter("Reshape", attrs=("allowzero",))
def convert_reshape(ctx: NodeContext) -> Sequence[Output]:
    """Reshape to a constant target shape (0 copies a dimension, one -1 is inferred)."""
    target = ctx.constant(1, "the target shape")
    if target.ndim != 1 or not np.issubdtype(target.dtype, np.integer):
        raise NodeError(f"the target shape must be a 1-D integer tensor, got {target.dtype} "
                        f"of shape {list(target.shape)}")
    shape = reshape_shape(ctx.shape(0), [int(d) for d in target], bool(ctx.attr("allowzero", 0)))
    xv = ctx.moved(0)
    return [ctx.build(ReshapeOp(xv, ctx.like(xv, shape))).results[0]]


@converter("Identity")
def convert_identity(ctx: NodeContext) -> Sequence[Output]:
    """No op: the output is the input."""
    return [ctx.tensor(0)]


@converter("Dropout", attrs=("ratio", "seed", "is_test"))
def convert_dropout(ctx: NodeContext) -> Sequence[Output]:
    """Inference, or training with ratio 0: the output is the input and the mask output
    all true. Training with a ratio above 0 is random and not supported."""
    if ctx.has_input(2):
        training = ctx.constant(2, "training_mode")
        if training.size and bool(training.reshape(-1)[0]):
            ratio = float(ctx.constant(1, "ratio").reshape(-1)[0]) if ctx.has_input(1) else 0.5
            if ratio != 0.0:
                raise NodeError("training_mode=1 is not supported (inference only)")
    x = ctx.tensor(0)
    return [x, Tensor(ctx.node.output[1], x.shape, np.dtype(np.bool_), data=np.ones(x.shape, dtype=np.bool_),
                      origin=ctx.label)] if len(ctx.node.output) > 1 else [x]


@converter("Constant", attrs=("value", "value_float", "value_floats", "value_int", "value_ints"))
def convert_constant(ctx: NodeContext) -> Sequence[Output]:
    """Constant data; becomes an `npu_graph.constant` only where an op uses it."""
    if len(ctx.node.attribute) != 1:
        raise NodeError("needs exactly one value attribute")
    attr = ctx.node.attribute[0]
    v = attr_value(attr)
    if attr.name == "value":
        data = numpy_helper.to_array(v)
    elif attr.name in ("value_float", "value_floats"):
        data = np.array(v, dtype=np.float32)
    else:
        data = np.array(v, dtype=np.int64)
    out = ctx.node.output[0]
    return [Tensor(out, tuple(data.shape), data.dtype, data=data, origin=ctx.label)]


# --------------------------------------------------------------------------------------
# Converters: data movement and shapes
# --------------------------------------------------------------------------------------


@converter("Transpose", attrs=("perm",))
def convert_transpose(ctx: NodeContext) -> Sequence[Output]:
    """Permute dims (`perm`, default reversed); the identity permutation is no op."""
    x = ctx.shape(0)
    perm = ctx.ints_attr("perm", tuple(reversed(range(len(x)))))
    if sorted(perm) != list(range(len(x))):
        raise NodeError(f"perm {list(perm)} is not a permutation of 0..{len(x) - 1}")
    if list(perm) == list(range(len(x))):
        return [ctx.tensor(0)]
    xv = ctx.moved(0)
    return [ctx.build(TransposeOp(xv, perm, ctx.like(xv, [x[p] for p in perm]))).results[0]]


def _reshaped(ctx: NodeContext, shape: Sequence[int]) -> Output:
    """Input 0 viewed with `shape` (`npu_graph.reshape`; no op when the shape is the same)."""
    if tuple(shape) == ctx.shape(0):
        return ctx.tensor(0)
    t = ctx.tensor(0)
    xv = ctx.moved(0)
    v = ctx.build(ReshapeOp(xv, ctx.like(xv, shape))).results[0]
    return ctx.typed(v, t.dtype)


@converter("Squeeze", attrs=("axes",))
def convert_squeeze(ctx: NodeContext) -> Sequence[Output]:
    """Drop size-1 dims (`axes`: attribute before opset 13, input from 13; default all)."""
    x = ctx.shape(0)
    axes = axes_arg(ctx, 13)
    if axes is None:
        axes = tuple(d for d, s in enumerate(x) if s == 1)
    axes = norm_axes(axes, len(x))
    bad = [a for a in axes if x[a] != 1]
    if bad:
        raise NodeError(f"cannot squeeze dims {bad} of shape {list(x)}: they are not 1")
    return [_reshaped(ctx, [s for d, s in enumerate(x) if d not in axes])]


@converter("Unsqueeze", attrs=("axes",))
def convert_unsqueeze(ctx: NodeContext) -> Sequence[Output]:
    """Insert size-1 dims at `axes` of the result (attribute before opset 13, input from 13)."""
    x = ctx.shape(0)
    axes = axes_arg(ctx, 13)
    if not axes:
        raise NodeError("axes are required")
    axes = norm_axes(axes, len(x) + len(axes))
    out, it = [], iter(x)
    for d in range(len(x) + len(axes)):
        out.append(1 if d in axes else next(it))
    return [_reshaped(ctx, out)]


@converter("Concat", attrs=("axis",))
def convert_concat(ctx: NodeContext) -> Sequence[Output]:
    """Join along `axis`; empty inputs are dropped, a single input is no op."""
    idx = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
    shapes = [ctx.shape(i) for i in idx]
    r = len(shapes[0])
    axis = norm_axis(int(ctx.attr("axis")), max(r, 1))
    for i, s in zip(idx, shapes):
        if len(s) != r or any(d != axis and s[d] != shapes[0][d] for d in range(r)):
            raise NodeError(f"input {i} of shape {list(s)} does not match {list(shapes[0])} outside axis {axis}")
    keep = [i for i, s in zip(idx, shapes) if s[axis] != 0] or idx[:1]
    if len(keep) == 1:
        return [ctx.tensor(keep[0])]
    out = list(shapes[0])
    out[axis] = sum(ctx.shape(i)[axis] for i in keep)
    held = {HELD.get(np.dtype(ctx.dtype(i))) for i in keep}
    if len(held) == 1 and (elem := held.pop()) in (i8, ui8):  # (int8 data: joined on the integers)
        vals = [ctx.typed_value(i, (type_name(elem) or "",)) for i in keep]
        return [ctx.typed(ctx.build(ConcatOp(vals, axis, TensorType(elem, out))).results[0], ctx.dtype(keep[0]))]
    vals = same_type_operands(ctx, keep)
    return [ctx.typed(ctx.build(ConcatOp(vals, axis, f32_tensor(out))).results[0], ctx.dtype(keep[0]))]


def _slice_params(x: Sequence[int], starts: Sequence[int], ends: Sequence[int], axes: Sequence[int],
                  steps: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """Full-rank clamped (starts, ends, steps) of an ONNX Slice (ends -1 with a negative
    step means through index 0)."""
    r = len(x)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise NodeError(f"starts {list(starts)}, ends {list(ends)}, axes {list(axes)} and steps "
                        f"{list(steps)} must have the same length")
    s_all, e_all, st_all = [0] * r, list(x), [1] * r
    seen = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = norm_axis(a, r, "axes")
        if a in seen:
            raise NodeError(f"axes {list(axes)} repeat dimension {a}")
        seen.add(a)
        if st == 0:
            raise NodeError("steps must not be 0")
        dim = x[a]
        s, e = s + dim if s < 0 else s, e + dim if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), max(dim - 1, 0)), min(max(e, -1), dim - 1)
        s_all[a], e_all[a], st_all[a] = s, e, st
    return s_all, e_all, st_all


def _slice(ctx: NodeContext, x: Sequence[int], starts: Sequence[int], ends: Sequence[int],
           steps: Sequence[int], out: int = 0) -> Output:
    """Output `out` as an `npu_graph.slice` of input 0 (no op for the whole tensor; an
    empty result is empty constant data, which Concat drops; constant data sliced here,
    an end of -1 with a negative step running through index 0)."""
    shape = SliceOp.sizes(starts, ends, steps)
    if shape == tuple(x) and all(st == 1 for st in steps):
        return ctx.tensor(0)
    src = ctx.tensor(0).data
    if 0 in shape or src is not None:
        data = np.zeros(shape, ctx.dtype(0)) if src is None or 0 in shape else src[tuple(
            slice(s, None if e < 0 else e, st) for s, e, st in zip(starts, ends, steps))]
        return Tensor(ctx.node.output[out], shape, data.dtype, data=data, origin=ctx.label)
    xv = ctx.moved(0)
    v = ctx.build(SliceOp(xv, starts, ends, steps, ctx.like(xv, shape))).results[0]
    return ctx.typed(v, ctx.dtype(0), out)


@converter("Slice", attrs=("starts", "ends", "axes"))
def convert_slice(ctx: NodeContext) -> Sequence[Output]:
    """Strided slice: starts/ends/axes are attributes before opset 10, constant inputs
    (with optional axes and steps) from 10 on; negative indices count from the end and
    are clamped like ONNX."""
    x = ctx.shape(0)
    if ctx.opset < 10:
        starts, ends = ctx.ints_attr("starts", ()), ctx.ints_attr("ends", ())
        axes = ctx.ints_attr("axes", range(len(starts)))
        steps: Sequence[int] = (1,) * len(starts)
    else:
        def ints_in(i: int, what: str) -> list[int]:
            return [int(v) for v in ctx.constant(i, what).reshape(-1)]
        starts, ends = ints_in(1, "starts"), ints_in(2, "ends")
        axes = ints_in(3, "axes") if ctx.has_input(3) else list(range(len(starts)))
        steps = ints_in(4, "steps") if ctx.has_input(4) else [1] * len(starts)
    return [_slice(ctx, x, *_slice_params(x, starts, ends, axes, steps))]


@converter("Split", attrs=("axis", "split", "num_outputs"))
def convert_split(ctx: NodeContext) -> Sequence[Output]:
    """One `npu_graph.slice` per used output along `axis`. Sizes: the `split` attribute
    before opset 13, the optional `split` input from 13 on; without them equal parts
    (opset 18: `num_outputs` parts of ceil(n / parts), the last one smaller)."""
    x = ctx.shape(0)
    axis = norm_axis(int(ctx.attr("axis", 0)), len(x))
    n = len(ctx.node.output)
    if ctx.opset < 13:
        split = list(ctx.ints_attr("split", ())) if ctx.has_attr("split") else None
    else:
        split = [int(v) for v in ctx.constant(1, "split").reshape(-1)] if ctx.has_input(1) else None
    if split is None:
        parts = int(ctx.attr("num_outputs", n))
        if parts != n:
            raise NodeError(f"num_outputs={parts} but the node has {n} outputs")
        size = -(-x[axis] // n) if ctx.opset >= 18 else x[axis] // n
        if ctx.opset < 18 and x[axis] % n:
            raise NodeError(f"dim {axis} of size {x[axis]} does not split into {n} equal parts")
        split = [min(size, x[axis] - i * size) for i in range(n)]
    if len(split) != n or sum(split) != x[axis] or any(s < 0 for s in split):
        raise NodeError(f"split {split} does not divide dim {axis} of size {x[axis]} into {n} outputs")
    outs: list[Output] = []
    start = 0
    for i, size in enumerate(split):
        if ctx.output_used(i):
            starts, ends, steps = [0] * len(x), list(x), [1] * len(x)
            starts[axis], ends[axis] = start, start + size
            outs.append(_slice(ctx, x, starts, ends, steps, i))
        else:
            outs.append(Tensor(ctx.node.output[i], (), np.dtype(np.float32), placeholder=True))
        start += size
    return outs


@converter("Gather", attrs=("axis",))
def convert_gather(ctx: NodeContext) -> Sequence[Output]:
    """Take along `axis` at integer indices (carried as f32). A constant scalar index
    is a slice and a reshape; other indices, constant or computed, an `npu_graph.gather`
    (e.g. an embedding lookup in a weight table)."""
    x = ctx.shape(0)
    if not x:
        raise NodeError("data must have rank >= 1")
    axis = norm_axis(int(ctx.attr("axis", 0)), len(x))
    idx = ctx.tensor(1)
    if idx.data is not None:
        if idx.data.size and (idx.data.min() < -x[axis] or idx.data.max() >= x[axis]):
            raise NodeError(f"indices {_preview(idx.data)} are out of range for dim {axis} of size {x[axis]}")
        if idx.data.ndim == 0:
            i = int(idx.data) % x[axis]
            starts, ends, steps = [0] * len(x), list(x), [1] * len(x)
            starts[axis], ends[axis] = i, i + 1
            v = ctx.ssa(_slice(ctx, x, starts, ends, steps))
            out = x[:axis] + x[axis + 1:]
            return [ctx.typed(ctx.build(ReshapeOp(v, ctx.like(v, out))).results[0], ctx.dtype(0))]
    out = x[:axis] + idx.shape + x[axis + 1:]
    if 0 in out:
        raise NodeError(f"the result of shape {list(out)} is empty; empty tensors are not supported")
    t = ctx.tensor(0)
    data = ctx.moved(0) if t.value is not None else ctx.value(0, carried=True)
    ix = idx.value if idx.value is not None and element_type(idx.value) == i32 else ctx.value(1, carried=True)
    op = GatherOp(data, ix, axis, ctx.like(data, out))  # (i32 indices as they are, others carried as f32)
    return [ctx.typed(ctx.build(op).results[0], ctx.dtype(0))]


def _index_map(ctx: NodeContext, flat: np.ndarray, what: str, sources: Sequence[int] = (0,)) -> Output:
    """The inputs `sources`, flattened and concatenated, read at the constant flat element
    indices `flat` (any shape): reshapes and an `npu_graph.gather` (the vector unit's
    gather: a slow path, but exact). GatherElements, GatherND and Tile (input 0) and
    ScatterElements and ScatterND (data then updates) with constant indices are such maps."""
    sizes = [int(np.prod(ctx.shape(i), dtype=np.int64)) for i in sources]
    n = sum(sizes)
    if flat.size == 0:
        raise NodeError(f"the result of shape {list(flat.shape)} is empty; empty tensors are not supported")
    if flat.min() < 0 or flat.max() >= n:
        raise NodeError(f"{what} are out of range for data of shape {list(ctx.shape(0))}")
    parts = [ctx.build(ReshapeOp(ctx.value(i, carried=True), f32_tensor((k,)))).results[0]
             for i, k in zip(sources, sizes)]
    data = parts[0] if len(parts) == 1 else ctx.build(ConcatOp(parts, 0, f32_tensor((n,)))).results[0]
    idx = ctx.const(flat, "indices")
    op = GatherOp(data, idx, 0, f32_tensor(tuple(flat.shape)))
    return ctx.typed(ctx.build(op).results[0], ctx.dtype(0))


@converter("GatherElements", attrs=("axis",))
def convert_gather_elements(ctx: NodeContext) -> Sequence[Output]:
    """out[i] = x[i with its `axis` coordinate replaced by indices[i]], constant indices:
    a flat gather (`_index_map`)."""
    x = ctx.shape(0)
    axis = norm_axis(int(ctx.attr("axis", 0)), len(x))
    idx = constant_indices(ctx, 1, "indices")
    if idx.ndim != len(x):
        raise NodeError(f"indices of rank {idx.ndim} for data of rank {len(x)}")
    idx = np.where(idx < 0, idx + x[axis], idx)
    if idx.size and (idx.min() < 0 or idx.max() >= x[axis]):
        raise NodeError(f"indices {_preview(idx)} are out of range for dim {axis} of size {x[axis]}")
    coords: list[np.ndarray] = [np.asarray(c) for c in np.indices(idx.shape, dtype=np.int64)]
    coords[axis] = idx
    return [_index_map(ctx, np.asarray(np.ravel_multi_index(tuple(coords), x)), "indices")]


@converter("GatherND", attrs=("batch_dims",))
def convert_gather_nd(ctx: NodeContext) -> Sequence[Output]:
    """Slices of x picked by the last dim of constant indices (after `batch_dims` shared
    leading dims): a flat gather (`_index_map`)."""
    x = ctx.shape(0)
    b = int(ctx.attr("batch_dims", 0))
    idx = constant_indices(ctx, 1, "indices")
    k = idx.shape[-1] if idx.ndim else 0
    if idx.ndim < 1 or b + k > len(x) or tuple(idx.shape[:b]) != tuple(x[:b]):
        raise NodeError(f"indices of shape {list(idx.shape)} do not index data of shape {list(x)} "
                        f"with batch_dims={b}")
    picked = np.where(idx < 0, idx + np.array(x[b:b + k]), idx)
    rest = x[b + k:]
    flat = np.empty(idx.shape[:-1] + tuple(rest), dtype=np.int64)
    inner = np.indices(tuple(rest), dtype=np.int64).reshape(len(rest), -1) if rest else np.zeros((0, 1), np.int64)
    for pos in np.ndindex(*idx.shape[:-1]):
        lead = tuple(pos[:b]) + tuple(picked[pos])
        if any(c < 0 or c >= d for c, d in zip(lead[b:], x[b:b + k])):
            raise NodeError(f"index {list(picked[pos])} is out of range for data of shape {list(x)}")
        coords = [np.full(inner.shape[1], c, np.int64) for c in lead] + list(inner)
        flat[pos] = np.asarray(np.ravel_multi_index(tuple(coords), x)).reshape(tuple(rest))
    return [_index_map(ctx, flat, "indices")]


_SCATTER_REDUCTIONS: dict[str, tuple[type[BinaryOp], float]] = {
    "add": (AddOp, 0.0), "mul": (MulOp, 1.0), "max": (MaxOp, -np.inf), "min": (MinOp, np.inf)}
"""Scatter reductions: the op combining an update into the data, and its identity."""


def _scatter(ctx: NodeContext, targets: np.ndarray) -> Output:
    """data with the updates written at flat positions `targets` (one per update element,
    in order). Reduction "none": one flat gather over data then updates (a position
    written twice takes its last update). add/mul/max/min: per level of multiplicity, a
    gather of each position's next update (or the reduction's identity) combined into
    the data, in update order."""
    reduction = str(ctx.attr("reduction", "none"))
    if reduction != "none" and reduction not in _SCATTER_REDUCTIONS:
        raise NodeError(f"unsupported attribute reduction={reduction}")
    shape = ctx.shape(0)
    n, u = int(np.prod(shape, dtype=np.int64)), targets.size
    flat_targets = targets.reshape(-1)
    if reduction == "none":
        src = np.arange(n, dtype=np.int64)
        src[flat_targets] = n + np.arange(u, dtype=np.int64)
        return _index_map(ctx, src.reshape(shape), "indices", sources=(0, 2))
    op, identity = _SCATTER_REDUCTIONS[reduction]
    updates = ctx.build(ReshapeOp(ctx.value(2, carried=True), f32_tensor((u,)))).results[0]
    ext = ctx.build(ConcatOp([updates, ctx.const(np.array([identity]), "identity")], 0,
                             f32_tensor((u + 1,)))).results[0]
    acc = ctx.value(0, carried=True)  # (integers, carried as f32, as in the gather above)
    seen = np.zeros(n, dtype=np.int64)
    levels: list[np.ndarray] = []
    for j, t in enumerate(flat_targets):
        if seen[t] == len(levels):
            levels.append(np.full(n, u, dtype=np.int64))
        levels[seen[t]][t] = j
        seen[t] += 1
    for level in levels:
        idx = ctx.const(level.reshape(shape), "level")
        picked = ctx.build(GatherOp(ext, idx, 0, f32_tensor(shape))).results[0]
        acc = eltwise(ctx, op, acc, picked)
    return ctx.typed(acc, ctx.dtype(0))


@converter("ScatterElements", attrs=("axis", "reduction"))
def convert_scatter_elements(ctx: NodeContext) -> Sequence[Output]:
    """data[i with its `axis` coordinate replaced by indices[i]] = updates[i], constant
    indices (`_scatter`)."""
    x = ctx.shape(0)
    axis = norm_axis(int(ctx.attr("axis", 0)), len(x))
    idx = constant_indices(ctx, 1, "indices")
    if idx.shape != ctx.shape(2) or idx.ndim != len(x):
        raise NodeError(f"indices {list(idx.shape)} and updates {list(ctx.shape(2))} must have one shape of rank "
                        f"{len(x)}")
    idx = np.where(idx < 0, idx + x[axis], idx)
    if idx.size and (idx.min() < 0 or idx.max() >= x[axis]):
        raise NodeError(f"indices {_preview(idx)} are out of range for dim {axis} of size {x[axis]}")
    coords: list[np.ndarray] = [np.asarray(c) for c in np.indices(idx.shape, dtype=np.int64)]
    coords[axis] = idx
    return [_scatter(ctx, np.asarray(np.ravel_multi_index(tuple(coords), x)))]


@converter("ScatterND", attrs=("reduction",))
def convert_scatter_nd(ctx: NodeContext) -> Sequence[Output]:
    """The slices of data named by the last dim of constant indices replaced by updates
    (`_scatter`)."""
    x = ctx.shape(0)
    idx = constant_indices(ctx, 1, "indices")
    k = idx.shape[-1] if idx.ndim else 0
    if idx.ndim < 1 or k > len(x) or ctx.shape(2) != tuple(idx.shape[:-1]) + tuple(x[k:]):
        raise NodeError(f"indices {list(idx.shape)} and updates {list(ctx.shape(2))} do not fit data {list(x)}")
    idx = np.where(idx < 0, idx + np.array(x[:k]), idx)
    if idx.size and ((idx < 0).any() or (idx >= np.array(x[:k])).any()):
        raise NodeError(f"indices {_preview(idx)} are out of range for data of shape {list(x)}")
    inner = int(np.prod(x[k:], dtype=np.int64))
    starts = np.ravel_multi_index(tuple(np.moveaxis(idx, -1, 0)), x[:k]) * inner if k else np.zeros(idx.shape[:-1],
                                                                                                    np.int64)
    targets = np.asarray(starts)[..., None] + np.arange(inner, dtype=np.int64)
    return [_scatter(ctx, targets)]


@converter("Tile")
def convert_tile(ctx: NodeContext) -> Sequence[Output]:
    """x repeated `repeats` times along each dim (constant repeats): a flat gather of
    each output element's source (`_index_map`)."""
    x = ctx.shape(0)
    reps = [int(r) for r in constant_indices(ctx, 1, "repeats").reshape(-1)]
    if len(reps) != len(x) or any(r < 0 for r in reps):
        raise NodeError(f"repeats {reps} for data of rank {len(x)}")
    out = tuple(d * r for d, r in zip(x, reps))
    coords = [c % d for c, d in zip(np.indices(out, dtype=np.int64), x)]
    return [_index_map(ctx, np.asarray(np.ravel_multi_index(tuple(coords), x)) if out else np.zeros((), np.int64),
                       "repeats")]


def _preview(a: np.ndarray) -> str:
    flat = a.reshape(-1)
    return str(flat[:8].tolist())[:-1] + (", ...]" if flat.size > 8 else "]")


@converter("Expand")
def convert_expand(ctx: NodeContext) -> Sequence[Output]:
    """Broadcast to a constant shape (numpy rules, so the result may be larger than it)."""
    shape = [int(v) for v in ctx.constant(1, "the target shape").reshape(-1)]
    x = ctx.shape(0)
    out = broadcast_shapes(x, shape)
    if out is None:
        raise NodeError(f"input of shape {list(x)} does not broadcast to {shape}")
    if out == x:
        return [ctx.tensor(0)]
    xv = ctx.moved(0) if ctx.tensor(0).value is not None else ctx.value(0, carried=True)
    return [ctx.typed(ctx.build(ExpandOp(xv, ctx.like(xv, out))).results[0], ctx.dtype(0))]


@converter("Trilu", attrs=("upper",))
def convert_trilu(ctx: NodeContext) -> Sequence[Output]:
    """Upper/lower triangle of the last two dims from diagonal k (a constant input)."""
    x = ctx.shape(0)
    if len(x) < 2:
        raise NodeError(f"input must have rank >= 2, got shape {list(x)}")
    k = int(ctx.constant(1, "k").reshape(-1)[0]) if ctx.has_input(1) else 0
    op = TriluOp(ctx.value(0, carried=True), bool(int(ctx.attr("upper", 1))), k, f32_tensor(x))
    return [ctx.typed(ctx.build(op).results[0], ctx.dtype(0))]


@converter("Pad", attrs=("mode", "pads", "value"))
def convert_pad(ctx: NodeContext) -> Sequence[Output]:
    """Padding: pads/value are attributes before opset 11, inputs (pads, constant_value,
    and from 18 axes) after; negative pads crop. Constant mode is an `npu_graph.pad`;
    edge, reflect and wrap are index maps (`_index_map`) of numpy's same-named padding of
    the element indices."""
    x = ctx.shape(0)
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise NodeError(f"unsupported attribute mode={mode} (constant, edge, reflect and wrap are)")
    if ctx.opset < 11:
        pads = list(ctx.ints_attr("pads", ()))
        value = float(ctx.attr("value", 0.0))
    else:
        pads = [int(v) for v in ctx.constant(1, "pads").reshape(-1)]
        value = float(ctx.constant(2, "constant_value").reshape(-1)[0]) if ctx.has_input(2) else 0.0
        if ctx.has_input(3):
            axes = [norm_axis(int(a), len(x), "axes") for a in ctx.constant(3, "axes").reshape(-1)]
            if len(pads) != 2 * len(axes):
                raise NodeError(f"pads {pads} needs 2 values per axis {axes}")
            full = [0] * (2 * len(x))
            for j, a in enumerate(axes):
                full[a], full[a + len(x)] = pads[j], pads[j + len(axes)]
            pads = full
    if len(pads) != 2 * len(x):
        raise NodeError(f"pads {pads} must have {2 * len(x)} values (begin and end per dim)")
    out = [s + b + e for s, b, e in zip(x, pads, pads[len(x):])]
    if any(o <= 0 for o in out):
        raise NodeError(f"pads {pads} leave an empty result {out}")
    if not any(pads):
        return [ctx.tensor(0)]
    if mode != "constant":
        idx = np.arange(prod_of(x)).reshape(x)
        idx = idx[tuple(slice(max(-b, 0), s - max(-e, 0)) for s, b, e in zip(x, pads, pads[len(x):]))]
        idx = np.pad(idx, [(max(b, 0), max(e, 0)) for b, e in zip(pads, pads[len(x):])], mode=mode)
        return [_index_map(ctx, idx, "pads")]
    xv = ctx.moved(0) if ctx.tensor(0).value is not None else ctx.value(0, carried=True)
    y = ctx.build(PadOp(xv, pads, value, ctx.like(xv, out))).results[0]  # (int8 values padded on the integers)
    return [ctx.typed(y, ctx.dtype(0))]


@converter("Shape", attrs=("start", "end"))
def convert_shape(ctx: NodeContext) -> Sequence[Output]:
    """The input's static shape as int64 constant data (dims start:end, opset 15)."""
    x = ctx.shape(0)
    r = len(x)
    start, end = int(ctx.attr("start", 0)), int(ctx.attr("end", r))
    start, end = [min(max(v + r if v < 0 else v, 0), r) for v in (start, end)]
    data = np.array(x[start:end], dtype=np.int64)
    return [Tensor(ctx.node.output[0], data.shape, data.dtype, data=data, origin=ctx.label)]


@converter("Size")
def convert_size(ctx: NodeContext) -> Sequence[Output]:
    """The input's static element count as an int64 scalar constant."""
    data = np.array(prod_of(ctx.shape(0)), dtype=np.int64)
    return [Tensor(ctx.node.output[0], (), data.dtype, data=data, origin=ctx.label)]


@converter("ConstantOfShape", attrs=("value",))
def convert_constant_of_shape(ctx: NodeContext) -> Sequence[Output]:
    """Constant data; only reached when the shape is not constant (constant inputs are
    evaluated at import), which is diagnosed."""
    shape = ctx.constant(0, "the shape")
    value = ctx.attr("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    data = np.full([int(d) for d in shape.reshape(-1)], fill[0], dtype=fill.dtype)
    return [Tensor(ctx.node.output[0], data.shape, data.dtype, data=data, origin=ctx.label)]


@converter("Range")
def convert_range(ctx: NodeContext) -> Sequence[Output]:
    """Constant data; only reached when an input is not constant, which is diagnosed."""
    start, limit, delta = (ctx.constant(i, what) for i, what in enumerate(("start", "limit", "delta")))
    data = np.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)  # (scalar tensors)
    return [Tensor(ctx.node.output[0], data.shape, data.dtype, data=data, origin=ctx.label)]

"""ONNX Attention (opsets 23, 24 and 25 as onnx 1.23 defines them): a converter of the
ONNX importer built from existing `npu_graph` ops, used instead of the op's function
body (which ONNX does not build for KV caches, nonpad_kv_seqlen or some attributes).

Takes 3-D [B, S, hidden] inputs (q_num_heads, kv_num_heads) and 4-D [B, H, S, D] ones,
grouped-query attention, scale, attn_mask (bool: true attends; else added; a last dim
shorter than the keys is padded with masked keys), is_causal, the sliding window,
past_key/past_value and the present outputs, nonpad_kv_seqlen (constant or computed),
softcap and every qk_matmul_output_mode. softmax_precision is accepted: the softmax is
always float32. Semantics follow onnx's reference (onnx/reference/ops/op_attention.py):
a query row whose bias masks every key gives zeros, in Y and in mode 3. In mode 0 the
scores are those before the softcap, as the spec and onnxruntime have it (the reference
gives the capped ones). Assumes static shapes.

Algorithm
---------
q @ kt, times the scale (a scalar), plus one additive bias, softmax over the keys, @ v:
the chain npu-fuse makes one `npu_graph.attention` kernel of (`lowering/graph/fuse.py`).
Grouped-query attention does not repeat k and v: q [B, Hq, S, D] is read as [B, Hkv,
G*S, D] (the G query heads sharing a kv head are consecutive) and the bias follows. The
bias sums the mask and a structural part: with n the valid keys per batch row
(nonpad_kv_seqlen, else past + S) and offset n - S, query i attends key j iff
j - i <= offset (causal), i + offset - j <= left and j - i - offset <= right (window),
j < n (nonpad), each as `a < n` or `n < b` with constant a, b; all of it is folded at
import when n and the mask are constants. A row whose bias is -inf throughout is zeroed
after the product with v (`where`), decided on the bias as the reference does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue

from lowering.importer.base import NodeContext, NodeError, Output, converter, f32_tensor
from lowering.importer.elementwise import eltwise
from lowering.importer.indexing import reshape_value, transpose_value
from npu_dialects.graph import (
    AddOp,
    ConcatOp,
    DivOp,
    ElementwiseOp,
    EqualOp,
    ExpandOp,
    LessOp,
    MatMulOp,
    MulOp,
    ReduceMaxOp,
    SoftmaxOp,
    TanhOp,
    WhereOp,
    broadcast_shapes,
    shape_of,
)

ATTRS = ("is_causal", "kv_num_heads", "left_window_size", "q_num_heads", "qk_matmul_output_mode",
         "right_window_size", "scale", "softcap", "softmax_precision")
Q, K, V, MASK, PAST_KEY, PAST_VALUE, NONPAD = range(7)
"""The node's input indices."""

Val = np.ndarray | SSAValue
"""Constant data (float32, folded at import) or a value of the function being built."""

_ZERO = np.zeros((), np.float32)
_NEG_INF = np.full((), -np.inf, np.float32)
_FOLD: dict[Callable[..., ElementwiseOp], Callable[..., np.ndarray]] = {
    AddOp: np.add, EqualOp: np.equal, LessOp: np.less, MulOp: np.multiply, WhereOp: np.where}


# ----------------------------------------------------------------------------------------
# Values that may be constant data
# ----------------------------------------------------------------------------------------


def _ssa(ctx: NodeContext, x: Val) -> SSAValue:
    return x if isinstance(x, SSAValue) else ctx.const(x, "attention_bias")


def _shape(x: Val) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, np.ndarray) else shape_of(x)


def _op(ctx: NodeContext, op_class: Callable[..., ElementwiseOp], *xs: Val) -> Val:
    """`op_class` of `xs`: folded with numpy when every operand is constant data, else built."""
    if all(isinstance(x, np.ndarray) for x in xs):
        return np.asarray(_FOLD[op_class](*xs), dtype=np.float32)
    return eltwise(ctx, op_class, *(_ssa(ctx, x) for x in xs))


def _reshaped(ctx: NodeContext, x: Val, shape: Sequence[int]) -> Val:
    return x.reshape(tuple(shape)) if isinstance(x, np.ndarray) else reshape_value(ctx, x, shape)


def _expanded(ctx: NodeContext, x: Val, shape: Sequence[int]) -> Val:
    if _shape(x) == tuple(shape):
        return x
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(np.broadcast_to(x, tuple(shape)))
    return ctx.build(ExpandOp(x, f32_tensor(tuple(shape)))).results[0]


def _concat(ctx: NodeContext, xs: Sequence[Val], axis: int) -> Val:
    arrays = [x for x in xs if isinstance(x, np.ndarray)]
    if len(arrays) == len(xs):
        return np.concatenate(arrays, axis=axis)
    shapes = [_shape(x) for x in xs]
    out = list(shapes[0])
    out[axis] = sum(s[axis] for s in shapes)
    return ctx.build(ConcatOp([_ssa(ctx, x) for x in xs], axis, f32_tensor(tuple(out)))).results[0]


def _carried(ctx: NodeContext, i: int) -> Val:
    """Input `i` as float32: its constant data, else its (carried) value."""
    t = ctx.tensor(i)
    return t.data.astype(np.float32) if t.data is not None else ctx.value(i)


# ----------------------------------------------------------------------------------------
# Shapes
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dims:
    """The sizes of one Attention node (`past` 0 without a cache)."""

    batch: int
    q_heads: int
    kv_heads: int
    q_len: int
    kv_len: int
    past: int
    head: int
    v_head: int
    rank: int

    @property
    def total(self) -> int:
        """Keys attended: the past ones and this step's."""
        return self.past + self.kv_len

    @property
    def groups(self) -> int:
        return self.q_heads // self.kv_heads

    @property
    def scores(self) -> tuple[int, int, int, int]:
        return (self.batch, self.q_heads, self.q_len, self.total)


def _as_4d_shape(ctx: NodeContext, i: int, heads_attr: str) -> tuple[int, ...]:
    """Input `i`'s shape as [B, H, S, D]: a 3-D [B, S, H*D] one split by the heads attribute."""
    shape, heads = ctx.shape(i), ctx.attr(heads_attr)
    if len(shape) == 4:
        if heads is not None and int(heads) != shape[1]:
            raise NodeError(f"{heads_attr}={heads} but input {i} of shape {list(shape)} has {shape[1]} heads")
        return shape
    if heads is None:
        raise NodeError(f"3-D inputs need the {heads_attr} attribute")
    if int(heads) <= 0 or shape[2] % int(heads):
        raise NodeError(f"the hidden size {shape[2]} of input {i} is not a multiple of {heads_attr}={heads}")
    return (shape[0], int(heads), shape[1], shape[2] // int(heads))


def _past_len(ctx: NodeContext, k: tuple[int, ...], v: tuple[int, ...]) -> int:
    """The cached keys: past_key [B, Hkv, P, D] and past_value [B, Hkv, P, Dv], both or neither."""
    if ctx.has_input(PAST_KEY) != ctx.has_input(PAST_VALUE):
        raise NodeError("past_key and past_value must be given together")
    if not ctx.has_input(PAST_KEY):
        return 0
    pk, pv = ctx.shape(PAST_KEY), ctx.shape(PAST_VALUE)
    if len(pk) != 4 or pk[:2] != k[:2] or pk[3] != k[3] or pv != (*pk[:3], v[3]):
        raise NodeError(f"past_key {list(pk)} and past_value {list(pv)} must be [batch, kv_num_heads, past, "
                        f"head_size] of the keys {list(k)} and values {list(v)}")
    if ctx.has_input(NONPAD):
        raise NodeError("nonpad_kv_seqlen cannot be combined with past_key and past_value")
    return pk[2]


def _dims(ctx: NodeContext) -> Dims:
    """The node's sizes, checked."""
    ranks = {len(ctx.shape(i)) for i in (Q, K, V)}
    if len(ranks) != 1 or not ranks <= {3, 4}:
        raise NodeError(f"Q {list(ctx.shape(Q))}, K {list(ctx.shape(K))} and V {list(ctx.shape(V))} must all be "
                        "3-D [batch, seq, hidden] or all 4-D [batch, heads, seq, head_size]")
    q, k, v = (_as_4d_shape(ctx, i, a) for i, a in ((Q, "q_num_heads"), (K, "kv_num_heads"), (V, "kv_num_heads")))
    if q[0] != k[0] or k[:3] != v[:3] or q[3] != k[3]:
        raise NodeError(f"Q {list(q)}, K {list(k)} and V {list(v)} (as [batch, heads, seq, head_size]) disagree "
                        "on the batch, the kv heads, the kv length or the head size")
    if q[1] % k[1]:
        raise NodeError(f"the {q[1]} query heads are not a multiple of the {k[1]} kv heads")
    dims = Dims(q[0], q[1], k[1], q[2], k[2], _past_len(ctx, k, v), q[3], v[3], ranks.pop())
    if ctx.has_input(NONPAD) and ctx.shape(NONPAD) != (dims.batch,):
        raise NodeError(f"nonpad_kv_seqlen of shape {list(ctx.shape(NONPAD))} must be [{dims.batch}]")
    return dims


# ----------------------------------------------------------------------------------------
# The bias
# ----------------------------------------------------------------------------------------


def _mask_bias(ctx: NodeContext, d: Dims) -> Val | None:
    """attn_mask as an additive bias (bool: 0 or -inf), its last dim padded to the total
    keys with -inf; broadcasting to the scores [B, Hq, S, T]."""
    if not ctx.has_input(MASK):
        return None
    shape = ctx.shape(MASK)
    if not 1 <= len(shape) <= 4 or shape[-1] > d.total or broadcast_shapes(
            (*shape[:-1], d.total), d.scores) != d.scores:
        raise NodeError(f"attn_mask of shape {list(shape)} does not broadcast to the scores {list(d.scores)} "
                        "(its last dim may be shorter, not longer)")
    mask = _carried(ctx, MASK)
    if ctx.dtype(MASK) == np.bool_:
        mask = _op(ctx, WhereOp, mask, _ZERO, _NEG_INF)
    if shape[-1] < d.total:
        mask = _concat(ctx, [mask, np.full((*shape[:-1], d.total - shape[-1]), -np.inf, np.float32)], -1)
    return mask


def _allowed(ctx: NodeContext, d: Dims) -> Val | None:
    """1 where is_causal, the window and nonpad_kv_seqlen let query i see key j, else 0
    ([S, T], or [B, 1, S, T] with nonpad_kv_seqlen); None when none of them is set."""
    causal = bool(int(ctx.attr("is_causal", 0)))
    left, right = int(ctx.attr("left_window_size", -1)), int(ctx.attr("right_window_size", -1))
    nonpad = ctx.has_input(NONPAD)
    if not (causal or left >= 0 or right >= 0 or nonpad):
        return None
    j = np.arange(d.total, dtype=np.float32).reshape(1, d.total)
    dj = j - np.arange(d.q_len, dtype=np.float32).reshape(d.q_len, 1)  # j - i
    s = float(d.q_len)
    n = _reshaped(ctx, _carried(ctx, NONPAD), (d.batch, 1, 1, 1)) if nonpad else \
        np.full((1, 1, 1, 1), d.past + d.q_len, np.float32)
    tests: list[tuple[Val, Val]] = []  # (a, b): a < b where allowed (offset = n - S)
    if causal:
        tests.append((dj + (s - 1), n))  # j - i <= offset
    if left >= 0:
        tests.append((n, dj + (s + left + 1)))  # i + offset - j <= left
    if right >= 0:
        tests.append((dj + (s - right - 1), n))  # j - i - offset <= right
    if nonpad:
        tests.append((j, n))  # j < n
    allowed: Val | None = None
    for a, b in tests:
        ok = _op(ctx, LessOp, a, b)
        allowed = ok if allowed is None else _op(ctx, MulOp, allowed, ok)
    return allowed


def _bias(ctx: NodeContext, d: Dims) -> Val | None:
    """The additive bias of the scores: the mask plus -inf where the structure disallows."""
    mask, allowed = _mask_bias(ctx, d), _allowed(ctx, d)
    structural = None if allowed is None else _op(ctx, WhereOp, allowed, _ZERO, _NEG_INF)
    if mask is None or structural is None:
        return mask if structural is None else structural
    return _op(ctx, AddOp, mask, structural)


def _grouped(ctx: NodeContext, bias: Val, d: Dims) -> Val:
    """`bias` (broadcasting to [B, Hq, S, T]) for the grouped scores [B, Hkv, G*S, T]."""
    shape = _shape(bias)
    b, h, s, t = (1,) * (4 - len(shape)) + shape
    if d.groups == 1 or (h == 1 and s == 1):
        return bias
    heads = d.kv_heads if h > 1 else 1
    full = _expanded(ctx, _reshaped(ctx, bias, (b, h, s, t)), (b, heads * d.groups, d.q_len, t))
    return _reshaped(ctx, full, (b, heads, d.groups * d.q_len, t))


def _fully_masked(ctx: NodeContext, bias: Val) -> Val | None:
    """1 for the query rows whose bias is -inf for every key (shape bias[:-1] + [1]), else 0;
    None when the bias is constant and no row is."""
    if isinstance(bias, np.ndarray):
        rows = np.isneginf(bias.max(axis=-1, keepdims=True))
        return rows.astype(np.float32) if rows.any() else None
    shape = shape_of(bias)
    top = ctx.build(ReduceMaxOp(bias, (len(shape) - 1,), True, f32_tensor((*shape[:-1], 1)))).results[0]
    return _op(ctx, EqualOp, top, _NEG_INF)


# ----------------------------------------------------------------------------------------
# The converter
# ----------------------------------------------------------------------------------------


def _heads(ctx: NodeContext, i: int, past: int | None, shape: Sequence[int]) -> SSAValue:
    """Input `i` as [B, H, L, D] (a 3-D one split into heads), after input `past` (on L) if given."""
    x = ctx.value(i)
    if len(ctx.shape(i)) == 3:
        b, h, n, e = shape
        x = transpose_value(ctx, reshape_value(ctx, x, (b, n, h, e)), (0, 2, 1, 3))
    if past is None or not ctx.has_input(past):
        return x
    return _ssa(ctx, _concat(ctx, [ctx.value(past), x], 2))


def _scores(ctx: NodeContext, q: SSAValue, k: SSAValue, d: Dims) -> tuple[SSAValue, SSAValue]:
    """(q @ kt times the scale, the same softcapped) over the grouped rows."""
    kt = transpose_value(ctx, k, (0, 1, 3, 2))
    qk = ctx.build(MatMulOp(q, kt, f32_tensor((*shape_of(q)[:3], d.total)))).results[0]
    scale = ctx.attr("scale")
    scaled = eltwise(ctx, MulOp, qk, ctx.scalar(1.0 / np.sqrt(d.head) if scale is None else float(scale)))
    cap = float(ctx.attr("softcap", 0.0))
    if cap <= 0:
        return scaled, scaled
    tanh = eltwise(ctx, TanhOp, eltwise(ctx, DivOp, scaled, ctx.scalar(cap)))
    return scaled, eltwise(ctx, MulOp, tanh, ctx.scalar(cap))


def _zeroed(ctx: NodeContext, rows: Val | None, x: SSAValue) -> SSAValue:
    """`x` with the fully masked query rows (`rows` 1) set to 0."""
    return x if rows is None else eltwise(ctx, WhereOp, _ssa(ctx, rows), ctx.scalar(0.0), x)


@converter("Attention", attrs=ATTRS)
def convert_attention(ctx: NodeContext) -> Sequence[Output]:
    """softmax(q @ kt * scale (softcapped) + bias) @ v per head (see the module docstring);
    outputs Y, present_key, present_value and qk_matmul_output."""
    d = _dims(ctx)
    mode = int(ctx.attr("qk_matmul_output_mode", 0))
    if mode not in range(4):
        raise NodeError(f"qk_matmul_output_mode={mode} is not one of 0, 1, 2, 3")
    k = _heads(ctx, K, PAST_KEY, (d.batch, d.kv_heads, d.kv_len, d.head))
    v = _heads(ctx, V, PAST_VALUE, (d.batch, d.kv_heads, d.kv_len, d.v_head))
    q4 = _heads(ctx, Q, None, (d.batch, d.q_heads, d.q_len, d.head))
    q = reshape_value(ctx, q4, (d.batch, d.kv_heads, d.groups * d.q_len, d.head))
    bias = _bias(ctx, d)
    scaled, capped = _scores(ctx, q, k, d)
    z = capped if bias is None else eltwise(ctx, AddOp, capped, _ssa(ctx, _grouped(ctx, bias, d)))
    p = ctx.build(SoftmaxOp(z, 3, f32_tensor(shape_of(z)))).results[0]
    y = ctx.build(MatMulOp(p, v, f32_tensor((*shape_of(z)[:3], d.v_head)))).results[0]
    rows = None if bias is None else _fully_masked(ctx, bias)
    y = _zeroed(ctx, rows, reshape_value(ctx, y, (d.batch, d.q_heads, d.q_len, d.v_head)))
    if d.rank == 3:
        y = reshape_value(ctx, transpose_value(ctx, y, (0, 2, 1, 3)), (d.batch, d.q_len, d.q_heads * d.v_head))
    outs: list[Output] = [y, k, v]
    if len(ctx.node.output) > 3 and ctx.node.output[3]:
        qk = reshape_value(ctx, (scaled, capped, z, p)[mode], d.scores)
        outs.append(_zeroed(ctx, rows, qk) if mode == 3 else qk)
    return outs[:len(ctx.node.output)]

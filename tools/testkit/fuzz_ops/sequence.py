"""Sequence-model generators of the fuzzer's op table: SoftmaxCrossEntropyLoss,
NegativeLogLikelihoodLoss, RotaryEmbedding, SwiGLU, LSTM, GRU, RNN and Attention."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tools.testkit.fuzz_builder import (
    MAX_RANK,
    Builder,
    Out,
    Tensor,
    factorize,
)
from tools.testkit.fuzz_ops.table import OPS, OpGen, op

# ======================================================================================
# Losses, transformer pieces
# ======================================================================================


def _labels(b: Builder, shape: Sequence[int], classes: int, ignore: int | None) -> np.ndarray:
    """Class labels in [0, classes), some set to `ignore` (never all of them)."""
    lab = b.rng.integers(0, classes, shape)
    if ignore is not None:
        lab = np.where(b.rng.random(shape) < 0.3, ignore, lab)
        kept = [c for c in range(classes) if c != ignore]
        if (lab == ignore).all() and kept:  # (all ignored: a mean of nothing, NaN)
            lab.reshape(-1)[0] = kept[0]
    return lab.astype(np.int64)


def _loss(name: str) -> None:
    """SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss of t as [N, C, d...] scores
    with constant labels: reduction none/sum/mean, ignore_index, class weights."""
    def gen(b: Builder, t: Tensor) -> Tensor | None:
        if t.rank < 2:
            return None
        c = t.shape[1]
        ignore = b.draw([None, None, -1, c - 1 if c > 1 else None])
        lshape = [t.shape[0], *t.shape[2:]]
        args: list[Tensor | str] = [t, b.const(_labels(b, lshape, c, ignore))]
        if b.coin(0.4):
            args.append(b.uniform([c], 0.5, 2.0))
        reduction = b.draw(["none", "sum", "mean", "mean"])
        attrs: dict = {} if reduction == "mean" and b.coin(0.5) else {"reduction": reduction}
        if ignore is not None:
            attrs["ignore_index"] = ignore
        shape = lshape if reduction == "none" else []
        m = (t.mag * 2 + math.log(c) + 1) * 2 * (int(np.prod(lshape)) if reduction == "sum" else 1)
        return b.node(name, args, shape, -m, m, **attrs)
    OPS[name] = OpGen(gen, 0.6, 13, ranks=(2, 4))


_loss("SoftmaxCrossEntropyLoss")
_loss("NegativeLogLikelihoodLoss")


@op("RotaryEmbedding", weight=1.5, since=23, ranks=(1, 4))
def _rotary(b: Builder, t: Tensor) -> Tensor | None:
    """X [B, H, S, D] (or [B, S, H*D] with num_heads), cos/sin caches per position (with
    constant position_ids) or per batch and position; full or partial rotation, interleaved.
    Another tensor is reshaped to [1, H, S, D] with D even first."""
    if t.rank not in (3, 4) or t.shape[-1] % 2:
        if t.size % 2:
            return None
        d = 2 * b.draw([f for f in range(1, t.size // 2 + 1) if (t.size // 2) % f == 0 and f <= 8])
        rest = factorize(t.size // d, 2, b.rng)
        shape = (1, *rest, d)
        t = b.node("Reshape", [t, b.ints(list(shape))], shape, t.lo, t.hi, exact=t.exact)
    if t.rank == 4:
        batch, heads, seq, d = t.shape
    else:
        batch, seq, hidden = t.shape
        heads = b.draw([h for h in range(1, hidden + 1) if hidden % h == 0 and (hidden // h) % 2 == 0] or [0])
        if not heads:
            return None
        d = hidden // heads
    if d % 2:
        return None
    rot = b.draw([r for r in range(2, d + 1, 2)]) if b.coin(0.3) else d
    attrs: dict = {"num_heads": heads} if t.rank == 3 else {}
    if rot != d:
        attrs["rotary_embedding_dim"] = rot
    if b.coin(0.4):
        attrs["interleaved"] = 1
    angles = b.rng.uniform(-3, 3, [batch, seq, rot // 2])
    args: list[Tensor | str] = [t]
    if b.coin(0.5):
        maxpos = seq + b.randint(0, 3)
        table = b.rng.uniform(-3, 3, [maxpos, rot // 2])
        args += [b.const(np.cos(table)), b.const(np.sin(table)),
                 b.const(b.rng.integers(0, maxpos, [batch, seq]).astype(np.int64))]
    else:
        args += [b.const(np.cos(angles)), b.const(np.sin(angles))]
    return b.node("RotaryEmbedding", args, t.shape, -1.5 * t.mag, 1.5 * t.mag, **attrs)


@op("SwiGLU", since=28)
def _swiglu(b: Builder, t: Tensor) -> Tensor | None:
    p = b.partner(lambda q: q.is_float and q.shape == t.shape, t, same_shape=1.0)
    if p is None:
        return None
    attrs: dict = {"alpha": 1.5} if b.coin(0.3) else {}
    m = (t.mag + 1) * p.mag
    return b.node("SwiGLU", [t, p], t.shape, -m, m, **attrs)


# ======================================================================================
# Recurrences and attention
# ======================================================================================

_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
_ACTIVATIONS = {"LSTM": [["Sigmoid", "Tanh", "Tanh"], ["HardSigmoid", "Tanh", "Relu"]],
                "GRU": [["Sigmoid", "Tanh"], ["Sigmoid", "Relu"]], "RNN": [["Tanh"], ["Relu"], ["Sigmoid"]]}


def _as_3d(b: Builder, t: Tensor, max_first: int) -> Tensor | None:
    """t as a rank-3 tensor whose first dim is at most `max_first` (a Reshape when needed)."""
    if t.rank == 3 and t.shape[0] <= max_first:
        return t
    firsts = [f for f in range(1, max_first + 1) if t.size % f == 0]
    first = b.draw(firsts)
    rest = factorize(t.size // first, 2, b.rng)
    if max(rest) > 16:
        return None
    shape = (first, *rest)
    return b.node("Reshape", [t, b.ints(list(shape))], shape, t.lo, t.hi, exact=t.exact)


def _recurrent(name: str) -> None:
    """X [seq, batch, input] (layout 0: onnxruntime has none for 1), forward, reverse or
    bidirectional, a bias, constant sequence_lens, initial states (constant or live),
    peepholes and input_forget (LSTM), linear_before_reset (GRU), clip, activations."""
    def gen(b: Builder, t: Tensor) -> Tensor | None:
        x = _as_3d(b, t, 4)  # (the steps are unrolled: a kernel chain npu-layer-group plans in quadratic time)
        if x is None:
            return None
        layout = 0  # (layout 1, batch first: onnxruntime has no kernel to compare with)
        seq, batch, inp = (x.shape[1], x.shape[0], x.shape[2]) if layout else x.shape
        hidden, g = b.randint(1, 4), _GATES[name]
        direction = b.draw(["forward", "forward", "reverse", "bidirectional"])
        dirs = 2 if direction == "bidirectional" else 1
        attrs: dict = {"hidden_size": hidden}
        if direction != "forward" or b.coin(0.3):
            attrs["direction"] = direction
        if layout:
            attrs["layout"] = 1
        if b.coin(0.2):
            attrs["activations"] = b.draw(_ACTIVATIONS[name]) * dirs
        if b.coin(0.15):
            attrs["clip"] = float(b.draw([0.5, 2.0]))
        if name == "GRU" and b.coin(0.4):
            attrs["linear_before_reset"] = 1
        if name == "LSTM" and b.coin(0.15):
            attrs["input_forget"] = 1
        scale = 1 / math.sqrt(inp + hidden)
        ins: list[Tensor | str] = [x, b.normal([dirs, g * hidden, inp], scale), b.normal([dirs, g * hidden, hidden], scale)]
        ins.append(b.normal([dirs, 2 * g * hidden], 0.3) if b.coin(0.6) else "")
        ins.append(b.const(b.rng.integers(1, seq + 1, batch).astype(np.int32)) if b.coin(0.3) else "")
        state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
        ins.append(b.normal(state, 0.5) if b.coin(0.4) else "")
        if name == "LSTM":
            ins.append(b.normal(state, 0.5) if b.coin(0.3) else "")
            ins.append(b.normal([dirs, 3 * hidden], 0.3) if b.coin(0.3) else "")
        while ins[-1] == "":
            ins.pop()
        y = [batch, seq, dirs, hidden] if layout else [seq, dirs, batch, hidden]
        m = float(seq) * 2 + 2 if name == "LSTM" or "Relu" in attrs.get("activations", []) else 1.0
        outs: list[Out | None] = [Out(y, -m, m), Out(state, -m, m)]
        if name == "LSTM":
            outs.append(Out(state, -seq * 2.0 - 2, seq * 2.0 + 2))
        if b.coin(0.3):
            outs[0] = None  # (only the final states)
        return b.draw(b.multi(name, ins, outs, **attrs))
    OPS[name] = OpGen(gen, 0.6, 7, ranks=(1, MAX_RANK))


for _name in _GATES:
    _recurrent(_name)


@op("Attention", weight=1.5, since=23, until=25, ranks=(1, MAX_RANK))
def _attention(b: Builder, t: Tensor) -> Tensor | None:
    """Q of t ([B, Hq, S, D], or 3-D [B, S, Hq*D] with the head counts), K and V weights
    or t itself (Hkv dividing Hq: grouped queries), a bool or float mask, is_causal,
    scale, softcap, a past KV cache with its present outputs."""
    if t.rank != 4:
        if t.size % 2 or t.size > 512:
            return None
        q_shape = (1, *factorize(t.size // 2, 2, b.rng), 2)
        q = b.node("Reshape", [t, b.ints(list(q_shape))], q_shape, t.lo, t.hi)
    else:
        q = t
    batch, hq, seq, d = q.shape
    hkv = b.draw([h for h in range(1, hq + 1) if hq % h == 0])
    past = b.randint(1, 3) if b.coin(0.2) else 0
    # (with a past cache, as many new keys as queries: onnxruntime and ONNX's reference,
    # which the converter follows, disagree on is_causal otherwise)
    keys = seq if past else b.randint(max(1, seq - 1), seq + 3)
    self_kv = hkv == hq and keys == seq and b.coin(0.3)
    k: Tensor | str = q if self_kv else b.normal([batch, hkv, keys, d], 1.0)
    dv = d if self_kv else b.draw([d, b.randint(1, 6)])
    v: Tensor | str = q if self_kv else b.normal([batch, hkv, keys, dv], 1.0)
    attrs: dict = {}
    total = keys + past
    mask: str = ""
    if b.coin(0.4):
        mshape = b.draw([[seq, total], [1, 1, seq, total], [batch, 1, seq, total]])
        mask = b.const(b.rng.random(mshape) < 0.8) if b.coin(0.5) else b.normal(mshape, 1.0)
    if b.coin(0.3):
        attrs["is_causal"] = 1
    if b.coin(0.3):
        attrs["scale"] = float(b.draw([0.1, 0.5, 1.0]))
    if b.coin(0.2):
        attrs["softcap"] = float(b.draw([5.0, 20.0]))
    ins: list[Tensor | str] = [q, k, v, mask]
    outs: list[Out | None] = [Out([batch, hq, seq, dv], -5 * q.mag, 5 * q.mag)]
    if past:
        ins += [b.normal([batch, hkv, past, d], 1.0), b.normal([batch, hkv, past, dv], 1.0)]
        outs += [Out([batch, hkv, total, d], -5, 5), Out([batch, hkv, total, dv], -5, 5)]
    while ins[-1] == "":
        ins.pop()
    made = b.multi("Attention", ins, outs, **attrs)
    return made[0] if b.coin(0.8) else b.draw(made)

"""ONNX LSTM, GRU and RNN (opsets 7..): converters of the ONNX importer.

The whole spec: directions forward, reverse and bidirectional, layouts 0 and 1, the
optional bias, peepholes (LSTM), initial states (constant or computed at run time),
a constant `sequence_lens`, `clip`, LSTM's `input_forget`, GRU's `linear_before_reset`,
`activations` with their alphas and betas (the spec's eleven: Sigmoid, Tanh, Relu,
Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus,
case-insensitive as in onnxruntime; another name is diagnosed, naming it) and any
subset of the outputs Y, Y_h, Y_c. Assumes static shapes and W, R, B and P known at
import (exporters store them as initializers; a computed one is diagnosed). Where the
spec is terse the converters follow onnxruntime: `clip` bounds the inputs of the gate
activations but not the cell state fed to LSTM's h, and a batch row of length 0 has
zero final states.

Algorithm
---------
The time loop is unrolled in the graph (T and B are static) with the directions
stepping together: the direction is a batch dim of every step's values ([1, D, B, n]),
and a reverse direction walks its inputs reversed in time, so step k of a
bidirectional node reads time k forwards and T-1-k backwards. The input projection of
all steps is one Gemm up front: X (layout 1: transposed to [T, B, I]) viewed as
[T*B, I] times the transposed W of all directions side by side, plus the biases outside
the recurrence (Wb + Rb but for GRU's Rbh with linear_before_reset); Slices (step -1
for a reverse direction) and a Concat arrange it as [T, D, B, G*H]. A step is Slices
of that and the op's cell (`_lstm_step`, `_gru_step`, `_rnn_step`): h @ Rᵀ as one
MatMul batched over the directions (R transposed at import), Slices of the gates,
activations (per direction only where the directions' differ) and elementwise
updates. With `sequence_lens`, a step some (direction, row) pairs have run past keeps
their states (Where with a constant mask) and gives zeros to Y; a step all have run
past is not built. A reverse direction thus starts each row at its own last step, as
the spec asks. Y is one Concat of the steps' hidden states, a reverse direction's put
back in time order by a Slice; Y_h and Y_c are the final states; layout 1 transposes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import SSAValue

from lowering.importer.base import NodeContext, NodeError, Output, Tensor, converter, f32_tensor
from lowering.importer.elementwise import eltwise, hard_sigmoid
from npu_dialects.graph import (
    SIMPLE_UNARY,
    AbsOp,
    AddOp,
    ClipOp,
    ConcatOp,
    DivOp,
    ElementwiseOp,
    ExpOp,
    GemmOp,
    GreaterOp,
    LessOp,
    MatMulOp,
    MulOp,
    PReluOp,
    ReluOp,
    ReshapeOp,
    SigmoidOp,
    SliceOp,
    SubOp,
    TanhOp,
    TransposeOp,
    WhereOp,
    shape_of,
)

# --------------------------------------------------------------------------------------
# Activations
# --------------------------------------------------------------------------------------

_Build = Callable[[NodeContext, SSAValue, float, float], SSAValue]


def _elu(ctx: NodeContext, x: SSAValue, alpha: float, _beta: float) -> SSAValue:
    """x where x >= 0 else alpha * (exp(x) - 1)."""
    em1 = eltwise(ctx, SubOp, eltwise(ctx, ExpOp, x), ctx.scalar(1.0))
    neg = eltwise(ctx, LessOp, x, ctx.scalar(0.0))
    return eltwise(ctx, WhereOp, neg, eltwise(ctx, MulOp, em1, ctx.scalar(alpha)), x)


def _softsign(ctx: NodeContext, x: SSAValue, _alpha: float, _beta: float) -> SSAValue:
    """x / (1 + |x|)."""
    return eltwise(ctx, DivOp, x, eltwise(ctx, AddOp, eltwise(ctx, AbsOp, x), ctx.scalar(1.0)))


def _affine(ctx: NodeContext, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    """alpha * x + beta."""
    return eltwise(ctx, AddOp, eltwise(ctx, MulOp, x, ctx.scalar(alpha)), ctx.scalar(beta))


def _unary(op_class: Callable[..., ElementwiseOp]) -> _Build:
    return lambda ctx, x, _alpha, _beta: eltwise(ctx, op_class, x)


_ACTIVATIONS: dict[str, tuple[tuple[float, ...], _Build]] = {
    "sigmoid": ((), _unary(SigmoidOp)),
    "tanh": ((), _unary(TanhOp)),
    "relu": ((), _unary(ReluOp)),
    "softplus": ((), _unary(SIMPLE_UNARY["softplus"])),
    "softsign": ((), _softsign),
    "affine": ((1.0, 0.0), _affine),
    "leakyrelu": ((0.01,), lambda ctx, x, a, _b: eltwise(ctx, PReluOp, x, ctx.scalar(a))),
    "thresholdedrelu": ((1.0,), lambda ctx, x, a, _b: eltwise(
        ctx, MulOp, x, eltwise(ctx, GreaterOp, x, ctx.scalar(a)))),
    "scaledtanh": ((1.0, 1.0), lambda ctx, x, a, b: eltwise(
        ctx, MulOp, eltwise(ctx, TanhOp, eltwise(ctx, MulOp, x, ctx.scalar(b))), ctx.scalar(a))),
    "hardsigmoid": ((0.2, 0.5), hard_sigmoid),
    "elu": ((1.0,), _elu),
}
"""Activation (lowercase) -> (defaults of the parameters it takes: none, alpha, or alpha
and beta) and its builder from graph ops."""


@dataclass(frozen=True)
class _Activation:
    """An activation (lowercase name) with its parameters."""

    name: str
    alpha: float = 0.0
    beta: float = 0.0


def _activations(ctx: NodeContext, defaults: Sequence[str], directions: int) -> list[list[_Activation]]:
    """Each direction's activations: `activations` (the op's defaults per direction),
    with `activation_alpha`/`activation_beta` consumed in order by the activations that
    take them (onnxruntime's reading; the others keep their defaults)."""
    names = list(ctx.attr("activations", list(defaults) * directions))
    if len(names) != len(defaults) * directions:
        raise NodeError(f"activations {names} must have {len(defaults) * directions} names "
                        f"({len(defaults)} per direction)")
    alphas = iter(float(a) for a in ctx.attr("activation_alpha", []))
    betas = iter(float(b) for b in ctx.attr("activation_beta", []))
    acts = []
    for name in names:
        entry = _ACTIVATIONS.get(name.lower())
        if entry is None:
            raise NodeError(f"unsupported activation '{name}' (supported: Sigmoid, Tanh, Relu, Affine, LeakyRelu, "
                            "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)")
        params = entry[0]
        alpha = next(alphas, params[0]) if params else 0.0
        beta = next(betas, params[1]) if len(params) > 1 else 0.0
        acts.append(_Activation(name.lower(), alpha, beta))
    n = len(defaults)
    return [acts[d * n:(d + 1) * n] for d in range(directions)]


# --------------------------------------------------------------------------------------
# The cells
# --------------------------------------------------------------------------------------


def _sliced(ctx: NodeContext, v: SSAValue, cuts: Mapping[int, tuple[int, int, int]]) -> SSAValue:
    """`v` cut along some dims, dim -> (start, end, step) (`v` itself when nothing is cut)."""
    shape = shape_of(v)
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    for dim, (start, end, step) in cuts.items():
        starts[dim], ends[dim], steps[dim] = start, end, step
    if (starts, ends, steps) == ([0] * len(shape), list(shape), [1] * len(shape)):
        return v
    out = f32_tensor(SliceOp.sizes(starts, ends, steps))
    return ctx.build(SliceOp(v, starts, ends, steps, out)).results[0]


def _time(seq: int, reverse: bool) -> tuple[int, int, int]:
    """The slice of all `seq` time steps, backwards when `reverse`."""
    return (seq - 1, -1, -1) if reverse else (0, seq, 1)


@dataclass
class _Cell:
    """What the steps read: the recurrent weights of every direction (numpy, made
    constants once on first use), activations and clip; with the cells' arithmetic.
    A step's values are [1, D, B, n*H]: the directions as a batch dim, gates side by side."""

    ctx: NodeContext
    hidden: int
    r: np.ndarray
    """R, [D, G*H, H]."""
    rb: np.ndarray | None
    """The part of Rb added inside the recurrence (GRU's Rbh with linear_before_reset), [D, G*H]."""
    p: np.ndarray | None
    """LSTM's peepholes [D, 3*H] (i, o, f)."""
    acts: list[list[_Activation]]
    """Per direction."""
    clip: float | None
    _consts: dict[str, SSAValue] = field(default_factory=dict)

    def const(self, key: str, make: Callable[[], np.ndarray]) -> SSAValue:
        if key not in self._consts:
            self._consts[key] = self.ctx.const(make(), key)
        return self._consts[key]

    def op(self, op_class: Callable[..., ElementwiseOp], *values: SSAValue) -> SSAValue:
        return eltwise(self.ctx, op_class, *values)

    def act(self, k: int, v: SSAValue, clip: bool = True) -> SSAValue:
        """Activation `k` (f, g, h...) of `v`, clipped first unless not `clip`; one op for
        all directions when they share it, else per direction and concatenated."""
        if clip and self.clip is not None:
            v = self.op(ClipOp, v, self.ctx.scalar(-self.clip), self.ctx.scalar(self.clip))
        acts = [a[k] for a in self.acts]
        if len(set(acts)) == 1:
            return _ACTIVATIONS[acts[0].name][1](self.ctx, v, acts[0].alpha, acts[0].beta)
        parts = [_ACTIVATIONS[a.name][1](self.ctx, _sliced(self.ctx, v, {1: (d, d + 1, 1)}), a.alpha, a.beta)
                 for d, a in enumerate(acts)]
        return self.ctx.build(ConcatOp(parts, 1, f32_tensor(shape_of(v)))).results[0]

    def gate(self, v: SSAValue, k: int, last: int | None = None) -> SSAValue:
        """Gate `k` of `v` (gates k..last with `last`): its columns k*H..(k+1)*H."""
        return _sliced(self.ctx, v, {3: (k * self.hidden, (k + 1 if last is None else last) * self.hidden, 1)})

    def recur(self, h: SSAValue, first: int, last: int) -> SSAValue:
        """h @ R[gates first..last]ᵀ of each direction (plus their inner bias)."""
        lo, hi = first * self.hidden, last * self.hidden
        rt = self.const(f"R{first}{last}_T", lambda: self.r[:, lo:hi].transpose(0, 2, 1))
        _, nd, b, _ = shape_of(h)
        y = self.ctx.build(MatMulOp(h, rt, f32_tensor((1, nd, b, hi - lo)))).results[0]
        rb = self.rb
        if rb is None:
            return y
        return self.op(AddOp, y, self.const(f"Rb{first}{last}", lambda: rb[:, None, lo:hi]))

    def peephole(self, v: SSAValue, k: int, c: SSAValue) -> SSAValue:
        """v + P[k] * c (no op without peepholes)."""
        p, h = self.p, self.hidden
        if p is None:
            return v
        pk = self.const(f"P{k}", lambda: p[:, None, k * h:(k + 1) * h])
        return self.op(AddOp, v, self.op(MulOp, c, pk))


Inputs = Callable[[int, int], SSAValue]
"""The step's input projection of gates first..last: [1, D, B, (last - first) * H]."""
Step = Callable[[_Cell, Inputs, list[SSAValue]], list[SSAValue]]


def _lstm_step(cell: _Cell, x: Inputs, states: list[SSAValue]) -> list[SSAValue]:
    """One LSTM step: gates i, o, f, c from x + h @ Rᵀ (peepholes on the cell), the new
    cell f * c + i * g(c~) and hidden o * h(cell); with input_forget f = 1 - i."""
    h, c = states
    g = cell.op(AddOp, x(0, 4), cell.recur(h, 0, 4))
    i = cell.act(0, cell.peephole(cell.gate(g, 0), 0, c))
    if int(cell.ctx.attr("input_forget", 0)):
        f = cell.op(SubOp, cell.ctx.scalar(1.0), i)
    else:
        f = cell.act(0, cell.peephole(cell.gate(g, 2), 2, c))
    c_new = cell.op(AddOp, cell.op(MulOp, f, c), cell.op(MulOp, i, cell.act(1, cell.gate(g, 3))))
    o = cell.act(0, cell.peephole(cell.gate(g, 1), 1, c_new))
    return [cell.op(MulOp, o, cell.act(2, c_new, clip=False)), c_new]


def _gru_step(cell: _Cell, x: Inputs, states: list[SSAValue]) -> list[SSAValue]:
    """One GRU step: z and r (one activation) from x + h @ Rᵀ, the candidate from
    r * (h @ Rhᵀ + Rbh) (linear_before_reset) or (r * h) @ Rhᵀ, then h' = ĥ + z * (h - ĥ)."""
    (h,) = states
    before = int(cell.ctx.attr("linear_before_reset", 0))
    hr = cell.recur(h, 0, 3 if before else 2)
    zr = cell.act(0, cell.op(AddOp, x(0, 2), cell.gate(hr, 0, 2)))
    z, r = cell.gate(zr, 0), cell.gate(zr, 1)
    inner = cell.op(MulOp, r, cell.gate(hr, 2)) if before else cell.recur(cell.op(MulOp, r, h), 2, 3)
    cand = cell.act(1, cell.op(AddOp, x(2, 3), inner))
    return [cell.op(AddOp, cand, cell.op(MulOp, z, cell.op(SubOp, h, cand)))]


def _rnn_step(cell: _Cell, x: Inputs, states: list[SSAValue]) -> list[SSAValue]:
    """One RNN step: f(x + h @ Rᵀ)."""
    return [cell.act(0, cell.op(AddOp, x(0, 1), cell.recur(states[0], 0, 1)))]


# --------------------------------------------------------------------------------------
# The shared skeleton
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Kind:
    """What distinguishes LSTM, GRU and RNN for the skeleton."""

    gates: int
    activations: tuple[str, ...]
    """The default activations of one direction."""
    step: Step
    states: int = 1
    """Hidden state, and for LSTM the cell."""
    inner_bias: Callable[[NodeContext], tuple[int, ...]] = lambda ctx: ()
    """The gates whose Rb is added inside the recurrence, not to the projection."""


@dataclass
class _Spec:
    """A node's shapes, attributes and constant operands."""

    seq: int
    batch: int
    hidden: int
    layout: int
    reverse: tuple[bool, ...]
    """Per direction: whether it walks the steps backwards."""
    w: np.ndarray
    r: np.ndarray
    p: np.ndarray | None
    lens: np.ndarray | None
    acts: list[list[_Activation]]
    clip: float | None
    bias: np.ndarray | None = None
    """Added to the projection: Wb + Rb but for the inner part, [D*G*H]."""
    inner_rb: np.ndarray | None = None
    """The part of Rb added inside the recurrence (`_Kind.inner_bias`), [D, G*H]."""

    def state_shape(self) -> tuple[int, int, int]:
        d = len(self.reverse)
        return (d, self.batch, self.hidden) if self.layout == 0 else (self.batch, d, self.hidden)

    def valid(self, k: int) -> np.ndarray:
        """Which (direction, row) step `k` updates: [D, B] (the time it reads is below the
        row's length)."""
        times = np.array([self.seq - 1 - k if rev else k for rev in self.reverse])
        lens = np.full(self.batch, self.seq) if self.lens is None else self.lens
        return times[:, None] < lens[None, :]


_DIRECTIONS = {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}


def _constants(ctx: NodeContext, names: dict[int, str]) -> dict[int, np.ndarray]:
    """The given inputs' constant data; one diagnostic naming every one computed at run time."""
    late = [i for i in names if ctx.has_input(i) and ctx.tensor(i).data is None]
    if late:
        raise NodeError("; ".join(f"{names[i]} (input {i}, '{ctx.node.input[i]}') is computed at run time; "
                                  "only constant values are supported" for i in late))
    return {i: np.asarray(ctx.constant(i, what), np.float32) for i, what in names.items() if ctx.has_input(i)}


def _expect(ctx: NodeContext, i: int, what: str, shape: Sequence[int]) -> None:
    if ctx.has_input(i) and ctx.shape(i) != tuple(shape):
        raise NodeError(f"{what} (input {i}) has shape {list(ctx.shape(i))}, expected {list(shape)}")


def _spec(ctx: NodeContext, kind: _Kind) -> _Spec:
    """Read and check the node's attributes and operand shapes."""
    layout = int(ctx.attr("layout", 0))
    direction = ctx.attr("direction", "forward")
    if layout not in (0, 1):
        raise NodeError(f"unsupported attribute layout={layout} (0 or 1)")
    if direction not in _DIRECTIONS:
        raise NodeError(f"unsupported attribute direction={direction} (forward, reverse or bidirectional)")
    x = ctx.shape(0)
    if len(x) != 3:
        raise NodeError(f"X must be 3-D, got shape {list(x)}")
    seq, batch = (x[0], x[1]) if layout == 0 else (x[1], x[0])
    nd, g = len(_DIRECTIONS[direction]), kind.gates
    names = {1: "W", 2: "R", 3: "B", 4: "sequence_lens"} | ({7: "P"} if kind.states == 2 else {})
    consts = _constants(ctx, names)
    w, r = consts[1], consts[2]
    hidden = int(ctx.attr("hidden_size", r.shape[-1] if r.ndim == 3 else 0))
    _expect(ctx, 1, "W", (nd, g * hidden, x[2]))
    _expect(ctx, 2, "R", (nd, g * hidden, hidden))
    _expect(ctx, 3, "B", (nd, 2 * g * hidden))
    _expect(ctx, 7, "P", (nd, 3 * hidden))
    clip = ctx.attr("clip")
    if clip is not None and not clip > 0:
        raise NodeError(f"clip={clip} must be positive")
    spec = _Spec(seq, batch, hidden, layout, _DIRECTIONS[direction], w, r, consts.get(7),
                 _lengths(consts.get(4), seq, batch), _activations(ctx, kind.activations, nd),
                 None if clip is None else float(clip))
    for i, what in ((5, "initial_h"), (6, "initial_c")):
        _expect(ctx, i, what, spec.state_shape())
    if 3 in consts:
        rb, gates = consts[3][:, g * hidden:].reshape(nd, g, hidden), list(kind.inner_bias(ctx))
        inner = np.zeros_like(rb)
        inner[:, gates] = rb[:, gates]
        spec.bias = (consts[3][:, :g * hidden] + (rb - inner).reshape(nd, -1)).reshape(-1)
        spec.inner_rb = inner.reshape(nd, -1) if gates else None
    return spec


def _lengths(lens: np.ndarray | None, seq: int, batch: int) -> np.ndarray | None:
    """`sequence_lens` checked, as integers (None when every row runs all `seq` steps)."""
    if lens is None:
        return None
    if lens.shape != (batch,):
        raise NodeError(f"sequence_lens has shape {list(lens.shape)}, expected [{batch}]")
    lens = lens.astype(np.int64)
    if ((lens < 0) | (lens > seq)).any():
        raise NodeError(f"sequence_lens {lens.tolist()} must lie in 0..{seq} (the sequence length)")
    return None if (lens == seq).all() else lens


def _project(ctx: NodeContext, s: _Spec) -> SSAValue:
    """X @ Wᵀ of every step and direction, plus the biases outside the recurrence:
    [T, D, B, G*H], in the order each direction walks its steps."""
    x, nd, gh = ctx.value(0), len(s.reverse), s.w.shape[1]
    inputs = ctx.shape(0)[2]
    if s.layout == 1:
        x = ctx.build(TransposeOp(x, [1, 0, 2], f32_tensor((s.seq, s.batch, inputs)))).results[0]
    rows = s.seq * s.batch
    flat = ctx.build(ReshapeOp(x, f32_tensor((rows, inputs)))).results[0]
    wt = ctx.const(np.concatenate([s.w[d].T for d in range(nd)], axis=1), "W_T")
    out = f32_tensor((rows, nd * gh))
    if s.bias is None:
        proj = ctx.build(MatMulOp(flat, wt, out)).results[0]
    else:
        proj = ctx.build(GemmOp(flat, wt, ctx.const(s.bias, "bias"), out)).results[0]
    if s.reverse == (False,):
        return ctx.build(ReshapeOp(proj, f32_tensor((s.seq, 1, s.batch, gh)))).results[0]
    proj = ctx.build(ReshapeOp(proj, f32_tensor((s.seq, s.batch, nd * gh)))).results[0]
    parts = []
    for d, rev in enumerate(s.reverse):
        part = _sliced(ctx, proj, {0: _time(s.seq, rev), 2: (d * gh, (d + 1) * gh, 1)})
        parts.append(ctx.build(ReshapeOp(part, f32_tensor((s.seq, 1, s.batch, gh)))).results[0])
    if nd == 1:
        return parts[0]
    return ctx.build(ConcatOp(parts, 1, f32_tensor((s.seq, nd, s.batch, gh)))).results[0]


def _initial(ctx: NodeContext, s: _Spec, cell: _Cell, i: int) -> SSAValue:
    """The initial state from input `i` (zeros when absent): [1, D, B, H]."""
    nd = len(s.reverse)
    shape = (1, nd, s.batch, s.hidden)
    if not ctx.has_input(i):
        return cell.const("zeros", lambda: np.zeros(shape))
    t: Tensor = ctx.tensor(i)
    if t.data is not None:
        data = np.asarray(t.data, np.float32)
        return cell.const(f"{'hc'[i - 5]}0", lambda: (data if s.layout == 0 else data.transpose(1, 0, 2))[None])
    v = ctx.value(i)
    if s.layout == 1:
        v = ctx.build(TransposeOp(v, [1, 0, 2], f32_tensor(shape[1:]))).results[0]
    return ctx.build(ReshapeOp(v, f32_tensor(shape))).results[0]


def _walk(ctx: NodeContext, s: _Spec, kind: _Kind, proj: SSAValue) -> tuple[list[SSAValue], list[SSAValue]]:
    """Build the steps of all directions together: the hidden state of each step k
    ([1, D, B, H], in walking order) and the final states."""
    cell = _Cell(ctx, s.hidden, s.r, s.inner_rb, s.p, s.acts, s.clip)
    states = [_initial(ctx, s, cell, 5 + k) for k in range(kind.states)]
    zero, ys = ctx.scalar(0.0), []
    for k in range(s.seq):
        valid = s.valid(k)
        if not valid.any():
            ys.append(cell.const("zeros", lambda: np.zeros((1, len(s.reverse), s.batch, s.hidden))))
            continue

        def x(first: int, last: int, k: int = k) -> SSAValue:
            return _sliced(ctx, proj, {0: (k, k + 1, 1), 3: (first * s.hidden, last * s.hidden, 1)})

        new = kind.step(cell, x, states)
        if valid.all():
            states = new
            ys.append(new[0])
            continue
        mask = ctx.const(valid[None, :, :, None], f"mask{k}")
        states = [eltwise(ctx, WhereOp, mask, n, old) for n, old in zip(new, states)]
        ys.append(eltwise(ctx, WhereOp, mask, new[0], zero))
    if s.lens is not None and (s.lens == 0).any():
        ran = ctx.const((s.lens > 0).reshape(1, 1, -1, 1), "ran")
        states = [eltwise(ctx, WhereOp, ran, v, zero) for v in states]
    return ys, states


def _laid_out(ctx: NodeContext, v: SSAValue, layout: int, final: bool = False) -> SSAValue:
    """[n, D, B, H] as Y ([n, D, B, H], layout 1: [B, n, D, H]) or, `final` (n = 1), as
    Y_h or Y_c ([D, B, H], layout 1: [B, D, H])."""
    n, nd, b, h = shape_of(v)
    if layout == 1:
        v = ctx.build(TransposeOp(v, [2, 0, 1, 3], f32_tensor((b, n, nd, h)))).results[0]
    if final:
        v = ctx.build(ReshapeOp(v, f32_tensor((nd, b, h) if layout == 0 else (b, nd, h)))).results[0]
    return v


def _sequence(ctx: NodeContext, s: _Spec, ys: list[SSAValue]) -> SSAValue:
    """Y: the steps' hidden states in time order (a reverse direction's reversed)."""
    nd = len(s.reverse)
    v = ys[0] if s.seq == 1 else ctx.build(ConcatOp(ys, 0, f32_tensor((s.seq, nd, s.batch, s.hidden)))).results[0]
    if any(s.reverse):
        parts = [_sliced(ctx, v, {0: _time(s.seq, rev), 1: (d, d + 1, 1)})
                 for d, rev in enumerate(s.reverse)]
        v = parts[0] if nd == 1 else ctx.build(ConcatOp(parts, 1, f32_tensor(shape_of(v)))).results[0]
    return v


def _recurrent(ctx: NodeContext, kind: _Kind) -> Sequence[Output]:
    """The shared converter: the projection, the steps, the outputs."""
    s = _spec(ctx, kind)
    ys, finals = _walk(ctx, s, kind, _project(ctx, s))
    if ctx.output_used(0):
        y: Output = _laid_out(ctx, _sequence(ctx, s, ys), s.layout)
    else:  # (not built: nothing reads it)
        y = Tensor(ctx.node.output[0], (), np.dtype(np.float32), placeholder=True)
    outs = [y] + [_laid_out(ctx, v, s.layout, final=True) for v in finals]
    return outs[:len(ctx.node.output)]


_LSTM = _Kind(4, ("Sigmoid", "Tanh", "Tanh"), _lstm_step, states=2)
_GRU = _Kind(3, ("Sigmoid", "Tanh"), _gru_step,
             inner_bias=lambda ctx: (2,) if int(ctx.attr("linear_before_reset", 0)) else ())
_RNN = _Kind(1, ("Tanh",), _rnn_step)
_COMMON = ("activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout")


@converter("LSTM", attrs=(*_COMMON, "input_forget"))
def convert_lstm(ctx: NodeContext) -> Sequence[Output]:
    """LSTM unrolled over its steps (see the module docstring)."""
    return _recurrent(ctx, _LSTM)


@converter("GRU", attrs=(*_COMMON, "linear_before_reset"))
def convert_gru(ctx: NodeContext) -> Sequence[Output]:
    """GRU unrolled over its steps (see the module docstring)."""
    return _recurrent(ctx, _GRU)


@converter("RNN", attrs=_COMMON)
def convert_rnn(ctx: NodeContext) -> Sequence[Output]:
    """RNN unrolled over its steps (see the module docstring)."""
    return _recurrent(ctx, _RNN)

"""Strip layer groups: a chain of spatial ops computed strip by strip along H, so
its intermediate tensors stay in SRAM even when they do not fit there whole.

A chain is a list of graph ops where each op takes the previous op's result (the
first takes the chain input `x`, a tensor whose last two dims are H and W, batch
first):
conv2d and max-pool (NCHW), reshapes and transposes that keep the last two dims
(a channel shuffle), and elementwise ops whose other operands are constant over H
and W (weights, biases, per-channel constants) or are *side inputs*: tensors from
outside the chain of the running value's shape (a residual), loaded per strip
with the rows the op needs. Its last result `y` is cut into strips of `T` rows; strip
`s` needs rows [A*s + c0, A*s + c0 + R) of every value (`StripGeometry`), from
`y`'s [T*s, T*s + T) back through each op's receptive field (the halos, which
neighbouring strips compute again). Every strip has the same shapes, so the task
is one loop over strips; rows a strip holds outside a tensor are made what the
consumer's padding would read: the DMA fills them for `x` (0 for a conv, -inf
for a pool) and a per-row mask multiplies them to 0 (then adds -3.4e38 for a
pool) for an intermediate (`StripGeometry.masked`). Rows of `y` past its end are
clipped at the store. Weights and constants are loaded once per task.

`plan_strips` picks the strip height that the cost model (`StripPlan.cycles`)
prefers among those whose buffers fit `sram_bytes`: per task the constants'
loads; per strip the input and mask loads, the ops (on strip shapes) and the
store, in sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import ceil, prod

from xdsl.ir import Operation, SSAValue

from npu_dialects.arch import Arch
from npu_dialects.graph import Conv2dOp, ElementwiseOp, MaxPoolOp, ReshapeOp, TransposeOp, ints, shape_of
from lowering.costmodel import stall_for
from lowering.groups import op_cycles

F32 = 4
NEG = -3.4028235e38  # what a masked row of a max-pool input becomes (finite: 0 * x stays 0 first)


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def operands(op: Operation, canon: dict[SSAValue, SSAValue]) -> list[SSAValue]:
    """`op`'s operands, renamed by `canon` (planning kernels whose bodies are not merged)."""
    return [canon.get(o, o) for o in op.operands]


def _hw_constant(v: SSAValue, rank: int) -> bool:
    s = shape_of(v)
    return len(s) <= rank and all(d == 1 for d in ((1,) * (rank - len(s)) + tuple(s))[-2:])


def _keeps_hw(op: Operation) -> bool:
    """A reshape or transpose that leaves the last two dims (H, W) where they are."""
    src, dst = shape_of(op.operands[0]), shape_of(op.results[0])
    if len(src) < 3 or len(dst) < 3 or src[-2:] != dst[-2:] or src[0] != dst[0]:
        return False
    if isinstance(op, TransposeOp):
        perm = ints(op.perm, ())
        return list(perm[-2:]) == [len(src) - 2, len(src) - 1]
    return isinstance(op, ReshapeOp)


def spatial_operand(op: Operation, prev: SSAValue, canon: dict[SSAValue, SSAValue],
                    inside: set[SSAValue]) -> bool:
    """Whether `op` can be a chain link taking `prev` (see the module docstring);
    `inside` holds the chain's values so far."""
    ops_ = operands(op, canon)
    if isinstance(op, (Conv2dOp, MaxPoolOp)):
        return ops_[0] == prev and all(o != prev for o in ops_[1:]) and len(shape_of(prev)) == 4
    if isinstance(op, (ReshapeOp, TransposeOp)):
        return ops_[0] == prev and _keeps_hw(op)
    if isinstance(op, ElementwiseOp):
        others = [o for o in ops_ if o != prev]
        if len(others) != len(ops_) - 1 or op.results[0].type != prev.type:
            return False
        rank = len(shape_of(prev))
        return all(_hw_constant(o, rank) or (o.type == prev.type and o not in inside) for o in others)
    return False


def chain_of(ops: Sequence[Operation], canon: dict[SSAValue, SSAValue] | None = None) -> SSAValue | None:
    """The chain input `x` if `ops` form a chain (see the module docstring), else None."""
    canon = canon or {}
    if not ops:
        return None
    first = ops[0]
    if not isinstance(first, (Conv2dOp, MaxPoolOp, ElementwiseOp, ReshapeOp, TransposeOp)) or not first.operands:
        return None
    x = operands(first, canon)[0]
    if isinstance(first, ElementwiseOp):  # the operand that has the result's type
        x = next((o for o in operands(first, canon) if o.type == first.results[0].type), x)
    prev = x
    inside = {x}
    for op in ops:
        if len(op.results) != 1 or not spatial_operand(op, prev, canon, inside):
            return None
        prev = op.results[0]
        inside.add(prev)
    if not any(isinstance(op, (Conv2dOp, MaxPoolOp)) for op in ops):
        return None  # (no halo: a plain tiled kernel does as well)
    if any(len(shape_of(v)) < 3 or shape_of(v)[0] != shape_of(x)[0] for v in inside):
        return None  # (every value keeps the batch dim: a strip holds rows of every image)
    return x


def side_inputs(op: Operation, prev: SSAValue, canon: dict[SSAValue, SSAValue]) -> list[int]:
    """Indices of an elementwise link's operands that are side inputs (loaded per strip)."""
    if not isinstance(op, ElementwiseOp):
        return []
    ops_ = operands(op, canon)
    return [i for i, o in enumerate(ops_) if o != prev and o.type == prev.type]


def _window(op: Operation) -> tuple[int, int, int]:
    """(stride, effective kernel, top pad) of a conv or pool along H."""
    p = op.params
    k = shape_of(op.weight)[2] if isinstance(op, Conv2dOp) else p["kernel"][0]
    return p["strides"][0], (k - 1) * p["dilations"][0] + 1, p["pads"][0]


@dataclass
class StripGeometry:
    """Rows of each value a strip holds: `rows[v] = (A, c0, R)` for [A*s + c0, A*s + c0 + R).
    `masked[v]`: the pad value rows outside v must read as (0.0 or -inf) when some strip
    holds such rows and a conv or pool reads them."""

    x: SSAValue
    ops: list[Operation]
    T: int
    S: int
    rows: dict[SSAValue, tuple[int, int, int]] = field(default_factory=dict)
    masked: dict[SSAValue, float] = field(default_factory=dict)
    x_pad: float = 0.0

    def outside(self, v: SSAValue) -> bool:
        a, c0, r = self.rows[v]
        h = shape_of(v)[-2]
        return c0 < 0 or a * (self.S - 1) + c0 + r > h

    def mask_rows(self, v: SSAValue) -> list[float]:
        """The mask of v over every row any strip holds: 1 inside the tensor, else 0."""
        a, c0, r = self.rows[v]
        h = shape_of(v)[-2]
        return [1.0 if 0 <= j + c0 < h else 0.0 for j in range(a * (self.S - 1) + r)]


def strip_geometry(ops: Sequence[Operation], x: SSAValue, T: int) -> StripGeometry:
    """Rows per strip of every value of chain `ops` (input `x`) for strips of T output rows."""
    y = ops[-1].results[0]
    S = ceil(shape_of(y)[-2] / T)
    g = StripGeometry(x, list(ops), T, S)
    g.rows[y] = (T, 0, T)
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        a, c0, r = g.rows[op.results[0]]
        src = ops[i - 1].results[0] if i else x
        if isinstance(op, (Conv2dOp, MaxPoolOp)):
            s, k, pt = _window(op)
            g.rows[src] = (a * s, c0 * s - pt, (r - 1) * s + k)
            pad = 0.0 if isinstance(op, Conv2dOp) else float("-inf")
            if src is x:
                g.x_pad = pad
            elif g.outside(src):
                g.masked[src] = pad
        else:
            g.rows[src] = (a, c0, r)
    return g


@dataclass
class StripPlan:
    """A strip group's geometry, SRAM need and the parts of its cost: the constants'
    bytes (loaded once per task), per strip the bytes of each load, the compute
    cycles and the bytes stored."""

    geometry: StripGeometry
    once: list[SSAValue]  # constants loaded once per task, in order of use
    sram_bytes: int
    once_loads: list[int]
    strip_loads: list[int]
    compute: int
    store: int
    arch: Arch | None = None
    prefetch: bool = False  # strip s+1's loads go to a second set of buffers while s computes

    @property
    def dram_bytes(self) -> int:
        return sum(self.once_loads) + self.geometry.S * (sum(self.strip_loads) + self.store)

    @property
    def cycles(self) -> int:
        return self.cycles_on(1, None)

    def cycles_on(self, parts: int, arch: Arch | None) -> int:
        """Predicted span with the strips split over `parts` cores sharing `dram_bw`
        (each part loads the constants), plus the two cross-core events of a split."""
        arch = arch or self.arch
        assert arch is not None
        bw = max(1, arch.dram_bw // parts)
        once = _loads(self.once_loads, arch, bw)
        load = _loads(self.strip_loads, arch, bw)
        store = arch.dma_latency + ceil(self.store / bw)
        n = ceil(self.geometry.S / parts)
        if self.prefetch:  # the first strip's loads are exposed, then they hide behind compute
            body = load + n * (max(load, stall_for(self.strip_loads, arch, bw) + self.compute) + store)
        else:
            body = n * (load + self.compute + store)
        return once + body + (2 * arch.sync_latency if parts > 1 else 0)


def _loads(sizes: list[int], arch: Arch, bw: int) -> int:
    """Cycles to land loads issued together on the core's channels."""
    if not sizes:
        return 0
    return max(max(arch.dma_latency + ceil(b / bw) for b in sizes), ceil(sum(sizes) / bw))


def strip_shape(g: StripGeometry, v: SSAValue) -> tuple[int, ...]:
    """v's shape with H (its second last dim) cut to the rows a strip holds."""
    s = list(shape_of(v))
    s[-2] = g.rows[v][2]
    return tuple(s)


def prefetchable(ops: Sequence[Operation]) -> bool:
    """Whether the chain input's buffer can alternate between two slots: no reshape views
    it (through the elementwise ops that work in place on it)."""
    for op in ops:
        if isinstance(op, ReshapeOp):
            return False
        if not isinstance(op, ElementwiseOp):
            return True
    return True


def plan_strip_height(ops: Sequence[Operation], x: SSAValue, T: int, arch: Arch,
                      canon: dict[SSAValue, SSAValue] | None = None, prefetch: bool = False) -> StripPlan | None:
    """The plan for strips of T output rows (with the loads of the next strip issued
    before a strip computes when `prefetch`), or None when its buffers do not fit SRAM."""
    canon = canon or {}
    g = strip_geometry(ops, x, T)
    once: list[SSAValue] = []
    side: list[int] = []  # bytes of each side input's rows
    prev = x
    for op in ops:
        sides = side_inputs(op, prev, canon)
        for i, o in enumerate(operands(op, canon)):
            if i in sides:
                side.append(prod(strip_shape(g, op.results[0])) * F32)
            elif o not in g.rows and o not in once:
                once.append(o)
        prev = op.results[0]
    sizes = [prod(shape_of(o)) * F32 for o in once]
    # per strip: the input, side inputs, each new result (elementwise ops work in place,
    # reshapes alias), masks
    strip_vals = [x] + [op.results[0] for op in ops if not isinstance(op, (ElementwiseOp, ReshapeOp))]
    sram = sum(_align(b, arch.align) for b in sizes + side)
    sram += sum(_align(prod(strip_shape(g, v)) * F32, arch.align) for v in strip_vals)
    sram += sum(_align(g.rows[v][2] * F32, arch.align) * (2 if pad else 1) for v, pad in g.masked.items())
    if prefetch:  # a second slot for everything loaded per strip
        sram += sum(_align(b, arch.align) for b in side) + _align(prod(strip_shape(g, x)) * F32, arch.align)
        sram += sum(_align(g.rows[v][2] * F32, arch.align) * (2 if pad else 1) for v, pad in g.masked.items())
    if sram > arch.sram_bytes:
        return None
    loads = [prod(strip_shape(g, x)) * F32] + side + [g.rows[v][2] * F32 * (2 if pad else 1)
                                                    for v, pad in g.masked.items()]
    compute = sum(op_cycles(op, arch, strip_shape(g, op.results[0])) or 0 for op in ops)
    compute += sum(ceil(prod(strip_shape(g, v)) / arch.vector_lanes) * (2 if pad else 1)
                   for v, pad in g.masked.items())
    y = ops[-1].results[0]
    return StripPlan(g, once, sram, sizes, loads, compute, prod(strip_shape(g, y)) * F32, arch=arch,
                     prefetch=prefetch)


def plan_strips(ops: Sequence[Operation], arch: Arch, canon: dict[SSAValue, SSAValue] | None = None,
                max_strips: int = 64) -> StripPlan | None:
    """The cheapest strip plan of chain `ops` that fits SRAM, or None (not a chain, a
    single strip would be the whole tensor, or nothing fits)."""
    x = chain_of(ops, canon)
    if x is None:
        return None
    h = shape_of(ops[-1].results[0])[-2]
    best: StripPlan | None = None
    modes = (False, True) if prefetchable(ops) else (False,)
    for T in sorted({ceil(h / s) for s in range(2, min(h, max_strips) + 1)}, reverse=True):
        for prefetch in modes:
            p = plan_strip_height(ops, x, T, arch, canon, prefetch)
            if p is not None and (best is None or p.cycles < best.cycles):
                best = p
    return best

"""Strip layer groups: a small graph of spatial ops computed strip by strip along
H, so its intermediate tensors stay in SRAM even when they do not fit there whole.

A strip group is a list of graph ops in program order over one input `x` (a tensor
whose last two dims are H and W, batch first); each op reads values computed
earlier in the group (`x` included) and constants. The last result `y` is used after
the group, as may be inner values (`stored`: a block's output, read again by a later
residual add), whose rows each strip stores too. The ops form a DAG of convs, pools, channel shuffles,
LRN, channel concats, elementwise and quantization ops (the exact set under Algorithm). `y` is
cut into strips of `T` rows, all of the same shapes, so the task is one loop over
strips; halos are recomputed (`StripGeometry`) or kept in line buffers
(`strip_geometry(rolling=True)`), and a strip's values share SRAM over their
lifetimes (`strip_buffers`). `plan_strips` picks the strip height, prefetch and
line buffers the cost model (`StripPlan.cycles_on`) prefers among the plans whose
buffers fit `sram_bytes`.

Algorithm
---------
Ops. A value may have several readers (a fire or Inception module's branches), so
the ops form a DAG: conv2d, max-pool and 2-D average pool (NCHW; one whose padding
is left out of the divisor only on the group input, which the DMA pads with NaN - a
NaN mask would not survive the IR's text form), reshapes and transposes that keep
the last two dims (a channel shuffle), local response normalisation (across
channels), channel concats of one image (each operand is computed into its channel
range of the concat's strip buffer: the concat moves nothing), quantize, dequantize,
requantize and cast (their parameters constant over H and W: loaded once), lookup
tables (the table loaded once), and elementwise ops whose other operands are constant
over H and W (weights, biases, per-channel constants) or are *side inputs*: tensors
from outside the group of the result's shape (a residual; also the group's input
itself where an elementwise op reads it at rows the strip does not hold for its other
readers), loaded per strip with the rows the op needs.

Strips. `y` is cut into strips of `T` rows; strip `s` holds rows
[A*s + c0, A*s + c0 + R) of every value (`StripGeometry`), from `y`'s
[T*s, T*s + T) back through each op's receptive field (the halos, which
neighbouring strips compute again). A value with several readers holds the union
of the rows they need; a conv or pool may read the middle of it (negative pads crop
the strip), an elementwise op reads a copy of the rows it needs (an SRAM-to-SRAM
DMA: a residual add next to a 3x3 conv path), any other reader must need exactly
its rows. Every strip has the same shapes, so the task is one loop over strips;
rows a strip holds outside a tensor are made what the consumer's padding would
read: the DMA fills them for `x` (0 for a conv, -3.4e38 for a pool) and a per-row
mask multiplies them to 0 (then adds -3.4e38 for a pool) for an intermediate
(`StripGeometry.masked`) that a padded conv or pool reads (or any conv or pool,
when it comes after a pool: -3.4e38 must not reach arithmetic). Integer values take
a quantized conv's zero point, or the type's minimum for a pool, instead: an integer
max and min with masks of their type (`mask_kinds`; a product is not exact there). Rows of `y` past
its end are clipped at the store. A stored inner value holds, besides what its readers
need, the rows [A*s, A*s + A) strip s stores of it (the strips must cover its rows:
A*(S-1) < H <= A*S); it keeps its buffer to the end of the strip (no op overwrites it) and is
never line-buffered. Weights and constants are loaded once per task;
a strip's values share SRAM over their lifetimes (`strip_buffers`).

Line buffers (`strip_geometry(rolling=True)`): a value whose consecutive strips
overlap (it holds R rows a step of A apart, R > A) keeps its buffer from strip to
strip; a strip moves the R - A rows it shares with the next one to the top (an
SRAM-to-SRAM DMA) and computes only the A new ones into the rows below (computed
apart, then moved in), so its producer needs its inputs for those rows only, and
the group input is loaded A rows at a time. A task first runs `warm` strips that
store nothing, to fill the buffers (the rows the first one would keep from before it
are zeros: its shift pads them); masks apply to the rows a strip computes.

`plan_strips` picks the strip height, prefetch and line buffers that the cost model
(`StripPlan.cycles_on`, split over the cores where that pays) prefers among the plans
whose buffers fit `sram_bytes`: per task the constants' loads; per strip the input
and mask loads, the ops (on the rows they compute), the line buffers' moves and the
store, in sequence (the next strip's loads overlapping with prefetch); the masks only
in the strips at a tensor's edge (the others hold no row outside it and skip them). A
max-pool after a conv's bias and relu runs before them (`pooled_epilogues`: they then
touch the pooled rows only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from math import ceil, prod
from typing import Any

from xdsl.ir import Attribute, Operation, SSAValue

from lowering.tile.costmodel import best_split, channel_free, stall_for
from lowering.tile.group_plan import fit_lifetimes, op_cycles, planning, planning_facts
from lowering.tile.tile_search import TilingError, align_up
from npu_dialects.arch import Arch, value_type
from npu_dialects.dtypes import elem_bytes, element_type, is_float, nbytes, qrange
from npu_dialects.graph import (
    AvgPoolOp,
    ConcatOp,
    Conv2dOp,
    ElementwiseOp,
    LrnOp,
    MaxPoolOp,
    QBinaryOp,
    QuantOp,
    ReluOp,
    ReshapeOp,
    SumPoolOp,
    TableOp,
    TransposeOp,
    attr_int,
    ints,
    shape_of,
)
from npu_dialects.tile import StripPlanAttr

WINDOWED = (Conv2dOp, MaxPoolOp, AvgPoolOp, SumPoolOp)  # ops whose result rows read a window of input rows
NEG = -3.4028235e38  # what a masked row of a max-pool input becomes (finite: 0 * x stays 0 first)
NAN_PAD = float("nan")  # what rows outside the input of a padded average pool read (left out of its divisor)
LINE_BUFFER_MODES = ("auto", "always", "never")  # by cost; wherever one fits (tests, bisection); none


def operands(op: Operation, canon: dict[SSAValue, SSAValue]) -> list[SSAValue]:
    """`op`'s operands, renamed by `canon` (planning kernels whose bodies are not merged).
    While planning, read once per op and `canon` (the list is shared: not to be changed)."""
    facts = planning_facts()
    if facts is None:
        return [canon.get(o, o) for o in op.operands]
    hit = facts.get(("ins", op))
    if hit is None or hit[0] is not canon:  # (the entry holds `canon`: one renaming per entry)
        hit = facts["ins", op] = (canon, [canon.get(o, o) for o in op.operands])
    return hit[1]


def _hw_constant(v: SSAValue, rank: int) -> bool:
    s = shape_of(v)
    return len(s) <= rank and all(d == 1 for d in ((1,) * (rank - len(s)) + tuple(s))[-2:])


def broadcast_rows(o: SSAValue, r: SSAValue) -> bool:
    """Whether `o` (of another shape than `r`) broadcasts into `r` along the leading dims
    only, with `r`'s H and W and element type: a [1, 1, H, W] map over the channels
    (an average pool's divisor map, `npu-fuse-qdq`), loaded per strip like a side input."""
    so, sr = shape_of(o), shape_of(r)
    return (len(so) == len(sr) >= 3 and so[-2:] == sr[-2:] and so != sr and element_type(o) == element_type(r)
            and all(a in (1, b) for a, b in zip(so[:-2], sr[:-2])))


def side_shape(g: "StripGeometry", op: Operation, o: SSAValue) -> tuple[int, ...]:
    """The shape of side input `o`'s rows in a strip of `op`: the rows `op` computes, its
    leading dims where it broadcasts them."""
    s = computed_shape(g, op.results[0])
    return tuple(1 if d == 1 else n for d, n in zip(shape_of(o)[:-2], s[:-2])) + s[-2:]


def _keeps_hw(op: Operation) -> bool:
    """A reshape or transpose that leaves the last two dims (H, W) where they are."""
    src, dst = shape_of(op.operands[0]), shape_of(op.results[0])
    if len(src) < 3 or len(dst) < 3 or src[-2:] != dst[-2:] or src[0] != dst[0]:
        return False
    if isinstance(op, TransposeOp):
        perm = ints(op.perm, ())
        return list(perm[-2:]) == [len(src) - 2, len(src) - 1]
    return isinstance(op, ReshapeOp)


def concat_axis(op: ConcatOp) -> int:
    return attr_int(dict(op.attributes), "axis", 0) % len(shape_of(op.results[0]))


def pointwise(op: Operation) -> bool:
    """An op computing each element from the same element of its data operands (broadcast
    ones too): an elementwise op, or a requantizing add or multiply (`QBinaryOp`, both
    operands data); a strip group treats them alike (side inputs, residuals, results in
    place)."""
    return isinstance(op, ElementwiseOp | QBinaryOp)


def link_ok(op: Operation, canon: dict[SSAValue, SSAValue], inner: set[SSAValue]) -> bool:
    """Whether `op` can join a strip group whose values so far are `inner` (see the
    module docstring)."""
    ops_ = operands(op, canon)
    if len(op.results) != 1 or not ops_:
        return False
    if isinstance(op, (Conv2dOp, MaxPoolOp)):
        return ops_[0] in inner and all(o not in inner for o in ops_[1:]) and len(shape_of(ops_[0])) == 4
    if isinstance(op, (AvgPoolOp, SumPoolOp)):
        return ops_[0] in inner and len(op.params["kernel"]) == 2 and len(shape_of(ops_[0])) == 4
    if isinstance(op, (ReshapeOp, TransposeOp)):
        return ops_[0] in inner and _keeps_hw(op)
    if isinstance(op, LrnOp):  # across channels at each (h, w): any rows of its input are rows of its result
        return ops_[0] in inner and len(shape_of(op.results[0])) == 4
    if isinstance(op, ConcatOp):  # channels of one image: each operand is a byte range of the result
        out = shape_of(op.results[0])
        return (len(out) == 4 and out[0] == 1 and concat_axis(op) == 1 and all(o in inner for o in ops_)
                and len(set(ops_)) == len(ops_))
    if pointwise(op):
        t, rank = op.results[0].type, len(shape_of(op.results[0]))
        return any(o in inner for o in ops_) and all(
            o.type == t if o in inner else (o.type == t or _hw_constant(o, rank) or broadcast_rows(o, op.results[0]))
            for o in ops_)
    if isinstance(op, QuantOp):  # (a requantize, quantize, dequantize: parameters per channel at most)
        rank = len(shape_of(op.results[0]))
        return ops_[0] in inner and all(o not in inner and _hw_constant(o, rank) for o in ops_[1:])
    if isinstance(op, TableOp):  # (a lookup per element; its table, per channel at most, loaded once)
        axis = attr_int(dict(op.attributes), "axis", 1) % len(shape_of(op.results[0]))
        return ops_[0] in inner and ops_[1] not in inner and (len(shape_of(ops_[1])) == 1 or axis == 1)
    return False


def mask_kinds(v: SSAValue, pad: float) -> list[tuple[str, float, float]]:
    """How rows of v outside the tensor become `pad` (what its padded readers read):
    (elementwise fn, mask value inside, mask value outside) applied in turn. Floats
    multiply by 1/0 (then add -3.4e38 for a max-pool, `pad` -inf); integers, where a
    product is not exact, clamp between type bounds inside and the pad outside (a
    quantized conv's zero point, the type's minimum for a max-pool)."""
    if is_float(element_type(v)):
        return [("mul", 1.0, 0.0)] + ([("add", 0.0, NEG)] if pad != 0.0 else [])
    lo, hi = qrange(element_type(v))
    p = pad_of(v, pad)
    return [("max", float(lo), p), ("min", float(hi), p)]


def pad_of(v: SSAValue, pad: float) -> float:
    """The DMA pad value of group input v for readers wanting `pad` (-inf: a max-pool's
    lowest value, in v's type)."""
    if is_float(element_type(v)):
        return NEG if pad == float("-inf") else pad
    lo, hi = qrange(element_type(v))
    return float(min(max(pad, lo), hi))


def strip_input(ops: Sequence[Operation], canon: dict[SSAValue, SSAValue] | None = None) -> SSAValue | None:
    """The strip group's input `x` if `ops` can be one (see the module docstring), else None."""
    canon = canon or {}
    if not ops or isinstance(ops[0], ConcatOp) or not ops[0].operands:
        return None
    first = ops[0]
    x = operands(first, canon)[0]
    if pointwise(first):  # the operand that has the result's type
        x = next((o for o in operands(first, canon) if o.type == first.results[0].type), x)
    inner = {x}
    for op in ops:
        if not link_ok(op, canon, inner):
            return None
        inner.add(op.results[0])
    if not any(isinstance(op, WINDOWED) for op in ops):
        return None  # (no halo: a plain tiled kernel does as well)
    if any(len(shape_of(v)) < 3 or shape_of(v)[0] != shape_of(x)[0] for v in inner):
        return None  # (every value keeps the batch dim: a strip holds rows of every image)
    read = {o for op in ops for o in operands(op, canon)}
    if any(v not in read for v in inner if v is not ops[-1].results[0]):
        return None  # (a value no op of the run reads: its rows per strip would be unknown)
    return x


def side_inputs(op: Operation, g: "StripGeometry", canon: dict[SSAValue, SSAValue]) -> list[int]:
    """Indices of an elementwise op's operands that are side inputs (loaded per strip):
    tensors from outside the group of the result's type, and the group input where
    the op reads it at rows the strip does not hold for its other readers
    (`StripGeometry.x_side`; rows it does hold are copied, `StripGeometry.local`)."""
    if not pointwise(op):
        return []
    r = op.results[0]
    return [i for i, o in enumerate(operands(op, canon))
            if (o not in g.rows or (o is g.x and op in g.x_side)) and o.type == r.type
            or o not in g.rows and broadcast_rows(o, r)]


def in_place_candidates(ops: Sequence[Operation], g: "StripGeometry", canon: dict[SSAValue, SSAValue],
                        target: SSAValue | None = None) -> list[SSAValue]:
    """Side inputs of a strip group (residuals) its output may overwrite: of the output's
    type, not the group input, read once in the group, by an elementwise op at exactly
    the rows each strip stores (so each strip loads its rows before storing over them).
    `target`: a stored inner value instead of the output (the rows [A*s, A*s + A) it
    stores; never with warm-up strips, whose rows another core's part may have stored
    over already and which feed the stored rows through the line buffers)."""
    y = ops[-1].results[0]
    out = y if target is None else target
    rows = g.rows[y] if target is None else (g.rows[target][0], 0, g.rows[target][0])
    if target is not None and g.warm:
        return []
    reads: dict[SSAValue, int] = {}
    for op in ops:
        for o in operands(op, canon):
            reads[o] = reads.get(o, 0) + 1
    found = []
    for op in ops:
        for i in side_inputs(op, g, canon):
            v = operands(op, canon)[i]
            r = op.results[0]
            if v.type == out.type and v is not g.x and g.rows[r] == rows and reads[v] == 1:
                found.append(v)  # (rows R = A: not line-buffered, the strip loads the rows it holds)
    return found


def input_halo(g: "StripGeometry") -> tuple[int, int]:
    """Rows of the group input a strip holds above and below the A rows its step covers."""
    a, c0, r = g.rows[g.x]
    return -c0, c0 + r - a


def pooled_epilogues(ops: Sequence[Operation], canon: dict[SSAValue, SSAValue], keep: Sequence[SSAValue] = ()
                     ) -> dict[Operation, tuple[Conv2dOp, ReluOp | None]]:
    """Max-pools a strip computes before the bias and relu of the conv feeding them:
    pool -> (that conv, the relu between them or None), for a conv whose result only a
    relu reads, or only the pool, and that relu only the pool. A max-pool commutes with
    adding a per-channel constant and with relu (both monotone; exact in f32), so the bias add and the relu run on the
    pooled rows - a fraction of the conv's (a CNN stem: conv + BN + ReLU + max-pool).
    Not where the conv's or the relu's result is in `keep` (stored: it must hold its values)."""
    facts = planning_facts()
    if facts is not None and ops:  # (while planning: once per run of ops and `canon`, not per strip height)
        key = ("pooled", ops[0], len(ops), tuple(keep))
        hit = facts.get(key)
        if hit is None or hit[0] is not canon or len(hit[1]) != len(ops) or any(a is not b for a, b in zip(hit[1], ops)):
            hit = facts[key] = (canon, list(ops), _pooled_epilogues(ops, canon, keep))
        return hit[2]
    return _pooled_epilogues(ops, canon, keep)


def _pooled_epilogues(ops: Sequence[Operation], canon: dict[SSAValue, SSAValue], keep: Sequence[SSAValue]
                      ) -> dict[Operation, tuple[Conv2dOp, ReluOp | None]]:
    readers: dict[SSAValue, list[Operation]] = {}
    for op in ops:
        for o in dict.fromkeys(operands(op, canon)):
            readers.setdefault(o, []).append(op)
    out: dict[Operation, tuple[Conv2dOp, ReluOp | None]] = {}
    inside = set(ops)
    for op in ops:
        if not isinstance(op, MaxPoolOp):
            continue
        src, relu = operands(op, canon)[0].owner, None
        if isinstance(src, ReluOp) and readers.get(src.results[0]) == [op]:
            relu, src = src, operands(src, canon)[0].owner
        if (isinstance(src, Conv2dOp) and src in inside and readers.get(src.results[0]) == [relu or op]
                and (src.bias is not None or relu is not None) and src.results[0] not in keep
                and (relu is None or relu.results[0] not in keep)):
            out[op] = (src, relu)
    return out


# While `plan_strips` plans (the IR stays as it is; `group_plan.planning`): what
# `_window`, `_pads` and `_nan_padded` read off each op, each op's `operands` and a run's
# `pooled_epilogues`, computed once instead of for every strip height.


def _fact(kind: str, op: Operation, compute: Callable[[Any], Any]) -> Any:
    facts = planning_facts()
    if facts is None:
        return compute(op)
    key = (kind, op)
    if key not in facts:
        facts[key] = compute(op)
    return facts[key]


def _nan_padded(op: Operation) -> bool:
    """An average pool whose padding is left out of the divisor: it reads rows outside
    its input as NaN (`pool_ref`), and rows of its result all outside come out NaN."""
    return isinstance(op, AvgPoolOp) and _fact("nan", op, lambda op: any(op.params["pads"])
                                                and not op.count_include_pad.value.data)


def _pads(op: Conv2dOp | MaxPoolOp | AvgPoolOp | SumPoolOp) -> tuple[int, ...]:
    """A conv's or pool's pads."""
    return _fact("pads", op, lambda op: tuple(op.params["pads"]))


def _window(op: Conv2dOp | MaxPoolOp | AvgPoolOp | SumPoolOp) -> tuple[int, int, int]:
    """(stride, effective kernel, top pad) of a conv or pool along H."""
    def compute(op: Any) -> tuple[int, int, int]:
        p = op.params
        k = shape_of(op.weight)[2] if isinstance(op, Conv2dOp) else p["kernel"][0]
        return p["strides"][0], (k - 1) * p["dilations"][0] + 1, p["pads"][0]

    return _fact("window", op, compute)


@dataclass
class StripGeometry:
    """Rows of each value a strip holds: `rows[v] = (A, c0, R)` for [A*s + c0, A*s + c0 + R).
    `masked[v]`: the pad value rows outside v must read as (0.0 or -inf) when some strip
    holds such rows and a conv or pool reads them. `crop[op]`: rows a conv or pool
    skips at the top and bottom of its input's strip (held for another reader)."""

    x: SSAValue
    ops: list[Operation]
    T: int
    S: int
    rows: dict[SSAValue, tuple[int, int, int]] = field(default_factory=dict)
    masked: dict[SSAValue, float] = field(default_factory=dict)
    x_pad: float = 0.0
    crop: dict[Operation, tuple[int, int]] = field(default_factory=dict)
    x_side: set[Operation] = field(default_factory=set)  # elementwise ops re-loading x at rows it lacks
    rolled: dict[SSAValue, None] = field(default_factory=dict)  # line-buffered values, in a fixed order (see `computed`)
    # (elementwise op, inner value it reads at fewer rows than the value holds) -> the first row
    # it reads in the value's strip buffer: those rows are copied out for it (SRAM to SRAM)
    local: dict[tuple[Operation, SSAValue], int] = field(default_factory=dict)
    warm: int = 0  # strips a task runs before its first one to fill the line buffers
    # inner values each strip also stores (rows [A*s, A*s + A) of each: a block's output read after
    # the group too), in the order of the strip loop's results after the last op's
    stored: list[SSAValue] = field(default_factory=list)

    def computed(self, v: SSAValue) -> tuple[int, int, int]:
        """(A, c0, n): the rows [A*s + c0, A*s + c0 + n) strip s computes (or loads) of v:
        all it holds, or for a line-buffered value only the A rows the previous strip
        did not hold (it keeps the others, moved up)."""
        a, c0, r = self.rows[v]
        return (a, c0 + r - a, a) if v in self.rolled else (a, c0, r)

    def outside(self, v: SSAValue) -> bool:
        """Whether some strip computes rows outside v."""
        lo, hi = self.boundary(v)
        return lo > -self.warm or hi < self.S

    def boundary(self, v: SSAValue) -> tuple[int, int]:
        """(lo, hi): strips s < lo or s >= hi compute rows outside v (the others need no
        mask); strips run from -warm."""
        a, c0, r = self.computed(v)
        return max(-self.warm, -(c0 // a)), (shape_of(v)[-2] - c0 - r) // a + 1

    def mask_strips(self) -> int:
        """How many strips compute rows outside some masked value."""
        bounds = [self.boundary(v) for v in self.masked]
        if not bounds:
            return 0
        n, w = self.S + self.warm, self.warm
        lo, hi = max(b[0] for b in bounds) + w, min(b[1] for b in bounds) + w
        return min(n, lo) + max(0, n - max(hi, lo))

    def mask_rows(self, v: SSAValue) -> list[float]:
        """The mask of v over every row any strip computes, from strip -warm: 1 inside the
        tensor, else 0 (strip s's rows start at (s + warm) * A)."""
        a, c0, r = self.computed(v)
        h, first = shape_of(v)[-2], c0 - a * self.warm
        return [1.0 if 0 <= j + first < h else 0.0 for j in range(a * (self.S + self.warm - 1) + r)]


def strip_geometry(ops: Sequence[Operation], x: SSAValue, T: int,
                   canon: dict[SSAValue, SSAValue] | None = None, rolling: bool = False,
                   stored: Sequence[SSAValue] = ()) -> StripGeometry | None:
    """Rows per strip of every value of strip group `ops` (input `x`) for strips of T
    output rows, or None when the readers of a value disagree: a value holds the union of
    the rows its readers need (one step A for all); a conv or pool may read the middle of
    it (`crop`), an elementwise op may read part of an inner value (its rows are copied
    out for it, `local`), any other reader needs exactly its rows.

    `rolling` line-buffers every value whose consecutive strips overlap (it holds more
    rows R than the step A, `rolled`): a strip moves the R - A rows it shares with the
    previous strip to the top and computes (or loads) only the A new ones, so its
    producer needs its inputs for those rows only. The rows a strip holds then come
    from earlier strips, so a task first runs `warm` strips without storing them.

    `stored`: inner values each strip also stores, its rows [A*s, A*s + A) of each (they
    join the rows the value holds; the strips must cover the value's rows, each some of
    them: A*(S-1) < H <= A*S). A
    stored value is not line-buffered (a shift would move its rows before the store)."""
    canon = canon or {}
    y = ops[-1].results[0]
    S = ceil(shape_of(y)[-2] / T)
    g = StripGeometry(x, list(ops), T, S, stored=list(stored))
    needs: Needs = {}
    inner = {x} | {op.results[0] for op in ops}
    padded: dict[SSAValue, float] = {}  # values a padded (or poisoned) conv or pool reads -> pad
    poisoned: set[SSAValue] = set()  # values downstream of a pool: rows outside may hold -3.4e38
    nan: set[SSAValue] = set()  # values downstream of a padded average pool: rows outside may be NaN
    ins = {op: operands(op, canon) for op in ops}
    for op in ops:
        if isinstance(op, MaxPoolOp) or any(o in poisoned for o in ins[op]):
            poisoned.add(op.results[0])
        if _nan_padded(op) or any(o in nan for o in ins[op]):
            if not is_float(element_type(op.results[0])):
                return None  # (rows outside holding NaN cannot be quantized: an integer holds no NaN)
            nan.add(op.results[0])

    def settle(v: SSAValue) -> bool:
        return settle_rows(g, v, needs.get(v, []), nan, poisoned, padded)

    g.rows[y] = (T, 0, T)
    for op in reversed(ops):
        r = op.results[0]
        if r is not y and not settle(r):
            return None
        if rolling and r is not y and r not in g.stored and g.rows[r][2] > g.rows[r][0]:
            g.rolled[r] = None
        add_needs(g, op, ins[op], inner, needs)
    if not settle(x):
        return None
    if rolling:
        warm_up(g, ops, canon)
    for v, pad in padded.items():
        if g.outside(v):
            if pad != pad:
                return None  # (a NaN mask would not survive the IR's text form: only the input pads NaN)
            g.masked[v] = pad
    return g


Needs = dict[SSAValue, list[tuple[Operation, tuple[int, int, int]]]]
"""value -> (reader, (step, first row, rows)) for each op reading it in a strip."""


def add_needs(g: StripGeometry, op: Operation, ins: list[SSAValue], inner: set[SSAValue], needs: Needs) -> None:
    """The rows `op` reads of its operands for the rows it computes."""
    a, c0, n = g.computed(op.results[0])
    if isinstance(op, WINDOWED):
        s, k, pt = _window(op)
        needs.setdefault(ins[0], []).append((op, (a * s, c0 * s - pt, (n - 1) * s + k)))
    else:
        for o in dict.fromkeys(ins):
            if o in inner:
                needs.setdefault(o, []).append((op, (a, c0, n)))


def warm_up(g: StripGeometry, ops: Sequence[Operation], canon: dict[SSAValue, SSAValue]) -> None:
    """Line buffers: strip s holds rows of a line-buffered v computed by strips s - depth
    .. s, so a task first runs `warm` strips that store nothing."""
    x, y = g.x, ops[-1].results[0]
    if g.rows[x][2] > g.rows[x][0]:
        g.rolled[x] = None
    depth = {v: -(-(g.rows[v][2] - g.rows[v][0]) // g.rows[v][0]) if v in g.rolled else 0 for v in g.rows}
    need = {x: depth[x]}
    for op in ops:
        r = op.results[0]
        need[r] = depth[r] + max((need[o] for o in operands(op, canon) if o in need), default=0)
    g.warm = need[y]


def settle_rows(g: StripGeometry, v: SSAValue, nd: list[tuple[Operation, tuple[int, int, int]]],
                nan: set[SSAValue], poisoned: set[SSAValue], padded: dict[SSAValue, float]) -> bool:
    """The rows v holds: the union of what its readers `nd` need (one step for all);
    False when they disagree."""
    x = g.x
    if v is x:
        nd = split_x_side(g, nd)
    if len({a for _, (a, _, _) in nd}) != 1:
        return False
    a = nd[0][1][0]
    lo, hi = min(c for _, (_, c, _) in nd), max(c + r for _, (_, c, r) in nd)
    if v in g.stored:  # (the rows [A*s, A*s + A) it stores: every row in some strip, some row in every strip)
        if not a * (g.S - 1) < shape_of(v)[-2] <= a * g.S:
            return False
        lo, hi = min(lo, 0), max(hi, a)
    g.rows[v] = (a, lo, hi - lo)
    pads = reader_pads(g, v, nd, lo, hi, nan, poisoned)
    if pads is None:
        return False
    if v is x:
        g.x_pad = pad_of(x, next(iter(pads))) if pads else 0.0
    elif pads:
        padded[v] = pads.pop()  # (masked once the rows each strip computes are known)
    return True


def split_x_side(g: StripGeometry, nd: list[tuple[Operation, tuple[int, int, int]]]
                 ) -> list[tuple[Operation, tuple[int, int, int]]]:
    """An elementwise op reading the input at rows the rest do not hold (a residual)
    loads its own (`x_side`); the other readers of the input."""
    rest = [(op, n) for op, n in nd if not pointwise(op)]
    if rest and len({a for _, (a, _, _) in rest}) == 1:
        a, lo, hi = rest[0][1][0], min(c for _, (_, c, _) in rest), max(c + r for _, (_, c, r) in rest)
        g.x_side = {op for op, (b, c, r) in nd if pointwise(op)
                    and op.results[0].type == g.x.type and (b != a or c < lo or c + r > hi)}
        nd = [(op, n) for op, n in nd if op not in g.x_side]
    return nd


def reader_pads(g: StripGeometry, v: SSAValue, nd: list[tuple[Operation, tuple[int, int, int]]], lo: int, hi: int,
                nan: set[SSAValue], poisoned: set[SSAValue]) -> set[float] | None:
    """What v's rows outside the tensor must hold for its readers (crops and local
    copies recorded on the way); None when the readers cannot share v's rows."""
    pads: set[float] = set()
    for op, (_, c, r) in nd:
        if isinstance(op, WINDOWED):
            g.crop[op] = (c - lo, hi - c - r)
            ph = _pads(op)
            if (ph[0] or ph[2]) and v in nan:
                return None  # (NaN rows outside v would reach rows inside the result)
            if ph[0] or ph[2] or v in poisoned:  # (an unpadded reader reads rows outside v only
                # for rows outside its result; -3.4e38 must not reach arithmetic unmasked)
                pads.add(float("-inf") if isinstance(op, MaxPoolOp) else NAN_PAD if _nan_padded(op)
                         else float(op.zero_points[0]) if isinstance(op, Conv2dOp) else 0.0)
        elif (c, r) != (lo, hi - lo):
            if not pointwise(op):
                return None
            g.local[(op, v)] = c - lo  # (a residual reading the middle of a value a conv path widened)
    for pad, kind in ((float("-inf"), MaxPoolOp), (NAN_PAD, AvgPoolOp)):
        if pad in pads and (len(pads) > 1 or any(not isinstance(o, kind) for o, _ in nd)):
            return None  # (rows padded for a pool would poison any other reader)
    if len(pads) > 1:
        return None  # (quantized convs of different zero points: one pad each)
    return pads


def computed_shape(g: StripGeometry, v: SSAValue) -> tuple[int, ...]:
    """v's shape with H cut to the rows a strip computes of it (`StripGeometry.computed`)."""
    s = list(shape_of(v))
    s[-2] = g.computed(v)[2]
    return tuple(s)


def stored_shape(g: StripGeometry, v: SSAValue) -> tuple[int, ...]:
    """The shape of the rows a strip stores of inner value v (`StripGeometry.stored`): A of them."""
    s = list(shape_of(v))
    s[-2] = g.rows[v][0]
    return tuple(s)


def strip_shape(g: StripGeometry, v: SSAValue) -> tuple[int, ...]:
    """v's shape with H (its second last dim) cut to the rows a strip holds."""
    s = list(shape_of(v))
    s[-2] = g.rows[v][2]
    return tuple(s)


@dataclass
class StripBuffers:
    """Where each value of a strip lives: `offset[v]`, a byte offset in the strip's work
    area, or None for the input slot (the input, and elementwise results overwriting
    it); `area`: the work area's bytes; `x_viewed`: a reshape views the input slot (it
    cannot alternate between two slots); `fresh[v]`: where the op computing a
    line-buffered value writes the rows it adds (moved into v's buffer after it)."""

    offset: dict[SSAValue, int | None]
    area: int
    x_viewed: bool
    fresh: dict[SSAValue, int] = field(default_factory=dict)  # line-buffered value -> its new rows' buffer
    local: dict[tuple[Operation, SSAValue], int] = field(default_factory=dict)  # rows copied out (`local`)
    # value -> the value whose buffer it is a view of: a reshape's operand's, a concat's for the
    # values computed into its channel range, a deferred relu's operand's (`pooled_epilogues`: it
    # computes nothing before the pool); absent when it is a value of its own (in place too)
    view_of: dict[SSAValue, SSAValue] = field(default_factory=dict)


def strip_buffers(g: StripGeometry, canon: dict[SSAValue, SSAValue], arch: Arch) -> StripBuffers | None:
    """Buffers of one strip's values: an elementwise op overwrites an operand of its type
    read for the last time (no view of it still needed), a reshape views its operand,
    a concat's operands are computed into its channel ranges (each operand read by the
    concat alone); the rest first fit over lifetimes. None when a concat operand cannot
    be placed so or a channel range would not start at an `align` boundary. A
    line-buffered value (`StripGeometry.rolled`) keeps its buffer from strip to strip
    (it shares no byte) and takes no other value in place."""
    ops, x = g.ops, g.x
    ins = [operands(op, canon) for op in ops]
    last: dict[SSAValue, int] = {}
    readers: dict[SSAValue, int] = {}
    for i, os_ in enumerate(ins):
        for o in os_:
            last[o] = i
            readers[o] = readers.get(o, 0) + 1
    y = ops[-1].results[0]
    for v in (y, *g.stored):
        last[v] = len(ops)  # (stored after the last op)
    root: dict[SSAValue, SSAValue] = {x: x}
    members: dict[SSAValue, list[SSAValue]] = {x: [x]}

    def overwritable(i: int) -> SSAValue | None:
        """An operand of elementwise op i whose buffer its result may take: of its type,
        not line-buffered, read whole, for the last time (every value sharing its buffer too)."""
        op, r = ops[i], ops[i].results[0]
        return next((o for o in ins[i] if o in root and o.type == r.type and not (o is x and op in g.x_side)
                     and o not in g.rolled and (op, o) not in g.local
                     and all(last[m] <= i for m in members[root[o]])), None)

    for i, op in enumerate(ops):
        r = op.results[0]
        into = None
        if isinstance(op, ReshapeOp):
            into = ins[i][0]
        elif pointwise(op) and r not in g.rolled:
            into = overwritable(i)
        root[r] = root[into] if into is not None else r
        members.setdefault(root[r], []).append(r)
    slices = concat_slices(g, ins, root, members, readers, arch)
    if slices is None:
        return None
    index: dict[SSAValue, int] = {op.results[0]: i for i, op in enumerate(ops)}
    first = {r: index.get(r, -1) for r in members}
    span = {r: max(last[m] for m in ms) for r, ms in members.items()}
    for c, (cat, _) in slices.items():  # a concat's buffer lives from its first operand on
        first[cat] = min(first[cat], first[c])
        span[cat] = max(span[cat], span[c])
    for r in g.rolled:  # (held from strip to strip)
        first[r], span[r] = -1, len(ops) + 1
    fresh_in: dict[SSAValue, SSAValue] = {}  # an elementwise op's new rows overwrite an operand read last
    for r in g.rolled:  # (a relu the pool-first order defers must: its new rows are then its operand's)
        i = index.get(r)
        o = overwritable(i) if i is not None and pointwise(ops[i]) else None
        if o is not None and root[o] is not x and root[o] not in slices:
            fresh_in[r] = root[o]
    deferred: set[SSAValue] = {relu.results[0] for _, relu in pooled_epilogues(ops, canon, g.stored).values()
                               if relu is not None}
    if any(r in g.rolled and r not in fresh_in for r in deferred):
        return None  # (a deferred relu computes nothing: its new rows must be its operand's)
    bufs: list[tuple[object, int, int, int]] = [(r, prod(strip_shape(g, r)) * elem_bytes(r), first[r], span[r])
                                                for r in members if r is not x and r not in slices]
    bufs += [(("fresh", r), prod(computed_shape(g, r)) * elem_bytes(r), index[r], index[r])
             for r in g.rolled if r is not x and r not in fresh_in]
    bufs += [(("local", op, v), prod(computed_shape(g, op.results[0])) * elem_bytes(op.results[0]), index[op.results[0]],
              index[op.results[0]]) for op, v in g.local]
    fit = fit_lifetimes(bufs, arch.align, arch.sram_bytes)
    if fit is None:
        return None
    base, area = fit
    offset = {v: buffer_offset(root[v], x, slices, base) for v in root}
    viewed = any(isinstance(op, ReshapeOp) and root[ins[i][0]] is x for i, op in enumerate(ops))
    fresh = {r: base[fresh_in[r]] if r in fresh_in else base[("fresh", r)] for r in g.rolled if r is not x}
    return StripBuffers(offset, area, viewed, fresh, {key: base[("local", *key)] for key in g.local},
                        views_of(ops, ins, root, slices, deferred))


def buffer_offset(c: SSAValue, x: SSAValue, slices: dict[SSAValue, tuple[SSAValue, int]],
                  base: dict) -> int | None:
    """Work-area offset of buffer `c` (None: the input slot); a concat operand's is in its concat's."""
    if c is x:
        return None
    if c in slices:
        cat, off = slices[c]
        at = buffer_offset(cat, x, slices, base)
        assert at is not None  # (a concat is computed, never the input slot)
        return at + off
    return base[c]


def concat_slices(g: StripGeometry, ins: list[list[SSAValue]], root: dict[SSAValue, SSAValue],
                  members: dict[SSAValue, list[SSAValue]], readers: dict[SSAValue, int], arch: Arch
                  ) -> dict[SSAValue, tuple[SSAValue, int]] | None:
    """Buffer (class root) -> (concat, byte offset) for each concat operand computed into
    its channel range; None when one cannot be (read elsewhere, shared, misaligned)."""
    slices: dict[SSAValue, tuple[SSAValue, int]] = {}
    for i, op in enumerate(g.ops):
        if not isinstance(op, ConcatOp):
            continue
        off = 0
        for o in ins[i]:
            c = root[o]
            if (readers[o] != 1 or c is g.x or c in slices or isinstance(c.owner, ConcatOp)
                    or members[c][-1] is not o or any(m.type != o.type for m in members[c])):
                return None
            if off % arch.align:
                return None
            slices[c] = (op.results[0], off)
            off += prod(strip_shape(g, o)) * elem_bytes(o)
    return slices


def views_of(ops: list[Operation], ins: list[list[SSAValue]], root: dict[SSAValue, SSAValue],
             slices: dict[SSAValue, tuple[SSAValue, int]], deferred: set[SSAValue]) -> dict[SSAValue, SSAValue]:
    """`StripBuffers.view_of`: a reshape's, a concat operand's and a deferred relu's base."""
    view_of: dict[SSAValue, SSAValue] = {}
    for i, op in enumerate(ops):
        r = op.results[0]
        if root[r] in slices:
            view_of[r] = slices[root[r]][0]
        elif isinstance(op, ReshapeOp) or r in deferred:  # (a deferred relu computes nothing before the pool)
            view_of[r] = view_of.get(ins[i][0], ins[i][0])
    return view_of


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
    buffers: StripBuffers
    prefetch: bool = False  # strip s+1's loads go to a second set of buffers while s computes
    masking: int = 0  # compute cycles of the masks, in the strips at a tensor's edge only
    shifts: list[int] = field(default_factory=list)  # line buffers: bytes each moves up per strip
    inserts: list[int] = field(default_factory=list)  # bytes of the new rows moved into each per strip

    @property
    def rolling(self) -> bool:
        return bool(self.geometry.rolled)

    def dram_bytes_on(self, parts: int) -> int:
        """DRAM bytes with the strips split over `parts` tasks: each loads the constants
        and runs its own warm-up strips."""
        g = self.geometry
        return parts * (sum(self.once_loads) + g.warm * sum(self.strip_loads)) + g.S * (sum(self.strip_loads)
                                                                                     + self.store)

    def cycles_on(self, parts: int, arch: Arch) -> int:
        """Predicted span with the strips split over `parts` cores sharing `dram_bw`
        (each part loads the constants), plus the two cross-core events of a split."""
        bw = max(1, arch.dram_bw // parts)
        once = _loads(self.once_loads, arch, bw)
        load = _loads(self.strip_loads, arch, bw)
        store = arch.dma_latency + ceil(self.store / bw)
        n = ceil(self.geometry.S / parts)
        steps = n + self.geometry.warm  # (warm-up strips store nothing)
        edge = min(n, self.geometry.mask_strips()) * self.masking  # (the edge strips are in the end parts)
        # line buffers: SRAM-to-SRAM moves, at the full rate without DRAM bandwidth; the new rows' moves
        # are waited for, the shifts run while the rest of the strip computes
        moves = sum(arch.dma_latency + ceil(b / arch.dram_bw) for b in self.inserts)
        moves += max(0, _loads(self.shifts, arch, arch.dram_bw) - self.compute)
        if self.prefetch:  # the first strip's loads are exposed, then they hide behind compute
            # (a line buffer's new rows move through a DMA channel, which the next strip's loads hold)
            held = channel_free(self.strip_loads, arch, bw) if self.inserts else 0
            body = load + steps * max(load, stall_for(self.strip_loads, arch, bw) + self.compute + moves + held) \
                + n * store
        elif steps == 1:  # one strip per core: npu-dma-order issues the constants in order of first use
            # behind the strip's input, so compute starts once those and the first constant land
            first = _loads(self.strip_loads + self.once_loads[:1], arch, bw)
            body = max(_loads(self.once_loads + self.strip_loads, arch, bw), first + self.compute + moves) + store
            once = 0
        else:
            body = steps * (load + self.compute + moves) + n * store
        return once + body + edge + (2 * arch.sync_latency if parts > 1 else 0)


def _loads(sizes: list[int], arch: Arch, bw: int) -> int:
    """Cycles to land loads issued together on the core's channels."""
    if not sizes:
        return 0
    return max(max(arch.dma_latency + ceil(b / bw) for b in sizes), ceil(sum(sizes) / bw))


def plan_strip_height(ops: Sequence[Operation], x: SSAValue, T: int, arch: Arch,
                      canon: dict[SSAValue, SSAValue] | None = None, prefetch: bool = False,
                      rolling: bool = False, stored: Sequence[SSAValue] = ()) -> StripPlan | None:
    """The plan for strips of T output rows (with the loads of the next strip issued
    before a strip computes when `prefetch`; with line buffers when `rolling`), or None
    when its buffers do not fit SRAM (or the readers of a value disagree on its rows, see
    `strip_geometry`; `stored`: inner values the strips store too). It chooses nothing:
    bufferization lays out a group's recorded decisions (`#npu_tile.strip`) with it."""
    return _plans_for_height(ops, x, T, arch, canon or {}, (prefetch,), rolling, stored)[prefetch]


def line_bufferable(ops: Sequence[Operation]) -> bool:
    """Whether a strip group may line-buffer: no concat computed in channel ranges and no
    reshape viewing a buffer (their buffers alias others)."""
    return not any(isinstance(op, (ConcatOp, ReshapeOp)) for op in ops)


def _plans_for_height(ops: Sequence[Operation], x: SSAValue, T: int, arch: Arch, canon: dict[SSAValue, SSAValue],
                      modes: Sequence[bool], rolling: bool = False, stored: Sequence[SSAValue] = ()
                      ) -> dict[bool, StripPlan | None]:
    """The plans for strips of T rows with and without prefetch (`modes`): the
    geometry, buffers, loads and compute do not depend on it, only the SRAM the
    second slot takes and the cost. A line-buffered input (`rolling`) takes one slot."""
    none: dict[bool, StripPlan | None] = {m: None for m in modes}
    if rolling and not line_bufferable(ops):
        return none
    g = strip_geometry(ops, x, T, canon, rolling, stored)
    if g is None or (rolling and not g.rolled):
        return none
    if any(not is_float(element_type(v)) and (g.x_pad if v is x else g.masked.get(v, 0.0)) != 0.0
           for v in g.rolled):
        return none  # (a line buffer's first shift pads zeros, not an integer's zero point)
    bufs = strip_buffers(g, canon, arch)
    if bufs is None:
        return none
    once: list[SSAValue] = []
    side: list[int] = []  # bytes of each side input's rows
    for op in ops:
        sides = side_inputs(op, g, canon)
        for i, o in enumerate(operands(op, canon)):
            if i in sides:
                side.append(prod(side_shape(g, op, o)) * elem_bytes(o))
            elif o not in g.rows and o not in once:
                once.append(o)
    sizes = [nbytes(o) for o in once]
    # per slot (two with prefetch): what is loaded per strip - the input, side inputs, masks
    loads = [prod(computed_shape(g, x)) * elem_bytes(x)] + side + [
        g.computed(v)[2] * elem_bytes(v) for v, pad in g.masked.items() for _ in mask_kinds(v, pad)]
    compute = sum(op_cycles(op, arch, computed_shape(g, op.results[0])) or 0
                  for op in ops if not isinstance(op, ConcatOp))  # (a concat's operands are computed in place)
    for pool, (conv, relu) in pooled_epilogues(ops, canon, g.stored).items():  # bias and relu on the pooled rows
        moved = (conv.bias is not None) + (relu is not None)
        compute += moved * (arch.vector_cycles(prod(computed_shape(g, pool.results[0])), dtype=value_type(pool.results[0]))
                            - arch.vector_cycles(prod(computed_shape(g, conv.results[0])), dtype=value_type(conv.results[0])))
    masking = sum(arch.vector_cycles(prod(computed_shape(g, v)), dtype=value_type(v)) * len(mask_kinds(v, pad))
                  for v, pad in g.masked.items())
    store = prod(strip_shape(g, ops[-1].results[0])) * elem_bytes(ops[-1].results[0]) + sum(
        prod(stored_shape(g, v)) * elem_bytes(v) for v in g.stored)
    fixed = sum(align_up(b, arch.align) for b in sizes) + bufs.area
    # per slot (two with prefetch): the input's rows held (line-buffered: one slot), side inputs, masks
    slot = align_up(prod(strip_shape(g, x)) * elem_bytes(x), arch.align) + sum(align_up(b, arch.align) for b in loads[1:])
    row_bytes = {v: prod(strip_shape(g, v)) * elem_bytes(v) // g.rows[v][2] for v in g.rolled}
    shifts = [row_bytes[v] * (g.rows[v][2] - g.rows[v][0]) for v in g.rolled]
    inserts = [row_bytes[v] * g.rows[v][0] for v in g.rolled if v is not x]
    inserts += [prod(computed_shape(g, op.results[0])) * elem_bytes(op.results[0])
                for op, _ in g.local]  # (copied like new rows)
    plans = dict(none)
    for prefetch in modes:
        sram = fixed + (2 if prefetch else 1) * slot
        if sram <= arch.sram_bytes and not (prefetch and (bufs.x_viewed or x in g.rolled)):
            plans[prefetch] = StripPlan(g, once, sram, sizes, loads, compute, store, bufs,
                                        prefetch=prefetch, masking=masking, shifts=shifts, inserts=inserts)
    return plans


StripMemo = dict[tuple, tuple[int, bool, bool, int, int] | None]
"""`plan_strips` decisions by `run_signature`: (rows per strip, prefetch, line buffers,
parts, cycles), or None for no plan."""


def plan_strips(ops: Sequence[Operation], arch: Arch, canon: dict[SSAValue, SSAValue] | None = None,
                max_strips: int = 64, line_buffers: str = "auto", memo: StripMemo | None = None,
                stored: Sequence[SSAValue] = ()) -> tuple[StripPlan, int, int] | None:
    """The cheapest strip plan of `ops` that fits SRAM, with its strips split over the
    cores where that pays (`best_split`): (plan, parts, predicted cycles on them), or
    None (not a strip group, a single strip would be the whole tensor, or nothing fits).
    `line_buffers` (LINE_BUFFER_MODES): "always" prefers any plan with line buffers,
    "never" tries none. With a `memo`, a run whose signature was planned before only
    lays out the decision taken then (a network's repeated blocks). `stored`: inner
    values the strips store besides the last op's result (`StripGeometry.stored`)."""
    with planning():
        return _plan_strips(ops, arch, canon or {}, max_strips, line_buffers, memo, list(stored))


def _plan_strips(ops: Sequence[Operation], arch: Arch, canon: dict[SSAValue, SSAValue], max_strips: int,
                 line_buffers: str, memo: StripMemo | None, stored: list[SSAValue]
                 ) -> tuple[StripPlan, int, int] | None:
    x = strip_input(ops, canon)
    if x is None or constants_floor(ops, canon, arch) > arch.sram_bytes:
        return None
    if memo is None:
        return search_strips(ops, x, arch, canon, max_strips, line_buffers, stored)
    where: dict[SSAValue, int] = {op.results[0]: i for i, op in enumerate(ops)}
    key = (run_signature(ops, canon), tuple(where[v] for v in stored), arch, max_strips, line_buffers)
    if key in memo:
        hit = memo[key]
        if hit is None:
            return None
        rows, prefetch, rolling, parts, cycles = hit
        plan = _plans_for_height(ops, x, rows, arch, canon, (prefetch,), rolling, stored)[prefetch]
        if plan is not None:  # (always: the same structure gives the same plans)
            return plan, parts, cycles
    found = search_strips(ops, x, arch, canon, max_strips, line_buffers, stored)
    memo[key] = None if found is None else (found[0].geometry.T, found[0].prefetch, found[0].rolling,
                                            found[1], found[2])
    return found


def constants_floor(ops: Sequence[Operation], canon: dict[SSAValue, SSAValue], arch: Arch) -> int:
    """SRAM bytes every strip plan of `ops` needs whatever its height: the operands a conv,
    quantization op or table lookup reads besides its input (weights, biases, parameters,
    tables), which a task loads once and keeps (`StripPlan.once`). A run whose floor
    exceeds `sram_bytes` (a ResNet's late 1x1 convs in f32) is not searched."""
    once = {o for op in ops if isinstance(op, Conv2dOp | QuantOp | TableOp) and not pointwise(op)
            for o in operands(op, canon)[1:]}  # (a requantizing add's second operand is data: a side input)
    return sum(align_up(nbytes(o), arch.align) for o in once)


def search_strips(ops: Sequence[Operation], x: SSAValue, arch: Arch, canon: dict[SSAValue, SSAValue],
                  max_strips: int, line_buffers: str, stored: Sequence[SSAValue] = ()
                  ) -> tuple[StripPlan, int, int] | None:
    """`plan_strips`' search over strip heights, prefetch and line buffers."""
    h = shape_of(ops[-1].results[0])[-2]
    best: tuple[tuple[bool, int], StripPlan, int, int] | None = None  # (rank, plan, parts, cycles)
    for T in sorted({ceil(h / s) for s in range(2, min(h, max_strips) + 1)}, reverse=True):
        plans = [*_plans_for_height(ops, x, T, arch, canon, (False, True), stored=stored).values()]
        if line_buffers != "never":
            plans += _plans_for_height(ops, x, T, arch, canon, (False, True), True, stored).values()
        for p in plans:
            if p is None:
                continue
            cycles_on = p.cycles_on
            parts, cycles = best_split(lambda k: cycles_on(k, arch), min(arch.cores, p.geometry.S))
            rank = (line_buffers == "always" and not p.rolling, cycles)
            if best is None or rank < best[0]:
                best = (rank, p, parts, cycles)
    return None if best is None else best[1:]


def run_signature(ops: Sequence[Operation], canon: dict[SSAValue, SSAValue]) -> tuple:
    """What a strip plan of `ops` depends on: each op's name, attributes, properties and
    result types, and its operands (renamed by `canon`) numbered by first appearance -
    results of the run and values from outside alike - with their types. Runs with equal
    signatures (ResNet's repeated blocks) have the same plan up to that renaming."""
    ids: dict[SSAValue, int] = {}
    sig = []
    for op in ops:
        ins = []
        for o in operands(op, canon):
            ins.append((ids.setdefault(o, len(ids)), o.type))
        sig.append((op.name, tuple(sorted(op.attributes.items())), tuple(sorted(op.properties.items())),
                    tuple(ins), tuple(r.type for r in op.results)))
        for r in op.results:
            ids[r] = len(ids)
    return tuple(sig)


def recorded_plan(ops: Sequence[Operation], rec: Attribute | None, arch: Arch, stored: Sequence[SSAValue] = ()
                  ) -> StripPlan:
    """The layout of strip group `ops` for the decisions its `#npu_tile.strip` plan `rec`
    records (rows per strip, prefetch, line buffers): the rows each value holds per strip
    and where its buffers go (`stored`: the inner values it stores besides the last op's
    result). A TilingError when they give none, or not the one recorded."""
    if not isinstance(rec, StripPlanAttr):
        raise TilingError("a strip group needs its #npu_tile.strip plan (npu-layer-group records it)")
    x = strip_input(ops)
    if x is None:
        raise TilingError("a strip group must be conv, pool, elementwise, channel-shuffle and channel-concat "
                          "ops over one input")
    rows, prefetch, rolling = rec.rows.data, rec.is_prefetched, rec.is_line_buffered
    plan = plan_strip_height(ops, x, rows, arch, prefetch=prefetch, rolling=rolling, stored=stored)
    if plan is None and rolling:
        if not line_bufferable(ops):
            raise TilingError("line_buffer: a strip group with a concat or a reshape cannot line-buffer")
        g = strip_geometry(ops, x, rows, rolling=True, stored=stored)
        if g is not None and not g.rolled:
            raise TilingError(f"line_buffer: no value of strips of {rows} rows shares rows with the next strip")
    if plan is None:
        if prefetch and plan_strip_height(ops, x, rows, arch, stored=stored) is not None:
            raise TilingError("a reshape views the strip input: its buffer cannot alternate")
        if stored and strip_geometry(ops, x, rows, stored=stored) is None and strip_geometry(ops, x, rows) is not None:
            raise TilingError(f"strips of {rows} rows do not cover every row of the inner values it stores, "
                              "each strip some of them")
        raise TilingError(f"its plan's strips of {rows} rows do not fit sram_bytes={arch.sram_bytes}")
    g = plan.geometry
    got = {"strips": g.S, "halo": list(input_halo(g)), "sram": plan.sram_bytes, "warm": g.warm}
    want = {"strips": rec.strips.data, "halo": list(ints(rec.halo, ())), "sram": rec.sram.data, "warm": rec.warm.data}
    bad = [f"{key} = {want[key]} (its strips give {got[key]})" for key in got if got[key] != want[key]]
    if bad:
        raise TilingError(f"its plan {rec} does not match its ops: {', '.join(bad)}")
    return plan

"""Layer groups: several consecutive kernels run as one task whose tensors stay
resident in one core's SRAM (plain algorithms, no IR rewriting).

A group holds graph ops computed on *whole* tensors: each op becomes one
compute op (cube or vector) on SRAM buffers; only the group's inputs (weights
and activations from outside) are loaded from DRAM and only its outputs
stored. `plan_group` decides, for an ordered list of graph ops, the SRAM
offset of every buffer and a straight-line schedule of actions (loads, computes,
stores). `GroupPlan.cycles` evaluates that schedule with the simulator's timing
rules, which is the cost model the layer-group pass ranks groups with and
bufferization emits.

Algorithm
---------
Offsets: first fit over lifetimes within the group, reshapes aliasing their input.

Actions:
- loads are issued in order of first use: before op i, up to `dma_channels`
  loads beyond the last one op i needs (issuing load k waits for a free
  channel, i.e. for load k - dma_channels, which op i needs anyway);
- op i waits for its loads and computes; a result that leaves the group is
  stored at once.

Timing rules: serial compute, DMA channels with `dma_latency` + bytes over
`dram_bw`, issue stalls while every channel is busy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import ceil, prod
from typing import Any

from xdsl.ir import Attribute, Operation, SSAValue

from lowering.tile.tile_search import align_up, first_fit
from npu_dialects.arch import Arch
from npu_dialects.compute import bias_shape
from npu_dialects.dtypes import elem_bytes, element_type, nbytes
from npu_dialects.graph import (
    AddOp,
    Conv2dOp,
    ElementwiseOp,
    GemmOp,
    GraphOp,
    MatMulOp,
    RequantizeOp,
    ReshapeOp,
    SliceOp,
    StructuredOp,
    ints,
    shape_of,
)

UNSAFE_VIEW_REUSE = False
"""Test-only: judge an in-place operand by its own last read alone, ignoring the other
values its buffer holds (a reshape's base read later): the bug the sanitizer's tests
re-enable to prove they catch it."""


_FACTS: dict[object, Any] | None = None
"""While a search plans many runs of the same ops (`planning`; the IR stays as it is):
facts read off ops and values once. Here each op's view facts and each value's bytes
by `id` -> (the object, its facts): an int key hashes without xDSL's `__hash__`, and
holding the object keeps its id unique; `strip_plan` keeps its own under tuple keys."""


@contextmanager
def planning() -> Iterator[None]:
    """Keep `_FACTS` while the block plans (nested uses share the outer one's)."""
    global _FACTS
    outer = _FACTS
    if outer is None:
        _FACTS = {}
    try:
        yield
    finally:
        _FACTS = outer


def planning_facts() -> dict[object, Any] | None:
    """The facts kept while `planning`, else None."""
    return _FACTS


def _facts(op: Operation) -> tuple:
    """(op, its `contiguous_slice`, whether `is_view`), once per op while `planning`."""
    facts = _FACTS
    hit = facts.get(id(op)) if facts is not None else None
    if hit is None:
        sl = _contiguous_slice(op)
        hit = (op, sl, isinstance(op, ReshapeOp) or sl is not None)
        if facts is not None:
            facts[id(op)] = hit
    return hit


def value_bytes(v: SSAValue) -> int:
    """`nbytes` of a planned value, once per value while `planning`."""
    facts = _FACTS
    if facts is None:
        return nbytes(v)
    hit = facts.get(id(v))
    if hit is None:
        hit = facts[id(v)] = (v, nbytes(v))
    return hit[1]


def contiguous_slice(op: Operation) -> int | None:
    """Start element of a step-1 slice of a 1-D tensor (a byte range of its buffer: an
    alias in a group, how packed weights are unpacked), else None."""
    return _facts(op)[1]


def _contiguous_slice(op: Operation) -> int | None:
    if not isinstance(op, SliceOp) or len(shape_of(op.input)) != 1:
        return None
    starts, steps = ints(op.starts, ()), ints(op.steps, ())
    return starts[0] if steps == (1,) else None


def op_cycles(op: Operation, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
    """Cycles of one graph op computed whole on one core (the op's own `cycles`), or on
    the part of its result of shape `out_shape` (a strip); 0 for an alias of a buffer
    (a reshape, a contiguous 1-D slice); None if a group cannot hold it. Once per op,
    shape and arch while `planning` (a strip search prices each op at every height)."""
    facts = _FACTS
    if facts is None:
        return _op_cycles(op, arch, out_shape)
    key = (id(op), 2, None if out_shape is None else tuple(out_shape))
    hit = facts.get(key)
    if hit is None or hit[1] is not arch:
        hit = facts[key] = (op, arch, _op_cycles(op, arch, out_shape))
    return hit[2]


def _op_cycles(op: Operation, arch: Arch, out_shape: Sequence[int] | None) -> int | None:
    if len(op.results) != 1 or not isinstance(op, GraphOp):
        return None
    if contiguous_slice(op) is not None:
        return 0
    if isinstance(op, GemmOp) and (op.params["alpha"] != 1.0 or op.params["beta"] != 1.0):
        return None
    if isinstance(op, RequantizeOp) and isinstance(op.input.owner, Conv2dOp | MatMulOp | GemmOp):  # (`cube_output`)
        return RequantizeOp.after_product_cycles(arch, prod(out_shape if out_shape is not None else shape_of(op.result)))
    if arch.bias_unit == "cube" and group_bias_add(op):  # (`EltwiseOp.cube_output`)
        return arch.cube_output_cycles(prod(out_shape if out_shape is not None else shape_of(op.results[0])))
    return op.cycles(arch, out_shape)


def group_bias_add(op: Operation) -> bool:
    """Whether `op` adds a bias varying along one axis at most to a cube product's result
    that nothing else reads, as `npu-bufferize` then runs it in place on the accumulator
    (`compute_patterns.bias_add`)."""
    if not isinstance(op, AddOp) or len(op.operands) != 2:
        return False
    out = shape_of(op.results[0])
    for acc, bias in (op.operands, op.operands[::-1]):
        if isinstance(acc.owner, Conv2dOp | MatMulOp | GemmOp) and acc.has_one_use() and \
                tuple(shape_of(acc)) == tuple(out) and bias_shape(shape_of(bias), out):
            return True
    return False


def scratch_bytes(op: Operation, arch: Arch) -> int:
    """SRAM a structured op holds while it computes, besides its operands and result
    (attention's scores); a group reserves it for that op's position."""
    facts = _FACTS
    if facts is None:
        return _scratch_bytes(op, arch)
    hit = facts.get((id(op), 1))
    if hit is None or hit[1] is not arch:  # (one arch per entry: a batch split plans on another)
        hit = facts[(id(op), 1)] = (op, arch, _scratch_bytes(op, arch))
    return hit[2]


def _scratch_bytes(op: Operation, arch: Arch) -> int:
    if not isinstance(op, StructuredOp):
        return 0
    ins, out = type(op).canonical_shapes(dict(op.attributes), [shape_of(v) for v in op.operands],
                                         shape_of(op.results[0]))
    return type(op).tile_scratch_bytes_of(dict(op.attributes), arch, ins, out)


@dataclass
class GroupPlan:
    """Buffers and schedule of one layer group.

    `loads`: the DMA loads in order of first use, each a list of the external inputs
    it brings (several when weights are packed into one transfer); `outputs`: values
    stored to DRAM; `offset[v]`: SRAM byte offset of the buffer holding v (aliases
    share); `actions`: ("load", j) | ("wait", j) | ("compute", i) | ("store", v)."""

    ops: list[Operation]
    loads: list[list[SSAValue]]
    outputs: list[SSAValue]
    offset: dict[SSAValue, int]
    sram_bytes: int
    actions: list[tuple]
    op_cost: list[int]
    cycles: int = 0
    dram_bytes: int = 0
    root: dict[SSAValue, SSAValue] = field(default_factory=dict)
    pack_offset: dict[SSAValue, int] = field(default_factory=dict)  # member -> byte offset in its load
    pack_choice: bool = False  # packing with `pack_overflow` would differ

    def load_bytes(self, j: int) -> int:
        members = self.loads[j]
        if len(members) == 1:
            return value_bytes(members[0])
        return max(self.pack_offset[m] + value_bytes(m) for m in members)


def pack_chunk_bytes(arch: Arch) -> int:
    """Weights are packed into one DMA up to this many bytes: a transfer as long as
    the descriptor latency it pays (shorter ones are latency bound, longer ones
    would delay the first op that needs any of them)."""
    return arch.dma_latency * arch.dram_bw


def plan_group(ops: Sequence[Operation], outputs: Sequence[SSAValue], arch: Arch,
               costs: Sequence[int] | None = None,
               canon: dict[SSAValue, SSAValue] | None = None,
               packable: set[SSAValue] | frozenset = frozenset(),
               pack_overflow: bool = False, pack_bytes: int | None = None) -> GroupPlan | None:
    """Plan `ops` (in order) as one group storing `outputs`; None when some op cannot
    be in a group or the buffers do not fit `sram_bytes`. `canon` renames operands
    (planning a run of kernels without merging their bodies first); inputs in
    `packable` (weights only the group reads) are packed, in order of first use, into
    transfers of up to `pack_chunk_bytes` (npu-layer-group then packs them in DRAM);
    with `pack_overflow` a pack takes weights until it reaches that size instead
    (fewer, larger transfers: the layer-group pass keeps the cheaper plan). `pack_bytes`
    overrides `pack_chunk_bytes`."""
    ops = list(ops)
    canon = canon or {}
    operands = [[canon.get(v, v) for v in o.operands] for o in ops]
    if costs is None:
        cycles = [op_cycles(o, arch) for o in ops]
        costs = [c for c in cycles if c is not None]
        if len(costs) != len(cycles):
            return None
    life = Lifetimes(ops, operands, outputs)
    loads, pack_offset, pack_choice = pack_loads(life, packable, arch, pack_overflow, pack_bytes)
    actions, load_start = group_actions(ops, operands, life, loads, outputs, arch)
    # buffers: one per load and per computed value; first fit over lifetimes
    bufs: list[tuple[object, int, int, int]] = []  # (key, bytes, first, last)
    for j, unit in enumerate(loads):
        size = sum(align_up(value_bytes(m), arch.align) for m in unit) if len(unit) > 1 else value_bytes(unit[0])
        bufs.append((j, size, load_start[j], max(life.last_use[m] for m in unit)))
    for v, first in life.start.items():
        bufs.append((v, value_bytes(v), first, life.last_use[v]))
    bufs += [(("scratch", i), n, life.pos[i], life.pos[i]) for i, o in enumerate(ops) if (n := scratch_bytes(o, arch))]
    fit = fit_lifetimes(bufs, arch.align, arch.sram_bytes)
    if fit is None:
        return None
    base, peak = fit
    offset: dict[SSAValue, int] = {}
    for j, unit in enumerate(loads):
        for m in unit:
            offset[m] = base[j] + pack_offset.get(m, 0)
    for v in life.start:
        offset[v] = base[v]
    for v, r in life.root.items():
        offset[v] = offset[r] + life.alias[v]
    plan = GroupPlan(ops, loads, list(outputs), offset, peak, actions, list(costs), root=life.root,
                     pack_offset=pack_offset, pack_choice=pack_choice)
    plan.dram_bytes = sum(plan.load_bytes(j) for j in range(len(loads))) + sum(value_bytes(v) for v in outputs)
    plan.cycles = schedule_cycles(plan, arch)
    return plan


def group_schedule(ops: Sequence[Operation], outputs: Sequence[SSAValue], arch: Arch
                   ) -> tuple[list[list[SSAValue]], list[tuple]]:
    """The loads and actions of a formed group's body (packed weights are one input by
    then): what `plan_group` schedules, without placing buffers (its plan's offsets are
    recorded on the kernel, `#npu_tile.group`)."""
    ops = list(ops)
    operands = [list(o.operands) for o in ops]
    life = Lifetimes(ops, operands, outputs)
    loads, _, _ = pack_loads(life, frozenset(), arch, False, None)
    return loads, group_actions(ops, operands, life, loads, outputs, arch)[0]


def in_place_ops(plan: GroupPlan) -> list[int]:
    """Positions of the ops whose result overwrites an operand's buffer (SRAM in place)."""
    return [i for i, o in enumerate(plan.ops) if not is_view(o) and plan.root.get(o.results[0]) is not o.results[0]]


class Lifetimes:
    """The group's values: external inputs in order of first use, the buffer (`root`)
    each value lives in and its byte offset there (`alias`: reshapes and 1-D slices
    alias their input, an elementwise result may take a dying operand's buffer), each
    buffer's first (`start`) and last (`last_use`) position and the values it holds
    (`members`). Positions count the ops that compute (views take the position of the
    next one), so a run planned before its packed weights are unpacked by views plans
    the same afterwards."""

    def __init__(self, ops: list[Operation], operands: list[list[SSAValue]], outputs: Sequence[SSAValue]) -> None:
        self.inputs: list[SSAValue] = []
        self.root: dict[SSAValue, SSAValue] = {}
        self.alias: dict[SSAValue, int] = {}
        self.last_use: dict[SSAValue, int] = {}
        self.start: dict[SSAValue, int] = {}
        self.members: dict[SSAValue, list[SSAValue]] = {}  # buffer -> every value it holds
        self.first_real: dict[SSAValue, tuple[int, int]] = {}  # input -> (op, operand) of its first computing reader
        self.n_ops = len(ops)
        final_use: dict[SSAValue, int] = {}  # last op reading each value directly
        self.pos: list[int] = []
        views = 0
        for i, o in enumerate(ops):
            for v in operands[i]:
                final_use[v] = i
            self.pos.append(i - views)
            views += is_view(o)
        defined: set[SSAValue] = {r for o in ops for r in o.results}
        out = set(outputs)
        for i, o in enumerate(ops):
            self.visit(i, o, operands[i], defined, final_use, out)
        end = len(ops) - views
        for v in outputs:
            self.last_use[self.root[v]] = end  # kept until the task drains its stores

    def visit(self, i: int, o: Operation, operands: list[SSAValue], defined: set[SSAValue],
              final_use: dict[SSAValue, int], out: set[SSAValue]) -> None:
        root, pos = self.root, self.pos
        view = is_view(o)
        for k, v in enumerate(operands):
            if v not in defined and v not in root:
                root[v], self.alias[v], self.members[v] = v, 0, [v]
                self.inputs.append(v)
            self.last_use[root[v]] = pos[i]
            if not view and root[v] not in defined:
                self.first_real.setdefault(root[v], (i, k))
        r = o.results[0]
        sl = contiguous_slice(o)
        dead = in_place_operand(o, operands, i, root, self.alias, self.start, final_use, self.members, out)
        if view:
            root[r] = root[operands[0]]
            self.alias[r] = self.alias[operands[0]] + (sl or 0) * elem_bytes(operands[0])
        elif dead is not None:  # an elementwise op overwrites a buffer that dies here
            root[r], self.alias[r] = root[dead], 0
        else:
            root[r], self.alias[r] = r, 0
            self.start[r] = pos[i]
            self.members[r] = []
        self.members[root[r]].append(r)
        self.last_use.setdefault(root[r], pos[i])


def pack_loads(life: Lifetimes, packable: set[SSAValue] | frozenset, arch: Arch, pack_overflow: bool,
               pack_bytes: int | None) -> tuple[list[list[SSAValue]], dict[SSAValue, int], bool]:
    """DMA loads in order of first use: one per input, except packable weights that share
    transfers. A pack holds one element type (it is one tensor in DRAM), so weights fill
    one open pack per element type: a quantized layer's i8 weights, f32 requantization
    scales and i32 biases, read in turn, make three packs, not one load each. Returns the
    loads, each packed weight's offset in its pack, and whether the two packing policies
    differ (`pack_choice`)."""
    loads: list[list[SSAValue]] = []
    pack_offset: dict[SSAValue, int] = {}
    open_packs: dict[Attribute, tuple[list[SSAValue], int]] = {}  # element type -> (its open pack, bytes)
    pack_choice = False
    limit = pack_bytes or pack_chunk_bytes(arch)
    for v in life.inputs:
        if v not in packable:
            loads.append([v])
            continue
        t = element_type(v)
        chunk, chunk_bytes = open_packs.get(t, (None, 0))
        if chunk is not None and chunk_bytes < limit < chunk_bytes + value_bytes(v):
            pack_choice = True  # the two policies differ here
        if chunk is None or (chunk_bytes >= limit if pack_overflow else chunk_bytes + value_bytes(v) > limit):
            chunk, chunk_bytes = [], 0  # (a weight larger than a pack travels apart)
            loads.append(chunk)
        chunk.append(v)
        pack_offset[v] = chunk_bytes
        open_packs[t] = (chunk, chunk_bytes + align_up(value_bytes(v), arch.align))
    loads.sort(key=lambda unit: life.first_real.get(unit[0], (life.n_ops, 0)))
    return loads, pack_offset, pack_choice


def group_actions(ops: list[Operation], operands: list[list[SSAValue]], life: Lifetimes,
                  loads: list[list[SSAValue]], outputs: Sequence[SSAValue], arch: Arch
                  ) -> tuple[list[tuple], dict[int, int]]:
    """The group's schedule (load, wait, compute, store actions) and the position at
    which each load is issued: issuing load k stalls until load k - dma_channels lands,
    so loads go out up to `dma_channels` ahead of the op that needs them."""
    unit_of = {v: j for j, unit in enumerate(loads) for v in unit}
    actions: list[tuple] = []
    waited: set[int] = set()
    out_set = set(outputs)
    load_start: dict[int, int] = {}
    root = life.root
    units = [{unit_of[root[v]] for v in operands[i] if root[v] in unit_of} for i in range(len(ops))]
    views = [is_view(o) for o in ops]

    # a view needs a load only when no op computing from it does: unpacking views placed
    # ahead of their readers then do not pull loads forward
    computed_from = {j for i in range(len(ops)) if not views[i] for j in units[i]}
    for i, o in enumerate(ops):
        need = sorted(units[i] - computed_from if views[i] else units[i])
        if need:
            # up to need + chans is a load op i waits for anyway: the stream never stalls longer than it must
            while len(load_start) < min(need[-1] + 1 + arch.dma_channels, len(loads)):
                actions.append(("load", len(load_start)))
                load_start[len(load_start)] = life.pos[i]
        for j in need:
            if j not in waited:
                actions.append(("wait", j))
                waited.add(j)
        actions.append(("compute", i))
        if o.results[0] in out_set:
            actions.append(("store", o.results[0]))
    return actions, load_start


def is_view(op: Operation) -> bool:
    """A reshape or 1-D slice: its result aliases (part of) its operand's buffer."""
    return _facts(op)[2]


def fit_lifetimes(bufs: Sequence[tuple[object, int, int, int]], align: int,
                  limit: int) -> tuple[dict[object, int], int] | None:
    """Byte offsets for buffers (key, bytes, first, last op index using it): first fit in
    order of first use (larger first), buffers whose lifetimes overlap never share a
    byte; (offsets, peak), or None when the peak passes `limit`."""
    base: dict[object, int] = {}
    placed: list[tuple[int, int, int, int]] = []  # (lo, hi, first, last)
    peak = 0
    for key, size, first, last in sorted(bufs, key=lambda b: (b[2], -b[1])):
        size = align_up(size, align)
        at = first_fit(size, [(lo, hi) for lo, hi, f, l in placed if not (l < first or last < f)], align)
        placed.append((at, at + size, first, last))
        base[key] = at
        peak = max(peak, at + size)
        if peak > limit:
            return None
    return base, peak


def in_place_operand(op: Operation, operands: list[SSAValue], i: int, root: dict, alias: dict, start: dict,
                     final_use: dict, members: dict, out: set[SSAValue]) -> SSAValue | None:
    """An operand of elementwise `op` (index i) whose buffer the result can take: a value
    the group computed (not a load, which a pack may share) filling its buffer, of the
    result's type, whose buffer dies here: no value it holds (the operand, a reshape or
    slice of it or what it views, an earlier in-place result) is read after op i or
    stored (a store could still be reading the buffer). A later view of the operand
    reads it, so it counts too."""
    if not isinstance(op, ElementwiseOp):
        return None
    for v in operands:
        r = root.get(v)
        if (r in start and alias.get(v) == 0 and v.type == op.results[0].type
                and all(final_use.get(m, -1) <= i and m not in out
                        for m in ([v] if UNSAFE_VIEW_REUSE else members[r]))):
            return v
    return None


class DmaFluid:
    """The simulator's DMA rules for one core: a DMA holds one of `dma_channels` from
    issue to completion (issue stalls while all are busy), spends `dma_latency`, then
    shares `dram_bw` equally with every other transfer in flight (a fluid model
    advanced lazily). Each DMA is [ready, remaining bytes, finish]."""

    def __init__(self, arch: Arch, bw: float | None = None) -> None:
        self.arch = arch
        self.bw = arch.dram_bw if bw is None else bw  # (a split kernel's core: its share)
        self.dmas: list[list[float]] = []  # every DMA issued
        self.active: list[list[float]] = []  # those whose finish is not known yet
        self.now = 0.0  # how far the fluid model has run

    def step(self, limit: float) -> None:
        """Run the fluid model to the next completion, ready time or `limit`."""
        now = self.now
        running = [d for d in self.active if d[0] <= now]
        nxt = min((d[0] for d in self.active if d[0] > now), default=INF)
        if not running:
            self.now = min(limit, nxt)
            return
        rate = self.bw / len(running)
        to = min(limit, nxt, now + min(d[1] for d in running) / rate)
        for d in running:  # (one that lands at `to` lands exactly: a huge rate leaves float dust)
            d[1] = 0.0 if now + d[1] / rate <= to else d[1] - rate * (to - now)
            if d[1] <= 1e-6:
                d[2] = to
        self.active = [d for d in self.active if d[2] == INF]
        self.now = to

    def advance(self, until: float) -> None:
        while self.now < until and self.active:
            self.step(until)
        self.now = max(self.now, until)

    def finish(self, d: list[float]) -> float:
        while d[2] == INF:
            self.step(INF)
        return d[2]

    def issue(self, t: float, n: int) -> tuple[list[float], float]:
        """Issue n bytes when the core is at `t`: the DMA and when the core goes on."""
        self.advance(t)
        while True:  # stall until a channel is free
            busy = [d for d in self.dmas if d[2] > t]
            if len(busy) < self.arch.dma_channels:
                break
            done = [d[2] for d in busy if d[2] != INF]  # (all before the fluid's `now`)
            if done:
                t = min(done)
            else:
                self.step(INF)
        d = [t + self.arch.dma_latency, float(n), INF]
        self.dmas.append(d)
        self.active.append(d)
        return d, t


INF = float("inf")


def schedule_cycles(plan: GroupPlan, arch: Arch) -> int:
    """Cycles of the group's schedule on one core, with the simulator's DMA rules
    (`DmaFluid`); compute ops run one by one."""
    fluid = DmaFluid(arch)
    t = 0.0  # the core's op stream
    loads: dict[int, list[float]] = {}
    for a in plan.actions:
        kind = a[0]
        if kind == "load":
            loads[a[1]], t = fluid.issue(t, plan.load_bytes(a[1]))
        elif kind == "wait":
            t = max(t, fluid.finish(loads[a[1]]))
        elif kind == "compute":
            t += plan.op_cost[a[1]]
        else:
            _, t = fluid.issue(t, value_bytes(a[1]))
    return ceil(max([t, *(fluid.finish(d) for d in fluid.dmas)]))

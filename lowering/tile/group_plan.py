"""Layer groups: several consecutive kernels run as one task whose tensors stay
resident in one core's SRAM (plain algorithms, no IR rewriting).

A group holds graph ops computed on *whole* tensors: each op becomes one
compute op (cube or vector) on SRAM buffers; only the group's inputs (weights
and activations from outside) are loaded from DRAM and only its outputs
stored. `plan_group` decides, for an ordered list of graph ops, the SRAM
offset of every buffer (first fit over lifetimes within the group, reshapes
aliasing their input) and a straight-line schedule of actions:

- loads are issued in order of first use: before op i, up to `dma_channels`
  loads beyond the last one op i needs (issuing load k waits for a free
  channel, i.e. for load k - dma_channels, which op i needs anyway);
- op i waits for its loads and computes; a result that leaves the group is
  stored at once.

`GroupPlan.cycles` evaluates that schedule with the simulator's timing rules
(serial compute, DMA channels with `dma_latency` + bytes over `dram_bw`,
issue stalls while every channel is busy), which is the cost model the
layer-group pass ranks groups with and bufferization emits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import ceil, prod

from xdsl.ir import Operation, SSAValue

from lowering.tile.tile_search import align_up, first_fit
from npu_dialects.arch import Arch
from npu_dialects.graph import (
    ElementwiseOp,
    GemmOp,
    GraphOp,
    ReshapeOp,
    SliceOp,
    ints,
    shape_of,
)

F32 = 4

UNSAFE_VIEW_REUSE = False
"""Test-only: judge an in-place operand by its own last read alone, ignoring the other
values its buffer holds (a reshape's base read later): the bug the sanitizer's tests
re-enable to prove they catch it."""


def nbytes(v: SSAValue) -> int:
    return prod(shape_of(v)) * F32


def contiguous_slice(op: Operation) -> int | None:
    """Start element of a step-1 slice of a 1-D tensor (a byte range of its buffer: an
    alias in a group, how packed weights are unpacked), else None."""
    if not isinstance(op, SliceOp) or len(shape_of(op.input)) != 1:
        return None
    starts, steps = ints(op.starts, ()), ints(op.steps, ())
    return starts[0] if steps == (1,) else None


def op_cycles(op: Operation, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
    """Cycles of one graph op computed whole on one core (the op's own `cycles`), or on
    the part of its result of shape `out_shape` (a strip); 0 for an alias of a buffer
    (a reshape, a contiguous 1-D slice); None if a group cannot hold it."""
    if len(op.results) != 1 or not isinstance(op, GraphOp):
        return None
    if contiguous_slice(op) is not None:
        return 0
    if isinstance(op, GemmOp) and (op.params["alpha"] != 1.0 or op.params["beta"] != 1.0):
        return None
    return op.cycles(arch, out_shape)


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
            return nbytes(members[0])
        return max(self.pack_offset[m] + nbytes(m) for m in members)


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
        costs = [op_cycles(o, arch) for o in ops]
    if any(c is None for c in costs):
        return None
    defined = {r: i for i, o in enumerate(ops) for r in o.results}
    # external inputs in order of first use; reshapes and 1-D slices alias their input
    inputs: list[SSAValue] = []
    root: dict[SSAValue, SSAValue] = {}
    alias: dict[SSAValue, int] = {}
    last_use: dict[SSAValue, int] = {}
    start: dict[SSAValue, int] = {}
    final_use: dict[SSAValue, int] = {}  # last op reading each value directly
    members: dict[SSAValue, list[SSAValue]] = {}  # buffer (root) -> every value it holds: views, in-place results
    viewed_ops: list[int] = []
    # lifetimes count the ops that compute (views take the position of the next one), so a
    # run planned before its packed weights are unpacked by views plans the same afterwards
    pos: list[int] = []
    for i, o in enumerate(ops):
        for v in operands[i]:
            final_use[v] = i
        pos.append(i - len(viewed_ops))
        if is_view(o):
            viewed_ops.append(i)
    first_real: dict[SSAValue, tuple[int, int]] = {}  # input -> (op, operand) of its first computing reader
    for i, o in enumerate(ops):
        for k, v in enumerate(operands[i]):
            if v not in defined and v not in root:
                root[v] = v
                alias[v] = 0
                members[v] = [v]
                inputs.append(v)
            last_use[root[v]] = pos[i]
            if not is_view(o) and root[v] not in defined:
                first_real.setdefault(root[v], (i, k))
        r = o.results[0]
        sl = contiguous_slice(o)
        dead = in_place_operand(o, operands[i], i, root, alias, start, final_use, members, outputs)
        if is_view(o):
            root[r] = root[operands[i][0]]
            alias[r] = alias[operands[i][0]] + (sl or 0) * F32
        elif dead is not None:  # an elementwise op overwrites a buffer that dies here
            root[r], alias[r] = root[dead], 0
        else:
            root[r], alias[r] = r, 0
            start[r] = pos[i]
            members[r] = []
        members[root[r]].append(r)
        last_use.setdefault(root[r], pos[i])
    end = len(ops) - sum(1 for o in ops if is_view(o))
    for v in outputs:
        last_use[root[v]] = end  # kept until the task drains its stores
    # DMA loads: one per input, except packable weights that share transfers
    loads: list[list[SSAValue]] = []
    pack_offset: dict[SSAValue, int] = {}
    chunk: list[SSAValue] | None = None
    chunk_bytes = 0
    pack_choice = False
    for v in inputs:
        if v not in packable:
            loads.append([v])
            continue
        limit = pack_bytes or pack_chunk_bytes(arch)
        if chunk is not None and chunk_bytes < limit < chunk_bytes + nbytes(v):
            pack_choice = True  # the two policies differ here
        if chunk is None or (chunk_bytes >= limit if pack_overflow else chunk_bytes + nbytes(v) > limit):
            chunk, chunk_bytes = [], 0  # (a weight larger than a pack travels alone)
            loads.append(chunk)
        chunk.append(v)
        pack_offset[v] = chunk_bytes
        chunk_bytes += align_up(nbytes(v), arch.align)
    loads.sort(key=lambda unit: first_real.get(unit[0], (len(ops), 0)))
    unit_of = {v: j for j, unit in enumerate(loads) for v in unit}
    # the schedule (and with it when each load is issued)
    chans = arch.dma_channels
    actions: list[tuple] = []
    issued = 0
    waited: set[int] = set()
    out_set = set(outputs)
    load_start: dict[int, int] = {}

    def issue_until(k: int, at: int) -> None:
        nonlocal issued
        while issued < min(k, len(loads)):
            actions.append(("load", issued))
            load_start[issued] = at
            issued += 1

    for i, o in enumerate(ops):
        need = sorted({unit_of[root[v]] for v in operands[i] if root[v] in unit_of})
        if need:
            # issuing load k stalls until load k - chans lands: up to need + chans that is
            # a load op i waits for anyway, so the stream never stalls longer than it must
            issue_until(need[-1] + 1 + chans, pos[i])
        for j in need:
            if j not in waited:
                actions.append(("wait", j))
                waited.add(j)
        actions.append(("compute", i))
        if o.results[0] in out_set:
            actions.append(("store", o.results[0]))
    # buffers: one per load and per computed value; first fit over lifetimes
    bufs: list[tuple[object, int, int, int]] = []  # (key, bytes, first, last)
    for j, unit in enumerate(loads):
        size = sum(align_up(nbytes(m), arch.align) for m in unit) if len(unit) > 1 else nbytes(unit[0])
        bufs.append((j, size, load_start[j], max(last_use[m] for m in unit)))
    for v, first in start.items():
        bufs.append((v, nbytes(v), first, last_use[v]))
    fit = fit_lifetimes(bufs, arch.align, arch.sram_bytes)
    if fit is None:
        return None
    base, peak = fit
    offset: dict[SSAValue, int] = {}
    for j, unit in enumerate(loads):
        for m in unit:
            offset[m] = base[j] + pack_offset.get(m, 0)
    for v in start:
        offset[v] = base[v]
    for v, r in root.items():
        offset[v] = offset[r] + alias[v]
    plan = GroupPlan(ops, loads, list(outputs), offset, peak, actions, list(costs), root=root,
                     pack_offset=pack_offset, pack_choice=pack_choice)
    plan.dram_bytes = sum(plan.load_bytes(j) for j in range(len(loads))) + sum(nbytes(v) for v in outputs)
    plan.cycles = schedule_cycles(plan, arch)
    return plan


def is_view(op: Operation) -> bool:
    """A reshape or 1-D slice: its result aliases (part of) its operand's buffer."""
    return isinstance(op, ReshapeOp) or contiguous_slice(op) is not None


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
                     final_use: dict, members: dict, outputs: Sequence[SSAValue]) -> SSAValue | None:
    """An operand of elementwise `op` (index i) whose buffer the result can take: a value
    the group computed (not a load, which a pack may share) filling its buffer, of the
    result's type, whose buffer dies here: no value it holds (the operand, a reshape or
    slice of it or what it views, an earlier in-place result) is read after op i or
    stored (a store could still be reading the buffer). A later view of the operand
    reads it, so it counts too."""
    if not isinstance(op, ElementwiseOp):
        return None
    out = set(outputs)
    for v in operands:
        r = root.get(v)
        if (r in start and alias.get(v) == 0 and v.type == op.results[0].type
                and all(final_use.get(m, -1) <= i and m not in out
                        for m in ([v] if UNSAFE_VIEW_REUSE else members[r]))):
            return v
    return None


def schedule_cycles(plan: GroupPlan, arch: Arch) -> int:
    """Cycles of the group's schedule on one core, with the simulator's DMA rules: a DMA
    holds one of `dma_channels` from issue to completion (issue stalls while all are
    busy), spends `dma_latency`, then shares `dram_bw` equally with every other
    transfer in flight (a fluid model advanced lazily); compute ops run one by one."""
    inf = float("inf")
    dmas: list[list[float]] = []  # [ready, remaining bytes, finish], every DMA issued
    active: list[list[float]] = []  # those whose finish is not known yet
    now = 0.0  # how far the fluid model has run
    t = 0.0  # the core's op stream

    def step(limit: float) -> None:
        """Run the fluid model to the next completion, ready time or `limit`."""
        nonlocal now, active
        running = [d for d in active if d[0] <= now]
        nxt = min((d[0] for d in active if d[0] > now), default=inf)
        if not running:
            now = min(limit, nxt)
            return
        rate = arch.dram_bw / len(running)
        to = min(limit, nxt, now + min(d[1] for d in running) / rate)
        for d in running:
            d[1] -= rate * (to - now)
            if d[1] <= 1e-6:
                d[2] = to
        active = [d for d in active if d[2] == inf]
        now = to

    def advance(until: float) -> None:
        nonlocal now
        while now < until and active:
            step(until)
        now = max(now, until)

    def finish(d: list[float]) -> float:
        while d[2] == inf:
            step(inf)
        return d[2]

    def issue(n: int) -> list[float]:
        nonlocal t
        advance(t)
        while True:  # stall until a channel is free
            busy = [d for d in dmas if d[2] > t]
            if len(busy) < arch.dma_channels:
                break
            done = [d[2] for d in busy if d[2] != inf]  # (all before the fluid's `now`)
            if done:
                t = min(done)
            else:
                step(inf)
        d = [t + arch.dma_latency, float(n), inf]
        dmas.append(d)
        active.append(d)
        return d

    loads: dict[int, list[float]] = {}
    for a in plan.actions:
        kind = a[0]
        if kind == "load":
            loads[a[1]] = issue(plan.load_bytes(a[1]))
        elif kind == "wait":
            t = max(t, finish(loads[a[1]]))
        elif kind == "compute":
            t += plan.op_cost[a[1]]
        else:
            issue(nbytes(a[1]))
    return ceil(max([t, *(finish(d) for d in dmas)]))

"""`npu-layer-group`: merge runs of consecutive tiled kernels into layer groups
whose intermediate tensors stay in one core's SRAM instead of round-tripping DRAM.

Assumes `npu-tile` has run (every non-constant op of a function body is an
`npu_tile.kernel` with `predicted_cycles`). A layer group is an `npu_tile.kernel`
of kind `group` holding the graph ops of its members, formed where all its buffers
fit `sram_bytes` and the cost model predicts it faster than its members one by one.
Nothing is reordered: every op computes exactly what it did alone, so numerics are
unchanged. A run may also become a strip group, computed strip by strip along H
(`lowering/tile/strip_plan.py`), or a batch-split group (slices of its batch).

Options: `max-kernels` (128) bounds a group's length (and the search), narrowed to 48
once `search-budget` (200000 kernels planned) is spent; `line-buffers` is `auto` (by
cost, the default), `never`, or `always` (strip groups that can use line buffers do,
and form wherever they can); `batch-split` (true) allows batch-split groups.

Algorithm
---------
A layer group (no loops) holds the graph ops of its members; bufferization runs
each op once on whole SRAM-resident tensors, loads only the group's inputs (weights
stream in while earlier ops compute, see `lowering/tile/group_plan.py`) and stores
only the values used after the group.

Which runs become groups is a dynamic program over the kernels in program order:
a run of two or more kernels is grouped when every buffer it needs fits
`sram_bytes` at once (first fit over lifetimes within the group) and the cost
model predicts the group faster than its members one by one (the sum of their
`predicted_cycles`). A group runs on one core; kernels split over several cores
stay separate unless the group still wins. Runs equal up to a renaming of their
values (`RunSearch.run_key`: an unrolled RNN's time steps, repeated blocks) are
planned once; the groups chosen are then planned for themselves.

Weights only the group reads are packed, in order of first use, into new DRAM
constants of about dma_latency x dram_bw bytes each (up to, or just past: the
cheaper plan), one open pack per element type (a quantized layer's i8 weights, f32
scales and i32 biases fill three packs side by side), so one DMA brings several
of them (the body unpacks them with 1-D slices and reshapes, which alias SRAM).
The groups the program keeps also try packs of a half and a quarter of that size
(the first op waits for fewer bytes), keeping the plan the cost model prefers.

Inside a group an elementwise op overwrites an operand it reads for the last time
(a computed value, not stored), so a conv-BN-ReLU chain needs one buffer, not two.

Strip groups: a run whose tensors do not fit SRAM whole may still be a graph of
conv, max-pool, elementwise, channel-shuffle and channel-concat ops over one input
(`lowering/tile/strip_plan.py`: a chain, or branches joined by a concat); it is then tried as a
group computed strip by strip along H (halos recomputed), with the strip height
and the number of cores its strips are split over chosen by the cost model. Such
a group is an `npu_tile.kernel` of kind `group` with loops ["h"], tile [rows per
strip], grid [strips] and `double_buffer` when the next strip's loads are issued
before a strip computes. Runs of up to MAX_STRIP_KERNELS kernels are tried. Besides
its last op's result, a strip group stores strip by strip every inner value used after
it (a ResNet block's output, read by the next block's first conv in the group and by
its residual add after; `StripGeometry.stored`): the group has a result for each.

Line buffers: a strip group may keep in SRAM the rows of a value consecutive strips
share (the halo a 3x3 conv reads) and compute only the new ones, moving the kept rows
up between strips (`StripGeometry.rolled`; the kernel gets `line_buffer`); the cost
model chooses between recomputed halos and line buffers per group.

Batch-split groups (`lowering/tile/batch_split.py`): a run whose ops compute each
sample of a batch on its own (convs, pools, elementwise ops, gemms on rows) is also
planned on slices of N/k samples for k dividing N, over min(k, cores) cores (each
slice loads the weights, with `dram_bw` shared by the cores; up to 4 slices a
core); the cheapest of that, the whole run (at its best
packing) and a strip group is kept. Such a group has loops ["n"], tile [N/k], grid [k].

The choice is recorded on the group kernel as its `plan` (`#npu_tile.strip`: rows per
strip, strips, input halo, arena bytes, prefetch, line buffers and warm-up strips, the
residual operand the output overwrites in place; `#npu_tile.group`: arena bytes, every
body value's offset, the ops computed in place), which bufferization follows.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from math import prod

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from lowering.errors import CompileError
from lowering.graph.constants import ConstantReader, make_constant
from lowering.graph.fuse import rule_disabled
from lowering.remarks import enabled as remarks_enabled
from lowering.remarks import remark
from lowering.tile.batch_split import (
    LOOP,
    batched_values,
    discard,
    slice_arch,
    slice_group,
    slice_inputs,
    slice_ops,
)
from lowering.tile.costmodel import part_spans
from lowering.tile.group_plan import (
    GroupPlan,
    contiguous_slice,
    in_place_ops,
    op_cycles,
    pack_chunk_bytes,
    plan_group,
    planning,
)
from lowering.tile.strip_plan import (
    LINE_BUFFER_MODES,
    StripMemo,
    StripPlan,
    in_place_candidates,
    input_halo,
    plan_strips,
    run_signature,
)
from npu_dialects.arch import Arch, arch_of
from npu_dialects.dtypes import elem_bytes, element_type, nbytes, np_dtype
from npu_dialects.graph import ConstantOp, ReshapeOp, SliceOp, shape_of
from npu_dialects.locs import fused_loc, node_names
from npu_dialects.tile import GroupPlanAttr, KernelKind, KernelOp, StripPlanAttr, TileYieldOp


@dataclass(frozen=True)
class StripChoice:
    """A run as a strip group: its plan, predicted cycles (with the two events of a split),
    the cores its strips are split over and the side input its output overwrites."""

    plan: StripPlan
    cycles: int
    parts: int
    sync_latency: int
    in_place: SSAValue | None = None
    stored_in_place: tuple[SSAValue | None, ...] = ()  # the side input each stored inner value overwrites

    @property
    def span(self) -> int:
        """The predicted span without the split's events (as a kernel's `predicted_cycles`)."""
        return self.cycles - (2 * self.sync_latency if self.parts > 1 else 0)


@dataclass(frozen=True)
class BatchChoice:
    """A run as a batch-split group (`lowering/tile/batch_split.py`): the plan of one slice
    of `rows` samples (of clones since discarded: only its figures, loads and packing
    are read), the slices, the predicted cycles (with the two events of a split) and
    the cores they run on (a core runs several one after another when
    there are more)."""

    plan: GroupPlan
    rows: int
    slices: int
    parts: int
    cycles: int
    sync_latency: int

    @property
    def span(self) -> int:
        """The predicted span without the split's events (as a kernel's `predicted_cycles`)."""
        return self.cycles - (2 * self.sync_latency if self.parts > 1 else 0)


Choice = GroupPlan | StripChoice | BatchChoice
"""How a run of kernels becomes one group."""


def batched_inputs(ops: list[Operation], canon: dict[SSAValue, SSAValue]) -> list[SSAValue]:
    """The values `ops` read from outside themselves (renamed by `canon`) that are not
    constants: the activations a batch-split group slices."""
    produced = {r for o in ops for r in o.results}
    out: list[SSAValue] = []
    for o in ops:
        for v in o.operands:
            v = canon.get(v, v)
            if v not in produced and v not in out and not isinstance(v.owner, ConstantOp):
                out.append(v)
    return out


MAX_SLICES_PER_CORE = 4
"""Most slices a batch-split group gives a core (a divisor of the batch; smaller slices
fit SRAM where larger ones do not, and each plan costs a search of the run)."""

MAX_BATCH_KERNELS = 32
"""Longest run of kernels tried as a batch-split group (each try plans a slice per
slice count)."""

MAX_STRIP_KERNELS = 10
"""Longest run of kernels tried as a strip group (each try searches strip heights)."""

SEARCH_BUDGET = 200_000
"""Kernels planned (the sum of the runs' lengths) before the run search narrows to
BUDGET_HORIZON kernels per group (the pass's `search-budget` option): a plan costs time in its length, and long chains of
small kernels that always fit SRAM (an unrolled LSTM: 480 kernels, 2.7 million) never
stop a search early. The zoo and the transformers plan at most 33,000."""
BUDGET_HORIZON = 48


def _single_cost(k: KernelOp, arch: Arch) -> int:
    """A kernel's predicted span, plus the two cross-core events a split kernel pays
    (its `predicted_cycles` leaves them out; a group runs on one core and pays none)."""
    span = k.predicted_cycles.value.data if k.predicted_cycles is not None else 0
    parts = k.parts.value.data if k.parts is not None else 1
    return span + (2 * arch.sync_latency if parts > 1 else 0)


def run_outputs(run: list[KernelOp]) -> list[SSAValue]:
    """Results of the run's kernels used after it (or returned)."""
    inside = set(run)
    outs = []
    for k in run:
        for r in k.outs:
            if any(u.operation not in inside for u in r.uses):
                outs.append(r)
    return outs


def inner_ops(kernels: list[KernelOp]) -> tuple[list[Operation], list[int], dict[SSAValue, SSAValue],
                                               dict[SSAValue, SSAValue]]:
    """For planning runs of `kernels` without merging their bodies: every member's graph
    ops in order (not cloned), where each kernel's ops start in that list, the map from
    each kernel result to the inner value it yields, and `canon`: each block argument
    -> the inner value it stands for (or the outer value: a graph input or constant).
    A run's ops are a slice of the list; an operand defined outside the slice is a load."""
    yielded: dict[SSAValue, SSAValue] = {}
    canon: dict[SSAValue, SSAValue] = {}
    ops: list[Operation] = []
    starts: list[int] = []
    for k in kernels:
        for a, v in zip(k.body.block.args, k.ins):
            canon[a] = yielded.get(v, v)
        starts.append(len(ops))
        ops.extend(k.graph_ops())
        term = k.body.block.last_op
        assert isinstance(term, TileYieldOp)
        yielded.update(zip(k.outs, term.values))
    starts.append(len(ops))
    return ops, starts, yielded, canon


def op_signature(op: Operation) -> tuple:
    """An op's name, attributes, properties and operand and result types: what a plan
    reads of it besides where its operands come from and its cost (`RunSearch.run_key`).
    Where a slice that computes (not a 1-D view, `contiguous_slice`) starts and ends is
    left out: a plan reads its shapes only (an unrolled LSTM's step t reads row t)."""
    attrs = op.attributes.items()
    if isinstance(op, SliceOp) and contiguous_slice(op) is None:
        attrs = [(k, a) for k, a in attrs if k not in ("starts", "ends")]
    return (op.name, tuple(sorted(attrs)), tuple(sorted(op.properties.items())),
            tuple(v.type for v in op.operands), tuple(r.type for r in op.results))


STRIPS: "weakref.WeakKeyDictionary[ModuleOp, StripMemo]" = weakref.WeakKeyDictionary()
"""Each module's strip plans by run signature (`plan_strips`' memo), kept across
npu-layer-group runs on it. `share_strips` lets a copy use the same ones:
npu-split-concat-conv's trial plan on a copy, then the compile of the module, plan each
strip run once (a plan depends on its run's signature alone, see `run_signature`)."""


def share_strips(module: ModuleOp, copy: ModuleOp) -> None:
    """Let npu-layer-group on `copy` and on `module` share one memo of strip plans."""
    STRIPS[copy] = STRIPS.setdefault(module, {})


@dataclass(frozen=True)
class LayerGroup(ModulePass):
    """Group consecutive kernels whose tensors fit SRAM together when the cost model says it pays."""

    name = "npu-layer-group"
    max_kernels: int = 128
    line_buffers: str = "auto"
    search_budget: int = SEARCH_BUDGET
    batch_split: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_kernels < 2:
            raise CompileError(self.name, f"max-kernels must be at least 2, got {self.max_kernels}")
        if self.search_budget < 0:
            raise CompileError(self.name, f"search-budget must be at least 0, got {self.search_budget}")
        if self.line_buffers not in LINE_BUFFER_MODES:
            raise CompileError(self.name, f"line-buffers must be one of {', '.join(LINE_BUFFER_MODES)}, "
                                          f"got '{self.line_buffers}'")
        if rule_disabled(op, "layer-group"):
            return  # npu-fuse{disable=layer-group}
        arch = arch_of(op)
        # per-run state of the (frozen) pass, declared here and set around the dataclass
        self.constants: ConstantReader
        self._available: dict[SSAValue, bool]  # weight -> whether its data is at hand
        self._strips: StripMemo  # strip plans by run signature (repeated blocks plan once)
        self._slices: dict[tuple, int | None]  # batch-split slices by run signature (None: no split fits)
        object.__setattr__(self, "constants", ConstantReader(op, self.name))
        object.__setattr__(self, "_available", {})
        object.__setattr__(self, "_strips", STRIPS.setdefault(op, {}))  # (kept across runs on the module)
        object.__setattr__(self, "_slices", {})
        for func in op.ops:
            if isinstance(func, FuncOp) and func.body.blocks:
                self.group_function(func, arch, op)

    def group_function(self, func: FuncOp, arch: Arch, module: ModuleOp) -> None:
        kernels = [o for o in func.body.block.ops if isinstance(o, KernelOp)]
        for o in func.body.block.ops:
            if not isinstance(o, (KernelOp, ConstantOp)) and o is not func.body.block.last_op:
                raise CompileError(self.name, "expected only npu_tile.kernel and constants (run npu-tile first)", o)
        search = RunSearch(self, kernels, arch)
        segments = search.segments()
        if remarks_enabled():
            search.remarks(segments)
        for j, i in segments:
            run, ops, outs, flat = search.run_of(j, i)
            plan = search.plans[(j, i)]
            if isinstance(plan, GroupPlan):
                plan = self.smaller_packs(plan, ops, outs, flat, search.canon, arch, search.packable(j, i))
            self.rewrite(run, plan, module, arch, search.yielded)

    def smaller_packs(self, plan: GroupPlan, ops, outs, flat, canon, arch: Arch, packable: set[SSAValue]
                      ) -> GroupPlan:
        """A chosen group also tries smaller packs (the first op waits for less)."""
        for div in (2, 4):
            for overflow in (False, True):
                other = plan_group(ops, outs, arch, flat, canon, packable,
                                   pack_overflow=overflow, pack_bytes=pack_chunk_bytes(arch) // div)
                if other is not None and other.cycles < plan.cycles:
                    plan = other
        return plan

    def plan_run(self, run, ops, outs, flat, canon, arch: Arch, whole_failed: bool, batch_failed: bool,
                 packable: set[SSAValue]) -> tuple[Choice | None, bool, bool]:
        """The run as a layer group (the cheaper pack overflow choice), else as a strip
        group, or as a batch-split group where the cost model prefers it; whether whole
        tensors failed to fit, and whether no batch split did (longer runs fail too).
        `packable`: the weights the run may pack (`RunSearch.packable`)."""
        plan = None if whole_failed else plan_group(ops, outs, arch, flat, canon, packable)
        batch = None if batch_failed else self.batch_plan(run, ops, outs, canon, arch, packable)
        batch_failed = batch is None
        if plan is None:
            strips = self.strip_plan(ops, outs, canon, arch) if len(run) <= MAX_STRIP_KERNELS else None
            return ((batch if batch is not None and (strips is None or batch.cycles < strips.cycles) else strips), True,
                    batch_failed)
        if plan.pack_choice:
            other = plan_group(ops, outs, arch, flat, canon, packable, pack_overflow=True)
            if other is not None and other.cycles < plan.cycles:
                plan = other
        if batch is not None:  # (against the whole run at its best packing: what it would become)
            plan = self.smaller_packs(plan, ops, outs, flat, canon, arch, packable)
        return (batch if batch is not None and batch.cycles < plan.cycles else plan), False, batch_failed

    def batch_plan(self, run, ops, outs, canon, arch: Arch, packable: set[SSAValue]) -> BatchChoice | None:
        """The run as a batch-split group on k slices (k a divisor of the batch N, over
        min(k, cores) cores), the cheapest predicted, if its ops are separable and every
        result batched; a slice's plan has `dram_bw` shared by the cores (at most
        MAX_SLICES_PER_CORE slices a core, runs of at most MAX_BATCH_KERNELS). It plans
        one slice per core first; if that does not fit, more slices (the first that
        fits), else fewer while they fit and are faster (a repeated block plans the
        count chosen before only)."""
        if not self.batch_split or len(run) > MAX_BATCH_KERNELS:
            return None
        ins = batched_inputs(ops, canon)
        found = batched_values(ops, ins, lambda o: [canon.get(v, v) for v in o.operands])
        if found is None or any(v not in found[0] for v in outs):
            return None
        batched, n = found
        key = (run_signature(ops, canon), tuple(v in batched for o in ops for v in o.operands), arch)
        counts = [k for k in range(2, min(n, MAX_SLICES_PER_CORE * arch.cores) + 1) if n % k == 0]
        if key in self._slices:
            memo = self._slices[key]
            if memo is None:
                return None
            counts = [memo]
        k0 = min((k for k in counts if k >= arch.cores), default=counts[-1] if counts else 0)

        def sliced_plan(k: int) -> BatchChoice | None:
            operands = slice_inputs(ins, n // k)
            sliced = slice_ops(ops, batched, n // k, operands, canon)
            plan = plan_group(sliced, [operands[v] for v in outs], slice_arch(arch, k), None, {}, packable)
            discard(sliced)
            if plan is None:
                return None
            parts = min(arch.cores, k)
            cycles = -(-k // parts) * plan.cycles + (2 * arch.sync_latency if parts > 1 else 0)
            return BatchChoice(plan, n // k, k, parts, cycles, arch.sync_latency)

        best = sliced_plan(k0) if k0 else None
        if best is None:  # more, smaller slices: the first that fits (more cost more weight loads)
            best = next((c for k in counts if k > k0 and (c := sliced_plan(k)) is not None), None)
        else:  # fewer, larger slices (fewer weight loads) while they fit and are faster
            for k in sorted((k for k in counts if k < k0), reverse=True):
                c = sliced_plan(k)
                if c is None or c.cycles >= best.cycles:
                    break
                best = c
        self._slices[key] = None if best is None else best.slices  # (a repeated block plans its choice only)
        return best

    def forced(self, plan: Choice) -> bool:
        """A line-buffered strip group under `line-buffers=always` (taken wherever it forms)."""
        return self.line_buffers == "always" and isinstance(plan, StripChoice) and plan.plan.rolling

    def strip_plan(self, ops, outs, canon, arch: Arch) -> StripChoice | None:
        """The run as a strip group (`lowering/tile/strip_plan.py`): its last op's result is
        used later, and any other result used later is stored strip by strip too (a block's
        output the next block's residual reads again); its strips split over the cores
        where that pays like a kernel's tiles (`split_margin`)."""
        y = ops[-1].results[0]
        if y not in outs:
            return None
        found = plan_strips(ops, arch, canon, line_buffers=self.line_buffers, memo=self._strips,
                            stored=[v for v in outs if v is not y])
        if found is None:
            return None
        plan, parts, cycles = found
        in_place = next((v for v in in_place_candidates(ops, plan.geometry, canon) if computed(v)), None)
        taken = {in_place}
        stored_in_place: list[SSAValue | None] = []
        for v in plan.geometry.stored:  # (each residual taken once)
            r = next((r for r in in_place_candidates(ops, plan.geometry, canon, v) if computed(r) and r not in taken),
                     None)
            taken.add(r)
            stored_in_place.append(r)
        return StripChoice(plan, cycles, parts, arch.sync_latency, in_place, tuple(stored_in_place))

    def rewrite(self, run: list[KernelOp], plan: Choice, module: ModuleOp, arch: Arch,
                yielded: dict[SSAValue, SSAValue]) -> None:
        """Replace `run` by one group kernel: whole tensors (a GroupPlan) or strips; its
        `plan` attribute records the decisions bufferization follows."""
        outs = run_outputs(run)
        inside = set(run)
        loc = fused_loc(n for k in run for n in node_names(k))
        names = [k.kernel.data for k in run]
        packed_in, new_consts = self.pack_weights(plan.plan if isinstance(plan, BatchChoice) else plan, module,
                                                  f"{names[0]}.pack", loc)
        ins: list[SSAValue] = []
        for k in run:
            for v in k.ins:
                v = packed_in.get(v, v)
                if v.owner not in inside and v not in ins:
                    ins.append(v)
        block = group_body(run, ins, outs, packed_in, plan.plan if isinstance(plan, BatchChoice) else plan)
        group = KernelOp(f"{names[0]}..{names[-1]}", ins, [v.type for v in outs], Region(block), kind=KernelKind.GROUP,
                         **group_shape(plan, arch))
        group.location = loc
        group.properties["plan"] = plan_attr(group, plan, [yielded.get(v, v) for v in ins], arch)
        Rewriter.insert_op(group, InsertPoint.before(run[-1]))  # every input (constants too) is defined by then
        for c in new_consts:
            Rewriter.insert_op(c, InsertPoint.before(group))
        for old, new in zip(outs, group.outs):
            old.replace_all_uses_with(new)
        old_consts = {m.owner for m in packed_in if isinstance(m.owner, ConstantOp)}  # (packed weights)
        for k in reversed(run):
            Rewriter.erase_op(k)
        for c in old_consts:
            if not c.results[0].uses:
                Rewriter.erase_op(c)

    def pack_weights(self, plan: GroupPlan | StripChoice, module: ModuleOp, prefix: str,
                     loc) -> tuple[dict[SSAValue, SSAValue], list[ConstantOp]]:
        """Weights the plan packs: one new constant per packed load (unpacked in the
        body); returns member -> its pack (outer value), and the new constants."""
        packed_in: dict[SSAValue, SSAValue] = {}
        new_consts: list[ConstantOp] = []
        if not isinstance(plan, GroupPlan):
            return packed_in, new_consts  # (strips pack nothing)
        for unit in plan.loads:
            if len(unit) < 2:
                continue
            arrays: list[np.ndarray] = []
            for m in unit:
                d = self.constants.derived(m)  # (its value goes only into the pack, whose recipe says so)
                assert d is not None  # (a packed weight is `available`)
                arrays.append(d.value)
            elem = elem_bytes(unit[0])  # (a pack holds one element type: `pack_loads`)
            size = max(plan.pack_offset[m] + nbytes(m) for m in unit) // elem
            data = np.zeros(size, dtype=np_dtype(unit[0]))
            parts: list[tuple[str | list[float], int]] = []
            for m, a in zip(unit, arrays):
                o = plan.pack_offset[m] // elem
                data[o:o + a.size] = a.reshape(-1)
                op = self.constants.constant_op(m)
                assert op is not None  # (`available`)
                parts.append((op.weight.data if op.weight is not None else a.reshape(-1).tolist(), o))
            c = make_constant(module, data, f"{prefix}{len(new_consts)}", loc, recipe=(size, parts),
                              element_type=element_type(unit[0]))
            new_consts.append(c)
            for m in unit:
                packed_in[m] = c.result
        return packed_in, new_consts

    def available(self, v: SSAValue) -> bool:
        if v not in self._available:
            try:
                self._available[v] = self.constants.derived(v) is not None  # (its value is not read)
            except CompileError:  # no weight store (e.g. a lit test): leave the weight alone
                self._available[v] = False
        return self._available[v]


def group_body(run: list[KernelOp], ins: list[SSAValue], outs: list[SSAValue],
               packed_in: dict[SSAValue, SSAValue], plan) -> Block:
    """The group kernel's body: the run's graph ops cloned in order on the group's
    block arguments (a packed weight unpacked by a slice and reshape where first used)."""
    block = Block(arg_types=[v.type for v in ins])
    mapping: dict[SSAValue, SSAValue] = dict(zip(ins, block.args))

    def value(v: SSAValue) -> SSAValue:
        """The group-body value of outer value `v`."""
        if v not in mapping:
            pack = mapping[packed_in[v]]
            o = plan.pack_offset[v] // elem_bytes(v)
            n = prod(shape_of(v))
            sl = SliceOp(pack, [o], [o + n], [1], TensorType(element_type(v), [n]))
            assert isinstance(v.type, TensorType)  # (`shape_of` checked it)
            rs = ReshapeOp(sl.result, v.type)
            block.add_ops([sl, rs])
            mapping[v] = rs.result
        return mapping[v]

    for k in run:
        inner: dict[SSAValue, SSAValue] = dict(zip(k.body.block.args, [value(v) for v in k.ins]))
        for g in k.graph_ops():
            c = g.clone(value_mapper=inner)
            block.add_op(c)
            inner.update(zip(g.results, c.results))
        term = k.body.block.last_op
        assert isinstance(term, TileYieldOp)
        mapping.update(zip(k.outs, [inner[v] for v in term.values]))
    block.add_op(TileYieldOp(*[mapping[v] for v in outs]))
    return block


def computed(v: SSAValue) -> bool:
    """Whether planning value `v` is a kernel's result (a function input or a weight is not
    an activation buffer a group may overwrite); `inner_ops` names it by its inner value."""
    return isinstance(v.owner, KernelOp) or (isinstance(v.owner, Operation)
                                             and isinstance(v.owner.parent_op(), KernelOp))


def plan_attr(group: KernelOp, plan: Choice, ins: list[SSAValue], arch: Arch) -> StripPlanAttr | GroupPlanAttr:
    """The `plan` attribute of a new group kernel (`ins`: its operands as planning named
    them). A layer group's buffers are those of its body (packed weights unpacked by
    views), planned as the run was; a batch-split group's, those of one slice."""
    if isinstance(plan, StripChoice):
        sp, g = plan.plan, plan.plan.geometry
        return StripPlanAttr.get(g.T, g.S, input_halo(g), sp.sram_bytes, sp.prefetch, sp.rolling, g.warm,
                                 None if plan.in_place is None else ins.index(plan.in_place),
                                 [None if r is None else ins.index(r) for r in plan.stored_in_place])
    ops, yields, args = group.graph_ops(), list(group.yield_op.values), list(group.body.block.args)
    if isinstance(plan, BatchChoice):
        ops, yields, operands, arch = slice_group(group, arch)
        args = [operands.get(a, a) for a in args]
    body = plan_group(ops, yields, arch)
    if body is None:
        raise CompileError(LayerGroup.name, f"group '{group.kernel.data}': its body does not fit as planned", group)
    values = [*args, *(op.results[0] for op in ops)]
    attr = GroupPlanAttr.get(body.sram_bytes, [body.offset.get(v, 0) for v in values], in_place_ops(body))
    if isinstance(plan, BatchChoice):
        discard(ops)
    return attr


def group_shape(plan, arch: Arch) -> dict:
    """The group kernel's plan attributes: strips along H (with a split's span on
    1..parts cores, `part_spans`: only for the groups kept, not every run searched),
    slices of the batch (one per core; on fewer cores, a core's slices one after
    another), or no loops."""
    if isinstance(plan, StripChoice):
        sp, g = plan.plan, plan.plan.geometry
        spans = part_spans(lambda k: sp.cycles_on(k, arch), plan.parts, arch.sync_latency) if plan.parts > 1 else ()
        return dict(loops=["h"], tile=[g.T], grid=[g.S], double_buffer=sp.prefetch, sram_bytes=sp.sram_bytes,
                    predicted_cycles=plan.span, dram_bytes=sp.dram_bytes_on(plan.parts), parts=plan.parts,
                    line_buffer=sp.rolling, part_cycles=spans)
    if isinstance(plan, BatchChoice):
        spans = [-(-plan.slices // j) * plan.plan.cycles for j in range(1, plan.parts + 1)]
        return dict(loops=[LOOP], tile=[plan.rows], grid=[plan.slices], double_buffer=False,
                    sram_bytes=plan.plan.sram_bytes, predicted_cycles=plan.span,
                    dram_bytes=plan.slices * plan.plan.dram_bytes, parts=plan.parts, part_cycles=spans)
    return dict(loops=[], tile=[], grid=[], double_buffer=False, sram_bytes=plan.sram_bytes,
                predicted_cycles=plan.cycles, dram_bytes=plan.dram_bytes, parts=1)


class RunSearch:
    """The dynamic program over a function's kernels in program order: `best[i]` is the
    cheapest way to run kernels 0..i-1, its last segment starting at `choice[i]`; a
    segment of two or more kernels is a group (`plans`)."""

    MEMO = True
    """Whether runs with equal `run_key`s plan once (tests turn it off to compare)."""

    def __init__(self, lg: LayerGroup, kernels: list[KernelOp], arch: Arch) -> None:
        self.lg, self.kernels, self.arch = lg, kernels, arch
        self.costs: list[list[int] | None] = []
        for k in kernels:
            cs = [op_cycles(g, arch) for g in k.graph_ops()]
            known = [c for c in cs if c is not None]
            self.costs.append(known if len(known) == len(cs) else None)
        self.all_ops, self.starts, self.yielded, self.canon = inner_ops(kernels)
        index: dict[Operation, int] = {k: n for n, k in enumerate(kernels)}
        end = len(kernels)
        # the last kernel reading each kernel result (`end`: read by another op), and the
        # kernels reading each weight (-1: another op reads it too): a run's outputs and
        # packable weights without walking uses per run
        self.last_reader: dict[SSAValue, int] = {r: max((index.get(u.operation, end) for u in r.uses), default=-1)
                                                 for k in kernels for r in k.outs}
        self.readers: dict[SSAValue, tuple[int, int]] = {}
        for n, k in enumerate(kernels):
            for v in k.ins:
                if isinstance(v.owner, ConstantOp) and v not in self.readers:
                    users = [index.get(u.operation, -1) for u in v.uses]
                    self.readers[v] = (-1, -1) if -1 in users else (min(users), max(users))
        self.descs: dict[tuple, int] = {}  # an op's own signature -> a small number (`run_key`)
        costs = [c for cs, k in zip(self.costs, kernels) for c in (cs or [None] * len(k.graph_ops()))]
        self.desc = [self.descs.setdefault((op_signature(o), c), len(self.descs)) for o, c in zip(self.all_ops, costs)]
        # each op's operands (renamed by `canon`) and results by `id`, and each value's
        # kind: a constant, and whether `computed` (`run_key`)
        self.op_ins = [[id(self.canon.get(v, v)) for v in o.operands] for o in self.all_ops]
        self.op_res = [[id(r) for r in o.results] for o in self.all_ops]
        self.kind = {id(v): (isinstance(v.owner, ConstantOp), computed(v))
                     for o in self.all_ops for v in (self.canon.get(u, u) for u in o.operands)}
        self.memo: dict[tuple, tuple[Choice | None, bool, bool]] = {}  # `plan_run` by `run_key`
        self.borrowed: dict[tuple[int, int], tuple[bool, bool]] = {}  # plans from an equal run (`resolve`)
        self.plans: dict[tuple[int, int], Choice] = {}
        self.pairs: dict[int, tuple[int, int]] = {}  # kernel j with j+1: (grouped cycles, separate cycles)
        self.work = 0  # kernels planned so far (SEARCH_BUDGET)
        self.narrowed = False

    def run_of(self, j: int, i: int) -> tuple[list[KernelOp], list[Operation], list[SSAValue], list[int]]:
        """Kernels j..i-1: them, their graph ops, the values used after them, the ops' costs."""
        flat: list[int] = []
        for cs in self.costs[j:i]:
            assert cs is not None  # (`segments` groups only kernels with known costs)
            flat.extend(cs)
        return self.kernels[j:i], self.all_ops[self.starts[j]:self.starts[i]], self.outputs(j, i), flat

    def outputs(self, j: int, i: int) -> list[SSAValue]:
        """The inner values of kernels j..i-1's results used after them (`run_outputs`)."""
        return [self.yielded[r] for k in self.kernels[j:i] for r in k.outs if self.last_reader[r] >= i]

    def packable(self, j: int, i: int) -> set[SSAValue]:
        """The constants only kernels j..i-1 read whose data is at hand: the group may
        pack them into one DRAM block (one DMA instead of one per weight)."""
        lg = self.lg
        return {v for k in self.kernels[j:i] for v in k.ins
                if (r := self.readers.get(v)) is not None and j <= r[0] and r[1] < i and lg.available(v)}

    def run_key(self, j: int, i: int, outs: list[SSAValue], packable: set[SSAValue], flags: tuple[bool, bool]
                ) -> tuple:
        """What `plan_run` of kernels j..i-1 depends on: its ops' signatures
        (`op_signature`) with operands numbered by first appearance, each value from
        outside marked packable, constant or computed (`computed`), the outputs' numbers
        and the failure flags. Runs with equal keys (an unrolled LSTM's time steps,
        repeated blocks) plan alike up to that renaming, as `run_signature` does for strips."""
        ids: dict[int, int] = {}  # (by `id`: every value is alive while the search runs)
        sig: list = []
        packed = {id(v) for v in packable}
        kind = self.kind
        for n in range(self.starts[j], self.starts[i]):
            ins: list = []
            for v in self.op_ins[n]:
                x = ids.get(v)
                if x is None:  # (a value from outside: results are numbered where computed)
                    x = ids[v] = len(ids)
                    ins.append((x, v in packed, kind[v]))
                else:
                    ins.append(x)
            sig.append((self.desc[n], tuple(ins)))
            for r in self.op_res[n]:
                ids[r] = len(ids)
        return tuple(sig), tuple(ids[id(v)] for v in outs), flags

    def plan(self, j: int, i: int, whole_failed: bool, batch_failed: bool) -> tuple[Choice | None, bool, bool]:
        """`LayerGroup.plan_run` of kernels j..i-1, or its result for an equal run planned
        before (`run_key`; the plan is then another run's, its figures equal: `resolve`)."""
        packable = self.packable(j, i)
        key = self.run_key(j, i, self.outputs(j, i), packable, (whole_failed, batch_failed))
        hit = self.memo.get(key) if self.MEMO else None
        if hit is None:
            run, ops, outs, flat = self.run_of(j, i)
            hit = self.memo[key] = self.lg.plan_run(run, ops, outs, flat, self.canon, self.arch, whole_failed,
                                                    batch_failed, packable)
        else:
            self.borrowed[(j, i)] = (whole_failed, batch_failed)
        return hit

    def resolve(self, segments: list[tuple[int, int]]) -> None:
        """Plan the chosen groups whose plan came from an equal run for themselves."""
        for j, i in segments:
            if (j, i) in self.borrowed:
                run, ops, outs, flat = self.run_of(j, i)
                plan = self.lg.plan_run(run, ops, outs, flat, self.canon, self.arch, *self.borrowed[(j, i)],
                                        self.packable(j, i))[0]
                if plan is None or plan.cycles != self.plans[(j, i)].cycles:
                    raise CompileError(self.lg.name, f"internal: kernels {j}..{i - 1} plan unlike the equal run "
                                                     "planned for them (run_key misses something)")
                self.plans[(j, i)] = plan

    def remarks(self, segments: list[tuple[int, int]]) -> None:
        """An `applied` remark per group chosen, a `missed` one per pair of neighbouring
        kernels left apart: why the two alone were not grouped."""
        inside = {b for j, i in segments for b in range(j, i - 1)}
        for j, i in segments:
            plan = self.plans[(j, i)]
            kind = "strip group" if isinstance(plan, StripChoice) else "layer group"
            if isinstance(plan, BatchChoice):
                kind = f"batch-split group ({plan.slices} slices)"
            singles = sum(_single_cost(k, self.arch) for k in self.kernels[j:i])
            remark(self.lg.name, "applied", [n for k in self.kernels[j:i] for n in node_names(k)],
                   f"{kind} of {i - j} kernels: predicted {plan.cycles} cycles against {singles} apart")
        for b in range(len(self.kernels) - 1):
            if b in inside:
                continue
            pair = [n for k in self.kernels[b:b + 2] for n in node_names(k)]
            if self.costs[b] is None or self.costs[b + 1] is None:
                why = "a kernel whose ops the group cost model cannot price"
            elif b not in self.pairs:
                why = self.overflow(b)
            else:
                cost, singles = self.pairs[b]
                why = f"the cost model says grouped is {cost - singles} cycles slower ({cost} against {singles})" \
                    if cost >= singles else "a longer or cheaper grouping of the neighbours won"
            remark(self.lg.name, "missed", pair, f"'{self.kernels[b].kernel.data}' and the next kernel not "
                   f"grouped: {why}")

    def overflow(self, b: int) -> str:
        """Why kernels b and b+1 form no group when no plan was found: the SRAM their
        whole tensors would need together (planned without a capacity) against a core's."""
        run, ops, outs, flat = self.run_of(b, b + 2)
        unbounded = replace(self.arch, sram_bytes=1 << 60)
        whole = plan_group(ops, outs, unbounded, flat, self.canon, self.packable(b, b + 2))
        if whole is None:
            return "an op of theirs cannot be in a group, and no strip plan fits"
        need, have = whole.sram_bytes, self.arch.sram_bytes
        also = [k.kernel.data for k in run for r in k.outs  # (the kernels of the outputs but the last op's)
                if any(self.yielded[r] is v for v in outs) and self.yielded[r] is not ops[-1].results[0]]
        stored = f" (storing the result of {' and '.join(repr(n) for n in also)} too)" if also else ""
        return (f"their tensors do not fit one core's SRAM together: whole they need {need} bytes, "
                f"{need - have} more than its {have}, and no strip height fits{stored}")

    def horizon(self, i: int) -> int:
        """The most kernels a group ending at kernel i may have: max-kernels, or
        BUDGET_HORIZON once the search has spent SEARCH_BUDGET (a remark says so)."""
        if self.work < self.lg.search_budget or self.lg.max_kernels <= BUDGET_HORIZON:
            return self.lg.max_kernels
        if not self.narrowed:
            self.narrowed = True
            remark(self.lg.name, "missed", node_names(self.kernels[i - 1]),
                   f"search budget of {self.lg.search_budget} planned kernels spent: groups ending here and later "
                   f"have at most {BUDGET_HORIZON} kernels")
        return BUDGET_HORIZON

    def segments(self) -> list[tuple[int, int]]:
        """The groups (j, i) of the cheapest program, last first."""
        with planning():  # (the IR stays as it is until the groups are formed)
            return self._segments()

    def _segments(self) -> list[tuple[int, int]]:
        n, arch, lg = len(self.kernels), self.arch, self.lg
        best = [0] * (n + 1)
        choice = [0] * (n + 1)  # start of the last segment
        for i in range(1, n + 1):
            best[i] = best[i - 1] + _single_cost(self.kernels[i - 1], arch)
            choice[i] = i - 1
            if self.costs[i - 1] is None:
                continue  # no group can end with this kernel
            singles = _single_cost(self.kernels[i - 1], arch)
            whole_failed = batch_failed = False
            for j in range(i - 2, max(-1, i - 1 - self.horizon(i)), -1):
                if self.costs[j] is None:
                    break
                singles += _single_cost(self.kernels[j], arch)
                self.work += i - j
                plan, whole_failed, batch_failed = self.plan(j, i, whole_failed, batch_failed)
                if plan is None:
                    if i - j > MAX_STRIP_KERNELS and whole_failed:
                        break
                    continue
                cost = 0 if lg.forced(plan) else plan.cycles
                if i - j == 2:
                    self.pairs[j] = (cost, singles)
                if cost < singles and best[j] + cost < best[i]:
                    best[i] = best[j] + cost
                    choice[i] = j
                    self.plans[(j, i)] = plan
        segments = []
        i = n
        while i > 0:
            j = choice[i]
            if i - j >= 2:
                segments.append((j, i))
            i = j
        self.resolve(segments)
        return segments

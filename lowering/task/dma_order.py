"""`npu-dma-order`: each task issues its DRAM->SRAM loads in the order its ops first
need them, once a DMA channel is free for them, and waits for each just before the
first op that touches what it loads, so compute starts on the first
operands while later weights stream in.

Assumes the task-level form after `npu-schedule` (a task's `range` is final, so loop
trip counts are exact; best after `npu-task-canonicalize`). Reorders issues and
waits only: every op reads what it read before (a load never moves past an op that
touches its destination or writes its source, nor a wait past an op that touches
either), so numerics and each task's DRAM reads and writes are unchanged. Option
`disable=name,...` switches patterns off by name (`fold-one-trip-loop`,
`sink-wait`, `order-loads`).

Algorithm
---------
Patterns (greedy, to a fixed point), as `group_plan` already emits layer groups:
- `FoldOneTripLoop`: an `scf.for` that runs once for its task's range becomes its
  body (induction variable = lower bound); one that never runs, its initial values.
  A strip or tile loop with one iteration per core then exposes its loads to the
  loads before it (the weights a strip group loads once per task).
- `SinkWait`: a wait on a copy (or on a token a loop carries: the copies it may
  stand for) moves down to just before the first op of its block that may touch the
  copy's source or destination (a region op: any op nested in it), or uses the token.
- `OrderLoads`: in a block, the loads whose token only the block's waits use, or a
  loop body's yield (a load for the next step: the step computes nothing from it),
  are issued in order of first use, each after the ops it depends on (its operands'
  definitions, ops touching its destination or writing its source) and at the
  first op before which a DMA channel is free (`IssueClock`: the block timed by the
  simulator's rules, the core's DRAM share `dram_bw / parts`; a loop body starts
  with the step before's deferred store in flight), or at its first use, or before a
  region op: a load issued while every channel is busy stalls the core until one
  frees, while ops that need nothing from it could run. The new order is kept only
  when it makes the block faster by the simulator's rules (`block_cycles`: DRAM
  bandwidth shared by the copies in flight, which the issue rule does not see: a
  load issued early slows the one the next op waits for; a loop body is timed over
  two steps, a wait on a carried token waiting for what the step before yielded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import prod
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import IsTerminator

from lowering.errors import check_disabled
from lowering.task.taskgraph import copy_ends
from lowering.task.walker import KindWalker
from lowering.tile.group_plan import DmaFluid
from npu_dialects.arch import Arch, arch_of
from npu_dialects.canonicalize import effects, reuse_group, sram_spans, task_of, trip_count, writes_to
from npu_dialects.compute import ComputeOp
from npu_dialects.dma import CopyOp, DoneOp, WaitOp, memory_space
from npu_dialects.dtypes import elem_bytes
from npu_dialects.task import TaskOp, span


def token_copies(tok: SSAValue, seen: set[SSAValue] | None = None) -> list[CopyOp] | None:
    """The copies a DMA token may stand for: its copy, or through a loop's carried
    token (block argument or result) the initial and yielded ones; None when unknown."""
    seen = set() if seen is None else seen
    if tok in seen:
        return []
    seen.add(tok)
    owner = tok.owner
    if isinstance(owner, CopyOp):
        return [owner]
    if isinstance(owner, DoneOp):
        return []
    loop, j = None, -1
    if isinstance(tok, BlockArgument) and isinstance(owner, Block) and isinstance(owner.parent_op(), scf.ForOp):
        loop, j = owner.parent_op(), tok.index - 1
    elif isinstance(owner, scf.ForOp) and isinstance(tok, OpResult):
        loop, j = owner, tok.index
    if not isinstance(loop, scf.ForOp) or j < 0:
        return None
    term = loop.body.block.last_op
    if not isinstance(term, scf.YieldOp):
        return None
    out: list[CopyOp] = []
    for v in (loop.iter_args[j], term.operands[j]):
        found = token_copies(v, seen)
        if found is None:
            return None
        out += found
    return out


Place = tuple[str | None, list[tuple[int, int]] | None] | tuple[str | None, tuple[SSAValue, int, int, set[SSAValue]]] | None
"""What `may_alias` reads off a buffer: None when not a memref, else its memory space
with, in SRAM, the byte ranges it may name (`sram_spans`), elsewhere its root, first
and end byte (`span`) and the roots memplan may give its root's bytes (`reuse_group`)."""


def place_of(v: SSAValue) -> Place:
    t = v.type
    if not isinstance(t, MemRefType):
        return None
    space = memory_space(t)
    if space == "sram":
        return space, sram_spans(v)
    r, lo, hi = span(v)
    return space, (r, lo, hi, reuse_group(r))


def places_alias(a: Place, b: Place) -> bool:
    """`may_alias` of two buffers at places `a` and `b` (True when unsure)."""
    if a is None or b is None:
        return True
    if a[0] != b[0]:
        return a[0] is None or b[0] is None
    if a[0] == "sram":
        sa, sb = a[1], b[1]
        assert not isinstance(sa, tuple) and not isinstance(sb, tuple)
        return sa is None or sb is None or any(x0 < y1 and y0 < x1 for x0, x1 in sa for y0, y1 in sb)
    da, db = a[1], b[1]
    assert isinstance(da, tuple) and isinstance(db, tuple)
    if da[0] is db[0]:
        return da[1] < db[2] and db[1] < da[2]
    return bool(da[3] & db[3])


class Facts:
    """What the patterns ask about ops and buffers, remembered for the pass run: which
    buffers may share bytes, what an op touches or writes (a region op: any op nested in
    it), the copies a token stands for, the bytes of a copy and cycles of a compute op.
    Moving ops within a block changes none of these; folding a loop (its ops inlined,
    its values replaced) may, so a fold forgets them (`forget`), except the buffers a
    region op's nested ops touch, collected once per pass run (the walk is the cost of
    moving issues and waits across loops and branches)."""

    def __init__(self) -> None:
        self.nested: dict[Operation, list[SSAValue] | None] = {}  # None: unknown effects
        self.versions: dict[Block, int] = {}  # (bumped by every pattern that changes the block's ops)
        self.terminators: dict[type[Operation], bool] = {}
        self.forget()

    def forget(self) -> None:
        self.places: dict[SSAValue, Place] = {}
        self.spaces: dict[SSAValue, tuple[bool, str | None]] = {}
        self.aliases: dict[tuple[SSAValue, SSAValue], bool] = {}
        self.written: dict[tuple[Operation, SSAValue], bool] = {}
        self.own: dict[Operation, list[SSAValue] | None] = {}  # (op without regions -> what it reads and writes)
        self.loads: dict[CopyOp, bool] = {}
        self.copy_ends: dict[CopyOp, tuple[SSAValue, SSAValue]] = {}
        self.trips: dict[scf.ForOp, int | None] = {}
        self.tokens: dict[SSAValue, list[CopyOp] | None] = {}
        self.orders: dict[tuple[CopyOp, Operation], bool] = {}  # (load, op before it) -> load must stay after
        self.costs: dict[Operation, int] = {}  # (a copy: its bytes; a compute op: its cycles)

    def changed(self, block: Block) -> None:
        """A pattern changed the ops of `block` (moved, inlined or erased some)."""
        self.versions[block] = self.versions.get(block, 0) + 1

    def version(self, block: Block) -> int:
        return self.versions.get(block, 0)

    def place(self, v: SSAValue) -> Place:
        if v not in self.places:
            self.places[v] = place_of(v)
        return self.places[v]

    def space(self, v: SSAValue) -> tuple[bool, str | None]:
        """(a memref, its memory space): what `may_alias` reads first."""
        if v not in self.spaces:
            t = v.type
            self.spaces[v] = (isinstance(t, MemRefType), memory_space(t))
        return self.spaces[v]

    def alias(self, a: SSAValue, b: SSAValue) -> bool:
        """`may_alias(a, b)`, from the two buffers' places (their spans only when they
        are memrefs of one memory space)."""
        key = (a, b)
        hit = self.aliases.get(key)
        if hit is None:
            (ma, sa), (mb, sb) = self.space(a), self.space(b)
            if ma and mb and sa != sb:
                hit = sa is None or sb is None
            else:
                hit = places_alias(self.place(a), self.place(b))
            self.aliases[key] = hit
        return hit

    def buffers(self, op: Operation) -> list[SSAValue] | None:
        """The buffers `op` (with its nested ops) reads or writes; None when unknown."""
        if op.regions:
            return self.nested_of(op)
        if op not in self.own:
            eff = ([], list(self.ends(op))) if isinstance(op, CopyOp) else effects(op)  # (a copy's: as `effects`)
            self.own[op] = None if eff is None else eff[0] + eff[1]
        return self.own[op]

    def __call__(self, op: Operation, bufs: list[SSAValue]) -> bool:
        """Whether `op`, or an op nested in it, may read or write bytes of some of `bufs`
        (`touches`; a region op of unknown effects touches even none)."""
        touched = self.buffers(op)
        if touched is None:
            return bool(bufs) or bool(op.regions)
        return any(self.alias(t, b) for b in bufs for t in touched)

    def touches(self, op: Operation, buf: SSAValue) -> bool:
        return self(op, [buf])

    def ends(self, copy: CopyOp) -> tuple[SSAValue, SSAValue]:
        """(source, destination) of `copy`."""
        if copy not in self.copy_ends:
            self.copy_ends[copy] = copy_ends(copy)
        return self.copy_ends[copy]

    def trip_count(self, loop: scf.ForOp) -> int | None:
        if loop not in self.trips:
            self.trips[loop] = trip_count(loop)
        return self.trips[loop]

    def is_terminator(self, op: Operation) -> bool:
        kind = type(op)
        if kind not in self.terminators:
            self.terminators[kind] = op.has_trait(IsTerminator)
        return self.terminators[kind]

    def is_load(self, copy: CopyOp) -> bool:
        if copy not in self.loads:  # (as `is_load`)
            src, dst = self.ends(copy)
            self.loads[copy] = memory_space(src.type) == "dram" and memory_space(dst.type) == "sram"
        return self.loads[copy]

    def nested_of(self, op: Operation) -> list[SSAValue] | None:
        if op not in self.nested:
            touched: list[SSAValue] | None = []
            for o in op.walk():
                eff = effects(o)
                if eff is None:
                    touched = None
                    break
                touched += eff[0] + eff[1]
            self.nested[op] = touched
        return self.nested[op]

    def writes(self, op: Operation, buf: SSAValue) -> bool:
        """`writes_to(op, buf)`."""
        key = (op, buf)
        hit = self.written.get(key)
        if hit is None:
            hit = self.written[key] = writes_to(op, buf)
        return hit

    def copies(self, tok: SSAValue) -> list[CopyOp] | None:
        """`token_copies(tok)` (not to be changed by the caller)."""
        if tok not in self.tokens:
            self.tokens[tok] = token_copies(tok)
        return self.tokens[tok]

    def nbytes(self, copy: CopyOp) -> int:
        """Bytes `copy` moves."""
        if copy not in self.costs:
            self.costs[copy] = prod(copy.window) * elem_bytes(self.ends(copy)[0])
        return self.costs[copy]

    def cycles(self, op: ComputeOp, arch: Arch) -> int:
        if op not in self.costs:
            self.costs[op] = op.cycles(arch)
        return self.costs[op]


class IssueClock:
    """The issuing core's time through a block, by the simulator's rules (compute ops
    in sequence, a copy waits for a free channel, then takes `dma_latency` plus its
    bytes over this core's share of `dram_bw`): whether a load issued now would stall
    the core for a channel. Region ops count as instant (their loads are their own)."""

    def __init__(self, arch: Arch, parts: int, inflight: Sequence[int] = (), facts: Facts | None = None):
        self.arch = arch
        self.facts = Facts() if facts is None else facts
        self.bw = arch.dram_bw / max(1, parts)
        self.now = 0.0
        self.free = [0.0] * arch.dma_channels
        self.done: dict[CopyOp, float] = {}
        for i, n in enumerate(inflight[:arch.dma_channels]):  # (issued just before the block)
            self.free[i] = arch.dma_latency + n / self.bw

    def channel_free(self) -> bool:
        return min(self.free) <= self.now

    def issue(self, copy: CopyOp) -> None:
        c = self.free.index(min(self.free))
        self.now = max(self.now, self.free[c])
        self.free[c] = self.done[copy] = self.now + self.arch.dma_latency + self.facts.nbytes(copy) / self.bw

    def step(self, op: Operation) -> None:
        if isinstance(op, CopyOp):
            self.issue(op)
        elif isinstance(op, WaitOp):  # (a token a loop carries in: copies of earlier steps, taken as landed)
            copies = [] if isinstance(op.token, BlockArgument) else self.facts.copies(op.token) or []
            self.now = max([self.now] + [self.done.get(c, 0.0) for c in copies])
        elif isinstance(op, ComputeOp):
            self.now += self.facts.cycles(op, self.arch)


def block_cycles(ops: list[Operation], arch: Arch, parts: int, steps: int = 1, facts: Facts | None = None) -> float:
    """The span of a straight-line block on one core by the simulator's rules
    (`group_plan.DmaFluid`, with this core's share `dram_bw / parts`): compute ops in
    sequence, a wait blocks until its copy lands, the block ends when every copy has.
    Region ops count as instant. A loop body runs `steps` times in a row: a wait on a
    token the loop carries waits for the copy the step before yielded for it (at the
    first step, one landed before the loop). `facts` remembers what it reads off ops."""
    facts = Facts() if facts is None else facts
    fluid = DmaFluid(arch, arch.dram_bw / max(1, parts))
    t = 0.0
    before: dict[int, list[float]] = {}  # (carried token index -> the copy the step before yielded)
    for _ in range(steps):
        issued: dict[CopyOp, list[float]] = {}
        for op in ops:
            if isinstance(op, CopyOp):
                issued[op], t = fluid.issue(t, facts.nbytes(op))
            elif isinstance(op, WaitOp):
                tok = op.token
                if isinstance(tok, BlockArgument):
                    landed = [before[tok.index]] if tok.index in before else []
                else:
                    landed = [issued[c] for c in facts.copies(tok) or () if c in issued]
                t = max([t] + [fluid.finish(d) for d in landed])
            elif isinstance(op, ComputeOp):
                t += facts.cycles(op, arch)
            elif isinstance(op, scf.YieldOp):
                before = {j + 1: issued[o] for j, v in enumerate(op.operands) if isinstance(o := v.owner, CopyOp) and o in issued}
    return max([t, *(fluid.finish(d) for d in fluid.dmas)])


class FoldOneTripLoop(RewritePattern):
    """An `scf.for` in a task that runs exactly once for the task's range is inlined
    (induction variable = lower bound); one that never runs is replaced by its
    initial values."""

    NAME: ClassVar[str] = "fold-one-trip-loop"

    def __init__(self, facts: Facts) -> None:
        self.facts = facts

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        if task_of(op) is None:
            return
        n = self.facts.trip_count(op)
        if n in (0, 1):
            self.facts.forget()  # (values replaced, ops inlined)
            self.facts.changed(op.parent_block())  # type: ignore[arg-type]
        if n == 0:
            rewriter.replace(op, [], list(op.iter_args))
        elif n == 1:
            block = op.body.block
            term = block.last_op
            assert isinstance(term, scf.YieldOp)
            results = list(term.operands)
            rewriter.erase(term, safe_erase=False)
            rewriter.inline_block(block, InsertPoint.before(op), [op.lb, *op.iter_args])
            rewriter.replace(op, [], results)


class BlockPattern(RewritePattern):
    """A pattern that rewrites each block of a task, loop or branch as a whole, matched
    on the op owning it; a block it left unchanged is not looked at again until it
    changes."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.settled: dict[Block, int] = {}  # block -> its version when last seen (`Facts.changed`)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, (TaskOp, scf.ForOp, scf.IfOp)):
            return
        task = op if isinstance(op, TaskOp) else task_of(op)
        if task is None:
            return
        for region in op.regions:
            for block in region.blocks:
                if self.settled.get(block) != self.facts.version(block):
                    self.rewrite_block(block, task, rewriter)
                    self.settled[block] = self.facts.version(block)

    def rewrite_block(self, block: Block, task: TaskOp, rewriter: PatternRewriter) -> None:
        raise NotImplementedError


class SinkWait(BlockPattern):
    """Each wait of a block moves down to just before the first op that may touch its
    copies' source or destination, uses its token, or ends the block (the block's
    waits from the last up, so each moves once)."""

    NAME: ClassVar[str] = "sink-wait"

    def rewrite_block(self, block: Block, task: TaskOp, rewriter: PatternRewriter) -> None:
        facts = self.facts
        for op in reversed([o for o in block.ops if isinstance(o, WaitOp)]):
            copies = facts.copies(op.token)
            if not copies:
                continue
            bufs = [b for c in copies for b in facts.ends(c)]
            users = {u.operation for u in op.token.uses}
            stop, passed = op.next_op, False
            while stop is not None and not self.stops(stop, users, bufs):
                # (waits sinking to one op keep their order; passing loads only is no move either)
                passed = passed or not (isinstance(stop, WaitOp) or isinstance(stop, CopyOp) and facts.is_load(stop))
                stop = stop.next_op
            if passed:
                self.facts.changed(block)
                op.detach()
                rewriter.insert(op, InsertPoint.at_end(block) if stop is None else InsertPoint.before(stop))

    def stops(self, other: Operation, users: set[Operation], bufs: list[SSAValue]) -> bool:
        """A wait on copies of `bufs` whose token `users` use stops sinking at `other`."""
        if isinstance(other, WaitOp):
            return False
        if self.facts.is_terminator(other) or other in users:
            return True
        return self.facts(other, bufs)


class OrderLoads(BlockPattern):
    """The loads of a block whose token only the block's waits use are issued in order
    of first wait, each once a DMA channel is free for it (see the module
    docstring). Matched on the op owning the block (a task, loop or branch)."""

    NAME: ClassVar[str] = "order-loads"

    def __init__(self, facts: Facts, arch: Arch):
        super().__init__(facts)
        self.arch = arch

    def movable(self, op: Operation, block: Block) -> bool:
        """A load whose token only waits of the block use, or the loop body's yield (a
        load for the next step: it may go anywhere in the step once its slot is free)."""
        if not isinstance(op, CopyOp) or not self.facts.is_load(op) or not op.token.uses:
            return False
        return all(isinstance(u.operation, (WaitOp, scf.YieldOp)) and u.operation.parent_block() is block
                   for u in op.token.uses)

    def inflight(self, block: Block) -> list[int]:
        """Bytes of the stores a loop body's block starts with in flight: the previous
        step's, carried in and awaited later in the block (a deferred store)."""
        if not isinstance(block.parent_op(), scf.ForOp):
            return []
        out = []
        for arg in block.args[1:]:
            copies = self.facts.copies(arg) or []
            stores = [c for c in copies if not self.facts.is_load(c)]
            if stores and len(stores) == len(copies):
                out.append(self.facts.nbytes(stores[0]))
        return out

    def rewrite_block(self, block: Block, task: TaskOp, rewriter: PatternRewriter) -> None:
        ops = list(block.ops)
        loads = [o for o in ops if isinstance(o, CopyOp) and self.movable(o, block)]
        # loads writing bytes another load of the block writes keep their order: leave them
        dst = {ld: self.facts.ends(ld)[1] for ld in loads}
        loads = [ld for ld in loads if not any(o is not ld and self.facts.alias(dst[o], dst[ld]) for o in loads)]
        if not loads:
            return
        place = self.schedule(ops, loads, task)
        moved = set(loads)
        skeleton = [o for o in ops if o not in moved]
        new: list[Operation] = []
        for s, o in enumerate(skeleton):
            new += place.get(s, [])
            new.append(o)
        parts = task.parts.value.data
        steps = 2 if isinstance(block.parent_op(), scf.ForOp) else 1  # (a loop body: what it leaves the next step)
        if new == ops or (block_cycles(new, self.arch, parts, steps, self.facts)
                          >= block_cycles(ops, self.arch, parts, steps, self.facts)):
            return
        self.facts.changed(block)
        for s, lds in place.items():
            for ld in lds:
                ld.detach()
                rewriter.insert(ld, InsertPoint.before(skeleton[s]))

    def schedule(self, ops: list[Operation], loads: list[CopyOp], task: TaskOp) -> dict[int, list[CopyOp]]:
        """Skeleton index (the block without the loads) -> the loads issued just before it."""
        moved = set(loads)
        skeleton = [o for o in ops if o not in moved]
        spos = {o: i for i, o in enumerate(skeleton)}
        earliest: dict[CopyOp, int] = {}
        for ld in loads:  # after the last op before it that it depends on
            o = ld.prev_op
            while o is not None and (o in moved or not self.depends(ld, o)):
                o = o.prev_op
            earliest[ld] = 0 if o is None else spos[o] + 1
        first = {ld: min(spos[u.operation] for u in ld.token.uses) for ld in loads}
        pos = {o: i for i, o in enumerate(ops)}
        pending = sorted(loads, key=lambda ld: (first[ld], pos[ld]))
        clock = IssueClock(self.arch, task.parts.value.data, self.inflight(ops[0].parent_block()),  # type: ignore[arg-type]
                           self.facts)
        place: dict[int, list[CopyOp]] = {}
        for s, o in enumerate(skeleton):
            while pending and earliest[pending[0]] <= s and (first[pending[0]] == s or clock.channel_free()
                                                            or o.regions):
                place.setdefault(s, []).append(pending[0])
                clock.issue(pending.pop(0))
            clock.step(o)
        return place

    def depends(self, ld: CopyOp, o: Operation) -> bool:
        """`ld` must stay after `o`: `o` defines an operand, touches its destination or
        writes its source, or waits for a copy that does (it may still be in flight
        before the wait)."""
        key = (ld, o)
        hit = self.facts.orders.get(key)
        if hit is None:
            hit = self.facts.orders[key] = self._depends(ld, o)
        return hit

    def _depends(self, ld: CopyOp, o: Operation) -> bool:
        if any(r in ld.operands for r in o.results):
            return True
        facts = self.facts
        if isinstance(o, WaitOp):
            copies = facts.copies(o.token)
            src, dst = facts.ends(ld)
            return copies is None or any(facts.touches(c, dst) or facts.alias(facts.ends(c)[1], src) for c in copies)
        src, dst = facts.ends(ld)
        return facts(o, [dst]) or facts.writes(o, src)


OWNERS = (TaskOp, scf.ForOp, scf.IfOp)
"""The ops the patterns match: every pattern declines any other op."""


class OwnerWalker(KindWalker):
    """`KindWalker` over `OWNERS` (greedy, to a fixed point) that reads a block's ops
    again only when a pattern changed them (`Facts.changed`)."""

    def __init__(self, pattern: RewritePattern, facts: Facts):
        super().__init__(pattern, OWNERS)
        self.facts = facts
        self.seen: dict[Block, tuple[int, list[Operation]]] = {}  # block -> (version, its ops with regions)

    def listed(self, block: Block) -> list[Operation]:
        version = self.facts.version(block)
        seen = self.seen.get(block)
        if seen is None or seen[0] != version:
            seen = self.seen[block] = (version, super().listed(block))
        return seen[1]


PATTERN_NAMES = ("fold-one-trip-loop", "sink-wait", "order-loads")


@dataclass(frozen=True)
class DmaOrder(ModulePass):
    """Issue loads in order of first use, once a channel is free; wait just before first use.

    See the module docstring. Option `disable=name,...` switches patterns off."""

    name = "npu-dma-order"
    disable: tuple[str, ...] = field(default=())

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_disabled(self.name, self.disable, list(PATTERN_NAMES))
        facts = Facts()
        patterns: list[RewritePattern] = [FoldOneTripLoop(facts), SinkWait(facts), OrderLoads(facts, arch_of(op))]
        kept = [p for p in patterns if p.NAME not in self.disable]  # type: ignore[attr-defined]
        applier = GreedyRewritePatternApplier(kept, dce_enabled=False)
        OwnerWalker(applier, facts).rewrite_module(op)

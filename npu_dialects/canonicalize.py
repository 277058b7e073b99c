"""Peephole patterns on task bodies: the canonicalization patterns of `npu_dma.copy`
and `npu_dma.wait` (set on their ops' `HasCanonicalizationPatternsTrait` when this
module loads: they need the `npu_task` and `npu_compute` ops, which import
`npu_dma`; `npu_task.view`'s is in `task.py`). `npu-task-canonicalize` runs them.
Each declines when it does not match:
- `CollapseInvariantSlots`: a double-buffered load whose window does not move
  keeps one slot, loaded once before the loop (a loop that runs at least twice);
- `HoistInvariantLoad`: a loop-invariant DRAM->SRAM load moves before its loop
  (likewise);
- `MergeAdjacentCopies`: two back-to-back copies of adjacent windows become one;
- `RemoveRedundantWait`: a wait on a token already waited on every path goes;
- `FoldIdentityView`: a view with its source's type is its source.
The buffer facts they share (which SRAM bytes a buffer may name, which DRAM buffers
may share bytes, what an op reads and writes, loop trip counts) are helpers here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint
from xdsl.traits import RecursiveMemoryEffect, is_side_effect_free

from npu_dialects.compute import ComputeOp
from npu_dialects.dma import CopyCanonicalization, CopyOp, WaitCanonicalization, WaitOp, memory_space
from npu_dialects.task import AllocOp, FoldIdentityView, SramOp, TaskOp, ViewOp, byte_size, span

# --- what a buffer names ------------------------------------------------------------------


def sram_spans(v: SSAValue) -> list[tuple[int, int]] | None:
    """Byte ranges of the core's SRAM that buffer `v` may name: an `npu_task.sram`, a
    view of one, or a select between such; None when unknown."""
    op = v.owner
    if isinstance(op, SramOp):
        lo = op.offset.value.data
        return [(lo, lo + byte_size(op.result.type))]
    if isinstance(op, ViewOp):
        inner = sram_spans(op.source)
        size = byte_size(op.result.type)
        if op.index is not None:  # (any of its blocks: the source from the offset on)
            return None if inner is None else [(lo + op.byte_offset, hi) for lo, hi in inner]
        return None if inner is None else [(lo + op.byte_offset, lo + op.byte_offset + size) for lo, _ in inner]
    if isinstance(op, arith.SelectOp):
        a, b = sram_spans(op.lhs), sram_spans(op.rhs)
        return None if a is None or b is None else a + b
    return None


def reuse_group(root: SSAValue) -> set[SSAValue]:
    """A DRAM root and the allocs it takes the bytes of in place (`reuse`, transitively)."""
    out = {root}
    while isinstance(root.owner, AllocOp) and root.owner.reuse is not None and root.owner.reuse not in out:
        root = root.owner.reuse
        out.add(root)
    return out


def may_alias(a: SSAValue, b: SSAValue) -> bool:
    """Buffers `a` and `b` may share bytes (True when unsure)."""
    ta, tb = a.type, b.type
    if not isinstance(ta, MemRefType) or not isinstance(tb, MemRefType):
        return True
    space = memory_space(ta)
    if space != memory_space(tb):
        return space is None or memory_space(tb) is None
    if space == "sram":
        sa, sb = sram_spans(a), sram_spans(b)
        return sa is None or sb is None or any(x0 < y1 and y0 < x1 for x0, x1 in sa for y0, y1 in sb)
    (ra, la, ha), (rb, lb, hb) = span(a), span(b)
    if ra is rb:
        return la < hb and lb < ha
    return bool(reuse_group(ra) & reuse_group(rb))  # (memplan may give them the same bytes)


def is_scalar(op: Operation) -> bool:
    """An op on index/integer values only (arith index math): it touches no buffer, as
    every access in a task goes through a memref operand (xDSL gives divisions unknown
    effects, for their undefined behaviour on zero)."""
    return (not op.regions and op.dialect_name() == "arith"
            and not any(isinstance(v.type, MemRefType) for v in (*op.operands, *op.results)))


def effects(op: Operation) -> tuple[list[SSAValue], list[SSAValue]] | None:
    """(buffers read, buffers written) by `op` itself (a region op's body is walked
    separately); None when its effects are unknown."""
    if isinstance(op, CopyOp):
        return [op.src], [op.dst]
    if isinstance(op, ComputeOp):
        return list(op.operands), [op.operands[-1]]  # (an accumulating op reads its output too)
    if isinstance(op, (WaitOp, scf.YieldOp, TaskOp)) or op.has_trait(RecursiveMemoryEffect) \
            or is_side_effect_free(op) or is_scalar(op):
        return [], []
    return None


def writes_to(root: Operation, buf: SSAValue, skip: Sequence[Operation] = ()) -> bool:
    """Some op nested in `root` (`root` included, `skip` not) may write bytes of `buf`."""
    for op in root.walk():
        if any(op is s for s in skip):
            continue
        eff = effects(op)
        if eff is None or any(may_alias(w, buf) for w in eff[1]):
            return True
    return False


def touches(op: Operation, buf: SSAValue) -> bool:
    """`op` (not its regions) may read or write bytes of `buf`."""
    eff = effects(op)
    return eff is None or any(may_alias(b, buf) for b in eff[0] + eff[1])


# --- index values ---------------------------------------------------------------------------


def const_index(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def linear(v: SSAValue) -> tuple[SSAValue | None, int, int]:
    """`v` as base * mul + add over `arith.constant/muli/addi/subi` (base None: a constant)."""
    c = const_index(v)
    if c is not None:
        return None, 0, c
    op = v.owner
    if isinstance(op, (arith.MuliOp, arith.AddiOp)):
        for x, y in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            k = const_index(y)
            if k is not None:
                base, mul, add = linear(x)
                return (base, mul * k, add * k) if isinstance(op, arith.MuliOp) else (base, mul, add + k)
    if isinstance(op, arith.SubiOp) and (k := const_index(op.rhs)) is not None:
        base, mul, add = linear(op.lhs)
        return base, mul, add - k
    return v, 1, 0


def same_index(a: SSAValue, b: SSAValue) -> bool:
    return a is b or linear(a) == linear(b)


def task_of(op: Operation) -> TaskOp | None:
    p = op.parent_op()
    while p is not None and not isinstance(p, TaskOp):
        p = p.parent_op()
    return p


def runs_at_least_once(loop: scf.ForOp) -> bool:
    """The loop certainly iterates: constant bounds, or bounds `lo*c + a`, `hi*c + b` over
    its task's range arguments (lo < hi) with c + b > a."""
    step = const_index(loop.step)
    if step is None or step <= 0:
        return False
    (bl, ml, al), (bu, mu, au) = linear(loop.lb), linear(loop.ub)
    if bl is bu and ml == mu:
        return al < au
    task = task_of(loop)
    if task is None or ml != mu or ml < 1:
        return False
    lo, hi = task.body.block.args
    return bl is lo and bu is hi and ml + au - al > 0


def trip_count(loop: scf.ForOp) -> int | None:
    """Iterations of `loop` for its task's `range` (bounds constant or linear in the
    task's (lo, hi) arguments); None when unknown."""
    step, task = const_index(loop.step), task_of(loop)
    if step is None or step <= 0 or task is None:
        return None
    at: dict[SSAValue, int] = dict(zip(task.body.block.args, task.bounds))
    ends = []
    for v in (loop.lb, loop.ub):
        base, mul, add = linear(v)
        if base is not None and base not in at:
            return None
        ends.append(add + (mul * at[base] if base is not None else 0))
    return max(0, -(-(ends[1] - ends[0]) // step))


def reloads(loop: scf.ForOp) -> bool:
    """The loop runs at least twice: a load it repeats is loaded again at least once.
    (With one iteration there is nothing to save, and moving or dropping a load only
    reorders the DMAs: with DRAM bandwidth shared by the transfers in flight, a
    prefetch issued earlier slows the load the step waits for.)"""
    n = trip_count(loop)
    return n is not None and n >= 2


def defined_outside(v: SSAValue, loop: Operation) -> bool:
    owner = v.owner
    op = owner if isinstance(owner, Operation) else owner.parent_op()
    return op is not None and op is not loop and not loop.is_ancestor(op)


def is_load(op: CopyOp) -> bool:
    return memory_space(op.src.type) == "dram" and memory_space(op.dst.type) == "sram"


def same_window(a: CopyOp, b: CopyOp) -> bool:
    """Copies of the same source window to the same destination position."""
    return (a.src is b.src and a.window == b.window and a.pad_value == b.pad_value and a.clip == b.clip
            and a.src_clip == b.src_clip and all(same_index(x, y) for x, y in zip(a.src_offsets, b.src_offsets))
            and all(same_index(x, y) for x, y in zip(a.dst_offsets, b.dst_offsets)))


# --- patterns -------------------------------------------------------------------------------


class HoistInvariantLoad(RewritePattern):
    """A DRAM->SRAM copy in an `scf.for` body whose source, destination and offsets are
    defined outside the loop moves before the loop when the loop certainly iterates
    (for any range of the task) and runs at least twice for its current range,
    nothing else in the loop writes its destination (or bytes aliasing it) or its
    source, its token is only waited on, and no op before it in the body waits or
    touches its destination. The waits stay where they were: the first iteration
    waits for the load, later ones find it done."""

    NAME: ClassVar[str] = "hoist-invariant-load"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CopyOp, rewriter: PatternRewriter) -> None:
        loop = op.parent_op()
        if not isinstance(loop, scf.ForOp) or not is_load(op):
            return
        if not all(defined_outside(v, loop) for v in op.operands):
            return
        if not all(isinstance(u.operation, WaitOp) for u in op.token.uses):
            return
        if not runs_at_least_once(loop) or not reloads(loop) or not self.first_in_body(op):
            return
        if writes_to(loop, op.dst, skip=[op]) or writes_to(loop, op.src, skip=[op]):
            return
        hoisted = op.clone()
        rewriter.insert(hoisted, InsertPoint.before(loop))
        rewriter.replace(op, [], hoisted.results)

    @staticmethod
    def first_in_body(op: CopyOp) -> bool:
        """No op before `op` in the loop body waits, has regions or touches its destination."""
        prev = op.prev_op
        while prev is not None:
            if isinstance(prev, WaitOp) or prev.regions or touches(prev, op.dst):
                return False
            prev = prev.prev_op
        return True


class CollapseInvariantSlots(RewritePattern):
    """Double buffering of a window that does not move: the loop's copy into the next
    slot (`arith.select` of two `npu_task.sram` slots) loads the same source window as
    the prologue copy that fills the loop's first slot. When nothing else in the task
    writes either slot (or bytes aliasing them) or the source, the prologue's slot
    holds the window for the whole task: every select of the two slots becomes that
    slot, the loop's copy goes, and the loop carries the prologue's token unchanged
    (the in-loop waits on it stay: the first finds it landing, later ones done).
    The other slot is then dead. Only when the loop runs at least twice for the
    task's range (`reloads`): one iteration has one load to save, and dropping it
    lets the step's other prefetches start earlier, sharing DRAM bandwidth with the
    loads the first step waits for (inception_v1's n118 on one core: 200 cycles
    slower for 4.5 KB less)."""

    NAME: ClassVar[str] = "collapse-invariant-slots"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CopyOp, rewriter: PatternRewriter) -> None:
        loop, task = op.parent_op(), task_of(op)
        if not isinstance(loop, scf.ForOp) or task is None or not is_load(op) or not reloads(loop):
            return
        slots = self.slot_pair(op.dst)
        if slots is None or not all(defined_outside(v, loop) for v in (op.src, *op.src_offsets, *op.dst_offsets)):
            return
        uses = list(op.token.uses)
        if len(uses) != 1 or not isinstance(uses[0].operation, scf.YieldOp):
            return
        j = uses[0].index
        first = loop.iter_args[j].owner
        if (not isinstance(first, CopyOp) or first.parent_block() is not loop.parent_block()
                or not same_window(first, op) or not any(first.dst is s for s in slots)):
            return
        keep, other = (slots[0], slots[1]) if first.dst is slots[0] else (slots[1], slots[0])
        selects = [u.operation for u in other.uses]
        if not all(self.selects_between(s, keep, other) for s in selects):
            return
        if any(writes_to(task, s, skip=[op, first]) for s in slots) or writes_to(task, op.src):
            return
        for s in selects:
            rewriter.replace(s, [], [keep])
        drop_carried_token(rewriter, loop, j, op)

    @staticmethod
    def slot_pair(v: SSAValue) -> tuple[SSAValue, SSAValue] | None:
        """(a, b) when `v` is `arith.select %c, a, b` of two distinct `npu_task.sram` buffers."""
        sel = v.owner
        if not isinstance(sel, arith.SelectOp):
            return None
        a, b = sel.lhs, sel.rhs
        if a is b or not isinstance(a.owner, SramOp) or not isinstance(b.owner, SramOp):
            return None
        return a, b

    @classmethod
    def selects_between(cls, op: Operation, a: SSAValue, b: SSAValue) -> bool:
        """`op` is an `arith.select` of `a` and `b` (in either order)."""
        pair = cls.slot_pair(op.results[0]) if isinstance(op, arith.SelectOp) else None
        return pair is not None and {pair[0], pair[1]} == {a, b}


def drop_carried_token(rewriter: PatternRewriter, loop: scf.ForOp, j: int, copy: CopyOp) -> None:
    """Erase `copy` (whose token the loop yields as iter_arg j) and the iter_arg: its
    uses in the body and after the loop take the loop's initial token."""
    init = loop.iter_args[j]
    block: Block = loop.body.block
    term = block.last_op
    assert isinstance(term, scf.YieldOp)  # (the pattern matched the copy's use in it)
    rewriter.replace(term, scf.YieldOp(*[v for i, v in enumerate(term.operands) if i != j]))
    rewriter.erase(copy)
    rewriter.replace_all_uses_with(block.args[j + 1], init)
    rewriter.replace_all_uses_with(loop.results[j], init)
    rewriter.erase_block_argument(block.args[j + 1])
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [v for i, v in enumerate(loop.iter_args) if i != j],
                    rewriter.move_region_contents_to_new_regions(loop.body))
    new.location = loop.location
    results: list[SSAValue | None] = list(new.results)
    results.insert(j, None)
    rewriter.replace(loop, new, results)


class MergeAdjacentCopies(RewritePattern):
    """Two copies from the same source to the same destination buffer, with windows
    adjacent along one dim in both (equal elsewhere), the same padding and clipping,
    issued back to back (only side-effect-free ops between them, none using the first
    token), become one copy of the joined window where the second was; both tokens
    are its token (so their waits become one, see `RemoveRedundantWait`). Source and
    destination must not share bytes (an in-buffer shift reads what it writes)."""

    NAME: ClassVar[str] = "merge-adjacent-copies"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CopyOp, rewriter: PatternRewriter) -> None:
        first = self.previous_copy(op)
        if first is None or first.src is not op.src or first.dst is not op.dst or may_alias(op.src, op.dst):
            return
        if first.pad_value != op.pad_value or first.clip != op.clip or first.src_clip != op.src_clip:
            return
        joined = self.join(first, op) or self.join(op, first)
        if joined is None:
            return
        lo, sizes = joined
        dt = op.dst.type
        if isinstance(dt, MemRefType) and memory_space(dt) == "sram" and any(
                s > d for s, d in zip(sizes, dt.get_shape())):
            return  # (the joined window would not fit the buffer)
        pad = op.pad_value.value.data if op.pad_value is not None else None
        new = CopyOp(lo.src, lo.src_offsets, lo.dst, lo.dst_offsets, sizes, pad_value=pad, clip=op.clip is not None,
                     src_clip=op.src_clip is not None)
        new.location = first.location
        rewriter.replace(op, new)
        rewriter.replace(first, [], new.results)

    @staticmethod
    def previous_copy(op: CopyOp) -> CopyOp | None:
        """The copy issued just before `op`: only side-effect-free ops not using its token between."""
        prev = op.prev_op
        between: list[Operation] = []
        while prev is not None and not isinstance(prev, CopyOp):
            if not (is_scalar(prev) or is_side_effect_free(prev)):
                return None
            between.append(prev)
            prev = prev.prev_op
        if prev is None or any(u.operation in between for u in prev.token.uses):
            return None
        return prev

    @staticmethod
    def join(a: CopyOp, b: CopyOp) -> tuple[CopyOp, list[int]] | None:
        """(a, joined sizes) when b's window follows a's along one dim, in source and
        destination alike, and the windows agree elsewhere."""
        sa, sb = a.window, b.window
        dims = []
        for d in range(len(sa)):
            pairs = ((a.src_offsets[d], b.src_offsets[d]), (a.dst_offsets[d], b.dst_offsets[d]))
            if sa[d] == sb[d] and all(same_index(x, y) for x, y in pairs):
                continue
            (bx, mx, ax), (by, my, ay) = (linear(v) for v in pairs[0])
            (cx, nx, dx), (cy, ny, dy) = (linear(v) for v in pairs[1])
            if not (bx is by and mx == my and ay - ax == sa[d] and cx is cy and nx == ny and dy - dx == sa[d]):
                return None
            dims.append(d)
        if len(dims) != 1:
            return None
        sizes = list(sa)
        sizes[dims[0]] += sb[dims[0]]
        return a, sizes


class RemoveRedundantWait(RewritePattern):
    """A wait on a token that an earlier wait in the same block, or in an enclosing block
    before the op holding this one, has already waited on (so on every path) is erased.
    (The token is one SSA value: one DMA; waiting on a landed DMA does nothing.)"""

    NAME: ClassVar[str] = "remove-redundant-wait"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: WaitOp, rewriter: PatternRewriter) -> None:
        if task_of(op) is None:
            return
        cur: Operation | None = op
        while cur is not None and not isinstance(cur, TaskOp):
            prev = cur.prev_op
            while prev is not None:
                if isinstance(prev, WaitOp) and prev.token is op.token:
                    rewriter.erase(op)
                    return
                prev = prev.prev_op
            cur = cur.parent_op()


PATTERNS: tuple[type[RewritePattern], ...] = (CollapseInvariantSlots, HoistInvariantLoad, MergeAdjacentCopies,
                                               RemoveRedundantWait, FoldIdentityView)
"""Every canonicalization pattern of `npu_dma` and `npu_task`, in the order they are tried on an op."""

CopyCanonicalization.patterns = (CollapseInvariantSlots, HoistInvariantLoad, MergeAdjacentCopies)
WaitCanonicalization.patterns = (RemoveRedundantWait,)


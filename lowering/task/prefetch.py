"""`npu-prefetch`: a task that waits on events loads its weights while it waits.

A core reaches its next task when the previous one has drained; the task then
waits for its events (other cores' producers) before its body runs. Its weights
do not depend on them: no task writes a weight, and the core's SRAM is its own
once the previous task has finished. So the loads of weights that the task issues
before its first wait or compute run before its waits (`TaskOp.prefetch`: the
simulator issues the body's first `prefetch` ops, then takes the waits).

Assumes `npu-events` has run (a task's `waits` are final) and `npu-dma-order` has
put each task's first loads at the top of its body. Options: `reorder=false` only
marks the weight loads already leading the body (none move ahead of an activation
load).

Algorithm
---------
The prologue of a body is its leading run of scalar ops, SRAM buffers and loads
into SRAM (no wait, compute or loop among them: all those loads are in flight at
once, so their order only decides which DMA channel takes which first). In a task
with waits, the prologue becomes: its scalar ops and buffers (none reads a copy's
token), then its loads of weights (`prefetchable`), then its other loads, in their
order; `prefetch` counts the first two groups. A task without waits is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import takewhile

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from lowering.task.taskgraph import copy_ends
from lowering.task.walker import KindWalker
from npu_dialects.dma import CopyOp, memory_space
from npu_dialects.task import TaskOp, prefetchable


def prologue(ops: Iterable[Operation]) -> list[Operation]:
    """The leading scalar ops, SRAM buffers and copies into SRAM (from DRAM or SRAM) of a task body."""
    return list(takewhile(lambda op: prefetchable(op) or isinstance(op, CopyOp) and memory_space(copy_ends(op)[1].type) == "sram",
                          ops))


def lead_with(block: Block, head: list[Operation], first: list[Operation]) -> None:
    """Reorder the prologue `head` of `block`: `first`, then the rest of it in order."""
    after = head[-1].next_op
    for o in head:
        o.detach()
    for o in first + [o for o in head if o not in first]:
        if after is None:
            block.add_op(o)
        else:
            block.insert_op_before(o, after)


class PrefetchWeights(RewritePattern):
    """In a task with waits, the prologue's weight loads go first and run before the waits."""

    def __init__(self, reorder: bool):
        self.reorder = reorder

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TaskOp, rewriter: PatternRewriter) -> None:
        if not op.wait_slots or op.prefetch_ops:
            return
        head = prologue(op.body.block.ops)
        early = [prefetchable(o) for o in head]
        if self.reorder:
            first = [o for o, e in zip(head, early) if e and not isinstance(o, CopyOp)]
            first += [o for o, e in zip(head, early) if e and isinstance(o, CopyOp)]
        else:
            first = [o for o, _ in takewhile(lambda oe: oe[1], zip(head, early))]
        if not any(isinstance(o, CopyOp) for o in first):
            return  # no weight to prefetch
        lead_with(op.body.block, head, first)
        rewriter.handle_operation_modification(op)
        op.prefetch = IntegerAttr(len(first), i64)


@dataclass(frozen=True)
class Prefetch(ModulePass):
    """A task that waits on events loads its weights before its waits (`TaskOp.prefetch`).

    Assumes `npu-events` has run. In the prologue of such a task's body (its leading
    scalar ops, SRAM buffers and loads) the loads of weights move ahead of the other
    loads, and `prefetch` counts them with the scalar ops and buffers before them.
    Options: `reorder=false` marks only the weight loads already leading the body."""

    name = "npu-prefetch"
    reorder: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        KindWalker(PrefetchWeights(self.reorder), (TaskOp,), flat=(TaskOp,), apply_recursively=False).rewrite_module(op)

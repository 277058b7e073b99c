"""`KindWalker`: a greedy pattern walk that offers its patterns only the ops of some
kinds, for task-level passes whose patterns decline every other op (npu-dma-order's
tasks, loops and branches; npu-prefetch's tasks).

xDSL's walker puts every op of the module on its worklist and hands each to the
patterns in turn; a task-level module holds tens of thousands of ops (index math,
buffers, copies, waits), so most of such a pass's time went to offering them ops it
never rewrites. The worklist here keeps only ops of the kinds (`KindWorklist`), so the
patterns see the same ops in the same order and make the same rewrites; only
`--pattern-stats` tells the difference (a pattern counts as tried on those ops only).
Both fill the worklist by a recursion over blocks (`FastWalker`), not xDSL's nested
walk generators.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, Region
from xdsl.pattern_rewriter import RewritePattern
from xdsl.utils.worklist import Worklist

from lowering.instrument import PatternWalker


class KindWorklist(Worklist[Operation]):
    """A greedy walker's worklist that keeps only ops of `kinds`."""

    def __init__(self, kinds: tuple[type[Operation], ...]):
        super().__init__()
        self.kinds = kinds

    def push(self, item: Operation) -> None:
        if isinstance(item, self.kinds):
            super().push(item)


class FastWalker(PatternWalker):
    """`PatternWalker` filling its worklist without xDSL's nested walk generators (a
    recursion over blocks, the same ops in the same order). `flat`: kinds of ops the
    walk does not look inside."""

    def __init__(self, pattern: RewritePattern, flat: tuple[type[Operation], ...] = (),
                 apply_recursively: bool = True):
        super().__init__(pattern, apply_recursively=apply_recursively)
        self.flat = flat

    def listed(self, block: Block) -> list[Operation]:
        """The ops of `block` the walk pushes or looks inside, last first."""
        return list(reversed(block.ops))

    def _populate_worklist(self, op: Operation | Region | Block) -> None:
        """Push the ops as xDSL's walk (reversed, regions first) would."""
        push, flat = self._worklist.push, self.flat

        def visit(block: Block) -> None:
            for o in self.listed(block):
                if o.regions and not isinstance(o, flat):
                    for region in reversed(o.regions):
                        for b in reversed(region.blocks):
                            visit(b)
                push(o)

        if isinstance(op, Operation):
            for region in reversed(op.regions):
                for b in reversed(region.blocks):
                    visit(b)
            push(op)
        else:
            for b in reversed(op.blocks) if isinstance(op, Region) else [op]:
                visit(b)


class KindWalker(FastWalker):
    """`FastWalker` offering its pattern only ops of `kinds` (each must have regions,
    like a task or a loop: the walk looks for them only among ops with regions), in the
    order xDSL's walker would offer them. `flat`: kinds whose regions hold no op of the
    kinds."""

    def __init__(self, pattern: RewritePattern, kinds: tuple[type[Operation], ...],
                 flat: tuple[type[Operation], ...] = (), apply_recursively: bool = True):
        super().__init__(pattern, flat, apply_recursively)
        self._worklist = KindWorklist(kinds)

    def listed(self, block: Block) -> list[Operation]:
        return [o for o in reversed(block.ops) if o.regions]

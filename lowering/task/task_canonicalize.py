"""`npu-task-canonicalize`: peephole clean-ups of task bodies after `npu-bufferize`.

Runs the canonicalization patterns of the `npu_dma` and `npu_task` ops (their
`HasCanonicalizationPatternsTrait`; the patterns are in `npu_dialects/canonicalize.py`)
to a fixed point, and erases ops inside tasks that become dead (an unused double
buffer slot, its index math). xDSL's own arith/scf canonicalizations are not run:
the simulator interprets a fixed set of arith ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)
from xdsl.traits import HasCanonicalizationPatternsTrait
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from lowering.errors import check_disabled
from lowering.task.walker import FastWalker
from npu_dialects.canonicalize import PATTERNS, is_scalar
from npu_dialects.canonicalize import task_of as enclosing_task

DIALECTS = ("npu_dma.", "npu_task.")


class NpuCanonicalization(RewritePattern):
    """The canonicalization patterns of an `npu_dma`/`npu_task` op, less the disabled ones."""

    def __init__(self, disable: tuple[str, ...] = ()):
        self.disable = set(disable)
        self.patterns: dict[type[Operation], list[RewritePattern]] = {}

    def patterns_of(self, op: Operation) -> list[RewritePattern]:
        kind = type(op)
        if kind not in self.patterns:
            self.patterns[kind] = [p for t in op.get_traits_of_type(HasCanonicalizationPatternsTrait)
                                   for p in t.get_patterns(kind) if getattr(p, "NAME", None) not in self.disable]
        return self.patterns[kind]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not op.name.startswith(DIALECTS):
            return
        for pattern in self.patterns_of(op):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


class EraseDeadInTask(RewritePattern):
    """An op inside a task whose results are unused and that has no effects goes (index
    math included, which xDSL keeps when it divides)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not op.results or any(r.uses for r in op.results) or enclosing_task(op) is None:
            return
        if is_scalar(op) or is_trivially_dead(op):
            rewriter.erase(op)


@dataclass(frozen=True)
class TaskCanonicalize(ModulePass):
    """Peepholes in task bodies: invariant loads, adjacent copies, repeated waits, identity views.

    Collapses a double-buffered load whose window does not move to one slot, hoists
    loop-invariant loads out of tile loops, merges adjacent copies, drops waits on
    tokens already waited, folds identity views (see `npu_dialects/canonicalize.py`).

    Assumes the task-level form of `npu-bufferize`, best after `npu-schedule`: a task's
    `range` is then final, so the loop trip counts the patterns ask for are exact
    (before it they count the whole kernel). The patterns keep each task's DRAM reads
    and writes: `npu-events` and `npu-memplan` plan the same either way. Option
    `disable=name,...` switches patterns off by name (`hoist-invariant-load`,
    `collapse-invariant-slots`, `merge-adjacent-copies`, `remove-redundant-wait`,
    `fold-identity-view`)."""

    name = "npu-task-canonicalize"
    disable: tuple[str, ...] = field(default=())

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_disabled(self.name, self.disable, [p.NAME for p in PATTERNS])  # type: ignore[attr-defined]
        applier = GreedyRewritePatternApplier([EraseDeadInTask(), NpuCanonicalization(self.disable)],
                                              dce_enabled=False)
        for func in op.ops:
            if isinstance(func, FuncOp) and func.body.blocks:
                FastWalker(applier).rewrite_region(func.body)

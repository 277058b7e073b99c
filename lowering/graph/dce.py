"""`npu-dce`: graph-level dead-code elimination.

Removes every op whose results are all unused and that has no memory effects
(every `npu_graph` op: they are `NoMemoryEffect`), repeatedly, so whole dead
chains go - e.g. the constants a folding pass left behind, a branch of the graph
that no output needs, unused ops inside an `npu_graph.fused` body, or a fused
kernel none of whose results is used. Ops with memory effects (DMA, compute,
task ops) or unknown effects, terminators and functions are kept, so the pass is
also safe on lowered IR. Function arguments are never removed (they are the
model's inputs).

Delegates to xDSL's liveness-based `region_dce` (`xdsl.transforms.
dead_code_elimination`), which handles nested regions. No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import region_dce


@dataclass(frozen=True)
class Dce(ModulePass):
    """Remove graph ops (and other effect-free ops) whose results are unused.

    Assumes nothing beyond correct memory-effect traits. No options."""

    name = "npu-dce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        region_dce(op.body)

"""`npu-cse`: graph-level common-subexpression elimination.

Two effect-free ops in the same block with the same name, operands, attributes,
properties, result types and (structurally equal) regions compute the same
values: the later one is removed and its users take the earlier one's results.
That covers `npu_graph.constant`s naming the same weight or holding the same
inline value, the same op applied twice to the same values, and identical
`npu_graph.fused` kernels. The surviving op's location gains the removed op's
ONNX node names (`loc(fused["a", "b"])`), so diagnostics and profiles still
name both nodes. Ops with memory effects or unknown effects and terminators are
never merged (assumes correct memory-effect traits). No options.

Algorithm
---------
Walks blocks in order (an op is compared only with earlier ops of its own block;
a nested block, such as a fused body, is its own scope). Equality is xDSL's
(`xdsl.transforms.common_subexpression_elimination.KnownOps`); weights with
different keys are not compared by content.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import IsTerminator, is_side_effect_free
from xdsl.transforms.common_subexpression_elimination import KnownOps

from npu_dialects.locs import fused_loc, loc_names


def _candidate(op: Operation) -> bool:
    return (not op.has_trait(IsTerminator)
            and all(len(r.blocks) <= 1 for r in op.regions)
            and is_side_effect_free(op))


def cse_block(block: Block) -> int:
    """Merge duplicate ops in `block` (and, separately, in its nested blocks); returns
    how many ops were removed."""
    known = KnownOps()
    removed = 0
    for op in list(block.ops):
        for region in op.regions:
            for inner in region.blocks:
                removed += cse_block(inner)
        if not _candidate(op):
            continue
        existing = known.get(op)
        if existing is None:
            known[op] = op
            continue
        existing.location = fused_loc(loc_names(existing.location) + loc_names(op.location))
        for old, new in zip(op.results, existing.results):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)
        removed += 1
    return removed


@dataclass(frozen=True)
class Cse(ModulePass):
    """Merge identical effect-free ops (same op, operands and attributes), keeping both locations.

    Assumes correct memory-effect traits. No options."""

    name = "npu-cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        cse_block(op.body.block)

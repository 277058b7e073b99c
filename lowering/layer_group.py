"""`npu-layer-group`: merge runs of consecutive tiled kernels into layer groups
whose intermediate tensors stay in one core's SRAM instead of round-tripping DRAM.

Assumes `npu-tile` has run (every non-constant op of a function body is an
`npu_tile.kernel` with `predicted_cycles`). A layer group is an
`npu_tile.kernel` of kind `group` (no loops) holding the graph ops of its
members; bufferization runs each op once on whole SRAM-resident tensors, loads
only the group's inputs (weights stream in while earlier ops compute, see
`lowering/groups.py`) and stores only the values used after the group.

Which runs become groups is a dynamic program over the kernels in program order:
a run of two or more kernels is grouped when every buffer it needs fits
`sram_bytes` at once (first fit over lifetimes within the group) and the cost
model predicts the group faster than its members one by one (the sum of their
`predicted_cycles`). A group runs on one core; kernels split over several cores
stay separate unless the group still wins. Nothing is reordered: every op
computes exactly what it did alone, so numerics are unchanged.

Options: `max-kernels` (default 128) bounds a group's length (and the search).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from npu_dialects.arch import Arch, arch_of
from npu_dialects.graph import ConstantOp
from npu_dialects.locs import fused_loc, node_names
from npu_dialects.tile import KernelOp, TileYieldOp
from lowering.errors import CompileError
from lowering.groups import op_cycles, plan_group


def _single_cost(k: KernelOp) -> int:
    return k.predicted_cycles.value.data if k.predicted_cycles is not None else 0


def run_outputs(run: list[KernelOp]) -> list[SSAValue]:
    """Results of the run's kernels used after it (or returned)."""
    inside = set(run)
    outs = []
    for k in run:
        for r in k.outs:
            if any(u.operation not in inside for u in r.uses):
                outs.append(r)
    return outs


def inner_ops(run: list[KernelOp]) -> tuple[list[Operation], dict[SSAValue, SSAValue], dict[SSAValue, SSAValue]]:
    """The members' graph ops in order (not cloned: for planning only), the map from
    each kernel result to the inner value it yields, and `canon`: each member's block
    argument -> the inner value it stands for, or the outer value (a group input)."""
    yielded: dict[SSAValue, SSAValue] = {}
    canon: dict[SSAValue, SSAValue] = {}
    ops: list[Operation] = []
    for k in run:
        for a, v in zip(k.body.block.args, k.ins):
            canon[a] = yielded.get(v, v)
        ops.extend(k.graph_ops())
        term = k.body.block.last_op
        assert isinstance(term, TileYieldOp)
        yielded.update(zip(k.outs, term.values))
    return ops, yielded, canon


@dataclass(frozen=True)
class LayerGroup(ModulePass):
    """Group consecutive kernels whose tensors fit SRAM together when the cost model says it pays."""

    name = "npu-layer-group"
    max_kernels: int = 128

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.max_kernels < 2:
            raise CompileError(self.name, f"max-kernels must be at least 2, got {self.max_kernels}")
        arch = arch_of(op)
        for func in op.ops:
            if isinstance(func, FuncOp) and func.body.blocks:
                self.group_function(func, arch)

    def group_function(self, func: FuncOp, arch: Arch) -> None:
        kernels = [o for o in func.body.block.ops if isinstance(o, KernelOp)]
        for o in func.body.block.ops:
            if not isinstance(o, (KernelOp, ConstantOp)) and o is not func.body.block.last_op:
                raise CompileError(self.name, "expected only npu_tile.kernel and constants (run npu-tile first)", o)
        n = len(kernels)
        costs: list[list[int] | None] = []
        for k in kernels:
            cs = [op_cycles(g, arch) for g in k.graph_ops()]
            costs.append(None if any(c is None for c in cs) else cs)  # type: ignore[arg-type]
        best = [0] * (n + 1)
        choice = [0] * (n + 1)  # start of the last segment
        plans: dict[tuple[int, int], object] = {}
        for i in range(1, n + 1):
            best[i] = best[i - 1] + _single_cost(kernels[i - 1])
            choice[i] = i - 1
            singles = _single_cost(kernels[i - 1])
            for j in range(i - 2, max(-1, i - 1 - self.max_kernels), -1):
                if costs[j] is None:
                    break
                singles += _single_cost(kernels[j])
                if costs[i - 1] is None:
                    break
                run = kernels[j:i]
                ops, yielded, canon = inner_ops(run)
                outs = [yielded[v] for v in run_outputs(run)]
                flat = [c for cs in costs[j:i] for c in cs]  # type: ignore[union-attr]
                plan = plan_group(ops, outs, arch, flat, canon)
                if plan is None:
                    break  # longer runs only need more SRAM
                if plan.cycles < singles and best[j] + plan.cycles < best[i]:
                    best[i] = best[j] + plan.cycles
                    choice[i] = j
                    plans[(j, i)] = plan
        segments = []
        i = n
        while i > 0:
            j = choice[i]
            if i - j >= 2:
                segments.append((j, i))
            i = j
        for j, i in segments:
            self.rewrite(kernels[j:i], plans[(j, i)])

    def rewrite(self, run: list[KernelOp], plan) -> None:
        outs = run_outputs(run)
        inside = set(run)
        ins: list[SSAValue] = []
        for k in run:
            for v in k.ins:
                if v.owner not in inside and v not in ins:
                    ins.append(v)
        block = Block(arg_types=[v.type for v in ins])
        mapping: dict[SSAValue, SSAValue] = dict(zip(ins, block.args))
        for k in run:
            inner = dict(zip(k.body.block.args, [mapping[v] for v in k.ins]))
            for g in k.graph_ops():
                c = g.clone(value_mapper=inner)
                block.add_op(c)
                inner.update(zip(g.results, c.results))
            term = k.body.block.last_op
            assert isinstance(term, TileYieldOp)
            mapping.update(zip(k.outs, [inner[v] for v in term.values]))
        block.add_op(TileYieldOp(*[mapping[v] for v in outs]))
        names = [k.kernel.data for k in run]
        group = KernelOp(f"{names[0]}..{names[-1]}", ins, [v.type for v in outs], Region(block), kind="group",
                         loops=[], tile=[], grid=[], double_buffer=False, sram_bytes=plan.sram_bytes,
                         predicted_cycles=plan.cycles, dram_bytes=plan.dram_bytes, parts=1)
        group.location = fused_loc(n for k in run for n in node_names(k))
        Rewriter.insert_op(group, InsertPoint.before(run[-1]))  # every input (constants too) is defined by then
        for old, new in zip(outs, group.outs):
            old.replace_all_uses_with(new)
        for k in reversed(run):
            Rewriter.erase_op(k)

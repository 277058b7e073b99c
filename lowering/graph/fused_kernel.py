"""One `npu_graph.fused` kernel from a chain of graph ops (`fuse_chain`): what npu-fuse's
rules and PDL patterns' `npu.fuse` (`lowering/patterns/native.py`) both do once they
chose the ops. The chain's ops move into the kernel's body, their readers read its
results, and ops that read an early output of the chain move after it.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from lowering.remarks import remark
from npu_dialects.graph import FusedOp, YieldOp
from npu_dialects.locs import fused_loc, node_names


def fuse_chain(chain: list[Operation], rule: str, rewriter: PatternRewriter, pass_name: str = "npu-fuse",
               outs: list[SSAValue] | None = None, kernel: str | None = None, message: str | None = None) -> FusedOp:
    """Replace `chain` (in program order, each op's operands defined before it) by one
    fused op returning `outs` (default: the last op's result), named `kernel` (default:
    the first ONNX node), with a remark `message` (default: the ops) of `pass_name`."""
    inside = {r for op in chain for r in op.results}
    ins: list[SSAValue] = []
    for op in chain:
        for o in op.operands:
            if o not in inside and o not in ins:
                ins.append(o)
    block = Block(arg_types=[v.type for v in ins])
    mapping: dict[SSAValue, SSAValue] = dict(zip(ins, block.args))
    for op in chain:
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        for old, new in zip(op.results, clone.results):
            mapping[old] = new
    last = chain[-1]
    outs = outs or [last.results[0]]
    block.add_op(YieldOp(*(mapping[v] for v in outs)))
    names = [n for op in chain for n in node_names(op)]
    remark(pass_name, "applied", names, message or f"{rule}: {len(chain)} ops ("
           f"{', '.join(o.name.split('.')[-1] for o in chain)}) as one kernel")
    fused = FusedOp(ins, [v.type for v in outs], Region(block),
                    kernel=kernel or (names[0] if names else chain[0].name), rule=rule)
    fused.location = fused_loc(names)
    rewriter.insert(fused, InsertPoint.before(last))
    for old, new in zip(outs, fused.results):
        old.replace_all_uses_with(new)
    before = chain[0].prev_op  # (not in the chain: it stays)
    for op in reversed(chain):
        rewriter.erase(op)
    move_readers_after(fused, before, rewriter)
    return fused


def move_readers_after(fused: FusedOp, before: Operation | None, rewriter: PatternRewriter) -> None:
    """Ops between the chain's first op (after `before`) and `fused` that read its
    results (an early output of the chain - kv-append's present cache - read by a cast
    placed before the chain's last op), and their readers in turn, move right after it,
    in order. Only that span is scanned: no other op can read an output of the chain."""
    block = fused.parent_block()
    assert block is not None
    reached, moved = set(fused.results), []
    op = before.next_op if before is not None else block.first_op
    while op is not None and op is not fused:
        if any(v in reached for v in op.operands):
            reached.update(op.results)
            moved.append(op)
        op = op.next_op
    anchor: Operation = fused
    for op in moved:
        op.detach()
        rewriter.insert(op, InsertPoint.after(anchor))
        anchor = op

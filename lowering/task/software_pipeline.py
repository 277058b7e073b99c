"""`npu-software-pipeline`: a tile loop stores step j after step j+1's cube work is issued.

With concurrent units (`units = concurrent`) the core issues a compute op and goes
on; what stops it is a fence to `dma`: before a step's store it waits until the
vector unit has finished that step's epilogue, so step j+1's matmul or conv is
issued only then and the cube idles while the vector unit works. This pass rotates
a tile loop's store by one step, so that step j+1's cube work runs while step j's
vector work does (double-buffered accumulators: the bufferizer's ping and pong).
Outputs are unchanged: the same ops on the same data, only the issue order moves.

Assumes npu-bufferize's loop form (see Algorithm); runs after npu-early-load (the
task's `handoff` stays after the same op) and before npu-unit-sync. Does nothing on
`units = serial` or to a loop with no cube op before its store. No options.

Algorithm
---------
A loop qualifies when the token it yields at position k is an `npu_dma.copy` in its
body from an SRAM `arith.select` of two buffers defined outside it to DRAM, the
(two buffers without a common byte), iter_arg k is awaited once in the body (after the first compute op writing that
select) and the loop's result k once after it, and a compute op after the loop
writes a select of the same two buffers (the peeled last step). Then iteration j
waits for iter_arg k (the store of step j-2) before that first writer, and, at its
end, stores step j-1 under `scf.if iv != lb` (else yields iter_arg k); the loop
carries the store's in-body operands (source buffer, offsets; initially the
select's first buffer and 0). After the loop the peeled step waits for result k
before its first writer, and the loop's last step is stored (under `scf.if lb <
ub`) just before the wait for result k, which then waits for that store.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from lowering.task.early_load import extent
from lowering.task.taskgraph import task_ops
from npu_dialects.arch import Arch, arch_of
from npu_dialects.compute import ComputeOp
from npu_dialects.dma import CopyOp, TokenType, WaitOp, memory_space
from npu_dialects.task import SramOp, TaskOp


@dataclass
class Rotation:
    """What a loop's store rotation moves (`match`)."""

    loop: scf.ForOp
    k: int  # the yielded token's position
    store: CopyOp
    wait: WaitOp  # the body's wait for the previous store
    first_writer: ComputeOp  # the body's first compute op writing the store's source
    after_wait: WaitOp  # the wait for the loop's store token after the loop
    tail_writer: ComputeOp  # the first compute op after the loop writing that wait's store's source


def _defined_in(v: SSAValue, block: Block) -> bool:
    owner = v.owner
    return owner is block if isinstance(owner, Block) else owner.parent_block() is block


def _apart(a: SSAValue, b: SSAValue) -> bool:
    """Two SRAM buffers with no byte in common (a ping and its pong)."""
    x, y = a.owner, b.owner
    if not (isinstance(x, SramOp) and isinstance(y, SramOp)) or x is y:
        return False
    (x0, x1), (y0, y1) = extent(x, {}), extent(y, {})
    return x1 <= y0 or y1 <= x0


def _writes(op: Operation, v: SSAValue) -> bool:
    return isinstance(op, ComputeOp) and op.operands[-1] is v


def _same_pair(a: SSAValue, b: SSAValue) -> bool:
    """Two selects of the same two buffers (the body's and the peeled step's ping-pong)."""
    x, y = a.owner, b.owner
    return (isinstance(x, arith.SelectOp) and isinstance(y, arith.SelectOp)
            and {x.lhs, x.rhs} == {y.lhs, y.rhs})


def match(loop: scf.ForOp, arch: Arch) -> Rotation | None:
    """The rotation of `loop`'s store (None: the loop does not have the form; see module)."""
    body = loop.body.block
    yield_op = body.last_op
    if not isinstance(yield_op, scf.YieldOp):
        return None
    for k, v in enumerate(yield_op.operands):
        store = v.owner
        if not (isinstance(v.type, TokenType) and isinstance(store, CopyOp) and store.parent_block() is body):
            continue
        src, dst = store.operands[0], store.operands[1]
        if memory_space(src.type) != "sram" or memory_space(dst.type) != "dram":  # pyright: ignore[reportArgumentType]
            continue
        sel = src.owner
        if not (isinstance(sel, arith.SelectOp) and not _defined_in(sel.lhs, body)
                and not _defined_in(sel.rhs, body) and _apart(sel.lhs, sel.rhs)):
            continue
        arg = body.args[k + 1]
        waits = [u.operation for u in arg.uses]
        if len(waits) != 1 or not isinstance(waits[0], WaitOp) or waits[0].parent_block() is not body:
            continue
        ops = list(body.ops)
        writers = [o for o in ops if isinstance(o, ComputeOp) and _writes(o, src)]
        cubes = [o for o in ops[:ops.index(store)] if isinstance(o, ComputeOp) and o.unit(arch) == "cube"]
        if not writers or not cubes or ops.index(waits[0]) < ops.index(writers[0]):
            continue
        res = loop.results[k]
        after = [u.operation for u in res.uses]
        if len(after) != 1 or not isinstance(after[0], WaitOp) or after[0].parent_block() is not loop.parent_block():
            continue
        rest = _ops_after(loop)
        tail = [o for o in rest if isinstance(o, ComputeOp) and _same_pair(o.operands[-1], src)]
        if not tail or rest.index(tail[0]) > rest.index(after[0]):
            continue
        return Rotation(loop, k, store, waits[0], writers[0], after[0], tail[0])
    return None


def _ops_after(op: Operation) -> list[Operation]:
    out = []
    nxt = op.next_op
    while nxt is not None:
        out.append(nxt)
        nxt = nxt.next_op
    return out


def _guarded_copy(cond: SSAValue, store: CopyOp, operands: list[SSAValue], otherwise: SSAValue) -> scf.IfOp:
    """`scf.if cond -> token { copy as `store` on `operands` } else { otherwise }`."""
    copy = store.clone()
    copy.operands = operands
    then = Block([copy, scf.YieldOp(copy.results[0])])
    return scf.IfOp(cond, [TokenType()], [then], [Block([scf.YieldOp(otherwise)])])


def rotate(r: Rotation) -> None:
    """Rotate the store of `r.loop` by one step (see module docstring)."""
    loop, store, body = r.loop, r.store, r.loop.body.block
    parent = loop.parent_block()
    assert parent is not None
    inside = [i for i, v in enumerate(store.operands) if _defined_in(v, body)]
    sel = store.operands[0].owner
    assert isinstance(sel, arith.SelectOp)
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    parent.insert_op_before(zero, loop)
    inits = [sel.lhs if i == 0 else zero.result for i in inside]
    # the body waits for step j-2's store before it overwrites that store's bytes
    r.wait.detach()
    body.insert_op_before(r.wait, r.first_writer)
    # the new loop: the store's in-body operands carried one step
    new_args = [body.insert_arg(store.operands[i].type, len(body.args)) for i in inside]
    values = [store.operands[i] for i in inside]
    yield_op = body.last_op
    assert isinstance(yield_op, scf.YieldOp)
    first = arith.CmpiOp(body.args[0], loop.lb, "ne")
    operands = list(store.operands)
    for i, a in zip(inside, new_args):
        operands[i] = a
    prev_tok = body.args[r.k + 1]
    guarded = _guarded_copy(first.result, store, operands, prev_tok)
    body.insert_op_before(first, yield_op)
    body.insert_op_before(guarded, yield_op)
    new_yield = scf.YieldOp(*[guarded.results[0] if i == r.k else v for i, v in enumerate(yield_op.operands)],
                            *values)
    body.insert_op_before(new_yield, yield_op)
    body.erase_op(yield_op)
    body.erase_op(store)
    region = loop.detach_region(loop.body)
    new_loop = scf.ForOp(loop.lb, loop.ub, loop.step, [*loop.iter_args, *inits], region)
    parent.insert_op_before(new_loop, loop)
    n = len(loop.results)
    for old, new in zip(loop.results, new_loop.results[:n]):
        old.replace_all_uses_with(new)
    parent.erase_op(loop)
    # after the loop: the peeled step waits for the store of the step before the loop's
    # last, computes, then the loop's last step is stored
    res_tok = new_loop.results[r.k]
    parent.insert_op_before(WaitOp(res_tok), r.tail_writer)
    ran = arith.CmpiOp(new_loop.lb, new_loop.ub, "slt")
    last = list(store.operands)
    for i, v in zip(inside, new_loop.results[n:]):
        last[i] = v
    final = _guarded_copy(ran.result, store, last, res_tok)
    parent.insert_op_before(ran, r.after_wait)
    parent.insert_op_before(final, r.after_wait)
    r.after_wait.operands = [final.results[0]]


def pipeline_task(task: TaskOp, arch: Arch) -> int:
    """Rotate every matching loop at the top of `task`'s body; the number rotated. The
    task's `handoff` stays after the same op."""
    body = task.body.block
    ops = list(body.ops)
    anchor = ops[task.handoff.value.data - 1] if task.handoff is not None and task.handoff.value.data > 0 else None
    n = 0
    for op in ops:
        if isinstance(op, scf.ForOp) and (r := match(op, arch)) is not None:
            if anchor is op:
                return n  # (the handoff is the loop itself: left alone)
            rotate(r)
            n += 1
    if n and anchor is not None:
        task.handoff = IntegerAttr(list(body.ops).index(anchor) + 1, task.handoff.type)  # pyright: ignore[reportOptionalMemberAccess]
    return n


def software_pipeline(module: ModuleOp) -> int:
    arch = arch_of(module)
    if arch.units != "concurrent":
        return 0
    return sum(pipeline_task(op, arch) for op in task_ops(module))


@dataclass(frozen=True)
class SoftwarePipeline(ModulePass):
    """A tile loop stores step j after step j+1's cube work (see module docstring).

    Assumes npu-bufferize's loop form; runs before npu-unit-sync. No options."""

    name = "npu-software-pipeline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        software_pipeline(op)

"""Batch-split layer groups: a layer group whose ops compute each sample of a batch
on its own is computed on slices of `b` samples, so its work spreads over the cores
and a slice's tensors fit SRAM where the whole batch's do not (a batched LeNet).

A batch-split group is an `npu_tile.kernel` of kind `group` with loops ["n"], tile
[b] and grid [N / b]; its body keeps the whole-batch graph ops (what it computes),
its `#npu_tile.group` plan places the values of one slice (`slice_ops`), and each
slice loads its rows of every batched input and every weight, computes, and stores
its rows of every result (a task runs its slices in turn).

Algorithm
---------
Batched values: the group's inputs that are not constants, with the batch N as dim
0, and every result of an op reading a batched value. The group is separable when
every op reading a batched value keeps dim 0 as the batch and mixes no samples: a
conv, pool, elementwise op (whose other operands broadcast over dim 0), gemm or
matmul reading a batched left operand only (no transposed A), a reshape keeping
dim 0, a transpose keeping dim 0 first, a concat of batched values or a softmax
along another axis, an LRN, an inference BatchNorm (a gemm's bias broadcast over
the rows); every batched value has dim 0 = N and every result the group stores is
batched. `slice_ops` clones the ops with dim 0 of every batched
value set to b (reshapes follow their result type; loads load b rows), in order,
so a plan of the clones places the values of the whole-batch body one for one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue

from lowering.tile.tile_search import TilingError
from npu_dialects.arch import Arch
from npu_dialects.dtypes import element_type
from npu_dialects.graph import (
    BatchNormOp,
    ConcatOp,
    ConstantOp,
    Conv2dOp,
    ElementwiseOp,
    ExpandOp,
    GemmOp,
    LrnOp,
    MatMulOp,
    MaxPoolOp,
    ReshapeOp,
    SoftmaxOp,
    TransposeOp,
    WindowPoolOp,
    attr_int,
    ints,
    shape_of,
)
from npu_dialects.tile import KernelOp, LoadOp, TileYieldOp

LOOP = "n"
"""The loop name of a batch-split group."""


def keeps_samples(op: Operation, ins: Sequence[bool]) -> bool:
    """Op `op`, reading a batched value at the operands `ins` flags, computes each sample
    of dim 0 on its own."""
    if isinstance(op, (Conv2dOp, MaxPoolOp, WindowPoolOp, BatchNormOp, LrnOp)):
        return ins[0] and not any(ins[1:])
    if isinstance(op, (GemmOp, MatMulOp)):
        ta = isinstance(op, GemmOp) and op.params["trans_a"]
        c_rows = all(len(s := shape_of(v)) < 2 or s[0] == 1 for v in op.operands[2:])  # (a bias per row would mix)
        return ins[0] and not any(ins[1:]) and not ta and len(shape_of(op.operands[1])) == 2 and c_rows
    if isinstance(op, ElementwiseOp) and not isinstance(op, ExpandOp):
        rank = len(shape_of(op.results[0]))
        return all(b or len(s := shape_of(v)) < rank or s[0] == 1 for v, b in zip(op.operands, ins))
    if isinstance(op, (ReshapeOp, LoadOp)):
        return True  # (dim 0 stays N: checked on the result; a group's load is whole)
    if isinstance(op, TransposeOp):
        return ints(op.perm, ())[0] == 0
    if isinstance(op, ConcatOp):  # (every operand sliced alike)
        return all(ins) and attr_int(dict(op.attributes), "axis", 0) % len(shape_of(op.results[0])) != 0
    if isinstance(op, SoftmaxOp):
        return op.norm_axis() != 0
    return False


def batched_values(ops: Sequence[Operation], inputs: Sequence[SSAValue],
                   operands: Callable[[Operation], Sequence[SSAValue]] = lambda o: o.operands
                   ) -> tuple[set[SSAValue], int] | None:
    """(the batched values, N) of `ops` over batched `inputs` (read through `operands`),
    or None when they are not separable (see the module docstring) or N < 2."""
    if not inputs:
        return None
    n = shape_of(inputs[0])[0] if shape_of(inputs[0]) else 0
    batched = set(inputs)
    if n < 2 or any(not shape_of(v) or shape_of(v)[0] != n for v in inputs):
        return None
    for op in ops:
        ins = [v in batched for v in operands(op)]
        if not any(ins):
            continue
        if len(op.results) != 1 or not keeps_samples(op, ins) or shape_of(op.results[0])[:1] != (n,):
            return None
        batched.add(op.results[0])
    return batched, n


def slice_ops(ops: Sequence[Operation], batched: set[SSAValue], b: int, operands: dict[SSAValue, SSAValue],
              canon: dict[SSAValue, SSAValue] | None = None) -> list[Operation]:
    """Clones of `ops` (in order, in no block) computing b of the samples: every
    batched value gets dim 0 = b. `operands` maps each value read from outside `ops`
    (renamed by `canon` first) to its value in the clones (a batched one to one of b
    rows); it is extended with every op result -> its clone's."""
    canon = canon or {}
    out: list[Operation] = []
    for op in ops:
        ins = [operands.get(canon.get(v, v), canon.get(v, v)) for v in op.operands]
        types = [TensorType(element_type(r), [b, *shape_of(r)[1:]]) if r in batched else r.type for r in op.results]
        if isinstance(op, LoadOp):
            s = shape_of(op.tile)
            size = [b, *s[1:]] if op.tile in batched else list(s)
            new: Operation = LoadOp(ins[0], [], None, [], [0] * len(s), size, None)
        else:
            new = type(op).create(operands=ins, result_types=types, properties=dict(op.properties),
                                  attributes=dict(op.attributes))
        new.location = op.location
        out.append(new)
        operands.update(zip(op.results, new.results))
    return out


def slice_inputs(values: Sequence[SSAValue], b: int) -> dict[SSAValue, SSAValue]:
    """Each batched input -> a stand-in for b of its rows (a block argument), for `slice_ops`."""
    block = Block(arg_types=[TensorType(element_type(v), [b, *shape_of(v)[1:]]) for v in values])
    return dict(zip(values, block.args))


def slice_arch(arch: Arch, slices: int) -> Arch:
    """The arch a slice is planned on: `dram_bw` shared by the min(slices, cores) cores
    running slices at once."""
    return replace(arch, dram_bw=max(1, arch.dram_bw // min(slices, arch.cores)))


def kernel_batch(kernel: KernelOp, ops: Sequence[Operation]) -> tuple[list[SSAValue], set[SSAValue]]:
    """Batch-split group `kernel`'s batched block arguments (its inputs that are not
    constants) and the batched values of its body `ops`; TilingError when they do not
    keep the samples apart or its slices do not cover the batch."""
    (b,), (k,) = kernel.tile_sizes, kernel.trip_counts
    ins: list[SSAValue] = [a for a, v in zip(kernel.body.block.args, kernel.ins) if not isinstance(v.owner, ConstantOp)]
    found = batched_values(ops, ins)
    if found is None or b * k != found[1]:
        raise TilingError(f"a batch-split group of {k} slices of {b} whose ops do not keep the samples of its "
                          "batched inputs apart")
    return ins, found[0]


def slice_group(kernel: KernelOp, arch: Arch
                ) -> tuple[list[Operation], list[SSAValue], dict[SSAValue, SSAValue], Arch]:
    """Batch-split group `kernel`'s body on one slice: the clones of its ops (loads
    included, `slice_ops`), of its yielded values, the map from body values to the
    slice's, and the arch a slice is planned on (`slice_arch`)."""
    ops = [o for o in kernel.body.block.ops if not isinstance(o, TileYieldOp)]
    ins, batched = kernel_batch(kernel, ops)
    (b,), (k,) = kernel.tile_sizes, kernel.trip_counts
    operands = slice_inputs(ins, b)
    sliced = slice_ops(ops, batched, b, operands)
    return sliced, [operands[v] for v in kernel.yield_op.values], operands, slice_arch(arch, k)


def discard(ops: Sequence[Operation]) -> None:
    """Drop the clones `slice_ops` made for planning (their uses of the values outside
    them go too: a weight's uses decide whether a group may pack it)."""
    for op in ops:
        op.drop_all_references()
    for op in ops:
        op.erase(safe_erase=False)

"""Work a graph-level module needs, independent of how it is compiled: the MACs
of its cube ops and the fewest DRAM bytes any schedule must move (every weight
and model input read once, every output written once). The roofline bound of
a machine is max(MACs / (cores x cube MACs per cycle), bytes / dram_bw).

`kernel_bytes` is a second, higher floor for schedules that keep the fused
kernels of `npu-fuse` apart: every kernel reads each operand once and writes
each result once, so every intermediate crosses DRAM twice. Only layer groups
(intermediates kept in SRAM) move fewer bytes than it."""

from __future__ import annotations

from math import ceil, prod

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp, ReturnOp

from npu_dialects.arch import Arch
from npu_dialects.graph import ConcatOp, ConstantOp, Conv2dOp, GemmOp, MatMulOp, ReshapeOp, shape_of

MACS_ATTR = "npu.model_macs"
BYTES_ATTR = "npu.model_min_bytes"
KERNEL_BYTES_ATTR = "npu.kernel_min_bytes"


def op_macs(op) -> int:
    if isinstance(op, Conv2dOp):
        n, co, oh, ow = shape_of(op.result)
        _, cig, kh, kw = shape_of(op.weight)
        return n * co * oh * ow * cig * kh * kw
    if isinstance(op, GemmOp):
        m, k, n = op.mkn()
        return m * k * n
    if isinstance(op, MatMulOp):
        a = shape_of(op.a)
        return prod(shape_of(op.result)) * a[-1]
    return 0


def model_work(module: ModuleOp) -> tuple[int, int]:
    """(MACs, minimum DRAM bytes) of the graph-level functions of `module`."""
    macs = nbytes = 0
    for func in module.ops:
        if not isinstance(func, FuncOp) or not func.body.blocks:
            continue
        block = func.body.block
        nbytes += sum(prod(shape_of(a)) * 4 for a in block.args)
        for op in func.walk():
            macs += op_macs(op)
            if isinstance(op, ConstantOp) and op.weight is not None:
                nbytes += prod(shape_of(op.result)) * 4
            if isinstance(op, ReturnOp) and op.parent_op() is func:
                nbytes += sum(prod(shape_of(v)) * 4 for v in op.operands)
    return macs, nbytes


def kernel_bytes(module: ModuleOp) -> int:
    """DRAM bytes of a schedule that runs each top-level op of the functions of
    `module` (a fused kernel or a lone graph op) as its own kernel, each moving
    its distinct operands and its results exactly once. Constants, reshapes (views)
    and concats (written in place by their operands' producers) move nothing."""
    nbytes = 0
    for func in module.ops:
        if not isinstance(func, FuncOp) or not func.body.blocks:
            continue
        for op in func.body.block.ops:
            if isinstance(op, (ConstantOp, ReturnOp, ReshapeOp, ConcatOp)):
                continue
            operands = {v: None for v in op.operands}
            nbytes += sum(prod(shape_of(v)) * 4 for v in (*operands, *op.results))
    return nbytes


def annotate(module: ModuleOp) -> None:
    """Record the model's work on the module (kept through lowering for reports),
    and the DRAM bytes of its kernels taken one by one (`kernel_bytes`): call it
    on the fused graph-level module, before layer groups form."""
    macs, nbytes = model_work(module)
    module.attributes[MACS_ATTR] = IntegerAttr(macs, i64)
    module.attributes[BYTES_ATTR] = IntegerAttr(nbytes, i64)
    module.attributes[KERNEL_BYTES_ATTR] = IntegerAttr(kernel_bytes(module), i64)


def roofline_cycles(macs: int, nbytes: int, arch: Arch) -> int:
    return max(ceil(macs / (arch.cores * arch.cube_macs)), ceil(nbytes / arch.dram_bw))

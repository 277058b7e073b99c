"""Work a graph-level module needs, independent of how it is compiled: the MACs
of its cube ops and the fewest DRAM bytes any schedule must move (every weight
and model input read once, every output written once). The roofline bound of
a machine is max(MACs / (cores x cube MACs per cycle), bytes / dram_bw), the MACs
of each cube op at the rate of its input type (`Arch.cube_rate`: an int8 model is
bounded by the int8 cube); `npu.model_macs_by_type` records them when not all f32.

`kernel_bytes` is a second, higher floor for schedules that keep the fused
kernels of `npu-fuse` apart: every kernel reads each operand once and writes
each result once, so every intermediate crosses DRAM twice. Only layer groups
(intermediates kept in SRAM) move fewer bytes than it; `fusion_floor_bytes` is
the floor of layer groups whose weights stay in one core's SRAM."""

from __future__ import annotations

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from npu_dialects import dtypes
from npu_dialects.arch import Arch, value_type
from npu_dialects.graph import (
    ConcatOp,
    ConstantOp,
    GraphOp,
    ReshapeOp,
)

MACS_ATTR = "npu.model_macs"
MACS_BY_TYPE_ATTR = "npu.model_macs_by_type"
BYTES_ATTR = "npu.model_min_bytes"
KERNEL_BYTES_ATTR = "npu.kernel_min_bytes"
FLOOR_BYTES_ATTR = "npu.fusion_floor_bytes"
VIEWS = (ReshapeOp, ConcatOp)  # no kernel: a reshape views its operand, a concat's operands are written into it



def model_work(module: ModuleOp) -> tuple[int, int]:
    """(MACs, minimum DRAM bytes) of the graph-level functions of `module`."""
    macs = nbytes = 0
    for func in module.ops:
        if not isinstance(func, FuncOp) or not func.body.blocks:
            continue
        block = func.body.block
        nbytes += sum(_bytes(a) for a in block.args)
        for op in func.walk():
            macs += op.macs() if isinstance(op, GraphOp) else 0
            if isinstance(op, ConstantOp) and op.weight is not None and op.result.uses:
                nbytes += _bytes(op.result)  # (a weight nothing reads is never loaded)
            if isinstance(op, ReturnOp) and op.parent_op() is func:
                nbytes += sum(_bytes(v) for v in op.operands)
    return macs, nbytes


def macs_by_type(module: ModuleOp) -> dict[str, int]:
    """The MACs of the graph-level functions of `module` by the input type of their ops
    (`f32`, `f16`, `i8`, ...), each type present once."""
    out: dict[str, int] = {}
    for func in module.ops:
        if isinstance(func, FuncOp) and func.body.blocks:
            for op in func.walk():
                macs = op.macs() if isinstance(op, GraphOp) and op.operands else 0
                if macs:
                    t = value_type(op.operands[0])
                    out[t] = out.get(t, 0) + macs
    return out


def _kernels(module: ModuleOp) -> list[list[Operation]]:
    """Per function of `module`, its top-level ops that run as kernels (a fused kernel or a
    lone graph op) in program order: constants, returns and views move nothing."""
    return [[op for op in func.body.block.ops if not isinstance(op, (ConstantOp, ReturnOp, *VIEWS))]
            for func in module.ops if isinstance(func, FuncOp) and func.body.blocks]


def kernel_bytes(module: ModuleOp) -> int:
    """DRAM bytes of a schedule that runs each top-level op of the functions of
    `module` (a fused kernel or a lone graph op) as its own kernel, each moving
    its distinct operands and its results exactly once. Constants, reshapes (views)
    and concats (written in place by their operands' producers) move nothing."""
    return sum(_bytes(v) for kernels in _kernels(module) for op in kernels
               for v in (*dict.fromkeys(op.operands), *op.results))


def fusion_floor_bytes(module: ModuleOp, sram_bytes: int) -> int:
    """A floor on the DRAM bytes of layer groups whose weights stay in one core's SRAM:
    the fewest bytes over every split of each function's kernels (as `kernel_bytes`
    counts them, in program order) into runs of consecutive kernels whose weights fit
    `sram_bytes`, each run reading the values it uses from outside once and writing
    the ones used after it once; activations inside a run cost nothing, however large.
    (An intermediate between kernels whose weights do not fit together stays on chip
    only if its weights stream in per strip and core: more bytes, not counted here.)

    The runs ending at a kernel are grown backwards one kernel at a time, their bytes
    updated from the new kernel alone (it reads nothing the run computes, and which
    of the run's results are read after it does not change): quadratic in the kernels
    of a function whose weights all fit (an unrolled recurrence), not cubic."""
    nbytes = 0
    for kernels in _kernels(module):
        reads, last_read = _run_terms(kernels)
        best: list[int] = [0]  # best[i]: the fewest bytes of kernels[:i]
        for i in range(1, len(kernels) + 1):
            weights: set[SSAValue] = set()
            held = 0
            ins: dict[SSAValue, None] = {}  # what the run reads from outside
            in_bytes = out_bytes = 0
            costs = []
            for j in range(i - 1, -1, -1):  # the last run is kernels[j:i]
                new = {v for v in kernels[j].operands if isinstance(v.owner, ConstantOp)} - weights
                weights |= new
                held += sum(_bytes(w) for w in new)
                if j < i - 1 and held > sram_bytes:
                    break  # (longer runs only hold more weights)
                for r in kernels[j].results:  # now computed inside the run
                    if r in ins:
                        del ins[r]
                        in_bytes -= _bytes(r)
                    if last_read[r] >= i:
                        out_bytes += _bytes(r)
                for s in reads[j]:
                    if s not in ins:
                        ins[s] = None
                        in_bytes += _bytes(s)
                costs.append(best[j] + in_bytes + out_bytes)
            best.append(min(costs))
        nbytes += best[-1]
    return nbytes


def _bytes(v: SSAValue) -> int:
    return dtypes.nbytes(v)


def _sources(v: SSAValue) -> list[SSAValue]:
    """The kernel results, arguments or constants a value is (views looked through)."""
    if isinstance(v.owner, VIEWS):
        return [s for o in v.owner.operands for s in _sources(o)]
    return [v]


def _readers(v: SSAValue) -> list[Operation]:
    """The kernels and returns reading a value (views looked through)."""
    out = []
    for u in v.uses:
        op = u.operation
        out += [r for res in op.results for r in _readers(res)] if isinstance(op, VIEWS) else [op]
    return out


def _run_terms(kernels: list[Operation]) -> tuple[list[list[SSAValue]], dict[SSAValue, int]]:
    """Per kernel, the values it reads (views looked through, each once); per kernel
    result, the index of its last reader (len(kernels) for a return or anything else
    that is not one of `kernels`): a result leaves the run kernels[j:i] iff that is >= i."""
    index = {k: n for n, k in enumerate(kernels)}
    reads = [list(dict.fromkeys(s for v in k.operands for s in _sources(v))) for k in kernels]
    last_read: dict[SSAValue, int] = {r: max((index.get(o, len(kernels)) for o in _readers(r)), default=-1)
                                      for k in kernels for r in k.results}
    return reads, last_read


def annotate(module: ModuleOp, arch: Arch) -> None:
    """Record the model's work on the module (kept through lowering for reports),
    the DRAM bytes of its kernels taken one by one (`kernel_bytes`) and the floor of
    layer groups on `arch` (`fusion_floor_bytes`): call it on the fused graph-level
    module, before layer groups form."""
    macs, nbytes = model_work(module)
    module.attributes[MACS_ATTR] = IntegerAttr(macs, i64)
    by_type = macs_by_type(module)
    if set(by_type) - {"f32"}:  # (an all-f32 module's attributes are as before)
        module.attributes[MACS_BY_TYPE_ATTR] = DictionaryAttr({t: IntegerAttr(v, i64) for t, v in by_type.items()})
    module.attributes[BYTES_ATTR] = IntegerAttr(nbytes, i64)
    module.attributes[KERNEL_BYTES_ATTR] = IntegerAttr(kernel_bytes(module), i64)
    module.attributes[FLOOR_BYTES_ATTR] = IntegerAttr(fusion_floor_bytes(module, arch.sram_bytes), i64)


def roofline_cycles(macs: int | dict[str, int], nbytes: int, arch: Arch) -> int:
    """`Arch.roofline_cycles`: `macs` a count of f32 MACs or the MACs by input type."""
    return arch.roofline_cycles(macs, nbytes)


def recorded_macs_by_type(module: ModuleOp) -> dict[str, int] | None:
    """The MACs by input type `annotate` recorded (None: all f32, or not recorded)."""
    attr = module.attributes.get(MACS_BY_TYPE_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return None
    return {k: v.value.data for k, v in attr.data.items() if isinstance(v, IntegerAttr)}

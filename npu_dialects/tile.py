"""`npu_tile`: a kernel split into tiles that fit a core's SRAM.

`npu_tile.kernel` keeps the kernel's graph ops (value semantics, full tensors)
in its body and records the tiling decision as attributes: the loop nest
(`loops`, one letter-name per dimension), the tile size and trip count per
loop, whether input tiles are double buffered, the SRAM bytes the tile
buffers need and the cost model's predicted cycles. The per-tile DMA and
compute become explicit in bufferization (`npu_dma` + `npu_compute`), which
derives every tile's slices from these attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    attr_def,
    irdl_op_definition,
    opt_attr_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsTerminator, NoMemoryEffect, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from npu_dialects.graph import int_array, ints

KINDS = ("matmul", "conv2d", "eltwise", "pool", "apply", "view", "group")
"""Anchor kinds: what the kernel's main op runs on (cube, vector, nothing); `group`
is a layer group (`npu-layer-group`): no loops, every op on whole SRAM-resident tensors."""


@irdl_op_definition
class TileYieldOp(IRDLOperation):
    """Terminator of `npu_tile.kernel`: the kernel's results."""

    name = "npu_tile.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), NoMemoryEffect())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), KernelOp):
            raise VerifyException("'npu_tile.yield' must be inside 'npu_tile.kernel'")


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One tiled kernel. Attributes:
    - `kind`: anchor kind (`matmul`, `conv2d`, `eltwise`, `pool`, `apply`, `view`), or
      `group` for a layer group (several kernels' ops on SRAM-resident tensors, no loops);
    - `loops`: loop dimension names, outermost first (e.g. `"m,n,k"`);
    - `tile`: tile size per loop; `grid`: trip count per loop (ceil(extent / tile));
    - `double_buffer`: input tiles alternate between two SRAM buffers;
    - `sram_bytes`: SRAM the tile buffers need (both halves when double buffered);
    - `predicted_cycles`: the cost model's estimate of the kernel's span (on one core,
      or its `parts` running concurrently, sync excluded);
    - `dram_bytes`: the DRAM traffic the tiling implies (loads and stores);
    - `parts`: over how many cores the cost model splits the parallel tiles
      (`npu-schedule` places the parts);
    - `line_buffer` (strip groups): each strip keeps the rows it shares with the next
      one in SRAM and computes only its new rows (`lowering/tile/strip_plan.py`)."""

    name = "npu_tile.kernel"
    ins = var_operand_def(TensorType)
    kernel = attr_def(StringAttr)
    kind = attr_def(StringAttr)
    loops = attr_def(StringAttr)
    tile = attr_def(DenseArrayBase)
    grid = attr_def(DenseArrayBase)
    double_buffer = opt_attr_def(BoolAttr)
    sram_bytes = opt_attr_def(IntegerAttr)
    predicted_cycles = opt_attr_def(IntegerAttr)
    dram_bytes = opt_attr_def(IntegerAttr)
    parts = opt_attr_def(IntegerAttr)
    line_buffer = opt_attr_def(UnitAttr)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(TileYieldOp), NoMemoryEffect())
    assembly_format = "$kernel `(` $ins `)` attr-dict `:` functional-type($ins, $outs) $body"

    def __init__(self, kernel: str, ins: Sequence[SSAValue], result_types: Sequence[Attribute],
                 body: Region, *, kind: str, loops: Sequence[str], tile: Sequence[int],
                 grid: Sequence[int], double_buffer: bool, sram_bytes: int, predicted_cycles: int,
                 dram_bytes: int = 0, parts: int = 1, line_buffer: bool = False):
        super().__init__(operands=[list(ins)], result_types=[list(result_types)], regions=[body],
                         attributes={
                             "kernel": StringAttr(kernel), "kind": StringAttr(kind),
                             "loops": StringAttr(",".join(loops)), "tile": int_array(tile),
                             "grid": int_array(grid),
                             "double_buffer": BoolAttr.from_bool(double_buffer),
                             "sram_bytes": IntegerAttr(sram_bytes, i64),
                             "predicted_cycles": IntegerAttr(predicted_cycles, i64),
                             "dram_bytes": IntegerAttr(dram_bytes, i64),
                             "parts": IntegerAttr(parts, i64),
                             **({"line_buffer": UnitAttr()} if line_buffer else {})})

    @property
    def loop_names(self) -> list[str]:
        return [s for s in self.loops.data.split(",") if s]

    @property
    def tile_sizes(self) -> tuple[int, ...]:
        return ints(self.tile, ())

    @property
    def trip_counts(self) -> tuple[int, ...]:
        return ints(self.grid, ())

    @property
    def is_line_buffered(self) -> bool:
        return self.line_buffer is not None

    @property
    def is_double_buffered(self) -> bool:
        return bool(self.double_buffer and self.double_buffer.value.data)

    def graph_ops(self) -> list[Operation]:
        return [op for op in self.body.block.ops if not isinstance(op, TileYieldOp)]

    def verify_(self) -> None:
        if self.kind.data not in KINDS:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: unknown kind '{self.kind.data}' "
                                  f"(expected one of {', '.join(KINDS)})")
        n = len(self.loop_names)
        if len(self.tile_sizes) != n or len(self.trip_counts) != n:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: {n} loops but "
                                  f"{len(self.tile_sizes)} tile sizes and {len(self.trip_counts)} trip counts")
        if any(t <= 0 for t in self.tile_sizes) or any(g <= 0 for g in self.trip_counts):
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: tile sizes {list(self.tile_sizes)} and "
                                  f"trip counts {list(self.trip_counts)} must be positive")
        block = self.body.block
        if [a.type for a in block.args] != [o.type for o in self.ins]:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: block argument types must match operands")
        term = block.last_op
        if isinstance(term, TileYieldOp) and [v.type for v in term.values] != [r.type for r in self.outs]:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: yielded types must match result types")


NpuTile = Dialect("npu_tile", [KernelOp, TileYieldOp], [])

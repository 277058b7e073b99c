"""`npu-tile-loops`: apply each kernel's tiling plan, rewriting its body into explicit
tile loops over slices (as IREE applies a `lowering_config`).

Assumes `npu-tile` (and optionally `npu-layer-group`) ran: every non-constant op of
a function is an `npu_tile.kernel` recording its plan (`loops`, `tile`, `grid`,
`double_buffer`). For each kernel of a tiled kind (`matmul`, `conv2d`, `eltwise`,
`pool`, `apply`) the whole-tensor graph ops of its body become one `npu_tile.loop`
of `npu_tile.load`s, the ops on tile-shaped tensors, `npu_tile.reduce` and
`npu_tile.store` (structure under Algorithm); later passes read the windows from
the IR. View kernels and layer groups (kind `group`) keep their bodies. A kernel
whose body is already a loop is left alone, so the pass is idempotent. No options.

Errors: a plan that does not match its kernel (loop names or trip counts other than
the kernel's tiling gives) is a diagnostic naming the kernel.

Algorithm
---------
The loop holds:
- an `npu_tile.load` per operand window of the anchor (with the operands of a conv
  prologue after them), each an affine slice of a kernel input per tile;
- the prologue's elementwise ops on the input tile, then the anchor op on tile-shaped
  tensors (a gemm or conv without its bias; a conv or pool on a halo tile, unpadded:
  the load pads);
- `npu_tile.reduce`: the anchor's partial results summed over the reduction loop;
- the epilogue: the anchor's bias as an `add`, then the fused elementwise ops, with
  one `npu_tile.load` per extra operand;
- `npu_tile.store` of the output tile, clipped at the tensor's edge.
The windows come from the op's tiling (`lowering/tile/tile_search.py`), evaluated at
the recorded tile sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from lowering.errors import CompileError
from lowering.tile.strip_loops import materialize_strip_group
from lowering.tile.tile_search import (
    Anchor,
    EpilogueStep,
    KernelShape,
    PrologueAnchor,
    TilingError,
    Window,
    split_kernel,
    with_epilogue,
)
from npu_dialects.arch import arch_of
from npu_dialects.graph import ELEMENTWISE_OP_BY_FN
from npu_dialects.tile import KernelKind, KernelOp, LoadOp, LoopOp, ReduceOp, StoreOp, TileYieldOp

TILED_KINDS = (KernelKind.MATMUL, KernelKind.CONV2D, KernelKind.ELTWISE, KernelKind.POOL, KernelKind.APPLY)


def window_props(w: Window, loops: Sequence[str]) -> dict:
    """`npu_tile.load`/`store` arguments of a window over `loops`."""
    coefs = [dict(d.terms).get(name, 0) for d in w.dims for name in loops]
    return dict(view=w.shape, coefs=coefs, consts=[d.const for d in w.dims], sizes=w.sizes)


def tensor(sizes: Sequence[int]) -> TensorType:
    return TensorType(f32, list(sizes))


def kernel_shape(kernel: KernelOp) -> tuple[KernelShape, list[EpilogueStep], Anchor, list[EpilogueStep]]:
    """The kernel's windows at its recorded tile sizes: (shape, epilogue steps, anchor,
    prologue steps). TilingError when the recorded plan does not fit the kernel."""
    ops = kernel.graph_ops()
    ins_index: dict[SSAValue, int] = {a: i for i, a in enumerate(kernel.body.block.args)}
    anchor, steps, extra = split_kernel(ops, ins_index)
    names = kernel.loop_names
    if [l.name for l in anchor.loops()] != names:
        raise TilingError(f"loops '{','.join(names)}' do not match a {anchor.kind} kernel "
                          f"({','.join(l.name for l in anchor.loops())})")
    ks = with_epilogue(anchor.shape(dict(zip(names, kernel.tile_sizes))), extra)
    if list(ks.grid) != list(kernel.trip_counts):
        raise TilingError(f"grid {list(kernel.trip_counts)} does not match the tile sizes (expected {ks.grid})")
    prologue = anchor.steps if isinstance(anchor, PrologueAnchor) else []
    return ks, steps, anchor, prologue


@dataclass
class LoopBuilder:
    """Builds the `npu_tile.loop` body of one kernel."""

    kernel: KernelOp
    ks: KernelShape
    block: Block

    def __post_init__(self) -> None:
        self.names = [l.name for l in self.ks.loops]

    def add(self, op: Operation) -> Operation:
        op.location = self.kernel.location
        self.block.add_op(op)
        return op

    def load(self, w: Window) -> SSAValue:
        assert w.source is not None  # (a load reads a kernel input; only the store has none)
        src = self.kernel.body.block.args[w.source]
        return self.add(LoadOp(src, self.block.args, pad_value=w.pad_value, **window_props(w, self.names))).results[0]

    def chain(self, steps: Sequence[EpilogueStep], running: SSAValue, operands: Sequence[SSAValue]) -> SSAValue:
        """Elementwise steps on the running tile (None in `args`) and `operands[i]`."""
        for s in steps:
            args = [running if a is None else operands[a] for a in s.args]
            running = self.add(ELEMENTWISE_OP_BY_FN[s.fn].create(operands=args, result_types=[running.type])).results[0]
        return running

    def anchor(self, anchor: Anchor, tiles: list[SSAValue]) -> SSAValue:
        """The anchor op on tiles, as its tiling model builds it (`Anchor.tile_op`)."""
        tile_op = anchor.tile_op(tiles, tensor(self.ks.out.sizes), self.ks)
        tile_op.location = anchor.op.location
        self.block.add_op(tile_op)
        return tile_op.results[0]

    def build(self, steps: Sequence[EpilogueStep], anchor: Anchor, prologue: Sequence[EpilogueStep]) -> None:
        ks = self.ks
        tiles = [self.load(w) for w in ks.loads]
        if prologue:  # on the input tile; its operands follow the conv's two loads
            tiles[0] = self.chain(prologue, tiles[0], tiles[2:])
        total = self.add(ReduceOp(self.anchor(anchor, tiles))).results[0]
        epilogue = [self.load(w) for w in ks.epilogue]
        result = self.chain(steps, total, epilogue)
        props = window_props(ks.out, self.names)
        if tuple(ks.out.shape) == tuple(self.kernel.outs[0].type.get_shape()):
            props["view"] = None
        self.add(StoreOp(result, self.block.args, **props))


def materialize(kernel: KernelOp) -> None:
    """Rewrite `kernel`'s body into its `npu_tile.loop` (TilingError if the plan does not fit)."""
    ks, steps, anchor, prologue = kernel_shape(kernel)
    body = Block(arg_types=[IndexType()] * len(ks.loops))
    for arg, l in zip(body.args, ks.loops):
        arg.name_hint = l.name
    LoopBuilder(kernel, ks, body).build(steps, anchor, prologue)
    loop = LoopOp(kernel.loop_names, kernel.tile_sizes, kernel.trip_counts,
                  sum(1 for l in ks.loops if l.reduction), kernel.is_double_buffered, kernel.outs[0].type,
                  Region(body))
    loop.location = kernel.location
    block = kernel.body.block
    for op in reversed(list(block.ops)):
        op.detach()
        op.erase(safe_erase=False)
    block.add_ops([loop, TileYieldOp(loop.result)])


def loop_of(kernel: KernelOp) -> LoopOp | None:
    """The kernel's tile loop, if `npu-tile-loops` materialised it."""
    first = kernel.body.block.first_op
    return first if isinstance(first, LoopOp) else None


@dataclass(frozen=True)
class TileLoops(ModulePass):
    """Rewrite every tiled kernel into its explicit tile loop (see the module docstring)."""

    name = "npu-tile-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for func in op.ops:
            if not isinstance(func, FuncOp):
                continue
            for k in func.body.block.ops:
                if isinstance(k, KernelOp) and materialize_strip_group(k, arch_of(op), self.name):
                    continue
                if not isinstance(k, KernelOp) or k.kind.data not in TILED_KINDS or loop_of(k) is not None:
                    continue
                try:
                    materialize(k)
                except TilingError as e:
                    raise CompileError(self.name, f"kernel '{k.kernel.data}': {e}", k) from None

"""`npu-tile-loops`: apply each kernel's tiling plan, rewriting its body into explicit
tile loops over slices (as IREE applies a `lowering_config`).

Assumes `npu-tile` (and optionally `npu-layer-group`) ran: every non-constant op of
a function is an `npu_tile.kernel` recording its plan (`loops`, `tile`, `grid`,
`double_buffer`). For each kernel of a tiled kind (`matmul`, `conv2d`, `eltwise`,
`pool`, `apply`) the whole-tensor graph ops of its body become one `npu_tile.loop`
of `npu_tile.load`s, the ops on tile-shaped tensors, `npu_tile.reduce` and
`npu_tile.store` (structure under Algorithm). A layer group (kind `group`, no
loops) gets its DMA order: an `npu_tile.load` of each input, whole, where its
schedule issues it; a strip group its `npu_tile.strip_loop` (`strip_loops.py`).
View kernels keep their bodies. A kernel already materialised is left alone (the
pass is idempotent). No options.

Errors: a plan that does not match its kernel is a diagnostic naming the kernel.

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

A layer group's loads follow `group_schedule` (`lowering/tile/group_plan.py`): each
goes out up to `dma_channels` loads ahead of the op that needs it. `npu-bufferize`
waits for a load before the first op computing from it (through views) and stores a
returned value right after the op computing it; buffers sit where the group's
`#npu_tile.group` plan puts them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from lowering.errors import CompileError
from lowering.tile.batch_split import LOOP as BATCH_LOOP
from lowering.tile.batch_split import discard, slice_group
from lowering.tile.group_plan import group_schedule
from lowering.tile.strip_loops import materialize_strip_group
from lowering.tile.tile_search import (
    Anchor,
    AppendAttentionAnchor,
    EpilogueStep,
    KernelShape,
    PrologueAnchor,
    TilingError,
    Window,
    drop_init_step,
    split_kernel,
    with_epilogue,
)
from npu_dialects.arch import Arch, arch_of
from npu_dialects.dtypes import element_type
from npu_dialects.graph import ELEMENTWISE_OP_BY_FN, AddOp, CastOp, DequantizeOp, StructuredOp, ints, shape_of
from npu_dialects.tile import (
    GroupPlanAttr,
    KernelKind,
    KernelOp,
    LoadOp,
    LoopOp,
    ReduceOp,
    StoreOp,
    TeeOp,
    TileYieldOp,
)

TILED_KINDS = (KernelKind.MATMUL, KernelKind.CONV2D, KernelKind.ELTWISE, KernelKind.POOL, KernelKind.APPLY)


def window_props(w: Window, loops: Sequence[str]) -> dict:
    """`npu_tile.load`/`store` arguments of a window over `loops`."""
    coefs = [dict(d.terms).get(name, 0) for d in w.dims for name in loops]
    return dict(view=w.shape, coefs=coefs, consts=[d.const for d in w.dims], sizes=w.sizes)


def tensor(sizes: Sequence[int], like: SSAValue | Attribute) -> TensorType:
    """A tile of `sizes` with the element type of value/type `like`."""
    return TensorType(element_type(like), list(sizes))


def kernel_shape(kernel: KernelOp) -> tuple[KernelShape, list[EpilogueStep], Anchor, list[EpilogueStep]]:
    """The kernel's windows at its recorded tile sizes: (shape, epilogue steps, anchor,
    prologue steps). TilingError when the recorded plan does not fit the kernel."""
    ops = kernel.graph_ops()
    ins_index: dict[SSAValue, int] = {a: i for i, a in enumerate(kernel.body.block.args)}
    anchor, steps, extra = split_kernel(ops, ins_index)
    names = kernel.loop_names
    loops = {l.name: l for l in anchor.loops()}
    reductions = [l.name for l in anchor.loops() if l.reduction]
    if sorted(loops) != sorted(names) or names[len(names) - len(reductions):] != reductions:
        raise TilingError(f"loops '{','.join(names)}' do not match a {anchor.kind} kernel "
                          f"({','.join(loops)}, its parallel loops in any order)")
    ks = with_epilogue(anchor.shape(dict(zip(names, kernel.tile_sizes))), extra, steps, anchor.elems,
                       anchor.op.results[0])
    ks = replace(ks, loops=[loops[n] for n in names])  # (the order the search chose: `ordered`)
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
        derived: dict[str, SSAValue] = {}
        for s in steps:
            args = [running if a is None else derived[a] if isinstance(a, str) else operands[a] for a in s.args]
            kind = ELEMENTWISE_OP_BY_FN[s.fn] if s.template is None else type(s.template)
            attrs = {} if s.template is None else s.template.tile_attrs() if isinstance(s.template, StructuredOp) \
                else dict(s.template.attributes)
            like = args[0] if s.to is not None else running
            ty = like.type if s.template is None else tensor(shape_of(like), s.template.results[0])
            step_op = self.add(kind.create(operands=args, result_types=[ty], attributes=attrs))
            if s.loc is not None:  # (the graph op's own ONNX node, not the kernel's)
                step_op.location = s.loc
            value = step_op.results[0]
            if s.to is not None:
                derived[s.to] = value
            else:
                running = value
        return running

    def convert(self, anchor: Anchor, j: int, tile: SSAValue, scalars: Sequence[SSAValue]) -> SSAValue:
        """Conversion `j` of a float KV cache's (`AppendAttentionAnchor.conversions`: the
        k side's quantize and dequantize, then the v side's) on `tile`."""
        assert isinstance(anchor, AppendAttentionAnchor)
        template = anchor.conversions[j // 2][j % 2]
        op = self.add(type(template).create(operands=[tile, *scalars], result_types=[tensor(shape_of(tile), template.results[0])],
                                            attributes=template.tile_attrs()))
        op.location = template.location
        return op.results[0]

    def anchor(self, anchor: Anchor, tiles: list[SSAValue]) -> SSAValue:
        """The anchor op on tiles, as its tiling model builds it (`Anchor.tile_op`)."""
        acc = self.ks.accumulator  # (a 16-bit product summed in f32: `wide_accumulator`)
        out = TensorType(acc, list(self.ks.out.sizes)) if acc is not None else tensor(self.ks.out.sizes,
                                                                                           anchor.op.results[0])
        tile_op = anchor.tile_op(tiles, out, self.ks)
        tile_op.location = anchor.op.location
        self.block.add_op(tile_op)
        return tile_op.results[0]

    def build(self, steps: Sequence[EpilogueStep], anchor: Anchor, prologue: Sequence[EpilogueStep]) -> None:
        ks = self.ks
        tiles = [self.load(w) for w in ks.loads]
        converting = tiles[len(tiles) - ks.kv_loads:]  # (a float cache's: `AppendAttentionAnchor.converting`)
        del tiles[len(tiles) - ks.kv_loads:]
        seams = converting[:len(ks.tees)] or [self.load(w) for w in ks.seams]
        loaded = converting[len(ks.tees):]
        scalars = [loaded[j] for j in anchor.scalar_of] if loaded and isinstance(anchor, AppendAttentionAnchor) else []
        for i, (w, seam) in enumerate(zip(ks.tees, seams)):  # (a KV-cache append: the block spans the seam)
            if scalars:  # (a float cache, `AppendAttentionAnchor.converting`: the new rows join it in float)
                q_scale, q_zp = scalars[4 * i:4 * i + 2]
                seam = self.add(DequantizeOp(seam, q_scale, q_zp, tensor(w.sizes, tiles[1 + i]))).results[0]
            tiles[1 + i] = self.add(AddOp(tiles[1 + i], seam, tensor(w.sizes, seam))).results[0]
            tee = tiles[1 + i]
            if scalars:
                tiles[1 + i] = self.convert(anchor, 2 * i, tiles[1 + i], scalars[4 * i:4 * i + 2])
                tee = self.convert(anchor, 2 * i + 1, tiles[1 + i], scalars[4 * i + 2:4 * i + 4])
            self.add(TeeOp(tee, w.source or 0, self.block.args, **window_props(w, self.names)))
        if prologue:  # on the input tile; its operands follow the anchor's two loads
            tiles[0] = self.chain(prologue, tiles[0], tiles[2:])
        iw = ks.init_window
        init = self.load(iw) if iw is not None else None
        total = self.add(ReduceOp(self.anchor(anchor, tiles), anchor.combine(ks), init)).results[0]
        if ks.accumulator is not None:  # (the sum's cast to the product's type, at the last step)
            total = self.add(CastOp(total, tensor(ks.out.sizes, anchor.op.results[0]))).results[0]
        epilogue = [init if w is iw and init is not None else self.load(w) for w in ks.epilogue]
        if iw is not None:  # (its add is the reduce's start)
            steps = drop_init_step(steps, ks.init)  # type: ignore[arg-type]
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
                  sum(1 for l in ks.loops if l.reduction), kernel.is_double_buffered, [r.type for r in kernel.outs],
                  Region(body))
    loop.location = kernel.location
    block = kernel.body.block
    for op in reversed(list(block.ops)):
        op.detach()
        op.erase(safe_erase=False)
    block.add_ops([loop, TileYieldOp(*loop.outs)])


def materialize_group(kernel: KernelOp, arch: Arch) -> None:
    """Rewrite layer group `kernel`'s body into its DMA order: an `npu_tile.load` of each
    input, whole, ahead of the op its schedule issues it before; the ops read the
    loads. A view reading a load issued later (unpacking a weight pack) moves after
    it, and the plan's offsets and `in_place` positions follow the ops."""
    ops = kernel.graph_ops()
    planned, yields, back = ops, list(kernel.yield_op.values), {}
    if kernel.loop_names == [BATCH_LOOP]:  # (scheduled as its plan: on one slice)
        planned, yields, operands, arch = slice_group(kernel, arch)
        back = {s: a for a, s in operands.items() if isinstance(a, BlockArgument)}
    loads, actions = group_schedule(planned, yields, arch)
    if planned is not ops:
        discard(planned)
    issued: list[Operation] = []
    order: list[Operation] = []
    for act in actions:
        if act[0] == "load":
            (v,) = loads[act[1]]  # (packed weights are one input by now)
            v = back.get(v, v)
            if not isinstance(v, BlockArgument):
                raise TilingError(f"its schedule loads {v}, not one of its inputs")
            load = LoadOp(v, [], None, [], [0] * len(shape_of(v)), shape_of(v), None)
            load.location = kernel.location
            v.replace_uses_with_if(load.tile, lambda u, ld=load: u.operation is not ld)
            issued.append(load)
        elif act[0] == "compute":
            order += [*issued, ops[act[1]]]
            issued = []
    block = kernel.body.block
    for op in dominance_order(order):
        if op.parent is not None:
            op.detach()
        block.insert_op_before(op, kernel.yield_op)
    plan = kernel.plan
    if isinstance(plan, GroupPlanAttr):
        moved = kernel.graph_ops()
        n, offsets = len(block.args), ints(plan.offsets, ())
        kernel.plan = GroupPlanAttr.get(plan.sram.data, [*offsets[:n], *(offsets[n + ops.index(o)] for o in moved)],
                                        sorted(moved.index(ops[i]) for i in ints(plan.in_place, ())))


def dominance_order(order: Sequence[Operation]) -> list[Operation]:
    """`order` with each op that reads a value defined later (a view of a load issued
    after it) moved right after its last operand's definition."""
    defined: set[SSAValue] = set()
    out: list[Operation] = []
    pending: list[Operation] = []
    for op in order:
        pending.append(op)
        ready = True
        while ready:
            ready = False
            for p in pending:
                if all(isinstance(v, BlockArgument) or v in defined for v in p.operands):
                    out.append(p)
                    defined.update(p.results)
                    pending.remove(p)
                    ready = True
                    break
    if pending:
        raise TilingError(f"'{pending[0].name}' reads a value its group never defines")
    return out


def is_materialized(kernel: KernelOp) -> bool:
    """Whether the kernel's body is already its tile loop or (a layer group) loads."""
    return any(isinstance(op, (LoopOp, LoadOp)) for op in kernel.body.block.ops)


def loop_of(kernel: KernelOp) -> LoopOp | None:
    """The kernel's tile loop, if `npu-tile-loops` materialised it."""
    first = kernel.body.block.first_op
    return first if isinstance(first, LoopOp) else None


@dataclass(frozen=True)
class TileLoops(ModulePass):
    """Rewrite every tiled kernel into its explicit tile loop (see the module docstring)."""

    name = "npu-tile-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)  # (read once: the attribute builds its Arch on every read)
        for func in op.ops:
            if not isinstance(func, FuncOp):
                continue
            for k in func.body.block.ops:
                if isinstance(k, KernelOp) and materialize_strip_group(k, arch, self.name):
                    continue
                if not isinstance(k, KernelOp) or is_materialized(k):
                    continue
                try:
                    if k.kind.data == KernelKind.GROUP and k.loop_names in ([], [BATCH_LOOP]):
                        materialize_group(k, arch)
                    elif k.kind.data in TILED_KINDS:
                        materialize(k)
                except TilingError as e:
                    raise CompileError(self.name, f"kernel '{k.kernel.data}': {e}", k) from None

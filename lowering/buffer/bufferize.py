"""`npu-bufferize`: tiled kernels -> explicit DMA and compute on DRAM/SRAM buffers.

Assumes every non-constant op of `func.func` bodies is an `npu_tile.kernel`, tiled
kernels in their `npu_tile.loop` form (run `npu-tile`, `npu-tile-loops` first).
Produces the task-level form documented in `npu_dialects/task.py`:
- the function takes the model inputs then outputs as `dram` memrefs (outputs
  are written in place), constants become `npu_task.weight`, kernel results
  `npu_task.alloc` buffers (a returned result uses the output argument), view
  kernels `npu_task.view`;
- each kernel becomes one `npu_task.task` on core 0 covering all its parallel
  tiles (`range = [0, P)`); `npu-schedule` splits and places it.
A tiled kernel's task is its `npu_tile.loop` lowered by the patterns of
`tile_loop_patterns.py`, a layer group's body by those of `group_patterns.py`, a strip
group's `npu_tile.strip_loop` by those of `strip_patterns.py`. Graph ops in tasks go
to `npu_compute` by the patterns of `compute_patterns.py`. No options.

Algorithm
---------
See `tile_loop_patterns.py` for a tiled kernel's task. Buffers: kernel results
get `npu_task.alloc` buffers, which may take the bytes of an input the kernel
reads once at exactly its output tile's position (`in_place_source`); a concat's
operands are written in place into its buffer (`concat_placement`).

Group kernels follow the `plan` `npu-layer-group` recorded (`#npu_tile.group`: the
buffer offsets; `#npu_tile.strip`: rows per strip, prefetch, line buffers, the operand
overwritten in place): only the geometry those decisions imply is recomputed (rows per
value and strip, buffer layout, DMA order), and a plan it does not reproduce is an error
(for a strip group `npu-tile-loops` reports it, materialising its strip loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np
from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    LocationAttr,
    MemRefType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from lowering.buffer.compute_patterns import describe_unlowered, lower_compute
from lowering.buffer.group_patterns import assign_group_buffers, lower_group
from lowering.buffer.strip_patterns import assign_strip_buffers, lower_strip_loop
from lowering.buffer.tile_loop_patterns import (
    INDEX,
    Emitter,
    assign_buffers,
    loop_parts,
    lower_tile_loop,
    memref_type,
)
from lowering.errors import CompileError
from lowering.tile.batch_split import LOOP as BATCH_LOOP
from lowering.tile.batch_split import kernel_batch, slice_ops
from lowering.tile.strip_loops import strip_loop_of
from lowering.tile.strip_plan import (
    StripPlan,
    in_place_candidates,
    recorded_plan,
)
from lowering.tile.tile_loops import loop_of
from lowering.tile.tile_search import (
    DimMap,
    KernelShape,
    Loop,
    TilingError,
    Window,
)
from npu_dialects.arch import Arch, arch_of
from npu_dialects.compute import ToTensorOp
from npu_dialects.dma import CopyOp, WaitOp, memory_space
from npu_dialects.dtypes import elem_bytes, element_type, is_float, nbytes, np_dtype
from npu_dialects.graph import (
    ConcatOp,
    ConstantOp,
    attr_int,
    shape_of,
)
from npu_dialects.task import AllocOp, TaskOp, ViewOp, WeightOp, span
from npu_dialects.tile import (
    KernelKind,
    KernelOp,
    ReduceOp,
    StoreOp,
    StripLoopOp,
    StripPlanAttr,
    TileYieldOp,
    WindowOp,
)
from npu_dialects.tile import LoadOp as TileLoadOp


def dram_type(shape: Sequence[int], like: SSAValue | Attribute) -> MemRefType:
    """A DRAM buffer of `shape` holding the elements of tensor/memref value or type `like`."""
    return memref_type(element_type(like), tuple(shape), "dram")


def window_of(op: WindowOp, loops: Sequence[str], source: int | None) -> Window:
    """The `Window` an `npu_tile.load`/`store` spells out."""
    view, terms, consts, sizes = op.window()
    dims = tuple(DimMap(tuple((loops[j], c) for j, c in ts), const, size)
                 for ts, const, size in zip(terms, consts, sizes))
    pad = op.pad_value.value.data if isinstance(op, TileLoadOp) and op.pad_value is not None else None
    tensor = op.operands[0]  # (a load's source, a store's value: the same element type)
    return Window(source, view, dims, pad, elem=elem_bytes(tensor))


def loop_shape(kernel: KernelOp) -> KernelShape:
    """The windows the kernel's `npu_tile.loop` spells out (for the in-place analysis
    and the task's range)."""
    loop = loop_of(kernel)
    if loop is None:
        raise TilingError("the kernel has no tile loop (run npu-tile-loops first)")
    names, tile, grid = loop.loop_names, loop.tile_sizes, loop.trip_counts
    nred = loop.reductions.value.data
    loops = [Loop(n, s * g, i >= len(names) - nred) for i, (n, s, g) in enumerate(zip(names, tile, grid))]
    args: list[SSAValue] = list(kernel.body.block.args)
    loads, _, _, epi_loads, _, store = loop_parts(loop)
    return KernelShape(kernel.kind.data, loops, dict(zip(names, tile)),
                       [window_of(o, names, args.index(o.source)) for o in loads], window_of(store, names, None),
                       [window_of(o, names, args.index(o.source)) for o in epi_loads])


def concat_placement(block: Block, returned: set[SSAValue]) -> dict[SSAValue, tuple[SSAValue, int]]:
    """Concats whose operands their producers can write in place: value -> (concat
    result, byte offset in its buffer). A concat qualifies when every dim before its
    axis is 1 (each operand is then a contiguous byte range of the result) and every
    operand is a distinct result of a kernel that writes DRAM (not a view, an input,
    a weight or a returned value) and is not already placed in another concat."""
    placement: dict[SSAValue, tuple[SSAValue, int]] = {}
    kernels = [op for op in block.ops if isinstance(op, KernelOp)]
    for k in reversed(kernels):  # outer concats first: a placed concat may hold others
        loop = loop_of(k)
        if loop is None:
            continue
        body = [o for o in loop.body.block.ops if not isinstance(o, (TileLoadOp, ReduceOp, StoreOp))]
        if len(body) != 1 or not isinstance(body[0], ConcatOp):
            continue
        cat = body[0]
        loads = [o.owner for o in cat.operands if isinstance(o.owner, TileLoadOp)]
        if len(loads) != len(cat.operands):
            continue
        out = shape_of(k.outs[0])
        axis = attr_int(dict(cat.attributes), "axis", 0) % len(out)
        args: dict[SSAValue, SSAValue] = dict(zip(k.body.block.args, k.ins))
        vals = [args.get(o.source) for o in loads]
        if any(d != 1 for d in out[:axis]) or len(set(vals)) != len(vals):
            continue
        if not all(v is not None and isinstance(v.owner, KernelOp) and v.owner.kind.data != KernelKind.VIEW
                   and v not in returned and v not in placement for v in vals):
            continue
        off = 0
        for v in vals:
            assert v is not None
            placement[v] = (k.outs[0], off)
            off += nbytes(v)
    return placement


def in_place_source(ks: KernelShape, ins: list[SSAValue]) -> SSAValue | None:
    """An input buffer the kernel could overwrite with its output: an activation buffer
    (`npu_task.alloc`) of the output's shape and element size that the kernel reads
    through one window only, at exactly the output tile's position (an elementwise
    operand, a residual epilogue operand). Each tile of it is then loaded before the same tile of the
    output is stored, and no other tile reads it."""
    windows = ks.loads + ks.epilogue
    for w in windows:
        if w.source is None or w.pad_value is not None or w.shape != ks.out.shape or w.elem != ks.out.elem:
            continue
        if any(a != b and not (n == 1 and a.size == b.size == 1 and a.const == b.const == 0)
               for a, b, n in zip(w.dims, ks.out.dims, w.shape)):
            continue  # (a size-1 dim is at 0 whatever its loop)
        buf = ins[w.source]
        if not isinstance(buf.owner, AllocOp) or tuple(buf.owner.result.type.get_shape()) != tuple(ks.out.shape):
            continue
        if sum(ins[x.source] is buf for x in windows if x.source is not None) == 1:
            return buf
    return None


def strip_in_place_source(k: KernelOp, plan: StripPlan, ins: list[SSAValue], result: int = 0) -> SSAValue | None:
    """The operand buffer strip group `k`'s plan says its strip loop's result `result`
    overwrites (`in_place` for the last op's, `stored_in_place` for a stored inner
    value's), when that is an activation buffer (`npu_task.alloc`); a TilingError when
    the operand is not a side input the result may overwrite (`in_place_candidates`)."""
    rec = k.plan
    if not isinstance(rec, StripPlanAttr):
        return None
    i = rec.in_place_operand if result == 0 else rec.stored_in_place_operand(result - 1)
    if i is None:
        return None
    target = None if result == 0 else plan.geometry.stored[result - 1]
    if i >= len(ins) or k.body.block.args[i] not in in_place_candidates(plan.geometry.ops, plan.geometry, {},
                                                                         target):
        raise TilingError(f"its plan overwrites operand {i} in place, which is not a side input read once at "
                          "the rows each strip stores (without warm-up strips, for a stored value)")
    return ins[i] if isinstance(ins[i].owner, AllocOp) else None


class FuncBuilder:
    """Rewrites one graph-level function into the task-level form."""

    def __init__(self, func: FuncOp, arch: Arch, pass_name: str):
        self.func, self.arch, self.pass_name = func, arch, pass_name
        self.block = Block()
        self.buf: dict[SSAValue, SSAValue] = {}
        self.views: dict[tuple[SSAValue, tuple[int, ...]], SSAValue] = {}
        self.inline_consts = 0

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def view(self, buf: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        assert isinstance(buf.type, MemRefType)
        if tuple(buf.type.get_shape()) == tuple(shape):
            return buf
        key = (buf, tuple(shape))
        if key not in self.views:
            self.views[key] = self.add(ViewOp(buf, dram_type(shape, buf))).results[0]
        return self.views[key]

    def copy_task(self, name: str, src: SSAValue, dst: SSAValue, loc: LocationAttr) -> None:
        assert isinstance(dst.type, MemRefType)
        shape = tuple(dst.type.get_shape())
        if 0 in shape:
            return  # nothing to move
        block = Block(arg_types=[INDEX, INDEX])
        em = Emitter(block, block, {}, loc)
        zeros = [em.const(0)] * len(shape)
        tok = em.add(CopyOp(src, zeros, dst, zeros, shape))
        em.add(WaitOp(tok.results[0]))
        task = TaskOp(name, 0, Region(block), range=(0, 1), predicted_cycles=0)
        task.location = loc
        self.add(task)

    def run(self) -> FuncOp:
        old = self.func.body.block
        ret = old.last_op
        if not isinstance(ret, ReturnOp):
            raise CompileError(self.pass_name, f"function @{self.func.sym_name.data} has no func.return", self.func)
        returned = list(ret.arguments)
        arg_types = [dram_type(shape_of(a), a) for a in old.args] + [dram_type(shape_of(v), v) for v in returned]
        self.block = Block(arg_types=arg_types)
        n_in = len(old.args)
        for a, b in zip(old.args, self.block.args):
            self.buf[a] = b
        outs = list(self.block.args[n_in:])
        writes_output: dict[SSAValue, SSAValue] = {}
        for v, o in zip(returned, outs):
            if isinstance(v.owner, KernelOp) and v.owner.kind.data != KernelKind.VIEW and v not in writes_output:
                writes_output[v] = o
        for v, o in zip(returned, outs):
            # a returned reshape of a kernel result: the kernel writes the output through a view
            src = v.owner.ins[0] if isinstance(v.owner, KernelOp) and v.owner.kind.data == KernelKind.VIEW else None
            if (src is not None and isinstance(src.owner, KernelOp) and src.owner.kind.data != KernelKind.VIEW
                    and src not in writes_output and o not in writes_output.values()):
                writes_output[src] = self.view(o, tuple(shape_of(src)))
        self.writes_output = writes_output
        self.placement = concat_placement(old, set(returned))
        self.in_place = {c for c, _ in self.placement.values()}
        for op in old.ops:
            if isinstance(op, ConstantOp):
                self.constant(op)
            elif isinstance(op, KernelOp):
                self.kernel(op)
            elif isinstance(op, ReturnOp):
                continue
            else:
                raise CompileError(self.pass_name, "expected only npu_tile.kernel and constants "
                                                   "(run npu-tile first)", op)
        for i, (v, o) in enumerate(zip(returned, outs)):
            if span(self.buf[v]) != span(o):  # (not already written there, maybe through views)
                self.copy_task(f"output{i}_copy", self.buf[v], o, ret.location)
        self.add(ReturnOp())
        new = FuncOp(self.func.sym_name.data, (arg_types, []), Region(self.block))
        for k, v in self.func.attributes.items():
            if k not in ("sym_name", "function_type"):
                new.attributes[k] = v
        new.location = self.func.location
        return new

    def mask(self, rows: list[float], inside: float, outside: float, like: SSAValue, loc: LocationAttr) -> SSAValue:
        """A small inline weight [1, 1, len(rows), 1] of the element type of the value it
        masks, `like`: `inside` where rows is 1, else `outside` (clamped to the type's finite
        range: a max-pool's -3.4e38 is f16's -65504)."""
        dt = np_dtype(like)
        info = ml_dtypes.finfo(dt) if is_float(element_type(like)) else np.iinfo(dt)
        values: list[float] | list[int] = [min(max(inside if r else outside, float(info.min)), float(info.max))
                                           for r in rows]
        if not is_float(element_type(like)):
            values = [int(v) for v in values]
        tensor = TensorType(element_type(like), [1, 1, len(values), 1])
        t = dram_type((1, 1, len(values), 1), tensor)
        self.inline_consts += 1
        attr = DenseIntOrFPElementsAttr.from_list(tensor, values)  # type: ignore[arg-type]  # (a float type)
        w = WeightOp(f"inline{self.inline_consts}", t, value=attr)
        w.location = loc
        return self.add(w).results[0]

    def constant(self, op: ConstantOp) -> None:
        t = dram_type(shape_of(op.result), op.result)
        if op.weight is not None:
            w = WeightOp(op.weight.data, t)
        else:
            self.inline_consts += 1
            w = WeightOp(f"inline{self.inline_consts}", t, value=op.value)
        w.location = op.location
        self.buf[op.result] = self.add(w).results[0]

    def placed(self, v: SSAValue) -> SSAValue:
        """The buffer of a value its consumer concat holds in place: a view of that concat's buffer."""
        if v not in self.buf:
            concat, off = self.placement[v]
            view = ViewOp(self.concat_buffer(concat), dram_type(shape_of(v), v), off)
            assert isinstance(v.owner, KernelOp)  # (a placed value is a kernel's result)
            view.location = v.owner.location
            self.buf[v] = self.add(view).results[0]
        return self.buf[v]

    def concat_buffer(self, c: SSAValue) -> SSAValue:
        """The buffer of an in-place concat (allocated when its first operand is produced)."""
        if c not in self.buf:
            if c in self.placement:
                return self.placed(c)
            assert isinstance(c.owner, KernelOp)  # (an in-place concat is a kernel's result)
            self.output_buffer(c, c.owner)
        return self.buf[c]

    def output_buffer(self, res: SSAValue, k: KernelOp, reuse: SSAValue | None = None) -> SSAValue:
        """Where kernel `k` writes its result `res`: a slice of an in-place concat, the
        function's output buffer, or a new DRAM buffer (that may take `reuse`'s bytes)."""
        if res in self.placement:
            return self.placed(res)
        if res in self.writes_output:
            out = self.writes_output[res]
        else:
            alloc = AllocOp(dram_type(shape_of(res), res), reuse=reuse)
            alloc.location = k.location
            out = self.add(alloc).results[0]
        self.buf[res] = out
        return out

    def kernel(self, k: KernelOp) -> None:
        res = k.outs[0]
        ins = [self.buf[v] for v in k.ins]
        if k.kind.data == KernelKind.VIEW:
            self.buf[res] = self.view(ins[0], shape_of(res))
            return
        if res in self.in_place:
            self.concat_buffer(res)  # its operands were written in place: nothing to move
            return
        try:
            if k.kind.data == KernelKind.GROUP and k.loop_names == ["h"]:
                loop = strip_loop_of(k)
                if loop is None:
                    raise TilingError("the strip group has no strip loop (run npu-tile-loops first)")
                splan = recorded_plan(loop.group_ops(), k.plan, self.arch, loop.stored()[1:])
                results: list[SSAValue] = list(loop.outs)
                at = [results.index(v) for v in k.yield_op.values]  # (kernel result -> loop result)
                placed = {i: self.output_buffer(r, k, strip_in_place_source(k, splan, ins, i))
                          for r, i in zip(k.outs, at)}
                block = self.strip_task(k, loop, splan, ins, [placed[i] for i in range(len(loop.outs))])
                tiles = k.trip_counts[0]
            elif k.kind.data == KernelKind.GROUP:
                outs = [self.output_buffer(r, k) for r in k.outs]
                block = self.group_task(k, ins, outs)
                tiles = k.trip_counts[0] if k.loop_names == [BATCH_LOOP] else 1
            else:
                ks = loop_shape(k)
                outs = [self.output_buffer(res, k, in_place_source(ks, ins) if len(k.outs) == 1 else None),
                        *(self.output_buffer(r, k) for r in k.outs[1:])]
                block = self.tiled_task(k, ins, outs)
                tiles = ks.parallel_tiles
        except TilingError as e:
            raise CompileError(self.pass_name, f"kernel '{k.kernel.data}': {e}", k) from None
        pc = k.predicted_cycles.value.data if k.predicted_cycles else None
        nb = k.dram_bytes.value.data if k.dram_bytes else None
        parts = k.parts.value.data if k.parts else None
        task = TaskOp(k.kernel.data, 0, Region(block), range=(0, tiles), predicted_cycles=pc,
                      dram_bytes=nb, parts=parts, part_cycles=k.part_cycles)
        task.location = k.location
        bad = lower_compute(task)
        if bad is not None:
            raise CompileError(self.pass_name, f"kernel '{k.kernel.data}': {describe_unlowered(bad)}", bad)
        self.add(task)


    def group_task(self, k: KernelOp, ins: list[SSAValue], outs: list[SSAValue]) -> Block:
        """The body of a layer group's task: its loads and ops on the DRAM buffers'
        tensors, lowered by the patterns of `group_patterns.py`."""
        block = Block(arg_types=[INDEX, INDEX])
        em = Emitter(block, block, {}, k.location)
        vmap: dict[SSAValue, SSAValue] = {a: em.add(ToTensorOp(b)).results[0] for a, b in zip(k.body.block.args, ins)}
        ops = [o for o in k.body.block.ops if not isinstance(o, TileYieldOp)]
        if k.loop_names == [BATCH_LOOP]:
            return self.batch_group_task(k, ops, block, em, vmap, outs)
        body = [o.clone(vmap) for o in ops]
        block.add_ops(body)
        bufs = assign_group_buffers(k, body, outs, em, self.arch)
        region = Region(block)
        lower_group(bufs, region)
        return region.detach_block(block)

    def batch_group_task(self, k: KernelOp, ops: list[Operation], block: Block, em: Emitter,
                         vmap: dict[SSAValue, SSAValue], outs: list[SSAValue]) -> Block:
        """A batch-split group's task: an `scf.for` over its slices [lo, hi), each loading
        the rows of its slice of the batched inputs (and every weight), computing and
        storing its rows, waited for before the next slice reuses the SRAM
        (`lowering/tile/batch_split.py`). Its buffers are declared in the task block."""
        (rows,) = k.tile_sizes
        _, batched = kernel_batch(k, ops)
        step = Block(arg_types=[INDEX])
        body = slice_ops(ops, batched, rows, dict(vmap))
        step.add_ops(body)
        inner = em.nested(step)
        bufs = assign_group_buffers(k, body, outs, inner, self.arch)
        bufs.row0 = inner.at(body[0]).mul_c(step.args[0], rows)
        region = Region(step)
        lower_group(bufs, region)
        region.detach_block(step)
        stores = [o for o in step.ops if isinstance(o, CopyOp) and memory_space(o.dst.type) == "dram"]
        step.add_ops([*(WaitOp(o.results[0]) for o in stores), scf.YieldOp()])  # (the next slice reuses the SRAM)
        em.add(scf.ForOp(block.args[0], block.args[1], em.const(1), [], Region(step)))
        return block

    def strip_task(self, k: KernelOp, loop: StripLoopOp, plan: StripPlan, ins: list[SSAValue],
                   outs: list[SSAValue]) -> Block:
        """The body of a strip group's task: its `npu_tile.strip_loop` on the DRAM buffers'
        tensors (`outs`: those of the loop's results), lowered by the patterns of
        `strip_patterns.py`."""
        block = Block(arg_types=[INDEX, INDEX])
        em = Emitter(block, block, {}, k.location)
        args = k.body.block.args
        placed = loop.clone({a: em.add(ToTensorOp(b)).results[0] for a, b in zip(args, ins)})
        bufs = assign_strip_buffers(placed, plan, em, dict(zip(args, ins)), outs, self.arch,
                                    lambda rows, inside, outside, like: self.mask(rows, inside, outside, like,
                                                                                  k.location))
        em.add(placed)
        region = Region(block)
        lower_strip_loop(bufs, region)
        return region.detach_block(block)

    def tiled_task(self, k: KernelOp, ins: list[SSAValue], outs: list[SSAValue]) -> Block:
        """The body of a tiled kernel's task: its `npu_tile.loop` on the DRAM buffers'
        tensors, lowered by the patterns of `tile_loop_patterns.py`."""
        loop = loop_of(k)
        assert loop is not None  # (loop_shape checked)
        block = Block(arg_types=[INDEX, INDEX])
        em = Emitter(block, block, {}, k.location)
        vmap: dict[SSAValue, SSAValue] = {a: em.add(ToTensorOp(b)).results[0] for a, b in zip(k.body.block.args, ins)}
        loop = loop.clone(vmap)
        bufs = assign_buffers(loop, em, self.arch, outs, self.view)
        em.add(loop)
        region = Region(block)
        lower_tile_loop(bufs, region)
        return region.detach_block(block)


@dataclass(frozen=True)
class Bufferize(ModulePass):
    """Lower tiled kernels to DMA + compute tasks on DRAM/SRAM buffers (one task per kernel)."""

    name = "npu-bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)
        for func in list(op.ops):
            if isinstance(func, FuncOp) and func.body.blocks:
                new = FuncBuilder(func, arch, self.name).run()
                op.body.block.insert_op_before(new, func)
                op.body.block.erase_op(func)
        narrow_sums(op, self.name)


NARROW = {"f16": "f32", "bf16": "f32", "i8": "i32", "u8": "i32"}
"""Element types a running sum must not be held in between steps, and the type it
should be held in."""


def narrow_sums(module: ModuleOp, pass_name: str) -> None:
    """The accumulation guard (issue 45): a remark for every compute op that adds into
    a buffer of a type narrower than f32 or i32 (`accumulate`: a later reduction step
    of a matmul, conv or structured op merging into its running tile), which rounds
    the sum at every step. No lowering makes one today (f16/bf16 products sum in an f32
    tile: `tile_search.wide_accumulator`); the remark keeps it from happening silently."""
    from lowering.remarks import remark
    from npu_dialects.compute import ComputeOp
    from npu_dialects.dtypes import type_name
    from npu_dialects.locs import node_names
    for o in module.walk():
        if isinstance(o, ComputeOp) and "accumulate" in o.attributes:
            t = type_name(element_type(o.operands[-1]))
            if t in NARROW:
                task = o.parent_op()
                while task is not None and not isinstance(task, TaskOp):
                    task = task.parent_op()
                nodes = node_names(o) or ([task.kernel.data] if task is not None else [])
                what = f"{o.name} {o.attributes['op'].data}" if "op" in o.attributes else o.name  # type: ignore[attr-defined]
                remark(pass_name, "missed", nodes, f"a sum is held in {t} between reduction steps "
                       f"('{what}' adds into a buffer of {t}, rounding at every step; {NARROW[t]} would not)")




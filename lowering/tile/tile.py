"""`npu-tile`: turn every kernel (an `npu_graph.fused` group or a lone graph op)
into an `npu_tile.kernel` with tile sizes chosen for the module's arch.

For each kernel it keeps the tile-size candidates whose tile buffers fit
`sram_bytes` and picks the cheapest by the cost model (`lowering/tile/costmodel.py`).
The choice is recorded on the op: `loops`, `tile`, `grid`, `double_buffer`,
`sram_bytes`, `predicted_cycles` (one core). Reshapes become `view` kernels (no
data movement). Constants stay.

Options: `double-buffer` (default true) lets the search double buffer input
tiles where the cost model says the overlap beats the halved tile size;
false never does.
Errors: a kernel with no tiling that fits, or an op with no tiling yet,
is a diagnostic naming the kernel and its ONNX nodes.

Algorithm
---------
For each kernel it enumerates tile-size candidates per loop (powers of two,
multiples of the cube dimensions, the full extent), with and without double
buffering, keeps those whose tile buffers fit `sram_bytes` (both halves when
double buffering), and picks the cheapest by the cost model (cycles spread over
the cores).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from lowering import kernel_cache
from lowering.errors import CompileError
from lowering.remarks import enabled as remarks_enabled
from lowering.remarks import remark
from lowering.tile.costmodel import best_parts, cycles_then_bytes, kernel_dram_bytes, parallel_cycles, part_spans
from lowering.tile.roofline import MACS_ATTR, annotate
from lowering.tile.tile_search import (
    TilingError,
    compile_jobs,
    ordered,
    search,
    search_many,
    split_kernel,
    sram_bytes,
    step_special,
    with_epilogue,
)
from npu_dialects.arch import arch_of
from npu_dialects.graph import (
    ConstantOp,
    FusedOp,
    GatherOp,
    GraphOp,
    ReshapeOp,
    YieldOp,
    shape_of,
)
from npu_dialects.locs import node_names
from npu_dialects.tile import KernelKind, KernelOp, TileYieldOp


def kernel_ins(op: Operation) -> list[SSAValue]:
    """The kernel inputs of a fused op or a lone op (its distinct operands), in order:
    its body block's arguments (`kernel_body`)."""
    if isinstance(op, FusedOp):
        return list(op.ins)
    return list(dict.fromkeys(op.operands))


def kernel_body(op: Operation) -> tuple[list[SSAValue], Block]:
    """Inputs and a fresh body block (graph ops + npu_tile.yield) for a fused op or a lone op."""
    if isinstance(op, FusedOp):
        ins = list(op.ins)
        block = Block(arg_types=[v.type for v in ins])
        mapping: dict[SSAValue, SSAValue] = dict(zip(op.body.block.args, block.args))
        for inner in op.body.block.ops:
            if isinstance(inner, YieldOp):
                block.add_op(TileYieldOp(*[mapping[v] for v in inner.values]))
            else:
                clone = inner.clone(value_mapper=mapping)
                block.add_op(clone)
                mapping.update(zip(inner.results, clone.results))
        return ins, block
    ins = kernel_ins(op)
    block = Block(arg_types=[v.type for v in ins])
    args: dict[SSAValue, SSAValue] = dict(zip(ins, block.args))
    clone = op.clone(value_mapper=args)
    block.add_ops([clone, TileYieldOp(*clone.results)])
    return ins, block


def kernel_signature(ops: list[Operation], arch, double_buffer: bool) -> tuple:
    """What a kernel's tiling depends on: its ops with their attributes and operand/
    result types (not values or names), the machine and the search options. Equal
    layers of a network (ResNet's repeated blocks) share one search."""
    sig = []
    index = {o: i for i, o in enumerate(ops)}  # (an op's position: once, not a scan per operand)
    for o in ops:
        attrs = tuple(sorted((k, str(v)) for k, v in o.attributes.items()))
        sig.append((o.name, attrs, tuple(v.type for v in o.operands), tuple(r.type for r in o.results),
                    tuple(index.get(v.owner, -1) if isinstance(v.owner, Operation) else -1 for v in o.operands)))
    return (tuple(sig), arch, double_buffer)


TILE_SEARCH = "tile-search"
"""The `lowering.kernel_cache` kind of npu-tile's searches: (tile, double buffered?) by
`kernel_signature`."""


class KernelNames:
    """Unique kernel names derived from ONNX node names."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, op: Operation) -> str:
        if isinstance(op, FusedOp) and op.kernel is not None:
            base = op.kernel.data
        else:
            names = node_names(op)
            base = names[0] if names else op.name.split(".")[-1]
        name, i = base, 1
        while name in self.used:
            i += 1
            name = f"{base}#{i}"
        self.used.add(name)
        return name


SLOW_PATHS: dict[type[Operation], str] = {
    GatherOp: "an element gather on the vector unit (no cube or DMA mapping): Gather with computed "
              "indices, and the index maps of Resize, Pad's edge/reflect/wrap modes, GatherElements, "
              "GatherND, Tile, Scatter*, MaxPool's Indices",
}
"""Ops whose kernels run on a slow path, and why: `slow_path_remark` names them."""


def slow_path_remark(pass_name: str, op: Operation, kname: str, body_ops: list[Operation]) -> None:
    """A `missed` remark for each slow-path op (`SLOW_PATHS`) in a kernel's body."""
    for o in body_ops:
        why = SLOW_PATHS.get(type(o))
        if why is not None:
            remark(pass_name, "missed", node_names(op) or [kname], f"kernel '{kname}': slow path: '{o.name}' is {why}")


SEARCHES: "weakref.WeakKeyDictionary[ModuleOp, dict[tuple, tuple[dict[str, int], bool]]]" = \
    weakref.WeakKeyDictionary()
"""Each module's tilings by kernel signature (`kernel_signature`), kept across npu-tile
runs on it. `share_searches` lets a copy use the same ones: npu-split-concat-conv's trial
plan on a copy, then the compile of the module, search each kernel once. A new module
(another compile, a benchmark's repeat) starts empty."""


def share_searches(module: ModuleOp, copy: ModuleOp) -> None:
    """Let npu-tile on `copy` and on `module` share one memo of searches."""
    SEARCHES[copy] = SEARCHES.setdefault(module, {})


@dataclass(frozen=True)
class Tile(ModulePass):
    """Choose tile sizes per kernel so its buffers fit SRAM, ranked by the cost model."""

    name = "npu-tile"
    double_buffer: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        arch = arch_of(op)
        self._memo: dict[tuple, tuple[dict[str, int], bool]]  # (declared: the pass itself is frozen)
        object.__setattr__(self, "_memo", SEARCHES.setdefault(op, {}))  # equal signatures share a search
        if MACS_ATTR not in op.attributes:
            annotate(op, arch)  # the model's work, for roofline reports after lowering
        self.check_graph_ops(op)
        names = KernelNames()
        work = [(g, names(g), kernel_body(g)) for func in op.ops if isinstance(func, FuncOp)
                for g in list(func.body.block.ops) if isinstance(g, GraphOp) and not isinstance(g, ConstantOp)]
        self.search_ahead([body for _, _, body in work], arch)
        for g, kname, body in work:
            self.tile_one(g, kname, arch, body)

    def check_graph_ops(self, module: ModuleOp) -> None:
        """Every op of a function body is a graph op (or its return): another dialect's op
        (a plugin's, not lowered) is a diagnostic naming it, not a later pass's confusion."""
        for func in module.ops:
            if not isinstance(func, FuncOp):
                continue
            for o in func.body.block.ops:
                if not isinstance(o, (GraphOp, KernelOp)) and o is not func.body.block.last_op:
                    raise CompileError(self.name, f"'{o.name}' is not an npu_graph op, so it cannot be tiled: no "
                                                  "pass lowered it (a plugin's op needs its lowering pass first, "
                                                  "e.g. -p 'builtin.module(my-lower-pass,npu-default)')", o)

    def search_ahead(self, bodies: list[tuple[list[SSAValue], Block]], arch) -> None:
        """Run the searches of all kernels with distinct signatures up front, in parallel
        (`search_many`), into the memo `tile_one` reads."""
        jobs: dict[tuple, tuple] = {}
        for _, block in bodies:
            body_ops = [o for o in block.ops if not isinstance(o, TileYieldOp)]
            if (len(body_ops) == 1 and isinstance(body_ops[0], ReshapeOp)) or any(
                    0 in shape_of(r) for o in body_ops for r in o.results):
                continue
            try:
                anchor, steps, extra = split_kernel(body_ops, {a: i for i, a in enumerate(block.args)})
            except TilingError:
                continue  # (tile_one reports it)
            key = kernel_signature(body_ops, arch, self.double_buffer)
            if key not in self._memo and key not in jobs:
                kept = kernel_cache.lookup(TILE_SEARCH, key)  # (an earlier compile's search of this kernel)
                if isinstance(kept, list) and len(kept) == 2:
                    self._memo[key] = (dict(kept[0]), bool(kept[1]))
                else:
                    jobs[key] = (anchor, extra, steps, arch, self.double_buffer, cycles_then_bytes)
        for key, found in zip(jobs, search_many(list(jobs.values()), compile_jobs())):
            if found is not None:
                self._memo[key] = found
                kernel_cache.store(TILE_SEARCH, key, [found[0], found[1]])

    def tile_one(self, op: Operation, kname: str, arch, body: tuple[list[SSAValue], Block]) -> None:
        _, block = body
        ins = kernel_ins(op)  # (operands now: the kernels before it replaced their ops)
        body_ops = [o for o in block.ops if not isinstance(o, TileYieldOp)]
        if len(body_ops) == 1 and isinstance(body_ops[0], ReshapeOp):
            kernel = KernelOp(kname, ins, [r.type for r in op.results], Region(block), kind=KernelKind.VIEW,
                              loops=[], tile=[], grid=[], double_buffer=False, sram_bytes=0,
                              predicted_cycles=0)
        else:
            if any(0 in shape_of(r) for r in op.results):
                raise CompileError(self.name, f"kernel '{kname}': zero-sized results are not supported", op)
            ins_index: dict[SSAValue, int] = {a: i for i, a in enumerate(block.args)}
            try:
                anchor, steps, extra = split_kernel(body_ops, ins_index)
                key = kernel_signature(body_ops, arch, self.double_buffer)
                if key not in self._memo:
                    ks, db, _ = search(anchor, extra, steps, arch, self.double_buffer, cycles_then_bytes)
                    self._memo[key] = (ks.tile, db)
                tile, db = self._memo[key]
                ks = ordered(with_epilogue(anchor.shape(tile), extra, steps, anchor.elems, anchor.op.results[0]), arch)
            except TilingError as e:
                raise CompileError(self.name, f"kernel '{kname}': {e}", op) from None
            passes = len(steps) + (ks.accumulator is not None)  # (a 16-bit sum's cast to its type: `wide_accumulator`)
            passes += sum(arch.special_passes(step_special(s)) for s in steps)
            parts, _ = best_parts(ks, arch, db, passes)
            # the span on 1..parts cores: one core's time, or the parts' (sharing DRAM) without the syncs
            spans = part_spans(lambda k: parallel_cycles(ks, arch, db, passes, k), parts, arch.sync_latency)
            predicted = spans[-1]
            if remarks_enabled():
                remark(self.name, "applied", node_names(op) or [kname],
                       f"kernel '{kname}': tile {dict((l.name, ks.tile[l.name]) for l in ks.loops)}, grid "
                       f"{list(ks.grid)}, {'double' if db else 'single'} buffered, {sram_bytes(ks, arch, db)} of "
                       f"{arch.sram_bytes} SRAM bytes, on {parts} core(s): predicted {predicted} cycles, "
                       f"{kernel_dram_bytes(ks, arch, parts)} DRAM bytes")
                slow_path_remark(self.name, op, kname, body_ops)
            kernel = KernelOp(kname, ins, [r.type for r in op.results], Region(block), kind=ks.kind,
                              loops=[l.name for l in ks.loops], tile=[ks.tile[l.name] for l in ks.loops],
                              grid=ks.grid, double_buffer=db,
                              sram_bytes=sram_bytes(ks, arch, db),
                              predicted_cycles=predicted,
                              dram_bytes=kernel_dram_bytes(ks, arch, parts),
                              parts=parts, part_cycles=spans if parts > 1 else ())
        kernel.location = op.location
        Rewriter.insert_op(kernel, InsertPoint.before(op))
        for old, new in zip(op.results, kernel.results):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)

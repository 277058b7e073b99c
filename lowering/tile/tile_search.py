"""Tiling math, independent of IR rewriting: the loop nest of each kernel kind,
the window every operand tile reads or writes, SRAM sizing and the tile-size
search ranked by the cost model (`lowering/tile/costmodel.py`).

A kernel is an *anchor* op (matmul/gemm, conv2d, max-pool or an elementwise op)
plus an elementwise *epilogue* applied to the output tile. Loops are listed
outermost first; all parallel loops come before the single reduction loop.
A `Window` gives, per dimension of an operand, `offset = sum(coef * loop
index) + const` and a static size, so bufferization can emit the DMA for any
tile from loop indices alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from math import ceil, prod
from typing import Any, ClassVar, TypeVar

from xdsl.dialects.builtin import TensorType, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue

from npu_dialects.arch import Arch
from npu_dialects.dtypes import elem_bytes, element_type, f32, type_name
from npu_dialects.graph import (
    AttentionOp,
    ConcatOp,
    Conv2dOp,
    DequantizeOp,
    ElementwiseOp,
    GemmOp,
    LayerNormApplyOp,
    LayerNormOp,
    MatMulOp,
    MaxPoolOp,
    QuantOp,
    RequantizeOp,
    RowStatsOp,
    SoftmaxOp,
    StructuredOp,
    TableOp,
    attr_int,
    broadcast_shapes,
    shape_of,
)
from npu_dialects.special import ELTWISE_USES
from npu_dialects.tile import KernelKind

F32 = elem_bytes(f32)  # (a window's default element size: an f32 tensor's)
T = TypeVar("T")


class TilingError(ValueError):
    """The kernel has no tiling on this arch (message names the reason)."""


@dataclass(frozen=True)
class Loop:
    name: str
    extent: int
    reduction: bool = False


@dataclass(frozen=True)
class DimMap:
    """offset = sum(coef * index(loop)) + const along one operand dimension."""

    terms: tuple[tuple[str, int], ...]
    const: int
    size: int


@dataclass(frozen=True)
class Window:
    """The tile of one DRAM operand touched per step.

    `source` is the kernel input index (or None for the output); `shape` is the
    shape the DRAM buffer is viewed with (rank-extended for broadcasts);
    `pad_value` fills reads outside the tensor (None: must stay inside); `elem`, the
    bytes of one element of the tensor it slices (`dtypes.elem_bytes`)."""

    source: int | None
    shape: tuple[int, ...]
    dims: tuple[DimMap, ...]
    pad_value: float | None = None
    elem: int = field(default=F32, kw_only=True)

    @cached_property
    def sizes(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims)

    @cached_property
    def nbytes(self) -> int:
        return prod(self.sizes) * self.elem

    def valid_bytes(self) -> int:
        """Bytes moved by an interior tile (no padding outside the tensor)."""
        return self._valid_bytes

    @cached_property
    def _valid_bytes(self) -> int:
        n = self.elem
        for d, s in zip(self.dims, self.shape):
            n *= d.size if d.size < s else s
        return n


def per_tile(loop: str, tile: int, const: int = 0, size: int | None = None) -> DimMap:
    return DimMap(((loop, tile),), const, tile if size is None else size)


def fixed(size: int, const: int = 0) -> DimMap:
    return DimMap((), const, size)


@dataclass
class KernelShape:
    """The loop nest and operand windows of a kernel for one choice of tile sizes."""

    kind: KernelKind
    loops: list[Loop]
    tile: dict[str, int]
    loads: list[Window]  # anchor inputs, loaded every step
    out: Window
    epilogue: list[Window] = field(default_factory=list)  # one per epilogue op operand
    window_area: int = 1  # vector work per output element (pool window, apply cost)
    prologue_len: int = 0  # vector passes of the prologue on the first load's tile before the anchor
    tile_cycles: Callable[[Arch], int] | None = None  # a structured op's cycles per tile (`tile_cycles`)
    scratch: Callable[[Arch], int] | None = None  # SRAM bytes a tile's compute holds besides its inputs and output
    init: int | None = None  # the epilogue window a reduction may start from (`init_window`)
    tees: list[Window] = field(default_factory=list)  # written every step (`npu_tile.tee`); source: result index
    seams: list[Window] = field(default_factory=list)  # per tee, the rest of its tile (`AppendAttentionAnchor`)
    finish: Callable[[Arch], int] | None = None  # cycles the last reduction step's merge adds (once per output tile)
    chain: list[int] = field(default_factory=list)  # element bytes of the epilogue's other typed tile buffers
    accumulator: Attribute | None = None  # a wider type the reduction sums in (`wide_accumulator`), cast after

    def _counts(self) -> tuple[list[int], int, int]:
        """(grid, parallel tiles, reduction tiles), computed once per `tile` dict (the
        search asks often; tile and loops never change)."""
        cached = self.__dict__.get("_grid")
        if cached is None or cached[0] is not self.tile:
            grid = [ceil(l.extent / self.tile[l.name]) for l in self.loops]
            cached = (self.tile, grid, prod(g for l, g in zip(self.loops, grid) if not l.reduction),
                      prod(g for l, g in zip(self.loops, grid) if l.reduction))
            self.__dict__["_grid"] = cached
        return cached[1:]

    @property
    def grid(self) -> list[int]:
        return self._counts()[0]

    @property
    def parallel_tiles(self) -> int:
        return self._counts()[1]

    @property
    def reduction_tiles(self) -> int:
        return self._counts()[2]

    @property
    def init_window(self) -> Window | None:
        """The epilogue window the sum over the reduction steps starts from (`init`), when
        there are such steps: it is loaded into the accumulator at an output tile's
        first step (one of `per_tile`, in no slot of its own) and its add leaves the
        epilogue."""
        return self.epilogue[self.init] if self.init is not None and self.reduction_tiles > 1 else None

    def epilogue_loads(self) -> list[Window]:
        """The epilogue windows loaded into slots of their own (all but `init_window`)."""
        iw = self.init_window
        return [w for w in self.epilogue if w is not iw]

    def per_step(self) -> list[Window]:
        """The windows loaded at every step: the anchor's, and the epilogue's when there is
        one reduction step (with more they are loaded once, at the last)."""
        return self.loads + (self.epilogue if self.reduction_tiles == 1 else [])

    def is_hoisted(self, w: Window) -> bool:
        """Window `w` (of `per_step`) stays put over all the kernel's steps (every loop
        it moves with has one tile), so it is loaded once per task, before its step
        loop, into one slot. Not with a single step (nothing to hoist) nor for a conv
        prologue's input (the prologue rewrites its tile in place every step)."""
        grid = dict(zip((l.name for l in self.loops), self.grid))
        if prod(grid.values()) == 1 or (self.prologue_len and w is self.loads[0]):
            return False
        return all(grid[name] == 1 for d in w.dims for name, c in d.terms if c)

    def is_per_tile(self, w: Window) -> bool:
        """Window `w` (of `per_step`, not hoisted) stays put over the reduction steps of
        an output tile (it moves with no reduction loop that iterates), so it is loaded
        once per output tile, at its first reduction step, into one slot (attention's
        query rows over the key blocks)."""
        if self.reduction_tiles == 1:
            return False
        moving = {l.name for l, g in zip(self.loops, self.grid) if l.reduction and g > 1}
        return not any(name in moving for d in w.dims for name, c in d.terms if c)

    def split(self) -> tuple[list[Window], list[Window], list[Window]]:
        """(piped: the windows loaded every step, double buffered when the kernel is;
        hoisted: loaded once per task, `is_hoisted`; per-tile: once per output tile,
        `is_per_tile`), computed once per loads and epilogue lists (`load_split` is
        the split the cost model and npu-bufferize use)."""
        cached = self.__dict__.get("_split")
        if (cached is None or cached[0] is not self.loads or cached[1] is not self.epilogue
                or cached[2] is not self.tile):
            ws = self.per_step()
            kind = [0 if not self.is_hoisted(w) else 1 for w in ws]
            kind = [2 if k == 0 and self.is_per_tile(w) else k for w, k in zip(ws, kind)]
            piped, hoisted, per_tile = ([w for w, k in zip(ws, kind) if k == c] for c in range(3))
            per_tile += [self.init_window] if self.init_window is not None else []
            cached = (self.loads, self.epilogue, self.tile, (piped, hoisted, per_tile))
            self.__dict__["_split"] = cached
        return cached[3]

    def memo(self, name: str, arch: Arch, compute: Callable[[], T]) -> T:
        """`compute()`, a fact of this tiling on `arch`, computed once: the search asks
        each candidate's SRAM and cost terms for every core count and buffering mode.
        Recomputed when the windows or tile were replaced since (as `split`)."""
        hit = self.__dict__.get(name)
        if (hit is None or hit[0] is not self.loads or hit[1] is not self.epilogue or hit[2] is not self.tile
                or hit[3] is not self.out or hit[4] is not arch):
            hit = (self.loads, self.epilogue, self.tile, self.out, arch, compute())
            self.__dict__[name] = hit
        return hit[5]


def coalesce_dim(dims: Sequence[tuple[tuple[tuple[Any, int], ...], int, int]], shape: Sequence[int], red: Any,
                 blocks: int) -> int | None:
    """The dim d along which a window's tiles at the `blocks` steps of reduction loop
    `red` are consecutive blocks, together one contiguous run of the buffer landing
    them: d moves with `red` alone by its size, every dim before d has size 1, and
    the blocks stay inside the tensor along d. None otherwise. `dims`: per dim, its
    (loop, coefficient) terms, constant and size."""
    moving = [d for d, (terms, _, _) in enumerate(dims) if any(k == red and c for k, c in terms)]
    if len(moving) != 1:
        return None
    d = moving[0]
    terms, const, size = dims[d]
    if tuple(terms) != ((red, size),) or any(sz != 1 for _, _, sz in dims[:d]) or const < 0 \
            or const + blocks * size > shape[d]:
        return None
    return d


def coalesces(blocks: int, block_bytes: int, arch: Arch) -> bool:
    """A window's `blocks` reduction blocks of `block_bytes` each may load as one when
    together they are under `dram_bw` x `dma_latency` bytes: each block alone spends
    longer in its descriptor's latency than in its transfer."""
    return blocks > 1 and blocks * block_bytes <= arch.dram_bw * arch.dma_latency


def coalesced(candidates: Sequence[tuple[T, int]], loads: int, arch: Arch) -> list[T]:
    """Which of a step's `loads` pipelined loads load their blocks as one, from the
    `candidates` (load, block bytes) that may (`coalesces`): the smallest first while
    the step issues more loads than the core has DMA channels (each one past them
    stalls the core, every step, until a channel frees: at least a latency)."""
    out = []
    for c, _ in sorted(candidates, key=lambda x: x[1]):
        if loads - len(out) <= arch.dma_channels:
            break
        out.append(c)
    return out


def load_split(ks: KernelShape, arch: Arch) -> tuple[list[Window], list[Window], list[Window]]:
    """`KernelShape.split` with each small window keyed by the reduction loop loaded as
    one (`coalesce_dim`, `coalesces`: an attention mask's or causal key positions' key
    blocks): its whole run over the reduction steps is hoisted, or per-tile when a
    parallel loop moves it, as `npu-bufferize` lands it; each step reads its block."""
    def compute() -> tuple[list[Window], list[Window], list[Window]]:
        piped, hoisted, per_tile = (list(x) for x in ks.split())
        grid = dict(zip((l.name for l in ks.loops), ks.grid))
        red = [l.name for l in ks.loops if l.reduction and grid[l.name] > 1]
        if len(red) != 1:
            return piped, hoisted, per_tile
        r = ks.reduction_tiles
        dims: dict[int, int] = {}  # (piped index -> the dim its blocks run along)
        for i, w in enumerate(piped):
            d = coalesce_dim([(m.terms, m.const, m.size) for m in w.dims], w.shape, red[0], r)
            # (not a conv prologue's input: the prologue rewrites its tile in place every step)
            if d is not None and coalesces(r, w.nbytes, arch) and not (ks.prologue_len and w is ks.loads[0]):
                dims[i] = d
        for i in sorted(coalesced([(i, piped[i].nbytes) for i in dims], len(piped), arch), reverse=True):
            w, d = piped.pop(i), dims[i]
            whole = replace(w, dims=tuple(DimMap((), m.const, m.size * r) if j == d else m for j, m in enumerate(w.dims)))
            moves = any(grid[n] > 1 for m in whole.dims for n, c in m.terms if c)
            (per_tile if moves else hoisted).append(whole)
        return piped, hoisted, per_tile

    return ks.memo("_load_split", arch, compute)


def align_up(n: int, a: int) -> int:
    """n rounded up to a multiple of a (buffer sizes and offsets at `align`)."""
    return (n + a - 1) // a * a


def first_fit(size: int, busy: list[tuple[int, int]], align: int) -> int:
    """Lowest aligned offset where [off, off+size) misses every busy interval."""
    off = 0
    for lo, hi in sorted(busy):
        if off + size <= lo:
            break
        off = max(off, align_up(hi, align))
    return off


def sram_bytes(ks: KernelShape, arch: Arch, double_buffer: bool) -> int:
    """SRAM needed by the tile buffers; pipelined loads take two slots when double
    buffered, hoisted and per-tile ones one."""
    piped, rest = ks.memo("_sram", arch, lambda: sram_parts(ks, arch))
    return piped * (2 if double_buffer else 1) + rest


def stores_deferred(ks: KernelShape, arch: Arch) -> bool:
    """Whether a double-buffered tiling's output tiles alternate between two buffers,
    each step's store awaited only before the next one's (npu-bufferize's
    `TileBuffers.store_pair`): one step per output tile, more than one output tile,
    and SRAM left for the second buffer."""
    return (ks.reduction_tiles == 1 and ks.parallel_tiles > 1
            and sram_bytes(ks, arch, True) + align_up(ks.out.nbytes, arch.align) <= arch.sram_bytes)


def sram_parts(ks: KernelShape, arch: Arch) -> tuple[int, int]:
    """(bytes of one slot of the pipelined loads, bytes of every other buffer; the
    accumulator start, `init_window`, lands in the output tile's)."""
    piped, hoisted, per_tile = load_split(ks, arch)
    once = hoisted + per_tile + ([] if ks.reduction_tiles == 1 else ks.epilogue)
    rest = sum(align_up(w.nbytes, arch.align) for w in once if w is not ks.init_window)
    out = ks.out.nbytes // ks.out.elem
    rest += sum(align_up(out * e, arch.align) for e in ks.chain)
    return (sum(align_up(w.nbytes, arch.align) for w in piped),
            rest + align_up(ks.out.nbytes, arch.align) + align_up(ks.scratch(arch) if ks.scratch else 0, arch.align))


# ----------------------------------------------------------------------------------------
# Kernel kinds
# ----------------------------------------------------------------------------------------


class TableShape(tuple):
    """The shape of an epilogue's lookup table (`TableOp`): not broadcast to the output
    but loaded whole ([256]), or [C, 256] with C following the output's dim `axis`."""

    axis: int | None

    def __new__(cls, shape: Sequence[int], axis: int | None):
        obj = super().__new__(cls, tuple(shape))
        obj.axis = axis
        return obj

    def __getnewargs__(self):  # (pickled for the parallel tile search)
        return tuple(self), self.axis


def broadcast_window(operand: int, operand_shape: Sequence[int], out: Window, elem: int | None = None) -> Window:
    """Window of an operand that broadcasts to the output: size-1 dims stay at 0 (`elem`:
    its element bytes, by default the output's); a `TableShape` its own way."""
    if isinstance(operand_shape, TableShape):
        ax = operand_shape.axis
        dims = (*((out.dims[ax],) if ax is not None else ()), fixed(operand_shape[-1]))
        return Window(operand, tuple(operand_shape), dims, None, elem=out.elem if elem is None else elem)
    rank = len(out.shape)
    shape = (1,) * (rank - len(operand_shape)) + tuple(operand_shape)
    dims = tuple(fixed(1) if s == 1 else o for s, o in zip(shape, out.dims))
    return Window(operand, shape, dims, None, elem=out.elem if elem is None else elem)


@dataclass
class Anchor:
    """The tiling interface of an anchor op (an external model, as MLIR attaches
    `TilingInterface` to ops it does not define): its loops, the windows of a tile
    plan, the tile-size candidates, and the op that computes one tile."""

    kind: KernelKind
    op: Operation
    inputs: list[SSAValue]  # anchor operands that are tiled per step (in order)
    elems: dict[int, int] = field(default_factory=dict)  # kernel input index -> its element bytes (`input_elems`)
    whole: frozenset[int] = frozenset()  # output dims a tile keeps whole (a row op in the epilogue: `row_dims`)
    exhaustive_limit: ClassVar[int] = 512
    """Tile spaces up to this many candidates are searched exhaustively; larger ones by
    hill climbing from several starts (conv layers of real networks have ~10^4)."""

    def loops(self) -> list[Loop]:
        raise NotImplementedError

    def elem(self, source: int | None) -> int:
        """Element bytes of kernel input `source` (None: of the anchor's result)."""
        return elem_bytes(self.op.results[0]) if source is None else self.elems[source]

    def window(self, source: int | None, shape: Sequence[int], dims: tuple[DimMap, ...],
               pad_value: float | None = None) -> Window:
        """A window of kernel input `source` (None: of the result), sized by its element type."""
        return Window(source, shape, dims, pad_value, elem=self.elem(source))  # type: ignore[arg-type]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        raise NotImplementedError

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        raise NotImplementedError

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """The op on the loaded `tiles` computing one output tile of type `out` (in the
        `npu_tile.loop` body): by default the op itself, re-typed."""
        return type(self.op).create(operands=list(tiles), result_types=[out], attributes=dict(self.op.attributes))

    def combine(self, ks: KernelShape) -> str | None:
        """How `npu_tile.reduce` merges the tiles of the reduction loop (None: a sum)."""
        return None


def input_elems(ins_index: dict[SSAValue, int]) -> dict[int, int]:
    """Kernel input index -> element bytes, from a kernel's `ins_index` (a value standing
    for an input, e.g. a prologue's result, never overrides the input's own type)."""
    out: dict[int, int] = {}
    for v, i in ins_index.items():
        out.setdefault(i, elem_bytes(v))
    return out


TILING_MODELS: dict[type[Operation], Callable[[Any, dict[SSAValue, int]], Anchor]] = {}
"""Anchor op class -> its tiling model; `make_anchor` looks an op's classes up in order."""


def tiling_model(*op_types: type[Operation]):
    """Register the decorated `Anchor` subclass as the tiling of `op_types` (and their subclasses)."""

    def register(cls: Any) -> Any:
        for t in op_types:
            TILING_MODELS[t] = cls
        return cls

    return register


def tile_candidates(extent: int, align: int = 1, limit: int | None = None) -> list[int]:
    """Tile sizes worth trying for one loop: powers of two, multiples of `align`, the extent."""
    out = {extent}
    p = 1
    while p < extent:
        out.add(p)
        p *= 2
    m = align
    while align > 1 and m < extent:
        out.add(m)
        m *= 2
    vals = sorted(out)
    return [v for v in vals if limit is None or v <= limit] or [vals[0]]


def three_halves(extent: int, align: int) -> list[int]:
    """3 x 2^i multiples of `align` below `extent`: between two powers of two, for an
    output tile whose accumulator would pass the SRAM at the next power."""
    out, t = [], 3 * align
    while t < extent:
        out.append(t)
        t *= 2
    return out


def core_shares(extent: int, align: int, cores: int) -> list[int]:
    """Tile sizes that give each of p = 2..cores cores one tile: ceil(extent / p) rounded
    up to a multiple of `align`, when that leaves exactly p tiles."""
    out = []
    for p in range(2, cores + 1):
        t = -(-extent // p)
        t = -(-t // align) * align
        if t < extent and -(-extent // t) == p:
            out.append(t)
    return out


@dataclass(frozen=True)
class MatmulViews:
    """A matmul's operands and result seen with one rank (numpy matmul broadcasting:
    a 1-D A is a row [1, K], a 1-D B a column [K, 1], leading 1s for missing batch
    dims), and its M, K, N."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    out: tuple[int, ...]
    m: int
    k: int
    n: int


def matmul_views(op: GemmOp | MatMulOp) -> MatmulViews:
    """The rank-extended shapes of a gemm/matmul (TilingError if batch dims do not broadcast)."""
    sa, sb = tuple(shape_of(op.operands[0])), tuple(shape_of(op.operands[1]))
    p = op.params if isinstance(op, GemmOp) else dict(trans_a=False, trans_b=False)
    sa = (1,) + sa if len(sa) == 1 else sa
    sb = sb + (1,) if len(sb) == 1 else sb
    m, k = (sa[-1], sa[-2]) if p["trans_a"] else sa[-2:]
    n = sb[-2] if p["trans_b"] else sb[-1]
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    if batch is None:
        raise TilingError(f"batch dims {list(sa[:-2])} and {list(sb[:-2])} do not broadcast")
    r = len(batch)
    return MatmulViews((1,) * (r - len(sa) + 2) + sa, (1,) * (r - len(sb) + 2) + sb,
                       tuple(batch) + (m, n), m, k, n)


@tiling_model(GemmOp, MatMulOp)
class MatmulAnchor(Anchor):
    """C[..., M, N] = op(A) @ op(B) with numpy matmul semantics: loops b0, b1, ...
    over the result's batch dims (tile 1 each), m, n (parallel), k (reduction).
    Operands are viewed with the result's rank (leading 1s; a 1-D A is a row
    [1, K], a 1-D B a column [K, 1]), so a broadcast batch dim of an operand
    stays at index 0 while the loop walks the result's."""

    def __init__(self, op: GemmOp | MatMulOp, ins_index: dict[SSAValue, int]):
        if isinstance(op, GemmOp) and (op.params["alpha"] != 1.0 or op.params["beta"] != 1.0):
            raise TilingError("gemm with alpha/beta other than 1 is not supported yet")
        a, b = op.operands[0], op.operands[1]
        super().__init__(KernelKind.MATMUL, op, [a, b], input_elems(ins_index))
        self.ia, self.ib = ins_index[a], ins_index[b]
        p = op.params if isinstance(op, GemmOp) else dict(trans_a=False, trans_b=False)
        self.ta, self.tb = p["trans_a"], p["trans_b"]
        v = matmul_views(op)
        self.sa, self.sb, self.so, self.m, self.k, self.n = v.a, v.b, v.out, v.m, v.k, v.n
        self.nb = len(self.so) - 2

    exhaustive_limit: ClassVar[int] = 4096
    """A matmul's three tile sizes are searched exhaustively up to this many points (a
    hill climb over its dense candidate lists stops in local optima the sparser lists
    of powers of two did not have)."""

    def loops(self) -> list[Loop]:
        b = [Loop(f"b{i}", e) for i, e in enumerate(self.so[:self.nb])]
        return b + [Loop("m", self.m), Loop("n", self.n), Loop("k", self.k, reduction=True)]

    def _batch(self, shape: tuple[int, ...]) -> tuple[DimMap, ...]:
        return tuple(per_tile(f"b{i}", 1) if shape[i] > 1 else fixed(1) for i in range(self.nb))

    def shape(self, tile: dict[str, int]) -> KernelShape:
        tm, tn, tk = tile["m"], tile["n"], tile["k"]
        am, ak = per_tile("m", tm), per_tile("k", tk)
        bk, bn = per_tile("k", tk), per_tile("n", tn)
        # (an integer product's operands read their zero points past K's end: (x - zx)(w - zw) = 0 there)
        zx, zw = self.op.zero_points if isinstance(self.op, MatMulOp) else (0, 0)
        wa = self.window(self.ia, self.sa, self._batch(self.sa) + ((ak, am) if self.ta else (am, ak)), float(zx))
        wb = self.window(self.ib, self.sb, self._batch(self.sb) + ((bn, bk) if self.tb else (bk, bn)), float(zw))
        out = self.window(None, self.so, self._batch(self.so) + (per_tile("m", tm), per_tile("n", tn)))
        return KernelShape(KernelKind.MATMUL, self.loops(), dict(tile), [wa, wb], out)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        """Powers of two, multiples of the cube's sides, and the sizes that deal m or n
        out evenly to 2..cores cores (a weight's columns, each read by one core)."""
        cm, ck, cn = arch.cube
        c = {"m": tile_candidates(self.m, cm) + core_shares(self.m, cm, arch.cores) + three_halves(self.m, cm),
             "n": tile_candidates(self.n, cn) + core_shares(self.n, cn, arch.cores) + three_halves(self.n, cn),
             "k": tile_candidates(self.k, ck)}
        c = {name: sorted(set(v)) for name, v in c.items()}
        c.update({f"b{i}": [1] for i in range(self.nb)})
        return c

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """The product of the tiles; a gemm's bias moves to the epilogue."""
        if isinstance(self.op, GemmOp):
            return GemmOp(tiles[0], tiles[1], None, out, trans_a=self.ta, trans_b=self.tb)
        zx, zw = self.op.zero_points if isinstance(self.op, MatMulOp) else (0, 0)
        return MatMulOp(tiles[0], tiles[1], out, input_zero_point=zx, weight_zero_point=zw)


@tiling_model(Conv2dOp)
class ConvAnchor(Anchor):
    """Conv2d NCHW: loops n, co, oh, ow (parallel), ci (reduction over one group's
    input channels); input tiles carry halos. With groups, an output-channel tile
    holds whole groups (tco a multiple of the group's output channels) and reads
    their input channels; only a one-group tile may also cut its input channels."""

    def __init__(self, op: Conv2dOp, ins_index: dict[SSAValue, int]):
        super().__init__(KernelKind.CONV2D, op, [op.input, op.weight], input_elems(ins_index))
        self.ix, self.iw = ins_index[op.input], ins_index[op.weight]
        self.sx, self.sw = shape_of(op.input), shape_of(op.weight)
        self.so = shape_of(op.result)
        self.p = op.params
        self.group = self.p["group"]
        self.cog, self.cig = self.so[1] // self.group, self.sw[1]
        self.zero_points = op.zero_points  # (an integer conv's input reads its zero point past the edge: a real 0)

    def loops(self) -> list[Loop]:
        n, co, oh, ow = self.so
        return [Loop("n", n), Loop("co", co), Loop("oh", oh), Loop("ow", ow),
                Loop("ci", self.cig, reduction=True)]

    def shape(self, tile: dict[str, int]) -> KernelShape | None:
        (sh, sw), (dh, dw) = self.p["strides"], self.p["dilations"]
        pt, pl = self.p["pads"][0], self.p["pads"][1]
        kh, kw = self.sw[2], self.sw[3]
        toh, tow, tci, tco = tile["oh"], tile["ow"], tile["ci"], tile["co"]
        if self.group > 1 and (tco % self.cog or (tco > self.cog and tci != self.cig)):
            return None  # a tile must hold whole groups, and cut input channels of one group only
        groups = tco // self.cog if self.group > 1 else 1
        ih, iw = (toh - 1) * sh + (kh - 1) * dh + 1, (tow - 1) * sw + (kw - 1) * dw + 1
        if self.group > 1:  # the input channels of this tile's groups
            ci_dim = DimMap((("co", groups * self.cig), ("ci", tci)), 0, groups * tci)
        else:
            ci_dim = per_tile("ci", tci)
        wx = self.window(self.ix, self.sx, (per_tile("n", 1), ci_dim,
                                       DimMap((("oh", toh * sh),), -pt, ih),
                                       DimMap((("ow", tow * sw),), -pl, iw)), float(self.zero_points[0]))
        ww = self.window(self.iw, self.sw, (per_tile("co", tco), per_tile("ci", tci), fixed(kh), fixed(kw)), 0.0)
        out = self.window(None, self.so, (per_tile("n", 1), per_tile("co", tco), per_tile("oh", toh),
                                     per_tile("ow", tow)))
        return KernelShape(KernelKind.CONV2D, self.loops(), dict(tile), [wx, ww], out, window_area=groups)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        _, ck, cn = arch.cube
        n, co, oh, ow = self.so
        if self.group > 1:
            cos = sorted({self.cog * m for m in tile_candidates(self.group)})
        else:
            cos = tile_candidates(co, cn)
        return {"n": [1], "co": cos, "oh": tile_candidates(oh), "ow": tile_candidates(ow), "ci": tile_candidates(self.cig, ck)}

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """An unpadded conv of the (padded) input window, over the groups the tile holds;
        the bias moves to the epilogue."""
        zx, zw = self.zero_points
        return Conv2dOp(tiles[0], tiles[1], None, out, strides=self.p["strides"], dilations=self.p["dilations"],
                        group=ks.window_area, input_zero_point=zx, weight_zero_point=zw)


@tiling_model(MaxPoolOp)
class PoolAnchor(Anchor):
    """Max-pool NCHW: loops n, c, oh, ow (parallel); padded reads give -inf."""

    def __init__(self, op: MaxPoolOp, ins_index: dict[SSAValue, int]):
        super().__init__(KernelKind.POOL, op, [op.input], input_elems(ins_index))
        self.ix = ins_index[op.input]
        self.sx, self.so = shape_of(op.input), shape_of(op.result)
        self.p = op.params

    def loops(self) -> list[Loop]:
        n, c, oh, ow = self.so
        return [Loop("n", n), Loop("c", c), Loop("oh", oh), Loop("ow", ow)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        (sh, sw), (dh, dw) = self.p["strides"], self.p["dilations"]
        (kh, kw), (pt, pl) = self.p["kernel"], self.p["pads"][:2]
        toh, tow, tc = tile["oh"], tile["ow"], tile["c"]
        ih, iw = (toh - 1) * sh + (kh - 1) * dh + 1, (tow - 1) * sw + (kw - 1) * dw + 1
        wx = self.window(self.ix, self.sx, (per_tile("n", 1), per_tile("c", tc),
                                       DimMap((("oh", toh * sh),), -pt, ih),
                                       DimMap((("ow", tow * sw),), -pl, iw)), float("-inf"))
        out = self.window(None, self.so, (per_tile("n", 1), per_tile("c", tc), per_tile("oh", toh),
                                     per_tile("ow", tow)))
        return KernelShape(KernelKind.POOL, self.loops(), dict(tile), [wx], out, window_area=kh * kw)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        n, c, oh, ow = self.so
        return {"n": [1], "c": tile_candidates(c), "oh": tile_candidates(oh), "ow": tile_candidates(ow)}

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """An unpadded max-pool of the window (reads outside the input come as -inf)."""
        return MaxPoolOp(tiles[0], out, kernel=self.p["kernel"], strides=self.p["strides"],
                         dilations=self.p["dilations"])


@tiling_model(ElementwiseOp)
class EltwiseAnchor(Anchor):
    """An elementwise op over the output's dimensions (d0, d1, ...), inputs broadcast."""

    def __init__(self, op: ElementwiseOp, ins_index: dict[SSAValue, int]):
        super().__init__(KernelKind.ELTWISE, op, list(op.operands), input_elems(ins_index))
        self.idx = [ins_index[v] for v in op.operands]
        self.shapes = [shape_of(v) for v in op.operands]
        self.so = shape_of(op.results[0])

    def loops(self) -> list[Loop]:
        return [Loop(f"d{i}", e) for i, e in enumerate(self.so)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        out = self.window(None, self.so, tuple(per_tile(f"d{i}", tile[f"d{i}"]) for i in range(len(self.so))))
        loads = [broadcast_window(i, s, out, self.elems[i]) for i, s in zip(self.idx, self.shapes)]
        return KernelShape(KernelKind.ELTWISE, self.loops(), dict(tile), loads, out)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        c: dict[str, list[int]] = {}
        for i, e in enumerate(self.so):
            inner = i == len(self.so) - 1
            c[f"d{i}"] = [e] if i in self.whole else \
                tile_candidates(e) if inner or e <= 64 else tile_candidates(e)[-4:] + [1]
        return c


@tiling_model(StructuredOp)
class GenericAnchor(Anchor):
    """A structured graph op (`StructuredOp`): loops over the output dims, tiles cut
    only the dims its `tile_map` allows, input windows follow the map."""

    def __init__(self, op: StructuredOp, ins_index: dict[SSAValue, int]):
        super().__init__(KernelKind.APPLY, op, list(op.operands), input_elems(ins_index))
        self.idx = [ins_index[v] for v in op.operands]
        self.shapes = [shape_of(v) for v in op.operands]
        self.so = shape_of(op.results[0])
        self.map = op.tile_map()
        self.cost = op.VECTOR_COST
        self.structured = op

    def loops(self) -> list[Loop]:
        return [Loop(f"d{i}", e) for i, e in enumerate(self.so)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        out, loads = self.windows(tile)
        op, ins, dtype = type(self.structured), [w.sizes for w in loads], self.structured.vector_type()
        attrs = dict(self.structured.attributes)
        return KernelShape(KernelKind.APPLY, self.loops(), dict(tile), loads, out, window_area=self.cost,
                           tile_cycles=lambda arch: op.tile_cycles(arch, ins, out.sizes, dtype),
                           scratch=lambda arch: op.tile_scratch_bytes_of(attrs, arch, ins, out.sizes))

    def windows(self, tile: dict[str, int]) -> tuple[Window, list[Window]]:
        """The output window and the input windows (in operand order) of a tile plan."""
        out = self.window(None, self.so, tuple(per_tile(f"d{i}", tile[f"d{i}"]) for i in range(len(self.so))))
        loads = []
        for i, (shape, follows) in zip(self.idx, zip(self.shapes, self.map.inputs)):
            dims = []
            for extent, f in zip(shape, follows):
                if f.out_dim is None:
                    dims.append(fixed(extent))
                else:
                    t = tile[f"d{f.out_dim}"]
                    dims.append(DimMap(((f"d{f.out_dim}", t * f.scale),), f.offset,
                                       (t - 1) * f.scale + 1 + f.halo))
            loads.append(self.window(i, shape, tuple(dims), self.map.pad_value))
        return out, loads

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        """Powers of two and the sizes that deal a dim out evenly to 2..cores cores, for
        each tileable dim (197 rows: 4 tiles of 50, not 3 of 64 and one of 5)."""
        return {f"d{i}": (sorted(set(tile_candidates(e) + core_shares(e, 1, arch.cores)))
                          if self.map.tileable[i] and i not in self.whole else [e]) for i, e in enumerate(self.so)}

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """The op with the attributes it gives for these input windows (`tile_attrs`)."""
        attrs = self.structured.tile_attrs([shape_of(v) for v in tiles])
        return type(self.op).create(operands=list(tiles), result_types=[out], attributes=attrs)


@tiling_model(AttentionOp)
class AttentionAnchor(GenericAnchor):
    """Attention (`AttentionOp`): the generic loops over the output (leading dims and
    query rows cut, Dv whole) and a reduction loop `t` over key blocks
    (`AttentionOp.key_blocks`, multiples of the cube's N). A tile loads its query
    rows, its head's kt and v blocks and the mask's block (a causal mask: its rows'
    limits and its keys' positions). With more than one block
    the tile op is `online`: its tiles are online-softmax states (2 more columns,
    counted as scratch with the block's scores), merged by `npu_tile.reduce`."""

    def __init__(self, op: AttentionOp, ins_index: dict[SSAValue, int]):
        super().__init__(op, ins_index)
        self.keys = op.dims()[3]
        self.attrs = op.tile_attrs()  # (a tile's: its inputs hold its heads only)
        self.k_dim, self.v_dim = op.key_axes()

    def loops(self) -> list[Loop]:
        return [*super().loops(), Loop("t", self.keys, reduction=True)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        out, loads = self.windows(tile)
        tt = tile["t"]
        if tt < self.keys:  # kt's keys, v's rows and the masks' last dims (unless broadcast) follow t
            keyed = [(1, self.k_dim), (2, self.v_dim)]
            keyed += [(i, -1) for i in range(3, len(loads)) if loads[i].shape[-1] > 1]
            for i, d in keyed:
                dims = list(loads[i].dims)
                dims[d] = per_tile("t", tt)
                loads[i] = replace(loads[i], dims=tuple(dims))
        state = (*out.sizes[:-1], out.sizes[-1] + (AttentionOp.STATE_COLUMNS if tt < self.keys else 0))
        extra = (prod(state) - prod(out.sizes)) * out.elem
        ins = AttentionOp.canonical_shapes(self.attrs, [w.sizes for w in loads], state)[0]
        cout = AttentionOp.canonical_shapes(self.attrs, [], out.sizes)[1]
        return KernelShape(KernelKind.APPLY, self.loops(), dict(tile), loads, out, window_area=self.cost,
                           tile_cycles=lambda arch: AttentionOp.tile_cycles_of(self.attrs, arch, [w.sizes for w in loads],
                                                                               state, self.structured.vector_type()),
                           scratch=lambda arch: AttentionOp.tile_scratch_bytes_of(self.attrs, arch, ins, cout) + extra,
                           finish=(lambda arch: AttentionOp.finish_cycles(arch, prod(cout[:-1]), cout[-1]))
                           if tt < self.keys else None)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        whole = AttentionOp.quantized(self.attrs) is not None  # (its probabilities round: keys whole)
        return {**super().candidates(arch), "t": [self.keys] if whole else AttentionOp.key_blocks(self.keys, arch.cube[2])}

    def online(self, ks: KernelShape) -> bool:
        return ks.tile["t"] < self.keys

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """The attention of the tiles; `online` (its state) when the keys come in blocks."""
        if not self.online(ks):
            return super().tile_op(tiles, out, ks)
        shape = list(out.get_shape())
        state = TensorType(out.element_type, [*shape[:-1], shape[-1] + AttentionOp.STATE_COLUMNS])
        return AttentionOp.create(operands=list(tiles), result_types=[state],
                                  attributes={**self.structured.tile_attrs(), "online": UnitAttr()})

    def combine(self, ks: KernelShape) -> str | None:
        return "online_softmax" if self.online(ks) else None


class AppendAttentionAnchor(AttentionAnchor):
    """Attention over a KV cache with new rows appended (npu-fuse's `kv-append`): the
    kernel's ops are k = concat(past_k, new_k) and v = concat(past_v, new_v) along the
    keys, the attention, and k and v are results too (`present`). The attention's
    tiling, with each key block read as the past's block (`loads`) plus the new
    rows' block (`seams`), both zero-padded outside their tensor, so the block
    spanning the seam is their sum, and written to the present every step (`tees`,
    results 1 and 2): the cache is read once and written once, not copied and read
    again. `npu-bufferize` lands both parts in one slot, the new rows only at the
    step whose block holds them (`tile_loop_patterns.seam_pairs`)."""

    def __init__(self, op: AttentionOp, ins_index: dict[SSAValue, int], cats: tuple[ConcatOp, ConcatOp]):
        base = {**ins_index, op.operands[1]: ins_index[cats[0].inputs[0]], op.operands[2]: ins_index[cats[1].inputs[0]]}
        super().__init__(op, base)
        self.past = [shape_of(c.inputs[0]) for c in cats]
        self.new = [(ins_index[c.inputs[1]], shape_of(c.inputs[1])) for c in cats]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        ks = super().shape(tile)
        loads, tees, seams = list(ks.loads), [], []
        for i, (d, past, (src, new)) in enumerate(zip((self.k_dim, self.v_dim), self.past, self.new)):
            w = loads[1 + i]
            tees.append(Window(1 + i, w.shape, w.dims, elem=w.elem))
            loads[1 + i] = replace(w, shape=past, pad_value=0.0)
            dims = list(w.dims)
            dims[d] = DimMap(dims[d].terms, dims[d].const - past[d], dims[d].size)
            seams.append(self.window(src, new, tuple(dims), 0.0))
        ks.loads, ks.tees, ks.seams = loads, tees, seams
        return ks


def append_attention(ops: Sequence[Operation], ins_index: dict[SSAValue, int]) -> AppendAttentionAnchor | None:
    """The `AppendAttentionAnchor` of a kernel of two concats and the attention reading
    them as k and v (npu-fuse's `kv-append`), else None."""
    if len(ops) != 3 or not isinstance(att := ops[-1], AttentionOp):
        return None
    cats = [o.owner for o in att.operands[1:3]]
    if not (isinstance(k := cats[0], ConcatOp) and isinstance(v := cats[1], ConcatOp)) or not all(
            c in ops[:2] and len(c.inputs) == 2 and all(x in ins_index for x in c.inputs) for c in (k, v)):
        return None
    anchor = AppendAttentionAnchor(att, ins_index, (k, v))
    for c, d in zip((k, v), (anchor.k_dim, anchor.v_dim)):
        rank = len(shape_of(c.result))
        if attr_int(dict(c.attributes), "axis", 0) % rank != d % rank:
            raise TilingError(f"'{c.name}' must join along the attention's keys (axis {d % rank})")
    if anchor.past[0][anchor.k_dim] != anchor.past[1][anchor.v_dim]:
        raise TilingError("the past keys and values must hold the same number of positions")
    return anchor


@tiling_model(RowStatsOp)
class RowStatsAnchor(GenericAnchor):
    """Row statistics (`RowStatsOp`): loops over the rows (the output's leading dims,
    its state dim whole) and a reduction loop `c` over column blocks, whose states
    `npu_tile.reduce` merges by the op's `combine`. Softmax blocks may run past the
    row's end (read as -inf: no weight); moment blocks divide it (a padded column
    would count)."""

    def __init__(self, op: RowStatsOp, ins_index: dict[SSAValue, int]):
        super().__init__(op, ins_index)
        self.cols = self.shapes[0][-1]
        self.softmax = op.kind.data == "softmax"

    def loops(self) -> list[Loop]:
        return [*super().loops(), Loop("c", self.cols, reduction=True)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        out, (x,) = self.windows(tile)
        dims = (*x.dims[:-1], per_tile("c", tile["c"]))
        x = replace(x, dims=dims, pad_value=float("-inf") if self.softmax else None)
        ins, attrs = [x.sizes], dict(self.op.attributes)
        return KernelShape(KernelKind.APPLY, self.loops(), dict(tile), [x], out,
                           tile_cycles=lambda arch: RowStatsOp.tile_cycles_of(attrs, arch, ins, out.sizes))

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        cols = tile_candidates(self.cols) if self.softmax else [b for b in range(1, self.cols + 1)
                                                                 if self.cols % b == 0]
        return {**super().candidates(arch), "c": cols}

    def combine(self, ks: KernelShape) -> str | None:
        return "row_stats"


def make_anchor(op: Operation, ins_index: dict[SSAValue, int]) -> Anchor:
    """The tiling model of a kernel's anchor op (TilingError if its class has none)."""
    model = next((TILING_MODELS[c] for c in type(op).__mro__ if c in TILING_MODELS), None)
    if model is None:
        raise TilingError(f"no tiling for '{op.name}'")
    return model(op, ins_index)


@dataclass
class EpilogueStep:
    """One elementwise op applied to the output tile: `fn(*args)` where each entry of
    `args` is None for the running output tile, an index into KernelShape.epilogue, or
    the name of a derived operand. `template`: a structured op applied instead (a
    matmul's layernorm prologue, a quantize/dequantize), built on the tiles with its
    attributes; `passes`, its vector passes over the tile. `to`: the step computes a
    derived operand of that name from epilogue operands (a dequantize of the other
    integer input of a residual add) instead of the next running tile."""

    fn: str
    args: tuple[int | str | None, ...]
    template: Operation | None = None
    passes: int = 1
    to: str | None = None


def step_special(step: EpilogueStep) -> tuple[str, ...]:
    """The special functions a step evaluates per element (their cost is the arch's:
    `Arch.special_passes`)."""
    if step.template is not None:
        return getattr(step.template, "SPECIAL", ())
    return ELTWISE_USES.get(step.fn, ())


class PrologueAnchor(Anchor):
    """A conv whose input tile goes through per-channel elementwise ops in SRAM first
    (npu-fuse's `conv-prologue`): the conv's tiling, plus one load per extra operand
    following the input tile's channels (appended to the loads)."""

    def __init__(self, base: Anchor, steps: list[EpilogueStep], extra: list[tuple[int, tuple[int, ...]]]):
        super().__init__(base.kind, base.op, base.inputs, base.elems)
        self.base, self.steps, self.extra = base, steps, extra
        self.exhaustive_limit = base.exhaustive_limit  # type: ignore[misc]  # (searched as the anchor's)

    def loops(self) -> list[Loop]:
        return self.base.loops()

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        return self.base.candidates(arch)

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        return self.base.tile_op(tiles, out, ks)

    def shape(self, tile: dict[str, int]) -> KernelShape | None:
        ks = self.base.shape(tile)
        if ks is None:
            return None
        ks.loads = ks.loads + self.windows(ks.loads[0])
        ks.prologue_len = sum(s.passes for s in self.steps)
        return ks

    def windows(self, x: Window) -> list[Window]:
        """The extra operands' windows for input tile `x`: per channel (NCHW)."""
        return [self.window(i, shape, (fixed(1), x.dims[1] if shape[1] > 1 else fixed(1), fixed(1), fixed(1)))
                for i, shape in self.extra]


class MatmulPrologueAnchor(PrologueAnchor):
    """A matmul whose A tiles are layer-normalised in SRAM first (npu-fuse's
    `matmul-prologue`: `layernorm_apply(x, stats, scale, bias)` in front of the
    product): the matmul's tiling on x, plus the rows' statistics (following A's
    rows, padded with 1s: finite) and the scale and bias (following its columns,
    padded with 0s: a padded column stays 0) loaded with each A tile."""

    def windows(self, x: Window) -> list[Window]:
        (si, ss), *params = self.extra
        stats = self.window(si, (*x.shape[:-1], ss[-1]), (*x.dims[:-1], fixed(ss[-1])), 1.0)
        return [stats] + [self.window(i, s, (x.dims[-1] if s[0] > 1 else fixed(1),), 0.0) for i, s in params]


def matmul_prologue(ops: Sequence[Operation], ins_index: dict[SSAValue, int]) -> MatmulPrologueAnchor | None:
    """The anchor of a kernel `layernorm_apply` -> matmul (reading it as A), else None."""
    if len(ops) < 2 or not isinstance(ln := ops[0], LayerNormApplyOp) \
            or not isinstance(mm := ops[1], (GemmOp, MatMulOp)) or mm.operands[0] is not ln.results[0]:
        return None
    if any(v not in ins_index for v in ln.operands):
        raise TilingError("a matmul prologue's operands must be kernel inputs")
    k = shape_of(ln.input)[-1]
    if any(shape_of(v) not in ((k,), (1,)) for v in ln.operands[2:]):
        raise TilingError(f"a matmul prologue's scale and bias must be [{k}] or [1]")
    base = MatmulAnchor(mm, {**ins_index, ln.results[0]: ins_index[ln.input]})
    if base.ta or len(shape_of(ln.input)) != len(base.sa):
        raise TilingError("a matmul prologue needs an untransposed A of the result's rank")
    extra = [(ins_index[v], shape_of(v)) for v in ln.operands[1:]]
    step = EpilogueStep("layernorm_apply", (None, *range(len(extra))), template=ln,
                        passes=LayerNormApplyOp.passes([shape_of(v) for v in ln.operands]))
    return MatmulPrologueAnchor(base, [step], extra)


def per_channel_shape(shape: Sequence[int], channels: int) -> tuple[int, int, int, int] | None:
    """`shape` rank-extended to NCHW when it is constant over N, H and W (channels or 1), else None."""
    if len(shape) > 4:
        return None
    n, c, h, w = (1,) * (4 - len(shape)) + tuple(shape)
    if n != 1 or h != 1 or w != 1 or c not in (1, channels):
        return None
    return n, c, h, w


def prologue_of(ops: Sequence[Operation], conv: Conv2dOp, ins_index: dict[SSAValue, int]
                ) -> tuple[list[EpilogueStep], list[tuple[int, tuple[int, ...]]], SSAValue]:
    """Steps of the elementwise ops in front of `conv` (each taking the running input
    tile and per-channel kernel inputs), their extra operands, and the kernel input
    the chain starts from."""
    if any(conv.params["pads"]):
        raise TilingError("a conv prologue needs a conv without padding (padding zeros would go through it)")
    first = ops[0]
    heads = [o for o in first.operands if o in ins_index and o.type == first.results[0].type]
    if not heads:
        raise TilingError("a conv prologue must start from a kernel input of the conv's input shape")
    running = heads[0]
    channels = shape_of(running)[1]
    steps: list[EpilogueStep] = []
    extra: list[tuple[int, tuple[int, ...]]] = []
    running = chain_steps(ops, running, ins_index, steps, extra, "a conv prologue",
                          lambda o: per_channel_shape(shape_of(o), channels), "a per-channel kernel input")
    if running != conv.input:
        raise TilingError("the prologue must end in the conv's input")
    return steps, extra, heads[0]


def split_kernel(ops: Sequence[Operation], ins_index: dict[SSAValue, int]
                 ) -> tuple[Anchor, list[EpilogueStep], list[tuple[int, tuple[int, ...]]]]:
    """A kernel's graph ops as (anchor, epilogue steps, epilogue operands): the anchor is
    the first op, the conv after a prologue of elementwise ops (`PrologueAnchor`), or
    the matmul after a layernorm_apply (`MatmulPrologueAnchor`)."""
    appended = append_attention(ops, ins_index)
    if appended is not None:
        return appended, [], []
    normed = matmul_prologue(ops, ins_index)
    if normed is not None:
        return normed, *epilogue_of(ops[2:], ops[1], ins_index)
    k = next((i for i, o in enumerate(ops) if not isinstance(o, ElementwiseOp | QuantOp | TableOp)), 0)
    if k == 0 or (isinstance(ops[0], ElementwiseOp | QuantOp | TableOp) and isinstance(ops[k], ROW_OPS)):
        anchor = make_anchor(ops[0], ins_index)
        steps, extra = epilogue_of(ops[1:], ops[0], ins_index)
        return row_dims(anchor, steps), steps, extra
    conv = ops[k]
    if not isinstance(conv, Conv2dOp):
        raise TilingError(f"only a conv can have a prologue, not '{conv.name}'")
    pro_steps, pro_extra, head = prologue_of(ops[:k], conv, ins_index)
    anchor = PrologueAnchor(make_anchor(conv, {**ins_index, conv.input: ins_index[head]}), pro_steps, pro_extra)
    return anchor, *epilogue_of(ops[k + 1:], conv, ins_index)


ROW_OPS = (LayerNormOp, SoftmaxOp)
"""Structured ops an elementwise chain's epilogue may apply (npu-fuse's `eltwise-chain`):
normalisations over trailing dims of the running tile, kept whole in every tile."""


def row_dims(anchor: Anchor, steps: Sequence[EpilogueStep]) -> Anchor:
    """`anchor` keeping whole the dims its epilogue's row ops normalise (`ROW_OPS`):
    only an elementwise anchor (an elementwise op's, a quantize's...) whose output is
    their input's shape."""
    rows = [s.template for s in steps if isinstance(s.template, ROW_OPS)]
    if not rows:
        return anchor
    shape = getattr(anchor, "so", None) if isinstance(anchor, (GenericAnchor, EltwiseAnchor)) else None
    if shape is None or any(shape_of(r.operands[0]) != shape for r in rows):
        raise TilingError(f"'{rows[0].name}' in an epilogue needs an elementwise anchor of its input's shape")
    anchor.whole = frozenset(d for r in rows for d, cut in enumerate(r.tile_map().tileable) if not cut)
    return anchor


def epilogue_of(ops: Sequence[Operation], anchor: Operation,
                ins_index: dict[SSAValue, int]) -> tuple[list[EpilogueStep], list[tuple[int, tuple[int, ...]]]]:
    """Epilogue steps after the anchor, and (kernel input index, shape) of their extra operands.
    The anchor's own bias (gemm C, conv bias) comes first as an `add`."""
    steps: list[EpilogueStep] = []
    extra: list[tuple[int, tuple[int, ...]]] = []
    bias = None
    if isinstance(anchor, GemmOp) and anchor.c is not None:
        bias = anchor.c
    if isinstance(anchor, Conv2dOp) and anchor.bias is not None:
        bias = anchor.bias
    if bias is not None:
        shape = shape_of(bias)
        if isinstance(anchor, Conv2dOp):
            shape = (1, shape[0], 1, 1)
        extra.append((ins_index[bias], shape))
        steps.append(EpilogueStep("add", (None, len(extra) - 1)))
    chain_steps(ops, anchor.results[0], ins_index, steps, extra, "an epilogue", shape_of, "a kernel input")
    return steps, extra


def chain_steps(ops: Sequence[Operation], running: SSAValue, ins_index: dict[SSAValue, int],
                steps: list[EpilogueStep], extra: list[tuple[int, tuple[int, ...]]], what: str,
                operand_shape, operand_kind: str) -> SSAValue:
    """Append a chain of elementwise ops starting from `running` as steps (the running
    tile is None, other operands kernel inputs given the shape `operand_shape` reads,
    None when unfit); returns the chain's last value."""
    derived: dict[SSAValue, str] = {}
    for op in ops:
        row = isinstance(op, ROW_OPS) and what == "an epilogue" and op.operands[0] == running
        if isinstance(op, TableOp) and what == "an epilogue" and op.operands[0] == running:
            table_step(op, ins_index, steps, extra)
            running = op.results[0]
            continue
        if not isinstance(op, ElementwiseOp | QuantOp) and not row:
            raise TilingError(f"'{op.name}' cannot be {what}")
        to = None
        if isinstance(op, DequantizeOp) and running not in op.operands:  # (of an operand of a later step)
            to = derived[op.results[0]] = f"d{len(derived)}"
        args: list[int | str | None] = []
        for o in op.operands:
            if o == running:
                args.append(None)
                continue
            if o in derived:
                args.append(derived[o])
                continue
            shape = operand_shape(o) if o in ins_index else None
            if shape is None:
                raise TilingError(f"{what} operand must be {operand_kind}")
            extra.append((ins_index[o], tuple(shape)))
            args.append(len(extra) - 1)
        if isinstance(op, QuantOp | LayerNormOp | SoftmaxOp):  # (built from the op itself: a new type, a row op)
            steps.append(EpilogueStep(op.name, tuple(args), template=op, passes=op.VECTOR_COST, to=to))
        else:
            assert isinstance(op, ElementwiseOp)
            steps.append(EpilogueStep(op.FN, tuple(args)))
        if to is None:
            running = op.results[0]
    return running


def table_step(op: TableOp, ins_index: dict[SSAValue, int], steps: list[EpilogueStep],
               extra: list[tuple[int, tuple[int, ...]]]) -> None:
    """A lookup table on the running tile: its table a kernel input loaded whole, or
    per channel of the tile's dim `axis` (`TableShape`)."""
    table = op.operands[1]
    if table not in ins_index:
        raise TilingError("an epilogue's lookup table must be a kernel input")
    shape = shape_of(table)
    axis = attr_int(dict(op.attributes), "axis", 1) % len(shape_of(op.operands[0])) if len(shape) == 2 else None
    extra.append((ins_index[table], TableShape(shape, axis)))
    steps.append(EpilogueStep(op.name, (None, len(extra) - 1), template=op, passes=op.VECTOR_COST))


def chain_types(steps: Sequence[EpilogueStep], anchor_type: Attribute) -> tuple[Attribute, list[Attribute],
                                                                                list[Attribute]]:
    """(the element type the epilogue ends in, the other types its running tile takes,
    the types of its derived operands): an epilogue that quantizes or dequantizes holds
    its tile in one SRAM buffer per type (an int32 accumulator, a float tile, the int8
    result), `npu-bufferize`'s `TileBuffers.typed`."""
    running, seen, derived = anchor_type, [anchor_type], []
    for s in steps:
        if s.template is None:
            continue
        t = element_type(s.template.results[0])
        if s.to is not None:
            derived.append(t)
        else:
            running = t
            if t not in seen:
                seen.append(t)
    return running, [t for t in seen if t != running], derived


def with_epilogue(ks: KernelShape, extra: Sequence[tuple[int, tuple[int, ...]]],
                  steps: Sequence[EpilogueStep] = (), elems: dict[int, int] | None = None,
                  anchor_result: SSAValue | None = None) -> KernelShape:
    """`ks` with the epilogue operands' windows (sized by `elems`, the anchor's kernel
    input element bytes; without it the output's), and the one a sum may start from
    (`accumulator_init` of `steps`). An epilogue that changes the element type
    (`chain_types` from the anchor's result type) stores the type it ends in and holds a buffer
    of the output tile's shape for each other type (`KernelShape.chain`)."""
    ks.epilogue = [broadcast_window(i, s, ks.out, elems[i] if elems else None) for i, s in extra]
    if anchor_result is not None:
        final, others, derived = chain_types(steps, element_type(anchor_result))
        if others or derived:
            ks.chain = [elem_bytes(t) for t in (*others, *derived)]
            ks.out = replace(ks.out, elem=elem_bytes(final))
        if wide_accumulator(ks, element_type(anchor_result)):
            ks.accumulator = f32
            ks.chain = [*ks.chain, elem_bytes(f32)]
    if ks.kind in INIT_KINDS and ks.accumulator is None:  # (an init tile of the output's type cannot start an f32 sum)
        ks.init = accumulator_init(steps, extra, ks.out.shape)
    return ks


def wide_accumulator(ks: KernelShape, anchor_type: Attribute) -> bool:
    """Whether a cube product in f16/bf16 sums its reduction steps in an f32 tile (cast to
    its type at the last step, the first epilogue op): the cube accumulates in f32, and
    a 16-bit running sum stored between steps would round once per step (a 4096-deep
    f16 product in 16 KiB erred 8x one rounding)."""
    return ks.kind in INIT_KINDS and type_name(anchor_type) in ("f16", "bf16") and ks.reduction_tiles > 1


INIT_KINDS = (KernelKind.MATMUL, KernelKind.CONV2D)
"""Anchors whose reduction may start from an epilogue operand (`accumulator_init`): a
transformer's residual after a projection, ResNet's shortcut after a block's last conv."""


def accumulator_init(steps: Sequence[EpilogueStep], extra: Sequence[tuple[int, tuple[int, ...]]],
                     out: Sequence[int]) -> int | None:
    """The epilogue operand a sum over reduction steps can start from instead of zero: one
    with the output's shape, added to the running tile by a step that only adds precede
    (so starting from it reassociates a sum and nothing else), its kernel input read by
    no other step. Its add then leaves the epilogue (`drop_init_step`)."""
    for st in steps:
        if st.fn != "add" or None not in st.args:
            return None
        j = next((a for a in st.args if a is not None), None)
        if not isinstance(j, int) or tuple(extra[j][1]) != tuple(out):
            continue
        source = extra[j][0]
        if sum(extra[a][0] == source for s2 in steps for a in s2.args if isinstance(a, int)) == 1:
            return j
    return None


def drop_init_step(steps: Sequence[EpilogueStep], init: int) -> list[EpilogueStep]:
    """`steps` without the add of the accumulator's start `init`."""
    return [s for s in steps if init not in s.args]


def search(anchor: Anchor, extra: Sequence[tuple[int, tuple[int, ...]]], steps: Sequence[EpilogueStep],
           arch: Arch, allow_double_buffer: bool, cost) -> tuple[KernelShape, bool, int]:
    """Best tiling that fits SRAM: (shape, double buffered?, predicted cycles).
    `cost(ks, arch, db, epilogue_len)` ranks (predicted cycles, or a tuple of them
    then tie-breakers); double buffering is one more choice (halved tiles may cost
    more than the overlap gains), ties prefer more SRAM used."""
    return TileSearch(anchor, extra, steps, arch, cost).run((True, False) if allow_double_buffer else (False,))


PARALLEL_MIN_SEARCHES = 6
"""`search_many` forks workers only for at least this many searches (a fork of a
compiler holding a model's weights costs a few milliseconds)."""

_JOBS: list[tuple] = []  # the jobs forked workers read (inherited, never pickled)


def compile_jobs() -> int:
    """How many processes a compile may use for independent searches: `NPU_COMPILE_JOBS`,
    else the CPUs this process may run on."""
    import os
    env = os.environ.get("NPU_COMPILE_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _search_job(i: int) -> tuple[int, tuple[dict[str, int], bool] | None]:
    anchor, extra, steps, arch, allow_db, cost = _JOBS[i]
    try:
        ks, db, _ = search(anchor, extra, steps, arch, allow_db, cost)
    except TilingError:
        return i, None  # (the caller searches again and reports it)
    return i, (ks.tile, db)


def _quiet_child() -> None:
    """A forked worker never writes to the inherited stdio: another thread of the parent
    (a progress line) may have held a stream's lock at the fork, and a flush at exit
    would wait for it forever."""
    import sys
    sys.stdout = sys.stderr = None  # type: ignore[assignment]


def search_many(jobs: Sequence[tuple], workers: int) -> list[tuple[dict[str, int], bool] | None]:
    """`search(*job)` of every job: (tile, double buffered?), or None when it raised
    TilingError. Independent searches run in `workers` forked processes (the jobs are
    inherited, only results travel back), largest candidate space first; the results
    are those of the searches run one by one."""
    global _JOBS
    if workers <= 1 or len(jobs) < PARALLEL_MIN_SEARCHES:
        _JOBS = list(jobs)
        try:
            return [_search_job(i)[1] for i in range(len(jobs))]
        finally:
            _JOBS = []
    import multiprocessing

    sizes = [prod(len(v) for v in job[0].candidates(job[3]).values()) for job in jobs]
    order = sorted(range(len(jobs)), key=lambda i: -sizes[i])
    _JOBS = list(jobs)
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, len(jobs)), _quiet_child) as pool:
            done = dict(pool.imap_unordered(_search_job, order, chunksize=1))
    finally:
        _JOBS = []
    return [done[i] for i in range(len(jobs))]


def vector_steps(anchor: Anchor, steps: Sequence[EpilogueStep], arch: Arch) -> int:
    """The epilogue steps the vector unit runs: all but a cube product's requantize on
    an arch whose cube's output stage requantizes (`requant_unit = cube`)."""
    cube = anchor.kind in INIT_KINDS and arch.requant_unit == "cube"
    return sum(1 for s in steps if not (cube and isinstance(s.template, RequantizeOp) and s.to is None))


class TileSearch:
    """The state of one `search`: candidate lists per loop, evaluated points (an index
    per loop into its list, and the double-buffer choice) and the best so far."""

    def __init__(self, anchor: Anchor, extra: Sequence[tuple[int, tuple[int, ...]]], steps: Sequence[EpilogueStep],
                 arch: Arch, cost) -> None:
        self.anchor, self.extra, self.steps, self.arch, self.cost = anchor, extra, steps, arch, cost
        self.epilogue_len = vector_steps(anchor, steps, arch)
        cands = anchor.candidates(arch)
        self.names = [l.name for l in anchor.loops()]
        self.lists = [cands[n] for n in self.names]
        self.seen: dict[tuple, tuple | None] = {}
        self.shapes: dict[tuple[int, ...], KernelShape | None] = {}  # (one per point, both buffering modes)
        self.smallest: list[int] = []
        self.best: tuple | None = None

    def shaped(self, idx: tuple[int, ...]) -> KernelShape | None:
        """The kernel shape of a point (with its epilogue), None when invalid."""
        if idx not in self.shapes:
            shaped = self.anchor.shape({n: lst[i] for n, lst, i in zip(self.names, self.lists, idx)})
            if shaped is None or (self.epilogue_len and self.anchor.combine(shaped)):
                self.shapes[idx] = None  # (an epilogue cannot run on merge states)
            else:
                self.shapes[idx] = with_epilogue(shaped, self.extra, self.steps, self.anchor.elems,
                                                 self.anchor.op.results[0])
        return self.shapes[idx]

    def evaluate(self, idx: tuple[int, ...], db: bool) -> tuple | None:
        """(cost, -sram, ks) of a candidate, None when invalid; (inf, need, None) when too big."""
        key = (idx, db)
        if key not in self.seen:
            ks = self.shaped(idx)
            if ks is None:
                self.seen[key] = None
            else:
                need = sram_bytes(ks, self.arch, db)
                self.smallest.append(need)
                if need > self.arch.sram_bytes:
                    self.seen[key] = ((float("inf"),), need, None)  # (not priced: it cannot be chosen)
                else:
                    c = self.cost(ks, self.arch, db, self.epilogue_len + (ks.accumulator is not None))  # (+ its cast)
                    self.seen[key] = (c if isinstance(c, tuple) else (c,), -need, ks)
        return self.seen[key]

    def consider(self, r: tuple | None, db: bool) -> None:
        if r is not None and r[2] is not None and (self.best is None or r[:2] < self.best[:2]):
            self.best = (r[0], r[1], r[2], db)

    def shrink(self, cur: tuple[int, ...], db: bool) -> tuple[tuple | None, tuple[int, ...]]:
        """From `cur`, step to the neighbour needing the least SRAM until one fits."""
        r = self.evaluate(cur, db)
        while r is None or r[2] is None:
            nbrs = [cur[:i] + (cur[i] - 1,) + cur[i + 1:] for i in range(len(cur)) if cur[i] > 0]
            scored = [(x, n) for n in nbrs if (x := self.evaluate(n, db)) is not None]
            if not scored:
                break
            fitting = [(x, n) for x, n in scored if x[2] is not None]
            r, cur = min(fitting, key=lambda t: t[0][:2]) if fitting else min(scored, key=lambda t: t[0][1])
        return r, cur

    def neighbours(self, cur: tuple[int, ...]) -> list[tuple[int, ...]]:
        """One loop moved a step or two, or two loops moved a step in opposite directions."""
        nbrs = []
        for i in range(len(cur)):
            for d in (-2, -1, 1, 2):
                if 0 <= cur[i] + d < len(self.lists[i]):
                    nbrs.append(cur[:i] + (cur[i] + d,) + cur[i + 1:])
        for i, k in itertools.combinations(range(len(cur)), 2):
            for di, dk in ((1, -1), (-1, 1)):
                a, b = cur[i] + di, cur[k] + dk
                if 0 <= a < len(self.lists[i]) and 0 <= b < len(self.lists[k]):
                    n = list(cur)
                    n[i], n[k] = a, b
                    nbrs.append(tuple(n))
        return nbrs

    def climb(self, r: tuple, cur: tuple[int, ...], db: bool) -> None:
        """Hill climb from a fitting point while the cost improves."""
        while True:
            self.consider(r, db)
            better = [(x, n) for n in self.neighbours(cur) if (x := self.evaluate(n, db)) is not None
                      and x[2] is not None and x[:2] < r[:2]]
            if not better:
                return
            r, cur = min(better, key=lambda t: t[0][:2])

    def run(self, modes: Sequence[bool]) -> tuple[KernelShape, bool, int]:
        lists = self.lists
        total = prod(len(lst) for lst in lists)
        for db in modes:
            if total <= self.anchor.exhaustive_limit:
                for idx in itertools.product(*(range(len(lst)) for lst in lists)):
                    self.consider(self.evaluate(idx, db), db)
                continue
            red = [l.reduction for l in self.anchor.loops()]
            starts = [tuple(len(lst) - 1 for lst in lists), tuple(0 for _ in lists),
                      tuple(len(lst) // 2 for lst in lists),
                      # the reductions whole: operands that stay put over the steps are loaded once
                      tuple(len(lst) - 1 if r else len(lst) // 2 for lst, r in zip(lists, red))]
            for start in starts:
                r, cur = self.shrink(start, db)
                if r is not None and r[2] is not None:
                    self.climb(r, cur, db)
        if self.best is None:
            raise TilingError(f"no tile fits sram_bytes={self.arch.sram_bytes}: the smallest candidate needs "
                              f"{min(self.smallest) if self.smallest else '?'} bytes")
        return self.best[2], self.best[3], self.best[0][0]

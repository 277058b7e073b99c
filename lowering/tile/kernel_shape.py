"""Tiling math shared by the anchors and the search: a kernel's loop nest (`Loop`), the
window every operand tile reads or writes (`DimMap`, `Window`: per dimension `offset =
sum(coef * loop index) + const` and a static size, so bufferization can emit the DMA for
any tile from loop indices alone), `KernelShape` (loops, tiles, windows of one tiling)
and SRAM sizing (`sram_bytes`, `load_split`, coalesced loads, first-fit placement).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from math import prod
from typing import Any, Generic, TypeVar, overload

from xdsl.ir import Attribute

from npu_dialects.arch import Arch
from npu_dialects.dtypes import elem_bytes, f32
from npu_dialects.tile import KernelKind

F32 = elem_bytes(f32)  # (a window's default element size: an f32 tensor's)
T = TypeVar("T")


class TilingError(ValueError):
    """The kernel has no tiling on this arch (message names the reason)."""


class lazy(Generic[T]):
    """A property computed on first use and kept in the instance (as `functools.
    cached_property`, without its lock: a tile search reads a few per window of
    thousands of candidates, and the lock was most of their cost)."""

    def __init__(self, fn: Callable[[Any], T]) -> None:
        self.fn, self.name = fn, fn.__name__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> lazy[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | lazy[T]:
        if obj is None:
            return self
        value = obj.__dict__[self.name] = self.fn(obj)  # (then found in the instance: no second call)
        return value


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

    @lazy
    def sizes(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims)

    @lazy
    def nbytes(self) -> int:
        return prod(self.sizes) * self.elem

    def valid_bytes(self) -> int:
        """Bytes moved by an interior tile (no padding outside the tensor)."""
        return self._valid_bytes

    @lazy
    def _valid_bytes(self) -> int:
        n = self.elem
        for d, s in zip(self.dims, self.shape):
            n *= d.size if d.size < s else s
        return n

    @lazy
    def moved_by(self) -> tuple[str, ...]:
        """The loops the window moves with (a term with a nonzero coefficient), per dim."""
        return tuple(name for d in self.dims for name, c in d.terms if c)


@lru_cache(maxsize=1 << 14, typed=True)
def per_tile(loop: str, tile: int, const: int = 0, size: int | None = None) -> DimMap:
    """(shared: a DimMap is immutable, and the search builds the same ones for many candidates)"""
    return DimMap(((loop, tile),), const, tile if size is None else size)


@lru_cache(maxsize=1 << 14, typed=True)
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
    kv_loads: int = 0  # the last loads: a float cache's new rows and conversion scalars (`AppendAttentionAnchor.converting`)
    finish: Callable[[Arch], int] | None = None  # cycles the last reduction step's merge adds (once per output tile)
    chain: list[int] = field(default_factory=list)  # element bytes of the epilogue's other typed tile buffers
    accumulator: Attribute | None = None  # a wider type the reduction sums in (`wide_accumulator`), cast after

    def _counts(self) -> tuple[list[int], int, int]:
        """(grid, parallel tiles, reduction tiles), computed once per `tile` dict (the
        search asks often; tile and loops never change)."""
        cached = self.__dict__.get("_grid")
        if cached is not None and cached[0] is self.tile:
            return cached[1]
        tile = self.tile
        grid = [-(-l.extent // tile[l.name]) for l in self.loops]  # (ceil, in integers)
        par = red = 1
        for l, g in zip(self.loops, grid):
            if l.reduction:
                red *= g
            else:
                par *= g
        counts = (grid, par, red)
        self.__dict__["_grid"] = (self.tile, counts)
        return counts

    @property
    def grid(self) -> list[int]:
        return self._counts()[0]

    @property
    def parallel_tiles(self) -> int:
        cached = self.__dict__.get("_grid")
        return cached[1][1] if cached is not None and cached[0] is self.tile else self._counts()[1]

    @property
    def reduction_tiles(self) -> int:
        cached = self.__dict__.get("_grid")
        return cached[1][2] if cached is not None and cached[0] is self.tile else self._counts()[2]

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
            piped, hoisted, per_tile = self._split_loads()
            cached = (self.loads, self.epilogue, self.tile, (piped, hoisted, per_tile))
            self.__dict__["_split"] = cached
        return cached[3]

    def _split_loads(self) -> tuple[list[Window], list[Window], list[Window]]:
        """`split` computed: `per_step` sorted as `is_hoisted` and `is_per_tile` say, the
        grid read once for all of them."""
        grid, par, red = self._counts()
        single = par * red == 1
        by_name = {l.name: g for l, g in zip(self.loops, grid)}
        moving = set() if red == 1 else {l.name for l, g in zip(self.loops, grid) if l.reduction and g > 1}
        first = self.loads[0] if self.prologue_len and self.loads else None
        piped: list[Window] = []
        hoisted: list[Window] = []
        per_tile: list[Window] = []
        for w in self.loads + (self.epilogue if red == 1 else []):
            names = w.moved_by
            if not single and w is not first and all(by_name[name] == 1 for name in names):
                hoisted.append(w)
            elif moving and not any(name in moving for name in names):
                per_tile.append(w)
            else:
                piped.append(w)
        if self.init is not None and red > 1:  # (`init_window`)
            per_tile.append(self.epilogue[self.init])
        return piped, hoisted, per_tile

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
            # (not a conv prologue's input: the prologue rewrites its tile in place every step)
            if not coalesces(r, w.nbytes, arch) or (ks.prologue_len and w is ks.loads[0]):
                continue
            d = coalesce_dim([(m.terms, m.const, m.size) for m in w.dims], w.shape, red[0], r)
            if d is not None:
                dims[i] = d
        for i in sorted(coalesced([(i, piped[i].nbytes) for i in dims], len(piped), arch), reverse=True):
            w, d = piped.pop(i), dims[i]
            whole = replace(w, dims=tuple(DimMap((), m.const, m.size * r) if j == d else m for j, m in enumerate(w.dims)))
            moves = any(grid[n] > 1 for m in whole.dims for n, c in m.terms if c)
            (per_tile if moves else hoisted).append(whole)
        return piped, hoisted, per_tile

    return ks.memo("_load_split", arch, compute)


def run_length(ks: KernelShape, w: Window) -> int:
    """How many consecutive steps pipelined window `w` stays put over, with one
    reduction step per output tile (the steps are the parallel tiles, the loops'
    order): the product of the trip counts of the iterating loops after the last
    iterating loop `w` moves with. 1 for a window moving with the innermost iterating
    loop, and with more than one reduction step (its loads are `is_per_tile` there) or
    for a conv prologue's input (rewritten in place every step). npu-bufferize loads
    a window with a run length L > 1 only at the steps that start a run (`t == t0` or
    `t % L == 0`): its one slot (or, double buffered, two alternating by the run's
    parity) holds it meanwhile (`tile_loop_patterns.run_steps`)."""
    if ks.reduction_tiles != 1 or (ks.prologue_len and w is ks.loads[0]):
        return 1
    moved = set(w.moved_by)
    n = 1
    for l, g in zip(reversed(ks.loops), reversed(ks.grid)):
        if l.name in moved and g > 1:
            return n
        n *= g
    return 1  # (moves with no iterating loop: hoisted, not pipelined)


def run_lengths(ks: KernelShape, arch: Arch) -> tuple[int, ...]:
    """`run_length` of each pipelined window of `load_split` (in its order)."""
    return ks.memo("_runs", arch, lambda: tuple(run_length(ks, w) for w in load_split(ks, arch)[0]))


def ordered(ks: KernelShape, arch: Arch) -> KernelShape:
    """`ks` with its parallel loops in the order whose pipelined windows move the fewest
    DRAM bytes (with one reduction step per output tile and two or more parallel loops
    that iterate): a window staying put over runs of steps is loaded once a run
    (`run_length`), so the loop its largest windows do not move with goes innermost -
    a matmul's n when its row tiles of a are larger than its column tiles of b (a's
    whole K against b's), m otherwise; attention's query tiles, under which a head's kt
    and v stay put. The candidates: each iterating loop moved after the other iterating
    ones; ties keep the anchor's order. The loops' order changes nothing but the steps'
    (the windows are keyed by loop name)."""
    grid = ks.grid
    moving = [i for i, (l, g) in enumerate(zip(ks.loops, grid)) if not l.reduction and g > 1]
    if ks.reduction_tiles != 1 or len(moving) < 2:
        return ks
    piped = load_split(ks, arch)[0]
    if len(piped) < 2:
        return ks

    def moved(order: KernelShape) -> int:
        tiles = order.parallel_tiles
        return sum(w.valid_bytes() * -(-tiles // run_length(order, w)) for w in piped)

    best, least = ks, moved(ks)
    for i in moving[:-1]:
        loops = list(ks.loops)
        loops.insert(moving[-1], loops.pop(i))
        cand = replace(ks, loops=loops)
        if (b := moved(cand)) < least:
            best, least = cand, b
    return best


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

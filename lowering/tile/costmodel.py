"""The compiler's cost model: predicted cycles of a tiled kernel on one core. It mirrors the simulator's timing model at a coarser grain (no contention):
- a DMA costs `dma_latency` plus its bytes over `dram_bw`; a step's loads are
  spread over the core's `dma_channels` and together cannot beat `dram_bw`;
- cube and vector work cost what `Arch.cube_cycles`/`vector_cycles` say (the
  formulas the simulator charges: cube padding waste included; a conv prologue
  adds its ops over the input tile, every step), in the windows' element types;
- with double buffering the first load is exposed, then a step costs
  max(DMA, stall + compute) and the last step only its compute (stall: the core
  waits for a free channel while issuing the next step's loads when they
  outnumber `dma_channels`); otherwise their sum;
- the output tile is stored once per parallel tile, not overlapped, unless its stores
  are deferred (`tile_search.stores_deferred`: one step per output tile, double
  buffered, SRAM for a second output tile): then a step's store shares the DMA
  channels with the next step's loads and only the last one is exposed; the loads
  that stay put are exposed (see Algorithm).

Algorithm
---------
The loads are `tile_search.load_split`'s (a small window keyed by the reduction loop
may load its whole run at once, as npu-bufferize lands it). A window staying put
over all steps (`KernelShape.is_hoisted`) is loaded once per
task, one staying put over a tile's reduction steps (`is_per_tile`) once per output
tile, both exposed (so is the start of a sum, `KernelShape.init_window`, loaded
into the accumulator at an output tile's first step). A pipelined window staying put
over runs of L steps (`run_length`) is loaded at a run's first step only: such a
step is priced with it among its loads, once per run (its extra over another step
spread over the run's L steps) and once at the task's start. A step's tees (`npu_tile.tee`)
overlap its compute but follow the next step's loads on the channels; a KV append's
new rows land once per output tile, exposed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import ceil, prod

from lowering.tile.kernel_shape import run_lengths
from lowering.tile.tile_search import KernelShape, Window, load_split, stores_deferred
from npu_dialects.arch import Arch
from npu_dialects.tile import KernelKind


def dma_cycles(windows: list[Window], arch: Arch, dram_bw: int | None = None) -> int:
    """Cycles to land one step's loads: they are spread over the core's channels
    (largest first onto the least busy channel); a channel spends `dma_latency` per
    descriptor plus its bytes, and all of them together cannot beat `dram_bw` (or
    the given share of it). The latency the step's loads start with adds to their
    transfer: a pipelined step issues its loads once the previous ones landed, and
    the parts of a split kernel run in step, so no other transfer fills it."""
    return load_cycles(tuple(w.valid_bytes() for w in windows), arch, dram_bw or arch.dram_bw)


def load_cycles(sizes: tuple[int, ...], arch: Arch, bw: int) -> int:
    """`dma_cycles` of loads of these byte sizes at bandwidth `bw`."""
    return _load_cycles(sizes, arch.dma_channels, arch.dma_latency, bw) if sizes else 0


@lru_cache(maxsize=1 << 16)
def _load_cycles(sizes: tuple[int, ...], n_channels: int, latency: int, bw: int) -> int:
    """(memoised: the tile search prices the same loads for many candidates and core counts)"""
    channels = [0] * n_channels
    total = 0
    for nbytes in sorted(sizes, reverse=True):
        i = channels.index(min(channels))
        channels[i] += latency + ceil(nbytes / bw)
        total += nbytes
    return max(max(channels), ceil(total / bw) + latency)


def issue_stall(windows: list[Window], arch: Arch, dram_bw: int | None = None) -> int:
    """Cycles the core spends issuing one step's loads (smallest first, as npu-bufferize
    issues them): a DMA needs a free channel, so with more loads than `dma_channels`
    the core waits for the earliest ones to land before it can go on (and compute)."""
    return stall_for([w.valid_bytes() for w in windows], arch, dram_bw or arch.dram_bw)


def stall_for(sizes: Sequence[int], arch: Arch, bw: int) -> int:
    """`issue_stall` for loads of these byte sizes at bandwidth `bw`."""
    if len(sizes) <= arch.dma_channels:
        return 0
    return _issue(tuple(sorted(sizes)), arch.dma_channels, arch.dma_latency, bw)[0]


def stall_behind(first: int, sizes: Sequence[int], arch: Arch, bw: int) -> int:
    """`stall_for` of loads of these byte sizes issued while a transfer of `first` bytes,
    issued just before them, still holds a channel (a deferred store)."""
    if len(sizes) + 1 <= arch.dma_channels:
        return 0
    return _issue((first, *sorted(sizes)), arch.dma_channels, arch.dma_latency, bw)[0]


def channel_free(sizes: Sequence[int], arch: Arch, bw: int) -> int:
    """When a DMA channel is free again after a step issues loads of these byte sizes
    (smallest first, at bandwidth `bw`): what a later transfer of the step - a line
    buffer's SRAM-to-SRAM move behind prefetched loads - waits for."""
    if len(sizes) < arch.dma_channels:
        return 0
    return _issue(tuple(sorted(sizes)), arch.dma_channels, arch.dma_latency, bw)[1]


@lru_cache(maxsize=1 << 16)
def _issue(sizes: tuple[int, ...], n_channels: int, latency: int, bw: int) -> tuple[int, int]:
    """(the core's stall issuing `sizes` in order, when the first channel is free after)."""
    share = max(1, bw // n_channels)  # the channels stream together
    free = [0] * n_channels
    t = 0
    for b in sizes:
        i = free.index(min(free))
        t = max(t, free[i])
        free[i] = t + latency + ceil(b / share)
    return t, min(free)


WIDTH_TYPE = {1: "i8", 2: "f16", 4: "f32"}
"""A type of each element size: the cube and vector rates depend on the width alone."""


def width_type(*windows: Window) -> str:
    """The type name the work on these windows is priced in: the widest of them."""
    return WIDTH_TYPE[max(w.elem for w in windows)]


def compute_cycles(ks: KernelShape, arch: Arch) -> int:
    """Cycles of the anchor compute for one step (one tile, one reduction slice), the
    cube in its input's type, vector work in the widest type it touches."""
    t = ks.tile
    # a prologue (a conv's per-channel ops, a matmul's layernorm): its passes over the input tile
    first = ks.loads[0] if ks.loads else ks.out
    prologue = ks.prologue_len * arch.vector_cycles(prod(first.sizes), dtype=width_type(first)) \
        if ks.prologue_len else 0
    if ks.kind == KernelKind.MATMUL:
        return prologue + arch.cube_cycles(t["m"], t["k"], t["n"], dtype=width_type(first))
    if ks.kind == KernelKind.CONV2D:
        kh, kw = ks.loads[1].sizes[2], ks.loads[1].sizes[3]
        groups = ks.window_area
        return prologue + arch.cube_cycles(t["oh"] * t["ow"], t["ci"] * kh * kw, t["co"] / groups, batch=groups,
                                           dtype=width_type(first))
    if ks.tile_cycles is not None:  # (a structured op's own)
        return ks.tile_cycles(arch)
    dtype = width_type(ks.out, *ks.loads)
    if ks.kind in (KernelKind.POOL, KernelKind.APPLY):
        return arch.vector_cycles(prod(ks.out.sizes), ks.window_area, dtype)
    return arch.vector_cycles(prod(ks.out.sizes), dtype=dtype)


@dataclass(frozen=True)
class CostTerms:
    """What `tile_costs` reads off a tiled kernel, taken once per tiling and arch (the
    search prices each candidate for every core count): the valid bytes of each load
    (in window order) by when it is loaded, one step's compute, the output tile."""

    reductions: int
    piped: tuple[int, ...]
    hoisted: tuple[int, ...]
    per_tile: tuple[int, ...]
    epilogue: tuple[int, ...]
    compute: int
    out_elements: int
    out_bytes: int
    tees: tuple[int, ...] = ()
    seams: tuple[int, ...] = ()
    finish: int = 0  # (cycles the output tile's last reduction step adds: an online state's normalisation)
    epilogue_type: str = "f32"  # (the type an epilogue pass over the output tile is priced in)
    epilogue_pass: int = 0  # (the cycles of one such pass)
    runs: tuple[int, ...] = ()  # (the pipelined loads staying put over runs of steps, `run_length`; not in `piped`)
    run_length: int = 1  # (the shortest of their runs: each run's first step loads them too)


def cost_terms(ks: KernelShape, arch: Arch) -> CostTerms:
    def compute() -> CostTerms:
        def sizes(ws: list[Window]) -> tuple[int, ...]:
            return tuple(w.valid_bytes() for w in ws)

        piped, hoisted, per_tile = load_split(ks, arch)
        lengths = run_lengths(ks, arch)
        out_elements, epilogue_type = prod(ks.out.sizes), width_type(ks.out, *ks.epilogue)
        return CostTerms(ks.reduction_tiles, sizes([w for w, n in zip(piped, lengths) if n == 1]), sizes(hoisted),
                         sizes(per_tile), sizes(ks.epilogue_loads()), compute_cycles(ks, arch), out_elements,
                         ks.out.valid_bytes(), sizes(ks.tees), sizes(ks.seams), ks.finish(arch) if ks.finish else 0,
                         epilogue_type, arch.vector_cycles(out_elements, dtype=epilogue_type),
                         sizes([w for w, n in zip(piped, lengths) if n > 1]), min((n for n in lengths if n > 1), default=1))

    return ks.memo("_cost_terms", arch, compute)


def tile_costs(ks: KernelShape, arch: Arch, double_buffer: bool, epilogue_len: int = 0,
               dram_bw: int | None = None, tiles: int = 2) -> tuple[int, int]:
    """(fixed, per_tile): a task covering p = `tiles` of the kernel's parallel tiles is
    predicted to take fixed + p * per_tile cycles on one core (pipeline fill and drain
    are the fixed part; deferred stores only pay with two tiles or more). `dram_bw`
    overrides the bandwidth (a share of it, for split kernels)."""
    bw = dram_bw or arch.dram_bw
    known = ks.memo("_tile_costs", arch, dict)  # (the search asks again for each core count)
    deferred = double_buffer and tiles > 1 and stores_deferred(ks, arch)
    key = (double_buffer, epilogue_len, bw, deferred)
    hit = known.get(key)
    if hit is None:
        hit = known[key] = _tile_costs(cost_terms(ks, arch), arch, double_buffer, epilogue_len, bw, deferred)
    return hit


def _tile_costs(t: CostTerms, arch: Arch, double_buffer: bool, epilogue_len: int, bw: int,
                deferred: bool = False) -> tuple[int, int]:
    hoisted, load, epi, store, tee = _dma_terms(t, arch, bw)
    epi += epilogue_len * t.epilogue_pass
    fixed, per = _steps_cost(t, arch, double_buffer, bw, deferred, t.piped, load, hoisted, epi, store, tee)
    if not t.runs:
        return fixed, per
    # a run's first step loads its windows too: priced as such a step, once per run and at a task's start
    with_runs = (*t.piped, *t.runs)
    fixed_b, per_b = _steps_cost(t, arch, double_buffer, bw, deferred, with_runs, load_cycles(with_runs, arch, bw),
                                 hoisted, epi, store, tee)
    extra = max(0, per_b - per)
    return fixed_b + extra, per + -(-extra // t.run_length)


def _steps_cost(t: CostTerms, arch: Arch, double_buffer: bool, bw: int, deferred: bool, piped: tuple[int, ...],
                load: int, hoisted: int, epi: int, store: int, tee: int) -> tuple[int, int]:
    """`_tile_costs` with every step loading `piped` (`load` cycles)."""
    r = t.reductions
    comp = t.compute
    if double_buffer:
        # first load, then each step overlaps the next load (issuing it may stall the
        # core when there are more loads than channels); the last step only computes
        stall = stall_for(piped, arch, bw)
        fixed = hoisted + load - max(load, comp) + comp
        if deferred:  # (a step's store goes out with the next step's loads: only the last is exposed;
            # they are issued while it still holds a channel)
            behind = stall_behind(t.out_bytes, piped, arch, bw)
            loads = _load_cycles((*piped, t.out_bytes), arch.dma_channels, arch.dma_latency, bw)
            return fixed + store, max(loads + tee, behind + comp + epi)
        return fixed, r * max(load + tee, stall + comp) + epi + store
    return hoisted, r * (load + max(comp, tee)) + epi + store


def _dma_terms(t: CostTerms, arch: Arch, bw: int) -> tuple[int, int, int, int, int]:
    """(hoisted loads, a step's loads, an output tile's epilogue loads, its store, a step's
    tees) at bandwidth `bw`, for `_tile_costs`: read once per bandwidth (both buffering
    modes and every epilogue length price the same loads)."""
    known = t.__dict__.get("_dma")
    if known is None:
        known = t.__dict__["_dma"] = {}
    hit = known.get(bw)
    if hit is not None:
        return hit
    n_channels, latency = arch.dma_channels, arch.dma_latency

    def loads(sizes: tuple[int, ...]) -> int:  # (`load_cycles`)
        return _load_cycles(sizes, n_channels, latency, bw) if sizes else 0

    epi = loads(t.per_tile) + t.finish
    if t.reductions > 1 and t.epilogue:
        epi += loads(t.epilogue)
    for b in t.seams:  # (each landed alone at its block's step)
        epi += loads((b,))
    store = latency + ceil(t.out_bytes / bw)
    # a step's tees go out before its compute and are awaited at its end: they find
    # the channels busy with the next step's loads, and the step after cannot load
    # into the slots they read until they are out
    hit = known[bw] = (loads(t.hoisted), loads(t.piped), epi, store, loads(t.tees))
    return hit


def kernel_cycles(ks: KernelShape, arch: Arch, double_buffer: bool, epilogue_len: int = 0) -> int:
    """Predicted cycles of the whole kernel on one core."""
    return _cycles_on(ks, arch, double_buffer, epilogue_len)(1)


def _cycles_on(ks: KernelShape, arch: Arch, double_buffer: bool, epilogue_len: int) -> Callable[[int], int]:
    """`parallel_cycles` of `ks` as a function of `parts`, what it reads off the tiling
    (its memo of `tile_costs`, tiles, deferred stores) read once (the search prices each
    candidate for every core count)."""
    known = ks.memo("_tile_costs", arch, dict)
    tiles_all = ks.parallel_tiles
    can_defer = double_buffer and tiles_all > 1 and stores_deferred(ks, arch)
    terms: list[CostTerms] = []  # (`cost_terms`, read at the first miss)

    def cycles_on(parts: int) -> int:
        if parts <= 1:
            tiles, bw, sync = tiles_all, arch.dram_bw, 0
        else:
            tiles, bw, sync = -(-tiles_all // parts), max(1, arch.dram_bw // parts), 2 * arch.sync_latency
        deferred = can_defer and tiles > 1  # (as `tile_costs`)
        key = (double_buffer, epilogue_len, bw, deferred)
        hit = known.get(key)
        if hit is None:
            if not terms:
                terms.append(cost_terms(ks, arch))
            hit = known[key] = _tile_costs(terms[0], arch, double_buffer, epilogue_len, bw, deferred)
        return hit[0] + tiles * hit[1] + sync

    return cycles_on


def kernel_dram_bytes(ks: KernelShape, arch: Arch, parts: int = 1) -> int:
    """DRAM bytes the kernel moves split in `parts` tasks (its loads as `load_split` has
    them): every step's loads and tees, the hoisted loads once per task, the per-tile
    loads, epilogue operands and stores once per output tile; a window staying put
    over runs of L steps (`run_length`) once per run, and once more per task after the
    first (a task may start inside a run)."""
    def compute() -> tuple[int, int, int, int]:
        piped, hoisted, per_tile_ws = load_split(ks, arch)
        lengths = run_lengths(ks, arch)
        once = per_tile_ws + ([] if ks.reduction_tiles == 1 else ks.epilogue_loads())
        per_tile = sum(w.valid_bytes() for w in once + ks.seams) + ks.out.valid_bytes()
        every = sum(w.valid_bytes() for w, n in zip(piped, lengths) if n == 1)
        runs = sum(w.valid_bytes() * (-(-ks.parallel_tiles // n) - 1) for w, n in zip(piped, lengths) if n > 1)
        first = sum(w.valid_bytes() for w, n in zip(piped, lengths) if n > 1)
        return (every + sum(w.valid_bytes() for w in ks.tees), per_tile, sum(w.valid_bytes() for w in hoisted) + first,
                runs)

    # (per step, per output tile, per task, the runs' after each task's first)
    step, per_tile, task, runs = ks.memo("_dram_terms", arch, compute)
    return ks.parallel_tiles * ks.reduction_tiles * step + ks.parallel_tiles * per_tile + parts * task + runs


def parallel_cycles(ks: KernelShape, arch: Arch, double_buffer: bool, epilogue_len: int, parts: int) -> int:
    """Predicted cycles of the kernel with its parallel tiles split into `parts` tasks on
    different cores: the largest part, with every DMA getting 1/parts of `dram_bw`
    (the parts stream concurrently), plus two cross-core events (parts start on other
    cores than their producer, and their consumer waits for all of them)."""
    return _cycles_on(ks, arch, double_buffer, epilogue_len)(parts)


SPLIT_MARGIN = 0.9
"""A split of a small kernel must be predicted at least 10% faster than one core: the
model's error on small kernels (see bench/) is of that order, and a split that only
breaks even in the model loses to the sync it adds."""

LARGE_SPLIT_MARGIN = 0.95
"""The margin for kernels of at least LARGE_KERNEL_CYCLES on one core: their error is
smaller (bench/results/calibration.md: long kernels are DMA- or cube-bound streams
the model prices within a few percent), and the fixed sync a split adds is a smaller
share of them."""

LARGE_KERNEL_CYCLES = 20_000


def split_margin(one_core_cycles: int) -> float:
    """The factor a split's predicted cycles must stay under, relative to one core."""
    return LARGE_SPLIT_MARGIN if one_core_cycles >= LARGE_KERNEL_CYCLES else SPLIT_MARGIN


def best_split(cycles_on: Callable[[int], int], max_parts: int) -> tuple[int, int]:
    """(parts, predicted cycles) minimising `cycles_on(parts)` over 1..max_parts: more parts
    must win by `split_margin` over one core, ties keep fewer parts."""
    one = cycles_on(1)
    best = (1, one)
    for k in range(2, max_parts + 1):
        c = cycles_on(k)
        if c < best[1] and c <= one * split_margin(one):
            best = (k, c)
    return best


def part_spans(cycles_on: Callable[[int], int], parts: int, sync_latency: int) -> list[int]:
    """The predicted span on k = 1..parts cores, a split's two cross-core events left
    out (as in a kernel's `predicted_cycles`): `npu-schedule` runs a kernel on fewer
    cores than its `parts` when that finishes it sooner (some cores are busy)."""
    return [cycles_on(k) - (2 * sync_latency if k > 1 else 0) for k in range(1, parts + 1)]


def best_parts(ks: KernelShape, arch: Arch, double_buffer: bool, epilogue_len: int = 0) -> tuple[int, int]:
    """`best_split` of a tiled kernel over min(cores, tiles) parts (`parallel_cycles`)."""
    return best_split(_cycles_on(ks, arch, double_buffer, epilogue_len), min(arch.cores, ks.parallel_tiles))


def cycles_floor(ks: KernelShape, arch: Arch) -> int | None:
    """A lower bound of `cycles_then_bytes`' cycles for `ks` in either buffering mode and
    with any epilogue (None: none known). Two bounds, the larger holds:
    - a task covering ceil(tiles / cores) output tiles spends on each at least its
      reduction steps' compute, or at least its store (see `_tile_costs`: every other
      term is a cost more; a split over fewer cores has more tiles a task, at a lower
      bandwidth, and a margin only raises a split's figure); not for a structured op,
      whose compute is its own;
    - every step loads its pipelined windows (`load_split`; not those staying put over
      runs of steps, `run_length`) through the DMA: a step
      costs at least their latency and bytes at the task's bandwidth (`_load_cycles`;
      each of `_tile_costs`' modes charges a tile at least r such loads), and p tasks
      of ceil(tiles / p) tiles each at dram_bw / p move no faster than all tiles' bytes
      at dram_bw, one latency a step on the busiest core."""
    tiles, r = ks.parallel_tiles, ks.reduction_tiles
    busiest = -(-tiles // min(arch.cores, tiles))
    piped = sum(w.valid_bytes() for w, n in zip(load_split(ks, arch)[0], run_lengths(ks, arch)) if n == 1)
    dma = ceil(tiles * r * piped / arch.dram_bw) + busiest * r * arch.dma_latency if piped else 0
    if ks.tile_cycles is not None:
        return dma or None
    store = arch.dma_latency + ceil(ks.out.valid_bytes() / arch.dram_bw)
    return max(busiest * max(r * compute_cycles(ks, arch), store), dma)


def cycles_then_bytes(ks: KernelShape, arch: Arch, double_buffer: bool, epilogue_len: int = 0) -> tuple[int, int]:
    """The tile search's ranking key: the cycles of the best split over the cores
    (`best_parts`), a split's over its `split_margin` (a split tiling must beat every
    one-core tiling by the margin too, or more cores could run slower), then
    (between tilings predicted equally fast) the fewer DRAM bytes, which leave more
    bandwidth to concurrent kernels."""
    cycles_on = _cycles_on(ks, arch, double_buffer, epilogue_len)
    parts, cycles = best_split(cycles_on, min(arch.cores, ks.parallel_tiles))  # (`best_parts`)
    if parts > 1:
        cycles = ceil(cycles / split_margin(cycles_on(1)))
    return cycles, kernel_dram_bytes(ks, arch, parts)


cycles_then_bytes.floor = cycles_floor  # type: ignore[attr-defined]  # (the tile search's pruning bound)

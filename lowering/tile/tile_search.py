"""Tiling math, independent of IR rewriting: the loop nest of each kernel kind,
the window every operand tile reads or writes, SRAM sizing and the tile-size
search ranked by the cost model (`lowering/tile/costmodel.py`).

A kernel is an *anchor* op (matmul/gemm, conv2d, max-pool or an elementwise op)
plus an elementwise *epilogue* applied to the output tile. Loops are listed
outermost first; all parallel loops come before the single reduction loop.
A `Window` gives, per dimension of an operand, `offset = sum(coef * loop
index) + const` and a static size, so bufferization can emit the DMA for any
tile from loop indices alone.

Layout: `kernel_shape.py` holds loops, windows and SRAM sizing, `anchors.py` the kernel
kinds, `epilogue.py` epilogues, prologues and `split_kernel`; this module the search
(`search`, `search_many`, `TileSearch`) and re-exports their public names.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from math import prod

from lowering.tile.anchors import (  # re-exported
    TILING_MODELS,
    Anchor,
    AppendAttentionAnchor,
    AttentionAnchor,
    ConvAnchor,
    EltwiseAnchor,
    GenericAnchor,
    MatmulAnchor,
    MatmulViews,
    PoolAnchor,
    RowStatsAnchor,
    TableShape,
    append_attention,
    broadcast_window,
    core_shares,
    input_elems,
    make_anchor,
    matmul_views,
    three_halves,
    tile_candidates,
    tiling_model,
)
from lowering.tile.epilogue import (  # re-exported
    INIT_KINDS,
    ROW_OPS,
    Epilogue,
    EpilogueStep,
    MatmulPrologueAnchor,
    PrologueAnchor,
    accumulator_init,
    chain_steps,
    chain_types,
    drop_init_step,
    epilogue_of,
    matmul_prologue,
    per_channel_shape,
    prologue_of,
    row_dims,
    split_kernel,
    step_special,
    table_step,
    wide_accumulator,
    with_epilogue,
)
from lowering.tile.kernel_shape import (  # re-exported
    F32,
    DimMap,
    KernelShape,
    Loop,
    T,
    TilingError,
    Window,
    align_up,
    coalesce_dim,
    coalesced,
    coalesces,
    first_fit,
    fixed,
    load_split,
    ordered,
    per_tile,
    sram_bytes,
    sram_parts,
    stores_deferred,
)
from npu_dialects.arch import Arch
from npu_dialects.compute import bias_shape
from npu_dialects.graph import (
    RequantizeOp,
    shape_of,
)


def search(anchor: Anchor, extra: Sequence[tuple[int, tuple[int, ...]]], steps: Sequence[EpilogueStep],
           arch: Arch, allow_double_buffer: bool, cost) -> tuple[KernelShape, bool, int]:
    """Best tiling that fits SRAM: (shape, double buffered?, predicted cycles).
    `cost(ks, arch, db, epilogue_len)` ranks (predicted cycles, or a tuple of them
    then tie-breakers); double buffering is one more choice (halved tiles may cost
    more than the overlap gains), ties prefer more SRAM used. Each point's loops are
    `ordered` (their order by the DRAM bytes the windows move). Small spaces are
    searched whole; larger ones by hill climbs from four starts per buffering mode,
    then from each mode's best point in the other mode (`TileSearch.run`)."""
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


def vector_steps(anchor: Anchor, steps: Sequence[EpilogueStep], arch: Arch,
                 extra: Sequence[tuple[int, tuple[int, ...]]] = ()) -> int:
    """The vector passes of the epilogue steps the vector unit runs (each step's
    `passes`: a LayerNorm or a requantizing add costs several): all but a cube product's requantize on
    an arch whose cube's output stage requantizes (`requant_unit = cube`), and its
    first step's per-channel bias add on one whose output stage adds the bias
    (`bias_unit = cube`, `bias_step`)."""
    cube = anchor.kind in INIT_KINDS and arch.requant_unit == "cube"
    n = sum(s.passes for s in steps if not (cube and isinstance(s.template, RequantizeOp) and s.to is None))
    if anchor.kind in INIT_KINDS and arch.bias_unit == "cube" and steps and bias_step(steps[0], extra, anchor):
        n -= 1
    return n


def bias_step(step: EpilogueStep, extra: Sequence[tuple[int, tuple[int, ...]]], anchor: Anchor) -> bool:
    """Whether an epilogue's first step is the add of a bias varying along one axis of the
    product's output at most (`npu_dialects.compute.bias_shape`): `npu-bufferize` makes it
    the accumulator's `cube_output` add."""
    if step.fn != "add" or step.template is not None or step.to is not None or len(step.args) != 2:
        return False
    j = step.args[1] if step.args[0] is None else step.args[0] if step.args[1] is None else None
    return isinstance(j, int) and bias_shape(extra[j][1], shape_of(anchor.op.results[0]))


class TileSearch:
    """The state of one `search`: candidate lists per loop, evaluated points (an index
    per loop into its list, and the double-buffer choice) and the best so far."""

    def __init__(self, anchor: Anchor, extra: Sequence[tuple[int, tuple[int, ...]]], steps: Sequence[EpilogueStep],
                 arch: Arch, cost) -> None:
        self.anchor, self.extra, self.steps, self.arch, self.cost = anchor, extra, steps, arch, cost
        self.epilogue_len = vector_steps(anchor, steps, arch, extra)
        cands = anchor.candidates(arch)
        self.names = [l.name for l in anchor.loops()]
        self.lists = [cands[n] for n in self.names]
        self.seen: dict[tuple, tuple | None] = {}
        self.shapes: dict[tuple[int, ...], KernelShape | None] = {}  # (one per point, both buffering modes)
        self.smallest: list[int] = []
        self.best: tuple | None = None
        self.epilogue = Epilogue(extra, steps, anchor.elems, anchor.op.results[0])  # (`with_epilogue`, types read once)
        self.sram = arch.sram_bytes
        self.floor = getattr(cost, "floor", None)  # (a lower bound a cost function declares of itself)
        self.points: dict[bool, tuple[int, ...] | None] = {}  # (each buffering mode's best point after its climbs)

    def shaped(self, idx: tuple[int, ...]) -> KernelShape | None:
        """The kernel shape of a point (with its epilogue), None when invalid."""
        if idx not in self.shapes:
            shaped = self.anchor.shape({n: lst[i] for n, lst, i in zip(self.names, self.lists, idx)})
            if shaped is None or (self.epilogue_len and self.anchor.combine(shaped)):
                self.shapes[idx] = None  # (an epilogue cannot run on merge states)
            else:
                self.shapes[idx] = ordered(self.epilogue(shaped), self.arch)
        return self.shapes[idx]

    def evaluate(self, idx: tuple[int, ...], db: bool) -> tuple | None:
        """(cost, -sram, ks) of a candidate, None when invalid; (inf, need, None) when too big."""
        key = (idx, db)
        seen = self.seen
        if key in seen:
            return seen[key]
        ks = self.shaped(idx)
        if ks is None:
            seen[key] = None
        else:
            need = sram_bytes(ks, self.arch, db)
            self.smallest.append(need)
            if need > self.sram:
                seen[key] = ((float("inf"),), need, None)  # (not priced: it cannot be chosen)
            else:
                c = self.cost(ks, self.arch, db, self.epilogue_len + (ks.accumulator is not None))  # (+ its cast)
                seen[key] = (c if isinstance(c, tuple) else (c,), -need, ks)
        return seen[key]

    def cannot_win(self, idx: tuple[int, ...], db: bool) -> bool:
        """Whether a point is invalid, or priced by `cycles_then_bytes` at more cycles than
        the best so far by its lower bound (`beaten`): evaluating it would not change the
        best (ties are evaluated), so the exhaustive search skips its SRAM and cost."""
        if self.best is None or self.floor is None:
            return False
        if self.shaped(idx) is None:
            return True  # (`evaluate` gives None: nothing to consider)
        return self.beaten(idx, self.best[0][0], db)

    def beaten(self, idx: tuple[int, ...], cycles: int, db: bool) -> bool:
        """Whether a point not yet evaluated in buffering mode `db` costs more than
        `cycles` by its lower bound (`cycles_floor`; an evaluated one is read as it is)."""
        if self.floor is None or (idx, db) in self.seen:
            return False
        ks = self.shaped(idx)
        floor = self.floor(ks, self.arch) if ks is not None else None
        return floor is not None and floor > cycles

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
        """Hill climb from a fitting point while the cost improves (a neighbour whose
        `cycles_floor` exceeds the current point's cycles cannot improve on it: not
        evaluated)."""
        while True:
            self.consider(r, db)
            better = [(x, n) for n in self.neighbours(cur) if not self.beaten(n, r[0][0], db)
                      and (x := self.evaluate(n, db)) is not None and x[2] is not None and x[:2] < r[:2]]
            if not better:
                return
            r, cur = min(better, key=lambda t: t[0][:2])

    def best_point(self, db: bool) -> tuple[int, ...] | None:
        """The best evaluated point that fits in buffering mode `db` (None: none fits)."""
        fits = [(r[:2], idx) for (idx, mode), r in self.seen.items() if mode == db and r is not None and r[2] is not None]
        return min(fits)[1] if fits else None

    def run(self, modes: Sequence[bool]) -> tuple[KernelShape, bool, int]:
        lists = self.lists
        total = prod(len(lst) for lst in lists)
        for db in modes:
            if total <= self.anchor.exhaustive_limit:
                for idx in itertools.product(*(range(len(lst)) for lst in lists)):
                    if not self.cannot_win(idx, db):
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
            self.points[db] = self.best_point(db)
        if total > self.anchor.exhaustive_limit and len(modes) > 1:
            # each mode's climb also starts from the other's best point (a local optimum of
            # one landscape is often near a better one of the other)
            for db in modes:
                other = self.points.get(not db)
                if other is not None and other != self.points.get(db):
                    r, cur = self.shrink(other, db)
                    if r is not None and r[2] is not None:
                        self.climb(r, cur, db)
        if self.best is None:
            raise TilingError(f"no tile fits sram_bytes={self.arch.sram_bytes}: the smallest candidate needs "
                              f"{min(self.smallest) if self.smallest else '?'} bytes")
        return self.best[2], self.best[3], self.best[0][0]

__all__ = [
    "Anchor",
    "AppendAttentionAnchor",
    "AttentionAnchor",
    "ConvAnchor",
    "DimMap",
    "EltwiseAnchor",
    "Epilogue",
    "EpilogueStep",
    "F32",
    "GenericAnchor",
    "INIT_KINDS",
    "KernelShape",
    "Loop",
    "MatmulAnchor",
    "MatmulPrologueAnchor",
    "MatmulViews",
    "PARALLEL_MIN_SEARCHES",
    "PoolAnchor",
    "PrologueAnchor",
    "ROW_OPS",
    "RowStatsAnchor",
    "T",
    "TILING_MODELS",
    "TableShape",
    "TileSearch",
    "TilingError",
    "Window",
    "accumulator_init",
    "align_up",
    "append_attention",
    "broadcast_window",
    "chain_steps",
    "chain_types",
    "coalesce_dim",
    "coalesced",
    "coalesces",
    "compile_jobs",
    "core_shares",
    "drop_init_step",
    "epilogue_of",
    "first_fit",
    "fixed",
    "input_elems",
    "load_split",
    "ordered",
    "make_anchor",
    "matmul_prologue",
    "matmul_views",
    "per_channel_shape",
    "per_tile",
    "prologue_of",
    "row_dims",
    "search",
    "search_many",
    "split_kernel",
    "sram_bytes",
    "sram_parts",
    "step_special",
    "stores_deferred",
    "table_step",
    "three_halves",
    "tile_candidates",
    "tiling_model",
    "vector_steps",
    "wide_accumulator",
    "with_epilogue",
]

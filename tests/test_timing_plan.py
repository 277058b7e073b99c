"""A timing-only run's copy plans (`sim.memory.timing_plan`, and `timing_planner`'s
for one copy op's window and buffer shapes) agree with the full plans (`plan_copy`)
on what the timing reads of them - bytes moved, whether the destination is filled,
the SRAM byte ranges read and written - and on the error of a window that leaves a
buffer, for windows inside, across and outside the buffers."""

from __future__ import annotations

import numpy as np
import pytest

from sim.memory import DRAM, SRAM, SRC_CLIP, Buf, CopyPlan, Region, plan_copy, timing_plan, timing_planner


def _bufs(rng: np.random.Generator, rank: int, src_space: str, dst_space: str,
          dtype: np.dtype) -> tuple[Buf, Buf]:
    shape_s = tuple(int(d) for d in rng.integers(1, 6, rank))
    shape_d = tuple(int(d) for d in rng.integers(1, 6, rank))
    size = dtype.itemsize
    src = Buf(Region("s", src_space, 8192), 64 * size, shape_s, "src", dtype=dtype)
    dst = Buf(Region("d", dst_space, 8192), 128 * size, shape_d, "dst", dtype=dtype)
    return src, dst


def _facts(plan: CopyPlan | str) -> tuple:
    if isinstance(plan, str):
        return (plan,)
    fills = getattr(plan, "fills", None)
    if fills is None:  # (a full plan: it fills when it has a fill window)
        fills = plan.fill_sl is not None
    return plan.nbytes, fills, plan.sram_read, plan.sram_write


@pytest.mark.parametrize("rank", [1, 2, 3, 4])
@pytest.mark.parametrize("spaces", [(DRAM, SRAM), (SRAM, DRAM), (SRAM, SRAM)])
def test_timing_plan_agrees_with_plan_copy(rank: int, spaces: tuple[str, str]) -> None:
    rng = np.random.default_rng(rank * 7 + len(spaces[0]))
    inside = 0
    for i in range(400):
        dtype = np.dtype([np.float32, np.int8, np.float16][i % 3])
        src, dst = _bufs(rng, rank, *spaces, dtype)
        sizes = tuple(int(w) for w in rng.integers(1, 5, rank))
        so = tuple(int(o) for o in rng.integers(-2, 5, rank))
        do = tuple(int(o) for o in rng.integers(-2, 5, rank))
        if i % 2:  # (half of them inside both buffers: the common case)
            sizes = tuple(min(w, s, d) for w, s, d in zip(sizes, src.shape, dst.shape))
            so = tuple(int(rng.integers(0, s - w + 1)) for s, w in zip(src.shape, sizes))
            do = tuple(int(rng.integers(0, d - w + 1)) for d, w in zip(dst.shape, sizes))
            inside += 1
        pad = [None, 0.0, SRC_CLIP][i % 3]
        clip = bool(i % 5 < 2)
        for check in (True, False):
            want = plan_copy("info", src, dst, so, do, sizes, pad, clip, check)
            got = timing_plan("info", src, dst, so, do, sizes, pad, clip, check)
            assert _facts(got) == _facts(want), (src.shape, dst.shape, so, do, sizes, pad, clip, check)
            planned = timing_planner(sizes, src.shape, dst.shape)("info", src, dst, so, do, sizes, pad, clip, check)
            assert _facts(planned) == _facts(want), (src.shape, dst.shape, so, do, sizes, pad, clip, check)
    assert inside == 200

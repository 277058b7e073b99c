"""The compiler's cost model: predicted cycles of a tiled kernel on one core.

It mirrors the simulator's timing model at a coarser grain (no contention):
- a DMA costs `dma_latency` plus its bytes over `dram_bw`; a step's loads are
  spread over the core's `dma_channels`;
- cube work is ceil(M/cm)*ceil(K/ck)*ceil(N/cn) blocks (padding waste
  included), vector work ceil(elements/vector_lanes) cycles;
- with double buffering the first load is exposed, then a step costs
  max(DMA, compute) and the last step only its compute; otherwise their sum; the output tile is stored once per parallel tile
  (latency + bytes, not overlapped).
"""

from __future__ import annotations

from math import ceil, prod

from npu_dialects.arch import Arch
from lowering.tiling import KernelShape, Window


def dma_cycles(windows: list[Window], arch: Arch) -> int:
    if not windows:
        return 0
    waves = ceil(len(windows) / arch.dma_channels)
    return waves * arch.dma_latency + ceil(sum(w.valid_bytes() for w in windows) / arch.dram_bw)


def compute_cycles(ks: KernelShape, arch: Arch) -> int:
    """Cycles of the anchor compute for one step (one tile, one reduction slice)."""
    cm, ck, cn = arch.cube
    t = ks.tile
    if ks.kind == "matmul":
        return ceil(t["m"] / cm) * ceil(t["k"] / ck) * ceil(t["n"] / cn)
    if ks.kind == "conv2d":
        kh, kw = ks.loads[1].sizes[2], ks.loads[1].sizes[3]
        m = t["oh"] * t["ow"]
        return ceil(m / cm) * ceil(t["ci"] * kh * kw / ck) * ceil(t["co"] / cn)
    if ks.kind == "pool":
        return ceil(prod(ks.out.sizes) * ks.window_area / arch.vector_lanes)
    return ceil(prod(ks.out.sizes) / arch.vector_lanes)


def kernel_cycles(ks: KernelShape, arch: Arch, double_buffer: bool, epilogue_len: int = 0) -> int:
    """Predicted cycles of the whole kernel on one core."""
    steps = ks.parallel_tiles * ks.reduction_tiles
    piped = ks.loads + (ks.epilogue if ks.reduction_tiles == 1 else [])
    load = dma_cycles(piped, arch)
    comp = compute_cycles(ks, arch)
    epi = epilogue_len * ceil(prod(ks.out.sizes) / arch.vector_lanes)
    if ks.reduction_tiles > 1 and ks.epilogue:
        epi += dma_cycles(ks.epilogue, arch)
    store = arch.dma_latency + ceil(ks.out.valid_bytes() / arch.dram_bw)
    if double_buffer:
        # first load, then each step overlaps the next load; the last step only computes
        total = load + (steps - 1) * max(load, comp) + comp
    else:
        total = steps * (load + comp)
    return total + ks.parallel_tiles * (epi + store)


def split_cycles(ks: KernelShape, arch: Arch, double_buffer: bool, epilogue_len: int = 0) -> int:
    """Predicted cycles when the parallel tiles are spread over the cores (ranking key)."""
    one = kernel_cycles(ks, arch, double_buffer, epilogue_len)
    parts = min(arch.cores, ks.parallel_tiles)
    if parts <= 1:
        return one
    return ceil(one / parts) + arch.sync_latency

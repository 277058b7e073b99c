"""Unit tests of the plain algorithms beside the passes: tiling windows and
SRAM sizing, the cost model, core splitting, first-fit placement, liveness."""

from __future__ import annotations

import numpy as np
import pytest

from lowering.task.memplan import first_fit, live_lower_bound, ordered
from lowering.task.schedule import split_range
from lowering.tile.costmodel import (
    best_parts,
    cycles_floor,
    cycles_then_bytes,
    dma_cycles,
    kernel_cycles,
    parallel_cycles,
)
from lowering.tile.tile_search import (
    DimMap,
    KernelShape,
    Loop,
    Window,
    sram_bytes,
    tile_candidates,
)
from npu_dialects.arch import PRESETS, Arch, ArchError, parse_arch_spec


def test_arch_spec_overrides_and_errors():
    a = parse_arch_spec("default,cores=1,cube=8x16x32,dram_bw=256")
    assert (a.cores, a.cube, a.dram_bw) == (1, (8, 16, 32), 256)
    assert a.sram_bytes == PRESETS["default"].sram_bytes
    assert parse_arch_spec("edge-small").cores == 1
    assert parse_arch_spec("default").spec() == "default"
    assert parse_arch_spec(a.spec()) == a
    for bad, msg in [("default,cores=0", "positive"), ("nope", "unknown arch preset"),
                     ("default,cube=16x16", "MxKxN"), ("default,foo=1", "unknown arch parameter"),
                     ("default,align=48", "power of two"), ("default,cores", "expected name=value")]:
        with pytest.raises(ArchError, match=msg):
            parse_arch_spec(bad)


def test_tile_candidates_cover_extent_and_cube_multiples():
    c = tile_candidates(100, 16)
    assert 100 in c and 16 in c and 64 in c and 1 in c
    assert c == sorted(c)


def _matmul_shape(tm: int, tn: int, tk: int, m: int = 64, n: int = 64, k: int = 64) -> KernelShape:
    a = Window(0, (m, k), (DimMap((("m", tm),), 0, tm), DimMap((("k", tk),), 0, tk)), 0.0)
    b = Window(1, (k, n), (DimMap((("k", tk),), 0, tk), DimMap((("n", tn),), 0, tn)), 0.0)
    out = Window(None, (m, n), (DimMap((("m", tm),), 0, tm), DimMap((("n", tn),), 0, tn)))
    return KernelShape("matmul", [Loop("m", m), Loop("n", n), Loop("k", k, True)],
                       {"m": tm, "n": tn, "k": tk}, [a, b], out)


def test_sram_bytes_counts_both_slots_when_double_buffered():
    arch = Arch()
    ks = _matmul_shape(16, 16, 16)
    tile = 16 * 16 * 4
    assert sram_bytes(ks, arch, double_buffer=False) == 3 * tile
    assert sram_bytes(ks, arch, double_buffer=True) == 5 * tile


def test_grid_and_edge_windows():
    ks = _matmul_shape(48, 64, 64, m=100)
    assert ks.grid == [3, 1, 1]
    assert ks.parallel_tiles == 3 and ks.reduction_tiles == 1


def test_cost_model_prefers_overlap_and_penalises_cube_padding():
    arch = Arch()
    ks = _matmul_shape(32, 32, 32)
    assert kernel_cycles(ks, arch, True) < kernel_cycles(ks, arch, False)
    # a K tile of 8 wastes half of each 16-deep cube pass: more cycles than 16 for the same work
    assert kernel_cycles(_matmul_shape(32, 32, 8), Arch(dram_bw=1 << 20), True) > \
        kernel_cycles(_matmul_shape(32, 32, 16), Arch(dram_bw=1 << 20), True)


def test_best_parts_splits_compute_bound_kernels_only():
    compute_bound = Arch(dram_bw=1 << 16)
    ks = _matmul_shape(64, 64, 64, m=256, n=256, k=256)  # 16 parallel tiles
    assert best_parts(ks, compute_bound, True)[0] == 4
    assert best_parts(ks, Arch(dram_bw=1 << 16, cores=3), True)[0] == 3
    assert best_parts(ks, Arch(dram_bw=1 << 16, cores=1), True)[0] == 1
    # bandwidth-bound: parts would only share dram_bw, and pay the sync
    assert best_parts(ks, Arch(dram_bw=8), True)[0] == 1
    # one tile: nothing to split
    assert best_parts(_matmul_shape(64, 64, 64), compute_bound, True)[0] == 1
    # the split estimate shares bandwidth and adds two syncs
    one = kernel_cycles(ks, compute_bound, True)
    assert parallel_cycles(ks, compute_bound, True, 0, 4) < one
    assert parallel_cycles(ks, compute_bound, True, 0, 4) > one / 4 + 2 * compute_bound.sync_latency - 1


def test_dma_cycles_overlap_latency_with_transfers():
    arch = Arch()
    big = Window(0, (256, 256), (DimMap((), 0, 256), DimMap((), 0, 256)))  # 256 KiB
    small = Window(0, (4, 4), (DimMap((), 0, 4), DimMap((), 0, 4)))
    assert dma_cycles([big], arch) == arch.dma_latency + 256 * 256 * 4 // arch.dram_bw
    # a small load on the other channel hides its latency behind the big one: it adds
    # only its transfer on the shared bandwidth (64 bytes: one cycle)
    assert dma_cycles([big, small], arch) == dma_cycles([big], arch) + 1
    # four small loads on two channels: two latency waves
    assert dma_cycles([small] * 4, arch) == 2 * (arch.dma_latency + 1)


def test_issue_stall_when_loads_outnumber_channels():
    from lowering.tile.costmodel import issue_stall
    arch = Arch()  # two channels
    small = Window(0, (4, 4), (DimMap((), 0, 4), DimMap((), 0, 4)))  # 64 bytes
    assert issue_stall([small] * 2, arch) == 0  # both channels free: no wait
    # the third load waits for the first to land (latency + 64 bytes at half the bandwidth)
    assert issue_stall([small] * 3, arch) == arch.dma_latency + 1
    assert issue_stall([small] * 4, arch) == arch.dma_latency + 1
    assert issue_stall([small] * 5, arch) == 2 * (arch.dma_latency + 1)


def test_channel_free_after_prefetched_loads():
    """A strip's line-buffer move waits for a DMA channel the next strip's loads hold:
    `channel_free` is when the first channel frees after they are issued smallest first."""
    from lowering.tile.costmodel import channel_free
    arch = Arch()  # two channels, latency 200
    assert channel_free([57344], arch, 32) == 0  # a channel stays free
    # the 4-byte mask frees its channel at 201 and the second big load takes it; the first
    # big load (latency + 57344 bytes at half of 32 B/cycle) frees its channel first
    assert channel_free([57344, 4, 57344], arch, 32) == 200 + 57344 // 16
    assert channel_free([4, 4], arch, 32) == 201


def test_split_range_is_balanced_and_covers():
    for lo, hi, k in [(0, 8, 4), (0, 7, 3), (2, 5, 3), (0, 1, 1)]:
        parts = split_range(lo, hi, k)
        assert parts[0][0] == lo and parts[-1][1] == hi
        assert all(a < b for a, b in parts)
        assert all(p[1] == q[0] for p, q in zip(parts, parts[1:]))
        sizes = [b - a for a, b in parts]
        assert max(sizes) - min(sizes) <= 1


def test_first_fit_finds_lowest_gap():
    assert first_fit(64, [], 64) == 0
    assert first_fit(64, [(0, 64)], 64) == 64
    assert first_fit(64, [(0, 64), (128, 192)], 64) == 64
    assert first_fit(128, [(0, 64), (128, 192)], 64) == 192
    assert first_fit(64, [(10, 20)], 64) == 64  # aligned after the busy range


def test_ordered_uses_happens_before_bitsets():
    hb = [0, 0b1, 0b11]  # 0 -> 1 -> 2
    assert ordered(0b1, [1, 2], hb)
    assert not ordered(0b10, [0], hb)


def test_live_lower_bound():
    # buffers (size, tasks using them): a [0,1], b [1,2], c [2,3]
    assert live_lower_bound([(10, [0, 1]), (20, [1, 2]), (30, [2, 3])], 4) == 50
    rng = np.random.default_rng(0)
    for _ in range(20):
        bufs = []
        for _ in range(6):
            a, b = sorted(rng.integers(0, 8, 2))
            bufs.append((int(rng.integers(1, 100)), list(range(a, b + 1))))
        brute = max(sum(s for s, ts in bufs if min(ts) <= t <= max(ts)) for t in range(8))
        assert live_lower_bound(bufs, 8) == brute


def test_kernel_bytes_counts_each_fused_kernel_once():
    """The kernel bound: every fused kernel reads its operands and writes its results
    once; the model minimum reads weights and inputs and writes outputs once."""
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import DEFAULT_PIPELINE, compile_module
    from lowering.tile.roofline import fusion_floor_bytes, kernel_bytes, model_work
    from tools.testkit import models

    module, weights = import_model(models.strip_chain())
    after_fuse = DEFAULT_PIPELINE[DEFAULT_PIPELINE.index("npu-fuse") + 1:]
    compile_module(module, PRESETS["default"], weights, disable=("npu-hoist-pool", *after_fuse))
    x, w1, b1, h1 = 8 * 32 * 32, 16 * 8 * 9, 16, 16 * 32 * 32  # conv 3x3 + bias + relu
    pooled, w2, y = 16 * 16 * 16, 16 * 16 * 9, 16 * 16 * 16  # max-pool 3x3/2, conv 3x3 + relu
    assert model_work(module)[1] == 4 * (x + w1 + w2 + y)  # the bias is a literal in the text
    # three kernels: conv+relu, max-pool, conv+relu; h1 and pooled cross DRAM twice each
    assert kernel_bytes(module) == 4 * (x + w1 + b1 + h1 + h1 + pooled + pooled + w2 + y)
    # the layer-group floor: runs of consecutive kernels whose weights fit SRAM together
    assert fusion_floor_bytes(module, 1 << 20) == 4 * (x + w1 + b1 + w2 + y)  # one run: all of it on chip
    small = 4 * (w1 + b1) + 64  # conv+relu and the pool fit; adding the second conv's weights does not
    assert fusion_floor_bytes(module, small) == 4 * (x + w1 + b1 + pooled + pooled + w2 + y)
    assert fusion_floor_bytes(module, 64) == kernel_bytes(module)  # no two kernels' weights fit: none grouped


def test_model_minimum_skips_weights_nothing_reads() -> None:
    """A weight constant left without readers (a pass's leftover) moves no bytes."""
    from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, f32
    from xdsl.dialects.func import FuncOp, ReturnOp

    from lowering.tile.roofline import model_work
    from npu_dialects.graph import ConstantOp, ReluOp

    t = TensorType(f32, [4, 8])
    func = FuncOp("main", ([t], [t]))
    block = func.body.block
    dead = ConstantOp.create(result_types=[TensorType(f32, [1024])],
                             attributes={"weight": StringAttr("unused")})
    relu = ReluOp.create(operands=[block.args[0]], result_types=[t])
    block.add_ops([dead, relu, ReturnOp(relu.results[0])])
    assert model_work(ModuleOp([func]))[1] == 4 * (32 + 32)  # the input and the output, not the 4 KiB weight


def test_shape_memo_follows_replaced_windows():
    """SRAM and cost terms are computed once per tiling (`KernelShape.memo`) and again
    when its windows are replaced (an epilogue added after the first query)."""
    from lowering.tile.tile_search import with_epilogue

    arch = Arch()
    ks = _matmul_shape(16, 16, 16)
    sram, cycles = sram_bytes(ks, arch, False), kernel_cycles(ks, arch, False)
    with_epilogue(ks, [(2, (64, 64))])  # a residual operand, loaded once per output tile
    fresh = with_epilogue(_matmul_shape(16, 16, 16), [(2, (64, 64))])
    assert sram_bytes(ks, arch, False) == sram_bytes(fresh, arch, False) == sram + 16 * 16 * 4
    assert kernel_cycles(ks, arch, False) == kernel_cycles(fresh, arch, False) > cycles


STRIP_BLOCKS = """builtin.module {
  func.func @main(%x: tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<8x8x3x3xf32>
    %v = npu_graph.constant {weight = "v"} : tensor<8x8x3x3xf32>
    %a = npu_graph.conv2d %x, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x32x32xf32>
    %b = npu_graph.relu %a : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
    %c = npu_graph.conv2d %b, %v {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x32x32xf32>
    %d = npu_graph.relu %c : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
    %e = npu_graph.conv2d %d, %w {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x32x32xf32>
    %f = npu_graph.relu %e : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
    %g = npu_graph.conv2d %f, %v {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x32x32xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x32x32xf32>
    %h = npu_graph.relu %g : (tensor<1x8x32x32xf32>) -> tensor<1x8x32x32xf32>
    func.return %h : tensor<1x8x32x32xf32>
  }
}"""


@pytest.mark.parametrize("line_buffers", ["auto", "never"])
def test_strip_plans_of_repeated_blocks_are_memoised(line_buffers):
    """Two blocks of the same structure (ResNet's repeated blocks) share one strip
    search (`run_signature`): the second only lays out the first's decision, and gets
    the plan a search of its own finds."""
    from xdsl.parser import Parser

    from lowering.tile.strip_plan import plan_strips, run_signature
    from npu_dialects import make_context

    module = Parser(make_context(), STRIP_BLOCKS).parse_module()
    ops = [o for o in module.walk() if o.name in ("npu_graph.conv2d", "npu_graph.relu")]
    first, second = ops[:4], ops[4:]
    assert run_signature(first, {}) == run_signature(second, {}) != run_signature(ops[:3], {})
    arch = Arch(sram_bytes=32 * 1024)  # (the blocks' tensors do not fit whole)
    memo: dict = {}
    a = plan_strips(first, arch, line_buffers=line_buffers, memo=memo)
    b = plan_strips(second, arch, line_buffers=line_buffers, memo=memo)
    own = plan_strips(second, arch, line_buffers=line_buffers)
    assert a is not None and b is not None and own is not None and len(memo) == 1
    assert b[0].geometry.ops == second  # laid out for the second block's own ops
    assert (b[1], b[2]) == (own[1], own[2])
    for got in (b[0], a[0]):
        assert (got.geometry.T, got.geometry.S, got.prefetch, got.rolling, got.sram_bytes, got.compute,
                got.strip_loads, got.once_loads) == (own[0].geometry.T, own[0].geometry.S, own[0].prefetch,
                                                     own[0].rolling, own[0].sram_bytes, own[0].compute,
                                                     own[0].strip_loads, own[0].once_loads)


def test_a_strip_searchs_constants_floor_is_what_every_plan_loads_once():
    """`constants_floor` (the weights a strip plan keeps whatever its height) equals the
    once-loaded bytes of a plan found, and a SRAM below it gets no plan: the search it
    skips could find none."""
    from xdsl.parser import Parser

    from lowering.tile.strip_plan import constants_floor, plan_strips
    from lowering.tile.tile_search import align_up
    from npu_dialects import make_context

    module = Parser(make_context(), STRIP_BLOCKS).parse_module()
    ops = [o for o in module.walk() if o.name in ("npu_graph.conv2d", "npu_graph.relu")][:4]
    arch = Arch(sram_bytes=32 * 1024)
    found = plan_strips(ops, arch)
    assert found is not None
    floor = constants_floor(ops, {}, arch)
    assert floor == sum(align_up(b, arch.align) for b in found[0].once_loads) > 0
    assert plan_strips(ops, Arch(sram_bytes=floor - arch.align)) is None


def test_a_stored_value_is_stored_by_every_strip():
    """A strip group storing an inner value writes rows [A*s, A*s + A) of it per strip:
    the strips must cover its H rows and each must hold some (A*(S-1) < H <= A*S). A 1x1
    conv of stride 2 padded by 1 reads 4 rows into 3: strips of 1 output row step 2
    rows of the value, so the third would store rows 4-5 of 4 (a tee starting outside
    its tensor: a verifier error in npu-tile-loops). No such geometry is offered."""
    from xdsl.parser import Parser

    from lowering.tile.strip_plan import strip_geometry, strip_input
    from npu_dialects import make_context

    module = Parser(make_context(), """
builtin.module {
  func.func @main(%x: tensor<1x8x4x64xf32>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<8x8x1x1xf32>) -> tensor<1x8x3x33xf32> {
    %v = npu_graph.conv2d %x, %w1 {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x8x4x64xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x64xf32>
    %y = npu_graph.conv2d %v, %w2 {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x4x64xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x3x33xf32>
    func.return %y : tensor<1x8x3x33xf32>
  }
}""").parse_module()
    ops = [o for o in module.walk() if o.name == "npu_graph.conv2d"]
    x, v = strip_input(ops), ops[0].results[0]
    assert x is not None
    for rows in (1, 2):
        g = strip_geometry(ops, x, rows)
        assert g is not None and g.rows[v][0] * (g.S - 1) >= 4  # (fine when only %y is stored)
        assert strip_geometry(ops, x, rows, stored=[v]) is None


def test_vector_steps_count_each_steps_passes():
    """A LayerNorm or requantizing step costs the tile search its vector passes, not one
    (counting one made a LayerNorm kernel look too cheap to split over the cores)."""
    from types import SimpleNamespace

    from lowering.tile.epilogue import EpilogueStep
    from lowering.tile.tile_search import vector_steps
    anchor = SimpleNamespace(kind="elementwise")
    steps = [EpilogueStep("layernorm", (None,), passes=5), EpilogueStep("add", (None, 0)),
             EpilogueStep("quantize", (None,), passes=2)]
    assert vector_steps(anchor, steps, Arch()) == 8  # type: ignore[arg-type]
    assert vector_steps(anchor, [], Arch()) == 0  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", ["default", "default,cores=1,sram_bytes=65536", "default,cores=2"])
def test_the_tile_searchs_floor_never_exceeds_a_tilings_cycles(spec, tmp_path):
    """`cycles_floor` (a task's compute or store; the pipelined loads at dram_bw with a
    latency a step) bounds `cycles_then_bytes`' cycles from below for every tiling of
    the kernels of LeNet, the BERT encoder block and an int8 MLP, both buffering modes,
    on three archs: the search's climb skips a neighbour whose floor exceeds the cycles
    it has without changing what it finds."""
    import itertools

    import onnx

    from lowering import get_all_passes
    from lowering.importer.onnx_import import import_model
    from lowering.tile.tile import kernel_body
    from lowering.tile.tile_search import TileSearch, TilingError, split_kernel
    from npu_dialects import make_context
    from npu_dialects.graph import ConstantOp, GraphOp
    from tests.test_quantized_check import quantized_mlp
    from tools.testkit.models import MODELS_DIR, lenet

    arch = parse_arch_spec(spec)
    checked = tight = 0
    for model in (lenet(batch=2), onnx.load(MODELS_DIR / "bert_encoder.onnx"), quantized_mlp(True, tmp_path)):
        module, _ = import_model(model, arch)
        get_all_passes()["npu-fuse"]()().apply(make_context(), module)
        for op in module.walk():
            if not isinstance(op, GraphOp) or isinstance(op, ConstantOp) or op.parent_op() is not None and \
                    op.parent_op().name == "npu_graph.fused":
                continue
            ins, block = kernel_body(op)
            body = [o for o in block.ops if o.name != "npu_tile.yield"]
            try:
                anchor, steps, extra = split_kernel(body, {a: i for i, a in enumerate(block.args)})
            except TilingError:
                continue
            search = TileSearch(anchor, extra, steps, arch, cycles_then_bytes)
            for idx in itertools.islice(itertools.product(*(range(len(lst)) for lst in search.lists)), 200):
                ks = search.shaped(idx)
                floor = cycles_floor(ks, arch) if ks is not None else None
                if floor is None:
                    continue
                for db in (True, False):
                    cost = cycles_then_bytes(ks, arch, db, search.epilogue_len + (ks.accumulator is not None))
                    assert floor <= cost[0], (op.name, idx, db, floor, cost)
                    checked += 1
                    tight += 2 * floor > cost[0]  # (within a factor of 2: a bound that prunes)
    assert checked > 500 and tight > checked // 10, (checked, tight)

"""The simulator on hand-written task-level modules: numerics, timing, checks, trace."""

from __future__ import annotations

import json

import numpy as np
import pytest

from npu_dialects.arch import Arch
from sim import SimError, simulate
from tests.simkit import CONSTS, D, S, module, task

ARCH = Arch()  # default: 4 cores, 16x16x16 cube, 128 B/cycle, dma_latency 200, 2 channels, concurrent units
SERIAL = Arch(units="serial")  # one compute op at a time


# --------------------------------------------------------------------------- numerics


def matmul_module(M: int, K: int, N: int, tm: int, tk: int, tn: int):
    """C = A @ W tiled (tm, tk, tn) with edge tiles: pad_value on loads, clip on stores."""
    body = f"""
{CONSTS}
%cM = arith.constant {M} : index
%cK = arith.constant {K} : index
%cN = arith.constant {N} : index
%tm = arith.constant {tm} : index
%tk = arith.constant {tk} : index
%tn = arith.constant {tn} : index
%a = npu_task.sram {{offset = 0 : i64}} : {S(tm, tk)}
%b = npu_task.sram {{offset = 4096 : i64}} : {S(tk, tn)}
%acc = npu_task.sram {{offset = 8192 : i64}} : {S(tm, tn)}
scf.for %m = %c0 to %cM step %tm {{
  scf.for %n = %c0 to %cN step %tn {{
    npu_compute.fill %acc {{value = 0.0 : f32}} : {S(tm, tn)}
    scf.for %k = %c0 to %cK step %tk {{
      %t1 = npu_dma.copy %x[%m, %k] -> %a[%c0, %c0] {{sizes = array<i64: {tm}, {tk}>, pad_value = 0.0 : f32}} : {D(M, K)} -> {S(tm, tk)}
      %t2 = npu_dma.copy %w[%k, %n] -> %b[%c0, %c0] {{sizes = array<i64: {tk}, {tn}>, pad_value = 0.0 : f32}} : {D(K, N)} -> {S(tk, tn)}
      npu_dma.wait %t1
      npu_dma.wait %t2
      npu_compute.matmul %a, %b -> %acc {{accumulate}} : {S(tm, tk)}, {S(tk, tn)} -> {S(tm, tn)}
      scf.yield
    }}
    %t3 = npu_dma.copy %acc[%c0, %c0] -> %y[%m, %n] {{sizes = array<i64: {tm}, {tn}>, clip}} : {S(tm, tn)} -> {D(M, N)}
    npu_dma.wait %t3
    scf.yield
  }}
  scf.yield
}}"""
    return module([("x", D(M, K))], [("y", D(M, N))],
                  f'%w = npu_task.weight "w" {{offset = 0 : i64}} : {D(K, N)}\n'
                  + task("mm", 0, body, loc="gemm0"))


def test_single_task_matmul_with_edge_tiles_matches_numpy():
    rng = np.random.default_rng(0)
    M, K, N = 10, 20, 12
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((K, N)).astype(np.float32)
    r = simulate(matmul_module(M, K, N, 4, 8, 8), {"w": w}, {"x": x}, ARCH)
    np.testing.assert_allclose(r.outputs["y"], x @ w, rtol=1e-5, atol=1e-5)
    assert r.cycles > 0
    assert len(r.tasks) == 1 and r.tasks[0].kernel == "mm" and r.tasks[0].nodes == ["gemm0"]
    # every x element is read once per n tile, w once per m tile; y written once
    assert r.dram_bytes_read == (M * K * 2 + K * N * 3) * 4
    assert r.dram_bytes_written == M * N * 4
    assert r.busy["cube"][0] == 3 * 2 * 3  # 3 m tiles x 2 n tiles x 3 k tiles, 1 cycle each
    assert r.warnings == []


# --------------------------------------------------------------------------- double buffering


def stream_module(n_tiles: int, double_buffer: bool):
    """y[i] = x[i] @ w for n_tiles row tiles of 64 rows; w loaded once."""
    R = 64 * n_tiles
    head = f"""
{CONSTS}
%cn = arith.constant {n_tiles} : index
%bufA = npu_task.sram {{offset = 0 : i64}} : {S(64, 64)}
%bufB = npu_task.sram {{offset = 16384 : i64}} : {S(64, 64)}
%wb = npu_task.sram {{offset = 32768 : i64}} : {S(64, 64)}
%out = npu_task.sram {{offset = 49152 : i64}} : {S(64, 64)}
%tw = npu_dma.copy %w[%c0, %c0] -> %wb[%c0, %c0] {{sizes = array<i64: 64, 64>}} : {D(64, 64)} -> {S(64, 64)}
npu_dma.wait %tw"""
    mm = f"npu_compute.matmul %cur, %wb -> %out : {S(64, 64)}, {S(64, 64)} -> {S(64, 64)}"
    store = f"""%row = arith.muli %i, %c64 : index
  %ts = npu_dma.copy %out[%c0, %c0] -> %y[%row, %c0] {{sizes = array<i64: 64, 64>}} : {S(64, 64)} -> {D(R, 64)}
  npu_dma.wait %ts"""
    if not double_buffer:
        loop = f"""
scf.for %i = %c0 to %cn step %c1 {{
  %cur = arith.select %true, %bufA, %bufA : {S(64, 64)}
  %r0 = arith.muli %i, %c64 : index
  %t = npu_dma.copy %x[%r0, %c0] -> %cur[%c0, %c0] {{sizes = array<i64: 64, 64>}} : {D(R, 64)} -> {S(64, 64)}
  npu_dma.wait %t
  {mm}
  {store}
  scf.yield
}}"""
    else:
        loop = f"""
%t0 = npu_dma.copy %x[%c0, %c0] -> %bufA[%c0, %c0] {{sizes = array<i64: 64, 64>}} : {D(R, 64)} -> {S(64, 64)}
%last = scf.for %i = %c0 to %cn step %c1 iter_args(%tok = %t0) -> (!npu_dma.token) {{
  %par = arith.remui %i, %c2 : index
  %even = arith.cmpi eq, %par, %c0 : index
  %cur = arith.select %even, %bufA, %bufB : {S(64, 64)}
  %nxt = arith.select %even, %bufB, %bufA : {S(64, 64)}
  %i1 = arith.addi %i, %c1 : index
  %more = arith.cmpi slt, %i1, %cn : index
  %tn = scf.if %more -> (!npu_dma.token) {{
    %r1 = arith.muli %i1, %c64 : index
    %tp = npu_dma.copy %x[%r1, %c0] -> %nxt[%c0, %c0] {{sizes = array<i64: 64, 64>}} : {D(R, 64)} -> {S(64, 64)}
    scf.yield %tp : !npu_dma.token
  }} else {{
    scf.yield %tok : !npu_dma.token
  }}
  npu_dma.wait %tok
  {mm}
  {store}
  scf.yield %tn : !npu_dma.token
}}"""
    body = head + "\n%true = arith.constant true" + loop
    return module([("x", D(R, 64))], [("y", D(R, 64))],
                  f'%w = npu_task.weight "w" {{offset = 0 : i64}} : {D(64, 64)}\n' + task("stream", 0, body))


def test_double_buffering_overlaps_dma_with_compute():
    rng = np.random.default_rng(1)
    n = 8
    x = rng.standard_normal((64 * n, 64)).astype(np.float32)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    serial = simulate(stream_module(n, False), {"w": w}, {"x": x}, ARCH)
    double = simulate(stream_module(n, True), {"w": w}, {"x": x}, ARCH)
    for r in (serial, double):
        np.testing.assert_allclose(r.outputs["y"], x @ w, rtol=1e-4, atol=1e-4)
        assert r.warnings == []
    assert double.dram_bytes_read == serial.dram_bytes_read
    # serial: per tile load (200 + 16384/128) + matmul 64 + store (200 + 128)
    load, mm, store = 200 + 128, 64, 200 + 128  # (the store waits for the matmul: a fence)
    assert serial.cycles == load + n * (load + mm + ARCH.flag_latency + store)
    assert double.cycles < serial.cycles - (n - 2) * load // 2


# --------------------------------------------------------------------------- events


def fill_task(kernel: str, core: int, elems: int, **kw) -> str:
    body = (f"%f = npu_task.sram {{offset = 0 : i64}} : {S(elems)}\n"
            f"npu_compute.fill %f {{value = 1.0 : f32}} : {S(elems)}")
    return task(kernel, core, body, **kw)


def test_event_orders_tasks_on_two_cores():
    body = fill_task("producer", 0, 64 * 1000, signals=[3]) + fill_task("consumer", 1, 64, waits=[3])
    r = simulate(module([], [], body), {}, {}, ARCH)
    prod, cons = r.tasks
    assert r.warnings == []
    assert (prod.start, prod.end) == (0, 1000)
    assert cons.ready == 0
    assert cons.start == prod.end + ARCH.sync_latency
    assert r.cycles == 1000 + ARCH.sync_latency + 1


def test_slot_is_consumed_and_reusable():
    body = (fill_task("a", 0, 64, signals=[0]) + fill_task("b", 1, 64, waits=[0], signals=[1])
            + fill_task("c", 0, 64, waits=[1], signals=[0]) + fill_task("d", 1, 64, waits=[0]))
    r = simulate(module([], [], body), {}, {}, ARCH)
    a, b, c, d = r.tasks
    assert b.start == a.end + 100 and c.start == b.end + 100 and d.start == c.end + 100


def test_missing_signal_is_a_deadlock_with_a_dump():
    body = fill_task("producer", 0, 64) + fill_task("consumer", 1, 64, waits=[5], loc="relu7")
    with pytest.raises(SimError) as e:
        simulate(module([], [], body), {}, {}, ARCH)
    msg = str(e.value)
    assert msg.startswith("deadlock")
    assert "task 'consumer' (ONNX node relu7)" in msg and "slot 5" in msg
    d = e.value.details
    assert "core 0: done" in d and "core 1:" in d
    assert "slot 5: no remaining task signals it" in d
    assert "pending (signalled, not consumed) slots: none" in d


def test_cyclic_wait_deadlock_names_the_would_be_signaller():
    body = fill_task("a", 0, 64, waits=[1], signals=[2]) + fill_task("b", 1, 64, waits=[2], signals=[1])
    with pytest.raises(SimError) as e:
        simulate(module([], [], body), {}, {}, ARCH)
    assert "would be signalled by task 'b'" in e.value.details


def test_slots_count_signals():
    # two producers signal slot 7 once each; the consumer waits on it twice and starts
    # only after the later producer's signal is visible
    body = (fill_task("a", 0, 64, signals=[7]) + fill_task("b", 1, 4096, signals=[7])
            + fill_task("c", 2, 64, waits=[7, 7]))
    res = simulate(module([], [], body), {}, {}, ARCH)
    a, b, c = sorted(res.tasks, key=lambda t: t.index)
    assert c.start == b.end + ARCH.sync_latency > a.end + ARCH.sync_latency
    assert not res.warnings


def test_one_signal_does_not_satisfy_two_waits():
    body = fill_task("a", 0, 64, signals=[7]) + fill_task("c", 1, 64, waits=[7, 7])
    with pytest.raises(SimError, match="deadlock"):
        simulate(module([], [], body), {}, {}, ARCH)


def test_event_slot_out_of_range():
    body = fill_task("a", 0, 64, signals=[64])
    with pytest.raises(SimError, match=r"task 'a'.*signals event slot 64 but the arch has event_slots=64"):
        simulate(module([], [], body, verify=False), {}, {}, ARCH)


def test_core_out_of_range():
    with pytest.raises(SimError, match="runs on core 4 but the arch has cores=4"):
        simulate(module([], [], fill_task("a", 4, 64), verify=False), {}, {}, ARCH)


# --------------------------------------------------------------------------- capacity / bounds


def test_sram_overflow_names_task_and_onnx_node():
    body = f"%f = npu_task.sram {{offset = 524000 : i64}} : {S(128)}"
    m = module([], [], task("k1", 0, body, loc="conv1"), verify=False)
    with pytest.raises(SimError) as e:
        simulate(m, {}, {}, ARCH)
    assert str(e.value) == ("task 'k1' (ONNX node conv1): SRAM buffer at offset 524000 of 512 bytes "
                            "exceeds sram_bytes=524288")


def copy_module(window: int, extra: str = "", src_off: int = 0, dst_off: int = 0, verify: bool = True):
    body = (f"{CONSTS}\n%so = arith.constant {src_off} : index\n%do = arith.constant {dst_off} : index\n"
            f"%a = npu_task.sram {{offset = 0 : i64}} : {S(16)}\n"
            f"%t = npu_dma.copy %x[%so] -> %a[%do] {{sizes = array<i64: {window}>{extra}}} : {D(10)} -> {S(16)} "
            f'loc("load_x")\n'
            f"npu_dma.wait %t\n"
            f"%t2 = npu_dma.copy %a[%c0] -> %y[%c0] {{sizes = array<i64: 16>, clip}} : {S(16)} -> {D(12)}\n"
            f"npu_dma.wait %t2")
    return module([("x", D(10))], [("y", D(12))], task("ld", 0, body, loc="node_ld"), verify=verify)


def test_dma_out_of_bounds_without_pad_is_an_error():
    with pytest.raises(SimError) as e:
        simulate(copy_module(12, verify=False), {}, {"x": np.zeros(10, np.float32)}, ARCH)
    msg = str(e.value)
    assert msg.startswith("task 'ld' (ONNX node node_ld): 'npu_dma.copy' (ONNX node load_x)")
    assert "source window [0:12] leaves the source buffer [10] (input 'x') and the copy has no pad_value" in msg


def block_module(index: int):
    """Load x [16] into SRAM, copy its block `index` of 4 (an `npu_task.view` with an index) to y."""
    body = (f"{CONSTS}\n%ci = arith.constant {index} : index\n"
            f"%s = npu_task.sram {{offset = 0 : i64}} : {S(16)}\n"
            f"%t = npu_dma.copy %x[%c0] -> %s[%c0] {{sizes = array<i64: 16>}} : {D(16)} -> {S(16)}\n"
            f"npu_dma.wait %t\n"
            f"%b = npu_task.view %s[%ci] : {S(16)} to {S(4)}\n"
            f"%u = npu_dma.copy %b[%c0] -> %y[%c0] {{sizes = array<i64: 4>}} : {S(4)} -> {D(4)}\n"
            f"npu_dma.wait %u")
    return module([("x", D(16))], [("y", D(4))], task("blk", 0, body, loc="node_blk"))


def test_view_with_an_index_reads_that_block_and_checks_its_bounds():
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(simulate(block_module(2), {}, {"x": x}, ARCH).outputs["y"], x[8:12])
    with pytest.raises(SimError, match=r"task 'blk' .*'npu_task.view'.*block 4 of 16 bytes at byte offset 64 does "
                                       r"not lie inside its buffer of 64 bytes"):
        simulate(block_module(4), {}, {"x": x}, ARCH)


def test_dma_pad_and_clip_semantics():
    x = np.arange(1, 11, dtype=np.float32)
    r = simulate(copy_module(12, ", pad_value = -1.0 : f32", src_off=-2), {}, {"x": x}, ARCH)
    want = np.zeros(12, np.float32)
    want[:12] = np.concatenate([[-1, -1], x[:10], [0, 0, 0, 0]])[:12]
    np.testing.assert_array_equal(r.outputs["y"], want)
    assert r.tasks[0].dram_bytes_read == 40  # only elements inside both buffers travel
    assert r.tasks[0].dram_bytes_written == 48


def test_dma_destination_out_of_bounds_without_clip_is_an_error():
    body = (f"{CONSTS}\n%a = npu_task.sram {{offset = 0 : i64}} : {S(16)}\n"
            f"%t = npu_dma.copy %a[%c0] -> %y[%c4] {{sizes = array<i64: 16>}} : {S(16)} -> {D(12)}\n"
            f"npu_dma.wait %t")
    with pytest.raises(SimError, match=r"destination window \[4:20\] leaves the destination buffer \[12\] "
                                       r"\(output 'y'\) and the copy is not clip"):
        simulate(module([], [("y", D(12))], task("st", 0, body), verify=False), {}, {}, ARCH)


def test_check_bounds_off_pads_and_clips_silently():
    x = np.arange(1, 11, dtype=np.float32)
    r = simulate(copy_module(12, verify=False), {}, {"x": x}, ARCH, check_bounds=False)
    np.testing.assert_array_equal(r.outputs["y"][:10], x)


def test_dram_region_size_from_module_attribute():
    body = (f'%w = npu_task.weight "w" {{offset = 64 : i64}} : {D(16)}\n'
            + fill_task("a", 0, 64))
    m = module([], [], body, attrs="npu.dram_weights_bytes = 64 : i64")
    with pytest.raises(SimError, match=r"'npu_task.weight'.*offset 64 of 64 bytes reaches past the DRAM "
                                       r"weights region of 64 bytes"):
        simulate(m, {"w": np.zeros(16, np.float32)}, {}, ARCH)


def test_missing_weight_is_an_error():
    m = module([], [], f'%w = npu_task.weight "nope" {{offset = 0 : i64}} : {D(16)}\n')
    with pytest.raises(SimError, match="weight 'nope' is not in the weights"):
        simulate(m, {}, {}, ARCH)


def test_unknown_op_is_an_error():
    body = f"{CONSTS}\n%z = arith.addf %f, %f : f32"
    m = module([], [], task("k", 0, "%f = arith.constant 1.0 : f32\n" + body))
    with pytest.raises(SimError, match="task 'k'.*does not know op 'arith.addf'"):
        simulate(m, {}, {}, ARCH)


# --------------------------------------------------------------------------- DMA timing


def big_copy_task(kernel: str, core: int, src: str, n: int) -> str:
    body = (f"{CONSTS}\n%a = npu_task.sram {{offset = 0 : i64}} : {S(n)}\n"
            f"%t = npu_dma.copy %{src}[%c0] -> %a[%c0] {{sizes = array<i64: {n}>}} : {D(n)} -> {S(n)}\n"
            f"npu_dma.wait %t")
    return task(kernel, core, body)


def test_dram_bandwidth_is_shared_between_cores():
    n = 32768  # 128 KiB: 1024 cycles at 128 B/cycle
    one = simulate(module([("x", D(n))], [], big_copy_task("a", 0, "x", n)), {}, {"x": np.ones(n)}, ARCH)
    two = simulate(module([("x", D(n))], [], big_copy_task("a", 0, "x", n) + big_copy_task("b", 1, "x", n)),
                   {}, {"x": np.ones(n)}, ARCH)
    assert one.cycles == 200 + 1024
    assert two.cycles == 200 + 2048
    assert two.tasks[0].end == two.tasks[1].end
    assert two.dram_bytes_read == 2 * n * 4
    assert two.dram_busy_cycles == 2048


def test_staggered_transfers_recompute_shares():
    """b starts 512 cycles later: a runs alone, then both at half rate, then b alone."""
    n = 32768
    body = (big_copy_task("a", 0, "x", n)
            + task("delay", 1, f"%f = npu_task.sram {{offset = 0 : i64}} : {S(64 * 512)}\n"
                   f"npu_compute.fill %f {{value = 0.0 : f32}} : {S(64 * 512)}")
            + big_copy_task("b", 1, "x", n))
    r = simulate(module([("x", D(n))], [], body), {}, {"x": np.ones(n)}, ARCH)
    a, _, b = r.tasks
    # a: alone from 200 to 712 (half its bytes), both share until a is done at 1736,
    # then b (which had 712..1736 at half rate = 512 cycles' worth) finishes its last half alone
    assert a.end == 200 + 512 + 1024
    assert b.end == 512 + 200 + 512 + 1024


def test_dma_channels_limit_in_flight_copies():
    n = 1024  # 32 cycles of transfer
    body = (f"{CONSTS}\n%a = npu_task.sram {{offset = 0 : i64}} : {S(n)}\n"
            f"%b = npu_task.sram {{offset = 8192 : i64}} : {S(n)}\n"
            f"%t1 = npu_dma.copy %x[%c0] -> %a[%c0] {{sizes = array<i64: {n}>}} : {D(n)} -> {S(n)}\n"
            f"%t2 = npu_dma.copy %x[%c0] -> %b[%c0] {{sizes = array<i64: {n}>}} : {D(n)} -> {S(n)}\n"
            "npu_dma.wait %t1\nnpu_dma.wait %t2")
    m = module([("x", D(n))], [], task("k", 0, body))
    two = simulate(m, {}, {"x": np.ones(n)}, Arch(dma_channels=2))
    one = simulate(m, {}, {"x": np.ones(n)}, Arch(dma_channels=1))
    assert two.cycles == 200 + 64  # both in flight, sharing bandwidth
    assert one.cycles == 2 * (200 + 32)  # the second waits for the channel


def test_missing_wait_reads_stale_data_and_warns():
    body = (f"{CONSTS}\n%a = npu_task.sram {{offset = 0 : i64}} : {S(16)}\n"
            f"%t = npu_dma.copy %x[%c0] -> %a[%c0] {{sizes = array<i64: 16>}} : {D(16)} -> {S(16)}\n"
            f'npu_compute.eltwise "relu" %a -> %a : {S(16)} -> {S(16)} loc("relu1")\n'
            f"npu_dma.wait %t\n"
            f"%t2 = npu_dma.copy %a[%c0] -> %y[%c0] {{sizes = array<i64: 16>}} : {S(16)} -> {D(16)}\n"
            f"npu_dma.wait %t2")
    x = -np.ones(16, np.float32)
    r = simulate(module([("x", D(16))], [("y", D(16))], task("k", 0, body)), {}, {"x": x}, ARCH)
    np.testing.assert_array_equal(r.outputs["y"], x)  # relu ran on stale zeros, then the DMA landed
    assert len(r.warnings) == 1
    assert "'npu_compute.eltwise' (ONNX node relu1)" in r.warnings[0] and "missing npu_dma.wait" in r.warnings[0]


# --------------------------------------------------------------------------- races


def store_task(kernel: str, core: int, value: float, **kw) -> str:
    body = (f"{CONSTS}\n%a = npu_task.sram {{offset = 0 : i64}} : {S(16)}\n"
            f"npu_compute.fill %a {{value = {value} : f32}} : {S(16)}\n"
            f"%t = npu_dma.copy %a[%c0] -> %h[%c0] {{sizes = array<i64: 16>}} : {S(16)} -> {D(16)}\n"
            f"npu_dma.wait %t")
    return task(kernel, core, body, **kw)


def test_unordered_writes_to_the_same_dram_bytes_are_a_race():
    body = f"%h = npu_task.alloc {{offset = 0 : i64}} : {D(16)}\n" + store_task("a", 0, 1.0) + store_task("b", 1, 2.0)
    with pytest.raises(SimError, match=r"race: task 'b' .* on core 1 writes alloc at arena offset 0 .* which "
                                       r"task 'a' .* on core 0 writes, and no event orders the two tasks"):
        simulate(module([], [], body), {}, {}, ARCH)


def test_ordered_writes_are_not_a_race():
    body = (f"%h = npu_task.alloc {{offset = 0 : i64}} : {D(16)}\n" + store_task("a", 0, 1.0, signals=[0])
            + store_task("b", 1, 2.0, waits=[0]))
    simulate(module([], [], body), {}, {}, ARCH)
    # the same two tasks on one core are ordered by the queue
    body = f"%h = npu_task.alloc {{offset = 0 : i64}} : {D(16)}\n" + store_task("a", 0, 1.0) + store_task("b", 0, 2.0)
    simulate(module([], [], body), {}, {}, ARCH)


def test_reading_bytes_another_core_writes_is_a_race_even_when_timing_hides_it():
    load = (f"{CONSTS}\n%a = npu_task.sram {{offset = 0 : i64}} : {S(16)}\n"
            f"%f = npu_task.sram {{offset = 1024 : i64}} : {S(64 * 2000)}\n"
            f"npu_compute.fill %f {{value = 0.0 : f32}} : {S(64 * 2000)}\n"
            f"%t = npu_dma.copy %h[%c0] -> %a[%c0] {{sizes = array<i64: 16>}} : {D(16)} -> {S(16)}\n"
            f"npu_dma.wait %t")
    body = f"%h = npu_task.alloc {{offset = 0 : i64}} : {D(16)}\n" + store_task("w", 0, 1.0) + task("r", 1, load)
    with pytest.raises(SimError, match=r"race: task 'r' .* reads .* which task 'w' .* writes"):
        simulate(module([], [], body), {}, {}, SERIAL)  # (the fill delays the load on a serial core)
    simulate(module([], [], body), {}, {}, SERIAL, check_races=False)


def test_disjoint_halves_on_two_cores_are_not_a_race():
    def half(kernel, core, off):
        b = (f"{CONSTS}\n%o = arith.constant {off} : index\n%a = npu_task.sram {{offset = 0 : i64}} : {S(8)}\n"
             f"npu_compute.fill %a {{value = {core + 1}.0 : f32}} : {S(8)}\n"
             f"%t = npu_dma.copy %a[%c0] -> %y[%o] {{sizes = array<i64: 8>}} : {S(8)} -> {D(16)}\n"
             f"npu_dma.wait %t")
        return task(kernel, core, b)
    r = simulate(module([], [("y", D(16))], half("p0", 0, 0) + half("p1", 1, 8)), {}, {}, ARCH)
    np.testing.assert_array_equal(r.outputs["y"], [1] * 8 + [2] * 8)


# --------------------------------------------------------------------------- misc IR


def test_views_inline_weights_and_iter_args():
    body = f"""
{CONSTS}
%a = npu_task.sram {{offset = 0 : i64}} : {S(2, 2)}
%b = npu_task.sram {{offset = 64 : i64}} : {S(2, 2)}
%t = npu_dma.copy %xv[%c0, %c0] -> %a[%c0, %c0] {{sizes = array<i64: 2, 2>}} : {D(2, 2)} -> {S(2, 2)}
%t2 = npu_dma.copy %wv[%c0, %c0] -> %b[%c0, %c0] {{sizes = array<i64: 2, 2>}} : {D(2, 2)} -> {S(2, 2)}
npu_dma.wait %t
npu_dma.wait %t2
%n = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %c0) -> (index) {{
  npu_compute.eltwise "add" %a, %b -> %a : {S(2, 2)}, {S(2, 2)} -> {S(2, 2)}
  %acc2 = arith.addi %acc, %c1 : index
  scf.yield %acc2 : index
}}
%t3 = npu_dma.copy %a[%c0, %c0] -> %yv[%c0, %c0] {{sizes = array<i64: 2, 2>}} : {S(2, 2)} -> {D(2, 2)}
npu_dma.wait %t3"""
    top = (f'%w = npu_task.weight "inline" {{offset = 0 : i64, value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>}} : {D(4)}\n'
           f"%xv = npu_task.view %x : {D(4)} to {D(2, 2)}\n"
           f"%wv = npu_task.view %w : {D(4)} to {D(2, 2)}\n"
           f"%yv = npu_task.view %y : {D(4)} to {D(2, 2)}\n")
    x = np.array([10, 20, 30, 40], np.float32)
    r = simulate(module([("x", D(4))], [("y", D(4))], top + task("k", 0, body)), {}, {"x": x}, ARCH)
    np.testing.assert_array_equal(r.outputs["y"], x + 4 * np.array([1, 2, 3, 4]))


def test_task_range_binds_body_arguments():
    body = (f"{CONSTS}\n%a = npu_task.sram {{offset = 0 : i64}} : {S(1)}\n"
            f"scf.for %i = %lo_k to %hi_k step %c1 {{\n"
            f"  npu_compute.fill %a {{value = 5.0 : f32}} : {S(1)}\n"
            f"  %t = npu_dma.copy %a[%c0] -> %y[%i] {{sizes = array<i64: 1>}} : {S(1)} -> {D(8)}\n"
            f"  npu_dma.wait %t\n  scf.yield\n}}")
    m = module([], [("y", D(8))], task("k", 0, body, rng=(2, 5)))
    r = simulate(m, {}, {}, ARCH, sanitize=False)  # (the task writes only y[2:5])
    np.testing.assert_array_equal(r.outputs["y"], [0, 0, 5, 5, 5, 0, 0, 0])
    with pytest.raises(SimError, match=r"sanitizer: model output 'y' is returned with bytes \[0, 8\) of output "
                                       r"'y' never written"):
        simulate(m, {}, {}, ARCH, sanitize=True)


def test_missing_input_is_an_error():
    with pytest.raises(SimError, match="missing input 'x'"):
        simulate(copy_module(10), {}, {}, ARCH)


# --------------------------------------------------------------------------- trace


def test_trace_has_a_track_per_core_unit_and_dma_channel():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 20)).astype(np.float32)
    w = rng.standard_normal((20, 12)).astype(np.float32)
    r = simulate(matmul_module(10, 20, 12, 4, 8, 8), {"w": w}, {"x": x}, ARCH, trace=True)
    tj = json.loads(json.dumps(r.trace_json()))
    assert tj["displayTimeUnit"] == "ns"
    names = {e["tid"]: e["args"]["name"] for e in tj["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    want = ({f"core {c}" for c in range(4)} | {f"core {c} {u}" for c in range(4) for u in ("cube", "vector")}
            | {f"core {c} dma {k}" for c in range(4) for k in range(2)})
    assert set(names.values()) == want and len(names) == len(want)
    spans = [e for e in tj["traceEvents"] if e["ph"] == "X"]
    tasks = [e for e in spans if e["cat"] == "task"]
    assert len(tasks) == 1 and tasks[0]["args"]["onnx_nodes"] == ["gemm0"]
    assert names[tasks[0]["tid"]] == "core 0"
    assert tasks[0]["dur"] == pytest.approx(r.cycles / 1e3, abs=1e-3)  # 1 GHz: 1000 cycles per us
    dmas = [e for e in spans if e["cat"] == "dma"]
    assert len(dmas) == 3 * 2 * 3 * 2 + 6 and all(names[e["tid"]].startswith("core 0 dma ") for e in dmas)
    assert sum(e["args"]["bytes"] for e in dmas) == r.dram_bytes_read + r.dram_bytes_written
    cube = [e for e in spans if e["cat"] == "cube"]
    assert len(cube) == 18 and all(names[e["tid"]] == "core 0 cube" for e in cube)
    fills = [e for e in spans if e["cat"] == "vector"]
    assert len(fills) == 6 and all(names[e["tid"]] == "core 0 vector" for e in fills)
    t0, t1 = tasks[0]["ts"], tasks[0]["ts"] + tasks[0]["dur"]
    assert all(t0 <= e["ts"] and e["ts"] + e["dur"] <= t1 + 1e-9 for e in cube)
    # no trace requested: no events
    assert simulate(matmul_module(10, 20, 12, 4, 8, 8), {"w": w}, {"x": x}, ARCH).trace == []
    # one compute op at a time: compute spans nested in the task's, on the core's track
    serial = simulate(matmul_module(10, 20, 12, 4, 8, 8), {"w": w}, {"x": x}, SERIAL, trace=True).trace_json()
    tracks = {e["args"]["name"] for e in serial["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert not any(n.endswith(("cube", "vector")) for n in tracks)


def test_cube_and_vector_units_overlap_and_a_missing_fence_is_a_race():
    """Concurrent units: a matmul and an independent relu on other bytes run at once (the
    serial core runs them one after the other; outputs equal); a relu of the matmul's
    result waits for it through a fence, and without the fence is a reported race."""
    def body(relu_of: str) -> str:
        rows = 16 if relu_of == "d" else 64
        return f"""{CONSTS}
%a = npu_task.sram {{offset = 0 : i64}} : {S(64, 64)}
%c = npu_task.sram {{offset = 16384 : i64}} : {S(64, 64)}
%d = npu_task.sram {{offset = 32768 : i64}} : {S(16, 64)}
%t = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {{sizes = array<i64: 64, 64>}} : {D(64, 64)} -> {S(64, 64)}
npu_dma.wait %t
npu_compute.fill %d {{value = -1.0 : f32}} : {S(16, 64)}
npu_compute.matmul %a, %a -> %c : {S(64, 64)}, {S(64, 64)} -> {S(64, 64)}
npu_compute.eltwise relu %{relu_of} -> %{relu_of} : {S(rows, 64)} -> {S(rows, 64)}
%s = npu_dma.copy %c[%c0, %c0] -> %y[%c0, %c0] {{sizes = array<i64: 64, 64>}} : {S(64, 64)} -> {D(64, 64)}
npu_dma.wait %s"""
    x = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    io = ([("x", D(64, 64))], [("y", D(64, 64))])
    apart = simulate(module(*io, task("k", 0, body("d"))), {}, {"x": x}, ARCH)
    serial = simulate(module(*io, task("k", 0, body("d"))), {}, {"x": x}, SERIAL)
    np.testing.assert_array_equal(apart.outputs["y"], serial.outputs["y"])
    assert apart.warnings == [] and serial.warnings == []
    # the fill and the relu are hidden under the matmul and the store, which waits for the
    # matmul through a fence (its flag latency)
    vector = 2 * 16 * 64 // ARCH.vector_lanes
    assert serial.cycles - apart.cycles == vector - ARCH.flag_latency
    chained = simulate(module(*io, task("k", 0, body("c"))), {}, {"x": x}, ARCH)
    np.testing.assert_allclose(chained.outputs["y"], np.maximum(x @ x, 0), rtol=1e-4, atol=1e-4)
    assert chained.warnings == []
    bare = simulate(module(*io, task("k", 0, body("c")), fences=False), {}, {"x": x}, ARCH)
    np.testing.assert_array_equal(bare.outputs["y"], chained.outputs["y"])  # (computed in program order)
    assert any(m.startswith("race: ") and "missing npu_compute.fence cube -> vector" in m for m in bare.warnings)


def test_view_inside_a_task():
    body = (f"{CONSTS}\n%a = npu_task.sram {{offset = 0 : i64}} : {S(2, 4)}\n"
            f"%t = npu_dma.copy %x[%c0] -> %flat[%c0] {{sizes = array<i64: 8>}} : {D(8)} -> {S(8)}\n"
            f"npu_dma.wait %t\n"
            f"%t2 = npu_dma.copy %a[%c0, %c0] -> %yv[%c0, %c0] {{sizes = array<i64: 2, 4>}} : {S(2, 4)} -> {D(2, 4)}\n"
            f"npu_dma.wait %t2")
    body = body.replace("%t = npu_dma", f"%flat = npu_task.view %a : {S(2, 4)} to {S(8)}\n%t = npu_dma", 1)
    top = f"%yv = npu_task.view %y : {D(8)} to {D(2, 4)}\n"
    x = np.arange(8, dtype=np.float32)
    r = simulate(module([("x", D(8))], [("y", D(8))], top + task("k", 0, body)), {}, {"x": x}, ARCH)
    np.testing.assert_array_equal(r.outputs["y"], x)


def test_unconsumed_signal_is_a_warning():
    r = simulate(module([], [], fill_task("a", 0, 64, signals=[3], loc="conv3")), {}, {}, ARCH)
    assert r.warnings == ["event slot 3 signalled by task 'a' (ONNX node conv3) at cycle 1 is never waited on"]

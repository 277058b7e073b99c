"""The simulator on typed buffers (issue 44): f16, bf16, i8, ui8 and i32 task-level
modules written by hand - bytes moved, rounding, exact integer cube ops, the
sanitizer on 1- and 2-byte elements, the verifiers and the simulator's own checks."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.utils.exceptions import VerifyException

from npu_dialects.arch import Arch
from npu_dialects.graph import SoftmaxOp, requantize_ref
from runtime.device import DeviceError, Runtime
from runtime.executable import Executable, ExecutableError, read_executable
from runtime.run import RunError, random_inputs, validate_inputs
from sim import SimError, signature, simulate
from tests.simkit import CONSTS, module, task

ARCH = Arch()
NP = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16, "i8": np.int8, "ui8": np.uint8,
      "i32": np.int32}
SIZE = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "ui8": 1, "i32": 4}


def D(t: str, *shape: int) -> str:
    return f'memref<{"x".join(map(str, shape))}x{t}, "dram">'


def S(t: str, *shape: int) -> str:
    return f'memref<{"x".join(map(str, shape))}x{t}, "sram">'


def draw(t: str, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if t in ("i8", "ui8", "i32"):
        info = np.iinfo(NP[t])
        return rng.integers(max(info.min, -128), min(info.max, 255), shape, endpoint=True).astype(NP[t])
    return rng.standard_normal(shape).astype(NP[t])


# --------------------------------------------------------------------------- DMA bytes


def row_copy_module(t: str, rows: int = 64, cols: int = 64, tile: int = 16):
    """y = x, through SRAM, `tile` rows at a time."""
    body = f"""
{CONSTS}
%cR = arith.constant {rows} : index
%tr = arith.constant {tile} : index
%a = npu_task.sram {{offset = 0 : i64}} : {S(t, tile, cols)}
scf.for %r = %c0 to %cR step %tr {{
  %t1 = npu_dma.copy %x[%r, %c0] -> %a[%c0, %c0] {{sizes = array<i64: {tile}, {cols}>}} : {D(t, rows, cols)} -> {S(t, tile, cols)}
  npu_dma.wait %t1
  %t2 = npu_dma.copy %a[%c0, %c0] -> %y[%r, %c0] {{sizes = array<i64: {tile}, {cols}>}} : {S(t, tile, cols)} -> {D(t, rows, cols)}
  npu_dma.wait %t2
  scf.yield
}}"""
    return module([("x", D(t, rows, cols))], [("y", D(t, rows, cols))], task("cp", 0, body))


@pytest.mark.parametrize("t", ["f16", "bf16", "i8", "ui8", "i32"])
def test_copies_move_the_elements_bytes(t):
    """A copy moves the element's bytes: f16/bf16 half of f32's DRAM traffic, i8/ui8 a
    quarter, i32 the same; the data arrives unchanged, in its own dtype."""
    x = draw(t, (64, 64))
    ref = simulate(row_copy_module("f32"), {}, {"x": x.astype(np.float32)}, ARCH)
    r = simulate(row_copy_module(t), {}, {"x": x}, ARCH, sanitize=True)
    assert r.outputs["y"].dtype == NP[t]
    np.testing.assert_array_equal(r.outputs["y"], x)
    assert ref.dram_bytes_read == 64 * 64 * 4 == ref.dram_bytes_written
    assert r.dram_bytes_read == 64 * 64 * SIZE[t] == r.dram_bytes_written
    assert r.dram_bytes_read * 4 // SIZE[t] == ref.dram_bytes_read
    if SIZE[t] < 4:
        assert r.cycles < ref.cycles


def test_an_integer_pad_value_fills_the_halo():
    """A halo load of an i8 tensor pads with the integer pad_value (a zero point)."""
    x = draw("i8", (1, 1, 4, 4))
    body = f"""
{CONSTS}
%m1 = arith.constant -1 : index
%a = npu_task.sram {{offset = 1 : i64}} : {S("i8", 1, 1, 6, 6)}
%t = npu_dma.copy %x[%c0, %c0, %m1, %m1] -> %a[%c0, %c0, %c0, %c0] {{sizes = array<i64: 1, 1, 6, 6>, pad_value = -7.0 : f32}} : {D("i8", 1, 1, 4, 4)} -> {S("i8", 1, 1, 6, 6)}
npu_dma.wait %t
%u = npu_dma.copy %a[%c0, %c0, %c0, %c0] -> %y[%c0, %c0, %c0, %c0] {{sizes = array<i64: 1, 1, 6, 6>}} : {S("i8", 1, 1, 6, 6)} -> {D("i8", 1, 1, 6, 6)}
npu_dma.wait %u"""
    m = module([("x", D("i8", 1, 1, 4, 4))], [("y", D("i8", 1, 1, 6, 6))], task("pad", 0, body))
    r = simulate(m, {}, {"x": x}, ARCH, sanitize=True)
    want = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-7)
    np.testing.assert_array_equal(r.outputs["y"], want)
    assert r.dram_bytes_read == 16


# --------------------------------------------------------------------------- float rounding


def unary_module(t: str, op: str, shape: tuple[int, ...], verify: bool = True):
    """y = op(x) on one tile (an `npu_compute` op line with %a in, %b out)."""
    dims = ", ".join(map(str, shape))
    zeros = ", ".join(["%c0"] * len(shape))
    body = f"""
{CONSTS}
%a = npu_task.sram {{offset = 0 : i64}} : {S(t, *shape)}
%b = npu_task.sram {{offset = 4096 : i64}} : {S(t, *shape)}
%t = npu_dma.copy %x[{zeros}] -> %a[{zeros}] {{sizes = array<i64: {dims}>}} : {D(t, *shape)} -> {S(t, *shape)}
npu_dma.wait %t
{op}
%u = npu_dma.copy %b[{zeros}] -> %y[{zeros}] {{sizes = array<i64: {dims}>}} : {S(t, *shape)} -> {D(t, *shape)}
npu_dma.wait %u"""
    return module([("x", D(t, *shape))], [("y", D(t, *shape))], task("k", 0, body), verify=verify)


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_apply_computes_in_f32_and_rounds_into_the_buffer(t):
    """A softmax tile on f16/bf16 buffers: computed in f32 from the widened tile, rounded
    once into the out buffer's type (the numpy float16 / ml_dtypes bfloat16 rounding)."""
    x = draw(t, (8, 32))
    op = (f'npu_compute.apply "npu_graph.softmax" %a -> %b {{attrs = {{axis = -1 : i64}}}} : '
          f'{S(t, 8, 32)} -> {S(t, 8, 32)}')
    r = simulate(unary_module(t, op, (8, 32)), {}, {"x": x}, ARCH, sanitize=True)
    y = r.outputs["y"]
    assert y.dtype == NP[t]
    want = SoftmaxOp.compute({}, x.astype(np.float32)).astype(NP[t])
    np.testing.assert_array_equal(y.view(np.uint16), want.view(np.uint16))  # bit for bit
    exact = np.exp(x.astype(np.float64) - x.astype(np.float64).max(-1, keepdims=True))
    exact /= exact.sum(-1, keepdims=True)
    eps = float(ml_dtypes.finfo(NP[t]).eps)
    assert np.abs(y.astype(np.float64) - exact).max() <= eps  # within the type's rounding
    assert np.abs(y.astype(np.float64) - exact).max() > 1e-7  # and it was rounded, not kept in f32


def test_eltwise_and_matmul_on_f16_round_their_results():
    """An f16 add is f16(f32(a) + f32(b)); an f16 matmul into an f32 accumulator keeps f32."""
    x = draw("f16", (16, 16))
    add = f"npu_compute.eltwise add %a, %a -> %b : {S('f16', 16, 16)}, {S('f16', 16, 16)} -> {S('f16', 16, 16)}"
    r = simulate(unary_module("f16", add, (16, 16)), {}, {"x": x}, ARCH, sanitize=True)
    np.testing.assert_array_equal(r.outputs["y"], (x.astype(np.float32) * 2).astype(np.float16))
    body = f"""
{CONSTS}
%a = npu_task.sram {{offset = 0 : i64}} : {S("f16", 16, 64)}
%b = npu_task.sram {{offset = 2048 : i64}} : {S("f16", 64, 16)}
%c = npu_task.sram {{offset = 4096 : i64}} : {S("f32", 16, 16)}
%t = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {{sizes = array<i64: 16, 64>}} : {D("f16", 16, 64)} -> {S("f16", 16, 64)}
%t2 = npu_dma.copy %w[%c0, %c0] -> %b[%c0, %c0] {{sizes = array<i64: 64, 16>}} : {D("f16", 64, 16)} -> {S("f16", 64, 16)}
npu_dma.wait %t
npu_dma.wait %t2
npu_compute.matmul %a, %b -> %c : {S("f16", 16, 64)}, {S("f16", 64, 16)} -> {S("f32", 16, 16)}
%u = npu_dma.copy %c[%c0, %c0] -> %y[%c0, %c0] {{sizes = array<i64: 16, 16>}} : {S("f32", 16, 16)} -> {D("f32", 16, 16)}
npu_dma.wait %u"""
    m = module([("x", D("f16", 16, 64))], [("y", D("f32", 16, 16))],
               f'%w = npu_task.weight "w" {{offset = 0 : i64}} : {D("f16", 64, 16)}\n' + task("mm", 0, body))
    a, w = draw("f16", (16, 64), 1), draw("f16", (64, 16), 2)
    r = simulate(m, {"w": w}, {"x": a}, ARCH, sanitize=True)
    assert r.outputs["y"].dtype == np.float32
    np.testing.assert_allclose(r.outputs["y"], a.astype(np.float64) @ w.astype(np.float64), rtol=1e-5, atol=1e-5)
    assert r.dram_bytes_read == (16 * 64 + 64 * 16) * 2


# --------------------------------------------------------------------------- integer cube ops


def int_matmul_module(M: int, K: int, N: int, ta: str, tb: str, zps: str, accumulate: str = ""):
    body = f"""
{CONSTS}
%a = npu_task.sram {{offset = 0 : i64}} : {S(ta, M, K)}
%b = npu_task.sram {{offset = {M * K} : i64}} : {S(tb, K, N)}
%c = npu_task.sram {{offset = {M * K + K * N} : i64}} : {S("i32", M, N)}
%t = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {{sizes = array<i64: {M}, {K}>}} : {D(ta, M, K)} -> {S(ta, M, K)}
%t2 = npu_dma.copy %w[%c0, %c0] -> %b[%c0, %c0] {{sizes = array<i64: {K}, {N}>}} : {D(tb, K, N)} -> {S(tb, K, N)}
npu_dma.wait %t
npu_dma.wait %t2
{accumulate}
npu_compute.matmul %a, %b -> %c {{{zps}}} : {S(ta, M, K)}, {S(tb, K, N)} -> {S("i32", M, N)}
%u = npu_dma.copy %c[%c0, %c0] -> %y[%c0, %c0] {{sizes = array<i64: {M}, {N}>}} : {S("i32", M, N)} -> {D("i32", M, N)}
npu_dma.wait %u"""
    return module([("x", D(ta, M, K))], [("y", D("i32", M, N))],
                  f'%w = npu_task.weight "w" {{offset = 0 : i64}} : {D(tb, K, N)}\n' + task("qmm", 0, body))


def test_int8_matmul_is_exact_in_int32():
    """ui8 x i8 with zero points, K = 4096: sums beyond 2^24 (where f32 would round) are
    exact, as numpy's int64 reference."""
    M, K, N = 8, 4096, 16
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (M, K)).astype(np.uint8)
    x[0] = 255  # a row of maximal products: 4096 x 255 x 255 > 2^28
    w = rng.integers(-128, 128, (K, N)).astype(np.int8)
    w[:, 0] = -128
    zx, zw = 0, 127
    m = int_matmul_module(M, K, N, "ui8", "i8", f"input_zero_point = {zx} : i64, weight_zero_point = {zw} : i64")
    r = simulate(m, {"w": w}, {"x": x}, ARCH, sanitize=True)
    want = (x.astype(np.int64) - zx) @ (w.astype(np.int64) - zw)
    assert np.abs(want).max() > 2 ** 24
    assert r.outputs["y"].dtype == np.int32
    np.testing.assert_array_equal(r.outputs["y"], want)
    assert r.dram_bytes_read == M * K + K * N


def test_matmul_then_requantize_to_int8_matches_the_reference():
    """The integer chain of a QDQ layer in one task: ui8 x i8 -> i32 on the cube, then the
    requantize tile (per-channel f32 multiplier, f32 zero point) saturating into i8,
    bit-exact against `requantize_ref` of numpy's int64 product."""
    M, K, N = 4, 64, 8
    rng = np.random.default_rng(11)
    x = rng.integers(0, 256, (M, K)).astype(np.uint8)
    w = rng.integers(-128, 128, (K, N)).astype(np.int8)
    mul = rng.uniform(1e-4, 4e-3, (1, N)).astype(np.float32)
    zp = np.array([[3.0]], np.float32)
    body = f"""
{CONSTS}
%a = npu_task.sram {{offset = 0 : i64}} : {S("ui8", M, K)}
%b = npu_task.sram {{offset = 256 : i64}} : {S("i8", K, N)}
%c = npu_task.sram {{offset = 768 : i64}} : {S("i32", M, N)}
%m = npu_task.sram {{offset = 896 : i64}} : {S("f32", 1, N)}
%z = npu_task.sram {{offset = 928 : i64}} : {S("f32", 1, 1)}
%q = npu_task.sram {{offset = 933 : i64}} : {S("i8", M, N)}
%t = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {{sizes = array<i64: {M}, {K}>}} : {D("ui8", M, K)} -> {S("ui8", M, K)}
%t2 = npu_dma.copy %w[%c0, %c0] -> %b[%c0, %c0] {{sizes = array<i64: {K}, {N}>}} : {D("i8", K, N)} -> {S("i8", K, N)}
%t3 = npu_dma.copy %mw[%c0, %c0] -> %m[%c0, %c0] {{sizes = array<i64: 1, {N}>}} : {D("f32", 1, N)} -> {S("f32", 1, N)}
%t4 = npu_dma.copy %zw[%c0, %c0] -> %z[%c0, %c0] {{sizes = array<i64: 1, 1>}} : {D("f32", 1, 1)} -> {S("f32", 1, 1)}
npu_dma.wait %t
npu_dma.wait %t2
npu_dma.wait %t3
npu_dma.wait %t4
npu_compute.matmul %a, %b -> %c {{input_zero_point = 128 : i64}} : {S("ui8", M, K)}, {S("i8", K, N)} -> {S("i32", M, N)}
npu_compute.apply "npu_graph.requantize" %c, %m, %z -> %q {{attrs = {{min = -128 : i64, max = 127 : i64}}}} : {S("i32", M, N)}, {S("f32", 1, N)}, {S("f32", 1, 1)} -> {S("i8", M, N)}
%u = npu_dma.copy %q[%c0, %c0] -> %y[%c0, %c0] {{sizes = array<i64: {M}, {N}>}} : {S("i8", M, N)} -> {D("i8", M, N)}
npu_dma.wait %u"""
    weights = (f'%w = npu_task.weight "w" {{offset = 0 : i64}} : {D("i8", K, N)}\n'
               f'%mw = npu_task.weight "mul" {{offset = 512 : i64}} : {D("f32", 1, N)}\n'
               f'%zw = npu_task.weight "zp" {{offset = 544 : i64}} : {D("f32", 1, 1)}\n')
    m = module([("x", D("ui8", M, K))], [("y", D("i8", M, N))], weights + task("qlayer", 0, body))
    r = simulate(m, {"w": w, "mul": mul, "zp": zp}, {"x": x}, ARCH, sanitize=True)
    acc = (x.astype(np.int64) - 128) @ w.astype(np.int64)
    want = requantize_ref(acc, mul, zp, -128, 127).astype(np.int8)
    assert r.outputs["y"].dtype == np.int8
    assert len(np.unique(want)) > 8  # (a spread of values, some saturated)
    np.testing.assert_array_equal(r.outputs["y"], want)


def test_int32_overflow_is_an_error_never_a_wrap():
    """An accumulation leaving int32 stops the run (a wrapped result is never stored)."""
    M, K, N = 4, 64, 4
    fill = "npu_compute.fill %c {value = 2147480000.0 : f32} : " + S("i32", M, N)
    m = int_matmul_module(M, K, N, "i8", "i8", "accumulate", fill)
    x = np.full((M, K), 127, np.int8)
    with pytest.raises(SimError, match=r"'npu_compute.matmul' .*cannot execute: ValueError: value \d+ does not fit "
                                       r"the int32 out buffer"):
        simulate(m, {"w": x.T.copy()}, {"x": x}, ARCH)


def test_int8_conv_pads_with_the_zero_point():
    """An i8 conv with on-the-fly padding: the padding is the input's zero point (a real
    zero after subtracting it), the result exact in int32."""
    x = draw("i8", (1, 4, 6, 6), 4)
    w = draw("i8", (4, 2, 3, 3), 5)
    zx, zw = -5, 3
    body = f"""
{CONSTS}
%a = npu_task.sram {{offset = 0 : i64}} : {S("i8", 1, 4, 6, 6)}
%b = npu_task.sram {{offset = 147 : i64}} : {S("i8", 4, 2, 3, 3)}
%c = npu_task.sram {{offset = 256 : i64}} : {S("i32", 1, 4, 6, 6)}
%t = npu_dma.copy %x[%c0, %c0, %c0, %c0] -> %a[%c0, %c0, %c0, %c0] {{sizes = array<i64: 1, 4, 6, 6>}} : {D("i8", 1, 4, 6, 6)} -> {S("i8", 1, 4, 6, 6)}
%t2 = npu_dma.copy %w[%c0, %c0, %c0, %c0] -> %b[%c0, %c0, %c0, %c0] {{sizes = array<i64: 4, 2, 3, 3>}} : {D("i8", 4, 2, 3, 3)} -> {S("i8", 4, 2, 3, 3)}
npu_dma.wait %t
npu_dma.wait %t2
npu_compute.conv2d %a, %b -> %c {{strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, input_zero_point = {zx} : i64, weight_zero_point = {zw} : i64}} : {S("i8", 1, 4, 6, 6)}, {S("i8", 4, 2, 3, 3)} -> {S("i32", 1, 4, 6, 6)}
%u = npu_dma.copy %c[%c0, %c0, %c0, %c0] -> %y[%c0, %c0, %c0, %c0] {{sizes = array<i64: 1, 4, 6, 6>}} : {S("i32", 1, 4, 6, 6)} -> {D("i32", 1, 4, 6, 6)}
npu_dma.wait %u"""
    m = module([("x", D("i8", 1, 4, 6, 6))], [("y", D("i32", 1, 4, 6, 6))],
               f'%w = npu_task.weight "w" {{offset = 0 : i64}} : {D("i8", 4, 2, 3, 3)}\n' + task("qconv", 0, body))
    r = simulate(m, {"w": w}, {"x": x}, ARCH, sanitize=True)
    xp = np.pad(x.astype(np.int64) - zx, ((0, 0), (0, 0), (1, 1), (1, 1)))  # the zero point pads: 0 after it
    wz = w.astype(np.int64) - zw
    want = np.zeros((1, 4, 6, 6), np.int64)
    for o in range(4):
        g = o // 2
        for i in range(6):
            for j in range(6):
                want[0, o, i, j] = (xp[0, 2 * g:2 * g + 2, i:i + 3, j:j + 3] * wz[o]).sum()
    np.testing.assert_array_equal(r.outputs["y"], want)


def test_an_integer_weight_or_input_out_of_range_is_refused():
    """The host never wraps a value into an integer buffer either."""
    m = int_matmul_module(4, 8, 4, "i8", "i8", "")
    x = np.zeros((4, 8), np.int8)
    with pytest.raises(SimError, match=r"weight 'w' holds 200, outside the range \[-128, 127\] of its int8 buffer"):
        simulate(m, {"w": np.full((8, 4), 200, np.int32)}, {"x": x}, ARCH)
    with pytest.raises(SimError, match=r"input 'x' holds 0.5, not an integer, for a int8 buffer"):
        simulate(m, {"w": np.zeros((8, 4), np.int8)}, {"x": np.full((4, 8), 0.5)}, ARCH)


# --------------------------------------------------------------------------- sanitizer


def i8_store_task(kernel: str, core: int, value: int, at: int, n: int, **kw) -> str:
    body = (f"{CONSTS}\n%o = arith.constant {at} : index\n%a = npu_task.sram {{offset = 1 : i64}} : {S('i8', n)}\n"
            f"npu_compute.fill %a {{value = {value}.0 : f32}} : {S('i8', n)}\n"
            f"%t = npu_dma.copy %a[%c0] -> %h[%o] {{sizes = array<i64: {n}>}} : {S('i8', n)} -> {D('i8', 16)}\n"
            f"npu_dma.wait %t")
    return task(kernel, core, body, **kw)


def test_a_race_on_an_i8_buffer_is_found():
    body = (f"%h = npu_task.alloc {{offset = 0 : i64}} : {D('i8', 16)}\n"
            + i8_store_task("a", 0, 1, 0, 3) + i8_store_task("b", 1, 2, 2, 3))
    with pytest.raises(SimError, match=r"race: task 'b' .* on core 1 writes alloc at arena offset 0 .* window "
                                       r"\[2:5\] which task 'a' .* on core 0 writes, and no event orders"):
        simulate(module([], [], body), {}, {}, ARCH)


def test_bytes_next_to_each_other_in_an_i8_buffer_are_not_a_race():
    """Two cores writing bytes [0, 3) and [3, 6) of one i8 buffer: no byte is shared (a
    4-byte granule would have seen one)."""
    body = (f"%h = npu_task.alloc {{offset = 0 : i64}} : {D('i8', 16)}\n"
            + i8_store_task("a", 0, 1, 0, 3) + i8_store_task("b", 1, 2, 3, 3))
    simulate(module([], [], body), {}, {}, ARCH, sanitize=True)


def test_the_sanitizer_names_the_bytes_of_an_unwritten_f16_read():
    """Reading an f16 tile of which only the first 5 elements were loaded: the unwritten
    bytes are [10, 32) of the SRAM (2-byte granules)."""
    body = (f"{CONSTS}\n%s = npu_task.sram {{offset = 0 : i64}} : {S('f16', 16)}\n"
            f"%o = npu_task.sram {{offset = 64 : i64}} : {S('f16', 16)}\n"
            f"%t = npu_dma.copy %x[%c0] -> %s[%c0] {{sizes = array<i64: 5>}} : {D('f16', 16)} -> {S('f16', 16)}\n"
            f"npu_dma.wait %t\n"
            f"npu_compute.eltwise neg %s -> %o : {S('f16', 16)} -> {S('f16', 16)}\n"
            f"%u = npu_dma.copy %o[%c0] -> %y[%c0] {{sizes = array<i64: 16>}} : {S('f16', 16)} -> {D('f16', 16)}\n"
            f"npu_dma.wait %u")
    m = module([("x", D("f16", 16))], [("y", D("f16", 16))], task("k", 0, body))
    with pytest.raises(SimError, match=r"sanitizer: .*'npu_compute.eltwise' .* reads bytes \[10, 32\) of SRAM of "
                                       r"core 0 .* \(read before written\)"):
        simulate(m, {}, {"x": np.ones(16, np.float16)}, ARCH, sanitize=True)


# --------------------------------------------------------------------------- verifiers, simulator checks


def test_a_copy_between_element_types_is_a_verifier_error():
    body = (f"{CONSTS}\n%s = npu_task.sram {{offset = 0 : i64}} : {S('f16', 16)}\n"
            f"%t = npu_dma.copy %x[%c0] -> %s[%c0] {{sizes = array<i64: 16>}} : {D('f32', 16)} -> {S('f16', 16)}\n"
            f"npu_dma.wait %t")
    with pytest.raises(VerifyException, match="'npu_dma.copy': source holds f32 but destination holds f16; a copy "
                                              "moves bytes and converts nothing"):
        module([("x", D("f32", 16))], [], task("k", 0, body))
    m = module([("x", D("f32", 16))], [], task("k", 0, body), verify=False)
    with pytest.raises(SimError, match=r"copies f32 into f16 \(a copy converts nothing\)"):
        simulate(m, {}, {"x": np.ones(16, np.float32)}, ARCH)


def test_a_misaligned_offset_is_a_verifier_error():
    body = f"{CONSTS}\n%s = npu_task.sram {{offset = 3 : i64}} : {S('f16', 16)}"
    with pytest.raises(VerifyException, match=r"'npu_task.sram': offset must be a multiple of 2 bytes \(f16\), got 3"):
        module([], [], task("k", 0, body))
    with pytest.raises(SimError, match=r"SRAM buffer at offset 3 is not a multiple of its 2-byte elements"):
        simulate(module([], [], task("k", 0, body), verify=False), {}, {}, ARCH)
    # an i8 buffer may start at any byte
    simulate(module([], [], task("k", 0, f"{CONSTS}\n%s = npu_task.sram {{offset = 3 : i64}} : {S('i8', 16)}")),
             {}, {}, ARCH)


def test_a_float_result_into_an_integer_buffer_is_an_error():
    """A tile kernel computing floats cannot store them into an i32 buffer (it would
    round or wrap silently); the vector unit's integer eltwise functions are exact."""
    op = f'npu_compute.apply "npu_graph.softmax" %a -> %b {{attrs = {{}}}} : {S("i32", 4)} -> {S("i32", 4)}'
    with pytest.raises(SimError, match=r"cannot execute: ValueError: computes float\d+ values but its out buffer "
                                       r"holds int32"):
        simulate(unary_module("i32", op, (4,)), {}, {"x": np.arange(4, dtype=np.int32)}, ARCH)
    op = f"npu_compute.eltwise max %a, %a -> %b : {S('i8', 4)}, {S('i8', 4)} -> {S('i8', 4)}"
    x = np.array([-128, -1, 0, 127], np.int8)
    np.testing.assert_array_equal(simulate(unary_module("i8", op, (4,)), {}, {"x": x}, ARCH).outputs["y"], x)


# --------------------------------------------------------------------------- runtime


def test_an_executable_keeps_each_weight_in_its_element_type(tmp_path):
    """The weights image holds an i8 weight as its bytes (a quarter of f32's), the meta
    index names its type, and the loaded executable runs exactly as the module does."""
    M, K, N = 4, 64, 8
    m = int_matmul_module(M, K, N, "i8", "i8", "input_zero_point = 1 : i64")
    rng = np.random.default_rng(7)
    w = rng.integers(-128, 128, (K, N)).astype(np.int8)
    x = rng.integers(-128, 128, (M, K)).astype(np.int8)
    exe = Executable.from_module(m, {"w": w})
    assert exe.meta["weights"]["w"]["dtype"] == "i8" and exe.weights_section.size == K * N
    assert exe.meta["memory"]["weights"][0]["bytes"] == K * N
    path = tmp_path / "q.npuexe"
    exe.save(path)
    back = read_executable(path)
    assert back.weights["w"].dtype == np.int8
    np.testing.assert_array_equal(back.weights["w"], w)
    want = (x.astype(np.int64) - 1) @ w.astype(np.int64)
    rt = Runtime()
    out = rt.submit(rt.load(back), {"x": x}).wait().outputs
    assert out is not None and out["y"].dtype == np.int32
    np.testing.assert_array_equal(out["y"], want)
    with pytest.raises(ExecutableError, match=r"weight 'w' holds 0.5, not an integer, for a int8 buffer"):
        Executable.from_module(m, {"w": np.full((K, N), 0.5, np.float32)})


def test_typed_inputs_and_outputs_in_the_onnx_types():
    """An f16 buffer behind float32 model I/O: the host gives and gets float32 (rounded
    to f16 on the way in); int8 I/O checks its range."""
    add = f"npu_compute.eltwise add %a, %a -> %b : {S('f16', 4)}, {S('f16', 4)} -> {S('f16', 4)}"
    m = unary_module("f16", add, (4,))
    fn = next(iter(m.body.block.ops))
    for attr in ("npu.input_dtypes", "npu.output_dtypes"):
        fn.attributes[attr] = ArrayAttr([StringAttr("float32")])
    x = np.array([1.0001, 2.0, -3.5, 1000.1], np.float32)
    r = simulate(m, {}, {"x": x}, ARCH)
    assert r.outputs["y"].dtype == np.float32
    np.testing.assert_array_equal(r.outputs["y"], (x.astype(np.float16).astype(np.float32) * 2).astype(np.float16))
    sig = signature(int_matmul_module(4, 8, 4, "i8", "i8", ""))
    assert sig.input_dtypes == {"x": "int8"} and sig.output_dtypes == {"y": "int32"}
    assert validate_inputs(sig, {"x": np.ones((4, 8), np.int64)})["x"].dtype == np.int8
    with pytest.raises(RunError, match=r"input 'x' has values outside the range \[-128, 127\] of int8"):
        validate_inputs(sig, {"x": np.full((4, 8), 300)})
    drawn = random_inputs(sig, seed=1)["x"]
    assert drawn.dtype == np.int8 and drawn.min() < -64 and drawn.max() > 64


def test_device_buffers_bound_as_typed_inputs():
    """A device buffer holding an i8 input's bytes (written by the host as int8) binds to
    it; one of the f32 size is refused with the sizes in the i8 type."""
    M, K, N = 4, 64, 8
    m = int_matmul_module(M, K, N, "i8", "i8", "")
    w = draw("i8", (K, N), 1)
    x = draw("i8", (M, K), 2)
    rt = Runtime()
    exe = rt.load(Executable.from_module(m, {"w": w}))
    buf = rt.alloc(M * K, "x")
    rt.write(buf, x)
    assert np.array_equal(rt.read(buf, (M, K), np.int8), x)
    out = rt.submit(exe, {"x": buf}).wait().outputs
    assert out is not None
    np.testing.assert_array_equal(out["y"], x.astype(np.int64) @ w.astype(np.int64))
    big = rt.alloc(M * K * 4, "x32")
    with pytest.raises(DeviceError, match=r"input 'x' is bound to x32 of 1024 bytes, the model reads \[4, 64\] i8 "
                                          r"\(256 bytes\)"):
        rt.submit(exe, {"x": big})


def test_f32_bytes_are_named_exactly_among_one_byte_granules():
    """A module holding an i8 buffer tracks 1-byte granules: an f32 tile of which 5
    elements were loaded reports its unwritten bytes [20, 64) and their count (44)."""
    body = (f"{CONSTS}\n%s = npu_task.sram {{offset = 0 : i64}} : {S('f32', 16)}\n"
            f"%o = npu_task.sram {{offset = 64 : i64}} : {S('f32', 16)}\n"
            f"%k = npu_task.sram {{offset = 128 : i64}} : {S('i8', 16)}\n"
            f"%t = npu_dma.copy %x[%c0] -> %s[%c0] {{sizes = array<i64: 5>}} : {D('f32', 16)} -> {S('f32', 16)}\n"
            f"npu_dma.wait %t\n"
            f"npu_compute.eltwise neg %s -> %o : {S('f32', 16)} -> {S('f32', 16)}")
    m = module([("x", D("f32", 16))], [], task("k", 0, body))
    with pytest.raises(SimError, match=r"reads bytes \[20, 64\) of SRAM of core 0 .* \(read before written\)") as e:
        simulate(m, {}, {"x": np.ones(16, np.float32)}, ARCH, sanitize=True)
    assert "44 wrong in all" in (e.value.details or "")


def test_an_i32_sum_leaving_int32_is_an_error():
    """An integer eltwise add computes in int64 and never wraps into its i32 buffer (the
    simulator's own check, whatever the verifier allows)."""
    op = f"npu_compute.eltwise add %a, %a -> %b : {S('i32', 4)}, {S('i32', 4)} -> {S('i32', 4)}"
    m = unary_module("i32", op, (4,), verify=False)
    x = np.array([1, -2, 3, 2 ** 30], np.int32)
    with pytest.raises(SimError, match=r"cannot execute: ValueError: value 2147483648 does not fit the int32 out "
                                       r"buffer"):
        simulate(m, {}, {"x": x}, ARCH)
    x[3] = 2 ** 30 - 1
    np.testing.assert_array_equal(simulate(m, {}, {"x": x}, ARCH).outputs["y"], x.astype(np.int64) * 2)


def test_a_window_leaving_an_f16_buffer_is_found():
    """A copy at a computed offset past the end of an f16 input (the verifier sees no
    constant to check) stops the run naming the window, in elements."""
    body = (f"{CONSTS}\n%o = arith.addi %c8, %c4 : index\n%s = npu_task.sram {{offset = 0 : i64}} : {S('f16', 8)}\n"
            f"%t = npu_dma.copy %x[%o] -> %s[%c0] {{sizes = array<i64: 8>}} : {D('f16', 16)} -> {S('f16', 8)}\n"
            f"npu_dma.wait %t")
    m = module([("x", D("f16", 16))], [], task("k", 0, body))
    with pytest.raises(SimError, match=r"source window \[12:20\] leaves the source buffer \[16\] \(input 'x'\) and "
                                       r"the copy has no pad_value"):
        simulate(m, {}, {"x": np.ones(16, np.float16)}, ARCH)


def test_an_integer_reduction_step_merges_without_wrapping():
    """`apply ... {accumulate}` of a reduce_sum into an i32 buffer: the merge is exact, and
    a sum leaving int32 is an error."""
    x = np.array([[2 ** 30, 2 ** 30 - 1, 5]], np.int32)
    op = (f'npu_compute.apply "npu_graph.reduce_sum" %a -> %b {{attrs = {{axes = array<i64: 1>, keepdims = 1 : i64}}, '
          f'accumulate}} : {S("i32", 1, 3)} -> {S("i32", 1, 1)}')
    body = f"""
{CONSTS}
%a = npu_task.sram {{offset = 0 : i64}} : {S("i32", 1, 3)}
%b = npu_task.sram {{offset = 64 : i64}} : {S("i32", 1, 1)}
npu_compute.fill %b {{value = {{fill}} : f32}} : {S("i32", 1, 1)}
%t = npu_dma.copy %x[%c0, %c0] -> %a[%c0, %c0] {{sizes = array<i64: 1, 3>}} : {D("i32", 1, 3)} -> {S("i32", 1, 3)}
npu_dma.wait %t
{op}
%u = npu_dma.copy %b[%c0, %c0] -> %y[%c0, %c0] {{sizes = array<i64: 1, 1>}} : {S("i32", 1, 1)} -> {D("i32", 1, 1)}
npu_dma.wait %u"""

    def run(fill: str):
        m = module([("x", D("i32", 1, 3))], [("y", D("i32", 1, 1))], task("k", 0, body.replace("{fill}", fill)))
        return simulate(m, {}, {"x": x}, ARCH).outputs["y"]
    np.testing.assert_array_equal(run("-2147483648.0"), [[4]])  # 2^31 + 4 - 2^31: exact through int64
    with pytest.raises(SimError, match=r"value 2147483652 does not fit the int32 out buffer"):
        run("0.0")

"""Byte sizes follow the element type through the lowering (docs/low-precision.md): one
kernel (matmul + bias + relu) compiled at f32, f16 and bf16 moves half the DRAM bytes
and holds half the SRAM in 16 bits when its tiles are the same, and its f16 program
runs on the simulator within f16's rounding of the float64 result; a deep f16 product
sums its K steps in f32; an integer matmul is exact over K tiles."""

from __future__ import annotations

from math import prod

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from lowering.pipeline import compile_module, make_context
from npu_dialects import dtypes
from npu_dialects.arch import parse_arch_spec
from npu_dialects.dma import CopyOp
from npu_dialects.task import SramOp, TaskOp
from runtime.run import random_inputs, run
from sim.program import signature

KERNEL = """builtin.module {
  func.func @main(%x: tensor<64x256xT>, %w: tensor<256x128xT>, %b: tensor<128xT>) -> tensor<64x128xT>
      attributes {npu.inputs = ["x", "w", "b"], npu.outputs = ["y"]} {
    %m = npu_graph.matmul %x, %w : (tensor<64x256xT>, tensor<256x128xT>) -> tensor<64x128xT> loc("fc")
    %a = npu_graph.add %m, %b : (tensor<64x128xT>, tensor<128xT>) -> tensor<64x128xT> loc("bias")
    %r = npu_graph.relu %a : (tensor<64x128xT>) -> tensor<64x128xT> loc("relu")
    func.return %r : tensor<64x128xT>
  }
}"""


def compiled(t: str, spec: str) -> ModuleOp:
    module = Parser(make_context(), KERNEL.replace("xT>", f"x{t}>")).parse_module()
    return compile_module(module, parse_arch_spec(spec))


def sizes(module: ModuleOp) -> dict[str, int]:
    """The kernel's DRAM bytes (the tasks' recorded `dram_bytes`, the model's floor), its
    SRAM buffers' bytes and its copies' window bytes (each copy op once)."""
    tasks = [o for o in module.walk() if isinstance(o, TaskOp)]
    return {"dram": sum(o.dram_bytes.value.data for o in tasks if o.dram_bytes),
            "floor": module.attributes["npu.model_min_bytes"].value.data,  # type: ignore[attr-defined]
            "sram": sum(dtypes.nbytes(o.results[0]) for o in module.walk() if isinstance(o, SramOp)),
            "copies": sum(prod(c.window) * dtypes.elem_bytes(c.src) for c in module.walk() if isinstance(c, CopyOp))}


def element_types(module: ModuleOp) -> set[str]:
    """The element types of every buffer the lowering made."""
    return {str(dtypes.element_type(o.results[0])) for o in module.walk() if isinstance(o, SramOp)}


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_sixteen_bits_halve_bytes_when_sram_does_not_bind(t: str):
    f32, low = compiled("f32", "default"), compiled(t, "default")
    a, b = sizes(f32), sizes(low)
    assert a["dram"] == 229888 and a["floor"] == a["dram"]  # (every byte once: 64x256 + 256x128 + 128 + 64x128)
    assert all(b[k] * 2 == a[k] for k in a), (a, b)
    assert element_types(f32) == {"f32"} and element_types(low) == {t}


def test_f16_moves_fewer_bytes_when_sram_binds():
    """In 32 KiB both kernels reread operands (f32: 1.66x its floor; f16: 1.86x, its SRAM
    also holding the f32 accumulator of its K steps, `wide_accumulator`): the f16 kernel
    moves 0.56x the f32 bytes."""
    spec = "default,cores=1,sram_bytes=32768"
    a, b = sizes(compiled("f32", spec)), sizes(compiled("f16", spec))
    assert b["floor"] * 2 == a["floor"]
    assert a["dram"] > a["floor"] and b["dram"] < 0.6 * a["dram"]


DEEP = """builtin.module {
  func.func @main(%x: tensor<32x4096xf16>, %w: tensor<4096x32xf16>) -> tensor<32x32xf16>
      attributes {npu.inputs = ["x", "w"], npu.outputs = ["y"]} {
    %y = npu_graph.matmul %x, %w : (tensor<32x4096xf16>, tensor<4096x32xf16>) -> tensor<32x32xf16> loc("mm")
    func.return %y : tensor<32x32xf16>
  }
}"""


def test_f16_product_sums_its_k_steps_in_f32():
    """A 4096-deep f16 product in 16 KiB (many K steps) sums in an f32 accumulator and
    rounds once, at the end: every output is the exact sum rounded to f16 (a 16-bit
    running sum erred 8x that)."""
    module = Parser(make_context(), DEEP).parse_module()
    compile_module(module, parse_arch_spec("default,cores=1,sram_bytes=16384"))
    assert element_types(module) == {"f16", "f32"}
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((32, 4096)).astype(np.float16), rng.standard_normal((4096, 32)).astype(np.float16)
    y = run(module, {}, {"x": x, "w": w}).outputs["y"].astype(np.float64)
    exact = x.astype(np.float64) @ w.astype(np.float64)
    one_rounding = np.abs(exact.astype(np.float16).astype(np.float64) - exact)
    assert np.all(np.abs(y - exact) <= one_rounding + np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64))


def test_f16_kernel_runs_within_f16_rounding():
    module = compiled("f16", "default,cores=1,sram_bytes=32768")
    ins = random_inputs(signature(module), seed=0)
    assert all(v.dtype == np.float16 for v in ins.values())
    out = run(module, {}, ins).outputs["y"]
    assert out.dtype == np.float16
    x, w, b = (ins[k].astype(np.float64) for k in ("x", "w", "b"))
    ref = np.maximum(x @ w + b, 0)
    # f16 storage (rounded at each reduction step's store) with f32 arithmetic: a few ulps of the sums' scale
    assert np.allclose(out.astype(np.float64), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


INTEGER_MATMUL = """builtin.module {
  func.func @main(%x: tensor<30x100xi8>, %w: tensor<100x50xi8>) -> tensor<30x50xi32>
      attributes {npu.inputs = ["x", "w"], npu.outputs = ["y"]} {
    %y = npu_graph.matmul %x, %w {input_zero_point = 5 : i64, weight_zero_point = -3 : i64}
        : (tensor<30x100xi8>, tensor<100x50xi8>) -> tensor<30x50xi32> loc("mm")
    func.return %y : tensor<30x50xi32>
  }
}"""


@pytest.mark.parametrize("sram", [2048, 4096, 16384])
def test_integer_matmul_exact_over_k_tiles(sram: int):
    """i8 x i8 -> i32 with zero points, K = 100 cut into tiles that leave a remainder in
    small SRAMs: the windows read the zero points past K's end, so the padded products
    are (zx - zx)(zw - zw) = 0 and the result is exact."""
    module = Parser(make_context(), INTEGER_MATMUL).parse_module()
    compile_module(module, parse_arch_spec(f"default,cores=1,sram_bytes={sram}"))
    assert element_types(module) <= {"i8", "i32"}
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (30, 100)).astype(np.int8)
    w = rng.integers(-128, 128, (100, 50)).astype(np.int8)
    y = run(module, {}, {"x": x, "w": w}).outputs["y"]
    assert y.dtype == np.int32
    assert np.array_equal(y, (x.astype(np.int64) - 5) @ (w.astype(np.int64) + 3))

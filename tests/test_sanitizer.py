"""The memory sanitizer (`sim/sanitizer.py`): it reports the in-place-through-a-view
bug of issue 13 when the fix is switched off, a DRAM plan that overlaps live
buffers, a read of SRAM a DMA has not landed yet, and stays silent on correct
programs (every other test runs with it on, `tests/conftest.py`)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import lowering.tile.group_plan
from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.arch import Arch, parse_arch_spec
from npu_dialects.weights import weights_of
from runtime.run import random_inputs
from sim import SimError, signature, simulate
from tests.simkit import CONSTS, D, S, module, task
from tools.testkit.e2e import onnxruntime_outputs
from tools.testkit.fuzz_graphs import view_bug_models


def view_bug_model() -> onnx.ModelProto:
    """Issue 13's smallest case: e = Exp(x) is read through a Reshape by an Add and
    directly by a Neg."""
    return view_bug_models()["reshape_add_neg"]


def compiled(model: onnx.ModelProto, arch: Arch):
    m, w = import_model(model, arch)
    compile_module(m, arch, w)
    return m, weights_of(m), random_inputs(signature(m), seed=0)


@pytest.mark.parametrize("spec", ["default", "default,cores=1", "default,sram_bytes=65536"])
def test_sanitizer_reports_the_view_bug_with_the_fix_reverted(spec, monkeypatch):
    arch = parse_arch_spec(spec)
    model = view_bug_model()
    monkeypatch.setattr(lowering.tile.group_plan, "UNSAFE_VIEW_REUSE", True)
    m, w, ins = compiled(model, arch)
    ref = onnxruntime_outputs(model, ins)
    wrong = simulate(m, w, ins, arch, sanitize=False)  # the bug: wrong numbers, silently
    assert np.abs(wrong.outputs["n"] - ref["n"]).max() > 0.5
    with pytest.raises(SimError) as e:
        simulate(m, w, ins, arch, sanitize=True)
    msg = str(e.value)
    assert msg.startswith("sanitizer: task 'exp..neg'")
    # the reader (neg), the value it expected (exp's), the write that destroyed it (add), the bytes
    assert "'npu_compute.eltwise' (ONNX node neg)" in msg and "expecting SRAM value" in msg
    assert "(ONNX node exp) of task" in msg
    assert "'npu_compute.eltwise' (ONNX node add)" in msg and "overwrote them with SRAM value" in msg
    assert "reads bytes [" in msg and "of SRAM of core 0" in msg
    assert "address range:" in (e.value.details or "")


def copy_chain(b_offset: int) -> str:
    """p copies x to %a, q copies %a to %b, r copies %b to y, s copies %a to z (so %a is
    read after %b is written): %a at arena byte 0, %b at `b_offset`."""
    def copy(name: str, src: str, dst: str) -> str:
        return task(name, 0, f"{CONSTS}\n%t = npu_dma.copy %{src}[%c0] -> %{dst}[%c0] "
                             f"{{sizes = array<i64: 16>}} : {D(16)} -> {D(16)}\nnpu_dma.wait %t")
    return (f"%a = npu_task.alloc {{offset = 0 : i64}} : {D(16)}\n"
            f"%b = npu_task.alloc {{offset = {b_offset} : i64}} : {D(16)}\n"
            + copy("p", "x", "a") + copy("q", "a", "b") + copy("r", "b", "y") + copy("s", "a", "z"))


def test_sanitizer_reports_a_dram_plan_that_overlaps_live_buffers():
    x = np.arange(16, dtype=np.float32)
    io = ([("x", D(16))], [("y", D(16)), ("z", D(16))])
    ok = simulate(module(*io, copy_chain(64)), {}, {"x": x}, Arch(), sanitize=True)
    np.testing.assert_array_equal(ok.outputs["z"], x)
    # %b over the second half of %a, which s still reads after q wrote %b
    with pytest.raises(SimError) as e:
        simulate(module(*io, copy_chain(32)), {}, {"x": x}, Arch(), sanitize=True)
    msg = str(e.value)
    assert msg.startswith("sanitizer: task 's' (ONNX node s): 'npu_dma.copy' (op #")
    assert "reads bytes [32, 64) of arena expecting DRAM buffer [16]" in msg
    assert "but task 'q' (ONNX node q): 'npu_dma.copy'" in msg and "overwrote them with DRAM buffer [16]" in msg


def test_sanitizer_reports_sram_read_before_its_dma_lands():
    body = (f"{CONSTS}\n%s = npu_task.sram {{offset = 0 : i64}} : {S(16)}\n"
            f"%o = npu_task.sram {{offset = 64 : i64}} : {S(16)}\n"
            f"%t = npu_dma.copy %x[%c0] -> %s[%c0] {{sizes = array<i64: 16>}} : {D(16)} -> {S(16)}\n"
            f"npu_compute.eltwise \"neg\" %s -> %o : {S(16)} -> {S(16)}\n"
            f"npu_dma.wait %t\n"
            f"%u = npu_dma.copy %o[%c0] -> %y[%c0] {{sizes = array<i64: 16>}} : {S(16)} -> {D(16)}\n"
            f"npu_dma.wait %u")
    m = module([("x", D(16))], [("y", D(16))], task("k", 0, body))
    with pytest.raises(SimError, match=r"sanitizer: task 'k' \(ONNX node k\): 'npu_compute.eltwise' \(op #\d+ in "
                                       r"the task\) reads bytes \[0, 64\) of SRAM of core 0 expecting SRAM buffer "
                                       r".* but no write has defined them \(read before written\)"):
        simulate(m, {}, {"x": np.ones(16, np.float32)}, Arch(), sanitize=True)


def test_sanitizer_is_off_unless_asked(monkeypatch):
    monkeypatch.delenv("NPU_SANITIZE")
    monkeypatch.setattr(lowering.tile.group_plan, "UNSAFE_VIEW_REUSE", True)
    arch = Arch()
    m, w, ins = compiled(view_bug_model(), arch)
    simulate(m, w, ins, arch)  # wrong numbers, but no sanitizer unless asked
    with pytest.raises(SimError, match="sanitizer"):
        simulate(m, w, ins, arch, sanitize=True)


def test_sanitizer_reports_a_write_into_the_weights():
    body = (f"{CONSTS}\n%t = npu_dma.copy %x[%c0] -> %w[%c0] {{sizes = array<i64: 16>}} : {D(16)} -> {D(16)}\n"
            "npu_dma.wait %t")
    m = module([("x", D(16))], [("y", D(16))], f'%w = npu_task.weight "w" {{offset = 0 : i64}} : {D(16)}\n'
               + task("k", 0, body))
    with pytest.raises(SimError, match=r"sanitizer: task 'k' \(ONNX node k\): 'npu_dma.copy' \(op #\d+ in the task\) "
                                       r"writes weight 'w' in the DRAM weights region, which only the host writes"):
        simulate(m, {"w": np.zeros(16, np.float32)}, {"x": np.ones(16, np.float32)}, Arch(), sanitize=True)


def test_sanitizer_names_the_values_when_the_device_runtime_runs_the_program():
    """The device runtime (`npu-run`'s path) numbers each loaded program's values in its
    engine's table: the report names them (it raised an IndexError looking them up in an
    empty table; found by the fuzzer)."""
    from runtime.device import DeviceError, run_module
    body = (f"{CONSTS}\n%s = npu_task.sram {{offset = 0 : i64}} : {S(4096)}\n"
            f"%t = npu_dma.copy %x[%c0] -> %s[%c0] {{sizes = array<i64: 4096>}} : {D(4096)} -> {S(4096)}\n"
            f"%v = npu_task.sram {{offset = 0 : i64}} : {S(16)}\n"
            f"%u = npu_dma.copy %v[%c0] -> %y[%c0] {{sizes = array<i64: 16>}} : {S(16)} -> {D(16)}\n"
            f"npu_dma.wait %t\nnpu_dma.wait %u")  # (the store, small, lands before the load)
    m = module([("x", D(4096))], [("y", D(16))], task("k", 0, body))
    with pytest.raises((DeviceError, SimError), match=r"'npu_dma.copy' .* reads bytes \[0, 64\) of SRAM of core 0 "
                                                      r"expecting SRAM buffer .* \(read before written\)"):
        run_module(m, {}, {"x": np.ones(4096, np.float32)}, Arch(), sanitize=True)


@pytest.mark.parametrize("timing_only", [False, True])
def test_a_finished_run_leaves_no_reference_cycle(timing_only):
    """The engine and its sanitizer must not hold each other: a cycle kept a finished
    run's whole program (closures, buffers, records) until the cyclic collector's next
    full pass, a pause charged to whatever ran then (~0.1 s after a ResNet-50 run)."""
    import gc
    x = np.arange(16, dtype=np.float32)
    m = module([("x", D(16))], [("y", D(16)), ("z", D(16))], copy_chain(64))
    gc.collect()
    gc.disable()
    try:
        res = simulate(m, {}, {} if timing_only else {"x": x}, Arch(), sanitize=not timing_only,
                       timing_only=timing_only)
        del res
        assert gc.collect() == 0
    finally:
        gc.enable()

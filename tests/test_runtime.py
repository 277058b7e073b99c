"""runtime.run: input validation and the run report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from npu_dialects.arch import Arch
from runtime.run import RunError, random_inputs, run
from sim import SimError, signature
from tests.simkit import CONSTS, D, S, module, task
from tests.test_sim import big_copy_task, matmul_module

ARCH = Arch()


@pytest.fixture
def mm():
    rng = np.random.default_rng(0)
    return matmul_module(10, 20, 12, 4, 8, 8), {"w": rng.standard_normal((20, 12)).astype(np.float32)}


def test_run_outputs_and_report_keys(mm):
    m, weights = mm
    x = np.random.default_rng(1).standard_normal((10, 20)).astype(np.float32)
    res = run(m, weights, {"x": x}, ARCH)
    np.testing.assert_allclose(res.outputs["y"], x @ weights["w"], rtol=1e-5, atol=1e-5)
    rep = res.report
    for key in ("arch", "cycles", "time_us", "tasks", "dram_bytes_read", "dram_bytes_written",
                "utilization", "kernels"):
        assert key in rep, key
    assert rep["arch"] == ARCH.to_dict() and rep["arch"]["cube"] == "16x16x16"
    assert rep["cycles"] == res.sim.cycles > 0
    assert rep["time_us"] == pytest.approx(rep["cycles"] / 1e3)
    assert rep["tasks"] == 1
    assert rep["dram_bytes_read"] == (10 * 20 * 2 + 20 * 12 * 3) * 4
    assert rep["dram_bytes_written"] == 10 * 12 * 4
    assert set(rep["utilization"]) == {"cube", "vector", "dma"}
    assert rep["utilization"]["cube"] == pytest.approx(18 / (4 * rep["cycles"]))
    assert all(0 <= v <= 1 for v in rep["utilization"].values())
    (k,) = rep["kernels"]
    assert k["name"] == "mm" and k["onnx_nodes"] == ["gemm0"] and k["cores"] == [0]
    assert k["start"] == 0 and k["end"] == pytest.approx(rep["cycles"], abs=1)
    assert k["dram_bytes_read"] == rep["dram_bytes_read"] and k["dram_bytes_written"] == rep["dram_bytes_written"]
    # its minimum: x, w and y once; it re-reads x per column tile (2) and w per row tile (3)
    assert k["min_dram_bytes"] == (10 * 20 + 20 * 12 + 10 * 12) * 4
    assert k["dram_vs_min"] == pytest.approx((rep["dram_bytes_read"] + rep["dram_bytes_written"]) / k["min_dram_bytes"],
                                             abs=1e-4)
    json.dumps(rep)  # plain JSON types only
    assert res.trace is None


def test_dma_utilization_counts_bytes_over_bandwidth():
    n = 32768
    m = module([("x", D(n))], [], big_copy_task("a", 0, "x", n) + big_copy_task("b", 1, "x", n))
    rep = run(m, {}, {"x": np.ones(n, np.float32)}, ARCH).report
    assert rep["utilization"]["dma"] == pytest.approx(2 * n * 4 / (128 * rep["cycles"]))
    assert rep["utilization"]["cube"] == 0 and rep["utilization"]["vector"] == 0
    assert [k["name"] for k in rep["kernels"]] == ["a", "b"]


def test_trace_is_returned_when_asked(mm):
    m, weights = mm
    res = run(m, weights, {"x": np.zeros((10, 20), np.float32)}, ARCH, trace=True)
    assert res.trace is not None and res.trace["displayTimeUnit"] == "ns"
    assert any(e["ph"] == "X" for e in res.trace["traceEvents"])


def test_missing_input(mm):
    m, weights = mm
    with pytest.raises(RunError, match=r"^missing input 'x' \(the model's inputs: 'x' \[10, 20\]\)$"):
        run(m, weights, {}, ARCH)


def test_unknown_input(mm):
    m, weights = mm
    with pytest.raises(RunError, match=r"^unknown input 'X' \(the model's inputs: 'x' \[10, 20\]\)$"):
        run(m, weights, {"x": np.zeros((10, 20), np.float32), "X": np.zeros(1)}, ARCH)


def test_wrong_shape(mm):
    m, weights = mm
    with pytest.raises(RunError, match=r"^input 'x' has shape \[20, 10\], expected \[10, 20\]$"):
        run(m, weights, {"x": np.zeros((20, 10), np.float32)}, ARCH)


def test_wrong_dtype_and_float64_cast(mm):
    m, weights = mm
    with pytest.raises(RunError, match=r"^input 'x' has dtype int64, expected float32$"):
        run(m, weights, {"x": np.zeros((10, 20), np.int64)}, ARCH)
    x = np.random.default_rng(2).standard_normal((10, 20))  # float64
    res = run(m, weights, {"x": x}, ARCH)
    assert res.outputs["y"].dtype == np.float32
    np.testing.assert_allclose(res.outputs["y"], x.astype(np.float32) @ weights["w"], rtol=1e-5, atol=1e-5)


def test_random_inputs_are_seeded(mm):
    m, _ = mm
    sig = signature(m)
    a, b, c = random_inputs(sig, 0), random_inputs(sig, 0), random_inputs(sig, 1)
    assert a["x"].shape == (10, 20) and a["x"].dtype == np.float32
    np.testing.assert_array_equal(a["x"], b["x"])
    assert not np.array_equal(a["x"], c["x"])


def test_arch_defaults_to_the_module_attribute():
    body = task("f", 0, f"%f = npu_task.sram {{offset = 0 : i64}} : {S(64)}\n"
                        f"npu_compute.fill %f {{value = 1.0 : f32}} : {S(64)}")
    m = module([], [], body, attrs="npu.arch = #npu.arch<cores = 1, vector_lanes = 16>")
    rep = run(m, {}, {}).report
    assert rep["arch"]["cores"] == 1 and rep["cycles"] == 4
    with pytest.raises(SimError, match="runs on core 2 but the arch has cores=1"):
        run(module([], [], task("g", 2, CONSTS), attrs="npu.arch = #npu.arch<cores = 1>", verify=False), {}, {})


def test_report_has_roofline_memory_and_events():
    """Compiled models carry their work and memory plan into the report."""
    from tools.testkit import models
    from tools.testkit.e2e import compile_and_run

    # without layer groups, so that kernels are split across cores and need events
    res, _ = compile_and_run(models.lenet(batch=8), "default", disable=("npu-layer-group",))
    r = res.report
    # LeNet-5 at batch 8: conv 117,600 + 240,000 MACs, fc 58,920 MACs per sample
    assert r["model_macs"] == 8 * 416_520
    assert r["roofline_cycles"] >= r["model_min_dram_bytes"] // r["arch"]["dram_bw"]
    assert r["kernel_min_dram_bytes"] > r["model_min_dram_bytes"]  # LeNet's kernels pass activations via DRAM
    assert r["model_min_dram_bytes"] <= r["fusion_floor_dram_bytes"] < r["kernel_min_dram_bytes"]
    assert r["cycles"] >= r["roofline_cycles"] and r["roofline_ratio"] >= 1.0
    m = r["memory"]
    assert m["dram_lower_bound_bytes"] <= m["dram_arena_bytes"]
    assert m["weights_bytes"] > 0 and len(m["sram_peak_bytes"]) == r["arch"]["cores"]
    assert 0 < max(m["sram_peak_bytes"]) <= r["arch"]["sram_bytes"]
    assert r["events_used"] >= 1  # lenet at batch 8 splits kernels across cores

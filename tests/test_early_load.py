"""npu-early-load and the task contract it relies on: a task's `early` ops (weight loads
into SRAM its core's previous task never touches) run while that task runs; the
outputs do not change; a false claim is caught by the memory sanitizer."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.parser import Parser

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from lowering.task.early_load import EarlyLoad
from lowering.task.unit_sync import sync_units
from npu_dialects import make_context
from npu_dialects.arch import parse_arch_spec
from npu_dialects.task import TaskOp
from sim import SimError, simulate
from tools.testkit import models
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs

CASE = Path(__file__).parent / "filecheck" / "npu-early-load" / "early_load.mlir"


def _module(text: str | None = None):
    ctx = make_context()
    return ctx, Parser(ctx, text or CASE.read_text()).parse_module()


def _inputs() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).standard_normal((16, 128), dtype=np.float32)}


def test_the_next_tasks_weight_load_runs_during_the_previous_task():
    ctx, module = _module()
    plain = module.clone()
    sync_units(plain)  # (the fences between a core's units the pipeline inserts after this pass)
    before = simulate(plain, {}, _inputs(), sanitize=True)
    EarlyLoad().apply(ctx, module)
    sync_units(module)
    after = simulate(module, {}, _inputs(), sanitize=True, trace=True)
    assert (before.cycles, after.cycles) == (6968, 6840)
    assert after.outputs["y"].tobytes() == before.outputs["y"].tobytes()
    np.testing.assert_allclose(after.outputs["y"], (np.maximum(_inputs()["x"], 0) + 0.5) * 2.0)
    a, b, c = after.tasks
    loads = {e["args"]["src"]: e for e in after.trace
             if e.get("ph") == "X" and e["name"].startswith("dma dram->sram")}
    # b's weight landed while a computed; c's while b did; each task still starts when the one before ends
    assert a.start * 1e-3 < loads["weight 'w'"]["ts"] and loads["weight 'w'"]["ts"] + loads["weight 'w'"]["dur"] < a.end * 1e-3
    assert b.start * 1e-3 < loads["weight 'v'"]["ts"] and loads["weight 'v'"]["ts"] + loads["weight 'v'"]["dur"] < b.end * 1e-3
    assert (b.ready, c.ready) == (a.end, b.end)


def test_an_early_load_into_bytes_the_previous_task_still_reads_is_caught():
    """Claim c's weight early at bytes b still uses (no mirroring), b handing its core
    over after its loads: the load lands during
    b's add, whose result b then stores: the sanitizer stops the run naming the value
    destroyed and the early load that destroyed it."""
    _, module = _module()
    _, b, c = [t for t in module.walk() if isinstance(t, TaskOp)]
    b.handoff = IntegerAttr(7, i64)  # (after its waits for its loads)
    c.early = IntegerAttr(3, i64)  # (its constant, buffer and the load of v into [0, 8192))
    sync_units(module)
    with pytest.raises(SimError, match=re.escape("task 'b': 'npu_dma.copy' (op #10 in the task) reads bytes [0, 8192) "
                                                 "of SRAM of core 0 expecting SRAM buffer") + ".* but task 'c': 'npu_dma.copy'"):
        simulate(module, {}, _inputs(), sanitize=True)


def test_mobilenet_with_early_loads_matches_onnxruntime_and_itself_without():
    model = models.mobilenet_v2(resolution=96, width=0.5)
    with_, inputs = compile_and_run(model)
    without, _ = compile_and_run(model, inputs=inputs, disable=("npu-early-load",))
    assert all(with_.outputs[k].tobytes() == without.outputs[k].tobytes() for k in with_.outputs)
    for k, v in onnxruntime_outputs(model, inputs).items():
        np.testing.assert_allclose(with_.outputs[k], v, rtol=1e-3, atol=1e-4)
    assert with_.report["cycles"] < without.report["cycles"]  # (92,224 against 92,448: 1 of its 14 tasks loads early)


def test_two_streams_on_a_core_run_no_early_loads_and_keep_their_outputs(monkeypatch):
    """In full-async mode with two streams each core has two lanes: a task of the other
    stream may run between a task and the one before it, so no task loads early (every
    DMA is issued by its core's running task), and both outputs stay right."""
    from runtime.device import Runtime
    from sim.engine import Engine

    early: list[str] = []
    issue = Engine.issue

    def watched(self, c, ch, plan, task=None):
        if task is not None and task is not c.task:
            early.append(task.kernel)
        return issue(self, c, ch, plan, task)

    monkeypatch.setattr(Engine, "issue", watched)
    ctx, module = _module()
    EarlyLoad().apply(ctx, module)
    alone = Runtime(mode="full-async")
    alone.submit(alone.load(module, {}), _inputs(), stream=alone.stream())
    alone.synchronize()
    assert early == ["b", "c"]  # (one lane: b's and c's weights load during the task before)
    early.clear()
    rt = Runtime(mode="full-async")
    exe = rt.load(module, {})
    reqs = [rt.submit(exe, _inputs(), stream=rt.stream()) for _ in range(2)]
    rt.synchronize()
    assert early == []
    for r in reqs:
        assert r.outputs is not None
        np.testing.assert_allclose(r.outputs["y"], (np.maximum(_inputs()["x"], 0) + 0.5) * 2.0)


@pytest.mark.parametrize("arch", ["default,dma_latency=20,sram_bytes=65536", "default,dma_latency=20,cores=2"])
def test_many_early_loads_on_small_sram_match_onnxruntime(arch):
    """A short DMA latency lowers the size rule (dram_bw x dma_latency = 2,560 bytes) and
    64 KiB of SRAM makes many tasks: MobileNetV2 (64 x 64, width 0.5) then loads early
    in at least 10 tasks (13 at this writing; 2 or more on two cores), sanitized
    (conftest) and against onnxruntime."""
    model = models.mobilenet_v2(resolution=64, width=0.5)
    module, weights = import_model(model, parse_arch_spec(arch))
    compile_module(module, parse_arch_spec(arch), weights, verify_each=False)
    assert sum(1 for t in module.walk() if isinstance(t, TaskOp) and t.early_ops) >= (10 if "65536" in arch else 2)
    res, inputs = compile_and_run(model, arch)
    for k, v in onnxruntime_outputs(model, inputs).items():
        np.testing.assert_allclose(res.outputs[k], v, rtol=1e-3, atol=1e-4)

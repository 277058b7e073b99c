"""npu-prefetch and the task contract it relies on: a task's `prefetch` ops run before
its waits (the simulator issues them when the core reaches the task), the outputs do
not change, and a task whose events have already arrived runs as it did."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.parser import Parser

from lowering.task.prefetch import Prefetch
from lowering.task.unit_sync import sync_units
from npu_dialects import make_context
from npu_dialects.graph import int_array
from npu_dialects.task import TaskOp
from sim import simulate
from tools.testkit import models
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs

CASE = Path(__file__).parent / "filecheck" / "npu-prefetch" / "prefetch.mlir"


def _module():
    ctx = make_context()
    return ctx, Parser(ctx, CASE.read_text()).parse_module()


def _inputs() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).standard_normal((64, 128), dtype=np.float32)}


def test_the_weight_load_runs_while_the_task_waits():
    ctx, module = _module()
    plain = module.clone()
    sync_units(plain)  # (the fences between a core's units the pipeline inserts after this pass)
    before = simulate(plain, {}, _inputs())
    Prefetch().apply(ctx, module)
    sync_units(module)
    after = simulate(module, {}, _inputs())
    assert (before.cycles, after.cycles) == (2540, 2412)
    assert after.outputs["y"].tobytes() == before.outputs["y"].tobytes()
    q = after.tasks[1]
    assert q.ready == q.body_start == 0 and q.start == 1848  # (its body began at once; core 0's event came at 1848)
    # idle at its gate for 624 of the 1848 cycles it waited (its weight load in flight the rest): not its work
    assert q.gated == 624 and q.end - q.body_start - q.gated == 1788


def test_a_prefetch_whose_events_have_arrived_changes_nothing():
    """With the producer on the same core (no waits: queue order), a prefetch mark is
    a no-op: the gate passes at once."""
    ctx, module = _module()
    Prefetch().apply(ctx, module)
    tasks = [t for t in module.walk() if isinstance(t, TaskOp)]
    assert tasks[1].prefetch_ops == 5
    for t in tasks:
        t.core = tasks[0].core
        t.waits = t.signals = int_array(())
    module.verify()
    marked = simulate(module, {}, _inputs())
    tasks[1].prefetch = IntegerAttr(0, i64)
    plain = simulate(module, {}, _inputs())
    assert marked.cycles == plain.cycles
    assert marked.outputs["y"].tobytes() == plain.outputs["y"].tobytes()


def test_mobilenet_with_prefetch_matches_onnxruntime_and_itself_without():
    model = models.mobilenet_v2(resolution=96, width=0.5)
    with_, inputs = compile_and_run(model)
    without, _ = compile_and_run(model, inputs=inputs, disable=("npu-prefetch", "npu-early-load"))
    assert all(with_.outputs[k].tobytes() == without.outputs[k].tobytes() for k in with_.outputs)
    want = onnxruntime_outputs(model, inputs)
    for k, v in want.items():
        np.testing.assert_allclose(with_.outputs[k], v, rtol=1e-3, atol=1e-4)
    assert with_.report["cycles"] < without.report["cycles"]

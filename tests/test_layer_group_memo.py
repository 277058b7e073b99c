"""npu-layer-group's run search plans runs with equal keys once (`RunSearch.run_key`):
an unrolled recurrent net's time steps repeat, so most runs borrow an earlier run's
plan. The program must not change: the same IR with the memo on and off, the chosen
groups planned for themselves (`RunSearch.resolve`), the outputs onnxruntime's."""

from __future__ import annotations

import numpy as np
import pytest

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from lowering.tile.layer_group import LayerGroup, RunSearch
from npu_dialects.arch import parse_arch_spec
from tools.testkit import models
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs


def unrolled_rnn(steps: int):
    """x[steps, 1, 16] -> h_t = tanh(x_t W + h_{t-1} R) for t < steps (x_t a Slice of row t,
    h_0 a constant) -> y = concat(h_1..h_steps) [steps, 16]."""
    g = models.Graph(seed=3)
    w, r = g.weight("W", (16, 16)), g.weight("R", (16, 16))
    h = g.const("h_init", np.full((1, 16), 0.1, np.float32))
    shape = g.const("shape", np.array([1, 16], np.int64))
    hs = []
    for t in range(steps):
        xt = g.node("Slice", ["x", g.const(f"st{t}", np.array([t])), g.const(f"en{t}", np.array([t + 1])),
                              g.const(f"ax{t}", np.array([0]))], f"x{t}")
        xt = g.node("Reshape", [xt, shape], f"xr{t}")
        a = g.node("MatMul", [xt, w], f"a{t}")
        b = g.node("MatMul", [h, r], f"b{t}")
        h = g.node("Tanh", [g.node("Add", [a, b], f"s{t}_")], f"h{t}")
        hs.append(h)
    g.node("Concat", hs, "y", axis=0)
    return g.model("unrolled_rnn", {"x": [steps, 1, 16]}, {"y": [steps, 16]}, 17)


def test_equal_runs_plan_once_and_the_program_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    model = unrolled_rnn(8)
    arch = parse_arch_spec("default")
    seen: list[tuple[int, dict, list]] = []
    segments, plan_run = RunSearch.segments, LayerGroup.plan_run
    calls = [0]

    def spy(self: RunSearch) -> list[tuple[int, int]]:
        calls[0] = 0
        out = segments(self)
        seen.append((calls[0], dict(self.borrowed), out))
        return out

    def counted(self: LayerGroup, *args, **kwargs):
        calls[0] += 1
        return plan_run(self, *args, **kwargs)

    monkeypatch.setattr(RunSearch, "segments", spy)
    monkeypatch.setattr(LayerGroup, "plan_run", counted)
    text = {}
    for memo in (True, False):
        monkeypatch.setattr(RunSearch, "MEMO", memo)
        module, weights = import_model(model, arch)
        compile_module(module, arch, weights, group_max_kernels=5)  # (groups that repeat step by step)
        text[memo] = str(module)
    assert text[True] == text[False]
    (planned, borrowed, chosen), (all_runs, none, _) = seen
    resolved = [s for s in chosen if s in borrowed]  # (`resolve` planned them for themselves)
    assert not none and resolved and planned == all_runs - len(borrowed) + len(resolved)
    assert planned < all_runs / 2, (planned, all_runs)  # (the steps repeat)


def test_an_unrolled_rnn_runs_as_onnxruntime_does() -> None:
    model = unrolled_rnn(8)
    result, inputs = compile_and_run(model)
    want = onnxruntime_outputs(model, inputs)["y"]
    np.testing.assert_allclose(result.outputs["y"], want, rtol=1e-5, atol=1e-5)

"""Differential fuzzing: random small ONNX graphs (`tools/testkit/fuzz_graphs.py`) compiled
and simulated (sanitizer on) on three archs must match onnxruntime, or be refused
with a diagnosed error; plus the fixed reproducers of the view / in-place bug.

Reproduce a failure outside pytest:

    python -c "import onnx; from tools.testkit.fuzz_graphs import random_model; onnx.save(random_model(SEED)[0], 'f.onnx')"
    NPU_SANITIZE=1 npu-run f.onnx --arch ARCH --check

or `python bench/fuzz.py --graphs 1 --seed0 SEED --arch ARCH`.
"""

from __future__ import annotations

import onnx
import pytest

from tools.testkit.fuzz_graphs import (
    ARCHS,
    Outcome,
    check_model,
    random_model,
    view_bug_models,
)

SEEDS = range(250)  # about 75 s for the whole file on 2 cores
FAILING = ("mismatch", "sanitizer", "crash")


def _describe(model: onnx.ModelProto, arch: str, outcome: Outcome) -> str:
    nodes = ", ".join(f"{n.op_type} {n.name}" for n in model.graph.node)
    return f"{outcome.status} on arch '{arch}'\nnodes: {nodes}\n{outcome.message}"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seed", SEEDS)
def test_random_graph(seed: int, arch: str) -> None:
    model, _ = random_model(seed)
    outcome = check_model(model, arch)
    assert outcome.status not in FAILING, f"seed {seed}: " + _describe(model, arch, outcome)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(view_bug_models()))
def test_view_bug_model(name: str, arch: str) -> None:
    model = view_bug_models()[name]
    outcome = check_model(model, arch)
    assert outcome.status == "ok", f"{name}: " + _describe(model, arch, outcome)


def test_generator_makes_multi_reader_views() -> None:
    hits = sum(random_model(seed)[1]["views_multi_reader"] for seed in range(50))
    assert hits >= 15, f"only {hits} of the first 50 graphs read a viewed tensor twice"

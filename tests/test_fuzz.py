"""Differential fuzzing: random ONNX graphs over the importer's supported op types
(`tools/testkit/fuzz_graphs.py`) compiled and simulated (sanitizer on) on three archs
must match onnxruntime, or be refused with a diagnosed error; the fixed reproducers
of the view / in-place bug; the generator reaches every supported op type; and the
shrinker (`tools/testkit/fuzz_shrink.py`) cuts a graph failing on a planted bug down
to the bug's node.

Reproduce a failure outside pytest:

    python bench/fuzz.py --graphs 1 --seed0 SEED --arch ARCH   # shrinks it, prints the command

or `python -c "import onnx; from tools.testkit.fuzz_graphs import random_model;
onnx.save(random_model(SEED)[0], 'f.onnx')"` then `NPU_SANITIZE=1 npu-run f.onnx --arch ARCH --check`.
"""

from __future__ import annotations

import onnx
import pytest

from lowering.importer import onnx_import
from lowering.importer.onnx_import import supported_op_types
from tools.testkit.fuzz_graphs import (
    ARCHS,
    Outcome,
    check_model,
    random_model,
    view_bug_models,
)
from tools.testkit.fuzz_ops import EXCLUDED
from tools.testkit.fuzz_shrink import same_failure, shrink

SEEDS = range(350)  # about 60 s for the whole file on 2 cores (the view-bug models, the shrinker: 5 s)


def _describe(model: onnx.ModelProto, arch: str, outcome: Outcome) -> str:
    nodes = ", ".join(f"{n.op_type} {n.name}" for n in model.graph.node)
    return f"{outcome.status} on arch '{arch}'\nnodes: {nodes}\n{outcome.message}"


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("seed", SEEDS)
def test_random_graph(seed: int, arch: str) -> None:
    model, _ = random_model(seed)
    outcome = check_model(model, arch)
    assert not outcome.failed, f"seed {seed}: " + _describe(model, arch, outcome)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(view_bug_models()))
def test_view_bug_model(name: str, arch: str) -> None:
    model = view_bug_models()[name]
    outcome = check_model(model, arch)
    assert outcome.status == "ok", f"{name}: " + _describe(model, arch, outcome)


def test_generator_makes_multi_reader_views() -> None:
    hits = sum(random_model(seed)[1]["views_multi_reader"] for seed in range(50))
    assert hits >= 10, f"only {hits} of the first 50 graphs read a viewed tensor twice"


def test_generator_covers_the_supported_op_types() -> None:
    """Every op type the importer supports (but those `EXCLUDED`, each with its reason)
    is drawn within the first 400 graphs, at opsets 13, 17 and 21 or later."""
    seen: set[str] = set()
    opsets: set[int] = set()
    for seed in range(400):
        _, stats = random_model(seed)
        seen.update(stats["op_types"])
        opsets.add(stats["opset"])
    missing = set(supported_op_types(functions_too=True)) - seen - set(EXCLUDED)
    assert not missing, f"never drawn: {sorted(missing)}"
    assert {13, 17} <= opsets and max(opsets) >= 21


def test_shrinker_cuts_a_planted_bug_down_to_its_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sigmoid converted as Tanh (a planted bug): a random graph using it mismatches, and
    the shrinker reduces it to at most 2 nodes, the Sigmoid among them."""
    seed, model = next((s, m) for s in range(1000) for m in [random_model(s)[0]]
                       if len(m.graph.node) >= 8 and "Sigmoid" in {n.op_type for n in m.graph.node})
    monkeypatch.setitem(onnx_import.CONVERTERS, "Sigmoid", onnx_import.CONVERTERS["Tanh"])
    outcome = check_model(model, "default")
    assert outcome.status == "mismatch", f"seed {seed}: the planted bug went unnoticed: {outcome}"
    small = shrink(model, same_failure("default", outcome), seconds=120)
    ops = [n.op_type for n in small.graph.node]
    assert len(ops) <= 2 and "Sigmoid" in ops, f"seed {seed} ({len(model.graph.node)} nodes) shrank to {ops}"
    assert check_model(small, "default").status == "mismatch"


def test_generator_makes_token_id_inputs() -> None:
    """Some graphs take int64 token ids (a Gather of a 2-40 row table) and masks: the
    runs draw them inside what they index (`npu.input_ranges`), as test_random_graph
    checks against onnxruntime."""
    hits = [seed for seed in range(100) if random_model(seed)[1]["int_inputs"]]
    assert len(hits) >= 5, f"only graphs {hits} of the first 100 take integer inputs"

"""The fuzzer's low-precision graphs (issue 44, `tools/testkit/fuzz_ops/quantized.py`):
a seeded share of graphs are QDQ (QuantizeLinear -> DequantizeLinear around Conv,
MatMul, Gemm, Add, Relu, MaxPool, Reshape, Transpose, Concat), whole float16 graphs, or
float32 graphs with Cast segments to float16 / bfloat16; a few of each compiled,
simulated and judged by their output types (`output_criteria`, `compare_typed`:
QDQ outputs in quantization steps, f16/bf16 by the type's tolerance) match onnxruntime.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tools.testkit.fuzz_graphs import KINDS, check_model, compare_typed, draw_kind, output_criteria, random_model

SEEDS = {"qdq": (0, 14, 23, 54), "f16": (1, 4, 27), "cast": (8, 37, 53)}
"""A few graphs of each low-precision kind (the first ones drawing Conv/MatMul/Concat,
Div/MatMul/MaxPool, casts in the middle of a graph)."""


def _types(model: onnx.ModelProto) -> set[int]:
    g = onnx.shape_inference.infer_shapes(model).graph
    return ({v.type.tensor_type.elem_type for v in [*g.input, *g.value_info, *g.output]}
            | {t.data_type for t in g.initializer}
            | {a.i for n in g.node if n.op_type == "Cast" for a in n.attribute if a.name == "to"})


@pytest.mark.parametrize("kind,seed", [(k, s) for k, seeds in SEEDS.items() for s in seeds])
def test_low_precision_graph_matches_onnxruntime(kind: str, seed: int) -> None:
    model, stats = random_model(seed)
    assert stats["kind"] == kind
    outcome = check_model(model, "default")
    assert outcome.status == "ok", f"seed {seed} ({kind}): {outcome.status}: {outcome.message}"


def test_kinds_are_drawn_in_their_shares() -> None:
    """Kinds come from a stream of their own (`draw_kind`), in about `KINDS`' shares."""
    got = Counter(draw_kind(s) for s in range(2000))
    for kind, share in KINDS:
        assert abs(got[kind] / 2000 - share) < 0.03, (kind, got)


def test_qdq_graphs_are_drawn_as_quantize_static_writes_them() -> None:
    """Over the first 150 seeds: QDQ segments around Conv, MatMul, Gemm, Add, Relu,
    MaxPool, Reshape, Transpose and Concat; int8 and uint8 activations; int8
    per-channel weights (axis) and int32 biases; every output a DequantizeLinear's."""
    ops: Counter[str] = Counter()
    types: set[int] = set()
    per_axis = 0
    for seed in (s for s in range(150) if draw_kind(s) == "qdq"):
        model, stats = random_model(seed)
        ops.update(stats["op_types"])
        types |= _types(model)
        per_axis += sum(n.op_type == "DequantizeLinear" and any(a.name == "axis" for a in n.attribute)
                        for n in model.graph.node)
        assert all(how == "qdq" and step > 0 for how, step in output_criteria(model).values()), seed
    assert {"Conv", "MatMul", "Gemm", "Add", "Relu", "MaxPool", "Reshape", "Transpose", "Concat"} <= set(ops), ops
    assert {TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32} <= types
    assert per_axis >= 5


def test_f16_and_cast_graphs_hold_16_bit_values() -> None:
    """f16 graphs take and give float16 (and hold float16 constants); cast graphs cast to
    float16 and bfloat16 and back, and between the two."""
    f16 = [random_model(s)[0] for s in range(150) if draw_kind(s) == "f16"]
    assert all(i.type.tensor_type.elem_type == TensorProto.FLOAT16 for m in f16 for i in m.graph.input)
    assert all(set(c[0] for c in output_criteria(m).values()) == {"f16"} for m in f16)
    casts = [random_model(s)[0] for s in range(150) if draw_kind(s) == "cast"]
    kinds = Counter(c[0] for m in casts for c in output_criteria(m).values())
    assert kinds["f16"] and kinds["bf16"], kinds
    hops = Counter(tuple(a.i for a in n.attribute if a.name == "to")[0] for m in casts for n in m.graph.node
                   if n.op_type == "Cast")
    assert hops[TensorProto.FLOAT16] and hops[TensorProto.BFLOAT16] and hops[TensorProto.FLOAT], hops


def _dq_model(step: float) -> onnx.ModelProto:
    g = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8])],
        [numpy_helper.from_array(np.array(step, np.float32), "s"),
         numpy_helper.from_array(np.array(0, np.int8), "z")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_qdq_criterion_counts_steps() -> None:
    """Within one step for 99% of the elements (a small output: all but one), none
    beyond three."""
    crit = output_criteria(_dq_model(0.5))
    assert crit == {"y": ("qdq", 0.5)}
    ref = np.zeros(8, np.float32)
    assert compare_typed({"y": ref + 0.5}, {"y": ref}, crit)[0]
    assert compare_typed({"y": np.r_[ref[:7], 1.0]}, {"y": ref}, crit)[0]  # one element 2 steps off
    assert not compare_typed({"y": np.r_[ref[:6], 1.0, 1.0]}, {"y": ref}, crit)[0]
    assert not compare_typed({"y": np.r_[ref[:7], 2.0]}, {"y": ref}, crit)[0]  # 4 steps


def test_f16_criterion_is_the_types_tolerance() -> None:
    ref = np.linspace(-4, 4, 64).astype(np.float16)
    crit = {"y": ("f16", 0.0)}
    assert compare_typed({"y": ref + np.float16(0.01)}, {"y": ref}, crit)[0]  # 0.25% of max |ref|
    assert not compare_typed({"y": ref + np.float16(0.05)}, {"y": ref}, crit)[0]
    assert not compare_typed({"y": ref.astype(np.float32) + 0.01}, {"y": ref.astype(np.float32)},
                             {"y": ("f32", 0.0)})[0]

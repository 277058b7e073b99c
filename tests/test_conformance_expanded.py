"""ONNX's own node tests beyond the conformance table's single-node cases: the repros
of issue 43 item 0 (copied into tests/repros/) and the expanded function cases
(`*_expanded*`: an op written as its function body, a graph of many nodes), each
compiled, simulated and compared with onnxruntime and ONNX's expected outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from lowering.importer import onnx_import
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs

REPROS = Path(__file__).resolve().parent / "repros"


def _repro(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    model = onnx.load(str(REPROS / f"{name}.onnx"))
    with np.load(REPROS / f"{name}.inputs.npz") as z:
        return model, {k: z[k] for k in z.files}


def _matches_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    res, _ = compile_and_run(model, "default", inputs=feeds)
    ref = onnxruntime_outputs(model, feeds)
    for name, want in ref.items():
        np.testing.assert_allclose(res.outputs[name], want, rtol=1e-4, atol=1e-5, err_msg=name)
    return res.outputs


@pytest.mark.parametrize("through_body", [False, True], ids=["converter", "function-body"])
def test_attention_causal_left_window_matches_onnxruntime(through_body, monkeypatch):
    """ONNX's test_attention_local_window (opset-25 Attention, is_causal=1,
    left_window_size=2, 4 queries against 6 keys): the converter's result and that of
    the op's ONNX function body (the path it took before there was a converter) both
    match onnxruntime and ONNX's expected output (was off by 0.164)."""
    model, feeds = _repro("attention_causal_left_window")
    if through_body:
        monkeypatch.delitem(onnx_import.CONVERTERS, "Attention")
    out = _matches_onnxruntime(model, feeds)
    from onnx.reference import ReferenceEvaluator
    expected = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_allclose(out["Y"], expected, rtol=1e-4, atol=1e-5)


def test_flexattention_score_mod_expanded_runs():
    """test_flexattention_score_mod_expanded_ver26: the attention's additive mask is a
    scalar (score_mod adds 0.5 to every score); npu-fuse sized its SRAM row reading the
    mask's last dim (IndexError: tuple index out of range)."""
    model, feeds = _repro("flexattention_score_mod_expanded")
    _matches_onnxruntime(model, feeds)


def test_castlike_of_a_constant_like_a_run_time_tensor_is_a_constant():
    """CastLike reads only its second input's type: a constant first input casts at
    import. ONNX's Attention body casts its -inf fill like the query and pads the mask
    with it; the Pad value 'is computed at run time' refused four of its expanded cases."""
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("CastLike", ["fill", "x"], ["f"]),
             helper.make_node("Pad", ["x", "pads", "f"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array(-7.5, np.float64), "fill"),
                           numpy_helper.from_array(np.array([0, 1, 1, 2], np.int64), "pads")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    _matches_onnxruntime(model, {"x": x})


@pytest.fixture(scope="module")
def node_cases():
    import warnings

    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases()}


@pytest.mark.parametrize("name", [
    "test_attention_4d_diff_heads_mask4d_padded_kv_expanded",
    "test_attention_local_window_ext_cache_rank2_mask_expanded",
    "test_attention_local_window_ext_cache_rank3_head_mask_expanded",
    "test_attention_local_window_ext_cache_rank4_batch_mask_expanded",
    "test_attention_local_window_expanded",
    "test_flexattention_score_mod_expanded_ver26",
    "test_causal_conv_with_state_with_past_state",
])
def test_expanded_and_function_cases_match_expected(name, node_cases):
    """Cases bench/conformance.py found failing once it ran the expanded function cases
    (and the per-node bodies with an omitted optional input), against ONNX's expected
    outputs."""
    case = node_cases[name]
    (inputs, outputs), model = case.data_sets[0], case.model
    feeds = {vi.name: np.asarray(x) for vi, x in zip(model.graph.input, inputs)}
    res, _ = compile_and_run(model, "default", inputs=feeds)
    for vi, want in zip(model.graph.output, outputs):
        np.testing.assert_allclose(res.outputs[vi.name], want, rtol=1e-3, atol=1e-4 * max(1.0, np.abs(want).max()),
                                   err_msg=vi.name)

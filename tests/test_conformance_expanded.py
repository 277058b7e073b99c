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

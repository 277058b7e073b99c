"""The coverage models of issue 18, exported from real PyTorch at opset 17
(`tests/models/export_coverage.py`): a U-Net (ConvTranspose, Resize, Concat skips,
LogSoftmax), a YOLO-style head (SiLU, nearest Resize, TopK and ArgMax with int64
index outputs), 2-layer LSTM and GRU speech models and a Llama decoder block
(RMSNorm, rotary embeddings, SwiGLU, GQA attention over a KV cache).

Each model runs twice: through `npu-run MODEL --check` in a subprocess, as a user
runs it (exit 0, "check: ok vs onnxruntime", the report's check ok), and in-process
with the `tools/testkit` helpers against onnxruntime on seeded inputs: float
outputs within the acceptance tolerance (rtol 1e-3, atol 1e-4 x max |output|),
integer outputs (indices) exactly. No torch is needed to run them. The LSTM and GRU
are the slow ones (2-5 minutes a compile: npu-layer-group's search over the ~480
kernels of their unrolled time loops).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from tools.testkit.e2e import compile_and_run, onnxruntime_outputs
from tools.testkit.zoo import output_errors, random_inputs

ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = ROOT / "tests" / "models"

EXPECTED_OPS = {
    "unet_seg": {"Conv": 7, "ConvTranspose": 1, "Resize": 1, "Concat": 2, "MaxPool": 2, "LogSoftmax": 1},
    "yolo_head": {"Conv": 7, "Sigmoid": 6, "Resize": 1, "Concat": 2, "ReduceMax": 1, "ArgMax": 1, "TopK": 1},
    "lstm_speech": {"LSTM": 2, "MatMul": 1},
    "gru_speech": {"GRU": 2, "MatMul": 1},
    "llama_block": {"MatMul": 9, "ReduceMean": 2, "Sqrt": 2, "Neg": 2, "Softmax": 1, "Sigmoid": 1, "Expand": 2,
                    "Concat": 4},
}
"""Op counts each export must have (what the model is there to test)."""

SIGNATURES = {
    "unet_seg": ({"x": [1, 3, 32, 32]}, {"logprobs": [1, 4, 32, 32]}),
    "yolo_head": ({"x": [1, 3, 32, 32]},
                  {"boxes": [1, 240, 4], "scores": [1, 10], "indices": [1, 10], "classes": [1, 240]}),
    "lstm_speech": ({"feats": [1, 20, 40]}, {"logits": [1, 20, 12]}),
    "gru_speech": ({"feats": [1, 20, 40]}, {"logits": [1, 20, 12]}),
    "llama_block": ({"x": [1, 8, 64], "past_k": [1, 2, 24, 16], "past_v": [1, 2, 24, 16]},
                    {"hidden": [1, 8, 64], "present_k": [1, 2, 32, 16], "present_v": [1, 2, 32, 16]}),
}
MODELS = tuple(SIGNATURES)


def _load(name: str) -> onnx.ModelProto:
    return onnx.load(str(MODELS_DIR / f"{name}.onnx"))


def _dims(vi: onnx.ValueInfoProto) -> list[int]:
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


@pytest.mark.parametrize("name", MODELS)
def test_export_is_small_and_has_the_ops_under_test(name):
    path = MODELS_DIR / f"{name}.onnx"
    assert path.stat().st_size < 300_000
    model = _load(name)
    onnx.checker.check_model(model, full_check=True)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [17]
    ops = Counter(n.op_type for n in model.graph.node)
    assert {op: ops[op] for op in EXPECTED_OPS[name]} == EXPECTED_OPS[name]
    inputs, outputs = SIGNATURES[name]
    assert {i.name: _dims(i) for i in model.graph.input} == inputs
    assert {o.name: _dims(o) for o in model.graph.output} == outputs


def _npu_run() -> list[str]:
    """The `npu-run` console script of this environment (as a user runs it)."""
    script = Path(sys.executable).parent / "npu-run"
    found = str(script) if script.exists() else shutil.which("npu-run")
    return [found] if found else [sys.executable, "-c", "import sys; from tools.npu_run import console_main; "
                                  "sys.exit(console_main())"]


def _assert_matches(name: str, got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    """Float outputs within the acceptance tolerance, integer ones (indices) exactly."""
    assert set(want) == set(SIGNATURES[name][1])
    for out, ref in want.items():
        assert got[out].shape == ref.shape, out
        if np.issubdtype(ref.dtype, np.integer):
            np.testing.assert_array_equal(got[out], ref, err_msg=f"{name}: output '{out}'")
            continue
        errors = output_errors(got[out], ref)
        assert errors["tolerance_ratio"] <= 1.0, f"{name}: output '{out}': {errors}"


@pytest.mark.parametrize("name", MODELS)
def test_npu_run_check(name, tmp_path):
    """`npu-run MODEL --check` in a subprocess; its --outputs on seeded --inputs match
    onnxruntime here too."""
    model = _load(name)
    inputs = random_inputs(model, seed=0)
    np.savez(tmp_path / "in.npz", allow_pickle=False, **inputs)
    report = tmp_path / "r.json"
    proc = subprocess.run([*_npu_run(), str(MODELS_DIR / f"{name}.onnx"), "--check", "--report", str(report),
                           "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "check:       ok vs onnxruntime" in proc.stdout
    rep = json.loads(report.read_text())
    assert rep["check"]["ok"] is True and rep["check"]["reference"] == "onnxruntime"
    assert set(rep["check"]["outputs"]) == set(SIGNATURES[name][1])
    assert rep["cycles"] > 0
    with np.load(tmp_path / "out.npz") as z:
        got = {k: z[k] for k in z.files}
    _assert_matches(name, got, onnxruntime_outputs(model, inputs))


@pytest.mark.parametrize("name", MODELS)
def test_matches_onnxruntime(name):
    """Compiled and simulated in this process (`tools/testkit/e2e.py`)."""
    model = _load(name)
    inputs = random_inputs(model, seed=0)
    res, _ = compile_and_run(model, inputs=dict(inputs))
    _assert_matches(name, res.outputs, onnxruntime_outputs(model, inputs))

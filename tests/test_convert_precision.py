"""`--precision f16|bf16` end to end (`npu-convert-precision`, npu-default's `precision`):
a float32 model runs in the type (outputs within what the type allows, fewer cycles and
half the DRAM bytes on the default arch, the roofline against the type's cube rate),
the precision is part of the compile cache key, and bad combinations are usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from tools.npu_compile import main as npu_compile
from tools.npu_run import main as npu_run

MODELS = Path(__file__).parent / "models"


def _run(tmp_path: Path, model: str, *extra: str) -> tuple[dict, dict[str, np.ndarray]]:
    report, outputs = tmp_path / f"r{len(extra)}{extra[-1] if extra else ''}.json", tmp_path / "o.npz"
    timing = "--timing-only" in extra
    args = [str(MODELS / model), "--report", str(report), "--no-cache", *extra,
            *([] if timing else ["--outputs", str(outputs)])]
    assert npu_run(args) == 0
    if timing:
        return json.loads(report.read_text()), {}
    with np.load(outputs) as z:
        return json.loads(report.read_text()), {k: z[k] for k in z.files}


@pytest.mark.parametrize(("precision", "tolerance"), [("f16", 2e-3), ("bf16", 2e-2)])
def test_lenet_runs_in_the_type(tmp_path, capsys, precision, tolerance) -> None:
    """LeNet in f16/bf16: its output within the type's rounding of onnxruntime's float32
    run (relative to the output's scale), fewer cycles than f32, half the bytes read,
    the roofline against the type's cube rate (twice f32's MACs per cycle: the same as
    f16's, `cube_f32_passes` = 1, so only the DRAM term halves)."""
    f32, _ = _run(tmp_path, "lenet.onnx")
    rep, out = _run(tmp_path, "lenet.onnx", "--precision", precision, "--check", "--seed", "0")
    assert rep["check"]["ok"]  # (--check's tolerance is the type's: tools.tolerance.PRECISION_RTOL)
    capsys.readouterr()
    sess = ort.InferenceSession(str(MODELS / "lenet.onnx"), providers=["CPUExecutionProvider"])
    from runtime.run import random_inputs
    from tools.api import compile as compile_model
    exe = compile_model(str(MODELS / "lenet.onnx"))
    from sim import signature
    inputs = random_inputs(signature(exe.module), 0)
    want = np.asarray(sess.run(None, {k: v.astype(np.float32) for k, v in inputs.items()})[0])
    got = next(iter(out.values()))
    assert got.dtype == np.float32 and got.shape == want.shape  # (the output keeps its ONNX type)
    assert np.abs(got - want).max() <= tolerance * np.abs(want).max()
    assert rep["model_macs_by_type"] == {precision: f32["model_macs"]}
    assert rep["cycles"] < f32["cycles"] and rep["dram_bytes_read"] < 0.55 * f32["dram_bytes_read"]
    assert rep["roofline_cycles"] < f32["roofline_cycles"]


def test_realistic_arch_prices_f32_four_times(tmp_path, capsys) -> None:
    """On `realistic` an f32 product takes 4 cube passes: f32 LeNet's roofline cube term
    is 4x, its cycles grow, and f16 on the same arch is much faster."""
    base, _ = _run(tmp_path, "lenet.onnx", "--timing-only")
    slow, _ = _run(tmp_path, "lenet.onnx", "--timing-only", "--arch", "realistic")
    fast, _ = _run(tmp_path, "lenet.onnx", "--timing-only", "--arch", "realistic", "--precision", "f16")
    capsys.readouterr()
    assert slow["arch"]["cube_f32_passes"] == 4 and slow["cycles"] > base["cycles"]
    assert fast["cycles"] < slow["cycles"]


def test_precision_is_in_the_compile_cache_key(tmp_path, capsys) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert npu_compile([str(MODELS / "mlp.onnx"), "-o", str(tmp_path / "a.npuexe"), *cache]) == 0
    assert npu_compile([str(MODELS / "mlp.onnx"), "-o", str(tmp_path / "b.npuexe"), "--precision", "f16",
                        *cache]) == 0
    out = capsys.readouterr().out
    assert "import hit, executable miss" in out  # (the same import, another program)
    assert "precision=f16" in out  # (the pipeline line of the summary)
    assert npu_compile([str(MODELS / "mlp.onnx"), "-o", str(tmp_path / "c.npuexe"), "--precision", "f16",
                        *cache]) == 0
    assert "cache:     executable hit" in capsys.readouterr().out
    assert (tmp_path / "b.npuexe").read_bytes() == (tmp_path / "c.npuexe").read_bytes()
    assert npu_compile([str(MODELS / "mlp.onnx"), "-o", str(tmp_path / "d.npuexe"), "--precision", "f32",
                        *cache]) == 0  # (f32 is npu-default as it is: the first compile's entry)
    assert "cache:     executable hit" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--precision", "f16", "-p", "npu-default"], "--precision sets npu-default's option"),
    (["--precision", "int8"], "invalid choice: 'int8'"),
])
def test_bad_usage(tmp_path, capsys, argv, message) -> None:
    assert npu_run([str(MODELS / "mlp.onnx"), "--no-cache", *argv]) == 2
    assert message in capsys.readouterr().err


def test_an_executable_runs_as_compiled(tmp_path, capsys) -> None:
    exe = tmp_path / "m.npuexe"
    assert npu_compile([str(MODELS / "mlp.onnx"), "-o", str(exe), "--no-cache"]) == 0
    assert npu_run([str(exe), "--precision", "bf16"]) == 2
    assert "an .npuexe runs as it was compiled" in capsys.readouterr().err


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("precision", ["f16", "bf16"])
def test_random_models_convert(seed, precision) -> None:
    """npu-convert-precision after the graph passes on the random models of
    test_graph_passes: the IR verifies, the outputs keep f32, the graph evaluates within
    4 spacings of the type of the f32 graph (relative to the output's scale), and the
    simulated program of the whole pipeline matches onnxruntime within the same."""
    from lowering.graph.convert_precision import ConvertPrecision
    from lowering.pipeline import run_pass
    from npu_dialects import make_context
    from tests.test_graph_passes import GRAPH_PASSES, apply, evaluate, feeds_for, imported, random_model
    from tools.testkit.e2e import compile_and_run, onnxruntime_outputs
    from tools.tolerance import PRECISION_RTOL

    tol = PRECISION_RTOL[precision]
    model = random_model(seed)
    module = apply(imported(model), *GRAPH_PASSES)
    feeds = feeds_for(module, seed)
    want = evaluate(module, feeds)
    run_pass(ConvertPrecision(type=precision), make_context(), module)
    got = evaluate(module, feeds)
    for k, w in want.items():
        assert got[k].dtype == np.float32
        assert np.abs(got[k] - w).max() <= tol * max(1.0, float(np.abs(w).max())), k
    res, inputs = compile_and_run(model, precision=precision)
    ref = onnxruntime_outputs(model, inputs)
    for k, w in ref.items():
        assert np.abs(res.outputs[k] - w).max() <= tol * max(1.0, float(np.abs(w).max())), k


def test_a_kv_cache_decoder_runs_in_f16(tmp_path, capsys) -> None:
    """Found by transformers.md's f16 column: a GPT-2 decode step in f16 failed inside
    npu-bufferize - the kv-append kernel returns the present cache, and the cast of
    each present output back to f32 (placed between the concat and the attention)
    read it before the kernel defined it. It compiles and matches onnxruntime."""
    import onnx

    from tools.testkit.transformers import gpt2_block
    path = tmp_path / "decode.onnx"
    onnx.save(gpt2_block(past=15, batch=2, hidden=64, heads=4), str(path))
    rep = tmp_path / "r.json"
    assert npu_run([str(path), "--precision", "f16", "--check", "--no-cache", "--report", str(rep)]) == 0
    assert json.loads(rep.read_text())["check"]["ok"]

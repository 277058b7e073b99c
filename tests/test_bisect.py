"""npu-bisect: a pattern planted behind a test-only switch (NPU_TEST_FAULT=relu-identity
adds FaultyReluForTests, relu(x) -> x, to npu-canonicalize) is found by name, in
O(log n) compiles, with lines that reproduce it; the pattern-level switch. It judges as
`npu-run --check` does: models with integer inputs, all-f16 models and QDQ models that
pass the check have nothing to bisect."""

from __future__ import annotations

import math

import onnx
import pytest

from tools.npu_bisect import OPTIONAL_PASSES
from tools.npu_bisect import main as bisect_main
from tools.npu_run import main as npu_run_main

LENET = "tests/models/lenet.onnx"


def test_bisect_names_the_planted_pattern(monkeypatch, capsys):
    monkeypatch.setenv("NPU_TEST_FAULT", "relu-identity")
    assert bisect_main([LENET]) == 0
    out = capsys.readouterr().out
    assert "first pass that makes the outputs wrong: npu-canonicalize" in out
    assert "pattern: FaultyReluForTests (in npu-canonicalize" in out
    compiles = int(out.split("compiles: ")[1].split()[0])
    # default + all-off + log2 over the passes + stats + patterns
    assert compiles <= 4 + math.ceil(math.log2(len(OPTIONAL_PASSES))) + 2
    repro = [line.strip() for line in out.splitlines() if line.strip().startswith("npu-run")][0]
    pipeline = repro.split("-p '")[1].rstrip("'")
    assert "npu-canonicalize" not in pipeline  # the culprit stays on in the reproducer
    assert npu_run_main([LENET, "--check", "-p", pipeline]) == 1  # reproduces the failure
    capsys.readouterr()
    monkeypatch.setenv("NPU_DISABLE_PATTERNS", "FaultyReluForTests")  # the switch: right again
    assert npu_run_main([LENET, "--check", "-p", pipeline]) == 0


def test_nothing_to_bisect(capsys):
    assert bisect_main([LENET]) == 0
    assert "matches onnxruntime (1 compile): nothing to bisect" in capsys.readouterr().out


def test_bisect_usage(capsys):
    assert bisect_main(["model.mlir"]) == 2
    assert "MODEL must be an .onnx model" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["token_ids", "all_f16"])
def test_nothing_to_bisect_in_models_the_check_passes(kind, tmp_path, capsys):
    """npu-bisect cast every input to float32 and judged every output with f32's
    tolerance: BERT's token ids failed the simulator, and an all-f16 model that passes
    the check (f16's tolerance) was 'wrong even with every optional pass disabled' (so
    was a QDQ SqueezeNet one quantization step off onnxruntime in places)."""
    from tests.test_low_precision_e2e import _f16_convs
    path = "tests/models/bert_encoder.onnx"
    if kind == "all_f16":
        path = str(tmp_path / "m.onnx")
        onnx.save(_f16_convs(False), path)
    assert npu_run_main([path, "--check", "--no-cache"]) == 0
    capsys.readouterr()
    assert bisect_main([path]) == 0
    assert "matches onnxruntime (1 compile): nothing to bisect" in capsys.readouterr().out

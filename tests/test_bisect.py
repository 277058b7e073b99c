"""npu-bisect: a pattern planted behind a test-only switch (NPU_TEST_FAULT=relu-identity
adds FaultyReluForTests, relu(x) -> x, to npu-canonicalize) is found by name, in
O(log n) compiles, with lines that reproduce it; the pattern-level switch."""

from __future__ import annotations

import math

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

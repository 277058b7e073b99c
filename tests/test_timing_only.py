"""Timing-only simulation (`sim.simulate(timing_only=True)`, `npu-run --timing-only`):
the same cycles, DMA bytes, per-kernel rows and trace as the functional run, on
models of every kind and on several arches, without weights or inputs."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import onnx
import pytest

from runtime.device import run_module
from runtime.run import random_inputs, run
from sim import signature, simulate
from tools.api import compile
from tools.npu_run import main as npu_run
from tools.testkit.zoo import light_models, prepare

MODELS = Path(__file__).parent / "models"

CASES = [
    ("lenet.onnx", "default"),
    ("mlp.onnx", "default,cores=1"),
    ("bert_encoder.onnx", "default"),
    ("gpt_decoder.onnx", "default,cores=2,sram_bytes=131072"),
    ("unet_seg.onnx", "default,dma_channels=1"),
]


def _compiled(name: str, arch: str):
    if name.endswith(".onnx"):
        return compile(onnx.load(str(MODELS / name)), arch=arch)
    model, _ = prepare(light_models()[name])
    return compile(model, arch=arch)


def _same_report(a: dict, b: dict) -> None:
    assert a["cycles"] > 0
    assert a == b


@pytest.mark.parametrize("name,arch", CASES + [("squeezenet", "default")])
def test_timing_only_matches_functional(name, arch):
    exe = _compiled(name, arch)
    inputs = random_inputs(signature(exe.module), 0)
    full = run(exe.module, exe.weights, inputs, trace=True)
    timed = run(exe.module, {}, None, trace=True, timing_only=True)  # (no weights, no inputs)
    _same_report(full.report, timed.report)
    assert full.trace == timed.trace
    assert timed.outputs == {} and full.outputs


def test_timing_only_through_the_device_modes():
    exe = _compiled("bert_encoder.onnx", "default")
    inputs = random_inputs(signature(exe.module), 0)
    for mode in ("strict-sync", "graph-async"):
        full, _ = run_module(exe.module, exe.weights, inputs, mode=mode, queue_depth=3)
        timed, _ = run_module(exe.module, {}, {}, mode=mode, queue_depth=3, timing_only=True)
        assert timed.outputs == {}
        assert full.report is not None and timed.report is not None
        _same_report(full.report, timed.report)


def test_timing_only_still_finds_program_faults():
    """Faults of the program that do not depend on data are found without data: an SRAM
    buffer past `sram_bytes` (the module asks for more SRAM than the arch it runs on)."""
    from npu_dialects.arch import parse_arch_spec
    from sim import SimError
    exe = _compiled("lenet.onnx", "default")
    with pytest.raises(SimError, match="exceeds sram_bytes=1024"):
        simulate(exe.module, {}, None, parse_arch_spec("default,sram_bytes=1024"), timing_only=True)


def test_npu_run_timing_only(tmp_path, capsys):
    model = str(MODELS / "lenet.onnx")
    full, timed = tmp_path / "full.json", tmp_path / "timed.json"
    assert npu_run([model, "--no-cache", "--report", str(full)]) == 0
    assert npu_run([model, "--no-cache", "--timing-only", "--report", str(timed)]) == 0
    a, b = json.loads(full.read_text()), json.loads(timed.read_text())
    assert a["cycles"] == b["cycles"] and a["kernels"] == b["kernels"] and a["host"] == b["host"]
    capsys.readouterr()
    for flag in (["--check"], ["--outputs", str(tmp_path / "o.npz")], ["--compare-all"]):
        assert npu_run([model, "--no-cache", "--timing-only", *flag]) == 2
        assert f"cannot be combined with {flag[0]}" in capsys.readouterr().err


@pytest.mark.parametrize("timing_only", [False, True])
def test_a_finished_run_leaves_no_cyclic_garbage(timing_only):
    """The engine, its program and its records are freed by reference counting once the
    caller lets go: objects in a cycle (an engine and a closure holding it) would keep a
    whole run - ResNet-50's ~25k closures, buffers and records - until the collector's
    next full pass, a pause charged to later work."""
    exe = _compiled("gpt_decoder.onnx", "default")  # (concurrent units, early loads, several waves of tasks)
    inputs = random_inputs(signature(exe.module), 0)
    gc.collect()
    gc.disable()
    try:
        res = run(exe.module, {} if timing_only else exe.weights, None if timing_only else inputs,
                  timing_only=timing_only)
        assert res.report["cycles"] > 0
        del res
        assert gc.collect() == 0
    finally:
        gc.enable()

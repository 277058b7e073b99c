"""Coalesced key-keyed loads (`npu-bufferize`'s `whole_run`, the tile search's
`load_split`): models whose kernels load a small operand's reduction blocks as one
run and read each step's block through `npu_task.view %buf[%r]` still match
onnxruntime, under the memory sanitizer (conftest's NPU_SANITIZE=1)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.arch import parse_arch_spec
from npu_dialects.task import ViewOp
from npu_dialects.weights import weights_of
from runtime.run import random_inputs, run
from sim.program import signature
from tools.testkit import models
from tools.testkit.e2e import onnxruntime_outputs
from tools.testkit.transformers import bert_layers, block_inputs, gpt2_block

CASES = {
    # BN-ReLU-conv with 256 input channels in 32 KiB: the conv prologue's per-channel operands
    "dense_layer": (lambda: models.dense_layer(c_in=256, width=32, growth=8, h=8), "default,sram_bytes=32768"),
    # online attention in 64 KiB: the mask's key blocks (BERT), the causal key positions (GPT-2)
    "bert_layer": (lambda: bert_layers(layers=1, seq=128, hidden=128, heads=2, ffn=256), "default,sram_bytes=65536"),
    "gpt2_block": (lambda: gpt2_block(seq=128, hidden=128, heads=2), "default,sram_bytes=65536"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_coalesced_loads_match_onnxruntime(name: str):
    make, spec = CASES[name]
    model: onnx.ModelProto = make()
    arch = parse_arch_spec(spec)
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights)
    blocks = [op for op in module.walk() if isinstance(op, ViewOp) and op.index is not None]
    assert blocks, "no load was coalesced"
    inputs = block_inputs(model) if name != "dense_layer" else random_inputs(signature(module), seed=0)
    got = run(module, weights_of(module), inputs, arch).outputs
    want = onnxruntime_outputs(model, inputs)
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-3, atol=1e-4 * float(np.abs(v).max()))

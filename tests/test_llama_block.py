"""The Llama-style decoder of `tools/testkit/transformers.py:llama_decoder` at a small
size (2 layers, hidden 256, 4 query heads over 2 KV heads of 64, SwiGLU 512, a KV
cache of 15 positions, rotary embeddings): it has the exported op patterns (RMSNorm,
GQA's Expand, rotate_half, SiLU), compiles through `npu-default` and matches
onnxruntime within the acceptance tolerance (rtol 1e-3, atol 1e-4 x max |ort|) on
every output, the grown caches included. The 1B-parameter size is `bench/llama.py`.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest

from tools.testkit.e2e import compile_and_run, onnxruntime_outputs
from tools.testkit.transformers import block_inputs, llama_decoder


def small() -> onnx.ModelProto:
    return llama_decoder(layers=2, hidden=256, heads=4, kv_heads=2, ffn=512, past=15)


def test_small_decoder_has_the_exported_structure() -> None:
    model = small()
    onnx.checker.check_model(model, full_check=True)
    ops = Counter(n.op_type for n in model.graph.node)
    assert {"ReduceMean", "Pow", "Sqrt", "Expand", "Unsqueeze", "Slice", "Neg", "Sigmoid", "Softmax"} <= set(ops)
    assert ops["ReduceMean"] == 2 * 2 + 1  # two RMSNorms a layer and the final one
    assert [o.name for o in model.graph.output] == [
        "last_hidden_state", "present.0.key", "present.0.value", "present.1.key", "present.1.value"]
    assert [d.dim_value for d in model.graph.output[1].type.tensor_type.shape.dim] == [1, 2, 16, 64]


@pytest.mark.parametrize("arch", ["default", "edge-small"])
def test_small_decoder_matches_onnxruntime(arch: str) -> None:
    model = small()
    inputs = block_inputs(model)
    res, _ = compile_and_run(model, arch, inputs=inputs)
    for k, ref in onnxruntime_outputs(model, inputs).items():
        atol = 1e-4 * float(np.abs(ref).max())
        np.testing.assert_allclose(res.outputs[k], ref, rtol=1e-3, atol=atol, err_msg=k)

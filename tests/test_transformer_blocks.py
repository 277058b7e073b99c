"""Transformer blocks built like the exporter writes them (`tools/testkit/transformers.py`)
at small sizes: BERT encoder layers with an attention mask, a GPT-2 block in prefill
(causal mask) and in decode against a KV cache (batch 2, with present key/value
outputs), a ViT block - each compiles through `npu-default` on two arches and
matches onnxruntime within the acceptance tolerance (rtol 1e-3, atol 1e-4 x max |ort|).
The real sizes are benchmarked by `bench/transformers.py`.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.arch import parse_arch_spec
from npu_dialects.compute import ApplyOp
from npu_dialects.dma import CopyOp
from npu_dialects.task import TaskOp
from npu_dialects.weights import weights_of
from runtime.run import run
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs
from tools.testkit.transformers import bert_layers, block_inputs, gpt2_block, vit_block

SMALL = dict(hidden=64, heads=4)
BLOCKS = {
    "bert_2l": lambda: bert_layers(layers=2, seq=16, ffn=256, **SMALL),
    "gpt2_prefill": lambda: gpt2_block(seq=16, **SMALL),
    "gpt2_decode": lambda: gpt2_block(past=15, batch=2, **SMALL),
    "vit": lambda: vit_block(tokens=17, mlp=256, **SMALL),
}


@pytest.mark.parametrize("arch", ["default", "edge-small"])
@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_block_matches_onnxruntime(name: str, arch: str) -> None:
    model = BLOCKS[name]()
    inputs = block_inputs(model)
    res, _ = compile_and_run(model, arch, inputs=inputs)
    for k, ref in onnxruntime_outputs(model, inputs).items():
        atol = 1e-4 * float(np.abs(ref).max())
        np.testing.assert_allclose(res.outputs[k], ref, rtol=1e-3, atol=atol, err_msg=k)


def test_blocks_are_valid_and_have_the_exported_structure() -> None:
    """The checker accepts every block, and each has the ops of its export."""
    want = {"bert_2l": {"LayerNormalization", "Softmax", "Erf", "Reshape", "Transpose", "Sub"},
            "gpt2_prefill": {"Split", "Where", "Pow", "Tanh", "Softmax"},
            "gpt2_decode": {"Concat", "Split", "Pow", "Tanh"},
            "vit": {"Gather", "Erf", "Softmax"}}
    for name, make in BLOCKS.items():
        model = make()
        onnx.checker.check_model(model, full_check=True)
        assert want[name] <= set(Counter(n.op_type for n in model.graph.node)), name


def test_decode_returns_the_grown_cache() -> None:
    model = gpt2_block(past=15, batch=2, **SMALL)
    shapes = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output}
    assert shapes == {"output": [2, 1, 64], "present_key": [2, 4, 16, 16], "present_value": [2, 4, 16, 16]}


def test_gpt2_prefill_256_in_place_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: at 256 tokens the MLP's `0.5 * x` kernel wrote its result over x (an
    in-place candidate) while the gelu_new chain, itself an in-place candidate of that
    result, still had to read x: npu-memplan took the chain for a writer of the
    product and missed its read of x (silently wrong output, max error 0.18). With the
    sanitizer on, every read must find the value it names."""
    monkeypatch.setenv("NPU_SANITIZE", "1")
    model = gpt2_block(seq=256, **SMALL)
    inputs = block_inputs(model)
    res, _ = compile_and_run(model, inputs=inputs)
    ref = onnxruntime_outputs(model, inputs)["output"]
    np.testing.assert_allclose(res.outputs["output"], ref, rtol=1e-3, atol=1e-4 * float(np.abs(ref).max()))


FLASH = {  # (block, an arch whose SRAM cannot hold a head's keys and values whole)
    "bert": (lambda: bert_layers(layers=1, seq=256, ffn=128, **SMALL), "default,sram_bytes=32768"),
    "gpt2_prefill": (lambda: gpt2_block(seq=128, **SMALL), "default,sram_bytes=16384"),
    "gpt2_decode": (lambda: gpt2_block(past=255, batch=2, **SMALL), "default,sram_bytes=16384"),
}


@pytest.mark.parametrize("name", sorted(FLASH))
def test_attention_over_key_blocks_matches_onnxruntime(name: str) -> None:
    """Flash attention: the keys come in blocks whose online-softmax states merge
    (`npu_compute.apply` of an `online` attention, accumulating after the first
    block); with the causal mask of GPT-2 prefill whole blocks are masked out for
    the first query rows. The outputs match onnxruntime."""
    make, spec = FLASH[name]
    model, arch = make(), parse_arch_spec(spec)
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights)
    attention = [op for op in module.walk() if isinstance(op, ApplyOp) and op.op.data == "npu_graph.attention"]
    assert attention and all("online" in op.attrs.data for op in attention)
    assert any(op.accumulate is not None for op in attention)
    inputs = block_inputs(model)
    res = run(module, weights_of(module), inputs, arch)
    for k, ref in onnxruntime_outputs(model, inputs).items():
        np.testing.assert_allclose(res.outputs[k], ref, rtol=1e-3, atol=1e-4 * float(np.abs(ref).max()), err_msg=k)


@pytest.mark.parametrize("fuse_disable", [(), ("kv-append",)])
def test_decode_reads_the_cache_once(fuse_disable: tuple[str, ...]) -> None:
    """npu-fuse's `kv-append`: the decode attention reads each key block of the cache
    (plus, at the last block, the new row landed in the same slot: `src_clip` copies)
    and writes it to present_key / present_value as it goes (`npu_tile.tee`), so no
    task is named after the Concats and the cache crosses DRAM twice, once in and once
    out, not three times (the concats read and write it, the attention reads it again).
    Switched off, the concat tasks are back. The outputs match onnxruntime either way."""
    model, arch = gpt2_block(past=255, batch=2, **SMALL), parse_arch_spec("default,sram_bytes=16384")
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights, fuse_disable=fuse_disable)
    kernels = {op.kernel.data for op in module.walk() if isinstance(op, TaskOp)}
    clipped = [op for op in module.walk() if isinstance(op, CopyOp) and op.src_clip is not None]
    assert bool([k for k in kernels if "/Concat" in k and "MatMul" not in k]) == bool(fuse_disable), sorted(kernels)
    assert bool(clipped) != bool(fuse_disable)
    inputs = block_inputs(model)
    res = run(module, weights_of(module), inputs, arch)
    cache = sum(inputs[n].nbytes for n in ("past_key", "past_value"))
    assert res.sim is not None
    weights = sum(np.asarray(w).nbytes for w in weights_of(module).values())
    moved = res.sim.dram_bytes_read + res.sim.dram_bytes_written - weights  # (the cache, the activations)
    assert (moved < 2.5 * cache) != bool(fuse_disable), (moved, cache)
    for k, ref in onnxruntime_outputs(model, inputs).items():
        np.testing.assert_allclose(res.outputs[k], ref, rtol=1e-3, atol=1e-4 * float(np.abs(ref).max()), err_msg=k)


PRE_LN = {  # (a pre-LN block whose LayerNorm results do not fit the arch's SRAM, the rows of its two LayerNorms)
    "gpt2_prefill": (lambda: gpt2_block(seq=128, **SMALL), 2 * 128),
    "vit": (lambda: vit_block(tokens=129, mlp=256, **SMALL), 2 * 129),
}


@pytest.mark.parametrize("fuse_disable", [(), ("matmul-prologue",)])
@pytest.mark.parametrize("name", sorted(PRE_LN))
def test_layernorm_runs_on_the_projection_tiles(name: str, fuse_disable: tuple[str, ...]) -> None:
    """npu-fuse's `matmul-prologue`: a pre-LN block's LayerNorms become row statistics
    and a `layernorm_apply` on each A tile of the projection or MLP after them, so
    no task applies a whole LayerNorm and the normalised tensors are never written:
    DRAM writes fall by their bytes, less the statistics' (3 numbers a row). Switched off, the LayerNorm tasks are
    back. The outputs match onnxruntime either way."""
    make, rows = PRE_LN[name]
    model, arch = make(), parse_arch_spec("default,sram_bytes=16384")
    inputs, written = block_inputs(model), {}
    for off in ((), fuse_disable):
        module, weights = import_model(model, arch)
        compile_module(module, arch, weights, fuse_disable=off)
        applied = Counter(op.op.data for op in module.walk() if isinstance(op, ApplyOp))
        assert bool(applied["npu_graph.layernorm"]) == bool(off), applied
        assert bool(applied["npu_graph.layernorm_apply"]) != bool(off), applied
        res = run(module, weights_of(module), inputs, arch)
        assert res.sim is not None
        written[off] = res.sim.dram_bytes_written
        for k, ref in onnxruntime_outputs(model, inputs).items():
            np.testing.assert_allclose(res.outputs[k], ref, rtol=1e-3, atol=1e-4 * float(np.abs(ref).max()),
                                       err_msg=f"{k} {off}")
    if fuse_disable:  # (the 64 normalised columns of each row, less its 3 statistics)
        assert written[fuse_disable] - written[()] >= rows * (64 - 3) * 4, written


IN_PLACE = {  # (block, the ONNX nodes whose copies the attention makes unnecessary)
    "bert_2l": ("Transpose",),
    "gpt2_prefill": ("Transpose", "Split"),
    "vit": ("Transpose", "Gather"),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_attention_reads_and_writes_heads_in_place(name: str) -> None:
    """The head transposes, GPT-2's c_attn split and ViT's qkv gathers around attention
    are no kernels: the attention reads q, k, v as [B, S, H, D] head windows of the
    projection (`bshd`, `head_window`) and writes its result [B, S, H, Dv]. No task
    is named after those nodes, and the outputs still match onnxruntime. GPT-2's causal
    mask reaches the tiles as the query rows' limits and the keys' positions."""
    model, arch = BLOCKS[name](), parse_arch_spec("default,sram_bytes=16384")  # (no layer group hides a copy)
    module, weights = import_model(model, arch)
    compile_module(module, arch, weights)
    kernels = {op.kernel.data for op in module.walk() if isinstance(op, TaskOp)}
    assert len(kernels) > 5
    for kind in IN_PLACE[name]:
        assert not [k for k in kernels if f"/{kind}" in k], (name, kind, sorted(kernels))
    attention = [op for op in module.walk() if isinstance(op, ApplyOp) and op.op.data == "npu_graph.attention"]
    assert attention and all(list(op.attrs.data["bshd"].get_values()) == [0, 1, 2, 3] for op in attention)
    # GPT-2's causal where(tril, s, min) is a causal mask given by positions, not [S, S] values
    assert all(("causal" in op.attrs.data) == (name == "gpt2_prefill") for op in attention)
    if name == "gpt2_prefill":
        assert all(len(op.operands) == 6 and op.operands[3].type.get_shape()[-1] == 1 for op in attention)
    inputs = block_inputs(model)
    res = run(module, weights_of(module), inputs, arch)
    for k, ref in onnxruntime_outputs(model, inputs).items():
        np.testing.assert_allclose(res.outputs[k], ref, rtol=1e-3, atol=1e-4 * float(np.abs(ref).max()), err_msg=k)

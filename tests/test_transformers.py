"""Transformers as PyTorch exports them (opset 17, `tests/models/export_transformers.py`):
a BERT-style encoder and a GPT-style decoder with a causal mask, computed in forward
(Trilu, Equal, Where) or kept as a buffer (a constant mask and Where), compile
through `npu-default` and match onnxruntime within the acceptance tolerance (rtol
1e-3, atol 1e-4 x max |output|).

The models take int64 token ids. While the importer or the runtime does not
accept integer graph inputs the full-model tests xfail with that diagnostic;
the `from_embeddings` tests check everything after the token lookup meanwhile
(the Gather cut off and its rows fed as a float input), so attention, LayerNorm,
GELU and the masks are covered either way. No torch is needed to run them.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from tools.testkit.zoo import compare_or_xfail, embeddings_as_inputs, random_inputs

MODELS_DIR = Path(__file__).parent / "models"
TRANSFORMERS = ("bert_encoder", "gpt_decoder", "gpt_decoder_buffer")

EXPECTED_OPS = {
    "bert_encoder": {"Gather", "LayerNormalization", "MatMul", "Reshape", "Transpose", "Softmax", "Erf", "Div"},
    "gpt_decoder": {"Gather", "LayerNormalization", "Split", "Transpose", "Softmax", "Erf", "Trilu", "Equal",
                    "Where"},
    "gpt_decoder_buffer": {"Gather", "LayerNormalization", "Split", "Transpose", "Softmax", "Erf", "Where"},
}
"""Ops each export must contain (what the models are there to test)."""


def _load(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    model = onnx.load(str(MODELS_DIR / f"{name}.onnx"))
    return model, random_inputs(model, seed=0)


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_transformer_matches_onnxruntime(name):
    model, inputs = _load(name)
    result = compare_or_xfail(model, inputs)
    assert result.ok, f"{name}: {result}"


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_transformer_from_embeddings_matches_onnxruntime(name):
    model, inputs = _load(name)
    body, feeds = embeddings_as_inputs(model, inputs)
    assert not any(n.op_type == "Gather" and n.input[1] == "input_ids" for n in body.graph.node)
    result = compare_or_xfail(body, feeds)
    assert result.ok, f"{name} from embeddings: {result}"


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_exported_transformer_is_small_and_has_the_ops_under_test(name):
    path = MODELS_DIR / f"{name}.onnx"
    assert path.stat().st_size < 500_000
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [17]
    ops = Counter(n.op_type for n in model.graph.node)
    assert EXPECTED_OPS[name] <= set(ops), EXPECTED_OPS[name] - set(ops)
    assert ops["Softmax"] == 2 and ops["LayerNormalization"] == 5  # 2 layers
    (ids,) = model.graph.input
    assert ids.name == "input_ids" and ids.type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert [d.dim_value for d in ids.type.tensor_type.shape.dim] == [1, 8]


def test_token_ids_are_valid_for_the_embedding_table():
    model, inputs = _load("gpt_decoder")
    ids = inputs["input_ids"]
    assert ids.dtype == np.int64 and ids.shape == (1, 8)
    vocab = next(t.dims[0] for t in model.graph.initializer if t.name == "wte.weight")
    assert 0 <= ids.min() and ids.max() < vocab

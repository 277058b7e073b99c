"""Export the transformer test models from real PyTorch into tests/models/ (opset 17).

    pip install torch==2.13.0 && python tests/models/export_transformers.py

Writes three small models (batch 1, sequence 8, vocabulary 100, hidden 32, 2 heads,
2 layers, feed-forward 128; int64 token ids `input_ids` [1, 8] in):

- `bert_encoder.onnx`: a BERT-style encoder -> `hidden` [1, 8, 32]. Token and
  position embeddings (nn.Embedding -> Gather), LayerNorm, then per layer:
  multi-head self-attention with separate q/k/v Linear layers, heads split with
  view + transpose, q @ k^T scaled by 1/sqrt(d), Softmax, @ v, heads merged with
  transpose + view, output Linear, residual + LayerNorm; a feed-forward block
  Linear -> nn.GELU() (exported as the Erf formula) -> Linear, residual +
  LayerNorm (post-norm, as BERT).
- `gpt_decoder.onnx`: a GPT-style decoder -> `logits` [1, 8, 100]. Pre-norm
  blocks whose attention uses one fused qkv Linear split with `.split` (ONNX
  Split) and a causal mask computed in forward: `torch.triu(torch.ones(T, T),
  diagonal=1) == 1` (Trilu, Equal) applied with `masked_fill(..., -inf)`
  (Where); final LayerNorm and an LM head.
- `gpt_decoder_buffer.onnx`: the same decoder with the mask as GPT-2 keeps it: a
  registered lower-triangular buffer `torch.tril(torch.ones(T, T))`, sliced to
  the sequence and compared `== 0` in `masked_fill`; the exporter folds the
  slice and the comparison into a constant boolean mask, so only Where remains.

How much of each mask survives as Trilu/Equal/Where depends on the exporter's
constant folding; the models are what `torch.onnx.export(dynamo=False,
do_constant_folding=True)` writes. The files are checked in; the tests load them
without torch (`tests/test_transformers.py`). Weights are seeded (LayerNorm
weights and biases perturbed away from 1 and 0), so a re-export with the same
torch version gives the same numbers.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import torch
from torch import nn

OUT_DIR = Path(__file__).parent
OPSET = 17
VOCAB = 100
HIDDEN = 32
HEADS = 2
LAYERS = 2
FFN = 128
SEQ = 8
BATCH = 1


class SelfAttention(nn.Module):
    """Multi-head self-attention as BERT writes it: q, k, v Linear, heads by view +
    transpose, softmax(q k^T / sqrt(d)) v, heads merged, output Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.heads = HEADS
        self.head_dim = HIDDEN // HEADS
        self.query = nn.Linear(HIDDEN, HIDDEN)
        self.key = nn.Linear(HIDDEN, HIDDEN)
        self.value = nn.Linear(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, HIDDEN)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q = self.split_heads(self.query(x))
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = torch.softmax(scores, dim=-1)
        y = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous().view(b, t, c)
        return self.out(y)


class EncoderLayer(nn.Module):
    """Post-norm BERT layer: LN(x + attn(x)), then LN(h + W2 gelu(W1 h))."""

    def __init__(self) -> None:
        super().__init__()
        self.attention = SelfAttention()
        self.ln1 = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.ffn_in = nn.Linear(HIDDEN, FFN)
        self.gelu = nn.GELU()
        self.ffn_out = nn.Linear(FFN, HIDDEN)
        self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x + self.attention(x))
        return self.ln2(h + self.ffn_out(self.gelu(self.ffn_in(h))))


class BertEncoder(nn.Module):
    """Token + position embeddings, LayerNorm, LAYERS encoder layers."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, HIDDEN)
        self.positions = nn.Embedding(SEQ, HIDDEN)
        self.ln = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer() for _ in range(LAYERS))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.ln(self.tokens(input_ids) + self.positions(positions))
        for layer in self.layers:
            x = layer(x)
        return x


class CausalSelfAttention(nn.Module):
    """GPT-2 attention: one qkv Linear split in three, heads by view + transpose,
    scores masked to -inf above the diagonal, softmax, @ v, output Linear.

    `mask="forward"` builds the mask in forward with torch.triu(torch.ones(T, T)) == 1;
    `mask="buffer"` slices a registered torch.tril(torch.ones(SEQ, SEQ)) buffer."""

    def __init__(self, mask: str) -> None:
        super().__init__()
        self.heads = HEADS
        self.head_dim = HIDDEN // HEADS
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN)
        self.proj = nn.Linear(HIDDEN, HIDDEN)
        self.mask = mask
        if mask == "buffer":
            self.register_buffer("bias", torch.tril(torch.ones(SEQ, SEQ)).view(1, 1, SEQ, SEQ))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        if self.mask == "buffer":
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        else:
            future = torch.triu(torch.ones(t, t, device=x.device), diagonal=1) == 1
            att = att.masked_fill(future, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class DecoderBlock(nn.Module):
    """Pre-norm GPT block: x + attn(LN(x)), then x + W2 gelu(W1 LN(x))."""

    def __init__(self, mask: str) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(HIDDEN)
        self.attn = CausalSelfAttention(mask)
        self.ln2 = nn.LayerNorm(HIDDEN)
        self.fc = nn.Linear(HIDDEN, FFN)
        self.gelu = nn.GELU()
        self.fc_proj = nn.Linear(FFN, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.fc_proj(self.gelu(self.fc(self.ln2(x))))


class GptDecoder(nn.Module):
    """Token + position embeddings, LAYERS decoder blocks, final LayerNorm, LM head."""

    def __init__(self, mask: str) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, HIDDEN)
        self.wpe = nn.Embedding(SEQ, HIDDEN)
        self.blocks = nn.ModuleList(DecoderBlock(mask) for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(HIDDEN)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def _perturb_layernorms(model: nn.Module) -> None:
    """LayerNorm weight 1 + 0.1 N(0, 1), bias 0.1 N(0, 1): no identity affine to fold away."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
                m.bias.add_(0.1 * torch.randn_like(m.bias))


def export(model: nn.Module, name: str, output: str) -> Path:
    """Export `model` (eval mode) at opset 17, input 'input_ids' [BATCH, SEQ] int64."""
    path = OUT_DIR / f"{name}.onnx"
    model.eval()
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), dtype=torch.int64)
    torch.onnx.export(model, (ids,), str(path), input_names=["input_ids"], output_names=[output],
                      opset_version=OPSET, dynamo=False, do_constant_folding=True)
    return path


def main() -> int:
    import onnx

    torch.manual_seed(0)
    for model, name, output in ((BertEncoder(), "bert_encoder", "hidden"),
                                (GptDecoder("forward"), "gpt_decoder", "logits"),
                                (GptDecoder("buffer"), "gpt_decoder_buffer", "logits")):
        _perturb_layernorms(model)
        path = export(model, name, output)
        ops = Counter(n.op_type for n in onnx.load(str(path)).graph.node)
        print(f"wrote {path} ({path.stat().st_size} bytes): "
              + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

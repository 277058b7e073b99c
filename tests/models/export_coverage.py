"""Export the coverage models of issue 18 from real PyTorch into tests/models/ (opset 17).

    python -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.13.0 onnx numpy
    /tmp/torchenv/bin/python tests/models/export_coverage.py

Writes five small end-to-end models (seeded weights, a few hundred KB at most),
each through `torch.onnx.export(dynamo=False, do_constant_folding=True)`:

- `unet_seg.onnx`: U-Net segmentation, x [1, 3, 32, 32] -> `logprobs` [1, 4, 32, 32]
  (Conv + BatchNorm + ReLU, MaxPool, ConvTranspose and bilinear nn.Upsample (Resize)
  up, Concat skips, LogSoftmax over the classes).
- `yolo_head.onnx`: YOLO-style detector, x [1, 3, 32, 32] -> `boxes` [1, 240, 4],
  `scores` [1, 10], `indices` [1, 10] int64 (TopK), `classes` [1, 240] int64 (ArgMax)
  (SiLU conv stub, nearest nn.Upsample (Resize), Concat, 3 anchors x 4 classes at
  two scales).
- `lstm_speech.onnx`: feats [1, 20, 40] -> 2-layer bidirectional nn.LSTM (hidden 32)
  -> Linear -> `logits` [1, 20, 12].
- `gru_speech.onnx`: feats [1, 20, 40] -> 2-layer nn.GRU (hidden 48) -> Linear ->
  `logits` [1, 20, 12].
- `llama_block.onnx`: one Llama decoder block (hidden 64, 4 query heads, 2 key/value
  heads, head dim 16, SwiGLU 128), x [1, 8, 64], past_k / past_v [1, 2, 24, 16] ->
  `hidden` [1, 8, 64], `present_k` / `present_v` [1, 2, 32, 16]: RMSNorm as Llama
  writes it, rotary embeddings (cos/sin tables, rotate_half) at positions 24..31,
  causal attention over the cache, repeat_kv (GQA).

The files are checked in; `tests/test_coverage_models.py` loads them without torch.
Weights are seeded, so a re-export with the same torch version gives the same numbers.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

OUT_DIR = Path(__file__).parent
OPSET = 17


def conv_bn(cin: int, cout: int, k: int = 3, stride: int = 1, act: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout), act())


class UNet(nn.Module):
    """Two-level U-Net: enc 8 -> pool -> enc 16 -> pool -> bottleneck 32; up by a 2x2/2
    ConvTranspose, concat the 16-channel skip, conv; up by bilinear Upsample, concat
    the 8-channel skip, conv; 1x1 head to 4 classes, LogSoftmax over channels."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.enc1 = nn.Sequential(conv_bn(3, 8), conv_bn(8, 8))
        self.enc2 = conv_bn(8, 16)
        self.pool = nn.MaxPool2d(2)
        self.mid = conv_bn(16, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec2 = conv_bn(32, 16)
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec1 = conv_bn(24, 8)
        self.head = nn.Conv2d(8, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        m = self.mid(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return F.log_softmax(self.head(d1), dim=1)


class YoloHead(nn.Module):
    """A YOLOv5-style stub: three stride-2 Conv-BN-SiLU stages (P3 16x16, P4 8x8, P5
    4x4), a top-down neck (1x1 conv on P5, nearest Upsample x2, concat P4, conv), and
    detect convs on the neck (8x8) and P5 (4x4), each 3 anchors x (4 box + 1 obj + 4
    classes). Scores are obj x class probability; the best class per anchor (max and
    ArgMax) and the TopK of the best scores."""

    def __init__(self, anchors: int = 3, classes: int = 4, topk: int = 10) -> None:
        super().__init__()
        self.no = 5 + classes
        self.na = anchors
        self.topk = topk
        self.p3 = conv_bn(3, 16, stride=2, act=nn.SiLU)
        self.p4 = conv_bn(16, 32, stride=2, act=nn.SiLU)
        self.p5 = conv_bn(32, 64, stride=2, act=nn.SiLU)
        self.lateral = conv_bn(64, 32, k=1, act=nn.SiLU)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.fuse = conv_bn(64, 32, act=nn.SiLU)
        self.det = nn.ModuleList([nn.Conv2d(32, anchors * self.no, 1), nn.Conv2d(64, anchors * self.no, 1)])

    def flat(self, y: torch.Tensor) -> torch.Tensor:
        b, _, h, w = y.shape
        return y.view(b, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).reshape(b, self.na * h * w, self.no)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p4 = self.p4(self.p3(x))
        p5 = self.p5(p4)
        n4 = self.fuse(torch.cat([self.up(self.lateral(p5)), p4], dim=1))
        y = torch.sigmoid(torch.cat([self.flat(self.det[0](n4)), self.flat(self.det[1](p5))], dim=1))
        boxes = y[..., :4]
        scores = y[..., 4:5] * y[..., 5:]
        best, classes = scores.max(dim=-1)
        top, indices = torch.topk(best, self.topk, dim=-1)
        return boxes, top, indices, classes


class SpeechRNN(nn.Module):
    """Features [B, T, 40] -> a 2-layer batch-first RNN (LSTM or GRU) -> Linear to 12 labels."""

    def __init__(self, cell: str, hidden: int, bidirectional: bool, labels: int = 12) -> None:
        super().__init__()
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(40, hidden, num_layers=2, batch_first=True, bidirectional=bidirectional)
        self.fc = nn.Linear(hidden * (2 if bidirectional else 1), labels)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(feats)
        return self.fc(y)


HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 64, 4, 2, 16, 128
SEQ, PAST, MAX_POS = 8, 24, 64


class RMSNorm(nn.Module):
    """LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) * weight."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    b, kvh, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)


class LlamaBlock(nn.Module):
    """One Llama decoder layer with a KV cache: h = x + o(attn(rope(q), rope(k), v)) on
    RMSNorm(x), then h + down(silu(gate(n)) * up(n)) on n = RMSNorm(h)."""

    def __init__(self) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(HIDDEN)
        self.q_proj = nn.Linear(HIDDEN, HEADS * HEAD_DIM, bias=False)
        self.k_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.v_proj = nn.Linear(HIDDEN, KV_HEADS * HEAD_DIM, bias=False)
        self.o_proj = nn.Linear(HEADS * HEAD_DIM, HIDDEN, bias=False)
        self.post_attention_layernorm = RMSNorm(HIDDEN)
        self.gate_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.up_proj = nn.Linear(HIDDEN, FFN, bias=False)
        self.down_proj = nn.Linear(FFN, HIDDEN, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        freqs = torch.outer(torch.arange(MAX_POS).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    def attention(self, x: torch.Tensor, past_k: torch.Tensor, past_v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, t, _ = x.shape
        past = past_k.shape[2]
        q = self.q_proj(x).view(b, t, HEADS, HEAD_DIM).transpose(1, 2)
        k = self.k_proj(x).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        v = self.v_proj(x).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        cos = self.cos_cached[past:past + t]
        sin = self.sin_cached[past:past + t]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.cat([past_k, k], dim=2)
        v = torch.cat([past_v, v], dim=2)
        scores = torch.matmul(q, repeat_kv(k, HEADS // KV_HEADS).transpose(2, 3)) / math.sqrt(HEAD_DIM)
        mask = torch.full((t, past + t), float("-inf"), device=x.device).triu(past + 1)
        probs = torch.softmax(scores + mask, dim=-1)
        y = torch.matmul(probs, repeat_kv(v, HEADS // KV_HEADS))
        y = y.transpose(1, 2).reshape(b, t, HEADS * HEAD_DIM)
        return self.o_proj(y), k, v

    def forward(self, x: torch.Tensor, past_k: torch.Tensor, past_v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, present_k, present_v = self.attention(self.input_layernorm(x), past_k, past_v)
        h = x + a
        n = self.post_attention_layernorm(h)
        return h + self.down_proj(F.silu(self.gate_proj(n)) * self.up_proj(n)), present_k, present_v


def _perturb_norms(model: nn.Module) -> None:
    """Norm weights 1 + 0.1 N(0, 1) (biases, running statistics 0.1 N(0, 1), variances
    in [0.5, 1.5]): no identity affine for the exporter or the compiler to fold away."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm2d, RMSNorm)):
                m.weight.add_(0.1 * torch.randn_like(m.weight))
            if isinstance(m, nn.BatchNorm2d):
                m.bias.add_(0.1 * torch.randn_like(m.bias))
                m.running_mean.copy_(0.1 * torch.randn_like(m.running_mean))
                m.running_var.copy_(0.5 + torch.rand_like(m.running_var))


def export(model: nn.Module, name: str, inputs: dict[str, torch.Tensor], outputs: list[str]) -> Path:
    """Export `model` (eval mode) at opset 17 with the given input and output names."""
    path = OUT_DIR / f"{name}.onnx"
    model.eval()
    _perturb_norms(model)
    torch.onnx.export(model, tuple(inputs.values()), str(path), input_names=list(inputs), output_names=outputs,
                      opset_version=OPSET, dynamo=False, do_constant_folding=True)
    return path


def main() -> int:
    import onnx

    torch.manual_seed(0)
    feats = torch.randn(1, 20, 40)
    cache = {"past_k": torch.randn(1, KV_HEADS, PAST, HEAD_DIM), "past_v": torch.randn(1, KV_HEADS, PAST, HEAD_DIM)}
    for model, name, inputs, outputs in (
            (UNet(), "unet_seg", {"x": torch.randn(1, 3, 32, 32)}, ["logprobs"]),
            (YoloHead(), "yolo_head", {"x": torch.randn(1, 3, 32, 32)}, ["boxes", "scores", "indices", "classes"]),
            (SpeechRNN("lstm", 32, True), "lstm_speech", {"feats": feats}, ["logits"]),
            (SpeechRNN("gru", 48, False), "gru_speech", {"feats": feats}, ["logits"]),
            (LlamaBlock(), "llama_block", {"x": torch.randn(1, SEQ, HIDDEN), **cache},
             ["hidden", "present_k", "present_v"])):
        path = export(model, name, inputs, outputs)
        ops = Counter(n.op_type for n in onnx.load(str(path)).graph.node)
        print(f"wrote {path} ({path.stat().st_size} bytes): "
              + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

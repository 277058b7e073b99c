"""Transformer blocks at any size, built node by node as `torch.onnx.export` (opset 17)
writes the Hugging Face modules, with seeded weights: the real-size benchmarks of
`bench/transformers.py` and the small-size tests of `tests/test_transformer_blocks.py`.

- `bert_layers`: BERT encoder layers (post-norm, attention mask `(1 - mask) * -10000`).
- `gpt2_block`: a GPT-2 block, prefill (causal mask buffer) or decode against a KV
  cache `past_key`/`past_value` (returning `present_key`/`present_value`).
- `vit_block`: a ViT encoder block (pre-norm, LayerNorm eps 1e-6, fused qkv).
- `llama_decoder`: a Llama-style decoder (RMSNorm, grouped-query attention, rotary
  position embeddings, SwiGLU MLP, a final RMSNorm), one decode step against a KV
  cache per layer (`past_key_values.{i}.key`/`.value` in, `present.{i}.key`/`.value`
  out); `bench/llama.py` writes the 1B-parameter one with external data.

Algorithm
---------
Linear layers are `MatMul` with a [in, out] weight then `Add` of the bias, as the
exporter writes `nn.Linear` on 3-D inputs; weights are drawn like PyTorch's default
init, LayerNorm parameters perturbed away from 1 and 0. BERT: separate q/k/v
Linear, heads split by Reshape + Transpose, scores / sqrt(d) + the extended mask,
Softmax, output Linear, residual + LayerNorm, FFN with the exact GELU as its Erf
formula; inputs `hidden_states` [B, S, H] and `attention_mask` [B, S] (float, 1 =
attend). GPT-2: pre-norm, one fused qkv Linear split in three, `gelu_new` (tanh
approximation with Pow); decode attends one new token per sequence to the cache
concatenated with its own key/value.

Llama (as the exporter writes Hugging Face's `LlamaForCausalLM` decoder layers,
without embedding table and LM head): no biases; RMSNorm as Pow(x, 2), ReduceMean
over the last dim, Add eps, Sqrt, Div, Mul by the weight; q/k/v/o Linear with
`heads` query heads and `kv_heads` key/value heads of `hidden // heads` each; the
rotary embedding `x * cos + rotate_half(x) * sin` with `rotate_half` as two Slices,
Neg and Concat, `cos`/`sin` the tables at the new token's position `past` as
constants (position ids folded); `repeat_kv` as Unsqueeze, Expand and Reshape
(`heads // kv_heads` copies of each key/value head, after the cache Concat);
scores / sqrt(d), Softmax (no mask: one new token attends to every position);
SwiGLU MLP `down(silu(gate(x)) * up(x))` with SiLU as x * Sigmoid(x).
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from tools.testkit.models import Graph

OPSET = 17


class _Block:
    """Graph-building helpers that name nodes and values as the exporter does."""

    def __init__(self, seed: int):
        self.g = Graph(seed=seed)
        self.n = 0

    def const(self, scope: str, value: np.ndarray | np.floating | float | list) -> str:
        self.n += 1
        name = f"{scope}/Constant_{self.n}_output_0"
        return self.g.const(name, np.asarray(value, dtype=np.float32 if isinstance(value, float) else None))

    def ints(self, scope: str, values: list[int]) -> str:
        self.n += 1
        return self.g.const(f"{scope}/Constant_{self.n}_output_0", np.asarray(values, dtype=np.int64))

    def op(self, op_type: str, inputs: list[str], scope: str, **attrs) -> str:
        self.n += 1
        name = f"{scope}/{op_type}_{self.n}"
        return self.g.node(op_type, inputs, f"{name}_output_0", name=name, **attrs)

    def linear(self, x: str, scope: str, d_in: int, d_out: int) -> str:
        w = self.g.weight(f"{scope}.weight", (d_in, d_out), 1.0 / math.sqrt(d_in))
        b = self.g.weight(f"{scope}.bias", (d_out,), 1.0 / math.sqrt(d_in))
        return self.op("Add", [self.op("MatMul", [x, w], scope), b], scope)

    def layer_norm(self, x: str, scope: str, d: int, eps: float) -> str:
        w = self.g.const(f"{scope}.weight", (1.0 + self.g.rng.uniform(-0.1, 0.1, d)).astype(np.float32))
        b = self.g.const(f"{scope}.bias", self.g.rng.uniform(-0.1, 0.1, d).astype(np.float32))
        return self.op("LayerNormalization", [x, w, b], scope, axis=-1, epsilon=eps)

    def rms_norm(self, x: str, scope: str, d: int, eps: float) -> str:
        """x / sqrt(mean(x^2) + eps) * weight, weight perturbed away from 1."""
        w = self.g.const(f"{scope}.weight", (1.0 + self.g.rng.uniform(-0.1, 0.1, d)).astype(np.float32))
        ms = self.op("ReduceMean", [self.op("Pow", [x, self.const(scope, 2.0)], scope)], scope, axes=[-1],
                     keepdims=1)
        rms = self.op("Sqrt", [self.op("Add", [ms, self.const(scope, eps)], scope)], scope)
        return self.op("Mul", [w, self.op("Div", [x, rms], scope)], scope)

    def heads(self, x: str, scope: str, batch: int, seq: int, heads: int, d: int, perm: list[int]) -> str:
        """[B, S, heads*d] -> [B, heads, S, d] (perm 0,2,1,3) or [B, heads, d, S] (0,2,3,1)."""
        r = self.op("Reshape", [x, self.ints(scope, [batch, seq, heads, d])], scope)
        return self.op("Transpose", [r], scope, perm=perm)

    def merge(self, x: str, scope: str, batch: int, seq: int, hidden: int) -> str:
        t = self.op("Transpose", [x], scope, perm=[0, 2, 1, 3])
        return self.op("Reshape", [t, self.ints(scope, [batch, seq, hidden])], scope)

    def gelu_erf(self, x: str, scope: str) -> str:
        e = self.op("Erf", [self.op("Div", [x, self.const(scope, math.sqrt(2.0))], scope)], scope)
        h = self.op("Mul", [x, self.op("Add", [e, self.const(scope, 1.0)], scope)], scope)
        return self.op("Mul", [h, self.const(scope, 0.5)], scope)

    def gelu_tanh(self, x: str, scope: str) -> str:
        """GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
        cube = self.op("Pow", [x, self.const(scope, 3.0)], scope)
        inner = self.op("Add", [x, self.op("Mul", [self.const(scope, 0.044715), cube], scope)], scope)
        t = self.op("Tanh", [self.op("Mul", [self.const(scope, math.sqrt(2.0 / math.pi)), inner], scope)], scope)
        h = self.op("Mul", [self.op("Mul", [self.const(scope, 0.5), x], scope),
                            self.op("Add", [self.const(scope, 1.0), t], scope)], scope)
        return h


def bert_layers(layers: int = 2, seq: int = 128, hidden: int = 768, heads: int = 12, ffn: int = 3072,
                batch: int = 1, opset: int = OPSET, ffn_of: dict[int, int] | None = None) -> onnx.ModelProto:
    """`layers` BERT encoder layers on `hidden_states` [batch, seq, hidden] (module
    docstring); `ffn_of` gives some layers (by index) another FFN width."""
    b = _Block(seed=21)
    d = hidden // heads
    m = b.op("Sub", [b.const("/extended", 1.0), "attention_mask"], "/extended")
    m = b.op("Mul", [m, b.const("/extended", -10000.0)], "/extended")
    ext = b.op("Reshape", [m, b.ints("/extended", [batch, 1, 1, seq])], "/extended")
    h = "hidden_states"
    for i in range(layers):
        s = f"/layer.{i}/attention"
        q = b.heads(b.linear(h, f"{s}/query", hidden, hidden), s, batch, seq, heads, d, [0, 2, 1, 3])
        k = b.heads(b.linear(h, f"{s}/key", hidden, hidden), s, batch, seq, heads, d, [0, 2, 3, 1])
        v = b.heads(b.linear(h, f"{s}/value", hidden, hidden), s, batch, seq, heads, d, [0, 2, 1, 3])
        scores = b.op("Div", [b.op("MatMul", [q, k], s), b.const(s, math.sqrt(d))], s)
        p = b.op("Softmax", [b.op("Add", [scores, ext], s)], s, axis=-1)
        ctx = b.merge(b.op("MatMul", [p, v], s), s, batch, seq, hidden)
        a = b.layer_norm(b.op("Add", [b.linear(ctx, f"{s}/output", hidden, hidden), h], s), f"{s}/LayerNorm",
                         hidden, 1e-12)
        f = f"/layer.{i}/ffn"
        width = (ffn_of or {}).get(i, ffn)
        up = b.gelu_erf(b.linear(a, f"{f}/intermediate", hidden, width), f)
        h = b.layer_norm(b.op("Add", [b.linear(up, f"{f}/output", width, hidden), a], f), f"{f}/LayerNorm",
                         hidden, 1e-12)
    b.g.nodes[-1].output[0] = "last_hidden_state"
    return b.g.model(f"bert_{layers}l_{seq}", {"hidden_states": [batch, seq, hidden], "attention_mask": [batch, seq]},
                     {"last_hidden_state": [batch, seq, hidden]}, opset)


def gpt2_block(seq: int = 512, past: int = 0, batch: int = 1, hidden: int = 768, heads: int = 12,
               opset: int = OPSET) -> onnx.ModelProto:
    """One GPT-2 block: prefill of `seq` tokens (`past=0`), or decode of one token per
    sequence against a KV cache of `past` positions (module docstring)."""
    b = _Block(seed=22)
    d = hidden // heads
    n = 1 if past else seq  # new tokens
    s = "/h.0/attn"
    x = "hidden_states"
    qkv = b.linear(b.layer_norm(x, "/h.0/ln_1", hidden, 1e-5), f"{s}/c_attn", hidden, 3 * hidden)
    q, k, v = (f"{s}/Split_output_{i}" for i in range(3))
    b.g.node("Split", [qkv, b.ints(s, [hidden] * 3)], [q, k, v], name=f"{s}/Split", axis=2)
    q = b.heads(q, s, batch, n, heads, d, [0, 2, 1, 3])
    k = b.heads(k, s, batch, n, heads, d, [0, 2, 1, 3])
    v = b.heads(v, s, batch, n, heads, d, [0, 2, 1, 3])
    inputs: dict[str, list[int]] = {x: [batch, n, hidden]}
    outputs: dict[str, list[int] | None] = {}
    if past:
        k = b.g.node("Concat", ["past_key", k], "present_key", name=f"{s}/Concat", axis=2)
        v = b.g.node("Concat", ["past_value", v], "present_value", name=f"{s}/Concat_1", axis=2)
        inputs |= {"past_key": [batch, heads, past, d], "past_value": [batch, heads, past, d]}
        outputs |= {"present_key": [batch, heads, past + 1, d], "present_value": [batch, heads, past + 1, d]}
    kt = b.op("Transpose", [k], s, perm=[0, 1, 3, 2])
    w = b.op("Div", [b.op("MatMul", [q, kt], s), b.const(s, math.sqrt(d))], s)
    if not past:  # the registered causal buffer, sliced and compared by the exporter into a constant
        causal = b.g.const(f"{s}/causal_mask", np.tril(np.ones((1, 1, seq, seq), dtype=bool)))
        w = b.op("Where", [causal, w, b.const(s, np.float32(np.finfo(np.float32).min))], s)
    p = b.op("Softmax", [w], s, axis=-1)
    a = b.linear(b.merge(b.op("MatMul", [p, v], s), s, batch, n, hidden), f"{s}/c_proj", hidden, hidden)
    h = b.op("Add", [a, x], "/h.0")
    f = "/h.0/mlp"
    up = b.gelu_tanh(b.linear(b.layer_norm(h, "/h.0/ln_2", hidden, 1e-5), f"{f}/c_fc", hidden, 4 * hidden), f)
    b.g.node("Add", [b.linear(up, f"{f}/c_proj", 4 * hidden, hidden), h], "output", name="/h.0/Add_1")
    name = f"gpt2_decode_p{past}_b{batch}" if past else f"gpt2_prefill_{seq}"
    return b.g.model(name, inputs, {"output": [batch, n, hidden], **outputs}, opset)


def vit_block(tokens: int = 197, batch: int = 1, hidden: int = 768, heads: int = 12, mlp: int = 3072,
              opset: int = OPSET) -> onnx.ModelProto:
    """One ViT-B/16 encoder block on `x` [batch, tokens, hidden] (module docstring)."""
    b = _Block(seed=23)
    d = hidden // heads
    s = "/blocks.0/attn"
    qkv = b.linear(b.layer_norm("x", "/blocks.0/norm1", hidden, 1e-6), f"{s}/qkv", hidden, 3 * hidden)
    r = b.op("Reshape", [qkv, b.ints(s, [batch, tokens, 3, heads, d])], s)
    t = b.op("Transpose", [r], s, perm=[2, 0, 3, 1, 4])  # [3, B, heads, T, d]
    q, k, v = (b.op("Gather", [t, b.g.const(f"{s}/idx{i}", np.asarray(i, dtype=np.int64))], s, axis=0)
               for i in range(3))
    kt = b.op("Transpose", [k], s, perm=[0, 1, 3, 2])
    w = b.op("Mul", [b.op("MatMul", [q, kt], s), b.const(s, 1.0 / math.sqrt(d))], s)
    p = b.op("Softmax", [w], s, axis=-1)
    a = b.linear(b.merge(b.op("MatMul", [p, v], s), s, batch, tokens, hidden), f"{s}/proj", hidden, hidden)
    h = b.op("Add", ["x", a], "/blocks.0")
    f = "/blocks.0/mlp"
    up = b.gelu_erf(b.linear(b.layer_norm(h, "/blocks.0/norm2", hidden, 1e-6), f"{f}/fc1", hidden, mlp), f)
    b.g.node("Add", [h, b.linear(up, f"{f}/fc2", mlp, hidden)], "y", name="/blocks.0/Add_1")
    return b.g.model(f"vit_block_{tokens}", {"x": [batch, tokens, hidden]}, {"y": [batch, tokens, hidden]}, opset)


def llama_decoder(layers: int = 16, hidden: int = 2048, heads: int = 32, kv_heads: int = 8, ffn: int = 8192,
                  past: int = 128, rope: bool = True, eps: float = 1e-5, batch: int = 1,
                  opset: int = OPSET) -> onnx.ModelProto:
    """`layers` Llama decoder layers and the final norm, one decode step of one new
    token per sequence (`hidden_states` [batch, 1, hidden]) against a KV cache of
    `past` positions per layer (module docstring). The seeded weights are drawn layer
    by layer: a smaller `layers` has the same first layers."""
    b = _Block(seed=24)
    d = hidden // heads
    rep = heads // kv_heads
    if rope:  # HF's rotary tables at position `past`: cat(freqs, freqs)
        inv = 1.0 / (10000.0 ** (np.arange(0, d, 2, dtype=np.float64) / d))
        emb = np.concatenate([past * inv, past * inv]).reshape(1, 1, 1, d)
        cos = b.g.const("/rotary_emb/cos", np.cos(emb).astype(np.float32))
        sin = b.g.const("/rotary_emb/sin", np.sin(emb).astype(np.float32))

    def rotary(x: str, scope: str) -> str:
        x1 = b.op("Slice", [x, b.ints(scope, [0]), b.ints(scope, [d // 2]), b.ints(scope, [3])], scope)
        x2 = b.op("Slice", [x, b.ints(scope, [d // 2]), b.ints(scope, [d]), b.ints(scope, [3])], scope)
        half = b.op("Concat", [b.op("Neg", [x2], scope), x1], scope, axis=-1)
        return b.op("Add", [b.op("Mul", [x, cos], scope), b.op("Mul", [half, sin], scope)], scope)

    def linear(x: str, scope: str, d_in: int, d_out: int) -> str:
        return b.op("MatMul", [x, b.g.weight(f"{scope}.weight", (d_in, d_out), 1.0 / math.sqrt(d_in))], scope)

    def repeat_kv(x: str, scope: str) -> str:
        if rep == 1:
            return x
        u = b.op("Unsqueeze", [x, b.ints(scope, [2])], scope)
        e = b.op("Expand", [u, b.ints(scope, [batch, kv_heads, rep, past + 1, d])], scope)
        return b.op("Reshape", [e, b.ints(scope, [batch, heads, past + 1, d])], scope)

    inputs: dict[str, list[int]] = {"hidden_states": [batch, 1, hidden]}
    outputs: dict[str, list[int] | None] = {"last_hidden_state": [batch, 1, hidden]}
    h = "hidden_states"
    for i in range(layers):
        s = f"/model/layers.{i}/self_attn"
        x = b.rms_norm(h, f"/model/layers.{i}/input_layernorm", hidden, eps)
        q = b.heads(linear(x, f"{s}/q_proj", hidden, heads * d), s, batch, 1, heads, d, [0, 2, 1, 3])
        k = b.heads(linear(x, f"{s}/k_proj", hidden, kv_heads * d), s, batch, 1, kv_heads, d, [0, 2, 1, 3])
        v = b.heads(linear(x, f"{s}/v_proj", hidden, kv_heads * d), s, batch, 1, kv_heads, d, [0, 2, 1, 3])
        if rope:
            q, k = rotary(q, s), rotary(k, s)
        cache = [f"past_key_values.{i}.key", f"past_key_values.{i}.value"]
        present = [f"present.{i}.key", f"present.{i}.value"]
        k = b.g.node("Concat", [cache[0], k], present[0], name=f"{s}/Concat_k", axis=2)
        v = b.g.node("Concat", [cache[1], v], present[1], name=f"{s}/Concat_v", axis=2)
        inputs |= {c: [batch, kv_heads, past, d] for c in cache}
        outputs |= {p: [batch, kv_heads, past + 1, d] for p in present}
        kt = b.op("Transpose", [repeat_kv(k, s)], s, perm=[0, 1, 3, 2])
        w = b.op("Div", [b.op("MatMul", [q, kt], s), b.const(s, math.sqrt(d))], s)
        p = b.op("Softmax", [w], s, axis=-1)
        ctx = b.merge(b.op("MatMul", [p, repeat_kv(v, s)], s), s, batch, 1, heads * d)
        h = b.op("Add", [h, linear(ctx, f"{s}/o_proj", heads * d, hidden)], f"/model/layers.{i}")
        f = f"/model/layers.{i}/mlp"
        x = b.rms_norm(h, f"/model/layers.{i}/post_attention_layernorm", hidden, eps)
        gate = linear(x, f"{f}/gate_proj", hidden, ffn)
        act = b.op("Mul", [gate, b.op("Sigmoid", [gate], f"{f}/act_fn")], f"{f}/act_fn")
        down = linear(b.op("Mul", [act, linear(x, f"{f}/up_proj", hidden, ffn)], f), f"{f}/down_proj", ffn, hidden)
        h = b.op("Add", [h, down], f"/model/layers.{i}")
    b.rms_norm(h, "/model/norm", hidden, eps)
    b.g.nodes[-1].output[0] = "last_hidden_state"
    # the initializers moved into the model one at a time: the 1B model's 4 GB once, not
    # copied whole into the graph and again into the model
    inits, b.g.inits = b.g.inits[::-1], []
    m = b.g.model(f"llama_{layers}l_h{hidden}_p{past}", inputs, outputs, opset)
    while inits:
        m.graph.initializer.append(inits.pop())
    return m


def block_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float inputs for a block (an attention mask of ones with the last quarter
    of each sequence masked out)."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        if i.name == "attention_mask":
            m = np.ones(shape, dtype=np.float32)
            m[:, shape[1] - shape[1] // 4:] = 0.0
            out[i.name] = m
        else:
            out[i.name] = rng.standard_normal(shape).astype(np.float32)
    return out

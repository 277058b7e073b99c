"""Random small ONNX graphs for differential testing: the compiler plus the
simulator against onnxruntime.

`random_model(seed)` grows a graph from 1-2 inputs (ranks 1-4, odd sizes, sometimes
one long axis) by keeping a pool of live tensors (`fuzz_builder`) and drawing
consumers for them from the op table `fuzz_ops.OPS`, which covers the importer's
supported op types. Most graphs are opset 17, some 13 and some 21-28. Tensors often
get 2-3 readers (branches, residuals) and view ops feed elementwise ops next to
another reader of the viewed tensor (the in-place hazard). 30% of the graphs
(`KINDS`, drawn apart) are QDQ, float16, or hold float16/bfloat16 casts.

`check_model(model, arch_spec)` compiles and simulates a model and compares each
output with onnxruntime by its type (`output_criteria`); `view_bug_models()` are the
fixed reproducers of the view/in-place bug.
"""
from __future__ import annotations

import os
import re
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.utils.exceptions import VerifyException

from lowering.errors import CompileError
from lowering.importer import functions
from lowering.importer.onnx_import import OnnxImportError
from lowering.tile.tile_search import TilingError
from sim import SimError
from tools.npu_run import compare
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs
from tools.testkit.fuzz_builder import MAX_ELEMS, MAX_RANK, SQUASH_ABOVE, Builder, Shape, Tensor
from tools.testkit.fuzz_ops import CAST_OPS, OPS, QDQ_OPS, OpGen
from tools.tolerance import metrics

OPSET = 17
OPSETS = ((17, 0.6), (13, 0.15), (21, 0.05), (22, 0.04), (23, 0.05), (24, 0.04), (25, 0.03), (28, 0.04))
"""Opsets graphs are written for, with their probabilities."""
RECENT_BOOST = 4.0
"""Weight factor of ops new at opset 18 or later (only the 25% of graphs at 21+ take them)."""
TOKEN_INPUTS = 0.15
"""Share of graphs that also take int64 token ids (and sometimes a mask): `_token_inputs`."""
MAX_NODES = 18  # after pruning what no output needs
MAX_GROWN = 25  # nodes grown before pruning
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
KINDS = (("f32", 0.7), ("qdq", 0.15), ("f16", 0.08), ("cast", 0.07))
"""Graph kinds with their shares, drawn from a stream of their own (`draw_kind`): f32
(the op table `OPS`; the same graphs as before kinds existed), qdq (QDQ segments only,
`QDQ_OPS`), f16 (a whole float16 graph: f16 inputs, outputs and constants, the ops of
all of `OPS` but `F16_LEFT_OUT`), cast (`OPS` and Cast segments to float16/bfloat16, `CAST_OPS`)."""
F16_LEFT_OUT = {
    **dict.fromkeys(("Tile", "GatherND", "GatherElements", "ScatterElements", "ScatterND", "Pad"),
                    "compiler bug: float16 index constants ('npu_graph.gather': indices has element type f16)"),
    "ConvTranspose": "compiler bug: a float32 weight for a float16 input ('npu_graph.conv2d': operand #1 is f32)",
    **dict.fromkeys(("MaxUnpool", "TopK"), "compiler bug: a float16 op with an integer output (MaxPool's "
                    "Indices, TopK's) gives float32 values ('operand #1 is f16 but operand #0 is f32' after it)"),
    **dict.fromkeys(("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"),
                    "compiler bug: its ONNX function body does not import in float16"),
    **dict.fromkeys(("Swish", "SwiGLU"), "onnxruntime has no float16 Swish kernel"),
    **dict.fromkeys(("Log", "ReduceLogSum", "ReduceLogSumExp", "Acosh", "Atanh", "Acos", "Asin"),
                    "ill-conditioned where float16 rounds: log of a Sigmoid of 8 rounded to float16 is off by half "
                    "(onnxruntime keeps float32 between its casts), steep ends of the inverse functions"),
    **dict.fromkeys(("Resize", "ConstantOfShape", "Range", "Celu", "MeanVarianceNormalization", "Constant",
                     "CastLike", "Cast", "OneHot", "Shape", "Size", "CausalConvWithState", "GRU", "LSTM", "RNN"),
                    "its generator writes float32 values (scales, fills, casts) or ONNX refuses float16"),
}
"""Op table entries a float16 graph leaves out, with the reason; it draws every other
one (onnxruntime runs them in float16: its CPU kernels, or float32 between casts)."""
DIMS = (1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8, 8, 16, 17)
"""Sizes a dim is drawn from: small, odd and a few larger."""


# --------------------------------------------------------------------------------------
# Growing a graph
# --------------------------------------------------------------------------------------


def step(b: Builder, t: Tensor) -> Tensor | None:
    """One op (or a few) reading t, drawn among the table's generators that take t at
    the graph's opset; None when the drawn variant does not fit t."""
    if t.is_float and t.mag > SQUASH_ABOVE and b.kind != "qdq":
        return b.node("Tanh", [t], t.shape, -1.0, 1.0)
    gens = [g for g in _table(b.kind) if g.fits(b, t)]
    if not gens:
        return None
    w = np.array([g.weight * (RECENT_BOOST if g.since >= 18 else 1.0) for g in gens])
    return gens[int(b.rng.choice(len(gens), p=w / w.sum()))].fn(b, t)


def _table(kind: str) -> list[OpGen]:
    """The generators a graph of `kind` draws from (`KINDS`)."""
    if kind == "qdq":
        return list(QDQ_OPS.values())
    if kind == "f16":
        return [g for name, g in OPS.items() if name not in F16_LEFT_OUT]
    return list(OPS.values()) + (list(CAST_OPS.values()) if kind == "cast" else [])


def draw_kind(seed: int) -> str:
    """The kind of graph `seed` grows (`KINDS`), from a generator of its own: the f32
    graphs are drawn as they were before kinds existed."""
    p = np.array([share for _, share in KINDS])
    return KINDS[int(np.random.default_rng([seed, 44]).choice(len(KINDS), p=p / p.sum()))][0]


def _dim(rng: np.random.Generator) -> int:
    return int(DIMS[int(rng.integers(len(DIMS)))])


def _capped(shape: list[int], limit: int = MAX_ELEMS) -> Shape:
    """shape with its largest dims halved until it holds at most `limit` elements."""
    while int(np.prod(shape)) > limit:
        i = int(np.argmax(shape))
        shape[i] = (shape[i] + 1) // 2
    return tuple(shape)


def _first_shape(rng: np.random.Generator) -> Shape:
    """An image [N, C, H, W], a sequence [B, S, D], a matrix, a vector, or (sometimes)
    a shape with one long axis (~1000) and small others."""
    kind = rng.choice(["image", "seq", "matrix", "vector", "long"], p=[0.4, 0.2, 0.22, 0.08, 0.1])
    if kind == "long":
        rank = int(rng.integers(1, MAX_RANK + 1))
        shape = [int(rng.integers(1, 3)) if rng.random() < 0.5 else 1 for _ in range(rank)]
        shape[int(rng.integers(rank))] = int(rng.choice([997, 1000, 512, 333, 1024]))
        return _capped(shape)
    rank = {"image": 4, "seq": 3, "matrix": 2, "vector": 1}[str(kind)]
    shape = [_dim(rng) for _ in range(rank)]
    if kind == "image":
        shape[0] = int(rng.choice([1, 1, 1, 2, 3]))
    return _capped(shape, 1024)


def _input_shapes(rng: np.random.Generator) -> list[Shape]:
    """1-2 graph input shapes; the second the same, broadcasting to the first, with
    another channel count, or a matmul right operand."""
    first = _first_shape(rng)
    if rng.random() >= 0.4:
        return [first]
    how = rng.choice(["same", "bcast", "channels", "right"])
    if how == "same":
        return [first, first]
    if how == "bcast":
        return [first, tuple(d if rng.random() < 0.5 else 1 for d in first)[int(rng.integers(len(first))):] or (1,)]
    if how == "channels" and len(first) >= 2:
        return [first, _capped([first[0], _dim(rng), *first[2:]])]
    return [first, _capped([*first[:-2], first[-1], _dim(rng)]) if len(first) >= 2 else first]


def _token_inputs(b: Builder) -> None:
    """A language model's inputs: int64 token ids [B, S] embedded by a Gather of a
    table of 2-40 rows (as a BERT's token-type table of 2), and sometimes a 0/1 mask
    [B, S] cast to float and multiplied into the embedding; the ids stay in the pool
    (another Gather may index with them)."""
    batch, seq, vocab, width = b.randint(1, 2), b.draw(DIMS[2:]), b.randint(2, 40), b.draw(DIMS[4:])
    ids = b.int_input((batch, seq), vocab)
    table = b.rng.standard_normal((vocab, width)).astype(np.float32)
    emb = b.node("Gather", [b.const(table), ids], (batch, seq, width), float(table.min()), float(table.max()),
                 exact=True, axis=0)
    if b.coin(0.5):
        mask = b.node("Cast", [b.int_input((batch, seq), 2)], (batch, seq), 0, 1, exact=True, to=TensorProto.FLOAT)
        mask = b.node("Unsqueeze", [mask, b.ints([-1])], (batch, seq, 1), 0, 1, exact=True)
        b.node("Mul", [emb, mask], (batch, seq, width), min(emb.lo, 0), max(emb.hi, 0), exact=True)


def _prune(nodes: list[onnx.NodeProto], outputs: Sequence[str]) -> list[onnx.NodeProto]:
    """The nodes some output depends on, in their original order."""
    needed = set(outputs)
    keep = []
    for n in reversed(nodes):
        if needed & set(n.output):
            keep.append(n)
            needed.update(n.input)
    return keep[::-1]


def _choose_outputs(b: Builder) -> list[str]:
    """1-3 graph outputs: often the motif tensors (a view-chain result and another
    reader of the viewed tensor), unread tensors with the most nodes behind them
    (least pruned away; float ones first), and sometimes a tensor that is also read."""
    made = [t for t in b.pool if t not in b.inputs]
    leaves = [t for t in made if not b.readers[t.name]]
    depth = {t.name: len(_prune(b.nodes, [t.name])) + b.rng.random() + 5 * t.is_float for t in leaves}
    names = sorted(depth, key=depth.__getitem__, reverse=True)
    n_out = int(b.rng.integers(1, 4))
    cands = names[:1] + (b.motif_outputs if b.rng.random() < 0.7 else []) + names[1:]
    if b.rng.random() < 0.2 and made:
        cands.insert(1, made[int(b.rng.integers(len(made)))].name)
    live = {t.name for t in b.pool}
    outs: list[str] = []
    for n in cands:
        if len(outs) < n_out and n not in outs and n in live:
            outs.append(n)
    return outs


def _grow(rng: np.random.Generator, opset: int, kind: str = "f32") -> tuple[Builder, list[onnx.NodeProto], list[str]]:
    """One attempt: up to about MAX_GROWN nodes, the outputs chosen and the nodes they need."""
    b = Builder(rng, int(rng.integers(3, MAX_GROWN + 1)) * (2 if kind == "qdq" else 1), opset, kind)
    for s in _input_shapes(rng):
        b.input(s)
    if rng.random() < TOKEN_INPUTS and kind in ("f32", "cast"):
        _token_inputs(b)
    tries = 0
    while b.budget() > 0 and tries < 4 * MAX_GROWN:
        tries += 1
        step(b, b.pick())
    outs = _choose_outputs(b)
    return b, _prune(b.nodes, outs), outs


def _is_view(node: onnx.NodeProto, shapes: dict[str, Shape]) -> bool:
    """A view op, or a Transpose that only moves size-1 dims (the compiler makes it a
    reshape: the data layout is unchanged)."""
    if node.op_type in VIEW_OPS:
        return True
    if node.op_type != "Transpose" or node.input[0] not in shapes:
        return False
    shape = shapes[node.input[0]]
    perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), list(range(len(shape)))[::-1])
    if len(perm) != len(shape):  # (a shape inference could not give)
        return False
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def op_pairs(model: onnx.ModelProto) -> Counter[tuple[str, str]]:
    """(producer op type, consumer op type) over the graph's data edges."""
    producer = {o: n.op_type for n in model.graph.node for o in n.output if o}
    return Counter((producer[x], n.op_type) for n in model.graph.node for x in n.input if x in producer)


def graph_stats(model: onnx.ModelProto) -> dict:
    """`views_multi_reader` (a tensor read by a view - see `_is_view` - and by at least
    one other consumer: a node or the graph's output), `n_nodes`, `op_types` (op type ->
    count), `op_pairs` (producer -> consumer op types), `n_inputs`, `n_outputs`, `opset`,
    `int_inputs` (inputs not float32: token ids, masks)."""
    g = onnx.shape_inference.infer_shapes(model).graph
    shapes = {v.name: tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
              for v in [*g.input, *g.value_info, *g.output]}
    readers: dict[str, list[bool]] = {o.name: [False] for o in g.output}  # is each reader a view
    for n in g.node:
        view = _is_view(n, shapes)
        for x in n.input[:1] if view else n.input:  # a view's other inputs are its shape / axes
            readers.setdefault(x, []).append(view)
    multi = any(len(r) >= 2 and any(r) for r in readers.values())
    return {"views_multi_reader": multi, "n_nodes": len(g.node),
            "op_types": dict(sorted(Counter(n.op_type for n in g.node).items())),
            "op_pairs": dict(op_pairs(model)),
            "n_inputs": len(g.input), "n_outputs": len(g.output), "opset": model.opset_import[0].version,
            "int_inputs": sum(i.type.tensor_type.elem_type != TensorProto.FLOAT for i in g.input)}


def _draw_opset(rng: np.random.Generator) -> int:
    ops, p = zip(*OPSETS)
    return int(rng.choice(ops, p=np.array(p) / sum(p)))


def random_model(seed: int) -> tuple[onnx.ModelProto, dict]:
    """A random graph of 3-MAX_NODES named nodes with 1-2 float32 inputs (and in
    TOKEN_INPUTS of them int64 token ids and a mask) and 1-3
    outputs (shapes filled in by ONNX shape inference, checked against the generator's),
    and its `graph_stats` (with its `kind`, `draw_kind`: a qdq, f16 or cast graph)."""
    rng = np.random.default_rng(seed)
    opset = _draw_opset(rng)
    kind = draw_kind(seed)
    if kind == "qdq":
        opset = min(max(opset, 13), 25)  # (per-axis QuantizeLinear; onnxruntime has none at 28)
    while True:
        b, nodes, outs = _grow(rng, opset, kind)
        if 3 <= len(nodes) <= MAX_NODES * (2 if kind == "qdq" else 1) and outs:
            try:
                return _model(seed, b, nodes, outs, opset)
            except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
                if kind != "f16":  # (a float16 graph a generator mixed float32 into: grown again)
                    raise


def _model(seed: int, b: Builder, nodes: list[onnx.NodeProto], outs: list[str], opset: int
           ) -> tuple[onnx.ModelProto, dict]:
    """`random_model`'s checked model of the grown nodes, and its stats."""
    kind = b.kind
    if kind == "f16":  # (generators cast to float32: the graph's float type is float16)
        for n in nodes:
            for a in n.attribute:
                if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                    a.i = TensorProto.FLOAT16
    used = {x for n in nodes for x in n.input}
    inputs = [helper.make_tensor_value_info(t.name, b.onnx_type(t.dtype), list(t.shape))
              for t in b.inputs if t.name in used]
    inits = [w for w in b.inits if w.name in used]
    types = {t.name: t for t in b.pool}
    graph = helper.make_graph(nodes, f"fuzz{seed}", inputs,
                              [helper.make_tensor_value_info(n, b.onnx_type(types[n].dtype), None) for n in outs],
                              inits)
    model = finish(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]),
                   {n: types[n].shape for n in outs})
    for o in model.graph.output:
        got = tuple(d.dim_value for d in o.type.tensor_type.shape.dim)
        assert got == types[o.name].shape, f"seed {seed}: {o.name} inferred {got}, built {types[o.name].shape}"
    return model, {**graph_stats(model), "kind": kind}


def finish(model: onnx.ModelProto, shapes: dict[str, Shape] | None = None) -> onnx.ModelProto:
    """Check the model and fill its outputs' shapes by strict shape inference (with data
    propagation; `shapes` gives those it cannot infer, e.g. a Reshape to a Shape at
    opset 13). The IR version is the lowest its opset allows: loadable by older
    onnxruntime too."""
    model.ir_version = helper.find_min_ir_version_for(list(model.opset_import))
    for o in model.graph.output:
        o.type.tensor_type.ClearField("shape")
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    del model.graph.value_info[:]  # only the outputs' shapes are kept
    for o in model.graph.output:
        tt = o.type.tensor_type
        if shapes and o.name in shapes and (not tt.HasField("shape") or any(not d.dim_value for d in tt.shape.dim)):
            tt.ClearField("shape")
            tt.shape.SetInParent()
            for d in shapes[o.name]:
                tt.shape.dim.add().dim_value = d
    onnx.checker.check_model(model, full_check=True)
    return model


# --------------------------------------------------------------------------------------
# Fixed reproducers of the view / in-place bug
# --------------------------------------------------------------------------------------


def _fixed(name: str, x: Shape, nodes: list[onnx.NodeProto], inits: dict[str, np.ndarray],
           outputs: Sequence[str]) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x))],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return finish(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]))


def view_bug_models() -> dict[str, onnx.ModelProto]:
    """The bug report's minimal model and three variants: an elementwise op (BN folds
    to one) reads a view of a tensor that another consumer reads afterwards, so the
    op must not write its result over the viewed buffer. (The Div variant divides by
    different values along the normalised dim: LayerNorm is blind to a uniform scale.)"""
    rng = np.random.default_rng(0)

    def w(*shape: int, std: float = 0.5) -> np.ndarray:
        return (rng.standard_normal(shape) * std).astype(np.float32)

    mk = helper.make_node
    i64 = np.int64
    return {
        "reshape_add_neg": _fixed("reshape_add_neg", (1, 1, 3, 3), [
            mk("Exp", ["x"], ["e"], name="exp"),
            mk("Reshape", ["e", "shape"], ["r"], name="reshape"),
            mk("Add", ["r", "ones"], ["a"], name="add"),
            mk("Neg", ["e"], ["n"], name="neg"),
        ], {"shape": np.array([3, 3, 1, 1], i64), "ones": np.ones((3, 3, 1, 1), np.float32)}, ["a", "n"]),
        "flatten_unsqueeze_bn_matmul": _fixed("flatten_unsqueeze_bn_matmul", (1, 2, 3, 4), [
            mk("Sigmoid", ["x"], ["s"], name="sigmoid"),
            mk("Flatten", ["s"], ["f"], name="flatten", axis=2),
            mk("Unsqueeze", ["f", "axes"], ["u"], name="unsqueeze"),
            mk("BatchNormalization", ["u", "scale", "bias", "mean", "var"], ["bn"], name="bn"),
            mk("MatMul", ["u", "w"], ["mm"], name="matmul"),
        ], {"axes": np.array([0], i64), "scale": w(2) + 1, "bias": w(2), "mean": w(2),
            "var": np.array([0.8, 1.3], np.float32), "w": w(12, 5, std=0.3)}, ["bn", "mm"]),
        "squeeze_layernorm_div": _fixed("squeeze_layernorm_div", (1, 3, 4), [
            mk("Tanh", ["x"], ["t"], name="tanh"),
            mk("Unsqueeze", ["t", "axes"], ["u"], name="unsqueeze"),
            mk("Div", ["u", "d"], ["dv"], name="div"),
            mk("Squeeze", ["t", "axes0"], ["q"], name="squeeze"),
            mk("LayerNormalization", ["q", "gamma", "beta"], ["ln"], name="layernorm", axis=-1),
        ], {"axes": np.array([1], i64), "axes0": np.array([0], i64), "gamma": w(4) + 1, "beta": w(4),
            "d": np.array([1.5, 0.7, 2.0, -1.2], np.float32)}, ["ln", "dv"]),
        "reshape_add_conv": _fixed("reshape_add_conv", (1, 2, 4, 4), [
            mk("Relu", ["x"], ["y"], name="relu"),
            mk("Reshape", ["y", "shape"], ["r"], name="reshape"),
            mk("Add", ["r", "b"], ["a"], name="add"),
            mk("Conv", ["y", "k"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        ], {"shape": np.array([2, 16], i64), "b": w(16), "k": w(3, 2, 3, 3, std=0.3)}, ["a", "c"]),
    }


# --------------------------------------------------------------------------------------
# Checking one model
# --------------------------------------------------------------------------------------

ARCHS = ("default", "default,cores=1", "default,sram_bytes=65536")
"""The archs the fuzz test runs: 4 cores, one core, 64 KiB SRAM."""
BENCH_ARCHS = ("default", "default,cores=1", "default,cores=2", "default,sram_bytes=65536")
"""The archs bench/fuzz.py runs by default (`default` has 4 cores: `cores=2` is the other count)."""
STATUSES = ("ok", "mismatch", "sanitizer", "refused", "crash")
FAILING = ("mismatch", "sanitizer", "crash")
_SANITIZER = re.compile(r"sanitiz|\brace\b", re.IGNORECASE)
_ORT_LACKS = re.compile(r"(?:Could not find an implementation for|No Op registered for) (\w+)")


@dataclass(frozen=True)
class Outcome:
    """What one compile + simulate + compare gave. `status`: ok, mismatch (wrong
    numbers), sanitizer (the simulator found a race or a sanitizer fault), refused (a
    diagnosed error: unsupported, does not fit), crash (any other exception, or a pass
    producing IR that does not verify). `warnings` are the simulator's."""

    status: str
    max_abs_err: float
    message: str
    warnings: tuple[str, ...] = ()
    finite: bool = True  # every reference output is finite

    @property
    def failed(self) -> bool:
        return self.status in FAILING


def _crash(e: BaseException) -> str:
    """The exception's line and the innermost frame it was raised in."""
    frames = traceback.extract_tb(e.__traceback__)
    where = f" (at {os.path.relpath(frames[-1].filename)}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}{where}"


def reference_outputs(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's outputs; an op it has no kernel for (Swish and SwiGLU at opset 28)
    is replaced by its ONNX function body first."""
    for _ in range(4):
        try:
            return onnxruntime_outputs(model, inputs)
        except Exception as e:
            lacking = _ORT_LACKS.search(str(e))
            if lacking is None:
                raise
            model = expanded(model, lacking.group(1))
    return onnxruntime_outputs(model, inputs)


def expanded(model: onnx.ModelProto, op_type: str) -> onnx.ModelProto:
    """`model` with each `op_type` node replaced by its ONNX function body (the body's
    opset must be the model's or older and read the same there)."""
    g = onnx.shape_inference.infer_shapes(model).graph
    types = {vi.name: vi.type for vi in [*g.input, *g.value_info, *g.output]}
    types.update({t.name: helper.make_tensor_type_proto(t.data_type, list(t.dims)) for t in g.initializer})
    opset = model.opset_import[0].version
    bodies = [functions.expand(n, opset, opset, n.name or f"{n.op_type}#{i}", [types.get(x) for x in n.input])
              for i, n in enumerate(model.graph.node)]
    # the op's nodes, else the nodes whose body uses it (SwiGLU's Swish)
    hits = [n.op_type == op_type for n in model.graph.node]
    if not any(hits):
        hits = [body is not None and any(m.op_type == op_type for m in body.nodes) for body in bodies]
    nodes: list[onnx.NodeProto] = []
    for n, body, hit in zip(model.graph.node, bodies, hits):
        if hit and body is None:
            raise ValueError(f"onnxruntime has no {op_type} and ONNX gives {n.op_type} no body")
        nodes.extend(body.nodes if hit and body is not None else [n])
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    return out


QDQ_WITHIN_ONE = 0.99
"""A QDQ output matches when this share of its elements is within one quantization step
of onnxruntime's (but at least all elements but one: a small output may hold one value
off by a rounding tie upstream - 174.5000076 rounded to 174 by onnxruntime's QLinearAdd,
to 175 by the compiler - grown by an Add after it) and none is beyond `QDQ_MAX_STEPS`
(issue 44's acceptance)."""
QDQ_MAX_STEPS = 3.0


def output_criteria(model: onnx.ModelProto) -> dict[str, tuple[str, float]]:
    """How each output is judged: ("qdq", step) for the output of a DequantizeLinear of a
    constant scale (step: its largest scale; also an output computed from one, with the
    nearest one's step), ("bf16", 0) / ("f16", 0) for an output computed from any
    bfloat16 / float16 value, else ("f32", 0)."""
    g = onnx.shape_inference.infer_shapes(model).graph
    types = {v.name: v.type.tensor_type.elem_type for v in [*g.input, *g.value_info, *g.output]}
    types.update({t.name: t.data_type for t in g.initializer})
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output if o}

    def dq_step(n: onnx.NodeProto) -> float | None:
        if n.op_type != "DequantizeLinear" or len(n.input) < 2 or n.input[1] not in inits:
            return None
        return float(np.max(numpy_helper.to_array(inits[n.input[1]])))

    out: dict[str, tuple[str, float]] = {}
    for o in g.output:
        seen, todo, step, narrow = set(), [o.name], None, set()
        while todo:  # breadth first: the nearest DequantizeLinear's step
            name = todo.pop(0)
            if name in seen:
                continue
            seen.add(name)
            narrow.add(types.get(name, 0))
            n = producer.get(name)
            if n is None:
                continue
            if step is None:
                step = dq_step(n)
            todo.extend(x for x in n.input if x)
        if step is not None:
            out[o.name] = ("qdq", step)
        elif TensorProto.BFLOAT16 in narrow:
            out[o.name] = ("bf16", 0.0)
        elif TensorProto.FLOAT16 in narrow:
            out[o.name] = ("f16", 0.0)
        else:
            out[o.name] = ("f32", 0.0)
    return out


def compare_typed(outputs: dict[str, np.ndarray], refs: dict[str, np.ndarray],
                  criteria: dict[str, tuple[str, float]]) -> tuple[bool, float, list[str]]:
    """(ok, max abs error, problem lines): each output by its `output_criteria` - QDQ ones
    in quantization steps, f16/bf16 ones by `npu-run --check`'s tolerance of the type
    (`tools.tolerance.PRECISION_RTOL`), f32 ones as `compare` judges them."""
    plain = {k: v for k, v in outputs.items() if criteria.get(k, ("f32", 0.0))[0] == "f32"}
    check, problems = compare(plain, {k: v for k, v in refs.items() if k in plain})
    ok, max_abs = bool(check["ok"]), float(check["max_abs_err"])
    for name, got in outputs.items():
        how, step = criteria.get(name, ("f32", 0.0))
        if how == "f32":
            continue
        ref = refs.get(name)
        if ref is None or np.shape(ref) != np.shape(got):
            ok = False
            problems.append(f"output '{name}': shape {list(np.shape(got))}, reference "
                            f"{None if ref is None else list(np.shape(ref))}")
            continue
        g, r = np.asarray(got, np.float64), np.asarray(ref, np.float64)
        err = np.abs(g - r)
        max_abs = max(max_abs, float(err.max(initial=0.0)))
        if how == "qdq":
            steps = err / (step or 1.0)
            beyond = int(np.sum(steps > 1 + 1e-6))
            within = 1.0 - beyond / max(steps.size, 1)
            worst = float(steps.max(initial=0.0))
            if (beyond > max(int((1 - QDQ_WITHIN_ONE) * steps.size), 1) or worst > QDQ_MAX_STEPS + 1e-6
                    or not np.isfinite(worst)):
                ok = False
                problems.append(f"output '{name}' (QDQ, step {step:.3g}) differs from the reference: "
                                f"{100 * within:.1f}% within one step, at most {worst:.3g} steps")
            continue
        m = metrics(g, r, how)
        if not m["ok"]:
            ok = False
            problems.append(f"output '{name}' ({how}) differs from the reference: max abs err "
                            f"{m['max_abs_err']:.3g}, max rel err {m['max_rel_err']:.3g} (rtol {m['rtol']:.3g}, "
                            f"atol {m['atol']:.3g})")
    return ok, max_abs, problems


def check_model(model: onnx.ModelProto, arch_spec: str, seed: int = 0) -> Outcome:
    """Compile `model` for `arch_spec`, simulate it (NPU_SANITIZE=1) on seeded random
    inputs and compare every output with onnxruntime under `npu-run --check`'s
    tolerance (rtol 1e-3, atol 1e-4 * max(1, max|ref|)); QDQ, f16 and bf16 outputs by
    their type (`output_criteria`, `compare_typed`)."""
    nan = float("nan")
    os.environ["NPU_SANITIZE"] = "1"
    try:
        res, inputs = compile_and_run(model, arch_spec, seed=seed)
    except SimError as e:
        return Outcome("sanitizer" if _SANITIZER.search(str(e)) else "refused", nan, str(e))
    except CompileError as e:
        if isinstance(e.__cause__, VerifyException):
            return Outcome("crash", nan, "invalid IR: " + _crash(e.__cause__))
        return Outcome("refused", nan, str(e))
    except (OnnxImportError, TilingError) as e:
        return Outcome("refused", nan, str(e))
    except Exception as e:  # anything else is a bug of ours
        return Outcome("crash", nan, _crash(e))
    warnings = tuple(res.report.get("warnings", ()))
    races = [w for w in warnings if w.startswith("race:")]
    if races:  # (a missing fence between a core's units: wrong on hardware, whatever the outputs)
        return Outcome("sanitizer", nan, races[0], warnings)
    try:
        ref = reference_outputs(model, inputs)
    except Exception as e:  # onnxruntime raises many types; a generator bug
        return Outcome("crash", nan, "onnxruntime: " + _crash(e), warnings)
    ok, max_abs, problems = compare_typed(res.outputs, ref, output_criteria(model))
    finite = all(bool(np.isfinite(np.asarray(v, np.float64)).all()) for v in ref.values())
    return Outcome("ok" if ok else "mismatch", max_abs, "; ".join(problems), warnings, finite)

"""Random small ONNX graphs for differential testing: the compiler plus the
simulator against onnxruntime.

`random_model(seed)` grows a graph from 1-2 inputs by keeping a pool of live
tensors with known shapes and drawing consumers for them. Tensors often get 2-3
readers and view ops (Reshape, Flatten, Squeeze, Unsqueeze) are frequent, with
an elementwise op after the view next to another reader of the viewed tensor:
the shape of graph where an in-place elementwise kernel may overwrite a buffer
that another consumer still needs. Values stay well scaled (a rough bound per
tensor: Exp only of small ones, large ones squashed by Tanh first, weights scaled by
1/sqrt(fan-in)) so float32 comparisons are meaningful.

`check_model(model, arch_spec)` compiles and simulates a model and compares it with
onnxruntime; `view_bug_models()` are the fixed reproducers of the view/in-place bug.
"""

from __future__ import annotations

import os
import re
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.utils.exceptions import VerifyException

from lowering.errors import CompileError
from lowering.importer.onnx_import import OnnxImportError
from lowering.tile.tile_search import TilingError
from sim import SimError
from tools.npu_run import compare
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs

OPSET = 17
MAX_NODES = 15  # after pruning what no output needs
MAX_GROWN = 25  # nodes grown before pruning
MAX_ELEMS = 2048  # no tensor grows beyond this many elements
MAX_RANK = 4
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
UNARY = ("Exp", "Neg", "Relu", "Sigmoid", "Tanh", "Abs")
BINARY = ("Add", "Mul", "Sub", "Div")
EXP_MAX_INPUT = 4.0  # Exp only reads tensors bounded by this
SQUASH_ABOVE = 30.0  # a tensor bounded by more than this is squashed (Tanh) before anything else

Shape = tuple[int, ...]


@dataclass(frozen=True)
class _Tensor:
    """A live tensor: its name, static shape and a rough bound on |value|."""

    name: str
    shape: Shape
    mag: float

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class _Builder:
    """The graph under construction: nodes, initializers, the pool of live tensors
    and how often each tensor is read."""

    def __init__(self, rng: np.random.Generator, limit: int):
        self.rng = rng
        self.limit = limit  # nodes to grow
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[_Tensor] = []
        self.pool: list[_Tensor] = []
        self.readers: Counter[str] = Counter()
        self.wants_reader: list[_Tensor] = []  # viewed tensors still waiting for their other reader
        self.motif_outputs: list[str] = []  # view-chain results and other readers of the viewed tensors

    # ----------------------------------------------------------------- primitives

    def input(self, shape: Shape) -> _Tensor:
        t = _Tensor(f"in{len(self.inputs)}", shape, 4.0)
        self.inputs.append(t)
        self.pool.append(t)
        return t

    def const(self, data: np.ndarray) -> str:
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(data), name))
        return name

    def normal(self, shape: Sequence[int], std: float) -> str:
        return self.const((self.rng.standard_normal(tuple(shape)) * std).astype(np.float32))

    def node(self, op: str, inputs: Sequence[_Tensor | str], shape: Sequence[int], mag: float,
             **attrs: Any) -> _Tensor:
        """Append `op` reading `inputs` (tensors or initializer names); returns its output."""
        k = len(self.nodes)
        out = _Tensor(f"t{k}", tuple(int(d) for d in shape), float(mag))
        names = [x.name if isinstance(x, _Tensor) else x for x in inputs]
        self.nodes.append(helper.make_node(op, names, [out.name], name=f"{op.lower()}{k}", **attrs))
        for x in inputs:
            if isinstance(x, _Tensor):
                self.readers[x.name] += 1
        self.pool.append(out)
        return out

    def budget(self) -> int:
        return self.limit - len(self.nodes)

    # ----------------------------------------------------------------- picking

    def pick(self) -> _Tensor:
        """A live tensor to read next: mostly one with no or one reader yet (so tensors
        get 2-3 readers), the newest ones more often; first any viewed tensor whose
        other reader is still missing."""
        if self.wants_reader and self.rng.random() < 0.8:
            return self.wants_reader.pop(int(self.rng.integers(len(self.wants_reader))))
        w = np.array([{0: 3.0, 1: 2.5, 2: 1.0}.get(self.readers[t.name], 0.3) for t in self.pool])
        w[-2:] += 2.0
        return self.pool[int(self.rng.choice(len(self.pool), p=w / w.sum()))]

    def partner(self, ok: Callable[[_Tensor], bool], t: _Tensor) -> _Tensor | None:
        """Another live tensor satisfying `ok` (t itself only if nothing else does), or None."""
        cands = [p for p in self.pool if ok(p) and p.name != t.name]
        if not cands:
            return t if ok(t) else None
        return cands[int(self.rng.integers(len(cands)))]

    # ----------------------------------------------------------------- ops

    def unary(self, t: _Tensor, op: str | None = None) -> _Tensor:
        ops = [o for o in UNARY if o != "Exp" or t.mag <= EXP_MAX_INPUT]
        op = op or ops[int(self.rng.integers(len(ops)))]
        mag = float(np.exp(t.mag)) if op == "Exp" else 1.0 if op in ("Sigmoid", "Tanh") else t.mag
        return self.node(op, [t], t.shape, mag)

    def binary_const(self, t: _Tensor) -> _Tensor:
        """Add/Mul/Sub/Div with an initializer broadcasting to t (a random subset of its
        dims kept, the others 1, leading ones sometimes dropped: per channel, per row, a
        scalar...); a divisor is kept in +-[0.5, 2]."""
        op = BINARY[int(self.rng.integers(len(BINARY)))]
        keep = self.rng.random(len(t.shape)) < 0.5
        shape = [d if k else 1 for d, k in zip(t.shape, keep)]
        shape = shape[int(self.rng.integers(len(shape) + 1)):]
        if op == "Div":
            data = self.rng.uniform(0.5, 2.0, shape) * self.rng.choice([-1.0, 1.0], shape)
            return self.node(op, [t, self.const(data.astype(np.float32))], t.shape, 2 * t.mag)
        c = self.normal(shape, 0.5)
        args = [t, c] if self.rng.random() < 0.6 else [c, t]
        mag = t.mag * 2.0 if op == "Mul" else t.mag + 2.0
        return self.node(op, args, t.shape, mag)

    def binary_live(self, t: _Tensor) -> _Tensor | None:
        """Add/Mul/Sub with another live tensor broadcasting against t, or Div by
        (Abs(other) + 1)."""
        def fits(p: _Tensor) -> bool:
            s = _broadcast(t.shape, p.shape)
            return s is not None and int(np.prod(s)) <= MAX_ELEMS
        p = self.partner(fits, t)
        if p is None:
            return None
        shape = _broadcast(t.shape, p.shape)
        assert shape is not None
        ops = ["Add", "Sub"] + (["Mul"] if t.mag * p.mag <= 4 * SQUASH_ABOVE else [])
        if self.budget() >= 3:
            ops.append("Div")
        op = ops[int(self.rng.integers(len(ops)))]
        if op == "Div":
            d = self.node("Add", [self.node("Abs", [p], p.shape, p.mag), self.const(np.array(1.0, np.float32))],
                          p.shape, p.mag + 1)
            return self.node("Div", [t, d], shape, t.mag)
        args = [t, p] if self.rng.random() < 0.5 else [p, t]
        return self.node(op, args, shape, t.mag * p.mag if op == "Mul" else t.mag + p.mag)

    def view(self, t: _Tensor) -> _Tensor:
        """Reshape, Flatten, Squeeze or Unsqueeze of t (what its rank and shape allow;
        the result has rank 1 to MAX_RANK)."""
        ops = ["Reshape", "Flatten"]
        ones = [d for d, s in enumerate(t.shape) if s == 1]
        if len(t.shape) == len(ones):  # keep one dim
            ones = ones[1:]
        if ones:
            ops.append("Squeeze")
        if len(t.shape) < MAX_RANK:
            ops.append("Unsqueeze")
        op = ops[int(self.rng.integers(len(ops)))]
        r = len(t.shape)
        if op == "Flatten":
            axis = int(self.rng.integers(r + 1))
            head = int(np.prod(t.shape[:axis], dtype=np.int64))
            return self.node(op, [t], (head, t.size // head), t.mag, axis=axis)
        if op == "Squeeze":
            axes = sorted(int(a) for a in self.rng.choice(ones, size=int(self.rng.integers(1, len(ones) + 1)),
                                                          replace=False))
            shape = [s for d, s in enumerate(t.shape) if d not in axes]
            axes = [a - r if self.rng.random() < 0.3 else a for a in axes]
            return self.node(op, [t, self.const(np.array(axes, np.int64))], shape, t.mag)
        if op == "Unsqueeze":
            axis = int(self.rng.integers(r + 1))
            shape = [*t.shape[:axis], 1, *t.shape[axis:]]
            return self.node(op, [t, self.const(np.array([axis], np.int64))], shape, t.mag)
        shape = _factorize(t.size, int(self.rng.integers(1, MAX_RANK + 1)), self.rng)
        spec = list(shape)
        if self.rng.random() < 0.3:
            spec[int(self.rng.integers(len(spec)))] = -1
        return self.node(op, [t, self.const(np.array(spec, np.int64))], shape, t.mag)

    def batchnorm(self, t: _Tensor) -> _Tensor:
        c = t.shape[1]
        scale = self.rng.uniform(0.5, 1.5, c) * self.rng.choice([-1.0, 1.0], c)
        args = [t, self.const(scale.astype(np.float32)), self.normal([c], 0.5), self.normal([c], 0.5),
                self.const(self.rng.uniform(0.5, 1.5, c).astype(np.float32))]
        return self.node("BatchNormalization", args, t.shape, 1.5 * (t.mag + 1) + 1)

    def layernorm(self, t: _Tensor) -> _Tensor:
        n = t.shape[-1]
        args: list[_Tensor | str] = [t, self.const(self.rng.uniform(0.5, 1.5, n).astype(np.float32))]
        if self.rng.random() < 0.7:
            args.append(self.normal([n], 0.5))
        return self.node("LayerNormalization", args, t.shape, 1.5 * np.sqrt(n) + 1.5, axis=-1)

    def matmul(self, t: _Tensor) -> _Tensor | None:
        """t @ W (a weight), t @ another live tensor, or t @ t^T / t^T @ t."""
        k = t.shape[-1]
        choice = self.rng.random()
        if choice < 0.4:
            n = int(self.rng.integers(1, 9))
            w = self.normal([k, n], 1 / np.sqrt(k))
            return self.node("MatMul", [t, w], (*t.shape[:-1], n), 2 * t.mag)
        if choice < 0.7:
            def fits(p: _Tensor) -> bool:
                s = _matmul_shape(t.shape, p.shape)
                return s is not None and int(np.prod(s)) <= MAX_ELEMS
            p = self.partner(fits, t)
            if p is not None and p.name != t.name:
                shape = _matmul_shape(t.shape, p.shape)
                assert shape is not None
                return self.node("MatMul", [t, p], shape, t.mag * p.mag * np.sqrt(k))
        if self.budget() < 2 or t.mag > 5:
            return None
        perm = [*range(len(t.shape) - 2), len(t.shape) - 1, len(t.shape) - 2]
        tt = self.node("Transpose", [t], [t.shape[p] for p in perm], t.mag, perm=perm)
        a, b = (t, tt) if self.rng.random() < 0.5 else (tt, t)
        shape = _matmul_shape(a.shape, b.shape)
        assert shape is not None
        return self.node("MatMul", [a, b], shape, t.mag * t.mag * np.sqrt(a.shape[-1]))

    def conv(self, t: _Tensor) -> _Tensor | None:
        """A 1x1 or 3x3 convolution (pads, stride 2 sometimes, depthwise sometimes, bias)."""
        _, c, h, w = t.shape
        k = 3 if self.rng.random() < 0.6 else 1
        pad = int(self.rng.integers(2)) if k == 3 else int(self.rng.random() < 0.15)
        if h + 2 * pad < k or w + 2 * pad < k:
            return None
        stride = 2 if self.rng.random() < 0.2 else 1
        group = c if c > 1 and self.rng.random() < 0.15 else 1
        co = c if group > 1 else int(self.rng.integers(1, 9))
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        fan_in = c // group * k * k
        args: list[_Tensor | str] = [t, self.normal([co, c // group, k, k], 1 / np.sqrt(fan_in))]
        if self.rng.random() < 0.5:
            args.append(self.normal([co], 0.5))
        return self.node("Conv", args, (t.shape[0], co, oh, ow), 2 * t.mag + 1, kernel_shape=[k, k],
                         pads=[pad] * 4, strides=[stride] * 2, group=group)

    def pooling(self, t: _Tensor) -> _Tensor | None:
        """MaxPool or AveragePool, 2x2 or 3x3, stride 1 or the kernel size."""
        _, c, h, w = t.shape
        k = 2 if self.rng.random() < 0.6 else 3
        if min(h, w) < k:
            return None
        s = k if self.rng.random() < 0.6 else 1
        op = "MaxPool" if self.rng.random() < 0.5 else "AveragePool"
        shape = (t.shape[0], c, (h - k) // s + 1, (w - k) // s + 1)
        return self.node(op, [t], shape, t.mag, kernel_shape=[k, k], strides=[s, s])

    def softmax(self, t: _Tensor) -> _Tensor:
        axis = int(self.rng.integers(-len(t.shape), len(t.shape)))
        return self.node("Softmax", [t], t.shape, 1.0, axis=axis)

    def transpose(self, t: _Tensor) -> _Tensor | None:
        perm = [int(p) for p in self.rng.permutation(len(t.shape))]
        if perm == sorted(perm):
            perm = perm[1:] + perm[:1]
        if perm == sorted(perm):
            return None
        return self.node("Transpose", [t], [t.shape[p] for p in perm], t.mag, perm=perm)

    def concat(self, t: _Tensor) -> _Tensor | None:
        """Concat along axis 1 with a live tensor matching t elsewhere (else with t itself)."""
        def fits(p: _Tensor) -> bool:
            return (len(p.shape) == len(t.shape) and p.shape[:1] + p.shape[2:] == t.shape[:1] + t.shape[2:]
                    and t.size + p.size <= MAX_ELEMS)
        p = self.partner(fits, t)
        if p is None:
            return None
        args = [t, p] if self.rng.random() < 0.5 else [p, t]
        shape = (t.shape[0], t.shape[1] + p.shape[1], *t.shape[2:])
        return self.node("Concat", args, shape, max(t.mag, p.mag), axis=1)

    def view_motif(self, t: _Tensor) -> _Tensor:
        """The in-place hazard: t -> view(s) -> elementwise, and another reader of t
        (now, or soon through `wants_reader`)."""
        v = self.view(t)
        if self.budget() >= 3 and self.rng.random() < 0.25:
            v = self.view(v)
        e = self.unary(v) if self.rng.random() < 0.5 else self.binary_const(v)
        self.motif_outputs.append(e.name)
        if self.budget() >= 1 and self.rng.random() < 0.5:
            other = self.step(t, motif=False)
            if other is not None:
                self.motif_outputs.append(other.name)
        else:
            self.wants_reader.append(t)
        return e

    # ----------------------------------------------------------------- growth

    def step(self, t: _Tensor, motif: bool = True) -> _Tensor | None:
        """One op (or a few) reading t, drawn among those its shape allows; None when
        the drawn op does not fit."""
        if t.mag > SQUASH_ABOVE:
            return self.unary(t, "Tanh")
        r = len(t.shape)
        table: list[tuple[float, Callable[[_Tensor], _Tensor | None]]] = [
            (3.0, self.unary), (2.0, self.binary_const), (1.5, self.binary_live), (2.0, self.view),
            (1.0, self.softmax), (1.0, self.layernorm)]
        if motif and self.budget() >= 3:
            table.append((4.0, self.view_motif))
        if r >= 2:
            table += [(1.0, self.batchnorm), (1.5, self.matmul), (1.0, self.transpose), (1.0, self.concat)]
        if r == 4:
            table += [(2.0, self.conv), (2.0, self.pooling)]
        w = np.array([x for x, _ in table])
        make = table[int(self.rng.choice(len(table), p=w / w.sum()))][1]
        return make(t)


def _broadcast(a: Shape, b: Shape) -> Shape | None:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _matmul_shape(a: Shape, b: Shape) -> Shape | None:
    """numpy matmul's result shape for operands of rank >= 2, or None."""
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        return None
    batch = _broadcast(a[:-2], b[:-2])
    return None if batch is None else (*batch, a[-2], b[-1])


def _factorize(n: int, rank: int, rng: np.random.Generator) -> Shape:
    """A random shape of `rank` dims with n elements (n's prime factors dealt out)."""
    dims = [1] * rank
    p, m = 2, n
    while m > 1:
        while m % p == 0:
            dims[int(rng.integers(rank))] *= p
            m //= p
        p += 1
    return tuple(dims)


def _input_shapes(rng: np.random.Generator) -> list[Shape]:
    """1-2 graph input shapes: [1, C, H, W], or 2-D / 3-D matrices for matmul paths
    (the second one the same shape, a different channel count, or a right operand)."""
    if rng.random() < 0.6:
        c, h, w = (int(x) for x in rng.integers(1, 9, 3))
        first: Shape = (1, c, h, w)
        second: Shape = first if rng.random() < 0.6 else (1, int(rng.integers(1, 9)), h, w)
    else:
        m, k = (int(x) for x in rng.integers(1, 9, 2))
        batch = (int(rng.integers(1, 4)),) if rng.random() < 0.5 else ()
        first = (*batch, m, k)
        second = first if rng.random() < 0.5 else (*batch, k, int(rng.integers(1, 9)))
    return [first, second] if rng.random() < 0.4 else [first]


def _prune(nodes: list[onnx.NodeProto], outputs: Sequence[str]) -> list[onnx.NodeProto]:
    """The nodes some output depends on, in their original order."""
    needed = set(outputs)
    keep = []
    for n in reversed(nodes):
        if needed & set(n.output):
            keep.append(n)
            needed.update(n.input)
    return keep[::-1]


def _choose_outputs(b: _Builder) -> list[str]:
    """1-3 graph outputs: often the motif tensors (a view-chain result and another
    reader of the viewed tensor), unread tensors with the most nodes behind them
    (least pruned away), and sometimes a tensor that is also read."""
    made = [t.name for t in b.pool if t not in b.inputs]
    leaves = [n for n in made if not b.readers[n]]
    depth = {n: len(_prune(b.nodes, [n])) + b.rng.random() for n in leaves}
    leaves.sort(key=depth.__getitem__, reverse=True)
    n_out = int(b.rng.integers(1, 4))
    cands = leaves[:1] + (b.motif_outputs if b.rng.random() < 0.7 else []) + leaves[1:]
    if b.rng.random() < 0.2:
        cands.insert(1, made[int(b.rng.integers(len(made)))])
    outs: list[str] = []
    for n in cands:
        if len(outs) < n_out and n not in outs:
            outs.append(n)
    return outs


def _grow(rng: np.random.Generator) -> tuple[_Builder, list[onnx.NodeProto], list[str]]:
    """One attempt: up to about MAX_GROWN nodes, the outputs chosen and the nodes they need."""
    b = _Builder(rng, int(rng.integers(3, MAX_GROWN + 1)))
    for s in _input_shapes(rng):
        b.input(s)
    while b.budget() > 0:
        b.step(b.pick())
    outs = _choose_outputs(b)
    return b, _prune(b.nodes, outs), outs


def _is_view(node: onnx.NodeProto, shapes: dict[str, Shape]) -> bool:
    """A view op, or a Transpose that only moves size-1 dims (the compiler makes it a
    reshape: the data layout is unchanged)."""
    if node.op_type in VIEW_OPS:
        return True
    if node.op_type != "Transpose":
        return False
    shape = shapes[node.input[0]]
    perm = next(list(a.ints) for a in node.attribute if a.name == "perm")
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def graph_stats(model: onnx.ModelProto) -> dict:
    """`views_multi_reader` (a tensor read by a view - see `_is_view` - and by at least
    one other consumer: a node or the graph's output), `n_nodes`, `op_types` (op type ->
    count), `n_inputs`, `n_outputs`."""
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
            "n_inputs": len(g.input), "n_outputs": len(g.output)}


def random_model(seed: int) -> tuple[onnx.ModelProto, dict]:
    """A random opset-17 float32 graph of 3-15 named nodes with 1-2 inputs and 1-3
    outputs (shapes filled in by ONNX shape inference), and its `graph_stats`."""
    rng = np.random.default_rng(seed)
    while True:
        b, nodes, outs = _grow(rng)
        if 3 <= len(nodes) <= MAX_NODES:
            break
    used = {x for n in nodes for x in n.input}
    inputs = [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, list(t.shape))
              for t in b.inputs if t.name in used]
    inits = [w for w in b.inits if w.name in used]
    graph = helper.make_graph(nodes, f"fuzz{seed}", inputs,
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outs], inits)
    model = _finish(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]))
    shapes = {t.name: t.shape for t in b.pool}
    for o in model.graph.output:
        got = tuple(d.dim_value for d in o.type.tensor_type.shape.dim)
        assert got == shapes[o.name], f"seed {seed}: {o.name} inferred {got}, built {shapes[o.name]}"
    return model, graph_stats(model)


def _finish(model: onnx.ModelProto) -> onnx.ModelProto:
    """Check the model and fill its outputs' shapes by strict shape inference."""
    model.ir_version = min(model.ir_version, 8)  # loadable by older onnxruntime too
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    del model.graph.value_info[:]  # only the outputs' shapes are kept
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
    return _finish(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)]))


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
"""The archs the fuzz test and benchmark run by default: 4 cores, one core, 64 KiB SRAM."""
STATUSES = ("ok", "mismatch", "sanitizer", "refused", "crash")
_SANITIZER = re.compile(r"sanitiz|\brace\b", re.IGNORECASE)


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


def _crash(e: BaseException) -> str:
    """The exception's line and the innermost frame it was raised in."""
    frames = traceback.extract_tb(e.__traceback__)
    where = f" (at {os.path.relpath(frames[-1].filename)}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}{where}"


def check_model(model: onnx.ModelProto, arch_spec: str, seed: int = 0) -> Outcome:
    """Compile `model` for `arch_spec`, simulate it (NPU_SANITIZE=1) on seeded random
    inputs and compare every output with onnxruntime under `npu-run --check`'s
    tolerance (rtol 1e-3, atol 1e-4 * max(1, max|ref|))."""
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
    try:
        ref = onnxruntime_outputs(model, inputs)
    except Exception as e:  # onnxruntime raises many types; a generator bug
        return Outcome("crash", nan, "onnxruntime: " + _crash(e), warnings)
    check, problems = compare(res.outputs, ref)
    return Outcome("ok" if check["ok"] else "mismatch", check["max_abs_err"], "; ".join(problems), warnings)

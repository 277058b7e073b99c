"""Shrinking a failing fuzz graph to a minimal reproducer: delta debugging over its
nodes (a node is dropped by rewiring its readers to a live tensor of the same type and
shape, else to a new graph input), then smaller graph inputs (each dim tried at 1, half
and one less); a candidate counts when it still fails the same way (`signature`). The
result is written as an .onnx file with the command that reproduces it.

Graph outputs go first, and the graph is cut after the first inner value that
fails as the only output. `shrink(model, still_fails)` is generic; `same_failure(arch, outcome)` is the usual
predicate: the candidate, compiled and simulated on `arch`, fails with the outcome's
signature (a mismatch only counts where the reference outputs are all finite, so the
shrinker cannot trade a wrong result for NaNs of inputs outside an op's domain).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import onnx
from onnx import helper

from tools.testkit.fuzz_graphs import Outcome, check_model, finish

Predicate = Callable[[onnx.ModelProto], bool]
_TYPES_OK = (onnx.TensorProto.FLOAT, onnx.TensorProto.BOOL, onnx.TensorProto.FLOAT16)
"""Element types a cut value may take as a new graph input (random integers would make
indices out of range: a different failure; onnxruntime takes no bfloat16 input)."""


def signature(o: Outcome) -> str:
    """What identifies a failure across graphs: the status and its message's first line
    with numbers, quoted names and shapes masked (a crash keeps its exception type and
    the frame it was raised in)."""
    line = (o.message.strip().splitlines() or [""])[0]
    if o.status == "mismatch":
        return "mismatch"
    where = re.search(r"\(at [^)]*\)$", line)
    text = re.sub(r"\(ONNX nodes? [^)]*\)", "", line[: where.start()] if where else line)  # (the nodes it names)
    text = re.sub(r"'[^']*'|\[[^\]]*\]|\d+(\.\d+)?(e-?\d+)?", "_", text)
    frame = " " + re.sub(r":\d+ ", " ", where.group(0)) if where else ""  # (the function, not the line)
    return f"{o.status}: {text.strip()[:160]}{frame}"


def same_failure(arch: str, outcome: Outcome) -> Predicate:
    """A candidate fails on `arch` with `outcome`'s signature."""
    want = signature(outcome)

    def still_fails(m: onnx.ModelProto) -> bool:
        o = check_model(m, arch)
        return o.failed and signature(o) == want and (o.status != "mismatch" or o.finite)
    return still_fails


@dataclass
class _Graph:
    """A model taken apart: nodes, inputs (name -> value info), outputs, initializers,
    and the type of every value (from shape inference)."""

    model: onnx.ModelProto
    nodes: list[onnx.NodeProto]
    inputs: dict[str, onnx.ValueInfoProto]
    outputs: list[str]
    types: dict[str, onnx.TypeProto]

    @staticmethod
    def of(model: onnx.ModelProto) -> _Graph:
        g = onnx.shape_inference.infer_shapes(model, data_prop=True).graph
        types = {v.name: v.type for v in [*g.input, *g.value_info, *g.output]}
        return _Graph(model, list(model.graph.node), {i.name: i for i in model.graph.input},
                      [o.name for o in model.graph.output], types)

    def build(self, nodes: Sequence[onnx.NodeProto], inputs: dict[str, onnx.ValueInfoProto],
              outputs: Sequence[str]) -> onnx.ModelProto | None:
        """A checked model of these parts (dead nodes, unused inputs and initializers
        left out), or None when ONNX rejects it."""
        live, keep = set(outputs), []
        for n in reversed(nodes):
            if live & set(n.output):
                keep.append(n)
                live.update(x for x in n.input if x)
        keep.reverse()
        g = self.model.graph
        graph = helper.make_graph(
            keep, g.name, [v for k, v in inputs.items() if k in live],
            [helper.make_tensor_value_info(o, self.types[o].tensor_type.elem_type, None) for o in outputs],
            [t for t in g.initializer if t.name in live])
        model = helper.make_model(graph, opset_imports=list(self.model.opset_import))
        try:
            return finish(model, {o: _dims(self.types[o]) for o in outputs})
        except Exception:  # (a cut that ONNX cannot type, e.g. a double tensor)
            return None


def _dims(t: onnx.TypeProto) -> tuple[int, ...]:
    return tuple(d.dim_value for d in t.tensor_type.shape.dim)


def _known(t: onnx.TypeProto | None) -> bool:
    return (t is not None and t.HasField("tensor_type") and t.tensor_type.elem_type in _TYPES_OK
            and t.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in t.tensor_type.shape.dim))


def _without(g: _Graph, drop: set[int], nodes: list[onnx.NodeProto], inputs: dict[str, onnx.ValueInfoProto],
             outputs: list[str]) -> onnx.ModelProto | None:
    """The graph without the nodes at `drop`: each value they made that is still read goes
    to an earlier value of its type and shape (a graph input or a kept node's output),
    else to a new graph input; a graph output they made is dropped while others remain."""
    made = {o for i in drop for o in nodes[i].output if o}
    outs = [o for o in outputs if o not in made] or list(outputs)
    inputs = dict(inputs)
    rename: dict[str, str] = {}
    for i, n in enumerate(nodes):
        for o in n.output:
            if o not in made:
                continue
            t = g.types.get(o)
            earlier = [x for x in inputs if g.types.get(x) == t] + [
                x for j, m in enumerate(nodes[:i]) if j not in drop for x in m.output if x and g.types.get(x) == t]
            if earlier and t is not None:
                rename[o] = earlier[-1]
            elif _known(t):
                assert t is not None
                inputs[o] = helper.make_value_info(o, t)
            else:
                return None
    kept = []
    for i, n in enumerate(nodes):
        if i in drop:
            continue
        m = onnx.NodeProto()
        m.CopyFrom(n)
        m.input[:] = [rename.get(x, x) for x in n.input]
        kept.append(m)
    outs = [rename.get(o, o) for o in outs]
    if any(o in inputs for o in outs):
        return None  # (an output that is a graph input: nothing left to compile)
    return g.build(kept, inputs, list(dict.fromkeys(outs)))


def _ddmin(model: onnx.ModelProto, still_fails: Predicate, deadline: float) -> onnx.ModelProto:
    """Drop chunks of nodes, halving the chunk size when no chunk can go, down to single
    nodes, until no single node can go (or the deadline passes)."""
    chunks = 2
    while time.time() < deadline:
        g = _Graph.of(model)
        n = len(g.nodes)
        if n <= 1:
            break
        size = max(1, -(-n // chunks))
        progress = False
        for start in range(n - size, -size, -size):  # (later nodes first: fewer readers to rewire)
            drop = set(range(max(start, 0), min(start + size, n)))
            cand = _without(g, drop, g.nodes, g.inputs, g.outputs)
            if cand is not None and len(cand.graph.node) < n and still_fails(cand):
                model, progress = cand, True
                break
            if time.time() > deadline:
                break
        if progress:
            chunks = max(chunks - 1, 2)
        elif size == 1:
            break
        else:
            chunks = min(chunks * 2, n)
    return model


def _drop_outputs(model: onnx.ModelProto, still_fails: Predicate) -> onnx.ModelProto:
    """Keep one graph output when one is enough."""
    g = _Graph.of(model)
    for o in g.outputs:
        if len(g.outputs) > 1:
            cand = g.build(g.nodes, g.inputs, [o])
            if cand is not None and still_fails(cand):
                return cand
    return model


def _truncate(model: onnx.ModelProto, still_fails: Predicate, deadline: float) -> onnx.ModelProto:
    """The graph up to the first value that fails as its only output (a wrong Sigmoid
    early in a chain is one node, whatever follows it)."""
    g = _Graph.of(model)
    for n in g.nodes:
        for o in n.output:
            if time.time() > deadline:
                return model
            if not o or o in g.outputs and len(g.outputs) == 1 or not _known(g.types.get(o)):
                continue
            cand = g.build(g.nodes, g.inputs, [o])
            if cand is not None and len(cand.graph.node) < len(g.nodes) and still_fails(cand):
                return cand
    return model


def _shrink_dims(model: onnx.ModelProto, still_fails: Predicate, deadline: float) -> onnx.ModelProto:
    """Each graph input dim tried at 1, half and one less (when the graph still types)."""
    changed = True
    while changed and time.time() < deadline:
        changed = False
        for inp in model.graph.input:
            dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
            for axis, d in enumerate(dims):
                for smaller in sorted({1, d // 2, d - 1} - {0, d}):
                    cand = _resized(model, inp.name, axis, smaller)
                    if cand is not None and still_fails(cand):
                        model, changed = cand, True
                        break
                if changed or time.time() > deadline:
                    break
            if changed:
                break
    return model


def _resized(model: onnx.ModelProto, name: str, axis: int, size: int) -> onnx.ModelProto | None:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inp = next(i for i in m.graph.input if i.name == name)
    inp.type.tensor_type.shape.dim[axis].dim_value = size
    try:
        return finish(m)
    except Exception:
        return None


def shrink(model: onnx.ModelProto, still_fails: Predicate, seconds: float = 300.0) -> onnx.ModelProto:
    """A smaller model for which `still_fails` holds (`model` itself when nothing smaller
    does): graph outputs, a prefix ending at an inner value, then nodes (delta debugging),
    then input dims, then nodes again."""
    deadline = time.time() + seconds
    model = _drop_outputs(model, still_fails)
    model = _truncate(model, still_fails, deadline)
    model = _ddmin(model, still_fails, deadline)
    model = _shrink_dims(model, still_fails, deadline)
    return _ddmin(model, still_fails, deadline)


def repro_command(path: str, arch: str) -> str:
    """The one-line command that reproduces a written reproducer."""
    return f"NPU_SANITIZE=1 npu-run {path} --arch '{arch}' --check --no-cache"


def write_repro(model: onnx.ModelProto, directory: str, stem: str, arch: str) -> tuple[str, str]:
    """Save `model` as DIR/STEM.onnx; returns its path and the reproduce command."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, re.sub(r"[^\w.,=-]+", "_", stem) + ".onnx")
    onnx.save(model, path)
    return path, repro_command(path, arch)

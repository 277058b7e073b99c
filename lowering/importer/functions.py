"""ONNX ops defined as functions: an op the importer has no converter for, whose
schema carries a function body in ONNX's own library (Elu, Selu, Softplus, Mish,
ReduceL2, MeanVarianceNormalization ...) or builds one from the node and its input
types (LogSoftmax, GroupNormalization, RMSNormalization, DepthToSpace ...), is
imported as that body: `expand(node, opset, input_types)` gives its nodes, renamed so
they read the node's inputs and write its outputs, with the attributes they take from
the node (or the schema's defaults) filled in. The importer then converts them one by
one, each at the body's opset, and names them `NODE/OpType#i` in diagnostics and
locations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import onnx
from onnx import defs

CHECKED_CONTEXT_DEPENDENT = frozenset({
    "CausalConvWithState", "CenterCropPad", "DepthToSpace", "GroupNormalization", "LogSoftmax",
    "NegativeLogLikelihoodLoss", "RMSNormalization", "RotaryEmbedding", "SoftmaxCrossEntropyLoss", "SpaceToDepth"})
"""The ops with a per-node function body whose every float conformance case passes
(bench/results/conformance.md): the ones `supported_op_types` claims. Others still
import wherever their body does (Bernoulli, LinearAttention where ONNX builds one);
Attention has a converter (`attention.py`)."""


@dataclass
class Body:
    """An op's function body: its nodes (renamed into the graph) and the opset they are read at."""

    nodes: list[onnx.NodeProto]
    opset: int
    op_type: str


def schema(op_type: str, opset: int, max_opset: int | None = None) -> Any:
    """The default-domain schema of `op_type` at `opset` when it has a function body, else
    None (an `onnx.defs.OpSchema`, typed Any: onnx's stubs lack its function members).
    A schema without one borrows the body of the newest version up to `max_opset` when
    that version reads every older node the same way (`_extends`): ONNX bumped such
    versions for element types or an attribute whose default is the old behaviour
    (DepthToSpace and SpaceToDepth 13 -> 28), or turned the `axes` attribute into an
    input (ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare 13 -> 18:
    `expand` moves the node's axes into a constant)."""
    try:
        s: Any = defs.get_schema(op_type, opset)
        newest: Any = defs.get_schema(op_type, max_opset) if max_opset else s
    except defs.SchemaError:
        return None
    if s.has_function or s.has_context_dependent_function:
        return s
    if (newest.has_function or newest.has_context_dependent_function) and (
            _extends(newest, s) or _extends(newest, s, axes_input=True)):
        return newest
    return None


def _extends(newer: Any, older: Any, axes_input: bool = False) -> bool:
    """Whether every node of `older` means the same under `newer`: the same inputs and
    outputs, the same attributes with the same defaults, and any added attribute
    optional (a node of the older opset cannot set it: the importer rejects attributes
    its opset does not define; ONNX gives an added attribute the old behaviour as its
    default, e.g. SpaceToDepth-28's mode=DCR). With `axes_input`: once older's `axes`
    attribute is read as newer's last, optional `axes` input."""
    def attr(a: Any) -> tuple:
        return a.required, a.default_value.SerializeToString()
    old_inputs = [(i.name, i.option) for i in older.inputs]
    old_attrs = dict(older.attributes)
    if axes_input:
        if "axes" not in old_attrs or "axes" in newer.attributes:
            return False
        old_inputs.append(("axes", defs.OpSchema.FormalParameterOption.Optional))
        del old_attrs["axes"]
    return ([(i.name, i.option) for i in newer.inputs] == old_inputs
            and [(o.name, o.option) for o in newer.outputs] == [(o.name, o.option) for o in older.outputs]
            and all(k in newer.attributes and attr(newer.attributes[k]) == attr(a) for k, a in old_attrs.items())
            and not any(a.required for k, a in newer.attributes.items() if k not in old_attrs))


def _axes_as_input(node: onnx.NodeProto, s: Any, label: str) -> tuple[onnx.NodeProto, list[onnx.NodeProto]]:
    """`node` read by schema `s`: an `axes` attribute that `s` takes as its last input
    becomes a Constant node (returned to go first) feeding that input."""
    axes = next((a for a in node.attribute if a.name == "axes"), None)
    formal = [i.name for i in s.inputs]
    if axes is None or "axes" in s.attributes or formal[-1:] != ["axes"]:
        return node, []
    const = onnx.helper.make_node("Constant", [], [f"{label}::axes"], name=f"{label}/axes",
                                  value_ints=list(axes.ints))
    moved = onnx.NodeProto()
    moved.CopyFrom(node)
    moved.attribute.remove(next(a for a in moved.attribute if a.name == "axes"))
    moved.input.extend([""] * (len(formal) - 1 - len(moved.input)) + [const.output[0]])
    return moved, [const]


def expand(node: onnx.NodeProto, opset: int, max_opset: int, label: str,
           input_types: Sequence[onnx.TypeProto | None]) -> Body | None:
    """The body of `node` (an op of the default domain at `opset`), or None when ONNX
    defines none for it. `input_types` are the node's inputs' types (None: absent);
    the body is taken at the newest function opset not above `max_opset`."""
    s = schema(node.op_type, opset, max_opset)
    if s is None:
        return None
    node, prelude = _axes_as_input(node, s, label)
    fn = _function(s, node, max_opset, input_types)
    if fn is None:
        return None
    why = unhonoured(s, node, fn, max_opset, input_types)
    if why:
        raise NotHonoured(why)
    body_opset = next((o.version for o in fn.opset_import if o.domain in ("", "ai.onnx")), opset)
    rename = {formal: actual for formal, actual in zip(fn.input, node.input)}
    rename.update({formal: "" for formal in list(fn.input)[len(node.input):]})
    rename.update(zip(fn.output, node.output))
    given = {a.name: a for a in node.attribute}
    nodes = []
    for i, inner in enumerate(fn.node):
        new = _filled(inner, rename, label, given, s)
        new.name = f"{label}/{inner.op_type}#{i}"
        nodes.append(new)
    return Body(prelude + nodes, body_opset, node.op_type)


def _function(s: Any, node: onnx.NodeProto, max_opset: int,
              input_types: Sequence[onnx.TypeProto | None]) -> onnx.FunctionProto | None:
    fn = onnx.FunctionProto()
    if s.has_function:
        versions = [v for v in s.function_opset_versions if v <= max_opset]
        if not versions:
            return None
        found = s.get_function_with_opset_version(max(versions))
        if isinstance(found, bytes):  # (the C++ binding gives the serialized proto)
            fn.ParseFromString(found)
        else:
            fn.CopyFrom(found)
        return fn
    versions = [v for v in s.context_dependent_function_opset_versions if v <= max_opset]
    if not versions or any(t is None for x, t in zip(node.input, input_types) if x):
        return None
    types = [(t or onnx.TypeProto()).SerializeToString() for t in input_types]  # (by input position)
    try:
        data = s.get_context_dependent_function_with_opset_version(max(versions), node.SerializeToString(), types)
    except Exception:  # (onnx raises for inputs its builder does not handle)
        return None
    if not data:
        return None
    fn.ParseFromString(data)
    return fn


def _filled(inner: onnx.NodeProto, rename: dict[str, str], label: str,
            given: dict[str, onnx.AttributeProto], s: Any) -> onnx.NodeProto:
    """A body node (or a node of one of its subgraphs) as the graph reads it: every
    name renamed (`_rename`: the node's inputs and outputs for the formal ones, the
    rest prefixed with the node's label; a subgraph's outer-scope references too) and
    its attribute references resolved (`_attribute`)."""
    new = onnx.NodeProto()
    new.CopyFrom(inner)
    if inner.name:
        new.name = f"{label}/{inner.name}"
    new.input[:] = [_rename(x, rename, label) for x in inner.input]
    new.output[:] = [_rename(x, rename, label) for x in inner.output]
    del new.attribute[:]
    for a in inner.attribute:
        found = _attribute(a, given, s)
        if found is None:
            continue
        filled = onnx.AttributeProto()
        filled.CopyFrom(found)
        if filled.HasField("g"):
            filled.g.CopyFrom(_subgraph(filled.g, rename, label, given, s))
        for j, g in enumerate(filled.graphs):
            filled.graphs[j].CopyFrom(_subgraph(g, rename, label, given, s))
        new.attribute.append(filled)
    return new


def _subgraph(g: onnx.GraphProto, rename: dict[str, str], label: str,
              given: dict[str, onnx.AttributeProto], s: Any) -> onnx.GraphProto:
    out = onnx.GraphProto()
    out.CopyFrom(g)
    del out.node[:]
    out.node.extend(_filled(n, rename, label, given, s) for n in g.node)
    for vi in [*out.input, *out.output, *out.value_info]:
        vi.name = _rename(vi.name, rename, label)
    for t in out.initializer:
        t.name = _rename(t.name, rename, label)
    return out


class NotHonoured(Exception):
    """The function body ONNX gives for a node does not compute the node: it leaves out
    an input, output or attribute value the node sets (the message says which)."""


def _names(nodes: Sequence[onnx.NodeProto]) -> tuple[set[str], set[str], set[str]]:
    """(names read, names written, attributes referenced) by `nodes` and their subgraphs."""
    read, written, refs = set(), set(), set()
    for n in nodes:
        read.update(n.input)
        written.update(n.output)
        for a in n.attribute:
            if a.ref_attr_name:
                refs.add(a.ref_attr_name)
            for g in [a.g] if a.HasField("g") else list(a.graphs):
                r, w, f = _names(g.node)
                read |= r | {o.name for o in g.output}
                written |= w
                refs |= f
    return read, written, refs


def _is_default(a: onnx.AttributeProto, s: Any) -> bool:
    declared = s.attributes.get(a.name)
    d = declared.default_value if declared is not None else None
    if d is None or not d.name:
        return False
    value, default = onnx.helper.get_attribute_value(a), onnx.helper.get_attribute_value(d)
    if isinstance(value, (int, float, bytes, list)):
        return value == default
    return a.SerializeToString() == onnx.helper.make_attribute(a.name, default).SerializeToString()


def unhonoured(s: Any, node: onnx.NodeProto, fn: onnx.FunctionProto, max_opset: int,
               input_types: Sequence[onnx.TypeProto | None]) -> str:
    """Why `fn`, the body ONNX gives for `node`, would not compute it ('' when it does):
    an input the node gives that the body never reads, an output it never writes, or an
    attribute the node sets to other than its default that the body ignores - a static
    body that never references it, or a per-node body ONNX builds the same without it."""
    read, written, refs = _names(fn.node)
    body = [n.SerializeToString() for n in fn.node]

    def same_without(attr: str | None = None, index: int = -1) -> bool:
        """Whether ONNX builds this per-node body the same without the attribute or input."""
        if s.has_function:
            return True
        other = onnx.NodeProto()
        other.CopyFrom(node)
        types = list(input_types)
        if attr is not None:
            other.attribute.remove(next(x for x in other.attribute if x.name == attr))
        else:
            other.input[index], types[index] = "", None
        found = _function(s, other, max_opset, types)
        return found is not None and [n.SerializeToString() for n in found.node] == body

    for i, actual in enumerate(node.input):  # (a per-node body may read only its type: CastLike)
        if actual and (i >= len(fn.input) or fn.input[i] not in read and same_without(index=i)):
            return f"its ONNX function body does not read input {i} ('{actual}')"
    for i, actual in enumerate(node.output):
        if actual and (i >= len(fn.output) or fn.output[i] not in written | set(fn.input)):
            return f"its ONNX function body does not compute output {i} ('{actual}')"
    for a in node.attribute:
        if _is_default(a, s) or a.name in refs:
            continue
        declared = s.attributes.get(a.name)
        if not s.has_function and (declared is None or not declared.default_value.name):
            continue  # (without it the node means something else: nothing to compare)
        if same_without(attr=a.name):
            return (f"its ONNX function body ignores attribute {a.name}="
                    f"{onnx.helper.get_attribute_value(a)!r}, so it would compute another op")
    return ""


def _rename(name: str, rename: dict[str, str], label: str) -> str:
    if not name:
        return ""
    return rename[name] if name in rename else f"{label}::{name}"


def _attribute(a: onnx.AttributeProto, given: dict[str, onnx.AttributeProto],
               s: Any) -> onnx.AttributeProto | None:
    """A body attribute with its reference to the node's attributes resolved: the node's
    value, else the schema's default, else none (the attribute is left out)."""
    if not a.ref_attr_name:
        return a
    source = given.get(a.ref_attr_name)
    if source is None:
        declared = s.attributes.get(a.ref_attr_name)
        source = declared.default_value if declared is not None and declared.default_value.name else None
    if source is None:
        return None
    out = onnx.AttributeProto()
    out.CopyFrom(source)
    out.name = a.name
    return out


def function_ops(converted: set[str], max_opset: int) -> dict[str, str]:
    """Default-domain op types without a converter that import through their function
    body: op -> "function" (a static body whose ops, recursively, all import) or
    "context-dependent" (a body ONNX builds per node: which ops it uses depends on the
    node, so these are candidates, checked per case by bench/conformance.py)."""
    latest: dict[str, Any] = {}
    for s in defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx") and s.since_version <= max_opset and s.name not in converted:
            if s.name not in latest or s.since_version > latest[s.name].since_version:
                latest[s.name] = s
    bodies: dict[str, set[str]] = {}
    found: dict[str, str] = {}
    for name, s in latest.items():
        if s.has_function:
            fn = _function(s, onnx.NodeProto(), max_opset, [])
            if fn is not None:
                bodies[name] = {n.op_type for n in fn.node}
        elif s.has_context_dependent_function:
            found[name] = "context-dependent"
    known = set(converted)
    grew = True
    while grew:  # (a body may use another function op: Celu uses Elu)
        grew = False
        for name, ops in bodies.items():
            if name not in known and ops <= known:
                known.add(name)
                found[name] = "function"
                grew = True
    return dict(sorted(found.items()))

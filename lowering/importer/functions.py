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
    "CenterCropPad", "DepthToSpace", "GroupNormalization", "LogSoftmax", "NegativeLogLikelihoodLoss",
    "RMSNormalization", "RotaryEmbedding", "SoftmaxCrossEntropyLoss", "SpaceToDepth"})
"""The ops with a per-node function body whose every float conformance case passes
(bench/results/conformance.md): the ones `supported_op_types` claims. Others still
import wherever their body does (Bernoulli, CausalConvWithState, LinearAttention where
ONNX builds one); Attention has a converter (`attention.py`)."""


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
    body_opset = next((o.version for o in fn.opset_import if o.domain in ("", "ai.onnx")), opset)
    rename = {formal: actual for formal, actual in zip(fn.input, node.input)}
    rename.update({formal: "" for formal in list(fn.input)[len(node.input):]})
    rename.update(zip(fn.output, node.output))
    given = {a.name: a for a in node.attribute}
    nodes = []
    for i, inner in enumerate(fn.node):
        new = onnx.NodeProto()
        new.CopyFrom(inner)
        new.name = f"{label}/{inner.op_type}#{i}"
        new.input[:] = [_rename(x, rename, label) for x in inner.input]
        new.output[:] = [_rename(x, rename, label) for x in inner.output]
        del new.attribute[:]
        for a in inner.attribute:
            filled = _attribute(a, given, s)
            if filled is not None:
                new.attribute.append(filled)
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
    if not versions or any(t is None for t in input_types):
        return None
    try:
        data = s.get_context_dependent_function_with_opset_version(
            max(versions), node.SerializeToString(), [t.SerializeToString() for t in input_types if t is not None])
    except Exception:  # (onnx raises for inputs its builder does not handle)
        return None
    if not data:
        return None
    fn.ParseFromString(data)
    return fn


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

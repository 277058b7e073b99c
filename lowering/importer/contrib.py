"""onnxruntime's quantized operators (domain `com.microsoft`: what `quantize_static` writes
with `QuantFormat.QOperator`, and what many published int8 ONNX models hold) imported as
the QDQ form they compute: each node becomes DequantizeLinear on its 8-bit inputs, the
float op, and QuantizeLinear on its output, which npu-fuse-qdq then computes in integers
where an integer form exists (a QLinearAdd becomes a qadd, a QLinearMul a qmul, a
QLinearConcat moves integers, a QGemm an integer matmul with its requantize) and keeps
in float where not (a softmax, an average pool; a remark says so).

Expanded: QLinearAdd, QLinearMul, QLinearConcat, QLinearAveragePool,
QLinearGlobalAveragePool, QLinearSoftmax, QLinearSigmoid, QLinearLeakyRelu, QGemm.
Its QuantizeLinear and DequantizeLinear (`UseQDQContribOps`) are ONNX's, per axis at
any opset: imported by ONNX's converters (`ALIASES`), which refuse their 16- and 4-bit
types. Any other `com.microsoft` op stays unsupported.

Algorithm
---------
The float op and the quantize keep the node's name (diagnostics; `--compare-all` takes
the node's value from the last op located at it, the quantize), the dequantizes are
NODE/dequantizeI. Refused, naming the node: channels-last pooling, a QLinearSoftmax whose
`opset` attribute reads its axis otherwise than the model's Softmax would, a QGemm whose
scales are not initializers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from lowering.importer.base import DEFAULT_DOMAINS

DOMAIN = "com.microsoft"


ALIASES: dict[str, frozenset[str]] = {"QuantizeLinear": frozenset({"axis"}),
                                      "DequantizeLinear": frozenset({"axis"})}
"""The com.microsoft ops imported as the ONNX op of the same name, with the attributes
their onnxruntime schema defines."""


class ContribError(ValueError):
    """A contrib quantized node this expansion cannot express (its message names the node)."""


class _Expander:
    """The new nodes of one model (`expand_contrib`); new initializers in `inits`."""

    def __init__(self, model: onnx.ModelProto):
        self.opset = next((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), 0)
        self.inits = {i.name: i for i in model.graph.initializer}
        self.new_inits: list[onnx.TensorProto] = []

    def dq(self, node: onnx.NodeProto, x: str, scale: str, zero: str, tag: str, axis: int | None = None
           ) -> tuple[str, onnx.NodeProto]:
        out = f"{node.name or node.output[0]}/{tag}"
        made = helper.make_node("DequantizeLinear", [x, scale, zero] if zero else [x, scale], [out],
                                name=f"{node.name}/{tag}")
        if axis is not None:
            made.attribute.append(helper.make_attribute("axis", axis))
        return out, made

    def q(self, node: onnx.NodeProto, y: str, scale: str, zero: str, out: str) -> onnx.NodeProto:
        return helper.make_node("QuantizeLinear", [y, scale, zero] if zero else [y, scale], [out],
                                name=node.name)  # (the node's value: the last op located at it)

    def around(self, node: onnx.NodeProto, op_type: str, ins: Sequence[tuple[str, str, str]], out: tuple[str, str],
               **attrs) -> list[onnx.NodeProto]:
        """DequantizeLinear of each (x, scale, zero point), `op_type` on them (the node's
        name), QuantizeLinear with `out` = (scale, zero point) into the node's output."""
        made = [self.dq(node, x, s, z, f"dequantize{i}") for i, (x, s, z) in enumerate(ins)]
        y = f"{node.name or node.output[0]}/float"
        body = helper.make_node(op_type, [m[0] for m in made], [y], name=node.name, **attrs)
        return [m[1] for m in made] + [body, self.q(node, y, out[0], out[1], node.output[0])]


def _inputs(node: onnx.NodeProto, n: int) -> list[str]:
    """The node's first `n` inputs, missing optional ones as ''."""
    return list(node.input) + [""] * (n - len(node.input))


def _attrs(node: onnx.NodeProto, drop: Sequence[str] = ()) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name not in drop}


def _binary(op_type: str) -> Callable[[_Expander, onnx.NodeProto], list[onnx.NodeProto]]:
    def expand(e: _Expander, node: onnx.NodeProto) -> list[onnx.NodeProto]:
        a, sa, za, b, sb, zb, sc, zc = _inputs(node, 8)
        return e.around(node, op_type, [(a, sa, za), (b, sb, zb)], (sc, zc))
    return expand


def _unary(op_type: str, keep: Sequence[str] = ()) -> Callable[[_Expander, onnx.NodeProto], list[onnx.NodeProto]]:
    def expand(e: _Expander, node: onnx.NodeProto) -> list[onnx.NodeProto]:
        attrs = _attrs(node)
        if attrs.pop("channels_last", 0):
            raise ContribError("channels-last data (channels_last = 1) is not supported")
        x, sx, zx, sy, zy = _inputs(node, 5)
        return e.around(node, op_type, [(x, sx, zx)], (sy, zy), **{k: v for k, v in attrs.items() if k in keep})
    return expand


def _concat(e: _Expander, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    sy, zy, *rest = node.input
    if len(rest) % 3:
        raise ContribError(f"expects (X, scale, zero point) triples after Y's parameters, got {len(rest)} inputs")
    triples = [(rest[i], rest[i + 1], rest[i + 2]) for i in range(0, len(rest), 3)]
    return e.around(node, "Concat", triples, (sy, zy), axis=_attrs(node)["axis"])


def _softmax(e: _Expander, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    attrs = _attrs(node)
    axis, opset = attrs.get("axis", -1), attrs.get("opset", e.opset)
    if (opset >= 13) != (e.opset >= 13) and axis != -1:
        raise ContribError(f"its axis {axis} follows Softmax-{opset}'s reading, the model's Softmax is opset {e.opset}'s")
    x, sx, zx, sy, zy = _inputs(node, 5)
    return e.around(node, "Softmax", [(x, sx, zx)], (sy, zy), axis=axis)


def _qgemm(e: _Expander, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    a, sa, za, b, sb, zb, c, sy, zy = _inputs(node, 9)
    attrs = _attrs(node)
    trans_b = attrs.get("transB", 0)
    scales = [e.inits.get(s) for s in (sa, sb)]
    if scales[0] is None or scales[1] is None:
        raise ContribError("A's and B's scales must be initializers (C's scale is their product)")
    sa_v, sb_v = (numpy_helper.to_array(s).astype(np.float32) for s in scales)  # pyright: ignore
    axis = None if sb_v.size == 1 else (0 if trans_b else 1)
    if axis is not None and e.opset < 13:
        raise ContribError(f"per-column B scales need DequantizeLinear's axis (opset 13), the model's is {e.opset}")
    made = [e.dq(node, a, sa, za, "dequantize_a"), e.dq(node, b, sb, zb, "dequantize_b", axis)]
    if c:
        cs = f"{node.name or node.output[0]}/c_scale"
        e.new_inits.append(numpy_helper.from_array((sa_v.reshape(-1) * sb_v.reshape(-1)).astype(np.float32)
                                                   .reshape(sb_v.shape), cs))
        made.append(e.dq(node, c, cs, "", "dequantize_c", 0 if axis is not None else None))  # (C is [N])
    y = f"{node.name or node.output[0]}/float" if sy else node.output[0]
    gemm = {k: v for k, v in attrs.items() if k in ("alpha", "transA", "transB")}
    nodes = [m[1] for m in made] + [helper.make_node("Gemm", [m[0] for m in made], [y], name=node.name, **gemm)]
    return nodes + ([e.q(node, y, sy, zy, node.output[0])] if sy else [])


EXPANSIONS: dict[str, Callable[[_Expander, onnx.NodeProto], list[onnx.NodeProto]]] = {
    "QLinearAdd": _binary("Add"),
    "QLinearMul": _binary("Mul"),
    "QLinearConcat": _concat,
    "QLinearAveragePool": _unary("AveragePool", ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape",
                                                 "pads", "strides")),
    "QLinearGlobalAveragePool": _unary("GlobalAveragePool"),
    "QLinearSoftmax": _softmax,
    "QLinearSigmoid": _unary("Sigmoid"),
    "QLinearLeakyRelu": _unary("LeakyRelu", ("alpha",)),
    "QGemm": _qgemm,
}


def expand_contrib(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with its com.microsoft quantized nodes (`EXPANSIONS`) expanded to the QDQ
    form (module docstring); `model` itself when it has none (no copy). Raises
    ContribError naming the node it cannot expand."""
    todo = [n for n in model.graph.node if n.domain == DOMAIN and n.op_type in EXPANSIONS]
    if not todo:
        return model
    e = _Expander(model)
    if e.opset < 10:
        raise ContribError(f"node '{todo[0].name}' ({DOMAIN}.{todo[0].op_type}): its QDQ form needs "
                           f"QuantizeLinear (opset 10), the model imports opset {e.opset}")
    nodes: list[onnx.NodeProto] = []
    for n in model.graph.node:
        if n.domain != DOMAIN or n.op_type not in EXPANSIONS:
            nodes.append(n)
            continue
        try:
            nodes += EXPANSIONS[n.op_type](e, n)
        except KeyError as err:
            raise ContribError(f"node '{n.name}' ({DOMAIN}.{n.op_type}): missing attribute {err}") from None
        except (ContribError, ValueError) as err:
            raise ContribError(f"node '{n.name}' ({DOMAIN}.{n.op_type}): {err}") from None
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes)
    out.graph.initializer.extend(e.new_inits)
    return out

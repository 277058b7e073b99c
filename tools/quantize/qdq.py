"""Write a QDQ model: QuantizeLinear/DequantizeLinear pairs on the activations around
the ops the chip computes in integers, int8 weights with per-channel (or per-tensor)
scales, int32 biases of scale s_x * s_w, in the standard form onnxruntime writes and
runs and `npu-compile` compiles to integer kernels (npu-fuse-qdq). A layer the
qtable keeps in a 16-bit type is marked by a node `metadata_props` entry
`npu.precision` = bf16 | f16 that `npu-compile` honours and onnxruntime ignores.

Algorithm
---------
Which tensors: every float input of a quantized op that is not a weight (one pair
per tensor, shared by its quantized readers), and its outputs, except a graph
output (kept float: the model's outputs stay what they were) and an output whose
only reader is a Relu or Clip (the pair goes after the activation, whose range it
takes, as onnxruntime's quantizer does); a max pool, reshape, flatten or transpose
output takes its input's range (`SAME_AS_INPUT`, as onnxruntime's). A layer the qtable keeps in float takes no
pair of its own; one kept in a 16-bit type (bf16, f16) is also marked: its node
(and its Relu/Clip) gets the entry, which the ONNX importer turns into per-node
npu-convert-precision, and so does a float node the table does not name whose
activations all come from marked nodes of one type (what runs between 16-bit layers
runs in 16 bits too; a chain from a DequantizeLinear stays float32, where
npu-fuse-qdq makes it a table). The mark is metadata, not Cast nodes, so the file stays the
float graph onnxruntime runs on any CPU (it has no bf16 Conv there) and the chip's
casts are placed by the compiler (`mixed.emulated` rounds the marked nodes' tensors
for the evaluation). Activations are uint8 with a zero point (asymmetric) or int8
symmetric; weights int8 symmetric; a model below opset 13 is converted to 13 (the
per-axis DequantizeLinear).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

QUANTIZED_OPS = frozenset({
    "Conv", "MatMul", "Gemm", "Add", "Sum", "Mul", "MaxPool", "AveragePool", "GlobalAveragePool", "Concat",
    "Relu", "Clip", "Sigmoid", "Softmax", "Reshape", "Flatten", "Transpose", "Resize", "LeakyRelu"})
"""Op types whose activation inputs and outputs get QuantizeLinear/DequantizeLinear."""

ACTIVATIONS = frozenset({"Relu", "Clip"})
WEIGHT_INPUTS = {"Conv": {1: 0}, "MatMul": {1: -1}, "Gemm": {1: None}}
"""op type -> {input index: per-channel axis} of the weight inputs (Gemm: by transB;
MatMul: the last axis)."""
SHAPE_INPUTS = {"Reshape": (1,), "Resize": (1, 2, 3), "Clip": (1, 2)}
SAME_AS_INPUT = frozenset({"MaxPool", "Reshape", "Flatten", "Transpose"})
"""Ops whose output takes their input's quantization parameters (as onnxruntime's QDQ
quantizer does): they only select or move values, so the output's range is within the
input's and sharing the scale saves a requantization per op."""
"""Inputs that are shapes, scales or bounds, never quantized."""


PRECISION_KEY = "npu.precision"
"""The node `metadata_props` key the ONNX importer reads (`onnx_import.PRECISION_KEY`)."""
FLOAT16 = ("bf16", "f16")


@dataclass
class QdqOptions:
    per_channel: bool = True
    symmetric: bool = False  # activations int8 symmetric (else uint8 with a zero point)
    keep_float: Callable[[onnx.NodeProto], bool] = lambda n: False  # the qtable's float layers
    precision: Mapping[str, str] = field(default_factory=dict)  # float node name -> bf16 | f16 (else f32)


def act_params(lo: float, hi: float, symmetric: bool) -> tuple[np.float32, int]:
    """(scale, zero point) of an activation range [lo, hi] (holding 0): never a zero or
    NaN scale (a tensor that was 0 everywhere takes scale 1: any scale is exact)."""
    if symmetric:
        t = max(abs(lo), abs(hi))
        scale = t / 127.0
        zp = 0
    else:
        scale = (hi - lo) / 255.0
        zp = int(round(-lo / scale)) if scale > 0 else 0
    if not np.isfinite(scale) or scale <= 0:
        scale = 1.0
    return np.float32(scale), int(np.clip(zp, 0, 255))


def _weight(w: np.ndarray, axis: int | None) -> tuple[np.ndarray, np.ndarray]:
    """int8 values and float32 scales (per channel along `axis`, else one)."""
    if axis is None:
        t = float(np.abs(w).max())
        s = np.array(t / 127.0 if t > 0 else 1.0, np.float32)
        return np.clip(np.round(w / s), -127, 127).astype(np.int8), s
    red = tuple(i for i in range(w.ndim) if i != axis)
    t = np.abs(w).max(axis=red) if red else np.abs(w)
    s = np.where(t > 0, t / 127.0, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    return np.clip(np.round(w / s.reshape(shape)), -127, 127).astype(np.int8), s


class Writer:
    """Builds the QDQ graph from the float one (see the module docstring)."""

    def __init__(self, model: onnx.ModelProto, ranges: dict[str, tuple[float, float]], opts: QdqOptions):
        if model.opset_import and max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) < 13:
            model = onnx.version_converter.convert_version(model, 13)
            model.ir_version = max(model.ir_version, onnx.helper.find_min_ir_version_for(list(model.opset_import)))
        self.model, self.ranges, self.opts = model, dict(ranges), opts
        self.g = model.graph
        self.inits = {i.name: i for i in self.g.initializer}
        self.new_nodes: list[onnx.NodeProto] = []
        self.new_inits: list[onnx.TensorProto] = []
        self.act_dq: dict[str, str] = {}  # tensor -> its DequantizeLinear output
        self.act_scale: dict[str, float] = {}  # a DequantizeLinear output -> its scale
        self.outputs = {o.name for o in self.g.output}
        self.fused: set[str] = set()  # quantized ops' outputs only a Relu/Clip reads, without a pair
        self.readers: dict[str, list[onnx.NodeProto]] = {}
        self.producer = {o: n for n in self.g.node for o in n.output}
        for n in self.g.node:
            for i in n.input:
                self.readers.setdefault(i, []).append(n)

    def share_ranges(self) -> None:
        """A quantized `SAME_AS_INPUT` op's output takes its input's range (in graph
        order, so a chain of them shares one)."""
        for n in self.g.node:
            if n.op_type in SAME_AS_INPUT and self.quantized(n) and n.input and n.input[0] in self.ranges:
                self.ranges[n.output[0]] = self.ranges[n.input[0]]

    def quantized(self, n: onnx.NodeProto) -> bool:
        """Whether `n` computes on quantized values: a quantized op type not kept float,
        nor a Relu/Clip right after a layer kept float (it is that layer's activation)."""
        if n.op_type not in QUANTIZED_OPS or n.domain not in ("", "ai.onnx") or self.opts.keep_float(n):
            return False
        if n.op_type in ACTIVATIONS:
            p = self.producer.get(n.input[0])
            return p is None or p.op_type not in QUANTIZED_OPS or not self.opts.keep_float(p)
        return True

    def init(self, name: str, a: np.ndarray) -> str:
        self.new_inits.append(numpy_helper.from_array(a, name))
        return name

    def act(self, tensor: str) -> str | None:
        """The DequantizeLinear output standing for activation `tensor` (made once), or
        None when it has no calibrated range."""
        if tensor in self.act_dq:
            return self.act_dq[tensor]
        if tensor not in self.ranges:
            return None
        scale, zp = act_params(*self.ranges[tensor], self.opts.symmetric)
        zdt = np.int8 if self.opts.symmetric else np.uint8
        s = self.init(f"{tensor}_scale", np.array(scale, np.float32))
        z = self.init(f"{tensor}_zero_point", np.array(zp, zdt))
        q, dq = f"{tensor}_QuantizeLinear_Output", f"{tensor}_DequantizeLinear_Output"
        self.new_nodes.append(helper.make_node("QuantizeLinear", [tensor, s, z], [q], name=f"{tensor}_QuantizeLinear"))
        self.new_nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [dq], name=f"{tensor}_DequantizeLinear"))
        self.act_dq[tensor], self.act_scale[dq] = dq, float(scale)
        return dq

    def weight(self, n: onnx.NodeProto, idx: int) -> tuple[str, np.ndarray] | None:
        """The DequantizeLinear output of weight input `idx` of `n` and its scales."""
        name = n.input[idx]
        w = numpy_helper.to_array(self.inits[name]).astype(np.float32)
        axis = WEIGHT_INPUTS[n.op_type][idx]
        if n.op_type == "Gemm":
            axis = 0 if any(a.name == "transB" and a.i for a in n.attribute) else 1
        elif axis == -1:
            axis = w.ndim - 1
        if not self.opts.per_channel or w.ndim < 2:
            axis = None
        wq, s = _weight(w, axis)
        return self.dequantized(f"{n.name or name}_{name}", wq, s, np.zeros(s.shape, np.int8), axis), s

    def dequantized(self, base: str, q: np.ndarray, scale: np.ndarray, zp: np.ndarray, axis: int | None) -> str:
        """Initializers `base`_quantized, _scale, _zero_point and the DequantizeLinear of
        them (per `axis`, if any); its output."""
        names = [self.init(f"{base}_{k}", a) for k, a in (("quantized", q), ("scale", scale), ("zero_point", zp))]
        out = f"{base}_DequantizeLinear_Output"
        node = helper.make_node("DequantizeLinear", names, [out], name=f"{base}_DequantizeLinear")
        if axis is not None:
            node.attribute.append(helper.make_attribute("axis", axis))
        self.new_nodes.append(node)
        return out

    def bias(self, n: onnx.NodeProto, idx: int, x_scale: float, w_scale: np.ndarray) -> str:
        name = n.input[idx]
        b = numpy_helper.to_array(self.inits[name]).astype(np.float64)
        s = (x_scale * w_scale.astype(np.float64)).astype(np.float32)
        bq = np.clip(np.round(b / s), -2**31, 2**31 - 1).astype(np.int32)
        return self.dequantized(f"{n.name or name}_{name}", bq, s, np.zeros(s.shape, np.int32), 0 if s.ndim else None)

    def output_pair(self, tensor: str) -> bool:
        """Whether a quantized op's output gets its pair (see the module docstring)."""
        if tensor in self.outputs:
            return False
        readers = self.readers.get(tensor, [])
        return not (len(readers) == 1 and readers[0].op_type in ACTIVATIONS and self.quantized(readers[0]))

    def rewrite_node(self, n: onnx.NodeProto) -> None:
        weights = WEIGHT_INPUTS.get(n.op_type, {})
        skip = set(SHAPE_INPUTS.get(n.op_type, ()))
        w_scale: np.ndarray | None = None
        for i, name in enumerate(list(n.input)):
            if not name or i in skip:
                continue
            if i in weights and name in self.inits:
                got = self.weight(n, i)
                if got is not None:
                    n.input[i], w_scale = got
            elif name not in self.inits and not (n.op_type in ACTIVATIONS and name in self.fused):
                dq = self.act(name)
                if dq is not None:
                    n.input[i] = dq
        if n.op_type in ("Conv", "Gemm") and len(n.input) > 2 and n.input[2] in self.inits and w_scale is not None:
            if n.input[0] in self.act_scale:  # (the input's pair: the bias takes s_x * s_w)
                n.input[2] = self.bias(n, 2, self.act_scale[n.input[0]], w_scale)

    def mark_precision(self, nodes: list[onnx.NodeProto]) -> None:
        """The `npu.precision` entry of each float node kept in 16 bits, of the Relu/Clip
        that is its activation (unless that names another 16-bit type) and of each float
        node the table does not name whose activations all come from nodes marked with
        one type (a LayerNorm or GELU between 16-bit layers: module docstring)."""
        prec = self.opts.precision
        if not prec:
            return
        made: dict[str, str] = {}  # tensor -> the 16-bit type of the node making it
        for n in nodes:
            if self.quantized(n):
                continue
            p = prec.get(n.name)
            src = self.producer.get(n.input[0]) if n.input else None
            if p not in FLOAT16 and n.op_type in ACTIVATIONS and src is not None and not self.quantized(src):
                p = prec.get(src.name)  # (a layer's Relu is computed in its type)
            if p is None:
                skip = SHAPE_INPUTS.get(n.op_type, ())
                acts = [x for i, x in enumerate(n.input) if x and x not in self.inits and i not in skip]
                types = {made.get(x) for x in acts}
                p = types.pop() if len(types) == 1 else None
            if p in FLOAT16:
                n.metadata_props.add(key=PRECISION_KEY, value=p)
                made.update((o, p) for o in n.output if o)

    def run(self) -> onnx.ModelProto:
        order = list(self.g.node)
        self.share_ranges()
        for n in order:  # (outputs first: a reader's input pair is its producer's output pair)
            if self.quantized(n):
                for o in n.output:
                    if o and self.output_pair(o):
                        self.act(o)
                    elif o and o not in self.outputs:
                        self.fused.add(o)  # (its Relu or Clip reads it as it is)
        for n in order:
            if self.quantized(n):
                self.rewrite_node(n)
        self.mark_precision(order)
        out = onnx.ModelProto()
        out.CopyFrom(self.model)
        del out.graph.node[:]
        nodes = toposort(self.new_nodes + order, {v.name for v in self.g.input} | set(self.inits)
                         | {i.name for i in self.new_inits})
        out.graph.node.extend(nodes)
        used = {i for n in nodes for i in n.input}
        del out.graph.initializer[:]
        out.graph.initializer.extend([i for i in self.g.initializer if i.name in used] + self.new_inits)
        return out


def toposort(nodes: list[onnx.NodeProto], available: set[str]) -> list[onnx.NodeProto]:
    """`nodes` in an order where each follows the producers of its inputs (among the
    ready ones, the earliest in `nodes` first)."""
    producer = {o: i for i, n in enumerate(nodes) for o in n.output if o}
    deps = [{producer[x] for x in n.input if x and x not in available and x in producer} for n in nodes]
    readers: dict[int, list[int]] = {}
    for i, d in enumerate(deps):
        for j in d:
            readers.setdefault(j, []).append(i)
    left = [len(d) for d in deps]
    ready = [i for i, k in enumerate(left) if k == 0]
    heapq.heapify(ready)
    out: list[onnx.NodeProto] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(nodes[i])
        for r in readers.get(i, []):
            left[r] -= 1
            if left[r] == 0:
                heapq.heappush(ready, r)
    return out


def write_qdq(model: onnx.ModelProto, ranges: dict[str, tuple[float, float]], opts: QdqOptions) -> onnx.ModelProto:
    """The QDQ model of float `model` with the calibrated activation `ranges`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    out = Writer(m, ranges, opts).run()
    del out.graph.value_info[:]
    return out



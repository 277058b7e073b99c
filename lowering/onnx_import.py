"""ONNX -> `npu_graph`: the importer (a translation, not a pass).

`import_model` turns an `onnx.ModelProto` into a `builtin.module` that holds
`func.func @main(%inputs...) -> (outputs...)` built from `npu_graph` ops, plus a
dict of the weights the module refers to by name (`npu_graph.constant {weight =
"fc1.weight"}`); the caller saves that dict as the module's weight side file.

How it works: the graph is walked once in topological order. Every ONNX value is
a `Tensor` - either an SSA value of the function being built, or constant data
(an initializer or a `Constant` node) that is turned into an `npu_graph.constant`
only when an op uses it as an operand (so shape tensors such as Reshape's never
reach the IR). Each ONNX op type has one small converter function, registered in
`CONVERTERS` with the `@converter` decorator together with the attributes it
understands; a converter reads its node through a `NodeContext`, builds ops with
`ctx.build(...)` (which sets the location to the node name and verifies the op)
and returns the node's outputs. Adding an op is adding one such function.

Problems are collected for the whole graph before anything is raised: one line per
offending node, `error: node 'NAME' (OpType, opset N): what is wrong`, all raised
together as `OnnxImportError`. After a node fails, its outputs stand in as
placeholders (with the shape ONNX shape inference gives, when it gives one) so the
nodes after it are still checked.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnx.checker
import onnx.defs
import onnx.shape_inference
from google.protobuf.message import DecodeError
from onnx import numpy_helper
from xdsl.builder import ImplicitBuilder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    Float32Type,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from npu_dialects.entry import INPUTS_ATTR, OUTPUTS_ATTR
from npu_dialects.arch import PRESETS, Arch, set_arch
from npu_dialects.graph import (
    AddOp,
    ConstantOp,
    Conv2dOp,
    DivOp,
    GemmOp,
    MatMulOp,
    MaxPoolOp,
    MulOp,
    ReluOp,
    ReshapeOp,
    SubOp,
    broadcast_shapes,
    conv_out_shape,
    f32_tensor,
    matmul_shape,
    shape_of,
)
from npu_dialects.locs import name_loc

MIN_OPSET = 9
"""Oldest default-domain opset the converters are written for."""
MAX_OPSET = 21
"""Newest default-domain opset the converters are written for."""
INLINE_MAX_ELEMENTS = 16
"""Constants with at most this many elements are written inline (`value`), larger ones
go to the weight side file (`weight`)."""

_DEFAULT_DOMAINS = ("", "ai.onnx")


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


class OnnxImportError(Exception):
    """A model that cannot be read or imported. `lines` holds one diagnostic line per
    problem (`error: ...`), in graph order; `str(e)` joins them."""

    def __init__(self, lines: str | Sequence[str]):
        self.lines: list[str] = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("\n".join(self.lines))


class NodeError(Exception):
    """Raised by a converter: what is wrong with its node (the driver adds the
    `error: node 'NAME' (OpType, opset N): ` prefix)."""


class _Skip(Exception):
    """A converter needs something a failed earlier node should have produced; the
    node is skipped silently, the earlier node's diagnostic already explains it."""


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def load_model(path: str) -> onnx.ModelProto:
    """Read and check an ONNX file. Raises `OnnxImportError` with
    `error: cannot read ONNX model 'PATH': REASON` for a missing, unreadable,
    truncated or garbage file, and `error: invalid ONNX model 'PATH': ...` when
    `onnx.checker` rejects it."""
    try:
        model = onnx.load(path)
    except FileNotFoundError:
        raise OnnxImportError(f"error: cannot read ONNX model '{path}': no such file") from None
    except IsADirectoryError:
        raise OnnxImportError(f"error: cannot read ONNX model '{path}': is a directory") from None
    except DecodeError as e:
        raise OnnxImportError(f"error: cannot read ONNX model '{path}': truncated or not an ONNX file "
                              f"({_one_line(str(e))})") from None
    except Exception as e:  # OSError, ValueError (missing external data)...
        reason = _one_line(str(e)) or type(e).__name__
        raise OnnxImportError(f"error: cannot read ONNX model '{path}': {reason}") from None
    if not model.graph.node and not model.graph.output and not model.opset_import:
        # protobuf happily parses many garbage byte strings into an empty message.
        raise OnnxImportError(f"error: cannot read ONNX model '{path}': not an ONNX model "
                              "(no graph, no outputs, no opset)")
    try:
        onnx.checker.check_model(model)
    except Exception as e:  # ValidationError, or anything the checker trips over
        raise OnnxImportError(f"error: invalid ONNX model '{path}': {_one_line(str(e))}") from None
    return model


def _one_line(text: str) -> str:
    """First non-empty line of a (possibly multi-line) library message."""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


# --------------------------------------------------------------------------------------
# Values and the converter table
# --------------------------------------------------------------------------------------


@dataclass
class Tensor:
    """An ONNX value during import.

    Exactly one of `value` (an SSA value in the function being built) and `data`
    (constant contents: an initializer or a `Constant` node's output) is set.
    `placeholder` marks the stand-in output of a node that failed to import.
    `origin` names what a constant came from (its location when materialized)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    value: SSAValue | None = None
    data: np.ndarray | None = None
    origin: str = ""
    placeholder: bool = False


Output = SSAValue | Tensor
Converter = Callable[["NodeContext"], Sequence[Output]]


@dataclass(frozen=True)
class ConverterEntry:
    """A converter and the node attributes it understands (others are diagnosed)."""

    fn: Converter
    attrs: frozenset[str]


CONVERTERS: dict[str, ConverterEntry] = {}
"""ONNX op type (default domain) -> its converter. Filled by `@converter`."""


def converter(op_type: str, attrs: Sequence[str] = ()) -> Callable[[Converter], Converter]:
    """Register `fn` as the converter of `op_type`; `attrs` lists the ONNX attributes it
    handles - a node carrying any other attribute is diagnosed before `fn` runs."""

    def register(fn: Converter) -> Converter:
        CONVERTERS[op_type] = ConverterEntry(fn, frozenset(attrs))
        return fn

    return register


def supported_op_types() -> list[str]:
    """The ONNX op types the importer converts, sorted."""
    return sorted(CONVERTERS)


class NodeContext:
    """What a converter sees of one ONNX node: its attributes, its inputs (as SSA
    values, shapes or constant data) and `build`, which locates and verifies ops."""

    def __init__(self, importer: _Importer, node: onnx.NodeProto, label: str, opset: int):
        self._imp = importer
        self.node = node
        self.label = label
        """The node's name, or `<OpType>#<index>` when it has none."""
        self.opset = opset
        self._attrs = {a.name: a for a in node.attribute}

    # attributes ----------------------------------------------------------------------

    def has_attr(self, name: str) -> bool:
        return name in self._attrs

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute's Python value (ints, floats, str, lists, TensorProto), or
        `default` when the node does not carry it."""
        a = self._attrs.get(name)
        if a is None:
            return default
        return _attr_value(a)

    def ints_attr(self, name: str, default: Sequence[int]) -> tuple[int, ...]:
        return tuple(int(v) for v in self.attr(name, default))

    # inputs --------------------------------------------------------------------------

    @property
    def num_inputs(self) -> int:
        return len(self.node.input)

    def has_input(self, i: int) -> bool:
        """Whether optional input `i` is given (present and not the empty name)."""
        return i < len(self.node.input) and self.node.input[i] != ""

    def tensor(self, i: int) -> Tensor:
        """Input `i` as a `Tensor` (SSA value or constant data)."""
        if not self.has_input(i):
            raise NodeError(f"missing required input {i}")
        return self._imp.lookup(self.node.input[i])

    def shape(self, i: int) -> tuple[int, ...]:
        return self.tensor(i).shape

    def value(self, i: int) -> SSAValue:
        """Input `i` as an f32 SSA value; constant data becomes an `npu_graph.constant`."""
        return self._imp.materialize(self.tensor(i))

    def optional_value(self, i: int) -> SSAValue | None:
        return self.value(i) if self.has_input(i) else None

    def constant(self, i: int, what: str) -> np.ndarray:
        """Input `i`'s contents, which must be known at import time (`what` names the
        input in the diagnostic)."""
        t = self.tensor(i)
        if t.placeholder:
            raise _Skip()
        if t.data is None:
            raise NodeError(f"{what} (input {i}, '{t.name}') is computed at run time; "
                            "only constant values are supported")
        return t.data

    # outputs -------------------------------------------------------------------------

    def output_used(self, i: int) -> bool:
        return i < len(self.node.output) and self.node.output[i] in self._imp.used

    def build(self, op: Operation) -> Operation:
        """Locate `op` at this node (it is already inserted by the ImplicitBuilder)
        and verify it; a verifier complaint becomes this node's diagnostic."""
        op.location = name_loc(self.label)
        op.verify()
        return op


def _attr_value(a: onnx.AttributeProto) -> Any:
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [s.decode("utf-8", "replace") for s in v]
    return v


@functools.cache
def _schema_attrs(op_type: str, opset: int) -> frozenset[str]:
    """The attributes ONNX defines for `op_type` at `opset` (all when unknown)."""
    try:
        return frozenset(onnx.defs.get_schema(op_type, opset, "").attributes)
    except Exception:  # no schema at this opset: the converter's own list decides
        return frozenset(a for e in CONVERTERS.values() for a in e.attrs)


def _fmt_attr(a: onnx.AttributeProto) -> str:
    """`name=value` for a diagnostic, e.g. `ceil_mode=1`, `pads=[1, 1, 1, 1]`."""
    v = _attr_value(a)
    if isinstance(v, (int, float, str)):
        return f"{a.name}={v}"
    if isinstance(v, list) and len(v) <= 8 and all(isinstance(x, (int, float)) for x in v):
        return f"{a.name}={list(v)}"
    return a.name


# --------------------------------------------------------------------------------------
# Shape helpers
# --------------------------------------------------------------------------------------


def _prod(shape: Sequence[int]) -> int:
    return int(math.prod(shape))


def reshape_shape(shape: Sequence[int], target: Sequence[int], allowzero: bool) -> tuple[int, ...]:
    """ONNX Reshape's output shape: `0` copies the input dimension (unless `allowzero`),
    one `-1` is inferred. Raises `NodeError` when the target is invalid."""
    out: list[int] = []
    infer_at: int | None = None
    for i, d in enumerate(target):
        if d == -1:
            if infer_at is not None:
                raise NodeError(f"shape {list(target)} has more than one -1")
            infer_at = i
            out.append(1)
        elif d == 0 and not allowzero:
            if i >= len(shape):
                raise NodeError(f"shape {list(target)}: 0 at position {i} copies an input dimension, "
                                f"but the input {list(shape)} has rank {len(shape)}")
            out.append(shape[i])
        elif d < 0:
            raise NodeError(f"shape {list(target)} has the invalid dimension {d}")
        else:
            out.append(d)
    total = _prod(shape)
    if infer_at is not None:
        if allowzero and 0 in target:
            raise NodeError(f"shape {list(target)} has both 0 and -1, which allowzero=1 forbids")
        rest = _prod(out)
        if rest == 0 or total % rest:
            raise NodeError(f"cannot reshape {list(shape)} ({total} elements) to {list(target)}")
        out[infer_at] = total // rest
    if _prod(out) != total:
        raise NodeError(f"cannot reshape {list(shape)} ({total} elements) to {list(target)} "
                        f"({_prod(out)} elements)")
    return tuple(out)


def _window_pads(ctx: NodeContext, spatial: Sequence[int], kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int]) -> tuple[int, ...]:
    """The (top, left, bottom, right) pads of a 2-D window op from `pads`/`auto_pad`."""
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = ctx.ints_attr("pads", (0, 0, 0, 0))
        if len(pads) != 4:
            raise NodeError(f"pads {list(pads)} must have 4 values for a 2-D window")
        if any(p < 0 for p in pads):
            raise NodeError(f"pads {list(pads)} must not be negative")
        return pads
    if ctx.has_attr("pads"):
        raise NodeError(f"pads cannot be combined with auto_pad={auto_pad}")
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise NodeError(f"unsupported attribute auto_pad={auto_pad}")
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return (begin[0], begin[1], end[0], end[1])


def _pair(ctx: NodeContext, name: str) -> tuple[int, int]:
    """A 2-value int attribute (strides, dilations), default (1, 1), positive."""
    v = ctx.ints_attr(name, (1, 1))
    if len(v) != 2:
        raise NodeError(f"{name} {list(v)} must have 2 values for a 2-D window")
    if any(x <= 0 for x in v):
        raise NodeError(f"{name} {list(v)} must be positive")
    return v[0], v[1]


# --------------------------------------------------------------------------------------
# Converters: one per ONNX op type
# --------------------------------------------------------------------------------------


@converter("Gemm", attrs=("alpha", "beta", "transA", "transB"))
def convert_gemm(ctx: NodeContext) -> Sequence[Output]:
    """Y = alpha * op(A) @ op(B) + beta * C, C broadcast to [M, N]."""
    a, b = ctx.shape(0), ctx.shape(1)
    trans_a, trans_b = bool(ctx.attr("transA", 0)), bool(ctx.attr("transB", 0))
    if len(a) != 2 or len(b) != 2:
        raise NodeError(f"A and B must be 2-D, got {list(a)} and {list(b)}")
    m, k = (a[1], a[0]) if trans_a else a
    k2, n = (b[1], b[0]) if trans_b else b
    if k != k2:
        raise NodeError(f"inner dimensions differ: A {list(a)} (transA={int(trans_a)}) has K={k}, "
                        f"B {list(b)} (transB={int(trans_b)}) has K={k2}")
    if ctx.has_input(2) and broadcast_shapes(ctx.shape(2), (m, n)) != (m, n):
        raise NodeError(f"C of shape {list(ctx.shape(2))} does not broadcast to [{m}, {n}]")
    op = GemmOp(ctx.value(0), ctx.value(1), ctx.optional_value(2), f32_tensor((m, n)),
                alpha=float(ctx.attr("alpha", 1.0)), beta=float(ctx.attr("beta", 1.0)),
                trans_a=trans_a, trans_b=trans_b)
    return [ctx.build(op).results[0]]


@converter("MatMul")
def convert_matmul(ctx: NodeContext) -> Sequence[Output]:
    """numpy matmul semantics (batch dimensions broadcast)."""
    a, b = ctx.shape(0), ctx.shape(1)
    shape = matmul_shape(a, b)
    if shape is None:
        raise NodeError(f"shapes {list(a)} and {list(b)} do not multiply")
    return [ctx.build(MatMulOp(ctx.value(0), ctx.value(1), f32_tensor(shape))).results[0]]


@converter("Conv", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"))
def convert_conv(ctx: NodeContext) -> Sequence[Output]:
    """2-D convolution, NCHW input, OIHW weight, optional bias."""
    x, w = ctx.shape(0), ctx.shape(1)
    if len(x) != 4 or len(w) != 4:
        raise NodeError(f"only 2-D convolutions are supported: input {list(x)} and weight {list(w)} "
                        "must be 4-D")
    group = int(ctx.attr("group", 1))
    if group <= 0:
        raise NodeError(f"group={group} must be positive")
    if x[1] != w[1] * group:
        raise NodeError(f"input channels {x[1]} do not match weight ({w[1]} x group {group})")
    if w[0] % group:
        raise NodeError(f"output channels {w[0]} are not divisible by group {group}")
    kernel = ctx.ints_attr("kernel_shape", w[2:])
    if kernel != w[2:]:
        raise NodeError(f"kernel_shape {list(kernel)} does not match the weight's {list(w[2:])}")
    if ctx.has_input(2) and ctx.shape(2) != (w[0],):
        raise NodeError(f"bias of shape {list(ctx.shape(2))} must have shape [{w[0]}]")
    strides, dilations = _pair(ctx, "strides"), _pair(ctx, "dilations")
    pads = _window_pads(ctx, x[2:], w[2:], strides, dilations)
    out = conv_out_shape(x, w, strides, pads, dilations, group)
    if out is None:
        raise NodeError(f"the output would be empty: input {list(x)} is smaller than the "
                        f"{w[2]}x{w[3]} kernel (dilations {list(dilations)}, pads {list(pads)})")
    op = Conv2dOp(ctx.value(0), ctx.value(1), ctx.optional_value(2), f32_tensor(out),
                  strides=strides, pads=pads, dilations=dilations, group=group)
    return [ctx.build(op).results[0]]


def _binary(op_class: type[AddOp | SubOp | MulOp | DivOp]) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        a, b = ctx.shape(0), ctx.shape(1)
        shape = broadcast_shapes(a, b)
        if shape is None:
            raise NodeError(f"operand shapes {list(a)} and {list(b)} do not broadcast")
        return [ctx.build(op_class(ctx.value(0), ctx.value(1), f32_tensor(shape))).results[0]]

    convert.__doc__ = f"Elementwise `{op_class.name}` with numpy broadcasting."
    return convert


converter("Add")(_binary(AddOp))
converter("Sub")(_binary(SubOp))
converter("Mul")(_binary(MulOp))
converter("Div")(_binary(DivOp))


@converter("Relu")
def convert_relu(ctx: NodeContext) -> Sequence[Output]:
    """max(x, 0)."""
    return [ctx.build(ReluOp(ctx.value(0), f32_tensor(ctx.shape(0)))).results[0]]


@converter("MaxPool", attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                             "storage_order", "strides"))
def convert_maxpool(ctx: NodeContext) -> Sequence[Output]:
    """2-D max pooling. ceil_mode=1 is accepted only where it gives the same output
    as floor mode; `storage_order` only concerns the (unsupported) Indices output."""
    x = ctx.shape(0)
    kernel = ctx.ints_attr("kernel_shape", ())
    if len(x) != 4 or len(kernel) != 2:
        raise NodeError(f"only 2-D pooling is supported: input {list(x)} must be 4-D and "
                        f"kernel_shape {list(kernel)} must have 2 values")
    if any(k <= 0 for k in kernel):
        raise NodeError(f"kernel_shape {list(kernel)} must be positive")
    strides, dilations = _pair(ctx, "strides"), _pair(ctx, "dilations")
    pads = _window_pads(ctx, x[2:], kernel, strides, dilations)
    if any(p >= k for p, k in zip(pads, kernel * 2)):
        raise NodeError(f"pads {list(pads)} must be smaller than kernel_shape {list(kernel)}")
    if ctx.attr("ceil_mode", 0):
        for i in range(2):
            span = x[2 + i] + pads[i] + pads[i + 2] - ((kernel[i] - 1) * dilations[i] + 1)
            if span >= 0 and span % strides[i]:
                raise NodeError("unsupported attribute ceil_mode=1 (it changes the output shape here)")
    out = conv_out_shape(x, (x[1], 1, *kernel), strides, pads, dilations)
    if out is None:
        raise NodeError(f"the output would be empty: input {list(x)} is smaller than the "
                        f"{kernel[0]}x{kernel[1]} window")
    op = MaxPoolOp(ctx.value(0), f32_tensor(out), kernel=kernel, strides=strides, pads=pads,
                   dilations=dilations)
    return [ctx.build(op).results[0]]


@converter("Flatten", attrs=("axis",))
def convert_flatten(ctx: NodeContext) -> Sequence[Output]:
    """[d0..d(axis-1), d(axis)..] -> [prod(front), prod(back)], an `npu_graph.reshape`."""
    x = ctx.shape(0)
    axis = int(ctx.attr("axis", 1))
    if not -len(x) <= axis <= len(x):
        raise NodeError(f"axis={axis} is out of range for an input of rank {len(x)}")
    if axis < 0:
        axis += len(x)
    shape = (_prod(x[:axis]), _prod(x[axis:]))
    return [ctx.build(ReshapeOp(ctx.value(0), f32_tensor(shape))).results[0]]


@converter("Reshape", attrs=("allowzero",))
def convert_reshape(ctx: NodeContext) -> Sequence[Output]:
    """Reshape to a constant target shape (0 copies a dimension, one -1 is inferred)."""
    target = ctx.constant(1, "the target shape")
    if target.ndim != 1 or not np.issubdtype(target.dtype, np.integer):
        raise NodeError(f"the target shape must be a 1-D integer tensor, got {target.dtype} "
                        f"of shape {list(target.shape)}")
    shape = reshape_shape(ctx.shape(0), [int(d) for d in target], bool(ctx.attr("allowzero", 0)))
    return [ctx.build(ReshapeOp(ctx.value(0), f32_tensor(shape))).results[0]]


@converter("Identity")
def convert_identity(ctx: NodeContext) -> Sequence[Output]:
    """No op: the output is the input."""
    return [ctx.tensor(0)]


@converter("Dropout", attrs=("ratio", "seed", "is_test"))
def convert_dropout(ctx: NodeContext) -> Sequence[Output]:
    """Inference: the output is the input (the mask output is not supported)."""
    if ctx.has_input(2):
        training = ctx.constant(2, "training_mode")
        if training.size and bool(training.reshape(-1)[0]):
            raise NodeError("training_mode=1 is not supported (inference only)")
    return [ctx.tensor(0)]


@converter("Constant", attrs=("value", "value_float", "value_floats", "value_int", "value_ints"))
def convert_constant(ctx: NodeContext) -> Sequence[Output]:
    """Constant data; becomes an `npu_graph.constant` only where an op uses it."""
    if len(ctx.node.attribute) != 1:
        raise NodeError("needs exactly one value attribute")
    attr = ctx.node.attribute[0]
    v = _attr_value(attr)
    if attr.name == "value":
        data = numpy_helper.to_array(v)
    elif attr.name in ("value_float", "value_floats"):
        data = np.array(v, dtype=np.float32)
    else:
        data = np.array(v, dtype=np.int64)
    out = ctx.node.output[0]
    return [Tensor(out, tuple(data.shape), data.dtype, data=data, origin=ctx.label)]


# --------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------


def import_model(model: onnx.ModelProto, arch: Arch | None = None) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Translate `model` into a verified `builtin.module` holding `func.func @main`,
    and return it with the weights it names (`npu_graph.constant {weight = KEY}`),
    keyed by sanitized unique names. The module carries `npu.arch` (`arch`, or the
    `default` preset); the caller saves the weights and sets `npu.weights`.
    `@main` carries the ONNX input/output names as `npu.inputs`/`npu.outputs`.

    Assumes a model that passed `onnx.checker` (see `load_model`); anything it cannot
    import raises `OnnxImportError` with one line per offending node or value."""
    return _Importer(model).run(arch or PRESETS["default"])


@dataclass
class _Importer:
    model: onnx.ModelProto
    tensors: dict[str, Tensor] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostics: list[str] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    inferred: dict[str, tuple[np.dtype | None, tuple[int, ...] | None]] = field(default_factory=dict)
    opset: int = 0
    graph_outputs: set[str] = field(default_factory=set)

    # values --------------------------------------------------------------------------

    def lookup(self, name: str) -> Tensor:
        t = self.tensors.get(name)
        if t is None:
            raise NodeError(f"input '{name}' is not produced by an earlier node, an initializer "
                            "or a graph input")
        return t

    def materialize(self, t: Tensor) -> SSAValue:
        """The SSA value of `t`; constant data becomes an `npu_graph.constant` (inline
        when small, else a weight), created once at the first use."""
        if t.value is not None:
            return t.value
        if t.data is None:
            raise _Skip()
        if t.dtype != np.float32:
            raise NodeError(f"'{t.name}' has element type {t.dtype}; only float32 tensors are "
                            "supported as operands")
        ty = TensorType(Float32Type(), t.shape)
        if t.data.size <= INLINE_MAX_ELEMENTS:
            vals = [float(v) for v in t.data.reshape(-1)]
            op = ConstantOp(ty, value=DenseIntOrFPElementsAttr.from_list(ty, vals))
        else:
            key = self._weight_key(t.name)
            self.weights[key] = np.ascontiguousarray(t.data)
            op = ConstantOp(ty, weight=key)
        op.location = name_loc(t.origin or t.name)
        t.value = op.results[0]
        return t.value

    def _weight_key(self, name: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_.\-]+", "_", name).strip("_.") or "weight"
        key, i = base, 1
        while key in self.weights:
            key, i = f"{base}_{i}", i + 1
        return key

    def _placeholder(self, name: str) -> Tensor | None:
        """Stand-in for an output of a failed node, with ONNX's inferred f32 shape."""
        dtype, shape = self.inferred.get(name, (None, None))
        if dtype != np.float32 or shape is None:
            return None
        arg = Block(arg_types=[f32_tensor(shape)]).args[0]
        return Tensor(name, shape, np.dtype(np.float32), value=arg, placeholder=True)

    # the walk ------------------------------------------------------------------------

    def run(self, arch: Arch) -> tuple[ModuleOp, dict[str, np.ndarray]]:
        graph = self.model.graph
        self._check_opset()
        self._infer_shapes()
        for node in graph.node:
            self.used.update(n for n in node.input if n)
        self.graph_outputs = {o.name for o in graph.output}
        self.used |= self.graph_outputs

        for init in graph.initializer:
            try:
                data = numpy_helper.to_array(init)
            except Exception as e:
                self.diagnostics.append(f"error: initializer '{init.name}': cannot read its data: "
                                        f"{_one_line(str(e))}")
                continue
            self.tensors[init.name] = Tensor(init.name, tuple(data.shape), data.dtype, data=data,
                                             origin=init.name)

        inputs = [i for i in graph.input if i.name not in self.tensors]
        shapes = [self._input_shape(vi) for vi in inputs]
        block = Block(arg_types=[f32_tensor(shape or ()) for shape in shapes])
        for vi, shape, arg in zip(inputs, shapes, block.args):
            hint = re.sub(r"[^A-Za-z0-9_$.\-]", "_", vi.name)
            if re.fullmatch(r"[A-Za-z_$.\-][A-Za-z0-9_$.\-]*", hint):
                arg.name_hint = hint
            self.tensors[vi.name] = (Tensor(vi.name, shape, np.dtype(np.float32), value=arg)
                                     if shape is not None else
                                     Tensor(vi.name, (), np.dtype(np.float32), placeholder=True))

        with ImplicitBuilder(block):
            for index, node in enumerate(graph.node):
                self._import_node(index, node)
            results = self._outputs()

        if self.diagnostics:
            raise OnnxImportError(self.diagnostics)

        block.add_op(func.ReturnOp(*results))
        fn = func.FuncOp("main", ([a.type for a in block.args], [r.type for r in results]),
                         Region(block))
        fn.attributes[INPUTS_ATTR] = ArrayAttr([StringAttr(i.name) for i in inputs])
        fn.attributes[OUTPUTS_ATTR] = ArrayAttr([StringAttr(o.name) for o in graph.output])
        module = ModuleOp([fn])
        set_arch(module, arch)
        try:
            module.verify()
        except VerifyException as e:
            raise OnnxImportError(f"error: the imported module does not verify: {_one_line(str(e))}") from None
        return module, self.weights

    def _check_opset(self) -> None:
        versions = [o.version for o in self.model.opset_import if o.domain in _DEFAULT_DOMAINS]
        if not versions:
            self.diagnostics.append("error: the model imports no default-domain (ai.onnx) opset")
            return
        self.opset = versions[0]
        if not MIN_OPSET <= self.opset <= MAX_OPSET:
            self.diagnostics.append(f"error: the model uses ONNX opset {self.opset}; supported opsets "
                                    f"are {MIN_OPSET}..{MAX_OPSET}")

    def _infer_shapes(self) -> None:
        """ONNX's own shape inference, used only for placeholders after a failed node
        and to cross-check the shapes the converters compute."""
        try:
            inferred = onnx.shape_inference.infer_shapes(self.model, strict_mode=False)
        except Exception:
            return
        g = inferred.graph
        for vi in [*g.value_info, *g.output]:
            tt = vi.type.tensor_type
            if not vi.type.HasField("tensor_type") or not tt.HasField("shape"):
                continue
            dims = tt.shape.dim
            shape = tuple(d.dim_value for d in dims) if all(d.HasField("dim_value") for d in dims) else None
            try:
                dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
            except Exception:
                dtype = None
            self.inferred[vi.name] = (dtype, shape)

    def _input_shape(self, vi: onnx.ValueInfoProto) -> tuple[int, ...] | None:
        """The static shape of graph input `vi`, or None after recording why it is not
        usable (not a tensor, not float32, no shape, symbolic dimension)."""
        if not vi.type.HasField("tensor_type"):
            self._diag_once(f"error: input '{vi.name}' is not a tensor; only float32 tensors are supported")
            return None
        tt = vi.type.tensor_type
        if tt.elem_type != onnx.TensorProto.FLOAT:
            name = onnx.TensorProto.DataType.Name(tt.elem_type) if tt.elem_type else "undefined"
            self._diag_once(f"error: input '{vi.name}' has element type {name.lower()}; only float32 "
                            "inputs are supported")
            return None
        if not tt.HasField("shape"):
            self._diag_once(f"error: input '{vi.name}' has no shape; dynamic shapes are not supported yet")
            return None
        shape = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:
                shape.append(d.dim_value)
                continue
            what = f"symbolic dimension '{d.dim_param}'" if d.dim_param else f"unknown dimension {i}"
            self._diag_once(f"error: {what} in input '{vi.name}'; dynamic shapes are not supported yet")
            return None
        return tuple(shape)

    def _diag_once(self, line: str) -> None:
        if line not in self.diagnostics:
            self.diagnostics.append(line)

    def _import_node(self, index: int, node: onnx.NodeProto) -> None:
        """Convert one node, or record its diagnostic and bind placeholders."""
        label = node.name or f"{node.op_type}#{index}"
        domain = "" if node.domain in _DEFAULT_DOMAINS else node.domain
        op_type = f"{domain}.{node.op_type}" if domain else node.op_type
        prefix = f"error: node '{label}' ({op_type}, opset {self._opset_of(domain)}): "
        try:
            entry = CONVERTERS.get(node.op_type) if not domain else None
            if entry is None:
                raise NodeError("unsupported operator")
            undefined = [a.name for a in node.attribute if a.name not in _schema_attrs(node.op_type, self.opset)]
            if undefined:
                raise NodeError(f"attribute {', '.join(undefined)} is not defined for {node.op_type} "
                                f"at opset {self.opset}")
            extra = [a for a in node.attribute if a.name not in entry.attrs]
            if extra:
                raise NodeError("unsupported attribute " + ", ".join(_fmt_attr(a) for a in extra))
            for name in node.input:
                if name:
                    t = self.lookup(name)
                    if t.placeholder and t.value is None:
                        raise _Skip()
            ctx = NodeContext(self, node, label, self.opset)
            outs = list(entry.fn(ctx))
            for i, name in enumerate(node.output[len(outs):], start=len(outs)):
                if name and name in self.used:
                    raise NodeError(f"output {i} ('{name}') is not supported")
        except (NodeError, VerifyException) as e:
            self.diagnostics.append(prefix + _one_line(str(e)))
            self._bind_placeholders(node)
            return
        except _Skip:
            self._bind_placeholders(node)
            return
        except Exception as e:
            raise RuntimeError(f"importer bug at node '{label}' ({op_type}): {type(e).__name__}: {e}") from e
        for name, out in zip(node.output, outs):
            if not name:
                continue
            t = out if isinstance(out, Tensor) else Tensor(name, shape_of(out), np.dtype(np.float32), value=out)
            _, shape = self.inferred.get(name, (None, None))
            declared = name in self.graph_outputs  # checked against the declaration in _outputs
            if shape is not None and not declared and not t.placeholder and shape != t.shape:
                self.diagnostics.append(prefix + f"output '{name}' has shape {list(t.shape)}, but ONNX "
                                        f"shape inference says {list(shape)}")
            self.tensors[name] = t

    def _bind_placeholders(self, node: onnx.NodeProto) -> None:
        for name in node.output:
            if not name:
                continue
            ph = self._placeholder(name)
            self.tensors[name] = ph or Tensor(name, (), np.dtype(np.float32), placeholder=True)

    def _opset_of(self, domain: str) -> int:
        if not domain:
            return self.opset
        for o in self.model.opset_import:
            if o.domain == domain:
                return o.version
        return 0

    def _outputs(self) -> list[SSAValue]:
        """SSA values of the graph outputs; records a diagnostic for each unusable one."""
        results: list[SSAValue] = []
        for vo in self.model.graph.output:
            t = self.tensors.get(vo.name)
            if t is None:
                self._diag_once(f"error: output '{vo.name}' is not produced by any node")
                continue
            if t.placeholder:
                continue
            if t.dtype != np.float32:
                self._diag_once(f"error: output '{vo.name}' has element type {t.dtype}; only float32 "
                                "outputs are supported")
                continue
            declared = vo.type.tensor_type.shape.dim if vo.type.HasField("tensor_type") else []
            if declared and all(d.HasField("dim_value") for d in declared):
                want = tuple(d.dim_value for d in declared)
                if want != t.shape:
                    self._diag_once(f"error: output '{vo.name}' is declared with shape {list(want)}, "
                                    f"but the graph computes {list(t.shape)}")
                    continue
            results.append(self.materialize(t))
        return results

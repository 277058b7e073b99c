"""ONNX -> `npu_graph`: the importer (a translation, not a pass).

`import_model` turns an `onnx.ModelProto` into a `builtin.module` that holds
`func.func @main(%inputs...) -> (outputs...)` built from `npu_graph` ops, plus a
dict of the weights the module refers to by name (`npu_graph.constant {weight =
"fc1.weight"}`); the caller saves that dict as the module's weight side file.
Each ONNX op type has one small converter function (`CONVERTERS`, `@converter`):
adding an op is adding one such function. Nodes on constant data are folded at
import (not QuantizeLinear/DequantizeLinear: `quantized.py`). Tensors are f32, or
f16/bf16, i8/ui8, i32 where the model has them (Element types below).

Problems are collected for the whole graph before anything is raised: one line per
offending node, `error: node 'NAME' (OpType, opset N): what is wrong`, all raised
together as `OnnxImportError`.

Algorithm
---------
The graph is walked once in topological order. Every ONNX value is
a `Tensor` - either an SSA value of the function being built, or constant data
(an initializer or a `Constant` node) that is turned into an `npu_graph.constant`
only when an op uses it as an operand (so shape tensors such as Reshape's never
reach the IR). Each ONNX op type has one small converter function, registered in
`CONVERTERS` with the `@converter` decorator together with the attributes it
understands; a converter reads its node through a `NodeContext`, builds ops with
`ctx.build(...)` (which sets the location to the node name and verifies the op)
and returns the node's outputs.

Constant folding at import: a node whose inputs are all constant data (shape
arithmetic such as Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Range,
ConstantOfShape, a transposed weight, a causal mask built with Trilu) is evaluated
with onnx's reference implementation (`onnx.reference`) and its outputs are constant
data too: such nodes never appear in the IR. `Shape` and `Size` of a computed value
are constant data as well, since every shape is static.

Element types (docs/low-precision.md): int64, bool and other constant data is fine
at import. Integer and boolean values computed at run time (Cast to an integer type,
comparisons, And/Or/Not, Gather indices) are carried as float32 values that hold the
integers (exact up to 2^24) or 1.0 / 0.0; a `Tensor` keeps its ONNX element type for
the converters, and integer or boolean constant operands of such ops are converted to
float32 (`NodeContext.value(i, carried=True)`). Typed tensors: int8/uint8/int32/float16/
bfloat16 graph inputs and outputs keep their type (`TYPED_IO`); quantized ops give i8/ui8
(and i32 accumulators); a node with an f16/bf16 input computes in that type
(`node_float`: `f32_tensor` and float constants follow it) unless an output is an
integer or boolean; data movement keeps i8/ui8 (`NodeContext.moved`); any other
converter sees an i8/ui8/i32 value as its exact f32 carrier (`as_carried`: dequantize
by 1, 0) and f16 in an f32 node widened by a cast.

Opset differences are handled per converter (attributes that became inputs: Slice
at 10, Clip at 11, Squeeze/Unsqueeze/Split/ReduceSum at 13, the other reductions
and Pad axes at 18; Softmax flattens to 2-D before 13; Split's num_outputs at 18).

Per-node precision: a node whose `metadata_props` hold `npu.precision` = f16 | bf16 |
f32 (what `npu-quantize --qtable` writes for a layer kept in 16 bits; onnxruntime
ignores the entry) is computed in that type: the map becomes the module's
`npu.precision` attribute and `import_model` runs npu-convert-precision on it, so
those nodes' ops get the pass's rules (sums and statistics in f32, casts at the
boundaries) while each op's location is still its node (a node imported as its
function body passes its entry to the body's nodes). Another value is a diagnostic.

Errors: after a node fails, its outputs stand in as placeholders (with the shape
ONNX shape inference gives, when it gives one) so the nodes after it are still
checked.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, cast

import ml_dtypes
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
    DictionaryAttr,
    Float32Type,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from lowering.importer import functions
from lowering.importer.symbolic import OnnxImportError, bind_dims
from npu_dialects.arch import DRAM_BYTES, PRESETS, Arch, set_arch
from npu_dialects.dtypes import bf16, element_type, f16, f32, i8, i32, np_dtype, type_name, ui8
from npu_dialects.entry import INPUT_DTYPES_ATTR, INPUTS_ATTR, OUTPUT_DTYPES_ATTR, OUTPUTS_ATTR
from npu_dialects.graph import (
    SIMPLE_UNARY,
    AbsOp,
    AddOp,
    AvgPoolOp,
    BatchNormOp,
    BinaryOp,
    CastOp,
    ClipOp,
    ConcatOp,
    ConstantOp,
    Conv2dOp,
    ConvTransposeOp,
    DequantizeOp,
    DivOp,
    ElementwiseOp,
    EqualOp,
    ErfOp,
    ExpandOp,
    ExpOp,
    FmodOp,
    GatherOp,
    GeluOp,
    GeluTanhOp,
    GemmOp,
    GreaterOp,
    LayerNormOp,
    LessOp,
    LogOp,
    LrnOp,
    MatMulOp,
    MaxOp,
    MaxPoolNdOp,
    MaxPoolOp,
    MinOp,
    ModOp,
    MulOp,
    NegOp,
    PadOp,
    PowOp,
    PReluOp,
    QuantizeOp,
    ReciprocalOp,
    ReduceMaxOp,
    ReduceMeanOp,
    ReduceMinOp,
    ReduceOp,
    ReduceSumOp,
    ReluOp,
    ReshapeOp,
    SigmoidOp,
    SliceOp,
    SoftmaxOp,
    SqrtOp,
    SubOp,
    TanhOp,
    TransposeOp,
    TriluOp,
    TruncOp,
    UnaryOp,
    WhereOp,
    broadcast_shapes,
    conv_out_shape,
    conv_transpose_out_shape,
    matmul_shape,
    pool_out_shape,
    shape_of,
)
from npu_dialects.locs import name_loc

MIN_OPSET = 7
"""Oldest default-domain opset the converters are written for."""
MAX_OPSET = onnx.defs.onnx_opset_version()
"""Newest default-domain opset: the installed onnx's (28 for onnx 1.23). Between 21 and
28 the ops converted here changed only by new element types (refused by the converters'
dtype checks) and attributes for them (Cast's round_mode, Range's stash_type: diagnosed
when set, as every attribute a converter does not take)."""
_NO_FOLD = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                      "Multinomial", "Bernoulli", "Dropout", "LSTM", "GRU", "RNN"})
"""Op types never evaluated at import even with constant inputs (not deterministic;
Dropout in training mode is random; onnx's reference recurrences ignore sequence_lens,
direction, activations and clip: their converters build them, npu-constant-fold folds)."""
_OWN_FOLD = frozenset({"Slice", "QuantizeLinear", "DequantizeLinear"})
"""Op types whose converters compute constant data themselves, not onnx's reference
(which slices numpy-style: a Slice from and to INT64_MIN with step -1 came out empty),
or build ops on it: a dequantized int8 weight stays an int8 constant and a `dequantize`
(npu-fuse-qdq computes in its integers)."""
_SMALL_INTS = frozenset({"int4", "uint4", "int2", "uint2"})
"""Sub-byte integer element types (ml_dtypes, not numpy integers): carried as float32 too."""
INLINE_MAX_ELEMENTS = 16
"""Constants with at most this many elements are written inline (`value`), larger ones
go to the weight side file (`weight`)."""

_DEFAULT_DOMAINS = ("", "ai.onnx")

_NODE_FLOAT: ContextVar[Attribute] = ContextVar("node_float", default=f32)
"""The float type of the node being converted: f16/bf16 when an input is (an all-f16
model computes in f16), else f32 (`_node_float`)."""


def f32_tensor(shape: Sequence[int]) -> TensorType:
    """A float tensor type of `shape` in the node's float type (f32 unless the node
    computes in f16/bf16): what converters give their float results."""
    return TensorType(_NODE_FLOAT.get(), list(shape))


def _dense(ty: TensorType, vals: list) -> DenseIntOrFPElementsAttr:
    """A dense literal of any element type (xDSL's overloads want a static one)."""
    return DenseIntOrFPElementsAttr.from_list(cast(Any, ty), vals)


def _f32_scalar(x: float) -> ConstantOp:
    """An inline f32 scalar constant (the parameters of an exact integer conversion)."""
    ty = TensorType(f32, [])
    return ConstantOp(ty, value=_dense(ty, [x]))


def node_float() -> Attribute:
    """The float element type of the node being converted (f32, f16 or bf16)."""
    return _NODE_FLOAT.get()


# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


INPUT_ELEM_TYPES: dict[int, type] = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.BOOL: np.bool_, onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.FLOAT16: np.float16, onnx.TensorProto.BFLOAT16: ml_dtypes.bfloat16,
}
"""Graph input and output element types accepted. int8, uint8, float16 and bfloat16 ones
keep their type (`TYPED_IO`); other integer and bool values are carried as f32 values
(exact for |x| < 2**24: token ids, positions, masks, indices)."""
TYPED_IO = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
"""Graph input/output element types held in their own type (the function signature says so)."""
HELD = {np.dtype(np.float32): f32, np.dtype(np.int8): i8, np.dtype(np.uint8): ui8, np.dtype(np.int32): i32,
        np.dtype(np.float16): f16, np.dtype(ml_dtypes.bfloat16): bf16}
"""numpy dtype -> the element type constant data of that dtype has when an op takes it as is
(`NodeContext.typed_value`)."""


class NodeError(Exception):
    """Raised by a converter: what is wrong with its node (the driver adds the
    `error: node 'NAME' (OpType, opset N): ` prefix); `hint`, a `hint: ...` line listed
    once after all the errors, or None."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class _Skip(Exception):
    """A converter needs something a failed earlier node should have produced; the
    node is skipped silently, the earlier node's diagnostic already explains it."""


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def load_model(path: str) -> onnx.ModelProto:
    """Read and check an ONNX file. Raises `OnnxImportError` with one line naming the file,
    `PATH: error: cannot read the ONNX model: REASON` for a missing, unreadable, truncated
    or garbage file, `PATH: error: node 'NAME' (OpType, opset N): ...` for a node input
    nothing before it produces (a dangling name, a cycle), `PATH: error: the graph has no
    outputs`, and what `onnx.checker` rejects (`node ...: ` when it names a node, else
    `PATH: error: invalid ONNX model: ...`)."""
    try:
        model = onnx.load(path)
    except FileNotFoundError:
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: no such file") from None
    except IsADirectoryError:
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: is a directory") from None
    except DecodeError as e:
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: truncated or not an ONNX file "
                              f"({_one_line(str(e))})") from None
    except Exception as e:  # OSError, ValueError (missing external data)...
        reason = _one_line(str(e)) or type(e).__name__
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: {reason}") from None
    if not model.graph.node and not model.graph.output and not model.opset_import:
        # protobuf happily parses many garbage byte strings into an empty message.
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: not an ONNX model "
                              "(no graph, no outputs, no opset)")
    problem = _graph_problem(model)
    if problem:
        raise OnnxImportError(f"{path}: error: {problem}")
    try:
        onnx.checker.check_model(model)
    except Exception as e:  # ValidationError, or anything the checker trips over
        raise OnnxImportError(f"{path}: error: {_checker_message(str(e), _default_opset(model))}") from None
    return model


def _default_opset(model: onnx.ModelProto) -> int | None:
    return next((o.version for o in model.opset_import if o.domain in _DEFAULT_DOMAINS), None)


def _node_label(node: onnx.NodeProto, index: int, opset: int | None) -> str:
    """`node 'NAME' (OpType, opset N)`, as the importer's diagnostics name nodes."""
    at = f", opset {opset}" if opset is not None else ""
    return f"node '{node.name or f'{node.op_type}#{index}'}' ({node.op_type or '?'}{at})"


def _graph_problem(model: onnx.ModelProto) -> str | None:
    """What `onnx.checker` says of these in a form naming the culprit: a graph without
    outputs, a node input that no graph input, initializer or earlier node produces."""
    graph, opset = model.graph, _default_opset(model)
    if not graph.output:
        return "the graph has no outputs"
    known = {"", *(i.name for i in graph.input), *(t.name for t in graph.initializer)}
    later = {name: (i, n) for i, n in enumerate(graph.node) for name in n.output}
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name in known:
                continue
            if name in later:
                j, other = later[name]
                return (f"{_node_label(node, index, opset)}: input '{name}' comes from a later node, "
                        f"{_node_label(other, j, opset)}: the graph has a cycle or is not topologically sorted")
            return (f"{_node_label(node, index, opset)}: input '{name}' is not produced by any node, "
                    "initializer or graph input")
        known.update(node.output)
    return None


def _checker_message(text: str, opset: int | None) -> str:
    """`onnx.checker`'s message on one line, `node 'NAME' (OpType, opset N): ...` when it
    names the node at fault."""
    m = re.search(r"Bad node spec for node\. Name: (.*?) OpType: ?(\S*)", text)
    if m is None:
        return f"invalid ONNX model: {_one_line(text)}"
    at = f", opset {opset}" if opset is not None else ""
    return f"node '{m[1] or m[2]}' ({m[2] or '?'}{at}): {_one_line(text)}"


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
    typed_values: dict[str, SSAValue] = field(default_factory=dict)  # constant data as other element types


Output = SSAValue | Tensor
Converter = Callable[["NodeContext"], Sequence[Output]]


@dataclass(frozen=True)
class ConverterEntry:
    """A converter and the node attributes it understands (others are diagnosed)."""

    fn: Converter
    attrs: frozenset[str]


CONVERTERS: dict[str, ConverterEntry] = {}
"""ONNX op type -> its converter (`domain.OpType` outside the default domain, as plugins
register them). Filled by `@converter`."""


def converter(op_type: str, attrs: Sequence[str] = ()) -> Callable[[Converter], Converter]:
    """Register `fn` as the converter of `op_type`; `attrs` lists the ONNX attributes it
    handles - a node carrying any other attribute is diagnosed before `fn` runs."""

    def register(fn: Converter) -> Converter:
        CONVERTERS[op_type] = ConverterEntry(fn, frozenset(attrs))
        return fn

    return register


def supported_op_types(functions_too: bool = False) -> list[str]:
    """The ONNX op types the importer converts, sorted; with `functions_too` also those it
    imports as their ONNX function body (`functions.function_ops`: every static body
    whose ops import, and the per-node bodies of `functions.CHECKED_CONTEXT_DEPENDENT`)."""
    ops = set(CONVERTERS)
    if functions_too:
        ops |= {op for op, kind in functions.function_ops(ops, MAX_OPSET).items()
                if kind == "function" or op in functions.CHECKED_CONTEXT_DEPENDENT}
    return sorted(ops)


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

    def value(self, i: int, *, carried: bool = False) -> SSAValue:
        """Input `i` as an f32 SSA value; constant data becomes an `npu_graph.constant`.
        With `carried`, integer and boolean constant data is converted to float32 (how
        such values live on the device) instead of being rejected."""
        t = self.tensor(i)
        if carried:
            t = self._imp.carried(t)
        v = self._imp.as_carried(self._imp.materialize(t))
        if element_type(v) in (f16, bf16) and node_float() == f32:
            v = self._imp.widened(v)
        return v

    def moved(self, i: int) -> SSAValue:
        """Input `i` for an op that only moves elements (reshape, transpose, max pooling):
        an i8/ui8 value as it is (exact on the integers), else as `value` gives it."""
        t = self.tensor(i)
        if t.value is not None and element_type(t.value) in (i8, ui8):
            return t.value
        return self.value(i)

    @staticmethod
    def like(v: SSAValue, shape: Sequence[int]) -> TensorType:
        """The result type of moving `v`'s elements into `shape`: `v`'s i8/ui8 type, else
        the node's float type."""
        return TensorType(element_type(v), list(shape)) if element_type(v) in (i8, ui8) else f32_tensor(shape)

    def typed_value(self, i: int, allowed: Sequence[str], what: str = "") -> SSAValue:
        """Input `i` in its own element type, which must be named in `allowed` (`what`
        names the input in the diagnostic): constant data of that type becomes a typed
        constant; a value carried as f32 whose ONNX type is allowed is converted back
        (`quantize` by 1, 0: exact, its values are integers of that type)."""
        t = self.tensor(i)
        if t.placeholder and t.value is None:
            raise _Skip()
        want = HELD.get(np.dtype(t.dtype))
        label = what or f"input {i}"
        if want is None or type_name(want) not in allowed:
            raise NodeError(f"{label} ('{t.name}') has element type {t.dtype}; supported: {', '.join(allowed)}")
        assert want is not None
        if t.data is not None and t.value is None:
            return self._imp.materialize_typed(t, want)
        v = self._imp.materialize(t)
        if element_type(v) == want:
            return v
        if element_type(v) == f32 and want in (i8, ui8):
            one, zero = self.scalar32(1.0), self.scalar32(0.0)
            return self.build(QuantizeOp(v, one, zero, TensorType(want, shape_of(v)))).results[0]
        raise NodeError(f"{label} ('{t.name}') is held as {element_type(v)}, not {want}")

    def ssa(self, out: Output) -> SSAValue:
        """A converter's output (SSA value or `Tensor`) as an f32 SSA value."""
        return out if isinstance(out, SSAValue) else self._imp.materialize(out)

    def scalar(self, v: float) -> SSAValue:
        """An inline f32 scalar constant (shape []) located at this node."""
        return self.const(np.array(v, dtype=np.float32), "const")

    def const(self, data: np.ndarray, hint: str, elem: Attribute | None = None) -> SSAValue:
        """A constant of `data` located at this node (inline when small, else a weight
        whose key derives from the node and `hint`), in the node's float type or `elem`."""
        data = np.asarray(data, dtype=np.float32)
        t = Tensor(f"{self.label}.{hint}", data.shape, data.dtype, data=data, origin=self.label)
        return self._imp.materialize(t) if elem is None else self._imp.materialize_typed(t, elem)

    def scalar32(self, v: float) -> SSAValue:
        """An inline f32 scalar constant whatever the node's float type (a quantization
        parameter)."""
        return self.const(np.array(v, dtype=np.float32), "const", f32)

    def dtype(self, i: int) -> np.dtype:
        """The ONNX element type of input `i` (runtime integers and booleans are carried
        as f32 values but keep their ONNX type here)."""
        return self.tensor(i).dtype

    def typed(self, v: SSAValue, dtype: np.dtype | type, i: int = 0) -> Tensor:
        """Output `i` as SSA value `v` whose ONNX element type is `dtype`."""
        return Tensor(self.node.output[i], shape_of(v), np.dtype(dtype), value=v)

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

    @property
    def arch(self) -> Arch | None:
        """The arch the model is imported for."""
        return self._imp.arch

    def carried_value(self, v: SSAValue) -> SSAValue:
        """SSA value `v` as converters compute on it (an integer one carried as f32)."""
        return self._imp.as_carried(v)

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
    """The pads of a window op over `spatial` dims from `pads`/`auto_pad`: the begin
    counts, then the end counts ((top, left, bottom, right) for a 2-D window)."""
    n = len(spatial)
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = ctx.ints_attr("pads", (0,) * (2 * n))
        if len(pads) != 2 * n:
            raise NodeError(f"pads {list(pads)} must have {2 * n} values for a {n}-D window")
        if any(p < 0 for p in pads):
            raise NodeError(f"pads {list(pads)} must not be negative")
        return pads
    if ctx.has_attr("pads"):
        raise NodeError(f"pads cannot be combined with auto_pad={auto_pad}")
    if auto_pad == "VALID":
        return (0,) * (2 * n)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise NodeError(f"unsupported attribute auto_pad={auto_pad}")
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return (*begin, *end)


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
    """1-D or 2-D convolution, NC[H]W input, OI[H]W weight, optional bias; a 1-D one is
    2-D with a unit height (reshapes around it)."""
    return [build_conv(ctx, ctx.value(0), ctx.value(1), ctx.optional_value(2), node_float())]


def build_conv(ctx: NodeContext, xv: SSAValue, wv: SSAValue, bias: SSAValue | None, result: Attribute,
               **zero_points: int) -> SSAValue:
    """The node's convolution (attributes as ONNX Conv's) of input `xv`, weight `wv` and
    `bias`, with result element type `result` (i32 for an integer one, whose
    `zero_points` are `Conv2dOp`'s); 1-D is 2-D with a unit height."""
    x, w = shape_of(xv), shape_of(wv)
    if len(x) not in (3, 4) or len(w) != len(x):
        raise NodeError(f"only 1-D and 2-D convolutions are supported: input {list(x)} and weight {list(w)} "
                        "must both be 3-D or 4-D")
    n = len(x) - 2
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
    if bias is not None and shape_of(bias) != (w[0],):
        raise NodeError(f"bias of shape {list(shape_of(bias))} must have shape [{w[0]}]")
    strides, dilations = _ints_n(ctx, "strides", n), _ints_n(ctx, "dilations", n)
    pads = _window_pads(ctx, x[2:], w[2:], strides, dilations)
    if n == 1:
        strides, dilations, pads = (1, *strides), (1, *dilations), (0, pads[0], 0, pads[1])
        x, w = (*x[:2], 1, x[2]), (*w[:2], 1, w[2])
        xv = ctx.build(ReshapeOp(xv, TensorType(element_type(xv), x))).results[0]
        wv = ctx.build(ReshapeOp(wv, TensorType(element_type(wv), w))).results[0]
    out = conv_out_shape(x, w, strides, pads, dilations, group)
    if out is None:
        raise NodeError(f"the output would be empty: input {list(x)} is smaller than the "
                        f"{'x'.join(map(str, w[2:]))} kernel (dilations {list(dilations)}, pads {list(pads)})")
    op = Conv2dOp(xv, wv, bias, TensorType(result, out), strides=strides, pads=pads, dilations=dilations,
                  group=group, **zero_points)
    y = ctx.build(op).results[0]
    return y if n == 2 else ctx.build(ReshapeOp(y, TensorType(result, (out[0], out[1], out[3])))).results[0]


def _conv_transpose_pads(ctx: NodeContext, x: Sequence[int], k: Sequence[int], s: Sequence[int],
                         d: Sequence[int], op: Sequence[int]) -> tuple[int, ...]:
    """ConvTranspose pads (begins, then ends) from `pads`, or from `output_shape` /
    `auto_pad` by the spec's formula (SAME_UPPER puts the odd unit at the end); a
    negative total extends the result with zeros at the end, as onnxruntime and ONNX's
    reference do (the formula would also shift it by half the total)."""
    n, auto_pad = len(x), ctx.attr("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise NodeError(f"unsupported attribute auto_pad={auto_pad}")
    if ctx.has_attr("output_shape") and ctx.has_attr("pads"):
        raise NodeError("pads cannot be combined with output_shape")
    if not ctx.has_attr("output_shape") and auto_pad in ("NOTSET", "VALID"):
        pads = ctx.ints_attr("pads", (0,) * (2 * n)) if auto_pad == "NOTSET" else (0,) * (2 * n)
        if len(pads) != 2 * n:
            raise NodeError(f"pads {list(pads)} must have {2 * n} values for a {n}-D window")
        return pads
    out = ctx.ints_attr("output_shape", tuple(i * si for i, si in zip(x, s)))[-n:]
    if len(out) != n:
        raise NodeError(f"output_shape {list(ctx.attr('output_shape'))} must give {n} spatial sizes")
    total = [si * (i - 1) + o + (ki - 1) * di + 1 - t for i, ki, si, di, o, t in zip(x, k, s, d, op, out)]
    upper = auto_pad == "SAME_UPPER"
    begin = [0 if t < 0 else t // 2 if upper else t - t // 2 for t in total]
    return (*begin, *(t - b for t, b in zip(total, begin)))


@converter("ConvTranspose", attrs=("auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                                   "output_shape", "pads", "strides"))
def convert_conv_transpose(ctx: NodeContext) -> Sequence[Output]:
    """Transposed convolution, 1-D or 2-D (a 1-D one as 2-D with a unit height):
    NCHW input, weight [C_in, C_out/group, kH, kW], optional bias."""
    x, w = ctx.shape(0), ctx.shape(1)
    if len(x) not in (3, 4, 5) or len(w) != len(x):
        raise NodeError(f"only 1-D, 2-D and 3-D transposed convolutions are supported: input {list(x)} and "
                        f"weight {list(w)} must both be 3-D, 4-D or 5-D")
    n = len(x) - 2
    group = int(ctx.attr("group", 1))
    if group <= 0 or x[1] % group or w[0] != x[1]:
        raise NodeError(f"weight {list(w)} must have the input's {x[1]} channels first, divisible by "
                        f"group {group}")
    if ctx.ints_attr("kernel_shape", w[2:]) != w[2:]:
        raise NodeError(f"kernel_shape {list(ctx.attr('kernel_shape'))} does not match the weight's {list(w[2:])}")
    if ctx.has_input(2) and ctx.shape(2) != (w[1] * group,):
        raise NodeError(f"bias of shape {list(ctx.shape(2))} must have shape [{w[1] * group}]")
    s, d, op = (ctx.ints_attr(a, (v,) * n) for a, v in (("strides", 1), ("dilations", 1), ("output_padding", 0)))
    for name, v in (("strides", s), ("dilations", d), ("output_padding", op)):
        if len(v) != n or any(e < (0 if name == "output_padding" else 1) for e in v):
            raise NodeError(f"{name} {list(v)} must have {n} {'non-negative' if name == 'output_padding' else 'positive'}"
                            " values")
    if any(o >= max(si, di) for o, si, di in zip(op, s, d)):
        raise NodeError(f"output_padding {list(op)} must be below the stride or the dilation")
    pads = _conv_transpose_pads(ctx, x[2:], w[2:], s, d, op)
    if n == 3:
        return [_conv_transpose_3d(ctx, s, d, op, pads, group)]
    xv, wv = ctx.value(0), ctx.value(1)
    if n == 1:  # as 2-D with a unit height
        s, d, op, pads = (1, *s), (1, *d), (0, *op), (0, pads[0], 0, pads[1])
        xv = ctx.build(ReshapeOp(xv, f32_tensor((*x[:2], 1, x[2])))).results[0]
        wv = ctx.build(ReshapeOp(wv, f32_tensor((*w[:2], 1, w[2])))).results[0]
    out = conv_transpose_out_shape(shape_of(xv), shape_of(wv), s, pads, d, op, group)
    if out is None:
        raise NodeError(f"the output would be empty (input {list(x)}, kernel {list(w[2:])}, pads {list(pads)})")
    y = ctx.build(ConvTransposeOp(xv, wv, ctx.optional_value(2), f32_tensor(out), strides=s, pads=pads,
                                  dilations=d, output_padding=op, group=group)).results[0]
    if n == 1:
        y = ctx.build(ReshapeOp(y, f32_tensor((out[0], out[1], out[3])))).results[0]
    return [y]

def _conv_transpose_3d(ctx: NodeContext, s: Sequence[int], d: Sequence[int], op: Sequence[int],
                       pads: Sequence[int], group: int) -> SSAValue:
    """A 3-D transposed convolution as 2-D ones: output depth plane o sums the 2-D
    transposed convolutions of input plane i with kernel plane k over i*s + k*d - pad = o
    (a plane nothing reaches is zeros); the planes are stacked, then the bias added."""
    x, w = ctx.shape(0), ctx.shape(1)
    xv, wv = ctx.value(0), ctx.value(1)
    depth = (x[2] - 1) * s[0] + (w[2] - 1) * d[0] + 1 + op[0] - pads[0] - pads[3]
    pads2 = (pads[1], pads[2], pads[4], pads[5])
    planes_in = [ctx.build(ReshapeOp(ctx.build(SliceOp(xv, [0, 0, i, 0, 0], [x[0], x[1], i + 1, x[3], x[4]],
                                                      [1] * 5, f32_tensor((x[0], x[1], 1, x[3], x[4])))).results[0],
                                     f32_tensor((x[0], x[1], x[3], x[4])))).results[0] for i in range(x[2])]
    kernels = [ctx.build(ReshapeOp(ctx.build(SliceOp(wv, [0, 0, k, 0, 0], [w[0], w[1], k + 1, w[3], w[4]],
                                                    [1] * 5, f32_tensor((w[0], w[1], 1, w[3], w[4])))).results[0],
                                   f32_tensor((w[0], w[1], w[3], w[4])))).results[0] for k in range(w[2])]
    plane = conv_transpose_out_shape((x[0], x[1], x[3], x[4]), (w[0], w[1], w[3], w[4]), s[1:], pads2, d[1:], op[1:],
                                     group)
    if plane is None or depth <= 0:
        raise NodeError(f"the output would be empty (input {list(x)}, kernel {list(w[2:])}, pads {list(pads)})")
    outs = []
    for o in range(depth):
        acc = None
        for i in range(x[2]):
            for k in range(w[2]):
                if i * s[0] + k * d[0] - pads[0] != o:
                    continue
                y = ctx.build(ConvTransposeOp(planes_in[i], kernels[k], None, f32_tensor(plane), strides=s[1:],
                                              pads=pads2, dilations=d[1:], output_padding=op[1:],
                                              group=group)).results[0]
                acc = y if acc is None else _eltwise(ctx, AddOp, acc, y)
        if acc is None:  # (a plane only output_padding or a stride gap reaches)
            acc = ctx.const(np.zeros(plane, np.float32), "zeros")
        outs.append(ctx.build(ReshapeOp(acc, f32_tensor((plane[0], plane[1], 1, plane[2], plane[3])))).results[0])
    full = (plane[0], plane[1], depth, plane[2], plane[3])
    y = outs[0] if len(outs) == 1 else ctx.build(ConcatOp(outs, 2, f32_tensor(full))).results[0]
    if ctx.has_input(2):
        bias = ctx.build(ReshapeOp(ctx.value(2), f32_tensor((plane[1], 1, 1, 1)))).results[0]
        y = _eltwise(ctx, AddOp, y, bias)
    return y


def _is_float(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.floating)


def _eltwise(ctx: NodeContext, op_class: Callable[..., ElementwiseOp], *values: SSAValue) -> SSAValue:
    """`op_class(values...)` with the broadcast result shape (NodeError when the shapes
    do not broadcast)."""
    shapes = [shape_of(v) for v in values]
    shape = broadcast_shapes(*shapes)
    if shape is None:
        listed = [str(list(s)) for s in shapes]
        raise NodeError(f"operand shapes {', '.join(listed[:-1])} and {listed[-1]} do not broadcast")
    return ctx.build(op_class(*values, f32_tensor(shape))).results[0]


def _same_type_operands(ctx: NodeContext, indices: Sequence[int]) -> list[SSAValue]:
    """The inputs as SSA values; integer/boolean constants are carried as f32 when all
    the inputs share their type (an int64 constant next to a float tensor stays an error)."""
    dtypes = {ctx.dtype(i) for i in indices}
    carried = len(dtypes) == 1 and not _is_float(next(iter(dtypes)))
    return [ctx.value(i, carried=carried) for i in indices]


def _binary(op_class: type[BinaryOp]) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        a, b = _same_type_operands(ctx, (0, 1))
        y = _eltwise(ctx, op_class, a, b)
        if op_class is DivOp and not _is_float(ctx.dtype(0)):
            y = _eltwise(ctx, TruncOp, y)  # integer division truncates
        return [ctx.typed(y, ctx.dtype(0))]

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
    """Max pooling over any number of spatial dims: 2-D is `npu_graph.maxpool` (with
    its hand-written tiling), 1-D and 3-D `npu_graph.maxpool_nd`. ceil_mode=1 is extra
    end padding (see `_pool_window`), which never wins a max. A used Indices output
    (`storage_order` numbers it) takes `indexing.maxpool_with_indices` instead."""
    x = ctx.shape(0)
    kernel, strides, dilations, pads, extra = _pool_window(ctx, x)
    n = len(kernel)
    if any(p >= k for p, k in zip(pads, kernel * 2)):
        raise NodeError(f"pads {list(pads)} must be smaller than kernel_shape {list(kernel)}")
    pads = (*pads[:n], *(e + x_ for e, x_ in zip(pads[n:], extra)))
    out = _pool_out(x, kernel, strides, pads, dilations)
    if ctx.output_used(1):
        from lowering.importer.indexing import maxpool_with_indices  # (it builds on this module)
        return maxpool_with_indices(ctx, kernel, strides, pads, dilations, out)
    cls = MaxPoolOp if n == 2 else MaxPoolNdOp
    xv = ctx.moved(0)
    op = cls(xv, ctx.like(xv, out), kernel=kernel, strides=strides, pads=pads, dilations=dilations)
    return [ctx.build(op).results[0]]


def _pool_window(ctx: NodeContext, x: Sequence[int]
                 ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(kernel, strides, dilations, pads, ceil-mode extra end padding) of a pooling node
    over the spatial dims of [N, C, spatial...] input `x` (one per kernel_shape value).

    ceil_mode=1 rounds the output size up: the last window may run past the (padded)
    input, which is extra end padding - unless it would start in the end padding, when
    ONNX (and onnxruntime) drop it. The extra padding is never a max and never counts
    in an average's divisor, even with count_include_pad=1."""
    kernel = ctx.ints_attr("kernel_shape", ())
    n = len(kernel)
    if n == 0 or len(x) != n + 2:
        raise NodeError(f"input {list(x)} must be [N, C] and one spatial dim per kernel_shape value "
                        f"{list(kernel)}")
    if any(k <= 0 for k in kernel):
        raise NodeError(f"kernel_shape {list(kernel)} must be positive")
    strides, dilations = _ints_n(ctx, "strides", n), _ints_n(ctx, "dilations", n)
    pads = _window_pads(ctx, x[2:], kernel, strides, dilations)
    extra = [0] * n
    if int(ctx.attr("ceil_mode", 0)):
        for i in range(n):
            size, begin, k, s, d = x[2 + i], pads[i], kernel[i], strides[i], dilations[i]
            span = size + begin + pads[n + i] - ((k - 1) * d + 1)
            if span < 0 or span % s == 0:
                continue
            out = span // s + 2  # ceil
            if (out - 1) * s >= size + begin:
                continue  # the extra window would start in the end padding: ONNX drops it
            extra[i] = s - span % s
    return kernel, strides, dilations, pads, tuple(extra)


def _pool_out(x: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int],
              dilations: Sequence[int]) -> tuple[int, ...]:
    out = pool_out_shape(x, kernel, strides, pads, dilations)
    if out is None:
        raise NodeError(f"the output would be empty: input {list(x)} is smaller than the "
                        f"{'x'.join(map(str, kernel))} window")
    return out


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
    xv = ctx.moved(0)
    return [ctx.build(ReshapeOp(xv, ctx.like(xv, shape))).results[0]]


@converter("Reshape", attrs=("allowzero",))
def convert_reshape(ctx: NodeContext) -> Sequence[Output]:
    """Reshape to a constant target shape (0 copies a dimension, one -1 is inferred)."""
    target = ctx.constant(1, "the target shape")
    if target.ndim != 1 or not np.issubdtype(target.dtype, np.integer):
        raise NodeError(f"the target shape must be a 1-D integer tensor, got {target.dtype} "
                        f"of shape {list(target.shape)}")
    shape = reshape_shape(ctx.shape(0), [int(d) for d in target], bool(ctx.attr("allowzero", 0)))
    xv = ctx.moved(0)
    return [ctx.build(ReshapeOp(xv, ctx.like(xv, shape))).results[0]]


@converter("Identity")
def convert_identity(ctx: NodeContext) -> Sequence[Output]:
    """No op: the output is the input."""
    return [ctx.tensor(0)]


@converter("Dropout", attrs=("ratio", "seed", "is_test"))
def convert_dropout(ctx: NodeContext) -> Sequence[Output]:
    """Inference, or training with ratio 0: the output is the input and the mask output
    all true. Training with a ratio above 0 is random and not supported."""
    if ctx.has_input(2):
        training = ctx.constant(2, "training_mode")
        if training.size and bool(training.reshape(-1)[0]):
            ratio = float(ctx.constant(1, "ratio").reshape(-1)[0]) if ctx.has_input(1) else 0.5
            if ratio != 0.0:
                raise NodeError("training_mode=1 is not supported (inference only)")
    x = ctx.tensor(0)
    return [x, Tensor(ctx.node.output[1], x.shape, np.dtype(np.bool_), data=np.ones(x.shape, dtype=np.bool_),
                      origin=ctx.label)] if len(ctx.node.output) > 1 else [x]


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
# Converters: elementwise, activations, comparisons
# --------------------------------------------------------------------------------------


def _unary(op_class: type[UnaryOp]) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        return [ctx.build(op_class(ctx.value(0), f32_tensor(ctx.shape(0)))).results[0]]

    convert.__doc__ = f"Elementwise `{op_class.name}`."
    return convert


for _op_type, _cls in (("Sigmoid", SigmoidOp), ("Tanh", TanhOp), ("Erf", ErfOp), ("Sqrt", SqrtOp),
                       ("Exp", ExpOp), ("Log", LogOp), ("Neg", NegOp), ("Abs", AbsOp),
                       ("Reciprocal", ReciprocalOp)):
    converter(_op_type)(_unary(_cls))


for _op_type in ("Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh",
                 "Asinh", "Acosh", "Atanh", "Softplus"):
    converter(_op_type)(_unary(SIMPLE_UNARY[_op_type.lower()]))


@converter("IsNaN")
def convert_isnan(ctx: NodeContext) -> Sequence[Output]:
    """`npu_graph.isnan`: a boolean carried as 1.0 / 0.0."""
    return [ctx.typed(_eltwise(ctx, SIMPLE_UNARY["isnan"], ctx.value(0)), np.bool_)]


@converter("IsInf", attrs=("detect_negative", "detect_positive"))
def convert_isinf(ctx: NodeContext) -> Sequence[Output]:
    """`npu_graph.isinf`, times x > 0 or x < 0 when only one sign is detected."""
    x = ctx.value(0)
    neg, pos = int(ctx.attr("detect_negative", 1)), int(ctx.attr("detect_positive", 1))
    y = _eltwise(ctx, SIMPLE_UNARY["isinf"], x)
    if neg and not pos:
        y = _eltwise(ctx, MulOp, y, _eltwise(ctx, LessOp, x, ctx.scalar(0.0)))
    elif pos and not neg:
        y = _eltwise(ctx, MulOp, y, _eltwise(ctx, GreaterOp, x, ctx.scalar(0.0)))
    elif not pos and not neg:
        y = _eltwise(ctx, MulOp, y, ctx.scalar(0.0))
    return [ctx.typed(y, np.bool_)]


@converter("Mod", attrs=("fmod",))
def convert_mod(ctx: NodeContext) -> Sequence[Output]:
    """fmod=1: `npu_graph.fmod` (the remainder takes the dividend's sign); fmod=0:
    `npu_graph.mod` (the divisor's sign; integers are carried as f32: exact below 2^24)."""
    a, b = _same_type_operands(ctx, (0, 1))
    op = FmodOp if int(ctx.attr("fmod", 0)) else ModOp
    return [ctx.typed(_eltwise(ctx, op, a, b), ctx.dtype(0))]


@converter("Gelu", attrs=("approximate",))
def convert_gelu(ctx: NodeContext) -> Sequence[Output]:
    """Gelu (opset 20): exact (erf) or `approximate="tanh"`."""
    approx = ctx.attr("approximate", "none")
    if approx not in ("none", "tanh"):
        raise NodeError(f"unsupported attribute approximate={approx}")
    cls = GeluTanhOp if approx == "tanh" else GeluOp
    return [ctx.build(cls(ctx.value(0), f32_tensor(ctx.shape(0)))).results[0]]


@converter("LeakyRelu", attrs=("alpha",))
def convert_leaky_relu(ctx: NodeContext) -> Sequence[Output]:
    """x where x >= 0 else alpha * x: `npu_graph.prelu` with an inline scalar slope."""
    return [_eltwise(ctx, PReluOp, ctx.value(0), ctx.scalar(float(ctx.attr("alpha", 0.01))))]


@converter("PRelu")
def convert_prelu(ctx: NodeContext) -> Sequence[Output]:
    """x where x >= 0 else slope * x, the slope broadcast to x."""
    if broadcast_shapes(ctx.shape(0), ctx.shape(1)) != ctx.shape(0):
        raise NodeError(f"slope of shape {list(ctx.shape(1))} does not broadcast to the input "
                        f"{list(ctx.shape(0))}")
    return [_eltwise(ctx, PReluOp, ctx.value(0), ctx.value(1))]


@converter("Pow")
def convert_pow(ctx: NodeContext) -> Sequence[Output]:
    """x ** y; an integer exponent is carried as f32."""
    return [_eltwise(ctx, PowOp, ctx.value(0), ctx.value(1, carried=True))]


@converter("Clip", attrs=("min", "max"))
def convert_clip(ctx: NodeContext) -> Sequence[Output]:
    """min(max(x, lo), hi): bounds are attributes before opset 11 and optional inputs
    from 11 on; a missing bound is -inf / +inf (Clip(0, 6) is ReLU6). Integers (from
    opset 12) and their bounds are carried as f32."""
    carried = not _is_float(ctx.dtype(0))
    x = ctx.value(0, carried=carried)
    if ctx.opset < 11:
        lo = ctx.scalar(float(ctx.attr("min", -np.inf)))
        hi = ctx.scalar(float(ctx.attr("max", np.inf)))
    else:
        lo = ctx.value(1, carried=carried) if ctx.has_input(1) else ctx.scalar(-np.inf)
        hi = ctx.value(2, carried=carried) if ctx.has_input(2) else ctx.scalar(np.inf)
    for v, what in ((lo, "min"), (hi, "max")):
        if int(np.prod(shape_of(v))) != 1:
            raise NodeError(f"{what} must be a scalar, got shape {list(shape_of(v))}")
    return [ctx.typed(_eltwise(ctx, ClipOp, x, lo, hi), ctx.dtype(0))]


def _hard_sigmoid(ctx: NodeContext, x: SSAValue, alpha: float, beta: float) -> SSAValue:
    y = _eltwise(ctx, AddOp, _eltwise(ctx, MulOp, x, ctx.scalar(alpha)), ctx.scalar(beta))
    return _eltwise(ctx, ClipOp, y, ctx.scalar(0.0), ctx.scalar(1.0))


@converter("HardSigmoid", attrs=("alpha", "beta"))
def convert_hard_sigmoid(ctx: NodeContext) -> Sequence[Output]:
    """clip(alpha * x + beta, 0, 1) as mul, add, clip."""
    return [_hard_sigmoid(ctx, ctx.value(0), float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5)))]


@converter("HardSwish")
def convert_hard_swish(ctx: NodeContext) -> Sequence[Output]:
    """x * clip(x / 6 + 1 / 2, 0, 1) as mul, add, clip, mul."""
    x = ctx.value(0)
    return [_eltwise(ctx, MulOp, x, _hard_sigmoid(ctx, x, 1.0 / 6.0, 0.5))]


def _variadic(op_class: type[BinaryOp], mean: bool = False) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        idx = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
        if not idx:
            raise NodeError("needs at least one input")
        vals = _same_type_operands(ctx, idx)
        if len(vals) == 1:
            return [ctx.tensor(idx[0])]
        y = vals[0]
        for v in vals[1:]:
            y = _eltwise(ctx, op_class, y, v)
        if mean:
            y = _eltwise(ctx, MulOp, y, ctx.scalar(1.0 / len(vals)))
        return [ctx.typed(y, ctx.dtype(idx[0]))]

    convert.__doc__ = (f"A chain of `{op_class.name}` over the inputs (numpy broadcasting)"
                       + (", times 1/n" if mean else "") + ".")
    return convert


converter("Sum")(_variadic(AddOp))
converter("Mean")(_variadic(AddOp, mean=True))
converter("Max")(_variadic(MaxOp))
converter("Min")(_variadic(MinOp))


def _compare(op_class: type[BinaryOp], negate: bool = False) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        y = _eltwise(ctx, op_class, *_same_type_operands(ctx, (0, 1)))
        if negate:
            y = _eltwise(ctx, SubOp, ctx.scalar(1.0), y)
        return [ctx.typed(y, np.bool_)]

    convert.__doc__ = (f"{'1 - ' if negate else ''}`{op_class.name}`: a boolean carried as 1.0 / 0.0"
                       + (" (NaN operands give true)" if negate else "") + ".")
    return convert


converter("Equal")(_compare(EqualOp))
converter("Less")(_compare(LessOp))
converter("Greater")(_compare(GreaterOp))
converter("LessOrEqual")(_compare(GreaterOp, negate=True))
converter("GreaterOrEqual")(_compare(LessOp, negate=True))


@converter("Not")
def convert_not(ctx: NodeContext) -> Sequence[Output]:
    """1 - x on a boolean carried as 1.0 / 0.0."""
    return [ctx.typed(_eltwise(ctx, SubOp, ctx.scalar(1.0), ctx.value(0, carried=True)), np.bool_)]


def _logical(op_class: type[BinaryOp], doc: str, xor: bool = False) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        y = _eltwise(ctx, op_class, ctx.value(0, carried=True), ctx.value(1, carried=True))
        if xor:
            y = _eltwise(ctx, AbsOp, y)
        return [ctx.typed(y, np.bool_)]

    convert.__doc__ = doc
    return convert


converter("And")(_logical(MulOp, "a * b on booleans carried as 1.0 / 0.0."))
converter("Or")(_logical(MaxOp, "max(a, b) on booleans carried as 1.0 / 0.0."))
converter("Xor")(_logical(SubOp, "|a - b| on booleans carried as 1.0 / 0.0.", xor=True))


@converter("Where")
def convert_where(ctx: NodeContext) -> Sequence[Output]:
    """a where cond else b; the boolean condition is carried as 1.0 / 0.0 (cast to f16/bf16
    when a and b are: only its being non-zero counts)."""
    cond = ctx.value(0, carried=True)
    if element_type(cond) != node_float():
        cond = ctx.build(CastOp(cond, TensorType(node_float(), shape_of(cond)))).results[0]
    vals = [cond, *_same_type_operands(ctx, (1, 2))]
    return [ctx.typed(_eltwise(ctx, WhereOp, *vals), ctx.dtype(1))]


_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}
"""Cast targets held as f32 (float16 and bfloat16 are cast for real: `_cast`)."""


def _cast(ctx: NodeContext, to: int) -> Sequence[Output]:
    """Cast to ONNX type `to`: to float16/bfloat16 a real `npu_graph.cast` (rounding to
    nearest even), from them a cast to f32 first; float32/double stay f32, integer
    targets truncate toward zero (carried as f32), bool gives x != 0 as 1.0 / 0.0;
    constant data is cast at import (`_cast_constant`)."""
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to))
    except Exception:
        raise NodeError(f"unsupported target type {to}") from None
    folded = _cast_constant(ctx, dtype)
    if folded is not None:
        return folded
    x = ctx.value(0, carried=True)
    narrow = {int(onnx.TensorProto.FLOAT16): f16, int(onnx.TensorProto.BFLOAT16): bf16}.get(to)
    if narrow is not None:
        y = x if element_type(x) == narrow else ctx.build(CastOp(x, TensorType(narrow, shape_of(x)))).results[0]
        return [ctx.typed(y, dtype)]
    if element_type(x) != f32:  # (f16/bf16 -> f32, then as from f32)
        x = ctx.build(CastOp(x, TensorType(f32, shape_of(x)))).results[0]
    token = _NODE_FLOAT.set(f32)
    try:
        return _cast_from_f32(ctx, x, to, dtype)
    finally:
        _NODE_FLOAT.reset(token)


def _cast_from_f32(ctx: NodeContext, x: SSAValue, to: int, dtype: np.dtype) -> Sequence[Output]:
    """`_cast` of an f32 value (integers and booleans carried as f32) to a type other than f16/bf16."""
    src = ctx.dtype(0)
    if to in _FLOAT_TYPES or to == onnx.TensorProto.BOOL and src == np.bool_:
        return [ctx.typed(x, np.float32 if to in _FLOAT_TYPES else dtype)]
    if to == onnx.TensorProto.BOOL:
        y = _eltwise(ctx, WhereOp, x, ctx.scalar(1.0), ctx.scalar(0.0))
        return [ctx.typed(y, np.bool_)]
    if not np.issubdtype(dtype, np.integer):
        raise NodeError(f"unsupported target type {onnx.TensorProto.DataType.Name(to).lower()}")
    if not _is_float(src) and src != ml_dtypes.bfloat16:
        return [ctx.typed(x, dtype)]
    return [ctx.typed(_eltwise(ctx, TruncOp, x), dtype)]


@converter("Cast", attrs=("to", "saturate"))
def convert_cast(ctx: NodeContext) -> Sequence[Output]:
    """Integers and booleans are carried as f32 values: see `_cast`."""
    return _cast(ctx, int(ctx.attr("to")))


@converter("CastLike", attrs=("saturate",))
def convert_cast_like(ctx: NodeContext) -> Sequence[Output]:
    """Cast to the element type of input 1 (see `_cast`); only that input's type is read."""
    return _cast(ctx, onnx.helper.np_dtype_to_tensor_dtype(ctx.dtype(1)))


def _cast_constant(ctx: NodeContext, dtype: np.dtype) -> list[Output] | None:
    """The cast of constant input data, done at import (None: not constant, or a
    conversion left to the device): a Cast of constant data stays constant for the
    operands that must be (ONNX's Attention body casts its -inf fill like the query,
    then pads the mask with it: a Pad value must be a constant)."""
    t = ctx.tensor(0)
    if t.data is None or t.placeholder:
        return None
    data = np.asarray(t.data)
    if dtype in (np.float16, ml_dtypes.bfloat16):
        data = data.astype(np.float32).astype(dtype)  # (rounded: a real cast)
    elif _is_float(dtype):
        data = data.astype(np.float32)  # (double is carried as f32)
    elif dtype == np.bool_:
        data = data != 0
    elif np.issubdtype(dtype, np.integer) and data.dtype == ml_dtypes.bfloat16:
        return None
    elif np.issubdtype(dtype, np.integer) and _is_float(data.dtype) and np.isfinite(data).all():
        data = np.trunc(data).astype(dtype)
    elif np.issubdtype(dtype, np.integer) and not _is_float(data.dtype):
        data = data.astype(dtype)
    else:
        return None
    return [Tensor(ctx.node.output[0], tuple(data.shape), data.dtype, data=data, origin=ctx.label)]


# --------------------------------------------------------------------------------------
# Converters: normalisation, reductions, pooling
# --------------------------------------------------------------------------------------


def _axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise NodeError(f"{what}={axis} is out of range for an input of rank {rank}")
    return axis + rank if axis < 0 else axis


@converter("Softmax", attrs=("axis",))
def convert_softmax(ctx: NodeContext) -> Sequence[Output]:
    """Softmax along `axis` (default -1) from opset 13; before 13 the input is flattened
    to 2-D at `axis` (default 1) and normalised over the second dim, which becomes
    reshape + softmax + reshape (just softmax when axis is the last dim)."""
    x = ctx.shape(0)
    r = len(x)
    if ctx.opset >= 13:
        axis = _axis(int(ctx.attr("axis", -1)), max(r, 1))
        return [ctx.build(SoftmaxOp(ctx.value(0), axis, f32_tensor(x))).results[0]]
    axis = int(ctx.attr("axis", 1))
    if not -r <= axis <= r:
        raise NodeError(f"axis={axis} is out of range for an input of rank {r}")
    axis = axis + r if axis < 0 else axis
    if axis == r - 1:
        return [ctx.build(SoftmaxOp(ctx.value(0), axis, f32_tensor(x))).results[0]]
    flat_type = f32_tensor((_prod(x[:axis]), _prod(x[axis:])))
    flat = ctx.build(ReshapeOp(ctx.value(0), flat_type)).results[0]
    y = ctx.build(SoftmaxOp(flat, 1, flat_type)).results[0]
    return [ctx.build(ReshapeOp(y, f32_tensor(x))).results[0]]


@converter("LayerNormalization", attrs=("axis", "epsilon", "stash_type"))
def convert_layer_norm(ctx: NodeContext) -> Sequence[Output]:
    """Normalisation over dims axis.. (default -1) with scale and optional bias
    (`npu_graph.layernorm`); the Mean and InvStdDev outputs, when used, are computed
    by reductions and elementwise ops of their own."""
    x = ctx.shape(0)
    axis = _axis(int(ctx.attr("axis", -1)), len(x))
    if int(ctx.attr("stash_type", 1)) != 1:
        raise NodeError(f"unsupported attribute stash_type={ctx.attr('stash_type')} (only float32 statistics)")
    norm = x[axis:]
    for i, what in ((1, "scale"), (2, "bias")):
        if ctx.has_input(i) and broadcast_shapes(ctx.shape(i), norm) != norm:
            raise NodeError(f"{what} of shape {list(ctx.shape(i))} does not broadcast to the normalised "
                            f"dims {list(norm)}")
    eps = float(ctx.attr("epsilon", 1e-5))
    op = LayerNormOp(ctx.value(0), ctx.value(1), ctx.optional_value(2), axis, eps, f32_tensor(x))
    outs: list[Output] = [ctx.build(op).results[0]]
    if ctx.output_used(1) or ctx.output_used(2):
        # Mean and InvStdDev (shape x[:axis] + [1, ...]) as separate ops: every op has one result.
        mean, _, var = _moments(ctx, tuple(range(axis, len(x))))
        outs += [mean, ctx.build(ReciprocalOp(_std(ctx, var, eps), f32_tensor(shape_of(var)))).results[0]]
    return outs


def _moments(ctx: NodeContext, axes: tuple[int, ...]) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(mean, x - mean, biased variance) of input 0 over `axes`, the statistics kept with
    their dims."""
    x, xv = ctx.shape(0), ctx.value(0)
    stat = f32_tensor(ReduceOp.out_shape(x, axes, True))
    mean = ctx.build(ReduceMeanOp(xv, axes, True, stat)).results[0]
    d = _eltwise(ctx, SubOp, xv, mean)
    return mean, d, ctx.build(ReduceMeanOp(_eltwise(ctx, MulOp, d, d), axes, True, stat)).results[0]


def _std(ctx: NodeContext, var: SSAValue, eps: float) -> SSAValue:
    """sqrt(var + eps)."""
    return ctx.build(SqrtOp(_eltwise(ctx, AddOp, var, ctx.scalar(eps)), f32_tensor(shape_of(var)))).results[0]


@converter("InstanceNormalization", attrs=("epsilon",))
def convert_instance_norm(ctx: NodeContext) -> Sequence[Output]:
    """(x - mean) / sqrt(var + epsilon) * scale[c] + bias[c], the statistics over the
    spatial dims of each (n, c): reductions and elementwise ops."""
    x = ctx.shape(0)
    if len(x) < 3:
        raise NodeError(f"input must be N x C x D1 ..., got shape {list(x)}")
    for i, what in ((1, "scale"), (2, "bias")):
        if ctx.shape(i) != (x[1],):
            raise NodeError(f"{what} of shape {list(ctx.shape(i))} must have shape [{x[1]}]")
    _, d, var = _moments(ctx, tuple(range(2, len(x))))
    sd = _std(ctx, var, float(ctx.attr("epsilon", 1e-5)))
    per_c = f32_tensor((x[1],) + (1,) * (len(x) - 2))
    scale, bias = (ctx.build(ReshapeOp(ctx.value(i), per_c)).results[0] for i in (1, 2))
    y = _eltwise(ctx, MulOp, _eltwise(ctx, DivOp, d, sd), scale)
    return [_eltwise(ctx, AddOp, y, bias)]


@converter("LpNormalization", attrs=("axis", "p"))
def convert_lp_norm(ctx: NodeContext) -> Sequence[Output]:
    """x / ||x||_p along `axis` (p 1 or 2); 0 where the norm is 0 (ONNX's reference)."""
    x = ctx.shape(0)
    axis = _axis(int(ctx.attr("axis", -1)), len(x))
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise NodeError(f"unsupported attribute p={p} (1 or 2)")
    xv = ctx.value(0)
    mag = _eltwise(ctx, AbsOp, xv) if p == 1 else _eltwise(ctx, MulOp, xv, xv)
    stat = f32_tensor(ReduceOp.out_shape(x, (axis,), True))
    norm = ctx.build(ReduceSumOp(mag, (axis,), True, stat)).results[0]
    if p == 2:
        norm = ctx.build(SqrtOp(norm, stat)).results[0]
    y = _eltwise(ctx, DivOp, xv, norm)
    return [_eltwise(ctx, WhereOp, _eltwise(ctx, EqualOp, norm, ctx.scalar(0.0)), ctx.scalar(0.0), y)]


def _running_sum(ctx: NodeContext, xv: SSAValue, x: tuple[int, ...], axis: int, exclusive: bool,
                 reverse: bool) -> SSAValue:
    """Running sums of `xv` (shape `x`) along `axis`: a matmul with a 0/1 triangular
    constant (the cube does the adds); other axes are transposed to the last and back."""
    n = x[axis]
    j, i = np.indices((n, n))
    keep = (j >= i) if reverse else (j <= i)
    if exclusive:
        keep &= j != i
    tri = ctx.const(keep, "triangle")
    perm = [d for d in range(len(x)) if d != axis] + [axis]
    moved = tuple(x[d] for d in perm)
    if axis != len(x) - 1:
        xv = ctx.build(TransposeOp(xv, perm, f32_tensor(moved))).results[0]
    y = ctx.build(MatMulOp(xv, tri, f32_tensor(moved))).results[0]
    if axis != len(x) - 1:
        y = ctx.build(TransposeOp(y, [perm.index(d) for d in range(len(x))], f32_tensor(x))).results[0]
    return y


@converter("CumSum", attrs=("exclusive", "reverse"))
def convert_cumsum(ctx: NodeContext) -> Sequence[Output]:
    """Running sums along a constant axis (`_running_sum`: a triangular matmul)."""
    x = ctx.shape(0)
    if not x:
        raise NodeError("input must have rank >= 1")
    axis = _axis(int(_constant_indices(ctx, 1, "axis").reshape(-1)[0]), len(x))
    y = _running_sum(ctx, ctx.value(0), x, axis, bool(int(ctx.attr("exclusive", 0))),
                     bool(int(ctx.attr("reverse", 0))))
    return [ctx.typed(y, ctx.dtype(0))]


def _iota(ctx: NodeContext, n: int, axis: int, rank: int) -> SSAValue:
    """The constant 0..n-1 along `axis` of a rank-`rank` tensor (size 1 elsewhere)."""
    return ctx.const(np.arange(n).reshape([n if d == axis else 1 for d in range(rank)]), "iota")


def _first_extreme(ctx: NodeContext, xv: SSAValue, x: tuple[int, ...], axis: int, largest: bool,
                   last: bool, free: SSAValue | None = None) -> SSAValue:
    """1.0 at the first (or `last`) position along `axis` holding the max (or min), 0.0
    elsewhere: x == extreme, kept where the running count of such hits is 1. With
    `free`, only positions where it is 1.0 count as hits."""
    stat = f32_tensor(ReduceOp.out_shape(x, (axis,), True))
    m = ctx.build((ReduceMaxOp if largest else ReduceMinOp)(xv, (axis,), True, stat)).results[0]
    hit = _eltwise(ctx, EqualOp, xv, m)
    if free is not None:
        hit = _eltwise(ctx, MulOp, hit, free)
    count = _running_sum(ctx, hit, x, axis, False, last)
    return _eltwise(ctx, MulOp, hit, _eltwise(ctx, EqualOp, count, ctx.scalar(1.0)))


def _arg(largest: bool) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        x = ctx.shape(0)
        if not x:
            raise NodeError("input must have rank >= 1")
        axis = _axis(int(ctx.attr("axis", 0)), len(x))
        keep = bool(int(ctx.attr("keepdims", 1)))
        hot = _first_extreme(ctx, ctx.value(0), x, axis, largest, bool(int(ctx.attr("select_last_index", 0))))
        pos = _iota(ctx, x[axis], axis, len(x))
        out = ReduceOp.out_shape(x, (axis,), keep)
        y = ctx.build(ReduceSumOp(_eltwise(ctx, MulOp, hot, pos), (axis,), keep, f32_tensor(out))).results[0]
        return [ctx.typed(y, np.dtype(np.int64))]

    convert.__doc__ = (f"The index of the first (select_last_index: last) {'max' if largest else 'min'} along "
                       "`axis`: the one-hot of `_first_extreme` times the positions, summed (an int64 carried "
                       "as f32).")
    return convert


converter("ArgMax", attrs=("axis", "keepdims", "select_last_index"))(_arg(True))
converter("ArgMin", attrs=("axis", "keepdims", "select_last_index"))(_arg(False))


@converter("OneHot", attrs=("axis",))
def convert_onehot(ctx: NodeContext) -> Sequence[Output]:
    """values[1] where the position along the new `axis` equals the index (negative ones
    count from depth), values[0] elsewhere: an equality with a constant iota and a where.
    Depth and values are constants; the indices may be computed (carried as f32)."""
    idx_shape = ctx.shape(0)
    depth = int(np.asarray(ctx.constant(1, "depth")).reshape(-1)[0])
    values = np.asarray(ctx.constant(2, "values"), np.float64).reshape(-1)
    if values.size != 2:
        raise NodeError(f"values must be an [off, on] pair, got {values.size} values")
    if depth <= 0:
        raise NodeError(f"depth {depth} must be positive")
    rank = len(idx_shape) + 1
    axis = _axis(int(ctx.attr("axis", -1)), rank)
    out = (*idx_shape[:axis], depth, *idx_shape[axis:])
    iv = ctx.value(0, carried=True)
    iv = _eltwise(ctx, WhereOp, _eltwise(ctx, LessOp, iv, ctx.scalar(0.0)),
                  _eltwise(ctx, AddOp, iv, ctx.scalar(float(depth))), iv)
    iv = ctx.build(ReshapeOp(iv, f32_tensor((*idx_shape[:axis], 1, *idx_shape[axis:])))).results[0]
    pos = _iota(ctx, depth, axis, rank)
    hit = _eltwise(ctx, EqualOp, iv, pos)
    y = _eltwise(ctx, WhereOp, hit, ctx.scalar(float(values[1])), ctx.scalar(float(values[0])))
    if tuple(shape_of(y)) != out:
        raise NodeError(f"indices {list(idx_shape)} give a one-hot of shape {list(shape_of(y))}, not {list(out)}")
    return [ctx.typed(y, ctx.dtype(2))]


TOPK_MAX_K = 64
"""TopK builds k rounds of `_first_extreme`: up to this many."""


@converter("TopK", attrs=("axis", "largest", "sorted"))
def convert_topk(ctx: NodeContext) -> Sequence[Output]:
    """The k largest (or smallest) along `axis` with their indices, in order, ties to the
    lower index: k rounds, each taking the first extreme among the positions not taken
    yet (`_first_extreme` with a mask), its value and position, and masking it out (to
    -inf, or +inf) for the next. k must be constant, at most
    TOPK_MAX_K; the order is always sorted (any order is allowed when sorted=0)."""
    x = ctx.shape(0)
    if not x:
        raise NodeError("input must have rank >= 1")
    axis = _axis(int(ctx.attr("axis", -1)), len(x))
    k = int(np.asarray(ctx.constant(1, "k")).reshape(-1)[0])
    if not 1 <= k <= min(x[axis], TOPK_MAX_K):
        raise NodeError(f"k={k} must be in 1..{min(x[axis], TOPK_MAX_K)} (dim {axis} has {x[axis]}; at most "
                        f"{TOPK_MAX_K} rounds)")
    largest = bool(int(ctx.attr("largest", 1)))
    pos = _iota(ctx, x[axis], axis, len(x))
    stat = f32_tensor(ReduceOp.out_shape(x, (axis,), True))
    xv = cur = ctx.value(0)
    masked = ctx.scalar(-np.inf if largest else np.inf)
    free: SSAValue | None = None  # 1.0 where not taken yet (a real -inf ties with the mask)
    values, indices = [], []
    for _ in range(k):
        hot = _first_extreme(ctx, cur, x, axis, largest, False, free)
        picked = _eltwise(ctx, WhereOp, hot, xv, ctx.scalar(0.0))  # (not hot * x: inf * 0 is NaN)
        values.append(ctx.build(ReduceSumOp(picked, (axis,), True, stat)).results[0])
        indices.append(ctx.build(ReduceSumOp(_eltwise(ctx, MulOp, hot, pos), (axis,), True, stat)).results[0])
        cur = _eltwise(ctx, WhereOp, hot, masked, cur)
        free = _eltwise(ctx, SubOp, ctx.scalar(1.0) if free is None else free, hot)
    out = f32_tensor(tuple(k if d == axis else n for d, n in enumerate(x)))
    vals = values[0] if k == 1 else ctx.build(ConcatOp(values, axis, out)).results[0]
    idx = indices[0] if k == 1 else ctx.build(ConcatOp(indices, axis, out)).results[0]
    return [ctx.typed(vals, ctx.dtype(0)), ctx.typed(idx, np.dtype(np.int64))]


@converter("Hardmax", attrs=("axis",))
def convert_hardmax(ctx: NodeContext) -> Sequence[Output]:
    """1.0 at the first max along `axis`, 0.0 elsewhere (`_first_extreme`); before opset
    13 the input is viewed as 2-D at `axis` first, as ONNX did."""
    x = ctx.shape(0)
    if not x:
        raise NodeError("input must have rank >= 1")
    axis = _axis(int(ctx.attr("axis", -1 if ctx.opset >= 13 else 1)), len(x))
    if ctx.opset >= 13:
        return [_first_extreme(ctx, ctx.value(0), x, axis, True, False)]
    flat = (int(np.prod(x[:axis], dtype=np.int64)), int(np.prod(x[axis:], dtype=np.int64)))
    v = ctx.build(ReshapeOp(ctx.value(0), f32_tensor(flat))).results[0]
    hot = _first_extreme(ctx, v, flat, 1, True, False)
    return [ctx.build(ReshapeOp(hot, f32_tensor(x))).results[0]]


@converter("BatchNormalization", attrs=("epsilon", "momentum", "spatial", "training_mode"))
def convert_batchnorm(ctx: NodeContext) -> Sequence[Output]:
    """Batch normalisation over dim 1 (`npu_graph.batchnorm`). In training mode
    (opset 14 on) it normalises with the batch statistics - the mean and the (biased)
    variance over every dim but 1, as `npu_graph.reduce_mean`s - and its optional
    outputs are the running statistics input * momentum + batch * (1 - momentum).
    spatial=0 and the statistics outputs of older opsets are not supported."""
    x = ctx.shape(0)
    if len(x) < 2:
        raise NodeError(f"input must have a channel dim 1, got shape {list(x)}")
    if not int(ctx.attr("spatial", 1)):
        raise NodeError("unsupported attribute spatial=0")
    for i, what in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")):
        if ctx.shape(i) != (x[1],):
            raise NodeError(f"{what} of shape {list(ctx.shape(i))} must have shape [{x[1]}]")
    eps = float(ctx.attr("epsilon", 1e-5))
    if not int(ctx.attr("training_mode", 0)):
        op = BatchNormOp(ctx.value(0), ctx.value(1), ctx.value(2), ctx.value(3), ctx.value(4), eps, f32_tensor(x))
        return [ctx.build(op).results[0]]
    xv, c = ctx.value(0), f32_tensor((x[1],))
    mean, _, var = _moments(ctx, (0, *range(2, len(x))))
    mean, var = (ctx.build(ReshapeOp(v, c)).results[0] for v in (mean, var))
    y = ctx.build(BatchNormOp(xv, ctx.value(1), ctx.value(2), mean, var, eps, f32_tensor(x))).results[0]
    outs: list[Output] = [y]
    if ctx.output_used(1) or ctx.output_used(2):
        momentum = float(ctx.attr("momentum", 0.9))
        for i, batch in ((3, mean), (4, var)):
            running = _eltwise(ctx, MulOp, ctx.value(i), ctx.scalar(momentum))
            outs.append(_eltwise(ctx, AddOp, running, _eltwise(ctx, MulOp, batch, ctx.scalar(1.0 - momentum))))
    return outs


def _axes_arg(ctx: NodeContext, input_since: int, index: int = 1) -> tuple[int, ...] | None:
    """`axes`: an attribute before opset `input_since`, an optional constant input from
    then on; None when absent."""
    if ctx.opset < input_since:
        return ctx.ints_attr("axes", ()) if ctx.has_attr("axes") else None
    if ctx.has_attr("axes"):
        raise NodeError(f"axes is an input from opset {input_since} on, not an attribute")
    if not ctx.has_input(index):
        return None
    return tuple(int(a) for a in ctx.constant(index, "axes").reshape(-1))


def _norm_axes(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    out = sorted({_axis(a, rank, "axes") for a in axes})
    if len(out) != len(axes):
        raise NodeError(f"axes {list(axes)} repeat a dimension")
    return tuple(out)


def _reduce(op_class: type[ReduceOp], input_since: int) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        x = ctx.shape(0)
        axes = _axes_arg(ctx, input_since)
        if not axes:  # absent or empty: all dims, or none with noop_with_empty_axes (opset 13/18)
            if int(ctx.attr("noop_with_empty_axes", 0)):
                return [ctx.tensor(0)]
            axes = tuple(range(len(x)))
        axes = _norm_axes(axes, max(len(x), 1)) if x else ()
        keep = bool(int(ctx.attr("keepdims", 1)))
        out = op_class.out_shape(x, axes, keep)
        if _prod(out) == 0 or any(x[a] == 0 for a in axes):
            # The result does not depend on the input's values: an empty result, or
            # reductions of the empty set (`EMPTY`: 0, -inf, +inf).
            data = np.full(out, op_class.EMPTY, np.float32)
            return [Tensor(ctx.node.output[0], out, data.dtype, data=data, origin=ctx.label)]
        return [ctx.build(op_class(ctx.value(0), axes, keep, f32_tensor(out))).results[0]]

    convert.__doc__ = (f"`{op_class.name}`: axes are an attribute before opset {input_since}, an input "
                       "from then on; none means all dims (unless noop_with_empty_axes). A reduction "
                       "over an empty dim, or with an empty result, is constant data.")
    return convert


converter("ReduceMean", attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce(ReduceMeanOp, 18))
converter("ReduceSum", attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce(ReduceSumOp, 13))
converter("ReduceMax", attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce(ReduceMaxOp, 18))
converter("ReduceMin", attrs=("axes", "keepdims", "noop_with_empty_axes"))(_reduce(ReduceMinOp, 18))


def _global_pool(op_class: type[ReduceOp]) -> Converter:
    def convert(ctx: NodeContext) -> Sequence[Output]:
        x = ctx.shape(0)
        if len(x) < 3:
            raise NodeError(f"input must be [N, C, spatial...], got shape {list(x)}")
        axes = tuple(range(2, len(x)))
        out = op_class.out_shape(x, axes, True)
        return [ctx.build(op_class(ctx.value(0), axes, True, f32_tensor(out))).results[0]]

    convert.__doc__ = f"`{op_class.name}` over the spatial dims, kept as size 1."
    return convert


converter("GlobalAveragePool")(_global_pool(ReduceMeanOp))
converter("GlobalMaxPool")(_global_pool(ReduceMaxOp))


@converter("AveragePool", attrs=("auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape",
                                 "pads", "strides"))
def convert_avgpool(ctx: NodeContext) -> Sequence[Output]:
    """Average pooling over any number of spatial dims (`npu_graph.avgpool`). With
    ceil_mode=1 the extra windows read extra end padding (see `_pool_window`), which
    never counts in the divisor; when count_include_pad=1 must count the declared pads
    but not that extra padding, the declared pads become zeros of an `npu_graph.pad`
    first, and the pooling counts only what it reads from its (padded) input."""
    x = ctx.shape(0)
    kernel, strides, dilations, pads, extra = _pool_window(ctx, x)
    n = len(kernel)
    include = bool(int(ctx.attr("count_include_pad", 0)))
    v = ctx.value(0)
    if include and any(extra):
        if any(pads):
            padded = tuple(s + b + e for s, b, e in zip(x[2:], pads[:n], pads[n:]))
            full = (0, 0, *pads[:n], 0, 0, *pads[n:])
            v = ctx.build(PadOp(v, full, 0.0, f32_tensor((*x[:2], *padded)))).results[0]
        x, pads, include = shape_of(v), (0,) * (2 * n), False
    pads = (*pads[:n], *(e + x_ for e, x_ in zip(pads[n:], extra)))
    out = _pool_out(x, kernel, strides, pads, dilations)
    op = AvgPoolOp(v, f32_tensor(out), kernel=kernel, strides=strides, pads=pads, dilations=dilations,
                   count_include_pad=include)
    return [ctx.build(op).results[0]]


def _lp_order(ctx: NodeContext) -> float:
    """The `p` attribute of an Lp pooling (default 2), which must be positive."""
    p = float(ctx.attr("p", 2))
    if p <= 0:
        raise NodeError(f"p={p} must be positive")
    return p


def _powered(ctx: NodeContext, v: SSAValue, p: float) -> SSAValue:
    """|v| ** p (x * x for p = 2, |x| for p = 1)."""
    if p == 2:
        return _eltwise(ctx, MulOp, v, v)
    a = _eltwise(ctx, AbsOp, v)
    return a if p == 1 else _eltwise(ctx, PowOp, a, ctx.scalar(p))


def _root(ctx: NodeContext, v: SSAValue, p: float) -> SSAValue:
    """v ** (1 / p) (a square root for p = 2)."""
    if p == 1:
        return v
    if p == 2:
        return ctx.build(SqrtOp(v, f32_tensor(shape_of(v)))).results[0]
    return _eltwise(ctx, PowOp, v, ctx.scalar(1.0 / p))


@converter("LpPool", attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"))
def convert_lppool(ctx: NodeContext) -> Sequence[Output]:
    """(sum over each window of |x|^p)^(1/p): an `npu_graph.avgpool` of |x|^p counting the
    padding (zeros), times the window's size, then the root. ceil_mode's partial last
    windows read zeros padded at the end first (|0|^p adds nothing)."""
    x = ctx.shape(0)
    p = _lp_order(ctx)
    kernel, strides, dilations, pads, extra = _pool_window(ctx, x)
    n = len(kernel)
    v = _powered(ctx, ctx.value(0), p)
    if any(extra):
        x = (*x[:2], *(s + e for s, e in zip(x[2:], extra)))
        v = ctx.build(PadOp(v, (0,) * (n + 2) + (0, 0, *extra), 0.0, f32_tensor(x))).results[0]
    out = _pool_out(x, kernel, strides, pads, dilations)
    op = AvgPoolOp(v, f32_tensor(out), kernel=kernel, strides=strides, pads=pads,
                   dilations=dilations, count_include_pad=True)
    total = _eltwise(ctx, MulOp, ctx.build(op).results[0], ctx.scalar(float(np.prod(kernel))))
    return [_root(ctx, total, p)]


@converter("GlobalLpPool", attrs=("p",))
def convert_global_lppool(ctx: NodeContext) -> Sequence[Output]:
    """(sum over the spatial dims of |x|^p)^(1/p), kept as 1s: a reduction and the root."""
    x = ctx.shape(0)
    if len(x) < 3:
        raise NodeError(f"input must be N x C x D1 ..., got shape {list(x)}")
    p = _lp_order(ctx)
    axes = tuple(range(2, len(x)))
    out = f32_tensor(ReduceOp.out_shape(x, axes, True))
    total = ctx.build(ReduceSumOp(_powered(ctx, ctx.value(0), p), axes, True, out)).results[0]
    return [_root(ctx, total, p)]


def _ints_n(ctx: NodeContext, name: str, n: int) -> tuple[int, ...]:
    """An n-value positive int attribute (strides, dilations), default all 1."""
    v = ctx.ints_attr(name, (1,) * n)
    if len(v) != n or any(x <= 0 for x in v):
        raise NodeError(f"{name} {list(v)} must have {n} positive value{'s' if n > 1 else ''}")
    return v


@converter("LRN", attrs=("alpha", "beta", "bias", "size"))
def convert_lrn(ctx: NodeContext) -> Sequence[Output]:
    """Local response normalisation across channels."""
    x = ctx.shape(0)
    if len(x) < 3:
        raise NodeError(f"input must be [N, C, ...] with rank >= 3, got shape {list(x)}")
    size = int(ctx.attr("size", 0))
    if size <= 0:
        raise NodeError(f"size={size} must be positive")
    op = LrnOp(ctx.value(0), size, float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75)),
               float(ctx.attr("bias", 1.0)), f32_tensor(x))
    return [ctx.build(op).results[0]]


# --------------------------------------------------------------------------------------
# Converters: data movement and shapes
# --------------------------------------------------------------------------------------


@converter("Transpose", attrs=("perm",))
def convert_transpose(ctx: NodeContext) -> Sequence[Output]:
    """Permute dims (`perm`, default reversed); the identity permutation is no op."""
    x = ctx.shape(0)
    perm = ctx.ints_attr("perm", tuple(reversed(range(len(x)))))
    if sorted(perm) != list(range(len(x))):
        raise NodeError(f"perm {list(perm)} is not a permutation of 0..{len(x) - 1}")
    if list(perm) == list(range(len(x))):
        return [ctx.tensor(0)]
    xv = ctx.moved(0)
    return [ctx.build(TransposeOp(xv, perm, ctx.like(xv, [x[p] for p in perm]))).results[0]]


def _reshaped(ctx: NodeContext, shape: Sequence[int]) -> Output:
    """Input 0 viewed with `shape` (`npu_graph.reshape`; no op when the shape is the same)."""
    if tuple(shape) == ctx.shape(0):
        return ctx.tensor(0)
    t = ctx.tensor(0)
    xv = ctx.moved(0)
    v = ctx.build(ReshapeOp(xv, ctx.like(xv, shape))).results[0]
    return ctx.typed(v, t.dtype)


@converter("Squeeze", attrs=("axes",))
def convert_squeeze(ctx: NodeContext) -> Sequence[Output]:
    """Drop size-1 dims (`axes`: attribute before opset 13, input from 13; default all)."""
    x = ctx.shape(0)
    axes = _axes_arg(ctx, 13)
    if axes is None:
        axes = tuple(d for d, s in enumerate(x) if s == 1)
    axes = _norm_axes(axes, len(x))
    bad = [a for a in axes if x[a] != 1]
    if bad:
        raise NodeError(f"cannot squeeze dims {bad} of shape {list(x)}: they are not 1")
    return [_reshaped(ctx, [s for d, s in enumerate(x) if d not in axes])]


@converter("Unsqueeze", attrs=("axes",))
def convert_unsqueeze(ctx: NodeContext) -> Sequence[Output]:
    """Insert size-1 dims at `axes` of the result (attribute before opset 13, input from 13)."""
    x = ctx.shape(0)
    axes = _axes_arg(ctx, 13)
    if not axes:
        raise NodeError("axes are required")
    axes = _norm_axes(axes, len(x) + len(axes))
    out, it = [], iter(x)
    for d in range(len(x) + len(axes)):
        out.append(1 if d in axes else next(it))
    return [_reshaped(ctx, out)]


@converter("Concat", attrs=("axis",))
def convert_concat(ctx: NodeContext) -> Sequence[Output]:
    """Join along `axis`; empty inputs are dropped, a single input is no op."""
    idx = [i for i in range(ctx.num_inputs) if ctx.has_input(i)]
    shapes = [ctx.shape(i) for i in idx]
    r = len(shapes[0])
    axis = _axis(int(ctx.attr("axis")), max(r, 1))
    for i, s in zip(idx, shapes):
        if len(s) != r or any(d != axis and s[d] != shapes[0][d] for d in range(r)):
            raise NodeError(f"input {i} of shape {list(s)} does not match {list(shapes[0])} outside axis {axis}")
    keep = [i for i, s in zip(idx, shapes) if s[axis] != 0] or idx[:1]
    if len(keep) == 1:
        return [ctx.tensor(keep[0])]
    out = list(shapes[0])
    out[axis] = sum(ctx.shape(i)[axis] for i in keep)
    held = {HELD.get(np.dtype(ctx.dtype(i))) for i in keep}
    if len(held) == 1 and (elem := held.pop()) in (i8, ui8):  # (int8 data: joined on the integers)
        vals = [ctx.typed_value(i, (type_name(elem) or "",)) for i in keep]
        return [ctx.typed(ctx.build(ConcatOp(vals, axis, TensorType(elem, out))).results[0], ctx.dtype(keep[0]))]
    vals = _same_type_operands(ctx, keep)
    return [ctx.typed(ctx.build(ConcatOp(vals, axis, f32_tensor(out))).results[0], ctx.dtype(keep[0]))]


def _slice_params(x: Sequence[int], starts: Sequence[int], ends: Sequence[int], axes: Sequence[int],
                  steps: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """Full-rank clamped (starts, ends, steps) of an ONNX Slice (ends -1 with a negative
    step means through index 0)."""
    r = len(x)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise NodeError(f"starts {list(starts)}, ends {list(ends)}, axes {list(axes)} and steps "
                        f"{list(steps)} must have the same length")
    s_all, e_all, st_all = [0] * r, list(x), [1] * r
    seen = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _axis(a, r, "axes")
        if a in seen:
            raise NodeError(f"axes {list(axes)} repeat dimension {a}")
        seen.add(a)
        if st == 0:
            raise NodeError("steps must not be 0")
        dim = x[a]
        s, e = s + dim if s < 0 else s, e + dim if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), max(dim - 1, 0)), min(max(e, -1), dim - 1)
        s_all[a], e_all[a], st_all[a] = s, e, st
    return s_all, e_all, st_all


def _slice(ctx: NodeContext, x: Sequence[int], starts: Sequence[int], ends: Sequence[int],
           steps: Sequence[int], out: int = 0) -> Output:
    """Output `out` as an `npu_graph.slice` of input 0 (no op for the whole tensor; an
    empty result is empty constant data, which Concat drops; constant data sliced here,
    an end of -1 with a negative step running through index 0)."""
    shape = SliceOp.sizes(starts, ends, steps)
    if shape == tuple(x) and all(st == 1 for st in steps):
        return ctx.tensor(0)
    src = ctx.tensor(0).data
    if 0 in shape or src is not None:
        data = np.zeros(shape, ctx.dtype(0)) if src is None or 0 in shape else src[tuple(
            slice(s, None if e < 0 else e, st) for s, e, st in zip(starts, ends, steps))]
        return Tensor(ctx.node.output[out], shape, data.dtype, data=data, origin=ctx.label)
    xv = ctx.moved(0)
    v = ctx.build(SliceOp(xv, starts, ends, steps, ctx.like(xv, shape))).results[0]
    return ctx.typed(v, ctx.dtype(0), out)


@converter("Slice", attrs=("starts", "ends", "axes"))
def convert_slice(ctx: NodeContext) -> Sequence[Output]:
    """Strided slice: starts/ends/axes are attributes before opset 10, constant inputs
    (with optional axes and steps) from 10 on; negative indices count from the end and
    are clamped like ONNX."""
    x = ctx.shape(0)
    if ctx.opset < 10:
        starts, ends = ctx.ints_attr("starts", ()), ctx.ints_attr("ends", ())
        axes = ctx.ints_attr("axes", range(len(starts)))
        steps: Sequence[int] = (1,) * len(starts)
    else:
        def ints_in(i: int, what: str) -> list[int]:
            return [int(v) for v in ctx.constant(i, what).reshape(-1)]
        starts, ends = ints_in(1, "starts"), ints_in(2, "ends")
        axes = ints_in(3, "axes") if ctx.has_input(3) else list(range(len(starts)))
        steps = ints_in(4, "steps") if ctx.has_input(4) else [1] * len(starts)
    return [_slice(ctx, x, *_slice_params(x, starts, ends, axes, steps))]


@converter("Split", attrs=("axis", "split", "num_outputs"))
def convert_split(ctx: NodeContext) -> Sequence[Output]:
    """One `npu_graph.slice` per used output along `axis`. Sizes: the `split` attribute
    before opset 13, the optional `split` input from 13 on; without them equal parts
    (opset 18: `num_outputs` parts of ceil(n / parts), the last one smaller)."""
    x = ctx.shape(0)
    axis = _axis(int(ctx.attr("axis", 0)), len(x))
    n = len(ctx.node.output)
    if ctx.opset < 13:
        split = list(ctx.ints_attr("split", ())) if ctx.has_attr("split") else None
    else:
        split = [int(v) for v in ctx.constant(1, "split").reshape(-1)] if ctx.has_input(1) else None
    if split is None:
        parts = int(ctx.attr("num_outputs", n))
        if parts != n:
            raise NodeError(f"num_outputs={parts} but the node has {n} outputs")
        size = -(-x[axis] // n) if ctx.opset >= 18 else x[axis] // n
        if ctx.opset < 18 and x[axis] % n:
            raise NodeError(f"dim {axis} of size {x[axis]} does not split into {n} equal parts")
        split = [min(size, x[axis] - i * size) for i in range(n)]
    if len(split) != n or sum(split) != x[axis] or any(s < 0 for s in split):
        raise NodeError(f"split {split} does not divide dim {axis} of size {x[axis]} into {n} outputs")
    outs: list[Output] = []
    start = 0
    for i, size in enumerate(split):
        if ctx.output_used(i):
            starts, ends, steps = [0] * len(x), list(x), [1] * len(x)
            starts[axis], ends[axis] = start, start + size
            outs.append(_slice(ctx, x, starts, ends, steps, i))
        else:
            outs.append(Tensor(ctx.node.output[i], (), np.dtype(np.float32), placeholder=True))
        start += size
    return outs


@converter("Gather", attrs=("axis",))
def convert_gather(ctx: NodeContext) -> Sequence[Output]:
    """Take along `axis` at integer indices (carried as f32). A constant scalar index
    is a slice and a reshape; other indices, constant or computed, an `npu_graph.gather`
    (e.g. an embedding lookup in a weight table)."""
    x = ctx.shape(0)
    if not x:
        raise NodeError("data must have rank >= 1")
    axis = _axis(int(ctx.attr("axis", 0)), len(x))
    idx = ctx.tensor(1)
    if idx.data is not None:
        if idx.data.size and (idx.data.min() < -x[axis] or idx.data.max() >= x[axis]):
            raise NodeError(f"indices {_preview(idx.data)} are out of range for dim {axis} of size {x[axis]}")
        if idx.data.ndim == 0:
            i = int(idx.data) % x[axis]
            starts, ends, steps = [0] * len(x), list(x), [1] * len(x)
            starts[axis], ends[axis] = i, i + 1
            v = ctx.ssa(_slice(ctx, x, starts, ends, steps))
            out = x[:axis] + x[axis + 1:]
            return [ctx.typed(ctx.build(ReshapeOp(v, ctx.like(v, out))).results[0], ctx.dtype(0))]
    out = x[:axis] + idx.shape + x[axis + 1:]
    if 0 in out:
        raise NodeError(f"the result of shape {list(out)} is empty; empty tensors are not supported")
    t = ctx.tensor(0)
    data = ctx.moved(0) if t.value is not None else ctx.value(0, carried=True)
    ix = idx.value if idx.value is not None and element_type(idx.value) == i32 else ctx.value(1, carried=True)
    op = GatherOp(data, ix, axis, ctx.like(data, out))  # (i32 indices as they are, others carried as f32)
    return [ctx.typed(ctx.build(op).results[0], ctx.dtype(0))]


def _index_map(ctx: NodeContext, flat: np.ndarray, what: str, sources: Sequence[int] = (0,)) -> Output:
    """The inputs `sources`, flattened and concatenated, read at the constant flat element
    indices `flat` (any shape): reshapes and an `npu_graph.gather` (the vector unit's
    gather: a slow path, but exact). GatherElements, GatherND and Tile (input 0) and
    ScatterElements and ScatterND (data then updates) with constant indices are such maps."""
    sizes = [int(np.prod(ctx.shape(i), dtype=np.int64)) for i in sources]
    n = sum(sizes)
    if flat.size == 0:
        raise NodeError(f"the result of shape {list(flat.shape)} is empty; empty tensors are not supported")
    if flat.min() < 0 or flat.max() >= n:
        raise NodeError(f"{what} are out of range for data of shape {list(ctx.shape(0))}")
    parts = [ctx.build(ReshapeOp(ctx.value(i, carried=True), f32_tensor((k,)))).results[0]
             for i, k in zip(sources, sizes)]
    data = parts[0] if len(parts) == 1 else ctx.build(ConcatOp(parts, 0, f32_tensor((n,)))).results[0]
    idx = ctx.const(flat, "indices")
    op = GatherOp(data, idx, 0, f32_tensor(tuple(flat.shape)))
    return ctx.typed(ctx.build(op).results[0], ctx.dtype(0))


def _constant_indices(ctx: NodeContext, i: int, what: str) -> np.ndarray:
    """Input `i` (indices, an axis, repeats) as int64 constant data."""
    return np.asarray(ctx.constant(i, what)).astype(np.int64)


@converter("GatherElements", attrs=("axis",))
def convert_gather_elements(ctx: NodeContext) -> Sequence[Output]:
    """out[i] = x[i with its `axis` coordinate replaced by indices[i]], constant indices:
    a flat gather (`_index_map`)."""
    x = ctx.shape(0)
    axis = _axis(int(ctx.attr("axis", 0)), len(x))
    idx = _constant_indices(ctx, 1, "indices")
    if idx.ndim != len(x):
        raise NodeError(f"indices of rank {idx.ndim} for data of rank {len(x)}")
    idx = np.where(idx < 0, idx + x[axis], idx)
    if idx.size and (idx.min() < 0 or idx.max() >= x[axis]):
        raise NodeError(f"indices {_preview(idx)} are out of range for dim {axis} of size {x[axis]}")
    coords: list[np.ndarray] = [np.asarray(c) for c in np.indices(idx.shape, dtype=np.int64)]
    coords[axis] = idx
    return [_index_map(ctx, np.asarray(np.ravel_multi_index(tuple(coords), x)), "indices")]


@converter("GatherND", attrs=("batch_dims",))
def convert_gather_nd(ctx: NodeContext) -> Sequence[Output]:
    """Slices of x picked by the last dim of constant indices (after `batch_dims` shared
    leading dims): a flat gather (`_index_map`)."""
    x = ctx.shape(0)
    b = int(ctx.attr("batch_dims", 0))
    idx = _constant_indices(ctx, 1, "indices")
    k = idx.shape[-1] if idx.ndim else 0
    if idx.ndim < 1 or b + k > len(x) or tuple(idx.shape[:b]) != tuple(x[:b]):
        raise NodeError(f"indices of shape {list(idx.shape)} do not index data of shape {list(x)} "
                        f"with batch_dims={b}")
    picked = np.where(idx < 0, idx + np.array(x[b:b + k]), idx)
    rest = x[b + k:]
    flat = np.empty(idx.shape[:-1] + tuple(rest), dtype=np.int64)
    inner = np.indices(tuple(rest), dtype=np.int64).reshape(len(rest), -1) if rest else np.zeros((0, 1), np.int64)
    for pos in np.ndindex(*idx.shape[:-1]):
        lead = tuple(pos[:b]) + tuple(picked[pos])
        if any(c < 0 or c >= d for c, d in zip(lead[b:], x[b:b + k])):
            raise NodeError(f"index {list(picked[pos])} is out of range for data of shape {list(x)}")
        coords = [np.full(inner.shape[1], c, np.int64) for c in lead] + list(inner)
        flat[pos] = np.asarray(np.ravel_multi_index(tuple(coords), x)).reshape(tuple(rest))
    return [_index_map(ctx, flat, "indices")]


_SCATTER_REDUCTIONS: dict[str, tuple[type[BinaryOp], float]] = {
    "add": (AddOp, 0.0), "mul": (MulOp, 1.0), "max": (MaxOp, -np.inf), "min": (MinOp, np.inf)}
"""Scatter reductions: the op combining an update into the data, and its identity."""


def _scatter(ctx: NodeContext, targets: np.ndarray) -> Output:
    """data with the updates written at flat positions `targets` (one per update element,
    in order). Reduction "none": one flat gather over data then updates (a position
    written twice takes its last update). add/mul/max/min: per level of multiplicity, a
    gather of each position's next update (or the reduction's identity) combined into
    the data, in update order."""
    reduction = str(ctx.attr("reduction", "none"))
    if reduction != "none" and reduction not in _SCATTER_REDUCTIONS:
        raise NodeError(f"unsupported attribute reduction={reduction}")
    shape = ctx.shape(0)
    n, u = int(np.prod(shape, dtype=np.int64)), targets.size
    flat_targets = targets.reshape(-1)
    if reduction == "none":
        src = np.arange(n, dtype=np.int64)
        src[flat_targets] = n + np.arange(u, dtype=np.int64)
        return _index_map(ctx, src.reshape(shape), "indices", sources=(0, 2))
    op, identity = _SCATTER_REDUCTIONS[reduction]
    updates = ctx.build(ReshapeOp(ctx.value(2, carried=True), f32_tensor((u,)))).results[0]
    ext = ctx.build(ConcatOp([updates, ctx.const(np.array([identity]), "identity")], 0,
                             f32_tensor((u + 1,)))).results[0]
    acc = ctx.value(0, carried=True)  # (integers, carried as f32, as in the gather above)
    seen = np.zeros(n, dtype=np.int64)
    levels: list[np.ndarray] = []
    for j, t in enumerate(flat_targets):
        if seen[t] == len(levels):
            levels.append(np.full(n, u, dtype=np.int64))
        levels[seen[t]][t] = j
        seen[t] += 1
    for level in levels:
        idx = ctx.const(level.reshape(shape), "level")
        picked = ctx.build(GatherOp(ext, idx, 0, f32_tensor(shape))).results[0]
        acc = _eltwise(ctx, op, acc, picked)
    return ctx.typed(acc, ctx.dtype(0))


@converter("ScatterElements", attrs=("axis", "reduction"))
def convert_scatter_elements(ctx: NodeContext) -> Sequence[Output]:
    """data[i with its `axis` coordinate replaced by indices[i]] = updates[i], constant
    indices (`_scatter`)."""
    x = ctx.shape(0)
    axis = _axis(int(ctx.attr("axis", 0)), len(x))
    idx = _constant_indices(ctx, 1, "indices")
    if idx.shape != ctx.shape(2) or idx.ndim != len(x):
        raise NodeError(f"indices {list(idx.shape)} and updates {list(ctx.shape(2))} must have one shape of rank "
                        f"{len(x)}")
    idx = np.where(idx < 0, idx + x[axis], idx)
    if idx.size and (idx.min() < 0 or idx.max() >= x[axis]):
        raise NodeError(f"indices {_preview(idx)} are out of range for dim {axis} of size {x[axis]}")
    coords: list[np.ndarray] = [np.asarray(c) for c in np.indices(idx.shape, dtype=np.int64)]
    coords[axis] = idx
    return [_scatter(ctx, np.asarray(np.ravel_multi_index(tuple(coords), x)))]


@converter("ScatterND", attrs=("reduction",))
def convert_scatter_nd(ctx: NodeContext) -> Sequence[Output]:
    """The slices of data named by the last dim of constant indices replaced by updates
    (`_scatter`)."""
    x = ctx.shape(0)
    idx = _constant_indices(ctx, 1, "indices")
    k = idx.shape[-1] if idx.ndim else 0
    if idx.ndim < 1 or k > len(x) or ctx.shape(2) != tuple(idx.shape[:-1]) + tuple(x[k:]):
        raise NodeError(f"indices {list(idx.shape)} and updates {list(ctx.shape(2))} do not fit data {list(x)}")
    idx = np.where(idx < 0, idx + np.array(x[:k]), idx)
    if idx.size and ((idx < 0).any() or (idx >= np.array(x[:k])).any()):
        raise NodeError(f"indices {_preview(idx)} are out of range for data of shape {list(x)}")
    inner = int(np.prod(x[k:], dtype=np.int64))
    starts = np.ravel_multi_index(tuple(np.moveaxis(idx, -1, 0)), x[:k]) * inner if k else np.zeros(idx.shape[:-1],
                                                                                                    np.int64)
    targets = np.asarray(starts)[..., None] + np.arange(inner, dtype=np.int64)
    return [_scatter(ctx, targets)]


@converter("Tile")
def convert_tile(ctx: NodeContext) -> Sequence[Output]:
    """x repeated `repeats` times along each dim (constant repeats): a flat gather of
    each output element's source (`_index_map`)."""
    x = ctx.shape(0)
    reps = [int(r) for r in _constant_indices(ctx, 1, "repeats").reshape(-1)]
    if len(reps) != len(x) or any(r < 0 for r in reps):
        raise NodeError(f"repeats {reps} for data of rank {len(x)}")
    out = tuple(d * r for d, r in zip(x, reps))
    coords = [c % d for c, d in zip(np.indices(out, dtype=np.int64), x)]
    return [_index_map(ctx, np.asarray(np.ravel_multi_index(tuple(coords), x)) if out else np.zeros((), np.int64),
                       "repeats")]


def _preview(a: np.ndarray) -> str:
    flat = a.reshape(-1)
    return str(flat[:8].tolist())[:-1] + (", ...]" if flat.size > 8 else "]")


@converter("Expand")
def convert_expand(ctx: NodeContext) -> Sequence[Output]:
    """Broadcast to a constant shape (numpy rules, so the result may be larger than it)."""
    shape = [int(v) for v in ctx.constant(1, "the target shape").reshape(-1)]
    x = ctx.shape(0)
    out = broadcast_shapes(x, shape)
    if out is None:
        raise NodeError(f"input of shape {list(x)} does not broadcast to {shape}")
    if out == x:
        return [ctx.tensor(0)]
    xv = ctx.moved(0) if ctx.tensor(0).value is not None else ctx.value(0, carried=True)
    return [ctx.typed(ctx.build(ExpandOp(xv, ctx.like(xv, out))).results[0], ctx.dtype(0))]


@converter("Trilu", attrs=("upper",))
def convert_trilu(ctx: NodeContext) -> Sequence[Output]:
    """Upper/lower triangle of the last two dims from diagonal k (a constant input)."""
    x = ctx.shape(0)
    if len(x) < 2:
        raise NodeError(f"input must have rank >= 2, got shape {list(x)}")
    k = int(ctx.constant(1, "k").reshape(-1)[0]) if ctx.has_input(1) else 0
    op = TriluOp(ctx.value(0, carried=True), bool(int(ctx.attr("upper", 1))), k, f32_tensor(x))
    return [ctx.typed(ctx.build(op).results[0], ctx.dtype(0))]


@converter("Pad", attrs=("mode", "pads", "value"))
def convert_pad(ctx: NodeContext) -> Sequence[Output]:
    """Padding: pads/value are attributes before opset 11, inputs (pads, constant_value,
    and from 18 axes) after; negative pads crop. Constant mode is an `npu_graph.pad`;
    edge, reflect and wrap are index maps (`_index_map`) of numpy's same-named padding of
    the element indices."""
    x = ctx.shape(0)
    mode = ctx.attr("mode", "constant")
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise NodeError(f"unsupported attribute mode={mode} (constant, edge, reflect and wrap are)")
    if ctx.opset < 11:
        pads = list(ctx.ints_attr("pads", ()))
        value = float(ctx.attr("value", 0.0))
    else:
        pads = [int(v) for v in ctx.constant(1, "pads").reshape(-1)]
        value = float(ctx.constant(2, "constant_value").reshape(-1)[0]) if ctx.has_input(2) else 0.0
        if ctx.has_input(3):
            axes = [_axis(int(a), len(x), "axes") for a in ctx.constant(3, "axes").reshape(-1)]
            if len(pads) != 2 * len(axes):
                raise NodeError(f"pads {pads} needs 2 values per axis {axes}")
            full = [0] * (2 * len(x))
            for j, a in enumerate(axes):
                full[a], full[a + len(x)] = pads[j], pads[j + len(axes)]
            pads = full
    if len(pads) != 2 * len(x):
        raise NodeError(f"pads {pads} must have {2 * len(x)} values (begin and end per dim)")
    out = [s + b + e for s, b, e in zip(x, pads, pads[len(x):])]
    if any(o <= 0 for o in out):
        raise NodeError(f"pads {pads} leave an empty result {out}")
    if not any(pads):
        return [ctx.tensor(0)]
    if mode != "constant":
        idx = np.arange(_prod(x)).reshape(x)
        idx = idx[tuple(slice(max(-b, 0), s - max(-e, 0)) for s, b, e in zip(x, pads, pads[len(x):]))]
        idx = np.pad(idx, [(max(b, 0), max(e, 0)) for b, e in zip(pads, pads[len(x):])], mode=mode)
        return [_index_map(ctx, idx, "pads")]
    xv = ctx.moved(0) if ctx.tensor(0).value is not None else ctx.value(0, carried=True)
    y = ctx.build(PadOp(xv, pads, value, ctx.like(xv, out))).results[0]  # (int8 values padded on the integers)
    return [ctx.typed(y, ctx.dtype(0))]


@converter("Shape", attrs=("start", "end"))
def convert_shape(ctx: NodeContext) -> Sequence[Output]:
    """The input's static shape as int64 constant data (dims start:end, opset 15)."""
    x = ctx.shape(0)
    r = len(x)
    start, end = int(ctx.attr("start", 0)), int(ctx.attr("end", r))
    start, end = [min(max(v + r if v < 0 else v, 0), r) for v in (start, end)]
    data = np.array(x[start:end], dtype=np.int64)
    return [Tensor(ctx.node.output[0], data.shape, data.dtype, data=data, origin=ctx.label)]


@converter("Size")
def convert_size(ctx: NodeContext) -> Sequence[Output]:
    """The input's static element count as an int64 scalar constant."""
    data = np.array(_prod(ctx.shape(0)), dtype=np.int64)
    return [Tensor(ctx.node.output[0], (), data.dtype, data=data, origin=ctx.label)]


@converter("ConstantOfShape", attrs=("value",))
def convert_constant_of_shape(ctx: NodeContext) -> Sequence[Output]:
    """Constant data; only reached when the shape is not constant (constant inputs are
    evaluated at import), which is diagnosed."""
    shape = ctx.constant(0, "the shape")
    value = ctx.attr("value")
    fill = numpy_helper.to_array(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
    data = np.full([int(d) for d in shape.reshape(-1)], fill[0], dtype=fill.dtype)
    return [Tensor(ctx.node.output[0], data.shape, data.dtype, data=data, origin=ctx.label)]


@converter("Range")
def convert_range(ctx: NodeContext) -> Sequence[Output]:
    """Constant data; only reached when an input is not constant, which is diagnosed."""
    start, limit, delta = (ctx.constant(i, what) for i, what in enumerate(("start", "limit", "delta")))
    data = np.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)  # (scalar tensors)
    return [Tensor(ctx.node.output[0], data.shape, data.dtype, data=data, origin=ctx.label)]


# --------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------


def import_model(model: onnx.ModelProto, arch: Arch | None = None, *,
                 dims: Mapping[str, int] | None = None,
                 sources: dict[str, str] | None = None) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Translate `model` into a verified `builtin.module` holding `func.func @main`,
    and return it with the weights it names (`npu_graph.constant {weight = KEY}`),
    keyed by sanitized unique names. The module carries `npu.arch` (`arch`, or the
    `default` preset); the caller saves the weights and sets `npu.weights`.
    `@main` carries the ONNX input/output names as `npu.inputs`/`npu.outputs`.
    `dims` gives the size of every symbolic input dimension (`{"batch": 4}`, see
    `lowering/importer/buckets.py`); one left unbound is an error.

    Assumes a model that passed `onnx.checker` (see `load_model`); anything it cannot
    import raises `OnnxImportError` with one line per offending node or value.

    `sources`, when given, receives weight key -> initializer name for every weight
    that is an initializer's data as is and whose values nothing else read (no folded
    node, no computed constant): the compile cache (`tools/compile_cache.py`) re-reads
    those from a model whose weights changed instead of importing it again."""
    from npu_dialects.plugins import called
    called("npu_compiler.importers")  # (plugins register converters of their ops, once: npu_dialects/plugins.py)
    model = bind_dims(model, dims)
    importer = _Importer(model)
    module, weights = importer.run(arch or PRESETS["default"])
    direct = importer.direct_sources()
    if importer.precisions:
        module, weights = _convert_nodes(module, weights)
        direct = {k: name for k, name in direct.items() if k in weights}  # (a converted weight is not its data)
    if sources is not None:
        sources.update(direct)
    return module, weights


PRECISION_KEY = "npu.precision"
"""The `metadata_props` key of a node's precision (module docstring)."""
PRECISIONS = ("f16", "bf16", "f32")


def _convert_nodes(module: ModuleOp, weights: dict[str, np.ndarray]) -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """Run npu-convert-precision's per-node form on a freshly imported module (its ops
    still located at one node each; npu-canonicalize's GELU pattern first, whose exact
    constants 16 bits would round) and return it with the weights it refers to (a
    converted weight replaces the f32 one)."""
    from xdsl.pattern_rewriter import GreedyRewritePatternApplier

    from lowering.errors import CompileError
    from lowering.graph.canonicalize import FuseGelu
    from lowering.graph.constants import ConstantReader
    from lowering.graph.convert_precision import ConvertPrecision
    from lowering.instrument import PatternWalker
    from npu_dialects import make_context
    from npu_dialects.weights import attach_weights, referenced_weights
    attach_weights(module, weights)
    try:  # (a GELU spelled out is recognised by its f32 constants, which 16 bits would round: first)
        PatternWalker(GreedyRewritePatternApplier([FuseGelu(ConstantReader(module, "npu-canonicalize"))])
                      ).rewrite_module(module)
        ConvertPrecision(type="f32").apply(make_context(), module)
        module.verify()
    except (CompileError, VerifyException) as e:
        raise OnnxImportError(f"error: per-node precision ({PRECISION_KEY}): {_one_line(str(e))}") from None
    return module, dict(referenced_weights(module))


@dataclass
class _Importer:
    model: onnx.ModelProto
    tensors: dict[str, Tensor] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    diagnostics: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)  # `hint: ...` lines, each once, after the diagnostics
    used: set[str] = field(default_factory=set)
    inferred: dict[str, tuple[np.dtype | None, tuple[int, ...] | None]] = field(default_factory=dict)
    opset: int = 0
    graph_outputs: set[str] = field(default_factory=set)
    carried_f32: dict[str, Tensor] = field(default_factory=dict)
    initializer_tensors: dict[str, Tensor] = field(default_factory=dict)
    weight_sources: dict[str, str] = field(default_factory=dict)  # weight key -> initializer
    computed_origins: set[str] = field(default_factory=set)  # labels of nodes whose values became constants
    value_read: set[str] = field(default_factory=set)  # tensors whose values a folded node read
    nodes_by_label: dict[str, list[onnx.NodeProto]] = field(default_factory=dict)
    output_dtypes: list[str] = field(default_factory=list)  # the ONNX element type of each output
    carried_values: dict[SSAValue, SSAValue] = field(default_factory=dict)  # integer value -> its f32 carrier
    arch: Arch | None = None
    widened_values: dict[SSAValue, SSAValue] = field(default_factory=dict)  # f16/bf16 value -> f32 cast
    precisions: dict[str, str] = field(default_factory=dict)  # node label -> its `npu.precision` entry

    def direct_sources(self) -> dict[str, str]:
        """Weight key -> initializer for the weights that are an initializer's data as is
        and whose values no folded node or computed constant read (`import_model`)."""
        read = set(self.value_read)
        for label in self.computed_origins:
            for node in self.nodes_by_label.get(label, []):
                read.update(node.input)
        return {k: name for k, name in self.weight_sources.items() if name not in read}

    # values --------------------------------------------------------------------------

    def lookup(self, name: str) -> Tensor:
        t = self.tensors.get(name)
        if t is None:
            raise NodeError(f"input '{name}' is not produced by an earlier node, an initializer "
                            "or a graph input")
        return t

    def materialize(self, t: Tensor) -> SSAValue:
        """The SSA value of `t`; constant data becomes an `npu_graph.constant` (inline
        when small, else a weight), created once at the first use. Float data takes the
        node's float type (`node_float`: f16 in an f16 node; integers carried as f32
        stay f32)."""
        if t.data is not None and np.dtype(t.dtype) in (np.float16, ml_dtypes.bfloat16, np.float32):
            want = f32 if self.carried_f32.get(t.name) is t else node_float()
            if want != f32 or np.dtype(t.dtype) != np.float32:
                return self.materialize_typed(t, want)
        if t.value is not None:
            return t.value
        if t.data is None:
            raise _Skip()
        if t.dtype != np.float32:
            raise NodeError(f"'{t.name}' has element type {t.dtype}; only float32 tensors are "
                            "supported as operands")
        ty = TensorType(Float32Type(), t.shape)
        if t.data.size <= INLINE_MAX_ELEMENTS and np.isfinite(t.data).all():
            # (xDSL 0.75 does not read back inf/nan literals: those go to the weight file)
            vals = [float(v) for v in t.data.reshape(-1)]
            op = ConstantOp(ty, value=DenseIntOrFPElementsAttr.from_list(ty, vals))
        else:
            key = self._weight_key(t.name)
            self.weights[key] = np.ascontiguousarray(t.data).reshape(t.data.shape)  # (keeps a scalar 0-d)
            op = ConstantOp(ty, weight=key)
            if self.initializer_tensors.get(t.name) is t:
                self.weight_sources[key] = t.name
        if self.initializer_tensors.get(t.name) is not t:
            self.computed_origins.add(t.origin)
        op.location = name_loc(t.origin or t.name)
        t.value = op.results[0]
        return t.value

    def materialize_typed(self, t: Tensor, elem: Attribute) -> SSAValue:
        """Constant data `t` as a constant of element type `elem` (i8, ui8, i32, f16...),
        once per tensor and type; inline when small, else a weight kept in its type."""
        key = str(elem)
        if key not in t.typed_values:
            data = np.ascontiguousarray(t.data).astype(np_dtype(elem), copy=False).reshape(t.shape)
            ty = TensorType(elem, t.shape)
            floating = type_name(elem) in ("f32", "f16", "bf16")
            if data.size <= INLINE_MAX_ELEMENTS and (not floating or np.isfinite(data.astype(np.float32)).all()):
                vals = [float(v) if floating else int(v) for v in data.reshape(-1)]
                op = ConstantOp(ty, value=_dense(ty, vals))
            else:
                wkey = self._weight_key(t.name)
                self.weights[wkey] = data
                op = ConstantOp(ty, weight=wkey)
                if self.initializer_tensors.get(t.name) is t and data.dtype == np.asarray(t.data).dtype:
                    self.weight_sources[wkey] = t.name  # (the initializer as is: not a converted copy)
            if self.initializer_tensors.get(t.name) is not t:
                self.computed_origins.add(t.origin)
            op.location = name_loc(t.origin or t.name)
            t.typed_values[key] = op.results[0]
        return t.typed_values[key]

    def widened(self, v: SSAValue) -> SSAValue:
        """An f16/bf16 value cast to f32 (exact), once per value: the input of a node
        computing in f32."""
        if v not in self.widened_values:
            op = CastOp(v, TensorType(f32, shape_of(v)))
            op.location = v.owner.location if isinstance(v.owner, Operation) else name_loc("input")
            self.widened_values[v] = op.results[0]
        return self.widened_values[v]

    def as_carried(self, v: SSAValue) -> SSAValue:
        """`v` as the f32 value converters compute on: an i8/ui8/i32 value is converted
        exactly (`dequantize` by 1, 0; i32 beyond 2^24 rounds, as a carried int32 would),
        once per value; other values as they are."""
        if type_name(element_type(v)) not in ("i8", "ui8", "i32"):
            return v
        if v not in self.carried_values:
            one, zero = _f32_scalar(1.0), _f32_scalar(0.0)
            op = DequantizeOp(v, one.results[0], zero.results[0], TensorType(f32, shape_of(v)))
            for o in (one, zero, op):
                o.location = v.owner.location if isinstance(v.owner, Operation) else name_loc("input")
            self.carried_values[v] = op.results[0]
        return self.carried_values[v]

    def carried(self, t: Tensor) -> Tensor:
        """`t` with integer/boolean (or other float) constant data converted to float32,
        the form such values take on the device; runtime values are already f32."""
        if t.data is None or np.dtype(t.dtype) in (np.float32, np.float16, ml_dtypes.bfloat16):
            return t  # (f16/bf16 data takes the node's float type when materialized)
        key = t.name
        if key not in self.carried_f32:
            data = t.data
            if np.issubdtype(data.dtype, np.integer) and data.size and np.abs(data).max() > 2 ** 24:
                raise NodeError(f"'{t.name}' holds integers beyond 2^24, which float32 cannot carry exactly")
            if not (np.issubdtype(data.dtype, np.integer) or np.issubdtype(data.dtype, np.floating)
                    or data.dtype == np.bool_ or data.dtype.name in _SMALL_INTS):
                raise NodeError(f"'{t.name}' has element type {data.dtype}, which cannot be carried as float32")
            f = data.astype(np.float32)
            self.carried_f32[key] = Tensor(t.name, t.shape, np.dtype(np.float32), data=f, origin=t.origin)
        return self.carried_f32[key]

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
        self.arch = arch
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
            self.initializer_tensors[init.name] = self.tensors[init.name]

        inputs = [i for i in graph.input if i.name not in self.tensors]
        shapes = [self._input_shape(vi) for vi in inputs]
        block = Block(arg_types=[TensorType(HELD[self._io_dtype(vi)] if self._io_dtype(vi) in TYPED_IO else f32,
                                            shape or ()) for vi, shape in zip(inputs, shapes)])
        for vi, shape, arg in zip(inputs, shapes, block.args):
            hint = re.sub(r"[^A-Za-z0-9_$.\-]", "_", vi.name)
            if re.fullmatch(r"[A-Za-z_$.\-][A-Za-z0-9_$.\-]*", hint):
                arg.name_hint = hint
            dtype = self._io_dtype(vi)
            self.tensors[vi.name] = (Tensor(vi.name, shape, dtype, value=arg)
                                     if shape is not None else
                                     Tensor(vi.name, (), dtype, placeholder=True))

        with ImplicitBuilder(block):
            for index, node in enumerate(graph.node):
                self._import_node(index, node)
            results = self._outputs()

        if self.diagnostics:
            raise OnnxImportError(self.diagnostics, self.hints)

        block.add_op(func.ReturnOp(*results))
        fn = func.FuncOp("main", ([a.type for a in block.args], [r.type for r in results]),
                         Region(block))
        fn.attributes[INPUTS_ATTR] = ArrayAttr([StringAttr(i.name) for i in inputs])
        fn.attributes[OUTPUTS_ATTR] = ArrayAttr([StringAttr(o.name) for o in graph.output])
        fn.attributes[INPUT_DTYPES_ATTR] = ArrayAttr([StringAttr(self._io_dtype(i).name) for i in inputs])
        if any(d != "float32" for d in self.output_dtypes):
            fn.attributes[OUTPUT_DTYPES_ATTR] = ArrayAttr([StringAttr(d) for d in self.output_dtypes])
        module = ModuleOp([fn])
        set_arch(module, arch)
        if self.precisions:
            module.attributes[PRECISION_KEY] = DictionaryAttr(
                {k: StringAttr(v) for k, v in self.precisions.items()})
        try:
            module.verify()
        except VerifyException as e:
            raise OnnxImportError(f"error: the imported module does not verify: {_one_line(str(e))}") from None
        return module, self.weights

    @staticmethod
    def _io_dtype(vi: onnx.ValueInfoProto) -> np.dtype:
        """The numpy dtype of a graph input/output (float32 for one not accepted)."""
        return np.dtype(INPUT_ELEM_TYPES.get(vi.type.tensor_type.elem_type, np.float32))

    def _check_opset(self) -> None:
        versions = [o.version for o in self.model.opset_import if o.domain in _DEFAULT_DOMAINS]
        if not versions:
            self.diagnostics.append("error: the model imports no default-domain (ai.onnx) opset")
            return
        self.opset = versions[0]
        if not MIN_OPSET <= self.opset <= MAX_OPSET:
            self.diagnostics.append(f"error: the model uses ONNX opset {self.opset}; supported opsets "
                                    f"are {MIN_OPSET}..{MAX_OPSET}")
            to = min(max(self.opset, MIN_OPSET), MAX_OPSET)
            self._hint(f"hint: onnx.version_converter.convert_version(model, {to}) converts a model to "
                       f"opset {to}")

    def _infer_shapes(self) -> None:
        """ONNX's own shape inference, used only for placeholders after a failed node
        and to cross-check the shapes the converters compute. Large float initializers
        go in without their data (the inference reads their dims; only small or integer
        tensors feed shapes): serializing ResNet-50's 100 MB for it was half the import."""
        held: list[tuple[onnx.TensorProto, bytes]] = []
        try:
            for init in self.model.graph.initializer:
                if init.data_type == onnx.TensorProto.FLOAT and len(init.raw_data) > 4096:
                    held.append((init, init.raw_data))
                    init.ClearField("raw_data")
            inferred = onnx.shape_inference.infer_shapes(self.model, strict_mode=False)
        except Exception:
            return
        finally:
            for init, data in held:
                init.raw_data = data
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
        if tt.elem_type not in INPUT_ELEM_TYPES:
            name = onnx.TensorProto.DataType.Name(tt.elem_type) if tt.elem_type else "undefined"
            self._diag_once(f"error: input '{vi.name}' has element type {name.lower()}; supported inputs are "
                            "float32, float16, bfloat16, int8, uint8 and integer/bool tensors (carried as f32)")
            return None
        if not tt.HasField("shape"):
            self._diag_once(f"error: input '{vi.name}' has no shape; dynamic shapes are not supported yet")
            return None
        shape = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value >= 0:
                shape.append(d.dim_value)
                continue
            if d.HasField("dim_value"):
                self._diag_once(f"error: input '{vi.name}' has a negative dimension {d.dim_value} (axis {i})")
                return None
            what = f"symbolic dimension '{d.dim_param}'" if d.dim_param else f"unknown dimension {i}"
            self._diag_once(f"error: {what} in input '{vi.name}'; dynamic shapes are not supported yet")
            return None
        return tuple(shape)

    def _diag_once(self, line: str) -> None:
        if line not in self.diagnostics:
            self.diagnostics.append(line)

    def _hint(self, line: str | None) -> None:
        if line and line not in self.hints:
            self.hints.append(line)

    def _import_node(self, index: int, node: onnx.NodeProto) -> None:
        """Convert one node, or record its diagnostic and bind placeholders."""
        label = node.name or f"{node.op_type}#{index}"
        self.nodes_by_label.setdefault(label, []).append(node)
        domain = "" if node.domain in _DEFAULT_DOMAINS else node.domain
        op_type = f"{domain}.{node.op_type}" if domain else node.op_type
        prefix = f"error: node '{label}' ({op_type}, opset {self._opset_of(domain)}): "
        try:
            self._precision(node, label)
            outs = self._convert(node, domain, label)
        except (NodeError, VerifyException, MemoryError) as e:
            why = _one_line(str(e)) if not isinstance(e, MemoryError) else f"out of memory at import ({e})"
            self.diagnostics.append(prefix + why)
            self._hint(getattr(e, "hint", None))
            self._bind_placeholders(node)
            return
        except _Skip:
            self._bind_placeholders(node)
            return
        except Exception as e:
            raise RuntimeError(f"importer bug at node '{label}' ({op_type}): {type(e).__name__}: {e}") from e
        self._bind_outputs(node, outs, prefix)

    def _precision(self, node: onnx.NodeProto, label: str) -> None:
        """Record the node's `npu.precision` metadata entry (NodeError for a bad one)."""
        values = [p.value for p in node.metadata_props if p.key == PRECISION_KEY]
        if not values:
            return
        if values[-1] not in PRECISIONS:
            raise NodeError(f"metadata_props '{PRECISION_KEY}' is '{values[-1]}', expected one of "
                            f"{', '.join(PRECISIONS)}")
        self.precisions[label] = values[-1]

    def _convert(self, node: onnx.NodeProto, domain: str, label: str) -> Sequence[Output]:
        """The outputs of `node`: computed at import when its inputs are constant, else
        built by its converter. Raises NodeError (unsupported), _Skip (an input is missing)."""
        entry = CONVERTERS.get(f"{domain}.{node.op_type}" if domain else node.op_type)
        feeds = self._constant_feeds(node) if not domain else None
        if entry is None and feeds is None:
            return self._function(node, domain, label)
        undefined = [a.name for a in node.attribute if a.name not in _schema_attrs(node.op_type, self.opset)]
        if undefined:
            raise NodeError(f"attribute {', '.join(undefined)} is not defined for {node.op_type} "
                            f"at opset {self.opset}")
        outs: Sequence[Output] | None = None
        body = entry is None and not domain and functions.schema(node.op_type, self.opset, MAX_OPSET) is not None
        if feeds is not None:
            outs = self._fold(node, feeds, label, required=entry is None and not body)
            if outs is not None:
                self.value_read.update(node.input)
        if outs is None and entry is None:  # (the reference could not fold it: its body node by node)
            return self._function(node, domain, label)
        if outs is None:
            assert entry is not None  # (else the fold was required: it returned or raised)
            outs = self._run_converter(node, entry, label)
        for i, name in enumerate(node.output[len(outs):], start=len(outs)):
            if name and name in self.used:
                raise NodeError(f"output {i} ('{name}') is not supported")
        return outs

    def _function(self, node: onnx.NodeProto, domain: str, label: str) -> list[Output]:
        """A node without a converter imported as the function body ONNX defines for its op
        (`lowering/importer/functions.py`), each body node at the body's opset; else the
        unsupported-operator diagnostic."""
        if any(x and self.lookup(x).placeholder for x in node.input):
            raise _Skip()  # (an input of a node that failed: its diagnostic explains; no body types)
        try:
            body = None if domain else functions.expand(node, self.opset, MAX_OPSET, label,
                                                         [self._type_proto(x) for x in node.input])
        except functions.NotHonoured as e:
            raise NodeError(f"not supported: {node.op_type} has no converter and {e}") from None
        if body is None and not domain and functions.schema(node.op_type, self.opset, MAX_OPSET) is not None:
            raise NodeError(f"unsupported operator: ONNX defines {node.op_type} as a function but builds no body "
                            "for this node (its optional inputs, outputs or attributes)")
        if body is None:
            supported = (f"hint: this importer converts {len(CONVERTERS)} ONNX op types (domain ai.onnx) at "
                         f"opsets {MIN_OPSET}..{MAX_OPSET}, plus those ONNX defines as functions of them")
            raise NodeError("unsupported operator", supported)
        first = len(self.diagnostics)
        inner_out = {o: f"{label}::{o}" for o in node.output if o}  # (then conformed: `_as_declared`)
        for inner in body.nodes:
            inner.input[:] = [inner_out.get(x, x) for x in inner.input]
            inner.output[:] = [inner_out.get(x, x) for x in inner.output]
        if label in self.precisions:  # (the node's precision is its body's)
            for inner in body.nodes:
                inner.metadata_props.add(key=PRECISION_KEY, value=self.precisions[label])
        self.used.update(x for inner in body.nodes for x in inner.input if x)  # (before any: Split asks)
        self.used.update(o for o in inner_out.values() if o.split("::", 1)[1] in self.used)
        saved, self.opset = self.opset, body.opset
        try:
            for i, inner in enumerate(body.nodes):
                self._import_node(i, inner)
        finally:
            self.opset = saved
        if len(self.diagnostics) > first:  # (the body's own lines follow: which of its nodes, and why)
            missing = sorted({n.op_type for n in body.nodes if n.op_type not in CONVERTERS
                              and functions.schema(n.op_type, body.opset, MAX_OPSET) is None})
            why = f"; it uses {', '.join(missing)}, not supported" if missing else ""
            self.diagnostics.insert(first, f"error: node '{label}' ({node.op_type}, opset {self.opset}): "
                                           f"imported as its ONNX function body, which does not import{why}:")
        return [self._as_declared(self.tensors[inner_out[o]], o, label) if o
                else Tensor("", (), np.dtype(np.float32), placeholder=True) for o in node.output]

    def _as_declared(self, t: Tensor, name: str, label: str) -> Tensor:
        """A function body's output `t` as node output `name`: reshaped to the shape ONNX
        infers for the node when only size-1 dims differ (Celu's body multiplies by a
        [1]-shaped alpha: a rank-0 input gave [1], the op gives [])."""
        shape = self.inferred.get(name, (None, None))[1]
        if t.placeholder or shape is None or shape == t.shape or _prod(shape) != _prod(t.shape):
            return replace(t, name=name)
        if t.value is None:
            data = None if t.data is None else t.data.reshape(shape)
            return replace(t, name=name, shape=tuple(shape), data=data)
        op = ReshapeOp(t.value, f32_tensor(shape))
        op.location = name_loc(label)
        return replace(t, name=name, shape=tuple(shape), value=op.results[0])

    def _type_proto(self, name: str) -> onnx.TypeProto | None:
        """The ONNX type of an input (for ONNX's function builders), None when absent."""
        t = self.tensors.get(name) if name else None
        if t is None or t.placeholder:
            return None
        return onnx.helper.make_tensor_type_proto(onnx.helper.np_dtype_to_tensor_dtype(t.dtype), list(t.shape))

    def _run_converter(self, node: onnx.NodeProto, entry: ConverterEntry, label: str) -> list[Output]:
        """Build `node` with its converter (NodeError for an attribute the converter does
        not take, _Skip when an input is a failed node's placeholder)."""
        extra = [a for a in node.attribute if a.name not in entry.attrs]
        if extra:
            raise NodeError("unsupported attribute " + ", ".join(_fmt_attr(a) for a in extra))
        for name in node.input:
            if name:
                t = self.lookup(name)
                if t.placeholder and t.value is None:
                    raise _Skip()
        token = _NODE_FLOAT.set(self._node_float(node))
        try:
            return list(entry.fn(NodeContext(self, node, label, self.opset)))
        finally:
            _NODE_FLOAT.reset(token)

    def _node_float(self, node: onnx.NodeProto) -> Attribute:
        """f16 or bf16 when an input of `node` is a value of that type and no output is an
        integer or boolean (ArgMax, Shape...: those compute in f32 on inputs widened
        exactly, `NodeContext.value`, as integers carried in f16 would be inexact), else f32."""
        for name in node.output:
            dtype = self.inferred.get(name, (None, None))[0] if name else None
            if dtype is not None and not (_is_float(dtype) or dtype == ml_dtypes.bfloat16):
                return f32
        for name in node.input:
            t = self.tensors.get(name) if name else None
            if t is not None and t.value is not None and element_type(t.value) in (f16, bf16):
                return element_type(t.value)
        return f32

    def _bind_outputs(self, node: onnx.NodeProto, outs: Sequence[Output], prefix: str) -> None:
        """Bind the node's output names to `outs`, diagnosing a shape ONNX infers otherwise."""
        for name, out in zip(node.output, outs):
            if not name:
                continue
            dtype, shape = self.inferred.get(name, (None, None))
            if not isinstance(out, Tensor):  # an SSA value: its ONNX type (integers are carried as f32)
                out = Tensor(name, shape_of(out), np.dtype(np.float32) if dtype is None else dtype, value=out)
            t = out
            declared = name in self.graph_outputs  # checked against the declaration in _outputs
            if shape is not None and not declared and not t.placeholder and shape != t.shape:
                self.diagnostics.append(prefix + f"output '{name}' has shape {list(t.shape)}, but ONNX "
                                        f"shape inference says {list(shape)}")
            self.tensors[name] = t

    def _constant_feeds(self, node: onnx.NodeProto) -> dict[str, np.ndarray] | None:
        """Input name -> data when every input of `node` is constant data (and the node
        is deterministic), else None."""
        names = [n for n in node.input if n]
        if not names or node.op_type in _NO_FOLD or node.op_type in _OWN_FOLD:
            return None
        feeds: dict[str, np.ndarray] = {}
        for n in names:
            data = self.lookup(n).data
            if data is None:
                return None
            feeds[n] = data
        return feeds

    def _fold(self, node: onnx.NodeProto, feeds: dict[str, np.ndarray], label: str,
              required: bool) -> list[Tensor] | None:
        """The outputs of a node whose inputs are all constant, computed at import with
        onnx's reference implementation (shape arithmetic, ConstantOfShape, Range,
        weight transposes...): they never reach the IR. None when the reference cannot
        evaluate it and a converter can still try (`required` False)."""
        from onnx.reference import (
            ReferenceEvaluator,  # imported on first use: it is slow to load
        )

        for name in node.output:  # (a result the device could not hold is not computed)
            dtype, shape = self.inferred.get(name, (None, None))
            nbytes = (dtype.itemsize if dtype is not None else 4) * math.prod(shape) if shape is not None else 0
            if nbytes > DRAM_BYTES:
                raise NodeError(f"output '{name}' of shape {list(shape or ())} takes {nbytes} bytes, more than "
                                f"the device DRAM ({DRAM_BYTES} bytes)")
        try:
            # A one-node model, not the bare node: the evaluator then picks the op's
            # implementation for this opset (for a bare node it takes the newest).
            ins = [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
                   for n, a in feeds.items()]
            outs = [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None)
                    for n in node.output if n]
            graph = onnx.helper.make_graph([node], "fold", ins, outs)
            model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", self.opset)])
            results = ReferenceEvaluator(model).run(None, feeds)
        except Exception as e:
            if not required:
                return None
            raise NodeError(f"cannot evaluate this node on its constant inputs at import: "
                            f"{_one_line(str(e)) or type(e).__name__}") from None
        it = iter(results)
        folded: list[Tensor] = []
        for name in node.output:  # the evaluator returns the named outputs only
            data = np.asarray(next(it)) if name else np.zeros(0, np.float32)
            folded.append(Tensor(name, tuple(data.shape), data.dtype, data=data, origin=label))
        return folded

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

    def _output_value(self, t: Tensor) -> SSAValue:
        """A graph output's value: int8/uint8/float16/bfloat16 ones in their own type
        (a value carried as f32 is converted exactly: quantize by 1, 0, or a cast), an
        int32 one held as i32 as it is, others (an int32 computed in f32 too) as f32."""
        dt = np.dtype(t.dtype)
        if dt not in TYPED_IO or (dt == np.int32 and (t.value is None or element_type(t.value) != i32)):
            return self.as_carried(self.materialize(self.carried(t)))  # (an int32 computed as f32 stays so)
        want = HELD[dt]
        if t.value is None:
            return self.materialize_typed(t, want)
        v = t.value
        if element_type(v) == want:
            return v
        v = self.as_carried(v)
        if want in (i8, ui8):
            one, zero = _f32_scalar(1.0), _f32_scalar(0.0)
            op: Operation = QuantizeOp(v, one.results[0], zero.results[0], TensorType(want, t.shape))
        else:
            op = CastOp(v, TensorType(want, t.shape))
        op.location = v.owner.location if isinstance(v.owner, Operation) else name_loc(t.name)
        return op.results[0]

    def _outputs(self) -> list[SSAValue]:
        """SSA values of the graph outputs; records a diagnostic for each unusable one."""
        results: list[SSAValue] = []
        for vo in self.model.graph.output:
            t = self.tensors.get(vo.name)
            if t is None:
                self._diag_once(f"error: output '{vo.name}' is not produced by any node")
                continue
            if t.placeholder:
                if not self.diagnostics:  # (a placeholder stands for a failed node, which said why)
                    self._diag_once(f"error: output '{vo.name}' was not computed (an importer bug: no node "
                                    "that failed to import explains it)")
                continue
            if t.dtype not in {np.dtype(d) for d in INPUT_ELEM_TYPES.values()}:
                self._diag_once(f"error: output '{vo.name}' has element type {t.dtype}; only float32, float16, "
                                "bfloat16, int8, uint8, int64, int32 and bool outputs are supported")
                continue
            declared = vo.type.tensor_type.shape.dim if vo.type.HasField("tensor_type") else []
            if declared and all(d.HasField("dim_value") for d in declared):
                want = tuple(d.dim_value for d in declared)
                if want != t.shape:
                    self._diag_once(f"error: output '{vo.name}' is declared with shape {list(want)}, "
                                    f"but the graph computes {list(t.shape)}")
                    continue
            try:
                results.append(self._output_value(t))
            except NodeError as e:
                self._diag_once(f"error: output '{vo.name}': {e}")
                continue
            self.output_dtypes.append(t.dtype.name)
        return results

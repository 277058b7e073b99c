"""What every ONNX converter builds on: the `Tensor` value (SSA value or constant data), the
converter table (`CONVERTERS`, `@converter`, `supported_op_types`), `NodeContext` (a
node's inputs, attributes and op building), the import errors (`NodeError`), model
loading and checking (`load_model`), and shape helpers (`reshape_shape`, window pads).
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import ml_dtypes
import numpy as np
import onnx
import onnx.checker
import onnx.defs
import onnx.shape_inference
from google.protobuf.message import DecodeError
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from lowering.importer import functions
from lowering.importer.onnx_file import check_model, external_problem, read_model
from lowering.importer.symbolic import OnnxImportError
from npu_dialects.arch import Arch
from npu_dialects.dtypes import bf16, element_type, f16, f32, i8, i32, type_name, ui8
from npu_dialects.fast_verify import verify
from npu_dialects.graph import (
    CastOp,
    ConstantOp,
    QuantizeOp,
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
NO_FOLD = frozenset({"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike",
                      "Multinomial", "Bernoulli", "Dropout", "LSTM", "GRU", "RNN", "LpNormalization"})
"""Op types never evaluated at import even with constant inputs (not deterministic;
Dropout in training mode is random; onnx's reference recurrences ignore sequence_lens,
direction, activations and clip, and its LpNormalization sums x ** p without the absolute
value - at p = 1 negative data came out with the wrong sign, found by the fuzzer: their
converters build them, npu-constant-fold folds)."""
OWN_FOLD = frozenset({"Slice", "QuantizeLinear", "DequantizeLinear"})
"""Op types whose converters compute constant data themselves, not onnx's reference
(which slices numpy-style: a Slice from and to INT64_MIN with step -1 came out empty),
or build ops on it: a dequantized int8 weight stays an int8 constant and a `dequantize`
(npu-fuse-qdq computes in its integers)."""
SMALL_INTS = frozenset({"int4", "uint4", "int2", "uint2"})
"""Sub-byte integer element types (ml_dtypes, not numpy integers): carried as float32 too."""
INLINE_MAX_ELEMENTS = 16
"""Constants with at most this many elements are written inline (`value`), larger ones
go to the weight side file (`weight`)."""

DEFAULT_DOMAINS = ("", "ai.onnx")
"""The names of ONNX's default operator domain."""

NODE_FLOAT: ContextVar[Attribute] = ContextVar("node_float", default=f32)
"""The float type of the node being converted: f16/bf16 when an input is (an all-f16
model computes in f16), else f32 (`_node_float`)."""


def f32_tensor(shape: Sequence[int]) -> TensorType:
    """A float tensor type of `shape` in the node's float type (f32 unless the node
    computes in f16/bf16): what converters give their float results."""
    return TensorType(NODE_FLOAT.get(), list(shape))


def dense_attr(ty: TensorType, vals: list) -> DenseIntOrFPElementsAttr:
    """A dense literal of any element type (xDSL's overloads want a static one)."""
    return DenseIntOrFPElementsAttr.from_list(cast(Any, ty), vals)


def f32_scalar(x: float) -> ConstantOp:
    """An inline f32 scalar constant (the parameters of an exact integer conversion)."""
    ty = TensorType(f32, [])
    return ConstantOp(ty, value=dense_attr(ty, [x]))


def node_float() -> Attribute:
    """The float element type of the node being converted (f32, f16 or bf16)."""
    return NODE_FLOAT.get()


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


class SkipNode(Exception):
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
        model = read_model(path)  # (large initializers' data stays in the file until imported)
    except FileNotFoundError:
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: no such file") from None
    except IsADirectoryError:
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: is a directory") from None
    except DecodeError as e:
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: truncated or not an ONNX file "
                              f"({one_line(str(e))})") from None
    except Exception as e:  # OSError, ValueError (missing external data)...
        reason = one_line(str(e)) or type(e).__name__
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: {reason}") from None
    if not model.graph.node and not model.graph.output and not model.opset_import:
        # protobuf happily parses many garbage byte strings into an empty message.
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: not an ONNX model "
                              "(no graph, no outputs, no opset)")
    problem = _graph_problem(model)
    if problem:
        raise OnnxImportError(f"{path}: error: {problem}")
    problem = external_problem(model)
    if problem:
        raise OnnxImportError(f"{path}: error: cannot read the ONNX model: {problem}")
    relax_initializer_inputs(model)
    try:
        check_model(model, os.path.dirname(os.path.abspath(path)))
    except Exception as e:  # ValidationError, or anything the checker trips over
        raise OnnxImportError(f"{path}: error: {_checker_message(str(e), _default_opset(model))}") from None
    return model


def relax_initializer_inputs(model: onnx.ModelProto) -> None:
    """An IR version 3 model whose initializers are not all graph inputs is read as IR
    version 4 reads it (in memory): IR 4 dropped that rule, onnxruntime runs such files,
    and its quantizers write them (`quantize_dynamic` or `quantize_static` of a model
    at IR 3 adds scales and zero points as initializers only). Nothing else of IR 4
    differs for a model that passes the checker at IR 3 otherwise."""
    if model.ir_version < 4:
        inputs = {i.name for i in model.graph.input}
        if any(t.name not in inputs for t in model.graph.initializer):
            model.ir_version = 4


def _default_opset(model: onnx.ModelProto) -> int | None:
    return next((o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS), None)


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
        return f"invalid ONNX model: {one_line(text)}"
    at = f", opset {opset}" if opset is not None else ""
    return f"node '{m[1] or m[2]}' ({m[2] or '?'}{at}): {one_line(text)}"


def one_line(text: str) -> str:
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
    `origin` names what a constant came from (its location when materialized).
    `view_of` names the initializer whose data `data` is, element for element in the
    same order (an initializer, or a Reshape, Unsqueeze, Squeeze or Flatten of one): a
    weight of it is that initializer's, re-read by the compile cache."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    value: SSAValue | None = None
    data: np.ndarray | None = None
    origin: str = ""
    placeholder: bool = False
    view_of: str = ""
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


def statistics_in_f32(fn: Converter) -> Converter:
    """`fn`, a converter of a normalisation by a statistic of its input (a norm, a
    variance) or of a p-norm itself (LpPool, GlobalLpPool), run in f32 when its node
    computes in f16/bf16: its float inputs widened (`NodeContext.value`), its float
    results rounded to the node's type at the end. In
    f16 the squares of small values underflow (x * x is a subnormal, fewer bits the
    smaller, below |x| = 2^-7 and 0 below ~1.7e-4; it overflows above 256) and a sum of
    many rounds at every term, so x / ||x|| would be off by many spacings; onnxruntime
    computes these ops in f32 too (its CPU kernels are f32: it casts a float16 node's
    inputs and outputs around them)."""

    @functools.wraps(fn)
    def convert(ctx: NodeContext) -> Sequence[Output]:
        narrow = node_float()
        return fn(ctx) if narrow == f32 else in_f32(ctx, lambda: fn(ctx), narrow)

    return convert


def in_f32(ctx: NodeContext, compute: Callable[[], Sequence[Output]], narrow: Attribute) -> list[Output]:
    """`compute()` with the node's float type f32 (`NodeContext.value` widens 16-bit
    inputs), its f32 results rounded to `narrow` (none when it is f32)."""
    token = NODE_FLOAT.set(f32)
    try:
        outs = compute()
    finally:
        NODE_FLOAT.reset(token)
    return [ctx.build(CastOp(o, TensorType(narrow, shape_of(o)))).results[0]
            if isinstance(o, SSAValue) and element_type(o) == f32 and narrow != f32 else o for o in outs]


def supported_op_types(functions_too: bool = False) -> list[str]:
    """The ONNX op types the importer converts, sorted; with `functions_too` also those it
    imports as their ONNX function body (`functions.function_ops`: every static body
    whose ops import, and the per-node bodies of `functions.CHECKED_CONTEXT_DEPENDENT`)."""
    ops = set(CONVERTERS)
    if functions_too:
        ops |= {op for op, kind in functions.function_ops(ops, MAX_OPSET).items()
                if kind == "function" or op in functions.CHECKED_CONTEXT_DEPENDENT}
    return sorted(ops)


class Importer(Protocol):
    """What a `NodeContext` asks of the importer converting the graph (the driver,
    `onnx_import._Importer`): its values by name, constant data made SSA values, and
    the arch. A protocol, so that this module does not import the driver."""

    arch: Arch | None
    used: set[str]
    """The names of the ONNX values some node or graph output reads."""

    def lookup(self, name: str) -> Tensor:
        """The value named `name` (NodeError when nothing produced it)."""
        ...

    def materialize(self, t: Tensor) -> SSAValue:
        """The SSA value of `t` (constant data becomes a constant, once)."""
        ...

    def materialize_typed(self, t: Tensor, elem: Attribute) -> SSAValue:
        """Constant data `t` as a constant of element type `elem`, once."""
        ...

    def widened(self, v: SSAValue) -> SSAValue:
        """An f16/bf16 value cast to f32, once per value."""
        ...

    def as_carried(self, v: SSAValue) -> SSAValue:
        """`v` as the f32 value converters compute on."""
        ...

    def carried(self, t: Tensor) -> Tensor:
        """`t` with integer/boolean constant data converted to float32."""
        ...


class NodeContext:
    """What a converter sees of one ONNX node: its attributes, its inputs (as SSA
    values, shapes or constant data) and `build`, which locates and verifies ops."""

    def __init__(self, importer: Importer, node: onnx.NodeProto, label: str, opset: int):
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
        return attr_value(a)

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
            raise SkipNode()
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
            raise SkipNode()
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
        verify(op)
        return op


def attr_value(a: onnx.AttributeProto) -> Any:
    """The attribute's Python value (bytes decoded as UTF-8 strings)."""
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [s.decode("utf-8", "replace") for s in v]
    return v


@functools.cache
def schema_attrs(op_type: str, opset: int) -> frozenset[str]:
    """The attributes ONNX defines for `op_type` at `opset` (all when unknown)."""
    try:
        return frozenset(onnx.defs.get_schema(op_type, opset, "").attributes)
    except Exception:  # no schema at this opset: the converter's own list decides
        return frozenset(a for e in CONVERTERS.values() for a in e.attrs)


def fmt_attr(a: onnx.AttributeProto) -> str:
    """`name=value` for a diagnostic, e.g. `ceil_mode=1`, `pads=[1, 1, 1, 1]`."""
    v = attr_value(a)
    if isinstance(v, (int, float, str)):
        return f"{a.name}={v}"
    if isinstance(v, list) and len(v) <= 8 and all(isinstance(x, (int, float)) for x in v):
        return f"{a.name}={list(v)}"
    return a.name


# --------------------------------------------------------------------------------------
# Shape helpers
# --------------------------------------------------------------------------------------


def prod_of(shape: Sequence[int]) -> int:
    """The number of elements of `shape` (a Python int)."""
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
    total = prod_of(shape)
    if infer_at is not None:
        if allowzero and 0 in target:
            raise NodeError(f"shape {list(target)} has both 0 and -1, which allowzero=1 forbids")
        rest = prod_of(out)
        if rest == 0 or total % rest:
            raise NodeError(f"cannot reshape {list(shape)} ({total} elements) to {list(target)}")
        out[infer_at] = total // rest
    if prod_of(out) != total:
        raise NodeError(f"cannot reshape {list(shape)} ({total} elements) to {list(target)} "
                        f"({prod_of(out)} elements)")
    return tuple(out)


def window_pads(ctx: NodeContext, spatial: Sequence[int], kernel: Sequence[int],
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
# Converters: normalisation, reductions, pooling
# --------------------------------------------------------------------------------------


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    """`axis` normalised to [0, rank) (NodeError naming it `what` when out of range)."""
    if not -rank <= axis < rank:
        raise NodeError(f"{what}={axis} is out of range for an input of rank {rank}")
    return axis + rank if axis < 0 else axis


def axes_arg(ctx: NodeContext, input_since: int, index: int = 1) -> tuple[int, ...] | None:
    """`axes`: an attribute before opset `input_since`, an optional constant input from
    then on; None when absent."""
    if ctx.opset < input_since:
        return ctx.ints_attr("axes", ()) if ctx.has_attr("axes") else None
    if ctx.has_attr("axes"):
        raise NodeError(f"axes is an input from opset {input_since} on, not an attribute")
    if not ctx.has_input(index):
        return None
    return tuple(int(a) for a in ctx.constant(index, "axes").reshape(-1))


def norm_axes(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """`axes` normalised to [0, rank) and sorted (NodeError when one repeats)."""
    out = sorted({norm_axis(a, rank, "axes") for a in axes})
    if len(out) != len(axes):
        raise NodeError(f"axes {list(axes)} repeat a dimension")
    return tuple(out)


def constant_indices(ctx: NodeContext, i: int, what: str) -> np.ndarray:
    """Input `i` (indices, an axis, repeats) as int64 constant data."""
    return np.asarray(ctx.constant(i, what)).astype(np.int64)

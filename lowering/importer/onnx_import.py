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

Layout: the converters are split by op family, as onnx-mlir splits its conversions:
`base.py` holds what every converter uses (`Tensor`, `NodeContext`, the `CONVERTERS`
table and `@converter`, errors, model loading, shape helpers); `elementwise.py` the
elementwise, activation, comparison, logical and cast converters; `nn.py` Gemm, MatMul,
convolutions, normalisations, reductions and pooling; `tensor.py` data movement and
shapes; `attention.py`, `indexing.py`, `quantized.py`, `recurrent.py` and `resize.py`
the rest (`scans.py`: the running sums and first-extreme masks nn.py and indexing.py
share). This module is the driver (`import_model`, `_Importer`); it imports every
family module, so each registers its converters, and re-exports their public names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import ml_dtypes
import numpy as np
import onnx
import onnx.checker
import onnx.defs
import onnx.shape_inference
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

# each module registers its converters: Einsum, ReduceProd, MaxUnpool; QuantizeLinear...; LSTM, GRU, RNN; Resize, Upsample
from lowering.importer import attention, functions, indexing, quantized, recurrent, resize  # noqa: F401
from lowering.importer.base import (  # re-exported
    CONVERTERS,
    DEFAULT_DOMAINS,
    HELD,
    INLINE_MAX_ELEMENTS,
    INPUT_ELEM_TYPES,
    MAX_OPSET,
    MIN_OPSET,
    NO_FOLD,
    NODE_FLOAT,
    OWN_FOLD,
    SMALL_INTS,
    TYPED_IO,
    Converter,
    ConverterEntry,
    NodeContext,
    NodeError,
    Output,
    SkipNode,
    Tensor,
    converter,
    dense_attr,
    f32_scalar,
    f32_tensor,
    fmt_attr,
    load_model,
    node_float,
    one_line,
    prod_of,
    reshape_shape,
    schema_attrs,
    supported_op_types,
)
from lowering.importer.contrib import ALIASES, EXPANSIONS, ContribError, expand_contrib
from lowering.importer.contrib import DOMAIN as CONTRIB
from lowering.importer.elementwise import (  # re-exported
    convert_cast,
    convert_cast_like,
    convert_clip,
    convert_gelu,
    convert_hard_sigmoid,
    convert_hard_swish,
    convert_isinf,
    convert_isnan,
    convert_leaky_relu,
    convert_mod,
    convert_not,
    convert_pow,
    convert_prelu,
    convert_relu,
    convert_where,
    is_float,
)
from lowering.importer.nn import (  # re-exported
    TOPK_MAX_K,
    build_conv,
    convert_avgpool,
    convert_batchnorm,
    convert_conv,
    convert_conv_transpose,
    convert_cumsum,
    convert_gemm,
    convert_global_lppool,
    convert_hardmax,
    convert_instance_norm,
    convert_layer_norm,
    convert_lp_norm,
    convert_lppool,
    convert_lrn,
    convert_matmul,
    convert_maxpool,
    convert_onehot,
    convert_softmax,
    convert_topk,
)
from lowering.importer.onnx_file import initializer_array
from lowering.importer.symbolic import OnnxImportError, bind_dims
from lowering.importer.tensor import (  # re-exported
    convert_concat,
    convert_constant,
    convert_constant_of_shape,
    convert_dropout,
    convert_expand,
    convert_flatten,
    convert_gather,
    convert_gather_elements,
    convert_gather_nd,
    convert_identity,
    convert_pad,
    convert_range,
    convert_reshape,
    convert_scatter_elements,
    convert_scatter_nd,
    convert_shape,
    convert_size,
    convert_slice,
    convert_split,
    convert_squeeze,
    convert_tile,
    convert_transpose,
    convert_trilu,
    convert_unsqueeze,
)
from npu_dialects.arch import DRAM_BYTES, PRESETS, Arch, set_arch
from npu_dialects.dtypes import bf16, element_type, f16, f32, i8, i32, np_dtype, type_name, ui8
from npu_dialects.entry import INPUT_DTYPES_ATTR, INPUTS_ATTR, OUTPUT_DTYPES_ATTR, OUTPUTS_ATTR
from npu_dialects.fast_verify import verify
from npu_dialects.graph import (
    CastOp,
    ConstantOp,
    DequantizeOp,
    QuantizeOp,
    ReshapeOp,
    shape_of,
)
from npu_dialects.locs import name_loc

# --------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------


def import_model(model: onnx.ModelProto, arch: Arch | None = None, *,
                 dims: Mapping[str, int] | None = None,
                 sources: dict[str, str] | None = None,
                 shapes: dict[str, tuple[int, ...]] | None = None) -> tuple[ModuleOp, dict[str, np.ndarray]]:
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
    those from a model whose weights changed instead of importing it again. The data
    may have another shape (a Reshape, Unsqueeze, Squeeze or Flatten of the initializer
    folded at import): `shapes`, when given, receives weight key -> shape for those."""
    from npu_dialects.plugins import called
    called("npu_compiler.importers")  # (plugins register converters of their ops, once: npu_dialects/plugins.py)
    model = bind_dims(model, dims)
    try:
        model = expand_contrib(model)  # (onnxruntime's QLinear* ops as their QDQ form)
    except ContribError as e:
        raise OnnxImportError(f"error: {e}") from None
    importer = _Importer(model)
    module, weights = importer.run(arch or PRESETS["default"])
    direct = importer.direct_sources()
    if importer.precisions:
        module, weights = _convert_nodes(module, weights)
        direct = {k: name for k, name in direct.items() if k in weights}  # (a converted weight is not its data)
    if sources is not None:
        sources.update(direct)
    if shapes is not None:
        shapes.update({k: s for k, s in importer.view_shapes.items() if k in direct})
    return module, weights


VIEW_OPS = frozenset({"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity"})
"""Ops whose output, folded at import, is their first input's data in the same order
(`_Importer._view`)."""

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
        verify(module)
    except (CompileError, VerifyException) as e:
        raise OnnxImportError(f"error: per-node precision ({PRECISION_KEY}): {one_line(str(e))}") from None
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
    view_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # weight key -> its shape, a view's
    computed_origins: set[str] = field(default_factory=set)  # labels of nodes whose values became constants
    value_read: set[str] = field(default_factory=set)  # tensors whose values a folded node read
    nodes_by_label: dict[str, list[onnx.NodeProto]] = field(default_factory=dict)
    output_dtypes: list[str] = field(default_factory=list)  # the ONNX element type of each output
    carried_values: dict[SSAValue, SSAValue] = field(default_factory=dict)  # integer value -> its f32 carrier
    arch: Arch | None = None
    widened_values: dict[SSAValue, SSAValue] = field(default_factory=dict)  # f16/bf16 value -> f32 cast
    precisions: dict[str, str] = field(default_factory=dict)  # node label -> its `npu.precision` entry

    def source(self, key: str, t: Tensor) -> None:
        """Weight `key` holds view `t`'s initializer's data (`Tensor.view_of`), in `t`'s
        shape when it is another (`view_shapes`)."""
        self.weight_sources[key] = t.view_of
        init = self.initializer_tensors[t.view_of]
        if init.shape != t.shape:
            self.view_shapes[key] = tuple(t.shape)

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
            raise SkipNode()
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
            if t.view_of:
                self.source(key, t)
        if not t.view_of:
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
                op = ConstantOp(ty, value=dense_attr(ty, vals))
            else:
                wkey = self._weight_key(t.name)
                self.weights[wkey] = data
                op = ConstantOp(ty, weight=wkey)
                if t.view_of and data.dtype == np.asarray(t.data).dtype:
                    self.source(wkey, t)  # (the initializer as is: not a converted copy)
            if not t.view_of:
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
            one, zero = f32_scalar(1.0), f32_scalar(0.0)
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
                    or data.dtype == np.bool_ or data.dtype.name in SMALL_INTS):
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
                data = initializer_array(init, mapped=True)  # (mapped from the file: read when used)
            except Exception as e:
                self.diagnostics.append(f"error: initializer '{init.name}': cannot read its data: "
                                        f"{one_line(str(e))}")
                continue
            self.tensors[init.name] = Tensor(init.name, tuple(data.shape), data.dtype, data=data,
                                             origin=init.name, view_of=init.name)
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
            verify(module)
        except VerifyException as e:
            raise OnnxImportError(f"error: the imported module does not verify: {one_line(str(e))}") from None
        return module, self.weights

    @staticmethod
    def _io_dtype(vi: onnx.ValueInfoProto) -> np.dtype:
        """The numpy dtype of a graph input/output (float32 for one not accepted)."""
        return np.dtype(INPUT_ELEM_TYPES.get(vi.type.tensor_type.elem_type, np.float32))

    def _check_opset(self) -> None:
        versions = [o.version for o in self.model.opset_import if o.domain in DEFAULT_DOMAINS]
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
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        op_type = f"{domain}.{node.op_type}" if domain else node.op_type
        prefix = f"error: node '{label}' ({op_type}, opset {self._opset_of(domain)}): "
        try:
            self._precision(node, label)
            outs = self._convert(node, domain, label)
        except (NodeError, VerifyException, MemoryError) as e:
            why = one_line(str(e)) if not isinstance(e, MemoryError) else f"out of memory at import ({e})"
            self.diagnostics.append(prefix + why)
            self._hint(getattr(e, "hint", None))
            self._bind_placeholders(node)
            return
        except SkipNode:
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
        built by its converter. Raises NodeError (unsupported), SkipNode (an input is missing)."""
        known = ALIASES.get(node.op_type) if domain == CONTRIB else None  # (onnxruntime's own Q/DQ: ONNX's)
        if known is not None:
            domain = ""
        entry = CONVERTERS.get(f"{domain}.{node.op_type}" if domain else node.op_type)
        feeds = self._constant_feeds(node) if not domain else None
        if entry is None and feeds is None:
            return self._function(node, domain, label)
        known = schema_attrs(node.op_type, self.opset) if known is None else known
        undefined = [a.name for a in node.attribute if a.name not in known]
        if undefined:
            raise NodeError(f"attribute {', '.join(undefined)} is not defined for {node.op_type} "
                            f"at opset {self.opset}")
        outs: Sequence[Output] | None = None
        body = entry is None and not domain and functions.schema(node.op_type, self.opset, MAX_OPSET) is not None
        if feeds is not None:
            outs = self._fold(node, feeds, label, required=entry is None and not body)
            if outs is not None:
                self.value_read.update(node.input[1:] if self._view(node, outs) else node.input)
        if outs is None and entry is None:  # (the reference could not fold it: its body node by node)
            return self._function(node, domain, label)
        if outs is None:
            assert entry is not None  # (else the fold was required: it returned or raised)
            outs = self._run_converter(node, entry, label)
        for i, name in enumerate(node.output[len(outs):], start=len(outs)):
            if name and name in self.used:
                raise NodeError(f"output {i} ('{name}') is not supported")
        return outs

    def _view(self, node: onnx.NodeProto, outs: Sequence[Output]) -> bool:
        """Whether folded `node` only views its first input's data with another shape
        (`VIEW_OPS`; the element order and type unchanged) and that input is an
        initializer's data (`Tensor.view_of`): its output is then a view of that
        initializer too, which it marks, and the node read no value of it."""
        if node.op_type not in VIEW_OPS or len(outs) != 1 or not node.input or not node.input[0]:
            return False
        src, out = self.lookup(node.input[0]), outs[0]
        if not src.view_of or not isinstance(out, Tensor) or out.data is None or src.data is None \
                or out.data.dtype != src.data.dtype or out.data.size != src.data.size:
            return False
        out.view_of = src.view_of
        return True

    def _function(self, node: onnx.NodeProto, domain: str, label: str) -> list[Output]:
        """A node without a converter imported as the function body ONNX defines for its op
        (`lowering/importer/functions.py`), each body node at the body's opset; else the
        unsupported-operator diagnostic."""
        if any(x and self.lookup(x).placeholder for x in node.input):
            raise SkipNode()  # (an input of a node that failed: its diagnostic explains; no body types)
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
                         f"opsets {MIN_OPSET}..{MAX_OPSET}, plus those ONNX defines as functions of them"
                         + (f", and onnxruntime's {', '.join(sorted({*EXPANSIONS, *ALIASES}))} (domain {CONTRIB})"
                            if domain == CONTRIB else ""))
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
        if t.placeholder or shape is None or shape == t.shape or prod_of(shape) != prod_of(t.shape):
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
        not take, SkipNode when an input is a failed node's placeholder)."""
        extra = [a for a in node.attribute if a.name not in entry.attrs]
        if extra:
            raise NodeError("unsupported attribute " + ", ".join(fmt_attr(a) for a in extra))
        for name in node.input:
            if name:
                t = self.lookup(name)
                if t.placeholder and t.value is None:
                    raise SkipNode()
        token = NODE_FLOAT.set(self._node_float(node))
        try:
            return list(entry.fn(NodeContext(self, node, label, self.opset)))
        finally:
            NODE_FLOAT.reset(token)

    def _node_float(self, node: onnx.NodeProto) -> Attribute:
        """f16 or bf16 when an input of `node` is a value of that type and no output is an
        integer or boolean (ArgMax, Shape...: those compute in f32 on inputs widened
        exactly, `NodeContext.value`, as integers carried in f16 would be inexact), else f32."""
        for name in node.output:
            dtype = self.inferred.get(name, (None, None))[0] if name else None
            if dtype is not None and not (is_float(dtype) or dtype == ml_dtypes.bfloat16):
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
                if dtype is None:  # (a function body's own value: ONNX inferred none) its own type
                    dtype = np_dtype(element_type(out))  # (f32 for a carried integer, as before)
                out = Tensor(name, shape_of(out), dtype, value=out)
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
        if not names or node.op_type in NO_FOLD or node.op_type in OWN_FOLD:
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
                            f"{one_line(str(e)) or type(e).__name__}") from None
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
            one, zero = f32_scalar(1.0), f32_scalar(0.0)
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

__all__ = [
    "CONVERTERS",
    "Converter",
    "ConverterEntry",
    "HELD",
    "INLINE_MAX_ELEMENTS",
    "INPUT_ELEM_TYPES",
    "MAX_OPSET",
    "MIN_OPSET",
    "NodeContext",
    "NodeError",
    "OnnxImportError",
    "Output",
    "PRECISIONS",
    "PRECISION_KEY",
    "TOPK_MAX_K",
    "TYPED_IO",
    "Tensor",
    "build_conv",
    "convert_avgpool",
    "convert_batchnorm",
    "convert_cast",
    "convert_cast_like",
    "convert_clip",
    "convert_concat",
    "convert_constant",
    "convert_constant_of_shape",
    "convert_conv",
    "convert_conv_transpose",
    "convert_cumsum",
    "convert_dropout",
    "convert_expand",
    "convert_flatten",
    "convert_gather",
    "convert_gather_elements",
    "convert_gather_nd",
    "convert_gelu",
    "convert_gemm",
    "convert_global_lppool",
    "convert_hard_sigmoid",
    "convert_hard_swish",
    "convert_hardmax",
    "convert_identity",
    "convert_instance_norm",
    "convert_isinf",
    "convert_isnan",
    "convert_layer_norm",
    "convert_leaky_relu",
    "convert_lp_norm",
    "convert_lppool",
    "convert_lrn",
    "convert_matmul",
    "convert_maxpool",
    "convert_mod",
    "convert_not",
    "convert_onehot",
    "convert_pad",
    "convert_pow",
    "convert_prelu",
    "convert_range",
    "convert_relu",
    "convert_reshape",
    "convert_scatter_elements",
    "convert_scatter_nd",
    "convert_shape",
    "convert_size",
    "convert_slice",
    "convert_softmax",
    "convert_split",
    "convert_squeeze",
    "convert_tile",
    "convert_topk",
    "convert_transpose",
    "convert_trilu",
    "convert_unsqueeze",
    "convert_where",
    "converter",
    "f32_tensor",
    "import_model",
    "load_model",
    "node_float",
    "reshape_shape",
    "supported_op_types",
]


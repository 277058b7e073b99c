"""`npu-convert-precision{type=f16|bf16}`: run a float32 model in f16 or bf16, whole or
node by node (a module attribute `npu.precision = {"conv1" = "bf16", ...}`, ONNX node
name -> f16 | bf16 | f32, `PRECISION_ATTR`: those nodes' ops take their own type,
which wins over `type`). Runs after the graph optimisations, before npu-fuse
(`npu-default{precision=...}`); the per-node form also at import
(`lowering/importer/onnx_import.py:import_model`, from a node's `metadata_props`).
Options: `type` (f16 or bf16; f32 converts only the per-node precisions).

Algorithm
---------
Every f32 float tensor of each function is retyped to `type`: weights and constants
are converted at compile time (a new weight of that type; one also read in f32 stays
f32, cast where a converted op reads it), and the function's arguments and results keep
their type through an `npu_graph.cast` at entry and exit. Stay in f32 (a remark names
each op and why): tensors that carry integers (integer or boolean inputs, comparison
results, gather indices and what computes them, integer outputs), mean and sum
reductions and LRN, whose results are sums (their results are cast back; LRN's
operands are cast to f32, while a mean or sum reads its 16-bit input as it is and
sums it in f32: a widening reduction), and at f16 a square or higher power only
summed or average-pooled, with the ops on its sum up to the root (an LpNormalization's,
an LpPool's or a variance spelled out: x * x underflows or overflows in f16's range,
|x| ** 3 sooner; bf16 has f32's). Softmax and layer normalisation are converted with their statistics in
f32: a tile widens 16-bit rows to f32 and rounds only the result. Quantized ops
(quantize, dequantize, requantize, cast) and non-f32 tensors are left alone (ops of
another 16-bit type than `type`, an all-f16 model run at bf16: one remark counts them).

The cast at the function's edge is placed where it moves the fewest bytes: an op
whose f32 interface tensors outweigh the rest of what it touches stays in f32
(`interface_bound`: in block order, an op's f32 operands that are arguments or results
of ops kept so, and its results the function returns, against its other operands,
constants included, and its other results, counted in elements). A tie moves no byte
either way: an op continuing a chain kept so stays in it, one at the edge converts (its
cast stays at the function's entry or exit, as without the rule). A 16-bit op reading
a large f32 argument needs a cast pass over it (4 bytes read and 2 written per
element) to save 2 bytes per element it reads, and one writing a returned f32 tensor a
pass back: a decode step's KV cache (past keys and values in, their concatenation
with the new step out, read once by the attention) cost three passes over the cache
in 16 bits against one in f32. Only ops whose type is the global one are judged so (a
per-node type is kept as asked); a remark names each. A constant beyond the 16-bit
type's range (a causal mask's fill of the f32 minimum) becomes +-inf, with a remark.

Per node, an op's type is its locations' common per-node type, else `type` (an op
fused from nodes of different types takes the global one); each value is cast where
its producer's type and its reader's differ (bf16 to f16 directly). This is how a
mixed-precision model keeps its most sensitive layers in 16 bits (`npu-quantize
--qtable`, `--target`): the importer reads a node's `npu.precision` entry (which
onnxruntime ignores, so the file still runs there in float) into the attribute and
runs this pass at once, while each op's location is still its node one to one and
before a graph pass fuses locations; the rules above (sums, integers, statistics in
f32) are the same as for a whole model. (Run inside npu-default instead, the graph
passes would see f32 only, but fused locations would blur the nodes.)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import ml_dtypes
import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from lowering.errors import CompileError
from lowering.graph.constants import INLINE_MAX_ELEMENTS, ConstantReader, weight_hint
from lowering.remarks import remark
from npu_dialects.dtypes import ELEMENT_TYPES, f16, f32, np_dtype, type_name
from npu_dialects.entry import INPUT_DTYPES_ATTR, OUTPUT_DTYPES_ATTR, find_main, io_names
from npu_dialects.files import release_pages
from npu_dialects.graph import (
    SIMPLE_UNARY,
    AddOp,
    AvgPoolOp,
    CastOp,
    ConstantOp,
    DequantizeOp,
    DivOp,
    EqualOp,
    FusedOp,
    GatherOp,
    GraphOp,
    GreaterOp,
    LayerNormApplyOp,
    LayerNormOp,
    LessOp,
    LrnOp,
    MulOp,
    PowOp,
    QuantizeOp,
    ReduceMeanOp,
    ReduceOp,
    ReduceSumOp,
    RequantizeOp,
    RowStatsOp,
    SoftmaxApplyOp,
    SoftmaxOp,
    SqrtOp,
    TruncOp,
    shape_of,
)
from npu_dialects.locs import node_names
from npu_dialects.weights import add_weight

PASS = "npu-convert-precision"
TYPES = ("f16", "bf16", "f32")
KEEP_F32: dict[type[Operation], str] = {
    ReduceMeanOp: "a mean is a sum, which tiles would accumulate in the result's type",
    ReduceSumOp: "a sum, which tiles would accumulate in the result's type",
    LrnOp: "LRN divides by a sum of squares over channels",
}
"""Ops computed in f32 whatever the precision, and why."""
F32_STATISTICS: dict[type[Operation], str] = {
    SoftmaxOp: "its row max and sum", LayerNormOp: "its mean and variance",
    RowStatsOp: "the statistics", LayerNormApplyOp: "its statistics", SoftmaxApplyOp: "its statistics"}
"""Ops converted whose statistics stay f32: a tile widens 16-bit rows to f32 for them
(`row_stats` results are f32 and the apply ops take them so)."""
LEFT_ALONE = (QuantizeOp, DequantizeOp, RequantizeOp, CastOp, FusedOp)
"""Ops the pass never retypes (they name their types themselves)."""
MAKES_INTEGERS = (EqualOp, LessOp, GreaterOp, TruncOp, *(SIMPLE_UNARY[f] for f in (
    "floor", "ceil", "round", "sign", "isnan", "isinf")))
"""Ops whose results hold integers (0/1, rounded values) whatever their operands hold."""
INDEX_OPERANDS: dict[type[Operation], tuple[int, ...]] = {GatherOp: (1,)}
"""Operands an op takes as f32 integers in any precision (gather's indices)."""


SUMMED_SQUARE = ("a square summed (a norm's, a variance's): in f16 it loses bits below |x| = 2^-7, is 0 "
                 "below ~1.7e-4 and overflows above 256")
"""Why a square whose every reader is a mean, sum or average pool stays f32 at `type =
f16` (with its sum: the 16-bit input is cast once, the square is exact enough in f32);
bf16 has f32's exponent range, and its squares are converted."""
SUMMED_POWER = ("a power above 2 summed (an Lp norm's, an LpPool's): in f16 |x| ** p leaves the range faster "
                "than a square (0 below ~6e-3 for p = 3)")
"""`SUMMED_SQUARE`'s reason for a higher power (`pow(|x|, p)`, p > 2)."""
SUMMING = (ReduceSumOp, ReduceMeanOp, AvgPoolOp)
"""The readers that make a power a summed one (LpPool imports as an average pool of
|x| ** p times the window's size)."""


def widening(op: Operation, index: int) -> bool:
    """Whether operand `index` of an op kept in f32 is read in 16 bits as it is: a mean's or
    sum's input (the reduction sums the 16-bit values in f32 into its f32 result, so no
    cast writes an f32 copy of the tensor for it)."""
    return index == 0 and isinstance(op, ReduceOp) and op.SUMS


PRECISION_ATTR = "npu.precision"
"""Module attribute: a dictionary ONNX node name -> f16 | bf16 | f32 (module docstring)."""


@dataclass(frozen=True)
class ConvertPrecision(ModulePass):
    """Retype the f32 float tensors of a graph-level module to `type`, or node by node
    to the module's `npu.precision` (module docstring).

    Assumes a graph-level module before npu-fuse. Options: `type` = f16 | bf16 | f32."""

    name = PASS
    type: str = "f16"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.type not in TYPES:
            raise CompileError(PASS, f"type must be one of {', '.join(TYPES)}, got '{self.type}'")
        per_node = node_precisions(op)
        if self.type == "f32" and all(t == "f32" for t in per_node.values()):
            return
        reader = ConstantReader(op, PASS)
        main = find_main(op)
        for fn in [f for f in op.ops if isinstance(f, FuncOp) and f.body.blocks]:
            _Convert(fn, _Targets(self.type, per_node), reader, fn is main).run()


def node_precisions(module: ModuleOp) -> dict[str, str]:
    """The module's `npu.precision` (node name -> type); a CompileError naming the node
    for a type that is not f16, bf16 or f32, or an attribute that is not a dictionary
    of strings."""
    attr = module.attributes.get(PRECISION_ATTR)
    if attr is None:
        return {}
    if not isinstance(attr, DictionaryAttr):
        raise CompileError(PASS, f"{PRECISION_ATTR} must be a dictionary node name -> type, got {attr}")
    out: dict[str, str] = {}
    for node, t in attr.data.items():
        value = t.data if isinstance(t, StringAttr) else str(t)
        if value not in TYPES:
            raise CompileError(PASS, f"{PRECISION_ATTR}: node '{node}': type must be one of {', '.join(TYPES)}, "
                                     f"got '{value}'")
        out[node] = value
    return out


@dataclass(frozen=True)
class _Targets:
    """Each op's type: its nodes' common per-node type, else the global one."""

    default: str
    per_node: dict[str, str]

    def of(self, op: Operation) -> Attribute | None:
        """The element type `op` computes in, None for f32."""
        t = self.named(op) or self.default
        return None if t in (None, "f32") else ELEMENT_TYPES[t][0]

    def named(self, op: Operation) -> str | None:
        """The type `op`'s nodes ask for together (`per_node`), None when they do not."""
        types = {self.per_node.get(n) for n in node_names(op)}
        return types.pop() if len(types) == 1 and None not in types else None


def overflowed(wide: np.ndarray, narrow: np.ndarray) -> int:
    """How many finite values of `wide` became +-inf in `narrow` (their conversion): only
    counted when some value passes the narrow type's largest (a min/max pass, no
    temporary of the weight's size: a 1B-parameter model converts 4 GB this way)."""
    flat = wide.reshape(-1)
    if not flat.size:
        return 0
    top = float(ml_dtypes.finfo(narrow.dtype).max)
    if not (np.fmax.reduce(flat) > top or np.fmin.reduce(flat) < -top):  # (fmax/fmin skip NaN)
        return 0
    return int(np.count_nonzero(np.isinf(narrow) & np.isfinite(wide)))


def _is_f32(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and v.type.element_type == f32


def _element(v: SSAValue) -> Attribute | None:
    return v.type.element_type if isinstance(v.type, TensorType) else None


def _integer_dtype(name: str) -> bool:
    return name == "bool" or name.startswith(("int", "uint"))


class _Convert:
    """The conversion of one function (its top-level block)."""

    def __init__(self, fn: FuncOp, targets: _Targets, reader: ConstantReader, is_main: bool):
        self.fn, self.block, self.targets, self.reader = fn, fn.body.block, targets, reader
        self.is_main = is_main
        self.casts: dict[tuple[SSAValue, Attribute], SSAValue] = {}

    def run(self) -> None:
        ints = self.integer_values()
        ops = [o for o in self.block.ops if isinstance(o, GraphOp)]
        convert: dict[Operation, Attribute] = {}
        for o in ops:
            t = self.targets.of(o)
            if t is not None and self.converts(o, ints):
                convert[o] = t
        bound = self.interface_bound(ops, convert, ints)
        for o in bound:
            del convert[o]
        powers = {o: power for o in convert if convert[o] == f16 and (power := self.summed_power(o)) is not None}
        roots = [o for sq in powers for o in self.root_of_sum(sq, convert)]
        for o in [*powers, *roots]:
            del convert[o]
        consts = {}
        for o in ops:
            if isinstance(o, ConstantOp) and _is_f32(o.result) and o.result not in ints and o.result.uses:
                wanted = {self.wants(u.operation, u.index, convert) for u in o.result.uses}
                if len(wanted) == 1 and None not in wanted:
                    consts[o] = wanted.pop()
        self.report(ops, convert, ints, bound)
        for o in powers:
            why = SUMMED_SQUARE if powers[o] == 2.0 else SUMMED_POWER
            remark(PASS, "missed", node_names(o), f"kept in f32: {why}")
        for o in roots:
            remark(PASS, "missed", node_names(o), "kept in f32: on a sum of powers (squares) up to its root, "
                                                  "out of f16's range where the powers are")
        retyped = {self.retype_constant(o, t) for o, t in consts.items()}
        for o, t in convert.items():
            retyped.update(Rewriter.replace_value_with_new_type(r, TensorType(t, shape_of(r))) for r in o.results)
        for o in list(self.block.ops):
            for i, v in enumerate(o.operands):
                want = self.wants(o, i, convert)
                if want is not None and (_is_f32(v) or (v in retyped and _element(v) != want)):
                    o.operands[i] = self.cast(v, want)  # type: ignore[index]
                elif want is None and v in retyped and not widening(o, i):
                    o.operands[i] = self.cast(v, f32)  # type: ignore[index]

    def summed_power(self, op: Operation) -> float | None:
        """The exponent p >= 2 of x * x or pow(x, p) read only by means, sums and average
        pools (`SUMMING`: `SUMMED_SQUARE`, `SUMMED_POWER`), else None."""
        if isinstance(op, MulOp) and op.operands[0] is op.operands[1]:
            power: float | None = 2.0
        else:
            power = self.reader.scalar(op.operands[1]) if isinstance(op, PowOp) else None
        if power is None or power < 2 or not op.results[0].uses:
            return None
        return float(power) if all(isinstance(u.operation, SUMMING) for u in op.results[0].uses) else None

    def root_of_sum(self, square: Operation, convert: dict[Operation, Attribute]) -> list[Operation]:
        """The converted ops from a summed power's sum (an average pool: a reduction stays
        f32 anyway) up to its root, each the one reader of the last: an add, multiply or
        divide by a constant (an epsilon, 1 / n, a window's size) and the sqrt or
        pow(s, 1 / p), which brings the statistic back to the range of x (a norm, a
        standard deviation). Kept in f32 with the power: the sum itself is out of f16's
        range wherever the power is."""
        chain: list[Operation] = []
        for use in square.results[0].uses:
            if use.operation in convert and use.operation not in chain:  # (an average pool: sums and divides in f16)
                chain.append(use.operation)
            v = use.operation.results[0]
            while v.has_one_use():
                op = next(iter(v.uses)).operation
                if op not in convert or op in chain:
                    break
                if isinstance(op, SqrtOp) or (isinstance(op, PowOp) and op.operands[0] is v and
                                              0 < (self.reader.scalar(op.operands[1]) or 0) < 1):
                    chain.append(op)
                    break
                other = [w for w in op.operands if w is not v]
                if not (isinstance(op, (AddOp, MulOp, DivOp)) and len(other) == 1 and op.operands[0] is v
                        and isinstance(other[0].owner, ConstantOp) and op.results[0].type == v.type):
                    break
                chain.append(op)
                v = op.results[0]
        return chain

    def converts(self, op: Operation, ints: set[SSAValue]) -> bool:
        """Whether `op` can compute in a 16-bit type."""
        if isinstance(op, (ConstantOp, *LEFT_ALONE, *KEEP_F32)) or not op.results:
            return False
        return all(_is_f32(r) and r not in ints for r in op.results)

    def interface_bound(self, ops: list[GraphOp], convert: dict[Operation, Attribute],
                        ints: set[SSAValue]) -> dict[Operation, tuple[int, int]]:
        """The ops to keep in f32 because the function's f32 interface tensors outweigh
        the rest of what they touch (module docstring), each with (interface elements,
        other elements)."""
        term = self.block.last_op
        returned = set(term.operands) if term is not None else set()
        wide: set[SSAValue] = {a for a in self.block.args if _is_f32(a) and a not in ints}
        bound: dict[Operation, tuple[int, int]] = {}
        for o in ops:
            if o not in convert or self.targets.named(o) is not None:
                continue
            w = n = 0
            chained = False
            for v in dict.fromkeys(o.operands):
                size = prod(shape_of(v))
                if v in wide:
                    w += size
                    chained = chained or v.owner in bound
                else:
                    n += size
            for r in o.results:
                if r in returned:
                    w += prod(shape_of(r))
                else:
                    n += prod(shape_of(r))
            if w > n or (w and w == n and chained):
                bound[o] = (w, n)
                wide.update(o.results)
        return bound

    def wants(self, user: Operation, index: int, convert: dict[Operation, Attribute]) -> Attribute | None:
        """The type operand `index` of `user` is to have (None: f32, or as it is)."""
        if user not in convert or index in INDEX_OPERANDS.get(type(user), ()):
            return None
        return convert[user]

    def integer_values(self) -> set[SSAValue]:
        """The f32 values that carry integers: integer and boolean inputs and what only
        they (and constants) compute, results of MAKES_INTEGERS, the indices of gathers
        and integer outputs with everything computing them (up to a MAKES_INTEGERS op)."""
        ints: set[SSAValue] = set()
        args = self.block.args
        dtypes = io_names(self.fn, INPUT_DTYPES_ATTR) if self.is_main else None
        ints.update(a for a, d in zip(args, dtypes or ()) if _integer_dtype(d))
        for op in self.block.ops:
            skip = INDEX_OPERANDS.get(type(op), ())
            shaped = [v for i, v in enumerate(op.operands) if isinstance(v.type, TensorType) and i not in skip]
            if isinstance(op, MAKES_INTEGERS) or (
                    shaped and not isinstance(op, LEFT_ALONE) and any(v in ints for v in shaped)
                    and all(v in ints or isinstance(v.owner, ConstantOp) for v in shaped)):
                ints.update(r for r in op.results if _is_f32(r))
        sinks = [op.operands[i] for op in self.block.ops for i in INDEX_OPERANDS.get(type(op), ())]
        outs = io_names(self.fn, OUTPUT_DTYPES_ATTR) if self.is_main else None
        term = self.block.last_op
        if term is not None and outs:
            sinks += [v for v, d in zip(term.operands, outs) if _integer_dtype(d)]
        while sinks:
            v = sinks.pop()
            if v in ints or not _is_f32(v):
                continue
            ints.add(v)
            if isinstance(v.owner, Operation) and not isinstance(v.owner, (*MAKES_INTEGERS, *LEFT_ALONE)):
                sinks += list(v.owner.operands)
        return ints

    def retype_constant(self, op: ConstantOp, target: Attribute) -> SSAValue:
        original = self.reader.array(op.result)
        if original is None:
            raise CompileError(PASS, "cannot read the constant's data to convert it", op)
        hint = weight_hint(op.location, type_name(target) or "cast")
        if op.weight is not None:
            hint = f"{op.weight.data}.{type_name(target)}"
        wide = np.asarray(original, np.float32)
        with np.errstate(over="ignore"):  # (IEEE: beyond the type's range rounds to +-inf; said below)
            data = wide.astype(np_dtype(target))  # (rounded to nearest even)
        over = overflowed(wide, data)
        if over:
            remark(PASS, "missed", node_names(op), f"{over} of the constant's {wide.size} values are beyond "
                   f"{type_name(target)}'s range and became +-inf (an f32 mask fill such as -3.4e38 is meant so)")
        release_pages(original)  # (a weight left in the model file: read again only if used again)
        ty = TensorType(target, data.shape)
        if data.size <= INLINE_MAX_ELEMENTS and np.isfinite(data.astype(np.float32)).all():
            new = ConstantOp(ty, value=DenseIntOrFPElementsAttr.from_list(  # type: ignore[call-overload]
                ty, [float(v) for v in data.reshape(-1)]))  # pyright: ignore[reportCallIssue, reportArgumentType]
        else:
            new = ConstantOp(ty, weight=add_weight(self.reader.module, hint, data))
        new.location = op.location
        Rewriter.replace_op(op, new)
        return new.result

    def cast(self, v: SSAValue, to: Attribute) -> SSAValue:
        """`v` as `to` (one cast per value and type, right after its definition)."""
        key = (v, to)
        if key not in self.casts:
            cast = CastOp(v, TensorType(to, shape_of(v)))
            owner = v.owner
            if isinstance(owner, Operation):
                cast.location = owner.location
                Rewriter.insert_op(cast, InsertPoint.after(owner))
            else:
                assert isinstance(v, BlockArgument) and isinstance(owner, Block)
                Rewriter.insert_op(cast, InsertPoint.at_start(owner))
            self.casts[key] = cast.result
        return self.casts[key]

    def report(self, ops: list[GraphOp], convert: dict[Operation, Attribute], ints: set[SSAValue],
               bound: dict[Operation, tuple[int, int]]) -> None:
        own: dict[str, list[Operation]] = {}  # (ops the model gives another 16-bit type: left as they are)
        for op in ops:
            target = self.targets.of(op)
            if target is None:
                continue
            if op in bound:
                w, n = bound[op]
                remark(PASS, "missed", node_names(op), f"kept in f32: it touches {w} elements of the function's f32 "
                                                       f"arguments and results against {n} others (a cast pass "
                                                       "over them would cost more than it saves)")
                continue
            if isinstance(op, tuple(KEEP_F32)) and all(_is_f32(r) for r in op.results):
                remark(PASS, "missed", node_names(op), f"kept in f32: {KEEP_F32[type(op)]}")
            elif isinstance(op, tuple(F32_STATISTICS)) and op in convert:
                remark(PASS, "applied", node_names(op), f"{op.name.split('.')[-1]} in {type_name(target)}: "
                                                        f"{F32_STATISTICS[type(op)]} in f32")
            elif not isinstance(op, ConstantOp) and any(r in ints for r in op.results):
                remark(PASS, "missed", node_names(op), "kept in f32: carries integers (indices, a mask, a count)")
            elif op not in convert and not isinstance(op, ConstantOp):
                kinds = {t for r in op.results if (e := _element(r)) is not None and (t := type_name(e)) is not None}
                if kinds and kinds <= {"f16", "bf16"} - {type_name(target)}:
                    own.setdefault(kinds.pop(), []).append(op)
        for t, kept in own.items():
            remark(PASS, "missed", [n for o in kept for n in node_names(o)],
                   f"{len(kept)} ops of @{self.fn.sym_name.data} stay in {t}, the model's own type: only f32 "
                   "tensors are converted")
        for t in dict.fromkeys(convert.values()):
            computed = [o for o in ops if convert.get(o) == t]
            remark(PASS, "applied", [n for o in computed for n in node_names(o)],
                   f"{len(computed)} ops of @{self.fn.sym_name.data} computed in {type_name(t)}")

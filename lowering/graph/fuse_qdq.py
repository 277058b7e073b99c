"""`npu-fuse-qdq`: a QDQ model (DequantizeLinear -> op -> QuantizeLinear around each op, as
onnxruntime's `quantize_static` writes it) computed in integers where an integer form
exists: conv/matmul/gemm with a requantize, adds and multiplies of two 8-bit tensors
(`qadd`, `qmul`), data movement and max pooling on the integers, Relu/Clip folded into
saturation ranges, elementwise chains of one 8-bit tensor as lookup tables; reductions
read a dequantized 8-bit tensor itself. Everything else stays in float (a remark names
each op). First in npu-default. No options.

Algorithm
---------
- quantize(conv2d | matmul | gemm(dequantize(x), dequantize(W), dequantize(b)?)) ->
  requantize(integer op -> i32): x per tensor, W per tensor or per output channel with
  one zero point (or a second per-tensor activation, batched too: attention's products), b an i32
  constant or a float one quantized at sx * sw; multiplier sx * sw / sy in float32 as
  onnxruntime computes it; `mode` is the arch's `requant`;
- data movement and max pooling run on the integers (exact): with other parameters at
  the output than at the input, the quantize first moves onto the op's operands;
- quantize(dequantize(x, s, z), s, z) is x;
- quantize(relu | clip(x)) (constant bounds) narrows the saturation range (exact), first;
- quantize(add | mul(dequantize(a), dequantize(b))), all per tensor, is qadd | qmul(a, b):
  the residual add (a squeeze-and-excitation gate's multiply) of two 8-bit tensors with
  its own rescaling (float32 in the arch's `float` requant mode, bit-identical to the
  graph; TFLite's int8 ADD / MUL in `fixed` mode);
- reduce(dequantize(x)), per tensor, reads x and dequantizes as it reads (exact; the
  reduction stays in float); an average pool of it leaving its padding out of the
  divisor is a sum pool divided by each window's count (exact);
- quantize(f(dequantize(x))), f elementwise ops of one 8-bit x and constants varying along
  one dim at most, is table(x): 256 entries (per channel) of f's own arithmetic (`FoldTable`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, TensorType, f32, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint

from lowering.graph.constants import ConstantReader, make_constant, weight_hint
from lowering.instrument import PatternWalker
from lowering.remarks import remark
from npu_dialects.arch import arch_of
from npu_dialects.dtypes import element_type, i32, np_dtype, qrange, type_name
from npu_dialects.graph import (
    AddOp,
    AvgPoolOp,
    BatchNormOp,
    CastOp,
    ClipOp,
    ConcatOp,
    ConstantOp,
    Conv2dOp,
    DequantizeOp,
    DivOp,
    ElementwiseOp,
    GemmOp,
    GraphOp,
    MatMulOp,
    MaxPoolOp,
    MulOp,
    QAddOp,
    QBinaryOp,
    QMulOp,
    QuantizeOp,
    QuantOp,
    ReduceOp,
    ReluOp,
    RequantizeOp,
    ReshapeOp,
    SliceOp,
    SoftmaxOp,
    SumPoolOp,
    TableOp,
    TransposeOp,
    ints,
    quantize_ref,
    shape_of,
)
from npu_dialects.locs import fused_loc, node_names
from npu_dialects.recipe import Derived

PASS = "npu-fuse-qdq"
MOVEMENT = (ReshapeOp, TransposeOp, SliceOp)
"""Ops that only move elements: exact on the integers when input and output share parameters."""


@dataclass(frozen=True)
class Params:
    """Per-tensor quantization parameters of a dequantize/quantize."""

    scale: float
    zero_point: int


class Qdq:
    """Reads the constant parameters of quantize/dequantize ops."""

    def __init__(self, constants: ConstantReader):
        self.constants = constants

    def per_tensor(self, op: QuantizeOp | DequantizeOp) -> Params | None:
        s, z = self.constants.scalar(op.scale), self.constants.scalar(op.zero_point)
        return None if s is None or z is None else Params(s, int(z))

    def dequantized(self, v: SSAValue) -> tuple[DequantizeOp, Params] | None:
        """(the dequantize defining `v`, its per-tensor parameters)."""
        dq = v.owner
        if not isinstance(dq, DequantizeOp) or type_name(element_type(dq.input)) not in ("i8", "ui8"):
            return None
        p = self.per_tensor(dq)
        return None if p is None else (dq, p)

    def weight(self, v: SSAValue, channels: int, axis: int) -> tuple[np.ndarray, np.ndarray, int] | None:
        """(integer weight, per-channel scales [channels], zero point) of a constant
        dequantized per tensor or along `axis`, with one zero point for every channel."""
        dq = v.owner
        if not isinstance(dq, DequantizeOp) or type_name(element_type(dq.input)) not in ("i8", "ui8"):
            return None
        w = self.constants.array(dq.input)
        s, z = self.constants.array(dq.scale), self.constants.array(dq.zero_point)
        if w is None or s is None or z is None or z.size == 0 or not np.all(z == z.flat[0]):
            return None
        rank = len(shape_of(dq.input))
        full = (1,) * (rank - s.ndim) + s.shape
        if s.size != 1 and (full[axis] != channels or s.size != channels):
            return None
        return w, np.broadcast_to(s.reshape(-1).astype(np.float32), (channels,)), int(z.flat[0])

    def bias(self, b: SSAValue | None, scales: np.ndarray) -> np.ndarray | None | bool:
        """An int32 bias of scale `scales` (x scale times weight scale per channel):
        an i32 constant dequantized with exactly those scales as it is, else a float bias
        quantized to them; False when `b` is not a constant."""
        if b is None:
            return None
        dq = b.owner
        if isinstance(dq, DequantizeOp) and type_name(element_type(dq.input)) == "i32":
            data, s = self.constants.array(dq.input), self.constants.array(dq.scale)
            zero = self.constants.scalar(dq.zero_point)
            if data is None or s is None or zero != 0:
                return False
            if np.array_equal(np.broadcast_to(s.reshape(-1), scales.shape).astype(np.float32), scales):
                return data.astype(np.int32)
            real = data.astype(np.float64) * np.broadcast_to(s.reshape(-1), scales.shape)
        else:
            real = self.constants.array(b)
            if real is None:
                return False
        return np.clip(np.rint(real / scales.astype(np.float64)), -2**31, 2**31 - 1).astype(np.int32)


def saturation(op: QuantizeOp, lo: int | None = None, hi: int | None = None) -> dict[str, int | None]:
    """The `min`/`max` keywords of an op replacing quantize `op` with its saturation range
    (or [lo, hi]): None where the range is the result type's own."""
    if lo is None or hi is None:
        lo, hi = op.bounds()
    full = (lo, hi) == qrange(element_type(op.result))
    return {"min": None if full else lo, "max": None if full else hi}


def replace_quantized(q: QuantizeOp, src: Operation, new: Operation, rewriter: PatternRewriter,
                      orphans: list[SSAValue]) -> None:
    """Replace quantize `q` of `src`'s result by `new` and erase `src`: their operands
    (q's parameters, src's inputs) join `orphans`, erased once dead (`erase_dead`)."""
    orphans += [*q.operands[1:], *src.operands]
    rewriter.replace(q, new)
    rewriter.erase(src)


class QdqPattern(RewritePattern):
    """A pattern reading quantization parameters (`qdq`); `orphans` collects the operands
    of the ops it rewrote, erased once dead (`erase_dead`)."""

    def __init__(self, qdq: Qdq):
        self.qdq = qdq
        self.orphans: list[SSAValue] = []


class FoldActivation(QdqPattern):
    """quantize(relu(x)) -> quantize(x){min = q(0)}; quantize(clip(x, a, b)) ->
    quantize(x){min = q(a), max = q(b)} for constant scalar a <= b. Exact: q is monotonic,
    so q(max(x, a)) = max(q(x), q(a)) and likewise for min; the bounds only narrow."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, QuantizeOp):
            return
        act = op.input.owner
        if not isinstance(act, ReluOp | ClipOp) or not op.input.has_one_use():
            return
        out = self.qdq.per_tensor(op)
        bounds = self.bounds(act)
        if out is None or bounds is None or shape_of(act.operands[0]) != shape_of(op.input):
            return
        lo, hi = op.bounds()
        q = [int(quantize_ref(np.array(b, np.float32), np.array(out.scale, np.float32),
                              np.array(out.zero_point, np.float32), lo, hi)) for b in bounds]
        lo, hi = max(lo, q[0]), min(hi, q[1])
        new = QuantizeOp(act.operands[0], op.scale, op.zero_point, op.result.type, **saturation(op, lo, hi))
        new.location = op.location
        remark(PASS, "applied", node_names(act), f"{act.name} folded into the quantize's saturation range "
               f"[{lo}, {hi}]")
        self.orphans += list(act.operands[1:])
        rewriter.replace(op, new)
        rewriter.erase(act)

    def bounds(self, act: Operation) -> tuple[float, float] | None:
        """The activation's clamp (lo, hi) as floats, None unless constant with lo <= hi."""
        if isinstance(act, ReluOp):
            return 0.0, float("inf")
        a, b = (self.qdq.constants.scalar(v) for v in act.operands[1:])
        return None if a is None or b is None or not a <= b else (float(a), float(b))


class FoldTable(QdqPattern):
    """quantize(f(dequantize(x))) -> table(x): f any DAG of elementwise, quantize,
    dequantize and cast ops whose only non-constant input is the 8-bit tensor x (a GELU
    or a BatchNorm, Mul, Add chain with a quantize/dequantize pair after each op, as
    onnxruntime writes them), its constants varying along one axis of x at most. f has
    256 inputs (per channel along that axis), so it is a table computed here with the
    ops' own arithmetic (`evaluate`): exact. Only where the cost model prefers the
    lookup (two 8-bit vector passes plus loading the table) to the ops it replaces."""

    LIMIT = 64  # ops in one table

    def __init__(self, module: ModuleOp, qdq: Qdq):
        super().__init__(qdq)
        self.module, self.arch = module, arch_of(module)
        self.only: set[Operation] | None = None  # (the quantizes to look at; None: all)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, QuantizeOp) or (self.only is not None and op not in self.only):
            return
        found = self.collect(op)
        if found is None:
            return
        x, ops, consts, channel = found
        axis = self.axis(x, consts, channel)
        if axis is False or not (any(isinstance(o, ElementwiseOp | BatchNormOp) for o in ops) or self.rescale(op, ops)):
            return
        chain = sum(o.cycles(self.arch) or 0 for o in (*ops, op) if isinstance(o, GraphOp))
        rows = 1 if axis is None else shape_of(x)[axis]
        lookup = (self.arch.vector_cycles(math.prod(shape_of(x)), TableOp.VECTOR_COST, "i8")
                  + -(-rows * 256 // self.arch.dram_bw))  # (the lookups, then loading the 8-bit table)
        names = [m for o in (*ops, op) for m in node_names(o)]
        if lookup >= chain:
            remark(PASS, "missed", names, f"not a lookup table: {lookup} cycles against {chain} for the ops")
            return
        table = self.table(x, ops, op, consts, axis)
        if table is None:
            return
        t = make_constant(self.module, table, weight_hint(op.location, "table"), op.location)
        new = TableOp(x, t.result, op.result.type, None if axis is None else axis)
        t.location = new.location = op.location
        rewriter.insert(t, InsertPoint.before(op))
        per = "" if axis is None else f" per index of dim {axis} ({table.shape[0]} x 256)"
        remark(PASS, "applied", names, f"{len(ops) + 1} ops computed as a 256-entry lookup table{per} of their "
               f"{type_name(element_type(x))} input: {lookup} cycles against {chain}")
        rewriter.replace(op, new)
        for o in reversed(ops):
            if not any(r.uses for r in o.results):
                self.orphans += list(o.operands)
                rewriter.erase(o)

    def rescale(self, op: QuantizeOp, ops: list[Operation]) -> bool:
        """Whether `ops` is one per-tensor dequantize whose parameters or 8-bit type differ
        from quantize `op`'s (a concat's input moved to the concat's scale): a table of
        the pair (of the same parameters and type the pair is x: `FuseMovement`'s)."""
        x = self.qdq.dequantized(ops[0].results[0]) if len(ops) == 1 else None
        out = self.qdq.per_tensor(op)
        return x is not None and out is not None and (x[1] != out or x[0].input.type != op.result.type)

    def collect(self, root: QuantizeOp) -> tuple[SSAValue, list[Operation], list[SSAValue], set[SSAValue]] | None:
        """(x, the DAG's ops in an order that computes them, its constants) for the
        quantize `root`, or None: x must be one 8-bit value, every op's result of x's
        shape and read only inside the DAG."""
        dag = TableDag(self.LIMIT)
        if not all(dag.visit(v) for v in root.operands) or len(dag.sources) != 1:
            return None
        dag.consts.update({v: None for v in root.operands[1:]})
        inside, x = {*dag.ops, root}, next(iter(dag.sources))
        shared = [o for o in dag.ops if any(u.operation not in inside for r in o.results for u in r.uses)]
        if any(not (isinstance(o, DequantizeOp) and o.input is x) for o in shared):
            return None  # (a dequantize of x may feed others too: it stays for them)
        return x, list(dag.ops), list(dag.consts), dag.channel  # (all of x's shape: `TableDag.visit_op`)

    def axis(self, x: SSAValue, consts: list[SSAValue], channel: set[SSAValue]) -> int | None | bool:
        """The one dim of x the constants vary along (None: none), False for several or
        for x of rank 1 varying (no other dim to lay the 256 values along)."""
        rank, dims = len(shape_of(x)), set()
        for c in consts:
            s = shape_of(c)
            if c in channel:
                dims |= {1} if math.prod(s) > 1 else set()
            elif len(s) > rank:
                return False
            else:
                dims |= {rank - len(s) + k for k, d in enumerate(s) if d != 1}
        if len(dims) > 1 or (dims and rank < 2):
            return False
        return next(iter(dims), None)

    def table(self, x: SSAValue, ops: list[Operation], root: QuantizeOp, consts: list[SSAValue],
              axis: int | None) -> np.ndarray | None:
        """The DAG's result for each of x's 256 values by their 8 bits ([256], or [C, 256]
        along `axis`), computed on an x of ones but for `axis` (its C indices) and one
        other dim (the 256 values), which every constant broadcasts along; None when a
        constant's data is not at hand."""
        rank = len(shape_of(x))
        d = rank - 1 if axis != rank - 1 else rank - 2
        shape = [1] * rank
        shape[d] = 256
        if axis is not None:
            shape[axis] = shape_of(x)[axis]
        values = np.arange(256, dtype=np.uint8).view(np_dtype(x))  # (entry j: the value whose 8 bits are j)
        values = values.reshape([256 if k == d else 1 for k in range(rank)])
        env: dict[SSAValue, np.ndarray] = {x: np.broadcast_to(values, shape)}
        for c in consts:
            data = self.value_of(c)
            if data is None:
                return None
            env[c] = data
        for o in (*ops, root):
            assert isinstance(o, GraphOp)
            env[o.results[0]] = np.broadcast_to(o.evaluate(*[env[v] for v in o.operands])[0], shape)
        out = env[root.result]
        out = out.reshape(256) if axis is None else np.moveaxis(out, (axis, d), (0, 1)).reshape(-1, 256)
        return np.ascontiguousarray(out).astype(np_dtype(root.result))

    def value_of(self, v: SSAValue) -> np.ndarray | None:
        """The value of a constant-valued v (`constant_valued`); None when a weight's
        data is not at hand (IR without its weights file)."""
        o = v.owner
        if isinstance(o, ConstantOp):
            return self.qdq.constants.array(v)
        assert isinstance(o, GraphOp)
        ins = [a for a in (self.value_of(u) for u in o.operands) if a is not None]
        return o.evaluate(*ins)[0] if len(ins) == len(o.operands) else None


class TableDag:
    """The ops `FoldTable` walks up from a quantize: elementwise, quantize, dequantize,
    cast and batchnorm ops of one shape, down to constant values (constants and ops of
    constants only) and to dequantizes of 8-bit `sources` (a dequantize of a quantize
    read only there continues through it when it can). `channel` holds the constants
    a batchnorm reads per channel (dim 1)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.ops: dict[Operation, None] = {}  # (in an order that computes them)
        self.consts: dict[SSAValue, None] = {}
        self.channel: set[SSAValue] = set()
        self.sources: set[SSAValue] = set()
        self.shape: tuple[int, ...] | None = None

    def visit(self, v: SSAValue) -> bool:
        if constant_valued(v):
            self.consts[v] = None
            return True
        o = v.owner
        if isinstance(o, DequantizeOp) and type_name(element_type(o.input)) in ("i8", "ui8"):
            return self.dequantize(o)
        return isinstance(o, ElementwiseOp | QuantizeOp | CastOp | BatchNormOp) and self.visit_op(o)

    def dequantize(self, dq: DequantizeOp) -> bool:
        if dq in self.ops:
            return True
        q = dq.input.owner
        if isinstance(q, QuantizeOp) and dq.input.has_one_use():
            saved = (dict(self.ops), dict(self.consts), set(self.channel), set(self.sources), self.shape)
            if self.visit_op(q):
                return self.visit_op(dq)
            self.ops, self.consts, self.channel, self.sources, self.shape = saved  # (x: the quantize's result)
        self.sources.add(dq.input)
        return self.visit_op(dq)

    def visit_op(self, o: Operation) -> bool:
        if o in self.ops:
            return True
        if len(self.ops) >= self.limit or len(o.results) != 1 or self.shape not in (None, shape_of(o.results[0])):
            return False
        self.shape = shape_of(o.results[0])
        if isinstance(o, BatchNormOp):
            self.channel.update(o.operands[1:])
        if not all(v in self.sources or self.visit(v) for v in o.operands):
            return False
        self.ops[o] = None
        return True


def constant_valued(v: SSAValue, depth: int = 8) -> bool:
    """Whether v is a constant or an elementwise/quantization op of constants only."""
    o = v.owner
    if isinstance(o, ConstantOp):
        return True
    return (depth > 0 and isinstance(o, ElementwiseOp | QuantOp) and len(o.results) == 1
            and all(constant_valued(u, depth - 1) for u in o.operands))


class FuseCube(RewritePattern):
    """quantize(conv2d/matmul/gemm of dequantized operands) -> requantize(integer op)."""

    def __init__(self, module: ModuleOp, qdq: Qdq):
        self.module, self.qdq, self.mode = module, qdq, arch_of(module).requant
        self.orphans: list[SSAValue] = []  # operands of rewritten ops: erased when dead

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, QuantizeOp) or not op.input.has_one_use():
            return
        cube = op.input.owner
        out = self.qdq.per_tensor(op)
        if out is None or not isinstance(cube, Conv2dOp | MatMulOp | GemmOp):
            return
        built = self.integer(cube)
        if built is None:
            remark(PASS, "missed", node_names(cube), f"{cube.name} kept in float: it needs a per-tensor quantized "
                   "input and constant integer weights (per tensor or per output channel, one zero point)")
            return
        new_ops, acc, sx, sw = built
        mult = (np.float32(sx) * sw / np.float32(out.scale)).astype(np.float32)  # (onnxruntime's order)
        shape = [1, len(mult), 1, 1] if isinstance(cube, Conv2dOp) else [len(mult)]
        m = make_constant(self.module, mult.reshape(shape), weight_hint(cube.location, "requant"), cube.location)
        zp = make_constant(self.module, np.array(out.zero_point, np.float32), "zp", op.location)
        req = RequantizeOp(acc, m.result, zp.result, op.result.type, mode=self.mode, **saturation(op))
        for o in (*new_ops, m, zp, req):
            o.location = cube.location
        rewriter.insert(list(new_ops) + [m, zp], InsertPoint.before(op))
        remark(PASS, "applied", node_names(cube), f"{cube.name} computed in integers "
               f"({type_name(element_type(acc))} accumulator, requantized to "
               f"{type_name(element_type(op.result))})")
        replace_quantized(op, cube, req, rewriter, self.orphans)

    def integer(self, cube: Conv2dOp | MatMulOp | GemmOp) -> tuple[list[Operation], SSAValue, float, np.ndarray] | None:
        """(new ops, the i32 accumulator, x scale, weight scales per channel)."""
        if isinstance(cube, Conv2dOp):
            return self.conv(cube)
        return self.matmul(cube)

    def conv(self, conv: Conv2dOp) -> tuple[list[Operation], SSAValue, float, np.ndarray] | None:
        x = self.qdq.dequantized(conv.input)
        co = shape_of(conv.weight)[0]
        w = self.qdq.weight(conv.weight, co, 0)
        if x is None or w is None:
            return None
        (dx, px), (wq, sw, zw) = x, w
        b = self.qdq.bias(conv.bias, (np.float32(px.scale) * sw).astype(np.float32))
        if b is False:
            return None
        ops: list[Operation] = []
        wc = make_constant(self.module, wq, weight_hint(conv.location, "wq"), conv.location)
        ops.append(wc)
        bc = None
        if b is not None:
            assert isinstance(b, np.ndarray)
            bc = make_constant(self.module, b, weight_hint(conv.location, "bq"), conv.location)
            ops.append(bc)
        acc = Conv2dOp(dx.input, wc.result, bc.result if bc else None, TensorType(i32, shape_of(conv.result)),
                       **conv.params, input_zero_point=px.zero_point, weight_zero_point=zw)
        return [*ops, acc], acc.result, px.scale, sw

    def matmul(self, mm: MatMulOp | GemmOp) -> tuple[list[Operation], SSAValue, float, np.ndarray] | None:
        if isinstance(mm, GemmOp):
            p = mm.params
            if p["trans_a"] or p["alpha"] != 1.0 or (mm.c is not None and p["beta"] != 1.0):
                return None
            a, b, c, trans_b = mm.a, mm.b, mm.c, p["trans_b"]
        else:
            a, b, c, trans_b = mm.operands[0], mm.operands[1], None, False
        bshape = shape_of(b)
        if len(bshape) < 2 or len(shape_of(a)) < 2:
            return None
        n = bshape[-2] if trans_b else bshape[-1]
        x = self.qdq.dequantized(a)
        w = self.qdq.weight(b, n, 0 if trans_b else 1) if len(bshape) == 2 else None
        if x is not None and w is None and c is None and not trans_b:
            return self.activations(mm, x, self.qdq.dequantized(b), n)
        if x is None or w is None:
            return None
        (dx, px), (wq, sw, zw) = x, w
        bias = self.qdq.bias(c, (np.float32(px.scale) * sw).astype(np.float32))
        if bias is False or (bias is not None and shape_of(c) not in ((n,), (1, n))):  # type: ignore[arg-type]
            return None
        wc = make_constant(self.module, np.ascontiguousarray(wq.T if trans_b else wq),
                           weight_hint(mm.location, "wq"), mm.location)
        out = TensorType(i32, shape_of(mm.results[0]))
        acc: Operation = MatMulOp(dx.input, wc.result, out, input_zero_point=px.zero_point, weight_zero_point=zw)
        ops: list[Operation] = [wc, acc]
        if bias is not None:
            assert isinstance(bias, np.ndarray)
            bc = make_constant(self.module, bias.reshape(n), weight_hint(mm.location, "bq"), mm.location)
            acc = AddOp(acc.results[0], bc.result, out)
            ops += [bc, acc]
        return ops, acc.results[0], px.scale, sw

    @staticmethod
    def activations(mm: MatMulOp | GemmOp, x: tuple[DequantizeOp, Params], y: tuple[DequantizeOp, Params] | None,
                    n: int) -> tuple[list[Operation], SSAValue, float, np.ndarray] | None:
        """A product of two per-tensor quantized activations (attention's q @ kt, p @ v,
        batched over heads: onnxruntime's QLinearMatMul) in integers."""
        if y is None or not isinstance(mm, MatMulOp):
            return None
        (dx, px), (dy, py) = x, y
        acc = MatMulOp(dx.input, dy.input, TensorType(i32, shape_of(mm.result)), input_zero_point=px.zero_point,
                       weight_zero_point=py.zero_point)
        return [acc], acc.result, px.scale, np.full(n, py.scale, np.float32)


class FuseBinary(QdqPattern):
    """quantize(add | mul(dequantize(a), dequantize(b))) -> qadd | qmul(a, b): 8-bit a and
    b and every parameter per tensor, the operand of the result's shape first (b may
    broadcast to it); the quantize's saturation range (a folded Relu) carries over.
    `mode` is the arch's `requant`."""

    OPS: dict[type[Operation], type[QBinaryOp]] = {AddOp: QAddOp, MulOp: QMulOp}

    def __init__(self, qdq: Qdq, mode: str):
        super().__init__(qdq)
        self.mode = mode

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, QuantizeOp) or type(src := op.input.owner) not in self.OPS \
                or not op.input.has_one_use():
            return
        assert isinstance(src, Operation)
        out = self.qdq.per_tensor(op)
        ins = [self.qdq.dequantized(v) for v in src.operands]
        if out is None or ins[0] is None or ins[1] is None:
            why = "its result's parameters are not per tensor" if out is None else \
                "an operand is not a per-tensor dequantized 8-bit tensor"
            remark(PASS, "missed", node_names(src), f"{src.name} kept in float: {why}")
            return
        if isinstance(src, AddOp) and self.masks_scores(op):
            remark(PASS, "missed", node_names(src), f"{src.name} kept in float: it masks attention scores (a "
                   "softmax reads its sum), which npu-fuse's quantized attention kernel computes as written")
            return
        shape = shape_of(op.result)
        if shape_of(ins[0][0].input) != shape:
            ins.reverse()  # (the operand of the result's shape first: b broadcasts to it)
        (a, pa), (b, pb) = ins  # pyright: ignore[reportGeneralTypeIssues]
        if shape_of(a.input) != shape:
            remark(PASS, "missed", node_names(src), f"{src.name} kept in float: neither operand has the result's shape")
            return
        params = (pa.scale, pa.zero_point, pb.scale, pb.zero_point, out.scale, out.zero_point)
        kind = self.OPS[type(src)]
        new = kind(a.input, b.input, params, op.result.type, mode=self.mode, **saturation(op))
        new.location = fused_loc([*node_names(src), *node_names(op)])  # (the quantize's value: --compare-all's)
        remark(PASS, "applied", node_names(src), f"{src.name} computed in integers ({kind.name.split('.')[-1]} of two "
               f"{type_name(element_type(a.input))}/{type_name(element_type(b.input))} tensors to "
               f"{type_name(element_type(op.result))})")
        replace_quantized(op, src, new, rewriter, self.orphans)

    @staticmethod
    def masks_scores(q: QuantizeOp) -> bool:
        """Whether the quantized sum is dequantized into a softmax (an attention's masked
        scores: `quantized_attention.quantized_chain` takes the float add)."""
        return any(isinstance(u.operation, DequantizeOp) and any(isinstance(w.operation, SoftmaxOp)
                                                                 for w in u.operation.results[0].uses)
                   for u in q.result.uses)


class ReduceDequantized(QdqPattern):
    """reduce(dequantize(x)), x an 8-bit tensor dequantized per tensor -> the reduction
    with `input_scale`/`input_zero_point` reading x: it dequantizes as it reads (a QDQ
    model's global average pool reads its int8 input, not a float copy of it), and
    still reduces in float32 - the same values as the graph's, so exact."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ReduceOp) or op.input_scale is not None or (d := self.qdq.dequantized(op.input)) is None:
            return
        dq, p = d
        new = type(op)(dq.input, ints(op.axes, ()), bool(op.keepdims.value.data), op.result.type)
        new.attributes.update(input_scale=FloatAttr(p.scale, f32), input_zero_point=FloatAttr(float(p.zero_point), f32))
        new.location = op.location
        remark(PASS, "applied", node_names(op), f"{op.name} reads the {type_name(element_type(dq.input))} tensor "
               "and dequantizes it as it reads (the reduction stays in float)")
        self.orphans.append(op.input)
        rewriter.replace(op, new)


class AvgPoolDivisor(QdqPattern):
    """avgpool(dequantize(x)) leaving its padding out of the divisor, x an 8-bit tensor
    dequantized per tensor -> sumpool(dequantize(x)) / a constant [1, 1, OH, OW] map of
    each window's positions inside the input (`window_counts`): a tile of x holds no
    NaN to mark padding (`pool_ref`), so the dequantize, pool and quantize could not
    run as one kernel on the 8-bit tensor. Exact: the same float32 sum (padding adds
    zeros) divided by the same count."""

    def __init__(self, module: ModuleOp, qdq: Qdq):
        super().__init__(qdq)
        self.module = module

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, AvgPoolOp) or op.count_include_pad.value.data:
            return
        d, p, out = self.qdq.dequantized(op.input), op.params, shape_of(op.result)
        if d is None or len(p["kernel"]) != 2 or len(out) != 4 or not any(p["pads"]):
            return
        counts = window_counts(shape_of(op.input)[2:], out[2:], **p)
        if counts is None:
            return
        pool = SumPoolOp(op.input, op.result.type, **p)
        n = make_constant(self.module, Derived.const(counts), weight_hint(op.location, "window_counts", "pool"),
                          op.location, element_type=f32)
        div = DivOp(pool.result, n.result, op.result.type)
        for new in (pool, n, div):
            new.location = op.location
        remark(PASS, "applied", node_names(op), "the average pool is a sum pool divided by each window's count "
               f"(an 8-bit tile has no NaN to mark padding): one kernel on the {type_name(element_type(d[0].input))} "
               "tensor")
        rewriter.insert([pool, n], InsertPoint.before(op))  # (the divide keeps the pool's result name)
        rewriter.replace(op, div)


def window_counts(size: tuple[int, ...], out: tuple[int, ...], kernel: tuple[int, ...], strides: tuple[int, ...],
                  pads: tuple[int, ...], dilations: tuple[int, ...]) -> np.ndarray | None:
    """[1, 1, OH, OW] float32: the positions of each output's window inside an input of
    `size` (H, W), for a 2-D pool; None when a window holds none."""
    counts = []
    for d in range(2):
        first = np.arange(out[d]) * strides[d] - pads[d]
        taps = first[:, None] + np.arange(kernel[d])[None, :] * dilations[d]
        counts.append(((taps >= 0) & (taps < size[d])).sum(axis=1))
    n = np.outer(counts[0], counts[1])
    return None if (n == 0).any() else n.astype(np.float32).reshape(1, 1, *out)


class FuseMovement(QdqPattern):
    """quantize(movement(dequantize(x, s, z)), s, z) -> movement(x); quantize(dequantize(x))
    of the same parameters -> x; otherwise a remark names the op kept in float. `made`:
    the quantizes it put on a movement's operands (`FoldTable` then takes those of
    another 8-bit tensor's dequantize)."""

    def __init__(self, qdq: Qdq):
        super().__init__(qdq)
        self.made: list[QuantizeOp] = []

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, QuantizeOp):
            return
        out = self.qdq.per_tensor(op)
        src = op.input.owner
        if out is None or not isinstance(src, Operation):
            return
        narrowed = op.bounds() != qrange(element_type(op.result))
        if isinstance(src, DequantizeOp):
            x = self.qdq.dequantized(op.input)
            if x is None or x[1] != out or x[0].input.type != op.result.type:
                return
            if narrowed:
                self.narrow_producer(op, x[0], rewriter)
                return
            self.orphans += list(op.operands)
            rewriter.replace(op, [], [x[0].input])
            return
        if isinstance(src, Conv2dOp | MatMulOp | GemmOp | RequantizeOp | QuantizeOp) or \
                (isinstance(src, AddOp | MulOp) and op.input.has_one_use()):
            return  # (an add or multiply: FuseBinary's, which says why it stays in float)
        if not op.input.has_one_use() or not self.movable(src):
            where = "from its 8-bit input (`ReduceDequantized`) to the quantize" \
                if isinstance(src, ReduceOp) and src.input_scale is not None else "between dequantize and quantize"
            remark(PASS, "missed", node_names(src), f"{src.name} kept in float {where} (no integer form here)")
            return
        ins = [self.qdq.dequantized(v) for v in src.operands[:self.data_operands(src)]]
        if narrowed or any(d is None or d[1] != out or element_type(d[0].input) != element_type(op.result)
                           for d in ins):
            self.quantize_operands(op, src, rewriter)
            return
        operands = [d[0].input for d in ins if d] + list(src.operands[len(ins):])
        new = type(src).create(operands=operands, result_types=[op.result.type],
                               attributes=dict(src.attributes), properties=dict(src.properties))
        new.location = src.location
        replace_quantized(op, src, new, rewriter, self.orphans)

    def narrow_producer(self, op: QuantizeOp, dq: DequantizeOp, rewriter: PatternRewriter) -> None:
        """quantize{lo, hi}(dequantize(y)) of y's own parameters is y clamped to [lo, hi]:
        when y is a requantize/quantize read only through `dq`, that op saturates to the
        narrower range instead (a Relu folded into the quantize lands in the conv's
        requantize); otherwise the pair stays (exact, in float)."""
        prod = dq.input.owner
        if not isinstance(prod, RequantizeOp | QuantizeOp) or not dq.input.has_one_use() \
                or not dq.result.has_one_use():
            return
        (plo, phi), (lo, hi) = prod.bounds(), op.bounds()
        lo, hi = max(lo, plo), min(hi, phi)
        if lo > hi:
            return
        attrs = dict(prod.attributes)
        attrs.update(min=IntegerAttr(lo, i64), max=IntegerAttr(hi, i64))
        new = type(prod).create(operands=list(prod.operands), result_types=[op.result.type], attributes=attrs)
        new.location = op.location  # (its value is now the quantize's: --compare-all compares it there)
        self.orphans += [*op.operands[1:], *dq.operands[1:]]
        rewriter.replace(op, new)
        rewriter.erase(dq)
        rewriter.erase(prod)

    def quantize_operands(self, op: QuantizeOp, src: Operation, rewriter: PatternRewriter) -> None:
        """quantize(move(v...)) -> move(quantize(v)...): quantizing commutes with moving
        elements (and with max, quantizing being monotonic), so each operand is quantized
        with the output's parameters (a quantize that fuses into its producer's kernel)
        and the op moves integers: exact."""
        qs = [QuantizeOp(v, op.scale, op.zero_point, TensorType(element_type(op.result), shape_of(v)),
                         **saturation(op))
              for v in src.operands[:self.data_operands(src)]]
        for q in qs:
            q.location = op.location
        self.made += qs
        rewriter.insert(qs, InsertPoint.before(op))  # (after the output parameters too)
        operands = [q.result for q in qs] + list(src.operands[len(qs):])
        new = type(src).create(operands=operands, result_types=[op.result.type],
                               attributes=dict(src.attributes), properties=dict(src.properties))
        new.location = src.location
        remark(PASS, "applied", node_names(src), f"{src.name} moves integers: its operands are quantized with its "
               "result's parameters")
        rewriter.replace(op, new)
        rewriter.erase(src)

    @staticmethod
    def movable(op: Operation) -> bool:
        return isinstance(op, (*MOVEMENT, ConcatOp, MaxPoolOp))

    @staticmethod
    def data_operands(op: Operation) -> int:
        """How many leading operands carry the data (the rest are indices or shapes)."""
        return len(op.operands) if isinstance(op, ConcatOp) else 1


def erase_dead(values: list[SSAValue]) -> None:
    """Erase the dequantize and constant ops defining `values` once nothing reads them
    (and, in turn, their own operands' definers)."""
    while values:
        v = values.pop()
        op = v.owner
        if isinstance(op, DequantizeOp | ConstantOp) and op.parent is not None and not op.results[0].uses:
            values += list(op.operands)
            op.detach()
            op.erase()


@dataclass(frozen=True)
class FuseQdqPass(ModulePass):
    """Compute a QDQ model's conv/matmul/gemm and residual adds in integers and move
    data-movement ops onto the integers (see the module docstring). No options."""

    name = PASS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not any(isinstance(o, QuantizeOp) for o in op.walk()):
            return
        qdq = Qdq(ConstantReader(op, self.name))
        act, cube, table = FoldActivation(qdq), FuseCube(op, qdq), FoldTable(op, qdq)
        add = FuseBinary(qdq, arch_of(op).requant)
        reduce = ReduceDequantized(qdq)
        pools = AvgPoolDivisor(op, qdq)
        movement = FuseMovement(qdq)
        PatternWalker(act, apply_recursively=True).rewrite_module(op)
        PatternWalker(cube, apply_recursively=False).rewrite_module(op)
        PatternWalker(table, apply_recursively=False, walk_reverse=True).rewrite_module(op)  # (longest chains first)
        PatternWalker(add, apply_recursively=False).rewrite_module(op)
        PatternWalker(reduce, apply_recursively=False).rewrite_module(op)
        PatternWalker(pools, apply_recursively=False).rewrite_module(op)
        PatternWalker(movement, apply_recursively=True).rewrite_module(op)
        table.only = set(movement.made)  # (a concat's operands moved to its parameters)
        PatternWalker(table, apply_recursively=False).rewrite_module(op)
        erase_dead(act.orphans + cube.orphans + table.orphans + add.orphans + reduce.orphans + movement.orphans)

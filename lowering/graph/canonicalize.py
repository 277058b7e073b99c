"""`npu-canonicalize`: local algebraic clean-ups on `npu_graph`.

Patterns (each declines when it does not match; conditions under Algorithm):
- `reshape(reshape(x))` -> `reshape(x)`; `reshape(x)` to x's own shape -> `x`;
- neutral elements: `x * 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0`, `x / 1` -> `x`;
- `transpose(transpose(x))` -> one `transpose(x)`, or `x` when the permutations
  cancel; a transpose with the identity permutation -> `x`; a transpose that only
  moves size-1 dims -> `reshape`;
- `gemm{alpha, beta}(A, B, C)` -> `add(mul(gemm(A, B), alpha), mul(C, beta))`;
- `matmul(A, B)` with a 1-D operand, or with an N-D `A` and a 2-D `B`, ->
  reshapes around a 2-D matmul (numpy matmul semantics kept);
- an op that decomposes (`GraphOp.decompose`: `conv_transpose`) -> its parts;
- `ew(reshape(x), c)` -> `reshape(ew(x, c'))` keeping the last dim (a Linear's bias; narrowing quantization, tables);
- GELU spelled out -> `gelu(x)` / `gelu_tanh(x)`; `mean(x^2) - mean(x)^2` -> `mean((x - mean(x))^2)`.
Assumes value semantics (graph level); dead ops are removed by the driver. No options.

Algorithm
---------
Neutral elements: the constant is an `npu_graph.constant` whose every element is 1
(or 0), inline `value` or a weight read from the module's weight store; the rewrite
applies only when the result has x's own type (a constant that broadcasts x to a
bigger shape stays). The sign of zero is not kept (for x = -0.0, x + 0 is +0.0, the
rewrite gives -0.0), as usual for graph compilers.

Transposes: two in a row become one with the composed permutation. A transpose
that only moves size-1 dims keeps the other dims in their order, so the data
layout is unchanged and the reshape is exact.

Gemm: the factors that are 1 are left out; the scalings become elementwise
epilogue ops the matmul kernel can fuse.

GELU: the exact form x * 0.5 * (1 + erf(x / sqrt(2))) (or x * (1/sqrt(2)) inside)
and the tanh form 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) (x^3 as
`pow(x, 3)` or two multiplies), the products and sums in any order, each scalar a
constant within 1e-6 of its value, x of the result's type. One op is then an
elementwise step a matmul epilogue fuses (the spelled-out DAG reads x twice, so no
chain rule takes it).

Variance: `mean(x*x) - m*m` (or `pow(.., 2)`), m = `mean(x)` over the same axes with
keepdims, cancels catastrophically in float32 when the spread is small beside the
mean (ONNX's GroupNormalization and MeanVarianceNormalization bodies spell it so: a
group of saturated tanh values, variance 7.6e-7 near 1, came out 0.04 off float64
after normalising). `mean((x - m)^2)` is exact there. The `x - m` the normalisation
computes anyway is the same op, which `npu-cse` merges: no pass over the data is added.

Identity and Dropout never reach the IR: the ONNX importer binds their outputs to
their inputs, so there is no pattern for them here.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from math import prod
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    IntegerAttr,
    LocationAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from lowering.graph.constants import ConstantReader
from lowering.instrument import PatternWalker
from npu_dialects.dtypes import elem_bytes, element_type
from npu_dialects.graph import (
    AddOp,
    BinaryOp,
    ConstantOp,
    DivOp,
    ElementwiseOp,
    ErfOp,
    GeluOp,
    GeluTanhOp,
    GemmOp,
    GraphOp,
    MatMulOp,
    MulOp,
    PowOp,
    QuantOp,
    ReduceMeanOp,
    ReluOp,
    ReshapeOp,
    SubOp,
    TableOp,
    TanhOp,
    TransposeOp,
    attr_int,
    ints,
    shape_of,
)
from npu_dialects.locs import fused_loc, loc_names

_OpT = TypeVar("_OpT", bound=Operation)


def _scalar(value: float, loc: LocationAttr, like: SSAValue | None = None) -> ConstantOp:
    """A [1] constant `value` of the element type of `like` (f32 without one)."""
    t = TensorType(Float32Type() if like is None else element_type(like), [1])
    c = ConstantOp(t, value=DenseIntOrFPElementsAttr.from_list(t, [value]))  # type: ignore[arg-type]
    c.location = loc
    return c


def _at(op: _OpT, loc: LocationAttr) -> _OpT:
    op.location = loc
    return op


class FoldReshapeChain(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp):
            return
        new = ReshapeOp(inner.input, op.result.type)
        new.location = fused_loc(loc_names(inner.location) + loc_names(op.location))
        rewriter.replace(op, new)


class GemmScalingToEpilogue(RewritePattern):
    """gemm{alpha, beta}(A, B, C) -> add(mul(gemm(A, B), alpha), mul(C, beta)); without a
    C, beta scales nothing: gemm{beta}(A, B) -> gemm(A, B)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GemmOp, rewriter: PatternRewriter) -> None:
        p = op.params
        if p["alpha"] == 1.0 and p["beta"] == 1.0:
            return
        loc = op.location
        ops: list[Operation] = []
        # C leaves the gemm: alpha scales the product only
        core = _at(GemmOp(op.a, op.b, None, op.result.type, trans_a=p["trans_a"], trans_b=p["trans_b"]), loc)
        ops.append(core)
        y: SSAValue = core.results[0]
        if p["alpha"] != 1.0:
            alpha = _scalar(p["alpha"], loc, y)
            ops += [alpha, _at(MulOp(y, alpha.result, op.result.type), loc)]
            y = ops[-1].results[0]
        if op.c is not None:
            c: SSAValue = op.c
            if p["beta"] != 1.0:
                beta = _scalar(p["beta"], loc, c)
                ops += [beta, _at(MulOp(c, beta.result, c.type), loc)]  # type: ignore[arg-type]
                c = ops[-1].results[0]
            ops.append(_at(AddOp(y, c, op.result.type), loc))
        rewriter.replace(op, ops, [ops[-1].results[0]])


class MatmulTo2D(RewritePattern):
    """matmul with a 1-D operand, or N-D x 2-D, -> reshape, 2-D matmul, reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatMulOp, rewriter: PatternRewriter) -> None:
        a, b = shape_of(op.a), shape_of(op.b)
        if len(a) == 2 and len(b) == 2:
            return
        if len(b) > 2:
            return  # a truly batched B: needs a batched kernel
        if len(a) == 0 or len(b) == 0:
            return  # a scalar operand: not a matmul (its verifier rejects it)
        loc = op.location
        k = a[-1]
        a2 = (1, k) if len(a) == 1 else (prod(a[:-1]), k)
        b2 = (b[0], 1) if len(b) == 1 else b
        ops: list[Operation] = []
        av, bv = op.a, op.b
        if a2 != a:
            ops.append(_at(ReshapeOp(op.a, TensorType(element_type(op.a), a2)), loc))
            av = ops[-1].results[0]
        if b2 != b:
            ops.append(_at(ReshapeOp(op.b, TensorType(element_type(op.b), b2)), loc))
            bv = ops[-1].results[0]
        zx, zw = op.zero_points  # (an integer matmul keeps its types and zero points)
        mm = _at(MatMulOp(av, bv, TensorType(element_type(op.result), (a2[0], b2[1])), input_zero_point=zx,
                          weight_zero_point=zw), loc)
        ops += [mm, _at(ReshapeOp(mm.result, op.result.type), loc)]
        rewriter.replace(op, ops, [ops[-1].results[0]])





class DecomposeAggregate(RewritePattern):
    """An op that says it is other graph ops (`GraphOp.decompose`, e.g.
    `npu_graph.conv_transpose`) -> those ops, at the op's location."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, GraphOp):
            return
        parts = op.decompose()
        if parts is None:
            return
        new_ops, results = parts
        for o in new_ops:
            o.location = op.location
        rewriter.replace(op, new_ops, results)


class FoldIdentityReshape(RewritePattern):
    """reshape(x) with the shape of x -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.input.type != op.result.type:
            return
        rewriter.replace(op, [], [op.input])


NEUTRAL: dict[type[BinaryOp], tuple[float, tuple[int, ...]]] = {
    AddOp: (0.0, (0, 1)),
    SubOp: (0.0, (1,)),
    MulOp: (1.0, (0, 1)),
    DivOp: (1.0, (1,)),
}
"""op -> (its neutral element, the operand positions where it may stand)."""


class ElementwiseBeforeReshape(RewritePattern):
    """ew(reshape(x), c...) -> reshape(ew(x, c'...)) when the reshape raises the rank and
    keeps the last dim, and every other operand is full-size (viewed like x) or broadcasts along the last
    dim only: a 3-D Linear's bias and activation then follow its 2-D matmul directly
    (and fuse into its epilogue). Also a quantize, requantize or narrowing cast (its
    parameters as such operands; not a widening op, which would widen its producer's
    result) and a lookup table (per tensor, or per channel of the last dim). Reshapes
    are views, so nothing moves."""

    @staticmethod
    def operand_like(c: SSAValue, out: tuple[int, ...], x: tuple[int, ...], loc: LocationAttr
                     ) -> tuple[SSAValue, list[Operation]] | None:
        shape = shape_of(c)
        if len(shape) <= 1:
            return c, []  # (a scalar or a row broadcasts against x as it did against the result)
        if shape != out and any(d != 1 for d in shape[:-1]):
            return None
        r = _at(ReshapeOp(c, TensorType(element_type(c), x if shape == out else shape[-1:])), loc)
        return r.result, [r]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ElementwiseOp | QuantOp | TableOp) or (
                isinstance(op, QuantOp) and elem_bytes(op.results[0]) > elem_bytes(op.operands[0])):
            return  # (a dequantize stays after the reshape: into its producer's epilogue it would widen the result)
        out = shape_of(op.results[0])
        data = op.operands if isinstance(op, ElementwiseOp) else op.operands[:op.DATA if isinstance(op, QuantOp) else 1]
        src = next((o.owner for o in data if isinstance(o.owner, ReshapeOp) and shape_of(o) == out), None)
        if src is None:
            return
        x = shape_of(src.input)
        if not x or len(x) >= len(out) or x[-1] != out[-1]:
            return  # (only rank-raising reshapes: the direction MatmulTo2D leaves, and no ping-pong)
        attrs = dict(op.attributes)
        if isinstance(op, TableOp) and len(shape_of(op.operands[1])) == 2:  # (per channel: of the last dim only)
            if attr_int(attrs, "axis", 1) % len(out) != len(out) - 1:
                return
            attrs["axis"] = IntegerAttr(len(x) - 1, 64)
        operands, new = [], []
        for o in op.operands:
            if o is src.result:
                operands.append(src.input)
                continue
            like = (o, []) if isinstance(op, TableOp) else self.operand_like(o, out, x, op.location)
            if like is None:
                return
            operands.append(like[0])
            new += like[1]
        elem = element_type(op.results[0])
        ew = _at(type(op).create(operands=operands, result_types=[TensorType(elem, x)], attributes=attrs),
                 op.location)
        back = _at(ReshapeOp(ew.results[0], TensorType(elem, out)), op.location)
        rewriter.replace(op, [*new, ew, back], [back.result])


class FoldNeutralElement(RewritePattern):
    """x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1 -> x (constant all ones / zeros)."""

    def __init__(self, constants: ConstantReader):
        self.constants = constants

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        rule = NEUTRAL.get(type(op)) if isinstance(op, BinaryOp) else None
        if rule is None:
            return
        neutral, positions = rule
        for pos in positions:
            const, other = op.operands[pos], op.operands[1 - pos]
            if other.type != op.results[0].type:
                continue  # the constant broadcasts x to a bigger shape
            if ConstantReader.constant_op(const) is None or not self.constants.is_splat(const, neutral):
                continue
            rewriter.replace(op, [], [other])
            return


class FuseGelu(RewritePattern):
    """x * 0.5 * (1 + erf(x / sqrt(2))) -> gelu(x); 0.5 * x * (1 + tanh(sqrt(2/pi) *
    (x + 0.044715 x^3))) -> gelu_tanh(x) (forms under Algorithm)."""

    def __init__(self, constants: ConstantReader):
        self.constants = constants

    def near(self, v: SSAValue, value: float) -> bool:
        c = self.constants.scalar(v)
        return c is not None and math.isclose(c, value, rel_tol=1e-6)

    def other(self, op: object, cls: type[Operation], value: float) -> SSAValue | None:
        """The operand of binary `op` (of class `cls`) that is not the constant `value`."""
        if not isinstance(op, cls):
            return None
        a, b = op.operands
        return b if self.near(a, value) else a if self.near(b, value) else None

    @staticmethod
    def factors(v: SSAValue) -> list[SSAValue]:
        """The factors of a product of multiplies ending in `v`."""
        op = v.owner
        return [f for o in op.operands for f in FuseGelu.factors(o)] if isinstance(op, MulOp) else [v]

    def is_cube(self, v: SSAValue, x: SSAValue) -> bool:
        op = v.owner
        return (isinstance(op, PowOp) and op.operands[0] is x and self.near(op.operands[1], 3.0)) or \
            (isinstance(op, MulOp) and sorted(map(id, self.factors(v))) == [id(x)] * 3)

    def form(self, s: SSAValue, x: SSAValue) -> type[Operation] | None:
        """GeluOp or GeluTanhOp when `s` is 1 + erf(x / sqrt 2) or 1 + tanh(...) of x."""
        t = self.other(s.owner, AddOp, 1.0)
        u = t.owner.operands[0] if t is not None and isinstance(t.owner, (ErfOp, TanhOp)) else None
        if u is None:
            return None
        if isinstance(t.owner, ErfOp):  # type: ignore[union-attr]
            d = u.owner
            halved = isinstance(d, DivOp) and d.operands[0] is x and self.near(d.operands[1], math.sqrt(2.0))
            return GeluOp if halved or self.other(d, MulOp, math.sqrt(0.5)) is x else None
        inner = self.other(u.owner, MulOp, math.sqrt(2.0 / math.pi))
        if inner is None or not isinstance(inner.owner, AddOp) or x not in inner.owner.operands:
            return None
        w = inner.owner.operands[1] if inner.owner.operands[0] is x else inner.owner.operands[0]
        cube = self.other(w.owner, MulOp, 0.044715)
        return GeluTanhOp if cube is not None and self.is_cube(cube, x) else None

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MulOp, rewriter: PatternRewriter) -> None:
        fs = self.factors(op.result)
        half = [f for f in fs if self.near(f, 0.5)]
        if len(fs) != 3 or len(half) != 1:
            return
        a, b = [f for f in fs if f is not half[0]]
        for x, s in ((a, b), (b, a)):
            cls = self.form(s, x) if x.type == op.result.type else None
            if cls is not None:
                rewriter.replace(op, _at(cls(x, op.result.type), op.location))  # type: ignore[call-arg]
                return


class StableVariance(RewritePattern):
    """mean(x*x) - mean(x)^2 -> mean((x - mean(x))^2) (the conditions under Algorithm)."""

    def __init__(self, constants: ConstantReader):
        self.constants = constants

    def square_of(self, v: SSAValue) -> SSAValue | None:
        """y when `v` is y * y or pow(y, 2)."""
        op = v.owner
        if isinstance(op, MulOp) and op.operands[0] is op.operands[1]:
            return op.operands[0]
        if isinstance(op, PowOp) and self.constants.scalar(op.operands[1]) == 2.0:
            return op.operands[0]
        return None

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SubOp, rewriter: PatternRewriter) -> None:
        ex2, e2x = op.lhs.owner, op.rhs
        m = self.square_of(e2x)
        x = self.square_of(ex2.input) if isinstance(ex2, ReduceMeanOp) else None
        mean = m.owner if m is not None else None
        if x is None or not isinstance(ex2, ReduceMeanOp) or not isinstance(mean, ReduceMeanOp) \
                or mean.input is not x or not ex2.keepdims.value.data or not mean.keepdims.value.data \
                or ints(mean.axes, ()) != ints(ex2.axes, ()) or op.result.type != ex2.result.type:
            return
        d = _at(SubOp(x, m, x.type), op.location)  # type: ignore[arg-type]
        sq = _at(MulOp(d.result, d.result, x.type), op.location)  # type: ignore[arg-type]
        var = _at(ReduceMeanOp(sq.result, ints(ex2.axes, ()), True, ex2.result.type), op.location)  # type: ignore[arg-type]
        rewriter.replace(op, [d, sq, var], [var.result])


def _perm(op: TransposeOp) -> tuple[int, ...]:
    return ints(op.perm, ())


class FoldTransposeChain(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p[q]) (or x when that is the identity)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, TransposeOp):
            return
        p, q = _perm(inner), _perm(op)
        if len(p) != len(q):
            return
        composed = tuple(p[i] for i in q)
        if composed == tuple(range(len(composed))):
            rewriter.replace(op, [], [inner.input])
            return
        new = TransposeOp(inner.input, composed, op.result.type)
        new.location = fused_loc(loc_names(inner.location) + loc_names(op.location))
        rewriter.replace(op, new)


class FoldIdentityTranspose(RewritePattern):
    """transpose(x) with the identity permutation -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        perm = _perm(op)
        if perm != tuple(range(len(perm))) or op.input.type != op.result.type:
            return
        rewriter.replace(op, [], [op.input])


class TransposeOfUnitDimsToReshape(RewritePattern):
    """A transpose that only moves size-1 dims (the others keep their order) -> reshape."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        perm, shape = _perm(op), shape_of(op.input)
        if perm == tuple(range(len(perm))) or len(perm) != len(shape):
            return
        moved = [d for d in perm if shape[d] != 1]
        if moved != sorted(moved):
            return  # real data movement
        rewriter.replace(op, _at(ReshapeOp(op.input, op.result.type), op.location))


@dataclass(frozen=True)
class Canonicalize(ModulePass):
    """Graph-level canonicalisation (neutral elements, transpose/reshape chains, gemm scaling, matmul ranks).

    See the module docstring for the patterns. Reads weight values (for x*1 and x+0
    with a weight constant) from the module's weight store. No options."""

    name = "npu-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        planted = [FaultyReluForTests()] if os.environ.get("NPU_TEST_FAULT") == "relu-identity" else []
        constants = ConstantReader(op, self.name)
        PatternWalker(GreedyRewritePatternApplier([
            FoldReshapeChain(), FoldIdentityReshape(), FoldNeutralElement(constants),
            FoldTransposeChain(), FoldIdentityTranspose(), TransposeOfUnitDimsToReshape(),
            GemmScalingToEpilogue(), MatmulTo2D(), DecomposeAggregate(), ElementwiseBeforeReshape(),
            FuseGelu(constants), StableVariance(constants), *planted])).rewrite_module(op)


class FaultyReluForTests(RewritePattern):
    """TEST ONLY, never on unless `NPU_TEST_FAULT=relu-identity`: a wrong rewrite
    (relu(x) -> x) that `npu-bisect`'s test must find by name."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, ReluOp):
            rewriter.replace(op, [], [op.operands[0]])

"""`npu-bn-fold`: fold inference BatchNorm into the convolution in front of it (or into
a per-channel multiply-add when there is none; a positive scale then moves through a
ReLU into the conv after it).

`batchnorm(conv2d(x, W, b), ...)` becomes one conv2d with rescaled weight and bias
only when: the batchnorm's input is an `npu_graph.conv2d` result whose only user is
that batchnorm, the conv's weight (and bias, if any) and the four batchnorm
parameters are `npu_graph.constant`s whose data is available, and the channel
counts agree. A batchnorm that cannot fold (its input is a concat, a pool, a graph
input, a shared conv, ...) but has constant parameters becomes two elementwise ops
that fuse with their neighbours (one with parameters not constant stays a vector op).

Assumes graph-level IR. The original weights stay in the store (other ops may
share them); constants left without users are removed. The fold into a conv is
also npu-fuse's `conv-bn` rule. Options: `conv=false` never folds into a conv.

Algorithm
---------
`batchnorm(conv2d(x, W, b), scale, bias, mean, var)` with y = x * mul + offset per
output channel (`BatchNormOp.folded`: mul = scale / sqrt(var + epsilon),
offset = bias - mean * mul) becomes one

    conv2d(x, W * mul[:, None, None, None], b * mul + offset)

with the conv's strides, pads, dilations and group (each output channel of a
grouped or depthwise conv still has its own filter), located at both ONNX nodes.
The new weight and bias are computed in float64 and stored as float32 constants:
new weights in the module's weight store (`add_weight`), or inline when tiny.

A batchnorm that does not fold into a conv becomes the same per-channel affine map
as two elementwise ops, `add(mul(x, mul), offset)` with [C, 1, ...] constants, so it
fuses into the elementwise chain or the conv epilogue around it instead of
being a vector kernel of its own (DenseNet's pre-activation BN-ReLU).

`ScaleThroughRelu` then moves such a multiply past a ReLU into the conv reading it
(forward scale folding, as TVM's FoldScaleAxis): with a > 0 per input channel,
relu(x * a + o) = relu(x + o / a) * a, and the conv is linear in its input, so

    conv2d(relu(x * a + o), W, b) = conv2d(relu(x + o / a), W * a[None, :, None, None], b)

(the conv's zero padding stays zero: it pads the ReLU's output). The conv's input
prologue loses a vector pass per element. Only when every a is > 0, the multiply,
add and ReLU results each have one use, the conv has group 1 and constant weights,
and a and o are [C, 1, ...] (or broadcast) constants over the conv's C input channels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from lowering.graph.constants import ConstantReader, make_constant, weight_hint
from lowering.instrument import PatternWalker
from npu_dialects.dtypes import element_type, np_dtype
from npu_dialects.files import release_pages
from npu_dialects.graph import AddOp, BatchNormOp, Conv2dOp, MulOp, ReluOp, shape_of
from npu_dialects.locs import fused_loc, loc_names
from npu_dialects.recipe import Derived, leaves
from npu_dialects.weights import note_reads


class FoldBatchNorm(RewritePattern):
    """batchnorm(conv2d(x, W, b)) -> conv2d(x, W * mul, b * mul + offset); any other
    batchnorm with constant parameters -> x * mul + offset (per channel)."""

    def __init__(self, module: ModuleOp, constants: ConstantReader, conv: bool = True, affine: bool = True):
        self.module = module
        self.constants = constants
        self.conv, self.affine = conv, affine

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BatchNormOp, rewriter: PatternRewriter) -> None:
        params = [op.scale, op.bias, op.mean, op.var]
        if any(ConstantReader.constant_op(v) is None for v in params):
            return  # cheap check before any weight is read
        p = [a for a in (self.constants.derived(v) for v in params) if a is not None]
        if len(p) != len(params):
            return
        folded = BatchNormOp.folded(dict(op.attributes), *[a.astype(np.float64) for a in p])  # (with recipes)
        mul, offset = cast(tuple[Derived, Derived], folded)
        if not (self.conv and self.into_conv(op, mul, offset, rewriter)) and self.affine:
            self.into_affine(op, mul, offset, rewriter)

    def into_conv(self, op: BatchNormOp, mul: Derived, offset: Derived, rewriter: PatternRewriter) -> bool:
        conv = op.input.owner
        if not isinstance(conv, Conv2dOp) or not conv.result.has_one_use():
            return False
        if conv.parent_block() is not op.parent_block():
            return False
        if ConstantReader.constant_op(conv.weight) is None:
            return False
        if conv.bias is not None and ConstantReader.constant_op(conv.bias) is None:
            return False
        w = self.constants.derived(conv.weight)
        b = self.constants.derived(conv.bias) if conv.bias is not None else None
        if w is None or (conv.bias is not None and b is None):
            return False
        channels = shape_of(conv.result)[1]
        if w.shape[0] != channels or mul.shape != (channels,):
            return False
        ty = element_type(op.result)  # (the conv's float type: its weight's and bias's)
        new_w = Derived.apply("mul_rounded", w, mul.reshape(-1, 1, 1, 1), dtype=str(np_dtype(ty)))
        new_b = (b.astype(np.float64) if b is not None else Derived.const(np.zeros(channels))) * mul + offset

        loc = fused_loc(loc_names(conv.location) + loc_names(op.location))
        base = ConstantReader.weight_key(conv.weight, "conv")
        w_const = make_constant(self.module, new_w, weight_hint(conv.location, "bn_weight", base), loc, element_type=ty)
        b_const = make_constant(self.module, new_b, weight_hint(conv.location, "bn_bias", base), loc, element_type=ty)
        new_conv = conv.with_operands(conv.input, w_const.result, b_const.result, op.result.type)
        new_conv.location = loc
        rewriter.insert([w_const, b_const], InsertPoint.before(op))  # (replace would name them like the result)
        rewriter.replace(op, new_conv)
        rewriter.erase(conv)
        release_pages(w.value)  # (the original stays in the file: read again only if used again)
        return True

    def into_affine(self, op: BatchNormOp, mul: Derived, offset: Derived, rewriter: PatternRewriter) -> None:
        x = shape_of(op.input)
        bshape = (x[1],) + (1,) * (len(x) - 2)
        loc = op.location
        ty = element_type(op.result)
        m_const = make_constant(self.module, mul.reshape(bshape), weight_hint(loc, "bn_mul", "bn"), loc, element_type=ty)
        o_const = make_constant(self.module, offset.reshape(bshape), weight_hint(loc, "bn_offset", "bn"), loc,
                                element_type=ty)
        scaled = MulOp(op.input, m_const.result, op.result.type)
        shifted = AddOp(scaled.result, o_const.result, op.result.type)
        scaled.location = shifted.location = loc
        rewriter.insert([m_const, o_const, scaled], InsertPoint.before(op))
        rewriter.replace(op, shifted)


class MergeAffine(RewritePattern):
    """Consecutive multiplies and adds by constants merge: mul(mul(u, c1), c2) ->
    mul(u, c1 * c2), add(add(u, c1), c2) -> add(u, c1 + c2), mul(add(u, c1), c2) ->
    add(mul(u, c2), c1 * c2) (a BatchNorm followed by a Caffe-style scale layer becomes
    one multiply-add). Only when the inner op's result has no other use, the constants'
    data is available and they broadcast into u without changing its shape. The
    float result may differ from the unmerged one in the last bits (rounding)."""

    def __init__(self, module: ModuleOp, constants: ConstantReader):
        self.module, self.constants = module, constants

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, (MulOp, AddOp)):
            return
        t = op.result.type
        for k in (0, 1):
            inner, c2v = op.operands[k].owner, op.operands[1 - k]
            if not isinstance(inner, (MulOp, AddOp)) or not inner.results[0].has_one_use():
                continue
            if isinstance(op, AddOp) and isinstance(inner, MulOp):
                continue  # add(mul(u, m), a) is the merged form
            c2 = self.constants.derived(c2v)  # (the merged constants keep recipes)
            for j in (0, 1):
                u, c1v = inner.operands[j], inner.operands[1 - j]
                c1 = self.constants.derived(c1v)
                if c1 is None or c2 is None or u.type != t or inner.results[0].type != t:
                    continue
                try:
                    both = np.broadcast_shapes(c1.shape, c2.shape)
                    if np.broadcast_shapes(both, tuple(shape_of(u))) != tuple(shape_of(u)):
                        continue
                except ValueError:
                    continue
                c1, c2 = c1.astype(np.float64), c2.astype(np.float64)
                loc = fused_loc(loc_names(inner.location) + loc_names(op.location))
                hint = weight_hint(inner.location, "merged", "affine")
                ty = element_type(u)
                if isinstance(op, MulOp) and isinstance(inner, MulOp):
                    c = make_constant(self.module, c1 * c2, hint, loc, element_type=ty)
                    new = [c, MulOp(u, c.result, t)]
                elif isinstance(op, AddOp):
                    c = make_constant(self.module, c1 + c2, hint, loc, element_type=ty)
                    new = [c, AddOp(u, c.result, t)]
                else:  # mul(add(u, c1), c2)
                    m = make_constant(self.module, Derived.apply("broadcast_to", c2, shape=list(both)), hint + "_mul", loc,
                                      element_type=ty)
                    a = make_constant(self.module, c1 * c2, hint + "_add", loc, element_type=ty)
                    mul = MulOp(u, m.result, t)
                    new = [m, a, mul, AddOp(mul.result, a.result, t)]
                for o in new[1:]:
                    o.location = loc
                rewriter.replace(op, new, [new[-1].results[0]])
                rewriter.erase(inner)
                return


class ScaleThroughRelu(RewritePattern):
    """conv2d(relu(add(mul(x, a), o)), W, b) with every a > 0 -> conv2d(relu(add(x, o / a)),
    W * a, b) (see the module docstring for the conditions)."""

    def __init__(self, module: ModuleOp, constants: ConstantReader):
        self.module, self.constants = module, constants

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dOp, rewriter: PatternRewriter) -> None:
        relu = op.input.owner
        if not isinstance(relu, ReluOp) or op.params["group"] != 1 or ConstantReader.constant_op(op.weight) is None:
            return
        add = relu.input.owner
        if not isinstance(add, AddOp):
            return
        for k in (0, 1):
            mul, ov = add.operands[k].owner, add.operands[1 - k]
            if isinstance(mul, MulOp) and all(r.has_one_use() for r in (mul.result, add.result, relu.result)):
                self.fold(op, relu, add, mul, ov, rewriter)
                return

    def fold(self, op: Conv2dOp, relu: ReluOp, add: AddOp, mul: MulOp, ov: SSAValue,
             rewriter: PatternRewriter) -> None:
        x = shape_of(op.input)
        w = self.constants.derived(op.weight)  # (the new weight and shift keep recipes)
        for j in (0, 1):
            u, av = mul.operands[j], mul.operands[1 - j]
            a, o = (self.constants.per_channel_derived(c, x[1], len(x)) for c in (av, ov))
            if a is None or o is None or w is None or u.type != mul.result.type:
                continue
            note_reads(self.module, leaves([a.expr]))  # (the fold depends on the scale's signs)
            if not (a.value > 0).all():
                continue
            loc = fused_loc(loc_names(mul.location) + loc_names(op.location))
            bshape = (x[1],) + (1,) * (len(x) - 2)
            a, o = a.astype(np.float64), o.astype(np.float64)
            o_const = make_constant(self.module, (o / a).reshape(bshape), weight_hint(add.location, "shift", "bn"),
                                    add.location, element_type=element_type(add.result))
            w_const = make_constant(self.module, w.astype(np.float64) * a.reshape(1, -1, 1, 1),
                                    weight_hint(op.location, "scaled_weight",
                                                ConstantReader.weight_key(op.weight, "conv")), loc,
                                    element_type=element_type(op.weight))
            shifted = AddOp(u, o_const.result, add.result.type)
            new_relu = ReluOp(shifted.result, relu.result.type)
            conv = op.with_operands(new_relu.result, w_const.result, op.bias)
            shifted.location, new_relu.location, conv.location = add.location, relu.location, loc
            rewriter.insert([o_const, shifted, new_relu, w_const], InsertPoint.before(op))
            rewriter.replace(op, conv)
            for dead in (relu, add, mul):
                rewriter.erase(dead)
            release_pages(w.value)
            return


def fold_batchnorms(module: ModuleOp, pass_name: str, conv: bool = True, affine: bool = True) -> None:
    """Apply FoldBatchNorm (into convs, into multiply-adds, or both) over the module, then
    merge the multiply-adds by constants that follow each other (MergeAffine) and move
    positive scales through ReLUs into the convs after them (ScaleThroughRelu)."""
    constants = ConstantReader(module, pass_name)
    pattern = FoldBatchNorm(module, constants, conv=conv, affine=affine)
    PatternWalker(GreedyRewritePatternApplier([pattern])).rewrite_module(module)
    if affine:
        PatternWalker(GreedyRewritePatternApplier([MergeAffine(module, constants)])).rewrite_module(module)
    if affine and conv:
        PatternWalker(GreedyRewritePatternApplier([ScaleThroughRelu(module, constants)])).rewrite_module(module)


@dataclass(frozen=True)
class BnFold(ModulePass):
    """Fold batchnorm into the conv2d in front of it, else into a per-channel multiply-add
    (whose positive scale moves through a ReLU into the conv after it).

    Into the conv when its weights and parameters are constant and the conv is used once;
    see the module docstring for the conditions.

    Options: `conv=false` never folds into a conv (npu-fuse's `conv-bn` rule switched
    off): every batchnorm with constant parameters becomes the multiply-add."""

    name = "npu-bn-fold"
    conv: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_batchnorms(op, self.name, conv=self.conv)

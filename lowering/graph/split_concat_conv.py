"""`npu-split-concat-conv`: a conv over a concat whose last part is computed from the
others, planned on one core, becomes two summed convs over the parts, so the big one
runs on an idle core while the last part is computed (DenseNet's dense layers: the
conv over X_l = concat(X_{l-1}, f(X_{l-1})) need not wait for f but for its 32
channels; the small conv over them starts its sum from the big one's output,
npu-fuse's residual `init`).

Only when: the conv has group 1 and constant weights; its input is the concat along
dim 1 through elementwise ops used once with per-channel constant operands; the last
operand depends on an earlier one (within `DEPENDENCE_DEPTH` producers), which hold at
least as many channels (all matched on the unsplit graph); and a trial plan of it
(`TRIAL_PASSES` on a copy, default options, unobserved) puts the conv in a kernel on
one core (with all cores busy, say in a strip group, the split only adds the partial
sums' traffic). A split's convs are not split again. Assumes graph-level IR after
npu-bn-fold. No options.

Algorithm
---------
conv(P(concat(a_1, ..., a_n, b)), W, bias) with P the elementwise chain becomes

    add(conv(P_b(b), W[:, Cb]), conv(P_a(concat(a_1, ..., a_n)), W[:, Ca], bias))

where Ca, Cb are the channel ranges of the two parts and P_a, P_b the chain with its
per-channel constants sliced to them (the concat of the a_i is dropped for n = 1).
The conv is linear in its input channels, so the sum is the original conv up to
rounding; zero padding pads each part. The concat itself stays when anything else
reads it (DenseNet's next layer does). The trial marks its copy of each conv by
location (`TRIAL_MARK`: fusion keeps locations) and reads the `parts` of the kernels
holding them; npu-tile's searches and npu-layer-group's strip plans are shared with the
module's (`share_searches`, `share_strips`), so the compile after it searches only the
kernels and strip runs the split changed.

What the trial costs beyond that sharing is mostly the tile searches of the kernels of
the convs it then splits, and no cheaper computation gives the same answer: a kernel's
`parts` is `best_parts` of the tiling its (hill-climbing) search picks, which a bound
on the cost model does not settle, and npu-layer-group's program compares every
kernel's searched `predicted_cycles` with the groups it may join, which can change the
cores a conv runs on either way (a one-core conv into a strip group on two, a conv
into a one-core layer group). Building the trial's IR is a small share of its time.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from lowering.errors import CompileError
from lowering.graph.constants import ConstantReader, make_constant, weight_hint
from lowering.instrument import PatternWalker, unobserved
from lowering.remarks import silenced
from lowering.tile.layer_group import share_strips
from lowering.tile.tile import share_searches
from npu_dialects.dtypes import element_type
from npu_dialects.graph import AddOp, BinaryOp, ConcatOp, Conv2dOp, UnaryOp, attr_int, shape_of
from npu_dialects.locs import fused_loc, loc_names, name_loc
from npu_dialects.recipe import Derived
from npu_dialects.tile import KernelOp
from npu_dialects.weights import attach_weights, weights_of

DEPENDENCE_DEPTH = 16
"""How many producers back from the concat's last operand the split looks for an
earlier operand (a dense layer is about six ops)."""


def depends_on(v: SSAValue, targets: set[SSAValue], depth: int = DEPENDENCE_DEPTH) -> bool:
    """Whether `v` is computed from one of `targets` within `depth` producers."""
    seen: set[Operation] = set()
    frontier = [v]
    for _ in range(depth):
        nxt: list[SSAValue] = []
        for x in frontier:
            if x in targets:
                return True
            op = x.owner
            if isinstance(op, Operation) and op not in seen:
                seen.add(op)
                nxt.extend(op.operands)
        frontier = nxt
    return any(x in targets for x in frontier)


@dataclass
class Chain:
    """The elementwise ops between the concat and the conv, conv side last, with the
    per-channel constant of each binary op (None for a unary op) and the position of
    the running value among its operands (a `sub` of it from a constant keeps its order)."""

    ops: list[Operation]
    consts: list[Derived | None]
    data: list[int]


@dataclass
class Match:
    """A conv that can split: its concat, the elementwise chain between them, the
    concat's earlier operands and its last, and the conv's weights."""

    cat: ConcatOp
    chain: Chain
    early: list[SSAValue]
    last: SSAValue
    w: Derived


class SplitConcatConv(RewritePattern):
    """conv(P(concat(a..., b))) -> add(conv(P_b(b)), conv(P_a(concat(a...)))) for the
    convs of `todo`, matched (`match`) on the unsplit graph (see the module docstring)."""

    def __init__(self, module: ModuleOp, constants: ConstantReader, todo: dict[Conv2dOp, Match] | None = None):
        self.module, self.constants = module, constants
        self.todo = todo or {}  # the convs to split and their matches (the split's own convs are not in it)

    def chain(self, conv: Conv2dOp, channels: int) -> tuple[ConcatOp, Chain] | None:
        """The concat under the conv's elementwise chain, and the chain."""
        ops: list[Operation] = []
        consts: list[Derived | None] = []
        at: list[int] = []
        v = conv.input
        while not isinstance(v.owner, ConcatOp):
            op = v.owner
            if not v.has_one_use() or not isinstance(op, UnaryOp | BinaryOp):
                return None
            if isinstance(op, UnaryOp):
                ops.append(op)
                consts.append(None)
                at.append(0)
                v = op.operands[0]
                continue
            data = next((i for i, x in enumerate(op.operands) if x.type == v.type), None)
            if data is None:
                return None
            rank = len(shape_of(v))
            c = self.constants.per_channel_derived(op.operands[1 - data], channels, rank)
            if c is None:
                return None
            c = c.reshape((channels,) + (1,) * (rank - 2))
            ops.append(op)
            consts.append(c)
            at.append(data)
            v = op.operands[data]
        return v.owner, Chain(ops[::-1], consts[::-1], at[::-1])

    def match(self, op: Conv2dOp) -> Match | None:
        """The split `op` admits by its structure (the conditions of the module docstring
        but the trial's), else None."""
        x = shape_of(op.input)
        if len(x) != 4 or op.params["group"] != 1 or ConstantReader.constant_op(op.weight) is None:
            return None
        found = self.chain(op, x[1])
        if found is None:
            return None
        cat, chain = found
        if attr_int(dict(cat.attributes), "axis", 0) % 4 != 1 or len(cat.inputs) < 2:
            return None
        *early, last = list(cat.inputs)
        cb = shape_of(last)[1]
        if x[1] - cb < cb or not depends_on(last, set(early)):
            return None
        w = self.constants.derived(op.weight)  # (with its recipe: level 0 rebuilds the parts)
        return Match(cat, chain, early, last, w) if w is not None else None

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Conv2dOp, rewriter: PatternRewriter) -> None:
        m = self.todo.pop(op, None)
        if m is not None:
            self.split(op, m, rewriter)

    def part(self, op: Conv2dOp, src: SSAValue, chain: Chain, w: Derived, lo: int, hi: int,
             bias: SSAValue | None, new: list[Operation]) -> SSAValue:
        """The conv over input channels [lo, hi) of `src` (its chain's constants sliced)."""
        shape = shape_of(src)
        t = TensorType(op.result.type.element_type, list(shape))  # type: ignore[attr-defined]
        v = src
        for o, c, at in zip(chain.ops, chain.consts, chain.data):
            operands = [v]
            if c is not None:
                k = make_constant(self.module, Derived.apply("slice_axis", c, axis=0, start=lo, stop=hi),
                                  weight_hint(o.location, "part"), o.location, element_type=t.element_type)
                new.append(k)
                operands.insert(1 - at, k.result)
            step = type(o).create(operands=operands, result_types=[t], attributes=dict(o.attributes))
            step.location = o.location
            new.append(step)
            v = step.results[0]
        wk = make_constant(self.module, Derived.apply("slice_axis", w, axis=1, start=lo, stop=hi),
                           weight_hint(op.location, "part", ConstantReader.weight_key(op.weight, "conv")), op.location,
                           element_type=element_type(op.weight))
        conv = op.with_operands(v, wk.result, bias)
        conv.location = op.location
        new += [wk, conv]
        return conv.result

    def split(self, op: Conv2dOp, m: Match, rewriter: PatternRewriter) -> None:
        cat, chain, early, last, w = m.cat, m.chain, m.early, m.last, m.w
        new: list[Operation] = []
        ca = sum(shape_of(v)[1] for v in early)
        a = early[0]
        if len(early) > 1:
            s = shape_of(cat.result)
            head = ConcatOp(early, 1, TensorType(op.result.type.element_type, [s[0], ca, *s[2:]]))  # type: ignore
            head.location = cat.location
            new.append(head)
            a = head.result
        # (the small conv first: npu-fuse gives the add to it, starting its sum from the big one's output)
        small = self.part(op, last, chain, w, ca, w.shape[1], None, new)
        big = self.part(op, a, chain, w, 0, ca, op.bias, new)
        total = AddOp(small, big, op.result.type)
        total.location = fused_loc(loc_names(op.location))
        rewriter.insert(new, InsertPoint.before(op))
        rewriter.replace(op, total)
        for o in reversed(chain.ops):
            rewriter.erase(o)


@dataclass(frozen=True)
class SplitConcatConvPass(ModulePass):
    """Split a conv over a concat whose last part is computed from the others into two
    summed convs (see the module docstring). No options."""

    name = "npu-split-concat-conv"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = SplitConcatConv(op, ConstantReader(op, self.name))
        convs = [o for o in op.walk() if isinstance(o, Conv2dOp)]
        found = {c: m for c in convs if (m := pattern.match(c)) is not None}  # (on the unsplit graph)
        if not found:
            return
        pattern.todo = {convs[i]: found[convs[i]] for i in one_core_convs(ctx, op) if convs[i] in found}
        PatternWalker(GreedyRewritePatternApplier([pattern])).rewrite_module(op)


TRIAL_MARK = "npu-split-concat-conv trial conv "
"""The location the trial gives its copy of each conv (then its position)."""
TRIAL_PASSES = ("npu-fuse", "npu-split-rows", "npu-tile", "npu-layer-group")
"""The passes of the trial plan (default options; npu-fuse reads the rules the module
disables)."""


def one_core_convs(ctx: Context, module: ModuleOp) -> set[int]:
    """The convs (by position among the module's convs) that a trial plan of the
    unsplit graph (a copy through `TRIAL_PASSES`) puts in kernels running on one core;
    none when it fails (the compile itself reports why)."""
    from lowering import get_all_passes  # (the registry imports this module)

    trial = module.clone()
    share_searches(module, trial)
    share_strips(module, trial)
    for i, conv in enumerate(o for o in trial.walk() if isinstance(o, Conv2dOp)):
        conv.location = name_loc(f"{TRIAL_MARK}{i}")  # (locations survive fusion; ops may be rebuilt)
    attach_weights(trial, dict(weights_of(module)))
    registry = get_all_passes()
    try:
        with unobserved(), silenced():
            for name in TRIAL_PASSES:
                registry[name]()().apply(ctx, trial)
    except CompileError:
        return set()
    return {int(n[len(TRIAL_MARK):]) for k in trial.walk() if isinstance(k, KernelOp) and k.parts.value.data == 1
            for c in k.body.walk() if isinstance(c, Conv2dOp) for n in loc_names(c.location)
            if n.startswith(TRIAL_MARK)}

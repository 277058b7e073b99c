"""`npu-tile-loops` for strip groups: a kernel of kind `group` with loops ["h"] and a
`#npu_tile.strip` plan becomes one `npu_tile.strip_loop` (see `npu_dialects/tile/`).

The plan's decisions (rows per strip, line buffers) give the rows every value of the
group holds per strip (`recorded_plan`: the geometry of `lowering/tile/strip_plan.py`;
a plan it does not reproduce is a TilingError). The loop's body spells them out: the
input's rows as an `npu_tile.load` at A*s + c0 with its halo (padded outside the
tensor as its first readers pad), each side input's rows as a load, the graph ops on
strip-shaped tensors, an `npu_tile.tee` of the rows [A*s, A*s + A) of each inner value
the group also stores (its kernel yields it: the loop's results after the first), and
the `npu_tile.store` of the output's rows at T*s. The
group's whole-tensor ops move into the loop's `group` region, for the analysis that
lowers it (`lowering/buffer/strip_patterns.py`).

Algorithm
---------
Per value v with rows (A, c0, R) (`StripGeometry.rows`): a windowed op (conv, pool)
reads its input's rows [top, R - bottom) (`crop`) through an `npu_graph.slice`, padded
along W only; an elementwise op reading fewer rows of an inner value than it holds
reads them through a slice (`local`). A line-buffered value's producer computes the A
new rows only; `npu_tile.line_buffer` stands for the R rows the strip holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

from lowering.errors import CompileError
from lowering.tile.strip_plan import (
    WINDOWED,
    StripGeometry,
    computed_shape,
    recorded_plan,
    side_inputs,
    side_shape,
    stored_shape,
    strip_shape,
)
from lowering.tile.tile_search import TilingError
from npu_dialects.arch import Arch
from npu_dialects.dtypes import element_type
from npu_dialects.graph import ElementwiseOp, SliceOp, int_array, shape_of
from npu_dialects.tile import KernelKind, KernelOp, LineBufferOp, LoadOp, StoreOp, StripLoopOp, TeeOp, TileYieldOp


def tensor(sizes: Sequence[int], like: SSAValue) -> TensorType:
    """A strip tensor of `sizes` holding the elements of value `like`."""
    return TensorType(element_type(like), list(sizes))


def rows_window(rank: int, step: int, first: int) -> dict:
    """`npu_tile.load`/`store` arguments of rows [step*s + first, ...) along dim -2."""
    return dict(view=None, coefs=[0] * (rank - 2) + [step, 0], consts=[0] * (rank - 2) + [first, 0])


class StripBody:
    """Builds the body of one strip group's `npu_tile.strip_loop`."""

    def __init__(self, kernel: KernelOp, g: StripGeometry, block: Block):
        self.kernel, self.g, self.block = kernel, g, block
        self.vmap: dict[SSAValue, SSAValue] = {}

    def add(self, op: Operation, loc_of: Operation | None = None) -> SSAValue:
        op.location = (loc_of or self.kernel).location
        self.block.add_op(op)
        return op.results[0]

    def load(self, src: SSAValue, rows: tuple[int, int, int], sizes: Sequence[int], pad: float) -> SSAValue:
        a, c0, _ = rows
        return self.add(LoadOp(src, self.block.args, sizes=sizes, pad_value=pad, **rows_window(len(sizes), a, c0)))

    def held(self, v: SSAValue, new: SSAValue) -> SSAValue:
        """`new` (the rows a strip computes of v), as the rows it holds (line buffers)."""
        return self.add(LineBufferOp(new, tensor(strip_shape(self.g, v), v))) if v in self.g.rolled else new

    def rows_of(self, v: SSAValue, first: int, n: int) -> SSAValue:
        """Rows [first, first + n) of v's strip tensor (v itself when that is all of them)."""
        t = self.vmap[v]
        s = list(shape_of(t))
        if (first, n) == (0, s[-2]):
            return t
        ends = s[:-2] + [first + n, s[-1]]
        s[-2] = n
        return self.add(SliceOp(t, [0] * (len(s) - 2) + [first, 0], ends, [1] * len(s), tensor(s, t)))

    def operands(self, op: Operation) -> list[SSAValue]:
        """`op`'s operands in the strip: loaded rows, row slices, strip tensors, whole constants."""
        g, sides = self.g, side_inputs(op, self.g, {})
        r = op.results[0]
        args = []
        for i, o in enumerate(op.operands):
            if i in sides:
                pad = op.outside_value(i) if isinstance(op, ElementwiseOp) else 0.0  # (a divisor: 1)
                args.append(self.load(o, g.computed(r), side_shape(g, op, o), pad))
            elif o not in g.rows:
                args.append(o)  # (a constant: loaded once, whole)
            elif isinstance(op, WINDOWED) and i == 0:
                top, bottom = g.crop[op]
                args.append(self.rows_of(o, top, g.rows[o][2] - top - bottom))
            elif (op, o) in g.local:
                args.append(self.rows_of(o, g.local[(op, o)], g.computed(r)[2]))
            else:
                args.append(self.vmap[o])
        return args

    def build(self, ops: Sequence[Operation]) -> None:
        g, x = self.g, self.g.x
        self.vmap[x] = self.held(x, self.load(x, g.computed(x), computed_shape(g, x), g.x_pad))
        for op in ops:
            r = op.results[0]
            attrs = dict(op.attributes)
            if isinstance(op, WINDOWED):  # (padded along W only: the strip holds the rows it reads)
                p = op.params["pads"]
                attrs["pads"] = int_array((0, p[1], 0, p[3]))
            new = type(op).create(operands=self.operands(op), result_types=[tensor(computed_shape(g, r), r)],
                                  attributes=attrs, properties=dict(op.properties))
            self.vmap[r] = self.held(r, self.add(new, op))
        for i, v in enumerate(g.stored, 1):  # (its rows [A*s, A*s + A): from row -c0 of its strip)
            a, c0, _ = g.rows[v]
            sizes = stored_shape(g, v)
            window = rows_window(len(sizes), a, 0)
            tee = TeeOp(self.rows_of(v, -c0, a), i, self.block.args, view=shape_of(v), sizes=sizes,
                        coefs=window["coefs"], consts=window["consts"])
            tee.location = v.owner.location if isinstance(v.owner, Operation) else self.kernel.location
            self.block.add_op(tee)
        y = ops[-1].results[0]
        sizes = strip_shape(g, y)
        store = StoreOp(self.vmap[y], self.block.args, sizes=sizes, **rows_window(len(sizes), g.T, 0))
        store.location = self.kernel.location
        self.block.add_op(store)


def materialize_strips(kernel: KernelOp, arch: Arch) -> None:
    """Rewrite strip group `kernel`'s body into its `npu_tile.strip_loop` (TilingError if
    its plan does not fit its ops). The loop's results are the last op's, then the inner
    values the kernel also yields; the kernel yields them in its own order."""
    ops = kernel.graph_ops()
    yields = list(kernel.yield_op.values)
    y = ops[-1].results[0]
    if y not in yields or len(set(yields)) != len(yields):
        raise TilingError("a strip group yields its last op's result, and each other value once")
    stored = [v for v in yields if v is not y]
    g = recorded_plan(ops, kernel.plan, arch, stored).geometry
    body = Block(arg_types=[IndexType()])
    body.args[0].name_hint = "s"
    StripBody(kernel, g, body).build(ops)
    kernel.body.block.erase_op(kernel.yield_op)
    group = Block()
    for op in ops:
        op.detach()
        group.add_op(op)
    if stored:
        group.add_op(TileYieldOp(y, *stored))
    plan = kernel.plan
    assert plan is not None  # (recorded_plan checked)
    loop = StripLoopOp(plan, [v.type for v in (y, *stored)], Region(body), Region(group))  # type: ignore[arg-type]
    loop.location = kernel.location
    order = [y, *stored]
    kernel.body.block.add_ops([loop, TileYieldOp(*(loop.outs[order.index(v)] for v in yields))])


def strip_loop_of(kernel: KernelOp) -> StripLoopOp | None:
    """The kernel's strip loop, if `npu-tile-loops` materialised it."""
    first = kernel.body.block.first_op
    return first if isinstance(first, StripLoopOp) else None


def materialize_strip_group(kernel: KernelOp, arch: Arch, pass_name: str) -> bool:
    """`npu-tile-loops` on a strip group not yet in loop form (False for any other
    kernel); a CompileError naming the kernel when its plan does not fit its ops."""
    if kernel.kind.data != KernelKind.GROUP or kernel.loop_names != ["h"] or strip_loop_of(kernel) is not None:
        return False
    try:
        materialize_strips(kernel, arch)
    except TilingError as e:
        raise CompileError(pass_name, f"kernel '{kernel.kernel.data}': {e}", kernel) from None
    return True

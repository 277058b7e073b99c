"""`npu_tile`: a kernel split into tiles that fit a core's SRAM.

`npu_tile.kernel` records the tiling decision as attributes (the plan, kept for
reports: the loop nest, tile size and trip count per loop, double buffering, SRAM
bytes, predicted cycles). Right after `npu-tile` its body holds the kernel's graph
ops on whole tensors; `npu-tile-loops` applies the plan and rewrites the body into
an explicit `npu_tile.loop`: per tile, `npu_tile.load` slices of the inputs (offset
per dim = sum(coef * tile index) + const, a static size, padding outside the
tensor), the graph ops on tile-shaped tensors, `npu_tile.reduce` (the anchor's
result summed over the reduction loop; ops after it run once per output tile) and
`npu_tile.store` of the result slice (clipped at the tensor's edge). Bufferization
turns those ops into `npu_dma` + `npu_compute` without re-deriving anything.

The attributes (kernel kinds, strip and group plans) are in `plans.py`; this module
holds the ops and the `NpuTile` dialect.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import TYPE_CHECKING, ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoMemoryEffect, NoTerminator, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from npu_dialects.checks import arch_at, check_at_least, check_part_cycles, check_within
from npu_dialects.dtypes import element_type, nbytes
from npu_dialects.graph import int_array, ints
from npu_dialects.tile.plans import GroupPlanAttr, KernelKind, KernelKindAttr, StripPlanAttr


def loop_names_attr(names: Sequence[str]) -> ArrayAttr[StringAttr]:
    return ArrayAttr([StringAttr(n) for n in names])


class LoopNest:
    """Accessors of a loop nest held as `loops` (`["m", "n", "k"]`), `tile` and `grid` (shared
    by `npu_tile.kernel`, which records the plan, and `npu_tile.loop`, which applies it)."""

    if TYPE_CHECKING:  # (the ops define them; irdl must not see them on the mixin)
        loops: ArrayAttr[StringAttr]
        tile: DenseArrayBase
        grid: DenseArrayBase

    @property
    def loop_names(self) -> list[str]:
        return [s.data for s in self.loops.data]

    def verify_loop_names(self, what: str) -> None:
        """Loop names are non-empty and unique."""
        names = self.loop_names
        if not all(names) or len(set(names)) != len(names):
            raise VerifyException(f"{what}: loop names must be non-empty and unique, got {names}")

    def verify_positive(self, what: str) -> None:
        """Tile sizes and trip counts are positive."""
        if any(t <= 0 for t in self.tile_sizes) or any(g <= 0 for g in self.trip_counts):
            raise VerifyException(f"{what}: tile sizes {list(self.tile_sizes)} and trip counts "
                                  f"{list(self.trip_counts)} must be positive")

    @property
    def nest(self) -> tuple[list[str], tuple[int, ...], tuple[int, ...]]:
        """(loop names, tile sizes, trip counts)."""
        return self.loop_names, self.tile_sizes, self.trip_counts

    @property
    def tile_sizes(self) -> tuple[int, ...]:
        return ints(self.tile, ())

    @property
    def trip_counts(self) -> tuple[int, ...]:
        return ints(self.grid, ())


def verify_plan(k: "KernelOp") -> None:
    """A kernel's recorded `plan` agrees with its loop nest and body: a strip plan on a
    strip group (loops "h": its rows and strips are the tile and grid, prefetch is
    double_buffer, line_buffer the kernel's), a group plan on a layer group (no loops:
    one offset per body value, every buffer inside `sram`; or loops ["n"], a batch-split
    group: the offsets place one slice's values, which npu-bufferize sizes)."""
    plan, name = k.plan, f"'npu_tile.kernel' {k.kernel.data}"
    if plan is not None and k.kind.data != KernelKind.GROUP:
        raise VerifyException(f"{name}: a plan belongs to a layer group (kind group), not to a kernel of "
                              f"kind {k.kind.data}")
    if k.is_line_buffered and not isinstance(plan, StripPlanAttr):
        raise VerifyException(f"{name}: line_buffer needs a strip plan (#npu_tile.strip)")
    if isinstance(plan, StripPlanAttr):
        got = (k.loop_names, k.tile_sizes, k.trip_counts, k.is_double_buffered, k.is_line_buffered)
        want = (["h"], (plan.rows.data,), (plan.strips.data,), plan.is_prefetched, plan.is_line_buffered)
        if got != want:
            raise VerifyException(f"{name}: plan {plan} does not match loops {got[0]}, tile {list(got[1])}, grid "
                                  f"{list(got[2])}, double_buffer {got[3]}, line_buffer {got[4]}")
        if plan.in_place.data >= len(k.ins):
            raise VerifyException(f"{name}: plan in_place = {plan.in_place.data} names no operand "
                                  f"(the kernel has {len(k.ins)})")
    elif isinstance(plan, GroupPlanAttr):
        ops = k.graph_ops()
        values = [*k.body.block.args, *(op.results[0] for op in ops if op.results)]
        offsets, sram = ints(plan.offsets, ()), plan.sram.data
        if k.loop_names not in ([], ["n"]) or len(offsets) != len(values):
            raise VerifyException(f"{name}: a group plan needs no loops (or batch slices, loops [\"n\"]) and one "
                                  f"offset per body value ({len(values)}), got {len(offsets)}")
        if k.loop_names and k.tile_sizes[0] * k.trip_counts[0] != k.outs[0].type.get_shape()[0]:
            raise VerifyException(f"{name}: {k.trip_counts[0]} batch slices of {k.tile_sizes[0]} do not cover the "
                                  f"batch of its result {k.outs[0].type}")
        for v, o in zip(values, offsets if not k.loop_names else ()):  # (a batch slice's sizes: npu-bufferize)
            if isinstance(v.type, TensorType) and o + nbytes(v.type) > sram:
                raise VerifyException(f"{name}: plan puts a {v.type} at byte {o}, past its sram = {sram}")
        if any(i >= len(ops) for i in ints(plan.in_place, ())):
            raise VerifyException(f"{name}: plan in_place names an op past the body's {len(ops)}")


@irdl_op_definition
class TileYieldOp(IRDLOperation):
    """Terminator of `npu_tile.kernel`: the kernel's results (also the end of a strip
    loop's `group` region that stores more than its last op's result: the values its
    results hold, `StripLoopOp.stored`)."""

    name = "npu_tile.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), NoMemoryEffect())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        parent = self.parent_op()
        if isinstance(parent, StripLoopOp) and self.parent_region() is parent.group:
            return  # (the values a strip loop stores, `StripLoopOp.stored`)
        if not isinstance(parent, KernelOp):
            raise VerifyException("'npu_tile.yield' must be inside 'npu_tile.kernel' (or end a strip loop's group)")


@irdl_op_definition
class KernelOp(LoopNest, IRDLOperation):
    """One tiled kernel, `npu_tile.kernel "fc"(%x, %w) matmul {loops = ["m", "n", "k"], ...}`.
    Properties (the optional ones print only when they differ from their default):
    - `kind` (`KernelKind`): anchor kind (`matmul`, `conv2d`, `eltwise`, `pool`, `apply`,
      `view`), or `group` for a layer group (several kernels' ops on SRAM-resident
      tensors: no loops, loops ["h"] for a strip group, ["n"] for batch slices);
    - `loops`: loop dimension names, outermost first, non-empty and unique (e.g.
      `["m", "n", "k"]`);
    - `tile`: tile size per loop; `grid`: trip count per loop (ceil(extent / tile));
    - `double_buffer` (default false): input tiles alternate between two SRAM buffers;
    - `sram_bytes` (default 0): SRAM the tile buffers need (both halves when double
      buffered);
    - `predicted_cycles` (default 0): the cost model's estimate of the kernel's span (on one core,
      or its `parts` running concurrently, sync excluded);
    - `dram_bytes` (default 0): the DRAM traffic the tiling implies (loads and stores);
    - `parts` (default 1): over how many cores the cost model splits the parallel tiles
      (`npu-schedule` places the parts);
    - `part_cycles` (split kernels): the predicted span on 1, 2, ..., `parts` cores,
      so `npu-schedule` can use fewer cores where some are busy;
    - `line_buffer` (strip groups): each strip keeps the rows it shares with the next
      one in SRAM and computes only its new rows (`lowering/tile/strip_plan.py`);
    - `plan` (groups): the plan `npu-layer-group` chose, `#npu_tile.strip<...>` or
      `#npu_tile.group<...>`; `npu-bufferize` follows it."""

    name = "npu_tile.kernel"
    ins = var_operand_def(TensorType)
    kernel = prop_def(StringAttr)
    kind = prop_def(KernelKindAttr)
    loops = prop_def(ArrayAttr[StringAttr])
    tile = prop_def(DenseArrayBase)
    grid = prop_def(DenseArrayBase)
    double_buffer = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    sram_bytes = prop_def(IntegerAttr, default_value=IntegerAttr(0, i64))
    predicted_cycles = prop_def(IntegerAttr, default_value=IntegerAttr(0, i64))
    dram_bytes = prop_def(IntegerAttr, default_value=IntegerAttr(0, i64))
    parts = prop_def(IntegerAttr, default_value=IntegerAttr(1, i64))
    part_cycles = opt_prop_def(DenseArrayBase)
    line_buffer = opt_prop_def(UnitAttr)
    plan = opt_prop_def(StripPlanAttr | GroupPlanAttr)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(TileYieldOp), NoMemoryEffect())
    assembly_format = "$kernel `(` $ins `)` $kind attr-dict `:` functional-type($ins, $outs) $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, kernel: str, ins: Sequence[SSAValue], result_types: Sequence[Attribute],
                 body: Region, *, kind: KernelKind, loops: Sequence[str], tile: Sequence[int],
                 grid: Sequence[int], double_buffer: bool, sram_bytes: int, predicted_cycles: int,
                 dram_bytes: int = 0, parts: int = 1, line_buffer: bool = False,
                 part_cycles: Sequence[int] = ()):
        super().__init__(operands=[list(ins)], result_types=[list(result_types)], regions=[body],
                         properties={
                             "kernel": StringAttr(kernel), "kind": KernelKindAttr(KernelKind(kind)),
                             "loops": loop_names_attr(loops), "tile": int_array(tile),
                             "grid": int_array(grid),
                             "double_buffer": BoolAttr.from_bool(double_buffer),
                             "sram_bytes": IntegerAttr(sram_bytes, i64),
                             "predicted_cycles": IntegerAttr(predicted_cycles, i64),
                             "dram_bytes": IntegerAttr(dram_bytes, i64),
                             "parts": IntegerAttr(parts, i64),
                             **({"part_cycles": int_array(part_cycles)} if part_cycles else {}),
                             **({"line_buffer": UnitAttr()} if line_buffer else {})})

    @property
    def is_line_buffered(self) -> bool:
        return self.line_buffer is not None

    @property
    def is_double_buffered(self) -> bool:
        return bool(self.double_buffer.value.data)

    def graph_ops(self) -> list[Operation]:
        """The body's ops but its terminator and (a layer group's) loads."""
        return [op for op in self.body.block.ops if not isinstance(op, (TileYieldOp, LoadOp))]

    @property
    def yield_op(self) -> TileYieldOp:
        """The body's terminator (always present: `SingleBlockImplicitTerminator`)."""
        term = self.body.block.last_op
        assert isinstance(term, TileYieldOp)
        return term

    def verify_(self) -> None:
        self.verify_loop_names(f"'npu_tile.kernel' {self.kernel.data}")
        n = len(self.loop_names)
        if len(self.tile_sizes) != n or len(self.trip_counts) != n:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: {n} loops but "
                                  f"{len(self.tile_sizes)} tile sizes and {len(self.trip_counts)} trip counts")
        self.verify_positive(f"'npu_tile.kernel' {self.kernel.data}")
        block = self.body.block
        if [a.type for a in block.args] != [o.type for o in self.ins]:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: block argument types must match operands")
        term = block.last_op
        if isinstance(term, TileYieldOp) and [v.type for v in term.values] != [r.type for r in self.outs]:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: yielded types must match result types")
        verify_plan(self)
        self.verify_estimates()

    def verify_estimates(self) -> None:
        """The plan's numbers: SRAM within the arch's, estimates not negative, one part or more."""
        where, arch = f"'npu_tile.kernel' {self.kernel.data}", arch_at(self)
        for name in ("sram_bytes", "predicted_cycles", "dram_bytes"):
            check_at_least(where, name, getattr(self, name).value.data, 0)
        check_part_cycles(where, self.parts.value.data, self.part_cycles)
        check_within(where, "SRAM of its tile buffers at bytes", 0, self.sram_bytes.value.data, arch.sram_bytes,
                     "sram_bytes of the arch")
        if self.plan is not None:
            check_within(where, "the SRAM arena of its plan at bytes", 0, self.plan.sram.data, arch.sram_bytes,
                         "sram_bytes of the arch")


class WindowOp(IRDLOperation):
    """Base of `npu_tile.load`/`store`: a window of a tensor (viewed with shape `view`,
    rank-extended for broadcasts) per tile of the enclosing `npu_tile.loop`: along dim
    d it starts at sum_j coefs[d * L + j] * index_j + consts[d] (L loops, index_j the
    tile index along loop j, the loop's block arguments passed as `indices`) and spans
    sizes[d] elements."""

    indices = var_operand_def(IndexType)
    view = opt_prop_def(DenseArrayBase)
    coefs = prop_def(DenseArrayBase)
    consts = prop_def(DenseArrayBase)
    sizes = prop_def(DenseArrayBase)

    def whole_shape(self) -> tuple[int, ...]:
        """The shape of the tensor the window is in (the view's default)."""
        raise NotImplementedError

    def view_shape(self) -> tuple[int, ...]:
        return ints(self.view, ()) if self.view is not None else self.whole_shape()

    def window(self) -> tuple[tuple[int, ...], tuple[tuple[tuple[int, int], ...], ...], tuple[int, ...],
                              tuple[int, ...]]:
        """(view shape, per dim the (loop position, coef) terms, consts, sizes)."""
        n = len(self.indices)
        coefs = ints(self.coefs, ())
        terms = tuple(tuple((j, coefs[d * n + j]) for j in range(n) if coefs[d * n + j])
                      for d in range(len(ints(self.sizes, ()))))
        return self.view_shape(), terms, ints(self.consts, ()), ints(self.sizes, ())

    def start_ranges(self) -> list[tuple[int, int]] | None:
        """Per dim the lowest and highest start of the window over the tiles of the
        enclosing loop (None when its loops do not match the indices: the loop reports)."""
        loop = self.parent_op()
        trips = (loop.trip_counts if isinstance(loop, LoopOp) else
                 (loop.strips.value.data,) if isinstance(loop, StripLoopOp) else ())
        if len(trips) != len(self.indices) or any(t < 1 for t in trips):
            return None
        _, terms, consts, _ = self.window()
        reach = [[k * (trips[j] - 1) for j, k in ts] for ts in terms]  # each term's move from the first tile
        return [(c + sum(min(0, r) for r in rs), c + sum(max(0, r) for r in rs)) for rs, c in zip(reach, consts)]

    def verify_starts(self, note: str) -> None:
        """Every tile's window starts inside the (viewed) tensor."""
        view = self.view_shape()
        for d, ((lo, hi), dim) in enumerate(zip(self.start_ranges() or [], view)):
            check_within(f"'{self.name}'", f"the starts of its tiles' windows along dim {d}", lo, hi - lo + 1, dim,
                         f"dim {d} of {list(view)}", note)

    def print_window(self, printer: Printer) -> None:
        """`(%i, %j)[4 * %i, 16 * %j - 1] sizes [4, 16]`, then `view [...]` if set."""
        printer.print_string("(")
        printer.print_list(self.indices, printer.print_operand)
        printer.print_string(")[")
        _, terms, consts, sizes = self.window()
        for d, (ts, c) in enumerate(zip(terms, consts)):
            if d:
                printer.print_string(", ")
            first = True
            for j, k in ts:
                if not first:
                    printer.print_string(" + ")
                if k != 1:
                    printer.print_string(f"{k} * ")
                printer.print_operand(self.indices[j])
                first = False
            if first:
                printer.print_string(str(c))
            elif c:
                printer.print_string(f" {'+' if c > 0 else '-'} {abs(c)}")
        printer.print_string(f"] sizes [{', '.join(map(str, sizes))}]")
        if self.view is not None:
            printer.print_string(f" view [{', '.join(map(str, ints(self.view, ())))}]")

    def print_value_window(self, printer: Printer, value: SSAValue, between: str = "") -> None:
        """` %value{between}(...)[...] sizes [...] {attrs} : type` (store and tee)."""
        printer.print_string(" ")
        printer.print_operand(value)
        printer.print_string(between)
        self.print_window(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(value.type)

    @classmethod
    def parse_value_window(cls, parser: Parser, keyword: str | None = None
                           ) -> tuple[SSAValue, int | None, list[SSAValue], dict[str, Attribute], dict[str, Attribute]]:
        """What `print_value_window` prints, `keyword N` after the value when given:
        (value, N, indices, window properties, attributes)."""
        val = parser.parse_unresolved_operand()
        n = None
        if keyword is not None:
            parser.parse_keyword(keyword)
            n = parser.parse_integer()
        indices, props = cls.parse_window(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        return parser.resolve_operand(val, parser.parse_type()), n, indices, props, attrs

    @staticmethod
    def parse_window(parser: Parser) -> tuple[list[SSAValue], dict[str, Attribute]]:
        """Parse what `print_window` prints (without `view`): (indices, properties)."""
        indices: list[SSAValue] = parser.parse_comma_separated_list(parser.Delimiter.PAREN,
                                                                    lambda: parser.parse_operand(IndexType()))
        coefs: list[int] = []
        consts: list[int] = []

        def expr() -> None:
            row, const, sign = [0] * len(indices), 0, 1
            while True:
                v = parser.parse_optional_operand(IndexType())
                if v is not None:
                    k = 1
                else:
                    k = parser.parse_integer()
                    if parser.parse_optional_punctuation("*") is None:
                        const += sign * k
                        v = None
                    else:
                        v = parser.parse_operand(IndexType())
                if v is not None:
                    if v not in indices:
                        parser.raise_error("a window offset may only use the loop's tile indices")
                    row[indices.index(v)] += sign * k
                if parser.parse_optional_punctuation("+") is not None:
                    sign = 1
                elif parser.parse_optional_punctuation("-") is not None:
                    sign = -1
                else:
                    break
            coefs.extend(row)
            consts.append(const)

        parser.parse_comma_separated_list(parser.Delimiter.SQUARE, expr)
        parser.parse_keyword("sizes")
        sizes = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parser.parse_integer())
        props: dict[str, Attribute] = {"coefs": int_array(coefs), "consts": int_array(consts), "sizes": int_array(sizes)}
        if parser.parse_optional_keyword("view") is not None:
            props["view"] = int_array(parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                                          lambda: parser.parse_integer()))
        return indices, props

    def verify_window(self, tensor: Attribute, tile: Attribute) -> None:
        view, sizes = self.view_shape(), ints(self.sizes, ())
        n, rank = len(self.indices), len(sizes)
        if len(view) != rank or len(ints(self.consts, ())) != rank or len(ints(self.coefs, ())) != rank * n:
            raise VerifyException(f"'{self.name}': a window of rank {rank} over {n} loops needs {rank} view dims, "
                                  f"{rank} consts and {rank * n} coefs")
        if any(s <= 0 for s in sizes):
            raise VerifyException(f"'{self.name}': window sizes must be positive, got {list(sizes)}")
        if not isinstance(tensor, TensorType) or prod(tensor.get_shape()) != prod(view):
            raise VerifyException(f"'{self.name}': view {list(view)} does not have the elements of {tensor}")
        if not isinstance(tile, TensorType) or tuple(tile.get_shape()) != sizes:
            raise VerifyException(f"'{self.name}': the tile type must have the window's sizes {list(sizes)}")
        if tile.element_type != tensor.element_type:
            raise VerifyException(f"'{self.name}': the tile's element type {tile.element_type} must be the "
                                  f"tensor's ({tensor.element_type}): a window moves elements, it converts none")
        loop = self.parent_op()
        if isinstance(loop, KernelOp) and loop.kind.data == KernelKind.GROUP and isinstance(self, LoadOp):
            if n or loop.loop_names not in ([], ["n"]) or any(ints(self.consts, ())) or sizes != tuple(view):
                raise VerifyException(f"'{self.name}' in a layer group loads its source whole (no loops)")
        elif not isinstance(loop, (LoopOp, StripLoopOp)) or list(self.indices) != list(loop.body.block.args):
            raise VerifyException(f"'{self.name}' must be in an 'npu_tile.loop' or 'npu_tile.strip_loop' and take "
                                  "its tile indices, or (a load) in a layer group")


@irdl_op_definition
class LoadOp(WindowOp):
    """One input tile: the window of `source` at the current tile; reads outside the
    tensor give `pad_value` (absent: every tile's window starts inside the tensor, and
    what passes its end reads as zeros, as `npu-bufferize` loads it: the remainder of a
    matmul's K or M)."""

    name = "npu_tile.load"
    source = operand_def(TensorType)
    pad_value = opt_prop_def(FloatAttr)
    tile = result_def(TensorType)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        self.print_window(printer)
        if self.pad_value is not None:
            printer.print_string(f" pad {self.pad_value.value.data!r}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        src = parser.parse_unresolved_operand()
        indices, props = cls.parse_window(parser)
        pad = None
        if parser.parse_optional_keyword("pad") is not None:
            pad = parser.parse_float() if parser.parse_optional_punctuation("-") is None else -parser.parse_float()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        src_type = parser.parse_type()
        source = parser.resolve_operand(src, src_type)
        view = ints(props["view"], ()) if "view" in props else None
        op = cls(source, indices, view, ints(props["coefs"], ()), ints(props["consts"], ()),
                 ints(props["sizes"], ()), pad)
        op.attributes.update(attrs)
        return op

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue], view: Sequence[int] | None,
                 coefs: Sequence[int], consts: Sequence[int], sizes: Sequence[int], pad_value: float | None):
        """`view`: None (or the source's shape) reads the source as it is."""
        props: dict[str, Attribute] = {"coefs": int_array(coefs), "consts": int_array(consts),
                                       "sizes": int_array(sizes)}
        if view is not None and isinstance(source.type, TensorType) and tuple(view) != tuple(
                source.type.get_shape()):
            props["view"] = int_array(view)
        if pad_value is not None:
            props["pad_value"] = FloatAttr(pad_value, f32)
        super().__init__(operands=[source, list(indices)], properties=props,
                         result_types=[TensorType(element_type(source), list(sizes))])

    def whole_shape(self) -> tuple[int, ...]:
        t = self.source.type
        return tuple(t.get_shape()) if isinstance(t, TensorType) else ()

    def verify_(self) -> None:
        self.verify_window(self.source.type, self.tile.type)
        if self.pad_value is None:
            self.verify_starts(", and the load has no pad value")


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """The anchor's tile result summed over the loop's reduction loop (none: the value
    itself): ops after it run once per output tile, at the last reduction step.
    `combine = "online_softmax"`: the tiles are online-softmax states (an `online`
    `npu_graph.attention` per key block) merged by the anchor's `combine` (the last
    block's merge with `finish`, normalising the output: npu-bufferize); the store
    then writes the state's output columns, all but the last `STATE_COLUMNS`.
    `combine = "row_stats"`: `npu_graph.row_stats` states of column blocks, merged
    by that op's `combine` and stored whole. `init` (a sum in
    an `npu_tile.loop` with reduction steps): the sum starts from this tile, loaded
    into the accumulator at an output tile's first step, instead of from zero (a
    residual the epilogue would add: it needs no SRAM slot of its own)."""

    name = "npu_tile.reduce"
    partial = operand_def(TensorType)
    init = opt_operand_def(TensorType)
    total = result_def(TensorType)
    combine = opt_attr_def(StringAttr)
    traits = traits_def(NoMemoryEffect())
    assembly_format = ("$partial (`init` $init^)? attr-dict `:` type($partial) (`,` type($init)^)? "
                       "`->` type($total)")

    COMBINES: ClassVar[tuple[str, ...]] = ("sum", "online_softmax", "row_stats")
    STATE_COLUMNS: ClassVar[int] = 2

    def __init__(self, partial: SSAValue, combine: str | None = None, init: SSAValue | None = None):
        super().__init__(operands=[partial, [init] if init is not None else []], result_types=[partial.type],
                         attributes={"combine": StringAttr(combine)} if combine else {})

    @property
    def state_columns(self) -> int:
        """The trailing columns of a tile that are merge state, not output."""
        return self.STATE_COLUMNS if self.combine is not None and self.combine.data == "online_softmax" else 0

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), (LoopOp, StripLoopOp)):
            raise VerifyException("'npu_tile.reduce' must be in an 'npu_tile.loop'")
        if self.partial.type != self.total.type:
            raise VerifyException("'npu_tile.reduce': result type must equal the operand type")
        if self.init is not None:
            if self.init.type != self.total.type:
                raise VerifyException("'npu_tile.reduce': init must have the result type")
            if self.combine is not None and self.combine.data != "sum":
                raise VerifyException("'npu_tile.reduce': only a sum starts from an init tile")
            if not isinstance(self.parent_op(), LoopOp):
                raise VerifyException("'npu_tile.reduce': init needs an 'npu_tile.loop'")
        if self.combine is not None and self.combine.data not in self.COMBINES:
            raise VerifyException(f"'npu_tile.reduce': combine must be one of {', '.join(self.COMBINES)}, "
                                  f"got '{self.combine.data}'")
        owner = self.partial.owner
        if self.state_columns and not (isinstance(owner, Operation) and "online" in owner.attributes):
            raise VerifyException("'npu_tile.reduce': an online_softmax combine takes an `online` op's states")
        if self.combine is not None and self.combine.data == "row_stats" and not (
                isinstance(owner, Operation) and owner.name == "npu_graph.row_stats"):
            raise VerifyException("'npu_tile.reduce': a row_stats combine takes npu_graph.row_stats states")


@irdl_op_definition
class StoreOp(WindowOp):
    """Terminator of `npu_tile.loop`: the tile `value` goes to its window of the loop's
    result (clipped at the tensor's edge)."""

    name = "npu_tile.store"
    value = operand_def(TensorType)
    traits = traits_def(IsTerminator())

    def print(self, printer: Printer) -> None:
        self.print_value_window(printer, self.value)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value, _, indices, props, attrs = cls.parse_value_window(parser)
        view = ints(props["view"], ()) if "view" in props else None
        op = cls(value, indices, view, ints(props["coefs"], ()), ints(props["consts"], ()), ints(props["sizes"], ()))
        op.attributes.update(attrs)
        return op

    def __init__(self, value: SSAValue, indices: Sequence[SSAValue], view: Sequence[int] | None,
                 coefs: Sequence[int], consts: Sequence[int], sizes: Sequence[int]):
        """`view`: None writes the loop's result as it is (a rank-extended view otherwise)."""
        props: dict[str, Attribute] = {"coefs": int_array(coefs), "consts": int_array(consts),
                                       "sizes": int_array(sizes)}
        if view is not None:
            props["view"] = int_array(view)
        super().__init__(operands=[value, list(indices)], properties=props)

    def whole_shape(self) -> tuple[int, ...]:
        loop = self.parent_op()
        t = loop.result.type if isinstance(loop, (LoopOp, StripLoopOp)) else None
        return tuple(t.get_shape()) if isinstance(t, TensorType) else ()

    def verify_(self) -> None:
        loop = self.parent_op()
        tile = self.value.type
        extra = self.value.owner.state_columns if isinstance(self.value.owner, ReduceOp) else 0
        if extra and isinstance(tile, TensorType):  # (an online-softmax state: its output columns are stored)
            shape = list(tile.get_shape())
            tile = TensorType(tile.element_type, [*shape[:-1], shape[-1] - extra])
        self.verify_window(loop.result.type if isinstance(loop, (LoopOp, StripLoopOp)) else self.value.type, tile)
        self.verify_starts(": every tile stores something")


@irdl_op_definition
class TeeOp(WindowOp):
    """`npu_tile.tee %tile into 1 (%i, %t)[...] sizes [...]`: a tile the step has in SRAM
    (loaded, or computed from loads before the reduce) written, every step, to its
    window of the loop's result `into` (clipped at the tensor's edge). A fused
    KV-cache append: the key blocks an attention loads from the cache and the new
    rows also go out as the `present` tensor, so the cache is read once."""

    name = "npu_tile.tee"
    value = operand_def(TensorType)
    into = prop_def(IntegerAttr)

    def print(self, printer: Printer) -> None:
        self.print_value_window(printer, self.value, f" into {self.into.value.data} ")

    @classmethod
    def parse(cls, parser: Parser) -> TeeOp:
        value, into, indices, props, attrs = cls.parse_value_window(parser, "into")
        assert into is not None  # (parsed after the keyword)
        if "view" not in props:
            parser.raise_error("'npu_tile.tee' needs `view [...]`: the shape of the result it writes")
        op = cls(value, into, indices, ints(props["view"], ()), ints(props["coefs"], ()), ints(props["consts"], ()),
                 ints(props["sizes"], ()))
        op.attributes.update(attrs)
        return op

    def __init__(self, value: SSAValue, into: int, indices: Sequence[SSAValue], view: Sequence[int],
                 coefs: Sequence[int], consts: Sequence[int], sizes: Sequence[int]):
        """`view`: the shape the result is written as (always given: the tee names its
        result by index, and its clones in `npu-bufferize`'s steps have no loop)."""
        props: dict[str, Attribute] = {"into": IntegerAttr(into, i64), "view": int_array(view),
                                       "coefs": int_array(coefs), "consts": int_array(consts),
                                       "sizes": int_array(sizes)}
        super().__init__(operands=[value, list(indices)], properties=props)

    def target(self) -> Attribute | None:
        """The type of the loop result the tee writes (None when there is no such result)."""
        loop = self.parent_op()
        i = self.into.value.data
        return loop.outs[i].type if isinstance(loop, LoopOp | StripLoopOp) and 1 <= i < len(loop.outs) else None

    def whole_shape(self) -> tuple[int, ...]:
        t = self.target()
        return tuple(t.get_shape()) if isinstance(t, TensorType) else ()

    def verify_(self) -> None:
        loop, target = self.parent_op(), self.target()
        if not isinstance(loop, LoopOp | StripLoopOp) or target is None:
            raise VerifyException(f"'npu_tile.tee' writes result {self.into.value.data} of its 'npu_tile.loop', "
                                  "which has no such result (the first is the store's)")
        reduce = next((o for o in loop.body.block.ops if isinstance(o, ReduceOp)), None)
        ops = list(loop.body.block.ops)
        if reduce is not None and ops.index(self) > ops.index(reduce):
            raise VerifyException("'npu_tile.tee' must come before the loop's 'npu_tile.reduce' (it runs every step)")
        self.verify_window(target, self.value.type)
        self.verify_starts(": every step writes something")


@irdl_op_definition
class LoopOp(LoopNest, IRDLOperation):
    """A kernel's tile loop nest: the body runs once per tile, its block arguments the
    tile index along each loop (`loops`, outermost first; `tile` elements per tile,
    `grid` tiles). The last `reductions` loops are reduction loops, innermost: the
    anchor's partial results are summed over them (`npu_tile.reduce`). With
    `double_buffer` the next tile's loads are issued while a tile computes. The
    first result is the tensor the body's `npu_tile.store` assembles; any further
    result i is the one its `npu_tile.tee ... into i` writes, a window every step."""

    name = "npu_tile.loop"
    loops = prop_def(ArrayAttr[StringAttr])
    tile = prop_def(DenseArrayBase)
    grid = prop_def(DenseArrayBase)
    reductions = prop_def(IntegerAttr)
    double_buffer = opt_prop_def(UnitAttr)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    assembly_format = "attr-dict `->` type($outs) $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, loops: Sequence[str], tile: Sequence[int], grid: Sequence[int], reductions: int,
                 double_buffer: bool, result_types: Attribute | Sequence[Attribute], body: Region):
        """`result_types`: the stored result's type, then one per `npu_tile.tee` target."""
        props: dict[str, Attribute] = {"loops": loop_names_attr(loops), "tile": int_array(tile),
                                       "grid": int_array(grid), "reductions": IntegerAttr(reductions, i64)}
        if double_buffer:
            props["double_buffer"] = UnitAttr()
        types = [result_types] if isinstance(result_types, Attribute) else list(result_types)
        super().__init__(properties=props, result_types=[types], regions=[body])

    @property
    def result(self) -> SSAValue:
        """The result `npu_tile.store` assembles."""
        return self.outs[0]

    def verify_(self) -> None:
        self.verify_loop_names("'npu_tile.loop'")
        n = len(self.loop_names)
        if len(ints(self.tile, ())) != n or len(ints(self.grid, ())) != n:
            raise VerifyException(f"'npu_tile.loop': {n} loops need {n} tile sizes and trip counts")
        if not 0 <= self.reductions.value.data <= n:
            raise VerifyException("'npu_tile.loop': reductions must be between 0 and the number of loops")
        block = self.body.block
        if len(block.args) != n or any(not isinstance(a.type, IndexType) for a in block.args):
            raise VerifyException(f"'npu_tile.loop': the body takes one index per loop ({n})")
        if not isinstance(block.last_op, StoreOp):
            raise VerifyException("'npu_tile.loop': the body must end in 'npu_tile.store'")
        if sum(isinstance(o, ReduceOp) for o in block.ops) != 1:
            raise VerifyException("'npu_tile.loop': the body must hold exactly one 'npu_tile.reduce'")
        if not self.outs:
            raise VerifyException("'npu_tile.loop' needs a result")
        tees = [o.into.value.data for o in block.ops if isinstance(o, TeeOp)]
        if sorted(tees) != list(range(1, len(self.outs))):
            raise VerifyException(f"'npu_tile.loop': its {len(self.outs) - 1} results after the first need one "
                                  f"'npu_tile.tee' each, got tees into {sorted(tees)}")
        self.verify_positive("'npu_tile.loop'")
        self.verify_kernel()

    def verify_kernel(self) -> None:
        """The loop applies its kernel's plan: the same loops, tiles, grid and buffering."""
        k = self.parent_op()
        if not isinstance(k, KernelOp):
            raise VerifyException("'npu_tile.loop' must be directly inside an 'npu_tile.kernel'")
        got, want = (*self.nest, self.double_buffer is not None), (*k.nest, k.is_double_buffered)
        if got != want:
            raise VerifyException(f"'npu_tile.loop': loops {got[0]}, tile {list(got[1])}, grid {list(got[2])}, "
                                  f"double_buffer {got[3]} do not match kernel {k.kernel.data}'s loops {want[0]}, "
                                  f"tile {list(want[1])}, grid {list(want[2])}, double_buffer {want[3]}")


@irdl_op_definition
class StripLoopOp(IRDLOperation):
    """A strip group's loop over strips of its output's rows (`npu-tile-loops` applies
    the `#npu_tile.strip` plan, `lowering/tile/strip_plan.py`). The `body` runs once
    per strip, its block argument the strip index s: `npu_tile.load`s of the input's
    and the side inputs' rows (halos included, padded outside the tensor), the group's
    graph ops on strip-shaped tensors (convs and pools padded along W only, reading
    the rows they need through an `npu_graph.slice`; constants whole), and the
    `npu_tile.store` of the output's `rows` rows at rows * s (clipped). The `group`
    region keeps the group's ops on whole tensors: the geometry the plan implies is
    derived from them. `plan` holds what the body does not show as ops (prefetch,
    warm-up strips, masks, the operand overwritten in place).

    The first result is the last group op's, which the store writes. A group that also
    stores inner values (a block's output that later kernels read too) has one more
    result for each: its `group` region then ends in an `npu_tile.yield` of the values
    the results hold (the last op's first), and each strip writes its rows of result i
    with an `npu_tile.tee ... into i` before the store (`stored`)."""

    name = "npu_tile.strip_loop"
    rows = prop_def(IntegerAttr)
    strips = prop_def(IntegerAttr)
    plan = prop_def(StripPlanAttr)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    group = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "attr-dict `->` type($outs) $body `group` $group"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, plan: StripPlanAttr, result_types: Sequence[Attribute], body: Region, group: Region):
        super().__init__(properties={"rows": IntegerAttr(plan.rows.data, i64),
                                     "strips": IntegerAttr(plan.strips.data, i64), "plan": plan},
                         result_types=[list(result_types)], regions=[body, group])

    @property
    def result(self) -> SSAValue:
        """The result the body's `npu_tile.store` writes: the last group op's."""
        return self.outs[0]

    def group_ops(self) -> list[Operation]:
        """The group's graph ops on whole tensors, in program order."""
        return [op for op in self.group.block.ops if not isinstance(op, TileYieldOp)]

    def stored(self) -> list[SSAValue]:
        """The group values the results hold, in order: the last op's, then the inner
        values the group's `npu_tile.yield` names."""
        last = self.group.block.last_op
        if isinstance(last, TileYieldOp):
            return list(last.values)
        return [last.results[0]] if last is not None and last.results else []

    def verify_(self) -> None:
        rows, strips, plan = self.rows.value.data, self.strips.value.data, self.plan
        if (rows, strips) != (plan.rows.data, plan.strips.data):
            raise VerifyException(f"'npu_tile.strip_loop': rows = {rows}, strips = {strips} do not match its "
                                  f"plan {plan}")
        block = self.body.block
        if len(block.args) != 1 or not isinstance(block.args[0].type, IndexType):
            raise VerifyException("'npu_tile.strip_loop': the body takes one index, the strip's")
        if not isinstance(block.last_op, StoreOp):
            raise VerifyException("'npu_tile.strip_loop': the body must end in 'npu_tile.store'")
        if any(isinstance(o, ReduceOp) for o in block.ops):
            raise VerifyException("'npu_tile.strip_loop': a strip loop reduces nothing ('npu_tile.reduce')")
        ops, stored = self.group_ops(), self.stored()
        if not ops or [v.type for v in stored] != [r.type for r in self.outs] or stored[0] is not ops[-1].results[0]:
            raise VerifyException("'npu_tile.strip_loop': its group's last op must compute its first result "
                                  f"({self.result.type}), and an 'npu_tile.yield' ending the group must name it "
                                  "first, then the inner values its other results hold")
        tees = sorted(o.into.value.data for o in block.ops if isinstance(o, TeeOp))
        if tees != list(range(1, len(self.outs))):
            raise VerifyException(f"'npu_tile.strip_loop': each of its {len(self.outs) - 1} results after the "
                                  f"first needs one 'npu_tile.tee' writing it, got tees into {tees}")
        k = self.parent_op()
        if not isinstance(k, KernelOp) or k.plan != plan:
            theirs = k.plan if isinstance(k, KernelOp) else "none"
            raise VerifyException(f"'npu_tile.strip_loop': its plan {plan} must be the plan of the "
                                  f"'npu_tile.kernel' it is directly inside ({theirs})")


@irdl_op_definition
class LineBufferOp(IRDLOperation):
    """The rows a line-buffered value holds in a strip (`line_buffer` plans): the rows
    kept from the previous strips, then `new`, the rows this strip computes (or loads)
    of it: `%held = npu_tile.line_buffer %new : tensor<1x8x2x16xf32> -> tensor<1x8x4x16xf32>`."""

    name = "npu_tile.line_buffer"
    new = operand_def(TensorType)
    held = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "$new attr-dict `:` type($new) `->` type($held)"

    def __init__(self, new: SSAValue, held: Attribute):
        super().__init__(operands=[new], result_types=[held])

    def verify_(self) -> None:
        a, b = self.new.type, self.held.type
        assert isinstance(a, TensorType) and isinstance(b, TensorType)
        sa, sb = a.get_shape(), b.get_shape()
        if (len(sa) < 2 or len(sa) != len(sb) or sa[:-2] != sb[:-2] or sa[-1] != sb[-1] or sa[-2] >= sb[-2]
                or a.element_type != b.element_type):
            raise VerifyException(f"'npu_tile.line_buffer': {a} must be fewer rows (dim -2) of {b} (same element type)")
        if not isinstance(self.parent_op(), StripLoopOp):
            raise VerifyException("'npu_tile.line_buffer' must be in an 'npu_tile.strip_loop'")


NpuTile = Dialect("npu_tile", [KernelOp, TileYieldOp, LoopOp, LoadOp, ReduceOp, StoreOp, TeeOp, StripLoopOp,
                              LineBufferOp],
                  [KernelKindAttr, StripPlanAttr, GroupPlanAttr])

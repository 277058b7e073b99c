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
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import TYPE_CHECKING

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
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
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
from xdsl.traits import IsTerminator, NoMemoryEffect, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from npu_dialects.graph import int_array, ints


class KernelKind(StrEnum):
    """Anchor kinds: what the kernel's main op runs on (cube, vector, nothing); `group`
    is a layer group (`npu-layer-group`): no loops, every op on whole SRAM-resident tensors."""

    MATMUL = "matmul"
    CONV2D = "conv2d"
    ELTWISE = "eltwise"
    POOL = "pool"
    APPLY = "apply"
    VIEW = "view"
    GROUP = "group"


@irdl_attr_definition
class KernelKindAttr(EnumAttribute[KernelKind], SpacedOpaqueSyntaxAttribute):
    """A kernel's kind: `matmul` in an op's format, `#npu_tile<kind matmul>` elsewhere."""

    name = "npu_tile.kind"


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

    @property
    def tile_sizes(self) -> tuple[int, ...]:
        return ints(self.tile, ())

    @property
    def trip_counts(self) -> tuple[int, ...]:
        return ints(self.grid, ())


@irdl_op_definition
class TileYieldOp(IRDLOperation):
    """Terminator of `npu_tile.kernel`: the kernel's results."""

    name = "npu_tile.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), NoMemoryEffect())
    assembly_format = "attr-dict ($values^ `:` type($values))?"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), KernelOp):
            raise VerifyException("'npu_tile.yield' must be inside 'npu_tile.kernel'")


@irdl_op_definition
class KernelOp(LoopNest, IRDLOperation):
    """One tiled kernel, `npu_tile.kernel "fc"(%x, %w) matmul {loops = ["m", "n", "k"], ...}`.
    Properties (the optional ones print only when they differ from their default):
    - `kind` (`KernelKind`): anchor kind (`matmul`, `conv2d`, `eltwise`, `pool`, `apply`,
      `view`), or `group` for a layer group (several kernels' ops on SRAM-resident
      tensors, no loops);
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
    - `line_buffer` (strip groups): each strip keeps the rows it shares with the next
      one in SRAM and computes only its new rows (`lowering/tile/strip_plan.py`)."""

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
    line_buffer = opt_prop_def(UnitAttr)
    outs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(TileYieldOp), NoMemoryEffect())
    assembly_format = "$kernel `(` $ins `)` $kind attr-dict `:` functional-type($ins, $outs) $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, kernel: str, ins: Sequence[SSAValue], result_types: Sequence[Attribute],
                 body: Region, *, kind: KernelKind, loops: Sequence[str], tile: Sequence[int],
                 grid: Sequence[int], double_buffer: bool, sram_bytes: int, predicted_cycles: int,
                 dram_bytes: int = 0, parts: int = 1, line_buffer: bool = False):
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
                             **({"line_buffer": UnitAttr()} if line_buffer else {})})

    @property
    def is_line_buffered(self) -> bool:
        return self.line_buffer is not None

    @property
    def is_double_buffered(self) -> bool:
        return bool(self.double_buffer.value.data)

    def graph_ops(self) -> list[Operation]:
        return [op for op in self.body.block.ops if not isinstance(op, TileYieldOp)]

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
        if any(t <= 0 for t in self.tile_sizes) or any(g <= 0 for g in self.trip_counts):
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: tile sizes {list(self.tile_sizes)} and "
                                  f"trip counts {list(self.trip_counts)} must be positive")
        block = self.body.block
        if [a.type for a in block.args] != [o.type for o in self.ins]:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: block argument types must match operands")
        term = block.last_op
        if isinstance(term, TileYieldOp) and [v.type for v in term.values] != [r.type for r in self.outs]:
            raise VerifyException(f"'npu_tile.kernel' {self.kernel.data}: yielded types must match result types")


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
        if not isinstance(tensor, TensorType) or prod(tensor.get_shape()) != prod(view):
            raise VerifyException(f"'{self.name}': view {list(view)} does not have the elements of {tensor}")
        if not isinstance(tile, TensorType) or tuple(tile.get_shape()) != sizes:
            raise VerifyException(f"'{self.name}': the tile type must have the window's sizes {list(sizes)}")
        loop = self.parent_op()
        if not isinstance(loop, LoopOp) or list(self.indices) != list(loop.body.block.args):
            raise VerifyException(f"'{self.name}' must be in an 'npu_tile.loop' and take its tile indices")


@irdl_op_definition
class LoadOp(WindowOp):
    """One input tile: the window of `source` at the current tile; reads outside the
    tensor give `pad_value` (absent: the window stays inside)."""

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
                         result_types=[TensorType(f32, list(sizes))])

    def whole_shape(self) -> tuple[int, ...]:
        t = self.source.type
        return tuple(t.get_shape()) if isinstance(t, TensorType) else ()

    def verify_(self) -> None:
        self.verify_window(self.source.type, self.tile.type)


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """The anchor's tile result summed over the loop's reduction loop (none: the value
    itself): ops after it run once per output tile, at the last reduction step."""

    name = "npu_tile.reduce"
    partial = operand_def(TensorType)
    total = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "$partial attr-dict `:` type($partial) `->` type($total)"

    def __init__(self, partial: SSAValue):
        super().__init__(operands=[partial], result_types=[partial.type])

    def verify_(self) -> None:
        if self.partial.type != self.total.type:
            raise VerifyException("'npu_tile.reduce': result type must equal the operand type")


@irdl_op_definition
class StoreOp(WindowOp):
    """Terminator of `npu_tile.loop`: the tile `value` goes to its window of the loop's
    result (clipped at the tensor's edge)."""

    name = "npu_tile.store"
    value = operand_def(TensorType)
    traits = traits_def(IsTerminator())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.value)
        self.print_window(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        val = parser.parse_unresolved_operand()
        indices, props = cls.parse_window(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        value = parser.resolve_operand(val, parser.parse_type())
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
        t = loop.result.type if isinstance(loop, LoopOp) else None
        return tuple(t.get_shape()) if isinstance(t, TensorType) else ()

    def verify_(self) -> None:
        loop = self.parent_op()
        self.verify_window(loop.result.type if isinstance(loop, LoopOp) else self.value.type, self.value.type)


@irdl_op_definition
class LoopOp(LoopNest, IRDLOperation):
    """A kernel's tile loop nest: the body runs once per tile, its block arguments the
    tile index along each loop (`loops`, outermost first; `tile` elements per tile,
    `grid` tiles). The last `reductions` loops are reduction loops, innermost: the
    anchor's partial results are summed over them (`npu_tile.reduce`). With
    `double_buffer` the next tile's loads are issued while a tile computes. The
    result is the tensor the body's `npu_tile.store` assembles."""

    name = "npu_tile.loop"
    loops = prop_def(ArrayAttr[StringAttr])
    tile = prop_def(DenseArrayBase)
    grid = prop_def(DenseArrayBase)
    reductions = prop_def(IntegerAttr)
    double_buffer = opt_prop_def(UnitAttr)
    result = result_def(TensorType)
    body = region_def("single_block")
    assembly_format = "attr-dict `->` type($result) $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, loops: Sequence[str], tile: Sequence[int], grid: Sequence[int], reductions: int,
                 double_buffer: bool, result_type: Attribute, body: Region):
        props: dict[str, Attribute] = {"loops": loop_names_attr(loops), "tile": int_array(tile),
                                       "grid": int_array(grid), "reductions": IntegerAttr(reductions, i64)}
        if double_buffer:
            props["double_buffer"] = UnitAttr()
        super().__init__(properties=props, result_types=[result_type], regions=[body])

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


NpuTile = Dialect("npu_tile", [KernelOp, TileYieldOp, LoopOp, LoadOp, ReduceOp, StoreOp], [KernelKindAttr])

"""`npu_tile` attributes: the kernel kinds (`KernelKind`, `#npu_tile<kind ...>`) and the
plans a layer group records (`#npu_tile.strip`: a strip group's rows, strips, prefetch
and line buffer; `#npu_tile.group`: a layer group's SRAM offsets), with their parsers
and printers.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntAttr,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import (
    irdl_attr_definition,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
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


def _parse_entries(parser: AttrParser, what: str, flags: Sequence[str], ints_: Sequence[str],
                   lists: Sequence[str]) -> dict[str, int | list[int]]:
    """`<key = 3, flag, key = [1, 2]>` into key -> value (a flag: 1); an unknown or
    repeated key is a parse error naming `what`."""
    entries: dict[str, int | list[int]] = {}

    def entry() -> None:
        pos = parser.pos
        key = parser.parse_identifier()
        if key in entries:
            parser.raise_error(f"{what}: '{key}' is given twice", pos)
        if key in flags:
            entries[key] = 1
        elif key in ints_:
            parser.parse_punctuation("=")
            entries[key] = parser.parse_integer(allow_boolean=False)
        elif key in lists:
            parser.parse_punctuation("=")
            entries[key] = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                             lambda: parser.parse_integer(allow_boolean=False))
        else:
            parser.raise_error(f"{what}: unknown key '{key}' (expected {', '.join([*ints_, *lists, *flags])})", pos)

    parser.parse_comma_separated_list(parser.Delimiter.ANGLE, entry)
    return entries


def _require(parser: AttrParser, what: str, entries: dict, keys: Sequence[str]) -> None:
    missing = [k for k in keys if k not in entries]
    if missing:
        parser.raise_error(f"{what}: missing {', '.join(missing)}")


@irdl_attr_definition
class StripPlanAttr(ParametrizedAttribute):
    """`#npu_tile.strip<rows = 2, strips = 16, halo = [1, 1], sram = 30720, prefetch,
    line_buffer, warm = 1, in_place = 2>`: the plan `npu-layer-group` chose for a strip
    group (`lowering/tile/strip_plan.py`), which `npu-bufferize` follows:
    - `rows` output rows per strip, `strips` strips (the kernel's tile and grid);
    - `halo`: how far the rows of the group input a strip holds reach above and below
      the A rows its step covers ([A*s, A*s + A)): rows its neighbours hold too
      (recomputed, or kept in line buffers); negative above when they start lower (a
      line-buffered input loads only its new rows, ahead of the step);
    - `sram`: bytes of the strip's shared SRAM arena (constants, slots, work area);
    - `prefetch`: the next strip's loads go to a second slot while a strip computes;
    - `line_buffer`: values consecutive strips share keep their rows in SRAM (rolling);
      `warm`: strips a task runs first to fill them (they store nothing);
    - `in_place`: the kernel operand (a residual side input) the output overwrites;
      `stored_in_place`: the same for each inner value the group also stores, in the
      order of the strip loop's results after the first (-1: none)."""

    name = "npu_tile.strip"
    rows: IntAttr
    strips: IntAttr
    halo: DenseArrayBase
    sram: IntAttr
    prefetch: IntAttr
    line_buffer: IntAttr
    warm: IntAttr
    in_place: IntAttr  # -1: none
    stored_in_place: DenseArrayBase  # per stored inner value; -1: none (empty: none at all)

    @staticmethod
    def get(rows: int, strips: int, halo: Sequence[int], sram: int, prefetch: bool = False,
            line_buffer: bool = False, warm: int = 0, in_place: int | None = None,
            stored_in_place: Sequence[int | None] = ()) -> "StripPlanAttr":
        stored = [-1 if i is None else i for i in stored_in_place]
        return StripPlanAttr(IntAttr(rows), IntAttr(strips), int_array(halo), IntAttr(sram), IntAttr(int(prefetch)),
                             IntAttr(int(line_buffer)), IntAttr(warm), IntAttr(-1 if in_place is None else in_place),
                             int_array(stored if any(i >= 0 for i in stored) else []))

    @property
    def is_prefetched(self) -> bool:
        return bool(self.prefetch.data)

    @property
    def is_line_buffered(self) -> bool:
        return bool(self.line_buffer.data)

    @property
    def in_place_operand(self) -> int | None:
        return None if self.in_place.data < 0 else self.in_place.data

    def stored_in_place_operand(self, i: int) -> int | None:
        """The operand stored inner value i (from 0) overwrites, if any."""
        stored = ints(self.stored_in_place, ())
        return stored[i] if i < len(stored) and stored[i] >= 0 else None

    @staticmethod
    def problem(rows: int, strips: int, halo: Sequence[int], sram: int, prefetch: int, line_buffer: int, warm: int,
                in_place: int, stored_in_place: Sequence[int] = ()) -> str | None:
        """What is wrong with these parameters (None: nothing)."""
        if rows < 1 or strips < 1 or sram < 0 or warm < 0:
            return (f"#npu_tile.strip: rows and strips must be positive, sram and warm not negative (rows = {rows}, "
                    f"strips = {strips}, sram = {sram}, warm = {warm})")
        if len(halo) != 2:
            return f"#npu_tile.strip: halo is [above, below], got {list(halo)}"
        if prefetch not in (0, 1) or line_buffer not in (0, 1) or in_place < -1:
            return "#npu_tile.strip: prefetch and line_buffer are flags, in_place an operand index"
        if warm and not line_buffer:
            return "#npu_tile.strip: warm-up strips only fill line buffers (warm without line_buffer)"
        if any(i < -1 for i in stored_in_place):
            return "#npu_tile.strip: stored_in_place lists operand indices (-1: none)"
        return None

    def verify(self) -> None:
        bad = self.problem(self.rows.data, self.strips.data, ints(self.halo, ()), self.sram.data, self.prefetch.data,
                           self.line_buffer.data, self.warm.data, self.in_place.data, ints(self.stored_in_place, ()))
        if bad is not None:
            raise VerifyException(bad)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        what = "#npu_tile.strip"
        e = _parse_entries(parser, what, ("prefetch", "line_buffer"), ("rows", "strips", "sram", "warm", "in_place"),
                           ("halo", "stored_in_place"))
        _require(parser, what, e, ("rows", "strips", "halo", "sram"))
        args: list = [e["rows"], e["strips"], e["halo"], e["sram"], e.get("prefetch", 0), e.get("line_buffer", 0),
                      e.get("warm", 0), e.get("in_place", -1), e.get("stored_in_place", [])]
        bad = cls.problem(*args)
        if bad is not None:
            parser.raise_error(bad)
        args[-2] = None if args[-2] < 0 else args[-2]
        return list(cls.get(*args).parameters)

    def print_parameters(self, printer: Printer) -> None:
        text = (f"<rows = {self.rows.data}, strips = {self.strips.data}, halo = {list(ints(self.halo, ()))}, "
                f"sram = {self.sram.data}")
        if self.prefetch.data:
            text += ", prefetch"
        if self.line_buffer.data:
            text += f", line_buffer, warm = {self.warm.data}"
        if self.in_place.data >= 0:
            text += f", in_place = {self.in_place.data}"
        if ints(self.stored_in_place, ()):
            text += f", stored_in_place = {list(ints(self.stored_in_place, ()))}"
        printer.print_string(text + ">")


@irdl_attr_definition
class GroupPlanAttr(ParametrizedAttribute):
    """`#npu_tile.group<sram = 34816, offsets = [0, 1024, ...], in_place = [3]>`: the
    SRAM plan `npu-layer-group` chose for a layer group (`lowering/tile/group_plan.py`),
    which `npu-bufferize` follows: `sram` bytes of the group's shared arena; `offsets`:
    the byte offset in it of every value of the kernel's body, its block arguments
    (the loaded inputs) then each graph op's result (a reshape or 1-D slice at the
    bytes it views); `in_place`: the graph ops (by position) whose result overwrites
    an operand whose buffer dies there."""

    name = "npu_tile.group"
    sram: IntAttr
    offsets: DenseArrayBase
    in_place: DenseArrayBase

    @staticmethod
    def get(sram: int, offsets: Sequence[int], in_place: Sequence[int] = ()) -> "GroupPlanAttr":
        return GroupPlanAttr(IntAttr(sram), int_array(offsets), int_array(in_place))

    @staticmethod
    def problem(sram: int, offsets: Sequence[int], in_place: Sequence[int]) -> str | None:
        """What is wrong with these parameters (None: nothing)."""
        if sram < 0 or any(o < 0 for o in offsets):
            return "#npu_tile.group: sram and offsets must not be negative"
        if any(i < 0 for i in in_place) or list(in_place) != sorted(set(in_place)):
            return f"#npu_tile.group: in_place lists op positions in increasing order, got {list(in_place)}"
        return None

    def verify(self) -> None:
        bad = self.problem(self.sram.data, ints(self.offsets, ()), ints(self.in_place, ()))
        if bad is not None:
            raise VerifyException(bad)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        what = "#npu_tile.group"
        e = _parse_entries(parser, what, (), ("sram",), ("offsets", "in_place"))
        _require(parser, what, e, ("sram", "offsets"))
        args: list = [e["sram"], e["offsets"], e.get("in_place", [])]
        bad = cls.problem(*args)
        if bad is not None:
            parser.raise_error(bad)
        return list(cls.get(*args).parameters)

    def print_parameters(self, printer: Printer) -> None:
        text = f"<sram = {self.sram.data}, offsets = {list(ints(self.offsets, ()))}"
        if ints(self.in_place, ()):
            text += f", in_place = {list(ints(self.in_place, ()))}"
        printer.print_string(text + ">")

"""Checks the verifiers of the lower dialects (`npu_tile`, `npu_dma`, `npu_compute`,
`npu_task`) share: the machine an op is verified against (`arch_at`: the `npu.arch`
of its module, `default` without one), the constant value of an `index` operand, and
range checks that raise a VerifyException naming the op (`where`) and the value."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from npu_dialects.arch import PRESETS, Arch, ArchAttr
from npu_dialects.graph import ints


@lru_cache(maxsize=16)
def _arch(attr: ArchAttr) -> Arch:
    return attr.arch


def arch_at(op: Operation) -> Arch:
    """The arch of the nearest enclosing module that names one (`default` when none does)."""
    p = op.parent_op()
    while p is not None:
        attr = p.attributes.get("npu.arch") if isinstance(p, ModuleOp) else None
        if isinstance(attr, ArchAttr):
            return _arch(attr)
        p = p.parent_op()
    return PRESETS["default"]


def const_index(v: SSAValue) -> int | None:
    """The value of an `arith.constant` integer operand (None: not a constant)."""
    op = v.owner
    if isinstance(op, ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def check_at_least(where: str, name: str, value: int, least: int) -> None:
    """A count or an estimate is at least `least`."""
    if value < least:
        raise VerifyException(f"{where}: {name} must be at least {least}, got {value}")


def check_part_cycles(where: str, parts: int, part_cycles: DenseArrayBase | None) -> None:
    """`parts` is at least 1; `part_cycles`, when present, gives a span (not negative) for
    each count of cores from 1 to `parts`."""
    check_at_least(where, "parts", parts, 1)
    if part_cycles is None:
        return
    spans = ints(part_cycles, ())
    if len(spans) != parts or any(c < 0 for c in spans):
        raise VerifyException(f"{where}: part_cycles must give a span, at least 0, for each of 1..{parts} cores "
                              f"(parts), got {list(spans)}")


def check_index(where: str, what: str, value: int, count: int, count_name: str) -> None:
    """`value` indexes one of `count` things (cores, event slots)."""
    if not 0 <= value < count:
        raise VerifyException(f"{where}: {what} {value} is out of range [0, {count}) ({count_name})")


def check_within(where: str, what: str | Callable[[], str], start: int, size: int, limit: int,
                 limit_name: str | Callable[[], str], note: str = "") -> None:
    """[start, start + size) lies inside [0, limit) (bytes of a memory, elements of a dim).
    `what` and `limit_name` may be functions giving the text, called only for the
    message (printing a type costs more than the check: loading an executable checks
    every op)."""
    if start < 0 or start + size > limit:
        what, limit_name = (x() if callable(x) else x for x in (what, limit_name))
        raise VerifyException(f"{where}: {what} [{start}, {start + size}) is not within [0, {limit}) "
                              f"({limit_name}){note}")

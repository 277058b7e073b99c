"""`npu_dma`: explicit data movement between `dram` and a core's `sram`.

`npu_dma.copy` moves an N-d window (`sizes`) from `src` at `src_offsets` to `dst` at
`dst_offsets` (dynamic `index` operands) and returns a token; `npu_dma.wait` blocks
the issuing core until it has landed; `npu_dma.done` is a token already complete.

Boundary rules, which tiles at the edge of a tensor rely on:
- a source window that leaves `src` is an error unless `pad_value` is given:
  then the elements outside read as `pad_value` (zero padding of conv halos,
  -inf for max-pool, zero for the K remainder of a matmul);
- a destination window that leaves `dst` is an error unless `clip` is set:
  then the elements outside are dropped (partial output tiles);
- with `src_clip` a source window may leave `src`, and the destination keeps its
  elements outside it (two copies fill one tile: a KV block across the seam).
Bytes moved, and so DMA time, count only the elements inside both buffers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IndexType,
    MemRefType,
    StringAttr,
    UnitAttr,
    f32,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    attr_def,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.pattern_rewriter import RewritePattern
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException

from npu_dialects import dtypes
from npu_dialects.checks import check_within, const_index
from npu_dialects.graph import int_array, ints

SPACES = ("dram", "sram")


def memory_space(t: Attribute) -> str | None:
    """`dram`/`sram` from `memref<..., "dram">`, None when unnamed (or not a memref)."""
    if not isinstance(t, MemRefType):
        return None
    ms = t.memory_space
    return ms.data if isinstance(ms, StringAttr) else None


def enclosing_task(at: Operation | Block) -> Operation | None:
    """The `npu_task.task` around an op (or a block), None outside every task."""
    op = at.parent_op()
    while op is not None and op.name != "npu_task.task":
        op = op.parent_op()
    return op


def task_name(task: Operation | None) -> str:
    kernel = task.properties.get("kernel") if task is not None else None
    return f"task '{kernel.data}'" if isinstance(kernel, StringAttr) else "no task"


@irdl_attr_definition
class TokenType(ParametrizedAttribute, TypeAttribute):
    """Completion of one DMA: `!npu_dma.token`."""

    name = "npu_dma.token"


class SetCanonicalization(HasCanonicalizationPatternsTrait):
    """Canonicalization patterns set from outside the dialect's module: `patterns`
    (classes) is filled by `npu_dialects/canonicalize.py` when it loads. The copy and
    wait patterns need the `npu_task` and `npu_compute` ops, which import this module;
    `all_dialects()`, `npu-task-canonicalize` and the xDSL plugin load it."""

    patterns: ClassVar[tuple[type[RewritePattern], ...]] = ()

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return tuple(p() for p in cls.patterns)


class CopyCanonicalization(SetCanonicalization):
    """Peepholes on copies: collapse an invariant double-buffered load to one slot,
    hoist an invariant load out of its loop, merge adjacent copies."""


class WaitCanonicalization(SetCanonicalization):
    """Erase a wait on a token already waited on every path."""


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Strided N-d copy of a `sizes` window; see the module docstring for the
    boundary rules (`pad_value`, `clip`)."""

    name = "npu_dma.copy"
    src = operand_def(MemRefType)
    dst = operand_def(MemRefType)
    src_offsets = var_operand_def(IndexType)
    dst_offsets = var_operand_def(IndexType)
    sizes = attr_def(DenseArrayBase)
    pad_value = opt_attr_def(FloatAttr)
    clip = opt_attr_def(UnitAttr)
    src_clip = opt_attr_def(UnitAttr)
    token = result_def(TokenType)
    irdl_options = (AttrSizedOperandSegments(as_property=False),)
    traits = traits_def(CopyCanonicalization())  # (no memory-effect trait: a copy's effects are unknown to DCE)
    assembly_format = ("$src `[` $src_offsets `]` `->` $dst `[` $dst_offsets `]` attr-dict "
                       "`:` type($src) `->` type($dst)")

    def __init__(self, src: SSAValue, src_offsets: Sequence[SSAValue], dst: SSAValue,
                 dst_offsets: Sequence[SSAValue], sizes: Sequence[int], *,
                 pad_value: float | None = None, clip: bool = False, src_clip: bool = False):
        attrs: dict[str, Attribute] = {"sizes": int_array(sizes)}
        if pad_value is not None and math.isinf(pad_value) and dtypes.type_name(dtypes.element_type(dst)) in (
                *dtypes.QUANTIZED, "i32"):  # (an infinite pad into integers: the type's end, which never wins a max)
            pad_value = float(dtypes.qrange(dtypes.element_type(dst))[pad_value > 0])
        if pad_value is not None:
            attrs["pad_value"] = FloatAttr(pad_value, f32)
        if clip:
            attrs["clip"] = UnitAttr()
        if src_clip:
            attrs["src_clip"] = UnitAttr()
        super().__init__(operands=[src, dst, list(src_offsets), list(dst_offsets)],
                         result_types=[TokenType()], attributes=attrs)

    @property
    def window(self) -> tuple[int, ...]:
        return ints(self.sizes, ())

    def segments(self) -> tuple[SSAValue, SSAValue, Sequence[SSAValue], Sequence[SSAValue]]:
        """(src, dst, src_offsets, dst_offsets), the operand segments decoded once (each
        accessor decodes `operandSegmentSizes` again); the segment sizes verified."""
        ops = self._operands  # pyright: ignore[reportPrivateUsage]  # (the tuple `operands` views)
        n_src = self.attributes["operandSegmentSizes"].get_values()[2]  # type: ignore[union-attr]
        return ops[0], ops[1], ops[2:2 + n_src], ops[2 + n_src:]

    def verify_(self) -> None:
        src, dst, src_offsets, dst_offsets = self.segments()
        st, dt = src.type, dst.type
        assert isinstance(st, MemRefType) and isinstance(dt, MemRefType)
        window = self.window  # (decoded once: every check below reads it)
        n = len(window)
        for what, t, offs in (("source", st, src_offsets), ("destination", dt, dst_offsets)):
            if memory_space(t) not in SPACES:
                raise VerifyException(f"'npu_dma.copy': {what} must be in memory space \"dram\" or \"sram\", got {t}")
            if t.get_num_dims() != n or len(offs) != n:
                raise VerifyException(f"'npu_dma.copy': window has rank {n} but the {what} has rank "
                                      f"{t.get_num_dims()} and {len(offs)} offsets")
        self.verify_types(st, dt)
        if any(s <= 0 for s in window):
            raise VerifyException(f"'npu_dma.copy': window sizes must be positive, got {list(window)}")
        if memory_space(dt) == "sram" and any(s > d for s, d in zip(window, dt.get_shape())):
            raise VerifyException(f"'npu_dma.copy': window {list(window)} does not fit the SRAM "
                                  f"buffer {list(dt.get_shape())}")
        pad, src_clip = self.pad_value, self.src_clip
        if src_clip is not None and pad is not None:
            raise VerifyException("'npu_dma.copy': src_clip leaves the destination outside the source as it is, "
                                  "so it cannot also pad it (pad_value)")
        if pad is None and src_clip is None:
            self.verify_inside("source", st, src_offsets, "the copy has no pad_value", window)
        if self.clip is None:
            self.verify_inside("destination", dt, dst_offsets, "the copy is not clip", window)

    def verify_types(self, st: MemRefType, dt: MemRefType) -> None:
        """Source and destination hold one element type (a copy moves bytes, it converts
        nothing); a `pad_value` written into an integer buffer is an integer of its range."""
        for what, t in (("source", st), ("destination", dt)):
            if dtypes.type_name(t.element_type) is None:
                raise VerifyException(f"'npu_dma.copy': {what} element type {t.element_type} is not one of "
                                      f"{', '.join(dtypes.ELEMENT_TYPES)}")
        if st.element_type != dt.element_type:
            raise VerifyException(f"'npu_dma.copy': source holds {st.element_type} but destination holds "
                                  f"{dt.element_type}; a copy moves bytes and converts nothing")
        if self.pad_value is not None and not dtypes.is_float(dt.element_type):
            v, (lo, hi) = self.pad_value.value.data, dtypes.qrange(dt.element_type)
            if not math.isfinite(v) or v != int(v) or not lo <= v <= hi:
                raise VerifyException(f"'npu_dma.copy': pad_value {v:g} is not an integer in [{lo}, {hi}] "
                                      f"(the {dt.element_type} destination)")

    def verify_inside(self, what: str, t: MemRefType, offsets: Sequence[SSAValue], why: str,
                      window: Sequence[int]) -> None:
        """The window stays inside the buffer along every dim: it is no larger, and at a
        constant offset it starts and ends inside (`why` it may not leave)."""
        for d, (v, size, dim) in enumerate(zip(offsets, window, t.get_shape())):
            start = const_index(v)
            at = "" if start is not None else " (at any offset)"
            check_within("'npu_dma.copy'", f"{what} window along dim {d}{at}", start or 0, size, dim,
                         lambda d=d: f"dim {d} of {t}", f", and {why}")


@irdl_op_definition
class WaitOp(IRDLOperation):
    """Block the issuing core until the DMA behind `token` has completed."""

    name = "npu_dma.wait"
    token = operand_def(TokenType)
    traits = traits_def(WaitCanonicalization())
    assembly_format = "$token attr-dict"

    def __init__(self, token: SSAValue):
        super().__init__(operands=[token])

    def verify_(self) -> None:
        here, there = enclosing_task(self), enclosing_task(self.token.owner)
        if here is not there:
            raise VerifyException(f"'npu_dma.wait': its token comes from {task_name(there)} but the wait is "
                                  f"in {task_name(here)}")


@irdl_op_definition
class DoneOp(IRDLOperation):
    """A token whose DMA has already completed: waiting on it returns at once. The
    initial value of a loop-carried token (a tile loop's store awaited a step later
    starts with no store in flight)."""

    name = "npu_dma.done"
    token = result_def(TokenType)
    traits = traits_def(Pure())
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__(result_types=[TokenType()])


NpuDma = Dialect("npu_dma", [CopyOp, WaitOp, DoneOp], [TokenType])

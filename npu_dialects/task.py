"""`npu_task`: the executable form.

`func.func @main` takes the model's inputs and outputs as `dram` memrefs
(destination passing; `npu.inputs`/`npu.outputs` hold their ONNX names) and
holds, in order:
- `npu_task.weight "key"`: a weight at a fixed DRAM address (`offset` in the
  weight region);
- `npu_task.alloc`: an activation buffer in the DRAM arena (`offset` assigned
  by the memory plan);
- `npu_task.view`: the same bytes seen with another shape (reshape/flatten);
- `npu_task.task`: work for one core, run in program order with the core's other
  tasks (its queue) and synchronised through event slots (`waits`, `signals`); its
  body is `scf.for` tile loops of `npu_dma`/`npu_compute` ops on `npu_task.sram`
  buffers over its `range`, a share of the kernel's parallel tile space.

Algorithm
---------
A core runs its tasks in program order (its queue); a task first issues its
`prefetch` (weight loads: nothing another task writes), then consumes each event
slot in `waits` (blocking until signalled), runs its body (`scf.for` tile
loops of `npu_dma`/`npu_compute` ops on `npu_task.sram` buffers), drains its DMAs,
then signals `signals`. An event slot is a counting semaphore: a signal adds one,
each entry of `waits` takes one (so `waits = [3, 3]` waits for two signals on
slot 3). The body block takes two `index` arguments bound to the task's `range`
`[lo, hi)`: its share of the kernel's linearised parallel tile space, so a kernel
split across cores is the same body with different ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from math import prod
from typing import ClassVar

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    i64,
)
from xdsl.ir import Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    attr_def,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.traits import HasCanonicalizationPatternsTrait, NoMemoryEffect, NoTerminator
from xdsl.utils.exceptions import VerifyException

from npu_dialects import dtypes
from npu_dialects.checks import arch_at, check_at_least, check_index, check_part_cycles, check_within
from npu_dialects.dma import CopyOp, memory_space
from npu_dialects.fast_verify import nested_ok
from npu_dialects.graph import int_array, ints


@lru_cache(maxsize=4096)
def i64_attr(v: int) -> IntegerAttr:
    """The i64 integer attribute `v`, built once (an attribute is immutable)."""
    return IntegerAttr(v, i64)


def byte_size(t: MemRefType) -> int:
    """Bytes of a buffer of type `t` (`dtypes.nbytes`)."""
    return dtypes.nbytes(t)


def span(v: SSAValue) -> tuple[SSAValue, int, int]:
    """(root buffer, first byte, end byte) of a (possibly viewed) DRAM value."""
    t = v.type
    assert isinstance(t, MemRefType)
    size = byte_size(t)
    off = 0
    while isinstance(v.owner, ViewOp):
        off += v.owner.byte_offset
        v = v.owner.source
    return v, off, off + size


def check_element(op: Operation, t: MemRefType) -> None:
    """`t` holds one of the chip's element types (`npu_dialects.dtypes`)."""
    if dtypes.type_name(t.element_type) is None:
        raise VerifyException(f"'{op.name}': element type {t.element_type} of {t} is not one of "
                              f"{', '.join(dtypes.ELEMENT_TYPES)}")


def _check_space(op: IRDLOperation, t: MemRefType, space: str) -> None:
    check_element(op, t)
    if memory_space(t) != space:
        raise VerifyException(f"'{op.name}': result must be a \"{space}\" memref, got {t}")


def _in_task(op: Operation) -> bool:
    """`op` is nested in an `npu_task.task`."""
    p = op.parent_op()
    while p is not None and not isinstance(p, TaskOp):
        p = p.parent_op()
    return p is not None


def _check_offset(op: IRDLOperation, offset: IntegerAttr | None, t: MemRefType) -> None:
    """A buffer's byte offset is non-negative and a multiple of its element's bytes."""
    if offset is not None and offset.value.data < 0:
        raise VerifyException(f"'{op.name}': offset must be non-negative, got {offset.value.data}")
    size = dtypes.elem_bytes(t)
    if offset is not None and offset.value.data % size:
        raise VerifyException(f"'{op.name}': offset must be a multiple of {size} bytes ({t.element_type}), "
                              f"got {offset.value.data}")


@irdl_op_definition
class WeightOp(IRDLOperation):
    """A weight at `offset` in DRAM's weight region: the side-file (`npu.weights`)
    entry `key`, or the small inline `value` when given."""

    name = "npu_task.weight"
    key = attr_def(StringAttr)
    offset = opt_attr_def(IntegerAttr)
    value = opt_attr_def(DenseIntOrFPElementsAttr)
    result = result_def(MemRefType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "$key attr-dict `:` type($result)"

    def __init__(self, key: str, result_type: MemRefType, offset: int | None = None,
                 value: DenseIntOrFPElementsAttr | None = None):
        attrs: dict = {"key": StringAttr(key)}
        if offset is not None:
            attrs["offset"] = IntegerAttr(offset, i64)
        if value is not None:
            attrs["value"] = value
        super().__init__(result_types=[result_type], attributes=attrs)

    def verify_(self) -> None:
        _check_space(self, self.result.type, "dram")
        _check_offset(self, self.offset, self.result.type)
        if not self.key.data:
            raise VerifyException("'npu_task.weight': key must not be empty")
        n = prod(self.result.type.get_shape())
        if self.value is not None and len(self.value) != n:
            raise VerifyException(f"'npu_task.weight' {self.key.data}: inline value has {len(self.value)} "
                                  f"elements, {self.result.type} holds {n}")


@irdl_op_definition
class AllocOp(IRDLOperation):
    """An activation buffer in the DRAM arena; `offset` is set by the memory plan.

    `reuse(%r)` marks an in-place candidate: the tasks writing this buffer read
    `%r` (another alloc of the same size) only at the positions they write, each
    before writing it, so the buffer may take `%r`'s bytes if every other task
    touching `%r` has completed before them (`npu-memplan` checks that)."""

    name = "npu_task.alloc"
    reuse = opt_operand_def(MemRefType)
    offset = opt_attr_def(IntegerAttr)
    result = result_def(MemRefType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "(`reuse` `(` $reuse^ `:` type($reuse) `)`)? attr-dict `:` type($result)"

    def __init__(self, result_type: MemRefType, offset: int | None = None, reuse: SSAValue | None = None):
        attrs = {} if offset is None else {"offset": IntegerAttr(offset, i64)}
        super().__init__(operands=[[reuse] if reuse is not None else []], result_types=[result_type],
                         attributes=attrs)

    def verify_(self) -> None:
        _check_space(self, self.result.type, "dram")
        _check_offset(self, self.offset, self.result.type)
        if self.reuse is not None:
            if not isinstance(self.reuse.owner, AllocOp):
                raise VerifyException("'npu_task.alloc': reuse must name another 'npu_task.alloc'")
            assert isinstance(self.reuse.type, MemRefType)
            if byte_size(self.reuse.type) != byte_size(self.result.type):
                raise VerifyException(f"'npu_task.alloc': reuse of {self.reuse.type} by {self.result.type}: "
                                      "sizes differ")


class ViewCanonicalization(HasCanonicalizationPatternsTrait):
    """Fold a view as its source's own type (`FoldIdentityView`, below)."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (FoldIdentityView(),)


@irdl_op_definition
class ViewOp(IRDLOperation):
    """The bytes of `source` seen with another shape (row-major, same space): the
    same size, or with `offset` (bytes) a contiguous part of it (a channel slice of a
    batch-1 concat buffer that its producer writes in place). With `index` (in a
    task, of an SRAM buffer holding consecutive blocks, e.g. a small operand's key
    blocks loaded at once): the index-th block of the result's size from `offset` on,
    at byte offset + index x the result's bytes (the simulator checks it lies inside)."""

    name = "npu_task.view"
    source = operand_def(MemRefType)
    index = opt_operand_def(IndexType)
    offset = opt_attr_def(IntegerAttr)
    result = result_def(MemRefType)
    traits = traits_def(NoMemoryEffect(), ViewCanonicalization())
    assembly_format = "$source (`[` $index^ `]`)? attr-dict `:` type($source) `to` type($result)"

    def __init__(self, source: SSAValue, result_type: MemRefType, offset: int | None = None,
                 index: SSAValue | None = None):
        attrs = {} if offset is None else {"offset": IntegerAttr(offset, i64)}
        super().__init__(operands=[source, [] if index is None else [index]], result_types=[result_type],
                         attributes=attrs)

    @property
    def byte_offset(self) -> int:
        return self.offset.value.data if self.offset is not None else 0

    def verify_(self) -> None:
        s, r = self.source.type, self.result.type
        assert isinstance(s, MemRefType) and isinstance(r, MemRefType)
        for t in (s, r):
            check_element(self, t)
        if s.element_type != r.element_type:
            raise VerifyException(f"'npu_task.view': {s} seen as {r}: a view keeps the element type")
        if memory_space(s) != memory_space(r):
            raise VerifyException(f"'npu_task.view': {s} and {r} differ in memory space")
        size = dtypes.elem_bytes(s)
        if self.byte_offset % size:
            raise VerifyException(f"'npu_task.view': byte offset {self.byte_offset} is not a multiple of the "
                                  f"{size}-byte {s.element_type} elements")
        if self.index is not None:
            if not _in_task(self):
                raise VerifyException("'npu_task.view' with an index must be inside an 'npu_task.task'")
            if self.byte_offset < 0 or self.byte_offset + byte_size(r) > byte_size(s):
                raise VerifyException(f"'npu_task.view': the first block {r} at byte offset {self.byte_offset} "
                                      f"does not lie inside {s}")
        elif self.offset is None:
            if byte_size(s) != byte_size(r):
                raise VerifyException(f"'npu_task.view': {s} and {r} differ in size")
        elif self.byte_offset < 0 or self.byte_offset + byte_size(r) > byte_size(s):
            raise VerifyException(f"'npu_task.view': {r} at byte offset {self.byte_offset} does not lie "
                                  f"inside {s}")


class FoldIdentityView(RewritePattern):
    """`npu_task.view` of a buffer as its own type (no offset) -> the buffer."""

    NAME: ClassVar[str] = "fold-identity-view"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ViewOp, rewriter: PatternRewriter) -> None:
        if op.result.type != op.source.type or op.byte_offset != 0 or op.index is not None:
            return
        rewriter.replace(op, [], [op.source])



@irdl_op_definition
class SramOp(IRDLOperation):
    """A buffer in the executing core's SRAM at byte `offset`.

    `value` says which value of the task the buffer holds: buffers of a task with
    the same `value` are views of one value (a reshape, a rank-extended operand, a
    channel range of a concat, rows of a line buffer); a buffer without it is a
    value of its own. Two values may share bytes only one after the other (an
    in-place result is a new value at its operand's offset): the memory sanitizer
    (`sim.sanitizer`) checks every read finds the value its buffer names."""

    name = "npu_task.sram"
    offset = attr_def(IntegerAttr)
    value = opt_attr_def(IntegerAttr)
    result = result_def(MemRefType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, result_type: MemRefType, offset: int, value: int | None = None):
        attrs = {"offset": i64_attr(offset)}
        if value is not None:
            attrs["value"] = IntegerAttr(value, i64)
        super().__init__(result_types=[result_type], attributes=attrs)

    @property
    def value_id(self) -> int | None:
        return self.value.value.data if self.value is not None else None

    def verify_(self) -> None:
        _check_space(self, self.result.type, "sram")
        _check_offset(self, self.offset, self.result.type)
        if self.value is not None and self.value.value.data < 0:
            raise VerifyException(f"'npu_task.sram': value must be non-negative, got {self.value.value.data}")
        if not isinstance(self.parent_op(), TaskOp):
            raise VerifyException("'npu_task.sram' must be directly inside an 'npu_task.task'")
        arch = arch_at(self)
        check_within("'npu_task.sram'", lambda: f"{self.result.type} at bytes", self.offset.value.data,
                     byte_size(self.result.type), arch.sram_bytes, "sram_bytes of the arch")


@irdl_op_definition
class TaskOp(IRDLOperation):
    """Work for core `core`: waits on `waits`, runs its body, signals `signals`.
    `kernel` names the tiled kernel it belongs to; `range` is its share of that
    kernel's parallel tiles when the kernel is split across cores; `part_cycles` (a
    split kernel) its predicted span on 1..`parts` cores, which `npu-schedule` weighs
    against the cores' queues. `prefetch` = n: the body's first n ops run before the
    waits (`npu-prefetch`); they may only be scalar ops, SRAM buffers and loads of
    weights, which no task writes. `early` = m: the first m (of those) may run while
    the core's previous task runs, from that task's `handoff` = k on (after its k-th
    op; `npu-early-load`: their SRAM bytes are not that task's). Properties that equal
    their default (no waits, no signals, one part, no prefetch, no early ops) are not
    printed."""

    name = "npu_task.task"
    kernel = prop_def(StringAttr)
    core = prop_def(IntegerAttr)
    range = prop_def(DenseArrayBase)  # [lo, hi): this task's share of the parallel tiles
    waits = prop_def(DenseArrayBase, default_value=int_array(()))
    signals = prop_def(DenseArrayBase, default_value=int_array(()))
    predicted_cycles = opt_prop_def(IntegerAttr)  # absent: no prediction
    dram_bytes = opt_prop_def(IntegerAttr)  # predicted DRAM traffic of the whole range (absent: none)
    parts = prop_def(IntegerAttr, default_value=IntegerAttr(1, i64))  # cores the cost model splits the kernel over
    part_cycles = opt_prop_def(DenseArrayBase)  # predicted span on 1..parts cores (npu-schedule may use fewer)
    prefetch = prop_def(IntegerAttr, default_value=IntegerAttr(0, i64))  # leading body ops run before the waits
    early = prop_def(IntegerAttr, default_value=IntegerAttr(0, i64))  # leading body ops run during the previous task
    handoff = opt_prop_def(IntegerAttr)  # after this many body ops the next task's early ops may run (absent: never)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())
    assembly_format = "$kernel attr-dict-with-keyword $body"
    irdl_options = (ParsePropInAttrDict(),)

    def verify(self, verify_nested_ops: bool = True) -> None:
        """xDSL's verification, the body's ops checked by `fast_verify` first: walked
        the generic way only when it cannot vouch for them (then with xDSL's error)."""
        super().verify(verify_nested_ops and not nested_ok(self))

    def __init__(self, kernel: str, core: int, body: Region, *, range: tuple[int, int],
                 waits: Sequence[int] = (), signals: Sequence[int] = (),
                 predicted_cycles: int | None = None, dram_bytes: int | None = None,
                 parts: int | None = None, part_cycles: DenseArrayBase | None = None, prefetch: int = 0,
                 early: int = 0, handoff: int | None = None):
        attrs = {"kernel": StringAttr(kernel), "core": IntegerAttr(core, i64), "range": int_array(range)}
        if waits:
            attrs["waits"] = int_array(waits)
        if signals:
            attrs["signals"] = int_array(signals)
        if predicted_cycles is not None:
            attrs["predicted_cycles"] = IntegerAttr(predicted_cycles, i64)
        if dram_bytes is not None:
            attrs["dram_bytes"] = IntegerAttr(dram_bytes, i64)
        if parts is not None:
            attrs["parts"] = IntegerAttr(parts, i64)
        if part_cycles is not None:
            attrs["part_cycles"] = part_cycles
        if prefetch:
            attrs["prefetch"] = IntegerAttr(prefetch, i64)
        if early:
            attrs["early"] = IntegerAttr(early, i64)
        if handoff is not None:
            attrs["handoff"] = IntegerAttr(handoff, i64)
        super().__init__(regions=[body], properties=attrs)

    @property
    def bounds(self) -> tuple[int, int]:
        lo, hi = ints(self.range, (0, 0))
        return lo, hi

    @property
    def core_id(self) -> int:
        return self.core.value.data

    @property
    def wait_slots(self) -> tuple[int, ...]:
        return ints(self.waits, ())

    @property
    def signal_slots(self) -> tuple[int, ...]:
        return ints(self.signals, ())

    @property
    def prefetch_ops(self) -> int:
        return self.prefetch.value.data

    @property
    def early_ops(self) -> int:
        return self.early.value.data

    @property
    def handoff_ops(self) -> int | None:
        return self.handoff.value.data if self.handoff is not None else None

    def verify_(self) -> None:
        if self.core_id < 0:
            raise VerifyException(f"'npu_task.task' {self.kernel.data}: core must be non-negative, got {self.core_id}")
        if any(s < 0 for s in self.wait_slots + self.signal_slots):
            raise VerifyException(f"'npu_task.task' {self.kernel.data}: event slots must be non-negative, got "
                                  f"waits {list(self.wait_slots)} and signals {list(self.signal_slots)}")
        r = ints(self.range, ())
        if len(r) != 2 or not 0 <= r[0] < r[1]:
            raise VerifyException(f"'npu_task.task' {self.kernel.data}: range must be [lo, hi) with 0 <= lo < hi, got {list(r)}")
        args = self.body.block.args
        if len(args) != 2 or any(not isinstance(a.type, IndexType) for a in args):
            raise VerifyException(f"'npu_task.task' {self.kernel.data}: the body takes two index arguments (lo, hi)")
        self.verify_prefetch()
        self.verify_on_arch()

    def verify_prefetch(self) -> None:
        """The first `prefetch` body ops are safe to run before the waits, the first
        `early` ones (no more than `prefetch`, when it is set) while the core's previous
        task runs (`npu-early-load` checks their SRAM bytes are not that task's)."""
        n, e, h = self.prefetch_ops, self.early_ops, self.handoff_ops
        if n == 0 and e == 0 and h is None:
            return  # (most tasks: no walk of the body)
        ops = list(self.body.block.ops)
        for what, k in (("prefetch", n), ("early", e), ("handoff", h or 0)):
            if not 0 <= k <= len(ops):
                raise VerifyException(f"'npu_task.task' {self.kernel.data}: {what} {k} is not in [0, {len(ops)}] "
                                      "(the body's op count)")
        if n and e > n:
            raise VerifyException(f"'npu_task.task' {self.kernel.data}: early {e} exceeds prefetch {n} (the ops "
                                  "run during the previous task must be among those run before the waits)")
        for i, op in enumerate(ops[:max(n, e)]):
            if not prefetchable(op):
                what = "prefetch" if i < n else "early"
                raise VerifyException(f"'npu_task.task' {self.kernel.data}: {what} {max(n, e)} covers op #{i} "
                                      f"'{op.name}', which is not a scalar op, an SRAM buffer or a load of a weight")

    def verify_on_arch(self) -> None:
        """The core and event slots exist on the module's arch; estimates are not negative."""
        where, arch = f"'npu_task.task' {self.kernel.data}", arch_at(self)
        check_index(where, "core", self.core_id, arch.cores, "cores of the arch")
        for what, slots in (("waits on event slot", self.wait_slots), ("signals event slot", self.signal_slots)):
            for s in slots:
                check_index(where, what, s, arch.event_slots, "event_slots of the arch")
        check_part_cycles(where, self.parts.value.data, self.part_cycles)
        for name in ("predicted_cycles", "dram_bytes"):
            value = getattr(self, name)
            if value is not None:
                check_at_least(where, name, value.value.data, 0)


def weight_source(v: SSAValue) -> bool:
    """`v` is a weight (or a view of one): bytes no task writes."""
    op = v.owner
    while isinstance(op, ViewOp):
        op = op.source.owner
    return isinstance(op, WeightOp)


def prefetchable(op: Operation) -> bool:
    """An op a task may run before its waits: an arith op (index math, or a select
    between SRAM buffers: no memory access), an SRAM buffer, or a copy from a weight into
    SRAM (it reads nothing another task writes, and writes only the core's SRAM, which
    the core's previous task has finished with)."""
    if isinstance(op, CopyOp):
        return weight_source(op.src) and memory_space(op.dst.type) == "sram"
    return isinstance(op, SramOp) or (op.dialect_name() == "arith" and not op.regions)


NpuTask = Dialect("npu_task", [WeightOp, AllocOp, ViewOp, SramOp, TaskOp], [])

"""Loading a task-level module: `@main`'s I/O signature, the DRAM layout
(weights, arena, arguments), the top-level buffers and the compiled tasks.

The weights region is either filled from the weights by key or, when the caller has
it (`DramWeights`, an executable's weights section), taken as a ready image of the
region (`weights_image`): used in place, read-only, never copied."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from npu_dialects import dtypes
from npu_dialects.arch import DRAM_BYTES, Arch
from npu_dialects.dma import CopyOp, memory_space
from npu_dialects.entry import (
    INPUT_DTYPES_ATTR,
    INPUT_RANGES_ATTR,
    INPUTS_ATTR,
    OUTPUT_DTYPES_ATTR,
    OUTPUTS_ATTR,
    find_main,
    int_attr,
    io_names,
)
from npu_dialects.locs import describe, node_names
from npu_dialects.task import AllocOp, SramOp, TaskOp, ViewOp, WeightOp, span
from sim.errors import SimError
from sim.interp import CompileCache, TaskProgram, compile_task, constant_value, preorder, reuse_task, same_body
from sim.memory import DRAM, SRAM, Buf, Region, buffer_bytes, buffer_dtype, host_values
from sim.values import Values

WEIGHTS_BYTES_ATTR = "npu.dram_weights_bytes"
ARENA_BYTES_ATTR = "npu.dram_arena_bytes"


@dataclass(frozen=True)
class Signature:
    """`@main`'s model inputs and outputs: (ONNX name, shape) in argument order."""

    inputs: list[tuple[str, tuple[int, ...]]]
    outputs: list[tuple[str, tuple[int, ...]]]
    input_dtypes: dict[str, str] = field(default_factory=dict)  # ONNX element types (default float32)
    output_dtypes: dict[str, str] = field(default_factory=dict)
    input_ranges: dict[str, tuple[int, int] | str] | None = None
    """Per integer/bool input, [lo, hi) random values stay in (every table they index
    has room), or why none is known; None: the module records none (`npu.input_ranges`)."""


def main_func(module: ModuleOp) -> func.FuncOp:
    """`func.func @main` (or the module's only function)."""
    fn = find_main(module)
    if fn is None:
        raise SimError("the module has no 'func.func @main'")
    return fn


def signature(module: ModuleOp) -> Signature:
    """The I/O signature of a task-level module (raises SimError when `@main`
    lacks `npu.inputs`/`npu.outputs` or its arguments are not DRAM memrefs)."""
    fn = main_func(module)
    args = list(fn.body.block.args) if fn.body.blocks else []
    ins, outs = io_names(fn, INPUTS_ATTR), io_names(fn, OUTPUTS_ATTR)
    if ins is None or outs is None:
        raise SimError("'func.func @main' lacks the 'npu.inputs'/'npu.outputs' name attributes "
                       "(is this a task-level module?)")
    if len(ins) + len(outs) != len(args):
        raise SimError(f"'func.func @main' has {len(args)} arguments but names {len(ins)} inputs "
                       f"and {len(outs)} outputs")
    shapes = []
    for i, a in enumerate(args):
        t = a.type
        if not isinstance(t, MemRefType) or memory_space(t) != DRAM:
            raise SimError(f"argument #{i} of '@main' must be a \"dram\" memref, got {t} "
                           "(is this a task-level module?)")
        shapes.append(tuple(t.get_shape()))
    in_dtypes = _io_dtypes(fn, INPUT_DTYPES_ATTR, ins, args[:len(ins)])
    out_dtypes = _io_dtypes(fn, OUTPUT_DTYPES_ATTR, outs, args[len(ins):])
    return Signature(list(zip(ins, shapes[:len(ins)])), list(zip(outs, shapes[len(ins):])),
                     in_dtypes, out_dtypes, input_ranges(fn))


def _io_dtypes(fn: func.FuncOp, attr: str, names: list[str], args: list) -> dict[str, str]:
    """The ONNX element types `attr` names, else (a module that names none) each
    argument's own element type when it is not f32 (a typed buffer is its own type)."""
    said = io_names(fn, attr)
    if said is not None:
        return dict(zip(names, said))
    own = {n: dtypes.np_dtype(a.type).name for n, a in zip(names, args)
           if dtypes.type_name(dtypes.element_type(a.type)) not in (None, "f32")}
    return own


def input_ranges(fn: func.FuncOp) -> dict[str, tuple[int, int] | str] | None:
    """`npu.input_ranges` of `fn` (see `Signature.input_ranges`; None when absent or malformed)."""
    a = fn.attributes.get(INPUT_RANGES_ATTR)
    if not isinstance(a, DictionaryAttr):
        return None
    out: dict[str, tuple[int, int] | str] = {}
    for name, v in a.data.items():
        vals = v.get_values() if isinstance(v, DenseArrayBase) else ()
        if isinstance(v, StringAttr):
            out[name] = v.data
        elif len(vals) == 2 and int(vals[0]) < int(vals[1]):
            out[name] = (int(vals[0]), int(vals[1]))
        else:
            return None
    return out


_NUMPY = {dt.name: dt for _, _, dt in dtypes.ELEMENT_TYPES.values()}


def onnx_dtype(name: str) -> np.dtype:
    """The numpy dtype of an ONNX element type as `npu.input_dtypes` names it ("bfloat16" too)."""
    return _NUMPY.get(name) or np.dtype(name)


def carried_out(x: np.ndarray, dtype: str) -> np.ndarray:
    """An output (the buffer's typed array) as its ONNX element type: an array of that
    type as it is, f32 values carrying integers rounded and converted, booleans the
    nonzero values, any other buffer type converted (exact, or widening)."""
    if x.dtype.name == dtype:
        return x
    if dtype == "bool":
        return x != 0
    want = onnx_dtype(dtype)
    if want.kind in "iu" and x.dtype.kind not in "iu":
        return np.rint(x).astype(want)
    return x.astype(want)



def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, MemRefType)
    return tuple(t.get_shape())


def _offset(op: WeightOp | AllocOp) -> int | None:
    return op.offset.value.data if op.offset is not None else None


@dataclass
class Program:
    """A loaded module: memory regions, buffers, tasks, ready to run once."""

    arch: Arch
    sig: Signature
    inputs: list[Buf]
    outputs: list[Buf]
    tasks: list[TaskProgram]
    regions: list[Region]
    sram: list[Region]
    weights_bytes: int
    arena_bytes: int
    values: Values = field(default_factory=Values)  # every buffer's value, for the sanitizer
    host_written: list[Buf] = field(default_factory=list)  # weights (inputs follow) written before the run
    warnings: list[str] = field(default_factory=list)
    allocs: list[tuple[SSAValue, Buf, list[str]]] = field(default_factory=list)  # (value, buffer, ONNX nodes)
    layout: Layout | None = None  # what the task bodies place and touch (the run report's static facts)


BodySpans = tuple[tuple[int, int] | None, list[tuple[SSAValue, int, int]]]


def body_spans(ops: list[Operation], seen: dict[int, tuple[SSAValue, int, int] | None]) -> BodySpans:
    """Of a task body's ops (`preorder`): the lowest start and highest end of its SRAM
    buffers (None: it has none), and the DRAM every copy touches, as (root buffer, first
    byte, end byte) of the buffer it names seen through views (the whole buffer, not the
    window: what the kernel's minimum traffic counts). `seen`: by the `id` of a copy's
    operand, its span or None (not in DRAM), shared by the bodies of one module."""
    lo, hi = -1, -1
    dram: list[tuple[SSAValue, int, int]] = []
    try:
        for op in ops:
            kind = type(op)  # (exact classes: cheaper than isinstance and the accessors, per op of every body)
            if kind is SramOp:
                t = op.results[0].type
                if isinstance(t, MemRefType):
                    b = op.attributes["offset"].value.data  # type: ignore[union-attr]
                    e = b + buffer_bytes(t)
                    if lo < 0 or b < lo:
                        lo = b
                    if e > hi:
                        hi = e
            elif kind is CopyOp:
                src_dst = op._operands[:2]  # pyright: ignore[reportPrivateUsage]  # (no segment decoding)
                for v in src_dst:
                    k = id(v)
                    if k in seen:
                        got = seen[k]
                    else:
                        got = seen[k] = span(v) if memory_space(v.type) == "dram" else None
                    if got is not None:
                        dram.append(got)
    except VerifyException as e:
        raise SimError(str(e)) from None
    return (None if lo < 0 else (lo, hi)), dram


@dataclass
class Layout:
    """What a module's tasks place and touch, summed once: each core's SRAM peak (the
    highest end of a task's SRAM buffers, or its bytes from the top for a layout
    `npu-early-load` mirrored), the event slots the tasks wait on or signal, and per
    kernel the DRAM bytes its DMAs touch, each once (its minimum traffic)."""

    sram_peak: list[int]
    event_slots: int
    kernel_dram_bytes: dict[str, int]

    @staticmethod
    def of(tasks: list[tuple[TaskOp, BodySpans, bool]], arch: Arch) -> Layout:
        """From each task with its body's spans, and whether its DRAM spans are new
        (False: another task of its kernel has the same body, so the same spans)."""
        peak = [0] * arch.cores
        slots: set[int] = set()
        touched: dict[str, dict[SSAValue, list[tuple[int, int]]]] = {}
        for task, (sram, dram), new in tasks:
            slots.update(task.wait_slots + task.signal_slots)
            if sram is not None and 0 <= task.core_id < arch.cores:
                peak[task.core_id] = max(peak[task.core_id], min(sram[1], arch.sram_bytes - sram[0]))
            spans = touched.setdefault(task.kernel.data, {})
            if new:
                for root, lo, hi in dram:
                    spans.setdefault(root, []).append((lo, hi))
        return Layout(peak, len(slots), {k: sum(_union_bytes(iv) for iv in spans.values())
                                         for k, spans in touched.items()})


def _union_bytes(spans: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for lo, hi in sorted(spans):
        if hi > end:
            total += hi - max(lo, end)
            end = hi
    return total


def _check_align(op: Operation, off: int | None, arch: Arch, warnings: list[str]) -> None:
    if off is not None and off % arch.align:
        warnings.append(f"{describe(op)}: DRAM offset {off} is not aligned to align={arch.align} bytes")


def _place(op: Operation, region: Region | None, off: int | None, nbytes: int, what: str,
           private: list[Region], size_from_attr: bool) -> tuple[Region, int]:
    if off is None or region is None:
        r = Region(f"private {what} ({describe(op)})", DRAM, nbytes, tracked=what != "weight",
                   readonly=what == "weight")
        private.append(r)
        return r, 0
    size = buffer_dtype(op.results[0].type).itemsize
    if off % size:
        raise SimError(f"{describe(op)}: DRAM offset {off} is not a multiple of its {size}-byte elements")
    if off + nbytes > region.nbytes:
        src = f"module attribute {WEIGHTS_BYTES_ATTR if what == 'weight' else ARENA_BYTES_ATTR}"
        raise SimError(f"{describe(op)}: {what} at offset {off} of {nbytes} bytes reaches past the DRAM "
                       f"{region.name} region of {region.nbytes} bytes"
                       + (f" ({src})" if size_from_attr else ""))
    return region, off


class DramWeights(dict[str, np.ndarray]):
    """Weights by key together with `image`, the DRAM weights region they fill: uint8
    bytes as `weights_image` lays them out, every weight the memory plan placed at its
    offset. `load_program` takes the image as the region itself (no copy)."""

    def __init__(self, weights: Mapping[str, np.ndarray], image: np.ndarray):
        super().__init__(weights)
        self.image = image


def load_program(module: ModuleOp, weights: Mapping[str, np.ndarray], arch: Arch,
                 check_bounds: bool = True, weights_image: np.ndarray | None = None,
                 values: Values | None = None, timing_only: bool = False) -> Program:
    """Lay out DRAM, bind weights, compile every task. Inputs are not written yet.

    `weights_image` (default: `weights.image` for `DramWeights`) holds the weights region
    as the function `weights_image` fills it: the region uses these bytes, read-only and
    uncopied, and only the weights without a DRAM offset are written (from `weights`).
    `values` is the table the program's buffer values are numbered in (default: its own;
    a device running several programs in one engine passes the engine's). `timing_only`:
    no weight is written (`weights` may be empty), for an engine that moves no data."""
    if weights_image is None and isinstance(weights, DramWeights):
        weights_image = weights.image
    sig = signature(module)
    body = main_func(module).body.block
    loader = _Loader(module, body, weights, arch, weights_image, values, timing_only)
    arg_bufs = loader.arguments(body, sig)
    task_ops = loader.top_level(body)
    loader.check_weight_overlaps()
    tasks, sram, layout = loader.compile_tasks(task_ops, check_bounds)
    n_in = len(sig.inputs)
    regions = [loader.wregion, loader.aregion, *[b.region for b in arg_bufs], *loader.private]
    set_granule(regions + sram, tasks, [g for g in loader.globals.values() if isinstance(g, Buf)])
    return Program(arch=arch, sig=sig, inputs=arg_bufs[:n_in], outputs=arg_bufs[n_in:], tasks=tasks,
                   regions=regions, sram=sram, weights_bytes=loader.wregion.nbytes, arena_bytes=loader.aregion.nbytes,
                   values=loader.values, host_written=loader.host_written, warnings=loader.warnings,
                   allocs=loader.allocs, layout=layout)


def weights_image(module: ModuleOp, weights: Mapping[str, np.ndarray], arch: Arch) -> np.ndarray:
    """The DRAM weights region of a task-level module as `load_program` fills it (uint8,
    writeable): each weight with an offset at its offset (from `weights` or its inline
    `value`), zeros elsewhere; what `weights_image=` takes. Raises SimError as
    `load_program` does for a weight it cannot place."""
    size, pieces = weight_pieces(module, weights, arch)
    image = np.zeros(size, np.uint8)
    for offset, data in pieces:
        image[offset:offset + data.size] = data
    return image


def weight_pieces(module: ModuleOp, weights: Mapping[str, np.ndarray],
                  arch: Arch) -> tuple[int, list[tuple[int, np.ndarray]]]:
    """The DRAM weights region `weights_image` builds, not assembled: its size and, by
    offset, each placed weight's bytes (uint8, in its op's element type: a view of the
    weight when it already is one). The same checks, the same SimErrors; an executable
    writes the pieces straight to its file (`runtime.executable`)."""
    body = main_func(module).body.block
    loader = _Loader(module, body, weights, arch, timing_only=True)  # (places and checks, reads no data)
    for op in body.ops:
        if isinstance(op, WeightOp) and _offset(op) is not None:
            loader.weight(op)
    loader.check_weight_overlaps()
    pieces: dict[int, np.ndarray] = {}
    for off, _, key, op in loader.placed_weights:
        if off in pieces:
            continue  # (the same key at the same offset, named twice)
        shape, dt = _shape(op.result), _np_dtype(op.result)
        data = loader.weight_data(op, key)
        if data.size != prod(shape):
            raise SimError(f"{describe(op)}: weight '{key}' has shape {list(data.shape)}, the op expects {list(shape)}")
        try:
            data = np.ascontiguousarray(host_values(dt, data).reshape(shape))
        except ValueError as e:
            raise SimError(f"{describe(op)}: weight '{key}' {e}") from None
        pieces[off] = data.reshape(-1).view(np.uint8)
    return loader.wregion.nbytes, sorted(pieces.items(), key=lambda kv: kv[0])


def _placed_ends(body: Block) -> tuple[int, int]:
    """The end of the highest placed weight and of the highest placed alloc (the sizes of
    the weights and arena regions when the module does not state them)."""
    wmax = amax = 0
    for op in body.ops:
        if isinstance(op, (WeightOp, AllocOp)):
            off = _offset(op)
            if off is not None:
                end = off + _nbytes(op.result.type)
                if isinstance(op, WeightOp):
                    wmax = max(wmax, end)
                else:
                    amax = max(amax, end)
    return wmax, amax


def check_dram(module: ModuleOp) -> None:
    """The DRAM the simulator allocates before any op runs fits the device's DRAM_BYTES:
    the weights and arena regions (as the module's attributes size them, else to their
    highest placed buffer), each alloc or weight without a DRAM offset, each input and
    output. A SimError otherwise (a forged `.mlir` or executable: never allocated)."""
    fn = main_func(module)
    wmax, amax = _placed_ends(fn.body.block)
    sizes = {ARENA_BYTES_ATTR: _or(int_attr(module, ARENA_BYTES_ATTR), amax),
             WEIGHTS_BYTES_ATTR: _or(int_attr(module, WEIGHTS_BYTES_ATTR), wmax)}
    types = [*(op.result.type for op in fn.body.block.ops if isinstance(op, (AllocOp, WeightOp)) and _offset(op) is None),
             *fn.function_type.inputs.data]
    sizes["unplaced buffers and I/O"] = sum(_nbytes(t) for t in types if isinstance(t, MemRefType))
    if any(n < 0 for n in sizes.values()) or sum(sizes.values()) > DRAM_BYTES:
        raise SimError("DRAM of " + " + ".join(f"{n} bytes ({k})" for k, n in sizes.items())
                       + f": more than the device's {DRAM_BYTES} bytes")


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _nbytes(t: MemRefType) -> int:
    """Bytes of a buffer type (a SimError for an element type the chip does not hold)."""
    try:
        return buffer_bytes(t)
    except VerifyException as e:
        raise SimError(str(e)) from None


def _np_dtype(v: SSAValue) -> np.dtype:
    try:
        return buffer_dtype(v.type)
    except VerifyException as e:
        raise SimError(f"{e} ({v.type})") from None


def set_granule(regions: list[Region], tasks: list[TaskProgram], top: list[Buf]) -> None:
    """The bytes one sanitizer shadow entry covers, in every region: 4 (f32 speed and
    figures) unless the program holds 1- or 2-byte buffers (top-level ones, or a task's:
    its environment holds its SRAM buffers), then their smallest element size. (Shadows
    are made at the run's first access, after this.)"""
    sizes = {b.dtype.itemsize for b in top}
    sizes.update(b.dtype.itemsize for t in tasks for b in t.init_env if isinstance(b, Buf))
    g = min(sizes | {4})
    for r in regions:
        r.granule = g


class _Loader:
    """What `load_program` builds up: the DRAM regions, the buffer or constant of each
    top-level value (`globals`), the values the sanitizer names, warnings."""

    def __init__(self, module: ModuleOp, body: Block, weights: Mapping[str, np.ndarray], arch: Arch,
                 image: np.ndarray | None = None, values: Values | None = None, timing_only: bool = False):
        self.weights = weights
        self.arch = arch
        self.warnings: list[str] = []
        self.values = values if values is not None else Values()
        self.host_written: list[Buf] = []
        wmax, amax = _placed_ends(body)
        self.wattr, self.aattr = int_attr(module, WEIGHTS_BYTES_ATTR), int_attr(module, ARENA_BYTES_ATTR)
        wbytes = self.wattr if self.wattr is not None else wmax
        if image is not None and (image.dtype != np.uint8 or image.shape != (wbytes,)):
            raise SimError(f"the weights image is {image.dtype} of shape {list(image.shape)} but the module's "
                           f"weights region is {wbytes} bytes")
        self.image = image  # the placed weights are already in it
        check_dram(module)
        self.wregion = Region("weights", DRAM, wbytes, tracked=False, readonly=True, data=image)
        self.aregion = Region("arena", DRAM, self.aattr if self.aattr is not None else amax, tracked=True)
        self.private: list[Region] = []
        self.allocs: list[tuple[SSAValue, Buf, list[str]]] = []
        self.globals: dict[SSAValue, Any] = {}
        self.placed_weights: list[tuple[int, int, str, WeightOp]] = []
        self.weight_value: dict[str, int] = {}  # (one value per key: a weight may be named twice)
        self.timing_only = timing_only  # (no weight data is read or written)

    def arguments(self, body: Block, sig: Signature) -> list[Buf]:
        """A DRAM region per model input and output, bound to `@main`'s arguments."""
        arg_bufs: list[Buf] = []
        names = [n for n, _ in sig.inputs] + [n for n, _ in sig.outputs]
        for i, (a, name) in enumerate(zip(body.args, names)):
            kind = "input" if i < len(sig.inputs) else "output"
            shape, dt = _shape(a), _np_dtype(a)
            r = Region(f"{kind} '{name}'", DRAM, prod(shape) * dt.itemsize, tracked=True)
            b = Buf(r, 0, shape, f"{kind} '{name}'", self.values.new(f"model {kind} '{name}'"), dt)
            self.globals[a] = b
            arg_bufs.append(b)
        return arg_bufs

    def top_level(self, body: Block) -> list[TaskOp]:
        """Place the weights, allocs and views of `@main`; returns its tasks in order."""
        task_ops: list[TaskOp] = []
        for op in body.ops:
            if isinstance(op, WeightOp):
                self.weight(op)
            elif isinstance(op, AllocOp):
                self.alloc(op)
            elif isinstance(op, ViewOp):
                self.view(op)
            elif isinstance(op, TaskOp):
                task_ops.append(op)
            elif isinstance(op, arith.ConstantOp):
                self.globals[op.result] = constant_value(op)
            elif isinstance(op, func.ReturnOp):
                break
            else:
                raise SimError(f"the simulator does not know top-level op {describe(op)} "
                               "(expected npu_task.weight/alloc/view/task)")
        return task_ops

    def weight(self, op: WeightOp) -> None:
        key = op.key.data
        shape, dt = _shape(op.result), _np_dtype(op.result)
        nbytes = prod(shape) * dt.itemsize
        off = _offset(op)
        from_image = self.image is not None and off is not None
        data = None if from_image or self.timing_only else self.weight_data(op, key)
        if data is not None and data.size != prod(shape):
            raise SimError(f"{describe(op)}: weight '{key}' has shape {list(data.shape)}, "
                           f"the op expects {list(shape)}")
        _check_align(op, off, self.arch, self.warnings)
        region, o = _place(op, self.wregion, off, nbytes, "weight", self.private, self.wattr is not None)
        if key not in self.weight_value:
            self.weight_value[key] = self.values.new(f"weight '{key}' ({describe(op)})")
        b = Buf(region, o, shape, f"weight '{key}'", self.weight_value[key], dt)
        if data is not None:
            try:
                b.arr[...] = host_values(dt, data).reshape(shape)
            except ValueError as e:
                raise SimError(f"{describe(op)}: weight '{key}' {e}") from None
        self.host_written.append(b)
        if off is not None:
            self.placed_weights.append((off, off + nbytes, key, op))
        self.globals[op.result] = b

    def weight_data(self, op: WeightOp, key: str) -> np.ndarray:
        """The weight's inline `value`, else its array in the weights."""
        value = op.attributes.get("value")
        if isinstance(value, DenseIntOrFPElementsAttr):
            vals = value.get_values()
            return np.asarray(vals, dtype=np.float32 if dtypes.is_float(dtypes.element_type(op.result)) else None)
        if key in self.weights:
            return np.asarray(self.weights[key])
        raise SimError(f"{describe(op)}: weight '{key}' is not in the weights ({len(self.weights)} given)")

    def alloc(self, op: AllocOp) -> None:
        shape, dt = _shape(op.result), _np_dtype(op.result)
        off = _offset(op)
        _check_align(op, off, self.arch, self.warnings)
        region, o = _place(op, self.aregion, off, prod(shape) * dt.itemsize, "alloc", self.private,
                           self.aattr is not None)
        desc = f"alloc at arena offset {off}" if off is not None else "alloc"
        buf = self.globals[op.result] = Buf(region, o, shape, f"{desc} ({describe(op)})",
                                            self.values.new(f"DRAM buffer {list(shape)} of {describe(op)}"), dt)
        self.allocs.append((op.result, buf, node_names(op)))

    def view(self, op: ViewOp) -> None:
        src = self.globals.get(op.source)
        if op.index is not None:
            raise SimError(f"{describe(op)}: a view with an index must be inside a task")
        if not isinstance(src, Buf):
            raise SimError(f"{describe(op)}: its source is not a DRAM buffer")
        shape = _shape(op.result)
        off, nbytes = op.byte_offset, _nbytes(op.result.type)
        if _np_dtype(op.result) != src.dtype:
            raise SimError(f"{describe(op)}: a view of {src.dtype} elements as {op.result.type}")
        fits = off + nbytes <= src.nbytes if op.offset is not None else nbytes == src.nbytes
        if not fits:
            raise SimError(f"{describe(op)}: view of {src.nbytes} bytes as {list(shape)} at byte offset {off}")
        self.globals[op.result] = src.view(shape, offset=off)

    def check_weight_overlaps(self) -> None:
        """Two placed weights may share bytes only when they are the same key at the same offset."""
        placed = sorted(self.placed_weights, key=lambda t: (t[0], t[1]))
        for (s0, e0, k0, _), (s1, e1, k1, op1) in zip(placed, placed[1:]):
            if s1 < e0 and (k0 != k1 or s0 != s1):
                raise SimError(f"{describe(op1)}: weight '{k1}' at DRAM offset {s1} overlaps weight '{k0}' "
                               f"at [{s0}, {e0})")

    def compile_tasks(self, task_ops: list[TaskOp], check_bounds: bool) -> tuple[list[TaskProgram], list[Region], Layout]:
        """Compile every task for its core (checking its core and event slots exist); a task
        whose body another task of its kernel has (`same_body`) reuses that code. Returns
        the tasks and each core's SRAM region, as large as the highest SRAM buffer of a
        distinct body needs (a huge `sram_bytes` costs no host memory), and their `Layout`
        (worked out once per distinct body)."""
        arch = self.arch
        tasks: list[TaskProgram] = []
        compiled: dict[tuple[str, str], list[TaskProgram]] = {}  # (kernel, where) -> its distinct bodies
        cache = CompileCache()
        plan: list[tuple[TaskProgram, TaskProgram | None]] = []  # each task with the one whose code it reuses
        for i, op in enumerate(task_ops):
            core = op.core_id
            prog = TaskProgram(op, i, 0, cache.names)
            if core >= arch.cores:
                raise SimError(f"{prog.where}: runs on core {core} but the arch has cores={arch.cores}")
            for what, slots in (("waits on", prog.waits), ("signals", prog.signals)):
                bad = [s for s in slots if s >= arch.event_slots]
                if bad:
                    raise SimError(f"{prog.where}: {what} event slot {bad[0]} but the arch has "
                                   f"event_slots={arch.event_slots}")
            same = compiled.setdefault((prog.kernel, prog.where), [])
            tmpl = next((t for t in same if len(prog.range) >= len(op.body.block.args) and same_body(t.op, op)), None)
            if tmpl is None:
                same.append(prog)
            plan.append((prog, tmpl))
        bodies = {prog.index: preorder(prog.op.body.block, []) for prog, tmpl in plan if tmpl is None}
        seen: dict[int, tuple[SSAValue, int, int] | None] = {}
        spans = {i: body_spans(ops, seen) for i, ops in bodies.items()}
        extent = max((sram[1] for sram, _ in spans.values() if sram is not None), default=0)
        sram = [Region(f"SRAM of core {c}", SRAM, min(arch.sram_bytes, extent), core=c) for c in range(arch.cores)]
        for prog, tmpl in plan:
            if tmpl is not None:
                reuse_task(prog, tmpl, sram[prog.core], self.warnings, self.values)
            else:
                compile_task(prog, self.globals, sram[prog.core], arch, check_bounds, self.warnings, self.values,
                             self.timing_only, cache, bodies[prog.index])
            tasks.append(prog)
        layout = Layout.of([(prog.op, spans[(tmpl or prog).index], tmpl is None) for prog, tmpl in plan], arch)
        return tasks, sram, layout

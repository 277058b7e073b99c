"""The executable file (`.npuexe`): a compiled task-level module, its weights and its
metadata in one binary file that `npu-run` runs without recompiling.

`Executable.from_module(module, weights, **meta)` packages a module, `save(path)`
writes it and `read_executable(path)` reads it back: the file (a regular file only)
is read into memory once (the run never depends on it again) and checked before
anything is decoded (magic, format version, sizes, each section's bounds and crc32,
zero padding; with `verify`, the sha256); then the program is decoded
(`runtime.binary_ir`) and every op checked as the IR verifier would (its definition,
traits and custom verifier), the weights section bound in place (the DRAM image
`sim.load_program` uses without a copy) and every descriptor cross-checked with the
tasks. A bad, version-mismatched or other-arch file raises `ExecutableError` (one
line naming the region at fault) and is never run. `python -m runtime.executable
dump X` prints the program as MLIR text. Runtime layer: never imports the compiler.

Algorithm
---------
All integers little-endian. Header (`_HEADER`, then two strings):

| offset | size | field |
|---|---|---|
| 0 | 8 | magic `NPUEXE\\0\\1` |
| 8 | 4 | format version (u32, `FORMAT_VERSION`; another one is rejected) |
| 12 | 4 | header size H (u32): where the section table starts, a multiple of 8 |
| 16 | 8 | file size (u64): a shorter file is truncated |
| 24 | 4 | section count N (u32) |
| 28 | 4 | crc32 of the section table |
| 32 | 32 | sha256 of bytes [H, file size): table, sections, padding (checked by `verify`) |
| 64 | 4 | crc32 of bytes [0, H) with these 4 bytes zero |
| 68 | 2 | length C of the compiler version (u16) |
| 70 | 2 | length A of the arch spec (u16) |
| 72 | C | compiler version, utf-8 (`npu-compiler` package version) |
| 72+C | A | the arch, resolved, utf-8 (`arch_params`: every parameter, `cores=4,cube=16x16x16,...`; data, never a file or preset name), zeros up to H |

Section table at H: N entries of 32 bytes (`_SECTION`): kind u32 (1 meta, 2 program,
3 cmdbuf, 4 weights; each exactly once), 4 zero bytes, offset u64, size u64, crc32
u32, 4 zero bytes. Every section starts at an offset aligned to the arch's `align`;
the bytes between sections are zero.

- meta: UTF-8 JSON: `inputs`/`outputs` (name, shape, dtype), `kernels` (the kernel
  table the descriptors index), `tasks` (per task: kernel, core, range, the
  `npu_task.task` op's name (`dump` prints the tasks in this order), its ONNX nodes and its
  compute ops with theirs), `memory` (arena, weights and lower-bound bytes; each
  alloc's and weight's DRAM offset and size), `weights` (key -> offset in the weights
  section, shape), `weights_image_bytes` (I), plus what the compiler adds: `source`
  (path, sha256), `pipeline`, `bucket`.
- program: the task-level module in the binary IR encoding of `runtime.binary_ir`
  (locations and name hints kept; its `npu_task.weight` ops name keys of the weights).
- cmdbuf: a 16-byte head (`_CMDBUF_HEAD`: descriptor count, stride S, offset and
  length of the slot list), zeros up to `align`, then one descriptor per task every
  S bytes (S = 56 rounded up to `align`, so every descriptor is aligned), then the
  slot list (u32 event slots). Descriptor (`_DESCRIPTOR`, 56 bytes): task index u32,
  core u32, kernel id u32 (index into meta `kernels`), flags u32 (bit 0: predicted
  cycles present), range lo u64, range hi u64, predicted cycles u64, waits (first
  slot-list entry u32, count u32), signals (first entry u32, count u32).
- weights: bytes [0, I) are the DRAM weights region as the memory plan lays it out
  (`sim.program.weights_image`: every placed weight in its element type, little-endian
  C-order, at its DRAM offset, zeros between); the weights without a DRAM offset
  follow, each at an `align`ed offset. The meta index gives a placed key its first
  DRAM offset, and each key its shape and element type (`dtype`: f32, f16, ...).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import mmap
import os
import struct
import sys
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from math import prod
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.utils.exceptions import VerifyException

from npu_dialects import dtypes, make_context, module_text
from npu_dialects.arch import Arch, ArchError, arch_of, arch_params, parse_arch_params
from npu_dialects.compute import ComputeOp
from npu_dialects.entry import find_main, int_attr
from npu_dialects.files import open_regular
from npu_dialects.locs import node_names
from npu_dialects.task import AllocOp, TaskOp, WeightOp
from npu_dialects.weights import WEIGHTS_ATTR
from runtime.binary_ir import (
    BinaryIRError,
    check_definitions,
    check_verifiers,
    decode_module,
    encode_module,
    last_line,
)
from runtime.image import (
    CMDBUF,
    FORMAT_VERSION,
    MAGIC,
    META,
    PROGRAM,
    SECTION_NAMES,
    WEIGHTS,
    Image,
    Layout,
    WeightPieces,
    plan_layout,
    section_spans,  # noqa: F401 (re-exported: it was defined here)
    write_image,
)
from runtime.image import HEADER as _HEADER
from runtime.image import HEADER_CRC_AT as _HEADER_CRC_AT
from runtime.image import SECTION as _SECTION
from runtime.image import align_up as _align
from sim.errors import SimError
from sim.interp import task_nodes
from sim.memory import host_values
from sim.program import ARENA_BYTES_ATTR, WEIGHTS_BYTES_ATTR, DramWeights, check_dram, signature, weight_pieces

_CMDBUF_HEAD = struct.Struct("<IIII")
_DESCRIPTOR = struct.Struct("<IIIIQQQIIII")
_HAS_PREDICTION = 1
LOWER_BOUND_ATTR = "npu.dram_lower_bound_bytes"


def compiler_version() -> str:
    """The installed `npu-compiler` version (pyproject's), or `unknown` when not installed."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("npu-compiler")
    except PackageNotFoundError:
        return "unknown"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a regular file's bytes (the source model recorded in the metadata:
    a path read from data, so a device or FIFO is refused, OSError, before any read)."""
    h = hashlib.sha256()
    with open_regular(path) as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class ExecutableError(Exception):
    """A bad executable file: `str(e)` is one line, `'PATH': REGION: what is wrong`, where
    REGION is `file`, `header`, `section table`, `meta`, `program`, `cmdbuf`,
    `weights` or `padding` (also in `.region`)."""

    def __init__(self, region: str, message: str, path: str | None = None):
        super().__init__(region, message)
        self.region, self.message, self.path = region, message, path

    def __str__(self) -> str:
        return f"'{self.path}': {self.region}: {self.message}" if self.path else f"{self.region}: {self.message}"


class ArchMismatchError(ExecutableError):
    """The executable was compiled for `compiled`, the caller asked for `requested`."""

    def __init__(self, compiled: Arch, requested: Arch, path: str | None = None):
        self.compiled, self.requested = compiled, requested
        super().__init__("header", f"compiled for arch '{compiled.spec()}' but asked to run on "
                                   f"'{requested.spec()}'", path)


@dataclass(frozen=True)
class TaskDescriptor:
    """One command-buffer entry: task `index` runs the code of kernel `kernel_id` (an
    index into meta `kernels`) on `core` over tiles [lo, hi), after consuming the
    event slots `waits`, then signals `signals`."""

    index: int
    core: int
    kernel_id: int
    lo: int
    hi: int
    predicted_cycles: int | None
    waits: tuple[int, ...]
    signals: tuple[int, ...]


@dataclass
class Executable:
    """A loaded or packaged executable. `module` is the task-level program (decoded from
    `program`, its binary IR), `weights` its weights keyed by `npu_task.weight` key
    (read-only views of `weights_section` in their element types, which is the file's bytes read into memory by
    `read_executable`; their `image` is the DRAM weights region `sim.load_program` uses
    as is), `arch` the machine it was compiled for, `meta` the metadata (module
    docstring), `descriptors` the command buffer, one per task in program order."""

    module: ModuleOp
    _weights: DramWeights | None
    arch: Arch
    meta: dict[str, Any]
    descriptors: list[TaskDescriptor]
    program: bytes = field(repr=False)
    _section: np.ndarray | WeightPieces = field(repr=False)

    @property
    def weights_section(self) -> np.ndarray:
        """The weights section's bytes (read-only uint8); a freshly packaged executable
        assembles them on first use only (writing the file streams the pieces)."""
        if isinstance(self._section, WeightPieces):
            self._section = self._section.assemble()
        return self._section

    @property
    def weights(self) -> DramWeights:
        if self._weights is None:
            self._weights = _bind_weights(self.weights_section, self.meta["weights"],
                                          self.meta["weights_image_bytes"])
        return self._weights

    @classmethod
    def from_module(cls, module: ModuleOp, weights: Mapping[str, np.ndarray], **meta_extra: Any) -> Executable:
        """Package a task-level module and its weights (only those its `npu_task.weight`
        ops read from the weights are kept, each in its op's element type). `meta_extra` (JSON values:
        `source`, `pipeline`, `bucket`, ...) is added to the metadata. Raises
        ExecutableError when the module is not task-level or a weight is missing."""
        try:
            sig = signature(module)
        except SimError as e:
            raise ExecutableError("program", str(e)) from None
        arch = arch_of(module)
        tasks = _tasks(module)
        kernels = list(dict.fromkeys(t.kernel.data for t in tasks))
        section, index, image_bytes = _pack_weights(module, weights, arch)
        meta: dict[str, Any] = {
            "format_version": FORMAT_VERSION, "compiler_version": compiler_version(), "arch": arch.spec(),
            "inputs": [{"name": n, "shape": list(s), "dtype": sig.input_dtypes.get(n, "float32")}
                       for n, s in sig.inputs],
            "outputs": [{"name": n, "shape": list(s), "dtype": sig.output_dtypes.get(n, "float32")}
                        for n, s in sig.outputs],
            "kernels": kernels, "tasks": _task_map(tasks), "memory": _memory_plan(module),
            "weights": index, "weights_image_bytes": image_bytes, **meta_extra}
        descriptors = [_descriptor(i, t, kernels.index(t.kernel.data)) for i, t in enumerate(tasks)]
        return cls(module, None, arch, meta, descriptors, _encode_program(module), section)

    def chunks(self) -> list[bytes | bytearray | memoryview]:
        """The file image as consecutive pieces (header, table, padding, sections): what
        `to_bytes` joins and `write_image` writes, without copying the weights."""
        return self.plan().chunks()

    def plan(self) -> Layout:
        """The file image planned (`runtime.image.write_layout` writes it, hashing as it goes)."""
        align = self.arch.align
        sections = [(META, json.dumps(self.meta, separators=(",", ":")).encode()),
                    (PROGRAM, self.program),
                    (CMDBUF, _pack_cmdbuf(self.descriptors, align)),
                    (WEIGHTS, self._section if isinstance(self._section, WeightPieces)
                     else memoryview(self._section.data).cast("B"))]
        return plan_layout(compiler_version(), arch_params(self.arch), sections, align)

    def to_bytes(self) -> bytes:
        """The file image (layout in the module docstring)."""
        return b"".join(self.chunks())

    def save(self, path: str | os.PathLike[str]) -> int:
        """Write the file (atomically, see `write_image`); returns its size."""
        chunks = self.chunks()
        write_image(path, chunks)
        return sum(len(c) for c in chunks)

    def kernel(self, d: TaskDescriptor) -> str:
        """The kernel name of a descriptor."""
        return self.meta["kernels"][d.kernel_id]

    def program_text(self) -> str:
        """The program as MLIR text (what `dump` prints; its tasks in the meta's order)."""
        return program_text(self.module)





def read_executable(path: str | os.PathLike[str], arch: Arch | None = None, verify: bool = False) -> Executable:
    """Read and check an executable file (see the module docstring). The file, a regular
    file (a device, FIFO or socket is refused before a byte is read), is read into
    memory once: the executable (its weights are read-only views of those bytes) never
    depends on the file again, which may be overwritten or deleted meanwhile (a file
    changed while it is read fails its checks). `arch`, when given, must be the arch it
    was compiled for (else ArchMismatchError, before the program is decoded). Every op
    of the program is checked as the IR verifier would (its definition, traits and
    custom verifier); `verify` also checks the file's sha256 (every crc32 and the zero
    padding are always checked) and runs the whole IR verifier. Raises ExecutableError,
    one line naming the region at fault."""
    try:
        data = _read_file(path)
    except OSError as e:
        raise ExecutableError("file", f"cannot read: {e.strerror or e}", str(path)) from None
    except MemoryError:
        raise ExecutableError("file", "cannot read: not enough memory for the file", str(path)) from None
    return from_bytes(data, str(path), arch, verify)


def _read_file(path: str | os.PathLike[str]) -> Image:
    """The bytes of the regular file `path` (its size when it is opened; a file cut
    meanwhile gives fewer bytes, which the checks call truncated), read into private
    anonymous memory (pre-faulted, `MAP_POPULATE`: 2-3x faster than a fresh bytearray
    for large files). Not the file mapped: a mapped file overwritten in place (`cp
    other.npuexe it.npuexe` during a run) kills the process with SIGBUS when a page that
    is gone is touched."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return b""
        try:
            buf: mmap.mmap | bytearray = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0)
                                                   | getattr(mmap, "MAP_POPULATE", 0))
        except (OSError, ValueError, AttributeError):
            buf = bytearray(size)
        got = 0
        with memoryview(buf) as view:
            while got < size:
                n = f.readinto(view[got:])
                if not n:
                    break
                got += n
            return buf if got == size else bytes(view[:got])


def from_bytes(data: Image, name: str | None = None, arch: Arch | None = None, verify: bool = False) -> Executable:
    """`read_executable` on a file image already in memory; `name` is the path for messages."""
    try:
        image = _Image.check(data, verify)
        if arch is not None and arch != image.arch:
            raise ArchMismatchError(image.arch, arch)
        meta = _parse_meta(image.section(META))
        program = bytes(image.section(PROGRAM))
        module = decode_program(program, verify)
        descriptors = _unpack_cmdbuf(image.section(CMDBUF), image.arch.align)
        section = np.frombuffer(image.data, np.uint8, image.sections[WEIGHTS][1], image.sections[WEIGHTS][0])
        section.flags.writeable = False  # (the weights region is read-only on the device)
        weights = _bind_weights(section, *_weights_meta(meta))
        exe = Executable(module, weights, image.arch, meta, descriptors, program, section)
        _cross_check_decoded(exe, verify)
    except ExecutableError as e:
        e.path = name
        raise
    return exe


# ----------------------------------------------------------------------------- packaging


def _tasks(module: ModuleOp) -> list[TaskOp]:
    """The top-level tasks of `@main`, in program order (the order the simulator queues them)."""
    fn = find_main(module)
    if fn is None or not fn.body.blocks:
        raise ExecutableError("program", "the module has no 'func.func @main'")
    return [op for op in fn.body.block.ops if isinstance(op, TaskOp)]


def _descriptor(index: int, task: TaskOp, kernel_id: int) -> TaskDescriptor:
    pc = task.predicted_cycles
    lo, hi = task.bounds
    return TaskDescriptor(index, task.core_id, kernel_id, lo, hi, pc.value.data if pc is not None else None,
                          tuple(task.wait_slots), tuple(task.signal_slots))


def _referenced_weights(module: ModuleOp, weights: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The weights the module's `npu_task.weight` ops read from outside the text, as
    little-endian arrays of their op's element type (`sim.memory.host_values`: an integer
    weight must hold integers of its range) in first-use order."""
    out: dict[str, np.ndarray] = {}
    for op in module.walk():
        if isinstance(op, WeightOp) and "value" not in op.attributes and op.key.data not in out:
            key = op.key.data
            if key not in weights:
                raise ExecutableError("weights", f"the program reads weight '{key}' but it is not in the "
                                                 f"weights ({len(weights)} given)")
            try:
                dt = dtypes.np_dtype(op.result).newbyteorder("<")
                out[key] = np.ascontiguousarray(host_values(dt, weights[key]))
            except (ValueError, VerifyException) as e:
                raise ExecutableError("weights", f"weight '{key}' {e}") from None
    return out


@contextmanager
def _without_side_file(module: ModuleOp) -> Iterator[ModuleOp]:
    """The module without its `npu.weights` side-file attribute for the duration (the
    weights travel in the weights section)."""
    saved = module.attributes.pop(WEIGHTS_ATTR, None)
    try:
        yield module
    finally:
        if saved is not None:
            module.attributes[WEIGHTS_ATTR] = saved


def program_text(module: ModuleOp) -> str:
    """The program as MLIR text, as an executable holds it (without `npu.weights`)."""
    with _without_side_file(module):
        return module_text(module)


def _encode_program(module: ModuleOp) -> bytes:
    with _without_side_file(module):
        try:
            return encode_module(module, make_context())
        except BinaryIRError as e:
            raise ExecutableError("program", str(e)) from None


def _task_map(tasks: list[TaskOp]) -> list[dict[str, Any]]:
    """Per task: kernel, core, range, op name, its ONNX nodes, and its compute ops with
    their ONNX nodes. (No line in the program's text: printing the program only for
    that was a sixth of a cold compile.)"""
    return [{"kernel": t.kernel.data, "core": t.core_id, "range": list(t.bounds), "op": t.name,
             "onnx_nodes": task_nodes(t),
             "ops": [[op.name, node_names(op)] for op in t.body.walk() if isinstance(op, ComputeOp)]}
            for t in tasks]


def _memory_plan(module: ModuleOp) -> dict[str, Any]:
    """The DRAM plan the compiler recorded: region sizes, each weight's and alloc's offset."""
    fn = find_main(module)
    ops = list(fn.body.block.ops) if fn is not None and fn.body.blocks else []

    def place(op: WeightOp | AllocOp) -> dict[str, Any]:
        t = op.result.type
        shape = list(t.get_shape()) if isinstance(t, MemRefType) else []
        entry: dict[str, Any] = {"offset": op.offset.value.data if op.offset is not None else None,
                                 "bytes": dtypes.nbytes(t) if isinstance(t, MemRefType) else 0, "shape": shape}
        if isinstance(op, WeightOp):
            entry["key"] = op.key.data
        else:
            entry["onnx_nodes"] = node_names(op)
        return entry

    return {"arena_bytes": int_attr(module, ARENA_BYTES_ATTR), "weights_bytes": int_attr(module, WEIGHTS_BYTES_ATTR),
            "lower_bound_bytes": int_attr(module, LOWER_BOUND_ATTR),
            "allocs": [place(op) for op in ops if isinstance(op, AllocOp)],
            "weights": [place(op) for op in ops if isinstance(op, WeightOp)]}


def _placed_offsets(module: ModuleOp) -> dict[str, int]:
    """Key -> the DRAM offset of its first `npu_task.weight` op with one (weights read
    from the weights section only, not inline values)."""
    fn = find_main(module)
    out: dict[str, int] = {}
    for op in fn.body.block.ops if fn is not None and fn.body.blocks else ():
        if isinstance(op, WeightOp) and op.offset is not None and "value" not in op.attributes:
            out.setdefault(op.key.data, op.offset.value.data)
    return out


def placed_more_than_once(module: ModuleOp) -> set[str]:
    """Keys the program places at more than one DRAM offset (the index names the first)."""
    fn = find_main(module)
    seen: dict[str, set[int]] = {}
    for op in fn.body.block.ops if fn is not None and fn.body.blocks else ():
        if isinstance(op, WeightOp) and op.offset is not None and "value" not in op.attributes:
            seen.setdefault(op.key.data, set()).add(op.offset.value.data)
    return {k for k, offs in seen.items() if len(offs) > 1}


def _pack_weights(module: ModuleOp, weights: Mapping[str, np.ndarray],
                  arch: Arch) -> tuple[WeightPieces, dict[str, dict[str, Any]], int]:
    """The weights section as pieces: the DRAM weights image (each placed weight at its
    offset, zeros between), then each weight without a DRAM offset at an `align`ed
    offset; its index (key -> offset, shape) and the image's size."""
    blobs = _referenced_weights(module, weights)
    try:
        image_bytes, pieces = weight_pieces(module, blobs, arch)
    except SimError as e:
        raise ExecutableError("weights", str(e)) from None
    placed = _placed_offsets(module)
    index: dict[str, dict[str, Any]] = {}
    end = image_bytes
    for key, a in blobs.items():
        offset = placed[key] if key in placed else _align(end, arch.align)
        index[key] = {"offset": offset, "shape": list(a.shape), "dtype": _type_name(a.dtype)}
        if key not in placed:
            end = offset + a.nbytes
            pieces.append((offset, a.reshape(-1).view(np.uint8)))
    return WeightPieces(max(end, image_bytes), pieces), index, image_bytes


def _pack_cmdbuf(descriptors: list[TaskDescriptor], align: int) -> bytes:
    """The command buffer: head, descriptors every `stride` bytes, slot list."""
    stride = _align(_DESCRIPTOR.size, align)
    first = _align(_CMDBUF_HEAD.size, align)
    slots: list[int] = []
    body = bytearray(first + stride * len(descriptors))
    for i, d in enumerate(descriptors):
        waits_at, signals_at = len(slots), len(slots) + len(d.waits)
        slots += [*d.waits, *d.signals]
        flags = _HAS_PREDICTION if d.predicted_cycles is not None else 0
        _DESCRIPTOR.pack_into(body, first + i * stride, d.index, d.core, d.kernel_id, flags, d.lo, d.hi,
                              d.predicted_cycles or 0, waits_at, len(d.waits), signals_at, len(d.signals))
    _CMDBUF_HEAD.pack_into(body, 0, len(descriptors), stride, len(body), len(slots))
    return bytes(body) + struct.pack(f"<{len(slots)}I", *slots)


def seal(buf: bytearray) -> None:
    """Recompute every checksum of a file image in place, as the writer does last: each
    section's crc32 (from the table's offsets and sizes), the table's crc32, the sha256
    and the header's crc32. (Tests use it to forge files whose checksums hold.)"""
    header_size, count = _HEADER.unpack_from(buf)[2], _HEADER.unpack_from(buf)[4]
    table_end = header_size + count * _SECTION.size
    with memoryview(buf) as view:  # (checksums over views: no copy of the weights)
        for i in range(count):
            at = header_size + i * _SECTION.size
            kind, _, offset, size, _, _ = _SECTION.unpack_from(buf, at)
            _SECTION.pack_into(buf, at, kind, 0, offset, size, zlib.crc32(view[offset:offset + size]), 0)
        struct.pack_into("<I", buf, 28, zlib.crc32(view[header_size:table_end]))
        buf[32:64] = hashlib.sha256(view[header_size:]).digest()
    struct.pack_into("<I", buf, _HEADER_CRC_AT, 0)
    struct.pack_into("<I", buf, _HEADER_CRC_AT, zlib.crc32(buf[:header_size]))


# ----------------------------------------------------------------------------- checking


@dataclass
class _Image:
    """A file image whose header, table, section bounds and checksums all hold."""

    data: Image
    arch: Arch
    compiler: str
    sections: dict[int, tuple[int, int]]  # kind -> (offset, size)

    def section(self, kind: int) -> memoryview:
        offset, size = self.sections[kind]
        return memoryview(self.data)[offset:offset + size]

    @classmethod
    def check(cls, data: Image, sha256: bool = False) -> _Image:
        """Validate everything but the contents of the sections, in file order (the
        sha256 of the whole file only when asked: each section's crc32 is checked)."""
        header_size, file_size, count, table_crc, digest = _check_header(data)
        compiler, arch = _header_strings(data)
        table_end = header_size + count * _SECTION.size
        if len(data) < file_size:
            raise ExecutableError("file", _truncation(data, header_size, count, table_crc, file_size))
        if len(data) > file_size:
            raise ExecutableError("file", f"{len(data) - file_size} bytes after the end the header gives "
                                          f"({file_size} bytes)")
        if zlib.crc32(data[header_size:table_end]) != table_crc:
            raise ExecutableError("section table", "crc32 mismatch: the table is corrupted")
        sections = _check_table(data, header_size, count, arch.align)
        for kind, (offset, size, stored) in sections.items():
            got = zlib.crc32(memoryview(data)[offset:offset + size])
            if got != stored:
                raise ExecutableError(SECTION_NAMES[kind], f"crc32 {got:#010x} does not match the stored "
                                                           f"{stored:#010x}: the section is corrupted")
        _check_padding(data, table_end, sections)
        if sha256 and hashlib.sha256(memoryview(data)[header_size:]).digest() != digest:
            raise ExecutableError("file", "sha256 mismatch while every crc32 holds and the padding is zero: "
                                          "the file was changed after it was written")
        return cls(data, arch, compiler, {k: (o, n) for k, (o, n, _) in sections.items()})


def _check_padding(data: Image, table_end: int, sections: dict[int, tuple[int, int, int]]) -> None:
    """The bytes between the table and the sections, and between sections, are zero."""
    view = memoryview(data)
    at = table_end
    for offset, size, _ in sorted(sections.values()):
        if view[at:offset].tobytes().strip(b"\0"):
            raise ExecutableError("padding", f"non-zero bytes in the padding at [{at}, {offset}): the file "
                                             "is corrupted")
        at = offset + size


def _check_header(data: Image) -> tuple[int, int, int, int, bytes]:
    """Magic, version, header size and crc; returns (header size, file size, section
    count, table crc32, sha256)."""
    if data[:len(MAGIC)] != MAGIC:
        if len(data) < len(MAGIC) and MAGIC.startswith(data):
            raise ExecutableError("file", f"truncated: {len(data)} bytes, not even the magic")
        raise ExecutableError("header", "not an npu executable (bad magic)")
    if len(data) < _HEADER.size:
        raise ExecutableError("file", f"truncated inside the header: {len(data)} bytes, the header "
                                      f"alone takes {_HEADER.size}")
    _, version, header_size, file_size, count, table_crc, digest, crc, clen, alen = _HEADER.unpack_from(data)
    if version != FORMAT_VERSION:
        raise ExecutableError("header", f"version mismatch: format version {version}, this npu-compiler "
                                        f"({compiler_version()}) reads version {FORMAT_VERSION}; recompile "
                                        "the model with npu-compile")
    if header_size != _align(_HEADER.size + clen + alen, 8) or header_size > file_size:
        raise ExecutableError("header", f"inconsistent sizes (header {header_size} bytes, strings "
                                        f"{clen} + {alen}, file {file_size}): the header is corrupted")
    if len(data) < header_size:
        raise ExecutableError("file", f"truncated inside the header: {len(data)} of its {header_size} bytes")
    image = bytearray(data[:header_size])
    image[_HEADER_CRC_AT:_HEADER_CRC_AT + 4] = bytes(4)
    if zlib.crc32(image) != crc:
        raise ExecutableError("header", "crc32 mismatch: the header is corrupted")
    return header_size, file_size, count, table_crc, digest


def _header_strings(data: Image) -> tuple[str, Arch]:
    """The compiler version and the arch (`parse_arch_params`: data, nothing is opened)."""
    clen, alen = _HEADER.unpack_from(data)[8:10]
    try:
        compiler = bytes(data[_HEADER.size:_HEADER.size + clen]).decode()
        text = bytes(data[_HEADER.size + clen:_HEADER.size + clen + alen]).decode()
        return compiler, parse_arch_params(text)
    except (UnicodeDecodeError, ArchError) as e:
        raise ExecutableError("header", f"bad compiler version or arch: {e}") from None


def _truncation(data: Image, header_size: int, count: int, table_crc: int, file_size: int) -> str:
    """`truncated: ...` naming the region the file ends in (when the table is intact)."""
    where = "the section table"
    table_end = header_size + count * _SECTION.size
    if len(data) >= table_end and zlib.crc32(data[header_size:table_end]) == table_crc:
        where = "padding between sections"
        for i in range(count):
            kind, _, offset, size, _, _ = _SECTION.unpack_from(data, header_size + i * _SECTION.size)
            if offset <= len(data) < offset + size:
                where = f"section '{SECTION_NAMES.get(kind, kind)}'"
    return f"truncated: {len(data)} of its {file_size} bytes, it ends inside {where}"


def _check_table(data: Image, header_size: int, count: int, align: int) -> dict[int, tuple[int, int, int]]:
    """Each kind once, each section aligned, after the table, inside the file, disjoint;
    returns kind -> (offset, size, stored crc32)."""
    table_end = header_size + count * _SECTION.size
    sections: dict[int, tuple[int, int, int]] = {}
    for i in range(count):
        kind, _, offset, size, crc, _ = _SECTION.unpack_from(data, header_size + i * _SECTION.size)
        name = SECTION_NAMES.get(kind)
        if name is None or kind in sections:
            raise ExecutableError("section table", f"entry {i}: {'unknown' if name is None else 'repeated'} "
                                                   f"section kind {kind}")
        if offset % align or offset < table_end or offset + size > len(data):
            raise ExecutableError("section table", f"section '{name}' at [{offset}, {offset + size}) is not "
                                                   f"{align}-aligned inside [{table_end}, {len(data)})")
        sections[kind] = (offset, size, crc)
    missing = [n for k, n in SECTION_NAMES.items() if k not in sections]
    if missing:
        raise ExecutableError("section table", f"no '{missing[0]}' section")
    spans = sorted((o, n) for o, n, _ in sections.values())
    for (o0, s0), (o1, _) in zip(spans, spans[1:]):
        if o0 + s0 > o1:
            raise ExecutableError("section table", f"sections at {o0} and {o1} overlap")
    return sections


# ----------------------------------------------------------------------------- parsing


def _parse_meta(view: memoryview) -> dict[str, Any]:
    try:
        meta = json.loads(bytes(view).decode())
    except UnicodeDecodeError as e:
        raise ExecutableError("meta", f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ExecutableError("meta", f"not valid JSON: {e}") from None
    for key, kind in (("kernels", list), ("weights", dict), ("inputs", list), ("outputs", list),
                      ("weights_image_bytes", int)):
        if not isinstance(meta, dict) or not isinstance(meta.get(key), kind):
            raise ExecutableError("meta", f"no '{key}' {kind.__name__}")
    return meta


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a module is built, and its objects go straight
    to the oldest generation after (`gc.freeze` + `unfreeze`, unless something else froze
    objects): they all stay alive, and the collector would otherwise walk each of them
    several times, during decoding and again in the first allocations after it (for
    densenet121 3-4x the decoding time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()


def decode_program(program: bytes, verify: bool = False) -> ModuleOp:
    """The module of a `program` section, checked by the binary IR decoder, then each op
    against its definition (`check_definitions`) and by its traits and custom verifier
    (`check_verifiers`: what the simulator trusts, e.g. a pool's pads against its tiles)
    or, with `verify`, by the whole IR verifier. Raises ExecutableError naming the
    program."""
    with _gc_paused():
        try:
            module = decode_module(program, make_context())
        except BinaryIRError as e:
            raise ExecutableError("program", f"bad binary IR: {e}") from None
        _verify(module, full=verify)
    return module


def _verify(module: ModuleOp, full: bool = True) -> None:
    """The IR verifier (`full`), or `check_definitions` then `check_verifiers` (the same
    checks, each distinct op's definition once), as an ExecutableError."""
    try:
        if full:
            module.verify()
        else:
            check_definitions(module)
            check_verifiers(module)
    except Exception as e:  # noqa: BLE001 - VerifyException, or whatever an op's verifier trips on
        raise ExecutableError("program", f"does not verify: {last_line(e)}") from None


def _unpack_cmdbuf(view: memoryview, align: int) -> list[TaskDescriptor]:
    """The descriptors (their slot lists resolved); the head's sizes are checked first."""
    if len(view) < _CMDBUF_HEAD.size:
        raise ExecutableError("cmdbuf", f"{len(view)} bytes, less than its {_CMDBUF_HEAD.size}-byte head")
    count, stride, slots_at, nslots = _CMDBUF_HEAD.unpack_from(view)
    first = _align(_CMDBUF_HEAD.size, align)
    if (stride < _DESCRIPTOR.size or stride % align or slots_at != first + count * stride
            or slots_at + 4 * nslots != len(view)):
        raise ExecutableError("cmdbuf", f"inconsistent head: {count} descriptors of stride {stride}, "
                                        f"{nslots} slots at {slots_at}, in {len(view)} bytes (align {align})")
    slots = struct.unpack_from(f"<{nslots}I", view, slots_at)
    out = []
    for i in range(count):
        index, core, kid, flags, lo, hi, pc, wa, wn, sa, sn = _DESCRIPTOR.unpack_from(view, first + i * stride)
        if wa + wn > nslots or sa + sn > nslots:
            raise ExecutableError("cmdbuf", f"descriptor {i}: slot list entries past its {nslots} slots")
        out.append(TaskDescriptor(index, core, kid, lo, hi, pc if flags & _HAS_PREDICTION else None,
                                  tuple(slots[wa:wa + wn]), tuple(slots[sa:sa + sn])))
    return out


def _type_name(dt: np.dtype) -> str:
    """`f32`, `i8`, ... for the numpy dtype of one of the chip's element types."""
    return next(name for name, (_, _, d) in dtypes.ELEMENT_TYPES.items() if d == dt.newbyteorder("="))


def _weights_meta(meta: dict[str, Any]) -> tuple[dict[str, tuple[int, tuple[int, ...], str]], int]:
    """The weight index as key -> (offset, shape, element type), and the image's size."""
    index: dict[str, tuple[int, tuple[int, ...], str]] = {}
    for key, entry in meta["weights"].items():
        try:
            index[key] = int(entry["offset"]), tuple(int(d) for d in entry["shape"]), str(entry["dtype"])
        except (KeyError, TypeError, ValueError):
            raise ExecutableError("meta", f"bad weights entry for '{key}': {entry!r}") from None
        if index[key][2] not in dtypes.ELEMENT_TYPES:
            raise ExecutableError("meta", f"weight '{key}' has element type {index[key][2]!r}, not one of "
                                          f"{', '.join(dtypes.ELEMENT_TYPES)}")
    return index, meta["weights_image_bytes"]


def _bind_weights(section: np.ndarray, index: Mapping[str, Any], image_bytes: int) -> DramWeights:
    """Read-only views of the weights section in their element types by the index (key
    -> offset, shape and type, as tuples or meta entries), with its first `image_bytes`
    as the image."""
    if not 0 <= image_bytes <= section.size:
        raise ExecutableError("weights", f"a weights image of {image_bytes} bytes in a section of {section.size}")
    out: dict[str, np.ndarray] = {}
    for key, entry in index.items():
        at, shape, name = (entry["offset"], entry["shape"], entry["dtype"]) if isinstance(entry, dict) else entry
        dt = dtypes.ELEMENT_TYPES[name][2].newbyteorder("<")
        nbytes = dt.itemsize * prod(shape)
        if at < 0 or at % dt.itemsize or at + nbytes > section.size:
            raise ExecutableError("weights", f"'{key}' at [{at}, {at + nbytes}) is not a {dt.itemsize}-byte "
                                             f"aligned blob inside the section's {section.size} bytes")
        out[key] = section[at:at + nbytes].view(dt).reshape(shape)
    return DramWeights(out, section[:image_bytes])


# ----------------------------------------------------------------------------- cross-check


def _cross_check_decoded(exe: Executable, verified: bool) -> None:
    """`cross_check` of a freshly decoded program. Without the whole verifier, a program
    whose ops break their verifiers (a forged file whose checksums hold) may trip it:
    then the verifier names the op (else the failure is reported as it is)."""
    try:
        cross_check(exe)
    except ExecutableError:
        raise
    except Exception as e:  # noqa: BLE001 - an op without the properties its definition gives it, ...
        if not verified:
            _verify(exe.module)
        raise ExecutableError("program", f"cannot cross-check: {type(e).__name__}: {last_line(e)}") from None


def cross_check(exe: Executable) -> None:
    """The program, metadata and command buffer of `exe` agree: the program's arch is the
    header's, its I/O signature the meta's, every weight it reads has a blob (a placed
    one at its DRAM offset in the image, which is the program's weights region), and
    descriptor i is task i (core, range, waits, signals, kernel, prediction)."""
    try:
        program_arch = arch_of(exe.module)
    except ArchError as e:
        raise ExecutableError("program", f"bad arch attribute: {e}") from None
    if program_arch != exe.arch:
        raise ExecutableError("program", f"compiled for arch '{program_arch.spec()}' but the header "
                                         f"says '{exe.arch.spec()}'")
    _check_signature(exe)
    try:
        check_dram(exe.module)
    except SimError as e:
        raise ExecutableError("program", str(e)) from None
    _check_weights(exe)
    tasks = _tasks(exe.module)
    if len(tasks) != len(exe.descriptors):
        raise ExecutableError("cmdbuf", f"{len(exe.descriptors)} descriptors for the program's {len(tasks)} tasks")
    kernels = exe.meta["kernels"]
    for i, (task, d) in enumerate(zip(tasks, exe.descriptors)):
        want = _descriptor(i, task, kernels.index(task.kernel.data) if task.kernel.data in kernels else -1)
        if d != want:
            raise ExecutableError("cmdbuf", _disagreement(d, want, task, kernels))


def _disagreement(d: TaskDescriptor, want: TaskDescriptor, task: TaskOp, kernels: list[str]) -> str:
    """`descriptor i disagrees with the program's task #i ('K'): FIELD x in the command buffer, y in the program`."""
    name = next(f for f in TaskDescriptor.__dataclass_fields__ if getattr(d, f) != getattr(want, f))
    got, ok = getattr(d, name), getattr(want, name)
    if name == "kernel_id":
        name, got = "kernel", repr(kernels[got]) if 0 <= got < len(kernels) else f"id {got} (no such kernel)"
        ok = repr(task.kernel.data)
    return (f"descriptor {want.index} disagrees with the program's task #{want.index} ('{task.kernel.data}'): "
            f"{name} {got} in the command buffer, {ok} in the program")


def _check_weights(exe: Executable) -> None:
    """Every weight the program reads from the weights has a blob of the element type it
    reads; the image is the size of the program's weights region and holds each placed
    key's first placement."""
    image_bytes = exe.weights.image.size
    wanted = int_attr(exe.module, WEIGHTS_BYTES_ATTR)
    placed_end = 0
    for op in exe.module.walk():
        if isinstance(op, WeightOp) and "value" not in op.attributes:
            blob = exe.weights.get(op.key.data)
            if blob is None:
                raise ExecutableError("weights", f"the program reads weight '{op.key.data}', which has no blob")
            reads = dtypes.element_type(op.result)
            if blob.dtype.newbyteorder("=") != dtypes.np_dtype(reads):
                raise ExecutableError("weights", f"weight '{op.key.data}' is {_type_name(blob.dtype)} in the weight "
                                                 f"index but the program reads it as {reads}")
        if isinstance(op, WeightOp) and op.offset is not None and isinstance(op.result.type, MemRefType):
            placed_end = max(placed_end, op.offset.value.data + dtypes.nbytes(op.result.type))
    if image_bytes != (wanted if wanted is not None else placed_end):
        raise ExecutableError("weights", f"a weights image of {image_bytes} bytes for the program's weights "
                                         f"region of {wanted if wanted is not None else placed_end}")
    index = exe.meta["weights"]
    for key, offset in _placed_offsets(exe.module).items():
        if index[key]["offset"] != offset:
            raise ExecutableError("weights", f"'{key}' is at offset {index[key]['offset']} of the section "
                                             f"but at {offset} in the program's weights region")


def _check_signature(exe: Executable) -> None:
    try:
        sig = signature(exe.module)
    except SimError as e:
        raise ExecutableError("program", str(e)) from None
    have = [[n, list(s)] for n, s in sig.inputs + sig.outputs]
    said = [[e.get("name"), e.get("shape")] for e in exe.meta["inputs"] + exe.meta["outputs"] if isinstance(e, dict)]
    if have != said:
        raise ExecutableError("meta", f"inputs/outputs {said} but the program's are {have}")


# ----------------------------------------------------------------------------- dump


def main(argv: list[str] | None = None) -> int:
    """`python -m runtime.executable dump X.npuexe [-o OUT.mlir]`: the program of an
    executable as MLIR text; a bad file is its one-line error and exit code 1."""
    ap = argparse.ArgumentParser(prog="python -m runtime.executable",
                                 description="Inspect an executable file (.npuexe).")
    sub = ap.add_subparsers(dest="command", required=True)
    dump = sub.add_parser("dump", help="print the program as MLIR text (it parses back to the same program)")
    dump.add_argument("executable", metavar="X.npuexe")
    dump.add_argument("-o", "--output", metavar="OUT.mlir", help="write the text there instead of stdout")
    args = ap.parse_args(argv)
    try:
        text = read_executable(args.executable).program_text()
    except ExecutableError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

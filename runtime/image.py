"""The executable file's layout, apart from what it holds: the header, the section
table, the checksums, the weights section streamed in pieces (`WeightPieces`), writing
a file image atomically. `runtime.executable` packages and checks executables with
it; the compile cache (`tools/compile_cache.py`, `tools/reweigh.py`) checks and
rewrites images with it without loading the compiler or the simulator. The format
itself is documented in `runtime/executable.py`.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from npu_dialects.files import release_pages

if TYPE_CHECKING:  # (numpy loads when a section is assembled: a cache hit never does)
    import numpy as np

MAGIC = b"NPUEXE\x00\x01"
FORMAT_VERSION = 4
"""2: the header's arch was a spec (`default,cores=1`, or a chip file's path: read from
data); 3: the arch resolved, every parameter (`arch_params`); 4: typed weights (each in
its element type, the meta index naming it)."""
Image = bytes | bytearray | mmap.mmap
"""A file image: its bytes in memory (what `read_executable` reads) or a mapped file."""
HEADER = struct.Struct("<8sIIQII32sIHH")
HEADER_CRC_AT = 64
SECTION = struct.Struct("<IIQQII")
META, PROGRAM, CMDBUF, WEIGHTS = 1, 2, 3, 4
SECTION_NAMES = {META: "meta", PROGRAM: "program", CMDBUF: "cmdbuf", WEIGHTS: "weights"}


def align_up(n: int, a: int) -> int:
    return -(-n // a) * a


def write_image(path: str | os.PathLike[str], data: bytes | list[bytes | bytearray | memoryview]) -> None:
    """Write a file image (bytes, or `Executable.chunks`) through a temporary file
    renamed into place, so a failed write never leaves a partial executable. Raises OSError."""
    _write_atomic(path, lambda f: write_chunks(f, [data] if isinstance(data, bytes) else data))


def write_chunks(f, chunks) -> None:
    """Write `chunks` to the file `f` in order, each weight mapped from the model file
    given back once written (`done_with`)."""
    for piece in sliced(chunks):
        f.write(piece)
        done_with(piece)


SLICE_BYTES = 1 << 20
"""Images are read and written in pieces of at most this size (`sliced`): a weight's
pages go back as each piece is done with, so none is held whole."""


def sliced(chunks) -> Iterator:
    """The chunks in order, each view larger than `SLICE_BYTES` cut into pieces of at
    most that size."""
    for chunk in chunks:
        if not isinstance(chunk, memoryview) or chunk.nbytes <= SLICE_BYTES:
            yield chunk
            continue
        flat = chunk.cast("B") if chunk.format != "B" or chunk.ndim != 1 else chunk
        for i in range(0, flat.nbytes, SLICE_BYTES):
            yield flat[i:i + SLICE_BYTES]


def done_with(chunk: object) -> None:
    """A piece of an image read (checksummed, written): when it is a weight mapped
    read-only from the model file, its pages go back (`release_pages`), so writing an
    executable never holds all of the model's weights in memory at once."""
    if isinstance(chunk, memoryview):
        release_pages(chunk.obj)


def _write_atomic(path: str | os.PathLike[str], write) -> None:
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)  # what open(path, "w") would give, not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def section_spans(data: bytes) -> dict[str, tuple[int, int]]:
    """Region name -> (offset, size) of a well-formed image, in file order: `header`,
    `section table`, then each section (for summaries and tools; nothing is checked)."""
    header_size, count = HEADER.unpack_from(data)[2], HEADER.unpack_from(data)[4]
    spans = {"header": (0, header_size), "section table": (header_size, count * SECTION.size)}
    entries = [SECTION.unpack_from(data, header_size + i * SECTION.size) for i in range(count)]
    for kind, _, offset, size, _, _ in sorted(entries, key=lambda e: e[2]):
        spans[SECTION_NAMES.get(kind, str(kind))] = (offset, size)
    return spans


@dataclass
class WeightPieces:
    """A weights section not assembled: `size` bytes, zero but for `pieces` (offset,
    uint8 array) in ascending, non-overlapping order, views of the weights where their
    type is the program's. Writing an executable streams them (`chunks`), so packaging
    never holds a second copy of the weights; `assemble` builds the bytes when a
    simulation in the same process needs them."""

    size: int
    pieces: list[tuple[int, np.ndarray]]
    ZEROS = memoryview(bytes(1 << 20))

    def __len__(self) -> int:
        return self.size

    def chunks(self) -> Iterator[memoryview]:
        """The section's bytes in order: the pieces and the zeros between them."""
        at = 0
        for offset, data in [*self.pieces, (self.size, None)]:
            while at < offset:
                n = min(offset - at, len(self.ZEROS))
                yield self.ZEROS[:n]
                at += n
            if data is not None:
                yield memoryview(data)
                at += data.size

    def assemble(self) -> np.ndarray:
        import numpy as np
        section = np.zeros(self.size, np.uint8)
        for offset, data in self.pieces:
            section[offset:offset + data.size] = data
        section.flags.writeable = False
        return section


@dataclass
class Layout:
    """A file image planned: header size, section table (crc32s in it), the pieces after
    the header (table, padding, sections) and the file size (`plan_layout`)."""

    compiler: bytes
    arch: bytes
    header_size: int
    table: bytearray
    pieces: list
    size: int

    def sha256(self) -> bytes:
        digest = hashlib.sha256()
        for piece in sliced(self.pieces):
            digest.update(piece)
            done_with(piece)
        return digest.digest()

    def chunks(self) -> list[bytes | bytearray | memoryview]:
        """The image as consecutive pieces, the header first."""
        return [self.header(self.sha256()), *self.pieces]

    def header(self, sha256: bytes) -> bytearray:
        """The header, given the sha256 of the pieces."""
        header = bytearray(self.header_size)
        c, a = self.compiler, self.arch
        HEADER.pack_into(header, 0, MAGIC, FORMAT_VERSION, self.header_size, self.size, len(self.table) // SECTION.size,
                          zlib.crc32(self.table), sha256, 0, len(c), len(a))
        header[HEADER.size:HEADER.size + len(c) + len(a)] = c + a
        struct.pack_into("<I", header, HEADER_CRC_AT, zlib.crc32(header))
        return header


def plan_layout(compiler: str, arch_spec: str, sections: list[tuple[int, bytes | memoryview | WeightPieces]],
                align: int, crcs: dict[int, int] | None = None) -> Layout:
    """The layout of sections (kind, payload) in order, each section's crc32 computed
    over it where it is, or taken from `crcs` (section index -> crc32, known already)."""
    c, a = compiler.encode(), arch_spec.encode()
    header_size = align_up(HEADER.size + len(c) + len(a), 8)
    table = bytearray(SECTION.size * len(sections))
    pieces: list[bytes | bytearray | memoryview] = [table]
    pos = header_size + len(table)
    for i, (kind, payload) in enumerate(sections):
        offset = align_up(pos, align)
        if offset > pos:
            pieces.append(bytes(offset - pos))
        parts = list(payload.chunks()) if isinstance(payload, WeightPieces) else [payload]
        crc = (crcs or {}).get(i)
        if crc is None:
            crc = 0
            for part in sliced(parts):
                crc = zlib.crc32(part, crc)
                done_with(part)
        SECTION.pack_into(table, i * SECTION.size, kind, 0, offset, len(payload), crc, 0)
        pieces += parts
        pos = offset + len(payload)
    return Layout(c, a, header_size, table, pieces, pos)


def layout(compiler: str, arch_spec: str, sections: list[tuple[int, bytes | memoryview | WeightPieces]],
            align: int) -> list[bytes | bytearray | memoryview]:
    """The pieces of the file `_assemble` builds, checksums included, computed over the
    sections where they are (the same bytes, no copy of the weights)."""
    return plan_layout(compiler, arch_spec, sections, align).chunks()


def write_layout(path: str | os.PathLike[str], plan: Layout,
                 before_rename: Callable[[], None] | None = None) -> list[bytes | bytearray | memoryview]:
    """Write a planned image as `write_image` does (atomically), hashing its pieces in a
    second thread while they are written (both release the GIL: two cores), the header
    last; returns the image's chunks (`Layout.chunks`), header included. `before_rename`
    runs once the file is written: an exception from it leaves no file."""
    from concurrent.futures import ThreadPoolExecutor
    header = bytearray()

    def write(f) -> None:
        digest = hashlib.sha256()
        with ThreadPoolExecutor(1) as pool:
            f.seek(plan.header_size)
            for piece in sliced(plan.pieces):  # (each hashed while it is written)
                hashed = pool.submit(digest.update, piece)
                f.write(piece)
                hashed.result()
                done_with(piece)
            header[:] = plan.header(digest.digest())
            f.seek(0)
            f.write(header)
        if before_rename is not None:
            before_rename()
    _write_atomic(path, write)
    return [header, *plan.pieces]


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """crc32 of A + B from crc32(A), crc32(B) and len(B) (zlib's crc32_combine, which
    Python's zlib does not export): checksums of a file patched in places without
    reading its unchanged bytes twice."""
    if len2 <= 0:
        return crc1
    op = [0xEDB88320] + [1 << n for n in range(31)]  # (the operator for one zero bit)
    op = _gf2_square(_gf2_square(op))  # four zero bits
    while len2:  # (apply len2 zero bytes to crc1, a power of two at a time)
        op = _gf2_square(op)  # (8 * 2^k zero bits)
        if len2 & 1:
            crc1 = _gf2_times(op, crc1)
        len2 >>= 1
    return crc1 ^ crc2


def _gf2_times(mat: list[int], vec: int) -> int:
    out, i = 0, 0
    while vec:
        if vec & 1:
            out ^= mat[i]
        vec >>= 1
        i += 1
    return out


def _gf2_square(mat: list[int]) -> list[int]:
    return [_gf2_times(mat, mat[n]) for n in range(32)]

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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (numpy loads when a section is assembled: a cache hit never does)
    import numpy as np

MAGIC = b"NPUEXE\x00\x01"
FORMAT_VERSION = 4
"""2: the header's arch was a spec (`default,cores=1`, or a chip file's path: read from
data); 3: the arch resolved, every parameter (`arch_params`); 4: typed weights (each in
its element type, the meta index naming it)."""
Image = bytes | bytearray | mmap.mmap
"""A file image: its bytes in memory (what `read_executable` reads) or a mapped file."""
_HEADER = struct.Struct("<8sIIQII32sIHH")
_HEADER_CRC_AT = 64
_SECTION = struct.Struct("<IIQQII")
META, PROGRAM, CMDBUF, WEIGHTS = 1, 2, 3, 4
SECTION_NAMES = {META: "meta", PROGRAM: "program", CMDBUF: "cmdbuf", WEIGHTS: "weights"}


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def write_image(path: str | os.PathLike[str], data: bytes | list[bytes | bytearray | memoryview]) -> None:
    """Write a file image (bytes, or `Executable.chunks`) through a temporary file
    renamed into place, so a failed write never leaves a partial executable. Raises OSError."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in ([data] if isinstance(data, bytes) else data):
                f.write(chunk)
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
    header_size, count = _HEADER.unpack_from(data)[2], _HEADER.unpack_from(data)[4]
    spans = {"header": (0, header_size), "section table": (header_size, count * _SECTION.size)}
    entries = [_SECTION.unpack_from(data, header_size + i * _SECTION.size) for i in range(count)]
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


def _layout(compiler: str, arch_spec: str, sections: list[tuple[int, bytes | memoryview | WeightPieces]],
            align: int) -> list[bytes | bytearray | memoryview]:
    """The pieces of the file `_assemble` builds, checksums included, computed over the
    sections where they are (the same bytes, no copy of the weights)."""
    c, a = compiler.encode(), arch_spec.encode()
    header_size = _align(_HEADER.size + len(c) + len(a), 8)
    table = bytearray(_SECTION.size * len(sections))
    pieces: list[bytes | bytearray | memoryview] = [table]
    pos = header_size + len(table)
    for i, (kind, payload) in enumerate(sections):
        offset = _align(pos, align)
        if offset > pos:
            pieces.append(bytes(offset - pos))
        parts = list(payload.chunks()) if isinstance(payload, WeightPieces) else [payload]
        crc = 0
        for part in parts:
            crc = zlib.crc32(part, crc)
        _SECTION.pack_into(table, i * _SECTION.size, kind, 0, offset, len(payload), crc, 0)
        pieces += parts
        pos = offset + len(payload)
    digest = hashlib.sha256()
    for piece in pieces:
        digest.update(piece)
    header = bytearray(header_size)
    _HEADER.pack_into(header, 0, MAGIC, FORMAT_VERSION, header_size, pos, len(sections), zlib.crc32(table),
                      digest.digest(), 0, len(c), len(a))
    header[_HEADER.size:_HEADER.size + len(c) + len(a)] = c + a
    struct.pack_into("<I", header, _HEADER_CRC_AT, zlib.crc32(header))
    return [header, *pieces]

"""`.npz` files read from their headers first: `npz_headers(path)` reads only the zip
directory and each member's `.npy` header (shape, dtype), checking that the bytes the
header declares are the bytes the member holds, so a forged header (a 3 PiB array in
a 1 KB file) is a one-line ValueError, not a MemoryError; `read_members` then reads the
data of members whose headers the caller has checked (an `--inputs` file against the
model's input shapes: a 4 MB deflated member holding 4 GiB is refused before it is
decompressed). Standard library and numpy only."""

from __future__ import annotations

import contextlib
import math
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from npu_dialects.files import open_regular

MAX_HEADER = 10_000
"""numpy's own bound on an `.npy` header (`max_header_size`)."""

DEFLATE_RATIO = 1100
"""Deflate cannot expand data by more than 1032:1 (a 258-byte match in under 2 bits);
a member declaring more than this times its compressed size is forged."""


@dataclass(frozen=True)
class NpyHeader:
    """What an `.npz` member's `.npy` header declares."""

    name: str  # the key: the member name without `.npy`
    shape: tuple[int, ...]
    dtype: np.dtype
    nbytes: int  # the data bytes the header declares
    info: zipfile.ZipInfo


def fmt_bytes(n: int) -> str:
    for unit, size in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} bytes"


def _header(z: zipfile.ZipFile, info: zipfile.ZipInfo) -> NpyHeader:
    name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
    with z.open(info) as f:
        try:
            version = np.lib.format.read_magic(f)
        except ValueError:
            raise ValueError(f"member '{info.filename}' is not an .npy array") from None
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = reader(f, max_header_size=MAX_HEADER)
        offset = f.tell()
    if dtype.hasobject:
        raise ValueError("Object arrays cannot be loaded when allow_pickle=False")
    nbytes = math.prod(shape) * dtype.itemsize
    declared = f"its header declares {list(shape)} {dtype} ({fmt_bytes(nbytes)})"
    if info.file_size != offset + nbytes:
        raise ValueError(f"member '{info.filename}' is damaged: {declared} but it holds "
                         f"{fmt_bytes(max(info.file_size - offset, 0))} of data")
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        raise ValueError(f"member '{info.filename}' is damaged: its sizes in the zip directory differ")
    if info.compress_type == zipfile.ZIP_DEFLATED and info.file_size > DEFLATE_RATIO * info.compress_size + 4096:
        raise ValueError(f"member '{info.filename}' is damaged: {declared}, more than its "
                         f"{fmt_bytes(info.compress_size)} of deflated data can hold")
    return NpyHeader(name, tuple(int(d) for d in shape), dtype, nbytes, info)


@contextlib.contextmanager
def _zip(path: str) -> Iterator[zipfile.ZipFile]:
    """The archive at `path`, a regular file (`open_regular`: a FIFO or a device named
    as a weights or inputs file is refused before it is read)."""
    with open_regular(path) as f:
        if not zipfile.is_zipfile(f):
            what = "an .npy array" if f.seek(0) == 0 and f.read(6) == b"\x93NUMPY" else "truncated or not a zip"
            raise ValueError(f"not an .npz archive of .npy arrays ({what})")
        with zipfile.ZipFile(f) as z:
            yield z


def npz_headers(path: str) -> dict[str, NpyHeader]:
    """The header of each array of the `.npz` at `path`, by key, without reading any
    array data. Raises ValueError with one line of reason: the file is missing or
    unreadable, not a zip of `.npy` arrays, holds pickled objects, or a member's header
    does not match the bytes it holds."""
    try:
        with _zip(path) as z:
            return {h.name: h for h in (_header(z, info) for info in z.infolist())}
    except OSError as e:
        raise ValueError(e.strerror or str(e)) from None
    except (zipfile.BadZipFile, EOFError, zlib.error) as e:
        raise ValueError(f"corrupted .npz archive: {e}") from None


def read_members(path: str, headers: Iterable[NpyHeader]) -> dict[str, np.ndarray]:
    """The arrays of `headers` (from `npz_headers(path)`, checked by the caller), read;
    ValueError as `npz_headers`, or when memory runs out."""
    out: dict[str, np.ndarray] = {}
    try:
        with _zip(path) as z:
            for h in headers:
                with z.open(h.info) as f:
                    try:
                        out[h.name] = np.lib.format.read_array(f, allow_pickle=False, max_header_size=MAX_HEADER)
                    except MemoryError:
                        raise ValueError(f"not enough memory for member '{h.info.filename}' "
                                         f"({list(h.shape)} {h.dtype}, {fmt_bytes(h.nbytes)})") from None
    except OSError as e:
        raise ValueError(e.strerror or str(e)) from None
    except (zipfile.BadZipFile, EOFError, zlib.error) as e:
        raise ValueError(f"corrupted .npz archive: {e}") from None
    return out


def read_npz_checked(path: str) -> dict[str, np.ndarray]:
    """Every array of the `.npz` at `path`, each header checked before its data is read."""
    return read_members(path, npz_headers(path).values())

"""Reading an ONNX file without holding its weights twice: `read_model` parses the
model's structure and leaves every large initializer's data in the file, as an
external tensor (ONNX's own external-data form: `location`, `offset`, `length`);
`initializer_array` reads one initializer's data straight into its numpy array, from
the model file, from an external-data file, or from the proto (`numpy_helper`); the
importer asks for it mapped instead (`mapped=True`: a read-only `np.memmap` of the
file's bytes).

`onnx.load` parses the whole file into a protobuf (the file's bytes and the parsed
copy in memory at once), then `numpy_helper.to_array` copies each weight again: three
copies of a 340 MB BERT-base at the peak. Here the weights stay in the file, read
when used and given back after (`npu_dialects.files.release_pages`), so a compile
holds the weights passes made and no copy of the model's own. Assumes a
little-endian host (ONNX's raw data is).

Algorithm
---------
Mapped weights: a page of a mapped initializer is read from the file when a pass or
the executable's writer touches it, and stays in the process's memory until given
back: after a BatchNorm fold read the original, after each piece (at most
`runtime.image.SLICE_BYTES`) of an executable or a cache digest is read. The file
must not change while a compile runs (a mapped page cut from it is a SIGBUS).

The file is memory-mapped and scanned in protobuf's wire format: the ModelProto's
fields are copied as they are except its graph (field 7), whose fields are copied as
they are except its initializers (field 5): an initializer with `raw_data` (field 9)
of at least `EXTERNAL_MIN_BYTES` and an element type of fixed size is re-encoded
without it and with `data_location = EXTERNAL` and `external_data` entries pointing
at the raw data's offset in the file. Only those few length prefixes are rewritten;
the scan skips over the raw data without touching it. The stripped image (nodes,
shapes, small constants) is parsed by protobuf. Anything unexpected in the scan (not
one graph, a malformed varint, a group) falls back to `onnx.load`.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
from collections.abc import Iterator

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

EXTERNAL_MIN_BYTES = 4096
"""Initializers whose raw data is at least this large stay in the file."""

FIXED_SIZE_TYPES = frozenset({
    TensorProto.FLOAT, TensorProto.UINT8, TensorProto.INT8, TensorProto.UINT16, TensorProto.INT16,
    TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL, TensorProto.FLOAT16, TensorProto.DOUBLE,
    TensorProto.UINT32, TensorProto.UINT64, TensorProto.BFLOAT16})
"""Element types whose raw data is `count * itemsize` bytes (no packed sub-byte types)."""

_GRAPH, _INITIALIZER = 7, 5  # ModelProto.graph, GraphProto.initializer
_DATA_TYPE, _RAW_DATA, _EXTERNAL_DATA, _DATA_LOCATION = 2, 9, 13, 14  # TensorProto fields
_LEN = 2  # wire type: length-delimited


class _Unexpected(Exception):
    """The scan met something it does not handle: parse the file with onnx.load."""


def read_model(path: str) -> onnx.ModelProto:
    """The model in the ONNX file `path`, its large initializers left in the file as
    external tensors whose `location` is the file's absolute path (module docstring).
    External tensors of the model itself get absolute locations too. Raises what
    `onnx.load` raises for a missing, unreadable or malformed file."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            with memoryview(mm) as buf:
                try:
                    image = _strip_model(buf, os.path.abspath(path))
                except (_Unexpected, IndexError):
                    image = None
    except ValueError:  # (an empty file cannot be mapped: onnx.load says what it is)
        image = None
    if image is None:
        return onnx.load(path)
    model = onnx.ModelProto()
    model.ParseFromString(image)
    absolute_locations(model, os.path.dirname(os.path.abspath(path)))
    return model


def absolute_locations(model: onnx.ModelProto, base_dir: str) -> None:
    """Give every external tensor of the main graph an absolute `location`, relative
    ones resolved against `base_dir` (so `initializer_array` needs no directory)."""
    for init in model.graph.initializer:
        if init.data_location == TensorProto.EXTERNAL:
            for entry in init.external_data:
                if entry.key == "location" and not os.path.isabs(entry.value):
                    entry.value = os.path.normpath(os.path.join(base_dir, entry.value))


def check_model(model: onnx.ModelProto, base_dir: str) -> None:
    """`onnx.checker.check_model` on a model whose external tensors have absolute
    locations: the checker wants them relative, and reads them from the working
    directory, so it runs with relative locations in `base_dir` (then restored)."""
    changed = []
    for init in model.graph.initializer:
        for entry in init.external_data if init.data_location == TensorProto.EXTERNAL else ():
            if entry.key == "location" and os.path.isabs(entry.value):
                changed.append((entry, entry.value))
                entry.value = os.path.relpath(entry.value, base_dir)
    try:
        with contextlib.chdir(base_dir) if changed else contextlib.nullcontext():
            onnx.checker.check_model(model)
    finally:
        for entry, value in changed:
            entry.value = value


def external_problem(model: onnx.ModelProto) -> str | None:
    """Why an external tensor's data cannot be read (its file missing or too short),
    or None: checked at load, so a bad file is the model's error, not a converter's."""
    sizes: dict[str, int] = {}
    for init in model.graph.initializer:
        if init.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in init.external_data}
        location = info.get("location", "")
        if location not in sizes:
            try:
                sizes[location] = os.path.getsize(location)
            except OSError as e:
                return f"external data of initializer '{init.name}': '{location}': {e.strerror or e}"
        try:
            end = int(info.get("offset", "0")) + int(info.get("length", "0"))
        except ValueError:
            return f"external data of initializer '{init.name}': offset/length are not integers"
        if end > sizes[location]:
            return (f"external data of initializer '{init.name}': '{location}' ends at byte {sizes[location]}, "
                    f"before the tensor's end at {end}")
    return None


def initializer_array(init: TensorProto, mapped: bool = False) -> np.ndarray:
    """The data of an initializer as a numpy array of its shape and element type (a
    fresh, writable array). External data is read with one read into the array, or
    with `mapped` memory-mapped read-only from its file (no copy: the pages are read
    when used and `release_pages` gives them back); other tensors go through
    `numpy_helper.to_array`. Raises ValueError/OSError when the data cannot be read (a
    missing file, a length that does not match the shape)."""
    if init.data_location != TensorProto.EXTERNAL or init.data_type not in FIXED_SIZE_TYPES:
        return numpy_helper.to_array(init)
    info = {e.key: e.value for e in init.external_data}
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(init.data_type))
    shape = tuple(int(d) for d in init.dims)
    nbytes = math.prod(shape) * dtype.itemsize
    if int(info.get("length", nbytes)) != nbytes:
        raise ValueError(f"external data of {info.get('length')} bytes for a {list(shape)} tensor of "
                         f"{dtype.name} ({nbytes} bytes)")
    offset = int(info.get("offset", "0"))
    if mapped and nbytes:
        if os.path.getsize(info["location"]) < offset + nbytes:
            raise ValueError(f"external data '{info['location']}' ends before the tensor's {nbytes} bytes")
        return np.memmap(info["location"], dtype, mode="r", offset=offset, shape=shape)
    out = np.empty(shape, dtype)
    with open(info["location"], "rb") as f:
        f.seek(offset)
        got = f.readinto(out.reshape(-1).view(np.uint8).data)
    if got != nbytes:
        raise ValueError(f"external data '{info['location']}' ends after {got} of the tensor's {nbytes} bytes")
    return out


def inlined(init: TensorProto) -> TensorProto:
    """The initializer with its data in the proto (itself when it already is): what it
    was in the file, field for field, before `read_model` left its data there."""
    if init.data_location != TensorProto.EXTERNAL or init.data_type not in FIXED_SIZE_TYPES:
        return init
    t = TensorProto()
    t.CopyFrom(init)
    t.ClearField("external_data")
    t.ClearField("data_location")
    t.raw_data = initializer_array(init).tobytes()
    return t


# ----------------------------------------------------------------------------- the wire format


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _Unexpected("varint")


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _fields(buf: memoryview, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, tag start, value start, value end) of each field of
    the message in buf[start:end]; a varint's value is returned as its value start."""
    pos = start
    while pos < end:
        tag_start = pos
        tag, pos = _varint(buf, pos)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield field, wire, tag_start, value, pos
            continue
        if wire == 1:
            value_start, pos = pos, pos + 8
        elif wire == _LEN:
            n, value_start = _varint(buf, pos)
            pos = value_start + n
        elif wire == 5:
            value_start, pos = pos, pos + 4
        else:
            raise _Unexpected("group")
        if pos > end:
            raise _Unexpected("truncated")
        yield field, wire, tag_start, value_start, pos


def _len_field(field: int, payload: bytes) -> bytes:
    return _encode_varint(field << 3 | _LEN) + _encode_varint(len(payload)) + payload


def _strip_model(buf: memoryview, location: str) -> bytes:
    graphs = [f for f in _fields(buf, 0, len(buf)) if f[0] == _GRAPH]
    if len(graphs) != 1 or graphs[0][1] != _LEN:
        raise _Unexpected("not one graph")
    _, _, tag_start, value_start, value_end = graphs[0]
    graph = _strip_graph(buf, value_start, value_end, location)
    return b"".join([buf[:tag_start], _len_field(_GRAPH, graph), buf[value_end:]])


def _strip_graph(buf: memoryview, start: int, end: int, location: str) -> bytes:
    pieces: list[bytes | memoryview] = []
    copied = start  # (runs of fields kept as they are are copied in one piece)
    for field, wire, tag_start, value_start, value_end in _fields(buf, start, end):
        if field != _INITIALIZER or wire != _LEN:
            continue
        tensor = _strip_tensor(buf, value_start, value_end, location)
        if tensor is not None:
            pieces += [buf[copied:tag_start], _len_field(_INITIALIZER, tensor)]
            copied = value_end
    pieces.append(buf[copied:end])
    return b"".join(pieces)


def _strip_tensor(buf: memoryview, start: int, end: int, location: str) -> bytes | None:
    """The TensorProto in buf[start:end] without its raw data, pointing at it in the
    file instead; None to keep it as it is."""
    raw = None
    data_type = 0
    kept: list[memoryview] = []
    for field, wire, tag_start, value_start, value_end in _fields(buf, start, end):
        if field in (_EXTERNAL_DATA, _DATA_LOCATION):
            return None  # (already external, or odd: left to onnx)
        if field == _DATA_TYPE and wire == 0:
            data_type = value_start
        if field == _RAW_DATA and wire == _LEN:
            raw = (value_start, value_end)
        else:
            kept.append(buf[tag_start:value_end])
    if raw is None or raw[1] - raw[0] < EXTERNAL_MIN_BYTES or data_type not in FIXED_SIZE_TYPES:
        return None
    entries = b"".join(_len_field(_EXTERNAL_DATA, _len_field(1, k.encode()) + _len_field(2, v.encode()))
                       for k, v in (("location", location), ("offset", str(raw[0])),
                                    ("length", str(raw[1] - raw[0]))))
    return b"".join([*kept, entries, _encode_varint(_DATA_LOCATION << 3), _encode_varint(TensorProto.EXTERNAL)])

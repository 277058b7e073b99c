"""Device memory: DRAM regions and per-core SRAM as byte arrays, buffers as
numpy views of their element type into them, and the DMA window arithmetic (`plan_copy`).

A `Region` is one contiguous byte array: the DRAM weight region, the DRAM
activation arena, one region per `@main` argument (model inputs and outputs),
private regions for buffers the memory plan left without an offset, and one
SRAM region per core. A `Buf` is a typed view of a region at a byte offset, so
compute ops writing into a `Buf` change the region's bytes and every other
view of them (aliasing allocs, `npu_task.view`).

Regions carry the shadow arrays of `sim.sanitizer`, made on first use: per granule
(4 bytes, or the smallest element of a module with 1/2-byte buffers) the value it
holds and the write that put it there, the last writing and reading task (DRAM
regions tracked for races). A `Buf` knows the value (`sim.sanitizer.Values` id) it is
a buffer of.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from operator import le, mul

import numpy as np
from xdsl.dialects.builtin import Float32Type, MemRefType
from xdsl.ir import Attribute

from npu_dialects import dtypes
from sim.errors import SimError

DRAM = "dram"
SRAM = "sram"
HOST = -1
"""Task id of the host (initial contents, inputs): happens before every task."""


class Region:
    """One byte array of device memory."""

    __slots__ = ("name", "space", "data", "core", "tracked", "readonly", "writer", "reader", "written", "values",
                 "who", "granule", "writeable")

    def __init__(self, name: str, space: str, nbytes: int, *, core: int | None = None,
                 tracked: bool = False, readonly: bool = False, data: np.ndarray | None = None,
                 granule: int = 4):
        """`data`, when given, is the region's bytes as they are (uint8, `nbytes` of them,
        not copied; made non-writeable when `readonly`), else the region starts zeroed.
        `granule`: the bytes one shadow entry covers (every buffer's element size and
        offset are multiples of it)."""
        self.name = name
        self.granule = granule
        self.space = space
        self.core = core
        if data is None:
            self.data = np.zeros(max(0, nbytes), dtype=np.uint8)
        else:
            if data.dtype != np.uint8 or data.shape != (nbytes,):
                raise ValueError(f"region '{name}': {data.dtype} data of shape {data.shape}, expected "
                                 f"{nbytes} uint8 bytes")
            self.data = data.view()
            if readonly:
                self.data.flags.writeable = False
        self.writeable = bool(self.data.flags.writeable)  # (its bytes' flag, read per timed copy)
        self.tracked = tracked
        self.readonly = readonly  # weights: written by the host only (the sanitizer keeps no shadow of them)
        self.writer: np.ndarray | None = None  # last writing task per granule
        self.reader: np.ndarray | None = None  # last reading task per granule
        self.written = False  # some task has written it (else every read sees HOST data)
        self.values: np.ndarray | None = None  # value held per granule (sanitizer)
        self.who: np.ndarray | None = None  # the write that put it there

    @property
    def nbytes(self) -> int:
        return int(self.data.size)

    def shadows(self) -> tuple[np.ndarray, np.ndarray]:
        if self.writer is None:
            n = -(-self.nbytes // self.granule)
            self.writer = np.full(n, HOST, dtype=np.int32)
            self.reader = np.full(n, HOST, dtype=np.int32)
        assert self.reader is not None
        return self.writer, self.reader

    def value_shadows(self) -> tuple[np.ndarray, np.ndarray]:
        if self.values is None:
            n = -(-self.nbytes // self.granule)
            self.values = np.zeros(n, dtype=np.int32)
            self.who = np.zeros(n, dtype=np.int32)
        assert self.who is not None
        return self.values, self.who


F32 = np.dtype(np.float32)


def buffer_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype of a memref type's elements (`npu_dialects.dtypes.np_dtype`, with
    f32 answered first: loading a program asks once per buffer). A VerifyException for
    an element type the chip does not hold."""
    e = t.element_type if isinstance(t, MemRefType) else t
    return F32 if type(e) is Float32Type else dtypes.np_dtype(e)


def buffer_bytes(t: MemRefType) -> int:
    """Bytes of a buffer of memref type `t` (`npu_dialects.dtypes.nbytes`)."""
    e = t.element_type
    return prod(t.get_shape()) * (4 if type(e) is Float32Type else dtypes.elem_bytes(e))


class Buf:
    """A buffer of `shape` elements of numpy `dtype` (f32 by default) at byte `off` of
    `region` (row-major), holding value `value` (a `sim.sanitizer.Values` id). `lazy`:
    its array `arr` is made on first use (a run that moves no data asks only whether
    it is writeable), and so are those of its views."""

    __slots__ = ("arr", "region", "off", "nbytes", "shape", "desc", "value", "dtype", "_wsh", "_rsh", "_vsh", "lazy")

    def __init__(self, region: Region, off: int, shape: tuple[int, ...], desc: str, value: int = 0,
                 dtype: np.dtype = F32, lazy: bool = False):
        n = prod(shape)
        self.region = region
        self.off = off
        self.shape = shape
        self.dtype = dtype
        self.nbytes = n * dtype.itemsize
        self.desc = desc
        self.value = value
        self.lazy = lazy
        if not lazy or off < 0 or off + self.nbytes > region.data.size:  # (a bad window fails at once)
            self.arr = region.data[off:off + self.nbytes].view(dtype).reshape(shape)
        self._wsh: np.ndarray | None = None
        self._rsh: np.ndarray | None = None
        self._vsh: tuple[np.ndarray, np.ndarray] | None = None

    def view(self, shape: tuple[int, ...], desc: str | None = None, offset: int = 0) -> "Buf":
        """The same bytes (from byte `offset` on) with another shape (`npu_task.view`):
        the same value and element type."""
        return Buf(self.region, self.off + offset, shape, desc or self.desc, self.value, self.dtype, self.lazy)

    def __getattr__(self, name: str) -> np.ndarray:  # (only for an unset slot: a lazy buffer's `arr`)
        if name != "arr":
            raise AttributeError(name)
        arr = self.arr = self.region.data[self.off:self.off + self.nbytes].view(self.dtype).reshape(self.shape)
        return arr

    def _shadow(self, flat: np.ndarray) -> np.ndarray:
        """The part of a region's shadow array covering this buffer, shaped like it (with a
        trailing axis of the granules of one element when an element spans several)."""
        g = self.region.granule
        k = self.dtype.itemsize // g
        if k * g != self.dtype.itemsize or self.off % g:
            raise SimError(f"{self.desc}: {self.dtype} elements at byte {self.off} do not fall on the "
                           f"{g}-byte granules of the {self.region.name} region")
        e0, n = self.off // g, self.nbytes // g
        return flat[e0:e0 + n].reshape(self.shape if k == 1 else (*self.shape, k))

    def value_shadows(self) -> tuple[np.ndarray, np.ndarray]:
        """Value/writer shadow arrays shaped like the buffer (the sanitizer)."""
        if self._vsh is None:
            v, w = self.region.value_shadows()
            self._vsh = self._shadow(v), self._shadow(w)
        return self._vsh

    def shadows(self) -> tuple[np.ndarray, np.ndarray]:
        """Writer/reader shadow arrays shaped like the buffer (DRAM race tracking)."""
        if self._wsh is None:
            w, r = self.region.shadows()
            self._wsh, self._rsh = self._shadow(w), self._shadow(r)
        assert self._rsh is not None
        return self._wsh, self._rsh

    @property
    def is_dram(self) -> bool:
        return self.region.space == DRAM


def host_values(dtype: np.dtype, data: np.ndarray) -> np.ndarray:
    """`data` as `dtype`, for the host to write into a buffer of it (a weight, an input):
    a float buffer takes any numbers (rounded to its type); an integer buffer takes
    integers, or integral floats, of its range, else a ValueError (never wrapped)."""
    data = np.asarray(data)
    if dtype.kind in "iu" and data.size:
        if data.dtype.kind not in "iub":
            bad = ~np.isfinite(data) | (data != np.rint(data))
            if bad.any():
                raise ValueError(f"holds {data[bad].flat[0]}, not an integer, for a {dtype} buffer")
        info = np.iinfo(dtype)
        lo, hi = data.min(), data.max()
        if lo < info.min or hi > info.max:
            raise ValueError(f"holds {lo if lo < info.min else hi}, outside the range [{info.min}, {info.max}] "
                             f"of its {dtype} buffer")
    return data.astype(dtype, copy=False)


def fmt_window(offs: tuple[int, ...], sizes: tuple[int, ...]) -> str:
    return "[" + ", ".join(f"{o}:{o + s}" for o, s in zip(offs, sizes)) + "]"


def fmt_slices(sl: tuple | None) -> str:
    """A window given as slices, as `fmt_window` writes it."""
    if sl is None:
        return "[]"
    return fmt_window(tuple(s.start for s in sl), tuple(s.stop - s.start for s in sl))


class CopyPlan:
    """One issued `npu_dma.copy` with its dynamic offsets resolved: which slices
    move, which destination elements get `pad_value`, how many bytes travel."""

    __slots__ = ("info", "src", "dst", "src_sl", "dst_sl", "fill_sl", "pad", "nbytes",
                 "sram_read", "sram_write")

    def __init__(self, info, src: Buf, dst: Buf, src_sl, dst_sl, fill_sl, pad: float, nbytes: int,
                 sram_read, sram_write):
        self.info = info
        self.src = src
        self.dst = dst
        self.src_sl = src_sl
        self.dst_sl = dst_sl
        self.fill_sl = fill_sl
        self.pad = pad
        self.nbytes = nbytes
        self.sram_read = sram_read  # (lo, hi) byte range of the core's SRAM read, or None
        self.sram_write = sram_write

    @property
    def dram_read(self) -> int:
        return self.nbytes if self.src.region.space == DRAM else 0

    @property
    def dram_write(self) -> int:
        return self.nbytes if self.dst.region.space == DRAM else 0

    def move(self) -> None:
        """Move the data (called when the DMA completes). A destination whose bytes are
        not writeable (weights loaded from an executable's image) is a SimError."""
        try:
            if self.fill_sl is not None:
                self.dst.arr[self.fill_sl] = self.pad
            if self.nbytes:
                self.dst.arr[self.dst_sl] = self.src.arr[self.src_sl]
        except ValueError:
            if self.dst.arr.flags.writeable:
                raise
            raise self.readonly_error() from None

    def check_writeable(self) -> None:
        """What `move` checks without moving (a timing-only run)."""
        if (self.fill_sl is not None or self.nbytes) and not self.dst.arr.flags.writeable:
            raise self.readonly_error()

    def readonly_error(self) -> SimError:
        return SimError(f"{self.info.where}: writes {self.dst.desc} in the read-only DRAM "
                        f"{self.dst.region.name} region")

    def written_slices(self):
        """Destination slices whose contents this copy defines."""
        return self.fill_sl if self.fill_sl is not None else (self.dst_sl if self.nbytes else None)


class TimingPlan(CopyPlan):
    """A copy's timing facts (bytes, fill, the SRAM bytes it reads and writes: what a
    timing-only run reads of a plan) worked out without the slices; those, and the
    `pad`, are resolved by `plan_copy` on first use (the trace's windows)."""

    __slots__ = ("args", "fills")

    def __init__(self, args: tuple, nbytes: int, fills: bool, sram_read: tuple[int, int] | None,
                 sram_write: tuple[int, int] | None):
        self.args = args
        self.info, self.src, self.dst = args[0], args[1], args[2]
        self.nbytes = nbytes
        self.fills = fills
        self.sram_read = sram_read
        self.sram_write = sram_write

    def __getattr__(self, name: str):  # (only for a slot not set yet: the slices and pad)
        if name not in ("src_sl", "dst_sl", "fill_sl", "pad"):
            raise AttributeError(name)
        full = plan_copy(*self.args)
        assert isinstance(full, CopyPlan)
        self.src_sl, self.dst_sl, self.fill_sl, self.pad = full.src_sl, full.dst_sl, full.fill_sl, full.pad
        return getattr(self, name)

    def check_writeable(self) -> None:
        # (`dst.arr` is a view of its region's bytes: as writeable as they are, and made on demand)
        if (self.fills or self.nbytes) and not self.dst.region.writeable:
            raise self.readonly_error()


def timing_plan(info, src: Buf, dst: Buf, src_offs: tuple[int, ...], dst_offs: tuple[int, ...],
                sizes: tuple[int, ...], pad: float | str | None, clip: bool,
                check_bounds: bool) -> CopyPlan | str:
    """`plan_copy` for a run that moves no data: the same bytes, fill and SRAM ranges
    (a `TimingPlan`), or the same error message. The window arithmetic is `plan_copy`'s,
    dimension by dimension from the last (row-major strides build up on the way)."""
    n = 1
    need_fill = empty = False
    fill_all = True  # every dimension of the filled window is non-empty
    s_first = s_last = d_first = d_last = f_first = f_last = 0
    s_stride = d_stride = 1
    for so, do, w, sdim, ddim in zip(reversed(src_offs), reversed(dst_offs), reversed(sizes), reversed(src.shape),
                                     reversed(dst.shape)):
        if 0 <= so and so + w <= sdim and 0 <= do and do + w <= ddim and w > 0:  # (all of it moves)
            n *= w
            s_first += so * s_stride
            s_last += (so + w - 1) * s_stride
            d_first += do * d_stride
            d_last += (do + w - 1) * d_stride
            f_first += do * d_stride
            f_last += (do + w - 1) * d_stride
            s_stride *= sdim
            d_stride *= ddim
            continue
        s_lo = -so if so < 0 else 0
        s_hi = sdim - so if sdim - so < w else w
        d_lo = -do if do < 0 else 0
        d_hi = ddim - do if ddim - do < w else w
        if check_bounds and (((s_lo > 0 or s_hi < w) and pad is None) or ((d_lo > 0 or d_hi < w) and not clip)):
            return plan_copy(info, src, dst, src_offs, dst_offs, sizes, pad, clip, check_bounds)  # (its message)
        if d_hi < d_lo:
            d_hi = d_lo
        lo = s_lo if s_lo > d_lo else d_lo
        hi = s_hi if s_hi < d_hi else d_hi
        if hi <= lo:
            empty = True
            lo = hi = d_lo
        if lo != d_lo or hi != d_hi:
            need_fill = True
        if d_hi <= d_lo:
            fill_all = False
        n *= hi - lo
        s_first += (so + lo) * s_stride
        s_last += (so + hi - 1) * s_stride
        d_first += (do + lo) * d_stride
        d_last += (do + hi - 1) * d_stride
        f_first += (do + d_lo) * d_stride
        f_last += (do + d_hi - 1) * d_stride
        s_stride *= sdim
        d_stride *= ddim
    nbytes = 0 if empty else n * dst.dtype.itemsize
    fills = need_fill and pad != SRC_CLIP and fill_all
    sram_read = sram_write = None
    if nbytes and src.region.space == SRAM:
        size = src.dtype.itemsize
        sram_read = (src.off + s_first * size, src.off + s_last * size + size)
    if dst.region.space == SRAM and (fills or nbytes):
        size = dst.dtype.itemsize
        first, last = (f_first, f_last) if fills else (d_first, d_last)
        sram_write = (dst.off + first * size, dst.off + last * size + size)
    return TimingPlan((info, src, dst, src_offs, dst_offs, sizes, pad, clip, check_bounds), nbytes, fills,
                      sram_read, sram_write)


def timing_planner(sizes: tuple[int, ...], src_shape: tuple[int, ...],
                   dst_shape: tuple[int, ...]) -> Callable[..., CopyPlan | str]:
    """`timing_plan` for one copy op: its window `sizes` between buffers of these shapes
    (their memref types'). A window inside both buffers (the common case) takes the
    strides, bytes and extents worked out here and two sums; any other, or a buffer of
    another shape, goes to `timing_plan`."""
    rank = len(sizes)
    if not rank or len(src_shape) != rank or len(dst_shape) != rank or min(sizes) <= 0:
        return timing_plan
    smax = tuple(d - w for d, w in zip(src_shape, sizes))  # (the largest offset that keeps it inside)
    dmax = tuple(d - w for d, w in zip(dst_shape, sizes))
    if min(smax) < 0 or min(dmax) < 0:
        return timing_plan
    sst, dst_ = _strides(src_shape), _strides(dst_shape)
    sspan = sum((w - 1) * st for w, st in zip(sizes, sst))  # (first to last element of the window)
    dspan = sum((w - 1) * st for w, st in zip(sizes, dst_))
    n = prod(sizes)

    def plan(info, src: Buf, dst: Buf, so: tuple[int, ...], do: tuple[int, ...], sizes: tuple[int, ...],
             pad: float | str | None, clip: bool, check_bounds: bool) -> CopyPlan | str:
        if (min(so) >= 0 and min(do) >= 0 and all(map(le, so, smax)) and all(map(le, do, dmax))
                and src.shape == src_shape and dst.shape == dst_shape):
            sram_read = sram_write = None
            if src.region.space == SRAM:
                size = src.dtype.itemsize
                first = src.off + sum(map(mul, so, sst)) * size
                sram_read = (first, first + sspan * size + size)
            if dst.region.space == SRAM:
                size = dst.dtype.itemsize
                first = dst.off + sum(map(mul, do, dst_)) * size
                sram_write = (first, first + dspan * size + size)
            return TimingPlan((info, src, dst, so, do, sizes, pad, clip, check_bounds), n * dst.dtype.itemsize,
                              False, sram_read, sram_write)
        return timing_plan(info, src, dst, so, do, sizes, pad, clip, check_bounds)
    return plan


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of `shape`."""
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(reversed(out))


def _byte_range(buf: Buf, sl: tuple[slice, ...]) -> tuple[int, int]:
    """Bounding byte range (in the region) of a non-empty window of `buf`."""
    stride = size = buf.dtype.itemsize
    first = last = 0
    for d in range(len(buf.shape) - 1, -1, -1):
        s = sl[d]
        first += s.start * stride
        last += (s.stop - 1) * stride
        stride *= buf.shape[d]
    return buf.off + first, buf.off + last + size


SRC_CLIP = "src_clip"
"""`plan_copy`'s `pad` for an `npu_dma.copy` with `src_clip`: the source window may leave
the source, and the destination elements outside it keep their contents (no fill)."""


def plan_copy(info, src: Buf, dst: Buf, src_offs: tuple[int, ...], dst_offs: tuple[int, ...],
              sizes: tuple[int, ...], pad: float | str | None, clip: bool,
              check_bounds: bool) -> CopyPlan | str:
    """Resolve a copy window; returns the plan, or an error message (one line,
    without the task/op prefix) when the window leaves a buffer it may not leave."""
    src_sl, dst_sl, fill = [], [], []
    need_fill = False
    empty = False
    # (conditional expressions rather than min/max calls: this runs for every DMA issued)
    for so, do, w, sdim, ddim in zip(src_offs, dst_offs, sizes, src.shape, dst.shape):
        s_lo = -so if so < 0 else 0  # window indices inside src
        s_hi = sdim - so if sdim - so < w else w
        d_lo = -do if do < 0 else 0  # window indices inside dst
        d_hi = ddim - do if ddim - do < w else w
        if (s_lo > 0 or s_hi < w) and pad is None and check_bounds:
            return (f"source window {fmt_window(src_offs, sizes)} leaves the source buffer "
                    f"{list(src.shape)} ({src.desc}) and the copy has no pad_value")
        if (d_lo > 0 or d_hi < w) and not clip and check_bounds:
            return (f"destination window {fmt_window(dst_offs, sizes)} leaves the destination buffer "
                    f"{list(dst.shape)} ({dst.desc}) and the copy is not clip")
        if d_hi < d_lo:
            d_hi = d_lo
        lo = s_lo if s_lo > d_lo else d_lo
        hi = s_hi if s_hi < d_hi else d_hi
        if hi <= lo:
            empty = True
            lo = hi = d_lo
        if lo != d_lo or hi != d_hi:
            need_fill = True
        src_sl.append(slice(so + lo, so + hi))
        dst_sl.append(slice(do + lo, do + hi))
        fill.append(slice(do + d_lo, do + d_hi))
    nbytes = 0 if empty else prod(s.stop - s.start for s in dst_sl) * dst.dtype.itemsize
    fill_sl = None
    if need_fill and pad != SRC_CLIP and all(s.stop > s.start for s in fill):
        fill_sl = tuple(fill)
    padv = float(pad) if isinstance(pad, (int, float)) else 0.0
    src_t, dst_t = tuple(src_sl), tuple(dst_sl)
    sram_read = _byte_range(src, src_t) if nbytes and src.region.space == SRAM else None
    written = fill_sl if fill_sl is not None else (dst_t if nbytes else None)
    sram_write = _byte_range(dst, written) if written is not None and dst.region.space == SRAM else None
    return CopyPlan(info, src, dst, src_t, dst_t, fill_sl, padv, nbytes, sram_read, sram_write)

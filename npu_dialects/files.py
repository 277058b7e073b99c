"""Files read and written safely (standard library only).

Reading: a path a data file names (a chip's `base`, an executable, a weights file) is
opened only when it is a regular file (`open_regular`: never a device, FIFO or socket,
which could block or never end) and read up to a cap (`read_regular_file`).

Writing: as `npu-compile -o` writes an executable, the data goes to a temporary file
in the target's directory, is flushed to disk (fsync), then renamed over the target
(`os.replace`); a failure (a full disk, an interrupt) removes the temporary file and
keeps the old one, the OSError naming the target. Every file a tool writes goes
through `write_atomic` (or `write_temp` + `os.replace`, several files all or nothing).
A target that is not a regular file (`/dev/null`, a FIFO) is written in place; a
symbolic link is followed (the file it names is replaced, the link kept)."""

from __future__ import annotations

import errno
import gc
import mmap
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, NoReturn

Writer = Callable[[BinaryIO], object]


def _writer(data: str | bytes | Writer) -> Writer:
    if isinstance(data, str):
        encoded = data.encode("utf-8")
        return lambda f: f.write(encoded)
    if isinstance(data, bytes):
        return lambda f: f.write(data)
    return data


def new_file_mode() -> int:
    """The permissions `open(path, "w")` gives a new file (0666 less the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _special(path: str) -> bool:
    """`path` exists and is not a regular file (a device, a FIFO, a socket)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def write_temp(path: str | os.PathLike[str], data: str | bytes | Writer) -> str:
    """Write `data` (text as UTF-8, bytes, or a function writing to a binary file) to a
    new temporary file beside `path`, fsync it, and return its name; the caller
    `os.replace`s it into place. On failure nothing is left; raises OSError naming `path`."""
    target = os.path.realpath(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp",
                                   dir=os.path.dirname(target))
    except OSError as e:
        raise OSError(e.errno, e.strerror, os.fspath(path)) from None
    try:
        with open(fd, "wb") as f:
            _writer(data)(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, new_file_mode())  # mkstemp makes 0600; a plain open() would not
    except BaseException as e:
        _discard(tmp, e, path)
    return tmp


def _discard(tmp: str, e: BaseException, path: str | os.PathLike[str]) -> NoReturn:
    """Remove the temporary file `tmp` after `e`, then raise it (an OSError as one
    naming `path`, the target)."""
    try:
        os.unlink(tmp)
    except OSError:
        pass
    if isinstance(e, OSError):
        raise OSError(e.errno, e.strerror, os.fspath(path)) from None
    raise e


def write_atomic(path: str | os.PathLike[str], data: str | bytes | Writer) -> None:
    """Write the file `path` atomically (see the module docstring); raises OSError
    (its `filename` the target) and leaves any old file untouched on failure."""
    if _special(os.fspath(path)):
        try:
            with open(path, "wb") as f:
                _writer(data)(f)
        except OSError as e:
            raise OSError(e.errno, e.strerror, os.fspath(path)) from None
        return
    tmp = write_temp(path, data)
    try:
        os.replace(tmp, os.path.realpath(path))
    except BaseException as e:
        _discard(tmp, e, path)


def cannot_write(e: OSError, path: str | os.PathLike[str] | None = None) -> str:
    """The one-line diagnostic of a failed write: `cannot write 'PATH': REASON`."""
    return f"cannot write '{os.fspath(path) if path is not None else e.filename}': {e.strerror or e}"


class NotRegularFileError(OSError):
    """A path that must name a regular file names a device, FIFO, socket, ..."""


def open_regular(path: str | os.PathLike[str]) -> Any:
    """`path` opened for reading (an unbuffered binary file) when it is a regular file.
    It is opened without blocking (a FIFO without a writer, a terminal), and anything
    else (a device such as `/dev/zero`, a FIFO, a socket) is a NotRegularFileError (`a
    FIFO, not a regular file`; a directory: IsADirectoryError) before a byte is read:
    for every path that a data file names, or that may be one."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_CLOEXEC", 0))
    f = open(fd, "rb", buffering=0)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        f.close()
        raise NotRegularFileError(errno.EINVAL, f"{file_kind(mode)}, not a regular file")
    return f


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of `path` when it is a regular file (`open_regular`) of at most `limit`
    bytes. Raises OSError (NotRegularFileError, FileNotFoundError, ...) or ValueError
    (`larger than N bytes`)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise ValueError(f"larger than {limit} bytes ({size})")
        data = f.read(limit + 1)
        if len(data) > limit:  # (it grew meanwhile)
            raise ValueError(f"larger than {limit} bytes")
        return data


def file_kind(mode: int) -> str:
    """`a directory`, `a FIFO`, `a character device`, ... for a stat mode."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic collector paused inside (restored after), for work that builds or
    walks large structures that all stay alive: a collection walks the whole heap to
    free none of them. A compile keeps nearly everything it builds to the end (the
    collector took 10-20% of a cold compile of ResNet-50 or DenseNet-121, for about 4%
    more peak memory); a simulation allocates many small objects beside the module's IR
    and its compiled program (DenseNet-121's timing-only run after three other models in
    one process, a sweep worker's situation: 0.44 s against 0.24 s paused). Garbage
    cycles made inside wait for the next collection after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def release_pages(a: object) -> None:
    """Give back the memory of `a`'s pages when it is (a view of) a numpy array mapped
    read-only from a file - an initializer left in the ONNX file
    (`initializer_array(mapped=True)`): the kernel reads them again from the file if
    they are used again, so a pass that read an original weight to make a new one (a
    BatchNorm fold), or writing an executable, does not keep the model's weights in
    memory. Anything else (bytes, an array of its own) is left alone."""
    np: Any = sys.modules.get("numpy")  # (no array exists before numpy is loaded)
    while np is not None and isinstance(a, np.ndarray):
        if isinstance(a, np.memmap):
            m = getattr(a, "_mmap", None)
            if getattr(a, "mode", None) == "r" and isinstance(m, mmap.mmap):
                m.madvise(mmap.MADV_DONTNEED)
            return
        a = getattr(a, "base", None)

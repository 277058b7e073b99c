"""Output files written atomically, as `npu-compile -o` writes an executable: the data
goes to a temporary file in the target's directory, is flushed to disk (fsync), and
only then renamed over the target (`os.replace`). A write that fails (a full disk, an
interrupt) removes the temporary file and leaves the old file as it was; the OSError
names the target. Every file a tool writes goes through `write_atomic` (or
`write_temp` + `os.replace` for several files all or nothing). Standard library only.

A target that exists and is not a regular file (`/dev/null`, `/dev/stdout`, a FIFO)
is written in place: it cannot be replaced, and must not be. A symbolic link is
followed (the file it names is replaced, the link kept)."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from typing import BinaryIO

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
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise OSError(e.errno, e.strerror, os.fspath(path)) from None
        raise
    return tmp


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
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise OSError(e.errno, e.strerror, os.fspath(path)) from None
        raise


def cannot_write(e: OSError, path: str | os.PathLike[str] | None = None) -> str:
    """The one-line diagnostic of a failed write: `cannot write 'PATH': REASON`."""
    return f"cannot write '{os.fspath(path) if path is not None else e.filename}': {e.strerror or e}"

"""One BLAS thread while the functional simulator computes: its matrix products are
tile sized (operands that fit a core's SRAM), and OpenBLAS's worker threads cost
more than they save on them, and spin against every other process on a shared
machine (BERT-base, 12 layers: 16-80 s of wall time with numpy's default threads
on a loaded 2-core machine, 4.4-5.5 s with one; the same arrays either way).

`one_blas_thread()` is a context manager setting numpy's bundled OpenBLAS
(scipy-openblas, as numpy's wheels ship it) to one thread and restoring the count
after. It does nothing when the environment sets OPENBLAS_NUM_THREADS or
OMP_NUM_THREADS (the user's choice stands) or numpy uses another BLAS.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterator
from contextlib import contextmanager

_UNSET = object()
_calls: object = _UNSET  # (get, set) of the bundled OpenBLAS, None when there is none


def _openblas() -> tuple | None:
    """The bundled OpenBLAS's get/set thread-count functions (looked up once)."""
    global _calls
    if _calls is _UNSET:
        _calls = None
        import numpy as np
        libs = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
        for path in sorted(glob.glob(os.path.join(libs, "libscipy_openblas*.so*"))):
            try:
                lib = ctypes.CDLL(path)  # (numpy has loaded it: the same handle)
                for suffix in ("64_", "_64_", ""):
                    get = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None)
                    put = getattr(lib, f"scipy_openblas_set_num_threads{suffix}", None)
                    if get is not None and put is not None:
                        get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
                        _calls = (get, put)
                        break
            except OSError:
                continue
            if _calls is not None:
                break
    return _calls  # type: ignore[return-value]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the body with numpy's OpenBLAS on one thread (see the module docstring)."""
    calls = None if ("OPENBLAS_NUM_THREADS" in os.environ or "OMP_NUM_THREADS" in os.environ) else _openblas()
    if calls is None:
        yield
        return
    get, put = calls
    before = get()
    if before != 1:
        put(1)
    try:
        yield
    finally:
        if before != 1:
            put(before)

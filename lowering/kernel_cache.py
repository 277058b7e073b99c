"""Per-kernel results kept across compiles (issue 47's incremental compilation below
the model level): a pass that spends real time on one kernel (npu-tile's tile search)
asks `lookup(kind, signature)` before doing the work and `store`s what it found. The
store itself is the tool's (`tools/compile_cache.py` keeps it in the compile cache's
`kernels/` folder, keyed with the compiler's fingerprint); `using(store)` installs it
for a compile. Without one (the default, `--no-cache`, npu-opt) nothing is kept.

A signature is what the result depends on and nothing else: the kernel's ops with
their attributes and types, the arch, the pass options (`lowering.tile.tile.
kernel_signature`), never names, locations or weight values. So a model recompiled
after one layer changed, or a model sharing layers with one compiled before (the same
encoder layer twelve times, a new head on a known backbone), searches only the
kernels it has not seen. `hits` and `misses` count per kind for the reports.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Protocol


class KernelStore(Protocol):
    """Where per-kernel results live: JSON values by kind and key (a hex digest)."""

    def get(self, kind: str, k: str) -> Any | None: ...

    def put(self, kind: str, k: str, value: Any) -> None: ...


_STORE: ContextVar[KernelStore | None] = ContextVar("npu_kernel_store", default=None)
hits: Counter[str] = Counter()
"""Lookups answered from the store, per kind (reset by `using`)."""
misses: Counter[str] = Counter()
"""Lookups the store could not answer, per kind (reset by `using`)."""


@contextlib.contextmanager
def using(store: KernelStore | None) -> Iterator[None]:
    """Install `store` for the compile run inside; counts start from zero."""
    hits.clear()
    misses.clear()
    token = _STORE.set(store)
    try:
        yield
    finally:
        _STORE.reset(token)


def signature_key(signature: Any) -> str:
    """A stable digest of a signature: tuples, strings, numbers, booleans, and objects
    by `spec()` (an arch) or their text (xDSL attributes print canonically)."""
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, tuple | list):
            h.update(b"(")
            for item in x:
                feed(item)
            h.update(b")")
        elif isinstance(x, str | int | float | bool) or x is None:
            h.update(repr(x).encode() + b";")
        elif hasattr(x, "spec"):
            h.update(b"spec:" + x.spec().encode() + b";")
        else:
            h.update(b"attr:" + str(x).encode() + b";")
    feed(signature)
    return h.hexdigest()


def lookup(kind: str, signature: Any) -> Any | None:
    """The stored result of `kind` for `signature`, or None (no store, or not seen)."""
    store = _STORE.get()
    if store is None:
        return None
    value = store.get(kind, signature_key(signature))
    (hits if value is not None else misses)[kind] += 1
    return value


def store(kind: str, signature: Any, value: Any) -> None:
    """Keep a result (a JSON value) for later compiles, when a store is installed."""
    s = _STORE.get()
    if s is not None:
        s.put(kind, signature_key(signature), value)


def summary() -> str:
    """`kernels: tile-search 26 hit, 2 miss` for the tools' cache line ('' when unused)."""
    kinds = sorted(set(hits) | set(misses))
    return ", ".join(f"{k} {hits[k]} hit, {misses[k]} miss" for k in kinds)

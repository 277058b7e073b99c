"""Optimisation remarks (`--remarks[=FILE]` on npu-opt and npu-run, as MLIR's
`-pass-remarks`): one line per fusion, layer/strip group and tiling choice made
(`applied`) or rejected (`missed`), naming the ONNX nodes and the reason - does not
fit SRAM by N bytes, the cost model's cycles, a rule disabled, numerics.

Passes call `remark(...)`; it costs one context-variable read when nobody collects.
`collecting()` gathers the remarks of the passes run inside it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Remark:
    pass_name: str
    kind: str  # "applied" | "missed"
    nodes: tuple[str, ...]
    message: str

    def line(self) -> str:
        shown = ", ".join(self.nodes[:4]) + (f" (+{len(self.nodes) - 4})" if len(self.nodes) > 4 else "")
        return f"remark: {self.pass_name}: {self.kind}: [{shown}] {self.message}"


_SINK: ContextVar[list[Remark] | None] = ContextVar("npu_remarks", default=None)


def remark(pass_name: str, kind: str, nodes: list[str] | tuple[str, ...], message: str) -> None:
    """Record a remark when someone is collecting (see `collecting`)."""
    sink = _SINK.get()
    if sink is not None:
        sink.append(Remark(pass_name, kind, tuple(dict.fromkeys(nodes)), message))


def enabled() -> bool:
    """Whether remarks are being collected (to skip work that only feeds them)."""
    return _SINK.get() is not None


@contextmanager
def collecting() -> Iterator[list[Remark]]:
    """Collect the remarks of the passes run inside the block into the yielded list."""
    sink: list[Remark] = []
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


def write_remarks(remarks: list[Remark], dest: str) -> None:
    """One line per remark to stderr (`dest` "-") or to the file `dest`."""
    text = "".join(r.line() + "\n" for r in remarks)
    if dest == "-":
        sys.stderr.write(text)
        return
    from npu_dialects.files import write_atomic
    try:
        write_atomic(dest, text)  # (a failed write keeps the old file)
    except OSError as e:
        raise ValueError(f"cannot write remarks to '{dest}': {e.strerror or e}") from None


@contextmanager
def silenced() -> Iterator[None]:
    """Drop the remarks of the passes run inside the block (a pass's internal trial plan:
    they are not about the compile)."""
    token = _SINK.set(None)
    try:
        yield
    finally:
        _SINK.reset(token)

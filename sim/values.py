"""The program's values (`Values`): every buffer value the simulator tracks gets an id
with a description; the sanitizer's shadow memory holds these ids per byte, and a
report names the value a read found. Id `NOTHING` is bytes no write has defined.
"""

from __future__ import annotations

from collections.abc import Callable

NOTHING = 0
"""Value id of bytes no write has defined."""


class Values:
    """The program's values: id -> description (what the buffer is, its ONNX node). A
    description may be a function making it: only a sanitizer report prints one."""

    def __init__(self) -> None:
        self.names: list[str | Callable[[], str]] = ["nothing (no write defined these bytes)"]

    def new(self, desc: str | Callable[[], str]) -> int:
        self.names.append(desc)
        return len(self.names) - 1

    def name(self, i: int) -> str:
        d = self.names[i]
        return d if isinstance(d, str) else d()

"""Compiler diagnostics: a `CompileError` is a user-facing error (exit 1) that
names the pass and the IR op / ONNX node at fault."""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException

from npu_dialects.locs import describe


class CompileError(DiagnosticException):
    """Raised by a pass when the input cannot be compiled (does not fit, unsupported
    form). `npu-opt --verify-diagnostics` prints it; otherwise it exits 1."""

    def __init__(self, pass_name: str, message: str, op: Operation | None = None):
        where = f" at {describe(op)}" if op is not None else ""
        super().__init__(f"error: {pass_name}: {message}{where}")
        self.pass_name = pass_name
        self.op = op  # (a tool puts the diagnostic at the op's source position, if it has one)


def check_disabled(pass_name: str, disable: tuple[str, ...], names: list[str]) -> None:
    """A pass's `disable=` option names its patterns: an unknown name is an error listing them."""
    unknown = [n for n in disable if n not in names]
    if unknown:
        raise CompileError(pass_name, f"cannot disable unknown pattern(s) {', '.join(unknown)} "
                                      f"(patterns: {', '.join(names)})")

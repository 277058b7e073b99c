"""The last verification of a compile, in a forked process beside what follows.

Verifying ResNet-50's task-level IR takes about 0.5 s and BERT-base's about 1 s, one
core's work, while packaging and writing the executable use the other core little.
Within `deferred()` (what `npu-compile` does), the final verification of a pipeline
(`lowering.instrument.run_nested`) forks: the child verifies the module and reports a
failure through a pipe, the parent goes on packaging; `finish()` waits for it (before
the executable is renamed into place) and raises the CompileError the verification
would have raised, word for word. Outside `deferred()`, or without `os.fork`,
verification is synchronous as always.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import VerifyException

from lowering.errors import CompileError


@dataclass
class _Pending:
    pid: int
    fd: int
    pass_name: str
    message: str

    def wait(self) -> tuple[int, str]:
        """(exit status, what the child wrote), once it has exited."""
        chunks = []
        while chunk := os.read(self.fd, 1 << 16):
            chunks.append(chunk)
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        return status, b"".join(chunks).decode(errors="replace")


_PENDING: list[_Pending] | None = None
SECONDS: list[float] = []
"""The wall seconds each deferred verification took in its process (for --time-passes)."""


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Defer the final verifications started inside (`start`) until `finish`; any still
    pending when the block exits (an error elsewhere) are waited for and ignored."""
    global _PENDING
    outer, _PENDING = _PENDING, []
    SECONDS.clear()
    try:
        yield
    finally:
        for p in _PENDING:
            p.wait()
        _PENDING = outer


def start(module: ModuleOp, pass_name: str, message: str) -> bool:
    """Verify `module` in a forked child when inside `deferred()` (True), else do nothing
    (False: the caller verifies)."""
    if _PENDING is None or not hasattr(os, "fork"):
        return False
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: verify, say how long and why not, exit without running anything else
        os.close(read)
        code, text, t = 0, "", time.perf_counter()
        try:
            module.verify()
        except VerifyException as e:
            code, text = 1, str(e)
        except BaseException as e:  # noqa: BLE001 (reported by the parent as a failure)
            code, text = 2, f"{type(e).__name__}: {e}"
        os.write(write, f"{time.perf_counter() - t:.6f}\n{text}".encode())
        os._exit(code)
    os.close(write)
    _PENDING.append(_Pending(pid, read, pass_name, message))
    return True


def finish() -> None:
    """Wait for the pending verifications; raise the first failure's CompileError."""
    if not _PENDING:
        return
    pending, _PENDING[:] = list(_PENDING), []
    failure = None
    for p in pending:
        status, text = p.wait()
        seconds, _, text = text.partition("\n")
        SECONDS.append(float(seconds or 0.0))
        if status != 0 and failure is None:
            failure = CompileError(p.pass_name, f"{p.message}: {text}" if os.WEXITSTATUS(status) == 1
                                   else f"{p.message}: the verifier failed ({text or f'status {status}'})")
    if failure is not None:
        raise failure

"""`SimError`: what the simulated hardware would punish, as a one-line diagnostic."""

from __future__ import annotations


class SimError(Exception):
    """A fault found while loading or running a task-level module on the simulator.

    `str(e)` is a one-line diagnostic naming the task, the op and the ONNX nodes
    involved; `details` is an optional multi-line dump (deadlock state, race
    partners, ...) meant to be printed after that line."""

    def __init__(self, message: str, details: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = details

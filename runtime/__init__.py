"""The host side: input validation, runs on the simulated device, run reports, the
runtime over the device (`Runtime`, `runtime/device.py`).

The names below load on first use (PEP 562), so that a light module of the package
(`runtime.image`: the executable file's layout) imports without the simulator.
`runtime.run` is the module; its function is `runtime.run.run`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.device import DeviceBuffer, DeviceError, Event, HostModel, Request, Runtime, Stream
    from runtime.run import RunError, RunResult, make_report, random_inputs, validate_inputs

_HOMES = {**{n: "runtime.device" for n in ("DeviceBuffer", "DeviceError", "Event", "HostModel", "Request",
                                           "Runtime", "Stream")},
          **{n: "runtime.run" for n in ("RunError", "RunResult", "make_report", "random_inputs",
                                        "validate_inputs")}}

__all__ = ["DeviceBuffer", "DeviceError", "Event", "HostModel", "Request", "RunError", "RunResult", "Runtime",
           "Stream", "make_report", "random_inputs", "validate_inputs"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'runtime' has no attribute '{name}'")
    return getattr(importlib.import_module(_HOMES[name]), name)

"""The host side: input validation, runs on the simulated device, run reports, the
runtime over the device (`Runtime`, `runtime/device.py`)."""

from runtime.device import DeviceBuffer, DeviceError, Event, HostModel, Request, Runtime, Stream
from runtime.run import (
    RunError,
    RunResult,
    make_report,
    random_inputs,
    run,
    validate_inputs,
)

__all__ = ["DeviceBuffer", "DeviceError", "Event", "HostModel", "Request", "RunError", "RunResult", "Runtime",
           "Stream", "make_report", "random_inputs", "run", "validate_inputs"]

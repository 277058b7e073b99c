"""The host side: input validation, runs on the simulated device, run reports."""

from runtime.run import (
    RunError,
    RunResult,
    make_report,
    random_inputs,
    run,
    validate_inputs,
)

__all__ = ["RunError", "RunResult", "make_report", "random_inputs", "run", "validate_inputs"]

"""Passes whose patterns come from outside the compiler's code: `npu-apply-patterns`
(PDL files), and the native functions those patterns may call."""

"""onnxruntime as an exact reference for quantized models, on any x86-64 CPU.

On x86-64 without VNNI (AVX2, or AVX-512 without VNNI) MLAS's u8 x s8 GEMM adds pairs
of products in saturating int16 (vpmaddubsw: 255 * 127 * 2 > 32767), so onnxruntime's
default run of a quantized conv or matmul (QLinearConv, QGemm, MatMulInteger, the QDQ
fusions its optimizer makes) is many steps off the ONNX result; the session option
`session.x64quantprecision` makes it convert the int8 weights to uint8 for its exact
u8 x u8 kernel (a no-op on hosts with VNNI). onnxruntime 1.32 cannot build or run some
graphs that way (a per-axis DequantizeLinear without zero point, a signed QLinearConv):
those run in the default mode without the QDQ fusions (`_default`). `install()` makes every `onnxruntime.InferenceSession`
the tests create behave so (tests/conftest.py); `npu-run --check` and `npu-quantize` do the
same (`tools/ort_session.py`).
"""

from __future__ import annotations

from typing import Any

from tools.ort_session import EXACT  # (the one definition of the exact mode)


def install() -> None:
    """Replace `onnxruntime.InferenceSession` with `ExactSession` (idempotent)."""
    import onnxruntime as ort
    if getattr(ort.InferenceSession, "_npu_exact", False):
        return
    base = ort.InferenceSession

    class ExactSession(base):  # type: ignore[misc, valid-type]
        """An InferenceSession in the exact integer mode, or the default mode where
        onnxruntime cannot build or run the model in it."""

        _npu_exact = True

        def __init__(self, model: Any, sess_options: Any = None, *args: Any, **kwargs: Any) -> None:
            self._npu_args = (model, sess_options, args, kwargs)
            opts = sess_options if sess_options is not None else ort.SessionOptions()
            try:
                opts.add_session_config_entry(*EXACT)
                super().__init__(model, opts, *args, **kwargs)
                self._npu_fallback = True
            except Exception:  # noqa: BLE001 (onnxruntime raises many types: the default mode)
                super().__init__(model, _default(sess_options), *args, **kwargs)
                self._npu_fallback = False

        def run(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().run(*args, **kwargs)
            except Exception:
                if not self._npu_fallback:
                    raise
                model, opts, a, k = self._npu_args
                return base(model, _default(opts), *a, **k).run(*args, **kwargs)

    ort.InferenceSession = ExactSession  # type: ignore[misc]


def _default(opts: Any) -> Any:
    """Session options as given, without the exact mode (a fresh set when none were), and
    without the graph optimizations past the basic level: the QDQ fusions into QLinearConv
    and QGemm are what reach the saturating kernel, while DequantizeLinear -> float op ->
    QuantizeLinear computes what ONNX says."""
    import onnxruntime as ort
    fresh = ort.SessionOptions()
    if opts is not None:
        for attr in ("graph_optimization_level", "intra_op_num_threads", "inter_op_num_threads",
                     "execution_mode", "log_severity_level"):
            setattr(fresh, attr, getattr(opts, attr))
    basic = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    if fresh.graph_optimization_level.value > basic.value:
        fresh.graph_optimization_level = basic
    return fresh

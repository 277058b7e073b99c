"""onnxruntime as the tools' reference (`npu-run --check`, `npu-quantize`'s judgements):
a CPU session in its exact integer mode, where it can run the model that way.

On x86-64 without VNNI, MLAS's u8 x s8 GEMM sums pairs of products in saturating int16
(vpmaddubsw), so a quantized conv or matmul with large activations and weights is many
steps off the ONNX result; `session.x64quantprecision` makes it convert the int8 weights
for its exact u8 x u8 kernel (a no-op where VNNI exists). onnxruntime 1.32 cannot build
or run some graphs that way (a per-axis DequantizeLinear without zero point, a signed
QLinearConv): those run in the default mode without the QDQ fusions into
QLinearConv/QGemm that reach the saturating kernel (`ORT_ENABLE_BASIC`).
"""

from __future__ import annotations

from typing import Any

EXACT = ("session.x64quantprecision", "1")


class ReferenceSession:
    """`run(names, feed)` as `onnxruntime.InferenceSession.run`, in the exact mode, or in
    the basic mode from the first call the exact one cannot build or run on."""

    def __init__(self, model: str | bytes, log_severity: int | None = None):
        import onnxruntime as ort
        self.model, self.options = model, []
        for exact in (True, False):
            opts = ort.SessionOptions()
            if exact:
                opts.add_session_config_entry(*EXACT)
            else:
                opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # (no QDQ fusions)
            if exact:  # (its failures are expected and handled: the basic mode, not a logged error)
                opts.log_severity_level = max(log_severity or 0, 4)
            elif log_severity is not None:
                opts.log_severity_level = log_severity
            self.options.append(opts)
        self.sess: Any = None
        try:
            self.sess = ort.InferenceSession(model, self.options[0], providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 (onnxruntime raises many types: the basic mode)
            self.fall_back(e)

    def fall_back(self, error: Exception) -> None:
        import onnxruntime as ort
        if len(self.options) == 1:
            raise error
        self.options = self.options[1:]
        self.sess = ort.InferenceSession(self.model, self.options[0], providers=["CPUExecutionProvider"])

    def get_inputs(self) -> Any:
        return self.sess.get_inputs()

    def get_outputs(self) -> Any:
        return self.sess.get_outputs()

    def run(self, names: list[str] | None, feed: dict[str, Any]) -> list[Any]:
        try:
            return list(self.sess.run(names, feed))
        except Exception as e:  # noqa: BLE001
            self.fall_back(e)
            return list(self.sess.run(names, feed))

"""ONNX import (a translation, not a pass) and shape buckets: ONNX -> `npu_graph`."""

# each module registers its converters: Einsum, ReduceProd, MaxUnpool; QuantizeLinear...; LSTM, GRU, RNN; Resize, Upsample
from lowering.importer import attention, indexing, quantized, recurrent, resize  # noqa: F401

"""ONNX import (a translation, not a pass) and shape buckets: ONNX -> `npu_graph`.

The converters of every op type register when `lowering.importer.onnx_import` loads
(the modules beyond its own: Einsum, ReduceProd, MaxUnpool; QuantizeLinear...; LSTM,
GRU, RNN; Resize, Upsample), so that a light module of the package (`onnx_file`: the
ONNX file reader the compile cache uses) imports without them."""

"""Helpers shared by the tests and the benchmarks: model generators, the light ONNX zoo,
onnxruntime comparison and the random-graph fuzzer."""

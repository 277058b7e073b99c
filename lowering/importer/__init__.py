"""ONNX import (a translation, not a pass) and shape buckets: ONNX -> `npu_graph`."""

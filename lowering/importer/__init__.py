"""ONNX import (a translation, not a pass) and shape buckets: ONNX -> `npu_graph`."""

from lowering.importer import resize  # noqa: E402,F401  (registers Resize and Upsample)

"""ONNX import (a translation, not a pass) and shape buckets: ONNX -> `npu_graph`."""

# each module registers its converters: Einsum, ReduceProd, MaxUnpool; Resize, Upsample
from lowering.importer import indexing, resize  # noqa: F401

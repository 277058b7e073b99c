"""The fuzzer's op table (`table.OPS`: op type -> generator), filled by the generator
modules: elementwise, movement, shapes, reductions, spatial, sequence, motifs;
the low-precision segments (`quantized`) fill `QDQ_OPS` and `CAST_OPS`.
Generators draw attribute variants (axes, keepdims, strides, pads, dilations, groups,
perms, split sizes, Slice steps, Pad modes, epsilons ...) and keep values meaningful
(domains through `Builder.positive` / `Builder.bounded`, discontinuous ops on exact
tensors). `fuzz_graphs` draws from `OPS`; `EXCLUDED` names the supported op types left
out, with the reason."""

from tools.testkit.fuzz_ops import (  # noqa: F401  (each registers its generators)
    elementwise,
    motifs,
    movement,
    quantized,
    reductions,
    sequence,
    shapes,
    spatial,
)
from tools.testkit.fuzz_ops.table import CAST_OPS, EXCLUDED, OPS, QDQ_OPS, OpGen

__all__ = ["CAST_OPS", "EXCLUDED", "OPS", "QDQ_OPS", "OpGen"]

"""The fuzzer's op table itself: `OPS` maps an ONNX op type (or a named motif) to an
`OpGen` - a generator that appends node(s) reading a live tensor (`fuzz_builder.Builder`)
and returns the new tensor, or None when the variant it drew does not fit - with the
opsets, ranks and element types it reads; `op` registers one. Also the helpers the
generator modules share, and `EXCLUDED`: supported op types left out, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional, TypeVar

import numpy as np

from tools.testkit.fuzz_builder import MAX_ELEMS, MAX_RANK, Builder, Tensor

Gen = Callable[[Builder, Tensor], Optional[Tensor]]
ALL_TYPES = ("float", "bool", "int64", "int32")


@dataclass(frozen=True)
class OpGen:
    """A generator and what it reads: opsets since..until, ranks, element types."""

    fn: Gen
    weight: float = 1.0
    since: int = 1
    until: int = 99
    ranks: tuple[int, int] = (1, MAX_RANK)
    dtypes: tuple[str, ...] = ("float",)

    def fits(self, b: Builder, t: Tensor) -> bool:
        return (self.since <= b.opset <= self.until and self.ranks[0] <= t.rank <= self.ranks[1]
                and t.dtype in self.dtypes)


OPS: dict[str, OpGen] = {}
QDQ_OPS: dict[str, OpGen] = {}
"""QDQ segments (`fuzz_ops.quantized`): the only generators of a graph of kind "qdq"."""
CAST_OPS: dict[str, OpGen] = {}
"""Cast segments (`fuzz_ops.quantized`): drawn besides `OPS` in a graph of kind "cast"."""

EXCLUDED: dict[str, str] = {
    "Upsample": "deprecated at opset 10: the fuzzer writes opsets 13 and later",
    "Einsum": "left out of the fuzzer by its brief (issue 18 item 3)",
    **{q: "an operator form of quantization: the fuzzer writes the QDQ form onnxruntime's quantize_static "
          "writes (QuantizeLinear / DequantizeLinear), tests/test_quant_import.py covers the operators"
       for q in ("QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger", "DynamicQuantizeLinear")},
}


G = TypeVar("G", bound=Gen)


def op(name: str, weight: float = 1.0, since: int = 1, until: int = 99, ranks: tuple[int, int] = (1, MAX_RANK),
       dtypes: tuple[str, ...] = ("float",), table: dict[str, OpGen] | None = None) -> Callable[[G], G]:
    """Register the decorated generator under `name` (in `table`, `OPS` by default)."""
    def register(fn: G) -> G:
        (OPS if table is None else table)[name] = OpGen(fn, weight, since, until, ranks, dtypes)
        return fn
    return register


def f32(v: float) -> np.float32:
    return np.float32(v)


def within_limits(shape: Sequence[int]) -> bool:
    return 1 <= len(shape) <= MAX_RANK and int(np.prod(shape, dtype=np.int64)) <= MAX_ELEMS and min(shape) >= 1

def bcast_shape(b: Builder, t: Tensor) -> list[int]:
    """A shape that broadcasts to t: a random subset of its dims kept, the others 1,
    leading ones sometimes dropped (per channel, per row, a scalar ...)."""
    keep = b.rng.random(t.rank) < 0.5
    shape = [d if k else 1 for d, k in zip(t.shape, keep)]
    return shape[b.randint(0, len(shape)):]


def like(t: Tensor, shape: Sequence[int]) -> dict:
    """Keyword arguments of `Builder.node` for a data movement of t to `shape`."""
    return {"dtype": t.dtype, "exact": t.exact, "pos": t.pos}

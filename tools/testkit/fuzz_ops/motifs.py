"""Composite generators of the fuzzer's op table: the view / in-place motif (a view
chain read by an elementwise op next to another reader of the viewed tensor)."""

from __future__ import annotations

from tools.testkit.fuzz_builder import (
    MAX_RANK,
    Builder,
    Tensor,
)
from tools.testkit.fuzz_ops.elementwise import binary_const
from tools.testkit.fuzz_ops.movement import flatten_view, reshape_view, squeeze_view, unsqueeze_view
from tools.testkit.fuzz_ops.table import OPS, Gen, op


@op("view_motif", weight=12.0, ranks=(0, MAX_RANK))
def _view_motif(b: Builder, t: Tensor) -> Tensor | None:
    """The in-place hazard: t -> view(s) -> elementwise, and another reader of t (now,
    or soon through `wants_reader`)."""
    if b.budget() < 3:
        return None
    views: list[Gen] = [reshape_view, flatten_view, squeeze_view, unsqueeze_view]
    view: Gen = b.draw(views)
    v = view(b, t) or reshape_view(b, t)
    if b.budget() >= 3 and b.coin(0.25):
        view = b.draw(views)
        v = view(b, v) or v
    elementwise: Gen = b.draw([OPS["Neg"].fn, OPS["Exp"].fn, OPS["Sigmoid"].fn, OPS["Relu"].fn, binary_const])
    e = elementwise(b, v) or binary_const(b, v)
    b.motif_outputs.append(e.name)
    b.wants_reader.append(t)
    return e

"""ONNX node names carried as MLIR locations (`loc("conv1")`, `loc(fused["a", "b"])`)."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import ArrayAttr, FusedLoc, LocationAttr, NameLoc, NoneAttr, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Operation


def name_loc(name: str) -> NameLoc:
    return NameLoc(StringAttr(name), NoneAttr())


def loc_names(loc: Attribute) -> list[str]:
    """Every ONNX node name in a location, in order, without duplicates."""
    if isinstance(loc, NameLoc):
        return [loc.desc.data]
    out: dict[str, None] = {}  # (ordered, and a membership test in O(1): a kernel's loc names every node)
    if isinstance(loc, FusedLoc) and isinstance(loc.locations, ArrayAttr):  # (its verifier's invariant)
        for sub in loc.locations:
            out.update(dict.fromkeys(loc_names(sub)))
    return list(out)


def fused_loc(names: Iterable[str]) -> LocationAttr:
    uniq = list(dict.fromkeys(names))
    if not uniq:
        return UnknownLoc()
    if len(uniq) == 1:
        return name_loc(uniq[0])
    return FusedLoc(tuple(name_loc(n) for n in uniq), NoneAttr())


def node_names(op: Operation) -> list[str]:
    return loc_names(op.location)


def describe(op: Operation) -> str:
    """`'npu_graph.conv2d' (ONNX node conv1)` for diagnostics."""
    names = node_names(op)
    where = f" (ONNX node {', '.join(names)})" if names else ""
    return f"'{op.name}'{where}"

"""ONNX node names carried as MLIR locations (`loc("conv1")`, `loc(fused["a", "b"])`)."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import ArrayAttr, FusedLoc, LocationAttr, NameLoc, NoneAttr, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Operation


def name_loc(name: str) -> NameLoc:
    return NameLoc(StringAttr(name), NoneAttr())


def loc_names(loc: Attribute) -> list[str]:
    """Every ONNX node name in a location, in order, without duplicates."""
    out: list[str] = []
    if isinstance(loc, NameLoc):
        out.append(loc.desc.data)
    elif isinstance(loc, FusedLoc) and isinstance(loc.locations, ArrayAttr):  # (its verifier's invariant)
        for sub in loc.locations:
            out.extend(n for n in loc_names(sub) if n not in out)
    return out


def fused_loc(names: Iterable[str]) -> LocationAttr:
    uniq: list[str] = []
    for n in names:
        if n not in uniq:
            uniq.append(n)
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

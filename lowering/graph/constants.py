"""Reading and making `npu_graph.constant`s in passes (not a pass).

Graph passes that look at constant contents (canonicalisation of x*1 / x+0,
constant folding, BatchNorm folding) share two helpers:

- `ConstantReader(module)` gives the contents of a value defined by an
  `npu_graph.constant` - its inline `value`, or its `weight` from the module's
  weight store (`npu_dialects.weights.weights_of`, loaded on first need only);
- `make_constant(module, array, hint, loc)` builds the constant for a new array:
  inline `value` when it has at most `INLINE_MAX_ELEMENTS` elements (as the
  importer does) and finite, else a new weight in the store (`add_weight`),
  referenced by key.
Both keep element types: constants read back in their type's numpy dtype, and
`make_constant` keeps an array's type when the chip holds it (else f32).
"""

from __future__ import annotations

import re
from typing import Any, cast

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, LocationAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, SSAValue

from lowering.errors import CompileError
from npu_dialects.dtypes import from_np, is_float, np_dtype
from npu_dialects.graph import ConstantOp, shape_of
from npu_dialects.locs import loc_names
from npu_dialects.recipe import Derived, leaves, uniform_value
from npu_dialects.weights import (
    Recipe,
    WeightsError,
    add_weight,
    note_reads,
    peek,
    store_dtype,
    test_uniform,
    weights_of,
)

INLINE_MAX_ELEMENTS = 16
"""Folded constants with at most this many elements are written inline (`value`), larger
ones go to the weight store (`weight`) - the importer's rule."""


class ConstantReader:
    """Contents of `npu_graph.constant` values of one module, as arrays of their element
    type's numpy dtype (float32 for f32 constants).

    Weights are fetched from the module's weight store only when a weight constant is
    asked for; a store that cannot be read is a `CompileError` of `pass_name`."""

    def __init__(self, module: ModuleOp, pass_name: str):
        self.module = module
        self.pass_name = pass_name
        self._weights: dict[str, np.ndarray] | None = None

    def weights(self) -> dict[str, np.ndarray]:
        if self._weights is None:
            try:
                self._weights = weights_of(self.module)
            except WeightsError as e:
                raise CompileError(self.pass_name, str(e)) from e
        return self._weights

    @staticmethod
    def constant_op(value: SSAValue) -> ConstantOp | None:
        """The `npu_graph.constant` defining `value`, if that is what defines it."""
        owner = value.owner
        return owner if isinstance(owner, ConstantOp) else None

    def inline(self, value: SSAValue) -> np.ndarray | None:
        """The contents of `value` if it is an inline (`value = dense<...>`) constant."""
        op = self.constant_op(value)
        if op is None or op.value is None:
            return None
        return np.asarray(op.value.get_values(), dtype=np_dtype(op.result)).reshape(shape_of(op.result))

    def array(self, value: SSAValue) -> np.ndarray | None:
        """The contents of `value` if an `npu_graph.constant` defines it and its data is
        available (inline, or a weight the store holds with the right shape); else None."""
        op = self.constant_op(value)
        if op is None:
            return None
        if op.value is not None:
            return self.inline(value)
        if op.weight is None:
            return None
        data = self.weights().get(op.weight.data)
        if data is None or tuple(data.shape) != shape_of(op.result):
            return None
        return np.asarray(data, dtype=np_dtype(op.result))

    def derived(self, value: SSAValue) -> Derived | None:
        """`array(value)` with its recipe (a weight by key, an inline constant by value),
        the read not noted: a pass that builds a new weight from it with `Derived` ops
        depends on its value only through that weight's recipe."""
        op = self.constant_op(value)
        if op is None:
            return None
        if op.value is not None:
            data = self.inline(value)
            return None if data is None else Derived.const(data)
        if op.weight is None or op.weight.data not in self.weights():
            return None
        data = peek(self.weights(), op.weight.data)
        if tuple(data.shape) != shape_of(op.result):
            return None
        return Derived(np.asarray(data, dtype=np_dtype(op.result)), {"w": op.weight.data})

    def per_channel(self, value: SSAValue, channels: int, rank: int) -> np.ndarray | None:
        """A constant as a [channels] vector when it broadcasts along dim 1 (channels) of
        a rank-`rank` tensor only, i.e. is [C, 1, ...] or a scalar (None otherwise); its
        value read (`per_channel_derived`: with its recipe instead)."""
        d = self.per_channel_derived(value, channels, rank)
        if d is None:
            return None
        note_reads(self.module, leaves([d.expr]))
        return d.value

    def per_channel_derived(self, value: SSAValue, channels: int, rank: int) -> Derived | None:
        """`per_channel` with its recipe (`derived`: the read not noted)."""
        c = self.derived(value)
        if c is None or len(c.shape) > rank:
            return None
        full = (1,) * (rank - len(c.shape)) + c.shape
        if any(d != 1 for i, d in enumerate(full) if i != 1) or full[1] not in (1, channels):
            return None
        return Derived.apply("broadcast_to", c.reshape(-1), shape=[channels])

    @classmethod
    def weight_key(cls, value: SSAValue, fallback: str) -> str:
        """The weight-store key of the constant defining `value` (`fallback` when it is
        inline or not a constant): the `weight_hint` fallback of tensors derived from it."""
        op = cls.constant_op(value)
        return op.weight.data if op is not None and op.weight is not None else fallback

    def scalar(self, value: SSAValue) -> float | None:
        """The value of a constant whose elements are all equal (None otherwise). Of a
        weight, the test is noted rather than the read (`test_uniform`)."""
        op = self.constant_op(value)
        if op is not None and op.value is None and op.weight is not None:
            d = self.derived(value)
            return None if d is None else test_uniform(self.weights(), op.weight.data, d.value)
        data = self.array(value)
        return None if data is None else uniform_value(data)

    def is_splat(self, value: SSAValue, scalar: float) -> bool:
        """Whether `value` is a constant whose every element equals `scalar`."""
        return self.scalar(value) == scalar


def weight_hint(loc: Attribute, suffix: str, fallback: str = "const") -> str:
    """A weight key for a new tensor made at `loc`: the first ONNX node name, sanitised
    as the importer does (`/conv1/Conv` -> `conv1_Conv`; `fallback` without one), plus
    `suffix`."""
    names = loc_names(loc)
    base = re.sub(r"[^A-Za-z0-9_.\-]+", "_", names[0]).strip("_.") if names else ""
    return f"{base or fallback}.{suffix}"


def make_constant(module: ModuleOp, array: np.ndarray | Derived, hint: str, loc: LocationAttr,
                  recipe: Recipe | None = None, element_type: Attribute | None = None) -> ConstantOp:
    """An `npu_graph.constant` holding `array` as `element_type` (default: the array's own
    when the chip holds it - f16, bf16, i8, ui8, i32 - else f32, as `add_weight` stores it),
    located at `loc`: inline when small, else a new weight of `module` whose key derives
    from `hint`.

    A `Derived` array keeps its recipe with the new weight; when it is written inline
    instead, the weights it was computed from count as read (`note_reads`).

    Non-finite values always go to the weight store: xDSL 0.75 prints an inline inf/nan
    as a hex bit pattern (`0x7f800000`) that it parses back as the integer 2139095040."""
    expr = None
    if isinstance(array, Derived):
        array, expr = array.value, array.expr
    if element_type is None:
        element_type = from_np(store_dtype(np.asarray(array)))
    data = np.ascontiguousarray(array, dtype=np_dtype(element_type)).reshape(np.shape(array))  # (0-d stays 0-d)
    ty = TensorType(element_type, data.shape)
    floating = is_float(element_type)
    if data.size <= INLINE_MAX_ELEMENTS and (not floating or np.isfinite(data.astype(np.float32)).all()):
        vals = [float(v) if floating else int(v) for v in data.reshape(-1)]
        op = ConstantOp(ty, value=DenseIntOrFPElementsAttr.from_list(cast(Any, ty), vals))
        if expr is not None:
            note_reads(module, leaves([expr]))
    else:
        if expr is not None:
            expr = {"op": "cast", "args": [expr], "dtype": str(data.dtype)}
        op = ConstantOp(ty, weight=add_weight(module, hint, data, recipe if expr is None else expr))
    op.location = loc
    return op

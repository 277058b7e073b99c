"""Element types every dialect carries: f32, f16, bf16 (storage and vector types),
i8 and ui8 (quantized storage) and i32 (the cube's integer accumulator), with their
byte sizes and numpy dtypes (bf16 through `ml_dtypes`, which onnx already needs).

One place answers "how many bytes is this tensor or buffer" (`nbytes`) and "which
numpy array holds it" (`np_dtype`), so DMA bytes, SRAM buffers, the tile search,
the DRAM arena, the weights image and the simulator's views agree. `check_types`
is the verifier rule of ops that compute in one float type; ops that take integers
(quantize, dequantize, requantize, integer conv/matmul, data movement) say so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    IntegerType,
    MemRefType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

import npu_dialects.identity  # noqa: F401  (xDSL identity hashing at C speed; imported before any IR exists)

f32, f16, bf16 = Float32Type(), Float16Type(), BFloat16Type()
i8, ui8, i32 = IntegerType(8), IntegerType(8, Signedness.UNSIGNED), IntegerType(32)

# name -> (type, bytes, numpy dtype); the names are how the IR prints the types
ELEMENT_TYPES: dict[str, tuple[Attribute, int, np.dtype]] = {
    "f32": (f32, 4, np.dtype(np.float32)),
    "f16": (f16, 2, np.dtype(np.float16)),
    "bf16": (bf16, 2, np.dtype(ml_dtypes.bfloat16)),
    "i8": (i8, 1, np.dtype(np.int8)),
    "ui8": (ui8, 1, np.dtype(np.uint8)),
    "i32": (i32, 4, np.dtype(np.int32)),
}
FLOATS = ("f32", "f16", "bf16")
QUANTIZED = ("i8", "ui8")
_BY_TYPE = {t: (name, size, dt) for name, (t, size, dt) in ELEMENT_TYPES.items()}
_BY_DTYPE = {dt: t for t, _, dt in ELEMENT_TYPES.values()}


def type_name(t: Attribute) -> str | None:
    """'f32', 'i8', ... for a supported element type, else None."""
    hit = _BY_TYPE.get(t)
    return hit[0] if hit else None


def element_type(v: SSAValue | Attribute) -> Attribute:
    """The element type of a tensor/memref value or type (f32 for anything else)."""
    t = v.type if isinstance(v, SSAValue) else v
    return t.element_type if isinstance(t, TensorType | MemRefType) else f32


def elem_bytes(v: SSAValue | Attribute) -> int:
    """Bytes of one element of a tensor/memref value, type or element type."""
    t = v if isinstance(v, Attribute) and not isinstance(v, TensorType | MemRefType) else element_type(v)
    hit = _BY_TYPE.get(t)
    if hit is None:
        raise VerifyException(f"unsupported element type {t}")
    return hit[1]


def nbytes(v: SSAValue | Attribute) -> int:
    """Bytes of a whole tensor/memref value or type."""
    t = v.type if isinstance(v, SSAValue) else v
    assert isinstance(t, TensorType | MemRefType)
    return math.prod(t.get_shape()) * elem_bytes(t.element_type)


def np_dtype(v: SSAValue | Attribute) -> np.dtype:
    """The numpy dtype holding a value/type/element type (bf16: ml_dtypes.bfloat16)."""
    t = v if isinstance(v, Attribute) and not isinstance(v, TensorType | MemRefType) else element_type(v)
    hit = _BY_TYPE.get(t)
    if hit is None:
        raise VerifyException(f"unsupported element type {t}")
    return hit[2]


def from_np(dtype: np.dtype | type) -> Attribute:
    """The element type of a numpy dtype (a ValueError for one the chip does not hold)."""
    t = _BY_DTYPE.get(np.dtype(dtype))
    if t is None:
        raise ValueError(f"no NPU element type holds numpy {np.dtype(dtype)}")
    return t


def is_float(t: Attribute) -> bool:
    return type_name(t) in FLOATS


def qrange(t: Attribute) -> tuple[int, int]:
    """The saturation range of an integer element type."""
    info = np.iinfo(np_dtype(t))
    return int(info.min), int(info.max)


def compute_view(a: np.ndarray) -> np.ndarray:
    """What a unit computes on: f16/bf16 storage is widened to f32 (accumulation and
    arithmetic in f32; storing back into the buffer rounds to its type)."""
    return a.astype(np.float32) if a.dtype in (np.float16, ml_dtypes.bfloat16) else a


def _shaped(op: Operation) -> Iterable[tuple[str, int, Attribute]]:
    for kind, vals in (("operand", op.operands), ("result", op.results)):
        for i, v in enumerate(vals):
            if isinstance(v.type, TensorType | MemRefType):
                yield kind, i, v.type.element_type


def check_types(op: Operation, allowed: Iterable[str] = FLOATS, same: bool = True) -> None:
    """Every tensor/memref operand and result has an element type named in `allowed`
    and, with `same`, all of them the same one (an op computing in one type)."""
    allowed = tuple(allowed)
    first: tuple[str, int, Attribute] | None = None
    for kind, i, t in _shaped(op):
        if type_name(t) not in allowed:
            raise VerifyException(f"'{op.name}': {kind} #{i} has element type {t}; "
                                  f"this op takes {', '.join(allowed)}")
        if first is None:
            first = (kind, i, t)
        elif same and t != first[2]:
            raise VerifyException(f"'{op.name}': {kind} #{i} is {t} but {first[0]} #{first[1]} is {first[2]}; "
                                  f"this op computes in one element type (insert a cast)")


__all__ = ["ELEMENT_TYPES", "FLOATS", "QUANTIZED", "bf16", "check_types", "compute_view", "elem_bytes",
           "element_type", "f16", "f32", "from_np", "i8", "i32", "is_float", "nbytes", "np_dtype", "qrange",
           "type_name", "ui8"]

"""`npu_compute`: work on a core's on-chip buffers.

Operands are `sram` memrefs holding whole tiles; results are written in place
into the last operand (`out`). Cube ops (`matmul`, `conv2d`) run on the
matrix unit, `eltwise` and `pool` on the vector unit. `execute` gives the
numpy semantics (shared with `npu_graph`) and `cycles(arch)` the unit's
occupancy, which both the compiler's cost model and the simulator use.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from math import inf, prod
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    VarOperandDef,
    attr_def,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from npu_dialects import dtypes
from npu_dialects.arch import Arch, value_type, widest_type
from npu_dialects.dma import SPACES, memory_space
from npu_dialects.graph import (
    ELEMENTWISE,
    GRAPH_OP_BY_NAME,
    QuantOp,
    RequantizeOp,
    StructuredOp,
    broadcast_shapes,
    check_window_params,
    conv2d_ref,
    conv_out_shape,
    int_array,
    integer_operands,
    ints,
    pool_ref,
)
from npu_dialects.special import ELTWISE_USES


class EltwiseFn(StrEnum):
    """The vector unit's elementwise functions: the keys of `ELEMENTWISE` (arity, numpy)."""

    RELU = "relu"
    ADD = "add"
    MUL = "mul"
    SUB = "sub"
    DIV = "div"
    SIGMOID = "sigmoid"
    TANH = "tanh"
    ERF = "erf"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    SQRT = "sqrt"
    EXP = "exp"
    LOG = "log"
    NEG = "neg"
    ABS = "abs"
    RECIPROCAL = "reciprocal"
    TRUNC = "trunc"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"
    SIGN = "sign"
    SIN = "sin"
    COS = "cos"
    TAN = "tan"
    ASIN = "asin"
    ACOS = "acos"
    ATAN = "atan"
    SINH = "sinh"
    COSH = "cosh"
    ASINH = "asinh"
    ACOSH = "acosh"
    ATANH = "atanh"
    SOFTPLUS = "softplus"
    ISNAN = "isnan"
    ISINF = "isinf"
    FMOD = "fmod"
    MOD = "mod"
    COPY = "copy"
    POW = "pow"
    PRELU = "prelu"
    MAX = "max"
    MIN = "min"
    EQUAL = "equal"
    LESS = "less"
    GREATER = "greater"
    CLIP = "clip"
    WHERE = "where"


if set(EltwiseFn) != set(ELEMENTWISE):
    raise AssertionError(f"EltwiseFn and ELEMENTWISE differ: {sorted(set(EltwiseFn) ^ set(ELEMENTWISE))}")


@irdl_attr_definition
class EltwiseFnAttr(EnumAttribute[EltwiseFn], SpacedOpaqueSyntaxAttribute):
    """`relu` in `npu_compute.eltwise`'s format, `#npu_compute<fn relu>` elsewhere."""

    name = "npu_compute.fn"


class PoolKind(StrEnum):
    """The pooling `npu_compute.pool` computes (average pooling runs as `apply`)."""

    MAX = "max"


@irdl_attr_definition
class PoolKindAttr(EnumAttribute[PoolKind], SpacedOpaqueSyntaxAttribute):
    """`max` in `npu_compute.pool`'s format, `#npu_compute<pool_kind max>` elsewhere."""

    name = "npu_compute.pool_kind"


class Unit(StrEnum):
    """A core's engines that run their own instruction queues: the cube, the vector
    unit, and the DMA issue (loads and stores, `npu_dma.copy`)."""

    CUBE = "cube"
    VECTOR = "vector"
    DMA = "dma"


@irdl_attr_definition
class UnitKindAttr(EnumAttribute[Unit], SpacedOpaqueSyntaxAttribute):
    """`cube` in `npu_compute.fence`'s format, `#npu_compute<unit cube>` elsewhere."""

    name = "npu_compute.unit"


def _shape(v: SSAValue) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, MemRefType)
    return tuple(t.get_shape())


class ComputeOp(IRDLOperation):
    """Base: `unit` is `cube` or `vector`; `out` is written in place. `READS_OUT`: `out`
    may also be an input (elementwise work); ops reading windows or rows of an input
    while they write (cube ops, pooling) need an `out` of its own."""

    UNIT: ClassVar[str]
    READS_OUT: ClassVar[bool] = True

    def buffers(self) -> list[SSAValue]:
        return list(self.operands)

    def verify_(self) -> None:
        for v in self.operands:
            if not isinstance(v.type, MemRefType) or memory_space(v.type) != "sram":
                raise VerifyException(f"'{self.name}': operands must be \"sram\" memrefs, got {v.type}")
        self.verify_types()
        *ins, out = self.operands
        if not self.READS_OUT and out in ins:
            raise VerifyException(f"'{self.name}': out is also operand #{ins.index(out)}: the {self.UNIT} unit "
                                  "cannot write the buffer it reads")
        self.verify_shapes()

    def verify_types(self) -> None:
        """Element types: by default every operand holds one float type (f32, f16, bf16)."""
        dtypes.check_types(self)

    def verify_shapes(self) -> None:
        pass

    def cycles(self, arch: Arch) -> int:
        raise NotImplementedError

    def unit(self, arch: Arch) -> str:
        """The unit that runs it on `arch` (its class's `UNIT`)."""
        return self.UNIT

    def execute(self, arrays: Sequence[np.ndarray]) -> None:
        """Compute on numpy views of the operands (the last one is written)."""
        raise NotImplementedError

    def executor(self) -> Callable[[Sequence[np.ndarray]], None]:
        """What the simulator runs on its operands' buffers: `execute` itself when every
        operand is f32 (the f32 path, unchanged), else `execute_typed`."""
        if all(isinstance(t := v.type, MemRefType) and type(t.element_type) is Float32Type for v in self.operands):
            return self.execute
        return self.execute_typed

    def execute_typed(self, arrays: Sequence[np.ndarray]) -> None:
        """`execute` on typed buffers: f16/bf16 operands are computed on in f32
        (`dtypes.compute_view`) and the result is rounded into `out`'s type."""
        *ins, out = arrays
        wide = dtypes.compute_view(out)
        self.execute([*(dtypes.compute_view(a) for a in ins), wide])
        if wide is not out:
            out[...] = wide


def store(out: np.ndarray, y: np.ndarray, saturates: bool = False) -> None:
    """`out[...] = y` that never wraps: into a float buffer `y` is rounded to its type;
    into an integer one an integer `y` must lie in the type's range, and a float `y` is
    taken only from an op that saturates (integral values in range), else a ValueError."""
    if out.dtype.kind == "f" or out.dtype == dtypes.np_dtype(dtypes.bf16):
        out[...] = y
        return
    y = np.asarray(y)
    info = np.iinfo(out.dtype)
    if y.dtype.kind not in "iub":
        if not saturates:
            raise ValueError(f"computes {y.dtype} values but its out buffer holds {out.dtype} (only an op "
                             "that saturates, such as requantize, stores floats into an integer buffer)")
        bad = ~np.isfinite(y) | (y != np.rint(y))
        if bad.any():
            raise ValueError(f"stores {y[bad].flat[0]} into a {out.dtype} buffer")
    if y.size and (y.min() < info.min or y.max() > info.max):
        v = y.min() if y.min() < info.min else y.max()
        raise ValueError(f"value {v} does not fit the {out.dtype} out buffer [{info.min}, {info.max}] "
                         "(an integer result is never wrapped)")
    out[...] = y


def integer_product(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], x: np.ndarray, w: np.ndarray,
                    zx: int, zw: int) -> np.ndarray:
    """fn(x - zx, w - zw) for 8-bit integer operands (`graph.integer_operands`: float64,
    so BLAS sums them exactly for any K < 2^37), as int64, so that `store` sees a sum
    leaving int32 instead of a wrapped one; conv padding is then a real zero (the zero
    point). The same arithmetic as `graph.matmul_int_ref` / `conv2d_int_ref`."""
    return np.rint(fn(*integer_operands(x, w, zx, zw))).astype(np.int64)


def _cube_types(op: IRDLOperation, x: SSAValue, w: SSAValue, out: SSAValue) -> None:
    """Cube operands: two of one float type into that type or f32 (the accumulator), or
    two 8-bit integers (i8/ui8) into i32; zero points only on integer ops, in range."""
    tx, tw, to = (dtypes.element_type(v) for v in (x, w, out))
    names = [dtypes.type_name(t) for t in (tx, tw, to)]
    if names[0] in dtypes.QUANTIZED and names[1] in dtypes.QUANTIZED:
        if names[2] != "i32":
            raise VerifyException(f"'{op.name}': 8-bit integer operands accumulate into an i32 out, got {to}")
    elif names[0] in dtypes.FLOATS and tw == tx:
        if to not in (tx, dtypes.f32):
            raise VerifyException(f"'{op.name}': {tx} operands write a {tx} or f32 out, got {to}")
    else:
        raise VerifyException(f"'{op.name}': operands hold {tx} and {tw}; the cube multiplies two of one float "
                              "type or two 8-bit integers (i8/ui8)")
    for name, t in (("input_zero_point", tx), ("weight_zero_point", tw)):
        zp = op.attributes.get(name)
        if zp is None:
            continue
        if not isinstance(zp, IntegerAttr) or names[0] not in dtypes.QUANTIZED:
            raise VerifyException(f"'{op.name}': {name} must be an integer attribute of an op on 8-bit integers")
        lo, hi = dtypes.qrange(t)
        if not lo <= zp.value.data <= hi:
            raise VerifyException(f"'{op.name}': {name} {zp.value.data} is outside [{lo}, {hi}] ({t})")


def zero_points(op: IRDLOperation) -> tuple[int, int]:
    """`input_zero_point` and `weight_zero_point` of an integer cube op (0 when absent)."""
    out = []
    for name in ("input_zero_point", "weight_zero_point"):
        zp = op.attributes.get(name)
        out.append(zp.value.data if isinstance(zp, IntegerAttr) else 0)
    return out[0], out[1]


def operand_counts(cls: type) -> tuple[int, float]:
    """How many operands an op class takes: (fewest, most; inf when variadic)."""
    defs = [d for _, d in cls.get_irdl_definition().operands]
    most = inf if any(type(d) is VarOperandDef for d in defs) else len(defs)
    return sum(not isinstance(d, VarOperandDef) for d in defs), most


def _flag(op: IRDLOperation, name: str) -> bool:
    return name in op.attributes


@irdl_op_definition
class MatmulOp(ComputeOp):
    """out[M, N] (+)= op(a) @ op(b); `accumulate` adds to `out` instead of overwriting."""

    name = "npu_compute.matmul"
    UNIT: ClassVar[str] = "cube"
    READS_OUT: ClassVar[bool] = False
    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    out = operand_def(MemRefType)
    trans_a = opt_attr_def(UnitAttr)
    trans_b = opt_attr_def(UnitAttr)
    accumulate = opt_attr_def(UnitAttr)
    assembly_format = "$a `,` $b `->` $out attr-dict `:` type($a) `,` type($b) `->` type($out)"

    def __init__(self, a: SSAValue, b: SSAValue, out: SSAValue, *, trans_a: bool = False,
                 trans_b: bool = False, accumulate: bool = False):
        attrs: dict[str, Attribute] = {}
        for k, v in (("trans_a", trans_a), ("trans_b", trans_b), ("accumulate", accumulate)):
            if v:
                attrs[k] = UnitAttr()
        super().__init__(operands=[a, b, out], attributes=attrs)

    def mkn(self) -> tuple[int, int, int]:
        a, b = _shape(self.a)[-2:], _shape(self.b)[-2:]
        m, k = (a[1], a[0]) if _flag(self, "trans_a") else a
        k2, n = (b[1], b[0]) if _flag(self, "trans_b") else b
        if k != k2:
            raise VerifyException(f"'npu_compute.matmul': inner dimensions differ ({k} vs {k2})")
        return m, k, n

    def verify_shapes(self) -> None:
        ranks = {len(_shape(v)) for v in self.operands}
        if len(ranks) != 1 or min(ranks) < 2:
            raise VerifyException(f"'npu_compute.matmul': operands must have one rank >= 2 (leading dims are "
                                  f"batch dims), got {[list(_shape(v)) for v in self.operands]}")
        m, _, n = self.mkn()
        batch = _shape(self.out)[:-2]
        ok = _shape(self.out)[-2:] == (m, n) and all(
            d in (1, o) for v in (self.a, self.b) for d, o in zip(_shape(v)[:-2], batch))
        if not ok:
            raise VerifyException(f"'npu_compute.matmul': out must be {[*batch, m, n]} and the batch dims of a "
                                  f"and b equal to it or 1, got {[list(_shape(v)) for v in self.operands]}")

    def verify_types(self) -> None:
        _cube_types(self, self.a, self.b, self.out)

    def cycles(self, arch: Arch) -> int:
        m, k, n = self.mkn()
        return arch.cube_cycles(m, k, n, batch=prod(_shape(self.out)[:-2]), dtype=value_type(self.a))

    def execute(self, arrays: Sequence[np.ndarray]) -> None:
        a, b, out = arrays
        a = np.swapaxes(a, -1, -2) if _flag(self, "trans_a") else a
        b = np.swapaxes(b, -1, -2) if _flag(self, "trans_b") else b
        if _flag(self, "accumulate"):
            out += a @ b
        else:
            np.matmul(a, b, out=out)

    def execute_typed(self, arrays: Sequence[np.ndarray]) -> None:
        """Floats as `ComputeOp.execute_typed`; 8-bit integers exactly into int32."""
        a, b, out = arrays
        if out.dtype != np.int32:
            return super().execute_typed(arrays)
        a = np.swapaxes(a, -1, -2) if _flag(self, "trans_a") else a
        b = np.swapaxes(b, -1, -2) if _flag(self, "trans_b") else b
        y = integer_product(np.matmul, a, b, *zero_points(self))
        store(out, out + y if _flag(self, "accumulate") else y)


@irdl_op_definition
class Conv2dOp(ComputeOp):
    """out (+)= conv2d(input, weight): `input` is an already padded halo tile, or
    `pads` (top, left, bottom, right; default none) zero-pads it on the fly (layer
    groups read whole SRAM-resident tensors); a negative pad crops instead (a strip
    group's conv reading only the middle rows of a strip buffer). `group` defaults
    to 1; properties equal to their default are not printed."""

    name = "npu_compute.conv2d"
    UNIT: ClassVar[str] = "cube"
    READS_OUT: ClassVar[bool] = False
    input = operand_def(MemRefType)
    weight = operand_def(MemRefType)
    out = operand_def(MemRefType)
    strides = attr_def(DenseArrayBase)
    dilations = attr_def(DenseArrayBase)
    group = prop_def(IntegerAttr, default_value=IntegerAttr(1, i64))
    pads = prop_def(DenseArrayBase, default_value=int_array((0, 0, 0, 0)))
    accumulate = opt_attr_def(UnitAttr)
    assembly_format = "$input `,` $weight `->` $out attr-dict `:` type($input) `,` type($weight) `->` type($out)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue, w: SSAValue, out: SSAValue, *, strides: Sequence[int],
                 dilations: Sequence[int], group: int = 1, accumulate: bool = False,
                 pads: Sequence[int] = (0, 0, 0, 0)):
        attrs: dict[str, Attribute] = {"strides": int_array(strides), "dilations": int_array(dilations)}
        if accumulate:
            attrs["accumulate"] = UnitAttr()
        props: dict[str, Attribute] = {"pads": int_array(pads)} if any(pads) else {}
        super().__init__(operands=[x, w, out], attributes=attrs, properties={**props, "group": IntegerAttr(group, i64)})

    @property
    def params(self) -> dict:
        return dict(strides=ints(self.strides, (1, 1)), dilations=ints(self.dilations, (1, 1)),
                    group=self.group.value.data, pads=ints(self.pads, (0, 0, 0, 0)))

    def verify_shapes(self) -> None:
        x, w, o = _shape(self.input), _shape(self.weight), _shape(self.out)
        p = self.params
        if len(w) != 4 or len(o) != 4:
            raise VerifyException(f"'npu_compute.conv2d': weight and out tiles must be 4-D, got {list(w)} and {list(o)}")
        check_window_params(self.name, x, p, crop=True)
        if p["group"] <= 0 or w[0] % p["group"]:
            raise VerifyException(f"'npu_compute.conv2d': group {p['group']} must be positive and divide "
                                  f"the {w[0]} output channels")
        if x[1] != w[1] * p["group"]:
            raise VerifyException(f"'npu_compute.conv2d': input tile has {x[1]} channels, weight tile "
                                  f"expects {w[1]} x group {p['group']}")
        want = conv_out_shape(x, w, p["strides"], p["pads"], p["dilations"])
        if want != o:
            raise VerifyException(f"'npu_compute.conv2d': out tile must be {list(want) if want else '?'}, "
                                  f"got {list(o)}")

    def cycles(self, arch: Arch) -> int:
        w, o = _shape(self.weight), _shape(self.out)
        g = self.params["group"]
        return arch.cube_cycles(o[0] * o[2] * o[3], w[1] * w[2] * w[3], w[0] // g, batch=g,
                                dtype=value_type(self.input))

    def verify_types(self) -> None:
        _cube_types(self, self.input, self.weight, self.out)

    def execute(self, arrays: Sequence[np.ndarray]) -> None:
        x, w, out = arrays
        y = conv2d_ref(x, w, None, **self.params)
        if _flag(self, "accumulate"):
            out += y
        else:
            out[...] = y

    def execute_typed(self, arrays: Sequence[np.ndarray]) -> None:
        """Floats as `ComputeOp.execute_typed`; 8-bit integers exactly into int32 (the
        on-the-fly padding is the input's zero point, a real zero)."""
        x, w, out = arrays
        if out.dtype != np.int32:
            return super().execute_typed(arrays)
        y = integer_product(lambda x, w: conv2d_ref(x, w, None, **self.params), x, w, *zero_points(self))
        store(out, out + y if _flag(self, "accumulate") else y)


EXACT_ON_INTEGERS = ("copy", "max", "min")
"""The `npu_compute.eltwise` functions integer buffers may take (their result is an input value)."""


def bias_shape(bias: Sequence[int], acc: Sequence[int]) -> bool:
    """Whether `bias` broadcast to `acc` varies along one axis at most (a per-channel or
    per-column bias, or a scalar)."""
    b = (1,) * (len(acc) - len(bias)) + tuple(bias)
    return len(b) == len(acc) and sum(x != 1 for x in b) <= 1 and all(x in (1, a) for x, a in zip(b, acc))


@irdl_op_definition
class EltwiseOp(ComputeOp):
    """out = fn(ins...) with numpy broadcasting of the input tiles to `out`.
    `cube_output`: the per-channel bias add of an accumulator a cube op just wrote
    (`out` is `ins[0]`, `ins[1]` varies along one axis at most), which an arch with
    `bias_unit = cube` runs in the cube's output stage (`Arch.cube_output_cycles`)."""

    name = "npu_compute.eltwise"
    UNIT: ClassVar[str] = "vector"
    ins = var_operand_def(MemRefType)
    out = operand_def(MemRefType)
    fn = prop_def(EltwiseFnAttr)
    cube_output = opt_attr_def(UnitAttr)
    assembly_format = "$fn $ins `->` $out attr-dict `:` type($ins) `->` type($out)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, fn: EltwiseFn, ins: Sequence[SSAValue], out: SSAValue, cube_output: bool = False):
        super().__init__(operands=[list(ins), out], properties={"fn": EltwiseFnAttr(EltwiseFn(fn))},
                         attributes={"cube_output": UnitAttr()} if cube_output else {})

    def on_cube(self, arch: Arch) -> bool:
        """Whether the cube's output stage runs it on `arch`."""
        return self.cube_output is not None and arch.bias_unit == "cube"

    def unit(self, arch: Arch) -> str:
        return "cube" if self.on_cube(arch) else self.UNIT

    def verify_types(self) -> None:
        """One element type; integers only for the functions exact on them (`EXACT_ON_INTEGERS`),
        and i32 for `add` (an integer accumulator plus its bias)."""
        exact = self.fn.data in EXACT_ON_INTEGERS
        allowed = dtypes.ELEMENT_TYPES if exact else (*dtypes.FLOATS, "i32") if self.fn.data == "add" else dtypes.FLOATS
        dtypes.check_types(self, allowed)

    def verify_shapes(self) -> None:
        arity = ELEMENTWISE[self.fn.data][0]
        if len(self.ins) != arity:
            raise VerifyException(f"'npu_compute.eltwise': '{self.fn.data}' takes {arity} inputs, got {len(self.ins)}")
        o = _shape(self.out)
        if broadcast_shapes(o, *[_shape(v) for v in self.ins]) != o:
            raise VerifyException(f"'npu_compute.eltwise': inputs do not broadcast to out {list(o)}")
        if self.cube_output is not None and (self.fn.data != "add" or self.ins[0] is not self.out
                                             or not bias_shape(_shape(self.ins[1]), o)):
            raise VerifyException("'npu_compute.eltwise': cube_output is for the bias add of an accumulator in "
                                  "place (add %acc, %bias -> %acc, the bias varying along one axis at most)")

    def cycles(self, arch: Arch) -> int:
        """One vector pass over `out`, more for a special function the arch approximates;
        in the cube's output stage (`on_cube`) one M x N block a cycle."""
        if self.on_cube(arch):
            return arch.cube_output_cycles(prod(_shape(self.out)))
        t = widest_type((*self.ins, self.out))
        return arch.vector_cycles(prod(_shape(self.out)), 1 + arch.special_passes(ELTWISE_USES.get(self.fn.data, ()), t), t)

    def execute(self, arrays: Sequence[np.ndarray]) -> None:
        *ins, out = arrays
        out[...] = ELEMENTWISE[self.fn.data][1](*ins)

    def execute_typed(self, arrays: Sequence[np.ndarray]) -> None:
        """Floats as `ComputeOp.execute_typed`; integers in int64, stored by `store` (an
        i32 sum leaving int32 is an error, never a wrap)."""
        *ins, out = arrays
        if out.dtype.kind in "iu":
            store(out, ELEMENTWISE[self.fn.data][1](*(a.astype(np.int64) for a in ins)))
        else:
            super().execute_typed(arrays)


@irdl_op_definition
class PoolOp(ComputeOp):
    """out = pool(input) over the windows of an already padded input tile, or with
    `pads` (top, left, bottom, right; default none) read as -inf on the fly
    (negative: cropped). `dilations` defaults to [1, 1]; properties equal to their
    default are not printed."""

    name = "npu_compute.pool"
    UNIT: ClassVar[str] = "vector"
    READS_OUT: ClassVar[bool] = False
    input = operand_def(MemRefType)
    out = operand_def(MemRefType)
    kind = prop_def(PoolKindAttr)
    kernel = attr_def(DenseArrayBase)
    strides = attr_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase, default_value=int_array((1, 1)))
    pads = prop_def(DenseArrayBase, default_value=int_array((0, 0, 0, 0)))
    assembly_format = "$kind $input `->` $out attr-dict `:` type($input) `->` type($out)"

    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, kind: PoolKind, x: SSAValue, out: SSAValue, *, kernel: Sequence[int],
                 strides: Sequence[int], dilations: Sequence[int] = (1, 1),
                 pads: Sequence[int] = (0, 0, 0, 0)):
        props: dict[str, Attribute] = {"kind": PoolKindAttr(PoolKind(kind)), "dilations": int_array(dilations)}
        if any(pads):
            props["pads"] = int_array(pads)
        super().__init__(operands=[x, out], attributes={"kernel": int_array(kernel), "strides": int_array(strides)},
                         properties=props)

    @property
    def params(self) -> dict:
        return dict(kernel=ints(self.kernel, ()), strides=ints(self.strides, ()),
                    dilations=ints(self.dilations, (1, 1)), pads=ints(self.pads, (0, 0, 0, 0)))

    def verify_types(self) -> None:
        """One element type, any (a max is exact on integers)."""
        dtypes.check_types(self, dtypes.ELEMENT_TYPES)

    def verify_shapes(self) -> None:
        x, o, p = _shape(self.input), _shape(self.out), self.params
        check_window_params(self.name, x, p, "kernel", crop=True)
        if len(o) != 4:
            raise VerifyException(f"'npu_compute.pool': out tile must be 4-D, got {list(o)}")
        want = conv_out_shape(x, (x[1], 1, *p["kernel"]), p["strides"], p["pads"], p["dilations"])
        if want != o:
            raise VerifyException(f"'npu_compute.pool': out tile must be {list(want) if want else '?'}, got {list(o)}")

    def cycles(self, arch: Arch) -> int:
        kh, kw = self.params["kernel"]
        return arch.vector_cycles(prod(_shape(self.out)), kh * kw, widest_type((self.input, self.out)))

    def execute(self, arrays: Sequence[np.ndarray]) -> None:
        x, out = arrays
        out[...] = pool_ref(x, self.kind.data, **self.params)

    def execute_typed(self, arrays: Sequence[np.ndarray]) -> None:
        """Floats as `ComputeOp.execute_typed`; integers as float64 (exact; padding reads -inf)."""
        x, out = arrays
        if out.dtype.kind in "iu":
            store(out, pool_ref(x.astype(np.float64), self.kind.data, **self.params).astype(np.int64))
        else:
            super().execute_typed(arrays)


@irdl_op_definition
class FillOp(ComputeOp):
    """out = value (e.g. zeroing an accumulator)."""

    name = "npu_compute.fill"
    UNIT: ClassVar[str] = "vector"
    out = operand_def(MemRefType)
    value = attr_def(FloatAttr)
    assembly_format = "$out attr-dict `:` type($out)"

    def __init__(self, out: SSAValue, value: float):
        super().__init__(operands=[out], attributes={"value": FloatAttr(value, f32)})

    def verify_types(self) -> None:
        """Any element type; into an integer buffer, an integer of its range."""
        dtypes.check_types(self, dtypes.ELEMENT_TYPES)
        t = dtypes.element_type(self.out)
        v = self.value.value.data
        if not dtypes.is_float(t):
            lo, hi = dtypes.qrange(t)
            if not math.isfinite(v) or v != int(v) or not lo <= v <= hi:
                raise VerifyException(f"'npu_compute.fill': value {v:g} is not an integer in [{lo}, {hi}] ({t})")

    def cycles(self, arch: Arch) -> int:
        return arch.vector_cycles(prod(_shape(self.out)), dtype=value_type(self.out))

    def execute(self, arrays: Sequence[np.ndarray]) -> None:
        arrays[0][...] = self.value.value.data

    def execute_typed(self, arrays: Sequence[np.ndarray]) -> None:
        self.execute(arrays)  # (rounded to the type; an integer value fits, see verify_types)


@irdl_op_definition
class ApplyOp(ComputeOp):
    """out = the structured graph op `op` (with attributes `attrs`) computed on the
    input tiles: the vector unit runs that op's own semantics (`compute`) on a tile,
    so every structured `npu_graph` op has a tile kernel with one definition.
    `accumulate` merges the tile into `out` by the op's `combine` (a later step of a
    reduction loop: a sum, or an online-softmax merge for attention). `cube_output`: a
    requantize of the accumulator a cube op just wrote, which an arch with
    `requant_unit = cube` runs in the cube's output stage (`Arch.cube_output_cycles`)."""

    name = "npu_compute.apply"
    UNIT: ClassVar[str] = "vector"
    ins = var_operand_def(MemRefType)
    out = operand_def(MemRefType)
    op = attr_def(StringAttr)
    attrs = attr_def(DictionaryAttr)
    accumulate = opt_attr_def(UnitAttr)
    cube_output = opt_attr_def(UnitAttr)
    assembly_format = "$op $ins `->` $out attr-dict `:` type($ins) `->` type($out)"

    def __init__(self, op: str, attrs: dict[str, Attribute], ins: Sequence[SSAValue], out: SSAValue,
                 accumulate: bool = False, cube_output: bool = False):
        flags = {k: UnitAttr() for k, on in (("accumulate", accumulate), ("cube_output", cube_output)) if on}
        super().__init__(operands=[list(ins), out],
                         attributes={"op": StringAttr(op), "attrs": DictionaryAttr(dict(attrs)), **flags})

    def on_cube(self, arch: Arch) -> bool:
        """Whether the cube's output stage runs it on `arch`."""
        return self.cube_output is not None and arch.requant_unit == "cube"

    def unit(self, arch: Arch) -> str:
        return "cube" if self.on_cube(arch) else self.UNIT

    def graph_op(self) -> type:
        cls = GRAPH_OP_BY_NAME.get(self.op.data)
        if cls is None or not issubclass(cls, StructuredOp):
            raise VerifyException(f"'npu_compute.apply': '{self.op.data}' is not a structured npu_graph op")
        return cls

    def verify_types(self) -> None:
        """Any of the chip's element types, mixed as the graph op takes them (its own
        verifier checked the tensors this tile kernel computes)."""
        dtypes.check_types(self, dtypes.ELEMENT_TYPES, same=False)

    def verify_shapes(self) -> None:
        if self.cube_output is not None and self.op.data != "npu_graph.requantize":
            raise VerifyException(f"'npu_compute.apply': cube_output is for a requantize of a cube op's "
                                  f"accumulator, not '{self.op.data}'")
        least, most = operand_counts(self.graph_op())
        if not least <= len(self.ins) <= most:
            want = str(least) if least == most else f"{least} to {most}" if most < inf else f"at least {least}"
            raise VerifyException(f"'npu_compute.apply': '{self.op.data}' takes {want} inputs, got {len(self.ins)}")

    def cycles(self, arch: Arch) -> int:
        if self.on_cube(arch):
            return RequantizeOp.after_product_cycles(arch, math.prod(_shape(self.out)))
        cls = self.graph_op()
        return cls.tile_cycles_of(dict(self.attrs.data), arch, [_shape(v) for v in self.ins], _shape(self.out),
                                  cls.tile_type((*self.ins, self.out)))

    def execute(self, arrays: Sequence[np.ndarray]) -> None:
        *ins, out = arrays
        cls, attrs = self.graph_op(), dict(self.attrs.data)
        y = cls.compute(attrs, *ins)
        if y.shape != out.shape:
            raise ValueError(f"'npu_compute.apply' {self.op.data}: the tile computes shape {list(y.shape)} "
                             f"but the out buffer is {list(out.shape)}")
        out[...] = cls.combine(attrs, out, y) if _flag(self, "accumulate") else y

    def execute_typed(self, arrays: Sequence[np.ndarray]) -> None:
        """The op's `compute` on `dtypes.compute_view` of the tiles (integers as int64),
        stored into `out`'s type by `store` (rounded to a float type; never wrapped into an integer one: a
        float result goes into an integer buffer only from a saturating `QuantOp`,
        quantize or requantize)."""
        *ins, out = arrays
        cls, attrs = self.graph_op(), dict(self.attrs.data)
        if issubclass(cls, QuantOp) and out.dtype.kind in "iu":  # (the saturation range defaults to out's type)
            info = np.iinfo(out.dtype)
            attrs = {"min": IntegerAttr(int(info.min), 64), "max": IntegerAttr(int(info.max), 64), **attrs}
        wide = [a.astype(np.int64) if a.dtype.kind in "iu" else dtypes.compute_view(a) for a in ins]  # (no int32 wrap)
        y = np.asarray(cls.compute(attrs, *wide))
        if y.shape != out.shape:
            raise ValueError(f"'npu_compute.apply' {self.op.data}: the tile computes shape {list(y.shape)} "
                             f"but the out buffer is {list(out.shape)}")
        if _flag(self, "accumulate"):
            acc = dtypes.compute_view(out)
            if out.dtype.kind in "iu":  # (an integer merge in int64: `store` sees a sum leaving the type)
                acc, y = acc.astype(np.int64), y.astype(np.int64) if y.dtype.kind in "iu" else y
            y = cls.combine(attrs, acc, y)
        store(out, y, saturates=issubclass(cls, QuantOp))


@irdl_op_definition
class FenceOp(IRDLOperation):
    """Intra-core synchronisation between two units: the ops issued to `dst` after the
    fence start only once every op issued to `src` before it that touches a byte of
    `buffers` has finished (plus the arch's `flag_latency` when that makes `dst` wait).
    A set/wait flag pair keyed by buffers, as a compiler pairs a double buffer's ping
    and pong with flag ids: which bytes is decided when it runs, so one fence in a tile
    loop names whichever buffer the step uses. `dst = dma`: the core issues its next
    `npu_dma.copy` only then (it waits at the fence, as at an `npu_dma.wait`).
    `npu-unit-sync` inserts them; on an arch with `units = serial` they cost nothing."""

    name = "npu_compute.fence"
    src = prop_def(UnitKindAttr)
    dst = prop_def(UnitKindAttr)
    buffers = var_operand_def(MemRefType)
    assembly_format = "$src `->` $dst `on` $buffers attr-dict `:` type($buffers)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, src: Unit | str, dst: Unit | str, buffers: Sequence[SSAValue]):
        super().__init__(operands=[list(buffers)],
                         properties={"src": UnitKindAttr(Unit(src)), "dst": UnitKindAttr(Unit(dst))})

    @classmethod
    def between(cls, src: str, dst: str, buffers: Sequence[SSAValue]) -> FenceOp:
        """The same op built without IRDL's argument processing (a pass inserts thousands)."""
        return cls.create(operands=list(buffers), properties={"src": _UNIT_ATTRS[src], "dst": _UNIT_ATTRS[dst]})

    def verify_(self) -> None:
        src, dst = self.src.data, self.dst.data
        if src == Unit.DMA:
            raise VerifyException("'npu_compute.fence': src must be cube or vector (a DMA is awaited with "
                                  "npu_dma.wait), got dma")
        if src == dst:
            raise VerifyException(f"'npu_compute.fence': src and dst are both {src}: a unit runs its own "
                                  "queue in order")
        if not self.buffers:
            raise VerifyException("'npu_compute.fence': names no buffer")
        for v in self.buffers:
            if not isinstance(v.type, MemRefType) or memory_space(v.type) != "sram":
                raise VerifyException(f"'npu_compute.fence': buffers must be \"sram\" memrefs, got {v.type}")


_UNIT_ATTRS = {u.value: UnitKindAttr(u) for u in Unit}

COMPUTE_OPS = [MatmulOp, Conv2dOp, EltwiseOp, PoolOp, FillOp, ApplyOp]


@lru_cache(maxsize=4096)
def tensor_of(t: MemRefType) -> TensorType:
    """The tensor type of buffer type `t`'s shape and elements, built once per buffer
    type (a type is immutable; building one verifies its parameters)."""
    return TensorType(t.element_type, t.get_shape())


@irdl_op_definition
class ToTensorOp(IRDLOperation):
    """Bufferization bridge (only inside `npu-bufferize`): the tensor an SRAM buffer
    holds, so a graph op can stand in a task body until a pattern lowers it."""

    name = "npu_compute.to_tensor"
    buffer = operand_def(MemRefType)
    tensor = result_def(TensorType)
    assembly_format = "$buffer attr-dict `:` type($buffer) `->` type($tensor)"

    def __init__(self, buffer: SSAValue):
        assert isinstance(buffer.type, MemRefType)
        super().__init__(operands=[buffer], result_types=[tensor_of(buffer.type)])

    def verify_(self) -> None:
        check_bridge(self, self.buffer, self.tensor)


@irdl_op_definition
class MaterializeOp(IRDLOperation):
    """Bufferization bridge (only inside `npu-bufferize`): `value`, computed by a graph
    op on `npu_compute.to_tensor` operands, is written into `dest` (added to it with
    `accumulate`). A compute pattern replaces the pair by the `npu_compute` op(s)
    that do it; one left over means the graph op has no lowering."""

    name = "npu_compute.materialize"
    value = operand_def(TensorType)
    dest = operand_def(MemRefType)
    accumulate = opt_attr_def(UnitAttr)
    assembly_format = "$value `into` $dest attr-dict `:` type($value) `,` type($dest)"

    def __init__(self, value: SSAValue, dest: SSAValue, accumulate: bool = False):
        super().__init__(operands=[value, dest], attributes={"accumulate": UnitAttr()} if accumulate else {})

    def verify_(self) -> None:
        check_bridge(self, self.dest, self.value)


def check_bridge(op: IRDLOperation, buffer: SSAValue, tensor: SSAValue) -> None:
    """A bufferization bridge pairs a "dram" or "sram" buffer with a tensor of its shape
    and element type."""
    b, t = buffer.type, tensor.type
    assert isinstance(b, MemRefType) and isinstance(t, TensorType)
    if memory_space(b) not in SPACES:
        raise VerifyException(f"'{op.name}': the buffer must be in memory space \"dram\" or \"sram\", got {b}")
    dtypes.check_types(op, dtypes.ELEMENT_TYPES)
    if tuple(b.get_shape()) != tuple(t.get_shape()):
        raise VerifyException(f"'{op.name}': {t} does not have the shape of the buffer {b}")


NpuCompute = Dialect("npu_compute", [*COMPUTE_OPS, FenceOp, ToTensorOp, MaterializeOp],
                     [EltwiseFnAttr, PoolKindAttr, UnitKindAttr])

"""`npu_graph` elementwise ops: the `ElementwiseOp` bases (unary, binary, ternary, each
computing one `ELEMENTWISE` function with numpy broadcasting) and every op built on them
(`ReluOp`, `AddOp`, ..., `ClipOp`, `WhereOp`, the `SIMPLE_UNARY` family).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import (
    TensorType,
)
from xdsl.ir import SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from npu_dialects import special
from npu_dialects.arch import Arch, widest_type
from npu_dialects.dtypes import FLOATS, check_types
from npu_dialects.graph.base import FORMAT, GraphOp, broadcast_shapes, shape_of
from npu_dialects.graph.refs import ELEMENTWISE, in_f32


class ElementwiseOp(GraphOp):
    """Base of elementwise ops; `FN` names the entry of `ELEMENTWISE`."""

    FN: ClassVar[str]
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    def verify_(self) -> None:
        arity = ELEMENTWISE[self.FN][0]
        if len(self.operands) != arity:
            raise VerifyException(f"'{self.name}' takes {arity} operands")
        self._expect_result_shape(broadcast_shapes(*[shape_of(o) for o in self.operands]),
                                  "broadcasting the operands")

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        """One vector pass over the result (in the widest type the op reads or writes),
        more for a special function the arch approximates (`special.ELTWISE_USES`)."""
        t = widest_type((*self.operands, *self.results))
        return arch.vector_cycles(self.out_elements(out_shape), 1 + arch.special_passes(special.ELTWISE_USES.get(self.FN, ()), t), t)

    def evaluate(self, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return (in_f32(ELEMENTWISE[self.FN][1], inputs),)

    @classmethod
    def outside_value(cls, index: int) -> float:
        """What operand `index` holds outside its tensor in a tile or strip that reaches past
        it (a partial tile, a strip's rows outside): values the store clips, but finite
        after the op, so a quantize after it can store them. 0 by default."""
        return 0.0


class UnaryOp(ElementwiseOp):
    input = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, x: SSAValue, result_type: TensorType):
        super().__init__(operands=[x], result_types=[result_type])


class BinaryOp(ElementwiseOp):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, a: SSAValue, b: SSAValue, result_type: TensorType):
        super().__init__(operands=[a, b], result_types=[result_type])


class TernaryOp(ElementwiseOp):
    """Three operands broadcast together (the subclass says what each one means)."""

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    c = operand_def(TensorType)
    result = result_def(TensorType)

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue, result_type: TensorType):
        super().__init__(operands=[a, b, c], result_types=[result_type])


@irdl_op_definition
class ReluOp(UnaryOp):
    """max(x, 0)"""

    name = "npu_graph.relu"
    FN: ClassVar[str] = "relu"


@irdl_op_definition
class AddOp(BinaryOp):
    """a + b with numpy broadcasting; in one float type, or in i32 (an integer
    accumulator plus its bias, as npu-fuse-qdq adds a quantized Gemm's bias)."""

    name = "npu_graph.add"
    FN: ClassVar[str] = "add"

    def check_element_types(self) -> None:
        check_types(self, (*FLOATS, "i32"))


@irdl_op_definition
class MulOp(BinaryOp):
    """a * b with numpy broadcasting"""

    name = "npu_graph.mul"
    FN: ClassVar[str] = "mul"


@irdl_op_definition
class SubOp(BinaryOp):
    """a - b with numpy broadcasting"""

    name = "npu_graph.sub"
    FN: ClassVar[str] = "sub"


@irdl_op_definition
class DivOp(BinaryOp):
    """a / b with numpy broadcasting"""

    name = "npu_graph.div"
    FN: ClassVar[str] = "div"

    @classmethod
    def outside_value(cls, index: int) -> float:
        """1 for the divisor: 0 / 0 is NaN."""
        return 1.0 if index == 1 else 0.0


@irdl_op_definition
class SigmoidOp(UnaryOp):
    """1 / (1 + exp(-x))"""

    name = "npu_graph.sigmoid"
    FN: ClassVar[str] = "sigmoid"


@irdl_op_definition
class TanhOp(UnaryOp):
    """tanh(x)"""

    name = "npu_graph.tanh"
    FN: ClassVar[str] = "tanh"


@irdl_op_definition
class ErfOp(UnaryOp):
    """the error function erf(x)"""

    name = "npu_graph.erf"
    FN: ClassVar[str] = "erf"


@irdl_op_definition
class GeluOp(UnaryOp):
    """exact GELU: x / 2 * (1 + erf(x / sqrt(2)))"""

    name = "npu_graph.gelu"
    FN: ClassVar[str] = "gelu"


@irdl_op_definition
class GeluTanhOp(UnaryOp):
    """GELU, tanh approximation: x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))"""

    name = "npu_graph.gelu_tanh"
    FN: ClassVar[str] = "gelu_tanh"


@irdl_op_definition
class SqrtOp(UnaryOp):
    """sqrt(x) (NaN below 0)"""

    name = "npu_graph.sqrt"
    FN: ClassVar[str] = "sqrt"


@irdl_op_definition
class ExpOp(UnaryOp):
    """exp(x)"""

    name = "npu_graph.exp"
    FN: ClassVar[str] = "exp"


@irdl_op_definition
class LogOp(UnaryOp):
    """natural logarithm (-inf at 0, NaN below)"""

    name = "npu_graph.log"
    FN: ClassVar[str] = "log"


@irdl_op_definition
class NegOp(UnaryOp):
    """-x"""

    name = "npu_graph.neg"
    FN: ClassVar[str] = "neg"


@irdl_op_definition
class AbsOp(UnaryOp):
    """|x|"""

    name = "npu_graph.abs"
    FN: ClassVar[str] = "abs"


@irdl_op_definition
class ReciprocalOp(UnaryOp):
    """1 / x"""

    name = "npu_graph.reciprocal"
    FN: ClassVar[str] = "reciprocal"


@irdl_op_definition
class TruncOp(UnaryOp):
    """x rounded toward zero (ONNX Cast to an integer type; the integer stays a float32 value)"""

    name = "npu_graph.trunc"
    FN: ClassVar[str] = "trunc"


def _unary_op(fn: str, doc: str) -> type[UnaryOp]:
    """An elementwise `npu_graph.<fn>` op computing `ELEMENTWISE[fn]` (defined the same
    way as the classes above, from a table: they differ only in name and function)."""
    cls = type("".join(p.title() for p in fn.split("_")) + "Op", (UnaryOp,),
               {"__doc__": doc, "__module__": __name__, "__annotations__": {"FN": ClassVar[str]},
                "name": f"npu_graph.{fn}", "FN": fn})
    return irdl_op_definition(cls)


SIMPLE_UNARY: dict[str, type[UnaryOp]] = {fn: _unary_op(fn, doc) for fn, doc in (
    ("floor", "x rounded down"), ("ceil", "x rounded up"), ("round", "x rounded to the nearest, halves to even"),
    ("sign", "-1, 0 or 1 by the sign of x"), ("sin", "sin(x)"), ("cos", "cos(x)"), ("tan", "tan(x)"),
    ("asin", "arcsin(x)"), ("acos", "arccos(x)"), ("atan", "arctan(x)"), ("sinh", "sinh(x)"), ("cosh", "cosh(x)"),
    ("asinh", "arsinh(x)"), ("acosh", "arcosh(x)"), ("atanh", "artanh(x)"),
    ("softplus", "log(1 + exp(x)), computed without overflow"),
    ("isnan", "1.0 where x is NaN, else 0.0"), ("isinf", "1.0 where x is infinite, else 0.0"))}
"""Unary elementwise ops that differ only in their function (ONNX Floor, Sin, IsNaN ...)."""


@irdl_op_definition
class FmodOp(BinaryOp):
    """the remainder of a / b with the sign of a (C's fmod; ONNX Mod with fmod=1)"""

    name = "npu_graph.fmod"
    FN: ClassVar[str] = "fmod"


@irdl_op_definition
class ModOp(BinaryOp):
    """a mod b with the sign of b (Python's %, numpy.mod; ONNX Mod with fmod=0)"""

    name = "npu_graph.mod"
    FN: ClassVar[str] = "mod"


@irdl_op_definition
class PowOp(BinaryOp):
    """a ** b with numpy broadcasting"""

    name = "npu_graph.pow"
    FN: ClassVar[str] = "pow"


@irdl_op_definition
class PReluOp(BinaryOp):
    """x where x >= 0, else x * slope (slope broadcast; LeakyRelu has a scalar slope)"""

    name = "npu_graph.prelu"
    FN: ClassVar[str] = "prelu"


@irdl_op_definition
class MaxOp(BinaryOp):
    """elementwise maximum with numpy broadcasting"""

    name = "npu_graph.max"
    FN: ClassVar[str] = "max"


@irdl_op_definition
class MinOp(BinaryOp):
    """elementwise minimum with numpy broadcasting"""

    name = "npu_graph.min"
    FN: ClassVar[str] = "min"


@irdl_op_definition
class EqualOp(BinaryOp):
    """1.0 where a == b, else 0.0 (a boolean carried as f32)"""

    name = "npu_graph.equal"
    FN: ClassVar[str] = "equal"


@irdl_op_definition
class LessOp(BinaryOp):
    """1.0 where a < b, else 0.0 (a boolean carried as f32)"""

    name = "npu_graph.less"
    FN: ClassVar[str] = "less"


@irdl_op_definition
class GreaterOp(BinaryOp):
    """1.0 where a > b, else 0.0 (a boolean carried as f32)"""

    name = "npu_graph.greater"
    FN: ClassVar[str] = "greater"


@irdl_op_definition
class ClipOp(TernaryOp):
    """min(max(x, lo), hi) for operands (x, lo, hi), broadcast (ONNX Clip, ReLU6)"""

    name = "npu_graph.clip"
    FN: ClassVar[str] = "clip"


@irdl_op_definition
class WhereOp(TernaryOp):
    """a where cond != 0, else b, for operands (cond, a, b), broadcast (ONNX Where)"""

    name = "npu_graph.where"
    FN: ClassVar[str] = "where"

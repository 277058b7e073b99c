"""An example npu-compiler plugin (examples/plugin): the `example` dialect with one op,
`example.swish` (x * sigmoid(beta * x), the ONNX custom op `com.example.Swish`), its
importer, the pass that lowers it to npu_graph ops, a native PDL constraint and a chip.
"""

from __future__ import annotations

from pathlib import Path

from xdsl.dialects.builtin import Float32Type, FloatAttr, TensorType
from xdsl.ir import Dialect, SSAValue
from xdsl.irdl import IRDLOperation, ParsePropInAttrDict, irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class SwishOp(IRDLOperation):
    """`y = x * sigmoid(beta * x)` on a tensor (graph level, value semantics)."""

    name = "example.swish"
    input = operand_def(TensorType)
    beta = prop_def(FloatAttr)
    output = result_def(TensorType)
    assembly_format = "$input attr-dict `:` type($input) `->` type($output)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, x: SSAValue, beta: float):
        super().__init__(operands=[x], result_types=[x.type], properties={"beta": FloatAttr(beta, Float32Type())})

    def verify_(self) -> None:
        if self.input.type != self.output.type:
            raise VerifyException(f"'example.swish': result type {self.output.type} differs from the input's "
                                  f"{self.input.type}")


Example = Dialect("example", [SwishOp], [])


def swish_rule() -> Path:
    """The PDL file of the fusion rule `example-swish` (entry point group npu_compiler.fusion_rules)."""
    return Path(__file__).parent / "swish_rule.pdl.mlir"


def chips_dir() -> Path:
    """The chip presets this plugin ships (`--arch example-edge`)."""
    return Path(__file__).parent

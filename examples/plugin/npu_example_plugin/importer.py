"""The ONNX converter of `com.example.Swish` (attribute `beta`, default 1.0)."""

from __future__ import annotations

from collections.abc import Sequence


def register() -> None:
    """Called once by the compiler (entry point group npu_compiler.importers)."""
    from lowering.importer.onnx_import import NodeContext, Output, converter
    from npu_example_plugin import SwishOp

    @converter("com.example.Swish", attrs=("beta",))
    def convert_swish(ctx: NodeContext) -> Sequence[Output]:
        """x * sigmoid(beta * x) as one `example.swish` (lowered by example-lower-swish)."""
        return [ctx.build(SwishOp(ctx.value(0), float(ctx.attr("beta", 1.0)))).results[0]]

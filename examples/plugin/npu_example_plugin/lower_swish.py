"""`example-lower-swish`: rewrite `example.swish` into npu_graph ops (mul, sigmoid, mul),
which the default pipeline compiles. Run it first:
`npu-run model.onnx -p 'builtin.module(example-lower-swish,npu-default)'`.
Option `min-beta` (default 0.0): only swishes whose beta is at least this are lowered
(a knob to show plugin pass options in `npu-opt --list-passes`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

from npu_example_plugin import SwishOp


@dataclass
class _Lower(RewritePattern):
    module: ModuleOp
    min_beta: float

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SwishOp, rewriter: PatternRewriter) -> None:
        from lowering.graph.constants import make_constant
        from npu_dialects.graph import MulOp, SigmoidOp
        beta = op.beta.value.data
        if beta < self.min_beta:
            return
        x, ty = op.input, op.output.type
        rank = len(ty.get_shape())  # type: ignore[attr-defined]
        c = make_constant(self.module, np.full((1,) * rank, beta, np.float32), "swish_beta", op.location)
        scaled = MulOp(x, c.results[0], ty)
        sig = SigmoidOp(scaled.results[0], ty)
        y = MulOp(x, sig.results[0], ty)
        for new in (scaled, sig, y):
            new.location = op.location
        rewriter.replace_op(op, [c, scaled, sig, y])


@dataclass(frozen=True)
class LowerSwish(ModulePass):
    """Lower `example.swish` to npu_graph mul/sigmoid/mul (module docstring)."""

    name = "example-lower-swish"
    min_beta: float = 0.0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_Lower(op, self.min_beta)).rewrite_module(op)


def register_patterns() -> None:
    """A native PDL constraint: `example.beta_is_one`(swish op)."""
    from lowering.patterns.native import register_constraint
    register_constraint("example.beta_is_one", lambda op: isinstance(op, SwishOp) and op.beta.value.data == 1.0)

"""`npu-constant-fold`: evaluate graph ops whose operands are all constants.

An `npu_graph` op whose every operand is defined by an `npu_graph.constant` is
computed at compile time with its own reference semantics and replaced by
constants, one per result (inline, or a new weight). Chains fold completely; an
`npu_graph.fused` kernel whose inputs are all constants folds as a whole.

Declines (leaves the op alone) when: the op has no operands (a source such as
`npu_graph.constant` itself), an operand is not a constant, a weight's data is not
in the store, the op has no reference semantics (`NotImplementedError`), it sits
inside an `npu_graph.fused` kernel, or its semantics do not give the result types.

Assumes graph-level IR with value semantics. Weight values come from
`weights_of(module)` (the store the pipeline attaches, or the side file named by
`npu.weights`); a side file that cannot be read is a diagnosed error. No options.

Algorithm
---------
The reference semantics are `op.evaluate`, the numpy definition next to the op in
`npu_dialects.graph`, in float32 like the device (other element types in their own:
a folded quantize gives an i8 constant). The constants are located at the
folded op's ONNX node: an inline `value` when the result has at most 16 elements,
else a new weight in the module's weight store (`npu_dialects.weights.add_weight`,
key derived from the node name plus `.folded`) referenced by `{weight = key}`.
Chains fold completely because a folded op's users are revisited; the constants
left without users are removed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)

from lowering.errors import CompileError
from lowering.graph.constants import ConstantReader, make_constant, weight_hint
from lowering.instrument import PatternWalker
from npu_dialects.dtypes import element_type, np_dtype
from npu_dialects.graph import ConstantOp, FusedOp, GraphOp, shape_of

PASS_NAME = "npu-constant-fold"


def fold(op: GraphOp, constants: ConstantReader) -> list[np.ndarray] | None:
    """The results of `op` computed from its constant operands, or None when it cannot
    be folded (see the module docstring)."""
    if isinstance(op, ConstantOp) or not op.operands or isinstance(op.parent_op(), FusedOp):
        return None
    if any(ConstantReader.constant_op(o) is None for o in op.operands):
        return None
    arrays = [a for a in (constants.array(o) for o in op.operands) if a is not None]
    if len(arrays) != len(op.operands):
        return None
    try:
        with np.errstate(all="ignore"):  # 1/0 -> inf, as on the device
            outs = op.evaluate(*arrays)
    except NotImplementedError:
        return None
    except (ValueError, TypeError, IndexError, ArithmeticError) as e:
        raise CompileError(PASS_NAME, f"evaluating the op on its constant operands failed: {e}", op) from e
    if len(outs) != len(op.results):
        return None
    results = [np.asarray(o, dtype=np_dtype(res)) for o, res in zip(outs, op.results)]  # (each in its type)
    if any(r.shape != shape_of(res) for r, res in zip(results, op.results)):
        return None
    return results


class FoldConstantOperands(RewritePattern):
    """op(constant, ..., constant) -> constant(s) holding op's results."""

    def __init__(self, module: ModuleOp, constants: ConstantReader):
        self.module = module
        self.constants = constants

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, GraphOp):
            return
        results = fold(op, self.constants)
        if results is None:
            return
        hint = weight_hint(op.location, "folded")
        new = [make_constant(self.module, r, hint, op.location, element_type=element_type(res))
               for r, res in zip(results, op.results)]
        rewriter.replace(op, new, [c.result for c in new])


@dataclass(frozen=True)
class ConstantFold(ModulePass):
    """Fold graph ops whose operands are all constants into constants (inline or new weights).

    See the module docstring: what folds, what declines, where the values go.
    No options."""

    name = PASS_NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        constants = ConstantReader(op, self.name)
        PatternWalker(GreedyRewritePatternApplier([FoldConstantOperands(op, constants)])).rewrite_module(op)

"""`npu-example-fold-idempotent`: THE TEMPLATE PASS - copy this file to start a new one.

What it does: `f(f(x)) -> f(x)` for an elementwise function `f` that is idempotent
(`relu(relu(x))`, `abs(abs(x))`, `floor(floor(x))`, ...), which exporters leave behind
when two framework layers each end in the same activation. `npu-canonicalize` does not
do it. The pass is registered (`lowering/__init__.py`) but not in `npu-default`.

The parts a new pass copies (README, "Writing a pass", walks through them):
- one rewrite pattern, `FoldIdempotent`, that returns when it does not match;
- the pass, a frozen dataclass whose docstring says what it does, what it assumes and
  its options; each option is a typed field (`ops`, on the command line
  `npu-example-fold-idempotent{ops=relu,abs}`) that `apply` checks first;
- its lit suite, `tests/filecheck/npu-example-fold-idempotent/`: cases where it
  fires, cases where it must not, and the errors of a bad option.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from lowering.errors import CompileError
from lowering.instrument import PatternWalker
from npu_dialects.graph import UnaryOp

IDEMPOTENT: tuple[str, ...] = ("relu", "abs", "floor", "ceil", "round", "trunc", "sign")
"""The elementwise functions `f` (`UnaryOp.FN`) with f(f(x)) = f(x) for every float x, NaN included."""


class FoldIdempotent(RewritePattern):
    """f(f(x)) -> f(x) for an idempotent elementwise `f` named in `functions`."""

    def __init__(self, functions: frozenset[str]):
        self.functions = functions

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnaryOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if op.FN not in self.functions or not isinstance(inner, UnaryOp) or inner.FN != op.FN:
            return  # not f(f(x)) for one of our f: decline, never assert
        if inner.result.type != op.result.type:
            return
        rewriter.replace(op, [], [inner.result])  # op's users now read the inner f(x)


@dataclass(frozen=True)
class ExampleFoldIdempotent(ModulePass):
    """Template pass: fold f(f(x)) into f(x) for idempotent elementwise functions (relu, abs, ...).

    Assumes graph-level IR (`npu_graph`, value semantics), before `npu-fuse`; the
    inner f(x) keeps its location, the outer op goes. Options: `ops=relu,abs,...`
    the functions folded (default: every idempotent one, `IDEMPOTENT`); a name
    not in `IDEMPOTENT` is an error."""

    name = "npu-example-fold-idempotent"
    ops: tuple[str, ...] = IDEMPOTENT

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        bad = [f for f in self.ops if f not in IDEMPOTENT]
        if bad:
            raise CompileError(self.name, f"ops: {', '.join(repr(f) for f in bad)} "
                                          f"{'is' if len(bad) == 1 else 'are'} not idempotent "
                                          f"(the idempotent functions: {', '.join(IDEMPOTENT)})")
        PatternWalker(FoldIdempotent(frozenset(self.ops))).rewrite_module(op)

"""`npu-apply-patterns{file=RULES.mlir}`: apply the rewrite patterns a PDL file declares
(MLIR's `pdl` dialect, run by xDSL's PDL interpreter), greedily, to any level of IR:
graph ops, tiles, DMA and compute ops, tasks. No Python is needed for a pattern: it
matches ops by name, operands, attributes and types, and builds, replaces or erases
ops; `pdl.apply_native_constraint` and `pdl.apply_native_rewrite` call the functions of
`lowering/patterns/native.py` (`npu.has_one_use`, `npu.same_type`, `npu.fuse`, ...), so a
fusion rule is a pattern too. Examples: `examples/patterns/*.pdl.mlir`.

Assumes nothing about the input; the patterns must keep it valid (the IR is verified
after the pass, as after any). Options: `file` (required), the PDL module's path.
Diagnostics: a file that does not exist or parse, a pattern naming an op no dialect
defines, or a native function that is not registered is an error at `FILE:LINE:COL`;
each rewrite made is an `applied` remark naming the pattern and the ONNX nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import pdl
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, impl, register_impls
from xdsl.interpreters.pdl import PDLRewriteFunctions, PDLRewritePattern
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter
from xdsl.utils.exceptions import ParseError

from lowering.errors import CompileError
from lowering.instrument import PatternWalker
from lowering.patterns import native
from lowering.patterns.native import CONSTRAINTS, REWRITES
from lowering.remarks import remark
from npu_dialects.locs import node_names

NAME = "npu-apply-patterns"


@register_impls
@dataclass
class _Functions(PDLRewriteFunctions):
    """xDSL's PDL rewrite functions plus `pdl.apply_native_rewrite` (native.REWRITES)."""

    root: Operation | None = None  # the op the pattern matched (ops it builds take its location)

    @impl(pdl.OperationOp)
    def run_operation(self, interpreter: Interpreter, op: pdl.OperationOp, args: tuple[Any, ...]) -> tuple[Any, ...]:
        (built,) = super().run_operation(interpreter, op, args).values  # (the base impl, wrapped by @impl)
        if self.root is not None:
            built.location = self.root.location
        return (built,)

    @impl(pdl.ApplyNativeRewriteOp)
    def run_native_rewrite(self, interpreter: Interpreter, op: pdl.ApplyNativeRewriteOp,
                           args: tuple[Any, ...]) -> tuple[Any, ...]:
        name = op.constraint_name.data
        try:
            return tuple(REWRITES[name](self.rewriter, *interpreter.get_values(op.args)))
        except ValueError as e:  # the native rewrite refuses what the pattern matched
            raise CompileError(NAME, f"native rewrite '{name}': {e}") from None


class _Pattern(PDLRewritePattern):
    """One `pdl.rewrite`, its pattern's name in the remarks."""

    def __init__(self, rewrite: pdl.RewriteOp, ctx: Context, label: str):
        super().__init__(rewrite, ctx, None, dict(CONSTRAINTS))
        self.own = _Functions(ctx)
        self.functions = self.own
        self.interpreter = Interpreter(self.interpreter.module)
        self.interpreter.register_implementations(self.own)
        self.label = label

    def match_and_rewrite(self, xdsl_op: Operation, rewriter: PatternRewriter) -> None:
        names = node_names(xdsl_op)
        before = rewriter.has_done_action
        self.own.root = xdsl_op
        super().match_and_rewrite(xdsl_op, rewriter)
        if rewriter.has_done_action and not before:
            remark(NAME, "applied", names, f"pattern '{self.label}' rewrote '{xdsl_op.name}'")


def _at(text: str, needle: str, path: str) -> str:
    """`FILE:LINE:COL` of the first `needle` in `text` (the file, when absent)."""
    i = text.find(needle)
    if i < 0:
        return path
    line = text.count("\n", 0, i) + 1
    col = i - (text.rfind("\n", 0, i) + 1) + 1
    return f"{path}:{line}:{col}"


def load_rules(ctx: Context, path: str) -> list[tuple[pdl.RewriteOp, str]]:
    """The `pdl.rewrite`s of the PDL module at `path` with their pattern names, checked:
    every op name a `pdl.operation` matches or builds exists, every native function is
    registered (plugins' native functions are registered first, once). Raises CompileError
    with the position in the file."""
    from npu_dialects.plugins import called
    called("npu_compiler.patterns")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise CompileError(NAME, f"cannot read the patterns file '{path}': {getattr(e, 'strerror', None) or e}") \
            from None
    pctx = ctx.clone()
    if pctx.get_optional_dialect("pdl") is None:
        pctx.load_dialect(pdl.PDL)
    try:
        module = Parser(pctx, text, path).parse_module()
    except ParseError as e:
        loc = e.span.get_location()
        raise CompileError(NAME, f"{path}:{loc.line}:{loc.col}: {e.msg.strip()}") from None
    rules: list[tuple[pdl.RewriteOp, str]] = []
    for op in module.walk():
        if isinstance(op, pdl.OperationOp) and op.opName is not None:
            name = op.opName.data
            if pctx.get_optional_op(name) is None:
                raise CompileError(NAME, f"{_at(text, f'{chr(34)}{name}{chr(34)}', path)}: pattern names op '{name}', "
                                         "which no loaded dialect defines")
        for kind, table, attr in (("constraint", CONSTRAINTS, pdl.ApplyNativeConstraintOp),
                                  ("rewrite", REWRITES, pdl.ApplyNativeRewriteOp)):
            if isinstance(op, attr) and op.constraint_name.data not in table:
                name = op.constraint_name.data
                raise CompileError(NAME, f"{_at(text, f'{chr(34)}{name}{chr(34)}', path)}: unknown native {kind} "
                                         f"'{name}' (registered: {', '.join(sorted(table))})")
        if isinstance(op, pdl.RewriteOp):
            parent = op.parent_op()
            label = parent.sym_name.data if isinstance(parent, pdl.PatternOp) and parent.sym_name else "pattern"
            rules.append((op, label))
    if not rules:
        raise CompileError(NAME, f"{path}: no pdl.pattern with a pdl.rewrite in it")
    return rules


def apply_file(ctx: Context, module: ModuleOp, path: str, rule: str = "pdl") -> None:
    """Apply the patterns of the PDL file `path` to `module` until none matches; kernels
    `npu.fuse` forms there are of fusion rule `rule` (npu-fuse runs a plugin's rules so)."""
    patterns = [_Pattern(rw, ctx, label) for rw, label in load_rules(ctx, path)]
    native.FUSION_RULE = rule
    try:
        PatternWalker(GreedyRewritePatternApplier(list(patterns))).rewrite_module(module)
    finally:
        native.FUSION_RULE = "pdl"


@dataclass(frozen=True)
class ApplyPatterns(ModulePass):
    """Apply the PDL patterns of `file` greedily until none matches (module docstring)."""

    name = NAME
    file: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.file:
            raise CompileError(NAME, "needs a patterns file: npu-apply-patterns{file=RULES.mlir}")
        apply_file(ctx, op, self.file)

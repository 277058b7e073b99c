"""The Python functions PDL patterns may call: native constraints
(`pdl.apply_native_constraint "name"(...)` in a pattern's match) and native rewrites
(`pdl.apply_native_rewrite "name"(...)` in its rewrite). `npu-apply-patterns` offers
every entry of `CONSTRAINTS` and `REWRITES`; a plugin adds its own by registering into
them (`register_constraint`, `register_rewrite`).

Constraints take the matched values (operations, SSA values, attributes, types) and
return a bool. Rewrites take the same and the pattern rewriter, and return the values
their `pdl.apply_native_rewrite` results stand for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from lowering.graph.fused_kernel import fuse_chain

Constraint = Callable[..., bool]
Rewrite = Callable[..., tuple[Any, ...]]


def _has_one_use(v: Any) -> bool:
    """A value (or an op's single result) read by exactly one op."""
    if isinstance(v, Operation):
        return len(v.results) == 1 and v.results[0].has_one_use()
    return isinstance(v, SSAValue) and v.has_one_use()


def _same_type(a: Any, b: Any) -> bool:
    """Two values of the same type (or two type attributes that are equal)."""
    ta = a.type if isinstance(a, SSAValue) else a
    tb = b.type if isinstance(b, SSAValue) else b
    return isinstance(ta, Attribute) and ta == tb


def _same_block(a: Any, b: Any) -> bool:
    """Two ops in the same block (a fusion may not cross a region)."""
    return isinstance(a, Operation) and isinstance(b, Operation) and a.parent_block() is b.parent_block()


def _not_fused(op: Any) -> bool:
    """An op not already inside an `npu_graph.fused` kernel."""
    from npu_dialects.graph import FusedOp
    return isinstance(op, Operation) and not isinstance(op.parent_op(), FusedOp)


def _plain_copy(op: Any) -> bool:
    """An `npu_dma.copy` without `pad_value` or `clip` (it writes only what it reads)."""
    from npu_dialects.dma import CopyOp
    return isinstance(op, CopyOp) and op.pad_value is None and op.clip is None


CONSTRAINTS: dict[str, Constraint] = {
    "npu.has_one_use": _has_one_use,
    "npu.same_type": _same_type,
    "npu.same_block": _same_block,
    "npu.not_fused": _not_fused,
    "npu.plain_copy": _plain_copy,
}


FUSION_RULE = "pdl"
"""The rule name `npu.fuse` records: `pdl`, or a plugin fusion rule's name while npu-fuse
applies it (`lowering.graph.fuse.plugin_rules`)."""


def _fuse(rewriter: PatternRewriter, *ops: Any) -> tuple[Any, ...]:
    """`npu.fuse`(op0, op1, ...): ops in program order, each reading the previous one's
    result, become one `npu_graph.fused` kernel (rule FUSION_RULE), as npu-fuse's rules
    form theirs; returns the fused op."""
    chain = [o for o in ops if isinstance(o, Operation)]
    if len(chain) != len(ops) or len(chain) < 2:
        raise ValueError("npu.fuse takes two or more operations (a chain, producer first)")
    for prev, op in zip(chain, chain[1:]):
        if not prev.results or prev.results[0] not in op.operands:
            raise ValueError(f"npu.fuse: '{op.name}' does not read the result of '{prev.name}'")
    by = "npu-apply-patterns" if FUSION_RULE == "pdl" else "npu-fuse"  # (a plugin's rule runs inside npu-fuse)
    return (fuse_chain(chain, FUSION_RULE, rewriter, by),)


REWRITES: dict[str, Rewrite] = {
    "npu.fuse": _fuse,
}


def register_constraint(name: str, fn: Constraint) -> None:
    """Offer `fn` to PDL patterns as `pdl.apply_native_constraint "name"`."""
    CONSTRAINTS[name] = fn


def register_rewrite(name: str, fn: Rewrite) -> None:
    """Offer `fn(rewriter, *values)` to PDL patterns as `pdl.apply_native_rewrite "name"`."""
    REWRITES[name] = fn

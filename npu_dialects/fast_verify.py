"""A faster verification of the ops nested in a region, with xDSL's exact outcome:
`nested_ok(op)` checks what `Operation.verify` checks of every op inside `op`'s
regions (structure, the IRDL definition, custom and trait verifiers) and says True
only when xDSL's own verification of them passes too. On False (or any exception)
the caller verifies them the generic way, which raises xDSL's error, message for
message: an op with large regions (`npu_task.task`) overrides `verify` with it.

Algorithm
---------
Each op class gets a checker compiled once from its `OpDef`: operand and result
counts, variadic segments (single variadic or attribute-sized, else xDSL's own code),
constraints (`AnyAttr` skipped, `BaseAttr` as isinstance, `EqAttrConstraint` as
equality, the others called as xDSL calls them, in xDSL's order and one
`VerificationContext` per op), properties, attributes, the traits whose verify does
something, then the class's own `verify_`. The walk checks what Region, Block and
Operation verify (parent links, terminators, erased operands) as xDSL does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from xdsl.dialects.builtin import DenseArrayBase, i32
from xdsl.ir import Block, Operation, Region
from xdsl.ir.core import ErasedSSAValue
from xdsl.irdl import IRDLOperation
from xdsl.irdl.constraints import (
    AnyAttr,
    AnyOf,
    BaseAttr,
    EqAttrConstraint,
    EqIntConstraint,
    RangeLengthConstraint,
    RangeOf,
    SingleOf,
    VarConstraint,
    VerificationContext,
)
from xdsl.irdl.operations import (
    AttrSizedOperandSegments,
    AttrSizedResultSegments,
    AttrSizedSegments,
    OpDef,
    OptAttributeDef,
    OptionalDef,
    OptPropertyDef,
    VariadicDef,
    VarIRConstruct,
    irdl_op_verify_arg_list,
    irdl_op_verify_regions,
    verify_variadic_size,
)
from xdsl.traits import IsTerminator, NoTerminator, OpTrait

Check = Callable[[Operation], bool]
AttrCheck = Callable[[Any, VerificationContext], bool]
RangeCheck = Callable[[Sequence[Any], VerificationContext], bool]


def _attr_check(constr: Any) -> AttrCheck | None:
    """A check of one attribute against `constr` (None: it accepts any): `AnyOf`,
    `VarConstraint`, `BaseAttr` and `EqAttrConstraint` as xDSL verifies them, any
    other constraint by its own `verify` (which raises as xDSL's does)."""
    kind = type(constr)
    if kind is AnyAttr:
        return None
    if kind is BaseAttr:
        base = constr.attr
        return lambda a, _ctx: isinstance(a, base)
    if kind is EqAttrConstraint:
        want = constr.attr
        return lambda a, _ctx: not (a != want)
    if kind is VarConstraint:
        return _var_check(constr.name, _attr_check(constr.constraint))
    if kind is AnyOf:
        return _any_of_check(constr)
    verify = constr.verify

    def check(a: Any, ctx: VerificationContext) -> bool:
        verify(a, ctx)
        return True
    return check


def _var_check(name: str, inner: AttrCheck | None) -> AttrCheck:
    """`VarConstraint`: the first attribute bound to `name` satisfies `inner`, the
    others equal it (`set_attr_variable` raises when one does not)."""
    def check(a: Any, ctx: VerificationContext) -> bool:
        return not ctx.set_attr_variable(name, a) or inner is None or inner(a, ctx)
    return check


def _any_of_check(constr: AnyOf) -> AttrCheck:
    """`AnyOf`: the constraint of the attribute's class, else the abstract one."""
    by_class = {cls: _attr_check(c) for cls, c in constr._based_constrs.items()}  # pyright: ignore[reportPrivateUsage]
    abstract = constr._abstr_constr  # pyright: ignore[reportPrivateUsage]
    fallback = _attr_check(abstract) if abstract is not None else None

    def check(a: Any, ctx: VerificationContext) -> bool:
        cls = a.__class__
        if cls in by_class:
            c = by_class[cls]
        elif abstract is not None:
            c = fallback
        else:
            return False
        return c is None or c(a, ctx)
    return check


def _single(constr: Any) -> tuple[bool, AttrCheck | None]:
    """(True, its element check) when a range constraint takes exactly one attribute
    (an `OperandDef`'s, a `ResultDef`'s); (False, None) otherwise."""
    if type(constr) is SingleOf:
        return True, _attr_check(constr.constr)
    if (type(constr) is RangeLengthConstraint and type(constr.length) is EqIntConstraint
            and constr.length.value == 1 and type(constr.constraint) is RangeOf):
        return True, _attr_check(constr.constraint.constr)
    return False, None


def _range_check(constr: Any) -> RangeCheck:
    """A check of a segment's types against its range constraint."""
    single, one = _single(constr)
    if single:
        return lambda ts, ctx: len(ts) == 1 and (one is None or one(ts[0], ctx))
    if type(constr) is RangeOf:
        each = _attr_check(constr.constr)
        return lambda ts, ctx: each is None or all(each(t, ctx) for t in ts)
    verify = constr.verify

    def check(ts: Sequence[Any], ctx: VerificationContext) -> bool:
        verify(ts, ctx)
        return True
    return check


def _segments(defs: Sequence[tuple[str, Any]], option: AttrSizedSegments | None, op_def: OpDef,
              construct: VarIRConstruct) -> Callable[[Operation, int], list[int] | None] | None:
    """The segment sizes of an op's operands or results, given their count (None:
    the counts do not verify); None when xDSL's own code should size them."""
    variadic = [i for i, (_, d) in enumerate(defs) if isinstance(d, VariadicDef)]
    n = len(defs)
    if option is not None:
        return _attr_sized(option, [0 if not isinstance(d, VariadicDef) else 1 if isinstance(d, OptionalDef) else 2
                                    for _, d in defs])
    if len(variadic) != 1:
        return None
    v = variadic[0]
    optional = isinstance(defs[v][1], OptionalDef)

    def one_variadic(_op: Operation, count: int) -> list[int] | None:
        size = count - (n - 1)
        if size < 0 or (optional and size > 1):
            return None
        sizes = [1] * n
        sizes[v] = size
        return sizes
    return one_variadic


def _attr_sized(option: AttrSizedSegments, kinds: list[int]) -> Callable[[Operation, int], list[int] | None]:
    """The segment sizes an `AttrSizedSegments` attribute gives, when it verifies as
    `verify_variadic_attr_size` verifies it (an i32 array, one size per definition: 1
    for a single one, 0 or 1 for an optional one, any for a variadic one, summing to
    the count); else None. `kinds`: 0 single, 1 optional, 2 variadic."""
    name = option.attribute_name

    def sizes(op: Operation, count: int) -> list[int] | None:
        a: Any = option.container(op).get(name)
        if not isinstance(a, DenseArrayBase) or a.elt_type != i32:
            return None
        got: list[int] = list(cast(Any, a).get_values())
        if len(got) != len(kinds) or sum(got) != count:
            return None
        for k, n in zip(kinds, got):
            if n < 0 or (k == 0 and n != 1) or (k == 1 and n > 1):
                return None
        return got
    return sizes


def _args_check(op_def: OpDef, construct: VarIRConstruct) -> Callable[[Operation, VerificationContext], bool]:
    """The check of an op's operands or results (`irdl_op_verify_arg_list`'s)."""
    operands = construct == VarIRConstruct.OPERAND
    defs = op_def.operands if operands else op_def.results
    kind = AttrSizedOperandSegments if operands else AttrSizedResultSegments
    option = next((o for o in op_def.options if isinstance(o, kind)), None)
    same_size = any(type(o).__name__.startswith("SameVariadic") for o in op_def.options)
    fixed = [_single(d.constr) for _, d in defs]
    if option is None and not same_size and all(single for single, _ in fixed):
        return _fixed_check(operands, [c for _, c in fixed])
    sizes = None if same_size else _segments(defs, option, op_def, construct)
    if sizes is None:
        def generic(op: Operation, ctx: VerificationContext) -> bool:
            irdl_op_verify_arg_list(op, op_def, construct, ctx)  # type: ignore[arg-type]
            return True
        return generic
    checks = [_range_check(d.constr) for _, d in defs]

    def check(op: Operation, ctx: VerificationContext) -> bool:
        values = op.operands if operands else op.results
        got = sizes(op, len(values))
        if got is None:
            return False
        at = 0
        for c, k in zip(checks, got):
            if not c(tuple(v.type for v in values[at:at + k]), ctx):
                return False
            at += k
        return at == len(values)
    return check


def _fixed_check(operands: bool, checks: list[AttrCheck | None]) -> Callable[[Operation, VerificationContext], bool]:
    """The check of operands or results defined one by one (no variadic segment)."""
    n = len(checks)
    active = [(i, c) for i, c in enumerate(checks) if c is not None]

    def check(op: Operation, ctx: VerificationContext) -> bool:
        values = op.operands if operands else op.results
        if len(values) != n:
            return False
        for i, c in active:
            if not c(values[i].type, ctx):
                return False
        return True
    return check


def _named_checks(defs: dict[str, Any], optional: type) -> list[tuple[str, bool, AttrCheck | None]]:
    return [(name, isinstance(d, optional), _attr_check(d.constr)) for name, d in defs.items()]


def _tables_check(op_def: OpDef) -> Callable[[Operation, VerificationContext], bool]:
    """The check of an op's properties (each defined, the required ones present) and
    attributes (the required ones present), in `OpDef.verify`'s order."""
    props = _named_checks(op_def.properties, OptPropertyDef)
    prop_names = frozenset(op_def.properties)
    attrs = _named_checks(op_def.attributes, OptAttributeDef)

    def check(op: Operation, ctx: VerificationContext) -> bool:
        for table, named in ((op.properties, props), (op.attributes, attrs)):
            for name, optional, c in named:
                a = table.get(name)
                if a is None:
                    if not optional:
                        return False
                elif c is not None and not c(a, ctx):
                    return False
        return all(k in prop_names for k in op.properties)
    return check


def _custom_verify(cls: type) -> tuple[OpDef | None, Callable[[Operation], None] | None]:
    """The `OpDef` xDSL's generated `verify_` checks and the class's own verifier it
    then calls (None, None: `verify_` is not the generated one, call it as it is)."""
    f: Any = getattr(cls, "verify_", None)
    code = getattr(f, "__code__", None)
    if code is None or code.co_name != "verify_" or "get_accessors_from_op_def" not in f.__qualname__:
        return None, None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in f.__closure__ or ())))
    op_def = cells.get("op_def")
    if type(op_def) is not OpDef or op_def is not cls.get_irdl_definition():
        return None, None
    return op_def, cells.get("custom_verify")


def _compile(cls: type) -> Check:
    """The checker of ops of class `cls` (`OpDef.verify`, then the custom verifier)."""
    op_def, custom = _custom_verify(cls) if issubclass(cls, IRDLOperation) else (None, None)
    if op_def is None:
        def as_is(op: Operation) -> bool:
            op.verify_()
            return True
        return as_is
    operands = _args_check(op_def, VarIRConstruct.OPERAND)
    results = _args_check(op_def, VarIRConstruct.RESULT)
    regions, successors = bool(op_def.regions), bool(op_def.successors)
    named = _tables_check(op_def)
    traits = [t.verify for t in op_def.traits if type(t).verify is not OpTrait.verify]

    def check(op: Operation) -> bool:
        ctx = VerificationContext()
        if not operands(op, ctx) or not results(op, ctx):
            return False
        if regions:
            irdl_op_verify_regions(op, op_def, ctx)
        elif op.regions:
            return False
        if successors:
            verify_variadic_size(op, op_def, VarIRConstruct.SUCCESSOR)
        elif op.successors:
            return False
        if not named(op, ctx):
            return False
        for t in traits:
            t(op)
        if custom is not None:
            custom(op)
        return True
    return check


_CHECKS: dict[type, tuple[Check, bool, bool]] = {}


def _class_check(cls: type) -> tuple[Check, bool, bool]:
    """(checker, is a terminator, has no terminator) of an op class, compiled once."""
    got = _CHECKS.get(cls)
    if got is None:
        got = _CHECKS[cls] = (_compile(cls), cls.has_trait(IsTerminator), cls.has_trait(NoTerminator))
    return got


def _region_ok(region: Region) -> bool:
    for block in region.blocks:
        if not _block_ok(block, region) or block.parent is not region:
            return False
    return True


def _block_ok(block: Block, region: Region) -> bool:
    last = block.last_op
    owner = region.parent
    needs_terminator = owner is not None and len(region.blocks) == 1 and not _class_check(type(owner))[2]
    if last is None:
        return not needs_terminator
    for op in block.ops:
        if op.parent is not block or not _op_ok(op):
            return False
    if needs_terminator or len(region.blocks) > 1:
        return _class_check(type(last))[1]
    return True


def _op_ok(op: Operation) -> bool:
    """What `Operation.verify` checks of `op` (not what is only checked of an op with
    successors: such an op is left to it)."""
    cls = type(op)
    if cls.verify is not Operation.verify:  # (its own verify: called as xDSL's walk calls it)
        op.verify()
        return True
    if op.successors or any(isinstance(v, ErasedSSAValue) for v in op.operands):
        return False
    for r in op.regions:
        if not _region_ok(r):
            return False
    return _class_check(cls)[0](op)


def nested_ok(op: Operation) -> bool:
    """Whether every op inside `op`'s regions verifies (False: maybe not, or a check
    raised; verify them the generic way for xDSL's own error)."""
    try:
        return all(_region_ok(r) for r in op.regions)
    except Exception:
        return False


def _terminator_ok(op: Operation) -> bool:
    """What `Operation.verify` checks of `op` as its block's last op."""
    block = op.parent
    region = block.parent if block is not None else None
    if block is None or region is None or block.last_op is not op:
        return True
    owner = region.parent
    if len(region.blocks) == 1 and (owner is None or _class_check(type(owner))[2]):
        return True
    return _class_check(type(op))[1]


def verify(op: Operation) -> None:
    """`op.verify()`, its checks made by the compiled checkers: xDSL's own walk runs
    only when they cannot vouch for `op` (then raising xDSL's error)."""
    try:
        ok = _op_ok(op) and _terminator_ok(op)
    except Exception:
        ok = False
    if not ok:
        op.verify()

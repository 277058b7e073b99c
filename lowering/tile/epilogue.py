"""What a kernel computes besides its anchor: the elementwise *epilogue* applied to the
output tile (`EpilogueStep`, `epilogue_of`, `chain_steps`, lookup tables, accumulator
initialisation), the *prologue* a conv or matmul applies to its input
(`PrologueAnchor`, `prologue_of`, `matmul_prologue`), and `split_kernel`, which finds a
kernel's anchor, prologue and epilogue in its ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import LocationAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from lowering.tile.anchors import (
    Anchor,
    EltwiseAnchor,
    GenericAnchor,
    MatmulAnchor,
    TableShape,
    append_attention,
    broadcast_window,
    make_anchor,
)
from lowering.tile.kernel_shape import KernelShape, Loop, TilingError, Window, fixed
from npu_dialects.arch import Arch
from npu_dialects.dtypes import elem_bytes, element_type, f32, type_name
from npu_dialects.graph import (
    Conv2dOp,
    DequantizeOp,
    ElementwiseOp,
    GemmOp,
    LayerNormApplyOp,
    LayerNormOp,
    MatMulOp,
    QuantOp,
    SoftmaxOp,
    TableOp,
    attr_int,
    shape_of,
)
from npu_dialects.special import ELTWISE_USES
from npu_dialects.tile import KernelKind


@dataclass
class EpilogueStep:
    """One elementwise op applied to the output tile: `fn(*args)` where each entry of
    `args` is None for the running output tile, an index into KernelShape.epilogue, or
    the name of a derived operand. `template`: a structured op applied instead (a
    matmul's layernorm prologue, a quantize/dequantize), built on the tiles with its
    attributes; `passes`, its vector passes over the tile. `to`: the step computes a
    derived operand of that name from epilogue operands (a dequantize of the other
    integer input of a residual add) instead of the next running tile. `loc`: the
    location of the graph op the step applies (its ONNX node; an anchor's bias add, the
    anchor's), which the tile op built for it keeps; None: the kernel's."""

    fn: str
    args: tuple[int | str | None, ...]
    template: Operation | None = None
    passes: int = 1
    to: str | None = None
    loc: LocationAttr | None = None


def step_special(step: EpilogueStep) -> tuple[str, ...]:
    """The special functions a step evaluates per element (their cost is the arch's:
    `Arch.special_passes`)."""
    if step.template is not None:
        return getattr(step.template, "SPECIAL", ())
    return ELTWISE_USES.get(step.fn, ())


class PrologueAnchor(Anchor):
    """A conv whose input tile goes through per-channel elementwise ops in SRAM first
    (npu-fuse's `conv-prologue`): the conv's tiling, plus one load per extra operand
    following the input tile's channels (appended to the loads)."""

    def __init__(self, base: Anchor, steps: list[EpilogueStep], extra: list[tuple[int, tuple[int, ...]]]):
        super().__init__(base.kind, base.op, base.inputs, base.elems)
        self.base, self.steps, self.extra = base, steps, extra
        self.exhaustive_limit = base.exhaustive_limit  # type: ignore[misc]  # (searched as the anchor's)

    def loops(self) -> list[Loop]:
        return self.base.loops()

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        return self.base.candidates(arch)

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        return self.base.tile_op(tiles, out, ks)

    def shape(self, tile: dict[str, int]) -> KernelShape | None:
        ks = self.base.shape(tile)
        if ks is None:
            return None
        ks.loads = ks.loads + self.windows(ks.loads[0])
        ks.prologue_len = sum(s.passes for s in self.steps)
        return ks

    def windows(self, x: Window) -> list[Window]:
        """The extra operands' windows for input tile `x`: per channel (NCHW); a lookup
        table whole, or its rows of the tile's channels (`TableShape` along dim 1)."""
        return [self.window(i, shape, ((x.dims[1],) if shape.axis is not None else ()) + (fixed(shape[-1]),))
                if isinstance(shape, TableShape) else
                self.window(i, shape, (fixed(1), x.dims[1] if shape[1] > 1 else fixed(1), fixed(1), fixed(1)))
                for i, shape in self.extra]


class MatmulPrologueAnchor(PrologueAnchor):
    """A matmul whose A tiles are layer-normalised in SRAM first (npu-fuse's
    `matmul-prologue`: `layernorm_apply(x, stats, scale, bias)` in front of the
    product): the matmul's tiling on x, plus the rows' statistics (following A's
    rows, padded with 1s: finite) and the scale and bias (following its columns,
    padded with 0s: a padded column stays 0) loaded with each A tile."""

    def windows(self, x: Window) -> list[Window]:
        (si, ss), *params = self.extra
        stats = self.window(si, (*x.shape[:-1], ss[-1]), (*x.dims[:-1], fixed(ss[-1])), 1.0)
        return [stats] + [self.window(i, s, (x.dims[-1] if s[0] > 1 else fixed(1),), 0.0) for i, s in params]


def matmul_prologue(ops: Sequence[Operation], ins_index: dict[SSAValue, int]) -> MatmulPrologueAnchor | None:
    """The anchor of a kernel `layernorm_apply` -> matmul (reading it as A), else None."""
    if len(ops) < 2 or not isinstance(ln := ops[0], LayerNormApplyOp) \
            or not isinstance(mm := ops[1], (GemmOp, MatMulOp)) or mm.operands[0] is not ln.results[0]:
        return None
    if any(v not in ins_index for v in ln.operands):
        raise TilingError("a matmul prologue's operands must be kernel inputs")
    k = shape_of(ln.input)[-1]
    if any(shape_of(v) not in ((k,), (1,)) for v in ln.operands[2:]):
        raise TilingError(f"a matmul prologue's scale and bias must be [{k}] or [1]")
    base = MatmulAnchor(mm, {**ins_index, ln.results[0]: ins_index[ln.input]})
    if base.ta or len(shape_of(ln.input)) != len(base.sa):
        raise TilingError("a matmul prologue needs an untransposed A of the result's rank")
    extra = [(ins_index[v], shape_of(v)) for v in ln.operands[1:]]
    step = EpilogueStep("layernorm_apply", (None, *range(len(extra))), template=ln,
                        passes=LayerNormApplyOp.passes([shape_of(v) for v in ln.operands]), loc=ln.location)
    return MatmulPrologueAnchor(base, [step], extra)


def per_channel_shape(shape: Sequence[int], channels: int) -> tuple[int, int, int, int] | None:
    """`shape` rank-extended to NCHW when it is constant over N, H and W (channels or 1), else None."""
    if len(shape) > 4:
        return None
    n, c, h, w = (1,) * (4 - len(shape)) + tuple(shape)
    if n != 1 or h != 1 or w != 1 or c not in (1, channels):
        return None
    return n, c, h, w


def prologue_of(ops: Sequence[Operation], conv: Conv2dOp, ins_index: dict[SSAValue, int]
                ) -> tuple[list[EpilogueStep], list[tuple[int, tuple[int, ...]]], SSAValue]:
    """Steps of the elementwise ops in front of `conv` (each taking the running input
    tile and per-channel kernel inputs), their extra operands, and the kernel input
    the chain starts from."""
    if any(conv.params["pads"]):
        raise TilingError("a conv prologue needs a conv without padding (padding zeros would go through it)")
    first = ops[0]
    heads = [first.operands[0]] if isinstance(first, TableOp) and first.operands[0] in ins_index else \
        [o for o in first.operands if o in ins_index and o.type == first.results[0].type]
    if not heads:
        raise TilingError("a conv prologue must start from a kernel input of the conv's input shape")
    running = heads[0]
    channels = shape_of(running)[1]
    steps: list[EpilogueStep] = []
    extra: list[tuple[int, tuple[int, ...]]] = []
    running = chain_steps(ops, running, ins_index, steps, extra, "a conv prologue",
                          lambda o: per_channel_shape(shape_of(o), channels), "a per-channel kernel input")
    if running != conv.input:
        raise TilingError("the prologue must end in the conv's input")
    return steps, extra, heads[0]


def split_kernel(ops: Sequence[Operation], ins_index: dict[SSAValue, int]
                 ) -> tuple[Anchor, list[EpilogueStep], list[tuple[int, tuple[int, ...]]]]:
    """A kernel's graph ops as (anchor, epilogue steps, epilogue operands): the anchor is
    the first op, the conv after a prologue of elementwise ops (`PrologueAnchor`), or
    the matmul after a layernorm_apply (`MatmulPrologueAnchor`)."""
    appended = append_attention(ops, ins_index)
    if appended is not None:
        return appended, [], []
    normed = matmul_prologue(ops, ins_index)
    if normed is not None:
        return normed, *epilogue_of(ops[2:], ops[1], ins_index)
    k = next((i for i, o in enumerate(ops) if not isinstance(o, ElementwiseOp | QuantOp | TableOp)), 0)
    if k == 0 or (isinstance(ops[0], ElementwiseOp | QuantOp | TableOp) and isinstance(ops[k], ROW_OPS)):
        anchor = make_anchor(ops[0], ins_index)
        steps, extra = epilogue_of(ops[1:], ops[0], ins_index)
        return row_dims(anchor, steps), steps, extra
    conv = ops[k]
    if not isinstance(conv, Conv2dOp):
        raise TilingError(f"only a conv can have a prologue, not '{conv.name}'")
    pro_steps, pro_extra, head = prologue_of(ops[:k], conv, ins_index)
    anchor = PrologueAnchor(make_anchor(conv, {**ins_index, conv.input: ins_index[head]}), pro_steps, pro_extra)
    return anchor, *epilogue_of(ops[k + 1:], conv, ins_index)


ROW_OPS = (LayerNormOp, SoftmaxOp)
"""Structured ops an elementwise chain's epilogue may apply (npu-fuse's `eltwise-chain`):
normalisations over trailing dims of the running tile, kept whole in every tile."""


def row_dims(anchor: Anchor, steps: Sequence[EpilogueStep]) -> Anchor:
    """`anchor` keeping whole the dims its epilogue's row ops normalise (`ROW_OPS`):
    only an elementwise anchor (an elementwise op's, a quantize's...) whose output is
    their input's shape."""
    rows = [s.template for s in steps if isinstance(s.template, ROW_OPS)]
    if not rows:
        return anchor
    shape = getattr(anchor, "so", None) if isinstance(anchor, (GenericAnchor, EltwiseAnchor)) else None
    if shape is None or any(shape_of(r.operands[0]) != shape for r in rows):
        raise TilingError(f"'{rows[0].name}' in an epilogue needs an elementwise anchor of its input's shape")
    anchor.whole = frozenset(d for r in rows for d, cut in enumerate(r.tile_map().tileable) if not cut)
    return anchor


def epilogue_of(ops: Sequence[Operation], anchor: Operation,
                ins_index: dict[SSAValue, int]) -> tuple[list[EpilogueStep], list[tuple[int, tuple[int, ...]]]]:
    """Epilogue steps after the anchor, and (kernel input index, shape) of their extra operands.
    The anchor's own bias (gemm C, conv bias) comes first as an `add`."""
    steps: list[EpilogueStep] = []
    extra: list[tuple[int, tuple[int, ...]]] = []
    bias = None
    if isinstance(anchor, GemmOp) and anchor.c is not None:
        bias = anchor.c
    if isinstance(anchor, Conv2dOp) and anchor.bias is not None:
        bias = anchor.bias
    if bias is not None:
        shape = shape_of(bias)
        if isinstance(anchor, Conv2dOp):
            shape = (1, shape[0], 1, 1)
        extra.append((ins_index[bias], shape))
        steps.append(EpilogueStep("add", (None, len(extra) - 1), loc=anchor.location))  # (the anchor's bias)
    chain_steps(ops, anchor.results[0], ins_index, steps, extra, "an epilogue", shape_of, "a kernel input")
    return steps, extra


def chain_steps(ops: Sequence[Operation], running: SSAValue, ins_index: dict[SSAValue, int],
                steps: list[EpilogueStep], extra: list[tuple[int, tuple[int, ...]]], what: str,
                operand_shape, operand_kind: str) -> SSAValue:
    """Append a chain of elementwise ops starting from `running` as steps (the running
    tile is None, other operands kernel inputs given the shape `operand_shape` reads,
    None when unfit); returns the chain's last value."""
    derived: dict[SSAValue, str] = {}
    for op in ops:
        row = isinstance(op, ROW_OPS) and what == "an epilogue" and op.operands[0] == running
        if isinstance(op, TableOp) and op.operands[0] == running:
            table_step(op, ins_index, steps, extra)
            running = op.results[0]
            continue
        if not isinstance(op, ElementwiseOp | QuantOp) and not row:
            raise TilingError(f"'{op.name}' cannot be {what}")
        to = None
        if isinstance(op, DequantizeOp) and running not in op.operands:  # (of an operand of a later step)
            to = derived[op.results[0]] = f"d{len(derived)}"
        args: list[int | str | None] = []
        for o in op.operands:
            if o == running:
                args.append(None)
                continue
            if o in derived:
                args.append(derived[o])
                continue
            shape = operand_shape(o) if o in ins_index else None
            if shape is None:
                raise TilingError(f"{what} operand must be {operand_kind}")
            extra.append((ins_index[o], tuple(shape)))
            args.append(len(extra) - 1)
        if isinstance(op, QuantOp | LayerNormOp | SoftmaxOp):  # (built from the op itself: a new type, a row op)
            steps.append(EpilogueStep(op.name, tuple(args), template=op, passes=op.VECTOR_COST, to=to,
                                      loc=op.location))
        else:
            assert isinstance(op, ElementwiseOp)
            steps.append(EpilogueStep(op.FN, tuple(args), loc=op.location))
        if to is None:
            running = op.results[0]
    return running


def table_step(op: TableOp, ins_index: dict[SSAValue, int], steps: list[EpilogueStep],
               extra: list[tuple[int, tuple[int, ...]]]) -> None:
    """A lookup table on the running tile: its table a kernel input loaded whole, or
    per channel of the tile's dim `axis` (`TableShape`)."""
    table = op.operands[1]
    if table not in ins_index:
        raise TilingError("an epilogue's lookup table must be a kernel input")
    shape = shape_of(table)
    axis = attr_int(dict(op.attributes), "axis", 1) % len(shape_of(op.operands[0])) if len(shape) == 2 else None
    extra.append((ins_index[table], TableShape(shape, axis)))
    steps.append(EpilogueStep(op.name, (None, len(extra) - 1), template=op, passes=op.VECTOR_COST,
                              loc=op.location))


def chain_types(steps: Sequence[EpilogueStep], anchor_type: Attribute) -> tuple[Attribute, list[Attribute],
                                                                                list[Attribute]]:
    """(the element type the epilogue ends in, the other types its running tile takes,
    the types of its derived operands): an epilogue that quantizes or dequantizes holds
    its tile in one SRAM buffer per type (an int32 accumulator, a float tile, the int8
    result), `npu-bufferize`'s `TileBuffers.typed`."""
    running, seen, derived = anchor_type, [anchor_type], []
    for s in steps:
        if s.template is None:
            continue
        t = element_type(s.template.results[0])
        if s.to is not None:
            derived.append(t)
        else:
            running = t
            if t not in seen:
                seen.append(t)
    return running, [t for t in seen if t != running], derived


def with_epilogue(ks: KernelShape, extra: Sequence[tuple[int, tuple[int, ...]]],
                  steps: Sequence[EpilogueStep] = (), elems: dict[int, int] | None = None,
                  anchor_result: SSAValue | None = None) -> KernelShape:
    """`ks` with the epilogue operands' windows (sized by `elems`, the anchor's kernel
    input element bytes; without it the output's), and the one a sum may start from
    (`accumulator_init` of `steps`). An epilogue that changes the element type
    (`chain_types` from the anchor's result type) stores the type it ends in and holds a buffer
    of the output tile's shape for each other type (`KernelShape.chain`)."""
    return Epilogue(extra, steps, elems, anchor_result)(ks)


class Epilogue:
    """`with_epilogue` for many tilings of one kernel (a tile search's candidates): the
    types read once, and the windows of an output window built once (candidates share
    their anchor's output windows, `ConvAnchor.shape`)."""

    def __init__(self, extra: Sequence[tuple[int, tuple[int, ...]]], steps: Sequence[EpilogueStep] = (),
                 elems: dict[int, int] | None = None, anchor_result: SSAValue | None = None) -> None:
        self.extra, self.steps, self.elems = extra, steps, elems
        self.typed = anchor_result is not None
        self.chain: list[int] | None = None  # (the other types' element bytes, when the epilogue changes type)
        self.final = 0
        self.wide = False
        if anchor_result is not None:
            anchor_type = element_type(anchor_result)
            final, others, derived = chain_types(steps, anchor_type)
            if others or derived:
                self.chain, self.final = [elem_bytes(t) for t in (*others, *derived)], elem_bytes(final)
            self.wide = type_name(anchor_type) in ("f16", "bf16")  # (`wide_accumulator`)
        self.outs: dict[int, tuple[Window, list[Window], Window]] = {}  # id(out) -> (out, its windows, retyped)
        self.inits: dict[tuple[int, ...], int | None] = {}

    def __call__(self, ks: KernelShape) -> KernelShape:
        out = ks.out
        known = self.outs.get(id(out))  # (the entry holds `out`: its id is not reused while it is known)
        if known is None:
            elems = self.elems
            windows = [broadcast_window(i, s, out, elems[i] if elems else None) for i, s in self.extra]
            retyped = replace(out, elem=self.final) if self.chain is not None else out
            known = self.outs[id(out)] = (out, windows, retyped)
        ks.epilogue = list(known[1])
        if self.typed:
            if self.chain is not None:
                ks.chain = list(self.chain)
                ks.out = known[2]
            if self.wide and ks.kind in INIT_KINDS and ks.reduction_tiles > 1:  # (`wide_accumulator`)
                ks.accumulator = f32
                ks.chain = [*ks.chain, elem_bytes(f32)]
        if ks.kind in INIT_KINDS and ks.accumulator is None:  # (an init tile of the output's type cannot start an f32 sum)
            shape = tuple(ks.out.shape)
            if shape not in self.inits:
                self.inits[shape] = accumulator_init(self.steps, self.extra, shape)
            ks.init = self.inits[shape]
        return ks


def wide_accumulator(ks: KernelShape, anchor_type: Attribute) -> bool:
    """Whether a cube product in f16/bf16 sums its reduction steps in an f32 tile (cast to
    its type at the last step, the first epilogue op): the cube accumulates in f32, and
    a 16-bit running sum stored between steps would round once per step (a 4096-deep
    f16 product in 16 KiB erred 8x one rounding)."""
    return ks.kind in INIT_KINDS and type_name(anchor_type) in ("f16", "bf16") and ks.reduction_tiles > 1


INIT_KINDS = (KernelKind.MATMUL, KernelKind.CONV2D)
"""Anchors whose reduction may start from an epilogue operand (`accumulator_init`): a
transformer's residual after a projection, ResNet's shortcut after a block's last conv."""


def accumulator_init(steps: Sequence[EpilogueStep], extra: Sequence[tuple[int, tuple[int, ...]]],
                     out: Sequence[int]) -> int | None:
    """The epilogue operand a sum over reduction steps can start from instead of zero: one
    with the output's shape, added to the running tile by a step that only adds precede
    (so starting from it reassociates a sum and nothing else), its kernel input read by
    no other step. Its add then leaves the epilogue (`drop_init_step`)."""
    for st in steps:
        if st.fn != "add" or None not in st.args:
            return None
        j = next((a for a in st.args if a is not None), None)
        if not isinstance(j, int) or tuple(extra[j][1]) != tuple(out):
            continue
        source = extra[j][0]
        if sum(extra[a][0] == source for s2 in steps for a in s2.args if isinstance(a, int)) == 1:
            return j
    return None


def drop_init_step(steps: Sequence[EpilogueStep], init: int) -> list[EpilogueStep]:
    """`steps` without the add of the accumulator's start `init`."""
    return [s for s in steps if init not in s.args]

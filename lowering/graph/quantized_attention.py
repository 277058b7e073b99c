"""The attention of a QDQ model as npu-fuse-qdq leaves it, found for npu-fuse's `attention`
rule (`quantized_chain`): integer q @ kt, requantize, an optional 256-entry table (the
scale, folded by `FoldTable`), dequantize, an optional scalar multiply or divide, an
optional additive or where mask, an optional
quantize/dequantize pair, softmax, quantize, integer @ v, requantize - the chain an
`npu_graph.attention` with `quant` computes bit for bit, its scores kept on chip."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from lowering.graph.constants import ConstantReader
from npu_dialects.dtypes import element_type, type_name
from npu_dialects.graph import (
    AddOp,
    DequantizeOp,
    DivOp,
    MatMulOp,
    MulOp,
    QuantizeOp,
    QuantOp,
    RequantizeOp,
    SoftmaxOp,
    TableOp,
    WhereOp,
    shape_of,
)


@dataclass
class QuantizedChain:
    """What `AttentionOp(quant=...)` replaces: `ops` from q @ kt to the quantize before
    the product with v (in order), `end` the requantize after it, `quant` its
    parameters (`AttentionOp.QUANT_FIELDS`), `table` the score table (or empty) and `mask` the additive mask (or None)."""

    ops: list[Operation]
    qk: MatMulOp
    end: RequantizeOp
    quant: dict[str, float]
    table: list[int]
    mask: SSAValue | Operation | None
    scale: float


def _only_use(v: SSAValue, kind: type[Operation]) -> Operation | None:
    """The op of type `kind` that is `v`'s one reader."""
    uses = list(v.uses)
    return uses[0].operation if len(uses) == 1 and isinstance(uses[0].operation, kind) else None


def _owned(v: SSAValue, kind: type[Operation] | tuple[type[Operation], ...]) -> Operation | None:
    """`v`'s defining op when it is a `kind` read only there."""
    return v.owner if isinstance(v.owner, kind) and v.has_one_use() else None  # type: ignore[return-value]


class _Params:
    def __init__(self, constants: ConstantReader):
        self.constants = constants
        self.quant: dict[str, float] = {}

    def take(self, op: QuantOp, scale: str, zero: str, lo: str | None = None, hi: str | None = None) -> bool:
        """Record op's per-tensor scale (or multiplier) and zero point, and its range."""
        s, z = self.constants.scalar(op.operands[1]), self.constants.scalar(op.operands[2])
        if s is None or z is None:
            return False
        self.quant[scale], self.quant[zero] = s, z
        if lo and hi:
            self.quant[lo], self.quant[hi] = op.bounds()
        return True


def _scores(y: SSAValue, p: _Params) -> tuple[list[Operation], MatMulOp, list[int], float] | None:
    """(ops, q @ kt, table, scale) of y = dequantize(table?(requantize(q @ kt))), divided
    by a scalar (`div`) or times one (the scale), or not."""
    scale, ops = 1.0, []
    p.quant["div"] = 0.0
    if isinstance(sc := _owned(y, (MulOp, DivOp)), (MulOp, DivOp)) and sc.results[0].type == sc.operands[0].type:
        k = p.constants.scalar(sc.operands[1])
        if k is None or k == 0:
            return None
        if isinstance(sc, DivOp):
            p.quant["div"] = k
        else:
            scale = k
        y, ops = sc.operands[0], [sc]
    d1 = _owned(y, DequantizeOp)
    if d1 is None or not p.take(d1, "s1", "z1t"):  # type: ignore[arg-type]
        return None
    c, table, ops = d1.operands[0], [], [*ops, d1]
    if isinstance(t := _owned(c, TableOp), TableOp):
        values = p.constants.array(t.operands[1])
        if values is None or values.ndim != 1:
            return None
        table, c = [int(x) for x in values], t.operands[0]
        ops.append(t)
    r1 = _owned(c, RequantizeOp)
    if not isinstance(r1, RequantizeOp) or not p.take(r1, "m1", "z1", "lo1", "hi1"):
        return None
    qk = _owned(r1.input, MatMulOp)
    if not isinstance(qk, MatMulOp) or type_name(element_type(qk.a)) not in ("i8", "ui8"):
        return None
    p.quant["zq"], p.quant["zk"] = qk.zero_points
    p.quant["fixed"] = float(r1.requant_mode == "fixed")
    return [qk, r1, *reversed(ops)], qk, table, scale


def _masked(x: SSAValue) -> tuple[Operation | None, list[tuple[SSAValue, SSAValue | Operation | None]]]:
    """(the mask op, the (scores, mask) readings) of the softmax's input x: x itself
    with no mask; s + m or m + s; where(c, s, k) (the mask is the where, as
    `FuseAttention.additive` takes it)."""
    op = x.owner if isinstance(x.owner, (AddOp, WhereOp)) and x.has_one_use() else None
    if isinstance(op, WhereOp):
        return op, [(op.operands[1], op)]
    if isinstance(op, AddOp):
        return op, [(y, m) for y, m in (op.operands, op.operands[::-1])]
    return None, [(x, None)]


def quantized_chain(pv: Operation, constants: ConstantReader) -> QuantizedChain | None:
    """The quantized attention ending at the integer product `pv` with v (see the
    module docstring), every op but the last read once, parameters per tensor."""
    if not isinstance(pv, MatMulOp) or type_name(element_type(pv.a)) not in ("i8", "ui8"):
        return None
    end = _only_use(pv.result, RequantizeOp)
    p = _Params(constants)
    c3 = _owned(pv.a, QuantizeOp)
    if not isinstance(end, RequantizeOp) or not isinstance(c3, QuantizeOp) or \
            not p.take(end, "m2", "z4", "lo4", "hi4") or not p.take(c3, "s3", "z3", "lo3", "hi3"):
        return None
    p.quant["zv"] = pv.zero_points[1]
    sm = _owned(c3.input, SoftmaxOp)
    if not isinstance(sm, SoftmaxOp) or sm.norm_axis() != len(shape_of(sm.input)) - 1 or \
            pv.zero_points[0] != p.quant["z3"]:
        return None
    x, ops = sm.input, [sm, c3]
    d2 = _owned(x, DequantizeOp)
    q2 = _owned(d2.operands[0], QuantizeOp) if d2 is not None else None
    if isinstance(d2, DequantizeOp) and isinstance(q2, QuantizeOp) and p.take(q2, "s2", "z2", "lo2", "hi2") and \
            constants.scalar(d2.scale) == p.quant["s2"] and constants.scalar(d2.zero_point) == p.quant["z2"]:
        x, ops = q2.input, [q2, d2, *ops]
    else:
        p.quant["s2"] = 0.0  # (no fake quantization of the masked scores)
    mask_op, tries = _masked(x)
    for y, mask in tries:
        if y.type != x.type or (isinstance(mask, SSAValue) and type_name(element_type(mask)) != "f32"):
            continue
        found = _scores(y, p)
        if found is not None and (end.requant_mode == "fixed") == bool(p.quant["fixed"]):
            head, qk, table, scale = found
            return QuantizedChain([*head, *([mask_op] if mask_op else []), *ops], qk, end, p.quant, table, mask,
                                  scale)
    return None

"""`npu_graph.attention`: fused scaled-dot-product attention (`AttentionOp`), its
reference semantics, tiling (flash-attention style blocks along the key axis) and cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar, TypeVar

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    FloatAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    attr_def,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from npu_dialects import special
from npu_dialects.arch import Arch, DType, value_type
from npu_dialects.dtypes import QUANTIZED
from npu_dialects.graph.base import (
    FORMAT,
    Follow,
    StructuredOp,
    TileMap,
    attr_float,
    attr_ints,
    broadcast_follow,
    broadcast_shapes,
    check_f32,
    expect_type,
    int_array,
    ints,
    same_dims,
    shape_of,
)
from npu_dialects.graph.norm import SoftmaxOp, merge_softmax, softmax_block
from npu_dialects.graph.quant import QuantizeOp, RequantizeOp, TableOp, dequantize_ref, quantize_ref, requantize_ref
from npu_dialects.graph.refs import integer_operands

_T = TypeVar("_T")


@irdl_op_definition
class AttentionOp(StructuredOp):
    """Scaled dot-product attention with the scores kept on chip:
    softmax(q @ kt * scale + mask, last axis) @ v, per leading index (batch, head):
    q [..., S, D], kt [..., D, T] (keys transposed, as exporters leave them),
    v [..., T, Dv], an optional additive mask broadcasting to [..., S, T]; result
    [..., S, Dv]. Tiles cut the leading dims and the query rows S, and the keys T
    into blocks (`key_blocks`) when a tile's score rows do not fit SRAM whole: the
    tile op then carries `online` and gives its block's online-softmax state,
    [..., S, Dv + 2] = (exp(block scores - row max) @ v block, row max, row sum of
    exp), which `combine` merges across key blocks (flash attention, the output
    kept unnormalised as in FlashAttention-2); the last block's merge, `finish`,
    divides the output by the row sums, and the result is the state's first Dv
    columns. `key_rows`: the keys come untransposed, k [..., T, D]
    in the `kt` operand (the cube reads it transposed; no transposed copy in DRAM).
    `bshd`: the tensors (0 q, 1 k, 2 v, 3 result; rank 4) laid out [batch, rows,
    heads, dim] as the projections leave them, not [batch, heads, rows, dim]: tiles
    read and write their heads in place, with no transposed copy (k needs
    `key_rows`). `head_window = [oq, ok, ov, H]`: q, k and v hold more heads than the
    result's H (the columns of a fused projection, e.g. GPT-2's c_attn split three
    ways); the attention reads heads o .. o + H of each (tiles carry their heads
    only: a tile op has no window). `causal = k`: the mask is a causal one given by
    two small operands instead of [S, T] values, the last visible key position of
    each query row `qlim` [..., S, 1] and the position of each key `kpos` [..., 1, T]:
    the mask is 0 where kpos <= qlim, else k (tiles load their rows' and keys'
    positions, not a block of a dense mask).

    `quant` (with `score_table`): the attention of a QDQ model computed as its graph
    writes it, in integers where the graph has them (`QUANT_FIELDS`, `quantized`):
    i8/ui8 q, kt, v and result; the scores (q - zq) @ (kt - zk) in i32, requantized
    (m1, z1, range lo1..hi1; `fixed`: the arch's fixed-point mode), looked up in
    `score_table` (256 entries indexed by the code's 8 bits, optional), dequantized
    (s1, z1t), times `scale` or divided by `div` (unless 0), plus the mask in f32,
    fake-quantized (s2, z2, lo2..hi2; none when s2 is
    0), the softmax in f32 quantized (s3, z3, lo3..hi3), its product with v - zv in
    i32 requantized (m2, z4, lo4..hi4). The probabilities are rounded before the
    second product, so the keys are never cut into blocks (no `online`)."""

    name = "npu_graph.attention"
    USES: ClassVar[tuple[str, ...] | None] = ("exp", "reciprocal")  # (exp charged in `tile_cycles`)
    q = operand_def(TensorType)
    kt = operand_def(TensorType)
    v = operand_def(TensorType)
    masks = var_operand_def(TensorType)  # none, an additive mask, or (qlim, kpos) with `causal`
    scale = attr_def(FloatAttr)
    result = result_def(TensorType)
    traits = traits_def(NoMemoryEffect())
    assembly_format = FORMAT

    causal = opt_attr_def(FloatAttr)
    online = opt_attr_def(UnitAttr)
    finish = opt_attr_def(UnitAttr)  # (an online tile merged as its output tile's last key block)
    key_rows = opt_attr_def(UnitAttr)
    bshd = opt_attr_def(DenseArrayBase)
    head_window = opt_attr_def(DenseArrayBase)
    quant = opt_attr_def(DenseArrayBase)
    score_table = opt_attr_def(DenseArrayBase)
    QUANT_FIELDS: ClassVar[tuple[str, ...]] = (
        "zq", "zk", "zv", "m1", "z1", "lo1", "hi1", "s1", "z1t", "s2", "z2", "lo2", "hi2",
        "s3", "z3", "lo3", "hi3", "m2", "z4", "lo4", "hi4", "fixed", "div")
    STATE_COLUMNS: ClassVar[int] = 2  # (row max, row sum) after the output columns of an online state
    ONLINE_ROW_PASSES: ClassVar[int] = 5  # a merge's per-row work: max, 2 exps, the new sum's multiply and fma
    RESULT: ClassVar[int] = 3  # the result's index in `bshd`

    def __init__(self, q: SSAValue, kt: SSAValue, v: SSAValue, mask: SSAValue | Sequence[SSAValue] | None,
                 scale: float, result_type: TensorType, online: bool = False, key_rows: bool = False,
                 bshd: Sequence[int] = (), head_window: Sequence[int] = (), causal: float | None = None,
                 quant: dict[str, float] | None = None, score_table: Sequence[int] = ()):
        attrs: dict[str, Attribute] = {"scale": FloatAttr(scale, Float32Type())}
        if quant is not None:
            attrs["quant"] = DenseArrayBase.from_list(Float32Type(), [float(quant.get(k, 0.0)) for k in self.QUANT_FIELDS])
        if score_table:
            attrs["score_table"] = int_array(score_table)
        if causal is not None:
            attrs["causal"] = FloatAttr(causal, Float32Type())
        for name, on in (("online", online), ("key_rows", key_rows)):
            if on:
                attrs[name] = UnitAttr()
        if bshd:
            attrs["bshd"] = int_array(sorted(bshd))
        if head_window:
            attrs["head_window"] = int_array(head_window)
        masks = [] if mask is None else [mask] if isinstance(mask, SSAValue) else list(mask)
        super().__init__(operands=[q, kt, v, masks], result_types=[result_type], attributes=attrs)

    @classmethod
    def quantized(cls, attrs: dict[str, Attribute]) -> dict[str, float] | None:
        """The `quant` parameters by name (`QUANT_FIELDS`), None for a float attention."""
        a = attrs.get("quant")
        if not isinstance(a, DenseArrayBase):
            return None
        return dict(zip(cls.QUANT_FIELDS, (float(x) for x in a.get_values())))

    def key_axes(self) -> tuple[int, int]:
        """Where the keys run in kt (or k, `key_rows`) and in v, as negative axes: kt's last
        dim, k's rows, v's rows; a [B, S, H, D] tensor's rows are dim -3."""
        sw = self.swapped(dict(self.attributes))
        return (-3 if 1 in sw else -2) if self.key_rows else -1, -3 if 2 in sw else -2

    @classmethod
    def head_axis(cls, attrs: dict[str, Attribute], i: int) -> int:
        """Where operand i (0 q, 1 k, 2 v) keeps its heads: -2 in [B, S, H, D], else -3."""
        return -2 if i in cls.swapped(attrs) else -3

    def tile_attrs(self, tile_inputs: Sequence[Sequence[int]] = ()) -> dict[str, Attribute]:
        """A tile's inputs hold its heads only: no `head_window`."""
        return {k: v for k, v in self.attributes.items() if k != "head_window"}

    @staticmethod
    def swapped(attrs: dict[str, Attribute]) -> tuple[int, ...]:
        """The tensors (0 q, 1 k, 2 v, 3 result) an op with `attrs` keeps [B, S, H, D]."""
        return attr_ints(attrs, "bshd", ())

    @staticmethod
    def heads_first(shape: Sequence[_T]) -> tuple[_T, ...]:
        """[B, S, H, D] seen as [B, H, S, D] (or back: the swap is its own inverse)."""
        s = tuple(shape)
        return (*s[:-3], s[-2], s[-3], s[-1]) if len(s) >= 3 else s

    @classmethod
    def canonical_shapes(cls, attrs: dict[str, Attribute], in_shapes: Sequence[Sequence[int]],
                         out_shape: Sequence[int]) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
        """The shapes heads first ([B, H, S, D]), as `tile_cycles` reads them."""
        sw = cls.swapped(attrs)
        ins = [cls.heads_first(s) if i in sw and i < 3 else tuple(s) for i, s in enumerate(in_shapes)]
        hw = attr_ints(attrs, "head_window", ())
        if hw:  # (the heads read, not the operand's)
            ins = [(*x[:-3], hw[3], *x[-2:]) if i < 3 and len(x) >= 3 else x for i, x in enumerate(ins)]
        return ins, cls.heads_first(out_shape) if cls.RESULT in sw else tuple(out_shape)

    def canonical(self) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
        """The operand and result shapes heads first."""
        return self.canonical_shapes(dict(self.attributes), [shape_of(v) for v in self.operands],
                                     shape_of(self.result))

    @staticmethod
    def key_blocks(t: int, align: int) -> list[int]:
        """The key-block sizes a tile may take, ascending: T whole, and the divisors of T
        that are multiples of `align` (blocks never pad: a padded key would take part in
        the softmax)."""
        return [b for b in range(align, t, align) if t % b == 0] + [t]

    def dims(self) -> tuple[tuple[int, ...], int, int, int, int]:
        """(leading dims, S, D, T, Dv), heads first."""
        (q, _, v, *_), _ = self.canonical()
        return q[:-2], q[-2], q[-1], v[-2], v[-1]

    def verify_(self) -> None:
        sw = self.swapped(dict(self.attributes))
        if any(i not in range(4) for i in sw) or len(set(sw)) != len(sw):
            raise VerifyException(f"'npu_graph.attention': bshd {list(sw)} must name distinct tensors "
                                  f"among 0 (q), 1 (k), 2 (v) and 3 (result)")
        if sw and any(len(shape_of(x)) != 4 for x in (self.q, self.kt, self.v)):
            raise VerifyException("'npu_graph.attention': bshd layouts need rank-4 q, k and v")
        if 1 in sw and not self.key_rows:
            raise VerifyException("'npu_graph.attention': bshd k (1) needs key_rows: k [B, T, H, D]")
        hw = attr_ints(dict(self.attributes), "head_window", ())
        if hw:
            if len(hw) != 4 or min(hw) < 0 or hw[3] < 1 or any(len(shape_of(x)) < 3 for x in (self.q, self.kt, self.v)):
                raise VerifyException(f"'npu_graph.attention': head_window {list(hw)} must be [oq, ok, ov, H] "
                                      f"with H >= 1 on q, k and v of rank >= 3")
            for i, (x, o) in enumerate(zip((self.q, self.kt, self.v), hw)):
                have = shape_of(x)[self.head_axis(dict(self.attributes), i)]
                if o + hw[3] > have:
                    raise VerifyException(f"'npu_graph.attention': head_window reads heads {o}..{o + hw[3] - 1} "
                                          f"of {'q k v'.split()[i]}, which has {have}")
        (q, kt, v, *_), _ = self.canonical()
        lead, s, d, t, dv = self.dims()
        k_shape = (t, d) if self.key_rows else (d, t)
        if len(q) < 2 or len(kt) != len(q) or len(v) != len(q) or kt[:-2] != lead or v[:-2] != lead \
                or tuple(kt[-2:]) != k_shape:
            k = "k [..., T, D]" if self.key_rows else "[..., D, T]"
            raise VerifyException(f"'npu_graph.attention': q {list(q)}, kt {list(kt)} and v {list(v)} must be "
                                  f"[..., S, D], {k} and [..., T, Dv] with the same leading dims")
        self.verify_masks(len(q), lead, s, t)
        self.verify_quant()
        if self.finish and not self.online:
            raise VerifyException("'npu_graph.attention': finish merges an online state: it needs online")
        out = (*lead, s, dv + (self.STATE_COLUMNS if self.online else 0))
        self._expect_result_shape(self.heads_first(out) if self.RESULT in sw else out, "attention")

    def check_element_types(self) -> None:
        """Floats of one type, or with `quant` i8/ui8 q, kt, v and result (f32 masks)."""
        if self.quant is None:
            check_f32(self)
            return
        for what, v in (("q", self.q), ("kt", self.kt), ("v", self.v), ("result", self.result)):
            expect_type(self, v, what, QUANTIZED)
        for i, m in enumerate(self.masks):
            expect_type(self, m, f"mask #{i}", ("f32",))

    def verify_quant(self) -> None:
        """`quant` has every field, integral zero points and ranges, positive scales;
        `score_table` 256 entries and only with `quant`; no `online` state."""
        p = self.quantized(dict(self.attributes))
        if p is None:
            if self.score_table is not None:
                raise VerifyException("'npu_graph.attention': score_table needs quant")
            return
        if len(self.quant.get_values()) != len(self.QUANT_FIELDS):  # type: ignore[union-attr]
            raise VerifyException(f"'npu_graph.attention': quant has {len(self.quant.get_values())} values, "  # type: ignore[union-attr]
                                  f"expected {len(self.QUANT_FIELDS)} ({', '.join(self.QUANT_FIELDS)})")
        bad = [k for k in ("m1", "s1", "s3", "m2") if not p[k] > 0] + \
            [k for k in self.QUANT_FIELDS if k[0] in "zlh" and p[k] != round(p[k])]
        if bad:
            raise VerifyException(f"'npu_graph.attention': quant {', '.join(bad)} must be "
                                  "positive (scales, multipliers) or integral (zero points, ranges)")
        if self.online:
            raise VerifyException("'npu_graph.attention': a quantized attention takes its keys whole (no online state)")
        if self.score_table is not None and len(ints(self.score_table, ())) != 256:
            raise VerifyException(f"'npu_graph.attention': score_table has {len(ints(self.score_table, ()))} "
                                  "entries, expected 256")

    def verify_masks(self, rank: int, lead: tuple[int, ...], s: int, t: int) -> None:
        """No mask, one additive mask broadcasting to the scores, or (`causal`) qlim
        broadcasting to [..., S, 1] and kpos to [..., 1, T]."""
        causal = self.causal is not None
        if (len(self.masks) != 2) if causal else (len(self.masks) > 1):
            raise VerifyException(f"'npu_graph.attention': {len(self.masks)} mask operands: expected "
                                  + ("2 (qlim, kpos) with causal" if causal else "at most one"))
        targets = [(*lead, s, 1), (*lead, 1, t)] if causal else [(*lead, s, t)]
        for what, m, want in zip(("qlim", "kpos") if causal else ("mask",), self.masks, targets):
            m = shape_of(m)
            if len(m) > rank or broadcast_shapes(m, want) != want:
                raise VerifyException(f"'npu_graph.attention': {what} {list(m)} does not broadcast to the "
                                      f"{'scores' if not causal else 'positions'} {list(want)}")

    def tile_map(self) -> TileMap:
        """Heads first: q's rows follow the tile's (D whole), kt and v follow its head
        (whole), the mask broadcasts; then each [B, S, H, D] tensor's two middle dims
        swap (the result's: the output dims the inputs follow)."""
        lead, s, _, t, _ = self.dims()
        r = len(lead) + 2
        sw = self.swapped(dict(self.attributes))
        follows = [same_dims(r, whole=(r - 1,)),
                   tuple(Follow(d) for d in range(r - 2)) + (Follow(None), Follow(None)),
                   tuple(Follow(d) for d in range(r - 2)) + (Follow(None), Follow(None))]
        for mask in self.masks:  # (a mask's keys: whole here; the tiling model cuts them in blocks)
            m = shape_of(mask)
            follows.append(broadcast_follow(m[:-1], (*lead, s)) + (Follow(None),))
        to_out = (lambda d: self.heads_first(range(r))[d]) if self.RESULT in sw else (lambda d: d)
        follows = [tuple(Follow(None if f.out_dim is None else to_out(f.out_dim)) for f in fs) for fs in follows]
        follows = [self.heads_first(fs) if i in sw and i < 3 else fs for i, fs in enumerate(follows)]
        hw = attr_ints(dict(self.attributes), "head_window", ())
        for i, o in enumerate(hw[:3]):  # (a window's heads start at its offset)
            fs = list(follows[i])
            ax = len(fs) + self.head_axis(dict(self.attributes), i)
            fs[ax] = Follow(fs[ax].out_dim, offset=o)
            follows[i] = tuple(fs)
        tileable = tuple(d < r - 1 for d in range(r))
        return TileMap(self.heads_first(tileable) if self.RESULT in sw else tileable, tuple(follows))

    @classmethod
    def compute(cls, attrs: dict[str, Attribute], *arrays: np.ndarray) -> np.ndarray:
        sw, hw = cls.swapped(attrs), attr_ints(attrs, "head_window", ())
        if hw:  # (a whole operand: its heads o .. o + H)
            arrays = tuple(np.take(a, range(hw[i], hw[i] + hw[3]), axis=cls.head_axis(attrs, i)) if i < 3 else a
                           for i, a in enumerate(arrays))
        q, kt, v, *mask = (np.swapaxes(a, -3, -2) if i in sw and i < 3 else a for i, a in enumerate(arrays))
        y = cls._compute(attrs, q, kt, v, *mask)
        return np.swapaxes(y, -3, -2) if cls.RESULT in sw else y

    @classmethod
    def _compute(cls, attrs: dict[str, Attribute], q: np.ndarray, kt: np.ndarray, v: np.ndarray,
                 *mask: np.ndarray) -> np.ndarray:
        if "key_rows" in attrs:
            kt = np.swapaxes(kt, -1, -2)
        quant = cls.quantized(attrs)
        if quant is not None:
            return cls._quantized(attrs, quant, q, kt, v, *mask)
        scores = cls.masked(attrs, np.matmul(q, kt) * np.asarray(attr_float(attrs, "scale", 1.0), q.dtype), mask)
        if "online" not in attrs:
            e = special.exp(scores - scores.max(axis=-1, keepdims=True))
            return np.matmul(special.divide(e, e.sum(axis=-1, keepdims=True)), v)
        m, e, s = softmax_block(scores)  # (a block whose keys are all masked: -inf, nothing to add)
        return np.concatenate([np.matmul(e, v), m, s], axis=-1)

    @staticmethod
    def masked(attrs: dict[str, Attribute], scores: np.ndarray, mask: Sequence[np.ndarray]) -> np.ndarray:
        """The scores plus the additive mask, or plus the causal fill where kpos > qlim."""
        if "causal" in attrs:  # (qlim, kpos)
            return scores + np.where(mask[1] <= mask[0], np.float32(0), np.float32(attr_float(attrs, "causal", 0.0)))
        return scores + mask[0] if mask else scores

    @classmethod
    def _quantized(cls, attrs: dict[str, Attribute], p: dict[str, float], q: np.ndarray, kt: np.ndarray,
                   v: np.ndarray, *mask: np.ndarray) -> np.ndarray:
        """The `quant` attention: the ops of the QDQ graph it replaces, each with the
        arithmetic of its own reference (`requantize_ref`, `TableOp`, `dequantize_ref`,
        `quantize_ref`, `SoftmaxOp`), so it equals that graph bit for bit; integer
        codes (int64) out."""
        def f(x: float) -> np.ndarray:
            return np.asarray(x, np.float32)

        mode = "fixed" if p["fixed"] else "float"
        acc = np.matmul(*integer_operands(q, kt, int(p["zq"]), int(p["zk"])))
        c = requantize_ref(acc, f(p["m1"]), f(p["z1"]), int(p["lo1"]), int(p["hi1"]), mode)
        table = ints(attrs.get("score_table"), ())
        if table:
            c = TableOp.compute({}, c, np.asarray(table))
        x = dequantize_ref(c, f(p["s1"]), f(p["z1t"]))
        if attr_float(attrs, "scale", 1.0) != 1.0:  # (as MulOp / DivOp compute them)
            x = x * f(attr_float(attrs, "scale", 1.0))
        if p["div"]:
            x = x / f(p["div"])
        x = cls.masked(attrs, x, mask)
        if p["s2"]:
            x = dequantize_ref(quantize_ref(x, f(p["s2"]), f(p["z2"]), int(p["lo2"]), int(p["hi2"])),
                               f(p["s2"]), f(p["z2"]))
        probs = SoftmaxOp.compute({}, x.astype(np.float32))
        c3 = quantize_ref(probs, f(p["s3"]), f(p["z3"]), int(p["lo3"]), int(p["hi3"]))
        acc = np.matmul(*integer_operands(c3, v, int(p["z3"]), int(p["zv"])))
        out = requantize_ref(acc, f(p["m2"]), f(p["z4"]), int(p["lo4"]), int(p["hi4"]), mode)
        return np.rint(out).astype(np.int64)

    @classmethod
    def combine(cls, attrs: dict[str, Attribute], acc: np.ndarray, part: np.ndarray) -> np.ndarray:
        """Merge two online-softmax states [..., Dv + 2] (of disjoint key blocks, their
        outputs unnormalised): the row max is the larger, each side's output and sum
        are rescaled by exp(its max - the new max) - per row one side's factor is 1,
        so the outputs merge in one multiply-add a row, as `tile_cycles` counts. With
        `finish` (the output tile's last block) the merged output is then divided by
        the row sums (a reciprocal a row, a multiply an element). A row whose keys are
        all masked (-inf max) contributes nothing; one with no key at all stays 0."""
        n = cls.STATE_COLUMNS
        (oa, ma, sa), (ob, mb, sb) = ((x[..., :-n], x[..., -n:-n + 1], x[..., -1:]) for x in (acc, part))
        m, wa, wb = merge_softmax(ma, np.ones_like(sa), mb, np.ones_like(sb))
        o, s = oa * wa + ob * wb, sa * wa + sb * wb
        if "finish" in attrs:
            o = o * special.reciprocal(np.where(s == 0, 1, s))
        return np.concatenate([o, m, s], axis=-1).astype(acc.dtype, copy=False)

    @classmethod
    def tile_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                    scaled: bool = True, finish: bool = False, dtype: DType = "f32") -> int:
        """Both products on the cube; on the vector unit, for a tile with inputs of
        `in_shapes` (q, kt, v, masks): the scale on q (a pass over [S, D]; none when
        not `scaled`, a scale of 1, as npu-fold-attention-scale leaves it), over the
        scores a pass per mask operand (an additive mask's add; a causal mask's compare
        and select-add), the row max, exp(s - max) and the row sum (the sum, and a mask
        that is one row per key, on the cube instead where cheaper: `on_cube`); then one pass over
        the output ([S, Dv], after the second product: the probabilities are never
        divided), its normalisation by the row sums. An online tile (its out has the
        state's 2 extra columns), merged into a running state (`combine`), keeps the
        output unnormalised: per row the new max, both sides' factors exp(m - max) and
        the new sum (`ONLINE_ROW_PASSES` passes over [S]), then one multiply-add over
        [S, Dv] (the side with the smaller max times its factor plus the other; a
        tile's first block, with nothing to merge, pays the same for its copy); the
        last block's merge (`finish`) adds the normalisation, a reciprocal a row and a
        pass over [S, Dv]. The products run in `dtype` (q's type); the passes over the
        scores and the row statistics are f32 (the scores are f32), the ones over q and
        the output in the wider of f32 (the state) and `dtype`: all f32 today."""
        q, v = in_shapes[0], in_shapes[2]
        heads = math.prod(q[:-2])
        s, d, t, dv = q[-2], q[-1], v[-2], v[-1]
        if out_shape[-1] != dv:  # (online)
            out = arch.vector_cycles(heads * s * dv) + arch.vector_cycles(heads * s, cls.ONLINE_ROW_PASSES)
            out += cls.finish_cycles(arch, heads * s, dv) if finish else 0
        else:
            out = arch.vector_cycles(heads * s * dv)
        sums, mask = cls.on_cube(arch, in_shapes)  # (decided as `tile_scratch_bytes` does)
        passes = 2 + (0 if sums else 1) + (0 if mask else len(in_shapes[3:])) + arch.special_passes(("exp",))
        cube = arch.cube_cycles(s, d, t, heads, dtype) + arch.cube_cycles(s, t, dv, heads, dtype)
        cube += (arch.cube_cycles(s, t, 1, heads, dtype) if sums else 0) + \
            (arch.cube_cycles(s, 1, t, heads, dtype) if mask else 0)
        scale = arch.vector_cycles(heads * s * d) if scaled else 0
        return cube + arch.vector_cycles(heads * s * t, passes) + scale + out

    @classmethod
    def tile_type(cls, values: Sequence[SSAValue | Attribute]) -> str:
        """q's type: the products' (the vector passes' are fixed, see `tile_cycles`)."""
        return value_type(values[0])

    @classmethod
    def on_cube(cls, arch: Arch, in_shapes: Sequence[Sequence[int]]) -> tuple[bool, bool]:
        """(row sums, mask): whether a tile with inputs of `in_shapes` (canonical)
        computes its scores' row sums, and adds its mask, on the cube rather than in a
        vector pass over the scores [S, T] - each where the product is cheaper (the
        cube pads it to whole blocks: not for a few rows, e.g. a decode step's). Row
        sums: exp(scores) times a column of ones [T, 1]. Mask: only one that is a row
        per key ([..., 1, T], BERT's padding mask), added as the product of a column of
        ones [S, 1] and the mask row, accumulated into the scores (q kt + mask as one
        product of q and kt extended by them). The same sums, in another order."""
        q, v, masks = in_shapes[0], in_shapes[2], in_shapes[3:]
        heads, s, t = math.prod(q[:-2]), q[-2], v[-2]
        vector = arch.vector_cycles(heads * s * t)
        sums = arch.cube_cycles(s, t, 1, batch=heads) < vector
        per_key = len(masks) == 1 and (len(masks[0]) < 2 or masks[0][-2] == 1)
        return sums, per_key and arch.cube_cycles(s, 1, t, batch=heads) < vector

    @classmethod
    def tile_cycles_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                       out_shape: Sequence[int], dtype: DType = "f32") -> int:
        """`tile_cycles`, with no pass scaling q when the scale is 1, and the
        normalisation of a `finish` merge; `dtype` is q's type (the products')."""
        ins, out = cls.canonical_shapes(attrs, in_shapes, out_shape)
        quant = cls.quantized(attrs)
        if quant is not None:
            return cls.quantized_cycles(arch, ins, out, quant, "score_table" in attrs,
                                        attr_float(attrs, "scale", 1.0) != 1.0 or bool(quant["div"]))
        return cls.tile_cycles(arch, ins, out, attr_float(attrs, "scale", 1.0) != 1.0, "finish" in attrs, dtype)

    @classmethod
    def quantized_cycles(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                         quant: dict[str, float], table: bool, scaled: bool) -> int:
        """A `quant` tile: both products on the cube at the 8-bit rate; over the scores
        [S, T] the passes of the ops it replaces, at their own rates: the requantize
        (`RequantizeOp.VECTOR_COST`; in the cube's output stage with `requant_unit =
        cube`, as a conv's), the table lookup (`TableOp`, 8-bit), the
        dequantize, the scale's multiply or divide when `scaled`, a pass per mask
        operand, then the softmax of the logits and the quantize of its probabilities
        as the cheaper of `direct_softmax_passes` and `row_table_cycles` (the latter
        only with a fake quantization before the softmax: `row_tables`); over the
        output the requantize (the same way as the first)."""
        q, v = in_shapes[0], in_shapes[2]
        heads = math.prod(q[:-2])
        s, d, t, dv = q[-2], q[-1], v[-2], v[-1]
        n, out = heads * s * t, math.prod(out_shape)
        cube = arch.cube_cycles(s, d, t, heads, "i8") + arch.cube_cycles(s, t, dv, heads, "i8")
        passes = 1 + int(scaled) + len(in_shapes[3:])
        lookup = arch.vector_cycles(n, TableOp.VECTOR_COST, "i8") if table else 0
        requant = RequantizeOp.after_product_cycles(arch, n) + RequantizeOp.after_product_cycles(arch, out)
        tables = cls.row_tables(arch, quant, in_shapes)
        if tables is not None:
            return cube + arch.vector_cycles(n, passes) + lookup + tables + requant
        return cube + arch.vector_cycles(n, passes + cls.direct_softmax_passes(arch, quant)) + lookup + requant

    @classmethod
    def direct_softmax_passes(cls, arch: Arch, quant: dict[str, float]) -> int:
        """The f32 passes over the logits from the mask on, computed as the graph writes
        them: the fake quantization when s2 is set (quantize and dequantize: 3), the
        softmax's max, exp, sum and divide (4; the exp as the arch evaluates it) and
        the quantize of the probabilities (2)."""
        return (3 if quant["s2"] else 0) + 4 + QuantizeOp.VECTOR_COST + arch.special_passes(("exp",))

    ROW_TABLE: ClassVar[int] = 256  # entries of a per-row table (`row_table_cycles`): one per 8-bit code

    @classmethod
    def row_table_cycles(cls, arch: Arch, n: int, rows: int) -> int:
        """The logits quantized to 8-bit codes q2 (s2's quantize, 2 f32 passes), then the
        softmax and its quantize through two tables per row indexed by the code: with
        V[k] = dequantize(k) (monotone: s2 > 0), the row's max is V[max q2] (one 8-bit
        pass); E[k] = exp(V[k] - max) and P[k] = quantize(E[k] / sum) over the 256 codes
        (sub, exp, divide, quantize: 5 passes over 256 entries a row); per score a
        gather of E (`TableOp.VECTOR_COST`, f32), the row sum (an f32 pass) and a gather
        of P (8-bit). Every E and P entry is the same f32 arithmetic on the same value
        the graph's ops do to each score holding that code, so the probabilities' codes
        are those of `_quantized` bit for bit (tests/test_quantized_attention.py)."""
        per_row = arch.vector_cycles(rows * cls.ROW_TABLE, 3 + QuantizeOp.VECTOR_COST + arch.special_passes(("exp",)))
        return (arch.vector_cycles(n, QuantizeOp.VECTOR_COST) + arch.vector_cycles(n, 1, "i8")
                + arch.vector_cycles(n, TableOp.VECTOR_COST + 1) + arch.vector_cycles(n, TableOp.VECTOR_COST, "i8")
                + per_row)

    @classmethod
    def row_tables(cls, arch: Arch, quant: dict[str, float], in_shapes: Sequence[Sequence[int]]) -> int | None:
        """The cycles of a `quant` tile's softmax through per-row tables (`row_table_cycles`;
        `in_shapes` heads first) when it computes it so, else None: the logits are
        fake-quantized (s2 > 0, so a score's logit is one of 256 codes, in the codes'
        order) and that is cheaper than the direct passes - for rows of many keys (a
        row's tables cost 256 entries)."""
        if not quant["s2"] > 0:
            return None
        q, v = in_shapes[0], in_shapes[2]
        rows, n = math.prod(q[:-1]), math.prod(q[:-1]) * v[-2]
        tables = cls.row_table_cycles(arch, n, rows)
        return tables if tables < arch.vector_cycles(n, cls.direct_softmax_passes(arch, quant)) else None

    @staticmethod
    def finish_cycles(arch: Arch, rows: int, dv: int) -> int:
        """The normalisation a `finish` merge adds: a reciprocal of each row's sum and a
        multiply over the output [rows, Dv]."""
        return arch.vector_cycles(rows) + arch.vector_cycles(rows * dv)

    @classmethod
    def tile_scratch_bytes(cls, arch: Arch, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int]) -> int:
        """The tile's scores, [..., S, T] f32 (T: its key block), held in SRAM between
        the products; with `on_cube`, the ones its extra products read: a column [T, 1]
        for the row sums, a column [S, 1] for the mask (its row is the mask's tile)."""
        q, v = in_shapes[0], in_shapes[2]
        s, t = q[-2], v[-2]
        sums, mask = cls.on_cube(arch, in_shapes)
        return (math.prod(q[:-1]) * t + (t if sums else 0) + (s if mask else 0)) * 4

    @classmethod
    def tile_scratch_bytes_of(cls, attrs: dict[str, Attribute], arch: Arch, in_shapes: Sequence[Sequence[int]],
                              out_shape: Sequence[int]) -> int:
        """A `quant` tile whose requantizes run in the cube's output stage holds its
        scores as the 8-bit codes that stage writes ([..., S, T], 1 byte each: the
        logits after the table, mask and quantize/dequantize pair are 8-bit codes again)
        and one row of them in f32 for the softmax (and, with `row_tables`, the row's two
        tables: 256 f32 and 256 8-bit entries); otherwise `tile_scratch_bytes`."""
        quant = cls.quantized(attrs)
        if quant is None or arch.requant_unit != "cube":
            return cls.tile_scratch_bytes(arch, in_shapes, out_shape)
        q, v = in_shapes[0], in_shapes[2]
        tables = cls.row_tables(arch, quant, in_shapes) is not None  # (callers pass the canonical shapes)
        return math.prod(q[:-1]) * v[-2] + v[-2] * 4 + (cls.ROW_TABLE * 5 if tables else 0)

    def cycles(self, arch: Arch, out_shape: Sequence[int] | None = None) -> int | None:
        shapes = [shape_of(v) for v in self.operands]
        out = shape_of(self.result) if out_shape is None else out_shape
        return self.tile_cycles_of(dict(self.attributes), arch, shapes, out, value_type(self.operands[0]))

    def macs(self) -> int:
        lead, s, d, t, dv = self.dims()
        return math.prod(lead) * s * t * (d + dv)

"""`npu-fuse`: group graph ops into `npu_graph.fused` kernels.

Rules (each can be switched off with `npu-fuse{disable=rule,...}`):
- `conv-bn`: a batchnorm after a conv folds into the conv's weights and bias;
- `conv-prologue`: per-channel elementwise ops in front of an unpadded `conv2d` run on its input tiles;
- `conv-epilogue` / `matmul-epilogue` / `pool-epilogue`: `conv2d` / `gemm`, `matmul` /
  `maxpool` followed by a chain of elementwise ops (bias, activation, residual add);
- `matmul-prologue`: a LayerNorm read only as matmuls' left operand -> its rows'
  statistics, and each matmul normalises its A tiles in SRAM (see Algorithm);
- `eltwise-chain`: a chain of elementwise ops with no cube op in front;
- `attention`: q @ kt, scaled, masked, softmax, @ v -> one `npu_graph.attention`
  (the scores stay in SRAM; conditions under Algorithm);
- `kv-append`: attention over a KV cache and its new rows, with the present cache;
- `layer-group`: kernels sharing SRAM (`npu-layer-group`; off: `npu.fuse_disable`).
Assumes graph-level IR in `func.func` (kernels' ops left alone; npu-tile checks fit).

Algorithm
---------
`kv-append`: an attention whose k and v are concats of two tensors each along its
keys, at the same split (a decoder step: the cache, then the new rows) -> one
kernel of both concats and the attention, returning all three (`FuseKvAppend`);
npu-tile's `AppendAttentionAnchor` reads the cache once and writes the present as
it goes. A quantized model's float cache (quantize(past) -> concat, dequantize(concat)
-> the present output, zero points 0) comes into the kernel with its conversions when
one head's row of keys fits SRAM with them (`FuseKvAppend.kv_conversions`).

`attention`: the scale is a scalar multiply or divide, the mask an add or a
`where(c, s, k)` with constant c and k <= -1e30 (then exactly s + where(c, 0, k), a
new constant; a constant causal mask, 0 where key j <= query i + o and k elsewhere,
becomes two small position constants, `causal`), the softmax over the last axis; kt may be a transpose of the last
two dims of k (read untransposed: `key_rows`); at rank 4, q, k and v may be
transposes of [B, S, H, D] tensors (k: to [B, H, D, T]) read by nothing else and the
result may feed a transpose back to [B, S, H, Dv]: the attention then reads and
writes those tensors in place (`bshd`) and the transposes go; when q, k and v are
the column slices of one fused projection (GPT-2's c_attn: last-axis slices; ViT's
qkv: the gathers of its [3, B, H, S, D] permutation), the attention reads them as
head windows of one [B, S, 3H, D] view (`head_window`) and the slices and the
permutation go; it forms when one query row's q,
kt, v, mask and scores over the smallest key block (`AttentionOp.key_blocks`) fit
a core's SRAM: npu-tile then splits the keys into blocks merged by an online
softmax (flash attention) when whole score rows do not fit. The QDQ form npu-fuse-qdq
leaves (integer products, requantize, score table, quantize/dequantize pairs:
`quantized_attention.quantized_chain`) becomes one with `quant`, all its keys in one block.

`matmul-prologue`: a LayerNorm over the last axis (a pre-LN transformer's, before
its projection or MLP), with scale and bias over that axis, whose result is read
only as the untransposed left operand of matmuls or gemms, and is larger than a
core's SRAM (so it would go to DRAM and back; a layer group could keep a smaller
one on chip) -> `row_stats(x, moments)` (one pass reading x, writing 3 numbers a
row) and, in each reader's kernel, `layernorm_apply(x, stats, scale, bias)` on its
A tiles before the product (npu-tile's `MatmulPrologueAnchor`): the normalised
tensor is never written. Exact: the same formula on each element, however the
tiles cut it. A LayerNorm whose result is also read otherwise (a post-LN residual)
is left whole, with a remark.

`conv-bn` is `lowering/graph/bn_fold.py`; `npu-bn-fold` earlier in the default
pipeline does the same, and `npu-default{fuse-disable=conv-bn}` switches it off
there too.

`conv-prologue` takes a pre-activation BatchNorm-ReLU (multiply-add by [C, 1, 1]
constants, relu): run on each input tile, the conv reads the raw tensor and the
transformed one never goes to DRAM (exact: no padding zeros pass through the ops,
and an input element only feeds outputs whose windows hold it). Each link's result
must have one use.

`layer-group` needs the tiles, hence the later pass; `npu-layer-group` obeys
`npu.fuse_disable`.

A chain link must take the running value as one operand, be its only user,
and keep its shape (the other operand broadcasts into it), so the epilogue
runs on the output tile in SRAM without reordering any reduction. A dequantize
read only by an average or sum pool ends the chain before it (`pooled_dequantize`):
the kernel writes the 8-bit tensor, and the pool's kernel or strip group dequantizes
it on chip (a float tensor has 4 times its bytes to write and read back).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from lowering.errors import CompileError
from lowering.graph.bn_fold import fold_batchnorms
from lowering.graph.constants import ConstantReader, make_constant, weight_hint
from lowering.graph.fused_kernel import fuse_chain
from lowering.graph.quantized_attention import QuantizedChain, quantized_chain
from lowering.instrument import PatternWalker
from lowering.remarks import enabled as remarks_enabled
from lowering.remarks import remark
from lowering.tile.tile_search import ROW_OPS, per_channel_shape
from npu_dialects.arch import Arch, arch_of
from npu_dialects.dtypes import elem_bytes, element_type, nbytes, np_dtype
from npu_dialects.graph import (
    AddOp,
    AttentionOp,
    AvgPoolOp,
    ConcatOp,
    ConstantOp,
    Conv2dOp,
    DequantizeOp,
    DivOp,
    ElementwiseOp,
    FusedOp,
    GemmOp,
    LayerNormApplyOp,
    LayerNormOp,
    MatMulOp,
    MaxPoolOp,
    MulOp,
    QuantizeOp,
    QuantOp,
    ReshapeOp,
    RowStatsOp,
    SliceOp,
    SoftmaxOp,
    SumPoolOp,
    TableOp,
    TransposeOp,
    WhereOp,
    attr_float,
    attr_int,
    ints,
    shape_of,
)
from npu_dialects.locs import fused_loc, node_names

EPILOGUE_RULES: dict[str, tuple[type[Operation], ...]] = {
    "conv-epilogue": (Conv2dOp,),
    "matmul-epilogue": (GemmOp, MatMulOp),
    "pool-epilogue": (MaxPoolOp,),
    "eltwise-chain": (ElementwiseOp, QuantOp, TableOp),
}
RULES = ("conv-bn", "conv-prologue", *EPILOGUE_RULES, "matmul-prologue", "attention", "kv-append", "layer-group")
DISABLED_ATTR = "npu.fuse_disable"


def plugin_rules() -> dict[str, str]:
    """Fusion rules of installed plugins (entry point group `npu_compiler.fusion_rules`,
    `npu_dialects/plugins.py`): rule name -> its PDL file (patterns that call `npu.fuse`),
    applied by npu-fuse before the built-in rules, switched off by name like them."""
    from npu_dialects.plugins import PluginError, called
    out = {}
    for name, path in called("npu_compiler.fusion_rules"):
        if name in RULES:
            raise PluginError(f"plugin fusion rule '{name}' (group npu_compiler.fusion_rules) redefines a built-in rule")
        out[name] = str(path)
    return out


def check_rules(names: tuple[str, ...], pass_name: str) -> None:
    known = (*RULES, *plugin_rules())
    unknown = [r for r in names if r not in known]
    if unknown:
        raise CompileError(pass_name, f"unknown fusion rule(s) {', '.join(unknown)} (known: {', '.join(known)})")


def rule_disabled(module: ModuleOp, rule: str) -> bool:
    """Whether an earlier npu-fuse switched `rule` off for this module."""
    attr = module.attributes.get(DISABLED_ATTR)
    return isinstance(attr, ArrayAttr) and any(isinstance(a, StringAttr) and a.data == rule for a in attr)


def _epilogue_link(value: SSAValue, rows: bool = False) -> Operation | None:
    """The elementwise op that can join the chain ending in `value`, if any: an
    elementwise op of its type, or a quantize/dequantize/requantize/cast or lookup table
    of it (its parameters broadcast; only the element type changes); with `rows` (an elementwise
    chain's), also a LayerNorm or softmax of it (`ROW_OPS`: its tiles keep the
    normalised dims whole - a cube op's split columns)."""
    if not value.has_one_use():
        return None
    user = next(iter(value.uses)).operation
    same_block = user.parent_block() is value.owner.parent_block()
    if rows and isinstance(user, ROW_OPS) and user.operands[0] is value and user.results[0].type == value.type \
            and all(o is not value for o in user.operands[1:]) and same_block:
        return user
    if isinstance(user, TableOp) and user.operands[0] is value and user.operands[1] is not value and same_block:
        return user  # (a lookup per element of the running value)
    if not isinstance(user, ElementwiseOp | QuantOp) or not same_block:
        return None
    if isinstance(user, QuantOp) and (value not in user.operands[:user.DATA]
                                      or shape_of(value) != shape_of(user.results[0])):
        return None  # (a parameter, or an operand broadcast to the result: not the running value)
    if user.results[0].type != value.type and not isinstance(user, QuantOp):
        return None  # the running value would be broadcast: not an epilogue
    if sum(1 for o in user.operands if o == value) != 1:
        return None  # x op x: keep it simple
    return user


def pooled_dequantize(op: Operation) -> bool:
    """A dequantize read only by an average or sum pool: it stays out of the kernel in
    front (which then writes the 8-bit tensor, not 4-byte floats) for the pool's kernel
    or strip group to read the 8-bit tensor and dequantize it on chip (DenseNet's
    transitions: conv, requantize, dequantize, pool)."""
    if not isinstance(op, DequantizeOp) or not op.results[0].has_one_use():
        return False
    return isinstance(next(iter(op.results[0].uses)).operation, AvgPoolOp | SumPoolOp)


def rows_fit(chain: list[Operation], sram_bytes: int) -> bool:
    """Whether an elementwise chain ending in a row op (`ROW_OPS`) can hold whole rows of
    it: one row of each full-size tensor the chain reads or writes, double buffered,
    within `sram_bytes` (npu-split-rows splits a longer row op alone)."""
    row = chain[-1]
    assert isinstance(row, ROW_OPS)
    shape = shape_of(row.operands[0])
    whole = [shape[d] for d, cut in enumerate(row.tile_map().tileable) if not cut]
    full = {v for o in chain for v in (*o.operands, o.results[0]) if shape_of(v) == shape}
    return 2 * len(full) * math.prod(whole) * max(elem_bytes(v) for v in full) <= sram_bytes


def with_dequantized_operands(chain: list[Operation], head: Operation | None = None) -> list[Operation]:
    """`chain` with each single-use dequantize feeding one of its ops from outside placed
    just before that op (but `head`, the op the chain follows): an elementwise op of a
    QDQ model reads its other integer operands through the kernel (1 byte an element)
    rather than as float tensors."""
    inside = {*chain, *([head] if head else [])}
    out: list[Operation] = []
    for op in chain:
        for v in op.operands:
            dq = v.owner
            if isinstance(dq, DequantizeOp) and dq not in inside and v.has_one_use() \
                    and dq.parent_block() is op.parent_block():
                out.append(dq)
                inside.add(dq)
        out.append(op)
    return out


def conv_prologue(conv: Conv2dOp) -> list[Operation]:
    """The elementwise ops and lookup tables in front of `conv` that can run on its input
    tiles (see `conv-prologue` in the module docstring), in program order."""
    if any(conv.params["pads"]):
        return []
    channels = shape_of(conv.input)[1]
    chain: list[Operation] = []
    v = conv.input
    while isinstance(op := v.owner, ElementwiseOp | TableOp) and v.has_one_use() \
            and op.parent_block() is conv.parent_block():
        if isinstance(op, TableOp):  # (per tensor, or per channel: a DenseNet layer's BatchNorm-ReLU)
            if op.axis is not None and (len(shape_of(v)) != 4 or op.axis.value.data != 1):
                break
            chain.insert(0, op)
            v = op.input
            continue
        running = [o for o in op.operands if o.type == v.type]
        others = [o for o in op.operands if o.type != v.type]
        if len(running) != 1 or any(per_channel_shape(shape_of(o), channels) is None for o in others):
            break
        chain.insert(0, op)
        v = running[0]
    return chain


def row_reduction_after(last: Operation, rule: str) -> None:
    """A `missed` remark when the chain ending at `last` (a cube op's epilogue) is read by
    a LayerNorm or softmax over the last axis: the numerics would allow it in the
    epilogue, but its row statistics need whole output rows in one tile, which the cube
    kernel's tiling (and its split over the cores by output columns) does not give."""
    v = last.results[0]
    if rule not in ("matmul-epilogue", "conv-epilogue") or not v.has_one_use():
        return
    user = next(iter(v.uses)).operation
    while isinstance(user, ReshapeOp) and user.results[0].has_one_use():
        user = next(iter(user.results[0].uses)).operation
    if isinstance(user, (LayerNormOp, SoftmaxOp)):
        what = user.name.split(".")[-1]
        remark("npu-fuse", "missed", node_names(last) + node_names(user),
               f"{rule}: {what} not fused into the epilogue - npu-fuse has no row-reduction epilogue: its row "
               f"statistics need each output row whole in one tile, while cube tilings split columns and the "
               f"cores split weight columns; the numerics alone would allow it")


def _reads_as_a(r: Operation, v: SSAValue, block) -> bool:
    """`r` is a matmul or gemm reading `v` as its untransposed left operand only, in `block`."""
    ta = isinstance(r, GemmOp) and r.params["trans_a"]
    return isinstance(r, (GemmOp, MatMulOp)) and not ta and r.operands[0] is v and r.operands[1] is not v \
        and r.parent_block() is block and len(shape_of(r.results[0])) == len(shape_of(v))


def matmul_readers(ln: LayerNormOp, sram_bytes: int
                   ) -> tuple[list[tuple[Operation, ReshapeOp | None]], str | None]:
    """The matmuls reading LayerNorm `ln` as their left operand, each with the reshape
    between them (one keeping the last axis: GPT-2's Conv1D flattens the rows), and
    why it cannot run as their prologue (None: it can; see `matmul-prologue` in the
    module docstring)."""
    x = shape_of(ln.input)
    block = ln.parent_block()
    readers: list[tuple[Operation, ReshapeOp | None]] = []
    if not x or attr_int(dict(ln.attributes), "axis", -1) % len(x) != len(x) - 1:
        return readers, "it normalises more than the last axis"
    if any(shape_of(v) != (x[-1],) for v in ln.operands[1:]):
        return readers, f"its scale and bias are not [{x[-1]}]"
    for u in ln.results[0].uses:
        r = u.operation
        if _reads_as_a(r, ln.results[0], block):
            readers.append((r, None))
            continue
        if isinstance(r, ReshapeOp) and shape_of(r.result)[-1:] == x[-1:]:  # (a view: its readers count)
            other = next((w.operation for w in r.result.uses if not _reads_as_a(w.operation, r.result, block)), None)
            if other is None:
                readers += [(w.operation, r) for w in r.result.uses]
                continue
            r = other
        return readers, f"its result is also read by '{r.name}' ({', '.join(node_names(r)) or 'no node'}), " \
                        "so it is written anyway"
    if not readers:
        return readers, "nothing reads it"
    if nbytes(ln.results[0]) <= sram_bytes:
        return readers, f"its result ({nbytes(ln.results[0])} bytes) fits a core's SRAM ({sram_bytes}), where a layer " \
                        "group can keep it"
    return readers, None


class SplitLayerNorm(RewritePattern):
    """`matmul-prologue`, first half: a LayerNorm its readers can normalise on their A
    tiles -> `row_stats` and one `layernorm_apply` in front of each reader, through
    views of x and the statistics where a reshape stood between (the `matmul-epilogue`
    walk then fuses each into its reader's kernel). When the scale and bias are
    constants and every reader is a matmul by constant weights W, they fold into the
    weights (diag(scale) W) and the bias (bias W, added to the reader's own bias add
    or in a new one), so a tile is only centred and scaled by its rows' factor."""

    def __init__(self, module: ModuleOp, constants: ConstantReader, sram_bytes: int):
        self.module, self.constants, self.sram_bytes = module, constants, sram_bytes

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, LayerNormOp) or isinstance(op.parent_op(), FusedOp):
            return
        readers, why = matmul_readers(op, self.sram_bytes)
        if why is not None:
            remark("npu-fuse", "missed", node_names(op), f"matmul-prologue: not a prologue of its matmuls: {why}")
            return
        stats = RowStatsOp(op.input, "moments")
        stats.location = op.location
        rewriter.insert(stats, InsertPoint.before(op))
        eps = attr_float(dict(op.attributes), "epsilon", 1e-5)
        scale, bias = op.operands[1], (op.operands[2] if len(op.operands) > 2 else None)
        if self.fold(op, [r for r, _ in readers], rewriter):
            one = make_constant(self.module, np.ones(1, np.float32), weight_hint(op.location, "unit"), op.location,
                                element_type=element_type(op.input))
            rewriter.insert(one, InsertPoint.before(op))
            scale, bias = one.result, None
        views: dict[ReshapeOp, tuple[SSAValue, SSAValue]] = {}
        for r, reshape in readers:
            x, st = op.input, stats.results[0]
            if reshape is not None:
                if reshape not in views:
                    shape = shape_of(reshape.result)
                    xv = ReshapeOp(x, reshape.result.type)
                    sv = ReshapeOp(st, TensorType(element_type(st), [*shape[:-1], 3]))
                    for v in (xv, sv):
                        v.location = reshape.location
                    rewriter.insert([xv, sv], InsertPoint.before(reshape))
                    views[reshape] = (xv.results[0], sv.results[0])
                x, st = views[reshape]
            norm = LayerNormApplyOp(x, st, scale, bias, eps)
            norm.location = op.location
            rewriter.insert(norm, InsertPoint.before(r))
            r.operands[0] = norm.results[0]
        for reshape in views:
            rewriter.erase(reshape)
        remark("npu-fuse", "applied", node_names(op), f"matmul-prologue: row statistics, then normalised on the A "
               f"tiles of {len(readers)} matmul(s): its {nbytes(op.results[0])}-byte result is never written")
        rewriter.erase(op)

    def fold(self, ln: LayerNormOp, readers: list[Operation], rewriter: PatternRewriter) -> bool:
        """Fold `ln`'s scale and bias into its readers' weights and biases, when all are
        constants (see the class docstring); False, changing nothing, otherwise."""
        gamma = self.constants.array(ln.operands[1])
        beta = self.constants.array(ln.operands[2]) if len(ln.operands) > 2 else None
        ws = [self.constants.array(r.operands[1]) if isinstance(r, MatMulOp) else None for r in readers]
        if gamma is None or (len(ln.operands) > 2 and beta is None) or any(w is None or w.ndim != 2 for w in ws):
            return False
        for r, w in zip(readers, ws):
            assert w is not None
            loc = r.location
            scaled = make_constant(self.module, gamma[:, None] * w, weight_hint(loc, "ln_folded"), loc,
                                   element_type=element_type(r.operands[1]))
            rewriter.insert(scaled, InsertPoint.before(r))
            replace_operand(r, 1, scaled.result, rewriter)
            if beta is None or not beta.any():
                continue
            shift, out = beta.astype(np.float64) @ w.astype(np.float64), r.results[0]
            add = next(iter(out.uses)).operation if out.has_one_use() else None
            add = add if isinstance(add, AddOp) and add.results[0].type == out.type else None
            j = 1 - list(add.operands).index(out) if add is not None else 0
            b = None if add is None else self.constants.array(add.operands[j])
            if add is not None and b is not None and b.shape == shift.shape:
                c = make_constant(self.module, b + shift, weight_hint(loc, "ln_bias"), loc, element_type=element_type(out))
                rewriter.insert(c, InsertPoint.before(add))
                replace_operand(add, j, c.result, rewriter)
            else:
                c = make_constant(self.module, shift, weight_hint(loc, "ln_bias"), loc, element_type=element_type(out))
                new = AddOp(out, c.result, out.type)  # type: ignore[arg-type]
                new.location = loc
                rewriter.insert([c, new], InsertPoint.after(r))
                out.replace_uses_with_if(new.results[0], lambda u, n=new: u.operation is not n)
        return True


def replace_operand(op: Operation, i: int, value: SSAValue, rewriter: PatternRewriter) -> None:
    """`op`'s operand i becomes `value`; a constant nothing reads any more goes."""
    old = op.operands[i]
    op.operands[i] = value
    if isinstance(old.owner, ConstantOp) and not old.uses:
        rewriter.erase(old.owner)


def layernorm_in_front(mm: Operation) -> list[Operation]:
    """The `layernorm_apply` in front of matmul `mm` that runs on its A tiles, if any."""
    a = mm.operands[0]
    norm = a.owner
    if isinstance(norm, LayerNormApplyOp) and a.has_one_use() and norm.parent_block() is mm.parent_block() \
            and mm.operands[1] is not a:
        return [norm]
    return []


@dataclass
class FuseRule(RewritePattern):
    """Fuse an anchor of `anchors` with its elementwise epilogue chain (`epilogue`) and,
    for a conv, the ops in front of it (`prologue`)."""

    rule: str
    anchors: tuple[type[Operation], ...]
    prologue: bool = False
    epilogue: bool = True
    matmul_prologue: bool = False
    sram_bytes: int = 0  # (an elementwise chain takes a row op only when its rows fit: `rows_fit`)

    @property
    def label(self) -> str:
        """Its name in `--pattern-stats`: one instance per rule."""
        return f"FuseRule({self.rule})"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, self.anchors) or isinstance(op.parent_op(), FusedOp):
            return
        if isinstance(op, ElementwiseOp | QuantOp | TableOp):
            prev = [o.owner for o in op.operands if isinstance(o.owner, Operation)]
            if any(isinstance(p, ElementwiseOp | QuantOp | TableOp) and _epilogue_link(p.results[0]) is op
                   for p in prev):
                return  # not the head of its chain
        chain: list[Operation] = [op]
        rows = self.rule == "eltwise-chain"
        while self.epilogue and (link := _epilogue_link(chain[-1].results[0], rows)) is not None:
            if isinstance(link, ROW_OPS) and not rows_fit([*chain, link], self.sram_bytes):
                break
            if pooled_dequantize(link):
                break
            chain.append(link)
        if self.epilogue:
            chain = [chain[0], *with_dequantized_operands(chain[1:], chain[0])]
        if remarks_enabled():
            row_reduction_after(chain[-1], self.rule)
        pro: list[Operation] = list(conv_prologue(op)) if self.prologue and isinstance(op, Conv2dOp) else []
        pro_rule = "conv-prologue"
        if self.matmul_prologue and isinstance(op, (GemmOp, MatMulOp)):
            pro, pro_rule = layernorm_in_front(op), "matmul-prologue"
        if len(chain) > 1 or pro:
            rules = ([pro_rule] if pro else []) + ([self.rule] if len(chain) > 1 else [])
            kernel = (node_names(op) or [None])[0] if pro_rule == "matmul-prologue" else None  # (the product's)
            fuse_chain(pro + chain, ",".join(rules), rewriter, kernel=kernel)


def causal_of(mask: np.ndarray) -> tuple[int, float] | None:
    """(o, k) when the additive `mask` [..., S, T] is, in every leading index, 0 where
    key j <= query i + o and k <= -1e30 elsewhere (a causal mask, with o past keys
    before the first query), else None. Positions are exact in f32 below 2**24."""
    if mask.ndim < 2 or mask.size == 0 or max(mask.shape[-2:]) >= 1 << 24:
        return None
    s, t = mask.shape[-2:]
    k = float(mask.min())
    first = mask.reshape(-1, s, t)[0]
    o = int(np.count_nonzero(first[0] == 0)) - 1
    if k > -1e30 or o < 0:
        return None
    want = np.where(np.arange(t)[None, :] <= np.arange(s)[:, None] + o, np.float32(0), np.float32(k))
    return (o, k) if bool(np.all(mask == want)) else None


class FuseAttention(RewritePattern):
    """The `attention` rule, anchored at the product with v (see the module docstring):
    every op of the chain but the last has one use, q, kt and v have the same leading
    dims, the mask broadcasts into the scores; declined when one query row's q, its
    smallest key block of kt, v, mask and scores and its output state pass
    `sram_bytes`."""

    def __init__(self, module: ModuleOp, constants: ConstantReader, arch: Arch):
        self.module, self.constants, self.arch = module, constants, arch

    def scaled(self, y: SSAValue) -> tuple[SSAValue, float] | None:
        """(the scores before scaling, the scale) of y = s * c, c * s or s / c (or y itself, 1)."""
        op = y.owner
        if isinstance(op, (MulOp, DivOp)) and op.results[0].type in (o.type for o in op.operands):
            a, b = op.operands
            if isinstance(op, DivOp):
                c = self.constants.scalar(b)
                return (a, 1.0 / c) if c and a.has_one_use() else None
            for s_, c_ in ((a, b), (b, a)):
                c = self.constants.scalar(c_)
                if c is not None and s_.type == y.type and s_.has_one_use():
                    return s_, c
            return None
        return y, 1.0

    def chain(self, pv: MatMulOp) -> tuple[list[Operation], MatMulOp, float, SSAValue | None] | None:
        """The ops from q @ kt to the softmax, the q @ kt product, the scale and the mask."""
        sm = pv.operands[0].owner
        if not isinstance(sm, SoftmaxOp) or sm.norm_axis() != len(shape_of(sm.input)) - 1 \
                or not pv.operands[0].has_one_use() or not sm.input.has_one_use():
            return None
        z = sm.input
        add = z.owner if isinstance(z.owner, (AddOp, WhereOp)) else None
        if isinstance(add, WhereOp):
            tries = [(add.operands[1], add)] if add.operands[1].type == z.type else []
        else:
            tries = [(z, None)] if add is None else [(y, m) for y, m in (add.operands, add.operands[::-1])]
        for y, mask in tries:
            if y.type != z.type or not y.has_one_use():
                continue
            found = self.scaled(y)
            if found is not None and isinstance(qk := found[0].owner, MatMulOp):
                scale_op = [y.owner] if y is not found[0] else []
                return [qk, *scale_op, *([add] if add else []), sm], qk, found[1], mask  # type: ignore[list-item]
        return None

    def additive(self, mask: SSAValue | Operation | None, loc
                 ) -> tuple[list[SSAValue] | None, float | None, list[Operation]]:
        """The mask operands, the causal fill (or None) and the new constants defining
        them: a `where(c, s, k)` with a constant c and k <= -1e30 is s + where(c, 0, k),
        exactly (s + k rounds to k for |s| < 1e30, -inf stays -inf); a constant mask
        that is 0 where key j <= query i + o and k elsewhere (`causal_of`) becomes the
        rows' limits and the keys' positions (`AttentionOp` `causal`); (None, None, [])
        when the mask is neither an operand nor such a where."""
        if mask is None:
            return [], None, []
        dense = self.dense_mask(mask)
        ty = element_type(mask if isinstance(mask, SSAValue) else mask.results[0])  # (the scores')
        causal = causal_of(dense) if dense is not None else None
        if dense is not None and causal is not None and max(dense.shape[-2] + causal[0], dense.shape[-1]) >= 2 ** (
                ml_dtypes.finfo(np_dtype(ty)).nmant + 1):
            causal = None  # (positions not exact in the scores' type: the dense mask)
        if dense is not None and causal is not None:
            (s, t), (o, k) = dense.shape[-2:], causal
            lead = (1,) * (dense.ndim - 2)
            made: list[Operation] = [
                make_constant(self.module, a.reshape(*lead, *a.shape), weight_hint(loc, n), loc, element_type=ty)
                for a, n in ((np.arange(s)[:, None] + o, "causal_rows"), (np.arange(t)[None, :], "causal_keys"))]
            return [c.results[0] for c in made], k, made
        if isinstance(mask, SSAValue):
            return [mask], None, []
        if dense is None:
            return None, None, []
        c = make_constant(self.module, dense, weight_hint(loc, "additive_mask"), loc, element_type=ty)
        return [c.result], None, [c]

    def dense_mask(self, mask: SSAValue | Operation) -> np.ndarray | None:
        """The additive mask's values when they are constant: a constant operand's, or
        where(c, 0, k)'s for a `where(c, s, k)` with constant c and k <= -1e30."""
        if isinstance(mask, SSAValue):
            return self.constants.array(mask) if isinstance(mask.owner, ConstantOp) else None
        if not isinstance(mask, WhereOp):
            return None
        cond = self.constants.array(mask.operands[0])
        k = self.constants.scalar(mask.operands[2])
        if cond is None or k is None or k > -1e30:
            return None
        return np.where(cond != 0, 0.0, k).astype(np.float32)

    @staticmethod
    def through(x: SSAValue, perm: list[int]) -> SSAValue | None:
        """y when x = transpose(y, perm) and nothing else reads x (the attention then reads
        y in place and the transposed copy goes)."""
        op = x.owner
        if isinstance(op, TransposeOp) and x.has_one_use() and list(ints(op.perm, ())) == perm:
            return op.input
        return None

    def layouts(self, q: SSAValue, kt: SSAValue, v: SSAValue, pv: Operation
                ) -> tuple[list[SSAValue], bool, list[int], Operation | None]:
        """([q, k or kt, v] as the attention reads them, key_rows, bshd, the transpose of the
        result it writes in place): kt may be k with its last two dims swapped (`key_rows`);
        at rank 4 each of q, k, v may be a [B, S, H, D] tensor with its middle dims swapped
        (k: [B, T, H, D] to [B, H, D, T]) and the result may go straight into a transpose
        back to [B, S, H, Dv] (`bshd`)."""
        n = len(shape_of(q))
        k = self.through(kt, [*range(n - 2), n - 1, n - 2])
        if n != 4:
            return [q, k or kt, v], k is not None, [], None
        swap = [0, 2, 1, 3]
        ins, bshd = [q, kt, v], []
        for i, perm in ((0, swap), (1, [0, 2, 3, 1]), (2, swap)):
            if (x := self.through(ins[i], perm)) is not None:
                ins[i] = x
                bshd.append(i)
        if k is not None:
            ins[1] = k
        uses = list(pv.results[0].uses)
        out = uses[0].operation if len(uses) == 1 else None
        if not (isinstance(out, TransposeOp) and list(ints(out.perm, ())) == swap):
            out = None
        return ins, k is not None or 1 in bshd, bshd + ([AttentionOp.RESULT] if out else []), out

    @staticmethod
    def head_slice(x: SSAValue) -> tuple[SSAValue, int, int] | None:
        """(y, heads of y, first head) when x [B, S, H, D] = reshape(slice of y [B, S, N] along
        its last axis, step 1, at a multiple of D): the attention can read x's heads out
        of y seen as [B, S, N / D, D] (a view), with no copy of the slice."""
        rs = x.owner
        if not isinstance(rs, ReshapeOp) or not isinstance(sl := rs.input.owner, SliceOp):
            return None
        b, s, h, d = shape_of(x)
        y = sl.input
        ys, starts, ends, steps = shape_of(y), ints(sl.starts, ()), ints(sl.ends, ()), ints(sl.steps, ())
        if len(ys) != 3 or tuple(ys[:2]) != (b, s) or ys[2] % d or set(steps) != {1} or \
                list(starts[:2]) != [0, 0] or starts[2] % d or ends[2] - starts[2] != h * d:
            return None
        return y, ys[2] // d, starts[2] // d

    @staticmethod
    def chain_up(x: SSAValue) -> list[Operation]:
        """The ops a head window reads through, readers first (the reshape, the slice, a
        transpose): npu-fuse erases those left unread."""
        out: list[Operation] = []
        op = x.owner
        while isinstance(op, (ReshapeOp, SliceOp, TransposeOp)) and len(out) < 3:
            out.append(op)
            op = op.operands[0].owner
        return out

    @staticmethod
    def head_group(x: SSAValue) -> tuple[SSAValue, int, int] | None:
        """(y, heads of y seen as [B, S, G H, D], first head) when x [B, H, S, D] =
        reshape(slice of transpose(y [B, S, G, H, D], perm 2, 0, 3, 1, 4) at one index c
        of its first axis) - ViT's qkv split, exported as a gather of the permuted
        projection: the attention reads x as heads c H .. c H + H of y in place."""
        rs = x.owner
        if not isinstance(rs, ReshapeOp) or not isinstance(sl := rs.input.owner, SliceOp) or \
                not isinstance(tr := sl.input.owner, TransposeOp) or list(ints(tr.perm, ())) != [2, 0, 3, 1, 4]:
            return None
        y = tr.input
        b, s, g, h, d = shape_of(y)
        starts, ends, steps = ints(sl.starts, ()), ints(sl.ends, ()), ints(sl.steps, ())
        c = starts[0]
        if tuple(shape_of(x)) != (b, h, s, d) or set(steps) != {1} or list(starts[1:]) != [0] * 4 or \
                list(ends) != [c + 1, b, h, s, d]:
            return None
        return y, g * h, c * h

    def windows(self, ins: list[SSAValue], bshd: list[int], key_rows: bool, loc
                ) -> tuple[list[SSAValue], list[int], list[int], list[Operation]]:
        """`ins` read in place as head windows of fused projections, all three or none (one
        `head_window`): a [B, S, H, D] operand through `head_slice`, a heads-first one
        (k read by rows) through `head_group`. Returns the operands, their layouts
        (`bshd`), the window (offsets and H) and the new views."""
        found = [self.head_slice(x) if i in bshd else self.head_group(x) if i != 1 or key_rows else None
                 for i, x in enumerate(ins)]
        if any(f is None for f in found):
            return ins, bshd, [], []
        views: dict[SSAValue, ReshapeOp] = {}  # (one view per projection)
        read, offsets = [], []
        for x, (y, heads, first) in zip(ins, found):  # type: ignore[misc]
            if y not in views:  # (y [B, S, N] or [B, S, G, H, D] seen as [B, S, heads, D])
                views[y] = ReshapeOp(y, TensorType(element_type(y), [*shape_of(y)[:2], heads, shape_of(x)[-1]]))
                views[y].location = loc
            read.append(views[y].result)
            offsets.append(first)
        heads = shape_of(ins[0])[2 if 0 in bshd else 1]  # (q's: [B, S, H, D] or [B, H, S, D])
        return read, sorted({0, 1, 2, *bshd}), [*offsets, heads], list(views.values())

    def row_bytes(self, q: SSAValue, kt: SSAValue, v: SSAValue, masks: list[SSAValue], whole: bool = False) -> int:
        """SRAM bytes of one query row with the smallest key block (see the class
        docstring; all the keys when `whole`: a quantized attention's)."""
        d, t, dv = shape_of(q)[-1], shape_of(kt)[-1], shape_of(v)[-1]
        t = t if whole else AttentionOp.key_blocks(t, self.arch.cube[2])[0]
        held = sum(t if shape_of(m)[-1:] > (1,) else 1 for m in masks)  # (a mask's row of the block, or one value)
        scores = 2 * t * elem_bytes(f32)  # (f32, as `AttentionOp.tile_scratch_bytes`)
        return (d + d * t + t * dv + dv + AttentionOp.STATE_COLUMNS + held) * elem_bytes(q) + scores

    def fits(self, q: SSAValue, kt: SSAValue, v: SSAValue, masks: list[SSAValue], whole: bool = False) -> bool:
        return self.row_bytes(q, kt, v, masks, whole) <= self.arch.sram_bytes

    def found(self, pv: MatMulOp) -> tuple[list[Operation], MatMulOp, Operation, float,
                                           SSAValue | Operation | None, QuantizedChain | None] | None:
        """(ops before pv, q @ kt, the last op replaced, scale, mask, the quantized chain)
        of a float attention (`chain`) or of a QDQ one (`quantized_chain`)."""
        found = self.chain(pv)
        if found is not None:
            return found[0], found[1], pv, found[2], found[3], None
        qc = quantized_chain(pv, self.constants)
        return None if qc is None else (qc.ops, qc.qk, qc.end, qc.scale, qc.mask, qc)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, MatMulOp) or isinstance(op.parent_op(), FusedOp):
            return
        found = self.found(op)
        if found is None:
            return
        ops, qk, end, scale, where, qc = found
        last = [op] if end is op else [op, end]
        q, kt, v = qk.operands[0], qk.operands[1], op.operands[1]
        ranks = {len(shape_of(x)) for x in (q, kt, v)}
        loc = fused_loc([n for o in [*ops, *last] for n in node_names(o)])
        masks, causal, new = self.additive(where, loc)
        if len(ranks) != 1 or ranks.pop() < 3 or masks is None:
            return
        if not self.fits(q, kt, v, masks, whole=qc is not None):
            remark("npu-fuse", "missed", [n for o in [*ops, *last] for n in node_names(o)],
                   f"attention: not one kernel - one query row with {'all its keys' if qc else 'its smallest key block'}"
                   f" needs {self.row_bytes(q, kt, v, masks, qc is not None) - self.arch.sram_bytes} bytes more than "
                   f"a core's SRAM ({self.arch.sram_bytes} bytes)")
            return
        ins, key_rows, bshd, out_t = self.layouts(q, kt, v, end)
        out = out_t if out_t is not None else end
        if out_t is not None:  # (the result is the transpose's: its node names it last)
            loc = fused_loc([n for o in [*ops, *last, out_t] for n in node_names(o)])
        read = ins
        ins, bshd, window, views = self.windows(ins, bshd, key_rows, loc)
        try:
            att = AttentionOp(*ins, masks, scale, out.results[0].type,  # type: ignore[arg-type]
                              key_rows=key_rows, bshd=bshd, head_window=window, causal=causal,
                              quant=qc.quant if qc else None, score_table=qc.table if qc else ())
            att.verify()
        except VerifyException:
            return  # (leading dims that broadcast, a mask of another shape)
        att.location = loc
        how = [w for w, on in (("k untransposed", key_rows and 1 not in bshd),
                               ("[B, S, H, D] tensors in place: " + ", ".join("q k v out".split()[i] for i in bshd),
                                bool(bshd))) if on]
        remark("npu-fuse", "applied", node_names(att), "attention: q @ kt, scale, mask, softmax, @ v as one kernel"
               + (" in integers, its quantize/dequantize steps as written" if qc else "")
               + (" reading " + "; ".join(how) if how else ""))
        if new:
            rewriter.insert(new, InsertPoint.before(qk))
        if views:
            rewriter.insert(views, InsertPoint.before(op))
        gone = [x.owner for x, y in zip((q, kt, v), read) if x is not y]
        later = [o for x in (read if views else []) for o in self.chain_up(x)]
        rewriter.insert(att, InsertPoint.before(op))
        rewriter.replace_all_uses_with(out.results[0], att.result)
        for o in [*([out_t] if out_t else []), *reversed(last), *reversed(ops), *gone]:
            rewriter.erase(o)  # (each one's readers are gone before it)
        for o in later:
            if o.parent is not None and not any(r.uses for r in o.results):
                rewriter.erase(o)


class FuseKvAppend(RewritePattern):
    """The `kv-append` rule: an attention whose k and v are concats of two tensors along
    its keys with the same split (a decoder step: the KV cache, then the new rows) ->
    one kernel of the two concats and the attention, returning the attention and both
    concats (the `present` cache). npu-tile reads each key block from the past and
    the new rows and writes it to the present as it goes (`AppendAttentionAnchor`), so
    the cache is read once instead of copied and read again.

    A quantized model whose cache is float at its inputs and outputs (onnxruntime's
    QDQ form quantizes the past inside: quantize(past) -> concat -> attention, and
    dequantize(concat) -> the present output): when both pasts are quantizes read
    only by their concat, with a zero point of 0 (the block's rows past the cache are
    zeros, quantized or not), and both concats are read besides by one dequantize
    each whose only reader is the function's return, the kernel takes them too
    (`kv_conversions`): it reads the float past and writes the float present, each
    block converted in SRAM, instead of two kernels each way round-tripping the cache
    through DRAM."""

    def __init__(self, constants: ConstantReader, arch: Arch):
        self.constants, self.arch = constants, arch

    def kv_conversions(self, cats: list[Operation], att: Operation) -> tuple[list[Operation], list[Operation]] | None:
        """(the quantizes of the pasts, the dequantizes of the presents) the kernel takes
        (see the class docstring), or None; also None, with a remark, when one query
        row's blocks (all the keys of one head: a quantized attention's) do not fit SRAM
        with their conversions (`AppendAttentionAnchor.converting`: a float load, its
        new rows narrow and widened, the float sum, the narrow tile the attention reads
        and the float tile its tee writes, per side, the row's f32 scores, its query and
        output rows, and an alignment's slack for each of those buffers)."""
        quantizes, dequantizes = [], []
        for c in cats:
            q = c.operands[0].owner
            if not isinstance(q, QuantizeOp) or len(list(q.results[0].uses)) != 1:
                return None
            zp = self.constants.inline(q.operands[2])
            if zp is None or np.any(zp != 0):
                return None
            readers = [u.operation for u in c.results[0].uses if u.operation is not att]
            if len(readers) != 1 or not isinstance(dq := readers[0], DequantizeOp) or dq.operands[0] is not c.results[0]:
                return None
            if not dq.results[0].uses or any(not isinstance(u.operation, func.ReturnOp) for u in dq.results[0].uses):
                return None
            quantizes.append(q)
            dequantizes.append(dq)
        need = 16 * self.arch.align
        for c, q, dq in zip(cats, quantizes, dequantizes):
            shape = shape_of(c.results[0])
            axis = attr_int(dict(c.attributes), "axis", 0) % len(shape)
            keys, depth = shape[axis], shape[-2] if axis == len(shape) - 1 else shape[-1]  # (kt's keys: last)
            wide, narrow = elem_bytes(q.operands[0]), elem_bytes(q.results[0])
            need += keys * (depth * (3 * wide + 2 * narrow + elem_bytes(dq.results[0])) + elem_bytes(f32))
            need += (depth + AttentionOp.STATE_COLUMNS) * elem_bytes(f32)  # (a query row, an output row)
        if need > self.arch.sram_bytes:
            remark("npu-fuse", "missed", [n for o in (*quantizes, *dequantizes) for n in node_names(o)],
                   f"kv-append: the float cache's quantize and dequantize stay kernels of their own: one head's "
                   f"{keys} keys with their conversions need {need} bytes of SRAM, more than sram_bytes="
                   f"{self.arch.sram_bytes}")
            return None
        return quantizes, dequantizes

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, AttentionOp) or isinstance(op.parent_op(), FusedOp):
            return
        k, v = (x.owner for x in op.operands[1:3])
        if not (isinstance(k, ConcatOp) and isinstance(v, ConcatOp)) or k is v or len(k.inputs) != 2 \
                or len(v.inputs) != 2:
            return
        cats: list[Operation] = [k, v]
        splits = []
        for c, axis in zip(cats, op.key_axes()):
            rank = len(shape_of(c.results[0]))
            if attr_int(dict(c.attributes), "axis", 0) % rank != axis % rank:
                return
            splits.append(shape_of(c.operands[0])[axis])
        if splits[0] != splits[1]:
            return
        names = [n for x in (*cats, op) for n in node_names(x)]
        converted = self.kv_conversions(cats, op) if AttentionOp.quantized(dict(op.attributes)) is not None else None
        quantizes, dequantizes = converted or ([], [])
        for dq in reversed(dequantizes):  # (read only by the return: they may follow the attention)
            dq.detach()
            rewriter.insert(dq, InsertPoint.after(op))
        fuse_chain([*quantizes, *cats, op, *dequantizes], "kv-append", rewriter,
                   outs=[op.results[0], *(x.results[0] for x in (dequantizes or cats))],
                   kernel=names[-1] if names else op.name,
                   message=f"kv-append: the attention reads the {splits[0]} cached positions and the new ones in "
                           "one pass and writes the present cache as it reads (no concat copies)"
                           + ("; the float cache quantized and the present dequantized block by block in SRAM"
                              if converted else ""))


@dataclass(frozen=True)
class Fuse(ModulePass):
    """Form fused kernels (see the module docstring for the rules).

    Options: `disable=rule,...` switches rules off by name."""

    name = "npu-fuse"
    disable: tuple[str, ...] = field(default=())

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        check_rules(self.disable, self.name)
        if self.disable:
            op.attributes[DISABLED_ATTR] = ArrayAttr([StringAttr(r) for r in self.disable])
        for r in self.disable:
            remark(self.name, "missed", [], f"rule {r} disabled (npu-fuse{{disable={r}}})")
        for rule, path in plugin_rules().items():
            if rule not in self.disable:
                from lowering.patterns.apply_patterns import apply_file
                apply_file(ctx, op, path, rule)
        if "conv-bn" not in self.disable:
            fold_batchnorms(op, self.name, affine=False)
        if "attention" not in self.disable:
            rule = FuseAttention(op, ConstantReader(op, self.name), arch_of(op))
            PatternWalker(rule, apply_recursively=False).rewrite_module(op)
        if "kv-append" not in self.disable:
            append = FuseKvAppend(ConstantReader(op, self.name), arch_of(op))
            PatternWalker(append, apply_recursively=False).rewrite_module(op)
        # convs (with prologues) and cube epilogues first, so an elementwise chain never
        # steals a conv's prologue or epilogue
        prologue = "conv-prologue" not in self.disable
        normed = "matmul-prologue" not in self.disable
        if normed:
            split = SplitLayerNorm(op, ConstantReader(op, self.name), arch_of(op).sram_bytes)
            PatternWalker(split, apply_recursively=False).rewrite_module(op)
        for rule, anchors in EPILOGUE_RULES.items():
            epilogue = rule not in self.disable
            if epilogue or (prologue and rule == "conv-epilogue") or (normed and rule == "matmul-epilogue"):
                walker = PatternWalker(FuseRule(rule, anchors, prologue=prologue, epilogue=epilogue,
                                                matmul_prologue=normed, sram_bytes=arch_of(op).sram_bytes),
                                       apply_recursively=False)
                walker.rewrite_module(op)

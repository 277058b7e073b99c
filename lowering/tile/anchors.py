"""The kernel kinds: an *anchor* op (matmul/gemm, conv2d, max-pool, an elementwise op, a
generic structured op, attention, row statistics) as a tiling model (`Anchor`, registered
per op type in `TILING_MODELS` with `@tiling_model`; `make_anchor`), its loops, windows
and tile-size candidates (`tile_candidates`, `core_shares`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from math import prod
from typing import Any, ClassVar

from xdsl.dialects.builtin import TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue

from lowering.tile.kernel_shape import DimMap, KernelShape, Loop, TilingError, Window, fixed, per_tile
from npu_dialects.arch import Arch
from npu_dialects.dtypes import elem_bytes
from npu_dialects.graph import (
    AttentionOp,
    ConcatOp,
    Conv2dOp,
    DequantizeOp,
    ElementwiseOp,
    GemmOp,
    MatMulOp,
    MaxPoolOp,
    QuantizeOp,
    RowStatsOp,
    StructuredOp,
    attr_int,
    broadcast_shapes,
    shape_of,
)
from npu_dialects.tile import KernelKind

# ----------------------------------------------------------------------------------------
# Kernel kinds
# ----------------------------------------------------------------------------------------


class TableShape(tuple):
    """The shape of an epilogue's lookup table (`TableOp`): not broadcast to the output
    but loaded whole ([256]), or [C, 256] with C following the output's dim `axis`."""

    axis: int | None

    def __new__(cls, shape: Sequence[int], axis: int | None):
        obj = super().__new__(cls, tuple(shape))
        obj.axis = axis
        return obj

    def __getnewargs__(self):  # (pickled for the parallel tile search)
        return tuple(self), self.axis


def broadcast_window(operand: int, operand_shape: Sequence[int], out: Window, elem: int | None = None) -> Window:
    """Window of an operand that broadcasts to the output: size-1 dims stay at 0 (`elem`:
    its element bytes, by default the output's); a `TableShape` its own way."""
    if isinstance(operand_shape, TableShape):
        ax = operand_shape.axis
        dims = (*((out.dims[ax],) if ax is not None else ()), fixed(operand_shape[-1]))
        return Window(operand, tuple(operand_shape), dims, None, elem=out.elem if elem is None else elem)
    rank = len(out.shape)
    shape = (1,) * (rank - len(operand_shape)) + tuple(operand_shape)
    dims = tuple(_UNIT if s == 1 else o for s, o in zip(shape, out.dims))
    return Window(operand, shape, dims, None, elem=out.elem if elem is None else elem)


_UNIT = fixed(1)  # (a broadcast dim's, shared: a DimMap is immutable)


@dataclass
class Anchor:
    """The tiling interface of an anchor op (an external model, as MLIR attaches
    `TilingInterface` to ops it does not define): its loops, the windows of a tile
    plan, the tile-size candidates, and the op that computes one tile."""

    kind: KernelKind
    op: Operation
    inputs: list[SSAValue]  # anchor operands that are tiled per step (in order)
    elems: dict[int, int] = field(default_factory=dict)  # kernel input index -> its element bytes (`input_elems`)
    whole: frozenset[int] = frozenset()  # output dims a tile keeps whole (a row op in the epilogue: `row_dims`)
    exhaustive_limit: ClassVar[int] = 512
    """Tile spaces up to this many candidates are searched exhaustively; larger ones by
    hill climbing from several starts (conv layers of real networks have ~10^4)."""

    def loops(self) -> list[Loop]:
        raise NotImplementedError

    def elem(self, source: int | None) -> int:
        """Element bytes of kernel input `source` (None: of the anchor's result)."""
        return elem_bytes(self.op.results[0]) if source is None else self.elems[source]

    def window(self, source: int | None, shape: Sequence[int], dims: tuple[DimMap, ...],
               pad_value: float | None = None) -> Window:
        """A window of kernel input `source` (None: of the result), sized by its element type."""
        return Window(source, shape, dims, pad_value, elem=self.elem(source))  # type: ignore[arg-type]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        raise NotImplementedError

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        raise NotImplementedError

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """The op on the loaded `tiles` computing one output tile of type `out` (in the
        `npu_tile.loop` body): by default the op itself, re-typed."""
        return type(self.op).create(operands=list(tiles), result_types=[out], attributes=dict(self.op.attributes))

    def combine(self, ks: KernelShape) -> str | None:
        """How `npu_tile.reduce` merges the tiles of the reduction loop (None: a sum)."""
        return None


def input_elems(ins_index: dict[SSAValue, int]) -> dict[int, int]:
    """Kernel input index -> element bytes, from a kernel's `ins_index` (a value standing
    for an input, e.g. a prologue's result, never overrides the input's own type)."""
    out: dict[int, int] = {}
    for v, i in ins_index.items():
        out.setdefault(i, elem_bytes(v))
    return out


TILING_MODELS: dict[type[Operation], Callable[[Any, dict[SSAValue, int]], Anchor]] = {}
"""Anchor op class -> its tiling model; `make_anchor` looks an op's classes up in order."""


def tiling_model(*op_types: type[Operation]):
    """Register the decorated `Anchor` subclass as the tiling of `op_types` (and their subclasses)."""

    def register(cls: Any) -> Any:
        for t in op_types:
            TILING_MODELS[t] = cls
        return cls

    return register


def tile_candidates(extent: int, align: int = 1, limit: int | None = None) -> list[int]:
    """Tile sizes worth trying for one loop: powers of two, multiples of `align`, the extent."""
    out = {extent}
    p = 1
    while p < extent:
        out.add(p)
        p *= 2
    m = align
    while align > 1 and m < extent:
        out.add(m)
        m *= 2
    vals = sorted(out)
    return [v for v in vals if limit is None or v <= limit] or [vals[0]]


def three_halves(extent: int, align: int) -> list[int]:
    """3 x 2^i multiples of `align` below `extent`: between two powers of two, for an
    output tile whose accumulator would pass the SRAM at the next power."""
    out, t = [], 3 * align
    while t < extent:
        out.append(t)
        t *= 2
    return out


def core_shares(extent: int, align: int, cores: int) -> list[int]:
    """Tile sizes that give each of p = 2..cores cores one tile: ceil(extent / p) rounded
    up to a multiple of `align`, when that leaves exactly p tiles."""
    out = []
    for p in range(2, cores + 1):
        t = -(-extent // p)
        t = -(-t // align) * align
        if t < extent and -(-extent // t) == p:
            out.append(t)
    return out


@dataclass(frozen=True)
class MatmulViews:
    """A matmul's operands and result seen with one rank (numpy matmul broadcasting:
    a 1-D A is a row [1, K], a 1-D B a column [K, 1], leading 1s for missing batch
    dims), and its M, K, N."""

    a: tuple[int, ...]
    b: tuple[int, ...]
    out: tuple[int, ...]
    m: int
    k: int
    n: int


def matmul_views(op: GemmOp | MatMulOp) -> MatmulViews:
    """The rank-extended shapes of a gemm/matmul (TilingError if batch dims do not broadcast)."""
    sa, sb = tuple(shape_of(op.operands[0])), tuple(shape_of(op.operands[1]))
    p = op.params if isinstance(op, GemmOp) else dict(trans_a=False, trans_b=False)
    sa = (1,) + sa if len(sa) == 1 else sa
    sb = sb + (1,) if len(sb) == 1 else sb
    m, k = (sa[-1], sa[-2]) if p["trans_a"] else sa[-2:]
    n = sb[-2] if p["trans_b"] else sb[-1]
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    if batch is None:
        raise TilingError(f"batch dims {list(sa[:-2])} and {list(sb[:-2])} do not broadcast")
    r = len(batch)
    return MatmulViews((1,) * (r - len(sa) + 2) + sa, (1,) * (r - len(sb) + 2) + sb,
                       tuple(batch) + (m, n), m, k, n)


@tiling_model(GemmOp, MatMulOp)
class MatmulAnchor(Anchor):
    """C[..., M, N] = op(A) @ op(B) with numpy matmul semantics: loops b0, b1, ...
    over the result's batch dims (tile 1 each), m, n (parallel), k (reduction).
    Operands are viewed with the result's rank (leading 1s; a 1-D A is a row
    [1, K], a 1-D B a column [K, 1]), so a broadcast batch dim of an operand
    stays at index 0 while the loop walks the result's."""

    def __init__(self, op: GemmOp | MatMulOp, ins_index: dict[SSAValue, int]):
        if isinstance(op, GemmOp) and (op.params["alpha"] != 1.0 or op.params["beta"] != 1.0):
            raise TilingError("gemm with alpha/beta other than 1 is not supported yet")
        a, b = op.operands[0], op.operands[1]
        super().__init__(KernelKind.MATMUL, op, [a, b], input_elems(ins_index))
        self.ia, self.ib = ins_index[a], ins_index[b]
        p = op.params if isinstance(op, GemmOp) else dict(trans_a=False, trans_b=False)
        self.ta, self.tb = p["trans_a"], p["trans_b"]
        v = matmul_views(op)
        self.sa, self.sb, self.so, self.m, self.k, self.n = v.a, v.b, v.out, v.m, v.k, v.n
        self.nb = len(self.so) - 2

    exhaustive_limit: ClassVar[int] = 4096
    """A matmul's three tile sizes are searched exhaustively up to this many points (a
    hill climb over its dense candidate lists stops in local optima the sparser lists
    of powers of two did not have)."""

    def loops(self) -> list[Loop]:
        b = [Loop(f"b{i}", e) for i, e in enumerate(self.so[:self.nb])]
        return b + [Loop("m", self.m), Loop("n", self.n), Loop("k", self.k, reduction=True)]

    def _batch(self, shape: tuple[int, ...]) -> tuple[DimMap, ...]:
        return tuple(per_tile(f"b{i}", 1) if shape[i] > 1 else fixed(1) for i in range(self.nb))

    def shape(self, tile: dict[str, int]) -> KernelShape:
        tm, tn, tk = tile["m"], tile["n"], tile["k"]
        # (each window is built once per tile sizes it depends on, as `ConvAnchor.shape`)
        windows = self.__dict__.setdefault("_windows", {})
        wa, wb, out = windows.get(("a", tm, tk)), windows.get(("b", tk, tn)), windows.get(("out", tm, tn))
        if wa is None or wb is None:
            # (an integer product's operands read their zero points past K's end: (x - zx)(w - zw) = 0 there)
            zx, zw = self.op.zero_points if isinstance(self.op, MatMulOp) else (0, 0)
        if wa is None:
            am, ak = per_tile("m", tm), per_tile("k", tk)
            wa = windows["a", tm, tk] = self.window(self.ia, self.sa, self._batch(self.sa) + ((ak, am) if self.ta
                                                                                            else (am, ak)), float(zx))
        if wb is None:
            bk, bn = per_tile("k", tk), per_tile("n", tn)
            wb = windows["b", tk, tn] = self.window(self.ib, self.sb, self._batch(self.sb) + ((bn, bk) if self.tb
                                                                                            else (bk, bn)), float(zw))
        if out is None:
            out = windows["out", tm, tn] = self.window(None, self.so, self._batch(self.so) + (per_tile("m", tm),
                                                                                              per_tile("n", tn)))
        return KernelShape(KernelKind.MATMUL, self.loops(), dict(tile), [wa, wb], out)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        """Powers of two, multiples of the cube's sides, and the sizes that deal m or n
        out evenly to 2..cores cores (a weight's columns, each read by one core)."""
        cm, ck, cn = arch.cube
        c = {"m": tile_candidates(self.m, cm) + core_shares(self.m, cm, arch.cores) + three_halves(self.m, cm),
             "n": tile_candidates(self.n, cn) + core_shares(self.n, cn, arch.cores) + three_halves(self.n, cn),
             "k": tile_candidates(self.k, ck)}
        c = {name: sorted(set(v)) for name, v in c.items()}
        c.update({f"b{i}": [1] for i in range(self.nb)})
        return c

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """The product of the tiles; a gemm's bias moves to the epilogue."""
        if isinstance(self.op, GemmOp):
            return GemmOp(tiles[0], tiles[1], None, out, trans_a=self.ta, trans_b=self.tb)
        zx, zw = self.op.zero_points if isinstance(self.op, MatMulOp) else (0, 0)
        return MatMulOp(tiles[0], tiles[1], out, input_zero_point=zx, weight_zero_point=zw)


@tiling_model(Conv2dOp)
class ConvAnchor(Anchor):
    """Conv2d NCHW: loops n, co, oh, ow (parallel), ci (reduction over one group's
    input channels); input tiles carry halos. With groups, an output-channel tile
    holds whole groups (tco a multiple of the group's output channels) and reads
    their input channels; only a one-group tile may also cut its input channels."""

    def __init__(self, op: Conv2dOp, ins_index: dict[SSAValue, int]):
        super().__init__(KernelKind.CONV2D, op, [op.input, op.weight], input_elems(ins_index))
        self.ix, self.iw = ins_index[op.input], ins_index[op.weight]
        self.sx, self.sw = shape_of(op.input), shape_of(op.weight)
        self.so = shape_of(op.result)
        self.p = op.params
        self.group = self.p["group"]
        self.cog, self.cig = self.so[1] // self.group, self.sw[1]
        self.zero_points = op.zero_points  # (an integer conv's input reads its zero point past the edge: a real 0)

    def loops(self) -> list[Loop]:
        n, co, oh, ow = self.so
        return [Loop("n", n), Loop("co", co), Loop("oh", oh), Loop("ow", ow),
                Loop("ci", self.cig, reduction=True)]

    def shape(self, tile: dict[str, int]) -> KernelShape | None:
        toh, tow, tci, tco = tile["oh"], tile["ow"], tile["ci"], tile["co"]
        if self.group > 1 and (tco % self.cog or (tco > self.cog and tci != self.cig)):
            return None  # a tile must hold whole groups, and cut input channels of one group only
        groups = tco // self.cog if self.group > 1 else 1
        # (each window is built once per tile sizes it depends on: candidates share them, and what
        # a window computes of itself, `Window.nbytes` say)
        windows = self.__dict__.setdefault("_windows", {})
        wx = windows.get(("x", toh, tow, tci, groups))
        if wx is None:
            wx = windows["x", toh, tow, tci, groups] = self.input_window(toh, tow, tci, groups)
        ww = windows.get(("w", tco, tci))
        if ww is None:
            kh, kw = self.sw[2], self.sw[3]
            ww = windows["w", tco, tci] = self.window(self.iw, self.sw, (per_tile("co", tco), per_tile("ci", tci),
                                                                         fixed(kh), fixed(kw)), 0.0)
        out = windows.get(("out", tco, toh, tow))
        if out is None:
            out = windows["out", tco, toh, tow] = self.window(None, self.so, (per_tile("n", 1), per_tile("co", tco),
                                                                              per_tile("oh", toh), per_tile("ow", tow)))
        return KernelShape(KernelKind.CONV2D, self.loops(), dict(tile), [wx, ww], out, window_area=groups)

    def input_window(self, toh: int, tow: int, tci: int, groups: int) -> Window:
        """The input tile (with its halo) of an output tile of toh x tow, tci input channels
        (of each of `groups` groups)."""
        (sh, sw), (dh, dw) = self.p["strides"], self.p["dilations"]
        pt, pl = self.p["pads"][0], self.p["pads"][1]
        kh, kw = self.sw[2], self.sw[3]
        ih, iw = (toh - 1) * sh + (kh - 1) * dh + 1, (tow - 1) * sw + (kw - 1) * dw + 1
        if self.group > 1:  # the input channels of this tile's groups
            ci_dim = DimMap((("co", groups * self.cig), ("ci", tci)), 0, groups * tci)
        else:
            ci_dim = per_tile("ci", tci)
        return self.window(self.ix, self.sx, (per_tile("n", 1), ci_dim, DimMap((("oh", toh * sh),), -pt, ih),
                                              DimMap((("ow", tow * sw),), -pl, iw)), float(self.zero_points[0]))

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        _, ck, cn = arch.cube
        n, co, oh, ow = self.so
        if self.group > 1:
            cos = sorted({self.cog * m for m in tile_candidates(self.group)})
        else:
            cos = tile_candidates(co, cn)
        return {"n": [1], "co": cos, "oh": tile_candidates(oh), "ow": tile_candidates(ow), "ci": tile_candidates(self.cig, ck)}

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """An unpadded conv of the (padded) input window, over the groups the tile holds;
        the bias moves to the epilogue."""
        zx, zw = self.zero_points
        return Conv2dOp(tiles[0], tiles[1], None, out, strides=self.p["strides"], dilations=self.p["dilations"],
                        group=ks.window_area, input_zero_point=zx, weight_zero_point=zw)


@tiling_model(MaxPoolOp)
class PoolAnchor(Anchor):
    """Max-pool NCHW: loops n, c, oh, ow (parallel); padded reads give -inf."""

    def __init__(self, op: MaxPoolOp, ins_index: dict[SSAValue, int]):
        super().__init__(KernelKind.POOL, op, [op.input], input_elems(ins_index))
        self.ix = ins_index[op.input]
        self.sx, self.so = shape_of(op.input), shape_of(op.result)
        self.p = op.params

    def loops(self) -> list[Loop]:
        n, c, oh, ow = self.so
        return [Loop("n", n), Loop("c", c), Loop("oh", oh), Loop("ow", ow)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        (sh, sw), (dh, dw) = self.p["strides"], self.p["dilations"]
        (kh, kw), (pt, pl) = self.p["kernel"], self.p["pads"][:2]
        toh, tow, tc = tile["oh"], tile["ow"], tile["c"]
        ih, iw = (toh - 1) * sh + (kh - 1) * dh + 1, (tow - 1) * sw + (kw - 1) * dw + 1
        wx = self.window(self.ix, self.sx, (per_tile("n", 1), per_tile("c", tc),
                                       DimMap((("oh", toh * sh),), -pt, ih),
                                       DimMap((("ow", tow * sw),), -pl, iw)), float("-inf"))
        out = self.window(None, self.so, (per_tile("n", 1), per_tile("c", tc), per_tile("oh", toh),
                                     per_tile("ow", tow)))
        return KernelShape(KernelKind.POOL, self.loops(), dict(tile), [wx], out, window_area=kh * kw)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        n, c, oh, ow = self.so
        return {"n": [1], "c": tile_candidates(c), "oh": tile_candidates(oh), "ow": tile_candidates(ow)}

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """An unpadded max-pool of the window (reads outside the input come as -inf)."""
        return MaxPoolOp(tiles[0], out, kernel=self.p["kernel"], strides=self.p["strides"],
                         dilations=self.p["dilations"])


@tiling_model(ElementwiseOp)
class EltwiseAnchor(Anchor):
    """An elementwise op over the output's dimensions (d0, d1, ...), inputs broadcast."""

    def __init__(self, op: ElementwiseOp, ins_index: dict[SSAValue, int]):
        super().__init__(KernelKind.ELTWISE, op, list(op.operands), input_elems(ins_index))
        self.idx = [ins_index[v] for v in op.operands]
        self.shapes = [shape_of(v) for v in op.operands]
        self.so = shape_of(op.results[0])

    def loops(self) -> list[Loop]:
        return [Loop(f"d{i}", e) for i, e in enumerate(self.so)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        out = self.window(None, self.so, tuple(per_tile(f"d{i}", tile[f"d{i}"]) for i in range(len(self.so))))
        loads = [broadcast_window(i, s, out, self.elems[i]) for i, s in zip(self.idx, self.shapes)]
        return KernelShape(KernelKind.ELTWISE, self.loops(), dict(tile), loads, out)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        c: dict[str, list[int]] = {}
        for i, e in enumerate(self.so):
            inner = i == len(self.so) - 1
            c[f"d{i}"] = [e] if i in self.whole else \
                tile_candidates(e) if inner or e <= 64 else tile_candidates(e)[-4:] + [1]
        return c


@tiling_model(StructuredOp)
class GenericAnchor(Anchor):
    """A structured graph op (`StructuredOp`): loops over the output dims, tiles cut
    only the dims its `tile_map` allows, input windows follow the map."""

    def __init__(self, op: StructuredOp, ins_index: dict[SSAValue, int]):
        super().__init__(KernelKind.APPLY, op, list(op.operands), input_elems(ins_index))
        self.idx = [ins_index[v] for v in op.operands]
        self.shapes = [shape_of(v) for v in op.operands]
        self.so = shape_of(op.results[0])
        self.map = op.tile_map()
        self.cost = op.VECTOR_COST
        self.structured = op

    def loops(self) -> list[Loop]:
        return [Loop(f"d{i}", e) for i, e in enumerate(self.so)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        out, loads = self.windows(tile)
        op, ins, dtype = type(self.structured), [w.sizes for w in loads], self.structured.vector_type()
        attrs = dict(self.structured.attributes)
        return KernelShape(KernelKind.APPLY, self.loops(), dict(tile), loads, out, window_area=self.cost,
                           tile_cycles=lambda arch: op.tile_cycles_of(attrs, arch, ins, out.sizes, dtype),
                           scratch=lambda arch: op.tile_scratch_bytes_of(attrs, arch, ins, out.sizes))

    def windows(self, tile: dict[str, int]) -> tuple[Window, list[Window]]:
        """The output window and the input windows (in operand order) of a tile plan."""
        out = self.window(None, self.so, tuple(per_tile(f"d{i}", tile[f"d{i}"]) for i in range(len(self.so))))
        loads = []
        for i, (shape, follows) in zip(self.idx, zip(self.shapes, self.map.inputs)):
            dims = []
            for extent, f in zip(shape, follows):
                if f.out_dim is None:
                    dims.append(fixed(extent))
                else:
                    t = tile[f"d{f.out_dim}"]
                    dims.append(DimMap(((f"d{f.out_dim}", t * f.scale),), f.offset,
                                       (t - 1) * f.scale + 1 + f.halo))
            loads.append(self.window(i, shape, tuple(dims), self.map.pad_value))
        return out, loads

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        """Powers of two and the sizes that deal a dim out evenly to 2..cores cores, for
        each tileable dim (197 rows: 4 tiles of 50, not 3 of 64 and one of 5)."""
        return {f"d{i}": (sorted(set(tile_candidates(e) + core_shares(e, 1, arch.cores)))
                          if self.map.tileable[i] and i not in self.whole else [e]) for i, e in enumerate(self.so)}

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """The op with the attributes it gives for these input windows (`tile_attrs`)."""
        attrs = self.structured.tile_attrs([shape_of(v) for v in tiles])
        return type(self.op).create(operands=list(tiles), result_types=[out], attributes=attrs)


@tiling_model(AttentionOp)
class AttentionAnchor(GenericAnchor):
    """Attention (`AttentionOp`): the generic loops over the output (leading dims and
    query rows cut, Dv whole) and a reduction loop `t` over key blocks
    (`AttentionOp.key_blocks`, multiples of the cube's N). A tile loads its query
    rows, its head's kt and v blocks and the mask's block (a causal mask: its rows'
    limits and its keys' positions). With more than one block
    the tile op is `online`: its tiles are online-softmax states (2 more columns,
    counted as scratch with the block's scores), merged by `npu_tile.reduce`."""

    def __init__(self, op: AttentionOp, ins_index: dict[SSAValue, int]):
        super().__init__(op, ins_index)
        self.keys = op.dims()[3]
        self.attrs = op.tile_attrs()  # (a tile's: its inputs hold its heads only)
        self.k_dim, self.v_dim = op.key_axes()

    def loops(self) -> list[Loop]:
        return [*super().loops(), Loop("t", self.keys, reduction=True)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        out, loads = self.windows(tile)
        tt = tile["t"]
        if tt < self.keys:  # kt's keys, v's rows and the masks' last dims (unless broadcast) follow t
            keyed = [(1, self.k_dim), (2, self.v_dim)]
            keyed += [(i, -1) for i in range(3, len(loads)) if loads[i].shape[-1] > 1]
            for i, d in keyed:
                dims = list(loads[i].dims)
                dims[d] = per_tile("t", tt)
                loads[i] = replace(loads[i], dims=tuple(dims))
        state = (*out.sizes[:-1], out.sizes[-1] + (AttentionOp.STATE_COLUMNS if tt < self.keys else 0))
        extra = (prod(state) - prod(out.sizes)) * out.elem
        ins = AttentionOp.canonical_shapes(self.attrs, [w.sizes for w in loads], state)[0]
        cout = AttentionOp.canonical_shapes(self.attrs, [], out.sizes)[1]
        return KernelShape(KernelKind.APPLY, self.loops(), dict(tile), loads, out, window_area=self.cost,
                           tile_cycles=lambda arch: AttentionOp.tile_cycles_of(self.attrs, arch, [w.sizes for w in loads],
                                                                               state, self.structured.vector_type()),
                           scratch=lambda arch: AttentionOp.tile_scratch_bytes_of(self.attrs, arch, ins, cout) + extra,
                           finish=(lambda arch: AttentionOp.finish_cycles(arch, prod(cout[:-1]), cout[-1]))
                           if tt < self.keys else None)

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        whole = AttentionOp.quantized(self.attrs) is not None  # (its probabilities round: keys whole)
        return {**super().candidates(arch), "t": [self.keys] if whole else AttentionOp.key_blocks(self.keys, arch.cube[2])}

    def online(self, ks: KernelShape) -> bool:
        return ks.tile["t"] < self.keys

    def tile_op(self, tiles: Sequence[SSAValue], out: TensorType, ks: KernelShape) -> Operation:
        """The attention of the tiles; `online` (its state) when the keys come in blocks."""
        if not self.online(ks):
            return super().tile_op(tiles, out, ks)
        shape = list(out.get_shape())
        state = TensorType(out.element_type, [*shape[:-1], shape[-1] + AttentionOp.STATE_COLUMNS])
        return AttentionOp.create(operands=list(tiles), result_types=[state],
                                  attributes={**self.structured.tile_attrs(), "online": UnitAttr()})

    def combine(self, ks: KernelShape) -> str | None:
        return "online_softmax" if self.online(ks) else None


class AppendAttentionAnchor(AttentionAnchor):
    """Attention over a KV cache with new rows appended (npu-fuse's `kv-append`): the
    kernel's ops are k = concat(past_k, new_k) and v = concat(past_v, new_v) along the
    keys, the attention, and k and v are results too (`present`). The attention's
    tiling, with each key block read as the past's block (`loads`) plus the new
    rows' block (`seams`), both zero-padded outside their tensor, so the block
    spanning the seam is their sum, and written to the present every step (`tees`,
    results 1 and 2): the cache is read once and written once, not copied and read
    again. `npu-bufferize` lands both parts in one slot, the new rows only at the
    step whose block holds them (`tile_loop_patterns.seam_pairs`). `conversions`: a
    float cache's quantizes and dequantizes, computed on each block (`converting`)."""

    def __init__(self, op: AttentionOp, ins_index: dict[SSAValue, int], cats: tuple[ConcatOp, ConcatOp],
                 conversions: Sequence[tuple[QuantizeOp, DequantizeOp]] = ()):
        pasts = [q.operands[0] for q, _ in conversions] or [c.inputs[0] for c in cats]
        base = {**ins_index, op.operands[1]: ins_index[pasts[0]], op.operands[2]: ins_index[pasts[1]]}
        super().__init__(op, base)
        self.past = [shape_of(c.inputs[0]) for c in cats]
        self.new = [(ins_index[c.inputs[1]], shape_of(c.inputs[1])) for c in cats]
        self.conversions = list(conversions)
        # (the scale and zero point of each side's quantize, then of its dequantize: each input loaded once,
        # `scalar_of` its position among the loads for each of the four per side)
        params = [v for q, dq in self.conversions for v in (*q.operands[1:], *dq.operands[1:])]
        shapes = {ins_index[v]: shape_of(v) for v in params}
        self.scalars = list(shapes.items())
        self.scalar_of = [list(shapes).index(ins_index[v]) for v in params]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        ks = super().shape(tile)
        loads, tees, seams = list(ks.loads), [], []
        for i, (d, past, (src, new)) in enumerate(zip((self.k_dim, self.v_dim), self.past, self.new)):
            w = loads[1 + i]
            out = elem_bytes(self.conversions[i][1].results[0]) if self.conversions else w.elem
            tees.append(Window(1 + i, w.shape, w.dims, elem=out))
            loads[1 + i] = replace(w, shape=past, pad_value=0.0)
            dims = list(w.dims)
            dims[d] = DimMap(dims[d].terms, dims[d].const - past[d], dims[d].size)
            seams.append(self.window(src, new, tuple(dims), 0.0))
        ks.loads, ks.tees, ks.seams = loads, tees, seams
        if self.conversions:
            self.converting(ks)
        return ks

    def converting(self, ks: KernelShape) -> None:
        """A float cache's conversions in SRAM (npu-fuse's `kv-append` taking the quantizes
        of the past and the dequantizes of the present): each step quantizes the float
        block plus the new rows' block dequantized by the same scale (zeros past the
        cache and before the new rows: zero points of 0; the new rows come back exact,
        integers of at most 8 bits through one f32 multiply and divide), and
        dequantizes the sum for the present's tee. The new rows' blocks are loads of
        their own after the attention's, then the scalars (`kv_loads`); the four
        computed tiles per side are scratch, their vector passes add to a step's."""
        blocks = [prod(w.sizes) for w in ks.tees]
        narrow = [elem_bytes(q.results[0]) for q, _ in self.conversions]
        wide = [ks.loads[1 + i].elem for i in range(len(ks.tees))]
        extra = sum(n * (2 * f + e + t.elem) for n, f, e, t in zip(blocks, wide, narrow, ks.tees))
        scalars = [self.window(i, shape, tuple(fixed(e) for e in shape)) for i, shape in self.scalars]
        ks.loads += [*ks.seams, *scalars]
        ks.kv_loads, ks.seams = len(ks.seams) + len(scalars), []
        base_cycles, base_scratch = ks.tile_cycles, ks.scratch
        assert base_cycles is not None and base_scratch is not None  # (an attention's tile prices both)

        def cycles(arch: Arch) -> int:
            return base_cycles(arch) + sum(4 * arch.vector_cycles(n) for n in blocks)  # (four f32 passes a side)
        ks.tile_cycles = cycles
        ks.scratch = lambda arch: base_scratch(arch) + extra


def append_attention(ops: Sequence[Operation], ins_index: dict[SSAValue, int]) -> AppendAttentionAnchor | None:
    """The `AppendAttentionAnchor` of a kernel of two concats and the attention reading
    them as k and v (npu-fuse's `kv-append`), else None; with a float cache, the
    quantizes of the pasts come first and the dequantizes of the concats last."""
    conversions: list[tuple[QuantizeOp, DequantizeOp]] = []
    if len(ops) == 7:
        qs, dqs = ops[:2], ops[5:]
        if not all(isinstance(q, QuantizeOp) and q.operands[0] in ins_index and all(x in ins_index for x in q.operands[1:])
                   for q in qs) or not all(isinstance(dq, DequantizeOp) and all(x in ins_index for x in dq.operands[1:])
                                           for dq in dqs):
            return None
        conversions = list(zip(qs, dqs))  # type: ignore[arg-type]
        ops = ops[2:5]
    if len(ops) != 3 or not isinstance(att := ops[-1], AttentionOp):
        return None
    cats = [o.owner for o in att.operands[1:3]]
    outside = {q.results[0] for q, _ in conversions}  # (the quantized pasts: made in the kernel)
    if not (isinstance(k := cats[0], ConcatOp) and isinstance(v := cats[1], ConcatOp)) or not all(
            c in ops[:2] and len(c.inputs) == 2 and all(x in ins_index or x in outside for x in c.inputs)
            for c in (k, v)):
        return None
    if conversions and not all(c.inputs[0] is q.results[0] and dq.operands[0] is c.results[0]
                               for c, (q, dq) in zip((k, v), conversions)):
        return None
    anchor = AppendAttentionAnchor(att, ins_index, (k, v), conversions)
    for c, d in zip((k, v), (anchor.k_dim, anchor.v_dim)):
        rank = len(shape_of(c.result))
        if attr_int(dict(c.attributes), "axis", 0) % rank != d % rank:
            raise TilingError(f"'{c.name}' must join along the attention's keys (axis {d % rank})")
    if anchor.past[0][anchor.k_dim] != anchor.past[1][anchor.v_dim]:
        raise TilingError("the past keys and values must hold the same number of positions")
    return anchor


@tiling_model(RowStatsOp)
class RowStatsAnchor(GenericAnchor):
    """Row statistics (`RowStatsOp`): loops over the rows (the output's leading dims,
    its state dim whole) and a reduction loop `c` over column blocks, whose states
    `npu_tile.reduce` merges by the op's `combine`. Softmax blocks may run past the
    row's end (read as -inf: no weight); moment blocks divide it (a padded column
    would count)."""

    def __init__(self, op: RowStatsOp, ins_index: dict[SSAValue, int]):
        super().__init__(op, ins_index)
        self.cols = self.shapes[0][-1]
        self.softmax = op.kind.data == "softmax"

    def loops(self) -> list[Loop]:
        return [*super().loops(), Loop("c", self.cols, reduction=True)]

    def shape(self, tile: dict[str, int]) -> KernelShape:
        out, (x,) = self.windows(tile)
        dims = (*x.dims[:-1], per_tile("c", tile["c"]))
        x = replace(x, dims=dims, pad_value=float("-inf") if self.softmax else None)
        ins, attrs = [x.sizes], dict(self.op.attributes)
        return KernelShape(KernelKind.APPLY, self.loops(), dict(tile), [x], out,
                           tile_cycles=lambda arch: RowStatsOp.tile_cycles_of(attrs, arch, ins, out.sizes))

    def candidates(self, arch: Arch) -> dict[str, list[int]]:
        cols = tile_candidates(self.cols) if self.softmax else [b for b in range(1, self.cols + 1)
                                                                 if self.cols % b == 0]
        return {**super().candidates(arch), "c": cols}

    def combine(self, ks: KernelShape) -> str | None:
        return "row_stats"


def make_anchor(op: Operation, ins_index: dict[SSAValue, int]) -> Anchor:
    """The tiling model of a kernel's anchor op (TilingError if its class has none)."""
    model = next((TILING_MODELS[c] for c in type(op).__mro__ if c in TILING_MODELS), None)
    if model is None:
        raise TilingError(f"no tiling for '{op.name}'")
    return model(op, ins_index)

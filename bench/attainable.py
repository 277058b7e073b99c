"""The attainable bound: cycles no schedule of a model on an arch goes below, the
roofline's or more where one core's SRAM limits reuse. `attainable_cycles` reads a
graph-level module after the graph optimisations (`graph_module`), where the roofline's
MACs and minimum bytes come from (`lowering.tile.roofline`), so attainable >= roofline:

    attainable = max(MACs / (cube peak x cores), bytes / dram_bw)

where bytes = the roofline's compulsory bytes (model inputs, outputs and used weights
once; intermediate activations free: any may stay on chip) plus, per product against
weights too large to stay on chip (`Product`), what Hong and Kung's bound adds beyond
its own compulsory bytes. `bench/roofline.py` and `bench/transformers.py` show it
beside the roofline, `bench/geomean.py` its geometric mean.

Algorithm and argument: see `Product`, `hk_words` and `memory_bytes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import onnx
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from lowering.tile.roofline import VIEWS, macs_by_type, model_work
from npu_dialects import dtypes
from npu_dialects.arch import Arch
from npu_dialects.graph import ConstantOp, GraphOp
from npu_dialects.graph.base import shape_of
from npu_dialects.graph.nn import Conv2dOp, GemmOp, MatMulOp
from npu_dialects.graph.tensor import SliceOp, TransposeOp

PICKS = (SliceOp, TransposeOp)
"""Consumers whose result elements are elements of their operand, each at most once."""


@dataclass(frozen=True)
class Product:
    """Cube ops against weights that share an operand, as one product for the bound.

    `macs` of them; `kappa`, how many of their (MAC, operand element) incidences one
    element of an activation operand or result can stand for (1 for a matmul: each
    element of A is one row-column entry; for a convolution as implicit GEMM, one input
    element is up to ceil(kh/sh) x ceil(kw/sw) entries of the im2col matrix, kh x kw
    when dilated; times any expansion of a producer or reduction of a consumer, see
    `_spread`); `reads`, the distinct activation operands and weights (views looked
    through); `writes`, the results."""

    macs: int
    kappa: int
    reads: frozenset[SSAValue]
    writes: frozenset[SSAValue]

    @property
    def values(self) -> frozenset[SSAValue]:
        return self.reads | self.writes

    @property
    def weight_bytes(self) -> int:
        return sum(dtypes.nbytes(v) for v in self.reads if _is_weight(v))

    @property
    def nbytes(self) -> int:
        return sum(dtypes.nbytes(v) for v in self.values)

    @property
    def elem_bytes(self) -> int:
        """The smallest element size among the values: S words of it fill one SRAM."""
        return min(dtypes.elem_bytes(dtypes.element_type(v)) for v in self.values)

    def merged(self, other: Product) -> Product:
        """Both as one product (the faces of their union bound the MACs of both: by
        Cauchy-Schwarz, sum sqrt(a_i b_i c_i) <= sqrt(sum a_i sum b_i sum c_i))."""
        return Product(self.macs + other.macs, max(self.kappa, other.kappa), self.reads | other.reads,
                       self.writes | other.writes)


def hk_words(macs: int, kappa: int, sram_words: int, cores: int) -> float:
    """Words at least moved between DRAM and `cores` SRAMs of `sram_words` each by the
    `macs` of a product whose operands and result are read from and written to DRAM.

    Smith and van de Geijn's tight form of Hong and Kung's bound: cut a core's run into
    phases of S transfers; in a phase at most 2S elements of A, B and C are at hand (S
    held, S moved), and by Loomis-Whitney it does at most sqrt(|A| |B| |C|) MACs; their
    optimisation gives 2 F / sqrt(S) - 2 S words for F MACs on one core. An element of
    an implicit-GEMM operand standing for `kappa` matrix entries (`Product.kappa`)
    scales the MACs a phase can do by sqrt(kappa) (Demmel and Dinh's convolution bound
    has the same sqrt(filter / stride) factor). Summed over cores, F = sum of theirs:
    2 F / sqrt(kappa S) - 2 S x cores, never below 0."""
    return max(0.0, 2 * macs / math.sqrt(kappa * sram_words) - 2 * sram_words * cores)


def _is_weight(v: SSAValue) -> bool:
    return isinstance(v.owner, ConstantOp) and v.owner.weight is not None


def _source(v: SSAValue) -> SSAValue:
    """The value a reshape chain views (a concat is not looked through: it is several)."""
    while isinstance(v.owner, VIEWS) and len(v.owner.operands) == 1:
        v = v.owner.operands[0]
    return v


def _elements(v: SSAValue) -> int:
    return math.prod(shape_of(v))


def _spread(act: SSAValue, result: SSAValue) -> int:
    """How many elements of the activation operand one element read from DRAM can stand
    for (its producer's result over its largest operand that is not a weight: a fused
    broadcast, upsampling, gather or small product makes many from one), times how many
    result elements one element written can stand for (the result over the smallest
    result of a consumer that combines its elements, as a fused pooling epilogue or a
    product kept on chip does; slices and transposes only pick). At least 1."""
    up = 1.0
    src = _source(act)
    if isinstance(src.owner, GraphOp) and not isinstance(src.owner, ConstantOp):
        ins = [_elements(o) for o in src.owner.operands if not _is_weight(_source(o))]
        up = _elements(src) / max(1, max(ins, default=1))
    down = max((_elements(result) / max(1, min(_elements(r) for r in op.results))
                for op in _consumers(result) if op.results and not isinstance(op, PICKS)), default=1.0)
    return max(1, math.ceil(up)) * max(1, math.ceil(down))


def _consumers(v: SSAValue) -> list[Operation]:
    """The ops reading `v`, views looked through."""
    out: list[Operation] = []
    for use in v.uses:
        op = use.operation
        out += [c for r in op.results for c in _consumers(r)] if isinstance(op, VIEWS) else [op]
    return out


def _window(op: Conv2dOp) -> int:
    """Entries of the im2col matrix one input element of a convolution is (at most)."""
    _, _, kh, kw = shape_of(op.weight)
    p = op.params
    if any(d != 1 for d in p["dilations"]):
        return kh * kw
    (sh, sw) = p["strides"]
    return math.ceil(kh / sh) * math.ceil(kw / sw)


def product_of(op: Operation) -> Product | None:
    """The product of one cube op with exactly one weight operand (None for others:
    activation x activation products such as attention are left out)."""
    if isinstance(op, Conv2dOp):
        act, weight, window = op.input, op.weight, _window(op)
    elif isinstance(op, GemmOp | MatMulOp):
        a, b = op.operands[0], op.operands[1]
        if _is_weight(_source(a)) == _is_weight(_source(b)):
            return None
        act, weight, window = (b, a, 1) if _is_weight(_source(a)) else (a, b, 1)
    else:
        return None
    weight = _source(weight)
    if not _is_weight(weight):
        return None
    result = op.results[0]
    return Product(op.macs(), window * _spread(act, result), frozenset((_source(act), weight)), frozenset((result,)))


def products(module: ModuleOp) -> list[Product]:
    """The products against weights of the graph-level functions of `module`, those
    that share an operand (an activation several projections read, a weight used
    twice) merged into one: a transfer of a shared element may serve them all."""
    out: list[Product] = []
    for func in module.ops:
        if not isinstance(func, FuncOp) or not func.body.blocks:
            continue
        for op in func.walk():
            p = product_of(op)
            if p is None:
                continue
            for q in [q for q in out if q.reads & p.reads]:
                out.remove(q)
                p = p.merged(q)
            out.append(p)
    return out


def _model_values(module: ModuleOp) -> set[SSAValue]:
    """What the roofline's compulsory bytes count: function arguments, weights, results."""
    out: set[SSAValue] = set()
    for func in module.ops:
        if isinstance(func, FuncOp) and func.body.blocks:
            out |= set(func.body.block.args)
            for op in func.walk():
                if isinstance(op, ReturnOp) and op.parent_op() is func:
                    out |= {_source(v) for v in op.operands}
    return out


def spills(p: Product, arch: Arch) -> bool:
    """Whether the weights of `p` exceed every core's SRAM together (see `memory_bytes`)."""
    return p.weight_bytes > arch.cores * arch.sram_bytes


def product_bytes(p: Product, arch: Arch) -> int:
    """DRAM bytes a product moves at least when its operands and result cross DRAM: each
    value once, or the Hong-Kung words (`hk_words`) in its smallest element size."""
    words = hk_words(p.macs, p.kappa, arch.sram_bytes // p.elem_bytes, arch.cores)
    return max(p.nbytes, math.ceil(words) * p.elem_bytes)


def memory_bytes(module: ModuleOp, arch: Arch) -> int:
    """DRAM bytes any schedule of `module` on `arch` moves at least: the roofline's
    compulsory bytes, with every product that `spills` counted by `product_bytes`
    instead of the compulsory bytes of its values (so nothing counts twice).

    The argument. An activation may stay on chip between two ops only if they run
    interleaved on a core (a layer group, streaming strips or rows); the bound assumes
    that a product whose weights do not fit all SRAMs together is never so interleaved,
    so it reads its activation operand from DRAM (or makes it element for element from
    what it reads, as a fused prologue: `_spread` covers one that expands) and writes
    its result there (or an elementwise or reducing function of it). Running it
    interleaved would re-read its weights per block of rows held on chip; with rows of
    h words that is m h / S times the weights, against the 2 m / sqrt(S) times of the
    bound: the assumption holds when h >= 2 sqrt(S), e.g. for hidden sizes from 724 f32
    at 512 KiB, and is the one thing the bound assumes. Products with smaller weights
    count only their compulsory bytes, intermediates only when they are a spilling
    product's operand or result (each transfer then belongs to one product: products
    sharing what they read are merged, a result written and read back are two)."""
    _, compulsory = model_work(module)
    model = _model_values(module)
    extra = 0
    for p in products(module):
        if spills(p, arch):
            shared = sum(dtypes.nbytes(v) for v in p.values if v in model or _is_weight(v))
            extra += product_bytes(p, arch) - shared
    return compulsory + extra


def attainable_cycles(module: ModuleOp, arch: Arch) -> int:
    """The attainable bound of a graph-level module on `arch` (the module docstring):
    `Arch.roofline_cycles` of its MACs by type and `memory_bytes`."""
    by_type = macs_by_type(module)
    macs: int | dict[str, int] = by_type if set(by_type) - {"f32"} else sum(by_type.values())
    return arch.roofline_cycles(macs, memory_bytes(module, arch))


def graph_module(model: onnx.ModelProto, arch: Arch, **options) -> ModuleOp:
    """`model` imported and through the graph optimisations of `npu-default` with
    `options` (as `compile_module(..., stage="graph")`)."""
    module, weights = import_model(model, arch)
    return compile_module(module, arch, weights, stage="graph", verify_each=False, **options)


def attainable(model: onnx.ModelProto, arch: Arch, **options) -> int:
    """`attainable_cycles` of an ONNX model compiled with `options`."""
    return attainable_cycles(graph_module(model, arch, **options), arch)

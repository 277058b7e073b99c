"""`npu-shape-inference`: recompute every graph op's result type from its operands.

Gives every `npu_graph` op (in `npu_graph.fused` bodies too) the result shapes its
operands imply, then updates the function signature from `func.return`. On a
consistent module this changes nothing; it matters when inputs are re-typed, e.g.
for a dynamic-shape bucket. Assumes graph-level IR (`npu_graph` ops in `func.func`
bodies); other ops are left alone.

Options: `input-shapes` (`x=4x3x224x224,y=4x8`; empty = only propagate) first
re-types the named arguments of `@main`. Errors (`CompileError`, naming the op and
its ONNX node): an op that cannot take its new operand shapes (shapes that do not
broadcast or multiply, a reshape that cannot follow, a verifier complaint after
re-typing), an unknown input name or malformed shape in `input-shapes`.
Limit: constants computed at import from the old shapes are not recomputed, and are
silently used where they still broadcast: import such a model per bucket instead.

Algorithm
---------
Walks each function in program order (into `npu_graph.fused` bodies too).
`npu-shape-inference{input-shapes="x=4x3x224x224,y=4x8"}` first re-types the
named arguments of `@main` (names are the ONNX input names in `npu.inputs`, else
the argument names `%x` or `argN`), then propagates. A caller that re-typed the
block arguments itself and left `function_type` alone gets the same result (the
old argument types are read from `function_type`).

How a result shape is found, in order of preference:
1. the op's own `infer_shape()` (a shape, or a tuple of shapes for several
   results; None means the operands are not acceptable);
2. a rule here for ops that have shape helpers but no `infer_shape` yet
   (elementwise broadcasting, matmul, gemm, maxpool, transpose), and for
   `npu_graph.reshape`, which only records its result shape: when its element
   count no longer matches, each changed input dim is followed into the output
   dim that holds it (`[1,16,5,5] -> [1,400]` becomes `[4,16,5,5] -> [4,400]`,
   `[1,8,32] -> [8,32]` becomes `[4,8,32] -> [32,32]`); when no single output
   dim holds it (a dim split across several), it is an error. Likewise an
   `npu_graph.slice` that took a whole input dim (Split, `x[:, a:b]`: bounds the
   importer resolved against the old shape) is widened to take the whole new dim;
3. otherwise the op's reference semantics evaluated on zero arrays of the
   operand shapes (inline constants with their values): exact for ops whose
   semantics do not read their own result type, and cheap for modest sizes.

Limit: constants the importer computed from the old shapes (Shape-derived
subgraphs, ConstantOfShape, an attention mask sized for the old sequence) are
not recomputed; where they still broadcast, the result is silently computed with
them. A model whose constants depend on its input shapes must be imported per
bucket instead (`lowering/importer/buckets.py` binds the dims before import).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from lowering.errors import CompileError
from npu_dialects.entry import INPUTS_ATTR, find_main, io_names
from npu_dialects.graph import (
    ConstantOp,
    ElementwiseOp,
    FusedOp,
    GemmOp,
    GraphOp,
    MatMulOp,
    MaxPoolOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
    YieldOp,
    broadcast_shapes,
    conv_out_shape,
    int_array,
    ints,
    matmul_shape,
    shape_of,
)

PASS_NAME = "npu-shape-inference"

Shape = tuple[int, ...]


class ShapeError(Exception):
    """An op cannot take its operand shapes (the pass turns it into a CompileError)."""


# --------------------------------------------------------------------------------------
# Shape rules
# --------------------------------------------------------------------------------------


def _elementwise(op: ElementwiseOp) -> Shape:
    shape = broadcast_shapes(*[shape_of(o) for o in op.operands])
    if shape is None:
        raise ShapeError("they do not broadcast")
    return shape


def _matmul(op: MatMulOp) -> Shape:
    shape = matmul_shape(shape_of(op.a), shape_of(op.b))
    if shape is None:
        raise ShapeError("they do not multiply")
    return shape


def _gemm(op: GemmOp) -> Shape:
    if len(shape_of(op.a)) != 2 or len(shape_of(op.b)) != 2:
        raise ShapeError("A and B must be 2-D")
    m, _, n = op.mkn()  # VerifyException when the inner dims differ
    return (m, n)


def _maxpool(op: MaxPoolOp) -> Shape:
    x, p = shape_of(op.input), op.params
    if len(x) != 4:
        raise ShapeError("the input must be 4-D NCHW")
    shape = conv_out_shape(x, (x[1], 1, *p["kernel"]), p["strides"], p["pads"], p["dilations"])
    if shape is None:
        raise ShapeError(f"the input is smaller than the {p['kernel'][0]}x{p['kernel'][1]} window")
    return shape


def _transpose(op: TransposeOp) -> Shape:
    x, perm = shape_of(op.input), ints(op.perm, ())
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"perm {list(perm)} does not fit rank {len(x)}")
    return tuple(x[p] for p in perm)


SHAPE_RULES: dict[type[Operation], Callable[..., Shape]] = {
    ElementwiseOp: _elementwise,
    MatMulOp: _matmul,
    GemmOp: _gemm,
    MaxPoolOp: _maxpool,
    TransposeOp: _transpose,
}
"""Ops (or their base classes) without an `infer_shape` -> a function giving the result
shape from the op's (already re-typed) operands (ShapeError when they are not acceptable)."""


def follow_reshape(old_in: Shape, new_in: Shape, old_out: Shape) -> Shape:
    """The result shape of a reshape whose input changed from `old_in` to `new_in`
    (it used to give `old_out`): each changed input dim scales the output dim that is
    exactly a product of whole input dims including it (the tightest such dim,
    nearest in position). Raises ShapeError when there is none."""
    if math.prod(new_in) == math.prod(old_out):
        return old_out
    if len(old_in) != len(new_in):
        raise ShapeError(f"the input rank changed from {len(old_in)} to {len(new_in)}")
    cur, out = list(old_in), list(old_out)
    for d in range(len(cur)):
        if cur[d] == new_in[d]:
            continue
        if cur[d] == 0:
            raise ShapeError(f"input dim {d} was empty")
        best: tuple[int, int, int] | None = None  # (span, distance, k)
        for k in range(len(out)):
            lo, hi = math.prod(out[:k]), math.prod(out[:k + 1])
            for s in range(d + 1):
                if math.prod(cur[:s]) != lo:
                    continue
                for e in range(d + 1, len(cur) + 1):
                    if math.prod(cur[:e]) == hi:
                        cand = (e - s, abs(k - d), k)
                        best = cand if best is None or cand < best else best
        if best is None:
            raise ShapeError(f"no result dim of {list(old_out)} holds input dim {d} of {list(old_in)} "
                             f"alone, so its new size {new_in[d]} cannot be followed")
        k = best[2]
        out[k] = out[k] // cur[d] * new_in[d]
        cur[d] = new_in[d]
    return tuple(out)


# --------------------------------------------------------------------------------------
# Propagation
# --------------------------------------------------------------------------------------


@dataclass
class _Propagator:
    """Re-types values in program order; `old` keeps the shape a value had before."""

    old: dict[SSAValue, Shape]

    def retype(self, value: SSAValue, shape: Sequence[int]) -> SSAValue:
        ty = value.type
        if not isinstance(ty, TensorType) or tuple(ty.get_shape()) == tuple(shape):
            return value
        old = self.old.get(value, tuple(ty.get_shape()))
        new = Rewriter.replace_value_with_new_type(value, TensorType(ty.element_type, list(shape)))
        self.old[new] = old
        return new

    def old_shape(self, value: SSAValue) -> Shape:
        return self.old.get(value, shape_of(value))

    def block(self, block: Block) -> None:
        for op in list(block.ops):
            if isinstance(op, FusedOp):
                self.fused(op)
            elif isinstance(op, GraphOp) and not isinstance(op, ConstantOp):
                self.op(op)

    def fused(self, op: FusedOp) -> None:
        body = op.body.block
        for arg, operand in zip(list(body.args), op.ins):
            self.retype(arg, shape_of(operand))
        self.block(body)
        term = body.last_op
        if isinstance(term, YieldOp):
            for r, v in zip(list(op.outs), term.values):
                self.retype(r, shape_of(v))
        self.check(op)

    def op(self, op: GraphOp) -> None:
        try:
            shapes = self.infer(op)
        except (ShapeError, VerifyException, ValueError, IndexError, TypeError) as e:
            reason = str(e).removeprefix(f"'{op.name}': ")
            raise CompileError(PASS_NAME, f"cannot take operand shapes "
                                          f"{', '.join(str(list(shape_of(o))) for o in op.operands)}: {reason}",
                               op) from None
        for r, s in zip(list(op.results), shapes):
            self.retype(r, s)
        self.check(op)

    def check(self, op: Operation) -> None:
        try:
            op.verify()
        except VerifyException as e:
            raise CompileError(PASS_NAME, f"the op does not accept its new shapes: {e}", op) from None

    def follow_slice(self, op: SliceOp) -> None:
        """A slice that took a whole input dim (the importer resolved `x[:, 0:32]` and
        Split to absolute bounds) takes the whole new dim, e.g. a batch that grew."""
        old, new = self.old_shape(op.input), shape_of(op.input)
        if len(old) != len(new) or old == new:
            return
        starts, ends, steps = list(ints(op.starts, ())), list(ints(op.ends, ())), ints(op.steps, ())
        if not len(starts) == len(ends) == len(steps) == len(new):
            return
        for d, (o, n) in enumerate(zip(old, new)):
            if o == n:
                continue
            if steps[d] == 1 and starts[d] == 0 and ends[d] == o:
                ends[d] = n
            elif steps[d] == -1 and starts[d] == o - 1 and ends[d] == -1:
                starts[d] = n - 1
        op.attributes["starts"], op.attributes["ends"] = int_array(starts), int_array(ends)

    def infer(self, op: GraphOp) -> list[Shape]:
        if isinstance(op, SliceOp):
            self.follow_slice(op)
        infer_shape = getattr(op, "infer_shape", None)
        if callable(infer_shape):
            return self._shapes(op, infer_shape())
        if isinstance(op, ReshapeOp):
            return [follow_reshape(self.old_shape(op.input), shape_of(op.input), shape_of(op.result))]
        for cls, rule in SHAPE_RULES.items():
            if isinstance(op, cls):
                return self._shapes(op, rule(op))
        return self.evaluate(op)

    @staticmethod
    def _shapes(op: GraphOp, got: object) -> list[Shape]:
        """The shapes an `infer_shape()` returned: one shape, a list of them, or None."""
        if not isinstance(got, Sequence):  # None: the op does not accept its operand shapes
            raise ShapeError("the op does not accept them")
        if len(op.results) == 1 and all(isinstance(d, (int, np.integer)) for d in got):
            return [tuple(int(d) for d in got)]
        return [tuple(int(d) for d in s) for s in got]

    @staticmethod
    def evaluate(op: GraphOp) -> list[Shape]:
        arrays = []
        for o in op.operands:
            c = o.owner
            if isinstance(c, ConstantOp) and c.value is not None:
                arrays.append(np.asarray(c.value.get_values(), dtype=np.float32).reshape(shape_of(o)))
            else:
                arrays.append(np.zeros(shape_of(o), dtype=np.float32))
        try:
            with np.errstate(all="ignore"):
                outs = op.evaluate(*arrays)
        except NotImplementedError:
            raise ShapeError(f"{op.name} has neither a shape rule nor reference semantics") from None
        except (ValueError, IndexError, TypeError) as e:
            raise ShapeError(str(e)) from None
        if len(outs) != len(op.results):
            raise ShapeError(f"its semantics give {len(outs)} results, the op has {len(op.results)}")
        return [tuple(np.shape(o)) for o in outs]


# --------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------


def parse_input_shapes(text: str) -> dict[str, Shape]:
    """`x=4x3x224x224,y=2x8` -> {"x": (4, 3, 224, 224), "y": (2, 8)} (`s=` is a scalar)."""
    shapes: dict[str, Shape] = {}
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        name, eq, dims = item.rpartition("=")
        if not eq or not name:
            raise CompileError(PASS_NAME, f"input-shapes: '{item}' is not NAME=DxDx...")
        try:
            shape = tuple(int(d) for d in dims.split("x")) if dims.strip() else ()
        except ValueError:
            raise CompileError(PASS_NAME, f"input-shapes: '{dims}' (input '{name}') is not a shape "
                                          "such as 4x3x224x224") from None
        if any(d < 0 for d in shape):
            raise CompileError(PASS_NAME, f"input-shapes: '{dims}' (input '{name}') has a negative dim")
        shapes[name] = shape
    return shapes


def argument_names(fn: func.FuncOp) -> list[list[str]]:
    """Names each argument of `fn` answers to: its ONNX name (`npu.inputs`), its SSA
    name and `argN`."""
    args = fn.body.block.args
    onnx_names = io_names(fn, INPUTS_ATTR)
    out = []
    for i, a in enumerate(args):
        names = []
        if onnx_names is not None and len(onnx_names) == len(args):
            names.append(onnx_names[i])
        if a.name_hint:
            names.append(a.name_hint)
        names.append(f"arg{i}")
        out.append(names)
    return out


def retype_inputs(fn: func.FuncOp, shapes: dict[str, Shape], prop: _Propagator) -> None:
    names = argument_names(fn)
    for key, shape in shapes.items():
        idx = [i for i, ns in enumerate(names) if key in ns]
        if not idx:
            known = ", ".join(ns[0] for ns in names) or "none"
            raise CompileError(PASS_NAME, f"input-shapes: @{fn.sym_name.data} has no input '{key}' "
                                          f"(inputs: {known})")
        prop.retype(fn.body.block.args[idx[0]], shape)


def infer_shapes(module: ModuleOp, input_shapes: dict[str, Shape] | None = None) -> None:
    """Re-type `@main`'s inputs named in `input_shapes`, then propagate shapes through
    every function of `module` and update the function signatures."""
    for fn in [op for op in module.ops if isinstance(op, func.FuncOp)]:
        if fn.is_declaration:
            continue
        prop = _Propagator({})
        block = fn.body.block
        for arg, declared in zip(list(block.args), fn.function_type.inputs.data):
            if isinstance(declared, TensorType) and declared != arg.type:
                prop.old[arg] = tuple(declared.get_shape())  # re-typed by the caller
        if input_shapes and fn is find_main(module):
            retype_inputs(fn, input_shapes, prop)
        prop.block(block)
        fn.update_function_type()


@dataclass(frozen=True)
class ShapeInference(ModulePass):
    """Recompute graph result types from operand types (optionally re-typing @main's inputs first).

    Option `input-shapes="x=4x3x224x224,y=4x8"` re-types the named inputs of @main
    (ONNX names) before propagating. See the module docstring for the rules and
    errors."""

    name = PASS_NAME
    input_shapes: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        infer_shapes(op, parse_input_shapes(self.input_shapes) if self.input_shapes else None)


"""The values each integer or boolean model input may take without an out-of-range
index: `input_ranges(module)` on a graph-level module, recorded on `@main` as
`npu.input_ranges` (`record_input_ranges`, run by `npu-default` before its graph
passes) so that random inputs (`runtime.run.random_inputs`) of an `.onnx`, an `.mlir`
or an `.npuexe` stay inside every table they index.

Per input: `[lo, hi)` to draw from, or the reason no range is known (then random
values are refused and `--inputs` is needed).

Algorithm
---------
1. Candidate ranges. An input that reaches the indices of an `npu_graph.gather`
   through data movement only (reshape, transpose, slice, expand, concat, trunc, and
   the exact type changes dequantize/quantize by 1, 0 and cast)
   indexes that table: `[0, n)` for the smallest such dim n. Any other integer
   input (a mask: Where, Mul, Sub, comparisons; a boolean) gets `[0, 2)`.
2. Check. Intervals are propagated forward from those ranges through every op the
   integer inputs reach (data movement keeps the interval; add/sub/mul/div/neg/abs/
   min/max/clip/relu, reduce_sum (times the reduced count), matmul (per column
   against a constant: a cumulative sum is a triangular matmul), where, comparisons
   (0/1), mod and fmod (below the largest divisor's magnitude)); an op
   without a rule is unbounded. Each gather whose indices depend on an
   integer input must get an interval inside [-n, n); otherwise every integer input
   its indices depend on is marked unknown, with the gather's node and table size.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, BlockArgument, Operation, OpResult, SSAValue

from lowering.errors import CompileError
from lowering.graph.constants import ConstantReader
from npu_dialects.entry import INPUT_DTYPES_ATTR, INPUT_RANGES_ATTR, INPUTS_ATTR, find_main, io_names
from npu_dialects.graph import GatherOp, shape_of
from npu_dialects.locs import node_names

Interval = tuple[float, float] | None
"""[lo, hi] (both included) of a value's elements; None: unbounded or unknown."""
Range = tuple[int, int] | str
"""[lo, hi) to draw an input from, or why none is known."""

_MOVE = {"npu_graph.reshape", "npu_graph.transpose", "npu_graph.slice", "npu_graph.expand",
         "npu_graph.concat", "npu_graph.trunc"}
"""Ops whose result elements are operand elements (an index passes through them unchanged)."""
_HULL = _MOVE | {"npu_graph.reduce_max", "npu_graph.reduce_min", "npu_graph.reduce_mean",
                 "npu_graph.maxpool", "npu_graph.maxpool_nd", "npu_graph.max", "npu_graph.min"}
"""Ops whose result elements lie in the hull of their operands' elements."""
_BOOL = {"npu_graph.equal", "npu_graph.less", "npu_graph.greater"}


def _is_integer(dtype: str) -> bool:
    """An ONNX element type carried as f32 integers: an integer type or bool."""
    try:
        return dtype == "bool" or bool(np.issubdtype(np.dtype(dtype), np.integer))
    except TypeError:
        return False


def _hull(*ivs: Interval) -> Interval:
    if any(iv is None for iv in ivs) or not ivs:
        return None
    return min(iv[0] for iv in ivs if iv), max(iv[1] for iv in ivs if iv)


def _products(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    p = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return min(p), max(p)


def _binary(name: str, a: Interval, b: Interval) -> Interval:
    if a is None or b is None:
        return None
    if name == "npu_graph.add":
        return a[0] + b[0], a[1] + b[1]
    if name == "npu_graph.sub":
        return a[0] - b[1], a[1] - b[0]
    if name == "npu_graph.mul":
        return _products(a, b)
    if name == "npu_graph.div" and (b[0] > 0 or b[1] < 0):
        return _products(a, (1 / b[1], 1 / b[0]))
    if name in ("npu_graph.mod", "npu_graph.fmod") and (m := max(abs(b[0]), abs(b[1]))) > 0:
        # (|r| < |divisor| whatever each element's divisor: the largest bounds them all)
        return (0.0, m) if name == "npu_graph.mod" and b[0] > 0 and a[0] >= 0 else (-m, m)
    return None


def _reaching_indices(fn: func.FuncOp) -> set[SSAValue]:
    """The values some gather's indices are computed from (through fused kernels' bodies):
    the only intervals the check needs, so no other constant is read."""
    stack: list[SSAValue] = [op.indices for op in fn.walk() if isinstance(op, GatherOp)]
    seen: set[SSAValue] = set()
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if isinstance(owner, Operation):
            stack += owner.operands
            if owner.regions and owner.regions[0].blocks:  # (a kernel's result: its body's yield operand)
                last = owner.regions[0].blocks[0].last_op
                if last is not None and last.name == "npu_graph.yield" and isinstance(v, OpResult):
                    stack.append(last.operands[v.index])
        elif isinstance(v, BlockArgument):  # (a kernel body's argument: the kernel's operand)
            parent = v.block.parent_op()
            if parent is not None and parent is not fn and v.index < len(parent.operands):
                stack.append(parent.operands[v.index])
    return seen


def _relevant(op: Operation, needed: set[SSAValue]) -> bool:
    """Whether `op` carries an interval toward some gather's indices: a result of it, its
    body's arguments (a fused kernel) or its kernel's results (a yield) are `needed`."""
    if any(r in needed for r in op.results):
        return True
    if op.regions and op.regions[0].blocks:
        return any(a in needed for a in op.regions[0].blocks[0].args)
    parent = op.parent_op() if op.name == "npu_graph.yield" else None
    return parent is not None and any(r in needed for r in parent.results)


class _Ranges:
    """One analysis of a graph-level `@main` (see the module docstring)."""

    def __init__(self, module: ModuleOp, fn: func.FuncOp):
        self.module = module
        self.fn = fn
        self.constants = ConstantReader(module, "npu-default")
        self.consts: dict[SSAValue, Interval] = {}
        self.taint: dict[SSAValue, set[str]] = {}  # the integer inputs each value depends on

    def constant(self, v: SSAValue) -> Interval:
        """The interval of a value no integer input reaches: a constant's, else unbounded."""
        if v not in self.consts:
            data = self.array(v)
            ok = data is not None and data.size and np.isfinite(data).all()
            self.consts[v] = (float(data.min()), float(data.max())) if ok and data is not None else None
        return self.consts[v]

    def array(self, v: SSAValue) -> np.ndarray | None:
        """The data of a constant no integer input reaches (None: not a readable constant)."""
        while (arg := self.outer(v)) is not None:
            v = arg
        if v in self.taint:
            return None
        try:
            data = self.constants.array(v)
        except CompileError:  # (an unreadable weight store: no range from it)
            return None
        return None if data is None else np.asarray(data, np.float64)

    def matmul(self, op: Operation, a: Interval, b: Interval) -> Interval:
        """a @ b: per output column against a constant b (exact for a cumulative sum's
        triangular matrix), else K times the hull of the products."""
        if a is None:
            return None
        k = shape_of(op.operands[0])[-1]
        data = self.array(op.operands[1])
        if data is not None and data.ndim >= 2 and data.shape[-2] == k and data.size:
            lo = np.minimum(a[0] * data, a[1] * data).sum(axis=-2)
            hi = np.maximum(a[0] * data, a[1] * data).sum(axis=-2)
            return float(lo.min()), float(hi.max())
        if b is None:
            return None
        p = _products(a, b)
        return k * min(p[0], 0.0), k * max(p[1], 0.0)

    def exact_conversion(self, op: Operation) -> bool:
        """A dequantize or quantize by scale 1 and zero point 0, or a cast: the importer's
        exact change of type of an integer (an int32 input carried as f32), which keeps values."""
        if op.name == "npu_graph.cast":
            return True
        if op.name not in ("npu_graph.dequantize", "npu_graph.quantize") or len(op.operands) != 3:
            return False
        return self.constant(op.operands[1]) == (1.0, 1.0) and self.constant(op.operands[2]) == (0.0, 0.0)

    def interval(self, op: Operation, ivs: list[Interval]) -> Interval:
        """The interval of `op`'s (first) result from its operands' intervals."""
        name = op.name
        if self.exact_conversion(op):
            return ivs[0]
        if name in _BOOL:
            return 0.0, 1.0
        if name == "npu_graph.where":
            return _hull(ivs[1], ivs[2])
        if name == "npu_graph.gather":
            return ivs[0]
        if name in _HULL:
            return _hull(*ivs)
        if name == "npu_graph.pad":
            v = float(op.attributes["value"].value.data)  # type: ignore[union-attr]
            return _hull(ivs[0], (v, v))
        if name == "npu_graph.neg":
            return None if ivs[0] is None else (-ivs[0][1], -ivs[0][0])
        if name == "npu_graph.relu":
            return None if ivs[0] is None else (max(ivs[0][0], 0.0), max(ivs[0][1], 0.0))
        if name == "npu_graph.abs":
            a = ivs[0]
            return None if a is None else (0.0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1])),
                                           max(abs(a[0]), abs(a[1])))
        if name == "npu_graph.clip":
            a, lo, hi = ivs
            return None if a is None or lo is None or hi is None else (
                min(max(a[0], lo[0]), hi[1]), min(max(a[1], lo[1]), hi[1]))
        if name == "npu_graph.reduce_sum" and ivs[0] is not None:
            n = int(np.prod(shape_of(op.operands[0]))) // max(1, int(np.prod(shape_of(op.results[0]))))
            return min(ivs[0][0] * n, ivs[0][0]), max(ivs[0][1] * n, ivs[0][1])
        if name == "npu_graph.matmul":
            return self.matmul(op, ivs[0], ivs[1])
        if len(ivs) == 2:
            return _binary(name, ivs[0], ivs[1])
        return None

    def run(self, names: list[str], dtypes: list[str]) -> dict[str, Range]:
        args = list(self.fn.body.block.args)
        ints: dict[SSAValue, str] = {args[i]: n for i, (n, d) in enumerate(zip(names, dtypes))
                                     if i < len(args) and _is_integer(d)}
        if not ints:
            return {}
        bounds: dict[str, int] = {}
        for op in self.fn.walk():  # 1. candidates: inputs moved unchanged into a gather's indices
            if isinstance(op, GatherOp):
                n = self.table_size(op)
                for arg in self.moved_from(op.indices):
                    name = ints.get(arg)
                    if name is not None and dtypes[names.index(name)] != "bool":
                        bounds[name] = min(bounds.get(name, n), n)
        ranges: dict[str, Range] = {n: (0, bounds.get(n, 2)) for n in ints.values()}
        ivs: dict[SSAValue, Interval] = {}
        for arg, name in ints.items():
            self.taint[arg] = {name}
            r = ranges[name]
            assert not isinstance(r, str)
            ivs[arg] = (float(r[0]), float(r[1] - 1))
        self.forward(ivs, ranges)
        return ranges

    def forward(self, ivs: dict[SSAValue, Interval], ranges: dict[str, Range]) -> None:
        """2. Forward intervals of what the integer inputs reach on the way to a gather's
        indices (`_reaching_indices`: no other constant is read), checking each gather."""
        needed = _reaching_indices(self.fn)
        for op in self.fn.walk():
            deps = set().union(*(self.taint.get(v, set()) for v in op.operands))
            if not deps:
                continue
            if isinstance(op, GatherOp) and op.indices in self.taint:
                self.check_gather(op, ivs[op.indices], self.taint[op.indices], ranges)
            if not _relevant(op, needed):
                continue
            operand_ivs = [ivs[v] if v in self.taint else self.constant(v) for v in op.operands]
            if op.regions:  # (a fused kernel: its body's arguments are its operands)
                for arg, v, iv in zip(op.regions[0].blocks[0].args if op.regions[0].blocks else (),
                                      op.operands, operand_ivs):
                    self.taint[arg], ivs[arg] = self.taint.get(v, set()), iv
                continue
            if op.name == "npu_graph.yield" and op.parent_op() is not None:
                for r, v, iv in zip(op.parent_op().results, op.operands, operand_ivs):  # type: ignore[union-attr]
                    self.taint[r], ivs[r] = self.taint.get(v, set()), iv
                continue
            iv = self.interval(op, operand_ivs)
            for r in op.results:
                self.taint[r] = deps
                ivs[r] = iv

    @staticmethod
    def table_size(op: GatherOp) -> int:
        x = shape_of(op.data)
        a = op.axis.value.data % len(x)
        return x[a]

    def moved_from(self, v: SSAValue) -> list[SSAValue]:
        """The block arguments `v` is made of through data movement only."""
        out: list[SSAValue] = []
        stack, seen = [v], set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            if v in self.fn.body.block.args:
                out.append(v)
            elif (arg := self.outer(v)) is not None:
                stack.append(arg)
            elif isinstance(v.owner, Operation) and v.owner.name in _MOVE:
                stack.extend(v.owner.operands)
            elif isinstance(v.owner, Operation) and self.exact_conversion(v.owner):
                stack.append(v.owner.operands[0])
        return out

    @staticmethod
    def outer(v: SSAValue) -> SSAValue | None:
        """The operand of a fused kernel that its body's argument `v` stands for."""
        if not isinstance(v, BlockArgument) or not isinstance(op := v.block.parent_op(), Operation):
            return None
        return op.operands[v.index] if v.index < len(op.operands) and not isinstance(op, func.FuncOp) else None

    def check_gather(self, op: GatherOp, iv: Interval, deps: set[str], ranges: dict[str, Range]) -> None:
        n = self.table_size(op)
        if iv is not None and -n <= iv[0] and iv[1] <= n - 1:
            return
        node = ", ".join(node_names(op)) or op.name
        got = "unbounded values" if iv is None else f"values in [{iv[0]:g}, {iv[1]:g}]"
        for name in sorted(deps):
            ranges[name] = (f"it reaches the indices of gather node '{node}' (a table of {n} rows) through "
                            f"computations that give {got}")


def input_ranges(module: ModuleOp) -> dict[str, Range]:
    """Per integer or boolean input of the graph-level `module`, the range random values
    are drawn from, or why none is known (see the module docstring)."""
    fn = find_main(module)
    if fn is None or not fn.body.blocks:
        return {}
    names, dtypes = io_names(fn, INPUTS_ATTR), io_names(fn, INPUT_DTYPES_ATTR)
    if names is None or dtypes is None or len(names) != len(dtypes):
        return {}
    return _Ranges(module, fn).run(names, dtypes)


def record_input_ranges(module: ModuleOp) -> None:
    """Record `input_ranges` on `@main` as `npu.input_ranges` (`{name = array<i64: lo,
    hi>}` or `{name = "reason"}`); a module without integer inputs gets none."""
    fn = find_main(module)
    if fn is None:
        return
    ranges = input_ranges(module)
    if not ranges:
        fn.attributes.pop(INPUT_RANGES_ATTR, None)
        return
    entries: dict[str, Attribute] = {
        name: StringAttr(r) if isinstance(r, str) else DenseArrayBase.from_list(i64, list(r))
        for name, r in ranges.items()}
    fn.attributes[INPUT_RANGES_ATTR] = DictionaryAttr(entries)

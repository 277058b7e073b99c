"""Per-layer accuracy (`npu-run --compare-all`): every ONNX tensor that survives in the
compiled program (a DRAM buffer a kernel writes, named by the ONNX nodes of its
location: the value is the last node's output) against a float64 numpy evaluation
of the original graph, in every precision.

`compare_all(graph, weights, inputs, captured, outputs)` gives one row per tensor in
graph order - node, shape, element type, max abs/rel error, cosine, ok - with the model
outputs last, and the first node over its type's tolerance: f32 as `--check` (rtol
1e-3, atol 1e-4 x max(1, max |ref|)); f16/bf16 widened, the type's
(`tools.tolerance.PRECISION_RTOL`); i8/ui8 buffers in quantization steps against the
reference quantized by the quantize op that makes them (`tools.quant_steps.STEP_RULE`),
errors after dequantizing; a float tensor of a quantized graph may also pass by the
step rule of the quantize/dequantize next to it, or by `local_steps` (against
`local_references`: the reference fed the program's earlier tensors). `onnxruntime`
(values by node, a QDQ model's run) adds a comparison per row. `format_rows` prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from lowering.graph.evaluate import constant_value, evaluate_graph
from npu_dialects import graph as g
from npu_dialects import special
from npu_dialects.arch import Arch, widest_type
from npu_dialects.dtypes import element_type, from_np, type_name
from npu_dialects.locs import node_names
from tools.quant_steps import Step, coarser_step, percent, step_metrics
from tools.tolerance import PRECISION_RTOL, coarsest, metrics

PASS_THROUGH = (g.ReshapeOp, g.TransposeOp, g.SliceOp, g.ConcatOp, g.GatherOp, g.PadOp, g.ExpandOp, g.MaxPoolOp,
                g.MaxPoolNdOp, g.AvgPoolOp, g.ReduceMaxOp, g.ReduceMinOp, g.ReduceMeanOp, g.ReluOp, g.ClipOp,
                g.SigmoidOp, g.TanhOp, g.SoftmaxOp, g.MaxOp, g.MinOp)
"""Graph ops a quantized value passes through keeping its quantization step."""

VALUE_KEEPING = (g.ReshapeOp, g.TransposeOp, g.SliceOp, g.ConcatOp, g.GatherOp, g.PadOp, g.ExpandOp, g.MaxPoolOp,
                 g.MaxPoolNdOp, g.ReduceMaxOp, g.ReduceMinOp, g.ReluOp, g.ClipOp, g.MaxOp, g.MinOp)
"""The `PASS_THROUGH` ops each of whose output elements is an input element, a constant or
a bound (`tools.quant_steps.VALUE_KEEPING`)."""


def _type(a: np.ndarray) -> str:
    try:
        return type_name(from_np(a.dtype)) or str(a.dtype)
    except (KeyError, TypeError, ValueError):
        return str(a.dtype)


class QuantParams:
    """Quantization parameters (scale, zero point, saturation range) of a tensor of the
    reference graph: its quantize op's, the quantize op reading it, or the dequantize
    it comes from through `PASS_THROUGH` ops."""

    def __init__(self, graph: ModuleOp, weights: Mapping[str, np.ndarray]):
        self.weights = weights
        self.ops: dict[str, Operation] = {}
        self.quantized = False
        for op in graph.walk():
            self.quantized |= isinstance(op, (g.QuantizeOp, g.DequantizeOp, g.RequantizeOp)) or any(
                type_name(element_type(r)) in ("i8", "ui8") for r in op.results)
            if op.results:
                for name in node_names(op):
                    self.ops[name] = op  # (as evaluate_graph's values: the last op located at the node)

    def _const(self, v: SSAValue) -> np.ndarray | None:
        op = v.owner
        return constant_value(op, self.weights).astype(np.float64) if isinstance(op, g.ConstantOp) else None

    def _of(self, op: g.QuantOp) -> tuple[np.ndarray, np.ndarray, int, int] | None:
        scale, zp = self._const(op.operands[1]), self._const(op.operands[2])
        if scale is None or zp is None:
            return None
        if isinstance(op, g.QuantizeOp):
            lo, hi = op.bounds()
        else:
            lo, hi = (0, 255) if type_name(op.operands[0].type.element_type) == "ui8" else (-128, 127)  # pyright: ignore
        return scale, zp, lo, hi

    def of_value(self, v: SSAValue, forward: bool = True) -> tuple[np.ndarray, np.ndarray, int, int] | None:
        """`v`'s parameters: its quantize op's, (`forward`) a quantize reading it, or the
        dequantize it comes from through `PASS_THROUGH` ops; None: none."""
        op = self._source(v, forward)
        return self._of(op) if op is not None else None

    def steps_per_flip(self, v: SSAValue, forward: bool = True) -> float:
        """How many of `v`'s steps one rounding flip before it can move an element: 1, or
        for a requantization (a quantize of a value an earlier dequantize made, through
        `VALUE_KEEPING` ops) at a finer scale, `ceil(earlier scale / scale)`
        (`tools.quant_steps.coarser_step`)."""
        op = self._source(v, forward)
        q = op.operands[0].owner if isinstance(op, g.DequantizeOp) else op
        if not isinstance(q, g.QuantizeOp) or (mine := self._of(q)) is None:
            return 1.0
        up, depth = q.operands[0].owner, 0
        while isinstance(up, VALUE_KEEPING) and up.operands and depth < 32:
            up, depth = up.operands[0].owner, depth + 1
        earlier = self._of(up) if isinstance(up, g.DequantizeOp) else None
        if earlier is None:
            return 1.0
        return float(coarser_step(float(np.max(mine[0])), float(np.max(earlier[0]))) / float(np.max(mine[0])))

    def _source(self, v: SSAValue, forward: bool) -> g.QuantOp | None:
        if isinstance(v.owner, g.QuantizeOp):
            return v.owner
        for use in v.uses if forward else ():
            if isinstance(use.operation, g.QuantizeOp) and use.index == 0:
                return use.operation
        op, depth = v.owner, 0
        while isinstance(op, PASS_THROUGH) and op.operands and depth < 32:
            op, depth = op.operands[0].owner, depth + 1
        return op if isinstance(op, g.DequantizeOp) else None

    def of_node(self, node: str) -> tuple[np.ndarray, np.ndarray, int, int] | None:
        op = self.ops.get(node)
        return self.of_value(op.results[0]) if op is not None else None


def _quantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray, lo: int, hi: int) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.clip(np.rint(np.asarray(x, np.float64) / scale) + zp, lo, hi)


def judge(got: np.ndarray, ref: np.ndarray, params, precision: str | None,
          quantized: bool, flip: float = 1.0) -> dict[str, Any] | None:
    """One comparison (see the module docstring); None when an integer buffer holds a
    float tensor of the reference without quantization parameters to read it by (an
    i32 accumulator: no scale). Integers the reference holds as integers without
    parameters (MatMulInteger's i32) must be equal. `flip`: how many of the tensor's
    steps one rounding flip before it moves an element (`QuantParams.steps_per_flip`),
    the step judged by."""
    if np.size(got) == np.size(ref):
        got = np.asarray(got).reshape(np.shape(ref))
    kind = _type(got)
    integer_ref = np.asarray(ref).dtype.kind in "iub"
    if not quantized:  # (a float graph: every tensor by the float tolerance, as before issue 44)
        m = metrics(got, ref, precision)
        s = None
    elif np.asarray(got).dtype.kind in "iu" and params is None and integer_ref:  # (integers: equal)
        m = metrics(got, ref, None)
        s = step_metrics(got, ref, Step(1.0, exact=True))
        m["ok"] = s["ok"]
    elif np.asarray(got).dtype.kind in "iu":
        if params is None:
            return None
        scale, zp, lo, hi = params
        rq = np.asarray(ref, np.float64) if integer_ref else _quantize(ref, scale, zp, lo, hi)
        m = metrics((got - zp) * scale, (rq - zp) * scale, None)
        s = step_metrics(got, rq, Step(flip))
        s["step"] = float(np.max(scale)) * flip
        m["ok"] = s["ok"]
    else:
        m = metrics(got, ref, precision)
        s = None
        if quantized and params is not None:
            scale = params[0] if np.ndim(params[0]) == got.ndim else float(np.max(params[0]))
            s = step_metrics(got, ref, Step(scale * flip))
            m["ok"] = m["ok"] or s["ok"]
    del m["atol"], m["rtol"]
    row = {"type": kind, **m}
    if s is not None:
        row["steps"] = {k: s[k] for k in ("exact", "within_one", "max_steps", "step")}
    return row


def local_references(graph: ModuleOp, weights: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                     chip: Mapping[str, np.ndarray], params: QuantParams) -> dict[str, np.ndarray]:
    """Each node of `chip` (its tensor as the program computed it) as the float64
    reference computes it from the program's own earlier tensors: the graph evaluated
    with every kept tensor replaced by the program's (an integer one dequantized when
    the graph holds it in float); the outputs as "output 'NAME'". One requantization
    rounding the other way early on then moves no later row: each row measures the
    kernels since the last kept tensor."""
    last = {id(op): name for name, op in params.ops.items() if name in chip}
    local: dict[str, np.ndarray] = {}

    def kept(op: Operation, ref: np.ndarray) -> np.ndarray | None:
        name = last.get(id(op))
        if name is None or np.size(chip[name]) != np.size(ref):
            return None
        local[name] = ref
        got = np.asarray(chip[name]).reshape(ref.shape)
        if got.dtype.kind in "iu" and ref.dtype.kind == "f":
            p = params.of_node(name)
            if p is None:
                return None
            got = (got.astype(np.float64) - p[1]) * p[0]
        return got

    outs = evaluate_graph(graph, weights, inputs, dtype=np.float64, replace=kept)
    local.update({f"output '{n}'": v for n, v in outs.items()})
    return local


def compare_all(graph: ModuleOp, weights: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                captured: list[tuple[list[str], np.ndarray]],
                outputs: Mapping[str, np.ndarray],
                precision: str | None = None,
                onnxruntime: Mapping[str, np.ndarray] | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """Rows (see the module docstring) and the first node over tolerance (None: all ok;
    `precision`: the type a `--precision` model computed in, whose tolerance applies).
    `onnxruntime`: values by node (outputs by "output 'NAME'") of onnxruntime's run: a
    row it has gains `onnxruntime` {the same fields}. A captured buffer whose size
    differs from its node's tensor is skipped, and so are buffers sharing one location
    (a layer group's DRAM scratch buffers all carry the group's nodes: which of them
    holds the last node's output is unknown) and integer buffers with no quantization
    parameters to read them by. In a quantized graph a row also gets `local_steps`, its
    steps from `local_references` (the reference fed the program's earlier tensors), and
    is ok when either comparison is: a rounding flip early on grows through later layers
    of the end-to-end reference without any kernel being wrong."""
    precision = effective_precision(captured, outputs, precision)
    values: dict[str, np.ndarray] = {}
    refs = evaluate_graph(graph, weights, {k: np.asarray(v, np.float64) for k, v in inputs.items()},
                          dtype=np.float64, values=values)
    params = QuantParams(graph, weights)
    order = {name: i for i, name in enumerate(values)}
    rows: list[dict[str, Any]] = []
    claims = Counter(tuple(nodes) for nodes, _ in captured)
    kept: dict[str, tuple[list[str], np.ndarray]] = {}
    for nodes, got in captured:
        node = nodes[-1] if nodes else None
        if claims[tuple(nodes)] > 1:  # (a layer group's scratch buffers share its location: whose value?)
            continue
        if node is None or node in kept or node not in values or values[node].size != got.size:
            continue
        kept[node] = (nodes, got)
    local: dict[str, np.ndarray] = {}
    if params.quantized:
        try:
            local = local_references(graph, weights, inputs, {n: v for n, (_, v) in kept.items()}, params)
        except (ValueError, TypeError, IndexError, FloatingPointError):  # (the program's values do not evaluate:
            local = {}  # the end-to-end comparison alone)

    def add(node: str, fused: list[str], got: np.ndarray, ref: np.ndarray, v: SSAValue | None,
            forward: bool = True) -> None:
        p = params.of_value(v, forward) if v is not None else None
        flip = params.steps_per_flip(v, forward) if p is not None and v is not None else 1.0
        row = judge(got, ref, p, precision, params.quantized, flip)
        if row is None:
            return
        entry = {"node": node, "fused": fused, "shape": list(np.shape(ref)), **row}
        mine = judge(got, local[node], p, precision, True, flip) if node in local else None
        if mine is not None and "steps" in mine:  # (the kernels since the last kept tensor alone)
            entry["local_steps"] = mine["steps"]
            entry["ok"] = entry["ok"] or mine["ok"]
        other = (onnxruntime or {}).get(node)
        if other is not None and np.size(other) == np.size(got):
            theirs = judge(got, other, p, precision, params.quantized, flip)
            if theirs is not None:
                entry["onnxruntime"] = theirs
        rows.append(entry)

    for node, (nodes, got) in kept.items():
        op = params.ops.get(node)
        add(node, nodes, got, values[node], op.results[0] if op is not None else None)
    rows.sort(key=lambda r: order[r["node"]])
    returned = returned_values(graph)
    for name, got in outputs.items():
        if name in refs:
            v = returned.get(name)
            add(f"output '{name}'", [], got, refs[name], v)
    return rows, first_over(rows)


def approximation_errors(graph: ModuleOp, weights: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                         arch: Arch) -> list[dict[str, Any]]:
    """One row per op of the original graph that evaluates a special function `arch`
    approximates (`npu_dialects.special`, `graph.special_uses`): the op's own error
    against float64 - the op computed in f32 by the arch's methods on the float64
    reference's inputs, against its float64 value - whatever fusion later does with it
    (a fused op's tensor never reaches DRAM, so the tensor rows cannot show it). Each
    row: node, op, functions {name: method}, max abs/rel error, cosine, ok (f32's
    tolerance). Empty when the arch evaluates every function exactly."""
    if all(arch.special_evaluator(t) is None for t in ("f32", "f16", "bf16")):
        return []
    rows: list[dict[str, Any]] = []

    def look(op: Operation, ins: list[np.ndarray]) -> None:
        uses = g.special_uses(op)
        t = widest_type((*op.operands, *op.results))
        ev = arch.special_evaluator(t) if uses else None
        if ev is None or not isinstance(op, g.GraphOp) or not any(f in ev.k for f in uses):
            return
        ref = op.evaluate(*ins)[0]
        with special.evaluating(ev):
            got = op.evaluate(*[a.astype(np.float32) if a.dtype == np.float64 else a for a in ins])[0]
        m = metrics(got, ref, t if t in PRECISION_RTOL else None)
        names = node_names(op)
        rows.append({"node": names[-1] if names else op.name, "op": op.name, "type": t,
                     "functions": {f: str(ev.methods[f]) for f in uses if f in ev.k},
                     **{k: m[k] for k in ("max_abs_err", "max_rel_err", "cosine", "ok")}})
    evaluate_graph(graph, weights, {k: np.asarray(v, np.float64) for k, v in inputs.items()}, dtype=np.float64,
                   on_op=look)
    return rows


def format_approximations(rows: list[dict[str, Any]]) -> str:
    """The `approximation_errors` table."""
    lines = [f"special functions as the arch evaluates them: {len(rows)} ops, each alone against float64 "
             "(in f32 on the reference's inputs)", "   max abs err   max rel err    cosine  ok  node (op: method)"]
    for r in rows:
        how = ", ".join(f"{f} {m}" for f, m in r["functions"].items())
        lines.append(f"  {r['max_abs_err']:>11.3g} {r['max_rel_err']:>13.3g} {r['cosine']:>9.6f}  "
                     f"{'ok' if r['ok'] else 'NO'}  {r['node']} ({r['op'].removeprefix('npu_graph.')}: {how})")
    worst = max(rows, key=lambda r: r["max_rel_err"], default=None)
    if worst is not None:
        lines.append(f"largest error: {worst['node']} (max rel err {worst['max_rel_err']:.3g})")
    return "\n".join(lines)


def effective_precision(captured: list[tuple[list[str], np.ndarray]], outputs: Mapping[str, np.ndarray],
                        precision: str | None) -> str | None:
    """The type whose tolerance the float tensors get: `precision` (`--precision`), else
    f16 or bf16 when the program keeps tensors of that type (an all-f16 model, a
    pipeline's own `precision` option), else None (f32's); the coarser of the two when
    both (`tolerance.coarsest`: an all-f16 model at `--precision f32` or bf16)."""
    kinds = {_type(np.asarray(v)) for v in [*(v for _, v in captured), *outputs.values()]}
    return coarsest(precision, next((t for t in ("bf16", "f16") if t in kinds), None))


def returned_values(graph: ModuleOp) -> dict[str, SSAValue]:
    """The values `@main` returns, by output name."""
    from xdsl.dialects import func

    from lowering.graph.evaluate import io_names, main_func
    fn = main_func(graph)
    ret = fn.body.block.last_op
    if not isinstance(ret, func.ReturnOp):
        return {}
    return dict(zip(io_names(fn, "npu.outputs", len(ret.operands), "out"), ret.operands))


def first_over(rows: list[dict[str, Any]], against: str | None = None) -> str | None:
    """The first row over tolerance: against the float64 reference, or (`against`
    'onnxruntime') against onnxruntime's run."""
    for r in rows:
        c = r.get(against) if against else r
        if c is not None and not c["ok"]:
            return r["node"]
    return None


def _cell(r: dict[str, Any]) -> str:
    s, loc = r.get("steps"), r.get("local_steps")
    local = f"{loc['max_steps']:>6.3g}" if loc else f"{'-':>6}"
    if not s:
        return f"{'-':>8} {'-':>8} {'-':>5} {local}"
    return f"{percent(s['exact'], 4):>8} {percent(s['within_one'], 4):>8} {s['max_steps']:>5.3g} {local}"


def _why(rows: list[dict[str, Any]], node: str | None, against: str | None) -> str:
    """' (i8: 98.6% within one step of 0.078, largest difference 5 steps)' of a row."""
    from tools.quant_steps import describe
    r = next(r for r in rows if r["node"] == node)
    c = r.get(against) if against else r
    assert c is not None
    s = c.get("steps")
    what = describe({**s, "ok": c["ok"]}) if s else f"max abs err {c['max_abs_err']:.3g}, cosine {c['cosine']:.6f}"
    return f" ({c.get('type', 'f32')}: {what})"


def format_rows(rows: list[dict[str, Any]], first: str | None, precision: str | None = None) -> str:
    """The table (a float model's as before issue 44; a type column when a tensor is not
    f32 or a --precision applies; step columns for a quantized model; an `ort` column
    when onnxruntime's run is compared too)."""
    rtol = PRECISION_RTOL.get(precision or "")
    typed = bool(rtol) or any(r.get("type", "f32") != "f32" or "steps" in r or "onnxruntime" in r for r in rows)
    stepped = any("steps" in r for r in rows)
    ort = any("onnxruntime" in r for r in rows)
    head = "   max abs err   max rel err    cosine  " + ("type  " if typed else "") + \
        ("   equal  <=1 step  max  local  " if stepped else "") + "ok" + ("  ort" if ort else "") + "  node"
    lines = [f"compare-all: {len(rows)} tensors against a float64 reference of the original graph"
             + (" and onnxruntime's run" if ort else ""), head]
    for r in rows:
        line = f"  {r['max_abs_err']:>11.3g} {r['max_rel_err']:>13.3g} {r['cosine']:>9.6f}  "
        if typed:
            line += f"{r.get('type', 'f32'):<5} "
        if stepped:
            line += f"{_cell(r)}  "
        o = r.get("onnxruntime")
        theirs = ("  " + ("  -" if o is None else " ok" if o["ok"] else " NO")) if ort else ""
        lines.append(f"{line}{'ok' if r['ok'] else 'NO'}{theirs}  {r['node']}")
    tol = f"{precision}'s: rtol {rtol:.3g}, atol {rtol:.3g} x max |ref|" if rtol else \
        "rtol 1e-3, atol 1e-4 x max(1, max |ref|)"
    if stepped:
        tol += "; quantized tensors: >= 99% within one step, none beyond three"
    lines.append(f"first node over tolerance: {first}{_why(rows, first, None) if typed else ''}" if first
                 else f"every tensor within tolerance ({tol})")
    if ort:
        theirs = first_over(rows, "onnxruntime")
        lines.append(f"first node over tolerance against onnxruntime's run (end to end: early rounding flips grow "
                     f"through later layers): {theirs}{_why(rows, theirs, 'onnxruntime')}"
                     if theirs else "every tensor onnxruntime also computed within tolerance of its value")
    return "\n".join(lines)

"""Per-layer accuracy (`npu-run --compare-all`): every ONNX tensor that survives in the
compiled program (a DRAM buffer a kernel writes, named by the ONNX nodes of its
location: the value is the last node's output) against a float64 numpy evaluation
of the original graph.

`compare_all(graph, weights, inputs, captured, outputs)` gives one row per tensor
in graph order - node, shape, max abs error, max rel error, cosine similarity, ok -
with the model outputs last, and the first node over tolerance (the same tolerance
as `--check`: rtol 1e-3, atol 1e-4 x max(1, max |ref|); the type's with `--precision`,
`tools.npu_run.PRECISION_RTOL`). `format_rows` prints them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from lowering.graph.evaluate import evaluate_graph
from tools.npu_run import PRECISION_RTOL, metrics


def _row(got: np.ndarray, ref: np.ndarray, precision: str | None = None) -> dict[str, Any]:
    m = metrics(got, ref, precision)
    del m["atol"], m["rtol"]
    return m


def compare_all(graph: ModuleOp, weights: Mapping[str, np.ndarray], inputs: Mapping[str, np.ndarray],
                captured: list[tuple[list[str], np.ndarray]],
                outputs: Mapping[str, np.ndarray],
                precision: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """Rows (see the module docstring) and the first node over tolerance (None: all ok;
    `precision`: the type a `--precision` model computed in, whose tolerance applies).
    A captured buffer whose size differs from its node's tensor is skipped, and so are
    buffers sharing one location (a layer group's DRAM scratch buffers all carry the
    group's nodes: which of them holds the last node's output is unknown)."""
    values: dict[str, np.ndarray] = {}
    refs = evaluate_graph(graph, weights, {k: np.asarray(v, np.float64) for k, v in inputs.items()},
                          dtype=np.float64, values=values)
    order = {name: i for i, name in enumerate(values)}
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    claims = Counter(tuple(nodes) for nodes, _ in captured)
    for nodes, got in captured:
        node = nodes[-1] if nodes else None
        if claims[tuple(nodes)] > 1:  # (a layer group's scratch buffers share its location: whose value?)
            continue
        if node is None or node in seen or node not in values or values[node].size != got.size:
            continue
        seen.add(node)
        rows.append({"node": node, "fused": nodes, "shape": list(values[node].shape),
                     **_row(got, values[node], precision)})
    rows.sort(key=lambda r: order[r["node"]])
    for name, got in outputs.items():
        if name in refs:
            rows.append({"node": f"output '{name}'", "fused": [], "shape": list(np.shape(refs[name])),
                         **_row(got, refs[name], precision)})
    first = next((r["node"] for r in rows if not r["ok"]), None)
    return rows, first


def format_rows(rows: list[dict[str, Any]], first: str | None, precision: str | None = None) -> str:
    lines = [f"compare-all: {len(rows)} tensors against a float64 reference of the original graph",
             "   max abs err   max rel err    cosine  ok  node"]
    for r in rows:
        lines.append(f"  {r['max_abs_err']:>11.3g} {r['max_rel_err']:>13.3g} {r['cosine']:>9.6f}  "
                     f"{'ok' if r['ok'] else 'NO'}  {r['node']}")
    rtol = PRECISION_RTOL.get(precision or "")
    tol = f"{precision}'s: rtol {rtol:.3g}, atol {rtol:.3g} x max |ref|" if rtol else \
        "rtol 1e-3, atol 1e-4 x max(1, max |ref|)"
    lines.append(f"first node over tolerance: {first}" if first else f"every tensor within tolerance ({tol})")
    return "\n".join(lines)

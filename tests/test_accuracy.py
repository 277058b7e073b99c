"""npu-run --compare-all (tools/accuracy.py): every ONNX tensor kept in DRAM against a
float64 reference of the original graph, and the first node over tolerance."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.weights import weights_of
from runtime.device import Runtime
from runtime.run import random_inputs
from sim import signature
from tools.accuracy import compare_all
from tools.npu_run import main as npu_run_main
from tools.testkit.transformers import bert_layers
from tools.tolerance import metrics


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    model = bert_layers(layers=1, seq=64, hidden=256, heads=4, ffn=1024)
    path = tmp_path_factory.mktemp("acc") / "bert.onnx"
    onnx.save(model, str(path))
    graph, w = import_model(model)
    m, w2 = import_model(model)
    compile_module(m, None, w2, verify_each=False)
    rt = Runtime(capture=True)
    ins = random_inputs(signature(m), 0)
    req = rt.run(rt.load(m, weights_of(m)), ins)
    return path, graph, w, ins, req


def test_every_kept_tensor_matches_the_float64_reference(bert):
    _, graph, w, ins, req = bert
    rows, first = compare_all(graph, w, ins, req.captured, req.outputs)
    assert first is None
    names = [r["node"] for r in rows]
    assert len(rows) >= 5 and names[-1].startswith("output '")
    assert any("MatMul" in n or "Add" in n for n in names) and any("LayerNorm" in n for n in names)
    assert all(r["ok"] and r["cosine"] > 0.99999 for r in rows)


def test_the_first_node_over_tolerance_is_named(bert):
    _, graph, w, ins, req = bert
    captured = [(nodes, v.copy()) for nodes, v in req.captured]
    rows, _ = compare_all(graph, w, ins, captured, req.outputs)
    order = [r["node"] for r in rows]
    # corrupt the second and fourth kept tensors: the second is named, in graph order
    bad = {order[1], order[3]}
    for nodes, v in captured:
        if nodes[-1] in bad:
            v *= 1.5
    rows, first = compare_all(graph, w, ins, captured, req.outputs)
    assert first == order[1]
    assert [r["node"] for r in rows if not r["ok"]] == [order[1], order[3]]


def test_metrics():
    ref = np.array([1.0, -2.0, 3.0])
    m = metrics(ref * 1.0001, ref)
    assert m["ok"] and m["cosine"] == pytest.approx(1.0) and m["max_abs_err"] == pytest.approx(3e-4)
    m = metrics(-ref, ref)
    assert not m["ok"] and m["cosine"] == pytest.approx(-1.0)


def test_npu_run_compare_all_on_onnx_and_executable(bert, tmp_path, capsys):
    path = bert[0]
    rep = tmp_path / "r.json"
    assert npu_run_main([str(path), "--compare-all", "--report", str(rep)]) == 0
    out = capsys.readouterr().out
    assert "compare-all:" in out and "every tensor within tolerance" in out
    data = json.loads(rep.read_text())["compare_all"]
    assert data["first_over_tolerance"] is None and len(data["tensors"]) >= 5
    exe = tmp_path / "bert.npuexe"
    from tools.api import compile as compile_model
    compile_model(str(path)).save(exe)
    assert npu_run_main([str(exe), "--compare-all"]) == 0
    assert "every tensor within tolerance" in capsys.readouterr().out


def test_compare_all_needs_the_original_graph(tmp_path, capsys):
    low = tmp_path / "low.mlir"
    from tools.npu_import import main as npu_import_main
    from tools.npu_opt import main as npu_opt_main
    assert npu_import_main(["tests/models/lenet.onnx", "-o", str(tmp_path / "g.mlir")]) == 0
    npu_opt_main([str(tmp_path / "g.mlir"), "-p", "npu-default", "-o", str(low)])
    capsys.readouterr()
    assert npu_run_main([str(low), "--compare-all"]) == 2
    assert "need the original graph" in capsys.readouterr().err

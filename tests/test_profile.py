"""runtime.profile / npu-run --profile: shares, critical path, hardware figures, trace flows."""

from __future__ import annotations

import json

import pytest

from lowering.importer.onnx_import import import_model
from lowering.pipeline import compile_module
from npu_dialects.weights import weights_of
from runtime.device import Runtime
from runtime.profile import critical_path, format_profile
from runtime.run import random_inputs
from sim import signature
from tools.npu_run import main as npu_run_main
from tools.testkit.transformers import bert_layers


@pytest.fixture(scope="module")
def waited():
    m, w = import_model(bert_layers(layers=1, seq=64, hidden=256, heads=4, ffn=1024))
    compile_module(m, None, w, verify_each=False)
    rt = Runtime(trace=True)
    req = rt.run(rt.load(m, weights_of(m)), random_inputs(signature(m), 0))
    return req, rt


def test_core_shares_cover_the_run(waited):
    req, _ = waited
    p = req.profile()
    assert p["cycles"] == req.report["cycles"] > 0
    for c in p["cores"]:
        total = c["compute"] + c["dma"] + c["sync_wait"] + c["idle"]
        assert total == pytest.approx(1.0, abs=1e-6), c
    assert sum(c["tasks"] for c in p["cores"]) == len(req.records) >= 8


def test_critical_path_runs_from_a_first_task_to_the_last_to_end(waited):
    req, rt = waited
    recs = {r.index: r for r in req.records}
    path = critical_path(req.records, rt.arch.sync_latency)
    assert len(path) >= 2
    assert recs[path[-1]].end == max(r.end for r in req.records)
    for a, b in zip(path, path[1:]):  # each step: a signal it consumed, or the task before it on its core
        assert a in recs[b].deps or (recs[a].core == recs[b].core and recs[a].end <= recs[b].start + 1e-9)
    first = recs[path[0]]
    assert first.start == pytest.approx(min(r.start for r in req.records))
    p = req.profile(top=5)
    assert len(p["top_tasks"]) == 5
    spans = [t["span"] for t in p["top_tasks"]]
    assert spans == sorted(spans, reverse=True)
    assert any(t["critical"] for t in req.profile(top=13)["top_tasks"])


def test_hardware_level_figures(waited):
    req, _ = waited
    h = req.profile()["hardware"]
    u = req.report["utilization"]
    assert h["cube_utilization"] == pytest.approx(u["cube"]) and h["vector_utilization"] == pytest.approx(u["vector"])
    assert h["dram_bw_utilization"] == pytest.approx(u["dma"])
    assert 0.0 < h["dma_compute_overlap"] <= 1.0
    assert set(h["stalls"]) == {"dma_wait", "channel_wait", "drain", "sync_wait", "idle"}
    text = format_profile(req.profile())
    assert text.startswith("profile: ") and "top tasks by span" in text and "DMA/compute overlap" in text


def test_trace_has_event_flows_and_named_slices(waited):
    req, rt = waited
    evs = rt.trace_json()["traceEvents"]
    starts = {e["id"] for e in evs if e.get("ph") == "s"}
    ends = {e["id"] for e in evs if e.get("ph") == "f"}
    assert starts and starts == ends
    assert len(starts) == sum(len(r.deps) for r in req.records)
    slices = [e for e in evs if e.get("ph") == "X"]
    kernels = {r.kernel for r in req.records}
    assert all(e["name"] in kernels or e["name"].split(": ", 1)[-1] in kernels for e in slices)
    assert all(e["args"].get("onnx_nodes") for e in slices if e["cat"] in ("task", "cube", "vector"))


def test_npu_run_profile(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert npu_run_main(["tests/models/lenet.onnx", "--profile", str(out)]) == 0
    text = capsys.readouterr().out
    assert "profile: " in text and "core  tasks  compute" in text
    p = json.loads(out.read_text())
    assert set(p) >= {"cycles", "cores", "top_tasks", "critical_path", "hardware"}

"""npu-dse: spec checking, the grid and the guided search, failed points kept, the
results cache (an interrupted sweep resumes), the one-parameter sweeps, and the same
results from a Dask (or Ray) cluster as from local processes."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
from pathlib import Path

import pytest

from tools.dse.curves import parse_size, parse_values, summarize_depth, summarize_sram
from tools.dse.report import pareto
from tools.dse.spec import AREA, SpecError, area, parse_spec
from tools.npu_dse import main as npu_dse

MODELS = Path(__file__).parent / "models"
LENET, BERT = str(MODELS / "lenet.onnx"), str(MODELS / "bert_encoder.onnx")


def _spec(tmp_path: Path, body: str, name: str = "s.toml") -> str:
    p = tmp_path / name
    p.write_text(body)
    return str(p)


SMALL = f"""
models = ["{LENET}", "{BERT}"]
[space]
cores = [1, 2]
sram_bytes = [512, 16384, 131072]
"""


def _rows(out: Path) -> list[dict]:
    with open(out / "results.csv") as f:
        return list(csv.DictReader(f))


def _figures(doc: dict) -> dict:
    """Every point's figures without the wall-clock times (the part that must not differ)."""
    return {(p["arch"], m): {k: v for k, v in r.items() if not k.endswith("_s")}
            for p in doc["points"] for m, r in p["models"].items()}


def test_grid_sweep_writes_every_point_and_keeps_failures(tmp_path, capsys):
    out = tmp_path / "out"
    assert npu_dse([_spec(tmp_path, SMALL), "--out", str(out), "--jobs", "2", "--cache-dir",
                    str(tmp_path / "cache"), "-q"]) == 0
    rows = _rows(out)
    assert len(rows) == 2 * 3 * 2  # cores x SRAM sizes x models
    failed = [r for r in rows if r["status"] != "ok"]
    assert len(failed) == 2 and all(r["sram_bytes"] == "512" and r["model"] == "bert_encoder" for r in failed)
    assert "no tile fits sram_bytes=512" in failed[0]["error"] and failed[0]["status"] == "failed"
    ok = [r for r in rows if r["status"] == "ok"]
    assert all(int(r["cycles"]) > 0 and float(r["dram_vs_min"]) >= 1.0 for r in ok)
    doc = json.loads((out / "results.json").read_text())
    assert doc["search_used"] == "grid" and doc["cached_rows"] == 0
    front = doc["pareto"]["geomean"]
    assert front and all(p["geomean_cycles"] is not None for p in doc["points"] if p["arch"] in front)
    if importlib.util.find_spec("matplotlib") is not None:  # (the [dse] extra; without it, no picture)
        assert (out / "pareto.svg").stat().st_size > 1000 and (out / "pareto.png").exists()
    text = capsys.readouterr().out
    assert "Pareto front" in text and "runs failed" in text

    # run again: every row comes from the cache, the figures are the same
    again = tmp_path / "again"
    assert npu_dse([_spec(tmp_path, SMALL), "--out", str(again), "--jobs", "1", "--cache-dir",
                    str(tmp_path / "cache"), "-q"]) == 0
    doc2 = json.loads((again / "results.json").read_text())
    assert doc2["cached_rows"] == 12
    assert _figures(doc2) == _figures(doc)


def test_an_interrupted_sweep_resumes_from_the_cache(tmp_path):
    cache = tmp_path / "cache"
    first = f'models = ["{LENET}"]\n[space]\ncores = [1, 2]\n'
    assert npu_dse([_spec(tmp_path, first), "--out", str(tmp_path / "a"), "--cache-dir", str(cache), "-q"]) == 0
    more = f'models = ["{LENET}"]\n[space]\ncores = [1, 2, 4]\n'
    assert npu_dse([_spec(tmp_path, more), "--out", str(tmp_path / "b"), "--cache-dir", str(cache), "-q"]) == 0
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    assert doc["cached_rows"] == 2 and len(doc["points"]) == 3


def test_guided_search_evaluates_the_budget(tmp_path):
    pytest.importorskip("optuna")
    body = f"""
models = ["{LENET}"]
budget = 6
seed = 3
[space]
cores = [1, 2, 3, 4]
sram_bytes = [65536, 131072, 262144, 524288]
dma_channels = [1, 2, 4]
"""
    out = tmp_path / "out"
    assert npu_dse([_spec(tmp_path, body), "--out", str(out), "--no-cache", "--jobs", "2", "-q"]) == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["search_used"] == "optuna"
    assert len(doc["points"]) == 6 and len({p["arch"] for p in doc["points"]}) == 6
    # the same seed picks the same points
    out2 = tmp_path / "out2"
    assert npu_dse([_spec(tmp_path, body), "--out", str(out2), "--no-cache", "--jobs", "1", "-q"]) == 0
    doc2 = json.loads((out2 / "results.json").read_text())
    assert [p["arch"] for p in doc2["points"]] == [p["arch"] for p in doc["points"]]


def test_dask_cluster_gives_the_same_results(tmp_path):
    distributed = pytest.importorskip("distributed")
    spec = _spec(tmp_path, f'models = ["{LENET}", "{BERT}"]\n[space]\ncores = [1, 2]\n'
                           'sram_bytes = [65536, 262144]\n')
    local = tmp_path / "local"
    assert npu_dse([spec, "--out", str(local), "--no-cache", "--jobs", "2", "-q"]) == 0
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        address = c.scheduler_address.replace("tcp://", "dask://")
        remote = tmp_path / "dask"
        assert npu_dse([spec, "--out", str(remote), "--no-cache", "--cluster", address, "-q"]) == 0
    a = json.loads((local / "results.json").read_text())
    b = json.loads((remote / "results.json").read_text())
    assert b["engine"].startswith("dask://")
    assert _figures(a) == _figures(b) and a["pareto"] == b["pareto"]


def test_ray_cluster_gives_the_same_results(tmp_path):
    pytest.importorskip("ray")
    spec = _spec(tmp_path, f'models = ["{LENET}"]\n[space]\ncores = [1, 2]\n')
    local, remote = tmp_path / "local", tmp_path / "ray"
    assert npu_dse([spec, "--out", str(local), "--no-cache", "--jobs", "1", "-q"]) == 0
    assert npu_dse([spec, "--out", str(remote), "--no-cache", "--cluster", "ray", "-q"]) == 0
    a = json.loads((local / "results.json").read_text())
    b = json.loads((remote / "results.json").read_text())
    assert _figures(a) == _figures(b)


def test_fusion_depth_and_sram_sweeps(tmp_path, capsys):
    out = tmp_path / "out"
    assert npu_dse(["--fusion-depth", "1..4", BERT, "--out", str(out), "--no-cache", "-q"]) == 0
    doc = json.loads((out / "fusion_depth.json").read_text())
    rows = doc["models"]["bert_encoder"]
    assert [r["value"] for r in rows] == [1, 2, 3, 4]
    assert rows[0]["kernels"] > rows[-1]["kernels"]  # deeper groups: fewer kernels
    assert rows[0]["dram_bytes"] > rows[-1]["dram_bytes"]  # ... and less DRAM traffic
    assert "knee" in capsys.readouterr().out
    assert npu_dse(["--sram-sizes", "16K..256K", BERT, "--out", str(out), "--no-cache", "-q",
                    "--dram-target", "1.1"]) == 0
    s = json.loads((out / "sram_bytes.json").read_text())["summary"]["bert_encoder"]
    rows = json.loads((out / "sram_bytes.json").read_text())["models"]["bert_encoder"]
    best = min(r["cycles"] for r in rows if r["status"] == "ok")
    knee = next(r for r in rows if r["value"] == s["knee"])
    assert knee["cycles"] <= 1.05 * best
    assert all(r["cycles"] > 1.05 * best for r in rows if r["value"] < s["knee"] and r["status"] == "ok")
    assert s["meets_dram_target"] is not None and s["margin"] is not None and s["margin"] >= 0
    assert "within 5% from" in capsys.readouterr().out


@pytest.mark.parametrize("body,message", [
    ("models = []", "'models': expected a non-empty list"),
    (f'models = ["{LENET}"]\n[space]\ncorez = [1]', "'space.corez': not an arch parameter"),
    (f'models = ["{LENET}"]\n[space]\nfreq = [1]', "'space.freq': not a parameter that changes cycles"),
    (f'models = ["{LENET}"]\n[space]\ncores = [0, 2]', "'space.cores': arch parameter 'cores' must be a positive"),
    (f'models = ["{LENET}"]\n[space]\ncube = ["16x16"]', "'space.cube'"),
    (f'models = ["{LENET}"]\n[space]\nsram_bytes = {{ from = 8, to = 4 }}', "1 <= from <= to"),
    (f'models = ["{LENET}"]\nsearch = "random"', "'search': expected one of"),
    (f'models = ["{LENET}"]\n[area]\nmacs = 1', "'area.macs': unknown coefficient"),
    (f'models = ["{LENET}"]\nbogus = 1', "'bogus': unknown key"),
    ("models = [", "not valid TOML"),
    ('models = ["nope.onnx"]', "model 'nope.onnx': cannot read"),
    ('models = ["resnet5"]', "unknown model 'resnet5'"),
])
def test_bad_specs_are_diagnosed(tmp_path, capsys, body, message):
    assert npu_dse([_spec(tmp_path, body), "--out", str(tmp_path / "o"), "-q"]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert err.startswith("error: ")


@pytest.mark.parametrize("argv,message", [
    (["--fusion-depth", "0..3", LENET], "bad --fusion-depth"),
    (["--sram-sizes", "64Q..1M", LENET], "bad --sram-sizes"),
    (["--fusion-depth", "1..3", "--sram-sizes", "64K", LENET], "two sweeps"),
    (["--fusion-depth", "1..3", "--arch", "nope", LENET], "bad --arch 'nope'"),
    (["a.toml", "b.toml"], "expected one SPEC.toml"),
    (["x.toml", "--cluster", "slurm://x"], None),
])
def test_bad_usage(tmp_path, capsys, argv, message):
    code = npu_dse(argv + ["-q"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if message is None:  # (the spec is read first: a missing file is a user error)
        assert code == 1
    else:
        assert code == 2 and message in err


def test_area_proxy_and_pareto():
    from npu_dialects.arch import parse_arch_spec
    assert area(parse_arch_spec("default")) == 21520  # the formula's worked example (spec.AREA)
    assert area(parse_arch_spec("default,cores=8")) == 2 * area(parse_arch_spec("default")) - 16 - 512
    assert area(parse_arch_spec("default"), {"sram_kib": 0.0}) == 21520 - 4 * 512 * AREA["sram_kib"]
    assert pareto([(1, 9, "a"), (2, 5, "b"), (3, 6, "c"), (4, 1, "d"), (2, 7, "e")]) == ["a", "b", "d"]


def test_range_and_value_parsing():
    assert parse_values("1..4") == [1, 2, 3, 4]
    assert parse_values("64K..512K", parse_size) == [65536, 131072, 262144, 524288]
    assert parse_values("384K,256K", parse_size) == [262144, 393216]
    assert parse_size("2M") == 2 << 20 and parse_size("512KiB") == 512 << 10
    spec = parse_spec({"models": ["m"], "space": {"dram_bw": {"from": 64, "to": 256, "step": 64},
                                                  "cube": ["16x16x16", "32x16x16"]}})
    assert spec.size() == 8 and spec.grid()[1] == {"dram_bw": 64, "cube": "32x16x16"}
    sized = parse_spec({"models": ["m"], "space": {"sram_bytes": ["384K", "1M", 131072]}})
    assert sized.axes[0].values == (393216, 1048576, 131072)
    with pytest.raises(SpecError, match="listed twice"):
        parse_spec({"models": ["m"], "space": {"cores": [2, 2]}})


def test_curve_summaries():
    def row(v, cycles, dram=1.0, peak=100):
        return {"value": v, "status": "ok", "cycles": cycles, "dram_vs_min": dram, "memory.sram_peak_bytes": peak}
    d = summarize_depth([row(1, 1000), row(2, 797), row(3, 795), row(4, 850), row(5, 790)])
    assert d["best"] == 5 and d["knee"] == 2 and d["slower"] == [4]
    s = summarize_sram([row(64, 2000, 2.0, 60), row(128, 1040, 1.7, 100), row(256, 1000, 1.5, 200)], 1.6)
    assert s["knee"] == 128 and s["meets_dram_target"] == 256 and math.isclose(s["margin"], 0.28)


def test_precision_parameters_sweep():
    """The precision parameters are swept like any other: integers, and `requant` by name."""
    from tools.dse.spec import point_spec
    spec = parse_spec({"models": ["m"], "space": {"requant": ["float", "fixed"], "cube_i8": [2, 4],
                                                  "cube_f32_passes": {"from": 1, "to": 4, "scale": "log2"},
                                                  "vector_i8": [4], "vector_f16": [2]}})
    assert spec.size() == 12 and spec.axes[0].values == ("float", "fixed")
    assert [point_spec("default", p) for p in spec.grid()[:2]] == ["default", "default,cube_f32_passes=2"]
    assert point_spec("default", spec.grid()[-1]) == "default,cube_i8=4,cube_f32_passes=4,requant=fixed"
    with pytest.raises(SpecError, match="'space.requant': arch parameter 'requant': expected one of float, fixed"):
        parse_spec({"models": ["m"], "space": {"requant": ["float", "round"]}})
    with pytest.raises(SpecError, match="'space.requant': expected names: \"float\", \"fixed\", got 1.5"):
        parse_spec({"models": ["m"], "space": {"requant": [1.5]}})
    with pytest.raises(SpecError, match="'space.cube_i8': arch parameter 'cube_i8' must be a positive"):
        parse_spec({"models": ["m"], "space": {"cube_i8": [0]}})


def test_the_compute_precision_is_swept_as_an_option(tmp_path):
    """`precision` in the space compiles each model in that type on the point's arch (an
    npu-default option, not an arch parameter): points are labelled by it, the arch
    spec stays the arch's alone, and the 16-bit points run in fewer cycles and bytes."""
    from tools.dse.spec import point_label, point_options, point_spec
    spec = parse_spec({"models": ["m"], "space": {"cores": [2, 4], "precision": ["f32", "bf16"]}})
    p = spec.grid()[1]
    assert (point_spec("default", p), point_options(p)) == ("default,cores=2", {"precision": "bf16"})
    assert point_label("default", p) == "default,cores=2 precision=bf16"
    for space, options, message in (({"precision": ["f32", "int8"]}, {}, "'space.precision': expected distinct values"),
                                    ({"precision": ["f16"]}, {"precision": "f16"}, "also set in 'options'")):
        with pytest.raises(SpecError, match=message):
            parse_spec({"models": ["m"], "space": space, "options": options})
    out = tmp_path / "o"
    body = f'models = ["{LENET}"]\nsearch = "grid"\n[space]\nprecision = ["f32", "f16"]\n'
    assert npu_dse([_spec(tmp_path, body), "--out", str(out), "--no-cache", "--jobs", "1", "-q"]) == 0
    rows = {r["precision"]: r for r in _rows(out)}
    assert rows["f32"]["arch"] == "default precision=f32" and rows["f16"]["status"] == "ok"
    assert int(rows["f16"]["dram_bytes"]) < int(rows["f32"]["dram_bytes"])
    assert int(rows["f16"]["cycles"]) < int(rows["f32"]["cycles"])
    # the Pareto picture stars the base arch once per option value (it starred none)
    from tools.dse.report import base_points
    from tools.dse.sweep import Point
    pts = [Point({"precision": v}, f"default precision={v}", 1.0, spec="default") for v in ("f32", "f16")]
    pts.append(Point({"cores": 2, "precision": "f32"}, "default,cores=2 precision=f32", 1.0, spec="default,cores=2"))
    assert base_points(spec, pts) == ["default precision=f32", "default precision=f16"]

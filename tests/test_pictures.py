"""npu-run --graph / --html (tools/pictures.py, tools/report_files.py): DOT with kernels
and layer groups boxed, SVG through graphviz when present, the HTML compile report,
rendered in headless Chromium when it is installed."""

from __future__ import annotations

import os
import shutil
import subprocess

import onnx
import pytest

from tools.npu_run import main as npu_run_main
from tools.testkit.png import read_png
from tools.testkit.transformers import bert_layers

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("pics") / "tiny_bert.onnx"
    onnx.save(bert_layers(layers=1, seq=64, hidden=256, heads=4, ffn=1024), str(path))
    return path


def test_graph_before_and_after_fusion(model, tmp_path, capsys, monkeypatch):
    prefix = str(tmp_path / "g")
    assert npu_run_main([str(model), "--graph", prefix]) == 0
    before, after = (open(f"{prefix}.{t}.dot").read() for t in ("before", "after"))
    assert "cluster" not in before and "MatMul" in before
    assert before.count("->") == after.count("->") > 10
    assert after.count("subgraph cluster_k") >= 5  # fused kernels boxed
    assert "attention" in after and 'label="kernel /layer.0/attention/query/MatMul_7"' in after
    if shutil.which("dot"):
        assert open(f"{prefix}.after.svg").read().lstrip().startswith(("<?xml", "<svg"))
    # without graphviz: the DOT files and a note, no SVG
    monkeypatch.setattr(shutil, "which", lambda name: None)
    prefix2 = str(tmp_path / "h")
    capsys.readouterr()
    assert npu_run_main([str(model), "--graph", prefix2]) == 0
    assert "graphviz's 'dot' is not on PATH" in capsys.readouterr().err
    assert os.path.exists(f"{prefix2}.after.dot") and not os.path.exists(f"{prefix2}.after.svg")


def test_layer_groups_are_boxed_around_their_kernels():
    from lowering.importer.onnx_import import import_model, load_model
    from lowering.pipeline import compile_module
    from tools.pictures import compiled_kernels, fused_kernels, graph_dot
    from tools.report_files import fused_graph
    graph, w = import_model(load_model("tests/models/lenet.onnx"))
    m, w2 = import_model(load_model("tests/models/lenet.onnx"))
    compile_module(m, None, w2, verify_each=False)  # LeNet: one layer group of every kernel
    dot = graph_dot(graph, "lenet", fused_kernels(fused_graph(graph)), compiled_kernels(m))
    assert dot.count("subgraph cluster_g") == 1 and 'label="layer group /conv1/Conv' in dot
    group = dot[dot.index("subgraph cluster_g0"):]
    assert group.count("subgraph cluster_k") >= 4


def test_html_report_contents(model, tmp_path):
    out = tmp_path / "r.html"
    assert npu_run_main([str(model), "--html", str(out)]) == 0
    page = out.read_text()
    assert "<h1 id='model-name'>tiny_bert</h1>" in page
    for section in ("Graph after fusion", "Kernels: predicted vs simulated", "Timeline", "Memory map", "Passes",
                    "Remarks"):
        assert f"<h2>{section}" in page
    assert page.count("<svg") >= 3 and "src=" not in page and "href=\"http" not in page  # self-contained
    assert "<td>npu-tile</td>" in page and "<td>npu-memplan</td>" in page  # the passes with their times


def _shot(html_path: str, png: str) -> tuple[int, int, list[bytes]]:
    assert CHROMIUM is not None
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={png}", "--window-size=1000,700", f"file://{html_path}"],
                   check=True, capture_output=True, timeout=120)
    return read_png(png)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_report_renders_in_chromium(model, tmp_path):
    out = tmp_path / "r.html"
    assert npu_run_main([str(model), "--html", str(out)]) == 0
    w, h, rows = _shot(str(out), str(tmp_path / "r.png"))
    white = b"\xff\xff\xff"
    inked = sum(1 for r in rows for i in range(0, len(r), 3) if r[i:i + 3] != white)
    assert inked > 0.02 * w * h  # not blank
    # the model's name: the title band equals a page holding only the same title
    page = out.read_text()
    ref = tmp_path / "ref.html"
    ref.write_text(page[:page.index("</h1>") + 5] + "</body></html>")
    _, _, ref_rows = _shot(str(ref), str(tmp_path / "ref.png"))
    band = range(0, 80)
    assert any(rows[y] != white * w for y in band)
    assert [rows[y] for y in band] == [ref_rows[y] for y in band]
    wrong = tmp_path / "wrong.html"
    wrong.write_text(page[:page.index("<h1")] + "<h1 id='model-name'>another model</h1></body></html>")
    _, _, wrong_rows = _shot(str(wrong), str(tmp_path / "wrong.png"))
    assert [rows[y] for y in band] != [wrong_rows[y] for y in band]


def test_remarks_to_a_file_and_in_the_html_report(model, tmp_path, capsys):
    rem, page = tmp_path / "r.txt", tmp_path / "r.html"
    assert npu_run_main([str(model), "--remarks", str(rem), "--html", str(page)]) == 0
    lines = rem.read_text().splitlines()
    assert all(line.startswith("remark: npu-") for line in lines)
    kinds = {(line.split(": ")[1], line.split(": ")[2]) for line in lines}
    assert {("npu-fuse", "applied"), ("npu-fuse", "missed"), ("npu-tile", "applied"),
            ("npu-layer-group", "applied"), ("npu-layer-group", "missed")} <= kinds
    assert any("layernorm not fused into the epilogue" in line for line in lines)
    assert any("attention: q @ kt, scale, mask, softmax, @ v as one kernel" in line for line in lines)
    assert any("cycles against" in line for line in lines if "npu-layer-group: applied" in line)
    html_text = page.read_text()
    assert "remark: npu-fuse: applied" in html_text and "(no remarks recorded)" not in html_text
    capsys.readouterr()
    assert npu_run_main([str(model), "--remarks"]) == 0
    assert "remark: npu-tile: applied" in capsys.readouterr().err

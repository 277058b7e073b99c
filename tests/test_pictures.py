"""npu-run --graph / --html (tools/pictures.py, tools/report_files.py): the graph as
compiled in DOT, each kernel of the compiled program boxed (its clusters hold exactly
the ONNX nodes the run report gives each kernel) and a layer group's kernels boxed
inside it; SVG through graphviz when present, the HTML compile report, rendered in
headless Chromium when it is installed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import onnx
import pytest

from tools.npu_run import main as npu_run_main
from tools.testkit.png import read_png
from tools.testkit.transformers import bert_layers

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
MODELS = "tests/models"
_STR = r'"((?:[^"\\]|\\.)*)"'


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("pics") / "tiny_bert.onnx"
    onnx.save(bert_layers(layers=1, seq=64, hidden=256, heads=4, ffn=1024), str(path))
    return path


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), s)


def parse_dot(dot: str) -> tuple[list[dict], dict[str, list[str]], list[tuple[str, str]]]:
    """The clusters of a DOT text as a tree (label, node ids, nested clusters), each
    node's label lines, and the edges. (Read as DOT, not through tools/pictures.py.)"""
    root: dict = {"label": None, "nodes": [], "clusters": []}
    stack = [root]
    labels: dict[str, list[str]] = {}
    edges: list[tuple[str, str]] = []
    for line in dot.splitlines()[1:]:
        s = line.strip()
        if m := re.match(r"subgraph (cluster\w*) \{ label=" + _STR, s):
            c = {"label": _unquote(m.group(2)), "nodes": [], "clusters": []}
            stack[-1]["clusters"].append(c)
            stack.append(c)
        elif s == "}":
            stack.pop()
        elif m := re.match(r"(\w+) \[label=" + _STR + r"\];$", s):
            labels[m.group(1)] = _unquote(m.group(2)).split("\n")
            stack[-1]["nodes"].append(m.group(1))
        elif m := re.match(r"(\w+) -> (\w+);$", s):
            edges.append((m.group(1), m.group(2)))
    assert stack == [], "unbalanced braces"
    return root["clusters"], labels, edges


def _ids(cluster: dict) -> list[str]:
    return cluster["nodes"] + [i for c in cluster["clusters"] for i in _ids(c)]


def onnx_nodes(cluster: dict, labels: dict[str, list[str]]) -> set[str]:
    """The ONNX nodes of a cluster's boxes (each box: its ONNX nodes, then a last line)."""
    return {n for i in _ids(cluster) for n in labels[i][:-1]}


def kernel_of(cluster: dict) -> str:
    label = cluster["label"]
    for prefix in ("layer group ", "kernel "):
        if label.startswith(prefix):
            return label[len(prefix):]
    raise AssertionError(f"cluster label {label!r}")


def _run(path: str, tmp_path, *extra: str) -> tuple[str, dict]:
    prefix = str(tmp_path / "g")
    assert npu_run_main([path, "--graph", prefix, "--report", str(tmp_path / "r.json"), *extra]) == 0
    with open(f"{prefix}.after.dot") as f, open(tmp_path / "r.json") as r:
        return f.read(), json.load(r)


def assert_picture_is_the_report(dot: str, report: dict) -> None:
    """The top-level clusters are the report's kernels, one each, holding exactly the
    ONNX nodes the report gives that kernel."""
    clusters, labels, _ = parse_dot(dot)
    got = {kernel_of(c): onnx_nodes(c, labels) for c in clusters}
    assert len(got) == len(clusters)
    assert got == {k["name"]: set(k["onnx_nodes"]) for k in report["kernels"]}


def _zoo(name: str) -> str:
    from tools.testkit.zoo import light_models
    path = light_models().get(name)
    if path is None or not os.path.exists(path):
        pytest.skip(f"the onnx wheel has no light_{name}.onnx")
    return str(path)


@pytest.mark.parametrize("name,extra", [
    ("lenet", ()), ("lenet", ("-p", "npu-default{fuse-disable=layer-group}")),
    ("bert_encoder", ()), ("bert_encoder", ("-p", "npu-default{fuse-disable=layer-group}")),
    ("mlp", ()), ("unet_seg", ()), ("unet_seg", ("-p", "npu-default{fuse-disable=layer-group}")),
    ("yolo_head", ()), ("squeezenet", ("--timing-only",))])
def test_clusters_are_the_report_kernels(name, extra, tmp_path):
    path = _zoo(name) if name == "squeezenet" else f"{MODELS}/{name}.onnx"
    dot, report = _run(path, tmp_path, *extra)
    assert_picture_is_the_report(dot, report)
    _, labels, _ = parse_dot(dot)
    assert "(as compiled)" not in dot  # every kernel drawn from the compiled graph's ops


def _boxes(clusters: list[dict], labels) -> dict[str, list[list[str]]]:
    """Each (innermost) kernel box: its boxes' label lines."""
    out: dict[str, list[list[str]]] = {}
    for c in clusters:
        if c["clusters"]:
            out |= _boxes(c["clusters"], labels)
        else:
            out[kernel_of(c)] = [labels[i] for i in c["nodes"]]
    return out


def test_lenet_is_drawn_as_compiled(tmp_path):
    """conv1, the pool and conv2 are separate kernels (the remarks' kernels, inside the
    one layer group the report lists) and npu-hoist-pool's pool comes before the ReLU."""
    dot, report = _run(f"{MODELS}/lenet.onnx", tmp_path)
    clusters, labels, edges = parse_dot(dot)
    assert [c["label"] for c in clusters] == ["layer group /conv1/Conv../fc3/Gemm"]
    boxes = _boxes(clusters, labels)
    assert list(boxes)[:4] == ["/conv1/Conv", "/pool/MaxPool", "/conv1/Conv#2", "/pool_1/MaxPool"]
    assert boxes["/conv1/Conv"] == [["/conv1/Conv", "conv2d"]]
    assert boxes["/pool/MaxPool"] == [["/pool/MaxPool", "maxpool"]]
    assert boxes["/conv1/Conv#2"] == [["/conv1/Conv", "add"], ["/relu/Relu", "relu"], ["/conv2/Conv", "conv2d"]]
    of = {tuple(v): k for k, v in labels.items()}
    chain = [of[("/conv1/Conv", "conv2d")], of[("/pool/MaxPool", "maxpool")], of[("/conv1/Conv", "add")],
             of[("/relu/Relu", "relu")], of[("/conv2/Conv", "conv2d")]]
    assert all(e in edges for e in zip(chain, chain[1:]))
    # without layer groups: the same kernels, each a kernel of the report
    dot, report = _run(f"{MODELS}/lenet.onnx", tmp_path, "-p", "npu-default{fuse-disable=layer-group}")
    clusters, labels, _ = parse_dot(dot)
    assert all(c["label"].startswith("kernel ") and not c["clusters"] for c in clusters)
    assert [kernel_of(c) for c in clusters] == [k["name"] for k in report["kernels"]]
    assert _boxes(clusters, labels)["/conv1/Conv#2"] == boxes["/conv1/Conv#2"]
    assert ["/flatten/Flatten", "reshape"] in [labels[i] for i in _loose(dot)]  # a view: no task, no box


def _loose(dot: str) -> list[str]:
    clusters, labels, _ = parse_dot(dot)
    inside = {i for c in clusters for i in _ids(c)}
    return [i for i in labels if i not in inside]


def test_bert_encoder_every_op_in_its_kernel(tmp_path):
    """One task: attention and GELU inside its box, nothing but the inputs and outputs outside."""
    dot, report = _run(f"{MODELS}/bert_encoder.onnx", tmp_path)
    assert len(report["kernels"]) == 1 and report["tasks"] == 1
    clusters, labels, _ = parse_dot(dot)
    assert [labels[i] for i in _loose(dot)] == [["input 0"], ["outputs"]]
    ops = [labels[i][-1] for i in _ids(clusters[0])]
    assert ops.count("attention") == 2 and ops.count("gelu") == 2 and ops.count("layernorm") == 5


def test_an_executable_is_drawn_with_its_recorded_pipeline(tmp_path):
    from tools.npu_compile import main as npu_compile_main
    exe = str(tmp_path / "lenet.npuexe")
    assert npu_compile_main([f"{MODELS}/lenet.onnx", "-o", exe, "--no-cache", "-p",
                             "npu-default{fuse-disable=layer-group,pool-epilogue}"]) == 0
    dot, report = _run(exe, tmp_path)
    assert len(report["kernels"]) > 5
    assert_picture_is_the_report(dot, report)
    assert "(as compiled)" not in dot


def test_a_kernel_the_tiled_graph_does_not_reproduce_is_drawn_from_the_program():
    """Given the tiled graph of another compile (or none), a compiled kernel it does not
    reproduce is one box listing the kernel's ONNX nodes, never a made-up kernel."""
    from lowering.importer.onnx_import import import_model, load_model
    from npu_dialects.arch import preset
    from tools.api import compile_graph
    from tools.pictures import compiled_dot, compiled_kernels
    from tools.report_files import tiled_graph
    arch, pipeline = preset("default"), "npu-default{fuse-disable=layer-group,conv-prologue,pool-epilogue}"
    graph, w = import_model(load_model(f"{MODELS}/lenet.onnx"))
    m, w2 = import_model(load_model(f"{MODELS}/lenet.onnx"))
    compiled = compiled_kernels(compile_graph(m, arch, w2, pipeline)[0])
    report = {"kernels": [{"name": k, "onnx_nodes": ns} for k, ns in compiled]}
    for tiled, kept in ((tiled_graph(graph, w, arch, None), {"/conv1/Conv", "/pool/MaxPool", "/fc1/Gemm"}),
                        (None, set())):
        dot = compiled_dot(tiled, compiled, "lenet")
        assert_picture_is_the_report(dot, report)
        clusters, labels, _ = parse_dot(dot)
        drawn = {kernel_of(c) for c in clusters if labels[c["nodes"][0]][-1] != "(as compiled)"}
        assert kept <= drawn and "/conv1/Conv#2" not in drawn
    assert "(as compiled)" not in compiled_dot(tiled_graph(graph, w, arch, pipeline), compiled, "lenet")


def test_graph_before_and_after_fusion(model, tmp_path, capsys, monkeypatch):
    prefix = str(tmp_path / "g")
    assert npu_run_main([str(model), "--graph", prefix]) == 0
    before, after = (open(f"{prefix}.{t}.dot").read() for t in ("before", "after"))
    assert "cluster" not in before and "MatMul" in before
    assert after.count("->") > 10
    assert after.count("subgraph cluster") >= 5  # kernels boxed
    assert "attention" in after
    if shutil.which("dot"):
        assert open(f"{prefix}.after.svg").read().lstrip().startswith(("<?xml", "<svg"))
    # without graphviz: the DOT files and a note, no SVG
    monkeypatch.setattr(shutil, "which", lambda name: None)
    prefix2 = str(tmp_path / "h")
    capsys.readouterr()
    assert npu_run_main([str(model), "--graph", prefix2]) == 0
    assert "graphviz's 'dot' is not on PATH" in capsys.readouterr().err
    assert os.path.exists(f"{prefix2}.after.dot") and not os.path.exists(f"{prefix2}.after.svg")


def test_html_report_contents(model, tmp_path):
    out = tmp_path / "r.html"
    assert npu_run_main([str(model), "--html", str(out)]) == 0
    page = out.read_text()
    assert "<h1 id='model-name'>tiny_bert</h1>" in page
    for section in ("Graph as compiled", "Kernels: predicted vs simulated", "Timeline", "Memory map", "Passes",
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

"""The `npu-memviz` command: the SVG of a memory plan (one panel for the DRAM arena
and one per core's SRAM, one <rect> per buffer, the peak marked), and its exit codes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import StringAttr

from lowering.importer.onnx_import import import_model, load_model
from lowering.pipeline import compile_module
from npu_dialects import module_text
from npu_dialects.arch import parse_arch_spec
from npu_dialects.task import AllocOp, SramOp
from npu_dialects.weights import weights_of
from tools.npu_memviz import main

SVG = "{http://www.w3.org/2000/svg}"
LENET = str(Path(__file__).parent / "models" / "lenet.onnx")


def compiled(arch_spec: str = "default", **options):
    arch = parse_arch_spec(arch_spec)
    module, weights = import_model(load_model(LENET), arch)
    compile_module(module, arch, weights, verify_each=False, **options)
    return module, weights_of(module)


def plan_facts(module) -> tuple[int, int, int]:
    """(DRAM buffers, SRAM buffers, arena bytes) read off the module independently."""
    ops = list(module.walk())
    arena = module.attributes["npu.dram_arena_bytes"].value.data
    return (sum(isinstance(o, AllocOp) for o in ops), sum(isinstance(o, SramOp) for o in ops), arena)


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def panels(svg_path) -> dict[str, ET.Element]:
    root = ET.parse(svg_path).getroot()
    assert root.tag == f"{SVG}svg"
    return {g.get("id"): g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"}


def check_svg(path, module, cores: int) -> None:
    n_dram, n_sram, arena = plan_facts(module)
    root = ET.parse(path).getroot()
    ps = panels(path)
    assert list(ps) == ["dram"] + [f"sram-core{c}" for c in range(cores)]
    # every <rect> in the picture is a buffer, each with a hover title
    rects = list(root.iter(f"{SVG}rect"))
    assert len(rects) == n_dram + n_sram
    assert len(list(ps["dram"].iter(f"{SVG}rect"))) == n_dram
    assert sum(len(list(ps[f"sram-core{c}"].iter(f"{SVG}rect"))) for c in range(cores)) == n_sram
    assert all(r.find(f"{SVG}title") is not None and r.find(f"{SVG}title").text for r in rects)
    assert all(float(r.get("width")) > 0 and float(r.get("height")) > 0 for r in rects)
    if not n_dram:  # e.g. the whole model in one layer group: nothing in the DRAM arena
        assert arena == 0
        assert any(t.text == "no buffers" for t in ps["dram"].iter(f"{SVG}text"))
        return
    # the peak label of the DRAM panel is the plan's arena size
    label = next(t for t in ps["dram"].iter(f"{SVG}text") if t.get("class") == "peak-label")
    assert int(label.get("data-bytes")) == arena
    assert re.match(rf"peak {arena} B\b", label.text)
    bound = next(t for t in ps["dram"].iter(f"{SVG}text") if t.get("class") == "bound-label")
    assert int(bound.get("data-bytes")) == module.attributes["npu.dram_lower_bound_bytes"].value.data
    titles = [r.find(f"{SVG}title").text for r in ps["dram"].iter(f"{SVG}rect")]
    assert any("/conv1/Conv" in t for t in titles)  # kernel / ONNX node names in the hover titles


@pytest.mark.parametrize("time", ["cycles", "tasks"])
def test_onnx_model_svg(tmp_path, capsys, time):
    out = tmp_path / "mem.svg"
    rc, stdout, err = run_cli(capsys, LENET, "--time", time, "-o", str(out))
    assert rc == 0, err
    assert "wrote" in stdout
    module, _ = compiled()
    check_svg(out, module, cores=4)
    unit = "cycles" if time == "cycles" else "task #"
    assert any(t.text == unit for t in ET.parse(out).getroot().iter(f"{SVG}text"))


def test_lowered_mlir_svg(tmp_path, capsys):
    module, weights = compiled("default,cores=2", disable=("npu-layer-group",))  # keep DRAM activations
    np.savez(tmp_path / "low.weights.npz", **weights)
    module.attributes["npu.weights"] = StringAttr("low.weights.npz")
    (tmp_path / "low.mlir").write_text(module_text(module))
    out = tmp_path / "low.svg"
    rc, _, err = run_cli(capsys, str(tmp_path / "low.mlir"), "-o", str(out))
    assert rc == 0, err
    check_svg(out, module, cores=2)


def test_module_without_memory_plan_is_an_error(tmp_path, capsys):
    module, _ = compiled(disable=("npu-layer-group",))
    text = re.sub(r"npu_task\.alloc \{offset = \d+ : i64\}", "npu_task.alloc", module_text(module))
    (tmp_path / "noplan.mlir").write_text(text)
    rc, _, err = run_cli(capsys, str(tmp_path / "noplan.mlir"), "--time", "tasks",
                         "-o", str(tmp_path / "x.svg"))
    assert rc == 1
    assert err.startswith("error:") and "memory plan" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.svg").exists()


def test_bad_input_exits_1(tmp_path, capsys):
    (tmp_path / "bad.mlir").write_text("this is not mlir\n")
    (tmp_path / "bad.onnx").write_bytes(b"\x00garbage")
    for path in (tmp_path / "missing.onnx", tmp_path / "bad.onnx", tmp_path / "missing.mlir",
                 tmp_path / "bad.mlir"):
        rc, _, err = run_cli(capsys, str(path), "-o", str(tmp_path / "x.svg"))
        assert rc == 1, (path, err)
        assert err.startswith(("error:", f"{path}:")), err  # (`FILE[:LINE:COL]: error: ...` for a bad file)
    rc, _, err = run_cli(capsys, LENET, "--time", "tasks", "-o", str(tmp_path / "no" / "dir" / "x.svg"))
    assert rc == 1 and err.startswith("error: cannot write"), err
    assert len(err.strip().splitlines()) == 1


def test_bad_usage_exits_2(tmp_path, capsys):
    out = str(tmp_path / "x.svg")
    for argv in ([LENET], [LENET, "-o", out, "--time", "hours"], [LENET, "-o", out, "--arch", "nosuch"],
                 [str(tmp_path / "model.txt"), "-o", out], [], [LENET, "-o", out, "--bogus"]):
        rc, _, err = run_cli(capsys, *argv)
        assert rc == 2, (argv, err)
        assert "error" in err

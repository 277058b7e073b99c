"""`npu-opt` as a user meets it: MLIR pipeline syntax, pass listing, weight files,
and clean diagnostics (exit 1 for bad input, 2 for bad usage, never a traceback)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tools.npu_opt import PipelineSyntaxError, main, unwrap_pipeline

GRAPH = """builtin.module {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %r = npu_graph.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("act")
    func.return %r : tensor<4x8xf32>
  }
}
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture()
def graph(tmp_path):
    p = tmp_path / "g.mlir"
    p.write_text(GRAPH)
    return str(p)


def test_unwrap_pipeline():
    assert unwrap_pipeline("builtin.module(npu-fuse,npu-tile{double-buffer=false})") == \
        "npu-fuse,npu-tile{double-buffer=false}"
    assert unwrap_pipeline("npu-fuse") == "npu-fuse"
    for bad in ("builtin.module(npu-fuse", "func.func(npu-fuse)", "builtin.module(func.func(cse))"):
        with pytest.raises(PipelineSyntaxError):
            unwrap_pipeline(bad)


def test_pass_pipeline_and_p_give_the_same_output(capsys, graph):
    rc1, a, _ = run(capsys, graph, "--pass-pipeline=builtin.module(npu-default)", "--print-debuginfo")
    rc2, b, _ = run(capsys, graph, "-p", "npu-default", "--print-debuginfo")
    assert rc1 == rc2 == 0 and a == b
    assert "npu_task.task" in a and 'loc("act")' in a  # ONNX node names survive as locations
    rc3, c, _ = run(capsys, graph, "-p", "npu-default")
    assert rc3 == 0 and "loc(" not in c  # (printed only with --print-debuginfo, as in MLIR)
    rc4, d, _ = run(capsys, graph, "-p", "builtin.module(npu-default)", "--print-debuginfo")
    assert rc4 == 0 and d == a  # (-p takes the anchored form too, as npu-run's -p does)


def test_list_passes_names_every_registered_pass(capsys):
    from lowering import get_all_passes

    rc, out, _ = run(capsys, "--list-passes")
    assert rc == 0
    for name in get_all_passes():
        assert f"  {name} " in out
    assert "unavailable" not in out


@pytest.mark.parametrize("text,message", [
    ("builtin.module {\n  func.func @f( {\n}\n", "error"),
    ('builtin.module {\n  func.func @f(%x: tensor<4xf32>) -> tensor<5xf32> {\n'
     '    %r = npu_graph.relu %x : (tensor<4xf32>) -> tensor<5xf32>\n    func.return %r : tensor<5xf32>\n  }\n}\n',
     "'npu_graph.relu': broadcasting the operands gives shape [4], but the result type has [5]"),
])
def test_bad_mlir_is_a_one_line_diagnostic(capsys, tmp_path, text, message):
    p = tmp_path / "bad.mlir"
    p.write_text(text)
    rc, _, err = run(capsys, str(p), "-p", "npu-default")
    assert rc == 1 and message in err and "Traceback" not in err


def test_pass_errors_name_the_pass_and_the_node(capsys, tmp_path):
    p = tmp_path / "big.mlir"
    p.write_text(GRAPH.replace("builtin.module {", "builtin.module attributes {npu.arch = #npu.arch<sram_bytes = 64>} {"))
    rc, _, err = run(capsys, str(p), "-p", "npu-default")
    assert rc == 1
    # at the op's place in the file (the relu as parsed), MLIR style, the source line after
    assert err.startswith(f"{p}:3:5: error: npu-tile: kernel 'act': no tile fits sram_bytes=64")
    assert "(ONNX node act)" in err and err.splitlines()[1].lstrip().startswith("%r = npu_graph.relu")


@pytest.mark.parametrize("argv,code,message", [
    (["-p", "no-such-pass"], 2, "unknown pass 'no-such-pass' in pipeline 'no-such-pass'\nhint: "),
    (["-p", "npu-fusee"], 2, "unknown pass 'npu-fusee' in pipeline 'npu-fusee'\nhint: did you mean 'npu-fuse'"),
    (["-p", "npu-fuse{bogus=1}"], 2, "pass 'npu-fuse' has no option 'bogus'\nhint: its options: disable"),
    (["-p", "npu-fuse,,npu-tile"], 2, "bad pass pipeline 'npu-fuse,,npu-tile': expected pass name here (column 10)"),
    (["-p", "npu-default{precision=f16,fuse-disable=layer-group}"], 2,
     "(column 39)\nhint: a pass's options are separated by spaces, e.g. 'npu-default{precision=f16 fuse-disable="),
    (["--pass-pipeline=builtin.module(func.func(cse))"], 2, "nested pass anchors"),
    (["-p", "npu-fuse{disable=bogus}"], 1, "unknown fusion rule"),
    (["-p", "npu-schedule{max-cores=x}"], 2, "pass 'npu-schedule': bad value 'x' for option 'max-cores'"),
])
def test_bad_pipelines(capsys, graph, argv, code, message):
    rc, _, err = run(capsys, graph, *argv)
    assert rc == code and message in err and "Traceback" not in err


def test_missing_file(capsys, tmp_path):
    rc, _, err = run(capsys, str(tmp_path / "nope.mlir"), "-p", "npu-fuse")
    assert rc == 1 and "nope.mlir" in err


def test_weights_follow_the_output(tmp_path):
    """Output written elsewhere: the weight side file is still found from the new place."""
    from lowering.importer.onnx_import import import_model
    from npu_dialects import module_text
    from npu_dialects.weights import save_weights
    from tools.testkit import models

    module, weights = import_model(models.mlp())
    src = tmp_path / "src"
    dst = tmp_path / "dst" / "deep"
    src.mkdir()
    dst.mkdir(parents=True)
    from xdsl.dialects.builtin import StringAttr
    module.attributes["npu.weights"] = StringAttr("mlp.weights.npz")
    save_weights(str(src / "mlp.weights.npz"), weights)
    (src / "mlp.mlir").write_text(module_text(module))
    out = dst / "low.mlir"
    subprocess.run([sys.executable, "-m", "tools.npu_opt", str(src / "mlp.mlir"), "-p", "npu-default",
                    "-o", str(out)], check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    r = subprocess.run([sys.executable, "-m", "tools.npu_run", str(out)], capture_output=True, text=True,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr

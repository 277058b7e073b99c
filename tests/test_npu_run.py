"""The `npu-run` command: task-level .mlir inputs (no compiler needed) and ONNX
models / graph-level .mlir (need the whole compiler; skipped until it exists)."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.printer import Printer

from tests.simkit import D, S, module, task
from tests.test_sim import matmul_module
from tools.npu_run import compare, main


def _compiler_available() -> bool:
    try:
        import lowering.importer.onnx_import  # noqa: F401
        import lowering.pipeline  # noqa: F401
        from lowering import get_all_passes
        for factory in get_all_passes().values():
            factory()
    except ImportError:
        return False
    return True


needs_compiler = pytest.mark.skipif(not _compiler_available(),
                                    reason="the compiler (lowering.pipeline and its passes) is not importable yet")


def write_module(m: ModuleOp, path, weights: dict[str, np.ndarray] | None = None) -> str:
    if weights is not None:
        wpath = os.path.splitext(str(path))[0] + ".weights.npz"
        np.savez(wpath, **weights)
        m.attributes["npu.weights"] = StringAttr(os.path.basename(wpath))
    buf = io.StringIO()
    Printer(stream=buf, print_debuginfo=True).print_op(m)
    path.write_text(buf.getvalue())
    return str(path)


@pytest.fixture
def mm(tmp_path):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((20, 12)).astype(np.float32)
    x = rng.standard_normal((10, 20)).astype(np.float32)
    path = write_module(matmul_module(10, 20, 12, 4, 8, 8), tmp_path / "mm.mlir", {"w": w})
    np.savez(tmp_path / "in.npz", x=x)
    return path, x, w, tmp_path


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def test_lowered_mlir_outputs_report_trace(mm, capsys):
    path, x, w, d = mm
    rc, out, err = run_cli(capsys, path, "--inputs", str(d / "in.npz"), "--outputs", str(d / "out.npz"),
                           "--report", str(d / "r.json"), "--trace", str(d / "t.json"))
    assert rc == 0, err
    assert err == ""
    with np.load(d / "out.npz") as z:
        assert z.files == ["y"]
        np.testing.assert_allclose(z["y"], x @ w, rtol=1e-5, atol=1e-5)
    rep = json.loads((d / "r.json").read_text())
    assert {"arch", "cycles", "time_us", "tasks", "dram_bytes_read", "dram_bytes_written", "utilization",
            "kernels"} <= set(rep)
    assert "check" not in rep
    assert rep["kernels"][0]["onnx_nodes"] == ["gemm0"]
    tr = json.loads((d / "t.json").read_text())
    tracks = {e["args"]["name"] for e in tr["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "core 0" in tracks and "core 3 dma 1" in tracks
    for word in ("cycles:", "tasks:", "DRAM bytes:", "utilization:"):
        assert word in out
    assert f"cycles:      {rep['cycles']} " in out


def test_random_inputs_are_seeded(mm, capsys):
    path, _, _, d = mm
    outs = []
    for seed in ("0", "0", "5"):
        assert run_cli(capsys, path, "--seed", seed, "--outputs", str(d / "o.npz"))[0] == 0
        with np.load(d / "o.npz") as z:
            outs.append(z["y"])
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0], outs[2])


def test_check_needs_onnx_or_graph_level(mm, capsys):
    rc, _, err = run_cli(capsys, mm[0], "--check")
    assert rc == 2
    assert err.strip().startswith("error: --check, --compare-all, --graph and --html need the original graph")


def test_bad_arch_spec_is_usage_error(mm, capsys):
    rc, _, err = run_cli(capsys, mm[0], "--arch", "default,cores=zero")
    assert rc == 2
    assert err.startswith("error: bad --arch 'default,cores=zero': arch parameter 'cores'")


def test_argparse_errors_exit_2(capsys):
    assert main(["--no-such-flag"]) == 2
    assert main([]) == 2
    capsys.readouterr()


def test_unknown_extension_is_usage_error(tmp_path, capsys):
    rc, _, err = run_cli(capsys, str(tmp_path / "model.bin"))
    assert rc == 2 and "INPUT must be an .onnx model or an .mlir file" in err


def test_missing_file_and_parse_error(tmp_path, capsys):
    rc, _, err = run_cli(capsys, str(tmp_path / "nope.mlir"))
    assert rc == 1 and err.startswith("error: cannot read ") and len(err.strip().splitlines()) == 1
    bad = tmp_path / "bad.mlir"
    bad.write_text("builtin.module {\n  %x = foo.bar\n}\n")
    rc, _, err = run_cli(capsys, str(bad))
    assert rc == 1 and err.splitlines()[0] == f"{bad}:2:8: error: unknown operation 'foo.bar'"
    assert err.splitlines()[1:3] == ["  %x = foo.bar", "       ^^^^^^^"]  # the source line, MLIR style


def test_bad_inputs(mm, capsys):
    path, _, _, d = mm
    np.savez(d / "wrong.npz", x=np.zeros((3, 3), np.float32))
    rc, _, err = run_cli(capsys, path, "--inputs", str(d / "wrong.npz"))
    assert rc == 1 and err == "error: input 'x' has shape [3, 3], expected [10, 20]\n"
    np.savez(d / "missing.npz", z=np.zeros((10, 20), np.float32))
    rc, _, err = run_cli(capsys, path, "--inputs", str(d / "missing.npz"))
    assert rc == 1 and err.startswith("error: unknown input 'z'")
    (d / "garbage.npz").write_bytes(b"not a zip")
    rc, _, err = run_cli(capsys, path, "--inputs", str(d / "garbage.npz"))
    assert rc == 1 and err.startswith(f"error: cannot read inputs file '{d / 'garbage.npz'}'")


def test_missing_weights_file(mm, capsys):
    path, _, _, d = mm
    os.remove(d / "mm.weights.npz")
    rc, _, err = run_cli(capsys, path)
    assert rc == 1 and err.startswith("error: cannot read weight file") and len(err.strip().splitlines()) == 1


def test_sim_error_prints_one_line_then_details(tmp_path, capsys):
    body = task("consumer", 1, f"%f = npu_task.sram {{offset = 0 : i64}} : {S(64)}", waits=[3])
    path = write_module(module([], [("y", D(4))], body), tmp_path / "dead.mlir")
    rc, _, err = run_cli(capsys, path)
    lines = err.splitlines()
    assert rc == 1
    assert lines[0].startswith("error: deadlock at cycle ") and "no core can make progress" in lines[0]
    assert any("slot 3: no remaining task signals it" in ln for ln in lines[1:])


def test_arch_mismatch_warns(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NPU_SANITIZE", "0")  # (the module writes no output)
    body = task("f", 0, f"%f = npu_task.sram {{offset = 0 : i64}} : {S(64)}\n"
                        f"npu_compute.fill %f {{value = 1.0 : f32}} : {S(64)}")
    m = module([], [("y", D(4))], body, attrs="npu.arch = #npu.arch<cores = 2>")
    path = write_module(m, tmp_path / "k.mlir")
    rc, out, err = run_cli(capsys, path, "--arch", "default,cores=3")
    assert rc == 0
    assert err.startswith(f"warning: '{path}' was compiled for arch 'default,cores=2' but runs on "
                          "'default,cores=3' (--arch)")
    rc, out, err = run_cli(capsys, path, "--arch", "default,cores=2")
    assert rc == 0 and err == ""


def test_compare_tolerances():
    ref = {"y": np.array([1000.0, 0.0, -2.0])}
    ok, problems = compare({"y": np.array([1000.05, 0.05, -2.0], np.float32)}, ref)
    assert ok["ok"] and problems == []  # atol = 1e-4 * 1000 = 0.1
    bad, problems = compare({"y": np.array([1000.0, 0.2, -2.0], np.float32)}, ref)
    assert not bad["ok"] and bad["max_abs_err"] == pytest.approx(0.2, rel=1e-6)
    assert problems and problems[0].startswith("output 'y' differs from the reference")
    nan, _ = compare({"y": np.array([np.nan, 0, -2.0], np.float32)}, ref)
    assert not nan["ok"]
    shape, problems = compare({"y": np.zeros(2, np.float32)}, ref)
    assert not shape["ok"] and "shape" in problems[0]


# --------------------------------------------------------------------------- with the compiler


def gemm_relu_onnx(path: str, seed: int = 0) -> str:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    W = numpy_helper.from_array(rng.standard_normal((32, 16)).astype(np.float32), "W")
    B = numpy_helper.from_array(rng.standard_normal((16,)).astype(np.float32), "B")
    g = helper.make_graph([helper.make_node("Gemm", ["x", "W", "B"], ["h"], name="fc1"),
                           helper.make_node("Relu", ["h"], ["y"], name="relu1")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [W, B])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def cnn_onnx(path: str, size: int = 32, seed: int = 0) -> str:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    chans = [3, 8, 16]
    nodes, inits, x = [], [], "x"
    for i in range(2):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((chans[i + 1], chans[i], 3, 3)) / np.sqrt(9 * chans[i])).astype(np.float32), f"w{i}"))
        inits.append(numpy_helper.from_array(0.1 * rng.standard_normal(chans[i + 1]).astype(np.float32), f"b{i}"))
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
                  helper.make_node("MaxPool", [f"r{i}"], [f"p{i}"], name=f"pool{i}", kernel_shape=[2, 2],
                                   strides=[2, 2])]
        x = f"p{i}"
    feat = 16 * (size // 4) ** 2
    inits.append(numpy_helper.from_array((rng.standard_normal((10, feat)) / np.sqrt(feat)).astype(np.float32), "fw"))
    inits.append(numpy_helper.from_array(np.zeros(10, np.float32), "fb"))
    nodes += [helper.make_node("Flatten", [x], ["f"], name="flatten"),
              helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


@needs_compiler
@pytest.mark.parametrize("maker", [gemm_relu_onnx, cnn_onnx])
@pytest.mark.parametrize("arch", ["default", "edge-small", "default,cores=1,dma_channels=1"])
def test_onnx_check_against_onnxruntime(tmp_path, capsys, maker, arch):
    path = maker(str(tmp_path / "m.onnx"))
    rc, out, err = run_cli(capsys, path, "--check", "--arch", arch, "--report", str(tmp_path / "r.json"))
    assert rc == 0, err
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["check"]["ok"] is True and rep["check"]["max_abs_err"] < 1e-3
    assert {"max_abs_err", "max_rel_err", "ok"} <= set(rep["check"])
    assert rep["arch"]["cores"] == (1 if arch != "default" else 4)
    assert "check:       ok vs onnxruntime" in out


@needs_compiler
def test_onnx_inputs_file_and_outputs(tmp_path, capsys):
    import onnxruntime as ort
    path = gemm_relu_onnx(str(tmp_path / "m.onnx"))
    x = np.random.default_rng(3).standard_normal((4, 32)).astype(np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    rc, _, err = run_cli(capsys, path, "--inputs", str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "o.npz"))
    assert rc == 0, err
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    with np.load(tmp_path / "o.npz") as z:
        np.testing.assert_allclose(z["y"], want, rtol=1e-4, atol=1e-4)


@needs_compiler
def test_graph_level_mlir_is_compiled_and_checked(tmp_path, capsys):
    from lowering.importer.onnx_import import import_model, load_model
    m, weights = import_model(load_model(cnn_onnx(str(tmp_path / "m.onnx"))))
    path = write_module(m, tmp_path / "g.mlir", weights)
    rc, out, err = run_cli(capsys, path, "--check", "--report", str(tmp_path / "r.json"))
    assert rc == 0, err
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["check"]["ok"] and "numpy float64 reference" in out


@needs_compiler
def test_bad_onnx_file_is_a_user_error(tmp_path, capsys):
    (tmp_path / "bad.onnx").write_bytes(b"\x00garbage")
    rc, _, err = run_cli(capsys, str(tmp_path / "bad.onnx"))
    assert rc == 1 and err.startswith(f"{tmp_path / 'bad.onnx'}: error: cannot read the ONNX model: ")


@needs_compiler
def test_failed_check_exits_1(tmp_path, capsys, monkeypatch):
    import tools.npu_run as npu_run
    path = gemm_relu_onnx(str(tmp_path / "m.onnx"))
    real = npu_run.reference_outputs

    def perturbed(*args):
        refs, what = real(*args)
        return {k: v + 1.0 for k, v in refs.items()}, what
    monkeypatch.setattr(npu_run, "reference_outputs", perturbed)
    rc, out, err = run_cli(capsys, path, "--check", "--report", str(tmp_path / "r.json"))
    assert rc == 1
    assert "check:       FAILED vs onnxruntime" in out
    assert err.startswith("error: check failed: output 'y' differs from the reference")
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["check"]["ok"] is False and rep["check"]["max_abs_err"] == pytest.approx(1.0, rel=1e-5)


def test_internal_errors_have_no_traceback_unless_npu_debug(mm, capsys, monkeypatch):
    import tools.npu_run as npu_run

    def boom(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(npu_run, "load_input", boom)
    monkeypatch.delenv("NPU_DEBUG", raising=False)
    rc, _, err = run_cli(capsys, mm[0])
    assert rc == 1 and err.startswith("internal error: RuntimeError: boom")
    monkeypatch.setenv("NPU_DEBUG", "1")
    assert main([mm[0]]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_npu_run_takes_a_pass_pipeline(capsys):
    lenet = "tests/models/lenet.onnx"
    assert main([lenet, "--check"]) == 0
    assert "tasks:       1 (1 kernels)" in capsys.readouterr().out  # one layer group
    # layer groups really off, also with npu-fuse disabled (it used to record the rule)
    assert main([lenet, "--check", "-p", "npu-default{disable=npu-fuse fuse-disable=layer-group}"]) == 0
    out = capsys.readouterr().out
    assert "tasks:       13 (13 kernels)" in out and "check:       ok" in out  # (each conv's bias is an add after its pool)
    assert main([lenet, "--pass-pipeline", "builtin.module(npu-default{fuse-disable=layer-group})"]) == 0
    assert "(7 kernels)" in capsys.readouterr().out
    assert main([lenet, "-p", "npu-nothing"]) == 2
    assert "unknown pass 'npu-nothing'" in capsys.readouterr().err
    assert main([lenet, "-p", "npu-fuse"]) == 1  # stops before the task level
    assert "stops before the task level" in capsys.readouterr().err


def test_npu_run_compile_observability(capsys):
    lenet = "tests/models/lenet.onnx"
    assert main([lenet, "--time-passes", "--print-ir-after", "npu-fuse", "--pattern-stats"]) == 0
    err = capsys.readouterr().err
    assert "Execution time report" in err and "npu-layer-group" in err and "npu-memplan" in err
    assert "npu_graph.fused" in err  # the IR after npu-fuse
    assert "npu-canonicalize" in err and "fired" in err.lower()
    assert main([lenet, "--print-ir-after", "npu-nothing"]) == 2
    assert "unknown pass(es) npu-nothing" in capsys.readouterr().err
    assert main([lenet]) == 0
    assert capsys.readouterr().err == ""  # nothing unless asked

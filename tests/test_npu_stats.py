"""`npu-stats`: the op mix against the ONNX graph, MACs against their formula, the JSON
sections, the aggregate over several models, slow paths and the error contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import onnx
import pytest

from tools.npu_stats import SECTIONS, main, reason

MODELS = Path(__file__).parent / "models"


def stats_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


@pytest.fixture(scope="module")
def two_models(tmp_path_factory) -> dict:
    """lenet and mlp through npu-stats with --json (with their aggregate)."""
    path = tmp_path_factory.mktemp("stats") / "s.json"
    assert main([str(MODELS / "lenet.onnx"), str(MODELS / "mlp.onnx"), "--json", str(path)]) == 0
    return json.loads(path.read_text())


def _stats(tmp_path, model: str) -> dict:
    path = tmp_path / "s.json"
    assert main([str(MODELS / model), "--json", str(path)]) == 0
    return json.loads(path.read_text())["models"][0]


def _nodes(model: str) -> Counter:
    return Counter(n.op_type for n in onnx.load(str(MODELS / model)).graph.node)


def test_op_counts_are_the_onnx_node_counts(two_models, tmp_path, capsys) -> None:
    lenet, mlp = two_models["models"]
    bert = _stats(tmp_path, "bert_encoder.onnx")
    capsys.readouterr()
    for s, model in ((lenet, "lenet.onnx"), (mlp, "mlp.onnx"), (bert, "bert_encoder.onnx")):
        assert {r["op_type"]: r["nodes"] for r in s["op_mix"]} == dict(_nodes(model)), model
        assert all(0 <= r["kept"] <= r["nodes"] for r in s["op_mix"])
    # bert's Constant nodes are folded at import: none is kept as a graph op
    assert next(r for r in bert["op_mix"] if r["op_type"] == "Constant")["kept"] == 0


def test_macs_follow_the_conv_and_gemm_formulas(two_models) -> None:
    lenet = two_models["models"][0]
    model = onnx.shape_inference.infer_shapes(onnx.load(str(MODELS / "lenet.onnx")))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in [*model.graph.value_info, *model.graph.input, *model.graph.output]}
    shapes.update({i.name: list(i.dims) for i in model.graph.initializer})
    conv = gemm = 0
    for n in model.graph.node:
        if n.op_type == "Conv":  # N x Co x Oh x Ow outputs, each Ci/group x kh x kw MACs
            _, ci_g, kh, kw = shapes[n.input[1]]
            out = shapes[n.output[0]]
            conv += out[0] * out[1] * out[2] * out[3] * ci_g * kh * kw
        elif n.op_type == "Gemm":  # M x K @ K x N
            (m, k), n_out = shapes[n.input[0]], shapes[n.output[0]][1]
            gemm += m * k * n_out
    mix = {r["op_type"]: r for r in lenet["op_mix"]}
    assert mix["Conv"]["macs"] == conv == 6 * 28 * 28 * 1 * 5 * 5 + 16 * 10 * 10 * 6 * 5 * 5
    assert mix["Gemm"]["macs"] == gemm == 400 * 120 + 120 * 84 + 84 * 10
    assert mix["Relu"]["macs"] == 0
    assert mix["Conv"]["macs_share"] == pytest.approx(conv / (conv + gemm))
    # every MAC of the model is in some kernel's cube ops
    assert sum(k["cube_macs"] for k in lenet["kernels"]) == lenet["headline"]["model_macs"] == conv + gemm


def test_json_has_every_section(two_models) -> None:
    for s in two_models["models"]:
        assert set(SECTIONS) <= set(s)
        assert s["headline"]["cycles"] > 0 and s["headline"]["roofline_ratio"] >= 1
        for k in s["kernels"]:
            assert {"sram_bytes", "sram_share", "dram_vs_min", "min_dram_bytes", "cube_waste", "bound", "dma",
                    "pattern", "kind"} <= set(k)
            assert 0 < k["sram_share"] <= 1
        isa = s["isa"]
        assert 0 <= isa["dma_bound_share"] <= 1 and 0 < isa["cube_utilization"] <= 1
        assert isa["cube_cycles"] == sum(k["cube_cycles"] for k in s["kernels"]) > 0
    lenet = two_models["models"][0]
    kernels = lenet["patterns"]["kernels"]  # (npu-hoist-pool moves each conv's bias and ReLU after its pool)
    assert kernels["maxpool+add+relu"] == 1 and kernels["add+relu+conv2d"] == 1 and kernels["conv2d"] == 1
    assert set(two_models["aggregate"]) == {"models", "op_mix", "types", "patterns", "blocked"}


def test_aggregate_sums_the_models(two_models) -> None:
    lenet, mlp = two_models["models"]
    agg = two_models["aggregate"]
    assert [m["model"] for m in agg["models"]] == [lenet["model"], mlp["model"]]
    assert agg["models"][0]["cycles"] == lenet["headline"]["cycles"]
    want = _nodes("lenet.onnx") + _nodes("mlp.onnx")
    assert {r["op_type"]: r["nodes"] for r in agg["op_mix"]} == dict(want)
    macs = Counter({r["op_type"]: r["macs"] for r in lenet["op_mix"]})
    macs.update({r["op_type"]: r["macs"] for r in mlp["op_mix"]})
    assert {r["op_type"]: r["macs"] for r in agg["op_mix"]} == {k: v for k, v in macs.items()}
    for level in ("kernels", "groups"):
        summed = Counter(lenet["patterns"][level]) + Counter(mlp["patterns"][level])
        assert agg["patterns"][level] == dict(summed)
    assert sum(b["count"] for b in agg["blocked"]) == sum(b["count"] for s in (lenet, mlp) for b in s["blocked"])


def test_vector_unit_kernels_are_slow_paths(tmp_path, capsys) -> None:
    """bert_encoder's fused attention runs its matmuls on the vector unit (npu_compute.apply)
    and its token lookup is an element gather: both are slow paths, named by ONNX node."""
    bert = _stats(tmp_path, "bert_encoder.onnx")
    out = capsys.readouterr().out
    paths = {r["path"]: r for r in bert["slow_paths"]}
    assert paths["vector matmul"]["cycles"] > 0
    assert any("attention/MatMul" in n for n in paths["vector matmul"]["nodes"])
    assert paths["gather"]["nodes"] == ["/tokens/Gather"]
    assert bert["isa"]["vector_macs"] > 0
    assert any(b["pass"] == "npu-tile" and "slow path: 'npu_graph.gather'" in b["reason"] for b in bert["blocked"])
    assert "vector matmul" in out and "gather" in out


def test_remark_reasons_group_without_numbers_and_names() -> None:
    a = reason("'n3' and the next kernel not grouped: their tensors do not fit one core's SRAM together: whole "
               "they need 4030720 bytes, 3506432 more than its 524288, and no strip height fits")
    b = reason("'n81' and the next kernel not grouped: their tensors do not fit one core's SRAM together: whole "
               "they need 7066624 bytes, 6542336 more than its 524288, and no strip height fits")
    assert a == b and "n3" not in a and a.startswith("not grouped: their tensors do not fit")
    c = reason("'n22' and the next kernel not grouped: their tensors do not fit one core's SRAM together: whole "
               "they need 7357440 bytes, 6833152 more than its 524288, and no strip group forms: a strip group "
               "stores only its last op's result, and the result of 'n22' is also read after them")
    assert c == ("not grouped: their tensors do not fit one core's SRAM together: whole they need N bytes, N more "
                 "than its N, and no strip group forms: a strip group stores only its last op's result, and the "
                 "result of 'X' is also read after them")


def test_terminal_tables_truncate_to_top(capsys) -> None:
    rc, out, _ = stats_cli(capsys, str(MODELS / "bert_encoder.onnx"), "--top", "2")
    assert rc == 0
    assert "op mix (ONNX op types):" in out and "... " in out and "more" in out
    assert "figures for the next ISA:" in out


def test_missing_model_is_a_user_error(capsys, tmp_path) -> None:
    missing = str(tmp_path / "nope.onnx")
    rc, _, err = stats_cli(capsys, missing)
    assert rc == 1 and missing in err.splitlines()[0]
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    rc, _, err = stats_cli(capsys, str(garbage))
    assert rc == 1 and str(garbage) in err.splitlines()[0]
    rc, _, err = stats_cli(capsys, "no_such_zoo_model")
    assert rc == 1 and "no_such_zoo_model" in err


def test_bad_arch_is_a_usage_error(capsys) -> None:
    rc, _, err = stats_cli(capsys, str(MODELS / "lenet.onnx"), "--arch", "bogus")
    assert rc == 2 and "bogus" in err.splitlines()[0]


def test_console_entry(tmp_path) -> None:
    """The console script (`console_main`): one diagnostic line, exit 1, no traceback."""
    missing = str(tmp_path / "absent.onnx")
    env = {**os.environ, "NPU_DEBUG": "0"}
    p = subprocess.run([sys.executable, "-m", "tools.npu_stats", missing], capture_output=True, text=True,
                       env=env, cwd=Path(__file__).parent.parent, timeout=120)
    assert p.returncode == 1 and p.stderr.splitlines() == [f"error: cannot read model '{missing}': no such file"]


def test_op_mix_by_element_type(two_models, tmp_path, capsys) -> None:
    """The op mix by element type: an f32 model is all f32 (its MACs, its tensors' bytes);
    with --precision f16 the cube ops compute in f16 (same MACs), the tensors they read
    and write are half the bytes, and only the casts at the edges stay f32."""
    lenet = two_models["models"][0]
    total = sum(r["macs"] for r in lenet["op_mix"])
    assert [(r["type"], r["macs"]) for r in lenet["types"]] == [("f32", total)]
    assert two_models["aggregate"]["types"][0]["type"] == "f32"
    path = tmp_path / "h.json"
    assert main([str(MODELS / "lenet.onnx"), "--precision", "f16", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    half = {r["type"]: r for r in json.loads(path.read_text())["models"][0]["types"]}
    assert half["f16"]["macs"] == total and half["f32"]["macs"] == 0
    assert half["f32"]["ops"] == 2  # (the casts of the input and the output)
    assert half["f16"]["bytes"] < 0.51 * lenet["types"][0]["bytes"]  # (and the input's f16 copy)
    assert "op mix by element type" in out and "f16" in out


def test_function_body_ops_count_as_their_onnx_node(tmp_path, capsys) -> None:
    """unet_seg's LogSoftmax is imported as its ONNX function body (Sub, Exp, ReduceSum,
    Log...): those ops are the LogSoftmax node's, kept and named so in the vector unit's
    table, never an unknown type."""
    unet = _stats(tmp_path, "unet_seg.onnx")
    capsys.readouterr()
    assert next(r for r in unet["op_mix"] if r["op_type"] == "LogSoftmax")["kept"] == 1
    kinds = [r["op"] for r in unet["isa"]["top_vector_ops"]]
    assert "eltwise exp (LogSoftmax)" in kinds and not any("(?)" in k for k in kinds), kinds

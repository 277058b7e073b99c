"""The ONNX importer (`lowering.importer.onnx_import`), the graph evaluator
(`lowering.graph.evaluate`) and the `npu-import` command.

Numerics: every imported model, evaluated with the ops' reference semantics,
matches onnxruntime within 1e-4. Errors: each user mistake gives one
`error: ...` line naming the ONNX node, exit code 1 (2 for bad usage), no
traceback and no output file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp, NameLoc
from xdsl.parser import Parser

from lowering.graph.evaluate import evaluate_graph, main_func
from lowering.importer import onnx_import
from lowering.importer.onnx_import import CONVERTERS, MAX_OPSET, MIN_OPSET, OnnxImportError, import_model, load_model
from npu_dialects import make_context
from npu_dialects.arch import ArchAttr, parse_arch_spec
from npu_dialects.weights import load_weights
from tools.npu_import import main
from tools.testkit import models
from tools.testkit.e2e import compile_and_run

ROOT = Path(__file__).resolve().parent.parent
TOL = 1e-4


# ----------------------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------------------


UNSUPPORTED = "unsupported operator"
"""The diagnostic of an op with neither a converter nor an ONNX function body..."""
SUPPORTED_HINT = (f"hint: this importer converts {len(CONVERTERS)} ONNX op types (domain ai.onnx) at opsets "
                  f"{MIN_OPSET}..{MAX_OPSET}, plus those ONNX defines as functions of them")
"""...and the hint after the diagnostics: the opset range."""


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded float32 inputs for every graph input that is not an initializer."""
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name not in inits:
            shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def run_ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def check_numerics(model: onnx.ModelProto) -> ModuleOp:
    """Import `model`, evaluate it and compare every output with onnxruntime."""
    module, weights = import_model(model)
    feeds = random_inputs(model)
    got = evaluate_graph(module, weights, feeds)
    want = run_ort(model, feeds)
    assert set(got) == set(want)
    for name in want:
        assert got[name].shape == want[name].shape, name
        np.testing.assert_allclose(got[name], want[name], rtol=TOL, atol=TOL, err_msg=name)
    return module


def op_counts(module: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in main_func(module).body.block.ops)


def locations(module: ModuleOp) -> list[str]:
    """The location name of every op in @main except constants and the return."""
    out = []
    for op in main_func(module).body.block.ops:
        if op.name in ("npu_graph.constant", "func.return"):
            continue
        assert isinstance(op.location, NameLoc), f"{op.name} has no name location"
        out.append(op.location.desc.data)
    return out


def import_errors(model: onnx.ModelProto) -> list[str]:
    with pytest.raises(OnnxImportError) as info:
        import_model(model)
    return info.value.lines


def save(model: onnx.ModelProto, path: Path) -> str:
    onnx.save(model, str(path))
    return str(path)


def parse_module(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def assert_clean_failure(capsys: pytest.CaptureFixture[str], code: int, expected: int = 1,
                         where: str = "") -> list[str]:
    """The command failed with `expected`, printed only `WHERE: error: ...` lines (`where`:
    the model file, or nothing) then `hint: ...` lines and no traceback; returns them all."""
    out, err = capsys.readouterr()
    assert code == expected, err
    assert "Traceback" not in out + err
    assert out == ""
    lines = err.strip().splitlines()
    errors = [line for line in lines if not line.startswith("hint: ")]
    assert errors and lines[:len(errors)] == errors, err
    assert all(line.startswith(f"{where}: error: " if where else "error: ") for line in errors), err
    return lines


# ----------------------------------------------------------------------------------------
# Networks: structure, locations, numerics
# ----------------------------------------------------------------------------------------

EXPECTED_COUNTS = {
    "mlp": {"npu_graph.gemm": 3, "npu_graph.relu": 2, "npu_graph.constant": 6, "func.return": 1},
    "lenet": {"npu_graph.conv2d": 2, "npu_graph.relu": 4, "npu_graph.maxpool": 2,
              "npu_graph.reshape": 1, "npu_graph.gemm": 3, "npu_graph.constant": 10, "func.return": 1},
}
NETWORKS = models.all_networks()


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_network_imports_and_matches_onnxruntime(name: str) -> None:
    model = NETWORKS[name]
    module = check_numerics(model)
    module.verify()
    kind = "mlp" if "mlp" in name else "lenet"
    assert op_counts(module) == EXPECTED_COUNTS[kind]
    # every op is located at its ONNX node, in graph order, each node exactly once
    assert locations(module) == [n.name for n in model.graph.node]
    fn = main_func(module)
    assert [s.data for s in fn.attributes["npu.inputs"].data] == ["x"]
    assert [s.data for s in fn.attributes["npu.outputs"].data] == ["y"]
    assert isinstance(module.attributes["npu.arch"], ArchAttr)


def test_torch_exports_are_checked_in() -> None:
    for name in ("mlp", "lenet"):
        path = models.MODELS_DIR / f"{name}.onnx"
        assert path.exists(), f"run tests/models/export_torch.py to create {path}"
        assert path.stat().st_size < 300_000
        assert "torch" in load_model(str(path)).producer_name.lower()


def test_pytorch_style_names_kept() -> None:
    module, weights = import_model(models.lenet())
    assert "/conv1/Conv" in locations(module)
    assert "/relu_3/Relu" in locations(module)
    assert {"conv1.weight", "fc1.weight", "fc2.bias"} <= set(weights)
    assert all(w.dtype == np.float32 for w in weights.values())


@pytest.mark.parametrize("name", sorted(models.op_cases()))
def test_op_case_matches_onnxruntime(name: str) -> None:
    check_numerics(models.op_cases()[name]).verify()


@pytest.mark.parametrize("opset", [9, 11, 13, 14, 17, 21])
def test_opsets(opset: int) -> None:
    check_numerics(models.mlp(opset=opset))
    check_numerics(models.lenet(opset=opset))
    check_numerics(models.with_passthrough(opset=opset))
    for model in models.op_cases(opset).values():
        check_numerics(model)


def test_identity_and_dropout_are_removed() -> None:
    for opset in (11, 17):
        module = check_numerics(models.with_passthrough(opset))
        counts = op_counts(module)
        assert counts["npu_graph.gemm"] == 1 and counts["npu_graph.relu"] == 1
        assert locations(module) == ["/fc/Gemm", "/relu/Relu"]


def test_graph_output_can_be_an_input_or_constant() -> None:
    c = numpy_helper.from_array(np.arange(20, dtype=np.float32).reshape(4, 5), "c")
    g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Identity", ["c"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 5])], [c])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    module = check_numerics(model)
    assert op_counts(module) == {"npu_graph.constant": 1, "func.return": 1}


def test_weights_and_inline_constants() -> None:
    module, weights = import_model(models.op_cases()["constants"])
    consts = [op for op in main_func(module).body.block.ops if op.name == "npu_graph.constant"]
    by_loc = {op.location.desc.data: op for op in consts}
    # the 6x4 Constant node is a weight keyed by its output name; small ones are inline
    assert by_loc["/c_tensor"].weight.data == "big" and set(weights) == {"big"}
    assert by_loc["/c_scalar"].value is not None and by_loc["/c_floats"].value is not None
    # the int64 shape consumed by Reshape never becomes an op
    assert "/c_ints" not in by_loc and len(consts) == 3


def test_scalar_weight_stays_0d() -> None:
    # a non-finite scalar goes to the weight store (xDSL cannot print inf); it keeps its
    # 0-d shape there, so the layer group finds its data and packs it with the others
    c = numpy_helper.from_array(np.array(-np.inf, dtype=np.float32), "neg_inf")
    g = helper.make_graph([helper.make_node("Max", ["x", "neg_inf"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [c])
    module, weights = import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    assert list(weights) == ["neg_inf"] and weights["neg_inf"].shape == ()

def test_weight_names_sanitized_and_unique() -> None:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), n)
             for n in ("/fc/w:0", "_fc_w_0", "fc w 0")]
    nodes = [helper.make_node("Add", ["x", "/fc/w:0"], ["a"]),
             helper.make_node("Add", ["a", "_fc_w_0"], ["b"]),
             helper.make_node("Add", ["b", "fc w 0"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])], inits)
    module, weights = import_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    assert sorted(weights) == ["fc_w_0", "fc_w_0_1", "fc_w_0_2"]
    # unnamed nodes are located as <OpType>#<index>
    assert locations(module) == ["Add#0", "Add#1", "Add#2"]


def test_evaluate_graph_float64_reference() -> None:
    model = models.mlp()
    module, weights = import_model(model)
    feeds = random_inputs(model)
    ref = evaluate_graph(module, weights, feeds, dtype=np.float64)["y"]
    assert ref.dtype == np.float64
    np.testing.assert_allclose(ref, run_ort(model, feeds)["y"], rtol=TOL, atol=TOL)


# ----------------------------------------------------------------------------------------
# Diagnostics from import_model
# ----------------------------------------------------------------------------------------


def test_unsupported_nodes_one_line_each() -> None:
    assert import_errors(models.unsupported()) == [
        "error: node 'odd_node' (RandomNormalLike, opset 17): " + UNSUPPORTED,
        "error: node 'pad' (Pad, opset 17): unsupported attribute mode=symmetric (constant, edge, reflect and "
        "wrap are)",
    ]


def test_symbolic_dimension() -> None:
    assert import_errors(models.symbolic_batch()) == [
        "error: symbolic dimension 'batch' in input 'x' is not bound; compile for chosen sizes with "
        "--shape-buckets batch=N[,N...]"]


def test_channel_mismatch() -> None:
    assert import_errors(models.channel_mismatch()) == [
        "error: node 'conv' (Conv, opset 17): input channels 3 do not match weight (4 x group 1)"]


def test_ceil_mode_that_changes_the_shape() -> None:
    """ceil_mode=1 is extra end padding: 5x5 pools to 3x3 (floor mode: 2x2)."""
    model = models.ceil_mode_changes()
    module, weights = import_model(model)
    assert "pads = array<i64: 0, 0, 1, 1>" in str(module) and "-> tensor<1x1x3x3xf32>" in str(module)
    feeds = random_inputs(model)
    np.testing.assert_allclose(evaluate_graph(module, weights, feeds)["y"], run_ort(model, feeds)["y"])


def _one_node(node: onnx.NodeProto, inputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto] = (),
              opset: int = 17) -> onnx.ModelProto:
    g = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _f32(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


@pytest.mark.parametrize("model,expected", [
    (_one_node(helper.make_node("Relu", ["h"], ["y"], name="act"),
               [helper.make_tensor_value_info("h", TensorProto.DOUBLE, [2])]),
     "error: input 'h' has element type double; supported inputs are float32, float16, bfloat16, int8, uint8 "
     "and integer/bool tensors (carried as f32)"),
    (_one_node(helper.make_node("Reshape", ["x", "s"], ["y"], name="rs"),
               [_f32("x", [2, 3]), helper.make_tensor_value_info("s", TensorProto.INT64, [2])]),
     "error: node 'rs' (Reshape, opset 17): the target shape (input 1, 's') is computed at run time; "
     "only constant values are supported"),
    (_one_node(helper.make_node("Reshape", ["x", "s"], ["y"], name="rs"), [_f32("x", [2, 3]), _f32("s", [2])]),
     "error: node 'rs' (Reshape, opset 17): the target shape (input 1, 's') is computed at run time; "
     "only constant values are supported"),
    (_one_node(helper.make_node("Reshape", ["x", "s"], ["y"], name="rs"), [_f32("x", [2, 3])],
               [numpy_helper.from_array(np.array([4, -1], np.int64), "s")]),
     "error: node 'rs' (Reshape, opset 17): cannot reshape [2, 3] (6 elements) to [4, -1]"),
    (_one_node(helper.make_node("Add", ["x", "k"], ["y"], name="add"), [_f32("x", [3])],
               [numpy_helper.from_array(np.array([1, 2, 3], np.int64), "k")]),
     "error: node 'add' (Add, opset 17): 'k' has element type int64; only float32 tensors are "
     "supported as operands"),
    (_one_node(helper.make_node("Add", ["x", "z"], ["y"], name="add"), [_f32("x", [3]), _f32("z", [4])]),
     "error: node 'add' (Add, opset 17): operand shapes [3] and [4] do not broadcast"),
    (_one_node(helper.make_node("Gemm", ["x", "w"], ["y"], name="fc", transB=1), [_f32("x", [2, 3])],
               [numpy_helper.from_array(np.ones((4, 5), np.float32), "w")]),
     "error: node 'fc' (Gemm, opset 17): inner dimensions differ: A [2, 3] (transA=0) has K=3, "
     "B [4, 5] (transB=1) has K=5"),
    (_one_node(helper.make_node("Conv", ["x", "w"], ["y"], name="c3d"), [_f32("x", [1, 2, 4, 4, 4])],
               [numpy_helper.from_array(np.ones((2, 2, 3, 3, 3), np.float32), "w")]),
     "error: node 'c3d' (Conv, opset 17): only 1-D and 2-D convolutions are supported: input [1, 2, 4, 4, 4] "
     "and weight [2, 2, 3, 3, 3] must both be 3-D or 4-D"),
    (_one_node(helper.make_node("Relu", ["x"], ["y"], name="r", foo=3), [_f32("x", [3])]),
     "error: node 'r' (Relu, opset 17): attribute foo is not defined for Relu at opset 17"),
    (_one_node(helper.make_node("Constant", [], ["y"], name="k", value_string="abc"), []),
     "error: node 'k' (Constant, opset 17): unsupported attribute value_string=abc"),
    (_one_node(helper.make_node("Relu", ["x"], ["y"], name="r"), [_f32("x", [3])], opset=6),
     f"error: the model uses ONNX opset 6; supported opsets are 7..{MAX_OPSET}"),
    (_one_node(helper.make_node("Relu", ["x"], ["y"], name="r"),
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)]),
     "error: input 'x' has no shape; dynamic shapes are not supported yet"),
    (_one_node(helper.make_node("Dropout", ["x", "", "t"], ["y", "m"], name="d"), [_f32("x", [3])],
               [numpy_helper.from_array(np.array(True), "t")]),
     "error: node 'd' (Dropout, opset 17): training_mode=1 is not supported (inference only)"),
    (_one_node(helper.make_node("MyOp", ["x"], ["y"], name="custom", domain="com.example"), [_f32("x", [3])]),
     "error: node 'custom' (com.example.MyOp, opset 0): " + UNSUPPORTED),
])
def test_diagnostic(model: onnx.ModelProto, expected: str) -> None:
    assert expected in import_errors(model)


def test_dropout_mask_output_is_all_true() -> None:
    node = helper.make_node("Dropout", ["x"], ["d", "mask"], name="drop")
    g = helper.make_graph([node, helper.make_node("Relu", ["d"], ["y"])], "g", [_f32("x", [3])],
                          [_f32("y", [3]), helper.make_tensor_value_info("mask", TensorProto.BOOL, [3])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    x = np.array([-1.0, 0.5, 2.0], dtype=np.float32)
    res, _ = compile_and_run(model, "default", inputs={"x": x})
    assert res.outputs["mask"].dtype == np.bool_ and res.outputs["mask"].all()
    np.testing.assert_array_equal(res.outputs["y"], np.maximum(x, 0))


def test_declared_output_shape_must_match() -> None:
    model = models.mlp()
    model.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 11
    assert import_errors(model) == ["error: output 'y' is declared with shape [4, 11], but the graph computes [4, 10]"]


def test_errors_downstream_of_a_failed_node_are_still_found() -> None:
    """RandomNormalLike fails; the Conv after it still gets its own diagnostic (via the inferred shape)."""
    w = numpy_helper.from_array(np.ones((2, 4, 3, 3), np.float32), "w")
    nodes = [helper.make_node("RandomNormalLike", ["x"], ["h"], name="hm"),
             helper.make_node("Conv", ["h", "w"], ["y"], name="conv")]
    g = helper.make_graph(nodes, "g", [_f32("x", [1, 3, 8, 8])], [_f32("y", None)], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    assert import_errors(model) == [
        "error: node 'hm' (RandomNormalLike, opset 17): " + UNSUPPORTED,
        "error: node 'conv' (Conv, opset 17): input channels 3 do not match weight (4 x group 1)"]


def test_every_supported_op_type_is_listed() -> None:
    ops = set(onnx_import.supported_op_types())
    # the walking skeleton's set, the CNN zoo's and the transformers' (issue 3)
    assert {"Gemm", "MatMul", "Conv", "Add", "Sub", "Mul", "Div", "Relu", "MaxPool", "Flatten",
            "Reshape", "Identity", "Dropout", "Constant"} <= ops
    assert {"BatchNormalization", "Clip", "Sigmoid", "Tanh", "LeakyRelu", "AveragePool",
            "GlobalAveragePool", "LRN", "Concat", "Sum", "Softmax", "Transpose", "Squeeze",
            "Unsqueeze", "ConstantOfShape", "Shape"} <= ops
    assert {"LayerNormalization", "Erf", "Gelu", "Pow", "Sqrt", "ReduceMean", "ReduceSum", "Split",
            "Slice", "Gather", "Where", "Trilu", "Cast", "Expand", "Equal"} <= ops
    assert "RandomNormalLike" not in ops


# ----------------------------------------------------------------------------------------
# load_model
# ----------------------------------------------------------------------------------------


def test_load_truncated_garbage_missing(tmp_path: Path) -> None:
    data = models.lenet().SerializeToString()
    (tmp_path / "trunc.onnx").write_bytes(data[: len(data) // 2])
    (tmp_path / "junk.onnx").write_bytes(b"\x08\x07garbage")
    (tmp_path / "text.onnx").write_text("this is not a model\n")
    for name in ("trunc.onnx", "junk.onnx", "text.onnx", "missing.onnx"):
        with pytest.raises(OnnxImportError) as info:
            load_model(str(tmp_path / name))
        (line,) = info.value.lines
        assert line.startswith(f"{tmp_path / name}: error: cannot read the ONNX model: "), line


def test_load_reports_checker_errors(tmp_path: Path) -> None:
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r", foo=1)], "g",
                          [_f32("x", [3])], [_f32("y", [3])])
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "bad.onnx")
    with pytest.raises(OnnxImportError) as info:
        load_model(path)
    assert info.value.lines == [f"{path}: error: node 'r' (Relu, opset 17): Unrecognized attribute: foo for "
                                "operator Relu"]


@pytest.mark.parametrize("nodes,expected", [
    ([("Relu", ["nowhere"], "y", "r")],
     "node 'r' (Relu, opset 17): input 'nowhere' is not produced by any node, initializer or graph input"),
    ([("Add", ["x", "b"], "a", "first"), ("Relu", ["a"], "b", "second"), ("Identity", ["a"], "y", "")],
     "node 'first' (Add, opset 17): input 'b' comes from a later node, node 'second' (Relu, opset 17): the "
     "graph has a cycle or is not topologically sorted"),
    ([("Relu", ["x"], "h", "r")], "the graph has no outputs"),
])
def test_load_names_the_node_of_a_dangling_name_or_cycle(tmp_path: Path, nodes, expected: str) -> None:
    made = [helper.make_node(op, ins, [out], name=name) for op, ins, out, name in nodes]
    outs = [_f32("y", [3])] if any(out == "y" for *_, out, _ in nodes) else []
    g = helper.make_graph(made, "g", [_f32("x", [3])], outs)
    path = save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "bad.onnx")
    with pytest.raises(OnnxImportError) as info:
        load_model(path)
    assert info.value.lines == [f"{path}: error: {expected}"]


# ----------------------------------------------------------------------------------------
# npu-import
# ----------------------------------------------------------------------------------------


def test_cli_writes_ir_and_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = models.lenet()
    src = save(model, tmp_path / "lenet.onnx")
    out = tmp_path / "sub" / "net.mlir"
    out.parent.mkdir()
    assert main([src, "-o", str(out), "--arch", "default,cores=1"]) == 0
    assert capsys.readouterr().out == ""
    assert (tmp_path / "sub" / "net.weights.npz").exists()
    text = out.read_text()
    assert 'npu.weights = "net.weights.npz"' in text
    assert 'loc("/conv1/Conv")' in text and '{weight = "fc1.weight"}' in text
    assert len(text) < 20_000  # weights stay out of the text
    # the text parses back, names its weights relative to itself and computes the same
    module = parse_module(text)
    assert module.attributes["npu.arch"].arch == parse_arch_spec("default,cores=1")
    weights = load_weights(module, str(out.parent))
    feeds = random_inputs(model)
    got = evaluate_graph(module, weights, feeds)["y"]
    np.testing.assert_allclose(got, run_ort(model, feeds)["y"], rtol=TOL, atol=TOL)


def test_cli_stdout_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    src = save(models.mlp(), tmp_path / "my_mlp.onnx")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main([src]) == 0
    out = capsys.readouterr().out
    assert out.count("npu_graph.gemm") == 3 and 'loc("/fc3/Gemm")' in out
    assert 'npu.weights = "my_mlp.weights.npz"' in out
    assert (work / "my_mlp.weights.npz").exists()
    assert list(work.iterdir()) == [work / "my_mlp.weights.npz"]


def test_cli_unsupported_ops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = save(models.unsupported(), tmp_path / "bad.onnx")
    out = tmp_path / "bad.mlir"
    lines = assert_clean_failure(capsys, main([src, "-o", str(out)]), where=src)
    assert len(lines) == 3
    assert lines[0] == f"{src}: error: node 'odd_node' (RandomNormalLike, opset 17): " + UNSUPPORTED
    assert lines[2] == SUPPORTED_HINT
    assert "'pad' (Pad, opset 17): unsupported attribute mode=symmetric" in lines[1]
    assert list(tmp_path.iterdir()) == [tmp_path / "bad.onnx"]  # no partial output


@pytest.mark.parametrize("content", ["truncated", "garbage", "missing"])
def test_cli_unreadable_model(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str) -> None:
    src = tmp_path / "m.onnx"
    if content == "truncated":
        data = models.mlp().SerializeToString()
        src.write_bytes(data[: len(data) // 2])
    elif content == "garbage":
        src.write_bytes(bytes(range(256)) * 3)
    (line,) = assert_clean_failure(capsys, main([str(src), "-o", str(tmp_path / "o.mlir")]), where=str(src))
    assert line.startswith(f"{src}: error: cannot read the ONNX model: ")
    assert not (tmp_path / "o.mlir").exists() and not (tmp_path / "o.weights.npz").exists()


@pytest.mark.parametrize("model_fn,needle", [
    (models.symbolic_batch, "symbolic dimension 'batch' in input 'x'"),
    (models.channel_mismatch, "node 'conv' (Conv, opset 17): input channels 3 do not match weight"),
])
def test_cli_model_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], model_fn, needle: str) -> None:
    src = save(model_fn(), tmp_path / "m.onnx")
    (line,) = assert_clean_failure(capsys, main([src, "-o", str(tmp_path / "o.mlir")]), where=src)
    assert needle in line


@pytest.mark.parametrize("spec", ["default,cores=0", "nosuchpreset", "default,bogus=1", "default,cube=4x4"])
def test_cli_bad_arch_is_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str) -> None:
    src = save(models.mlp(), tmp_path / "m.onnx")
    line, *hint = assert_clean_failure(capsys, main([src, "-o", str(tmp_path / "o.mlir"), "--arch", spec]), 2)
    assert spec in line
    if "=" not in spec or "bogus" in spec:  # (an unknown preset or parameter: the known ones follow)
        assert hint and hint[0].startswith("hint: ") and ("edge-small" in hint[0] or "sram_bytes" in hint[0])
    assert not (tmp_path / "o.mlir").exists()


def test_cli_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: npu-import" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "weights.npz" in capsys.readouterr().out


def test_cli_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = save(models.mlp(), tmp_path / "m.onnx")
    (line,) = assert_clean_failure(capsys, main([src, "-o", str(tmp_path / "no" / "dir" / "o.mlir")]))
    assert "cannot write" in line


def test_cli_internal_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(ctx):
        raise ZeroDivisionError("oops")

    monkeypatch.setitem(onnx_import.CONVERTERS, "Relu", onnx_import.ConverterEntry(boom, frozenset()))
    src = save(models.mlp(), tmp_path / "m.onnx")
    monkeypatch.delenv("NPU_DEBUG", raising=False)
    assert main([src, "-o", str(tmp_path / "o.mlir")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("internal error: ") and "'/relu/Relu'" in err and "Traceback" not in err
    monkeypatch.setenv("NPU_DEBUG", "1")
    assert main([src, "-o", str(tmp_path / "o.mlir")]) == 1
    assert "Traceback" in capsys.readouterr().err
    assert not (tmp_path / "o.mlir").exists()


def test_cli_as_module_subprocess(tmp_path: Path) -> None:
    src = save(models.mlp(), tmp_path / "m.onnx")
    out = tmp_path / "m.mlir"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "tools.npu_import", src, "-o", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "npu_graph.gemm" in out.read_text() and (tmp_path / "m.weights.npz").exists()
    bad = save(models.unsupported(), tmp_path / "bad.onnx")
    p = subprocess.run([sys.executable, "-m", "tools.npu_import", bad], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "odd_node" in p.stderr and "Traceback" not in p.stderr
    assert p.stdout == ""

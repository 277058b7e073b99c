"""Shape buckets: symbolic input dims bound at import (`lowering/importer/buckets.py`), bucket
selection, padding and slicing at run time (`runtime/buckets.py`) and the
`--shape-buckets` flags of `npu-import` and `npu-run`.

Numerics: a padded bucket's sliced outputs match onnxruntime on the original,
unpadded inputs. Errors: each mistake is one `error: ...` line, exit 1 (2 for a
malformed spec), no traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from lowering.importer import buckets as lb
from lowering.importer.buckets import (
    BucketSpecError,
    ShapeBuckets,
    bucket_path,
    output_shapes,
    parse_shape_buckets,
)
from lowering.importer.onnx_import import OnnxImportError, import_model
from lowering.importer.symbolic import bind_dims, input_templates, symbolic_dims
from npu_dialects.entry import find_main
from runtime.buckets import (
    BucketError,
    Dispatch,
    pad_inputs,
    select_bucket,
    slice_outputs,
)
from tools import npu_import, npu_run

# ----------------------------------------------------------------------------------------
# Models (onnx.helper, seeded)
# ----------------------------------------------------------------------------------------


def _model(nodes, inputs, outputs, inits, name: str) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in outputs.items()],
        inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="test_buckets")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _w(rng: np.random.Generator, name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)


def cnn(batch: int | str = "batch") -> onnx.ModelProto:
    """x[batch, 1, 8, 8] -> Conv 3x3 pad 1 (2) -> Relu -> MaxPool 2x2 -> Reshape [-1, 32]
    -> Gemm (3) -> y[batch, 3]."""
    rng = np.random.default_rng(21)
    nodes = [
        helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", "shape"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], name="fc", transB=1),
    ]
    inits = [_w(rng, "cw", 2, 1, 3, 3), _w(rng, "cb", 2), _w(rng, "fw", 3, 32), _w(rng, "fb", 3),
             numpy_helper.from_array(np.array([-1, 32], np.int64), "shape")]
    return _model(nodes, {"x": [batch, 1, 8, 8]}, {"y": [batch, 3]}, inits, "bucket_cnn")


def seq_model() -> onnx.ModelProto:
    """x[batch, seq, 16] @ W[16, 8] + r[batch, seq, 8] -> Relu -> * 0.5 -> y (output
    declared with dims of its own, as exporters write them: its shape for a bucket
    comes from ONNX shape inference)."""
    rng = np.random.default_rng(22)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
        helper.make_node("Add", ["h", "r"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["a"], name="act"),
        helper.make_node("Mul", ["a", "half"], ["y"], name="scale"),
    ]
    inits = [_w(rng, "w", 16, 8), numpy_helper.from_array(np.array([0.5], np.float32), "half")]
    return _model(nodes, {"x": ["batch", "seq", 16], "r": ["batch", "seq", 8]}, {"y": ["Mul_dim_0", "Mul_dim_1", 8]}, inits,
                  "bucket_seq")


UNBOUND = ("error: symbolic dimension 'batch' in input 'x' is not bound; compile for chosen sizes with "
           "--shape-buckets batch=N[,N...]")


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def save(model: onnx.ModelProto, path: Path) -> str:
    onnx.save(model, str(path))
    return str(path)


def cli(capsys: pytest.CaptureFixture[str], main, *argv: str) -> tuple[int, str, list[str]]:
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, out, [ln for ln in err.splitlines() if ln.strip()]


# ----------------------------------------------------------------------------------------
# Spec parsing
# ----------------------------------------------------------------------------------------


def test_parse_single_dim() -> None:
    b = parse_shape_buckets("batch=1,4,8")
    assert b == ShapeBuckets(("batch",), ((1,), (4,), (8,)))
    assert list(b) == [{"batch": 1}, {"batch": 4}, {"batch": 8}]
    assert b.first() == {"batch": 1} and len(b) == 3


def test_parse_cross_product_in_spec_order() -> None:
    b = parse_shape_buckets(" batch = 2,1 ; seq=16,32; ")
    assert b.dims == ("batch", "seq")
    assert b.buckets == ((2, 16), (2, 32), (1, 16), (1, 32))
    assert b.values("batch") == [1, 2]


def test_parse_repeated_flag_is_a_union() -> None:
    b = parse_shape_buckets(["batch=1;seq=16,128", "seq=16;batch=8", "batch=1;seq=16"])
    assert b.dims == ("batch", "seq")
    assert b.buckets == ((1, 16), (1, 128), (8, 16))


@pytest.mark.parametrize("spec,needle", [
    ("batch=abc", "'abc' for 'batch' is not a positive integer"),
    ("batch=0", "'0' for 'batch' is not a positive integer"),
    ("batch=-1", "'-1' for 'batch' is not a positive integer"),
    ("batch=1.5", "'1.5' for 'batch' is not a positive integer"),
    ("batch=", "an empty value for 'batch'"),
    ("batch=1,,2", "an empty value for 'batch'"),
    ("batch", "'batch' is not DIM=N[,N...]"),
    ("=4", "no dimension name"),
    ("", "empty"),
    ("batch=1;batch=2", "dimension 'batch' is given twice"),
    ("batch=2,2", "size 2 of 'batch' is given twice"),
])
def test_parse_errors(spec: str, needle: str) -> None:
    with pytest.raises(BucketSpecError) as e:
        parse_shape_buckets(spec)
    assert str(e.value).startswith(f"bad --shape-buckets '{spec}': ")
    assert needle in str(e.value)


def test_parse_repeated_flags_must_name_the_same_dims() -> None:
    with pytest.raises(BucketSpecError, match="every occurrence must name the same dims"):
        parse_shape_buckets(["batch=1", "seq=16"])


# ----------------------------------------------------------------------------------------
# Binding the model's symbolic dims
# ----------------------------------------------------------------------------------------


def test_templates_and_symbolic_dims() -> None:
    m = seq_model()
    assert input_templates(m) == {"x": ("batch", "seq", 16), "r": ("batch", "seq", 8)}
    assert symbolic_dims(m) == {"batch": ["x", "r"], "seq": ["x", "r"]}
    assert symbolic_dims(cnn(batch=2)) == {}


def test_bind_dims_returns_a_bound_copy() -> None:
    m = cnn()
    bound = bind_dims(m, {"batch": 4})
    def dims(vi: onnx.ValueInfoProto) -> list[int | str]:
        return [d.dim_value or d.dim_param for d in vi.type.tensor_type.shape.dim]
    assert dims(bound.graph.input[0]) == [4, 1, 8, 8]
    assert dims(bound.graph.output[0]) == [4, 3]
    assert dims(m.graph.input[0]) == ["batch", 1, 8, 8]  # the original is untouched
    static = cnn(batch=2)
    assert bind_dims(static, None) is static


def test_unbound_dims_one_line_each() -> None:
    with pytest.raises(OnnxImportError) as e:
        bind_dims(seq_model(), {"batch": 2})
    assert e.value.lines == [
        "error: symbolic dimension 'seq' in inputs 'x', 'r' is not bound; compile for chosen sizes "
        "with --shape-buckets seq=N[,N...]"]


def test_import_without_dims_hints_at_shape_buckets() -> None:
    with pytest.raises(OnnxImportError) as e:
        import_model(cnn())
    assert e.value.lines == [UNBOUND]


@pytest.mark.parametrize("dims,needle", [
    ({"batch": 2, "bach": 3}, "error: the model has no symbolic dimension 'bach' (its symbolic dims are 'batch')"),
    ({"batch": 0}, "error: dimension 'batch' is bound to 0; sizes must be positive integers"),
])
def test_bad_bindings(dims: dict[str, int], needle: str) -> None:
    with pytest.raises(OnnxImportError) as e:
        bind_dims(cnn(), dims)
    assert needle in e.value.lines


def test_unknown_dim_of_a_static_model() -> None:
    with pytest.raises(OnnxImportError, match="its inputs have no symbolic dimensions"):
        lb.check_buckets(cnn(batch=2), parse_shape_buckets("batch=2"))


def test_import_model_with_dims() -> None:
    module, weights = import_model(seq_model(), dims={"batch": 2, "seq": 5})
    fn = find_main(module)
    assert fn is not None
    assert [tuple(t.get_shape()) for t in fn.function_type.inputs.data] == [(2, 5, 16), (2, 5, 8)]
    assert [tuple(t.get_shape()) for t in fn.function_type.outputs.data] == [(2, 5, 8)]
    assert set(weights) == {"w"}


def test_output_shapes_declared_inferred_and_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    assert output_shapes(cnn(), {"batch": 3}) == {"y": (3, 3)}  # declared [batch, 3]
    assert output_shapes(seq_model(), {"batch": 3, "seq": 7}) == {"y": (3, 7, 8)}  # shape inference

    def broken(*args, **kwargs):
        raise RuntimeError("no inference today")
    monkeypatch.setattr(lb.onnx.shape_inference, "infer_shapes", broken)
    assert output_shapes(seq_model(), {"batch": 3, "seq": 7}) == {"y": (3, 7, 8)}  # the importer's


def test_bucket_paths() -> None:
    assert bucket_path("d/out.mlir", {"batch": 1}) == Path("d/out.batch1.mlir")
    assert bucket_path("out", {"batch": 1, "seq len": 16}) == Path("out.batch1.seq_len16.mlir")


# ----------------------------------------------------------------------------------------
# Selection, padding, slicing
# ----------------------------------------------------------------------------------------

T1 = {"x": ("batch", 8)}
B1 = list(parse_shape_buckets("batch=1,4,8"))
T2 = {"x": ("batch", "seq", 16), "r": ("batch", "seq", 8)}
B2 = list(parse_shape_buckets("batch=1,4,8;seq=16,32"))


def _sel(templates, buckets, pad=None, **shapes) -> Dispatch:
    pad = set(buckets[0]) if pad is None else pad
    return select_bucket(templates, buckets, shapes, pad)


def test_exact_match_wins() -> None:
    d = _sel(T1, B1, x=(4, 8))
    assert d == Dispatch({"batch": 4}, {"batch": 4}) and not d.padded


def test_smallest_larger_bucket() -> None:
    assert _sel(T1, B1, x=(2, 8)).bucket == {"batch": 4}
    assert _sel(T1, B1, x=(5, 8)).bucket == {"batch": 8}
    d = _sel(T2, B2, x=(2, 20, 16), r=(2, 20, 8))
    assert d.bucket == {"batch": 4, "seq": 32} and d.actual == {"batch": 2, "seq": 20} and d.padded


def test_only_padded_dims_may_grow() -> None:
    d = _sel(T2, B2, {"batch"}, x=(2, 16, 16), r=(2, 16, 8))
    assert d.bucket == {"batch": 4, "seq": 16}
    with pytest.raises(BucketError) as e:
        _sel(T2, B2, {"batch"}, x=(2, 20, 16), r=(2, 20, 8))
    assert str(e.value) == "input 'x' has seq=20, outside every bucket (16, 32); 'seq' is not padded, it must match"


def test_outside_every_bucket() -> None:
    with pytest.raises(BucketError) as e:
        _sel(T1, B1, x=(16, 8))
    assert str(e.value) == "input 'x' has batch=16, outside every bucket (1, 4, 8)"


def test_outside_every_bucket_of_an_explicit_list() -> None:
    buckets = list(parse_shape_buckets(["batch=1;seq=32", "batch=8;seq=16"]))
    with pytest.raises(BucketError) as e:
        _sel(T2, buckets, x=(8, 32, 16), r=(8, 32, 8))
    assert str(e.value) == ("the inputs have batch=8, seq=32, outside every bucket "
                            "(batch=1 seq=32; batch=8 seq=16)")


@pytest.mark.parametrize("shapes,msg", [
    ({"x": (2, 9)}, "input 'x' has shape [2, 9], expected [batch, 8]"),
    ({"x": (2,)}, "input 'x' has shape [2], expected [batch, 8]"),
    ({}, "missing input 'x' (the model's inputs: 'x' [batch, 8])"),
])
def test_inputs_that_fit_no_template(shapes, msg: str) -> None:
    with pytest.raises(BucketError) as e:
        select_bucket(T1, B1, shapes, {"batch"})
    assert str(e.value) == msg


def test_inputs_must_agree_on_a_dim() -> None:
    with pytest.raises(BucketError) as e:
        _sel(T2, B2, x=(2, 16, 16), r=(3, 16, 8))
    assert str(e.value) == "inputs disagree on 'batch': 'x' has batch=2 but 'r' has batch=3"


def test_pad_and_slice() -> None:
    x = rand(2, 3, 16)
    padded = pad_inputs({"x": x, "other": x}, {"x": ("batch", "seq", 16)}, {"batch": 4, "seq": 8})
    assert padded["x"].shape == (4, 8, 16) and padded["other"] is x
    np.testing.assert_array_equal(padded["x"][:2, :3], x)
    assert not padded["x"][2:].any() and not padded["x"][:, 3:].any()
    assert pad_inputs({"x": x}, {"x": ("batch", "seq", 16)}, {"batch": 2, "seq": 3})["x"] is x
    back = slice_outputs({"y": padded["x"], "z": x}, {"y": (2, 3, 16)})
    np.testing.assert_array_equal(back["y"], x)
    assert back["z"] is x
    with pytest.raises(BucketError, match="cannot be cut back"):
        slice_outputs({"y": x}, {"y": (4, 3, 16)})


# ----------------------------------------------------------------------------------------
# npu-import --shape-buckets
# ----------------------------------------------------------------------------------------


def test_import_one_bucket(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = save(cnn(), tmp_path / "m.onnx")
    rc, out, err = cli(capsys, npu_import.main, src, "--shape-buckets", "batch=4", "-o", tmp_path / "o.mlir")
    assert rc == 0 and out == "" and err == []
    text = (tmp_path / "o.mlir").read_text()
    assert "func.func @main(%x: tensor<4x1x8x8xf32>) -> tensor<4x3xf32>" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "o.mlir", "o.weights.npz"]


def test_import_several_buckets_share_weights(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = save(cnn(), tmp_path / "m.onnx")
    rc, out, err = cli(capsys, npu_import.main, src, "--shape-buckets", "batch=1,4,8", "-o", tmp_path / "o.mlir")
    assert rc == 0, err
    assert out.splitlines() == [
        f"wrote {tmp_path}/o.batch1.mlir (batch=1)",
        f"wrote {tmp_path}/o.batch4.mlir (batch=4)",
        f"wrote {tmp_path}/o.batch8.mlir (batch=8)",
        f"wrote {tmp_path}/o.weights.npz (weights shared by every bucket)",
    ]
    for b in (1, 4, 8):
        text = (tmp_path / f"o.batch{b}.mlir").read_text()
        assert f"tensor<{b}x1x8x8xf32>" in text and 'npu.weights = "o.weights.npz"' in text
    assert not (tmp_path / "o.mlir").exists()
    # a compiled bucket runs from its file with the shared weights
    x = rand(4, 1, 8, 8)
    np.savez(tmp_path / "in.npz", x=x)
    rc, _, err = cli(capsys, npu_run.main, tmp_path / "o.batch4.mlir", "--inputs", tmp_path / "in.npz",
                     "--outputs", tmp_path / "out.npz", "--check")
    assert rc == 0, err
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_allclose(z["y"], ort_run(cnn(), {"x": x})["y"], rtol=1e-4, atol=1e-4)


def test_import_buckets_with_different_weights_get_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    real = npu_import.import_model

    def per_bucket(model, arch, dims=None):  # as if a constant were folded from the bucketed shape
        module, weights = real(model, arch, dims=dims)
        return module, {**weights, "mask": np.full(dims["batch"] * 32, 1.0, np.float32)}
    monkeypatch.setattr(npu_import, "import_model", per_bucket)
    src = save(cnn(), tmp_path / "m.onnx")
    rc, _, err = cli(capsys, npu_import.main, src, "--shape-buckets", "batch=1,2", "-o", tmp_path / "o.mlir")
    assert rc == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "m.onnx", "o.batch1.mlir", "o.batch1.weights.npz", "o.batch2.mlir", "o.batch2.weights.npz"]
    assert 'npu.weights = "o.batch2.weights.npz"' in (tmp_path / "o.batch2.mlir").read_text()


def test_import_two_dims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = save(seq_model(), tmp_path / "m.onnx")
    rc, out, err = cli(capsys, npu_import.main, src, "--shape-buckets", "batch=1,2;seq=16",
                       "--shape-buckets", "batch=4;seq=8", "-o", tmp_path / "o.mlir")
    assert rc == 0, err
    assert [ln.split()[1] for ln in out.splitlines()] == [
        f"{tmp_path}/o.batch1.seq16.mlir", f"{tmp_path}/o.batch2.seq16.mlir", f"{tmp_path}/o.batch4.seq8.mlir",
        f"{tmp_path}/o.weights.npz"]
    assert "tensor<4x8x16xf32>" in (tmp_path / "o.batch4.seq8.mlir").read_text()


@pytest.mark.parametrize("argv,code,line", [
    ([], 1, UNBOUND),
    (["--shape-buckets", "bach=4"], 1, "error: the model has no symbolic dimension 'bach' (its symbolic dims "
                                       "are 'batch')"),
    (["--shape-buckets", "batch=abc"], 2, "error: bad --shape-buckets 'batch=abc': 'abc' for 'batch' is not "
                                          "a positive integer"),
])
def test_import_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv, code: int, line: str) -> None:
    src = save(cnn(), tmp_path / "m.onnx")
    rc, _, err = cli(capsys, npu_import.main, src, "-o", tmp_path / "o.mlir", *argv)
    assert rc == code and err[0] == (f"{src}: {line}" if code == 1 else line)  # (a model's error names its file)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_import_several_buckets_need_an_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = save(cnn(), tmp_path / "m.onnx")
    rc, out, err = cli(capsys, npu_import.main, src, "--shape-buckets", "batch=1,2")
    assert rc == 2 and out == ""
    assert err == ["error: --shape-buckets gives 2 buckets; they need -o OUT.mlir (one OUT.<bucket>.mlir each)"]


# ----------------------------------------------------------------------------------------
# npu-run --shape-buckets
# ----------------------------------------------------------------------------------------


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Records the input shapes of every module npu-run compiles."""
    from lowering import pipeline
    seen: list[tuple[int, ...]] = []
    real = pipeline.compile_module

    def spy(module, *args, **kwargs):
        fn = find_main(module)
        assert fn is not None
        seen.append(tuple(fn.function_type.inputs.data[0].get_shape()))
        return real(module, *args, **kwargs)
    monkeypatch.setattr(pipeline, "compile_module", spy)
    return seen


def _run_bucketed(tmp_path: Path, capsys, model: onnx.ModelProto, feeds: dict[str, np.ndarray] | None,
                  *spec: str) -> tuple[int, dict, dict[str, np.ndarray] | None, list[str]]:
    src = save(model, tmp_path / "m.onnx")
    argv = [src, *spec, "--report", tmp_path / "r.json", "--outputs", tmp_path / "out.npz"]
    if feeds is not None:
        np.savez(tmp_path / "in.npz", **feeds)
        argv += ["--inputs", tmp_path / "in.npz", "--check"]
    rc, _, err = cli(capsys, npu_run.main, *argv)
    if rc != 0:
        return rc, {}, None, err
    with np.load(tmp_path / "out.npz") as z:
        outs = {k: z[k] for k in z.files}
    return rc, json.loads((tmp_path / "r.json").read_text()), outs, err


def test_run_exact_bucket(tmp_path: Path, capsys, compiled) -> None:
    x = rand(4, 1, 8, 8)
    rc, rep, outs, err = _run_bucketed(tmp_path, capsys, cnn(), {"x": x}, "--shape-buckets", "batch=1,4,8")
    assert rc == 0, err
    assert rep["bucket"] == {"batch": 4} and rep["bucket_actual"] == {"batch": 4}
    assert rep["check"]["ok"] and compiled == [(4, 1, 8, 8)]
    np.testing.assert_allclose(outs["y"], ort_run(cnn(), {"x": x})["y"], rtol=1e-4, atol=1e-4)


def test_run_padded_bucket_slices_outputs(tmp_path: Path, capsys, compiled) -> None:
    x = rand(3, 1, 8, 8, seed=1)
    rc, rep, outs, err = _run_bucketed(tmp_path, capsys, cnn(), {"x": x}, "--shape-buckets", "batch=1,4,8")
    assert rc == 0, err
    assert rep["bucket"] == {"batch": 4} and rep["bucket_actual"] == {"batch": 3}
    assert compiled == [(4, 1, 8, 8)]  # lazily: only the bucket used
    assert outs["y"].shape == (3, 3)
    np.testing.assert_allclose(outs["y"], ort_run(cnn(), {"x": x})["y"], rtol=1e-4, atol=1e-4)
    assert rep["check"]["ok"] and rep["check"]["reference"] == "onnxruntime"


def test_run_batch_and_seq(tmp_path: Path, capsys, compiled) -> None:
    feeds = {"x": rand(2, 11, 16, seed=2), "r": rand(2, 11, 8, seed=3)}
    rc, rep, outs, err = _run_bucketed(tmp_path, capsys, seq_model(), feeds,
                                       "--shape-buckets", "batch=1,4;seq=8,16")
    assert rc == 0, err
    assert rep["bucket"] == {"batch": 4, "seq": 16} and rep["bucket_actual"] == {"batch": 2, "seq": 11}
    assert compiled == [(4, 16, 16)] and outs["y"].shape == (2, 11, 8)
    np.testing.assert_allclose(outs["y"], ort_run(seq_model(), feeds)["y"], rtol=1e-4, atol=1e-4)


def test_run_pad_dims_keeps_others_exact(tmp_path: Path, capsys) -> None:
    feeds = {"x": rand(2, 11, 16), "r": rand(2, 11, 8)}
    rc, _, _, err = _run_bucketed(tmp_path, capsys, seq_model(), feeds, "--shape-buckets", "batch=1,4;seq=8,16",
                                  "--pad-dims", "batch")
    assert rc == 1
    assert err == ["error: input 'x' has seq=11, outside every bucket (8, 16); 'seq' is not padded, it must match"]


def test_run_random_inputs_use_the_first_bucket(tmp_path: Path, capsys, compiled) -> None:
    rc, rep, outs, err = _run_bucketed(tmp_path, capsys, cnn(), None, "--shape-buckets", "batch=2,4")
    assert rc == 0, err
    assert rep["bucket"] == {"batch": 2} and outs["y"].shape == (2, 3) and compiled == [(2, 1, 8, 8)]


def test_run_outside_every_bucket(tmp_path: Path, capsys, compiled) -> None:
    rc, _, _, err = _run_bucketed(tmp_path, capsys, cnn(), {"x": rand(16, 1, 8, 8)},
                                  "--shape-buckets", "batch=1,4,8")
    assert rc == 1 and err == ["error: input 'x' has batch=16, outside every bucket (1, 4, 8)"]
    assert compiled == []


@pytest.mark.parametrize("argv,code,line", [
    ([], 1, UNBOUND),
    (["--shape-buckets", "batch=abc"], 2, "error: bad --shape-buckets 'batch=abc': 'abc' for 'batch' is "
                                          "not a positive integer"),
    (["--shape-buckets", "seq=4"], 1, "error: the model has no symbolic dimension 'seq' (its symbolic dims "
                                      "are 'batch')"),
    (["--shape-buckets", "batch=4", "--pad-dims", "seq"], 2, "error: bad --pad-dims 'seq': expected 'none' "
                                                             "or dims of --shape-buckets (batch)"),
    (["--pad-dims", "batch"], 2, "error: --pad-dims needs --shape-buckets"),
])
def test_run_errors(tmp_path: Path, capsys, argv, code: int, line: str) -> None:
    src = save(cnn(), tmp_path / "m.onnx")
    rc, _, err = cli(capsys, npu_run.main, src, *argv)
    assert rc == code and err[0] == (f"{src}: {line}" if code == 1 else line)  # (a model's error names its file)


def test_run_buckets_need_an_onnx_input(tmp_path: Path, capsys) -> None:
    (tmp_path / "m.mlir").write_text("builtin.module {}\n")
    rc, _, err = cli(capsys, npu_run.main, tmp_path / "m.mlir", "--shape-buckets", "batch=1")
    assert rc == 2 and err[0].startswith("error: --shape-buckets needs an .onnx INPUT")


def test_run_without_buckets_reports_none(tmp_path: Path, capsys) -> None:
    rc, rep, _, err = _run_bucketed(tmp_path, capsys, cnn(batch=2), None)
    assert rc == 0, err
    assert "bucket" not in rep

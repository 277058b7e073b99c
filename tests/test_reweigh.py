"""Level 0 of the compile cache (`tools/reweigh.py`): a model compiled before with
other weights is rebuilt from the recorded recipes and the cached image, byte for byte
what a fresh compile writes (folded BatchNorms, merged and scaled attention
projections, plain initializers, float16 ones); a weight a pass decided on by value (a Mul by all
ones removed) that changes its answer, or a damaged cached image, falls back to a
compile. And the recipes themselves (`npu_dialects.recipe`)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_dialects.recipe import Derived, evaluate, leaves
from tools.npu_compile import main as npu_compile
from tools.npu_run import main as npu_run
from tools.reweigh import derivation

from .test_compile_cache import MODELS, _cache_line, _compile, _fresh, _scaled_weights

REBUILT = "cache:     weights "


def _conv_bn(path, scale: float = 1.0) -> None:
    """conv -> BatchNormalization -> relu -> global pool -> matmul by a [32, 10] weight
    (every parameter more than 16 elements: weights, not structure)."""
    rng = np.random.default_rng(0)
    inits = {"w": rng.normal(size=(32, 3, 3, 3)), "b": rng.normal(size=32), "g": rng.uniform(0.5, 1.5, 32),
             "beta": rng.normal(size=32), "mean": rng.normal(size=32), "var": rng.uniform(0.5, 2, 32),
             "fc": rng.normal(size=(32, 10))}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc")]
    graph = helper.make_graph(
        nodes, "conv_bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array((v * (scale if k in ("w", "g", "fc") else 1)).astype(np.float32), k)
         for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _dense_layer(path, scale: float = 1.0) -> None:
    """A DenseNet layer: x1 = concat(x, conv(relu(x))), BatchNormalization -> relu -> a
    1x1 conv over x1, which npu-split-concat-conv splits into convs over x's and the new
    channels (their weights slices of the conv's). `scale` changes the conv's weights and
    the BatchNormalization's shift (not its scale, whose signs the passes decide on)."""
    rng = np.random.default_rng(0)
    inits = {"w1": rng.normal(size=(24, 32, 3, 3)) * 0.1, "g": rng.uniform(0.5, 1.5, 56), "beta": rng.normal(size=56),
             "mean": rng.normal(size=56), "var": rng.uniform(0.5, 2, 56), "w2": rng.normal(size=(20, 56, 1, 1)) * 0.2,
             "b2": rng.normal(size=20) * 0.1}
    nodes = [helper.make_node("Relu", ["x"], ["r0"], name="relu0"),
             helper.make_node("Conv", ["r0", "w1"], ["f"], name="f", pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["x", "f"], ["x1"], name="cat", axis=1),
             helper.make_node("BatchNormalization", ["x1", "g", "beta", "mean", "var"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2", "b2"], ["y"], name="conv")]
    graph = helper.make_graph(
        nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 20, 8, 8]),
         helper.make_tensor_value_info("x1", TensorProto.FLOAT, [1, 56, 8, 8])],
        [numpy_helper.from_array((v * (scale if k in ("w2", "beta") else 1)).astype(np.float32), k)
         for k, v in inits.items()])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _unsqueezed(path, scale: float = 1.0, flip: bool = False) -> None:
    """A DenseNet layer as Caffe2 exported it: BatchNormalization (scale 1, shift 0), then
    a Mul and an Add by per-channel initializers Unsqueezed to [C, 1, 1] at import,
    relu, a 3x3 conv. `scale` changes the conv's weights and the shift; `flip`, the
    sign of one channel's scale (npu-bn-fold's move of the scale through the relu into
    the conv decides on those signs)."""
    rng = np.random.default_rng(2)
    s = rng.uniform(0.5, 1.5, 24)
    if flip:
        s[3] = -s[3]
    inits = {"g": np.ones(24), "beta": np.zeros(24), "mean": rng.normal(size=24), "var": rng.uniform(0.5, 2, 24),
             "s": s, "t": rng.normal(size=24) * scale, "w": rng.normal(size=(20, 24, 3, 3)) * 0.2 * scale}
    nodes = [helper.make_node("BatchNormalization", ["x", "g", "beta", "mean", "var"], ["n"], name="bn"),
             helper.make_node("Unsqueeze", ["s", "axes"], ["s3"], name="us"),
             helper.make_node("Unsqueeze", ["t", "axes"], ["t3"], name="ut"),
             helper.make_node("Mul", ["n", "s3"], ["m"], name="scale"),
             helper.make_node("Add", ["m", "t3"], ["a"], name="shift"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "caffe2", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 20, 8, 8])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()]
        + [numpy_helper.from_array(np.array([1, 2], np.int64), "axes")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _half(path, scale: float = 1.0) -> None:
    """An all-float16 model (as onnxconverter-common writes one): conv by a float16 weight,
    relu, a MatMul by a float16 [32, 10] weight. `scale` changes both weights."""
    rng = np.random.default_rng(3)
    w = (rng.normal(size=(32, 3, 3, 3)) * 0.3 * scale).astype(np.float16)
    fc = (rng.normal(size=(32, 10)) * 0.2 * scale).astype(np.float16)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc")]
    graph = helper.make_graph(
        nodes, "half", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 10])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(fc, "fc")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def _scaled(src, dst, factor: float, which) -> None:
    """`src` with the large float initializers `which(name)` selects scaled."""
    m = onnx.load(str(src))
    for init in m.graph.initializer:
        a = numpy_helper.to_array(init)
        if a.dtype == np.float32 and a.size > 16 and which(init.name):
            init.CopyFrom(numpy_helper.from_array((a * factor).astype(np.float32), init.name))
    onnx.save(m, str(dst))


def _ones_mul(path, ones: float, w_scale: float) -> None:
    """y = (x @ w) * c with c [1, 32] all `ones`: canonicalisation removes a Mul by ones
    after testing every element of c (a decision on c's value)."""
    w = np.random.default_rng(1).normal(size=(32, 32)).astype(np.float32) * w_scale
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"), helper.make_node("Mul", ["m", "c"], ["y"], name="mul")],
        "ones", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 32])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.full((1, 32), ones, np.float32), "c")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


@pytest.mark.parametrize("model", ["lenet.onnx", "bert_encoder.onnx", "conv_bn", "dense_layer", "unsqueezed", "half"])
def test_weights_only_change_is_rebuilt_as_a_compile_would(tmp_path, capsys, model):
    """(dense_layer: the split conv's weight parts are slices with recipes; the split
    read the conv's weights by value, and every such change ran the graph passes;
    unsqueezed: the folded Unsqueezes are their initializers' data, not computed
    constants whose sources are unknown - DenseNet-121's every change ran them too;
    half: float16 initializers are weights, not structure, as float32 ones are)"""
    cache = tmp_path / "cache"
    first, changed = tmp_path / "first.onnx", tmp_path / "changed.onnx"
    if model in ("conv_bn", "dense_layer", "unsqueezed", "half"):
        make = {"conv_bn": _conv_bn, "dense_layer": _dense_layer, "unsqueezed": _unsqueezed, "half": _half}[model]
        make(first)
        make(changed, scale=1.5)
    else:  # (a fine-tuned model: the layers' weights, not the position table the importer slices)
        first.write_bytes((MODELS / model).read_bytes())
        _scaled(MODELS / model, changed, 1.5, lambda name: not name.startswith("positions"))
    _compile(capsys, first, tmp_path / "a.npuexe", "--cache-dir", str(cache))
    text = _compile(capsys, changed, tmp_path / "b.npuexe", "--cache-dir", str(cache))
    assert _cache_line(text).startswith(REBUILT) and "rebuilt, program reused" in text
    assert f"model:     {changed}" in text
    assert (tmp_path / "b.npuexe").read_bytes() == _fresh(changed, tmp_path)
    assert (tmp_path / "b.npuexe").read_bytes() != (tmp_path / "a.npuexe").read_bytes()
    assert npu_run([str(tmp_path / "b.npuexe"), "--check"]) == 0


def test_a_changed_view_of_an_initializer_is_read_again_in_its_shape(tmp_path, capsys):
    """The Unsqueezed scale's sign flips: npu-bn-fold decided on it, so level 0 does not
    apply; level 1 (the import) does, re-reading the initializer in the [C, 1, 1] shape
    the importer gave its view; the executable is a fresh compile's."""
    cache = tmp_path / "cache"
    _unsqueezed(tmp_path / "a.onnx")
    _compile(capsys, tmp_path / "a.onnx", tmp_path / "a.npuexe", "--cache-dir", str(cache))
    record = json.loads(next((cache / "derive").iterdir()).read_text())
    assert {"s", "t", "w"} <= set(record["tensors"]) and "w" not in record["value"]
    _unsqueezed(tmp_path / "b.onnx", flip=True)
    text = _compile(capsys, tmp_path / "b.onnx", tmp_path / "b.npuexe", "--cache-dir", str(cache))
    assert _cache_line(text).startswith("cache:     import hit, graph miss")
    assert (tmp_path / "b.npuexe").read_bytes() == _fresh(tmp_path / "b.onnx", tmp_path)
    assert npu_run([str(tmp_path / "b.npuexe"), "--check"]) == 0


def test_bert_projections_keep_their_recipes(tmp_path, capsys):
    """The merged q/k/v weights (q's scaled by 1/sqrt(d)) are recipes over the model's
    initializers, and nothing the passes read by value is left in the value set."""
    cache = tmp_path / "cache"
    _compile(capsys, MODELS / "bert_encoder.onnx", tmp_path / "a.npuexe", "--cache-dir", str(cache))
    record = json.loads(next((cache / "derive").iterdir()).read_text())
    merged = [json.dumps(r) for k, r in record["recipes"].items() if k.endswith(".merged")]
    scaled = [k for k, r in record["recipes"].items() if "scale_cols" in json.dumps(r)]
    assert len(merged) == 2 and all("concat" in m and any(k in m for k in scaled) for m in merged)
    assert all("expr" in s for s in record["weights"].values())  # (the packs of the layer groups)
    assert record["value"] == ["positions.weight"]  # (sliced by the importer: read by value)


def test_a_decision_on_a_weight_value_is_checked(tmp_path, capsys):
    cache = tmp_path / "cache"
    _ones_mul(tmp_path / "a.onnx", 1.0, 1.0)
    _compile(capsys, tmp_path / "a.onnx", tmp_path / "a.npuexe", "--cache-dir", str(cache))
    record = json.loads(next((cache / "derive").iterdir()).read_text())
    assert record["uniform"] == {"c": 1.0}
    _ones_mul(tmp_path / "w.onnx", 1.0, 2.0)  # only w: the record applies
    text = _compile(capsys, tmp_path / "w.onnx", tmp_path / "w.npuexe", "--cache-dir", str(cache))
    assert _cache_line(text).startswith(REBUILT)
    assert (tmp_path / "w.npuexe").read_bytes() == _fresh(tmp_path / "w.onnx", tmp_path)
    _ones_mul(tmp_path / "c.onnx", 2.0, 1.0)  # c no longer ones: the Mul stays, a compile
    capsys.readouterr()
    text = _compile(capsys, tmp_path / "c.onnx", tmp_path / "c.npuexe", "--cache-dir", str(cache))
    assert not _cache_line(text).startswith(REBUILT) and "executable" in _cache_line(text)
    assert (tmp_path / "c.npuexe").read_bytes() == _fresh(tmp_path / "c.onnx", tmp_path)


def test_a_damaged_cached_image_is_reported_and_compiled(tmp_path, capsys):
    cache = tmp_path / "cache"
    _compile(capsys, MODELS / "lenet.onnx", tmp_path / "a.npuexe", "--cache-dir", str(cache))
    entry = next(p for p in (cache / "exe").iterdir() if p.suffix == ".npuexe")
    data = bytearray(entry.read_bytes())
    data[-100] ^= 0xFF  # (in the weights)
    entry.write_bytes(bytes(data))
    _scaled_weights(MODELS / "lenet.onnx", tmp_path / "b.onnx", 1.5)
    assert npu_compile([str(tmp_path / "b.onnx"), "-o", str(tmp_path / "b.npuexe"), "--cache-dir", str(cache)]) == 0
    captured = capsys.readouterr()
    assert f"warning: compile cache: entry '{entry}' is corrupt" in captured.err
    assert not _cache_line(captured.out).startswith(REBUILT)
    assert (tmp_path / "b.npuexe").read_bytes() == _fresh(tmp_path / "b.onnx", tmp_path)


def test_recipes_compute_what_the_pass_computed():
    w = Derived.weight("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    b = Derived.weight("b", np.ones(3, np.float32))
    # (a Python scalar stays weak: float32 arithmetic, as the pass's own)
    d = Derived.apply("concat", w * 0.5 + b, np.sqrt(w.astype(np.float64) + 1e-5).astype(np.float32), axis=0)
    assert d.value.dtype == np.float32 and leaves([d.expr]) == {"w", "b"}
    again = evaluate(json.loads(json.dumps(d.expr)), {"w": w.value * 2, "b": b.value}.__getitem__)
    expected = np.concatenate([w.value * 2 * np.float32(0.5) + 1, np.sqrt((w.value * 2).astype(np.float64) + 1e-5).astype(np.float32)])
    assert again.dtype == np.float32 and np.array_equal(again, expected)


def test_derivation_value_set():
    recipes = {"m": {"op": "concat", "axis": 0, "args": [{"w": "a"}, {"w": "u"}]}}
    d = derivation({"a": "A", "b": "B", "c": "C"}, ["I"], reads={"c"}, recipes=recipes,
                   final=["a", "m", "b"], uniform={"b": 1.0})
    assert d["weights"] == {"a": {"init": "A"}, "m": {"keep": True}, "b": {"init": "B"}}  # (u: made without one)
    assert d["value"] == ["A", "C", "I"] and d["uniform"] == {"B": 1.0}

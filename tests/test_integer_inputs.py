"""Models with integer inputs (token ids, token types, masks) under `npu-run --check`
and `--compare-all` (issue 43 items 1 and 2): onnxruntime gets the inputs in the
model's own dtypes; random integer inputs stay inside every table they index
(`npu.input_ranges`, `lowering/graph/input_ranges.py`), 0/1 for masks, or are refused
with a message asking for --inputs; an out-of-range index is one line naming the op,
its ONNX node, the index and the table size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from lowering.graph.input_ranges import input_ranges
from lowering.importer.onnx_import import import_model, load_model
from npu_dialects.arch import PRESETS
from npu_dialects.weights import attach_weights
from runtime.run import RunError, random_inputs
from sim import Signature
from tools.accuracy import compare_all
from tools.npu_compile import main as npu_compile_main
from tools.npu_run import main as npu_run_main

MODELS = Path(__file__).parent / "models"
INT_MODELS = ["bert_encoder", "gpt_decoder", "gpt_decoder_buffer"]
"""The models of tests/models/ with integer inputs (int64 token ids [1, 8], tables of 100 rows)."""


def _model(nodes, inputs, inits, out_shape, path: Path) -> Path:
    g = h.make_graph(nodes, path.stem, [h.make_tensor_value_info(n, T.INT64, s) for n, s in inputs],
                     [h.make_tensor_value_info("out", T.FLOAT, out_shape)],
                     [nh.from_array(np.asarray(a), n) for n, a in inits.items()])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path


def bert_like(tmp_path: Path) -> Path:
    """Word (50 rows) and token-type (2 rows) embeddings, an additive attention mask."""
    rng = np.random.default_rng(0)
    nodes = [
        h.make_node("Gather", ["wte", "input_ids"], ["e1"], name="/emb/word/Gather"),
        h.make_node("Gather", ["tte", "token_type_ids"], ["e2"], name="/emb/tt/Gather"),
        h.make_node("Add", ["e1", "e2"], ["e"], name="/emb/Add"),
        h.make_node("MatMul", ["e", "wq"], ["q"], name="/q/MatMul"),
        h.make_node("Transpose", ["e"], ["et"], perm=[0, 2, 1], name="/t"),
        h.make_node("MatMul", ["q", "et"], ["s"], name="/s/MatMul"),
        h.make_node("Unsqueeze", ["attention_mask", "ax1"], ["m1"], name="/m/Unsqueeze"),
        h.make_node("Cast", ["m1"], ["mf"], to=T.FLOAT, name="/m/Cast"),
        h.make_node("Sub", ["one", "mf"], ["mi"], name="/m/Sub"),
        h.make_node("Mul", ["mi", "big"], ["madd"], name="/m/Mul"),
        h.make_node("Add", ["s", "madd"], ["s2"], name="/s/Add"),
        h.make_node("Softmax", ["s2"], ["p"], axis=-1, name="/softmax"),
        h.make_node("MatMul", ["p", "e"], ["out"], name="/o/MatMul"),
    ]
    inits = {"wte": rng.standard_normal((50, 16)).astype(np.float32),
             "tte": rng.standard_normal((2, 16)).astype(np.float32),
             "wq": rng.standard_normal((16, 16)).astype(np.float32) * 0.3,
             "ax1": np.array([1], np.int64), "one": np.array(1.0, np.float32),
             "big": np.array(-10000.0, np.float32)}
    return _model(nodes, [("input_ids", [1, 8]), ("token_type_ids", [1, 8]), ("attention_mask", [1, 8])],
                  inits, [1, 8, 16], tmp_path / "bert_like.onnx")


def scaled_ids(tmp_path: Path) -> Path:
    """ids * 10 index a table of 5 rows: no range of ids is known to stay inside it."""
    nodes = [h.make_node("Mul", ["ids", "ten"], ["i10"], name="/Mul"),
             h.make_node("Gather", ["table", "i10"], ["out"], name="/Gather")]
    inits = {"ten": np.array(10, np.int64), "table": np.arange(20, dtype=np.float32).reshape(5, 4)}
    return _model(nodes, [("ids", [1, 3])], inits, [1, 3, 4], tmp_path / "scaled_ids.onnx")


def _ort(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _ranges(path: Path) -> dict:
    m, w = import_model(load_model(str(path)), PRESETS["default"])
    attach_weights(m, w)
    return input_ranges(m)


@pytest.mark.parametrize("name", INT_MODELS)
def test_check_on_token_id_models_random_and_given(name: str, tmp_path: Path, capsys) -> None:
    """Item 1: onnxruntime gets int64 ids, random or from an int64 (or int32) .npz; the
    report is written; the outputs equal onnxruntime's."""
    path = MODELS / f"{name}.onnx"
    ids = np.random.default_rng(3).integers(0, 100, (1, 8))
    for feeds in (None, {"input_ids": ids}, {"input_ids": ids.astype(np.int32)}):
        args = [str(path), "--check", "--report", str(tmp_path / "r.json"), "--outputs", str(tmp_path / "o.npz")]
        if feeds is not None:
            np.savez(tmp_path / "in.npz", **feeds)
            args += ["--inputs", str(tmp_path / "in.npz")]
        assert npu_run_main(args) == 0, capsys.readouterr().err
        report = json.loads((tmp_path / "r.json").read_text())
        assert report["check"]["ok"] and report["check"]["reference"] == "onnxruntime"
        out = dict(np.load(tmp_path / "o.npz"))
        want = _ort(path, {"input_ids": ids if feeds is not None
                           else random_inputs_for(path)["input_ids"]})
        got = next(iter(out.values()))
        assert np.abs(got - want).max() < 1e-4 * max(1.0, np.abs(want).max())


def random_inputs_for(path: Path) -> dict[str, np.ndarray]:
    """The random inputs npu-run draws for an ONNX model (seed 0)."""
    from sim import signature
    from tools.npu_run import load_input
    return random_inputs(signature(load_input(str(path), None, False).module), 0)


def test_compare_all_and_executable_on_token_ids(tmp_path: Path, capsys) -> None:
    path = MODELS / "bert_encoder.onnx"
    rep = tmp_path / "r.json"
    assert npu_run_main([str(path), "--check", "--compare-all", "--report", str(rep)]) == 0
    out = capsys.readouterr().out
    assert "every tensor within tolerance" in out and "check:       ok vs onnxruntime" in out
    assert json.loads(rep.read_text())["compare_all"]["first_over_tolerance"] is None
    exe = tmp_path / "b.npuexe"
    assert npu_compile_main([str(path), "-o", str(exe), "--no-cache"]) == 0
    np.savez(tmp_path / "in.npz", input_ids=np.arange(8).reshape(1, 8) * 12)
    for extra in ([], ["--inputs", str(tmp_path / "in.npz")]):
        assert npu_run_main([str(exe), "--check", "--compare-all", *extra]) == 0, capsys.readouterr().err
        assert "check:       ok vs onnxruntime" in capsys.readouterr().out


def test_random_indices_stay_in_each_table(tmp_path: Path, capsys) -> None:
    """Item 2: a token-type table of 2 rows, a 0/1 mask; recorded through .onnx,
    lowered .mlir and .npuexe alike."""
    path = bert_like(tmp_path)
    assert _ranges(path) == {"input_ids": (0, 50), "token_type_ids": (0, 2), "attention_mask": (0, 2)}
    rep = tmp_path / "r.json"
    assert npu_run_main([str(path), "--check", "--compare-all", "--report", str(rep)]) == 0, \
        capsys.readouterr().err
    assert json.loads(rep.read_text())["check"]["ok"]
    ins = random_inputs_for(path)
    assert ins["token_type_ids"].dtype == np.int64 and set(np.unique(ins["token_type_ids"])) <= {0, 1}
    assert set(np.unique(ins["attention_mask"])) <= {0, 1} and ins["input_ids"].max() < 50
    exe = tmp_path / "b.npuexe"
    assert npu_compile_main([str(path), "-o", str(exe), "--no-cache"]) == 0
    assert npu_run_main([str(exe), "--check"]) == 0, capsys.readouterr().err
    feeds = {"input_ids": np.arange(8).reshape(1, 8) * 6, "token_type_ids": np.array([[0, 0, 0, 1, 1, 1, 1, 1]]),
             "attention_mask": np.array([[1, 1, 1, 1, 1, 1, 0, 0]])}
    np.savez(tmp_path / "in.npz", **feeds)
    assert npu_run_main([str(path), "--check", "--inputs", str(tmp_path / "in.npz"), "--outputs",
                         str(tmp_path / "o.npz")]) == 0
    got, want = np.load(tmp_path / "o.npz")["out"], _ort(path, feeds)
    assert np.abs(got - want).max() < 1e-4


def test_an_out_of_range_index_is_one_line_naming_the_gather(tmp_path: Path, capsys) -> None:
    path = bert_like(tmp_path)
    np.savez(tmp_path / "bad.npz", input_ids=np.zeros((1, 8), np.int64),
             token_type_ids=np.array([[0, 1, 0, 7, 0, 0, 0, 0]]), attention_mask=np.ones((1, 8), np.int64))
    assert npu_run_main([str(path), "--inputs", str(tmp_path / "bad.npz")]) == 1
    err = capsys.readouterr().err
    first, *rest = err.strip().splitlines()
    assert first.startswith("error: task ") and "(ONNX node /emb/tt/Gather)" in first
    assert "gather index 7" in first and "of size 2" in first
    assert "/q/MatMul" not in err and "/emb/word/Gather," not in err  # (not the task's node list)
    assert rest == ["hint: indices must lie in [-2, 2); an integer model input (token ids from --inputs) may "
                    "hold one outside"]


def test_unknown_range_is_refused_with_a_hint_to_pass_inputs(tmp_path: Path, capsys) -> None:
    path = scaled_ids(tmp_path)
    why = _ranges(path)["ids"]
    assert isinstance(why, str) and "gather node '/Gather' (a table of 5 rows)" in why
    assert npu_run_main([str(path), "--check"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot draw random values for int64 input 'ids': it "
                                               "reaches the indices of gather node '/Gather'")
    assert err[0].endswith("pass --inputs with real values")
    np.savez(tmp_path / "in.npz", ids=np.array([[0, 0, 0]]))
    assert npu_run_main([str(path), "--check", "--inputs", str(tmp_path / "in.npz")]) == 0


def test_a_module_without_recorded_ranges_refuses_random_integers() -> None:
    sig = Signature([("ids", (1, 4)), ("x", (2,))], [], {"ids": "int64", "x": "float32"})
    with pytest.raises(RunError, match=r"int64 input 'ids': the program records no range for it .*pass --inputs"):
        random_inputs(sig)
    sig = Signature(sig.inputs, [], sig.input_dtypes, input_ranges={"ids": (3, 5)})
    ins = random_inputs(sig, 1)
    assert ins["ids"].dtype == np.int64 and set(np.unique(ins["ids"])) <= {3, 4}
    bools = Signature([("m", (64,))], [], {"m": "bool"})
    assert random_inputs(bools)["m"].dtype == np.bool_


def _ranges_of(text: str) -> dict:
    """`input_ranges` of a module written as MLIR text."""
    from npu_dialects import make_context
    from tools.diagnostics import parse_mlir
    return input_ranges(parse_mlir(make_context(), text.encode(), "t.mlir"))


def test_ranges_through_arithmetic() -> None:
    """Forward intervals: a cumulative sum of a 0/1 mask (a triangular matmul) minus one
    indexes a position table of 8 rows; the same sum into 4 rows is unknown."""
    def ranges(rows: int) -> dict:
        text = f'''
        func.func @main(%m: tensor<1x8xf32>) -> tensor<1x8x2xf32> attributes {{npu.inputs = ["mask"],
            npu.outputs = ["y"], npu.input_dtypes = ["int64"]}} {{
          %tri = npu_graph.constant {{value = dense<{np.triu(np.ones((8, 8))).astype(int).tolist()}> : tensor<8x8xf32>}} : tensor<8x8xf32>
          %c = npu_graph.matmul %m, %tri : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
          %one = npu_graph.constant {{value = dense<1.0> : tensor<f32>}} : tensor<f32>
          %p = npu_graph.sub %c, %one : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
          %t = npu_graph.constant {{value = dense<0.5> : tensor<{rows}x2xf32>}} : tensor<{rows}x2xf32>
          %y = npu_graph.gather %t, %p {{axis = 0 : i64}} : (tensor<{rows}x2xf32>, tensor<1x8xf32>) -> tensor<1x8x2xf32>
          func.return %y : tensor<1x8x2xf32>
        }}'''
        return _ranges_of(text)

    assert ranges(8) == {"mask": (0, 2)}
    why = ranges(4)["mask"]
    assert isinstance(why, str) and "a table of 4 rows" in why and "[-1, 7]" in why


def test_ranges_through_a_remainder_by_varying_divisors() -> None:
    """An fmod by a constant whose elements differ (-3 .. 2) bounds its result below the
    largest divisor's magnitude: its indices fit a table of 4 rows, not one of 2 (the
    fuzzer's seed 203256 was refused random inputs: only one divisor value was known)."""
    def ranges(rows: int) -> dict:
        text = f'''
        func.func @main(%i: tensor<1x4xf32>) -> tensor<1x4x2xf32> attributes {{npu.inputs = ["ids"],
            npu.outputs = ["y"], npu.input_dtypes = ["int64"]}} {{
          %d = npu_graph.constant {{value = dense<[[-3.0, 2.0, -1.0, 1.0]]> : tensor<1x4xf32>}} : tensor<1x4xf32>
          %r = npu_graph.fmod %i, %d : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
          %t = npu_graph.constant {{value = dense<0.5> : tensor<{rows}x2xf32>}} : tensor<{rows}x2xf32>
          %y = npu_graph.gather %t, %r {{axis = 0 : i64}} : (tensor<{rows}x2xf32>, tensor<1x4xf32>) -> tensor<1x4x2xf32>
          func.return %y : tensor<1x4x2xf32>
        }}'''
        return _ranges_of(text)

    assert ranges(4) == {"ids": (0, 2)}
    why = ranges(2)["ids"]
    assert isinstance(why, str) and "a table of 2 rows" in why


def test_compare_all_skips_buffers_sharing_a_location() -> None:
    """A layer group's DRAM scratch buffers all carry the group's nodes: none of them is
    named the group's last node's output (T5 reported a false 'first node over tolerance')."""
    from npu_dialects import make_context
    from tools.diagnostics import parse_mlir
    text = '''
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
      %a = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32> loc("a")
      %b = npu_graph.neg %a : (tensor<4xf32>) -> tensor<4xf32> loc("b")
      func.return %b : tensor<4xf32>
    }'''
    graph = parse_mlir(make_context(), text.encode(), "t.mlir")
    x = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    good = -np.maximum(x, 0)
    rows, first = compare_all(graph, {}, {"x": x}, [(["a", "b"], good), (["a", "b"], x)], {"y": good})
    assert first is None and [r["node"] for r in rows] == ["output 'y'"]
    rows, first = compare_all(graph, {}, {"x": x}, [(["a", "b"], good)], {"y": good})
    assert first is None and [r["node"] for r in rows] == ["b", "output 'y'"]


TRANSFORMERS = ["bert", "gpt2", "llama", "t5"]


@pytest.mark.parametrize("arch", TRANSFORMERS)
def test_transformers_exports_with_ids_and_masks(arch: str, tmp_path: Path, capsys) -> None:
    """Small random-weight Hugging Face models exported with token ids and an attention
    mask (T5: decoder ids too) pass --check with random and given inputs (needs torch
    and transformers: skipped without them)."""
    torch = pytest.importorskip("torch")
    tf = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = {"bert": lambda: tf.BertModel(tf.BertConfig(
               vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
               max_position_embeddings=64, type_vocab_size=2, attn_implementation="eager")),
           "gpt2": lambda: tf.GPT2Model(tf.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=64,
                                                      attn_implementation="eager")),
           "llama": lambda: tf.LlamaModel(tf.LlamaConfig(
               vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
               num_key_value_heads=1, max_position_embeddings=64, attn_implementation="eager")),
           "t5": lambda: tf.T5Model(tf.T5Config(vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=2,
                                                num_heads=2, attn_implementation="eager"))}
    names = {"bert": ["input_ids", "token_type_ids", "attention_mask"],
             "t5": ["input_ids", "attention_mask", "decoder_input_ids"]}.get(arch, ["input_ids", "attention_mask"])
    model = cfg[arch]().eval()

    class Wrap(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, *args):
            return self.m(**dict(zip(names, args)), return_dict=False)[0]

    feeds = {"input_ids": np.random.default_rng(1).integers(0, 100, (1, 8)),
             "token_type_ids": np.array([[0, 0, 0, 0, 1, 1, 1, 1]]), "attention_mask": np.array([[1] * 6 + [0] * 2]),
             "decoder_input_ids": np.random.default_rng(2).integers(0, 100, (1, 8))}
    feeds = {n: feeds[n].astype(np.int64) for n in names}
    path = tmp_path / f"{arch}.onnx"
    torch.onnx.export(Wrap(), tuple(torch.from_numpy(feeds[n]) for n in names), str(path), input_names=names,
                      output_names=["hidden"], opset_version=17, dynamo=False, do_constant_folding=True)
    assert npu_run_main([str(path), "--check"]) == 0, capsys.readouterr().err
    np.savez(tmp_path / "in.npz", **feeds)
    assert npu_run_main([str(path), "--check", "--compare-all", "--inputs", str(tmp_path / "in.npz")]) == 0
    out = capsys.readouterr().out
    assert "check:       ok vs onnxruntime" in out and "every tensor within tolerance" in out

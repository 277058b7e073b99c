"""ONNX Attention (`lowering/importer/attention.py`) compiled with npu-default, simulated
and compared with onnxruntime, or with onnx's reference where onnxruntime does not run
the node (a mask shorter than the keys with a cache, qk_matmul_output with past_key but
no present_key): 3-D and 4-D inputs, grouped-query attention, bool and float masks
(run-time and constant), causal with a cache and the present outputs, softcap, every
qk_matmul_output_mode, nonpad_kv_seqlen, the sliding window, fully masked rows; the
diagnostics of invalid nodes; one attention kernel for the plain case."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from lowering.importer.onnx_import import OnnxImportError, import_model
from lowering.pipeline import compile_module
from npu_dialects.arch import parse_arch_spec
from npu_dialects.compute import ApplyOp
from tools.testkit.e2e import compile_and_run, onnxruntime_outputs

SLOTS = ("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen")
ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.bool_): TensorProto.BOOL,
        np.dtype(np.int64): TensorProto.INT64}


@dataclass
class Case:
    """One Attention node: its inputs by slot name (`constant` ones as initializers)."""

    shapes: dict[str, tuple[int, ...]]
    attrs: dict = field(default_factory=dict)
    outputs: tuple[str, ...] = ("Y",)
    opset: int = 23
    mask: str = "float"  # or "bool"
    constant: tuple[str, ...] = ()
    nonpad: tuple[int, ...] = ()
    reference: str = "onnxruntime"  # or "onnx"
    mask_rows_off: tuple[int, ...] = ()  # query rows a bool mask masks throughout

    def arrays(self, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        out = {}
        for name, shape in self.shapes.items():
            if name == "nonpad_kv_seqlen":
                out[name] = np.array(self.nonpad, np.int64)
            elif name == "attn_mask" and self.mask == "bool":
                m = rng.random(shape) > 0.3
                m[..., -1, 0] = True  # (every row but those of mask_rows_off attends a key)
                for r in self.mask_rows_off:
                    m[..., r, :] = False
                out[name] = m
            else:
                out[name] = (rng.standard_normal(shape) * (2.0 if name == "attn_mask" else 1.0)).astype(np.float32)
        return out

    def model(self) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
        arrays = self.arrays()
        last = max(SLOTS.index(n) for n in arrays)
        names = [n if n in arrays else "" for n in SLOTS[:last + 1]]
        feeds = {n: a for n, a in arrays.items() if n not in self.constant}
        node = helper.make_node("Attention", names, list(self.outputs), name="att", **self.attrs)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info(n, ELEM[a.dtype], list(a.shape)) for n, a in feeds.items()],
            [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in self.outputs if o],
            [numpy_helper.from_array(arrays[n], n) for n in self.constant])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)]), feeds


B4 = {"Q": (2, 4, 3, 8), "K": (2, 2, 5, 8), "V": (2, 2, 5, 6)}  # grouped: 4 query heads, 2 kv heads
PAST = {"past_key": (2, 2, 4, 8), "past_value": (2, 2, 4, 6)}  # total keys 9
MHA = {"Q": (2, 3, 4, 8), "K": (2, 3, 6, 8), "V": (2, 3, 6, 8)}
CASES = {
    "4d": Case(MHA),
    "4d_scaled": Case(MHA, {"scale": 0.3}),
    "3d_diff_head_sizes": Case({"Q": (2, 4, 24), "K": (2, 6, 24), "V": (2, 6, 30)},
                               {"q_num_heads": 3, "kv_num_heads": 3}),
    "3d_gqa_causal": Case({"Q": (2, 4, 32), "K": (2, 4, 16), "V": (2, 4, 16)},
                          {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1}),
    "gqa_bool_mask": Case({**B4, "attn_mask": (3, 5)}, mask="bool"),
    "gqa_bool_mask_per_head": Case({**B4, "attn_mask": (2, 4, 3, 5)}, mask="bool"),
    "gqa_float_mask_constant": Case({**B4, "attn_mask": (2, 1, 3, 5)}, constant=("attn_mask",)),
    "gqa_causal_past_present": Case({**B4, **PAST}, {"is_causal": 1}, ("Y", "present_key", "present_value")),
    "3d_bool_mask_past_present": Case({"Q": (2, 3, 32), "K": (2, 5, 16), "V": (2, 5, 12), "attn_mask": (3, 9), **PAST},
                                      {"q_num_heads": 4, "kv_num_heads": 2}, ("Y", "present_key", "present_value"),
                                      mask="bool"),
    "short_bool_mask_past": Case({**B4, "attn_mask": (3, 7), **PAST}, {"is_causal": 1},
                                 ("Y", "present_key", "present_value"), 24, "bool", reference="onnx"),
    "softcap_float_mask": Case({**B4, "attn_mask": (3, 5)}, {"softcap": 1.5}),
    "fully_masked_rows": Case({**B4, "attn_mask": (3, 5)}, {"qk_matmul_output_mode": 3},
                              ("Y", "", "", "qk"), mask="bool", mask_rows_off=(0,)),
    "nonpad_causal_decode": Case({"Q": (2, 4, 1, 8), "K": (2, 2, 8, 8), "V": (2, 2, 8, 8), "nonpad_kv_seqlen": (2,)},
                                 {"is_causal": 1}, opset=24, nonpad=(8, 5)),
    "nonpad_constant_short_mask": Case({**MHA, "attn_mask": (2, 1, 4, 4), "nonpad_kv_seqlen": (2,)}, opset=24,
                                       constant=("nonpad_kv_seqlen",), nonpad=(4, 3), reference="onnx"),
    "nonpad_causal_negative_offset": Case({**MHA, "nonpad_kv_seqlen": (2,)}, {"is_causal": 1}, opset=24,
                                          nonpad=(2, 6), reference="onnx"),
    "window_causal_past": Case({**B4, **PAST}, {"is_causal": 1, "left_window_size": 2},
                               ("Y", "present_key", "present_value"), 25),
    "window_bidirectional": Case(MHA, {"left_window_size": 1, "right_window_size": 2}, opset=25),
}
for _mode in range(4):
    CASES[f"qk_mode_{_mode}"] = Case({**B4, "attn_mask": (3, 5)}, {"qk_matmul_output_mode": _mode, "softcap": 2.0},
                                     ("Y", "", "", "qk"))
    CASES[f"qk_mode_{_mode}_past"] = Case({**B4, "attn_mask": (3, 9), **PAST}, {"qk_matmul_output_mode": _mode},
                                          ("Y", "", "", "qk"), mask="bool", reference="onnx")


def _expected(case: Case, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    if case.reference == "onnxruntime":
        return onnxruntime_outputs(model, feeds)
    names = [o for o in case.outputs if o]
    return {n: np.asarray(a) for n, a in zip(names, ReferenceEvaluator(model).run(names, feeds))}


@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_matches_reference(name: str) -> None:
    case = CASES[name]
    model, feeds = case.model()
    res, _ = compile_and_run(model, inputs=feeds)
    for k, want in _expected(case, model, feeds).items():
        scale = float(np.abs(want[np.isfinite(want)]).max())  # (mode 2 holds the -inf of the mask)
        np.testing.assert_allclose(res.outputs[k], want, rtol=1e-3, atol=1e-4 * scale, err_msg=f"{name}: {k}")


def test_fully_masked_rows_are_zero() -> None:
    """A query row whose mask attends no key gives zeros (not NaN), in Y and in mode 3."""
    model, feeds = CASES["fully_masked_rows"].model()
    res, _ = compile_and_run(model, inputs=feeds)
    assert np.all(res.outputs["Y"][:, :, 0] == 0) and np.all(res.outputs["qk"][:, :, 0] == 0)
    assert np.isfinite(res.outputs["Y"]).all()


DIAGNOSTICS = {
    "3-D inputs need the q_num_heads attribute":
        Case({"Q": (2, 4, 24), "K": (2, 6, 24), "V": (2, 6, 24)}, {"kv_num_heads": 3}),
    "the 3 query heads are not a multiple of the 2 kv heads":
        Case({"Q": (2, 3, 4, 8), "K": (2, 2, 6, 8), "V": (2, 2, 6, 8)}),
    "nonpad_kv_seqlen cannot be combined with past_key and past_value":
        Case({**B4, **PAST, "nonpad_kv_seqlen": (2,)}, outputs=("Y", "present_key", "present_value"), opset=24,
             nonpad=(9, 9)),
    "attn_mask of shape [3, 10] does not broadcast to the scores [2, 4, 3, 9] (its last dim may be shorter, not longer)":
        Case({**B4, "attn_mask": (3, 10), **PAST}, outputs=("Y", "present_key", "present_value")),
}


@pytest.mark.parametrize("message", sorted(DIAGNOSTICS))
def test_invalid_node_is_diagnosed(message: str) -> None:
    model, _ = DIAGNOSTICS[message].model()
    with pytest.raises(OnnxImportError) as e:
        import_model(model)
    assert e.value.lines[0] == f"error: node 'att' (Attention, opset {model.opset_import[0].version}): {message}"


@pytest.mark.parametrize("name", ["4d", "3d_gqa_causal", "gqa_bool_mask", "gqa_float_mask_constant"])
def test_attention_is_one_kernel(name: str) -> None:
    """q @ kt, scale, mask, softmax and @ v become one `npu_graph.attention` kernel (no
    softmax or matmul kernel of its own) after npu-default."""
    arch = parse_arch_spec("default")
    module, weights = import_model(CASES[name].model()[0], arch)
    compile_module(module, arch, weights)
    kernels = [op.op.data for op in module.walk() if isinstance(op, ApplyOp)]
    assert kernels.count("npu_graph.attention") >= 1
    assert not {"npu_graph.softmax", "npu_graph.matmul"} & set(kernels), kernels

"""The vector unit's special functions as the arch evaluates them (`npu_dialects/special.py`):
the `fn_*` parameters and their errors, the approximations' error bounds, the exact
default unchanged bit for bit, the simulator emulating and charging a method, and
`--compare-all` naming each approximated op's error."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu_dialects import special
from npu_dialects.arch import PRESETS, ArchError, parse_arch_spec
from npu_dialects.graph import ELEMENTWISE, SoftmaxOp

ERF = np.frompyfunc(math.erf, 1, 1)


def test_spec_grammar_and_errors() -> None:
    assert special.parse_spec("table256") == {"": special.Method("table", 256)}
    assert special.parse_spec("f16:table64+poly5") == {"f16": special.Method("table", 64),
                                                       "": special.Method("poly", 5)}
    assert special.method_of("f16:table64", "f32") == special.EXACT
    assert special.method_of("f16:table64", "f16").size == 64
    for bad, why in (("table1", "a table has 2 to"), ("poly0", "degree 1 to"), ("f64:exact", "not a float type"),
                     ("lut", "is not exact, tableN or polyD"), ("exact+table4", "default method is given twice")):
        with pytest.raises(ArchError) as e:
            parse_arch_spec(f"default,fn_exp={bad}")
        assert "'fn_exp'" in str(e.value) and why in str(e.value)


def test_chip_file_value_errors(tmp_path: Path) -> None:
    chip = tmp_path / "c.toml"
    chip.write_text('fn_erf = 5\n')
    with pytest.raises(ArchError, match=r"c\.toml: arch parameter 'fn_erf': expected exact, tableN or polyD"):
        parse_arch_spec(str(chip))
    chip.write_text('fn_erf = "table8+bf16:poly3"\n')
    assert parse_arch_spec(str(chip)).fn_erf == "table8+bf16:poly3"


@pytest.mark.parametrize("fn, ref, lo, hi", [
    ("exp", np.exp, -60.0, 60.0), ("tanh", np.tanh, -12.0, 12.0), ("erf", ERF, -6.0, 6.0),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), -30.0, 30.0),
    ("reciprocal", lambda x: 1 / x, 1e-3, 1e3), ("rsqrt", lambda x: 1 / np.sqrt(x), 1e-3, 1e3)])
def test_tables_meet_the_interpolation_bound(fn: str, ref, lo: float, hi: float) -> None:
    """A table of N entries with linear interpolation errs by at most h^2/8 max|f''| on its
    reduced interval (h its spacing), plus f32 rounding (and exp's range reduction,
    x log2 e in f32); 4x the entries, ~16x less error."""
    x = np.linspace(lo, hi, 200_001).astype(np.float32)
    want = ref(x.astype(np.float64)).astype(np.float64)
    errs = []
    for n in (64, 256):
        got = getattr(special.Evaluator({fn: special.Method("table", n)}), fn)(x)
        assert got.dtype == np.float32
        rel = fn in ("exp", "reciprocal", "rsqrt")  # (range-reduced: relative error)
        err = np.abs(got - want) / (np.abs(want) if rel else 1)
        _, a, b = special._REDUCED[fn]
        t = np.linspace(a, b, 100_001)
        f2 = np.abs(np.gradient(np.gradient(special._REDUCED[fn][0](t), t), t)).max()
        scale = 2.0 if fn == "exp" else 1.0  # (2^f up to 2: the relative bound halves it)
        h = (b - a) / (n - 1)
        reduce = np.abs(x) * 2.0 ** -23 if fn == "exp" else 0  # (x log2 e rounded to f32)
        assert (err <= h * h / 8 * f2 * scale + 4e-7 + reduce).all(), (fn, n, err.max())
        errs.append(err.max())
    assert errs[1] < errs[0] / (4 if fn == "exp" else 8)  # (exp's reduction error does not shrink)


def test_polynomials_converge_and_specials_hold() -> None:
    x = np.linspace(-8, 8, 20_001).astype(np.float32)
    e5, e9 = (np.abs(special.Evaluator({"erf": special.Method("poly", d)}).erf(x) - ERF(x.astype(np.float64)))
              .max() for d in (5, 9))
    assert e9 < e5 / 10 and e9 < 1e-3
    ev = special.Evaluator({f: special.Method("table", 32) for f in special.FUNCTIONS})
    with np.errstate(all="ignore"):
        assert np.array_equal(ev.exp(np.array([np.inf, -np.inf, 0], np.float32)), [np.inf, 0, 1])
        assert np.isnan(ev.exp(np.array([np.nan], np.float32))).all()
        r = ev.reciprocal(np.array([0.0, -0.0, np.inf, -2.0], np.float32))
        assert r[0] == np.inf and r[1] == -np.inf and r[2] == 0 and r[3] == pytest.approx(-0.5, rel=1e-3)
        s = ev.rsqrt(np.array([0.0, -1.0, np.inf, 4.0], np.float32))
        assert s[0] == np.inf and np.isnan(s[1]) and s[2] == 0 and s[3] == pytest.approx(0.5, rel=1e-3)
    assert np.array_equal(ev.tanh(np.array([-50, 50], np.float32)), [-1, 1])
    assert np.array_equal(ev.sigmoid(np.array([-50, 50], np.float32)), [0, 1])


def test_exact_is_numpy_bit_for_bit() -> None:
    """Outside `evaluating` (constant folding, the float64 reference) and with an exact
    arch, the references are numpy's functions as before."""
    x = np.random.default_rng(0).standard_normal((7, 33)).astype(np.float32)
    assert np.array_equal(ELEMENTWISE["exp"][1](x), np.exp(x))
    assert np.array_equal(ELEMENTWISE["sigmoid"][1](x), (1 / (1 + np.exp(-x))).astype(np.float32))
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    assert np.array_equal(SoftmaxOp.compute({}, x), e / e.sum(axis=-1, keepdims=True))
    assert PRESETS["default"].special_evaluator("f32") is None
    assert PRESETS["default"].special_passes(("exp", "erf")) == 0
    lut = PRESETS["lut"]
    assert lut.special_passes(("exp", "erf")) == 4  # (3 passes a table, 1 counted already)
    with special.evaluating(lut.special_evaluator("f32")):
        y = SoftmaxOp.compute({}, x)
    assert not np.array_equal(y, SoftmaxOp.compute({}, x)) and np.abs(y - SoftmaxOp.compute({}, x)).max() < 1e-5


def _act_model(path: Path) -> Path:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((32, 32)).astype(np.float32) * 0.3, "W"),
             numpy_helper.from_array(np.ones(32, np.float32), "sc"),
             numpy_helper.from_array(np.zeros(32, np.float32), "b")]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"),
             helper.make_node("LayerNormalization", ["m", "sc", "b"], ["ln"], axis=-1, name="ln"),
             helper.make_node("Erf", ["ln"], ["e"], name="erf"),
             helper.make_node("Sigmoid", ["e"], ["s"], name="sig"),
             helper.make_node("Softmax", ["s"], ["y"], axis=-1, name="softmax")]
    graph = helper.make_graph(nodes, "act", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 32])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_simulator_emulates_charges_and_compare_all_names(tmp_path: Path) -> None:
    model = _act_model(tmp_path / "act.onnx")

    def run(arch: str, *extra: str) -> tuple[dict, str]:
        p = subprocess.run(["npu-run", str(model), "--arch", arch, "--report", str(tmp_path / "r.json"),
                            "--no-cache", *extra], capture_output=True, text=True, cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        return json.loads((tmp_path / "r.json").read_text()), p.stdout

    exact, _ = run("default", "--check")
    lut, out = run("lut", "--compare-all")
    assert lut["cycles"] > exact["cycles"]  # (erf, sigmoid and the softmax's exp: 2 more passes each)
    rows = {r["node"]: r for r in lut["compare_all"]["approximations"]}
    assert set(rows) == {"ln", "erf", "sig", "softmax"}
    assert rows["softmax"]["functions"] == {"exp": "table256", "reciprocal": "table256"}
    assert rows["ln"]["functions"] == {"rsqrt": "table256"}
    assert all(0 < r["max_abs_err"] < 1e-3 for r in rows.values())
    assert "special functions as the arch evaluates them: 4 ops" in out and "erf (erf: erf table256)" in out
    poly, out = run("default,fn_erf=poly3", "--compare-all")
    (row,) = poly["compare_all"]["approximations"]
    assert row["node"] == "erf" and row["max_abs_err"] > 1e-2  # (a cubic over [0, 4]: coarse)
    assert "first node over tolerance: output 'y'" in out or poly["compare_all"]["first_over_tolerance"]

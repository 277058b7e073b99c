"""The chip computes in the types (issue 44): the arch's precision parameters (names,
overrides, chip files, errors), cycles by element type (cube: int8 widens K `cube_i8`
times, f32 takes `cube_f32_passes` passes; vector: `vector_f16`/`vector_i8` times the
f32 lanes, priced by the widest type), the roofline by each op's input type, and f32
figures unchanged on the default arch."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from lowering.tile.roofline import MACS_BY_TYPE_ATTR, annotate, macs_by_type, recorded_macs_by_type
from npu_dialects import dtypes
from npu_dialects.arch import (
    PRESETS,
    Arch,
    ArchAttr,
    ArchError,
    arch_params,
    chip_toml,
    load_chip,
    parse_arch_params,
    parse_arch_spec,
    type_bits,
    widest_type,
)
from npu_dialects.compute import EltwiseFn
from npu_dialects.compute import EltwiseOp as VectorEltwise
from npu_dialects.compute import MatmulOp as CubeMatmul
from npu_dialects.graph import AddOp, Conv2dOp, MatMulOp, SoftmaxOp

DEFAULT = PRESETS["default"]


def test_default_precision_parameters() -> None:
    a = DEFAULT
    assert (a.cube_i8, a.cube_f32_passes, a.vector_f16, a.vector_i8, a.requant) == (2, 1, 2, 4, "float")
    assert a.spec() == "default"  # (the canonical spec of the default names no new parameter)
    assert a.to_dict()["requant"] == "float" and a.to_dict()["cube_i8"] == 2
    assert PRESETS["realistic"] == Arch(cube_f32_passes=4, requant="fixed", bias_unit="cube")


def test_overrides_spec_and_round_trips() -> None:
    a = parse_arch_spec("default,cube_i8=4,cube_f32_passes=4,vector_f16=3,vector_i8=8,requant=fixed")
    assert (a.cube_i8, a.cube_f32_passes, a.vector_f16, a.vector_i8, a.requant) == (4, 4, 3, 8, "fixed")
    assert a.spec() == "default,cube_i8=4,cube_f32_passes=4,vector_f16=3,vector_i8=8,requant=fixed"
    assert parse_arch_spec(a.spec()) == a
    assert parse_arch_params(arch_params(a)) == a  # (an executable's header)
    assert ArchAttr.from_arch(a).arch == a
    assert parse_arch_spec("realistic,requant=float").cube_f32_passes == 4


def test_chip_file(tmp_path: Path) -> None:
    chip = tmp_path / "int8.toml"
    chip.write_text('base = "edge-small"\ncube_i8 = 4\nrequant = "fixed"\n')
    a = load_chip(chip)
    assert (a.cores, a.cube_i8, a.requant) == (1, 4, "fixed")
    out = tmp_path / "again.toml"
    out.write_text(chip_toml(a))  # (chip_toml writes the name quoted)
    assert 'requant = "fixed"' in out.read_text() and load_chip(out) == a


@pytest.mark.parametrize(("spec", "message"), [
    ("default,requant=int", "arch parameter 'requant': expected one of float, fixed, got 'int'"),
    ("default,requant=", "arch parameter 'requant': expected one of float, fixed, got ''"),
    ("default,requant_unit=dsp", "arch parameter 'requant_unit': expected one of cube, vector, got 'dsp'"),
    ("default,cube_i8=0", "arch parameter 'cube_i8' must be a positive integer, got 0"),
    ("default,vector_i8=two", "arch parameter 'vector_i8': expected an integer, got 'two'"),
    ("default,cube_f32_passes=-1", "arch parameter 'cube_f32_passes' must be a positive integer, got -1"),
])
def test_bad_values(spec: str, message: str) -> None:
    with pytest.raises(ArchError) as e:
        parse_arch_spec(spec)
    assert str(e.value) == message


@pytest.mark.parametrize(("text", "message"), [
    ('requant = "round"', "'requant': expected one of \"float\", \"fixed\", got the string \"round\""),
    ("requant = 1", "'requant': expected one of \"float\", \"fixed\", got the integer 1"),
    ('cube_i8 = "2"', "'cube_i8': expected an integer, got the string \"2\""),
    ("vector_f16 = 0", "'vector_f16': must be between 1 and"),
])
def test_bad_chip_values(tmp_path: Path, text: str, message: str) -> None:
    chip = tmp_path / "bad.toml"
    chip.write_text(text + "\n")
    with pytest.raises(ArchError) as e:
        load_chip(chip)
    assert message in str(e.value) and str(chip) in str(e.value)


def test_bad_attribute_value() -> None:
    with pytest.raises(ArchError, match="must be one of float, fixed, got 'x'"):
        Arch(requant="x")


def test_type_widths() -> None:
    assert [type_bits(t) for t in ("f32", "i32", "f16", "bf16", "i8", "ui8")] == [32, 32, 16, 16, 8, 8]
    assert type_bits(dtypes.f16) == 16 and type_bits(None) == 32
    with pytest.raises(ArchError, match="no cube or vector rate for element type i4"):
        type_bits("i4")


def test_cube_cycles_by_type() -> None:
    """int8 takes half the cube cycles of f16 (K in 32-wide blocks), f32 those of f16
    by default and cube_f32_passes times them on `realistic`."""
    a = DEFAULT
    f16 = a.cube_cycles(64, 256, 64, dtype="f16")
    assert f16 == 4 * 16 * 4
    assert a.cube_cycles(64, 256, 64, dtype="i8") == f16 // 2
    assert a.cube_cycles(64, 256, 64, dtype=dtypes.ui8) == f16 // 2
    assert a.cube_cycles(64, 256, 64) == a.cube_cycles(64, 256, 64, dtype="f32") == f16
    assert PRESETS["realistic"].cube_cycles(64, 256, 64, dtype="f32") == 4 * f16
    assert a.cube_cycles(16, 16, 16, dtype="i8") == 1  # (a K of 16 pads to one int8 block)


def test_vector_cycles_by_type() -> None:
    a = DEFAULT
    assert a.vector_cycles(4096) == 64
    assert a.vector_cycles(4096, dtype="f16") == 32 and a.vector_cycles(4096, dtype="bf16") == 32
    assert a.vector_cycles(4096, dtype="i8") == 16  # a quarter of f32's
    assert a.vector_cycles(4096, dtype="i32") == 64
    assert a.vector_cycles(4096, 3, "i8") == 48


def _func(*types: TensorType) -> tuple[ModuleOp, Block]:
    block = Block(arg_types=list(types))
    module = ModuleOp([FuncOp("main", (list(types), []), Region(block))])
    return module, block


def test_graph_op_cycles_by_type() -> None:
    """A graph op's cycles: the cube by its input type, vector work by the widest type."""
    t8, t16 = TensorType(dtypes.i8, [64, 256]), TensorType(dtypes.f16, [64, 256])
    w8, w16 = TensorType(dtypes.i8, [256, 64]), TensorType(dtypes.f16, [256, 64])
    _, block = _func(t8, w8, t16, w16)
    mm8 = MatMulOp(block.args[0], block.args[1], TensorType(dtypes.i32, [64, 64]))
    mm16 = MatMulOp(block.args[2], block.args[3], TensorType(dtypes.f16, [64, 64]))
    assert 2 * (mm8.cycles(DEFAULT) or 0) == mm16.cycles(DEFAULT) == 256
    add8 = AddOp(block.args[0], block.args[0], t8)
    add16 = AddOp(block.args[2], block.args[2], t16)
    assert 4 * (add8.cycles(DEFAULT) or 0) == 2 * (add16.cycles(DEFAULT) or 0) == 64 * 256 // 64
    sm = SoftmaxOp(block.args[2], 1, t16)
    assert sm.cycles(DEFAULT) == DEFAULT.vector_cycles(64 * 256, SoftmaxOp.VECTOR_COST, "f16")
    x = TensorType(dtypes.f16, [1, 32, 8, 8])
    _, b2 = _func(x, TensorType(dtypes.f16, [64, 32, 3, 3]))
    conv = Conv2dOp(b2.args[0], b2.args[1], None, TensorType(dtypes.f16, [1, 64, 8, 8]), strides=(1, 1),
                    pads=(1, 1, 1, 1))
    assert conv.cycles(DEFAULT) == DEFAULT.cube_cycles(64, 32 * 9, 64, dtype="f16")
    assert widest_type((block.args[0], block.args[2], mm8.result)) == "i32"


def test_compute_op_cycles_by_type() -> None:
    """The compute ops the simulator charges price by their buffers' types."""
    shapes = [(dtypes.i8, [32, 64]), (dtypes.i8, [64, 32]), (dtypes.i32, [32, 32]), (dtypes.f16, [32, 64]),
              (dtypes.f16, [64, 32]), (dtypes.f16, [32, 32]), (dtypes.i8, [32, 64]), (dtypes.f16, [32, 64])]
    block = Block(arg_types=[MemRefType(t, s, memory_space=StringAttr("sram")) for t, s in shapes])
    a8, b8, o32, a16, b16, o16, e8, e16 = block.args
    assert CubeMatmul(a8, b8, o32).cycles(DEFAULT) * 2 == CubeMatmul(a16, b16, o16).cycles(DEFAULT) == 16
    assert VectorEltwise(EltwiseFn("relu"), [a8], e8).cycles(DEFAULT) == 8  # 2048 / (64 * 4)
    assert VectorEltwise(EltwiseFn("relu"), [a16], e16).cycles(DEFAULT) == 16
    assert VectorEltwise(EltwiseFn("relu"), [a8], e16).cycles(DEFAULT) == 16  # (the widest type it touches)


def test_roofline_by_type() -> None:
    """The roofline bounds each op's MACs at its input type's rate: an int8 model against
    the int8 cube; an f32 module records nothing new and gets the bound it always had."""
    a = DEFAULT
    macs = 10 * a.cores * a.cube_macs
    assert a.roofline_cycles(macs, 0) == a.roofline_cycles({"f32": macs}, 0) == 10
    assert a.roofline_cycles({"i8": macs}, 0) == 5
    assert a.roofline_cycles({"f16": macs, "i8": macs}, 0) == 15
    assert PRESETS["realistic"].roofline_cycles(macs, 0) == 40
    assert a.roofline_cycles({"i8": macs}, 128 * 100) == 100  # (DRAM-bound)

    t8, w8 = TensorType(dtypes.i8, [64, 256]), TensorType(dtypes.i8, [256, 64])
    module, block = _func(t8, w8)
    mm = MatMulOp(block.args[0], block.args[1], TensorType(dtypes.i32, [64, 64]))
    block.add_ops([mm, ReturnOp()])
    assert macs_by_type(module) == {"i8": 64 * 256 * 64}
    annotate(module, a)
    assert recorded_macs_by_type(module) == {"i8": 64 * 256 * 64}
    f32 = TensorType(dtypes.f32, [8, 8])
    module32, b32 = _func(f32, f32)
    b32.add_ops([MatMulOp(b32.args[0], b32.args[1], f32), ReturnOp()])
    annotate(module32, a)
    assert MACS_BY_TYPE_ATTR not in module32.attributes and recorded_macs_by_type(module32) is None


def test_requant_unit_moves_the_requantize_onto_the_cube() -> None:
    """A QDQ conv's requantize runs in the cube's output stage by default: the same
    outputs as on the vector unit (`requant_unit=vector`), fewer vector-busy cycles
    (lit: `npu-bufferize/strips_quantized.mlir` pins the lowered `cube_output`)."""
    import numpy as np

    from bench.qdq import int8_model
    from tests.test_qdq_tables import conv_scale
    from tools.testkit.e2e import compile_and_run
    from tools.testkit.zoo import random_inputs

    qmodel = int8_model(conv_scale())
    inputs = random_inputs(qmodel, seed=1)
    runs = {unit: compile_and_run(qmodel, f"default,requant_unit={unit}", inputs=dict(inputs))[0]
            for unit in ("cube", "vector")}
    for name, value in runs["vector"].outputs.items():
        np.testing.assert_array_equal(runs["cube"].outputs[name], value)
    busy = {u: r.report["utilization"]["vector"] * r.report["cycles"] for u, r in runs.items()}
    assert busy["cube"] < busy["vector"]


def conv_bias_relu():
    """A conv with a bias, then a ReLU."""
    import numpy as np

    from tools.testkit.models import Graph
    g = Graph(seed=7)
    rng = np.random.default_rng(7)
    g.const("w", rng.normal(0, 0.3, (32, 8, 3, 3)).astype(np.float32))
    g.const("b", rng.normal(0, 0.5, (32,)).astype(np.float32))
    g.node("Conv", ["x", "w", "b"], "c", name="conv", pads=[1, 1, 1, 1])
    g.node("Relu", ["c"], "y", name="relu")
    return g.model("conv_bias_relu", {"x": [1, 8, 24, 24]}, {"y": [1, 32, 24, 24]}, 13)


@pytest.mark.parametrize("quantized", [False, True], ids=["f32", "int8"])
def test_bias_unit_moves_the_bias_add_onto_the_cube(quantized: bool) -> None:
    """A conv's per-channel bias add (a float conv's, a QDQ conv's int32 one) runs in
    the cube's output stage with `bias_unit = cube`: the same outputs as on the vector
    unit (the default), no fence between the conv and its bias (both on the cube),
    fewer vector-busy and total cycles (lit: `npu-bufferize/bias_add.mlir` pins the
    lowered `cube_output`, `npu-unit-sync/sync.mlir` the fences)."""
    import numpy as np

    from bench.qdq import int8_model
    from lowering.importer.onnx_import import import_model
    from lowering.pipeline import compile_module
    from npu_dialects.weights import weights_of
    from runtime.run import run
    from tools.testkit.zoo import random_inputs

    model = int8_model(conv_bias_relu()) if quantized else conv_bias_relu()
    inputs = random_inputs(model, seed=1)
    runs, texts = {}, {}
    for unit in ("cube", "vector"):
        arch = parse_arch_spec(f"default,bias_unit={unit}")
        module, weights = import_model(model, arch)
        compile_module(module, arch, weights)
        texts[unit] = str(module)
        runs[unit] = run(module, weights_of(module), dict(inputs), arch)
    for name, value in runs["vector"].outputs.items():
        np.testing.assert_array_equal(runs["cube"].outputs[name], value)
    for unit, text in texts.items():
        lines = text.splitlines()
        bias = [i for i, ln in enumerate(lines) if "npu_compute.eltwise add" in ln]
        assert bias and all("{cube_output}" in lines[i] for i in bias)
        fenced = ["npu_compute.fence cube -> vector" in lines[i - 1] for i in bias]  # (after the conv)
        assert fenced == [unit == "vector"] * len(bias), [lines[i - 1] for i in bias]
    busy = {u: r.report["utilization"]["vector"] * r.report["cycles"] for u, r in runs.items()}
    assert busy["cube"] < busy["vector"]
    assert runs["cube"].report["cycles"] < runs["vector"].report["cycles"]

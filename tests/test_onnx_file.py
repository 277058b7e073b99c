"""`lowering/importer/onnx_file.py`: an ONNX file's large initializers stay in the file
at load and are read once into their arrays, equal to what onnx.load + numpy_helper
give, for every element type, for embedded and for external data; the compile cache's
digests do not change with it."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from lowering.importer.base import load_model
from lowering.importer.onnx_file import EXTERNAL_MIN_BYTES, initializer_array, read_model
from lowering.importer.symbolic import OnnxImportError
from npu_dialects.files import release_pages
from tools.compile_cache import model_digests

DTYPES = [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64,
          np.uint32, np.uint64, np.bool_, ml_dtypes.bfloat16]


def _model(inits: list[TensorProto]) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"], name="id")], "g", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _tensors(rng: np.random.Generator) -> list[TensorProto]:
    out = []
    for i, dt in enumerate(DTYPES):
        big = rng.normal(size=(64, 128)) * 50 if dt is not np.bool_ else rng.normal(size=(64, 128)) > 0
        out.append(numpy_helper.from_array(np.asarray(big).astype(dt), f"big{i}"))
        out.append(numpy_helper.from_array(np.arange(3).astype(dt), f"small{i}"))
    return out


def test_initializers_read_from_the_file_equal_onnx_load(tmp_path):
    path = str(tmp_path / "m.onnx")
    onnx.save(_model(_tensors(np.random.default_rng(0))), path)
    ref = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    model = read_model(path)
    external = {i.name for i in model.graph.initializer if i.data_location == TensorProto.EXTERNAL}
    # every large fixed-size tensor left in the file, the small ones in the proto
    assert external == {f"big{i}" for i in range(len(DTYPES))}
    assert model.ByteSize() < EXTERNAL_MIN_BYTES
    for init in model.graph.initializer:
        got, want = initializer_array(init), ref[init.name]
        assert got.dtype == want.dtype and got.shape == want.shape, init.name
        assert got.flags.writeable or init.name not in external, init.name  # (its own array, not the file's)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), init.name


def test_external_data_files_are_read_in_place(tmp_path):
    model = _model(_tensors(np.random.default_rng(1)))
    ref = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    onnx.save(model, str(tmp_path / "ext.onnx"), save_as_external_data=True, location="ext.bin",
              size_threshold=1024)
    loaded = load_model(str(tmp_path / "ext.onnx"))  # (checked: the checker sees relative locations)
    for init in loaded.graph.initializer:
        assert np.array_equal(initializer_array(init).view(np.uint8), ref[init.name].view(np.uint8))
    # a truncated data file is the model's error at load, naming the initializer
    data = (tmp_path / "ext.bin").read_bytes()
    (tmp_path / "ext.bin").write_bytes(data[:len(data) // 2])
    with pytest.raises(OnnxImportError, match=r"cannot read the ONNX model: external data of initializer "
                                              r"'big\d+': .*ext\.bin' ends at byte"):
        load_model(str(tmp_path / "ext.onnx"))


def test_the_cache_digests_do_not_depend_on_how_the_model_was_read(tmp_path):
    path = str(tmp_path / "m.onnx")
    onnx.save(_model(_tensors(np.random.default_rng(2))), path)
    a, b = model_digests(onnx.load(path)), model_digests(read_model(path))
    assert (a.structure, a.weights, a.tensors) == (b.structure, b.weights, b.tensors)
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "m.onnx").write_bytes((tmp_path / "m.onnx").read_bytes())
    assert model_digests(read_model(str(moved / "m.onnx"))).structure == a.structure  # (not the path)


@pytest.mark.parametrize("data", [b"", b"\x08", b"garbage that is not protobuf \xff\xff\xff"])
def test_files_the_scan_cannot_read_fall_back_to_onnx(tmp_path, data):
    path = tmp_path / "bad.onnx"
    path.write_bytes(data)
    with pytest.raises(OnnxImportError, match="cannot read the ONNX model"):
        load_model(str(path))


def _resident_kb() -> int:
    """This process's resident memory (VmRSS), in KiB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def test_mapped_initializers_are_the_files_bytes_read_only_and_give_pages_back(tmp_path):
    path = str(tmp_path / "m.onnx")
    onnx.save(_model(_tensors(np.random.default_rng(2))), path)
    ref = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    for init in read_model(path).graph.initializer:
        got = initializer_array(init, mapped=True)
        assert got.dtype == ref[init.name].dtype and np.array_equal(got.view(np.uint8), ref[init.name].view(np.uint8))
        if init.data_location == TensorProto.EXTERNAL:
            assert isinstance(got, np.memmap) and not got.flags.writeable, init.name  # (no copy; never written)
            release_pages(got[1:])  # (through a view: the values stay, read again from the file)
            assert np.array_equal(got.view(np.uint8), ref[init.name].view(np.uint8))
    own = np.arange(4.0)
    release_pages(own)  # (an array of its own: left alone)
    release_pages(b"bytes")
    assert own.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_mapped_weight_read_whole_stays_resident_until_released(tmp_path):
    """What keeps a compile's memory at the weights it made: a 64 MB initializer costs
    no memory until read, about its size once read, and nothing once released."""
    path = str(tmp_path / "big.onnx")
    big = np.random.default_rng(3).random(1 << 24, dtype=np.float32)
    onnx.save(_model([numpy_helper.from_array(big, "w")]), path)
    init = read_model(path).graph.initializer[0]
    before = _resident_kb()
    w = initializer_array(init, mapped=True)
    assert _resident_kb() - before < 8 << 10
    assert float(w.sum(dtype=np.float64)) == pytest.approx(float(big.sum(dtype=np.float64)))
    assert _resident_kb() - before > 48 << 10
    release_pages(w)
    assert _resident_kb() - before < 8 << 10
    assert np.array_equal(w[-5:], big[-5:])


def test_the_importer_keeps_large_initializers_in_the_file(tmp_path):
    from lowering.importer.onnx_import import import_model
    path = str(tmp_path / "mm.onnx")
    w = np.random.default_rng(4).random((64, 128), dtype=np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 128])
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g", [x], [y],
                          [numpy_helper.from_array(w, "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    _, weights = import_model(read_model(path))
    (got,) = weights.values()
    base = got
    while isinstance(base, np.ndarray) and not isinstance(base, np.memmap):
        base = base.base
    assert isinstance(base, np.memmap)  # (the file's pages, not a copy)
    assert np.array_equal(got, w)

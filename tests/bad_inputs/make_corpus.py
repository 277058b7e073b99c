"""Build the binary files of the bad-input corpus (`cases.toml`, `tests/test_bad_inputs.py`):

    python tests/bad_inputs/make_corpus.py [OUT_DIR]   # default: tests/bad_inputs/generated/

- ONNX models (`*.onnx`): `good.onnx` (x[2, 8] -> MatMul 'fc' (w[8, 8]) -> Relu 'act' -> y), then one broken
  model per case, each a small edit of a one- or two-node graph (bytes cut or garbage,
  opsets, domains, names, shapes, dtypes, sizes), written without `onnx.checker`;
- inputs (`*.npz`) for `npu-run good.onnx --inputs`: one missing, misshapen, of a bad
  dtype, or not an npz at all; a header declaring 3 PiB in a few bytes, and a deflate
  bomb (256 KB holding 256 MiB of zeros, `deflate_bomb`);
- executables (`*.npuexe`): `good.npuexe` compiled from `good.onnx`, then copies cut,
  with a bad magic, flipped bytes, or sections replaced with their checksums recomputed
  (`runtime.executable.seal`), so the decoder behind the checksums is reached;
- `bad_utf8.mlir`: a module with bytes that are not UTF-8; `nested_brackets.mlir` (5,000
  nested `[`), `nested_regions.mlir` (3,000 nested modules), `chip_nested.toml` (3,000
  nested arrays).

Everything is seeded and small (the whole corpus is about 100 KB); the `.mlir` cases are
text files committed beside this script. The test builds the corpus once per worker in
a temporary directory (`build`).
"""

from __future__ import annotations

import struct
import sys
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
OPSET = 17


def _model(nodes: Sequence[onnx.NodeProto], inputs: Sequence[onnx.ValueInfoProto],
           outputs: Sequence[onnx.ValueInfoProto], inits: Sequence[onnx.TensorProto] = (),
           opsets: Sequence[tuple[str, int]] = (("", OPSET),)) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), "bad", list(inputs), list(outputs), list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                          producer_name="npu-compiler-tests")
    m.ir_version = 8
    return m


def _t(name: str, shape: Sequence[int | str] | None, dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, None if shape is None else list(shape))


X, Y = _t("x", [2, 8]), _t("y", [2, 8])


def good() -> onnx.ModelProto:
    w = np.random.default_rng(0).uniform(-0.5, 0.5, (8, 8)).astype(np.float32)
    return _model([helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
                   helper.make_node("Relu", ["h"], ["y"], name="act")], [X], [Y], [_init("w", w)])


def _relu(*, opsets: Sequence[tuple[str, int]] = (("", OPSET),)) -> onnx.ModelProto:
    return _model([helper.make_node("Relu", ["x"], ["y"], name="act")], [X], [Y], opsets=opsets)


def _init(name: str, data: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(data), name)


def onnx_models() -> dict[str, onnx.ModelProto]:
    """name -> the broken model (each a one-line story in its case id of cases.toml)."""
    node = helper.make_node
    ms: dict[str, onnx.ModelProto] = {"good": good()}
    ms["no_opset"] = _relu(opsets=())
    ms["opset_old"] = _relu(opsets=(("", 5),))
    ms["opset_future"] = _relu(opsets=(("", 99),))
    ms["only_custom_domain"] = _model([node("MyOp", ["x"], ["y"], name="mine", domain="com.example")], [X], [Y],
                                      opsets=(("com.example", 1),))
    ms["unknown_domain"] = _model([node("MyOp", ["x"], ["y"], name="mine", domain="com.example")], [X], [Y],
                                  opsets=(("", OPSET), ("com.example", 1)))
    ms["dangling_input"] = _model([node("Add", ["x", "ghost"], ["y"], name="add")], [X], [Y])
    ms["no_outputs"] = _model([node("Relu", ["x"], ["y"], name="act")], [X], [])
    ms["unproduced_output"] = _model([node("Relu", ["x"], ["y"], name="act")], [X], [Y, _t("z", [2, 8])])
    ms["cycle"] = _model([node("Add", ["x", "b"], ["a"], name="first"), node("Relu", ["a"], ["b"], name="second"),
                          node("Identity", ["a"], ["y"], name="out")], [X], [Y])
    ms["duplicate_output"] = _model([node("Relu", ["x"], ["y"], name="one"), node("Neg", ["x"], ["y"], name="two")],
                                    [X], [Y])
    ms["empty_op_type"] = _model([node("", ["x"], ["y"], name="blank")], [X], [Y])
    ms["add_broadcast"] = _model([node("Add", ["x", "w"], ["y"], name="add")], [X], [Y],
                                 [_init("w", np.ones(3, np.float32))])
    ms["matmul_inner"] = _model([node("MatMul", ["x", "w"], ["y"], name="mm")], [X], [_t("y", [2, 4])],
                                [_init("w", np.ones((5, 4), np.float32))])
    ms["declared_shape"] = _model([node("Relu", ["x"], ["y"], name="act")], [X], [_t("y", [3, 3])])
    ms["reshape_bad"] = _model([node("Reshape", ["x", "s"], ["y"], name="rs")], [X], [_t("y", [5, 3])],
                               [_init("s", np.array([5, -1], np.int64))])
    ms["conv_channels"] = _model([node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3])],
                                 [_t("x", [1, 3, 8, 8])], [_t("y", [1, 2, 6, 6])],
                                 [_init("w", np.ones((2, 4, 3, 3), np.float32))])
    ms["zero_dim"] = _model([node("Relu", ["x"], ["y"], name="act")], [_t("x", [0, 8])], [_t("y", [0, 8])])
    ms["negative_dim"] = _model([node("Relu", ["x"], ["y"], name="act")], [_t("x", [-3, 8])], [_t("y", [-3, 8])])
    big = [1 << 17, 1 << 17]  # 64 GiB of float32: more than any arch's DRAM
    ms["huge_input"] = _model([node("Relu", ["x"], ["y"], name="act")], [_t("x", big)], [_t("y", big)])
    ms["huge_constant"] = _model([node("ConstantOfShape", ["s"], ["c"], name="fill",
                                       value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
                                  node("Add", ["x", "c"], ["y"], name="add")],
                                 [_t("x", [1, 1])], [_t("y", big)], [_init("s", np.array(big, np.int64))])
    ms["huge_expand"] = _model([node("Expand", ["x", "s"], ["y"], name="grow")], [_t("x", [1, 1])], [_t("y", big)],
                               [_init("s", np.array(big, np.int64))])
    ms["float64_input"] = _model([node("Cast", ["x"], ["y"], name="cast", to=TensorProto.FLOAT)],
                                 [_t("x", [2, 8], TensorProto.DOUBLE)], [Y])
    ms["string_input"] = _model([node("Identity", ["x"], ["y"], name="id")], [_t("x", [2], TensorProto.STRING)],
                                [_t("y", [2], TensorProto.STRING)])
    ms["double_initializer"] = _model([node("Add", ["x", "w"], ["y"], name="add")], [X], [Y],
                                      [_init("w", np.ones(8, np.complex64))])
    seq = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, [2, 8])
    ms["sequence_input"] = _model([node("SequenceAt", ["x", "i"], ["y"], name="at")], [seq], [Y],
                                  [_init("i", np.array(0, np.int64))])
    w = _init("w", np.ones(8, np.float32))
    w.raw_data = w.raw_data[:5]  # 5 bytes for 8 floats
    ms["bad_raw_data"] = _model([node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], [w])
    ext = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[8],
                           data_location=onnx.TensorProto.EXTERNAL)
    ext.external_data.add(key="location", value="no_such_weights.bin")
    ms["external_missing"] = _model([node("Add", ["x", "w"], ["y"], name="add")], [X], [Y], [ext])
    ms["ir_future"] = _relu()
    ms["ir_future"].ir_version = 99
    ms["unsupported_op"] = _model([node("RandomNormalLike", ["x"], ["y"], name="odd_node")], [X], [Y])
    ms["unsupported_attr"] = _model([node("Dropout", ["x", "r", "t"], ["y"], name="drop")], [X], [Y],
                                    [_init("r", np.array(0.5, np.float32)), _init("t", np.array(True))])
    ms["unknown_attr"] = _model([node("Relu", ["x"], ["y"], name="act", foo=1)], [X], [Y])
    ms["symbolic"] = _model([node("Relu", ["x"], ["y"], name="act")], [_t("x", ["batch", 8])], [_t("y", ["batch", 8])])
    return ms


def npz_inputs() -> dict[str, dict[str, np.ndarray]]:
    """name -> the arrays of an --inputs file for good.onnx (x: float32 [2, 8])."""
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    return {"in_good": {"x": x}, "in_missing": {}, "in_other": {"z": x}, "in_shape": {"x": x.reshape(4, 4)},
            "in_rank": {"x": x.reshape(16)}, "in_complex": {"x": x.astype(np.complex64)},
            "in_string": {"x": np.array([["a"] * 8] * 2)}, "in_extra": {"x": x, "w": x}}


def npy_header(shape: Sequence[int], dtype: str = "<f4") -> bytes:
    """An `.npy` version 1.0 header declaring `shape` of `dtype` (numpy's own writer)."""
    import io
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(f, {"descr": dtype, "fortran_order": False, "shape": tuple(shape)})
    return f.getvalue()


def forged_header_npz(path: Path, shape: Sequence[int]) -> None:
    """An `.npz` whose member `x.npy` declares `shape` (float32) but holds 16 bytes."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x.npy", npy_header(shape) + bytes(16))


def deflate_bomb(path: Path, shape: Sequence[int]) -> None:
    """A valid `.npz` whose deflated member `x.npy` holds `shape` float32 zeros, written
    without building them: one deflated MiB of zeros, ended by a full flush (byte
    aligned, no history), repeated; about 1 KB per MiB it holds."""
    header = npy_header(shape)
    nbytes = int(np.prod(shape)) * 4
    mib = 1 << 20
    assert nbytes % mib == 0
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(header) + c.flush(zlib.Z_FULL_FLUSH)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(mib)) + c.flush(zlib.Z_FULL_FLUSH)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
    crc, zeros = zlib.crc32(header), bytes(mib)
    for _ in range(nbytes // mib):
        crc = zlib.crc32(zeros, crc)
    data = head + block * (nbytes // mib) + tail
    info = zipfile.ZipInfo("x.npy", date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    name = info.filename.encode()
    size = len(header) + nbytes
    assert size < 1 << 32 and len(data) < 1 << 32  # (no zip64 records needed)
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 8, 0, 0x21, crc, len(data), size, len(name), 0)
    central = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 8, 0, 0x21, crc, len(data), size,
                          len(name), 0, 0, 0, 0, 0, 0)
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, len(central) + len(name),
                      len(local) + len(name) + len(data), 0)
    path.write_bytes(local + name + data + central + name + end)


def executables(exe: bytes) -> dict[str, bytes]:
    """name -> a broken copy of the executable image `exe` (good.npuexe)."""
    from runtime.executable import seal, section_spans

    spans = section_spans(exe)
    out = {"good": exe, "truncated": exe[:len(exe) // 2], "empty": b"", "bad_magic": b"NOTANEXE" + exe[8:],
           "magic_only": exe[:5]}

    def flipped(at: int) -> bytes:
        b = bytearray(exe)
        b[at] ^= 0xFF
        return bytes(b)

    out["flipped_header"] = flipped(20)
    for name in ("meta", "program", "cmdbuf", "weights"):
        offset, size = spans[name]
        out[f"flipped_{name}"] = flipped(offset + size // 2)

    def forged(section: str, edit: Callable[[bytes], bytes]) -> bytes:
        """`section` replaced by `edit` of it (its size kept: space-padded), every checksum
        recomputed, so the decoder behind the checksums sees it."""
        b = bytearray(exe)
        offset, size = spans[section]
        new = edit(bytes(b[offset:offset + size]))
        assert len(new) <= size, section
        b[offset:offset + size] = new.ljust(size)
        seal(b)
        return bytes(b)

    def meta(old: str, new: str) -> Callable[[bytes], bytes]:
        def edit(text: bytes) -> bytes:
            assert old.encode() in text, f"the meta no longer holds {old}"
            return text.replace(old.encode(), new.encode(), 1)
        return edit

    version = bytearray(exe)
    struct.pack_into("<I", version, 8, 999)
    seal(version)
    out["future_version"] = bytes(version)
    out["forged_meta_json"] = forged("meta", lambda text: b"{")
    out["forged_meta_image"] = forged("meta", meta('"weights_image_bytes":256', '"weights_image_bytes":-1'))
    out["forged_meta_weight"] = forged("meta", meta('"shape":[8,8],"dtype":"f32"}}', '"shape":[9,9],"dtype":"f32"}}'))
    out["forged_meta_weight_type"] = forged("meta", meta('"shape":[8,8],"dtype":"f32"}}', '"shape":[8,8],"dtype":"f64"}}'))
    out["forged_meta_weight_f16"] = forged("meta", meta('"shape":[8,8],"dtype":"f32"}}', '"shape":[8,8],"dtype":"f16"}}'))
    out["forged_meta_kernels"] = forged("meta", meta('"kernels":["fc"]', '"kernels":[]'))
    out["forged_program"] = forged("program", lambda b: np.random.default_rng(3).integers(
        0, 256, len(b), dtype=np.uint8).tobytes())
    return out


def build(out: Path) -> Path:
    """Write the whole binary corpus under `out` (created); returns it."""
    from npu_dialects.weights import save_npz
    from tools.api import compile as compile_model

    out.mkdir(parents=True, exist_ok=True)
    models = onnx_models()
    for name, m in models.items():
        (out / f"{name}.onnx").write_bytes(m.SerializeToString())
    data = models["good"].SerializeToString()
    (out / "truncated.onnx").write_bytes(data[:len(data) // 2])
    (out / "garbage.onnx").write_bytes(np.random.default_rng(1).integers(0, 256, 300, dtype=np.uint8).tobytes())
    (out / "empty.onnx").write_bytes(b"")
    (out / "text.onnx").write_text("this is not an ONNX model\n")
    for name, arrays in npz_inputs().items():
        with open(out / f"{name}.npz", "wb") as f:
            save_npz(f, arrays)
    np.savez(out / "in_object.npz", x=np.array([{"a": 1}, None], dtype=object))
    (out / "in_not_npz.npz").write_text("x = [1, 2, 3]\n")
    whole = (out / "in_good.npz").read_bytes()
    (out / "in_truncated.npz").write_bytes(whole[:len(whole) // 2])
    np.save(out / "in_npy.npz", np.zeros((2, 8), np.float32))  # (np.save keeps a name ending in .npz)
    if (out / "in_npy.npz.npy").exists():
        (out / "in_npy.npz.npy").rename(out / "in_npy.npz")
    forged_header_npz(out / "in_huge_header.npz", [3 << 48])  # 3 PiB of float32
    deflate_bomb(out / "in_bomb.npz", [1 << 26])  # 256 MiB of float32 zeros in 256 KB
    (out / "nested_brackets.mlir").write_text("builtin.module attributes {a = " + "[" * 5000 + "]" * 5000 + "} {}\n")
    (out / "nested_regions.mlir").write_text("builtin.module {" * 3000 + "}" * 3000 + "\n")
    (out / "chip_nested.toml").write_text("cores = " + "[" * 3000 + "]" * 3000 + "\n")
    (out / "onnx_renamed.npuexe").write_bytes(data)
    (out / "bad_utf8.mlir").write_bytes(b"func.func @main(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {\n"
                                        b"  func.return %x : tensor<2x8xf32> loc(\"\xff\xfe\")\n}\n")
    exe = compile_model(str(out / "good.onnx")).to_bytes()
    for name, image in executables(exe).items():
        (out / f"{name}.npuexe").write_bytes(image)
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parents[1]))  # the repository root
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "generated"
    print(f"wrote the corpus to {build(target)}")

"""The executable file (`runtime/executable.py`), `tools.api.compile`, `npu-compile`
and `npu-run X.npuexe`: round trips give the outputs and cycles of a direct compile;
a file with a flipped byte in any region, truncated, of another format version or
another arch, or whose descriptors disagree with its program, is rejected with one
line naming the region (exit 1) and never run."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import StringAttr

from lowering.importer.onnx_import import import_model, load_model
from lowering.pipeline import compile_module
from npu_dialects import module_text
from npu_dialects.arch import PRESETS, parse_arch_spec
from npu_dialects.weights import WEIGHTS_ATTR, save_weights, weights_of
from runtime.executable import (
    ArchMismatchError,
    Executable,
    ExecutableError,
    from_bytes,
    read_executable,
    seal,
    section_spans,
)
from runtime.run import random_inputs, run
from sim import signature
from tools import npu_compile, npu_run
from tools.api import compile as compile_model
from tools.testkit import models

MODELS = Path(__file__).resolve().parent / "models"
LENET = str(MODELS / "lenet.onnx")
REGIONS = ("header", "section table", "meta", "program", "cmdbuf", "weights")


@pytest.fixture(scope="module")
def lenet_bytes() -> bytes:
    return compile_model(LENET).to_bytes()


@pytest.fixture(scope="module")
def mlp_exe() -> Executable:
    """Five tasks on two cores synchronised by events (a split gemm)."""
    return compile_model(models.mlp(batch=64, sizes=(512, 1024, 1024, 64)))


def _write(tmp_path: Path, data: bytes | bytearray, name: str = "x.npuexe") -> str:
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return str(path)


def _cli(capsys, main, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("name", ["lenet", "bert_encoder"])
def test_round_trip_matches_direct_compile(name, tmp_path):
    arch = PRESETS["default"]
    module, weights = import_model(load_model(str(MODELS / f"{name}.onnx")), arch)
    compile_module(module, arch, weights, verify_each=False)
    path = tmp_path / f"{name}.npuexe"
    compile_model(MODELS / f"{name}.onnx").save(path)
    back = read_executable(path, arch)
    inputs = random_inputs(signature(module), seed=3)
    direct, loaded = run(module, weights_of(module), inputs), run(back.module, back.weights, inputs, back.arch)
    assert loaded.report["cycles"] == direct.report["cycles"]
    assert {k: v.tobytes() for k, v in loaded.outputs.items()} == {k: v.tobytes() for k, v in direct.outputs.items()}
    assert back.to_bytes() == path.read_bytes()  # re-saving a loaded executable gives the same bytes


def test_metadata(lenet_bytes):
    exe = from_bytes(lenet_bytes)
    meta = exe.meta
    assert meta["inputs"] == [{"name": "x", "shape": [1, 1, 28, 28], "dtype": "float32"}]
    assert meta["outputs"] == [{"name": "y", "shape": [1, 10], "dtype": "float32"}]
    assert meta["source"]["path"] == LENET and len(meta["source"]["sha256"]) == 64
    assert meta["pipeline"] == "builtin.module(npu-default{verify-each=false})"
    task = meta["tasks"][0]
    assert task["kernel"] == meta["kernels"][exe.descriptors[0].kernel_id]
    assert "/conv1/Conv" in task["onnx_nodes"]
    assert exe.program.splitlines()[task["line"] - 1].lstrip().startswith("npu_task.task")
    assert ["npu_compute.conv2d", ["/conv1/Conv"]] in task["ops"]
    assert meta["memory"]["weights_bytes"] >= sum(w["bytes"] for w in meta["memory"]["weights"])
    assert set(meta["weights"]) == set(exe.weights)


def test_cli_compile_then_run_check_matches_onnx_run(tmp_path, capsys):
    exe_path = tmp_path / "lenet.npuexe"
    code, out, _ = _cli(capsys, npu_compile.main, LENET, "-o", exe_path)
    assert code == 0 and out.startswith(f"wrote {exe_path}") and "tasks:" in out
    code, out, _ = _cli(capsys, npu_run.main, exe_path, "--check", "--seed", "5", "--outputs",
                        tmp_path / "a.npz", "--report", tmp_path / "a.json")
    assert code == 0 and "check:       ok vs onnxruntime" in out
    assert json.loads((tmp_path / "a.json").read_text())["check"]["ok"]
    assert _cli(capsys, npu_run.main, LENET, "--seed", "5", "--outputs", tmp_path / "b.npz")[0] == 0
    a, b = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    assert a["y"].tobytes() == b["y"].tobytes()


def _flip(data: bytes, region: str) -> bytearray:
    offset, size = section_spans(data)[region]
    bad = bytearray(data)
    bad[offset + size // 2] ^= 0x40
    return bad


@pytest.mark.parametrize("region", REGIONS)
def test_flipped_byte_is_rejected_naming_the_region(region, lenet_bytes, tmp_path, capsys, monkeypatch):
    path = _write(tmp_path, _flip(lenet_bytes, region))
    with pytest.raises(ExecutableError) as e:
        read_executable(path)
    assert e.value.region == region and "\n" not in str(e.value)
    monkeypatch.setattr(npu_run, "_run_on_device", lambda *a: pytest.fail("a bad executable ran"))
    code, out, err = _cli(capsys, npu_run.main, path)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: '{path}': {region}: ")


def test_flipped_padding_byte_is_caught_by_the_sha256(lenet_bytes, tmp_path):
    spans = sorted(section_spans(lenet_bytes).values())
    gap = next(o0 + s0 for (o0, s0), (o1, _) in zip(spans, spans[1:]) if o0 + s0 < o1)
    bad = bytearray(lenet_bytes)
    bad[gap] ^= 1
    with pytest.raises(ExecutableError, match="sha256") as e:
        from_bytes(bytes(bad))
    assert e.value.region == "padding"


@pytest.mark.parametrize("region", ["header", "section table", "meta", "program", "cmdbuf", "weights"])
def test_truncated_file_is_rejected_naming_where_it_ends(region, lenet_bytes, tmp_path, capsys):
    offset, size = section_spans(lenet_bytes)[region]
    path = _write(tmp_path, lenet_bytes[:offset + size // 2])
    where = {"header": "inside the header", "section table": "inside the section table"}.get(
        region, f"inside section '{region}'")
    with pytest.raises(ExecutableError, match=f"truncated.*{where}") as e:
        read_executable(path)
    assert e.value.region == "file"
    code, _, err = _cli(capsys, npu_run.main, path)
    assert code == 1 and err.count("\n") == 1 and "truncated" in err


def test_empty_and_foreign_files(tmp_path, capsys):
    assert "truncated" in str(pytest.raises(ExecutableError, from_bytes, b"").value)
    assert "bad magic" in str(pytest.raises(ExecutableError, from_bytes, b"PK\x03\x04" + bytes(100)).value)
    code, _, err = _cli(capsys, npu_run.main, tmp_path / "missing.npuexe")
    assert code == 1 and "cannot read" in err


def test_other_format_version_is_rejected(lenet_bytes, tmp_path, capsys):
    newer = bytearray(lenet_bytes)
    struct.pack_into("<I", newer, 8, 2)
    seal(newer)  # a well-formed file of format version 2
    with pytest.raises(ExecutableError, match="version mismatch: format version 2") as e:
        from_bytes(bytes(newer))
    assert e.value.region == "header"
    code, _, err = _cli(capsys, npu_run.main, _write(tmp_path, newer))
    assert code == 1 and "version mismatch" in err


def test_wrong_arch_is_rejected(lenet_bytes, tmp_path, capsys):
    path = _write(tmp_path, lenet_bytes)
    with pytest.raises(ArchMismatchError, match="compiled for arch 'default' but asked to run on"):
        read_executable(path, parse_arch_spec("default,cores=1"))
    code, out, err = _cli(capsys, npu_run.main, path, "--arch", "default,cores=1")
    assert (code, out) == (1, "")
    assert err == f"error: '{path}' was compiled for arch 'default' but --arch is 'default,cores=1'\n"
    assert _cli(capsys, npu_run.main, path, "--arch", "default")[0] == 0


@pytest.mark.parametrize("field, at, value", [("core", 4, 3), ("kernel", 8, 2), ("hi", 24, 7),
                                              ("waits", None, 5)])
def test_descriptor_disagreeing_with_the_program_is_rejected(field, at, value, mlp_exe):
    data = bytearray(mlp_exe.to_bytes())
    offset, _ = section_spans(bytes(data))["cmdbuf"]
    _, stride, slots_at, nslots = struct.unpack_from("<IIII", data, offset)
    first = offset + slots_at - len(mlp_exe.descriptors) * stride
    if at is None:  # task #2 waits on slot list entry `waits_at`: make it another slot
        waits_at = struct.unpack_from("<I", data, first + 2 * stride + 40)[0]
        struct.pack_into("<I", data, offset + slots_at + 4 * waits_at, value)
    else:
        struct.pack_into("<Q" if at >= 16 else "<I", data, first + 2 * stride + at, value)
    seal(data)  # the checksums hold: only the cross-check with the program can tell
    with pytest.raises(ExecutableError, match=f"descriptor 2 disagrees with the program's task #2 .*: {field} ") as e:
        from_bytes(bytes(data))
    assert e.value.region == "cmdbuf"


@pytest.mark.parametrize("align", [16, 256])
def test_sections_descriptors_and_weights_honour_align(align):
    exe = compile_model(LENET, arch=f"default,align={align}")
    data = exe.to_bytes()
    spans = section_spans(data)
    assert all(offset % align == 0 for name, (offset, _) in spans.items() if name in REGIONS[2:])
    cmdbuf = spans["cmdbuf"][0]
    count, stride, slots_at, _ = struct.unpack_from("<IIII", data, cmdbuf)
    assert stride % align == 0 and stride >= 56 and slots_at % align == 0
    first = slots_at - count * stride
    assert first % align == 0 and all((cmdbuf + first + i * stride) % align == 0 for i in range(count))
    assert all((spans["weights"][0] + w["offset"]) % align == 0 for w in exe.meta["weights"].values())
    back = from_bytes(data, arch=exe.arch)
    assert back.descriptors == exe.descriptors and back.arch.align == align


def test_task_level_mlir_is_packaged_as_is(tmp_path, capsys):
    arch = PRESETS["default"]
    module, weights = import_model(load_model(LENET), arch)
    compile_module(module, arch, weights, verify_each=False)
    save_weights(str(tmp_path / "low.weights.npz"), weights_of(module))
    module.attributes[WEIGHTS_ATTR] = StringAttr("low.weights.npz")
    (tmp_path / "low.mlir").write_text(module_text(module))
    exe = compile_model(tmp_path / "low.mlir")
    assert exe.meta["pipeline"] is None and exe.meta["source"]["kind"] == "mlir"
    assert exe.program == compile_model(LENET).program
    code, _, _ = _cli(capsys, npu_compile.main, tmp_path / "low.mlir", "-o", tmp_path / "low.npuexe")
    assert code == 0
    code, _, err = _cli(capsys, npu_run.main, tmp_path / "low.npuexe", "--check")
    assert code == 2 and "needs --reference MODEL.onnx" in err
    code, out, _ = _cli(capsys, npu_run.main, tmp_path / "low.npuexe", "--check", "--reference", LENET)
    assert code == 0 and "check:       ok" in out
    code, _, err = _cli(capsys, npu_compile.main, tmp_path / "low.mlir", "--arch", "default,cores=2")
    assert code == 1 and "was compiled for arch 'default' but --arch is 'default,cores=2'" in err


def test_check_needs_the_unchanged_source_model(tmp_path, capsys):
    model = tmp_path / "lenet.onnx"
    shutil.copy(LENET, model)
    exe = str(tmp_path / "lenet.npuexe")
    assert _cli(capsys, npu_compile.main, model, "-o", exe)[0] == 0
    proto = onnx.load(str(model))
    proto.doc_string = "edited after compiling"
    onnx.save(proto, str(model))
    code, _, err = _cli(capsys, npu_run.main, exe, "--check")
    assert code == 1 and "changed after" in err
    model.unlink()
    code, _, err = _cli(capsys, npu_run.main, exe, "--check")
    assert code == 1 and "is missing" in err
    assert _cli(capsys, npu_run.main, exe, "--check", "--reference", LENET)[0] == 0
    code, _, err = _cli(capsys, npu_run.main, LENET, "--check", "--reference", LENET)
    assert code == 2 and "--reference goes with --check on an .npuexe" in err


def test_npu_compile_errors(tmp_path, capsys):
    bad = tmp_path / "unsupported.onnx"
    onnx.save(models.unsupported(), str(bad))
    code, out, err = _cli(capsys, npu_compile.main, bad, "-o", tmp_path / "u.npuexe")
    assert code == 1 and out == "" and "odd_node" in err and not (tmp_path / "u.npuexe").exists()
    code, _, err = _cli(capsys, npu_compile.main, LENET, "-o", tmp_path / "x.npuexe", "-p", "npu-nonsense")
    assert code == 2 and "npu-nonsense" in err
    code, _, err = _cli(capsys, npu_compile.main, LENET, "-o", tmp_path / "x.npuexe", "-p", "npu-canonicalize")
    assert code == 1 and "stops before the task level" in err
    code, _, err = _cli(capsys, npu_compile.main, LENET, "-o", tmp_path / "x.mlir")
    assert code == 2 and ".npuexe" in err
    code, _, err = _cli(capsys, npu_compile.main, tmp_path / "missing.onnx", "-o", tmp_path / "x.npuexe")
    assert code == 1 and "missing.onnx" in err
    sym = tmp_path / "sym.onnx"
    onnx.save(models.symbolic_batch(), str(sym))
    code, _, err = _cli(capsys, npu_compile.main, sym, "-o", tmp_path / "s.npuexe", "--shape-buckets", "batch=1,4")
    assert code == 2 and "one executable per bucket" in err
    code, out, _ = _cli(capsys, npu_compile.main, sym, "-o", tmp_path / "s.npuexe", "--shape-buckets", "batch=4")
    assert code == 0 and "bucket:    batch=4" in out
    assert read_executable(tmp_path / "s.npuexe").meta["bucket"] == {"batch": 4}


def test_pipeline_options_reach_the_compiler():
    grouped = compile_model(LENET)
    split = compile_model(LENET, pipeline="builtin.module(npu-default{fuse-disable=layer-group})")
    assert len(split.descriptors) > len(grouped.descriptors)
    assert split.meta["pipeline"] == "builtin.module(npu-default{fuse-disable=layer-group})"
    by_options = compile_model(LENET, fuse_disable=("layer-group",))
    assert by_options.program == split.program
    assert compile_model(LENET, pipeline=by_options.meta["pipeline"]).program == split.program  # recorded = what ran

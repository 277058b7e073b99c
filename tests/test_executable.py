"""The executable file (`runtime/executable.py`, its program in `runtime/binary_ir.py`),
`tools.api.compile`, `npu-compile` and `npu-run X.npuexe`: round trips give the outputs
and cycles of a direct compile, the program dumps to MLIR text that parses back to it,
the weights section is the DRAM weights region, used without a copy; a file with a
flipped byte in any region, truncated, of another format version or another arch,
whose descriptors disagree with its program or whose program section is forged, is
rejected with one line naming the region (exit 1) and never run."""

from __future__ import annotations

import json
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import onnx
import pytest
from xdsl.dialects.builtin import StringAttr
from xdsl.parser import Parser

from lowering.importer.onnx_import import import_model, load_model
from lowering.pipeline import compile_module
from npu_dialects import make_context, module_text
from npu_dialects.arch import PRESETS, parse_arch_spec
from npu_dialects.weights import WEIGHTS_ATTR, save_weights, weights_of
from runtime import binary_ir
from runtime.binary_ir import BinaryIRError, decode_module, encode_module, pack, unpack
from runtime.executable import (
    ArchMismatchError,
    Executable,
    ExecutableError,
    from_bytes,
    read_executable,
    seal,
    section_spans,
)
from runtime.executable import main as executable_main
from runtime.run import random_inputs, run
from sim import SimError, signature
from sim.program import load_program
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
    task_lines = [ln for ln in exe.program_text().splitlines() if ln.lstrip().startswith("npu_task.task ")]
    assert len(task_lines) == len(meta["tasks"]) and "line" not in task  # (tasks in program order)
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


def test_flipped_padding_byte_is_caught(lenet_bytes):
    spans = sorted(section_spans(lenet_bytes).values())
    gap = next(o0 + s0 for (o0, s0), (o1, _) in zip(spans, spans[1:]) if o0 + s0 < o1)
    bad = bytearray(lenet_bytes)
    bad[gap] ^= 1
    with pytest.raises(ExecutableError, match="non-zero bytes in the padding") as e:
        from_bytes(bytes(bad))
    assert e.value.region == "padding"


def test_sha256_is_checked_with_verify(lenet_bytes):
    """A byte changed and every crc32 recomputed, the sha256 left: only `verify` sees it."""
    bad = bytearray(lenet_bytes)
    digest = bytes(bad[32:64])
    offset, size = section_spans(lenet_bytes)["weights"]
    bad[offset + size // 2] ^= 1
    seal(bad)
    bad[32:64] = digest
    struct.pack_into("<I", bad, 64, 0)
    struct.pack_into("<I", bad, 64, zlib.crc32(bad[:section_spans(lenet_bytes)["header"][1]]))
    assert from_bytes(bytes(bad)).meta == from_bytes(lenet_bytes).meta
    with pytest.raises(ExecutableError, match="sha256 mismatch") as e:
        from_bytes(bytes(bad), verify=True)
    assert e.value.region == "file"


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


@pytest.mark.parametrize("version", [1, 2, 3, 5])
def test_other_format_version_is_rejected(version, lenet_bytes, tmp_path, capsys):
    """1: MLIR text as the program; 2: an arch spec (maybe a chip file's path) in the header;
    3: float32 weights only (no element type in the weight index)."""
    other = bytearray(lenet_bytes)
    struct.pack_into("<I", other, 8, version)
    seal(other)  # a well-formed file of another format version
    with pytest.raises(ExecutableError, match=f"version mismatch: format version {version}, .* reads version 4; "
                                              "recompile"):
        from_bytes(bytes(other))
    code, _, err = _cli(capsys, npu_run.main, _write(tmp_path, other))
    assert code == 1 and "version mismatch" in err and "header" in err


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
    task = 2
    if at is None:  # the first task that waits: its first wait's slot list entry becomes another slot
        task = next(i for i in range(len(mlp_exe.descriptors))
                    if struct.unpack_from("<I", data, first + i * stride + 44)[0] > 0)
        waits_at = struct.unpack_from("<I", data, first + task * stride + 40)[0]
        struct.pack_into("<I", data, offset + slots_at + 4 * waits_at, value)
    else:
        struct.pack_into("<Q" if at >= 16 else "<I", data, first + task * stride + at, value)
    seal(data)  # the checksums hold: only the cross-check with the program can tell
    with pytest.raises(ExecutableError,
                       match=f"descriptor {task} disagrees with the program's task #{task} .*: {field} ") as e:
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
    assert exe.program_text() == compile_model(LENET).program_text()
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


# ----------------------------------------------------------------------------- the program section


def test_dump_parses_back_to_the_same_program(mlp_exe, tmp_path, capsys):
    path = tmp_path / "mlp.npuexe"
    mlp_exe.save(path)
    code, text, _ = _cli(capsys, executable_main, "dump", path)
    assert code == 0 and text == mlp_exe.program_text() and "npu_task.task" in text
    assert _cli(capsys, executable_main, "dump", path, "-o", tmp_path / "mlp.mlir")[0] == 0
    parsed = Parser(make_context(), (tmp_path / "mlp.mlir").read_text()).parse_module()
    assert parsed.is_structurally_equivalent(read_executable(path).module) and module_text(parsed) == text
    code, _, err = _cli(capsys, executable_main, "dump", tmp_path / "missing.npuexe")
    assert code == 1 and err.startswith("error: '") and "cannot read" in err


@pytest.mark.parametrize("name", ["lenet", "bert_encoder"])
def test_binary_program_decodes_to_the_same_module(name):
    exe = compile_model(MODELS / f"{name}.onnx")
    ctx = make_context()
    back = decode_module(exe.program, ctx)
    back.verify()
    assert module_text(back) == exe.program_text()
    assert encode_module(back, ctx) == exe.program
    strings, attrs, ops = unpack(exe.program)
    assert pack(strings, attrs, ops) == exe.program


def _forge(program: bytes, how: str) -> bytes:
    """The program section changed as `how` says (positions found without decoding)."""
    strings, attrs, ops = unpack(program)
    if how == "unknown op":
        strings[strings.index(b"npu_task.task")] = b"npu_task.tusk"
    elif how == "unknown type":
        strings[strings.index(b"memref")] = b"memrex"
    elif how == "attribute index":  # drop the last entry: whatever refers to it points past the table
        last = max(i for i in range(len(attrs)) if _entry_starts(attrs)[i])
        attrs = attrs[:last]
    elif how == "string index":
        strings = strings[:-1]
    elif how == "attribute kind":
        attrs[0] = 99
    elif how == "truncated ops":
        ops = ops[:-1]
    elif how == "trailing word":
        ops = [*ops, 0]
    elif how == "region structure":  # the module's body: two blocks instead of one
        at = 5 + 2 * ops[3] + 2 * ops[4 + 2 * ops[3]] + 1  # nprop, pairs, nattr, pairs, nsucc, nreg -> nblocks
        ops[at] = 2
    elif how == "head":
        return program[:8] + struct.pack("<I", struct.unpack_from("<I", program, 8)[0] + 1) + program[12:]
    return pack(strings, attrs, ops)


def _entry_starts(attrs: list[int]) -> list[bool]:
    """Which attribute words start an entry (a tiny walker over the table's kinds)."""
    starts, i = [False] * len(attrs), 0
    sizes = {binary_ir.TEXT: 1, binary_ir.INT: 1, binary_ir.STRING: 1, binary_ir.BYTES: 1, binary_ir.FLOAT: 1,
             binary_ir.BIGINT: 1}
    while i < len(attrs):
        starts[i] = True
        kind = attrs[i]
        if kind in sizes:
            i += 1 + sizes[kind]
        elif kind == binary_ir.PARAM:
            i += 3 + attrs[i + 2]
        elif kind == binary_ir.ARRAY:
            i += 2 + attrs[i + 1]
        else:  # DICT
            i += 2 + 2 * attrs[i + 1]
    return starts


FORGERIES = {"unknown op": "unknown op 'npu_task.tusk'", "unknown type": "unknown attribute or type 'memrex'",
             "attribute index": "attribute index .* out of range", "string index": "string index .* out of range",
             "attribute kind": "attribute #0: unknown kind 99", "truncated ops": "the op stream ends early",
             "trailing word": "words after the end of the op stream", "region structure": "",
             "head": "inconsistent head"}


@pytest.mark.parametrize("how", FORGERIES)
def test_forged_program_is_rejected_by_the_decoder(how, tmp_path, capsys, monkeypatch):
    exe = compile_model(LENET)
    exe.program = _forge(exe.program, how)
    data = exe.to_bytes()  # sealed: every checksum holds, only the decoder can tell
    with pytest.raises(ExecutableError, match=f"program: bad binary IR: .*{FORGERIES[how]}") as e:
        from_bytes(data)
    assert e.value.region == "program" and "\n" not in str(e.value)
    monkeypatch.setattr(npu_run, "_run_on_device", lambda *a: pytest.fail("a bad executable ran"))
    code, out, err = _cli(capsys, npu_run.main, _write(tmp_path, data))
    assert code == 1 and out == "" and err.count("\n") == 1 and ": program: bad binary IR: " in err


SMALL = """"builtin.module"() ({
  %a = "arith.constant"() <{value = 1 : i32}> : () -> i32
  %b = "arith.addi"(%a, %a) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
  "scf.if"(%b) ({
    "scf.yield"() : () -> ()
  }, {
  }) : (i32) -> ()
}) : () -> ()
"""


@pytest.mark.parametrize("operand, message", [(2, "value index 2 out of range \\[0, 1\\)"),
                                               (-1, "value index -1 out of range")])
def test_operand_index_out_of_range_is_rejected(operand, message):
    ctx = make_context()
    strings, attrs, ops = unpack(encode_module(Parser(ctx, SMALL).parse_module(), ctx))
    at = ops.index(strings.index(b"arith.addi"))
    assert ops[at + 2:at + 5] == [2, 0, 0]  # two operands, both value 0
    ops[at + 4] = operand
    with pytest.raises(BinaryIRError, match=message):
        decode_module(pack(strings, attrs, ops), ctx)


def test_decoder_raises_nothing_but_its_own_error():
    """Every word of a small program's attribute table and op stream replaced in turn
    by a few values: each decodes to some module or raises BinaryIRError."""
    ctx = make_context()
    program = encode_module(Parser(ctx, SMALL).parse_module(), ctx)
    strings, attrs, ops = unpack(program)
    outcomes = set()
    for which in ("attrs", "ops"):
        words = attrs if which == "attrs" else ops
        for i in range(len(words)):
            for value in (-2, 0, 1, 3, 1000, 2 ** 31 - 1):
                forged = list(words)
                forged[i] = value
                data = pack(strings, forged, ops) if which == "attrs" else pack(strings, attrs, forged)
                try:
                    decode_module(data, ctx)
                    outcomes.add("decoded")
                except BinaryIRError:
                    outcomes.add("rejected")
    assert outcomes == {"decoded", "rejected"}


def test_encoder_refuses_what_it_cannot_describe():
    ctx = make_context()
    module = Parser(ctx, SMALL).parse_module()
    ops = list(module.body.block.ops)
    ops[1].detach()
    module.body.block.insert_op_before(ops[1], ops[0])  # arith.addi now uses %a before its definition
    with pytest.raises(BinaryIRError, match="before its definition"):
        encode_module(module, ctx)


# ----------------------------------------------------------------------------- weights: the DRAM image


def test_weights_section_is_the_dram_image_used_without_a_copy(mlp_exe, tmp_path):
    path = tmp_path / "mlp.npuexe"
    mlp_exe.save(path)
    exe = read_executable(path)
    image = exe.weights.image
    assert image.size == exe.meta["weights_image_bytes"] == exe.meta["memory"]["weights_bytes"]
    prog = load_program(exe.module, exe.weights, exe.arch)
    region = prog.regions[0]
    assert region.name == "weights" and np.shares_memory(region.data, image) and not region.data.flags.writeable
    assert np.shares_memory(image, exe.weights_section)
    for w in exe.meta["memory"]["weights"]:  # every weight at its DRAM offset (the plan placed all)
        assert image[w["offset"]:w["offset"] + w["bytes"]].tobytes() == exe.weights[w["key"]].tobytes()
    copied = load_program(exe.module, dict(exe.weights), exe.arch).regions[0].data  # the by-key path
    assert copied.tobytes() == image.tobytes() and copied.flags.writeable
    inputs = random_inputs(signature(exe.module), seed=1)
    a, b = run(exe.module, exe.weights, inputs, exe.arch), run(mlp_exe.module, dict(mlp_exe.weights), inputs)
    assert a.report["cycles"] == b.report["cycles"] and a.outputs["y"].tobytes() == b.outputs["y"].tobytes()


def test_packaging_streams_the_weights_without_a_copy():
    """A packaged executable holds its weights section as pieces viewing the compile's
    weights: the file is written from them, and the bytes are assembled only when a
    simulation in the process asks; both are the bytes `load_program` lays out."""
    from runtime.executable import WeightPieces
    arch = PRESETS["default"]
    module, weights = import_model(load_model(LENET), arch)
    compile_module(module, arch, weights, verify_each=False)
    exe = Executable.from_module(module, weights_of(module))
    pieces = exe._section
    assert isinstance(pieces, WeightPieces) and exe._weights is None  # (nothing assembled yet)
    # f32 weights are the compile's own arrays, not copies
    assert any(np.shares_memory(data, w) for _, data in pieces.pieces for w in weights_of(module).values())
    streamed = b"".join(pieces.chunks())
    # (the weights region load_program fills weight by weight from the store: an independent path)
    image = load_program(module, dict(weights_of(module)), arch).regions[0].data
    assert len(streamed) == pieces.size and streamed[:image.size] == image.tobytes()
    written = exe.to_bytes()
    assert exe.weights_section.tobytes() == streamed and not exe.weights_section.flags.writeable
    assert exe.to_bytes() == written  # (the same file before and after the section was assembled)
    assert np.array_equal(exe.weights.image, image)


def test_weights_image_of_the_wrong_size_is_refused(mlp_exe):
    with pytest.raises(SimError, match="the weights image is uint8 of shape"):
        load_program(mlp_exe.module, mlp_exe.weights, mlp_exe.arch, weights_image=np.zeros(4, np.uint8))


def test_weights_without_a_dram_offset_follow_the_image(tmp_path):
    """A hand-written task-level module may leave a weight unplaced: it goes after the
    image and `load_program` copies it into a private region, as it did without one."""
    arch = PRESETS["default"]
    module, weights = import_model(load_model(LENET), arch)
    compile_module(module, arch, weights, verify_each=False)
    save_weights(str(tmp_path / "low.weights.npz"), weights_of(module))
    module.attributes[WEIGHTS_ATTR] = StringAttr("low.weights.npz")
    text = module_text(module).replace('"fc1.bias" {offset = 192000 : i64}', '"fc1.bias"')
    assert '"fc1.bias" :' in text
    (tmp_path / "low.mlir").write_text(text)
    exe = compile_model(tmp_path / "low.mlir")
    image_bytes = exe.meta["weights_image_bytes"]
    assert exe.meta["weights"]["fc1.bias"]["offset"] >= image_bytes and exe.weights_section.size > image_bytes
    exe.save(tmp_path / "low.npuexe")
    back = read_executable(tmp_path / "low.npuexe")
    prog = load_program(back.module, back.weights, back.arch)
    assert any(r.name.startswith("private weight") for r in prog.regions)
    inputs = random_inputs(signature(back.module), seed=2)
    a, b = run(back.module, back.weights, inputs, back.arch), run(exe.module, dict(exe.weights), inputs, exe.arch)
    assert a.report["cycles"] == b.report["cycles"] and a.outputs["y"].tobytes() == b.outputs["y"].tobytes()


def test_a_dma_into_read_only_weights_is_a_sim_error():
    from types import SimpleNamespace

    from sim.memory import DRAM, Buf, Region, plan_copy
    image = np.zeros(64, np.uint8)
    weight = Buf(Region("weights", DRAM, 64, readonly=True, data=image), 0, (4, 4), "weight 'w'")
    assert not weight.arr.flags.writeable and image.flags.writeable  # (the region's view is read-only)
    src = Buf(Region("arena", DRAM, 64), 0, (4, 4), "alloc")
    plan = plan_copy(SimpleNamespace(where="task 't': 'npu_dma.copy'"), src, weight, (0, 0), (0, 0), (4, 4),
                     None, False, True)
    assert not isinstance(plan, str)
    with pytest.raises(SimError, match="'npu_dma.copy': writes weight 'w' in the read-only DRAM weights region"):
        plan.move()


def test_a_relative_model_path_compiles_while_the_check_runs_in_its_directory(tmp_path, monkeypatch):
    """Found compiling tests/models/lenet.onnx by its relative path: the model's sha256,
    taken on another thread beside the load, opened the relative path while onnx's
    checker ran with the working directory at the model's (for the external tensors
    `read_model` leaves in the file), and the compile failed with an internal
    FileNotFoundError now and then. Here the hash waits until the checker runs."""
    import threading

    import tools.api as api
    from tools.compile_cache import source_of

    (tmp_path / "models").mkdir()
    shutil.copy(LENET, tmp_path / "models" / "m.onnx")
    monkeypatch.chdir(tmp_path)
    checking, hashed = threading.Event(), threading.Event()
    check = onnx.checker.check_model

    def check_late(model, *args, **kwargs):
        assert Path.cwd() == tmp_path / "models"  # (the model has external tensors: checked in its directory)
        checking.set()
        hashed.wait(10)
        return check(model, *args, **kwargs)

    def hash_while_checking(path):
        checking.wait(10)
        try:
            return source_of(path)
        finally:
            hashed.set()

    monkeypatch.setattr(onnx.checker, "check_model", check_late)
    monkeypatch.setattr(api, "source_of", hash_while_checking)
    exe = api.compile("models/m.onnx", cache=None)
    assert exe.meta["source"]["path"] == str(tmp_path / "models" / "m.onnx")

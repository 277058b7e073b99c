"""What the tools read from untrusted files (issue 43 items 4, 8, 9): a path that a data
file names is never a device, FIFO or stream, and is read size-capped; an executable
carries its arch as data, is read into memory once (overwriting the file during a run
cannot kill it) and is checked, before anything runs, as the IR verifier would check
its program (a forged op with recomputed checksums is refused at load).

Each case that hung or ate memory before runs in a subprocess with a timeout and an
address-space limit, so a regression fails the test instead of the machine."""

from __future__ import annotations

import os
import re
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from npu_dialects.arch import MAX_CHIP_BYTES, PRESETS, ArchError, load_chip, parse_arch_params
from npu_dialects.compute import PoolOp
from npu_dialects.graph import int_array
from runtime.executable import ExecutableError, from_bytes, read_executable, seal
from tools.api import compile as compile_model

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "tests" / "models" / "lenet.onnx"
MEMORY = 3 << 30
"""The address space a subprocess may take (a run of LeNet needs well under 1 GiB)."""


@pytest.fixture(scope="module")
def lenet_bytes() -> bytes:
    return compile_model(str(LENET)).to_bytes()


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _run(argv: list[str], timeout: float = 60, **kw) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, seconds) of a subprocess with its memory limited and
    stdin a pipe nobody writes (so `/dev/stdin` would block); a timeout is a failure."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, preexec_fn=_limited,
                           stdin=subprocess.PIPE, cwd=ROOT, **kw)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv} still running after {timeout} s")
    return p.returncode, p.stdout, p.stderr, time.perf_counter() - t0


def _one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _with_header_arch(image: bytes, text: str) -> bytes:
    """The executable image with `text` as its header's arch string, checksums
    recomputed: the header keeps its size (the compiler version string takes the
    difference), so every section stays where it is."""
    buf = bytearray(image)
    clen, alen = struct.unpack_from("<HH", buf, 68)
    arch = text.encode()
    assert len(arch) <= clen + alen
    compiler = b"x" * (clen + alen - len(arch))
    struct.pack_into("<HH", buf, 68, len(compiler), len(arch))
    buf[72:72 + clen + alen] = compiler + arch
    seal(buf)
    return bytes(buf)


# ----------------------------------------------------------------------------- item 4: executables


def _header_arch_cases(tmp_path: Path) -> dict[str, str]:
    fifo = tmp_path / "chip.fifo.toml"
    os.mkfifo(fifo)
    (tmp_path / "huge.toml").write_bytes(b"#" * (4 << 20))
    return {"dev-zero": "/dev/zero", "dev-stdin": "/dev/stdin", "fifo": str(fifo), "passwd": "/etc/passwd",
            "relative": "huge.toml", "spec": "default,cores=1", "preset": "edge-small"}


@pytest.mark.parametrize("case", ["dev-zero", "dev-stdin", "fifo", "passwd", "relative", "spec", "preset"])
def test_header_arch_is_data_never_a_path(case: str, lenet_bytes: bytes, tmp_path: Path) -> None:
    """The header's arch string is parsed as data: a path (a device, a FIFO, a file)
    or even a spec naming a preset is refused at once, one line, exit 1; nothing is
    opened (before: `/dev/zero` took all memory, a FIFO or `/dev/stdin` hung)."""
    text = _header_arch_cases(tmp_path)[case]
    exe = tmp_path / "forged.npuexe"
    exe.write_bytes(_with_header_arch(lenet_bytes, text))
    code, _, err, seconds = _run(["npu-run", str(exe), "--timing-only"], timeout=60)
    line = _one_error(err)
    assert code == 1 and "header: bad compiler version or arch: bad resolved arch" in line, err
    assert seconds < 30
    with pytest.raises(ExecutableError, match="^'x': header: bad compiler version or arch"):
        from_bytes(exe.read_bytes(), "x")


def test_header_arch_is_the_resolved_parameters(lenet_bytes: bytes, tmp_path: Path) -> None:
    """An executable compiled for a chip file carries the chip's parameters, not its path:
    it loads after the chip file is gone."""
    chip = tmp_path / "chip.toml"
    chip.write_text('base = "edge-small"\ncores = 2\n')
    exe = compile_model(str(LENET), arch=str(chip))
    chip.unlink()
    image = exe.to_bytes()
    clen, alen = struct.unpack_from("<HH", image, 68)
    text = image[72 + clen:72 + clen + alen].decode()
    assert parse_arch_params(text) == exe.arch and "toml" not in text and text.startswith("cores=2,cube=8x8x8,")
    assert from_bytes(image).arch == exe.arch


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory"])
def test_executable_path_must_be_a_regular_file(kind: str, tmp_path: Path) -> None:
    """`npu-run X.npuexe` where X is a device, a FIFO or a directory: one line, exit 1,
    at once (before: a FIFO hung in open, `/dev/zero` was read until memory ran out)."""
    path = tmp_path / "x.npuexe"
    if kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    code, _, err, _ = _run(["npu-run", str(path), "--timing-only"], timeout=60)
    line = _one_error(err)
    why = "Is a directory" if kind == "directory" else "not a regular file"
    assert code == 1 and "file: cannot read" in line and why in line, err


@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_weights_file_a_module_names_must_be_a_regular_file(kind: str, tmp_path: Path) -> None:
    """A `.mlir` whose `npu.weights` names `/dev/zero` or a FIFO: one line naming the
    attribute, exit 1, at once (before: the FIFO hung in open)."""
    code, _, err, _ = _run(["npu-import", str(ROOT / "tests" / "models" / "mlp.onnx"), "-o", str(tmp_path / "m.mlir")])
    assert code == 0, err
    (tmp_path / "m.weights.npz").unlink()
    if kind == "fifo":
        os.mkfifo(tmp_path / "m.weights.npz")
    else:
        text = (tmp_path / "m.mlir").read_text().replace('npu.weights = "m.weights.npz"', 'npu.weights = "/dev/zero"')
        (tmp_path / "m.mlir").write_text(text)
    code, _, err, seconds = _run(["npu-run", str(tmp_path / "m.mlir"), "--timing-only"], timeout=60)
    line = _one_error(err)
    assert code == 1 and "npu.weights" in line and "not a regular file" in line, err


def test_dram_arena_a_lowered_module_declares_is_capped(tmp_path: Path) -> None:
    """A lowered `.mlir` declaring a 1 TiB DRAM arena: one line naming the attribute
    (before: `internal error: MemoryError` allocating it)."""
    code, _, err, _ = _run(["npu-import", str(ROOT / "tests" / "models" / "mlp.onnx"), "-o", str(tmp_path / "m.mlir")])
    assert code == 0, err
    code, _, err, _ = _run(["npu-opt", str(tmp_path / "m.mlir"), "-p", "npu-default", "-o", str(tmp_path / "low.mlir")])
    assert code == 0, err
    text = (tmp_path / "low.mlir").read_text()
    forged = re.sub(r"npu.dram_arena_bytes = \d+ : i64", "npu.dram_arena_bytes = 1099511627776 : i64", text)
    assert forged != text
    (tmp_path / "big.mlir").write_text(forged)
    code, _, err, _ = _run(["npu-run", str(tmp_path / "big.mlir"), "--timing-only"])
    line = _one_error(err)
    assert code == 1 and "DRAM of 1099511627776 bytes (npu.dram_arena_bytes)" in line, err
    assert "more than the device's 17179869184 bytes" in line, err


SHA256 = """
import sys
from runtime.executable import sha256_file
for path in sys.argv[1:]:
    try:
        sha256_file(path)
        print("read", path)
    except OSError as e:
        print("refused", path, e.strerror)
"""


def test_source_model_path_in_meta_is_not_opened_unless_regular(tmp_path: Path) -> None:
    """`sha256_file` (the source model an executable records, a path read from data)
    refuses a device or FIFO before reading it (before: `/dev/zero` was hashed forever)."""
    fifo = tmp_path / "model.onnx"
    os.mkfifo(fifo)
    code, out, err, _ = _run([sys.executable, "-c", SHA256, "/dev/zero", str(fifo)], timeout=60)
    assert code == 0, err
    assert out.splitlines() == ["refused /dev/zero a character device, not a regular file",
                                f"refused {fifo} a FIFO, not a regular file"]


# ----------------------------------------------------------------------------- item 4: chip files


def _chip_cases(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """case -> (the `base` value, what the one-line error says)."""
    (tmp_path / "zero.toml").symlink_to("/dev/zero")
    (tmp_path / "stdin.toml").symlink_to("/dev/stdin")
    os.mkfifo(tmp_path / "fifo.toml")
    (tmp_path / "passwd.toml").write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/bin/false\n")
    (tmp_path / "big.toml").write_text("cores = 2\n" + "#" * (MAX_CHIP_BYTES + 1) + "\n")
    (tmp_path / "dir.toml").mkdir()
    return {"dev-zero": ("/dev/zero", "'base': '/dev/zero' is neither a preset nor a chip file"),
            "dev-stdin": ("/dev/stdin", "'base': '/dev/stdin' is neither a preset nor a chip file"),
            "passwd": ("/etc/passwd", "'base': '/etc/passwd' is neither a preset nor a chip file"),
            "zero-link": ("zero.toml", "zero.toml: not a chip file: a character device, not a regular file"),
            "stdin-link": ("stdin.toml", "stdin.toml: not a chip file: a FIFO, not a regular file"),
            "fifo": ("fifo.toml", "fifo.toml: not a chip file: a FIFO, not a regular file"),
            "passwd-like": ("passwd.toml", "passwd.toml:1:5: TOML syntax error"),
            "oversize": ("big.toml", f"big.toml: not a chip file: larger than {MAX_CHIP_BYTES} bytes"),
            "directory": ("dir.toml", "dir.toml: cannot read the chip file: Is a directory")}


CHIP_CASES = ["dev-zero", "dev-stdin", "passwd", "zero-link", "stdin-link", "fifo", "passwd-like", "oversize",
              "directory"]


@pytest.mark.parametrize("case", CHIP_CASES)
def test_chip_base_is_a_preset_or_a_regular_capped_toml_file(case: str, tmp_path: Path) -> None:
    """A chip file's `base` names a preset or a regular `NAME.toml` file of at most
    MAX_CHIP_BYTES, relative to the chip file: anything else is a usage error naming
    the file, at once (before: `/dev/zero` took all memory, a FIFO hung, /etc/passwd was
    read). Checked through `npu-opt --print-arch` in a subprocess (exit 2)."""
    base, message = _chip_cases(tmp_path)[case]
    chip = tmp_path / "chip.toml"
    chip.write_text(f'base = "{base}"\ncores = 2\n')
    code, _, err, _ = _run(["npu-opt", "--print-arch", str(chip)], timeout=60)
    assert code == 2 and "Traceback" not in err, err
    assert message in err.splitlines()[0], err


@pytest.mark.parametrize("name,why", [("fifo.toml", "a FIFO, not a regular file"),
                                      ("big.toml", f"larger than {MAX_CHIP_BYTES} bytes")])
def test_chip_file_given_as_arch_is_checked_the_same(name: str, why: str, tmp_path: Path) -> None:
    """`--arch FILE.toml` itself: a FIFO or an oversize file is refused, never read
    (before: `npu-opt --print-arch fifo.toml` hung)."""
    os.mkfifo(tmp_path / "fifo.toml")
    (tmp_path / "big.toml").write_text("#" * (MAX_CHIP_BYTES + 1))
    code, _, err, _ = _run(["npu-opt", "--print-arch", str(tmp_path / name)], timeout=60)
    assert code == 2 and f"{name}: not a chip file: {why}" in err.splitlines()[0], err


def test_chip_chain_is_bounded_and_nesting_is_a_diagnostic(tmp_path: Path) -> None:
    for i in range(40):
        (tmp_path / f"c{i}.toml").write_text(f'base = "c{i + 1}.toml"\n')
    (tmp_path / "c40.toml").write_text("cores = 2\n")
    with pytest.raises(ArchError, match="a chain of more than 16 chip files"):
        load_chip(tmp_path / "c0.toml")
    (tmp_path / "c30.toml").write_text('base = "edge-small"\n')  # a chain of 31: still too long
    with pytest.raises(ArchError, match="a chain of more than 16"):
        load_chip(tmp_path / "c0.toml")
    assert load_chip(tmp_path / "c20.toml") == PRESETS["edge-small"]  # 11 files
    (tmp_path / "deep.toml").write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(ArchError, match="deep.toml"):
        load_chip(tmp_path / "deep.toml")


# ----------------------------------------------------------------------------- item 8: overwritten during a run

OVERWRITE = """
import sys, numpy as np
from runtime.executable import read_executable
from runtime.run import random_inputs, run
from sim import signature
path, other = sys.argv[1], sys.argv[2]
exe = read_executable(path)
before = run(exe.module, exe.weights, random_inputs(signature(exe.module), seed=0)).outputs
with open(path, "r+b") as f:  # as cp does: truncate in place, then write the other file
    f.truncate(0)
    f.write(open(other, "rb").read())
total = float(np.sum(exe.weights.image, dtype=np.float64))  # every weights page touched
after = run(exe.module, exe.weights, random_inputs(signature(exe.module), seed=0)).outputs
assert all(np.array_equal(before[k], after[k]) for k in before)
print("ok", total)
"""


def test_overwriting_the_file_after_loading_cannot_kill_the_run(lenet_bytes: bytes, tmp_path: Path) -> None:
    """The executable is read into memory: truncating and rewriting its file (what `cp
    b.npuexe a.npuexe` does) after it was loaded changes nothing (before: the file was
    mapped, and touching a page the truncation removed was SIGBUS, exit 135)."""
    a, b = tmp_path / "a.npuexe", tmp_path / "b.npuexe"
    a.write_bytes(lenet_bytes)
    b.write_bytes(b"tiny")
    code, out, err, _ = _run([sys.executable, "-c", OVERWRITE, str(a), str(b)], timeout=120)
    assert code == 0 and out.startswith("ok"), (code, err[-2000:])


def test_npu_run_survives_cp_over_its_executable(tmp_path: Path) -> None:
    """The issue's recipe: `npu-run a.npuexe &` then `cp b.npuexe a.npuexe` ends with the
    run's own result (exit 0), never a bus error (timing-dependent: the test above is
    the deterministic one; here the run takes about 2 s and the copy lands after its load)."""
    from tools.testkit import models
    a, b = tmp_path / "a.npuexe", tmp_path / "b.npuexe"
    compile_model(models.mlp(batch=1024, sizes=(1024, 4096, 4096, 1024))).save(a)
    b.write_bytes(b"NPUEXE")
    p = subprocess.Popen(["npu-run", str(a)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_limited)
    try:
        time.sleep(1.5)
        subprocess.run(["cp", str(b), str(a)], check=True)
        out, err = p.communicate(timeout=300)
    finally:
        p.kill()
    assert p.returncode in (0, 1), (p.returncode, err)
    if p.returncode == 1:  # (still reading the file when it was cut: a diagnosed truncation)
        assert "npuexe" in _one_error(err)
    else:
        assert "cycles" in out


# ----------------------------------------------------------------------------- item 9: verified at load


def _forged_pool_pads(image: bytes) -> bytes:
    """The image with huge pads on its first pool op, its program re-encoded and every
    checksum recomputed (what a careful forger writes)."""
    def edit(module) -> None:
        pool = next(op for op in module.walk() if isinstance(op, PoolOp))
        pool.properties["pads"] = int_array((0, 0, 30000, 30000))
    return _forged(image, edit)


def test_forged_op_is_refused_at_load(lenet_bytes: bytes, tmp_path: Path) -> None:
    """A pool whose pads make its input 20 GiB, in a program with recomputed checksums:
    refused while loading (the op's verifier), in well under two seconds, before anything
    runs (before: the simulator ran it, for minutes and gigabytes)."""
    forged = _forged_pool_pads(lenet_bytes)
    t0 = time.perf_counter()
    with pytest.raises(ExecutableError) as e:
        from_bytes(forged, "x.npuexe")
    assert time.perf_counter() - t0 < 2.0
    assert str(e.value) == ("'x.npuexe': program: does not verify: 'npu_compute.pool': out tile must be "
                            "[1, 6, 15014, 15014], got [1, 6, 14, 14]")
    path = tmp_path / "x.npuexe"
    path.write_bytes(forged)
    code, _, err, _ = _run(["npu-run", str(path)], timeout=60)
    assert code == 1 and "program: does not verify: 'npu_compute.pool'" in _one_error(err)


def _forged(image: bytes, edit) -> bytes:
    from runtime.executable import _encode_program
    exe = from_bytes(image)
    edit(exe.module)
    exe.program = _encode_program(exe.module)
    return exe.to_bytes()


def test_forged_sizes_the_simulator_allocates_are_refused_at_load(lenet_bytes: bytes) -> None:
    """A DRAM arena of 1 TiB (a module attribute the simulator allocates as it says), and
    an op with an attribute named as its property (it ran; `dump` was a traceback)."""
    from xdsl.dialects.builtin import IntegerAttr, i64

    from runtime.executable import _tasks
    from sim.program import ARENA_BYTES_ATTR

    def arena(module) -> None:
        module.attributes[ARENA_BYTES_ATTR] = IntegerAttr(1 << 40, i64)

    def shadowed(module) -> None:
        _tasks(module)[0].attributes["range"] = int_array((0, 1 << 40))

    with pytest.raises(ExecutableError, match=r"program: DRAM of 1099511627776 bytes \(npu.dram_arena_bytes\) .*"
                                              r"more than the device's 17179869184 bytes"):
        from_bytes(_forged(lenet_bytes, arena))
    with pytest.raises(ExecutableError, match="'npu_task.task' has an attribute and a property both named 'range'"):
        from_bytes(_forged(lenet_bytes, shadowed))


def test_default_checks_agree_with_the_verifier(lenet_bytes: bytes) -> None:
    """`check_definitions` + `check_verifiers` (the default) find what `module.verify()`
    finds: on the good program nothing, on the forged one the same op; and every op
    class of a compiled program has its custom verifier found (xDSL's wrapper)."""
    from runtime.binary_ir import _verifiers
    good = from_bytes(lenet_bytes)
    good.module.verify()
    for op in good.module.walk():
        if hasattr(type(op), "get_irdl_definition"):
            _, custom = _verifiers(type(op))
            assert custom is None or "op_def" not in getattr(custom, "__code__").co_freevars, op.name
    with pytest.raises(ExecutableError, match="out tile must be"):
        from_bytes(_forged_pool_pads(lenet_bytes), verify=True)


def test_weights_are_read_only_copies(lenet_bytes: bytes, tmp_path: Path) -> None:
    path = tmp_path / "a.npuexe"
    path.write_bytes(lenet_bytes)
    exe = read_executable(path)
    assert not exe.weights.image.flags.writeable
    assert all(not w.flags.writeable for w in exe.weights.values())
    path.unlink()
    assert np.isfinite(exe.weights.image.view(np.float32)).all()

"""What every tool does the same way (issue 43, items 10-12): Ctrl-C exits 130 with one
line; output files are written atomically (a full disk keeps the old file and says
`error: cannot write 'PATH': No space left on device`); an `--inputs` file is checked
against the model from its headers before any data is read; npu-opt's mlir-opt
conventions (`-` is standard input, an empty file an empty module, `--split-input-file`
reports every chunk's failure, a closed pipe is not an error, new weights are never
dropped silently)."""

from __future__ import annotations

import builtins
import errno
import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
GRAPH = """builtin.module {
  func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %r = npu_graph.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("act")
    func.return %r : tensor<4x8xf32>
  }
}
"""
OLD = b"the previous file\n"


@pytest.fixture()
def graph(tmp_path: Path) -> Path:
    p = tmp_path / "g.mlir"
    p.write_text(GRAPH)
    return p


# ----------------------------------------------------------------------------- a full disk


class _FullDisk:
    """A file opened for writing on a disk with no space left: every write fails."""

    def __init__(self, f: Any):
        self._f = f

    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def writelines(self, lines: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._f.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._f, name)


@pytest.fixture()
def full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`tmp_path/out/` is on a full disk: files opened there for writing (by name or by
    descriptor) accept no byte. Returns that directory."""
    out = tmp_path / "out"
    out.mkdir()
    real_open = builtins.open

    def fake_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        f = real_open(file, mode, *args, **kwargs)
        name = os.readlink(f"/proc/self/fd/{file}") if isinstance(file, int) else os.path.abspath(file)
        if any(c in mode for c in "wax+") and Path(name).parent == out:
            return _FullDisk(f)
        return f

    monkeypatch.setattr(builtins, "open", fake_open)
    return out


def _assert_kept(capsys: pytest.CaptureFixture[str], rc: int, target: Path) -> None:
    err = capsys.readouterr().err
    assert rc == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == f"error: cannot write '{target}': No space left on device", err
    assert "Traceback" not in err and "internal error" not in err
    assert target.read_bytes() == OLD  # the previous file, whole
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # no temporary file left


@pytest.mark.parametrize("flag,name", [("--outputs", "o.npz"), ("--report", "r.json"), ("--trace", "t.json"),
                                       ("--profile", "p.json"), ("--html", "r.html"), ("--graph", "g")])
def test_npu_run_keeps_old_outputs_on_a_full_disk(flag, name, graph, full_disk, capsys):
    from tools.npu_run import main
    target = full_disk / (name + ".before.dot" if flag == "--graph" else name)
    target.write_bytes(OLD)
    rc = main([str(graph), flag, str(full_disk / name), "--no-cache"])
    _assert_kept(capsys, rc, target)


def test_npu_opt_keeps_old_output_on_a_full_disk(graph, full_disk, capsys):
    from tools.npu_opt import main
    target = full_disk / "low.mlir"
    target.write_bytes(OLD)
    _assert_kept(capsys, main([str(graph), "-p", "npu-fuse", "-o", str(target)]), target)


def test_npu_opt_keeps_old_output_when_the_input_is_bad(tmp_path, capsys):
    """The output file is not opened (truncated) before the input is known good."""
    from tools.npu_opt import main
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f( {\n")
    target = tmp_path / "low.mlir"
    target.write_bytes(OLD)
    assert main([str(bad), "-o", str(target)]) == 1
    assert target.read_bytes() == OLD


def test_npu_opt_remarks_file_kept_on_a_full_disk(graph, full_disk, capsys):
    from tools.npu_opt import main
    target = full_disk / "remarks.txt"
    target.write_bytes(OLD)
    rc = main([str(graph), "-p", "npu-fuse", "--remarks", str(target)])
    assert rc == 1 and target.read_bytes() == OLD
    assert f"cannot write remarks to '{target}': No space left on device" in capsys.readouterr().err


def test_npu_import_keeps_old_output_on_a_full_disk(full_disk, capsys):
    from tools.npu_import import main
    target = full_disk / "m.mlir"
    target.write_bytes(OLD)
    rc = main([str(ROOT / "tests" / "models" / "mlp.onnx"), "-o", str(target)])
    err = capsys.readouterr().err
    assert rc == 1 and "No space left on device" in err and target.read_bytes() == OLD
    assert not [p for p in full_disk.iterdir() if p.name.endswith(".tmp")]


def test_npu_stats_and_memviz_keep_old_outputs_on_a_full_disk(full_disk, capsys):
    from tools import npu_memviz, npu_stats
    model = str(ROOT / "tests" / "models" / "mlp.onnx")
    stats, svg = full_disk / "s.json", full_disk / "m.svg"
    stats.write_bytes(OLD)
    _assert_kept(capsys, npu_stats.main([model, "--json", str(stats)]), stats)
    svg.write_bytes(OLD)
    assert sorted(p.name for p in full_disk.iterdir()) == ["m.svg", "s.json"]
    rc = npu_memviz.main([model, "-o", str(svg)])
    err = capsys.readouterr().err
    assert rc == 1 and f"error: cannot write '{svg}': No space left on device" in err and svg.read_bytes() == OLD


def test_atomic_write_replaces_and_keeps_special_files(tmp_path):
    from npu_dialects.files import write_atomic
    p = tmp_path / "a.json"
    p.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(p)
    write_atomic(str(link), "new")
    assert link.is_symlink() and p.read_text() == "new"  # the link followed, not replaced
    write_atomic("/dev/null", "x")  # a device is written in place, never replaced
    assert Path("/dev/null").is_char_device()
    assert sorted(q.name for q in tmp_path.iterdir()) == ["a.json", "link.json"]


# ----------------------------------------------------------------------------- inputs from their headers


def test_inputs_checked_from_headers_before_the_data_is_read(graph, tmp_path):
    """A 256 KB deflated member holding 256 MiB of zeros, for a [4, 8] input: refused from
    its header, never inflated (the process's peak memory grows by far less than 256 MiB)."""
    spec = importlib.util.spec_from_file_location("make_corpus", ROOT / "tests" / "bad_inputs" / "make_corpus.py")
    assert spec is not None and spec.loader is not None
    make_corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_corpus)
    deflate_bomb = make_corpus.deflate_bomb
    bomb, good = tmp_path / "bomb.npz", tmp_path / "good.npz"
    deflate_bomb(bomb, [1 << 26])
    np.savez(good, x=np.ones((4, 8), np.float32))

    def peak_kb(inputs: Path) -> tuple[int, str]:
        p = subprocess.Popen(["npu-run", str(graph), "--inputs", str(inputs), "--no-cache"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        assert p.stderr is not None
        err = p.stderr.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        return usage.ru_maxrss, f"{p.returncode} {err}"

    base, out = peak_kb(good)
    assert out.startswith("0 "), out
    peak, out = peak_kb(bomb)
    assert out == "1 error: input 'x' has shape [67108864], expected [4, 8]\n"
    assert peak < base + 100 * 1024, f"peak {peak} KB, {base} KB with good inputs"


# ----------------------------------------------------------------------------- Ctrl-C


def test_ctrl_c_exits_130_with_one_line():
    """SIGINT to a running npu-run (past its start: its compile is printing IR) ends it with
    `error: interrupted` and exit 130 (128 + SIGINT), as a shell reports it, not 1."""
    # (SIGINT back to its default in the child: a suite started as a background job of a
    # non-interactive shell inherits it ignored, and Python then installs no handler)
    p = subprocess.Popen(["npu-run", str(ROOT / "tests" / "models" / "lstm_speech.onnx"), "--no-cache",
                          "--print-ir-after=npu-shape-inference"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stderr is not None
    for line in p.stderr:  # (the IR after the first pass, to its end: the tool is running)
        if line == "}\n":
            break
    else:
        pytest.fail(f"npu-run ended with {p.wait()} before printing the IR")
    # (at once: what is left of the compile and the run took under 0.5 s once the passes got faster)
    time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    rest = p.stderr.read()
    rc = p.wait(timeout=60)
    assert rc == 130, rest[-2000:]
    assert rest.endswith("error: interrupted\n"), rest[-2000:]
    assert "Traceback" not in rest and rest.count("error:") == 1


# ----------------------------------------------------------------------------- npu-opt as mlir-opt


def _opt(capsys, *argv: str) -> tuple[int, str, str]:
    from tools.npu_opt import main
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_dash_reads_standard_input(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GRAPH.encode())))
    rc, out, err = _opt(capsys, "-", "-p", "npu-fuse")
    assert rc == 0, err
    assert "npu_graph.relu" in out or "npu_graph.kernel" in out


def test_empty_file_is_an_empty_module(capsys, tmp_path):
    p = tmp_path / "empty.mlir"
    p.write_text("")
    rc, out, err = _opt(capsys, str(p))
    assert (rc, out.strip(), err) == (0, "builtin.module {\n}", "")
    p.write_text("// only a comment\n\n")
    rc, out, err = _opt(capsys, str(p))
    assert (rc, out.strip(), err) == (0, "builtin.module {\n}", "")


def test_split_input_file_reports_every_chunk(capsys, tmp_path):
    p = tmp_path / "chunks.mlir"
    p.write_text("func.func @a() {\n  func.return %u : f32\n}\n// -----\nfunc.func @b() {\n  \"bad.op\"() : () -> ()\n"
                 "  func.return\n}\n// -----\nfunc.func @c() {\n  func.return\n}\n")
    rc, out, err = _opt(capsys, str(p), "--split-input-file")
    assert rc == 1
    assert f"{p}:2:15: error: use of undefined value '%u'" in err
    assert f"{p}:6:4: error: unknown operation 'bad.op'" in err
    assert "error: 2 of the 3 chunks failed" in err
    assert "func.func @c()" in out  # the chunk after the failures ran


def test_closed_standard_output_is_not_an_error(capsys, graph, monkeypatch):
    """`npu-opt ... | head`: the pipe closes early; no `cannot open 'None': Broken pipe`."""
    class ClosedPipe(io.StringIO):
        def write(self, s: str) -> int:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    from tools.npu_opt import main
    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    rc = main([str(graph), "--split-input-file"])
    assert rc == 0 and capsys.readouterr().err == ""


FOLDABLE = """builtin.module {
  func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %a = npu_graph.constant {value = dense<1.5> : tensor<64xf32>} : tensor<64xf32>
    %b = npu_graph.constant {value = dense<2.0> : tensor<64xf32>} : tensor<64xf32>
    %c = npu_graph.mul %a, %b : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    %y = npu_graph.add %x, %c : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    func.return %y : tensor<64xf32>
  }
}
"""


def test_new_weights_with_the_ir_on_standard_output_are_named(capsys, tmp_path, monkeypatch):
    """Weights folded while the IR goes to standard output: written where a note says,
    named by the printed module by absolute path (it may be saved anywhere), never
    silently into the working directory; --weights-file chooses the file."""
    src = tmp_path / "m.mlir"
    src.write_text(FOLDABLE)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    rc, out, err = _opt(capsys, str(src), "-p", "npu-constant-fold")
    assert rc == 0, err
    made = work / "m.npu-opt.weights.npz"
    assert made.is_file() and sorted(os.listdir(work)) == [made.name]
    assert f"note: the new weights the passes made are in '{made}'" in err
    assert f'npu.weights = "{made}"' in out
    chosen = tmp_path / "w" / "folded.npz"
    chosen.parent.mkdir()
    rc, out, err = _opt(capsys, str(src), "-p", "npu-constant-fold", "--weights-file", str(chosen))
    assert rc == 0 and chosen.is_file() and f'npu.weights = "{chosen}"' in out
    rc, _, err = _opt(capsys, str(src), "-p", "npu-constant-fold", "-o", str(tmp_path / "w" / "low.mlir"))
    assert rc == 0 and err == "" and (tmp_path / "w" / "low.weights.npz").is_file()  # beside -o, as before
    assert json.dumps(sorted(os.listdir(work))) == json.dumps([made.name])

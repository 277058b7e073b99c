"""Compile observability and speed (issue 17 items 7 and 8) on a small model:
`npu-opt --time-passes` breaks npu-default into its passes, `--print-ir-after`,
`--pattern-stats`, `--verify-each`, the progress line (on a terminal only), the
verification policy (input and end by default), and weight side files holding
exactly the weights the output refers to."""

from __future__ import annotations

import ast
import io
import os
import pty
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.dialects.func import FuncOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from lowering.errors import CompileError
from lowering.instrument import (
    Instrumentation,
    InstrumentOptions,
    Progress,
    run_nested,
    run_pipeline,
)
from lowering.pipeline import DEFAULT_PIPELINE, compile_module
from npu_dialects import make_context
from npu_dialects.graph import ConstantOp
from npu_dialects.weights import attach_weights, referenced_weights
from tools.npu_import import main as import_main
from tools.npu_opt import main as opt_main
from tools.testkit import models

ROOT = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\s+[0-9.]+ \(\s*[0-9.]+%\)  (?P<indent> *)(?P<name>.+?)(?: \((?P<count>\d+)x\))?$")


@pytest.fixture(scope="module")
def residual(tmp_path_factory) -> Path:
    """The residual block (2 conv + BatchNorm, every fusion rule) imported to .mlir + weights."""
    d = tmp_path_factory.mktemp("observe")
    onnx.save(models.residual_block(), d / "residual.onnx")
    assert import_main([str(d / "residual.onnx"), "-o", str(d / "residual.mlir")]) == 0
    return d / "residual.mlir"


def opt(capsys, *argv: str) -> tuple[int, str, str]:
    rc = opt_main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def time_rows(report: str) -> list[tuple[int, str, int]]:
    """(depth, name, count) of each row of a time report."""
    rows = []
    for line in report.splitlines():
        m = ROW.match(line)
        if m:
            rows.append((len(m["indent"]) // 2, m["name"], int(m["count"] or 1)))
    return rows


def test_time_passes_lists_every_npu_default_pass(capsys, residual, tmp_path):
    rc, _, err = opt(capsys, str(residual), "-p", "npu-default", "--time-passes", "-o", str(tmp_path / "o.mlir"))
    assert rc == 0, err
    rows = time_rows(err)
    nested = [name for depth, name, _ in rows if depth == 1]
    assert nested == list(DEFAULT_PIPELINE)  # each nested pass its own row, in order
    top = [(name, count) for depth, name, count in rows if depth == 0]
    assert top == [("parse", 1), ("npu-default", 1), ("write weights", 1), ("print", 1), ("verify", 2), ("Total", 1)]


def test_verify_each_verifies_after_every_nested_pass(capsys, residual, tmp_path):
    rc, _, err = opt(capsys, str(residual), "-p", "npu-default", "--verify-each", "--time-passes",
                     "-o", str(tmp_path / "o.mlir"))
    assert rc == 0, err
    assert (1, "verify", len(DEFAULT_PIPELINE)) in time_rows(err)
    rc, _, err = opt(capsys, str(residual), "-p", "npu-default{verify-each=true}", "--time-passes",
                     "-o", str(tmp_path / "o.mlir"))
    assert rc == 0 and (1, "verify", len(DEFAULT_PIPELINE)) in time_rows(err)


def test_print_ir_after_prints_the_named_nested_pass(capsys, residual, tmp_path):
    out = tmp_path / "o.mlir"
    rc, stdout, err = opt(capsys, str(residual), "-p", "npu-default", "--print-ir-after=npu-fuse", "-o", str(out))
    assert rc == 0 and stdout == ""
    assert err.count("IR Dump After") == 1 and "// -----// IR Dump After npu-fuse (in npu-default) //----- //" in err
    dump = err.split("//----- //\n", 1)[1]
    assert "npu_graph.fused" in dump and "npu_tile.kernel" not in dump  # the IR right after fusion
    Parser(make_context(), dump).parse_module()  # a dump parses back
    assert "npu_task.task" in out.read_text()  # the output is unchanged by the dumps


def test_print_ir_after_all_dumps_each_pass(capsys, residual, tmp_path):
    rc, _, err = opt(capsys, str(residual), "-p", "npu-default", "--print-ir-after-all", "-o", str(tmp_path / "o.mlir"))
    assert rc == 0
    headers = re.findall(r"IR Dump After (\S+)", err)
    assert headers == [*DEFAULT_PIPELINE, "npu-default"]


def test_print_ir_after_an_unknown_pass_is_a_usage_error(capsys, residual):
    rc, _, err = opt(capsys, str(residual), "-p", "npu-default", "--print-ir-after=npu-fusion")
    assert rc == 2 and "unknown pass(es) npu-fusion" in err


def pattern_counts(report: str) -> dict[str, dict[str, tuple[int, str]]]:
    """pass -> pattern -> (fired, tried) from a pattern statistics report."""
    counts: dict[str, dict[str, tuple[int, str]]] = {}
    current = None
    for line in report.splitlines():
        if re.fullmatch(r"npu-[a-z-]+", line):
            current = counts.setdefault(line, {})
        elif current is not None and (m := re.fullmatch(r"\s+(\d+)\s+(\S+)\s+(.+)", line)):
            current[m[3]] = (int(m[1]), m[2])
    return counts


def test_pattern_stats_count_known_patterns(capsys, residual, tmp_path):
    rc, _, err = opt(capsys, str(residual), "-p", "npu-default", "--pattern-stats", "-o", str(tmp_path / "o.mlir"))
    assert rc == 0
    counts = pattern_counts(err)
    assert counts["npu-bn-fold"]["FoldBatchNorm"][0] == 2  # the block's two BatchNorms fold into their convs
    assert counts["npu-fuse"]["FuseRule(conv-epilogue)"][0] >= 1
    assert counts["npu-fuse"]["FuseRule(eltwise-chain)"][0] == 0
    assert int(counts["npu-bn-fold"]["FoldBatchNorm"][1]) > 2  # offered every op, fired on two
    assert "npu-tile" not in counts  # (not a pattern-based pass)


def test_every_pattern_walk_in_lowering_is_counted():
    """Pattern-based passes walk with `PatternWalker` (it reports to --pattern-stats): no
    module under lowering/ builds xDSL's walker itself."""
    offenders = []
    for path in sorted((ROOT / "lowering").rglob("*.py")):
        if path.name == "instrument.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if name == "PatternRewriteWalker":
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders


def test_weights_file_holds_exactly_the_referenced_weights(capsys, residual, tmp_path):
    out = tmp_path / "low.mlir"
    rc, _, err = opt(capsys, str(residual), "-p", "npu-default", "-o", str(out))
    assert rc == 0, err
    text = out.read_text()
    named = set(re.findall(r'npu_task\.weight "([^"]+)"', text))
    npz = tmp_path / "low.weights.npz"
    with np.load(npz) as z:
        keys, nbytes = set(z.files), sum(z[k].nbytes for k in z.files)
    assert keys == named and keys  # the originals of folded and packed weights are left out
    with np.load(residual.with_name("residual.weights.npz")) as z:
        assert not keys & set(z.files)  # (every original weight was folded or packed)
    assert nbytes < os.path.getsize(npz) <= nbytes + 512 * len(keys)  # the arrays and their headers only


def test_referenced_weights_are_the_store_entries_constants_name():
    module = Parser(make_context(), """builtin.module {
      func.func @main() -> tensor<2xf32> {
        %a = npu_graph.constant {weight = "a"} : tensor<2xf32>
        %b = npu_graph.constant {value = dense<1.0> : tensor<2xf32>} : tensor<2xf32>
        func.return %a : tensor<2xf32>
      }
    }""").parse_module()
    a = np.ones(2, np.float32)
    attach_weights(module, {"a": a, "old": np.zeros(2, np.float32)})
    got = referenced_weights(module)
    assert list(got) == ["a"] and got["a"] is a  # not copied


# ----------------------------------------------------------------------------------------
# Verification policy and the instrumentation API
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BreakIR(ModulePass):
    """Adds a constant with neither weight nor value (does not verify)."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        func = next(o for o in op.ops if isinstance(o, FuncOp))
        func.body.block.add_op(ConstantOp(TensorType(f32, [2])))  # (after the return: verifies no better)


@dataclass(frozen=True)
class Nothing(ModulePass):
    name = "test-nothing"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


def relu_module() -> ModuleOp:
    return Parser(make_context(), """builtin.module {
      func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
        %r = npu_graph.relu %x : (tensor<2xf32>) -> tensor<2xf32>
        func.return %r : tensor<2xf32>
      }
    }""").parse_module()


def test_broken_ir_is_caught_at_the_end_or_after_the_pass_with_verify_each():
    with pytest.raises(CompileError, match="test-break-ir,test-nothing: IR does not verify after the passes "
                                           r"\(--verify-each"):
        run_pipeline([BreakIR(), Nothing()], make_context(), relu_module(), stream=io.StringIO())
    with pytest.raises(CompileError, match="error: test-break-ir: IR does not verify after the pass"):
        run_pipeline([BreakIR(), Nothing()], make_context(), relu_module(), InstrumentOptions(verify_each=True),
                     stream=io.StringIO())
    with pytest.raises(CompileError, match="error: owner: IR does not verify"):  # no instrumentation
        run_nested("owner", [BreakIR(), Nothing()], make_context(), relu_module(), verify_each=False)
    run_pipeline([BreakIR()], make_context(), relu_module(), InstrumentOptions(verify=False), stream=io.StringIO())


def test_compile_module_reports_nested_pass_times(capsys):
    from lowering.importer.onnx_import import import_model
    from npu_dialects.arch import PRESETS

    module, weights = import_model(models.lenet(), PRESETS["default"])
    compile_module(module, PRESETS["default"], weights, instrument=InstrumentOptions(time_passes=True))
    rows = time_rows(capsys.readouterr().err)
    assert [n for d, n, _ in rows if d == 1] == list(DEFAULT_PIPELINE)


# ----------------------------------------------------------------------------------------
# Progress line
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sleep(ModulePass):
    name = "test-sleep"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        time.sleep(0.4)


def test_no_progress_line_unless_the_stream_is_a_terminal():
    stream = io.StringIO()  # (not a terminal)
    with Instrumentation(InstrumentOptions(), stream, progress_delay=0) as inst:
        inst.run([Sleep()], make_context(), relu_module())
    assert stream.getvalue() == ""


def test_progress_line_names_the_pass_and_is_erased():
    stream = io.StringIO()
    with Instrumentation(InstrumentOptions(progress=True), stream, progress_delay=0) as inst:
        inst.run([Sleep()], make_context(), relu_module())
    text = stream.getvalue()
    assert "compiling" in text and "test-sleep (1/1)" in text
    assert text.endswith("\r\033[K")  # nothing left on the line


def test_progress_waits_for_its_delay():
    stream = io.StringIO()
    p = Progress(stream, delay=30)
    p.start()
    time.sleep(0.3)
    p.stop()
    assert stream.getvalue() == ""


def run_opt_process(mlir: Path, out: Path, stderr_tty: bool) -> str:
    """npu-opt in a subprocess (progress shown at once), its stderr a pipe or a terminal."""
    env = {**os.environ, "NPU_PROGRESS_AFTER": "0"}
    cmd = [sys.executable, "-m", "tools.npu_opt", str(mlir), "-p", "npu-default", "-o", str(out)]
    if not stderr_tty:
        return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=True).stderr
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=follower)
        os.close(follower)
        chunks = []
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # (the terminal closed: the process is done)
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=120) == 0
    finally:
        os.close(leader)
    return b"".join(chunks).decode()


def test_npu_opt_shows_progress_only_on_a_terminal(residual, tmp_path):
    assert run_opt_process(residual, tmp_path / "a.mlir", stderr_tty=False) == ""
    shown = run_opt_process(residual, tmp_path / "b.mlir", stderr_tty=True)
    assert "\r\033[Kcompiling" in shown  # (which pass it names depends on when the first redraw falls)


def test_a_nested_pipeline_outside_run_verifies_its_own_end():
    """Under an instrumentation a tool uses without `run` (its own phases), a nested
    pipeline still verifies its result, naming its owner."""
    stream = io.StringIO()
    with pytest.raises(CompileError, match="error: owner: IR does not verify"):
        with Instrumentation(InstrumentOptions(time_passes=True), stream):
            run_nested("owner", [BreakIR()], make_context(), relu_module(), verify_each=False)


def test_npu_compile_time_passes_covers_the_whole_compile(capsys, tmp_path):
    from tools.npu_compile import main as compile_main
    onnx.save(models.residual_block(), tmp_path / "residual.onnx")
    rc = compile_main([str(tmp_path / "residual.onnx"), "-o", str(tmp_path / "r.npuexe"), "--no-cache",
                       "--time-passes"])
    err = capsys.readouterr().err
    assert rc == 0, err
    names = [name for _, name, _ in time_rows(err)]
    # loading and importing before the passes, packaging and writing after them
    assert names[:2] == ["load ONNX", "import"] and names[-1] == "Total", names
    forked = "verify (forked, beside packaging and writing)"  # (lowering/verify_later.py)
    assert {"npu-tile", "npu-memplan", "package", "write", forked} <= set(names), names
    assert names.index("npu-memplan") < names.index("package") < names.index("write") < names.index(forked)

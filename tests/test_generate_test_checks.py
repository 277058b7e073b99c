"""`tools/generate_test_checks.py`: checks generated from real `npu-opt` output pass
`filecheck` on that output and fail on a changed one; variable names, labels, prefix,
shortened attributes and `--source` insertion."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools.generate_test_checks import Options, generate_checks, main, merge_into_source, render
from tools.npu_opt import main as npu_opt

ROOT = Path(__file__).resolve().parent.parent
FUSE = ROOT / "tests" / "filecheck" / "npu-fuse" / "fuse.mlir"
SCRIPT = ROOT / "tools" / "generate_test_checks.py"

NAMES = """builtin.module {
  func.func @names(%x: tensor<4xf32>, %a.b: tensor<4xf32>, %a_b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    %1 = npu_graph.relu %0 : (tensor<4xf32>) -> tensor<4xf32>
    %r = npu_graph.fused(%1, %a.b) {kernel = "k", rule = "eltwise-chain"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%2: tensor<4xf32>, %3: tensor<4xf32>):
      %r_1 = npu_graph.add %2, %3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      npu_graph.yield %r_1 : tensor<4xf32>
    }
    func.return %r : tensor<4xf32>
  }
  func.func @second(%x: tensor<4xf32>) -> tensor<4xf32> {
    %w = npu_graph.constant {weight = "w"} : tensor<4xf32>
    %k = npu_graph.constant {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>} : tensor<8xf32>
    %s = npu_graph.add %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %s : tensor<4xf32>
  }
}
"""


def npu_opt_output(capsys, *argv: str) -> str:
    assert npu_opt([*argv, "--no-debuginfo"]) == 0
    return capsys.readouterr().out


def filecheck(checks: str, output: str, tmp_path: Path, *flags: str) -> subprocess.CompletedProcess:
    (tmp_path / "checks.txt").write_text(checks)
    (tmp_path / "out.mlir").write_text(output)
    return subprocess.run(["filecheck", str(tmp_path / "checks.txt"), "--input-file", str(tmp_path / "out.mlir"),
                           *flags], capture_output=True, text=True)


def swap_first_operands(output: str) -> str:
    """`output` with the two operands of its first binary op with different operands swapped."""
    m = next(m for m in re.finditer(r"(npu_graph\.(?:add|mul|sub) )(%\w+), (%\w+)", output) if m[2] != m[3])
    return output[:m.start()] + f"{m[1]}{m[3]}, {m[2]}" + output[m.end():]


@pytest.mark.parametrize("flags", [(), ("--next",), ("--strict-names",)])
def test_checks_pass_on_their_output_and_fail_on_a_swapped_operand(capsys, tmp_path, flags):
    output = npu_opt_output(capsys, str(FUSE), "--split-input-file", "-p", "npu-fuse")
    options = Options(next="--next" in flags, strict_names="--strict-names" in flags)
    checks = render(generate_checks(output, options))
    ok = filecheck(checks, output, tmp_path)
    assert ok.returncode == 0, ok.stderr
    bad = filecheck(checks, swap_first_operands(output), tmp_path)
    assert bad.returncode != 0


def test_variables_named_after_ssa_names_or_ops_and_unique():
    (checks,) = generate_checks(NAMES)
    text = "\n".join(checks)
    assert "%[[X:[a-zA-Z0-9$._-]+]]: tensor<4xf32>," in text  # a function argument (one per CHECK-SAME)
    assert "%[[A_B:" in text and "%[[A_B_1:" in text  # `%a.b` and `%a_b` do not collide
    assert "%[[RELU_0:.*]] = npu_graph.relu %[[X]]" in text  # `%0`: named after its op
    assert "%[[RELU_1:.*]] = npu_graph.relu %[[RELU_0]]" in text
    assert "^bb0(%[[ARG_0:[a-zA-Z0-9$._-]+]]: tensor<4xf32>, %[[ARG_1:" in text  # block arguments
    assert "%[[R_1:.*]] = npu_graph.add %[[ARG_0]], %[[ARG_1]]" in text
    assert "func.return %[[R]] : tensor<4xf32>" in text  # the region's values are gone, %r is not
    for function in "\n".join(checks).split("CHECK-LABEL")[1:]:
        defined = re.findall(r"%\[\[(\w+):", function)
        assert len(defined) == len(set(defined)), defined
        used = re.findall(r"%\[\[(\w+)\]\]", function)
        assert set(used) <= set(defined)


def test_one_label_per_function_then_checks(capsys):
    output = npu_opt_output(capsys, str(FUSE), "--split-input-file", "-p", "npu-fuse")
    cases = generate_checks(output)
    assert len(cases) == output.count("// -----") + 1
    labels = [ln for c in cases for ln in c if "-LABEL:" in ln]
    assert labels == [f"// CHECK-LABEL: func.func @{n}(" for n in re.findall(r"func\.func @(\w+)\(", output)]
    for case in cases:
        assert all(ln == ln.rstrip() for ln in case)  # no trailing whitespace
        assert not any("builtin.module" in ln for ln in case)  # the module line is left out


def test_next_option(capsys, tmp_path):
    (checks,) = generate_checks(NAMES, Options(next=True))
    assert checks[checks.index("// CHECK-LABEL: func.func @names(") + 4].startswith("// CHECK-NEXT:")
    loose = NAMES.replace("    func.return %r", "    npu_graph.relu %r : (tensor<4xf32>) -> tensor<4xf32>\n"
                                              "    func.return %r", 1)
    assert filecheck(render([checks]), NAMES, tmp_path).returncode == 0
    assert filecheck(render([checks]), loose, tmp_path).returncode != 0  # an extra line
    (plain,) = generate_checks(NAMES)
    assert filecheck(render([plain]), loose, tmp_path).returncode == 0


def test_check_prefix(tmp_path, capsys, monkeypatch):
    import io
    monkeypatch.setattr(sys, "stdin", io.StringIO(NAMES))
    assert main(["--check-prefix=GRAPH"]) == 0
    out = capsys.readouterr().out
    checks = [ln for ln in out.splitlines() if ln.startswith("// ") and not ln.startswith("// NOTE")]
    assert checks and all(re.match(r"// GRAPH(-LABEL|-SAME)?:", ln) for ln in checks)
    assert filecheck(out, NAMES, tmp_path, "--check-prefix=GRAPH").returncode == 0
    with pytest.raises(SystemExit) as e:
        main(["--check-prefix=1 bad"])
    assert e.value.code == 2


def test_weights_and_long_dense_values_shortened():
    (checks,) = generate_checks(NAMES)
    text = "\n".join(checks)
    assert '%[[W:.*]] = npu_graph.constant {{.*}} : tensor<4xf32>' in text
    assert "%[[K:.*]] = npu_graph.constant {{.*}} : tensor<8xf32>" in text
    (kept,) = generate_checks(NAMES, Options(keep_weights=True, max_dense=1000))
    assert '{weight = "w"}' in "\n".join(kept) and "dense<[1.0, 2.0" in "\n".join(kept)
    (raw,) = generate_checks("builtin.module {\n  %c = arith.constant dense<[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]> "
                             ": tensor<10xi32>\n}\n")
    assert raw == ["// CHECK:       %[[C:.*]] = arith.constant dense<{{.*}}> : tensor<10xi32>"]


def test_filecheck_syntax_in_the_output_is_escaped(tmp_path):
    output = ('builtin.module {\n  func.func @f() attributes {a = [[1, 2]], s = "%x {{"} {\n'
              "    func.return\n  }\n}\n")
    checks = render(generate_checks(output))
    assert "{{\\[\\[}}1, 2]]" in checks and "%[[" not in checks  # a string's `%x` is no SSA value
    assert filecheck(checks, output, tmp_path).returncode == 0


def test_source_puts_each_cases_checks_before_its_ir(capsys, tmp_path):
    source = FUSE.read_text().split("\n// -----\n")
    test = tmp_path / "t.mlir"
    test.write_text("\n// -----\n".join(source[:2]) + "\n")
    output = npu_opt_output(capsys, str(test), "--split-input-file", "-p", "npu-fuse")
    (tmp_path / "out.mlir").write_text(output)
    assert main([str(tmp_path / "out.mlir"), "--source", str(test), "-i"]) == 0
    merged = test.read_text()
    first, second = merged.split("// -----")
    assert first.index("// NOTE:") > first.index("// RUN:")
    assert first.index("// CHECK-LABEL: func.func @conv_relu(") < first.index("func.func @conv_relu(%x")
    assert second.index("// CHECK-LABEL: func.func @gemm_bias_relu(") < second.index("func.func @gemm_bias_relu(%a")
    assert "NOCONV-LABEL: func.func @conv_relu" in first  # the checks of other prefixes stay
    # the merged test passes as lit would run it, and a second run gives the same file
    assert filecheck(merged, output, tmp_path).returncode == 0
    again, by_case = merge_into_source(merged, generate_checks(output))
    assert by_case and again == merged


def test_source_append_and_command_line(tmp_path):
    (tmp_path / "out.mlir").write_text(NAMES)
    (tmp_path / "t.mlir").write_text("// RUN: %opt %s | filecheck %s\n// CHECK: stale\n" + NAMES)
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out.mlir"), "--source",
                        str(tmp_path / "t.mlir"), "--append"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "stale" not in r.stdout and r.stdout.startswith("// RUN:")
    assert r.stdout.index("// CHECK-LABEL: func.func @names(") > r.stdout.index("func.func @second")
    r = subprocess.run([sys.executable, str(SCRIPT), "-i"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "need --source" in r.stderr

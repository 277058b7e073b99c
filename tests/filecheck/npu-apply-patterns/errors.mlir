// RUN: not npu-opt %s -p 'npu-apply-patterns{file=%S/Inputs/syntax_error.pdl.mlir}' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not npu-opt %s -p 'npu-apply-patterns{file=%S/Inputs/unknown_op.pdl.mlir}' 2>&1 | filecheck %s --check-prefix=OP
// RUN: not npu-opt %s -p 'npu-apply-patterns{file=%S/Inputs/unknown_native.pdl.mlir}' 2>&1 | filecheck %s --check-prefix=NATIVE
// RUN: not npu-opt %s -p 'npu-apply-patterns{file=%S/Inputs/no_rewrite.pdl.mlir}' 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: not npu-opt %s -p 'npu-apply-patterns{file=%S/Inputs/missing.pdl.mlir}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not npu-opt %s -p 'npu-apply-patterns' 2>&1 | filecheck %s --check-prefix=NOFILE

// A patterns file that does not parse, names an op no dialect defines or a native
// function nobody registered is a diagnostic at its position in the file.
builtin.module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %y = npu_graph.relu %x : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
}
// SYNTAX:  error: npu-apply-patterns: {{.*}}syntax_error.pdl.mlir:4:1: {{.*}}
// SYNTAX-NOT: Traceback
// OP:      error: npu-apply-patterns: {{.*}}unknown_op.pdl.mlir:4:23: pattern names op 'npu_graph.rleu', which no loaded dialect defines
// NATIVE:  error: npu-apply-patterns: {{.*}}unknown_native.pdl.mlir:5:31: unknown native constraint 'npu.is_positive' (registered: npu.has_one_use, npu.not_fused, npu.plain_copy, npu.same_block, npu.same_type)
// EMPTY:   error: npu-apply-patterns: {{.*}}no_rewrite.pdl.mlir: no pdl.pattern with a pdl.rewrite in it
// MISSING: error: npu-apply-patterns: cannot read the patterns file '{{.*}}missing.pdl.mlir': No such file or directory
// NOFILE:  error: npu-apply-patterns: needs a patterns file: npu-apply-patterns{file=RULES.mlir}

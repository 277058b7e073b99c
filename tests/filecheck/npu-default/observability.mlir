// RUN: %opt %s -p npu-default --time-passes -o /dev/null 2>&1 | filecheck %s --check-prefix=TIME
// RUN: %opt %s -p npu-default --verify-each --time-passes -o /dev/null 2>&1 | filecheck %s --check-prefix=EACH
// RUN: %opt %s -p npu-default --print-ir-after=npu-fuse -o /dev/null 2>&1 | filecheck %s --check-prefix=FUSE
// RUN: %opt %s -p npu-default --pattern-stats -o /dev/null 2>&1 | filecheck %s --check-prefix=STATS
// RUN: not npu-opt %s -p npu-default --print-ir-after=npu-nothing 2>&1 | filecheck %s --check-prefix=BAD

// Compile observability on a gemm + relu: the nested passes of npu-default are
// each timed, dumped and counted (reports on stderr).
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>) -> tensor<4x16xf32> attributes {npu.inputs = ["x"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<16x32xf32>} : tensor<16x32xf32>
    %g = npu_graph.gemm %x, %w {trans_b = true} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32> loc("fc")
    %r = npu_graph.relu %g : (tensor<4x16xf32>) -> tensor<4x16xf32> loc("act")
    func.return %r : tensor<4x16xf32>
  }
}

// The input is verified as read and the result once after the passes (verification
// is listed after the steps of its level).
// TIME:      ... Execution time report ...
// TIME:      ----Wall Time----  ----Name----
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  parse
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  npu-default
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-fuse-qdq
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-canonicalize
// TIME:      {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-fuse
// TIME:      {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-tile
// TIME:      {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-software-pipeline
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-unit-sync
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)    npu-memplan
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  print
// TIME-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  verify (2x)
// TIME-NEXT: {{[0-9.]+}} (100.0%)  Total

// --verify-each: after each of the 23 nested passes (shown inside npu-default), and
// at the top level the input and npu-default's result.
// EACH:      npu-memplan
// EACH-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)    verify (26x)
// EACH-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  print
// EACH-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  verify (2x)

// FUSE:      // -----// IR Dump After npu-fuse (in npu-default) //----- //
// FUSE:      npu_graph.fused
// FUSE-NOT:  IR Dump After

// STATS:     ... Pattern statistics report ...
// STATS:     npu-fuse
// STATS-NEXT:  fired     tried  pattern
// STATS-NEXT:      1 {{ +[0-9]+}}  FuseRule(matmul-epilogue)
// STATS:     npu-bufferize

// BAD: error: --print-ir-after: unknown pass(es) npu-nothing

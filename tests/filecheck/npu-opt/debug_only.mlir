// --debug-only=CHANNEL[,CHANNEL] prints named debug channels on stderr as `[CHANNEL] ...`:
// a pass's channel (its name) shows its decisions as it makes them (its remarks, without
// --remarks), `pipeline` each pass as it starts, `greedy-rewriter` each rewrite a pattern
// makes; --debug prints every channel. An unknown channel is a usage error (exit 2).
// RUN: npu-opt %s -p npu-example-fold-idempotent,npu-fuse,npu-tile --debug-only=npu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: npu-opt %s -p npu-example-fold-idempotent,npu-fuse --debug-only=pipeline,greedy-rewriter --debug-only=npu-fuse -o /dev/null 2>&1 | filecheck %s --check-prefix=SEVERAL
// RUN: npu-opt %s -p npu-example-fold-idempotent,npu-fuse --debug -o /dev/null 2>&1 | filecheck %s --check-prefix=SEVERAL
// RUN: npu-opt %s -p npu-fuse -o /dev/null 2>&1 | filecheck %s --check-prefix=QUIET --allow-empty
// RUN: not npu-opt %s -p npu-fuse --debug-only=npu-tiel 2>&1 | filecheck %s --check-prefix=UNKNOWN

builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%x: tensor<4x32xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> attributes {npu.inputs = ["x", "b"], npu.outputs = ["y"]} {
    %w = npu_graph.constant {value = dense<0.5> : tensor<32x16xf32>} : tensor<32x16xf32>
    %r = npu_graph.relu %x : (tensor<4x32xf32>) -> tensor<4x32xf32> loc("r1")
    %r2 = npu_graph.relu %r : (tensor<4x32xf32>) -> tensor<4x32xf32> loc("r2")
    %m = npu_graph.matmul %r2, %w : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32> loc("fc")
    %a = npu_graph.add %m, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32> loc("bias")
    func.return %a : tensor<4x16xf32>
  }
}

// TILE-NOT:  [npu-fuse]
// TILE:      [npu-tile] applied: [{{.*}}] kernel '{{.*}}': tile {{.*}} SRAM bytes
// TILE-NOT:  [pipeline]

// SEVERAL:      [pipeline] running npu-example-fold-idempotent (1/2)
// SEVERAL-NEXT: [greedy-rewriter] npu-example-fold-idempotent: FoldIdempotent rewrote 'npu_graph.relu' (r2)
// SEVERAL:      [pipeline] running npu-fuse (2/2)
// SEVERAL:      [npu-fuse] applied: [fc, bias] matmul-epilogue: 2 ops (matmul, add) as one kernel

// QUIET-NOT: [

// UNKNOWN:      error: --debug-only: unknown channel(s) npu-tiel
// UNKNOWN-NEXT: hint: did you mean 'npu-tile'? the channels are the pass names (npu-opt --list-passes) and pipeline, greedy-rewriter

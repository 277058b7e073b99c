// RUN: %opt %s -p 'npu-fuse{disable=layer-group},npu-tile,npu-layer-group' | filecheck %s
// RUN: %opt %s -p 'npu-fuse,npu-tile,npu-layer-group' | filecheck %s --check-prefix=ON

// The attention-like chain of layer_group.mlir: with npu-fuse's layer-group rule
// switched off, npu-layer-group must leave the kernels alone.
builtin.module attributes {npu.arch = #npu.arch<cores = 1>} {
  func.func @main(%q: tensor<8x32xf32>, %k: tensor<8x32xf32>, %v: tensor<8x32xf32>) -> tensor<8x32xf32> {
    %kt = npu_graph.transpose %k {perm = array<i64: 1, 0>} : (tensor<8x32xf32>) -> tensor<32x8xf32> loc("kt")
    %s = npu_graph.matmul %q, %kt : (tensor<8x32xf32>, tensor<32x8xf32>) -> tensor<8x8xf32> loc("scores")
    %p = npu_graph.softmax %s {axis = -1 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("probs")
    %o = npu_graph.matmul %p, %v : (tensor<8x8xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("context")
    func.return %o : tensor<8x32xf32>
  }
}
// CHECK:     npu.fuse_disable = ["layer-group"]
// CHECK-NOT: ) group {
// CHECK:     npu_tile.kernel "kt"
// CHECK:     npu_tile.kernel "scores"
// CHECK:     npu_tile.kernel "probs"
// CHECK:     npu_tile.kernel "context"
// ON:        npu_tile.kernel "kt..context"{{.*}}) group {

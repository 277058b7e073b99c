// RUN: not npu-opt %s -p npu-merge-projections 2>&1 | filecheck %s

// The projections' weights are in a weight file that is not there: the pass reading
// them (to put them side by side) says which file and fails, naming itself.
builtin.module attributes {npu.arch = #npu.arch<cores = 4>, npu.weights = "no-such-weights.npz"} {
  func.func @main(%x: tensor<8x16xf32>) -> (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) {
    %wq = npu_graph.constant {weight = "q.w"} : tensor<16x16xf32>
    %wk = npu_graph.constant {weight = "k.w"} : tensor<16x16xf32>
    %q0 = npu_graph.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %q1 = npu_graph.reshape %q0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %q = npu_graph.transpose %q1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    %k0 = npu_graph.matmul %x, %wk : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
    %k1 = npu_graph.reshape %k0 : (tensor<8x16xf32>) -> tensor<1x8x2x8xf32>
    %k = npu_graph.transpose %k1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x8xf32>) -> tensor<1x2x8x8xf32>
    func.return %q, %k : tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>
  }
}
// CHECK: error: npu-merge-projections: cannot read weight file '{{.*}}no-such-weights.npz' (module attribute npu.weights)
